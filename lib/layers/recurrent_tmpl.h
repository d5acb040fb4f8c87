/* recurrent_tmpl.h — the recurrent (Elman) layer written once for both precisions.
 * Not an ordinary header: recurrent.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so the function below is static and
 * named FN(name); recurrent.c writes out the public la_rnn_forward_* functions. */

#if REAL_IS_F32
#define RNN_TANH tanhf
#else
#define RNN_TANH tanh
#endif

/* h_t = tanh(W_h h_{t−1} + W_x x_t + b), h_0 = 0, for B sequences at once.
 *   x, h: (B, N, d) row-major (h must not overlap x); w_x, w_h: (d, d) row-major;
 *   b: (d). Row vectors, so W x is x Wᵀ (BLIS reads Wᵀ through the strides).
 * The input projection does not depend on h, so it is one product over all B·N rows
 * (parallel, row blocks); the recurrence is N sequential steps, one (B, d) × (d, d)
 * product each (a matrix–vector product when B = 1), single-threaded: step t needs
 * step t − 1. */
static la_status FN(rnn_forward)(size_t batch, size_t n, size_t d, const REAL *x, const REAL *w_x,
                                 const REAL *w_h, const REAL *b, REAL *h)
{
    if (!x || !w_x || !w_h || !b || !h) return LA_EINVAL;
    la_status st = la_rnn_sizes(batch, n, d, sizeof(REAL));
    if (st != LA_OK) return st;
    const size_t rows = batch * n;
    const size_t blocks = (rows + LA_SEQ_ROW_BLOCK - 1) / LA_SEQ_ROW_BLOCK;
    int threads = la_threads();
    if ((size_t)threads > blocks) threads = (int)blocks;
    if (threads < 1) threads = 1;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;

        /* step 1: H = X W_xᵀ + b over all B·N rows (the part that needs no earlier step) */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t blk = 0; blk < blocks; blk++) {
        const size_t i0 = blk * LA_SEQ_ROW_BLOCK;
        const size_t m = rows - i0 < LA_SEQ_ROW_BLOCK ? rows - i0 : LA_SEQ_ROW_BLOCK;
        REAL *hb = h + i0 * d;
        for (size_t i = 0; i < m; i++)
            for (size_t c = 0; c < d; c++)
                hb[i * d + c] = b[c];
        GEMM(m, d, d, 1, x + i0 * d, (ptrdiff_t)d, 1, w_x, 1, (ptrdiff_t)d, 1, hb, (ptrdiff_t)d, 1);
    }

    /* step 2: the recurrence, t = 0 .. N−1: H_t (B rows, row stride N·d) += H_{t−1} W_hᵀ
     * (h_{−1} = 0: nothing to add at t = 0), then tanh */
    const ptrdiff_t ld = (ptrdiff_t)(n * d);
    for (size_t t = 0; t < n; t++) {
        REAL *ht = h + t * d;
        if (t > 0) GEMM(batch, d, d, 1, ht - d, ld, 1, w_h, 1, (ptrdiff_t)d, 1, ht, ld, 1);
        for (size_t s = 0; s < batch; s++)
            for (size_t c = 0; c < d; c++)
                ht[s * n * d + c] = RNN_TANH(ht[s * n * d + c]);
    }
    return LA_OK;
}

#undef RNN_TANH
