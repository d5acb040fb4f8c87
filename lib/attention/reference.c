/* reference.c — float64 oracles. Plain loops that materialise everything; no blocking,
 * no BLIS, no threads, no tuning. The tests hold the fast kernels to these. Keep them
 * obviously correct: speed belongs in softmax.c and linear.c. */
#include "core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void la_ref_feature_map(la_feature_map fm, const double *x, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double xi = x[i];
        if (fm == LA_FEATURE_RELU)
            out[i] = xi > 0 ? xi : 0;
        else
            out[i] = xi >= 0 ? xi + 1 : exp(xi); /* elu(x) + 1 without cancellation */
    }
}

/* Validates p and the pointers shared by every reference. */
static la_status check(const la_problem *p, const double *q, const double *k, const double *v,
                       const double *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    return LA_OK;
}

/* *n = a·b·c, false when it or its bytes as doubles (n · 8) overflow size_t: every
 * scratch size is checked before anything is allocated. */
static bool doubles_fit(size_t a, size_t b, size_t c, size_t *n)
{
    size_t bytes;
    return la_mul_ok(a, b, n) && la_mul_ok(*n, c, n) && la_mul_ok(*n, sizeof(double), &bytes);
}

/* Keys query i of batch entry b sees: j < L_b (key lengths) and, when causal, j <= i.
 * Written here from the masks' definition rather than shared with the kernels, so a
 * masking bug in the kernels cannot hide in the oracle too. */
static size_t ref_visible_keys(const la_problem *p, size_t b, size_t i)
{
    size_t visible = 0;
    for (size_t j = 0; j < p->n_keys; j++) {
        const bool in_length = !p->key_lengths || (int64_t)j < p->key_lengths[b];
        const bool in_past = !p->causal || j <= i;
        if (in_length && in_past) visible = j + 1;
    }
    return visible;
}

/* Element offsets of head (b, h) in the (B, H, rows, cols) arrays. */
#define HEAD(p, b, h, rows, cols) ((((b) * (p)->heads + (h)) * (rows)) * (cols))

/* Softmax attention, per head:
 *   scores (N, M) = q kᵀ · scale, hidden entries = -inf;
 *   P = row softmax of scores; out (N, d_v) = P v. */
la_status la_ref_softmax_attention(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* scores: (N, M) */
    size_t n_scores;
    if (!doubles_fit(N, M, 1, &n_scores)) return LA_EOVERFLOW;
    double *scores = malloc(n_scores * sizeof *scores);
    if (!scores) return LA_ENOMEM;

    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i);
                double *row = scores + i * M;
                /* scores, and the row max over visible keys */
                double max = -INFINITY;
                for (size_t j = 0; j < visible; j++) {
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    row[j] = s * p->scale;
                    if (row[j] > max) max = row[j];
                }
                /* softmax: exp(s - max) / Σ exp(s - max) */
                double sum = 0;
                for (size_t j = 0; j < visible; j++) {
                    row[j] = exp(row[j] - max);
                    sum += row[j];
                }
                for (size_t j = 0; j < visible; j++)
                    row[j] /= sum;
                /* out = P v (a query that sees nothing gets zeros) */
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t j = 0; j < visible; j++)
                        acc += row[j] * vh[j * dv + c];
                    oh[i * dv + c] = acc;
                }
            }
        }
    }
    free(scores);
    return LA_OK;
}

/* Hard attention, per head: out row i = v row argmax_j (q_i·k_j · scale), ties to the
 * lowest j, over visible keys; zeros when none is visible. */
la_status la_ref_hard_attention(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i), best = 0;
                double best_score = -INFINITY;
                for (size_t j = 0; j < visible; j++) {
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    s *= p->scale;
                    if (j == 0 || s > best_score) { /* strict: ties keep the lowest j */
                        best_score = s;
                        best = j;
                    }
                }
                for (size_t c = 0; c < dv; c++)
                    oh[i * dv + c] = visible > 0 ? vh[best * dv + c] : 0.0;
            }
        }
    }
    return LA_OK;
}

/* Linear attention, per head, materialising φ(Q), φ(K) and every prefix state:
 *   S_i (d_k, d_v) = Σ_{visible j} φ(k_j) v_jᵀ,  z_i (d_k) = Σ_{visible j} φ(k_j),
 *   out_i = φ(q_i)ᵀ S_i / (φ(q_i)ᵀ z_i + eps), and zeros where that denominator is 0.
 * The visible keys of query i are a prefix 0..visible-1, so S_i is a prefix sum. */
la_status la_ref_linear_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* φ(Q) (N, d_k), φ(K) (M, d_k); prefix[j] = state after keys 0..j-1, for j = 0..M:
     * S (M + 1, d_k, d_v), z (M + 1, d_k). M + 1 fits: M·d_k·8 does (la_problem_check). */
    size_t n_phi_q, n_phi_k, n_prefix_S, n_prefix_z;
    if (!doubles_fit(N, dk, 1, &n_phi_q) || !doubles_fit(M, dk, 1, &n_phi_k) ||
        !doubles_fit(M + 1, dk, dv, &n_prefix_S) || !doubles_fit(M + 1, dk, 1, &n_prefix_z))
        return LA_EOVERFLOW;
    double *phi_q = malloc(n_phi_q * sizeof *phi_q);
    double *phi_k = malloc(n_phi_k * sizeof *phi_k);
    double *prefix_S = calloc(n_prefix_S, sizeof *prefix_S);
    double *prefix_z = calloc(n_prefix_z, sizeof *prefix_z);
    if (!phi_q || !phi_k || !prefix_S || !prefix_z) {
        st = LA_ENOMEM;
        goto done;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            la_ref_feature_map(p->feature_map, q + HEAD(p, b, h, N, dk), phi_q, N * dk);
            la_ref_feature_map(p->feature_map, k + HEAD(p, b, h, M, dk), phi_k, M * dk);
            /* prefix states: S_{j+1} = S_j + φ(k_j) v_jᵀ, z_{j+1} = z_j + φ(k_j) */
            for (size_t j = 0; j < M; j++) {
                const double *S0 = prefix_S + j * dk * dv, *z0 = prefix_z + j * dk;
                double *S1 = prefix_S + (j + 1) * dk * dv, *z1 = prefix_z + (j + 1) * dk;
                for (size_t a = 0; a < dk; a++) {
                    z1[a] = z0[a] + phi_k[j * dk + a];
                    for (size_t c = 0; c < dv; c++)
                        S1[a * dv + c] = S0[a * dv + c] + phi_k[j * dk + a] * vh[j * dv + c];
                }
            }
            /* out_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps) with the state of its visible keys */
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i);
                const double *S = prefix_S + visible * dk * dv, *z = prefix_z + visible * dk;
                const double *fq = phi_q + i * dk;
                double den = 0;
                for (size_t a = 0; a < dk; a++)
                    den += fq[a] * z[a];
                for (size_t c = 0; c < dv; c++) {
                    double num = 0;
                    for (size_t a = 0; a < dk; a++)
                        num += fq[a] * S[a * dv + c];
                    /* a zero denominator is the empty row too (linattn.h) */
                    oh[i * dv + c] = visible > 0 && den + p->eps != 0 ? num / (den + p->eps) : 0.0;
                }
            }
        }
    }
done:
    free(phi_q);
    free(phi_k);
    free(prefix_S);
    free(prefix_z);
    return st;
}
