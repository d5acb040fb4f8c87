/* conv1d_tmpl.h — the 1-D convolutional layer written once for both precisions. Not an
 * ordinary header: conv1d.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so the function below is static and
 * named FN(name); conv1d.c writes out the public la_conv1d_forward_* functions. */

/* y_i = Σ_t W_t x_{i+t−k/2} + b, 'same' zero padding, for B sequences.
 *   x, y: (B, N, d) row-major (y must not overlap x); w: (k, d, d), tap t's (d_out,
 *   d_in) matrix W_t row-major; b: (d).
 * Tasks are blocks of LA_SEQ_ROW_BLOCK output rows of one sequence (parallel, fixed
 * split). A block sets its rows to b, then adds tap t's contribution as one product:
 * Y[rows] += X[rows shifted by t − k/2] W_tᵀ over the rows whose shifted input lies in
 * the sequence (the padding's rows are simply not in the product). */
static la_status FN(conv1d_forward)(size_t batch, size_t n, size_t d, size_t width, const REAL *x,
                                    const REAL *w, const REAL *b, REAL *y)
{
    if (!x || !w || !b || !y) return LA_EINVAL;
    la_status st = la_conv1d_sizes(batch, n, d, width, sizeof(REAL));
    if (st != LA_OK) return st;
    const size_t per_seq = (n + LA_SEQ_ROW_BLOCK - 1) / LA_SEQ_ROW_BLOCK;
    size_t tasks;
    if (!la_mul_ok(batch, per_seq, &tasks)) return LA_EOVERFLOW;
    int threads = la_threads();
    if ((size_t)threads > tasks) threads = (int)tasks;
    if (threads < 1) threads = 1;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    const size_t half = width / 2;

#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t task = 0; task < tasks; task++) {
        const size_t s = task / per_seq, i0 = (task % per_seq) * LA_SEQ_ROW_BLOCK;
        const size_t i1 = n - i0 < LA_SEQ_ROW_BLOCK ? n : i0 + LA_SEQ_ROW_BLOCK;
        const REAL *xs = x + s * n * d;
        REAL *ys = y + s * n * d;
        /* rows i0 .. i1−1 of y = b */
        for (size_t i = i0; i < i1; i++)
            for (size_t c = 0; c < d; c++)
                ys[i * d + c] = b[c];
        /* tap t reads input row i + t − k/2: output rows lo .. hi−1 have it inside [0, N) */
        for (size_t t = 0; t < width; t++) {
            const size_t first = t < half ? half - t : 0; /* i + t >= k/2 */
            const size_t lo = i0 > first ? i0 : first;
            if (t >= n + half) break;        /* this tap and the later ones read past x's end */
            const size_t end = n + half - t; /* i + t − k/2 < N */
            const size_t hi = end < i1 ? end : i1;
            if (lo >= hi) continue;
            GEMM(hi - lo, d, d, 1, xs + (lo + t - half) * d, (ptrdiff_t)d, 1, w + t * d * d, 1,
                 (ptrdiff_t)d, 1, ys + lo * d, (ptrdiff_t)d, 1);
        }
    }
    return LA_OK;
}
