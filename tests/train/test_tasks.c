/* test_tasks.c — the training tasks' batches: each task's invariants (the copy equals its
 * source, MQAR's keys and values in disjoint halves, every query answered by the value
 * paired with it earlier, the gaps following their power law), the same seed giving the
 * same batches and another seed others, a stored generator state resuming the stream, and
 * the text task's refusals (a missing, empty or too short file). */
#include "../testutil.h"
#include "train/tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static la_train_task *make(la_train_task_config c)
{
    la_train_task *t = NULL;
    const char *why = NULL;
    la_status st = la_train_task_create(&c, &t, &why);
    if (st != LA_OK) fail_msg("la_train_task_create: %s (%s)", la_strerror(st), why);
    return t;
}

static la_train_rng rng_for(const char *label)
{
    tu_rng r = tu_rng_for(label);
    return la_train_rng_make(tu_next(&r));
}

/* ---------------------------------------------------------------- the generator */

/* below(n) is uniform: each of 7 values within 6 standard deviations of its count
 * (binomial, 70,000 draws: one count leaves 6 of them with probability 2.0e-9, so a right
 * generator fails about once in 7·10⁷ runs, against 4·10⁻⁶ at 5). One standard deviation
 * is 0.9% of the count: a value drawn 7% too often or too rarely nearly always fails, and a
 * generator that skips or doubles a value, or draws below(n) from fewer than n values, always. */
static void test_rng_below_uniform(void **state)
{
    (void)state;
    la_train_rng r = rng_for("rng_below");
    enum { DRAWS = 70000, N = 7 };
    size_t count[N] = {0};
    for (int i = 0; i < DRAWS; i++)
        count[la_train_rng_below(&r, N)]++;
    double mean = (double)DRAWS / N, sd = sqrt(DRAWS * (1.0 / N) * (1 - 1.0 / N));
    for (int v = 0; v < N; v++)
        if (fabs((double)count[v] - mean) > 6 * sd)
            fail_msg("value %d drawn %zu times, expected %.0f ± %.0f", v, count[v], mean, sd);
    assert_int_equal(r.counter >= DRAWS, 1);
}

/* A copy of the state continues the stream: the property a checkpoint relies on. */
static void test_rng_state_resumes(void **state)
{
    (void)state;
    la_train_rng r = rng_for("rng_resume");
    for (int i = 0; i < 100; i++)
        la_train_rng_next(&r);
    la_train_rng saved = {r.seed, r.counter};
    uint64_t a[16], b[16];
    for (int i = 0; i < 16; i++)
        a[i] = la_train_rng_next(&r);
    for (int i = 0; i < 16; i++)
        b[i] = la_train_rng_next(&saved);
    assert_memory_equal(a, b, sizeof a);
}

/* ---------------------------------------------------------------- copy */

static void test_copy_invariants(void **state)
{
    (void)state;
    enum { B = 64, N = 40 };
    la_train_task *t = make((la_train_task_config){.kind = LA_TRAIN_TASK_COPY, .seq_len = N});
    assert_int_equal(la_train_task_vocab(t), 12);
    int32_t tok[B * N], tgt[B * N];
    la_train_rng r = rng_for("copy");
    assert_int_equal(la_train_task_batch(t, &r, B, tok, tgt), LA_OK);
    size_t longest = 0;
    for (int b = 0; b < B; b++) {
        const int32_t *x = tok + b * N, *y = tgt + b * N;
        size_t len = 0;
        while (len < N && x[len] != 11)
            len++;
        if (len == 0 || len > N / 2) fail_msg("row %d: separator at %zu", b, len);
        if (len > longest) longest = len;
        for (size_t i = 0; i < len; i++)
            if (x[i] < 1 || x[i] > 10) fail_msg("row %d: symbol %d at %zu", b, x[i], i);
        /* the copy equals the source, and only the copied half is scored, each position
         * with the next token of the full stream */
        for (size_t i = 0; i < len; i++) {
            if (len + 1 + i < N && x[len + 1 + i] != x[i])
                fail_msg("row %d: copy %zu is %d, source %d", b, i, x[len + 1 + i], x[i]);
            if (y[len + i] != x[i])
                fail_msg("row %d: target %zu is %d, source %d", b, len + i, y[len + i], x[i]);
        }
        for (size_t i = 0; i < N; i++) {
            int scored = i >= len && i < 2 * len;
            if (!scored && y[i] != -1) fail_msg("row %d: position %zu scored", b, i);
            if (scored && i + 1 < N && y[i] != x[i + 1])
                fail_msg("row %d: target %zu is not the next token", b, i);
            if (i > 2 * len && x[i] != 0) fail_msg("row %d: padding %zu is %d", b, i, x[i]);
        }
    }
    /* lengths cover the range: some row of 64 is longer than a quarter of N */
    assert_true(longest > N / 4);
    la_train_task_free(t);
}

/* ---------------------------------------------------------------- recall */

static void test_recall_invariants(void **state)
{
    (void)state;
    enum { B = 32, N = 64, K = 8, V = 100 };
    la_train_task *t = make(
        (la_train_task_config){.kind = LA_TRAIN_TASK_RECALL, .seq_len = N, .pairs = K, .vocab = V});
    assert_int_equal(la_train_task_vocab(t), V);
    int32_t tok[B * N], tgt[B * N];
    la_train_rng r = rng_for("recall");
    assert_int_equal(la_train_task_batch(t, &r, B, tok, tgt), LA_OK);
    for (int b = 0; b < B; b++) {
        const int32_t *x = tok + b * N, *y = tgt + b * N;
        for (int j = 0; j < K; j++) {
            /* keys in 1..V/2-1, values in V/2..V-1, each key once */
            if (x[2 * j] < 1 || x[2 * j] >= V / 2) fail_msg("row %d: key %d", b, x[2 * j]);
            if (x[2 * j + 1] < V / 2 || x[2 * j + 1] >= V)
                fail_msg("row %d: value %d", b, x[2 * j + 1]);
            for (int i = 0; i < j; i++)
                if (x[2 * i] == x[2 * j]) fail_msg("row %d: key %d twice", b, x[2 * j]);
            if (y[2 * j] != -1 || y[2 * j + 1] != -1) fail_msg("row %d: pair scored", b);
        }
        int queries = 0;
        for (int i = 2 * K; i < N; i++) {
            if (x[i] < 0 || x[i] >= V) fail_msg("row %d: token %d out of range", b, x[i]);
            if (y[i] < 0) continue;
            queries++;
            /* a query sits at an even offset after the pairs, and its answer is the value
             * paired with its key */
            if ((i - 2 * K) % 2) fail_msg("row %d: query at odd offset %d", b, i);
            int j = 0;
            while (j < K && x[2 * j] != x[i])
                j++;
            if (j == K) fail_msg("row %d: query %d at %d is no key", b, x[i], i);
            if (y[i] != x[2 * j + 1])
                fail_msg("row %d: query %d answered %d, paired with %d", b, x[i], y[i],
                         x[2 * j + 1]);
        }
        if (queries != K) fail_msg("row %d: %d queries, want %d", b, queries, K);
    }
    la_train_task_free(t);
}

/* With one pair, the gap g (query at 2K + 2g) has probability ∝ (g + 1)^(a - 1): each
 * count within 6 standard deviations of its expectation, for Zoology's a = 0.01 and a
 * flatter a = 0.5. The 22 counts are binomial (4,000 draws; the rarest about 120): the
 * exact tails give a right sampler a failure about once in 8·10⁶ runs (at 5 standard
 * deviations, once in 50,000). Sampling with the other a moves the first count by 19
 * standard deviations or more, uniform gaps by 16 or more. */
static void test_recall_gaps_follow_power_law(void **state)
{
    (void)state;
    enum { N = 24, K = 1, SPACE = (N - 2 * K) / 2, B = 4000 };
    const double powers[] = {0.01, 0.5};
    int32_t *tok = tu_alloc(B * N * sizeof *tok), *tgt = tu_alloc(B * N * sizeof *tgt);
    for (int p = 0; p < 2; p++) {
        la_train_task *t = make((la_train_task_config){.kind = LA_TRAIN_TASK_RECALL,
                                                       .seq_len = N,
                                                       .pairs = K,
                                                       .vocab = 64,
                                                       .power_a = powers[p]});
        la_train_rng r = rng_for(p ? "gaps_half" : "gaps_zoology");
        assert_int_equal(la_train_task_batch(t, &r, B, tok, tgt), LA_OK);
        size_t count[SPACE] = {0};
        for (int b = 0; b < B; b++)
            for (int i = 2 * K; i < N; i++)
                if (tgt[b * N + i] >= 0) count[(i - 2 * K) / 2]++;
        double w[SPACE], total = 0;
        for (int g = 0; g < SPACE; g++)
            total += w[g] = pow(g + 1.0, powers[p] - 1);
        for (int g = 0; g < SPACE; g++) {
            double q = w[g] / total, mean = B * q, sd = sqrt(B * q * (1 - q));
            if (fabs((double)count[g] - mean) > 6 * sd)
                fail_msg("a = %g: gap %d drawn %zu times, expected %.1f ± %.1f", powers[p], g,
                         count[g], mean, sd);
        }
        la_train_task_free(t);
    }
    free(tok);
    free(tgt);
}

/* ---------------------------------------------------------------- every task */

/* The same seed gives the same batch, another seed another; a generator saved between
 * batches gives the next batch again; the evaluation set is the same at every call. */
static void check_determinism(la_train_task *t, size_t n)
{
    enum { B = 4 };
    int32_t *a = tu_alloc(2 * B * n * sizeof *a), *b = tu_alloc(2 * B * n * sizeof *b);
    tu_rng seeds = tu_rng_for("determinism");
    uint64_t s = tu_next(&seeds);
    la_train_rng r1 = la_train_rng_make(s), r2 = la_train_rng_make(s),
                 r3 = la_train_rng_make(s + 1);
    la_train_task_batch(t, &r1, B, a, a + B * n);
    la_train_task_batch(t, &r2, B, b, b + B * n);
    assert_memory_equal(a, b, 2 * B * n * sizeof *a);
    la_train_task_batch(t, &r3, B, b, b + B * n);
    assert_true(memcmp(a, b, B * n * sizeof *a) != 0);
    la_train_rng saved = r1;
    la_train_task_batch(t, &r1, B, a, a + B * n);
    la_train_task_batch(t, &saved, B, b, b + B * n);
    assert_memory_equal(a, b, 2 * B * n * sizeof *a);
    assert_int_equal(saved.counter, r1.counter);
    assert_true(la_train_task_eval_batches(t, B, 3) >= 1);
    assert_int_equal(la_train_task_eval_batch(t, s, 0, B, a, a + B * n), LA_OK);
    assert_int_equal(la_train_task_eval_batch(t, s, 0, B, b, b + B * n), LA_OK);
    assert_memory_equal(a, b, 2 * B * n * sizeof *a);
    free(a);
    free(b);
}

static char text_path[64];

static void write_text(const char *contents, size_t n)
{
    FILE *f = fopen(text_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(contents, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static void test_same_seed_same_batch(void **state)
{
    (void)state;
    la_train_task *t = make((la_train_task_config){.kind = LA_TRAIN_TASK_COPY, .seq_len = 32});
    check_determinism(t, 32);
    la_train_task_free(t);
    t = make((la_train_task_config){
        .kind = LA_TRAIN_TASK_RECALL, .seq_len = 32, .pairs = 4, .vocab = 64});
    check_determinism(t, 32);
    la_train_task_free(t);
    char text[4000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    write_text(text, sizeof text);
    t = make((la_train_task_config){.kind = LA_TRAIN_TASK_TEXT, .seq_len = 32, .data = text_path});
    check_determinism(t, 32);
    assert_int_equal(la_train_task_vocab(t), 256);
    la_train_task_free(t);
}

/* text: training windows are consecutive bytes of the file's first 90%, each target the
 * next byte; the evaluation covers the tail's windows and pads the last batch unscored. */
static void test_text_windows(void **state)
{
    (void)state;
    enum { SIZE = 1000, N = 16, B = 8 };
    char text[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        text[i] = (char)(i % 251);
    write_text(text, SIZE);
    la_train_task *t =
        make((la_train_task_config){.kind = LA_TRAIN_TASK_TEXT, .seq_len = N, .data = text_path});
    int32_t tok[B * N], tgt[B * N];
    la_train_rng r = rng_for("text");
    assert_int_equal(la_train_task_batch(t, &r, B, tok, tgt), LA_OK);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) {
            assert_int_equal(tgt[b * N + i], (tok[b * N + i] + 1) % 251);
            if (i) assert_int_equal(tok[b * N + i], tgt[b * N + i - 1]);
        }
    /* the tail: the last 100 bytes, (100 - 1) / 16 = 6 windows, in one batch of 8 */
    assert_int_equal(la_train_task_eval_batches(t, B, 100), 1);
    assert_int_equal(la_train_task_eval_batch(t, 0, 0, B, tok, tgt), LA_OK);
    assert_int_equal(tok[0], 900 % 251);
    assert_int_equal(tok[5 * N + N - 1], (900 + 6 * N - 1) % 251);
    for (int i = 6 * N; i < B * N; i++)
        assert_int_equal(tgt[i], -1);
    la_train_task_free(t);
}

static void expect_refused(la_train_task_config c, la_status want)
{
    la_train_task *t = (la_train_task *)&t;
    const char *why = NULL;
    la_status st = la_train_task_create(&c, &t, &why);
    if (st != want) fail_msg("status %s, want %s", la_strerror(st), la_strerror(want));
    assert_null(t);
    assert_non_null(why);
    assert_true(strlen(why) > 0);
}

static void test_refusals(void **state)
{
    (void)state;
    la_train_task_config text = {.kind = LA_TRAIN_TASK_TEXT, .seq_len = 16, .data = text_path};
    unlink(text_path);
    expect_refused(text, LA_EIO); /* missing */
    write_text("", 0);
    expect_refused(text, LA_EFORMAT); /* empty */
    write_text("0123456789012345678901234567890", 31);
    expect_refused(text, LA_EFORMAT); /* no window for the tail */
    text.data = "/";
    expect_refused(text, LA_EIO); /* a folder */
    expect_refused(
        (la_train_task_config){.kind = LA_TRAIN_TASK_COPY, .seq_len = 8, .copy_max_len = 5},
        LA_EINVAL);
    la_train_task_config recall = {
        .kind = LA_TRAIN_TASK_RECALL, .seq_len = 32, .pairs = 9, .vocab = 64};
    expect_refused(recall, LA_EINVAL); /* 4K > N */
    recall.pairs = 4;
    recall.vocab = 9;
    expect_refused(recall, LA_EINVAL); /* K > V/2 - 1 */
    recall.vocab = 64;
    recall.seq_len = 33;
    expect_refused(recall, LA_EINVAL); /* odd N */
}

int main(void)
{
    tu_init("test_tasks");
    snprintf(text_path, sizeof text_path, "/tmp/test_tasks_%ld.txt", (long)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_below_uniform),
        cmocka_unit_test(test_rng_state_resumes),
        cmocka_unit_test(test_copy_invariants),
        cmocka_unit_test(test_recall_invariants),
        cmocka_unit_test(test_recall_gaps_follow_power_law),
        cmocka_unit_test(test_same_seed_same_batch),
        cmocka_unit_test(test_text_windows),
        cmocka_unit_test(test_refusals),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(text_path);
    return failed;
}
