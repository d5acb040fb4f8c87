/* kernels.h — the attention kernels' own entry points, one per kernel and element type,
 * and their float64 oracles: what the registry rows (in the kernel files) point at and the
 * generic entry points of linattn.h (la_attention, la_attention_backward, ...) dispatch
 * to. Internal: not installed, not exported (the library is built -fvisibility=hidden);
 * the tests and the command may include it (-Ilib) and link build/liblinattn.a.
 *
 * Each kernel's full contract is here, beside its declarations: its range rule, its
 * scratch, its cost fields and its bytes_min. linattn.h keeps what a caller of the
 * generic entry points needs; docs/library.md summarizes the per-kernel rules. */
#ifndef LA_ATTENTION_KERNELS_H
#define LA_ATTENTION_KERNELS_H

#include "attention/row.h"
#include "linattn.h"

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
 *   taylor, float32 only (forward and backward, both forms): LA_ERANGE also when
 *                                   |scale|·max‖q_i‖·max‖k_j‖ > 128 (its sums cancel to
 *                                   s²/2 from terms of that size squared, and the
 *                                   rounding, 2⁻²⁴·L², would leave fewer than three
 *                                   digits: taylor.c).
 * In float32 that refuses e.g. q = k = ±1e20 or scale 1e38 (softmax, hard), linear
 * attention on inputs near 1e30 (causal: near 1e18), Taylor at logits past 128; float64
 * computes them. The scan lets
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
 *   implementation lib/attention/softmax.c (on the engine, engine.c; on AVX-512 its
 *   tiles in engine_avx512.c) · reference la_ref_softmax_attention · tests
 *   tests/attention/test_attention.c, test_softmax.c */
la_status la_softmax_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out);
la_status la_softmax_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out);

/* Softmax attention, fused, that also returns what its backward needs:
 *   lse: (B,H,N), lse_i = log Σ_j exp(s_ij) over the keys query i sees, s_ij = q_i·k_j ·
 *   scale (natural log; -INFINITY for a query that sees no key).
 * out is bitwise the output of la_softmax_attention_*; the row maximum and sum that kernel
 * keeps give lse. Same statuses; lse NULL is LA_EINVAL. Nothing written on error.
 *   implementation lib/attention/softmax.c (engine.c, engine_avx512.c) · tests
 *   tests/attention/test_softmax.c */
la_status la_softmax_attention_lse_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out, float *lse);
la_status la_softmax_attention_lse_f64(const la_problem *p, const double *q, const double *k,
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
 * above, and the backward's: "backward passes, per kernel" below). Nothing written on error.
 *   implementation lib/attention/softmax.c · reference
 *   la_ref_softmax_attention_backward · tests tests/attention/test_attention.c */
la_status la_softmax_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, const float *out, const float *lse,
                                            const float *d_out, float *d_q, float *d_k, float *d_v);
la_status la_softmax_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *lse,
                                            const double *d_out, double *d_q, double *d_k,
                                            double *d_v);

/* Softmax attention, materializing: for one head at a time, the N×M score matrix,
 * its row softmax, then P·V. Holds N·M elements; refuses with LA_EBUDGET when
 * N·M·sizeof(element) exceeds p->workspace_limit. Same shapes and statuses as above.
 *   implementation lib/attention/softmax.c · reference
 *   la_ref_softmax_attention · tests tests/attention/test_attention.c, test_softmax.c */
la_status la_softmax_attention_materialized_f32(const la_problem *p, const float *q, const float *k,
                                                const float *v, float *out);
la_status la_softmax_attention_materialized_f64(const la_problem *p, const double *q,
                                                const double *k, const double *v, double *out);

/* Its backward, the textbook one on the held probabilities: per head, P (N×M) as the
 * forward forms it, d_v = Pᵀ·d_out, dP = d_out·vᵀ a block of 64 query rows at a time,
 * dS = P ∘ (dP − rowsum(P ∘ dP)) written over P, d_q = dS·k · scale, d_k = dSᵀ·q · scale.
 * Holds N·M elements plus 64 rows of M per thread; LA_EBUDGET when that exceeds
 * p->workspace_limit. out is not read (the row sums come from P). Shapes and statuses as
 * la_softmax_attention_backward_* (without lse).
 *   implementation lib/attention/softmax.c · reference
 *   la_ref_softmax_attention_backward · tests tests/attention/test_attention.c */
la_status la_softmax_attention_materialized_backward_f32(const la_problem *p, const float *q,
                                                         const float *k, const float *v,
                                                         const float *out, const float *d_out,
                                                         float *d_q, float *d_k, float *d_v);
la_status la_softmax_attention_materialized_backward_f64(const la_problem *p, const double *q,
                                                         const double *k, const double *v,
                                                         const double *out, const double *d_out,
                                                         double *d_q, double *d_k, double *d_v);

/* Hard attention: out row i = v row argmax_j (q_i·k_j · scale) over visible j, ties to
 * the lowest j. Same shapes, masks and statuses.
 *   implementation lib/attention/softmax.c (engine.c) · reference
 *   la_ref_hard_attention · tests tests/attention/test_attention.c, test_softmax.c */
la_status la_hard_attention_f32(const la_problem *p, const float *q, const float *k, const float *v,
                                float *out);
la_status la_hard_attention_f64(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out);

/* Its backward. The argmax is piecewise constant in q and k, so its gradient is zero
 * almost everywhere: d_q = d_k = 0 (exactly; at a tie the forward's choice is not
 * differentiable, and 0 is returned there too), and d_v scatters d_out: d_v_j = Σ of
 * d_out_i over the queries i whose argmax (the forward's, bit for bit, ties to the lowest
 * key) is j, summed in order of i. out is not read. Scratch: the forward's blocks per
 * thread and the B·H·N chosen keys. Shapes and statuses as la_softmax_attention_backward_*
 * (without lse).
 *   implementation lib/attention/softmax.c · reference
 *   la_ref_hard_attention_backward · tests tests/attention/test_attention.c */
la_status la_hard_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                         const float *v, const float *out, const float *d_out,
                                         float *d_q, float *d_k, float *d_v);
la_status la_hard_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                         const double *v, const double *out, const double *d_out,
                                         double *d_q, double *d_k, double *d_v);

/* Linear attention, y_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps). φ is applied to the raw q and
 * k (p->scale is not used). Non-causal: S = φ(K)ᵀV (d_k×d_v) and z = Σ_j φ(k_j) once
 * per head, then applied to every query. Causal (p->causal): the chunked form, chunks
 * of p->chunk tokens, each the masked intra-chunk product plus the carried state.
 * Key lengths hide keys from both S and z. Same shapes and statuses.
 *   implementation lib/attention/linear.c (linear_engine.c, featuremap.c) · reference
 *   la_ref_linear_attention · tests tests/attention/test_attention.c, test_linear.c */
la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out);
la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);

/* Causal linear attention, recurrent form: S and z updated token by token.
 * Requires p->causal (LA_EINVAL otherwise). Same shapes and statuses.
 *   implementation lib/attention/linear.c (linear_engine.c) · reference
 *   la_ref_linear_attention · tests tests/attention/test_attention.c, test_linear.c */
la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, float *out);
la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, double *out);

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
 * (linear.c); tests/attention/test_cost.c holds them to the kernels' own counts.
 * workspace_bytes: non-causal per head 2 states and dS, per thread one block's operands
 * (independent of N); chunked per head den (N) and one state, per thread one chunk's operands;
 * recurrent den (N per head) and one state per thread. implementation
 * lib/attention/linear.c · reference
 *   la_ref_linear_attention_backward · cost la_attention_backward_cost · tests
 *   tests/attention/test_linear_backward.c, test_attention.c (gradient mode) */
la_status la_linear_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, const float *out, const float *d_out,
                                           float *d_q, float *d_k, float *d_v);
la_status la_linear_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v);
la_status la_linear_attention_recurrent_backward_f32(const la_problem *p, const float *q,
                                                     const float *k, const float *v,
                                                     const float *out, const float *d_out,
                                                     float *d_q, float *d_k, float *d_v);
la_status la_linear_attention_recurrent_backward_f64(const la_problem *p, const double *q,
                                                     const double *k, const double *v,
                                                     const double *out, const double *d_out,
                                                     double *d_q, double *d_k, double *d_v);

/* Linformer (Wang et al., "Linformer: Self-Attention with Linear Complexity", 2020):
 * keys and values projected along the sequence to k = proj_rank rows, then softmax
 * attention of the N queries over the k projected keys:
 *   K' = E·K (k, d_k), V' = F·V (k, d_v), y = softmax(Q K'ᵀ · scale) V'
 * per head, with E, F: (k, M) row-major float64, proj_e and proj_f, shared by every
 * batch entry and head; both NULL: drawn from seed as la_linformer_projections draws
 * them (entries N(0, 1/k)), the same draw in both precisions.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   k = proj_rank in 1..M (LA_EINVAL above M: the projection would not shorten
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
 *   implementation lib/attention/linformer.c · reference
 *   la_ref_linformer_attention · tests tests/attention/test_attention.c, test_linformer.c */
la_status la_linformer_attention_f32(const la_problem *p, const float *q, const float *k,
                                     const float *v, float *out);
la_status la_linformer_attention_f64(const la_problem *p, const double *q, const double *k,
                                     const double *v, double *out);

/* Linformer's projections drawn from a seed: e and f, (k, m) row-major each, entries
 * N(0, 1/k), the pair the kernels use when proj_e and proj_f are NULL (k =
 * proj_rank, m = p->n_keys, seed = seed). The draw: splitmix64 from seed (state +=
 * 0x9e3779b97f4a7c15, then its mix), u = (x >> 11)·2⁻⁵³; each pair of uniforms u1, u2
 * gives by Box–Muller √(−2 ln(1 − u1))·cos(2π u2) and then ·sin(2π u2); e's entries in
 * order, then f's, each divided by √k. The same seed gives the same matrices everywhere.
 * Returns LA_OK, LA_EINVAL (NULL e or f, e == f, k or m 0), LA_EOVERFLOW (k·m doubles
 * beyond size_t); nothing written on error. */
la_status la_linformer_projections(size_t k, size_t m, uint64_t seed, double *e, double *f);
/* Restricted (local) softmax attention (Vaswani et al. 2017's "restricted self-attention"):
 * query i attends with softmax(q_i·k_j · scale) to the keys j within r = window
 * positions, |i − j| <= r, or when p->causal i − r <= j <= i; key lengths hide keys as in
 * every kernel, and a query left with no key gets a zero row. Positions are the indices i
 * and j themselves, also when N != M (query i's window is centered on key i, not on a
 * rescaled position). With r >= max(N, M) it is softmax attention (la_softmax_attention_*)
 * up to rounding. Blocks of 32 queries walk the at most 32 + 2r keys (causal 32 + r) they
 * see together in score blocks of up to 256 keys with the fused kernel's online softmax,
 * each row masked to its window: O(N·(32 + 2r)·(d_k + d_v)) time (the entries outside a
 * row's window are computed, then masked; the float32 products run on linattn's register
 * tiles on AVX-512), scratch per thread one score block of 32 × bk keys,
 * bk = min(32 + 2r, M, 256) (causal 32 + r), and 2 · 32 row values, independent of N
 * (la_attention_cost gives both).
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Returns LA_OK, LA_EINVAL (NULL, a bad problem: window 0 included), LA_EOVERFLOW,
 * LA_ENOMEM, LA_EBUDGET, LA_ERANGE (softmax's rule above).
 * Causal bottom-right (p->causal_align): query i's window is centered on key i + M − N.
 *   implementation lib/attention/local.c (engine.c) · reference la_ref_local_attention
 *   · tests tests/attention/test_attention.c, test_local.c */
la_status la_local_attention_f32(const la_problem *p, const float *q, const float *k,
                                 const float *v, float *out);
la_status la_local_attention_f64(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out);
/* Its backward: the fused softmax backward (la_softmax_attention_backward_*, lse computed
 * first) over each query's window: blocks of 64 queries × 64 keys, the ones no query of
 * the block sees skipped, so O(N·(64 + 2r)·(d_k + d_v)) time (the entries outside a row's
 * window masked); scratch, range rule (softmax's, "backward passes, per kernel" below)
 * and statuses as that one. Every mask the forward takes. out is the forward's output
 * (D_i = d_out_i·out_i).
 *   implementation lib/attention/local.c (softmax.c's blocks) · reference
 *   la_ref_local_attention_backward · tests tests/attention/test_attention.c,
 *   test_local.c */
la_status la_local_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, const float *out, const float *d_out,
                                          float *d_q, float *d_k, float *d_v);
la_status la_local_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v);

/* FAVOR+ (Performer; Choromanski et al., "Rethinking Attention with Performers", 2021):
 * softmax attention at scale 1/√d_k approximated by linear attention on m = features
 * positive random features. With s = d_k^(−1/4), x = s·q (or s·k), W (m, d_k):
 *   φ(x) = exp(W x − ‖x‖²/2) / √m,   E[φ(q)·φ(k)] = exp(q·k / √d_k),
 *   y_i = Σ_j φ(q_i)·φ(k_j) v_j / (Σ_j φ(q_i)·φ(k_j) + eps)   over the visible keys,
 * so the output tends to softmax attention's as m grows (the error falls as 1/√m, Monte
 * Carlo's rate). p->scale and p->feature_map are not read (scale 1/√d_k is built in).
 * W is the block's proj_w (features, d_k) when given (a model's own, or la_kernel_draw's
 * kept), else la_favor_features(m, d_k, seed) drawn on every call: the same W for every
 * batch entry and head and for both precisions (float32 rounds the float64 W).
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
 * Returns LA_OK, LA_EINVAL (NULL, bad problem: features 0 included), LA_EOVERFLOW
 * (B·H·(N + M)·m elements beyond size_t), LA_ENOMEM, LA_EBUDGET, LA_ERANGE: a projection
 * or ‖x‖² not finite (inputs beyond the element type, e.g. ‖k‖² past FLT_MAX, or not
 * finite); non-causal, linear attention's state rule on φ(K)ᵀV; causal, m·M·max(|v|, 1)
 * > T/8. Nothing written on error. The step API: la_favor_state_create. No attention
 * matrix (la_attention_weights: LA_EINVAL); the backward below.
 *   implementation lib/attention/favor.c (linear_engine.c's scans on the features) ·
 *   reference la_ref_favor_attention · tests tests/attention/test_favor.c,
 *   test_attention.c */
la_status la_favor_attention_f32(const la_problem *p, const float *q, const float *k,
                                 const float *v, float *out);
la_status la_favor_attention_f64(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out);

/* Its backward, d_q, d_k, d_v with W fixed (the draw of seed), non-causal or causal (the
 * chunked form's; the recurrent row's too: the same function to rounding). The forward's
 * weights a_ij = φ(q_i)·ψ(k_j)·exp(g_j − μ_i) are linear attention's on the features
 * φ̃_i = φ(q_i)·exp(G − μ_i) and ψ̃_j = ψ(k_j)·exp(g_j − G), G = max g over the head's keys
 * (non-causal μ_i = G: φ̃, ψ̃ the non-causal forward's own features); so: those features,
 * la_linear_attention_backward_*'s passes on them (dφ̃, dψ̃, d_v), then the chain rule
 * through exp, the rows' maxima P and the stabilizers μ_i = g_{j*} (the gradient of the
 * function the forward computes, eps's rescaling included; at a tie of two maxima, the
 * first's). Scratch (held against p->workspace_limit, la_attention_backward_cost): W, the
 * features and their gradients, 2·B·H·(N + M)·m elements, B·H·M·(3 + d_v) more (d_v waits
 * there for the last check), then the linear backward's with d_k = m. Range (LA_ERANGE,
 * nothing written): the forward's feature rule, causal exp(G − μ_i) > T^(1/4) (keys'
 * largest exponents g spread by more than ln(T)/4 ≈ 22 in float32 within a head), the
 * linear backward's rule on the features, and a bound on the chain rule's d_q and d_k
 * entries past T/8. Statuses as la_favor_attention_*.
 *   implementation lib/attention/favor.c · reference la_ref_favor_attention_backward ·
 *   tests tests/attention/test_attention.c, test_favor.c */
la_status la_favor_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, const float *out, const float *d_out,
                                          float *d_q, float *d_k, float *d_v);
la_status la_favor_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v);

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
 * m·(d_v + 2). Returns as la_favor_attention_* causal. Nothing written on error. Its
 * backward is la_favor_attention_backward_*; no attention matrix (LA_EINVAL).
 *   implementation lib/attention/favor.c (linear_engine.c's per-token step) ·
 *   reference la_ref_favor_attention · tests tests/attention/test_favor.c,
 *   test_attention.c */
la_status la_favor_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, float *out);
la_status la_favor_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out);

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
la_status la_favor_features(size_t m, size_t d_k, uint64_t seed, double *w);
/* W of a FAVOR+ call into w (features × d_k): p's block's proj_w, copied, when it gives
 * one (LA_EINVAL when an entry is not finite: nothing written), else la_favor_features
 * from its seed. The kernels and the oracle both take W from here. */
la_status la_favor_w(const la_problem *p, double *w);

/* SCORE FUNCTIONS. Softmax attention is
 * out_i = Σ_j softmax_j(s_ij) v_j over the visible keys, and the score s_ij can be:
 *   dot        q_i·k_j                 la_softmax_attention_* with p->scale = 1
 *   scaled     q_i·k_j / √d_k          la_softmax_attention_* with p->scale = 1/√d_k (the
 *                                      default): no kernel of their own, no new row
 *   general    q_iᵀ W k_j · scale      W (d_k, d_k) (Luong et al. 2015's "general")
 *   additive   vᵀ tanh(W_q q_i + W_k k_j)  W = [W_q W_k] (d_a, 2·d_k), v (d_a), d_a =
 *                                      score_dim (Bahdanau et al. 2015's "concat")
 *   cosine     q̂_i·k̂_j · scale          x̂ = x / max(‖x‖, 1e-12) (F.normalize's eps; a zero
 *                                      row normalizes to zero)
 * general and cosine read p->scale (general at scale 1 is Luong's form; for cosine it is
 * the inverse temperature: scores lie in [−scale, scale], so the default 1/√d_k makes the
 * weights nearly uniform — pass a larger one, e.g. 10 or a learned one as in Henry et
 * al. 2020's QK-norm). additive does not read p->scale: v sets its scores' size.
 * Weights: score_w and score_v (float64 for either precision; the caller owns
 * them), or NULL: drawn from seed by la_score_weights (below), the same draw in both
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
 *            and the fused kernel's online softmax: O(N·M·d_a) tanh. When every |A|, |C|
 *            is within 20 (float64: 170), from e^{2A} and e^{2C} formed once:
 *            tanh(x + c) = 1 − 2 / (e^{2x}·e^{2c} + 1), a multiply-add and a reciprocal
 *            per (pair, a) instead of a tanh (within 1e-6, float64 1e-14, of Σ|v| of the
 *            exact sums: tests/attention/test_vtanh.c); otherwise tanh directly;
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
 * matrix (la_attention_weights: LA_EINVAL).
 *   implementation lib/attention/scores.c (engine.c) · references
 *   la_ref_general_attention, la_ref_additive_attention, la_ref_cosine_attention · tests
 *   tests/attention/test_scores.c, test_attention.c */
la_status la_general_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out);
la_status la_general_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out);
la_status la_additive_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out);
la_status la_additive_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out);
la_status la_cosine_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out);
la_status la_cosine_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);

/* The score weights drawn from a seed, as the kernels draw them when score_w is NULL:
 *   LA_KERNEL_GENERAL   w (d_k, d_k), entries N(0, 1/d_k) (so W k has k's variance);
 *                       d_a and v are not read (v may be NULL);
 *   LA_KERNEL_ADDITIVE  w (d_a, 2·d_k), entries N(0, 1/(2·d_k)) (so W_q q + W_k k has unit
 *                       variance on N(0, 1) inputs), then v (d_a), entries N(0, 1/d_a).
 * The draw: splitmix64 from seed, Box–Muller pairs as la_linformer_projections draws
 * them (√(−2 ln(1 − u1))·cos(2π u2), then ·sin(2π u2)), w's entries in order then v's,
 * one stream, each times its standard deviation. Returns LA_OK, LA_EINVAL (another
 * kernel, NULL w, additive: NULL v or v == w, d_k or d_a 0), LA_EOVERFLOW; nothing
 * written on error. */
la_status la_score_weights(la_kernel kernel, size_t d_k, size_t d_a, uint64_t seed, double *w,
                           double *v);
/* Relative position representations (Shaw, Uszkoreit and Vaswani 2018): softmax
 * attention with learned embeddings of the clipped distance δ = clip(j − i, −K, K),
 * K = max_distance, in the scores and in the values,
 *   e_ij = q_i·(k_j + a^K_δ)·scale,   y_i = Σ_j α_ij (v_j + a^V_δ),  α_i = softmax_j(e_i),
 * over the keys query i sees (causal in either alignment and key lengths; p->mask and
 * p->key_mask are refused, LA_EINVAL; positions are the indices i and j, also
 * for N != M; a query that sees no key gets a zero row). a^K = rel_k (2K+1, d_k), a^V =
 * rel_v (2K+1, d_v), row K + δ, float64, or both NULL: la_relative_embeddings(K, d_k,
 * d_v, seed). One table for every head, as in the paper. Each query's row is
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
 *   implementation lib/attention/relative.c (engine.c) · reference
 *   la_ref_relative_attention · tests tests/attention/test_positions.c, test_attention.c */
la_status la_relative_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out);
la_status la_relative_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out);

/* The relative kernel's drawn embeddings: a_k (2K+1, d_k) and a_v (2K+1, d_v) row-major,
 * K = max_distance, entries N(0, 1): splitmix64 from seed, Box–Muller pairs as
 * la_linformer_projections draws them (without its 1/√k), a_k's entries in order, then
 * a_v's. Returns LA_OK, LA_EINVAL (NULL, a_k == a_v, a size 0), LA_EOVERFLOW; nothing
 * written on error. */
la_status la_relative_embeddings(size_t max_distance, size_t d_k, size_t d_v, uint64_t seed,
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

/* x: (rows, n, d) row-major, d even, rotated in place; token i of every row block is at
 * position first_pos + i (decoding: first_pos = the tokens already cached). rows is
 * typically B·H (q or k of every head) or B (a (B, N, D) input).
 * Returns LA_OK, LA_EINVAL (NULL x, a size 0, d odd), LA_EOVERFLOW (rows·n·d doubles
 * beyond size_t, first_pos + n beyond SIZE_MAX); x untouched on error.
 *   implementation lib/attention/rotary.c · tests
 *   tests/attention/test_positions.c */
la_status la_rotary_apply_f32(size_t rows, size_t n, size_t d, size_t first_pos, float *x);
la_status la_rotary_apply_f64(size_t rows, size_t n, size_t d, size_t first_pos, double *x);

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
 *   implementation lib/attention/rotary.c · reference
 *   la_ref_linear_attention_rotary · tests tests/attention/test_positions.c */
la_status la_linear_attention_rotary_f32(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const float *q, const float *k,
                                         const float *v, float *out);
la_status la_linear_attention_rotary_f64(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const double *q, const double *k,
                                         const double *v, double *out);

/* The attention matrix: the normalized weights A with out = A·V, for inspection, one
 * pair per normalization; the registry rows of the kernels that have one point at it
 * (la_kernel_info.weights_f32, _f64), and la_attention_weights calls the row's, after
 * checking the kernel's causal rule.
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), out: (B,H,N,M) row-major (v is not needed).
 *   la_softmax_weights (rows softmax, softmax_materialized): A_ij = exp(s_ij − max) /
 *     Σ_j' exp(s_ij' − max) with s = q·k · scale, over the keys query i sees (the matrix
 *     P the materializing kernel forms; the fused kernel never holds it);
 *   la_local_weights (local): as softmax, over the keys query i sees within its window;
 *   la_hard_weights (hard): one-hot rows, 1 at the kernel's argmax (ties to the lowest j);
 *   la_linear_weights (linear, linear_recurrent): A_ij = φ(q_i)·φ(k_j) / (φ(q_i)·z_i +
 *     eps), z_i = Σ φ(k_j) over the keys query i sees (all visible keys, or j <= i when
 *     p->causal); the key mask only (a general mask: LA_EINVAL).
 * Hidden entries are exactly 0; a query that sees no key (or, in linear attention, has a
 * zero denominator) gets a zero row, so rows sum to 1 (linear: to 1 − eps/den) or 0.
 * A·V equals the kernel's output up to rounding. The caller's out holds B·H·N·M
 * elements (it is not held against p->workspace_limit: the caller sized it); the scratch
 * is linear attention's φ(K) per thread, which is. Range (LA_ERANGE, nothing written):
 * with a = max|q|, b = max|k|, softmax, local and hard refuse d_k·a·b·max(|scale|, 1) >
 * T/8, linear d_k·M·(a + 1)·(b + 1) > T/8. Returns LA_OK, LA_EINVAL (a bad problem,
 * NULL), LA_EOVERFLOW (B·H·N·M elements beyond size_t), LA_EBUDGET, LA_ENOMEM, LA_ERANGE;
 * out untouched on error.
 *   implementation lib/attention/weights_matrix.c (weights_matrix_tmpl.h) · tests
 *   tests/attention/test_attention_weights.c (float64 plain loops, A·V against every
 *   kernel) */
la_status la_softmax_weights_f32(const la_problem *p, const float *q, const float *k, float *out);
la_status la_softmax_weights_f64(const la_problem *p, const double *q, const double *k,
                                 double *out);
la_status la_local_weights_f32(const la_problem *p, const float *q, const float *k, float *out);
la_status la_local_weights_f64(const la_problem *p, const double *q, const double *k, double *out);
la_status la_hard_weights_f32(const la_problem *p, const float *q, const float *k, float *out);
la_status la_hard_weights_f64(const la_problem *p, const double *q, const double *k, double *out);
la_status la_linear_weights_f32(const la_problem *p, const float *q, const float *k, float *out);
la_status la_linear_weights_f64(const la_problem *p, const double *q, const double *k, double *out);

/* ---------------------------------------------------------------- step API, per dtype and family
 */

/* Creates a zeroed state; *out is owned by the caller, freed with la_linear_state_free.
 * Returns LA_OK, LA_EINVAL (NULL out, bad dtype, a zero size, bad φ or eps),
 * LA_EOVERFLOW, LA_ENOMEM; *out is untouched on error. */
la_status la_linear_state_create_phi(la_linear_state **out, la_dtype dtype, size_t heads,
                                     size_t d_k, size_t d_v, la_feature_map fm, double eps);
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
la_status la_linear_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                             const float *v_t, float *y_t);
la_status la_linear_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                             const double *v_t, double *y_t);
/* FAVOR+ (la_favor_attention_*) one token at a time: a state of `heads` heads whose
 * tokens take FAVOR+'s m = features random features W (w, (m, d_k), copied; NULL:
 * la_favor_features(m, d_k, seed)) instead of φ, so that stepping a sequence gives
 * la_favor_attention_recurrent_*'s outputs (to rounding, not bit for bit: the projections here are
 * per-row dot products, the kernel's one matrix product), and with them the causal FAVOR+ kernel's.
 * Per head it holds S (m, d_v), z (m) and μ, the keys' running max (the kernel's stabilizer): step,
 * reset, position, save, restore and free are linattn.h's step API, at O(m·(d_k + d_v))
 * per token and head. A step's range rule is FAVOR+'s (each key's features at most
 * 1/√m, every rescaling at most 1): with c = max|v_t| and s, z the state's bounds, a
 * token is refused (LA_ERANGE, state and y_t untouched) when s + c, z + 1 or
 * m·max(s + c, z + 1) passes T/8, or when a projection or ‖s·k‖² is not finite. Restore
 * also needs the same m and seed. Returns LA_OK, LA_EINVAL (NULL out, bad dtype, a zero
 * size or feature count, bad eps, w not finite), LA_EOVERFLOW, LA_ENOMEM; *out untouched
 * on error.
 *   implementation lib/attention/state.c, favor.c · tests
 *   tests/attention/test_favor.c */
la_status la_favor_state_create(la_linear_state **out, la_dtype dtype, size_t heads, size_t d_k,
                                size_t d_v, size_t features, uint64_t seed, const double *w,
                                double eps);

/* ---------------------------------------------------------------- references */

/* float64 oracles: plain loops that materialize everything (scores, φ(K), the full
 * prefix states). Same shapes, masks and conventions as the kernels; slow on purpose.
 * la_ref_linear_attention follows p->causal. Returns LA_OK, LA_EINVAL, LA_EOVERFLOW,
 * LA_ENOMEM (they ignore workspace_limit). */
la_status la_ref_softmax_attention(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out);
la_status la_ref_hard_attention(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out);
la_status la_ref_linear_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);
/* Local attention's oracle: per query, each key tested against the masks and the window
 * (|i − j| <= window; causal also j <= i), the softmax over those. */
la_status la_ref_local_attention(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out);
/* Local attention's gradient: per query the keys its window and the masks leave, the
 * softmax Jacobian as la_ref_softmax_attention_backward writes it. */
la_status la_ref_local_attention_backward(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v);
/* FAVOR+'s oracle: W from la_favor_features, φ(Q) and φ(K) with the kernel's stabilizers
 * (μ_i over the keys query i sees) in plain loops, then y_i = Σ_j a_ij v_j / (Σ_j a_ij +
 * eps), a_ij = φ(q_i)·φ(k_j), pair by pair over the visible keys (zero row for none, or a
 * zero denominator). */
la_status la_ref_favor_attention(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out);
/* FAVOR+'s gradient, per head, W and the stabilizers as la_ref_favor_attention forms them,
 * pair by pair: with a_ij = Σ_l π_ijl, π_ijl = exp(p_il − P_i + p_jl − ‖x_j‖²/2 − μ_i) / m
 * (p = s·x Wᵀ, P the row's max), dA_ij = g_i·v_j + c_i (g, c as linear attention's), d_v_j +=
 * a_ij g_i, dp_il += dA_ij π_ijl, dp_jl += dA_ij π_ijl, dP_i −= dA_ij a_ij, dμ_i −= dA_ij a_ij,
 * dx_j −= dA_ij a_ij x_j; then dg_{j*} += dμ_i (j* the first key of the largest g query i
 * sees), dP_j += dg_j, dx_j −= dg_j x_j; dp_{l*} += dP (l* the row's first max); d_q = s·dp W,
 * d_k = s·(dp W + dx). out is not read. */
la_status la_ref_favor_attention_backward(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v);
/* The gradient of linear attention (follows p->causal), for la_linear_attention_backward_*
 * and la_linear_attention_recurrent_backward_*: the forward recomputed with every prefix
 * state materialized (out is not read, but must not be NULL), the keys' gradients summed
 * pair by pair. Shapes and conventions as those. Returns LA_OK, LA_EINVAL, LA_EOVERFLOW,
 * LA_ENOMEM. */
la_status la_ref_linear_attention_backward(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v);
/* float64 oracles of the backward passes (la_backward_f64_fn): the forward's loops, then
 * per query i the softmax Jacobian written out: P_i, dP_ij = d_out_i·v_j, dS_ij = P_ij
 * (dP_ij − Σ_l P_il dP_il), d_v_j += P_ij d_out_i, d_q_i += scale Σ_j dS_ij k_j, d_k_j +=
 * scale dS_ij q_i; hard: d_q = d_k = 0, d_v_j = Σ d_out_i over the queries whose argmax
 * (ties to the lowest j) is j. out is not read. Statuses as the forward references. */
la_status la_ref_softmax_attention_backward(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *d_out,
                                            double *d_q, double *d_k, double *d_v);
la_status la_ref_hard_attention_backward(const la_problem *p, const double *q, const double *k,
                                         const double *v, const double *out, const double *d_out,
                                         double *d_q, double *d_k, double *d_v);
/* Linformer's oracle: E and F (given, or drawn by la_linformer_projections), E·K and
 * F·V over the visible keys, then the softmax of the scores over the k projected keys,
 * each as plain loops. Refuses what la_linformer_attention_* refuses (causal, k > M,
 * non-finite projections: LA_EINVAL). */
la_status la_ref_linformer_attention(const la_problem *p, const double *q, const double *k,
                                     const double *v, double *out);
/* The score functions' oracles: per pair the score written from its formula (general
 * Σ_a Σ_b q_a W_ab k_b · scale; additive Σ_a v_a tanh(Σ_c W_ac q_c + Σ_c W_a,d_k+c k_c);
 * cosine q·k / (max(‖q‖, 1e-12)·max(‖k‖, 1e-12)) · scale), then the softmax over the
 * visible keys and P·V, as plain loops; weights given or drawn by la_score_weights.
 * Refuse what the kernels refuse (LA_EINVAL) but never LA_ERANGE. */
la_status la_ref_general_attention(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out);
la_status la_ref_additive_attention(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out);
la_status la_ref_cosine_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);
/* The relative kernel's oracle: per query, the visible keys' scores q_i·(k_j + a^K_δ)·scale
 * and their softmax, then Σ_j α_ij (v_j + a^V_δ), each as plain loops over j. */
la_status la_ref_relative_attention(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out);
/* Rotary linear attention's oracle: per pair (i, j) visible, the numerator's weight
 * φ(q_i)ᵀ R_{s_j − t_i} φ(k_j) written with the angle of the distance itself,
 * Σ_c (a_2c b_2c + a_2c+1 b_2c+1)·cos((s_j − t_i)θ_c) + (a_2c+1 b_2c − a_2c b_2c+1)·sin(…),
 * a = φ(q_i), b = φ(k_j), and the denominator Σ_j φ(q_i)ᵀφ(k_j) + eps. Statuses as
 * la_linear_attention_rotary_* (no LA_EBUDGET). */
la_status la_ref_linear_attention_rotary(const la_problem *p, size_t q_first_pos,
                                         size_t k_first_pos, const double *q, const double *k,
                                         const double *v, double *out);

/* ---------------------------------------------------------------- the cost model, per kernel */

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

/* la_cost's fields, kernel by kernel (the struct is in linattn.h):
 *   flops_qk: softmax/hard: Q·Kᵀ, 2·pairs·d_k. Causal chunked linear: the
 *     intra-chunk A = φQ_c·φK_cᵀ, 2·pairs_intra·d_k
 *   flops_softmax: softmax: row max, subtract, exp, row sum, divide: 5·pairs;
 *     hard: 1 compare per pair (the argmax)
 *   flops_av: softmax: P·V, 2·pairs·d_v. Causal chunked linear: A·V_c and
 *     A's row sums (the denominators' intra-chunk part),
 *     pairs_intra·(2·d_v + 1)
 *   flops_phi: linear: φ on Q and on the keys used, (N + u)·d_k
 *   flops_kv: linear: S += φ(k)vᵀ and z += φ(k), 2·d_k·d_v + d_k per key:
 *     u keys (non-causal, recurrent); chunked: each key a later
 *     chunk sees (ΔS_c = φK_cᵀ·V_c, Δz_c = Σ_rows φK_c).
 *     Linformer: the projections E·K and F·V over the m visible
 *     keys, 2·k·m·(d_k + d_v); its other fields are softmax's
 *     with M = k (all k projected keys seen, also when m = 0)
 *   flops_qs: linear: φ(q)·S and φ(q)·z, 2·d_k·d_v + 2·d_k per query;
 *     chunked: per query of a chunk after the first
 *   flops_normalize: linear: den + eps and d_v divides, (d_v + 1) per query
 *   flops_total: the sum of the above
 *   workspace_bytes: scratch the kernel allocates (and holds against
 *     p->workspace_limit), for the current thread count:
 *     materialized one N×M score matrix; fused and hard a 64×256
 *     score block and row statistics per thread; linear what
 *     the kernel's layout holds: S and z per head (non-causal) or
 *     per thread (causal), φ blocks, a chunk's operands;
 *     local a 32 × bk score block, bk = min(32 + 2r, M,
 *     256) (causal 32 + r), and row statistics per thread
 *   io_bytes: q, k, v read and out written once
 *   bytes_min: the fewest bytes the algorithm moves to and from memory:
 *     io_bytes, plus what it holds beyond registers and cache by
 *     its design, written once and read once (per head unless said;
 *     in elements of the call's type unless said):
 *     softmax, hard, local: nothing more (never the scores);
 *     softmax_materialized: the N×M scores, 2·N·M;
 *     linear (every form): S and z, 2·(d_k·d_v + d_k);
 *     linformer: K' and V', 2·k·(d_k + d_v), and E and F read once
 *     per call, 2·k·M float64;
 *     favor (both forms): S and z on m features, 2·(m·d_v + m),
 *     and W read once per call, m·d_k float64;
 *     general: K·W, 2·M·d_k, and W read once, d_k² float64;
 *     cosine: the normalized q and k, 2·(N + M)·d_k;
 *     additive: Q·W_qᵀ and K·W_kᵀ, 2·(N + M)·d_a, and W and v
 *     read once, d_a·(2·d_k + 1) float64;
 *     relative: a^K and a^V read once per call, (2K + 1)·(d_k +
 *     d_v) float64 (each query's row of M scores stays in cache).
 *     Backward: io_bytes. `linattn roofline` divides flops_total
 *     by it: the arithmetic intensity */

/* ---------------------------------------------------------------- backward passes, per kernel */

/* Gradients through one forward call, for a loss L with d_out = ∂L/∂out given.
 * The empty row, backward: a query that sees no key (its output row is zeros whatever the
 * inputs) contributes nothing to any gradient, and its d_q row is zero; a key no query sees
 * gets zero d_k and d_v rows. Range (LA_ERANGE, nothing written): a backward refuses what
 * its forward refuses (the rule under "kernels"), and, with e = max|d_out|, o = max|out|
 * and a, b, c as there, also
 *   softmax (fused, materializing), local:
 *                                   N·d_v·e·(c + o)·max(a, b, 1)·max(|scale|, 1) > T/8
 *                                   or N·e > T/8
 *   hard:                           N·e > T/8
 *   taylor, favor:                  linear attention's backward rule on their features
 *                                   (beside la_linear_attention_backward_*), then a bound
 *                                   on the chain rule's d_q, d_k past T/8 (taylor.c,
 *                                   favor.c; FAVOR+ also its stabilizers' spread, beside
 *                                   la_favor_attention_backward_*)
 * (bounds on dP − D, on d_k's and d_q's sums and on d_v's sums of at most N rows of d_out:
 * lib/attention/softmax.c), so float32 never returns inf or NaN from finite inputs.
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
 *                           chosen keys and the forward's blocks per thread;
 *   local:                  softmax (fused)'s over the window's pairs (la_cost's local
 *                           pairs) and the queries whose window holds a key; the fused
 *                           backward's workspace;
 *   taylor, favor:          linear attention's backward (non-causal or chunked, with
 *                           d_k = the feature count, φ the identity: flops_phi 0 there),
 *                           and in flops_phi the features as their forwards form them and
 *                           the chain rule from the features' gradients (taylor: 3·d_k² +
 *                           3·d_k per row; favor: favor.c's favor_backward_head_flops);
 *                           workspace their features, the features' gradients, d_v and
 *                           the linear backward's. */

#endif /* LA_ATTENTION_KERNELS_H */
