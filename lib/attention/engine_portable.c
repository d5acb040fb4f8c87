/* engine_portable.c — the portable tiles of the online-softmax engine (engine.h), in one
 * precision (compiled twice: real_typed.h). A task's rows are rows of scores:
 *   s: (rows × cols) for the key block [j0, j0 + cols), leading dimension cols;
 *   row_max, row_sum: (rows); the output rows (this head's out, rows i0 .. i0+rows-1 of d_v
 *   at stride ldo) double as the accumulator of Σ_j exp(s_ij − m_i) v_j.
 * q, k, v: rows of d_k, d_k, d_v at the task's strides ldq, ldk, ldv (la_engine_task).
 * Q·Kᵀ goes through la_gemm_small_abt_* and P·V through la_gemm_small_* (gemm_small.c's
 * register tiles where the CPU has AVX-512, Kᵀ formed 32 keys at a time; else BLIS, Kᵀ
 * read with swapped strides); both take those strides as leading dimensions. */
#include "attention/engine.h"
#include "core/real_typed.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)
#if REAL_IS_F32
#define LOG logf
#else
#define LOG log
#endif

#include "attention/mask_tmpl.h"

/* max_c x[c] over n >= 1 elements (vectorized: `omp simd` allows the max reduction in any
 * order, which is exact for max). */
static REAL row_max_of(const REAL *x, size_t n)
{
    REAL m = x[0];
#pragma omp simd reduction(max : m)
    for (size_t c = 1; c < n; c++)
        m = x[c] > m ? x[c] : m;
    return m;
}

/* The rows' statistics zeroed: max −inf, sum 0, the accumulator (the output rows) 0. */
static void begin(la_engine_task *t)
{
    la_engine_carve(t);
    const la_engine_rows *w = la_engine_rows_of(t);
    REAL *row_max = w->stat_a, *row_sum = w->stat_b;
    const size_t dv = t->p->d_v, ldo = t->ldo;
    for (size_t r = 0; r < t->rows; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0;
    }
    if (!t->out) return;
    REAL *acc = (REAL *)t->out + t->i0 * ldo;
    if (ldo == dv)
        memset(acc, 0, t->rows * dv * sizeof(REAL));
    else
        for (size_t r = 0; r < t->rows; r++)
            memset(acc + r * ldo, 0, dv * sizeof(REAL));
}

/* s = q_blk · k_blkᵀ · scale   (rows × cols); q_blk: rows of d_k at stride ldq, k_blk: cols
 * rows of d_k at stride ldk (la_gemm_small_abt: register tiles on 32-key panels of Kᵀ). */
static void dot_scores(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dk = t->p->d_k, ldq = t->ldq, ldk = t->ldk;
    const REAL *qh = t->q, *kh = t->k;
    GEMM_SMALL_ABT(t->rows, cols, dk, (REAL)t->p->scale, qh + t->i0 * ldq, (ptrdiff_t)ldq,
                   kh + j0 * ldk, (ptrdiff_t)ldk, (REAL *)la_engine_rows_of(t)->s, (ptrdiff_t)cols);
}

/* Online softmax, row by row, over the row's keys [lo, hi) within this block (columns
 * [a, a + n)): new row max m', rescale what was accumulated by exp(m − m'), then
 * s_ij <- exp(s_ij − m') added to the row sum; every other entry of the row 0. Hidden keys
 * never reach exp, so a row that sees none never computes exp(−inf − −inf). */
static void softmax_tile(la_engine_task *t, size_t j0, size_t cols)
{
    const la_problem *p = t->p;
    const la_engine_rows *w = la_engine_rows_of(t);
    REAL *s = w->s, *row_max = w->stat_a, *row_sum = w->stat_b;
    const size_t dv = p->d_v, ldo = t->ldo;
    REAL *acc = t->out ? (REAL *)t->out + t->i0 * ldo : NULL; /* NULL: statistics only */
    const bool masked = la_has_masks(p); /* p->mask, p->key_mask: each pair tested */
    for (size_t r = 0; r < t->rows; r++) {
        REAL *srow = s + r * cols;
        const size_t lo = t->lo[r], hi = t->hi[r];
        const size_t a = lo > j0 ? (lo - j0 < cols ? lo - j0 : cols) : 0;
        const size_t e = hi > j0 ? (hi - j0 < cols ? hi - j0 : cols) : 0;
        size_t n = e > a ? e - a : 0;
        /* general masks: hidden scores −inf, and a block they hide whole adds nothing */
        const REAL block_max = n == 0   ? -INFINITY
                               : masked ? FN(mask_scores)(p, t->hd, t->i0 + r, j0 + a, srow + a, n)
                                        : row_max_of(srow + a, n);
        if (masked && block_max == -INFINITY) n = 0;
        if (n > 0) {
            if (block_max > row_max[r]) {
                if (row_sum[r] > 0) { /* something accumulated: rescale it */
                    const REAL alpha = EXP(row_max[r] - block_max);
                    row_sum[r] *= alpha;
                    REAL *arow = acc ? acc + r * ldo : NULL;
                    for (size_t c = 0; arow && c < dv; c++)
                        arow[c] *= alpha;
                }
                row_max[r] = block_max;
            }
            row_sum[r] += masked ? FN(masked_exp_sum)(srow + a, n, row_max[r])
                                 : EXP_SHIFT_SUM(srow + a, n, row_max[r]);
        }
        if (t->e->count_hidden) LA_COUNT(LA_COUNT_HIDDEN, cols - n); /* computed, then masked */
        if (a > 0) memset(srow, 0, a * sizeof *srow);
        if (a + n < cols) memset(srow + a + n, 0, (cols - a - n) * sizeof *srow);
    }
}

/* acc += p_blk · v_blk   (rows × d_v); v_blk: cols rows of d_v at stride ldv, acc: rows of
 * d_v at stride ldo (the register tiles: 4–12% faster than BLIS's here, relative.c's
 * measurement) */
static void values(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dv = t->p->d_v, ldv = t->ldv, ldo = t->ldo;
    const REAL *vh = t->v;
    GEMM_SMALL(t->rows, dv, cols, 1, (const REAL *)la_engine_rows_of(t)->s, (ptrdiff_t)cols, 1,
               vh + j0 * ldv, (ptrdiff_t)ldv, 1, 1, (REAL *)t->out + t->i0 * ldo, (ptrdiff_t)ldo,
               1);
}

/* out_i = acc_i / Σ_j exp(s_ij − m_i), a row that saw no key stays zero; lse_i = m_i + log
 * Σ_j exp(s_ij − m_i) (−inf for a row that saw none), for the backward. */
static void finish(la_engine_task *t)
{
    const la_engine_rows *w = la_engine_rows_of(t);
    const REAL *row_max = w->stat_a, *row_sum = w->stat_b;
    const size_t dv = t->p->d_v, ldo = t->ldo;
    REAL *acc = t->out ? (REAL *)t->out + t->i0 * ldo : NULL, *lse = t->lse;
    for (size_t r = 0; acc && r < t->rows; r++) {
        if (row_sum[r] > 0) {
            REAL *arow = acc + r * ldo;
            const REAL sum = row_sum[r];
            for (size_t c = 0; c < dv; c++)
                arow[c] /= sum;
        }
    }
    if (lse)
        for (size_t r = 0; r < t->rows; r++)
            lse[r] = row_sum[r] > 0 ? row_max[r] + LOG(row_sum[r]) : -INFINITY;
}

#if REAL_IS_F32
const la_engine_tiles la_engine_portable_f32 = {begin, dot_scores, softmax_tile, values, finish};
#else
const la_engine_tiles la_engine_portable_f64 = {begin, dot_scores, softmax_tile, values, finish};
#endif
