/* threads.c — the library's thread count: la_set_num_threads, LA_NUM_THREADS, OpenMP. */
#include "core/internal.h"

#include <omp.h>
#include <stdlib.h>

static int requested_threads; /* 0: not set, use the default */

static int default_threads(void)
{
    const char *env = getenv("LA_NUM_THREADS");
    if (env && *env) {
        char *end;
        long n = strtol(env, &end, 10);
        if (*end == '\0' && n >= 1 && n <= 4096) return (int)n;
    }
    return omp_get_max_threads();
}

la_status la_set_num_threads(int n)
{
    if (n < 0) return LA_EINVAL;
    requested_threads = n;
    return LA_OK;
}

int la_get_num_threads(void)
{
    return requested_threads > 0 ? requested_threads : default_threads();
}

int la_threads(void)
{
    return la_get_num_threads();
}
