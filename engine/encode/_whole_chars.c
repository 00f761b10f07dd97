/* Which characters the merge loop may start whole (engine/encode/_whole_chars.h).
 *
 * Take a character c merged on its own: its bytes, then each round's tokens, until no pair of
 * them merges; M the highest rank it used. Within a pre-token the lowest rank goes first, so
 * while c is unfinished its next merge (rank <= M) goes before any pair that joins one of its
 * tokens to a neighbour, as long as every such pair has a rank above M. The tokens at c's
 * edges are its first and last token of each round (the finished ones too, since those
 * are what the loop would start from); a neighbour before c is a token ending in the byte
 * before c, one after it a token starting with the byte after. So for each edge token, the
 * merges it makes with rank <= M name the bytes a neighbour must not end (or start) with:
 * those become c's before and after bits. Between any other bytes, starting from c's
 * finished tokens gives the same merges in an order that changes no result. */
#include "_whole_chars.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define ANY_BYTE 256 /* a token whose first or last byte is not known: every byte counts */

/* For each token, the merges it makes as the left (or right) member, lowest rank first. */
typedef struct {
    uint32_t *start; /* token t's merges lie at start[t] .. start[t + 1] */
    uint32_t *rank;
    uint32_t *other;
} MergesOf;

static int merges_of(MergesOf *g, uint32_t ntokens, const uint32_t *mine, const uint32_t *other, uint32_t nmerged) {
    g->start = calloc((size_t)ntokens + 1, sizeof(uint32_t));
    g->rank = malloc(((size_t)nmerged + 1) * sizeof(uint32_t));
    g->other = malloc(((size_t)nmerged + 1) * sizeof(uint32_t));
    if (!g->start || !g->rank || !g->other) return -1;
    for (uint32_t r = 0; r < nmerged; r++)
        if (mine[r] != NONE) g->start[mine[r] + 1]++;
    for (uint32_t t = 0; t < ntokens; t++) g->start[t + 1] += g->start[t];
    uint32_t *fill = malloc(((size_t)ntokens + 1) * sizeof(uint32_t));
    if (!fill) return -1;
    memcpy(fill, g->start, ((size_t)ntokens + 1) * sizeof(uint32_t));
    for (uint32_t r = 0; r < nmerged; r++) /* in rank order, so each token's list is sorted */
        if (mine[r] != NONE) {
            uint32_t at = fill[mine[r]]++;
            g->rank[at] = r;
            g->other[at] = other[r];
        }
    free(fill);
    return 0;
}

static void merges_of_free(MergesOf *g) {
    free(g->start);
    free(g->rank);
    free(g->other);
}

static void set_bit(uint64_t *bits, uint16_t b) {
    if (b == ANY_BYTE)
        memset(bits, 0xFF, 4 * sizeof(uint64_t));
    else
        bits[b >> 6] |= 1ULL << (b & 63);
}

/* Mark in bits the edge byte (edge[other]) of each token that token t merges with at rank <= top. */
static void mark(uint64_t *bits, const MergesOf *g, uint32_t t, uint32_t top, const uint16_t *edge) {
    for (uint32_t k = g->start[t]; k < g->start[t + 1] && g->rank[k] <= top; k++) set_bit(bits, edge[g->other[k]]);
}

/* The index of edges in w->edges, added if it is new (count of them there, room for cap; the
 * table of 2 * cap slots finds them by hash, 0 free, else 1 + an index). */
static uint16_t edges_index(WholeChars *w, const Edges *edges, size_t *count, uint32_t *slots, size_t cap) {
    uint64_t h = 0;
    for (int k = 0; k < 4; k++) h = (h ^ edges->before[k] ^ edges->after[k] * 31) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = (size_t)(h >> 40) % (2 * cap);; i = (i + 1) % (2 * cap)) {
        if (!slots[i]) {
            w->edges[*count] = *edges;
            slots[i] = (uint32_t)++*count;
            return (uint16_t)(*count - 1);
        }
        if (!memcmp(&w->edges[slots[i] - 1], edges, sizeof *edges)) return (uint16_t)(slots[i] - 1);
    }
}

int whole_chars_build(WholeChars *w, const uint32_t byte_ids[256], const uint32_t *left, const uint32_t *right,
                      const uint32_t *made, uint32_t nmerged, PairRank rank, const void *ranks) {
    memset(w, 0, sizeof *w);
    uint32_t ntokens = 0;
    for (int b = 0; b < 256; b++)
        if (byte_ids[b] >= ntokens) ntokens = byte_ids[b] + 1;
    for (uint32_t r = 0; r < nmerged; r++)
        if (left[r] != NONE) {
            uint32_t top = left[r] > right[r] ? left[r] : right[r];
            if (made[r] > top) top = made[r];
            if (top >= ntokens) ntokens = top + 1;
        }
    uint16_t *first = malloc((size_t)ntokens * sizeof(uint16_t)), *last = malloc((size_t)ntokens * sizeof(uint16_t));
    MergesOf as_left = {0}, as_right = {0};
    size_t count = 0, cap = 0x10000; /* at most one Edges a character */
    w->index = calloc(0x10000, sizeof(WholeChar));
    w->edges = malloc(cap * sizeof(Edges));
    uint32_t *slots = calloc(2 * cap, sizeof(uint32_t));
    int ok = first && last && w->index && w->edges && slots && !merges_of(&as_left, ntokens, left, right, nmerged) &&
             !merges_of(&as_right, ntokens, right, left, nmerged);
    if (ok) {
        for (uint32_t t = 0; t < ntokens; t++) first[t] = last[t] = ANY_BYTE;
        for (int b = 0; b < 256; b++) first[byte_ids[b]] = last[byte_ids[b]] = (uint16_t)b;
        for (uint32_t r = 0; r < nmerged; r++)
            if (left[r] != NONE && first[made[r]] == ANY_BYTE) {
                first[made[r]] = first[left[r]];
                last[made[r]] = last[right[r]];
            }
    }
    for (uint32_t cp = 0x80; ok && cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue; /* surrogates have no UTF-8 */
        uint32_t ids[3], n;
        if (cp < 0x800) {
            ids[0] = byte_ids[0xC0 | cp >> 6], ids[1] = byte_ids[0x80 | (cp & 0x3F)], n = 2;
        } else {
            ids[0] = byte_ids[0xE0 | cp >> 12], ids[1] = byte_ids[0x80 | (cp >> 6 & 0x3F)];
            ids[2] = byte_ids[0x80 | (cp & 0x3F)], n = 3;
        }
        uint32_t edges[2][4], rounds = 0, top = 0; /* each round's first and last token */
        for (;;) {
            edges[0][rounds] = ids[0], edges[1][rounds] = ids[n - 1], rounds++;
            uint32_t best = NONE, at = 0;
            for (uint32_t i = 0; i + 1 < n; i++) {
                uint32_t r = rank(ranks, ids[i], ids[i + 1]);
                if (r < best) best = r, at = i;
            }
            if (best == NONE) break;
            if (best > top) top = best;
            ids[at] = made[best];
            memmove(ids + at + 1, ids + at + 2, (n - at - 2) * sizeof(uint32_t));
            n--;
        }
        if (rounds == 1) continue; /* its bytes merge with nothing: nothing to skip */
        Edges e = {{0}, {0}};
        for (uint32_t k = 0; k < rounds; k++) {
            mark(e.before, &as_right, edges[0][k], top, last);
            mark(e.after, &as_left, edges[1][k], top, first);
        }
        uint32_t followers = 0;
        for (uint32_t k = as_left.start[ids[0]]; n == 1 && k < as_left.start[ids[0] + 1]; k++)
            followers |= 1u << follower_bit(as_left.other[k]);
        w->index[cp] = whole_char(ids[0], n > 1 ? ids[1] : followers, n, edges_index(w, &e, &count, slots, cap));
    }
    free(slots);
    free(first);
    free(last);
    merges_of_free(&as_left);
    merges_of_free(&as_right);
    if (!ok) {
        whole_chars_free(w);
        return -1;
    }
    return 0;
}

void whole_chars_free(WholeChars *w) {
    free(w->index);
    free(w->edges);
    w->index = NULL;
    w->edges = NULL;
}
