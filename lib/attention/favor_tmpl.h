/* favor_tmpl.h — FAVOR+'s features and kernel written once for float and double. Not an
 * ordinary header: favor.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h); favor.c writes out the public functions.
 *
 * Shapes, per head (the problem holds B·H heads back to back):
 *   q: (N, d_k), k: (M, d_k), v: (M, d_v), out: (N, d_v), row-major;
 *   W: (m, d_k) row-major (float64 drawn, REAL used);
 *   φ(Q): (N, m), φ(K): (M, m), row-major, in the call's scratch. */

/* The exponential of the feature loops (N·m + M·m of them, the features' main cost):
 * float32 the branch-free polynomial of cpu/vexp.h, which the compiler vectorizes
 * (relative error 8.2e-8, 0 below −87.3; every argument here is at most 0), float64 libm's
 * exp (the accuracy path). */
#define FEXP(x) (REAL_IS_F32 ? (REAL)la_vexp_f32((float)(x)) : (REAL)exp((double)(x)))

/* The features of one head; false when a projection, ‖x‖² or a feature is not finite
 * (the inputs are beyond the element type, or not finite). With s = d_k^(−1/4),
 * proj = (s·x) Wᵀ (one product per side) and P the row's max of proj:
 *   queries, into phi_q (N, m): φ_il = exp((proj_il − P_i) − ln(m)/2). The query's own
 *     ‖x‖²/2 and max are common to its m features, so they cancel in y_i (they only
 *     rescale eps);
 *   keys (the u = keys_used rows of phi_k (M, m)): each key's largest exponent
 *     g_j = P_j − ‖x_j‖²/2, into pg: P (M) then g (M). Non-causal, μ = max g over the
 *     used keys and φ_jl = exp((proj_jl − P_j) − o_j), o_j = ln(m)/2 − (g_j − μ), at
 *     most 1/√m; causal, ψ_jl = exp((proj_jl − P_j) − ln(m)/2), which favor_causal_head
 *     weights by exp(g_j − μ_i) per query.
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
            row[l] = FEXP((row[l] - mx) - half_log_m);
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
    if (p->causal) {
        /* causal: ψ(k_j) = exp((proj − P_j) − ln(m)/2); the chunks apply exp(g_j − μ_i) */
        LA_COUNT(LA_COUNT_PHI, (double)u * 3 * (double)m);
        for (size_t j = 0; j < u; j++) {
            REAL *row = fk + j * m;
            for (size_t l = 0; l < m; l++)
                row[l] = FEXP((row[l] - P[j]) - half_log_m);
        }
        return finite;
    }

    /* non-causal: μ = max g over the used keys; φ(k_j) = exp((proj − P_j) − o_j) */
    LA_COUNT(LA_COUNT_PHI, (double)u * (3 + 3 * (double)m));
    REAL mu = -REAL_MAX;
    for (size_t j = 0; j < u; j++)
        mu = g[j] > mu ? g[j] : mu;
    for (size_t j = 0; j < u; j++) {
        const REAL o = half_log_m - (g[j] - mu);
        REAL *row = fk + j * m;
        for (size_t l = 0; l < m; l++)
            row[l] = FEXP((row[l] - P[j]) - o);
    }
    return finite;
}

/* Causal FAVOR+ of one head in chunks of C = min(p->chunk, N) tokens. With ψ(k_j) the
 * key's features stabilized by its own max (phi_k), g_j its largest exponent and μ_i the
 * running max of g over keys 0..i (the keys query i sees), query i's weights are
 *   a_ij = φ(q_i)·ψ(k_j) · exp(g_j − μ_i),  j <= i,
 * so no output depends on a later key, not even through rounding. Per chunk [c0, c0 + nq)
 * with keys [c0, c0 + nk) and the carried state S (m, d_v), z (m) of keys j < c0 at the
 * scale of μ, their running max (S = Σ ψ(k_j) exp(g_j − μ) v_jᵀ):
 *   μ_i for the chunk's queries (a running max over its keys);
 *   carried part (c0 > 0): y_i = r_i · φ(q_i)ᵀS, den_i = r_i · φ(q_i)·z, r_i = exp(μ − μ_i);
 *   intra-chunk: A = φ(Q_c) ψ(K_c)ᵀ (nq, nk), A_ij ·= exp(g_j − μ_i) for j <= i, 0 above;
 *     y += A V_c, den_i += Σ_j A_ij;
 *   y_i /= den_i + eps (0 for den_i = 0: the empty row);
 *   state (a later chunk exists): μ' = the chunk's last μ_i, S = S·exp(μ − μ') +
 *     ψ'ᵀ V_c, z likewise, ψ'_j = ψ(k_j) exp(g_j − μ'). Every factor is at most 1.
 * Scratch `mine`: S, z, A (C, C), μ_i and den_i (C each), ψ' (C, m). */
static void FN(favor_causal_head)(const la_problem *p, size_t hd, const REAL *phi_q,
                                  const REAL *phi_k, const REAL *pg, const REAL *v, REAL *out,
                                  REAL *mine)
{
    const size_t N = p->n_queries, M = p->n_keys, dv = p->d_v, m = p->features;
    const size_t u = keys_used(p, hd / p->heads), C = p->chunk < N ? p->chunk : N;
    const ptrdiff_t lm = (ptrdiff_t)m, lv = (ptrdiff_t)dv, lc = (ptrdiff_t)C;
    const REAL eps = (REAL)p->eps;
    const REAL *fq = phi_q + hd * N * m, *psi = phi_k + hd * M * m, *vh = v + hd * M * dv;
    const REAL *g = pg + hd * 2 * M + M;
    REAL *yh = out + hd * N * dv, *S = mine, *z = S + m * dv, *A = z + m;
    REAL *mu_i = A + C * C, *den = mu_i + C, *kt = den + C;
    if (u == 0) { /* no key visible: zero rows */
        memset(yh, 0, N * dv * sizeof *yh);
        return;
    }
    REAL mu = g[0]; /* the state's scale: the running max of g over the keys it holds */
    for (size_t c0 = 0; c0 < N; c0 += C) {
        const size_t nq = N - c0 < C ? N - c0 : C;
        const size_t nk = c0 < u ? (u - c0 < C ? u - c0 : C) : 0; /* nk <= nq */
        const REAL *fqc = fq + c0 * m, *vc = vh + c0 * dv;
        REAL *y = yh + c0 * dv;
        /* μ_i: the running max over the chunk's keys j <= i */
        LA_COUNT(LA_COUNT_PHI, nk);
        REAL run = mu;
        for (size_t i = 0; i < nq; i++) {
            if (i < nk) run = g[c0 + i] > run ? g[c0 + i] : run;
            mu_i[i] = run;
        }
        /* carried part: y_i = r_i φ(q_i)ᵀS, den_i = r_i φ(q_i)·z */
        if (c0 > 0) {
            LA_COUNT(LA_COUNT_QS,
                     (double)nq * (2 * (double)m * (double)dv + 2 * (double)m + (double)dv + 3));
            GEMM(nq, dv, m, 1, fqc, lm, 1, S, lv, 1, 0, y, lv, 1);
            for (size_t i = 0; i < nq; i++) {
                const REAL r = EXP(mu - mu_i[i]);
                den[i] = r * FN(la_dot)(fqc + i * m, z, m);
                for (size_t c = 0; c < dv; c++)
                    y[i * dv + c] *= r;
            }
        } else {
            for (size_t i = 0; i < nq; i++)
                den[i] = 0;
        }
        /* intra-chunk: A = φ(Q_c) ψ(K_c)ᵀ weighted by exp(g_j − μ_i), masked; y += A V_c */
        if (nk > 0) {
            GEMM(nq, nk, m, 1, fqc, lm, 1, psi + c0 * m, 1, lm, 0, A, lc, 1);
            for (size_t i = 0; i < nq; i++) {
                const size_t seen = i + 1 < nk ? i + 1 : nk;
                LA_COUNT(LA_COUNT_QK, (double)seen * (2 * (double)m + 3));  /* a_ij */
                LA_COUNT(LA_COUNT_AV, (double)seen * (2 * (double)dv + 1)); /* a_ij v_j, Σ */
                REAL row = 0;
                for (size_t j = 0; j < nk; j++) {
                    A[i * C + j] = j < seen ? A[i * C + j] * EXP(g[c0 + j] - mu_i[i]) : 0;
                    row += A[i * C + j];
                }
                den[i] += row;
            }
            GEMM(nq, dv, nk, 1, A, lc, 1, vc, lv, 1, c0 > 0 ? 1 : 0, y, lv, 1);
        }
        /* y_i /= den_i + eps */
        LA_COUNT(LA_COUNT_NORMALIZE, (double)nq * (1 + (double)dv));
        for (size_t i = 0; i < nq; i++) {
            const REAL d = den[i] + eps;
            for (size_t c = 0; c < dv; c++) /* d = 0: the empty row (linattn.h) */
                y[i * dv + c] = d == 0 ? 0 : y[i * dv + c] / d;
        }
        /* the state, for a later chunk: rescaled to μ', plus this chunk's keys */
        if (nk > 0 && c0 + C < N) {
            const REAL mu_new = mu_i[nk - 1];
            if (c0 > 0) {
                LA_COUNT(LA_COUNT_KV, (double)m * ((double)dv + 1) + 2);
                const REAL s = EXP(mu - mu_new);
                for (size_t a = 0; a < m * (dv + 1); a++)
                    S[a] *= s;
            }
            LA_COUNT(LA_COUNT_KV, (double)nk * (2 * (double)m * (double)dv + 2 * (double)m + 2));
            for (size_t j = 0; j < nk; j++) {
                const REAL f = EXP(g[c0 + j] - mu_new);
                for (size_t l = 0; l < m; l++)
                    kt[j * m + l] = psi[(c0 + j) * m + l] * f;
            }
            /* S (+)= ψ'ᵀ V_c (m, nk)·(nk, d_v), z (+)= Σ_j ψ'_j */
            GEMM(m, dv, nk, 1, kt, 1, lm, vc, lv, 1, c0 > 0 ? 1 : 0, S, lv, 1);
            for (size_t l = 0; l < m; l++) {
                REAL sum = 0;
                for (size_t j = 0; j < nk; j++)
                    sum += kt[j * m + l];
                z[l] = c0 > 0 ? z[l] + sum : sum;
            }
            mu = mu_new;
        }
    }
}

/* Causal FAVOR+ of one head, token by token: the chunked form's weights
 * a_ij = φ(q_i)·ψ(k_j)·exp(g_j − μ_i), j <= i, with the state S (m, d_v), z (m) held at
 * the scale of μ, the running max of g over the keys it holds (S = Σ ψ(k_j) exp(g_j − μ)
 * v_jᵀ). Token t: when its key is used (t < u), μ' = max(μ, g_t), the state rescaled by
 * exp(μ − μ') (at most 1; exactly 1 when g_t does not raise the max), ψ'_t = ψ(k_t)
 * exp(g_t − μ'), then la_linear_step_head (S += ψ'_t v_tᵀ, z += ψ'_t, y_t = φ(q_t)ᵀS /
 * (φ(q_t)·z + eps)); past u only the read (la_linear_read_query). So eps meets the
 * denominator at the chunked form's scale, μ_t = μ'. Scratch `mine`: S, z, ψ' (m). */
static void FN(favor_recurrent_head)(const la_problem *p, size_t hd, const REAL *phi_q,
                                     const REAL *phi_k, const REAL *pg, const REAL *v, REAL *out,
                                     REAL *mine)
{
    const size_t N = p->n_queries, M = p->n_keys, dv = p->d_v, m = p->features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL eps = (REAL)p->eps;
    const REAL *fq = phi_q + hd * N * m, *psi = phi_k + hd * M * m, *vh = v + hd * M * dv;
    const REAL *g = pg + hd * 2 * M + M;
    REAL *yh = out + hd * N * dv, *S = mine, *z = S + m * dv, *kt = z + m;
    if (u == 0) { /* no key visible: zero rows */
        memset(yh, 0, N * dv * sizeof *yh);
        return;
    }
    for (size_t a = 0; a < m * (dv + 1); a++) /* S, then z */
        S[a] = 0;
    REAL mu = g[0];
    for (size_t t = 0; t < N; t++) {
        if (t >= u) { /* no key left to add: y_t = φ(q_t)ᵀS / (φ(q_t)·z + eps) */
            FN(la_linear_read_query)(S, z, fq + t * m, eps, yh + t * dv, m, dv);
            continue;
        }
        LA_COUNT(LA_COUNT_PHI, 1); /* the running max */
        const REAL mu_new = g[t] > mu ? g[t] : mu;
        if (t > 0) { /* the state to the scale of μ' */
            LA_COUNT(LA_COUNT_KV, (double)m * ((double)dv + 1) + 2);
            const REAL s = EXP(mu - mu_new);
            for (size_t a = 0; a < m * (dv + 1); a++)
                S[a] *= s;
        }
        LA_COUNT(LA_COUNT_KV, (double)m + 2);
        const REAL f = EXP(g[t] - mu_new);
        for (size_t l = 0; l < m; l++)
            kt[l] = psi[t * m + l] * f;
        mu = mu_new;
        FN(la_linear_step_head)(S, z, kt, vh + t * dv, fq + t * m, eps, yh + t * dv, m, dv);
    }
}

/* FAVOR+ attention: W drawn from p->seed (the same for every head and both precisions),
 * the features of every head (favor_head_features, one head per task), then non-causal
 * linear attention on them with d_k = m, or causal in chunks (favor_causal_head), or,
 * `recurrent` (p->causal required), token by token (favor_recurrent_head).
 * Scratch: favor_layout. */
static la_status FN(favor_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                     const REAL *v, REAL *out, bool recurrent)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || (recurrent && !p->causal)) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    favor_layout lay;
    st = favor_layout_for(p, sizeof(REAL), recurrent, &lay);
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
    } else if (recurrent) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < heads; hd++)
            FN(favor_recurrent_head)
        (p, hd, phi_q, phi_k, pg, v, out,
         per_thread + (size_t)omp_get_thread_num() * lay.causal_per_thread);
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

/* One token of a FAVOR+ state (la_favor_state_create), every head h: the features as
 * favor_head_features forms them, one row each (proj = s·x Wᵀ, P its max; φ(q) =
 * exp((proj − P) − ln(m)/2), ψ(k) likewise, g = P − ‖s·k‖²/2), then favor_recurrent_head's
 * step: μ' = g at the first token, else max(μ, g) with the state rescaled by exp(μ − μ');
 * ψ' = ψ·exp(g − μ'), S += ψ' vᵀ, z += ψ', y = φ(q)ᵀS / (φ(q)·z + eps). Every head's
 * features are formed and checked before the state changes. The range rule: ψ' <= 1/√m
 * and every rescaling factor <= 1, so |S| grows by at most c = max|v_t| and z by at most
 * 1 per token, and φ(q)ᵀS by at most m·|S|: a token is refused (LA_ERANGE) when
 * s + c, z + 1 or m·max(s + c, z + 1) passes T/8, or a projection or g is not finite.
 *   q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v); W: (m, d_k); state layout in
 *   linear_internal.h. */
static la_status FN(favor_step)(la_linear_state *st, const REAL *q_t, const REAL *k_t,
                                const REAL *v_t, REAL *y_t)
{
    if (!st || !q_t || !k_t || !v_t || !y_t || st->dtype != REAL_DTYPE || !st->w) return LA_EINVAL;
    const size_t H = st->heads, dk = st->d_k, dv = st->d_v, m = st->width;
    const REAL s = (REAL)pow((double)dk, -0.25), half_sq = (REAL)(0.5 / sqrt((double)dk));
    const REAL half_log_m = (REAL)(0.5 * log((double)m)), eps = (REAL)st->eps;
    const REAL *w = st->w;
    REAL *S = st->S, *z = S + H * m * dv, *mu = z + H * m;
    REAL *fq = st->phi, *fk = fq + H * m, *g = fk + H * m;

    /* the range rule, then every head's features, before anything changes */
    const double c = FN(la_max_abs)(v_t, H * dv), limit = (double)REAL_MAX / 8;
    const double s_new = st->s_bound + c, z_new = st->z_bound + 1;
    if (!(s_new <= limit && z_new <= limit && (double)m * fmax(s_new, z_new) <= limit))
        return LA_ERANGE;
    bool finite = true;
    for (size_t h = 0; h < H; h++) {
        const REAL *qh = q_t + h * dk, *kh = k_t + h * dk;
        REAL *rq = fq + h * m, *rk = fk + h * m, pq = -REAL_MAX, pk = -REAL_MAX;
        for (size_t l = 0; l < m; l++) {
            rq[l] = s * FN(la_dot)(qh, w + l * dk, dk);
            rk[l] = s * FN(la_dot)(kh, w + l * dk, dk);
            finite &= (rq[l] < 0 ? -rq[l] : rq[l]) <= REAL_MAX; /* false for inf, NaN */
            finite &= (rk[l] < 0 ? -rk[l] : rk[l]) <= REAL_MAX;
            pq = rq[l] > pq ? rq[l] : pq;
            pk = rk[l] > pk ? rk[l] : pk;
        }
        g[h] = pk - FN(la_dot)(kh, kh, dk) * half_sq;
        finite &= g[h] >= -REAL_MAX; /* false for -inf (‖x‖² beyond the type) and NaN */
        for (size_t l = 0; l < m; l++) {
            rq[l] = FEXP((rq[l] - pq) - half_log_m);
            rk[l] = FEXP((rk[l] - pk) - half_log_m);
        }
    }
    if (!finite) return LA_ERANGE;

    for (size_t h = 0; h < H; h++) {
        REAL *Sh = S + h * m * dv, *zh = z + h * m, *kt = fk + h * m;
        const REAL mu_new = st->position == 0 || g[h] > mu[h] ? g[h] : mu[h];
        if (st->position > 0) { /* the state to the scale of μ' */
            const REAL r = EXP(mu[h] - mu_new);
            for (size_t a = 0; a < m * dv; a++)
                Sh[a] *= r;
            for (size_t l = 0; l < m; l++)
                zh[l] *= r;
        }
        const REAL f = EXP(g[h] - mu_new);
        for (size_t l = 0; l < m; l++)
            kt[l] *= f;
        mu[h] = mu_new;
        FN(la_linear_step_head)(Sh, zh, kt, v_t + h * dv, fq + h * m, eps, y_t + h * dv, m, dv);
    }
    st->s_bound = s_new;
    st->z_bound = z_new;
    st->position++;
    return LA_OK;
}

#undef FEXP
