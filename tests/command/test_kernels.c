/* test_kernels.c — the registry as the commands see it (experiments/common/kernels.c):
 * every series once, one spelling per kernel (the registry's; '-' for '_' accepted on
 * input), lists of kernels, families whose forms can be told apart,
 * the defaults for what the registry does not say, help lines that name every row, and
 * which kernels are exact softmax.
 * Each property is stated over all rows, so a new kernel is checked without an edit. */
#include "../testutil.h"
#include "attention/series.h"

#include "../../experiments/common/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kernels_all_series lists every (kernel, causal) whose series the registry names, once, in
 * registry order, and nothing else. */
static void all_series_once(void **state)
{
    (void)state;
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all), expected = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        for (int causal = 0; causal <= 1; causal++) {
            const char *name = la_kernel_series((la_kernel)k, causal);
            if (!name) continue;
            assert_true(expected < n);
            assert_int_equal(all[expected].kernel, k);
            assert_int_equal(all[expected].causal, causal);
            assert_string_equal(all[expected].name, name);
            assert_int_equal(kernels_allows((la_kernel)k, causal), 1);
            expected++;
        }
    assert_int_equal(n, expected);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(all[i].name, all[j].name) == 0) fail_msg("series %s twice", all[i].name);
}

/* A default selection leaves out exactly the names listed (unknown names change
 * nothing); a series list selects what it names, in either spelling, and refuses the
 * rest, the same series twice in two spellings included. */
static void selections(void **state)
{
    (void)state;
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all);
    int selected[KERNELS_MAX_SERIES];
    const char *const left_out[] = {"softmax_causal", "no_such_series", NULL};
    kernels_select_all_but(all, n, left_out, selected);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(selected[i], strcmp(all[i].name, "softmax_causal") != 0);

    assert_int_equal(kernels_parse_series_list("--variants", "linear,softmax", all, n, selected),
                     0);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        count += (size_t)selected[i];
        if (selected[i])
            assert_true(strcmp(all[i].name, "linear") == 0 || strcmp(all[i].name, "softmax") == 0);
    }
    assert_int_equal(count, 2);
    /* every series in the hyphen spelling selects the same row */
    for (size_t i = 0; i < n; i++) {
        char hyphen[64];
        snprintf(hyphen, sizeof hyphen, "%s", all[i].name);
        for (char *c = hyphen; *c; c++)
            if (*c == '_') *c = '-';
        assert_int_equal(kernels_parse_series_list("--variant", hyphen, all, n, selected), 0);
        for (size_t j = 0; j < n; j++)
            assert_int_equal(selected[j], j == i);
    }
    assert_int_equal(kernels_parse_series_list("--variant",
                                               "linear-causal-chunked,linear_causal_chunked", all,
                                               n, selected),
                     2);
    assert_int_equal(kernels_parse_series_list("--variants", "linear,bilinear", all, n, selected),
                     2);
    assert_int_equal(kernels_parse_series_list("--variants", "linear,linear", all, n, selected), 2);
    assert_int_equal(kernels_parse_series_list("--variants", "linear,,softmax", all, n, selected),
                     2);

    char names[1024];
    kernels_series_names(all, n, NULL, names, sizeof names);
    for (size_t i = 0; i < n; i++)
        assert_non_null(strstr(names, all[i].name));
}

/* One spelling per kernel: the registry's, with '_'; the hyphen form parses to the same
 * kernel, lists refuse repeats in either spelling, and filters are honoured. */
static void spellings(void **state)
{
    (void)state;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const char *name = la_kernel_name((la_kernel)k);
        char hyphen[64];
        snprintf(hyphen, sizeof hyphen, "%s", name);
        for (char *c = hyphen; *c; c++)
            if (*c == '_') *c = '-';
        la_kernel back;
        assert_int_equal(kernels_parse_kernel("--variant", name, NULL, &back), 0);
        assert_int_equal(back, k);
        assert_int_equal(kernels_parse_kernel("--variant", hyphen, NULL, &back), 0);
        assert_int_equal(back, k);
        assert_int_equal(kernels_parse_kernel("--variant", name, kernels_layer_kernel, &back),
                         kernels_layer_kernel((la_kernel)k) ? 0 : 2);
        /* the same kernel twice, once in each spelling */
        char twice[160];
        la_kernel list[LA_KERNEL_COUNT];
        size_t count;
        snprintf(twice, sizeof twice, "%s,%s", name, hyphen);
        assert_int_equal(kernels_parse_kernel_list("--variant", twice, NULL, list, 8, &count), 2);
    }
    la_kernel k;
    assert_int_equal(kernels_parse_kernel("--variant", "bilinear", NULL, &k), 2);
    assert_int_equal(kernels_parse_kernel("--variant", "softmax,linear", NULL, &k), 2);
    assert_int_equal(kernels_parse_kernel("--variant", "", NULL, &k), 2);
    char names[512];
    kernels_kernel_names(NULL, "|", names, sizeof names);
    assert_non_null(strstr(names, "softmax|softmax_materialized|"));
    assert_null(strchr(names, '-'));

    /* a list: in the order given, each in either spelling */
    la_kernel list[LA_KERNEL_COUNT];
    size_t count = 0;
    assert_int_equal(
        kernels_parse_kernel_list("--variant", "linear-recurrent,softmax", NULL, list, 8, &count),
        0);
    assert_int_equal(count, 2);
    assert_int_equal(list[0], LA_KERNEL_LINEAR_RECURRENT);
    assert_int_equal(list[1], LA_KERNEL_SOFTMAX);
    assert_int_equal(
        kernels_parse_kernel_list("--variant", "linear,bilinear", NULL, list, 8, &count), 2);
    assert_int_equal(kernels_parse_kernel_list("--variant", "linear,,hard", NULL, list, 8, &count),
                     2);
    assert_int_equal(kernels_parse_kernel_list("--variant", "linear_recurrent",
                                               kernels_layer_kernel, list, 8, &count),
                     2);
}

/* Families: every kernel's family is a family of its own; within a family the kernels
 * that run with a given causal flag have distinct forms (so the deprecated attend
 * --kernel and bench --causal-form choose exactly one); and the words of those two
 * flags stay what the command line had. */
static void families_and_forms(void **state)
{
    (void)state;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        la_kernel family = kernels_family((la_kernel)k);
        assert_int_equal(kernels_family(family), family);
        const char *name = la_kernel_name((la_kernel)k), *head = la_kernel_name(family);
        if (family != (la_kernel)k) {
            assert_int_equal(strncmp(name, head, strlen(head)), 0);
            assert_string_equal(kernels_form((la_kernel)k), name + strlen(head) + 1);
        }
        for (int causal = 0; causal <= 1; causal++) {
            la_kernel members[LA_KERNEL_COUNT];
            size_t n = kernels_family_kernels(family, causal, members);
            int found = 0;
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(kernels_family(members[i]), family);
                assert_true(kernels_allows(members[i], causal));
                found |= members[i] == (la_kernel)k;
                for (size_t j = 0; j < i; j++)
                    if (strcmp(kernels_form(members[i]), kernels_form(members[j])) == 0)
                        fail_msg("family %s: two kernels called %s", head,
                                 kernels_form(members[i]));
            }
            assert_int_equal(found, kernels_allows((la_kernel)k, causal));
        }
    }
    assert_int_equal(kernels_family(LA_KERNEL_SOFTMAX_MATERIALIZED), LA_KERNEL_SOFTMAX);
    assert_int_equal(kernels_family(LA_KERNEL_LINEAR_RECURRENT), LA_KERNEL_LINEAR);
    assert_int_equal(kernels_family(LA_KERNEL_HARD), LA_KERNEL_HARD);
    assert_string_equal(kernels_form(LA_KERNEL_SOFTMAX), "fused");
    assert_string_equal(kernels_form(LA_KERNEL_SOFTMAX_MATERIALIZED), "materialized");
    assert_string_equal(kernels_form(LA_KERNEL_LINEAR), "chunked");
    assert_string_equal(kernels_form(LA_KERNEL_LINEAR_RECURRENT), "recurrent");
    assert_true(kernels_has_causal_forms(LA_KERNEL_LINEAR));
    assert_false(kernels_has_causal_forms(LA_KERNEL_SOFTMAX));
}

/* The time exponent: each row's, 2 and "not known" outside the registry. */
static void time_exponents(void **state)
{
    (void)state;
    int known = -1;
    assert_true(kernels_time_exponent(LA_KERNEL_SOFTMAX, &known) == 2 && known == 1);
    assert_true(kernels_time_exponent(LA_KERNEL_LINEAR_RECURRENT, &known) == 1 && known == 1);
    assert_true(kernels_time_exponent(LA_KERNEL_COUNT, &known) == 2 && known == 0);
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        double e = kernels_time_exponent((la_kernel)k, &known);
        assert_true(e == la_kernel_get((la_kernel)k)->time_exponent && known == 1);
    }
}

/* kernels_exact_softmax (the registry's family and caps): softmax is exact, and every
 * kernel it calls exact computes softmax attention itself: its float64 reference equals
 * softmax's on fresh random inputs (N = 40 over M = 56, d = 8, two heads; a masked,
 * windowed or approximating kernel would differ); a kernel that approximates softmax
 * (LA_CAP_APPROXIMATES) is never exact. */
static void exact_softmax(void **state)
{
    (void)state;
    assert_int_equal(kernels_exact_softmax(LA_KERNEL_SOFTMAX), 1);
    assert_int_equal(kernels_exact_softmax(LA_KERNEL_COUNT), 0);
    la_problem p;
    la_problem_init(&p, 1, 2, 40, 56, 8, 8);
    const size_t nq = 2 * 40 * 8, nkv = 2 * 56 * 8;
    double *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v),
           *ref = malloc(nq * sizeof *ref), *out = malloc(nq * sizeof *out);
    assert_non_null(q), assert_non_null(k), assert_non_null(v), assert_non_null(ref);
    assert_non_null(out);
    tu_rng r = tu_rng_for("exact_softmax");
    tu_fill_normal(&r, q, nq, 1.0), tu_fill_normal(&r, k, nkv, 1.0),
        tu_fill_normal(&r, v, nkv, 1.0);
    assert_int_equal(la_ref_attention(LA_KERNEL_SOFTMAX, &p, q, k, v, ref), LA_OK);
    int exact = 0;
    for (int kernel = 0; kernel < LA_KERNEL_COUNT; kernel++) {
        if (!kernels_exact_softmax((la_kernel)kernel)) continue;
        exact++;
        assert_false(la_kernel_get((la_kernel)kernel)->caps & LA_CAP_APPROXIMATES);
        assert_int_equal(la_ref_attention((la_kernel)kernel, &p, q, k, v, out), LA_OK);
        size_t worst;
        const double err = tu_rel_error_f64(out, ref, nq, &worst);
        if (!(err <= 1e-12))
            fail_msg("%s called exact softmax: relative error %.3g against softmax at %zu",
                     la_kernel_name((la_kernel)kernel), err, worst);
    }
    assert_true(exact >= 2); /* softmax and its materialized form */
    free(q), free(k), free(v), free(ref), free(out);
}

/* The help lines: the heading naming --variant, then every row the filter keeps, by its
 * registry name (never the hyphen form), with the start of its summary. */
static void help_lines(void **state)
{
    (void)state;
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    kernels_print_kernels(out, NULL, NULL);
    fclose(out);
    assert_int_equal(strncmp(text, "kernels (--variant, from the registry; ", 39), 0);
    size_t width = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        if (strlen(la_kernel_name((la_kernel)k)) > width)
            width = strlen(la_kernel_name((la_kernel)k));
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        char line[256];
        snprintf(line, sizeof line, "\n  %-*s  %.12s", (int)width, la_kernel_name((la_kernel)k),
                 la_kernel_get((la_kernel)k)->summary);
        if (!strstr(text, line)) fail_msg("no line '%s' in:\n%s", line + 1, text);
        const char *name = la_kernel_name((la_kernel)k);
        if (strchr(name, '_')) {
            char hyphen[64];
            snprintf(hyphen, sizeof hyphen, "%s", name);
            for (char *c = hyphen; *c; c++)
                if (*c == '_') *c = '-';
            if (strstr(text, hyphen)) fail_msg("'%s' spelt with '-' in:\n%s", name, text);
        }
    }
    free(text);

    out = open_memstream(&text, &size);
    kernels_print_kernels(out, kernels_layer_kernel, ", those a layer can use");
    fclose(out);
    assert_non_null(strstr(text, "registry, those a layer can use;"));
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        if (!kernels_layer_kernel((la_kernel)k) &&
            strstr(text, la_kernel_get((la_kernel)k)->summary))
            fail_msg("%s listed among the layer kernels", la_kernel_name((la_kernel)k));
    free(text);
}

int main(void)
{
    tu_init("test_kernels");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_series_once), cmocka_unit_test(selections),
        cmocka_unit_test(spellings),       cmocka_unit_test(families_and_forms),
        cmocka_unit_test(time_exponents),  cmocka_unit_test(help_lines),
        cmocka_unit_test(exact_softmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
