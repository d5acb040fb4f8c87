/* simd.c — whether the hand-written AVX-512 kernels run (simd_avx512.h). */
#include "internal.h"
#include "simd_avx512.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static bool cpu_ok, env_off;
static _Atomic bool enabled = true;

/* The CPU's features, and LA_SIMD=off (to compare with the portable kernels). */
static void detect(void)
{
#if LA_HAVE_AVX512_CODE
    __builtin_cpu_init();
    cpu_ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
    const char *env = getenv("LA_SIMD");
    env_off = env && strcmp(env, "off") == 0;
}

bool la_avx512_usable(void)
{
    pthread_once(&detect_once, detect);
    return cpu_ok && !env_off && enabled;
}

void la_avx512_enable(bool on)
{
    enabled = on;
}
