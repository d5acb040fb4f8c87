/* position.c — the positional-encoding flags of attend and block (position.h). */
#include "position.h"
#include "arrays.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"none",     "sinusoidal", "learned",
                                         "relative", "rotary",     NULL};

const char *position_name(position_kind kind)
{
    return (unsigned)kind <= POSITION_ROTARY ? kind_names[kind] : "unknown";
}

/* A 2-D float64 table from path: "PATH: shape … must be (rows, cols)" when not 2-D. */
static int read_table(const char *path, const char *form, la_array *out)
{
    char s1[160];
    int rc = arrays_read_floats(path, LA_FLOAT64, out);
    if (rc) return rc;
    if (out->ndim != 2)
        return cli_fail(path, "shape %s must be %s", arrays_shape_str(out, s1, sizeof s1), form);
    return 0;
}

/* --relative AK.npy,AV.npy: two tables of the same odd row count 2K + 1 >= 3. */
static int read_relative(const char *text, position_values *out)
{
    char buf[4096], *items[3];
    size_t n = 0;
    int rc = cli_split_list("--relative", text, buf, sizeof buf, items, 3, &n);
    if (rc) return rc;
    if (n != 2) return cli_fail("--relative", "give two files, AK.npy,AV.npy");
    if ((rc = read_table(items[0], "(2K+1, d_k)", &out->rel_k)) ||
        (rc = read_table(items[1], "(2K+1, d_v)", &out->rel_v)))
        return rc;
    const size_t rows = out->rel_k.shape[0];
    if (out->rel_v.shape[0] != rows)
        return cli_fail(items[1], "has %zu rows, %s has %zu", out->rel_v.shape[0], items[0], rows);
    if (rows < 3 || rows % 2 == 0)
        return cli_fail(items[0], "has %zu rows: need 2K + 1 for a clip distance K >= 1", rows);
    return 0;
}

int position_parse(const position_flags *f, position_values *out)
{
    memset(out, 0, sizeof *out);
    out->max_distance = POSITION_DEFAULT_MAX_DISTANCE;
    int rc, kind = POSITION_NONE;
    if (f->positions && (rc = cli_parse_choice("--positions", f->positions, kind_names, &kind)))
        return rc;
    out->kind = (position_kind)kind;
    if (f->table && out->kind != POSITION_LEARNED)
        return cli_fail("--position-table", "applies to --positions learned only");
    if (f->max_distance && out->kind != POSITION_RELATIVE)
        return cli_fail("--max-distance", "applies to --positions relative only");
    if (f->relative && out->kind != POSITION_RELATIVE)
        return cli_fail("--relative", "applies to --positions relative only");
    if (f->max_distance && f->relative)
        return cli_fail("--max-distance", "not with --relative (the tables' 2K + 1 rows give K)");
    if (f->max_distance) {
        if ((rc = cli_parse_size("--max-distance", f->max_distance, &out->max_distance))) return rc;
        if (out->max_distance < 1) return cli_fail("--max-distance", "must be at least 1");
        if (out->max_distance > ((size_t)1 << 30))
            return cli_fail("--max-distance", "must be at most 2^30");
    }
    if (f->table && (rc = read_table(f->table, "(L, D)", &out->table))) return rc;
    if (f->relative) {
        if ((rc = read_relative(f->relative, out))) return rc;
        out->max_distance = (out->rel_k.shape[0] - 1) / 2;
    }
    return 0;
}

/* splitmix64 */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Entry e of the drawn table: N(0, 1) by Box–Muller from two uniforms of the stream. */
static double drawn_entry(uint64_t *state)
{
    const double u1 = (double)(next_u64(state) >> 11) * 0x1.0p-53;
    const double u2 = (double)(next_u64(state) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586476925286766559 * u2);
}

int position_add_absolute(const position_values *v, const char *what, uint64_t seed, la_array *x)
{
    if (v->kind != POSITION_SINUSOIDAL && v->kind != POSITION_LEARNED) return 0;
    const size_t n = x->shape[x->ndim - 2], d = x->shape[x->ndim - 1], rows = x->count / (n * d);
    if (v->kind == POSITION_SINUSOIDAL) {
        const la_status st = x->dtype == LA_NPY_F32
                                 ? la_add_positional_encoding(LA_FLOAT32, rows, n, d, 0, x->data)
                                 : la_add_positional_encoding(LA_FLOAT64, rows, n, d, 0, x->data);
        return st == LA_OK ? 0 : cli_fail(what, "sinusoidal positions: %s", la_strerror(st));
    }
    const double *table = v->table.data;
    double *drawn = NULL;
    if (table) {
        char s1[160];
        if (v->table.shape[0] < n || v->table.shape[1] != d)
            return cli_fail("--position-table", "shape %s must be (L, %zu) with L >= %zu for %s",
                            arrays_shape_str(&v->table, s1, sizeof s1), d, n, what);
    } else {
        drawn = malloc(n * d * sizeof *drawn);
        if (!drawn) return cli_fail(what, "%s", la_strerror(LA_ENOMEM));
        uint64_t state = seed;
        for (size_t e = 0; e < n * d; e++)
            drawn[e] = drawn_entry(&state);
        table = drawn;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t e = 0; e < n * d; e++) {
            if (x->dtype == LA_NPY_F32)
                ((float *)x->data)[r * n * d + e] += (float)table[e];
            else
                ((double *)x->data)[r * n * d + e] += table[e];
        }
    free(drawn);
    return 0;
}

int position_rotate(const char *what, la_array *x)
{
    const size_t n = x->shape[x->ndim - 2], d = x->shape[x->ndim - 1], rows = x->count / (n * d);
    if (d % 2 != 0)
        return cli_fail(what, "rotary positions rotate channel pairs: d = %zu must be even", d);
    const la_status st = x->dtype == LA_NPY_F32
                             ? la_rotary_apply(LA_FLOAT32, rows, n, d, 0, x->data)
                             : la_rotary_apply(LA_FLOAT64, rows, n, d, 0, x->data);
    return st == LA_OK ? 0 : cli_fail(what, "rotary positions: %s", la_strerror(st));
}

void position_print_help(FILE *out)
{
    fputs("  --positions P        none, sinusoidal, learned, relative or rotary [none]:\n"
          "                       sinusoidal (Vaswani et al.) and learned are added to the\n"
          "                       input, position i to row i; rotary (RoPE, Su et al.) rotates\n"
          "                       channel pairs (2c, 2c+1) of queries and keys by i·θ_c,\n"
          "                       θ_c = 10000^(-2c/d) (d even); relative (Shaw et al. 2018):\n"
          "                       learned embeddings of the clipped distance clip(j - i, -K, K)\n"
          "                       in the scores and the values, softmax attention only\n"
          "  --position-table T.npy  learned: the table (L, D), L >= the rows it is added to;\n"
          "                       without it drawn from --seed, N(0, 1) entries [drawn]\n"
          "  --max-distance K     relative: the clip distance K >= 1 [16]\n"
          "  --relative AK.npy,AV.npy  relative: a^K (2K+1, d_k) and a^V (2K+1, d_v), row\n"
          "                       K + clip(j - i, -K, K); without it drawn from\n"
          "                       --seed (la_kernel_draw) [drawn]\n",
          out);
}

void position_free(position_values *v)
{
    la_array_free(&v->table);
    la_array_free(&v->rel_k);
    la_array_free(&v->rel_v);
}
