/* count.c — the FLOP counters of the cost-model test (tests/attention/test_cost.c).
 * Only a build with -DLA_COUNT_FLOPS (the Makefile's $(BUILD)/count/liblinattn.a, which
 * test_cost links) has kernels that call la_count_add; in every other build LA_COUNT
 * expands to nothing and these counters stay zero. */
#include "core/internal.h"

static double counters[LA_COUNTERS];

void la_count_add(la_counter c, double n)
{
#pragma omp atomic
    counters[c] += n;
}

void la_count_reset(void)
{
    for (int c = 0; c < LA_COUNTERS; c++)
        counters[c] = 0;
}

double la_count_get(la_counter c)
{
    return counters[c];
}

bool la_count_enabled(void)
{
#ifdef LA_COUNT_FLOPS
    return true;
#else
    return false;
#endif
}
