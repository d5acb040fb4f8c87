/* arrays.h — the subcommands' .npy inputs and outputs: read, converted to the precision a
 * command runs in, written atomically, each failure one line "linattn: PATH: why" (the
 * rule of cli.h) and status 2.
 * Uses: cli.h (the error line). */
#ifndef LA_ARRAYS_H
#define LA_ARRAYS_H

#include "linattn.h"

#include <stddef.h>

/* Reads path; on failure "linattn: PATH: <why>" (from la_npy_read). */
int arrays_read_npy(const char *path, la_array *out);

/* Reads a float16, bfloat16 ('<V2', see linattn.h), float32 or float64 array and
 * converts it to precision (in place when it is already that dtype; the half types
 * widened exactly by la_array_to_f32 first). Refuses other dtypes ("PATH: dtype int32,
 * need float16, bfloat16, float32 or float64") and any element that is NaN, infinite, or beyond
 * float32's range when converting. On failure *out is empty. */
int arrays_read_floats(const char *path, la_dtype precision, la_array *out);

/* Writes a atomically (la_npy_write); on failure "linattn: PATH: cannot write: <reason>"
 * and no file at path. */
int arrays_write_npy(const char *path, const la_array *a);

/* "(2, 3, 4)" (or "()") into buf of size bytes; returns buf. */
const char *arrays_shape_str(const la_array *a, char *buf, size_t size);

/* "float32", "float64", "int32", "int64", "float16", "bfloat16". */
const char *arrays_dtype_name(la_npy_dtype dtype);

#endif
