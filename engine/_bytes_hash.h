/* A hash of a byte string, eight bytes a round: shared by the encoder's vocabulary and
 * pre-token cache and the counting tally's table (pre-tokens are short, but a corpus without
 * spaces has some of megabytes). */
#ifndef ENGINE_BYTES_HASH_H
#define ENGINE_BYTES_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t load_bytes(const uint8_t *s, size_t n) {
    uint64_t w = 0;
    memcpy(&w, s, n);
    return w;
}

/* The words of s[0..n), each mixed in: eight bytes a round, and the last word read whole,
 * overlapping the one before, or two overlapping halves, or three of the bytes (which for
 * n <= 3 are all of them). Every read has a constant size and stays within s[0..n): no byte
 * copies, and no byte beyond the string read. */
static inline uint64_t bytes_hash(const uint8_t *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
    if (n >= 8) {
        const uint8_t *last = s + n - 8;
        for (; s < last; s += 8) {
            h = (h ^ load_bytes(s, 8)) * 0xFF51AFD7ED558CCDULL;
            h ^= h >> 29;
        }
        w = load_bytes(last, 8);
    } else if (n >= 4) {
        w = load_bytes(s, 4) << 32 | load_bytes(s + n - 4, 4);
    } else {
        w = n ? (uint64_t)s[0] << 16 | (uint64_t)s[n >> 1] << 8 | s[n - 1] : 0;
    }
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 32);
}

#endif
