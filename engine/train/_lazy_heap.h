/* The lazy max-heap of the merge trainers, BPE's core and WordPiece's (seed lecture 000,
 * PART 3): a binary heap in an array, whose entries go stale as counts change and are
 * corrected or dropped when they reach the top; and a walk of its entries in order without
 * popping them (a step's ties, top_pairs).
 *
 * What an entry holds and which of two comes first are each core's own, so this file is
 * written against names each core defines before including it:
 *
 * - ``Entry``, a heap entry;
 * - ``Core``, with ``Entry *heap`` and ``int32_t heapn, heapcap``;
 * - ``before(c, e, f)``: does entry ``*e`` come off the heap before ``*f``.
 */
#ifndef ENGINE_LAZY_HEAP_H
#define ENGINE_LAZY_HEAP_H

#include <stdint.h>
#include <stdlib.h>

#include "_grow.h"

static inline void sift_down(Core *c, int32_t i) {
    Entry *h = c->heap, e = h[i];
    int32_t n = c->heapn;
    for (;;) {
        int32_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(c, &h[child + 1], &h[child])) child++;
        if (!before(c, &h[child], &e)) break;
        h[i] = h[child];
        i = child;
    }
    h[i] = e;
}

/* Push ``e``: 0, or -1 with MemoryError set. */
static inline int heap_add(Core *c, Entry e) {
    if (grow((void **)&c->heap, &c->heapcap, (int64_t)c->heapn + 1, sizeof(Entry))) return -1;
    int32_t i = c->heapn++;
    while (i > 0) {
        int32_t parent = (i - 1) / 2;
        if (!before(c, &e, &c->heap[parent])) break;
        c->heap[i] = c->heap[parent];
        i = parent;
    }
    c->heap[i] = e;
    return 0;
}

static inline Entry heap_pop(Core *c) {
    Entry top = c->heap[0];
    c->heap[0] = c->heap[--c->heapn];
    if (c->heapn) sift_down(c, 0);
    return top;
}

/* Heap order over entries laid in the array in any order: a fresh heap. */
static inline void heapify(Core *c) {
    for (int32_t i = c->heapn / 2 - 1; i >= 0; i--) sift_down(c, i);
}

/* Heap entries in order without popping: a small frontier heap of indices walks the big
 * heap's tree from the root, so the first k entries cost O(k log k). */
typedef struct {
    const Core *c;
    int32_t *f;
    int32_t n, cap;
} Walk;

static inline int walk_before(const Walk *w, int32_t i, int32_t j) {
    return before(w->c, &w->c->heap[i], &w->c->heap[j]);
}

static inline int walk_add(Walk *w, int32_t i) {
    if (grow((void **)&w->f, &w->cap, (int64_t)w->n + 1, sizeof(int32_t))) return -1;
    int32_t k = w->n++;
    while (k > 0 && walk_before(w, i, w->f[(k - 1) / 2])) {
        w->f[k] = w->f[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    w->f[k] = i;
    return 0;
}

/* A walk from the root of c's heap: 0, or -1 with MemoryError set. */
static inline int walk_start(Walk *w, const Core *c) {
    *w = (Walk){c, NULL, 0, 0};
    return c->heapn ? walk_add(w, 0) : 0;
}

/* The next heap index in order, -1 when done, -2 on error. */
static inline int32_t walk_next(Walk *w) {
    if (!w->n) return -1;
    int32_t top = w->f[0], last = w->f[--w->n], k = 0;
    for (;;) {
        int32_t child = 2 * k + 1;
        if (child >= w->n) break;
        if (child + 1 < w->n && walk_before(w, w->f[child + 1], w->f[child])) child++;
        if (!walk_before(w, w->f[child], last)) break;
        w->f[k] = w->f[child];
        k = child;
    }
    if (w->n) w->f[k] = last;
    for (int32_t child = 2 * top + 1; child <= 2 * top + 2; child++)
        if (child < w->c->heapn && walk_add(w, child)) return -2;
    return top;
}

#endif
