/* local_tmpl.h — restricted (local) softmax attention, written once for both precisions.
 * Not an ordinary header: local.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so every function below is static and
 * named FN(name), local_attention_f32 or local_attention_f64; local.c writes out the public
 * la_* functions.
 *
 * Shared by both instantiations and defined in local.c before the includes: Q_BLOCK,
 * K_BLOCK, window_of(), key_block_of(), per_thread_bytes() and scale_fits(). */

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)

#include "attention/mask_tmpl.h"

/* max_c x[c] over n >= 1 elements (any order is exact for max: vectorized). */
static REAL FN(local_row_max)(const REAL *x, size_t n)
{
    REAL m = x[0];
#pragma omp simd reduction(max : m)
    for (size_t c = 1; c < n; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

/* Local attention for the query rows i0 .. i0+rows-1 of head hd = b·H + h, an entry with
 * m keys in length:
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   s: (rows · bk) scratch, bk = key_block_of(); k_t: (d_k · bk) scratch, a key block
 *   transposed; row_max, row_sum: (rows) scratch.
 * The block's queries see the keys [key_lo, key_hi) together (the first row's window
 * starts first, the last row's ends last); they are walked in score blocks of bk keys.
 * The output rows double as the accumulator of Σ_j exp(s_ij − m_i) v_j. */
static void FN(local_block)(const la_problem *p, size_t hd, size_t m, const REAL *qh,
                            const REAL *kh, const REAL *vh, REAL *oh, size_t i0, size_t rows,
                            size_t bk, REAL *s, REAL *k_t, REAL *row_max, REAL *row_sum)
{
    const size_t dk = p->d_k, dv = p->d_v;
    const bool masked = la_has_masks(p); /* p->mask, p->key_mask: each pair tested */
    REAL *acc = oh + i0 * dv;
    size_t key_lo, key_hi, unused;
    window_of(p, m, i0, &key_lo, &unused);
    window_of(p, m, i0 + rows - 1, &unused, &key_hi);
    for (size_t r = 0; r < rows; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0;
    }
    memset(acc, 0, rows * dv * sizeof *acc);

    for (size_t j0 = key_lo; j0 < key_hi; j0 += bk) {
        const size_t cols = key_hi - j0 < bk ? key_hi - j0 : bk;
        /* k_t = k_blkᵀ (d_k × cols), so that the product below reads rows of unit stride
         * (GEMM_SMALL's register tiles in float32 on AVX-512, where BLIS would pack) */
        for (size_t j = 0; j < cols; j++)
            for (size_t c = 0; c < dk; c++)
                k_t[c * cols + j] = kh[(j0 + j) * dk + c];
        /* s = q_blk · k_blkᵀ   (rows × cols; times scale below, on the entries kept) */
        GEMM_SMALL(rows, cols, dk, 1, qh + i0 * dk, (ptrdiff_t)dk, 1, k_t, (ptrdiff_t)cols, 1, 0, s,
                   (ptrdiff_t)cols, 1);
        LA_COUNT(LA_COUNT_QK, 2 * (double)rows * (double)cols * (double)dk);

        /* online softmax, row by row, over the row's window [lo, hi) within this block
         * (columns [a, a + n)): new row max m', rescale what was accumulated by
         * exp(m − m'), s_ij <- exp(s_ij − m') added to the row sum. Entries outside the
         * window get weight 0 and never reach exp. */
        for (size_t r = 0; r < rows; r++) {
            REAL *srow = s + r * cols;
            size_t lo, hi;
            window_of(p, m, i0 + r, &lo, &hi);
            const size_t a = lo > j0 ? (lo - j0 < cols ? lo - j0 : cols) : 0;
            const size_t e = hi > j0 ? (hi - j0 < cols ? hi - j0 : cols) : 0;
            size_t n = e > a ? e - a : 0;
            REAL block_max = -INFINITY;
            if (n > 0) {
                const REAL scale = (REAL)p->scale;
                for (size_t c = a; c < a + n; c++)
                    srow[c] *= scale;
                /* general masks: hidden scores -inf; a block they hide whole adds nothing */
                block_max = masked ? FN(mask_scores)(p, hd, i0 + r, j0 + a, srow + a, n)
                                   : FN(local_row_max)(srow + a, n);
                if (masked && block_max == -INFINITY) n = 0;
            }
            if (n > 0) {
                if (block_max > row_max[r]) {
                    if (row_sum[r] > 0) { /* something accumulated: rescale it */
                        const REAL alpha = EXP(row_max[r] - block_max);
                        row_sum[r] *= alpha;
                        REAL *arow = acc + r * dv;
                        for (size_t c = 0; c < dv; c++)
                            arow[c] *= alpha;
                    }
                    row_max[r] = block_max;
                }
                row_sum[r] += masked ? FN(masked_exp_sum)(srow + a, n, row_max[r])
                                     : EXP_SHIFT_SUM(srow + a, n, row_max[r]);
            }
            LA_COUNT(LA_COUNT_HIDDEN, cols - n); /* computed, then masked (test_cost.c) */
            if (a > 0) memset(srow, 0, a * sizeof *srow);
            if (a + n < cols) memset(srow + a + n, 0, (cols - a - n) * sizeof *srow);
        }

        /* acc += p_blk · v_blk   (rows × d_v) */
        GEMM_SMALL(rows, dv, cols, 1, s, (ptrdiff_t)cols, 1, vh + j0 * dv, (ptrdiff_t)dv, 1, 1, acc,
                   (ptrdiff_t)dv, 1);
        LA_COUNT(LA_COUNT_AV, 2 * (double)rows * (double)cols * (double)dv);
    }

    /* out_i = acc_i / Σ_j exp(s_ij − m_i); a row that saw no key stays zero */
    for (size_t r = 0; r < rows; r++) {
        if (row_sum[r] > 0) {
            REAL *arow = acc + r * dv;
            const REAL sum = row_sum[r];
            for (size_t c = 0; c < dv; c++)
                arow[c] /= sum;
        }
    }
}

/* Local attention (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Tasks (b, h, query block) in order, one thread each, each thread with its own slice of
 * one scratch allocation (per_thread_bytes, held against p->workspace_limit). */
static la_status FN(local_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                     const REAL *v, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;
    if (!FN(la_range_ok)(LA_RANGE_SOFTMAX, p, q, k, v)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t bq = N < Q_BLOCK ? N : Q_BLOCK, bk = key_block_of(p, bq);
    const size_t q_blocks = (N + Q_BLOCK - 1) / Q_BLOCK;
    size_t n_tasks, scratch_bytes;
    if (!la_mul_ok(p->batch * p->heads, q_blocks, &n_tasks)) return LA_EOVERFLOW;
    const size_t per_thread = per_thread_bytes(p, sizeof(REAL));
    int threads = la_threads();
    if ((size_t)threads > n_tasks) threads = (int)n_tasks;
    if (!la_mul_ok(per_thread, (size_t)threads, &scratch_bytes) ||
        scratch_bytes > p->workspace_limit)
        return LA_EBUDGET;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, scratch_bytes);
    if (!scratch) return LA_ENOMEM;

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t t = 0; t < n_tasks; t++) {
        const size_t bh = t / q_blocks, b = bh / p->heads;
        const size_t i0 = (t % q_blocks) * Q_BLOCK;
        const size_t rows = N - i0 < Q_BLOCK ? N - i0 : Q_BLOCK;
        REAL *row_max = (REAL *)(scratch + (size_t)omp_get_thread_num() * per_thread);
        REAL *row_sum = row_max + bq, *s = row_sum + bq, *k_t = s + bq * bk;
        FN(local_block)
        (p, bh, la_keys_in_length(p, b), q + bh * N * dk, k + bh * M * dk, v + bh * M * dv,
         out + bh * N * dv, i0, rows, bk, s, k_t, row_max, row_sum);
    }
    free(scratch);
    return LA_OK;
}

#undef EXP_SHIFT_SUM
