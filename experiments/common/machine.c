/* machine.c — the machine's facts and the check before a timing experiment (machine.h). */
#include "machine.h"

#include "timer.h"

#include "core/sanitizer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- facts */

const char *machine_cpu_model(void)
{
    static char model[128] = "";
    if (model[0]) return model;
    snprintf(model, sizeof model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return model;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (!colon) break;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            colon[strcspn(colon, "\n")] = 0;
            /* commas would split a CSV field elsewhere; the header is a comment, but keep
             * the string safe to reuse */
            for (char *c = colon; *c; c++)
                if (*c == ',') *c = ';';
            snprintf(model, sizeof model, "%s", colon);
            break;
        }
    }
    fclose(f);
    return model;
}

const char *machine_load_average(void)
{
    static char load[64];
    snprintf(load, sizeof load, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return load;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
        snprintf(load, sizeof load, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
    return load;
}

/* The cpu line of /proc/stat: busy and total jiffies. */
static int cpu_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4) return -1;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += (double)v[i];
    *busy = *total - (double)v[3] - (double)v[4]; /* minus idle and iowait */
    return 0;
}

double machine_busy_fraction(double seconds)
{
    double b0, t0, b1, t1;
    if (cpu_jiffies(&b0, &t0) != 0) return -1;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    if (cpu_jiffies(&b1, &t1) != 0 || t1 <= t0) return -1;
    return (b1 - b0) / (t1 - t0);
}

int machine_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
double machine_physical_memory(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
}

/* ---------------------------------------------------------------- the check */

enum { CAL_SIZE = 256, CAL_REPS = 48 };

/* c += a · b, CAL_REPS times: a (S, S), b (S, S), c (S, S) row-major, S = CAL_SIZE.
 * c accumulates over the repetitions, so none can be skipped. Returns the seconds.
 * Built as LA_MEASURES_MACHINE (core/sanitizer.h): the same instructions in every
 * build, and a sanitizer build's tests do not spend seconds in it at every command (-O1
 * with AddressSanitizer: 4 s a call, against 0.05 s). */
LA_MEASURES_MACHINE static double calibration_kernel(void)
{
    static float a[CAL_SIZE * CAL_SIZE], b[CAL_SIZE * CAL_SIZE], c[CAL_SIZE * CAL_SIZE];
    for (int i = 0; i < CAL_SIZE * CAL_SIZE; i++) {
        a[i] = (float)((i * 7) % 13) / 13.0f;
        b[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
        c[i] = 0;
    }
    double t0 = timer_now();
    for (int r = 0; r < CAL_REPS; r++)
        for (int i = 0; i < CAL_SIZE; i++)
            for (int k = 0; k < CAL_SIZE; k++) {
                const float x = a[i * CAL_SIZE + k];
                for (int j = 0; j < CAL_SIZE; j++)
                    c[i * CAL_SIZE + j] += x * b[k * CAL_SIZE + j];
            }
    double t = timer_now() - t0;
    /* the result is used, so the compiler keeps the loops */
    volatile float sink = c[CAL_SIZE + 1];
    (void)sink;
    return t;
}

/* Measures now: the load, a short sleep sampling /proc/stat, then the calibration
 * kernel twice (about 0.4 s in all). */
static void measure(machine_report *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->load_average, sizeof r->load_average, "%s", machine_load_average());
    r->cores = machine_cores();
    r->busy_share = machine_busy_fraction(MACHINE_IDLE_SAMPLE_S);
    r->calibration_s[0] = calibration_kernel();
    r->calibration_s[1] = calibration_kernel();
    const double t0 = r->calibration_s[0], t1 = r->calibration_s[1];
    r->spread = fabs(t0 - t1) / fmin(t0, t1);

    size_t used = 0;
    if (r->busy_share > MACHINE_MAX_BUSY_SHARE)
        used += (size_t)snprintf(r->why + used, sizeof r->why - used,
                                 "other processes kept %.0f%% of the %d cores busy",
                                 100 * r->busy_share, r->cores);
    if (!(r->spread <= MACHINE_MAX_SPREAD) && used < sizeof r->why)
        snprintf(r->why + used, sizeof r->why - used,
                 "%scalibration kernel timed twice differs by %.0f%%", used ? "; " : "",
                 100 * r->spread);
    r->noisy = r->why[0] != 0;
}

void machine_write_meta(FILE *out, const machine_report *r)
{
    fprintf(out, "# calibration: %.4f %.4f (spread %.1f%%)\n", r->calibration_s[0],
            r->calibration_s[1], 100 * r->spread);
    if (r->noisy)
        fprintf(out, "# noisy: yes (%s)\n", r->why);
    else
        fprintf(out, "# noisy: no\n");
}

static void warn_busy(const machine_report *r)
{
    if (r->noisy)
        fprintf(stderr, "linattn: warning: the machine is busy (%s): timings are noisy\n", r->why);
}

/* The check of the running timing experiment, kept while its files are open. */
static machine_report checked;
static int is_checked, warned;

const machine_report *machine_check(void)
{
    measure(&checked);
    is_checked = 1, warned = 0;
    return &checked;
}

const machine_report *machine_checked(void)
{
    return is_checked ? &checked : NULL;
}

void machine_forget(void)
{
    is_checked = 0;
}

/* The warning of a busy machine, once, when the experiment has its first result (so a
 * command refused before it measures anything prints its one error line alone). */
void machine_warn_once(void)
{
    if (is_checked && !warned) warn_busy(&checked);
    warned = 1;
}
