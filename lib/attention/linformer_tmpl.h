/* linformer_tmpl.h — the Linformer kernel, written once for both precisions. Not an
 * ordinary header: linformer.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so the function below is static and named
 * FN(linformer_attention); linformer.c writes out the public la_* functions.
 *
 * Shared by both instantiations and defined in linformer.c before the includes:
 * draw_projections(), finite_max_abs(), linformer_layout_for(), linformer_check(),
 * inner_problem(). */

/* Linformer attention (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   E = p->proj_e, F = p->proj_f: (k, M) row-major float64, or drawn from p->seed.
 * Every head's K' = E·K and V' = F·V first, into one (B,H,k,d) pair of buffers, one BLIS
 * product per (head, matrix) on the OpenMP threads (fixed sizes: the same bits on any
 * thread count); then the fused softmax kernel once over (Q, K', V'), in parallel itself. */
static la_status FN(linformer_attention)(const la_problem *p, const REAL *q, const REAL *k,
                                         const REAL *v, REAL *out)
{
    la_status st = linformer_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t M = p->n_keys, r = p->proj_rank, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */

    /* the range rule: given projections finite, and the projected entries, at most
     * M·max|E|·max|K| (M·max|F|·max|V|), within T/8; inputs holding inf or NaN pass, as
     * the other kernels' scans let them (their outputs are not finite either) */
    double e_max = 0, f_max = 0;
    if (p->proj_e &&
        (!finite_max_abs(p->proj_e, r * M, &e_max) || !finite_max_abs(p->proj_f, r * M, &f_max)))
        return LA_EINVAL;
    if (!p->proj_e) e_max = f_max = 9 / sqrt((double)r); /* a drawn |z| is below 8.6 */
    const double k_max = FN(la_max_abs)(k, heads * M * dk);
    const double v_max = FN(la_max_abs)(v, heads * M * dv);
    const double limit = (double)REAL_MAX / 8;
    if (e_max > limit || f_max > limit || (isfinite(k_max) && (double)M * e_max * k_max > limit) ||
        (isfinite(v_max) && (double)M * f_max * v_max > limit))
        return LA_ERANGE;

    /* scratch: the projections as this precision reads them, then K' and V' */
    linformer_layout lay;
    if ((st = linformer_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scratch = aligned_alloc(64, (held + 63) / 64 * 64);
    if (!scratch) return LA_ENOMEM;
    REAL *kp = scratch + lay.proj, *vp = kp + lay.kp;

    /* E and F as this precision reads them: the caller's (float64), converted (float32),
     * or drawn from the seed */
    const REAL *e, *f;
    if (lay.proj == 0) {
        e = (const REAL *)p->proj_e, f = (const REAL *)p->proj_f; /* float64, given */
    } else {
        REAL *e_own = scratch, *f_own = scratch + r * M;
        if (!p->proj_e)
            draw_projections(r, M, p->seed, REAL_IS_F32 ? NULL : (double *)e_own,
                             REAL_IS_F32 ? NULL : (double *)f_own,
                             REAL_IS_F32 ? (float *)e_own : NULL,
                             REAL_IS_F32 ? (float *)f_own : NULL);
        else
            for (size_t x = 0; x < r * M; x++) {
                e_own[x] = (REAL)p->proj_e[x];
                f_own[x] = (REAL)p->proj_f[x];
            }
        e = e_own, f = f_own;
    }

    /* per head: K'_h = E[:, :L_b]·K_h[:L_b] (k × d_k), V'_h = F[:, :L_b]·V_h[:L_b]
     * (k × d_v): the columns of E and F past the key length left out is the same as
     * zeroing them (L_b = 0: zeros) */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t L = la_keys_in_length(p, bh / p->heads);
        GEMM(r, dk, L, 1, e, (ptrdiff_t)M, 1, k + bh * M * dk, (ptrdiff_t)dk, 1, 0,
             kp + bh * r * dk, (ptrdiff_t)dk, 1);
        GEMM(r, dv, L, 1, f, (ptrdiff_t)M, 1, v + bh * M * dv, (ptrdiff_t)dv, 1, 0,
             vp + bh * r * dv, (ptrdiff_t)dv, 1);
    }

    /* y = softmax(Q K'ᵀ · scale) V': the fused kernel, with k keys and the budget left */
    const la_problem in = inner_problem(p, held);
    st = FN(la_softmax_attention)(&in, q, kp, vp, out);
    free(scratch);
    return st;
}
