/* align_tmpl.h — bottom-right causal problems run as square top-left ones, written once
 * for both precisions (align.c includes it after core/real_f32.h and core/real_f64.h;
 * the scheme is in real_f32.h). */

/* Copies rows of (B·H, rows_from, cols) into (B·H, rows_to, cols): row r of the target is
 * row r − shift of the source when that exists, else zeros. */
static void FN(shift_rows)(size_t heads, const REAL *from, size_t rows_from, REAL *to,
                           size_t rows_to, size_t cols, ptrdiff_t shift)
{
    for (size_t hd = 0; hd < heads; hd++) {
        const REAL *fh = from + hd * rows_from * cols;
        REAL *th = to + hd * rows_to * cols;
        for (size_t r = 0; r < rows_to; r++) {
            const ptrdiff_t src = (ptrdiff_t)r - shift;
            if (src >= 0 && (size_t)src < rows_from)
                memcpy(th + r * cols, fh + (size_t)src * cols, cols * sizeof(REAL));
            else
                memset(th + r * cols, 0, cols * sizeof(REAL));
        }
    }
}

/* The square problem sq (N = M, top-left) and one buffer of (B·H, M, cols_total) elements
 * for its padded rows, held against p->workspace_limit (sq's limit is what remains). */
static la_status FN(square_alloc)(const la_problem *p, la_problem *sq, size_t cols_total,
                                  REAL **buf)
{
    size_t n, bytes;
    if (!la_mul_ok(p->batch * p->heads, p->n_keys, &n) || !la_mul_ok(n, cols_total, &n) ||
        !la_mul_ok(n, sizeof(REAL), &bytes))
        return LA_EOVERFLOW;
    if (bytes > p->workspace_limit) return LA_EBUDGET;
    *sq = *p;
    sq->n_queries = p->n_keys;
    sq->causal_align = LA_CAUSAL_TOP_LEFT;
    sq->workspace_limit = p->workspace_limit - bytes; /* the kernel's own, within the limit */
    *buf = malloc(bytes);
    return *buf ? LA_OK : LA_ENOMEM;
}

/* The forward: q padded to (B,H,M,d_k), its row i + o query i (o = M − N; rows with no
 * query zero), the kernel run on the square problem, out's row i its row i + o (zeros when
 * i + o < 0: the query sees no key). */
static la_status FN(square_forward)(const la_problem *p,
                                    la_status (*fn)(const la_problem *, const REAL *, const REAL *,
                                                    const REAL *, REAL *),
                                    const REAL *q, const REAL *k, const REAL *v, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    const ptrdiff_t o = la_causal_offset(p);
    la_problem sq;
    REAL *buf = NULL;
    st = FN(square_alloc)(p, &sq, p->d_k + p->d_v, &buf);
    if (st != LA_OK) return st;
    REAL *q_sq = buf, *out_sq = buf + heads * M * p->d_k;
    FN(shift_rows)(heads, q, N, q_sq, M, p->d_k, o);
    st = fn(&sq, q_sq, k, v, out_sq);
    if (st == LA_OK) FN(shift_rows)(heads, out_sq, M, out, N, p->d_v, -o);
    free(buf);
    return st;
}

/* The backward: q, out and d_out padded as the forward pads q (the padding rows' d_out
 * zero, so they add nothing to any gradient), d_k and d_v written by the kernel, d_q's
 * rows taken back as out's. */
static la_status FN(square_backward)(const la_problem *p,
                                     la_status (*fn)(const la_problem *, const REAL *, const REAL *,
                                                     const REAL *, const REAL *, const REAL *,
                                                     REAL *, REAL *, REAL *),
                                     const REAL *q, const REAL *k, const REAL *v, const REAL *out,
                                     const REAL *d_out, REAL *d_q, REAL *d_k, REAL *d_v)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || !d_out || !d_q || !d_k || !d_v) return LA_EINVAL;
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    const size_t dk = p->d_k, dv = p->d_v;
    const ptrdiff_t o = la_causal_offset(p);
    la_problem sq;
    REAL *buf = NULL;
    st = FN(square_alloc)(p, &sq, 2 * dk + 2 * dv, &buf);
    if (st != LA_OK) return st;
    REAL *q_sq = buf, *dq_sq = q_sq + heads * M * dk, *out_sq = dq_sq + heads * M * dk;
    REAL *dout_sq = out_sq + heads * M * dv;
    FN(shift_rows)(heads, q, N, q_sq, M, dk, o);
    FN(shift_rows)(heads, out, N, out_sq, M, dv, o);
    FN(shift_rows)(heads, d_out, N, dout_sq, M, dv, o);
    st = fn(&sq, q_sq, k, v, out_sq, dout_sq, dq_sq, d_k, d_v);
    if (st == LA_OK) FN(shift_rows)(heads, dq_sq, M, d_q, N, dk, -o);
    free(buf);
    return st;
}
