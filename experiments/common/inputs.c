/* inputs.c — seeded random inputs and error measures for the experiments. */
#include "inputs.h"
#include "arrays.h"
#include "cli.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* splitmix64 */
static uint64_t next(inputs_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* [0, 1) */
static double uniform(inputs_rng *r)
{
    return (double)(next(r) >> 11) * 0x1.0p-53;
}

double inputs_uniform(inputs_rng *r)
{
    return uniform(r);
}

inputs_rng inputs_rng_for(uint64_t seed, const char *label)
{
    /* FNV-1a of the label, mixed with the seed */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = label; c && *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    inputs_rng r = {seed ^ h};
    next(&r);
    return r;
}

double inputs_normal(inputs_rng *r)
{
    /* Box–Muller; 1 - u keeps the log argument in (0, 1] */
    double u = 1.0 - uniform(r), w = uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

void inputs_fill_normal_f32(inputs_rng *r, float *x, size_t n, double sigma)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sigma * inputs_normal(r));
}

size_t inputs_float_count(size_t a, size_t b, size_t c)
{
    /* a·b·c·sizeof(float) must fit, so that the caller's malloc size does */
    const size_t max = SIZE_MAX / sizeof(float);
    if (a == 0 || b == 0 || c == 0) return 0;
    if (b > max / a || c > max / (a * b)) return 0;
    return a * b * c;
}

double inputs_rel_error_f64(const double *y, const double *ref, size_t n)
{
    double diff2 = 0, ref2 = 0, y2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = y[i] - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        y2 += y[i] * y[i];
    }
    if (!isfinite(diff2) || !isfinite(ref2) || !isfinite(y2)) return INFINITY;
    return ref2 == 0 ? sqrt(y2) : sqrt(diff2 / ref2);
}

double inputs_rms_error_vs_v(const double *y, const double *ref, size_t n, const double *v,
                             size_t n_v)
{
    double diff2 = 0, v2 = 0;
    for (size_t i = 0; i < n; i++)
        diff2 += (y[i] - ref[i]) * (y[i] - ref[i]);
    for (size_t i = 0; i < n_v; i++)
        v2 += v[i] * v[i];
    if (!isfinite(diff2) || !isfinite(v2)) return INFINITY;
    const double rms = n ? sqrt(diff2 / (double)n) : 0, rms_v = n_v ? sqrt(v2 / (double)n_v) : 0;
    return rms_v == 0 ? rms : rms / rms_v;
}

/* ---------------------------------------------------------------- input sources */

/* Q, K, V agree as attend requires: rank 2..4, the same leading dims, a shared d_k, V's
 * rows K's, no zero size. Returns 0 or 2. */
static int check_arrays(const inputs_source *s)
{
    char s1[160], s2[160];
    const la_array *arrays[] = {&s->q, &s->k, &s->v}, *q = &s->q;
    if (q->ndim < 2 || q->ndim > 4)
        return cli_fail(s->path[0], "shape %s must be (N, d), (H, N, d) or (B, H, N, d)",
                        arrays_shape_str(q, s1, sizeof s1));
    for (int i = 1; i < 3; i++) {
        if (arrays[i]->ndim != q->ndim)
            return cli_fail(s->path[i], "shape %s has %d dims, Q %s has %d",
                            arrays_shape_str(arrays[i], s1, sizeof s1), arrays[i]->ndim,
                            arrays_shape_str(q, s2, sizeof s2), q->ndim);
        for (int d = 0; d < q->ndim - 2; d++)
            if (arrays[i]->shape[d] != q->shape[d])
                return cli_fail(s->path[i], "leading dims of %s differ from Q's %s",
                                arrays_shape_str(arrays[i], s1, sizeof s1),
                                arrays_shape_str(q, s2, sizeof s2));
    }
    const int r = q->ndim - 2, c = q->ndim - 1;
    if (s->k.shape[c] != q->shape[c])
        return cli_fail(s->path[1], "d_k = %zu differs from Q's d_k = %zu", s->k.shape[c],
                        q->shape[c]);
    if (s->v.shape[r] != s->k.shape[r])
        return cli_fail(s->path[2], "has %zu rows (keys), K has %zu", s->v.shape[r], s->k.shape[r]);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < q->ndim; d++)
            if (arrays[i]->shape[d] == 0)
                return cli_fail(s->path[i], "shape %s has a zero dimension",
                                arrays_shape_str(arrays[i], s1, sizeof s1));
    return 0;
}

int inputs_source_open(inputs_source *s, const char *q, const char *k, const char *v, uint64_t seed)
{
    return inputs_source_open_as(s, LAYOUT_BHND, q, k, v, seed);
}

int inputs_source_open_as(inputs_source *s, layout_kind layout, const char *q, const char *k,
                          const char *v, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->layout = layout;
    if (!q && !k && !v) return 0;
    const char *flags[] = {"--q", "--k", "--v"}, *paths[] = {q, k, v};
    for (int i = 0; i < 3; i++)
        if (!paths[i])
            return cli_fail(flags[i], "required with %s (--q, --k and --v go together)",
                            flags[i == 0 ? 1 : 0]);
    s->from_files = 1;
    la_array *arrays[] = {&s->q, &s->k, &s->v};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
        s->path[i] = paths[i];
        rc = arrays_read_floats(paths[i], LA_FLOAT32, arrays[i]);
        if (rc == 0) rc = layout_swap_heads(layout, paths[i], arrays[i]);
    }
    if (rc == 0) rc = check_arrays(s);
    if (rc) {
        inputs_source_close(s);
        return rc;
    }
    const int nd = s->q.ndim;
    s->batch = nd == 4 ? s->q.shape[0] : 1;
    s->heads = nd >= 3 ? s->q.shape[nd - 3] : 1;
    s->n = s->q.shape[nd - 2], s->d_k = s->q.shape[nd - 1];
    s->m = s->k.shape[nd - 2], s->d_v = s->v.shape[nd - 1];
    return 0;
}

void inputs_source_close(inputs_source *s)
{
    la_array_free(&s->q);
    la_array_free(&s->k);
    la_array_free(&s->v);
    memset(s, 0, sizeof *s);
}

size_t inputs_source_max_n(const inputs_source *s)
{
    if (!s->from_files) return SIZE_MAX;
    return s->n < s->m ? s->n : s->m;
}

void inputs_source_describe(const inputs_source *s, char *buf, size_t size)
{
    if (!s->from_files)
        snprintf(buf, size, "# inputs: random (seed %llu)\n", (unsigned long long)s->seed);
    else
        snprintf(buf, size,
                 "# inputs: %s %s %s (B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu, layout %s; "
                 "points take prefixes of N and M)\n",
                 s->path[0], s->path[1], s->path[2], s->batch, s->heads, s->n, s->m, s->d_k, s->d_v,
                 s->layout == LAYOUT_BNHD ? "bnhd" : "bhnd");
}

/* dst (heads, rows, cols) = the first rows of every head of src (heads, src_rows, cols) */
static void copy_prefix(float *dst, const float *src, size_t heads, size_t rows, size_t src_rows,
                        size_t cols)
{
    for (size_t h = 0; h < heads; h++)
        memcpy(dst + h * rows * cols, src + h * src_rows * cols, rows * cols * sizeof *dst);
}

int inputs_source_fill(const inputs_source *s, const char *label, size_t heads, size_t n, size_t m,
                       size_t d_k, size_t d_v, float *q, float *k, float *v)
{
    if (!s->from_files) {
        inputs_rng r = inputs_rng_for(s->seed, label);
        inputs_fill_normal_f32(&r, q, heads * n * d_k, 1.0);
        inputs_fill_normal_f32(&r, k, heads * m * d_k, 1.0);
        inputs_fill_normal_f32(&r, v, heads * m * d_v, 1.0);
        return 0;
    }
    if (heads != s->batch * s->heads || d_k != s->d_k || d_v != s->d_v || n > s->n || m > s->m)
        return -1;
    copy_prefix(q, s->q.data, heads, n, s->n, d_k);
    copy_prefix(k, s->k.data, heads, m, s->m, d_k);
    copy_prefix(v, s->v.data, heads, m, s->m, d_v);
    return 0;
}
