/* test_results.c — the experiments' measuring and recording machinery
 * (experiments/common/record.c, machine.c, timer.c, memory.c, sweep.c, inputs.c): the
 * CSV writer's metadata header and --resume, reading results back, the machine check in
 * the header, the timer, the peak-RSS reset, the geometric sweep and the flag parsers.
 * Linked against build/libcommand.a, the helpers the command itself is built from (they
 * are not part of the library). */
#include "../testutil.h"

#include "../../experiments/common/inputs.h"
#include "../../experiments/common/machine.h"
#include "../../experiments/common/memory.h"
#include "../../experiments/common/record.h"
#include "../../experiments/common/sweep.h"
#include "../../experiments/common/timer.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh path in /tmp for one test's file. */
static void temp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "/tmp/la_test_results_%ld_%s.csv", (long)getpid(), name);
    unlink(buf);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 1 << 16);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* A new file carries the metadata header, then the header row, then the rows. */
static void header_and_rows(void **state)
{
    (void)state;
    char path[256], err[256];
    temp_path(path, sizeof path, "header");
    char *argv[] = {"scaling", "--n", "4:8"};
    record_file *f = record_open(path, "scaling", "a test", "variant,n,status,median_s", 2, 0, 3,
                                 argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_row(f, "softmax,4,ok,%.3f", 1.5), 0);
    assert_int_equal(record_row(f, "linear,4,skipped_time,"), 0);
    assert_int_equal(record_close(f), 0);
    char *text = slurp(path);
    const char *required[] = {"# linattn scaling: a test\n",
                              "# command: build/linattn scaling --n 4:8\n",
                              "# date: ",
                              "# git_commit: ",
                              "# cpu: ",
                              "# cores: ",
                              "# threads: ",
                              "# blis: ",
                              "# linattn: " LA_VERSION_STRING "\n",
                              "# peak_rss: ",
                              "\nvariant,n,status,median_s\nsoftmax,4,ok,1.500\nlinear,4,"
                              "skipped_time,\n"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!strstr(text, required[i])) fail_msg("missing '%s' in:\n%s", required[i], text);
    free(text);
    unlink(path);
}

/* The keys of a text's `# key:` lines, in order, joined by spaces. */
static void meta_keys(const char *text, char *keys, size_t size)
{
    size_t used = 0;
    keys[0] = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        if (line[0] != '#') continue;
        size_t len = strcspn(line + 2, ":\n");
        int n = snprintf(keys + used, size - used, "%s%.*s", used ? " " : "", (int)len, line + 2);
        if (n > 0 && (size_t)n < size - used) used += (size_t)n;
    }
}

/* A results file on a stream (bench's csv on stdout) has the same metadata lines as one
 * opened on a path, then its own, then the header row; closing it leaves the stream open. */
static void stream_file_same_header(void **state)
{
    (void)state;
    char path[256], err[256], *argv[] = {"bench", "--format", "csv"};
    temp_path(path, sizeof path, "stream");
    record_file *f = record_open(path, "bench", "t", "variant,n", 1, 0, 3, argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_close(f), 0);
    char *file_text = slurp(path);

    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    f = record_open_stream(out, "bench", "a test", "variant,n,median_s",
                           "# shape: B=1\n# sgemm_gflops: 1.0\n", 3, argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_row(f, "softmax,4,%.3f", 0.5), 0);
    assert_int_equal(record_close(f), 0);
    assert_int_equal(fputs("still open\n", out) >= 0, 1);
    fclose(out);

    char file_keys[512], stream_keys[512], expected[600];
    meta_keys(file_text, file_keys, sizeof file_keys);
    meta_keys(text, stream_keys, sizeof stream_keys);
    snprintf(expected, sizeof expected, "%s shape sgemm_gflops", file_keys);
    assert_string_equal(stream_keys, expected);
    assert_non_null(strstr(text, "# linattn bench: a test\n"));
    assert_non_null(strstr(text, "# sgemm_gflops: 1.0\nvariant,n,median_s\nsoftmax,4,0.500\n"
                                 "still open\n"));
    free(text);
    free(file_text);
    unlink(path);

    char sibling[256];
    record_sibling_path("results/scaling.csv", "fit", sibling, sizeof sibling);
    assert_string_equal(sibling, "results/scaling_fit.csv");
    record_sibling_path("out", "points", sibling, sizeof sibling);
    assert_string_equal(sibling, "out_points.csv");
}

/* --resume keeps the rows, appends after a comment, and the latest row of a key wins;
 * record_load reads the same rows back. */
static void resume_and_load(void **state)
{
    (void)state;
    char path[256], err[256];
    temp_path(path, sizeof path, "resume");
    char *argv[] = {"scaling"};
    const char *columns = "variant,n,status,median_s";
    record_file *f = record_open(path, "scaling", "t", columns, 2, 0, 1, argv, err, sizeof err);
    assert_non_null(f);
    record_row(f, "softmax,4,ok,0.25");
    record_row(f, "softmax,8,skipped_time,");
    assert_int_equal(record_close(f), 0);

    f = record_open(path, "scaling", "t", columns, 2, 1, 1, argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_resumed_rows(f), 2);
    const char *row = record_find(f, "softmax,4");
    assert_non_null(row);
    double t = 0;
    assert_int_equal(record_get(f, row, "median_s", &t), 0);
    assert_true(t == 0.25);
    assert_int_equal(record_get(f, row, "nope", &t), -1);
    row = record_find(f, "softmax,8");
    assert_non_null(row);
    assert_int_equal(record_get(f, row, "median_s", &t), -1); /* empty field */
    assert_null(record_find(f, "softmax,16"));
    assert_int_equal(record_row(f, "softmax,8,ok,1.0"), 0); /* measured after all */
    char status[16];
    assert_int_equal(
        record_get_str(f, record_find(f, "softmax,8"), "status", status, sizeof status), 0);
    assert_string_equal(status, "ok");
    assert_int_equal(record_close(f), 0);

    char *text = slurp(path);
    assert_non_null(strstr(text, "\n# resumed: "));
    assert_non_null(strstr(text, "softmax,8,skipped_time,\n# resumed: "));
    free(text);

    f = record_load(path, 2, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_count(f), 3);
    assert_string_equal(record_row_at(f, 0), "softmax,4,ok,0.25");
    assert_int_equal(
        record_get_str(f, record_find(f, "softmax,8"), "status", status, sizeof status), 0);
    assert_string_equal(status, "ok");
    record_close(f);

    /* a file with other columns is refused, not silently mixed */
    f = record_open(path, "scaling", "t", "variant,n,status", 2, 1, 1, argv, err, sizeof err);
    assert_null(f);
    assert_non_null(strstr(err, "columns differ"));
    unlink(path);
    assert_null(record_load(path, 2, err, sizeof err));
}

/* The timer runs at least min_reps timed repetitions and orders its statistics; a body
 * that fails stops it with its value. */
/* A timing experiment's machine check (machine_check) is written into the header of
 * the files opened after it, as the plots read it; once its last file is closed it is
 * forgotten, so a later experiment that times nothing carries no such lines. */
static void machine_check_in_header(void **state)
{
    (void)state;
    char path[256], err[256], *argv[] = {"scaling"};
    temp_path(path, sizeof path, "busy");
    const machine_report *busy = machine_check();
    assert_non_null(busy);
    assert_true(busy->calibration_s[0] > 0 && busy->calibration_s[1] > 0);
    assert_true(busy->spread >= 0 && !isnan(busy->spread));
    assert_int_equal(busy->noisy, busy->why[0] != 0);
    record_file *f = record_open(path, "scaling", "t", "variant,n", 1, 0, 1, argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_row(f, "linear,4"), 0);
    assert_int_equal(record_close(f), 0);
    char *text = slurp(path);
    char expected[256];
    snprintf(expected, sizeof expected, "\n# calibration: %.4f %.4f (spread %.1f%%)\n# noisy: %s",
             busy->calibration_s[0], busy->calibration_s[1], 100 * busy->spread,
             busy->noisy ? "yes (" : "no\n");
    if (!strstr(text, "\n# load_average: ") || !strstr(text, expected))
        fail_msg("missing '%s' or the load average in:\n%s", expected, text);
    /* the load average line comes first, the check right after it */
    assert_true(strstr(text, "# load_average: ") < strstr(text, "# calibration: "));
    free(text);

    f = record_open(path, "accuracy", "t", "variant,n", 1, 0, 1, argv, err, sizeof err);
    assert_non_null(f);
    assert_int_equal(record_row(f, "linear,4"), 0);
    assert_int_equal(record_close(f), 0);
    text = slurp(path);
    assert_null(strstr(text, "# calibration:"));
    assert_null(strstr(text, "# noisy:"));
    assert_non_null(strstr(text, "# load_average: "));
    free(text);
    unlink(path);
}

static int count_calls(void *ctx)
{
    (*(int *)ctx)++;
    return 0;
}
static int fail_third(void *ctx)
{
    return ++*(int *)ctx == 3 ? 7 : 0;
}

static void timer(void **state)
{
    (void)state;
    int calls = 0;
    timer_result t;
    assert_int_equal(timer_run(count_calls, &calls, &(timer_rule){5, 1000, 0, 1.0}, &t), 0);
    assert_int_equal(t.reps, 5);
    assert_int_equal(calls, 6); /* the warm-up is not timed */
    assert_true(t.min_s <= t.median_s && t.median_s <= t.max_s && t.min_s >= 0);
    calls = 0;
    assert_int_equal(timer_run(count_calls, &calls, &(timer_rule){1, 50, 10.0, 1.0}, &t), 0);
    assert_int_equal(t.reps, 50); /* min_total_s not reached: capped by max_reps */
    calls = 0;
    assert_int_equal(timer_run(fail_third, &calls, &(timer_rule){5, 10, 0, 1.0}, &t), 7);
    double a = timer_now(), b = timer_now();
    assert_true(b >= a);
}

/* The timer measures each body's peak memory around its warm-up call, with VmHWM reset
 * before it: a body that touches 64 MiB peaks at least that much above its baseline, and
 * a later body that touches nothing does not inherit it. Where the mark cannot be reset
 * (no writable /proc/self/clear_refs: an old kernel, a sandbox) there is nothing to
 * measure: the test is skipped, and says why, rather than passed. */
static int touch_64_mib(void *ctx)
{
    (void)ctx;
    size_t bytes = 64u << 20;
    volatile char *p = malloc(bytes);
    if (!p) return 1;
    for (size_t i = 0; i < bytes; i += 4096)
        p[i] = 1;
    free((void *)p);
    return 0;
}

static int touch_nothing(void *ctx)
{
    (void)ctx;
    return 0;
}

static void peak_rss(void **state)
{
    (void)state;
    memory_init();
    if (access("/proc/self/clear_refs", W_OK) != 0) {
        print_message("peak_rss: skipped: cannot reset VmHWM through /proc/self/clear_refs "
                      "(%s)\n",
                      strerror(errno));
        skip();
    }
    const timer_rule once = {1, 1, 0, INFINITY};
    timer_result big, small;
    assert_int_equal(timer_run(touch_64_mib, NULL, &once, &big), 0);
    assert_true(big.baseline_rss_bytes > 0);
    assert_true(big.peak_rss_bytes >= big.baseline_rss_bytes + 60.0 * (1 << 20));
    assert_int_equal(timer_run(touch_nothing, NULL, &once, &small), 0);
    assert_true(small.baseline_rss_bytes > 0);
#if !LA_UNDER_ASAN /* ASan keeps freed memory resident in its quarantine */
    assert_true(small.peak_rss_bytes < big.peak_rss_bytes - 32.0 * (1 << 20));
#endif
}

static void sweeps_and_flags(void **state)
{
    (void)state;
    size_t ns[64];
    assert_int_equal(sweep_geometric(128, 65536, 2, ns, 64), 10);
    assert_int_equal(ns[0], 128);
    assert_int_equal(ns[9], 65536);
    assert_int_equal(sweep_geometric(16, 1000, 2, ns, 64), 6); /* 16 .. 512 */
    assert_int_equal(ns[5], 512);
    assert_int_equal(sweep_geometric(10, 10, 2, ns, 64), 1);
    assert_int_equal(sweep_geometric(1, 4, 1.1, ns, 64), 4); /* 1, 2, 3, 4: no repeats */

    /* --max-mem's sizes, through the shared flags as a command passes them */
    const struct {
        const char *text;
        double bytes; /* 0: refused */
    } sizes[] = {{"8G", 8.0 * (1 << 30)},
                 {"512M", 512.0 * (1 << 20)},
                 {"1000", 1000},
                 {"4kB", 4096},
                 {"abc", 0},
                 {"-1G", 0},
                 {"0", 0},
                 {"8T", 0}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        sweep_common_text text = {.max_mem = sizes[i].text};
        sweep_common common;
        int rc = sweep_common_finish(&text, &common, "out.csv", 1, 1);
        if (sizes[i].bytes == 0) {
            if (rc != 2) fail_msg("--max-mem %s accepted", sizes[i].text);
        } else if (rc != 0 || common.max_mem != sizes[i].bytes) {
            fail_msg("--max-mem %s: rc %d, %g bytes", sizes[i].text, rc, common.max_mem);
        }
    }
    size_t n = 0;
    /* lists and ranges of sizes: sweep_parse, tested in test_sweep.c */

    /* the one list parser, and choices from it */
    char buf[16], *items[4];
    assert_int_equal(cli_split_list("--x", "a,bb,c", buf, sizeof buf, items, 4, &n), 0);
    assert_true(n == 3 && strcmp(items[1], "bb") == 0 && strcmp(items[2], "c") == 0);
    assert_int_equal(cli_split_list("--x", "a,,c", buf, sizeof buf, items, 4, &n), 2);
    assert_int_equal(cli_split_list("--x", "a,", buf, sizeof buf, items, 4, &n), 2);
    assert_int_equal(cli_split_list("--x", "a,b,c,d,e", buf, sizeof buf, items, 4, &n), 2);
    assert_int_equal(cli_split_list("--x", "a-list-longer-than-buf", buf, sizeof buf, items, 4, &n),
                     2);
    const char *const choices[] = {"scaling", "decode", "accuracy", NULL};
    int which[3];
    assert_int_equal(cli_parse_choice_list("--only", "accuracy,scaling", choices, which, 3, &n), 0);
    assert_true(n == 2 && which[0] == 2 && which[1] == 0);
    assert_int_equal(cli_parse_choice_list("--only", "decode,decode", choices, which, 3, &n), 2);
    assert_int_equal(cli_parse_choice_list("--only", "decode,plots", choices, which, 3, &n), 2);
}

/* The experiments' error measure never lets a non-finite output look accurate. */
static void rel_error_nan(void **state)
{
    (void)state;
    double ref[3] = {1, 2, 3}, y[3] = {1, 2, 3};
    assert_true(inputs_rel_error_f64(y, ref, 3) == 0);
    y[0] = 2;
    assert_true(fabs(inputs_rel_error_f64(y, ref, 3) - 1 / sqrt(14.0)) < 1e-15);
    y[1] = NAN;
    assert_true(isinf(inputs_rel_error_f64(y, ref, 3)));
    y[1] = 2, y[2] = INFINITY;
    assert_true(isinf(inputs_rel_error_f64(y, ref, 3)));
    ref[0] = ref[1] = ref[2] = 0, y[2] = 0; /* ref all zero: ‖y‖ */
    assert_true(fabs(inputs_rel_error_f64(y, ref, 3) - sqrt(8.0)) < 1e-15);
}

/* RMS(y − ref) / RMS(v): v may have another length than y (N ≠ M), a smaller ref does not
 * make the error larger, NaN and inf are never small. */
static void rms_error_vs_v(void **state)
{
    (void)state;
    double ref[2] = {0.01, -0.01}, y[2] = {0.11, -0.01}, v[4] = {1, -1, 1, -1};
    const double want = sqrt(0.1 * 0.1 / 2) / 1.0; /* RMS diff 0.0707, RMS(v) 1 */
    assert_true(fabs(inputs_rms_error_vs_v(y, ref, 2, v, 4) - want) < 1e-15);
    ref[0] = 1e-6, y[0] = 0.1 + 1e-6; /* the same difference on a tinier output */
    assert_true(fabs(inputs_rms_error_vs_v(y, ref, 2, v, 4) - want) < 1e-15);
    v[0] = v[1] = v[2] = v[3] = 2;
    assert_true(fabs(inputs_rms_error_vs_v(y, ref, 2, v, 4) - want / 2) < 1e-15);
    v[0] = v[1] = v[2] = v[3] = 0; /* V all zero: the RMS difference itself */
    assert_true(fabs(inputs_rms_error_vs_v(y, ref, 2, v, 4) - want) < 1e-15);
    y[1] = NAN;
    assert_true(isinf(inputs_rms_error_vs_v(y, ref, 2, v, 4)));
    y[1] = 0, v[3] = INFINITY;
    assert_true(isinf(inputs_rms_error_vs_v(y, ref, 2, v, 4)));
}

int main(void)
{
    tu_init("test_results");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(header_and_rows),
        cmocka_unit_test(resume_and_load),
        cmocka_unit_test(machine_check_in_header),
        cmocka_unit_test(timer),
        cmocka_unit_test(peak_rss),
        cmocka_unit_test(sweeps_and_flags),
        cmocka_unit_test(rel_error_nan),
        cmocka_unit_test(rms_error_vs_v),
        cmocka_unit_test(stream_file_same_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
