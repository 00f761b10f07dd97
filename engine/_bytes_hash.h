/* A hash of a byte string, eight bytes a round: shared by the encoder's vocabulary and
 * pre-token cache and the counting tally's table (pre-tokens are short, but a corpus without
 * spaces has some of megabytes). */
#ifndef ENGINE_BYTES_HASH_H
#define ENGINE_BYTES_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t bytes_hash(const uint8_t *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n, w;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 32);
}

#endif
