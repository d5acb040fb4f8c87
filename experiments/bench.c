/* bench.c — `linattn bench`: float32 attention kernels timed alone, against BLIS sgemm on
 * a large well-shaped product measured in the same process, so the ratio of the two
 * rates means something; and `--goals`, the goal table on fixed points. The
 * kernels are the rows of the library's registry (common/kernels.h), the goals a table
 * of data (goals[] below). */
#include "bench.h"

#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/pass.h"   /* forward, backward, train: what one timed call is */
#include "common/record.h" /* the writer's metadata header */
#include "common/sweep.h"
#include "common/timer.h" /* timer_run: the one timer */
#include "common/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_intro[] =
    "Times float32 attention kernels alone and compares their arithmetic rate with BLIS\n"
    "sgemm measured in the same process. The inputs (random, fixed seed, batch B = 1; or\n"
    "your arrays, --q/--k/--v below) are prepared before any timing. Each point runs once\n"
    "to warm up, then at least R times and until the timed runs total S seconds (--reps R,\n"
    "--min-time S: 5 and 0.5 s by default; at most 1000 runs, so small sizes still get a\n"
    "stable median); the median, min and max of those runs are reported.\n"
    "\n"
    "The yardstick is BLIS sgemm on a large, well-shaped product: C (2000×2000) =\n"
    "A (2000×2000) · B (2000×2000), row-major, 2·2000³ FLOPs, on BLIS's own threads with\n"
    "the same thread count T as the kernels, timed by the same rule. It is the rate this\n"
    "machine reaches on dense float32 products through BLIS. It is not the hardware's\n"
    "limit: the header also gives the FMA peak (16-lane FMAs in registers, the same\n"
    "threads), and a kernel with its own register tiles can pass 100% of sgemm where\n"
    "BLIS's kernels are not tuned for the CPU.\n"
    "\n";
static const char help_columns[] =
    "\n"
    "columns (--format table or csv; the csv is a results file like the experiments':\n"
    "the same # metadata lines and column names):\n"
    "  variant          table: the kernel, as the registry names it; the row \"sgemm\" is\n"
    "                   the yardstick (n, m, d_k, d_v: 2000). csv: the series, as in the\n"
    "                   other result files (softmax, linear_causal_recurrent, …)\n"
    "  kernel, causal   csv: the registry's kernel and 0 or 1; the table's causal column\n"
    "                   says no or yes\n"
    "  n, m             queries N and keys M per head\n"
    "  d_k, d_v, heads, batch\n"
    "                   csv only (the header's shape line gives them for the table)\n"
    "  threads          OpenMP threads of the kernel; BLIS threads of the sgemm row\n"
    "  status           csv: ok, skipped_mem (over the workspace limit), skipped_rank\n"
    "                   (--proj-rank K above M) or error; the table's note says\n"
    "                   skipped: why\n"
    "  reps             timed runs (the table's runs)\n"
    "  median_s, min_s, max_s\n"
    "                   seconds per call over those runs\n"
    "  gflops           FLOPs / median_s / 1e9, with the FLOPs of the library's one model\n"
    "                   (la_attention_cost, lib/attention/cost.c): the visible (query,\n"
    "                   key) pairs only, so causal softmax counts about half of non-causal\n"
    "  pct_of_sgemm     100 · gflops / the yardstick's gflops at the same thread count\n"
    "  pct_of_peak      100 · gflops / the FMA peak at the same thread count (empty where\n"
    "                   the AVX-512 probe does not run)\n"
    "  pct_of_roofline  100 · gflops / min(FMA peak, intensity · triad bandwidth), the\n"
    "                   roofline bound (linattn help roofline): intensity is FLOPs over\n"
    "                   the cost model's minimum bytes (la_cost.bytes_min), the triad\n"
    "                   bandwidth la_memory_bandwidth_gbs's on the same threads\n"
    "  workspace_bytes  the scratch the kernel allocates, from the cost model: a model of\n"
    "                   its allocations, not a measurement\n"
    "  sgemm_gflops     the yardstick's rate (csv only; the table's header gives it)\n"
    "  note             csv: the library's reason when status is not ok\n"
    "The lines starting with # give the command, date, CPU, cores, threads, load average,\n"
    "git commit, BLIS, the shape, the timing rule and the yardstick's rate.\n"
    "\n"
    "options (default in brackets):\n"
    "  --variant LIST   comma-separated kernels, of those above [every one that runs with\n"
    "                   the --causal given]\n"
    "  --n LIST         query counts N: " SWEEP_SYNTAX "\n"
    "                   [512,2048,8192]; a run whose buffers (inputs, outputs, kernel\n"
    "                   scratch, yardstick) exceed the machine's memory is refused before\n"
    "                   anything is allocated\n"
    "  --m M            key count M [N]\n"
    "  --heads H        heads [8]\n"
    "  --d D            d_k [64]\n"
    "  --dv DV          d_v [D]\n"
    "  --causal         causal mask: query i sees keys j <= i\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                   time the kernels on your arrays instead of random ones: shapes as\n"
    "                   in linattn attend ((N, d), (H, N, d) or (B, H, N, d); float16,\n"
    "                   bfloat16, float32 or float64, computed in float32). They set the\n"
    "                   heads (B·H), d and dv (--heads, --d, --dv are then refused); a\n"
    "                   point takes the first N queries and M keys of every head. --n\n"
    "                   defaults to the arrays' N and M to min(N, the arrays' M); a\n"
    "                   larger --n or --m is refused. The header's # inputs line names\n"
    "                   the files (else: random, seed 1)\n"
    "  --pass P         what one timed call is [forward]: forward; backward, the kernel's\n"
    "                   backward alone (la_attention_backward, dQ, dK, dV from a random\n"
    "                   dO) on the forward's output computed before the timing; or train,\n"
    "                   forward then backward timed as one call. gflops counts the pass's\n"
    "                   FLOPs (la_attention_backward_cost for the backward, both models'\n"
    "                   sum for train) and workspace_bytes its scratch (train: the larger\n"
    "                   of the two). The table names the pass after the variant\n"
    "                   (softmax/backward), the csv in a # pass line. A kernel the library\n"
    "                   has no backward for is skipped (note: no backward; csv\n"
    "                   status skipped_no_backward)\n"
    "  --threads T      threads for kernels and sgemm [LA_NUM_THREADS, else all cores]; T in\n"
    "                   1..1024; above the cores runs on the cores, noted in the header and\n"
    "                   recorded as threads_requested\n"
    "  --reps R         at least R timed runs per point, 1 <= R <= 1000 [5]\n"
    "  --min-time S     and at least S seconds of timed runs per point (at most 1000 runs);\n"
    "                   0: exactly R runs, for a quick look or a script's check [0.5]\n"
    "  --format F       table or csv [table]; rows are printed as they are measured\n"
    "  --causal-form F  deprecated: with --causal, a variant\n"
    "                   linear ran as chunked and recurrent; name the kernels instead:\n"
    "                   --variant linear,linear_recurrent\n"
    "\n"
    "--goals measures the project's performance goals instead, on fixed points (float32,\n"
    "B = 1, H = 8, d_k = d_v = 64, N = M; the yardstick re-measured for each thread\n"
    "count):\n";
static const char help_ceilings[] =
    "(a goal on a backward reads the /backward rows, and a goal marked (model) the cost\n"
    "model alone), and against this machine's own ceilings, measured in the same run\n"
    "(B = 1, H = 8, the point's d; float64 where it says so): the FMA peak of the dtype\n"
    "and threads, the roofline bound min(peak, intensity * triad bandwidth) (linattn help\n"
    "roofline), the streaming-read bandwidth for decoding (one query over t keys: the\n"
    "cost model's minimum bytes per second), sgemm for the FFN (la_ffn, D = 512,\n"
    "d_ff = 2048, rows = N; its two products' FLOPs), and one query seeing one key (key\n"
    "length 1) of 8192 against one query over M = 1:\n";
static const char help_end[] =
    "It prints the measurement table (the points against the ceilings as # lines after\n"
    "it), one line per goal (goal, target, measured, met: yes, no, or \"skipped: no\n"
    "backward\" while the library has no backward for the kernel) and \"goals met: X of\n"
    "Y\".\n"
    "A goal comparing two times (a ratio, a speedup) times its two points again, in turn\n"
    "(one call of each per round), so a change in the machine's speed between the\n"
    "table's points reaches both alike; its line says \"in turn\".\n"
    "To bound its time (a few minutes), a point that cannot take under 1 s per call even\n"
    "at the sgemm rate runs min(R, 3) times, and a warm-up of 1 s or more counts as the\n"
    "first run. `make bench` runs it and keeps the output in build/bench.txt.\n"
    "\n"
    "exit status: 0 done (also when goals are not met or a kernel was skipped), 1 out of\n"
    "memory, 2 bad flags\n"
    "\n"
    "examples:\n"
    "  linattn bench --variant softmax,linear --n 1024,4096 --threads 2\n"
    "  linattn bench --variant linear --n 4096 --causal --format csv > linear.csv\n"
    "  linattn bench --goals\n";

/* ---------------------------------------------------------------- help */

/* The forms the deprecated --causal-form chooses among: the causal kernels of families
 * with causal forms, by kernels_form. Fills names (LA_KERNEL_COUNT + 1 entries,
 * NULL-terminated); returns the count. */
static size_t causal_forms(const char **names)
{
    size_t n = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        if (!kernels_has_causal_forms(kernels_family((la_kernel)k)) ||
            !kernels_allows((la_kernel)k, 1))
            continue;
        size_t i = 0;
        while (i < n && strcmp(names[i], kernels_form((la_kernel)k)) != 0)
            i++;
        if (i < n) continue; /* a word two families share: one choice */
        names[n++] = kernels_form((la_kernel)k);
    }
    names[n] = NULL;
    return n;
}

void cmd_bench_help(FILE *out)
{
    fputs("usage: linattn bench [--variant LIST] [--n LIST] [--m M] [--heads H] [--d D] [--dv "
          "DV]\n"
          "                     [--causal] [--q Q.npy --k K.npy --v V.npy]\n"
          "                     [--pass forward|backward|train] [--threads T] [--reps R]\n"
          "                     [--min-time S] [--format table|csv]\n"
          "       linattn bench --goals [--reps R]\n\n",
          out);
    fputs(help_intro, out);
    kernels_print_kernels(out, NULL, NULL);
    variants_print_help(out, 0, 1);
    fputs("A kernel whose workspace would pass the 4 GiB limit is skipped.\n", out);
    fputs(help_columns, out);
    for (size_t i = 0; i < N_GOALS; i++)
        fprintf(out, "  %-56s %s\n", bench_goals_table[i].text, bench_goals_table[i].target);
    fputs(help_ceilings, out);
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        fprintf(out, "  %-56s %s\n", bench_ceiling_goals_table[i].text,
                bench_ceiling_goals_table[i].target);
    fputs(help_end, out);
}

/* ---------------------------------------------------------------- flags */

enum { MAX_LIST = 32 };

/* The kernels of a plain run, in order: those --variant names (without it, every row in
 * registry order that runs with the --causal given). A kernel named that does not run
 * with the --causal given is refused. Returns 0 or 2. */
static int choose_kernels(const char *variant_text, int causal, la_kernel *out, size_t *count)
{
    int rc;
    *count = 0;
    if (!variant_text) {
        for (int k = 0; k < LA_KERNEL_COUNT; k++)
            if (kernels_allows((la_kernel)k, causal)) out[(*count)++] = (la_kernel)k;
        return 0;
    }
    if ((rc = kernels_parse_kernel_list("--variant", variant_text, NULL, out, LA_KERNEL_COUNT,
                                        count)))
        return rc;
    for (size_t i = 0; i < *count; i++)
        if (!kernels_allows(out[i], causal))
            return cli_fail("--variant", "%s runs %s only", la_kernel_name(out[i]),
                            causal ? "without --causal" : "with --causal");
    return 0;
}

/* The deprecated --causal-form LIST (with --causal): a family with causal forms (linear:
 * chunked, recurrent), named or run by default, runs as each of its causal kernels whose
 * form LIST keeps. Rewrites kernels[0..*count) so, and prints the one deprecation line
 * with the --variant that does the same. Returns 0 or 2. */
static int apply_causal_form(const char *form_text, la_kernel *kernels, size_t *count)
{
    const char *form_names[LA_KERNEL_COUNT + 1];
    const size_t n_form_names = causal_forms(form_names);
    int chosen[LA_KERNEL_COUNT], kept[LA_KERNEL_COUNT] = {0}, rc;
    size_t n_chosen;
    if ((rc = cli_parse_choice_list("--causal-form", form_text, form_names, chosen, n_form_names,
                                    &n_chosen)))
        return rc;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        for (size_t i = 0; i < n_chosen; i++)
            if (strcmp(kernels_form((la_kernel)k), form_names[chosen[i]]) == 0) kept[k] = 1;
    la_kernel named[LA_KERNEL_COUNT];
    const size_t n_named = *count;
    memcpy(named, kernels, n_named * sizeof *named);
    *count = 0;
    for (size_t i = 0; i < n_named; i++) {
        la_kernel family = kernels_family(named[i]), candidates[LA_KERNEL_COUNT];
        size_t n_candidates = 1;
        candidates[0] = named[i];
        const int forms = kernels_has_causal_forms(family);
        if (forms && named[i] == family)
            n_candidates = kernels_family_kernels(family, 1, candidates);
        for (size_t c = 0; c < n_candidates; c++) {
            la_kernel k = candidates[c];
            if (forms && !kept[k]) continue;
            size_t j = 0;
            while (j < *count && kernels[j] != k)
                j++;
            if (j == *count) kernels[(*count)++] = k;
        }
    }
    if (*count == 0) return cli_fail("--causal-form", "leaves no kernel to run");
    char use[512] = "--variant ";
    for (size_t i = 0, used = strlen(use); i < *count; i++) {
        int len = snprintf(use + used, sizeof use - used, "%s%s", i ? "," : "",
                           la_kernel_name(kernels[i]));
        if (len > 0 && (size_t)len < sizeof use - used) used += (size_t)len;
    }
    cli_deprecated("--causal-form", use);
    return 0;
}

/* With --q/--k/--v: the arrays set the heads (B·H), d and dv (flags that would set them
 * are refused); --n defaults to the arrays' N, and an --n above it or an --m above the
 * arrays' M is refused. Returns 0, or 2 after one line. */
static int bench_shape_from(const inputs_source *s, const char *heads_text, const char *d_text,
                            const char *dv_text, const char *n_text, size_t *sizes, size_t *n_sizes,
                            const size_t *m, bench_shape *shape)
{
    const char *set = heads_text ? "--heads" : d_text ? "--d" : dv_text ? "--dv" : NULL;
    if (set)
        return cli_fail(set, "set by the arrays with --q/--k/--v (heads %zu, d %zu, dv %zu)",
                        s->batch * s->heads, s->d_k, s->d_v);
    *shape = (bench_shape){s->batch * s->heads, s->d_k, s->d_v, shape->variant_params};
    if (!n_text) {
        sizes[0] = s->n;
        *n_sizes = 1;
    }
    for (size_t i = 0; i < *n_sizes; i++)
        if (sizes[i] > s->n)
            return cli_fail("--n", "%zu is more than the arrays' %zu queries (--q)", sizes[i],
                            s->n);
    if (*m > s->m) return cli_fail("--m", "%zu is more than the arrays' %zu keys (--k)", *m, s->m);
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *variant_text = NULL, *n_text = NULL, *m_text = NULL, *heads_text = NULL;
    const char *d_text = NULL, *dv_text = NULL, *form_text = NULL, *threads_text = NULL;
    const char *reps_text = NULL, *format_text = NULL, *pass_text = NULL, *min_time_text = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL;
    int causal = 0, goals_flag = 0;
    variants_flags variant_flags = {0};
    const cli_flag flags[] = {
        {"variant", &variant_text, NULL},
        {"n", &n_text, NULL},
        {"m", &m_text, NULL},
        {"heads", &heads_text, NULL},
        {"d", &d_text, NULL},
        {"dv", &dv_text, NULL},
        {"causal", NULL, &causal},
        {"causal-form", &form_text, NULL},
        {"threads", &threads_text, NULL},
        {"reps", &reps_text, NULL},
        {"min-time", &min_time_text, NULL},
        {"format", &format_text, NULL},
        {"goals", NULL, &goals_flag},
        {"q", &q_path, NULL},
        {"k", &k_path, NULL},
        {"v", &v_path, NULL},
        {"pass", &pass_text, NULL},
        VARIANTS_PARAM_FLAGS(variant_flags),
        VARIANTS_SEED_FLAG(variant_flags),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    int reps = 5;
    if (reps_text && (rc = cli_parse_int("--reps", reps_text, &reps))) return rc;
    if (reps < 1 || reps > MAX_RUNS) return cli_fail("--reps", "must be in [1, %d]", MAX_RUNS);
    double min_time = MIN_TOTAL_S;
    if (min_time_text && (rc = cli_parse_double("--min-time", min_time_text, &min_time))) return rc;
    if (!(min_time >= 0 && min_time <= 3600))
        return cli_fail("--min-time", "must be in [0, 3600] seconds");
    if (goals_flag) {
        /* the goals fix their own points, threads and format */
        for (const cli_flag *f = flags; f->name; f++) {
            const int given = f->value ? *f->value != NULL : *f->present;
            if (given && strcmp(f->name, "goals") != 0 && strcmp(f->name, "reps") != 0)
                return cli_fail("--goals", "runs fixed points; only --reps goes with it, not --%s",
                                f->name);
        }
        return bench_run_goals(argc, argv, reps);
    }

    la_kernel kernels[LA_KERNEL_COUNT];
    size_t n_kernels = 0;
    int format = FORMAT_TABLE;
    size_t sizes[MAX_LIST] = {512, 2048, 8192}, n_sizes = 3, m = 0;
    bench_shape shape = {8, 64, 0, NULL};
    if ((rc = choose_kernels(variant_text, causal, kernels, &n_kernels))) return rc;
    if (form_text && !causal)
        return cli_fail("--causal-form", "only with --causal (non-causal runs have one form)");
    if (form_text && (rc = apply_causal_form(form_text, kernels, &n_kernels))) return rc;
    variants_values variant_params; /* no --proj here; the held E, F: variants_free */
    if ((rc = variants_parse(&variant_flags, variants_params_of(kernels, n_kernels),
                             &variant_params)))
        return rc;
    shape.variant_params = &variant_params;
    if (n_text && (rc = sweep_parse("--n", n_text, 2, sizes, MAX_LIST, &n_sizes))) return rc;
    if (m_text && (rc = sweep_parse_positive("--m", m_text, &m))) return rc;
    if (heads_text && (rc = sweep_parse_positive("--heads", heads_text, &shape.heads))) return rc;
    if (d_text && (rc = sweep_parse_positive("--d", d_text, &shape.d_k))) return rc;
    shape.d_v = shape.d_k;
    if (dv_text && (rc = sweep_parse_positive("--dv", dv_text, &shape.d_v))) return rc;
    if ((rc = cli_parse_threads("--threads", threads_text))) return rc;
    if (format_text && (rc = cli_parse_choice("--format", format_text, format_names, &format)))
        return rc;
    int pass = PASS_FORWARD;
    if (pass_text && (rc = cli_parse_choice("--pass", pass_text, pass_kind_names, &pass)))
        return rc;
    /* the inputs: random, or the user's arrays, which set the shape and bound N and M */
    inputs_source source;
    if ((rc = inputs_source_open(&source, q_path, k_path, v_path, 1))) return rc;
    if (source.from_files && (rc = bench_shape_from(&source, heads_text, d_text, dv_text, n_text,
                                                    sizes, &n_sizes, &m, &shape))) {
        inputs_source_close(&source);
        return rc;
    }

    /* every N, every kernel */
    bench_point points[MAX_LIST * LA_KERNEL_COUNT];
    size_t count = 0;
    for (size_t i = 0; i < n_sizes; i++)
        for (size_t j = 0; j < n_kernels; j++)
            points[count++] =
                (bench_point){.kernel = kernels[j],
                              .causal = causal,
                              .n = sizes[i],
                              .m = m                   ? m
                                   : source.from_files ? (sizes[i] < source.m ? sizes[i] : source.m)
                                                       : sizes[i],
                              .threads = la_get_num_threads(),
                              .pass = (pass_kind)pass};
    /* every point a problem, and its buffers (inputs, output, the kernel's scratch, the
     * yardstick's matrices) within the machine's memory: refused before allocating */
    double worst_bytes = 0;
    for (size_t i = 0; i < count; i++) {
        const la_problem p = bench_problem_of(&points[i], &shape);
        if (!variants_rank_fits(points[i].kernel, &p)) continue; /* skipped_rank: nothing held */
        la_status st = la_problem_check(&p);
        la_cost cost;
        /* a kernel without the pass (no backward) is skipped: its forward's bytes */
        const pass_kind counted =
            pass_kernel_has(points[i].kernel, points[i].pass) ? points[i].pass : PASS_FORWARD;
        if (st == LA_OK) st = pass_cost(points[i].kernel, &p, counted, LA_FLOAT32, &cost);
        if (st != LA_OK) {
            inputs_source_close(&source);
            return cli_fail(m_text ? "--m" : "--n", "N=%zu, M=%zu with H=%zu, d=%zu, dv=%zu: %s",
                            points[i].n, points[i].m, shape.heads, shape.d_k, shape.d_v,
                            la_strerror(st));
        }
        if (cost.io_bytes + cost.workspace_bytes > worst_bytes)
            worst_bytes = cost.io_bytes + cost.workspace_bytes;
    }
    const double sgemm_bytes = 3.0 * SGEMM_SIZE * SGEMM_SIZE * sizeof(float);
    if ((rc = sweep_check_memory("bench", worst_bytes + sgemm_bytes, machine_physical_memory(),
                                 "memory here"))) {
        inputs_source_close(&source);
        return rc;
    }
    char inputs[1024];
    inputs_source_describe(&source, inputs, sizeof inputs);
    metadata_extra(inputs);
    const bench_run run = {
        argc,   argv, shape, m_text, (pass_kind)pass, {reps, 0, min_time}, (out_format)format,
        &source};
    rc = bench_run_points(&run, points, count);
    inputs_source_close(&source);
    variants_free(&variant_params);
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}
