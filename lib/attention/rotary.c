/* rotary.c — rotary position embeddings (RoPE; Su et al., "RoFormer", 2021) in float and
 * double: the rotation itself (la_rotary_apply_*), which softmax attention takes on q and k
 * before any kernel, and linear attention with the rotation inside, as RoFormer does it
 * (§3.4.2): rotated features in the numerator, unrotated ones in the denominator
 * (la_linear_attention_rotary_*).
 *
 * The angles are formed in float64 for either precision: position t times
 * θ_c = 10000^(−2c/d), then cos and sin, rounded once to the element type. The kernel is
 * written once in rotary_tmpl.h and instantiated here twice (core/real_f32.h explains how). */
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

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/rotary_tmpl.h"
#include "core/real_f64.h"
#include "attention/rotary_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public functions */

la_status la_rotary_apply_f32(size_t rows, size_t n, size_t d, size_t first_pos, float *x)
{
    return rotary_apply_f32(rows, n, d, first_pos, x);
}

la_status la_rotary_apply_f64(size_t rows, size_t n, size_t d, size_t first_pos, double *x)
{
    return rotary_apply_f64(rows, n, d, first_pos, x);
}

la_status la_linear_attention_rotary_f32(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const float *q, const float *k,
                                         const float *v, float *out)
{
    return linear_attention_rotary_f32(p, q_first_pos, k_first_pos, q, k, v, out);
}

la_status la_linear_attention_rotary_f64(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const double *q, const double *k,
                                         const double *v, double *out)
{
    return linear_attention_rotary_f64(p, q_first_pos, k_first_pos, q, k, v, out);
}
