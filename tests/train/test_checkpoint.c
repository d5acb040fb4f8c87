/* test_checkpoint.c — a training checkpoint saved and loaded back bit for bit (parameters,
 * AdamW's moments and step, the generator, the settings), in float32 and float64; an old
 * checkpoint replaced whole with nothing left beside it; a folder that is not a checkpoint
 * never replaced; another configuration, a missing or misshapen tensor file and a malformed
 * checkpoint.txt refused with the model left as it was. */
#include "../testutil.h"
#include "train/checkpoint.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64], dir[128];

static la_train_config small_config(la_dtype dtype)
{
    la_train_config c;
    la_train_config_init(&c, 12, 8, 2, 16, 2, 6);
    c.dtype = dtype;
    return c;
}

static la_train_model *make_model(const la_train_config *c, uint64_t seed)
{
    la_train_model *m = NULL;
    assert_int_equal(la_train_model_create(&m, c, seed), LA_OK);
    return m;
}

/* An optimiser for m with moments filled from rng and step set. */
static void make_adamw(la_train_adamw *o, la_train_model *m, tu_rng *rng, size_t step)
{
    la_train_tensor *list;
    size_t count;
    assert_int_equal(la_train_model_tensors(m, &list, &count), LA_OK);
    la_train_adamw_config oc = la_train_adamw_defaults();
    la_dtype dtype = la_train_model_config(m)->dtype;
    assert_int_equal(la_train_adamw_init(o, &oc, dtype, list, count), LA_OK);
    for (size_t i = 0; i < count; i++) {
        double *x = tu_f64(list[i].numel);
        for (int p = 0; p < 2; p++) {
            tu_fill_normal(rng, x, list[i].numel, 1.0);
            void *to = p ? o->exp_avg_sq[i] : o->exp_avg[i];
            if (dtype == LA_FLOAT32)
                tu_to_f32(x, to, list[i].numel);
            else
                memcpy(to, x, list[i].numel * sizeof(double));
        }
        free(x);
    }
    o->step = step;
}

/* All the model's parameters and the moments, bytes, into one buffer (to compare). */
static unsigned char *snapshot(la_train_model *m, const la_train_adamw *o, size_t *bytes)
{
    la_train_tensor *list;
    size_t count, es = la_train_model_config(m)->dtype == LA_FLOAT64 ? 8 : 4, total = 0;
    la_train_model_tensors(m, &list, &count);
    for (size_t i = 0; i < count; i++)
        total += 3 * list[i].numel * es;
    unsigned char *buf = tu_alloc(total), *at = buf;
    for (size_t i = 0; i < count; i++) {
        size_t n = list[i].numel * es;
        memcpy(at, list[i].data, n);
        memcpy(at + n, o->exp_avg[i], n);
        memcpy(at + 2 * n, o->exp_avg_sq[i], n);
        at += 3 * n;
    }
    *bytes = total;
    return buf;
}

static size_t entries(const char *path)
{
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void round_trip(la_dtype dtype)
{
    tu_rng rng = tu_rng_for(dtype == LA_FLOAT64 ? "ckpt_f64" : "ckpt_f32");
    la_train_config c = small_config(dtype);
    la_train_model *m = make_model(&c, tu_next(&rng));
    la_train_adamw o;
    make_adamw(&o, m, &rng, 17);
    la_train_checkpoint_state s = {.step = 17, .rng = {tu_next(&rng), 12345}};
    assert_int_equal(la_train_checkpoint_set(&s, "task", "copy"), LA_OK);
    assert_int_equal(la_train_checkpoint_set(&s, "lr", "0.001"), LA_OK);
    const char *why = NULL;
    assert_int_equal(la_train_checkpoint_save(dir, m, &o, &s, &why), LA_OK);
    /* the folder alone beside it: no temporary left */
    assert_int_equal(entries(root), 1);

    la_train_model *back = make_model(&c, tu_next(&rng));
    la_train_adamw ob;
    make_adamw(&ob, back, &rng, 0);
    la_train_checkpoint_state sb;
    la_status st = la_train_checkpoint_load(dir, back, &ob, &sb, &why);
    if (st) fail_msg("load: %s (%s)", la_strerror(st), why);
    size_t n1, n2;
    unsigned char *a = snapshot(m, &o, &n1), *b = snapshot(back, &ob, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    assert_int_equal(ob.step, 17);
    assert_int_equal(sb.step, 17);
    assert_true(sb.rng.seed == s.rng.seed && sb.rng.counter == 12345);
    assert_string_equal(la_train_checkpoint_get(&sb, "task"), "copy");
    assert_string_equal(la_train_checkpoint_get(&sb, "lr"), "0.001");
    assert_null(la_train_checkpoint_get(&sb, "steps"));

    /* the weights alone (no optimiser, as generation loads them): m's, bit for bit */
    la_train_model *w = make_model(&c, tu_next(&rng));
    assert_int_equal(la_train_checkpoint_load(dir, w, NULL, &sb, &why), LA_OK);
    la_train_tensor *lm, *lw;
    size_t cm, cw;
    la_train_model_tensors(m, &lm, &cm);
    la_train_model_tensors(w, &lw, &cw);
    assert_int_equal(cm, cw);
    for (size_t i = 0; i < cm; i++)
        assert_memory_equal(lm[i].data, lw[i].data,
                            lm[i].numel * (dtype == LA_FLOAT64 ? sizeof(double) : sizeof(float)));
    la_train_model_free(w);

    /* read alone gives the configuration back */
    la_train_config cr;
    la_train_adamw_config ocr;
    assert_int_equal(la_train_checkpoint_read(dir, &cr, &ocr, &sb, &why), LA_OK);
    assert_true(cr.dtype == dtype && cr.vocab == 12 && cr.d_model == 8 && cr.layers == 2 &&
                cr.attention == c.attention && cr.ln_eps == c.ln_eps && cr.pre_ln == c.pre_ln);
    assert_true(ocr.beta2 == 0.999 && ocr.weight_decay == 0.01);

    /* saved again over the first: the new one whole, nothing else left */
    o.step = s.step = 18;
    s.rng.counter = 999;
    assert_int_equal(la_train_checkpoint_save(dir, back, &o, &s, &why), LA_OK);
    assert_int_equal(entries(root), 1);
    assert_int_equal(la_train_checkpoint_read(dir, &cr, &ocr, &sb, &why), LA_OK);
    assert_int_equal(sb.step, 18);
    assert_true(sb.rng.counter == 999);
    free(a);
    free(b);
    la_train_adamw_free(&o);
    la_train_adamw_free(&ob);
    la_train_model_free(m);
    la_train_model_free(back);
}

static void test_round_trip_f32(void **state)
{
    (void)state;
    round_trip(LA_FLOAT32);
}

static void test_round_trip_f64(void **state)
{
    (void)state;
    round_trip(LA_FLOAT64);
}

/* Load into a model of another configuration: refused, naming the field, model unchanged. */
static void expect_config_refused(const la_train_config *other, const char *field)
{
    tu_rng rng = tu_rng_for("ckpt_refused");
    la_train_model *m = make_model(other, 5);
    la_train_adamw o;
    make_adamw(&o, m, &rng, 3);
    size_t n1, n2;
    unsigned char *before = snapshot(m, &o, &n1);
    la_train_checkpoint_state s;
    const char *why = NULL;
    assert_int_equal(la_train_checkpoint_load(dir, m, &o, &s, &why), LA_EINVAL);
    if (strncmp(why, field, strlen(field)) != 0) fail_msg("why '%s', want %s first", why, field);
    unsigned char *after = snapshot(m, &o, &n2);
    assert_memory_equal(before, after, n1);
    assert_int_equal(o.step, 3);
    free(before);
    free(after);
    la_train_adamw_free(&o);
    la_train_model_free(m);
}

static void save_small(la_dtype dtype)
{
    tu_rng rng = tu_rng_for("ckpt_small");
    la_train_config c = small_config(dtype);
    la_train_model *m = make_model(&c, 1);
    la_train_adamw o;
    make_adamw(&o, m, &rng, 2);
    la_train_checkpoint_state s = {.step = 2};
    const char *why = NULL;
    assert_int_equal(la_train_checkpoint_save(dir, m, &o, &s, &why), LA_OK);
    la_train_adamw_free(&o);
    la_train_model_free(m);
}

static void test_other_configuration_refused(void **state)
{
    (void)state;
    save_small(LA_FLOAT32);
    la_train_config c = small_config(LA_FLOAT32);
    c.vocab = 13;
    expect_config_refused(&c, "vocab: 12 in the checkpoint, 13 here");
    c = small_config(LA_FLOAT32);
    c.d_model = 12;
    expect_config_refused(&c, "d_model");
    c = small_config(LA_FLOAT64);
    expect_config_refused(&c, "dtype");
    c = small_config(LA_FLOAT32);
    c.pre_ln = 0;
    expect_config_refused(&c, "pre_ln");
}

/* A tensor file removed or of another shape: LA_EFORMAT naming it; a malformed text:
 * LA_EFORMAT; the model unchanged each time. */
static void test_damaged_files_refused(void **state)
{
    (void)state;
    save_small(LA_FLOAT32);
    la_train_config c = small_config(LA_FLOAT32);
    char path[256];
    snprintf(path, sizeof path, "%s/layers.1.linear1.bias.npy", dir);
    float wrong[3] = {1, 2, 3};
    la_array a = {.dtype = LA_NPY_F32, .ndim = 1, .shape = {3}, .count = 3, .data = wrong};
    assert_int_equal(la_npy_write(path, &a), LA_OK);
    tu_rng rng = tu_rng_for("ckpt_damaged");
    la_train_model *m = make_model(&c, 9);
    la_train_adamw o;
    make_adamw(&o, m, &rng, 4);
    size_t n1, n2;
    unsigned char *before = snapshot(m, &o, &n1);
    la_train_checkpoint_state s;
    const char *why = NULL;
    assert_int_equal(la_train_checkpoint_load(dir, m, &o, &s, &why), LA_EFORMAT);
    assert_non_null(strstr(why, "layers.1.linear1.bias.npy"));
    unlink(path);
    assert_int_equal(la_train_checkpoint_load(dir, m, &o, &s, &why), LA_EFORMAT);
    assert_non_null(strstr(why, "layers.1.linear1.bias.npy"));
    snprintf(path, sizeof path, "%s/checkpoint.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("linattn-train-checkpoint 1\nvocab twelve\n", f);
    fclose(f);
    assert_int_equal(la_train_checkpoint_load(dir, m, &o, &s, &why), LA_EFORMAT);
    f = fopen(path, "w");
    fputs("something else\n", f);
    fclose(f);
    assert_int_equal(la_train_checkpoint_load(dir, m, &o, &s, &why), LA_EFORMAT);
    /* no folder at all */
    assert_int_equal(la_train_checkpoint_load("/nonexistent/ck", m, &o, &s, &why), LA_EIO);
    unsigned char *after = snapshot(m, &o, &n2);
    assert_memory_equal(before, after, n1);
    assert_int_equal(o.step, 4);
    free(before);
    free(after);
    la_train_adamw_free(&o);
    la_train_model_free(m);
}

/* A folder of other files, or a file, at the path is never replaced. */
static void test_not_a_checkpoint_kept(void **state)
{
    (void)state;
    char other[160], keep[200];
    snprintf(other, sizeof other, "%s/mine", root);
    snprintf(keep, sizeof keep, "%s/notes.txt", other);
    mkdir(other, 0755);
    FILE *f = fopen(keep, "w");
    fputs("keep me\n", f);
    fclose(f);
    la_train_config c = small_config(LA_FLOAT32);
    tu_rng rng = tu_rng_for("ckpt_kept");
    la_train_model *m = make_model(&c, 1);
    la_train_adamw o;
    make_adamw(&o, m, &rng, 0);
    la_train_checkpoint_state s = {0};
    const char *why = NULL;
    assert_int_equal(la_train_checkpoint_save(other, m, &o, &s, &why), LA_EIO);
    assert_non_null(strstr(why, "not a checkpoint"));
    assert_int_equal(entries(other), 1);
    assert_int_equal(la_train_checkpoint_save(keep, m, &o, &s, &why), LA_EIO);
    assert_int_equal(access(keep, F_OK), 0);
    unlink(keep);
    rmdir(other);
    /* an empty folder may be used */
    mkdir(other, 0755);
    assert_int_equal(la_train_checkpoint_save(other, m, &o, &s, &why), LA_OK);
    la_train_checkpoint_state sb;
    la_train_adamw_config oc;
    assert_int_equal(la_train_checkpoint_read(other, &c, &oc, &sb, &why), LA_OK);
    /* a step that is not the optimiser's: refused */
    s.step = 5;
    assert_int_equal(la_train_checkpoint_save(other, m, &o, &s, &why), LA_EINVAL);
    la_train_adamw_free(&o);
    la_train_model_free(m);
}

static void remove_tree(const char *path)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/test_checkpoint_XXXXXX");
    if (!mkdtemp(root)) return -1;
    snprintf(dir, sizeof dir, "%s/ck", root);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(root);
    return 0;
}

int main(void)
{
    tu_init("test_checkpoint");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_f32, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_f64, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_configuration_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_files_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_checkpoint_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
