/* engine.formats._ranks_core: the merges of a rank file (tiktoken's .tiktoken), recovered.
 *
 * A rank file lists tokens by rank and holds no merges. tiktoken merges, in a pre-token, the
 * adjacent pair whose joined bytes are the token of lowest rank (the leftmost such pair on a
 * tie), until no joined pair is a token. A token's merge is therefore the last step of that
 * loop over its own bytes with only lower-ranked tokens allowed: the loop must end with two
 * parts, the token's left and right. With one merge per token, in rank order, the engine's
 * merge loop takes the same steps as tiktoken's on every text (see Tokenizer.from_tiktoken).
 *
 * recover_merges(tokens) runs that loop over each token in rank order (tokens[i] is the token
 * of the i-th lowest rank), with the engine's merge loop and the merges found so far: for a
 * rank file that BPE made, every step tiktoken's loop takes over a token's bytes is the merge
 * of the token it makes, found before (that token's bytes alone go through the same steps),
 * so both loops agree and each look-up is one pair of ids in a hash table. A token of n
 * bytes costs O(n^2); o200k's 200,000 tokens take a few tens of ms.
 *
 * Why C: the same loop in Python costs over a second for o200k, paid each time a screen
 * opens the file.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define NONE INT32_MAX /* a pair that joins to no lower-ranked token */
#define FREE UINT64_MAX   /* a free slot of the pair table */
#define BITS 21           /* ids below 2^21: a pair and what it makes fit one 64-bit slot */

/* Merges made so far: (left, right) -> the position of the token they make. A slot holds
 * left << 42 | right << 21 | made, by Fibonacci hashing of the pair into a power-of-two
 * table; the merges of two bytes, most of the look-ups, are also in a table of their own. */
typedef struct {
    uint64_t *slots;
    uint64_t mask;
    int32_t *of_bytes; /* [a << 8 | b] for a, b below 256, the ids of single bytes */
} Pairs;

static inline uint64_t home(uint64_t pair, uint64_t mask) { return (pair * 0x9E3779B97F4A7C15ULL) >> 32 & mask; }

static inline int32_t merged(const Pairs *p, int32_t a, int32_t b) {
    if ((a | b) < 256) return p->of_bytes[a << 8 | b];
    uint64_t pair = (uint64_t)a << BITS | (uint64_t)b;
    for (uint64_t i = home(pair, p->mask);; i = (i + 1) & p->mask) {
        uint64_t slot = p->slots[i];
        if (slot >> BITS == pair) return (int32_t)(slot & ((1 << BITS) - 1));
        if (slot == FREE) return NONE;
    }
}

static inline void add(Pairs *p, int32_t a, int32_t b, int32_t made) {
    if ((a | b) < 256) {
        p->of_bytes[a << 8 | b] = made;
        return;
    }
    uint64_t pair = (uint64_t)a << BITS | (uint64_t)b, i = home(pair, p->mask);
    while (p->slots[i] != FREE) i = (i + 1) & p->mask;
    p->slots[i] = pair << BITS | (uint64_t)made;
}

/* The loop over the bytes of token i (s[0:n]), with the merges of the tokens before it.
 * Each of those is the merge tiktoken's loop makes it by, so every merge tiktoken's loop
 * takes on token i's bytes is among them: both loops take the same steps. On success
 * left[i] and right[i] are the positions of its two parts and 0 is returned; -1 when the
 * loop ends with more than two parts or a byte is no lower-ranked token. ids and rank hold
 * room for the longest token. */
static int recover_one(Pairs *p, const int32_t *byte_at, int32_t i, const uint8_t *s, Py_ssize_t n, int32_t *left, int32_t *right,
                       int32_t *ids, int32_t *rank) {
    if (n == 1) {
        left[i] = right[i] = -1;
        return 0;
    }
    Py_ssize_t m = n; /* parts */
    for (Py_ssize_t k = 0; k < n; k++)
        if ((ids[k] = byte_at[s[k]]) < 0 || ids[k] >= i) return -1;
    for (Py_ssize_t k = 0; k + 1 < m; k++) rank[k] = merged(p, ids[k], ids[k + 1]);
    while (m > 2) {
        Py_ssize_t best = 0;
        for (Py_ssize_t k = 1; k + 1 < m; k++)
            if (rank[k] < rank[best]) best = k;
        if (rank[best] == NONE) return -1;
        ids[best] = rank[best];
        memmove(ids + best + 1, ids + best + 2, (size_t)(m - best - 2) * sizeof *ids);
        memmove(rank + best, rank + best + 1, (size_t)(m - best - 2) * sizeof *rank);
        m--;
        if (best > 0) rank[best - 1] = merged(p, ids[best - 1], ids[best]);
        if (best + 1 < m) rank[best] = merged(p, ids[best], ids[best + 1]);
    }
    left[i] = ids[0];
    right[i] = ids[1];
    add(p, ids[0], ids[1], i);
    return 0;
}

static PyObject *int_list(const int32_t *values, Py_ssize_t n) {
    PyObject *list = PyList_New(n);
    for (Py_ssize_t k = 0; list && k < n; k++) {
        PyObject *v = PyLong_FromLong(values[k]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

static PyObject *recover_merges(PyObject *Py_UNUSED(module), PyObject *arg) {
    PyObject *seq = PySequence_Fast(arg, "recover_merges takes a list of bytes");
    if (!seq) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq), longest = 1;
    if (count >= 1 << BITS) {
        Py_DECREF(seq);
        return PyErr_Format(PyExc_ValueError, "too many tokens: %zd (at most %d)", count, (1 << BITS) - 1);
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    uint64_t size = 16;
    while (size < 2 * (uint64_t)count) size *= 2;
    Pairs pairs = {PyMem_New(uint64_t, size), size - 1, PyMem_New(int32_t, 1 << 16)};
    int32_t *left = PyMem_New(int32_t, count + 1), *right = PyMem_New(int32_t, count + 1), *ids = NULL, *rank = NULL;
    int32_t byte_at[256];
    PyObject *result = NULL;
    Py_ssize_t bad = -1;
    if (!pairs.slots || !pairs.of_bytes || !left || !right) {
        PyErr_NoMemory();
        goto done;
    }
    memset(pairs.slots, 0xFF, size * sizeof *pairs.slots);
    for (int k = 0; k < 1 << 16; k++) pairs.of_bytes[k] = NONE;
    memset(byte_at, 0xFF, sizeof byte_at);
    for (Py_ssize_t k = 0; k < count; k++) {
        if (!PyBytes_Check(items[k])) {
            PyErr_SetString(PyExc_TypeError, "recover_merges takes a list of bytes");
            goto done;
        }
        Py_ssize_t n = PyBytes_GET_SIZE(items[k]);
        longest = n > longest ? n : longest;
        if (n == 1 && byte_at[(uint8_t)PyBytes_AS_STRING(items[k])[0]] < 0) byte_at[(uint8_t)PyBytes_AS_STRING(items[k])[0]] = (int32_t)k;
    }
    ids = PyMem_New(int32_t, longest);
    rank = PyMem_New(int32_t, longest);
    if (!ids || !rank) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t n = PyBytes_GET_SIZE(items[k]);
        if (!n || recover_one(&pairs, byte_at, (int32_t)k, (const uint8_t *)PyBytes_AS_STRING(items[k]), n, left, right, ids, rank)) {
            bad = k;
            break;
        }
    }
    Py_END_ALLOW_THREADS;
    Py_ssize_t made = bad < 0 ? count : bad;
    PyObject *lefts = int_list(left, made), *rights = lefts ? int_list(right, made) : NULL;
    if (lefts && rights) result = Py_BuildValue("(OOn)", lefts, rights, bad);
    Py_XDECREF(lefts);
    Py_XDECREF(rights);
done:
    PyMem_Free(pairs.slots);
    PyMem_Free(pairs.of_bytes);
    PyMem_Free(left);
    PyMem_Free(right);
    PyMem_Free(ids);
    PyMem_Free(rank);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"recover_merges", recover_merges, METH_O,
     "recover_merges(tokens)\n--\n\n"
     "The merges of tokens listed by rank (tokens[i] has the i-th lowest rank): (lefts,\n"
     "rights, bad), the positions of each token's two parts (-1 for a single byte) and the\n"
     "position of the first token BPE over lower ranks does not make (-1: none; the lists\n"
     "then stop before it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ranks_core", "The merges of a rank file, recovered.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ranks_core(void) { return PyModule_Create(&module); }
