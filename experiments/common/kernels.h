/* kernels.h — the attention kernels as the commands see them, all read from the library's
 * kernel registry (la_kernel_get): the series of the result files, the spellings of the
 * command line, and the help lines that list them. A new registry row shows up in every
 * command through these; the few facts the registry does not hold are the small
 * tables in kernels.c, each with a default for a kernel it does not name.
 *
 * Words used below:
 *   series  a kernel run with causal masking off or on, named as in result files
 *           (la_kernel_series: "softmax", "softmax_causal", "linear_causal_chunked");
 *   family  the kernels one attention has: the row whose name, with '_', begins the
 *           others' ("softmax" for "softmax_materialized", "linear" for
 *           "linear_recurrent"); a row no other row's name begins is its own family;
 *   form    a kernel's name within its family, as the deprecated attend --kernel and
 *           bench --causal-form spell it ("materialized", "recurrent"; the family's
 *           own row has a word of its own: "fused" for softmax, "chunked" for linear);
 *           kept for those two flags' last release. */
#ifndef LA_KERNELS_H
#define LA_KERNELS_H

#include "linattn.h"

#include <stddef.h>
#include <stdio.h>

/* ---------------------------------------------------------------- series */

typedef struct {
    la_kernel kernel;
    int causal;
    const char *name; /* la_kernel_series(kernel, causal) */
} kernels_series;

enum { KERNELS_MAX_SERIES = 2 * LA_KERNEL_COUNT };

/* Every series the registry allows, kernel by kernel in registry order, the non-causal
 * one first: softmax, softmax_causal, softmax_materialized, …, linear_causal_recurrent.
 * Fills out (KERNELS_MAX_SERIES entries) and returns the count. */
size_t kernels_all_series(kernels_series *out);

/* selected[i] = 1 for every series of all[0..n) except those named in left_out
 * (NULL-terminated): a command's default selection, so a new kernel is in it. */
void kernels_select_all_but(const kernels_series *all, size_t n, const char *const *left_out,
                            int *selected);

/* A list of series names, each one of all[0..n) ('-' may stand for '_') and none twice.
 * selected[i] becomes 1 for the series named, 0 for the others. Returns 0, or 2 after
 * one line ("--variant: 'foo' is not one of softmax, softmax_causal, …"). */
int kernels_parse_series_list(const char *flag, const char *text, const kernels_series *all,
                              size_t n, int *selected);

/* "softmax, softmax_causal, …, linear_causal_recurrent" (the names of all[0..n) with
 * selected[i] set, or all of them when selected is NULL) into buf; returns buf. */
const char *kernels_series_names(const kernels_series *all, size_t n, const int *selected,
                                 char *buf, size_t size);

/* ---------------------------------------------------------------- names */

/* One spelling per kernel, the registry's (la_kernel_name: "softmax_materialized"), in
 * every help text, table and results file; on input '-' may stand for '_'
 * ("softmax-materialized"), as la_kernel_parse reads it. Every subcommand chooses its
 * kernels with --variant. */

/* The names of the kernels for which keep(k) is nonzero (all when keep is NULL), in
 * registry order, joined by sep ("softmax|hard|linear"). Into buf; returns buf. */
const char *kernels_kernel_names(int (*keep)(la_kernel), const char *sep, char *buf, size_t size);

/* text names one kernel (either spelling) for which keep(k) is nonzero (any when keep is
 * NULL): *out receives it. Else one line and 2: "--variant: 'x' is not one of softmax,
 * softmax_materialized, hard, linear", or, for a list where one kernel is wanted,
 * "--variant: takes one kernel here, not the list 'softmax,linear'". */
int kernels_parse_kernel(const char *flag, const char *text, int (*keep)(la_kernel),
                         la_kernel *out);

/* A comma-separated list of kernels, each as kernels_parse_kernel reads it and none twice
 * (in either spelling): out[0..*count) in the order given, at most max. 0, or 2 after
 * one line. */
int kernels_parse_kernel_list(const char *flag, const char *text, int (*keep)(la_kernel),
                              la_kernel *out, size_t max, size_t *count);

/* A kernel a Transformer layer can use: it runs both with and without causal masking
 * (LA_CAUSAL_ALLOWED; la_layer_config_check's rule). */
int kernels_layer_kernel(la_kernel k);

/* The kernel's family (see above), and its form within it. */
la_kernel kernels_family(la_kernel k);
/* Whether k is exact softmax attention: the registry's family "softmax" without
 * LA_CAP_APPROXIMATES (softmax, softmax_materialized; hard approximates it). */
int kernels_exact_softmax(la_kernel k);
const char *kernels_form(la_kernel k);

/* A kernel's budget: the one parameter-block field among window (LA_PARAM_WINDOW, in
 * la_local_params), proj_rank (LA_PARAM_PROJ, la_linformer_params) and features
 * (LA_PARAM_FEATURES, la_favor_params) its row's params say it reads, the quantity an
 * approximation trades against its cost. kernels_budget_names[b] is its name in result
 * files ("window", "proj_rank", "features"; "none" for a kernel without one);
 * variants_budget_field (common/variants.h) its field among a command's blocks. */
typedef enum { BUDGET_NONE, BUDGET_WINDOW, BUDGET_PROJ, BUDGET_FEATURES } kernels_budget;
extern const char *const kernels_budget_names[];
kernels_budget kernels_budget_of(la_kernel k);

/* Whether the kernel's causal rule accepts causal = 0 or 1. */
int kernels_allows(la_kernel k, int causal);

/* The family's kernels that accept causal (0 or 1), in registry order, into out
 * (LA_KERNEL_COUNT entries); returns the count. */
size_t kernels_family_kernels(la_kernel family, int causal, la_kernel *out);

/* Whether the family has a kernel that runs only causal (LA_CAUSAL_REQUIRED): then its
 * causal runs come in forms (linear: chunked and recurrent), as the deprecated bench
 * --causal-form chooses them. */
int kernels_has_causal_forms(la_kernel family);

/* ---------------------------------------------------------------- facts the registry lacks */

/* The exponent e of a kernel's time in N (self-attention, N = M, fixed d): its registry
 * row's time_exponent (2 for the kernels that visit every (query, key) pair, 1 for the
 * linear ones). Outside the registry: 2 and *known = 0 (known may be NULL), so the sweeps
 * predict larger sizes as quadratic and skip sooner rather than later. */
double kernels_time_exponent(la_kernel k, int *known);

/* ---------------------------------------------------------------- help */

/* The help texts' list of kernels: a heading naming the flag,
 *     kernels (--variant, from the registry NOTE; '-' for '_' accepted):
 * then one line per kernel for which keep(k) is nonzero (all when keep is NULL),
 * "  <name padded> <summary>", with "(causal only)" or "(non-causal only)" where its
 * causal rule says so, the summary wrapped at 88 columns under itself. note (may be
 * NULL) follows "registry": ", those a layer can use". */
void kernels_print_kernels(FILE *out, int (*keep)(la_kernel), const char *note);

#endif
