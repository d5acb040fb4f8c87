/* inputs.h — the experiments' random inputs: a seeded generator (splitmix64) and fills,
 * so every experiment draws its q, k, v the same reproducible way. */
#ifndef LA_INPUTS_H
#define LA_INPUTS_H

#include "layout.h"
#include "linattn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t s;
} inputs_rng;

/* A generator for one purpose, derived from the run's seed and a label (so inputs do not
 * depend on which points ran before). */
inputs_rng inputs_rng_for(uint64_t seed, const char *label);
double inputs_normal(inputs_rng *r);  /* N(0, 1) */
double inputs_uniform(inputs_rng *r); /* [0, 1) */

/* x[i] ~ N(0, sigma²) */
void inputs_fill_normal_f32(inputs_rng *r, float *x, size_t n, double sigma);

/* The elements of an array of a × b × c floats, or 0 when that count or its bytes
 * overflow size_t: the one overflow-checked size of the commands' inputs. */
size_t inputs_float_count(size_t a, size_t b, size_t c);

/* ‖y − ref‖ / ‖ref‖ in float64 (‖y‖ when ref is all zero); +inf when any element is NaN
 * or infinite, so a broken kernel never looks accurate. */
double inputs_rel_error_f64(const double *y, const double *ref, size_t n);

/* RMS(y − ref) / RMS(v) in float64, y and ref of n elements, v of n_v: the error of an
 * approximation against exact attention on a scale that does not shrink as the output
 * does (each output row of softmax attention is a weighted average of V's rows, so the
 * RMS of V is the size of a typical value; ‖y_softmax‖ falls as the weights spread).
 * RMS(y − ref) itself when v is all zero; +inf when any element is NaN or infinite. */
double inputs_rms_error_vs_v(const double *y, const double *ref, size_t n, const double *v,
                             size_t n_v);

/* ---------------------------------------------------------------- input sources */

/* Where an experiment's q, k, v come from (accuracy, bench, scaling): random N(0, 1)
 * draws, or the user's arrays from --q/--k/--v. The arrays follow attend's conventions:
 * Q (…, N, d_k), K (…, M, d_k), V (…, M, d_v) with the same leading dims, none, (H,) or
 * (B, H); float16, bfloat16, float32 or float64 (arrays_read_floats), held in float32. A
 * point of n queries and m keys takes the first n rows of Q and the first m rows of K
 * and V of every head: N is swept over prefixes of the sequence. */
typedef struct {
    int from_files;        /* 0: random */
    uint64_t seed;         /* random: the seed (inputs_rng_for's, with the caller's label) */
    const char *path[3];   /* files: --q, --k, --v as given */
    la_array q, k, v;      /* files: float32 */
    size_t batch, heads;   /* files: the leading dims (1 where absent) */
    size_t n, m, d_k, d_v; /* files: query rows, key rows, head sizes */
    layout_kind layout;    /* files: how they were read (layout.h) */
} inputs_source;

/* Random inputs from seed when q, k and v are all NULL; else reads and checks the three
 * files (all three are needed). Returns 0, or 2 after one line (cli.h's rule:
 * "linattn: k.npy: d_k = 8 differs from Q's d_k = 16"), with nothing held. */
int inputs_source_open(inputs_source *s, const char *q, const char *k, const char *v,
                       uint64_t seed);
/* The same, the files in layout (bnhd arrays transposed to (B, H, N, d) on reading). */
int inputs_source_open_as(inputs_source *s, layout_kind layout, const char *q, const char *k,
                          const char *v, uint64_t seed);
void inputs_source_close(inputs_source *s);

/* The longest prefix a self-attention point (N = M) can take: min(N, M) of the arrays;
 * SIZE_MAX for random inputs. */
size_t inputs_source_max_n(const inputs_source *s);

/* The results' metadata line (with its newline): "# inputs: random (seed 1)\n" or
 * "# inputs: q.npy k.npy v.npy (B=1 H=2 N=512 M=512 d_k=64 d_v=64; points take
 * prefixes of N and M)\n". */
void inputs_source_describe(const inputs_source *s, char *buf, size_t size);

/* Fills one point's inputs, q: (heads, n, d_k), k: (heads, m, d_k), v: (heads, m, d_v)
 * row-major: random draws from inputs_rng_for(seed, label), q then k then v, or copies of
 * the arrays' first n query rows and m key rows of every head. For files heads must be
 * B·H, d_k and d_v the arrays', n <= N and m <= M: returns -1 otherwise, else 0. */
int inputs_source_fill(const inputs_source *s, const char *label, size_t heads, size_t n, size_t m,
                       size_t d_k, size_t d_v, float *q, float *k, float *v);

#endif
