/* registry.c — the kernel registry: the table of rows, one per attention kernel in the
 * order of LA_KERNEL_LIST (lib/linattn.h), and the functions that read it (names, parsing,
 * series; dispatch.c calls through it). Everything else that iterates over kernels — the
 * command, the benchmark, the sweeps, the cost model, the test harness — iterates over
 * this table, reading the rows' fields; only a kernel's own file names its id.
 *
 * A new kernel (docs/design.md): its kernel file with its row, one line in LA_KERNEL_LIST,
 * its float64 reference (reference.c), and its own tests; the test harness
 * (tests/attention/test_attention.c) runs every row through its properties with no edit. */
#include "attention/attention_internal.h"

#include <string.h>

#define LA_KERNEL_ROW_DECLARE(id, row) extern const la_kernel_info row;
LA_KERNEL_LIST(LA_KERNEL_ROW_DECLARE)
#undef LA_KERNEL_ROW_DECLARE

/* The registry: the rows, by la_kernel. */
static const la_kernel_info *const registry[LA_KERNEL_COUNT] = {
#define LA_KERNEL_ROW_ENTRY(id, row) [id] = &row,
    LA_KERNEL_LIST(LA_KERNEL_ROW_ENTRY)
#undef LA_KERNEL_ROW_ENTRY
};

const la_kernel_info *la_kernel_get(la_kernel kernel)
{
    if ((unsigned)kernel >= LA_KERNEL_COUNT) return NULL;
    return registry[kernel];
}

const char *la_kernel_name(la_kernel kernel)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    return info ? info->name : "unknown";
}

/* a equals b, reading '-' in a as '_' */
static bool same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !(*a == '-' && *b == '_')) return false;
    return *a == *b;
}

la_status la_kernel_parse(const char *name, la_kernel *out)
{
    if (!name || !out) return LA_EINVAL;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        if (same_name(name, registry[k]->name)) {
            *out = (la_kernel)k;
            return LA_OK;
        }
    }
    return LA_EINVAL;
}

const char *la_kernel_series(la_kernel kernel, int causal)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || (causal != 0 && causal != 1)) return NULL;
    return info->series[causal];
}

la_status la_kernel_series_parse(const char *series, la_kernel *kernel, int *causal)
{
    if (!series || !kernel || !causal) return LA_EINVAL;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        for (int c = 0; c < 2; c++) {
            if (registry[k]->series[c] && same_name(series, registry[k]->series[c])) {
                *kernel = (la_kernel)k;
                *causal = c;
                return LA_OK;
            }
        }
    }
    return LA_EINVAL;
}

bool la_causal_allowed(const la_kernel_info *info, int causal)
{
    switch (info->causal) {
    case LA_CAUSAL_ALLOWED: return causal == 0 || causal == 1;
    case LA_CAUSAL_REQUIRED: return causal == 1;
    case LA_CAUSAL_REFUSED: return causal == 0;
    }
    return false;
}
