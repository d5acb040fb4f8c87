/* memory.h — the peak-resident-memory probe the timer (timer.h) reads around each
 * body's warm-up call. Uses nothing else of the harness. */
#ifndef LA_MEMORY_H
#define LA_MEMORY_H

/* The peak resident memory of a point is measured by the timer around each body's
 * warm-up call, which runs alone (timer_result's baseline_rss_bytes, peak_rss_bytes):
 * the process's VmHWM (/proc/self/status) after it, with the high-water mark reset just
 * before it by writing "5" to /proc/self/clear_refs (Linux >= 4.0). It includes
 * everything resident: the inputs, the outputs, the kernel's scratch and the program
 * itself; VmRSS just before the call is the baseline, so the kernel's own share is the
 * difference. Where the mark cannot be reset, VmHWM is the peak since the process
 * started, and the files say so (# peak_rss). */
/* Called once at start: big blocks are mmapped and returned to the system when freed,
 * so one point's buffers do not stay resident into the next. */
void memory_init(void);

/* Resets the process's high-water mark (VmHWM); returns 1 when it could, 0 where
 * /proc/self/clear_refs is unavailable (the mark is then the peak since start). */
int memory_peak_reset(void);
/* VmHWM and VmRSS of /proc/self/status, in bytes; -1 when unknown. */
double memory_peak_rss_bytes(void);
double memory_rss_bytes(void);

#endif
