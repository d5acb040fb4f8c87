/* alloc_large.h — a kernel's large scratch (the materializing kernel's score matrix,
 * FAVOR+'s and the feature-based backward passes' features): one allocation per call.
 * Internal to the library (not installed). */
#ifndef LA_ALLOC_LARGE_H
#define LA_ALLOC_LARGE_H

#include <stddef.h>

/* bytes of memory (NULL when there is none), released with free(). Exactly bytes are
 * allocated; where the system has transparent huge pages (Linux, MADV_HUGEPAGE), a block
 * of at least LA_HUGE_PAGE_MIN bytes starts on a 2 MiB boundary and its whole 2 MiB
 * pages are marked for huge pages: a fresh 64 MiB block then costs 32 page faults
 * instead of 16384. */
#define LA_HUGE_PAGE_MIN ((size_t)4 << 20)
void *la_alloc_large(size_t bytes);

#endif
