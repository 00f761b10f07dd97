/* The Unigram trainer's state and hot loops, compiled.
 *
 * engine/train/unigram/trainer.py drives this round by round (``UnigramTrainer``) and
 * engine/train/unigram/rule.py states the rules. Here, as flat C data:
 *
 * - the corpus: every distinct word once, as character ids one after another (``text``),
 *   with its count. Characters are numbered by count (most frequent first), and character
 *   ``c`` is piece ``c``: the characters are the first pieces, and stay.
 * - the pieces: their characters (``pool``, at ``poff``, ``plen`` long) and log-probabilities
 *   (``score``), in a fixed order that removals keep.
 * - the lattice of every word, kept between rounds: for each position of ``text``, the
 *   pieces that start there (``epiece``, ``elen``), shortest first. Seeding lays it out from
 *   where the seeds occur; a removal filters it.
 * - while pruning, a trie of the pieces, as a hash table from (node, character) to the
 *   child node: what finds the pieces inside a piece.
 *
 * Seeding sorts the suffixes of the words by their first ``maxlen + 1`` characters (prefix
 * doubling, counting sorts), and walks the longest-common-prefix intervals: each is a
 * substring seen at two places or more and followed there by different characters (a
 * word's end differs from everything), with its count summed over the words' counts; its
 * suffixes are its occurrences, which become the lattice's edges.
 *
 * The E-step runs forward-backward over each lattice in probabilities, not logarithms (a
 * multiply-add an edge): a value that falls below 2^-256 has the values of the window ahead
 * of it (the longest piece) multiplied by 2^256, exactly, and its position remembers the
 * power of two it is off by. So a line of Chinese a thousand characters long loses nothing.
 * ``e_step`` releases the GIL and writes only to what it allocates: two threads can run it
 * on two halves of the words.
 *
 * Pruning needs each piece's Viterbi count over the corpus and its best segmentation into
 * other pieces (walking the trie over its own characters); ``analyze`` returns both as
 * each piece's loss and kind, and the trainer chooses what to keep (``keep``).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_core_module.h"
#include "_positions.h"

#define SCALE_BITS 256
#define LN2 0.69314718055994530942
#define TINY 8.636168555094445e-78 /* 2^-256 */
#define ANY_SCRIPT INT32_MIN
#define INHERITED (-1)
#define SPACE_CLASS (-2)

enum { CANDIDATE = 0, KEEP = 1, SPLIT = 2, UNUSED = 3 };

typedef struct {
    PyObject_HEAD
    int32_t npos, nwords, longest_word, maxlen;
    int32_t *text;       /* character ids of the words, one after another */
    int32_t *starts;     /* each word's first position, then npos */
    int64_t *counts;     /* each word's count */
    int32_t nchars;
    uint32_t *codepoint; /* each character id's code point */
    int64_t *char_count;
    int32_t npieces;
    int32_t *poff;       /* each piece's characters: pool[poff[i] .. poff[i] + plen[i]] */
    uint8_t *plen;
    int32_t *pool;
    int64_t poolsize;
    double *score, *before; /* log-probabilities now, and when ``mark`` was last called */
    int32_t *node_piece;    /* the trie: the piece each node spells, or -1 */
    int32_t nnodes;
    uint64_t *tkeys;        /* (node << 32 | character) + 1; 0 is a free slot */
    int32_t *tvals;
    uint32_t tmask;
    uint8_t *ecount;        /* the lattice: the pieces starting at each position (one a length: few) */
    int64_t *wedge;         /* where each word's pieces start in epiece (then nedges) */
    int32_t *epiece;
    uint8_t *elen;
    int64_t nedges;
} Core;

/* -- helpers ----------------------------------------------------------------------------- */

static void *alloc(size_t n, size_t item) {
    void *p = calloc(n ? n : 1, item);
    if (!p) PyErr_NoMemory();
    return p;
}

static inline uint32_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x;
}

static PyObject *piece_string(const Core *self, int32_t piece) {
    uint32_t buf[256];
    int32_t len = self->plen[piece];
    for (int32_t k = 0; k < len; k++) buf[k] = self->codepoint[self->pool[self->poff[piece] + k]];
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, len);
}

/* ψ(x) as SentencePiece approximates it (rule.digamma). */
static double digamma(double x) {
    double result = 0.0;
    for (; x < 7; ++x) result -= 1 / x;
    x -= 1.0 / 2.0;
    double xx = 1.0 / x, xx2 = xx * xx, xx4 = xx2 * xx2;
    return result + log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 - (127.0 / 30720.0) * xx4 * xx4;
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t item, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    if (view->len % item) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of %zd-byte items", what, view->len, item);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* get_buffer of exactly ``count`` items: ValueError ``one_each`` for another number. */
static int get_buffer_of(PyObject *obj, Py_buffer *view, Py_ssize_t item, const char *what, Py_ssize_t count, const char *one_each) {
    if (get_buffer(obj, view, item, what) < 0) return -1;
    if (view->len / item != count) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, one_each);
        return -1;
    }
    return 0;
}

/* -- the trie ---------------------------------------------------------------------------- */

static inline int32_t trie_child(const Core *self, int32_t node, int32_t c) {
    uint64_t key = (((uint64_t)(uint32_t)node << 32) | (uint32_t)c) + 1;
    for (uint32_t h = mix64(key) & self->tmask;; h = (h + 1) & self->tmask) {
        if (self->tkeys[h] == key) return self->tvals[h];
        if (self->tkeys[h] == 0) return -1;
    }
}

static void free_trie(Core *self) {
    free(self->node_piece);
    free(self->tkeys);
    free(self->tvals);
    self->node_piece = NULL;
    self->tkeys = NULL;
    self->tvals = NULL;
}

static int build_trie(Core *self) {
    free_trie(self);
    int64_t most = 1 + self->poolsize; /* a node per piece character at most, and the root */
    uint64_t cap = 16;
    while (cap < (uint64_t)most + (uint64_t)most / 3) cap *= 2; /* filled to 3/4 at most */
    self->node_piece = alloc((size_t)most, sizeof(int32_t));
    self->tkeys = alloc(cap, sizeof(uint64_t));
    self->tvals = alloc(cap, sizeof(int32_t));
    if (!self->node_piece || !self->tkeys || !self->tvals) return -1;
    self->tmask = (uint32_t)(cap - 1);
    self->node_piece[0] = -1;
    self->nnodes = 1;
    for (int32_t i = 0; i < self->npieces; i++) {
        int32_t node = 0;
        for (int32_t k = 0; k < self->plen[i]; k++) {
            int32_t c = self->pool[self->poff[i] + k];
            uint64_t key = (((uint64_t)(uint32_t)node << 32) | (uint32_t)c) + 1;
            uint32_t h = mix64(key) & self->tmask;
            while (self->tkeys[h] != 0 && self->tkeys[h] != key) h = (h + 1) & self->tmask;
            if (self->tkeys[h] == 0) {
                self->tkeys[h] = key;
                self->tvals[h] = self->nnodes;
                self->node_piece[self->nnodes] = -1;
                self->nnodes++;
            }
            node = self->tvals[h];
        }
        self->node_piece[node] = i;
    }
    return 0;
}

/* Keep the pieces with ``map[i] >= 0``, piece i becoming piece map[i] (order kept). */
static int compact(Core *self, const int32_t *map, int32_t kept) {
    int64_t used = 0;
    for (int32_t i = 0; i < self->npieces; i++) {
        int32_t j = map[i];
        if (j < 0) continue;
        int32_t len = self->plen[i];
        memmove(self->pool + used, self->pool + self->poff[i], (size_t)len * sizeof(int32_t));
        self->poff[j] = (int32_t)used;
        self->plen[j] = (uint8_t)len;
        self->score[j] = self->score[i];
        self->before[j] = self->before[i];
        used += len;
    }
    self->npieces = kept;
    self->poolsize = used;
    int64_t r = 0, w = 0;
    for (int32_t word = 0; word < self->nwords; word++) {
        self->wedge[word] = w;
        for (int32_t p = self->starts[word]; p < self->starts[word + 1]; p++) {
            int64_t end = r + self->ecount[p];
            uint8_t kept_here = 0;
            for (; r < end; r++) {
                int32_t j = map[self->epiece[r]];
                if (j < 0) continue;
                self->epiece[w] = j;
                self->elen[w] = self->elen[r];
                w++;
                kept_here++;
            }
            self->ecount[p] = kept_here;
        }
    }
    self->wedge[self->nwords] = w;
    self->nedges = w;
    return 0;
}

/* -- setting up -------------------------------------------------------------------------- */

static void Core_dealloc(Core *self) {
    free(self->text);
    free(self->starts);
    free(self->counts);
    free(self->codepoint);
    free(self->char_count);
    free(self->poff);
    free(self->plen);
    free(self->pool);
    free(self->score);
    free(self->before);
    free_trie(self);
    free(self->ecount);
    free(self->wedge);
    free(self->epiece);
    free(self->elen);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

typedef struct {
    uint32_t cp;
    int64_t count;
} CharCount;

static int by_count(const void *a, const void *b) {
    const CharCount *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->cp < y->cp ? -1 : x->cp > y->cp;
}

static int Core_init(Core *self, PyObject *args, PyObject *kwds) {
    PyObject *text_obj, *ends_obj, *counts_obj;
    int maxlen;
    static char *kwlist[] = {"text", "ends", "counts", "max_piece_length", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOi", kwlist, &text_obj, &ends_obj, &counts_obj, &maxlen)) return -1;
    if (self->text) {
        PyErr_SetString(PyExc_RuntimeError, "a Core is set up once");
        return -1;
    }
    if (maxlen < 1 || maxlen > 255) {
        PyErr_SetString(PyExc_ValueError, "max_piece_length must be 1 to 255");
        return -1;
    }
    Py_buffer tv, ev, cv;
    if (get_buffer(text_obj, &tv, 4, "text") < 0) return -1;
    if (get_buffer(ends_obj, &ev, 8, "ends") < 0) return PyBuffer_Release(&tv), -1;
    if (get_buffer(counts_obj, &cv, 8, "counts") < 0) return PyBuffer_Release(&tv), PyBuffer_Release(&ev), -1;
    int rc = -1;
    uint32_t *keys = NULL;
    int32_t *vals = NULL;
    CharCount *chars = NULL;
    int64_t npos = tv.len / 4, nwords = ev.len / 8;
    const uint32_t *cps = tv.buf;
    const int64_t *ends = ev.buf, *counts = cv.buf;
    if (cv.len / 8 != nwords || nwords == 0 || npos >= INT32_MAX || ends[nwords - 1] != npos) {
        PyErr_SetString(PyExc_ValueError, "text, ends and counts do not agree (or there are no words)");
        goto done;
    }
    self->maxlen = maxlen;
    self->npos = (int32_t)npos;
    self->nwords = (int32_t)nwords;
    self->text = alloc((size_t)npos, sizeof(int32_t));
    self->starts = alloc((size_t)nwords + 1, sizeof(int32_t));
    self->counts = alloc((size_t)nwords, sizeof(int64_t));
    if (!self->text || !self->starts || !self->counts) goto done;
    for (int64_t w = 0; w < nwords; w++) {
        int64_t start = w ? ends[w - 1] : 0;
        if (ends[w] <= start || counts[w] < 1) {
            PyErr_SetString(PyExc_ValueError, "every word must be non-empty, with a count of at least 1");
            goto done;
        }
        self->starts[w] = (int32_t)start;
        self->counts[w] = counts[w];
        if (ends[w] - start > self->longest_word) self->longest_word = (int32_t)(ends[w] - start);
    }
    self->starts[nwords] = (int32_t)npos;
    /* The alphabet: a hash from code point to a first-seen number, with counts. */
    uint32_t cap = 64;
    int32_t n = 0;
    keys = malloc(cap * sizeof(uint32_t));
    vals = malloc(cap * sizeof(int32_t));
    chars = malloc(cap / 2 * sizeof(CharCount));
    if (!keys || !vals || !chars) {
        PyErr_NoMemory();
        goto done;
    }
    memset(keys, 0xff, cap * sizeof(uint32_t));
    for (int32_t w = 0; w < self->nwords; w++) {
        for (int32_t p = self->starts[w]; p < self->starts[w + 1]; p++) {
            uint32_t cp = cps[p];
            if (cp > 0x10ffff) {
                PyErr_SetString(PyExc_ValueError, "text holds a value that is no code point");
                goto done;
            }
            uint32_t h = mix64(cp) & (cap - 1);
            while (keys[h] != UINT32_MAX && keys[h] != cp) h = (h + 1) & (cap - 1);
            if (keys[h] == UINT32_MAX) {
                keys[h] = cp;
                vals[h] = n;
                chars[n].cp = cp;
                chars[n].count = 0;
                n++;
                if ((uint32_t)n * 2 >= cap) { /* grow: rehash */
                    uint32_t ncap = cap * 2;
                    uint32_t *k2 = malloc(ncap * sizeof(uint32_t));
                    int32_t *v2 = malloc(ncap * sizeof(int32_t));
                    CharCount *c2 = realloc(chars, ncap / 2 * sizeof(CharCount));
                    if (c2) chars = c2;
                    if (!k2 || !v2 || !c2) {
                        free(k2);
                        free(v2);
                        PyErr_NoMemory();
                        goto done;
                    }
                    memset(k2, 0xff, ncap * sizeof(uint32_t));
                    for (uint32_t s = 0; s < cap; s++) {
                        if (keys[s] == UINT32_MAX) continue;
                        uint32_t g = mix64(keys[s]) & (ncap - 1);
                        while (k2[g] != UINT32_MAX) g = (g + 1) & (ncap - 1);
                        k2[g] = keys[s];
                        v2[g] = vals[s];
                    }
                    free(keys);
                    free(vals);
                    keys = k2;
                    vals = v2;
                    cap = ncap;
                    h = mix64(cp) & (cap - 1);
                    while (keys[h] != cp) h = (h + 1) & (cap - 1);
                }
            }
            self->text[p] = vals[h];
            chars[vals[h]].count += self->counts[w];
        }
    }
    /* Number the characters by count, most frequent first (ties by code point). */
    int32_t *renumber = alloc((size_t)n, sizeof(int32_t));
    if (!renumber) goto done;
    CharCount *sorted = alloc((size_t)n, sizeof(CharCount));
    if (!sorted) {
        free(renumber);
        goto done;
    }
    memcpy(sorted, chars, (size_t)n * sizeof(CharCount));
    qsort(sorted, (size_t)n, sizeof(CharCount), by_count);
    self->codepoint = alloc((size_t)n, sizeof(uint32_t));
    self->char_count = alloc((size_t)n, sizeof(int64_t));
    if (!self->codepoint || !self->char_count) {
        free(renumber);
        free(sorted);
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        self->codepoint[i] = sorted[i].cp;
        self->char_count[i] = sorted[i].count;
        uint32_t h = mix64(sorted[i].cp) & (cap - 1);
        while (keys[h] != sorted[i].cp) h = (h + 1) & (cap - 1);
        renumber[vals[h]] = i;
    }
    for (int32_t p = 0; p < self->npos; p++) self->text[p] = renumber[self->text[p]];
    self->nchars = n;
    free(renumber);
    free(sorted);
    rc = 0;
done:
    free(keys);
    free(vals);
    free(chars);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&ev);
    PyBuffer_Release(&cv);
    return rc;
}

/* -- seeding ----------------------------------------------------------------------------- */

typedef struct {
    int64_t value;     /* frequency × length */
    int32_t start, len; /* where one occurrence is in ``text`` */
    int32_t lb, rb;    /* its occurrences: suffixes sa[lb .. rb] */
} Candidate;

static const int32_t *sort_text;     /* what by_value compares, set while it sorts (the GIL is held) */
static const uint32_t *sort_codepoint;

static int by_value(const void *a, const void *b) {
    const Candidate *x = a, *y = b;
    if (x->value != y->value) return x->value > y->value ? -1 : 1;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    for (int32_t k = 0; k < x->len; k++) {
        uint32_t cx = sort_codepoint[sort_text[x->start + k]], cy = sort_codepoint[sort_text[y->start + k]];
        if (cx != cy) return cx < cy ? -1 : 1;
    }
    return 0;
}

/* Whether text[start .. start + len] may be a piece: ``▁`` only first, one script. */
static int valid(const int32_t *text, int32_t start, int32_t len, const int32_t *classes) {
    int32_t previous = ANY_SCRIPT;
    for (int32_t k = 0; k < len; k++) {
        int32_t kind = classes[text[start + k]];
        if (kind == SPACE_CLASS) {
            if (k > 0) return 0;
            continue;
        }
        if (kind == INHERITED) kind = previous;
        if (kind != ANY_SCRIPT && previous != ANY_SCRIPT && kind != previous) return 0;
        previous = kind;
    }
    return 1;
}

/* Sorts the suffixes of the words by their first ``depth`` characters (a word's end before
 * any character): prefix doubling, each round two stable counting sorts, by the rank of the
 * characters ``h`` on (0 past the word's end: ``rest`` is what is left of it, up to 255),
 * then by their own. */
static int32_t *suffix_order(const Core *self, int32_t depth, const uint8_t *rest) {
    int32_t n = self->npos;
    int32_t *sa = malloc((size_t)n * sizeof(int32_t)), *rank = malloc((size_t)n * sizeof(int32_t));
    int32_t *tmp = malloc((size_t)n * sizeof(int32_t)), *count = malloc(((size_t)n + 2) * sizeof(int32_t));
    if (!sa || !rank || !tmp || !count) {
        free(sa);
        free(rank);
        free(tmp);
        free(count);
        return PyErr_NoMemory(), NULL;
    }
    int32_t top = self->nchars; /* ranks run 1..top; 0 is a word's end */
    for (int32_t i = 0; i < n; i++) rank[i] = self->text[i] + 1;
#define KEY(i) ((h) < rest[i] ? rank[(i) + (h)] : 0)
    for (int32_t h = 1;; h *= 2) {
        memset(count, 0, ((size_t)top + 2) * sizeof(int32_t));
        for (int32_t i = 0; i < n; i++) count[KEY(i) + 1]++;
        for (int32_t r = 1; r <= top + 1; r++) count[r] += count[r - 1];
        for (int32_t i = 0; i < n; i++) tmp[count[KEY(i)]++] = i;
        memset(count, 0, ((size_t)top + 2) * sizeof(int32_t));
        for (int32_t i = 0; i < n; i++) count[rank[i] + 1]++;
        for (int32_t r = 1; r <= top + 1; r++) count[r] += count[r - 1];
        for (int32_t k = 0; k < n; k++) sa[count[rank[tmp[k]]]++] = tmp[k];
        /* new ranks: equal pairs, equal rank */
        int32_t r = 0;
        for (int32_t k = 0; k < n; k++) {
            int32_t i = sa[k], j = k ? sa[k - 1] : -1;
            if (j < 0 || rank[i] != rank[j] || KEY(i) != KEY(j)) r++;
            tmp[i] = r;
        }
        memcpy(rank, tmp, (size_t)n * sizeof(int32_t));
        top = r;
        if (2 * h >= depth || r == n) break;
    }
#undef KEY
    free(rank);
    free(tmp);
    free(count);
    return sa;
}

static int add_candidate(Candidate **c, int64_t *n, int64_t *cap, Candidate add) {
    if (*n == *cap) {
        int64_t ncap = *cap ? *cap + *cap / 2 : 4096;
        Candidate *c2 = realloc(*c, (size_t)ncap * sizeof(Candidate));
        if (!c2) return PyErr_NoMemory(), -1;
        *c = c2;
        *cap = ncap;
    }
    (*c)[(*n)++] = add;
    return 0;
}

/* The candidates: the longest-common-prefix intervals of the sorted suffixes (a substring
 * at two places or more, followed by different characters there), and a word's rest seen
 * at one place only in a word counted twice or more; each with its count. */
static int find_candidates(const Core *self, const int32_t *sa, const uint8_t *rest, const int32_t *classes, Candidate **cands,
                           int64_t *ncand) {
    int32_t n = self->npos, depth = self->maxlen + 1;
    int32_t *lcp = malloc(((size_t)n + 1) * sizeof(int32_t));
    int64_t *weight = malloc(((size_t)n + 1) * sizeof(int64_t));
    int32_t *stack_lcp = malloc(((size_t)depth + 2) * sizeof(int32_t)), *stack_lb = malloc(((size_t)depth + 2) * sizeof(int32_t));
    int64_t cap = 0;
    int rc = -1;
    if (!lcp || !weight || !stack_lcp || !stack_lb) {
        PyErr_NoMemory();
        goto done;
    }
    /* lcp[k]: the common prefix of suffixes sa[k - 1] and sa[k] (a word's end matches nothing) */
    lcp[0] = lcp[n] = 0;
    for (int32_t k = 1; k < n; k++) {
        int32_t a = sa[k - 1], b = sa[k], l = 0, most = depth;
        if (rest[a] < most) most = rest[a];
        if (rest[b] < most) most = rest[b];
        while (l < most && self->text[a + l] == self->text[b + l]) l++;
        lcp[k] = l;
    }
    /* weight[k]: the counts of the words of suffixes sa[0 .. k - 1] */
    weight[0] = 0;
    for (int32_t k = 0; k < n; k++) weight[k + 1] = weight[k] + self->counts[word_at((const uint32_t *)self->starts, self->nwords, (uint32_t)sa[k])];
    int32_t top = 0;
    stack_lcp[0] = stack_lb[0] = 0;
    for (int32_t k = 1; k <= n; k++) {
        int32_t l = lcp[k], lb = k - 1; /* lcp[n] is 0: every interval ends */
        while (l < stack_lcp[top]) {
            int32_t d = stack_lcp[top], from = stack_lb[top];
            top--;
            lb = from;
            if (d < 2 || d > self->maxlen || !valid(self->text, sa[from], d, classes)) continue;
            Candidate c = {(weight[k] - weight[from]) * d, sa[from], d, from, k - 1};
            if (add_candidate(cands, ncand, &cap, c) < 0) goto done;
        }
        if (l > stack_lcp[top]) {
            top++;
            stack_lcp[top] = l;
            stack_lb[top] = lb;
        }
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t p = sa[k], left = rest[p];
        int64_t count = weight[k + 1] - weight[k];
        if (left < 2 || left > self->maxlen || count < 2 || lcp[k] >= left || lcp[k + 1] >= left) continue;
        if (!valid(self->text, p, left, classes)) continue;
        Candidate c = {count * left, p, left, k, k};
        if (add_candidate(cands, ncand, &cap, c) < 0) goto done;
    }
    rc = 0;
done:
    free(lcp);
    free(weight);
    free(stack_lcp);
    free(stack_lb);
    return rc;
}

/* The lattice of every word, from the seeds' intervals: at each position its character,
 * then the seeds that start there, shortest first. */
static int seed_lattice(Core *self, const int32_t *sa, const Candidate *cands, int64_t ncand) {
    int32_t n = self->npos;
    int64_t total = n;
    for (int64_t i = 0; i < ncand; i++) total += cands[i].rb - cands[i].lb + 1;
    if (total > UINT32_MAX) {
        PyErr_SetString(PyExc_MemoryError, "the lattices would hold over 2^32 pieces");
        return -1;
    }
    uint32_t *off = alloc((size_t)n, sizeof(uint32_t)); /* where each position's pieces start, while they are laid */
    self->ecount = alloc((size_t)n, 1);
    self->wedge = alloc((size_t)self->nwords + 1, sizeof(int64_t));
    self->epiece = alloc((size_t)total, sizeof(int32_t));
    self->elen = alloc((size_t)total, 1);
    if (!off || !self->ecount || !self->wedge || !self->epiece || !self->elen) {
        free(off);
        return -1;
    }
    for (int32_t p = 0; p < n; p++) self->ecount[p] = 1;
    for (int64_t i = 0; i < ncand; i++)
        for (int32_t k = cands[i].lb; k <= cands[i].rb; k++) self->ecount[sa[k]]++;
    uint32_t at = 0;
    for (int32_t w = 0; w < self->nwords; w++) {
        self->wedge[w] = at;
        for (int32_t p = self->starts[w]; p < self->starts[w + 1]; p++) {
            off[p] = at;
            self->epiece[at] = self->text[p];
            self->elen[at] = 1;
            at += self->ecount[p];
            self->ecount[p] = 1;
        }
    }
    self->wedge[self->nwords] = at;
    for (int32_t len = 2; len <= self->maxlen; len++) {
        for (int64_t i = 0; i < ncand; i++) {
            if (cands[i].len != len) continue;
            for (int32_t k = cands[i].lb; k <= cands[i].rb; k++) {
                int32_t p = sa[k];
                self->epiece[off[p] + self->ecount[p]] = self->nchars + (int32_t)i;
                self->elen[off[p] + self->ecount[p]] = (uint8_t)len;
                self->ecount[p]++;
            }
        }
    }
    self->nedges = total;
    free(off);
    return 0;
}

static PyObject *Core_seed(Core *self, PyObject *args) {
    PyObject *classes_obj;
    long long seed_size;
    if (!PyArg_ParseTuple(args, "OL", &classes_obj, &seed_size)) return NULL;
    if (self->pool) {
        PyErr_SetString(PyExc_RuntimeError, "the pieces are seeded once");
        return NULL;
    }
    Py_buffer cv;
    if (get_buffer_of(classes_obj, &cv, 4, "classes", self->nchars, "one class per character is needed") < 0) return NULL;
    int32_t n = self->npos;
    uint8_t *rest = malloc((size_t)n);
    int32_t *sa = NULL;
    Candidate *cands = NULL;
    int64_t ncand = 0;
    PyObject *result = NULL;
    if (!rest) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t w = 0; w < self->nwords; w++)
        for (int32_t p = self->starts[w]; p < self->starts[w + 1]; p++)
            rest[p] = (uint8_t)(self->starts[w + 1] - p < 255 ? self->starts[w + 1] - p : 255);
    if (!(sa = suffix_order(self, self->maxlen + 1, rest))) goto done;
    if (find_candidates(self, sa, rest, cv.buf, &cands, &ncand) < 0) goto done;
    free(rest);
    rest = NULL;
    /* the best ``seed_size``, by frequency × length, then length, then code points */
    sort_text = self->text;
    sort_codepoint = self->codepoint;
    qsort(cands, (size_t)ncand, sizeof(Candidate), by_value);
    if (ncand > seed_size) ncand = seed_size < 0 ? 0 : seed_size;
    int32_t total = self->nchars + (int32_t)ncand;
    int64_t poolsize = self->nchars;
    for (int64_t i = 0; i < ncand; i++) poolsize += cands[i].len;
    self->poff = alloc((size_t)total, sizeof(int32_t));
    self->plen = alloc((size_t)total, 1);
    self->pool = alloc((size_t)poolsize, sizeof(int32_t));
    self->score = alloc((size_t)total, sizeof(double));
    self->before = alloc((size_t)total, sizeof(double));
    if (!self->poff || !self->plen || !self->pool || !self->score || !self->before) goto done;
    int64_t used = 0;
    for (int32_t c = 0; c < self->nchars; c++) {
        self->poff[c] = (int32_t)used;
        self->plen[c] = 1;
        self->pool[used++] = c;
        self->score[c] = (double)self->char_count[c];
    }
    for (int64_t i = 0; i < ncand; i++) {
        int32_t id = self->nchars + (int32_t)i;
        self->poff[id] = (int32_t)used;
        self->plen[id] = (uint8_t)cands[i].len;
        memcpy(self->pool + used, self->text + cands[i].start, (size_t)cands[i].len * sizeof(int32_t));
        used += cands[i].len;
        self->score[id] = (double)cands[i].value;
    }
    double sum = 0;
    for (int32_t i = 0; i < total; i++) sum += self->score[i];
    double logsum = log(sum);
    for (int32_t i = 0; i < total; i++) self->before[i] = self->score[i] = log(self->score[i]) - logsum;
    self->npieces = total;
    self->poolsize = used;
    if (seed_lattice(self, sa, cands, ncand) < 0) goto done;
    result = PyLong_FromLongLong(ncand);
done:
    free(sa);
    free(rest);
    free(cands);
    PyBuffer_Release(&cv);
    return result;
}

/* -- EM ---------------------------------------------------------------------------------- */

static int seeded(const Core *self) {
    if (self->pool) return 1;
    PyErr_SetString(PyExc_RuntimeError, "seed the pieces first");
    return 0;
}

/* off[q]: where the pieces at position q of word w start in epiece (q = 0 .. its length). */
static void word_offsets(const Core *self, int32_t w, int64_t *off) {
    int32_t s0 = self->starts[w], n = self->starts[w + 1] - s0;
    off[0] = self->wedge[w];
    for (int32_t q = 0; q < n; q++) off[q + 1] = off[q] + self->ecount[s0 + q];
}

/* Forward-backward over the words lo..hi: adds each piece's expected count to ``expected``
 * and returns the log-likelihood (each word's log Z times its count). Runs without the GIL. */
static double forward_backward(const Core *self, int32_t lo, int32_t hi, const double *prob, double *expected, double *fw,
                               double *bw, int32_t *fe, int32_t *be, int64_t *off) {
    double loglik = 0;
    int32_t L = self->maxlen;
    for (int32_t w = lo; w < hi; w++) {
        int32_t n = self->starts[w + 1] - self->starts[w];
        word_offsets(self, w, off);
        double count = (double)self->counts[w];
        for (int32_t q = 0; q <= n; q++) fw[q] = 0;
        fw[0] = 1;
        int32_t frame = 0;
        for (int32_t q = 0; q < n; q++) {
            while (fw[q] < TINY && fw[q] > 0) {
                for (int32_t j = q; j <= n && j <= q + L; j++) fw[j] = ldexp(fw[j], SCALE_BITS);
                frame -= SCALE_BITS;
            }
            fe[q] = frame;
            double a = fw[q];
            for (int64_t e = off[q]; e < off[q + 1]; e++) fw[q + self->elen[e]] += a * prob[self->epiece[e]];
        }
        fe[n] = frame;
        bw[n] = 1;
        be[n] = frame = 0;
        for (int32_t q = n - 1; q >= 0; q--) {
            double b = 0;
            for (int64_t e = off[q]; e < off[q + 1]; e++) b += prob[self->epiece[e]] * bw[q + self->elen[e]];
            bw[q] = b;
            be[q] = frame;
            while (bw[q] < TINY && bw[q] > 0) {
                frame -= SCALE_BITS;
                for (int32_t j = q; j <= n && j <= q + L; j++) {
                    bw[j] = ldexp(bw[j], SCALE_BITS);
                    be[j] = frame;
                }
            }
        }
        double z = fw[n];
        int32_t ze = fe[n];
        loglik += count * (log(z) + ze * LN2);
        double scale = count / z;
        for (int32_t q = 0; q < n; q++) {
            double a = fw[q] * scale;
            for (int64_t e = off[q]; e < off[q + 1]; e++) {
                int32_t end = q + self->elen[e];
                double m = a * prob[self->epiece[e]] * bw[end];
                int32_t k = fe[q] + be[end] - ze;
                expected[self->epiece[e]] += k ? ldexp(m, k) : m;
            }
        }
    }
    return loglik;
}

static PyObject *Core_e_step(Core *self, PyObject *args) {
    int lo, hi;
    if (!PyArg_ParseTuple(args, "ii", &lo, &hi)) return NULL;
    if (!seeded(self)) return NULL;
    if (lo < 0 || hi > self->nwords || lo > hi) {
        PyErr_SetString(PyExc_IndexError, "word range out of bounds");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)self->npieces * (Py_ssize_t)sizeof(double));
    if (!out) return NULL;
    double *expected = (double *)PyBytes_AS_STRING(out);
    memset(expected, 0, (size_t)self->npieces * sizeof(double));
    size_t m = (size_t)self->longest_word + 1;
    double *prob = malloc((size_t)self->npieces * sizeof(double)), *fw = malloc(m * sizeof(double)), *bw = malloc(m * sizeof(double));
    int32_t *fe = malloc(m * sizeof(int32_t)), *be = malloc(m * sizeof(int32_t));
    int64_t *off = malloc(m * sizeof(int64_t));
    double loglik = 0;
    int ok = prob && fw && bw && fe && be && off;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS;
        for (int32_t i = 0; i < self->npieces; i++) prob[i] = exp(self->score[i]);
        loglik = forward_backward(self, lo, hi, prob, expected, fw, bw, fe, be, off);
        Py_END_ALLOW_THREADS;
    }
    free(off);
    free(prob);
    free(fw);
    free(bw);
    free(fe);
    free(be);
    if (!ok) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    PyObject *result = Py_BuildValue("(dN)", loglik, out);
    return result;
}

/* New scores from the expected counts (the sum of ``parts``); drops the rare pieces and
 * returns how many. */
static PyObject *Core_m_step(Core *self, PyObject *args) {
    PyObject *parts;
    double threshold;
    if (!PyArg_ParseTuple(args, "Od", &parts, &threshold)) return NULL;
    if (!seeded(self)) return NULL;
    PyObject *seq = PySequence_Fast(parts, "parts must be a sequence of buffers");
    if (!seq) return NULL;
    double *expected = alloc((size_t)self->npieces, sizeof(double));
    int32_t *map = alloc((size_t)self->npieces, sizeof(int32_t));
    PyObject *result = NULL;
    if (!expected || !map) goto done;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
        Py_buffer v;
        PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
        if (get_buffer_of(item, &v, 8, "expected", self->npieces, "an expected count per piece is needed") < 0) goto done;
        const double *part = v.buf;
        for (int32_t i = 0; i < self->npieces; i++) expected[i] += part[i];
        PyBuffer_Release(&v);
    }
    double sum = 0;
    int32_t kept = 0;
    for (int32_t i = 0; i < self->npieces; i++) {
        if (expected[i] < threshold && i >= self->nchars) {
            map[i] = -1;
            continue;
        }
        if (expected[i] < threshold) expected[i] = threshold;
        sum += expected[i];
        map[i] = kept++;
    }
    double logsum = digamma(sum);
    for (int32_t i = 0; i < self->npieces; i++)
        if (map[i] >= 0) self->score[i] = digamma(expected[i]) - logsum;
    result = PyLong_FromLong(self->npieces - kept);
    compact(self, map, kept);
done:
    free(expected);
    free(map);
    Py_DECREF(seq);
    return result;
}

/* -- pruning ----------------------------------------------------------------------------- */

/* The best segmentation of piece i into other pieces (not itself): its score, and its
 * pieces in ``path`` (their number returned); -1 when there is none. */
static int32_t best_split(const Core *self, int32_t i, double *best, int32_t *from, int32_t *via, int32_t *path, double *out) {
    const int32_t *chars = self->pool + self->poff[i];
    int32_t n = self->plen[i];
    for (int32_t q = 0; q <= n; q++) from[q] = -1;
    best[0] = 0;
    from[0] = 0;
    for (int32_t q = 0; q < n; q++) {
        if (from[q] < 0) continue;
        int32_t node = 0;
        for (int32_t r = q; r < n; r++) {
            node = trie_child(self, node, chars[r]);
            if (node < 0) break;
            int32_t id = self->node_piece[node];
            if (id < 0 || id == i) continue;
            double s = best[q] + self->score[id];
            if (from[r + 1] < 0 || s > best[r + 1]) {
                best[r + 1] = s;
                from[r + 1] = q;
                via[r + 1] = id;
            }
        }
    }
    if (from[n] < 0) return -1;
    int32_t k = 0;
    for (int32_t q = n; q > 0; q = from[q]) path[k++] = via[q];
    for (int32_t a = 0, b = k - 1; a < b; a++, b--) {
        int32_t t = path[a];
        path[a] = path[b];
        path[b] = t;
    }
    *out = best[n];
    return k;
}

/* Viterbi over every word: each piece's count on the best paths; returns the tokens. */
static int64_t viterbi_counts(const Core *self, int64_t *freq) {
    size_t m = (size_t)self->longest_word + 1;
    double *best = malloc(m * sizeof(double));
    int32_t *from = malloc(m * sizeof(int32_t)), *via = malloc(m * sizeof(int32_t));
    int64_t *off = malloc(m * sizeof(int64_t)), tokens = -1;
    if (!best || !from || !via || !off) goto done;
    tokens = 0;
    for (int32_t w = 0; w < self->nwords; w++) {
        int32_t n = self->starts[w + 1] - self->starts[w];
        word_offsets(self, w, off);
        for (int32_t q = 1; q <= n; q++) from[q] = -1;
        best[0] = 0;
        for (int32_t q = 0; q < n; q++) {
            double b = best[q];
            for (int64_t e = off[q]; e < off[q + 1]; e++) {
                int32_t end = q + self->elen[e], id = self->epiece[e];
                double s = b + self->score[id];
                if (from[end] < 0 || s > best[end]) {
                    best[end] = s;
                    from[end] = q;
                    via[end] = id;
                }
            }
        }
        for (int32_t q = n; q > 0; q = from[q]) {
            freq[via[q]] += self->counts[w];
            tokens += self->counts[w];
        }
    }
done:
    free(best);
    free(from);
    free(via);
    free(off);
    return tokens;
}

static PyObject *Core_analyze(Core *self, PyObject *Py_UNUSED(ignored)) {
    if (!seeded(self)) return NULL;
    if (build_trie(self) < 0) return NULL;
    Py_ssize_t n = self->npieces;
    PyObject *freq_obj = PyBytes_FromStringAndSize(NULL, n * 8), *loss_obj = PyBytes_FromStringAndSize(NULL, n * 8);
    PyObject *kind_obj = PyBytes_FromStringAndSize(NULL, n);
    double best[257], split_score = 0;
    int32_t from[257], via[257], path[256];
    if (!freq_obj || !loss_obj || !kind_obj) goto fail;
    int64_t *freq = (int64_t *)PyBytes_AS_STRING(freq_obj);
    double *loss = (double *)PyBytes_AS_STRING(loss_obj);
    int8_t *kind = (int8_t *)PyBytes_AS_STRING(kind_obj);
    memset(freq, 0, (size_t)n * 8);
    int64_t tokens;
    Py_BEGIN_ALLOW_THREADS;
    tokens = viterbi_counts(self, freq);
    Py_END_ALLOW_THREADS;
    if (tokens < 0) {
        PyErr_NoMemory();
        goto fail;
    }
    double sum = 0;
    for (Py_ssize_t i = 0; i < n; i++) sum += (double)freq[i];
    double logsum = log(sum);
    for (int32_t i = 0; i < (int32_t)n; i++) {
        loss[i] = 0;
        if (i < self->nchars) {
            kind[i] = KEEP;
            continue;
        }
        int32_t k = best_split(self, i, best, from, via, path, &split_score);
        if (k < 0) {
            kind[i] = KEEP; /* nothing else spells it (only when a character is gone) */
        } else if (split_score > self->score[i]) {
            kind[i] = SPLIT;
        } else if (freq[i] == 0) {
            kind[i] = UNUSED;
        } else {
            double f = (double)freq[i];
            double logprob = log(f) - logsum, alt_logsum = log(sum + f * (k - 1)), alt = 0;
            for (int32_t j = 0; j < k; j++) alt += log((double)freq[path[j]] + f) - alt_logsum;
            loss[i] = f / sum * (logprob - alt);
            kind[i] = CANDIDATE;
        }
    }
    free_trie(self); /* the pieces change next: it would be built afresh */
    return Py_BuildValue("(LNNN)", (long long)tokens, freq_obj, loss_obj, kind_obj);
fail:
    free_trie(self);
    Py_XDECREF(freq_obj);
    Py_XDECREF(loss_obj);
    Py_XDECREF(kind_obj);
    return NULL;
}

/* Keep the pieces ``ids`` (ascending), in their order. */
static PyObject *Core_keep(Core *self, PyObject *arg) {
    if (!seeded(self)) return NULL;
    Py_buffer v;
    if (get_buffer(arg, &v, 4, "ids") < 0) return NULL;
    const int32_t *ids = v.buf;
    int32_t k = (int32_t)(v.len / 4);
    int32_t *map = alloc((size_t)self->npieces, sizeof(int32_t));
    if (!map) return PyBuffer_Release(&v), NULL;
    for (int32_t i = 0; i < self->npieces; i++) map[i] = -1;
    for (int32_t j = 0; j < k; j++) {
        if (ids[j] < 0 || ids[j] >= self->npieces || (j && ids[j] <= ids[j - 1])) {
            free(map);
            PyBuffer_Release(&v);
            PyErr_SetString(PyExc_ValueError, "ids must be pieces, ascending");
            return NULL;
        }
        map[ids[j]] = j;
    }
    for (int32_t c = 0; c < self->nchars; c++) {
        if (map[c] < 0) {
            free(map);
            PyBuffer_Release(&v);
            PyErr_SetString(PyExc_ValueError, "every character is kept");
            return NULL;
        }
    }
    compact(self, map, k);
    free(map);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

/* -- reading the state ------------------------------------------------------------------- */

static PyObject *Core_pieces(Core *self, PyObject *args) {
    PyObject *ids_obj = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &ids_obj)) return NULL;
    if (!seeded(self)) return NULL;
    Py_buffer v = {0};
    const int32_t *ids = NULL;
    Py_ssize_t k = self->npieces;
    if (ids_obj != Py_None) {
        if (get_buffer(ids_obj, &v, 4, "ids") < 0) return NULL;
        ids = v.buf;
        k = v.len / 4;
    }
    PyObject *out = PyList_New(k);
    for (Py_ssize_t j = 0; out && j < k; j++) {
        int32_t i = ids ? ids[j] : (int32_t)j;
        PyObject *s = (i >= 0 && i < self->npieces) ? piece_string(self, i) : NULL;
        if (!s) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such piece");
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, j, s);
    }
    if (ids) PyBuffer_Release(&v);
    return out;
}

static PyObject *Core_scores(Core *self, PyObject *Py_UNUSED(ignored)) {
    if (!seeded(self)) return NULL;
    return PyBytes_FromStringAndSize((const char *)self->score, (Py_ssize_t)self->npieces * 8);
}

static PyObject *Core_set_scores(Core *self, PyObject *arg) {
    if (!seeded(self)) return NULL;
    Py_buffer v;
    if (get_buffer_of(arg, &v, 8, "scores", self->npieces, "a score per piece is needed") < 0) return NULL;
    memcpy(self->score, v.buf, (size_t)v.len);
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

static PyObject *Core_mark(Core *self, PyObject *Py_UNUSED(ignored)) {
    if (!seeded(self)) return NULL;
    memcpy(self->before, self->score, (size_t)self->npieces * sizeof(double));
    Py_RETURN_NONE;
}

/* The ``k`` pieces whose score moved most since ``mark``: (piece, before, after). */
static PyObject *Core_changes(Core *self, PyObject *args) {
    int k;
    if (!PyArg_ParseTuple(args, "i", &k)) return NULL;
    if (!seeded(self)) return NULL;
    if (k <= 0) return PyList_New(0);
    int32_t *top = alloc((size_t)k + 1, sizeof(int32_t));
    if (!top) return NULL;
    int32_t n = 0;
    for (int32_t i = 0; i < self->npieces; i++) {
        double d = fabs(self->score[i] - self->before[i]);
        if (d == 0 || (n == k && d <= fabs(self->score[top[n - 1]] - self->before[top[n - 1]]))) continue;
        int32_t j = n < k ? n++ : n - 1;
        for (; j > 0 && d > fabs(self->score[top[j - 1]] - self->before[top[j - 1]]); j--) top[j] = top[j - 1];
        top[j] = i;
    }
    PyObject *out = PyList_New(n);
    for (int32_t j = 0; out && j < n; j++) {
        PyObject *s = piece_string(self, top[j]);
        PyObject *item = s ? Py_BuildValue("(Ndd)", s, self->before[top[j]], self->score[top[j]]) : NULL;
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, j, item);
    }
    free(top);
    return out;
}

static PyObject *Core_characters(Core *self, PyObject *Py_UNUSED(ignored)) {
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, self->codepoint, self->nchars);
}

static PyObject *get_chars(Core *self, void *Py_UNUSED(closure)) {
    int64_t total = 0;
    for (int32_t w = 0; w < self->nwords; w++) total += (int64_t)(self->starts[w + 1] - self->starts[w]) * self->counts[w];
    return PyLong_FromLongLong(total);
}

static PyMemberDef Core_members[] = {
    {"size", Py_T_INT, offsetof(Core, npieces), Py_READONLY, "pieces now"},
    {"characters_count", Py_T_INT, offsetof(Core, nchars), Py_READONLY, "characters of the corpus (the first pieces)"},
    {"words", Py_T_INT, offsetof(Core, nwords), Py_READONLY, "distinct words"},
    {"edges", Py_T_LONGLONG, offsetof(Core, nedges), Py_READONLY, "pieces in the lattices of all words"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"corpus_chars", (getter)get_chars, NULL, "characters of the corpus, each word times its count", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef Core_methods[] = {
    {"characters", (PyCFunction)Core_characters, METH_NOARGS, "the characters, in id order"},
    {"seed", (PyCFunction)Core_seed, METH_VARARGS, "the seed pieces"},
    {"e_step", (PyCFunction)Core_e_step, METH_VARARGS, "expected counts over words lo..hi"},
    {"m_step", (PyCFunction)Core_m_step, METH_VARARGS, "new scores; the rare pieces dropped"},
    {"analyze", (PyCFunction)Core_analyze, METH_NOARGS, "Viterbi counts, losses and kinds"},
    {"keep", (PyCFunction)Core_keep, METH_O, "keep these pieces"},
    {"pieces", (PyCFunction)Core_pieces, METH_VARARGS, "the pieces as strings"},
    {"scores", (PyCFunction)Core_scores, METH_NOARGS, "the scores as doubles"},
    {"set_scores", (PyCFunction)Core_set_scores, METH_O, "replace the scores"},
    {"mark", (PyCFunction)Core_mark, METH_NOARGS, "remember the scores"},
    {"changes", (PyCFunction)Core_changes, METH_VARARGS, "the scores that moved most since mark"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.train.unigram._unigram_core.Core",
    .tp_doc = "The Unigram trainer's state: words, pieces, trie, lattices.",
    CORE_TYPE_SLOTS,
    .tp_getset = Core_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_unigram_core", "The Unigram trainer's compiled core.", -1, NULL, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__unigram_core(void) {
    return module_with_core(&module, &CoreType);
}
