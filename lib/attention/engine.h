/* engine.h — the blocked, threaded online-softmax loop of the softmax family, written once
 * (engine.c), and the tiles its variants plug into it. Internal, not installed.
 *
 * A call is split into tasks of (batch entry b, head h, block of q_block queries); each task
 * is computed whole by one thread, with block sizes that do not depend on the thread count,
 * so the output is bitwise the same on any thread count. A task walks the keys its rows see
 * together, [key_lo, key_hi), in blocks of k_block keys:
 *
 *     begin                          the queries loaded, the running statistics zeroed
 *     for each key block [j0, j0 + cols):
 *         scores   s = q · k_blkᵀ · scale        (or q·W·k, tanh, relative positions ...)
 *         softmax  hidden keys masked; new row max m', what was accumulated rescaled by
 *                  exp(m − m'), p = exp(s − m'), the row sums
 *         values   acc += p · v_blk              (or + Σ_δ w_δ a^V_δ ...)
 *     finish                         out = acc / Σ p; lse = m + log Σ p
 *
 * The tiles come in sets per element type and layout (la_engine_tiles): the portable set
 * (engine_portable.c: rows of scores, products through la_gemm_*), and the AVX-512 sets
 * (engine_avx512.c: the task's queries in the vector lanes). A variant takes a set and
 * replaces the tiles it computes differently; which keys each query sees is its keys
 * function (causal and aligned with key lengths: la_engine_prefix_keys; local windows). */
#ifndef LA_ENGINE_H
#define LA_ENGINE_H

#include "attention/attention_internal.h"

#include <stdint.h>

enum {
    LA_ENGINE_MAX_ROWS = 64,      /* the largest q_block */
    LA_ENGINE_STATE_BYTES = 2048, /* the tiles' running statistics, per task */
};

typedef struct la_engine la_engine;

/* One task: query rows i0 .. i0+rows-1 of head hd = b·H + h. */
typedef struct {
    const la_problem *p;
    const la_engine *e;
    size_t b, hd;                  /* batch entry, head b·H + h */
    size_t m;                      /* keys the key lengths leave entry b: la_keys_in_length */
    size_t i0, rows;               /* rows <= e->q_block */
    size_t lo[LA_ENGINE_MAX_ROWS]; /* keys query i0 + r sees: [lo[r], hi[r]) */
    size_t hi[LA_ENGINE_MAX_ROWS];
    size_t key_lo, key_hi;  /* the keys the rows see together: min lo, max hi */
    const void *q, *k, *v;  /* this head's q (N, d_k), k (M, d_k), v (M, d_v): rows of d */
    void *out;              /* this head's out (N, d_v); NULL: statistics and lse only (portable) */
    size_t ldq, ldk;        /* row strides in elements (row r of q at q + r·ldq, ...): d_k, */
    size_t ldv, ldo;        /* d_k, d_v, d_v for contiguous rows */
    void *lse;              /* NULL, or the rows' log Σ_j exp(s_ij): (rows) */
    unsigned char *scratch; /* the thread's e->scratch_bytes, 64-byte aligned */
    uint32_t *kv_bits;      /* NULL, or max|k|, max|v| as bits, taken on the loads */
    size_t kv_hi;           /* with kv_bits: the maxima cover keys [0, kv_hi), the task's key_hi
                               (the keys seen, la_keys_seen: the range check's) */
    _Alignas(64) unsigned char state[LA_ENGINE_STATE_BYTES]; /* the tiles' own, zeroed */
} la_engine_task;

/* A tile; j0, cols: the key block [j0, j0 + cols). A NULL tile is skipped. */
typedef void (*la_engine_tile_fn)(la_engine_task *t);
typedef void (*la_engine_block_fn)(la_engine_task *t, size_t j0, size_t cols);

typedef struct {
    la_engine_tile_fn begin;
    la_engine_block_fn scores, softmax, values;
    la_engine_tile_fn finish;
} la_engine_tiles;

/* The keys query i of a task sees: [*lo, *hi), *lo <= *hi, both never decreasing with i. */
typedef void (*la_engine_keys_fn)(const la_engine_task *t, size_t i, size_t *lo, size_t *hi);

struct la_engine {
    la_engine_tiles wide;   /* a task's rows together */
    la_engine_tiles narrow; /* tasks of at most narrow_rows rows, one row at a time */
    size_t narrow_rows;     /* 0: every task wide */
    size_t q_block;         /* queries per task, <= LA_ENGINE_MAX_ROWS */
    size_t k_block;         /* keys per block */
    size_t bq, bk;          /* the portable tiles' scratch: min(N, q_block), min(M, k_block) */
    size_t elem;            /* bytes of an element: 4 or 8 */
    size_t slot;            /* bytes of a row sum's slot: 0 (elem), or 8 (hard's best keys) */
    size_t scratch_bytes;   /* per thread, a multiple of 64 */
    size_t staging_bytes;   /* float32 decoding (la_fused_simd_staging_bytes), else 0 */
    bool count_hidden;      /* LA_COUNT_HIDDEN the masked entries (local) */
    bool own_products;      /* the tiles never call BLIS: its packing buffers are not reserved */
    la_engine_keys_fn keys;
    const void *ctx; /* the variant's own data (weights, tables), for its tiles */
};

/* The checks every kernel of the family makes first: a checked problem, no NULL pointer,
 * a scale the element type holds. LA_OK, or the status to return. */
la_status la_engine_check(const la_problem *p, const void *q, const void *k, const void *v,
                          const void *out, size_t elem);

/* Runs every task of p over (q, k, v) into out (and lse: NULL or (B, H, N)), the four laid
 * out as p's strides say (each task gets its head's rows and their stride), on min(threads,
 * tasks) threads, each with its own e->scratch_bytes; `held` bytes of p->workspace_limit are
 * the caller's already. The range check is the caller's, except with e->staging_bytes
 * (float32 decoding), where the tiles take max|k| and max|v| on their loads and the range
 * is checked here before out is written. LA_OK, LA_EBUDGET, LA_ENOMEM, LA_ERANGE,
 * LA_EOVERFLOW. */
la_status la_engine_run(const la_engine *e, const la_problem *p, const void *q, const void *k,
                        const void *v, void *out, void *lse, size_t held);

/* One task whose p, e, b, hd, m, i0, rows, head pointers and row strides are set: its
 * keys, then its tiles (engine.c). The backward passes run the forward's argmax and their
 * own lse this way, on scratch of their own (la_engine_rows set before the call). */
void la_engine_run_task(la_engine_task *t);

/* The prefix keys of the causal mask (top-left or aligned) and the key lengths: [0,
 * la_visible_keys_of(p, m, i)). */
void la_engine_prefix_keys(const la_engine_task *t, size_t i, size_t *lo, size_t *hi);

/* Bytes rounded up to a 64-byte line. */
static inline size_t la_round_up_64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* ---------------------------------------------------------------- the portable tiles */

/* Their scratch, per thread: (bq) slots of `slot` bytes (row sums, or hard attention's best
 * keys: la_engine's slot, elem when 0), (bq) row maxima (or best scores), the bq × bk score
 * block (leading dimension: the block's cols), then `extra` bytes of the variant's; rounded
 * up to 64 bytes. SIZE_MAX when it does not fit in size_t. */
size_t la_engine_portable_bytes(size_t bq, size_t bk, size_t slot, size_t elem, size_t extra);

/* Where they are, in t->state: set by the portable begin from t->scratch, unless a caller
 * has set them (s != NULL) before. */
typedef struct {
    void *s;      /* (rows × cols) scores, then weights */
    void *stat_a; /* (rows) row maxima */
    void *stat_b; /* (rows) row sums */
    void *extra;  /* the variant's */
} la_engine_rows;

static inline la_engine_rows *la_engine_rows_of(la_engine_task *t)
{
    return (la_engine_rows *)(void *)t->state;
}

/* Sets the la_engine_rows of a task from its scratch (unless already set). */
void la_engine_carve(la_engine_task *t);

/* The portable set: begin (row statistics zeroed), scores (la_gemm: s = q_blk · k_blkᵀ ·
 * scale), softmax (row by row over [lo[r], hi[r]) and the general masks), values (la_gemm:
 * acc += p · v_blk, the output rows being the accumulator), finish (acc / Σ, lse); rows of
 * q, k, v and out at the task's strides ldq, ldk, ldv, ldo. */
extern const la_engine_tiles la_engine_portable_f32;
extern const la_engine_tiles la_engine_portable_f64;

/* ---------------------------------------------------------------- the AVX-512 tiles */

/* engine_avx512.c, used where la_fused_simd_usable(p): the wide sets hold a task's
 * queries in the vector lanes (float32: LA_FUSED_SIMD_Q_BLOCK, wide64 _LARGE, the same
 * bits per query; float64: LA_FUSED_SIMD_F64_Q_BLOCK), the narrow sets one query with the keys in
 * the lanes; key blocks of LA_FUSED_SIMD_K_BLOCK. Their scratch:
 * la_fused_simd_scratch_bytes(_f64). */
extern const la_engine_tiles la_engine_avx512_wide_f32;
extern const la_engine_tiles la_engine_avx512_wide64_f32;
extern const la_engine_tiles la_engine_avx512_narrow_f32;
extern const la_engine_tiles la_engine_avx512_wide_f64;
extern const la_engine_tiles la_engine_avx512_narrow_f64;

/* The engine on the wide AVX-512 tiles, for elements of elem bytes (4 or 8), where
 * la_fused_simd_usable(p): their task size, key block and scratch per thread, and keys
 * saying which keys each query sees. Fused softmax adds the narrow tiles and decoding's
 * staging to it; local attention gives its windows. */
la_engine la_engine_fused_wide(const la_problem *p, size_t elem, la_engine_keys_fn keys);
/* The scratch a call on that engine holds: its scratch per thread on min(threads, tasks)
 * threads (the cost models of softmax and local attention). */
double la_engine_fused_wide_workspace(const la_problem *p, la_dtype dtype);
enum { LA_FUSED_SIMD_F64_NARROW_ROWS = 2 };

#endif
