/* progress.c — the progress line (progress.h): in place on a terminal, plain lines with a
 * heartbeat thread elsewhere. */
#include "progress.h"

#include "timer.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void progress_format_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, size, "?");
    else if (s < 60)
        snprintf(buf, size, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* the suite around the experiment (progress_suite) */
static int suite_k, suite_total;
static double suite_after_s = -1;

static pthread_mutex_t beat_mu = PTHREAD_MUTEX_INITIALIZER;
static int beat_active;

void progress_suite(int k, int total, double after_s)
{
    /* between experiments: the heartbeat stops (also after one that never called
     * progress_end, on an error path) and reads the new values from its next one */
    pthread_mutex_lock(&beat_mu);
    suite_k = k;
    suite_total = total;
    suite_after_s = after_s;
    beat_active = 0;
    pthread_mutex_unlock(&beat_mu);
}

void progress_start(progress_line *pr, const char *label, int total_points, double total_work)
{
    pr->label = label;
    pr->unit = "point";
    pr->total_points = total_points;
    pr->total_work = total_work > 0 ? total_work : total_points;
    pr->work_done = 0;
    pr->start_s = timer_now();
    pr->out = stderr;
    pr->tty = isatty(2);
    pr->every_s = 2;
    pr->last_line_s = pr->start_s;
    pr->point = 0;
    pr->what[0] = 0;
    pr->point_work = 0;
    pr->point_start_s = pr->start_s;
    pr->last_rate_s = 0;
    pr->heartbeat_s = 10;
}

/* "[2/6 scaling]" inside a suite, else "[scaling]" */
static void progress_label(const progress_line *pr, char *buf, size_t size)
{
    if (suite_total > 0)
        snprintf(buf, size, "[%d/%d %s]", suite_k, suite_total, pr->label);
    else
        snprintf(buf, size, "[%s]", pr->label);
}

/* "elapsed 1m05s  left ~2m10s (1m40s–2m10s) (suite ~6m00s)" after `done` units of work:
 * the work left at the rate of all finished points, and the range to the rate of the
 * last one when the two differ by more than a fifth. "left ~?" until a hundredth of the
 * work is done: the first points of a sweep are its smallest, whose overheads make the
 * time per unit of work many times the large points' (a scaling sweep's first two
 * points of ten foretold 71 hours for a run of six minutes) */
static void progress_times(const progress_line *pr, double done, double now, char *buf, size_t size)
{
    double elapsed = now - pr->start_s, left = NAN;
    char e[32], r[96] = "?", s[64] = "";
    progress_format_duration(elapsed, e, sizeof e);
    if (done > 0 && done <= pr->total_work && done >= 0.01 * pr->total_work) {
        left = elapsed * (pr->total_work - done) / done;
        progress_format_duration(left, r, sizeof r);
        const double other = pr->last_rate_s * (pr->total_work - done);
        if (pr->last_rate_s > 0 && (other > 1.2 * left || left > 1.2 * other)) {
            char lo[32], hi[32];
            progress_format_duration(other < left ? other : left, lo, sizeof lo);
            progress_format_duration(other < left ? left : other, hi, sizeof hi);
            size_t used = strlen(r);
            if (strcmp(lo, hi) != 0) snprintf(r + used, sizeof r - used, " (%s–%s)", lo, hi);
        }
    }
    if (suite_total > 0 && suite_k < suite_total && suite_after_s >= 0 && isfinite(left)) {
        char t[32];
        progress_format_duration(left + suite_after_s, t, sizeof t);
        snprintf(s, sizeof s, " (suite ~%s)", t);
    }
    snprintf(buf, size, "elapsed %s  left ~%s%s", e, r, s);
}

/* The heartbeat: a helper thread that prints a line when a point has run heartbeat_s
 * seconds since the last line, from beat (a copy of the progress state, under beat_mu). */
static pthread_cond_t beat_cv = PTHREAD_COND_INITIALIZER;
static progress_line beat;
static int beat_started;
static double beat_last_s; /* when the last line was printed */

static void *heartbeat(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&beat_mu);
    for (;;) {
        double period = beat_active && beat.heartbeat_s < 2 ? beat.heartbeat_s / 2 : 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double at = (double)until.tv_nsec * 1e-9 + (period > 0.01 ? period : 0.01);
        until.tv_sec += (time_t)at;
        until.tv_nsec = (long)((at - floor(at)) * 1e9);
        pthread_cond_timedwait(&beat_cv, &beat_mu, &until);
        const double now = timer_now();
        if (!beat_active || !(beat.heartbeat_s > 0) || now - beat_last_s < beat.heartbeat_s)
            continue;
        char label[96], times[256], running[32];
        progress_label(&beat, label, sizeof label);
        progress_times(&beat, beat.work_done - beat.point_work, now, times, sizeof times);
        progress_format_duration(now - beat.point_start_s, running, sizeof running);
        fprintf(beat.out, "%s %s %d/%d running for %s (%s)  %s\n", label, beat.unit, beat.point,
                beat.total_points, running, beat.what, times);
        fflush(beat.out);
        beat_last_s = now;
    }
    return NULL;
}

/* Hands the state of pr to the heartbeat (active: a point is running), starting the
 * thread the first time; a thread that cannot start means no heartbeat, nothing else. */
static void beat_update(const progress_line *pr, int active, double last_line_s)
{
    pthread_mutex_lock(&beat_mu);
    beat = *pr;
    beat_active = active;
    if (last_line_s > beat_last_s) beat_last_s = last_line_s;
    if (active && !beat_started) {
        pthread_t thread;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            beat_started = pthread_create(&thread, &attr, heartbeat, NULL) == 0;
            pthread_attr_destroy(&attr);
        }
    }
    pthread_cond_signal(&beat_cv);
    pthread_mutex_unlock(&beat_mu);
}

void progress_step(progress_line *pr, int point, double work, const char *what)
{
    /* the point before this one has finished: its rate, for the range of the time left */
    const double done = pr->work_done, now = timer_now();
    if (pr->point > 0 && pr->point_work > 0)
        pr->last_rate_s = (now - pr->point_start_s) / pr->point_work;
    char label[96], times[256];
    progress_label(pr, label, sizeof label);
    progress_times(pr, done, now, times, sizeof times);
    if (pr->tty) {
        fprintf(pr->out, "\r\033[K%s %s %d/%d  %s  %s", label, pr->unit, point, pr->total_points,
                times, what ? what : "");
        fflush(pr->out);
    } else if (pr->point > 0 && now - pr->last_line_s >= pr->every_s) {
        fprintf(pr->out, "%s %d/%d %ss done (last: %s)  %s\n", label, pr->point, pr->total_points,
                pr->unit, pr->what, times);
        fflush(pr->out);
        pr->last_line_s = now;
    }
    pr->work_done += work;
    pr->point = point;
    pr->point_work = work;
    pr->point_start_s = now;
    snprintf(pr->what, sizeof pr->what, "%s", what ? what : "");
    if (!pr->tty) beat_update(pr, 1, point == 1 ? now : pr->last_line_s);
}

void progress_end(progress_line *pr)
{
    if (!pr->tty) beat_update(pr, 0, 0);
    char label[96], e[32];
    progress_label(pr, label, sizeof label);
    progress_format_duration(timer_now() - pr->start_s, e, sizeof e);
    fprintf(pr->out, "%s%s %d %ss in %s\n", pr->tty ? "\r\033[K" : "", label, pr->total_points,
            pr->unit, e);
    fflush(pr->out);
}
