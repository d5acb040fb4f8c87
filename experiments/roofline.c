/* roofline.c — `linattn roofline`: every kernel on the roofline of this machine. In one
 * process, measures the ceilings first (the float32 and float64 FMA peaks,
 * la_fma_peak_gflops*, and the streaming-read and triad bandwidths,
 * la_memory_bandwidth_gbs, on 1 thread and on the run's threads), then times each series
 * of the registry at each (dtype, d, N), the series' repetitions interleaved at each
 * point, and records per point the achieved GFLOP/s (the cost model's flops_total over
 * the median time), the arithmetic intensity (flops_total / bytes_min, la_cost), the
 * roofline bound min(peak, intensity × triad bandwidth), and the fractions of the peak
 * and of that bound. Writes roofline.csv (one row per series, dtype, N and d);
 * plots/roofline.gp draws it. */
#include "roofline.h"

#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/metadata.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "common/variants.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn roofline [--n LIST] [--d LIST] [--dtype LIST] [--heads H]\n"
    "                        [--variant LIST] [shared flags]\n"
    "\n"
    "Every kernel on this machine's roofline. First measures, in this process, the\n"
    "ceilings: the float32 and float64 FMA peaks (la_fma_peak_gflops, _f64: 12 chains of\n"
    "FMAs in registers) and the memory bandwidth (la_memory_bandwidth_gbs: the sum of one\n"
    "large array, and STREAM's triad a = b + s*c counted as STREAM counts it, without the\n"
    "write-allocate), each on 1 thread and on the run's threads; the file's header records\n"
    "them all (# ceilings). Then, for each dtype, d and N, times one call of each series\n"
    "(one sequence, H heads, N = M, d_k = d_v = d; repetitions interleaved across the\n"
    "series at each point) and records per point:\n"
    "  gflops                   flops_total of the cost model / median time\n"
    "  intensity_flop_per_byte  flops_total / bytes_min: bytes_min is q, k, v read and\n"
    "                           the output written once, plus what the algorithm must\n"
    "                           hold by design (the materialized scores, S and z, ...;\n"
    "                           lib/linattn.h, la_cost)\n"
    "  roofline_gflops          min(peak of the dtype, intensity * triad bandwidth), both\n"
    "                           on the run's threads\n"
    "  pct_of_peak, pct_of_roofline   gflops as a percentage of each\n"
    "\n"
    "  --n LIST           sequence lengths, " SWEEP_SYNTAX "\n"
    "                     (default 256:16384:x4; the full sweep is --n 256:65536)\n"
    "  --d LIST           head sizes (default 32,64,128)\n"
    "  --dtype LIST       f32, f64 or f32,f64 (default f32,f64)\n"
    "  --heads H          heads per call (default 1)\n"
    "  --variant LIST     comma-separated series (default: all but\n"
    "                     softmax_materialized_causal and hard_causal, whose rates follow\n"
    "                     those of their non-causal forms), of:\n";

static const char help_tail[] =
    "                     (defaults: --out roofline.csv --max-seconds 3\n"
    "                     --max-mem 8G)\n"
    "\n"
    "A point predicted (from the series' previous point, scaled by the FLOPs) to take\n"
    "longer than --max-seconds, or to hold more than --max-mem, is recorded as\n"
    "skipped_time or skipped_mem instead of run; Linformer at N below its rank (256) as\n"
    "skipped_rank. Where the AVX-512 code does not run there is no FMA peak: the peak\n"
    "and percentage columns are empty. plots/roofline.gp draws the file (linattn plot).\n";

static const char *const left_out_by_default[] = {"softmax_materialized_causal", "hard_causal",
                                                  NULL};

void cmd_roofline_help(FILE *out)
{
    fputs(help_text, out);
    kernels_series all[KERNELS_MAX_SERIES];
    const size_t n = kernels_all_series(all);
    char names[2048];
    kernels_series_names(all, n, NULL, names, sizeof names);
    /* the list wrapped at 88 columns under the flag's text */
    const char *s = names;
    while (*s) {
        size_t len = strlen(s), cut = len;
        if (len > 66) {
            cut = 66;
            while (cut > 0 && s[cut] != ' ')
                cut--;
        }
        fprintf(out, "                     %.*s\n", (int)cut, s);
        s += cut;
        while (*s == ' ')
            s++;
    }
    fputs(SWEEP_COMMON_HELP, out);
    fputs(help_tail, out);
}

static const char COLUMNS[] =
    "variant,kernel,dtype,n,d,heads,threads,status,reps,median_s,min_s,max_s,q1_s,q3_s,flops,"
    "bytes_min,intensity_flop_per_byte,gflops,peak_gflops,bandwidth_gbs,roofline_gflops,"
    "pct_of_peak,pct_of_roofline";

const char *roofline_dtype_name(int f64)
{
    return f64 ? "f64" : "f32";
}

/* Returns 0, or 2 after one line on stderr. */
static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *dtype = NULL, *heads = NULL, *variant = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"d", &d, NULL},
        {"dtype", &dtype, NULL},
        {"heads", &heads, NULL},
        {"variant", &variant, NULL},
        SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    if (n) {
        if ((rc = sweep_parse("--n", n, 2, c->ns, MAX_POINTS, &c->n_ns))) return rc;
    } else {
        c->n_ns = sweep_geometric(256, 16384, 4, c->ns, MAX_POINTS);
    }
    sweep_sort_sizes(c->ns, c->n_ns);
    if (d) {
        if ((rc = sweep_parse("--d", d, 2, c->ds, MAX_DS, &c->n_ds))) return rc;
    } else {
        c->ds[0] = 32, c->ds[1] = 64, c->ds[2] = 128, c->n_ds = 3;
    }
    c->heads = 1;
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    c->dtypes[0] = 0, c->dtypes[1] = 1, c->n_dtypes = 2;
    if (dtype) {
        if (strcmp(dtype, "f32") == 0)
            c->dtypes[0] = 0, c->n_dtypes = 1;
        else if (strcmp(dtype, "f64") == 0)
            c->dtypes[0] = 1, c->n_dtypes = 1;
        else if (strcmp(dtype, "f32,f64") != 0 && strcmp(dtype, "f64,f32") != 0)
            return cli_fail("--dtype", "'%s' is not f32, f64 or f32,f64", dtype);
    }
    c->n_series = kernels_all_series(c->series);
    kernels_select_all_but(c->series, c->n_series, left_out_by_default, c->selected);
    if (variant &&
        (rc = kernels_parse_series_list("--variant", variant, c->series, c->n_series, c->selected)))
        return rc;
    size_t max_d = 0;
    for (size_t i = 0; i < c->n_ds; i++)
        if (c->ds[i] > max_d) max_d = c->ds[i];
    /* the largest point's arrays, heads · N · d floats (and doubles), addressable */
    if ((rc = sweep_check_floats(heads ? "--heads" : "--n", c->heads, c->ns[c->n_ns - 1],
                                 2 * max_d)))
        return rc;
    if ((rc = sweep_common_finish(&common, &c->common, "roofline.csv", 3, 8.0 * (1 << 30))))
        return rc;
    return 0;
}

/* The ceilings of this run: the peaks and bandwidths on 1 thread and on the run's. */
static int measure_ceilings(ceilings *m)
{
    const int threads = la_get_num_threads();
    m->peak1[0] = la_fma_peak_gflops(LA_FLOAT32, 1);
    m->peak1[1] = la_fma_peak_gflops(LA_FLOAT64, 1);
    m->peak[0] = threads == 1 ? m->peak1[0] : la_fma_peak_gflops(LA_FLOAT32, threads);
    m->peak[1] = threads == 1 ? m->peak1[1] : la_fma_peak_gflops(LA_FLOAT64, threads);
    la_status st;
    if ((st = la_memory_bandwidth_gbs(LA_BANDWIDTH_READ, 1, &m->read1)) != LA_OK ||
        (st = la_memory_bandwidth_gbs(LA_BANDWIDTH_READ, threads, &m->read)) != LA_OK ||
        (st = la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, 1, &m->triad1)) != LA_OK ||
        (st = la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, threads, &m->triad)) != LA_OK) {
        cli_line("roofline: the bandwidth probe failed: %s", la_strerror(st));
        return 1;
    }
    return 0;
}

/* x with fmt into buf, or "" when x is not finite (a column without a value). */
const char *roofline_num(char *buf, size_t size, const char *fmt, double x)
{
    if (isfinite(x))
        snprintf(buf, size, fmt, x);
    else
        buf[0] = '\0';
    return buf;
}

/* ---------------------------------------------------------------- the summary */

/* Per series and dtype, at d = 64 (or the first d) and the largest N measured: achieved
 * rate, intensity, which ceiling bounds it, and the two fractions. */
static void print_summary(record_file *f, const config *c, const ceilings *m)
{
    size_t d = c->ds[0];
    for (size_t i = 0; i < c->n_ds; i++)
        if (c->ds[i] == 64) d = 64;
    printf("roofline: at d = %zu, %zu head(s), the largest N measured of each series:\n", d,
           c->heads);
    printf("roofline: %-28s %-5s %7s %10s %12s %8s %10s %7s %7s\n", "series", "dtype", "N",
           "GFLOP/s", "FLOP/byte", "bound", "roof", "%peak", "%roof");
    for (int di = 0; di < c->n_dtypes; di++) {
        const int f64 = c->dtypes[di];
        for (size_t s = 0; s < c->n_series; s++) {
            if (!c->selected[s]) continue;
            for (size_t i = c->n_ns; i-- > 0;) {
                char key[256], st[32];
                roofline_point_key(key, sizeof key, &c->series[s], f64, c->ns[i], d, c->heads);
                const char *row = record_find(f, key);
                double g, intensity, roof, pp, pr;
                if (!row || record_get_str(f, row, "status", st, sizeof st) || strcmp(st, "ok") ||
                    record_get(f, row, "gflops", &g) ||
                    record_get(f, row, "intensity_flop_per_byte", &intensity))
                    continue;
                const int have = record_get(f, row, "roofline_gflops", &roof) == 0 &&
                                 record_get(f, row, "pct_of_peak", &pp) == 0 &&
                                 record_get(f, row, "pct_of_roofline", &pr) == 0;
                const char *bound = !have                                 ? "-"
                                    : intensity * m->triad < m->peak[f64] ? "memory"
                                                                          : "compute";
                if (have)
                    printf("roofline: %-28s %-5s %7zu %10.1f %12.2f %8s %10.1f %7.1f %7.1f\n",
                           c->series[s].name, roofline_dtype_name(f64), c->ns[i], g, intensity,
                           bound, roof, pp, pr);
                else
                    printf("roofline: %-28s %-5s %7zu %10.1f %12.2f %8s %10s %7s %7s\n",
                           c->series[s].name, roofline_dtype_name(f64), c->ns[i], g, intensity,
                           bound, "-", "-", "-");
                break;
            }
        }
    }
}

int cmd_roofline(int argc, char **argv)
{
    config c;
    memset(&c, 0, sizeof c);
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    const machine_report *busy = machine_check();
    ceilings m;
    if (measure_ceilings(&m) != 0) return 1;
    const int threads = la_get_num_threads();

    char meta[1024], err[512], b[8][32];
    snprintf(meta, sizeof meta,
             "# inputs: random normal, seed %llu\n"
             "# ceilings: FMA peak float32 %s GFLOP/s (1 thread) %s (%d threads); float64 %s "
             "(1 thread) %s (%d threads); read %.4g GB/s (1 thread) %.4g (%d threads); triad "
             "%.4g GB/s (1 thread) %.4g (%d threads), STREAM's count (write-allocate not "
             "counted)\n"
             "# roofline: min(peak of the row's dtype, intensity * triad bandwidth), both on "
             "%d threads; intensity = flops / bytes_min (la_cost)\n",
             (unsigned long long)c.common.seed, roofline_num(b[0], 32, "%.4g", m.peak1[0]),
             roofline_num(b[1], 32, "%.4g", m.peak[0]), threads,
             roofline_num(b[2], 32, "%.4g", m.peak1[1]), roofline_num(b[3], 32, "%.4g", m.peak[1]),
             threads, m.read1, m.read, threads, m.triad1, m.triad, threads, threads);
    metadata_extra(meta);
    record_file *f =
        record_open(c.common.out, "roofline",
                    "achieved GFLOP/s of each kernel against its arithmetic intensity, "
                    "under the FMA peak and the triad bandwidth measured in the same "
                    "process (one row per series, dtype, n and d)",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        cli_line("%s", err);
        metadata_extra(NULL);
        return 2;
    }
    printf("roofline: FMA peak %s GFLOP/s float32, %s float64; read %.1f GB/s, triad %.1f GB/s "
           "(%d threads)\n",
           roofline_num(b[4], 32, "%.1f", m.peak[0]), roofline_num(b[5], 32, "%.1f", m.peak[1]),
           m.read, m.triad, threads);

    /* progress is weighted by the quadratic kernels' N²·d, which dominate */
    double total_work = 0;
    int points = 0;
    for (int di = 0; di < c.n_dtypes; di++)
        for (size_t j = 0; j < c.n_ds; j++)
            for (size_t i = 0; i < c.n_ns; i++, points++)
                total_work += (double)c.ns[i] * (double)c.ns[i] * (double)c.ds[j];
    progress_line pr;
    progress_start(&pr, "roofline", points, total_work);
    inputs in = {0};
    variants_values held; /* the blocks' defaults, holding Linformer's E, F per shape */
    variants_defaults(&held, 0);
    int point = 0;
    for (int di = 0; di < c.n_dtypes && rc == 0; di++) {
        for (size_t j = 0; j < c.n_ds && rc == 0; j++) {
            track tracks[KERNELS_MAX_SERIES] = {{0}};
            for (size_t i = 0; i < c.n_ns && rc == 0; i++) {
                char what[64];
                snprintf(what, sizeof what, "%s d=%zu N=%zu", roofline_dtype_name(c.dtypes[di]),
                         c.ds[j], c.ns[i]);
                progress_step(&pr, ++point, (double)c.ns[i] * (double)c.ns[i] * (double)c.ds[j],
                              what);
                rc = roofline_measure_point(f, &c, &m, c.dtypes[di], c.ds[j], c.ns[i], tracks, &in,
                                            &held);
                if (rc == 1) cli_line("%s: write failed", record_path(f));
            }
        }
    }
    progress_end(&pr);
    roofline_free_inputs(&in);
    variants_free(&held);
    if (rc == 0) {
        print_summary(f, &c, &m);
        printf("roofline: wrote %s\n", record_path(f));
        if (busy->noisy)
            printf("roofline: the machine was busy (%s): these timings are noisy\n", busy->why);
    }
    if (record_close(f) != 0) rc = 1;
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}
