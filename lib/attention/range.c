/* range.c — will a kernel's intermediate values fit its element type? One scan of the
 * largest magnitudes of q and of the keys and values some query sees (O((N + u)·d) per
 * head, u the keys the causal mask and the key lengths leave to the last query: the same
 * order as reading what the kernel reads once; keys no query sees are never read), then
 * bounds that hold for every kernel's arithmetic, checked before the
 * kernel writes anything (float32 fused softmax with N <= 4 takes max|k| and max|v| on
 * its own loads instead, with its output staged: la_range_fits_f32). A call that fails them returns
 * LA_ERANGE (lib/linattn.h says which kernels and when); one that passes cannot overflow, so it
 * never returns inf or NaN from finite inputs.
 *
 * The bounds, with a = max|q|, b = max|k|, c = max|v| over those keys, u their largest
 * count over the batch entries, φ ≤ x + 1 for elu+1 and relu:
 *   softmax and hard: every score |q·k·scale| ≤ d_k·a·b·max(scale, 1), and the kernels
 *     form s − max (twice a score) times log2 e (engine_avx512.c); the accumulator
 *     Σ_j exp(s_j − m) v_j ≤ u·c. Both kept under REAL_MAX / 8, and |scale| too (the
 *     AVX-512 kernel multiplies by scale · log2 e).
 *   linear, causal (chunked and recurrent; the non-causal scan checks its states
 *     instead, states_in_range in linear_engine.c): every entry of S, z, φ(Q)S, φ(Q)z and of the
 * chunks' A and A·V is at most d_k·u·(a + 1)·(b + 1)·max(c, 1), kept under REAL_MAX / 8. Non-finite
 * inputs are not this check's business (they give non-finite outputs, as in float64): the check
 * then passes. */
#include "attention/attention_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

size_t la_keys_seen(const la_problem *p, size_t b)
{
    return la_visible_keys_of(p, la_keys_in_length(p, b), p->n_queries - 1);
}

size_t la_keys_seen_max(const la_problem *p)
{
    if (!p->key_lengths) return la_keys_seen(p, 0);
    size_t u = 0;
    for (size_t b = 0; b < p->batch; b++) {
        const size_t seen = la_keys_seen(p, b);
        u = seen > u ? seen : u;
    }
    return u;
}

/* The bound of the kernel family on magnitudes a, b, c over the keys seen, or true when an
 * input is not finite (computed in long double where it exceeds double, so the bound
 * itself cannot overflow). */
static bool fits(la_range_kind kind, const la_problem *p, double a, double b, double c,
                 double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c)) return true;
    const long double dk = (long double)p->d_k, M = (long double)la_keys_seen_max(p);
    const long double limit = (long double)real_max / 8;
    if (kind == LA_RANGE_LINEAR)
        return dk * M * ((long double)a + 1) * ((long double)b + 1) * fmaxl(c, 1) <= limit;
    const long double scale = fmaxl(fabsl((long double)p->scale), 1);
    if (scale > limit || dk * a * b * scale > limit) return false; /* scale·log2 e too */
    return kind == LA_RANGE_HARD || M * (long double)c <= limit;
}

/* The linear backward passes (linear.c), with also d = max|d_out| and
 * w = max|out|, and r >= 1 a bound on 1/den over the queries whose den is not 0: every
 * value they form (g = dO/den, c = −(dO·y)/den, dφ(q), B = g·v + c, dS, dz, dφ(k), d_v and
 * every partial sum of them, besides the forward's S, z, A above) is at most r·K with
 *   K = 4·d_k·d_v·max(N, M)·(a + 1)·(b + 1)·max(c, 1)·max(d, 1)·max(w, 1)
 * (|g| <= d·r, |c| <= d_v·d·w·r; e.g. |dφ(q_i)| <= d_v·|S|·|g| + |c|·|z| + C·|B|·|φ(k)|,
 * with |S| <= M(b + 1)c, |z| <= M(b + 1), |B| <= d_v·d·r·(c + w): at most K·r). Returns
 * (T/8) / K, the largest r allowed; +inf when an input is not finite (not this check's
 * business, as above). */
static double linear_backward_limit(const la_problem *p, double a, double b, double c, double d,
                                    double w, double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c) || isinf(d) || isinf(w)) return INFINITY;
    const long double n = (long double)(p->n_queries > p->n_keys ? p->n_queries : p->n_keys);
    const long double K = 4 * (long double)p->d_k * (long double)p->d_v * n * ((long double)a + 1) *
                          ((long double)b + 1) * fmaxl(c, 1) * fmaxl(d, 1) * fmaxl(w, 1);
    return (double)(((long double)real_max / 8) / K);
}

/* The scan and the check, once per precision (range_tmpl.h; core/real_f32.h explains
 * the scheme). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/range_tmpl.h"
#include "core/real_f64.h"
#include "attention/range_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */
