/* rotary_tmpl.h — rotary position embeddings, written once for both precisions. Not an
 * ordinary header: rotary.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so every function below is static and
 * named FN(name); rotary.c writes out the public la_* functions.
 *
 * Shared by both instantiations and defined in rotary.c before the includes:
 * rotary_theta(), rotary_apply_check(), rotary_linear_check(), rotary_linear_per_thread(). */

/* x (d) of the token at position t, rotated into out (d; may equal x): pair c, channels
 * (2c, 2c+1), by the angle t·θ_c. */
static void FN(rotate_row)(const REAL *x, REAL *out, size_t d, size_t t)
{
    for (size_t c = 0; c < d / 2; c++) {
        const double angle = (double)t * rotary_theta(c, d);
        const REAL cs = (REAL)cos(angle), sn = (REAL)sin(angle);
        const REAL a = x[2 * c], b = x[2 * c + 1];
        out[2 * c] = a * cs - b * sn;
        out[2 * c + 1] = a * sn + b * cs;
    }
}

/* x: (rows, n, d) row-major, rotated in place; token i of every row block at position
 * first_pos + i. The angles of a token are formed once and applied to every row block. */
static la_status FN(rotary_apply)(size_t rows, size_t n, size_t d, size_t first_pos, REAL *x)
{
    la_status st = rotary_apply_check(rows, n, d, first_pos, x);
    if (st != LA_OK) return st;
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < d / 2; c++) {
            const double angle = (double)(first_pos + i) * rotary_theta(c, d);
            const REAL cs = (REAL)cos(angle), sn = (REAL)sin(angle);
            for (size_t r = 0; r < rows; r++) {
                REAL *pair = x + (r * n + i) * d + 2 * c;
                const REAL a = pair[0], b = pair[1];
                pair[0] = a * cs - b * sn;
                pair[1] = a * sn + b * cs;
            }
        }
    }
    return LA_OK;
}

/* One head of linear attention with rotary positions, of an entry that leaves m keys:
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   scratch: rotary_linear_per_thread() elements.
 * S = Σ_j R_{s_j} φ(k_j) v_jᵀ and z = Σ_j φ(k_j) over the keys a query sees (all m, or
 * causal the keys j <= i, added token by token), then
 *   y_i = (R_{t_i} φ(q_i))ᵀ S / (φ(q_i)ᵀ z + eps),
 * a zero row where the query sees no key or the denominator is exactly 0.
 * Accuracy: R_t is formed from rounded cos and sin, so the numerator is exact to about
 * u·|φ(q_i)|·Σ_j |φ(k_j)||v_j| (u the unit roundoff), not to u·|y_i|. Where φ(q_i)ᵀz
 * is 0 or tiny against Σ_j |φ(q_i)||φ(k_j)| (features with disjoint support, as elu+1
 * gives for entries of −1e18), y_i is that rounding error over eps. */
static void FN(rotary_linear_head)(const la_problem *p, size_t m, size_t q_first_pos,
                                   size_t k_first_pos, const REAL *qh, const REAL *kh,
                                   const REAL *vh, REAL *oh, REAL *scratch)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v;
    const REAL eps = (REAL)p->eps;
    REAL *S = scratch, *z = S + dk * dv, *phi_q = z + dk, *rot_q = phi_q + dk, *phi_k = rot_q + dk,
         *rot_k = phi_k + dk;
    memset(S, 0, (dk * dv + dk) * sizeof *S);
    size_t added = 0; /* keys 0 .. added − 1 are in S and z */
    const size_t all = m;
    for (size_t i = 0; i < N; i++) {
        /* the keys query i sees: all m, or causal those j <= i + o (la_causal_offset) */
        const size_t seen = la_visible_keys_of(p, all, i);
        for (; added < seen; added++) {
            /* S += R φ(k_j) v_jᵀ, z += φ(k_j) */
            FN(la_feature_map)(p->feature_map, kh + added * dk, phi_k, dk);
            FN(rotate_row)(phi_k, rot_k, dk, k_first_pos + added);
            const REAL *vj = vh + added * dv;
            for (size_t c = 0; c < dk; c++) {
                z[c] += phi_k[c];
                for (size_t e = 0; e < dv; e++)
                    S[c * dv + e] += rot_k[c] * vj[e];
            }
        }
        REAL *yi = oh + i * dv;
        memset(yi, 0, dv * sizeof *yi);
        if (seen == 0) continue;
        /* y_i = (R φ(q_i))ᵀ S / (φ(q_i)ᵀ z + eps) */
        FN(la_feature_map)(p->feature_map, qh + i * dk, phi_q, dk);
        FN(rotate_row)(phi_q, rot_q, dk, q_first_pos + i);
        REAL den = eps;
        for (size_t c = 0; c < dk; c++)
            den += phi_q[c] * z[c];
        if (den == 0) continue;
        for (size_t c = 0; c < dk; c++)
            for (size_t e = 0; e < dv; e++)
                yi[e] += rot_q[c] * S[c * dv + e];
        for (size_t e = 0; e < dv; e++)
            yi[e] /= den;
    }
}

/* Linear attention with rotary positions (contract in linattn.h): one task per
 * (batch entry, head), each computed whole by one thread (the same bits on any thread
 * count), scratch one S, z and four feature rows per thread. */
static la_status FN(linear_attention_rotary)(const la_problem *p, size_t q_first_pos,
                                             size_t k_first_pos, const REAL *q, const REAL *k,
                                             const REAL *v, REAL *out)
{
    la_status st = rotary_linear_check(p, q_first_pos, k_first_pos, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */
    /* the range rule (linattn.h): every entry of S, z, the numerator and the denominator
     * within T/8 */
    const double a = FN(la_max_abs)(q, heads * N * dk), b = FN(la_max_abs)(k, heads * M * dk);
    const double c = FN(la_max_abs)(v, heads * M * dv);
    if (!rotary_range_ok(p, a, b, c, (double)REAL_MAX)) return LA_ERANGE;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    const size_t per_thread = rotary_linear_per_thread(p);
    size_t bytes;
    if (per_thread == SIZE_MAX || !la_mul_ok(per_thread, (size_t)threads, &bytes) ||
        !la_mul_ok(bytes, sizeof(REAL), &bytes))
        return LA_EOVERFLOW;
    if (bytes > p->workspace_limit) return LA_EBUDGET;
    REAL *scratch = malloc(bytes);
    if (!scratch) return LA_ENOMEM;
#pragma omp parallel num_threads(threads)
    {
        REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(static)
        for (size_t bh = 0; bh < heads; bh++)
            FN(rotary_linear_head)
        (p, la_keys_in_length(p, bh / p->heads), q_first_pos, k_first_pos, q + bh * N * dk,
         k + bh * M * dk, v + bh * M * dv, out + bh * N * dv, mine);
    }
    free(scratch);
    return LA_OK;
}
