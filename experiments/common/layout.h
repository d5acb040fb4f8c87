/* layout.h — how the command reads attention arrays. The library takes q, k, v and out as
 * (B, H, N, d) (PyTorch's scaled_dot_product_attention convention); FlashAttention, and
 * PyTorch's batch_first projections before the heads are split off, hold them as
 * (B, N, H, d). `--layout bhnd|bnhd` says which the files are: bnhd arrays are transposed
 * to (B, H, N, d) on input and the output back on output. Three-dimensional arrays are
 * (H, N, d) or (N, H, d); two-dimensional ones, (N, d), are one head either way.
 *
 *     layout_kind layout;
 *     if ((rc = layout_parse("--layout", text, &layout)) ||
 *         (rc = layout_swap_heads(layout, "--q", &q)))  …          (compute on (B, H, N, d))
 *     layout_swap_heads(layout, "--out", &y);                    (back before writing)
 *     layout_report("attend", layout, B, H, N, M, d_k, d_v, "float32");
 */
#ifndef LA_LAYOUT_H
#define LA_LAYOUT_H

#include "linattn.h"

#include <stddef.h>

typedef enum { LAYOUT_BHND = 0, LAYOUT_BNHD = 1 } layout_kind;

/* text NULL: bhnd. Returns 0, or 2 after one line. */
int layout_parse(const char *flag, const char *text, layout_kind *out);

/* With bnhd, a's two axes before the last swapped ((B, N, H, d) <-> (B, H, N, d), (N, H, d)
 * <-> (H, N, d)) into a new buffer; bhnd and arrays of fewer than 3 dimensions are left as
 * they are. Returns 0, or 2 after one line naming what (out of memory). */
int layout_swap_heads(layout_kind layout, const char *what, la_array *a);

/* One line on stderr: how the inputs were read, e.g.
 *   attend: input B=2 H=4 N=256 M=256 d_k=32 d_v=32, float32, layout bnhd (B, N, H, d) */
void layout_report(const char *command, layout_kind layout, size_t batch, size_t heads, size_t n,
                   size_t m, size_t d_k, size_t d_v, const char *dtype);

#endif
