/* A pair of token ids as one 64-bit hash key, and its home slot in a power-of-two table:
 * shared by the trainer core's pair table and the encoder's rank table. */
#ifndef ENGINE_PAIR_HASH_H
#define ENGINE_PAIR_HASH_H

#include <stdint.h>

#define EMPTY_KEY UINT64_MAX /* a free slot: no pair of token ids has this key */

static inline uint64_t pair_key(int32_t a, int32_t b) {
    return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b;
}

/* Fibonacci hashing: the multiply spreads both ids over the high bits, which the shift keeps. */
static inline uint32_t slot_of(uint64_t key, uint32_t mask) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

#endif
