/* results_summary_other.c — the summary's sections on the experiments that time nothing:
 * accuracy, scores, params (results.h). */
#include "results.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void results_summary_accuracy(FILE *out, const config *c)
{
    record_file *f = results_load(c, "accuracy.csv", 12);
    if (!f) return;
    kernels_series all[KERNELS_MAX_SERIES];
    const size_t n_series = kernels_all_series(all);
    fprintf(out, "\n## Numerical error (accuracy.csv)\n\n"
                 "Relative error against the float64 reference over every N (min–max):\n\n"
                 "| series | float32 | float64 |\n| --- | --- | --- |\n");
    for (size_t k = 0; k < n_series; k++) {
        char cell[2][48];
        int any = 0;
        for (int p = 0; p < 2; p++) {
            double lo = INFINITY, hi = -INFINITY;
            for (size_t i = 0; i < record_count(f); i++) {
                const char *row = record_row_at(f, i);
                double e;
                if (!results_text_is(f, row, "study", "error_vs_n") ||
                    !results_text_is(f, row, "variant", all[k].name) ||
                    !results_text_is(f, row, "precision", p ? "float64" : "float32") ||
                    !results_text_is(f, row, "status", "ok")) /* skipped: not an error of inf */
                    continue;
                if (record_get(f, row, "rel_error", &e) != 0) e = INFINITY;
                lo = fmin(lo, e), hi = fmax(hi, e);
            }
            if (hi >= lo) {
                any = 1;
                snprintf(cell[p], sizeof cell[p], "%.1e–%.1e", lo, hi);
            } else {
                snprintf(cell[p], sizeof cell[p], "-");
            }
        }
        if (any) fprintf(out, "| %s | %s | %s |\n", all[k].name, cell[0], cell[1]);
    }
    /* the other studies: the range of rel_error per (study, variant, input, compared_to),
     * on its error_scale (distance: RMS(y − y_softmax) / RMS(v)) */
    fprintf(out, "\nThe other studies (rel_error, min–max over their rows; scale rms_v: "
                 "RMS(y − y_softmax) / RMS(v), norm_ref: ‖y − y_ref‖ / ‖y_ref‖):\n\n"
                 "| study | series | input | compared to | rel_error | scale |\n"
                 "| --- | --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char study[32], var[64], input[32], cmp[32], scale[16];
        if (record_get_str(f, row, "study", study, sizeof study) || !strcmp(study, "error_vs_n") ||
            record_get_str(f, row, "variant", var, sizeof var) ||
            record_get_str(f, row, "input", input, sizeof input) ||
            record_get_str(f, row, "compared_to", cmp, sizeof cmp))
            continue;
        int first = 1; /* one line per group, at its first row */
        for (size_t j = 0; j < i && first; j++) {
            const char *r = record_row_at(f, j);
            first = !(
                results_text_is(f, r, "study", study) && results_text_is(f, r, "variant", var) &&
                results_text_is(f, r, "input", input) && results_text_is(f, r, "compared_to", cmp));
        }
        if (!first) continue;
        double lo = INFINITY, hi = -INFINITY, e;
        for (size_t j = i; j < record_count(f); j++) {
            const char *r = record_row_at(f, j);
            if (results_text_is(f, r, "study", study) && results_text_is(f, r, "variant", var) &&
                results_text_is(f, r, "input", input) &&
                results_text_is(f, r, "compared_to", cmp) && record_get(f, r, "rel_error", &e) == 0)
                lo = fmin(lo, e), hi = fmax(hi, e);
        }
        if (record_get_str(f, row, "error_scale", scale, sizeof scale))
            snprintf(scale, sizeof scale, "-");
        if (hi >= lo)
            fprintf(out, "| %s | %s | %s | %s | %.2g–%.2g | %s |\n", study, var, input, cmp, lo, hi,
                    scale);
    }
    record_close(f);
}

/* Scaled against unscaled dot products (scores.csv): per d_k and scaling, the logits' std,
 * the mean row entropy and the median largest softmax gradient, each the mean over seeds
 * with its min–max. */
void results_summary_scores(FILE *out, const config *c)
{
    record_file *f = results_load(c, "scores.csv", 4);
    if (!f) return;
    fprintf(out, "\n## Scaled vs unscaled dot products (scores.csv)\n\n"
                 "Mean over seeds [min–max]; entropy in nats (ln N is its maximum); gradient: "
                 "the median over rows of the softmax Jacobian's largest entry.\n\n"
                 "| d_k | scaling | logit std | entropy (ln N) | gradient |\n"
                 "| --- | --- | --- | --- | --- |\n");
    double dk_seen[64];
    size_t n_dk = 0;
    for (size_t i = 0; i < record_count(f) && n_dk < 64; i++) {
        double dk;
        if (record_get(f, record_row_at(f, i), "d_k", &dk)) continue;
        size_t j = 0;
        while (j < n_dk && dk_seen[j] != dk)
            j++;
        if (j == n_dk) dk_seen[n_dk++] = dk;
    }
    static const char *const cols[] = {"logit_std", "entropy_mean_nats", "grad_median"};
    for (size_t d = 0; d < n_dk; d++)
        for (int sc = 0; sc < 2; sc++) {
            const char *scaling = sc ? "sqrt" : "none";
            double sum[3] = {0}, lo[3], hi[3], ln_n = NAN;
            int count = 0;
            for (int x = 0; x < 3; x++)
                lo[x] = INFINITY, hi[x] = -INFINITY;
            for (size_t i = 0; i < record_count(f); i++) {
                const char *row = record_row_at(f, i);
                double dk, v[3];
                if (!results_text_is(f, row, "scaling", scaling) ||
                    !results_text_is(f, row, "status", "ok") || record_get(f, row, "d_k", &dk) ||
                    dk != dk_seen[d] || record_get(f, row, cols[0], &v[0]) ||
                    record_get(f, row, cols[1], &v[1]) || record_get(f, row, cols[2], &v[2]) ||
                    record_get(f, row, "entropy_max_nats", &ln_n))
                    continue;
                for (int x = 0; x < 3; x++)
                    sum[x] += v[x], lo[x] = fmin(lo[x], v[x]), hi[x] = fmax(hi[x], v[x]);
                count++;
            }
            if (count == 0) continue;
            fprintf(out,
                    "| %.0f | %s | %.3g [%.3g–%.3g] | %.3g [%.3g–%.3g] (%.3g) | %.2e "
                    "[%.2e–%.2e] |\n",
                    dk_seen[d], sc ? "1/sqrt(d_k)" : "none", sum[0] / count, lo[0], hi[0],
                    sum[1] / count, lo[1], hi[1], ln_n, sum[2] / count, lo[2], hi[2]);
        }
    record_close(f);
}

void results_summary_params(FILE *out, const config *c)
{
    record_file *f = results_load(c, "params.csv", 1);
    if (!f) return;
    fprintf(out, "\n## Parameters (params.csv)\n\nExact counts (no spread: they are counted). "
                 "One encoder layer against 12D²: ");
    const char *sep = "";
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double d, gap;
        if (!results_text_is(f, row, "kind", "sweep") || record_get(f, row, "d_model", &d) ||
            record_get(f, row, "approx_gap", &gap) || (d != 64 && d != 512 && d != 8192))
            continue;
        fprintf(out, "%sgap %.3g%% at D = %.0f", sep, 100 * gap, d);
        sep = ", ";
    }
    for (size_t i = 0; i < record_count(f); i++) { /* PyTorch's numbers at D = 512 */
        const char *row = record_row_at(f, i);
        double d, enc, dec;
        if (results_text_is(f, row, "kind", "sweep") && record_get(f, row, "d_model", &d) == 0 &&
            d == 512 && record_get(f, row, "encoder_layer", &enc) == 0 &&
            record_get(f, row, "decoder_layer", &dec) == 0)
            fprintf(out,
                    ". At D = 512 (d_ff = 2048): %.0f per encoder layer, %.0f per decoder "
                    "layer",
                    enc, dec);
    }
    fprintf(out, ".\n\n| model | D | H | d_ff | layers | total | layers exact | 12D² rule | gap | "
                 "attention | FFN | embeddings |\n"
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char model[64];
        double d, h, ff, enc, dec, total, approx, gap, all, att, ffn, emb;
        if (!results_text_is(f, row, "kind", "standard") ||
            record_get_str(f, row, "model", model, sizeof model) ||
            record_get(f, row, "d_model", &d) || record_get(f, row, "heads", &h) ||
            record_get(f, row, "d_ff", &ff) || record_get(f, row, "encoder_layers", &enc) ||
            record_get(f, row, "decoder_layers", &dec) ||
            record_get(f, row, "layers_exact", &total) ||
            record_get(f, row, "layers_approx", &approx) ||
            record_get(f, row, "approx_gap", &gap) || record_get(f, row, "total", &all) ||
            record_get(f, row, "attention_share", &att) || record_get(f, row, "ffn_share", &ffn) ||
            record_get(f, row, "embedding_share", &emb))
            continue;
        char layers[32];
        snprintf(layers, sizeof layers, dec > 0 ? "%.0f+%.0f" : "%.0f", enc, dec);
        fprintf(out,
                "| %s | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.3f%% | %.0f%% | %.0f%% | "
                "%.0f%% |\n",
                model, d, h, ff, layers, all, total, approx, 100 * gap, 100 * att, 100 * ffn,
                100 * emb);
    }
    record_close(f);
}
