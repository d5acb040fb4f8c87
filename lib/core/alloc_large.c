/* alloc_large.c — a kernel's large scratch, allocated with a transparent-huge-page hint.
 *
 * Kernels whose scratch grows with N (the materializing kernel's N×M matrix, FAVOR+'s
 * features, the feature-based backward passes) allocate it afresh on every call. With
 * 4 KiB pages the first touch of each page is a page fault: perf put 17% of the
 * materializing kernel's time (N = M = 4096, float32) in the kernel's fault path, and
 * FAVOR+ at N = 16,384 ran 25-35% faster with 2 MiB pages. madvise(MADV_HUGEPAGE) asks
 * Linux for 2 MiB pages instead; it is only a hint, and where it does not exist (or
 * fails) the memory is ordinary. */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE (glibc) */

#include "core/alloc_large.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

void *la_alloc_large(size_t bytes)
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
