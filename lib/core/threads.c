/* threads.c — the library's thread count: la_set_num_threads, LA_NUM_THREADS, OpenMP.
 * The rule (linattn.h, threads): a count is accepted in 1..LA_MAX_THREADS and runs on at
 * most the online cores; the count asked for is kept for the record. */
#include "core/internal.h"

#include <omp.h>
#include <stdlib.h>

static int requested_threads; /* 0: not set, use the default */

static int online_cores(void)
{
    const int n = omp_get_num_procs();
    return n > 0 ? n : 1;
}

/* LA_NUM_THREADS: -1 when unset or empty, 0 when it is not an integer in
 * 1..LA_MAX_THREADS, else its value. */
static int env_threads(void)
{
    const char *env = getenv("LA_NUM_THREADS");
    if (!env || !*env) return -1;
    char *end;
    long n = strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > LA_MAX_THREADS) return 0;
    return (int)n;
}

la_status la_set_num_threads(int n)
{
    if (n < 0 || n > LA_MAX_THREADS) return LA_EINVAL;
    if (n == 0 && env_threads() == 0) return LA_EINVAL;
    requested_threads = n;
    return LA_OK;
}

int la_num_threads_requested(void)
{
    if (requested_threads > 0) return requested_threads;
    const int env = env_threads();
    if (env > 0) return env;
    const int omp = omp_get_max_threads();
    return omp < 1 ? 1 : omp > LA_MAX_THREADS ? LA_MAX_THREADS : omp;
}

int la_thread_clamp(int n)
{
    const int cores = online_cores();
    return n > cores ? cores : n;
}

int la_get_num_threads(void)
{
    return la_thread_clamp(la_num_threads_requested());
}

int la_threads(void)
{
    return la_get_num_threads();
}
