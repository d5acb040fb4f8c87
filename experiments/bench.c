/* bench.c — `linattn bench`: float32 attention kernels timed alone, against BLIS sgemm on
 * a large well-shaped product measured in the same process, so the ratio of the two
 * rates means something; and `--goals`, the goal table on fixed points. The
 * kernels are the rows of the library's registry (common/kernels.h), the goals a table
 * of data (goals[] below). */
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
    "to warm up, then at least R times and until the timed runs total 0.5 s (at most 1000\n"
    "runs, so small sizes still get a stable median); the median, min and max of those\n"
    "runs are reported.\n"
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
    "                   backward alone (la_attention_backward_f32, dQ, dK, dV from a random\n"
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
    "  --format F       table or csv [table]; rows are printed as they are measured\n"
    "  --causal-form F  deprecated (until the next release): with --causal, a variant\n"
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
    "cost model's minimum bytes per second), and sgemm for the FFN (la_ffn_f32, D = 512,\n"
    "d_ff = 2048, rows = N; its two products' FLOPs):\n";
static const char help_end[] =
    "It prints the measurement table (the points against the ceilings as # lines after\n"
    "it), one line per goal (goal, target, measured, met: yes, no, or \"skipped: no\n"
    "backward\" while the library has no backward for the kernel) and \"goals met: X of\n"
    "Y\".\n"
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

/* ---------------------------------------------------------------- the goals */

/* A point a goal reads: a series of the registry (la_kernel_series_parse) at N = M, on
 * a thread count. The series may name a pass after a '/' ("softmax/backward"; forward
 * without one: common/pass.h). */
typedef struct {
    const char *series;
    size_t n;
    int threads;
} goal_point;

typedef enum {
    GOAL_RATE,           /* a at >= target % of the yardstick of its thread count */
    GOAL_TIME,           /* a's median <= target seconds */
    GOAL_SPEEDUP,        /* b's median / a's median >= target: a is target× faster */
    GOAL_RATIO,          /* a's median / b's median <= target */
    GOAL_SAME_WORKSPACE, /* the cost model's workspace of a and b equal (target unused) */
    /* from the cost model alone, a and b never run: */
    GOAL_MODEL_SAME_WORKSPACE,  /* the model's workspace of a and b equal (target unused) */
    GOAL_MODEL_WORKSPACE_RATIO, /* the model's workspace of b / a's <= target */
} goal_kind;

/* One goal: the line it prints, what it compares and its target. */
typedef struct {
    const char *text;   /* the goal column */
    const char *target; /* the target column */
    goal_kind kind;
    double value; /* the target as a number */
    goal_point a, b;
} goal;

/* The project's performance goals (float32, B = 1, H = 8, d_k = d_v = 64). */
// clang-format off
static const goal goals[] = {
    /* text                                                   target       kind                value
     *     a: series, N, threads                b (second point) */
    {"1. fused softmax, N=1024: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 1024, 2}, {0}},
    {"1. fused softmax, N=2048: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 2048, 2}, {0}},
    {"1. fused softmax, N=4096: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 4096, 2}, {0}},
    {"1. fused softmax, N=8192: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 8192, 2}, {0}},
    {"1. fused softmax, N=16384: rate vs sgemm",              ">= 75%",    GOAL_RATE,          75,
        {"softmax", 16384, 2}, {0}},
    {"2. fused softmax, N=4096: time",                        "<= 0.24 s", GOAL_TIME,          0.24,
        {"softmax", 4096, 2}, {0}},
    {"3. softmax, N=4096: causal speedup over non-causal",    ">= 1.8x",   GOAL_SPEEDUP,       1.8,
        {"softmax_causal", 4096, 2},        {"softmax", 4096, 2}},
    {"4. linear, N=4096: time",                               "<= 4 ms",   GOAL_TIME,          .004,
        {"linear", 4096, 2}, {0}},
    {"5. linear, N=4096: rate vs sgemm",                      ">= 60%",    GOAL_RATE,          60,
        {"linear", 4096, 2}, {0}},
    {"5. linear, N=16384: rate vs sgemm",                     ">= 60%",    GOAL_RATE,          60,
        {"linear", 16384, 2}, {0}},
    {"5. linear, N=65536: rate vs sgemm",                     ">= 60%",    GOAL_RATE,          60,
        {"linear", 65536, 2}, {0}},
    {"6. causal linear, N=4096: chunked speedup over recurrent", ">= 1.6x", GOAL_SPEEDUP,      1.6,
        {"linear_causal_chunked", 4096, 2}, {"linear_causal_recurrent", 4096, 2}},
    {"7. linear, N=4096: causal chunked time / non-causal",   "<= 2x",     GOAL_RATIO,         2,
        {"linear_causal_chunked", 4096, 2}, {"linear", 4096, 2}},
    {"8. fused softmax: workspace independent of N (model)",  "equal",     GOAL_SAME_WORKSPACE, 0,
        {"softmax", 1024, 2},               {"softmax", 16384, 2}},
    {"9. 1 thread: fused softmax, N=1024: rate vs sgemm",     ">= 75%",    GOAL_RATE,          75,
        {"softmax", 1024, 1}, {0}},
    {"9. 1 thread: fused softmax, N=4096: rate vs sgemm",     ">= 75%",    GOAL_RATE,          75,
        {"softmax", 4096, 1}, {0}},
    {"9. 1 thread: linear, N=4096: rate vs sgemm",            ">= 60%",    GOAL_RATE,          60,
        {"linear", 4096, 1}, {0}},
    {"9. 1 thread: linear, N=16384: rate vs sgemm",           ">= 60%",    GOAL_RATE,          60,
        {"linear", 16384, 1}, {0}},
    /* backward passes: "series/backward" names the pass */
    {"10. fused softmax, N=4096: backward / forward time",    "<= 2.8x",   GOAL_RATIO,         2.8,
        {"softmax/backward", 4096, 2},  {"softmax", 4096, 2}},
    {"10. fused softmax backward, N=1024: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 1024, 2},  {0}},
    {"10. fused softmax backward, N=2048: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 2048, 2},  {0}},
    {"10. fused softmax backward, N=4096: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 4096, 2},  {0}},
    {"10. fused softmax bwd: workspace indep. of N (model)", "equal", GOAL_MODEL_SAME_WORKSPACE, 0,
        {"softmax/backward", 1024, 2},  {"softmax/backward", 16384, 2}},
    {"11. linear, N=4096: backward / forward time",           "<= 3x",     GOAL_RATIO,         3,
        {"linear/backward", 4096, 2},   {"linear", 4096, 2}},
    {"11. causal linear chunked, N=4096: backward / forward", "<= 3x",     GOAL_RATIO,         3,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_chunked", 4096, 2}},
    {"11. causal linear bwd: workspace 16384 vs 4096 (model)", "<= 4.5x", GOAL_MODEL_WORKSPACE_RATIO, 4.5,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_chunked/backward", 16384, 2}},
    {"12. causal linear bwd, N=4096: chunked over recurrent", ">= 1.6x", GOAL_SPEEDUP,    1.6,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_recurrent/backward", 4096, 2}},
};
// clang-format on
enum { N_GOALS = sizeof goals / sizeof goals[0] };

/* ---------------------------------------------------------------- the goals against the machine */

/* The performance goals: each kernel against this machine's own ceilings, measured in the same
 * process: the FMA peak of the point's dtype and threads (la_fma_peak_gflops, _f64), the
 * roofline bound min(peak, intensity · triad bandwidth) with intensity = FLOPs over the
 * cost model's la_cost.bytes_min, the streaming-read bandwidth (decoding), and the sgemm
 * yardstick (the FFN). Shape B = 1, H = 8 (d as given); these points run outside the
 * table above, on their own inputs. */
typedef enum {
    CG_PEAK,  /* a's rate >= target % of the FMA peak of its dtype and threads */
    CG_ROOF,  /* a's rate >= target % of its roofline bound */
    CG_RATIO, /* a's median / b's median <= target */
    CG_READ,  /* a's bytes_min / median >= target % of the read bandwidth */
    CG_SGEMM, /* a's rate (the FFN's two products) >= target % of sgemm */
} cg_kind;

/* A point: a registry series (or "ffn": la_ffn_f32 with D = d, d_ff = 4·d, rows = n), its
 * dtype, N queries over M keys (0: M = N), head size d, threads. */
typedef struct {
    const char *series;
    int f64;
    size_t n, m, d;
    int threads;
} cg_point;

typedef struct {
    const char *text, *target;
    cg_kind kind;
    double value;
    cg_point a, b;
} cg_goal;

// clang-format off
static const cg_goal ceiling_goals[] = {
    {"15. fused softmax, d=64, N=1024: rate vs FMA peak",     ">= 85%",   CG_PEAK,  85,
        {"softmax", 0, 1024, 0, 64, 2}, {0}},
    {"15. fused softmax, d=64, N=4096: rate vs FMA peak",     ">= 85%",   CG_PEAK,  85,
        {"softmax", 0, 4096, 0, 64, 2}, {0}},
    {"15. fused softmax, d=128, N=4096: rate vs FMA peak",    ">= 80%",   CG_PEAK,  80,
        {"softmax", 0, 4096, 0, 128, 2}, {0}},
    {"15. fused softmax, d=32, N=4096: rate vs FMA peak",     ">= 65%",   CG_PEAK,  65,
        {"softmax", 0, 4096, 0, 32, 2}, {0}},
    {"15. causal softmax, d=64, N=4096: rate vs FMA peak",    ">= 80%",   CG_PEAK,  80,
        {"softmax_causal", 0, 4096, 0, 64, 2}, {0}},
    {"15. 1 thread: fused softmax, d=64, N=4096: vs peak",    ">= 88%",   CG_PEAK,  88,
        {"softmax", 0, 4096, 0, 64, 1}, {0}},
    {"15. linear, N=4096: rate vs its roofline bound",        ">= 80%",   CG_ROOF,  80,
        {"linear", 0, 4096, 0, 64, 2}, {0}},
    {"15. linear, N=16384: rate vs its roofline bound",       ">= 80%",   CG_ROOF,  80,
        {"linear", 0, 16384, 0, 64, 2}, {0}},
    {"15. causal linear chunked / non-causal time, N=4096",   "<= 1.25x", CG_RATIO, 1.25,
        {"linear_causal_chunked", 0, 4096, 0, 64, 2}, {"linear", 0, 4096, 0, 64, 2}},
    {"15. causal linear chunked / non-causal time, N=65536",  "<= 1.25x", CG_RATIO, 1.25,
        {"linear_causal_chunked", 0, 65536, 0, 64, 2}, {"linear", 0, 65536, 0, 64, 2}},
    {"15. float64 fused softmax, N=4096: vs float64 peak",    ">= 75%",   CG_PEAK,  75,
        {"softmax", 1, 4096, 0, 64, 2}, {0}},
    {"15. float64 linear, N=4096: vs its float64 bound",      ">= 70%",   CG_ROOF,  70,
        {"linear", 1, 4096, 0, 64, 2}, {0}},
    {"15. decode, t=8192: bytes/s vs read bandwidth",         ">= 70%",   CG_READ,  70,
        {"softmax", 0, 1, 8192, 64, 2}, {0}},
    {"15. decode, t=32768: bytes/s vs read bandwidth",        ">= 70%",   CG_READ,  70,
        {"softmax", 0, 1, 32768, 64, 2}, {0}},
    {"15. FFN, D=512, d_ff=2048, N=512: rate vs sgemm",       ">= 85%",   CG_SGEMM, 85,
        {"ffn", 0, 512, 0, 512, 2}, {0}},
    {"15. FFN, D=512, d_ff=2048, N=2048: rate vs sgemm",      ">= 85%",   CG_SGEMM, 85,
        {"ffn", 0, 2048, 0, 512, 2}, {0}},
};
// clang-format on
enum { N_CEILING_GOALS = sizeof ceiling_goals / sizeof ceiling_goals[0], CG_HEADS = 8 };

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
          "                     [--format table|csv]\n"
          "       linattn bench --goals [--reps R]\n\n",
          out);
    fputs(help_intro, out);
    kernels_print_kernels(out, NULL, NULL);
    variants_print_help(out, 0, 1);
    fputs("A kernel whose workspace would pass the 4 GiB limit is skipped.\n", out);
    fputs(help_columns, out);
    for (size_t i = 0; i < N_GOALS; i++)
        fprintf(out, "  %-56s %s\n", goals[i].text, goals[i].target);
    fputs(help_ceilings, out);
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        fprintf(out, "  %-56s %s\n", ceiling_goals[i].text, ceiling_goals[i].target);
    fputs(help_end, out);
}

/* ---------------------------------------------------------------- points */

/* Sizes shared by every point of a run. */
typedef struct {
    size_t heads, d_k, d_v;
    const variants_values
        *variant_params; /* --window, --proj-rank, --features, --seed; NULL: defaults */
} bench_shape;

/* One measurement: what to run, then (after measure_point) what was measured. */
typedef struct {
    la_kernel kernel;
    int causal;
    size_t n, m;
    int threads;
    pass_kind pass;   /* forward, backward or train (common/pass.h) */
    int no_backward;  /* skipped: the pass needs a backward the kernel does not have */
    int rank_above_m; /* skipped: the kernel projects to K = --proj-rank rows, K > M */
    la_status status; /* LA_OK, or why the point was skipped */
    timer_result t;
    double gflops, pct_of_sgemm;         /* NAN when the FLOP model has no count */
    double pct_of_peak, pct_of_roofline; /* NAN also where there is no FMA peak */
    double workspace_bytes;              /* the cost model's; NAN when it has none */
} bench_point;

static la_problem problem_of(const bench_point *pt, const bench_shape *s)
{
    la_problem p;
    la_problem_init(&p, 1, s->heads, pt->n, pt->m, s->d_k, s->d_v);
    if (s->variant_params) variants_apply(s->variant_params, &p); /* no --proj: cannot fail */
    p.causal = pt->causal;
    return p;
}

/* The table's variant column: the kernel as the registry names it, and "/backward" or
 * "/train" after it for those passes. In buf. */
static const char *variant_label(const bench_point *pt, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", la_kernel_name(pt->kernel), pt->pass == PASS_FORWARD ? "" : "/",
             pt->pass == PASS_FORWARD ? "" : pass_kind_names[pt->pass]);
    return buf;
}

/* The table's causal column. */
static const char *causal_label(const bench_point *pt)
{
    return pt->causal ? "yes" : "no";
}

/* ---------------------------------------------------------------- timing */

enum { MAX_RUNS = 1000, GOALS_SLOW_REPS = 3 };
static const double MIN_TOTAL_S = 0.5;
static const double GOALS_SLOW_S = 1.0;

/* How many runs a point gets. The plain bench follows --reps exactly (the warm-up is
 * never counted); --goals keeps its runtime bounded on slow points. */
typedef struct {
    int reps;
    int budgeted; /* --goals */
} timing_rule;

/* timer_run's rule for a point. predicted_s is a lower bound on one call (its FLOPs at
 * the sgemm rate): under --goals a point that cannot be faster than GOALS_SLOW_S runs
 * min(R, GOALS_SLOW_REPS) times, and a warm-up of GOALS_SLOW_S or more is kept as the
 * first run (timer_rule.slow_s), so N = 16384 fused softmax (seconds per call) costs three
 * calls, not six. */
static timer_rule rule_for(const timing_rule *rule, double predicted_s)
{
    if (!rule->budgeted) return (timer_rule){rule->reps, MAX_RUNS, MIN_TOTAL_S, INFINITY};
    int reps = rule->reps;
    if (predicted_s >= GOALS_SLOW_S && reps > GOALS_SLOW_REPS) reps = GOALS_SLOW_REPS;
    return (timer_rule){reps, MAX_RUNS, MIN_TOTAL_S, GOALS_SLOW_S};
}

/* ---------------------------------------------------------------- the yardstick */

enum { SGEMM_SIZE = 2000 };

typedef struct {
    int threads;
    timer_result t;
    double gflops;
    double peak_gflops; /* the FMA peak on the same threads (NAN: not measurable here) */
    double triad_gbs;   /* the triad bandwidth on the same threads (NAN: not measured) */
} sgemm_result;

typedef struct {
    int threads;
    const float *a, *b;
    float *c;
} sgemm_call;

/* C (2000×2000) = A (2000×2000) · B (2000×2000), row-major, on BLIS's threads. BLIS's
 * OpenMP threading was checked to scale on the Debian libblis.a linked here (2000³ on
 * this 2-core machine: 202 GFLOP/s on 1 thread, 364 on 2), so one threaded call is the
 * yardstick rather than panels of single-threaded calls. */
static int run_sgemm(void *ctx)
{
    const sgemm_call *g = ctx;
    return la_blis_sgemm(g->threads, SGEMM_SIZE, SGEMM_SIZE, SGEMM_SIZE, 1, g->a, SGEMM_SIZE, 1,
                         g->b, SGEMM_SIZE, 1, 0, g->c, SGEMM_SIZE, 1) == LA_OK
               ? 0
               : -1;
}

/* Times the yardstick on `threads` threads. Returns 0, or -1 (no memory). */
static int measure_sgemm(int threads, const timing_rule *rule, sgemm_result *out)
{
    const size_t count = (size_t)SGEMM_SIZE * SGEMM_SIZE;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    float *c = malloc(count * sizeof *c);
    int rc = -1;
    if (a && b && c) {
        inputs_rng r = inputs_rng_for(1, "bench sgemm");
        inputs_fill_normal_f32(&r, a, count, 1.0);
        inputs_fill_normal_f32(&r, b, count, 1.0);
        sgemm_call g = {threads, a, b, c};
        out->threads = threads;
        const timer_rule sgemm_rule = rule_for(rule, 0);
        rc = timer_run(run_sgemm, &g, &sgemm_rule, &out->t);
        if (rc == 0)
            out->gflops = 2.0 * SGEMM_SIZE * SGEMM_SIZE * SGEMM_SIZE / out->t.median_s * 1e-9;
        out->peak_gflops = la_fma_peak_gflops(threads);
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, threads, &out->triad_gbs) != LA_OK)
            out->triad_gbs = NAN;
    }
    free(a);
    free(b);
    free(c);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- kernels */

/* q: (H, N_max, d_k), k: (H, M_max, d_k), v: (H, M_max, d_v), out: (H, N_max, d_v), filled
 * once for the largest point; a smaller point reads a prefix as its (1, H, N, d) arrays.
 * When a point runs a backward: d_out shaped as out (random), d_q, d_k, d_v as q, k, v. */
typedef struct {
    float *q, *k, *v, *out;
    float *d_out, *d_q, *d_k, *d_v; /* NULL when every point is a forward */
} bench_inputs;

static void free_inputs(bench_inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->out);
    free(in->d_out);
    free(in->d_q);
    free(in->d_k);
    free(in->d_v);
}

/* Allocates and fills the inputs for every point (random: once, for the largest; the
 * user's arrays: run_points copies each point's prefixes). Returns 0, or -1 (no memory). */
static int prepare_inputs(const bench_point *points, size_t count, const bench_shape *s,
                          const inputs_source *source, bench_inputs *in)
{
    size_t n_max = 0, m_max = 0;
    for (size_t i = 0; i < count; i++) {
        if (points[i].n > n_max) n_max = points[i].n;
        if (points[i].m > m_max) m_max = points[i].m;
    }
    const size_t n_q = inputs_float_count(s->heads, n_max, s->d_k);
    const size_t n_k = inputs_float_count(s->heads, m_max, s->d_k);
    const size_t n_v = inputs_float_count(s->heads, m_max, s->d_v);
    const size_t n_out = inputs_float_count(s->heads, n_max, s->d_v);
    int backward = 0;
    for (size_t i = 0; i < count; i++)
        backward |= points[i].pass != PASS_FORWARD;
    *in = (bench_inputs){0};
    if (!n_q || !n_k || !n_v || !n_out) return -1;
    in->q = malloc(n_q * sizeof(float));
    in->k = malloc(n_k * sizeof(float));
    in->v = malloc(n_v * sizeof(float));
    in->out = malloc(n_out * sizeof(float));
    if (backward) {
        in->d_out = malloc(n_out * sizeof(float));
        in->d_q = malloc(n_q * sizeof(float));
        in->d_k = malloc(n_k * sizeof(float));
        in->d_v = malloc(n_v * sizeof(float));
    }
    if (!in->q || !in->k || !in->v || !in->out ||
        (backward && (!in->d_out || !in->d_q || !in->d_k || !in->d_v))) {
        free_inputs(in);
        return -1;
    }
    if (!source->from_files)
        inputs_source_fill(source, "bench", s->heads, n_max, m_max, s->d_k, s->d_v, in->q, in->k,
                           in->v);
    if (backward) {
        inputs_rng rd = inputs_rng_for(1, "bench d_out");
        inputs_fill_normal_f32(&rd, in->d_out, n_out, 1.0);
    }
    return 0;
}

/* Times one point on the prepared inputs and fills its measured fields: GFLOP/s from the
 * FLOP model (of the point's pass: common/pass.h), its share of the yardstick, the
 * model's workspace. On the current threads. A pass the kernel does not have (no
 * backward) is skipped with no_backward set. */
static void measure_point(bench_point *pt, const bench_shape *s, const bench_inputs *in,
                          const timing_rule *rule, const sgemm_result *sgemm)
{
    const la_kernel kernel = pt->kernel;
    const la_problem p = problem_of(pt, s);
    pt->gflops = pt->pct_of_sgemm = pt->workspace_bytes = NAN;
    pt->pct_of_peak = pt->pct_of_roofline = NAN;
    if (!pass_kernel_has(kernel, pt->pass)) {
        pt->no_backward = 1;
        pt->status = LA_EINVAL;
        return;
    }
    if (!variants_rank_fits(kernel, &p)) {
        pt->rank_above_m = 1;
        pt->status = LA_EINVAL;
        return;
    }
    la_cost cost;
    const int have_cost = pass_cost(kernel, &p, pt->pass, LA_FLOAT32, &cost) == LA_OK;
    const double flops = have_cost ? cost.flops_total : NAN;
    pt->workspace_bytes = have_cost ? cost.workspace_bytes : NAN;

    const double predicted_s = have_cost ? flops / (sgemm->gflops * 1e9) : 0;
    const timer_rule point_rule = rule_for(rule, predicted_s);
    const pass_arrays arrays = {in->q, in->k, in->v, in->out, in->d_out, in->d_q, in->d_k, in->d_v};
    pt->status = pass_time(kernel, &p, pt->pass, &arrays, &point_rule, &pt->t);
    if (pt->status != LA_OK || !have_cost) return;
    pt->gflops = flops / pt->t.median_s * 1e-9;
    pt->pct_of_sgemm = 100.0 * pt->gflops / sgemm->gflops;
    /* NAN propagates where the probes have no value */
    const double roof = fmin(sgemm->peak_gflops, flops / cost.bytes_min * sgemm->triad_gbs);
    pt->pct_of_peak = 100.0 * pt->gflops / sgemm->peak_gflops;
    pt->pct_of_roofline =
        isnan(sgemm->peak_gflops) || isnan(sgemm->triad_gbs) ? NAN : 100.0 * pt->gflops / roof;
}

/* ---------------------------------------------------------------- output */

typedef enum { FORMAT_TABLE, FORMAT_CSV } out_format;
static const char *const format_names[] = {"table", "csv", NULL};

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
    "forward (la_attention_f32)",
    "backward (la_attention_backward_f32 alone, on the forward's output computed before the "
    "timing; FLOPs and workspace from la_attention_backward_cost)",
    "train (la_attention_f32 then la_attention_backward_f32, timed as one call; FLOPs the sum "
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
    fprintf(out, "# timing: one warm-up, then >= %d runs until they total %.1f s (at most %d)%s\n",
            rule->reps, MIN_TOTAL_S, MAX_RUNS,
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
static const char *skip_reason(const bench_point *pt)
{
    return pt->no_backward    ? "no backward"
           : pt->rank_above_m ? "--proj-rank above M"
                              : la_strerror(pt->status);
}

typedef struct {
    int argc;
    char **argv;
    bench_shape shape;
    const char *m_text; /* --m as given, for the header; NULL: M = N */
    pass_kind pass;     /* --pass (the goals' points carry their own) */
    timing_rule rule;
    out_format format;
    const inputs_source *source; /* random (seed 1), or --q/--k/--v */
} bench_run;

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
        snprintf(note, sizeof note, "skipped: %s", skip_reason(pt));
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
        return record_row(
            csv, "%s,%s,%d,%zu,%zu,%zu,%zu,%zu,1,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.2f,%s",
            la_kernel_series(pt->kernel, pt->causal), la_kernel_name(pt->kernel), pt->causal, pt->n,
            pt->m, s->d_k, s->d_v, s->heads, pt->threads, status_name(pt), runs, median, min, max,
            gflops, pct, pct_peak, pct_roof, workspace, sgemm->gflops, ok ? "" : skip_reason(pt));
    char label[96];
    printf("%-26s %-9s %7zu %7zu %7d %5s %10s %10s %10s %8s %12s %11s %15s %15s%s%s\n",
           variant_label(pt, label, sizeof label), causal_label(pt), pt->n, pt->m, pt->threads,
           ok ? runs : "-", median, min, max, gflops, pct, pct_peak, pct_roof, workspace,
           ok ? "" : "  ", ok ? "" : note);
    fflush(stdout);
    return 0;
}

/* ---------------------------------------------------------------- a run */

/* Measures and prints every point in order. The yardstick is measured before the first
 * point and again whenever the thread count changes (--goals), and printed as a row.
 * Returns 0, or 1 when something ran out of memory or the csv could not be written (the
 * rest still runs). */
static int run_points(const bench_run *run, bench_point *points, size_t count)
{
    bench_inputs in;
    if (prepare_inputs(points, count, &run->shape, run->source, &in) != 0) {
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
            if (measure_sgemm(pt->threads, &run->rule, &sgemm) != 0) {
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
        measure_point(pt, &run->shape, &in, &run->rule, &sgemm);
        if (pt->status == LA_ENOMEM) failed = 1;
        if (print_point(csv, pt, &run->shape, &sgemm) != 0) failed = 1;
    }
    if (record_close(csv) != 0) {
        cli_line("bench: standard output: write failed");
        failed = 1;
    }
    free_inputs(&in);
    return failed;
}

/* ---------------------------------------------------------------- goals */

/* A goal's point as a bench point: its series' kernel, causal flag and pass (la_status
 * LA_EINVAL when the registry has no such series or the pass is unknown). */
static bench_point point_of(const goal_point *gp)
{
    bench_point pt = {.n = gp->n, .m = gp->n, .threads = gp->threads, .pass = PASS_FORWARD};
    char series[96];
    snprintf(series, sizeof series, "%s", gp->series);
    char *slash = strchr(series, '/');
    if (slash) {
        *slash = 0;
        int i = 0;
        while (pass_kind_names[i] && strcmp(pass_kind_names[i], slash + 1) != 0)
            i++;
        if (!pass_kind_names[i]) pt.status = LA_EINVAL;
        pt.pass = (pass_kind)i;
    }
    if (la_kernel_series_parse(series, &pt.kernel, &pt.causal) != LA_OK) pt.status = LA_EINVAL;
    return pt;
}

static int same_point(const bench_point *a, const bench_point *b)
{
    return a->kernel == b->kernel && a->causal == b->causal && a->n == b->n &&
           a->threads == b->threads && a->pass == b->pass;
}

/* Whether the goal reads a second point. */
static int has_b(const goal *g)
{
    return g->kind != GOAL_RATE && g->kind != GOAL_TIME;
}

/* Whether the goal reads the cost model only (its points are not measured). */
static int model_only(const goal *g)
{
    return g->kind == GOAL_MODEL_SAME_WORKSPACE || g->kind == GOAL_MODEL_WORKSPACE_RATIO;
}

/* The points the goals read, each once, in the order they are first named, the largest
 * thread count first (the yardstick is measured once per count). Returns the count. */
static size_t list_goal_points(bench_point *out)
{
    size_t n = 0;
    for (int pass_threads = 64; pass_threads >= 1; pass_threads--)
        for (size_t i = 0; i < N_GOALS; i++)
            for (int which = 0; which < 1 + has_b(&goals[i]) && !model_only(&goals[i]); which++) {
                const goal_point *gp = which ? &goals[i].b : &goals[i].a;
                if (gp->threads != pass_threads) continue;
                bench_point pt = point_of(gp);
                if (pt.status != LA_OK) continue; /* no such series: the goal says so */
                size_t j = 0;
                while (j < n && !same_point(&out[j], &pt))
                    j++;
                if (j == n) out[n++] = pt;
            }
    return n;
}

/* The measured point of a goal, or NULL (its series is not in the registry). */
static const bench_point *find_goal_point(const bench_point *points, size_t n, const goal_point *gp)
{
    bench_point want = point_of(gp);
    if (want.status != LA_OK) return NULL;
    for (size_t i = 0; i < n; i++)
        if (same_point(&points[i], &want)) return &points[i];
    return NULL;
}

/* "skipped: why" for a point that was not measured, into buf; returns whether it was. */
static int was_measured(const bench_point *pt, const goal_point *gp, char *buf, size_t size)
{
    if (pt && pt->status == LA_OK && !isnan(pt->gflops)) return 1;
    if (!pt)
        snprintf(buf, size, "skipped: no series %s", gp->series);
    else
        snprintf(buf, size, "skipped: %s", pt->status == LA_OK ? "no FLOP model" : skip_reason(pt));
    return 0;
}

/* Whether a goal's point needs a backward its kernel does not have. */
static int lacks_backward(const goal_point *gp)
{
    const bench_point pt = point_of(gp);
    return pt.status == LA_OK && !pass_kernel_has(pt.kernel, pt.pass);
}

/* The cost model's workspace of a goal's point (NAN when it has none). */
static double model_workspace(const goal_point *gp, const bench_shape *s)
{
    const bench_point pt = point_of(gp);
    const la_problem p = problem_of(&pt, s);
    la_cost cost;
    if (pt.status != LA_OK || pass_cost(pt.kernel, &p, pt.pass, LA_FLOAT32, &cost) != LA_OK)
        return NAN;
    return cost.workspace_bytes;
}

enum { GOAL_NOT_MET = 0, GOAL_MET = 1, GOAL_NO_BACKWARD = 2 };

/* One goal's line; returns GOAL_MET, GOAL_NOT_MET, or GOAL_NO_BACKWARD when a point it
 * reads needs a backward pass the library does not have (verdict "skipped: no
 * backward"). */
static int print_goal(const goal *g, const bench_point *points, size_t n, const bench_shape *s)
{
    if (lacks_backward(&g->a) || (has_b(g) && lacks_backward(&g->b))) {
        printf("%-58s %-10s %-36s %s\n", g->text, g->target, "-", "skipped: no backward");
        return GOAL_NO_BACKWARD;
    }
    const bench_point *a = find_goal_point(points, n, &g->a);
    const bench_point *b = has_b(g) ? find_goal_point(points, n, &g->b) : NULL;
    char got[64] = "";
    int met = 0;
    switch (g->kind) {
    case GOAL_RATE:
        if (was_measured(a, &g->a, got, sizeof got)) {
            snprintf(got, sizeof got, "%.1f%% (%.1f GFLOP/s)", a->pct_of_sgemm, a->gflops);
            met = a->pct_of_sgemm >= g->value;
        }
        break;
    case GOAL_TIME:
        if (was_measured(a, &g->a, got, sizeof got)) {
            if (g->value < 0.1)
                snprintf(got, sizeof got, "%.3f ms", a->t.median_s * 1e3);
            else
                snprintf(got, sizeof got, "%.4g s", a->t.median_s);
            met = a->t.median_s <= g->value;
        }
        break;
    case GOAL_SPEEDUP:
    case GOAL_RATIO: {
        /* speedup: b's time over a's; ratio: a's over b's */
        const bench_point *num = g->kind == GOAL_SPEEDUP ? b : a;
        const bench_point *den = g->kind == GOAL_SPEEDUP ? a : b;
        const goal_point *num_gp = g->kind == GOAL_SPEEDUP ? &g->b : &g->a;
        const goal_point *den_gp = g->kind == GOAL_SPEEDUP ? &g->a : &g->b;
        if (was_measured(num, num_gp, got, sizeof got) &&
            was_measured(den, den_gp, got, sizeof got)) {
            const double ratio = num->t.median_s / den->t.median_s;
            snprintf(got, sizeof got, "%.2fx (%.4g s / %.4g s)", ratio, num->t.median_s,
                     den->t.median_s);
            met = g->kind == GOAL_SPEEDUP ? ratio >= g->value : ratio <= g->value;
        }
        break;
    }
    case GOAL_SAME_WORKSPACE: {
        /* the cost model's, which does not need the kernel to have run */
        const double wa = a ? a->workspace_bytes : NAN, wb = b ? b->workspace_bytes : NAN;
        snprintf(got, sizeof got, "%.0f B at %zu, %.0f B at %zu", wa, g->a.n, wb, g->b.n);
        met = !isnan(wa) && wa == wb;
        break;
    }
    case GOAL_MODEL_SAME_WORKSPACE:
    case GOAL_MODEL_WORKSPACE_RATIO: {
        const double wa = model_workspace(&g->a, s), wb = model_workspace(&g->b, s);
        if (g->kind == GOAL_MODEL_SAME_WORKSPACE) {
            snprintf(got, sizeof got, "%.0f B at %zu, %.0f B at %zu", wa, g->a.n, wb, g->b.n);
            met = !isnan(wa) && wa == wb;
        } else {
            snprintf(got, sizeof got, "%.2fx (%.0f B / %.0f B)", wb / wa, wb, wa);
            met = !isnan(wa) && !isnan(wb) && wa > 0 && wb / wa <= g->value;
        }
        break;
    }
    }
    printf("%-58s %-10s %-36s %s\n", g->text, g->target, got, met ? "yes" : "no");
    return met ? GOAL_MET : GOAL_NOT_MET;
}

/* ---------------------------------------------------------------- goals against the machine:
 * measuring */

/* The ceilings of one thread count, measured when a point first needs them. */
typedef struct {
    int measured;
    double peak[2];     /* GFLOP/s: float32, float64 (NAN: no probe here) */
    double read, triad; /* GB/s (NAN: the probe failed) */
    double sgemm;       /* GFLOP/s (NAN: not measured) */
} cg_ceilings;

/* A point measured: status, median time, FLOPs and minimum bytes. */
typedef struct {
    cg_point pt;
    la_status status;
    timer_result t;
    double flops, bytes_min;
} cg_measured;

static int cg_same(const cg_point *a, const cg_point *b)
{
    return strcmp(a->series, b->series) == 0 && a->f64 == b->f64 && a->n == b->n && a->m == b->m &&
           a->d == b->d && a->threads == b->threads;
}

static int cg_has_b(const cg_goal *g)
{
    return g->kind == CG_RATIO;
}

/* The buffers of one timed call: attention (q, k, v, out in the point's dtype) or the
 * FFN (x, w1, b1, w2, b2, out in float32). */
typedef struct {
    const cg_point *pt;
    la_kernel kernel;
    la_problem p;
    la_layer_config layer;
    void *q, *k, *v, *out;
    float *w1, *b1, *w2, *b2;
} cg_call;

static int cg_run(void *ctx)
{
    const cg_call *c = ctx;
    if (strcmp(c->pt->series, "ffn") == 0)
        return (int)la_ffn_f32(&c->layer, c->pt->n, c->q, c->w1, c->b1, c->w2, c->b2, c->out);
    if (c->pt->f64) return (int)la_attention_f64(c->kernel, &c->p, c->q, c->k, c->v, c->out);
    return (int)la_attention_f32(c->kernel, &c->p, c->q, c->k, c->v, c->out);
}

/* Random N(0, 1) values into x (floats or doubles). */
static void cg_fill(inputs_rng *r, void *x, size_t count, int f64, double sigma)
{
    if (!f64) {
        inputs_fill_normal_f32(r, x, count, sigma);
        return;
    }
    double *d = x;
    for (size_t i = 0; i < count; i++)
        d[i] = sigma * inputs_normal(r);
}

/* Measures one point on `reps` runs (the goals' rule): fills m. Returns 0, or 1 when out
 * of memory. */
static int cg_measure(cg_measured *m, int reps, const cg_ceilings *ceil)
{
    const cg_point *pt = &m->pt;
    cg_call c = {.pt = pt};
    m->status = LA_OK;
    m->flops = m->bytes_min = NAN;
    const int ffn = strcmp(pt->series, "ffn") == 0;
    const size_t keys = pt->m ? pt->m : pt->n, e = pt->f64 ? sizeof(double) : sizeof(float);
    size_t nq, nk, nout;
    if (ffn) {
        /* x (rows, D), W1 (4D, D), W2 (D, 4D): FLOPs of the two products, 4·rows·D·4D */
        la_layer_config_init(&c.layer, pt->d, 8, 4 * pt->d);
        nq = nout = pt->n * pt->d, nk = 4 * pt->d * pt->d;
        m->flops = 4.0 * (double)pt->n * (double)pt->d * 4.0 * (double)pt->d;
    } else {
        int causal;
        if (la_kernel_series_parse(pt->series, &c.kernel, &causal) != LA_OK) {
            m->status = LA_EINVAL;
            return 0;
        }
        la_problem_init(&c.p, 1, CG_HEADS, pt->n, keys, pt->d, pt->d);
        c.p.causal = causal;
        la_cost cost;
        m->status = la_attention_cost(c.kernel, &c.p, pt->f64 ? LA_FLOAT64 : LA_FLOAT32, &cost);
        if (m->status != LA_OK) return 0;
        m->flops = cost.flops_total, m->bytes_min = cost.bytes_min;
        nq = nout = CG_HEADS * pt->n * pt->d, nk = CG_HEADS * keys * pt->d;
    }
    c.q = malloc(nq * e), c.k = malloc(nk * e), c.v = malloc(nk * e), c.out = malloc(nout * e);
    c.w1 = c.b1 = c.w2 = c.b2 = NULL;
    int rc = 0;
    if (!c.q || !c.k || !c.v || !c.out) {
        rc = 1;
        goto done;
    }
    inputs_rng r = inputs_rng_for(1, "bench ceilings");
    cg_fill(&r, c.q, nq, pt->f64, 1.0);
    cg_fill(&r, c.k, nk, pt->f64, ffn ? 1.0 / sqrt((double)pt->d) : 1.0);
    cg_fill(&r, c.v, nk, pt->f64, ffn ? 1.0 / sqrt((double)pt->d) : 1.0);
    if (ffn) {
        /* W1 (4D, D) in k's buffer, W2 (D, 4D) in v's; zero biases */
        c.w1 = c.k, c.w2 = c.v;
        c.b1 = calloc(4 * pt->d, sizeof(float)), c.b2 = calloc(pt->d, sizeof(float));
        if (!c.b1 || !c.b2) {
            rc = 1;
            goto done;
        }
    }
    if (la_get_num_threads() != pt->threads) la_set_num_threads(pt->threads);
    const double peak = ceil->peak[pt->f64];
    const double predicted = isnan(peak) ? 0 : m->flops / (peak * 1e9);
    const timer_rule rule = rule_for(&(timing_rule){reps, 1}, predicted);
    const int st = timer_run(cg_run, &c, &rule, &m->t);
    if (st < 0) rc = 1;
    m->status = st < 0 ? LA_ENOMEM : (la_status)st;
done:
    free(c.q), free(c.k), free(c.v), free(c.out), free(c.b1), free(c.b2);
    return rc;
}

/* The ceilings of `threads` threads, into c (once). The sgemm yardstick only when
 * with_sgemm (an FFN goal reads it). Returns 0, or 1 when out of memory. */
static int cg_ceilings_for(int threads, int reps, int with_sgemm, cg_ceilings *c)
{
    if (la_get_num_threads() != threads) la_set_num_threads(threads);
    if (!c->measured) {
        c->measured = 1;
        c->peak[0] = la_fma_peak_gflops(threads);
        c->peak[1] = la_fma_peak_gflops_f64(threads);
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_READ, threads, &c->read) != LA_OK) c->read = NAN;
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, threads, &c->triad) != LA_OK)
            c->triad = NAN;
        c->sgemm = NAN;
    }
    if (with_sgemm && isnan(c->sgemm)) {
        sgemm_result g;
        if (measure_sgemm(threads, &(timing_rule){reps, 1}, &g) != 0) return 1;
        c->sgemm = g.gflops;
    }
    return 0;
}

/* A number or "-" into buf. */
static const char *cg_num(char *buf, size_t size, const char *fmt, double x)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, fmt, x);
    return buf;
}

/* Measures every point the ceiling goals read (each once), printing the ceilings and one
 * row per point. ceils[t] for t threads (1..2). Returns 0, or 1 when out of memory. */
static int cg_measure_all(cg_measured *ms, size_t *count, cg_ceilings *ceils, int reps)
{
    *count = 0;
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        for (int which = 0; which < 1 + cg_has_b(&ceiling_goals[i]); which++) {
            const cg_point *pt = which ? &ceiling_goals[i].b : &ceiling_goals[i].a;
            size_t j = 0;
            while (j < *count && !cg_same(&ms[j].pt, pt))
                j++;
            if (j == *count) ms[(*count)++] = (cg_measured){.pt = *pt};
        }
    printf("\n# against the machine: B=1 H=%d, each point's own d; ceilings measured "
           "here\n",
           CG_HEADS);
    int failed = 0;
    for (int threads = 2; threads >= 1 && !failed; threads--) {
        int used = 0, sgemm = 0;
        for (size_t i = 0; i < *count; i++)
            if (ms[i].pt.threads == threads) {
                used = 1;
                sgemm |= strcmp(ms[i].pt.series, "ffn") == 0;
            }
        if (!used) continue;
        cg_ceilings *c = &ceils[threads];
        if (cg_ceilings_for(threads, reps, sgemm, c) != 0) {
            failed = 1;
            break;
        }
        char b[5][32];
        printf("# %d thread(s): FMA peak %s GFLOP/s float32, %s float64; read %s GB/s, triad %s "
               "GB/s; sgemm %s GFLOP/s\n",
               threads, cg_num(b[0], 32, "%.1f", c->peak[0]), cg_num(b[1], 32, "%.1f", c->peak[1]),
               cg_num(b[2], 32, "%.1f", c->read), cg_num(b[3], 32, "%.1f", c->triad),
               cg_num(b[4], 32, "%.1f", c->sgemm));
        for (size_t i = 0; i < *count && !failed; i++) {
            cg_measured *m = &ms[i];
            if (m->pt.threads != threads) continue;
            if (cg_measure(m, reps, c) != 0) failed = 1;
            if (m->status == LA_OK)
                printf("# %-22s %s N=%-6zu M=%-6zu d=%-4zu threads=%d  median %.4g s  %.1f "
                       "GFLOP/s  %.1f GB/s (minimum bytes)\n",
                       m->pt.series, m->pt.f64 ? "f64" : "f32", m->pt.n,
                       m->pt.m ? m->pt.m : m->pt.n, m->pt.d, threads, m->t.median_s,
                       m->flops / m->t.median_s * 1e-9, m->bytes_min / m->t.median_s * 1e-9);
            else
                printf("# %-22s %s N=%-6zu d=%-4zu threads=%d  skipped: %s\n", m->pt.series,
                       m->pt.f64 ? "f64" : "f32", m->pt.n, m->pt.d, threads,
                       la_strerror(m->status));
            fflush(stdout);
        }
    }
    return failed;
}

static const cg_measured *cg_find(const cg_measured *ms, size_t n, const cg_point *pt)
{
    for (size_t i = 0; i < n; i++)
        if (cg_same(&ms[i].pt, pt)) return ms[i].status == LA_OK ? &ms[i] : NULL;
    return NULL;
}

/* One ceiling goal's line; returns whether it was met. */
static int cg_print_goal(const cg_goal *g, const cg_measured *ms, size_t n,
                         const cg_ceilings *ceils)
{
    const cg_measured *a = cg_find(ms, n, &g->a), *b = cg_has_b(g) ? cg_find(ms, n, &g->b) : NULL;
    const cg_ceilings *c = &ceils[g->a.threads];
    char got[64];
    int met = 0;
    if (!a || (cg_has_b(g) && !b)) {
        snprintf(got, sizeof got, "skipped: not measured");
    } else {
        const double gflops = a->flops / a->t.median_s * 1e-9;
        const double peak = c->peak[g->a.f64];
        double pct = NAN;
        switch (g->kind) {
        case CG_PEAK:
            pct = 100 * gflops / peak;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, peak);
            break;
        case CG_ROOF: {
            const double roof = fmin(peak, a->flops / a->bytes_min * c->triad);
            pct = 100 * gflops / roof;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, roof);
            break;
        }
        case CG_READ: {
            const double gbs = a->bytes_min / a->t.median_s * 1e-9;
            pct = 100 * gbs / c->read;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GB/s)", pct, gbs, c->read);
            break;
        }
        case CG_SGEMM:
            pct = 100 * gflops / c->sgemm;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, c->sgemm);
            break;
        case CG_RATIO: {
            const double ratio = a->t.median_s / b->t.median_s;
            snprintf(got, sizeof got, "%.2fx (%.4g s / %.4g s)", ratio, a->t.median_s,
                     b->t.median_s);
            met = ratio <= g->value;
            break;
        }
        }
        if (g->kind != CG_RATIO) {
            if (isnan(pct)) snprintf(got, sizeof got, "- (no ceiling measured here)");
            met = !isnan(pct) && pct >= g->value;
        }
    }
    printf("%-58s %-10s %-36s %s\n", g->text, g->target, got, met ? "yes" : "no");
    return met;
}

/* The goal table; its exit status is 0 whether or not the goals are met (a benchmark is
 * not a test), 1 when something ran out of memory. */
static int run_goals(int argc, char **argv, int reps)
{
    bench_point points[2 * N_GOALS];
    const size_t count = list_goal_points(points);
    inputs_source random;
    inputs_source_open(&random, NULL, NULL, NULL, 1);
    char inputs[256];
    inputs_source_describe(&random, inputs, sizeof inputs);
    record_meta_extra(inputs);
    const bench_run run = {argc,         argv,      {8, 64, 64, NULL}, NULL,
                           PASS_FORWARD, {reps, 1}, FORMAT_TABLE,      &random};
    int failed = run_points(&run, points, count);
    cg_measured measured[2 * N_CEILING_GOALS];
    cg_ceilings ceils[3] = {{0}};
    size_t n_measured = 0;
    if (!failed) failed = cg_measure_all(measured, &n_measured, ceils, reps);
    record_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    int met = 0, no_backward = 0;
    printf("\n%-58s %-10s %-36s %s\n", "goal (2 threads unless noted)", "target", "measured",
           "met");
    for (size_t i = 0; i < N_GOALS; i++) {
        const int verdict = print_goal(&goals[i], points, count, &run.shape);
        met += verdict == GOAL_MET;
        no_backward += verdict == GOAL_NO_BACKWARD;
    }
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        met += cg_print_goal(&ceiling_goals[i], measured, n_measured, ceils);
    const int total = (int)(N_GOALS + N_CEILING_GOALS);
    if (no_backward)
        printf("goals met: %d of %d (%d skipped: no backward)\n", met, total, no_backward);
    else
        printf("goals met: %d of %d\n", met, total);
    return failed;
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
    const char *reps_text = NULL, *format_text = NULL, *pass_text = NULL;
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
    if (goals_flag) {
        /* the goals fix their own points, threads and format */
        for (const cli_flag *f = flags; f->name; f++) {
            const int given = f->value ? *f->value != NULL : *f->present;
            if (given && strcmp(f->name, "goals") != 0 && strcmp(f->name, "reps") != 0)
                return cli_fail("--goals", "runs fixed points; only --reps goes with it, not --%s",
                                f->name);
        }
        return run_goals(argc, argv, reps);
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
    variants_values variant_params; /* no --proj here: nothing to free */
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
        const la_problem p = problem_of(&points[i], &shape);
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
    record_meta_extra(inputs);
    const bench_run run = {
        argc, argv, shape, m_text, (pass_kind)pass, {reps, 0}, (out_format)format, &source};
    rc = run_points(&run, points, count);
    inputs_source_close(&source);
    record_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}
