/* config.c — la_config: what was built and what runs, in one structure. */
#include "core/internal.h"

la_config_info la_config(void)
{
    return (la_config_info){
        .version = LA_VERSION_STRING,
        .blis_version = la_blis_version(),
        .blis_config = la_blis_config(),
        .simd = la_gemm_small_config(),
    };
}
