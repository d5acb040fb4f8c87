/* test_layers_backward.c — every layer of lib/train/train_layers.h (dense, LayerNorm, the
 * activations, FFN, multi-head attention over softmax, softmax_materialized and linear
 * attention, embedding with both kinds of positions, the fused cross-entropy):
 *   - the float64 and float32 layers against the float64 plain-loop references
 *     (lib/train/reference.c), forward and backward, every gradient, with the parameter
 *     gradients ADDED to what they held;
 *   - the references' backward against central differences of their forward, for the
 *     scalar L = Σ dy ∘ y (the cross-entropy: its loss);
 *   - the same bits on 1 and 2 threads for shapes large enough to run threaded;
 *   - errors (NULL, zero sizes, tokens and targets out of range).
 * Inputs are fresh each run (seed printed by tu_init; replay with LA_TEST_SEED), drawn
 * N(0, 1) and rounded to float32, so both precisions see the same values. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F64 1e-12 /* relative: float64 layers against the references */
#define TOL_F32 1e-5  /* relative: float32 layers against the references */
#define TOL_FD 1e-6   /* relative: references against central differences, */
#define FD_FLOOR 1e-8 /*   above this absolute floor per element (check_fd) */
#define FD_STEP 1e-6

/* ---------------------------------------------------------------- helpers */

/* n values N(0, sigma), rounded to float32; *x32 (when asked) the float32 copy. */
static double *draw(tu_rng *r, size_t n, double sigma, float **x32)
{
    double *x = tu_f64(n);
    float *f = tu_f32(n);
    tu_fill_normal(r, x, n, sigma);
    tu_to_f32(x, f, n);
    tu_to_f64(f, x, n);
    if (x32)
        *x32 = f;
    else
        free(f);
    return x;
}

static double *copy64(const double *x, size_t n)
{
    double *y = tu_f64(n);
    memcpy(y, x, n * sizeof *y);
    return y;
}

/* |x|, a fresh copy: the inputs of a yardstick run (check_terms_f32). */
static double *abs64(const double *x, size_t n)
{
    double *y = tu_f64(n);
    for (size_t i = 0; i < n; i++)
        y[i] = fabs(x[i]);
    return y;
}

/* A result against the float64 reference: ‖y − ref‖ / ‖ref‖ < TOL_F32 (TOL_F64 for a
 * float64 result), and for an output of at most TERMS_MAX_N elements, against the size of
 * the terms it sums where that is larger: ‖y − ref‖ / max(‖ref‖, ‖terms‖ + extra). Each
 * term is rounded, so an output whose terms cancel keeps an absolute error of their size;
 * over many elements the norm absorbs one such element, over one to three it is the
 * element's own error (one-element shapes: x·w + b with b ≈ −x·w; a gradient added to a
 * value near its negative; GELU's slope Φ(t) + t·φ(t) near its zero at t ≈ −0.75;
 * LayerNorm's d = 3). terms is the same float64 reference run on the absolute values of
 * every input (and of what gradients are added to): for a dense layer |x|·|W|ᵀ + |b|, the
 * Σ|terms| of the componentwise bound |fl(Σ) − Σ| <= γₙ·Σ|terms|. extra (a norm) covers
 * terms that stay differences on absolute inputs: attention's d_q and d_k
 * (mha_qk_yardsticks). Larger outputs keep the plain relative error: the yardsticks run
 * 4–200× their norm there and would hide a wrong term. */
#define TERMS_MAX_N 3
#define check_terms_f32(y, ref, terms, extra, n, ...)                                              \
    check_terms((y), 1, (ref), (terms), (extra), (n), TOL_F32, __FILE__, __LINE__, __VA_ARGS__)
#define check_terms_f64(y, ref, terms, extra, n, ...)                                              \
    check_terms((y), 0, (ref), (terms), (extra), (n), TOL_F64, __FILE__, __LINE__, __VA_ARGS__)
static void check_terms(const void *y, int is_f32, const double *ref, const double *terms,
                        double extra, size_t n, double tol, const char *file, int line,
                        const char *fmt, ...)
{
    const float *y32 = y;
    const double *y64 = y;
    double t2 = 0, worst_abs = -1;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        t2 += terms[i] * terms[i];
        const double d = fabs((is_f32 ? (double)y32[i] : y64[i]) - ref[i]);
        if (!(d <= worst_abs)) worst_abs = d, worst = i; /* a NaN is the worst */
    }
    const double size = n <= TERMS_MAX_N ? sqrt(t2) + extra : 0;
    const double err =
        is_f32 ? tu_floored_error_f32(y32, ref, n, size) : tu_floored_error_f64(y64, ref, n, size);
    char context[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    if (size > 0)
        tu_check_close(err, tol, is_f32 ? (double)y32[worst] : y64[worst], ref[worst], worst, file,
                       line, "%s (against the size of its terms, %.3g)", context, size);
    else
        tu_check_close(err, tol, is_f32 ? (double)y32[worst] : y64[worst], ref[worst], worst, file,
                       line, "%s", context);
}

/* The scalar L of a reference forward, Σ dy ∘ y, for the finite differences. */
typedef double (*loss_fn)(void *ctx);

/* fd[e] = (L(x + h e_e) − L(x − h e_e)) / 2h for each of the n elements of x (in place). */
static void finite_differences(loss_fn loss, void *ctx, double *x, size_t n, double *fd)
{
    for (size_t e = 0; e < n; e++) {
        const double keep = x[e];
        x[e] = keep + FD_STEP;
        const double up = loss(ctx);
        x[e] = keep - FD_STEP;
        const double down = loss(ctx);
        x[e] = keep;
        fd[e] = (up - down) / (2 * FD_STEP);
    }
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Checks a reference gradient g of x against central differences: ‖g − fd‖ <= TOL_FD ·
 * ‖fd‖ + FD_FLOOR · √n, the floor the differences' own rounding (u·|L|/h per element, L
 * of order 1 to 10); NaN fails. */
static void check_fd(loss_fn loss, void *ctx, double *x, size_t n, const double *g,
                     const char *what)
{
    double *fd = tu_f64(n);
    finite_differences(loss, ctx, x, n, fd);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        diff += (g[i] - fd[i]) * (g[i] - fd[i]);
        norm += fd[i] * fd[i];
    }
    diff = sqrt(diff), norm = sqrt(norm);
    if (!(diff <= TOL_FD * norm + FD_FLOOR * sqrt((double)n)))
        fail_msg("%s: reference against central differences: |g - fd| %.3e, |fd| %.3e (seed %llu)",
                 what, diff, norm, (unsigned long long)tu_seed());
    free(fd);
}

/* ---------------------------------------------------------------- dense */

typedef struct {
    size_t rows, in, out;
    double *x, *w, *b, *dy;
} dense_ctx;

static double dense_loss(void *p)
{
    dense_ctx *c = p;
    double *y = tu_f64(c->rows * c->out);
    la_train_ref_dense_forward(c->rows, c->in, c->out, c->x, c->w, c->b, y);
    const double l = dot(y, c->dy, c->rows * c->out);
    free(y);
    return l;
}

static void dense(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("dense");
    /* 70 rows: the forward's transposed copy of W (dense.c, from 64 rows); fewer: W read
     * in place */
    const size_t shapes[][3] = {{7, 5, 3}, {1, 1, 1}, {33, 17, 9}, {70, 13, 11}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int bias = 0; bias < 2; bias++) {
            const size_t R = shapes[si][0], I = shapes[si][1], O = shapes[si][2];
            float *x32, *w32, *b32, *dy32, *g0_32, *gb0_32;
            double *b = draw(&r, O, 1, &b32);
            dense_ctx c = {R,
                           I,
                           O,
                           draw(&r, R * I, 1, &x32),
                           draw(&r, O * I, 1, &w32),
                           bias ? b : NULL,
                           draw(&r, R * O, 1, &dy32)};
            /* gradients start from g0 (they are added to) */
            double *g0 = draw(&r, O * I, 1, &g0_32), *gb0 = draw(&r, O, 1, &gb0_32);
            double *y = tu_f64(R * O), *y_ref = tu_f64(R * O), *dx = tu_f64(R * I),
                   *dx_ref = tu_f64(R * I), *dw = copy64(g0, O * I), *dw_ref = copy64(g0, O * I),
                   *db = copy64(gb0, O), *db_ref = copy64(gb0, O);
            la_train_ref_dense_forward(R, I, O, c.x, c.w, c.b, y_ref);
            la_train_ref_dense_backward(R, I, O, c.x, c.w, c.dy, dx_ref, dw_ref,
                                        bias ? db_ref : NULL);
            /* float64 */
            assert_int_equal(la_train_dense_forward_f64(R, I, O, c.x, c.w, c.b, y), LA_OK);
            assert_int_equal(
                la_train_dense_backward_f64(R, I, O, c.x, c.w, c.dy, dx, dw, bias ? db : NULL),
                LA_OK);
            /* float32 */
            float *y32 = tu_f32(R * O), *dx32 = tu_f32(R * I);
            assert_int_equal(la_train_dense_forward_f32(R, I, O, x32, w32, bias ? b32 : NULL, y32),
                             LA_OK);
            assert_int_equal(la_train_dense_backward_f32(R, I, O, x32, w32, dy32, dx32, g0_32,
                                                         bias ? gb0_32 : NULL),
                             LA_OK);
            double *ax = abs64(c.x, R * I), *aw = abs64(c.w, O * I), *ab = abs64(b, O),
                   *ady = abs64(c.dy, R * O), *ty = tu_f64(R * O), *tdx = tu_f64(R * I),
                   *tdw = abs64(g0, O * I), *tdb = abs64(gb0, O);
            la_train_ref_dense_forward(R, I, O, ax, aw, bias ? ab : NULL, ty);
            la_train_ref_dense_backward(R, I, O, ax, aw, ady, tdx, tdw, bias ? tdb : NULL);
            check_terms_f64(y, y_ref, ty, 0, R * O, "dense f64 y, rows %zu in %zu out %zu", R, I,
                            O);
            check_terms_f64(dx, dx_ref, tdx, 0, R * I, "dense f64 dx");
            check_terms_f64(dw, dw_ref, tdw, 0, O * I, "dense f64 dw");
            check_terms_f64(db, db_ref, tdb, 0, O, "dense f64 db");
            check_terms_f32(y32, y_ref, ty, 0, R * O, "dense f32 y, rows %zu in %zu out %zu", R, I,
                            O);
            check_terms_f32(dx32, dx_ref, tdx, 0, R * I, "dense f32 dx");
            check_terms_f32(g0_32, dw_ref, tdw, 0, O * I, "dense f32 dw");
            check_terms_f32(gb0_32, db_ref, tdb, 0, O, "dense f32 db");
            free(ax), free(aw), free(ab), free(ady), free(ty), free(tdx), free(tdw), free(tdb);
            /* the reference against central differences (from zero) */
            double *zw = tu_f64(O * I), *zb = tu_f64(O);
            memset(zw, 0, O * I * sizeof *zw);
            memset(zb, 0, O * sizeof *zb);
            la_train_ref_dense_backward(R, I, O, c.x, c.w, c.dy, dx_ref, zw, zb);
            check_fd(dense_loss, &c, c.x, R * I, dx_ref, "dense dx");
            check_fd(dense_loss, &c, c.w, O * I, zw, "dense dw");
            if (bias) check_fd(dense_loss, &c, c.b, O, zb, "dense db");
            free(zw), free(zb), free(y32), free(dx32), free(y), free(y_ref), free(dx);
            free(dx_ref), free(dw), free(dw_ref), free(db), free(db_ref), free(g0), free(gb0);
            free(g0_32), free(gb0_32), free(x32), free(w32), free(b32), free(dy32);
            free(c.x), free(c.w), free(b), free(c.dy);
        }
}

/* ---------------------------------------------------------------- LayerNorm */

typedef struct {
    size_t rows, d;
    double *x, *gamma, *beta, *dy, eps;
} ln_ctx;

static double ln_loss(void *p)
{
    ln_ctx *c = p;
    double *y = tu_f64(c->rows * c->d);
    la_train_ref_layer_norm_forward(c->rows, c->d, c->x, c->gamma, c->beta, c->eps, y);
    const double l = dot(y, c->dy, c->rows * c->d);
    free(y);
    return l;
}

/* The size of the terms of each LayerNorm output (check_terms), from the definitions
 * x̂ = (x − μ)·r, r = 1/√(σ² + eps); y = x̂∘γ + β; with g = dy∘γ, dx = r·(g − mean(g) −
 * x̂·mean(g∘x̂)), dγ += Σ dy∘x̂, dβ += Σ dy; each difference and sum replaced by the sum of
 * absolute values (x̂ by (|x| + |μ|)·r). dg and db hold what the gradients are added to. */
static void ln_terms(const ln_ctx *c, double *y, double *dx, double *dg, double *db)
{
    const size_t R = c->rows, d = c->d;
    double *xt = tu_f64(d), *gt = tu_f64(d);
    for (size_t e = 0; e < d; e++)
        dg[e] = fabs(dg[e]), db[e] = fabs(db[e]);
    for (size_t i = 0; i < R; i++) {
        const double *x = c->x + i * d, *dy = c->dy + i * d;
        double mu = 0, var = 0, mg = 0, mgx = 0;
        for (size_t e = 0; e < d; e++)
            mu += x[e] / (double)d;
        for (size_t e = 0; e < d; e++)
            var += (x[e] - mu) * (x[e] - mu) / (double)d;
        const double rstd = 1 / sqrt(var + c->eps);
        for (size_t e = 0; e < d; e++) {
            xt[e] = (fabs(x[e]) + fabs(mu)) * rstd;
            gt[e] = fabs(dy[e] * c->gamma[e]);
            mg += gt[e] / (double)d;
            mgx += gt[e] * xt[e] / (double)d;
            y[i * d + e] = xt[e] * fabs(c->gamma[e]) + fabs(c->beta[e]);
            dg[e] += fabs(dy[e]) * xt[e];
            db[e] += fabs(dy[e]);
        }
        for (size_t e = 0; e < d; e++)
            dx[i * d + e] = rstd * (gt[e] + mg + xt[e] * mgx);
    }
    free(xt), free(gt);
}

static void layer_norm(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("layer_norm");
    const size_t shapes[][2] = {{6, 9}, {1, 3}, {40, 33}};
    for (size_t si = 0; si < 3; si++) {
        const size_t R = shapes[si][0], d = shapes[si][1];
        float *x32, *g32, *b32, *dy32, *dg32, *db32;
        ln_ctx c = {R,
                    d,
                    draw(&r, R * d, 2, &x32),
                    draw(&r, d, 1, &g32),
                    draw(&r, d, 1, &b32),
                    draw(&r, R * d, 1, &dy32),
                    1e-5};
        double *dg0 = draw(&r, d, 1, &dg32), *db0 = draw(&r, d, 1, &db32);
        double *y = tu_f64(R * d), *y_ref = tu_f64(R * d), *dx = tu_f64(R * d),
               *dx_ref = tu_f64(R * d), *dg = copy64(dg0, d), *dg_ref = copy64(dg0, d),
               *db = copy64(db0, d), *db_ref = copy64(db0, d), *mean = tu_f64(R), *rstd = tu_f64(R);
        la_train_ref_layer_norm_forward(R, d, c.x, c.gamma, c.beta, c.eps, y_ref);
        la_train_ref_layer_norm_backward(R, d, c.x, c.gamma, c.eps, c.dy, dx_ref, dg_ref, db_ref);
        assert_int_equal(
            la_train_layer_norm_forward_f64(R, d, c.x, c.gamma, c.beta, c.eps, y, mean, rstd),
            LA_OK);
        assert_int_equal(
            la_train_layer_norm_backward_f64(R, d, c.x, c.gamma, mean, rstd, c.dy, dx, dg, db),
            LA_OK);
        double *ty = tu_f64(R * d), *tdx = tu_f64(R * d), *tdg = copy64(dg0, d),
               *tdb = copy64(db0, d);
        ln_terms(&c, ty, tdx, tdg, tdb);
        check_terms_f64(y, y_ref, ty, 0, R * d, "layer norm f64 y, rows %zu d %zu", R, d);
        check_terms_f64(dx, dx_ref, tdx, 0, R * d, "layer norm f64 dx, rows %zu d %zu", R, d);
        check_terms_f64(dg, dg_ref, tdg, 0, d, "layer norm f64 dgamma, rows %zu d %zu", R, d);
        check_terms_f64(db, db_ref, tdb, 0, d, "layer norm f64 dbeta, rows %zu d %zu", R, d);
        float *y32 = tu_f32(R * d), *dx32 = tu_f32(R * d);
        assert_int_equal(
            la_train_layer_norm_forward_f32(R, d, x32, g32, b32, c.eps, y32, mean, rstd), LA_OK);
        /* dx may be dy: in place */
        memcpy(dx32, dy32, R * d * sizeof *dx32);
        assert_int_equal(
            la_train_layer_norm_backward_f32(R, d, x32, g32, mean, rstd, dx32, dx32, dg32, db32),
            LA_OK);
        check_terms_f32(y32, y_ref, ty, 0, R * d, "layer norm f32 y, rows %zu d %zu", R, d);
        check_terms_f32(dx32, dx_ref, tdx, 0, R * d, "layer norm f32 dx (in place), rows %zu d %zu",
                        R, d);
        check_terms_f32(dg32, dg_ref, tdg, 0, d, "layer norm f32 dgamma, rows %zu d %zu", R, d);
        check_terms_f32(db32, db_ref, tdb, 0, d, "layer norm f32 dbeta, rows %zu d %zu", R, d);
        free(ty), free(tdx), free(tdg), free(tdb);
        if (R * d < 100) {
            double *zg = tu_f64(d), *zb = tu_f64(d);
            memset(zg, 0, d * sizeof *zg);
            memset(zb, 0, d * sizeof *zb);
            la_train_ref_layer_norm_backward(R, d, c.x, c.gamma, c.eps, c.dy, dx_ref, zg, zb);
            check_fd(ln_loss, &c, c.x, R * d, dx_ref, "layer norm dx");
            check_fd(ln_loss, &c, c.gamma, d, zg, "layer norm dgamma");
            check_fd(ln_loss, &c, c.beta, d, zb, "layer norm dbeta");
            free(zg), free(zb);
        }
        free(y32), free(dx32), free(y), free(y_ref), free(dx), free(dx_ref), free(dg);
        free(dg_ref), free(db), free(db_ref), free(mean), free(rstd), free(dg0), free(db0);
        free(c.x), free(c.gamma), free(c.beta), free(c.dy);
        free(x32), free(g32), free(b32), free(dy32), free(dg32), free(db32);
    }
}

/* ---------------------------------------------------------------- activations, FFN */

/* Values away from ReLU's kink (|x| >= 0.1), so central differences never cross it. */
static void off_kink(double *x, float *x32, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        x[i] = x[i] < 0 ? x[i] - 0.1 : x[i] + 0.1;
        x32[i] = (float)x[i];
        x[i] = x32[i];
    }
}

static void activations(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("activations");
    const size_t n = 200;
    for (int gelu = 0; gelu < 2; gelu++) {
        float *x32, *g32;
        double *x = draw(&r, n, 2, &x32), *g = draw(&r, n, 1, &g32);
        off_kink(x, x32, n);
        double *y = tu_f64(n), *dx = tu_f64(n), *ref = tu_f64(n), *dref = tu_f64(n);
        float *y32 = tu_f32(n), *dx32 = tu_f32(n);
        /* the definition, and its derivative by central differences of it */
        for (size_t i = 0; i < n; i++) {
            const double t = x[i];
            ref[i] = gelu ? 0.5 * t * erfc(-t / sqrt(2.0)) : fmax(t, 0);
            const double h = 1e-6, up = t + h, down = t - h;
            const double fu = gelu ? 0.5 * up * erfc(-up / sqrt(2.0)) : fmax(up, 0),
                         fd = gelu ? 0.5 * down * erfc(-down / sqrt(2.0)) : fmax(down, 0);
            dref[i] = g[i] * (fu - fd) / (2 * h);
        }
        assert_int_equal(la_train_activation_forward_f64(n, gelu, x, y), LA_OK);
        assert_int_equal(la_train_activation_backward_f64(n, gelu, x, g, dx), LA_OK);
        tu_assert_close_f64(y, ref, n, TOL_F64, "activation %d f64", gelu);
        tu_assert_close_f64(dx, dref, n, TOL_FD, "activation %d f64 backward", gelu);
        assert_int_equal(la_train_activation_forward_f32(n, gelu, x32, y32), LA_OK);
        assert_int_equal(la_train_activation_backward_f32(n, gelu, x32, g32, dx32), LA_OK);
        tu_assert_close_f32(y32, ref, n, TOL_F32, "activation %d f32", gelu);
        tu_assert_close_f32(dx32, dref, n, TOL_F32, "activation %d f32 backward", gelu);
        free(x), free(g), free(y), free(dx), free(ref), free(dref), free(y32), free(dx32);
        free(x32), free(g32);
    }
}

typedef struct {
    size_t rows, d, f;
    int gelu;
    double *x, *w1, *b1, *w2, *b2, *dy;
} ffn_ctx;

static double ffn_loss(void *p)
{
    ffn_ctx *c = p;
    double *y = tu_f64(c->rows * c->d);
    la_train_ref_ffn_forward(c->rows, c->d, c->f, c->gelu, c->x, c->w1, c->b1, c->w2, c->b2, y);
    const double l = dot(y, c->dy, c->rows * c->d);
    free(y);
    return l;
}

static void ffn(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("ffn");
    const size_t shapes[][3] = {{6, 5, 11}, {1, 1, 1}, {70, 24, 40}};
    for (size_t si = 0; si < 3; si++)
        for (int gelu = 0; gelu < 2; gelu++) {
            const size_t R = shapes[si][0], d = shapes[si][1], F = shapes[si][2];
            float *x32, *w1_32, *b1_32, *w2_32, *b2_32, *dy32;
            ffn_ctx c = {R,
                         d,
                         F,
                         gelu,
                         draw(&r, R * d, 1, &x32),
                         draw(&r, F * d, 1, &w1_32),
                         draw(&r, F, 1, &b1_32),
                         draw(&r, d * F, 1, &w2_32),
                         draw(&r, d, 1, &b2_32),
                         draw(&r, R * d, 1, &dy32)};
            /* keep every pre-activation off ReLU's kink: shift b1 where one lands near 0 */
            for (int pass = 0; pass < 8; pass++)
                for (size_t i = 0; i < R; i++)
                    for (size_t f = 0; f < F; f++) {
                        double s = c.b1[f];
                        for (size_t e = 0; e < d; e++)
                            s += c.x[i * d + e] * c.w1[f * d + e];
                        if (fabs(s) < 1e-3) {
                            b1_32[f] += 0.01f;
                            c.b1[f] = b1_32[f];
                        }
                    }
            const size_t nx = R * d, n1 = F * d;
            double *y = tu_f64(nx), *y_ref = tu_f64(nx), *dx = tu_f64(nx), *dx_ref = tu_f64(nx);
            double *pre = tu_f64(R * F);
            double *g[4], *g_ref[4], *g0[4]; /* g0: what the gradients are added to */
            float *g32[4];
            const size_t gn[4] = {n1, F, n1, d};
            for (int t = 0; t < 4; t++) {
                g_ref[t] = draw(&r, gn[t], 1, &g32[t]);
                g[t] = copy64(g_ref[t], gn[t]);
                g0[t] = copy64(g_ref[t], gn[t]);
            }
            la_train_ref_ffn_forward(R, d, F, gelu, c.x, c.w1, c.b1, c.w2, c.b2, y_ref);
            la_train_ref_ffn_backward(R, d, F, gelu, c.x, c.w1, c.b1, c.w2, c.dy, dx_ref, g_ref[0],
                                      g_ref[1], g_ref[2], g_ref[3]);
            assert_int_equal(
                la_train_ffn_forward_f64(R, d, F, gelu, c.x, c.w1, c.b1, c.w2, c.b2, pre, y),
                LA_OK);
            assert_int_equal(la_train_ffn_backward_f64(R, d, F, gelu, c.x, c.w1, c.w2, pre, c.dy,
                                                       dx, g[0], g[1], g[2], g[3]),
                             LA_OK);
            static const char *const names[4] = {"dw1", "db1", "dw2", "db2"};
            float *y32 = tu_f32(nx), *dx32 = tu_f32(nx), *pre32 = tu_f32(R * F);
            assert_int_equal(la_train_ffn_forward_f32(R, d, F, gelu, x32, w1_32, b1_32, w2_32,
                                                      b2_32, pre32, y32),
                             LA_OK);
            assert_int_equal(la_train_ffn_backward_f32(R, d, F, gelu, x32, w1_32, w2_32, pre32,
                                                       dy32, dx32, g32[0], g32[1], g32[2], g32[3]),
                             LA_OK);
            double *a[6] = {abs64(c.x, nx),  abs64(c.w1, n1), abs64(c.b1, F),
                            abs64(c.w2, n1), abs64(c.b2, d),  abs64(c.dy, nx)};
            double *ty = tu_f64(nx), *tdx = tu_f64(nx), *tg[4];
            for (int t = 0; t < 4; t++)
                tg[t] = abs64(g0[t], gn[t]);
            la_train_ref_ffn_forward(R, d, F, gelu, a[0], a[1], a[2], a[3], a[4], ty);
            la_train_ref_ffn_backward(R, d, F, gelu, a[0], a[1], a[2], a[3], a[5], tdx, tg[0],
                                      tg[1], tg[2], tg[3]);
            check_terms_f64(y, y_ref, ty, 0, nx, "ffn f64 y, gelu %d, rows %zu d %zu d_ff %zu",
                            gelu, R, d, F);
            check_terms_f64(dx, dx_ref, tdx, 0, nx, "ffn f64 dx, gelu %d, rows %zu d %zu d_ff %zu",
                            gelu, R, d, F);
            for (int t = 0; t < 4; t++)
                check_terms_f64(g[t], g_ref[t], tg[t], 0, gn[t],
                                "ffn f64 %s, gelu %d, rows %zu d %zu d_ff %zu", names[t], gelu, R,
                                d, F);
            check_terms_f32(y32, y_ref, ty, 0, nx, "ffn f32 y, gelu %d, rows %zu d %zu d_ff %zu",
                            gelu, R, d, F);
            check_terms_f32(dx32, dx_ref, tdx, 0, nx,
                            "ffn f32 dx, gelu %d, rows %zu d %zu d_ff %zu", gelu, R, d, F);
            for (int t = 0; t < 4; t++)
                check_terms_f32(g32[t], g_ref[t], tg[t], 0, gn[t],
                                "ffn f32 %s, gelu %d, rows %zu d %zu d_ff %zu", names[t], gelu, R,
                                d, F);
            for (int t = 0; t < 6; t++)
                free(a[t]);
            for (int t = 0; t < 4; t++)
                free(tg[t]), free(g0[t]);
            free(ty), free(tdx);
            if (nx < 100) {
                double *z[4];
                for (int t = 0; t < 4; t++) {
                    z[t] = tu_f64(gn[t]);
                    memset(z[t], 0, gn[t] * sizeof *z[t]);
                }
                la_train_ref_ffn_backward(R, d, F, gelu, c.x, c.w1, c.b1, c.w2, c.dy, dx_ref, z[0],
                                          z[1], z[2], z[3]);
                check_fd(ffn_loss, &c, c.x, nx, dx_ref, "ffn dx");
                check_fd(ffn_loss, &c, c.w1, n1, z[0], "ffn dw1");
                check_fd(ffn_loss, &c, c.b1, F, z[1], "ffn db1");
                check_fd(ffn_loss, &c, c.w2, n1, z[2], "ffn dw2");
                check_fd(ffn_loss, &c, c.b2, d, z[3], "ffn db2");
                for (int t = 0; t < 4; t++)
                    free(z[t]);
            }
            for (int t = 0; t < 4; t++)
                free(g[t]), free(g_ref[t]), free(g32[t]);
            free(y), free(y_ref), free(dx), free(dx_ref), free(pre), free(y32), free(dx32);
            free(pre32), free(c.x), free(c.w1), free(c.b1), free(c.w2), free(c.b2), free(c.dy);
            free(x32), free(w1_32), free(b1_32), free(w2_32), free(b2_32), free(dy32);
        }
}

/* ---------------------------------------------------------------- attention */

typedef struct {
    la_kernel kernel;
    la_problem p;
    double *x, *in_w, *in_b, *out_w, *out_b, *dy;
} mha_ctx;

static double mha_loss(void *ptr)
{
    mha_ctx *c = ptr;
    const size_t n = c->p.batch * c->p.n_queries * c->p.heads * c->p.d_k;
    double *y = tu_f64(n);
    assert_int_equal(
        la_train_ref_mha_forward(c->kernel, &c->p, c->x, c->in_w, c->in_b, c->out_w, c->out_b, y),
        LA_OK);
    const double l = dot(y, c->dy, n);
    free(y);
    return l;
}

static double norm(const double *x, size_t n)
{
    return sqrt(dot(x, x, n));
}

/* Attention's d_q and d_k are differences of terms even on absolute inputs (softmax:
 * P ∘ (dP − Δ); linear: (Σ φ(k)·(v·d_o) − Σ φ(k)·(o·d_o)) / z), exactly 0 with one key, so
 * float32 leaves rounding of the size of their terms where the reference has almost
 * nothing. Their yardsticks (tests/yardsticks.c, those the kernel tests hold d_q and d_k
 * to), carried through the input projection by the norm bound ‖A·B‖ <= ‖A‖‖B‖:
 *   extra[0] for dx = d_q W_q + d_k W_k + d_v W_v:  Y_q ‖W_q‖ + Y_k ‖W_k‖;
 *   extra[1] for d_in_w's rows of q and k (d_qᵀ x):  (Y_q + Y_k) ‖x‖;
 *   extra[2] for d_in_b's (Σ over the B·N rows):   (Y_q + Y_k) √(B·N).
 * qkvo are the float64 forward's q, k, v, o, (B, H, N, d_h) each. */
static void mha_qk_yardsticks(const mha_ctx *c, const double *qkvo, double extra[3])
{
    const size_t B = c->p.batch, H = c->p.heads, N = c->p.n_queries, dh = c->p.d_k, D = H * dh,
                 n = B * N * D;
    double *d_o = tu_f64(n); /* dy · W_out, (B, N, D) to (B, H, N, d_h) */
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < D; j++) {
                double t = 0;
                for (size_t e = 0; e < D; e++)
                    t += c->dy[(b * N + i) * D + e] * c->out_w[e * D + j];
                d_o[((b * H + j / dh) * N + i) * dh + j % dh] = t;
            }
    const tu_backward tb = {qkvo, qkvo + n, qkvo + 2 * n, qkvo + 3 * n, d_o};
    double y[2];
    assert_true(tu_gradient_yardsticks(la_kernel_get(c->kernel), &c->p, &tb, y));
    extra[0] = y[0] * norm(c->in_w, D * D) + y[1] * norm(c->in_w + D * D, D * D);
    extra[1] = (y[0] + y[1]) * norm(c->x, n);
    extra[2] = (y[0] + y[1]) * sqrt((double)(B * N));
    free(d_o);
}

static void mha(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("mha");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_SOFTMAX_MATERIALIZED,
                                 LA_KERNEL_LINEAR};
    /* B, H, N, d_h */
    const size_t shapes[][4] = {{2, 2, 5, 3}, {1, 1, 1, 1}, {2, 3, 37, 8}};
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t si = 0; si < 3; si++)
            for (int causal = 0; causal < 2; causal++) {
                const size_t B = shapes[si][0], H = shapes[si][1], N = shapes[si][2],
                             dh = shapes[si][3], D = H * dh, n = B * N * D;
                mha_ctx c = {.kernel = kernels[ki]};
                la_problem_init(&c.p, B, H, N, N, dh, dh);
                c.p.causal = causal;
                c.p.chunk = 4;
                float *f[6];
                c.x = draw(&r, n, 1, &f[0]);
                c.in_w = draw(&r, 3 * D * D, 1 / sqrt((double)D), &f[1]);
                c.in_b = draw(&r, 3 * D, 0.5, &f[2]);
                c.out_w = draw(&r, D * D, 1 / sqrt((double)D), &f[3]);
                c.out_b = draw(&r, D, 0.5, &f[4]);
                c.dy = draw(&r, n, 1, &f[5]);
                const size_t gn[4] = {3 * D * D, 3 * D, D * D, D}, hn = B * H * N;
                double *g[4], *g_ref[4], *g0[4]; /* g0: what the gradients are added to */
                float *g32[4];
                for (int t = 0; t < 4; t++) {
                    g_ref[t] = draw(&r, gn[t], 1, &g32[t]);
                    g[t] = copy64(g_ref[t], gn[t]);
                    g0[t] = copy64(g_ref[t], gn[t]);
                }
                const int lse = (la_kernel_get(c.kernel)->caps & LA_CAP_LSE) != 0;
                double *y = tu_f64(n), *y_ref = tu_f64(n), *dx = tu_f64(n), *dx_ref = tu_f64(n);
                double *s = tu_f64(4 * n + hn);
                float *s32 = tu_f32(4 * n + hn), *y32 = tu_f32(n), *dx32 = tu_f32(n);
                assert_int_equal(la_train_ref_mha_forward(c.kernel, &c.p, c.x, c.in_w, c.in_b,
                                                          c.out_w, c.out_b, y_ref),
                                 LA_OK);
                assert_int_equal(la_train_ref_mha_backward(c.kernel, &c.p, c.x, c.in_w, c.in_b,
                                                           c.out_w, c.dy, dx_ref, g_ref[0],
                                                           g_ref[1], g_ref[2], g_ref[3]),
                                 LA_OK);
                assert_int_equal(la_train_mha_forward_f64(c.kernel, &c.p, c.x, c.in_w, c.in_b,
                                                          c.out_w, c.out_b, s, s + n, s + 2 * n,
                                                          s + 3 * n, lse ? s + 4 * n : NULL, y),
                                 LA_OK);
                assert_int_equal(la_train_mha_backward_f64(c.kernel, &c.p, c.x, c.in_w, c.out_w, s,
                                                           s + n, s + 2 * n, s + 3 * n,
                                                           lse ? s + 4 * n : NULL, c.dy, dx, g[0],
                                                           g[1], g[2], g[3]),
                                 LA_OK);
                static const char *const names[4] = {"d_in_w", "d_in_b", "d_out_w", "d_out_b"};
                const char *kn = la_kernel_name(c.kernel);
                assert_int_equal(la_train_mha_forward_f32(
                                     c.kernel, &c.p, f[0], f[1], f[2], f[3], f[4], s32, s32 + n,
                                     s32 + 2 * n, s32 + 3 * n, lse ? s32 + 4 * n : NULL, y32),
                                 LA_OK);
                assert_int_equal(la_train_mha_backward_f32(c.kernel, &c.p, f[0], f[1], f[3], s32,
                                                           s32 + n, s32 + 2 * n, s32 + 3 * n,
                                                           lse ? s32 + 4 * n : NULL, f[5], dx32,
                                                           g32[0], g32[1], g32[2], g32[3]),
                                 LA_OK);
                double *a[6] = {abs64(c.x, n),         abs64(c.in_w, gn[0]),  abs64(c.in_b, gn[1]),
                                abs64(c.out_w, gn[2]), abs64(c.out_b, gn[3]), abs64(c.dy, n)};
                double *ty = tu_f64(n), *tdx = tu_f64(n), *tg[4];
                for (int t = 0; t < 4; t++)
                    tg[t] = abs64(g0[t], gn[t]);
                assert_int_equal(
                    la_train_ref_mha_forward(c.kernel, &c.p, a[0], a[1], a[2], a[3], a[4], ty),
                    LA_OK);
                assert_int_equal(la_train_ref_mha_backward(c.kernel, &c.p, a[0], a[1], a[2], a[3],
                                                           a[5], tdx, tg[0], tg[1], tg[2], tg[3]),
                                 LA_OK);
                double extra[3];
                mha_qk_yardsticks(&c, s, extra);
                check_terms_f64(y, y_ref, ty, 0, n,
                                "mha %s f64 y, B %zu H %zu N %zu d_h %zu causal %d", kn, B, H, N,
                                dh, causal);
                check_terms_f64(dx, dx_ref, tdx, extra[0], n,
                                "mha %s f64 dx, B %zu H %zu N %zu d_h %zu causal %d", kn, B, H, N,
                                dh, causal);
                for (int t = 0; t < 4; t++)
                    check_terms_f64(g[t], g_ref[t], tg[t], t < 2 ? extra[1 + t] : 0, gn[t],
                                    "mha %s f64 %s, B %zu H %zu N %zu d_h %zu causal %d", kn,
                                    names[t], B, H, N, dh, causal);
                check_terms_f32(y32, y_ref, ty, 0, n,
                                "mha %s f32 y, B %zu H %zu N %zu d_h %zu causal %d", kn, B, H, N,
                                dh, causal);
                check_terms_f32(dx32, dx_ref, tdx, extra[0], n,
                                "mha %s f32 dx, B %zu H %zu N %zu d_h %zu causal %d", kn, B, H, N,
                                dh, causal);
                for (int t = 0; t < 4; t++)
                    check_terms_f32(g32[t], g_ref[t], tg[t], t < 2 ? extra[1 + t] : 0, gn[t],
                                    "mha %s f32 %s, B %zu H %zu N %zu d_h %zu causal %d", kn,
                                    names[t], B, H, N, dh, causal);
                for (int t = 0; t < 6; t++)
                    free(a[t]);
                for (int t = 0; t < 4; t++)
                    free(tg[t]), free(g0[t]);
                free(ty), free(tdx);
                if (n <= 60) {
                    double *z[4];
                    for (int t = 0; t < 4; t++) {
                        z[t] = tu_f64(gn[t]);
                        memset(z[t], 0, gn[t] * sizeof *z[t]);
                    }
                    assert_int_equal(la_train_ref_mha_backward(c.kernel, &c.p, c.x, c.in_w, c.in_b,
                                                               c.out_w, c.dy, dx_ref, z[0], z[1],
                                                               z[2], z[3]),
                                     LA_OK);
                    check_fd(mha_loss, &c, c.x, n, dx_ref, "mha dx");
                    check_fd(mha_loss, &c, c.in_w, gn[0], z[0], "mha d_in_w");
                    check_fd(mha_loss, &c, c.in_b, gn[1], z[1], "mha d_in_b");
                    check_fd(mha_loss, &c, c.out_w, gn[2], z[2], "mha d_out_w");
                    check_fd(mha_loss, &c, c.out_b, gn[3], z[3], "mha d_out_b");
                    for (int t = 0; t < 4; t++)
                        free(z[t]);
                }
                for (int t = 0; t < 4; t++)
                    free(g[t]), free(g_ref[t]), free(g32[t]);
                for (int t = 0; t < 6; t++)
                    free(f[t]);
                free(y), free(y_ref), free(dx), free(dx_ref), free(s), free(s32), free(y32);
                free(dx32), free(c.x), free(c.in_w), free(c.in_b), free(c.out_w), free(c.out_b);
                free(c.dy);
            }
}

/* ---------------------------------------------------------------- embedding */

static void embedding(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("embedding");
    const size_t B = 3, N = 6, V = 5, d = 10;
    int32_t tok[18];
    for (size_t i = 0; i < B * N; i++)
        tok[i] = (int32_t)(tu_next(&r) % V); /* 18 tokens of 5: repeats */
    for (int learned = 0; learned < 2; learned++) {
        float *t32, *p32, *dx32, *dt32, *dp32;
        double *table = draw(&r, V * d, 1, &t32), *pos = draw(&r, N * d, 1, &p32);
        double *dx = draw(&r, B * N * d, 1, &dx32);
        double *dt0 = draw(&r, V * d, 1, &dt32), *dp0 = draw(&r, N * d, 1, &dp32);
        double *x = tu_f64(B * N * d), *x_ref = tu_f64(B * N * d);
        double *dt = copy64(dt0, V * d), *dt_ref = copy64(dt0, V * d);
        double *dp = copy64(dp0, N * d), *dp_ref = copy64(dp0, N * d);
        float *x32 = tu_f32(B * N * d);
        const double *P = learned ? pos : NULL;
        la_train_ref_embedding_forward(B, N, d, tok, table, P, x_ref);
        la_train_ref_embedding_backward(B, N, d, tok, dx, dt_ref, learned ? dp_ref : NULL);
        assert_int_equal(la_train_embedding_forward_f64(B, N, V, d, tok, table, P, x), LA_OK);
        assert_int_equal(
            la_train_embedding_backward_f64(B, N, V, d, tok, dx, dt, learned ? dp : NULL), LA_OK);
        tu_assert_close_f64(x, x_ref, B * N * d, TOL_F64, "embedding f64 x, learned %d", learned);
        tu_assert_close_f64(dt, dt_ref, V * d, TOL_F64, "embedding f64 d_table");
        tu_assert_close_f64(dp, dp_ref, N * d, TOL_F64, "embedding f64 d_pos");
        assert_int_equal(
            la_train_embedding_forward_f32(B, N, V, d, tok, t32, learned ? p32 : NULL, x32), LA_OK);
        assert_int_equal(
            la_train_embedding_backward_f32(B, N, V, d, tok, dx32, dt32, learned ? dp32 : NULL),
            LA_OK);
        tu_assert_close_f32(x32, x_ref, B * N * d, TOL_F32, "embedding f32 x, learned %d", learned);
        tu_assert_close_f32(dt32, dt_ref, V * d, TOL_F32, "embedding f32 d_table");
        tu_assert_close_f32(dp32, dp_ref, N * d, TOL_F32, "embedding f32 d_pos");
        free(table), free(pos), free(dx), free(dt0), free(dp0), free(x), free(x_ref), free(dt);
        free(dt_ref), free(dp), free(dp_ref), free(x32), free(t32), free(p32), free(dx32);
        free(dt32), free(dp32);
    }
}

/* ---------------------------------------------------------------- cross-entropy */

typedef struct {
    size_t rows, vocab;
    double *logits, scale;
    const int32_t *targets;
} ce_ctx;

static double ce_loss(void *p)
{
    ce_ctx *c = p;
    double *g = tu_f64(c->rows * c->vocab);
    const double l =
        la_train_ref_cross_entropy(c->rows, c->vocab, c->logits, c->targets, c->scale, g) *
        c->scale;
    free(g);
    return l;
}

static void cross_entropy(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("cross_entropy");
    const size_t R = 9, V = 6;
    int32_t tgt[9];
    size_t want_scored = 0;
    for (size_t i = 0; i < R; i++) {
        tgt[i] = i % 4 == 1 ? -1 : (int32_t)(tu_next(&r) % V);
        want_scored += tgt[i] >= 0;
    }
    float *l32;
    double *logits = draw(&r, R * V, 3, &l32);
    /* a row with a large spread (stability) and one with a tie at its maximum */
    logits[0] = 80, l32[0] = 80;
    logits[2 * V + 1] = logits[2 * V + 3] = 9, l32[2 * V + 1] = l32[2 * V + 3] = 9;
    const double scale = 1.0 / (double)want_scored;
    double *g_ref = tu_f64(R * V), *g = copy64(logits, R * V);
    const double want = la_train_ref_cross_entropy(R, V, logits, tgt, scale, g_ref);
    size_t want_correct = 0;
    for (size_t i = 0; i < R; i++) {
        if (tgt[i] < 0) continue;
        size_t arg = 0;
        for (size_t j = 1; j < V; j++)
            if (logits[i * V + j] > logits[i * V + arg]) arg = j;
        want_correct += arg == (size_t)tgt[i];
    }
    double sum;
    size_t correct, scored;
    assert_int_equal(la_train_cross_entropy_f64(R, V, g, tgt, scale, &sum, &correct, &scored),
                     LA_OK);
    tu_assert_close_f64(&sum, &want, 1, TOL_F64, "cross-entropy f64 loss");
    tu_assert_close_f64(g, g_ref, R * V, TOL_F64, "cross-entropy f64 gradient");
    assert_int_equal(scored, want_scored);
    assert_int_equal(correct, want_correct);
    assert_int_equal(la_train_cross_entropy_f32(R, V, l32, tgt, scale, &sum, &correct, &scored),
                     LA_OK);
    tu_assert_close_f64(&sum, &want, 1, TOL_F32, "cross-entropy f32 loss");
    tu_assert_close_f32(l32, g_ref, R * V, TOL_F32, "cross-entropy f32 gradient");
    assert_int_equal(correct, want_correct);
    ce_ctx c = {R, V, logits, scale, tgt};
    check_fd(ce_loss, &c, logits, R * V, g_ref, "cross-entropy");
    free(logits), free(g_ref), free(g), free(l32);
}

/* ---------------------------------------------------------------- threads, errors */

/* The attention layer, FFN and LayerNorm backward on 1 and 2 threads: the same bits. */
static void threads_bitwise(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("threads");
    const size_t B = 4, H = 4, N = 160, dh = 16, D = H * dh, n = B * N * D, F = 2 * D;
    la_problem p;
    la_problem_init(&p, B, H, N, N, dh, dh);
    p.causal = 1;
    float *f[7];
    double *tmp[7];
    const size_t sizes[7] = {n, 3 * D * D, 3 * D, D * D, D, n, F * D};
    for (int t = 0; t < 7; t++)
        tmp[t] = draw(&r, sizes[t], 0.3, &f[t]);
    const size_t gsize = 3 * D * D + 3 * D + D * D + D;
    float *out[2];
    for (int run = 0; run < 2; run++) {
        assert_int_equal(la_set_num_threads(run + 1), LA_OK);
        float *o = out[run] = tu_f32(6 * n + B * H * N + gsize + n * 4);
        memset(o, 0, (6 * n + B * H * N + gsize + n * 4) * sizeof *o);
        float *g = o + 6 * n + B * H * N, *ffn_pre = g + gsize;
        assert_int_equal(la_train_mha_forward_f32(LA_KERNEL_SOFTMAX, &p, f[0], f[1], f[2], f[3],
                                                  f[4], o, o + n, o + 2 * n, o + 3 * n, o + 6 * n,
                                                  o + 4 * n),
                         LA_OK);
        assert_int_equal(la_train_mha_backward_f32(LA_KERNEL_SOFTMAX, &p, f[0], f[1], f[3], o,
                                                   o + n, o + 2 * n, o + 3 * n, o + 6 * n, f[5],
                                                   o + 5 * n, g, g + 3 * D * D,
                                                   g + 3 * D * D + 3 * D, g + 4 * D * D + 3 * D),
                         LA_OK);
        /* FFN (d_ff = 2D, w2 = w1ᵀ's shape reused) into the last 4n: pre (2n), dx */
        assert_int_equal(la_train_ffn_forward_f32(B * N, D, F, 1, f[0], f[6], f[2], f[6], f[4],
                                                  ffn_pre, ffn_pre + 2 * n),
                         LA_OK);
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
    if (memcmp(out[0], out[1], (6 * n + B * H * N + gsize + n * 4) * sizeof(float)) != 0)
        fail_msg("1 and 2 threads differ (seed %llu)", (unsigned long long)tu_seed());
    for (int t = 0; t < 7; t++)
        free(tmp[t]), free(f[t]);
    free(out[0]), free(out[1]);
}

static void errors(void **state)
{
    (void)state;
    double x[16] = {0}, y[16] = {0}, m[4], s[4];
    int32_t tok[4] = {0, 1, 2, 3};
    assert_int_equal(la_train_dense_forward_f64(0, 2, 2, x, x, NULL, y), LA_EINVAL);
    assert_int_equal(la_train_dense_forward_f64(2, 2, 2, NULL, x, NULL, y), LA_EINVAL);
    assert_int_equal(la_train_dense_backward_f64(2, 2, 2, x, x, x, y, NULL, NULL), LA_EINVAL);
    assert_int_equal(la_train_dense_forward_f64(SIZE_MAX / 2, 4, 2, x, x, NULL, y), LA_EOVERFLOW);
    assert_int_equal(la_train_layer_norm_forward_f64(2, 2, x, x, x, 0, y, m, s), LA_EINVAL);
    assert_int_equal(la_train_layer_norm_forward_f64(2, 2, x, x, x, 1e-5, y, NULL, s), LA_EINVAL);
    assert_int_equal(la_train_activation_forward_f64(4, 2, x, y), LA_EINVAL);
    assert_int_equal(la_train_ffn_forward_f64(2, 2, 0, 0, x, x, x, x, x, y, y), LA_EINVAL);
    /* a token or target out of range */
    assert_int_equal(la_train_embedding_forward_f64(1, 4, 3, 2, tok, x, NULL, y), LA_EINVAL);
    assert_int_equal(la_train_embedding_backward_f64(1, 4, 4, 2, NULL, x, y, NULL), LA_EINVAL);
    double sum;
    size_t correct, scored;
    assert_int_equal(la_train_cross_entropy_f64(4, 3, y, tok, 1, &sum, &correct, &scored),
                     LA_EINVAL);
    /* attention: a kernel without a backward, lse given to a row without it, and missing */
    la_problem p;
    la_problem_init(&p, 1, 1, 2, 2, 2, 2);
    double q[4], big[16];
    assert_int_equal(la_train_mha_forward_f64(LA_KERNEL_LINFORMER, &p, x, big, big, big, big, q, q,
                                              q, q, NULL, y),
                     LA_EINVAL);
    assert_int_equal(
        la_train_mha_forward_f64(LA_KERNEL_LINEAR, &p, x, big, big, big, big, q, q, q, q, q, y),
        LA_EINVAL);
    assert_int_equal(
        la_train_mha_forward_f64(LA_KERNEL_SOFTMAX, &p, x, big, big, big, big, q, q, q, q, NULL, y),
        LA_EINVAL);
    p.n_keys = 1;
    assert_int_equal(
        la_train_mha_forward_f64(LA_KERNEL_LINEAR, &p, x, big, big, big, big, q, q, q, q, NULL, y),
        LA_EINVAL);
}

int main(void)
{
    tu_init("test_layers_backward");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense),         cmocka_unit_test(layer_norm),
        cmocka_unit_test(activations),   cmocka_unit_test(ffn),
        cmocka_unit_test(mha),           cmocka_unit_test(embedding),
        cmocka_unit_test(cross_entropy), cmocka_unit_test(threads_bitwise),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
