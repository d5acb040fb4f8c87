/* linattn.h — softmax and kernelized linear attention, with float64 references.
 *
 * linattn compares standard softmax attention, softmax(Q Kᵀ · scale) V, with the
 * kernelized linear attention of Katharopoulos et al., "Transformers are RNNs"
 * (2020), y_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + ε) with S = Σ_j φ(k_j) v_jᵀ, z = Σ_j φ(k_j),
 * and the approximations between them (Linformer, local, FAVOR+, score functions,
 * relative and rotary positions), each one row of a kernel registry.
 *
 * SHAPES. Per head, Q is (N, d_k), K is (M, d_k), V is (M, d_v) and the output is
 * (N, d_v). A call covers B × H heads: q is (B, H, N, d_k), k (B, H, M, d_k), v
 * (B, H, M, d_v), out (B, H, N, d_v), row-major and back to back unless the problem's
 * strides say otherwise (la_strides: a KV cache, PyTorch's (B, N, H, d)).
 *
 * ELEMENT TYPES. Arrays are float32 or float64, named by an la_dtype argument and passed
 * as void pointers: every kernel runs in both (float32 is the fast path). The la_ref_*
 * functions are separate float64 oracles written as plain loops.
 *
 * MEMORY. Functions allocate their own scratch, hold it against p->workspace_limit
 * (LA_EBUDGET above it) and return LA_ENOMEM when they cannot have it. The caller owns
 * every pointer it passes; nothing keeps a pointer past its return except la_array data
 * and la_linear_state objects.
 *
 * ERRORS. Every function that can fail returns an la_status (la_strerror). On error
 * nothing has been written to the outputs, nothing leaks, nothing is printed, nothing
 * aborts.
 *
 * THREADS. OpenMP over (batch, head, block). The work is split into the same pieces
 * whatever the thread count, so the same input gives bitwise the same output on every
 * run and with every thread count. Calls on different data may run concurrently.
 */
/* INDEX — every function, in the order of the sections below.
 *
 *   statuses, threads, machine
 *     la_strerror                     a status's message
 *     la_set_num_threads              threads of every kernel (1..LA_MAX_THREADS; 0: default)
 *     la_get_num_threads              the count run on (at most the online cores)
 *     la_num_threads_requested        the count asked for
 *     la_config                       version, BLIS release and kernel set, SIMD path
 *     la_fma_peak_gflops              the FMA peak of this CPU per element type
 *     la_memory_bandwidth_gbs         streaming read and triad bandwidth (GB/s)
 *   problems
 *     la_feature_map_name, _parse     φ's name <-> enum
 *     la_problem_init                 an attention problem: sizes, defaults
 *     la_problem_check                every field in range
 *   attention
 *     la_attention                    any kernel's forward
 *     la_attention_lse                forward and each row's log-sum-exp (softmax)
 *     la_attention_backward           d_q, d_k, d_v from d_out
 *     la_attention_weights            the N×M attention matrix, for inspection
 *     la_ref_attention                the kernel's float64 oracle
 *     la_ref_attention_backward       the float64 oracle of its backward
 *     la_ref_feature_map              φ, element-wise, float64
 *     la_kernel_draw                  a kernel's tensors drawn from p->seed
 *     la_rotary_apply                 rotary positions: rotate q or k in place
 *     la_linear_attention_rotary      linear attention with rotary positions (RoFormer)
 *   step API (causal linear attention and FAVOR+, one token at a time)
 *     la_linear_state_create, la_linear_state_free, la_linear_state_reset
 *     la_linear_state_position        tokens stepped so far
 *     la_linear_step                  one token of every head
 *     la_linear_state_save_size, la_linear_state_save, la_linear_state_restore
 *   cost model
 *     la_visible_pairs                (query, key) pairs the masks leave visible
 *     la_attention_cost               FLOPs, workspace, bytes of one forward
 *     la_attention_backward_cost      the same for one backward
 *   kernel registry
 *     la_kernel_get                   a kernel's row: what it takes, its functions
 *     la_kernel_name, la_kernel_parse name <-> la_kernel
 *   .npy files
 *     la_npy_read, la_npy_parse       a file, or its bytes, into an la_array
 *     la_npy_write                    an la_array into a file, atomically
 *     la_array_free, la_npy_dtype_size
 *     la_array_to_f32                 float16 / bfloat16 widened to float32
 *   Transformer layers (PyTorch's layout and semantics)
 *     la_layer_config_init, la_layer_config_check
 *     la_layer_tensor_key, la_layer_tensor_shape   a weight's state_dict key and shape
 *     la_layer_weights_init, _load, _free          one layer's weights
 *     la_transformer_weights_init, _load, _free    a stack's weights
 *     la_layer_norm, la_ffn, la_mha                the sublayers
 *     la_encoder_layer, la_decoder_layer           one layer
 *     la_encoder, la_decoder, la_transformer       stacks
 *     la_add_positional_encoding, la_embed         sinusoidal positions, token embeddings
 *   sequence layers beside attention (Vaswani et al.'s Table 1)
 *     la_rnn_forward, la_conv1d_forward            recurrent and convolutional layers
 *     la_rnn_cost, la_conv1d_cost                  their FLOPs
 *   accounting
 *     la_param_counts                 exact parameter counts (PyTorch's, or LA_MODEL_*)
 *     la_layer_cost_model             FLOPs and bytes of one layer forward
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

/* ---------------------------------------------------------------- threads, machine */

typedef enum { LA_FLOAT32 = 0, LA_FLOAT64 = 1 } la_dtype;

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

/* What was built and what runs (static strings): the library's version, the BLIS release
 * linked in ("0.9.0"), the BLIS kernel set every product runs on ("zen3", or "skx
 * (chosen by linattn)" where BLIS did not recognize the CPU; LA_BLIS_CONFIG = native |
 * haswell | skx overrides), and the SIMD path: "avx512" (the fused softmax kernel, φ
 * and the linear kernels' block products on linattn's own register tiles), "portable
 * (LA_SIMD=off)" or "portable (no AVX-512)". Results agree with the float64 references
 * on either path; bits differ between them. */
typedef struct {
    const char *version, *blis_version, *blis_config, *simd;
} la_config_info;
LA_API la_config_info la_config(void);

/* The FMA peak of `threads` threads (1..LA_MAX_THREADS, run on at most the online cores)
 * in GFLOP/s for dtype: the best of three runs of 12 independent chains of FMAs on 16
 * floats or 8 doubles in registers, the rate no kernel can pass. NAN for threads or
 * dtype outside their range and where the AVX-512 code does not run. Call outside a
 * parallel region. */
LA_API double la_fma_peak_gflops(la_dtype dtype, int threads);

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

/* Where the elements of q, k, v or out are, in elements, per batch entry, head and row:
 * row r of head (b, h) starts at b·batch + h·head + r·row. All three zero (what
 * la_problem_init sets) is the contiguous layout (B, H, rows, d). A KV cache (B, H, T, d)
 * holding M <= T keys: {H·T·d, T·d, d}; PyTorch's (B, N, H, d): {N·H·d, d, H·d}. A
 * non-zero layout needs row >= d, and distinct (b, h, r) must not share an element;
 * la_problem_check refuses other layouts and offsets beyond size_t (LA_EINVAL,
 * LA_EOVERFLOW). Only the la_attention* entry points read strides (every other function
 * requires the contiguous layout); they copy a strided array into contiguous scratch
 * (held against p->workspace_limit) and the output back, so results are bitwise those
 * of the contiguous call. */
typedef struct {
    size_t batch, head, row;
} la_strides;

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
    la_strides stride_q, stride_k, stride_v, stride_out; /* all zero: contiguous */
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
 * eps = LA_DEFAULT_EPS, chunk = LA_DEFAULT_CHUNK, workspace_limit and the variants'
 * sizes their defaults, nothing given (projections, weights, embeddings: drawn from seed
 * 0), causal_align top-left, contiguous strides. Adjust the fields afterwards. */
LA_API void la_problem_init(la_problem *p, size_t batch, size_t heads, size_t n_queries,
                            size_t n_keys, size_t d_k, size_t d_v);

/* LA_OK when every field is in range and every array size fits in size_t;
 * LA_EINVAL or LA_EOVERFLOW otherwise. Every entry point calls it first. */
LA_API la_status la_problem_check(const la_problem *p);

/* ---------------------------------------------------------------- attention */

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

/* The contract every kernel keeps (lib/attention/kernels.h has each kernel's own):
 *   Masks. A key is visible to a query when every mask given lets it: causal (query i sees
 *     key j <= i, or j <= i + M − N bottom-right), key lengths (keys j >= L_b hidden),
 *     p->mask and p->key_mask. A kernel that cannot honor a mask refuses it (LA_EINVAL):
 *     linear attention takes key_mask but not mask (it would break the shared state S),
 *     Linformer and FAVOR+ take neither, additive, relative and rotary neither general
 *     mask; Linformer refuses causal. la_kernel_get(kernel) says what each takes.
 *   The empty row. A query that sees no key gets an output row of zeros in every kernel
 *     and reference (linear attention also for a zero denominator, possible at eps = 0).
 *   Range. Every kernel returns a finite output within its precision's rounding of the
 *     float64 reference, or refuses with LA_ERANGE (writing nothing), never inf or NaN
 *     from finite inputs: one scan of max|q|, |k|, |v| before the kernel runs bounds
 *     every score, sum and state entry against the element type's largest value / 8
 *     (float32 refuses e.g. q = k = ±1e20 in softmax, inputs near 1e30 in linear
 *     attention; float64 computes them).
 *   Statuses. LA_OK, LA_EINVAL (NULL, a bad problem, a mask or causal flag the kernel
 *     refuses, a dtype outside la_dtype), LA_EOVERFLOW, LA_ENOMEM, LA_EBUDGET, LA_ERANGE.
 *   Arrays. q, k, v, out are dtype's type, laid out as p's strides say; lse, d_out, d_q,
 *     d_k, d_v are contiguous. Outputs must not overlap inputs. */

/* out = attention of `kernel` on q, k, v: the registry row's forward for dtype. */
LA_API la_status la_attention(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                              const void *k, const void *v, void *out);

/* The same, also writing lse (B, H, N): lse_i = log Σ_j exp(s_ij) over the keys query i
 * sees (natural log; -INFINITY for a query that sees none), what the backward reads. out
 * is bitwise la_attention's. LA_EINVAL for a kernel whose row has no LA_CAP_LSE (every
 * kernel but LA_KERNEL_SOFTMAX) and for lse NULL. */
LA_API la_status la_attention_lse(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                  const void *q, const void *k, const void *v, void *out,
                                  void *lse);

/* Gradients through one forward call, for a loss L with d_out = ∂L/∂out given:
 *   out, d_out: (B, H, N, d_v), the forward's output on the same inputs and its gradient;
 *   lse: softmax only, la_attention_lse's (then not recomputed), or NULL (computed
 *     first); every other kernel requires NULL (LA_EINVAL);
 *   d_q, d_k, d_v: contiguous, shaped as q, k, v, written whole.
 * A query that sees no key contributes nothing, and a key no query sees gets zero d_k,
 * d_v. The range rule adds bounds on d_out and out (kernels.h). LA_EINVAL also for a
 * kernel without a backward (la_kernel_info.backward_f32 NULL). */
LA_API la_status la_attention_backward(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                       const void *q, const void *k, const void *v, const void *out,
                                       const void *lse, const void *d_out, void *d_q, void *d_k,
                                       void *d_v);

/* The attention matrix A with out = A·V, for inspection: out (B, H, N, M), contiguous
 * (the caller sized it: not held against workspace_limit); v is not needed. softmax,
 * softmax_materialized, local: the row softmax over the visible keys; hard: one-hot
 * rows at the argmax; linear, linear_recurrent: φ(q_i)·φ(k_j) / (φ(q_i)·z_i + eps).
 * Hidden entries are exactly 0, the empty row a zero row. LA_EINVAL for the other
 * kernels (none of a matrix here). */
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

/* The tensors a kernel draws from p->seed when the problem gives none, float64,
 * row-major, caller-owned (the same seed gives the same draw in both precisions):
 *   LA_KERNEL_LINFORMER            first E, second F: (proj_rank, n_keys) each
 *   LA_KERNEL_FAVOR, _RECURRENT    first W: (features, d_k); second NULL
 *   LA_KERNEL_GENERAL              first W: (d_k, d_k); second NULL
 *   LA_KERNEL_ADDITIVE             first W: (score_dim, 2·d_k), second v: (score_dim)
 *   LA_KERNEL_RELATIVE             first a^K: (2K+1, d_k), second a^V: (2K+1, d_v),
 *                                  K = max_distance
 * Returns LA_OK, LA_EINVAL (another kernel, NULL p or first, second NULL where the
 * kernel has two tensors or not NULL where it has one, first == second, a size 0),
 * LA_EOVERFLOW; nothing written on error. */
LA_API la_status la_kernel_draw(la_kernel kernel, const la_problem *p, double *first,
                                double *second);

/* Rotary position embeddings (RoPE; Su et al., "RoFormer", 2021): pair c = (channels 2c,
 * 2c+1) of a row at position t is rotated by the angle t·θ_c, θ_c = LA_ROTARY_BASE^(−2c/d)
 * (the interleaved pairs of the paper), so that (R_t q)·(R_s k) = qᵀ R_{s−t} k. Angles in
 * float64 for either type. x: (rows, n, d) of dtype, d even, rotated in place; token i of
 * every row block is at position first_pos + i. Softmax, hard and local attention take
 * rotary positions by rotating q and k before la_attention. Returns LA_OK, LA_EINVAL (NULL
 * x, a size 0, d odd, bad dtype), LA_EOVERFLOW; x untouched on error. */
#define LA_ROTARY_BASE 10000.0
LA_API la_status la_rotary_apply(la_dtype dtype, size_t rows, size_t n, size_t d, size_t first_pos,
                                 void *x);

/* Linear attention with rotary positions as RoFormer does it: the rotation acts on the
 * features in the numerator only, y_i = Σ_j (R_{t_i} φ(q_i))ᵀ (R_{s_j} φ(k_j)) v_j /
 * (Σ_j φ(q_i)ᵀ φ(k_j) + eps), t_i = q_first_pos + i, s_j = k_first_pos + j; p->causal
 * runs it token by token. d_k even; p->mask, p->key_mask refused; contiguous arrays.
 * Statuses as la_attention's. Not a registry row (its first positions are arguments). */
LA_API la_status la_linear_attention_rotary(const la_problem *p, la_dtype dtype, size_t q_first_pos,
                                            size_t k_first_pos, const void *q, const void *k,
                                            const void *v, void *out);

/* ---------------------------------------------------------------- step API */

/* Causal linear attention one token at a time, for autoregressive generation: per head
 * a state S (F, d_v), z (F), zero after create and reset, F the features per key.
 * la_linear_state_create(&st, kernel, p, dtype): kernel LA_KERNEL_LINEAR or
 *   LA_KERNEL_LINEAR_RECURRENT: φ = p->feature_map, F = d_k, stepping reproduces the
 *   recurrent kernel bit for bit; LA_KERNEL_FAVOR or LA_KERNEL_FAVOR_RECURRENT: FAVOR+'s
 *   F = p->features random features drawn from p->seed, with its running-max stabilizer
 *   (the recurrent kernel's outputs to rounding). heads = p->batch · p->heads; p->d_k,
 *   p->d_v, p->eps; nothing else of p is read. *st is the caller's, freed with
 *   la_linear_state_free. LA_EINVAL (NULL, another kernel, a bad dtype, size, φ or eps),
 *   LA_EOVERFLOW, LA_ENOMEM; *st untouched on error.
 * la_linear_step(st, q_t, k_t, v_t, y_t): q_t, k_t (heads, d_k), v_t, y_t (heads, d_v) of
 *   the state's dtype; S += φ(k_t) v_tᵀ, z += φ(k_t), y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps).
 *   LA_EINVAL (NULL), LA_ERANGE (the range rule per token: the state keeps bounds on S and
 *   z; once refused, a state refuses every further token of that size: reset it, or use
 *   float64), the state and y_t untouched on either. Do not step one state from two
 *   threads at once.
 * Save and restore: la_linear_state_save_size() bytes hold the whole state (sizes, φ, eps,
 *   position, S, z) in this machine's byte order; save needs size >= that; restore
 *   accepts exactly that size, saved from a state of the same kind, dtype, sizes and
 *   parameters, holding values a state can reach (LA_EINVAL otherwise, state unchanged). */
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

/* FLOPs and memory of one call: the one model the benchmarks take GFLOP/s from
 * (lib/attention/cost.c). Every count is a total over the call's B × H heads, of the
 * arithmetic of the algorithm each kernel runs over the (query, key) pairs the masks
 * leave visible (causal counts its half, key lengths shorten rows): a multiply-add is 2
 * FLOPs; an add, multiply, divide, compare, max or exp 1; φ 1 per element. A query that
 * sees no key costs nothing. Not counted: the scale multiply, the fused kernel's online
 * rescaling, index arithmetic. Each kernel's fields are defined beside it
 * (lib/attention/kernels.h); tests/attention/test_cost.c holds the linear kernels' to the
 * FLOPs they count as they run. */
typedef struct {
    double flops_qk;        /* scores Q·Kᵀ (chunked linear: the intra-chunk φQ·φKᵀ) */
    double flops_softmax;   /* max, exp, sums, divides (hard: the argmax compares) */
    double flops_av;        /* P·V (chunked linear: the intra-chunk A·V) */
    double flops_phi;       /* φ on queries and keys */
    double flops_kv;        /* key-side state or projections (S += φ(k)vᵀ, E·K, K·W) */
    double flops_qs;        /* query-side state products (φ(q)·S, φ(q)·z) */
    double flops_normalize; /* denominators and divides of linear attention */
    double flops_total;     /* the sum of the above */
    double workspace_bytes; /* scratch the kernel holds against p->workspace_limit, for
                               the current thread count (strided arrays' copies are not
                               included) */
    double io_bytes;        /* q, k, v read and out written once (backward: q, k, v, out,
                               d_out read, d_q, d_k, d_v written) */
    double bytes_min;       /* the fewest bytes the algorithm moves to and from memory:
                               io_bytes plus what it holds beyond cache by design (the
                               materialized scores, linear attention's S and z, ...);
                               `linattn roofline` divides flops_total by it */
} la_cost;

/* Visible (query, key) pairs of one head of batch entry b under causal (either
 * alignment) and key lengths; not the general masks, whose hidden pairs the kernels
 * compute and then drop (la_attention_cost counts them as visible). */
LA_API double la_visible_pairs(const la_problem *p, size_t b);

/* Fills *out for one call of `kernel` on p in dtype. Returns LA_OK, LA_EINVAL (NULL, bad
 * kernel or dtype, a causal flag the row refuses), or what la_problem_check returns. */
LA_API la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                   la_cost *out);
/* The same for one backward call; LA_EINVAL also for a kernel without a backward. */
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

/* Every function below takes the element type of its arrays (float32 or float64) as
 * dtype, after the structures that describe the computation: a weights' w->dtype must
 * equal it (LA_EINVAL otherwise). */

/* LayerNorm over the last axis: y = (x − mean) / √(var + eps) · γ + β, biased variance
 * (divide by d), statistics accumulated in double.
 *   x, out: (rows, d); gamma, beta: (d). Returns LA_OK, LA_EINVAL (NULL, a zero size,
 *   rows · d overflowing, eps not finite and > 0), LA_ERANGE (a row of finite x gave a
 *   value beyond the element type's range, e.g. γ near its limit; out then holds it). */
LA_API la_status la_layer_norm(la_dtype dtype, size_t rows, size_t d, const void *x,
                               const void *gamma, const void *beta, double eps, void *out);

/* Position-wise FFN: out = act(x W1ᵀ + b1) W2ᵀ + b2, act from c->activation.
 *   x, out: (rows, D); w1: (d_ff, D), b1: (d_ff); w2: (D, d_ff), b2: (D).
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM. */
LA_API la_status la_ffn(const la_layer_config *c, la_dtype dtype, size_t rows, const void *x,
                        const void *w1, const void *b1, const void *w2, const void *b2, void *out);

/* Multi-head attention as nn.MultiheadAttention (batch_first):
 *   Q = x_q W_Qᵀ + b_Q, K = x_kv W_Kᵀ + b_K, V = x_kv W_Vᵀ + b_V, split into H heads of
 *   D/H, attention per head with c->attention (scale 1/√(D/H) for softmax and hard),
 *   heads concatenated, out = concat · W_Oᵀ + b_O.
 *   x_q: (B, N, D), x_kv: (B, M, D) (x_kv = x_q for self-attention), out: (B, N, D);
 *   in_w: (3D, D), in_b: (3D), out_w: (D, D), out_b: (D); key_lengths NULL or (B,).
 *   c->rotary: Q and K rotated (positions 0..N−1, 0..M−1) when x_kv == x_q.
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM, or the kernel's status. */
LA_API la_status la_mha(const la_layer_config *c, la_dtype dtype, size_t batch, size_t n_queries,
                        size_t n_keys, const void *x_q, const void *x_kv, int causal,
                        const int64_t *key_lengths, const void *in_w, const void *in_b,
                        const void *out_w, const void *out_b, void *out);

/* The layers and stacks below return LA_ERANGE when a value leaves the element type's
 * range (a LayerNorm, a residual sum or a sublayer output added to a finite residual is
 * not finite: run it in float64); the output is then unspecified.
 * Encoder layer (nn.TransformerEncoderLayer): self-attention then FFN, each with its
 * residual and LayerNorm (norm1, norm2) in c->norm's arrangement.
 *   x, out: (B, N, D); key_lengths NULL or (B,). w must be an encoder layer (or a
 *   decoder layer, whose cross-attention is then unused) of c's sizes and dtype. */
LA_API la_status la_encoder_layer(const la_layer_config *c, const la_layer_weights *w,
                                  la_dtype dtype, size_t batch, size_t n, const void *x, int causal,
                                  const int64_t *key_lengths, void *out);

/* Decoder layer (nn.TransformerDecoderLayer): self-attention (causal when `causal`,
 * target lengths), cross-attention over memory (never causal, memory lengths), FFN;
 * norm1, norm2, norm3 in c->norm's arrangement (pre-LN does not normalize memory).
 *   x, out: (B, N, D); memory: (B, M, D); tgt_lengths, memory_lengths NULL or (B,). */
LA_API la_status la_decoder_layer(const la_layer_config *c, const la_layer_weights *w,
                                  la_dtype dtype, size_t batch, size_t n, size_t m, const void *x,
                                  const void *memory, int causal, const int64_t *tgt_lengths,
                                  const int64_t *memory_lengths, void *out);

/* The stacks of nn.Transformer: L encoder layers then encoder.norm; L2 decoder layers
 * (each attending to memory) then decoder.norm. la_transformer runs both:
 * memory = encoder(src), out = decoder(tgt, memory) with a causal target.
 *   src: (B, M, D), tgt and out: (B, N, D). */
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

/* Sinusoidal positional encoding added in place: x[b, pos, 2i] += sin(pos / 10000^(2i/D)),
 * x[b, pos, 2i+1] += cos(pos / 10000^(2i/D)), positions first_pos .. first_pos + N − 1.
 *   x: (B, N, D). Returns LA_OK, LA_EINVAL (NULL x, a zero size, sizes whose product
 *   overflows, first_pos + N − 1 beyond SIZE_MAX; x untouched). */
LA_API la_status la_add_positional_encoding(la_dtype dtype, size_t batch, size_t n, size_t d,
                                            size_t first_pos, void *x);

/* Token embeddings: out row t = table row tokens[t] (no scaling). table: (V, D); tokens:
 * (count) in [0, V) (LA_EINVAL otherwise, out untouched, and for NULL, a zero V or D,
 * count · D overflowing); out: (count, D). */
LA_API la_status la_embed(la_dtype dtype, size_t vocab, size_t d, const void *table, size_t count,
                          const int64_t *tokens, void *out);

/* ---------------------------------------------------------------- sequence layers */

/* The two layer types Vaswani et al. ("Attention Is All You Need", Table 1) compare
 * self-attention with, for `linattn complexity`. x and the output are (B, N, d)
 * row-major; weights row-major (out, in) matrices applied to column vectors (W x);
 * biases (d). The output must not overlap x. Both allocate nothing but BLIS's packing
 * buffers and write nothing on error. Returns LA_OK, LA_EINVAL (NULL, a zero size, an
 * even or zero width, a bad dtype), LA_EOVERFLOW, LA_ENOMEM.
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
