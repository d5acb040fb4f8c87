/* gemm.c — the one door to BLIS: typed gemm with strides, single-threaded per call
 * (la_gemm_threaded_*, for the layers' large products, and la_blis_sgemm, the
 * benchmark's yardstick, excepted), on the best kernels BLIS has for this CPU. */
#include "core/internal.h"

#include <blis.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Each call runs on one thread: the kernels parallelize over (batch, head, block)
 * themselves, which keeps the split, and so the rounding, independent of the thread
 * count. */
static rntm_t single_thread(void)
{
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    return rntm;
}

/* Choosing BLIS's kernels.
 * BLIS picks a sub-configuration (kernels and block sizes) by CPUID when it starts.
 * Debian's BLIS 0.9 does not know CPUs newer than its release (AMD Zen 4 and 5, for
 * one): it then runs its portable "generic" C kernels, 3 to 5 times slower than the
 * CPU allows (measured on this project's AMD EPYC: sgemm 37 GFLOP/s on one core with
 * "generic", 112 with "haswell", 182 with "skx", n = 1024), and its BLIS_ARCH_TYPE
 * override aborts in that release. So when BLIS says "generic" and the CPU has the
 * instructions of a sub-configuration BLIS was built with, we build that context
 * ourselves and pass it to every gemm call. The init functions are in the static
 * libblis.a (which the Makefile links) but not exported by libblis.so: they are
 * declared weak, so against a shared BLIS they are NULL and BLIS's choice stands.
 * The environment variable LA_BLIS_CONFIG overrides the choice: native (BLIS's own),
 * haswell or skx (each only where BLIS was built with it and the CPU can run it). On
 * this machine skx beats haswell for the attention kernels too (linattn bench, N = 4096,
 * 8 heads: fused softmax 0.19-0.22 s against 0.23 s). */
extern void bli_cntx_init_skx(cntx_t *cntx) __attribute__((weak));
extern void bli_cntx_init_haswell(cntx_t *cntx) __attribute__((weak));

static pthread_once_t choose_once = PTHREAD_ONCE_INIT;
static cntx_t chosen_context;
static cntx_t *context;         /* NULL: BLIS's own choice */
static const char *config_name; /* what la_blis_config() reports */

/* Whether the CPU can run a sub-configuration's kernels. */
static int cpu_has_skx(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}
static int cpu_has_haswell(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static void use(void (*init)(cntx_t *), const char *name)
{
    init(&chosen_context);
    context = &chosen_context;
    config_name = name;
}

/* LA_BLIS_CONFIG: "native" (BLIS's choice), "haswell" or "skx" (when BLIS was built with
 * it and the CPU can run it), else automatic: BLIS's choice unless it is "generic". */
static void choose_context(void)
{
    bli_init();
    arch_t native = bli_arch_query_id();
    config_name = bli_arch_string(native);
    __builtin_cpu_init();
    const char *env = getenv("LA_BLIS_CONFIG");
    int want_skx = !env || strcmp(env, "skx") == 0,
        want_haswell = !env || strcmp(env, "haswell") == 0;
    if (env && strcmp(env, "native") == 0) return;
    if (!env && native != BLIS_ARCH_GENERIC) return;
    if (want_skx && bli_cntx_init_skx && cpu_has_skx())
        use(bli_cntx_init_skx, "skx (chosen by linattn)");
    else if (want_haswell && bli_cntx_init_haswell && cpu_has_haswell())
        use(bli_cntx_init_haswell, "haswell (chosen by linattn)");
}

static cntx_t *blis_context(void)
{
    pthread_once(&choose_once, choose_context);
    return context;
}

const char *la_blis_config(void)
{
    pthread_once(&choose_once, choose_context);
    return config_name;
}

/* Reserving BLIS's packing buffers (contract in internal.h).
 * BLIS packs blocks of A and B into buffers from the pools of its packing block allocator
 * (pba), which grow on demand inside a product and call bli_abort(), after printing three
 * lines, when malloc fails. Pools never shrink, so once they hold a block of each kind per
 * thread that can be inside la_gemm at once, no product allocates a packing buffer again.
 * la_gemm_reserve grows them to that before any product runs, after checking with a
 * malloc of its own that the memory is there (plus a margin for BLIS's small control-tree
 * allocations): when it is not, the caller returns LA_ENOMEM having done nothing. */
enum { RESERVE_MARGIN = 1 << 20 };
static pthread_mutex_t reserve_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int reserved_threads; /* the pools hold blocks for this many callers */

la_status la_gemm_reserve(int threads)
{
    if (threads < 1) threads = 1;
    if (atomic_load(&reserved_threads) >= threads) return LA_OK;
    cntx_t *cntx = blis_context();
    if (!cntx) cntx = bli_gks_query_cntx();
    siz_t size[3];
    bli_pba_compute_pool_block_sizes(&size[0], &size[1], &size[2], cntx);
    la_status st = LA_OK;
    pthread_mutex_lock(&reserve_lock);
    pba_t *pba = bli_pba_query();
    bli_pba_lock(pba);
    /* the A and B pools (BLIS's gemm never packs C): what is missing, in bytes */
    size_t missing = RESERVE_MARGIN;
    for (dim_t i = 0; i < 2; i++) {
        pool_t *pool = bli_pba_pool(i, pba);
        size_t block = size[i] > bli_pool_block_size(pool) ? size[i] : bli_pool_block_size(pool),
               have = size[i] > bli_pool_block_size(pool) ? 0 : bli_pool_num_blocks(pool);
        if (have < (size_t)threads)
            missing += ((size_t)threads - have) * (block + bli_pool_align_size(pool));
    }
    void *probe = malloc(missing);
    if (!probe) {
        st = LA_ENOMEM;
    } else {
        free(probe);
        for (dim_t i = 0; i < 2; i++) {
            pool_t *pool = bli_pba_pool(i, pba);
            if (size[i] > bli_pool_block_size(pool))
                bli_pool_reinit((siz_t)threads, bli_pool_block_ptrs_len(pool), size[i],
                                bli_pool_align_size(pool), bli_pool_offset_size(pool), pool);
            else if (bli_pool_num_blocks(pool) < (siz_t)threads)
                bli_pool_grow((siz_t)threads - bli_pool_num_blocks(pool), pool);
        }
        atomic_store(&reserved_threads, threads);
    }
    bli_pba_unlock(pba);
    pthread_mutex_unlock(&reserve_lock);
    return st;
}

/* c = alpha a b + beta c on BLIS, as bli_sgemm_ex, on rntm's threads. */
static void sgemm_blis(rntm_t *rntm, size_t m, size_t n, size_t k, float alpha, const float *a,
                       ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                       float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
                 (float *)a, rsa, csa, (float *)b, rsb, csb, &beta, c, rsc, csc, blis_context(),
                 rntm);
}

/* The same, past a bug of BLIS before 1.0 (Debian's 0.9.0 has it): its haswell "sup"
 * kernels (small products; zen3 and skx use them too) for an edge of 2 columns load 4
 * floats of a row of C where 2 exist when beta != 0 (github.com/flame/blis/issues/635).
 * Past every row of C but the last lies more of C; past the last one may lie an
 * unmapped page: it crashed here under AddressSanitizer, and could in a caller's array
 * that ends at a page. So when the kernels' row of C (a row of a row-stored C, a column
 * of a column-stored one, which BLIS transposes) has such an edge, the last one is
 * computed apart with beta = 0 (no load of C) into a buffer, 256 columns at a time, and
 * added as the kernel adds it, fma(beta, c, alpha·ab). That is the kernel's bits only
 * where BLIS's one-row product sums in the order of its many-row one: zen3's does,
 * haswell's (a CPU without AVX-512) does not, so a caller that needs a beta != 0 product
 * to equal a beta = 0 one plus an add forms the latter itself (linear_engine.c). */
static void sgemm(rntm_t *rntm, size_t m, size_t n, size_t k, float alpha, const float *a,
                  ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                  float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0) return;
    if (beta != 0 && csc != 1 && rsc == 1) { /* column-stored C: the transposed product */
        sgemm(rntm, n, m, k, alpha, b, csb, rsb, a, csa, rsa, beta, c, csc, rsc);
        return;
    }
    if (beta == 0 || csc != 1 || (n % 4 != 2 && n % 4 != 3)) {
        sgemm_blis(rntm, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
        return;
    }
    if (m > 1) sgemm_blis(rntm, m - 1, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
    const float *a_last = a + (ptrdiff_t)(m - 1) * rsa;
    float *c_last = c + (ptrdiff_t)(m - 1) * rsc;
    enum { COLS = 256 };
    float ab[COLS];
    for (size_t j0 = 0; j0 < n; j0 += COLS) {
        const size_t cols = n - j0 < COLS ? n - j0 : COLS;
        sgemm_blis(rntm, 1, cols, k, alpha, a_last, rsa, csa, b + (ptrdiff_t)j0 * csb, rsb, csb,
                   0.0f, ab, (ptrdiff_t)cols, 1);
        for (size_t j = 0; j < cols; j++)
            c_last[j0 + j] = fmaf(beta, c_last[j0 + j], ab[j]);
    }
}

void la_gemm_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta, float *c,
                 ptrdiff_t rsc, ptrdiff_t csc)
{
    rntm_t rntm = single_thread();
    sgemm(&rntm, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

/* Below this many multiply-adds (m·n·k; 2 MFLOP, some 10 µs on one core) a product runs
 * on one thread: BLIS's threads meet at barriers several times per call, which costs more
 * than the product, and on a busy machine each meeting waits for a time slice (decoding a
 * tiny model token by token: 0.2 s on one thread, 13-21 s on two beside two busy
 * processes). The result is the same either way (BLIS never splits k). */
#define THREADED_MIN_MACS 1048576.0

static int threads_for(int threads, size_t m, size_t n, size_t k)
{
    return threads < 1 || (double)m * (double)n * (double)k < THREADED_MIN_MACS ? 1 : threads;
}

/* The same products on `threads` of BLIS's own threads (its OpenMP build splits the m
 * and n loops around the micro-kernel, never k, so every element sums its k terms in the
 * same order whatever the thread count): for one large product whose weights BLIS
 * should pack once for all threads (the layers' FFN); one below THREADED_MIN_MACS runs on
 * one thread. Call from outside any OpenMP parallel region, after la_gemm_reserve(threads). */
void la_gemm_threaded_f32(int threads, size_t m, size_t n, size_t k, float alpha, const float *a,
                          ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb,
                          ptrdiff_t csb, float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(threads_for(threads, m, n, k), &rntm);
    sgemm(&rntm, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

void la_gemm_threaded_f64(int threads, size_t m, size_t n, size_t k, double alpha, const double *a,
                          ptrdiff_t rsa, ptrdiff_t csa, const double *b, ptrdiff_t rsb,
                          ptrdiff_t csb, double beta, double *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0) return;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(threads_for(threads, m, n, k), &rntm);
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
                 (double *)a, rsa, csa, (double *)b, rsb, csb, &beta, c, rsc, csc, blis_context(),
                 &rntm);
}

const char *la_blis_version(void)
{
    return bli_info_get_version_str();
}

/* The sgemm yardstick of `linattn bench` (contract in cpu/machine.h): one large product on
 * BLIS's own threads (its OpenMP build splits the loops around the micro-kernel), as a
 * BLAS user would call it, on the same kernels as la_gemm_f32. Inside an OpenMP parallel
 * region BLIS's region would be nested and run on one thread (or oversubscribe). */
la_status la_blis_sgemm(int threads, size_t m, size_t n, size_t k, float alpha, const float *a,
                        ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                        float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (threads < 1 || threads > LA_MAX_THREADS || (k > 0 && (!a || !b)) || !c) return LA_EINVAL;
    if (m == 0 || n == 0) return LA_OK;
    /* packing blocks for the threads that run (at most the cores), not for the count asked
     * for: blocks for LA_MAX_THREADS threads took 9 s to reserve under AddressSanitizer */
    threads = la_thread_clamp(threads);
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    la_gemm_threaded_f32(threads, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
    return LA_OK;
}

void la_gemm_f64(size_t m, size_t n, size_t k, double alpha, const double *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const double *b, ptrdiff_t rsb, ptrdiff_t csb, double beta,
                 double *c, ptrdiff_t rsc, ptrdiff_t csc)
{
    if (m == 0 || n == 0) return;
    rntm_t rntm = single_thread();
    bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n, (dim_t)k, &alpha,
                 (double *)a, rsa, csa, (double *)b, rsb, csb, &beta, c, rsc, csc, blis_context(),
                 &rntm);
}
