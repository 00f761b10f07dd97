/* The lowest and highest set bit of a 64-bit word, in portable C (no compiler builtins): the
 * pre-tokenizer reads pre-token starts off its class masks, the BPE trainer's core finds the
 * token starts and word ends it marks in bitmaps. And PREFETCH: memory a loop will read a few
 * iterations later, asked for now (the tally's and the encoder's table slots for a batch of
 * pre-tokens, the cells at a merge's next positions), so the processor fetches many at once
 * rather than waiting on each in turn. */
#ifndef ENGINE_BITS_H
#define ENGINE_BITS_H

#include <stdint.h>

/* A hint only, through the SSE intrinsic gcc, clang and MSVC all have on x86; elsewhere nothing. */
#if defined(__SSE__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 1)
#include <xmmintrin.h>
#define PREFETCH(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The index of the lowest set bit of x (x != 0): a de Bruijn multiply. */
static inline int lowest_bit(uint64_t x) {
    static const uint8_t index[64] = {
        0,  1,  2,  53, 3,  7,  54, 27, 4,  38, 41, 8,  34, 55, 48, 28, 62, 5,  39, 46, 44, 42,
        22, 9,  24, 35, 59, 56, 49, 18, 29, 11, 63, 52, 6,  26, 37, 40, 33, 47, 61, 45, 43, 21,
        23, 58, 17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12,
    };
    return index[((x & (0 - x)) * 0x022FDD63CC95386DULL) >> 58];
}

/* The index of the highest set bit of x (x != 0): every bit below it set, then the one bit
 * above those found as the lowest. */
static inline int highest_bit(uint64_t x) {
    x |= x >> 1;
    x |= x >> 2;
    x |= x >> 4;
    x |= x >> 8;
    x |= x >> 16;
    x |= x >> 32;
    return lowest_bit((x >> 1) + 1);
}

#endif
