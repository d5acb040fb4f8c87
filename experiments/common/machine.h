/* machine.h — is the machine quiet enough to time on? Checked before a timing experiment's
 * first point (record.h: machine_check) and written into its results files:
 *   # load_average: 0.12 0.30 0.25 (...)              the 1, 5 and 15 minute averages
 *   # calibration: 0.0512 0.0498 (spread 2.8%)       a fixed kernel timed twice (s)
 *   # noisy: no                                       or: # noisy: yes (<why>)
 *
 * The machine is noisy when either
 *   - other processes kept more than MACHINE_MAX_BUSY_SHARE of the cores busy while this one
 *     slept for MACHINE_IDLE_SAMPLE_S (from /proc/stat: the load while we are idle); the
 *     1-minute load average is recorded but not tested, as it lags: it still counts
 *     a compile that ended seconds ago and this process's own earlier experiments;
 *   - the calibration kernel's two timings differ by more than MACHINE_MAX_SPREAD of the
 *     faster (|t1 − t2| / min(t1, t2)): something else takes the core in bursts.
 * The calibration kernel is a fixed single-threaded float32 matrix product (256 × 256
 * × 256, repeated 48 times: about 1.6 GFLOP, tens of milliseconds on a current core),
 * plain C so it does not depend on the library or its threads; its time is comparable
 * across runs of the same binary on the same machine. */
#ifndef LA_MACHINE_H
#define LA_MACHINE_H

#include <stdio.h>

#define MACHINE_MAX_BUSY_SHARE 0.5
#define MACHINE_MAX_SPREAD 0.10
#define MACHINE_IDLE_SAMPLE_S 0.25

typedef struct {
    char load_average[64];   /* "0.12 0.30 0.25" or "unknown" */
    double busy_share;       /* of all cores, used by others while we slept; -1 unknown */
    int cores;               /* online */
    double calibration_s[2]; /* the calibration kernel, timed twice */
    double spread;           /* |t1 − t2| / min(t1, t2) */
    int noisy;
    char why[192]; /* when noisy: "other processes kept 85% of the 2 cores busy" … */
} machine_report;

/* Measures now: the load, a short sleep sampling /proc/stat, then the calibration
 * kernel twice (about 0.4 s in all). */
void machine_measure(machine_report *r);

/* The `# calibration:` and `# noisy:` metadata lines (see above). */
void machine_write_meta(FILE *out, const machine_report *r);

/* When noisy, one line on stderr:
 *   linattn: warning: the machine is busy (<why>): timings are noisy */
void machine_warn(const machine_report *r);

#endif
