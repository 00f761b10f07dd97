/* Characters whose own merges come first (engine/encode/_whole_chars.c).
 *
 * Merging a pre-token from its bytes, most of the rounds on Chinese text only rebuild
 * characters: the three bytes of 道 become one token before anything joins it to its
 * neighbours. Where that order is certain, the merge loop can start from the character's
 * tokens instead of its bytes and give the same ids: WholeChars says where. */
#ifndef ENGINE_WHOLE_CHARS_H
#define ENGINE_WHOLE_CHARS_H

#include <stddef.h>
#include <stdint.h>

/* The bytes a character's neighbours must not end or start with: its merges come first
 * between any two bytes b, a (the last byte of what stands before it, the first of what
 * follows) unless bit b of before or bit a of after is set: there a merge of lower rank could
 * join part of it to that neighbour. Characters share them: o200k's 35,391 have 623. */
typedef struct {
    uint64_t before[4];
    uint64_t after[4];
} Edges;

/* A character of two or three bytes, merged on its own into one id or two (none: start
 * from its bytes), and its Edges, in 8 bytes: the ids 21 bits each (every id lies below
 * 0x110000), how many of them, then the index of its Edges (whole_char). A text's characters
 * take half the processor's cache that 16-byte entries did, whose reads were a tenth of
 * merging Chinese text under o200k the first time. 0: none. A character of one id keeps in
 * the second id's bits its followers (whole_char_may_precede). */
typedef uint64_t WholeChar;

static inline WholeChar whole_char(uint32_t id0, uint32_t id1, uint32_t nids, uint32_t edges) {
    return (uint64_t)id0 | (uint64_t)id1 << 21 | (uint64_t)nids << 42 | (uint64_t)edges << 44;
}

/* Its id k (0 or 1), and how many it has. */
static inline uint32_t whole_char_id(WholeChar c, int k) {
    return (uint32_t)(c >> 21 * k) & 0x1FFFFF;
}

static inline uint32_t whole_char_nids(WholeChar c) {
    return (uint32_t)(c >> 42) & 3;
}

/* The bit of the 21 of a character's followers that stands for id. */
static inline uint32_t follower_bit(uint32_t id) {
    return (uint32_t)((uint64_t)(uint32_t)(id * 2654435761u) * 21 >> 32);
}

/* Whether a merge may join the id of c, a character of one id, to id after it: its followers
 * are a Bloom filter of the ids that follow its id in a merge, so a pair of characters that
 * no merge joins is mostly known without a look at the merges (under o200k, 82% of the pairs
 * of Chinese characters in zh-xiyouji's pre-tokens). */
static inline int whole_char_may_precede(WholeChar c, uint32_t id) {
    return (int)(c >> (21 + follower_bit(id)) & 1);
}

typedef struct {
    WholeChar *index; /* for each code point below 0x10000: one load a character */
    Edges *edges;
} WholeChars;

/* The rank of the pair (a, b), or UINT32_MAX for a pair that is not merged. */
typedef uint32_t (*PairRank)(const void *ranks, uint32_t a, uint32_t b);

/* Fill w from the merges: rank r joins left[r] and right[r] into made[r] (left[r] ==
 * UINT32_MAX: rank r merges nothing), byte b starts as byte_ids[b], rank(ranks, a, b) looks
 * a pair up. 0, or -1 when out of memory (w is then empty). */
int whole_chars_build(WholeChars *w, const uint32_t byte_ids[256], const uint32_t *left, const uint32_t *right,
                      const uint32_t *made, uint32_t nmerged, PairRank rank, const void *ranks);

void whole_chars_free(WholeChars *w);

static inline int whole_char_bit(const uint64_t *bits, uint8_t b) {
    return (int)(bits[b >> 6] >> (b & 63) & 1);
}

/* The WholeChar of the character at s[i] (s holding n bytes), if its merges come first
 * between the bytes around it; its length in *len. 0: start from its bytes. */
static inline WholeChar whole_char_at(const WholeChars *w, const uint8_t *s, size_t n, size_t i, size_t *len) {
    uint8_t b = s[i];
    uint32_t cp;
    if (b >= 0xC2 && b < 0xE0 && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
        cp = (uint32_t)(b & 0x1F) << 6 | (s[i + 1] & 0x3F);
        *len = 2;
    } else if (b >= 0xE0 && b < 0xF0 && i + 2 < n && (s[i + 1] & 0xC0) == 0x80 && (s[i + 2] & 0xC0) == 0x80) {
        cp = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F);
        if (cp < 0x800) return 0; /* an overlong form: not the bytes of that character */
        *len = 3;
    } else {
        return 0;
    }
    WholeChar c = w->index[cp];
    if (!c) return 0;
    const Edges *e = &w->edges[c >> 44];
    if (i > 0 && whole_char_bit(e->before, s[i - 1])) return 0;
    if (i + *len < n && whole_char_bit(e->after, s[i + *len])) return 0;
    return c;
}

#endif
