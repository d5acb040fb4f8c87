/* test_dist.c — the distributed kernels (lib/linattn_mpi.h) against the single-process
 * kernels on the whole sequence, run under mpirun with any number of ranks (make test:
 * -np 1, 2, 3, 4). Every rank draws the same whole Q, K, V from the run's seed (rank 0's,
 * broadcast), runs the single-process kernel on all of it and the distributed one on its
 * slice; ‖y − ref‖/‖ref‖ is summed over the ranks. Even and skewed slices, N not divisible
 * by P, every kernel and both causal-linear forms, both precisions; the bytes each rank
 * sends, exactly; and misuse: every rank returns the same status, nothing written, none
 * hangs. Plain C (not cmocka: every rank must reach every collective); the exit status is
 * the verdict, rank 0 prints "FAIL name: why" per failure. */
#include "attention/kernels.h"
#include "linattn_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int rank, size, failures;

/* A failure seen by any rank is reported once, by rank 0, with the worst rank's value. */
static void expect(int ok_here, const char *name, const char *fmt, double value)
{
    int bad = !ok_here, any = 0;
    double worst = ok_here ? 0 : value, w = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&worst, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        failures++;
        if (rank == 0) {
            printf("FAIL %s (P = %d, seed %llu): ", name, size, (unsigned long long)tu_seed());
            printf(fmt, w);
            printf("\n");
        }
    }
}

typedef enum { K_LINEAR, K_LINEAR_EXSCAN, K_LINEAR_ALLGATHER, K_SOFTMAX, K_SOFTMAX_CAUSAL } kind;
static const char *kind_name[] = {"linear", "linear_causal_exscan", "linear_causal_allgather",
                                  "softmax_ring", "softmax_ring_causal"};

/* The slices: even (la_dist_partition), or skewed (rank r holds about r + 1 parts). */
static void slices(size_t n, int skewed, size_t *offset, size_t *count)
{
    if (!skewed) {
        if (la_dist_partition(n, size, rank, offset, count) != LA_OK) abort();
        return;
    }
    const size_t parts = (size_t)size * (size_t)(size + 1) / 2, spare = n - (size_t)size;
    size_t o = 0;
    for (int r = 0; r <= rank; r++) {
        const size_t c = 1 + spare * (size_t)(r + 1) / parts; /* >= 1 */
        size_t c_last = n - o;                                /* the last rank takes the rest */
        size_t cr = r == size - 1 ? c_last : c;
        if (r == rank) {
            *offset = o;
            *count = cr;
        }
        o += cr;
    }
}

/* ‖y − ref‖² and ‖ref‖² of this rank's rows, summed over the ranks: the relative error
 * (+inf when anything is NaN). ref is the whole output (heads, N, d_v), y the slice's. */
static double rel_error(const double *y, const double *ref, size_t heads, size_t N, size_t off,
                        size_t n, size_t dv)
{
    double sums[2] = {0, 0}, all[2];
    for (size_t h = 0; h < heads; h++)
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < dv; c++) {
                const double a = y[(h * n + i) * dv + c], b = ref[(h * N + off + i) * dv + c];
                sums[0] += (a - b) * (a - b);
                sums[1] += b * b;
            }
    if (isnan(sums[0]) || isinf(sums[0])) sums[0] = INFINITY;
    MPI_Allreduce(sums, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return isfinite(all[0]) ? sqrt(all[0] / all[1]) : INFINITY;
}

/* This rank's slice (heads, n, d) of a whole (heads, N, d) array. */
static void take(const double *whole, double *part, size_t heads, size_t N, size_t off, size_t n,
                 size_t d)
{
    for (size_t h = 0; h < heads; h++)
        memcpy(part + h * n * d, whole + (h * N + off) * d, n * d * sizeof(double));
}

/* One case: the kernel in one precision on one split, checked against the single-process
 * kernel, with the exact bytes each rank sent. */
static void run_case(kind kd, int f64, size_t N, int skewed, size_t chunk)
{
    const size_t B = 2, H = 2, dk = 8, dv = 5, heads = B * H;
    char name[160];
    snprintf(name, sizeof name, "%s %s N=%zu %s chunk=%zu", kind_name[kd], f64 ? "f64" : "f32", N,
             skewed ? "skewed" : "even", chunk);
    size_t off, n;
    slices(N, skewed, &off, &n);
    tu_rng g = tu_rng_for(name);
    double *q = tu_f64(heads * N * dk), *k = tu_f64(heads * N * dk), *v = tu_f64(heads * N * dv);
    tu_fill_normal(&g, q, heads * N * dk, 1);
    tu_fill_normal(&g, k, heads * N * dk, 1);
    tu_fill_normal(&g, v, heads * N * dv, 1);
    const int causal = kd != K_LINEAR && kd != K_SOFTMAX;
    const int softmax = kd == K_SOFTMAX || kd == K_SOFTMAX_CAUSAL;
    const la_dist_scan scan = kd == K_LINEAR_ALLGATHER ? LA_DIST_ALLGATHER : LA_DIST_EXSCAN;
    la_problem whole, part;
    la_problem_init(&whole, B, H, N, N, dk, dv);
    whole.causal = causal;
    whole.chunk = chunk;
    part = whole;
    part.n_queries = part.n_keys = n;

    double *ref = tu_f64(heads * N * dv), *y = tu_f64(heads * n * dv);
    double *qs = tu_f64(heads * n * dk), *ks = tu_f64(heads * n * dk), *vs = tu_f64(heads * n * dv);
    take(q, qs, heads, N, off, n, dk);
    take(k, ks, heads, N, off, n, dk);
    take(v, vs, heads, N, off, n, dv);
    la_dist_stats stats;
    la_status st_ref, st;
    if (f64) {
        st_ref = softmax ? la_softmax_attention_f64(&whole, q, k, v, ref)
                         : la_linear_attention_f64(&whole, q, k, v, ref);
        st = softmax
                 ? la_dist_softmax_attention_f64(MPI_COMM_WORLD, &part, qs, ks, vs, y, &stats)
                 : la_dist_linear_attention_f64(MPI_COMM_WORLD, &part, scan, qs, ks, vs, y, &stats);
    } else {
        float *qf = tu_f32(heads * N * dk), *kf = tu_f32(heads * N * dk),
              *vf = tu_f32(heads * N * dv);
        float *rf = tu_f32(heads * N * dv), *yf = tu_f32(heads * n * dv);
        float *qsf = tu_f32(heads * n * dk), *ksf = tu_f32(heads * n * dk),
              *vsf = tu_f32(heads * n * dv);
        tu_to_f32(q, qf, heads * N * dk);
        tu_to_f32(k, kf, heads * N * dk);
        tu_to_f32(v, vf, heads * N * dv);
        tu_to_f32(qs, qsf, heads * n * dk);
        tu_to_f32(ks, ksf, heads * n * dk);
        tu_to_f32(vs, vsf, heads * n * dv);
        st_ref = softmax ? la_softmax_attention_f32(&whole, qf, kf, vf, rf)
                         : la_linear_attention_f32(&whole, qf, kf, vf, rf);
        st = softmax
                 ? la_dist_softmax_attention_f32(MPI_COMM_WORLD, &part, qsf, ksf, vsf, yf, &stats)
                 : la_dist_linear_attention_f32(MPI_COMM_WORLD, &part, scan, qsf, ksf, vsf, yf,
                                                &stats);
        tu_to_f64(rf, ref, heads * N * dv);
        tu_to_f64(yf, y, heads * n * dv);
        free(qf), free(kf), free(vf), free(rf), free(yf), free(qsf), free(ksf), free(vsf);
    }
    expect(st_ref == LA_OK && st == LA_OK, name, "status %g", (double)(st_ref * 100 + st));
    if (st == LA_OK && st_ref == LA_OK) {
        const double err = rel_error(y, ref, heads, N, off, n, dv), tol = f64 ? 1e-12 : 1e-6;
        expect(err < tol, name, "relative error %.3g, above the tolerance", err);
        if (rank == 0) printf("ok %s: relative error %.3g\n", name, err);

        /* bytes: linear sends its state once; the ring sends every slice but the one it
         * would receive last, (P − 1) slices of K and V */
        const size_t es = f64 ? 8 : 4;
        double expected = 0;
        if (!softmax) {
            expected = size > 1 ? (double)(heads * dk * (dv + 1) * es) : 0;
        } else {
            size_t *counts = tu_alloc((size_t)size * sizeof *counts);
            MPI_Allgather(&n, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, MPI_COMM_WORLD);
            for (int t = 0; t + 1 < size; t++)
                expected += (double)(heads * counts[(rank - t + size) % size] * (dk + dv) * es);
            free(counts);
        }
        expect((double)stats.bytes_sent == expected, name, "bytes sent off the count by %g",
               (double)stats.bytes_sent - expected);
    }
    free(q), free(k), free(v), free(ref), free(y), free(qs), free(ks), free(vs);
}

/* Misuse: every rank returns the same status and writes nothing, even when only one
 * rank's arguments are wrong; none hangs (the test would time out). */
static void misuse(void)
{
    const size_t n = 3, dk = 4, dv = 3;
    la_problem p;
    la_problem_init(&p, 1, 1, n, n, dk, dv);
    double q[12], k[12], v[9], out[9];
    float qf[12], kf[12], vf[9], of[9];
    for (int i = 0; i < 12; i++)
        q[i] = k[i] = qf[i] = kf[i] = (float)(0.1 * i);
    for (int i = 0; i < 9; i++)
        v[i] = vf[i] = (float)(0.2 * i);
    const int last = size - 1;
    la_status st;
    la_dist_stats s;
#define UNTOUCHED(o) (o[0] == -7 && o[8] == -7)
#define RESET() (memset(out, 0, sizeof out), out[0] = out[8] = -7, of[0] = of[8] = -7)

    /* one rank passes NULL queries */
    RESET();
    st = la_dist_linear_attention_f64(MPI_COMM_WORLD, &p, LA_DIST_EXSCAN, rank == last ? NULL : q,
                                      k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: one rank's NULL q", "status %g", st);
    RESET();
    st =
        la_dist_softmax_attention_f32(MPI_COMM_WORLD, &p, qf, kf, vf, rank == last ? NULL : of, &s);
    expect(st == LA_EINVAL && UNTOUCHED(of), "misuse: one rank's NULL out", "status %g", st);

    /* one rank's d_v differs (its problem is valid on its own); with one rank there is
     * nothing to differ from */
    la_problem other = p;
    if (size == 1) goto alone;
    if (rank == last) other.d_v = 2;
    RESET();
    st = la_dist_softmax_attention_f64(MPI_COMM_WORLD, &other, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: shapes differ", "status %g", st);

    /* one rank causal, the others not */
    other = p;
    other.causal = rank == last;
    RESET();
    st =
        la_dist_linear_attention_f32(MPI_COMM_WORLD, &other, LA_DIST_ALLGATHER, qf, kf, vf, of, &s);
    expect(st == LA_EINVAL && UNTOUCHED(of), "misuse: causal differs", "status %g", st);

    /* one rank in float32, the others in float64 */
    RESET();
    st = rank == last ? la_dist_linear_attention_f32(MPI_COMM_WORLD, &p, 0, qf, kf, vf, of, &s)
                      : la_dist_linear_attention_f64(MPI_COMM_WORLD, &p, 0, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out) && UNTOUCHED(of), "misuse: precisions differ",
           "status %g", st);

alone:
    /* key lengths, a bad scan, different queries and keys, a bad problem on one rank */
    int64_t len[1] = {2};
    other = p;
    other.key_lengths = len;
    RESET();
    st = la_dist_softmax_attention_f64(MPI_COMM_WORLD, &other, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: key lengths", "status %g", st);
    other = p;
    other.causal = 1;
    RESET();
    st = la_dist_linear_attention_f64(MPI_COMM_WORLD, &other, (la_dist_scan)7, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: bad scan", "status %g", st);
    other = p;
    other.n_keys = 2;
    RESET();
    st = la_dist_linear_attention_f64(MPI_COMM_WORLD, &other, 0, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: n_keys != n_queries", "status %g", st);
    other = p;
    if (rank == 0) other.eps = -1;
    RESET();
    st = la_dist_linear_attention_f64(MPI_COMM_WORLD, &other, 0, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: a bad problem on rank 0", "status %g", st);
    RESET();
    st = la_dist_linear_attention_f64(MPI_COMM_WORLD, NULL, 0, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: NULL problem", "status %g", st);

    /* a workspace budget too small for the ring's buffers: EBUDGET on every rank */
    other = p;
    other.workspace_limit = 16;
    RESET();
    st = la_dist_softmax_attention_f64(MPI_COMM_WORLD, &other, q, k, v, out, NULL);
    expect(st == LA_EBUDGET && UNTOUCHED(out), "misuse: budget", "status %g", st);

    /* values the slice kernel refuses (LA_ERANGE) on one rank only: agreed at the end */
    float huge[12];
    for (int i = 0; i < 12; i++)
        huge[i] = 1e38f;
    RESET();
    st =
        la_dist_softmax_attention_f32(MPI_COMM_WORLD, &p, rank == last ? huge : qf, kf, vf, of, &s);
    expect(st == LA_ERANGE && UNTOUCHED(of), "misuse: one rank's slice refused", "status %g", st);

    /* linear attention on values float32 cannot hold, on one rank only: LA_ERANGE on all
     * (causal: the scan of every rank's largest |q|, |k|, |v|; non-causal: the summed
     * state, 3e37 per key) */
    other = p;
    other.causal = 1;
    RESET();
    st = la_dist_linear_attention_f32(MPI_COMM_WORLD, &other, LA_DIST_EXSCAN,
                                      rank == last ? huge : qf, kf, vf, of, &s);
    expect(st == LA_ERANGE && UNTOUCHED(of), "misuse: causal linear out of range", "status %g", st);
    for (int i = 0; i < 12; i++)
        huge[i] = 3e37f;
    RESET();
    st = la_dist_linear_attention_f32(MPI_COMM_WORLD, &p, LA_DIST_EXSCAN, qf,
                                      rank == last ? huge : kf, vf, of, &s);
    expect(st == LA_ERANGE && UNTOUCHED(of), "misuse: linear state out of range", "status %g", st);

    /* no communicator; the partition's own misuse */
    RESET();
    st = la_dist_softmax_attention_f64(MPI_COMM_NULL, &p, q, k, v, out, &s);
    expect(st == LA_EINVAL && UNTOUCHED(out), "misuse: MPI_COMM_NULL", "status %g", st);
    size_t o, c;
    expect(la_dist_partition(3, 4, 0, &o, &c) == LA_EINVAL &&
               la_dist_partition(8, 2, 2, &o, &c) == LA_EINVAL &&
               la_dist_partition(8, 0, 0, &o, &c) == LA_EINVAL &&
               la_dist_partition(8, 2, 0, NULL, &c) == LA_EINVAL,
           "misuse: la_dist_partition", "%g", 0);
    expect(la_dist_partition(10, 4, 1, &o, &c) == LA_OK && o == 3 && c == 3 &&
               la_dist_partition(10, 4, 3, &o, &c) == LA_OK && o == 8 && c == 2,
           "la_dist_partition 10 over 4", "%g", 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* every rank draws from rank 0's seed */
    unsigned long long seed = 0;
    if (rank == 0) seed = tu_init("test_dist");
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank != 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%llu", seed);
        setenv("LA_TEST_SEED", buf, 1);
        FILE *quiet = freopen("/dev/null", "w", stdout); /* only rank 0 speaks */
        (void)quiet;
        tu_init("test_dist");
    }

    const size_t sizes[] = {(size_t)size, 7, 37, 130};
    for (int f64 = 0; f64 <= 1; f64++)
        for (int kd = K_LINEAR; kd <= K_SOFTMAX_CAUSAL; kd++)
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
                if (sizes[i] < (size_t)size) continue;
                run_case((kind)kd, f64, sizes[i], 0, 4);
                run_case((kind)kd, f64, sizes[i], 1, 3);
            }
    misuse();
    if (rank == 0) printf("test_dist, %d ranks: %d failed\n", size, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
