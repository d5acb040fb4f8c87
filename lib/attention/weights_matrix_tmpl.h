/* weights_matrix_tmpl.h — the attention matrix, written once for float and double
 * (included by weights_matrix.c after core/real_f32.h or core/real_f64.h). */

/* max |x_i| over n elements (NaN propagates as "not finite": the caller lets it pass). */
static double FN(max_abs)(const REAL *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = fabs((double)x[i]);
        if (!(a <= m)) m = a;
    }
    return m;
}

/* One task: the weights of query rows i0 .. i0+rows-1 of head hd = b·H + h.
 *   qh: (N, d_k), kh: (M, d_k), wh: (N, M) row-major, the head's slice of out;
 *   phi: (M + ROWS) · d_k scratch (linear only): φ(K), then φ(q_blk). */
static void FN(weights_block)(weights_kind kind, const la_problem *p, size_t hd, const REAL *qh,
                              const REAL *kh, REAL *wh, size_t i0, size_t rows, REAL *phi)
{
    const size_t M = p->n_keys, dk = p->d_k, b = hd / p->heads;
    const bool masked = la_has_masks(p);
    REAL *w = wh + i0 * M;
    /* w = q_blk · kᵀ · scale (softmax, hard) or φ(q_blk) · φ(K)ᵀ (linear): rows × M */
    if (kind == WEIGHTS_LINEAR) {
        REAL *phi_k = phi, *phi_q = phi + M * dk;
        FN(la_feature_map)(p->feature_map, kh, phi_k, M * dk);
        FN(la_feature_map)(p->feature_map, qh + i0 * dk, phi_q, rows * dk);
        GEMM(rows, M, dk, 1, phi_q, (ptrdiff_t)dk, 1, phi_k, 1, (ptrdiff_t)dk, 0, w, (ptrdiff_t)M,
             1);
    } else {
        GEMM(rows, M, dk, (REAL)p->scale, qh + i0 * dk, (ptrdiff_t)dk, 1, kh, 1, (ptrdiff_t)dk, 0,
             w, (ptrdiff_t)M, 1);
    }

    /* each row normalized over its visible keys; hidden entries exactly 0 */
    for (size_t r = 0; r < rows; r++) {
        REAL *row = w + r * M;
        size_t first, visible; /* the keys [first, visible) (first > 0: local only) */
        row_keys(kind, p, b, i0 + r, &first, &visible);
        if (first > 0) memset(row, 0, first * sizeof *row);
        if (masked && kind != WEIGHTS_LINEAR) {
            /* general masks: the row over its kept keys, hidden entries 0 (none kept: 0) */
            size_t best = SIZE_MAX;
            for (size_t j = first; j < visible; j++)
                if (!la_mask_hides(p, hd, i0 + r, j) && (best == SIZE_MAX || row[j] > row[best]))
                    best = j;
            const REAL max = best != SIZE_MAX ? row[best] : 0; /* before row[best] changes */
            double sum = 0;
            for (size_t j = first; j < visible; j++) {
                const bool kept = best != SIZE_MAX && !la_mask_hides(p, hd, i0 + r, j);
                row[j] = !kept ? 0 : kind == WEIGHTS_HARD ? (REAL)(j == best) : EXP(row[j] - max);
                sum += (double)row[j];
            }
            if (kind != WEIGHTS_HARD && sum > 0)
                for (size_t j = first; j < visible; j++)
                    row[j] = (REAL)((double)row[j] / sum);
        } else if ((kind == WEIGHTS_SOFTMAX || kind == WEIGHTS_LOCAL) && visible > first) {
            /* exp(s_j − max) / Σ exp(s_j − max) */
            REAL m = row[first];
            for (size_t j = first + 1; j < visible; j++)
                if (row[j] > m) m = row[j];
            double sum = 0;
            for (size_t j = first; j < visible; j++) {
                row[j] = EXP(row[j] - m);
                sum += (double)row[j];
            }
            for (size_t j = first; j < visible; j++)
                row[j] = (REAL)((double)row[j] / sum);
        } else if (kind == WEIGHTS_HARD && visible > 0) {
            /* one-hot at the first maximum (ties to the lowest j) */
            size_t best = 0;
            for (size_t j = 1; j < visible; j++)
                if (row[j] > row[best]) best = j;
            memset(row, 0, visible * sizeof *row);
            row[best] = 1;
        } else if (kind == WEIGHTS_LINEAR && visible > 0) {
            /* numerators φ(q_i)·φ(k_j) >= 0 over (their sum + eps); a zero denominator is
             * the empty row */
            double den = p->eps;
            for (size_t j = 0; j < visible; j++) {
                if (masked && la_mask_hides(p, hd, i0 + r, j)) row[j] = 0; /* key mask */
                den += (double)row[j];
            }
            if (den != 0) {
                for (size_t j = 0; j < visible; j++)
                    row[j] = (REAL)((double)row[j] / den);
            } else {
                memset(row, 0, visible * sizeof *row);
            }
        }
        if (visible < M) memset(row + visible, 0, (M - visible) * sizeof *row);
    }
}

/* The attention matrix of one normalization (contract in kernels.h; the kernel's causal
 * rule is la_attention_weights's to check):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), out: (B,H,N,M), row-major. */
static la_status FN(attention_weights)(weights_kind kind, const la_problem *p, const REAL *q,
                                       const REAL *k, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !out) return LA_EINVAL;
    /* general masks: softmax, hard and local both, linear the key mask (linattn.h) */
    if (kind == WEIGHTS_LINEAR && p->mask) return LA_EINVAL;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, heads = p->batch * p->heads;
    size_t per_head, total, q_count, k_count;
    if (!la_mul_ok(N, M, &per_head) || !la_mul_ok(per_head, heads, &total) ||
        !la_mul_ok(total, sizeof(REAL), &total))
        return LA_EOVERFLOW;
    /* q and k sizes fit: la_problem_check checked them */
    q_count = heads * N * dk, k_count = heads * M * dk;
    if (!weights_fit(kind, p, FN(max_abs)(q, q_count), FN(max_abs)(k, k_count), REAL_MAX))
        return LA_ERANGE;

    const size_t q_blocks = (N + ROWS - 1) / ROWS;
    size_t n_tasks;
    if (!la_mul_ok(heads, q_blocks, &n_tasks)) return LA_EOVERFLOW;
    int threads = la_threads();
    if ((size_t)threads > n_tasks) threads = (int)n_tasks;
    /* scratch per thread: φ(K) and φ(q_blk) (linear only), held against the limit */
    size_t per_thread = 0, scratch_bytes = 0;
    if (kind == WEIGHTS_LINEAR) {
        size_t rows_of_phi;
        if (!la_mul_ok(M + ROWS, dk, &rows_of_phi) ||
            !la_mul_ok(rows_of_phi, sizeof(REAL), &per_thread) ||
            !la_mul_ok(per_thread, (size_t)threads, &scratch_bytes))
            return LA_EOVERFLOW;
        if (scratch_bytes > p->workspace_limit) return LA_EBUDGET;
    }
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scratch = NULL;
    if (scratch_bytes > 0 && !(scratch = malloc(scratch_bytes))) return LA_ENOMEM;

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t t = 0; t < n_tasks; t++) {
        const size_t head = t / q_blocks, i0 = (t % q_blocks) * ROWS;
        const size_t rows = N - i0 < ROWS ? N - i0 : ROWS;
        REAL *phi =
            scratch ? scratch + (size_t)omp_get_thread_num() * (per_thread / sizeof(REAL)) : NULL;
        FN(weights_block)
        (kind, p, head, q + head * N * dk, k + head * M * dk, out + head * per_head, i0, rows, phi);
    }
    free(scratch);
    return LA_OK;
}
