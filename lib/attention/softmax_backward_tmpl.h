/* softmax_backward_tmpl.h — the backward passes of softmax (fused and materializing) and
 * hard attention, written once for both precisions. Not an ordinary header:
 * softmax_backward.c includes it after core/real_f32.h and again after core/real_f64.h
 * (the scheme is in real_f32.h), so every function below is static and named FN(name);
 * softmax_backward.c writes out the public la_* functions.
 *
 * Shared by both instantiations and defined in softmax_backward.c before the includes:
 * the block sizes, head_offset(), keys_in_block(), round_up_64(), scale_fits(),
 * backward_fits(), the thread counts (*_threads()) and FN(log_of). */

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)

/* The arguments of a backward call: q (B,H,N,d_k), k (B,H,M,d_k), v (B,H,M,d_v), out and
 * d_out (B,H,N,d_v), and the gradients d_q, d_k, d_v shaped as q, k, v. */
#include "attention/mask_tmpl.h"

typedef struct {
    const REAL *q, *k, *v, *out, *d_out;
    REAL *d_q, *d_k, *d_v;
} FN(grad_args);

/* xt (cols × rows, row-major) = x (rows × cols, leading dimension ld)ᵀ: a key block of k or v
 * laid out so that the block products read it with unit column stride (GEMM_SMALL). */
static void FN(transpose)(const REAL *x, size_t ld, size_t rows, size_t cols, REAL *xt)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            xt[c * rows + r] = x[r * ld + c];
}

/* One head's arrays, as the block functions below read them: q (N, d_k), k (M, d_k),
 * v (M, d_v), out and d_out (N, d_v), lse (N); d_q (N, d_k), d_k (M, d_k), d_v (M, d_v). */
typedef struct {
    const la_problem *p;
    size_t b;  /* batch entry (for the masks) */
    size_t bh; /* head b·H + h (for the general masks) */
    const REAL *qh, *kh, *vh, *oh, *gh;
    const REAL *lse;
    REAL *dqh, *dkh, *dvh;
} FN(head);

/* A thread's scratch: kt (d_k × BK) and vt (d_v × BK), a key block transposed; s and ds
 * (BQ × BK): the block's P and dS; row (BQ): D of the block's queries (or, in the lse pass,
 * the running maxima, with the running sums in ds). */
typedef struct {
    REAL *kt, *vt, *s, *ds, *row;
} FN(scratch);

static FN(scratch) FN(scratch_of)(const la_problem *p, unsigned char *mine)
{
    const size_t bq = p->n_queries < BQ ? p->n_queries : BQ;
    const size_t bk = p->n_keys < BK ? p->n_keys : BK;
    FN(scratch) w;
    w.kt = (REAL *)(void *)mine;
    w.vt = w.kt + p->d_k * bk;
    w.s = w.vt + p->d_v * bk;
    w.ds = w.s + bq * bk;
    w.row = w.ds + bq * bk;
    return w;
}

/* Bytes of one thread's scratch (FN(scratch)), rounded up to a cache line. */
static size_t FN(scratch_bytes)(const la_problem *p)
{
    const size_t bq = p->n_queries < BQ ? p->n_queries : BQ;
    const size_t bk = p->n_keys < BK ? p->n_keys : BK;
    return round_up_64(((p->d_k + p->d_v) * bk + 2 * bq * bk + bq) * sizeof(REAL));
}

/* The key block j0 .. j0+cols-1 of one head, transposed into w->kt (d_k × cols) and
 * w->vt (d_v × cols). */
static void FN(load_keys)(const FN(head) * hd, size_t j0, size_t cols, FN(scratch) * w)
{
    const size_t dk = hd->p->d_k, dv = hd->p->d_v;
    FN(transpose)(hd->kh + j0 * dk, dk, cols, dk, w->kt);
    FN(transpose)(hd->vh + j0 * dv, dv, cols, dv, w->vt);
}

/* D_r = Σ_c d_out_(i0+r)c · out_(i0+r)c for the rows of a query block, into w->row. */
static void FN(row_dots)(const FN(head) * hd, size_t i0, size_t rows, FN(scratch) * w)
{
    const size_t dv = hd->p->d_v;
    for (size_t r = 0; r < rows; r++) {
        const REAL *g = hd->gh + (i0 + r) * dv, *o = hd->oh + (i0 + r) * dv;
        REAL d = 0;
        for (size_t c = 0; c < dv; c++)
            d += g[c] * o[c];
        w->row[r] = d;
    }
}

/* The backward of one (query block i0 .. i0+rows-1, key block j0 .. j0+cols-1) of a head,
 * with w->kt, w->vt holding the key block (load_keys) and w->row the rows' D (row_dots):
 *   s  = q_blk · k_blkᵀ,  P = exp(s · scale − lse) on visible pairs, 0 on hidden ones;
 *   ds = d_out_blk · v_blkᵀ (= dP),  dS = P ∘ (dP − D) · scale (0 on hidden pairs);
 *   kv: d_v_blk += Pᵀ · d_out_blk,  d_k_blk += dSᵀ · q_blk;
 *   q:  d_q_blk += dS · k_blk.
 * Every call with the same blocks computes the same P and dS bits, so d_q's pass may
 * recompute them (the two-pass schedule) without changing a bit of the result. */
static void FN(block_backward)(const FN(head) * hd, size_t i0, size_t rows, size_t j0, size_t cols,
                               FN(scratch) * w, bool kv, bool q)
{
    const la_problem *p = hd->p;
    const size_t dk = p->d_k, dv = p->d_v;
    const REAL scale = (REAL)p->scale;
    /* s = q_blk · k_blkᵀ, ds = dP = d_out_blk · v_blkᵀ  (rows × cols each) */
    GEMM_SMALL(rows, cols, dk, 1, hd->qh + i0 * dk, (ptrdiff_t)dk, 1, w->kt, (ptrdiff_t)cols, 1, 0,
               w->s, (ptrdiff_t)cols, 1);
    GEMM_SMALL(rows, cols, dv, 1, hd->gh + i0 * dv, (ptrdiff_t)dv, 1, w->vt, (ptrdiff_t)cols, 1, 0,
               w->ds, (ptrdiff_t)cols, 1);
    /* P = exp(s·scale − lse), dS = P ∘ (dP − D) · scale; hidden pairs 0 */
    for (size_t r = 0; r < rows; r++) {
        REAL *srow = w->s + r * cols, *dsrow = w->ds + r * cols;
        size_t n = keys_in_block(p, hd->b, i0 + r, j0, cols);
        if (n > 0 && la_has_masks(p)) { /* general masks: P = 0 where hidden */
            for (size_t c = 0; c < n; c++)
                srow[c] *= scale;
            if (hd->lse[i0 + r] == -INFINITY) /* the row sees no key */
                n = 0;
            else {
                (void)FN(mask_scores)(p, hd->bh, i0 + r, j0, srow, n);
                (void)FN(masked_exp_sum)(srow, n, hd->lse[i0 + r]);
                const REAL d = w->row[r];
                for (size_t c = 0; c < n; c++)
                    dsrow[c] = srow[c] * (dsrow[c] - d) * scale;
            }
        } else if (n > 0) {
            for (size_t c = 0; c < n; c++)
                srow[c] *= scale;
            (void)EXP_SHIFT_SUM(srow, n, hd->lse[i0 + r]);
            const REAL d = w->row[r];
            for (size_t c = 0; c < n; c++)
                dsrow[c] = srow[c] * (dsrow[c] - d) * scale;
        }
        for (size_t c = n; c < cols; c++)
            srow[c] = dsrow[c] = 0;
    }
    if (kv) {
        /* d_v_blk += Pᵀ · d_out_blk  (cols × d_v),  d_k_blk += dSᵀ · q_blk  (cols × d_k) */
        GEMM_SMALL(cols, dv, rows, 1, w->s, 1, (ptrdiff_t)cols, hd->gh + i0 * dv, (ptrdiff_t)dv, 1,
                   1, hd->dvh + j0 * dv, (ptrdiff_t)dv, 1);
        GEMM_SMALL(cols, dk, rows, 1, w->ds, 1, (ptrdiff_t)cols, hd->qh + i0 * dk, (ptrdiff_t)dk, 1,
                   1, hd->dkh + j0 * dk, (ptrdiff_t)dk, 1);
    }
    if (q) /* d_q_blk += dS · k_blk  (rows × d_k) */
        GEMM_SMALL(rows, dk, cols, 1, w->ds, (ptrdiff_t)cols, 1, hd->kh + j0 * dk, (ptrdiff_t)dk, 1,
                   1, hd->dqh + i0 * dk, (ptrdiff_t)dk, 1);
}

/* d_k, d_v of the key block j0 (cols keys) of a head: its query blocks in order. */
static void FN(key_block_pass)(const FN(head) * hd, size_t j0, size_t cols, FN(scratch) * w,
                               bool also_q)
{
    const la_problem *p = hd->p;
    const size_t N = p->n_queries;
    FN(load_keys)(hd, j0, cols, w);
    for (size_t i0 = 0; i0 < N; i0 += BQ) {
        const size_t rows = N - i0 < BQ ? N - i0 : BQ;
        if (la_visible_keys(p, hd->b, i0 + rows - 1) <= j0) continue; /* no row sees the block */
        FN(row_dots)(hd, i0, rows, w);
        FN(block_backward)(hd, i0, rows, j0, cols, w, true, also_q);
    }
}

/* d_q of the query block i0 (rows queries) of a head: its key blocks in order. */
static void FN(query_block_pass)(const FN(head) * hd, size_t i0, size_t rows, FN(scratch) * w)
{
    const size_t key_end = la_visible_keys(hd->p, hd->b, i0 + rows - 1);
    /* key blocks cut as the one-pass schedule cuts them (at the head's last visible key),
     * so both schedules make the same calls */
    const size_t head_end = la_visible_keys(hd->p, hd->b, hd->p->n_queries - 1);
    FN(row_dots)(hd, i0, rows, w);
    for (size_t j0 = 0; j0 < key_end; j0 += BK) {
        const size_t cols = head_end - j0 < BK ? head_end - j0 : BK;
        FN(load_keys)(hd, j0, cols, w);
        FN(block_backward)(hd, i0, rows, j0, cols, w, false, true);
    }
}

/* lse of the query rows i0 .. i0+rows-1 of a head: the online maximum and sum of the
 * forward, over the key blocks in order. lse: (rows). */
static void FN(lse_block)(const FN(head) * hd, size_t i0, size_t rows, FN(scratch) * w, REAL *lse)
{
    const la_problem *p = hd->p;
    const size_t dk = p->d_k;
    const REAL scale = (REAL)p->scale;
    REAL *m = w->row, *l = w->ds;
    for (size_t r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0;
    }
    const size_t key_end = la_visible_keys(p, hd->b, i0 + rows - 1);
    for (size_t j0 = 0; j0 < key_end; j0 += BK) {
        const size_t cols = key_end - j0 < BK ? key_end - j0 : BK;
        FN(transpose)(hd->kh + j0 * dk, dk, cols, dk, w->kt);
        /* s = q_blk · k_blkᵀ · scale, as block_backward forms it */
        GEMM_SMALL(rows, cols, dk, 1, hd->qh + i0 * dk, (ptrdiff_t)dk, 1, w->kt, (ptrdiff_t)cols, 1,
                   0, w->s, (ptrdiff_t)cols, 1);
        for (size_t r = 0; r < rows; r++) {
            REAL *srow = w->s + r * cols;
            const size_t n = keys_in_block(p, hd->b, i0 + r, j0, cols);
            if (n == 0) continue;
            REAL block_max = -INFINITY;
            for (size_t c = 0; c < n; c++) {
                srow[c] *= scale;
                block_max = srow[c] > block_max ? srow[c] : block_max;
            }
            if (la_has_masks(p)) { /* general masks: the kept keys' maximum and sum */
                block_max = FN(mask_scores)(p, hd->bh, i0 + r, j0, srow, n);
                if (block_max == -INFINITY) continue; /* every key of the block hidden */
                if (block_max > m[r]) {
                    if (l[r] > 0) l[r] *= EXP(m[r] - block_max);
                    m[r] = block_max;
                }
                l[r] += FN(masked_exp_sum)(srow, n, m[r]);
                continue;
            }
            if (block_max > m[r]) {
                if (l[r] > 0) l[r] *= EXP(m[r] - block_max);
                m[r] = block_max;
            }
            l[r] += EXP_SHIFT_SUM(srow, n, m[r]);
        }
    }
    for (size_t r = 0; r < rows; r++)
        lse[r] = l[r] > 0 ? m[r] + FN(log_of)(l[r]) : -INFINITY;
}

/* The head (b, h) of a call. */
static FN(head)
    FN(head_of)(const la_problem *p, const FN(grad_args) * a, const REAL *lse, size_t b, size_t h)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    FN(head) hd;
    hd.p = p;
    hd.b = b;
    hd.bh = b * p->heads + h;
    hd.qh = a->q + head_offset(p, b, h, N, dk);
    hd.kh = a->k + head_offset(p, b, h, M, dk);
    hd.vh = a->v + head_offset(p, b, h, M, dv);
    hd.oh = a->out ? a->out + head_offset(p, b, h, N, dv) : NULL;
    hd.gh = a->d_out + head_offset(p, b, h, N, dv);
    hd.lse = lse ? lse + head_offset(p, b, h, N, 1) : NULL;
    hd.dqh = a->d_q + head_offset(p, b, h, N, dk);
    hd.dkh = a->d_k + head_offset(p, b, h, M, dk);
    hd.dvh = a->d_v + head_offset(p, b, h, M, dv);
    return hd;
}

/* The range rule of a backward (linattn.h: la_attention_backward_*): the forward's on q, k,
 * v, and the backward's bound on d_out (and out, for softmax). */
static bool FN(backward_range_ok)(la_range_kind kind, const la_problem *p, const FN(grad_args) * a)
{
    if (!FN(la_range_ok)(kind, p, a->q, a->k, a->v)) return false;
    const size_t heads = p->batch * p->heads;
    const double e = FN(la_max_abs)(a->d_out, heads * p->n_queries * p->d_v);
    double a_, b_, c_, o_ = 0;
    if (kind == LA_RANGE_SOFTMAX) {
        a_ = FN(la_max_abs)(a->q, heads * p->n_queries * p->d_k);
        b_ = FN(la_max_abs)(a->k, heads * p->n_keys * p->d_k);
        c_ = FN(la_max_abs)(a->v, heads * p->n_keys * p->d_v);
        if (a->out) o_ = FN(la_max_abs)(a->out, heads * p->n_queries * p->d_v);
    } else {
        a_ = b_ = c_ = 0;
    }
    return backward_fits(kind, p, a_, b_, c_, o_, e, REAL_MAX);
}

/* The fused backward (contract in linattn.h): lse given, or NULL (computed first). */
static la_status FN(softmax_backward)(const la_problem *p, const FN(grad_args) * a,
                                      const REAL *lse_in)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!a->q || !a->k || !a->v || !a->out || !a->d_out || !a->d_q || !a->d_k || !a->d_v)
        return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;
    if (!FN(backward_range_ok)(LA_RANGE_SOFTMAX, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, heads = p->batch * p->heads;
    const size_t q_blocks = (N + BQ - 1) / BQ, k_blocks = (M + BK - 1) / BK;
    const int threads = la_threads();
    size_t lse_bytes = 0, work_bytes, q_tasks, k_tasks;
    const size_t per_thread = FN(scratch_bytes)(p);
    const int used = softmax_backward_threads(p, threads);
    if (!la_mul_ok(heads, q_blocks, &q_tasks) || !la_mul_ok(heads, k_blocks, &k_tasks))
        return LA_EOVERFLOW;
    if (!lse_in && (!la_mul_ok(heads * N, sizeof(REAL), &lse_bytes))) return LA_EOVERFLOW;
    lse_bytes = round_up_64(lse_bytes);
    if (!la_mul_ok(per_thread, (size_t)used, &work_bytes) || work_bytes > SIZE_MAX - lse_bytes ||
        work_bytes + lse_bytes > p->workspace_limit)
        return LA_EBUDGET;
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, work_bytes + lse_bytes);
    if (!scratch) return LA_ENOMEM;
    REAL *lse_own = (REAL *)(void *)(scratch + work_bytes);
    const REAL *lse = lse_in ? lse_in : lse_own;

    memset(a->d_q, 0, heads * N * p->d_k * sizeof(REAL));
    memset(a->d_k, 0, heads * M * p->d_k * sizeof(REAL));
    memset(a->d_v, 0, heads * M * p->d_v * sizeof(REAL));
    const bool one_pass = heads >= (size_t)threads;

#pragma omp parallel num_threads(used)
    {
        FN(scratch) w = FN(scratch_of)(p, scratch + (size_t)omp_get_thread_num() * per_thread);
        if (!lse_in) { /* lse of every query: (head, query block) tasks */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_tasks; t++) {
                const size_t bh = t / q_blocks, i0 = (t % q_blocks) * BQ;
                const FN(head) hd = FN(head_of)(p, a, NULL, bh / p->heads, bh % p->heads);
                FN(lse_block)(&hd, i0, N - i0 < BQ ? N - i0 : BQ, &w, lse_own + bh * N + i0);
            }
        }
        if (one_pass) { /* a head per task: its key blocks in order, d_q as it goes */
#pragma omp for schedule(dynamic)
            for (size_t bh = 0; bh < heads; bh++) {
                const FN(head) hd = FN(head_of)(p, a, lse, bh / p->heads, bh % p->heads);
                const size_t key_end = la_visible_keys(p, hd.b, N - 1);
                for (size_t j0 = 0; j0 < key_end; j0 += BK)
                    FN(key_block_pass)(&hd, j0, key_end - j0 < BK ? key_end - j0 : BK, &w, true);
            }
        } else { /* d_k, d_v per (head, key block), then d_q per (head, query block) */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_tasks; t++) {
                const size_t bh = t / k_blocks, j0 = (t % k_blocks) * BK;
                const FN(head) hd = FN(head_of)(p, a, lse, bh / p->heads, bh % p->heads);
                const size_t key_end = la_visible_keys(p, hd.b, N - 1);
                if (j0 < key_end)
                    FN(key_block_pass)(&hd, j0, key_end - j0 < BK ? key_end - j0 : BK, &w, false);
            }
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_tasks; t++) {
                const size_t bh = t / q_blocks;
                const size_t i0 = (q_blocks - 1 - t % q_blocks) * BQ; /* longest rows first */
                const FN(head) hd = FN(head_of)(p, a, lse, bh / p->heads, bh % p->heads);
                FN(query_block_pass)(&hd, i0, N - i0 < BQ ? N - i0 : BQ, &w);
            }
        }
    }
    free(scratch);
    return LA_OK;
}

/* The materializing backward (contract in linattn.h), one head at a time:
 *   P (N × M, one matrix for the call) = row softmax of q kᵀ · scale, as the forward;
 *   d_v = Pᵀ d_out (per key block);
 *   per query block: dP = d_out_blk vᵀ (rows × M, per thread), dS = P ∘ (dP − Σ P∘dP)
 *   over P's rows, d_q_blk = dS_blk k · scale;
 *   d_k = dSᵀ q · scale (per key block).
 * Only the columns below kmax (the keys any query of the head sees) are formed. */
static la_status FN(softmax_materialized_backward)(const la_problem *p, const FN(grad_args) * a)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!a->q || !a->k || !a->v || !a->d_out || !a->d_q || !a->d_k || !a->d_v) return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;
    if (!FN(backward_range_ok)(LA_RANGE_SOFTMAX, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads;
    const int used = materialized_backward_threads(p, la_threads());
    const size_t bq = N < BQ_MAT ? N : BQ_MAT;
    size_t score_bytes, row_bytes, work_bytes;
    if (!la_mul_ok(N, M, &score_bytes) || !la_mul_ok(score_bytes, sizeof(REAL), &score_bytes) ||
        !la_mul_ok(bq * M, sizeof(REAL), &row_bytes) ||
        !la_mul_ok(round_up_64(row_bytes), (size_t)used, &work_bytes) ||
        round_up_64(score_bytes) > SIZE_MAX - work_bytes ||
        round_up_64(score_bytes) + work_bytes > p->workspace_limit)
        return LA_EBUDGET;
    score_bytes = round_up_64(score_bytes);
    row_bytes = round_up_64(row_bytes);
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *mem = la_scores_alloc(score_bytes + work_bytes);
    if (!mem) return LA_ENOMEM;
    REAL *P = (REAL *)(void *)mem;
    const REAL scale = (REAL)p->scale;
    const size_t q_blocks = (N + BQ_MAT - 1) / BQ_MAT, k_blocks = (M + BK_MAT - 1) / BK_MAT;

#pragma omp parallel num_threads(used)
    {
        REAL *dP = (REAL *)(void *)(mem + score_bytes + (size_t)omp_get_thread_num() * row_bytes);
        for (size_t bh = 0; bh < heads; bh++) {
            const FN(head) hd = FN(head_of)(p, a, NULL, bh / p->heads, bh % p->heads);
            const size_t b = hd.b, kmax = la_visible_keys(p, b, N - 1);
            /* P: scores, then each row's softmax over its visible keys, zeros to kmax */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_blocks; t++) {
                const size_t i0 = (q_blocks - 1 - t) * BQ_MAT;
                const size_t rows = N - i0 < BQ_MAT ? N - i0 : BQ_MAT;
                const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
                REAL *s = P + i0 * M;
                if (key_end > 0)
                    GEMM(rows, key_end, dk, scale, hd.qh + i0 * dk, (ptrdiff_t)dk, 1, hd.kh, 1,
                         (ptrdiff_t)dk, 0, s, (ptrdiff_t)M, 1);
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
                        REAL max = srow[0];
                        for (size_t c = 1; c < n; c++)
                            max = srow[c] > max ? srow[c] : max;
                        const REAL sum = EXP_SHIFT_SUM(srow, n, max);
                        for (size_t c = 0; c < n; c++)
                            srow[c] /= sum;
                    }
                    if (n < kmax) memset(srow + n, 0, (kmax - n) * sizeof *srow);
                }
            }
            /* d_v_blk = P[:, blk]ᵀ · d_out over the rows that see the block; keys past kmax 0 */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_blocks; t++) {
                const size_t j0 = t * BK_MAT, cols = M - j0 < BK_MAT ? M - j0 : BK_MAT;
                REAL *dvb = hd.dvh + j0 * dv, *dkb = hd.dkh + j0 * dk;
                if (j0 >= kmax) {
                    memset(dvb, 0, cols * dv * sizeof *dvb);
                    memset(dkb, 0, cols * dk * sizeof *dkb);
                    continue;
                }
                /* keys kmax.. of the block: no query sees them */
                const size_t seen = kmax - j0 < cols ? kmax - j0 : cols;
                memset(dvb + seen * dv, 0, (cols - seen) * dv * sizeof *dvb);
                memset(dkb + seen * dk, 0, (cols - seen) * dk * sizeof *dkb);
                /* the first query that sees key j0 (< N: j0 < kmax, so some query does) */
                const size_t first = la_first_query_seeing(p, j0);
                GEMM(seen, dv, N - first, 1, P + first * M + j0, 1, (ptrdiff_t)M,
                     hd.gh + first * dv, (ptrdiff_t)dv, 1, 0, dvb, (ptrdiff_t)dv, 1);
            }
            /* dP, dS over P, d_q, per query block */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_blocks; t++) {
                const size_t i0 = (q_blocks - 1 - t) * BQ_MAT;
                const size_t rows = N - i0 < BQ_MAT ? N - i0 : BQ_MAT;
                const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
                REAL *s = P + i0 * M;
                if (key_end == 0) {
                    memset(hd.dqh + i0 * dk, 0, rows * dk * sizeof(REAL));
                    continue;
                }
                /* dP = d_out_blk · vᵀ  (rows × key_end, leading dimension key_end) */
                GEMM(rows, key_end, dv, 1, hd.gh + i0 * dv, (ptrdiff_t)dv, 1, hd.vh, 1,
                     (ptrdiff_t)dv, 0, dP, (ptrdiff_t)key_end, 1);
                /* dS = P ∘ (dP − Σ_j P dP), over P */
                for (size_t r = 0; r < rows; r++) {
                    REAL *srow = s + r * M;
                    const REAL *drow = dP + r * key_end;
                    const size_t n = la_visible_keys(p, b, i0 + r);
                    REAL center = 0;
                    for (size_t c = 0; c < n; c++)
                        center += srow[c] * drow[c];
                    for (size_t c = 0; c < n; c++)
                        srow[c] = srow[c] * (drow[c] - center);
                }
                /* d_q_blk = dS_blk · k · scale */
                GEMM(rows, dk, key_end, scale, s, (ptrdiff_t)M, 1, hd.kh, (ptrdiff_t)dk, 1, 0,
                     hd.dqh + i0 * dk, (ptrdiff_t)dk, 1);
            }
            /* d_k_blk = dS[:, blk]ᵀ · q · scale over the rows that see the block */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_blocks; t++) {
                const size_t j0 = t * BK_MAT, cols = M - j0 < BK_MAT ? M - j0 : BK_MAT;
                if (j0 >= kmax) continue; /* zeroed above, as the keys past kmax */
                const size_t seen = kmax - j0 < cols ? kmax - j0 : cols;
                const size_t first = la_first_query_seeing(p, j0);
                GEMM(seen, dk, N - first, scale, P + first * M + j0, 1, (ptrdiff_t)M,
                     hd.qh + first * dk, (ptrdiff_t)dk, 1, 0, hd.dkh + j0 * dk, (ptrdiff_t)dk, 1);
            }
        }
    }
    free(mem);
    return LA_OK;
}

/* The hard backward (contract in linattn.h): the forward's argmax per (head, query block)
 * into `best` (B·H·N keys), then per head d_v_j += d_out_i over its queries in order. */
static la_status FN(hard_backward)(const la_problem *p, const FN(grad_args) * a)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!a->q || !a->k || !a->v || !a->d_out || !a->d_q || !a->d_k || !a->d_v) return LA_EINVAL;
    if (!scale_fits(p->scale, sizeof(REAL))) return LA_EINVAL;
    if (!FN(backward_range_ok)(LA_RANGE_HARD, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads, q_blocks = (N + Q_BLOCK_HARD - 1) / Q_BLOCK_HARD;
    const int used = hard_backward_threads(p, la_threads());
    const size_t bq = N < Q_BLOCK_HARD ? N : Q_BLOCK_HARD, bk = M < K_BLOCK_HARD ? M : K_BLOCK_HARD;
    const size_t per_thread = round_up_64((bq * bk + bq) * sizeof(REAL));
    size_t best_bytes, work_bytes, q_tasks;
    if (!la_mul_ok(heads, q_blocks, &q_tasks) || !la_mul_ok(heads * N, sizeof(size_t), &best_bytes))
        return LA_EOVERFLOW;
    best_bytes = round_up_64(best_bytes);
    if (!la_mul_ok(per_thread, (size_t)used, &work_bytes) || work_bytes > SIZE_MAX - best_bytes ||
        work_bytes + best_bytes > p->workspace_limit)
        return LA_EBUDGET;
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *mem = aligned_alloc(64, best_bytes + work_bytes);
    if (!mem) return LA_ENOMEM;
    size_t *best = (size_t *)(void *)mem;

    memset(a->d_q, 0, heads * N * dk * sizeof(REAL));
    memset(a->d_k, 0, heads * M * dk * sizeof(REAL));
    memset(a->d_v, 0, heads * M * dv * sizeof(REAL));
#pragma omp parallel num_threads(used)
    {
        unsigned char *mine = mem + best_bytes + (size_t)omp_get_thread_num() * per_thread;
        REAL *s = (REAL *)(void *)mine, *best_score = s + bq * bk;
#pragma omp for schedule(dynamic)
        for (size_t t = 0; t < q_tasks; t++) {
            const size_t bh = t / q_blocks, i0 = (t % q_blocks) * Q_BLOCK_HARD;
            const FN(head) hd = FN(head_of)(p, a, NULL, bh / p->heads, bh % p->heads);
            FN(la_hard_argmax)
            (p, hd.bh, hd.qh, hd.kh, i0, N - i0 < bq ? N - i0 : bq, s, best_score,
             best + bh * N + i0);
        }
        /* d_v_j += d_out_i for each query i, in order, whose argmax is j */
#pragma omp for schedule(dynamic)
        for (size_t bh = 0; bh < heads; bh++) {
            const FN(head) hd = FN(head_of)(p, a, NULL, bh / p->heads, bh % p->heads);
            for (size_t i = 0; i < N; i++) {
                const size_t j = best[bh * N + i];
                if (j == SIZE_MAX) continue;
                for (size_t c = 0; c < dv; c++)
                    hd.dvh[j * dv + c] += hd.gh[i * dv + c];
            }
        }
    }
    free(mem);
    return LA_OK;
}

#undef EXP_SHIFT_SUM
