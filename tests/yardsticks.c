/* yardsticks.c — how large the terms are that a backward pass's d_q, d_k and d_v sum, so that
 * a gradient which cancels to far below them is held to their rounding, not its own norm
 * (yardsticks.h). Plain float64 loops over the visible pairs. */
#include "yardsticks.h"

#include "attention/kernels.h" /* la_favor_w */
#include "core/internal.h"     /* la_visible_keys, la_favor_params_of */

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ‖x‖ over n elements, summed in order. */
static double norm2(const double *x, size_t n)
{
    double s = 0;
    for (size_t c = 0; c < n; c++)
        s += x[c] * x[c];
    return sqrt(s);
}

/* ‖row j‖ of x (rows of n) into out[j], for j < rows: the keys' and values' norms, once
 * per head. */
static void row_norms(const double *x, size_t rows, size_t n, double *out)
{
    for (size_t j = 0; j < rows; j++)
        out[j] = norm2(x + j * n, n);
}

/* d_q and d_k of the softmax family are sums of dS_ij = P_ij (dP_ij − D_i) times k_j or q_i,
 * and can cancel to far below the size of what is summed: a query that sees one key has
 * dS = 0 exactly, which the fused backward forms as d_out_i·v_0 − d_out_i·out_i, two
 * roundings of one dot product (its D comes from out, FlashAttention-2's choice); where
 * most queries are such, ‖d_q‖ is small and that rounding is large beside it. So their
 * error is taken relative to max(‖reference‖, TU_BWD_FLOOR · Y), with Y the norm of the
 * rounding-error bound's terms (softmax_yardsticks; dP_ij = d_out_i·v_j and D_i =
 * d_out_i·out_i round relative to ‖d_out_i‖‖v_j‖ and ‖d_out_i‖‖out_i‖): for d_q row i,
 * |scale| Σ_j P_ij ‖d_out_i‖ (‖v_j‖ + ‖out_i‖) ‖k_j‖, for d_k row j the same summed over i
 * with ‖q_i‖ for ‖k_j‖. Where the gradient is not mostly cancelled ‖reference‖ is the larger, and
 * the check is the plain relative one.
 *
 * Linear attention's d_q and d_k cancel the same way: d_φ(q_i) = S_i·dnum_i + dden_i·z_i
 * and d_φ(k_j) = dS_j·v_j + dz_j are differences of terms of size ‖d_out_i‖ (‖v_j‖ +
 * ‖y_i‖) ‖φ‖ / den_i, which cancel to about eps / den of that where a query sees one key
 * (its output does not depend on φ(q)'s scale but through eps). So the same floor, with
 * Y for d_q row i: ‖d_out_i‖ / den_i · Σ_j ‖φ(k_j)‖ (‖v_j‖ + ‖y_i‖), and for d_k row j the
 * same summed over the queries that see j with ‖φ(q_i)‖ for ‖φ(k_j)‖ (φ′ <= 1 for both
 * maps). */
static void linear_yardsticks(const la_problem *p, const tu_backward *b, double y[2])
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    double *fq = tu_f64(dk), *fk = tu_f64(M * dk), *kn = tu_f64(M), *vn = tu_f64(M);
    double *per_key = tu_f64(M);
    y[0] = y[1] = 0;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++) {
        const double *qh = b->q + hd * N * dk, *kh = b->k + hd * M * dk;
        const double *vh = b->v + hd * M * dv, *gh = b->d_out + hd * N * dv;
        const double *oh = b->out + hd * N * dv;
        la_ref_feature_map(p->feature_map, kh, fk, M * dk);
        row_norms(fk, M, dk, kn);
        row_norms(vh, M, dv, vn);
        memset(per_key, 0, M * sizeof *per_key);
        for (size_t i = 0; i < N; i++) {
            const size_t m = la_visible_keys(p, hd / p->heads, i);
            la_ref_feature_map(p->feature_map, qh + i * dk, fq, dk);
            double den = p->eps, row = 0;
            for (size_t c = 0; c < dk; c++)
                for (size_t j = 0; j < m; j++)
                    den += fq[c] * fk[j * dk + c];
            if (!(den > 0)) continue; /* the zero row: no gradient */
            const double qn = norm2(fq, dk), gn = norm2(gh + i * dv, dv);
            const double yn = norm2(oh + i * dv, dv);
            for (size_t j = 0; j < m; j++) {
                const double term = gn / den * (vn[j] + yn);
                row += term * kn[j];
                per_key[j] += term * qn;
            }
            y[0] += row * row;
        }
        for (size_t j = 0; j < M; j++)
            y[1] += per_key[j] * per_key[j];
    }
    y[0] = sqrt(y[0]);
    y[1] = sqrt(y[1]);
    free(fq), free(fk), free(kn), free(vn), free(per_key);
}

/* FAVOR+'s d_q and d_k cancel as linear attention's do (its weights a_ij =
 * φ(q_i)·φ(k_j), with the stabilizers of la_ref_favor_attention): the terms of d_q row i are
 * ‖d_out_i‖ / den_i · (‖v_j‖ + ‖y_i‖) · a_ij times the size of ∂ log a_ij / ∂q_i, at most
 * 2·s·w (s = d_k^(−1/4), w the largest row norm of W), and of d_k row j the same over the
 * queries that see j times s·(2·w + s·‖k_j‖). So the same floor, with those Y. */
static void favor_yardsticks(la_kernel kernel, const la_problem *p, const tu_backward *b,
                             double y[2])
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v,
                 m = la_favor_params_of(p).features;
    double *w = tu_f64(m * dk), *pq = tu_f64(m), *pk = tu_f64(M * m), *g = tu_f64(M);
    double *Pk = tu_f64(M), *per_key = tu_f64(M), *a = tu_f64(M);
    double *kn = tu_f64(M), *vn = tu_f64(M);
    assert_int_equal(la_kernel_draw(kernel, p, w, NULL), LA_OK);
    const double s = pow((double)dk, -0.25);
    double wn = 0;
    for (size_t l = 0; l < m; l++)
        wn = fmax(wn, norm2(w + l * dk, dk));
    y[0] = y[1] = 0;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++) {
        const double *qh = b->q + hd * N * dk, *kh = b->k + hd * M * dk;
        const double *vh = b->v + hd * M * dv, *gh = b->d_out + hd * N * dv;
        const double *oh = b->out + hd * N * dv;
        row_norms(kh, M, dk, kn);
        row_norms(vh, M, dv, vn);
        for (size_t j = 0; j < M; j++) { /* the keys' projections, P_j and g_j */
            double sq = 0;
            Pk[j] = -INFINITY;
            for (size_t l = 0; l < m; l++) {
                pk[j * m + l] = 0;
                for (size_t c = 0; c < dk; c++)
                    pk[j * m + l] += w[l * dk + c] * s * kh[j * dk + c];
                Pk[j] = fmax(Pk[j], pk[j * m + l]);
            }
            for (size_t c = 0; c < dk; c++)
                sq += s * kh[j * dk + c] * s * kh[j * dk + c];
            g[j] = Pk[j] - sq / 2;
            per_key[j] = 0;
        }
        for (size_t i = 0; i < N; i++) {
            const size_t vis = la_visible_keys(p, hd / p->heads, i);
            if (vis == 0) continue;
            double Pq = -INFINITY, mu = -INFINITY, den = p->eps, row = 0;
            for (size_t l = 0; l < m; l++) {
                pq[l] = 0;
                for (size_t c = 0; c < dk; c++)
                    pq[l] += w[l * dk + c] * s * qh[i * dk + c];
                Pq = fmax(Pq, pq[l]);
            }
            for (size_t j = 0; j < vis; j++)
                mu = fmax(mu, g[j]);
            for (size_t j = 0; j < vis; j++) {
                a[j] = 0;
                for (size_t l = 0; l < m; l++)
                    a[j] += exp(pq[l] - Pq + pk[j * m + l] - (Pk[j] - g[j]) - mu) / (double)m;
                den += a[j];
            }
            if (!(den > 0)) continue;
            const double gn = norm2(gh + i * dv, dv), yn = norm2(oh + i * dv, dv);
            for (size_t j = 0; j < vis; j++) {
                const double term = gn / den * (vn[j] + yn) * a[j];
                row += term * 2 * s * wn;
                per_key[j] += term * s * (2 * wn + s * kn[j]);
            }
            y[0] += row * row;
        }
        for (size_t j = 0; j < M; j++)
            y[1] += per_key[j] * per_key[j];
    }
    y[0] = sqrt(y[0]);
    y[1] = sqrt(y[1]);
    free(w), free(pq), free(pk), free(g), free(Pk), free(per_key), free(a), free(kn), free(vn);
}

/* Y of d_q (y[0]) and d_k (y[1]) of the softmax family, in float64 plain loops over the
 * visible pairs. */
static void softmax_yardsticks(const la_problem *p, const tu_backward *b, double y[2])
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    double *P = tu_f64(M), *per_key = tu_f64(M), *kn = tu_f64(M), *vn = tu_f64(M);
    y[0] = y[1] = 0;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++) {
        const double *qh = b->q + hd * N * dk, *kh = b->k + hd * M * dk;
        const double *vh = b->v + hd * M * dv, *gh = b->d_out + hd * N * dv;
        memset(per_key, 0, M * sizeof *per_key);
        row_norms(kh, M, dk, kn);
        row_norms(vh, M, dv, vn);
        for (size_t i = 0; i < N; i++) {
            const size_t m = la_visible_keys(p, hd / p->heads, i);
            double max = -INFINITY, sum = 0, row = 0;
            const double qn = norm2(qh + i * dk, dk), gn = norm2(gh + i * dv, dv);
            for (size_t j = 0; j < m; j++) {
                P[j] = 0;
                for (size_t c = 0; c < dk; c++)
                    P[j] += qh[i * dk + c] * kh[j * dk + c];
                P[j] *= p->scale;
                max = fmax(max, P[j]);
            }
            for (size_t j = 0; j < m; j++)
                sum += P[j] = exp(P[j] - max);
            for (size_t j = 0; j < m; j++)
                P[j] /= sum;
            /* ‖out_i‖, out_i = Σ_j P_ij v_j */
            double on = 0;
            for (size_t c = 0; c < dv; c++) {
                double o = 0;
                for (size_t j = 0; j < m; j++)
                    o += P[j] * vh[j * dv + c];
                on += o * o;
            }
            on = sqrt(on);
            for (size_t j = 0; j < m; j++) {
                const double term = fabs(p->scale) * P[j] * gn * (vn[j] + on);
                row += term * kn[j];
                per_key[j] += term * qn;
            }
            y[0] += row * row;
        }
        for (size_t j = 0; j < M; j++)
            y[1] += per_key[j] * per_key[j];
    }
    y[0] = sqrt(y[0]);
    y[1] = sqrt(y[1]);
    free(P), free(per_key), free(kn), free(vn);
}

bool tu_gradient_yardsticks(const la_kernel_info *info, const la_problem *p, const tu_backward *b,
                            double y[2])
{
    y[0] = y[1] = -1;
    if (info->params & LA_PARAM_SCALE)
        softmax_yardsticks(p, b, y);
    else if (info->params & LA_PARAM_FEATURE_MAP)
        linear_yardsticks(p, b, y);
    else if (info->params & LA_PARAM_FEATURES)
        favor_yardsticks(info->kernel, p, b, y);
    else
        return false;
    return true;
}

double tu_dv_yardstick(const la_kernel_info *info, const la_problem *p, const tu_backward *b)
{
    if (!info->fns->reference_backward) return -1;
    const size_t bh = p->batch * p->heads;
    const size_t no = bh * p->n_queries * p->d_v, nq = bh * p->n_queries * p->d_k;
    const size_t nk = bh * p->n_keys * p->d_k, nv = bh * p->n_keys * p->d_v;
    double *g = tu_f64(no), *dq = tu_f64(nq), *dk = tu_f64(nk), *dv = tu_f64(nv);
    for (size_t e = 0; e < no; e++)
        g[e] = fabs(b->d_out[e]);
    const double y =
        info->fns->reference_backward(p, b->q, b->k, b->v, b->out, g, dq, dk, dv) == LA_OK
            ? norm2(dv, nv)
            : -1;
    free(g), free(dq), free(dk), free(dv);
    return y;
}

/* The comparisons where the floor exceeded the reference's norm, since the last
 * tu_floor_uses_reset. */
static size_t floor_uses;

size_t tu_floor_uses(void)
{
    return floor_uses;
}

void tu_floor_uses_reset(void)
{
    floor_uses = 0;
}

static double floored(double diff2, double ref2, double floor)
{
    if (!isfinite(diff2) || !isfinite(ref2)) return INFINITY;
    if (sqrt(ref2) < floor) floor_uses++;
    const double den = fmax(sqrt(ref2), floor);
    return den > 0 ? sqrt(diff2) / den : sqrt(diff2);
}

double tu_floored_error_f64(const double *y, const double *ref, size_t n, double floor)
{
    double d2 = 0, r2 = 0;
    for (size_t e = 0; e < n; e++) {
        d2 += (y[e] - ref[e]) * (y[e] - ref[e]);
        r2 += ref[e] * ref[e];
    }
    return floored(d2, r2, floor);
}

double tu_floored_error_f32(const float *y, const double *ref, size_t n, double floor)
{
    double d2 = 0, r2 = 0;
    for (size_t e = 0; e < n; e++) {
        d2 += ((double)y[e] - ref[e]) * ((double)y[e] - ref[e]);
        r2 += ref[e] * ref[e];
    }
    return floored(d2, r2, floor);
}

/* The top two of x[0..n) apart: +inf for n < 2. */
static double top_two_gap(const double *x, size_t n)
{
    double a = -INFINITY, b = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (x[i] > a)
            b = a, a = x[i];
        else if (x[i] > b)
            b = x[i];
    return n < 2 ? INFINITY : a - b;
}

/* tu_favor_kink_gap (yardsticks.h): the projections of every row of q and k, and each
 * query's visible g_j, by plain loops. */
double tu_favor_kink_gap(const la_problem *p, const double *q, const double *k)
{
    const size_t dk = p->d_k, N = p->n_queries, M = p->n_keys;
    const size_t m = la_favor_params_of(p).features;
    double *w = tu_f64(m * dk), *proj = tu_f64(m), *g = tu_f64(M ? M : 1);
    assert_int_equal(la_favor_w(p, w), LA_OK);
    const double s = pow((double)dk, -0.25);
    double gap = INFINITY;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++) {
        for (int key = 0; key <= 1; key++) {
            const size_t rows = key ? M : N;
            const double *x = (key ? k : q) + hd * rows * dk;
            for (size_t i = 0; i < rows; i++) {
                double sq = 0;
                for (size_t l = 0; l < m; l++) {
                    proj[l] = 0;
                    for (size_t a = 0; a < dk; a++)
                        proj[l] += w[l * dk + a] * (s * x[i * dk + a]);
                }
                gap = fmin(gap, top_two_gap(proj, m));
                if (!key) continue;
                for (size_t a = 0; a < dk; a++)
                    sq += (s * x[i * dk + a]) * (s * x[i * dk + a]);
                double top = -INFINITY;
                for (size_t l = 0; l < m; l++)
                    top = fmax(top, proj[l]);
                g[i] = top - sq / 2;
            }
        }
        for (size_t i = 0; i < N; i++)
            gap = fmin(gap, top_two_gap(g, la_visible_keys(p, hd / p->heads, i)));
    }
    free(w), free(proj), free(g);
    return gap;
}
