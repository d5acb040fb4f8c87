/* memory.c — the peak-resident-memory probe (memory.h), from /proc/self. */
#include "memory.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void memory_init(void)
{
    /* A fixed threshold turns off glibc's growing one, which would keep freed blocks of
     * up to 32 MiB in the heap (resident) after the first large free. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

int memory_peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    ok = (fclose(f) == 0) && ok;
    return ok;
}

/* A "Key:   123 kB" line of /proc/self/status, in bytes. */
static double status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    size_t len = strlen(key);
    double bytes = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            bytes = 1024.0 * strtod(line + len + 1, NULL);
            break;
        }
    }
    fclose(f);
    return bytes;
}

double memory_peak_rss_bytes(void)
{
    return status_kb("VmHWM");
}
double memory_rss_bytes(void)
{
    return status_kb("VmRSS");
}
