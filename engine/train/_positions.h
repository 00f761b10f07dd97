/* Positions in words laid out one after another, each word starting at ``starts[w]`` (the
 * Unigram core's characters): the word a position lies in, and positions in order, for
 * qsort (WordPiece's places). */
#ifndef ENGINE_POSITIONS_H
#define ENGINE_POSITIONS_H

#include <stdint.h>

/* The word holding position ``pos``: the last of the ``nwords`` starting at or before it. */
static inline int32_t word_at(const uint32_t *starts, int32_t nwords, uint32_t pos) {
    int32_t lo = 0, hi = nwords - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (starts[mid] <= pos) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

static inline int cmp_pos(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

#endif
