/* The encoder's merge loop (Tokenizer._bpe in engine/tokenizer.py), compiled.
 *
 * A pre-token starts as the ids of its bytes; each round merges the adjacent pair of lowest
 * merge rank, the leftmost where several share it, until no pair is in the merge list. Only
 * the two ranks beside a merge change, so each round is one scan for the minimum and one
 * shift. The Python loop stays as the one that records its rounds (encode_steps, the
 * encode view); tests/test_tokenizer.py checks the two agree.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_pair_hash.h"

#define NO_RANK UINT32_MAX /* a pair not in the merge list */
#define ON_STACK 256       /* pre-tokens up to this many bytes need no allocation */

typedef struct {
    PyObject_HEAD
    uint32_t byte_ids[256];
    uint64_t *keys;   /* (left << 32 | right) of each merge, by hash */
    uint32_t *ranks;  /* its rank, beside it */
    uint32_t mask;
    uint32_t *merged; /* the id each rank makes */
    Py_ssize_t nmerged;
} MergeRanks;

static inline uint32_t rank_of(const MergeRanks *m, uint32_t a, uint32_t b) {
    uint64_t key = pair_key((int32_t)a, (int32_t)b);
    for (uint32_t i = slot_of(key, m->mask);; i = (i + 1) & m->mask) {
        if (m->keys[i] == key) return m->ranks[i];
        if (m->keys[i] == EMPTY_KEY) return NO_RANK;
    }
}

static int as_id(PyObject *o, uint32_t *out) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > 0x10FFFF) {
        PyErr_SetString(PyExc_ValueError, "token ids and ranks must lie in 0-0x10FFFF");
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* MergeRanks(byte_ids, rank_of, merged): the id of each byte, the rank of each merged pair
 * of ids, and the id each rank makes. */
static int MergeRanks_init(MergeRanks *m, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *byte_ids, *pairs, *merged;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &byte_ids, &PyDict_Type, &pairs, &PyList_Type, &merged))
        return -1;
    if (m->keys) {
        PyErr_SetString(PyExc_RuntimeError, "a MergeRanks is initialized once");
        return -1;
    }
    if (PyList_GET_SIZE(byte_ids) != 256) {
        PyErr_SetString(PyExc_ValueError, "byte_ids must hold 256 ids");
        return -1;
    }
    for (int b = 0; b < 256; b++)
        if (as_id(PyList_GET_ITEM(byte_ids, b), &m->byte_ids[b])) return -1;
    m->nmerged = PyList_GET_SIZE(merged);
    m->merged = PyMem_New(uint32_t, m->nmerged ? m->nmerged : 1);
    if (!m->merged) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t r = 0; r < m->nmerged; r++)
        if (as_id(PyList_GET_ITEM(merged, r), &m->merged[r])) return -1;
    uint32_t size = 16;
    while (size < 2 * (uint64_t)PyDict_GET_SIZE(pairs)) size *= 2;  /* at most half full */
    m->mask = size - 1;
    m->keys = PyMem_New(uint64_t, size);
    m->ranks = PyMem_New(uint32_t, size);
    if (!m->keys || !m->ranks) {
        PyErr_NoMemory();
        return -1;
    }
    memset(m->keys, 0xff, size * sizeof(uint64_t));
    PyObject *pair, *rank;
    Py_ssize_t at = 0;
    while (PyDict_Next(pairs, &at, &pair, &rank)) {
        uint32_t a, b, r;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "rank_of keys must be pairs of ids");
            return -1;
        }
        if (as_id(PyTuple_GET_ITEM(pair, 0), &a) || as_id(PyTuple_GET_ITEM(pair, 1), &b) || as_id(rank, &r))
            return -1;
        if (r >= m->nmerged) {
            PyErr_SetString(PyExc_ValueError, "a rank has no merged id");
            return -1;
        }
        uint64_t key = pair_key((int32_t)a, (int32_t)b);
        uint32_t i = slot_of(key, m->mask);
        while (m->keys[i] != EMPTY_KEY && m->keys[i] != key) i = (i + 1) & m->mask;
        m->keys[i] = key;
        m->ranks[i] = r;
    }
    return 0;
}

static void MergeRanks_dealloc(MergeRanks *m) {
    PyMem_Free(m->keys);
    PyMem_Free(m->ranks);
    PyMem_Free(m->merged);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* ids(piece: bytes) -> str: the token ids of one pre-token, each as a code point (the form
 * the tokenizer caches and joins). */
static PyObject *MergeRanks_ids(MergeRanks *m, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "ids() takes bytes");
        return NULL;
    }
    const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    uint32_t stack[2 * ON_STACK], *ids = stack;
    if (n > ON_STACK && !(ids = PyMem_New(uint32_t, 2 * (size_t)n))) return PyErr_NoMemory();
    uint32_t *ranks = ids + n; /* ranks[i]: the rank of (ids[i], ids[i + 1]) */
    for (Py_ssize_t i = 0; i < n; i++) ids[i] = m->byte_ids[s[i]];
    for (Py_ssize_t i = 0; i + 1 < n; i++) ranks[i] = rank_of(m, ids[i], ids[i + 1]);
    while (n > 1) {
        Py_ssize_t best = 0;
        for (Py_ssize_t i = 1; i < n - 1; i++)
            if (ranks[i] < ranks[best]) best = i;
        if (ranks[best] == NO_RANK) break;
        ids[best] = m->merged[ranks[best]];
        memmove(ids + best + 1, ids + best + 2, (size_t)(n - best - 2) * sizeof(uint32_t));
        memmove(ranks + best, ranks + best + 1, (size_t)(n - best - 2) * sizeof(uint32_t));
        n--;
        if (best > 0) ranks[best - 1] = rank_of(m, ids[best - 1], ids[best]);
        if (best < n - 1) ranks[best] = rank_of(m, ids[best], ids[best + 1]);
    }
    PyObject *out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, ids, n);
    if (ids != stack) PyMem_Free(ids);
    return out;
}

static PyMethodDef MergeRanks_methods[] = {
    {"ids", (PyCFunction)MergeRanks_ids, METH_O, "The ids of one pre-token's bytes, as a str of code points."},
    {NULL},
};

static PyTypeObject MergeRanksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine._encoder_core.MergeRanks",
    .tp_basicsize = sizeof(MergeRanks),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tokenizer's merge ranks, for merging pre-tokens.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)MergeRanks_init,
    .tp_dealloc = (destructor)MergeRanks_dealloc,
    .tp_methods = MergeRanks_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine._encoder_core", "The encoder's compiled merge loop.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__encoder_core(void) {
    if (PyType_Ready(&MergeRanksType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&MergeRanksType);
    if (PyModule_AddObject(m, "MergeRanks", (PyObject *)&MergeRanksType) < 0) {
        Py_DECREF(&MergeRanksType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
