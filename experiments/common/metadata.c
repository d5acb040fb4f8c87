/* metadata.c — the `#` metadata header of every results file (metadata.h). */
#include "metadata.h"

#include "linattn.h"
#include "machine.h"
#include "memory.h"

#include <stdio.h>
#include <time.h>

/* The commit linattn was built from: "abc1234", "abc1234 (dirty)" (tracked files differed
 * from it) or "unknown", recorded by the Makefile at build time (LA_GIT_COMMIT). git never
 * runs here: in the folder the command runs in it would name another repository and run
 * whatever that repository's configuration says. */
#ifndef LA_GIT_COMMIT
#define LA_GIT_COMMIT "unknown"
#endif
const char *metadata_git_commit(void)
{
    return LA_GIT_COMMIT[0] ? LA_GIT_COMMIT : "unknown";
}

void metadata_utc_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* s with its control characters written as \n, \t, \r or \xHH, so a metadata line
 * stays one line whatever an argument or a path holds. keep_lines: a newline that
 * starts another `#` line is kept (the extra metadata lines), any other is escaped. */
void metadata_put_escaped(FILE *out, const char *s, int keep_lines)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '\n' && keep_lines && (c[1] == '#' || c[1] == 0))
            fputc('\n', out);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c == '\t')
            fputs("\\t", out);
        else if (*c == '\r')
            fputs("\\r", out);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\x%02x", *c);
        else
            fputc(*c, out);
    }
}

void metadata_write_command(FILE *out, int argc, char **argv)
{
    fputs("build/linattn", out);
    for (int i = 0; i < argc; i++) {
        fputc(' ', out);
        metadata_put_escaped(out, argv[i], 0);
    }
    fputc('\n', out);
}

static char meta_extra[2048];

void metadata_extra(const char *lines)
{
    snprintf(meta_extra, sizeof meta_extra, "%s", lines ? lines : "");
}

void metadata_write(FILE *out, const char *experiment, const char *about, int argc, char **argv)
{
    char date[32];
    metadata_utc_now(date, sizeof date);
    int reset = memory_peak_reset();
    fprintf(out, "# linattn %s: %s\n", experiment, about);
    fputs("# command: ", out);
    metadata_write_command(out, argc, argv);
    fprintf(out, "# date: %s\n", date);
    fprintf(out, "# git_commit: %s\n", metadata_git_commit());
    fprintf(out, "# cpu: %s\n", machine_cpu_model());
    fprintf(out, "# cores: %d\n", machine_cores());
    /* the count asked for and, when it was above the cores, the count run on (linattn.h) */
    const int threads = la_get_num_threads(), requested = la_num_threads_requested();
    fprintf(out, "# threads: %d\n", threads);
    if (requested == threads)
        fprintf(out, "# threads_requested: %d\n", requested);
    else
        fprintf(out, "# threads_requested: %d (clamped to the %d online cores)\n", requested,
                threads);
    fprintf(out,
            "# load_average: %s (other processes competing for the cores add "
            "noise to timings)\n",
            machine_load_average());
    const machine_report *check = machine_checked();
    if (check) machine_write_meta(out, check);
    fprintf(out, "# blis: %s, kernels %s\n", la_config().blis_version, la_config().blis_config);
    fprintf(out, "# float32 kernels: %s\n", la_config().simd);
    fprintf(out, "# linattn: %s\n", LA_VERSION_STRING);
    fprintf(out, "# peak_rss: %s\n",
            reset ? "VmHWM after the point, reset before it via /proc/self/clear_refs; "
                    "includes inputs, outputs and the program"
                  : "VmHWM since the process started (clear_refs unavailable): an upper "
                    "bound, monotone over the sweep");
    metadata_put_escaped(out, meta_extra, 1);
}
