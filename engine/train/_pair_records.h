/* The pair records of the merge trainers, BPE's core and WordPiece's (seed lecture 000,
 * PART 3): one record per pair ever seen, holding its pair_counter count, found through a
 * hash table from (left, right) token ids; and the change a merge makes to a neighbouring
 * pair's count, which notes the count before (the step's Touch) and the pair's new position.
 *
 * The two cores keep different records, and note changes and store pair_positions their own
 * way (a BPE record is 32 bytes with its first positions inside it, so it has no room for a
 * mark), so this file is written against names each core defines before including it:
 *
 * - ``PairRec``, with ``int32_t a, b`` (the pair) and ``int64_t count`` (pair_counter);
 * - ``Core``, with ``PairRec *pairs``, ``int32_t npairs, paircap``, ``Slot *slots``
 *   (the hash table, below), ``uint32_t hmask, hused``, ``Touch
 *   *touch``, ``int32_t ntouch, touchcap`` and ``int64_t stored`` (positions in the lists);
 * - ``new_record(c)``: the id of a record to make (room for it, and for what the core keeps
 *   beside each, zeroed), or -1 with an exception set; ``add_position(c, p, at)``: position ``at`` into pair ``p``'s pair_positions
 *   (both 0, or -1 with an exception set); ``change_noted(c, p)`` and ``note_change(c, p)``:
 *   whether pair ``p``'s count before this step is noted, and noting that it is.
 */
#ifndef ENGINE_PAIR_RECORDS_H
#define ENGINE_PAIR_RECORDS_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_grow.h"
#include "_pair_hash.h"
#include "_step_events.h"

/* A hash table of ``size`` slots (a power of two), all free; NULL with MemoryError. */
static inline int32_t *free_slots(uint32_t size) {
    int32_t *slots = malloc(size * sizeof(int32_t));
    if (!slots) {
        PyErr_NoMemory();
        return NULL;
    }
    memset(slots, 0xff, size * sizeof(int32_t));
    return slots;
}

/* A pair table of ``size`` slots (a power of two), all free; NULL with MemoryError. */
static inline Slot *free_pair_slots(uint32_t size) {
    Slot *slots = malloc(size * sizeof(Slot));
    if (!slots) {
        PyErr_NoMemory();
        return NULL;
    }
    memset(slots, 0xff, size * sizeof(Slot));
    return slots;
}

/* The slot of (a, b) in the hash table, or the free slot where it would go. */
static inline uint32_t probe(const Core *c, int32_t a, int32_t b) {
    uint32_t h = pair_hash(a, b), i = h & c->hmask;
    for (;; i = (i + 1) & c->hmask) {
        Slot s = c->slots[i];
        int32_t p = slot_record(s);
        if (p < 0 || ((uint32_t)(s >> 32) == h && c->pairs[p].a == a && c->pairs[p].b == b)) return i;
    }
}

/* The record of (a, b), or -1 if the pair was never seen. */
static inline int32_t find_pair(const Core *c, int32_t a, int32_t b) {
    return slot_record(c->slots[probe(c, a, b)]);
}

static inline int rehash(Core *c, uint32_t size) {
    Slot *slots = free_pair_slots(size);
    if (!slots) return -1;
    uint32_t mask = size - 1;
    for (int32_t p = 0; p < c->npairs; p++) {
        if (c->pairs[p].a < 0) continue;  /* a record given up, for reuse */
        uint32_t h = pair_hash(c->pairs[p].a, c->pairs[p].b), i = h & mask;
        while (slot_record(slots[i]) >= 0) i = (i + 1) & mask;
        slots[i] = slot_for(h, p);
    }
    free(c->slots);
    c->slots = slots;
    c->hmask = mask;
    return 0;
}

/* The record of (a, b), made with count 0 if new; -1 on error. */
static inline int32_t get_pair(Core *c, int32_t a, int32_t b) {
    uint32_t i = probe(c, a, b);
    if (slot_record(c->slots[i]) >= 0) return slot_record(c->slots[i]);
    int32_t p = new_record(c);
    if (p < 0) return -1;
    c->pairs[p] = (PairRec){.a = a, .b = b};
    c->slots[i] = slot_for(pair_hash(a, b), p);
    if (++c->hused * 2 > c->hmask + 1 && rehash(c, (c->hmask + 1) * 2)) return -1;
    return p;
}

/* Take record ``p``'s pair out of the hash table: the records after it in its run of full
 * slots move back where their own slot allows, so every probe still finds them. */
static inline void unslot(Core *c, int32_t p) {
    uint32_t i = probe(c, c->pairs[p].a, c->pairs[p].b), j = i;
    for (;;) {
        j = (j + 1) & c->hmask;
        Slot q = c->slots[j];
        if (slot_record(q) < 0) break;
        uint32_t home = (uint32_t)(q >> 32) & c->hmask;
        if (((j - home) & c->hmask) >= ((j - i) & c->hmask)) {  /* its slot is not after i */
            c->slots[i] = q;
            i = j;
        }
    }
    c->slots[i] = FREE_SLOT;
    c->hused--;
}

/* Change the count of (x, y) by ``delta`` in the merge of record ``merged``, noting its count
 * before the step (and the side) on its first change; ``at`` >= 0 is a position where the
 * pair now starts (a pair gaining records it). A pair that loses count without a record is
 * one a plain run of BPE's core gave up (its count no longer kept): nothing to change. */
static inline int change(Core *c, int32_t merged, int32_t x, int32_t y, int64_t delta, int side, int64_t at) {
    int32_t p = at >= 0 ? get_pair(c, x, y) : find_pair(c, x, y);
    if (p < 0) return at >= 0 ? -1 : 0;  /* a pair losing count that has no record was given up */
    if (p == merged) return 0;  /* (a, a) is also a pair lost by its own merge: it is gone */
    PairRec *r = &c->pairs[p];
    if (!change_noted(c, p)) {
        if (grow((void **)&c->touch, &c->touchcap, (int64_t)c->ntouch + 1, sizeof(Touch))) return -1;
        c->touch[c->ntouch++] = (Touch){p, side, r->count};
        note_change(c, p);
    }
    r->count += delta;  /* may pass below 0 mid-step: "abab" gains (new, a) and loses it */
    if (at >= 0) {
        if (add_position(c, p, at)) return -1;
        c->stored++;
    }
    return 0;
}

/* -- as Python objects -------------------------------------------------------------------- */

/* (a, b) */
static inline PyObject *pair_tuple(const PairRec *p) {
    return Py_BuildValue("(ii)", p->a, p->b);
}

/* ((a, b), count) */
static inline PyObject *pair_with_count(const PairRec *p, int64_t count) {
    return Py_BuildValue("(NL)", pair_tuple(p), (long long)count);
}

/* dict[(a, b)] = the pair's count: 0, or -1 with an exception set. */
static inline int put_pair_count(PyObject *dict, const PairRec *p) {
    PyObject *key = pair_tuple(p), *value = PyLong_FromLongLong(p->count);
    int r = !key || !value || PyDict_SetItem(dict, key, value) ? -1 : 0;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return r;
}

#endif
