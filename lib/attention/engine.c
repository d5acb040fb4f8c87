/* engine.c — the blocked, threaded online-softmax loop of the softmax family, written once:
 * the checks, the budget, the scratch, the threads and the tasks (la_engine_run), and the
 * walk of one task over its key blocks (la_engine_run_task). What a block computes is in its
 * tiles (engine.h); nothing here touches an element, so the file serves both precisions. */
#include "attention/engine.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

la_status la_engine_check(const la_problem *p, const void *q, const void *k, const void *v,
                          const void *out, size_t elem)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    /* the scale must be representable in the element type (finiteness: la_problem_check) */
    if (elem == sizeof(float) && fabs(p->scale) > FLT_MAX) return LA_EINVAL;
    return LA_OK;
}

void la_engine_prefix_keys(const la_engine_task *t, size_t i, size_t *lo, size_t *hi)
{
    *lo = 0;
    *hi = la_visible_keys_of(t->p, t->m, i);
}

size_t la_engine_portable_bytes(size_t bq, size_t bk, size_t slot, size_t elem, size_t extra)
{
    size_t s, bytes;
    if (!la_mul_ok(bq, bk, &s) || s > SIZE_MAX / 2 || !la_mul_ok(s + bq, elem, &bytes))
        return SIZE_MAX;
    /* bq <= LA_ENGINE_MAX_ROWS, slot <= 8: the slots add little */
    if (extra > SIZE_MAX / 2 || bytes > SIZE_MAX / 2 - extra - slot * bq - 63) return SIZE_MAX;
    return la_round_up_64(slot * bq + bytes + extra);
}

void la_engine_carve(la_engine_task *t)
{
    la_engine_rows *rows = la_engine_rows_of(t);
    if (rows->s) return;
    const size_t bq = t->e->bq, elem = t->e->elem, slot = t->e->slot ? t->e->slot : elem;
    rows->stat_b = t->scratch;
    rows->stat_a = t->scratch + slot * bq;
    rows->s = t->scratch + (slot + elem) * bq;
    rows->extra = t->scratch + (slot + elem) * bq + elem * bq * t->e->bk;
}

/* Whether the general masks (p->mask, p->key_mask) hide from every row of the task each
 * key of the block [j0, j0 + cols) within the row's [lo, hi): the block then adds nothing
 * (every weight 0), and the walk skips it. A byte scan, stopped at the first row that sees
 * a key: far cheaper than the block's products. */
static bool block_hidden(const la_engine_task *t, size_t j0, size_t cols)
{
    const la_problem *p = t->p;
    const size_t M = p->n_keys;
    const uint8_t *km = p->key_mask ? p->key_mask + t->b * M : NULL;
    const uint8_t *mask =
        p->mask ? p->mask + (p->mask_per_head ? t->hd : 0) * p->n_queries * M : NULL;
    for (size_t r = 0; r < t->rows; r++) {
        const size_t a = t->lo[r] > j0 ? t->lo[r] : j0;
        const size_t e = t->hi[r] < j0 + cols ? t->hi[r] : j0 + cols;
        const uint8_t *mr = mask ? mask + (t->i0 + r) * M : NULL;
        unsigned hidden = 1;
        if (km && mr)
            for (size_t j = a; j < e; j++)
                hidden &= (km[j] | mr[j]) != 0;
        else if (km || mr)
            for (size_t j = a; j < e; j++)
                hidden &= (km ? km : mr)[j] != 0;
        else
            hidden = a >= e;
        if (!hidden) return false;
    }
    return true;
}

/* The tiles of one walk over the key blocks [key_lo, key_hi); under general masks, the
 * blocks they hide whole are skipped. */
static void walk(const la_engine_tiles *tiles, la_engine_task *t)
{
    const size_t kb = t->e->k_block;
    const bool masked = la_has_masks(t->p);
    if (tiles->begin) tiles->begin(t);
    for (size_t j0 = t->key_lo; j0 < t->key_hi; j0 += kb) {
        const size_t cols = t->key_hi - j0 < kb ? t->key_hi - j0 : kb;
        if (masked && block_hidden(t, j0, cols)) continue;
        LA_COUNT(LA_COUNT_ENGINE_PAIRS, t->rows * cols);
        /* s = q_blk · k_blkᵀ · scale */
        if (tiles->scores) tiles->scores(t, j0, cols);
        /* online softmax: new row max, rescale what was accumulated, p = exp(s − max) */
        if (tiles->softmax) tiles->softmax(t, j0, cols);
        /* acc += p · v_blk */
        if (tiles->values) tiles->values(t, j0, cols);
    }
    if (tiles->finish) tiles->finish(t);
}

void la_engine_run_task(la_engine_task *t)
{
    const la_engine *e = t->e;
    t->key_lo = SIZE_MAX;
    t->key_hi = 0;
    for (size_t r = 0; r < t->rows; r++) {
        e->keys(t, t->i0 + r, &t->lo[r], &t->hi[r]);
        if (t->lo[r] < t->key_lo) t->key_lo = t->lo[r];
        if (t->hi[r] > t->key_hi) t->key_hi = t->hi[r];
    }
    if (t->key_lo > t->key_hi) t->key_lo = t->key_hi;
    t->kv_hi = t->key_hi;
    if (t->rows > e->narrow_rows) {
        walk(&e->wide, t);
        return;
    }
    /* a few queries (decoding): one at a time, each its own walk; the first row takes the
     * maxima of k and v when asked (its finish scans the keys the task sees that it did not
     * read) */
    la_engine_task row;
    for (size_t r = 0; r < t->rows; r++) {
        row = *t;
        memset(row.state, 0, sizeof row.state);
        row.i0 = t->i0 + r;
        row.rows = 1;
        row.lo[0] = row.key_lo = t->lo[r];
        row.hi[0] = row.key_hi = t->hi[r];
        row.lse = t->lse ? (unsigned char *)t->lse + r * e->elem : NULL;
        row.kv_bits = r == 0 ? t->kv_bits : NULL;
        walk(&e->narrow, &row);
    }
}

/* Task t of (B, H, query blocks), heads in order, and within a head the query blocks from
 * the last to the first: under causal masks the last blocks are the longest, and handing
 * them out first balances the dynamic schedule. */
static void task_of(const la_problem *p, size_t t, size_t q_blocks, size_t *b, size_t *hd,
                    size_t *q_block)
{
    *hd = t / q_blocks;
    *b = *hd / p->heads;
    *q_block = q_blocks - 1 - t % q_blocks;
}

/* The magnitude whose float32 bits (sign cleared) are `bits`, +inf when it is not finite
 * (as la_max_abs_f32 reports it). */
static double magnitude_of_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return isfinite(f) ? (double)f : INFINITY;
}

/* Element offset of head hd's first row in a (B, H, rows, d) array laid out as *s (all zero:
 * contiguous). */
static size_t head_offset(const la_problem *p, const la_strides *s, size_t hd, size_t rows,
                          size_t d)
{
    if (la_strides_contiguous(s)) return hd * rows * d;
    return hd / p->heads * s->batch + hd % p->heads * s->head;
}

/* The elements between a head's rows in that array: d when contiguous, and when it has one
 * row (whose row stride la_problem_check lets be anything: no other row is read). */
static size_t row_stride(const la_strides *s, size_t rows, size_t d)
{
    return la_strides_contiguous(s) || rows == 1 ? d : s->row;
}

/* Copies the staged output (B, H, N, d_v) into out laid out as p->stride_out. */
static void unstage(const la_problem *p, const unsigned char *staged, unsigned char *out,
                    size_t elem)
{
    const size_t N = p->n_queries, dv = p->d_v, heads = p->batch * p->heads;
    if (la_strides_contiguous(&p->stride_out)) {
        memcpy(out, staged, heads * N * dv * elem);
        return;
    }
    const size_t ld = row_stride(&p->stride_out, N, dv);
    for (size_t hd = 0; hd < heads; hd++) {
        unsigned char *oh = out + head_offset(p, &p->stride_out, hd, N, dv) * elem;
        for (size_t i = 0; i < N; i++)
            memcpy(oh + i * ld * elem, staged + (hd * N + i) * dv * elem, dv * elem);
    }
}

la_status la_engine_run(const la_engine *e, const la_problem *p, const void *q, const void *k,
                        const void *v, void *out, void *lse, size_t held)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, elem = e->elem;
    const size_t q_blocks = (N + e->q_block - 1) / e->q_block;
    size_t n_tasks, scratch_bytes;
    if (!la_mul_ok(p->batch * p->heads, q_blocks, &n_tasks)) return LA_EOVERFLOW;
    int threads = la_threads();
    if ((size_t)threads > n_tasks) threads = (int)n_tasks;
    const size_t staging = la_round_up_64(e->staging_bytes);
    if (held > p->workspace_limit || e->scratch_bytes == SIZE_MAX ||
        !la_mul_ok(e->scratch_bytes, (size_t)threads, &scratch_bytes) ||
        scratch_bytes > p->workspace_limit - held ||
        staging > p->workspace_limit - held - scratch_bytes)
        return LA_EBUDGET;
    if (!e->own_products && la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, scratch_bytes + staging);
    if (!scratch) return LA_ENOMEM;
    /* staged rows (float32 decoding): the output (B, H, N, d_v), then lse (B, H, N) */
    void *const out_final = out, *const lse_final = lse;
    if (staging) {
        out = scratch + scratch_bytes;
        if (lse) lse = (float *)out + p->batch * p->heads * N * dv;
    }
    uint32_t k_bits = 0, v_bits = 0;

#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(max : k_bits, v_bits)
    for (size_t task = 0; task < n_tasks; task++) {
        la_engine_task t;
        memset(t.state, 0, sizeof t.state);
        size_t q_block;
        t.p = p;
        t.e = e;
        task_of(p, task, q_blocks, &t.b, &t.hd, &q_block);
        t.m = la_keys_in_length(p, t.b);
        t.i0 = q_block * e->q_block;
        t.rows = N - t.i0 < e->q_block ? N - t.i0 : e->q_block;
        t.q = (const unsigned char *)q + head_offset(p, &p->stride_q, t.hd, N, dk) * elem;
        t.k = (const unsigned char *)k + head_offset(p, &p->stride_k, t.hd, M, dk) * elem;
        t.v = (const unsigned char *)v + head_offset(p, &p->stride_v, t.hd, M, dv) * elem;
        t.out = (unsigned char *)out +
                (staging ? t.hd * N * dv : head_offset(p, &p->stride_out, t.hd, N, dv)) * elem;
        t.ldq = row_stride(&p->stride_q, N, dk);
        t.ldk = row_stride(&p->stride_k, M, dk);
        t.ldv = row_stride(&p->stride_v, M, dv);
        t.ldo = staging ? dv : row_stride(&p->stride_out, N, dv);
        t.lse = lse ? (unsigned char *)lse + (t.hd * N + t.i0) * elem : NULL;
        t.scratch = scratch + (size_t)omp_get_thread_num() * e->scratch_bytes;
        uint32_t kv_bits[2] = {0, 0};
        t.kv_bits = staging ? kv_bits : NULL;
        la_engine_run_task(&t);
        if (kv_bits[0] > k_bits) k_bits = kv_bits[0];
        if (kv_bits[1] > v_bits) v_bits = kv_bits[1];
    }
    la_status st = LA_OK;
    if (staging) {
        /* the range check on the maxima the tiles took; then the staged rows */
        const size_t rows_all = p->batch * p->heads * N;
        const double q_max = la_max_abs_layout_f32(p, &p->stride_q, q, N, dk);
        if (la_range_fits_f32(LA_RANGE_SOFTMAX, p, q_max, magnitude_of_bits(k_bits),
                              magnitude_of_bits(v_bits))) {
            unstage(p, out, out_final, sizeof(float));
            if (lse) memcpy(lse_final, lse, rows_all * sizeof(float));
        } else {
            st = LA_ERANGE;
        }
    }
    free(scratch);
    return st;
}

la_engine la_engine_fused_wide(const la_problem *p, size_t elem, la_engine_keys_fn keys)
{
    const bool f32 = elem == sizeof(float);
    const size_t qb = f32 ? la_fused_simd_q_block() : LA_FUSED_SIMD_F64_Q_BLOCK;
    la_engine e = {.wide = !f32                                ? la_engine_avx512_wide_f64
                           : qb == LA_FUSED_SIMD_Q_BLOCK_LARGE ? la_engine_avx512_wide64_f32
                                                               : la_engine_avx512_wide_f32,
                   .q_block = qb,
                   .k_block = f32 ? LA_FUSED_SIMD_K_BLOCK : LA_FUSED_SIMD_F64_K_BLOCK,
                   .elem = elem,
                   .own_products = true,
                   .keys = keys};
    e.scratch_bytes = la_round_up_64(f32 ? la_fused_simd_scratch_bytes(p, qb)
                                         : la_fused_simd_scratch_bytes_f64(p));
    return e;
}

double la_engine_fused_wide_workspace(const la_problem *p, la_dtype dtype)
{
    const la_engine e = la_engine_fused_wide(p, la_dtype_size(dtype), NULL);
    const double tasks =
        (double)p->batch * (double)p->heads * ceil((double)p->n_queries / (double)e.q_block);
    const double threads = (double)la_threads();
    return (threads < tasks ? threads : tasks) * (double)e.scratch_bytes;
}
