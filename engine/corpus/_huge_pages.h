/* Ask that the whole 2 MB pages of the ``size`` bytes at ``p`` be backed by huge pages where
 * the system lends them on request (Linux's transparent huge pages). Large arrays read at
 * scattered places miss the TLB on nearly every read in 4 KB pages, and are faulted in
 * 4 KB at a time when first touched: the trainer's layout. Only a hint: nothing changes
 * where it is refused. (The encoder asks for none: see unset_list in
 * engine/encode/_encoder_core.c.) */
#ifndef ENGINE_HUGE_PAGES_H
#define ENGINE_HUGE_PAGES_H

#include <stddef.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

static inline void advise_huge(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1), end = ((uintptr_t)p + size) & ~(huge - 1);
    if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)p, (void)size;
#endif
}

/* The same for a block glibc gave a mapping of its own (one past its mmap threshold: see
 * engine.corpus.shards.keep_mmap_threshold): the whole mapping is asked, from the page the
 * block's header starts in to the end of its usable size, so the mapping is not split in
 * two or three, and realloc can still move it whole (mremap) as it grows. Asked before the
 * block is filled, its pages are faulted in 2 MB at a time. */
static inline void advise_huge_mapping(void *p, size_t size) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!p || size < ((size_t)2 << 20)) return;
    uintptr_t start = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + malloc_usable_size(p);
    if (end % page == 0) madvise((void *)start, end - start, MADV_HUGEPAGE); /* else not a mapping of its own */
#else
    (void)p, (void)size;
#endif
}

#endif
