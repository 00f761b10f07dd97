/* The encoder, compiled: text -> special tokens and pre-tokens -> ids.
 *
 * MergeRanks holds the merge loop (Tokenizer._bpe in engine/encode/tokenizer.py). A pre-token
 * starts as the ids of its bytes, or of its characters where their own merges are certain to
 * come first (engine/encode/_whole_chars.h); each round merges the adjacent pair of lowest
 * merge rank, the leftmost where several share it, until no pair is in the merge list. Only
 * the two ranks beside a merge change, so a round is one scan for the minimum and one shift;
 * past LONG tokens the pairs wait on a min-heap instead of being rescanned. The Python loop
 * stays as the one that records its rounds (encode_steps, the encode view); tests check the
 * two agree.
 *
 * Vocab holds the bytes of each id (decoding) and the id of each entry's bytes.
 *
 * Encoder runs a whole text without the GIL: special tokens are cut out (leftmost, longest
 * first); the rest is cut into pre-tokens by the GPT-2 or GPT-4 pattern
 * (engine/corpus/_pretokenize_core.c), a batch at a time, the memory each will be looked up
 * in fetched ahead (and for those the hot table misses, the memory they will be looked up
 * in next); each pre-token's ids are found in the hot table of recent short ones, else are
 * a short one's vocabulary entry, found by its short key (when every entry encodes to
 * itself, Tokenizer.direct), else are in a cache (the tokenizer's SharedCache, which the
 * Encoders of all its threads fill and read together across calls, then the Encoder's own),
 * else are a long one's vocabulary entry or come from the merge loop, and are cached. A full
 * shared cache takes no more, a full own cache is emptied, so memory stays bounded. Only
 * building the list of ids takes the GIL again (or a copy of them packed as 2- or 4-byte
 * integers, for files of ids), so threads with an Encoder each encode in parallel.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef __GLIBC__
#include <malloc.h>
#endif

#if PY_VERSION_HEX < 0x030B0000
#include <longintrepr.h> /* the digits of an int, which Python.h includes from 3.11 on */
#endif

#include "_atomics.h"
#include "_bits.h"
#include "_bytes_hash.h"
#include "_jsonl.h"
#include "_pair_hash.h"
#include "_pretokenize_core.h"
#include "_whole_chars.h"
#include "pythread.h"

#define NO_RANK UINT32_MAX /* a pair not in the merge list */
#define ON_STACK 256       /* pre-tokens up to this many bytes need no allocation */
#define LONG 16            /* more tokens merge through a heap (merge_heap) */
#define WORK_PER_BYTE 10   /* merge_heap's heap (6), ids, ranks, next and prev (1 each) */

/* Fault in the pages of a large buffer about to be written whole with one call, rather than
 * one trap a page (Linux 5.14 and later; elsewhere, or refused, nothing): those from the first
 * page not in memory to the last (mincore), as a buffer reused from an earlier call's memory
 * has them all. Asked to fault in pages already there, the kernel took as long as writing them
 * (0.55 ms for a 13 MB list), where mincore takes 0.01 ms. */
static void populate(void *p, size_t size) {
#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (size < ((size_t)1 << 20)) return; /* before sysconf: the lists of a batch's short texts come here by the thousand */
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + size) & ~(page - 1), first = 0, last = 0;
    if (end <= start) return;
    unsigned char in[4096];
    for (uintptr_t at = start; at < end; at += sizeof in * page) {
        size_t pages = (end - at) / page < sizeof in ? (size_t)((end - at) / page) : sizeof in;
        if (mincore((void *)at, pages * page, in)) { /* not known: all of it */
            first = start, last = end;
            break;
        }
        for (size_t i = 0; i < pages; i++) {
            if (in[i] & 1) continue;
            first = first ? first : at + i * page;
            last = at + (i + 1) * page;
        }
    }
    if (last > first) madvise((void *)first, last - first, MADV_POPULATE_WRITE);
#else
    (void)p, (void)size;
#endif
}

/* n zeroed bytes from PyMem_RawMalloc, written now rather than left to the kernel's zero
 * page: a hash table is probed before it is written, and a page first read is mapped to the
 * zero page read-only, then faulted again when written, which while another thread of the
 * process runs means a TLB flush on every core (an interrupt to each, slow under a
 * hypervisor). NULL when out of memory. In 4 KB pages: see unset_list. */
static void *zeroed(size_t n) {
    void *p = PyMem_RawMalloc(n);
    if (p) {
        populate(p, n);
        memset(p, 0, n);
    }
    return p;
}

typedef struct {
    PyObject_HEAD
    uint32_t byte_ids[256];
    uint64_t *slots;  /* left << 43 | right << 22 | rank of each merge, by hash of the pair;
                       * EMPTY_KEY: free. Ids and ranks lie below 0x110000 (21 bits). */
    uint32_t mask;
    uint32_t *merged; /* the id each rank makes */
    Py_ssize_t nmerged;
    int64_t merged_from; /* the id rank 0 makes where rank r makes that plus r (GPT-2's files, tiktoken's
                          * ranks: 256), so the merge loop need not wait on merged; else -1 */
    uint32_t *byte_pairs; /* the rank of the pair of the ids of bytes a and b at a << 8 | b: the
                           * first round of every merge loop looks in 256 KB, not the table */
    WholeChars chars;     /* the characters a merge loop may start from merged */
    uint64_t *filter;     /* a Bloom filter of the merged pairs (pair_filter) */
    int filter_shift;     /* 64 - log2 of its words */
} MergeRanks;

/* Eight bytes a merge keep the table small enough to stay in the processor's cache. */
#define PAIR_OF(slot) ((slot) >> 22)
#define RANK_OF(slot) ((uint32_t)((slot) & 0x3FFFFF))

/* The filter's word of a pair, and the two bits the pair sets in it. Most pairs a merge loop
 * looks up are in no merge (the last round's all, and under o200k most of those between the
 * characters of Chinese text, which stay tokens of their own), and the filter, a byte or two
 * a merge, tells most of them so from the processor's second-level cache rather than a probe
 * of the table, which is 16 bytes a merge (4 MB for o200k). */
static inline const uint64_t *pair_filter(const MergeRanks *m, uint64_t pair, uint64_t *bits) {
    uint64_t h = pair * 0xD6E8FEB86659FD93ULL;
    h ^= h >> 32;
    *bits = 1ULL << (h & 63) | 1ULL << (h >> 6 & 63);
    return &m->filter[(h * 0x9E3779B97F4A7C15ULL) >> m->filter_shift];
}

static inline uint32_t rank_of(const MergeRanks *m, uint32_t a, uint32_t b) {
    uint64_t pair = (uint64_t)a << 21 | b, bits;
    if ((*pair_filter(m, pair, &bits) & bits) != bits) return NO_RANK;
    for (uint32_t i = slot_of(pair, m->mask);; i = (i + 1) & m->mask) {
        uint64_t slot = m->slots[i];
        if (PAIR_OF(slot) == pair) return RANK_OF(slot);
        if (slot == EMPTY_KEY) return NO_RANK;
    }
}

/* The id a merge of rank rank makes. */
static inline uint32_t merged_id(const MergeRanks *m, uint32_t rank) {
    return m->merged_from >= 0 ? (uint32_t)m->merged_from + rank : m->merged[rank];
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

static uint32_t pair_rank(const void *m, uint32_t a, uint32_t b) {
    return rank_of((const MergeRanks *)m, a, b);
}

/* Each rank's pair of ids, read out of the table in one pass into left and right (room for
 * nmerged each): UINT32_MAX for a rank whose pair an earlier rank already merges. 0, or -1
 * with MemoryError, the arrays then NULL. The caller frees them. */
static int pairs_by_rank(const MergeRanks *m, uint32_t **left, uint32_t **right) {
    size_t n = m->nmerged ? (size_t)m->nmerged : 1;
    *left = PyMem_New(uint32_t, n), *right = PyMem_New(uint32_t, n);
    if (!*left || !*right) {
        PyMem_Free(*left), PyMem_Free(*right);
        *left = *right = NULL;
        PyErr_NoMemory();
        return -1;
    }
    memset(*left, 0xFF, n * sizeof(uint32_t));
    memset(*right, 0xFF, n * sizeof(uint32_t));
    for (uint32_t i = 0; i <= m->mask; i++) {
        uint64_t slot = m->slots[i];
        if (slot == EMPTY_KEY) continue;
        (*left)[RANK_OF(slot)] = (uint32_t)(PAIR_OF(slot) >> 21);
        (*right)[RANK_OF(slot)] = (uint32_t)(PAIR_OF(slot) & 0x1FFFFF);
    }
    return 0;
}

/* m->chars, from each rank's pair. */
static int whole_chars_of(MergeRanks *m) {
    uint32_t *left, *right;
    if (pairs_by_rank(m, &left, &right)) return -1;
    int failed = whole_chars_build(&m->chars, m->byte_ids, left, right, m->merged, (uint32_t)m->nmerged, pair_rank, m);
    PyMem_Free(left);
    PyMem_Free(right);
    if (failed) PyErr_NoMemory();
    return failed ? -1 : 0;
}

/* MergeRanks(byte_ids, rank_of, merged): the id of each byte, the rank of each merged pair
 * of ids, and the id each rank makes. */
static int MergeRanks_init(MergeRanks *m, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *byte_ids, *pairs, *merged;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &byte_ids, &PyDict_Type, &pairs, &PyList_Type, &merged))
        return -1;
    if (m->slots) {
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
    m->merged_from = m->nmerged ? (int64_t)m->merged[0] : -1;
    for (Py_ssize_t r = 0; r < m->nmerged && m->merged_from >= 0; r++)
        if (m->merged[r] != m->merged_from + r) m->merged_from = -1;
    uint32_t size = 16, words = 2;
    while (size < 2 * (uint64_t)PyDict_GET_SIZE(pairs)) size *= 2;  /* at most half full */
    m->mask = size - 1;
    while (words * 8 < (uint64_t)PyDict_GET_SIZE(pairs)) words *= 2; /* 8-16 bits a merge: 3.4% of other pairs pass at 10.5 (GPT-2, cl100k, o200k) */
    m->filter_shift = 64;
    for (uint32_t w = words; w > 1; w >>= 1) m->filter_shift--;
    if (!(m->filter = PyMem_Calloc(words, sizeof(uint64_t)))) {
        PyErr_NoMemory();
        return -1;
    }
    m->slots = PyMem_New(uint64_t, size);
    if (!m->slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t i = 0; i < size; i++) m->slots[i] = EMPTY_KEY;
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
        uint64_t pair = (uint64_t)a << 21 | b, bits;
        uint32_t i = slot_of(pair, m->mask);
        while (m->slots[i] != EMPTY_KEY && PAIR_OF(m->slots[i]) != pair) i = (i + 1) & m->mask;
        m->slots[i] = pair << 22 | r;
        *(uint64_t *)pair_filter(m, pair, &bits) |= bits;
    }
    if (!(m->byte_pairs = PyMem_New(uint32_t, 1 << 16))) {
        PyErr_NoMemory();
        return -1;
    }
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) m->byte_pairs[a << 8 | b] = rank_of(m, m->byte_ids[a], m->byte_ids[b]);
    return whole_chars_of(m);
}

static void MergeRanks_dealloc(MergeRanks *m) {
    PyMem_Free(m->slots);
    PyMem_Free(m->merged);
    PyMem_Free(m->byte_pairs);
    PyMem_Free(m->filter);
    whole_chars_free(&m->chars);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static inline void heap_push(uint64_t *heap, size_t *size, uint64_t entry) {
    size_t i = (*size)++;
    for (; i && heap[(i - 1) / 2] > entry; i = (i - 1) / 2) heap[i] = heap[(i - 1) / 2];
    heap[i] = entry;
}

static inline uint64_t heap_pop(uint64_t *heap, size_t *size) {
    uint64_t top = heap[0], last = heap[--*size];
    size_t i = 0, n = *size;
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && heap[c + 1] < heap[c]) c++;
        if (heap[c] >= last) break;
        heap[i] = heap[c];
    }
    heap[i] = last;
    return top;
}

/* The first tokens of the n bytes at s: each byte's id, but a character whose own merges
 * come first between the bytes around it starts as the tokens they make (WholeChars), which
 * saves the merge loop most of its rounds on Chinese text. ids[0..k), and ranks[0..k) with
 * ranks[i] the rank of (ids[i], ids[i + 1]) (NO_RANK for the last); k returned. */
static size_t first_tokens(const MergeRanks *m, const uint8_t *s, size_t n, uint32_t *ids, uint32_t *ranks) {
    size_t k = 0;
    int last_byte = -1;  /* the byte the last token is, if it is one */
    WholeChar last = 0; /* the character the last token is, if it is one of one id */
    for (size_t i = 0, len; i < n; i += len) {
        WholeChar c = s[i] >= 0xC2 ? whole_char_at(&m->chars, s, n, i, &len) : 0;
        if (c) {
            ids[k] = whole_char_id(c, 0);
            if (k) ranks[k - 1] = last && !whole_char_may_precede(last, ids[k]) ? NO_RANK : rank_of(m, ids[k - 1], ids[k]);
            last = c;
            if (whole_char_nids(c) > 1) ranks[k] = NO_RANK, ids[++k] = whole_char_id(c, 1), last = 0; /* a finished character's tokens never merge */
            k++;
            last_byte = -1;
        } else {
            len = 1;
            ids[k] = m->byte_ids[s[i]];
            if (k) ranks[k - 1] = last_byte >= 0 ? m->byte_pairs[last_byte << 8 | s[i]] : rank_of(m, ids[k - 1], ids[k]);
            k++;
            last_byte = s[i];
            last = 0;
        }
    }
    if (k) ranks[k - 1] = NO_RANK;
    return k;
}

/* The merges of k tokens without rescanning them every round: the tokens are a linked list
 * (next/prev) and the pairs' (rank, position) sit on a min-heap, so the lowest rank,
 * leftmost first, is popped; an entry whose pair has changed since is stale and skipped.
 * heap has room for 3k entries (k - 1, then 2 a merge), next and prev for k. */
static size_t merge_heap(const MergeRanks *m, uint32_t *ids, uint32_t *ranks, uint32_t k, uint64_t *heap, uint32_t *next, uint32_t *prev) {
    size_t size = 0;
    for (uint32_t i = 0; i < k; i++) {
        next[i] = i + 1;
        prev[i] = i - 1; /* UINT32_MAX: none */
        if (ranks[i] != NO_RANK) heap_push(heap, &size, (uint64_t)ranks[i] << 32 | i);
    }
    while (size) {
        uint64_t top = heap_pop(heap, &size);
        uint32_t rank = (uint32_t)(top >> 32), p = (uint32_t)top, q = next[p];
        if (ranks[p] != rank) continue; /* stale, or p merged away (NO_RANK) */
        ids[p] = merged_id(m, rank);
        ranks[q] = NO_RANK;
        next[p] = next[q];
        if (next[p] < k) prev[next[p]] = p;
        ranks[p] = next[p] < k ? rank_of(m, ids[p], ids[next[p]]) : NO_RANK;
        if (ranks[p] != NO_RANK) heap_push(heap, &size, (uint64_t)ranks[p] << 32 | p);
        uint32_t b = prev[p];
        if (b != UINT32_MAX && (ranks[b] = rank_of(m, ids[b], ids[p])) != NO_RANK)
            heap_push(heap, &size, (uint64_t)ranks[b] << 32 | b);
    }
    size_t n = 0;
    for (uint32_t i = 0; i < k; i = next[i]) ids[n++] = ids[i]; /* the first token never goes */
    return n;
}

/* The same merges by rescanning the ranks for the lowest each round: faster for a few tokens. */
static size_t merge_scan(const MergeRanks *m, uint32_t *ids, uint32_t *ranks, size_t n) {
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i < n - 1; i++)
            if (ranks[i] < ranks[best]) best = i;
        if (ranks[best] == NO_RANK) break;
        ids[best] = merged_id(m, ranks[best]);
        for (size_t i = best + 1; i < n - 1; i++) { /* at most LONG: a call to memmove costs more */
            ids[i] = ids[i + 1];
            ranks[i - 1] = ranks[i];
        }
        n--;
        if (best > 0) ranks[best - 1] = rank_of(m, ids[best - 1], ids[best]);
        if (best < n - 1) ranks[best] = rank_of(m, ids[best], ids[best + 1]);
    }
    return n;
}

/* Merge the n bytes at s, lowest rank first (leftmost among equals), into work[0..k), k
 * returned; work has room for WORK_PER_BYTE * n ids: the heap's 3n entries, then the
 * tokens, their ranks, next and prev. */
static Py_ssize_t merge_bytes(const MergeRanks *m, const uint8_t *s, Py_ssize_t n, uint32_t *work) {
    uint32_t *ids = work + 6 * (size_t)n, *ranks = ids + n;
    size_t k = first_tokens(m, s, (size_t)n, ids, ranks);
    if (k > LONG)
        k = merge_heap(m, ids, ranks, (uint32_t)k, (uint64_t *)work, ranks + n, ranks + 2 * n);
    else
        k = merge_scan(m, ids, ranks, k);
    memmove(work, ids, k * sizeof(uint32_t));
    return (Py_ssize_t)k;
}

/* ids(piece: bytes) -> str: the token ids of one pre-token, each as a code point (the form
 * the tokenizer's regex path caches and joins). */
static PyObject *MergeRanks_ids(MergeRanks *m, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "ids() takes bytes");
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    uint64_t stack[WORK_PER_BYTE * ON_STACK / 2]; /* uint64_t: merge_heap's heap lies at the start */
    uint32_t *ids = (uint32_t *)stack;
    if (n > ON_STACK && !(ids = PyMem_New(uint32_t, WORK_PER_BYTE * (size_t)n))) return PyErr_NoMemory();
    n = merge_bytes(m, (const uint8_t *)PyBytes_AS_STRING(arg), n, ids);
    PyObject *out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, ids, n);
    if (ids != (uint32_t *)stack) PyMem_Free(ids);
    return out;
}

/* Store v as 4 little-endian bytes at p. */
static inline void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* canonical() -> bytes: each rank's pair of ids, in rank order, as little-endian 4-byte ids
 * (0xFFFFFFFF twice for a rank whose pair an earlier rank already merges), read from the
 * table in one pass: what the merges are, whichever file they came from. */
static PyObject *MergeRanks_canonical(MergeRanks *m, PyObject *Py_UNUSED(arg)) {
    uint32_t *left, *right;
    if (pairs_by_rank(m, &left, &right)) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 8 * m->nmerged);
    if (out) {
        uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t r = 0; r < m->nmerged; r++, p += 8) {
            put_le32(p, left[r]);
            put_le32(p + 4, right[r]);
        }
    }
    PyMem_Free(left);
    PyMem_Free(right);
    return out;
}

static PyMethodDef MergeRanks_methods[] = {
    {"canonical", (PyCFunction)MergeRanks_canonical, METH_NOARGS, "Each rank's pair of ids, as little-endian 4-byte ids."},
    {"ids", (PyCFunction)MergeRanks_ids, METH_O, "The ids of one pre-token's bytes, as a str of code points."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MergeRanksType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.encode._encoder_core.MergeRanks",
    .tp_basicsize = sizeof(MergeRanks),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tokenizer's merge ranks, for merging pre-tokens.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)MergeRanks_init,
    .tp_dealloc = (destructor)MergeRanks_dealloc,
    .tp_methods = MergeRanks_methods,
};

/* ---- Short keys: a pre-token of up to 16 bytes as two words ------------------------------ */

#define SHORT_BYTES 16 /* pre-tokens up to this long have a short key */

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* A short key is the two words of the first and next 8 bytes with what lies beyond the
 * pre-token masked off (a text has PAD bytes after it that can be read, so the words can
 * always be); with n, they tell any two apart. The hot table holds them, the
 * vocabulary's table holds its short entries as them (a probe compares two words, not the
 * bytes of an entry found through two more loads), and their hash indexes those tables and
 * the caches alike, made once a pre-token. */
#define PAD 16
static uint64_t key_lo[SHORT_BYTES + 1], key_hi[SHORT_BYTES + 1];

static void short_keys_init(void) {
    for (int n = 0; n <= SHORT_BYTES; n++) {
        int lo = n < 8 ? n : 8, hi = n < 8 ? 0 : n - 8; /* bytes of each word that are the pre-token's */
        /* The first bytes in memory: the low ones of a word on a little-endian machine, the high ones elsewhere. */
        uint64_t low_lo = lo == 8 ? ~0ULL : (1ULL << 8 * lo) - 1, low_hi = hi == 8 ? ~0ULL : (1ULL << 8 * hi) - 1;
        key_lo[n] = pt_little_endian() ? low_lo : lo ? ~0ULL << (64 - 8 * lo) : 0;
        key_hi[n] = pt_little_endian() ? low_hi : hi ? ~0ULL << (64 - 8 * hi) : 0;
    }
}

/* The short key of the n <= SHORT_BYTES bytes at s, which may be read 16 bytes on. */
static inline void short_key(const uint8_t *s, size_t n, uint64_t *a, uint64_t *b) {
    *a = load64(s) & key_lo[n];
    *b = load64(s + 8) & key_hi[n];
}

/* The hash of a short key: its high bits are the product's, which the hot table takes; the
 * low ones, which the caches and the vocabulary's table take, have the high ones folded in. */
static inline uint64_t short_hash(uint64_t a, uint64_t b) {
    uint64_t p = (a ^ b * 0xC2B2AE3D27D4EB4FULL) * 0x9E3779B97F4A7C15ULL;
    return p ^ (p >> 32);
}

/* The hash of any n bytes at s (read 16 bytes on when short), as the caches and the
 * vocabulary's table take it. */
static inline uint64_t pretoken_hash(const uint8_t *s, size_t n) {
    if (n > SHORT_BYTES) return bytes_hash(s, n);
    uint64_t a, b;
    short_key(s, n, &a, &b);
    return short_hash(a, b);
}

/* ---- Vocab: id -> bytes for decoding, bytes -> id for whole pre-tokens ------------------ */

#define NO_ID UINT32_MAX

#define NO_ENTRY UINT32_MAX

typedef struct {
    uint32_t start, length; /* where an entry's bytes lie in blob; length NO_ENTRY: no entry */
} Span;

typedef struct {
    uint64_t a, b;   /* an entry of up to SHORT_BYTES bytes: its short key; a longer one: its hash, and 0 */
    uint32_t length; /* the entry's */
    uint32_t id;     /* NO_ID: a free slot */
} IdSlot;

typedef struct {
    IdSlot *slots; /* by hash, at most half full */
    uint32_t mask;
} IdTable;

typedef struct {
    PyObject_HEAD
    uint32_t nids; /* ids 0..nids-1 may be entries */
    Span *spans;
    uint8_t *blob;
    IdTable short_ids; /* bytes -> id: the entries of up to SHORT_BYTES bytes, */
    IdTable long_ids;  /* and the longer ones, few, apart: a long pre-token, most often none,
                        * is told so in a small table (o200k's 3,987 in 128 KB, not 12 MB) */
    uint64_t *long_filter; /* and before that by a Bloom filter of their hashes, 16 bits an
                            * entry (8 KB for o200k): the table's slot was a twentieth of a
                            * first encode of Chinese text under o200k, most pre-tokens long */
    uint32_t long_filter_mask;
    PyObject **id_objects; /* the int of each entry's id (of id_ints), NULL for an id that is none */
} Vocab;

/* The int of each token id that is an entry of some Vocab, made once for the process and
 * never freed, as CPython's small ints are: a list of ids holds its items with no count
 * raised, so filling one is a copy of pointers, from any thread, and no pass raises the
 * count of each int used. Each count starts INT_BIAS high, so the uncounted references that
 * lists let go of never bring one to 0. NULL for an id no Vocab has had: a vocabulary with
 * a few ids far apart makes only theirs. */
static PyObject **id_ints;
static size_t id_ints_len;
#define INT_BIAS ((Py_ssize_t)1 << (8 * sizeof(Py_ssize_t) - 3))

/* The int of id (an entry), made the first time, with the GIL; NULL with MemoryError. */
static PyObject *id_int(uint32_t id) {
    if (id >= id_ints_len) {
        size_t n = (size_t)id + 1 > 2 * id_ints_len ? (size_t)id + 1 : 2 * id_ints_len;
        PyObject **grown = PyMem_Realloc(id_ints, n * sizeof(PyObject *)); /* Vocabs copy its pointers, never hold it */
        if (!grown) return PyErr_NoMemory();
        memset(grown + id_ints_len, 0, (n - id_ints_len) * sizeof(PyObject *));
        id_ints = grown;
        id_ints_len = n;
    }
    if (!id_ints[id]) {
        PyObject *o = PyLong_FromUnsignedLong(id);
        if (!o) return NULL;
        Py_SET_REFCNT(o, Py_REFCNT(o) + INT_BIAS); /* an immortal int (3.12+) stays as it is */
        id_ints[id] = o;
    }
    return id_ints[id];
}


static inline int same_entry(const Vocab *v, uint32_t id, const uint8_t *s, size_t n) {
    return v->spans[id].length == n && !memcmp(v->blob + v->spans[id].start, s, n);
}

/* The word of the long entries' filter for hash h, and the two bits h sets in it. */
static inline uint64_t *long_filter_word(const Vocab *v, uint64_t h, uint64_t *bits) {
    *bits = 1ULL << (h >> 20 & 63) | 1ULL << (h >> 26 & 63);
    return &v->long_filter[(uint32_t)(h >> 40) & v->long_filter_mask];
}

/* The id of the n bytes at s (h: pretoken_hash; a, b: their short key, or h and 0), or NO_ID.
 * A short pre-token is told by its key alone, with no look at the entries' bytes. */
static inline uint32_t vocab_find(const Vocab *v, const uint8_t *s, size_t n, uint64_t h, uint64_t a, uint64_t b) {
    uint64_t bits;
    if (n > SHORT_BYTES && (*long_filter_word(v, h, &bits) & bits) != bits) return NO_ID;
    const IdTable *t = n <= SHORT_BYTES ? &v->short_ids : &v->long_ids;
    for (uint32_t i = (uint32_t)h & t->mask;; i = (i + 1) & t->mask) {
        const IdSlot *slot = &t->slots[i];
        if (slot->id == NO_ID) return NO_ID;
        if (slot->a == a && slot->b == b && slot->length == n && (n <= SHORT_BYTES || same_entry(v, slot->id, s, n))) return slot->id;
    }
}

/* An empty table for count entries; -1 if out of memory. */
static int id_table_init(IdTable *t, size_t count) {
    uint32_t size = 16;
    while (size < 2 * (uint64_t)count) size *= 2;
    t->mask = size - 1;
    if (!(t->slots = PyMem_New(IdSlot, size))) return -1;
    for (uint32_t i = 0; i < size; i++) t->slots[i].id = NO_ID;
    return 0;
}

/* Put the entry id, the n bytes at s (into the vocabulary's blob already); of equal bytes, the
 * later id replaces the earlier. */
static void vocab_put(Vocab *v, const uint8_t *s, size_t n, uint32_t id) {
    uint8_t padded[SHORT_BYTES + PAD] = {0}; /* a short key reads 16 bytes on */
    if (n <= SHORT_BYTES) memcpy(padded, s, n);
    uint64_t h = pretoken_hash(n <= SHORT_BYTES ? padded : s, n), a = h, b = 0;
    if (n <= SHORT_BYTES) short_key(padded, n, &a, &b);
    IdTable *t = n <= SHORT_BYTES ? &v->short_ids : &v->long_ids;
    uint64_t bits;
    if (n > SHORT_BYTES) *long_filter_word(v, h, &bits) |= bits;
    uint32_t i = (uint32_t)h & t->mask;
    while (t->slots[i].id != NO_ID && !(t->slots[i].length == n && t->slots[i].a == a && t->slots[i].b == b && same_entry(v, t->slots[i].id, s, n)))
        i = (i + 1) & t->mask;
    t->slots[i] = (IdSlot){a, b, (uint32_t)n, id};
}

/* Vocab(vocab: dict[int, bytes]). Where two ids share their bytes, the later one is found
 * (as in {token: i for i, token in vocab.items()}). */
static int Vocab_init(Vocab *v, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *vocab, *key, *value;
    if (!PyArg_ParseTuple(args, "O!", &PyDict_Type, &vocab)) return -1;
    if (v->spans) {
        PyErr_SetString(PyExc_RuntimeError, "a Vocab is initialized once");
        return -1;
    }
    uint32_t top = 0;
    Py_ssize_t total = 0, at = 0, longer = 0;
    while (PyDict_Next(vocab, &at, &key, &value)) {
        uint32_t id;
        if (as_id(key, &id)) return -1;
        if (!PyBytes_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "vocabulary entries must be bytes");
            return -1;
        }
        top = id + 1 > top ? id + 1 : top;
        total += PyBytes_GET_SIZE(value);
        longer += PyBytes_GET_SIZE(value) > SHORT_BYTES;
    }
    if (total >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the vocabulary's entries hold over 4 GB");
        return -1;
    }
    v->nids = top;
    v->spans = PyMem_New(Span, top + 1);
    v->blob = PyMem_Malloc(total + 16); /* join_ids copies 16 bytes at a time */
    v->id_objects = PyMem_New(PyObject *, top + 1);
    uint32_t words = 1;
    while (words * 4 < (uint64_t)longer) words *= 2;
    v->long_filter = PyMem_Calloc(words, sizeof(uint64_t));
    v->long_filter_mask = words - 1;
    if (!v->spans || !v->blob || !v->id_objects || !v->long_filter || id_table_init(&v->short_ids, (size_t)(PyDict_GET_SIZE(vocab) - longer)) ||
        id_table_init(&v->long_ids, (size_t)longer)) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t i = 0; i <= top; i++) v->spans[i] = (Span){0, NO_ENTRY};
    memset(v->id_objects, 0, (top + 1) * sizeof(PyObject *));
    uint32_t used = 0;
    at = 0;
    while (PyDict_Next(vocab, &at, &key, &value)) {
        uint32_t id = (uint32_t)PyLong_AsLong(key);
        size_t n = (size_t)PyBytes_GET_SIZE(value);
        const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(value);
        memcpy(v->blob + used, s, n);
        v->spans[id] = (Span){used, (uint32_t)n};
        used += (uint32_t)n;
        if (!(v->id_objects[id] = id_int(id))) return -1;
        vocab_put(v, s, n, id);
    }
    return 0;
}

static void Vocab_dealloc(Vocab *v) {
    PyMem_Free(v->id_objects);
    PyMem_Free(v->spans);
    PyMem_Free(v->blob);
    PyMem_Free(v->short_ids.slots);
    PyMem_Free(v->long_ids.slots);
    PyMem_Free(v->long_filter);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

/* The value of an int that is exactly an int: read where it lies when it is compact (one
 * digit of 30 bits: every token id), not through PyLong_AsLong's call and checks, which took
 * two fifths of joining a text's ids (zh-xiyouji's under GPT-2: 5.8 ms, now 3.5). */
static inline long int_value(PyObject *o) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)o)) return (long)PyUnstable_Long_CompactValue((PyLongObject *)o);
#else
    Py_ssize_t size = Py_SIZE(o);
    if (size == 0 || size == 1) return size ? (long)((PyLongObject *)o)->ob_digit[0] : 0;
#endif
    return PyLong_AsLong(o);
}

/* The entry of id appended to the raw buffer *buf (*cap bytes, *used of them filled), grown
 * as needed. -1 if id is no entry (the caller sets the error), -2 when out of memory. */
static inline int append_entry(const Vocab *v, long long id, uint8_t **buf, size_t *cap, size_t *used) {
    Span span = id >= 0 && id < (long long)v->nids ? v->spans[id] : (Span){0, NO_ENTRY};
    if (span.length == NO_ENTRY) return -1;
    if (*used + span.length + 16 > *cap) { /* 16: room for copying 16 bytes at once */
        while (*used + span.length + 16 > *cap) *cap *= 2;
        uint8_t *grown = PyMem_RawRealloc(*buf, *cap);
        if (!grown) return -2;
        *buf = grown;
    }
    if (span.length <= 16)
        memcpy(*buf + *used, v->blob + span.start, 16); /* a fixed size: a move, not a call */
    else
        memcpy(*buf + *used, v->blob + span.start, span.length);
    *used += span.length;
    return 0;
}

/* The kind of integer a buffer's struct format names (with no byte order, or the native
 * one): its item size, negative where signed; 0 if it is no integer of 2, 4 or 8 bytes. */
static int int_format(const Py_buffer *b) {
    const char *f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=') f++;
    if (!f[0] || f[1] || !strchr("hHiIlLqQ", f[0])) return 0;
    if (b->itemsize != 2 && b->itemsize != 4 && b->itemsize != 8) return 0;
    return f[0] >= 'a' ? -(int)b->itemsize : (int)b->itemsize;
}

/* The ids of a one-dimensional, contiguous array of ints (NumPy's, array's, a memoryview)
 * of the kind int_format names, read where they lie and joined into buf: no Python int made
 * or read (a list's ids cost a read of each int object: en-mix-6m's under GPT-2 joined in
 * 11.7 ms from a list, 6.9 from an array). One loop a kind, so none asks the kind per id. */
#define JOIN_ARRAY(type, id_of)                                                                  \
    for (Py_ssize_t k = 0; k < count; k++) {                                                     \
        long long id = id_of(((const type *)b->buf)[k]);                                         \
        if ((failed = append_entry(v, id, buf, cap, used)) == -1) PyErr_Format(PyExc_KeyError, "%lld", id); \
        if (failed) return -1;                                                                   \
    }
#define AS_IS(x) ((long long)(x))
#define AS_SIGNED(x) ((x) > (uint64_t)LLONG_MAX ? -1 : (long long)(x))
static int join_array(const Vocab *v, const Py_buffer *b, int kind, uint8_t **buf, size_t *cap, size_t *used) {
    Py_ssize_t count = b->len / b->itemsize;
    int failed = 0;
    switch (kind) {
    case 2: JOIN_ARRAY(uint16_t, AS_IS) break;
    case -2: JOIN_ARRAY(int16_t, AS_IS) break;
    case 4: JOIN_ARRAY(uint32_t, AS_IS) break;
    case -4: JOIN_ARRAY(int32_t, AS_IS) break;
    case 8: JOIN_ARRAY(uint64_t, AS_SIGNED) break;
    default: JOIN_ARRAY(int64_t, AS_IS)
    }
    return 0;
}

/* The entries of ids joined into a new raw buffer *out of *n bytes, in one pass that grows
 * the buffer. ids is a list or tuple of ints, or an array of them (join_array); anything
 * else is TypeError, left unread (an iterator keeps its items for the caller). -1 with
 * KeyError for an id that is no entry, TypeError for an item that is not exactly an int (a
 * bool, NumPy's ints) or an array of another kind: the caller looks again, and words the
 * message. */
static int join_ids(const Vocab *v, PyObject *ids, uint8_t **out, size_t *n) {
    int listed = PyList_CheckExact(ids) || PyTuple_CheckExact(ids);
    Py_buffer view = {0};
    int kind = 0;
    if (!listed) {
        if (!PyObject_CheckBuffer(ids) || PyObject_GetBuffer(ids, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "decode takes a list, a tuple or an array of ids");
            return -1;
        }
        if (view.ndim > 1 || !(kind = int_format(&view))) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "an array of ids must be of integers");
            return -1;
        }
    }
    Py_ssize_t count = listed ? PySequence_Fast_GET_SIZE(ids) : view.len / view.itemsize;
    size_t cap = 4 * (size_t)count + 64, used = 0;
    uint8_t *buf = PyMem_RawMalloc(cap);
    int failed = buf ? 0 : -2;
    if (buf && !listed) {
        failed = join_array(v, &view, kind, &buf, &cap, &used);
        PyBuffer_Release(&view);
    }
    PyObject **items = listed ? PySequence_Fast_ITEMS(ids) : NULL;
    for (Py_ssize_t k = 0; buf && listed && !failed && k < count; k++) {
        long id = PyLong_CheckExact(items[k]) ? int_value(items[k]) : -2;
        if ((failed = append_entry(v, id, &buf, &cap, &used)) == -1) {
            PyErr_Clear();
            if (id == -2) PyErr_SetString(PyExc_TypeError, "token ids must be ints");
            else PyErr_SetObject(PyExc_KeyError, items[k]);
        }
    }
    if (failed) {
        PyMem_RawFree(buf);
        if (failed == -2) PyErr_NoMemory();
        return -1;
    }
    *out = buf;
    *n = used;
    return 0;
}

/* decode_bytes(ids) -> bytes: the entries of ids joined (see join_ids). */
static PyObject *Vocab_decode_bytes(Vocab *v, PyObject *ids) {
    uint8_t *buf;
    size_t n;
    if (join_ids(v, ids, &buf, &n)) return NULL;
    PyObject *out = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)n);
    PyMem_RawFree(buf);
    return out;
}

/* decode(ids) -> str: the entries of ids joined and read as UTF-8, invalid bytes as U+FFFD. */
static PyObject *Vocab_decode(Vocab *v, PyObject *ids) {
    uint8_t *buf;
    size_t n;
    if (join_ids(v, ids, &buf, &n)) return NULL;
    PyObject *out = PyUnicode_DecodeUTF8((const char *)buf, (Py_ssize_t)n, "replace");
    PyMem_RawFree(buf);
    return out;
}

/* glibc's malloc gives a block past its mmap threshold a mapping of its own, unmapped when
 * freed; it raises the threshold to the size of the first such block freed, and keeps freed
 * heap memory up to twice that. So a long text's list of ids was memory new to the process
 * in the first call that made one and again in the second (the first's mapping gone, the
 * second's heap new), reused only from the third: the second encode of en-mix-6m in two
 * threads faulted in 3,000 pages, 4 of its 13 ms. Both are raised to glibc's most, 32 MB
 * and twice that, before the first such list is made, which then comes from the heap and
 * is kept for the next; and before the first batch whose ids' room is a megabyte or more
 * (the threads' units, freed once joined: the second call of en-mix-6m's documents in two
 * threads faulted in 600 pages, not 225). Nothing where glibc is not. */
#define LARGE_LIST ((size_t)4 << 20)
static void keep_freed_lists(void) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
    static int done; /* the GIL guards it */
    if (done) return;
    done = 1;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

/* A list of n items not yet put, which must all be put before anything else sees it: not
 * zeroed, as PyList_New's are (a memset of 13 MB for the ids of a 6 MB English text, 7% of
 * encoding it warm), a long one's pages faulted in at once (populate: the 3,200 faults of
 * those 13 MB, new memory while the last call's list is held). Nothing the encoder makes is
 * asked to be in 2 MB pages: where a virtual machine's host takes back the guest's free
 * memory, such pages new to the process are often memory the host must find again, and a
 * first encode of en-mix-6m took 99-245 ms in 8 of 14 fresh processes, not 37-39, its list
 * in them; its hot tables in them, two threads' first encode 74-148 ms in 6 of 20, not 26-32
 * (docs/speed.md, huge pages). In 4 KB pages it is 2-4 ms slower, and a warm encode about
 * 1 ms of 18 (the TLB's misses in the 8 MB hot table). */
static PyObject *unset_list(size_t n) {
    PyObject *list = PyList_New(0);
    if (!list || !n) return list;
    if (n >= LARGE_LIST / sizeof(PyObject *)) keep_freed_lists();
    PyObject **items = n <= (size_t)PY_SSIZE_T_MAX / sizeof(PyObject *) ? PyMem_Malloc(n * sizeof(PyObject *)) : NULL;
    if (!items) {
        Py_DECREF(list);
        return PyErr_NoMemory();
    }
    populate(items, n * sizeof(PyObject *));
    ((PyListObject *)list)->ob_item = items;
    ((PyListObject *)list)->allocated = (Py_ssize_t)n;
    Py_SET_SIZE(list, (Py_ssize_t)n);
    return list;
}

/* Put the int of each of the n ids at src into items: an Encoder's ids (native 4-byte ints,
 * entries all), or packed ones (little-endian, checked: at one that is no entry the filling
 * stops). How many were put. The ints are id_ints, so any thread may fill, with the GIL or
 * without it. */
static inline size_t list_fill(PyObject *const *objects, PyObject **items, const uint8_t *src, size_t n, int packed, uint32_t nids) {
    size_t k = 0;
    int little = pt_little_endian(); /* then packed ids are native ones */
    for (; k < n; k++) {
        uint32_t id;
        memcpy(&id, src + 4 * k, 4);
        if (packed && !little) id = (uint32_t)src[4 * k] | (uint32_t)src[4 * k + 1] << 8 | (uint32_t)src[4 * k + 2] << 16 | (uint32_t)src[4 * k + 3] << 24;
        if (packed && (id >= nids || !objects[id])) break;
        items[k] = objects[id];
    }
    return k;
}

/* lists(packed, ends) -> list[list[int]]: the lists of the texts whose ids encode_ends packed
 * (little-endian 4-byte ints) and ended where ends says (native sizes). ValueError for an id
 * that is no entry, or ends out of order. The lists are made with the GIL and filled without
 * it: a worker thread finishing its unit meanwhile needs the GIL, and waited for the lists of
 * a unit of a thousand English texts. */
static PyObject *Vocab_lists(Vocab *v, PyObject *args) {
    Py_buffer ids, ends;
    if (!PyArg_ParseTuple(args, "y*y*", &ids, &ends)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t count = ends.len / (Py_ssize_t)sizeof(size_t);
    size_t total = (size_t)ids.len / 4, start = 0;
    if (ids.len % 4 || ends.len % (Py_ssize_t)sizeof(size_t)) {
        PyErr_SetString(PyExc_ValueError, "packed ids are 4 bytes each, ends a size each");
        goto done;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        size_t end;
        memcpy(&end, (const uint8_t *)ends.buf + k * sizeof(size_t), sizeof end);
        if (end < start || end > total) {
            PyErr_SetString(PyExc_ValueError, "the ends are out of order");
            goto done;
        }
        start = end;
    }
    if (!(out = PyList_New(count))) goto done;
    start = 0;
    int collecting = PyGC_Disable(); /* see ids_lists */
    for (Py_ssize_t k = 0; k < count; k++) { /* the lists made with the GIL, filled without it */
        size_t end;
        memcpy(&end, (const uint8_t *)ends.buf + k * sizeof(size_t), sizeof end);
        PyObject *list = unset_list(end - start);
        if (!list) {
            while (k) Py_SET_SIZE(PyList_GET_ITEM(out, --k), 0); /* their items never put */
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, k, list);
        PyObject_GC_UnTrack(list); /* see ids_list */
        start = end;
    }
    if (collecting) PyGC_Enable();
    if (!out) goto done;
    Py_ssize_t filled = 0;
    size_t put = 0;
    start = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; filled < count; filled++) {
        PyObject *list = PyList_GET_ITEM(out, filled);
        size_t n = (size_t)PyList_GET_SIZE(list);
        put = list_fill(v->id_objects, ((PyListObject *)list)->ob_item, (const uint8_t *)ids.buf + 4 * start, n, 1, v->nids);
        if (put < n) break;
        start += n;
    }
    Py_END_ALLOW_THREADS
    if (filled < count) { /* the lists from there on cut to what was put */
        Py_SET_SIZE(PyList_GET_ITEM(out, filled), (Py_ssize_t)put);
        for (Py_ssize_t k = filled + 1; k < count; k++) Py_SET_SIZE(PyList_GET_ITEM(out, k), 0);
        PyErr_SetString(PyExc_ValueError, "a token id is not in the vocabulary");
        Py_CLEAR(out);
    }
done:
    PyBuffer_Release(&ids);
    PyBuffer_Release(&ends);
    return out;
}

/* unfilled(n) -> list: an empty list with room for n items, for the ids of a long text whose
 * pieces threads encoded: fill() puts them in its room, each thread faulting in its own
 * part's pages, and filled() makes them its items. The room is not zeroed (PyList_New's
 * calloc wrote all 11 MB of the list of a 2 MB Chinese text in one thread, or faulted them
 * in a page at a time), and nothing reads it before filled(), so a call that fails between
 * frees the empty list it still is. Not in 2 MB pages: two threads faulting in such pages
 * new to the machine took 12 ms, not 3, in 4 of 10 calls. */
static PyObject *Vocab_unfilled(Vocab *Py_UNUSED(v), PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a list's length is not negative");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (!out || !n) return out;
    if ((size_t)n >= LARGE_LIST / sizeof(PyObject *)) keep_freed_lists();
    PyObject **items = (size_t)n <= (size_t)PY_SSIZE_T_MAX / sizeof(PyObject *) ? PyMem_Malloc((size_t)n * sizeof(PyObject *)) : NULL;
    if (!items) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    ((PyListObject *)out)->ob_item = items;
    ((PyListObject *)out)->allocated = n;
    PyObject_GC_UnTrack(out); /* see ids_list */
    return out;
}

/* filled(out): the room of a list from unfilled(), all put by fill(), made its items. */
static PyObject *Vocab_filled(Vocab *Py_UNUSED(v), PyObject *out) {
    if (!PyList_Check(out) || PyList_GET_SIZE(out)) {
        PyErr_SetString(PyExc_TypeError, "filled() takes an empty list from unfilled()");
        return NULL;
    }
    Py_SET_SIZE(out, ((PyListObject *)out)->allocated);
    Py_RETURN_NONE;
}

/* fill(out, at, parts): put the ids of parts (bytes of little-endian 4-byte unsigned ints,
 * one after the other) into the room of out from at on, a list from unfilled(), without the
 * GIL, so threads fill the parts of one list together. ValueError for an id that is no
 * entry. */
static PyObject *Vocab_fill(Vocab *v, PyObject *args) {
    PyObject *out, *parts, *result = NULL;
    Py_ssize_t at, held = 0;
    if (!PyArg_ParseTuple(args, "O!nO!", &PyList_Type, &out, &at, &PyList_Type, &parts)) return NULL;
    Py_ssize_t nparts = PyList_GET_SIZE(parts);
    size_t total = 0, put = 0;
    Py_buffer *views = PyMem_New(Py_buffer, nparts + 1);
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    for (; held < nparts; held++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(parts, held), &views[held], PyBUF_SIMPLE)) goto done;
        total += (size_t)views[held].len / 4;
        if (views[held].len % 4) {
            held++;
            PyErr_SetString(PyExc_ValueError, "packed ids are 4 bytes each");
            goto done;
        }
    }
    Py_ssize_t room = ((PyListObject *)out)->allocated;
    if (PyList_GET_SIZE(out) || at < 0 || at > room || total > (size_t)(room - at)) {
        PyErr_SetString(PyExc_IndexError, "the ids do not fit in the list there");
        goto done;
    }
    PyObject **items = ((PyListObject *)out)->ob_item + at;
    uint32_t bad = 0;
    int whole = 1;
    Py_BEGIN_ALLOW_THREADS
    populate(items, total * sizeof(PyObject *)); /* each thread its own part's pages */
    for (Py_ssize_t i = 0; whole && i < nparts; i++) {
        size_t n = (size_t)views[i].len / 4, k = list_fill(v->id_objects, items + put, views[i].buf, n, 1, v->nids);
        const uint8_t *p = (const uint8_t *)views[i].buf + 4 * k;
        put += k;
        if ((whole = k == n)) continue;
        bad = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    Py_END_ALLOW_THREADS
    if (whole) {
        result = Py_NewRef(Py_None);
    } else {
        PyErr_Format(PyExc_ValueError, "token id %lu is not in the vocabulary", (unsigned long)bad);
    }
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    return result;
}

/* canonical() -> bytes: the length of each id's entry (little-endian, 4 bytes; 0xFFFFFFFF
 * for an id with none), then the entries' bytes in id order: what the vocabulary is,
 * whichever file it came from. */
static PyObject *Vocab_canonical(Vocab *v, PyObject *Py_UNUSED(arg)) {
    size_t total = 0;
    for (uint32_t id = 0; id < v->nids; id++)
        if (v->spans[id].length != NO_ENTRY) total += v->spans[id].length;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(4 * (size_t)v->nids + total));
    if (!out) return NULL;
    uint8_t *lengths = (uint8_t *)PyBytes_AS_STRING(out), *bytes = lengths + 4 * (size_t)v->nids;
    for (uint32_t id = 0; id < v->nids; id++) {
        Span span = v->spans[id];
        put_le32(lengths + 4 * (size_t)id, span.length);
        if (span.length == NO_ENTRY) continue;
        memcpy(bytes, v->blob + span.start, span.length);
        bytes += span.length;
    }
    return out;
}

static PyMethodDef Vocab_methods[] = {
    {"canonical", (PyCFunction)Vocab_canonical, METH_NOARGS, "Each id's entry length, then the entries in id order."},
    {"lists", (PyCFunction)Vocab_lists, METH_VARARGS, "The lists of ids of texts that Encoder.encode_ends packed."},
    {"unfilled", (PyCFunction)Vocab_unfilled, METH_O, "An empty list with room for n ids that fill() puts."},
    {"fill", (PyCFunction)Vocab_fill, METH_VARARGS, "Put the ids of packed parts into a list from unfilled(), without the GIL."},
    {"filled", (PyCFunction)Vocab_filled, METH_O, "Make the room fill() put the ids in a list's items."},
    {"decode_bytes", (PyCFunction)Vocab_decode_bytes, METH_O, "The bytes of a sequence of ids, joined."},
    {"decode", (PyCFunction)Vocab_decode, METH_O, "The text of a sequence of ids; invalid UTF-8 becomes U+FFFD."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject VocabType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.encode._encoder_core.Vocab",
    .tp_basicsize = sizeof(Vocab),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A vocabulary: the bytes of each id, and the id of each entry's bytes.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Vocab_init,
    .tp_dealloc = (destructor)Vocab_dealloc,
    .tp_methods = Vocab_methods,
};

/* ---- Encoder: pre-tokenize, look up, merge, all in C -------------------------------------- */

#define MAX_CACHED 4095 /* longer pre-tokens are merged every time, not cached */
#define ARENA_PER_ENTRY 64 /* arena bytes a cache keeps per entry it may hold */
#define CLAIM_BYTES 16384  /* arena bytes a writer takes from a cache at once, at most (Claim) */
#define CLAIM_ENTRIES 256  /* entries a writer takes from a cache at once, at most */
#define MAX_ENTRY (4 + MAX_CACHED + 1 + 4 * MAX_CACHED) /* so an empty cache takes any entry */
#define ARENA_MAX (4u << 24) /* entries lie at multiples of 4 below it: 24 bits of a slot */

/* A cache of pre-tokens' ids: open addressing over 4-byte slots (small, so they stay in the
 * processor's cache), each the top 8 bits of the pre-token's hash over the offset / 4 of its
 * entry in an arena that never moves; 0: a free slot. An entry (EntryHead, the bytes, then
 * the ids from the next multiple of 4) is written whole before its slot is published by a
 * compare-and-swap with release order; readers load slots with acquire order and check the
 * entry's bytes. Entries are only added, so encoder threads share a cache with no lock
 * (SharedCache); a full one takes no more, or is emptied by its only user. The arena and
 * slots are allocated whole up front and touched as they fill, so an empty cache costs
 * address space, not memory. */
typedef struct {
    atomic_u32 *slots;
    uint32_t mask;        /* at most half the slots are ever used */
    uint8_t *arena;
    size_t arena_cap;
    atomic_size arena_used; /* where the next entry goes; from 8, so no slot is 0 */
    atomic_size count;    /* entries added, or capacity once full */
    size_t capacity;
    size_t claim_bytes;   /* arena bytes a writer takes at once (Claim) */
} Cache;

typedef struct {
    uint16_t length, nids;
} EntryHead;

static inline size_t ids_offset(size_t n) {
    return (sizeof(EntryHead) + n + 3) & ~(size_t)3;
}

/* By the cache's only user: no other thread reads the slots while they are zeroed. */
static void cache_clear(Cache *c) {
    memset((void *)c->slots, 0, ((size_t)c->mask + 1) * sizeof(uint32_t));
    store_relaxed_size(&c->count, 0);
    store_relaxed_size(&c->arena_used, 8);
}

/* A cache of up to capacity entries (as far as 64 MB of arena go); -1 if out of memory. */
static int cache_init(Cache *c, Py_ssize_t capacity) {
    size_t most = (ARENA_MAX - MAX_ENTRY - 8) / ARENA_PER_ENTRY;
    c->capacity = capacity < 1 ? 1 : (size_t)capacity < most ? (size_t)capacity : most;
    size_t size = 16;
    while (size < 2 * c->capacity) size *= 2;
    c->mask = (uint32_t)(size - 1);
    c->arena_cap = 8 + c->capacity * ARENA_PER_ENTRY + MAX_ENTRY;
    c->claim_bytes = c->arena_cap / 4 < CLAIM_BYTES ? c->arena_cap / 4 : CLAIM_BYTES; /* a small cache fills too */
    c->slots = zeroed(size * sizeof(uint32_t));
    c->arena = PyMem_RawMalloc(c->arena_cap);
    store_relaxed_size(&c->count, 0);
    store_relaxed_size(&c->arena_used, 8);
    if (c->slots && c->arena) return 0;
    PyMem_RawFree((void *)c->slots);
    PyMem_RawFree(c->arena);
    c->slots = NULL;
    c->arena = NULL;
    return -1;
}

static void cache_free(Cache *c) {
    PyMem_RawFree((void *)c->slots);
    PyMem_RawFree(c->arena);
}

/* The entry a published slot points at, if it holds the n bytes at s (h: their hash). */
static inline const EntryHead *entry_of(const Cache *c, uint32_t slot, const uint8_t *s, size_t n, uint64_t h) {
    if (slot >> 24 != h >> 56) return NULL;
    const EntryHead *entry = (const EntryHead *)(c->arena + 4 * (size_t)(slot & 0xFFFFFF));
    return entry->length == n && !memcmp(entry + 1, s, n) ? entry : NULL;
}

static inline const uint32_t *cache_find(const Cache *c, const uint8_t *s, size_t n, uint64_t h, uint16_t *nids) {
    for (uint32_t i = (uint32_t)h & c->mask;; i = (i + 1) & c->mask) {
        uint32_t slot = load_acquire_u32(&c->slots[i]);
        if (!slot) return NULL;
        const EntryHead *entry = entry_of(c, slot, s, n, h);
        if (entry) {
            *nids = entry->nids;
            return (const uint32_t *)((const uint8_t *)entry + ids_offset(n));
        }
    }
}

/* What one writer holds of a cache: arena bytes at..end and a number of entries, each taken
 * from the cache's counters claim_bytes and CLAIM_ENTRIES at a time, so threads adding to one
 * cache touch its shared counters, and each other's lines, seldom. */
typedef struct {
    size_t at, end, entries;
} Claim;

/* Add the n bytes at s (n <= MAX_CACHED) with their ids, written where claim says; 1 if the
 * cache is full. Safe while other threads find and add, each with a claim of its own. */
static int cache_put(Cache *c, Claim *claim, const uint8_t *s, size_t n, uint64_t h, const uint32_t *ids, size_t nids) {
    if (!claim->entries) {
        size_t got;
        if (load_relaxed_size(&c->count) >= c->capacity || (got = fetch_add_relaxed_size(&c->count, CLAIM_ENTRIES)) >= c->capacity)
            return 1;
        claim->entries = c->capacity - got < CLAIM_ENTRIES ? c->capacity - got : CLAIM_ENTRIES;
    }
    size_t size = ids_offset(n) + nids * sizeof(uint32_t); /* a multiple of 4, as entries lie */
    if (claim->end - claim->at < size) {
        size_t take = size > c->claim_bytes ? size : c->claim_bytes;
        size_t at = fetch_add_relaxed_size(&c->arena_used, take);
        if (at + take > c->arena_cap) {
            store_relaxed_size(&c->count, c->capacity);
            return 1;
        }
        claim->at = at, claim->end = at + take;
    }
    size_t at = claim->at;
    claim->at += size;
    claim->entries--;
    EntryHead *entry = (EntryHead *)(c->arena + at);
    *entry = (EntryHead){(uint16_t)n, (uint16_t)nids};
    memcpy(entry + 1, s, n);
    memcpy((uint8_t *)entry + ids_offset(n), ids, nids * sizeof(uint32_t));
    uint32_t slot = (uint32_t)(h >> 56) << 24 | (uint32_t)(at / 4);
    for (uint32_t i = (uint32_t)h & c->mask;; i = (i + 1) & c->mask) {
        uint32_t seen = 0;
        if (cas_release_u32(&c->slots[i], &seen, slot)) return 0;
        if (entry_of(c, seen, s, n, h)) return 0; /* another thread added it first */
    }
}

/* SharedCache(ranks, vocab, direct, capacity): a cache the Encoders of those ranks,
 * vocabulary and direct fill and read together, from any threads. */
typedef struct {
    PyObject_HEAD
    MergeRanks *ranks;
    Vocab *vocab;
    int direct;
    Cache cache;
} SharedCache;

static int SharedCache_init(SharedCache *sc, PyObject *args, PyObject *Py_UNUSED(kw)) {
    MergeRanks *ranks;
    Vocab *vocab;
    int direct;
    Py_ssize_t capacity;
    if (!PyArg_ParseTuple(args, "O!O!pn", &MergeRanksType, &ranks, &VocabType, &vocab, &direct, &capacity)) return -1;
    if (sc->ranks) {
        PyErr_SetString(PyExc_RuntimeError, "a SharedCache is initialized once");
        return -1;
    }
    if (cache_init(&sc->cache, capacity)) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(ranks);
    Py_INCREF(vocab);
    sc->ranks = ranks;
    sc->vocab = vocab;
    sc->direct = direct;
    return 0;
}

static void SharedCache_dealloc(SharedCache *sc) {
    Py_XDECREF(sc->ranks);
    Py_XDECREF(sc->vocab);
    cache_free(&sc->cache);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

/* len(cache): the pre-tokens it holds, its published slots counted (writers take entries in
 * claims, so its counter runs ahead of them). */
static Py_ssize_t SharedCache_len(SharedCache *sc) {
    Py_ssize_t held = 0;
    for (uint32_t i = 0; i <= sc->cache.mask; i++) held += load_acquire_u32(&sc->cache.slots[i]) != 0;
    return held;
}

static PySequenceMethods SharedCache_sequence = {.sq_length = (lenfunc)SharedCache_len};

static PyTypeObject SharedCacheType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.encode._encoder_core.SharedCache",
    .tp_basicsize = sizeof(SharedCache),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pre-token cache that Encoders in several threads fill and read together.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SharedCache_init,
    .tp_dealloc = (destructor)SharedCache_dealloc,
    .tp_as_sequence = &SharedCache_sequence,
};

typedef struct {
    uint8_t *bytes; /* its UTF-8 */
    Py_ssize_t len;
    unsigned int id;
} Special;

/* The hot table: the ids of recently seen short pre-tokens, each in a 32-byte slot that holds
 * the pre-token's bytes too, so finding them takes one memory access (the caches above take
 * two: a slot, then its entry). Two-way: a pre-token goes in the first slot of the pair its
 * bytes hash to (one 64-byte line), the pair's first moving to its second, whose pre-token
 * drops out: the one used less recently (a hit in the second slot makes it the first:
 * without that, a warm encode of en-mix-6m took 20 ms, not 15). It needs no clearing. It
 * starts at 256 KB, so a few short texts keep it small, and once it has taken in as many
 * pre-tokens as it has pairs it becomes 4 MB, its pre-tokens moved over: 65,536 pairs for the
 * 52,325 distinct pre-tokens of en-mix-6m (at 2 MB a warm encode of en-mix-6m ran at 255-266
 * MB/s, at 8 MB 282-292; at 4 MB 2% slower than at 8, and a cold one 6-14% faster: 8 MB were
 * 2,048 pages to fault in, 3 ms; growing by doubling cost a cold encode a sixth more). Each Encoder has its own: shared by threads, the table's writes on hits would need
 * each read checked (docs/speed.md, one hot table for all the threads). */
#define HOT_BYTES SHORT_BYTES /* pre-tokens up to this long (and of up to HOT_IDS ids) take a slot */
#define HOT_IDS 3
#define HOT_FIRST_BITS 12 /* 4,096 pairs of slots */
#define HOT_MOST_BITS 16  /* 65,536 */

typedef struct {
    uint64_t a, b;  /* the pre-token's bytes, its key (key_lo, key_hi) */
    uint8_t length; /* 0: a free slot */
    uint8_t nids;
    uint16_t unused;
    uint32_t ids[HOT_IDS];
} HotSlot;

typedef struct {
    PyObject_HEAD
    MergeRanks *ranks;
    Vocab *vocab;
    int pattern;
    int direct;         /* a pre-token that is a vocabulary entry is that entry */
    PyThread_type_lock lock; /* one encode at a time: the buffers and own caches are this object's */
    SharedCache *shared; /* or NULL; once full, own takes the rest */
    Claim shared_claim;
    Cache own;          /* emptied when full, so memory stays bounded; beside a shared one, made at the first put */
    Py_ssize_t own_size; /* its entries */
    Claim own_claim;
    HotSlot *hot;       /* 2^hot_bits pairs of slots, each pair a 64-byte line, looked in before the caches */
    void *hot_block;    /* the allocation hot lies in */
    int hot_bits;
    size_t hot_taken;   /* pre-tokens put in the hot table since it last grew */
    uint8_t *utf8;      /* the text's UTF-8, PAD zeros after it */
    size_t utf8_cap;
    uint32_t *work;     /* the merge loop's ids and ranks */
    size_t work_cap;
    uint32_t *out;      /* the ids of the text */
    size_t out_len, out_cap;
    size_t out_ready;   /* out_room's quick answer: room for up to this many ids is ready */
    Special *specials;  /* longest first */
    Py_ssize_t nspecials;
    char special_starts[256]; /* a byte a special token's UTF-8 starts with */
    uint8_t special_lead[2]; /* the bytes every special token starts with */
    int special_lead_len;    /* how many of them: 0, 1 or 2 */
    int out_in_list;    /* out is a list's memory (encode_list), which never grows */
    size_t out_faulted; /* meanwhile, the ids of out whose pages are faulted in */
    uint32_t *set_aside; /* meanwhile, the encoder's own out */
    size_t set_aside_cap;
    double ids_a_char;  /* of the last text of RATE_CHARS or more encode_list made a list of, or 0 */
} Encoder;

/* Grow *buf to hold at least need items of size each, keeping its first used (raw
 * allocator: called without the GIL). A buffer mostly unwritten is moved with only those
 * copied: realloc copies a block whole, and its reads of room never written (the room for an
 * id a byte of a text's chunk, four times its ids in English) map the kernel's zero page there,
 * so that each later write to that memory, whoever has it by then, faults again and, while
 * another thread of the process runs, flushes that thread's TLB with an interrupt. A long
 * text's pieces in two threads met 150-190 such faults, at 28 us each. */
static int reserve(void **buf, size_t *cap, size_t need, size_t size, size_t used) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *p;
    if (used * 2 >= *cap) p = PyMem_RawRealloc(*buf, n * size); /* mostly written: realloc may grow it in place */
    else if ((p = PyMem_RawMalloc(n * size))) {
        if (used) memcpy(p, *buf, used * size);
        PyMem_RawFree(*buf);
    }
    if (!p) return -1;
    *buf = p;
    *cap = n;
    return 0;
}

/* Free a buffer of over 32 MB (of items of size bytes), so an Encoder keeps no more between
 * texts; a text up to that size reuses its buffers, with no new pages to fault in (8 million
 * ids; a text's UTF-8 is made a chunk at a time, but one with no place to cut it, as Chinese,
 * whole: 10 million characters, room for 3 bytes each). */
#define KEPT_BYTES ((size_t)32 << 20)
static void shrink(void **buf, size_t *cap, size_t size) {
    if (*cap * size > KEPT_BYTES) {
        PyMem_RawFree(*buf);
        *buf = NULL;
        *cap = 0;
    }
}

/* The cached ids of a pre-token: in the shared cache, else in the Encoder's own (used only
 * once the shared one is full). */
static inline const uint32_t *encoder_find(const Encoder *e, const uint8_t *s, size_t n, uint64_t h, uint16_t *nids) {
    const uint32_t *ids = e->shared ? cache_find(&e->shared->cache, s, n, h, nids) : NULL;
    return ids || !load_relaxed_size(&e->own.count) ? ids : cache_find(&e->own, s, n, h, nids);
}

static void encoder_put(Encoder *e, const uint8_t *s, size_t n, uint64_t h, const uint32_t *ids, size_t nids) {
    if (e->shared && !cache_put(&e->shared->cache, &e->shared_claim, s, n, h, ids, nids)) return;
    /* Beside a shared cache, made only now: most encoders never need it (its 512 KB of
     * slots, zeroed, cost a helper thread's first call 0.5 ms with the GIL held); with no
     * memory, nothing is kept. */
    if (!e->own.slots && cache_init(&e->own, e->own_size)) return;
    if (cache_put(&e->own, &e->own_claim, s, n, h, ids, nids)) {
        cache_clear(&e->own); /* bounded memory on endless streams */
        e->own_claim = (Claim){0, 0, 0};
        cache_put(&e->own, &e->own_claim, s, n, h, ids, nids);
    }
}

#define SURROGATE (-2)

/* The hot pair of slots of a short key's hash. */
static inline size_t hot_set(uint64_t h, int bits) {
    return (size_t)(h >> (64 - bits)) * 2;
}

/* A hot table of 2^bits pairs of slots, zeroed, a pair a 64-byte line (aligned by hand: C11's
 * aligned_alloc is missing on some platforms); 0, or -1 (no memory). */
static int hot_alloc(Encoder *e, int bits) {
    size_t bytes = ((size_t)2 << bits) * sizeof(HotSlot) + 64;
    void *block = zeroed(bytes);
    if (!block) return -1;
    e->hot_block = block;
    e->hot = (HotSlot *)((uintptr_t)block + 63 - ((uintptr_t)block + 63) % 64);
    e->hot_bits = bits;
    e->hot_taken = 0;
    return 0;
}

/* The hot table at its largest, its pre-tokens moved over (a pair's first stays first, and
 * no others join them); left as it is if there is no memory for it. */
static void hot_grow(Encoder *e) {
    HotSlot *old = e->hot;
    void *old_block = e->hot_block;
    int old_bits = e->hot_bits;
    if (hot_alloc(e, HOT_MOST_BITS)) {
        e->hot_taken = 0; /* and try again after as many more */
        return;
    }
    for (size_t k = 0; k < (size_t)2 << old_bits; k++) {
        const HotSlot *slot = &old[k ^ 1]; /* a pair's second before its first, which ends up first */
        if (!slot->length) continue;
        HotSlot *pair = &e->hot[hot_set(short_hash(slot->a, slot->b), e->hot_bits)]; /* its index begins with the old one's */
        pair[1] = pair[0];
        pair[0] = *slot;
    }
    PyMem_RawFree(old_block);
}

/* The ids of the n bytes at s (a pre-token, n > 1; h: pretoken_hash; a, b: their short
 * key, or h and 0) into out (room for n ids): its vocabulary entry (with direct), else from
 * the caches, else from the merge loop, and then cached. A short entry is found first, in
 * one line of the vocabulary's table, and is not cached (the hot table keeps it); a longer
 * one is looked for in the caches first and cached, as its bytes must be compared there too.
 * How many ids, or -1 (no memory). */
static ptrdiff_t pretoken_ids(Encoder *e, const uint8_t *s, size_t n, uint64_t h, uint64_t a, uint64_t b, uint32_t *out) {
    uint32_t id = e->direct && n <= SHORT_BYTES ? vocab_find(e->vocab, s, n, h, a, b) : NO_ID;
    if (id != NO_ID) {
        *out = id;
        return 1;
    }
    uint16_t nids;
    const uint32_t *ids = n <= MAX_CACHED ? encoder_find(e, s, n, h, &nids) : NULL;
    if (ids) {
        memcpy(out, ids, nids * sizeof(uint32_t));
        return nids;
    }
    id = e->direct && n > SHORT_BYTES ? vocab_find(e->vocab, s, n, h, h, 0) : NO_ID;
    size_t k = 1;
    if (id != NO_ID) {
        *out = id;
    } else {
        if (reserve((void **)&e->work, &e->work_cap, WORK_PER_BYTE * n, sizeof(uint32_t), 0)) return -1;
        k = (size_t)merge_bytes(e->ranks, s, (Py_ssize_t)n, e->work);
        memcpy(out, e->work, k * sizeof(uint32_t));
    }
    if (n <= MAX_CACHED) encoder_put(e, s, n, h, out, k);
    return (ptrdiff_t)k;
}

/* Room in e->out for need ids: grown, or, while e->out is a list's memory (encode_list), its
 * pages faulted in a megabyte ahead of the ids with one call each (a second encode of
 * en-mix-6m while the first's list lived took 0.8 ms longer a trap a page), and once the
 * ids outgrow it, those so far moved to the encoder's own buffer, grown, to go on there.
 * 0 or -1 (no memory). */
#define FAULTED_AHEAD ((size_t)1 << 18) /* ids: a megabyte */
static int out_room_slow(Encoder *e, size_t need) {
    if (!e->out_in_list) {
        int err = reserve((void **)&e->out, &e->out_cap, need, sizeof(uint32_t), e->out_len);
        e->out_ready = e->out_cap;
        return err;
    }
    if (need <= e->out_cap) {
        size_t to = need - e->out_faulted > FAULTED_AHEAD ? need : e->out_faulted + FAULTED_AHEAD;
        to = to < e->out_cap ? to : e->out_cap;
        populate(e->out + e->out_faulted, (to - e->out_faulted) * sizeof(uint32_t));
        e->out_faulted = e->out_ready = to;
        return 0;
    }
    if (reserve((void **)&e->set_aside, &e->set_aside_cap, need, sizeof(uint32_t), 0)) return -1;
    memcpy(e->set_aside, e->out, e->out_len * sizeof(uint32_t));
    e->out = e->set_aside, e->out_cap = e->out_ready = e->set_aside_cap, e->out_in_list = 0;
    e->set_aside = NULL, e->set_aside_cap = 0;
    return 0;
}

static inline int out_room(Encoder *e, size_t need) {
    return need <= e->out_ready && need <= e->out_cap ? 0 : out_room_slow(e, need);
}

#define BATCH 128 /* pre-tokens found at once, their slots fetched before the first is looked up */
#define MISSED UINT32_MAX /* a pre-token not in the hot table */

/* The ids of the UTF-8 text[0..len) (PAD bytes after it readable) without special tokens,
 * appended to e->out. The pre-tokens are found BATCH at a time (pretoken_ends), and the memory each
 * will be looked up in (its hot pair of slots, or a longer one's cache slot) is asked for
 * before any is looked up, so the processor fetches them all at once rather than waiting
 * on each in turn. Then the hits are copied out of the hot table, and for each miss the
 * slots pretoken_ids will look in (the vocabulary's and the cache's) are asked for; and at
 * last, in order, each pre-token's ids are a hit's, or one byte's id, or pretoken_ids', and
 * put in the hot table. (A cold encode of en-mix-6m waited on those slots one miss after
 * another: 146-152 MB/s, 179-181 with them asked for a batch ahead; warm the same.) Single bytes go through the hot table too: in English a
 * sixth of the pre-tokens are one byte, scattered, and a branch on them mispredicted more
 * than the table's lookup costs (a warm en-mix-6m 277-282 MB/s with it, 302-310 without).
 * 0 or -1 (no memory). */
static int encode_piece(Encoder *e, const uint8_t *text, ptrdiff_t len) {
    const uint32_t *byte_ids = e->ranks->byte_ids;
    const Cache *cache = e->shared ? &e->shared->cache : &e->own;
    uint32_t *out = e->out + e->out_len;
    ptrdiff_t ends[BATCH + 1];
    uint64_t keys[BATCH]; /* each pre-token's hash */
    uint64_t los[BATCH], his[BATCH]; /* a short pre-token's key */
    uint32_t hits[BATCH][HOT_IDS + 1];  /* a hit's ids and how many, or MISSED */
    const Vocab *vocab = e->vocab;
    for (ends[0] = 0; ends[0] < len;) {
        if (e->hot_taken >= (size_t)1 << e->hot_bits && e->hot_bits < HOT_MOST_BITS) hot_grow(e);
        HotSlot *hot = e->hot;
        int bits = e->hot_bits;
        ptrdiff_t count = pretoken_ends(text, len, ends[0], e->pattern, ends + 1, BATCH);
        /* Room a batch at a time (a pre-token has at most one id a byte; a hot slot's ids are
         * copied whole), not for the whole piece: a long text's ids then fit in memory with
         * room for them and a little more (take_out), as the last result's kept. */
        e->out_len = (size_t)(out - e->out);
        if (out_room(e, e->out_len + (size_t)(ends[count] - ends[0]) + HOT_IDS)) return -1;
        out = e->out + e->out_len;
        for (ptrdiff_t k = 0; k < count; k++) {
            const uint8_t *s = text + ends[k];
            size_t n = (size_t)(ends[k + 1] - ends[k]);
            if (n <= HOT_BYTES) { /* one byte too: a branch on it costs more than the key */
                uint64_t a, b;
                short_key(s, n, &a, &b);
                los[k] = a, his[k] = b;
                keys[k] = short_hash(a, b);
                PREFETCH(&hot[hot_set(keys[k], bits)]);
            } else {
                keys[k] = bytes_hash(s, n);
                PREFETCH((const void *)&cache->slots[keys[k] & cache->mask]);
            }
        }
        for (ptrdiff_t k = 0; k < count; k++) { /* the hits copied out, the misses' slots asked for */
            size_t n = (size_t)(ends[k + 1] - ends[k]);
            if (n > HOT_BYTES) { /* its cache slot is on its way */
                hits[k][HOT_IDS] = MISSED;
                continue;
            }
            uint64_t a = los[k], b = his[k];
            HotSlot *slot = &hot[hot_set(keys[k], bits)];
            if (slot[0].a == a && slot[0].b == b && slot[0].length == n) {
                memcpy(hits[k], slot[0].ids, sizeof slot[0].ids);
                hits[k][HOT_IDS] = slot[0].nids;
            } else if (slot[1].a == a && slot[1].b == b && slot[1].length == n) {
                memcpy(hits[k], slot[1].ids, sizeof slot[1].ids);
                hits[k][HOT_IDS] = slot[1].nids;
                HotSlot used = slot[1]; /* now the more recent of the two */
                slot[1] = slot[0];
                slot[0] = used;
            } else {
                hits[k][HOT_IDS] = MISSED;
                if (n > 1 && e->direct) PREFETCH(&vocab->short_ids.slots[keys[k] & vocab->short_ids.mask]);
                if (n > 1) PREFETCH((const void *)&cache->slots[keys[k] & cache->mask]);
            }
        }
        for (ptrdiff_t k = 0; k < count; k++) {
            if (hits[k][HOT_IDS] != MISSED) {
                memcpy(out, hits[k], HOT_IDS * sizeof(uint32_t));
                out += hits[k][HOT_IDS];
                continue;
            }
            const uint8_t *s = text + ends[k];
            size_t n = (size_t)(ends[k + 1] - ends[k]);
            if (n > HOT_BYTES) {
                ptrdiff_t got = pretoken_ids(e, s, n, keys[k], keys[k], 0, out);
                if (got < 0) return -1;
                out += got;
                continue;
            }
            uint64_t a = los[k], b = his[k];
            ptrdiff_t got = n == 1 ? (*out = byte_ids[s[0]], 1) : pretoken_ids(e, s, n, keys[k], a, b, out);
            if (got < 0) return -1;
            if (got <= HOT_IDS) {
                HotSlot *slot = &hot[hot_set(keys[k], bits)];
                e->hot_taken++;
                slot[1] = slot[0];
                slot[0] = (HotSlot){a, b, (uint8_t)n, (uint8_t)got, 0, {0}};
                memcpy(slot[0].ids, out, (size_t)got * sizeof(uint32_t));
            }
            out += got;
        }
        ends[0] = ends[count];
    }
    e->out_len = (size_t)(out - e->out);
    return 0;
}

/* The first place from p on where the n (1 or 2) bytes of lead start, or NULL. With two,
 * the second is looked for and the one before it checked: a special token's first byte is
 * often common in text ('<' every 250 bytes of en-mix-6m: a memchr call for each took 4% of
 * encoding it warm), the second of "<|" seldom ('|' every 16 KB). */
static inline const uint8_t *lead_at(const uint8_t *p, const uint8_t *end, const uint8_t *lead, int n) {
    if (n == 1) return memchr(p, lead[0], (size_t)(end - p));
    for (const uint8_t *q = p + 1; q < end; q++) {
        if (!(q = memchr(q, lead[1], (size_t)(end - q)))) return NULL;
        if (q[-1] == lead[0]) return q - 1;
    }
    return NULL;
}

/* The special token that starts at byte i (the first in e->specials, longest first, as the
 * regex alternation of them tries them), or -1. */
static inline Py_ssize_t special_at(const Encoder *e, const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    if (!e->special_starts[s[i]]) return -1;
    for (Py_ssize_t k = 0; k < e->nspecials; k++) {
        const Special *sp = &e->specials[k];
        if (sp->len <= len - i && !memcmp(sp->bytes, s + i, (size_t)sp->len)) return k;
    }
    return -1;
}

/* The ids of the UTF-8 text s[0..len), appended to e->out: the pieces between special tokens
 * (found leftmost first, each search starting where the last token ended, as regex's
 * finditer) and the special tokens' ids. Runs without the GIL. */
static int encode_text(Encoder *e, const uint8_t *s, ptrdiff_t len) {
    ptrdiff_t start = 0;
    for (ptrdiff_t i = 0; e->nspecials && i < len;) {
        if (e->special_lead_len) { /* to the next candidate */
            const uint8_t *at = lead_at(s + i, s + len, e->special_lead, e->special_lead_len);
            if (!at) break;
            i = at - s;
        }
        Py_ssize_t k = special_at(e, s, len, i);
        if (k < 0) {
            i++;
            continue;
        }
        if (encode_piece(e, s + start, i - start) || out_room(e, e->out_len + 1))
            return -1;
        e->out[e->out_len++] = e->specials[k].id;
        i = start = i + e->specials[k].len;
    }
    return encode_piece(e, s + start, len - start);
}

/* A str's code points as stored, read with the GIL and encoded without it. */
typedef struct {
    const void *data;
    Py_ssize_t len;
    int kind, ascii;
} StrView;

static int view_of(PyObject *text, StrView *v) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "encode() takes a str");
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return -1; /* legacy (wstr) strings; 3.12 has none left */
#endif
    *v = (StrView){PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text), PyUnicode_IS_ASCII(text)};
    return 0;
}

#define CHUNK_CHARS (1 << 16) /* the characters of a long text made UTF-8 at a time */

/* Whether a special token lies across byte j of s (starts before it and ends after it);
 * the bytes after j reach as far as the longest. */
static int special_across(const Encoder *e, const uint8_t *s, size_t j, size_t reach) {
    for (size_t at = j >= reach ? j - reach + 1 : 0; at < j; at++) {
        if (!e->special_starts[s[at]]) continue;
        for (Py_ssize_t k = 0; k < e->nspecials; k++) {
            const Special *sp = &e->specials[k];
            if (at + (size_t)sp->len > j && !memcmp(s + at, sp->bytes, (size_t)sp->len)) return 1;
        }
    }
    return 0;
}

#define CUT_BYTES 4096 /* how far back from a chunk's end a cut is looked for */

/* Whether the character at s[j] is whitespace (\s, the patterns' own class). */
static inline int space_at(const uint8_t *s, size_t j) {
    ptrdiff_t next;
    return (pt_class_at(s, (ptrdiff_t)j, &next) & CLASS_S) != 0;
}

/* Whether the character that ends just before s[j] (j > 0) is whitespace. */
static inline int space_before(const uint8_t *s, size_t j) {
    size_t lead = j - 1;
    while (lead > 0 && j - lead < 4 && (s[lead] & 0xC0) == 0x80) lead--;
    return space_at(s, lead);
}

/* The last place in the len bytes at s where the text may be cut, encoded up to there and
 * from there apart with the same ids (0 if none), with the bytes after it to tell that no
 * special token lies across it; only after fresh, less the bytes that tell (those before
 * held no cut). Where every compiled pattern starts a pre-token whatever follows (as
 * PreTokenizer.safe_cut cuts): a space after a character that is no whitespace, looked for
 * in the last CUT_BYTES (English has one every few bytes; Chinese, read byte by byte to its
 * start, took a tenth longer to encode); else a line's start, found with memchr. Under
 * GPT-2, whose whitespace runs give their last character to what follows, after a newline
 * that follows no whitespace, before a character that is none, or before the \r of a \r\n
 * that follows no whitespace; under the others after a line's last newline, before a
 * character that is no whitespace, nor '/' (o200k's punctuation takes in the newlines and
 * slashes after it), or before an indent that one follows, not a special token. Chinese has
 * few spaces, and without lines a long Chinese text was made UTF-8 whole, its buffer grown
 * to the text's size: memory new to a first encode, out of the processor's cache. */
static size_t chunk_cut(const Encoder *e, const uint8_t *s, size_t fresh, size_t len) {
    size_t reach = e->nspecials ? (size_t)e->specials[0].len : 1; /* longest first */
    size_t end = len > reach ? len - reach : 0, from = fresh > reach ? fresh - reach : 0;
    size_t near = end > CUT_BYTES && from < end - CUT_BYTES ? end - CUT_BYTES : from;
    for (size_t j = end; j-- > near && j > 0;)
        if (s[j] == ' ' && !space_before(s, j) && !special_across(e, s, j, reach)) return j;
    size_t cut = 0;
    for (const uint8_t *nl = from < end ? memchr(s + from, '\n', end - from) : NULL; nl; nl = memchr(nl + 1, '\n', (size_t)(s + end - nl - 1))) {
        size_t j = (size_t)(nl - s) + 1; /* a line's start */
        if (j >= end) break;
        if (e->pattern == PATTERN_GPT2) {
            if (!space_at(s, j) && j > 1 && !space_before(s, j - 1) && !special_across(e, s, j, reach))
                cut = j;
            else if (j > 2 && j - 2 > from && s[j - 2] == '\r' && !space_before(s, j - 2) && !special_across(e, s, j - 2, reach))
                cut = j - 2; /* before the \r of a \r\n after a non-space: GPT-2's whitespace run starts there */
            continue;
        }
        size_t after = j; /* past the line's indent */
        while (after < end && s[after] != '\r' && s[after] != '\n' && space_at(s, after)) {
            ptrdiff_t next;
            pt_class_at(s, (ptrdiff_t)after, &next);
            after = (size_t)next;
        }
        int last = after == j ? s[j] != '\r' && s[j] != '\n' && s[j] != '/' /* o200k's punctuation takes in newlines and slashes */
                              : after < end && s[after] != '\r' && s[after] != '\n' && special_at(e, s, (ptrdiff_t)len, (ptrdiff_t)after) < 0;
        if (last && !special_across(e, s, j, reach)) cut = j;
    }
    return cut;
}

/* Whether the PAD bytes after end can be read: they lie on the 4 KB page of the byte before
 * it (pages are no smaller). */
static inline int readable_past(const uint8_t *end) {
    return (((uintptr_t)end - 1) ^ ((uintptr_t)end - 1 + PAD)) < 4096;
}

/* The ids of a str appended to e->out: its UTF-8, written into e->utf8 with PAD bytes after
 * it, encoded. A long text is made UTF-8 a chunk of CHUNK_CHARS at a time and encoded up to
 * its last cut (chunk_cut), the rest kept for the next chunk: the buffer stays small (in the
 * processor's cache while the scanner reads it, and no new memory to fault in for a first
 * long text: en-mix-6m's 6.6 MB took 1,600 faults a first encode). An ASCII str is its own
 * UTF-8, read where it lies (the pre-tokens' keys mask off the bytes past it), but for the
 * few whose last bytes end a page: the copy took 7% of encoding en-mix-6m's documents. 0,
 * -1 (no memory) or SURROGATE (a lone surrogate, which has no UTF-8). */
static int encode_str(Encoder *e, const StrView *v) {
    const uint8_t *ascii = (const uint8_t *)v->data;
    if (v->ascii && v->len && readable_past(ascii + v->len)) {
        size_t start = 0, end = 0, n = (size_t)v->len;
        while (n - end > 2 * CHUNK_CHARS) { /* a chunk at a time, as below */
            size_t from = end;
            end += CHUNK_CHARS;
            size_t cut = chunk_cut(e, ascii + start, from - start, end - start);
            if (!cut) continue;
            int err = encode_text(e, ascii + start, (ptrdiff_t)cut);
            if (err) return err;
            start += cut;
        }
        return encode_text(e, ascii + start, (ptrdiff_t)(n - start));
    }
    size_t len = 0;
    for (Py_ssize_t done = 0, n; done < v->len || !done; done += n) {
        n = v->len - done <= 2 * CHUNK_CHARS ? v->len - done : CHUNK_CHARS;
        if (reserve((void **)&e->utf8, &e->utf8_cap, len + (v->ascii ? (size_t)n : utf8_room(v->kind, n)) + PAD, 1, len)) return -1;
        int surrogates = 0;
        const uint8_t *data = (const uint8_t *)v->data + done * v->kind;
        size_t from = len;
        if (v->ascii) memcpy(e->utf8 + len, data, (size_t)n);
        len += v->ascii ? (size_t)n : (size_t)utf8_encode(data, v->kind, n, e->utf8 + len, &surrogates);
        if (surrogates) return SURROGATE;
        if (done + n == v->len) break;
        size_t cut = chunk_cut(e, e->utf8, from, len);
        if (!cut) continue;
        int err = encode_text(e, e->utf8, (ptrdiff_t)cut);
        if (err) return err;
        memmove(e->utf8, e->utf8 + cut, len - cut);
        len -= cut;
    }
    memset(e->utf8 + len, 0, PAD);
    return encode_text(e, e->utf8, (ptrdiff_t)len);
}

/* Encoder(ranks, vocab, pattern, direct, cache_size, specials, shared=None): pattern a
 * family of engine/corpus/_pretokenize_core.h (PATTERN_*); specials a list of (text, id),
 * longest text first; shared a SharedCache of the same ranks, vocab and direct, looked in
 * before the Encoder's own cache of cache_size entries. */
static int Encoder_init(Encoder *e, PyObject *args, PyObject *Py_UNUSED(kw)) {
    MergeRanks *ranks;
    Vocab *vocab;
    int pattern, direct;
    Py_ssize_t cache_size;
    PyObject *specials, *shared = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!ipnO!|O", &MergeRanksType, &ranks, &VocabType, &vocab, &pattern, &direct, &cache_size,
                          &PyList_Type, &specials, &shared))
        return -1;
    if (e->lock) {
        PyErr_SetString(PyExc_RuntimeError, "an Encoder is initialized once");
        return -1;
    }
    if (pattern < 0 || pattern >= PATTERN_COUNT) {
        PyErr_Format(PyExc_ValueError, "pattern must be a family number, 0-%d", PATTERN_COUNT - 1);
        return -1;
    }
    if (!ranks->slots || !vocab->spans) {
        PyErr_SetString(PyExc_ValueError, "ranks and vocab must be initialized");
        return -1;
    }
    for (int b = 0; b < 256; b++)
        if (ranks->byte_ids[b] >= vocab->nids) {
            PyErr_SetString(PyExc_ValueError, "a byte id is not in the vocabulary");
            return -1;
        }
    if (shared != Py_None && !PyObject_TypeCheck(shared, &SharedCacheType)) {
        PyErr_SetString(PyExc_TypeError, "shared must be a SharedCache or None");
        return -1;
    }
    SharedCache *sc = shared != Py_None ? (SharedCache *)shared : NULL;
    if (sc && (sc->ranks != ranks || sc->vocab != vocab || sc->direct != direct)) {
        PyErr_SetString(PyExc_ValueError, "a SharedCache serves Encoders of its own ranks, vocab and direct");
        return -1;
    }
    e->nspecials = PyList_GET_SIZE(specials);
    if (!(e->specials = PyMem_RawCalloc(e->nspecials + 1, sizeof(Special)))) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < e->nspecials; k++) {
        PyObject *text, *item = PyList_GET_ITEM(specials, k);
        Special *sp = &e->specials[k];
        if (!PyArg_ParseTuple(item, "UI", &text, &sp->id)) return -1;
        const char *utf8 = PyUnicode_AsUTF8AndSize(text, &sp->len);
        if (!utf8) return -1;
        if (!sp->len) {
            PyErr_SetString(PyExc_ValueError, "special tokens must not be empty");
            return -1;
        }
        if (!(sp->bytes = PyMem_RawMalloc((size_t)sp->len))) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(sp->bytes, utf8, (size_t)sp->len);
        e->special_starts[sp->bytes[0]] = 1;
        if (k == 0) {
            e->special_lead_len = sp->len < 2 ? (int)sp->len : 2;
            memcpy(e->special_lead, sp->bytes, (size_t)e->special_lead_len);
        }
        while (e->special_lead_len && (sp->len < e->special_lead_len || memcmp(sp->bytes, e->special_lead, (size_t)e->special_lead_len)))
            e->special_lead_len--;
    }
    Py_INCREF(ranks);
    Py_INCREF(vocab);
    Py_XINCREF(sc);
    e->ranks = ranks;
    e->vocab = vocab;
    e->shared = sc;
    e->pattern = pattern;
    e->direct = direct;
    e->lock = PyThread_allocate_lock();
    e->own_size = cache_size;
    if (hot_alloc(e, HOT_FIRST_BITS) || (!sc && cache_init(&e->own, cache_size)) || !e->lock) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void Encoder_dealloc(Encoder *e) {
    Py_XDECREF(e->ranks);
    Py_XDECREF(e->vocab);
    Py_XDECREF(e->shared);
    if (e->lock) PyThread_free_lock(e->lock);
    cache_free(&e->own);
    PyMem_RawFree(e->hot_block);
    PyMem_RawFree(e->utf8);
    PyMem_RawFree(e->work);
    PyMem_RawFree(e->out);
    if (e->specials)
        for (Py_ssize_t k = 0; k < e->nspecials; k++) PyMem_RawFree(e->specials[k].bytes);
    PyMem_RawFree(e->specials);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

/* Narrow e->out in place to little-endian ids of width bytes (2 or 4); -1 if an id does
 * not fit. Runs without the GIL. */
static int pack_out(Encoder *e, int width) {
    if (width == 4 && pt_little_endian()) return 0; /* they are already */
    uint8_t *p = (uint8_t *)e->out;
    for (size_t k = 0; k < e->out_len; k++, p += width) {
        uint32_t id = e->out[k]; /* read before the bytes at p, which never run ahead of it */
        if (width == 4) {
            put_le32(p, id);
            continue;
        }
        if (id > 0xFFFF) return -1;
        p[0] = (uint8_t)id;
        p[1] = (uint8_t)(id >> 8);
    }
    return 0;
}

/* Take the Encoder's lock, letting other threads run while it waits. */
static void lock_encoder(Encoder *e) {
    if (!PyThread_acquire_lock(e->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(e->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

/* The list of the ids e->out[from..to), left out of the cycle collector's walks: a list of
 * ints refers to no container, so it can be in no cycle (unless its owner puts one in it),
 * and walking a batch's lists of ids, generation by generation, took a sixth of encoding
 * many short texts. */
static PyObject *ids_list(const Encoder *e, size_t from, size_t to) {
    PyObject *out = unset_list(to - from);
    if (!out) return NULL;
    list_fill(e->vocab->id_objects, ((PyListObject *)out)->ob_item, (const uint8_t *)(e->out + from), to - from, 0, 0);
    PyObject_GC_UnTrack(out);
    return out;
}

/* The lists of the ids of count texts, e->out[offsets[k]..offsets[k + 1]), each as ids_list
 * makes it. The cycle collector is held off meanwhile (the GIL held throughout, no other
 * thread sees it off): each 700 lists made set off a collection that walked the batch's
 * tuple of texts and its list of lists, which can be in no cycle, 21 of the youngest
 * objects and one of the middle generation in a call with en-mix-6m's 15,555 documents,
 * where now the next allocation after it sets off one. */
static PyObject *ids_lists(const Encoder *e, const size_t *offsets, Py_ssize_t count) {
    int collecting = PyGC_Disable();
    PyObject *out = PyList_New(count);
    for (Py_ssize_t k = 0; out && k < count; k++) {
        PyObject *list = ids_list(e, offsets[k], offsets[k + 1]);
        if (!list) Py_CLEAR(out); /* the lists not made are NULL items */
        else PyList_SET_ITEM(out, k, list);
    }
    if (collecting) PyGC_Enable();
    return out;
}

/* Give back the buffers of a long text or pre-token, and the lock. */
static void release_encoder(Encoder *e) {
    shrink((void **)&e->out, &e->out_cap, sizeof(uint32_t));
    shrink((void **)&e->utf8, &e->utf8_cap, 1);
    shrink((void **)&e->work, &e->work_cap, sizeof(uint32_t));
    PyThread_release_lock(e->lock);
}

/* Ids handed over with their memory, not copied: what an Encoder made in e->out, or parts of
 * it joined. Read through the buffer protocol as 4-byte unsigned ints, little-endian: format
 * "I" where that is the machine's order ("<I", which memoryview cannot index, where not). */
typedef struct {
    PyObject_HEAD
    uint32_t *ids; /* PyMem_Raw memory, or NULL for none */
    Py_ssize_t n;
    size_t room;   /* the 4-byte ids that memory has room for: n and up */
    int width;     /* bytes an id: 4, or 2 (join_packed) */
} PackedIds;

static uint32_t no_ids[1];

/* The memory of the last large PackedIds freed, kept for the next large one made: glibc
 * gives a block that large back to the system when it is freed, and a new one is faulted in
 * a page at a time (joining en-mix-6m's documents' ids from two threads took 2.5-2.8 ms in
 * new memory, 1.0 ms in kept memory). One block of KEPT_LEAST-KEPT_MOST ids; the GIL guards
 * it. */
static uint32_t *kept_ids;
static size_t kept_count;
#define KEPT_LEAST ((size_t)1 << 18) /* 1 MB */
#define KEPT_MOST ((size_t)1 << 24)  /* 64 MB */

static void keep_ids(uint32_t *ids, size_t n) { /* n: its room */
    if (n < KEPT_LEAST || n > KEPT_MOST) {
        PyMem_RawFree(ids);
        return;
    }
    PyMem_RawFree(kept_ids);
    kept_ids = ids;
    kept_count = n;
}

/* The kept block, its room for *n ids (at least least, at most twice as many) given up to
 * the caller; NULL if none is kept of that size. */
static uint32_t *kept(size_t least, size_t *n) {
    if (!kept_ids || kept_count < least || kept_count / 2 > least) return NULL;
    uint32_t *ids = kept_ids;
    *n = kept_count;
    kept_ids = NULL;
    return ids;
}

static void PackedIds_dealloc(PackedIds *p) {
    keep_ids(p->ids, p->room);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static int PackedIds_getbuffer(PackedIds *p, Py_buffer *view, int flags) {
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError, "packed ids are read-only");
        return -1;
    }
    *view = (Py_buffer){.buf = p->ids ? p->ids : no_ids, .obj = Py_NewRef(p), .len = p->width * p->n, .readonly = 1, .itemsize = p->width, .ndim = 1};
    if ((flags & PyBUF_FORMAT) == PyBUF_FORMAT)
        view->format = p->width == 2 ? (pt_little_endian() ? "H" : "<H") : (pt_little_endian() ? "I" : "<I");
    if ((flags & PyBUF_ND) == PyBUF_ND) view->shape = &p->n;
    if ((flags & PyBUF_STRIDES) == PyBUF_STRIDES) view->strides = &view->itemsize;
    return 0;
}

static PyBufferProcs PackedIds_buffer = {.bf_getbuffer = (getbufferproc)PackedIds_getbuffer};

static PyTypeObject PackedIdsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.encode._encoder_core.PackedIds",
    .tp_basicsize = sizeof(PackedIds),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Token ids as little-endian 4-byte unsigned ints, read through the buffer protocol.",
    .tp_dealloc = (destructor)PackedIds_dealloc,
    .tp_as_buffer = &PackedIds_buffer,
};

/* A PackedIds of the n ids at ids, with room for room (PyMem_Raw memory, its own from now on,
 * freed on failure). */
static PyObject *packed_ids_in(uint32_t *ids, size_t n, size_t room) {
    PackedIds *p = PyObject_New(PackedIds, &PackedIdsType);
    if (!p) {
        PyMem_RawFree(ids);
        return NULL;
    }
    p->ids = ids;
    p->n = (Py_ssize_t)n;
    p->room = room;
    p->width = 4;
    return (PyObject *)p;
}

static PyObject *packed_ids(uint32_t *ids, size_t n) {
    return packed_ids_in(ids, n, n);
}

/* Room for n ids (n > 0): the kept block when it fits (its room past them given back), else
 * new memory, its pages faulted in at once when populated; NULL with MemoryError. */
static uint32_t *ids_room(size_t n, int populated) {
    size_t room = 0;
    uint32_t *ids = kept(n, &room), *fit;
    if (room > n && (fit = PyMem_RawRealloc(ids, 4 * n))) ids = fit;
    if (ids) return ids;
    if (!(ids = PyMem_RawMalloc(4 * n))) PyErr_NoMemory();
    else if (populated) populate(ids, 4 * n);
    return ids;
}

/* e->out's ids packed, handed over: a cold encode of en-mix-6m's documents faulted in 1,600
 * pages for a copy and took a tenth longer. The encoder reserves a new buffer for its next
 * text, the memory of this one once it is freed (kept_ids) if that has room. Room never
 * written past an eighth more than the ids is given back (the pages it kept); up to that it
 * stays, for the next text as long asks room a batch of pre-tokens ahead, and memory with
 * room for exactly the last text's ids was outgrown at its end and moved: a warm encode of
 * zh-xiyouji faulted in 650 pages a call. */
static PyObject *take_out(Encoder *e) {
    uint32_t *ids = e->out;
    size_t room = e->out_cap, fits = e->out_len + e->out_len / 8;
    if (room > fits) {
        uint32_t *fit = fits ? PyMem_RawRealloc(ids, fits * sizeof(uint32_t)) : NULL;
        if (fit || !fits) {
            if (!fit) PyMem_RawFree(ids);
            ids = fit;
            room = fits;
        }
    }
    e->out = NULL;
    e->out_cap = 0;
    return packed_ids_in(ids, e->out_len, room);
}

/* Set the exception of a failed encode of text: err SURROGATE raises the UnicodeEncodeError
 * str.encode gives, -1 MemoryError, and !fits OverflowError. */
static void encode_error(PyObject *text, int err, int fits) {
    if (err == SURROGATE) Py_XDECREF(PyUnicode_AsUTF8String(text));
    else if (err) PyErr_NoMemory();
    else if (!fits) PyErr_SetString(PyExc_OverflowError, "a token id does not fit in 16 bits");
}

/* The ids of a list's memory, from PyMem_Malloc as a list's items must be: a 31 MB block is
 * still glibc's heap's (the largest it gives from the heap, with keep_freed_lists), so the
 * next list takes it again, where a block mapped of its own is new memory every call. */
#define LIST_IDS (((size_t)31 << 20) / sizeof(uint32_t))
#define FREE_POINTERS ((size_t)1 << 16) /* a list of more ids has its pointers made without the GIL */
/* The least characters of a text whose ids a character guess the next list's room: a short
 * one's are no guide ("hello world", 2 ids, left en-mix-6m's list half the room its pointers
 * took: 2,950 pages more faulted in, 35-36 ms a cold encode became 40-41). */
#define RATE_CHARS ((Py_ssize_t)1 << 12)

/* The list of a str's ids, encoded into the list's own memory: room for ids of 4 bytes is
 * the encoder's output while it encodes without the GIL; then each id becomes its int's
 * pointer in place, from the last (a pointer takes the room of two ids, all read by then),
 * and the room past them is given back. Ids that outgrow the room go on in the encoder's own
 * buffer (out_room), and are copied into a list from there, as they all were: a cold encode
 * of en-mix-6m faulted in both, 7,066 pages, where this way it faults in 5,448. The room:
 * twice the ids the last long text's rate a character gives (RATE_CHARS), and a quarter
 * more (its pointers then fit too), or before any, an id a UTF-8 byte (which no text's ids
 * outnumber); at most LIST_IDS. Sized by UTF-8 alone, the block was larger than a list, and
 * where an earlier list lived, it came from memory new to the process where a list's did
 * not (1,600 pages more in a second encode of en-mix-6m while the first's list and text
 * lived). */
static PyObject *encode_list(Encoder *e, PyObject *text, const StrView *v) {
    size_t bound = v->ascii ? (size_t)v->len : utf8_room(v->kind, v->len);
    bound = bound < LIST_IDS ? bound : LIST_IDS;
    /* Room for twice the ids of the last text's rate and a quarter more, its pointers within
     * it: no larger than the list. */
    size_t guess = 2 * (size_t)(1.25 * e->ids_a_char * (double)v->len) + 4096;
    size_t room = (e->ids_a_char > 0 && guess < bound ? guess : bound) + HOT_IDS;
    if (4 * room >= LARGE_LIST) keep_freed_lists(); /* the heap's, to be kept for the next */
    uint8_t *items = PyMem_Malloc(4 * room);
    if (!items) return PyErr_NoMemory();
    lock_encoder(e);
    e->set_aside = e->out, e->set_aside_cap = e->out_cap;
    e->out = (uint32_t *)items, e->out_cap = room, e->out_len = 0, e->out_in_list = 1, e->out_faulted = e->out_ready = 0;
    int err, in_list;
    size_t n;
    Py_BEGIN_ALLOW_THREADS
    err = encode_str(e, v);
    n = e->out_len, in_list = e->out_in_list;
    if (!err && in_list && 8 * n <= 4 * room) populate(items + 4 * n, 4 * n); /* the pointers' half not yet written */
    Py_END_ALLOW_THREADS
    if (in_list) e->out = e->set_aside, e->out_cap = e->set_aside_cap, e->out_in_list = 0;
    e->out_ready = 0; /* out_room asks reserve again */
    if (!err && v->len >= RATE_CHARS) e->ids_a_char = (double)n / (double)v->len;
    e->set_aside = NULL, e->set_aside_cap = 0;
    PyObject *list = NULL;
    if (err) encode_error(text, err, 1);
    else if (!in_list) list = ids_list(e, 0, n);
    else if ((list = PyList_New(0)) && n) {
        /* more ids than half the room: their pointers made straight into a block of their
         * own, not the ids first copied there by realloc */
        uint8_t *pointers = 8 * n > 4 * room ? PyMem_Malloc(8 * n) : items;
        if (pointers) {
            PyObject *const *objects = e->vocab->id_objects;
            /* A long list's without the GIL (the ints are id_ints): two threads' encode() of
             * 1 MB of English each, at once, waited on each other's (2.3-2.5 ms a call, two
             * processes' 2.1-2.4). */
            PyThreadState *saved = n >= FREE_POINTERS ? PyEval_SaveThread() : NULL;
            for (size_t k = n; k-- > 0;) { /* by bytes: the ids and the pointers may share the memory */
                uint32_t id;
                memcpy(&id, items + 4 * k, 4);
                memcpy(pointers + 8 * k, &objects[id], sizeof(PyObject *));
            }
            if (saved) PyEval_RestoreThread(saved);
            uint8_t *fit = pointers == items && 8 * n < 4 * room ? PyMem_Realloc(items, 8 * n) : NULL; /* the room past them given back */
            ((PyListObject *)list)->ob_item = (PyObject **)(fit ? fit : pointers);
            ((PyListObject *)list)->allocated = (Py_ssize_t)n;
            Py_SET_SIZE(list, (Py_ssize_t)n);
            if (pointers == items) items = NULL; /* the list's now */
        } else {
            Py_CLEAR(list);
            PyErr_NoMemory();
        }
    }
    if (list) PyObject_GC_UnTrack(list); /* see ids_list */
    PyMem_Free(items);
    release_encoder(e);
    return list;
}

/* The ids of a text's characters start..end (clipped to it, as a slice is): a list of ints
 * (width 0, encode_list), or the bytes of a little-endian array of width-byte unsigned ints
 * (2 or 4). Releases the GIL while it works, so threads with an Encoder each run in
 * parallel. */
static PyObject *encode_as(Encoder *e, PyObject *text, int width, Py_ssize_t start, Py_ssize_t end) {
    StrView v;
    if (view_of(text, &v)) return NULL;
    end = end < 0 ? 0 : end < v.len ? end : v.len;
    start = start < 0 ? 0 : start < end ? start : end;
    v.data = (const uint8_t *)v.data + start * v.kind;
    v.len = end - start;
    if (!width) return encode_list(e, text, &v);
    int err, fits = 1;
    lock_encoder(e);
    Py_BEGIN_ALLOW_THREADS
    e->out_len = 0;
    size_t room = (size_t)v.len * (size_t)v.kind + HOT_IDS; /* its ids' room at once, not grown a doubling at a time; within what shrink keeps */
    err = reserve((void **)&e->out, &e->out_cap, room < KEPT_BYTES / sizeof(uint32_t) ? room : KEPT_BYTES / sizeof(uint32_t), sizeof(uint32_t), 0);
    if (!err) err = encode_str(e, &v);
    if (!err && width) fits = !pack_out(e, width);
    Py_END_ALLOW_THREADS
    PyObject *out = NULL;
    if (err || !fits) encode_error(text, err, fits);
    else out = PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)(e->out_len * (size_t)width));
    release_encoder(e);
    return out;
}

/* The ids of several texts at once, the GIL released once for all of them: a list of lists
 * of ints (width 0) or of bytes (width 2 or 4: each text's ids packed); joined: the bytes of
 * all their ids packed, with eot (if not negative) after each text whose item of ends is
 * true (each text, when ends is None). */
static PyObject *encode_many_as(Encoder *e, PyObject *texts, int width, int joined, long eot, PyObject *ends) {
    PyObject *items = PySequence_Tuple(texts), *out = NULL;
    if (!items) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(items), failed = -1;
    StrView *views = PyMem_New(StrView, count + 1);
    size_t *offsets = PyMem_New(size_t, count + 1);
    char *marks = PyMem_Malloc((size_t)count + 1);
    int err = 0, fits = 1;
    if (!views || !offsets || !marks) {
        PyErr_NoMemory();
        goto done;
    }
    if (ends != Py_None && PySequence_Size(ends) != count) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ends must hold one flag a text");
        goto done;
    }
    for (Py_ssize_t k = 0; k < count; k++) {
        if (view_of(PyTuple_GET_ITEM(items, k), &views[k])) goto done;
        marks[k] = eot >= 0;
        if (eot >= 0 && ends != Py_None) {
            PyObject *flag = PySequence_GetItem(ends, k);
            int truth = flag ? PyObject_IsTrue(flag) : -1;
            Py_XDECREF(flag);
            if (truth < 0) goto done;
            marks[k] = (char)truth;
        }
    }
    lock_encoder(e);
    if (joined == 2 && !e->out) { /* handed over last time: room for the batch's ids at once */
        size_t room = HOT_IDS; /* the bytes of the texts' characters as the str holds them: about as many ids as the UTF-8 at most */
        for (Py_ssize_t k = 0; k < count; k++) room += (size_t)views[k].len * (size_t)views[k].kind + (size_t)marks[k];
        if (room >= KEPT_LEAST) keep_freed_lists(); /* the next batch's room is this one's memory */
        if (kept_ids && kept_count / 2 <= room) e->out = kept(kept_count, &e->out_cap); /* no more than twice the room */
        else if (reserve((void **)&e->out, &e->out_cap, room, sizeof(uint32_t), 0)) {
            release_encoder(e);
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    e->out_len = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        offsets[k] = e->out_len;
        if ((err = encode_str(e, &views[k]))) {
            failed = k;
            break;
        }
        if (marks[k]) {
            if ((err = reserve((void **)&e->out, &e->out_cap, e->out_len + 1, sizeof(uint32_t), e->out_len))) break;
            e->out[e->out_len++] = (uint32_t)eot;
        }
    }
    offsets[count] = e->out_len;
    if (!err && width) fits = !pack_out(e, width);
    Py_END_ALLOW_THREADS
    if (err || !fits) {
        encode_error(failed >= 0 ? PyTuple_GET_ITEM(items, failed) : Py_None, err, fits);
    } else if (joined == 2) { /* the ends of the texts' ids after them, as native sizes */
        out = Py_BuildValue("(NN)", take_out(e),
                            PyBytes_FromStringAndSize((const char *)(offsets + 1), (Py_ssize_t)(count * sizeof(size_t))));
    } else if (joined) {
        out = PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)(e->out_len * (size_t)width));
    } else if (!width) {
        out = ids_lists(e, offsets, count);
    } else if ((out = PyList_New(count))) {
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *ids = PyBytes_FromStringAndSize((const char *)e->out + offsets[k] * (size_t)width,
                                                      (Py_ssize_t)((offsets[k + 1] - offsets[k]) * (size_t)width));
            if (!ids) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, k, ids);
        }
    }
    release_encoder(e);
done:
    PyMem_Free(views);
    PyMem_Free(offsets);
    PyMem_Free(marks);
    Py_DECREF(items);
    return out;
}

/* encode(text: str) -> list[int] */
static PyObject *Encoder_encode(Encoder *e, PyObject *text) {
    return encode_as(e, text, 0, 0, PY_SSIZE_T_MAX);
}

/* encode_packed(text: str, width: int, start: int = 0, end: int = len(text)) -> bytes: of
 * text[start:end] (start and end not negative), with no slice made. */
static PyObject *Encoder_encode_packed(Encoder *e, PyObject *args) {
    PyObject *text;
    int width;
    Py_ssize_t start = 0, end = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "Ui|nn", &text, &width, &start, &end)) return NULL;
    if (width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 2 or 4 bytes");
        return NULL;
    }
    return encode_as(e, text, width, start, end);
}

/* encode_into(text: str, start: int, end: int, first: bool) -> int: the ids of
 * text[start:end] kept in the Encoder after those it holds (after none when first), and how
 * many: a long text's pieces, each thread's in its own Encoder until fill puts them in the
 * text's ids. Made bytes a piece at a time instead, with the GIL, they were a copy in
 * memory new to the process in a second call too (a worker thread's heap: 500-600 pages
 * faulted in for en-mix-6m in two threads). Kept ids of over 32 MB go at fill. */
static PyObject *Encoder_encode_into(Encoder *e, PyObject *args) {
    PyObject *text;
    Py_ssize_t start, end;
    int first;
    if (!PyArg_ParseTuple(args, "Unnp", &text, &start, &end, &first)) return NULL;
    StrView v;
    if (view_of(text, &v)) return NULL;
    /* room at the first piece for the whole text's ids, as encode_as reserves it: a thread
     * may take any share of the pieces, and its buffer grown in a later call is new memory */
    size_t room = (size_t)v.len * (size_t)v.kind + HOT_IDS;
    end = end < 0 ? 0 : end < v.len ? end : v.len;
    start = start < 0 ? 0 : start < end ? start : end;
    v.data = (const uint8_t *)v.data + start * v.kind;
    v.len = end - start;
    int err = 0;
    size_t before;
    lock_encoder(e);
    Py_BEGIN_ALLOW_THREADS
    if (first) {
        e->out_len = 0;
        err = reserve((void **)&e->out, &e->out_cap, room < KEPT_BYTES / sizeof(uint32_t) ? room : KEPT_BYTES / sizeof(uint32_t), sizeof(uint32_t), 0);
    }
    before = e->out_len;
    if (!err) err = encode_str(e, &v);
    Py_END_ALLOW_THREADS
    size_t n = e->out_len - before;
    if (err) {
        e->out_len = before;
        encode_error(text, err, 1);
    }
    shrink((void **)&e->utf8, &e->utf8_cap, 1);
    shrink((void **)&e->work, &e->work_cap, sizeof(uint32_t));
    PyThread_release_lock(e->lock);
    return err ? NULL : PyLong_FromSize_t(n);
}

/* cut(text, start, at) -> int: the last place in text[start:at] where it may be cut, encoded
 * up to there and from there apart with the same ids, by chunk_cut's rules within the last
 * CUT_BYTES of UTF-8 before at; 0 if there is none there. A long text's pieces for threads
 * are cut as they are taken (Tokenizer._long_ids): PreTokenizer.safe_cut, in Python, took
 * 0.1-0.15 ms a cut on Chinese text, chunk_cut takes microseconds. */
static PyObject *Encoder_cut(Encoder *e, PyObject *args) {
    PyObject *text;
    Py_ssize_t start, at;
    if (!PyArg_ParseTuple(args, "Unn", &text, &start, &at)) return NULL;
    StrView v;
    if (view_of(text, &v)) return NULL;
    at = at < 0 ? 0 : at < v.len ? at : v.len;
    start = start < 0 ? 0 : start < at ? start : at;
    size_t reach = e->nspecials ? (size_t)e->specials[0].len : 1;
    Py_ssize_t from = at - CUT_BYTES / 4 > start ? at - CUT_BYTES / 4 : start; /* CUT_BYTES of UTF-8 at most */
    uint8_t utf8[CUT_BYTES + PAD];
    int surrogates = 0;
    size_t len = (size_t)utf8_encode((const uint8_t *)v.data + from * v.kind, v.kind, at - from, utf8, &surrogates);
    if (surrogates) return PyLong_FromLong(0);
    /* Bytes before the window's start may begin a special token: none is cut across within
     * reach of it (chunk_cut looks from fresh less reach on). */
    size_t cut = chunk_cut(e, utf8, from > start ? 2 * reach : 0, len);
    if (!cut) return PyLong_FromLong(0);
    Py_ssize_t chars = 0;
    for (size_t i = 0; i < cut; i++) chars += (utf8[i] & 0xC0) != 0x80;
    return PyLong_FromSsize_t(from + chars);
}

/* fill(out: list[int] | PackedIds, spans: list[tuple[int, int, int]]) -> None: for each span
 * (at, offset, count), the count ids encode_into kept from offset on put in the room of out
 * from at on, a list from Vocab.unfilled() or ids from unfilled_ids(), without the GIL: each
 * thread puts its own pieces in the long text's ids, and the Encoder's buffer, kept between
 * calls, is the only copy. */
static PyObject *Encoder_fill(Encoder *e, PyObject *args) {
    PyObject *out, *list;
    if (!PyArg_ParseTuple(args, "OO!", &out, &PyList_Type, &list)) return NULL;
    int packed = Py_IS_TYPE(out, &PackedIdsType);
    if (!packed && !PyList_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "fill() puts ids in a list from Vocab.unfilled() or in unfilled_ids()");
        return NULL;
    }
    Py_ssize_t nspans = PyList_GET_SIZE(list), room = packed ? ((PackedIds *)out)->n : ((PyListObject *)out)->allocated;
    Py_ssize_t *spans = PyMem_New(Py_ssize_t, 3 * (size_t)nspans + 1);
    if (!spans) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < nspans; k++) {
        PyObject *span = PyList_GET_ITEM(list, k);
        if (!PyTuple_Check(span) || !PyArg_ParseTuple(span, "nnn", &spans[3 * k], &spans[3 * k + 1], &spans[3 * k + 2])) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a span is a tuple (at, offset, count)");
            PyMem_Free(spans);
            return NULL;
        }
    }
    lock_encoder(e);
    int fits = packed ? ((PackedIds *)out)->width == 4 : !PyList_GET_SIZE(out);
    Py_ssize_t lo = room, hi = 0; /* the room the spans fill: one thread's pieces lie together */
    for (Py_ssize_t k = 0; fits && k < nspans; k++) {
        Py_ssize_t at = spans[3 * k], offset = spans[3 * k + 1], count = spans[3 * k + 2];
        fits = at >= 0 && at <= room && count >= 0 && count <= room - at && offset >= 0 && (size_t)offset <= e->out_len &&
               (size_t)count <= e->out_len - (size_t)offset;
        if (!fits) break;
        lo = at < lo ? at : lo;
        hi = at + count > hi ? at + count : hi;
    }
    if (fits) {
        Py_BEGIN_ALLOW_THREADS
        if (packed) {
            uint32_t *ids = ((PackedIds *)out)->ids;
            if (hi > lo) populate(ids + lo, (size_t)(hi - lo) * sizeof(uint32_t)); /* each thread its own part's pages */
            for (Py_ssize_t k = 0; k < nspans; k++) {
                uint32_t *to = ids + spans[3 * k];
                const uint32_t *from = e->out + spans[3 * k + 1];
                size_t count = (size_t)spans[3 * k + 2];
                if (pt_little_endian()) memcpy(to, from, count * sizeof(uint32_t));
                else
                    for (size_t i = 0; i < count; i++) put_le32((uint8_t *)(to + i), from[i]);
            }
        } else {
            PyObject **items = ((PyListObject *)out)->ob_item;
            if (hi > lo) populate(items + lo, (size_t)(hi - lo) * sizeof(PyObject *));
            for (Py_ssize_t k = 0; k < nspans; k++)
                list_fill(e->vocab->id_objects, items + spans[3 * k], (const uint8_t *)(e->out + spans[3 * k + 1]), (size_t)spans[3 * k + 2], 0, 0);
        }
        Py_END_ALLOW_THREADS
    } else {
        PyErr_SetString(PyExc_IndexError, "the ids are not all kept, or do not fit in out there");
    }
    release_encoder(e);
    PyMem_Free(spans);
    return fits ? Py_NewRef(Py_None) : NULL;
}

/* encode_many(texts: Sequence[str], width: int = 0) -> list[list[int]] | list[bytes] */
static PyObject *Encoder_encode_many(Encoder *e, PyObject *args) {
    PyObject *texts;
    int width = 0;
    if (!PyArg_ParseTuple(args, "O|i", &texts, &width)) return NULL;
    if (width != 0 && width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 0 (lists of ints), 2 or 4 bytes");
        return NULL;
    }
    return encode_many_as(e, texts, width, 0, -1, Py_None);
}

/* encode_ends(texts: Sequence[str]) -> tuple[bytes, bytes]: the ids of the texts packed as
 * 4-byte ints, one after the other, and where each text's end (native sizes): for a worker
 * thread, whose allocations come from memory of its own that is new to the process (glibc
 * gives each thread its arena), to hand to the calling thread, which makes the lists. */
static PyObject *Encoder_encode_ends(Encoder *e, PyObject *texts) {
    return encode_many_as(e, texts, 4, 2, -1, Py_None);
}

/* encode_packed_many(texts: Sequence[str], width: int, eot: int = -1, ends: Sequence[bool] | None = None) -> bytes */
static PyObject *Encoder_encode_packed_many(Encoder *e, PyObject *args) {
    PyObject *texts, *ends = Py_None;
    int width;
    long eot = -1;
    if (!PyArg_ParseTuple(args, "Oi|lO", &texts, &width, &eot, &ends)) return NULL;
    if (width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 2 or 4 bytes");
        return NULL;
    }
    if (eot > 0x10FFFF) {
        PyErr_SetString(PyExc_ValueError, "eot must be a token id");
        return NULL;
    }
    return encode_many_as(e, texts, width, 1, eot, ends);
}

/* encode_utf8(data, width, eot) -> bytes | None: the ids of data, a plain text's UTF-8 bytes
 * (a block of a file, cut where a pre-token always starts), packed as encode_packed_many
 * packs them, eot (if not negative) after them; None, encoding nothing, if data is not valid
 * UTF-8 (the caller decodes it, naming or replacing what is wrong). No str is made: a file's
 * text was decoded, cut again in Python and made UTF-8 once more, a third of the time of a
 * text file's ids in one thread and all of it in the calling thread. The GIL is released
 * while checking and encoding. */
static PyObject *Encoder_encode_utf8(Encoder *e, PyObject *args) {
    Py_buffer data;
    int width;
    long eot;
    if (!PyArg_ParseTuple(args, "y*il:encode_utf8", &data, &width, &eot)) return NULL;
    PyObject *out = NULL;
    if (width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 2 or 4 bytes");
        goto done;
    }
    if (eot > 0x10FFFF) {
        PyErr_SetString(PyExc_ValueError, "eot must be a token id");
        goto done;
    }
    const uint8_t *s = data.buf;
    size_t len = (size_t)data.len;
    int err = 0, fits = 1, valid;
    lock_encoder(e);
    Py_BEGIN_ALLOW_THREADS
    e->out_len = 0;
    valid = jsonl_valid_utf8(s, len);
    if (valid && len && !readable_past(s + len)) { /* the PAD bytes after it could be another mapping's */
        err = reserve((void **)&e->utf8, &e->utf8_cap, len + PAD, 1, 0);
        if (!err) {
            memcpy(e->utf8, s, len);
            memset(e->utf8 + len, 0, PAD);
            s = e->utf8;
        }
    }
    if (valid && !err) err = encode_text(e, s, (ptrdiff_t)len);
    if (valid && !err && eot >= 0 && !(err = reserve((void **)&e->out, &e->out_cap, e->out_len + 1, sizeof(uint32_t), e->out_len)))
        e->out[e->out_len++] = (uint32_t)eot;
    if (valid && !err) fits = !pack_out(e, width);
    Py_END_ALLOW_THREADS
    if (err || !fits) encode_error(Py_None, err, fits);
    else if (!valid) out = Py_NewRef(Py_None);
    else out = PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)(e->out_len * (size_t)width));
    release_encoder(e);
done:
    PyBuffer_Release(&data);
    return out;
}

/* encode_jsonl(data, at, field, width, eot) -> (bytes, stop, lines, documents): the ids of
 * the documents of the JSONL lines of data from byte at, each the string of its field (UTF-8
 * bytes) read straight from the line (engine/corpus/_jsonl.h), packed as encode_packed_many
 * packs them, eot (if not negative) after each; up to the first line _jsonl.h leaves to the
 * caller. stop is where that line starts (len(data) if none), lines how many came before it
 * (blank ones too), documents how many of them had a text. No str is made, decoded or
 * encoded again; the GIL is released while reading and encoding. */
static PyObject *Encoder_encode_jsonl(Encoder *e, PyObject *args) {
    Py_buffer data;
    Py_ssize_t at;
    const char *field;
    Py_ssize_t field_len;
    int width;
    long eot;
    if (!PyArg_ParseTuple(args, "y*ny#il:encode_jsonl", &data, &at, &field, &field_len, &width, &eot)) return NULL;
    PyObject *out = NULL;
    if (width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 2 or 4 bytes");
        goto done;
    }
    if (eot > 0x10FFFF) {
        PyErr_SetString(PyExc_ValueError, "eot must be a token id");
        goto done;
    }
    if (at < 0 || at > data.len) {
        PyErr_SetString(PyExc_ValueError, "at is outside the data");
        goto done;
    }
    const uint8_t *s = data.buf, *end = s + data.len, *line = s + at;
    Py_ssize_t lines = 0, documents = 0;
    int err = 0, fits = 1;
    lock_encoder(e);
    Py_BEGIN_ALLOW_THREADS
    e->out_len = 0;
    /* A line's text is never longer than the line: room for the longest, and PAD after it. */
    err = reserve((void **)&e->utf8, &e->utf8_cap, (size_t)(end - line) + PAD, 1, 0);
    while (!err && line < end) {
        const uint8_t *nl = memchr(line, '\n', (size_t)(end - line)), *stop = nl ? nl : end;
        uint8_t *text_end;
        int kind = jsonl_text(line, stop, (const uint8_t *)field, (size_t)field_len, e->utf8, &text_end);
        if (kind < 0) break;
        if (kind) {
            ptrdiff_t len = text_end - e->utf8;
            memset(text_end, 0, PAD);
            if ((err = encode_text(e, e->utf8, len))) break;
            if (eot >= 0) {
                if ((err = reserve((void **)&e->out, &e->out_cap, e->out_len + 1, sizeof(uint32_t), e->out_len))) break;
                e->out[e->out_len++] = (uint32_t)eot;
            }
            documents++;
        }
        lines++;
        line = nl ? nl + 1 : end;
    }
    if (!err) fits = !pack_out(e, width);
    Py_END_ALLOW_THREADS
    if (err || !fits) encode_error(Py_None, err, fits);
    else out = Py_BuildValue("(Nnnn)", PyBytes_FromStringAndSize((const char *)e->out, (Py_ssize_t)(e->out_len * (size_t)width)), (Py_ssize_t)(line - s), lines, documents);
    release_encoder(e);
done:
    PyBuffer_Release(&data);
    return out;
}

/* join_ends(parts: Sequence[tuple[Buffer, bytes]], filled=None) -> tuple[PackedIds, bytes]:
 * parts of the ids of texts, each as Encoder.encode_ends gives them (packed ids, and where in
 * them each text ends, native sizes; a part may end no text, its ids then going on into the
 * next part's), joined: all the ids, and the offsets of the texts' ids in them, int64, from a
 * first 0 (text k's ids are those from offsets[k] to offsets[k + 1]). A part that is all
 * is given back as it is, not copied; filled, the parts' ids that threads copied into room
 * from unfilled_ids(), is given back as their ids. ValueError for ends out of order. */
static PyObject *join_ends(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *arg, *filled = NULL, *ids = NULL, *offsets = NULL;
    if (!PyArg_ParseTuple(args, "O|O!", &arg, &PackedIdsType, &filled)) return NULL;
    PyObject *parts = PySequence_Fast(arg, "join_ends() takes a sequence of (ids, ends)");
    if (!parts) return NULL;
    Py_ssize_t nparts = PySequence_Fast_GET_SIZE(parts), count = 0, held = 0;
    Py_buffer *views = PyMem_New(Py_buffer, nparts + 1);
    size_t total = 0;
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    for (; held < nparts; held++) {
        PyObject *part = PySequence_Fast_GET_ITEM(parts, held);
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(part, 1))) {
            PyErr_SetString(PyExc_TypeError, "a part is a tuple (ids, ends: bytes)");
            goto done;
        }
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(part, 0), &views[held], PyBUF_SIMPLE)) goto done;
        if (views[held].len % 4 || PyBytes_GET_SIZE(PyTuple_GET_ITEM(part, 1)) % (Py_ssize_t)sizeof(size_t)) {
            held++;
            PyErr_SetString(PyExc_ValueError, "packed ids are 4 bytes each, ends a size each");
            goto done;
        }
        total += (size_t)views[held].len / 4;
        count += PyBytes_GET_SIZE(PyTuple_GET_ITEM(part, 1)) / (Py_ssize_t)sizeof(size_t);
    }
    if (!(offsets = PyBytes_FromStringAndSize(NULL, (count + 1) * (Py_ssize_t)sizeof(int64_t)))) goto done;
    int64_t *at = (int64_t *)PyBytes_AS_STRING(offsets);
    *at++ = 0;
    size_t base = 0;
    for (Py_ssize_t i = 0; i < nparts; i++) {
        PyObject *ends = PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(parts, i), 1);
        size_t n = (size_t)views[i].len / 4, last = base;
        for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(ends) / (Py_ssize_t)sizeof(size_t); k++) {
            size_t end;
            memcpy(&end, PyBytes_AS_STRING(ends) + k * sizeof(size_t), sizeof end);
            if (end > n || base + end < last) {
                PyErr_SetString(PyExc_ValueError, "the ends are out of order");
                Py_CLEAR(offsets);
                goto done;
            }
            *at++ = (int64_t)(last = base + end);
        }
        base += n;
    }
    PyObject *first = nparts ? PyTuple_GET_ITEM(PySequence_Fast_GET_ITEM(parts, 0), 0) : NULL;
    if (filled) {
        if ((size_t)((PackedIds *)filled)->n != total) {
            PyErr_SetString(PyExc_ValueError, "the filled ids are not the parts' ids");
            goto done;
        }
        ids = Py_NewRef(filled);
    } else if (nparts == 1 && Py_IS_TYPE(first, &PackedIdsType)) {
        ids = Py_NewRef(first);
    } else {
        uint32_t *joined = total ? ids_room(total, 1) : NULL;
        if (total && !joined) goto done;
        for (Py_ssize_t i = 0, to = 0; i < nparts; to += views[i++].len / 4)
            if (views[i].len) memcpy(joined + to, views[i].buf, (size_t)views[i].len);
        ids = packed_ids(joined, total);
    }
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    Py_DECREF(parts);
    if (!ids || !offsets) {
        Py_XDECREF(ids);
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(NN)", ids, offsets);
}

/* unfilled_ids(n) -> PackedIds: room for n ids not yet put, for a batch's ids that threads
 * copy in together (fill_ids), each faulting in its own part's pages; join_ends(parts, it)
 * then takes it as the parts' ids. Until filled, its ids are whatever the memory held. */
static PyObject *unfilled_ids(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a count of ids is not negative");
        return NULL;
    }
    if ((size_t)n > PY_SSIZE_T_MAX / 4) return PyErr_NoMemory();
    uint32_t *ids = n ? ids_room((size_t)n, 0) : NULL;
    return n && !ids ? NULL : packed_ids(ids, (size_t)n);
}

/* join_packed(parts, width, room) -> PackedIds: the buffers an iterable gives, ids packed
 * width (2 or 4) bytes each, joined as they come, each let go once copied, into memory of
 * their own: the memory of the last large ids freed (kept_ids) if it holds the first part, so
 * a dataset's ids made again as the last were freed fault in no new pages; else room bytes
 * (a guess at them all: memory never written is never faulted in) or a megabyte. Grown by
 * realloc: a block past glibc's mmap threshold is mapped of its own, and moved without a
 * copy. b"".join held every part and then made their copy: twice the ids, all of it memory
 * new to the process; and a room grown by doubling on the heap was moved, copied, twice. Room
 * for an eighth more is kept (take_out). */
#define JOIN_LEAST ((size_t)1 << 20) /* bytes: the least first room */
static PyObject *join_packed(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *parts;
    int width;
    Py_ssize_t hint;
    if (!PyArg_ParseTuple(args, "Oin:join_packed", &parts, &width, &hint)) return NULL;
    if (width != 2 && width != 4) {
        PyErr_SetString(PyExc_ValueError, "width must be 2 or 4 bytes");
        return NULL;
    }
    PyObject *it = PyObject_GetIter(parts), *part;
    if (!it) return NULL;
    uint8_t *buf = NULL;
    size_t used = 0, room = 0; /* bytes */
    while ((part = PyIter_Next(it))) {
        Py_buffer v;
        int err = PyObject_GetBuffer(part, &v, PyBUF_SIMPLE);
        Py_DECREF(part);
        if (err) break;
        size_t need = used + (size_t)v.len;
        if (need > room && !buf && kept_ids && 4 * kept_count >= need) {
            buf = (uint8_t *)kept_ids;
            room = 4 * kept_count;
            kept_ids = NULL;
        } else if (need > room) {
            size_t grown = buf ? 2 * room : hint > (Py_ssize_t)JOIN_LEAST ? (size_t)hint : JOIN_LEAST;
            grown = (grown > need ? grown : need + 3) & ~(size_t)3;
            uint8_t *p = PyMem_RawRealloc(buf, grown);
            if (!p) {
                PyBuffer_Release(&v);
                PyErr_NoMemory();
                break;
            }
            buf = p;
            room = grown;
        }
        if (v.len) memcpy(buf + used, v.buf, (size_t)v.len);
        used = need;
        PyBuffer_Release(&v);
    }
    Py_DECREF(it);
    if (!PyErr_Occurred() && used % (size_t)width) PyErr_SetString(PyExc_ValueError, "a part is not whole ids");
    if (PyErr_Occurred()) {
        PyMem_RawFree(buf);
        return NULL;
    }
    size_t fits = (used + used / 8 + 3) & ~(size_t)3;
    uint8_t *fit;
    if (room > fits && fits && (fit = PyMem_RawRealloc(buf, fits))) {
        buf = fit;
        room = fits;
    }
    PyObject *out = packed_ids_in((uint32_t *)buf, used / (size_t)width, room / 4);
    if (out) ((PackedIds *)out)->width = width;
    return out;
}

/* kept_room(n) -> bool: whether the memory of the last large PackedIds freed would hold n ids:
 * join_ends copies into it at memory speed, which two threads copying at once do not pass. */
static PyObject *kept_room(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred()) return NULL;
    return PyBool_FromLong(kept_ids && n >= 0 && kept_count >= (size_t)n && kept_count / 2 <= (size_t)n);
}

/* fill_ids(out, at, parts): copy the ids of parts (buffers of 4-byte ids, one after the other)
 * into out from at on, a PackedIds from unfilled_ids(), without the GIL, so threads fill the
 * parts of one batch together. */
static PyObject *fill_ids(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *out, *parts, *result = NULL;
    Py_ssize_t at, held = 0;
    if (!PyArg_ParseTuple(args, "O!nO!", &PackedIdsType, &out, &at, &PyList_Type, &parts)) return NULL;
    Py_ssize_t nparts = PyList_GET_SIZE(parts);
    size_t total = 0;
    Py_buffer *views = PyMem_New(Py_buffer, nparts + 1);
    if (!views) {
        PyErr_NoMemory();
        goto done;
    }
    for (; held < nparts; held++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(parts, held), &views[held], PyBUF_SIMPLE)) goto done;
        total += (size_t)views[held].len / 4;
        if (views[held].len % 4) {
            held++;
            PyErr_SetString(PyExc_ValueError, "packed ids are 4 bytes each");
            goto done;
        }
    }
    Py_ssize_t room = ((PackedIds *)out)->n;
    if (at < 0 || at > room || total > (size_t)(room - at)) {
        PyErr_SetString(PyExc_IndexError, "the ids do not fit in out there");
        goto done;
    }
    uint8_t *to = (uint8_t *)(((PackedIds *)out)->ids + at);
    Py_BEGIN_ALLOW_THREADS
    populate(to, 4 * total); /* each thread its own part's pages */
    for (Py_ssize_t i = 0; i < nparts; to += views[i++].len)
        if (views[i].len) memcpy(to, views[i].buf, (size_t)views[i].len);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    return result;
}

static PyMethodDef Encoder_methods[] = {
    {"encode", (PyCFunction)Encoder_encode, METH_O, "The token ids of a text, special tokens included."},
    {"encode_packed", (PyCFunction)Encoder_encode_packed, METH_VARARGS,
     "encode()'s ids as the bytes of a little-endian array of 2- or 4-byte unsigned ints."},
    {"cut", (PyCFunction)Encoder_cut, METH_VARARGS,
     "cut(text, start, at) -> int: the last place in text[start:at] where it may be cut without changing its ids, looked for near at; 0 if none is found"},
    {"encode_into", (PyCFunction)Encoder_encode_into, METH_VARARGS,
     "Keep the ids of text[start:end] after those kept (after none when first); how many."},
    {"fill", (PyCFunction)Encoder_fill, METH_VARARGS,
     "Put spans (at, offset, count) of the kept ids in a list from Vocab.unfilled() or in unfilled_ids(), without the GIL."},
    {"encode_many", (PyCFunction)Encoder_encode_many, METH_VARARGS,
     "encode() of each text (width 0), or encode_packed() (width 2 or 4), the GIL released once for all."},
    {"encode_ends", (PyCFunction)Encoder_encode_ends, METH_O,
     "The ids of the texts packed as 4-byte ints, one after the other, and each text's end (native sizes)."},
    {"encode_packed_many", (PyCFunction)Encoder_encode_packed_many, METH_VARARGS,
     "encode_packed() of the texts joined, eot after each text whose flag in ends is true."},
    {"encode_utf8", (PyCFunction)Encoder_encode_utf8, METH_VARARGS,
     "The packed ids of a plain text's UTF-8 bytes, eot after them; None if they are not valid UTF-8."},
    {"encode_jsonl", (PyCFunction)Encoder_encode_jsonl, METH_VARARGS,
     "The packed ids of the documents of JSONL lines from byte at, up to the first line left to the caller."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.encode._encoder_core.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Encodes text with special tokens under a compiled pre-tokenizer, with caches of its own and maybe a shared one.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Encoder_init,
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_methods = Encoder_methods,
};

/* Append the int k to list; -1 with MemoryError. */
static int append_index(PyObject *list, Py_ssize_t k) {
    PyObject *o = PyLong_FromSsize_t(k);
    int err = !o || PyList_Append(list, o);
    Py_XDECREF(o);
    return err ? -1 : 0;
}

/* unit_ends(texts: list | tuple, least, most, parts, text_chars, long_chars) -> list[int] | None:
 * where the units of texts end that Tokenizer._units makes, each unit texts[previous end:end]:
 * texts taken in order until their characters, and text_chars a text, reach unit_chars, a
 * parts-th of all their characters but from least up to most; a text of more than long_chars
 * characters alone in a unit of its own. None where an item is not a str. In C over the
 * lengths: the loop in Python took the calling thread of two 1.2-1.9 ms of a 13 ms batch
 * (en-mix-6m's documents), and the sum of their lengths in Python 0.5-0.6 ms more, time the
 * other thread waited on. */
static PyObject *unit_ends(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *texts;
    Py_ssize_t least, most, parts, text_chars, long_chars;
    if (!PyArg_ParseTuple(args, "Onnnnn", &texts, &least, &most, &parts, &text_chars, &long_chars)) return NULL;
    if (!PyList_Check(texts) && !PyTuple_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "unit_ends() takes a list or tuple");
        return NULL;
    }
    if (parts < 1) {
        PyErr_SetString(PyExc_ValueError, "unit_ends() takes parts of 1 or more");
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(texts), size = 0, taken = 0, unit_chars = least, total = 0;
    PyObject **items = PySequence_Fast_ITEMS(texts), *ends = NULL;
    /* Each str read once, its length kept: the second pass read them all again, 0.1-0.2 ms
     * of en-mix-6m's 15,555 documents out of the processor's caches. */
    Py_ssize_t *lengths = PyMem_New(Py_ssize_t, count + 1);
    if (!lengths) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < count; k++) {
        if (!PyUnicode_Check(items[k])) {
            PyMem_Free(lengths);
            Py_RETURN_NONE;
        }
        if ((lengths[k] = PyUnicode_GetLength(items[k])) < 0) goto done; /* made ready first, before 3.12 */
        total += lengths[k];
    }
    if (most > least) unit_chars = total / parts < least ? least : total / parts > most ? most : total / parts;
    ends = PyList_New(0);
    for (Py_ssize_t k = 0; ends && k < count; k++) {
        Py_ssize_t n = lengths[k];
        int long_text = n > long_chars;
        if (long_text && taken) { /* the unit so far ends before it */
            if (append_index(ends, k)) Py_CLEAR(ends);
            size = taken = 0;
        }
        size += n + text_chars;
        taken++;
        if (ends && (long_text || size >= unit_chars)) {
            if (append_index(ends, k + 1)) Py_CLEAR(ends);
            size = taken = 0;
        }
    }
    if (ends && taken && append_index(ends, count)) Py_CLEAR(ends);
done:
    PyMem_Free(lengths);
    return ends;
}

/* jsonl_field_utf8(line, field) -> bytes | None: the UTF-8 of the string of field in one JSONL line
 * (its newline, if any, left off), read as encode_jsonl reads a line; None for a blank line
 * or one left to Python. A line too long for one thread has its text cut into pieces that the
 * threads encode together. */
static PyObject *jsonl_field_utf8(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer line;
    const char *field;
    Py_ssize_t field_len;
    if (!PyArg_ParseTuple(args, "y*y#:jsonl_field_utf8", &line, &field, &field_len)) return NULL;
    const uint8_t *p = line.buf, *end = p + line.len;
    if (end > p && end[-1] == '\n') end--;
    /* Read into the bytes given back, then cut to the text (a text is never longer than its
     * line): a copy of the text of en-mix-6m's last line was 580 pages new to a first call. */
    PyObject *out = PyBytes_FromStringAndSize(NULL, end - p);
    if (!out) goto done;
    uint8_t *text = (uint8_t *)PyBytes_AS_STRING(out), *text_end = text;
    int kind;
    Py_BEGIN_ALLOW_THREADS
    kind = jsonl_text(p, end, (const uint8_t *)field, (size_t)field_len, text, &text_end);
    Py_END_ALLOW_THREADS
    if (kind != 1) Py_SETREF(out, Py_NewRef(Py_None));
    else _PyBytes_Resize(&out, text_end - text);
done:
    PyBuffer_Release(&line);
    return out;
}

/* utf8_reaches(texts: list | tuple, least) -> bool: whether the UTF-8 of the texts could
 * reach least bytes (each str's length at the most bytes its kind takes a character: an
 * ASCII one's exactly), the measure of the work they are. Stops once it does, so a large
 * batch is read only as far as that; True where an item is not a str, the caller's
 * threaded path then saying what is wrong, as without this. */
static PyObject *utf8_reaches(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "utf8_reaches() takes texts and least");
        return NULL;
    }
    PyObject *texts = args[0];
    Py_ssize_t least = PyNumber_AsSsize_t(args[1], PyExc_OverflowError); /* called once a batch: no tuple of arguments made */
    if (least == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_Check(texts) && !PyTuple_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "utf8_reaches() takes a list or tuple");
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(texts);
    PyObject **items = PySequence_Fast_ITEMS(texts);
    size_t total = 0;
    for (Py_ssize_t k = 0; k < count && total < (size_t)(least > 0 ? least : 0); k++) {
        StrView v;
        if (!PyUnicode_Check(items[k])) Py_RETURN_TRUE;
        if (view_of(items[k], &v)) return NULL;
        total += v.ascii ? (size_t)v.len : utf8_room(v.kind, v.len);
    }
    return PyBool_FromLong(least <= 0 || total >= (size_t)least);
}

static PyMethodDef module_methods[] = {
    {"join_ends", join_ends, METH_VARARGS, "Parts of texts' ids from Encoder.encode_ends joined: all the ids, and the texts' offsets in them."},
    {"unfilled_ids", unfilled_ids, METH_O, "Room for n ids, for threads to copy a batch's parts into (fill_ids)."},
    {"join_packed", join_packed, METH_VARARGS, "Buffers of packed ids joined as they come, in memory of their own."},
    {"kept_room", kept_room, METH_O, "Whether the memory of the last large ids freed would hold n ids."},
    {"fill_ids", fill_ids, METH_VARARGS, "Copy parts' ids into room from unfilled_ids() from at on, without the GIL."},
    {"unit_ends", unit_ends, METH_VARARGS, "Where the units of a list or tuple of texts for the encoding threads end."},
    {"jsonl_field_utf8", jsonl_field_utf8, METH_VARARGS, "The UTF-8 of the string of a field in one JSONL line; None for a blank line or one left to Python."},
    {"utf8_reaches", (PyCFunction)(void (*)(void))utf8_reaches, METH_FASTCALL, "Whether the UTF-8 of a list or tuple of texts could reach least bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.encode._encoder_core", "The encoder's compiled merge loop.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__encoder_core(void) {
    if (PyType_Ready(&MergeRanksType) < 0 || PyType_Ready(&VocabType) < 0 || PyType_Ready(&SharedCacheType) < 0 ||
        PyType_Ready(&EncoderType) < 0 || PyType_Ready(&PackedIdsType) < 0)
        return NULL;
    pretokenize_tables_init();
    short_keys_init();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddType(m, &MergeRanksType) || PyModule_AddType(m, &VocabType) || PyModule_AddType(m, &SharedCacheType) ||
        PyModule_AddType(m, &EncoderType) || PyModule_AddType(m, &PackedIdsType) || PyModule_AddIntConstant(m, "CHUNK_CHARS", CHUNK_CHARS)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
