/* dist_attend.c — `linattn dist-attend`: `attend` spread over MPI ranks (sequence
 * parallel, lib/linattn_mpi.h), run as `mpirun -np P linattn dist-attend ...`.
 *
 * Rank 0 reads Q, K, V, checks them and scatters each rank its contiguous slice of the
 * sequence (the even split, la_dist_partition); the ranks run the distributed kernel;
 * rank 0 gathers the output and writes it atomically (la_npy_write through la_outfile),
 * the same file `linattn attend` writes, to rounding. Every verdict is agreed (rank 0
 * broadcasts its own, the kernels agree on theirs): on bad input every rank exits 2,
 * rank 0 alone prints the one line (the other ranks' stderr is closed), none hangs and
 * no file appears. Built with MPI only by `make MPI=1` (-DLA_WITH_MPI); otherwise the
 * subcommand says how to get it and exits 2. */
#include "commands.h"
#include "common/arrays.h"
#include "common/cli.h"
#include "io/outfile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: mpirun -np P linattn dist-attend --variant softmax|linear --q Q.npy --k K.npy\n"
    "                  --v V.npy --out Y.npy [--causal] [options]\n"
    "\n"
    "Runs softmax (ring) or linear attention over MPI ranks, each holding a slice of the\n"
    "sequence, and writes the output `linattn attend` writes for the same flags (to\n"
    "rounding). Run under mpirun: mpirun -np P linattn dist-attend ... (P <= N).\n"
    "Q is (N, d_k), (H, N, d_k) or (B, H, N, d_k); K, V the same leading dims and N rows\n"
    "(self-attention: M = N). Rank 0 reads the files and scatters the slices; rank 0\n"
    "gathers and writes the output atomically: on any error no file appears.\n"
    "\n"
    "required:\n"
    "  --variant V          softmax (ring attention) or linear\n"
    "  --q Q.npy, --k K.npy, --v V.npy   the inputs\n"
    "  --out Y.npy          the output\n"
    "\n"
    "options (default in brackets):\n"
    "  --causal             query i sees keys j <= i [off]\n"
    "  --precision P        float32 or float64 [float32]\n"
    "  --scale S            softmax: logits q·k · S [1/sqrt(d_k)]\n"
    "  --feature-map F      linear: elu or relu [elu]\n"
    "  --eps E              linear: y = num / (den + E) [1e-06]\n"
    "  --chunk C            linear, causal: tokens per chunk [32]\n"
    "  --scan S             linear, causal: exscan (MPI_Exscan of the states) or\n"
    "                       allgather (LASP-2: one MPI_Allgather) [exscan]\n"
    "  --threads T          OpenMP threads per rank [LA_NUM_THREADS, else all cores]\n"
    "\n"
    "exit status: 0 done, 2 bad flags or inputs, on every rank (one line on rank 0's\n"
    "stderr: linattn: WHAT: why). Without MPI (a build without make MPI=1): exit 2.\n"
    "\n"
    "example:\n"
    "  mpirun -np 4 build/linattn dist-attend --variant linear --causal \\\n"
    "      --q q.npy --k k.npy --v v.npy --out y.npy\n";

void cmd_dist_attend_help(FILE *out)
{
    fputs(help_text, out);
}

#ifndef LA_WITH_MPI
int cmd_dist_attend(int argc, char **argv)
{
    (void)argc, (void)argv;
    return cli_fail("dist-attend", "this linattn was built without MPI: build it with make MPI=1");
}
#else
#include "linattn_mpi.h"

static const char *const precision_names[] = {"float32", "float64", NULL};
static const char *const variant_names[] = {"softmax", "linear", NULL};
static const char *const scan_names[] = {"exscan", "allgather", NULL};

typedef struct {
    const char *variant, *q, *k, *v, *out, *precision, *scale, *feature_map, *eps, *chunk, *scan,
        *threads;
    int causal;
} dist_args;

/* Rank 0's reading: the three arrays in the precision, their shapes checked (attend's
 * rules, and M = N >= P). Returns 0 or 2 (one line printed). */
static int read_inputs(const dist_args *a, la_dtype dtype, int ranks, la_array *q, la_array *k,
                       la_array *v)
{
    char s1[160], s2[160];
    int rc;
    if ((rc = arrays_read_floats(a->q, dtype, q)) || (rc = arrays_read_floats(a->k, dtype, k)) ||
        (rc = arrays_read_floats(a->v, dtype, v)))
        return rc;
    const int nd = q->ndim;
    if (nd < 2 || nd > 4)
        return cli_fail(a->q, "shape %s must be (N, d), (H, N, d) or (B, H, N, d)",
                        arrays_shape_str(q, s1, sizeof s1));
    const char *paths[] = {a->k, a->v};
    const la_array *arrays[] = {k, v};
    for (int i = 0; i < 2; i++) {
        if (arrays[i]->ndim != nd)
            return cli_fail(paths[i], "shape %s has %d dims, Q %s has %d",
                            arrays_shape_str(arrays[i], s1, sizeof s1), arrays[i]->ndim,
                            arrays_shape_str(q, s2, sizeof s2), nd);
        for (int d = 0; d < nd - 1; d++)
            if (arrays[i]->shape[d] != q->shape[d])
                return cli_fail(paths[i], "shape %s: leading dims and N must be Q's %s",
                                arrays_shape_str(arrays[i], s1, sizeof s1),
                                arrays_shape_str(q, s2, sizeof s2));
    }
    if (k->shape[nd - 1] != q->shape[nd - 1])
        return cli_fail(a->k, "d_k = %zu differs from Q's d_k = %zu", k->shape[nd - 1],
                        q->shape[nd - 1]);
    for (int d = 0; d < nd; d++)
        if (q->shape[d] == 0 || v->shape[d] == 0)
            return cli_fail(q->shape[d] == 0 ? a->q : a->v, "a zero dimension");
    if (q->shape[nd - 2] < (size_t)ranks)
        return cli_fail(a->q, "N = %zu tokens for %d ranks: each rank needs one", q->shape[nd - 2],
                        ranks);
    return 0;
}

/* Packs a (heads, N, d) array rank by rank, (heads, n_r, d) each, or unpacks it. */
static void pack(const char *whole, char *packed, size_t heads, size_t N, size_t d, size_t es,
                 int ranks, int unpack)
{
    size_t o = 0, at = 0, n = 0;
    for (int r = 0; r < ranks; r++) {
        la_dist_partition(N, ranks, r, &o, &n);
        for (size_t h = 0; h < heads; h++) {
            const size_t bytes = n * d * es, w = (h * N + o) * d * es;
            if (unpack)
                memcpy((char *)whole + w, packed + at, bytes);
            else
                memcpy(packed + at, whole + w, bytes);
            at += bytes;
        }
    }
}

/* The per-rank element counts and displacements of a (heads, N, d) array. */
static int counts_of(size_t heads, size_t N, size_t d, int ranks, int *counts, int *displs)
{
    size_t o, n, at = 0;
    for (int r = 0; r < ranks; r++) {
        la_dist_partition(N, ranks, r, &o, &n);
        if (heads * n * d > (size_t)INT_MAX || at > (size_t)INT_MAX) return 0;
        counts[r] = (int)(heads * n * d);
        displs[r] = (int)at;
        at += heads * n * d;
    }
    return 1;
}

/* The flags' values (step 1), checked on every rank. */
typedef struct {
    int variant, precision, scan;
    double scale, eps;
    size_t chunk;
    la_feature_map fm;
} dist_opts;

/* Step 1: the flags. Returns 0 or 2 (one line). */
static int check_flags(const dist_args *a, dist_opts *o)
{
    if (!a->variant || !a->q || !a->k || !a->v || !a->out)
        return cli_fail(!a->variant ? "--variant"
                        : !a->q     ? "--q"
                        : !a->k     ? "--k"
                        : !a->v     ? "--v"
                                    : "--out",
                        "required flag is missing (see linattn help dist-attend)");
    int rc;
    *o = (dist_opts){0, 0, 0, 0, LA_DEFAULT_EPS, LA_DEFAULT_CHUNK, LA_FEATURE_ELU1};
    if ((rc = cli_parse_choice("--variant", a->variant, variant_names, &o->variant))) return rc;
    if (a->precision &&
        (rc = cli_parse_choice("--precision", a->precision, precision_names, &o->precision)))
        return rc;
    if (a->scan && (rc = cli_parse_choice("--scan", a->scan, scan_names, &o->scan))) return rc;
    if ((rc = cli_parse_threads("--threads", a->threads))) return rc;
    if (a->scale && (rc = cli_parse_double("--scale", a->scale, &o->scale))) return rc;
    if (a->eps && (rc = cli_parse_double("--eps", a->eps, &o->eps))) return rc;
    if (o->eps < 0) return cli_fail("--eps", "must be >= 0");
    if (a->chunk && (rc = cli_parse_size("--chunk", a->chunk, &o->chunk))) return rc;
    if (o->chunk < 1) return cli_fail("--chunk", "must be at least 1");
    if (a->feature_map && la_feature_map_parse(a->feature_map, &o->fm) != LA_OK) {
        char hint[160];
        return cli_fail("--feature-map", "'%s' is not one of elu, relu%s", a->feature_map,
                        cli_did_you_mean(a->feature_map, "elu, relu", hint, sizeof hint));
    }
    return 0;
}

static int run(const dist_args *a, const dist_opts *o, int rank, int ranks)
{
    int rc;
    const int variant = o->variant, precision = o->precision, scan = o->scan;
    const double scale = o->scale, eps = o->eps;
    const size_t chunk = o->chunk;
    const la_feature_map fm = o->fm;
    const la_dtype dtype = precision == 0 ? LA_FLOAT32 : LA_FLOAT64;
    const size_t es = dtype == LA_FLOAT32 ? 4 : 8;
    const MPI_Datatype mt = dtype == LA_FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;

    /* step 2: rank 0 reads and checks; its verdict and the sizes go to every rank */
    la_array q = {0}, k = {0}, v = {0}, y = {0};
    unsigned long long head[6] = {0}; /* rc, batch, heads, N, d_k, d_v */
    int *counts = malloc(4 * (size_t)ranks * sizeof *counts);
    if (rank == 0) {
        rc = counts ? read_inputs(a, dtype, ranks, &q, &k, &v)
                    : cli_fail("dist-attend", "%s", la_strerror(LA_ENOMEM));
        if (!rc) {
            const int nd = q.ndim;
            head[1] = nd == 4 ? q.shape[0] : 1;
            head[2] = nd >= 3 ? q.shape[nd - 3] : 1;
            head[3] = q.shape[nd - 2];
            head[4] = q.shape[nd - 1];
            head[5] = v.shape[nd - 1];
            y.dtype = q.dtype;
            y.ndim = nd;
            memcpy(y.shape, q.shape, sizeof y.shape);
            y.shape[nd - 1] = head[5];
            y.count = head[1] * head[2] * head[3] * head[5];
        }
        head[0] = (unsigned long long)rc;
    }
    MPI_Bcast(head, 6, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rc = (int)head[0];
    const size_t batch = head[1], heads = head[2], N = head[3], dk = head[4], dv = head[5];
    const size_t bh = batch * heads;
    size_t offset = 0, n = 0;
    la_dist_partition(N, ranks, rank, &offset, &n);

    /* step 3: this rank's buffers, and the slices scattered (agreed before any moves) */
    int *cq = counts, *dq = counts + ranks, *cv = counts + 2 * ranks, *dvs = counts + 3 * ranks;
    char *qs = NULL, *ks = NULL, *vs = NULL, *ys = NULL, *packed = NULL;
    int ok = !rc && counts;
    if (ok) {
        ok = counts_of(bh, N, dk, ranks, cq, dq) && counts_of(bh, N, dv, ranks, cv, dvs);
        qs = malloc(bh * n * dk * es);
        ks = malloc(bh * n * dk * es);
        vs = malloc(bh * n * dv * es);
        ys = malloc(bh * n * dv * es);
        if (rank == 0) packed = malloc(bh * N * (dk > dv ? dk : dv) * es);
        ok = ok && qs && ks && vs && ys && (rank != 0 || packed);
    }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!rc && !all_ok) rc = cli_fail("dist-attend", "%s", la_strerror(LA_ENOMEM));
    la_status st = LA_OK;
    if (!rc) {
        const la_array *in[3] = {&q, &k, &v};
        char *slices[3] = {qs, ks, vs};
        for (int i = 0; i < 3; i++) {
            const size_t d = i < 2 ? dk : dv;
            if (rank == 0) pack(in[i]->data, packed, bh, N, d, es, ranks, 0);
            MPI_Scatterv(packed, i < 2 ? cq : cv, i < 2 ? dq : dvs, mt, slices[i],
                         (int)(bh * n * d), mt, 0, MPI_COMM_WORLD);
        }
        /* step 4: the distributed kernel, its status agreed by every rank */
        la_problem p;
        la_problem_init(&p, batch, heads, n, n, dk, dv);
        p.causal = a->causal;
        if (a->scale) p.scale = scale;
        p.feature_map = fm;
        p.eps = eps;
        p.chunk = chunk;
        if (variant == 0)
            st = dtype == LA_FLOAT32
                     ? la_dist_softmax_attention_f32(MPI_COMM_WORLD, &p, (float *)qs, (float *)ks,
                                                     (float *)vs, (float *)ys, NULL)
                     : la_dist_softmax_attention_f64(MPI_COMM_WORLD, &p, (double *)qs, (double *)ks,
                                                     (double *)vs, (double *)ys, NULL);
        else
            st = dtype == LA_FLOAT32
                     ? la_dist_linear_attention_f32(MPI_COMM_WORLD, &p, (la_dist_scan)scan,
                                                    (float *)qs, (float *)ks, (float *)vs,
                                                    (float *)ys, NULL)
                     : la_dist_linear_attention_f64(MPI_COMM_WORLD, &p, (la_dist_scan)scan,
                                                    (double *)qs, (double *)ks, (double *)vs,
                                                    (double *)ys, NULL);
        if (st == LA_ERANGE && dtype == LA_FLOAT32)
            rc = cli_fail("dist-attend", "values overflow float32: use --precision float64");
        else if (st != LA_OK)
            rc = cli_fail("dist-attend", "%s", la_strerror(st));
    }
    /* step 5: gathered on rank 0 and written atomically; its verdict is everyone's */
    if (!rc) {
        MPI_Gatherv(ys, (int)(bh * n * dv), mt, packed, cv, dvs, mt, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            y.data = malloc(y.count * es);
            if (!y.data) {
                rc = cli_fail("dist-attend", "%s", la_strerror(LA_ENOMEM));
            } else {
                pack(y.data, packed, bh, N, dv, es, ranks, 1);
                rc = arrays_write_npy(a->out, &y);
            }
        }
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    free(qs), free(ks), free(vs), free(ys), free(packed), free(counts);
    la_array_free(&q);
    la_array_free(&k);
    la_array_free(&v);
    la_array_free(&y);
    return rc ? 2 : 0;
}

int cmd_dist_attend(int argc, char **argv)
{
    dist_args a;
    memset(&a, 0, sizeof a);
    const cli_flag flags[] = {
        {"variant", &a.variant, NULL},
        {"q", &a.q, NULL},
        {"k", &a.k, NULL},
        {"v", &a.v, NULL},
        {"out", &a.out, NULL},
        {"causal", NULL, &a.causal},
        {"precision", &a.precision, NULL},
        {"scale", &a.scale, NULL},
        {"feature-map", &a.feature_map, NULL},
        {"eps", &a.eps, NULL},
        {"chunk", &a.chunk, NULL},
        {"scan", &a.scan, NULL},
        {"threads", &a.threads, NULL},
        {NULL, NULL, NULL},
    };
    int rank = 0, ranks = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    /* one line from rank 0: the others reach the same verdicts silently */
    if (rank != 0 && !freopen("/dev/null", "w", stderr)) fclose(stderr);
    dist_opts o;
    int rc = cli_parse_flags(argc, argv, flags);
    if (!rc) rc = check_flags(&a, &o);
    /* every rank's verdict on its flags, agreed before any other collective: ranks started
     * with different arguments (mpirun's `:`) all end, none waits in a collective */
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst && !rc)
        rc = cli_fail("dist-attend", "another rank refused its flags (the ranks were given "
                                     "different arguments)");
    if (!rc) rc = run(&a, &o, rank, ranks);
    MPI_Finalize();
    return rc;
}
#endif
