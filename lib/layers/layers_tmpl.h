/* layers_tmpl.h — the Transformer layers written once for both precisions. Not an
 * ordinary header: layers.c includes it after core/real_f32.h and again after
 * core/real_f64.h (the scheme is in real_f32.h), so every function below is static and
 * named FN(name); layers.c writes out the public la_* functions. Expects before the
 * include the helpers of layers.c (check_weights, sizes_ok) and layers_internal.h. */

/* ---------------------------------------------------------------- LayerNorm */

/* out row = (x row − mean) · r · γ + β, r = 1/√(var + eps), biased variance; the mean
 * and variance accumulate in double. LA_ERANGE when a row of finite x gives a value
 * beyond REAL's range (a huge γ or β), checked as each value is rounded to REAL.
 *   x, out: (rows, d) (out may equal x); gamma, beta: (d). */
static la_status FN(layer_norm)(size_t rows, size_t d, const REAL *x, const REAL *gamma,
                                const REAL *beta, double eps, REAL *out)
{
    size_t total;
    if (!x || !gamma || !beta || !out || rows == 0 || d == 0 || !la_mul_ok(rows, d, &total) ||
        !(isfinite(eps) && eps > 0))
        return LA_EINVAL;
    int threads = la_threads(), overflow = 0;
#pragma omp parallel for schedule(static) num_threads(threads) if (total > 65536)                  \
    reduction(|                                                                                    \
              : overflow)
    for (size_t i = 0; i < rows; i++) {
        const REAL *xi = x + i * d;
        REAL *yi = out + i * d;
        /* mean and biased variance of the row */
        double mean = 0, var = 0;
        for (size_t c = 0; c < d; c++)
            mean += (double)xi[c];
        mean /= (double)d;
        for (size_t c = 0; c < d; c++) {
            double dev = (double)xi[c] - mean;
            var += dev * dev;
        }
        var /= (double)d;
        double r = 1.0 / sqrt(var + eps);
        /* normalize, scale by γ, shift by β; a finite row must stay finite */
        int row_overflow = 0;
        for (size_t c = 0; c < d; c++) {
            const double y = ((double)xi[c] - mean) * r * (double)gamma[c] + (double)beta[c];
            yi[c] = (REAL)y;
            row_overflow |= !isfinite(yi[c]);
        }
        overflow |= row_overflow && isfinite(mean) && isfinite(var);
    }
    return overflow ? LA_ERANGE : LA_OK;
}

/* ---------------------------------------------------------------- FFN */

/* out = act(x W1ᵀ + b1) W2ᵀ + b2, in chunks of la_ffn_hidden_rows(rows) rows (all of
 * them up to LA_FFN_CHUNK_ROWS), each product one BLIS call on la_threads() of BLIS's
 * threads: BLIS packs W1ᵀ and W2ᵀ once per chunk and shares the packed weights among
 * its threads (row blocks of one task each, with one BLIS call per block, packed them
 * once per block of 256 rows). BLIS splits rows and columns, never the sum over k, so
 * every output is summed in the same order whatever the thread count.
 *   x, out: (rows, D) (out may equal x: a chunk reads its x rows before writing them);
 *   w1: (d_ff, D), b1: (d_ff); w2: (D, d_ff), b2: (D); scratch: one (chunk, d_ff)
 *   hidden slice. */
static la_status FN(ffn)(const la_layer_config *c, size_t rows, const REAL *x, const REAL *w1,
                         const REAL *b1, const REAL *w2, const REAL *b2, REAL *out)
{
    la_status st = la_layer_config_check(c);
    if (st != LA_OK) return st;
    if (!x || !w1 || !b1 || !w2 || !b2 || !out || rows == 0) return LA_EINVAL;
    const size_t D = c->d_model, F = c->d_ff, chunk = la_ffn_hidden_rows(rows);
    size_t total;
    if (!la_mul_ok(rows, D, &total) || !la_mul_ok(chunk, F, &total) ||
        !la_mul_ok(total, sizeof(REAL), &total))
        return LA_EOVERFLOW;
    const int threads = la_threads();
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *h = malloc(total);
    if (!h) return LA_ENOMEM;
    const int gelu = c->activation == LA_ACTIVATION_GELU;

    for (size_t i0 = 0; i0 < rows; i0 += chunk) {
        const size_t n = rows - i0 < chunk ? rows - i0 : chunk;
        REAL *y = out + i0 * D;
        /* h (n, d_ff) = x_chunk W1ᵀ */
        GEMM_THREADED(threads, n, F, D, 1, x + i0 * D, (ptrdiff_t)D, 1, w1, 1, (ptrdiff_t)D, 0, h,
                      (ptrdiff_t)F, 1);
        /* h = act(h + b1): ReLU max(h, 0), or GELU 0.5·h·(1 + erf(h/√2)) */
#pragma omp parallel for schedule(static) num_threads(threads) if (n * F > 65536)
        for (size_t i = 0; i < n; i++) {
            REAL *hi = h + i * F;
            if (gelu)
                for (size_t e = 0; e < F; e++) {
                    const REAL t = hi[e] + b1[e];
                    hi[e] = (REAL)0.5 * t * ((REAL)1 + ERF(t * (REAL)0.70710678118654752440));
                }
            else
                for (size_t e = 0; e < F; e++) {
                    const REAL t = hi[e] + b1[e];
                    hi[e] = t > 0 ? t : 0;
                }
        }
        /* out_chunk (n, D) = b2 in every row, then += h W2ᵀ */
        for (size_t i = 0; i < n; i++)
            memcpy(y + i * D, b2, D * sizeof *y);
        GEMM_THREADED(threads, n, D, F, 1, h, (ptrdiff_t)F, 1, w2, 1, (ptrdiff_t)F, 1, y,
                      (ptrdiff_t)D, 1);
    }
    free(h);
    return LA_OK;
}

/* ---------------------------------------------------------------- multi-head attention */

/* Q, K, V projected by one BLIS product each (on BLIS's threads, over all B·rows rows),
 * then moved into the kernels' (B, H, rows, d_h) layout: head h of Q is columns
 * h·d_h .. (h+1)·d_h of x_q W_Qᵀ.
 * Then the kernel on every head; then out = concat_h(O_h) W_Oᵀ + b_O, one product on
 * BLIS's threads over all B·N rows.
 *   x_q: (B, N, D), x_kv: (B, M, D), out: (B, N, D) (out may equal x_q or x_kv: both
 *   are read in full before out is written). */
static la_status FN(mha)(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                         const REAL *x_q, const REAL *x_kv, int causal, const int64_t *key_lengths,
                         const REAL *in_w, const REAL *in_b, const REAL *out_w, const REAL *out_b,
                         REAL *out)
{
    la_status st = la_layer_config_check(c);
    if (st != LA_OK) return st;
    if (!x_q || !x_kv || !in_w || !in_b || !out_w || !out_b || !out || batch == 0 ||
        n_queries == 0 || n_keys == 0 || (causal != 0 && causal != 1))
        return LA_EINVAL;
    const size_t D = c->d_model, H = c->heads, dh = D / H, N = n_queries, M = n_keys;
    size_t q_count, kv_count;
    if (!sizes_ok(batch, N, D, sizeof(REAL), &q_count) ||
        !sizes_ok(batch, M, D, sizeof(REAL), &kv_count))
        return LA_EOVERFLOW;
    la_problem p;
    la_layer_attention_problem(c, batch, N, M, causal, key_lengths, &p);
    st = la_problem_check(&p);
    if (st != LA_OK) return st;
    if (la_gemm_reserve(la_threads()) != LA_OK) return LA_ENOMEM;

    REAL *q = malloc(q_count * sizeof(REAL)), *k = malloc(kv_count * sizeof(REAL));
    /* o: the heads' output (B,H,N,d_h), and before it each projection's (B·rows, D) */
    REAL *v = malloc(kv_count * sizeof(REAL));
    REAL *o = malloc((q_count > kv_count ? q_count : kv_count) * sizeof(REAL));
    if (!q || !k || !v || !o) {
        st = LA_ENOMEM;
        goto done;
    }
    const int threads = la_threads();

    /* step 1: Q = x_q W_Qᵀ + b_Q, K = x_kv W_Kᵀ + b_K, V = x_kv W_Vᵀ + b_V: each one
     * product over all B·rows rows on BLIS's threads (which packs x and the weight once;
     * one call per head packed x again for each of the 3H products) into o as (B·rows, D),
     * b in every row first, then its heads' columns moved into the (B, H, rows, d_h) layout */
    for (size_t part = 0; part < 3; part++) {
        const size_t rows = part == 0 ? N : M;
        const REAL *x = part == 0 ? x_q : x_kv;
        REAL *dst = part == 0 ? q : part == 1 ? k : v;
        const REAL *w = in_w + part * D * D, *bias = in_b + part * D;
        for (size_t r = 0; r < batch * rows; r++)
            memcpy(o + r * D, bias, D * sizeof *o);
        GEMM_THREADED(threads, batch * rows, D, D, 1, x, (ptrdiff_t)D, 1, w, 1, (ptrdiff_t)D, 1, o,
                      (ptrdiff_t)D, 1);
#pragma omp parallel for schedule(static) num_threads(threads) if (batch * rows * D > 65536)
        for (size_t r = 0; r < batch * rows; r++) {
            const size_t b = r / rows, i = r % rows;
            for (size_t h = 0; h < H; h++)
                memcpy(dst + ((b * H + h) * rows + i) * dh, o + r * D + h * dh, dh * sizeof *dst);
        }
    }

    /* step 2: attention per head, O (B, H, N, d_h); rotary positions in self-attention:
     * q and k rotated, or inside linear attention (RoFormer's form) */
    const bool rotary = c->rotary && x_q == x_kv;
    if (rotary && (la_kernel_get(c->attention)->caps & LA_CAP_ROTARY_FEATURES)) {
        st = FN(la_linear_attention_rotary)(&p, 0, 0, q, k, v, o);
    } else {
        if (rotary && ((st = FN(la_rotary_apply)(batch * H, N, dh, 0, q)) != LA_OK ||
                       (st = FN(la_rotary_apply)(batch * H, M, dh, 0, k)) != LA_OK))
            goto done;
        st = la_attention(c->attention, &p, REAL_DTYPE, q, k, v, o);
    }
    if (st != LA_OK) goto done;

    /* step 3: out = concat_h(O_h) W_Oᵀ + b_O: the heads' rows gathered into (B·N, D) in
     * q's buffer (free once the attention ran), out = b_O in every row, then one product
     * on BLIS's threads, which packs W_O once (one call per 256-row block and head packed
     * it again for every block) */
    REAL *cat = q;
#pragma omp parallel for schedule(static) num_threads(threads) if (q_count > 65536)
    for (size_t r = 0; r < batch * N; r++) {
        const size_t b = r / N, i = r % N;
        for (size_t h = 0; h < H; h++)
            memcpy(cat + r * D + h * dh, o + ((b * H + h) * N + i) * dh, dh * sizeof *cat);
    }
    for (size_t r = 0; r < batch * N; r++)
        memcpy(out + r * D, out_b, D * sizeof *out);
    GEMM_THREADED(threads, batch * N, D, D, 1, cat, (ptrdiff_t)D, 1, out_w, 1, (ptrdiff_t)D, 1, out,
                  (ptrdiff_t)D, 1);
done:
    free(q);
    free(k);
    free(v);
    free(o);
    return st;
}

/* ---------------------------------------------------------------- residual */

/* y = x + y, n elements, y the residual stream and x a sublayer's output. LA_ERANGE when
 * a finite y[i] becomes a value beyond REAL's range: the sum overflowed, or the sublayer
 * did (its output not finite though its input was). */
static la_status FN(add_residual)(size_t n, const REAL *x, REAL *y)
{
    int overflow = 0;
    for (size_t i = 0; i < n; i++) {
        const REAL s = x[i] + y[i];
        overflow |= !isfinite(s) && isfinite(y[i]);
        y[i] = s;
    }
    return overflow ? LA_ERANGE : LA_OK;
}

/* ---------------------------------------------------------------- layers */

/* The tensors of w as REAL. */
#define W(t) ((const REAL *)w->tensor[(t)])

/* One self- or cross-attention sublayer with its residual and norm, in c->norm's
 * arrangement, in place on x (rows = B·N):
 *   post-LN: x = LN(x + MHA(x, kv));  pre-LN: x = x + MHA(LN(x), kv)
 * kv = NULL means self-attention (keys and values from the same input as queries).
 * tmp: (B, N, D) scratch. */
static la_status FN(attention_sublayer)(const la_layer_config *c, const la_layer_weights *w,
                                        int cross, size_t batch, size_t n, size_t m, REAL *x,
                                        const REAL *kv, int causal, const int64_t *lengths,
                                        la_layer_tensor norm, REAL *tmp)
{
    const size_t rows = batch * n, D = c->d_model;
    const la_layer_tensor base = cross ? LA_W_CROSS_IN_WEIGHT : LA_W_SELF_IN_WEIGHT;
    const REAL *in_w = W(base), *in_b = W(base + 1), *out_w = W(base + 2), *out_b = W(base + 3);
    /* the attention's own configuration: cross-attention may use another kernel */
    la_layer_config ac = *c;
    if (cross) ac.attention = la_layer_cross_kernel(c);
    la_status st;
    if (c->norm == LA_NORM_PRE) {
        /* tmp = LN(x); tmp = MHA(tmp, kv or tmp); x += tmp */
        st = FN(layer_norm)(rows, D, x, W(norm), W(norm + 1), c->norm_eps, tmp);
        if (st == LA_OK)
            st = FN(mha)(&ac, batch, n, cross ? m : n, tmp, cross ? kv : tmp, causal, lengths, in_w,
                         in_b, out_w, out_b, tmp);
        if (st == LA_OK) st = FN(add_residual)(rows * D, tmp, x);
    } else {
        /* tmp = MHA(x, kv or x); x = LN(x + tmp) */
        st = FN(mha)(&ac, batch, n, cross ? m : n, x, cross ? kv : x, causal, lengths, in_w, in_b,
                     out_w, out_b, tmp);
        if (st == LA_OK) st = FN(add_residual)(rows * D, tmp, x);
        if (st == LA_OK) st = FN(layer_norm)(rows, D, x, W(norm), W(norm + 1), c->norm_eps, x);
    }
    return st;
}

/* The FFN sublayer, in place on x: post-LN x = LN(x + FFN(x)); pre-LN x = x + FFN(LN(x)). */
static la_status FN(ffn_sublayer)(const la_layer_config *c, const la_layer_weights *w, size_t rows,
                                  REAL *x, la_layer_tensor norm, REAL *tmp)
{
    const size_t D = c->d_model;
    const REAL *w1 = W(LA_W_LINEAR1_WEIGHT), *b1 = W(LA_W_LINEAR1_BIAS);
    const REAL *w2 = W(LA_W_LINEAR2_WEIGHT), *b2 = W(LA_W_LINEAR2_BIAS);
    la_status st;
    if (c->norm == LA_NORM_PRE) {
        st = FN(layer_norm)(rows, D, x, W(norm), W(norm + 1), c->norm_eps, tmp);
        if (st == LA_OK) st = FN(ffn)(c, rows, tmp, w1, b1, w2, b2, tmp);
        if (st == LA_OK) st = FN(add_residual)(rows * D, tmp, x);
    } else {
        st = FN(ffn)(c, rows, x, w1, b1, w2, b2, tmp);
        if (st == LA_OK) st = FN(add_residual)(rows * D, tmp, x);
        if (st == LA_OK) st = FN(layer_norm)(rows, D, x, W(norm), W(norm + 1), c->norm_eps, x);
    }
    return st;
}

#undef W

/* Encoder layer in place on x (B, N, D): self-attention sublayer (norm1), FFN sublayer
 * (norm2). tmp: (B, N, D) scratch. */
static la_status FN(encoder_layer_inplace)(const la_layer_config *c, const la_layer_weights *w,
                                           size_t batch, size_t n, REAL *x, int causal,
                                           const int64_t *key_lengths, REAL *tmp)
{
    la_status st = FN(attention_sublayer)(c, w, 0, batch, n, n, x, NULL, causal, key_lengths,
                                          LA_W_NORM1_WEIGHT, tmp);
    if (st == LA_OK) st = FN(ffn_sublayer)(c, w, batch * n, x, LA_W_NORM2_WEIGHT, tmp);
    return st;
}

/* Decoder layer in place on x (B, N, D): self-attention (norm1), cross-attention over
 * memory (B, M, D) (norm2), FFN (norm3). tmp: (B, N, D) scratch. */
static la_status FN(decoder_layer_inplace)(const la_layer_config *c, const la_layer_weights *w,
                                           size_t batch, size_t n, size_t m, REAL *x,
                                           const REAL *memory, int causal,
                                           const int64_t *tgt_lengths,
                                           const int64_t *memory_lengths, REAL *tmp)
{
    la_status st = FN(attention_sublayer)(c, w, 0, batch, n, n, x, NULL, causal, tgt_lengths,
                                          LA_W_NORM1_WEIGHT, tmp);
    if (st == LA_OK)
        st = FN(attention_sublayer)(c, w, 1, batch, n, m, x, memory, 0, memory_lengths,
                                    LA_W_NORM2_WEIGHT, tmp);
    if (st == LA_OK) st = FN(ffn_sublayer)(c, w, batch * n, x, LA_W_NORM3_WEIGHT, tmp);
    return st;
}

/* Everything a layer or stack checks before it computes, so a call that fails later
 * (only LA_ENOMEM or LA_EBUDGET can) has still written nothing: the sizes, the masks,
 * and the attention problems of the self- (N × N) and cross-attention (N × M). */
static la_status FN(check_call)(const la_layer_config *c, size_t batch, size_t n, size_t m,
                                const REAL *x, const REAL *memory, int decoder, int causal,
                                const int64_t *self_lengths, const int64_t *memory_lengths,
                                const REAL *out, size_t *count)
{
    size_t mem_count;
    if (!x || !out || batch == 0 || n == 0 || (causal != 0 && causal != 1) ||
        (decoder && (!memory || m == 0)))
        return LA_EINVAL;
    if (!sizes_ok(batch, n, c->d_model, sizeof(REAL), count) ||
        (decoder && !sizes_ok(batch, m, c->d_model, sizeof(REAL), &mem_count)))
        return LA_EOVERFLOW;
    la_problem p;
    la_layer_attention_problem(c, batch, n, n, causal, self_lengths, &p);
    la_status st = la_problem_check(&p);
    if (st == LA_OK && decoder) {
        la_layer_attention_problem(c, batch, n, m, 0, memory_lengths, &p);
        st = la_problem_check(&p);
    }
    return st;
}

/* Runs the work on a copy of x and copies it to out only on success. */
static la_status FN(encoder_layer)(const la_layer_config *c, const la_layer_weights *w,
                                   size_t batch, size_t n, const REAL *x, int causal,
                                   const int64_t *key_lengths, REAL *out)
{
    la_status st = check_weights(c, w, REAL_DTYPE, 0);
    size_t count;
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n, n, x, NULL, 0, causal, key_lengths, NULL, out, &count);
    if (st != LA_OK) return st;
    REAL *work = malloc(count * sizeof(REAL)), *tmp = malloc(count * sizeof(REAL));
    st = LA_ENOMEM;
    if (work && tmp) {
        memcpy(work, x, count * sizeof(REAL));
        st = FN(encoder_layer_inplace)(c, w, batch, n, work, causal, key_lengths, tmp);
        if (st == LA_OK) memcpy(out, work, count * sizeof(REAL));
    }
    free(work);
    free(tmp);
    return st;
}

static la_status FN(decoder_layer)(const la_layer_config *c, const la_layer_weights *w,
                                   size_t batch, size_t n, size_t m, const REAL *x,
                                   const REAL *memory, int causal, const int64_t *tgt_lengths,
                                   const int64_t *memory_lengths, REAL *out)
{
    la_status st = check_weights(c, w, REAL_DTYPE, 1);
    size_t count;
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n, m, x, memory, 1, causal, tgt_lengths, memory_lengths, out,
                            &count);
    if (st != LA_OK) return st;
    REAL *work = malloc(count * sizeof(REAL)), *tmp = malloc(count * sizeof(REAL));
    st = LA_ENOMEM;
    if (work && tmp) {
        memcpy(work, x, count * sizeof(REAL));
        st = FN(decoder_layer_inplace)(c, w, batch, n, m, work, memory, causal, tgt_lengths,
                                       memory_lengths, tmp);
        if (st == LA_OK) memcpy(out, work, count * sizeof(REAL));
    }
    free(work);
    free(tmp);
    return st;
}

/* ---------------------------------------------------------------- stacks */

/* Every layer of one side of the stack fits c and the dtype. */
static la_status FN(check_stack)(const la_layer_config *c, const la_transformer_weights *w,
                                 int decoder)
{
    size_t layers = w ? (decoder ? w->decoder_layers : w->encoder_layers) : 0;
    if (layers == 0) return LA_EINVAL;
    for (size_t l = 0; l < layers; l++) {
        la_status st =
            check_weights(c, decoder ? &w->decoder[l] : &w->encoder[l], REAL_DTYPE, decoder);
        if (st != LA_OK) return st;
    }
    return LA_OK;
}

/* Encoder stack in place on x (B, N, D): the layers in order, then encoder.norm. */
static la_status FN(encoder_inplace)(const la_layer_config *c, const la_transformer_weights *w,
                                     size_t batch, size_t n, REAL *x, int causal,
                                     const int64_t *key_lengths, REAL *tmp)
{
    la_status st = LA_OK;
    for (size_t l = 0; l < w->encoder_layers && st == LA_OK; l++)
        st = FN(encoder_layer_inplace)(c, &w->encoder[l], batch, n, x, causal, key_lengths, tmp);
    if (st == LA_OK)
        st = FN(layer_norm)(batch * n, c->d_model, x, w->encoder_norm[0], w->encoder_norm[1],
                            c->norm_eps, x);
    return st;
}

/* Decoder stack in place on x (B, N, D): the layers in order, then decoder.norm. */
static la_status FN(decoder_inplace)(const la_layer_config *c, const la_transformer_weights *w,
                                     size_t batch, size_t n, size_t m, REAL *x, const REAL *memory,
                                     int causal, const int64_t *tgt_lengths,
                                     const int64_t *memory_lengths, REAL *tmp)
{
    la_status st = LA_OK;
    for (size_t l = 0; l < w->decoder_layers && st == LA_OK; l++)
        st = FN(decoder_layer_inplace)(c, &w->decoder[l], batch, n, m, x, memory, causal,
                                       tgt_lengths, memory_lengths, tmp);
    if (st == LA_OK)
        st = FN(layer_norm)(batch * n, c->d_model, x, w->decoder_norm[0], w->decoder_norm[1],
                            c->norm_eps, x);
    return st;
}

static la_status FN(encoder)(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n, const REAL *x, int causal,
                             const int64_t *key_lengths, REAL *out)
{
    la_status st = FN(check_stack)(c, w, 0);
    size_t count;
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n, n, x, NULL, 0, causal, key_lengths, NULL, out, &count);
    if (st != LA_OK) return st;
    REAL *work = malloc(count * sizeof(REAL)), *tmp = malloc(count * sizeof(REAL));
    st = LA_ENOMEM;
    if (work && tmp) {
        memcpy(work, x, count * sizeof(REAL));
        st = FN(encoder_inplace)(c, w, batch, n, work, causal, key_lengths, tmp);
        if (st == LA_OK) memcpy(out, work, count * sizeof(REAL));
    }
    free(work);
    free(tmp);
    return st;
}

static la_status FN(decoder)(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n, size_t m, const REAL *x, const REAL *memory,
                             int causal, const int64_t *tgt_lengths, const int64_t *memory_lengths,
                             REAL *out)
{
    la_status st = FN(check_stack)(c, w, 1);
    size_t count;
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n, m, x, memory, 1, causal, tgt_lengths, memory_lengths, out,
                            &count);
    if (st != LA_OK) return st;
    REAL *work = malloc(count * sizeof(REAL)), *tmp = malloc(count * sizeof(REAL));
    st = LA_ENOMEM;
    if (work && tmp) {
        memcpy(work, x, count * sizeof(REAL));
        st = FN(decoder_inplace)(c, w, batch, n, m, work, memory, causal, tgt_lengths,
                                 memory_lengths, tmp);
        if (st == LA_OK) memcpy(out, work, count * sizeof(REAL));
    }
    free(work);
    free(tmp);
    return st;
}

/* nn.Transformer: memory = encoder(src), out = decoder(tgt, memory) with a causal
 * target; src_lengths mask the source in the encoder and in every cross-attention. */
static la_status FN(transformer)(const la_layer_config *c, const la_transformer_weights *w,
                                 size_t batch, size_t n_src, size_t n_tgt, const REAL *src,
                                 const REAL *tgt, const int64_t *src_lengths, REAL *out)
{
    la_status st = FN(check_stack)(c, w, 0);
    if (st == LA_OK) st = FN(check_stack)(c, w, 1);
    size_t src_count, count;
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n_src, n_src, src, NULL, 0, 0, src_lengths, NULL, out,
                            &src_count);
    if (st == LA_OK)
        st = FN(check_call)(c, batch, n_tgt, n_src, tgt, src, 1, 1, NULL, src_lengths, out, &count);
    if (st != LA_OK) return st;
    size_t larger = src_count > count ? src_count : count;
    REAL *memory = malloc(src_count * sizeof(REAL)), *work = malloc(count * sizeof(REAL));
    REAL *tmp = malloc(larger * sizeof(REAL));
    st = LA_ENOMEM;
    if (memory && work && tmp) {
        memcpy(memory, src, src_count * sizeof(REAL));
        memcpy(work, tgt, count * sizeof(REAL));
        st = FN(encoder_inplace)(c, w, batch, n_src, memory, 0, src_lengths, tmp);
        if (st == LA_OK)
            st = FN(decoder_inplace)(c, w, batch, n_tgt, n_src, work, memory, 1, NULL, src_lengths,
                                     tmp);
        if (st == LA_OK) memcpy(out, work, count * sizeof(REAL));
    }
    free(memory);
    free(work);
    free(tmp);
    return st;
}

/* ---------------------------------------------------------------- embeddings */

/* x[b, pos, 2i] += sin(pos / 10000^(2i/D)), x[b, pos, 2i+1] += cos(…), in double. */
static la_status FN(add_positional_encoding)(size_t batch, size_t n, size_t d, size_t first_pos,
                                             REAL *x)
{
    size_t count;
    if (!x || batch == 0 || n == 0 || d == 0 || !sizes_ok(batch, n, d, sizeof(REAL), &count) ||
        first_pos > SIZE_MAX - n) /* the last position first_pos + N - 1 must not wrap */
        return LA_EINVAL;
    for (size_t c = 0; c < d; c++) {
        /* feature c pairs with frequency index i = c/2: angle pos / 10000^(2i/D), the
         * power once per feature */
        const double denom = pow(10000.0, (double)(c - c % 2) / (double)d);
        for (size_t pos = 0; pos < n; pos++) {
            const double angle = (double)(first_pos + pos) / denom;
            const double pe = c % 2 == 0 ? sin(angle) : cos(angle);
            for (size_t b = 0; b < batch; b++)
                x[(b * n + pos) * d + c] += (REAL)pe;
        }
    }
    return LA_OK;
}

/* out row t = table row tokens[t]. */
static la_status FN(embed)(size_t vocab, size_t d, const REAL *table, size_t count,
                           const int64_t *tokens, REAL *out)
{
    size_t total;
    if (!table || !tokens || !out || vocab == 0 || d == 0 || !la_mul_ok(count, d, &total))
        return LA_EINVAL;
    for (size_t t = 0; t < count; t++)
        if (tokens[t] < 0 || (uint64_t)tokens[t] >= vocab) return LA_EINVAL;
    for (size_t t = 0; t < count; t++)
        memcpy(out + t * d, table + (size_t)tokens[t] * d, d * sizeof(REAL));
    return LA_OK;
}
