/* state.c — the step API of causal linear attention: (S, z) per head, one token at a
 * time, with save and restore. The arithmetic is the linear engine's la_linear_step_head_*,
 * the function the recurrent scan calls, so both give the same bits. FAVOR+'s states
 * (la_favor_state_create) are made here too; their step is favor.c's. Compiled once per
 * precision (core/real_typed.h): la_linear_step_f32 / _f64 in REAL, the rest once.
 *
 *   q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v); per head S (width, d_v), z (width),
 *   width = d_k (FAVOR+: m); the layout in linear_internal.h. */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if REAL_IS_F32
/* The saved image: this header, then the state's elements (S, z and FAVOR+'s μ) in
 * dtype. Version 2 added width and seed (FAVOR+). */
static const char save_magic[8] = {'L', 'A', 'L', 'I', 'N', 'S', 'T', '2'};
typedef struct {
    char magic[8];
    uint32_t dtype, fm;
    uint64_t heads, d_k, d_v, position;
    double eps;
    uint64_t width, seed;
} save_header;

static size_t dtype_size(la_dtype dtype)
{
    return dtype == LA_FLOAT32 ? 4 : 8;
}

/* A zeroed state of `width` rows per head (d_k, or FAVOR+'s m) with `extra` elements
 * after z (FAVOR+'s μ) and `scratch` elements of scratch; sizes checked by the caller but
 * for overflow. */
static la_status state_alloc(la_linear_state **out, la_dtype dtype, size_t heads, size_t d_k,
                             size_t d_v, size_t width, size_t extra, size_t scratch)
{
    /* elements = heads · width · (d_v + 1) + extra, and its bytes plus the header, fit */
    size_t per_head, elements, bytes, phi_bytes;
    if (d_v == SIZE_MAX || !la_mul_ok(width, d_v + 1, &per_head) ||
        !la_mul_ok(heads, per_head, &elements) || elements > SIZE_MAX - extra ||
        !la_mul_ok(elements + extra, 8, &bytes) || bytes > SIZE_MAX - sizeof(save_header) ||
        !la_mul_ok(scratch, 8, &phi_bytes))
        return LA_EOVERFLOW;
    la_linear_state *st = calloc(1, sizeof *st);
    if (!st) return LA_ENOMEM;
    st->S = calloc(elements + extra, dtype_size(dtype));
    st->phi = malloc(scratch * dtype_size(dtype));
    if (!st->S || !st->phi) {
        la_linear_state_free(st);
        return LA_ENOMEM;
    }
    st->dtype = dtype;
    st->heads = heads;
    st->d_k = d_k;
    st->d_v = d_v;
    st->width = width;
    st->elements = elements + extra;
    *out = st;
    return LA_OK;
}

la_status la_linear_state_create_phi(la_linear_state **out, la_dtype dtype, size_t heads,
                                     size_t d_k, size_t d_v, la_feature_map fm, double eps)
{
    if (!out) return LA_EINVAL;
    if (dtype != LA_FLOAT32 && dtype != LA_FLOAT64) return LA_EINVAL;
    if (heads == 0 || d_k == 0 || d_v == 0) return LA_EINVAL;
    if (!la_feature_map_ok(fm)) return LA_EINVAL;
    if (!(isfinite(eps) && eps >= 0)) return LA_EINVAL;
    size_t scratch;
    if (!la_mul_ok(d_k, 2, &scratch)) return LA_EOVERFLOW;
    la_linear_state *st;
    la_status s = state_alloc(&st, dtype, heads, d_k, d_v, d_k, 0, scratch);
    if (s != LA_OK) return s;
    st->fm = fm;
    st->eps = eps;
    *out = st;
    return LA_OK;
}

la_status la_favor_state_create(la_linear_state **out, la_dtype dtype, size_t heads, size_t d_k,
                                size_t d_v, size_t features, uint64_t seed, const double *w,
                                double eps)
{
    if (!out) return LA_EINVAL;
    if (dtype != LA_FLOAT32 && dtype != LA_FLOAT64) return LA_EINVAL;
    if (heads == 0 || d_k == 0 || d_v == 0 || features == 0) return LA_EINVAL;
    if (!(isfinite(eps) && eps >= 0)) return LA_EINVAL;
    /* scratch: φ(q_t) and ψ(k_t) of every head (heads·m each), then g (heads) */
    size_t per_head, scratch, w_elems, w_bytes;
    if (!la_mul_ok(features, 2, &per_head) || per_head == SIZE_MAX ||
        !la_mul_ok(heads, per_head + 1, &scratch) || !la_mul_ok(features, d_k, &w_elems) ||
        !la_mul_ok(w_elems, sizeof(double), &w_bytes))
        return LA_EOVERFLOW;
    double w_max;
    if (w && !la_finite_max_abs(w, w_elems, &w_max)) return LA_EINVAL;
    la_linear_state *st;
    la_status s = state_alloc(&st, dtype, heads, d_k, d_v, features, heads, scratch);
    if (s != LA_OK) return s;
    double *w64 = malloc(w_bytes);
    if (!w64) {
        la_linear_state_free(st);
        return LA_ENOMEM;
    }
    if (w)
        memcpy(w64, w, w_bytes);
    else
        s = la_favor_features(features, d_k, seed, w64);
    if (s == LA_OK && dtype == LA_FLOAT32) { /* the float copy of the float64 draw */
        float *w32 = malloc(w_elems * sizeof *w32);
        if (w32) {
            for (size_t x = 0; x < w_elems; x++)
                w32[x] = (float)w64[x];
        } else {
            s = LA_ENOMEM;
        }
        free(w64);
        w64 = NULL;
        st->w = w32;
    } else {
        st->w = w64;
    }
    if (s != LA_OK) {
        free(w64);
        la_linear_state_free(st);
        return s;
    }
    st->fm = LA_FEATURE_IDENTITY;
    st->eps = eps;
    st->seed = seed;
    *out = st;
    return LA_OK;
}

void la_linear_state_free(la_linear_state *st)
{
    if (!st) return;
    free(st->S);
    free(st->phi);
    free(st->w);
    free(st);
}

void la_linear_state_reset(la_linear_state *st)
{
    if (!st) return;
    memset(st->S, 0, st->elements * dtype_size(st->dtype));
    st->position = 0;
    st->s_bound = st->z_bound = 0;
}

size_t la_linear_state_position(const la_linear_state *st)
{
    return st ? st->position : 0;
}

size_t la_linear_state_save_size(const la_linear_state *st)
{
    if (!st) return 0;
    return sizeof(save_header) + st->elements * dtype_size(st->dtype);
}

la_status la_linear_state_save(const la_linear_state *st, void *buf, size_t size)
{
    if (!st || !buf || size < la_linear_state_save_size(st)) return LA_EINVAL;
    save_header hdr;
    memset(&hdr, 0, sizeof hdr);
    memcpy(hdr.magic, save_magic, sizeof save_magic);
    hdr.dtype = (uint32_t)st->dtype;
    hdr.fm = (uint32_t)st->fm;
    hdr.heads = st->heads;
    hdr.d_k = st->d_k;
    hdr.d_v = st->d_v;
    hdr.position = st->position;
    hdr.eps = st->eps;
    hdr.width = st->width;
    hdr.seed = st->seed;
    memcpy(buf, &hdr, sizeof hdr);
    memcpy((char *)buf + sizeof hdr, st->S, st->elements * dtype_size(st->dtype));
    return LA_OK;
}

/* Element i of an image's data in dtype, as a double (the data need not be aligned). */
static double image_element(const unsigned char *data, la_dtype dtype, size_t i)
{
    if (dtype == LA_FLOAT32) {
        float f;
        memcpy(&f, data + 4 * i, 4);
        return f;
    }
    double d;
    memcpy(&d, data + 8 * i, 8);
    return d;
}

/* Whether an image's data can be a state of st's kind at position: every entry of S
 * and z finite, z >= 0 (φ and FAVOR+'s ψ are never negative), everything 0 at position
 * 0 (as create and reset leave it), and FAVOR+'s μ, the running max of g = max_l u·w_l
 * − ‖u‖²/2 (u the scaled key), finite and at most max_l ‖w_l‖²/2, the largest g any key
 * gives (a larger μ would scale every later token to 0). */
static bool image_valid(const la_linear_state *st, const unsigned char *data, uint64_t position)
{
    const size_t s_n = st->heads * st->width * st->d_v, z_n = st->heads * st->width;
    for (size_t i = 0; i < st->elements; i++) {
        const double x = image_element(data, st->dtype, i);
        if (!isfinite(x) || (position == 0 && x != 0)) return false;
        if (i >= s_n && i < s_n + z_n && x < 0) return false;
    }
    if (!st->w || position == 0) return true;
    double g_max = 0;
    for (size_t l = 0; l < st->width; l++) {
        double sq = 0;
        for (size_t j = 0; j < st->d_k; j++) {
            const double w = st->dtype == LA_FLOAT32
                                 ? (double)((const float *)st->w)[l * st->d_k + j]
                                 : ((const double *)st->w)[l * st->d_k + j];
            sq += w * w;
        }
        g_max = sq / 2 > g_max ? sq / 2 : g_max;
    }
    for (size_t h = 0; h < st->heads; h++) /* rounding of g's terms: a margin */
        if (image_element(data, st->dtype, s_n + z_n + h) > g_max * (1 + 1e-3) + 1e-3) return false;
    return true;
}

/* Accepts only an image of a state with the same dtype, sizes, φ and eps (a state
 * carried on with another φ or eps would mix two formulas), and for FAVOR+ the same m and
 * seed, whose data are a state that stepping can reach (image_valid) and whose position
 * can still advance; the state is untouched unless everything matches. */
la_status la_linear_state_restore(la_linear_state *st, const void *buf, size_t size)
{
    if (!st || !buf || size != la_linear_state_save_size(st)) return LA_EINVAL;
    save_header hdr;
    memcpy(&hdr, buf, sizeof hdr);
    if (memcmp(hdr.magic, save_magic, sizeof save_magic) != 0) return LA_EINVAL;
    if (hdr.dtype != (uint32_t)st->dtype || hdr.heads != st->heads || hdr.d_k != st->d_k ||
        hdr.d_v != st->d_v || hdr.fm != (uint32_t)st->fm || hdr.eps != st->eps ||
        hdr.width != st->width || hdr.seed != st->seed)
        return LA_EINVAL;
    if (hdr.position >= (uint64_t)SIZE_MAX || /* the next step would wrap it to 0 */
        !image_valid(st, (const unsigned char *)buf + sizeof hdr, hdr.position))
        return LA_EINVAL;
    memcpy(st->S, (const char *)buf + sizeof hdr, st->elements * dtype_size(st->dtype));
    st->position = (size_t)hdr.position;
    const size_t s_elements = st->heads * st->width * st->d_v, z_elements = st->heads * st->width;
    const unsigned char *data = (const unsigned char *)buf + sizeof hdr;
    st->s_bound = st->z_bound = 0; /* image_valid: every entry finite */
    for (size_t i = 0; i < s_elements + z_elements; i++) {
        const double x = fabs(image_element(data, st->dtype, i));
        double *bound = i < s_elements ? &st->s_bound : &st->z_bound;
        *bound = x > *bound ? x : *bound;
    }
    return LA_OK;
}
#endif /* REAL_IS_F32 */

/* ---------------------------------------------------------------- one token, in REAL */

/* max |x[i]| over n elements, INFINITY when one is not finite. */
static double state_max_abs(const REAL *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = fabs((double)x[i]);
        if (!(a <= m)) m = isfinite(a) ? a : INFINITY;
        if (isinf(m)) break;
    }
    return m;
}

/* The step's range check (the header's LA_ERANGE rule for the step API): with
 * a = max|q_t|, b = max|k_t|, c = max|v_t| over every head, φ ≤ x + 1 gives
 * |S'| ≤ s_bound + (b + 1)·c, z' ≤ z_bound + (b + 1), and every entry of φ(q)ᵀS' and
 * φ(q)ᵀz' at most d_k·(a + 1)·max(|S'|, z'); all kept under REAL_MAX / 8. On success
 * the new bounds are written to *s_new, *z_new; a non-finite input or state passes
 * (its output is not finite either) and makes the bounds infinite. */
static bool step_fits(const la_linear_state *st, const REAL *q_t, const REAL *k_t, const REAL *v_t,
                      double *s_new, double *z_new)
{
    const double a = state_max_abs(q_t, st->heads * st->d_k);
    const double b = state_max_abs(k_t, st->heads * st->d_k);
    const double c = state_max_abs(v_t, st->heads * st->d_v);
    const long double s = (long double)st->s_bound + ((long double)b + 1) * c;
    const long double z = (long double)st->z_bound + ((long double)b + 1);
    if (isinf(a) || isinf(s) || isinf(z)) {
        *s_new = *z_new = INFINITY;
        return true;
    }
    const long double limit = (long double)REAL_MAX / 8;
    if (s > limit || z > limit || (long double)st->d_k * ((long double)a + 1) * fmaxl(s, z) > limit)
        return false;
    *s_new = (double)s;
    *z_new = (double)z;
    return true;
}

/* One token for every head h: φ(k), φ(q); S_h += φ(k) vᵀ, z_h += φ(k);
 * y_h = φ(q)ᵀS_h / (φ(q)ᵀz_h + eps).  q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v). */
static la_status linear_step(la_linear_state *st, const REAL *q_t, const REAL *k_t, const REAL *v_t,
                             REAL *y_t)
{
    if (!st || !q_t || !k_t || !v_t || !y_t || st->dtype != REAL_DTYPE) return LA_EINVAL;
    double s_new, z_new;
    if (!step_fits(st, q_t, k_t, v_t, &s_new, &z_new)) return LA_ERANGE;
    st->s_bound = s_new;
    st->z_bound = z_new;
    const size_t dk = st->d_k, dv = st->d_v;
    REAL *S = st->S, *z = S + st->heads * dk * dv;
    REAL *phi_q = st->phi, *phi_k = phi_q + dk;
    for (size_t h = 0; h < st->heads; h++) {
        FN(la_feature_map)(st->fm, k_t + h * dk, phi_k, dk);
        FN(la_feature_map)(st->fm, q_t + h * dk, phi_q, dk);
        FN(la_linear_step_head)
        (S + h * dk * dv, z + h * dk, phi_k, v_t + h * dv, phi_q, (REAL)st->eps, y_t + h * dv, dk,
         dv);
    }
    st->position++;
    return LA_OK;
}

/* FAVOR+'s states (la_favor_state_create) step through favor.c's la_favor_step_*. */
#if REAL_IS_F32
la_status la_linear_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                             const float *v_t, float *y_t)
#else
la_status la_linear_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                             const double *v_t, double *y_t)
#endif
{
    if (st && st->w) return FN(la_favor_step)(st, q_t, k_t, v_t, y_t);
    return linear_step(st, q_t, k_t, v_t, y_t);
}
