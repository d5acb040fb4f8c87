/* variants.h — the approximating kernels' parameters on the command line: one set of
 * flags, the same in every subcommand that runs kernels (attend, bench, scaling, approx),
 * filling the parameter blocks the registry rows read (la_kernel_info.block, .params):
 *   --window R          local softmax: keys within R positions of the query    [64]
 *   --proj-rank K       Linformer: keys and values projected to K rows         [256]
 *   --proj E.npy,F.npy  Linformer: the projections themselves, (K, M) each; without it
 *                       they are drawn from --seed
 *   --features M        FAVOR+: random features per head                      [256]
 *   --score-dim A       additive scores: d_a, the rows of W and entries of v    [64]
 *   --score-w W.npy     general: W (d_k, d_k); additive: W = [W_q W_k] (d_a, 2·d_k);
 *                       without it W is drawn from --seed (la_kernel_draw)
 *   --score-v v.npy     additive: v (d_a,), with --score-w
 *   --seed S            Linformer's, FAVOR+'s and the score weights' random draws [0]
 * A flag that none of the chosen kernels reads is refused, naming the kernels that read
 * it, so a mistyped run never silently ignores a parameter. */
#ifndef LA_VARIANTS_H
#define LA_VARIANTS_H

#include "core/blocks.h"
#include "kernels.h"
#include "linattn.h"

#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *window, *proj_rank, *proj, *features, *seed;
    const char *score_dim, *score_w, *score_v; /* the score functions */
} variants_flags;

/* The entries of a subcommand's cli_flag table, for the variants_flags f: the parameters;
 * --seed, for a subcommand without a seed of its own (the sweeps' --seed seeds their
 * random inputs and these draws alike); --proj, for attend only (its arrays fix M, which
 * a sweep changes from point to point). */
#define VARIANTS_PARAM_FLAGS(f)                                                                    \
    {"window", &(f).window, NULL}, {"proj-rank", &(f).proj_rank, NULL},                            \
        {"features", &(f).features, NULL},                                                         \
    {                                                                                              \
        "score-dim", &(f).score_dim, NULL                                                          \
    }
#define VARIANTS_SEED_FLAG(f)                                                                      \
    {                                                                                              \
        "seed", &(f).seed, NULL                                                                    \
    }
#define VARIANTS_PROJ_FLAG(f)                                                                      \
    {                                                                                              \
        "proj", &(f).proj, NULL                                                                    \
    }
/* --score-w, --score-v: attend only, like --proj (their arrays fix d_k). */
#define VARIANTS_SCORE_FLAGS(f)                                                                    \
    {"score-w", &(f).score_w, NULL},                                                               \
    {                                                                                              \
        "score-v", &(f).score_v, NULL                                                              \
    }

/* The values of the flags: one parameter block of each kind (linattn.h), by value, with
 * the defaults where a flag was not given. variants_apply links the blocks into one chain
 * (head.next) and points p->params at it: the chain points into *v, so v must outlive
 * every use of p and must not be copied (or moved) after variants_apply; apply again to
 * a copy before using it. One chain serves every kernel (each reads its own block). */
typedef struct {
    la_blocks blocks;          /* linformer's proj_e, proj_f and score's score_w, score_v:
                                  set by variants_apply from the arrays below; relative: the
                                  defaults, attend sets its --positions relative */
    uint64_t seed;             /* --seed: variants_apply gives it to every block (their seeds) */
    la_array proj_e, proj_f;   /* float64 (K, M), when --proj was given; else empty */
    la_array score_w, score_v; /* float64, when --score-w (--score-v) was given; else empty */
    unsigned given;            /* the LA_PARAM_* bits whose flags were given */
    /* Linformer's E and F drawn once for one shape (variants_hold_draws), (held_rank,
     * held_keys) each from held_seed; NULL when none */
    double *held_e, *held_f;
    size_t held_rank, held_keys;
    uint64_t held_seed;
    /* FAVOR+'s W drawn once (variants_hold_draws), (held_features, held_dk) from
     * held_w_seed; NULL when none */
    double *held_w;
    size_t held_features, held_dk;
    uint64_t held_w_seed;
} variants_values;

/* Every block's defaults (LA_*_PARAMS_INIT), seed for every draw, nothing given, no
 * arrays (variants_free has nothing to free). */
void variants_defaults(variants_values *out, uint64_t seed);

/* Parses the flags into *out (defaults for those not given; --proj's files read and
 * converted to float64, their K taken as the rank). params_read: the OR of the chosen
 * kernels' la_kernel_info.params; a flag whose bit is not in it is refused. Returns 0,
 * or 2 after one line; *out needs variants_free either way. */
int variants_parse(const variants_flags *f, unsigned params_read, variants_values *out);

/* Points p->params (its sizes already set) at v's blocks, chained, each block's seed
 * v->seed. --proj's arrays must be (K, n_keys), --score-w's (d_k, d_k) without --score-v
 * and (d_a, 2·d_k) with it (d_a its length): else one line and 2 (p->params untouched).
 * The chain and the arrays stay owned by v (see variants_values). */
int variants_apply(variants_values *v, la_problem *p);

/* For a timed kernel that reads Linformer's projections (LA_PARAM_PROJ) and was given
 * none (--proj): draws E and F for p's rank, n_keys and seed once (la_kernel_draw, the
 * draw the kernel makes itself on each call without them: the same bits), holds them in
 * v, reused while that shape stays, and points v's Linformer block (p's chain, after
 * variants_apply) at them. So a timing measures the kernel as a model runs it, with E
 * and F it keeps (they are a Linformer layer's parameters), not a Box–Muller draw of
 * 2·k·M entries per call. For FAVOR+ (LA_PARAM_FEATURES) the same with its W (features,
 * d_k), whose draw (Gaussians, then Gram–Schmidt) took 1.9 ms a call at m = 256, d_k = 64.
 * Returns 0, or 1 out of memory (one line). */
int variants_hold_draws(variants_values *v, la_kernel kernel, const la_problem *p);
/* Frees what variants_hold_draws holds and points v's Linformer block back at --proj's
 * arrays (or none), FAVOR+'s at none: where a measurement must not count their memory. */
void variants_release_draws(variants_values *v);

/* Links v's blocks into one chain, each block's seed v->seed, and returns its head (a
 * la_layer_config's params; variants_apply calls it). The arrays of the flags are put in
 * by variants_apply only. The chain points into *v, as variants_apply's does. */
const la_params *variants_chain(variants_values *v);

/* The budget field of a kernel's block in v (common/kernels.h: local.window,
 * linformer.proj_rank, favor.features), NULL for BUDGET_NONE. */
size_t *variants_budget_field(variants_values *v, kernels_budget b);

void variants_free(variants_values *v);

/* Whether kernel can run p's parameters: 0 when it reads the projections (LA_PARAM_PROJ)
 * and K, the rank of p's la_linformer_params (its default when p->params has none), is
 * above M = p->n_keys (the kernel would refuse: LA_EINVAL), else 1. attend refuses such a
 * run with one line; bench and scaling record the point as skipped_rank, not run. */
int variants_rank_fits(la_kernel kernel, const la_problem *p);

/* The OR of la_kernel_info.params over kernels[0..n). */
unsigned variants_params_of(const la_kernel *kernels, size_t n);

/* The help lines of the flags (with_proj, with_seed: --proj, --score-w, --score-v, --seed
 * too), for the
 * kernels of the registry that read each ("  --window R   local: ..."); none when no
 * row reads any of them. */
void variants_print_help(FILE *out, int with_proj, int with_seed);

#endif
