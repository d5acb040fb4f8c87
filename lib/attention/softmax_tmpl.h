/* softmax_tmpl.h — the softmax and hard attention kernels, written once for both
 * precisions. Not an ordinary header: softmax.c includes it after core/real_f32.h and
 * again after core/real_f64.h (the scheme is in real_f32.h), so every function below is
 * static and named FN(name), softmax_attention_f32 or softmax_attention_f64; softmax.c
 * writes out the public la_* functions. The float32 and float64 kernels are the same
 * code, differing only in the element type, the BLIS routine and the exp; the fused
 * kernel hands its tasks to softmax_avx512.c (float32) or softmax_avx512_f64.c (float64)
 * where the CPU has AVX-512.
 *
 * Shared by both instantiations and defined in softmax.c before the includes: the block
 * sizes (Q_BLOCK queries × K_BLOCK keys), head_offset(), task_of(), check_pointers(),
 * scale_fits(), round_up_64() and the AVX-512 kernels' FN(fused_simd_*). */

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)

#include "attention/mask_tmpl.h"

/* Scores of one block: s (rows × cols, row-major, leading dimension cols) =
 * q[i0 .. i0+rows) · k[j0 .. j0+cols)ᵀ · scale.
 *   qh: (N, d_k) and kh: (M, d_k) row-major, one head. Kᵀ is k read with swapped
 *   strides (row stride 1, column stride d_k): no copy. */
static void FN(block_scores)(const la_problem *p, const REAL *qh, const REAL *kh, size_t i0,
                             size_t rows, size_t j0, size_t cols, REAL *s)
{
    const size_t dk = p->d_k;
    GEMM(rows, cols, dk, (REAL)p->scale, qh + i0 * dk, (ptrdiff_t)dk, 1, kh + j0 * dk, 1,
         (ptrdiff_t)dk, 0, s, (ptrdiff_t)cols, 1);
}

/* max_c x[c] over n >= 1 elements (vectorized: `omp simd` allows the max reduction
 * in any order, which is exact for max). */
static REAL FN(row_max)(const REAL *x, size_t n)
{
    REAL m = x[0];
#pragma omp simd reduction(max : m)
    for (size_t c = 1; c < n; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

/* Fused softmax attention for the query rows i0 .. i0+rows-1 of one head (b, h):
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   s: (Q_BLOCK · K_BLOCK) scratch, row_max and row_sum: (Q_BLOCK) scratch;
 *   lse: NULL, or (rows): the rows' log Σ_j exp(s_ij) (-inf for a row that sees no key).
 * The output rows double as the accumulator of Σ_j exp(s_ij - m_i) v_j. */
static void FN(fused_block)(const la_problem *p, size_t hd, const REAL *qh, const REAL *kh,
                            const REAL *vh, REAL *oh, size_t i0, size_t rows, REAL *s,
                            REAL *row_max, REAL *row_sum, REAL *lse)
{
    const size_t dv = p->d_v, b = hd / p->heads;
    const bool masked = la_has_masks(p);
    REAL *acc = oh + i0 * dv;
    /* The last row sees the most keys: blocks at or past its frontier are skipped. */
    const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
    for (size_t r = 0; r < rows; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0;
    }
    memset(acc, 0, rows * dv * sizeof *acc);

    for (size_t j0 = 0; j0 < key_end; j0 += K_BLOCK) {
        const size_t cols = key_end - j0 < K_BLOCK ? key_end - j0 : K_BLOCK;
        /* s = q_blk · k_blkᵀ · scale   (rows × cols scores) */
        FN(block_scores)(p, qh, kh, i0, rows, j0, cols, s);

        /* online softmax, row by row: new row max m', rescale what was accumulated by
         * exp(m - m'), then s_ij <- exp(s_ij - m') and add them to the row sum. Hidden
         * keys get weight 0 and never reach exp, so a fully hidden row never computes
         * exp(-inf - -inf). */
        for (size_t r = 0; r < rows; r++) {
            REAL *srow = s + r * cols;
            const size_t visible = la_visible_keys(p, b, i0 + r);
            size_t n = visible <= j0 ? 0 : (visible - j0 < cols ? visible - j0 : cols);
            /* general masks: hidden scores -inf, and a block they hide whole adds nothing */
            const REAL block_max = n == 0   ? -INFINITY
                                   : masked ? FN(mask_scores)(p, hd, i0 + r, j0, srow, n)
                                            : FN(row_max)(srow, n);
            if (masked && block_max == -INFINITY) n = 0;
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
                row_sum[r] += masked ? FN(masked_exp_sum)(srow, n, row_max[r])
                                     : EXP_SHIFT_SUM(srow, n, row_max[r]);
            }
            if (n < cols) memset(srow + n, 0, (cols - n) * sizeof *srow);
        }

        /* acc += p_blk · v_blk   (rows × d_v) */
        GEMM(rows, dv, cols, 1, s, (ptrdiff_t)cols, 1, vh + j0 * dv, (ptrdiff_t)dv, 1, 1, acc,
             (ptrdiff_t)dv, 1);
    }

    /* out_i = acc_i / Σ_j exp(s_ij - m_i); a row that saw no key stays zero */
    for (size_t r = 0; r < rows; r++) {
        if (row_sum[r] > 0) {
            REAL *arow = acc + r * dv;
            const REAL sum = row_sum[r];
            for (size_t c = 0; c < dv; c++)
                arow[c] /= sum;
        }
    }
    /* lse_i = m_i + log Σ_j exp(s_ij - m_i), for the backward (la_softmax_attention_lse_*) */
    if (lse)
        for (size_t r = 0; r < rows; r++)
            lse[r] = row_sum[r] > 0 ? row_max[r] + FN(log_of)(row_sum[r]) : -INFINITY;
}

/* The argmax of hard attention for the query rows i0 .. i0+rows-1 of one head of batch
 * entry b: best_key[r] = argmax_j s_(i0+r)j over visible j, ties to the lowest j, SIZE_MAX
 * when no key is visible. The forward (hard_block) and the backward (softmax_backward.c,
 * which must pick the same keys, bit for bit) share it.
 *   qh: (N, d_k), kh: (M, d_k) row-major; s: (Q_BLOCK · K_BLOCK) scratch,
 *   best_score: (Q_BLOCK) scratch, best_key: (rows). */
void FN(la_hard_argmax)(const la_problem *p, size_t hd, const REAL *qh, const REAL *kh, size_t i0,
                        size_t rows, REAL *s, REAL *best_score, size_t *best_key)
{
    const size_t b = hd / p->heads;
    const bool masked = la_has_masks(p);
    const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
    for (size_t r = 0; r < rows; r++) {
        best_score[r] = -INFINITY;
        best_key[r] = SIZE_MAX; /* no key seen */
    }
    for (size_t j0 = 0; j0 < key_end; j0 += K_BLOCK) {
        const size_t cols = key_end - j0 < K_BLOCK ? key_end - j0 : K_BLOCK;
        /* s = q_blk · k_blkᵀ · scale */
        FN(block_scores)(p, qh, kh, i0, rows, j0, cols, s);
        /* running argmax over visible keys, ties to the lowest j: the block's max
         * (vectorized), then its first occurrence; an earlier block keeps a tie (strict >) */
        for (size_t r = 0; r < rows; r++) {
            REAL *srow = s + r * cols;
            const size_t visible = la_visible_keys(p, b, i0 + r);
            const size_t n = visible <= j0 ? 0 : (visible - j0 < cols ? visible - j0 : cols);
            if (n == 0) continue;
            /* general masks: hidden scores -inf (never equal to a kept maximum) */
            const REAL block_max =
                masked ? FN(mask_scores)(p, hd, i0 + r, j0, srow, n) : FN(row_max)(srow, n);
            if (masked && block_max == -INFINITY) continue; /* every key here hidden */
            if (best_key[r] == SIZE_MAX || block_max > best_score[r]) {
                size_t c = 0; /* (c + 1 < n: stays in the row even if a score is NaN) */
                while (c + 1 < n && !(srow[c] == block_max))
                    c++;
                best_score[r] = block_max;
                best_key[r] = j0 + c;
            }
        }
    }
}

/* Hard attention for the query rows i0 .. i0+rows-1 of one head: out row i = v row
 * argmax_j s_ij over visible j, ties to the lowest j; zeros when no key is visible.
 *   s: (Q_BLOCK · K_BLOCK) scratch, best_score: (Q_BLOCK), best_key: (Q_BLOCK). */
static void FN(hard_block)(const la_problem *p, size_t hd, const REAL *qh, const REAL *kh,
                           const REAL *vh, REAL *oh, size_t i0, size_t rows, REAL *s,
                           REAL *best_score, size_t *best_key)
{
    const size_t dv = p->d_v;
    FN(la_hard_argmax)(p, hd, qh, kh, i0, rows, s, best_score, best_key);
    /* out_i = v_{argmax} */
    for (size_t r = 0; r < rows; r++) {
        REAL *orow = oh + (i0 + r) * dv;
        if (best_key[r] == SIZE_MAX)
            memset(orow, 0, dv * sizeof *orow);
        else
            memcpy(orow, vh + best_key[r] * dv, dv * sizeof *orow);
    }
}

/* Which of the two blocked kernels a task runs. */
typedef enum { FN(RUN_FUSED), FN(RUN_HARD) } FN(block_kind);

/* Runs fused softmax or hard attention over every (b, h, query block) task, one
 * thread per task, each thread with its own slice of one scratch allocation. lse: NULL,
 * or (B,H,N) for the fused kernel's log-sum-exps. */
static la_status FN(run_blocked)(FN(block_kind) kind, const la_problem *p, const REAL *q,
                                 const REAL *k, const REAL *v, REAL *out, REAL *lse)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!check_pointers(q, k, v, out)) return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* fused on AVX-512: softmax_avx512.c's kernel (float32) or softmax_avx512_f64.c's
     * (float64), with its own task size */
    const bool simd = kind == FN(RUN_FUSED) && la_fused_simd_usable(p);
    /* Float32 decoding (at most LA_FUSED_SIMD_NARROW_ROWS queries): the kernel reads each
     * head's K and V once, so a range scan before it would read them a second time, half
     * the bytes of the call. The kernel takes max|k| and max|v| on its own loads instead
     * and writes its rows to staging; out (and lse) get them once the check has passed. */
    const size_t staging_bytes =
        REAL_IS_F32 && simd ? la_fused_simd_staging_bytes(p, lse != NULL) : 0;
    if (!staging_bytes &&
        !FN(la_range_ok)(kind == FN(RUN_FUSED) ? LA_RANGE_SOFTMAX : LA_RANGE_HARD, p, q, k, v))
        return LA_ERANGE;
    const size_t q_block = simd ? FN(fused_simd_q_block)() : Q_BLOCK;
    const size_t bq = N < Q_BLOCK ? N : Q_BLOCK, bk = M < K_BLOCK ? M : K_BLOCK;
    const size_t q_blocks = (N + q_block - 1) / q_block;
    size_t n_tasks;
    if (!la_mul_ok(p->batch * p->heads, q_blocks, &n_tasks)) return LA_EOVERFLOW;

    /* per thread: (bq) row sums or best keys (size_t, first for alignment), (bq) row
     * maxima or best scores, then s (bq × bk); each thread's slice starts on a cache line.
     * The AVX-512 kernel's layout is its own. lib/attention/cost.c's workspace model mirrors both.
     */
    const size_t off_a = bq * sizeof(size_t);
    const size_t off_s = off_a + bq * sizeof(REAL);
    const size_t per_thread =
        round_up_64(simd ? FN(fused_simd_scratch_bytes)(p) : off_s + bq * bk * sizeof(REAL));
    int threads = la_threads();
    if ((size_t)threads > n_tasks) threads = (int)n_tasks;
    size_t scratch_bytes;
    if (!la_mul_ok(per_thread, (size_t)threads, &scratch_bytes) ||
        scratch_bytes > p->workspace_limit ||
        round_up_64(staging_bytes) > p->workspace_limit - scratch_bytes)
        return LA_EBUDGET;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, scratch_bytes + round_up_64(staging_bytes));
    if (!scratch) return LA_ENOMEM;
    /* staged rows: the output (B,H,N,d_v), then lse (B,H,N) */
    REAL *const out_final = out, *const lse_final = lse;
    if (staging_bytes) {
        out = (REAL *)(scratch + scratch_bytes);
        if (lse) lse = out + p->batch * p->heads * N * dv;
    }
    uint32_t k_bits = 0, v_bits = 0; /* max|k|, max|v| as bits, when staging */

#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(max : k_bits, v_bits)
    for (size_t t = 0; t < n_tasks; t++) {
        const task tk = task_of(p, t, q_blocks);
        unsigned char *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
        unsigned char *row_b = mine; /* bq REALs or size_ts */
        REAL *row_a = (REAL *)(mine + off_a);
        REAL *s = (REAL *)(mine + off_s);
        const REAL *qh = q + head_offset(p, tk.b, tk.h, N, dk);
        const REAL *kh = k + head_offset(p, tk.b, tk.h, M, dk);
        const REAL *vh = v + head_offset(p, tk.b, tk.h, M, dv);
        REAL *oh = out + head_offset(p, tk.b, tk.h, N, dv);
        const size_t i0 = tk.q_block * q_block;
        const size_t rows = N - i0 < q_block ? N - i0 : q_block;
        REAL *lse_rows = lse ? lse + (tk.b * p->heads + tk.h) * N + i0 : NULL;
        uint32_t kv_bits[2] = {0, 0};
        if (simd) {
            FN(fused_simd_block)
            (p, tk.b, qh, kh, vh, oh, i0, rows, mine, lse_rows, staging_bytes ? kv_bits : NULL);
            if (kv_bits[0] > k_bits) k_bits = kv_bits[0];
            if (kv_bits[1] > v_bits) v_bits = kv_bits[1];
        } else if (kind == FN(RUN_FUSED)) {
            FN(fused_block)
            (p, tk.b * p->heads + tk.h, qh, kh, vh, oh, i0, rows, s, row_a, (REAL *)row_b,
             lse_rows);
        } else {
            FN(hard_block)
            (p, tk.b * p->heads + tk.h, qh, kh, vh, oh, i0, rows, s, row_a, (size_t *)row_b);
        }
    }
    if (staging_bytes) {
        /* the range check on the maxima the kernel took; then the staged rows */
        const size_t rows_all = p->batch * p->heads * N;
        const bool fits = la_range_fits_f32(LA_RANGE_SOFTMAX, p, FN(la_max_abs)(q, rows_all * dk),
                                            magnitude_of_bits(k_bits), magnitude_of_bits(v_bits));
        if (fits) {
            memcpy(out_final, out, rows_all * dv * sizeof *out);
            if (lse) memcpy(lse_final, lse, rows_all * sizeof *lse);
        }
        free(scratch);
        return fits ? LA_OK : LA_ERANGE;
    }
    free(scratch);
    return LA_OK;
}

/* Fused softmax attention (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major. */
static la_status FN(softmax_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                       const REAL *v, REAL *out)
{
    return FN(run_blocked)(FN(RUN_FUSED), p, q, k, v, out, NULL);
}

/* The same, also writing lse: (B,H,N), log Σ_j exp(s_ij) per query (-inf: no key seen). */
static la_status FN(softmax_attention_lse)(const la_problem *p, const REAL *q, const REAL *k,
                                           const REAL *v, REAL *out, REAL *lse)
{
    if (!lse) return LA_EINVAL;
    return FN(run_blocked)(FN(RUN_FUSED), p, q, k, v, out, lse);
}

/* Hard attention (contract in linattn.h), same shapes. */
static la_status FN(hard_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                    const REAL *v, REAL *out)
{
    return FN(run_blocked)(FN(RUN_HARD), p, q, k, v, out, NULL);
}

/* Materializing softmax attention, one head at a time (q, k, v, out shaped as above):
 *   scores (N × M, one matrix for the whole call) = q kᵀ · scale,
 *   P = row softmax of scores over visible keys (hidden ones 0),
 *   out (N × d_v) = P v.
 * The rows of the one score matrix are split into blocks of Q_BLOCK rows and the
 * blocks spread over the threads, so the call holds exactly N·M elements. */
static la_status FN(softmax_attention_materialized)(const la_problem *p, const REAL *q,
                                                    const REAL *k, const REAL *v, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!check_pointers(q, k, v, out)) return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;
    if (!FN(la_range_ok)(LA_RANGE_SOFTMAX, p, q, k, v)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t score_bytes;
    if (!la_mul_ok(N, M, &score_bytes) || !la_mul_ok(score_bytes, sizeof(REAL), &score_bytes) ||
        score_bytes > p->workspace_limit)
        return LA_EBUDGET;
    const size_t q_blocks = (N + Q_BLOCK - 1) / Q_BLOCK;
    int threads = la_threads();
    if ((size_t)threads > q_blocks) threads = (int)q_blocks;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scores = la_scores_alloc(score_bytes);
    if (!scores) return LA_ENOMEM;

#pragma omp parallel num_threads(threads)
    for (size_t bh = 0; bh < p->batch * p->heads; bh++) {
        const size_t b = bh / p->heads, h = bh % p->heads;
        const REAL *qh = q + head_offset(p, b, h, N, dk), *kh = k + head_offset(p, b, h, M, dk);
        const REAL *vh = v + head_offset(p, b, h, M, dv);
        REAL *oh = out + head_offset(p, b, h, N, dv);
#pragma omp for schedule(dynamic)
        for (size_t t = 0; t < q_blocks; t++) {
            const size_t i0 = (q_blocks - 1 - t) * Q_BLOCK; /* longest rows first */
            const size_t rows = N - i0 < Q_BLOCK ? N - i0 : Q_BLOCK;
            const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
            REAL *s = scores + i0 * M; /* rows × key_end, leading dimension M */
            if (key_end == 0) {        /* no key visible to any row of the block */
                memset(oh + i0 * dv, 0, rows * dv * sizeof *oh);
                continue;
            }
            /* scores = q_blk · kᵀ · scale */
            GEMM(rows, key_end, dk, (REAL)p->scale, qh + i0 * dk, (ptrdiff_t)dk, 1, kh, 1,
                 (ptrdiff_t)dk, 0, s, (ptrdiff_t)M, 1);
            /* P = softmax of each row over its visible keys: exp(s - max) / Σ exp(s - max) */
            for (size_t r = 0; r < rows; r++) {
                REAL *srow = s + r * M;
                size_t n = la_visible_keys(p, b, i0 + r);
                if (n > 0 && la_has_masks(p)) { /* general masks: hidden keys weigh 0 */
                    const REAL max = FN(mask_scores)(p, bh, i0 + r, 0, srow, n);
                    if (max == -INFINITY)
                        n = 0; /* every key hidden: the empty row */
                    else {
                        const REAL sum = FN(masked_exp_sum)(srow, n, max);
                        for (size_t c = 0; c < n; c++)
                            srow[c] /= sum;
                    }
                } else if (n > 0) {
                    const REAL sum = EXP_SHIFT_SUM(srow, n, FN(row_max)(srow, n));
                    for (size_t c = 0; c < n; c++)
                        srow[c] /= sum;
                }
                if (n < key_end) memset(srow + n, 0, (key_end - n) * sizeof *srow);
            }
            /* out_blk = P_blk · v */
            GEMM(rows, dv, key_end, 1, s, (ptrdiff_t)M, 1, vh, (ptrdiff_t)dv, 1, 0, oh + i0 * dv,
                 (ptrdiff_t)dv, 1);
        }
    }
    free(scores);
    return LA_OK;
}

#undef EXP_SHIFT_SUM
