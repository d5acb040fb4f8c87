/* reference.c — float64 oracles. Plain loops that materialize everything; no blocking,
 * no BLIS, no threads, no tuning. The tests hold the fast kernels to these. Keep them
 * obviously correct: speed belongs in softmax.c and linear.c. */
#include "core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void la_ref_feature_map(la_feature_map fm, const double *x, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double xi = x[i];
        if (fm == LA_FEATURE_RELU)
            out[i] = xi > 0 ? xi : 0;
        else
            out[i] = xi >= 0 ? xi + 1 : exp(xi); /* elu(x) + 1 without cancellation */
    }
}

/* Validates p and the pointers shared by every reference. */
static la_status check(const la_problem *p, const double *q, const double *k, const double *v,
                       const double *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    return LA_OK;
}

/* *n = a·b·c, false when it or its bytes as doubles (n · 8) overflow size_t: every
 * scratch size is checked before anything is allocated. */
static bool doubles_fit(size_t a, size_t b, size_t c, size_t *n)
{
    size_t bytes;
    return la_mul_ok(a, b, n) && la_mul_ok(*n, c, n) && la_mul_ok(*n, sizeof(double), &bytes);
}

/* Whether the causal mask lets query i see key j: j <= i (top-left), or j <= i + M − N
 * (bottom-right), written j + N <= i + M to stay in unsigned integers. */
static bool ref_in_past(const la_problem *p, size_t i, size_t j)
{
    if (!p->causal) return true;
    if (p->causal_align == LA_CAUSAL_BOTTOM_RIGHT) return j + p->n_queries <= i + p->n_keys;
    return j <= i;
}

/* Keys query i of batch entry b sees: j < L_b (key lengths) and, when causal,
 * ref_in_past. Written here from the masks' definition rather than shared with the
 * kernels, so a masking bug in the kernels cannot hide in the oracle too. */
static size_t ref_visible_keys(const la_problem *p, size_t b, size_t i)
{
    size_t visible = 0;
    for (size_t j = 0; j < p->n_keys; j++) {
        const bool in_length = !p->key_lengths || (int64_t)j < p->key_lengths[b];
        const bool in_past = ref_in_past(p, i, j);
        if (in_length && in_past) visible = j + 1;
    }
    return visible;
}

/* Whether the general masks let query i of head (b, h) see key j: p->key_mask[b][j]
 * and p->mask[i][j] (of head b·H + h when p->mask_per_head) both 0, or absent. Written
 * here from the masks' definition, as ref_visible_keys is. */
static bool ref_mask_lets(const la_problem *p, size_t b, size_t h, size_t i, size_t j)
{
    const size_t N = p->n_queries, M = p->n_keys;
    if (p->key_mask && p->key_mask[b * M + j] != 0) return false;
    if (p->mask) {
        const uint8_t *head_mask =
            p->mask_per_head ? p->mask + (b * p->heads + h) * N * M : p->mask;
        if (head_mask[i * M + j] != 0) return false;
    }
    return true;
}

/* Element offsets of head (b, h) in the (B, H, rows, cols) arrays. */
#define HEAD(p, b, h, rows, cols) ((((b) * (p)->heads + (h)) * (rows)) * (cols))

/* Softmax attention, per head:
 *   scores (N, M) = q kᵀ · scale, hidden entries = -inf;
 *   P = row softmax of scores; out (N, d_v) = P v. */
la_status la_ref_softmax_attention(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* scores: (N, M) */
    size_t n_scores;
    if (!doubles_fit(N, M, 1, &n_scores)) return LA_EOVERFLOW;
    double *scores = malloc(n_scores * sizeof *scores);
    if (!scores) return LA_ENOMEM;

    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i);
                double *row = scores + i * M;
                /* scores, and the row max over visible keys */
                double max = -INFINITY;
                for (size_t j = 0; j < visible; j++) {
                    if (!ref_mask_lets(p, b, h, i, j)) { /* hidden by a general mask */
                        row[j] = -INFINITY;
                        continue;
                    }
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    row[j] = s * p->scale;
                    if (row[j] > max) max = row[j];
                }
                /* softmax: exp(s - max) / Σ exp(s - max), hidden keys 0 */
                double sum = 0;
                for (size_t j = 0; j < visible; j++) {
                    row[j] = row[j] == -INFINITY ? 0 : exp(row[j] - max);
                    sum += row[j];
                }
                for (size_t j = 0; j < visible; j++)
                    row[j] = sum > 0 ? row[j] / sum : 0; /* every key hidden: zeros */
                /* out = P v (a query that sees nothing gets zeros) */
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t j = 0; j < visible; j++)
                        acc += row[j] * vh[j * dv + c];
                    oh[i * dv + c] = acc;
                }
            }
        }
    }
    free(scores);
    return LA_OK;
}

/* The key hard attention picks for query i of head (b, h): argmax_j (q_i·k_j · scale)
 * over keys 0..visible-1 the general masks let it see, ties to the lowest j; SIZE_MAX
 * when none is visible.
 *   q_i: (d_k), k: (visible, d_k) row-major. */
static size_t ref_hard_argmax(const la_problem *p, size_t b, size_t h, size_t i, const double *q_i,
                              const double *k, size_t visible, size_t dk, double scale)
{
    size_t best = SIZE_MAX;
    double best_score = -INFINITY;
    for (size_t j = 0; j < visible; j++) {
        if (!ref_mask_lets(p, b, h, i, j)) continue;
        double s = 0;
        for (size_t c = 0; c < dk; c++)
            s += q_i[c] * k[j * dk + c];
        s *= scale;
        if (best == SIZE_MAX || s > best_score) { /* strict: ties keep the lowest j */
            best_score = s;
            best = j;
        }
    }
    return best;
}

/* Hard attention, per head: out row i = v row argmax_j (q_i·k_j · scale), ties to the
 * lowest j, over visible keys; zeros when none is visible. */
la_status la_ref_hard_attention(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i);
                size_t best = ref_hard_argmax(p, b, h, i, qh + i * dk, kh, visible, dk, p->scale);
                for (size_t c = 0; c < dv; c++)
                    oh[i * dv + c] = best != SIZE_MAX ? vh[best * dv + c] : 0.0;
            }
        }
    }
    return LA_OK;
}

/* Restricted (local) softmax attention, per head: query i sees key j when the masks
 * above let it (key lengths, causal j <= i) and |i − j| <= window, the indices i and j
 * compared as they are (also for N != M; causal bottom-right: |i + M − N − j|). Written from that
 * definition, key by key: scores (N, M) = q kᵀ · scale over those keys, P = their row softmax, out
 * = P v. */
static bool ref_local_sees(const la_problem *p, size_t b, size_t h, size_t i, size_t j)
{
    const la_local_params local = la_local_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys;
    const bool in_length = !p->key_lengths || (int64_t)j < p->key_lengths[b];
    const bool in_past = ref_in_past(p, i, j);
    /* the window is centered on query i's position, i + M − N when causal bottom-right
     * (written without negative numbers) */
    const bool bottom_right = p->causal && p->causal_align == LA_CAUSAL_BOTTOM_RIGHT;
    const size_t pos_i = i + (bottom_right ? M : 0), pos_j = j + (bottom_right ? N : 0);
    const bool in_window = (pos_i >= pos_j ? pos_i - pos_j : pos_j - pos_i) <= local.window;
    return in_length && in_past && in_window && ref_mask_lets(p, b, h, i, j);
}

la_status la_ref_local_attention(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t n_row;
    if (!doubles_fit(M, 1, 1, &n_row)) return LA_EOVERFLOW;
    double *row = malloc(n_row * sizeof *row);
    bool *seen = malloc(M * sizeof *seen);
    if (!row || !seen) {
        free(row);
        free(seen);
        return LA_ENOMEM;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                /* which keys query i sees, and their scores and maximum */
                double max = -INFINITY;
                for (size_t j = 0; j < M; j++) {
                    seen[j] = ref_local_sees(p, b, h, i, j);
                    if (!seen[j]) continue;
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    row[j] = s * p->scale;
                    if (row[j] > max) max = row[j];
                }
                /* softmax over the keys seen: exp(s - max) / Σ exp(s - max) */
                double sum = 0;
                for (size_t j = 0; j < M; j++)
                    if (seen[j]) {
                        row[j] = exp(row[j] - max);
                        sum += row[j];
                    }
                /* out = P v (a query that sees nothing gets zeros) */
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t j = 0; j < M; j++)
                        if (seen[j]) acc += row[j] / sum * vh[j * dv + c];
                    oh[i * dv + c] = acc;
                }
            }
        }
    }
    free(row);
    free(seen);
    return LA_OK;
}

/* The prefix states of linear attention over one head's keys, as plain sums:
 *   phi_k: (M, d_k), v: (M, d_v) row-major;
 *   prefix_S: (M + 1, d_k, d_v), prefix_z: (M + 1, d_k), where entry j is the state after
 *   keys 0..j-1: S_{j+1} = S_j + φ(k_j) v_jᵀ, z_{j+1} = z_j + φ(k_j).
 * Entry 0 is read as given (zero: the callers calloc it) and never written. */
static void ref_prefix_states(const double *phi_k, const double *v, size_t M, size_t dk, size_t dv,
                              double *prefix_S, double *prefix_z)
{
    for (size_t j = 0; j < M; j++) {
        const double *S0 = prefix_S + j * dk * dv, *z0 = prefix_z + j * dk;
        double *S1 = prefix_S + (j + 1) * dk * dv, *z1 = prefix_z + (j + 1) * dk;
        for (size_t a = 0; a < dk; a++) {
            z1[a] = z0[a] + phi_k[j * dk + a];
            for (size_t c = 0; c < dv; c++)
                S1[a * dv + c] = S0[a * dv + c] + phi_k[j * dk + a] * v[j * dv + c];
        }
    }
}

/* Linear attention, per head, materializing φ(Q), φ(K) and every prefix state:
 *   S_i (d_k, d_v) = Σ_{visible j} φ(k_j) v_jᵀ,  z_i (d_k) = Σ_{visible j} φ(k_j),
 *   out_i = φ(q_i)ᵀ S_i / (φ(q_i)ᵀ z_i + eps), and zeros where that denominator is 0.
 * The visible keys of query i are a prefix 0..visible-1, so S_i is a prefix sum. */
la_status la_ref_linear_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->mask) return LA_EINVAL; /* key masks only (linattn.h) */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* φ(Q) (N, d_k), φ(K) (M, d_k); prefix[j] = state after keys 0..j-1, for j = 0..M:
     * S (M + 1, d_k, d_v), z (M + 1, d_k). M + 1 fits: M·d_k·8 does (la_problem_check). */
    size_t n_phi_q, n_phi_k, n_prefix_S, n_prefix_z;
    if (!doubles_fit(N, dk, 1, &n_phi_q) || !doubles_fit(M, dk, 1, &n_phi_k) ||
        !doubles_fit(M + 1, dk, dv, &n_prefix_S) || !doubles_fit(M + 1, dk, 1, &n_prefix_z))
        return LA_EOVERFLOW;
    double *phi_q = malloc(n_phi_q * sizeof *phi_q);
    double *phi_k = malloc(n_phi_k * sizeof *phi_k);
    double *prefix_S = calloc(n_prefix_S, sizeof *prefix_S);
    double *prefix_z = calloc(n_prefix_z, sizeof *prefix_z);
    if (!phi_q || !phi_k || !prefix_S || !prefix_z) {
        st = LA_ENOMEM;
        goto done;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            la_ref_feature_map(p->feature_map, q + HEAD(p, b, h, N, dk), phi_q, N * dk);
            la_ref_feature_map(p->feature_map, k + HEAD(p, b, h, M, dk), phi_k, M * dk);
            for (size_t j = 0; j < M; j++) /* a key the key mask hides adds nothing */
                if (!ref_mask_lets(p, b, h, 0, j)) memset(phi_k + j * dk, 0, dk * sizeof *phi_k);
            ref_prefix_states(phi_k, vh, M, dk, dv, prefix_S, prefix_z);
            /* out_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps) with the state of its visible keys */
            for (size_t i = 0; i < N; i++) {
                size_t visible = ref_visible_keys(p, b, i);
                const double *S = prefix_S + visible * dk * dv, *z = prefix_z + visible * dk;
                const double *fq = phi_q + i * dk;
                double den = 0;
                for (size_t a = 0; a < dk; a++)
                    den += fq[a] * z[a];
                for (size_t c = 0; c < dv; c++) {
                    double num = 0;
                    for (size_t a = 0; a < dk; a++)
                        num += fq[a] * S[a * dv + c];
                    /* a zero denominator is the empty row too (linattn.h) */
                    oh[i * dv + c] = visible > 0 && den + p->eps != 0 ? num / (den + p->eps) : 0.0;
                }
            }
        }
    }
done:
    free(phi_q);
    free(phi_k);
    free(prefix_S);
    free(prefix_z);
    return st;
}

/* Taylor linear attention (Based, Arora et al. 2024), per head, from its kernel rather than
 * its features: φ(q)·φ(k) = 1 + s + s²/2 with s = q·k · scale (the second-order Taylor
 * series of exp(s), positive for every s), so
 *   y_i = Σ_j κ_ij v_j / (Σ_j κ_ij + eps) over the keys query i sees (ref_visible_keys,
 *   and the key mask), κ_ij = 1 + s_ij + s_ij²/2;
 * a query that sees no key gets the empty row. The kernel computes the same through the
 * 1 + d_k + d_k² features, which this oracle never forms. */
la_status la_ref_taylor_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->mask) return LA_EINVAL; /* key masks only, as linear attention */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    double *num = malloc(dv * sizeof *num);
    if (!num) return LA_ENOMEM;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                double den = 0;
                size_t seen = 0;
                memset(num, 0, dv * sizeof *num);
                for (size_t j = 0; j < visible; j++) {
                    if (!ref_mask_lets(p, b, h, i, j)) continue;
                    double dot = 0;
                    for (size_t a = 0; a < dk; a++)
                        dot += qh[i * dk + a] * kh[j * dk + a];
                    const double s_ij = dot * p->scale, kappa = 1 + s_ij + s_ij * s_ij / 2;
                    den += kappa;
                    for (size_t c = 0; c < dv; c++)
                        num[c] += kappa * vh[j * dv + c];
                    seen++;
                }
                for (size_t c = 0; c < dv; c++)
                    oh[i * dv + c] = seen > 0 ? num[c] / (den + p->eps) : 0.0;
            }
        }
    free(num);
    return LA_OK;
}

/* FAVOR+, per head (b, h), with W (m, d_k) = la_favor_features(m, d_k, seed), s =
 * d_k^(−1/4) and the masks of ref_visible_keys:
 *   query i: p_il = Σ_a W_la s·q_ia, φ(q_i)_l = exp(p_il − max_l' p_il') / √m (its own
 *     ‖x‖²/2 left out: common to its features, it cancels with the max);
 *   key j: p_jl likewise, P_j = max_l p_jl, g_j = P_j − s²·‖k_j‖²/2 (its largest exponent
 *     p_jl − s²‖k_j‖²/2), ψ_jl = exp(p_jl − P_j) / √m;
 *   y_i = Σ_j a_ij v_j / (Σ_j a_ij + eps) over the keys query i sees, with
 *     a_ij = φ(q_i)·ψ_j · exp(g_j − μ_i), μ_i = max g over those keys
 *     (= φ(q_i)·φ(k_j) with φ(k_j) = exp(p_j − s²‖k_j‖²/2 − μ_i) / √m). */
la_status la_ref_favor_attention(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out)
{
    const la_favor_params favor = la_favor_params_of(p);
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->mask || p->key_mask) return LA_EINVAL; /* general masks: refused, as the kernel */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, m = favor.features;
    size_t n_w, n_q, n_k;
    if (!doubles_fit(m, dk, 1, &n_w) || !doubles_fit(N, m, 1, &n_q) || !doubles_fit(M, m, 1, &n_k))
        return LA_EOVERFLOW;
    double *w = malloc(n_w * sizeof *w), *phi_q = malloc(n_q * sizeof *phi_q);
    double *psi = malloc(n_k * sizeof *psi), *num = malloc(dv * sizeof *num);
    double *g = malloc(M * sizeof *g);
    if (!w || !phi_q || !psi || !num || !g) {
        st = LA_ENOMEM;
        goto done;
    }
    st = la_favor_w(p, w);
    if (st != LA_OK) goto done;
    const double s = pow((double)dk, -0.25), root_m = sqrt((double)m);
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            /* φ(q_i) */
            for (size_t i = 0; i < N; i++) {
                double *f = phi_q + i * m, max = -INFINITY;
                for (size_t l = 0; l < m; l++) {
                    f[l] = 0;
                    for (size_t a = 0; a < dk; a++)
                        f[l] += w[l * dk + a] * (s * qh[i * dk + a]);
                    max = f[l] > max ? f[l] : max;
                }
                for (size_t l = 0; l < m; l++)
                    f[l] = exp(f[l] - max) / root_m;
            }
            /* ψ(k_j) and g_j */
            for (size_t j = 0; j < M; j++) {
                double *f = psi + j * m, sq = 0, max = -INFINITY;
                for (size_t a = 0; a < dk; a++)
                    sq += (s * kh[j * dk + a]) * (s * kh[j * dk + a]);
                for (size_t l = 0; l < m; l++) {
                    f[l] = 0;
                    for (size_t a = 0; a < dk; a++)
                        f[l] += w[l * dk + a] * (s * kh[j * dk + a]);
                    max = f[l] > max ? f[l] : max;
                }
                for (size_t l = 0; l < m; l++)
                    f[l] = exp(f[l] - max) / root_m;
                g[j] = max - sq / 2;
            }
            /* y_i, pair by pair */
            for (size_t i = 0; i < N; i++) {
                const size_t vis = ref_visible_keys(p, b, i);
                double den = 0, mu = -INFINITY;
                for (size_t j = 0; j < vis; j++)
                    mu = g[j] > mu ? g[j] : mu;
                for (size_t c = 0; c < dv; c++)
                    num[c] = 0;
                for (size_t j = 0; j < vis; j++) {
                    double a_ij = 0;
                    for (size_t l = 0; l < m; l++)
                        a_ij += phi_q[i * m + l] * psi[j * m + l];
                    a_ij *= exp(g[j] - mu);
                    den += a_ij;
                    for (size_t c = 0; c < dv; c++)
                        num[c] += a_ij * vh[j * dv + c];
                }
                for (size_t c = 0; c < dv; c++)
                    oh[i * dv + c] = vis > 0 && den + p->eps != 0 ? num[c] / (den + p->eps) : 0.0;
            }
        }
    }
done:
    free(w);
    free(phi_q);
    free(psi);
    free(num);
    free(g);
    return st;
}

/* ---------------------------------------------------------------- linear backward */

/* φ′(x), float64 reference form: elu+1 1 for x >= 0, exp(x) below; relu 1 for x > 0, else
 * 0. */
static double ref_phi_prime(la_feature_map fm, double x)
{
    if (fm == LA_FEATURE_RELU) return x > 0 ? 1 : 0;
    return x >= 0 ? 1 : exp(x);
}

/* The gradient of linear attention, per head, from its definition and with no carried
 * state: the prefix states S_i, z_i of every query are materialized as in
 * la_ref_linear_attention (S_i = Σ_{visible j} φ(k_j) v_jᵀ, z_i likewise), the forward is
 * recomputed (out is not read), and the keys' gradients are summed pair by pair:
 *   den_i = φ(q_i)·z_i + eps, y_i = φ(q_i)ᵀS_i / den_i; for a query with a visible key
 *   and den_i != 0 (else its gradient is zero, like its output):
 *     g_i = d_out_i / den_i, c_i = −(d_out_i·y_i) / den_i,
 *     dφ(q_i) = S_i g_i + c_i z_i,
 *     for every visible key j of query i:
 *       dφ(k_j) += (g_i·v_j + c_i) φ(q_i),  d_v_j += (φ(q_i)·φ(k_j)) g_i;
 *   d_q = dφ(q) ∘ φ′(q), d_k = dφ(k) ∘ φ′(k).
 * Follows p->causal. Shapes as la_backward_f64_fn. */
la_status la_ref_linear_attention_backward(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->mask) return LA_EINVAL; /* key masks only (linattn.h) */
    if (!d_out || !d_q || !d_k || !d_v) return LA_EINVAL;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    /* φ(Q) (N, d_k), φ(K) (M, d_k), dφ(K) (M, d_k), g (d_v); prefix states S (M + 1, d_k,
     * d_v), z (M + 1, d_k) as in la_ref_linear_attention */
    size_t n_phi_q, n_phi_k, n_prefix_S, n_prefix_z, n_g;
    if (!doubles_fit(N, dk, 1, &n_phi_q) || !doubles_fit(M, dk, 1, &n_phi_k) ||
        !doubles_fit(M + 1, dk, dv, &n_prefix_S) || !doubles_fit(M + 1, dk, 1, &n_prefix_z) ||
        !doubles_fit(dv, 1, 1, &n_g))
        return LA_EOVERFLOW;
    double *phi_q = malloc(n_phi_q * sizeof *phi_q);
    double *phi_k = malloc(n_phi_k * sizeof *phi_k);
    double *dphi_k = malloc(n_phi_k * sizeof *dphi_k);
    double *prefix_S = calloc(n_prefix_S, sizeof *prefix_S);
    double *prefix_z = calloc(n_prefix_z, sizeof *prefix_z);
    double *g = malloc(n_g * sizeof *g);
    if (!phi_q || !phi_k || !dphi_k || !prefix_S || !prefix_z || !g) {
        st = LA_ENOMEM;
        goto done;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv), *doh = d_out + HEAD(p, b, h, N, dv);
            double *dqh = d_q + HEAD(p, b, h, N, dk), *dkh = d_k + HEAD(p, b, h, M, dk);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            la_ref_feature_map(p->feature_map, qh, phi_q, N * dk);
            la_ref_feature_map(p->feature_map, kh, phi_k, M * dk);
            for (size_t j = 0; j < M; j++) /* a key the key mask hides adds nothing */
                if (!ref_mask_lets(p, b, h, 0, j)) memset(phi_k + j * dk, 0, dk * sizeof *phi_k);
            memset(dqh, 0, N * dk * sizeof *dqh);
            memset(dphi_k, 0, M * dk * sizeof *dphi_k);
            memset(dvh, 0, M * dv * sizeof *dvh);
            ref_prefix_states(phi_k, vh, M, dk, dv, prefix_S, prefix_z);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                const double *S = prefix_S + visible * dk * dv, *z = prefix_z + visible * dk;
                const double *fq = phi_q + i * dk, *dO = doh + i * dv;
                double den = p->eps;
                for (size_t a = 0; a < dk; a++)
                    den += fq[a] * z[a];
                if (visible == 0 || den == 0) continue; /* the empty row: no gradient */
                /* y_i, then g_i = dO_i / den_i and c_i = −(dO_i·y_i) / den_i */
                double dO_y = 0;
                for (size_t c = 0; c < dv; c++) {
                    double num = 0;
                    for (size_t a = 0; a < dk; a++)
                        num += fq[a] * S[a * dv + c];
                    dO_y += dO[c] * (num / den);
                    g[c] = dO[c] / den;
                }
                const double ci = -dO_y / den;
                /* dφ(q_i) = S_i g_i + c_i z_i, then ∘ φ′(q_i) */
                for (size_t a = 0; a < dk; a++) {
                    double acc = ci * z[a];
                    for (size_t c = 0; c < dv; c++)
                        acc += S[a * dv + c] * g[c];
                    dqh[i * dk + a] = acc * ref_phi_prime(p->feature_map, qh[i * dk + a]);
                }
                /* every visible key j: dφ(k_j) += (g_i·v_j + c_i) φ(q_i),
                 * d_v_j += (φ(q_i)·φ(k_j)) g_i */
                for (size_t j = 0; j < visible; j++) {
                    double gv = ci, qk = 0;
                    for (size_t c = 0; c < dv; c++)
                        gv += g[c] * vh[j * dv + c];
                    for (size_t a = 0; a < dk; a++) {
                        dphi_k[j * dk + a] += gv * fq[a];
                        qk += fq[a] * phi_k[j * dk + a];
                    }
                    for (size_t c = 0; c < dv; c++)
                        dvh[j * dv + c] += qk * g[c];
                }
            }
            for (size_t j = 0; j < M; j++)
                for (size_t a = 0; a < dk; a++) /* a hidden key: no gradient */
                    dkh[j * dk + a] =
                        ref_mask_lets(p, b, h, 0, j)
                            ? dphi_k[j * dk + a] * ref_phi_prime(p->feature_map, kh[j * dk + a])
                            : 0;
        }
    }
done:
    free(phi_q);
    free(phi_k);
    free(dphi_k);
    free(prefix_S);
    free(prefix_z);
    free(g);
    return st;
}

/* ---------------------------------------------------------------- softmax and hard backward */

/* Validates p and the pointers of a backward oracle (out is not read: may be NULL). */
static la_status check_backward(const la_problem *p, const double *q, const double *k,
                                const double *v, const double *d_out, const double *d_q,
                                const double *d_k, const double *d_v)
{
    la_status st = check(p, q, k, v, d_out);
    if (st != LA_OK) return st;
    if (!d_q || !d_k || !d_v) return LA_EINVAL;
    return LA_OK;
}

/* d_q, d_k, d_v = 0: (B,H,N,d_k), (B,H,M,d_k), (B,H,M,d_v). */
static void zero_gradients(const la_problem *p, double *d_q, double *d_k, double *d_v)
{
    const size_t heads = p->batch * p->heads;
    memset(d_q, 0, heads * p->n_queries * p->d_k * sizeof *d_q);
    memset(d_k, 0, heads * p->n_keys * p->d_k * sizeof *d_k);
    memset(d_v, 0, heads * p->n_keys * p->d_v * sizeof *d_v);
}

/* Softmax attention's gradients, per head and query i with `visible` keys (none: no
 * gradient), materializing the query's probabilities P_i and dP_i (both (M,)):
 *   P_ij = exp(s_ij − max_l s_il) / Σ_l exp(s_il − max_l s_il),  s_ij = q_i·k_j · scale;
 *   dP_ij = d_out_i·v_j;  dS_ij = P_ij (dP_ij − Σ_l P_il dP_il);
 *   d_v_j += P_ij d_out_i;  d_q_i += scale Σ_j dS_ij k_j;  d_k_j += scale dS_ij q_i. */
la_status la_ref_softmax_attention_backward(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *d_out,
                                            double *d_q, double *d_k, double *d_v)
{
    (void)out;
    la_status st = check_backward(p, q, k, v, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t n_row;
    if (!doubles_fit(M, 1, 1, &n_row)) return LA_EOVERFLOW;
    double *P = malloc(n_row * sizeof *P), *dP = malloc(n_row * sizeof *dP);
    if (!P || !dP) {
        free(P);
        free(dP);
        return LA_ENOMEM;
    }
    zero_gradients(p, d_q, d_k, d_v);
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv), *gh = d_out + HEAD(p, b, h, N, dv);
            double *dqh = d_q + HEAD(p, b, h, N, dk), *dkh = d_k + HEAD(p, b, h, M, dk);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                if (visible == 0) continue;
                /* P_i: scores, max, exp, normalize */
                double max = -INFINITY, sum = 0;
                for (size_t j = 0; j < visible; j++) {
                    if (!ref_mask_lets(p, b, h, i, j)) { /* hidden by a general mask */
                        P[j] = -INFINITY;
                        continue;
                    }
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    P[j] = s * p->scale;
                    if (P[j] > max) max = P[j];
                }
                for (size_t j = 0; j < visible; j++) {
                    P[j] = P[j] == -INFINITY ? 0 : exp(P[j] - max);
                    sum += P[j];
                }
                if (sum == 0) continue; /* every key hidden: no gradient */
                for (size_t j = 0; j < visible; j++)
                    P[j] /= sum;
                /* dP_ij = d_out_i·v_j, the center Σ_j P_ij dP_ij, and d_v_j += P_ij d_out_i */
                double center = 0;
                for (size_t j = 0; j < visible; j++) {
                    dP[j] = 0;
                    for (size_t c = 0; c < dv; c++) {
                        dP[j] += gh[i * dv + c] * vh[j * dv + c];
                        dvh[j * dv + c] += P[j] * gh[i * dv + c];
                    }
                    center += P[j] * dP[j];
                }
                /* dS_ij = P_ij (dP_ij − center); d_q_i and d_k_j */
                for (size_t j = 0; j < visible; j++) {
                    const double ds = P[j] * (dP[j] - center);
                    for (size_t c = 0; c < dk; c++) {
                        dqh[i * dk + c] += p->scale * ds * kh[j * dk + c];
                        dkh[j * dk + c] += p->scale * ds * qh[i * dk + c];
                    }
                }
            }
        }
    }
    free(P);
    free(dP);
    return LA_OK;
}

/* Hard attention's gradients, per head: d_q = d_k = 0 (the argmax is piecewise constant),
 * and d_v_j = Σ d_out_i over the queries i whose argmax of q_i·k_j · scale over their
 * visible keys (ties to the lowest j) is j. */
la_status la_ref_hard_attention_backward(const la_problem *p, const double *q, const double *k,
                                         const double *v, const double *out, const double *d_out,
                                         double *d_q, double *d_k, double *d_v)
{
    (void)out;
    la_status st = check_backward(p, q, k, v, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    zero_gradients(p, d_q, d_k, d_v);
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *gh = d_out + HEAD(p, b, h, N, dv);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                const size_t best =
                    ref_hard_argmax(p, b, h, i, qh + i * dk, kh, visible, dk, p->scale);
                if (best == SIZE_MAX) continue;
                for (size_t c = 0; c < dv; c++)
                    dvh[best * dv + c] += gh[i * dv + c];
            }
        }
    }
    return LA_OK;
}

/* Linformer's softmax is written out again below rather than borrowed from
 * la_ref_softmax_attention, so that a bug in either cannot hide in both. */
/* Per head (b, h), with E, F: (k, M) and L = min(M, L_b) the visible keys:
 *   K' (k, d_k) = Σ_{j < L} E[:, j] k_j,   V' (k, d_v) = Σ_{j < L} F[:, j] v_j;
 *   scores (N, k) = Q K'ᵀ · scale, P = row softmax, out (N, d_v) = P V'. */
la_status la_ref_linformer_attention(const la_problem *p, const double *q, const double *k,
                                     const double *v, double *out)
{
    const la_linformer_params linformer = la_linformer_params_of(p);
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (p->mask || p->key_mask) return LA_EINVAL; /* general masks: refused, as the kernel */
    if (!q || !k || !v || !out || p->causal || linformer.proj_rank > p->n_keys) return LA_EINVAL;
    const size_t N = p->n_queries, M = p->n_keys, r = linformer.proj_rank, dk = p->d_k, dv = p->d_v;
    size_t n_proj, n_kp, n_vp, bytes;
    if (!la_mul_ok(r, M, &n_proj) || !la_mul_ok(n_proj, 2 * sizeof(double), &bytes) ||
        !la_mul_ok(r, dk, &n_kp) || !la_mul_ok(r, dv, &n_vp))
        return LA_EOVERFLOW;
    if (linformer.proj_e)
        for (size_t x = 0; x < n_proj; x++)
            if (!isfinite(linformer.proj_e[x]) || !isfinite(linformer.proj_f[x])) return LA_EINVAL;

    double *drawn = linformer.proj_e ? NULL : malloc(2 * n_proj * sizeof *drawn);
    double *kp = malloc(n_kp * sizeof *kp), *vp = malloc(n_vp * sizeof *vp);
    double *row = malloc(r * sizeof *row);
    if ((!linformer.proj_e && !drawn) || !kp || !vp || !row) {
        st = LA_ENOMEM;
        goto done;
    }
    const double *e = linformer.proj_e, *f = linformer.proj_f;
    if (!e) {
        la_linformer_projections(r, M, linformer.seed, drawn, drawn + n_proj);
        e = drawn, f = drawn + n_proj;
    }

    for (size_t b = 0; b < p->batch; b++) {
        size_t visible = M;
        if (p->key_lengths && (size_t)p->key_lengths[b] < M) visible = (size_t)p->key_lengths[b];
        for (size_t h = 0; h < p->heads; h++) {
            const size_t head = b * p->heads + h;
            const double *qh = q + head * N * dk, *kh = k + head * M * dk;
            const double *vh = v + head * M * dv;
            double *oh = out + head * N * dv;
            /* K' = E K and V' = F V over the visible keys */
            for (size_t a = 0; a < r; a++) {
                for (size_t c = 0; c < dk; c++) {
                    double s = 0;
                    for (size_t j = 0; j < visible; j++)
                        s += e[a * M + j] * kh[j * dk + c];
                    kp[a * dk + c] = s;
                }
                for (size_t c = 0; c < dv; c++) {
                    double s = 0;
                    for (size_t j = 0; j < visible; j++)
                        s += f[a * M + j] * vh[j * dv + c];
                    vp[a * dv + c] = s;
                }
            }
            for (size_t i = 0; i < N; i++) {
                /* scores over the k projected keys, and their max */
                double max = -INFINITY;
                for (size_t a = 0; a < r; a++) {
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kp[a * dk + c];
                    row[a] = s * p->scale;
                    if (row[a] > max) max = row[a];
                }
                /* softmax: exp(s - max) / Σ exp(s - max) */
                double sum = 0;
                for (size_t a = 0; a < r; a++) {
                    row[a] = exp(row[a] - max);
                    sum += row[a];
                }
                /* out = P V' */
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t a = 0; a < r; a++)
                        acc += row[a] / sum * vp[a * dv + c];
                    oh[i * dv + c] = acc;
                }
            }
        }
    }
    st = LA_OK;
done:
    free(drawn);
    free(kp);
    free(vp);
    free(row);
    return st;
}

/* ---------------------------------------------------------------- score functions */

typedef enum { REF_GENERAL, REF_ADDITIVE, REF_COSINE } ref_score_kind;

/* ‖x‖ over n entries, at least 1e-12 (F.normalize's eps), as plainly as it reads. */
static double ref_norm(const double *x, size_t n)
{
    double s = 0;
    for (size_t c = 0; c < n; c++)
        s += x[c] * x[c];
    s = sqrt(s);
    return s > 1e-12 ? s : 1e-12;
}

/* The score of one (query, key) pair, from its formula:
 *   general   Σ_a Σ_b q_a W_ab k_b · scale          W (d_k, d_k)
 *   additive  Σ_e v_e tanh(Σ_c W_ec q_c + Σ_c W_e,d_k+c k_c)   W (d_a, 2·d_k), v (d_a)
 *   cosine    q·k / (‖q‖ ‖k‖) · scale */
static double ref_score(const la_problem *p, ref_score_kind kind, const double *w, const double *wv,
                        const double *qi, const double *kj)
{
    const la_score_params score = la_score_params_of(p);
    const size_t dk = p->d_k;
    double s = 0;
    if (kind == REF_GENERAL) {
        for (size_t a = 0; a < dk; a++)
            for (size_t b = 0; b < dk; b++)
                s += qi[a] * w[a * dk + b] * kj[b];
        return s * p->scale;
    }
    if (kind == REF_ADDITIVE) {
        for (size_t e = 0; e < score.score_dim; e++) {
            /* W_q q and W_k k summed apart, then added: one sum over both would round
             * W_k k away under a W_q q of 1e30 that cancels to 0 */
            double pre_q = 0, pre_k = 0;
            for (size_t c = 0; c < dk; c++) {
                pre_q += w[e * 2 * dk + c] * qi[c];
                pre_k += w[e * 2 * dk + dk + c] * kj[c];
            }
            s += wv[e] * tanh(pre_q + pre_k);
        }
        return s;
    }
    for (size_t c = 0; c < dk; c++)
        s += qi[c] * kj[c];
    return s / (ref_norm(qi, dk) * ref_norm(kj, dk)) * p->scale;
}

/* Softmax attention over the scores of kind, per head: scores (N, M) pair by pair, hidden
 * entries skipped; P = row softmax; out = P v. Weights given (finite) or drawn. */
static la_status ref_score_attention(const la_problem *p, ref_score_kind kind, const double *q,
                                     const double *k, const double *v, double *out)
{
    const la_score_params score = la_score_params_of(p);
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, da = score.score_dim;
    if (kind == REF_ADDITIVE && (score.score_w == NULL) != (score.score_v == NULL))
        return LA_EINVAL;
    if (kind == REF_ADDITIVE && (p->mask || p->key_mask)) return LA_EINVAL; /* as the kernel */
    size_t n_w = 0, n_v = 0, n_row;
    if (kind == REF_GENERAL && !doubles_fit(dk, dk, 1, &n_w)) return LA_EOVERFLOW;
    if (kind == REF_ADDITIVE && (!doubles_fit(da, dk, 2, &n_w) || !doubles_fit(da, 1, 1, &n_v)))
        return LA_EOVERFLOW;
    if (!doubles_fit(M, 1, 1, &n_row)) return LA_EOVERFLOW;
    if (score.score_w && kind != REF_COSINE) {
        for (size_t x = 0; x < n_w; x++)
            if (!isfinite(score.score_w[x])) return LA_EINVAL;
        for (size_t x = 0; x < n_v; x++)
            if (!isfinite(score.score_v[x])) return LA_EINVAL;
    }
    const bool draw = kind != REF_COSINE && !score.score_w;
    double *drawn = draw ? malloc((n_w + n_v) * sizeof *drawn) : NULL;
    double *row = malloc(n_row * sizeof *row);
    if ((draw && !drawn) || !row) {
        free(drawn);
        free(row);
        return LA_ENOMEM;
    }
    const double *w = score.score_w, *wv = score.score_v;
    if (draw) {
        la_score_weights(kind == REF_GENERAL ? LA_KERNEL_GENERAL : LA_KERNEL_ADDITIVE, dk, da,
                         score.seed, drawn, kind == REF_ADDITIVE ? drawn + n_w : NULL);
        w = drawn, wv = drawn + n_w;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                double max = -INFINITY, sum = 0;
                for (size_t j = 0; j < visible; j++) { /* general masks: hidden, NaN */
                    row[j] = ref_mask_lets(p, b, h, i, j)
                                 ? ref_score(p, kind, w, wv, qh + i * dk, kh + j * dk)
                                 : NAN;
                    if (row[j] > max) max = row[j];
                }
                for (size_t j = 0; j < visible; j++) {
                    row[j] = isnan(row[j]) ? 0 : exp(row[j] - max);
                    sum += row[j];
                }
                for (size_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (size_t j = 0; j < visible; j++)
                        acc += row[j] == 0 ? 0 : row[j] / sum * vh[j * dv + c];
                    oh[i * dv + c] = acc; /* no visible key: 0 */
                }
            }
        }
    }
    free(drawn);
    free(row);
    return LA_OK;
}

la_status la_ref_general_attention(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    return ref_score_attention(p, REF_GENERAL, q, k, v, out);
}

la_status la_ref_additive_attention(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    return ref_score_attention(p, REF_ADDITIVE, q, k, v, out);
}

la_status la_ref_cosine_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    return ref_score_attention(p, REF_COSINE, q, k, v, out);
}

/* Linear attention with rotary positions, pair by pair: with a = φ(q_i),
 * b = φ(k_j) and δ = s_j − t_i the distance of the positions,
 *   w_ij = Σ_c (a_2c b_2c + a_2c+1 b_2c+1) cos(δ θ_c) + (a_2c+1 b_2c − a_2c b_2c+1) sin(δ θ_c)
 *        = (R_{t_i} a)·(R_{s_j} b),
 *   y_i = Σ_j w_ij v_j / (Σ_j a·b + eps)   over the visible keys (zero row: none, or a
 * zero denominator). The angle is formed from the distance, never from t_i or s_j alone,
 * so the oracle does not share the kernel's rotation. */
la_status la_ref_linear_attention_rotary(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const double *q, const double *k,
                                         const double *v, double *out)
{
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->d_k % 2 != 0 || p->mask || p->key_mask) return LA_EINVAL; /* as the kernel */
    if (q_first_pos > SIZE_MAX - p->n_queries || k_first_pos > SIZE_MAX - p->n_keys)
        return LA_EOVERFLOW;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    double *phi_q = malloc(dk * sizeof *phi_q), *phi_k = malloc(dk * sizeof *phi_k);
    double *num = malloc(dv * sizeof *num);
    if (!phi_q || !phi_k || !num) {
        free(phi_q), free(phi_k), free(num);
        return LA_ENOMEM;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                la_ref_feature_map(p->feature_map, qh + i * dk, phi_q, dk);
                double den = p->eps;
                memset(num, 0, dv * sizeof *num);
                for (size_t j = 0; j < visible; j++) {
                    la_ref_feature_map(p->feature_map, kh + j * dk, phi_k, dk);
                    const double delta = (double)(k_first_pos + j) - (double)(q_first_pos + i);
                    double w = 0;
                    for (size_t c = 0; c < dk / 2; c++) {
                        const double angle =
                            delta * pow(LA_ROTARY_BASE, -2.0 * (double)c / (double)dk);
                        const double a0 = phi_q[2 * c], a1 = phi_q[2 * c + 1];
                        const double b0 = phi_k[2 * c], b1 = phi_k[2 * c + 1];
                        w += (a0 * b0 + a1 * b1) * cos(angle) + (a1 * b0 - a0 * b1) * sin(angle);
                        den += a0 * b0 + a1 * b1;
                    }
                    for (size_t e = 0; e < dv; e++)
                        num[e] += w * vh[j * dv + e];
                }
                for (size_t e = 0; e < dv; e++)
                    oh[i * dv + e] = visible == 0 || den == 0 ? 0 : num[e] / den;
            }
        }
    }
    free(phi_q), free(phi_k), free(num);
    return LA_OK;
}

/* The table row of the distance of key j from query i: clip(j − i, −K, K) + K. */
static size_t ref_distance_row(size_t i, size_t j, size_t K)
{
    const long long delta = (long long)j - (long long)i;
    const long long clipped = delta < -(long long)K  ? -(long long)K
                              : delta > (long long)K ? (long long)K
                                                     : delta;
    return (size_t)(clipped + (long long)K);
}

/* Softmax with relative positions (Shaw et al. 2018), per query: the tables
 * given or drawn (la_relative_embeddings), then for each visible key j the distance
 * δ = clip(j − i, −K, K) and e_ij = q_i·(k_j + a^K_δ)·scale, the softmax of the row, and
 * y_i = Σ_j α_ij (v_j + a^V_δ). */
la_status la_ref_relative_attention(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    const la_relative_params relative = la_relative_params_of(p);
    la_status st = check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if (p->mask || p->key_mask) return LA_EINVAL; /* as the kernel */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t K = relative.max_distance;
    size_t nk, nv;
    if (K > SIZE_MAX / 4 || !doubles_fit(2 * K + 1, dk, 1, &nk) ||
        !doubles_fit(2 * K + 1, dv, 1, &nv))
        return LA_EOVERFLOW;
    double *drawn_k = NULL, *drawn_v = NULL, *scores = malloc(M * sizeof *scores);
    if (!relative.rel_k) {
        drawn_k = malloc(nk * sizeof *drawn_k), drawn_v = malloc(nv * sizeof *drawn_v);
        if (drawn_k && drawn_v) la_relative_embeddings(K, dk, dv, relative.seed, drawn_k, drawn_v);
    }
    if (!scores || (!relative.rel_k && (!drawn_k || !drawn_v))) {
        free(scores), free(drawn_k), free(drawn_v);
        return LA_ENOMEM;
    }
    const double *a_k = relative.rel_k ? relative.rel_k : drawn_k,
                 *a_v = relative.rel_v ? relative.rel_v : drawn_v;
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv);
            double *oh = out + HEAD(p, b, h, N, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                double row_max = -INFINITY, total = 0;
                for (size_t j = 0; j < visible; j++) {
                    const double *ak = a_k + ref_distance_row(i, j, K) * dk;
                    double e = 0;
                    for (size_t c = 0; c < dk; c++)
                        e += qh[i * dk + c] * (kh[j * dk + c] + ak[c]);
                    scores[j] = e * p->scale;
                    row_max = scores[j] > row_max ? scores[j] : row_max;
                }
                for (size_t j = 0; j < visible; j++) {
                    scores[j] = exp(scores[j] - row_max);
                    total += scores[j];
                }
                for (size_t e = 0; e < dv; e++) {
                    double y = 0;
                    for (size_t j = 0; j < visible; j++) {
                        y += scores[j] / total *
                             (vh[j * dv + e] + a_v[ref_distance_row(i, j, K) * dv + e]);
                    }
                    oh[i * dv + e] = visible == 0 ? 0 : y;
                }
            }
        }
    }
    free(scores), free(drawn_k), free(drawn_v);
    return LA_OK;
}

/* ---------------------------------------------------------------- Taylor, local, FAVOR+ backward
 */

/* The gradient of y_i = Σ_j κ_ij v_j / (Σ_j κ_ij + eps) through the weights of one query,
 * den_i = Σ_j κ_ij + eps over its keys: with g_i = d_out_i / den_i and c_i = −(d_out_i·y_i) /
 * den_i, ∂L/∂κ_ij = g_i·v_j + c_i and ∂L/∂v_j += κ_ij g_i (den_i != 0). The callers add
 * κ's own chain rule. */

/* Taylor attention's gradient, per head and query i with its visible keys (ref_visible_keys
 * and the key mask; none: no gradient), from the definition, pair by pair, never the
 * features: κ_ij = 1 + s_ij + s_ij²/2, s_ij = q_i·k_j · scale, y_i as la_ref_taylor_attention;
 *   dκ_ij = g_i·v_j + c_i,  d_v_j += κ_ij g_i,
 *   d_q_i += dκ_ij (1 + s_ij)·scale·k_j,  d_k_j += dκ_ij (1 + s_ij)·scale·q_i.
 * out is not read. */
la_status la_ref_taylor_attention_backward(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v)
{
    (void)out;
    la_status st = check_backward(p, q, k, v, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    if (p->mask) return LA_EINVAL; /* key masks only, as the kernel */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t n_row, n_y;
    if (!doubles_fit(M, 1, 1, &n_row) || !doubles_fit(dv, 2, 1, &n_y)) return LA_EOVERFLOW;
    double *kappa = malloc(n_row * sizeof *kappa), *score = malloc(n_row * sizeof *score);
    double *y = malloc(n_y * sizeof *y);
    if (!kappa || !score || !y) {
        st = LA_ENOMEM;
        goto done;
    }
    zero_gradients(p, d_q, d_k, d_v);
    double *g = y + dv;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv), *gh = d_out + HEAD(p, b, h, N, dv);
            double *dqh = d_q + HEAD(p, b, h, N, dk), *dkh = d_k + HEAD(p, b, h, M, dk);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            for (size_t i = 0; i < N; i++) {
                const size_t visible = ref_visible_keys(p, b, i);
                double den = p->eps;
                size_t seen = 0;
                memset(y, 0, dv * sizeof *y);
                for (size_t j = 0; j < visible; j++) {
                    kappa[j] = 0; /* hidden by the key mask: no weight */
                    if (!ref_mask_lets(p, b, h, i, j)) continue;
                    double dot = 0;
                    for (size_t a = 0; a < dk; a++)
                        dot += qh[i * dk + a] * kh[j * dk + a];
                    score[j] = dot * p->scale;
                    kappa[j] = 1 + score[j] + score[j] * score[j] / 2;
                    den += kappa[j];
                    for (size_t c = 0; c < dv; c++)
                        y[c] += kappa[j] * vh[j * dv + c];
                    seen++;
                }
                if (seen == 0 || den == 0) continue; /* the empty row: no gradient */
                double dO_y = 0;
                for (size_t c = 0; c < dv; c++) {
                    y[c] /= den;
                    dO_y += gh[i * dv + c] * y[c];
                    g[c] = gh[i * dv + c] / den;
                }
                const double ci = -dO_y / den;
                for (size_t j = 0; j < visible; j++) {
                    if (!ref_mask_lets(p, b, h, i, j)) continue;
                    double dkappa = ci;
                    for (size_t c = 0; c < dv; c++) {
                        dkappa += g[c] * vh[j * dv + c];
                        dvh[j * dv + c] += kappa[j] * g[c];
                    }
                    const double ds = dkappa * (1 + score[j]) * p->scale;
                    for (size_t a = 0; a < dk; a++) {
                        dqh[i * dk + a] += ds * kh[j * dk + a];
                        dkh[j * dk + a] += ds * qh[i * dk + a];
                    }
                }
            }
        }
done:
    free(kappa);
    free(score);
    free(y);
    return st;
}

/* Local attention's gradient, per head and query i over the keys it sees (ref_local_sees:
 * the masks, causal, key lengths and |i − j| <= window; none: no gradient), the softmax
 * Jacobian written out as la_ref_softmax_attention_backward writes it:
 *   P_ij = softmax_j(s_ij), dP_ij = d_out_i·v_j, dS_ij = P_ij (dP_ij − Σ_l P_il dP_il);
 *   d_v_j += P_ij d_out_i, d_q_i += scale Σ_j dS_ij k_j, d_k_j += scale dS_ij q_i.
 * out is not read. */
la_status la_ref_local_attention_backward(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v)
{
    (void)out;
    la_status st = check_backward(p, q, k, v, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t n_row;
    if (!doubles_fit(M, 1, 1, &n_row)) return LA_EOVERFLOW;
    double *P = malloc(n_row * sizeof *P), *dP = malloc(n_row * sizeof *dP);
    bool *seen = malloc(M * sizeof *seen);
    if (!P || !dP || !seen) {
        st = LA_ENOMEM;
        goto done;
    }
    zero_gradients(p, d_q, d_k, d_v);
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv), *gh = d_out + HEAD(p, b, h, N, dv);
            double *dqh = d_q + HEAD(p, b, h, N, dk), *dkh = d_k + HEAD(p, b, h, M, dk);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            for (size_t i = 0; i < N; i++) {
                /* P_i over the keys seen: scores, max, exp, normalize */
                double max = -INFINITY, sum = 0, center = 0;
                for (size_t j = 0; j < M; j++) {
                    seen[j] = ref_local_sees(p, b, h, i, j);
                    if (!seen[j]) continue;
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += qh[i * dk + c] * kh[j * dk + c];
                    P[j] = s * p->scale;
                    if (P[j] > max) max = P[j];
                }
                for (size_t j = 0; j < M; j++)
                    if (seen[j]) sum += P[j] = exp(P[j] - max);
                if (sum == 0) continue; /* no key seen: no gradient */
                /* P_ij, dP_ij = d_out_i·v_j, d_v_j += P_ij d_out_i, center = Σ_j P_ij dP_ij */
                for (size_t j = 0; j < M; j++) {
                    if (!seen[j]) continue;
                    P[j] /= sum;
                    dP[j] = 0;
                    for (size_t c = 0; c < dv; c++) {
                        dP[j] += gh[i * dv + c] * vh[j * dv + c];
                        dvh[j * dv + c] += P[j] * gh[i * dv + c];
                    }
                    center += P[j] * dP[j];
                }
                /* dS_ij = P_ij (dP_ij − center); d_q_i and d_k_j */
                for (size_t j = 0; j < M; j++) {
                    if (!seen[j]) continue;
                    const double ds = P[j] * (dP[j] - center);
                    for (size_t c = 0; c < dk; c++) {
                        dqh[i * dk + c] += p->scale * ds * kh[j * dk + c];
                        dkh[j * dk + c] += p->scale * ds * qh[i * dk + c];
                    }
                }
            }
        }
done:
    free(P);
    free(dP);
    free(seen);
    return st;
}

/* FAVOR+'s gradient (contract in kernels.h): the forward's quantities as
 * la_ref_favor_attention forms them, per head: p (N or M, m) the projections s·x Wᵀ, P
 * their row maxima and argmaxima, g_j = P_j − ‖x_j‖²/2, μ_i and j*(i) over the keys query i
 * sees; then pair by pair the terms π_ijl of a_ij and their chain rule. */
la_status la_ref_favor_attention_backward(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v)
{
    const la_favor_params favor = la_favor_params_of(p);
    (void)out;
    la_status st = check_backward(p, q, k, v, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    if (p->mask || p->key_mask) return LA_EINVAL; /* general masks: refused, as the kernel */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, m = favor.features;
    const size_t R = N + M; /* the rows: the N queries, then the M keys */
    size_t n_w, n_p, n_a;
    if (!doubles_fit(m, dk, 1, &n_w) || !doubles_fit(R, m, 1, &n_p) || !doubles_fit(M, 1, 1, &n_a))
        return LA_EOVERFLOW;
    double *w = malloc(n_w * sizeof *w), *proj = malloc(n_p * sizeof *proj);
    double *dproj = malloc(n_p * sizeof *dproj), *P = malloc(R * sizeof *P);
    double *dP = malloc(R * sizeof *dP), *g = malloc(M * sizeof *g), *dg = malloc(M * sizeof *dg);
    double *a = malloc(n_a * sizeof *a), *y = malloc(2 * dv * sizeof *y);
    double *dx = malloc(M * sizeof *dx); /* per key, the coefficient of x_j in dx_j */
    size_t *top = malloc(R * sizeof *top);
    if (!w || !proj || !dproj || !P || !dP || !g || !dg || !a || !y || !dx || !top) {
        st = LA_ENOMEM;
        goto done;
    }
    st = la_favor_w(p, w);
    if (st != LA_OK) goto done;
    zero_gradients(p, d_q, d_k, d_v);
    const double s = pow((double)dk, -0.25);
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const double *qh = q + HEAD(p, b, h, N, dk), *kh = k + HEAD(p, b, h, M, dk);
            const double *vh = v + HEAD(p, b, h, M, dv), *gh = d_out + HEAD(p, b, h, N, dv);
            double *dqh = d_q + HEAD(p, b, h, N, dk), *dkh = d_k + HEAD(p, b, h, M, dk);
            double *dvh = d_v + HEAD(p, b, h, M, dv);
            /* p, P and its argmax per row; g per key */
            for (size_t r = 0; r < R; r++) {
                const double *x = r < N ? qh + r * dk : kh + (r - N) * dk;
                P[r] = -INFINITY;
                for (size_t l = 0; l < m; l++) {
                    double acc = 0;
                    for (size_t c = 0; c < dk; c++)
                        acc += w[l * dk + c] * (s * x[c]);
                    proj[r * m + l] = acc;
                    if (acc > P[r]) {
                        P[r] = acc;
                        top[r] = l;
                    }
                }
                if (r >= N) {
                    double sq = 0;
                    for (size_t c = 0; c < dk; c++)
                        sq += (s * x[c]) * (s * x[c]);
                    g[r - N] = P[r] - sq / 2;
                }
            }
            memset(dproj, 0, R * m * sizeof *dproj);
            memset(dP, 0, R * sizeof *dP);
            memset(dg, 0, M * sizeof *dg);
            memset(dx, 0, M * sizeof *dx);
            for (size_t i = 0; i < N; i++) {
                const size_t vis = ref_visible_keys(p, b, i);
                if (vis == 0) continue; /* the empty row: no gradient */
                size_t star = 0;
                for (size_t j = 1; j < vis; j++)
                    star = g[j] > g[star] ? j : star;
                const double mu = g[star];
                /* a_ij = Σ_l π_ijl, y_i, den_i */
                double den = p->eps;
                memset(y, 0, dv * sizeof *y);
                for (size_t j = 0; j < vis; j++) {
                    a[j] = 0;
                    for (size_t l = 0; l < m; l++)
                        a[j] += exp(proj[i * m + l] - P[i] + proj[(N + j) * m + l] -
                                    (P[N + j] - g[j]) - mu) /
                                (double)m;
                    den += a[j];
                    for (size_t c = 0; c < dv; c++)
                        y[c] += a[j] * vh[j * dv + c];
                }
                if (den == 0) continue;
                double *gi = y + dv, dO_y = 0;
                for (size_t c = 0; c < dv; c++) {
                    y[c] /= den;
                    dO_y += gh[i * dv + c] * y[c];
                    gi[c] = gh[i * dv + c] / den;
                }
                const double ci = -dO_y / den;
                for (size_t j = 0; j < vis; j++) {
                    double dA = ci;
                    for (size_t c = 0; c < dv; c++) {
                        dA += gi[c] * vh[j * dv + c];
                        dvh[j * dv + c] += a[j] * gi[c];
                    }
                    for (size_t l = 0; l < m; l++) {
                        const double pi = exp(proj[i * m + l] - P[i] + proj[(N + j) * m + l] -
                                              (P[N + j] - g[j]) - mu) /
                                          (double)m;
                        dproj[i * m + l] += dA * pi;
                        dproj[(N + j) * m + l] += dA * pi;
                    }
                    dP[i] -= dA * a[j];
                    dg[star] -= dA * a[j]; /* through μ_i = g_{j*} */
                    dx[j] -= dA * a[j];    /* through −‖x_j‖²/2 */
                }
            }
            /* g_j = P_j − ‖x_j‖²/2; then P = max_l p through its argmax */
            for (size_t j = 0; j < M; j++) {
                dP[N + j] += dg[j];
                dx[j] -= dg[j];
            }
            for (size_t r = 0; r < R; r++)
                dproj[r * m + top[r]] += dP[r];
            /* d_x = dp W (+ the keys' direct term), d_q = s·d_x, d_k = s·d_x */
            for (size_t r = 0; r < R; r++) {
                double *dst = r < N ? dqh + r * dk : dkh + (r - N) * dk;
                for (size_t c = 0; c < dk; c++) {
                    double acc = 0;
                    for (size_t l = 0; l < m; l++)
                        acc += dproj[r * m + l] * w[l * dk + c];
                    if (r >= N) acc += dx[r - N] * (s * kh[(r - N) * dk + c]);
                    dst[c] = s * acc;
                }
            }
        }
done:
    free(w);
    free(proj);
    free(dproj);
    free(P);
    free(dP);
    free(g);
    free(dg);
    free(a);
    free(y);
    free(dx);
    free(top);
    return st;
}
