/* A pair of token ids as one 64-bit hash key, and its home slot in a power-of-two table:
 * shared by the trainer cores' pair tables and the encoder's rank table. */
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

/* A slot of the merge trainers' pair tables (_pair_records.h): the index of the pair's
 * record in its low 32 bits, the 32 bits of its key's hash above them. A probe passes over
 * other pairs by their hash, without reading their records, which lie all over a table of
 * millions. */
typedef uint64_t Slot;
#define FREE_SLOT UINT64_MAX

static inline uint32_t pair_hash(int32_t a, int32_t b) {
    return slot_of(pair_key(a, b), UINT32_MAX);
}

static inline int32_t slot_record(Slot s) {
    return (int32_t)(uint32_t)s;  /* -1 when free */
}

static inline Slot slot_for(uint32_t hash, int32_t p) {
    return (Slot)hash << 32 | (uint32_t)p;
}

#endif
