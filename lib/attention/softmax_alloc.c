/* softmax_alloc.c — large score-matrix allocation with a transparent-huge-page hint.
 *
 * The materializing kernel allocates its N×M matrix afresh on every call. With 4 KiB
 * pages the first touch of each page is a page fault: perf put 17% of that kernel's
 * time (N = M = 4096, float32) in the kernel's fault path. madvise(MADV_HUGEPAGE) asks
 * Linux for 2 MiB pages instead; it is only a hint, and where it does not exist (or
 * fails) the memory is ordinary. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE (glibc) */

#include "attention/softmax_alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

void *la_scores_alloc(size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes >= LA_HUGE_PAGE_MIN) {
        const size_t huge = (size_t)2 << 20;
        void *p = NULL;
        if (posix_memalign(&p, huge, bytes) != 0) return NULL;
        /* only the whole 2 MiB pages inside the block: never memory it does not own */
        (void)madvise(p, bytes / huge * huge, MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(bytes);
}
