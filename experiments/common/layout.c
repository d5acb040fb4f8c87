/* layout.c — bhnd and bnhd arrays (layout.h). */
#include "layout.h"

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int layout_parse(const char *flag, const char *text, layout_kind *out)
{
    static const char *const names[] = {"bhnd", "bnhd", NULL};
    int which = LAYOUT_BHND;
    if (text) {
        int rc = cli_parse_choice(flag, text, names, &which);
        if (rc) return rc;
    }
    *out = (layout_kind)which;
    return 0;
}

int layout_swap_heads(layout_kind layout, const char *what, la_array *a)
{
    if (layout == LAYOUT_BHND || a->ndim < 3) return 0;
    /* (outer, x, y, inner) -> (outer, y, x, inner), inner counting bytes */
    const int nd = a->ndim;
    const size_t x = a->shape[nd - 3], y = a->shape[nd - 2];
    const size_t inner = a->shape[nd - 1] * la_npy_dtype_size(a->dtype);
    const size_t outer = nd == 4 ? a->shape[0] : 1;
    char *to = malloc(a->count * la_npy_dtype_size(a->dtype) + 1);
    if (!to) return cli_fail(what, "%s", la_strerror(LA_ENOMEM));
    const char *from = a->data;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < x; i++)
            for (size_t j = 0; j < y; j++)
                memcpy(to + ((o * y + j) * x + i) * inner, from + ((o * x + i) * y + j) * inner,
                       inner);
    free(a->data);
    a->data = to;
    a->shape[nd - 3] = y, a->shape[nd - 2] = x;
    return 0;
}

void layout_report(const char *command, layout_kind layout, size_t batch, size_t heads, size_t n,
                   size_t m, size_t d_k, size_t d_v, const char *dtype)
{
    fprintf(stderr, "%s: input B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu, %s, layout %s\n", command,
            batch, heads, n, m, d_k, d_v, dtype,
            layout == LAYOUT_BNHD ? "bnhd (B, N, H, d)" : "bhnd (B, H, N, d)");
}
