/* What one detailed merge step did, as rows of int64 that engine/train/events.py reads: the
 * pairs whose counts it changed, the heap entries it pushed and the stale ones it met. The
 * BPE and WordPiece cores write the same three kinds; plain runs write none (each writer
 * does nothing unless ``detail`` is set). */
#ifndef ENGINE_STEP_EVENTS_H
#define ENGINE_STEP_EVENTS_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_grow.h"

/* Rows of int64 values, one after another. */
typedef struct {
    int64_t *v;
    int32_t n, cap;       /* int64 values, not rows */
} Rows;

static inline int row(Rows *r, int width, const int64_t *values) {
    if (grow((void **)&r->v, &r->cap, (int64_t)r->n + width, sizeof(int64_t))) return -1;
    memcpy(r->v + r->n, values, (size_t)width * sizeof(int64_t));
    r->n += width;
    return 0;
}

static inline PyObject *rows_bytes(const Rows *r) {
    return PyBytes_FromStringAndSize((const char *)r->v, (Py_ssize_t)r->n * (Py_ssize_t)sizeof(int64_t));
}

/* A pair whose count a merge changed, as noted at its first change: its count before, and
 * which side of the merged pair its neighbour was on. */
typedef struct {
    int32_t pair;
    int side;             /* 0: the neighbour is before the merged pair (prev), 1: after (next) */
    int64_t before;
} Touch;

typedef struct {
    int detail;           /* write the events of this step into the rows below */
    Rows changes;         /* left, right, before, after, side (0 prev, 1 next) */
    Rows pushes;          /* left, right, count */
    Rows stale;           /* left, right, count on the heap, count now */
} Events;

/* A detailed step begins: no rows yet. */
static inline void events_start(Events *e) {
    e->changes.n = e->pushes.n = e->stale.n = 0;
    e->detail = 1;
}

static inline void events_free(Events *e) {
    free(e->changes.v);
    free(e->pushes.v);
    free(e->stale.v);
}

/* Each writer: 0, or -1 with MemoryError set. */

/* Pair (a, b), noted as ``t``, has count ``after`` at the end of the step: a change if it moved. */
static inline int event_change(Events *e, int32_t a, int32_t b, const Touch *t, int64_t after) {
    return e->detail && after != t->before ? row(&e->changes, 5, (int64_t[]){a, b, t->before, after, t->side}) : 0;
}

static inline int event_push(Events *e, int32_t a, int32_t b, int64_t count) {
    return e->detail ? row(&e->pushes, 3, (int64_t[]){a, b, count}) : 0;
}

static inline int event_stale(Events *e, int32_t a, int32_t b, int64_t queued, int64_t now) {
    return e->detail ? row(&e->stale, 4, (int64_t[]){a, b, queued, now}) : 0;
}

#endif
