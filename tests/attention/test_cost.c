/* test_cost.c — the FLOP model (la_attention_cost) against counts taken two ways:
 *   - instrumented loops: each loop below computes the attention output in float64 in
 *     the form its kernel runs, adding to a counter per multiply-add (2), per add,
 *     compare, exp, divide (1) as it goes, and its output is checked against the
 *     float64 reference, so the counted algorithm is a correct one;
 *   - the linear and local kernels themselves: this program links the library built with
 *     -DLA_COUNT_FLOPS ($(BUILD)/count/liblinattn.a), whose kernels count what they
 *     issue as they run (every product 2·m·n·k at its call, every loop's adds and
 *     divides; core/internal.h), so a change to a kernel's arithmetic shows here.
 * The model must equal the counts exactly, field by field; the backward passes' model
 * (la_attention_backward_cost) is held to counting loops of their formulas the same way. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "attention/kernels.h"
#include "core/blocks.h"

#include "core/internal.h" /* the kernels' FLOP counters (la_count_*) */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counters, one per field of la_cost. */
typedef struct {
    double qk, softmax, av, phi, kv, qs, normalize;
} counts;

/* Fails unless counted (qk, softmax, av, phi, kv, qs, normalize: la_cost's flops_* in
 * that order) equals the model class by class; the message names the call (what, then
 * p's sizes), the class and who counted it. Returns the model's sum of the seven. */
static double same_as_model(const la_cost *model, const double counted[7], const char *who,
                            const char *what, const la_problem *p)
{
    const double want[] = {model->flops_qk,       model->flops_softmax, model->flops_av,
                           model->flops_phi,      model->flops_kv,      model->flops_qs,
                           model->flops_normalize};
    const char *names[] = {"qk", "softmax", "av", "phi", "kv", "qs", "normalize"};
    double total = 0;
    for (size_t f = 0; f < 7; f++) {
        total += want[f];
        if (counted[f] != want[f])
            fail_msg("%s B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu causal=%d chunk=%zu "
                     "window=%zu lengths=%s: flops_%s model %.17g, %s %.17g (seed %llu)",
                     what, p->batch, p->heads, p->n_queries, p->n_keys, p->d_k, p->d_v, p->causal,
                     p->chunk, la_local_params_of(p).window, p->key_lengths ? "yes" : "no",
                     names[f], want[f], who, counted[f], (unsigned long long)tu_seed());
    }
    return total;
}

/* One block of each kind (core/blocks.h), at their defaults and chained from p->params,
 * each kernel reading its own; the test sets a field of the kind it varies. */
static void blocks_attach(la_blocks *b, la_problem *p)
{
    la_blocks_init(b, 0);
    p->params = la_blocks_chain(b);
}

/* Keys of entry b left visible by the key lengths. */
static size_t keys_visible(const la_problem *p, size_t b)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    return m;
}

static size_t smaller(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Keys of entry b that some query sees: those in length, and under causal masking the
 * keys the last query reaches, j <= N − 1 + o (o = M − N bottom-right, else 0). The
 * transforming kernels (general, cosine, additive) transform these only. */
static size_t keys_seen(const la_problem *p, size_t b)
{
    const size_t vis = keys_visible(p, b);
    if (!p->causal) return vis;
    const size_t N = p->n_queries, M = p->n_keys;
    if (p->causal_align != LA_CAUSAL_BOTTOM_RIGHT || M <= N) {
        const size_t reach = p->causal_align == LA_CAUSAL_BOTTOM_RIGHT ? M : N;
        return smaller(vis, reach);
    }
    return vis; /* bottom-right with M > N: the last query reaches every key */
}

/* φ of one element, counted. */
static double phi(const la_problem *p, double x, counts *c)
{
    c->phi += 1;
    double y;
    la_ref_feature_map(p->feature_map, &x, &y, 1);
    return y;
}

/* Softmax and hard attention, one head: scores, softmax (or argmax), P·V; local attention
 * (`local`) the same over the keys of query i's window, |i − j| <= r (its la_local_params).
 *   q: (N, d_k), k: (M, d_k), v: (M, d_v), out: (N, d_v) */
static void count_softmax(const la_problem *p, size_t b, int hard, int local, const double *q,
                          const double *k, const double *v, double *out, counts *c)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v;
    const size_t window = la_local_params_of(p).window;
    double *row = tu_f64(p->n_keys);
    for (size_t i = 0; i < N; i++) {
        size_t vis = keys_visible(p, b), first = 0;
        if (p->causal) vis = smaller(vis, i + 1);
        if (local) { /* the keys [first, vis) of the window */
            first = i > window ? i - window : 0;
            if (window < p->n_keys) vis = smaller(vis, i + window + 1);
            if (first > vis) first = vis;
        }
        /* scores: one multiply-add per (pair, feature) */
        for (size_t j = first; j < vis; j++) {
            double s = 0;
            for (size_t a = 0; a < dk; a++, c->qk += 2)
                s += q[i * dk + a] * k[j * dk + a];
            row[j] = s * p->scale;
        }
        if (hard) {
            /* argmax: one compare per pair */
            size_t best = 0;
            for (size_t j = 0; j < vis; j++, c->softmax += 1)
                if (j == 0 || row[j] > row[best]) best = j;
            for (size_t a = 0; a < dv; a++)
                out[i * dv + a] = vis ? v[best * dv + a] : 0;
            continue;
        }
        /* softmax: max, subtract, exp, sum, divide — one of each per pair */
        double max = -INFINITY, sum = 0;
        for (size_t j = first; j < vis; j++, c->softmax += 1)
            max = row[j] > max ? row[j] : max;
        for (size_t j = first; j < vis; j++, c->softmax += 1)
            row[j] -= max;
        for (size_t j = first; j < vis; j++, c->softmax += 1)
            row[j] = exp(row[j]);
        for (size_t j = first; j < vis; j++, c->softmax += 1)
            sum += row[j];
        for (size_t j = first; j < vis; j++, c->softmax += 1)
            row[j] /= sum;
        /* P·V: one multiply-add per (pair, output feature) */
        for (size_t a = 0; a < dv; a++) {
            double acc = 0;
            for (size_t j = first; j < vis; j++, c->av += 2)
                acc += row[j] * v[j * dv + a];
            out[i * dv + a] = acc;
        }
    }
    free(row);
}

/* Softmax with relative positions, one head, in the form its kernel runs: per
 * query, q·a^K_δ once for each distance δ the row meets (2·d_k each), then per pair q·k
 * (2·d_k) plus that term (1); softmax (5 per pair); per pair α·v (2·d_v) and α summed into
 * its distance (1); per distance the summed weight times a^V_δ (2·d_v). Tables drawn by
 * la_relative_embeddings from the block's seed. */
static void count_relative(const la_problem *p, size_t b, const double *q, const double *k,
                           const double *v, double *out, counts *c)
{
    const la_relative_params rel = la_relative_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, K = rel.max_distance;
    const size_t rows = 2 * K + 1;
    double *a_k = tu_f64(rows * dk), *a_v = tu_f64(rows * dv), *row = tu_f64(M);
    double *qa = tu_f64(rows), *w = tu_f64(rows);
    size_t *index = tu_alloc(M * sizeof *index);
    bool *met = tu_alloc(rows * sizeof *met);
    assert_int_equal(la_relative_embeddings(K, dk, dv, rel.seed, a_k, a_v), LA_OK);
    /* causal: query i sees j <= i + o, o = M − N bottom-right, 0 top-left */
    const double o = p->causal_align == LA_CAUSAL_BOTTOM_RIGHT ? (double)M - (double)N : 0;
    for (size_t i = 0; i < N; i++) {
        size_t vis = keys_visible(p, b);
        if (p->causal) vis = (size_t)fmin((double)vis, fmax(0, (double)i + o + 1));
        for (size_t a = 0; a < dv; a++)
            out[i * dv + a] = 0;
        if (vis == 0) continue;
        /* the row's distances: clip(j − i, −K, K) + K for j = 0 .. vis − 1 */
        for (size_t r = 0; r < rows; r++)
            met[r] = false;
        for (size_t j = 0; j < vis; j++) {
            const double delta = (double)j - (double)i;
            index[j] = (size_t)(fmin(fmax(delta, -(double)K), (double)K) + (double)K);
            met[index[j]] = true;
        }
        for (size_t r = 0; r < rows; r++) {
            qa[r] = w[r] = 0;
            if (!met[r]) continue;
            for (size_t a = 0; a < dk; a++, c->qk += 2)
                qa[r] += q[i * dk + a] * a_k[r * dk + a];
        }
        for (size_t j = 0; j < vis; j++) {
            double s = 0;
            for (size_t a = 0; a < dk; a++, c->qk += 2)
                s += q[i * dk + a] * k[j * dk + a];
            s += qa[index[j]];
            c->qk += 1;
            row[j] = s * p->scale;
        }
        double max = -INFINITY, sum = 0;
        for (size_t j = 0; j < vis; j++, c->softmax += 1)
            max = row[j] > max ? row[j] : max;
        for (size_t j = 0; j < vis; j++, c->softmax += 1)
            row[j] -= max;
        for (size_t j = 0; j < vis; j++, c->softmax += 1)
            row[j] = exp(row[j]);
        for (size_t j = 0; j < vis; j++, c->softmax += 1)
            sum += row[j];
        for (size_t j = 0; j < vis; j++, c->softmax += 1)
            row[j] /= sum;
        for (size_t j = 0; j < vis; j++) {
            for (size_t a = 0; a < dv; a++, c->av += 2)
                out[i * dv + a] += row[j] * v[j * dv + a];
            w[index[j]] += row[j];
            c->av += 1;
        }
        for (size_t r = 0; r < rows; r++) {
            if (!met[r]) continue;
            for (size_t a = 0; a < dv; a++, c->av += 2)
                out[i * dv + a] += w[r] * a_v[r * dv + a];
        }
    }
    free(a_k), free(a_v), free(row), free(qa), free(w), free(index), free(met);
}

/* out_i = num / (den + eps), counted: one add, d_v divides. */
static void normalise(const la_problem *p, const double *num, double den, double *out, counts *c)
{
    double d = den + p->eps;
    c->normalize += 1;
    for (size_t a = 0; a < p->d_v; a++, c->normalize += 1)
        out[a] = num[a] / d;
}

/* S += φ(k) vᵀ, z += φ(k), counted into kv. */
static void add_key(const la_problem *p, const double *phik, const double *vj, double *S, double *z,
                    counts *c)
{
    for (size_t a = 0; a < p->d_k; a++) {
        for (size_t e = 0; e < p->d_v; e++, c->kv += 2)
            S[a * p->d_v + e] += phik[a] * vj[e];
        z[a] += phik[a];
        c->kv += 1;
    }
}

/* num = φ(q)ᵀS, den = φ(q)·z, counted into qs. */
static double query_state(const la_problem *p, const double *phiq, const double *S, const double *z,
                          double *num, counts *c)
{
    double den = 0;
    for (size_t e = 0; e < p->d_v; e++)
        num[e] = 0;
    for (size_t a = 0; a < p->d_k; a++) {
        for (size_t e = 0; e < p->d_v; e++, c->qs += 2)
            num[e] += phiq[a] * S[a * p->d_v + e];
        den += phiq[a] * z[a];
        c->qs += 2;
    }
    return den;
}

/* Linear attention, one head, in the form the kernel runs for p->causal and `recurrent`.
 *   non-causal: S, z over the m visible keys once, then every query;
 *   recurrent: token t adds key t (when visible), then queries;
 *   chunked: per chunk, intra-chunk masked products plus the carried state, then the
 *     chunk's keys join the state when a later chunk needs them. */
static void count_on_features(const la_problem *p, size_t m, int recurrent, const double *phiq,
                              const double *phik, const double *v, double *out, counts *c);

static void count_linear(const la_problem *p, size_t b, int recurrent, const double *q,
                         const double *k, const double *v, double *out, counts *c)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v;
    size_t m = keys_visible(p, b);
    memset(out, 0, N * dv * sizeof *out);
    if (m == 0) return; /* nobody sees a key: zeros, no work */
    size_t used = p->causal ? smaller(N, m) : m;
    double *phiq = tu_f64(N * dk), *phik = tu_f64(used * dk);
    for (size_t x = 0; x < N * dk; x++)
        phiq[x] = phi(p, q[x], c);
    for (size_t x = 0; x < used * dk; x++)
        phik[x] = phi(p, k[x], c);
    count_on_features(p, m, recurrent, phiq, phik, v, out, c);
    free(phiq);
    free(phik);
}

/* Taylor linear attention, one head of entry b: the features φ_q = [1, σ·r·q, t·q⊗q] of the
 * N queries and φ_k = [1, r·k, t·k⊗k] of the keys the scan reads (r = √|scale|, t =
 * |scale|/√2), r·x and t·x d_k multiplies each and t·x_a·x_b d_k² per row, counted into
 * phi; then linear attention on them with d_k = 1 + d_k + d_k², as count_linear's. */
static void count_taylor(const la_problem *p, size_t b, const double *q, const double *k,
                         const double *v, double *out, counts *c)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v, F = 1 + dk + dk * dk;
    const size_t m = keys_visible(p, b);
    memset(out, 0, N * dv * sizeof *out);
    if (m == 0) return;
    const size_t used = p->causal ? smaller(N, m) : m;
    double *phiq = tu_f64(N * F), *phik = tu_f64(used * F);
    const double r = sqrt(fabs(p->scale)), t = fabs(p->scale) / sqrt(2.0);
    for (size_t row = 0; row < N + used; row++) {
        const bool query = row < N;
        const double *x = query ? q + row * dk : k + (row - N) * dk;
        double *f = query ? phiq + row * F : phik + (row - N) * F;
        f[0] = 1;
        for (size_t a = 0; a < dk; a++, c->phi += 2) {
            f[1 + a] = (query && p->scale < 0 ? -r : r) * x[a];
            for (size_t e = 0; e < dk; e++, c->phi += 1)
                f[1 + dk + a * dk + e] = (t * x[a]) * x[e];
        }
    }
    la_problem f = *p;
    f.d_k = F;
    count_on_features(&f, m, 0, phiq, phik, v, out, c);
    free(phiq);
    free(phik);
}

/* Linear attention on features formed (phiq (N, d_k), phik (used, d_k)) for an entry with m
 * visible keys: non-causal, recurrent, or causal in chunks of p->chunk. */
static void count_on_features(const la_problem *p, size_t m, int recurrent, const double *phiq,
                              const double *phik, const double *v, double *out, counts *c)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v;
    double *S = calloc(dk * dv, sizeof *S), *z = calloc(dk, sizeof *z);
    double *num = tu_f64(dv);
    assert_non_null(S);
    assert_non_null(z);
    if (!p->causal) {
        for (size_t j = 0; j < m; j++)
            add_key(p, phik + j * dk, v + j * dv, S, z, c);
        for (size_t i = 0; i < N; i++) {
            double den = query_state(p, phiq + i * dk, S, z, num, c);
            normalise(p, num, den, out + i * dv, c);
        }
    } else if (recurrent) {
        for (size_t t = 0; t < N; t++) {
            if (t < m) add_key(p, phik + t * dk, v + t * dv, S, z, c);
            double den = query_state(p, phiq + t * dk, S, z, num, c);
            normalise(p, num, den, out + t * dv, c);
        }
    } else {
        for (size_t s = 0; s < N; s += p->chunk) {
            size_t e = smaller(s + p->chunk, N);
            for (size_t i = s; i < e; i++) {
                /* intra-chunk, visible pairs only: a_ij = φq_i·φk_j for s <= j <= i,
                 * j < m; num += a_ij v_j, and the row sum of A, one add per pair */
                double den = 0;
                for (size_t x = 0; x < dv; x++)
                    num[x] = 0;
                for (size_t j = s; j < smaller(i + 1, m); j++) {
                    double a_ij = 0;
                    for (size_t a = 0; a < dk; a++, c->qk += 2)
                        a_ij += phiq[i * dk + a] * phik[j * dk + a];
                    for (size_t x = 0; x < dv; x++, c->av += 2)
                        num[x] += a_ij * v[j * dv + x];
                    den += a_ij;
                    c->av += 1;
                }
                /* carried state of keys [0, min(s, m)): num += φq_iᵀ S, den += φq_i·z
                 * (summed into the same accumulators: no separate join) */
                if (s > 0) {
                    for (size_t a = 0; a < dk; a++) {
                        for (size_t x = 0; x < dv; x++, c->qs += 2)
                            num[x] += phiq[i * dk + a] * S[a * dv + x];
                        den += phiq[i * dk + a] * z[a];
                        c->qs += 2;
                    }
                }
                normalise(p, num, den, out + i * dv, c);
            }
            /* this chunk's visible keys join the state when a later chunk exists:
             * S += φ(k_j) v_jᵀ (multiply-adds), z += φ(k_j) (adds) */
            if (e < N)
                for (size_t j = s; j < smaller(e, m); j++)
                    for (size_t a = 0; a < dk; a++) {
                        for (size_t x = 0; x < dv; x++, c->kv += 2)
                            S[a * dv + x] += phik[j * dk + a] * v[j * dv + x];
                        z[a] += phik[j * dk + a];
                        c->kv += 1;
                    }
        }
    }
    free(S);
    free(z);
    free(num);
}

/* Linformer, one head of entry b: K' = E·K and V' = F·V over the visible keys, one
 * multiply-add per (projected row, column, visible key), counted into kv; then softmax over
 * the k projected keys, all seen (count_softmax on that problem). E and F as the kernel
 * takes them: given, or drawn by la_linformer_projections. */
static void count_linformer(const la_problem *p, size_t b, const double *q, const double *k,
                            const double *v, double *out, counts *c)
{
    const la_linformer_params lin = la_linformer_params_of(p);
    const size_t M = p->n_keys, r = lin.proj_rank, dk = p->d_k, dv = p->d_v;
    const size_t vis = keys_visible(p, b);
    double *drawn = tu_f64(2 * r * M), *kp = tu_f64(r * dk), *vp = tu_f64(r * dv);
    const double *e = lin.proj_e, *f = lin.proj_f;
    if (!e) {
        assert_int_equal(la_linformer_projections(r, M, lin.seed, drawn, drawn + r * M), LA_OK);
        e = drawn, f = drawn + r * M;
    }
    for (size_t a = 0; a < r; a++) {
        for (size_t x = 0; x < dk; x++) {
            kp[a * dk + x] = 0;
            for (size_t j = 0; j < vis; j++, c->kv += 2)
                kp[a * dk + x] += e[a * M + j] * k[j * dk + x];
        }
        for (size_t x = 0; x < dv; x++) {
            vp[a * dv + x] = 0;
            for (size_t j = 0; j < vis; j++, c->kv += 2)
                vp[a * dv + x] += f[a * M + j] * v[j * dv + x];
        }
    }
    la_problem inner;
    la_problem_init(&inner, 1, 1, p->n_queries, r, dk, dv);
    inner.scale = p->scale;
    count_softmax(&inner, 0, 0, 0, q, kp, vp, out, c);
    free(drawn);
    free(kp);
    free(vp);
}

/* The score functions, one head, in the form their kernels run, with the
 * weights given in p or drawn by la_score_weights:
 *   general: K' = K Wᵀ over the visible keys (a multiply-add per (key, a, b)), then softmax
 *     on (Q, K') counted as count_softmax counts it;
 *   cosine: when some key is visible, each query and visible key normalised (‖x‖: a
 *     multiply-add per entry and a square root; x / ‖x‖: a divide per entry), then softmax;
 *   additive: when some key is visible, A = Q W_qᵀ (qs) and C = K W_kᵀ over the visible
 *     keys (kv), a multiply-add per (row, e, c); per visible pair and e an add, a tanh and a
 *     multiply-add (qk); then softmax and P·V as count_softmax counts them. */
static const double *score_weights_of(const la_problem *p, la_kernel kernel, double *drawn)
{
    const la_score_params score = la_score_params_of(p);
    if (score.score_w) return score.score_w;
    const size_t n_w = kernel == LA_KERNEL_GENERAL ? p->d_k * p->d_k : 2 * p->d_k * score.score_dim;
    assert_int_equal(la_score_weights(kernel, p->d_k, score.score_dim, score.seed, drawn,
                                      kernel == LA_KERNEL_ADDITIVE ? drawn + n_w : NULL),
                     LA_OK);
    return drawn;
}

static void count_general(const la_problem *p, size_t b, const double *q, const double *k,
                          const double *v, double *out, counts *c)
{
    const size_t M = p->n_keys, dk = p->d_k, vis = keys_seen(p, b);
    double *drawn = tu_f64(dk * dk), *kp = tu_f64(M * dk);
    const double *w = score_weights_of(p, LA_KERNEL_GENERAL, drawn);
    for (size_t j = 0; j < M; j++)
        for (size_t a = 0; a < dk; a++) {
            kp[j * dk + a] = 0;
            if (j >= vis) continue;
            for (size_t x = 0; x < dk; x++, c->kv += 2)
                kp[j * dk + a] += w[a * dk + x] * k[j * dk + x];
        }
    count_softmax(p, b, 0, 0, q, kp, v, out, c);
    free(drawn);
    free(kp);
}

static void count_cosine(const la_problem *p, size_t b, const double *q, const double *k,
                         const double *v, double *out, counts *c)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, vis = keys_seen(p, b);
    double *qn = tu_f64(N * dk), *kn = tu_f64(M * dk);
    memset(qn, 0, N * dk * sizeof *qn);
    memset(kn, 0, M * dk * sizeof *kn);
    for (size_t row = 0; vis > 0 && row < N + vis; row++) {
        const double *x = row < N ? q + row * dk : k + (row - N) * dk;
        double *y = row < N ? qn + row * dk : kn + (row - N) * dk;
        double norm = 0;
        for (size_t a = 0; a < dk; a++, c->phi += 2)
            norm += x[a] * x[a];
        norm = sqrt(norm);
        c->phi += 1;
        if (norm < 1e-12) norm = 1e-12;
        for (size_t a = 0; a < dk; a++, c->phi += 1)
            y[a] = x[a] / norm;
    }
    count_softmax(p, b, 0, 0, qn, kn, v, out, c);
    free(qn);
    free(kn);
}

static void count_additive(const la_problem *p, size_t b, const double *q, const double *k,
                           const double *v, double *out, counts *c)
{
    const la_score_params score = la_score_params_of(p);
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v, da = score.score_dim;
    const size_t vis = keys_visible(p, b);
    memset(out, 0, N * dv * sizeof *out);
    if (vis == 0) return;
    double *drawn = tu_f64(2 * dk * da + da), *a = tu_f64(N * da), *cm = tu_f64(vis * da);
    double *row = tu_f64(vis);
    const double *w = score_weights_of(p, LA_KERNEL_ADDITIVE, drawn);
    const double *wv = score.score_w ? score.score_v : drawn + 2 * dk * da;
    for (size_t i = 0; i < N; i++)
        for (size_t e = 0; e < da; e++) {
            a[i * da + e] = 0;
            for (size_t x = 0; x < dk; x++, c->qs += 2)
                a[i * da + e] += w[e * 2 * dk + x] * q[i * dk + x];
        }
    for (size_t j = 0; j < keys_seen(p, b); j++)
        for (size_t e = 0; e < da; e++) {
            cm[j * da + e] = 0;
            for (size_t x = 0; x < dk; x++, c->kv += 2)
                cm[j * da + e] += w[e * 2 * dk + dk + x] * k[j * dk + x];
        }
    for (size_t i = 0; i < N; i++) {
        const size_t seen = p->causal ? smaller(vis, i + 1) : vis;
        double max = -INFINITY, sum = 0;
        for (size_t j = 0; j < seen; j++) {
            double s = 0;
            for (size_t e = 0; e < da; e++, c->qk += 4)
                s += wv[e] * tanh(a[i * da + e] + cm[j * da + e]);
            row[j] = s;
        }
        for (size_t j = 0; j < seen; j++, c->softmax += 2) /* max, subtract */
            max = row[j] > max ? row[j] : max;
        for (size_t j = 0; j < seen; j++, c->softmax += 2) /* exp, sum */
            sum += (row[j] = exp(row[j] - max));
        for (size_t j = 0; j < seen; j++, c->softmax += 1)
            row[j] /= sum;
        for (size_t x = 0; x < dv; x++) {
            double acc = 0;
            for (size_t j = 0; j < seen; j++, c->av += 2)
                acc += row[j] * v[j * dv + x];
            out[i * dv + x] = acc;
        }
    }
    free(drawn);
    free(a);
    free(cm);
    free(row);
}

/* FAVOR+, one head, in the form its kernel runs: m random features (its la_favor_params) (W from
 * la_favor_features), counted as issued:
 *   per query: the projection s·q Wᵀ (2·d_k per feature), the row max P (1 per feature),
 *     φ = exp((proj − P) − ln(m)/2) (3 per feature);
 *   per key some query sees (u of them): the projection, the row max P, ‖s·k‖²/2 as
 *     (k·k)·(1/(2√d_k)) (2·d_k + 1), g = P − that (1), the max of g (1), then
 *     non-causal o = ln(m)/2 − (g − μ) (2) and φ = exp((proj − P) − o) (3 per feature),
 *     causal ψ = exp((proj − P) − ln(m)/2) (3 per feature);
 *   then linear attention on the features with d_k = m: non-causal S, z over the u keys
 *     and every query; causal in chunks, as la_favor_cost's comment (favor.c) says;
 *     recurrent (favor_recurrent) token by token: the running max (1), the state rescaled
 *     by exp(μ − μ') for every key after the first (2 + m·(d_v + 1)), ψ' (2 + m), S and z
 *     updated, then every query reads the state. */
static void count_favor(const la_problem *p, size_t b, bool recurrent, const double *q,
                        const double *k, const double *v, double *out, counts *c)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v, m = favor.features;
    const size_t vis = keys_visible(p, b);
    memset(out, 0, N * dv * sizeof *out);
    if (vis == 0) return;
    const size_t u = p->causal ? smaller(N, vis) : vis;
    la_problem f = *p; /* linear attention on the features: d_k = m */
    f.d_k = m;
    double *w = tu_f64(m * dk), *phiq = tu_f64(N * m), *proj = tu_f64(u * m);
    double *P = tu_f64(u), *g = tu_f64(u), *phik = tu_f64(m), *num = tu_f64(dv);
    double *S = calloc(m * dv, sizeof *S), *z = calloc(m, sizeof *z);
    assert_non_null(S);
    assert_non_null(z);
    assert_int_equal(la_favor_features(m, dk, favor.seed, w), LA_OK);
    const double s = pow((double)dk, -0.25), half_log_m = 0.5 * log((double)m);
    for (size_t i = 0; i < N; i++) {
        double max = -INFINITY;
        for (size_t l = 0; l < m; l++, c->phi += 1) {
            double x = 0;
            for (size_t a = 0; a < dk; a++, c->phi += 2)
                x += w[l * dk + a] * (s * q[i * dk + a]);
            phiq[i * m + l] = x;
            max = x > max ? x : max;
        }
        for (size_t l = 0; l < m; l++, c->phi += 3)
            phiq[i * m + l] = exp((phiq[i * m + l] - max) - half_log_m);
    }
    double mu = -INFINITY;
    for (size_t j = 0; j < u; j++) {
        double max = -INFINITY, sq = 0;
        for (size_t l = 0; l < m; l++, c->phi += 1) {
            double x = 0;
            for (size_t a = 0; a < dk; a++, c->phi += 2)
                x += w[l * dk + a] * (s * k[j * dk + a]);
            proj[j * m + l] = x;
            max = x > max ? x : max;
        }
        for (size_t a = 0; a < dk; a++, c->phi += 2)
            sq += k[j * dk + a] * k[j * dk + a];
        c->phi += 2;
        P[j] = max;
        g[j] = max - sq * (0.5 / sqrt((double)dk));
    }
    if (!p->causal) {
        for (size_t j = 0; j < u; j++, c->phi += 1)
            mu = g[j] > mu ? g[j] : mu;
        for (size_t j = 0; j < u; j++) {
            const double o = half_log_m - (g[j] - mu);
            c->phi += 2;
            for (size_t l = 0; l < m; l++, c->phi += 3)
                phik[l] = exp((proj[j * m + l] - P[j]) - o);
            add_key(&f, phik, v + j * dv, S, z, c);
        }
        for (size_t i = 0; i < N; i++) {
            double den = query_state(&f, phiq + i * m, S, z, num, c);
            normalise(&f, num, den, out + i * dv, c);
        }
    } else {
        /* chunks of C: ψ(k_j) = exp((proj − P_j) − ln(m)/2); query i's weights
         * a_ij = φ(q_i)·ψ(k_j)·exp(g_j − μ_i), μ_i the running max of g over keys <= i;
         * the state carried at the scale of μ, the running max of the keys it holds */
        const size_t C = smaller(p->chunk, N);
        double *psi = tu_f64(u * m), *den = tu_f64(N), *mu_i = tu_f64(N);
        for (size_t j = 0; j < u; j++)
            for (size_t l = 0; l < m; l++, c->phi += 3)
                psi[j * m + l] = exp((proj[j * m + l] - P[j]) - half_log_m);
        mu = g[0];
        if (recurrent) {
            for (size_t i = 0; i < N; i++) {
                if (i < u) {
                    const double mu_new = g[i] > mu ? g[i] : mu;
                    c->phi += 1;
                    if (i > 0) {
                        const double r = exp(mu - mu_new);
                        c->kv += 2;
                        for (size_t a = 0; a < m * dv; a++, c->kv += 1)
                            S[a] *= r;
                        for (size_t a = 0; a < m; a++, c->kv += 1)
                            z[a] *= r;
                    }
                    const double fi = exp(g[i] - mu_new);
                    c->kv += 2;
                    for (size_t l = 0; l < m; l++, c->kv += 1)
                        phik[l] = psi[i * m + l] * fi;
                    add_key(&f, phik, v + i * dv, S, z, c);
                    mu = mu_new;
                }
                const double d = query_state(&f, phiq + i * m, S, z, num, c);
                normalise(&f, num, d, out + i * dv, c);
            }
        }
        for (size_t s0 = 0; !recurrent && s0 < N; s0 += C) {
            const size_t e = smaller(s0 + C, N), ke = smaller(e, u);
            double run = mu;
            for (size_t i = s0; i < e; i++) {
                if (i < ke) {
                    run = g[i] > run ? g[i] : run;
                    c->phi += 1;
                }
                mu_i[i] = run;
            }
            for (size_t i = s0; i < e; i++) {
                /* carried: r_i φ(q_i)ᵀS, r_i φ(q_i)·z */
                den[i] = 0;
                for (size_t x = 0; x < dv; x++)
                    num[x] = 0;
                if (s0 > 0) {
                    den[i] = query_state(&f, phiq + i * m, S, z, num, c);
                    const double r = exp(mu - mu_i[i]);
                    c->qs += 2;
                    den[i] *= r;
                    c->qs += 1;
                    for (size_t x = 0; x < dv; x++, c->qs += 1)
                        num[x] *= r;
                }
                /* intra-chunk, visible pairs: a_ij v_j and the row sum */
                for (size_t j = s0; j < smaller(i + 1, ke); j++) {
                    double a_ij = 0;
                    for (size_t l = 0; l < m; l++, c->qk += 2)
                        a_ij += phiq[i * m + l] * psi[j * m + l];
                    a_ij *= exp(g[j] - mu_i[i]);
                    c->qk += 3;
                    for (size_t x = 0; x < dv; x++, c->av += 2)
                        num[x] += a_ij * v[j * dv + x];
                    den[i] += a_ij;
                    c->av += 1;
                }
                normalise(&f, num, den[i], out + i * dv, c);
            }
            /* the state for a later chunk: rescaled to μ', plus the chunk's keys */
            if (s0 < ke && e < N) {
                const double mu_new = mu_i[ke - 1];
                if (s0 > 0) {
                    const double r = exp(mu - mu_new);
                    c->kv += 2;
                    for (size_t a = 0; a < m * dv; a++, c->kv += 1)
                        S[a] *= r;
                    for (size_t a = 0; a < m; a++, c->kv += 1)
                        z[a] *= r;
                }
                for (size_t j = s0; j < ke; j++) {
                    const double fj = exp(g[j] - mu_new);
                    c->kv += 2;
                    for (size_t l = 0; l < m; l++, c->kv += 1)
                        phik[l] = psi[j * m + l] * fj;
                    add_key(&f, phik, v + j * dv, S, z, c);
                }
                mu = mu_new;
            }
        }
        free(psi), free(den), free(mu_i);
    }
    free(w), free(phiq), free(proj), free(P), free(g), free(phik), free(num), free(S), free(z);
}

/* Runs the instrumented loops over every head, checks their output against the
 * reference and their counts against the model. */
/* The bytes the algorithm of kernel moves at least, counted array by array, head by head:
 * q, k, v read and out written once, then what the algorithm holds by design, written and
 * read once (lib/linattn.h, la_cost.bytes_min). elem: the call's element size. */
static double bytes_counted(la_kernel kernel, const la_problem *p, size_t elem)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t m = la_favor_params_of(p).features, rank = la_linformer_params_of(p).proj_rank;
    double bytes = 0;
    switch (kernel) { /* arrays of the call, read once: float64 whatever elem */
    case LA_KERNEL_LINFORMER: bytes += (double)(2 * rank * M * sizeof(double)); break; /* E, F */
    case LA_KERNEL_FAVOR:
    case LA_KERNEL_FAVOR_RECURRENT: bytes += (double)(m * dk * sizeof(double)); break; /* W */
    case LA_KERNEL_GENERAL: bytes += (double)(dk * dk * sizeof(double)); break;        /* W */
    case LA_KERNEL_RELATIVE: /* a^K (2K+1, d_k), a^V (2K+1, d_v) */
        bytes +=
            (double)((2 * la_relative_params_of(p).max_distance + 1) * (dk + dv) * sizeof(double));
        break;
    case LA_KERNEL_ADDITIVE: /* W (d_a, 2 d_k), v */
        bytes += (double)((la_score_params_of(p).score_dim * (2 * dk + 1)) * sizeof(double));
        break;
    default: break;
    }
    for (size_t b = 0; b < p->batch; b++) {
        for (size_t h = 0; h < p->heads; h++) {
            /* q read, and k, v of the keys some query sees */
            size_t elements = N * dk + keys_seen(p, b) * (dk + dv);
            elements += N * dv; /* out written */
            switch (kernel) {
            case LA_KERNEL_SOFTMAX:
            case LA_KERNEL_HARD:
            case LA_KERNEL_LOCAL: break; /* scores stay in blocks */
            case LA_KERNEL_SOFTMAX_MATERIALIZED: elements += N * M + N * M; break;
            case LA_KERNEL_LINEAR:
            case LA_KERNEL_LINEAR_RECURRENT:
                elements += 2 * (dk * dv) + 2 * dk; /* S, z out and back */
                break;
            case LA_KERNEL_LINFORMER:
                elements += 2 * (rank * dk) + 2 * (rank * dv); /* K', V' out and back */
                break;
            case LA_KERNEL_FAVOR:
            case LA_KERNEL_FAVOR_RECURRENT:
                elements += 2 * (m * dv) + 2 * m; /* S, z on the features */
                break;
            case LA_KERNEL_TAYLOR: /* S, z on its 1 + d_k + d_k² features */
                elements += 2 * ((1 + dk + dk * dk) * dv) + 2 * (1 + dk + dk * dk);
                break;
            case LA_KERNEL_RELATIVE: break; /* each query's row of scores stays in cache */
            case LA_KERNEL_GENERAL: elements += 2 * (M * dk); break; /* K W out and back */
            case LA_KERNEL_COSINE:
                elements += 2 * (N * dk) + 2 * (M * dk); /* normalised q, k out and back */
                break;
            case LA_KERNEL_ADDITIVE: /* Q W_qᵀ and K W_kᵀ out and back */
                elements += 2 * (N * la_score_params_of(p).score_dim) +
                            2 * (M * la_score_params_of(p).score_dim);
                break;
            default:
                fail_msg("%s: no byte count here for this kernel: say what its algorithm must "
                         "move (la_cost.bytes_min)",
                         la_kernel_name(kernel));
            }
            bytes += (double)(elements * elem);
        }
    }
    return bytes;
}

static void check_model(la_kernel kernel, const la_problem *p, tu_rng *r)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, M = p->n_keys;
    const size_t dk = p->d_k, dv = p->d_v;
    double *q = tu_f64(B * H * N * dk), *k = tu_f64(B * H * M * dk);
    double *v = tu_f64(B * H * M * dv), *out = tu_f64(B * H * N * dv);
    double *ref = tu_f64(B * H * N * dv);
    tu_fill_normal(r, q, B * H * N * dk, 1);
    tu_fill_normal(r, k, B * H * M * dk, 1);
    tu_fill_normal(r, v, B * H * M * dv, 1);

    counts c = {0};
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < H; h++) {
            size_t head = b * H + h;
            const double *qh = q + head * N * dk, *kh = k + head * M * dk;
            const double *vh = v + head * M * dv;
            double *oh = out + head * N * dv;
            switch (kernel) {
            case LA_KERNEL_LINEAR:
            case LA_KERNEL_LINEAR_RECURRENT:
                count_linear(p, b, kernel == LA_KERNEL_LINEAR_RECURRENT, qh, kh, vh, oh, &c);
                break;
            case LA_KERNEL_FAVOR:
            case LA_KERNEL_FAVOR_RECURRENT:
                count_favor(p, b, kernel == LA_KERNEL_FAVOR_RECURRENT, qh, kh, vh, oh, &c);
                break;
            case LA_KERNEL_SOFTMAX:
            case LA_KERNEL_SOFTMAX_MATERIALIZED:
            case LA_KERNEL_HARD:
            case LA_KERNEL_LOCAL:
                count_softmax(p, b, kernel == LA_KERNEL_HARD, kernel == LA_KERNEL_LOCAL, qh, kh, vh,
                              oh, &c);
                break;
            case LA_KERNEL_LINFORMER: count_linformer(p, b, qh, kh, vh, oh, &c); break;
            case LA_KERNEL_GENERAL: count_general(p, b, qh, kh, vh, oh, &c); break;
            case LA_KERNEL_COSINE: count_cosine(p, b, qh, kh, vh, oh, &c); break;
            case LA_KERNEL_ADDITIVE: count_additive(p, b, qh, kh, vh, oh, &c); break;
            case LA_KERNEL_RELATIVE: count_relative(p, b, qh, kh, vh, oh, &c); break;
            case LA_KERNEL_TAYLOR: count_taylor(p, b, qh, kh, vh, oh, &c); break;
            default:
                fail_msg("%s: no counting loop here for this kernel: a new kernel's cost "
                         "function needs one (an independent count of its arithmetic)",
                         la_kernel_name(kernel));
            }
        }
    }
    assert_int_equal(la_ref_attention(kernel, p, q, k, v, ref), LA_OK);
    tu_assert_close_f64(out, ref, B * H * N * dv, 1e-12, "%s counting loop vs reference",
                        la_kernel_name(kernel));

    la_cost model;
    assert_int_equal(la_attention_cost(kernel, p, LA_FLOAT32, &model), LA_OK);
    const double counted[] = {c.qk, c.softmax, c.av, c.phi, c.kv, c.qs, c.normalize};
    const double total = same_as_model(&model, counted, "counted", la_kernel_name(kernel), p);
    assert_true(model.flops_total == total);
    /* the minimum bytes, in both element types */
    for (size_t elem = 4; elem <= 8; elem += 4) {
        la_cost typed;
        assert_int_equal(la_attention_cost(kernel, p, elem == 4 ? LA_FLOAT32 : LA_FLOAT64, &typed),
                         LA_OK);
        const double want = bytes_counted(kernel, p, elem);
        if (typed.bytes_min != want)
            fail_msg("%s, %zu-byte elements: bytes_min %.17g, counted %.17g",
                     la_kernel_name(kernel), elem, typed.bytes_min, want);
    }
    free(q);
    free(k);
    free(v);
    free(out);
    free(ref);
}

/* Whether the registry row of kernel accepts causal = 0 or 1. */
static bool causal_allowed(la_kernel kernel, int causal)
{
    const la_kernel_info *row = la_kernel_get(kernel);
    return row->causal == LA_CAUSAL_ALLOWED || (row->causal == LA_CAUSAL_REQUIRED) == causal;
}

/* Many small shapes, both masks, M != N, every chunk size from 1 past N. */
static void model_equals_counted_loops(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_equals_counted_loops");
    const size_t sizes[] = {1, 2, 3, 5, 8, 17};
    const size_t dims[] = {1, 3, 4};
    int64_t lengths[3];
    size_t cases = 0;
    for (int kernel = 0; kernel < LA_KERNEL_COUNT; kernel++) {
        for (size_t ni = 0; ni < 6; ni++) {
            for (size_t mi = 0; mi < 6; mi++) {
                for (int causal = 0; causal <= 1; causal++) {
                    if (!causal_allowed((la_kernel)kernel, causal)) continue;
                    size_t B = 1 + tu_next(&r) % 3, H = 1 + tu_next(&r) % 2;
                    size_t dk = dims[tu_next(&r) % 3], dv = dims[tu_next(&r) % 3];
                    la_problem p;
                    la_blocks bl;
                    la_problem_init(&p, B, H, sizes[ni], sizes[mi], dk, dv);
                    blocks_attach(&bl, &p);
                    p.causal = causal;
                    p.chunk = 1 + tu_next(&r) % (sizes[ni] + 2);
                    /* local: every window from 1 past max(N, M) */
                    bl.local.window = 1 + tu_next(&r) % (sizes[ni] + sizes[mi]);
                    p.feature_map = tu_next(&r) % 2 ? LA_FEATURE_RELU : LA_FEATURE_ELU1;
                    if (kernel == LA_KERNEL_FAVOR || kernel == LA_KERNEL_FAVOR_RECURRENT)
                        bl.favor.features = 1 + tu_next(&r) % 9;
                    if (tu_next(&r) % 2) {
                        for (size_t b = 0; b < B; b++)
                            lengths[b] = (int64_t)(tu_next(&r) % (sizes[mi] + 1));
                        p.key_lengths = lengths;
                    }
                    /* Linformer: k in 1..M (drawn projections) */
                    bl.linformer.proj_rank = 1 + tu_next(&r) % sizes[mi];
                    /* relative: every clip distance from 1 past max(N, M) */
                    bl.relative.max_distance = 1 + tu_next(&r) % (sizes[ni] + sizes[mi]);
                    bl.linformer.seed = bl.favor.seed = bl.score.seed = bl.relative.seed =
                        tu_next(&r);                          /* every drawn tensor */
                    bl.score.score_dim = 1 + tu_next(&r) % 5; /* additive: d_a, W drawn */
                    check_model((la_kernel)kernel, &p, &r);
                    cases++;
                }
            }
        }
    }
    printf("  %zu shapes counted\n", cases);
}

/* ------------------------------------------------------------------ backward passes */

/* The backward of softmax (fused: FlashAttention-2's formula, materializing: the
 * textbook one), of local attention (the fused formula over the keys [first, vis) of query
 * i's window, |i − j| <= r, its la_local_params) or of hard attention, one head, counted: q (N,
 * d_k), k (M, d_k), v (M, d_v), d_out (N, d_v); d_q, d_k, d_v (zeroed by the caller) shaped as q,
 * k, v. Not counted, by the model's convention (lib/linattn.h, la_attention_backward_cost): the
 * fused backward's lse and the forward's out it reads, both computed here first. */
static void count_backward(const la_problem *p, size_t b, la_kernel kernel, const double *q,
                           const double *k, const double *v, const double *d_out, double *d_q,
                           double *d_k, double *d_v, counts *c)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t window = la_local_params_of(p).window;
    double *P = tu_f64(M), *dP = tu_f64(M);
    for (size_t i = 0; i < N; i++) {
        size_t vis = keys_visible(p, b);
        if (p->causal) vis = smaller(vis, i + 1);
        size_t first = 0;
        if (kernel == LA_KERNEL_LOCAL) { /* the keys [first, vis) of the window */
            first = i > window ? i - window : 0;
            if (window < p->n_keys) vis = smaller(vis, i + window + 1);
            if (first > vis) first = vis;
        }
        if (vis == first) continue;
        const double *qi = q + i * dk, *gi = d_out + i * dv;
        /* scores: one multiply-add per (pair, feature) */
        for (size_t j = first; j < vis; j++) {
            double s = 0;
            for (size_t a = 0; a < dk; a++, c->qk += 2)
                s += qi[a] * k[j * dk + a];
            P[j] = s * p->scale;
        }
        if (kernel == LA_KERNEL_HARD) {
            /* the argmax again, one compare per pair; d_v of the chosen key += d_out_i */
            size_t best = 0;
            for (size_t j = first; j < vis; j++, c->softmax += 1)
                if (j == 0 || P[j] > P[best]) best = j;
            for (size_t a = 0; a < dv; a++, c->av += 1)
                d_v[best * dv + a] += gi[a];
            continue;
        }
        double max = -INFINITY, sum = 0, D = 0;
        for (size_t j = first; j < vis; j++)
            max = P[j] > max ? P[j] : max;
        if (kernel == LA_KERNEL_SOFTMAX || kernel == LA_KERNEL_LOCAL) {
            /* lse and out_i (not counted); P = exp(s − lse): subtract, exp; D = d_out·out */
            for (size_t j = first; j < vis; j++)
                sum += exp(P[j] - max);
            const double lse = max + log(sum);
            for (size_t j = first; j < vis; j++, c->softmax += 2)
                P[j] = exp(P[j] - lse);
            for (size_t a = 0; a < dv; a++, c->softmax += 2) {
                double o = 0;
                for (size_t j = first; j < vis; j++)
                    o += P[j] * v[j * dv + a];
                D += gi[a] * o;
            }
        } else {
            /* the forward's softmax: max, subtract, exp, sum, divide */
            for (size_t j = first; j < vis; j++, c->softmax += 5) {
                P[j] = exp(P[j] - max);
                sum += P[j];
            }
            for (size_t j = first; j < vis; j++)
                P[j] /= sum;
        }
        /* dP = d_out_i·v_j, and d_v_j += P_ij d_out_i: a multiply-add each per (pair, d_v) */
        for (size_t j = first; j < vis; j++) {
            dP[j] = 0;
            for (size_t a = 0; a < dv; a++, c->av += 4) {
                dP[j] += gi[a] * v[j * dv + a];
                d_v[j * dv + a] += P[j] * gi[a];
            }
        }
        if (kernel == LA_KERNEL_SOFTMAX_MATERIALIZED) /* D = Σ_j P dP */
            for (size_t j = first; j < vis; j++, c->softmax += 2)
                D += P[j] * dP[j];
        /* dS = P ∘ (dP − D): subtract, multiply; d_k_j += dS q_i, d_q_i += dS k_j */
        for (size_t j = first; j < vis; j++, c->softmax += 2) {
            const double ds = P[j] * (dP[j] - D) * p->scale;
            for (size_t a = 0; a < dk; a++, c->qk += 4) {
                d_k[j * dk + a] += ds * qi[a];
                d_q[i * dk + a] += ds * k[j * dk + a];
            }
        }
    }
    free(P);
    free(dP);
}

/* The backward's model (la_attention_backward_cost) equals the counted loops field by
 * field, on the shapes of model_equals_counted_loops, for every row with a backward_cost
 * that has a counting loop here (the others are named and skipped); the loops' gradients
 * match the row's float64 oracle, so the counted algorithm is a correct one. */
static void backward_model_equals_counted_loops(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("backward_model_equals_counted_loops");
    const size_t sizes[] = {1, 2, 3, 5, 8, 17};
    const size_t dims[] = {1, 3, 4};
    int64_t lengths[3];
    size_t cases = 0;
    for (int kernel = 0; kernel < LA_KERNEL_COUNT; kernel++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kernel);
        if (!info->fns->backward_cost) continue;
        if (kernel != LA_KERNEL_SOFTMAX && kernel != LA_KERNEL_SOFTMAX_MATERIALIZED &&
            kernel != LA_KERNEL_HARD && kernel != LA_KERNEL_LOCAL) {
            printf("  %s: a backward_cost without a counting loop here: skipped\n", info->name);
            continue;
        }
        for (size_t ni = 0; ni < 6; ni++) {
            for (size_t mi = 0; mi < 6; mi++) {
                for (int causal = 0; causal <= 1; causal++) {
                    const size_t B = 1 + tu_next(&r) % 3, H = 1 + tu_next(&r) % 2;
                    const size_t dk = dims[tu_next(&r) % 3], dv = dims[tu_next(&r) % 3];
                    la_problem p;
                    la_blocks bl;
                    la_problem_init(&p, B, H, sizes[ni], sizes[mi], dk, dv);
                    blocks_attach(&bl, &p);
                    p.causal = causal;
                    bl.local.window = 1 + tu_next(&r) % 18; /* local: 1 past N and M */
                    if (tu_next(&r) % 2) {
                        for (size_t b = 0; b < B; b++)
                            lengths[b] = (int64_t)(tu_next(&r) % (sizes[mi] + 1));
                        p.key_lengths = lengths;
                    }
                    const size_t N = p.n_queries, M = p.n_keys, nq = B * H * N * dk;
                    const size_t nk = B * H * M * dk, nv = B * H * M * dv, no = B * H * N * dv;
                    double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv), *g = tu_f64(no);
                    double *out = tu_f64(no), *grad[3], *ref[3];
                    const size_t n[3] = {nq, nk, nv};
                    tu_fill_normal(&r, q, nq, 1);
                    tu_fill_normal(&r, k, nk, 1);
                    tu_fill_normal(&r, v, nv, 1);
                    tu_fill_normal(&r, g, no, 1);
                    for (int t = 0; t < 3; t++) {
                        grad[t] = tu_f64(n[t]);
                        ref[t] = tu_f64(n[t]);
                        memset(grad[t], 0, n[t] * sizeof *grad[t]);
                    }
                    counts c = {0};
                    for (size_t hd = 0; hd < B * H; hd++)
                        count_backward(&p, hd / H, (la_kernel)kernel, q + hd * N * dk,
                                       k + hd * M * dk, v + hd * M * dv, g + hd * N * dv,
                                       grad[0] + hd * N * dk, grad[1] + hd * M * dk,
                                       grad[2] + hd * M * dv, &c);
                    assert_int_equal(la_ref_attention(kernel, &p, q, k, v, out), LA_OK);
                    assert_int_equal(la_ref_attention_backward(kernel, &p, q, k, v, out, g, ref[0],
                                                               ref[1], ref[2]),
                                     LA_OK);
                    /* d_q and d_k cancel (a query that sees one key has dS = 0): each
                     * held to max(‖ref‖, TU_BWD_FLOOR · Y), Y the size of its terms, as
                     * every backward test does (yardsticks.h); d_v to its norm, and to
                     * its terms' size only where that fails */
                    const tu_backward bw = {q, k, v, out, g};
                    double yard[2];
                    tu_gradient_yardsticks(info, &p, &bw, yard);
                    for (int t = 0; t < 3; t++) {
                        double floor = t < 2 ? TU_BWD_FLOOR * yard[t] : 0;
                        double e = tu_floored_error_f64(grad[t], ref[t], n[t], floor);
                        if (t == 2 && !(e < 1e-12)) {
                            floor = TU_BWD_FLOOR * tu_dv_yardstick(info, &p, &bw);
                            e = tu_floored_error_f64(grad[t], ref[t], n[t], floor);
                        }
                        if (!(e < 1e-12))
                            fail_msg("%s backward counting loop, gradient %d vs oracle: error %.3g "
                                     "against max(‖ref‖, floor %.3g) >= 1e-12 (seed %llu)",
                                     info->name, t, e, floor, (unsigned long long)tu_seed());
                    }
                    la_cost model;
                    assert_int_equal(
                        la_attention_backward_cost((la_kernel)kernel, &p, LA_FLOAT32, &model),
                        LA_OK);
                    const double counted[] = {c.qk, c.softmax, c.av,       c.phi,
                                              c.kv, c.qs,      c.normalize};
                    char what[64];
                    snprintf(what, sizeof what, "%s backward", info->name);
                    assert_true(model.flops_total ==
                                same_as_model(&model, counted, "counted", what, &p));
                    free(q), free(k), free(v), free(g), free(out);
                    for (int t = 0; t < 3; t++)
                        free(grad[t]), free(ref[t]);
                    cases++;
                }
            }
        }
    }
    printf("  %zu backward shapes counted\n", cases);
}

/* What a linear kernel's call counted (la_count_*) against the model, flop class by flop
 * class; fails naming the call (what: "" or "backward ") and the class that differs. The
 * hidden entries (LA_COUNT_HIDDEN) are taken out of what was counted: qk_per_hidden flops
 * each from qk, av_per_hidden from av. Returns the model's sum over the seven classes. */
static double compare_counts(const char *what, la_kernel kernel, la_dtype dtype,
                             const la_problem *p, double qk_per_hidden, double av_per_hidden,
                             const la_cost *model)
{
    const double hidden = la_count_get(LA_COUNT_HIDDEN);
    const double got[] = {
        la_count_get(LA_COUNT_QK) - qk_per_hidden * hidden,
        la_count_get(LA_COUNT_SOFTMAX),
        la_count_get(LA_COUNT_AV) - av_per_hidden * hidden,
        la_count_get(LA_COUNT_PHI),
        la_count_get(LA_COUNT_KV),
        la_count_get(LA_COUNT_QS),
        la_count_get(LA_COUNT_NORMALIZE),
    };
    char call[96];
    snprintf(call, sizeof call, "%s%s %s threads=%d", what, la_kernel_name(kernel),
             dtype == LA_FLOAT32 ? "f32" : "f64", la_get_num_threads());
    return same_as_model(model, got, "kernel counted", call, p);
}

/* One call of a linear kernel counted as it runs (la_count_*), against the model.
 * The counters hold what the kernel issues; two things in them the model leaves out by
 * its documented convention (lib/linattn.h, la_cost), taken out here from what the
 * kernel itself counted, not from the model:
 *   - hidden entries: the chunked kernel computes A = φQ_c·φK_cᵀ over the whole block
 *     and zeroes the entries above the diagonal; each such entry cost 2·d_k in that
 *     product (qk), then 2·d_v in A·V_c and 1 in A's row sum (av);
 *   - the adds that join partial sums (LA_COUNT_COMBINE), left out entirely. */
static void check_kernel_counts(la_kernel kernel, la_dtype dtype, const la_problem *p, tu_rng *r)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, M = p->n_keys;
    const size_t dk = p->d_k, dv = p->d_v;
    const size_t nq = B * H * N * dk, nk = B * H * M * dk, nv = B * H * M * dv;
    const size_t no = B * H * N * dv;
    double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv), *out = tu_f64(no);
    tu_fill_normal(r, q, nq, 1);
    tu_fill_normal(r, k, nk, 1);
    tu_fill_normal(r, v, nv, 1);
    la_count_reset();
    la_status st;
    if (dtype == LA_FLOAT32) {
        float *q32 = tu_f32(nq), *k32 = tu_f32(nk), *v32 = tu_f32(nv), *o32 = tu_f32(no);
        for (size_t x = 0; x < nq; x++)
            q32[x] = (float)q[x];
        for (size_t x = 0; x < nk; x++)
            k32[x] = (float)k[x];
        for (size_t x = 0; x < nv; x++)
            v32[x] = (float)v[x];
        st = la_attention(kernel, p, LA_FLOAT32, q32, k32, v32, o32);
        free(q32);
        free(k32);
        free(v32);
        free(o32);
    } else {
        st = la_attention(kernel, p, LA_FLOAT64, q, k, v, out);
    }
    assert_int_equal(st, LA_OK);
    la_cost model;
    assert_int_equal(la_attention_cost(kernel, p, dtype, &model), LA_OK);
    /* a hidden entry of a chunk's A costs a dot product of the features: d_k of them,
     * Taylor's 1 + d_k + d_k² */
    const double width = kernel == LA_KERNEL_TAYLOR ? (double)(1 + dk + dk * dk) : (double)dk;
    compare_counts("", kernel, dtype, p, 2 * width, 2 * (double)dv + 1, &model);
    free(q);
    free(k);
    free(v);
    free(out);
}

/* Runs check (one counted call against the model) on both linear kernels, one to three
 * threads (both schedules), many small shapes with every chunk size from 1 past N, key
 * lengths and both feature maps, and a few big enough for several chunks of 64, key
 * blocks and pieces; the shapes and dtypes drawn from r. Adds LA_COUNT_HIDDEN of the
 * small calls to *hidden and LA_COUNT_QK + LA_COUNT_KV of the big ones to *counted;
 * returns the number of calls. Leaves the thread count as it found it. */
static size_t each_linear_call(void (*check)(la_kernel, la_dtype, const la_problem *, tu_rng *),
                               bool with_favor, tu_rng *r, double *hidden, double *counted)
{
    /* FAVOR+ and Taylor when with_favor: the linear kernels on their features */
    const la_kernel kernels[] = {LA_KERNEL_LINEAR, LA_KERNEL_LINEAR_RECURRENT, LA_KERNEL_FAVOR,
                                 LA_KERNEL_FAVOR_RECURRENT, LA_KERNEL_TAYLOR};
    const size_t n_kernels = with_favor ? 5 : 2;
    const size_t full_sizes[] = {1, 2, 3, 5, 8, 17, 40};
    /* the quick profile: one token, a few, several chunks of a small chunk, more than the
     * default chunk (32) */
    const size_t quick_sizes[] = {1, 3, 17, 40};
    const size_t *sizes = tu_quick() ? quick_sizes : full_sizes;
    const size_t n_sizes = tu_quick() ? 4 : 7;
    const size_t dims[] = {1, 3, 4, 16};
    int64_t lengths[3];
    const int threads = la_get_num_threads();
    size_t cases = 0;
    for (int t = 1; t <= 3; t++) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (size_t kr = 0; kr < n_kernels; kr++) {
            for (size_t ni = 0; ni < n_sizes; ni++) {
                for (size_t mi = 0; mi < n_sizes; mi++) {
                    for (int causal = 0; causal <= 1; causal++) {
                        if (la_kernel_get(kernels[kr])->causal == LA_CAUSAL_REQUIRED && !causal)
                            continue;
                        size_t B = 1 + tu_next(r) % 3, H = 1 + tu_next(r) % 2;
                        la_problem p;
                        la_blocks bl;
                        la_problem_init(&p, B, H, sizes[ni], sizes[mi], dims[tu_next(r) % 4],
                                        dims[tu_next(r) % 4]);
                        blocks_attach(&bl, &p);
                        p.causal = causal;
                        p.chunk = 1 + tu_next(r) % (sizes[ni] + 2);
                        p.feature_map = tu_next(r) % 2 ? LA_FEATURE_RELU : LA_FEATURE_ELU1;
                        if (kernels[kr] == LA_KERNEL_FAVOR ||
                            kernels[kr] == LA_KERNEL_FAVOR_RECURRENT)
                            bl.favor.features = 1 + tu_next(r) % 40;
                        if (tu_next(r) % 2) {
                            for (size_t b = 0; b < B; b++)
                                lengths[b] = (int64_t)(tu_next(r) % (sizes[mi] + 1));
                            p.key_lengths = lengths;
                        }
                        check(kernels[kr], tu_next(r) % 2 ? LA_FLOAT32 : LA_FLOAT64, &p, r);
                        *hidden += la_count_get(LA_COUNT_HIDDEN);
                        cases++;
                    }
                }
            }
        }
        /* bigger: several chunks of 64 (the kernel's register-tile path in float32),
         * N < M and N > M, and non-causal over more than one key piece */
        const size_t full_big[][4] = {
            {300, 300, 64, 64}, {200, 700, 64, 32}, {700, 130, 32, 64}, {129, 1100, 16, 16}};
        /* the quick profile: the same four kinds, smaller: 130 queries and keys past the
         * 128-query and 128-key blocks, 600 and 1030 keys in two and three 512-key pieces,
         * N > M, and float32 over three chunks of 64 */
        const size_t quick_big[][4] = {
            {130, 130, 64, 64}, {130, 600, 64, 32}, {200, 70, 32, 64}, {129, 1030, 16, 16}};
        const size_t(*big)[4] = tu_quick() ? quick_big : full_big;
        for (size_t x = 0; x < 4; x++) {
            for (int causal = 0; causal <= 1; causal++) {
                for (size_t kr = 0; kr < n_kernels; kr++) {
                    if (la_kernel_get(kernels[kr])->causal == LA_CAUSAL_REQUIRED && !causal)
                        continue;
                    la_problem p;
                    la_blocks bl;
                    la_problem_init(&p, 1, 2, big[x][0], big[x][1], big[x][2], big[x][3]);
                    blocks_attach(&bl, &p);
                    p.causal = causal;
                    p.chunk = x % 2 ? 64 : 32;
                    /* the quick profile: FAVOR+ on 64 features, not the default 256 (the
                     * linear kernels' blocks and chunks then run on d_k = 64) */
                    if (tu_quick()) bl.favor.features = 64;
                    check(kernels[kr], x % 2 ? LA_FLOAT32 : LA_FLOAT64, &p, r);
                    *counted += la_count_get(LA_COUNT_QK) + la_count_get(LA_COUNT_KV);
                    cases++;
                }
            }
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    return cases;
}

/* The linear kernels' model equals what they count as they run: both dtypes, one to
 * three threads (both schedules), many small shapes with every chunk size from 1 past
 * N, key lengths, and a few big enough for several chunks of 64, key blocks and pieces. */
static void model_equals_kernel_counts(void **state)
{
    (void)state;
    if (!la_count_enabled())
        fail_msg("test_cost is linked against a library built without LA_COUNT_FLOPS: "
                 "the kernels count nothing (the Makefile links $(BUILD)/count/liblinattn.a)");
    tu_rng r = tu_rng_for("model_equals_kernel_counts");
    double hidden = 0, counted = 0;
    const size_t cases = each_linear_call(check_kernel_counts, true, &r, &hidden, &counted);
    /* the hidden-entry correction was exercised, and the big shapes counted something */
    assert_true(hidden > 0 && counted > 0);
    printf("  %zu kernel calls counted\n", cases);
}

/* One backward call of a linear kernel counted as it runs, against la_attention_backward_cost
 * (the forward runs first, outside the count, for its output). The same two conventions as
 * the forward's, taken out from what the kernel counted: the chunked backward forms the
 * masked A = φQ_c·φK_cᵀ and Bᵀ = V_c·Gᵀ by blocks, the diagonal ones whole, and every
 * hidden entry of those then cost 2·d_k in A, 2·d_k in B·φK_c and 2·d_k in Bᵀ·φQ_c (qk),
 * 2·d_v in Bᵀ and 2·d_v in Aᵀ·G (av); the joins of partial sums (LA_COUNT_COMBINE) are left out. */
static void check_backward_counts(la_kernel kernel, la_dtype dtype, const la_problem *p, tu_rng *r)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, M = p->n_keys;
    const size_t dk = p->d_k, dv = p->d_v;
    const size_t nq = B * H * N * dk, nk = B * H * M * dk, nv = B * H * M * dv;
    const size_t no = B * H * N * dv;
    double *x[6];
    const size_t n[6] = {nq, nk, nv, no, no, 0};
    for (int t = 0; t < 5; t++) {
        x[t] = tu_f64(n[t]);
        tu_fill_normal(r, x[t], n[t], 1);
    }
    double *g[3] = {tu_f64(nq), tu_f64(nk), tu_f64(nv)};
    la_status st;
    if (dtype == LA_FLOAT32) {
        float *y[5], *g32[3] = {tu_f32(nq), tu_f32(nk), tu_f32(nv)};
        for (int t = 0; t < 5; t++) {
            y[t] = tu_f32(n[t]);
            tu_to_f32(x[t], y[t], n[t]);
        }
        assert_int_equal(la_attention(kernel, p, LA_FLOAT32, y[0], y[1], y[2], y[3]), LA_OK);
        la_count_reset();
        st = la_attention_backward(kernel, p, LA_FLOAT32, y[0], y[1], y[2], y[3], NULL, y[4],
                                   g32[0], g32[1], g32[2]);
        for (int t = 0; t < 5; t++)
            free(y[t]);
        for (int t = 0; t < 3; t++)
            free(g32[t]);
    } else {
        assert_int_equal(la_attention(kernel, p, LA_FLOAT64, x[0], x[1], x[2], x[3]), LA_OK);
        la_count_reset();
        st = la_attention_backward(kernel, p, LA_FLOAT64, x[0], x[1], x[2], x[3], NULL, x[4], g[0],
                                   g[1], g[2]);
    }
    assert_int_equal(st, LA_OK);
    la_cost model;
    assert_int_equal(la_attention_backward_cost(kernel, p, dtype, &model), LA_OK);
    /* a hidden entry's dot products run over the features: d_k of them, FAVOR+'s m,
     * Taylor's 1 + d_k + d_k² */
    const double width = kernel == LA_KERNEL_TAYLOR ? (double)(1 + dk + dk * dk)
                         : kernel == LA_KERNEL_FAVOR || kernel == LA_KERNEL_FAVOR_RECURRENT
                             ? (double)la_favor_params_of(p).features
                             : (double)dk;
    const double total =
        compare_counts("backward ", kernel, dtype, p, 6 * width, 4 * (double)dv, &model);
    assert_true(model.flops_total == total);
    for (int t = 0; t < 5; t++)
        free(x[t]);
    for (int t = 0; t < 3; t++)
        free(g[t]);
}

/* The linear backwards' model equals what they count as they run (linear, and FAVOR+ and
 * Taylor on their features): both dtypes, one to three threads, many small shapes with every chunk
 * size from 1 past N, key lengths, and a few with several chunks, blocks and pieces. */
static void backward_model_equals_kernel_counts(void **state)
{
    (void)state;
    if (!la_count_enabled()) fail_msg("test_cost is linked against a library without counters");
    tu_rng r = tu_rng_for("backward_model_equals_kernel_counts");
    double hidden = 0, counted = 0;
    const size_t cases = each_linear_call(check_backward_counts, true, &r, &hidden, &counted);
    assert_true(hidden > 0);
    printf("  %zu backward calls counted\n", cases);
}

/* One call of the local kernel counted as it runs: flops_qk and flops_av of the model
 * against the products it issued less its hidden entries (2·d_k and 2·d_v each). */
static void check_kernel_counts_local(la_dtype dtype, const la_problem *p, tu_rng *r)
{
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    const size_t nq = heads * N * p->d_k, nk = heads * M * p->d_k, nv = heads * M * p->d_v;
    const size_t no = heads * N * p->d_v;
    double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv), *out = tu_f64(no);
    tu_fill_normal(r, q, nq, 1);
    tu_fill_normal(r, k, nk, 1);
    tu_fill_normal(r, v, nv, 1);
    /* the portable tiles, which count what they issue and what they mask (the AVX-512
     * ones, the fused kernel's, count nothing) */
    la_avx512_enable(false);
    la_count_reset();
    if (dtype == LA_FLOAT32) {
        float *q32 = tu_f32(nq), *k32 = tu_f32(nk), *v32 = tu_f32(nv), *o32 = tu_f32(no);
        tu_to_f32(q, q32, nq), tu_to_f32(k, k32, nk), tu_to_f32(v, v32, nv);
        assert_int_equal(la_local_attention_f32(p, q32, k32, v32, o32), LA_OK);
        free(q32), free(k32), free(v32), free(o32);
    } else {
        assert_int_equal(la_local_attention_f64(p, q, k, v, out), LA_OK);
    }
    la_avx512_enable(true);
    const double hidden = la_count_get(LA_COUNT_HIDDEN);
    const double qk = la_count_get(LA_COUNT_QK) - 2 * (double)p->d_k * hidden;
    const double av = la_count_get(LA_COUNT_AV) - 2 * (double)p->d_v * hidden;
    la_cost model;
    assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, p, dtype, &model), LA_OK);
    if (qk != model.flops_qk || av != model.flops_av)
        fail_msg("local %s threads=%d N=%zu M=%zu d_k=%zu d_v=%zu causal=%d window=%zu "
                 "lengths=%s: model qk %.17g av %.17g, kernel counted qk %.17g av %.17g "
                 "(seed %llu)",
                 dtype == LA_FLOAT32 ? "f32" : "f64", la_get_num_threads(), N, M, p->d_k, p->d_v,
                 p->causal, la_local_params_of(p).window, p->key_lengths ? "yes" : "no",
                 model.flops_qk, model.flops_av, qk, av, (unsigned long long)tu_seed());
    free(q), free(k), free(v), free(out);
}

/* Local attention's model against what its kernel counts as it runs: the score and P·V
 * products it issues (2·rows·cols·d_k and 2·rows·cols·d_v per score block) less the
 * entries of each block outside a row's window, which it counts as hidden; so its masks
 * must leave exactly the model's closed-form pairs. Both dtypes, one to three threads,
 * windows from 1 past max(N, M), key lengths, sizes crossing the 64-query and 256-key
 * blocks. */
static void local_model_equals_kernel_counts(void **state)
{
    (void)state;
    if (!la_count_enabled()) fail_msg("test_cost is linked against a library without counters");
    tu_rng r = tu_rng_for("local_model_equals_kernel_counts");
    const size_t full_sizes[] = {1, 2, 5, 17, 64, 65, 130, 300};
    const size_t full_windows[] = {1, 2, 7, 63, 64, 100, 129, 300, SIZE_MAX};
    /* the quick profile: one token, less than a block, past the 64-query block, past the
     * 256-key block; windows 1, about the 64-query block, past the 256-key block's reach
     * (64 + 2r; causal 64 + r) and unbounded */
    const size_t quick_sizes[] = {1, 17, 65, 300};
    const size_t quick_windows[] = {1, 63, 64, 100, 300, SIZE_MAX};
    const size_t *sizes = tu_quick() ? quick_sizes : full_sizes;
    const size_t *windows = tu_quick() ? quick_windows : full_windows;
    const size_t n_sizes = tu_quick() ? 4 : 8, n_windows = tu_quick() ? 6 : 9;
    int64_t lengths[2];
    const int threads = la_get_num_threads();
    size_t cases = 0;
    double hidden = 0;
    for (int t = 1; t <= 3; t++) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (size_t ni = 0; ni < n_sizes; ni++) {
            for (size_t w = 0; w < n_windows; w++) {
                for (int causal = 0; causal <= 1; causal++) {
                    const size_t M = sizes[tu_next(&r) % n_sizes];
                    la_problem p;
                    la_blocks bl;
                    la_problem_init(&p, 2, 1 + tu_next(&r) % 2, sizes[ni], M, 1 + tu_next(&r) % 16,
                                    1 + tu_next(&r) % 16);
                    blocks_attach(&bl, &p);
                    p.causal = causal;
                    bl.local.window = windows[w];
                    if (tu_next(&r) % 2) {
                        lengths[0] = (int64_t)(tu_next(&r) % (M + 1));
                        lengths[1] = (int64_t)M;
                        p.key_lengths = lengths;
                    }
                    const la_dtype dtype = tu_next(&r) % 2 ? LA_FLOAT32 : LA_FLOAT64;
                    check_kernel_counts_local(dtype, &p, &r);
                    hidden += la_count_get(LA_COUNT_HIDDEN);
                    cases++;
                }
            }
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    assert_true(hidden > 0); /* the correction was exercised */
    printf("  %zu kernel calls counted\n", cases);
}

/* What one forward call of kernel does on (q, k, v) (float64 inputs, converted for
 * float32): the engine's block entries and the range scans' reads, and the call's QK
 * and KV FLOPs as counted (local counts its QK; every other kernel leaves it 0). */
typedef struct {
    double pairs, range_read, qk, kv;
} work;

static work work_of(la_kernel kernel, la_dtype dtype, const la_problem *p, const double *q,
                    const double *k, const double *v)
{
    const size_t heads = p->batch * p->heads, nq = heads * p->n_queries * p->d_k;
    const size_t nk = heads * p->n_keys * p->d_k, nv = heads * p->n_keys * p->d_v;
    const size_t no = heads * p->n_queries * p->d_v;
    la_count_reset();
    if (dtype == LA_FLOAT32) {
        float *q32 = tu_f32(nq), *k32 = tu_f32(nk), *v32 = tu_f32(nv), *o32 = tu_f32(no);
        tu_to_f32(q, q32, nq), tu_to_f32(k, k32, nk), tu_to_f32(v, v32, nv);
        const la_status st = la_attention(kernel, p, LA_FLOAT32, q32, k32, v32, o32);
        if (st != LA_OK) fail_msg("%s f32: %s", la_kernel_name(kernel), la_strerror(st));
        free(q32), free(k32), free(v32), free(o32);
    } else {
        double *out = tu_f64(no);
        const la_status st = la_attention(kernel, p, LA_FLOAT64, q, k, v, out);
        if (st != LA_OK) fail_msg("%s f64: %s", la_kernel_name(kernel), la_strerror(st));
        free(out);
    }
    return (work){la_count_get(LA_COUNT_ENGINE_PAIRS), la_count_get(LA_COUNT_RANGE_READ),
                  la_count_get(LA_COUNT_QK), la_count_get(LA_COUNT_KV)};
}

/* The rows [0, m_cut) of each head of x (B·H heads of m rows of d) into a new array. */
static double *cut_rows(const double *x, size_t heads, size_t m, size_t m_cut, size_t d)
{
    double *y = tu_f64(heads * m_cut * d);
    for (size_t hd = 0; hd < heads; hd++)
        memcpy(y + hd * m_cut * d, x + hd * m * d, m_cut * d * sizeof *y);
    return y;
}

/* The work follows the keys a query sees: a call whose key array holds keys no query sees
 * (past every key length, past the causal reach of top-left N < M) does the work of the
 * call on the keys seen alone (the array cut to them): the same engine block entries, the
 * same range reads, the same counted FLOPs. And a general mask or key mask that hides
 * every key past 256 from every query costs the engine what key lengths of 256 cost: the
 * blocks it hides whole are skipped, not computed and dropped. Every kernel on the
 * online-softmax engine and the materialized one, both dtypes. */
static void engine_work_follows_visibility(void **state)
{
    (void)state;
    if (!la_count_enabled()) fail_msg("test_cost is linked against a library without counters");
    tu_rng r = tu_rng_for("engine_work_follows_visibility");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX,  LA_KERNEL_SOFTMAX_MATERIALIZED,
                                 LA_KERNEL_HARD,     LA_KERNEL_LOCAL,
                                 LA_KERNEL_GENERAL,  LA_KERNEL_COSINE,
                                 LA_KERNEL_ADDITIVE, LA_KERNEL_RELATIVE};
    const size_t n_kernels = sizeof kernels / sizeof kernels[0];
    /* B = 2, H = 2; N, M, d; causal; key lengths (-1: none); seen: the largest count of
     * keys some query sees, the cut array's M */
    const struct {
        size_t N, M, d;
        int causal;
        int64_t lengths[2];
        size_t seen;
    } cases[] = {
        {1, 3000, 64, 0, {1, 1}, 1},   /* decoding: one key of 3000 */
        {5, 700, 16, 0, {3, 0}, 3},    /* key lengths, one of them 0 */
        {70, 700, 8, 1, {-1, 0}, 70},  /* causal top-left, N < M: keys past N unseen */
        {40, 900, 8, 1, {300, 20}, 40} /* both */
    };
    size_t calls = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        la_problem p, cut;
        la_blocks bl;
        la_problem_init(&p, 2, 2, cases[c].N, cases[c].M, cases[c].d, cases[c].d);
        blocks_attach(&bl, &p);
        p.causal = cases[c].causal;
        bl.local.window = 16;
        if (cases[c].lengths[0] >= 0) p.key_lengths = cases[c].lengths;
        cut = p;
        cut.n_keys = cases[c].seen;
        int64_t cut_lengths[2]; /* key lengths within the cut array: the same keys */
        for (size_t b = 0; b < 2; b++)
            cut_lengths[b] = cases[c].lengths[b] < (int64_t)cut.n_keys ? cases[c].lengths[b]
                                                                       : (int64_t)cut.n_keys;
        if (p.key_lengths) cut.key_lengths = cut_lengths;
        const size_t heads = 4, d = cases[c].d, N = cases[c].N, M = cases[c].M;
        double *q = tu_f64(heads * N * d), *k = tu_f64(heads * M * d), *v = tu_f64(heads * M * d);
        tu_fill_normal(&r, q, heads * N * d, 1);
        tu_fill_normal(&r, k, heads * M * d, 1);
        tu_fill_normal(&r, v, heads * M * d, 1);
        double *kc = cut_rows(k, heads, M, cut.n_keys, d),
               *vc = cut_rows(v, heads, M, cut.n_keys, d);
        for (size_t ki = 0; ki < n_kernels; ki++)
            for (int dt = 0; dt < 2; dt++) {
                const la_dtype dtype = dt ? LA_FLOAT64 : LA_FLOAT32;
                const work big = work_of(kernels[ki], dtype, &p, q, k, v);
                const work small = work_of(kernels[ki], dtype, &cut, q, kc, vc);
                if (big.pairs != small.pairs || big.range_read != small.range_read ||
                    big.qk != small.qk || big.kv != small.kv)
                    fail_msg("%s %s case %zu (M = %zu, %zu keys seen): engine entries %.17g, "
                             "range reads %.17g, qk %.17g, kv %.17g; on the keys seen alone "
                             "%.17g, %.17g, %.17g, %.17g",
                             la_kernel_name(kernels[ki]), dt ? "f64" : "f32", c, M, cut.n_keys,
                             big.pairs, big.range_read, big.qk, big.kv, small.pairs,
                             small.range_read, small.qk, small.kv);
                calls++;
            }
        free(q), free(k), free(v), free(kc), free(vc);
    }
    /* a mask hiding keys [256, M) from every query against key lengths of 256 */
    const size_t N = 70, M = 1100, d = 8, heads = 4;
    double *q = tu_f64(heads * N * d), *k = tu_f64(heads * M * d), *v = tu_f64(heads * M * d);
    tu_fill_normal(&r, q, heads * N * d, 1);
    tu_fill_normal(&r, k, heads * M * d, 1);
    tu_fill_normal(&r, v, heads * M * d, 1);
    uint8_t *mask = tu_alloc(N * M), *key_mask = tu_alloc(2 * M);
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < M; j++)
            mask[i * M + j] = j >= 256;
    for (size_t b = 0; b < 2; b++)
        for (size_t j = 0; j < M; j++)
            key_mask[b * M + j] = j >= 256;
    const int64_t lengths[2] = {256, 256};
    const la_kernel masked_kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_HARD, LA_KERNEL_LOCAL,
                                        LA_KERNEL_GENERAL, LA_KERNEL_COSINE};
    for (size_t ki = 0; ki < sizeof masked_kernels / sizeof masked_kernels[0]; ki++)
        for (int which = 0; which < 2; which++) {
            la_problem p, lengthened;
            la_blocks bl;
            la_problem_init(&p, 2, 2, N, M, d, d);
            blocks_attach(&bl, &p);
            bl.local.window = 600; /* local: windows reaching past key 256 */
            lengthened = p;
            lengthened.key_lengths = lengths;
            if (which == 0)
                p.mask = mask;
            else
                p.key_mask = key_mask;
            /* the portable tiles (which a mask takes) for both */
            lengthened.key_mask = key_mask;
            memset(key_mask, 0, 2 * M);
            const work by_length = work_of(masked_kernels[ki], LA_FLOAT32, &lengthened, q, k, v);
            for (size_t b = 0; b < 2; b++)
                for (size_t j = 0; j < M; j++)
                    key_mask[b * M + j] = j >= 256;
            const work by_mask = work_of(masked_kernels[ki], LA_FLOAT32, &p, q, k, v);
            if (by_mask.pairs != by_length.pairs)
                fail_msg("%s: a %s hiding keys past 256: the engine's blocks cover %.17g "
                         "entries, key lengths of 256 %.17g",
                         la_kernel_name(masked_kernels[ki]), which ? "key mask" : "mask",
                         by_mask.pairs, by_length.pairs);
            calls++;
        }
    free(q), free(k), free(v), free(mask), free(key_mask);
    printf("  %zu calls' work compared\n", calls);
}

/* The causal half: softmax over N = M counts N(N+1)/2 pairs per head, and the exact
 * formulas of the header for one plain case. */
static void closed_forms(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 2, 3, 100, 100, 16, 8);
    la_cost c;
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, &c), LA_OK);
    double heads = 6, pairs = 100.0 * 100;
    assert_true(c.flops_qk == heads * 2 * pairs * 16);
    assert_true(c.flops_softmax == heads * 5 * pairs);
    assert_true(c.flops_av == heads * 2 * pairs * 8);
    assert_true(c.io_bytes == heads * (100.0 * 16 * 2 + 100.0 * 8 * 2) * 4);
    p.causal = 1;
    la_cost half;
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT64, &half), LA_OK);
    assert_true(half.flops_qk == heads * 2 * (100.0 * 101 / 2) * 16);
    assert_true(half.io_bytes == 2 * c.io_bytes);
    /* linear, non-causal: the header's formulas */
    p.causal = 0;
    assert_int_equal(la_attention_cost(LA_KERNEL_LINEAR, &p, LA_FLOAT32, &c), LA_OK);
    assert_true(c.flops_phi == heads * (100.0 + 100) * 16);
    assert_true(c.flops_kv == heads * (2 * 100.0 * 16 * 8 + 100.0 * 16));
    assert_true(c.flops_qs == heads * (2 * 100.0 * 16 * 8 + 2 * 100.0 * 16));
    assert_true(c.flops_normalize == heads * (100.0 * 8 + 100));
    assert_true(c.flops_qk == 0 && c.flops_softmax == 0 && c.flops_av == 0);
    /* minimum bytes: linear adds S and z, out and back (16·8 + 16 floats per head); the
     * materializing softmax the 100×100 scores, out and back; the fused one nothing */
    const double io = heads * (100.0 * 16 * 2 + 100.0 * 8 * 2) * 4;
    assert_true(c.bytes_min == io + heads * 2 * (16 * 8 + 16) * 4);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX_MATERIALIZED, &p, LA_FLOAT32, &c), LA_OK);
    assert_true(c.bytes_min == io + heads * 2 * 100.0 * 100 * 4);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, &c), LA_OK);
    assert_true(c.bytes_min == io);
    /* a backward's minimum is its io_bytes */
    assert_int_equal(la_attention_backward_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, &c), LA_OK);
    assert_true(c.bytes_min == c.io_bytes && c.io_bytes > 0);
}

/* Workspace: N·M elements per concurrent head for the materializing kernel; linear's
 * does not grow with N; the fused kernel's does not grow with N·M. */
static void workspace_model(void **state)
{
    (void)state;
    int threads = la_get_num_threads();
    assert_int_equal(la_set_num_threads(1), LA_OK);
    la_problem p;
    la_problem_init(&p, 1, 4, 1000, 700, 64, 64);
    la_cost c, big;
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX_MATERIALIZED, &p, LA_FLOAT32, &c), LA_OK);
    assert_true(c.workspace_bytes == 1000.0 * 700 * 4);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX_MATERIALIZED, &p, LA_FLOAT64, &c), LA_OK);
    assert_true(c.workspace_bytes == 1000.0 * 700 * 8);
    for (int kernel = LA_KERNEL_SOFTMAX; kernel <= LA_KERNEL_LINEAR; kernel += 3) {
        la_problem_init(&p, 1, 4, 1000, 1000, 64, 64);
        assert_int_equal(la_attention_cost((la_kernel)kernel, &p, LA_FLOAT32, &c), LA_OK);
        la_problem_init(&p, 1, 4, 100000, 100000, 64, 64);
        assert_int_equal(la_attention_cost((la_kernel)kernel, &p, LA_FLOAT32, &big), LA_OK);
        assert_true(c.workspace_bytes > 0);
        assert_true(big.workspace_bytes == c.workspace_bytes);
    }
    /* linear holds at least its d_k × d_v state */
    assert_true(c.workspace_bytes >= (64.0 * 64 + 64) * 4);
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* workspace_bytes is what the kernels allocate: with p->workspace_limit at exactly the
 * model's bytes the kernel runs, one byte less and it refuses with LA_EBUDGET. */
static void workspace_matches_kernels(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("workspace_matches_kernels");
    int threads = la_get_num_threads();
    const size_t sizes[] = {1, 3, 17, 64, 65, 300};
    for (int t = 1; t <= 3; t++) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (int kernel = 0; kernel < LA_KERNEL_COUNT; kernel++) {
            /* the quick profile: 2 random problems per kernel, thread count and dtype */
            for (int trial = 0; trial < (tu_quick() ? 2 : 6); trial++) {
                size_t B = 1 + tu_next(&r) % 2, H = 1 + tu_next(&r) % 3;
                size_t N = sizes[tu_next(&r) % 6], M = sizes[tu_next(&r) % 6];
                size_t dk = 1 + tu_next(&r) % 9, dv = 1 + tu_next(&r) % 9;
                la_problem p;
                la_blocks bl;
                la_problem_init(&p, B, H, N, M, dk, dv);
                blocks_attach(&bl, &p);
                p.causal = (int)(tu_next(&r) % 2);
                if (!causal_allowed((la_kernel)kernel, p.causal)) p.causal = !p.causal;
                p.chunk = 1 + tu_next(&r) % 80;
                bl.linformer.proj_rank = 1 + tu_next(&r) % M; /* Linformer: k in 1..M */
                float *q = tu_f32(B * H * N * dk), *k = tu_f32(B * H * M * dk);
                float *v = tu_f32(B * H * M * dv), *out = tu_f32(B * H * N * dv);
                for (size_t x = 0; x < B * H * N * dk; x++)
                    q[x] = (float)tu_normal(&r);
                for (size_t x = 0; x < B * H * M * dk; x++)
                    k[x] = (float)tu_normal(&r);
                for (size_t x = 0; x < B * H * M * dv; x++)
                    v[x] = (float)tu_normal(&r);
                for (int dtype = LA_FLOAT32; dtype <= LA_FLOAT64; dtype++) {
                    la_cost c;
                    assert_int_equal(la_attention_cost((la_kernel)kernel, &p, (la_dtype)dtype, &c),
                                     LA_OK);
                    assert_true(c.workspace_bytes >= 0 &&
                                c.workspace_bytes == floor(c.workspace_bytes));
                    if (c.workspace_bytes == 0) continue; /* allocates nothing: no limit */
                    p.workspace_limit = (size_t)c.workspace_bytes;
                    la_status ok, refused;
                    if (dtype == LA_FLOAT32) {
                        ok = la_attention((la_kernel)kernel, &p, LA_FLOAT32, q, k, v, out);
                        p.workspace_limit--;
                        refused = la_attention((la_kernel)kernel, &p, LA_FLOAT32, q, k, v, out);
                    } else {
                        double *q64 = tu_f64(B * H * N * dk), *k64 = tu_f64(B * H * M * dk);
                        double *v64 = tu_f64(B * H * M * dv), *o64 = tu_f64(B * H * N * dv);
                        tu_to_f64(q, q64, B * H * N * dk);
                        tu_to_f64(k, k64, B * H * M * dk);
                        tu_to_f64(v, v64, B * H * M * dv);
                        ok = la_attention((la_kernel)kernel, &p, LA_FLOAT64, q64, k64, v64, o64);
                        p.workspace_limit--;
                        refused =
                            la_attention((la_kernel)kernel, &p, LA_FLOAT64, q64, k64, v64, o64);
                        free(q64);
                        free(k64);
                        free(v64);
                        free(o64);
                    }
                    if (ok != LA_OK || refused != LA_EBUDGET)
                        fail_msg("%s %s threads=%d B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu "
                                 "causal=%d chunk=%zu: model %.0f bytes, kernel at the limit "
                                 "%s, one byte under %s (seed %llu)",
                                 la_kernel_name((la_kernel)kernel),
                                 dtype == LA_FLOAT32 ? "f32" : "f64", t, B, H, N, M, dk, dv,
                                 p.causal, p.chunk, c.workspace_bytes, la_strerror(ok),
                                 la_strerror(refused), (unsigned long long)tu_seed());
                }
                free(q);
                free(k);
                free(v);
                free(out);
            }
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* Every error path returns its status. */
static void errors(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 4, 4, 2, 2);
    la_cost c;
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, NULL, LA_FLOAT32, &c), LA_EINVAL);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, NULL), LA_EINVAL);
    assert_int_equal(la_attention_cost(LA_KERNEL_COUNT, &p, LA_FLOAT32, &c), LA_EINVAL);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, (la_dtype)7, &c), LA_EINVAL);
    assert_int_equal(la_attention_cost(LA_KERNEL_LINEAR_RECURRENT, &p, LA_FLOAT32, &c),
                     LA_EINVAL); /* not causal */
    p.d_k = 0;
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, &c), LA_EINVAL);
}

int main(void)
{
    tu_init("test_cost");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_equals_counted_loops),
        cmocka_unit_test(backward_model_equals_counted_loops),
        cmocka_unit_test(model_equals_kernel_counts),
        cmocka_unit_test(backward_model_equals_kernel_counts),
        cmocka_unit_test(local_model_equals_kernel_counts),
        cmocka_unit_test(engine_work_follows_visibility),
        cmocka_unit_test(closed_forms),
        cmocka_unit_test(workspace_model),
        cmocka_unit_test(workspace_matches_kernels),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
