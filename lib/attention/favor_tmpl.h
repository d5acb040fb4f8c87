/* favor_tmpl.h — FAVOR+'s features and kernel written once for float and double. Not an
 * ordinary header: favor.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h); favor.c writes out the public functions.
 *
 * Shapes, per head (the problem holds B·H heads back to back):
 *   q: (N, d_k), k: (M, d_k), v: (M, d_v), out: (N, d_v), row-major;
 *   W: (m, d_k) row-major (float64 drawn, REAL used);
 *   φ(Q): (N, m), φ(K): (M, m), row-major, in the call's scratch. */

/* The features of one head; false when a projection, ‖x‖² or a feature is not finite
 * (the inputs are beyond the element type, or not finite). With s = d_k^(−1/4),
 * proj = (s·x) Wᵀ (one product per side) and P the row's max of proj:
 *   queries, into phi_q (N, m): φ_il = exp((proj_il − P_i) − ln(m)/2). The query's own
 *     ‖x‖²/2 and max are common to its m features, so they cancel in y_i (they only
 *     rescale eps);
 *   keys (the u = keys_used rows of phi_k (M, m)): each key's largest exponent
 *     g_j = P_j − ‖x_j‖²/2, into pg: P (M) then g (M). Non-causal, μ = max g over the
 *     used keys and φ_jl = exp((proj_jl − P_j) − o_j), o_j = ln(m)/2 − (g_j − μ), at
 *     most 1/√m; causal, phi_k keeps proj: favor_causal exponentiates each key against
 *     the running max of g at its step.
 * P is subtracted first: ‖x‖²/2, P + ln(m)/2 or anything else much larger than the spread
 * of a row's projections never meets them in one operation, which would round them away;
 * ‖x‖²/2 enters each key's one offset g_j − μ only. Rows of phi_k at and past u: zeros. */
static bool FN(favor_head_features)(const la_problem *p, const REAL *w, size_t hd, const REAL *q,
                                    const REAL *k, REAL *phi_q, REAL *phi_k, REAL *pg)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, m = p->features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL s = (REAL)pow((double)dk, -0.25), half_sq = (REAL)(0.5 / sqrt((double)dk));
    const REAL half_log_m = (REAL)(0.5 * log((double)m));
    const REAL *qh = q + hd * N * dk, *kh = k + hd * M * dk;
    REAL *fq = phi_q + hd * N * m, *fk = phi_k + hd * M * m;
    REAL *P = pg + hd * 2 * M, *g = P + M;
    bool finite = true;
    /* rows no query reads, zeroed (linear attention's range check reads every row) */
    memset(fk + u * m, 0, (M - u) * m * sizeof *fk);
    if (u == 0) return true; /* no query sees a key: zero rows, no features needed */

    /* queries: proj = s·Q Wᵀ (N, d_k)·(d_k, m), then per row exp((proj − P) − ln(m)/2) */
    LA_COUNT(LA_COUNT_PHI, 2 * (double)N * (double)m * (double)dk);
    GEMM(N, m, dk, s, qh, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)dk, 0, fq, (ptrdiff_t)m, 1);
    LA_COUNT(LA_COUNT_PHI, (double)N * 4 * (double)m);
    for (size_t i = 0; i < N; i++) {
        REAL *row = fq + i * m, mx = -REAL_MAX;
        for (size_t l = 0; l < m; l++) {
            finite &= (row[l] < 0 ? -row[l] : row[l]) <= REAL_MAX; /* false for inf, NaN */
            mx = row[l] > mx ? row[l] : mx;
        }
        for (size_t l = 0; l < m; l++)
            row[l] = EXP((row[l] - mx) - half_log_m);
    }

    /* keys: proj = s·K Wᵀ (u, d_k)·(d_k, m); P_j, and g_j = P_j − s²·(k·k)/2 */
    LA_COUNT(LA_COUNT_PHI, 2 * (double)u * (double)m * (double)dk);
    GEMM(u, m, dk, s, kh, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)dk, 0, fk, (ptrdiff_t)m, 1);
    LA_COUNT(LA_COUNT_PHI, (double)u * (2 * (double)dk + 2 + (double)m));
    for (size_t j = 0; j < u; j++) {
        const REAL *row = fk + j * m;
        REAL mx = -REAL_MAX;
        for (size_t l = 0; l < m; l++) {
            finite &= (row[l] < 0 ? -row[l] : row[l]) <= REAL_MAX; /* false for inf, NaN */
            mx = row[l] > mx ? row[l] : mx;
        }
        const REAL h = FN(la_dot)(kh + j * dk, kh + j * dk, dk) * half_sq;
        P[j] = mx;
        g[j] = mx - h;
        finite &= g[j] >= -REAL_MAX; /* false for -inf (‖x‖² beyond the type) and NaN */
    }
    if (p->causal) return finite;

    /* non-causal: μ = max g over the used keys; φ(k_j) = exp((proj − P_j) − o_j) */
    LA_COUNT(LA_COUNT_PHI, (double)u * (3 + 3 * (double)m));
    REAL mu = -REAL_MAX;
    for (size_t j = 0; j < u; j++)
        mu = g[j] > mu ? g[j] : mu;
    for (size_t j = 0; j < u; j++) {
        const REAL o = half_log_m - (g[j] - mu);
        REAL *row = fk + j * m;
        for (size_t l = 0; l < m; l++)
            row[l] = EXP((row[l] - P[j]) - o);
    }
    return finite;
}

/* Causal FAVOR+ of one head, token by token, with the keys' stabiliser a running max
 * (as online softmax keeps one): μ_t = max g over the keys added so far. Per token t:
 *   if t < u: when g_t > μ, S and z are scaled by exp(μ − g_t) (at most 1) and μ = g_t;
 *     φ(k_t) = exp((proj_t − P_t) − o_t), o_t = ln(m)/2 − (g_t − μ) (at most 1/√m), then
 *     la_linear_step_head: S += φ(k_t) v_tᵀ, z += φ(k_t), y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps);
 *   else: y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps) (no key left to add).
 * Query t's output depends on keys j <= t only, bit for bit. S (m, d_v), z (m) and
 * φ(k_t) (m) in `mine`. The rescaling is the stabiliser's bookkeeping, not counted (like
 * the fused softmax's). */
static void FN(favor_causal_head)(const la_problem *p, size_t hd, const REAL *phi_q,
                                  const REAL *phi_k, const REAL *pg, const REAL *v, REAL *out,
                                  REAL *mine)
{
    const size_t N = p->n_queries, M = p->n_keys, dv = p->d_v, m = p->features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL half_log_m = (REAL)(0.5 * log((double)m)), eps = (REAL)p->eps;
    const REAL *fq = phi_q + hd * N * m, *proj = phi_k + hd * M * m, *vh = v + hd * M * dv;
    const REAL *P = pg + hd * 2 * M, *g = P + M;
    REAL *yh = out + hd * N * dv, *S = mine, *z = S + m * dv, *fk = z + m;
    if (u == 0) { /* no key visible: zero rows */
        memset(yh, 0, N * dv * sizeof *yh);
        return;
    }
    memset(S, 0, m * (dv + 1) * sizeof *S);
    REAL mu = g[0];
    for (size_t t = 0; t < N; t++) {
        if (t >= u) {
            FN(la_linear_read_query)(S, z, fq + t * m, eps, yh + t * dv, m, dv);
            continue;
        }
        LA_COUNT(LA_COUNT_PHI, 3 + 3 * (double)m); /* the max, o_t, φ(k_t) */
        if (g[t] > mu) {
            const REAL r = EXP(mu - g[t]);
            for (size_t a = 0; a < m * (dv + 1); a++)
                S[a] *= r;
            mu = g[t];
        }
        const REAL o = half_log_m - (g[t] - mu);
        for (size_t l = 0; l < m; l++)
            fk[l] = EXP((proj[t * m + l] - P[t]) - o);
        FN(la_linear_step_head)(S, z, fk, vh + t * dv, fq + t * m, eps, yh + t * dv, m, dv);
    }
}

/* FAVOR+ attention: W drawn from p->seed (the same for every head and both precisions),
 * the features of every head (favor_head_features, one head per task), then non-causal
 * linear attention on them with d_k = m, or causal the recurrence favor_causal_head.
 * Scratch: favor_layout. */
static la_status FN(favor_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                     const REAL *v, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    favor_layout lay;
    st = favor_layout_for(p, sizeof(REAL), &lay);
    if (st != LA_OK) return st;
    if (lay.total_bytes > p->workspace_limit) return LA_EBUDGET;
    const size_t m = p->features, dk = p->d_k, heads = p->batch * p->heads;
    if (p->causal) {
        /* every value the recurrence forms is at most m·M·max|v| (φ <= 1/√m, weights
         * at most 1): refuse where that passes T/8 (and v not finite) */
        const double c = FN(la_max_abs)(v, heads * p->n_keys * p->d_v);
        if (!((double)m * (double)p->n_keys * (c > 1 ? c : 1) <= (double)REAL_MAX / 8))
            return LA_ERANGE;
    }
    if (la_gemm_reserve(la_threads()) != LA_OK) return LA_ENOMEM;
    double *w64 = malloc(lay.w_bytes);
    REAL *phi = malloc(lay.scratch_elems * sizeof(REAL));
    if (!w64 || !phi) {
        free(w64);
        free(phi);
        return LA_ENOMEM;
    }
    la_favor_features(m, dk, p->seed, w64);
    const REAL *w = (const REAL *)w64;
    if (REAL_IS_F32) { /* the float copy, after the float64 draw */
        REAL *w32 = (REAL *)(w64 + m * dk);
        for (size_t x = 0; x < m * dk; x++)
            w32[x] = (REAL)w64[x];
        w = w32;
    }
    REAL *phi_q = phi, *phi_k = phi + lay.phi_q_elems, *pg = phi_k + lay.phi_k_elems;
    REAL *per_thread = pg + lay.pg_elems;
    const int threads = (int)lay.threads;
    bool finite = true;
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(&& : finite)
    for (size_t hd = 0; hd < heads; hd++)
        finite = FN(favor_head_features)(p, w, hd, q, k, phi_q, phi_k, pg) && finite;
    if (!finite) {
        st = LA_ERANGE;
    } else if (p->causal) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < heads; hd++)
            FN(favor_causal_head)
        (p, hd, phi_q, phi_k, pg, v, out,
         per_thread + (size_t)omp_get_thread_num() * lay.causal_per_thread);
    } else {
        la_problem inner = lay.inner;
        inner.workspace_limit = p->workspace_limit - lay.own_bytes;
        st = FN(la_linear_attention_on_features)(&inner, phi_q, phi_k, v, out);
    }
    free(w64);
    free(phi);
    return st;
}
