/* results_summary_timing.c — the summary's sections on the timing experiments: scaling,
 * memory and rate, crossover, decode, complexity, roofline, block (results.h). */
#include "attention/series.h"
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

/* The scaling files (forward, or --pass train): fitted exponents, and the times the README
 * quotes at ns (n_ns of them), softmax against linear. */
static void summary_scaling(FILE *out, const config *c, const char *title, const char *file,
                            const char *fit_file, const double *ns, size_t n_ns)
{
    record_file *fit = results_load(c, fit_file, 1), *f = results_load(c, file, 1);
    if (!f && !fit) return;
    fprintf(out, "\n## %s (%s, %s)\n\n", title, file, fit_file);
    if (fit) {
        const int has_ci = record_count(fit) > 0 && record_get(fit, record_row_at(fit, 0),
                                                               "exponent_ci_lo", &(double){0}) == 0;
        fprintf(out, "Fitted exponent e of time ∝ N^e%s:\n\n",
                has_ci ? ", with its bootstrap 95% interval and R²"
                       : " (this file has no interval columns: a single least-squares fit)");
        fprintf(out, "| series | e | interval | R² | theory | N range | points |\n"
                     "| --- | --- | --- | --- | --- | --- | --- |\n");
        for (size_t i = 0; i < record_count(fit); i++) {
            const char *row = record_row_at(fit, i);
            char name[64] = "?", theory[16] = "", ci[48] = "-", r2[16] = "-";
            double e, t, lo, hi, r, nmin, nmax, pts;
            record_get_str(fit, row, "variant", name, sizeof name);
            if (record_get(fit, row, "theory_exponent", &t) == 0)
                snprintf(theory, sizeof theory, "%.0f", t);
            if (record_get(fit, row, "exponent_ci_lo", &lo) == 0 &&
                record_get(fit, row, "exponent_ci_hi", &hi) == 0)
                snprintf(ci, sizeof ci, "%.2f–%.2f", lo, hi);
            if (record_get(fit, row, "r_squared", &r) == 0) snprintf(r2, sizeof r2, "%.4f", r);
            if (record_get(fit, row, "fitted_exponent", &e) == 0 &&
                record_get(fit, row, "fit_n_min", &nmin) == 0 &&
                record_get(fit, row, "fit_n_max", &nmax) == 0 &&
                record_get(fit, row, "fit_points", &pts) == 0)
                fprintf(out, "| %s | %.2f | %s | %s | %s | %.0f–%.0f | %.0f |\n", name, e, ci, r2,
                        theory, nmin, nmax, pts);
            else
                fprintf(out, "| %s | - | - | - | %s | too few points to fit | |\n", name, theory);
        }
    }
    if (f) {
        const char *pair[] = {la_kernel_series(LA_KERNEL_SOFTMAX, 0),
                              la_kernel_series(LA_KERNEL_LINEAR, 0)};
        fprintf(out,
                "\nTimes quoted (median over the repetitions, and their spread):\n\n"
                "| N | %s | %s |\n| --- | --- | --- |\n",
                pair[0], pair[1]);
        for (size_t i = 0; i < n_ns; i++) {
            char cell[2][128];
            int measured = 0;
            for (int k = 0; k < 2; k++) {
                const char *row = results_scaling_row(f, pair[k], ns[i]);
                if (row && results_is_ok(f, row))
                    results_time_spread(f, row, "", cell[k], sizeof cell[k]), measured++;
                else
                    snprintf(cell[k], sizeof cell[k], "not measured");
            }
            if (measured) fprintf(out, "| %.0f | %s | %s |\n", ns[i], cell[0], cell[1]);
        }
    }
    record_close(fit);
    record_close(f);
}

/* The times the README quotes: forward at N = 128, 32768, 65536 (scaling.csv); forward
 * and backward at 1024, 4096, 16384 (scaling_train.csv). */
void results_summary_forward_time(FILE *out, const config *c)
{
    static const double forward_ns[] = {128, 32768, 65536};
    summary_scaling(out, c, "Time against N", "scaling.csv", "scaling_fit.csv", forward_ns, 3);
}

void results_summary_train_time(FILE *out, const config *c)
{
    static const double train_ns[] = {1024, 4096, 16384};
    summary_scaling(out, c, "Forward + backward (training) time against N", "scaling_train.csv",
                    "scaling_train_fit.csv", train_ns, 3);
}

void results_summary_memory_and_rate(FILE *out, const config *c)
{
    record_file *f = results_load(c, "scaling.csv", 1);
    if (!f) return;
    kernels_series s[KERNELS_MAX_SERIES];
    size_t n = results_series_in(f, s);
    fprintf(out, "\n## Memory and arithmetic rate against N (scaling.csv)\n\n"
                 "Peak resident memory at the largest N measured (VmHWM, inputs included), "
                 "points not run, and GFLOP/s (the cost model's FLOPs over the median time): "
                 "the range over every N, over N = 1,024–16,384, and above 16,384.\n\n"
                 "| series | largest N | peak RSS | not run | GFLOP/s, all N | 1,024–16,384 | "
                 "above 16,384 |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t k = 0; k < n; k++) {
        double n_max = -1, peak = NAN;
        int skipped = 0;
        char skipped_at[64] = "";
        for (size_t i = 0; i < record_count(f); i++) {
            const char *row = record_row_at(f, i);
            double rn, p;
            if (!results_text_is(f, row, "variant", s[k].name) || record_get(f, row, "n", &rn))
                continue;
            if (!results_is_ok(f, row)) {
                char why[24] = "";
                if (record_get_str(f, row, "status", why, sizeof why) != 0) why[0] = '\0';
                if (!skipped++) /* its status and N: "skipped_mem from N = 65536" */
                    snprintf(skipped_at, sizeof skipped_at, "%s from N = %.0f", why, rn);
                continue;
            }
            if (rn > n_max && record_get(f, row, "peak_rss_bytes", &p) == 0) n_max = rn, peak = p;
        }
        char rates[3][48];
        const double lo[3] = {0, 1024, 16385}, hi[3] = {INFINITY, 16384, INFINITY};
        for (int r = 0; r < 3; r++) {
            double a, b;
            if (results_range_over_n(f, s[k].name, "gflops", lo[r], hi[r], &a, &b) > 0)
                snprintf(rates[r], sizeof rates[r], "%.3g–%.3g", a, b);
            else
                snprintf(rates[r], sizeof rates[r], "-");
        }
        char mem[32];
        fprintf(out, "| %s | %.0f | %s | %s | %s | %s | %s |\n", s[k].name, n_max,
                results_fmt_bytes(peak, mem, sizeof mem), skipped ? skipped_at : "-", rates[0],
                rates[1], rates[2]);
    }
    record_close(f);
}

void results_summary_crossover(FILE *out, const config *c)
{
    record_file *f = results_load(c, "crossover.csv", 4);
    if (!f) return;
    fprintf(out, "\n## Crossover (crossover.csv)\n\n"
                 "The N above which linear attention is faster than softmax: measured (with the "
                 "bracket the bisection ended in) / predicted by the FLOP model.\n\n"
                 "| d | non-causal | causal |\n| --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double d, causal;
        if (record_get(f, row, "d", &d) || record_get(f, row, "causal", &causal) || causal != 0)
            continue;
        char cell[2][128];
        for (int k = 0; k < 2; k++) {
            snprintf(cell[k], sizeof cell[k], "-");
            for (size_t j = 0; j < record_count(f); j++) {
                const char *r2 = record_row_at(f, j);
                double d2, c2, meas, pred, lo, hi;
                char status[32] = "", m[64] = "-", p[32] = "-";
                if (record_get(f, r2, "d", &d2) || record_get(f, r2, "causal", &c2) || d2 != d ||
                    c2 != k)
                    continue;
                record_get_str(f, r2, "status", status, sizeof status);
                if (record_get(f, r2, "measured_crossover_n", &meas) == 0) {
                    if (record_get(f, r2, "bracket_lo_n", &lo) == 0 &&
                        record_get(f, r2, "bracket_hi_n", &hi) == 0)
                        snprintf(m, sizeof m, "%.0f (%.0f–%.0f)", meas, lo, hi);
                    else
                        snprintf(m, sizeof m, "%.0f", meas);
                } else if (strcmp(status, "below_range") == 0 &&
                           record_get(f, r2, "bracket_hi_n", &hi) == 0) {
                    snprintf(m, sizeof m, "below %.0f, the smallest N swept", hi);
                } else if (strcmp(status, "above_range") == 0 &&
                           record_get(f, r2, "bracket_lo_n", &lo) == 0) {
                    snprintf(m, sizeof m, "above %.0f, the largest N swept", lo);
                } else if (status[0]) {
                    snprintf(m, sizeof m, "%s", status);
                }
                if (record_get(f, r2, "predicted_crossover_n", &pred) == 0)
                    snprintf(p, sizeof p, "%.0f", pred);
                snprintf(cell[k], sizeof cell[k], "%s / %s", m, p);
            }
        }
        fprintf(out, "| %.0f | %s | %s |\n", d, cell[0], cell[1]);
    }
    record_close(f);
}

void results_summary_decode(FILE *out, const config *c)
{
    record_file *f = results_load(c, "decode.csv", 8);
    if (!f) return;
    /* per series: the total (cumulative_s at the last token), the last bin's per-token
     * time, and the bins' 10th, 50th and 90th percentiles weighted by their tokens: the
     * relative spread of the per-token times, carried to the totals */
    double total[2] = {NAN, NAN}, p10[2] = {0, 0}, p50[2] = {0, 0}, p90[2] = {0, 0};
    double tokens = 0, t_last[2] = {0, 0};
    int spread[2] = {1, 1};
    const char *last[2] = {NULL, NULL};
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char name[64];
        double cum, tl = -1, T, in_bin, a, m, b;
        if (!results_is_ok(f, row) || record_get_str(f, row, "variant", name, sizeof name))
            continue;
        int k = strcmp(name, "softmax_kv_cache") == 0 ? 0 : 1;
        if (record_get(f, row, "tokens_in_bin", &in_bin) == 0 &&
            record_get(f, row, "p10_s", &a) == 0 && record_get(f, row, "median_s", &m) == 0 &&
            record_get(f, row, "p90_s", &b) == 0)
            p10[k] += in_bin * a, p50[k] += in_bin * m, p90[k] += in_bin * b;
        else
            spread[k] = 0;
        if (record_get(f, row, "t_last", &tl) == 0 && tl >= t_last[k])
            t_last[k] = tl, last[k] = row;
        if (record_get(f, row, "cumulative_s", &cum) == 0 &&
            record_get(f, row, "tokens", &T) == 0 && tl == T)
            total[k] = cum, tokens = T;
    }
    if (isfinite(total[0]) && isfinite(total[1]) && last[0] && last[1]) {
        char a[32], b[32], per[2][128];
        for (int k = 0; k < 2; k++)
            results_time_spread(f, last[k], "", per[k], sizeof per[k]);
        const double ratio = total[0] / total[1];
        fprintf(out,
                "\n## Generation (decode.csv)\n\n"
                "- per token near t = %.0f: softmax + KV cache %s, linear attention's state "
                "%s (median of the last bin, and its spread)\n",
                tokens, per[0], per[1]);
        char r[3][32];
        fprintf(out,
                "- %.0f tokens: %s with softmax + KV cache, %s with the state: **%s× "
                "faster**",
                tokens, results_fmt_time(total[0], a, sizeof a),
                results_fmt_time(total[1], b, sizeof b),
                results_fmt_ratio(ratio, r[0], sizeof r[0]));
        if (spread[0] && spread[1] && p50[0] > 0 && p50[1] > 0 && p10[1] > 0 && p90[1] > 0)
            fprintf(
                out,
                " (range %s×–%s×: the per-token 10th–90th percentiles, weighted "
                "by the tokens of each bin, carried to the totals; slowest of one "
                "against fastest of the other)\n",
                results_fmt_ratio(ratio * (p10[0] / p50[0]) / (p90[1] / p50[1]), r[1], sizeof r[1]),
                results_fmt_ratio(ratio * (p90[0] / p50[0]) / (p10[1] / p50[1]), r[2],
                                  sizeof r[2]));
        else
            fprintf(out, "\n");
    }
    record_close(f);
}

/* Vaswani et al.'s Table 1 with the measured exponents (complexity_fit.csv). */
void results_summary_complexity(FILE *out, const config *c)
{
    record_file *f = results_load(c, "complexity_fit.csv", 1);
    if (!f) return;
    fprintf(out, "\n## The complexity table, measured (complexity_fit.csv)\n\n"
                 "Exponent of time in N over the upper half of each layer type's N, with its "
                 "95%% bootstrap interval.\n\n"
                 "| layer | complexity per layer | measured exponent [95%%] | sequential "
                 "operations | maximum path length |\n| --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char layer[64], per[32], seq[16], path[16], measured[64] = "no fit";
        double e, lo, hi;
        if (record_get_str(f, row, "layer", layer, sizeof layer) ||
            record_get_str(f, row, "complexity", per, sizeof per) ||
            record_get_str(f, row, "sequential_ops", seq, sizeof seq) ||
            record_get_str(f, row, "path_length", path, sizeof path))
            continue;
        if (record_get(f, row, "fitted_exponent", &e) == 0 &&
            record_get(f, row, "exponent_ci_lo", &lo) == 0 &&
            record_get(f, row, "exponent_ci_hi", &hi) == 0)
            snprintf(measured, sizeof measured, "%.2f [%.2f, %.2f]", e, lo, hi);
        fprintf(out, "| %s | %s | %s | %s | %s |\n", layer, per, measured, seq, path);
    }
    record_close(f);
}

/* Each series on the roofline (roofline.csv): at d = 64, its largest N measured, per dtype. */
void results_summary_roofline(FILE *out, const config *c)
{
    record_file *f = results_load(c, "roofline.csv", 7);
    if (!f) return;
    char ceilings[512];
    fprintf(out,
            "\n## The roofline (roofline.csv)\n\nCeilings measured in the same process: %s. "
            "Per series and dtype at d = 64, its largest N measured; intensity = FLOPs / the "
            "cost model's minimum bytes, roofline = min(peak, intensity · triad bandwidth).\n\n"
            "| series | dtype | N | GFLOP/s | FLOP/byte | bound | %% of peak | %% of roofline "
            "|\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
            results_meta_value(c, "roofline.csv", "ceilings", ceilings, sizeof ceilings));
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char variant[64], dtype[8];
        double d, n, g, intensity, peak, bw, pp, pr;
        if (!results_is_ok(f, row) || record_get(f, row, "d", &d) || d != 64 ||
            record_get_str(f, row, "variant", variant, sizeof variant) ||
            record_get_str(f, row, "dtype", dtype, sizeof dtype) || record_get(f, row, "n", &n) ||
            record_get(f, row, "gflops", &g) ||
            record_get(f, row, "intensity_flop_per_byte", &intensity))
            continue;
        /* only the largest N of this series and dtype */
        int larger = 0;
        for (size_t j = 0; j < record_count(f) && !larger; j++) {
            const char *other = record_row_at(f, j);
            double od, on;
            larger = results_is_ok(f, other) && results_text_is(f, other, "variant", variant) &&
                     results_text_is(f, other, "dtype", dtype) &&
                     record_get(f, other, "d", &od) == 0 && od == 64 &&
                     record_get(f, other, "n", &on) == 0 && on > n;
        }
        if (larger) continue;
        const int have = record_get(f, row, "peak_gflops", &peak) == 0 &&
                         record_get(f, row, "bandwidth_gbs", &bw) == 0 &&
                         record_get(f, row, "pct_of_peak", &pp) == 0 &&
                         record_get(f, row, "pct_of_roofline", &pr) == 0;
        if (have)
            fprintf(out, "| %s | %s | %.0f | %.1f | %.1f | %s | %.0f%% | %.0f%% |\n", variant,
                    dtype, n, g, intensity, intensity * bw < peak ? "memory" : "compute", pp, pr);
        else
            fprintf(out, "| %s | %s | %.0f | %.1f | %.1f | - | - | - |\n", variant, dtype, n, g,
                    intensity);
    }
    record_close(f);
}

void results_summary_block(FILE *out, const config *c)
{
    record_file *f = results_load(c, "block.csv", 6);
    if (!f) return;
    const char *softmax = la_kernel_name(LA_KERNEL_SOFTMAX),
               *linear = la_kernel_name(LA_KERNEL_LINEAR);
    double first = NAN, d_model = NAN, lin_lo = INFINITY, lin_hi = -INFINITY;
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, share;
        if (!results_is_ok(f, row) || !results_text_is(f, row, "component", "attention") ||
            record_get(f, row, "n", &n) || record_get(f, row, "share", &share))
            continue;
        record_get(f, row, "d_model", &d_model);
        if (results_text_is(f, row, "attention", softmax) && share > 0.5 && !(first <= n))
            first = n;
        if (results_text_is(f, row, "attention", linear))
            lin_lo = fmin(lin_lo, share), lin_hi = fmax(lin_hi, share);
    }
    if (!isfinite(d_model)) {
        record_close(f);
        return;
    }
    fprintf(out, "\n## One encoder layer (block.csv, D = %.0f)\n\n", d_model);
    if (isfinite(first))
        fprintf(out, "- softmax attention is over half of the layer's time from N = %.0f\n", first);
    else
        fprintf(out, "- softmax attention stays under half of the layer's time up to the largest "
                     "N measured\n");
    const double ns[] = {2048, 4096, 8192};
    int listed = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (size_t i = 0; i < record_count(f); i++) {
            const char *row = record_row_at(f, i);
            double n, share;
            char t[128];
            if (results_is_ok(f, row) && results_text_is(f, row, "attention", softmax) &&
                results_text_is(f, row, "component", "attention") &&
                record_get(f, row, "n", &n) == 0 && n == ns[k] &&
                record_get(f, row, "share", &share) == 0)
                fprintf(out, "%s %.0f%% at N = %.0f (%s)",
                        listed++ ? ";"
                                 : "- softmax attention's share, and its time with the "
                                   "spread:",
                        100 * share, n, results_time_spread(f, row, "", t, sizeof t));
        }
    if (listed) fprintf(out, "\n");
    if (lin_hi >= lin_lo)
        fprintf(out, "- with linear attention, its share is %.1f%%–%.1f%% over every N\n",
                100 * lin_lo, 100 * lin_hi);
    /* projections and FFN: their model FLOPs over their median time */
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, flops, t;
        if (!results_is_ok(f, row) ||
            !(results_text_is(f, row, "component", "projections") ||
              results_text_is(f, row, "component", "ffn")) ||
            record_get(f, row, "n", &n) || record_get(f, row, "model_flops", &flops) ||
            record_get(f, row, "median_s", &t) || !(t > 0))
            continue;
        int k = n >= 512;
        lo[k] = fmin(lo[k], flops / t / 1e9), hi[k] = fmax(hi[k], flops / t / 1e9);
    }
    if (hi[1] >= lo[1])
        fprintf(out, "- projections and FFN run at %.0f–%.0f GFLOP/s from N = 512", lo[1], hi[1]);
    if (hi[0] >= lo[0]) fprintf(out, " (%.0f–%.0f below)", lo[0], hi[0]);
    if (hi[1] >= lo[1]) fprintf(out, "\n");
    record_close(f);
}
