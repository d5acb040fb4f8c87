/* bench.h — what the files of `linattn bench` share: a point, the shape of a run, the run
 * itself, the inputs, the sgemm yardstick and the goal tables (bench.c, bench_measure.c,
 * bench_output.c, bench_goals.c, bench_ceilings.c). */
#ifndef LA_BENCH_H
#define LA_BENCH_H

#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/metadata.h"
#include "common/pass.h"   /* forward, backward, train: what one timed call is */
#include "common/record.h" /* the writer's metadata header */
#include "common/sweep.h"
#include "common/timer.h" /* timer_run: the one timer */
#include "common/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    GOAL_MODEL_SAME_WORKSPACE,  /* the model's workspace of a and b equal, less target bytes
                                   per query and head */
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

/* A point: a registry series (or "ffn": la_ffn with D = d, d_ff = 4·d, rows = n), its
 * dtype, N queries over M keys (0: M = N), head size d, threads, and a key length L
 * (0: none; else every query sees only keys j < L of the M). */
typedef struct {
    const char *series;
    int f64;
    size_t n, m, d;
    int threads;
    size_t length;
} cg_point;

typedef struct {
    const char *text, *target;
    cg_kind kind;
    double value;
    cg_point a, b;
} cg_goal;

/* ---------------------------------------------------------------- points */

/* Sizes shared by every point of a run. */
typedef struct {
    size_t heads, d_k, d_v;
    variants_values *variant_params; /* --window, --proj-rank, --features, --seed; NULL:
                                        defaults; a point's problem points into it */
} bench_shape;

/* One measurement: what to run, then (after bench_measure_point) what was measured. */
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

/* ---------------------------------------------------------------- timing */

enum { MAX_RUNS = 1000, GOALS_SLOW_REPS = 3 };
static const double MIN_TOTAL_S = 0.5;
static const double GOALS_SLOW_S = 1.0;

/* How many runs a point gets. The plain bench follows --reps and --min-time exactly (the
 * warm-up is never counted); --goals (min_total_s MIN_TOTAL_S) keeps its runtime bounded
 * on slow points. */
typedef struct {
    int reps;
    int budgeted;       /* --goals */
    double min_total_s; /* --min-time; --goals: MIN_TOTAL_S */
} timing_rule;

/* ---------------------------------------------------------------- the yardstick */

enum { SGEMM_SIZE = 2000 };

typedef struct {
    int threads;
    timer_result t;
    double gflops;
    double peak_gflops; /* the FMA peak on the same threads (NAN: not measurable here) */
    double triad_gbs;   /* the triad bandwidth on the same threads (NAN: not measured) */
} sgemm_result;

/* ---------------------------------------------------------------- kernels */

/* q: (H, N_max, d_k), k: (H, M_max, d_k), v: (H, M_max, d_v), out: (H, N_max, d_v), filled
 * once for the largest point; a smaller point reads a prefix as its (1, H, N, d) arrays.
 * When a point runs a backward: d_out shaped as out (random), d_q, d_k, d_v as q, k, v. */
typedef struct {
    float *q, *k, *v, *out;
    float *d_out, *d_q, *d_k, *d_v; /* NULL when every point is a forward */
} bench_inputs;

/* ---------------------------------------------------------------- output */

typedef enum { FORMAT_TABLE, FORMAT_CSV } out_format;
static const char *const format_names[] = {"table", "csv", NULL};

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

/* A goal's two points timed again, in turn (bench_goals.c's time_pair and the ceiling
 * goals' ratios): the table times its points one after another, a minute apart on a long
 * run, and a drift of the machine's speed between them moves the ratio (a busy host moved
 * softmax's backward / forward from 2.7x to 3.0-5.0x so); in turn, a drift reaches both
 * alike. timed: both ran, and the goal reads a and b (its a and b) rather than the
 * table's times. */
typedef struct {
    int timed;
    timer_result a, b;
} bench_pair;

/* bench_measure.c */
la_problem bench_problem_of(const bench_point *pt, const bench_shape *s);
const char *bench_variant_label(const bench_point *pt, char *buf, size_t size);
const char *bench_causal_label(const bench_point *pt);
timer_rule bench_rule_for(const timing_rule *rule, double predicted_s);
int bench_measure_sgemm(int threads, const timing_rule *rule, sgemm_result *out);
void bench_free_inputs(bench_inputs *in);
int bench_prepare_inputs(const bench_point *points, size_t count, const bench_shape *s,
                         const inputs_source *source, bench_inputs *in);
void bench_measure_point(bench_point *pt, const bench_shape *s, const bench_inputs *in,
                         const timing_rule *rule, const sgemm_result *sgemm);

/* bench_output.c */
const char *bench_skip_reason(const bench_point *pt);
int bench_run_points(const bench_run *run, bench_point *points, size_t count);

/* bench_goals.c */
/* The goal tables (bench_goals.c) and their lengths, checked against the tables there;
 * the ceiling goals' points have CG_HEADS heads. */
enum { N_GOALS = 28, N_CEILING_GOALS = 18, CG_HEADS = 8 };
extern const goal bench_goals_table[];
extern const cg_goal bench_ceiling_goals_table[];
int bench_run_goals(int argc, char **argv, int reps);

/* bench_ceilings.c */
int bench_cg_measure_all(cg_measured *ms, size_t *count, cg_ceilings *ceils, bench_pair *pairs,
                         int reps);
int bench_cg_print_goal(const cg_goal *g, const cg_measured *ms, size_t n, const cg_ceilings *ceils,
                        const bench_pair *pair);

#endif
