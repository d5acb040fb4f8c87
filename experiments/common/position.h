/* position.h — positional encodings on the command line, one set of flags for
 * attend and block:
 *   --positions P         none, sinusoidal, learned, relative or rotary            [none]
 *   --position-table T.npy  learned: the table (L, D), L >= the sequence; else drawn
 *                         from --seed (entries N(0, 1), as nn.Embedding initialises)
 *   --max-distance K      relative: the clip distance K >= 1 (Shaw et al. 2018)    [16]
 *   --relative AK.npy,AV.npy  relative: a^K (2K+1, d_k) and a^V (2K+1, d_v); else drawn
 *                         from --seed (K from their rows: 2K + 1)
 * sinusoidal and learned are absolute: added to the input; rotary rotates queries and
 * keys (la_rotary_apply_*; inside linear attention la_linear_attention_rotary_*); relative
 * is the relative kernel's (LA_KERNEL_RELATIVE) learned embeddings. A flag the chosen
 * encoding does not read is refused. */
#ifndef LA_POSITION_H
#define LA_POSITION_H

#include "linattn.h"

#include <stdint.h>
#include <stdio.h>

typedef enum {
    POSITION_NONE,
    POSITION_SINUSOIDAL,
    POSITION_LEARNED,
    POSITION_RELATIVE,
    POSITION_ROTARY
} position_kind;

typedef struct {
    const char *positions, *table, *max_distance, *relative;
} position_flags;

/* The entries of a subcommand's cli_flag table for the position_flags f. */
#define POSITION_FLAGS(f)                                                                          \
    {"positions", &(f).positions, NULL}, {"position-table", &(f).table, NULL},                     \
        {"max-distance", &(f).max_distance, NULL},                                                 \
    {                                                                                              \
        "relative", &(f).relative, NULL                                                            \
    }

#define POSITION_DEFAULT_MAX_DISTANCE 16

typedef struct {
    position_kind kind;
    size_t max_distance;   /* relative: K */
    la_array table;        /* learned: (L, D) float64, when --position-table was given */
    la_array rel_k, rel_v; /* relative: float64 (2K+1, d_k), (2K+1, d_v), when given */
} position_values;

/* The name of a kind ("rotary"). */
const char *position_name(position_kind kind);

/* Parses the flags into *out and reads the given files (float64); checks what needs no
 * input sizes: the name, flags that do not apply to it, --max-distance >= 1, the tables'
 * ranks. Returns 0, or 2 after one line; *out needs position_free either way. */
int position_parse(const position_flags *f, position_values *out);

/* Adds the absolute encoding of v (sinusoidal or learned; nothing for the others) to x,
 * an array (…, n, d) of precision dtype: token i of every row block at position i. A
 * learned table must be (L, d) with L >= n (else one line naming `what`, and 2); without
 * one, the table is drawn from seed (splitmix64, Box–Muller; the same seed gives the same
 * table for every array of the same d). Returns 0 or 2. */
int position_add_absolute(const position_values *v, const char *what, uint64_t seed, la_array *x);

/* Rotates x (…, n, d) by rotary positions 0..n−1 (la_rotary_apply_*): d must be even
 * (else one line naming `what`, and 2). Returns 0 or 2. */
int position_rotate(const char *what, la_array *x);

/* The help lines of the flags. */
void position_print_help(FILE *out);

void position_free(position_values *v);

#endif
