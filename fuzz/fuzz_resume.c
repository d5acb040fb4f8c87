/* fuzz_resume.c — libFuzzer target for the CSV reader behind --resume: the input is an
 * existing results file (columns a,b,c, key a,b). record_open(..., resume) must keep only
 * whole rows or refuse with a reason, and after one more row is appended the file must
 * read back (record_load) with every row whole and a newline at the end; never read out of
 * bounds, leak or crash. Built and run by `make fuzz` from experiments/common/record.c
 * (with the rows.c, metadata.c, lock.c, machine.c, timer.c, memory.c and stats.c it
 * calls), lib/io/outfile.c and lib/core/status.c, with stand-ins for the machine facts
 * the metadata header records (below). */
#include "common/record.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* stand-ins: metadata.c writes these into headers; the kernels are never timed here */
int la_get_num_threads(void)
{
    return 1;
}
int la_num_threads_requested(void)
{
    return 1;
}
la_config_info la_config(void)
{
    return (la_config_info){"fuzz", "fuzz", "fuzz", "fuzz"};
}
la_status la_attention(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                       const void *k, const void *v, void *out)
{
    (void)kernel, (void)p, (void)dtype, (void)q, (void)k, (void)v, (void)out;
    return LA_EINVAL;
}

static char path[64];

/* Every row of f has three fields. */
static void check_rows(const record_file *f)
{
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        int commas = 0;
        for (const char *c = row; *c; c++)
            commas += *c == ',';
        if (commas != 2 || strchr(row, '\n')) abort();
    }
}

/* At exit: the file and its folder go. */
static void remove_dir(void)
{
    unlink(path);
    *strrchr(path, '/') = 0;
    rmdir(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        /* on tmpfs when there is one: fsync there costs nothing */
        char dir[64] = "/dev/shm/fuzz_resume.XXXXXX";
        if (!mkdtemp(dir) && !mkdtemp(strcpy(dir, "/tmp/fuzz_resume.XXXXXX"))) abort();
        snprintf(path, sizeof path, "%s/r.csv", dir);
        atexit(remove_dir);
    }
    FILE *in = fopen(path, "wb");
    if (!in || (size && fwrite(data, 1, size, in) != size) || fclose(in) != 0) abort();

    char err[512] = "", *argv[] = {"fuzz"};
    record_file *f = record_open(path, "fuzz", "fuzzing", "a,b,c", 2, 1, 1, argv, err, sizeof err);
    if (!f) {
        if (!err[0]) abort(); /* a refusal says why */
        return 0;
    }
    check_rows(f);
    size_t kept = record_count(f);
    (void)record_find(f, "x,y");
    if (record_row(f, "x,y,%d", 1) != 0) abort();
    if (record_close(f) != 0) abort();

    /* read back: the kept rows, the new one, every row whole, a final newline */
    f = record_load(path, 2, err, sizeof err);
    if (!f) abort();
    check_rows(f);
    const char *last = record_count(f) ? record_row_at(f, record_count(f) - 1) : NULL;
    if (record_count(f) < kept + 1 || !last || strcmp(last, "x,y,1") != 0) abort();
    record_close(f);
    FILE *back = fopen(path, "rb");
    if (!back || fseek(back, -1, SEEK_END) != 0 || fgetc(back) != '\n') abort();
    fclose(back);
    return 0;
}
