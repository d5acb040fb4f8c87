/* linformer.c — Linformer attention (Wang et al. 2020): keys and values projected along the
 * sequence to k rows, K' = E·K and V' = F·V, then the fused softmax kernel over the k
 * projected keys. Compiled once per precision (core/real_typed.h): the kernel in REAL, its public
 * la_linformer_attention_f32 / _f64, and (once) the projections' seeded draw and the cost.
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   E = proj_e, F = proj_f: (k, M) row-major float64, or drawn from seed;
 *   K' (B, H, k, d_k), V' (B, H, k, d_v) in the call's scratch. */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "core/alloc_large.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the seeded draw */

/* splitmix64's output for the state it has after `calls` steps from seed: the state only
 * adds a constant per step, so any draw can be formed on its own (and in parallel). */
static uint64_t splitmix_at(uint64_t seed, uint64_t calls)
{
    uint64_t z = seed + calls * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The 2·k·m entries of E then F, as la_linformer_projections documents them, into the
 * float64 pair (e64, f64) or the float32 pair (e32, f32) (the other pair NULL): a float32
 * entry is the float64 entry rounded, so both precisions see the same draw. Entries 2i
 * and 2i + 1 of the sequence E‖F are Box–Muller's pair from splitmix64's draws 2i + 1 and
 * 2i + 2 after seed; each pair is formed on its own, so the threads split them and the
 * bits do not depend on the thread count. */
static void draw_projections(size_t k, size_t m, uint64_t seed, double *e64, double *f64,
                             float *e32, float *f32)
{
    const size_t count = k * m; /* the caller checked it fits */
    const double scale = 1.0 / sqrt((double)k);
    const double two_pi = 6.283185307179586476925286766559;
#pragma omp parallel for schedule(static) num_threads(la_threads()) if (count >= 4096)
    for (size_t pair = 0; pair < count; pair++) {
        /* Box–Muller: u1 in [0, 1), so 1 - u1 in (0, 1] and the log is finite */
        const double u1 = (double)(splitmix_at(seed, 2 * (uint64_t)pair + 1) >> 11) * 0x1.0p-53;
        const double u2 = (double)(splitmix_at(seed, 2 * (uint64_t)pair + 2) >> 11) * 0x1.0p-53;
        const double r = sqrt(-2.0 * log(1.0 - u1));
        const double z[2] = {r * cos(two_pi * u2), r * sin(two_pi * u2)};
        for (size_t h = 0; h < 2; h++) {
            const size_t i = 2 * pair + h, at = i < count ? i : i - count;
            const double value = z[h] * scale;
            if (e64)
                (i < count ? e64 : f64)[at] = value;
            else
                (i < count ? e32 : f32)[at] = (float)value;
        }
    }
}

#if REAL_IS_F32
la_status la_linformer_projections(size_t k, size_t m, uint64_t seed, double *e, double *f)
{
    if (!e || !f || e == f || k == 0 || m == 0) return LA_EINVAL;
    size_t count, bytes;
    if (!la_mul_ok(k, m, &count) || !la_mul_ok(count, 2 * sizeof(double), &bytes))
        return LA_EOVERFLOW;
    draw_projections(k, m, seed, e, f, NULL, NULL);
    return LA_OK;
}
#endif

/* ---------------------------------------------------------------- shared by both precisions */

/* Keys per block of the projections: each task copies (float32: converts) E's or F's
 * k × PROJ_KEYS block into its own buffer, L2-sized at k = 256, and multiplies it there. */
enum { PROJ_KEYS = 256 };

/* The tasks of the projections, one per (head, E or F), and the threads they run on. */
static size_t projection_threads(const la_problem *p)
{
    const size_t tasks = 2 * p->batch * p->heads, threads = (size_t)la_threads();
    return tasks < threads ? tasks : threads;
}

/* What one call holds, in elements of its precision: a drawn pair E, F (2·k·M; none when
 * given), a k × PROJ_KEYS block per projection thread, then K' (B, H, k, d_k) and V'
 * (B, H, k, d_v). */
typedef struct {
    size_t proj, blocks, kp, vp, total;
} linformer_layout;

static la_status linformer_layout_for(const la_problem *p, linformer_layout *lay)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    const size_t r = linformer.proj_rank;
    size_t heads, rows, a;
    lay->proj = 0;
    if (!linformer.proj_e)
        if (!la_mul_ok(r, p->n_keys, &a) || !la_mul_ok(a, 2, &lay->proj)) return LA_EOVERFLOW;
    if (!la_mul_ok(r, PROJ_KEYS, &a) || !la_mul_ok(a, projection_threads(p), &lay->blocks))
        return LA_EOVERFLOW;
    if (!la_mul_ok(p->batch, p->heads, &heads) || !la_mul_ok(heads, r, &rows) ||
        !la_mul_ok(rows, p->d_k, &lay->kp) || !la_mul_ok(rows, p->d_v, &lay->vp))
        return LA_EOVERFLOW;
    if (lay->proj > SIZE_MAX - lay->blocks || lay->proj + lay->blocks > SIZE_MAX - lay->kp ||
        lay->proj + lay->blocks + lay->kp > SIZE_MAX - lay->vp)
        return LA_EOVERFLOW;
    lay->total = lay->proj + lay->blocks + lay->kp + lay->vp;
    if (!la_mul_ok(lay->total, sizeof(double), &a)) return LA_EOVERFLOW;
    return LA_OK;
}

/* The checks both precisions share, before anything is read but the problem: a checked
 * problem, non-causal, k in 1..M. */
static la_status linformer_check(const la_problem *p, const void *q, const void *k, const void *v,
                                 const void *out)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    if (p->causal) return LA_EINVAL;       /* the projection mixes every position */
    if (linformer.proj_rank > p->n_keys) return LA_EINVAL;
    return LA_OK;
}

/* The softmax problem on (Q, K', V'): the same batch, heads, queries and scale, k keys, no
 * mask (key lengths act in the projection), the budget left after `held` bytes. */
static la_problem inner_problem(const la_problem *p, size_t held)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    la_problem in;
    la_problem_init(&in, p->batch, p->heads, p->n_queries, linformer.proj_rank, p->d_k, p->d_v);
    in.scale = p->scale;
    in.workspace_limit = p->workspace_limit - held;
    return in;
}

/* Linformer attention (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   E = proj_e, F = proj_f: (k, M) row-major float64, or drawn from seed.
 * Every head's K' = E·K and V' = F·V first, into one (B,H,k,d) pair of buffers, one task
 * per (head, matrix) on the OpenMP threads; then the fused softmax kernel once over
 * (Q, K', V'), in parallel itself. */
static la_status linformer_attention(const la_problem *p, const REAL *q, const REAL *k,
                                     const REAL *v, REAL *out)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    la_status st = linformer_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t M = p->n_keys, r = linformer.proj_rank, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */

    /* the range rule: given projections finite, and the projected entries, at most
     * M·max|E|·max|K| (M·max|F|·max|V|), within T/8; inputs holding inf or NaN pass, as
     * the other kernels' scans let them (their outputs are not finite either) */
    double e_max = 0, f_max = 0;
    if (linformer.proj_e && (!la_finite_max_abs(linformer.proj_e, r * M, &e_max) ||
                             !la_finite_max_abs(linformer.proj_f, r * M, &f_max)))
        return LA_EINVAL;
    if (!linformer.proj_e) e_max = f_max = 9 / sqrt((double)r); /* a drawn |z| is below 8.6 */
    const double k_max = FN(la_max_abs)(k, heads * M * dk);
    const double v_max = FN(la_max_abs)(v, heads * M * dv);
    const double limit = (double)REAL_MAX / 8;
    if (e_max > limit || f_max > limit || (isfinite(k_max) && (double)M * e_max * k_max > limit) ||
        (isfinite(v_max) && (double)M * f_max * v_max > limit))
        return LA_ERANGE;

    /* scratch: a drawn E and F, the projection threads' blocks, then K' and V' */
    linformer_layout lay;
    if ((st = linformer_layout_for(p, &lay)) != LA_OK) return st;
    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    const size_t threads = projection_threads(p);
    if (la_gemm_reserve((int)threads) != LA_OK) return LA_ENOMEM;
    REAL *scratch = la_alloc_large(held ? held : 1);
    if (!scratch) return LA_ENOMEM;
    REAL *blocks = scratch + lay.proj, *kp = blocks + lay.blocks, *vp = kp + lay.kp;
    REAL *drawn = linformer.proj_e ? NULL : scratch; /* E, then F */
    if (drawn) {
        draw_projections(r, M, linformer.seed, REAL_IS_F32 ? NULL : (double *)drawn,
                         REAL_IS_F32 ? NULL : (double *)drawn + r * M,
                         REAL_IS_F32 ? (float *)drawn : NULL,
                         REAL_IS_F32 ? (float *)drawn + r * M : NULL);
    }

    /* per (head, E or F): K'_h = E[:, :L_b]·K_h[:L_b] (k × d_k), V'_h = F[:, :L_b]·V_h[:L_b]
     * (k × d_v), summed over blocks of PROJ_KEYS keys in order, each block of E or F first
     * copied (float32: rounded) into the thread's buffer: the columns past the key length
     * left out is the same as zeroing them (L_b = 0: zeros). Fixed blocks: the same bits on
     * any thread count. */
#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
    for (size_t task = 0; task < 2 * heads; task++) {
        const size_t bh = task / 2, L = la_keys_in_length(p, bh / p->heads);
        const bool values = task % 2;
        const size_t d = values ? dv : dk;
        const double *given = values ? linformer.proj_f : linformer.proj_e;
        const REAL *own = drawn ? drawn + (values ? r * M : 0) : NULL;
        const REAL *x = values ? v + bh * M * dv : k + bh * M * dk;
        REAL *y = values ? vp + bh * r * dv : kp + bh * r * dk;
        REAL *buf = blocks + (size_t)omp_get_thread_num() * r * PROJ_KEYS;
        if (L == 0) memset(y, 0, r * d * sizeof(REAL));
        for (size_t j0 = 0; j0 < L; j0 += PROJ_KEYS) {
            const size_t n = L - j0 < PROJ_KEYS ? L - j0 : PROJ_KEYS;
            for (size_t i = 0; i < r; i++) {
                REAL *row = buf + i * n;
                if (own)
                    memcpy(row, own + i * M + j0, n * sizeof(REAL));
                else
                    for (size_t j = 0; j < n; j++)
                        row[j] = (REAL)given[i * M + j0 + j];
            }
            GEMM_SMALL(r, d, n, 1, buf, (ptrdiff_t)n, 1, x + j0 * d, (ptrdiff_t)d, 1, j0 ? 1 : 0, y,
                       (ptrdiff_t)d, 1);
        }
    }

    /* y = softmax(Q K'ᵀ · scale) V': the fused kernel, with k keys and the budget left */
    const la_problem in = inner_problem(p, held);
    st = FN(la_softmax_attention)(&in, q, kp, vp, out);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- the public kernels */

#if REAL_IS_F32
la_status la_linformer_attention_f32(const la_problem *p, const float *q, const float *k,
                                     const float *v, float *out)
#else
la_status la_linformer_attention_f64(const la_problem *p, const double *q, const double *k,
                                     const double *v, double *out)
#endif
{
    return linformer_attention(p, q, k, v, out);
}

#if REAL_IS_F32
/* ---------------------------------------------------------------- its cost (la_cost_fn) */

/* One head of an entry with m visible keys: the projections E·K and F·V over the m visible
 * keys, 2·k·m·(d_k + d_v) (flops_kv); then softmax over the k projected keys, all seen:
 * Q·K'ᵀ 2·N·k·d_k, softmax 5·N·k, P·V' 2·N·k·d_v. */
static void linformer_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    const double r = (double)linformer.proj_rank, n = (double)p->n_queries;
    const double dk = (double)p->d_k, dv = (double)p->d_v;
    f->flops_kv = 2 * r * (double)m * (dk + dv);
    f->flops_qk = 2 * n * r * dk;
    f->flops_softmax = 5 * n * r;
    f->flops_av = 2 * n * r * dv;
}

la_status la_linformer_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    if (p->causal || linformer.proj_rank > p->n_keys) return LA_EINVAL;
    linformer_layout lay;
    const size_t elem = la_dtype_size(dtype);
    la_status st = linformer_layout_for(p, &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, linformer_head_flops, out);
    /* bytes_min beyond q, k, v, out: K' and V' out and back; E and F read once, float64 */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 * (double)linformer.proj_rank *
                         (double)(p->d_k + p->d_v) * (double)la_dtype_size(dtype) +
                     2 * (double)linformer.proj_rank * (double)p->n_keys * (double)sizeof(double);
    /* what the call holds, then the fused softmax kernel's scratch on (Q, K', V') */
    const la_problem in = inner_problem(p, 0);
    la_cost inner = {0};
    if ((st = la_softmax_cost(&in, dtype, &inner)) != LA_OK) return st;
    out->workspace_bytes = (double)lay.total * (double)elem + inner.workspace_bytes;
    return LA_OK;
}
#endif

/* ---------------------------------------------------------------- registry row */

#if REAL_IS_F32
static const la_kernel_fns linformer_fns = {
    .forward_f32 = la_linformer_attention_f32,
    .forward_f64 = la_linformer_attention_f64,
    .reference = la_ref_linformer_attention,
    .cost = la_linformer_cost,
};

const la_kernel_info la_row_linformer = {
    .kernel = LA_KERNEL_LINFORMER,
    .name = "linformer",
    .summary = "Linformer (Wang et al. 2020): K and V projected along the sequence to k "
               "rows (E·K, F·V), then softmax over the k projected keys",
    .series = {"linformer", NULL},
    .causal = LA_CAUSAL_REFUSED,
    .params = LA_PARAM_SCALE | LA_PARAM_PROJ,
    .block = LA_PARAMS_LINFORMER,
    .masks = 0,
    .caps = LA_CAP_ROTARY | LA_CAP_APPROXIMATES, /* no backward */
    .sweep = LA_SWEEP_PLAIN,
    .time_exponent = 1,
    .family = "low-rank",
    .fns = &linformer_fns,
};
#endif
