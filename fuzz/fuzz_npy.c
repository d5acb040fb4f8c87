/* fuzz_npy.c — libFuzzer target for the .npy parser: any byte string must either parse
 * into a consistent array or be refused with a reason, never read out of bounds, leak
 * or crash. Built and run by `make fuzz` (clang -fsanitize=fuzzer,address,undefined)
 * from lib/io/npy.c and lib/core/status.c only; seeds in fuzz/seeds/ (see make_seeds.py). */
#include "linattn.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    la_array a;
    const char *why = NULL;
    la_status st = la_npy_parse(data, size, &a, &why);
    /* every outcome comes with a reason */
    if (!why || !*why || !la_strerror(st)) abort();
    if (st != LA_OK) {
        /* a refusal leaves the array empty */
        if (a.data || a.ndim != 0 || a.count != 0) abort();
        return 0;
    }
    /* a success is consistent: count = product of shape, and the data is the file's
     * last bytes (the memcmp touches all of it, so ASan checks the allocation) */
    size_t count = 1;
    if (a.ndim < 0 || a.ndim > LA_NPY_MAX_DIMS || !a.data) abort();
    for (int i = 0; i < a.ndim; i++)
        count *= a.shape[i];
    if (count != a.count) abort();
    size_t bytes = a.count * la_npy_dtype_size(a.dtype);
    if (bytes > size) abort();
    if (bytes && memcmp(a.data, data + size - bytes, bytes) != 0) abort();
    /* half precision widens to float32 of the same count (reading every element) */
    if (a.dtype == LA_NPY_F16 || a.dtype == LA_NPY_BF16) {
        la_status wide = la_array_to_f32(&a);
        if (wide == LA_OK && (a.dtype != LA_NPY_F32 || a.count != count || !a.data)) abort();
        if (wide != LA_OK && wide != LA_ENOMEM) abort();
    }
    la_array_free(&a);
    la_array_free(&a);
    return 0;
}
