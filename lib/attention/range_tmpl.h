/* range_tmpl.h — range.c's scan and check, written once for both precisions; range.c
 * includes it after core/real_f32.h and again after core/real_f64.h (the scheme is in
 * real_f32.h). Uses fits() from range.c. */

/* The largest |x[i]| bits over n elements (|x| orders like its bits with the sign
 * cleared): an integer max the compiler vectorizes, as a plain loop of its own (inside an
 * OpenMP `parallel for simd` gcc 12 ran it one element at a time). */
static REAL_BITS FN(max_abs_bits)(const REAL *x, size_t n)
{
    REAL_BITS m = 0;
    for (size_t i = 0; i < n; i++) {
        REAL_BITS bits;
        memcpy(&bits, &x[i], sizeof bits);
        bits &= ~(REAL_BITS)0 >> 1;
        m = bits > m ? bits : m;
    }
    return m;
}

/* max |x[i]| over n elements; +inf when one is not finite. Above 2^18 elements the
 * threads take a slice each. Also the backward passes' scan (attention_internal.h). */
double FN(la_max_abs)(const REAL *x, size_t n)
{
    LA_COUNT(LA_COUNT_RANGE_READ, n);
    REAL_BITS m = 0;
    const size_t threads = n > ((size_t)1 << 18) ? (size_t)la_threads() : 1;
    if (threads == 1) {
        m = FN(max_abs_bits)(x, n);
    } else {
#pragma omp parallel for schedule(static) reduction(max : m) num_threads((int)threads)
        for (size_t t = 0; t < threads; t++) {
            const size_t lo = n / threads * t, hi = t + 1 == threads ? n : n / threads * (t + 1);
            const REAL_BITS mt = FN(max_abs_bits)(x + lo, hi - lo);
            m = mt > m ? mt : m;
        }
    }
    REAL f;
    memcpy(&f, &m, sizeof f);
    return isfinite(f) ? (double)f : INFINITY;
}

double FN(la_max_abs_seen)(const la_problem *p, const REAL *x, size_t d)
{
    const size_t M = p->n_keys, H = p->heads;
    double m = 0;
    for (size_t b = 0; b < p->batch;) {
        /* a run of entries whose every key is seen: their heads in one scan */
        size_t e = b;
        while (e < p->batch && la_keys_seen(p, e) == M)
            e++;
        if (e > b) {
            m = fmax(m, FN(la_max_abs)(x + b * H * M * d, (e - b) * H * M * d));
            b = e;
            continue;
        }
        const size_t seen = la_keys_seen(p, b);
        for (size_t h = 0; seen > 0 && h < H; h++)
            m = fmax(m, FN(la_max_abs)(x + (b * H + h) * M * d, seen * d));
        b++;
    }
    return m;
}

/* max |x| over rows [0, n) of head hd of a (B, H, rows, d) array laid out as *s (not all
 * zero), as bits: one scan when the head's rows lie d apart, else one per row. */
static REAL_BITS FN(head_bits)(const la_problem *p, const la_strides *s, const REAL *x, size_t hd,
                               size_t n, size_t d)
{
    const REAL *xh = x + hd / p->heads * s->batch + hd % p->heads * s->head;
    if (n <= 1 || s->row == d) return FN(max_abs_bits)(xh, n * d);
    REAL_BITS m = 0;
    for (size_t r = 0; r < n; r++) {
        const REAL_BITS mr = FN(max_abs_bits)(xh + r * s->row, d);
        m = mr > m ? mr : m;
    }
    return m;
}

/* max |x| over a (B, H, rows, d) array laid out as *s (not all zero): every row, or with
 * `seen` the keys seen of each entry (la_keys_seen); +inf when one is not finite. One scan
 * per entry for PyTorch's (B, N, H, d), else per head; above 2^18 elements the threads
 * share the heads (la_max_abs: the scan). */
static double FN(max_abs_strided)(const la_problem *p, const la_strides *s, const REAL *x,
                                  size_t rows, size_t d, bool seen)
{
    const size_t H = p->heads, heads = p->batch * H;
    if (H > 1 && s->head == d && s->row == H * d) {
        double m = 0; /* PyTorch's (B, N, H, d): an entry's first n rows lie back to back */
        for (size_t b = 0; b < p->batch; b++) {
            const size_t n = seen ? la_keys_seen(p, b) : rows;
            m = fmax(m, FN(la_max_abs)(x + b * s->batch, n * H * d));
        }
        return m;
    }
    const int threads = heads > 1 && heads * rows * d > ((size_t)1 << 18) ? la_threads() : 1;
    REAL_BITS m = 0;
    size_t read = 0;
#pragma omp parallel for schedule(static) reduction(max : m) reduction(+ : read) num_threads(threads) \
    if (threads > 1)
    for (size_t hd = 0; hd < heads; hd++) {
        const size_t n = seen ? la_keys_seen(p, hd / p->heads) : rows;
        const REAL_BITS mh = FN(head_bits)(p, s, x, hd, n, d);
        m = mh > m ? mh : m;
        read += n * d;
    }
    LA_COUNT(LA_COUNT_RANGE_READ, read);
    (void)read;
    REAL f;
    memcpy(&f, &m, sizeof f);
    return isfinite(f) ? (double)f : INFINITY;
}

double FN(la_max_abs_layout)(const la_problem *p, const la_strides *s, const REAL *x, size_t rows,
                             size_t d)
{
    if (la_strides_contiguous(s)) return FN(la_max_abs)(x, p->batch * p->heads * rows * d);
    return FN(max_abs_strided)(p, s, x, rows, d, false);
}

/* la_max_abs_seen on an array laid out as *s. */
static double FN(max_abs_seen_layout)(const la_problem *p, const la_strides *s, const REAL *x,
                                      size_t d)
{
    if (la_strides_contiguous(s)) return FN(la_max_abs_seen)(p, x, d);
    return FN(max_abs_strided)(p, s, x, p->n_keys, d, true);
}

bool FN(la_range_ok)(la_range_kind kind, const la_problem *p, const REAL *q, const REAL *k,
                     const REAL *v)
{
    const double a = FN(la_max_abs_layout)(p, &p->stride_q, q, p->n_queries, p->d_k);
    const double b = FN(max_abs_seen_layout)(p, &p->stride_k, k, p->d_k);
    const double c =
        kind == LA_RANGE_HARD ? 0 : FN(max_abs_seen_layout)(p, &p->stride_v, v, p->d_v);
    return fits(kind, p, a, b, c, REAL_MAX);
}

bool FN(la_range_fits)(la_range_kind kind, const la_problem *p, double a, double b, double c)
{
    return fits(kind, p, a, b, c, REAL_MAX);
}

double FN(la_range_linear_backward_limit)(const la_problem *p, const REAL *q, const REAL *k,
                                          const REAL *v, const REAL *out, const REAL *d_out)
{
    const size_t heads = p->batch * p->heads;
    const double a = FN(la_max_abs)(q, heads * p->n_queries * p->d_k);
    const double b = FN(la_max_abs_seen)(p, k, p->d_k);
    const double c = FN(la_max_abs_seen)(p, v, p->d_v);
    const double d = FN(la_max_abs)(d_out, heads * p->n_queries * p->d_v);
    const double w = FN(la_max_abs)(out, heads * p->n_queries * p->d_v);
    return linear_backward_limit(p, a, b, c, d, w, REAL_MAX);
}
