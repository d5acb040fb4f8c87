/* machine.h — the machine the experiments run on: the facts every results file records
 * (cpu, cores, load, physical memory), and whether it is quiet enough to time on,
 * checked before a timing experiment's first point (machine_check) and written into its
 * results files:
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

/* ---------------------------------------------------------------- facts */

/* The facts the header records, for summaries too. Strings are static. */
const char *machine_cpu_model(void);
int machine_cores(void);
const char *machine_load_average(void); /* "0.12 0.30 0.25" from /proc/loadavg, or "unknown" */
/* The share of all cores busy over the next `seconds` (this process sleeping), from
 * /proc/stat; -1 when unknown. */
double machine_busy_fraction(double seconds);
double machine_physical_memory(void); /* bytes of RAM; +inf when unknown */

/* ---------------------------------------------------------------- the check */

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

/* How busy the machine is, for timing experiments. A timing experiment (scaling,
 * crossover, decode, bench, block-sweep) calls machine_check() once, after its flags are
 * parsed and before it opens its results files: it measures the load, a short sleep
 * sampling /proc/stat, then times the calibration kernel twice (about 0.4 s in all) and
 * returns the report for the experiment's summary. The metadata header of every results
 * file opened after it (record.h) then records it (`# calibration:`, `# noisy:`), and
 * when the machine is busy the warning line goes to stderr with the first row written
 * (or with record_write_meta's header), so a command refused before it measured anything
 * still prints only its one error line. The check is forgotten when no results file is
 * left open (record_close of the last one). An experiment that times nothing (params,
 * accuracy, flops) does not call it, and its files carry neither line. */
const machine_report *machine_check(void);

/* The report of the check in force, or NULL when there is none (never checked, or
 * forgotten). */
const machine_report *machine_checked(void);
/* Forgets the check (record_close of the last results file). */
void machine_forget(void);

/* The `# calibration:` and `# noisy:` metadata lines (see above). */
void machine_write_meta(FILE *out, const machine_report *r);

/* When the check in force found the machine noisy, one line on stderr, once per check:
 *   linattn: warning: the machine is busy (<why>): timings are noisy */
void machine_warn_once(void);

#endif
