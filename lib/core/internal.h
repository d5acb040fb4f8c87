/* internal.h — shared by the library's own files; not installed, not public. */
#ifndef LA_INTERNAL_H
#define LA_INTERNAL_H

#include "linattn.h"

/* The internal entry points the public ones dispatch to, visible to every library file. */
#include "attention/kernels.h"
#include "attention/series.h"
#include "cpu/machine.h"
#include "io/outfile.h"
#include "layers/layers_typed.h"

#include <stdbool.h>
#include <stddef.h>

/* Row-major-or-not matrix product through BLIS, single-threaded (the caller's OpenMP
 * loop owns the threads):
 *   C (m×n, strides rsc, csc) = alpha · A (m×k, rsa, csa) · B (k×n, rsb, csb) + beta · C.
 * Transposes are expressed through the strides: Aᵀ of a row-major (k×m) matrix is
 * rsa = 1, csa = m's leading dimension. Sizes of zero are fine (C is scaled by beta). */
void la_gemm_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta, float *c,
                 ptrdiff_t rsc, ptrdiff_t csc);
void la_gemm_f64(size_t m, size_t n, size_t k, double alpha, const double *a, ptrdiff_t rsa,
                 ptrdiff_t csa, const double *b, ptrdiff_t rsb, ptrdiff_t csb, double beta,
                 double *c, ptrdiff_t rsc, ptrdiff_t csc);
/* The same on `threads` of BLIS's own threads, for one large product (gemm.c): call
 * outside any OpenMP parallel region. Each element's k terms are summed in the same
 * order for any thread count. */
void la_gemm_threaded_f32(int threads, size_t m, size_t n, size_t k, float alpha, const float *a,
                          ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb,
                          ptrdiff_t csb, float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc);
void la_gemm_threaded_f64(int threads, size_t m, size_t n, size_t k, double alpha, const double *a,
                          ptrdiff_t rsa, ptrdiff_t csa, const double *b, ptrdiff_t rsb,
                          ptrdiff_t csb, double beta, double *c, ptrdiff_t rsc, ptrdiff_t csc);
/* Makes la_gemm_* unable to fail for `threads` concurrent callers (each product then
 * takes its packing buffers from BLIS's pools, which this grows up front): every kernel
 * calls it, with the threads it will run, before it writes anything. Returns LA_OK, or
 * LA_ENOMEM when the memory is not there (nothing is allocated then). Thread-safe. */
la_status la_gemm_reserve(int threads);
/* The same contract as la_gemm_f32, for the small blocks of the linear kernels: on
 * AVX-512 register tiles when alpha = 1, beta is 0 or 1 and B and C have unit column
 * stride (gemm_small.c), else through BLIS. */
void la_gemm_small_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t rsa,
                       ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                       float *c, ptrdiff_t rsc, ptrdiff_t csc);
/* The same with doubles (8×16 tiles), under the same conditions. */
void la_gemm_small_f64(size_t m, size_t n, size_t k, double alpha, const double *a, ptrdiff_t rsa,
                       ptrdiff_t csa, const double *b, ptrdiff_t rsb, ptrdiff_t csb, double beta,
                       double *c, ptrdiff_t rsc, ptrdiff_t csc);

/* C (m×n, row stride ldc) = alpha · A (m×k, row stride lda) · Bᵀ, B (n×k, row stride ldb):
 * the portable engine's Q·Kᵀ. float32 with AVX-512 and 1 <= k <= 256: B transposed 32 rows at a
 * time into a panel for gemm_small's register tiles, alpha applied to each finished
 * element; otherwise (and float64) BLIS with B read through swapped strides. */
void la_gemm_small_abt_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t lda,
                           const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc);
void la_gemm_small_abt_f64(size_t m, size_t n, size_t k, double alpha, const double *a,
                           ptrdiff_t lda, const double *b, ptrdiff_t ldb, double *c, ptrdiff_t ldc);

/* dst (cols, rows; row stride ldd) = srcᵀ, src (rows, cols; row stride lds), for the
 * linear kernels' small blocks (transpose.c); no overlap. */
void la_transpose_f32(size_t rows, size_t cols, const float *src, size_t lds, float *dst,
                      size_t ldd);
void la_transpose_f64(size_t rows, size_t cols, const double *src, size_t lds, double *dst,
                      size_t ldd);

/* Block sizes of the softmax family's portable tiles (softmax.c, local.c, scores.c,
 * relative.c), which their cost functions need for the workspace: one place, so the two
 * cannot drift apart. Fixed, so the rounding never depends on the machine or the thread
 * count. */
enum {
    LA_SOFTMAX_Q_BLOCK = 64,  /* queries per task */
    LA_SOFTMAX_K_BLOCK = 256, /* keys per score block */
};

/* The fused softmax kernel's AVX-512 tiles (lib/attention/engine_avx512.c, the tile sets
 * la_engine_avx512_* of engine.h), float32: tasks of la_fused_simd_q_block() queries (in
 * the vector lanes: LA_FUSED_SIMD_Q_BLOCK, or _LARGE where measured faster), key blocks of
 * LA_FUSED_SIMD_K_BLOCK. softmax.c and local.c run them in place of the portable
 * (BLIS-based) tiles when la_fused_simd_usable(p), and la_softmax_cost and la_local_cost
 * model their scratch with la_fused_simd_scratch_bytes. */
enum {
    LA_FUSED_SIMD_Q_BLOCK = 32,
    LA_FUSED_SIMD_Q_BLOCK_LARGE = 64,
    LA_FUSED_SIMD_K_BLOCK = 128,
};
bool la_fused_simd_usable(const la_problem *p);
/* Queries per float32 wide task, chosen once per process: LA_FUSED_QUERIES=32|64 forces
 * one; on a Zen 5 (two 512-bit FMA pipes, 48 KiB L1) 64, measured faster there
 * (docs/performance.md); elsewhere 32 (a Zen 4 measured 64 slower on a long head). Both
 * give the same bits, except in a last task of at most LA_FUSED_SIMD_NARROW_ROWS queries
 * (the narrow tiles, another order of sums), which one size may leave and not the other.
 * la_fused_simd_use_q_block(32 or 64) runs later calls on that size, 0 goes back to the choice
 * (tests). la_fused_simd_config says what runs and why, e.g. "64 queries (Zen 5: measured faster
 * there)"; a static string. */
size_t la_fused_simd_q_block(void);
void la_fused_simd_use_q_block(size_t q_block);
const char *la_fused_simd_config(void);
/* Tests: off forces every kernel onto its portable (BLIS-based) path; on
 * restores the default (still off where the CPU lacks AVX-512 or LA_SIMD=off). */
void la_avx512_enable(bool on);
/* Tests: on makes la_outfile_open use its named fallback (target.tmp.XXXXXX, the path
 * taken where the file system has no O_TMPFILE); off restores O_TMPFILE. */
void la_outfile_named_only(bool on);
size_t la_fused_simd_scratch_bytes(const la_problem *p, size_t q_block); /* per thread */
/* Float32 tasks of at most LA_FUSED_SIMD_NARROW_ROWS queries (decoding) take the narrow
 * tiles, one query at a time with the keys in the lanes, which also take max|k| and max|v|
 * on the loads they make anyway (la_engine_task.kv_bits): such a call reads K and V once
 * instead of twice and checks the range after the fact (on the staged output, below). */
enum { LA_FUSED_SIMD_NARROW_ROWS = 4 };
/* Bytes of the output staged by a fused float32 call of N <= LA_FUSED_SIMD_NARROW_ROWS
 * queries that checks the range inside the kernel (B·H·N·d_v floats, then B·H·N for lse
 * when `lse`), or 0 when the call checks before it (N larger, or no AVX-512). Part of
 * the call's workspace, after the threads' scratch, rounded up to 64 bytes
 * (la_engine_run; la_softmax_cost counts the same). */
size_t la_fused_simd_staging_bytes(const la_problem *p, bool lse);
/* y[i] = 2^x[i] for x[i] <= 0 with the kernel's exp2 (for its accuracy test). */
void la_fused_simd_exp2(const float *x, float *y, size_t n);
/* The float64 tiles (engine_avx512.c too), run under the same conditions
 * (la_fused_simd_usable): tasks of LA_FUSED_SIMD_F64_Q_BLOCK queries (two vectors of 8
 * lanes), key blocks of LA_FUSED_SIMD_F64_K_BLOCK. */
enum { LA_FUSED_SIMD_F64_Q_BLOCK = 16, LA_FUSED_SIMD_F64_K_BLOCK = 128 };
size_t la_fused_simd_scratch_bytes_f64(const la_problem *p); /* per thread */
/* y[i] = e^x[i] for x[i] <= 0 with that kernel's exp (for its accuracy test). */
void la_fused_simd_exp_f64(const double *x, double *y, size_t n);

/* The parameter blocks p->params chains (linattn.h), each kind's block by value: the one
 * given, or its LA_*_PARAMS_INIT defaults. la_params_check: the chain's rules (kinds
 * known, each once, sizes >= 1, tensors in pairs); la_problem_check and
 * la_layer_config_check call it. */
la_status la_params_check(const la_params *chain);
/* Inline: the kernels' keys functions read their block once per query row. */
static inline const la_params *la_params_find(const la_params *chain, la_params_kind kind)
{
    for (int n = 0; chain && n < LA_PARAMS_END; chain = chain->next, n++)
        if (chain->kind == kind) return chain;
    return NULL;
}
static inline la_local_params la_local_params_of(const la_problem *p)
{
    static const la_local_params defaults = LA_LOCAL_PARAMS_INIT;
    const la_params *b = la_params_find(p ? p->params : NULL, LA_PARAMS_LOCAL);
    return b ? *(const la_local_params *)b : defaults;
}

static inline la_linformer_params la_linformer_params_of(const la_problem *p)
{
    static const la_linformer_params defaults = LA_LINFORMER_PARAMS_INIT;
    const la_params *b = la_params_find(p ? p->params : NULL, LA_PARAMS_LINFORMER);
    return b ? *(const la_linformer_params *)b : defaults;
}

static inline la_favor_params la_favor_params_of(const la_problem *p)
{
    static const la_favor_params defaults = LA_FAVOR_PARAMS_INIT;
    const la_params *b = la_params_find(p ? p->params : NULL, LA_PARAMS_FAVOR);
    return b ? *(const la_favor_params *)b : defaults;
}

static inline la_score_params la_score_params_of(const la_problem *p)
{
    static const la_score_params defaults = LA_SCORE_PARAMS_INIT;
    const la_params *b = la_params_find(p ? p->params : NULL, LA_PARAMS_SCORE);
    return b ? *(const la_score_params *)b : defaults;
}

static inline la_relative_params la_relative_params_of(const la_problem *p)
{
    static const la_relative_params defaults = LA_RELATIVE_PARAMS_INIT;
    const la_params *b = la_params_find(p ? p->params : NULL, LA_PARAMS_RELATIVE);
    return b ? *(const la_relative_params *)b : defaults;
}

/* Keys of batch entry b that the key-length mask leaves visible: min(M, L_b). */
size_t la_keys_in_length(const la_problem *p, size_t b);

/* The causal diagonal's offset o: query i sees key j <= i + o. 0 without causal or
 * top-left, M − N bottom-right (p->causal_align). */
ptrdiff_t la_causal_offset(const la_problem *p);

/* Whether p is causal with o != 0 (bottom-right, N != M): the kernels written for the
 * top-left diagonal (linear and FAVOR+ causal, their backward) then run the equivalent
 * square problem (lib/attention/align.c). */
bool la_causal_square(const la_problem *p);

/* Number of keys visible to query i of batch entry b: min(M, L_b, causal ? max(0, i + o
 * + 1) : M), o = la_causal_offset(p). Never decreases with i. */
size_t la_visible_keys(const la_problem *p, size_t b, size_t i);

/* la_visible_keys for an entry whose key lengths leave m keys visible: min(m, causal ?
 * max(0, i + o + 1) : m). */
size_t la_visible_keys_of(const la_problem *p, size_t m, size_t i);

/* The first query the causal mask lets see key j: max(0, j − o), 0 without causal
 * (key lengths not applied; may be >= N when no query sees j). */
size_t la_first_query_seeing(const la_problem *p, size_t j);

/* Whether p has a general mask (p->mask or p->key_mask): the kernels then test each
 * (query, key) pair of the visible prefix with la_mask_hides. */
bool la_has_masks(const la_problem *p);

/* Whether p->mask or p->key_mask hides key j from query i of head hd = b·H + h. */
bool la_mask_hides(const la_problem *p, size_t hd, size_t i, size_t j);

/* la_visible_pairs for an entry whose key lengths leave m keys visible. */
double la_visible_pairs_of(const la_problem *p, size_t m);

/* Overflow-checked size_t arithmetic: false when the result does not fit. */
bool la_mul_ok(size_t a, size_t b, size_t *out);
/* Whether strides are the contiguous layout's (all zero; problem.c). */
bool la_strides_contiguous(const la_strides *s);

/* The one check of a feature map: a value of the enum. */
static inline bool la_feature_map_ok(la_feature_map fm)
{
    return (unsigned)fm < LA_FEATURE_COUNT;
}

/* Whether a registry row accepts causal = 0 or 1 (its causal rule; registry.c). */
bool la_causal_allowed(const la_kernel_info *info, int causal);

/* FLOP counting, for the cost-model test only. In a build with -DLA_COUNT_FLOPS (the
 * Makefile builds one, $(BUILD)/count/liblinattn.a, for test_cost) the kernels add what
 * they issue to these counters as they run: a product of m×n×k through GEMM/GEMM_SMALL
 * 2·m·n·k, a dot product of n 2·n, a loop's adds, divides, φ as they execute, each into
 * the la_cost field it belongs to. Without the macro LA_COUNT expands to nothing: no
 * code, no cost. The counters are shared by all threads (atomic adds); counts of whole
 * FLOPs stay exact in a double up to 2^53. */
typedef enum {
    /* the la_cost fields, as issued */
    LA_COUNT_QK,
    LA_COUNT_SOFTMAX,
    LA_COUNT_AV,
    LA_COUNT_PHI,
    LA_COUNT_KV,
    LA_COUNT_QS,
    LA_COUNT_NORMALIZE,
    LA_COUNT_COMBINE,      /* adds that join two partial sums (a chunk's ΔS_c into the carried
                              state, a block's partial z, a key piece's partial [S z]): not in
                              the model (lib/linattn.h, la_cost) */
    LA_COUNT_HIDDEN,       /* entries of a computed block that a mask then zeroes (not FLOPs:
                              the causal chunk's A above its diagonal) */
    LA_COUNT_ENGINE_PAIRS, /* (query, key) entries of the key blocks the online-softmax
                              engine hands its tiles (not FLOPs: its work's extent) */
    LA_COUNT_RANGE_READ,   /* elements the range scans read (la_max_abs) */
    LA_COUNTERS
} la_counter;
void la_count_add(la_counter c, double n);
void la_count_reset(void);
double la_count_get(la_counter c);
bool la_count_enabled(void); /* whether this build was compiled with LA_COUNT_FLOPS */
#ifdef LA_COUNT_FLOPS
#define LA_COUNT(counter, n) la_count_add((counter), (double)(n))
#else
#define LA_COUNT(counter, n) ((void)0)
#endif

/* OpenMP thread count to use (la_get_num_threads()). */
int la_threads(void);
/* min(n, the online cores): every thread count the library runs on (linattn.h, threads). */
int la_thread_clamp(int n);

#endif
