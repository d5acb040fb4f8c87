/* npy.c — STUB: .npy read/write. */
#include "internal.h"

size_t la_npy_dtype_size(la_npy_dtype dtype) { return dtype == LA_NPY_F32 || dtype == LA_NPY_I32 ? 4 : 8; }
la_status la_npy_parse(const void *bytes, size_t size, la_array *out, const char **why)
{ (void)bytes; (void)size; (void)out; if (why) *why = "not implemented"; return LA_EFORMAT; }
la_status la_npy_read(const char *path, la_array *out, const char **why)
{ (void)path; (void)out; if (why) *why = "not implemented"; return LA_EIO; }
la_status la_npy_write(const char *path, const la_array *a) { (void)path; (void)a; return LA_EIO; }
void la_array_free(la_array *a) { (void)a; }
