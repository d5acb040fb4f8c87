/* linattn.h — softmax and kernelized linear attention, with float64 references.
 *
 * linattn compares softmax attention, softmax(Q Kᵀ · scale) V, with the kernelized linear
 * attention of Katharopoulos et al. (2020), y_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + ε), S = Σ_j
 * φ(k_j) v_jᵀ, z = Σ_j φ(k_j), and the approximations between them (Linformer, local,
 * FAVOR+, score functions, relative and rotary positions), one registry row each.
 * SHAPES. Per head Q is (N, d_k), K (M, d_k), V (M, d_v), the output (N, d_v). A call
 * covers B × H heads: q (B, H, N, d_k), k (B, H, M, d_k), v (B, H, M, d_v), out
 * (B, H, N, d_v), row-major and back to back unless the problem's strides say otherwise.
 * ELEMENT TYPES. Arrays are float32 or float64, named by an la_dtype argument and passed
 * as void pointers; every kernel runs in both (float32 is the fast path). The la_ref_*
 * functions are separate float64 oracles written as plain loops.
 * MEMORY. Functions allocate their own scratch, hold it against p->workspace_limit
 * (LA_EBUDGET above it) and return LA_ENOMEM when they cannot have it. The caller owns
 * every pointer it passes; nothing keeps one past its return but la_array and
 * la_linear_state objects.
 * ERRORS. Every function that can fail returns an la_status (la_strerror); on error
 * nothing has been written to the outputs, nothing leaks, nothing is printed or aborts.
 * THREADS. OpenMP over (batch, head, block) in the same pieces on any thread count, so the
 * same input gives bitwise the same output; calls on different data may run concurrently. */
/* INDEX — every function, in the order of the sections below.
 *   statuses, threads, machine: la_strerror; la_set_num_threads, la_get_num_threads,
 *     la_num_threads_requested; la_config (version, BLIS, SIMD path); la_fma_peak_gflops;
 *     la_memory_bandwidth_gbs
 *   problems: la_feature_map_name, la_feature_map_parse; la_problem_init, la_problem_check
 *   attention (any registry row, float32 or float64): la_attention (the forward),
 *     la_attention_lse (and each row's log-sum-exp), la_attention_backward (d_q, d_k, d_v
 *     from d_out), la_attention_weights (the N×M matrix); float64 oracles la_ref_attention,
 *     la_ref_attention_backward, la_ref_feature_map; la_kernel_draw (a kernel's tensors
 *     drawn from a seed); la_rotary_apply, la_linear_attention_rotary (rotary positions)
 *   step API (causal linear attention and FAVOR+, one token at a time): la_linear_step;
 *     la_linear_state_create, _free, _reset, _position, _save_size, _save, _restore
 *   cost model: la_visible_pairs, la_attention_cost, la_attention_backward_cost
 *   kernel registry: la_kernel_get (a row: what it takes, its functions), la_kernel_name,
 *     la_kernel_parse
 *   .npy files: la_npy_read, la_npy_parse, la_npy_write, la_array_free, la_npy_dtype_size,
 *     la_array_to_f32 (float16 / bfloat16 widened to float32)
 *   Transformer layers (PyTorch's layout and semantics): la_layer_config_init, _check;
 *     la_layer_tensor_key, _shape (a weight's state_dict key and shape); weights of a layer
 *     la_layer_weights_init, _load, _free, of a stack la_transformer_weights_init, _load,
 *     _free; sublayers la_layer_norm, la_ffn, la_mha; layers la_encoder_layer,
 *     la_decoder_layer; stacks la_encoder, la_decoder, la_transformer; positions and
 *     tokens la_add_positional_encoding, la_embed
 *   sequence layers: la_rnn_forward, la_conv1d_forward, la_rnn_cost, la_conv1d_cost
 *   accounting: la_param_counts (exact parameter counts), la_layer_cost_model (FLOPs and
 *     bytes of one layer forward)
 */
#ifndef LINATTN_H
#define LINATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LA_VERSION_STRING "0.1.0"

/* The public API: the only symbols liblinattn.so exports (scripts/check-exports). */
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

/* A static message for a status; never NULL ("unknown status" outside the list). */
LA_API const char *la_strerror(la_status status);

/* ---------------------------------------------------------------- threads, machine */
typedef enum { LA_FLOAT32 = 0, LA_FLOAT64 = 1 } la_dtype;

/* Threads of every kernel, one rule everywhere (this call, LA_NUM_THREADS, --threads): a
 * count in 1..LA_MAX_THREADS is accepted, anything else refused; a count above the online
 * cores runs on the cores (outputs are bitwise the same on any count). get gives the
 * count run on, requested the count asked for; set(0) restores the default
 * (LA_NUM_THREADS, else OpenMP's). LA_EINVAL for n out of range, and for 0 with
 * LA_NUM_THREADS set but not in range (the setting then stays). */
#define LA_MAX_THREADS 1024
LA_API la_status la_set_num_threads(int n);
LA_API int la_get_num_threads(void);
LA_API int la_num_threads_requested(void);
/* What was built and runs (static strings): version, BLIS release, BLIS kernels ("zen3";
 * "skx (chosen by linattn)" where BLIS did not know the CPU; LA_BLIS_CONFIG=native|haswell|skx
 * forces), SIMD path ("avx512, tile 8x32 (…), fused softmax 32 queries (…)": own tiles chosen
 * by CPU or timed, forced by LA_TILE and LA_FUSED_QUERIES; "portable (LA_SIMD=off|no AVX-512)"). */
typedef struct {
    const char *version, *blis_version, *blis_config, *simd;
} la_config_info;
LA_API la_config_info la_config(void);
/* The FMA peak of `threads` threads in GFLOP/s for dtype: best of three runs of 12
 * chains of register FMAs, the rate no kernel can pass. NAN for threads or dtype out of
 * range and without AVX-512. Call outside a parallel region. */
LA_API double la_fma_peak_gflops(la_dtype dtype, int threads);
/* The memory bandwidth of `threads` threads in GB/s, best of five passes over max(4 × L3,
 * 64 MiB) (lib/cpu/bandwidth.c): READ sums one float64 array; TRIAD is STREAM's a = b +
 * s·c at 24 bytes per element. Results checked (LA_EIO when wrong). Call outside a
 * parallel region. LA_EINVAL (NULL, kind or threads out of range), LA_ENOMEM, LA_EIO. */
typedef enum {
    LA_BANDWIDTH_READ = 0,
    LA_BANDWIDTH_TRIAD = 1,
    LA_BANDWIDTH_COUNT
} la_bandwidth_kind;
LA_API la_status la_memory_bandwidth_gbs(la_bandwidth_kind kind, int threads, double *gbs);

/* ---------------------------------------------------------------- problems */
typedef enum {
    LA_FEATURE_ELU1 = 0, /* φ(x) = elu(x) + 1, computed as x + 1 (x >= 0), exp(x) (x < 0) */
    LA_FEATURE_RELU = 1, /* φ(x) = max(x, 0) */
    LA_FEATURE_COUNT     /* the number of feature maps: valid values are [0, LA_FEATURE_COUNT) */
} la_feature_map;

/* Name ("elu", "relu"; parse also takes "elu+1") <-> enum: "unknown", LA_EINVAL. */
LA_API const char *la_feature_map_name(la_feature_map fm);
LA_API la_status la_feature_map_parse(const char *name, la_feature_map *out);
/* Where the causal diagonal sits when N != M: top-left (the default, PyTorch's is_causal),
 * query i sees key j <= i; bottom-right (FlashAttention >= 2.1's), j <= i + (M − N): N new
 * tokens over M cached keys, as decoding needs (for N > M the first N − M queries see no
 * key). With N = M the two are the same mask. */
typedef enum { LA_CAUSAL_TOP_LEFT = 0, LA_CAUSAL_BOTTOM_RIGHT = 1 } la_causal_align;

/* Where q, k, v or out lie, in elements: row r of head (b, h) at b·batch + h·head +
 * r·row; all zero (la_problem_init's) is contiguous (B, H, rows, d). A KV cache (B, H, T,
 * d) holding M <= T keys: {H·T·d, T·d, d}; PyTorch's (B, N, H, d): {N·H·d, d, H·d}.
 * la_problem_check refuses layouts where two elements share an address (LA_EINVAL) or
 * offsets beyond size_t (LA_EOVERFLOW). la_attention* copy strided arrays into scratch
 * (held against workspace_limit) and outputs back, bitwise the contiguous call, unless the
 * kernel reads them in place (LA_KERNEL_SOFTMAX's forward and lse read every layout). The
 * references and la_linear_attention_rotary refuse strides; the cost model ignores them. */
typedef struct {
    size_t batch, head, row;
} la_strides;

#define LA_DEFAULT_EPS 1e-6 /* as in fast-transformers */
#define LA_DEFAULT_CHUNK 32 /* causal linear: 32 beat 64 by about 10% here (linattn bench) */
#define LA_DEFAULT_WORKSPACE_LIMIT ((size_t)4 << 30) /* 4 GiB */
#define LA_DEFAULT_WINDOW 64                         /* local softmax: r */
#define LA_DEFAULT_PROJ_RANK 256   /* Linformer: k (Wang et al. 2020's main setting) */
#define LA_DEFAULT_FEATURES 256    /* FAVOR+: m */
#define LA_DEFAULT_SCORE_DIM 64    /* additive scores: d_a */
#define LA_DEFAULT_MAX_DISTANCE 16 /* relative: K (Shaw et al. 2018 found K >= 2 enough) */

/* A variant's own parameters sit in its block, one kind per block; a row reads the kinds
 * its .params bits name. p->params chains the blocks given (through head.next, NULL ends);
 * a kind not in the chain takes its LA_*_PARAMS_INIT defaults. la_problem_check refuses
 * (LA_EINVAL) an unknown kind, a kind given twice, a size of 0 and one tensor of a pair.
 * Tensors: float64 in either precision, row-major, shared by all B·H heads, the caller's;
 * NULL: drawn from the seed on every call (la_kernel_draw draws them once, to keep). */
typedef enum {
    LA_PARAMS_NONE = 0,  /* no block (la_kernel_info.block) */
    LA_PARAMS_LOCAL = 1, /* la_local_params (LA_PARAM_WINDOW) */
    LA_PARAMS_LINFORMER, /* la_linformer_params (LA_PARAM_PROJ) */
    LA_PARAMS_FAVOR,     /* la_favor_params (LA_PARAM_FEATURES) */
    LA_PARAMS_SCORE,     /* la_score_params (LA_PARAM_SCORE_WEIGHTS, _SCORE_DIM) */
    LA_PARAMS_RELATIVE,  /* la_relative_params (LA_PARAM_RELATIVE) */
    LA_PARAMS_END        /* kinds are [1, LA_PARAMS_END) */
} la_params_kind;
typedef struct la_params {
    la_params_kind kind;
    const struct la_params *next;
} la_params;
typedef struct {
    la_params head;
    size_t window; /* local: query i sees keys |i − j| <= window (causal: j <= i) */
} la_local_params;
typedef struct {
    la_params head;
    size_t proj_rank;     /* Linformer: k, the rows keys and values are projected to */
    const double *proj_e; /* E and F, (proj_rank, n_keys) each, given together */
    const double *proj_f; /*   or both NULL */
    uint64_t seed;
} la_linformer_params;
typedef struct {
    la_params head;
    size_t features; /* FAVOR+: m, the random features per head */
    uint64_t seed;
    const double *proj_w; /* W (features, d_k), or NULL */
} la_favor_params;
typedef struct {
    la_params head;
    size_t score_dim;      /* additive: d_a, the rows of W and the entries of v */
    const double *score_w; /* general: W (d_k, d_k); additive: W = [W_q W_k] (d_a, 2·d_k) */
    const double *score_v; /* additive: v (d_a); given with score_w, or both NULL */
    uint64_t seed;
} la_score_params;
typedef struct {
    la_params head;
    size_t max_distance; /* Shaw et al.'s clip distance K */
    const double *rel_k; /* a^K (2K+1, d_k) and a^V (2K+1, d_v), row K + δ for */
    const double *rel_v; /*   δ = clip(j − i, −K, K); given together or both NULL */
    uint64_t seed;
} la_relative_params;
/* clang-format off */
#define LA_LOCAL_PARAMS_INIT {{LA_PARAMS_LOCAL, NULL}, LA_DEFAULT_WINDOW}
#define LA_LINFORMER_PARAMS_INIT {{LA_PARAMS_LINFORMER, NULL}, LA_DEFAULT_PROJ_RANK, NULL, NULL, 0}
#define LA_FAVOR_PARAMS_INIT {{LA_PARAMS_FAVOR, NULL}, LA_DEFAULT_FEATURES, 0, NULL}
#define LA_SCORE_PARAMS_INIT {{LA_PARAMS_SCORE, NULL}, LA_DEFAULT_SCORE_DIM, NULL, NULL, 0}
#define LA_RELATIVE_PARAMS_INIT {{LA_PARAMS_RELATIVE, NULL}, LA_DEFAULT_MAX_DISTANCE, NULL, NULL, 0}
/* clang-format on */

typedef struct {
    size_t batch, heads;        /* B, H (>= 1) */
    size_t n_queries, n_keys;   /* N, M (>= 1) */
    size_t d_k, d_v;            /* head sizes (>= 1) */
    int causal;                 /* 0 or 1: query i sees key j only when j <= i */
    const int64_t *key_lengths; /* NULL, or (B,) in [0, M]: keys j >= key_lengths[b] hidden */
    double scale;               /* softmax and hard attention: logits = q·k · scale; finite */
    la_feature_map feature_map; /* linear attention */
    double eps;                 /* linear attention: y = num / (den + eps); finite, >= 0 */
    size_t chunk;               /* causal linear attention, chunked form: tokens per chunk (>= 1) */
    size_t workspace_limit;     /* bytes of scratch a kernel may hold; above it: LA_EBUDGET */
    const la_params *params;    /* the variants' parameter blocks (above), chained; NULL:
                                   every block's defaults */
    /* Masks beyond causal and key lengths: */
    la_causal_align causal_align; /* with causal and N != M: top-left or bottom-right */
    const uint8_t *mask;          /* NULL, or (N, M), nonzero = hidden (PyTorch's boolean
                                     attn_mask): mask[i·M + j] hides key j from query i in
                                     every head, or with mask_per_head (B·H, N, M) */
    int mask_per_head;            /* 0 or 1 (1 needs a mask) */
    const uint8_t *key_mask;      /* NULL, or (B, M), nonzero = hidden: key j of batch entry
                                     b from every query (PyTorch's key_padding_mask) */
    la_strides stride_q, stride_k, stride_v, stride_out; /* all zero: contiguous */
} la_problem;

/* Fills every field: the sizes given, scale = 1/sqrt(d_k), φ = elu+1, eps, chunk and
 * workspace_limit's defaults, no mask, no parameter block, contiguous strides. */
LA_API void la_problem_init(la_problem *p, size_t batch, size_t heads, size_t n_queries,
                            size_t n_keys, size_t d_k, size_t d_v);
/* LA_OK when every field is in range and every array fits in size_t; LA_EINVAL or
 * LA_EOVERFLOW otherwise. Every entry point calls it first. */
LA_API la_status la_problem_check(const la_problem *p);

/* ---------------------------------------------------------------- attention */
/* The kernels, X(id, row) in registry order; a row (la_kernel_get) lives in its kernel file. */
#define LA_KERNEL_LIST(X)                                                                          \
    X(LA_KERNEL_SOFTMAX, la_row_softmax) /* fused online softmax, never the N×M scores */         \
    X(LA_KERNEL_SOFTMAX_MATERIALIZED, la_row_softmax_materialized) /* N×M scores */               \
    X(LA_KERNEL_HARD, la_row_hard)                                 /* argmax attention */          \
    X(LA_KERNEL_LINEAR, la_row_linear)                     /* linear: non-causal, or chunked */    \
    X(LA_KERNEL_LINEAR_RECURRENT, la_row_linear_recurrent) /* linear, token by token */            \
    X(LA_KERNEL_LINFORMER, la_row_linformer) /* keys, values projected to proj_rank rows */        \
    X(LA_KERNEL_LOCAL, la_row_local)         /* softmax over the keys within window */             \
    X(LA_KERNEL_FAVOR, la_row_favor)         /* FAVOR+: linear on positive random features */      \
    X(LA_KERNEL_FAVOR_RECURRENT, la_row_favor_recurrent) /* FAVOR+, token by token */              \
    X(LA_KERNEL_GENERAL, la_row_general)                 /* softmax over q·W·k */                \
    X(LA_KERNEL_ADDITIVE, la_row_additive) /* softmax over vᵀtanh(W_q q + W_k k) */              \
    X(LA_KERNEL_COSINE, la_row_cosine)     /* softmax over cos(q, k) · scale */                   \
    X(LA_KERNEL_RELATIVE, la_row_relative) /* softmax with relative positions (Shaw et al.) */     \
    X(LA_KERNEL_TAYLOR, la_row_taylor)     /* linear on Taylor features (Based) */
typedef enum {
#define LA_KERNEL_ENUM(id, row) id,
    LA_KERNEL_LIST(LA_KERNEL_ENUM)
#undef LA_KERNEL_ENUM
        LA_KERNEL_COUNT
} la_kernel;

/* The contract every kernel keeps (lib/attention/kernels.h has each kernel's own):
 *   Masks. A key is visible to a query when every mask given lets it: causal, key
 *     lengths, p->mask, p->key_mask. A kernel refuses a mask it cannot honor (LA_EINVAL):
 *     its row's causal rule and LA_MASK_* bits say which.
 *   The empty row. A query that sees no key gets an output row of zeros in every kernel
 *     and reference (linear attention also for a zero denominator, possible at eps = 0).
 *   Range. The output is finite and within its precision's rounding of the float64
 *     reference, or the call refuses with LA_ERANGE, never inf or NaN from finite inputs:
 *     max|q|, |k|, |v| (the keys some query sees) bound every score, sum and state by the
 *     type's largest value / 8 (float32 refuses q = k = ±1e20 in softmax: use float64).
 *   Statuses. LA_OK, LA_EINVAL (NULL, a bad problem, a mask or causal flag the kernel
 *     refuses, a dtype outside la_dtype), LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE.
 *   Arrays. q, k, v, out and their gradients are dtype's, laid out as p's strides say (d_q
 *     as q); lse and the attention matrix contiguous; outputs must not overlap inputs. */

/* out = attention of `kernel` on q, k, v: the registry row's forward for dtype. */
LA_API la_status la_attention(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                              const void *k, const void *v, void *out);
/* The same, also writing lse (B, H, N), lse_i = ln Σ_j exp(s_ij) over the keys query i
 * sees (-INFINITY for none), for the backward; out bitwise la_attention's. LA_EINVAL for
 * lse NULL and a row without LA_CAP_LSE. */
LA_API la_status la_attention_lse(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                  const void *q, const void *k, const void *v, void *out,
                                  void *lse);
/* Gradients through one forward call, for a loss L with d_out = ∂L/∂out given: out is
 * the forward's output on the same inputs; lse la_attention_lse's (then not recomputed)
 * or NULL, which every row without LA_CAP_LSE requires; d_q, d_k, d_v are written whole.
 * A query that sees no key contributes nothing; a key no query sees gets zero d_k, d_v.
 * The range rule adds bounds on d_out and out (kernels.h). LA_EINVAL also without a
 * backward. */
LA_API la_status la_attention_backward(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                       const void *q, const void *k, const void *v, const void *out,
                                       const void *lse, const void *d_out, void *d_q, void *d_k,
                                       void *d_v);
/* The attention matrix A, out = A·V, for the rows with LA_CAP_WEIGHTS (else LA_EINVAL):
 * out (B, H, N, M), contiguous, not held against workspace_limit; v is not read. Hidden
 * entries are exactly 0, the empty row a zero row (each row's form: kernels.h). */
LA_API la_status la_attention_weights(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                      const void *q, const void *k, void *out);
/* The row's float64 oracles, plain loops that materialize everything; contiguous arrays
 * only (LA_EINVAL for strides); they ignore workspace_limit and never return LA_ERANGE. */
LA_API la_status la_ref_attention(la_kernel kernel, const la_problem *p, const double *q,
                                  const double *k, const double *v, double *out);
LA_API la_status la_ref_attention_backward(la_kernel kernel, const la_problem *p, const double *q,
                                           const double *k, const double *v, const double *out,
                                           const double *d_out, double *d_q, double *d_k,
                                           double *d_v);
/* φ applied element-wise, float64 reference form (out may equal x). */
LA_API void la_ref_feature_map(la_feature_map fm, const double *x, double *out, size_t n);
/* The tensors a kernel draws from its block's seed when the block gives none (float64):
 *   LA_KERNEL_LINFORMER   E and F, (proj_rank, n_keys) each
 *   LA_KERNEL_FAVOR, _FAVOR_RECURRENT W (features, d_k); LA_KERNEL_GENERAL W (d_k, d_k)
 *   LA_KERNEL_ADDITIVE    W (score_dim, 2·d_k) and v (score_dim)
 *   LA_KERNEL_RELATIVE    a^K (2K+1, d_k) and a^V (2K+1, d_v), K = max_distance
 * LA_EINVAL (another kernel, NULL p or first, second NULL iff one is drawn, first ==
 * second, a size 0), LA_EOVERFLOW; nothing written on error. */
LA_API la_status la_kernel_draw(la_kernel kernel, const la_problem *p, double *first,
                                double *second);
/* Rotary positions (RoPE, Su et al. 2021): channels (2c, 2c+1) of a row at position t
 * rotated by t·θ_c, θ_c = LA_ROTARY_BASE^(−2c/d), so (R_t q)·(R_s k) = qᵀ R_{s−t} k. x:
 * (rows, n, d), d even, in place; token i at first_pos + i. Rows with LA_CAP_ROTARY take
 * q and k so rotated. LA_EINVAL (NULL, a size 0, d odd, bad dtype), LA_EOVERFLOW. */
#define LA_ROTARY_BASE 10000.0
LA_API la_status la_rotary_apply(la_dtype dtype, size_t rows, size_t n, size_t d, size_t first_pos,
                                 void *x);
/* Linear attention with rotary positions as RoFormer does it, on the features in the
 * numerator only: y_i = Σ_j (R_{t_i} φ(q_i))ᵀ (R_{s_j} φ(k_j)) v_j / (Σ_j φ(q_i)ᵀ φ(k_j) +
 * eps), t_i = q_first_pos + i, s_j = k_first_pos + j. d_k even; no general masks or
 * strides. Statuses as la_attention's. */
LA_API la_status la_linear_attention_rotary(const la_problem *p, la_dtype dtype, size_t q_first_pos,
                                            size_t k_first_pos, const void *q, const void *k,
                                            const void *v, void *out);

/* ---------------------------------------------------------------- step API */
/* Causal attention one token at a time, for a row with LA_CAP_STEP: per head a state S
 * (F, d_v), z (F), zero after create and reset. create reads p->batch · p->heads heads,
 *   d_k, d_v, eps and φ (linear rows: F = d_k, the recurrent kernel's outputs bit for
 *   bit) or its la_favor_params (FAVOR+: its stabilized features, the recurrent
 *   kernel's outputs to rounding); LA_EINVAL (NULL, another row, a bad dtype, size, φ
 *   or eps), LA_EOVERFLOW, LA_ENOMEM, *st untouched on error.
 * la_linear_step: q_t, k_t (heads, d_k), v_t, y_t (heads, d_v) in the state's dtype;
 *   S += φ(k_t) v_tᵀ, z += φ(k_t), y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps). LA_EINVAL (NULL),
 *   LA_ERANGE (the range rule per token: reset, or use float64); state, y_t untouched.
 *   One thread steps a state at a time.
 * save_size bytes hold the state in this machine's byte order; restore takes exactly
 *   that from a state of the same kind, dtype, sizes and parameters (else LA_EINVAL). */
typedef struct la_linear_state la_linear_state;
LA_API la_status la_linear_state_create(la_linear_state **st, la_kernel kernel, const la_problem *p,
                                        la_dtype dtype);
LA_API void la_linear_state_free(la_linear_state *st);  /* NULL is fine */
LA_API void la_linear_state_reset(la_linear_state *st); /* back to zero, position 0; NULL fine */
LA_API size_t la_linear_state_position(const la_linear_state *st); /* 0 for NULL */
LA_API la_status la_linear_step(la_linear_state *st, const void *q_t, const void *k_t,
                                const void *v_t, void *y_t);
LA_API size_t la_linear_state_save_size(const la_linear_state *st); /* 0 for NULL */
LA_API la_status la_linear_state_save(const la_linear_state *st, void *buf, size_t size);
LA_API la_status la_linear_state_restore(la_linear_state *st, const void *buf, size_t size);

/* ---------------------------------------------------------------- cost model */
/* FLOPs and bytes of one call, the one model the benchmarks use: totals over B × H heads
 * of each kernel's arithmetic on the pairs the masks leave visible; a multiply-add 2, an
 * add, multiply, divide, compare, max or exp 1, φ 1 per element; not the scale multiply,
 * online rescaling or index arithmetic. Per-kernel definitions: lib/attention/kernels.h;
 * tests/attention/test_cost.c holds them to the FLOPs the kernels count as they run. */
typedef struct {
    double flops_qk;        /* scores Q·Kᵀ (chunked linear: the intra-chunk φQ·φKᵀ) */
    double flops_softmax;   /* max, exp, sums, divides (hard: the argmax compares) */
    double flops_av;        /* P·V (chunked linear: the intra-chunk A·V) */
    double flops_phi;       /* φ on queries and keys */
    double flops_kv;        /* key-side state or projections (S += φ(k)vᵀ, E·K, K·W) */
    double flops_qs;        /* query-side state products (φ(q)·S, φ(q)·z) */
    double flops_normalize; /* denominators and divides of linear attention */
    double flops_total;     /* the sum of the above */
    double workspace_bytes; /* the kernel's scratch at the current thread count (not the
                               copies of strided arrays) */
    double io_bytes;        /* every input read and output written once */
    double bytes_min;       /* io_bytes (forward: k, v of the keys seen) plus what the algorithm
                               holds beyond cache (scores, S, z): `linattn roofline`'s divisor */
} la_cost;

/* Visible (query, key) pairs of one head of batch entry b under causal (either
 * alignment) and key lengths; not the general masks (la_attention_cost counts their
 * hidden pairs as visible; the kernels skip only key blocks a mask hides whole). */
LA_API double la_visible_pairs(const la_problem *p, size_t b);
/* Fills *out for one call of `kernel` on p in dtype. Returns LA_OK, LA_EINVAL (NULL, bad
 * kernel or dtype, a causal flag the row refuses), or what la_problem_check returns. */
LA_API la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                   la_cost *out);
/* The same for one backward call; LA_EINVAL also for a kernel without a backward. */
LA_API la_status la_attention_backward_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                            la_cost *out);

/* ---------------------------------------------------------------- the kernel registry */
/* One row per kernel, defined in its kernel file and listed in LA_KERNEL_LIST: all the
 * command, sweeps, cost model, plots and tests know of it. A new kernel is its file (its
 * functions and row), its reference and its tests. */
typedef enum {
    LA_CAUSAL_ALLOWED = 0,  /* p->causal 0 or 1 */
    LA_CAUSAL_REQUIRED = 1, /* p->causal must be 1 */
    LA_CAUSAL_REFUSED = 2,  /* p->causal must be 0 */
} la_causal_rule;

/* The la_problem fields and parameter blocks a kernel reads beyond the sizes and masks. */
enum {
    LA_PARAM_SCALE = 1u << 0,         /* scale */
    LA_PARAM_FEATURE_MAP = 1u << 1,   /* feature_map */
    LA_PARAM_EPS = 1u << 2,           /* eps */
    LA_PARAM_CHUNK = 1u << 3,         /* chunk, when causal */
    LA_PARAM_WINDOW = 1u << 4,        /* la_local_params */
    LA_PARAM_PROJ = 1u << 5,          /* la_linformer_params */
    LA_PARAM_FEATURES = 1u << 6,      /* la_favor_params */
    LA_PARAM_SCORE_WEIGHTS = 1u << 7, /* la_score_params: score_w, seed (general, additive) */
    LA_PARAM_SCORE_DIM = 1u << 8,     /* ... score_dim, score_v (additive) */
    LA_PARAM_RELATIVE = 1u << 9,      /* la_relative_params */
};

/* The general masks a kernel honours (la_kernel_info.masks); given one it lacks: LA_EINVAL.
 * Causal masking and key lengths are every kernel's. */
enum {
    LA_MASK_GENERAL = 1u << 0, /* p->mask: any (query, key) pair hidden */
    LA_MASK_KEY = 1u << 1,     /* p->key_mask: keys hidden from every query */
};

/* What a kernel offers beside its forward (la_kernel_info.caps). */
enum {
    LA_CAP_LSE = 1u << 0,    /* each row's log-sum-exp beside the output, for its backward */
    LA_CAP_STEP = 1u << 1,   /* runs causal token by token on a state (la_linear_state_create) */
    LA_CAP_ROTARY = 1u << 2, /* takes rotary positions: q and k rotated before it runs */
    LA_CAP_ROTARY_FEATURES = 1u << 3, /* ... rotated inside it instead, on φ(q) and φ(k) in
                                         the numerator only (RoFormer's linear form) */
    LA_CAP_POSITIONS = 1u << 4,       /* encodes positions itself (relative) */
    LA_CAP_APPROXIMATES = 1u << 5,    /* approximates softmax attention at the same scale:
                                         measured against it by approx and accuracy */
    LA_CAP_BACKWARD = 1u << 6,        /* has a backward (la_attention_backward) */
    LA_CAP_WEIGHTS = 1u << 7,         /* gives its attention matrix (la_attention_weights) */
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
    const char *series[2]; /* its names in result files, plain and causal ("linear",
                              "linear_causal_chunked"); NULL where the causal rule forbids */
    la_causal_rule causal;
    unsigned params;      /* LA_PARAM_* bits: the la_problem fields it reads */
    la_params_kind block; /* the parameter block it reads */
    unsigned masks;       /* LA_MASK_* bits: the general masks it honours */
    unsigned caps;        /* LA_CAP_* bits */
    unsigned sweep;       /* LA_SWEEP_* bits: its series in the default sweeps */
    double time_exponent; /* e in time ∝ N^e (self-attention, N = M, fixed d and budget) */
    const char *family;   /* its kind, grouping figures and tables: "softmax" (exact), "linear",
                             "sparse", "low-rank", "random-feature", "score", "position" */
    const struct la_kernel_fns *fns; /* its per-dtype entry points, internal
                                        (lib/attention/row.h): call the generic functions */
} la_kernel_info;

/* The row of a kernel; NULL outside [0, LA_KERNEL_COUNT). Rows live for the program. */
LA_API const la_kernel_info *la_kernel_get(la_kernel kernel);
/* The row's name ("unknown" outside the registry). */
LA_API const char *la_kernel_name(la_kernel kernel);
/* Name -> kernel; '-' is read as '_' ("softmax-materialized"). LA_EINVAL if unknown. */
LA_API la_status la_kernel_parse(const char *name, la_kernel *out);

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

/* Half precision: float16 and bfloat16 are read and widened exactly to float32
 * (la_array_to_f32). NumPy has no bfloat16: ml_dtypes' bfloat16 is saved as '<V2' (two
 * raw bytes), so every 2-byte void descr is read as bfloat16 bits, and LA_NPY_BF16 is
 * written as '<V2' (.view(ml_dtypes.bfloat16) reads it back). */
typedef struct {
    la_npy_dtype dtype;
    int ndim; /* 0 .. LA_NPY_MAX_DIMS */
    size_t shape[LA_NPY_MAX_DIMS];
    size_t count; /* product of shape (1 for ndim 0) */
    void *data;   /* count elements of dtype */
} la_array;

/* Bytes per element: 1, 2, 4 or 8 (0 for a value outside the enum). */
LA_API size_t la_npy_dtype_size(la_npy_dtype dtype);
/* Parses a whole .npy image (format 1.0, 2.0 or 3.0): a descr of the enum (little-endian,
 * '<', '=' or '|'), fortran_order False, up to LA_NPY_MAX_DIMS dimensions, and exactly
 * shape × item size data bytes; reads only inside [bytes, bytes + size). out->data is
 * never NULL on success. LA_EINVAL (NULL bytes or out), LA_EFORMAT (bad magic, version or
 * header, truncated, Fortran order, a size mismatch), LA_EDTYPE (another dtype,
 * big-endian), LA_EOVERFLOW, LA_ENOMEM; *out left empty, and *why (when why is not NULL)
 * a one-line reason ("truncated header"), static or per-thread storage valid until the
 * thread's next la_npy_parse or la_npy_read. */
LA_API la_status la_npy_parse(const void *bytes, size_t size, la_array *out, const char **why);
/* la_npy_parse of a file's contents; LA_EIO when it cannot be read (*why: "no such
 * file", "permission denied", "is a directory", ...), LA_EINVAL for a NULL path or out. */
LA_API la_status la_npy_read(const char *path, la_array *out, const char **why);
/* Writes atomically (version 1.0, 2.0 when the header needs it, padded as NumPy pads):
 * an unnamed file in the same folder, written, fsync'ed, then renamed over path (mode
 * 0644, or the replaced file's); a symbolic link is written through, a non-regular file
 * refused. On error no file appears at path (one already there is left as it was) and
 * errno tells why. LA_EINVAL (NULL or empty path, an inconsistent array), LA_EIO. */
LA_API la_status la_npy_write(const char *path, const la_array *a);
LA_API void la_array_free(la_array *a); /* releases data, empties a; safe on an empty a */
/* Widens a float16 or bfloat16 array to float32 in place, exactly (subnormals, ±0, ±inf;
 * a NaN stays a NaN of its sign): a->data becomes a new buffer the array owns, a->dtype
 * LA_NPY_F32; a float32 array is left as it is. LA_EINVAL (NULL a, another dtype, NULL
 * data with count > 0), LA_EOVERFLOW, LA_ENOMEM; *a unchanged on error. */
LA_API la_status la_array_to_f32(la_array *a);

/* ---------------------------------------------------------------- Transformer layers */
/* nn.Transformer's layers (batch_first, no dropout) over the kernels above. Activations
 * (B, N, D) row-major; a Linear layer holds W (out, in) and b (out), y = x Wᵀ + b;
 * in_proj_weight packs W_Q, W_K, W_V as (3D, D); head h is columns [h·D/H, (h+1)·D/H).
 * `causal`: query i sees keys j <= i; key lengths (NULL or (B,)) hide keys j >= L_b
 * (key_padding_mask); a query that sees no key gets zeros (PyTorch: NaN). Scratch lives
 * within the call (la_layer_cost_model gives it); out may equal x (not memory) and is
 * untouched on error. */
typedef enum { LA_NORM_POST = 0, LA_NORM_PRE = 1 } la_norm_order;
typedef enum { LA_ACTIVATION_RELU = 0, LA_ACTIVATION_GELU = 1 } la_activation;

/* What a layer computes. Post-LN: x = LN(x + Sublayer(x)) (PyTorch's default); pre-LN:
 * x = x + Sublayer(LN(x)) (norm_first=True). GELU is the exact one (PyTorch's "gelu"). */
typedef struct {
    size_t d_model, heads, d_ff; /* D, H (dividing D), FFN inner size (all >= 1) */
    la_kernel attention;         /* the kernel of every attention in the layer, but: */
    la_kernel cross_attention;   /* a decoder's cross-attention (LA_KERNEL_COUNT: attention) */
    la_norm_order norm;
    la_activation activation;
    double norm_eps;            /* LayerNorm ε, finite and > 0 */
    la_feature_map feature_map; /* linear attention: φ */
    double linear_eps;          /* linear attention: y = num / (den + eps) */
    size_t chunk;               /* causal linear attention: tokens per chunk */
    size_t workspace_limit;     /* handed to the kernels (la_problem.workspace_limit) */
    /* rotary: 1 rotates each head's queries and keys in self-attention after the
     * projections (positions 0..N−1; d_h = D/H even; with LA_KERNEL_LINEAR RoFormer's
     * form, la_linear_attention_rotary; not with FAVOR+; not counted by the cost model).
     * params: the attention's parameter blocks (la_problem.params), d_k = d_v = D/H. */
    int rotary;
    const la_params *params;
} la_layer_config;

#define LA_DEFAULT_NORM_EPS 1e-5

/* Fills every field: the sizes given, softmax attention (fused) everywhere, post-LN,
 * ReLU, norm_eps LA_DEFAULT_NORM_EPS, φ = elu+1, the problem's defaults for linear_eps,
 * chunk and workspace_limit, no rotary, no parameter blocks. */
LA_API void la_layer_config_init(la_layer_config *c, size_t d_model, size_t heads, size_t d_ff);
/* LA_OK, or LA_EINVAL for a zero size, H not dividing D, an unknown enum, a bad ε or
 * chunk, LA_KERNEL_LINEAR_RECURRENT (LA_KERNEL_LINEAR's causal form is the chunked one),
 * rotary not 0 or 1 or with D/H odd or FAVOR+, a block la_problem_check refuses. */
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
/* Shape of tensor t for D and d_ff: *ndim 1 or 2; its elements, 0 for a tensor the layer
 * lacks (the decoder's in an encoder layer). */
LA_API size_t la_layer_tensor_shape(la_layer_tensor t, size_t d_model, size_t d_ff, int decoder,
                                    size_t shape[2], int *ndim);
/* One layer's weights: tensor[t] points into storage (dtype), NULL where the layer lacks t. */
typedef struct {
    la_dtype dtype;
    size_t d_model, d_ff;
    int decoder;     /* 0 encoder layer, 1 decoder layer */
    size_t n_params; /* elements held: la_param_counts' encoder/decoder_layer */
    void *tensor[LA_W_COUNT];
    void *storage;
} la_layer_weights;

/* Why a load failed. */
typedef struct {
    char path[1024]; /* the .npy file that was missing, unreadable or misshapen ("" if none) */
    char why[256];   /* "no such file", "shape (4, 3), expected (12, 4)", … */
} la_load_error;

/* Allocates w and initializes it as nn.Transformer does: every matrix Xavier-uniform
 * (in_proj_weight as one (3D, D) matrix), biases 0, LayerNorm γ = 1, β = 0, drawn from
 * seed alone (splitmix64, tensor by tensor in enum order). On error w is left empty.
 * Returns LA_OK, LA_EINVAL (zero size, bad dtype), LA_EOVERFLOW, LA_ENOMEM. */
LA_API la_status la_layer_weights_init(la_layer_weights *w, la_dtype dtype, size_t d_model,
                                       size_t d_ff, int decoder, uint64_t seed);
/* Loads <prefix><key>.npy for every key of the layer from dir (prefix "", or
 * "encoder.layers.0." in a model); D and d_ff from in_proj_weight and linear1.weight, the
 * other shapes exact; float16 to float64 files converted to dtype. On error w is empty,
 * *err (when not NULL) names the file: LA_EIO, LA_EFORMAT (not a .npy, a wrong shape, a
 * value not finite or beyond float32), LA_EDTYPE, LA_EINVAL, LA_ENOMEM. */
LA_API la_status la_layer_weights_load(la_layer_weights *w, la_dtype dtype, int decoder,
                                       const char *dir, const char *prefix, la_load_error *err);
LA_API void la_layer_weights_free(la_layer_weights *w); /* empties w; safe on an empty w */
/* A stack as nn.Transformer holds it: encoder.layers.{i}.*, encoder.norm.*, decoder...;
 * a side with zero layers has no final norm (NULL). */
typedef struct {
    la_dtype dtype;
    size_t d_model, d_ff;
    size_t encoder_layers, decoder_layers;
    la_layer_weights *encoder, *decoder;     /* owned arrays of encoder_layers, decoder_layers */
    void *encoder_norm[2], *decoder_norm[2]; /* γ, β: (D) each, in storage */
    void *storage;
    size_t n_params; /* la_param_counts' encoder + decoder */
} la_transformer_weights;

/* Each layer as la_layer_weights_init (seeds from seed and its place), final norms γ = 1,
 * β = 0; also LA_EINVAL for no layer, LA_EOVERFLOW for counts whose arrays overflow. */
LA_API la_status la_transformer_weights_init(la_transformer_weights *w, la_dtype dtype,
                                             size_t d_model, size_t d_ff, size_t encoder_layers,
                                             size_t decoder_layers, uint64_t seed);
/* Loads a stack from dir (nn.Transformer's state_dict keys), every layer of one D and
 * d_ff; statuses and *err as la_layer_weights_load and la_transformer_weights_init. */
LA_API la_status la_transformer_weights_load(la_transformer_weights *w, la_dtype dtype,
                                             size_t encoder_layers, size_t decoder_layers,
                                             const char *dir, la_load_error *err);
LA_API void la_transformer_weights_free(la_transformer_weights *w);
/* The functions below take their arrays' element type as dtype, after the structures
 * that describe the computation (a weights' w->dtype must equal it: LA_EINVAL). Returns
 * LA_OK, LA_EINVAL (NULL, a zero size, a bad config or dtype), LA_EOVERFLOW, LA_ENOMEM,
 * the kernel's status, and LA_ERANGE when a value leaves the element type (a LayerNorm,
 * a residual sum or a sublayer output not finite: run it in float64; out unspecified).
 * la_layer_norm: y = (x − mean) / √(var + eps) · γ + β over the last axis, biased
 *   variance, statistics in double. x, out: (rows, d); gamma, beta: (d); eps finite, > 0.
 * la_ffn: out = act(x W1ᵀ + b1) W2ᵀ + b2. x, out: (rows, D); w1: (d_ff, D), b1: (d_ff);
 *   w2: (D, d_ff), b2: (D).
 * la_mha, nn.MultiheadAttention: Q = x_q W_Qᵀ + b_Q, K = x_kv W_Kᵀ + b_K, V = x_kv W_Vᵀ +
 *   b_V, H heads of D/H with c->attention (scale 1/√(D/H)), concatenated, · W_Oᵀ + b_O.
 *   x_q, out: (B, N, D); x_kv: (B, M, D) (x_q for self-attention, which c->rotary
 *   rotates); in_w: (3D, D), in_b: (3D), out_w: (D, D), out_b: (D). */
LA_API la_status la_layer_norm(la_dtype dtype, size_t rows, size_t d, const void *x,
                               const void *gamma, const void *beta, double eps, void *out);
LA_API la_status la_ffn(const la_layer_config *c, la_dtype dtype, size_t rows, const void *x,
                        const void *w1, const void *b1, const void *w2, const void *b2, void *out);
LA_API la_status la_mha(const la_layer_config *c, la_dtype dtype, size_t batch, size_t n_queries,
                        size_t n_keys, const void *x_q, const void *x_kv, int causal,
                        const int64_t *key_lengths, const void *in_w, const void *in_b,
                        const void *out_w, const void *out_b, void *out);
/* la_encoder_layer (nn.TransformerEncoderLayer): self-attention then FFN, each with its
 *   residual and LayerNorm in c->norm's arrangement. x, out: (B, N, D). w an encoder layer
 *   (or a decoder layer, its cross-attention unused) of c's sizes.
 * la_decoder_layer (nn.TransformerDecoderLayer): self-attention (causal when `causal`),
 *   cross-attention over memory (B, M, D) (never causal), FFN; pre-LN does not normalize
 *   memory. tgt_lengths, memory_lengths NULL or (B,).
 * la_encoder, la_decoder: the stacks of nn.Transformer, L layers then the final norm.
 * la_transformer: memory = encoder(src), out = decoder(tgt, memory) with a causal target;
 *   src: (B, M, D), tgt and out: (B, N, D). */
LA_API la_status la_encoder_layer(const la_layer_config *c, const la_layer_weights *w,
                                  la_dtype dtype, size_t batch, size_t n, const void *x, int causal,
                                  const int64_t *key_lengths, void *out);
LA_API la_status la_decoder_layer(const la_layer_config *c, const la_layer_weights *w,
                                  la_dtype dtype, size_t batch, size_t n, size_t m, const void *x,
                                  const void *memory, int causal, const int64_t *tgt_lengths,
                                  const int64_t *memory_lengths, void *out);
LA_API la_status la_encoder(const la_layer_config *c, const la_transformer_weights *w,
                            la_dtype dtype, size_t batch, size_t n, const void *x, int causal,
                            const int64_t *key_lengths, void *out);
LA_API la_status la_decoder(const la_layer_config *c, const la_transformer_weights *w,
                            la_dtype dtype, size_t batch, size_t n, size_t m, const void *x,
                            const void *memory, int causal, const int64_t *tgt_lengths,
                            const int64_t *memory_lengths, void *out);
LA_API la_status la_transformer(const la_layer_config *c, const la_transformer_weights *w,
                                la_dtype dtype, size_t batch, size_t n_src, size_t n_tgt,
                                const void *src, const void *tgt, const int64_t *src_lengths,
                                void *out);
/* la_add_positional_encoding: x (B, N, D) += the sinusoidal encoding, x[b, t, 2i] +=
 *   sin(t / 10000^(2i/D)), x[b, t, 2i+1] += cos(…), t = first_pos .. first_pos + N − 1.
 * la_embed: out (count, D) row t = table (V, D) row tokens[t], each in [0, V). */
LA_API la_status la_add_positional_encoding(la_dtype dtype, size_t batch, size_t n, size_t d,
                                            size_t first_pos, void *x);
LA_API la_status la_embed(la_dtype dtype, size_t vocab, size_t d, const void *table, size_t count,
                          const int64_t *tokens, void *out);

/* ---------------------------------------------------------------- sequence layers */
/* The layers Vaswani et al. (Table 1) compare self-attention with (`linattn complexity`):
 * x, the output (not overlapping x): (B, N, d); weights (out, in), applied as W x; biases
 * (d). LA_EINVAL (NULL, a zero size, an even or zero width, a bad dtype), LA_EOVERFLOW,
 * LA_ENOMEM; nothing written on error.
 * Recurrent (Elman): h_t = tanh(W_h h_{t−1} + W_x x_t + b), h_{−1} = 0, N sequential
 *   steps. x, h: (B, N, d); w_x, w_h: (d, d); b: (d).
 * 1-D convolution, width k (odd), 'same' zero padding: y_i = Σ_{t=0}^{k−1} W_t x_{i+t−k/2}
 *   + b. x, y: (B, N, d); w: (k, d, d), W_t = w[t] a (d_out, d_in) matrix; b: (d). */
LA_API la_status la_rnn_forward(la_dtype dtype, size_t batch, size_t n, size_t d, const void *x,
                                const void *w_x, const void *w_h, const void *b, void *h);
LA_API la_status la_conv1d_forward(la_dtype dtype, size_t batch, size_t n, size_t d, size_t width,
                                   const void *x, const void *w, const void *b, void *y);
/* FLOPs of one call, multiply-adds counting 2, every add and tanh 1:
 *   recurrent      B·N·(4d² + 2d)   (W_x x_t and W_h h_{t−1}, 2d² each; + b; tanh)
 *   convolutional  B·N·(2k·d² + d)  (k taps of 2d², the padded ones counted; + b)
 * Returns LA_OK, or the layer's status for the same sizes (LA_EINVAL also for NULL). */
LA_API la_status la_rnn_cost(size_t batch, size_t n, size_t d, double *flops);
LA_API la_status la_conv1d_cost(size_t batch, size_t n, size_t d, size_t width, double *flops);

/* ---------------------------------------------------------------- Accounting */
/* Exact parameter counts as PyTorch counts them: MHA 4D² + 4D, FFN 2·D·d_ff + d_ff + D,
 * LayerNorm 2D; encoder layer MHA + FFN + 2 LN, decoder layer 2 MHA + FFN + 3 LN; a stack
 * L layers and its final norm; embedding V·D, learned positions P·D; total the sum. The
 * defaults (zero from vocab on) are nn.Transformer; the rest describes published models
 * (`linattn params --model`): segment table T·D, T5's relative bias R·H per stack, and
 * LA_MODEL_*: no biases, RMS norms (D), no final norm, a norm after the embeddings,
 * BERT's pooler (D² + D), an untied head V·D. approx_12d2 keeps the D² terms at d_ff =
 * 4D; approx_gap = (exact − approx) / exact over the layers. */
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
/* FLOPs and bytes of one encoder or decoder layer forward (B sequences of N tokens; a
 * decoder over M memory tokens) with c's kernel; a multiply-add 2, every add, multiply,
 * max, exp, erf 1: projections 2·rows·D² each and bias adds; attention la_attention_cost's
 * flops_total; ffn 2·B·N·D·d_ff twice, bias adds, activations; layer_norm 8D + 5 per row
 * and norm; residual B·N·D per sublayer. activation_bytes the scratch at its peak (x's
 * copy, one sublayer output, and the larger of Q, K, V and the heads' output or the
 * FFN's min(B·N, 4096)·d_ff); workspace_bytes the larger attention kernel's. */
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
