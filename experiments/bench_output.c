/* bench_output.c — the table or the CSV of a run, and the run itself (bench.h). */
#include "attention/series.h"
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The csv: a results file (common/record.h) on standard output, its columns named as
 * in the experiments' files. */
static const char CSV_COLUMNS[] =
    "variant,kernel,causal,n,m,d_k,d_v,heads,batch,threads,status,reps,median_s,min_s,max_s,"
    "gflops,pct_of_sgemm,pct_of_peak,pct_of_roofline,workspace_bytes,sgemm_gflops,note";
static const char ABOUT[] = "float32 attention kernels against BLIS sgemm, one process";

/* The FMA peak beside the yardstick: how far below the hardware sgemm itself runs. */
static void write_peak(FILE *out, const sgemm_result *sgemm)
{
    if (isnan(sgemm->peak_gflops))
        fprintf(out, "# fma_peak_gflops: - (no AVX-512 FMA loop on this CPU)\n");
    else
        fprintf(out,
                "# fma_peak_gflops: %.1f (%d threads, 16-lane FMAs in registers; sgemm runs at "
                "%.0f%% of it)\n",
                sgemm->peak_gflops, sgemm->threads, 100 * sgemm->gflops / sgemm->peak_gflops);
    if (isnan(sgemm->triad_gbs))
        fprintf(out, "# triad_gbs: - (the bandwidth probe failed)\n");
    else
        fprintf(out,
                "# triad_gbs: %.1f (%d threads, STREAM's triad, write-allocate not counted; the "
                "roofline's memory ceiling)\n",
                sgemm->triad_gbs, sgemm->threads);
}

/* What the pass times, for the header's # pass line. */
static const char *const pass_about[] = {
    "forward (la_attention)",
    "backward (la_attention_backward alone, on the forward's output computed before the "
    "timing; FLOPs and workspace from la_attention_backward_cost)",
    "train (la_attention then la_attention_backward, timed as one call; FLOPs the sum "
    "of both models', workspace the larger)",
};

/* The # lines bench adds to the writer's: the shape, the timing rule, the yardstick. */
static void write_bench_meta(FILE *out, const bench_shape *s, const char *m_text, pass_kind pass,
                             const timing_rule *rule, const sgemm_result *sgemm)
{
    fprintf(out, "# shape: B=1 H=%zu d_k=%zu d_v=%zu M=%s\n", s->heads, s->d_k, s->d_v,
            m_text ? m_text : "N");
    if (rule->budgeted)
        fprintf(out, "# pass: forward, except the rows marked /backward or /train\n");
    else if (pass != PASS_FORWARD)
        fprintf(out, "# pass: %s\n", pass_about[pass]);
    fprintf(out, "# timing: one warm-up, then >= %d runs until they total %g s (at most %d)%s\n",
            rule->reps, rule->min_total_s, MAX_RUNS,
            rule->budgeted ? "; slow points fewer (see linattn help bench)" : "");
    fprintf(out,
            "# sgemm_gflops: %.1f (C 2000x2000 = A 2000x2000 * B 2000x2000, row-major, %d "
            "threads, median %.4f s of %d runs)\n",
            sgemm->gflops, sgemm->threads, sgemm->t.median_s, sgemm->t.reps);
    write_peak(out, sgemm);
}

/* The csv's status: as scaling.csv's, and skipped_no_backward. */
static const char *status_name(const bench_point *pt)
{
    if (pt->no_backward) return "skipped_no_backward";
    if (pt->rank_above_m) return "skipped_rank";
    return pt->status == LA_OK ? "ok" : pt->status == LA_EBUDGET ? "skipped_mem" : "error";
}

/* Why a point was skipped (the note). */
const char *bench_skip_reason(const bench_point *pt)
{
    return pt->no_backward    ? "no backward"
           : pt->rank_above_m ? "--proj-rank above M"
                              : la_strerror(pt->status);
}

/* The header, once the first yardstick is measured: the csv's results file (returned), or
 * the table's # lines and column names. NULL for the table, or when the csv could not
 * start (then *failed is set). */
static record_file *start_output(const bench_run *run, const sgemm_result *sgemm, int *failed)
{
    machine_check(); /* how busy the machine is: into the header, a warning if busy */
    if (run->format == FORMAT_TABLE) {
        record_write_meta(stdout, "bench", ABOUT, run->argc, run->argv);
        write_bench_meta(stdout, &run->shape, run->m_text, run->pass, &run->rule, sgemm);
        printf("%-26s %-9s %7s %7s %7s %5s %10s %10s %10s %8s %12s %11s %15s %15s  %s\n", "variant",
               "causal", "n", "m", "threads", "runs", "median_s", "min_s", "max_s", "gflops",
               "pct_of_sgemm", "pct_of_peak", "pct_of_roofline", "workspace_bytes", "note");
        return NULL;
    }
    char *extra = NULL, err[512];
    size_t extra_size = 0;
    FILE *meta = open_memstream(&extra, &extra_size);
    if (meta) {
        write_bench_meta(meta, &run->shape, run->m_text, run->pass, &run->rule, sgemm);
        fclose(meta);
    }
    record_file *csv = extra ? record_open_stream(stdout, "bench", ABOUT, CSV_COLUMNS, extra,
                                                  run->argc, run->argv, err, sizeof err)
                             : NULL;
    if (!csv) {
        cli_line("bench: %s", extra ? err : "out of memory");
        *failed = 1;
    }
    free(extra);
    return csv;
}

static int print_sgemm(record_file *csv, const sgemm_result *g)
{
    const timer_result *t = &g->t;
    char peak[32] = "";
    if (!isnan(g->peak_gflops))
        snprintf(peak, sizeof peak, csv ? "%.2f" : "%.1f", 100 * g->gflops / g->peak_gflops);
    if (csv)
        return record_row(csv,
                          "sgemm,,0,%d,%d,%d,%d,1,1,%d,ok,%d,%.6g,%.6g,%.6g,%.2f,100.00,%s,,,%.2f,",
                          SGEMM_SIZE, SGEMM_SIZE, SGEMM_SIZE, SGEMM_SIZE, g->threads, t->reps,
                          t->median_s, t->min_s, t->max_s, g->gflops, peak, g->gflops);
    printf("%-26s %-9s %7d %7d %7d %5d %10.4g %10.4g %10.4g %8.1f %12.1f %11s %15s %15s  %s\n",
           "sgemm", "-", SGEMM_SIZE, SGEMM_SIZE, g->threads, t->reps, t->median_s, t->min_s,
           t->max_s, g->gflops, 100.0, peak[0] ? peak : "-", "-", "-", "the yardstick");
    fflush(stdout);
    return 0;
}

/* One point's row, skipped or measured. Numbers the point does not have are empty (csv)
 * or "-" (table). Returns 0, or -1 when the csv could not be written. */
static int print_point(record_file *csv, const bench_point *pt, const bench_shape *s,
                       const sgemm_result *sgemm)
{
    const int ok = pt->status == LA_OK;
    const char *time_format = csv ? "%.6g" : "%.4g", *rate_format = csv ? "%.2f" : "%.1f";
    char runs[16] = "0", median[32], min[32], max[32], gflops[32], pct[32], workspace[32];
    char pct_peak[32], pct_roof[32];
    char note[96] = "ok";
    strcpy(median, csv ? "" : "-");
    strcpy(min, median);
    strcpy(max, median);
    strcpy(gflops, median);
    strcpy(pct, median);
    strcpy(workspace, median);
    strcpy(pct_peak, median);
    strcpy(pct_roof, median);
    if (ok) {
        snprintf(runs, sizeof runs, "%d", pt->t.reps);
        snprintf(median, sizeof median, time_format, pt->t.median_s);
        snprintf(min, sizeof min, time_format, pt->t.min_s);
        snprintf(max, sizeof max, time_format, pt->t.max_s);
    } else {
        snprintf(note, sizeof note, "skipped: %s", bench_skip_reason(pt));
    }
    if (!isnan(pt->gflops)) {
        snprintf(gflops, sizeof gflops, rate_format, pt->gflops);
        snprintf(pct, sizeof pct, rate_format, pt->pct_of_sgemm);
    }
    if (!isnan(pt->pct_of_peak)) snprintf(pct_peak, sizeof pct_peak, rate_format, pt->pct_of_peak);
    if (!isnan(pt->pct_of_roofline))
        snprintf(pct_roof, sizeof pct_roof, rate_format, pt->pct_of_roofline);
    if (!isnan(pt->workspace_bytes))
        snprintf(workspace, sizeof workspace, "%.0f", pt->workspace_bytes);

    if (csv)
        return record_row(csv,
                          "%s,%s,%d,%zu,%zu,%zu,%zu,%zu,1,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%s",
                          la_kernel_series(pt->kernel, pt->causal), la_kernel_name(pt->kernel),
                          pt->causal, pt->n, pt->m, s->d_k, s->d_v, s->heads, pt->threads,
                          status_name(pt), runs, median, min, max, gflops, pct, pct_peak, pct_roof,
                          workspace, sgemm->gflops, ok ? "" : bench_skip_reason(pt));
    char label[96];
    printf("%-26s %-9s %7zu %7zu %7d %5s %10s %10s %10s %8s %12s %11s %15s %15s%s%s\n",
           bench_variant_label(pt, label, sizeof label), bench_causal_label(pt), pt->n, pt->m,
           pt->threads, ok ? runs : "-", median, min, max, gflops, pct, pct_peak, pct_roof,
           workspace, ok ? "" : "  ", ok ? "" : note);
    fflush(stdout);
    return 0;
}

/* ---------------------------------------------------------------- a run */

/* Measures and prints every point in order. The yardstick is measured before the first
 * point and again whenever the thread count changes (--goals), and printed as a row.
 * Returns 0, or 1 when something ran out of memory or the csv could not be written (the
 * rest still runs). */
int bench_run_points(const bench_run *run, bench_point *points, size_t count)
{
    bench_inputs in;
    if (bench_prepare_inputs(points, count, &run->shape, run->source, &in) != 0) {
        cli_line("bench: inputs: out of memory");
        return 1;
    }
    int failed = 0;
    sgemm_result sgemm = {0};
    record_file *csv = NULL;
    for (size_t i = 0; i < count; i++) {
        bench_point *pt = &points[i];
        if (i == 0 || pt->threads != sgemm.threads) {
            /* (the count asked for stays recorded when it was clamped to the cores) */
            if (pt->threads != la_get_num_threads()) la_set_num_threads(pt->threads);
            if (bench_measure_sgemm(pt->threads, &run->rule, &sgemm) != 0) {
                cli_line("bench: sgemm yardstick: out of memory");
                failed = 1;
                break;
            }
            if (i == 0) {
                csv = start_output(run, &sgemm, &failed);
                if (failed) break;
            } else {
                printf("# threads: %d from here on; the yardstick re-measured\n", pt->threads);
                write_peak(stdout, &sgemm);
            }
            if (print_sgemm(csv, &sgemm) != 0) failed = 1;
        }
        if (run->source->from_files) /* this point's prefixes of the arrays */
            inputs_source_fill(run->source, "bench", run->shape.heads, pt->n, pt->m, run->shape.d_k,
                               run->shape.d_v, in.q, in.k, in.v);
        bench_measure_point(pt, &run->shape, &in, &run->rule, &sgemm);
        if (pt->status == LA_ENOMEM) failed = 1;
        if (print_point(csv, pt, &run->shape, &sgemm) != 0) failed = 1;
    }
    if (record_close(csv) != 0) {
        cli_line("bench: standard output: write failed");
        failed = 1;
    }
    bench_free_inputs(&in);
    return failed;
}
