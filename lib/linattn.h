/* linattn.h — softmax and kernelized linear attention, with float64 references.
 *
 * linattn compares standard softmax attention, softmax(Q Kᵀ · scale) V, with the
 * kernelized linear attention of Katharopoulos et al., "Transformers are RNNs"
 * (2020), y_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + ε) with S = Σ_j φ(k_j) v_jᵀ, z = Σ_j φ(k_j).
 *
 * SHAPES. Per head, Q is (N, d_k), K is (M, d_k), V is (M, d_v) and the output is
 * (N, d_v), all row-major. A call covers batch × heads such problems stored back to
 * back, i.e. q is (B, H, N, d_k) row-major, k is (B, H, M, d_k), v is (B, H, M, d_v),
 * out is (B, H, N, d_v).
 *
 * MASKS. A key is visible to a query when every mask given lets it (they combine).
 * Causal: query i sees key j when j <= i (for M != N the mask is aligned as in
 * PyTorch's is_causal, top-left, unless p->causal_align asks for bottom-right: j <= i +
 * M − N, the decoding convention). Key lengths: key_lengths[b] = L hides keys j >= L of
 * every head of batch entry b. A query that sees no key at all (L = 0) gets a zero
 * output row in every kernel, instead of the 0/0 a literal formula would give.
 * General masks (p->mask, (N, M) or (B·H, N, M), and p->key_mask, (B, M); uint8, nonzero
 * = hidden, caller-owned, read during the call only): softmax (fused, lse, materialized),
 * hard, local and the backward passes of the first three honor both, a row they hide
 * entirely being the empty row; linear attention (every form, and its backward) honors key_mask
 * exactly (a hidden key adds nothing to S or z, and gets zero d_k, d_v) and refuses mask
 * (LA_EINVAL: a general mask breaks the shared state S = Σ φ(k_j)v_jᵀ); la_attention_weights_* as
 * the kernels (softmax, hard, local both; linear the key mask); Linformer and FAVOR+ refuse either
 * (LA_EINVAL): Linformer's projection mixes the keys before any mask could hide one, and
 * FAVOR+'s stabilizer would need the masked keys' maximum. Under a general mask the float32 fused
 * kernel runs its portable path (not the AVX-512 one), testing each pair.
 *
 * PRECISION. Every kernel comes in float32 (_f32, the fast path) and float64 (_f64).
 * The la_ref_* functions are separate float64 oracles written as plain loops.
 *
 * MEMORY. Kernels allocate their own scratch and return LA_ENOMEM when they cannot;
 * that includes BLIS's packing buffers, reserved before the first product (a block of A
 * and one of B per thread, kept by BLIS for the process's life: address space, touched
 * only by products large enough to pack).
 * The caller owns every pointer it passes; no function keeps a pointer past its return
 * except where stated (la_array data, la_linear_state objects).
 *
 * ERRORS. Every function that can fail returns an la_status. On error nothing has been
 * written to the output, nothing leaks, and nothing is printed. The library never aborts.
 *
 * THREADS. OpenMP over (batch, head, block). The work is split into the same pieces
 * whatever the thread count, so the same input gives bitwise the same output on every
 * run and with every thread count. BLIS is always called single-threaded per piece.
 */
/* INDEX — every function, one line each (f32/f64 twins on one line), in the order of the
 * sections below; each section gives the contracts.
 *
 *   statuses and machine
 *     la_strerror                         a status's message
 *     la_set_num_threads, _get_           threads of every kernel (LA_NUM_THREADS; 1..1024,
 *     la_num_threads_requested            run on at most the cores; the count asked for)
 *     la_blis_config, la_blis_version     the BLIS kernel set and release linked in
 *     la_blis_sgemm                       BLIS sgemm on BLIS's threads (bench's yardstick)
 *     la_fma_peak_gflops                  the float32 FMA peak of this CPU
 *     la_fma_peak_gflops_f64              the float64 FMA peak of this CPU
 *     la_memory_bandwidth_gbs             streaming read and triad bandwidth (GB/s)
 *     la_simd_config                      which float32 path runs (AVX-512 or portable)
 *   problems
 *     la_feature_map_name, _parse         φ's name <-> enum
 *     la_problem_init, la_problem_check   an attention problem: sizes, masks, parameters
 *   kernels (one registry row each; implementation, reference and tests under each)
 *     la_softmax_attention_f32/_f64       softmax, fused (online, never the N×M scores)
 *     la_softmax_attention_lse_f32/_f64   the same, also returning each row's log-sum-exp
 *     la_softmax_attention_backward_*     its backward (FlashAttention-2; lse given or not)
 *     la_softmax_attention_materialized_* softmax, materializing the N×M scores
 *     la_softmax_attention_materialized_backward_*  its backward, on the held N×M matrix
 *     la_hard_attention_f32/_f64          hard (argmax) attention
 *     la_hard_attention_backward_*        its backward (d_q = d_k = 0, d_v scattered)
 *     la_linear_attention_f32/_f64        linear: non-causal, or causal in chunks
 *     la_linear_attention_recurrent_*     linear, causal, token by token
 *     la_linear_attention_backward_*      linear's gradients: non-causal, or causal chunked
 *     la_linear_attention_recurrent_backward_*  linear, causal: gradients token by token
 *     la_linformer_attention_f32/_f64     Linformer: keys, values projected to k rows, softmax
 *     la_linformer_projections            Linformer's E, F drawn from a seed
 *     la_local_attention_f32/_f64         restricted (local) softmax: keys within r positions
 *     la_favor_attention_f32/_f64         FAVOR+ (Performer): linear on positive random features
 *     la_favor_attention_recurrent_f32/_f64  FAVOR+, causal, token by token
 *     la_favor_features                   FAVOR+'s random features W, drawn from a seed
 *     la_general_attention_f32/_f64       softmax over general scores q·W·k
 *     la_additive_attention_f32/_f64      softmax over additive scores vᵀtanh(W_q q + W_k k)
 *     la_cosine_attention_f32/_f64        softmax over cosine similarities
 *     la_score_weights                    the score functions' W (and v), drawn from a seed
 *     la_relative_attention_f32/_f64      softmax with relative positions (Shaw et al. 2018)
 *     la_relative_embeddings              its a^K, a^V drawn from a seed
 *     la_rotary_apply_f32/_f64            rotary positions (RoPE): rotate q or k in place
 *     la_linear_attention_rotary_f32/_f64 linear attention with rotary positions (RoFormer)
 *     la_attention_f32/_f64               any kernel, by la_kernel
 *     la_attention_weights_f32/_f64       any kernel's N×M attention matrix (for inspection)
 *   step API (causal linear attention, one token at a time)
 *     la_linear_state_create, _free, _reset, _position
 *     la_linear_step_f32/_f64             one token of every head
 *     la_linear_state_save_size, _save, _restore
 *     la_favor_state_create               the same state API for FAVOR+'s features
 *   references (float64, plain loops)
 *     la_ref_softmax_attention, la_ref_hard_attention, la_ref_linear_attention
 *     la_ref_local_attention
 *     la_ref_favor_attention              FAVOR+, pair by pair
 *     la_ref_linear_attention_backward    linear attention's gradients
 *     la_ref_linformer_attention          Linformer
 *     la_ref_general_attention, la_ref_additive_attention, la_ref_cosine_attention
 *     la_ref_linear_attention_rotary      linear attention with rotary positions
 *     la_ref_relative_attention           softmax with relative positions
 *     la_ref_softmax_attention_backward, la_ref_hard_attention_backward
 *     la_ref_attention                    any kernel's reference, by la_kernel
 *     la_ref_feature_map                  φ, element-wise
 *   cost model
 *     la_visible_pairs                    (query, key) pairs the masks leave visible
 *     la_attention_cost                   FLOPs, workspace, I/O and minimum bytes of one call
 *   backward passes (d_q, d_k, d_v from d_out)
 *     la_attention_backward_f32/_f64      dispatch by la_kernel
 *     la_ref_attention_backward           the float64 oracle of any kernel's backward
 *     la_attention_backward_cost          FLOPs, workspace and I/O bytes of one backward
 *   kernel registry
 *     la_kernel_get                       a kernel's row: functions, reference, cost, rules
 *     la_kernel_name, la_kernel_parse     name <-> la_kernel
 *     la_kernel_series, _series_parse     result-file series name <-> (kernel, causal)
 *   .npy files
 *     la_npy_read, la_npy_parse, la_npy_write, la_array_free, la_npy_dtype_size
 *     la_array_to_f32                     float16 / bfloat16 arrays widened to float32
 *     la_npy_write_outfile                a .npy into an open la_outfile, committed later
 *   Transformer layers (PyTorch's layout and semantics)
 *     la_layer_config_init, _check        what a layer computes
 *     la_layer_tensor_key, _shape         a weight tensor's state_dict key and shape
 *     la_layer_weights_init, _load, _free           one layer's weights
 *     la_transformer_weights_init, _load, _free     a stack's weights
 *     la_layer_norm_f32/_f64, la_ffn_*, la_mha_*    the sublayers
 *     la_encoder_layer_*, la_decoder_layer_*        one layer
 *     la_encoder_*, la_decoder_*, la_transformer_*  stacks
 *     la_add_positional_encoding_*, la_embed_*      sinusoidal positions, token embeddings
 *   sequence layers beside attention (Vaswani et al.'s Table 1)
 *     la_rnn_forward_f32/_f64             recurrent (Elman) layer, N sequential steps
 *     la_conv1d_forward_f32/_f64          1-D convolution over the sequence, width k
 *     la_ref_rnn_forward, la_ref_conv1d_forward     their float64 oracles
 *     la_rnn_cost, la_conv1d_cost         their FLOPs
 *   accounting
 *     la_param_counts                     exact parameter counts, as PyTorch (or a published
 *                                         model's reference code: LA_MODEL_*) counts them
 *     la_layer_cost_model                 FLOPs and bytes of one layer forward
 */
#ifndef LINATTN_H
#define LINATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LA_VERSION_STRING "0.1.0"

/* Marks the public API: the only symbols liblinattn.so exports (the library is built
 * with -fvisibility=hidden; `make test` checks the export list against this header). */
#if defined(__GNUC__)
#define LA_API __attribute__((visibility("default")))
#else
#define LA_API
#endif

/* ---------------------------------------------------------------- statuses */

#define LA_STATUS_LIST(X)                                                                          \
    X(LA_OK, "success")                                                                            \
    X(LA_EINVAL, "invalid argument")                                                               \
    X(LA_ENOMEM, "out of memory")                                                                  \
    X(LA_EBUDGET, "workspace would exceed the memory budget")                                      \
    X(LA_EOVERFLOW, "size overflows")                                                              \
    X(LA_EIO, "input/output error")                                                                \
    X(LA_EFORMAT, "malformed file")                                                                \
    X(LA_EDTYPE, "unsupported data type")                                                          \
    X(LA_ERANGE, "values would overflow the element type: use float64")

typedef enum {
#define LA_STATUS_ENUM(name, msg) name,
    LA_STATUS_LIST(LA_STATUS_ENUM)
#undef LA_STATUS_ENUM
} la_status;

/* A static, human-readable message for a status; never NULL ("unknown status" for
 * values outside the list). */
LA_API const char *la_strerror(la_status status);

/* ---------------------------------------------------------------- threads */

/* Threads used by every kernel. The rule, the same at every entry point (this call,
 * the environment variable LA_NUM_THREADS, the command's --threads):
 *   - a count is accepted in 1..LA_MAX_THREADS; anything else is refused (LA_EINVAL
 *     here, exit 2 in the command), never passed on to OpenMP or BLIS;
 *   - a count above the machine's online cores runs on the cores (oversubscribing them
 *     only makes every kernel slower, and the output is bitwise the same on any count):
 *     la_get_num_threads() returns the count run on, la_num_threads_requested() the
 *     count asked for, and the command's results record both (# threads_requested).
 * la_set_num_threads(n): n in 1..LA_MAX_THREADS; n = 0 restores the default, which is
 * LA_NUM_THREADS when set, else omp_get_max_threads() (capped at LA_MAX_THREADS).
 * Returns LA_EINVAL for n < 0, n > LA_MAX_THREADS, and for n = 0 when LA_NUM_THREADS is
 * set but not an integer in 1..LA_MAX_THREADS (the setting then stays as it was, and
 * the variable is ignored). */
#define LA_MAX_THREADS 1024
LA_API la_status la_set_num_threads(int n);
LA_API int la_get_num_threads(void);
LA_API int la_num_threads_requested(void);

/* The BLIS sub-configuration (kernel set) every matrix product runs on, e.g. "zen3", or
 * "skx (chosen by linattn)" where BLIS did not recognize the CPU and linattn chose
 * kernels by the CPU's instruction sets (lib/cpu/gemm.c). The environment variable
 * LA_BLIS_CONFIG = native | haswell | skx overrides the choice. A static string. */
LA_API const char *la_blis_config(void);

/* The BLIS release linked into the library, e.g. "0.9.0". A static string. */
LA_API const char *la_blis_version(void);

/* C (m×n, strides rsc, csc) = alpha · A (m×k, rsa, csa) · B (k×n, rsb, csb) + beta · C
 * in float32 through BLIS, on `threads` BLIS threads (1..LA_MAX_THREADS, run on at most
 * the online cores; BLIS's own threading): the
 * sgemm yardstick of `linattn bench`, on the kernel set la_blis_config names. Call it
 * outside an OpenMP parallel region. Returns LA_OK, LA_EINVAL (threads outside
 * 1..LA_MAX_THREADS, a NULL matrix), LA_ENOMEM (BLIS's packing buffers could not be
 * reserved; c untouched). */
LA_API la_status la_blis_sgemm(int threads, size_t m, size_t n, size_t k, float alpha,
                               const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *b,
                               ptrdiff_t rsb, ptrdiff_t csb, float beta, float *c, ptrdiff_t rsc,
                               ptrdiff_t csc);

/* The float32 FMA peak of `threads` threads (1..LA_MAX_THREADS, run on at most the
 * online cores; NAN outside) in GFLOP/s: the best of three runs of 12
 * independent chains of 16-lane FMAs in registers (lib/cpu/simd.c), the rate no kernel
 * can pass. NAN where the AVX-512 code does not run (or its result comes out wrong). Call
 * outside a parallel region. */
LA_API double la_fma_peak_gflops(int threads);

/* The float64 FMA peak of `threads` threads, as la_fma_peak_gflops: 12 independent chains
 * of 8-lane (double) FMAs in registers, best of three runs; about half the float32 peak.
 * NAN for threads outside 1..LA_MAX_THREADS and where the AVX-512 code does not run. */
LA_API double la_fma_peak_gflops_f64(int threads);

/* The memory bandwidth of `threads` threads (1..LA_MAX_THREADS, run on at most the online
 * cores) in GB/s (1e9 bytes per second), the best of five passes over arrays of
 * max(4 × the L3 cache, 64 MiB) in all (at most 1 GiB), each thread on its own contiguous
 * slice (lib/cpu/bandwidth.c):
 *   LA_BANDWIDTH_READ   the sum of one float64 array: its bytes, read once;
 *   LA_BANDWIDTH_TRIAD  STREAM's triad a = b + s·c on three float64 arrays: 24 bytes per
 *                       element (b and c read, a written), as STREAM counts; the line of a
 *                       that an ordinary store first reads (write-allocate) is not counted,
 *                       as the cost model's bytes (la_cost.bytes_min) do not count it.
 * The sum and the triad's values are checked (a wrong one: LA_EIO), so the passes cannot
 * have been dropped. Call outside a parallel region. Returns LA_OK and *gbs, LA_EINVAL
 * (gbs NULL, kind outside the enum, threads outside 1..LA_MAX_THREADS), LA_ENOMEM (the
 * arrays could not be allocated), LA_EIO; *gbs untouched on error. */
typedef enum {
    LA_BANDWIDTH_READ = 0,
    LA_BANDWIDTH_TRIAD = 1,
    LA_BANDWIDTH_COUNT
} la_bandwidth_kind;
LA_API la_status la_memory_bandwidth_gbs(la_bandwidth_kind kind, int threads, double *gbs);

/* On CPUs with AVX-512 the fused softmax kernel, φ and the linear kernels' block products, in
 * float32 and float64, run on linattn's own register tiles (lib/attention/softmax_avx512*.c,
 * lib/cpu/gemm_small.c) instead of BLIS; the environment variable LA_SIMD=off keeps them on the
 * portable path (BLIS and compiler-vectorized loops), for comparisons. Results agree with the
 * float64 references either way; bits differ between the two paths. la_simd_config says which path
 * runs: "avx512", "portable (LA_SIMD=off)" or "portable (no AVX-512)". A static string. */
LA_API const char *la_simd_config(void);

/* ---------------------------------------------------------------- problems */

typedef enum {
    LA_FEATURE_ELU1 = 0, /* φ(x) = elu(x) + 1, computed as x + 1 (x >= 0), exp(x) (x < 0) */
    LA_FEATURE_RELU = 1, /* φ(x) = max(x, 0) */
    LA_FEATURE_COUNT     /* the number of feature maps: valid values are [0, LA_FEATURE_COUNT) */
} la_feature_map;

/* Name ("elu", "relu") <-> enum. la_feature_map_name gives "unknown" outside the enum;
 * la_feature_map_parse returns LA_EINVAL for unknown names (it also takes "elu+1"). */
LA_API const char *la_feature_map_name(la_feature_map fm);
LA_API la_status la_feature_map_parse(const char *name, la_feature_map *out);

/* Where the causal mask's diagonal sits when N != M (read only when p->causal = 1).
 *   LA_CAUSAL_TOP_LEFT (the default, PyTorch's is_causal): query i sees key j <= i.
 *   LA_CAUSAL_BOTTOM_RIGHT (FlashAttention >= 2.1's): query i sees key j <= i + (M − N),
 *     so the last query sees every key: N new tokens over M cached keys, as decoding
 *     with a KV cache needs. For N > M the first N − M queries see no key (the empty row).
 * With N = M the two are the same mask. */
typedef enum { LA_CAUSAL_TOP_LEFT = 0, LA_CAUSAL_BOTTOM_RIGHT = 1 } la_causal_align;

typedef struct {
    size_t batch, heads;        /* B, H (>= 1) */
    size_t n_queries;           /* N (>= 1) */
    size_t n_keys;              /* M (>= 1) */
    size_t d_k, d_v;            /* head sizes (>= 1) */
    int causal;                 /* 0 or 1: query i sees key j only when j <= i */
    const int64_t *key_lengths; /* NULL, or (batch,): keys j >= key_lengths[b] are hidden;
                                   each in [0, n_keys] */
    double scale;               /* softmax and hard attention: logits = q·k · scale; finite */
    la_feature_map feature_map; /* linear attention */
    double eps;                 /* linear attention: y = num / (den + eps); finite, >= 0 */
    size_t chunk;               /* causal linear attention, chunked form: tokens per chunk (>= 1) */
    size_t workspace_limit;     /* bytes of scratch a kernel may hold; above it: LA_EBUDGET */
    /* The approximating variants' parameters, read only by the kernels whose
     * registry row names them (la_kernel_info.params): */
    size_t window;        /* local softmax: query i sees keys j with |i - j| <= window
                             (causal: i - window <= j <= i); >= 1 */
    size_t proj_rank;     /* Linformer: k, the rows keys and values are projected to;
                             in 1..n_keys for the kernel that reads it */
    const double *proj_e; /* Linformer: E and F, each (proj_rank, n_keys) row-major,  */
    const double *proj_f; /* shared by every batch entry and head; both NULL: drawn
                             from seed (entries N(0, 1/proj_rank)). Float64 for
                             either precision; the caller owns them */
    size_t features;      /* FAVOR+: m, the random features per head; >= 1 */
    uint64_t seed;        /* Linformer's drawn projections, FAVOR+'s random features:
                             the same seed gives the same draw in both precisions */
    /* The score functions' weights, read only by the kernels whose registry
     * row names them (LA_PARAM_SCORE_WEIGHTS, LA_PARAM_SCORE_DIM): */
    size_t score_dim;      /* additive: d_a, the rows of W and the entries of v; >= 1 */
    const double *score_w; /* general: W (d_k, d_k); additive: W = [W_q W_k] (d_a, 2·d_k),
                              row-major; float64 for either precision, shared by every
                              batch entry and head, owned by the caller; NULL: drawn from
                              seed as la_score_weights draws it */
    const double *score_v; /* additive: v (d_a); given with score_w, or both NULL */
    /* Positional encodings, read only by the relative kernel
     * (LA_PARAM_RELATIVE): */
    size_t max_distance; /* Shaw et al.'s clip distance K >= 1 */
    const double *rel_k; /* a^K (2K+1, d_k) and a^V (2K+1, d_v) row-major, row K + δ */
    const double *rel_v; /* for the distance δ = clip(j − i, −K, K); both NULL: drawn
                            from seed (la_relative_embeddings). Float64 for either
                            precision, shared by every batch entry and head; the caller
                            owns them */

    /* Masks beyond causal and key lengths: */
    la_causal_align causal_align; /* with causal and N != M: top-left (j <= i, the default)
                                     or bottom-right (j <= i + M − N) */
    const uint8_t *mask;          /* NULL, or a general attention mask, nonzero = hidden
                                     (PyTorch's boolean attn_mask: True = not allowed):
                                     mask[i·M + j] hides key j from query i; (N, M), the
                                     same for every batch entry and head, or with
                                     mask_per_head (B·H, N, M), head (b, h) at b·H + h */
    int mask_per_head;            /* 0 or 1 (1 needs a mask) */
    const uint8_t *key_mask;      /* NULL, or (B, M), nonzero = hidden: key_mask[b·M + j]
                                     hides key j of batch entry b from every query and
                                     head (PyTorch's key_padding_mask, True = ignore) */
} la_problem;

#define LA_DEFAULT_EPS 1e-6 /* as in fast-transformers */
#define LA_DEFAULT_CHUNK 32 /* causal linear: 32 beat 64 by about 10% here (linattn bench) */
#define LA_DEFAULT_WORKSPACE_LIMIT ((size_t)4 << 30) /* 4 GiB */
#define LA_DEFAULT_WINDOW 64                         /* local softmax: r */
#define LA_DEFAULT_PROJ_RANK 256 /* Linformer: k (Wang et al. 2020's main setting) */
#define LA_DEFAULT_FEATURES 256  /* FAVOR+: m */
#define LA_DEFAULT_SCORE_DIM 64  /* additive scores: d_a */
#define LA_DEFAULT_MAX_DISTANCE                                                                    \
    16 /* relative positions: K (Shaw et al. 2018 found K >= 2 enough) */

/* Fills every field: the sizes given, no mask, scale = 1/sqrt(d_k), φ = elu+1,
 * eps = LA_DEFAULT_EPS, chunk = LA_DEFAULT_CHUNK, workspace_limit = the default,
 * window, proj_rank, features and score_dim their defaults, no projections or score
 * weights given, seed 0, max_distance LA_DEFAULT_MAX_DISTANCE and no relative
 * embeddings given, causal_align top-left. Adjust the fields afterwards. */
LA_API void la_problem_init(la_problem *p, size_t batch, size_t heads, size_t n_queries,
                            size_t n_keys, size_t d_k, size_t d_v);

/* LA_OK when every field is in range and every array size fits in size_t;
 * LA_EINVAL or LA_EOVERFLOW otherwise. Every kernel calls it first. */
LA_API la_status la_problem_check(const la_problem *p);

/* ---------------------------------------------------------------- kernels */

/* The kernels. Each is one row of the kernel registry (below: la_kernel_get), which
 * names its functions, its reference, its cost and what it accepts. */
typedef enum {
    LA_KERNEL_SOFTMAX = 0,          /* fused streaming softmax (online, FlashAttention-style) */
    LA_KERNEL_SOFTMAX_MATERIALIZED, /* N×M scores, softmax, then ·V */
    LA_KERNEL_HARD,                 /* argmax attention */
    LA_KERNEL_LINEAR,               /* linear: non-causal, or causal chunked when p->causal */
    LA_KERNEL_LINEAR_RECURRENT,     /* linear, causal, token by token (requires p->causal) */
    LA_KERNEL_LINFORMER,            /* keys, values projected to proj_rank rows, then softmax */
    LA_KERNEL_LOCAL,                /* softmax over the keys within p->window positions */
    LA_KERNEL_FAVOR,                /* FAVOR+ (Performer): linear on positive random features */
    LA_KERNEL_FAVOR_RECURRENT,      /* FAVOR+, causal, token by token (requires p->causal) */
    LA_KERNEL_GENERAL,              /* softmax over general scores q·W·k (Luong et al. 2015) */
    LA_KERNEL_ADDITIVE,             /* softmax over additive scores vᵀtanh(W_q q + W_k k) */
    LA_KERNEL_COSINE,               /* softmax over cosine similarities cos(q, k) · scale */
    LA_KERNEL_RELATIVE,             /* softmax with relative positions (Shaw et al. 2018) */
    LA_KERNEL_COUNT
} la_kernel;

/* Extreme values: every kernel below either returns a finite output within its
 * precision's rounding of the float64 reference, or refuses with LA_ERANGE (writing
 * nothing), never inf or NaN from finite inputs. With T the element type's largest
 * value (FLT_MAX or DBL_MAX) and a = max|q|, b = max|k|, c = max|v| over the call:
 *   softmax, softmax_materialized, local:
 *                                   LA_ERANGE when d_k·a·b·max(|scale|, 1) > T/8,
 *                                   |scale| > T/8 or M·c > T/8
 *   hard:                           LA_ERANGE when d_k·a·b·max(|scale|, 1) > T/8
 *                                   or |scale| > T/8
 *   linear causal (chunked), linear_recurrent:
 *                                   LA_ERANGE when d_k·M·(a + 1)·(b + 1)·max(c, 1) > T/8
 * (bounds on every score, score difference, accumulator and state entry, checked by one
 * scan of a, b, c before the kernel runs: lib/attention/range.c; float32 fused softmax
 * with N <= 4 takes b and c on the kernel's own loads, before it writes out), and
 *   linear non-causal:              LA_ERANGE when an entry of S = φ(K)ᵀV or z = Σ φ(k_j)
 *                                   is not finite or d_k·|entry| > T/8, checked after S
 *                                   and z are formed, before any output is written (no
 *                                   scan); a huge query is scaled by a power of two
 *                                   instead, which changes no bit of its output.
 * In float32 that refuses e.g. q = k = ±1e20 or scale 1e38 (softmax, hard), linear
 * attention on inputs near 1e30 (causal: near 1e18); float64 computes them. The scan lets
 * inputs holding inf or NaN through (their outputs are not finite either); non-causal
 * linear's state check may refuse them. The step API checks each token (below). The
 * backward passes have their own rule, stated with each (linear: beside
 * la_linear_attention_backward_*).
 *
 * The empty row: a query that sees no key (causal mask, key lengths) gets an output row
 * of zeros, in every kernel and reference. So does, in linear attention, a query whose
 * denominator φ(q_i)ᵀz + eps is exactly 0 (possible only with eps = 0: relu with an
 * all-zero φ(q_i), or no visible key with a positive feature where φ(q_i) is positive):
 * such a query attends to nothing, like one that sees no key.
 *
 * Causal bottom-right (p->causal_align, N != M; query i sees j <= i + M − N): softmax
 * (fused, AVX-512 included, lse, materialized), hard, local, their backward passes and
 * the attention matrix walk the shifted diagonal themselves (local: query i's window is
 * centered on position i + M − N). Linear and FAVOR+ causal (chunked and recurrent) and
 * linear's backward passes, written for the top-left diagonal, run the equivalent square
 * problem (lib/attention/align.c): q (and out, d_out) copied into rows i + M − N of an
 * M-row problem on the same keys, zero rows elsewhere, the outputs copied back: M query
 * rows instead of N, and B·H·M·(d_k + d_v) elements more (twice that backward) held
 * against p->workspace_limit (LA_EBUDGET above it); la_attention_cost counts both.
 * Linformer refuses causal in either alignment. Queries that see no key (N > M) get
 * the empty row.
 *
 * Softmax attention, fused: online softmax over key blocks; never holds the N×M score
 * matrix, its scratch is O(threads · block · (block + d_k + d_v)), independent of N;
 * float32 on AVX-512 with N <= 4 (decoding) adds B·H·N·d_v floats (and B·H·N for lse)
 * where the output waits for the range check, whose max|k| and max|v| it takes while
 * reading K and V for the kernel, so they are read once.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Finite for any finite input it does not refuse (logits of ±1e4 included).
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE (above).
 *   implementation lib/attention/softmax.c (softmax_tmpl.h; float32 on AVX-512:
 *   softmax_avx512.c) · reference la_ref_softmax_attention · tests
 *   tests/attention/test_attention.c, test_softmax.c */
LA_API la_status la_softmax_attention_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, float *out);
LA_API la_status la_softmax_attention_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, double *out);

/* Softmax attention, fused, that also returns what its backward needs:
 *   lse: (B,H,N), lse_i = log Σ_j exp(s_ij) over the keys query i sees, s_ij = q_i·k_j ·
 *   scale (natural log; -INFINITY for a query that sees no key).
 * out is bitwise the output of la_softmax_attention_*; the row maximum and sum that kernel
 * keeps give lse. Same statuses; lse NULL is LA_EINVAL. Nothing written on error.
 *   implementation lib/attention/softmax.c (softmax_tmpl.h, softmax_avx512.c) · tests
 *   tests/attention/test_softmax.c */
LA_API la_status la_softmax_attention_lse_f32(const la_problem *p, const float *q, const float *k,
                                              const float *v, float *out, float *lse);
LA_API la_status la_softmax_attention_lse_f64(const la_problem *p, const double *q, const double *k,
                                              const double *v, double *out, double *lse);

/* Its backward (FlashAttention-2's): for a loss L with d_out = ∂L/∂out,
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out, d_out: (B,H,N,d_v),
 *   lse: (B,H,N) from la_softmax_attention_lse_*, or NULL (then computed first, by a pass
 *   over the scores);
 *   d_q, d_k, d_v: shaped as q, k, v, written whole.
 * out is the forward's output. With D_i = Σ_c d_out_ic · out_ic, per (query block, key
 * block) of 64 × 64: S = q_blk·k_blkᵀ·scale recomputed, P = exp(S − lse) (0 where
 * hidden), dP = d_out_blk·v_blkᵀ, dS = P ∘ (dP − D); then d_v += Pᵀ·d_out, d_k += dSᵀ·q ·
 * scale, d_q += dS·k · scale. Never an N×M matrix: scratch per thread is two 64 × 64
 * blocks, a key block of k and of v transposed and 64 row values, independent of N and
 * M, plus the B·H·N log-sum-exps when lse is NULL. Each element of d_k, d_v sums its
 * query blocks in order and each of d_q its key blocks in order, whatever the threads:
 * with fewer (batch, head) pairs than threads the call runs d_k, d_v (over key blocks)
 * and d_q (over query blocks) as two passes, each recomputing S and dP, else one pass per
 * head; the bits are the same. Causal masks skip whole blocks no query sees.
 * A query that sees no key contributes nothing; a key no query sees gets zero gradients.
 * Returns LA_OK, LA_EINVAL (NULL pointer but lse, bad problem), LA_EOVERFLOW,
 * LA_ENOMEM, LA_EBUDGET (scratch above p->workspace_limit), LA_ERANGE (the range rule
 * above, and the backward's: see la_attention_backward_*). Nothing written on error.
 *   implementation lib/attention/softmax_backward.c (softmax_backward_tmpl.h) · reference
 *   la_ref_softmax_attention_backward · tests tests/attention/test_attention.c */
LA_API la_status la_softmax_attention_backward_f32(const la_problem *p, const float *q,
                                                   const float *k, const float *v, const float *out,
                                                   const float *lse, const float *d_out, float *d_q,
                                                   float *d_k, float *d_v);
LA_API la_status la_softmax_attention_backward_f64(const la_problem *p, const double *q,
                                                   const double *k, const double *v,
                                                   const double *out, const double *lse,
                                                   const double *d_out, double *d_q, double *d_k,
                                                   double *d_v);

/* Softmax attention, materializing: for one head at a time, the N×M score matrix,
 * its row softmax, then P·V. Holds N·M elements; refuses with LA_EBUDGET when
 * N·M·sizeof(element) exceeds p->workspace_limit. Same shapes and statuses as above.
 *   implementation lib/attention/softmax.c (softmax_tmpl.h) · reference
 *   la_ref_softmax_attention · tests tests/attention/test_attention.c, test_softmax.c */
LA_API la_status la_softmax_attention_materialized_f32(const la_problem *p, const float *q,
                                                       const float *k, const float *v, float *out);
LA_API la_status la_softmax_attention_materialized_f64(const la_problem *p, const double *q,
                                                       const double *k, const double *v,
                                                       double *out);

/* Its backward, the textbook one on the held probabilities: per head, P (N×M) as the
 * forward forms it, d_v = Pᵀ·d_out, dP = d_out·vᵀ a block of 64 query rows at a time,
 * dS = P ∘ (dP − rowsum(P ∘ dP)) written over P, d_q = dS·k · scale, d_k = dSᵀ·q · scale.
 * Holds N·M elements plus 64 rows of M per thread; LA_EBUDGET when that exceeds
 * p->workspace_limit. out is not read (the row sums come from P). Shapes and statuses as
 * la_softmax_attention_backward_* (without lse).
 *   implementation lib/attention/softmax_backward.c · reference
 *   la_ref_softmax_attention_backward · tests tests/attention/test_attention.c */
LA_API la_status la_softmax_attention_materialized_backward_f32(const la_problem *p, const float *q,
                                                                const float *k, const float *v,
                                                                const float *out,
                                                                const float *d_out, float *d_q,
                                                                float *d_k, float *d_v);
LA_API la_status la_softmax_attention_materialized_backward_f64(const la_problem *p,
                                                                const double *q, const double *k,
                                                                const double *v, const double *out,
                                                                const double *d_out, double *d_q,
                                                                double *d_k, double *d_v);

/* Hard attention: out row i = v row argmax_j (q_i·k_j · scale) over visible j, ties to
 * the lowest j. Same shapes, masks and statuses.
 *   implementation lib/attention/softmax.c (softmax_tmpl.h) · reference
 *   la_ref_hard_attention · tests tests/attention/test_attention.c, test_softmax.c */
LA_API la_status la_hard_attention_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out);
LA_API la_status la_hard_attention_f64(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out);

/* Its backward. The argmax is piecewise constant in q and k, so its gradient is zero
 * almost everywhere: d_q = d_k = 0 (exactly; at a tie the forward's choice is not
 * differentiable, and 0 is returned there too), and d_v scatters d_out: d_v_j = Σ of
 * d_out_i over the queries i whose argmax (the forward's, bit for bit, ties to the lowest
 * key) is j, summed in order of i. out is not read. Scratch: the forward's blocks per
 * thread and the B·H·N chosen keys. Shapes and statuses as la_softmax_attention_backward_*
 * (without lse).
 *   implementation lib/attention/softmax_backward.c · reference
 *   la_ref_hard_attention_backward · tests tests/attention/test_attention.c */
LA_API la_status la_hard_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                                const float *v, const float *out,
                                                const float *d_out, float *d_q, float *d_k,
                                                float *d_v);
LA_API la_status la_hard_attention_backward_f64(const la_problem *p, const double *q,
                                                const double *k, const double *v, const double *out,
                                                const double *d_out, double *d_q, double *d_k,
                                                double *d_v);

/* Linear attention, y_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps). φ is applied to the raw q and
 * k (p->scale is not used). Non-causal: S = φ(K)ᵀV (d_k×d_v) and z = Σ_j φ(k_j) once
 * per head, then applied to every query. Causal (p->causal): the chunked form, chunks
 * of p->chunk tokens, each the masked intra-chunk product plus the carried state.
 * Key lengths hide keys from both S and z. Same shapes and statuses.
 *   implementation lib/attention/linear.c (linear_tmpl.h, featuremap.c) · reference
 *   la_ref_linear_attention · tests tests/attention/test_attention.c, test_linear.c */
LA_API la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                         const float *v, float *out);
LA_API la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                         const double *v, double *out);

/* Causal linear attention, recurrent form: S and z updated token by token.
 * Requires p->causal (LA_EINVAL otherwise). Same shapes and statuses.
 *   implementation lib/attention/linear.c (linear_tmpl.h) · reference
 *   la_ref_linear_attention · tests tests/attention/test_attention.c, test_linear.c */
LA_API la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q,
                                                   const float *k, const float *v, float *out);
LA_API la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q,
                                                   const double *k, const double *v, double *out);

/* Linear attention backward: for a loss L with d_out = ∂L/∂out given, the gradients
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out and d_out: (B,H,N,d_v) row-major;
 *   d_q, d_k, d_v: shaped as q, k, v, written whole (zeros for a key no query sees, and
 *   for the empty row's query: its output is constant, its gradient zero).
 * out must be the forward's output on the same q, k, v, p (read for y_i, not recomputed).
 * With g_i = dO_i / den_i, c_i = −(dO_i·y_i) / den_i (den_i = φ(q_i)·z + eps):
 * dφ(q_i) = S g_i + c_i z; dS = Σ_i φ(q_i) g_iᵀ, dz = Σ_i c_i φ(q_i) (causal: over the
 * queries i >= j of key j); dφ(k_j) = dS v_j + dz, d_v_j = dSᵀ φ(k_j); then through φ′
 * (elu+1: 1 for x >= 0, exp(x) below; relu: 1 for x > 0, else 0).
 * la_linear_attention_backward_* follows p->causal, as the forward:
 *   non-causal: S, z once, then dS, dz once per head: O(N·d²) time in products of blocks,
 *     O(d²) scratch per head;
 *   causal: chunks of p->chunk tokens, O(N·d) scratch (the N denominators per head and
 *     one carried state, never a state per token): a forward sweep of the chunks
 *     carrying S, z for d_q, a reverse sweep carrying the suffix sums dS, dz for d_k, d_v,
 *     the intra-chunk parts as masked block products; φ(Q), φ(K) are recomputed in each
 *     sweep rather than held.
 * la_linear_attention_recurrent_backward_*: token by token (requires p->causal, LA_EINVAL
 * otherwise), a forward pass for d_q and a reverse pass for d_k, d_v (suffix sums, no
 * state subtracted); the oracle of the chunked form's tests.
 * Range (float32 never returns inf or NaN from finite inputs): with a, b, c, d, w the
 * largest |q|, |k|, |v|, |d_out|, |out| and r = max(1, 1/den) over the queries whose den is
 * not 0, LA_ERANGE (nothing written) when
 *   4·d_k·d_v·max(N, M)·(a + 1)·(b + 1)·max(c, 1)·max(d, 1)·max(w, 1)·r > T/8
 * (a bound on every value the backward forms; lib/attention/range.c). It contains the
 * causal forward's rule; the non-causal backward applies it too, where the non-causal
 * forward checks its state instead. A tiny den (eps = 0 or tiny, with a query nearly
 * orthogonal to z) can refuse in float32: use float64.
 * Accuracy: each gradient is its terms' sum up to rounding, and the terms can cancel. y_i
 * depends on the scale of φ(q_i) only through eps, so where a query's output hardly
 * depends on q_i — it sees one key, or d_k = 1, or relu leaves one positive feature — its
 * d_q is about eps/den of its terms (one key: d_k too), and the kernels give it to about
 * u·den/eps relative (u the precision's rounding: 1e-2 in float32 at eps = 1e-6, as in
 * float32 autograd); elsewhere to a few u relative, as the tests measure.
 * Threads: the pieces, blocks and chunks are fixed, so the bits do not depend on the
 * thread count. Returns LA_OK, LA_EINVAL (NULL, bad problem), LA_EOVERFLOW, LA_ENOMEM,
 * LA_EBUDGET, LA_ERANGE; every output untouched on error.
 * Cost (la_attention_backward_cost), what the kernels issue, per head with m visible keys
 * (none: no work), u = min(N, m) causal, u = m non-causal; each φ counted every time it is
 * computed (the backward recomputes φ(Q), φ(K) rather than hold them):
 *   flops_phi        φ, and 1 per element of d_q and of the seen rows of d_k for ∘ φ′;
 *   flops_normalize  den = φ(q)·z + eps, 2·d_k + 1 per query (chunked: also the running
 *                    z_i, u·d_k), and g, c: 3·d_v + 1 per query each time formed (the
 *                    chunked and recurrent forms form them twice);
 *   flops_kv         key side: S, z recomputed, 2·d_k·d_v + d_k per key (chunked: per key
 *                    a later chunk sees), and dφ(k) = dS v + dz, d_v = dSᵀφ(k),
 *                    4·d_k·d_v + d_k per key (chunked: the carried part of such keys);
 *   flops_qs         query side: dφ(q) = S g + c z and dS += φ(q)gᵀ, dz += cφ(q),
 *                    4·d_k·d_v + 4·d_k per query (chunked: per query past the first chunk);
 *   flops_qk, flops_av  chunked only, per visible pair inside a chunk: A = φQφKᵀ,
 *                    B·φ(K_c) and Bᵀ·φ(Q_c) 6·d_k (qk); Bᵀ = V_cGᵀ + c 2·d_v + 1 and
 *                    AᵀG 2·d_v (av).
 * Not counted: the pass that forms every den first for the range rule, run only when
 * eps does not settle it (a check, like the scans). Exact formulas beside the kernels
 * (linear_backward.c); tests/attention/test_cost.c holds them to the kernels' own counts.
 * workspace_bytes: non-causal per head 2 states and dS, per thread one block's operands
 * (independent of N); chunked per head den (N) and one state, per thread one chunk's operands;
 * recurrent den (N per head) and one state per thread. implementation
 * lib/attention/linear_backward.c (linear_backward_tmpl.h) · reference
 *   la_ref_linear_attention_backward · cost la_attention_backward_cost · tests
 *   tests/attention/test_linear_backward.c, test_attention.c (gradient mode) */
LA_API la_status la_linear_attention_backward_f32(const la_problem *p, const float *q,
                                                  const float *k, const float *v, const float *out,
                                                  const float *d_out, float *d_q, float *d_k,
                                                  float *d_v);
LA_API la_status la_linear_attention_backward_f64(const la_problem *p, const double *q,
                                                  const double *k, const double *v,
                                                  const double *out, const double *d_out,
                                                  double *d_q, double *d_k, double *d_v);
LA_API la_status la_linear_attention_recurrent_backward_f32(const la_problem *p, const float *q,
                                                            const float *k, const float *v,
                                                            const float *out, const float *d_out,
                                                            float *d_q, float *d_k, float *d_v);
LA_API la_status la_linear_attention_recurrent_backward_f64(const la_problem *p, const double *q,
                                                            const double *k, const double *v,
                                                            const double *out, const double *d_out,
                                                            double *d_q, double *d_k, double *d_v);

/* Linformer (Wang et al., "Linformer: Self-Attention with Linear Complexity", 2020):
 * keys and values projected along the sequence to k = p->proj_rank rows, then softmax
 * attention of the N queries over the k projected keys:
 *   K' = E·K (k, d_k), V' = F·V (k, d_v), y = softmax(Q K'ᵀ · scale) V'
 * per head, with E, F: (k, M) row-major float64, p->proj_e and p->proj_f, shared by every
 * batch entry and head; both NULL: drawn from p->seed as la_linformer_projections draws
 * them (entries N(0, 1/k)), the same draw in both precisions.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   k = p->proj_rank in 1..M (LA_EINVAL above M: the projection would not shorten
 *   anything, and E, F are (k, M)).
 * Time O(B·H·k·(M + N)·d): the projections 2·k·M·(d_k + d_v) per head, then fused softmax
 * attention with M = k (O(N·k·d), linear in N at fixed k).
 * Non-causal only (LA_EINVAL for p->causal = 1): every projected row mixes keys from all
 * positions along the sequence, so every output sees future keys through it, and no
 * causal mask can be honored once the projection has mixed them.
 * Key lengths: the columns j >= L_b of E and F are zeroed for batch entry b, which equals
 * projecting only the visible keys, K' = E[:, :L_b]·K[:L_b] (and V' likewise); L_b = 0
 * gives K' = V' = 0 and an output row of zeros, as every kernel's empty row.
 * Memory: the projected K' and V' of every head, B·H·k·(d_k + d_v) elements, then the
 * fused softmax kernel's own scratch (la_softmax_attention_* on (Q, K', V')); float32 also
 * holds E and F converted to float32 (2·k·M floats), and a drawn pair is held as it is
 * drawn (float64 2·k·M doubles); all of it held against p->workspace_limit. A drawn pair
 * is drawn again at every call (k·M Box–Muller pairs: a log, a cos and a sin each, not in
 * the cost model's FLOPs): draw it once with la_linformer_projections and pass it to
 * spare that.
 * Range: LA_ERANGE when M·max|E|·max|K| or M·max|F|·max|V| passes T/8 (bounds on the
 * projected entries), then as softmax on (Q, K', V') with M = k. E and F must be finite
 * (LA_EINVAL otherwise).
 * Returns LA_OK, LA_EINVAL (NULL, bad problem, causal, k > M, a non-finite projection),
 * LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE. Nothing written on error. No backward.
 *   implementation lib/attention/linformer.c (linformer_tmpl.h) · reference
 *   la_ref_linformer_attention · tests tests/attention/test_attention.c, test_linformer.c */
LA_API la_status la_linformer_attention_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, float *out);
LA_API la_status la_linformer_attention_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, double *out);

/* Linformer's projections drawn from a seed: e and f, (k, m) row-major each, entries
 * N(0, 1/k), the pair the kernels use when p->proj_e and p->proj_f are NULL (k =
 * p->proj_rank, m = p->n_keys, seed = p->seed). The draw: splitmix64 from seed (state +=
 * 0x9e3779b97f4a7c15, then its mix), u = (x >> 11)·2⁻⁵³; each pair of uniforms u1, u2
 * gives by Box–Muller √(−2 ln(1 − u1))·cos(2π u2) and then ·sin(2π u2); e's entries in
 * order, then f's, each divided by √k. The same seed gives the same matrices everywhere.
 * Returns LA_OK, LA_EINVAL (NULL e or f, e == f, k or m 0), LA_EOVERFLOW (k·m doubles
 * beyond size_t); nothing written on error. */
LA_API la_status la_linformer_projections(size_t k, size_t m, uint64_t seed, double *e, double *f);
/* Restricted (local) softmax attention (Vaswani et al. 2017's "restricted self-attention"):
 * query i attends with softmax(q_i·k_j · scale) to the keys j within r = p->window
 * positions, |i − j| <= r, or when p->causal i − r <= j <= i; key lengths hide keys as in
 * every kernel, and a query left with no key gets a zero row. Positions are the indices i
 * and j themselves, also when N != M (query i's window is centered on key i, not on a
 * rescaled position). With r >= max(N, M) it is softmax attention (la_softmax_attention_*)
 * up to rounding. Blocks of 64 queries walk the at most 64 + 2r keys (causal 64 + r) they
 * see together in score blocks of up to 256 keys with the fused kernel's online softmax,
 * each row masked to its window: O(N·(64 + 2r)·(d_k + d_v)) time (the entries outside a
 * row's window are computed, then masked), scratch per thread one score block of
 * 64 × bk keys, bk = min(64 + 2r, M, 256) (causal 64 + r), that key block transposed
 * (d_k × bk: the float32 products run on linattn's register tiles on AVX-512) and 2 · 64
 * row values, independent of N (la_attention_cost gives both).
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Returns LA_OK, LA_EINVAL (NULL, a bad problem: window 0 included), LA_EOVERFLOW,
 * LA_ENOMEM, LA_EBUDGET, LA_ERANGE (softmax's rule above). No backward.
 * Causal bottom-right (p->causal_align): query i's window is centered on key i + M − N.
 *   implementation lib/attention/local.c (local_tmpl.h) · reference la_ref_local_attention
 *   · tests tests/attention/test_attention.c, test_local.c */
LA_API la_status la_local_attention_f32(const la_problem *p, const float *q, const float *k,
                                        const float *v, float *out);
LA_API la_status la_local_attention_f64(const la_problem *p, const double *q, const double *k,
                                        const double *v, double *out);

/* FAVOR+ (Performer; Choromanski et al., "Rethinking Attention with Performers", 2021):
 * softmax attention at scale 1/√d_k approximated by linear attention on m = p->features
 * positive random features. With s = d_k^(−1/4), x = s·q (or s·k), W (m, d_k):
 *   φ(x) = exp(W x − ‖x‖²/2) / √m,   E[φ(q)·φ(k)] = exp(q·k / √d_k),
 *   y_i = Σ_j φ(q_i)·φ(k_j) v_j / (Σ_j φ(q_i)·φ(k_j) + eps)   over the visible keys,
 * so the output tends to softmax attention's as m grows (the error falls as 1/√m, Monte
 * Carlo's rate). p->scale and p->feature_map are not read (scale 1/√d_k is built in).
 * W is la_favor_features(m, d_k, p->seed): the same W for every batch entry and head and
 * for both precisions (float32 rounds the float64 draw).
 * Stabilized as Performer does, by factors that cancel between numerator and denominator:
 *   queries: each row's exponents lose their own max over its m features (and its own
 *     ‖x‖²/2, common to them too): φ(q_i) ∝ exp(W x_i − max_l (W x_i)_l), at most 1/√m;
 *   keys: with g_j = max_l (W x_j)_l − ‖x_j‖²/2 the key's largest exponent, the keys
 *     query i sees lose μ_i = max of g over those keys (φ(k_j) at most 1/√m). Non-causal
 *     that is one μ per (batch entry, head), the max over its visible keys and all
 *     features; causal it is the running max over keys 0..i, as online softmax keeps its
 *     max, so that no output depends, even through rounding, on a key it must not see —
 *     the max over all keys, as Performer takes it, would make it so.
 *   Computed as φ(k_j) ∝ exp(((W x_j)_l − P_j) + (g_j − μ)), P_j the row's max: ‖x_j‖²/2
 *   never meets the projections in one subtraction, which would round them away at large
 *   ‖x_j‖.
 * The factors cancel in y_i except against eps, which is added to the rescaled
 * denominator den_i · exp(‖x_i‖²/2 − max_l (W x_i)_l − μ_i), den_i = Σ_j φ(q_i)·φ(k_j)
 * the formula's, not to den_i itself; with eps = 0 the output is exactly the formula's.
 * Then linear attention on φ(Q) (B,H,N,m) and φ(K) (B,H,M,m): non-causal
 * la_linear_attention_*'s kernel with d_k = m and φ the identity; causal in chunks of
 * p->chunk tokens, each the masked intra-chunk product A = φ(Q_c)ψ(K_c)ᵀ ∘ exp(g_j − μ_i)
 * (ψ: the keys' features by their own max) plus the carried state S, z, kept at the scale
 * of its keys' running max and rescaled by exp(μ_old − μ_new) (at most 1) as a chunk
 * raises it. Masks as linear attention.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Time O(B·H·(N + M)·m·(d_k + d_v)): the projections X Wᵀ (BLIS), m exps per row, and
 * linear attention with d_k = m. Scratch (held against p->workspace_limit, reported by
 * la_attention_cost): W in float64 (m·d_k, float32 also a float copy), φ(Q) and φ(K),
 * B·H·(N + M)·m elements, P and g of every key, 2·B·H·M, and non-causal linear
 * attention's scratch with d_k = m, causal per thread S, z and one chunk's operands,
 * m·(d_v + 1) + C·(C + 2 + m), C = min(p->chunk, N).
 * Returns LA_OK, LA_EINVAL (NULL, bad problem: p->features 0 included), LA_EOVERFLOW
 * (B·H·(N + M)·m elements beyond size_t), LA_ENOMEM, LA_EBUDGET, LA_ERANGE: a projection
 * or ‖x‖² not finite (inputs beyond the element type, e.g. ‖k‖² past FLT_MAX, or not
 * finite); non-causal, linear attention's state rule on φ(K)ᵀV; causal, m·M·max(|v|, 1)
 * > T/8. Nothing written on error. The step API: la_favor_state_create. No backward or
 * attention matrix (la_attention_weights_*: LA_EINVAL).
 *   implementation lib/attention/favor.c (favor_tmpl.h; linear.c on the features) ·
 *   reference la_ref_favor_attention · tests tests/attention/test_favor.c,
 *   test_attention.c */
LA_API la_status la_favor_attention_f32(const la_problem *p, const float *q, const float *k,
                                        const float *v, float *out);
LA_API la_status la_favor_attention_f64(const la_problem *p, const double *q, const double *k,
                                        const double *v, double *out);

/* FAVOR+, causal, token by token (the recurrent form; p->causal required, else
 * LA_EINVAL): the same features φ(q_i), ψ(k_j), g_j and running max μ_i as the causal
 * chunked form above, then per token t: when key t is visible (t < N), μ' = max(μ, g_t),
 * S (m, d_v) and z (m) rescaled by exp(μ − μ') (every key after the first; a factor of
 * exactly 1 when g_t does not raise the max), S += ψ'_t v_tᵀ, z += ψ'_t with
 * ψ'_t = ψ(k_t)·exp(g_t − μ'); then y_t = φ(q_t)ᵀS / (φ(q_t)·z + eps), eps at the
 * chunked form's scale (the same outputs to rounding; eps = 0: the formula's). p->chunk is
 * not read. Masks as linear attention.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Time O(B·H·(N + M)·m·(d_k + d_v)). Scratch (held against p->workspace_limit, reported by
 * la_attention_cost): as la_favor_attention_*'s but per thread S, z and one key's ψ',
 * m·(d_v + 2). Returns as la_favor_attention_* causal. Nothing written on error. No
 * backward, step API or attention matrix (LA_EINVAL).
 *   implementation lib/attention/favor.c (favor_tmpl.h; linear.c's per-token step) ·
 *   reference la_ref_favor_attention · tests tests/attention/test_favor.c,
 *   test_attention.c */
LA_API la_status la_favor_attention_recurrent_f32(const la_problem *p, const float *q,
                                                  const float *k, const float *v, float *out);
LA_API la_status la_favor_attention_recurrent_f64(const la_problem *p, const double *q,
                                                  const double *k, const double *v, double *out);

/* FAVOR+'s random features: w (m, d_k) row-major, caller-owned, m·d_k doubles. Blocks of
 * d_k rows (the last m mod d_k rows), each block the Gram–Schmidt orthonormalization
 * (modified, two passes) of a Gaussian block, then each row scaled to the norm of an
 * independent Gaussian d_k-vector (a chi(d_k) norm: E‖w_l‖² = d_k). The draws: splitmix64
 * from `seed`, each N(0, 1) by Box–Muller from two uniforms u = ((x >> 11) + 0.5)·2^−53,
 * z = √(−2 ln u1)·cos(2π u2); per block, its r·d_k Gaussians row by row, then per row the
 * d_k Gaussians of its norm. The same (m, d_k, seed) gives the same W (to libm's rounding
 * of log, cos and sqrt). Returns LA_OK, LA_EINVAL (NULL w, m or d_k 0), LA_EOVERFLOW;
 * w untouched on error.
 *   implementation lib/attention/favor.c · tests tests/attention/test_favor.c */
LA_API la_status la_favor_features(size_t m, size_t d_k, uint64_t seed, double *w);

/* SCORE FUNCTIONS. Softmax attention is
 * out_i = Σ_j softmax_j(s_ij) v_j over the visible keys, and the score s_ij can be:
 *   dot        q_i·k_j                 la_softmax_attention_* with p->scale = 1
 *   scaled     q_i·k_j / √d_k          la_softmax_attention_* with p->scale = 1/√d_k (the
 *                                      default): no kernel of their own, no new row
 *   general    q_iᵀ W k_j · scale      W (d_k, d_k) (Luong et al. 2015's "general")
 *   additive   vᵀ tanh(W_q q_i + W_k k_j)  W = [W_q W_k] (d_a, 2·d_k), v (d_a), d_a =
 *                                      p->score_dim (Bahdanau et al. 2015's "concat")
 *   cosine     q̂_i·k̂_j · scale          x̂ = x / max(‖x‖, 1e-12) (F.normalize's eps; a zero
 *                                      row normalizes to zero)
 * general and cosine read p->scale (general at scale 1 is Luong's form; for cosine it is
 * the inverse temperature: scores lie in [−scale, scale], so the default 1/√d_k makes the
 * weights nearly uniform — pass a larger one, e.g. 10 or a learned one as in Henry et
 * al. 2020's QK-norm). additive does not read p->scale: v sets its scores' size.
 * Weights: p->score_w and p->score_v (float64 for either precision; the caller owns
 * them), or NULL: drawn from p->seed by la_score_weights (below), the same draw in both
 * precisions (float32 rounds the float64 draw). Given weights must be finite (LA_EINVAL).
 * Masks: general and cosine take every mask softmax takes (causal in either alignment, key
 * lengths, p->mask, p->key_mask); additive takes causal (either alignment) and key
 * lengths and refuses p->mask and p->key_mask (LA_EINVAL). A query that sees
 * no key gets a zero row.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * How they run:
 *   general  K' = K Wᵀ per head (one product, the m keys in length; O(M·d_k²)), then the
 *            fused softmax kernel on (Q, K', V): holds K' (B·H·M·d_k) and, in float32
 *            or when drawn, W in the call's precision (d_k²);
 *   cosine   Q̂ and K̂ normalized (each row's norm in float64, scaled by its largest
 *            entry so it cannot overflow), then the fused softmax kernel on (Q̂, K̂, V):
 *            holds Q̂ and K̂ (B·H·(N + M)·d_k);
 *   additive A = Q W_qᵀ (N, d_a) and C = K W_kᵀ (M, d_a) per head, then per block of 64
 *            queries and 256 keys s_ij = Σ_a v_a tanh(A_ia + C_ja) for the visible pairs
 *            and the fused kernel's online softmax: O(N·M·d_a) tanh, written plainly;
 *            holds A and C (B·H·(N + M)·d_a), W and v in the call's precision (float32,
 *            or drawn) and per thread a 64 × 256 score block and 2 · 64 row values.
 * All of it is held against p->workspace_limit (general and cosine: the fused kernel's
 * scratch comes after, within what is left), and la_attention_cost reports it.
 * Range (LA_ERANGE, nothing written): general when d_k·max|W|·max|k| > T/8, cosine never
 * before its normalized inputs, then softmax's rule on (Q, K', V) and (Q̂, K̂, V); additive
 * when d_k·max|W|·max(max|q|, max|k|) > T/8, Σ_a |v_a| > T/8 (v the score weights) or
 * M·max|V| > T/8 (V the values) (bounds on A, C, every score and the P·V sums). Drawn
 * weights count as 9 standard deviations (a drawn |z| is below 8.6).
 * Returns LA_OK, LA_EINVAL (NULL, bad problem: score_dim 0 included; a non-finite
 * weight; additive: score_w given without score_v or the reverse), LA_EOVERFLOW,
 * LA_ENOMEM, LA_EBUDGET, LA_ERANGE. Nothing written on error. No backward or attention
 * matrix (la_attention_weights_*: LA_EINVAL).
 *   implementation lib/attention/scores.c (scores_tmpl.h) · references
 *   la_ref_general_attention, la_ref_additive_attention, la_ref_cosine_attention · tests
 *   tests/attention/test_scores.c, test_attention.c */
LA_API la_status la_general_attention_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, float *out);
LA_API la_status la_general_attention_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, double *out);
LA_API la_status la_additive_attention_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, float *out);
LA_API la_status la_additive_attention_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out);
LA_API la_status la_cosine_attention_f32(const la_problem *p, const float *q, const float *k,
                                         const float *v, float *out);
LA_API la_status la_cosine_attention_f64(const la_problem *p, const double *q, const double *k,
                                         const double *v, double *out);

/* The score weights drawn from a seed, as the kernels draw them when p->score_w is NULL:
 *   LA_KERNEL_GENERAL   w (d_k, d_k), entries N(0, 1/d_k) (so W k has k's variance);
 *                       d_a and v are not read (v may be NULL);
 *   LA_KERNEL_ADDITIVE  w (d_a, 2·d_k), entries N(0, 1/(2·d_k)) (so W_q q + W_k k has unit
 *                       variance on N(0, 1) inputs), then v (d_a), entries N(0, 1/d_a).
 * The draw: splitmix64 from seed, Box–Muller pairs as la_linformer_projections draws
 * them (√(−2 ln(1 − u1))·cos(2π u2), then ·sin(2π u2)), w's entries in order then v's,
 * one stream, each times its standard deviation. Returns LA_OK, LA_EINVAL (another
 * kernel, NULL w, additive: NULL v or v == w, d_k or d_a 0), LA_EOVERFLOW; nothing
 * written on error. */
LA_API la_status la_score_weights(la_kernel kernel, size_t d_k, size_t d_a, uint64_t seed,
                                  double *w, double *v);
/* Relative position representations (Shaw, Uszkoreit and Vaswani 2018): softmax
 * attention with learned embeddings of the clipped distance δ = clip(j − i, −K, K),
 * K = p->max_distance, in the scores and in the values,
 *   e_ij = q_i·(k_j + a^K_δ)·scale,   y_i = Σ_j α_ij (v_j + a^V_δ),  α_i = softmax_j(e_i),
 * over the keys query i sees (causal in either alignment and key lengths; p->mask and
 * p->key_mask are refused, LA_EINVAL; positions are the indices i and j, also
 * for N != M; a query that sees no key gets a zero row). a^K = p->rel_k (2K+1, d_k), a^V =
 * p->rel_v (2K+1, d_v), row K + δ, float64, or both NULL: la_relative_embeddings(K, d_k,
 * d_v, p->seed). One table for every head, as in the paper. Each query's row is
 * materialized (M scores); q_i·a^K_δ is formed once per distance the row meets and the
 * weights sharing a δ summed before a^V_δ is added: O(N·M·(d_k + d_v)) time plus
 * O(N·min(2K+1, M)·(d_k + d_v)). Scratch (held against p->workspace_limit, given by
 * la_attention_cost): the tables in the element type (none for given float64 tables),
 * and per thread M + 2·min(2K+1, M) elements.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Range: softmax's rule with b = max|k| + max|a^K| and c = max|v| + max|a^V| (drawn
 * tables: 9 for each). Returns LA_OK, LA_EINVAL (NULL, a bad problem: max_distance 0,
 * one table only; a given table not finite; a float32 scale beyond float), LA_EOVERFLOW,
 * LA_ENOMEM, LA_EBUDGET, LA_ERANGE. Nothing written on error. No backward or attention
 * matrix.
 *   implementation lib/attention/relative.c (relative_tmpl.h) · reference
 *   la_ref_relative_attention · tests tests/attention/test_positions.c, test_attention.c */
LA_API la_status la_relative_attention_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, float *out);
LA_API la_status la_relative_attention_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out);

/* The relative kernel's drawn embeddings: a_k (2K+1, d_k) and a_v (2K+1, d_v) row-major,
 * K = max_distance, entries N(0, 1): splitmix64 from seed, Box–Muller pairs as
 * la_linformer_projections draws them (without its 1/√k), a_k's entries in order, then
 * a_v's. Returns LA_OK, LA_EINVAL (NULL, a_k == a_v, a size 0), LA_EOVERFLOW; nothing
 * written on error. */
LA_API la_status la_relative_embeddings(size_t max_distance, size_t d_k, size_t d_v, uint64_t seed,
                                        double *a_k, double *a_v);

/* ---- positions: rotary position embeddings (RoPE; Su et al., "RoFormer",
 * 2021). Pair c = (channels 2c, 2c+1) of a row at position t is rotated by the angle
 * t·θ_c, θ_c = LA_ROTARY_BASE^(−2c/d) (the interleaved pairs of the paper; GPT-NeoX and
 * Llama pair channel c with c + d/2 instead, a permutation of the channels):
 *   x'[2c] = x[2c]·cos(t·θ_c) − x[2c+1]·sin(t·θ_c),  x'[2c+1] = x[2c]·sin(t·θ_c) +
 * x[2c+1]·cos(t·θ_c). Rotated queries and keys score (R_t q)·(R_s k) = qᵀ R_{s−t} k: a function of
 * s − t only. The angles are formed in float64 for either precision (t times θ_c, then cos and sin,
 * rounded once). Softmax, hard and local attention take rotary positions by rotating q and
 * k with la_rotary_apply_* before the kernel (the command's --positions rotary does so);
 * linear attention takes them inside, la_linear_attention_rotary_* below. */
#define LA_ROTARY_BASE 10000.0

/* x: (rows, n, d) row-major, d even, rotated in place; token i of every row block is at
 * position first_pos + i (decoding: first_pos = the tokens already cached). rows is
 * typically B·H (q or k of every head) or B (a (B, N, D) input).
 * Returns LA_OK, LA_EINVAL (NULL x, a size 0, d odd), LA_EOVERFLOW (rows·n·d doubles
 * beyond size_t, first_pos + n beyond SIZE_MAX); x untouched on error.
 *   implementation lib/attention/rotary.c (rotary_tmpl.h) · tests
 *   tests/attention/test_positions.c */
LA_API la_status la_rotary_apply_f32(size_t rows, size_t n, size_t d, size_t first_pos, float *x);
LA_API la_status la_rotary_apply_f64(size_t rows, size_t n, size_t d, size_t first_pos, double *x);

/* Linear attention with rotary positions, as RoFormer does it (Su et al. 2021, §3.4.2,
 * and its linear-attention code): the rotation acts on the features, in the numerator
 * only; the denominator keeps the unrotated features, so it stays positive:
 *   y_i = Σ_j (R_{t_i} φ(q_i))ᵀ (R_{s_j} φ(k_j)) v_j / (Σ_j φ(q_i)ᵀ φ(k_j) + eps),
 * t_i = q_first_pos + i, s_j = k_first_pos + j, over the keys query i sees (p->causal:
 * j <= i + o by index, o = 0 top-left or M − N bottom-right, p->causal_align; key
 * lengths; p->mask and p->key_mask refused, LA_EINVAL). The weights of the numerator
 * can be negative (y is no longer a convex combination of the values); a query that sees
 * no key, or whose denominator is exactly 0, gets a zero row. Rotating q and k before φ
 * instead would lose φ's positivity and is not what RoFormer does. p->feature_map and
 * p->eps as linear attention; p->chunk is not read (the causal form runs token by token:
 * S = Σ R φ(k_j) v_jᵀ and z = Σ φ(k_j) carried, O(B·H·(N + M)·d_k·d_v)).
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major; d_k even.
 * Scratch per thread (held against p->workspace_limit): d_k·d_v + 5·d_k elements.
 * Range: LA_ERANGE when 2·d_k·M·(a + 1)·(b + 1)·max(c, 1) > T/8 (causal linear
 * attention's rule, twice for the rotation). Not a registry row (its first positions are
 * arguments); no backward.
 * Returns LA_OK, LA_EINVAL (a bad problem, NULL, d_k odd), LA_EOVERFLOW (the last
 * position beyond SIZE_MAX), LA_EBUDGET, LA_ENOMEM, LA_ERANGE; nothing written on error.
 *   implementation lib/attention/rotary.c (rotary_tmpl.h) · reference
 *   la_ref_linear_attention_rotary · tests tests/attention/test_positions.c */
LA_API la_status la_linear_attention_rotary_f32(const la_problem *p, size_t q_first_pos,
                                                size_t k_first_pos, const float *q, const float *k,
                                                const float *v, float *out);
LA_API la_status la_linear_attention_rotary_f64(const la_problem *p, size_t q_first_pos,
                                                size_t k_first_pos, const double *q,
                                                const double *k, const double *v, double *out);

/* Dispatch by kernel: the registry row's forward_f32 / forward_f64. LA_EINVAL for a
 * kernel outside the registry or a problem its causal rule refuses. */
LA_API la_status la_attention_f32(la_kernel kernel, const la_problem *p, const float *q,
                                  const float *k, const float *v, float *out);
LA_API la_status la_attention_f64(la_kernel kernel, const la_problem *p, const double *q,
                                  const double *k, const double *v, double *out);

/* The attention matrix: the normalized weights A with out = A·V, for inspection.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), out: (B,H,N,M) row-major (v is not needed).
 *   softmax, softmax_materialized: A_ij = exp(s_ij − max) / Σ_j' exp(s_ij' − max) with
 *     s = q·k · scale, over the keys query i sees (the matrix P the materializing kernel
 *     forms; the fused kernel never holds it);
 *   local: as softmax, over the keys query i sees within its window;
 *   hard: one-hot rows, 1 at the kernel's argmax (ties to the lowest j);
 *   linear, linear_recurrent: A_ij = φ(q_i)·φ(k_j) / (φ(q_i)·z_i + eps), z_i = Σ φ(k_j)
 *     over the keys query i sees (all visible keys, or j <= i when p->causal).
 *   linformer, favor, favor_recurrent, general, additive, cosine, relative: none
 *     (LA_EINVAL).
 * Hidden entries are exactly 0; a query that sees no key (or, in linear attention, has a
 * zero denominator) gets a zero row, so rows sum to 1 (linear: to 1 − eps/den) or 0.
 * A·V equals the kernel's output up to rounding. The caller's out holds B·H·N·M
 * elements (it is not held against p->workspace_limit: the caller sized it); the scratch
 * is linear attention's φ(K) per thread, which is. Range (LA_ERANGE, nothing written):
 * with a = max|q|, b = max|k|, softmax and hard refuse d_k·a·b·max(|scale|, 1) > T/8,
 * linear d_k·M·(a + 1)·(b + 1) > T/8. Returns LA_OK, LA_EINVAL (kernel outside the
 * registry or without a matrix here, a problem its causal rule refuses, NULL), LA_EOVERFLOW
 * (B·H·N·M elements beyond size_t), LA_EBUDGET, LA_ENOMEM, LA_ERANGE; out untouched on error.
 *   implementation lib/attention/weights_matrix.c (weights_matrix_tmpl.h) · tests
 *   tests/attention/test_attention_weights.c (float64 plain loops, A·V against every
 *   kernel) */
LA_API la_status la_attention_weights_f32(la_kernel kernel, const la_problem *p, const float *q,
                                          const float *k, float *out);
LA_API la_status la_attention_weights_f64(la_kernel kernel, const la_problem *p, const double *q,
                                          const double *k, double *out);

/* ---------------------------------------------------------------- step API */

/* Recurrent state of causal linear attention for autoregressive generation:
 * (S, z) per head, S (d_k, d_v) and z (d_k,), both zero after create and reset.
 * One state serves `heads` independent heads (use heads = B·H for a batch). */
typedef struct la_linear_state la_linear_state;

typedef enum { LA_FLOAT32 = 0, LA_FLOAT64 = 1 } la_dtype;

/* Creates a zeroed state; *out is owned by the caller, freed with la_linear_state_free.
 * Returns LA_OK, LA_EINVAL (NULL out, bad dtype, a zero size, bad φ or eps),
 * LA_EOVERFLOW, LA_ENOMEM; *out is untouched on error. */
LA_API la_status la_linear_state_create(la_linear_state **out, la_dtype dtype, size_t heads,
                                        size_t d_k, size_t d_v, la_feature_map fm, double eps);
LA_API void la_linear_state_free(la_linear_state *st);  /* NULL is fine */
LA_API void la_linear_state_reset(la_linear_state *st); /* back to zero, position 0; NULL fine */
/* tokens stepped so far (0 for NULL) */
LA_API size_t la_linear_state_position(const la_linear_state *st);

/* One token: S += φ(k_t) v_tᵀ, z += φ(k_t), then y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps),
 * in O(d_k · d_v) per head. q_t: (heads, d_k), k_t: (heads, d_k), v_t: (heads, d_v),
 * y_t: (heads, d_v). The dtype must match the state's. Returns LA_OK, LA_EINVAL (NULL,
 * another dtype) or LA_ERANGE, the last two with y_t and the state untouched. LA_ERANGE
 * (the range rule above, per token): the state keeps bounds s ≥ |S| and z ≥ z entries
 * (0 after create and reset, read off S and z by restore); with a, b, c the largest
 * |q_t|, |k_t|, |v_t| over the heads, a token is refused when s + (b + 1)·c, z + b + 1
 * or d_k·(a + 1)·max(s', z') (the new bounds) passes T/8. Once refused, a state refuses
 * every further token of that size: reset it, or use a float64 state.
 * Stepping through a sequence reproduces la_linear_attention_recurrent_* bit for bit
 * (same arithmetic, same order). A state holds scratch: do not step one state from two
 * threads at once (different states are independent). */
LA_API la_status la_linear_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                                    const float *v_t, float *y_t);
LA_API la_status la_linear_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                                    const double *v_t, double *y_t);

/* Save and restore: la_linear_state_save_size() bytes hold the whole state (a magic,
 * dtype, sizes, φ, eps, position, then S and z), in this machine's byte order. save
 * needs size >= la_linear_state_save_size(). Restore accepts only a buffer of exactly
 * that size saved from a state of the same dtype, sizes, φ and eps, holding data a state
 * can reach: S and z finite, z >= 0, all zero at position 0, FAVOR+'s running maximum
 * finite and within what its features allow, and a position the next step cannot wrap
 * (LA_EINVAL otherwise, and the state is left unchanged); it restores S, z and the
 * position. */
LA_API size_t la_linear_state_save_size(const la_linear_state *st); /* 0 for NULL */
LA_API la_status la_linear_state_save(const la_linear_state *st, void *buf, size_t size);
LA_API la_status la_linear_state_restore(la_linear_state *st, const void *buf, size_t size);

/* FAVOR+ (la_favor_attention_*) one token at a time: a state of `heads` heads whose
 * tokens take FAVOR+'s m = features random features W = la_favor_features(m, d_k, seed)
 * instead of φ, so that stepping a sequence gives la_favor_attention_recurrent_*'s
 * outputs (to rounding, not bit for bit: the projections here are per-row dot products,
 * the kernel's one matrix product), and with them the causal FAVOR+ kernel's. Per head it
 * holds S (m, d_v), z (m) and μ, the keys' running max (the kernel's stabilizer): step,
 * reset, position, save, restore and free are the functions above, at O(m·(d_k + d_v))
 * per token and head. A step's range rule is FAVOR+'s (each key's features at most
 * 1/√m, every rescaling at most 1): with c = max|v_t| and s, z the state's bounds, a
 * token is refused (LA_ERANGE, state and y_t untouched) when s + c, z + 1 or
 * m·max(s + c, z + 1) passes T/8, or when a projection or ‖s·k‖² is not finite. Restore
 * also needs the same m and seed. Returns LA_OK, LA_EINVAL (NULL out, bad dtype, a zero
 * size or feature count, bad eps), LA_EOVERFLOW, LA_ENOMEM; *out untouched on error.
 *   implementation lib/attention/state.c, favor.c (favor_tmpl.h) · tests
 *   tests/attention/test_favor.c */
LA_API la_status la_favor_state_create(la_linear_state **out, la_dtype dtype, size_t heads,
                                       size_t d_k, size_t d_v, size_t features, uint64_t seed,
                                       double eps);

/* ---------------------------------------------------------------- references */

/* float64 oracles: plain loops that materialize everything (scores, φ(K), the full
 * prefix states). Same shapes, masks and conventions as the kernels; slow on purpose.
 * la_ref_linear_attention follows p->causal. Returns LA_OK, LA_EINVAL, LA_EOVERFLOW,
 * LA_ENOMEM (they ignore workspace_limit). */
LA_API la_status la_ref_softmax_attention(const la_problem *p, const double *q, const double *k,
                                          const double *v, double *out);
LA_API la_status la_ref_hard_attention(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out);
LA_API la_status la_ref_linear_attention(const la_problem *p, const double *q, const double *k,
                                         const double *v, double *out);
/* Local attention's oracle: per query, each key tested against the masks and the window
 * (|i − j| <= p->window; causal also j <= i), the softmax over those. */
LA_API la_status la_ref_local_attention(const la_problem *p, const double *q, const double *k,
                                        const double *v, double *out);
/* FAVOR+'s oracle: W from la_favor_features, φ(Q) and φ(K) with the kernel's stabilizers
 * (μ_i over the keys query i sees) in plain loops, then y_i = Σ_j a_ij v_j / (Σ_j a_ij +
 * eps), a_ij = φ(q_i)·φ(k_j), pair by pair over the visible keys (zero row for none, or a
 * zero denominator). */
LA_API la_status la_ref_favor_attention(const la_problem *p, const double *q, const double *k,
                                        const double *v, double *out);
/* The gradient of linear attention (follows p->causal), for la_linear_attention_backward_*
 * and la_linear_attention_recurrent_backward_*: the forward recomputed with every prefix
 * state materialized (out is not read, but must not be NULL), the keys' gradients summed
 * pair by pair. Shapes and conventions as those. Returns LA_OK, LA_EINVAL, LA_EOVERFLOW,
 * LA_ENOMEM. */
LA_API la_status la_ref_linear_attention_backward(const la_problem *p, const double *q,
                                                  const double *k, const double *v,
                                                  const double *out, const double *d_out,
                                                  double *d_q, double *d_k, double *d_v);
/* float64 oracles of the backward passes (la_backward_f64_fn): the forward's loops, then
 * per query i the softmax Jacobian written out: P_i, dP_ij = d_out_i·v_j, dS_ij = P_ij
 * (dP_ij − Σ_l P_il dP_il), d_v_j += P_ij d_out_i, d_q_i += scale Σ_j dS_ij k_j, d_k_j +=
 * scale dS_ij q_i; hard: d_q = d_k = 0, d_v_j = Σ d_out_i over the queries whose argmax
 * (ties to the lowest j) is j. out is not read. Statuses as the forward references. */
LA_API la_status la_ref_softmax_attention_backward(const la_problem *p, const double *q,
                                                   const double *k, const double *v,
                                                   const double *out, const double *d_out,
                                                   double *d_q, double *d_k, double *d_v);
LA_API la_status la_ref_hard_attention_backward(const la_problem *p, const double *q,
                                                const double *k, const double *v, const double *out,
                                                const double *d_out, double *d_q, double *d_k,
                                                double *d_v);
/* Linformer's oracle: E and F (given, or drawn by la_linformer_projections), E·K and
 * F·V over the visible keys, then the softmax of the scores over the k projected keys,
 * each as plain loops. Refuses what la_linformer_attention_* refuses (causal, k > M,
 * non-finite projections: LA_EINVAL). */
LA_API la_status la_ref_linformer_attention(const la_problem *p, const double *q, const double *k,
                                            const double *v, double *out);
/* The score functions' oracles: per pair the score written from its formula (general
 * Σ_a Σ_b q_a W_ab k_b · scale; additive Σ_a v_a tanh(Σ_c W_ac q_c + Σ_c W_a,d_k+c k_c);
 * cosine q·k / (max(‖q‖, 1e-12)·max(‖k‖, 1e-12)) · scale), then the softmax over the
 * visible keys and P·V, as plain loops; weights given or drawn by la_score_weights.
 * Refuse what the kernels refuse (LA_EINVAL) but never LA_ERANGE. */
LA_API la_status la_ref_general_attention(const la_problem *p, const double *q, const double *k,
                                          const double *v, double *out);
LA_API la_status la_ref_additive_attention(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out);
LA_API la_status la_ref_cosine_attention(const la_problem *p, const double *q, const double *k,
                                         const double *v, double *out);
/* The relative kernel's oracle: per query, the visible keys' scores q_i·(k_j + a^K_δ)·scale
 * and their softmax, then Σ_j α_ij (v_j + a^V_δ), each as plain loops over j. */
LA_API la_status la_ref_relative_attention(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out);
/* Rotary linear attention's oracle: per pair (i, j) visible, the numerator's weight
 * φ(q_i)ᵀ R_{s_j − t_i} φ(k_j) written with the angle of the distance itself,
 * Σ_c (a_2c b_2c + a_2c+1 b_2c+1)·cos((s_j − t_i)θ_c) + (a_2c+1 b_2c − a_2c b_2c+1)·sin(…),
 * a = φ(q_i), b = φ(k_j), and the denominator Σ_j φ(q_i)ᵀφ(k_j) + eps. Statuses as
 * la_linear_attention_rotary_* (no LA_EBUDGET). */
LA_API la_status la_ref_linear_attention_rotary(const la_problem *p, size_t q_first_pos,
                                                size_t k_first_pos, const double *q,
                                                const double *k, const double *v, double *out);
/* The registry row's reference (LA_EINVAL as for la_attention_f64). */
LA_API la_status la_ref_attention(la_kernel kernel, const la_problem *p, const double *q,
                                  const double *k, const double *v, double *out);

/* φ applied element-wise, float64 reference form (out may equal x). */
LA_API void la_ref_feature_map(la_feature_map fm, const double *x, double *out, size_t n);

/* ---------------------------------------------------------------- cost model */

/* FLOPs and memory of one kernel call: the one model the benchmarks and experiments
 * take GFLOP/s from (lib/attention/cost.c). Every count is a total over the call's batch × heads
 * problems. It counts the arithmetic of the algorithm each kernel runs over the
 * (query, key) pairs the masks leave visible only (so causal counts its half, key
 * lengths shorten rows): a multiply-add is 2 FLOPs; an add, multiply, divide, compare,
 * max or exp 1; φ 1 per element. A query that sees no key costs nothing. Not counted:
 * the scale multiply, the fused kernel's online rescaling, index arithmetic — so the
 * fused and materializing softmax kernels have the same count. Two consequences for
 * the linear kernels, which the cost test checks against their FLOPs counted as they
 * run (tests/attention/test_cost.c):
 *   - a block a causal kernel computes whole and then masks counts its visible entries
 *     only: the chunked kernel computes A = φQ_c·φK_cᵀ over the whole chunk × chunk
 *     block, hidden upper triangle included, and that triangle is not counted;
 *   - a sum of k terms costs k adds (k multiply-adds 2k) however the kernel splits it:
 *     an m×n×k product counts 2·m·n·k even when it starts from zero, and the adds that
 *     join partial sums (a chunk's ΔS_c into the carried state, a key block's partial z,
 *     a key piece's partial [S z]) are not counted again.
 *   m = min(M, L_b) visible keys, u = causal ? min(N, m) : m keys any query sees;
 *   chunked linear: pairs_intra the visible pairs inside each chunk;
 *   local: pairs are those inside the windows, Σ_i (min(m, i + e) − max(0, i − r))⁺ with
 *     e = r + 1 (causal: 1), counted as softmax counts a pair (a closed form, O(1) per
 *     entry); the entries of a score block outside a row's window are computed, then
 *     masked, and not counted (as the chunked kernel's hidden triangle);
 *   score functions, per head with m keys in length (none: no work) and the
 *     softmax fields counted as softmax counts its visible pairs:
 *     general   flops_kv 2·m·d_k² (K' = K Wᵀ), then softmax's fields;
 *     cosine    flops_phi (N + m)·(3·d_k + 1) (per row ‖x‖: d_k multiply-adds and a
 *               square root; x / ‖x‖: d_k divides; the largest-entry scan and rescale
 *               that keep the norm from overflowing are not counted), then softmax's;
 *     additive  flops_qs 2·N·d_a·d_k (A = Q W_qᵀ), flops_kv 2·m·d_a·d_k (C = K W_kᵀ),
 *               flops_qk 4·d_a per visible pair (an add, a tanh, a multiply-add: tanh
 *               counts 1, as exp does), flops_softmax 5 and flops_av 2·d_v per pair. */
typedef struct {
    double flops_qk;        /* softmax/hard: Q·Kᵀ, 2·pairs·d_k. Causal chunked linear: the
                               intra-chunk A = φQ_c·φK_cᵀ, 2·pairs_intra·d_k */
    double flops_softmax;   /* softmax: row max, subtract, exp, row sum, divide: 5·pairs;
                               hard: 1 compare per pair (the argmax) */
    double flops_av;        /* softmax: P·V, 2·pairs·d_v. Causal chunked linear: A·V_c and
                               A's row sums (the denominators' intra-chunk part),
                               pairs_intra·(2·d_v + 1) */
    double flops_phi;       /* linear: φ on Q and on the keys used, (N + u)·d_k */
    double flops_kv;        /* linear: S += φ(k)vᵀ and z += φ(k), 2·d_k·d_v + d_k per key:
                               u keys (non-causal, recurrent); chunked: each key a later
                               chunk sees (ΔS_c = φK_cᵀ·V_c, Δz_c = Σ_rows φK_c).
                               Linformer: the projections E·K and F·V over the m visible
                               keys, 2·k·m·(d_k + d_v); its other fields are softmax's
                               with M = k (all k projected keys seen, also when m = 0) */
    double flops_qs;        /* linear: φ(q)·S and φ(q)·z, 2·d_k·d_v + 2·d_k per query;
                               chunked: per query of a chunk after the first */
    double flops_normalize; /* linear: den + eps and d_v divides, (d_v + 1) per query */
    double flops_total;     /* the sum of the above */
    double workspace_bytes; /* scratch the kernel allocates (and holds against
                               p->workspace_limit), for the current thread count:
                               materialized one N×M score matrix; fused and hard a 64×256
                               score block and row statistics per thread; linear what
                               the kernel's layout holds: S and z per head (non-causal) or
                               per thread (causal), φ blocks, a chunk's operands;
                               local a 64 × bk score block, bk = min(64 + 2r, M,
                               256) (causal 64 + r), a d_k × bk key block and row
                               statistics per thread */
    double io_bytes;        /* q, k, v read and out written once */
    double bytes_min;       /* the fewest bytes the algorithm moves to and from memory:
                               io_bytes, plus what it holds beyond registers and cache by
                               its design, written once and read once (per head unless said;
                               in elements of the call's type unless said):
                               softmax, hard, local: nothing more (never the scores);
                               softmax_materialized: the N×M scores, 2·N·M;
                               linear (every form): S and z, 2·(d_k·d_v + d_k);
                               linformer: K' and V', 2·k·(d_k + d_v), and E and F read once
                               per call, 2·k·M float64;
                               favor (both forms): S and z on m features, 2·(m·d_v + m),
                               and W read once per call, m·d_k float64;
                               general: K·W, 2·M·d_k, and W read once, d_k² float64;
                               cosine: the normalized q and k, 2·(N + M)·d_k;
                               additive: Q·W_qᵀ and K·W_kᵀ, 2·(N + M)·d_a, and W and v
                               read once, d_a·(2·d_k + 1) float64;
                               relative: a^K and a^V read once per call, (2K + 1)·(d_k +
                               d_v) float64 (each query's row of M scores stays in cache).
                               Backward: io_bytes. `linattn roofline` divides flops_total
                               by it: the arithmetic intensity */
} la_cost;

/* Visible (query, key) pairs of one head of batch entry b under the masks (causal in
 * either alignment, key lengths; not the general masks p->mask, p->key_mask, whose hidden
 * pairs the kernels compute and then drop: la_attention_cost counts them as visible). */
LA_API double la_visible_pairs(const la_problem *p, size_t b);

/* Fills *out for one call of `kernel` on p in dtype. Returns LA_OK, LA_EINVAL (NULL,
 * bad kernel or dtype, LA_KERNEL_LINEAR_RECURRENT without p->causal), or what
 * la_problem_check returns. */
LA_API la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                   la_cost *out);

/* ---------------------------------------------------------------- backward passes */

/* Gradients through one forward call, for a loss L with d_out = ∂L/∂out given.
 * The empty row, backward: a query that sees no key (its output row is zeros whatever the
 * inputs) contributes nothing to any gradient, and its d_q row is zero; a key no query sees
 * gets zero d_k and d_v rows. Range (LA_ERANGE, nothing written): a backward refuses what
 * its forward refuses (the rule under "kernels"), and, with e = max|d_out|, o = max|out|
 * and a, b, c as there, also
 *   softmax (fused, materializing): N·d_v·e·(c + o)·max(a, b, 1)·max(|scale|, 1) > T/8
 *                                   or N·e > T/8
 *   hard:                           N·e > T/8
 * (bounds on dP − D, on d_k's and d_q's sums and on d_v's sums of at most N rows of d_out:
 * lib/attention/softmax_backward.c), so float32 never returns inf or NaN from finite inputs.
 * Accuracy: the fused backward takes D_i = d_out_i·out_i from the forward's output, as
 * FlashAttention-2 does; in float32 at logits of ±1e3 whose keys share a large common part
 * (what makes logits large while their differences stay small), d_q's component along that
 * part carries the forward's rounding of P magnified by the common part's size (the
 * materializing backward forms D from its own P and does not: tests/attention/
 * test_attention.c, backward_matches_reference, measures both).
 *
 * Shapes:
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out and d_out: (B, H, N, d_v),
 *   d_q, d_k, d_v: shaped as q, k, v (written whole; a key no query sees gets zeros).
 * out is the forward's output for the same inputs (the kernels that need it read it
 * instead of recomputing it). Same masks, scale, φ and eps as the forward; the float64
 * oracles are la_ref_attention_backward's plain loops. Dispatch by kernel: the registry
 * row's backward_f32 / backward_f64; LA_EINVAL for a kernel outside the registry, one
 * without a backward, or a problem its causal rule refuses; otherwise the kernel's own
 * statuses (LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE), every output
 * untouched on error. */
LA_API la_status la_attention_backward_f32(la_kernel kernel, const la_problem *p, const float *q,
                                           const float *k, const float *v, const float *out,
                                           const float *d_out, float *d_q, float *d_k, float *d_v);
LA_API la_status la_attention_backward_f64(la_kernel kernel, const la_problem *p, const double *q,
                                           const double *k, const double *v, const double *out,
                                           const double *d_out, double *d_q, double *d_k,
                                           double *d_v);
/* The row's float64 oracle of the backward (plain loops, materializing everything). */
LA_API la_status la_ref_attention_backward(la_kernel kernel, const la_problem *p, const double *q,
                                           const double *k, const double *v, const double *out,
                                           const double *d_out, double *d_q, double *d_k,
                                           double *d_v);
/* The cost of one backward call, as la_attention_cost's of a forward: the FLOP fields the
 * row's backward_cost fills, their sum in flops_total, workspace_bytes, and io_bytes = q,
 * k, v, out and d_out read, d_q, d_k, d_v written once. LA_EINVAL also for a kernel without
 * a backward. The conventions are the forward's (visible pairs only, a multiply-add 2, the
 * scale multiply not counted); per head with `pairs` visible pairs and `seeing` queries that
 * see a key (N, or 0 when the key length is 0):
 *   softmax (fused):        flops_qk 6·pairs·d_k (S = QKᵀ recomputed, d_K = dSᵀQ, d_Q = dS·K),
 *                           flops_av 4·pairs·d_v (dP = d_out·Vᵀ, d_V = Pᵀ·d_out),
 *                           flops_softmax 4·pairs + 2·seeing·d_v (P = exp(S − lse): subtract,
 *                           exp; dS = P ∘ (dP − D): subtract, multiply; D = d_out·out);
 *                           not counted: the lse pass the registry row runs first (lse NULL:
 *                           a forward's QKᵀ and row statistics), and the recomputation of S,
 *                           P, dP and dS in the d_q pass of the two-pass schedule (fewer
 *                           (batch, head) pairs than threads) — work of the schedule, like
 *                           the forward's online rescaling, not of the formula;
 *                           workspace: per thread d_k·64 + d_v·64 + 2·64·64 + 64 elements (at
 *                           most N, M), for min(threads, B·H·max(query, key blocks)) threads,
 *                           and the B·H·N log-sum-exps the registry row computes;
 *   softmax_materialized:   flops_qk and flops_av as fused, flops_softmax 9·pairs (the
 *                           forward's softmax 5, Σ_j P∘dP 2, dS 2); workspace the N×M matrix
 *                           and 64 rows of M per thread;
 *   hard:                   flops_qk 2·pairs·d_k and flops_softmax 1·pairs (the argmax
 *                           again), flops_av seeing·d_v (d_V's adds); workspace the B·H·N
 *                           chosen keys and the forward's blocks per thread. */
LA_API la_status la_attention_backward_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                            la_cost *out);

/* ---------------------------------------------------------------- the kernel registry */

/* One row per kernel (lib/attention/registry.c): everything the command, the benchmark,
 * the sweeps, the cost model, the plots and the tests need to know about it. A new
 * kernel is its kernel file, its reference, its cost function, one row, and its tests.
 * The function pointers are the public functions above. */
typedef la_status (*la_forward_f32_fn)(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out);
typedef la_status (*la_forward_f64_fn)(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out);
/* Gradients of a loss L through one call, given d_out = ∂L/∂out: d_q, d_k, d_v shaped as
 * q, k, v (see "backward passes"). */
typedef la_status (*la_backward_f32_fn)(const la_problem *p, const float *q, const float *k,
                                        const float *v, const float *out, const float *d_out,
                                        float *d_q, float *d_k, float *d_v);
typedef la_status (*la_backward_f64_fn)(const la_problem *p, const double *q, const double *k,
                                        const double *v, const double *out, const double *d_out,
                                        double *d_q, double *d_k, double *d_v);
/* The kernel's FLOP fields and workspace_bytes of *out for a problem la_attention_cost
 * has already checked; call la_attention_cost, which adds the totals. */
typedef la_status (*la_cost_fn)(const la_problem *p, la_dtype dtype, la_cost *out);

typedef enum {
    LA_CAUSAL_ALLOWED = 0,  /* p->causal 0 or 1 */
    LA_CAUSAL_REQUIRED = 1, /* p->causal must be 1 */
    LA_CAUSAL_REFUSED = 2,  /* p->causal must be 0 */
} la_causal_rule;

/* The la_problem fields a kernel reads beyond the sizes and masks (la_kernel_info.params). */
enum {
    LA_PARAM_SCALE = 1u << 0,         /* scale */
    LA_PARAM_FEATURE_MAP = 1u << 1,   /* feature_map */
    LA_PARAM_EPS = 1u << 2,           /* eps */
    LA_PARAM_CHUNK = 1u << 3,         /* chunk, when causal */
    LA_PARAM_WINDOW = 1u << 4,        /* window */
    LA_PARAM_PROJ = 1u << 5,          /* proj_rank, proj_e, proj_f, seed */
    LA_PARAM_FEATURES = 1u << 6,      /* features, seed */
    LA_PARAM_SCORE_WEIGHTS = 1u << 7, /* score_w, seed (general, additive) */
    LA_PARAM_SCORE_DIM = 1u << 8,     /* score_dim, score_v (additive) */
    LA_PARAM_RELATIVE = 1u << 9,      /* max_distance, rel_k, rel_v, seed */
};

/* The general masks a kernel honours (la_kernel_info.masks); given one it lacks, it
 * returns LA_EINVAL. Causal masking and key lengths are the causal rule's and every
 * kernel's. */
enum {
    LA_MASK_GENERAL = 1u << 0, /* p->mask: any (query, key) pair hidden */
    LA_MASK_KEY = 1u << 1,     /* p->key_mask: keys hidden from every query */
};

/* What a kernel offers beside its forward (la_kernel_info.caps). */
enum {
    LA_CAP_LSE = 1u << 0,     /* each row's log-sum-exp beside the output, for its backward */
    LA_CAP_WEIGHTS = 1u << 1, /* its N×M attention matrix (la_attention_weights_*) */
    LA_CAP_STEP = 1u << 2,    /* its causal form runs token by token on a constant-size state
                                 (la_linear_state_create, la_favor_state_create) */
    LA_CAP_ROTARY = 1u << 3,  /* takes rotary positions: q and k rotated before it runs */
    LA_CAP_ROTARY_FEATURES = 1u << 4, /* ... rotated inside it instead, on φ(q) and φ(k) in
                                         the numerator only (RoFormer's linear form) */
    LA_CAP_POSITIONS = 1u << 5,       /* encodes positions itself (relative) */
    LA_CAP_APPROXIMATES = 1u << 6,    /* approximates softmax attention at the same scale:
                                         measured against it by approx and accuracy */
};

/* Which of a kernel's series the commands' default sweeps run (la_kernel_info.sweep). */
enum {
    LA_SWEEP_PLAIN = 1u << 0,  /* the series without causal masking */
    LA_SWEEP_CAUSAL = 1u << 1, /* the causal series */
};

typedef struct {
    la_kernel kernel;
    const char *name;      /* "softmax_materialized": the one spelling of the kernel */
    const char *summary;   /* one line for help texts */
    const char *series[2]; /* its name in result files without and with causal masking
                              ("linear", "linear_causal_chunked"); NULL where the causal
                              rule forbids that form */
    la_causal_rule causal;
    unsigned params;      /* LA_PARAM_* bits: the la_problem fields it reads */
    unsigned masks;       /* LA_MASK_* bits: the general masks it honours */
    unsigned caps;        /* LA_CAP_* bits */
    unsigned sweep;       /* LA_SWEEP_* bits: its series in the default sweeps */
    double time_exponent; /* e in time ∝ N^e (self-attention, N = M, fixed d and budget) */
    const char *family;   /* its kind, grouping figures and tables: "softmax" (exact),
                             "linear", "sparse", "low-rank", "random-feature", "score",
                             "position" */
    la_forward_f32_fn forward_f32;
    la_forward_f64_fn forward_f64;
    la_forward_f64_fn reference; /* the float64 oracle (la_ref_*) */
    la_cost_fn cost;
    la_backward_f32_fn backward_f32;       /* NULL: no backward. softmax: */
    la_backward_f64_fn backward_f64;       /* la_softmax_attention_backward_*, lse NULL */
    la_backward_f64_fn reference_backward; /* the float64 oracle of the backward (la_ref_*) */
    la_cost_fn backward_cost;              /* the backward's FLOP fields and workspace */
} la_kernel_info;

/* The row of a kernel; NULL outside [0, LA_KERNEL_COUNT). Rows live for the program. */
LA_API const la_kernel_info *la_kernel_get(la_kernel kernel);
/* The row's name ("unknown" outside the registry). */
LA_API const char *la_kernel_name(la_kernel kernel);
/* Name -> kernel; '-' is read as '_' ("softmax-materialized"). LA_EINVAL if unknown. */
LA_API la_status la_kernel_parse(const char *name, la_kernel *out);
/* The series name of kernel with causal 0 or 1 (NULL where its causal rule forbids it). */
LA_API const char *la_kernel_series(la_kernel kernel, int causal);
/* Series name -> kernel and causal flag. LA_EINVAL if no row has that series. */
LA_API la_status la_kernel_series_parse(const char *series, la_kernel *kernel, int *causal);

/* ---------------------------------------------------------------- .npy files */

/* An n-dimensional array read from or written to a NumPy .npy file (C order,
 * little-endian). data is owned by the array: la_array_free releases it. */
#define LA_NPY_MAX_DIMS 8

typedef enum {
    LA_NPY_F32 = 0, /* '<f4' */
    LA_NPY_F64,     /* '<f8' */
    LA_NPY_I32,     /* '<i4' */
    LA_NPY_I64,     /* '<i8' */
    LA_NPY_F16,     /* '<f2': IEEE 754 half precision (NumPy's float16) */
    LA_NPY_BF16,    /* '<V2' or '|V2': bfloat16, by ml_dtypes' convention (below) */
    LA_NPY_BOOL,    /* '|b1': NumPy's bool, one byte each, read as stored (NumPy writes 0, 1) */
} la_npy_dtype;

/* HALF PRECISION. Models store their tensors in float16 or bfloat16; linattn reads both
 * and computes in float32 (la_array_to_f32 widens them, exactly). NumPy has no bfloat16
 * dtype: ml_dtypes' bfloat16 (the one JAX and TensorFlow use) is saved by np.save with
 * descr '<V2', two raw bytes per element, and a V2 view of bfloat16 bits with '|V2'. So
 * linattn reads every 2-byte void descr ('<V2', '|V2', '=V2') as bfloat16, little-endian
 * bits (sign, 8-bit exponent, 7-bit fraction: the top half of a float32), and writes
 * LA_NPY_BF16 as '<V2' (np.load gives a void array; .view(ml_dtypes.bfloat16) reads it).
 * A V2 file holding anything else would be misread: the format cannot tell. */

typedef struct {
    la_npy_dtype dtype;
    int ndim; /* 0 .. LA_NPY_MAX_DIMS */
    size_t shape[LA_NPY_MAX_DIMS];
    size_t count; /* product of shape (1 for ndim 0) */
    void *data;   /* count elements of dtype */
} la_array;

/* Bytes per element: 2, 4 or 8 (0 for a value outside the enum). */
LA_API size_t la_npy_dtype_size(la_npy_dtype dtype);

/* Parses a whole .npy file image (format 1.0, 2.0 or 3.0). Accepts descr '<f2', '<V2'
 * (bfloat16), '<f4', '<f8', '<i4', '<i8' (also with '=' or '|', both little-endian here),
 * fortran_order False,
 * any shape of up to LA_NPY_MAX_DIMS non-negative ints, and exactly shape × item size
 * data bytes after the header. Reads only inside [bytes, bytes + size).
 * On success out->data is never NULL (even for zero elements). On error returns
 * LA_EINVAL (NULL bytes or out), LA_EFORMAT (bad magic or version, truncated, malformed header,
 * Fortran order, data size mismatch), LA_EDTYPE (other dtypes, big-endian), LA_EOVERFLOW (shape ×
 * item size beyond size_t) or LA_ENOMEM, sets *why (when why is not NULL) to a one-line reason such
 * as "truncated header", and leaves *out empty. *why points to static storage: a string constant,
 * or for "data is N bytes, shape needs M" a per-thread buffer valid until the next
 * la_npy_parse/la_npy_read on the same thread. */
LA_API la_status la_npy_parse(const void *bytes, size_t size, la_array *out, const char **why);

/* Reads a file: la_npy_parse of its contents, or LA_EIO when it cannot be read (*why
 * then says why: "no such file", "permission denied", "is a directory", …), LA_EINVAL
 * for a NULL path or out. */
LA_API la_status la_npy_read(const char *path, la_array *out, const char **why);

/* Writes atomically, version 1.0 (2.0 if the header needs it) with the header padded
 * as NumPy pads it (data at a multiple of 64 bytes), through la_outfile (below): an
 * unnamed file in the same folder, written, fsync'ed, then rename(2)d over path (mode
 * 0644, or the mode of the file replaced); a symbolic link is written through, a
 * non-regular file refused. On
 * error the temporary file is removed, no file appears at path (a file already there
 * is left as it was), and errno tells why. Returns LA_OK, LA_EINVAL (NULL or empty
 * path, an inconsistent array: unknown dtype, ndim out of range, count not the product
 * of shape, NULL data), LA_EIO. */
LA_API la_status la_npy_write(const char *path, const la_array *a);

/* Releases data and empties the array (safe on an empty or already-freed array). */
LA_API void la_array_free(la_array *a);

/* Widens a float16 or bfloat16 array to float32 in place: a->data is replaced by a new
 * buffer of a->count floats, owned by the array as before (the old one is freed), and
 * a->dtype becomes LA_NPY_F32; ndim, shape and count are kept. Exact: every float16 and
 * bfloat16 value is a float32 (subnormals, ±0 and ±inf included; a NaN stays a NaN of
 * the same sign, its payload at the top of the fraction). A LA_NPY_F32 array is left as
 * it is. Returns LA_OK, LA_EINVAL (NULL a, another dtype, NULL data with count > 0),
 * LA_EOVERFLOW, LA_ENOMEM; *a unchanged on error. */
LA_API la_status la_array_to_f32(la_array *a);

/* Same as la_npy_write, and *why (when not NULL) gets a one-line reason on failure,
 * such as "is a device; refusing to replace it". */
LA_API la_status la_npy_write_why(const char *path, const la_array *a, const char **why);

/* ---------------------------------------------------------------- output files */

/* The one way linattn writes a file (la_npy_write, the command's results files): the
 * contents go to an unnamed file in the target's folder (O_TMPFILE; where the file
 * system lacks it, path.tmp.XXXXXX) and replace path in one rename(2) only when
 * committed, so path holds the old file or the whole new one, never a part.
 *   - A symbolic link at path is followed: its target is replaced and the link stays.
 *   - A file replaced keeps its permission bits.
 *   - A target that exists and is not a regular file (directory, device, FIFO, socket)
 *     is refused (LA_EIO, errno EISDIR or EEXIST): never replaced.
 *   - An output that is also an input is safe: the input is read first and the new
 *     file takes its name only when complete.
 * la_outfile_open: LA_OK, LA_EINVAL, LA_EIO (and *why). fd is open for appending.
 * la_outfile_commit: fsync, then the file is at path; fd stays open and keeps writing
 *   it (the results files append their rows after the first one is committed).
 * la_outfile_close: closes; an uncommitted file disappears. Returns 0 or -1.
 * la_outfile_signal_cleanup: removes the temporary names that exist right now (the
 *   path.tmp.* fallback); async-signal-safe, for the command's SIGINT/SIGTERM handler.
 *   With O_TMPFILE there is nothing to remove, even after SIGKILL. */
typedef struct {
    int fd;
    int anonymous, committed, slot;
    char path[4096], tmp[4096 + 48];
} la_outfile;
LA_API la_status la_outfile_open(la_outfile *o, const char *path, const char **why);
LA_API la_status la_outfile_commit(la_outfile *o, const char **why);
LA_API int la_outfile_close(la_outfile *o);
LA_API void la_outfile_signal_cleanup(void);
/* a as a .npy file (as la_npy_write writes it) into o, open and uncommitted,
 * without committing it: several files written first, then committed together, appear
 * all or none (the command's attend with gradients). LA_EINVAL (o not open or already
 * committed, an inconsistent array; *why says which), LA_EIO (a failed write). */
LA_API la_status la_npy_write_outfile(la_outfile *o, const la_array *a, const char **why);

/* ---------------------------------------------------------------- Transformer layers */

/* The layers of a Transformer as PyTorch's nn.Transformer builds them (batch_first,
 * dropout off), over the attention kernels above, in float32 and float64.
 *
 * LAYOUT. Activations are (B, N, D) row-major: B sequences of N tokens of D = d_model
 * features. Weights use PyTorch's layout: a Linear layer holds W (out, in) and b (out)
 * and computes y = x Wᵀ + b; in_proj_weight packs W_Q, W_K, W_V as (3D, D), rows
 * [0, D), [D, 2D), [2D, 3D). Every product goes through BLIS with strides (Wᵀ is never
 * copied). Head h of D/H features is columns [h·D/H, (h+1)·D/H) of Q, K and V.
 *
 * MASKS. `causal` makes query i see keys j <= i (PyTorch's is_causal / a square
 * subsequent mask); key lengths (NULL or (B,)) hide keys j >= L_b (PyTorch's
 * key_padding_mask with True on the padding). A query that sees no key gets zeros from
 * the attention, where PyTorch gives NaN.
 *
 * MEMORY. Layers allocate their own scratch (LA_ENOMEM when they cannot) and free it
 * before returning; out may equal x in every function of this section (not memory).
 * On error nothing has been written to out: layers and stacks work on a copy of x and
 * copy the result out at the end. la_layer_cost_model gives the scratch in bytes. */

typedef enum { LA_NORM_POST = 0, LA_NORM_PRE = 1 } la_norm_order;
typedef enum { LA_ACTIVATION_RELU = 0, LA_ACTIVATION_GELU = 1 } la_activation;

/* What a layer computes. Post-LN: x = LN(x + Sublayer(x)) (the original paper and
 * PyTorch's default); pre-LN: x = x + Sublayer(LN(x)) (norm_first=True). GELU is the
 * exact one, 0.5·x·(1 + erf(x/√2)) (PyTorch's default "gelu"). */
typedef struct {
    size_t d_model, heads, d_ff; /* D, H (dividing D), FFN inner size (all >= 1) */
    la_kernel attention;         /* the kernel of every attention in the layer, but: */
    la_kernel cross_attention;   /* a decoder's cross-attention; LA_KERNEL_COUNT (as init
                                    sets it) for the same kernel as `attention` */
    la_norm_order norm;
    la_activation activation;
    double norm_eps;            /* LayerNorm ε, finite and > 0 */
    la_feature_map feature_map; /* linear attention: φ */
    double linear_eps;          /* linear attention: y = num / (den + eps) */
    size_t chunk;               /* causal linear attention: tokens per chunk */
    size_t workspace_limit;     /* handed to the kernels (la_problem.workspace_limit) */
    /* Positions; absolute encodings are added to the input instead
     * (la_add_positional_encoding_*). rotary: 1 rotates each head's queries and keys in
     * self-attention, after the projections (la_rotary_apply_*; with LA_KERNEL_LINEAR,
     * la_linear_attention_rotary_* runs instead: RoFormer's form), positions 0..N−1; d_h =
     * D/H even; not with FAVOR+. Self-attention is an la_mha_* call with x_q == x_kv, as
     * the layers' self-attention sublayers make it; cross-attention is never rotated.
     * la_layer_cost_model does not count the rotation (O(N·D) per layer, beside O(N²·D)).
     * Relative positions: attention = LA_KERNEL_RELATIVE, which reads (in every attention
     * of the layer, as la_problem does): */
    int rotary;          /* 0 or 1 */
    size_t max_distance; /* K >= 1 */
    const double *rel_k; /* (2K+1, D/H) and (2K+1, D/H), float64, shared by every head; */
    const double *rel_v; /* both NULL: drawn from seed (la_relative_embeddings) */
    uint64_t seed;
} la_layer_config;

#define LA_DEFAULT_NORM_EPS 1e-5

/* Fills every field: the sizes given, softmax attention (fused) everywhere
 * (cross_attention = LA_KERNEL_COUNT: as attention), post-LN, ReLU, norm_eps = 1e-5,
 * φ = elu+1, linear_eps = LA_DEFAULT_EPS, chunk = LA_DEFAULT_CHUNK,
 * workspace_limit = LA_DEFAULT_WORKSPACE_LIMIT; no rotary, max_distance
 * LA_DEFAULT_MAX_DISTANCE, no relative tables given, seed 0. */
LA_API void la_layer_config_init(la_layer_config *c, size_t d_model, size_t heads, size_t d_ff);

/* LA_OK, or LA_EINVAL for a zero size, H not dividing D, an unknown enum, a bad ε or
 * chunk, LA_KERNEL_LINEAR_RECURRENT (use LA_KERNEL_LINEAR: its causal form is the
 * chunked one, and cross-attention is never causal) as attention or cross_attention,
 * rotary not 0 or 1, rotary with D/H odd or a FAVOR+ kernel, max_distance 0, one relative
 * table without the other. */
LA_API la_status la_layer_config_check(const la_layer_config *c);

/* The tensors of one encoder or decoder layer, by PyTorch state_dict key. */
typedef enum {
    LA_W_SELF_IN_WEIGHT = 0, /* self_attn.in_proj_weight        (3D, D) */
    LA_W_SELF_IN_BIAS,       /* self_attn.in_proj_bias          (3D) */
    LA_W_SELF_OUT_WEIGHT,    /* self_attn.out_proj.weight       (D, D) */
    LA_W_SELF_OUT_BIAS,      /* self_attn.out_proj.bias         (D) */
    LA_W_CROSS_IN_WEIGHT,    /* multihead_attn.in_proj_weight   (3D, D)  decoder only */
    LA_W_CROSS_IN_BIAS,      /* multihead_attn.in_proj_bias     (3D)     decoder only */
    LA_W_CROSS_OUT_WEIGHT,   /* multihead_attn.out_proj.weight  (D, D)   decoder only */
    LA_W_CROSS_OUT_BIAS,     /* multihead_attn.out_proj.bias    (D)      decoder only */
    LA_W_LINEAR1_WEIGHT,     /* linear1.weight                  (d_ff, D) */
    LA_W_LINEAR1_BIAS,       /* linear1.bias                    (d_ff) */
    LA_W_LINEAR2_WEIGHT,     /* linear2.weight                  (D, d_ff) */
    LA_W_LINEAR2_BIAS,       /* linear2.bias                    (D) */
    LA_W_NORM1_WEIGHT,       /* norm1.weight (γ)                (D) */
    LA_W_NORM1_BIAS,         /* norm1.bias (β)                  (D) */
    LA_W_NORM2_WEIGHT,       /* norm2.weight                    (D) */
    LA_W_NORM2_BIAS,         /* norm2.bias                      (D) */
    LA_W_NORM3_WEIGHT,       /* norm3.weight                    (D)      decoder only */
    LA_W_NORM3_BIAS,         /* norm3.bias                      (D)      decoder only */
    LA_W_COUNT
} la_layer_tensor;

/* The state_dict key of a tensor ("self_attn.in_proj_weight"; "" outside the enum). */
LA_API const char *la_layer_tensor_key(la_layer_tensor t);

/* Shape of tensor t for d_model D and d_ff: *ndim 1 or 2, shape[0..ndim). Returns 0
 * for a tensor the layer does not have (decoder-only tensors of an encoder layer), else
 * its element count. */
LA_API size_t la_layer_tensor_shape(la_layer_tensor t, size_t d_model, size_t d_ff, int decoder,
                                    size_t shape[2], int *ndim);

/* The weights of one layer, owning their memory. tensor[t] points into storage (float
 * or double per dtype), NULL for a tensor the layer does not have. */
typedef struct {
    la_dtype dtype;
    size_t d_model, d_ff;
    int decoder;     /* 0 encoder layer, 1 decoder layer */
    size_t n_params; /* elements held: la_param_counts' encoder/decoder_layer */
    void *tensor[LA_W_COUNT];
    void *storage;
} la_layer_weights;

/* Why a load failed: the file refused, and a one-line reason. */
typedef struct {
    char path[1024]; /* the .npy file that was missing, unreadable or misshapen ("" if none) */
    char why[256];   /* "no such file", "shape (4, 3), expected (12, 4)", … */
} la_load_error;

/* Allocates w and initializes it as nn.Transformer does for a fresh model: every
 * matrix Xavier-uniform, U(-a, a) with a = √(6 / (fan_in + fan_out)) (in_proj_weight
 * as one (3D, D) matrix, as PyTorch does), every bias 0, every LayerNorm γ = 1, β = 0.
 * The draws come from `seed` alone (splitmix64), tensor by tensor in enum order, so a
 * seed gives the same weights everywhere. On error w is left empty.
 * Returns LA_OK, LA_EINVAL (zero size, bad dtype), LA_EOVERFLOW, LA_ENOMEM. */
LA_API la_status la_layer_weights_init(la_layer_weights *w, la_dtype dtype, size_t d_model,
                                       size_t d_ff, int decoder, uint64_t seed);

/* Loads one layer from the folder dir holding <prefix><key>.npy for every key of the
 * layer (prefix "" for a lone layer, "encoder.layers.0." inside a model). D is taken
 * from self_attn.in_proj_weight (3D, D) and d_ff from linear1.weight (d_ff, D); every
 * other tensor must have exactly its shape. float16, bfloat16, float32 and float64 files
 * are accepted and converted to dtype. On error w is left empty and *err (when err is not NULL)
 * names the file: LA_EIO (missing or unreadable), LA_EFORMAT (not a valid .npy, a
 * wrong shape, a NaN or infinite value, or one beyond float32's range when dtype is
 * LA_FLOAT32), LA_EDTYPE (not float), LA_EINVAL (NULL w, dir or prefix, bad dtype or
 * decoder), LA_ENOMEM. */
LA_API la_status la_layer_weights_load(la_layer_weights *w, la_dtype dtype, int decoder,
                                       const char *dir, const char *prefix, la_load_error *err);

/* Releases the storage and empties w (safe on an empty or already-freed w). */
LA_API void la_layer_weights_free(la_layer_weights *w);

/* A stack as nn.Transformer holds it: encoder.layers.{i}.*, encoder.norm.{weight,bias},
 * decoder.layers.{i}.*, decoder.norm.{weight,bias}. A side with zero layers has no
 * final norm (its pointers NULL). */
typedef struct {
    la_dtype dtype;
    size_t d_model, d_ff;
    size_t encoder_layers, decoder_layers;
    la_layer_weights *encoder, *decoder;     /* owned arrays of encoder_layers, decoder_layers */
    void *encoder_norm[2], *decoder_norm[2]; /* γ, β: (D) each, in storage */
    void *storage;
    size_t n_params; /* la_param_counts' encoder + decoder */
} la_transformer_weights;

/* Initializes a stack: each layer as la_layer_weights_init with seeds derived from seed
 * and the layer's place, final norms γ = 1, β = 0. Same statuses; also LA_EINVAL for no
 * layer at all and LA_EOVERFLOW for layer counts whose sum or arrays overflow size_t. */
LA_API la_status la_transformer_weights_init(la_transformer_weights *w, la_dtype dtype,
                                             size_t d_model, size_t d_ff, size_t encoder_layers,
                                             size_t decoder_layers, uint64_t seed);
/* Loads a stack from dir (keys as in nn.Transformer's state_dict, see above); every
 * layer must agree on D and d_ff. Same statuses and *err as la_layer_weights_load, and
 * for the layer counts as la_transformer_weights_init. */
LA_API la_status la_transformer_weights_load(la_transformer_weights *w, la_dtype dtype,
                                             size_t encoder_layers, size_t decoder_layers,
                                             const char *dir, la_load_error *err);
LA_API void la_transformer_weights_free(la_transformer_weights *w);

/* LayerNorm over the last axis: y = (x − mean) / √(var + eps) · γ + β, biased variance
 * (divide by d), statistics accumulated in double.
 *   x, out: (rows, d); gamma, beta: (d). Returns LA_OK, LA_EINVAL (NULL, a zero size,
 *   rows · d overflowing, eps not finite and > 0), LA_ERANGE (a row of finite x gave a
 *   value beyond the element type's range, e.g. γ near its limit; out then holds it). */
LA_API la_status la_layer_norm_f32(size_t rows, size_t d, const float *x, const float *gamma,
                                   const float *beta, double eps, float *out);
LA_API la_status la_layer_norm_f64(size_t rows, size_t d, const double *x, const double *gamma,
                                   const double *beta, double eps, double *out);

/* Position-wise FFN: out = act(x W1ᵀ + b1) W2ᵀ + b2, act from c->activation.
 *   x, out: (rows, D); w1: (d_ff, D), b1: (d_ff); w2: (D, d_ff), b2: (D).
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM. */
LA_API la_status la_ffn_f32(const la_layer_config *c, size_t rows, const float *x, const float *w1,
                            const float *b1, const float *w2, const float *b2, float *out);
LA_API la_status la_ffn_f64(const la_layer_config *c, size_t rows, const double *x,
                            const double *w1, const double *b1, const double *w2, const double *b2,
                            double *out);

/* Multi-head attention as nn.MultiheadAttention (batch_first):
 *   Q = x_q W_Qᵀ + b_Q, K = x_kv W_Kᵀ + b_K, V = x_kv W_Vᵀ + b_V, split into H heads of
 *   D/H, attention per head with c->attention (scale 1/√(D/H) for softmax and hard),
 *   heads concatenated, out = concat · W_Oᵀ + b_O.
 *   x_q: (B, N, D), x_kv: (B, M, D) (x_kv = x_q for self-attention), out: (B, N, D);
 *   in_w: (3D, D), in_b: (3D), out_w: (D, D), out_b: (D); key_lengths NULL or (B,).
 *   c->rotary: Q and K rotated (positions 0..N−1, 0..M−1) when x_kv == x_q.
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM, or the kernel's status. */
LA_API la_status la_mha_f32(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                            const float *x_q, const float *x_kv, int causal,
                            const int64_t *key_lengths, const float *in_w, const float *in_b,
                            const float *out_w, const float *out_b, float *out);
LA_API la_status la_mha_f64(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                            const double *x_q, const double *x_kv, int causal,
                            const int64_t *key_lengths, const double *in_w, const double *in_b,
                            const double *out_w, const double *out_b, double *out);

/* The layers and stacks below return LA_ERANGE when a value leaves the element type's
 * range: a LayerNorm of a finite row, a residual sum of finite values, or a sublayer's
 * output added to a finite residual is not finite (float32 with weights, inputs or sums
 * near 3.4e38: run it in float64). The check rides on the residual adds and LayerNorms
 * the layers do anyway; the output is then unspecified.
 *
 * Encoder layer (nn.TransformerEncoderLayer): self-attention then FFN, each with its
 * residual and LayerNorm (norm1, norm2) in c->norm's arrangement.
 *   x, out: (B, N, D); key_lengths NULL or (B,). w must be an encoder layer (or a
 *   decoder layer, whose cross-attention is then unused) of c's sizes and dtype. */
LA_API la_status la_encoder_layer_f32(const la_layer_config *c, const la_layer_weights *w,
                                      size_t batch, size_t n, const float *x, int causal,
                                      const int64_t *key_lengths, float *out);
LA_API la_status la_encoder_layer_f64(const la_layer_config *c, const la_layer_weights *w,
                                      size_t batch, size_t n, const double *x, int causal,
                                      const int64_t *key_lengths, double *out);

/* Decoder layer (nn.TransformerDecoderLayer): self-attention (causal when `causal`,
 * target lengths), cross-attention over memory (never causal, memory lengths), FFN;
 * norm1, norm2, norm3 in c->norm's arrangement (pre-LN does not normalize memory).
 *   x, out: (B, N, D); memory: (B, M, D); tgt_lengths, memory_lengths NULL or (B,). */
LA_API la_status la_decoder_layer_f32(const la_layer_config *c, const la_layer_weights *w,
                                      size_t batch, size_t n, size_t m, const float *x,
                                      const float *memory, int causal, const int64_t *tgt_lengths,
                                      const int64_t *memory_lengths, float *out);
LA_API la_status la_decoder_layer_f64(const la_layer_config *c, const la_layer_weights *w,
                                      size_t batch, size_t n, size_t m, const double *x,
                                      const double *memory, int causal, const int64_t *tgt_lengths,
                                      const int64_t *memory_lengths, double *out);

/* The stacks of nn.Transformer: L encoder layers then encoder.norm; L2 decoder layers
 * (each attending to memory) then decoder.norm. la_transformer_* runs both:
 * memory = encoder(src), out = decoder(tgt, memory) with a causal target.
 *   src: (B, M, D), tgt and out: (B, N, D). */
LA_API la_status la_encoder_f32(const la_layer_config *c, const la_transformer_weights *w,
                                size_t batch, size_t n, const float *x, int causal,
                                const int64_t *key_lengths, float *out);
LA_API la_status la_encoder_f64(const la_layer_config *c, const la_transformer_weights *w,
                                size_t batch, size_t n, const double *x, int causal,
                                const int64_t *key_lengths, double *out);
LA_API la_status la_decoder_f32(const la_layer_config *c, const la_transformer_weights *w,
                                size_t batch, size_t n, size_t m, const float *x,
                                const float *memory, int causal, const int64_t *tgt_lengths,
                                const int64_t *memory_lengths, float *out);
LA_API la_status la_decoder_f64(const la_layer_config *c, const la_transformer_weights *w,
                                size_t batch, size_t n, size_t m, const double *x,
                                const double *memory, int causal, const int64_t *tgt_lengths,
                                const int64_t *memory_lengths, double *out);
LA_API la_status la_transformer_f32(const la_layer_config *c, const la_transformer_weights *w,
                                    size_t batch, size_t n_src, size_t n_tgt, const float *src,
                                    const float *tgt, const int64_t *src_lengths, float *out);
LA_API la_status la_transformer_f64(const la_layer_config *c, const la_transformer_weights *w,
                                    size_t batch, size_t n_src, size_t n_tgt, const double *src,
                                    const double *tgt, const int64_t *src_lengths, double *out);

/* Sinusoidal positional encoding added in place: x[b, pos, 2i] += sin(pos / 10000^(2i/D)),
 * x[b, pos, 2i+1] += cos(pos / 10000^(2i/D)), positions first_pos .. first_pos + N − 1.
 *   x: (B, N, D). Returns LA_OK, LA_EINVAL (NULL x, a zero size, sizes whose product
 *   overflows, first_pos + N − 1 beyond SIZE_MAX; x untouched). */
LA_API la_status la_add_positional_encoding_f32(size_t batch, size_t n, size_t d, size_t first_pos,
                                                float *x);
LA_API la_status la_add_positional_encoding_f64(size_t batch, size_t n, size_t d, size_t first_pos,
                                                double *x);

/* Token embeddings: out row t = table row tokens[t] (no scaling).
 *   table: (V, D); tokens: (count) in [0, V) (LA_EINVAL otherwise, out untouched, and
 *   for NULL, a zero V or D, count · D overflowing);
 *   out: (count, D). */
LA_API la_status la_embed_f32(size_t vocab, size_t d, const float *table, size_t count,
                              const int64_t *tokens, float *out);
LA_API la_status la_embed_f64(size_t vocab, size_t d, const double *table, size_t count,
                              const int64_t *tokens, double *out);

/* ---------------------------------------------------------------- sequence layers */

/* The two layer types Vaswani et al. ("Attention Is All You Need", Table 1) compare
 * self-attention with, for `linattn complexity`: per layer, the work, the operations
 * that must run one after another, and the longest path a signal travels between two
 * positions:
 *   self-attention              O(N²·d)     1     1
 *   recurrent                   O(N·d²)     N     N
 *   convolutional (width k)     O(k·N·d²)   1     log_k(N) (a stack of dilated layers;
 *                                                 N/k for plain ones)
 *   restricted self-attention   O(r·N·d)    1     N/r
 * LAYOUT. x and the output are (B, N, d) row-major: B sequences of N positions of d
 * features, d channels in and out. Weights are row-major (out, in) matrices applied to
 * column vectors (W x); biases (d). The output must not overlap x (the layers write it
 * while they still read x). Both allocate nothing but BLIS's packing buffers (LA_ENOMEM
 * when those cannot be had), and write nothing on error.
 * Returns LA_OK, LA_EINVAL (NULL, a zero size, an even or zero width), LA_EOVERFLOW
 * (B·N·d or the weights' elements not addressable), LA_ENOMEM. */

/* Recurrent (Elman) layer: h_t = tanh(W_h h_{t−1} + W_x x_t + b), h_{−1} = 0, run as
 * the N-step recurrence it is: W_x x_t for every t is one product over all B·N rows (it
 * needs no earlier step); then N sequential steps of one (B, d) × (d, d) product with
 * W_h each (a matrix–vector product when B = 1), then tanh.
 *   x, h: (B, N, d); w_x, w_h: (d, d); b: (d). */
LA_API la_status la_rnn_forward_f32(size_t batch, size_t n, size_t d, const float *x,
                                    const float *w_x, const float *w_h, const float *b, float *h);
LA_API la_status la_rnn_forward_f64(size_t batch, size_t n, size_t d, const double *x,
                                    const double *w_x, const double *w_h, const double *b,
                                    double *h);

/* 1-D convolution over the sequence, width k (odd), 'same' zero padding: output
 * position i sees inputs i − k/2 .. i + k/2 (those outside 0 .. N−1 are zero):
 *   y_i = Σ_{t=0}^{k−1} W_t x_{i+t−k/2} + b.
 *   x, y: (B, N, d); w: (k, d, d), W_t = w[t] a (d_out, d_in) matrix; b: (d).
 * Through BLIS as k products of (rows, d) × (d, d) over shifted row ranges, per block of
 * output rows (no im2col copy: no scratch; lib/layers/conv1d.c says why). */
LA_API la_status la_conv1d_forward_f32(size_t batch, size_t n, size_t d, size_t width,
                                       const float *x, const float *w, const float *b, float *y);
LA_API la_status la_conv1d_forward_f64(size_t batch, size_t n, size_t d, size_t width,
                                       const double *x, const double *w, const double *b,
                                       double *y);

/* The float64 oracles of the two layers: plain loops, the same arguments and statuses. */
LA_API la_status la_ref_rnn_forward(size_t batch, size_t n, size_t d, const double *x,
                                    const double *w_x, const double *w_h, const double *b,
                                    double *h);
LA_API la_status la_ref_conv1d_forward(size_t batch, size_t n, size_t d, size_t width,
                                       const double *x, const double *w, const double *b,
                                       double *y);

/* FLOPs of one call, multiply-adds counting 2, every add and tanh 1:
 *   recurrent      B·N·(4d² + 2d)   (W_x x_t and W_h h_{t−1}, 2d² each; + b; tanh)
 *   convolutional  B·N·(2k·d² + d)  (k taps of 2d², the padded ones counted; + b)
 * Returns LA_OK, or the layer's status for the same sizes (LA_EINVAL also for NULL). */
LA_API la_status la_rnn_cost(size_t batch, size_t n, size_t d, double *flops);
LA_API la_status la_conv1d_cost(size_t batch, size_t n, size_t d, size_t width, double *flops);

/* ---------------------------------------------------------------- Accounting */

/* Exact parameter counts, as PyTorch counts them (sum of numel over parameters()):
 *   multi-head attention 4D² + 4D (in_proj (3D, D) + 3D, out_proj D² + D);
 *   FFN 2·D·d_ff + d_ff + D; LayerNorm 2D;
 *   encoder layer = MHA + FFN + 2 LN (= 12D² + 13D when d_ff = 4D);
 *   decoder layer = 2 MHA + FFN + 3 LN (= 16D² + 19D when d_ff = 4D);
 *   encoder = L·encoder layer + LN (the final norm; 0 when L = 0), decoder likewise;
 *   embedding V·D (one table), learned positions P·D (0: sinusoidal, no parameters);
 *   total = encoder + decoder + embedding + positional + token_type + relative_position
 *           + embedding_norm + pooler + head.
 * The defaults (every field below learned_positions zero) are PyTorch's nn.Transformer;
 * the rest describes the published models (`linattn params --model`):
 *   token_types T        a segment table T·D (BERT: 2)
 *   relative_buckets R   T5's relative position bias: R·H in the first layer of each
 *                        stack (shared by its layers; cross-attention has none)
 *   options              LA_MODEL_* flags:
 *     NO_BIAS            projections, FFN and pooler without biases: MHA 4D², FFN 2·D·d_ff (T5)
 *     RMS_NORM           every norm holds a scale only, D (T5's RMSNorm) instead of 2D
 *     NO_FINAL_NORM      no norm after the stacks (post-LN: the original Transformer, BERT)
 *     EMBEDDING_NORM     a norm after the embeddings, one per stack (BERT)
 *     POOLER             BERT's pooler, a D×D linear layer with its bias
 *     UNTIED_HEAD        an output projection V·D of its own, without bias (0: the model
 *                        has no head, or it reuses the token table: GPT-2, T5, BERT's MLM)
 * approx_12d2 is the familiar approximation that keeps only the D² terms with
 * d_ff = 4D: 12D² per encoder layer (4D² attention + 8D² FFN) and, by the same rule,
 * 16D² per decoder layer (its cross-attention adds 4D²); approx_gap is
 * (exact − approx) / exact over the layers (encoder + decoder). */
typedef struct {
    size_t d_model, heads, d_ff;
    size_t encoder_layers, decoder_layers;
    size_t vocab;             /* 0: no embedding table */
    size_t learned_positions; /* 0: sinusoidal encoding */
    size_t token_types;       /* 0: no segment table */
    size_t relative_buckets;  /* 0: no relative position bias */
    unsigned options;         /* LA_MODEL_* flags, 0 for nn.Transformer */
} la_model_size;

enum {
    LA_MODEL_NO_BIAS = 1,
    LA_MODEL_RMS_NORM = 2,
    LA_MODEL_NO_FINAL_NORM = 4,
    LA_MODEL_EMBEDDING_NORM = 8,
    LA_MODEL_POOLER = 16,
    LA_MODEL_UNTIED_HEAD = 32,
};

typedef struct {
    uint64_t mha, ffn, layer_norm; /* layer_norm: one norm, 2D (D with RMS_NORM) */
    uint64_t encoder_layer, decoder_layer;
    uint64_t encoder, decoder, embedding, positional;
    uint64_t token_type, relative_position, embedding_norm, pooler, head;
    uint64_t total;
    uint64_t approx_12d2;
    double approx_gap;
} la_param_count;

/* Returns LA_OK, LA_EINVAL (NULL, D, H or d_ff zero, H not dividing D, an unknown
 * option bit), LA_EOVERFLOW (a count beyond 2⁶⁴ − 1). */
LA_API la_status la_param_counts(const la_model_size *s, la_param_count *out);

/* FLOPs and bytes of one encoder or decoder layer forward for B sequences of N tokens
 * (decoder: over M memory tokens; encoder: M is ignored, self-attention is N × N), with
 * c's kernel, φ, chunk. Multiply-adds count 2, every add, multiply, max, exp, erf 1:
 *   projections: Q, K, V and out, 2·rows·D·D each plus rows·D bias adds (cross-attention:
 *     Q and out over N rows, K and V over M rows);
 *   attention: la_attention_cost's flops_total per attention (self, and cross);
 *   ffn: 2·B·N·D·d_ff twice, B·N·(d_ff + D) bias adds, B·N·d_ff activations;
 *   layer_norm: (8D + 5) per row per LayerNorm (mean D + 1, variance 3D + 1, 1/√(var+ε)
 *     3, (x − mean)·r·γ + β 4D);
 *   residual: B·N·D adds per sublayer.
 * Bytes: weight_bytes the layer's parameters; activation_bytes the scratch the layer
 * allocates at its peak (its working copy of x and one sublayer output, B·N·D each,
 * plus the larger of: Q, K, V and the heads' output, B·N·D + 3·B·max(N, M)·D; the
 * FFN's hidden rows, min(B·N, 4096)·d_ff); workspace_bytes the attention kernel's
 * (la_cost, the larger of self- and cross-attention). */
typedef struct {
    double projections, attention, ffn, layer_norm, residual, total;
    la_cost self_attention;  /* the self-attention kernel's own breakdown */
    la_cost cross_attention; /* decoder layers; zero for an encoder layer */
    double weight_bytes, activation_bytes, workspace_bytes;
} la_layer_cost;

/* Returns LA_OK, LA_EINVAL (bad config, zero B, N or M, bad dtype), or what
 * la_attention_cost returns. */
LA_API la_status la_layer_cost_model(const la_layer_config *c, int decoder, size_t batch, size_t n,
                                     size_t m, int causal, la_dtype dtype, la_layer_cost *out);

#ifdef __cplusplus
}
#endif
#endif /* LINATTN_H */
