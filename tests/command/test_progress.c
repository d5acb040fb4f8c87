/* test_progress.c — the progress line (experiments/common/progress.c): on a pipe or a file,
 * one plain line per finished point (at most one every every_s seconds) and a closing
 * line; on a terminal, one line rewritten in place; inside `linattn results`, the
 * experiment's number and the suite's time left. */
#include "../testutil.h"

#include "../../experiments/common/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A progress line written into memory: capture_start() starts c->pr (label, points,
 * work as progress_start) on a memory stream, as a terminal or not; the test sets
 * any other field of c->pr, steps it and ends it; capture_text() closes the stream and
 * returns what was written (free it). c must stay where it is until then. */
typedef struct {
    char *text;
    size_t len; /* what the stream holds so far, once flushed */
    FILE *out;
    progress_line pr;
} capture;

static void capture_start(capture *c, const char *label, int total_points, double total_work,
                          int tty)
{
    c->text = NULL;
    c->len = 0;
    c->out = open_memstream(&c->text, &c->len);
    assert_non_null(c->out);
    progress_start(&c->pr, label, total_points, total_work);
    c->pr.out = c->out, c->pr.tty = tty;
}

static char *capture_text(capture *c)
{
    fclose(c->out);
    return c->text;
}

/* Runs three points with pr's settings into a buffer; returns the text (free it). */
static char *three_points(int tty, double every_s)
{
    capture c;
    capture_start(&c, "demo", 3, 6, tty);
    c.pr.every_s = every_s;
    progress_step(&c.pr, 1, 1, "first N=16");
    progress_step(&c.pr, 2, 2, "second N=32");
    progress_step(&c.pr, 3, 3, "third N=64");
    progress_end(&c.pr);
    return capture_text(&c);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    return n;
}

/* Not a terminal: a line for each finished point (the last one's is the closing line),
 * plain text without control characters. */
static void plain_lines(void **state)
{
    (void)state;
    char *text = three_points(0, 0);
    printf("%s", text);
    assert_int_equal(count_lines(text), 3);
    assert_non_null(strstr(text, "[demo] 1/3 points done (last: first N=16)"));
    assert_non_null(strstr(text, "[demo] 2/3 points done (last: second N=32)"));
    assert_non_null(strstr(text, "left ~"));
    assert_non_null(strstr(text, "[demo] 3 points in "));
    assert_null(strchr(text, '\r'));
    assert_null(strchr(text, '\033'));
    free(text);
    /* fast points are reported together: none within every_s, the closing line only */
    text = three_points(0, 1e9);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, "[demo] 3 points in "));
    free(text);
}

/* A terminal: the line is rewritten in place (\r, erase) for each point, one newline at
 * the end. */
static void terminal_line(void **state)
{
    (void)state;
    char *text = three_points(1, 0);
    assert_int_equal(count_lines(text), 1);
    assert_non_null(strstr(text, "\r\033[K[demo] point 1/3"));
    assert_non_null(strstr(text, "\r\033[K[demo] point 3/3"));
    assert_non_null(strstr(text, "third N=64"));
    free(text);
}

/* Inside a suite: "[k/K label]" and the suite's time left (this experiment's and the
 * later ones' after_s); after the suite, neither. */
static void inside_suite(void **state)
{
    (void)state;
    progress_suite(2, 6, 125);
    char *text = three_points(0, 0);
    printf("%s", text);
    assert_non_null(strstr(text, "[2/6 demo] 1/3 points done"));
    assert_non_null(strstr(text, "(suite ~2m0"));
    assert_non_null(strstr(text, "[2/6 demo] 3 points in "));
    free(text);
    progress_suite(6, 6, 0); /* the last experiment: no suite time beyond its own */
    text = three_points(0, 0);
    assert_null(strstr(text, "suite"));
    free(text);
    progress_suite(0, 0, -1);
    text = three_points(0, 0);
    assert_null(strstr(text, "/6"));
    free(text);
}

/* The time left extrapolates the finished points' work: 10 s for 1 unit of 6 done
 * leaves about 50 s; with 3 of 6 done after 30 s, about 30 s. */
static void estimate(void **state)
{
    (void)state;
    capture c;
    capture_start(&c, "est", 3, 6, 0);
    c.pr.every_s = 0;
    progress_step(&c.pr, 1, 1, "a");
    c.pr.start_s -= 10;
    progress_step(&c.pr, 2, 2, "b");
    c.pr.start_s -= 20;
    progress_step(&c.pr, 3, 3, "c");
    progress_end(&c.pr);
    char *text = capture_text(&c);
    printf("%s", text);
    assert_non_null(strstr(text, "1/3 points done (last: a)  elapsed 10.0s  left ~50.0s"));
    assert_non_null(strstr(text, "2/3 points done (last: b)  elapsed 30.0s  left ~30.0s"));
    free(text);
}

/* Before a hundredth of the work is done the time left is not guessed: 1 unit of 200,
 * then 2 of 200 (1%) gives the estimate. */
static void estimate_waits(void **state)
{
    (void)state;
    capture c;
    capture_start(&c, "wait", 3, 200, 0);
    c.pr.every_s = 0;
    progress_step(&c.pr, 1, 1, "a");
    c.pr.start_s -= 10;
    progress_step(&c.pr, 2, 1, "b");
    c.pr.start_s -= 10;
    progress_step(&c.pr, 3, 198, "c");
    progress_end(&c.pr);
    char *text = capture_text(&c);
    printf("%s", text);
    assert_non_null(strstr(text, "1/3 points done (last: a)  elapsed 10.0s  left ~?\n"));
    assert_non_null(strstr(text, "2/3 points done (last: b)  elapsed 20.0s  left ~33m00s"));
    free(text);
}

/* When the last finished point ran at another rate than all of them together, the time
 * left comes with the range between the two: 10 s for 1 unit, then 2 s for 2 units,
 * leaves 3 of 6 units: 12 s at the overall rate, 3 s at the last point's. A point at the
 * overall rate adds no range. */
static void estimate_range(void **state)
{
    (void)state;
    capture c;
    capture_start(&c, "rng", 3, 6, 0);
    c.pr.every_s = 0;
    progress_step(&c.pr, 1, 1, "a");
    c.pr.start_s -= 10, c.pr.point_start_s -= 10;
    progress_step(&c.pr, 2, 2, "b");
    c.pr.start_s -= 2, c.pr.point_start_s -= 2;
    progress_step(&c.pr, 3, 3, "c");
    progress_end(&c.pr);
    char *text = capture_text(&c);
    printf("%s", text);
    assert_non_null(strstr(text, "1/3 points done (last: a)  elapsed 10.0s  left ~50.0s\n"));
    assert_non_null(
        strstr(text, "2/3 points done (last: b)  elapsed 12.0s  left ~12.0s (3.0s–12.0s)\n"));
    free(text);
}

/* A point that runs long gets a line every heartbeat_s seconds from the helper thread,
 * and none once the experiment has ended. */
static void heartbeat(void **state)
{
    (void)state;
    capture c;
    capture_start(&c, "long", 2, 2, 0);
    c.pr.heartbeat_s = 0.2;
    progress_step(&c.pr, 1, 1, "slow N=65536");
    struct timespec wait = {0, 700 * 1000 * 1000};
    nanosleep(&wait, NULL);
    progress_end(&c.pr);
    struct timespec after = {0, 500 * 1000 * 1000}; /* no line after the end */
    nanosleep(&after, NULL);
    fflush(c.out);
    const size_t at_end = c.len;
    char *text = capture_text(&c);
    printf("%s", text);
    assert_non_null(strstr(text, "[long] point 1/2 running for "));
    assert_non_null(strstr(text, "(slow N=65536)"));
    const char *closing = strstr(text, "[long] 2 points in ");
    assert_non_null(closing);
    assert_int_equal(strlen(closing), strcspn(closing, "\n") + 1); /* the last line */
    assert_int_equal(at_end, strlen(text));
    free(text);
}

/* Durations as the lines print them. */
static void durations(void **state)
{
    (void)state;
    char buf[32];
    progress_format_duration(5.25, buf, sizeof buf);
    assert_string_equal(buf, "5.2s");
    progress_format_duration(125, buf, sizeof buf);
    assert_string_equal(buf, "2m05s");
    progress_format_duration(3720, buf, sizeof buf);
    assert_string_equal(buf, "1h02m");
    progress_format_duration(-1, buf, sizeof buf);
    assert_string_equal(buf, "?");
}

int main(void)
{
    tu_init("test_progress");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_lines),    cmocka_unit_test(terminal_line),
        cmocka_unit_test(inside_suite),   cmocka_unit_test(estimate),
        cmocka_unit_test(estimate_waits), cmocka_unit_test(estimate_range),
        cmocka_unit_test(heartbeat),      cmocka_unit_test(durations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
