/* linear.c — linear attention kernels (non-causal, chunked causal, recurrent) in float
 * and double: the code is written once in linear_tmpl.h and instantiated here twice
 * (core/real_f32.h explains how); the public functions are written out at the end. */
#include "attention/linear_internal.h"

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* Block sizes, fixed whatever the thread count (so the rounding is too). */
#define LA_LINEAR_KEY_BLOCK 128   /* non-causal: keys per φ(K)ᵀV product */
#define LA_LINEAR_QUERY_BLOCK 128 /* non-causal: queries per φ(Q)·S product and task */
#define LA_LINEAR_KEY_PIECE 512   /* non-causal: keys per phase-1 task (whole key blocks) */

/* a + b without overflow: false when it does not fit. */
static bool add_ok(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b) return false;
    *out = a + b;
    return true;
}

/* Scratch of one call, in elements: `shared` once, then `per_thread` for each of
 * `threads` threads (at most one thread per independent piece of work). */
typedef struct {
    size_t threads, shared, per_thread, total;
} linear_layout;

/* The one description of what each kernel allocates (the kernels carve their buffers
 * out of it, la_linear_workspace_bytes reports it):
 *   non-causal: S and z of every head, heads·d_k·(d_v + 1); per thread a φ block of
 *     max(key block, query block) rows, a partial z and a partial [S z] of one key
 *     piece, rows·d_k + d_k + d_k·(d_v + 1) (the partial is held even when every head
 *     fits in one piece, so the scratch does not depend on M);
 *   chunked (C = min(chunk, N)): the carried S and z of every head, heads·d_k·(d_v + 1);
 *     per thread φ(Q_c), A, φ(K_c) and φ(K_c)ᵀ, C(3·d_k + C), the snapshot S_c, z_c
 *     and the chunk's ΔS_c, Δz_c, 2·d_k·(d_v + 1);
 *   recurrent: per thread S, z, φ(q_t), φ(k_t): d_k·(d_v + 3).
 * Tasks: non-causal max(heads·key pieces, heads·query blocks), chunked heads·chunks,
 * recurrent heads. */
static la_status linear_layout_for(const la_problem *p, la_kernel kernel, size_t threads_max,
                                   linear_layout *lay)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t heads, tasks, state, a, b, c;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    lay->shared = 0;
    tasks = heads;
    /* one head's [S z]: d_k·(d_v + 1) */
    if (!add_ok(dv, 1, &a) || !la_mul_ok(dk, a, &state)) return LA_EOVERFLOW;
    if (kernel == LA_KERNEL_LINEAR && !p->causal) {
        const size_t kb = M < LA_LINEAR_KEY_BLOCK ? M : LA_LINEAR_KEY_BLOCK;
        const size_t qb = N < LA_LINEAR_QUERY_BLOCK ? N : LA_LINEAR_QUERY_BLOCK;
        const size_t rows = kb > qb ? kb : qb;
        const size_t pieces = (M + LA_LINEAR_KEY_PIECE - 1) / LA_LINEAR_KEY_PIECE;
        size_t key_tasks;
        if (!la_mul_ok(heads, (N + qb - 1) / qb, &tasks) || !la_mul_ok(heads, pieces, &key_tasks) ||
            !la_mul_ok(heads, state, &lay->shared) || !add_ok(rows, 1, &b) ||
            !la_mul_ok(b, dk, &b) || !add_ok(b, state, &lay->per_thread))
            return LA_EOVERFLOW;
        if (key_tasks > tasks) tasks = key_tasks;
    } else if (kernel == LA_KERNEL_LINEAR) {
        /* per thread: φ(Q_c), A, φ(K_c) and φKᵀ, C(3·d_k + C); S_c z_c and ΔS_c Δz_c,
         * 2·d_k(d_v + 1) */
        const size_t C = p->chunk < N ? p->chunk : N;
        size_t rows, total;
        if (!la_mul_ok(dk, 3, &rows) || !add_ok(rows, C, &rows) || !la_mul_ok(C, rows, &total) ||
            !la_mul_ok(2, state, &c) || !add_ok(total, c, &lay->per_thread) ||
            !la_mul_ok(heads, state, &lay->shared) || !la_mul_ok(heads, (N + C - 1) / C, &tasks))
            return LA_EOVERFLOW;
    } else {
        if (!add_ok(dv, 3, &a) || !la_mul_ok(dk, a, &lay->per_thread)) return LA_EOVERFLOW;
    }
    if (threads_max < 1) threads_max = 1;
    lay->threads = threads_max < tasks ? threads_max : tasks;
    if (!la_mul_ok(lay->threads, lay->per_thread, &a) || !add_ok(a, lay->shared, &lay->total))
        return LA_EOVERFLOW;
    return LA_OK;
}

la_status la_linear_workspace_bytes(la_kernel kernel, const la_problem *p, size_t element_size,
                                    size_t *bytes)
{
    if (!bytes || (kernel != LA_KERNEL_LINEAR && kernel != LA_KERNEL_LINEAR_RECURRENT))
        return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (kernel == LA_KERNEL_LINEAR_RECURRENT && !p->causal) return LA_EINVAL;
    linear_layout lay;
    st = linear_layout_for(p, kernel, (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    if (!la_mul_ok(lay.total, element_size, bytes)) return LA_EOVERFLOW;
    return LA_OK;
}

/* Asks for `bytes` bytes from x into the cache, one request per 64-byte line: the
 * linear kernels stream their inputs once, and a block's loads otherwise wait for
 * memory between bursts of arithmetic. */
static void prefetch_rows(const void *x, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch((const char *)x + off, 0, 3);
}

#include "core/real_f32.h"
#include "attention/linear_tmpl.h"
#include "core/real_f64.h"
#include "attention/linear_tmpl.h"
#include "core/real_undef.h"

/* ---------------------------------------------------------------- the public kernels */

la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
{
    return linear_attention_f32(p, q, k, v, out);
}

la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    return linear_attention_f64(p, q, k, v, out);
}

la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q,
                                            const float *k, const float *v, float *out)
{
    return linear_attention_recurrent_f32(p, q, k, v, out);
}

la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q,
                                            const double *k, const double *v, double *out)
{
    return linear_attention_recurrent_f64(p, q, k, v, out);
}
