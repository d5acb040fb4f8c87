/* config.c — la_config: what was built and what runs, in one structure. */
#include "core/internal.h"
#include "cpu/simd_avx512.h"

#include <pthread.h>
#include <stdio.h>

static pthread_once_t simd_once = PTHREAD_ONCE_INIT;
static char simd_text[320];

/* Where the AVX-512 tiles run: the small products' tile (la_gemm_small_config), then the
 * fused softmax's task size, "avx512, tile 6x64 (…), fused softmax 64 queries (…)". Both
 * are chosen once per process. */
static void describe_simd(void)
{
    snprintf(simd_text, sizeof simd_text, "%s, fused softmax %s", la_gemm_small_config(),
             la_fused_simd_config());
}

la_config_info la_config(void)
{
    const bool tiles = la_avx512_usable(); /* else la_gemm_small_config says why not */
    if (tiles) pthread_once(&simd_once, describe_simd);
    return (la_config_info){
        .version = LA_VERSION_STRING,
        .blis_version = la_blis_version(),
        .blis_config = la_blis_config(),
        .simd = tiles ? simd_text : la_gemm_small_config(),
    };
}
