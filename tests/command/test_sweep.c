/* test_sweep.c — sweep_parse (experiments/common/sweep.c), the one syntax of every
 * numeric sweep flag: values, LO:HI ranges (the caller's factor, doubling by default),
 * LO:HI:xF ranges, comma-separated, in the order given without repeats; and its errors,
 * each exit status 2 with exactly the one line documented in sweep.h. The expected
 * values are written out by hand, not computed by the code under test. */
#include "../testutil.h"

#include "../../experiments/common/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sweep_parse("--n", text, factor, out, max, n) with stderr captured into err (the
 * empty string when nothing was printed). Returns its status. */
static int parse_captured(const char *text, double factor, size_t *out, size_t max, size_t *n,
                          char *err, size_t err_size)
{
    fflush(stderr);
    FILE *capture = tmpfile();
    assert_non_null(capture);
    const int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(capture), 2) >= 0);
    const int rc = sweep_parse("--n", text, factor, out, max, n);
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    rewind(capture);
    const size_t got = fread(err, 1, err_size - 1, capture);
    err[got] = 0;
    fclose(capture);
    return rc;
}

/* text parses, with factor, to exactly want[0..count), printing nothing. */
static void expect_values(const char *text, double factor, const size_t *want, size_t count)
{
    size_t out[256], n = 999;
    char err[512];
    const int rc = parse_captured(text, factor, out, 256, &n, err, sizeof err);
    if (rc != 0) fail_msg("'%s': status %d, stderr %s", text, rc, err);
    if (err[0]) fail_msg("'%s': printed '%s'", text, err);
    if (n != count) fail_msg("'%s': %zu values, want %zu", text, n, count);
    for (size_t i = 0; i < count; i++)
        if (out[i] != want[i])
            fail_msg("'%s': value %zu is %zu, want %zu", text, i, out[i], want[i]);
}

#define EXPECT(text, factor, ...)                                                                  \
    do {                                                                                           \
        const size_t want_[] = {__VA_ARGS__};                                                      \
        expect_values(text, factor, want_, sizeof want_ / sizeof want_[0]);                        \
    } while (0)

/* text is refused (status 2) with max values allowed, printing exactly the line line. */
static void expect_error(const char *text, size_t max, const char *line)
{
    size_t out[256], n;
    char err[1024];
    const int rc = parse_captured(text, 0, out, max, &n, err, sizeof err);
    if (rc != 2) fail_msg("'%s': status %d, want 2", text, rc);
    char want[512];
    snprintf(want, sizeof want, "linattn: --n: %s\n", line);
    if (strcmp(err, want) != 0) fail_msg("'%s': stderr '%s', want '%s'", text, err, want);
}

/* Single values and lists of them, in the order given. */
static void values(void **state)
{
    (void)state;
    EXPECT("512", 0, 512);
    EXPECT("1", 0, 1);
    EXPECT("256,512,1024", 0, 256, 512, 1024);
    EXPECT("1024,256,512", 0, 1024, 256, 512);
    EXPECT("9007199254740992", 0, 9007199254740992u); /* 2^53, the largest */
}

/* LO:HI doubles (or steps by the caller's factor) from LO while at most HI. */
static void ranges(void **state)
{
    (void)state;
    EXPECT("128:65536", 0, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536);
    EXPECT("16:1000", 0, 16, 32, 64, 128, 256, 512);
    EXPECT("10:10", 0, 10);
    EXPECT("10:19", 0, 10);
    EXPECT("3:12", 1, 3, 6, 12); /* a factor <= 1 means 2 */
    EXPECT("1:64", 4, 1, 4, 16, 64);
    EXPECT("100:400", 1.5, 100, 150, 225, 338);
}

/* LO:HI:xF steps by F, rounding to the nearest integer, without repeats. */
static void factors(void **state)
{
    (void)state;
    EXPECT("128:4096:x1.5", 0, 128, 192, 288, 432, 648, 972, 1458, 2187, 3281);
    EXPECT("1:100:x3", 0, 1, 3, 9, 27, 81);
    EXPECT("1:4:x1.1", 0, 1, 2, 3, 4); /* 1, 1.1, 1.21, …: each integer once */
    EXPECT("5:5000:x10", 2, 5, 50, 500, 5000);
    EXPECT("5:4999:x10", 2, 5, 50, 500);
    EXPECT("2:2048:x1024", 0, 2, 2048);
    EXPECT("1:9007199254740992:x2", 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096,
           8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608,
           16777216, 33554432, 67108864, 134217728, 268435456, 536870912, 1073741824, 2147483648u,
           4294967296u, 8589934592u, 17179869184u, 34359738368u, 68719476736u, 137438953472u,
           274877906944u, 549755813888u, 1099511627776u, 2199023255552u, 4398046511104u,
           8796093022208u, 17592186044416u, 35184372088832u, 70368744177664u, 140737488355328u,
           281474976710656u, 562949953421312u, 1125899906842624u, 2251799813685248u,
           4503599627370496u, 9007199254740992u);
}

/* A value given twice, by a list or by overlapping ranges, is kept once, where it first
 * appears; the rest keep the order given; sweep_sort_sizes then orders a search's values. */
static void dedup_and_order(void **state)
{
    (void)state;
    EXPECT("16,16,32", 0, 16, 32);
    EXPECT("16:64,32:128", 0, 16, 32, 64, 128);
    EXPECT("64,128:1024:x4", 0, 64, 128, 512);
    EXPECT("1024,16:64", 0, 1024, 16, 32, 64);
    EXPECT("8:8,8", 0, 8);

    size_t v[] = {1024, 16, 512, 32, 1, 2048};
    sweep_sort_sizes(v, 6);
    const size_t sorted[] = {1, 16, 32, 512, 1024, 2048};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(v[i], sorted[i]);
    sweep_sort_sizes(v, 0); /* nothing to do */
}

/* Every malformed text: status 2 and exactly its one line. */
static void errors(void **state)
{
    (void)state;
    /* empty items */
    expect_error("16,,64", 256, "empty item in '16,,64'");
    expect_error("16,", 256, "empty item in '16,'");
    expect_error(",16", 256, "empty item in ',16'");
    /* not a value, range or factor range */
    const char *not_items[] = {"abc", "-4", "1.5",     " 16", "16 ", "0x10",  "12:x",
                               ":8",  "8:", "1:2:3:4", "1e3", "+5",  "16:-32"};
    for (size_t i = 0; i < sizeof not_items / sizeof not_items[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "'%s' is not a value, LO:HI or LO:HI:xF", not_items[i]);
        expect_error(not_items[i], 256, line);
    }
    /* zero */
    expect_error("0", 256, "'0': values must be at least 1");
    expect_error("0:8", 256, "'0:8': values must be at least 1");
    expect_error("16,4:0", 256, "'4:0': values must be at least 1");
    /* HI < LO */
    expect_error("64:16", 256, "'64:16': HI is below LO");
    expect_error("16,9:8:x2", 256, "'9:8:x2': HI is below LO");
    /* bad factors */
    const char *bad_factors[][2] = {
        {"1:8:x1", "x1"},
        {"1:8:x0.5", "x0.5"},
        {"1:8:2", "2"},
        {"1:8:x", "x"},
        {"1:8:xabc", "xabc"},
        {"1:8:x2000", "x2000"},
        {"1:8:xnan", "xnan"},
        {"1:8:x-2", "x-2"},
        {"1:8:x 2", "x 2"},
        {"1:8:x2y", "x2y"},
        {"1:8:xinf", "xinf"},
        {"1:8:x1e999", "x1e999"},
        {"1:8:x1024.5", "x1024.5"},
        {"1:2:", ""},
    };
    for (size_t i = 0; i < sizeof bad_factors / sizeof bad_factors[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "'%s': '%s' is not a factor xF with 1 < F <= 1024",
                 bad_factors[i][0], bad_factors[i][1]);
        expect_error(bad_factors[i][0], 256, line);
    }
    /* too many values: after de-duplication, against the caller's max */
    expect_error("1:64", 4, "more than 4 values in '1:64'");
    expect_error("1,2,3,4,5", 4, "more than 4 values in '1,2,3,4,5'");
    size_t out[4], n;
    char err[256];
    assert_int_equal(parse_captured("1,1,2,2,3,3,4,4", 0, out, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    expect_error("1:1000000:x1.01", 300, "more than 256 values in '1:1000000:x1.01'");
    /* more than 256 items */
    char many[1024] = "";
    for (int i = 0; i < 257; i++)
        strcat(many, i ? ",1" : "1");
    expect_error(many, 256, "more than 256 items");
    /* overflow: beyond 2^53, beyond size_t, beyond unsigned long long */
    expect_error("9007199254740993", 256, "'9007199254740993' is too large (at most 2^53)");
    expect_error("1:18446744073709551615", 256,
                 "'1:18446744073709551615' is too large (at most 2^53)");
    expect_error("99999999999999999999999", 256,
                 "'99999999999999999999999' is too large (at most 2^53)");
    /* empty text */
    expect_error("", 256, "needs a value");
}

int main(void)
{
    tu_init("test_sweep");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values),          cmocka_unit_test(ranges), cmocka_unit_test(factors),
        cmocka_unit_test(dedup_and_order), cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
