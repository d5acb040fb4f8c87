/* scores_tmpl.h — the score-function kernels (general, cosine, additive), written once for
 * both precisions. Not an ordinary header: scores.c includes it after core/real_f32.h and
 * again after core/real_f64.h (the scheme is in real_f32.h), so every function below is
 * static and named FN(name); scores.c writes out the public la_* functions.
 *
 * Shared by both instantiations and defined in scores.c before the includes: Q_BLOCK,
 * K_BLOCK, NORM_EPS, weight_shape, shape_of(), draw_weights(), finite_abs(), drawn_bound(),
 * general_layout_for(), cosine_layout_for(), additive_layout_for(), score_check(),
 * inner_problem(), tanh_of_f32/_f64(). */

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)

/* The weights as this precision reads them: the caller's (float64, given; own_count 0),
 * else `own` (s.n_w + s.n_v elements) filled with them converted (float32) or drawn from
 * p->seed. s: W's and v's entries (v: none for general). */
static void FN(weights_of)(const la_problem *p, weight_shape s, size_t own_count, REAL *own,
                           const REAL **w, const REAL **v)
{
    if (own_count == 0) { /* float64, given: read in place */
        *w = (const REAL *)p->score_w;
        *v = (const REAL *)p->score_v;
        return;
    }
    REAL *w_own = own, *v_own = own + s.n_w;
    if (!p->score_w)
        draw_weights(s, p->seed, REAL_IS_F32 ? NULL : (double *)w_own,
                     REAL_IS_F32 ? NULL : (double *)v_own, REAL_IS_F32 ? (float *)w_own : NULL,
                     REAL_IS_F32 ? (float *)v_own : NULL);
    else {
        for (size_t x = 0; x < s.n_w; x++)
            w_own[x] = (REAL)p->score_w[x];
        for (size_t x = 0; x < s.n_v; x++)
            v_own[x] = (REAL)p->score_v[x];
    }
    *w = w_own;
    *v = v_own;
}

/* ---------------------------------------------------------------- general: q·W·k · scale */

/* General scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   W = p->score_w: (d_k, d_k) row-major float64, or drawn from p->seed.
 * q·W·k = q·k' with k' = W k, so K' = K Wᵀ per head (the m keys in length; the rows past
 * them zeroed, hidden anyway), one BLIS product per head on the OpenMP threads, then the
 * fused softmax kernel once over (Q, K', V) with p's masks and scale. */
static la_status FN(general_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                       const REAL *v, REAL *out)
{
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t M = p->n_keys, dk = p->d_k, heads = p->batch * p->heads;
    transform_layout lay;
    if ((st = general_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const weight_shape s = shape_of(LA_KERNEL_GENERAL, dk, p->score_dim);

    /* the range rule: given W finite; |k'| <= d_k·max|W|·max|k| within T/8 */
    double w_max, w_sum;
    if (p->score_w && !finite_abs(p->score_w, s.n_w, &w_max, &w_sum)) return LA_EINVAL;
    if (!p->score_w) w_max = drawn_bound(s.sd_w);
    const double k_max = FN(la_max_abs)(k, heads * M * dk);
    const double limit = (double)REAL_MAX / 8;
    if (w_max > limit || (isfinite(k_max) && (double)dk * w_max * k_max > limit)) return LA_ERANGE;

    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scratch = aligned_alloc(64, (held + 63) / 64 * 64);
    if (!scratch) return LA_ENOMEM;
    const REAL *w, *unused;
    FN(weights_of)(p, s, lay.first, scratch, &w, &unused);
    REAL *kp = scratch + lay.first;

    /* per head: K'_h[:L] = K_h[:L] Wᵀ (L × d_k); the hidden rows zeroed */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t L = la_keys_in_length(p, bh / p->heads);
        GEMM(L, dk, dk, 1, k + bh * M * dk, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)dk, 0,
             kp + bh * M * dk, (ptrdiff_t)dk, 1);
        if (L < M) memset(kp + (bh * M + L) * dk, 0, (M - L) * dk * sizeof *kp);
    }

    /* y = softmax(Q K'ᵀ · scale) V: the fused kernel, with the budget left */
    const la_problem in = inner_problem(p, held);
    st = FN(la_softmax_attention)(&in, q, kp, v, out);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- cosine: q̂·k̂ · scale */

/* y = x / max(‖x‖, NORM_EPS) for one row of n: the norm in float64, as big·‖x / big‖ with
 * big = max |x_c|, so that squaring cannot overflow or underflow; a zero row stays zero. */
static void FN(normalize_row)(const REAL *x, REAL *y, size_t n)
{
    double big = 0;
    for (size_t c = 0; c < n; c++) {
        const double a = fabs((double)x[c]);
        if (!(a <= big)) big = a; /* a NaN sticks */
    }
    if (big == 0) {
        memset(y, 0, n * sizeof *y);
        return;
    }
    double sum = 0;
    for (size_t c = 0; c < n; c++) {
        const double t = (double)x[c] / big;
        sum += t * t;
    }
    double norm = big * sqrt(sum);
    if (norm < NORM_EPS) norm = NORM_EPS;
    for (size_t c = 0; c < n; c++)
        y[c] = (REAL)((double)x[c] / norm);
}

/* Cosine scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Q̂ and K̂ normalized row by row (the m keys in length; the rest, and every row of a head
 * whose entry leaves no key, zeroed), then the fused softmax kernel once over (Q̂, K̂, V). */
static la_status FN(cosine_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                      const REAL *v, REAL *out)
{
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, heads = p->batch * p->heads;
    transform_layout lay;
    if ((st = cosine_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    REAL *scratch = aligned_alloc(64, (held + 63) / 64 * 64);
    if (!scratch) return LA_ENOMEM;
    REAL *qn = scratch, *kn = scratch + lay.first;

#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t L = la_keys_in_length(p, bh / p->heads);
        REAL *qh = qn + bh * N * dk, *kh = kn + bh * M * dk;
        if (L == 0) { /* no query sees a key: rows of zeros, not read */
            memset(qh, 0, N * dk * sizeof *qh);
        } else {
            for (size_t i = 0; i < N; i++)
                FN(normalize_row)(q + (bh * N + i) * dk, qh + i * dk, dk);
        }
        for (size_t j = 0; j < L; j++)
            FN(normalize_row)(k + (bh * M + j) * dk, kh + j * dk, dk);
        if (L < M) memset(kh + L * dk, 0, (M - L) * dk * sizeof *kh);
    }

    /* y = softmax(Q̂ K̂ᵀ · scale) V: the fused kernel, with the budget left */
    const la_problem in = inner_problem(p, held);
    st = FN(la_softmax_attention)(&in, qn, kn, v, out);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- additive: vᵀtanh(A + C) */

/* Additive attention for the query rows i0 .. i0+rows-1 of one head of an entry with m keys
 * in length:
 *   a: (N, d_a) = Q_h W_qᵀ, c: (M, d_a) = K_h W_kᵀ (rows < m set), w_v: (d_a);
 *   vh: (M, d_v), oh: (N, d_v), row-major; s: (rows · bk), row_max, row_sum: (rows) scratch.
 * Key blocks of bk over the keys the block's last row sees; in each, row r scores its own
 * visible keys, s_ij = Σ_a v_a tanh(a_ia + c_ja), folds them into its online softmax (as
 * the fused kernel: new row max, rescale what was accumulated, exp(s − max) summed) and
 * zeroes the rest of its row; then acc += s·v_blk. The output rows are the accumulator. */
static void FN(additive_block)(const la_problem *p, size_t m, const REAL *a, const REAL *c,
                               const REAL *w_v, const REAL *vh, REAL *oh, size_t i0, size_t rows,
                               size_t bk, REAL *s, REAL *row_max, REAL *row_sum)
{
    const size_t da = p->score_dim, dv = p->d_v;
    REAL *acc = oh + i0 * dv;
    for (size_t r = 0; r < rows; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0;
    }
    memset(acc, 0, rows * dv * sizeof *acc);
    /* the keys the last row sees (causal: j <= i + o, la_causal_offset) */
    const size_t key_hi = la_visible_keys_of(p, m, i0 + rows - 1);

    for (size_t j0 = 0; j0 < key_hi; j0 += bk) {
        const size_t cols = key_hi - j0 < bk ? key_hi - j0 : bk;
        for (size_t r = 0; r < rows; r++) {
            REAL *srow = s + r * cols;
            const size_t i = i0 + r;
            const size_t seen = la_visible_keys_of(p, m, i);
            const size_t n = seen > j0 ? (seen - j0 < cols ? seen - j0 : cols) : 0;
            const REAL *ai = a + i * da;
            /* s_ij = Σ_a v_a tanh(a_ia + c_ja) over this row's visible keys of the block */
            for (size_t x = 0; x < n; x++) {
                const REAL *cj = c + (j0 + x) * da;
                REAL sum = 0;
                for (size_t e = 0; e < da; e++)
                    sum += w_v[e] * FN(tanh_of)(ai[e] + cj[e]);
                srow[x] = sum;
            }
            if (n > 0) {
                REAL block_max = srow[0];
                for (size_t x = 1; x < n; x++)
                    block_max = srow[x] > block_max ? srow[x] : block_max;
                if (block_max > row_max[r]) {
                    if (row_sum[r] > 0) { /* something accumulated: rescale it */
                        const REAL alpha = EXP(row_max[r] - block_max);
                        row_sum[r] *= alpha;
                        REAL *arow = acc + r * dv;
                        for (size_t e = 0; e < dv; e++)
                            arow[e] *= alpha;
                    }
                    row_max[r] = block_max;
                }
                row_sum[r] += EXP_SHIFT_SUM(srow, n, row_max[r]);
            }
            if (n < cols) memset(srow + n, 0, (cols - n) * sizeof *srow);
        }
        /* acc += p_blk · v_blk   (rows × d_v) */
        GEMM_SMALL(rows, dv, cols, 1, s, (ptrdiff_t)cols, 1, vh + j0 * dv, (ptrdiff_t)dv, 1, 1, acc,
                   (ptrdiff_t)dv, 1);
    }

    /* out_i = acc_i / Σ_j exp(s_ij − m_i); a row that saw no key stays zero */
    for (size_t r = 0; r < rows; r++) {
        if (row_sum[r] > 0) {
            REAL *arow = acc + r * dv;
            const REAL sum = row_sum[r];
            for (size_t e = 0; e < dv; e++)
                arow[e] /= sum;
        }
    }
}

/* Additive scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   W = p->score_w: (d_a, 2·d_k), v = p->score_v: (d_a), float64, or drawn from p->seed.
 * First A_h = Q_h W_qᵀ and C_h = K_h W_kᵀ for every head (BLIS, W_q and W_k read in place
 * through W's strides), then tasks (b, h, block of 64 queries), one thread each, each
 * thread with its own slice of the scratch (additive_layout_for). */
static la_status FN(additive_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                        const REAL *v, REAL *out)
{
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if ((p->score_w == NULL) != (p->score_v == NULL)) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, da = p->score_dim;
    const size_t heads = p->batch * p->heads;
    additive_layout lay;
    if ((st = additive_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const weight_shape s = shape_of(LA_KERNEL_ADDITIVE, dk, da);

    /* the range rule: given weights finite; |A|, |C| <= d_k·max|W|·max(|q|, |k|), every
     * |score| <= Σ|v_a|, and the P·V sums <= M·max|v|, each within T/8 */
    double w_max, w_sum, v_max, v_sum;
    if (p->score_w && (!finite_abs(p->score_w, s.n_w, &w_max, &w_sum) ||
                       !finite_abs(p->score_v, s.n_v, &v_max, &v_sum)))
        return LA_EINVAL;
    if (!p->score_w) w_max = drawn_bound(s.sd_w), v_sum = (double)da * drawn_bound(s.sd_v);
    const double q_max = FN(la_max_abs)(q, heads * N * dk),
                 k_max = FN(la_max_abs)(k, heads * M * dk);
    const double values_max = FN(la_max_abs)(v, heads * M * dv);
    const double limit = (double)REAL_MAX / 8;
    if (w_max > limit || v_sum > limit || (isfinite(q_max) && (double)dk * w_max * q_max > limit) ||
        (isfinite(k_max) && (double)dk * w_max * k_max > limit) ||
        (isfinite(values_max) && (double)M * values_max > limit))
        return LA_ERANGE;

    if (lay.total > p->workspace_limit) return LA_EBUDGET;
    const int threads = lay.threads;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, lay.total);
    if (!scratch) return LA_ENOMEM;
    const REAL *w, *w_v;
    FN(weights_of)(p, s, lay.w, (REAL *)scratch, &w, &w_v);
    REAL *a = (REAL *)scratch + lay.w + lay.v, *c = a + lay.a;

    /* per head: A_h = Q_h W_qᵀ (N × d_a), C_h[:L] = K_h[:L] W_kᵀ (L × d_a); W_q = W[:, :d_k]
     * and W_k = W[:, d_k:], transposed through the strides; nothing when L = 0 */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t L = la_keys_in_length(p, bh / p->heads);
        if (L == 0) continue;
        GEMM(N, da, dk, 1, q + bh * N * dk, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)(2 * dk), 0,
             a + bh * N * da, (ptrdiff_t)da, 1);
        GEMM(L, da, dk, 1, k + bh * M * dk, (ptrdiff_t)dk, 1, w + dk, 1, (ptrdiff_t)(2 * dk), 0,
             c + bh * M * da, (ptrdiff_t)da, 1);
    }

    const size_t q_blocks = (N + Q_BLOCK - 1) / Q_BLOCK;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t t = 0; t < lay.tasks; t++) {
        const size_t bh = t / q_blocks, b = bh / p->heads;
        const size_t i0 = (t % q_blocks) * Q_BLOCK;
        const size_t rows = N - i0 < Q_BLOCK ? N - i0 : Q_BLOCK;
        REAL *row_max =
            (REAL *)(scratch + lay.shared + (size_t)omp_get_thread_num() * lay.per_thread);
        REAL *row_sum = row_max + lay.bq, *sblk = row_sum + lay.bq;
        FN(additive_block)
        (p, la_keys_in_length(p, b), a + bh * N * da, c + bh * M * da, w_v, v + bh * M * dv,
         out + bh * N * dv, i0, rows, lay.bk, sblk, row_max, row_sum);
    }
    free(scratch);
    return LA_OK;
}

#undef EXP_SHIFT_SUM
