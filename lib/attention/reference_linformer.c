/* reference_linformer.c — the float64 oracle of Linformer attention: plain loops, no BLIS,
 * no threads, no blocking (reference.c holds the other oracles; this one is its own file,
 * as its kernel is). Its softmax is written here again rather than borrowed from
 * la_ref_softmax_attention, so that a bug in either cannot hide in both. */
#include "core/internal.h"

#include <math.h>
#include <stdlib.h>

/* Per head (b, h), with E, F: (k, M) and L = min(M, L_b) the visible keys:
 *   K' (k, d_k) = Σ_{j < L} E[:, j] k_j,   V' (k, d_v) = Σ_{j < L} F[:, j] v_j;
 *   scores (N, k) = Q K'ᵀ · scale, P = row softmax, out (N, d_v) = P V'. */
la_status la_ref_linformer_attention(const la_problem *p, const double *q, const double *k,
                                     const double *v, double *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || p->causal || p->proj_rank > p->n_keys) return LA_EINVAL;
    const size_t N = p->n_queries, M = p->n_keys, r = p->proj_rank, dk = p->d_k, dv = p->d_v;
    size_t n_proj, n_kp, n_vp, bytes;
    if (!la_mul_ok(r, M, &n_proj) || !la_mul_ok(n_proj, 2 * sizeof(double), &bytes) ||
        !la_mul_ok(r, dk, &n_kp) || !la_mul_ok(r, dv, &n_vp))
        return LA_EOVERFLOW;
    if (p->proj_e)
        for (size_t x = 0; x < n_proj; x++)
            if (!isfinite(p->proj_e[x]) || !isfinite(p->proj_f[x])) return LA_EINVAL;

    double *drawn = p->proj_e ? NULL : malloc(2 * n_proj * sizeof *drawn);
    double *kp = malloc(n_kp * sizeof *kp), *vp = malloc(n_vp * sizeof *vp);
    double *row = malloc(r * sizeof *row);
    if ((!p->proj_e && !drawn) || !kp || !vp || !row) {
        st = LA_ENOMEM;
        goto done;
    }
    const double *e = p->proj_e, *f = p->proj_f;
    if (!e) {
        la_linformer_projections(r, M, p->seed, drawn, drawn + n_proj);
        e = drawn, f = drawn + n_proj;
    }

    for (size_t b = 0; b < p->batch; b++) {
        size_t visible = M;
        if (p->key_lengths && (size_t)p->key_lengths[b] < M) visible = (size_t)p->key_lengths[b];
        for (size_t h = 0; h < p->heads; h++) {
            const size_t head = b * p->heads + h;
            const double *qh = q + head * N * dk, *kh = k + head * M * dk;
            const double *vh = v + head * M * dv;
            double *oh = out + head * N * dv;
            /* K' = E K and V' = F V over the visible keys */
            for (size_t a = 0; a < r; a++) {
                for (size_t c = 0; c < dk; c++) {
                    double s = 0;
                    for (size_t j = 0; j < visible; j++)
                        s += e[a * M + j] * kh[j * dk + c];
                    kp[a * dk + c] = s;
                }
                for (size_t c = 0; c < dv; c++) {
                    double s = 0;
                    for (size_t j = 0; j < visible; j++)
                        s += f[a * M + j] * vh[j * dv + c];
                    vp[a * dv + c] = s;
                }
            }
            for (size_t i = 0; i < N; i++) {
                /* scores over the k projected keys, and their max */
                double max = -INFINITY;
                for (size_t a = 0; a < r; a++) {
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kp[a * dk + c];
                    row[a] = s * p->scale;
                    if (row[a] > max) max = row[a];
                }
                /* softmax: exp(s - max) / Σ exp(s - max) */
                double sum = 0;
                for (size_t a = 0; a < r; a++) {
                    row[a] = exp(row[a] - max);
                    sum += row[a];
                }
                /* out = P V' */
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t a = 0; a < r; a++)
                        acc += row[a] / sum * vp[a * dv + c];
                    oh[i * dv + c] = acc;
                }
            }
        }
    }
    st = LA_OK;
done:
    free(drawn);
    free(kp);
    free(vp);
    free(row);
    return st;
}
