/* Positions in words laid out one after another, each word starting at ``starts[w]`` (the
 * BPE core's cells, the Unigram core's characters): the word a position lies in, and
 * positions in order, for qsort. The Unigram core's positions are uint32 (a core whose are
 * int32 passes its starts, never negative, as they are), the BPE core's uint64. */
#ifndef ENGINE_POSITIONS_H
#define ENGINE_POSITIONS_H

#include <stdint.h>

/* The word holding position ``pos``: the last of the ``nwords`` starting at or before it
 * (``word_at`` for uint32 starts, ``word_at64`` for the BPE core's uint64 ones). */
#define WORD_AT(name, Pos)                                                  \
    static inline int32_t name(const Pos *starts, int32_t nwords, Pos pos) { \
        int32_t lo = 0, hi = nwords - 1;                                    \
        while (lo < hi) {                                                   \
            int32_t mid = lo + (hi - lo + 1) / 2;                           \
            if (starts[mid] <= pos) lo = mid;                               \
            else hi = mid - 1;                                              \
        }                                                                   \
        return lo;                                                          \
    }
WORD_AT(word_at, uint32_t)
WORD_AT(word_at64, uint64_t)

static inline int cmp_pos(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

#endif
