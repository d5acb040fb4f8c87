/* arrays.c — .npy arrays read and written for the subcommands, each failure reported as
 * one line (contract in arrays.h). */
#include "arrays.h"
#include "io/outfile.h"

#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *arrays_dtype_name(la_npy_dtype dtype)
{
    switch (dtype) {
    case LA_NPY_F32: return "float32";
    case LA_NPY_F64: return "float64";
    case LA_NPY_I32: return "int32";
    case LA_NPY_I64: return "int64";
    case LA_NPY_F16: return "float16";
    case LA_NPY_BF16: return "bfloat16";
    case LA_NPY_BOOL: return "bool";
    }
    return "unknown";
}

const char *arrays_shape_str(const la_array *a, char *buf, size_t size)
{
    size_t used = 0;
    int n = snprintf(buf, size, "(");
    for (int i = 0; n >= 0 && (size_t)n < size - used && i < a->ndim; i++) {
        used += (size_t)n;
        n = snprintf(buf + used, size - used, i ? ", %zu" : "%zu", a->shape[i]);
    }
    if (n >= 0 && (size_t)n < size - used) {
        used += (size_t)n;
        snprintf(buf + used, size - used, a->ndim == 1 ? ",)" : ")");
    }
    return buf;
}

int arrays_read_npy(const char *path, la_array *out)
{
    const char *why = NULL;
    la_status st = la_npy_read(path, out, &why);
    if (st != LA_OK) return cli_fail(path, "%s", why ? why : la_strerror(st));
    return 0;
}

int arrays_read_floats(const char *path, la_dtype precision, la_array *out)
{
    int rc = arrays_read_npy(path, out);
    if (rc) return rc;
    if (out->dtype == LA_NPY_F16 || out->dtype == LA_NPY_BF16) {
        la_status st = la_array_to_f32(out); /* exact */
        if (st != LA_OK) {
            rc = cli_fail(path, "%s", la_strerror(st));
            goto fail;
        }
    }
    if (out->dtype != LA_NPY_F32 && out->dtype != LA_NPY_F64) {
        rc = cli_fail(path, "dtype %s, need float16, bfloat16, float32 or float64",
                      arrays_dtype_name(out->dtype));
        goto fail;
    }
    /* every element finite, in the file's own precision */
    for (size_t i = 0; i < out->count; i++) {
        double x =
            out->dtype == LA_NPY_F32 ? (double)((float *)out->data)[i] : ((double *)out->data)[i];
        if (!isfinite(x)) {
            rc = cli_fail(path, "element %zu is %s", i, isnan(x) ? "NaN" : "infinite");
            goto fail;
        }
    }
    la_npy_dtype want = precision == LA_FLOAT32 ? LA_NPY_F32 : LA_NPY_F64;
    if (out->dtype == want) return 0;

    /* convert: float32 → float64 is exact; float64 → float32 must stay finite */
    size_t n = out->count;
    void *converted = malloc((n ? n : 1) * la_npy_dtype_size(want));
    if (!converted) {
        rc = cli_fail(path, "out of memory");
        goto fail;
    }
    if (want == LA_NPY_F64) {
        for (size_t i = 0; i < n; i++)
            ((double *)converted)[i] = ((float *)out->data)[i];
    } else {
        for (size_t i = 0; i < n; i++) {
            double x = ((double *)out->data)[i];
            float y = (float)x;
            if (!isfinite(y)) {
                free(converted);
                rc = cli_fail(path, "element %zu (%g) is beyond float32's range", i, x);
                goto fail;
            }
            ((float *)converted)[i] = y;
        }
    }
    free(out->data);
    out->data = converted;
    out->dtype = want;
    return 0;
fail:
    la_array_free(out);
    return rc;
}

int arrays_write_npy(const char *path, const la_array *a)
{
    const char *why = NULL;
    la_status st = la_npy_write_why(path, a, &why);
    if (st == LA_OK) return 0;
    return cli_fail(path, "cannot write: %s", why ? why : la_strerror(st));
}
