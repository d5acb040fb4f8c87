/* state_tmpl.h — one token of the step API, written once for both precisions; state.c
 * includes it after core/real_f32.h and again after core/real_f64.h (the scheme is in
 * real_f32.h) and writes out la_linear_step_f32 and la_linear_step_f64. */

/* One token for every head h: φ(k), φ(q); S_h += φ(k) vᵀ, z_h += φ(k);
 * y_h = φ(q)ᵀS_h / (φ(q)ᵀz_h + eps).  q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v). */
static la_status FN(linear_step)(la_linear_state *st, const REAL *q_t, const REAL *k_t,
                                 const REAL *v_t, REAL *y_t)
{
    if (!st || !q_t || !k_t || !v_t || !y_t || st->dtype != REAL_DTYPE) return LA_EINVAL;
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
