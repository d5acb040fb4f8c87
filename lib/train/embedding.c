/* embedding.c — token embedding plus positions, forward and backward (a scatter-add), per
 * element type (train_layers.h). Shapes:
 *   tokens (B, N) int32 in [0, V); table (V, d); pos (N, d) or NULL; x, dx (B, N, d)
 *   forward   x[b, t] = table[tokens[b, t]] + P[t], P = pos, or the sinusoidal table
 *   backward  d_table[tokens[b, t]] += dx[b, t], d_pos[t] += dx[b, t], in (b, t) order
 * The scatter-add runs on one thread in token order: repeated tokens add in one order. */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <string.h>

static la_status check(size_t batch, size_t n, size_t vocab, size_t d, const int32_t *tokens)
{
    size_t rows, e;
    if (!tokens || batch == 0 || n == 0 || vocab == 0 || d == 0) return LA_EINVAL;
    if (!la_mul_ok(batch, n, &rows) || !la_mul_ok(rows, d, &e) || !la_mul_ok(e, sizeof(REAL), &e))
        return LA_EOVERFLOW;
    for (size_t r = 0; r < rows; r++)
        if (tokens[r] < 0 || (size_t)tokens[r] >= vocab) return LA_EINVAL;
    return LA_OK;
}

static la_status forward(size_t batch, size_t n, size_t vocab, size_t d, const int32_t *tokens,
                         const REAL *table, const REAL *pos, REAL *x)
{
    if (!table || !x) return LA_EINVAL;
    la_status st = check(batch, n, vocab, d, tokens);
    if (st != LA_OK) return st;
    for (size_t r = 0; r < batch * n; r++) {
        REAL *xr = x + r * d;
        memcpy(xr, table + (size_t)tokens[r] * d, d * sizeof *xr);
        if (pos) {
            const REAL *pr = pos + (r % n) * d;
            for (size_t c = 0; c < d; c++)
                xr[c] += pr[c];
        }
    }
    return pos ? LA_OK : la_add_positional_encoding(REAL_DTYPE, batch, n, d, 0, x);
}

static la_status backward(size_t batch, size_t n, size_t vocab, size_t d, const int32_t *tokens,
                          const REAL *dx, REAL *d_table, REAL *d_pos)
{
    if (!dx || !d_table) return LA_EINVAL;
    la_status st = check(batch, n, vocab, d, tokens);
    if (st != LA_OK) return st;
    for (size_t r = 0; r < batch * n; r++) {
        const REAL *g = dx + r * d;
        REAL *dt = d_table + (size_t)tokens[r] * d;
        for (size_t c = 0; c < d; c++)
            dt[c] += g[c];
        if (d_pos) {
            REAL *dp = d_pos + (r % n) * d;
            for (size_t c = 0; c < d; c++)
                dp[c] += g[c];
        }
    }
    return LA_OK;
}

#if REAL_IS_F32
la_status la_train_embedding_forward_f32(size_t batch, size_t n, size_t vocab, size_t d,
                                         const int32_t *tokens, const float *table,
                                         const float *pos, float *x)
{
    return forward(batch, n, vocab, d, tokens, table, pos, x);
}
la_status la_train_embedding_backward_f32(size_t batch, size_t n, size_t vocab, size_t d,
                                          const int32_t *tokens, const float *dx, float *d_table,
                                          float *d_pos)
{
    return backward(batch, n, vocab, d, tokens, dx, d_table, d_pos);
}
#else
la_status la_train_embedding_forward_f64(size_t batch, size_t n, size_t vocab, size_t d,
                                         const int32_t *tokens, const double *table,
                                         const double *pos, double *x)
{
    return forward(batch, n, vocab, d, tokens, table, pos, x);
}
la_status la_train_embedding_backward_f64(size_t batch, size_t n, size_t vocab, size_t d,
                                          const int32_t *tokens, const double *dx, double *d_table,
                                          double *d_pos)
{
    return backward(batch, n, vocab, d, tokens, dx, d_table, d_pos);
}
#endif
