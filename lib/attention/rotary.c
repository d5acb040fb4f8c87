/* rotary.c — rotary position embeddings (RoPE; Su et al., "RoFormer", 2021) in float and
 * double: the rotation itself (la_rotary_apply_*), which softmax attention takes on q and k
 * before any kernel, and linear attention with the rotation inside, as RoFormer does it
 * (§3.4.2): rotated features in the numerator, unrotated ones in the denominator
 * (la_linear_attention_rotary_*).
 *
 * The angles are formed in float64 for either precision: position t times
 * θ_c = 10000^(−2c/d), then cos and sin, rounded once to the element type. Compiled once per
 * precision (core/real_typed.h).
 *
 *   x: (rows, n, d) rotated in place; q: (B, H, N, d_k), k: (B, H, M, d_k),
 *   v: (B, H, M, d_v), out: (B, H, N, d_v), row-major; per head S (d_k, d_v), z (d_k). */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* θ_c of pair c of d channels: 10000^(−2c/d). */
static double rotary_theta(size_t c, size_t d)
{
    return pow(LA_ROTARY_BASE, -2.0 * (double)c / (double)d);
}

/* The checks of la_rotary_apply_*: x given, sizes >= 1, d even, rows·n·d elements of
 * 8 bytes within size_t, positions first_pos .. first_pos + n − 1 within size_t. */
static la_status rotary_apply_check(size_t rows, size_t n, size_t d, size_t first_pos,
                                    const void *x)
{
    size_t count;
    if (!x || rows == 0 || n == 0 || d == 0 || d % 2 != 0) return LA_EINVAL;
    if (!la_mul_ok(rows, n, &count) || !la_mul_ok(count, d, &count) ||
        !la_mul_ok(count, sizeof(double), &count))
        return LA_EOVERFLOW;
    if (first_pos > SIZE_MAX - n) return LA_EOVERFLOW;
    return LA_OK;
}

/* The checks of la_linear_attention_rotary_*: a checked problem, the pointers, d_k even,
 * the last positions within size_t. */
static la_status rotary_linear_check(const la_problem *p, size_t q_first_pos, size_t k_first_pos,
                                     const void *q, const void *k, const void *v, const void *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || p->d_k % 2 != 0) return LA_EINVAL;
    if (p->mask || p->key_mask) return LA_EINVAL; /* general masks: refused (linattn.h) */
    if (q_first_pos > SIZE_MAX - p->n_queries || k_first_pos > SIZE_MAX - p->n_keys)
        return LA_EOVERFLOW;
    return LA_OK;
}

/* Linear attention's causal bound (range.c) with a factor 2 for the rotation (a rotated
 * pair's entries are at most √2 times the largest of the pair): every entry of S, z,
 * R φ(q)ᵀS and φ(q)ᵀz is at most 2·d_k·M·(a + 1)·(b + 1)·max(c, 1), kept under T/8; true
 * when an input is not finite (not this check's business). */
static bool rotary_range_ok(const la_problem *p, double a, double b, double c, double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c)) return true;
    const long double bound = 2.0L * (long double)p->d_k * (long double)p->n_keys *
                              ((long double)a + 1) * ((long double)b + 1) * fmaxl(c, 1);
    return bound <= (long double)real_max / 8;
}

/* Scratch of one thread in elements: S (d_k × d_v), z (d_k), and four feature rows
 * (φ(q), R φ(q), φ(k), R φ(k)), d_k each; SIZE_MAX when it does not fit. */
static size_t rotary_linear_per_thread(const la_problem *p)
{
    size_t s;
    if (!la_mul_ok(p->d_k, p->d_v, &s) || s > SIZE_MAX - 5 * p->d_k) return SIZE_MAX;
    return s + 5 * p->d_k;
}

/* x (d) of the token at position t, rotated into out (d; may equal x): pair c, channels
 * (2c, 2c+1), by the angle t·θ_c. */
static void rotate_row(const REAL *x, REAL *out, size_t d, size_t t)
{
    for (size_t c = 0; c < d / 2; c++) {
        const double angle = (double)t * rotary_theta(c, d);
        const REAL cs = (REAL)cos(angle), sn = (REAL)sin(angle);
        const REAL a = x[2 * c], b = x[2 * c + 1];
        out[2 * c] = a * cs - b * sn;
        out[2 * c + 1] = a * sn + b * cs;
    }
}

/* x: (rows, n, d) row-major, rotated in place; token i of every row block at position
 * first_pos + i. The angles of a token are formed once and applied to every row block. */
static la_status rotary_apply(size_t rows, size_t n, size_t d, size_t first_pos, REAL *x)
{
    la_status st = rotary_apply_check(rows, n, d, first_pos, x);
    if (st != LA_OK) return st;
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < d / 2; c++) {
            const double angle = (double)(first_pos + i) * rotary_theta(c, d);
            const REAL cs = (REAL)cos(angle), sn = (REAL)sin(angle);
            for (size_t r = 0; r < rows; r++) {
                REAL *pair = x + (r * n + i) * d + 2 * c;
                const REAL a = pair[0], b = pair[1];
                pair[0] = a * cs - b * sn;
                pair[1] = a * sn + b * cs;
            }
        }
    }
    return LA_OK;
}

/* One head of linear attention with rotary positions, of an entry that leaves m keys:
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   scratch: rotary_linear_per_thread() elements.
 * S = Σ_j R_{s_j} φ(k_j) v_jᵀ and z = Σ_j φ(k_j) over the keys a query sees (all m, or
 * causal the keys j <= i, added token by token), then
 *   y_i = (R_{t_i} φ(q_i))ᵀ S / (φ(q_i)ᵀ z + eps),
 * a zero row where the query sees no key or the denominator is exactly 0.
 * Accuracy: R_t is formed from rounded cos and sin, so the numerator is exact to about
 * u·|φ(q_i)|·Σ_j |φ(k_j)||v_j| (u the unit roundoff), not to u·|y_i|. Where φ(q_i)ᵀz
 * is 0 or tiny against Σ_j |φ(q_i)||φ(k_j)| (features with disjoint support, as elu+1
 * gives for entries of −1e18), y_i is that rounding error over eps. */
static void rotary_linear_head(const la_problem *p, size_t m, size_t q_first_pos,
                               size_t k_first_pos, const REAL *qh, const REAL *kh, const REAL *vh,
                               REAL *oh, REAL *scratch)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v;
    const REAL eps = (REAL)p->eps;
    REAL *S = scratch, *z = S + dk * dv, *phi_q = z + dk, *rot_q = phi_q + dk, *phi_k = rot_q + dk,
         *rot_k = phi_k + dk;
    memset(S, 0, (dk * dv + dk) * sizeof *S);
    size_t added = 0; /* keys 0 .. added − 1 are in S and z */
    const size_t all = m;
    for (size_t i = 0; i < N; i++) {
        /* the keys query i sees: all m, or causal those j <= i + o (la_causal_offset) */
        const size_t seen = la_visible_keys_of(p, all, i);
        for (; added < seen; added++) {
            /* S += R φ(k_j) v_jᵀ, z += φ(k_j) */
            FN(la_feature_map)(p->feature_map, kh + added * dk, phi_k, dk);
            rotate_row(phi_k, rot_k, dk, k_first_pos + added);
            FN(la_linear_add_key)(S, z, rot_k, phi_k, vh + added * dv, dk, dv);
        }
        REAL *yi = oh + i * dv;
        if (seen == 0) {
            memset(yi, 0, dv * sizeof *yi);
            continue;
        }
        /* y_i = (R φ(q_i))ᵀ S / (φ(q_i)ᵀ z + eps) */
        FN(la_feature_map)(p->feature_map, qh + i * dk, phi_q, dk);
        rotate_row(phi_q, rot_q, dk, q_first_pos + i);
        FN(la_linear_read_query)(S, z, rot_q, phi_q, eps, yi, dk, dv);
    }
}

/* Linear attention with rotary positions (contract in linattn.h): one task per
 * (batch entry, head), each computed whole by one thread (the same bits on any thread
 * count), scratch one S, z and four feature rows per thread. */
static la_status linear_attention_rotary(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const REAL *q, const REAL *k,
                                         const REAL *v, REAL *out)
{
    la_status st = rotary_linear_check(p, q_first_pos, k_first_pos, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */
    /* the range rule (linattn.h): every entry of S, z, the numerator and the denominator
     * within T/8 */
    const double a = FN(la_max_abs)(q, heads * N * dk), b = FN(la_max_abs)(k, heads * M * dk);
    const double c = FN(la_max_abs)(v, heads * M * dv);
    if (!rotary_range_ok(p, a, b, c, (double)REAL_MAX)) return LA_ERANGE;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    const size_t per_thread = rotary_linear_per_thread(p);
    size_t elements;
    if (per_thread == SIZE_MAX || !la_mul_ok(per_thread, (size_t)threads, &elements))
        return LA_EOVERFLOW;
    REAL *scratch = NULL;
    if ((st = FN(la_linear_scratch)(p, elements, &scratch)) != LA_OK) return st;
#pragma omp parallel num_threads(threads)
    {
        REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(static)
        for (size_t bh = 0; bh < heads; bh++)
            rotary_linear_head(p, la_keys_in_length(p, bh / p->heads), q_first_pos, k_first_pos,
                               q + bh * N * dk, k + bh * M * dk, v + bh * M * dv, out + bh * N * dv,
                               mine);
    }
    free(scratch);
    return LA_OK;
}

/* ---------------------------------------------------------------- the public functions */

#if REAL_IS_F32
la_status la_rotary_apply_f32(size_t rows, size_t n, size_t d, size_t first_pos, float *x)
#else
la_status la_rotary_apply_f64(size_t rows, size_t n, size_t d, size_t first_pos, double *x)
#endif
{
    return rotary_apply(rows, n, d, first_pos, x);
}

#if REAL_IS_F32
la_status la_linear_attention_rotary_f32(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const float *q, const float *k,
                                         const float *v, float *out)
#else
la_status la_linear_attention_rotary_f64(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const double *q, const double *k,
                                         const double *v, double *out)
#endif
{
    return linear_attention_rotary(p, q_first_pos, k_first_pos, q, k, v, out);
}
