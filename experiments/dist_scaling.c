/* dist_scaling.c — `linattn dist-scaling`: distributed linear attention (all-reduce;
 * causal by MPI_Exscan or LASP-2's all-gather) against ring softmax, measured on
 * P = 1, 2, 4, … ranks (the powers of two up to mpirun's -np, each a sub-communicator
 * of MPI_COMM_WORLD, so one run covers every P), strong scaling at fixed N and weak
 * scaling at fixed N/P; then a model — the measured compute per rank plus the
 * communication the code counts, at 10 and 100 Gbit/s with a latency — predicting the
 * time against P up to 1,024 and N up to 10⁸.
 *
 * Files (rank 0 writes; each row appended and flushed as measured, record.h):
 *   --out (dist_scaling.csv): one row per (mode, kernel, ranks, n);
 *   --model-out (dist_model.csv): one row per (link, kernel, ranks, n).
 * A call's time is the slowest rank's (each repetition starts after a barrier, its
 * per-rank times reduced by MPI_MAX), the median over the repetitions; the bytes are
 * the kernels' own counts (la_dist_stats), exact. */
#include "commands.h"
#include "common/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: mpirun -np P linattn dist-scaling [--n N] [--n-per-rank N] [--d D] [--heads H]\n"
    "                  [--reps R] [--latency S] [--out FILE] [--model-out FILE]\n"
    "\n"
    "Times the distributed kernels of lib/linattn_mpi.h on P = 1, 2, 4, ... ranks (every\n"
    "power of two up to mpirun's -np, as sub-communicators: one run covers them all):\n"
    "linear (all-reduce of the d_k x (d_v + 1) states), linear causal by MPI_Exscan and by\n"
    "LASP-2's MPI_Allgather, ring softmax and ring softmax causal. Strong scaling at a\n"
    "fixed N, weak scaling at a fixed N/P. Per point: the time per call (the slowest\n"
    "rank's, median over --reps), the bytes each rank sends (counted by the kernels,\n"
    "exact) and the share of the time spent inside MPI. Then a model, written to\n"
    "--model-out: measured compute per rank (from P = 1's fastest call) plus\n"
    "communication at 10 and 100 Gbit/s with --latency, for P = 1 .. 1024 and\n"
    "N = --n and 10^4 .. 10^8:\n"
    "  all-reduce (recursive doubling)  log2(P) (a + m/B)     m = H d_k (d_v + 1) e bytes\n"
    "  exclusive scan                   log2(P) (a + m/B)\n"
    "  all-gather (Bruck)               log2(P) a + (P - 1) m/B\n"
    "  ring attention                   c + (P - 1) max(c, a + s/B)   s = H (N/P)(d_k + d_v) e,\n"
    "                                   c = one slice pair's compute\n"
    "Run under mpirun: mpirun -np 4 linattn dist-scaling. Float32, one thread per rank.\n"
    "\n"
    "options (default in brackets):\n"
    "  --out FILE           the measurements [dist_scaling.csv]\n"
    "  --model-out FILE     the model [dist_model.csv]\n"
    "  --n N                strong scaling: the sequence length [4096]\n"
    "  --n-per-rank N       weak scaling: tokens per rank [1024]\n"
    "  --d D                d_k = d_v [64]\n"
    "  --heads H            heads (batch 1) [1]\n"
    "  --reps R             timed repetitions per point, after one warm-up [5]\n"
    "  --latency S          the model's per-message latency, seconds [2e-06]\n"
    "\n"
    "exit status: 0 done, 1 a kernel failed, 2 bad flags (one line on rank 0's stderr).\n"
    "Without MPI (a build without make MPI=1): exit 2.\n"
    "\n"
    "example:\n"
    "  mpirun -np 4 --oversubscribe build/linattn dist-scaling --n 4096\n";

void cmd_dist_scaling_help(FILE *out)
{
    fputs(help_text, out);
}

#ifndef LA_WITH_MPI
int cmd_dist_scaling(int argc, char **argv)
{
    (void)argc, (void)argv;
    return cli_fail("dist-scaling", "this linattn was built without MPI: build it with make MPI=1");
}
#else
#include "common/inputs.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/record.h"
#include "linattn_mpi.h"

#include <math.h>

/* The measured series. */
enum { K_LINEAR, K_EXSCAN, K_ALLGATHER, K_RING, K_RING_CAUSAL, K_COUNT };
static const char *const kernel_names[K_COUNT] = {"linear", "linear_causal_exscan",
                                                  "linear_causal_allgather", "softmax_ring",
                                                  "softmax_ring_causal"};

typedef struct {
    size_t n_strong, n_per_rank, d, heads, reps;
    double latency;
    const char *out, *model_out;
} ds_config;

typedef struct {
    double median_s, min_s, comm_s, total_s; /* the slowest rank's per call */
    double bytes_max, bytes_rank0, messages;
    la_status status;
} ds_point;

static la_status run_kernel(int kernel, MPI_Comm comm, const la_problem *p, const float *q,
                            const float *k, const float *v, float *out, la_dist_stats *s)
{
    la_problem pc = *p;
    pc.causal = kernel == K_EXSCAN || kernel == K_ALLGATHER || kernel == K_RING_CAUSAL;
    if (kernel == K_RING || kernel == K_RING_CAUSAL)
        return la_dist_softmax_attention_f32(comm, &pc, q, k, v, out, s);
    return la_dist_linear_attention_f32(
        comm, &pc, kernel == K_ALLGATHER ? LA_DIST_ALLGATHER : LA_DIST_EXSCAN, q, k, v, out, s);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One point on comm (every rank of it calls): n tokens split evenly, a warm-up and reps
 * timed calls. */
static ds_point measure(const ds_config *c, int kernel, MPI_Comm comm, size_t n)
{
    ds_point pt = {0};
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    size_t off, mine;
    la_dist_partition(n, ranks, rank, &off, &mine);
    const size_t H = c->heads, d = c->d;
    float *q = malloc(H * mine * d * sizeof *q), *k = malloc(H * mine * d * sizeof *k);
    float *v = malloc(H * mine * d * sizeof *v), *y = malloc(H * mine * d * sizeof *y);
    double *times = malloc(c->reps * sizeof *times);
    int ok = q && k && v && y && times, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        pt.status = LA_ENOMEM;
        goto done;
    }
    inputs_rng g = inputs_rng_for((uint64_t)rank + 1, "dist-scaling");
    inputs_fill_normal_f32(&g, q, H * mine * d, 1);
    inputs_fill_normal_f32(&g, k, H * mine * d, 1);
    inputs_fill_normal_f32(&g, v, H * mine * d, 1);
    la_problem p;
    la_problem_init(&p, 1, H, mine, mine, d, d);
    la_dist_stats s;
    pt.status = run_kernel(kernel, comm, &p, q, k, v, y, &s); /* warm-up */
    double comm_sum = 0, total_sum = 0;
    for (size_t r = 0; r < c->reps && pt.status == LA_OK; r++) {
        MPI_Barrier(comm);
        pt.status = run_kernel(kernel, comm, &p, q, k, v, y, &s);
        double mine_t[2] = {s.total_seconds, s.comm_seconds}, max_t[2];
        MPI_Allreduce(mine_t, max_t, 2, MPI_DOUBLE, MPI_MAX, comm);
        times[r] = max_t[0];
        total_sum += s.total_seconds;
        comm_sum += s.comm_seconds;
    }
    if (pt.status == LA_OK) {
        qsort(times, c->reps, sizeof *times, cmp_double);
        pt.median_s = times[c->reps / 2];
        pt.min_s = times[0];
        /* the share of time in MPI: summed over the ranks and repetitions */
        double sums[2] = {comm_sum, total_sum}, all[2];
        MPI_Allreduce(sums, all, 2, MPI_DOUBLE, MPI_SUM, comm);
        pt.comm_s = all[0] / (double)ranks / (double)c->reps;
        pt.total_s = all[1] / (double)ranks / (double)c->reps;
        double b = (double)s.bytes_sent;
        MPI_Allreduce(&b, &pt.bytes_max, 1, MPI_DOUBLE, MPI_MAX, comm);
        pt.bytes_rank0 = b;
        MPI_Bcast(&pt.bytes_rank0, 1, MPI_DOUBLE, 0, comm);
        pt.messages = (double)s.messages;
    }
done:
    free(q), free(k), free(v), free(y), free(times);
    return pt;
}

/* ---------------------------------------------------------------- the model */

/* The communication of one call on P ranks, a link of bw bytes/s and latency a, per the
 * formulas in the help; e bytes per element. Ring attention overlaps each step's
 * transfer with the kernel on the slice in hand: c_step is one slice pair's compute. */
static double model_comm(int kernel, double P, double n, double d, double H, double e, double a,
                         double bw)
{
    if (P <= 1) return 0;
    const double lg = ceil(log2(P)), m = H * d * (d + 1) * e;
    switch (kernel) {
    case K_LINEAR:
    case K_EXSCAN: return lg * (a + m / bw);
    case K_ALLGATHER: return lg * a + (P - 1) * m / bw;
    default: return (P - 1) * (a + H * (n / P) * 2 * d * e / bw);
    }
}

/* The model's time per call: compute per rank from the measured cost per token (linear)
 * or per (query, key) pair (softmax), plus the communication; the ring overlaps. */
static double model_time(int kernel, double P, double n, double d, double H, double per_unit,
                         double a, double bw, double *compute, double *comm)
{
    const double e = 4;
    *comm = model_comm(kernel, P, n, d, H, e, a, bw);
    if (kernel == K_RING || kernel == K_RING_CAUSAL) {
        const double step = per_unit * (n / P) * (n / P); /* one slice pair */
        const double xfer = P > 1 ? *comm / (P - 1) : 0;
        const double wait = step > xfer ? step : xfer;
        /* non-causal: P slices, the first in hand; causal: the last rank's P − 1 earlier
         * slices and half of its own (the others finish sooner) */
        *compute = kernel == K_RING ? P * step : (P - 0.5) * step;
        return kernel == K_RING ? step + (P - 1) * wait : 0.5 * step + (P - 1) * wait;
    }
    *compute = per_unit * n / P;
    return *compute + *comm;
}

static int write_model(const ds_config *c, const double *per_unit, int argc, char **argv)
{
    char err[256];
    record_file *f = record_open(c->model_out, "dist_model",
                                 "predicted time per call: measured compute per rank + modelled "
                                 "communication (linattn help dist-scaling)",
                                 "link_gbit_s,latency_s,kernel,ranks,n,d,heads,compute_s,comm_s,"
                                 "time_s,comm_share,bytes_sent_per_rank,unit_cost_s",
                                 5, 0, argc, argv, err, sizeof err);
    if (!f) return cli_fail(c->model_out, "%s", err);
    static const double links[] = {10, 100};
    static const double ns[] = {1e4, 1e5, 1e6, 1e7, 1e8};
    int rc = 0;
    const double d = (double)c->d, H = (double)c->heads;
    for (size_t l = 0; l < 2; l++)
        for (int kd = 0; kd < K_COUNT; kd++)
            for (size_t i = 0; i < sizeof ns / sizeof *ns + 1; i++) {
                const double n = i == 0 ? (double)c->n_strong : ns[i - 1];
                for (double P = 1; P <= 1024; P *= 2) {
                    if (P > n) break;
                    double comp, comm;
                    const double bw = links[l] * 1e9 / 8;
                    const double t =
                        model_time(kd, P, n, d, H, per_unit[kd], c->latency, bw, &comp, &comm);
                    const double bytes = P <= 1 ? 0
                                         : kd == K_RING || kd == K_RING_CAUSAL
                                             ? (P - 1) * H * ceil(n / P) * 2 * d * 4
                                             : H * d * (d + 1) * 4;
                    rc |= record_row(f, "%g,%g,%s,%.0f,%.0f,%zu,%zu,%.6e,%.6e,%.6e,%.4f,%.0f,%.6e",
                                     links[l], c->latency, kernel_names[kd], P, n, c->d, c->heads,
                                     comp, comm, t, t > 0 ? (t - comp > 0 ? t - comp : 0) / t : 0,
                                     bytes, per_unit[kd]);
                }
            }
    return record_close(f) != 0 || rc ? cli_fail(c->model_out, "cannot write") : 0;
}

/* ---------------------------------------------------------------- the command */

static int parse(int argc, char **argv, ds_config *c)
{
    const char *n = NULL, *npr = NULL, *d = NULL, *h = NULL, *reps = NULL, *lat = NULL;
    const cli_flag flags[] = {
        {"out", &c->out, NULL}, {"model-out", &c->model_out, NULL},
        {"n", &n, NULL},        {"n-per-rank", &npr, NULL},
        {"d", &d, NULL},        {"heads", &h, NULL},
        {"reps", &reps, NULL},  {"latency", &lat, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    struct {
        const char *flag, *text;
        size_t *out;
    } sizes[] = {{"--n", n, &c->n_strong},
                 {"--n-per-rank", npr, &c->n_per_rank},
                 {"--d", d, &c->d},
                 {"--heads", h, &c->heads},
                 {"--reps", reps, &c->reps}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (sizes[i].text && (rc = cli_parse_size(sizes[i].flag, sizes[i].text, sizes[i].out)))
            return rc;
        if (*sizes[i].out < 1) return cli_fail(sizes[i].flag, "must be at least 1");
    }
    if (lat && (rc = cli_parse_double("--latency", lat, &c->latency))) return rc;
    if (c->latency < 0) return cli_fail("--latency", "must be >= 0");
    if (c->d > 4096 || c->heads > 1024 || c->reps > 1000)
        return cli_fail("dist-scaling", "--d at most 4096, --heads 1024, --reps 1000");
    return 0;
}

static int run(int argc, char **argv, int rank, int world)
{
    ds_config c = {4096, 1024, 64, 1, 5, 2e-6, "dist_scaling.csv", "dist_model.csv"};
    int rc = parse(argc, argv, &c);
    /* the flags: every rank's verdict, agreed before any other collective (ranks started
     * with different arguments all end, none waits); the file: rank 0's */
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst && !rc)
        return cli_fail("dist-scaling", "another rank refused its flags (the ranks were given "
                                        "different arguments)");
    if (rc) return rc;
    record_file *f = NULL;
    if (!rc && rank == 0) {
        char err[256];
        memory_init();
        machine_check();
        f = record_open(c.out, "dist_scaling",
                        "distributed attention over MPI: time per call, bytes sent per rank, "
                        "share of time in MPI, against ranks",
                        "mode,kernel,ranks,n,n_per_rank,d,heads,precision,median_s,min_s,comm_s,"
                        "comm_share,bytes_sent_per_rank,bytes_sent_max,messages,status",
                        4, 0, argc, argv, err, sizeof err);
        if (!f) rc = cli_fail(c.out, "%s", err);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc) return rc;
    la_set_num_threads(1);

    /* P = 1, 2, 4, ...: the first P ranks of the world */
    double per_unit[K_COUNT] = {0};
    int failed = 0;
    for (int P = 1; P <= world; P *= 2) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, rank < P ? 0 : MPI_UNDEFINED, rank, &comm);
        for (int mode = 0; mode < 2; mode++) {
            const size_t n = mode == 0 ? c.n_strong : c.n_per_rank * (size_t)P;
            for (int kd = 0; kd < K_COUNT; kd++) {
                ds_point pt = {0};
                if (comm != MPI_COMM_NULL && n >= (size_t)P) pt = measure(&c, kd, comm, n);
                if (rank != 0) continue;
                if (n < (size_t)P) continue;
                const char *st = pt.status == LA_OK ? "ok" : la_strerror(pt.status);
                failed |= pt.status != LA_OK;
                fprintf(stderr, "dist-scaling: %s %s P=%d N=%zu: %.4g s (%.0f%% in MPI)\n",
                        mode == 0 ? "strong" : "weak", kernel_names[kd], P, n, pt.median_s,
                        pt.total_s > 0 ? 100 * pt.comm_s / pt.total_s : 0);
                if (record_row(
                        f, "%s,%s,%d,%zu,%zu,%zu,%zu,float32,%.6e,%.6e,%.6e,%.4f,%.0f,%.0f,%.0f,%s",
                        mode == 0 ? "strong" : "weak", kernel_names[kd], P, n, n / (size_t)P, c.d,
                        c.heads, pt.median_s, pt.min_s, pt.comm_s,
                        pt.total_s > 0 ? pt.comm_s / pt.total_s : 0, pt.bytes_rank0, pt.bytes_max,
                        pt.messages, st) != 0)
                    failed = 1;
                /* the model's unit cost: from P = 1 at the strong N, the fastest
                 * repetition (the least disturbed by other processes) (per token for
                 * linear, per (query, key) pair for softmax; causal softmax's pairs are
                 * counted as N²/2) */
                if (P == 1 && mode == 0 && pt.status == LA_OK) {
                    const double nn = (double)n;
                    per_unit[kd] = kd == K_RING          ? pt.min_s / (nn * nn)
                                   : kd == K_RING_CAUSAL ? pt.min_s / (nn * nn / 2)
                                                         : pt.min_s / nn;
                }
            }
        }
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        if (record_close(f) != 0) failed = 1;
        /* causal ring: the model's pair cost is the non-causal one (same kernel) */
        if (!failed && (rc = write_model(&c, per_unit, argc, argv)) == 0)
            fprintf(stderr, "dist-scaling: wrote %s and %s\n", c.out, c.model_out);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc ? rc : failed ? 1 : 0;
}

int cmd_dist_scaling(int argc, char **argv)
{
    int rank = 0, world = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (rank != 0 && !freopen("/dev/null", "w", stderr)) fclose(stderr);
    int rc = run(argc, argv, rank, world);
    MPI_Finalize();
    return rc;
}
#endif
