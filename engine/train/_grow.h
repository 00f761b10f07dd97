/* Arrays that grow: room doubled (from 8 items) until it holds what is asked, with Python's
 * MemoryError when it cannot. Shared by the trainers' cores and their event rows. Rooms and
 * counts are int32: an array never holds 2^31 items. */
#ifndef ENGINE_GROW_H
#define ENGINE_GROW_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>

/* Room in ``*p`` (``*cap`` items of ``item`` bytes) for ``need`` items: 0, or -1 with
 * MemoryError set and the array as it was. */
static inline int grow(void **p, int32_t *cap, int64_t need, size_t item) {
    if (need <= *cap) return 0;
    if (need > INT32_MAX) {
        PyErr_SetString(PyExc_MemoryError, "a trainer array would pass 2^31 items");
        return -1;
    }
    int64_t c = *cap ? *cap : 8;
    while (c < need) c *= 2;
    if (c > INT32_MAX) c = INT32_MAX;
    void *q = realloc(*p, (size_t)c * item);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    *p = q;
    *cap = (int32_t)c;
    return 0;
}

#endif
