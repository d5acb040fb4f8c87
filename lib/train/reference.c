/* reference.c — float64 oracles of the training layers (train_layers.h): plain loops
 * from each definition, sharing no code with the layers; the tests' ground truth. The
 * LayerNorm backward goes through its Jacobian, ∂x̂_k/∂x_j = r·(δ_kj − 1/d − x̂_k·x̂_j/d),
 * not the layers' closed form; attention through la_ref_attention and
 * la_ref_attention_backward. Slow on purpose: O(rows·d²) and worse. */
#include "core/internal.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>

void la_train_ref_dense_forward(size_t rows, size_t in, size_t out, const double *x,
                                const double *w, const double *b, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            double s = b ? b[o] : 0;
            for (size_t i = 0; i < in; i++)
                s += x[r * in + i] * w[o * in + i];
            y[r * out + o] = s;
        }
}

void la_train_ref_dense_backward(size_t rows, size_t in, size_t out, const double *x,
                                 const double *w, const double *dy, double *dx, double *dw,
                                 double *db)
{
    for (size_t r = 0; r < rows && dx; r++)
        for (size_t i = 0; i < in; i++) {
            double s = 0;
            for (size_t o = 0; o < out; o++)
                s += dy[r * out + o] * w[o * in + i];
            dx[r * in + i] = s;
        }
    for (size_t o = 0; o < out; o++) {
        for (size_t i = 0; i < in; i++) {
            double s = 0;
            for (size_t r = 0; r < rows; r++)
                s += dy[r * out + o] * x[r * in + i];
            dw[o * in + i] += s;
        }
        if (db) {
            double s = 0;
            for (size_t r = 0; r < rows; r++)
                s += dy[r * out + o];
            db[o] += s;
        }
    }
}

/* The mean and r = 1/√(var + eps) of one row of d. */
static double row_stats(size_t d, const double *x, double eps, double *mean)
{
    double m = 0, var = 0;
    for (size_t c = 0; c < d; c++)
        m += x[c];
    m /= (double)d;
    for (size_t c = 0; c < d; c++)
        var += (x[c] - m) * (x[c] - m);
    var /= (double)d;
    *mean = m;
    return 1 / sqrt(var + eps);
}

void la_train_ref_layer_norm_forward(size_t rows, size_t d, const double *x, const double *gamma,
                                     const double *beta, double eps, double *y)
{
    for (size_t i = 0; i < rows; i++) {
        double mean;
        const double r = row_stats(d, x + i * d, eps, &mean);
        for (size_t c = 0; c < d; c++)
            y[i * d + c] = (x[i * d + c] - mean) * r * gamma[c] + beta[c];
    }
}

void la_train_ref_layer_norm_backward(size_t rows, size_t d, const double *x, const double *gamma,
                                      double eps, const double *dy, double *dx, double *dgamma,
                                      double *dbeta)
{
    for (size_t i = 0; i < rows; i++) {
        const double *xi = x + i * d, *g = dy + i * d;
        double mean;
        const double r = row_stats(d, xi, eps, &mean);
        for (size_t c = 0; c < d; c++) {
            dgamma[c] += g[c] * (xi[c] - mean) * r;
            dbeta[c] += g[c];
        }
        /* dx_j = Σ_k g_k γ_k ∂x̂_k/∂x_j */
        for (size_t j = 0; j < d; j++) {
            const double xh_j = (xi[j] - mean) * r;
            double s = 0;
            for (size_t k = 0; k < d; k++) {
                const double xh_k = (xi[k] - mean) * r;
                const double jac = r * ((k == j) - 1.0 / (double)d - xh_k * xh_j / (double)d);
                s += g[k] * gamma[k] * jac;
            }
            dx[i * d + j] = s;
        }
    }
}

static double act(int gelu, double t)
{
    return gelu ? 0.5 * t * (1 + erf(t / sqrt(2.0))) : (t > 0 ? t : 0);
}

static double act_slope(int gelu, double t)
{
    const double pi = 3.14159265358979323846;
    return gelu ? 0.5 * (1 + erf(t / sqrt(2.0))) + t * exp(-t * t / 2) / sqrt(2 * pi) : (t > 0);
}

/* The pre-activation f of row x: b1[f] + Σ_c x[c] w1[f, c]. */
static double pre_of(size_t d, const double *x, const double *w1, const double *b1, size_t f)
{
    double s = b1[f];
    for (size_t c = 0; c < d; c++)
        s += x[c] * w1[f * d + c];
    return s;
}

void la_train_ref_ffn_forward(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                              const double *w1, const double *b1, const double *w2,
                              const double *b2, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < d; c++) {
            double s = b2[c];
            for (size_t f = 0; f < d_ff; f++)
                s += act(gelu, pre_of(d, x + r * d, w1, b1, f)) * w2[c * d_ff + f];
            y[r * d + c] = s;
        }
}

void la_train_ref_ffn_backward(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                               const double *w1, const double *b1, const double *w2,
                               const double *dy, double *dx, double *dw1, double *db1, double *dw2,
                               double *db2)
{
    for (size_t r = 0; r < rows; r++) {
        const double *xr = x + r * d, *g = dy + r * d;
        for (size_t c = 0; c < d; c++) {
            db2[c] += g[c];
            for (size_t f = 0; f < d_ff; f++)
                dw2[c * d_ff + f] += g[c] * act(gelu, pre_of(d, xr, w1, b1, f));
        }
        for (size_t c = 0; c < d; c++)
            dx[r * d + c] = 0;
        for (size_t f = 0; f < d_ff; f++) {
            /* ∂L/∂pre_f = act′(pre_f) Σ_c g_c w2[c, f] */
            double s = 0;
            for (size_t c = 0; c < d; c++)
                s += g[c] * w2[c * d_ff + f];
            const double dpre = s * act_slope(gelu, pre_of(d, xr, w1, b1, f));
            db1[f] += dpre;
            for (size_t c = 0; c < d; c++) {
                dw1[f * d + c] += dpre * xr[c];
                dx[r * d + c] += dpre * w1[f * d + c];
            }
        }
    }
}

/* q, k, v (B, H, N, d_h) from x (B, N, D): element (b, h, i, c) of part t is
 * Σ_e x[b, i, e] · in_w[t·D + h·d_h + c, e] + in_b[t·D + h·d_h + c]. */
static void project(const la_problem *p, const double *x, const double *in_w, const double *in_b,
                    double *qkv[3])
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, dh = p->d_k, D = H * dh;
    for (size_t t = 0; t < 3; t++)
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < N; i++)
                    for (size_t c = 0; c < dh; c++) {
                        const size_t row = t * D + h * dh + c;
                        double s = in_b[row];
                        for (size_t e = 0; e < D; e++)
                            s += x[(b * N + i) * D + e] * in_w[row * D + e];
                        qkv[t][((b * H + h) * N + i) * dh + c] = s;
                    }
}

la_status la_train_ref_mha_forward(la_kernel kernel, const la_problem *p, const double *x,
                                   const double *in_w, const double *in_b, const double *out_w,
                                   const double *out_b, double *y)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, dh = p->d_k, D = H * dh;
    const size_t n = B * N * D;
    double *buf = malloc(4 * n * sizeof *buf);
    if (!buf) return LA_ENOMEM;
    double *qkv[3] = {buf, buf + n, buf + 2 * n}, *o = buf + 3 * n;
    project(p, x, in_w, in_b, qkv);
    la_status st = la_ref_attention(kernel, p, qkv[0], qkv[1], qkv[2], o);
    if (st == LA_OK)
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < N; i++)
                for (size_t c = 0; c < D; c++) {
                    double s = out_b[c];
                    for (size_t h = 0; h < H; h++)
                        for (size_t e = 0; e < dh; e++)
                            s += o[((b * H + h) * N + i) * dh + e] * out_w[c * D + h * dh + e];
                    y[(b * N + i) * D + c] = s;
                }
    free(buf);
    return st;
}

la_status la_train_ref_mha_backward(la_kernel kernel, const la_problem *p, const double *x,
                                    const double *in_w, const double *in_b, const double *out_w,
                                    const double *dy, double *dx, double *d_in_w, double *d_in_b,
                                    double *d_out_w, double *d_out_b)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, dh = p->d_k, D = H * dh;
    const size_t n = B * N * D;
    double *buf = malloc(8 * n * sizeof *buf);
    if (!buf) return LA_ENOMEM;
    double *qkv[3] = {buf, buf + n, buf + 2 * n}, *o = buf + 3 * n, *d_o = buf + 4 * n;
    double *dqkv[3] = {buf + 5 * n, buf + 6 * n, buf + 7 * n};
    project(p, x, in_w, in_b, qkv);
    la_status st = la_ref_attention(kernel, p, qkv[0], qkv[1], qkv[2], o);
    if (st != LA_OK) goto done;
    /* through the output projection: y[b,i,c] = out_b[c] + Σ_{h,e} o[b,h,i,e] out_w[c, h·d_h+e] */
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < N; i++) {
            const double *g = dy + (b * N + i) * D;
            for (size_t c = 0; c < D; c++) {
                d_out_b[c] += g[c];
                for (size_t h = 0; h < H; h++)
                    for (size_t e = 0; e < dh; e++)
                        d_out_w[c * D + h * dh + e] += g[c] * o[((b * H + h) * N + i) * dh + e];
            }
            for (size_t h = 0; h < H; h++)
                for (size_t e = 0; e < dh; e++) {
                    double s = 0;
                    for (size_t c = 0; c < D; c++)
                        s += g[c] * out_w[c * D + h * dh + e];
                    d_o[((b * H + h) * N + i) * dh + e] = s;
                }
        }
    st = la_ref_attention_backward(kernel, p, qkv[0], qkv[1], qkv[2], o, d_o, dqkv[0], dqkv[1],
                                   dqkv[2]);
    if (st != LA_OK) goto done;
    /* through the input projection */
    for (size_t e = 0; e < n; e++)
        dx[e] = 0;
    for (size_t t = 0; t < 3; t++)
        for (size_t b = 0; b < B; b++)
            for (size_t h = 0; h < H; h++)
                for (size_t i = 0; i < N; i++)
                    for (size_t c = 0; c < dh; c++) {
                        const size_t row = t * D + h * dh + c;
                        const double g = dqkv[t][((b * H + h) * N + i) * dh + c];
                        d_in_b[row] += g;
                        for (size_t e = 0; e < D; e++) {
                            d_in_w[row * D + e] += g * x[(b * N + i) * D + e];
                            dx[(b * N + i) * D + e] += g * in_w[row * D + e];
                        }
                    }
done:
    free(buf);
    return st;
}

void la_train_ref_embedding_forward(size_t batch, size_t n, size_t d, const int32_t *tokens,
                                    const double *table, const double *pos, double *x)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t t = 0; t < n; t++)
            for (size_t c = 0; c < d; c++) {
                /* P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(t / 10000^(2i/d)) */
                const double angle = (double)t / pow(10000.0, (double)(c - c % 2) / (double)d);
                const double p = pos ? pos[t * d + c] : c % 2 ? cos(angle) : sin(angle);
                x[(b * n + t) * d + c] = table[(size_t)tokens[b * n + t] * d + c] + p;
            }
}

void la_train_ref_embedding_backward(size_t batch, size_t n, size_t d, const int32_t *tokens,
                                     const double *dx, double *d_table, double *d_pos)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t t = 0; t < n; t++)
            for (size_t c = 0; c < d; c++) {
                d_table[(size_t)tokens[b * n + t] * d + c] += dx[(b * n + t) * d + c];
                if (d_pos) d_pos[t * d + c] += dx[(b * n + t) * d + c];
            }
}

double la_train_ref_cross_entropy(size_t rows, size_t vocab, const double *logits,
                                  const int32_t *targets, double scale, double *d_logits)
{
    double total = 0;
    for (size_t r = 0; r < rows; r++) {
        const double *l = logits + r * vocab;
        double *g = d_logits + r * vocab;
        if (targets[r] < 0) {
            for (size_t j = 0; j < vocab; j++)
                g[j] = 0;
            continue;
        }
        double m = l[0], z = 0;
        for (size_t j = 1; j < vocab; j++)
            m = fmax(m, l[j]);
        for (size_t j = 0; j < vocab; j++)
            z += exp(l[j] - m);
        const double lse = m + log(z);
        total += lse - l[targets[r]];
        for (size_t j = 0; j < vocab; j++)
            g[j] = (exp(l[j] - lse) - ((size_t)targets[r] == j)) * scale;
    }
    return total;
}
