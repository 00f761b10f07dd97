/* engine.corpus._tally: the pre-token counts of a corpus, kept in C as it is read.
 *
 * A Tally holds each distinct pre-token once, as UTF-8 bytes, in the layout a WordTable has
 * (engine/corpus/word_table.py): the words one after another in the order first seen, where
 * each ends, and each one's count; and an open-addressing index over them. add(text) runs
 * the compiled pre-tokenizer (engine/corpus/_pretokenize_core.h) over the text and counts
 * every pre-token; no Python object is made per pre-token, so a distinct pre-token costs its
 * bytes plus 32, and a text of a few hundred bytes costs a scan and a few probes. A long text
 * is counted with the GIL released.
 *
 * With family -1 (a pattern that runs through `regex`), add(text) counts the text as one
 * pre-token; the caller splits it first.
 *
 * add_jsonl(data, at, field, specials) counts the documents of JSONL lines straight from their
 * bytes (engine/corpus/_jsonl.h), up to the first line it leaves to the caller; add_utf8(data,
 * specials) counts a plain text from its bytes, unless they are not valid UTF-8.
 *
 * Parallel counters each keep a part of the pre-tokens (engine/corpus/tally_parts.py):
 * route(fds, own) keeps the tally's own part and sends every other pre-token to the counter
 * that owns it (engine/corpus/_outbox.h); gather(words, ends, counts) appends what the others
 * sent, and write_sorted sums a pre-token's copies once they sit side by side.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_bits.h"
#include "_bytes_hash.h"
#include "_jsonl.h"
#include "_outbox.h"
#include "_pretokenize_core.h"

#define EMPTY_SLOT UINT64_MAX
#define RELEASE_GIL_BYTES (1 << 16) /* below it, releasing the GIL costs more than it frees */
#define BATCH 256                   /* pre-token ends found per call of the scanner */
#define AHEAD 16                    /* how far ahead a walk in sorted order asks for what it reads */


typedef struct {
    PyObject_HEAD
    int family;      /* a PATTERN_ number, or -1: each text is one pre-token */
    int busy;        /* a call is counting with the GIL released: no other may start */
    int spent;       /* written out by write_sorted, its index let go: it counts no more */
    int gathered;    /* tables were gathered (see gather), its index let go: it counts no more */
    uint8_t *words;  /* the distinct pre-tokens' bytes, in the order first seen */
    size_t words_len, words_cap;
    int64_t *ends;   /* where each ends in words */
    int64_t *counts; /* how often each was seen */
    size_t n, cap;   /* distinct pre-tokens; room in ends and counts */
    int64_t seen;    /* pre-tokens counted, each as often as seen */
    uint64_t *index; /* a slot: the hash's high 32 bits, then the pre-token's number; or EMPTY_SLOT */
    size_t mask;     /* slots - 1; kept at most half full */
    uint8_t *text;   /* room for a text's UTF-8 (add) or a JSONL line's (add_jsonl), kept from call to call */
    size_t text_cap;
    Outbox *out;     /* routed (see route): an outbox for every part but own; else NULL */
    size_t parts, own;
} Tally;

static inline size_t word_start(const Tally *t, size_t k) { return k ? (size_t)t->ends[k - 1] : 0; }

/* The part of a pre-token of hash h among k (see route): the same in every tally. Its low 32
 * bits scaled to k, not taken modulo k: no division, once a pre-token. */
static inline size_t part_of(uint64_t h, size_t k) { return (size_t)(((h & 0xFFFFFFFFu) * (uint64_t)k) >> 32); }

/* The k-th int64 of an array that may not be aligned (a table from a buffer or a file). */
static inline int64_t read64(const char *p, size_t k) {
    int64_t v;
    memcpy(&v, p + 8 * k, 8);
    return v;
}

/* Double the index and put every pre-token back by the hash bits its slot keeps. */
static int grow_index(Tally *t) {
    size_t mask = t->mask * 2 + 1;
    uint64_t *index = malloc((mask + 1) * sizeof *index);
    if (!index) return -1;
    memset(index, 0xff, (mask + 1) * sizeof *index);
    for (size_t s = 0; s <= t->mask; s++) {
        uint64_t v = t->index[s];
        if (v == EMPTY_SLOT) continue;
        size_t slot = (size_t)(v >> 32) & mask;
        while (index[slot] != EMPTY_SLOT) slot = (slot + 1) & mask;
        index[slot] = v;
    }
    free(t->index);
    t->index = index;
    t->mask = mask;
    return 0;
}

/* Room for the words to reach need bytes, and for count pre-tokens: -1 when out of memory. */
static int make_room(Tally *t, size_t need, size_t count) {
    if (need > t->words_cap) {
        size_t cap = t->words_cap ? t->words_cap : 4096;
        while (cap < need) cap *= 2;
        uint8_t *words = realloc(t->words, cap);
        if (!words) return -1;
        t->words = words;
        t->words_cap = cap;
    }
    if (count > t->cap) {
        size_t cap = t->cap ? t->cap : 512;
        while (cap < count) cap *= 2;
        int64_t *ends = realloc(t->ends, cap * sizeof *ends);
        if (!ends) return -1;
        t->ends = ends; /* larger than cap says until counts grows too: harmless */
        int64_t *counts = realloc(t->counts, cap * sizeof *counts);
        if (!counts) return -1;
        t->counts = counts;
        t->cap = cap;
    }
    return 0;
}

/* Count one pre-token, s[0..len) of hash h, seen once more: -1 when out of memory (nothing
 * changed then). */
static int count_one(Tally *t, const uint8_t *s, size_t len, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32);
    size_t slot = tag & t->mask;
    for (uint64_t v; (v = t->index[slot]) != EMPTY_SLOT; slot = (slot + 1) & t->mask) {
        if ((uint32_t)(v >> 32) != tag) continue;
        size_t k = (uint32_t)v, start = word_start(t, k);
        if ((size_t)t->ends[k] - start == len && memcmp(t->words + start, s, len) == 0) {
            t->counts[k]++;
            return 0;
        }
    }
    if (t->n >= UINT32_MAX || make_room(t, t->words_len + len, t->n + 1) < 0) return -1; /* a slot holds the number in 32 bits */
    if (2 * (t->n + 1) > t->mask) { /* grown before it fills, or nothing is added: probes always end */
        if (grow_index(t) < 0) return -1;
        for (slot = tag & t->mask; t->index[slot] != EMPTY_SLOT; slot = (slot + 1) & t->mask) {
        }
    }
    memcpy(t->words + t->words_len, s, len);
    t->words_len += len;
    t->ends[t->n] = (int64_t)t->words_len;
    t->counts[t->n] = 1;
    t->index[slot] = (uint64_t)tag << 32 | t->n;
    t->n++;
    return 0;
}

/* The pre-token its slot's tag first names along the probe of hash h, or -1 if none. */
static inline int64_t tagged(const Tally *t, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t slot = tag & t->mask;; slot = (slot + 1) & t->mask) {
        uint64_t v = t->index[slot];
        if (v == EMPTY_SLOT) return -1;
        if ((uint32_t)(v >> 32) == tag) return (uint32_t)v;
    }
}

/* Count the got pre-tokens of s ending at ends[], each starting at starts[k] or, without
 * starts, where the one before ended (the first at start), of hash hashes[k] (or hashed
 * here): -1 when out of memory. A pre-token seen before costs three reads that miss the
 * cache in a large tally (its slot, its end and count, its bytes), each waiting on the one
 * before; so each is asked for across the batch (PREFETCH) before any is used. A pre-token
 * whose tagged candidate is not it (new, or a tag shared by chance) is then looked up in
 * full. */
static inline int count_batch(Tally *t, const uint8_t *s, ptrdiff_t start, const ptrdiff_t *starts, const ptrdiff_t *ends,
                                const uint64_t *hashes, ptrdiff_t got) {
    uint64_t hash[BATCH];
    int64_t candidate[BATCH];
    for (ptrdiff_t k = 0, at = start; k < got; at = ends[k++]) {
        if (starts) at = starts[k];
        hash[k] = hashes ? hashes[k] : bytes_hash(s + at, (size_t)(ends[k] - at));
        PREFETCH(&t->index[(hash[k] >> 32) & t->mask]);
    }
    for (ptrdiff_t k = 0; k < got; k++) {
        candidate[k] = tagged(t, hash[k]);
        if (candidate[k] > 0) PREFETCH(&t->ends[candidate[k] - 1]);
        if (candidate[k] >= 0) PREFETCH(&t->counts[candidate[k]]);
    }
    for (ptrdiff_t k = 0; k < got; k++)
        if (candidate[k] >= 0) PREFETCH(t->words + word_start(t, (size_t)candidate[k]));
    for (ptrdiff_t k = 0, at = start; k < got; at = ends[k++]) {
        if (starts) at = starts[k];
        size_t len = (size_t)(ends[k] - at), c = (size_t)candidate[k];
        if (candidate[k] >= 0 && (size_t)t->ends[c] - word_start(t, c) == len && memcmp(t->words + word_start(t, c), s + at, len) == 0)
            t->counts[c]++;
        else if (count_one(t, s + at, len, hash[k]) < 0)
            return -1;
    }
    t->seen += got;
    return 0;
}

/* count_batch's pre-tokens, routed (see route): each of another part counted in its outbox,
 * the rest by count_batch. Split without a branch on the part, which no predictor could guess. */
static int count_routed(Tally *t, const uint8_t *s, ptrdiff_t start, const ptrdiff_t *ends, ptrdiff_t got) {
    uint64_t hash[BATCH], away_hash[BATCH];
    ptrdiff_t own_starts[BATCH], own_ends[BATCH], kept = 0, away[BATCH], sent = 0;
    for (ptrdiff_t k = 0, at = start; k < got; at = ends[k++]) {
        uint64_t h = bytes_hash(s + at, (size_t)(ends[k] - at));
        int foreign = part_of(h, t->parts) != t->own;
        hash[kept] = h, own_starts[kept] = at, own_ends[kept] = ends[k], away[sent] = k, away_hash[sent] = h;
        kept += !foreign, sent += foreign;
        PREFETCH(foreign ? (const void *)outbox_slot(&t->out[part_of(h, t->parts)], h) : (const void *)&t->index[(h >> 32) & t->mask]);
    }
    for (ptrdiff_t j = 0; j < sent; j++) {
        ptrdiff_t k = away[j], at = k ? ends[k - 1] : start;
        outbox_add(&t->out[part_of(away_hash[j], t->parts)], s + at, (size_t)(ends[k] - at), away_hash[j]);
    }
    t->seen += sent;
    return count_batch(t, s, 0, own_starts, own_ends, hash, kept);
}

/* Count pre-tokens as count_batch does, routed if the tally is. */
static inline int count_pretokens(Tally *t, const uint8_t *s, ptrdiff_t start, const ptrdiff_t *ends, ptrdiff_t got) {
    return t->out ? count_routed(t, s, start, ends, got) : count_batch(t, s, start, NULL, ends, NULL, got);
}

/* Count the pre-tokens of the UTF-8 text s[0..len): -1 when out of memory. */
static int count_text(Tally *t, const uint8_t *s, ptrdiff_t len) {
    ptrdiff_t ends[BATCH], got, start = 0;
    if (t->family < 0) return len ? count_pretokens(t, s, 0, &len, 1) : 0;
    while ((got = pretoken_ends(s, len, start, t->family, ends, BATCH)) > 0) {
        if (count_pretokens(t, s, start, ends, got) < 0) return -1;
        start = ends[got - 1];
    }
    return 0;
}

/* The tally's room for a text of need bytes, grown if it must be: NULL when out of memory.
 * Kept from call to call: a block of text a new buffer would be mapped and faulted in anew
 * each time (2 MB blocks past glibc's mmap threshold, see engine.corpus.shards). */
static uint8_t *text_room(Tally *t, size_t need) {
    if (need > t->text_cap) {
        uint8_t *room = realloc(t->text, need);
        if (!room) return NULL;
        t->text = room;
        t->text_cap = need;
    }
    return t->text;
}

static int add_text(Tally *t, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "a text must be str, not %.100s", Py_TYPE(text)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return -1; /* legacy (wstr) strings; 3.12 has none left */
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text), surrogates = 0;
    const uint8_t *s = PyUnicode_DATA(text);
    ptrdiff_t len = n;
    if (!PyUnicode_IS_ASCII(text)) {
        uint8_t *room = text_room(t, utf8_room(kind, n) + 1);
        if (!room) {
            PyErr_NoMemory();
            return -1;
        }
        len = utf8_encode(PyUnicode_DATA(text), kind, n, room, &surrogates);
        s = room;
    }
    if (surrogates) { /* no UTF-8 holds them: str.encode's own error says where */
        PyObject *fails = PyUnicode_AsUTF8String(text);
        Py_XDECREF(fails);
        return -1;
    }
    int rc;
    if (len >= RELEASE_GIL_BYTES) {
        t->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        rc = count_text(t, s, len);
        Py_END_ALLOW_THREADS
        t->busy = 0;
    } else {
        rc = count_text(t, s, len);
    }
    if (rc < 0) PyErr_NoMemory();
    return rc;
}

static int check_free(Tally *t) {
    if (t->spent) {
        PyErr_SetString(PyExc_RuntimeError, "the tally was written out: count on in a new one");
        return -1;
    }
    if (!t->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the tally is counting in another thread");
    return -1;
}

/* check_free, and that it still counts: what gather appended is read by write_sorted alone. */
static int check_counting(Tally *t) {
    if (check_free(t)) return -1;
    if (!t->gathered) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the tally gathered tables: only write_sorted reads it now");
    return -1;
}

static PyObject *Tally_add(Tally *t, PyObject *text) {
    if (check_counting(t) || add_text(t, text)) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Tally_add_all(Tally *t, PyObject *texts) {
    if (check_counting(t)) return NULL;
    PyObject *it = PyObject_GetIter(texts), *text;
    if (!it) return NULL;
    while ((text = PyIter_Next(it))) {
        int rc = add_text(t, text);
        Py_DECREF(text);
        if (rc) break;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* gather(words, ends, counts): append a table (any buffers; ends and counts native int64, not
 * necessarily aligned) as it is, not looked up: a word held already is then held twice, until
 * write_sorted, which finds them side by side once sorted, sums them. Joining the counters'
 * parts this way costs a copy a word, not a probe that misses the cache, and an index as
 * large as all of them. The index is let go: the tally counts no more. */
static PyObject *Tally_gather(Tally *t, PyObject *args) {
    Py_buffer w, e, c;
    if (!PyArg_ParseTuple(args, "y*y*y*:gather", &w, &e, &c)) return NULL;
    PyObject *out = NULL;
    size_t n = (size_t)e.len / 8;
    if (e.len != c.len || e.len % 8) {
        PyErr_SetString(PyExc_ValueError, "ends and counts must be int64 arrays of one length");
        goto done;
    }
    if (check_free(t)) goto done;
    if (t->out) {
        PyErr_SetString(PyExc_RuntimeError, "the tally is routed: send() first");
        goto done;
    }
    int64_t end = 0;
    for (size_t k = 0; k < n && end >= 0; k++) {
        int64_t next = read64(e.buf, k);
        end = next < end || next > (int64_t)w.len ? -1 : next;
    }
    if (end != (int64_t)w.len) {
        PyErr_SetString(PyExc_ValueError, "the table's ends run backwards, past its words, or stop short of them");
        goto done;
    }
    if (t->n + n >= UINT32_MAX || make_room(t, t->words_len + (size_t)w.len, t->n + n) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    t->gathered = 1;
    free(t->index);
    t->index = NULL;
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    memcpy(t->words + t->words_len, w.buf, (size_t)w.len);
    for (size_t k = 0; k < n; k++) {
        t->ends[t->n + k] = (int64_t)t->words_len + read64(e.buf, k);
        t->counts[t->n + k] = read64(c.buf, k);
    }
    Py_END_ALLOW_THREADS
    t->busy = 0;
    t->n += n;
    t->words_len += (size_t)w.len;
    out = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&w);
    PyBuffer_Release(&e);
    PyBuffer_Release(&c);
    return out;
}

/* -- routing: parallel counters each keep a part of the pre-tokens (_outbox.h) -------------- */

/* Let the outboxes go, having sent what they hold (send) or not: the errno of the first
 * write that failed, or 0. The tally is no longer routed. */
static int let_go_outboxes(Tally *t, int send) {
    int failed = 0;
    for (size_t p = 0; t->out && p < t->parts; p++) {
        if (p == t->own) continue;
        int e = send ? outbox_close(&t->out[p]) : (outbox_free(&t->out[p]), 0);
        if (!failed) failed = e;
    }
    PyMem_RawFree(t->out);
    t->out = NULL;
    t->parts = t->own = 0;
    return failed;
}

/* Send what was counted before routing and is not of the tally's own part, and keep the
 * rest in the order first seen. */
static void keep_own(Tally *t) {
    size_t from = 0, to = 0, kept = 0;
    for (size_t w = 0; w < t->n; w++) {
        size_t end = (size_t)t->ends[w], len = end - from, p = part_of(bytes_hash(t->words + from, len), t->parts);
        if (p != t->own) {
            outbox_send(&t->out[p], t->words + from, len, t->counts[w]);
        } else {
            memmove(t->words + to, t->words + from, len);
            to += len;
            t->ends[kept] = (int64_t)to;
            t->counts[kept++] = t->counts[w];
        }
        from = end;
    }
    if (kept == t->n) return;
    t->n = kept, t->words_len = to;
    memset(t->index, 0xff, (t->mask + 1) * sizeof *t->index);
    for (size_t w = 0; w < kept; w++) {
        size_t start = word_start(t, w);
        uint32_t tag = (uint32_t)(bytes_hash(t->words + start, (size_t)t->ends[w] - start) >> 32);
        size_t slot = tag & t->mask;
        while (t->index[slot] != EMPTY_SLOT) slot = (slot + 1) & t->mask;
        t->index[slot] = (uint64_t)tag << 32 | w;
    }
}

/* route(fds, own): keep only the pre-tokens of part own of len(fds) (the low 32 bits of their
 * hash modulo len(fds): the same in every tally), and send every other one, those counted
 * already first, to the file descriptor of its part (_outbox.h), until send(). */
static PyObject *Tally_route(Tally *t, PyObject *args) {
    PyObject *arg;
    Py_ssize_t own;
    if (!PyArg_ParseTuple(args, "On:route", &arg, &own) || check_counting(t)) return NULL;
    if (t->out) {
        PyErr_SetString(PyExc_RuntimeError, "the tally is routed already: send() first");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "route takes a sequence of file descriptors");
    if (!seq) return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k < 1 || k > UINT32_MAX || own < 0 || own >= k) {
        PyErr_SetString(PyExc_ValueError, "route takes a file descriptor for each part but own, and own among them");
        Py_DECREF(seq);
        return NULL;
    }
    t->out = PyMem_RawCalloc((size_t)k, sizeof *t->out);
    t->parts = (size_t)k, t->own = (size_t)own;
    for (Py_ssize_t p = 0; t->out && p < k; p++) {
        int fd = p == own ? -1 : PyObject_AsFileDescriptor(PySequence_Fast_GET_ITEM(seq, p));
        if (p != own && (fd < 0 || outbox_open(&t->out[p], fd, (size_t)k))) {
            if (fd >= 0) PyErr_NoMemory();
            let_go_outboxes(t, 0);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    if (!t->out) return PyErr_NoMemory();
    keep_own(t);
    Py_RETURN_NONE;
}

/* send(): send what the outboxes still hold, and count every pre-token again; OSError for a
 * write to them that failed since route(). */
static PyObject *Tally_send(Tally *t, PyObject *Py_UNUSED(ignored)) {
    if (check_free(t)) return NULL;
    int failed;
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    failed = let_go_outboxes(t, 1);
    Py_END_ALLOW_THREADS
    t->busy = 0;
    if (!failed) Py_RETURN_NONE;
    errno = failed;
    return PyErr_SetFromErrno(PyExc_OSError);
}

typedef struct {
    const uint8_t *bytes;
    size_t len;
} Piece;

/* Where piece first occurs in s[0..len), or len if nowhere (or it is empty). */
static size_t find_piece(const Piece *piece, const uint8_t *s, size_t len) {
    const uint8_t *t = piece->bytes, *last;
    size_t m = piece->len;
    if (!m || m > len) return len;
    last = s + len - m; /* the last place it could start */
    for (const uint8_t *p = s; p <= last && (p = memchr(p, t[0], (size_t)(last - p) + 1)); p++)
        if (memcmp(p, t, m) == 0) return (size_t)(p - s);
    return len;
}

/* Whether one of the n special tokens occurs in s[0..len). */
static int holds_special(const Piece *specials, Py_ssize_t n, const uint8_t *s, size_t len) {
    for (Py_ssize_t j = 0; j < n; j++)
        if (find_piece(&specials[j], s, len) < len) return 1;
    return 0;
}

/* Count the pre-tokens of s[0..len) with the n special tokens cut out as
 * PreTokenizer.split_special cuts them: from the start, the leftmost occurrence first, the
 * longest of those starting there. next[j] is where special j next occurs from at (len if
 * nowhere), looked for again only once at has passed it. -1 when out of memory. */
static int count_between(Tally *t, const uint8_t *s, size_t len, const Piece *specials, Py_ssize_t n, size_t *next) {
    for (Py_ssize_t j = 0; j < n; j++) next[j] = find_piece(&specials[j], s, len);
    size_t at = 0;
    for (;;) {
        size_t first = len, width = 0;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (next[j] < at) next[j] = at + find_piece(&specials[j], s + at, len - at);
            if (next[j] < first || (next[j] == first && next[j] < len && specials[j].len > width))
                first = next[j], width = specials[j].len;
        }
        if (count_text(t, s + at, (ptrdiff_t)(first - at)) < 0) return -1;
        if (first == len) return 0;
        at = first + width;
    }
}

/* add_utf8(data, specials) -> bool: count the pre-tokens of a text given as UTF-8 bytes, the
 * special tokens (bytes) cut out; False, counting nothing, if it is not valid UTF-8. The GIL
 * is released for a long one. */
static PyObject *Tally_add_utf8(Tally *t, PyObject *args) {
    Py_buffer data;
    PyObject *specials, *out = NULL;
    if (!PyArg_ParseTuple(args, "y*O!:add_utf8", &data, &PyTuple_Type, &specials)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(specials);
    Piece *tokens = PyMem_Malloc((size_t)(n ? n : 1) * (sizeof *tokens + sizeof(size_t)));
    if (!tokens) {
        PyErr_NoMemory();
        goto done;
    }
    size_t *next = (size_t *)(tokens + (n ? n : 1));
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *token = PyTuple_GET_ITEM(specials, j);
        if (!PyBytes_Check(token)) {
            PyErr_SetString(PyExc_TypeError, "special tokens must be bytes");
            goto done;
        }
        tokens[j] = (Piece){(const uint8_t *)PyBytes_AS_STRING(token), (size_t)PyBytes_GET_SIZE(token)};
    }
    if (check_counting(t)) goto done;
    if (t->family < 0) {
        PyErr_SetString(PyExc_ValueError, "add_utf8 needs a compiled pre-tokenizer");
        goto done;
    }
    const uint8_t *s = data.buf;
    size_t len = (size_t)data.len;
    int valid, rc = 0;
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    valid = jsonl_valid_utf8(s, len);
    if (valid) rc = count_between(t, s, len, tokens, n, next);
    Py_END_ALLOW_THREADS
    t->busy = 0;
    if (rc < 0) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyBool_FromLong(valid);
done:
    PyMem_Free(tokens);
    PyBuffer_Release(&data);
    return out;
}

/* add_jsonl(data, at, field, specials) -> (stop, lines): count the documents of the JSONL lines
 * of data from byte at, each the string of its field (UTF-8 bytes), up to the first line left
 * to the caller: one _jsonl.h leaves, or whose text holds one of the special tokens (bytes).
 * stop is where that line starts (len(data) if none), lines how many came before it (blank
 * ones too). The GIL is released while counting. */
static PyObject *Tally_add_jsonl(Tally *t, PyObject *args) {
    Py_buffer data;
    Py_ssize_t at;
    const char *field;
    Py_ssize_t field_len;
    PyObject *specials;
    if (!PyArg_ParseTuple(args, "y*ny#O!:add_jsonl", &data, &at, &field, &field_len, &PyTuple_Type, &specials)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n_specials = PyTuple_GET_SIZE(specials);
    Piece *tokens = PyMem_Malloc((size_t)(n_specials ? n_specials : 1) * sizeof *tokens);
    if (!tokens) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < n_specials; j++) {
        PyObject *token = PyTuple_GET_ITEM(specials, j);
        if (!PyBytes_Check(token)) {
            PyErr_SetString(PyExc_TypeError, "special tokens must be bytes");
            goto done;
        }
        tokens[j] = (Piece){(const uint8_t *)PyBytes_AS_STRING(token), (size_t)PyBytes_GET_SIZE(token)};
    }
    if (at < 0 || at > data.len) {
        PyErr_SetString(PyExc_ValueError, "at is outside the data");
        goto done;
    }
    if (check_counting(t)) goto done;
    if (t->family < 0) {
        PyErr_SetString(PyExc_ValueError, "add_jsonl needs a compiled pre-tokenizer");
        goto done;
    }
    const uint8_t *s = data.buf, *end = s + data.len, *line = s + at;
    Py_ssize_t lines = 0;
    int rc = 0;
    uint8_t *text = text_room(t, (size_t)(end - line) + 1); /* a line's text is never longer than the line */
    if (!text) {
        PyErr_NoMemory();
        goto done;
    }
    t->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    while (line < end) {
        const uint8_t *nl = memchr(line, '\n', (size_t)(end - line)), *stop = nl ? nl : end;
        uint8_t *text_end;
        int kind = jsonl_text(line, stop, (const uint8_t *)field, (size_t)field_len, text, &text_end);
        if (kind < 0 || (kind && holds_special(tokens, n_specials, text, (size_t)(text_end - text)))) break;
        if (kind && (rc = count_text(t, text, text_end - text)) < 0) break;
        lines++;
        line = nl ? nl + 1 : end;
    }
    Py_END_ALLOW_THREADS
    t->busy = 0;
    if (rc < 0) {
        PyErr_NoMemory();
        goto done;
    }
    out = Py_BuildValue("nn", (Py_ssize_t)(line - s), lines);
done:
    PyMem_Free(tokens);
    PyBuffer_Release(&data);
    return out;
}

typedef struct {
    const uint8_t *bytes;
    int64_t len, number; /* its length, and its place in the order first seen */
} Word;

static int by_bytes(const void *a, const void *b) {
    const Word *x = a, *y = b;
    int c = memcmp(x->bytes, y->bytes, (size_t)(x->len < y->len ? x->len : y->len));
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static PyObject *bytes_of(const void *p, size_t size) { return PyBytes_FromStringAndSize(p, (Py_ssize_t)size); }

/* A word's first 8 bytes as a big-endian number (zeros past its end), and its index. */
typedef struct {
    uint64_t key;
    uint64_t k;
} Keyed;

/* The tally's n words in order of their bytes, into order. Sorting Words through
 * memcmp waited on the words' bytes, scattered over the tally, at every comparison (6 s for
 * each process's 9 million at the end of counting 10 GB): here the words are sorted by their
 * first 8 bytes, by radix (four passes of 16 bits, through keyed and a second array as
 * long), and only words that share them are compared whole. -1 if out of memory. It needs
 * no GIL. */
static int sort_words(const Tally *t, size_t n, Word *order) {
    Keyed *keyed = PyMem_RawMalloc((n ? n : 1) * sizeof *keyed), *spare = PyMem_RawMalloc((n ? n : 1) * sizeof *spare);
    size_t *counts = PyMem_RawCalloc(1 << 16, sizeof *counts);
    if (!keyed || !spare || !counts) {
        PyMem_RawFree(keyed), PyMem_RawFree(spare), PyMem_RawFree(counts);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t start = word_start(t, i);
        int64_t len = t->ends[i] - (int64_t)start;
        uint64_t key = 0;
        for (int64_t j = 0; j < 8; j++) key = key << 8 | (j < len ? t->words[start + (size_t)j] : 0);
        keyed[i] = (Keyed){key, i};
    }
    for (int shift = 0; shift < 64; shift += 16) { /* least significant digit first: each pass keeps the last's order */
        memset(counts, 0, sizeof *counts << 16);
        for (size_t k = 0; k < n; k++) counts[keyed[k].key >> shift & 0xFFFF]++;
        size_t at = 0;
        for (size_t d = 0; d < 1 << 16; d++) {
            size_t c = counts[d];
            counts[d] = at;
            at += c;
        }
        for (size_t k = 0; k < n; k++) spare[counts[keyed[k].key >> shift & 0xFFFF]++] = keyed[k];
        Keyed *swap = keyed;
        keyed = spare;
        spare = swap;
    }
    PyMem_RawFree(spare);  /* before order is filled: the sort's peak is keyed and one more array */
    spare = NULL;
    for (size_t k = 0; k < n; k++) { /* each word's end is read out of order: asked for ahead */
        if (k + AHEAD < n && keyed[k + AHEAD].k) PREFETCH(&t->ends[keyed[k + AHEAD].k - 1]);
        size_t start = word_start(t, keyed[k].k);
        order[k] = (Word){t->words + start, t->ends[keyed[k].k] - (int64_t)start, (int64_t)keyed[k].k};
    }
    for (size_t k = 0, run; k < n; k += run) { /* words whose first 8 bytes are alike: compared whole */
        for (run = 1; k + run < n && keyed[k + run].key == keyed[k].key; run++) {
        }
        if (run > 1) qsort(order + k, run, sizeof *order, by_bytes);
    }
    PyMem_RawFree(keyed);
    PyMem_RawFree(spare);
    PyMem_RawFree(counts);
    return 0;
}

/* table(sort) -> (words, ends, counts): the packed counts, ends and counts as native int64. */
static PyObject *Tally_table(Tally *t, PyObject *args) {
    int sort = 0;
    if (!PyArg_ParseTuple(args, "|p:table", &sort) || check_counting(t)) return NULL;
    if (!sort) {
        PyObject *w = bytes_of(t->words, t->words_len), *e = bytes_of(t->ends, t->n * 8), *c = bytes_of(t->counts, t->n * 8);
        PyObject *out = w && e && c ? PyTuple_Pack(3, w, e, c) : NULL;
        Py_XDECREF(w);
        Py_XDECREF(e);
        Py_XDECREF(c);
        return out;
    }
    Word *order = PyMem_Malloc((t->n ? t->n : 1) * sizeof *order);
    PyObject *words = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)t->words_len);
    PyObject *ends = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t->n * 8));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(t->n * 8));
    PyObject *out = NULL;
    if (!order || !words || !ends || !counts) {
        if (!order) PyErr_NoMemory();
        goto done;
    }
    if (sort_words(t, t->n, order)) {
        PyErr_NoMemory();
        goto done;
    }
    /* Through memcpy: a bytes object's data need not be aligned for int64. */
    char *w = PyBytes_AS_STRING(words), *e = PyBytes_AS_STRING(ends), *c = PyBytes_AS_STRING(counts);
    int64_t at = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (k + AHEAD < t->n) PREFETCH(order[k + AHEAD].bytes), PREFETCH(&t->counts[order[k + AHEAD].number]);
        memcpy(w + at, order[k].bytes, (size_t)order[k].len);
        at += order[k].len;
        memcpy(e + 8 * k, &at, 8);
        memcpy(c + 8 * k, &t->counts[order[k].number], 8);
    }
    out = PyTuple_Pack(3, words, ends, counts);
done:
    PyMem_Free(order);
    Py_XDECREF(words);
    Py_XDECREF(ends);
    Py_XDECREF(counts);
    return out;
}

/* The count words of order written to fd through a buffer of ``cap`` bytes: their ends,
 * their counts, then their bytes. 0, or -1 with errno set. */
static int write_order(const Tally *t, const Word *order, size_t count, int fd, char *buf, size_t cap) {
    size_t used = 0;
    for (int section = 0; section < 3; section++) {
        int64_t at = 0;
        for (size_t i = 0; i < count; i++) {
            /* A word's bytes and length come from order: only its bytes and count are read
             * where the tally keeps them, out of order. */
            if (i + AHEAD < count) PREFETCH(section == 1 ? (const void *)&t->counts[order[i + AHEAD].number] : order[i + AHEAD].bytes);
            size_t len = 8;
            const void *from = &at;
            if (section == 0) at += order[i].len;
            else if (section == 1) from = &t->counts[order[i].number];
            else from = order[i].bytes, len = (size_t)order[i].len;
            if (used + len > cap) {
                if (write_all(fd, buf, used)) return -1;
                used = 0;
            }
            if (len > cap) {
                if (write_all(fd, from, len)) return -1;
                continue;
            }
            memcpy(buf + used, from, len);
            used += len;
        }
    }
    return write_all(fd, buf, used);
}

/* The words of order (n of them, sorted) with each word's copies, side by side, summed into
 * the first (see gather): how many are left. */
static size_t sum_copies(Tally *t, Word *order, size_t n) {
    size_t kept = 0;
    for (size_t k = 0; k < n; k++) {
        if (k + AHEAD < n) PREFETCH(order[k + AHEAD].bytes);
        const Word *last = kept ? &order[kept - 1] : NULL;
        if (last && last->len == order[k].len && memcmp(last->bytes, order[k].bytes, (size_t)order[k].len) == 0)
            t->counts[last->number] += t->counts[order[k].number];
        else
            order[kept++] = order[k];
    }
    return kept;
}

/* write_sorted(fd) -> (words, bytes): the table(True) would give, written to the file
 * descriptor fd at its offset (the ends, the counts, then the words), without making it: a
 * tally spilled to disk holds, besides itself, only its sort's order; and its words and bytes
 * of words, each word once however many times gather added it. Its index is let go first,
 * so it counts no more: a new tally counts on. */
static PyObject *Tally_write_sorted(Tally *t, PyObject *arg) {
    int fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0 || check_free(t)) return NULL;
    t->spent = 1;
    free(t->index);
    t->index = NULL;
    size_t cap = 1 << 20;
    Word *order = PyMem_RawMalloc((t->n ? t->n : 1) * sizeof *order);
    char *buf = PyMem_RawMalloc(cap);
    int rc = -2; /* -2: out of memory; -1: a write failed */
    size_t n = t->n, bytes = t->words_len;
    if (order && buf) {
        Py_BEGIN_ALLOW_THREADS
        if (!sort_words(t, t->n, order)) {
            if (t->gathered) {
                n = sum_copies(t, order, t->n);
                bytes = 0;
                for (size_t k = 0; k < n; k++) bytes += (size_t)order[k].len;
            }
            rc = write_order(t, order, n, fd, buf, cap);
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(order);
    PyMem_RawFree(buf);
    if (rc == -1) return PyErr_SetFromErrno(PyExc_OSError);
    if (rc < 0) return PyErr_NoMemory();
    return Py_BuildValue("nn", (Py_ssize_t)n, (Py_ssize_t)bytes);
}

/* counts() -> dict[bytes, int], in the order first seen. */
static PyObject *Tally_counts(Tally *t, PyObject *Py_UNUSED(ignored)) {
    if (check_counting(t)) return NULL;
    PyObject *out = PyDict_New();
    for (size_t k = 0; out && k < t->n; k++) {
        size_t start = word_start(t, k);
        PyObject *word = bytes_of(t->words + start, (size_t)t->ends[k] - start);
        PyObject *count = PyLong_FromLongLong(t->counts[k]);
        if (!word || !count || PyDict_SetItem(out, word, count)) Py_CLEAR(out);
        Py_XDECREF(word);
        Py_XDECREF(count);
    }
    return out;
}

static Py_ssize_t Tally_len(Tally *t) { return (Py_ssize_t)t->n; }

/* nbytes: the memory the tally holds (its words, ends, counts, index and outboxes), as it grows. */
static PyObject *Tally_nbytes(Tally *t, void *Py_UNUSED(closure)) {
    size_t outboxes = 0;
    for (size_t p = 0; t->out && p < t->parts; p++)
        if (p != t->own) outboxes += outbox_bytes(&t->out[p]);
    return PyLong_FromSize_t(t->words_cap + 16 * t->cap + (t->index ? 8 * (t->mask + 1) : 0) + t->text_cap + outboxes);
}

/* -- merging sorted tables ---------------------------------------------------------------
 * merge_tables(tables): the sum of tables sorted by bytes, each (words, ends, counts) as
 * table(True) gives them, or read back from a file (any buffer; the int64 arrays need not be
 * aligned). A k-way merge over a heap of the tables' next words: one pass to size the result,
 * one to write it, with the GIL released; a table that is not sorted, or whose ends run past
 * its words, is a ValueError. TableMerge(tables) makes the same merge a part at a time. */

typedef struct {
    const uint8_t *words;
    const char *ends, *counts;
    size_t n, at, words_len;
    int64_t start; /* where word `at` starts */
} Run;

static inline int64_t run_len(const Run *r) { return read64(r->ends, r->at) - r->start; }

static inline int run_cmp(const Run *a, const Run *b) {
    int64_t la = run_len(a), lb = run_len(b);
    int c = memcmp(a->words + a->start, b->words + b->start, (size_t)(la < lb ? la : lb));
    return c ? c : (la > lb) - (la < lb);
}

static void sift_down(Run **heap, size_t size, size_t k) {
    for (;;) {
        size_t least = k, l = 2 * k + 1, r = l + 1;
        if (l < size && run_cmp(heap[l], heap[least]) < 0) least = l;
        if (r < size && run_cmp(heap[r], heap[least]) < 0) least = r;
        if (least == k) return;
        Run *tmp = heap[k];
        heap[k] = heap[least];
        heap[least] = tmp;
        k = least;
    }
}

/* Move run r to its next word: 1 when it has one, 0 at its end, -1 when it is broken. */
static int run_next(Run *r) {
    int64_t end = read64(r->ends, r->at);
    const uint8_t *word = r->words + r->start;
    int64_t len = end - r->start;
    r->at++;
    r->start = end;
    if (r->at == r->n) return 0;
    int64_t next_end = read64(r->ends, r->at);
    if (next_end < end || (uint64_t)next_end > r->words_len) return -1;
    int64_t next_len = next_end - end;
    int c = memcmp(word, r->words + end, (size_t)(len < next_len ? len : next_len));
    return (c < 0 || (c == 0 && len < next_len)) ? 1 : -1; /* strictly ascending */
}

/* Put the k runs at their first words, on a heap of *size of them: -1 when one is broken. */
static int merge_start(Run *runs, size_t k, Run **heap, size_t *size) {
    *size = 0;
    for (size_t j = 0; j < k; j++) {
        runs[j].at = 0;
        runs[j].start = 0;
        if (!runs[j].n) continue;
        int64_t first = read64(runs[j].ends, 0);
        if (first < 0 || (uint64_t)first > runs[j].words_len) return -1;
        heap[(*size)++] = &runs[j];
    }
    for (size_t j = *size; j-- > 0;) sift_down(heap, *size, j);
    return 0;
}

/* Merge on, while the next word fits in ``room`` more bytes and ``slots`` more words (the
 * first always): its bytes, end and count written at ``*len`` and ``*n`` of the buffers,
 * which grow by them (with words NULL it only counts them). -1 when a run is broken. */
static int merge_some(Run **heap, size_t *size, uint8_t *words, char *ends, char *counts, size_t room, size_t slots, size_t *n,
                      size_t *len) {
    size_t n0 = *n, len0 = *len;
    while (*size) {
        Run *top = heap[0];
        const uint8_t *word = top->words + top->start;
        int64_t word_len = run_len(top), count = 0;
        if (*n > n0 && (*n - n0 == slots || *len - len0 + (size_t)word_len > room)) break;
        Run probe = *top; /* the word being summed, kept while its runs move on */
        do {
            count += read64(heap[0]->counts, heap[0]->at);
            int more = run_next(heap[0]);
            if (more < 0) return -1;
            if (!more) heap[0] = heap[--*size];
            if (*size) sift_down(heap, *size, 0);
        } while (*size && run_cmp(heap[0], &probe) == 0);
        if (words) {
            memcpy(words + *len, word, (size_t)word_len);
            int64_t end = (int64_t)(*len + (size_t)word_len);
            memcpy(ends + 8 * *n, &end, 8);
            memcpy(counts + 8 * *n, &count, 8);
        }
        *len += (size_t)word_len;
        ++*n;
    }
    return 0;
}

/* Tables given as a sequence of (words, ends, counts), taken as runs: their buffers are held
 * (3 each, ``held`` of them taken) until tables_let_go. */
typedef struct {
    PyObject *seq;
    size_t k, held;
    Py_buffer *views;
    Run *runs;
    Run **heap; /* room for a heap of the runs */
} Tables;

/* Take the tables of arg (error: the message if it is not a sequence): 0, or -1 with an
 * exception set; tables_let_go lets go of what was taken either way. */
static int tables_take(Tables *t, PyObject *arg, const char *error) {
    *t = (Tables){0};
    if (!(t->seq = PySequence_Fast(arg, error))) return -1;
    t->k = (size_t)PySequence_Fast_GET_SIZE(t->seq);
    t->views = PyMem_Calloc(3 * (t->k ? t->k : 1), sizeof *t->views);
    t->runs = PyMem_Calloc(t->k ? t->k : 1, sizeof *t->runs);
    t->heap = PyMem_Calloc(t->k ? t->k : 1, sizeof *t->heap);
    if (!t->views || !t->runs || !t->heap) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t j = 0; j < t->k; j++) {
        PyObject *table = PySequence_Fast_GET_ITEM(t->seq, j);
        if (!PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 3) {
            PyErr_Format(PyExc_TypeError, "table %zu is not a (words, ends, counts) tuple", j);
            return -1;
        }
        for (int part = 0; part < 3; part++) {
            if (PyObject_GetBuffer(PyTuple_GET_ITEM(table, part), &t->views[t->held], PyBUF_SIMPLE) < 0) return -1;
            t->held++;
        }
        Py_buffer *v = &t->views[3 * j];
        if (v[1].len != v[2].len || v[1].len % 8) {
            PyErr_Format(PyExc_ValueError, "table %zu: ends and counts must be int64 arrays of one length", j);
            return -1;
        }
        t->runs[j] = (Run){v[0].buf, v[1].buf, v[2].buf, (size_t)v[1].len / 8, 0, (size_t)v[0].len, 0};
    }
    return 0;
}

static void tables_let_go(Tables *t) {
    for (size_t j = 0; j < t->held; j++) PyBuffer_Release(&t->views[j]);
    PyMem_Free(t->views);
    PyMem_Free(t->runs);
    PyMem_Free(t->heap);
    Py_XDECREF(t->seq);
    *t = (Tables){0};
}

static PyObject *broken_table(void) {
    PyErr_SetString(PyExc_ValueError, "a table is not sorted by bytes, or its ends run past its words");
    return NULL;
}

/* (words, ends, counts) of n words of len bytes, made for merge_some to fill; NULL on error. */
static int new_table(size_t n, size_t len, PyObject **words, PyObject **ends, PyObject **counts) {
    *words = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    *ends = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(8 * n));
    *counts = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(8 * n));
    return *words && *ends && *counts ? 0 : -1;
}

/* The (words, ends, counts) tuple when filled, else NULL; the three references are let go. */
static PyObject *table_tuple(PyObject *words, PyObject *ends, PyObject *counts, int filled) {
    PyObject *out = filled ? PyTuple_Pack(3, words, ends, counts) : NULL;
    Py_XDECREF(words);
    Py_XDECREF(ends);
    Py_XDECREF(counts);
    return out;
}

static PyObject *merge_tables(PyObject *Py_UNUSED(module), PyObject *arg) {
    Tables t;
    PyObject *words = NULL, *ends = NULL, *counts = NULL;
    int filled = 0;
    if (tables_take(&t, arg, "merge_tables takes a sequence of (words, ends, counts)")) goto done;
    size_t n = 0, len = 0, size;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = merge_start(t.runs, t.k, t.heap, &size) || merge_some(t.heap, &size, NULL, NULL, NULL, SIZE_MAX, SIZE_MAX, &n, &len) ? -1 : 0;
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        broken_table();
        goto done;
    }
    if (new_table(n, len, &words, &ends, &counts)) goto done;
    uint8_t *w = (uint8_t *)PyBytes_AS_STRING(words);
    char *e = PyBytes_AS_STRING(ends), *c = PyBytes_AS_STRING(counts);
    n = len = 0;
    Py_BEGIN_ALLOW_THREADS
    merge_start(t.runs, t.k, t.heap, &size);
    merge_some(t.heap, &size, w, e, c, SIZE_MAX, SIZE_MAX, &n, &len);
    Py_END_ALLOW_THREADS
    filled = 1;
done:
    tables_let_go(&t);
    return table_tuple(words, ends, counts, filled);
}

/* concat_tables(tables): tables (as merge_tables takes them, in any order) one after another,
 * as one; ValueError for one whose ends do not end at the end of its words. */
static PyObject *concat_tables(PyObject *Py_UNUSED(module), PyObject *arg) {
    Tables t;
    PyObject *words = NULL, *ends = NULL, *counts = NULL;
    int filled = 0;
    size_t n = 0, len = 0;
    if (tables_take(&t, arg, "concat_tables takes a sequence of (words, ends, counts)")) goto done;
    for (size_t j = 0; j < t.k; j++) {
        const Run *r = &t.runs[j];
        if ((r->n ? (uint64_t)read64(r->ends, r->n - 1) : 0) != r->words_len) {
            PyErr_Format(PyExc_ValueError, "table %zu: its ends do not end at the end of its words", j);
            goto done;
        }
        n += r->n;
        len += r->words_len;
    }
    if (new_table(n, len, &words, &ends, &counts)) goto done;
    char *w = PyBytes_AS_STRING(words), *e = PyBytes_AS_STRING(ends), *c = PyBytes_AS_STRING(counts);
    Py_BEGIN_ALLOW_THREADS
    for (size_t j = 0, at = 0; j < t.k; j++) {
        const Run *r = &t.runs[j];
        memcpy(w, r->words, r->words_len);
        memcpy(c, r->counts, 8 * r->n);
        for (size_t i = 0; i < r->n; i++) {
            int64_t end = read64(r->ends, i) + (int64_t)at;
            memcpy(e + 8 * i, &end, 8);
        }
        at += r->words_len;
        w += r->words_len;
        c += 8 * r->n;
        e += 8 * r->n;
    }
    Py_END_ALLOW_THREADS
    filled = 1;
done:
    tables_let_go(&t);
    return table_tuple(words, ends, counts, filled);
}

/* TableMerge(tables): merge_tables a part at a time, the tables' buffers held meanwhile. */
typedef struct {
    PyObject_HEAD
    Tables tables;
    size_t size; /* runs on the heap */
} TableMerge;

static PyObject *TableMerge_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"tables", NULL};
    PyObject *arg;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:TableMerge", names, &arg)) return NULL;
    TableMerge *m = (TableMerge *)type->tp_alloc(type, 0);
    if (!m) return NULL;
    if (tables_take(&m->tables, arg, "TableMerge takes a sequence of (words, ends, counts)")) goto fail;
    if (merge_start(m->tables.runs, m->tables.k, m->tables.heap, &m->size)) {
        broken_table();
        goto fail;
    }
    return (PyObject *)m;
fail:
    Py_DECREF(m);
    return NULL;
}

static void TableMerge_dealloc(TableMerge *m) {
    tables_let_go(&m->tables);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* take(max_bytes, max_words) -> (words, ends, counts): the next words of the merge, as many
 * as fit in both (at least one while any is left; none once the merge is done). */
static PyObject *TableMerge_take(TableMerge *m, PyObject *args) {
    Py_ssize_t room, slots;
    if (!PyArg_ParseTuple(args, "nn", &room, &slots)) return NULL;
    if (room < 1 || slots < 1) {
        PyErr_SetString(PyExc_ValueError, "take at least a byte and a word at a time");
        return NULL;
    }
    Tables *t = &m->tables;
    size_t n = 0, len = 0, size = m->size, k = t->k ? t->k : 1;
    Run *saved = PyMem_Malloc(k * sizeof *saved);
    Run **heap = PyMem_Malloc(k * sizeof *heap);
    PyObject *words = NULL, *ends = NULL, *counts = NULL;
    int filled = 0;
    if (!saved || !heap) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(saved, t->runs, t->k * sizeof *saved); /* sized first, then taken from here again */
    memcpy(heap, t->heap, t->k * sizeof *heap);
    if (merge_some(t->heap, &m->size, NULL, NULL, NULL, (size_t)room, (size_t)slots, &n, &len)) {
        broken_table();
        goto done;
    }
    if (new_table(n, len, &words, &ends, &counts)) goto done;
    memcpy(t->runs, saved, t->k * sizeof *saved);
    memcpy(t->heap, heap, t->k * sizeof *heap);
    m->size = size;
    n = len = 0;
    merge_some(t->heap, &m->size, (uint8_t *)PyBytes_AS_STRING(words), PyBytes_AS_STRING(ends), PyBytes_AS_STRING(counts),
               (size_t)room, (size_t)slots, &n, &len);
    filled = 1;
done:
    PyMem_Free(saved);
    PyMem_Free(heap);
    return table_tuple(words, ends, counts, filled);
}

/* read() -> [(bytes, words), ...]: how far the merge has read into each table: the bytes of
 * its words and the words (so the pages before them may be let go). */
static PyObject *TableMerge_read(TableMerge *m, PyObject *Py_UNUSED(ignored)) {
    const Tables *t = &m->tables;
    PyObject *out = PyList_New((Py_ssize_t)t->k);
    for (size_t j = 0; out && j < t->k; j++) {
        PyObject *item = Py_BuildValue("(Ln)", (long long)t->runs[j].start, (Py_ssize_t)t->runs[j].at);
        if (!item) Py_CLEAR(out);
        else PyList_SET_ITEM(out, (Py_ssize_t)j, item);
    }
    return out;
}

static PyMethodDef TableMerge_methods[] = {
    {"take", (PyCFunction)TableMerge_take, METH_VARARGS,
     "take(max_bytes, max_words)\n--\n\nThe next (words, ends, counts) of the merge: as many words as fit in both, at least one\n"
     "while any is left."},
    {"read", (PyCFunction)TableMerge_read, METH_NOARGS,
     "read()\n--\n\nHow far the merge has read into each table: (bytes of its words, words)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TableMergeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "engine.corpus._tally.TableMerge",
    .tp_basicsize = sizeof(TableMerge),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TableMerge(tables)\n--\n\nmerge_tables(tables), taken a part at a time.",
    .tp_new = TableMerge_new,
    .tp_dealloc = (destructor)TableMerge_dealloc,
    .tp_methods = TableMerge_methods,
};

static PyObject *Tally_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"family", NULL};
    int family;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i:Tally", names, &family)) return NULL;
    if (family < -1 || family >= PATTERN_COUNT) {
        PyErr_Format(PyExc_ValueError, "family must be -1 or a family number, 0-%d", PATTERN_COUNT - 1);
        return NULL;
    }
    Tally *t = (Tally *)type->tp_alloc(type, 0);
    if (!t) return NULL;
    t->family = family;
    t->mask = 255;
    t->index = malloc((t->mask + 1) * sizeof *t->index);
    if (!t->index) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    memset(t->index, 0xff, (t->mask + 1) * sizeof *t->index);
    return (PyObject *)t;
}

static void Tally_dealloc(Tally *t) {
    free(t->words);
    free(t->ends);
    free(t->counts);
    free(t->index);
    free(t->text);
    let_go_outboxes(t, 0);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef Tally_methods[] = {
    {"add", (PyCFunction)Tally_add, METH_O, "add(text)\n--\n\nCount the pre-tokens of a text."},
    {"add_all", (PyCFunction)Tally_add_all, METH_O, "add_all(texts)\n--\n\nCount the pre-tokens of each text of an iterable."},
    {"add_jsonl", (PyCFunction)Tally_add_jsonl, METH_VARARGS,
     "add_jsonl(data, at, field, specials)\n--\n\nCount the texts of JSONL lines from byte at, up to the first line left to the\n"
     "caller (not one JSON object with the string field once, or holding a special token):\n(where it starts, the lines before it)."},
    {"add_utf8", (PyCFunction)Tally_add_utf8, METH_VARARGS,
     "add_utf8(data, specials)\n--\n\nCount the pre-tokens of a text given as UTF-8 bytes, the special tokens (bytes)\n"
     "cut out; False, counting nothing, if it is not valid UTF-8."},
    {"table", (PyCFunction)Tally_table, METH_VARARGS,
     "table(sort=False)\n--\n\n(words, ends, counts): the distinct pre-tokens' bytes one after another, in the\n"
     "order first seen or sorted by bytes; where each ends and each one's count, as native int64."},
    {"gather", (PyCFunction)Tally_gather, METH_VARARGS,
     "gather(words, ends, counts)\n--\n\nAppend a table as it is (ends and counts native int64), not looked up: write_sorted sums\n"
     "the words held twice. The tally counts no more after."},
    {"route", (PyCFunction)Tally_route, METH_VARARGS,
     "route(fds, own)\n--\n\nKeep only the pre-tokens of part own of len(fds) by hash; send each other one to the\n"
     "file descriptor of its part, as tables one after another, until send()."},
    {"send", (PyCFunction)Tally_send, METH_NOARGS, "send()\n--\n\nSend what route() has not sent yet, and keep every pre-token again."},
    {"counts", (PyCFunction)Tally_counts, METH_NOARGS, "counts()\n--\n\nThe counts as a dict of bytes to int, in the order first seen."},
    {"write_sorted", (PyCFunction)Tally_write_sorted, METH_O,
     "write_sorted(fd)\n--\n\nWrite what table(True) gives to the file descriptor fd (ends, counts, words), without\n"
     "making it, each word once however often gathered; (words, bytes of words). The tally counts no more after."},
    {NULL, NULL, 0, NULL},
};

static PyObject *Tally_words_bytes(Tally *t, void *Py_UNUSED(closure)) { return PyLong_FromSize_t(t->words_len); }

static PyObject *Tally_seen(Tally *t, void *Py_UNUSED(closure)) { return PyLong_FromLongLong(t->seen); }

static PyGetSetDef Tally_getset[] = {
    {"words_bytes", (getter)Tally_words_bytes, NULL, "The distinct pre-tokens' bytes, one after another.", NULL},
    {"seen", (getter)Tally_seen, NULL, "The pre-tokens counted, each as often as it was seen (routed ones too).", NULL},
    {"nbytes", (getter)Tally_nbytes, NULL, "The memory the tally holds: its words, ends, counts and index.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Tally_sequence = {.sq_length = (lenfunc)Tally_len};

static PyTypeObject TallyType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "engine.corpus._tally.Tally",
    .tp_basicsize = sizeof(Tally),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tally(family)\n--\n\nPre-token counts under a family of patterns (-1: each text is one pre-token).",
    .tp_new = Tally_new,
    .tp_dealloc = (destructor)Tally_dealloc,
    .tp_methods = Tally_methods,
    .tp_getset = Tally_getset,
    .tp_as_sequence = &Tally_sequence,
};

/* count_lines(data) -> the newlines in a buffer, counted 255 bytes at a time into a byte (a
 * loop the compiler vectorizes: several GB/s, where bytes.count(b"\n") makes about 1.5). The
 * GIL is released: a stream's reader counts each block's lines while counters run. */
static PyObject *count_lines(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_buffer data;
    if (PyObject_GetBuffer(arg, &data, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *s = data.buf;
    size_t n = (size_t)data.len, lines = 0;
    Py_BEGIN_ALLOW_THREADS
    for (size_t i = 0; i < n;) {
        size_t stop = n - i < 255 ? n : i + 255;
        uint8_t some = 0;
        for (; i < stop; i++) some += s[i] == '\n';
        lines += some;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromSize_t(lines);
}

static PyMethodDef module_methods[] = {
    {"merge_tables", merge_tables, METH_O,
     "merge_tables(tables)\n--\n\nThe sum of tables sorted by bytes, each (words, ends, counts), as one sorted table."},
    {"concat_tables", concat_tables, METH_O,
     "concat_tables(tables)\n--\n\nTables, each (words, ends, counts), one after another as one."},
    {"count_lines", count_lines, METH_O, "count_lines(data)\n--\n\nThe newlines in a buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.corpus._tally", "Pre-token counts, kept in C.", -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tally(void) {
    pretokenize_tables_init();
    if (PyType_Ready(&TallyType) < 0 || PyType_Ready(&TableMergeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&TallyType);
    Py_INCREF(&TableMergeType);
    if (PyModule_AddObject(m, "Tally", (PyObject *)&TallyType) < 0 || PyModule_AddObject(m, "TableMerge", (PyObject *)&TableMergeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
