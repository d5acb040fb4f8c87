/* state_tmpl.h — one token of the step API, written once for both precisions; state.c
 * includes it after core/real_f32.h and again after core/real_f64.h (the scheme is in
 * real_f32.h) and writes out la_linear_step_f32 and la_linear_step_f64. */

/* max |x[i]| over n elements, INFINITY when one is not finite. */
static double FN(state_max_abs)(const REAL *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        const double a = fabs((double)x[i]);
        if (!(a <= m)) m = isfinite(a) ? a : INFINITY;
        if (isinf(m)) break;
    }
    return m;
}

/* The step's range check (the header's LA_ERANGE rule for the step API): with
 * a = max|q_t|, b = max|k_t|, c = max|v_t| over every head, φ ≤ x + 1 gives
 * |S'| ≤ s_bound + (b + 1)·c, z' ≤ z_bound + (b + 1), and every entry of φ(q)ᵀS' and
 * φ(q)ᵀz' at most d_k·(a + 1)·max(|S'|, z'); all kept under REAL_MAX / 8. On success
 * the new bounds are written to *s_new, *z_new; a non-finite input or state passes
 * (its output is not finite either) and makes the bounds infinite. */
static bool FN(step_fits)(const la_linear_state *st, const REAL *q_t, const REAL *k_t,
                          const REAL *v_t, double *s_new, double *z_new)
{
    const double a = FN(state_max_abs)(q_t, st->heads * st->d_k);
    const double b = FN(state_max_abs)(k_t, st->heads * st->d_k);
    const double c = FN(state_max_abs)(v_t, st->heads * st->d_v);
    const long double s = (long double)st->s_bound + ((long double)b + 1) * c;
    const long double z = (long double)st->z_bound + ((long double)b + 1);
    if (isinf(a) || isinf(s) || isinf(z)) {
        *s_new = *z_new = INFINITY;
        return true;
    }
    const long double limit = (long double)REAL_MAX / 8;
    if (s > limit || z > limit || (long double)st->d_k * ((long double)a + 1) * fmaxl(s, z) > limit)
        return false;
    *s_new = (double)s;
    *z_new = (double)z;
    return true;
}

/* One token for every head h: φ(k), φ(q); S_h += φ(k) vᵀ, z_h += φ(k);
 * y_h = φ(q)ᵀS_h / (φ(q)ᵀz_h + eps).  q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v). */
static la_status FN(linear_step)(la_linear_state *st, const REAL *q_t, const REAL *k_t,
                                 const REAL *v_t, REAL *y_t)
{
    if (!st || !q_t || !k_t || !v_t || !y_t || st->dtype != REAL_DTYPE) return LA_EINVAL;
    double s_new, z_new;
    if (!FN(step_fits)(st, q_t, k_t, v_t, &s_new, &z_new)) return LA_ERANGE;
    st->s_bound = s_new;
    st->z_bound = z_new;
    const size_t dk = st->d_k, dv = st->d_v;
    REAL *S = st->S, *z = S + st->heads * dk * dv;
    REAL *phi_q = st->phi, *phi_k = phi_q + dk;
    for (size_t h = 0; h < st->heads; h++) {
        FN(la_feature_map)(st->fm, k_t + h * dk, phi_k, dk);
        FN(la_feature_map)(st->fm, q_t + h * dk, phi_q, dk);
        FN(la_linear_step_head)
        (S + h * dk * dv, z + h * dk, phi_k, v_t + h * dv, phi_q, (REAL)st->eps, y_t + h * dv, dk,
         dv);
    }
    st->position++;
    return LA_OK;
}
