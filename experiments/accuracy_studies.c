/* accuracy_studies.c — the four studies of `linattn accuracy`: error against N, distances
 * between variants, eps, and chunk size (accuracy.h). */
#include "accuracy.h"
#include "attention/series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- error_vs_n */

int accuracy_study_error_vs_n(ctx *x, const size_t *ns, size_t n_points)
{
    series_set set;
    accuracy_error_vs_n_series(&set);
    for (size_t pi = 0; pi < n_points; pi++) {
        const size_t n = ns[pi];
        const char *skip = accuracy_over_budget(x, n);
        if (skip) {
            for (size_t vi = 0; vi < set.n; vi++) {
                if (!set.selected[vi]) continue;
                const kernels_series *var = &set.all[vi];
                row_key k = {"error_vs_n", var->name,       INPUT_NAME(x),  n,
                             var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, accuracy_chunk_of(var),
                             "float32",    "reference_f64"};
                if (accuracy_record_skip(x, &k, skip)) return -1;
                k.precision = "float64";
                if (accuracy_record_skip(x, &k, skip)) return -1;
            }
            continue;
        }
        buffers b;
        if (accuracy_buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
        accuracy_fill_inputs(x, &b, "error_vs_n", 0);
        char what[64];
        snprintf(what, sizeof what, "error_vs_n N=%zu", n);
        accuracy_progress(x, what);
        for (size_t vi = 0; vi < set.n; vi++) {
            if (!set.selected[vi]) continue;
            const kernels_series *var = &set.all[vi];
            row_key k32 = {"error_vs_n", var->name,       INPUT_NAME(x),  n,
                           var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, accuracy_chunk_of(var),
                           "float32",    "reference_f64"};
            row_key k64 = k32;
            k64.precision = "float64";
            if (accuracy_done_already(x, &k32) && accuracy_done_already(x, &k64)) continue;
            la_problem p;
            accuracy_problem_for(x, &p, n, var->causal);
            if (!variants_rank_fits(var->kernel, &p)) { /* linformer: K above M = N, not run */
                if (accuracy_record_skip(x, &k32, "skipped_rank") ||
                    accuracy_record_skip(x, &k64, "skipped_rank"))
                    return -1;
                continue;
            }
            la_status st = la_ref_attention(var->kernel, &p, b.q64, b.k64, b.v64, b.ref);
            if (st != LA_OK) {
                if (accuracy_record_failure(x, &k32, st)) return -1;
                continue;
            }
            st = la_attention(var->kernel, &p, LA_FLOAT32, b.q, b.k, b.v, b.y32);
            if (st == LA_OK) {
                accuracy_widen(b.y32, b.y64, b.elems);
                if (accuracy_record(x, &k32, b.y64, b.ref, b.elems)) return -1;
            } else if (accuracy_record_failure(x, &k32, st))
                return -1;
            st = la_attention(var->kernel, &p, LA_FLOAT64, b.q64, b.k64, b.v64, b.y64);
            if (st == LA_OK) {
                if (accuracy_record(x, &k64, b.y64, b.ref, b.elems)) return -1;
            } else if (accuracy_record_failure(x, &k64, st))
                return -1;
        }
        accuracy_buffers_free(&b);
    }
    return 0;
}

/* ---------------------------------------------------------------- distance */

/* The kernels the distance study compares with softmax: those the registry marks as
 * approximating softmax attention (LA_CAP_APPROXIMATES) that run without a causal mask,
 * in registry order, into out (LA_KERNEL_COUNT entries); returns the count. */
size_t accuracy_approximating(la_kernel *out)
{
    size_t n = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *row = la_kernel_get((la_kernel)k);
        if ((row->caps & LA_CAP_APPROXIMATES) && row->causal != LA_CAUSAL_REQUIRED &&
            !kernels_exact_softmax((la_kernel)k))
            out[n++] = (la_kernel)k;
    }
    return n;
}

/* Each approximating kernel (float64, at the default budget) against exact softmax (its
 * float64 reference) on the same inputs: RMS(y − y_softmax) / RMS(v). */
int accuracy_study_distance(ctx *x, const size_t *ns, size_t n_points)
{
    const char *const inputs[] = {INPUT_NAME(x), "dominant_key"};
    const char *softmax = la_kernel_series(LA_KERNEL_SOFTMAX, 0);
    la_kernel kernels[LA_KERNEL_COUNT];
    const size_t n_kernels = accuracy_approximating(kernels);
    for (size_t pi = 0; pi < n_points; pi++) {
        const size_t n = ns[pi];
        for (int dom = 0; dom <= N_DOMINANT(x); dom++) {
            row_key keys[LA_KERNEL_COUNT];
            int all_done = 1;
            for (size_t i = 0; i < n_kernels; i++) {
                const row_key k = {"distance",
                                   la_kernel_series(kernels[i], 0),
                                   inputs[dom],
                                   n,
                                   0,
                                   LA_FEATURE_ELU1,
                                   LA_DEFAULT_EPS,
                                   0,
                                   "float64",
                                   softmax};
                keys[i] = k;
                all_done &= accuracy_done_already(x, &keys[i]);
            }
            if (all_done) continue;
            const char *skip = accuracy_over_budget(x, n);
            if (skip) {
                for (size_t i = 0; i < n_kernels; i++)
                    if (!accuracy_done_already(x, &keys[i]) &&
                        accuracy_record_skip(x, &keys[i], skip))
                        return -1;
                continue;
            }
            char what[64];
            snprintf(what, sizeof what, "distance %s N=%zu", inputs[dom], n);
            accuracy_progress(x, what);
            buffers b;
            if (accuracy_buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
            accuracy_fill_inputs(x, &b, dom ? "distance_dominant" : "distance_random", dom);
            la_problem p;
            accuracy_problem_for(x, &p, n, 0);
            la_status st = la_ref_attention(LA_KERNEL_SOFTMAX, &p, b.q64, b.k64, b.v64, b.ref);
            int rc = 0;
            for (size_t i = 0; i < n_kernels && rc == 0; i++) {
                if (accuracy_done_already(x, &keys[i])) continue;
                if (!variants_rank_fits(kernels[i], &p)) { /* linformer: K above M = N */
                    rc = accuracy_record_skip(x, &keys[i], "skipped_rank");
                    continue;
                }
                la_status s2 = st == LA_OK ? la_attention(kernels[i], &p, LA_FLOAT64, b.q64, b.k64,
                                                          b.v64, b.y64)
                                           : st;
                rc = s2 == LA_OK ? accuracy_record_vs_v(x, &keys[i], b.y64, b.ref, b.v64, b.elems)
                                 : accuracy_record_failure(x, &keys[i], s2);
            }
            accuracy_buffers_free(&b);
            if (rc) return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- eps */

int accuracy_study_eps(ctx *x)
{
    static const double eps_values[] = {0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 1e-1, 1, 10};
    const size_t n = x->c->fixed_n;
    buffers b;
    if (accuracy_buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
    accuracy_fill_inputs(x, &b, "eps", 0);
    for (int fmi = 0; fmi <= 1; fmi++) {
        la_feature_map fm = fmi ? LA_FEATURE_RELU : LA_FEATURE_ELU1;
        for (int causal = 0; causal <= 1; causal++) {
            char what[64];
            snprintf(what, sizeof what, "eps %s %s", la_feature_map_name(fm),
                     causal ? "causal" : "non-causal");
            accuracy_progress(x, what);
            const char *name = la_kernel_series(LA_KERNEL_LINEAR, causal);
            la_problem p;
            accuracy_problem_for(x, &p, n, causal);
            p.feature_map = fm;
            p.eps = 0;
            /* ref2 = the float64 reference at ε = 0 */
            la_status st = la_ref_attention(LA_KERNEL_LINEAR, &p, b.q64, b.k64, b.v64, b.ref2);
            for (size_t e = 0; e < sizeof eps_values / sizeof eps_values[0]; e++) {
                row_key vs0 = {"eps",     name,   INPUT_NAME(x), n,
                               causal,    fm,     eps_values[e], causal ? LA_DEFAULT_CHUNK : 0,
                               "float64", "eps_0"};
                row_key f32 = vs0;
                f32.precision = "float32";
                f32.compared_to = "reference_f64";
                if (accuracy_done_already(x, &vs0) && accuracy_done_already(x, &f32)) continue;
                p.eps = eps_values[e];
                la_status s2 =
                    st == LA_OK ? la_ref_attention(LA_KERNEL_LINEAR, &p, b.q64, b.k64, b.v64, b.ref)
                                : st;
                if (s2 != LA_OK) {
                    if (accuracy_record_failure(x, &vs0, s2)) goto fail;
                    continue;
                }
                if (accuracy_record(x, &vs0, b.ref, b.ref2, b.elems)) goto fail;
                s2 = la_attention(LA_KERNEL_LINEAR, &p, LA_FLOAT32, b.q, b.k, b.v, b.y32);
                if (s2 == LA_OK) {
                    accuracy_widen(b.y32, b.y64, b.elems);
                    if (accuracy_record(x, &f32, b.y64, b.ref, b.elems)) goto fail;
                } else if (accuracy_record_failure(x, &f32, s2))
                    goto fail;
            }
        }
    }
    accuracy_buffers_free(&b);
    return 0;
fail:
    accuracy_buffers_free(&b);
    return -1;
}

/* ---------------------------------------------------------------- chunk */

/* The chunked causal form of linear attention against its recurrent kernel: a named pair
 * (the two causal forms of linear attention in the registry). */
int accuracy_study_chunk(ctx *x)
{
    const char *chunked = la_kernel_series(LA_KERNEL_LINEAR, 1);
    const char *recurrent_name = la_kernel_series(LA_KERNEL_LINEAR_RECURRENT, 1);
    const size_t n = x->c->fixed_n;
    buffers b;
    if (accuracy_buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
    accuracy_fill_inputs(x, &b, "chunk", 0);
    float *recurrent = malloc(b.elems * sizeof *recurrent);
    double *recurrent64 = malloc(b.elems * sizeof *recurrent64);
    int rc = -1;
    if (!recurrent || !recurrent64) goto done;
    accuracy_progress(x, "chunk sizes");
    la_problem p;
    accuracy_problem_for(x, &p, n, 1);
    /* the recurrent kernel against the reference: the line the chunked forms sit on */
    const row_key rec_key = {"chunk",   recurrent_name,  INPUT_NAME(x),  n,
                             1,         LA_FEATURE_ELU1, LA_DEFAULT_EPS, 0,
                             "float32", "reference_f64"};
    la_status st = la_ref_attention(LA_KERNEL_LINEAR_RECURRENT, &p, b.q64, b.k64, b.v64, b.ref);
    if (st == LA_OK)
        st = la_attention(LA_KERNEL_LINEAR_RECURRENT, &p, LA_FLOAT32, b.q, b.k, b.v, recurrent);
    if (st != LA_OK) {
        rc = accuracy_record_failure(x, &rec_key, st) ? -1 : 0;
        goto done;
    }
    accuracy_widen(recurrent, recurrent64, b.elems);
    if (!accuracy_done_already(x, &rec_key) &&
        accuracy_record(x, &rec_key, recurrent64, b.ref, b.elems))
        goto done;
    for (size_t chunk = 1;; chunk = chunk * 2 > n ? n : chunk * 2) {
        row_key vs_rec = {"chunk", chunked,   INPUT_NAME(x),  n, 1, LA_FEATURE_ELU1, LA_DEFAULT_EPS,
                          chunk,   "float32", "recurrent_f32"};
        row_key vs_ref = vs_rec;
        vs_ref.compared_to = "reference_f64";
        if (!(accuracy_done_already(x, &vs_rec) && accuracy_done_already(x, &vs_ref))) {
            p.chunk = chunk;
            st = la_attention(LA_KERNEL_LINEAR, &p, LA_FLOAT32, b.q, b.k, b.v, b.y32);
            if (st != LA_OK) {
                if (accuracy_record_failure(x, &vs_ref, st)) goto done;
            } else {
                accuracy_widen(b.y32, b.y64, b.elems);
                if (accuracy_record(x, &vs_rec, b.y64, recurrent64, b.elems) ||
                    accuracy_record(x, &vs_ref, b.y64, b.ref, b.elems))
                    goto done;
            }
        }
        if (chunk == n) break;
    }
    rc = 0;
done:
    free(recurrent), free(recurrent64);
    accuracy_buffers_free(&b);
    return rc;
}
