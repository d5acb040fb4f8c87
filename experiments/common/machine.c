/* machine.c — the machine check before a timing experiment (machine.h). */
#include "machine.h"

#include "record.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { CAL_SIZE = 256, CAL_REPS = 48 };

/* c += a · b, CAL_REPS times: a (S, S), b (S, S), c (S, S) row-major, S = CAL_SIZE.
 * c accumulates over the repetitions, so none can be skipped. Returns the seconds.
 * Compiled at -O3 and without the sanitizers' checks whatever the build: the same
 * instructions in every build, and a sanitizer build's tests do not spend seconds in
 * it at every command (-O1 with AddressSanitizer: 4 s a call, against 0.05 s). */
#if defined(__GNUC__) && !defined(__clang__)
#define CALIBRATION_BUILD __attribute__((optimize("O3"), no_sanitize("address", "undefined")))
#else
#define CALIBRATION_BUILD __attribute__((no_sanitize("address", "undefined")))
#endif
CALIBRATION_BUILD static double calibration_kernel(void)
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

void machine_measure(machine_report *r)
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

void machine_warn(const machine_report *r)
{
    if (r->noisy)
        fprintf(stderr, "linattn: warning: the machine is busy (%s): timings are noisy\n", r->why);
}
