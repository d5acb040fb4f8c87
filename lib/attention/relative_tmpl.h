/* relative_tmpl.h — softmax attention with relative position representations, written once
 * for both precisions. Not an ordinary header: relative.c includes it after
 * core/real_f32.h and again after core/real_f64.h (the scheme is in real_f32.h), so every
 * function below is static and named FN(name); relative.c writes out the public la_*
 * functions.
 *
 * Shared by both instantiations and defined in relative.c before the includes: Q_ROWS,
 * draw_embeddings(), table_sizes(), distinct_distances(), distance_index(),
 * relative_layout_for(), relative_bytes(), relative_check(), relative_range_ok(). */

/* Σ_c x[c]·y[c] over n elements (vectorized: the order of the sum is fixed by the
 * compiled code, the same on every run and thread count). */
static REAL FN(relative_dot)(const REAL *x, const REAL *y, size_t n)
{
    REAL sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t c = 0; c < n; c++)
        sum += x[c] * y[c];
    return sum;
}

/* Query rows i0 .. i0+rows-1 of one head of an entry with m keys in length:
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   tk: a^K (2K+1, d_k), tv: a^V (2K+1, d_v);
 *   s: (M) scratch, the row's scores then weights; qa, w: (distinct_distances()) scratch,
 *   q_i·a^K and the summed weight of each distance the row meets. */
static void FN(relative_rows)(const la_problem *p, size_t m, const REAL *qh, const REAL *kh,
                              const REAL *vh, REAL *oh, const REAL *tk, const REAL *tv, size_t i0,
                              size_t rows, REAL *s, REAL *qa, REAL *w)
{
    const size_t dk = p->d_k, dv = p->d_v, K = p->max_distance;
    const REAL scale = (REAL)p->scale;
    for (size_t i = i0; i < i0 + rows; i++) {
        const REAL *qi = qh + i * dk;
        REAL *yi = oh + i * dv;
        memset(yi, 0, dv * sizeof *yi);
        const size_t seen = la_visible_keys_of(p, m, i); /* causal: j <= i + o */
        if (seen == 0) continue;                         /* no key: the zero row */
        /* the table rows the row meets, r_lo .. r_hi: q_i·a^K_r for each, weights 0 */
        const size_t r_lo = distance_index(i, 0, K), r_hi = distance_index(i, seen - 1, K);
        for (size_t r = r_lo; r <= r_hi; r++) {
            qa[r - r_lo] = FN(relative_dot)(qi, tk + r * dk, dk);
            w[r - r_lo] = 0;
        }
        /* e_ij = (q_i·k_j + q_i·a^K_δ)·scale, and the row max */
        REAL row_max = -INFINITY;
        for (size_t j = 0; j < seen; j++) {
            s[j] = (FN(relative_dot)(qi, kh + j * dk, dk) + qa[distance_index(i, j, K) - r_lo]) *
                   scale;
            row_max = s[j] > row_max ? s[j] : row_max;
        }
        /* α_ij ∝ exp(e_ij − max); y_i = Σ_j α_ij v_j + Σ_δ (Σ_{j at δ} α_ij) a^V_δ */
        REAL sum = 0;
        for (size_t j = 0; j < seen; j++) {
            const REAL a = EXP(s[j] - row_max);
            sum += a;
            w[distance_index(i, j, K) - r_lo] += a;
            const REAL *vj = vh + j * dv;
            for (size_t e = 0; e < dv; e++)
                yi[e] += a * vj[e];
        }
        for (size_t r = r_lo; r <= r_hi; r++) {
            const REAL a = w[r - r_lo];
            const REAL *tr = tv + r * dv;
            for (size_t e = 0; e < dv; e++)
                yi[e] += a * tr[e];
        }
        for (size_t e = 0; e < dv; e++)
            yi[e] /= sum;
    }
}

/* Relative-position softmax attention (contract in linattn.h). */
static la_status FN(relative_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                        const REAL *v, REAL *out)
{
    double ak_max, av_max;
    la_status st = relative_check(p, q, k, v, out, sizeof(REAL), &ak_max, &av_max);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, K = p->max_distance;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */
    /* the range rule: softmax's, with a^K beside the keys and a^V beside the values */
    const double a = FN(la_max_abs)(q, heads * N * dk);
    const double b = FN(la_max_abs)(k, heads * M * dk) + ak_max;
    const double c = FN(la_max_abs)(v, heads * M * dv) + av_max;
    if (!relative_range_ok(p, a, b, c, (double)REAL_MAX)) return LA_ERANGE;

    relative_layout lay;
    if (!relative_layout_for(p, sizeof(REAL), &lay)) return LA_EOVERFLOW;
    if (relative_bytes(&lay, sizeof(REAL)) > p->workspace_limit) return LA_EBUDGET;
    REAL *scratch = malloc(relative_bytes(&lay, sizeof(REAL)));
    if (!scratch) return LA_ENOMEM;
    /* the tables as this precision reads them: the caller's (float64), converted
     * (float32), or drawn from the seed */
    const size_t rows = 2 * K + 1, nk = rows * dk, nv = rows * dv;
    const REAL *tk, *tv;
    if (lay.tables == 0) {
        tk = (const REAL *)p->rel_k, tv = (const REAL *)p->rel_v; /* float64, given */
    } else {
        REAL *k_own = scratch, *v_own = scratch + nk;
        if (!p->rel_k)
            draw_embeddings(rows, dk, dv, p->seed, REAL_IS_F32 ? NULL : (double *)k_own,
                            REAL_IS_F32 ? NULL : (double *)v_own,
                            REAL_IS_F32 ? (float *)k_own : NULL,
                            REAL_IS_F32 ? (float *)v_own : NULL);
        else {
            for (size_t x = 0; x < nk; x++)
                k_own[x] = (REAL)p->rel_k[x];
            for (size_t x = 0; x < nv; x++)
                v_own[x] = (REAL)p->rel_v[x];
        }
        tk = k_own, tv = v_own;
    }
    const size_t blocks = (N + Q_ROWS - 1) / Q_ROWS, distances = distinct_distances(p);
#pragma omp parallel num_threads(lay.threads)
    {
        REAL *s = scratch + lay.tables + (size_t)omp_get_thread_num() * lay.per_thread;
        REAL *qa = s + M, *w = qa + distances;
#pragma omp for schedule(static)
        for (size_t task = 0; task < heads * blocks; task++) {
            const size_t bh = task / blocks, i0 = (task % blocks) * Q_ROWS;
            const size_t n_rows = N - i0 < Q_ROWS ? N - i0 : Q_ROWS;
            FN(relative_rows)
            (p, la_keys_in_length(p, bh / p->heads), q + bh * N * dk, k + bh * M * dk,
             v + bh * M * dv, out + bh * N * dv, tk, tv, i0, n_rows, s, qa, w);
        }
    }
    free(scratch);
    return LA_OK;
}
