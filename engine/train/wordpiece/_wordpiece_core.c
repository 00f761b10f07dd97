/* The WordPiece trainer's state and merge loop, compiled.
 *
 * engine/train/wordpiece/trainer.py wraps this in the public ``WordPieceTrainer``, and
 * engine/train/wordpiece/rule.py states the rule. Here, the seed's structures as flat C data:
 *
 * - tokens: every distinct word laid out once, one symbol per position, with the seed's
 *   prev/next links (-1 at a word's edges) and the word each position lies in (its count is
 *   the position's weight). A merged token stays at its leftmost position; the positions it
 *   swallowed hold -1.
 * - vocabulary: each token id's UTF-8 bytes, a hash table from bytes to id (a merge can make
 *   a token that is already there), ``symbol_count`` (count(token) in the corpus as
 *   segmented now), and the live pairs each token is the left or the right part of (lists
 *   kept lazily: a pair whose count fell to 0 is dropped when a list is next walked).
 * - pairs: one record per pair ever seen, holding its pair_counter count and its
 *   pair_positions list (append-only; a position is checked when used; the list goes when
 *   the pair's count falls to 0). A pair can come back: a merge that makes a token already
 *   there gains the pairs it made before. Records never move (ids into ``pairs`` stay valid).
 * - a hash table from (left, right) token ids to the pair's record.
 * - the live pairs, in a dense list (a pair knows its place in it): what a fresh heap holds.
 * - the lazy max-heap of scores. A merge of (a, b) changes count(a), count(b) and
 *   count(new), so the score of every pair holding one of them moves (most of them up): each
 *   such pair gets a fresh entry holding the counts it was scored with, and an entry whose
 *   counts are no longer its pair's is dropped when it reaches the top (a stale pop). Once
 *   the heap is over three times the live pairs (and 4,096 more), it is built afresh from
 *   them.
 *
 * Scores, count(a b) / (count(a) * count(b)), are compared exactly: an entry keeps its score
 * as a double (from each symbol's count and its reciprocal, kept beside it: no division a
 * push), which settles every comparison of two scores that are not nearly equal, and the
 * rest cross-multiply the counts in 192-bit arithmetic. Ties go to the larger count(a b),
 * then to the greater (a, b) by UTF-8 bytes (memcmp); entries of one pair, to the smaller
 * count(a), then count(b). That order is total, so the heap pops its entries in the same
 * order whatever order they were pushed in. A detailed step writes its events as rows of
 * int64 (engine/train/events.py reads them); plain runs write none.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_bytes_hash.h"
#include "_core_module.h"
#include "_grow.h"
#include "_pair_hash.h"
#include "_positions.h"
#include "_step_events.h"
#include "_token_bytes.h"

#define PREFIX_LEN 2  /* "##": a token right of a pair always continues a word, so starts with it */
#define REQUEUE_FACTOR 3
#define REQUEUE_SLACK 4096

/* -- exact scores ------------------------------------------------------------------------ */

/* x * y exactly, in two 64-bit halves: the compiler's 128-bit integers where it has them
 * (gcc, clang), else four 32-bit products (MSVC). */
typedef struct {
    uint64_t hi, lo;
} Wide;

static inline Wide mul_wide(uint64_t x, uint64_t y) {
#if defined(__SIZEOF_INT128__)
    __uint128_t p = (__uint128_t)x * y;
    return (Wide){(uint64_t)(p >> 64), (uint64_t)p};
#else
    uint64_t xl = x & 0xffffffffu, xh = x >> 32, yl = y & 0xffffffffu, yh = y >> 32;
    uint64_t ll = xl * yl, lh = xl * yh, hl = xh * yl, hh = xh * yh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return (Wide){hh + (lh >> 32) + (hl >> 32) + (mid >> 32), (mid << 32) | (ll & 0xffffffffu)};
#endif
}

/* x * y * z exactly (each below 2^63, so the product is below 2^189): w[2] is the top word. */
static inline void mul3(uint64_t x, uint64_t y, uint64_t z, uint64_t w[3]) {
    Wide yz = mul_wide(y, z), lo = mul_wide(x, yz.lo), hi = mul_wide(x, yz.hi);
    w[0] = lo.lo;
    w[1] = lo.hi + hi.lo;
    w[2] = hi.hi + (w[1] < lo.hi);
}

/* The sign of c1 / (l1 * r1) - c2 / (l2 * r2): c1 * l2 * r2 against c2 * l1 * r1. */
static int cmp_exact(int64_t c1, int64_t l1, int64_t r1, int64_t c2, int64_t l2, int64_t r2) {
    uint64_t x[3], y[3];
    mul3((uint64_t)c1, (uint64_t)l2, (uint64_t)r2, x);
    mul3((uint64_t)c2, (uint64_t)l1, (uint64_t)r1, y);
    for (int i = 2; i >= 0; i--)
        if (x[i] != y[i]) return x[i] > y[i] ? 1 : -1;
    return 0;
}

/* A score as a double, count * (1 / left) * (1 / right) with the reciprocals kept per token,
 * is within a few units in the last place (under 8 * 2^-53) of the fraction: two that differ
 * by more than this factor order their fractions the same way. */
#define CLEARLY (1 + 1e-12)

/* -- structures --------------------------------------------------------------------------- */

typedef struct {
    int32_t *v;
    int32_t n, cap;
} IdList;

/* A token's count in the corpus as segmented now, and its reciprocal: a push reads both. */
typedef struct {
    int64_t count;
    double inverse;
} Symbol;

/* A pair's record; its pair_positions list is kept apart, in ``positions``: a merge reads
 * the records of hundreds of pairs, and the lists of a few. */
typedef struct {
    int32_t a, b;
    int64_t count;        /* pair_counter */
    int32_t noted;        /* the merge that last noted its count before changing it */
    int32_t queued;       /* the merge that last pushed it */
    int32_t listed;       /* LEFT: in left_of[a]; RIGHT: in right_of[b] */
    int32_t live_at;      /* its place in ``live`` while its count is above 0 */
} PairRec;
_Static_assert(sizeof(PairRec) == 32, "a pair record is 32 bytes");

#define LEFT 1
#define RIGHT 2

/* A heap entry: its score, which settles most comparisons, and its pair, in the heap; the
 * counts it was scored with, for the rest and to tell whether it is stale, in ``pool``
 * (at ``slot``). The pool is emptied when the heap is built afresh, and compacted when
 * most of it belongs to entries popped since. */
typedef struct {
    double score;
    int32_t pair, slot;
} Entry;

typedef struct {
    int64_t count, left, right;  /* count(a b), count(a), count(b) when pushed */
} Scored;

typedef struct {
    PyObject_HEAD
    int32_t npos, nwords;
    int32_t *tokens;      /* the token at each position; -1 once merged into the one at its left */
    int32_t *prev, *next;
    int32_t *word;        /* the word each position lies in */
    int32_t *starts;      /* each word's first position, then npos */
    int64_t *counts;      /* each word's count */
    Token *vocab;         /* each token id's bytes */
    Symbol *symbol;       /* symbol_count */
    IdList *left_of, *right_of;  /* the pairs each token is the left, the right part of */
    int32_t ntok, tokcap, vocab_size;
    int32_t *tslots;      /* hash table of token bytes: id, -1 free */
    uint32_t tmask;
    PairRec *pairs;
    IdList *positions;    /* each pair's pair_positions */
    int32_t npairs, paircap;
    Slot *slots;          /* hash table of (a, b) (_pair_records.h) */
    uint32_t hmask, hused;
    Entry *heap;
    int32_t heapn, heapcap;
    Scored *pool;
    int32_t pooln, poolcap;
    int32_t merges;       /* merges done: also the mark of the current one in ``noted``, ``queued`` */
    IdList live;          /* the pairs with a count above 0: pair_counter's keys */
    int64_t stored;       /* positions held in the lists of live pairs */
    int64_t in_corpus;    /* tokens in the corpus as segmented now */
    int64_t chars;        /* the words' characters times their counts */
    Touch *touch;         /* the pairs this merge changed, each with its count before */
    int32_t ntouch, touchcap;
    Events events;        /* a detailed step's */
} Core;

/* -- id lists ------------------------------------------------------------------------------ */

static inline int list_add(IdList *l, int32_t x) {
    if (l->n == l->cap && grow((void **)&l->v, &l->cap, (int64_t)l->n + 1, sizeof(int32_t))) return -1;
    l->v[l->n++] = x;
    return 0;
}

static void list_free(IdList *l) {
    free(l->v);
    *l = (IdList){0};
}

/* -- pair records and their hash table (_pair_records.h) --------------------------------- */

/* What the shared pair code asks of this core: each record's pair_positions list is kept
 * beside it, in ``positions``; a record notes the merge that last noted its count. */
static int more_pairs(Core *c) {
    int32_t cap = c->paircap;
    if (grow((void **)&c->pairs, &cap, (int64_t)c->npairs + 1, sizeof(PairRec))) return -1;
    IdList *positions = realloc(c->positions, (size_t)cap * sizeof(IdList));
    if (!positions) {  /* the records' larger array stays, unused */
        PyErr_NoMemory();
        return -1;
    }
    memset(positions + c->paircap, 0, (size_t)(cap - c->paircap) * sizeof(IdList));
    c->positions = positions;
    c->paircap = cap;
    return 0;
}

static inline int change_noted(const Core *c, int32_t p) {
    return c->pairs[p].noted == c->merges;
}

static inline void note_change(Core *c, int32_t p) {
    c->pairs[p].noted = c->merges;
}

static inline int32_t new_record(Core *c) {
    return c->npairs == c->paircap && more_pairs(c) ? -1 : c->npairs++;
}

static inline int add_position(Core *c, int32_t p, int64_t at) {
    return list_add(&c->positions[p], (int32_t)at);
}

#include "_pair_records.h"

/* A pair's count rose above 0, or fell to 0. */
static int live_add(Core *c, int32_t p) {
    c->pairs[p].live_at = c->live.n;
    return list_add(&c->live, p);
}

static void live_remove(Core *c, int32_t p) {
    int32_t at = c->pairs[p].live_at, last = c->live.v[--c->live.n];
    c->live.v[at] = last;
    c->pairs[last].live_at = at;
}

/* Put a live pair on the lists of its two tokens, where it is not already. */
static int list_pair(Core *c, int32_t p) {
    PairRec *r = &c->pairs[p];
    if (!(r->listed & LEFT)) {
        if (list_add(&c->left_of[r->a], p)) return -1;
        r->listed |= LEFT;
    }
    if (!(r->listed & RIGHT)) {
        if (list_add(&c->right_of[r->b], p)) return -1;
        r->listed |= RIGHT;
    }
    return 0;
}

/* -- the vocabulary ----------------------------------------------------------------------- */

static inline int token_equals(const Token *t, const uint8_t *data, int32_t len) {
    return t->len == len && memcmp(t->data, data, (size_t)len) == 0;
}

/* The slot of these bytes in the token table, or the free slot where they would go. */
static uint32_t token_slot(const Core *c, const uint8_t *data, int32_t len) {
    uint32_t i = (uint32_t)bytes_hash(data, (size_t)len) & c->tmask;
    for (;; i = (i + 1) & c->tmask) {
        int32_t t = c->tslots[i];
        if (t < 0 || token_equals(&c->vocab[t], data, len)) return i;
    }
}

static int32_t token_find(const Core *c, const uint8_t *data, int32_t len) {
    return c->tslots[token_slot(c, data, len)];
}

static int token_rehash(Core *c, uint32_t size) {
    int32_t *slots = free_slots(size);
    if (!slots) return -1;
    free(c->tslots);
    c->tslots = slots;
    c->tmask = size - 1;
    for (int32_t t = 0; t < c->ntok; t++) slots[token_slot(c, c->vocab[t].data, c->vocab[t].len)] = t;
    return 0;
}

/* Give a new token (its bytes, which the core takes over, and are freed on failure) the
 * next id; -1 with an exception set. */
static int32_t token_add(Core *c, uint8_t *data, int32_t len) {
    if (c->ntok == c->tokcap) {
        int32_t cap = c->tokcap ? (c->tokcap > INT32_MAX / 2 ? INT32_MAX : 2 * c->tokcap) : 256;
        Token *vocab = realloc(c->vocab, (size_t)cap * sizeof(Token));
        if (vocab) c->vocab = vocab;
        Symbol *symbol = vocab ? realloc(c->symbol, (size_t)cap * sizeof(Symbol)) : NULL;
        if (symbol) c->symbol = symbol;
        IdList *left = symbol ? realloc(c->left_of, (size_t)cap * sizeof(IdList)) : NULL;
        if (left) c->left_of = left;
        IdList *right = left ? realloc(c->right_of, (size_t)cap * sizeof(IdList)) : NULL;
        if (!right || c->ntok == cap) {  /* the arrays that did grow stay valid, at their old size */
            free(data);
            PyErr_NoMemory();
            return -1;
        }
        c->right_of = right;
        c->tokcap = cap;
    }
    if ((uint32_t)(c->ntok + 1) * 2 > c->tmask + 1 && token_rehash(c, (c->tmask + 1) * 2)) {
        free(data);
        return -1;
    }
    int32_t t = c->ntok++;
    c->vocab[t] = (Token){data, len};
    c->symbol[t] = (Symbol){0, 0};
    c->left_of[t] = c->right_of[t] = (IdList){0};
    c->tslots[token_slot(c, data, len)] = t;
    return t;
}

/* -- the heap ------------------------------------------------------------------------------- */

/* A symbol's count changed: its reciprocal too. */
static inline void set_symbol(Core *c, int32_t t, int64_t count) {
    c->symbol[t] = (Symbol){count, count ? 1.0 / (double)count : 0};
}

/* Does the entry still hold its pair's counts? */
static inline int current(const Core *c, const Entry *e) {
    const PairRec *r = &c->pairs[e->pair];
    const Scored *k = &c->pool[e->slot];
    return r->count == k->count && c->symbol[r->a].count == k->left && c->symbol[r->b].count == k->right;
}

/* The sign of score(e) - score(f), exactly. */
static inline int cmp_score(const Core *c, const Entry *e, const Entry *f) {
    if (e->score > f->score * CLEARLY) return 1;
    if (f->score > e->score * CLEARLY) return -1;
    const Scored *x = &c->pool[e->slot], *y = &c->pool[f->slot];
    return cmp_exact(x->count, x->left, x->right, y->count, y->left, y->right);
}

/* Does entry e come off the heap before f: the rule's order (a higher score, a larger
 * count(a b), the greater (a, b) by bytes), then, between entries of one pair, the smaller
 * count(a) and count(b). */
static int before_tied(const Core *c, const Entry *e, const Entry *f) {
    int r = cmp_score(c, e, f);
    if (r) return r > 0;
    const Scored *x = &c->pool[e->slot], *y = &c->pool[f->slot];
    if (x->count != y->count) return x->count > y->count;
    if (e->pair != f->pair) {
        const PairRec *p = &c->pairs[e->pair], *q = &c->pairs[f->pair];
        r = cmp_token(c->vocab, p->a, q->a);
        return (r ? r : cmp_token(c->vocab, p->b, q->b)) > 0;
    }
    if (x->left != y->left) return x->left < y->left;
    return x->right < y->right;
}

static inline int before(const Core *c, const Entry *e, const Entry *f) {
    if (e->score > f->score * CLEARLY) return 1;
    if (f->score > e->score * CLEARLY) return 0;
    return before_tied(c, e, f);
}

#include "_lazy_heap.h"

/* Keep only the counts of the entries on the heap, in a pool of the same room. */
static int pool_compact(Core *c) {
    Scored *pool = malloc((size_t)c->poolcap * sizeof(Scored));
    if (!pool) {
        PyErr_NoMemory();
        return -1;
    }
    for (int32_t i = 0; i < c->heapn; i++) {
        pool[i] = c->pool[c->heap[i].slot];
        c->heap[i].slot = i;
    }
    free(c->pool);
    c->pool = pool;
    c->pooln = c->heapn;
    return 0;
}

/* A fresh entry for live pair ``p``, scored with the counts now; -1 on error. */
static inline int32_t add_scored(Core *c, int32_t p, Entry *e) {
    if (c->pooln == c->poolcap &&
        (c->pooln > 2 * (int64_t)c->heapn + 1024 ? pool_compact(c)
                                                  : grow((void **)&c->pool, &c->poolcap, (int64_t)c->pooln + 1, sizeof(Scored))))
        return -1;
    const PairRec *r = &c->pairs[p];
    Symbol x = c->symbol[r->a], y = c->symbol[r->b];
    c->pool[c->pooln] = (Scored){r->count, x.count, y.count};
    *e = (Entry){(double)r->count * x.inverse * y.inverse, p, c->pooln};
    return c->pooln++;
}

/* A fresh entry for live pair ``p`` on the heap. */
static int heap_push(Core *c, int32_t p) {
    Entry e;
    return add_scored(c, p, &e) < 0 ? -1 : heap_add(c, e);
}

/* A fresh heap: one current entry for every live pair. */
static int requeue(Core *c) {
    c->heapn = c->pooln = 0;
    if (grow((void **)&c->heap, &c->heapcap, c->live.n, sizeof(Entry)) ||
        grow((void **)&c->pool, &c->poolcap, c->live.n, sizeof(Scored)))
        return -1;
    for (int32_t i = 0; i < c->live.n; i++) add_scored(c, c->live.v[i], &c->heap[c->heapn++]);  /* room made */
    heapify(c);
    return 0;
}

/* -- construction --------------------------------------------------------------------------- */

static void Core_dealloc(Core *c) {
    free(c->tokens);
    free(c->prev);
    free(c->next);
    free(c->word);
    free(c->starts);
    free(c->counts);
    for (int32_t t = 0; t < c->ntok; t++) {
        free(c->vocab[t].data);
        list_free(&c->left_of[t]);
        list_free(&c->right_of[t]);
    }
    free(c->vocab);
    free(c->symbol);
    free(c->left_of);
    free(c->right_of);
    free(c->tslots);
    for (int32_t p = 0; p < c->npairs; p++) list_free(&c->positions[p]);
    free(c->positions);
    free(c->pairs);
    free(c->slots);
    free(c->heap);
    free(c->pool);
    list_free(&c->live);
    free(c->touch);
    events_free(&c->events);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* The bytes of the UTF-8 character starting with byte ``lead`` (the text is valid UTF-8:
 * Python encoded it). */
static inline int char_len(uint8_t lead) {
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/* Check the words' buffers: ``ends`` and ``counts`` int64, one each per word, the ends in
 * characters, going up to the text's last. Returns the number of words, -1 on error. */
static Py_ssize_t check_words(const Py_buffer *text, const Py_buffer *ends, const Py_buffer *counts) {
    Py_ssize_t nw = ends->len / (Py_ssize_t)sizeof(int64_t);
    if (ends->len % (Py_ssize_t)sizeof(int64_t) || (counts && counts->len != ends->len)) {
        PyErr_SetString(PyExc_ValueError, "ends and counts must be int64, one each per word");
        return -1;
    }
    const int64_t *end = ends->buf;
    int64_t chars = 0;
    Py_ssize_t i = 0;
    for (; i < text->len; i += char_len(((const uint8_t *)text->buf)[i])) chars++;
    if (i != text->len) {
        PyErr_SetString(PyExc_ValueError, "the text must be UTF-8 (it ends inside a character)");
        return -1;
    }
    for (Py_ssize_t w = 0; w < nw; w++)
        if (end[w] < (w ? end[w - 1] : 0) || end[w] > chars) {
            PyErr_SetString(PyExc_ValueError, "word ends must not go back or past the text");
            return -1;
        }
    if ((nw ? end[nw - 1] : 0) != chars) {
        PyErr_SetString(PyExc_ValueError, "the last word must end with the text");
        return -1;
    }
    if (chars >= INT32_MAX || nw >= INT32_MAX) {
        PyErr_SetString(PyExc_MemoryError, "too many characters or words to lay out (over 2^31)");
        return -1;
    }
    return nw;
}

/* The id of the symbol of the character at ``s`` (n bytes): itself at a word's start, else
 * "##" and itself. ``ascii`` remembers the ids of ASCII ones (first: 0-127, continuing:
 * 128-255). -1 with ValueError if it is not a base token. */
static int32_t symbol_id(const Core *c, const uint8_t *s, int n, int first, int32_t *ascii) {
    int32_t *known = n == 1 ? &ascii[(first ? 0 : 128) + s[0]] : NULL;
    if (known && *known >= 0) return *known;
    uint8_t buf[PREFIX_LEN + 4] = {'#', '#'};
    memcpy(buf + PREFIX_LEN, s, (size_t)n);
    int32_t t = first ? token_find(c, s, n) : token_find(c, buf, n + PREFIX_LEN);
    if (t < 0) PyErr_SetString(PyExc_ValueError, "a word's symbol is not among the base tokens");
    if (known) *known = t;
    return t;
}

/* Lay out the words: each character a symbol at its position, linked to its neighbours in
 * the word; count the symbols and the pairs, and record where each pair starts. */
static int lay_out(Core *c, const uint8_t *s, const int64_t *end, const int64_t *count, Py_ssize_t nw) {
    int32_t n = (int32_t)(nw ? end[nw - 1] : 0);
    c->npos = n;
    c->nwords = (int32_t)nw;
    c->tokens = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    c->prev = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    c->next = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    c->word = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    c->starts = malloc((size_t)(nw + 1) * sizeof(int32_t));
    c->counts = malloc((size_t)(nw ? nw : 1) * sizeof(int64_t));
    if (!c->tokens || !c->prev || !c->next || !c->word || !c->starts || !c->counts) {
        PyErr_NoMemory();
        return -1;
    }
    if (rehash(c, 1 << 10)) return -1;
    int32_t ascii[256];
    memset(ascii, 0xff, sizeof(ascii));
    int32_t pos = 0;
    for (Py_ssize_t w = 0; w < nw; w++) {
        int64_t k = count[w];
        if (k <= 0) {
            PyErr_SetString(PyExc_ValueError, "word counts must be positive");
            return -1;
        }
        int64_t chars = end[w] - (w ? end[w - 1] : 0);
        if (chars && k > (INT64_MAX - c->chars) / chars) {  /* every count then fits int64 */
            PyErr_SetString(PyExc_OverflowError, "the words' counts are too large: over 2^63 characters in all");
            return -1;
        }
        c->counts[w] = k;
        c->starts[w] = pos;
        c->chars += chars * k;
        for (int32_t first = pos; pos < end[w]; pos++) {
            int len = char_len(*s);
            int32_t t = symbol_id(c, s, len, pos == first, ascii);
            if (t < 0) return -1;
            s += len;
            c->tokens[pos] = t;
            c->word[pos] = (int32_t)w;
            c->prev[pos] = pos == first ? -1 : pos - 1;
            c->next[pos] = pos + 1 == end[w] ? -1 : pos + 1;
            c->symbol[t].count += k;
            if (pos > first) {
                int32_t p = get_pair(c, c->tokens[pos - 1], t);
                if (p < 0 || list_add(&c->positions[p], pos - 1)) return -1;
                c->pairs[p].count += k;
                c->stored++;
            }
        }
    }
    c->starts[nw] = pos;
    c->in_corpus = c->chars;
    for (int32_t t = 0; t < c->ntok; t++) set_symbol(c, t, c->symbol[t].count);
    for (int32_t p = 0; p < c->npairs; p++)
        if (list_pair(c, p) || live_add(c, p)) return -1;
    return 0;
}

/* Core(text, ends, counts, base_tokens, vocab_size): lay out the words (``text`` their
 * UTF-8 one after another, each ending at ``ends``, in characters, with its count in
 * ``counts``: int64 buffers), numbering their symbols as ``base_tokens`` (the ids before
 * any merge, as bytes) do, count their pairs and queue them all. Merges stop once the
 * vocabulary holds ``vocab_size`` tokens. */
static int Core_init(Core *c, PyObject *args, PyObject *Py_UNUSED(kw)) {
    Py_buffer text, ends, counts;
    PyObject *base;
    int vocab_size;
    if (!PyArg_ParseTuple(args, "y*y*y*O!i", &text, &ends, &counts, &PyList_Type, &base, &vocab_size)) return -1;
    int r = -1;
    Py_ssize_t nw = check_words(&text, &ends, &counts);
    if (nw < 0) goto done;
    if (c->tslots) {
        PyErr_SetString(PyExc_RuntimeError, "a Core is initialized once");
        goto done;
    }
    c->vocab_size = vocab_size;
    if (token_rehash(c, 1 << 10)) goto done;
    for (Py_ssize_t t = 0; t < PyList_GET_SIZE(base); t++) {
        Token tok;
        if (base_token(PyList_GET_ITEM(base, t), &tok)) goto done;
        if (token_find(c, tok.data, tok.len) >= 0) {
            PyErr_SetString(PyExc_ValueError, "a base token is given twice");
            goto done;
        }
        uint8_t *data = joined_bytes(&tok, NULL, 0);  /* a copy the core owns */
        if (!data || token_add(c, data, tok.len) < 0) goto done;
    }
    if (lay_out(c, text.buf, ends.buf, counts.buf, nw)) goto done;
    r = requeue(c);
done:
    PyBuffer_Release(&text);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&counts);
    return r;
}

/* first_words(text, ends) -> [word index, ...]: the words in which a symbol is first seen
 * (the arguments as Core's). Their alphabet is the corpus's. */
static PyObject *first_words(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer text, ends;
    if (!PyArg_ParseTuple(args, "y*y*", &text, &ends)) return NULL;
    PyObject *out = NULL;
    uint64_t *seen = NULL;
    Py_ssize_t nw = check_words(&text, &ends, NULL);
    if (nw < 0) goto done;
    seen = calloc(2 * 0x110000 / 64, sizeof(uint64_t));  /* a bit per code point, first or not */
    out = PyList_New(0);
    if (!seen || !out) {
        if (!seen) PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    const uint8_t *s = text.buf;
    const int64_t *end = ends.buf;
    for (Py_ssize_t w = 0, pos = 0; w < nw; w++) {
        int fresh = 0;
        for (int64_t first = pos; pos < end[w]; pos++) {
            int len = char_len(*s);
            uint32_t cp = len == 1 ? s[0] : s[0] & (0x3Fu >> (len - 1));
            for (int i = 1; i < len; i++) cp = cp << 6 | (s[i] & 0x3Fu);
            s += len;
            uint32_t bit = (pos == first ? 0 : 0x110000) + (cp < 0x110000 ? cp : 0x10FFFF);
            if (!(seen[bit / 64] >> (bit % 64) & 1)) {
                seen[bit / 64] |= 1ull << (bit % 64);
                fresh = 1;
            }
        }
        if (fresh && append_new(out, PyLong_FromSsize_t(w))) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    free(seen);
    PyBuffer_Release(&text);
    PyBuffer_Release(&ends);
    return out;
}

/* -- merging -------------------------------------------------------------------------------- */

/* Push a fresh entry for pair ``p`` if it is live and not pushed yet in this merge. */
static int requeue_pair(Core *c, int32_t p) {
    PairRec *r = &c->pairs[p];
    if (r->queued == c->merges || r->count <= 0) return 0;
    r->queued = c->merges;
    return heap_push(c, p) ? -1 : event_push(&c->events, r->a, r->b, r->count);
}

/* Push the live pairs of a token list (side LEFT or RIGHT), dropping the dead ones. */
static int requeue_list(Core *c, IdList *l, int side) {
    for (int32_t i = 0; i < l->n;) {
        int32_t p = l->v[i];
        if (c->pairs[p].count <= 0) {
            c->pairs[p].listed &= ~side;
            l->v[i] = l->v[--l->n];
            continue;
        }
        if (requeue_pair(c, p)) return -1;
        i++;
    }
    return 0;
}

/* The new token of merging (a, b): a and b without its "##", an id already there or the
 * next one; -1 on error. */
static int32_t joined(Core *c, int32_t a, int32_t b) {
    Token x = c->vocab[a], y = c->vocab[b];
    int32_t tail = y.len > PREFIX_LEN ? y.len - PREFIX_LEN : 0, len = x.len + tail;
    uint8_t *data = joined_bytes(&x, y.data + (y.len - tail), tail);
    if (!data) return -1;
    int32_t t = token_find(c, data, len);
    if (t >= 0) {  /* made before by another route: the same symbol */
        free(data);
        return t;
    }
    return token_add(c, data, len);
}

/* Merge the winner's pair (record m) everywhere, left to right, into token ``tok``, apply
 * the pair- and symbol-count changes, and push every live pair whose score moved: those
 * holding a, b or tok. */
static int merge(Core *c, int32_t m, int32_t tok) {
    int32_t a = c->pairs[m].a, b = c->pairs[m].b;
    IdList places = c->positions[m];
    c->positions[m] = (IdList){0};
    c->pairs[m].count = 0;
    live_remove(c, m);
    c->stored -= places.n;
    c->ntouch = 0;
    if (a == b) qsort(places.v, (size_t)places.n, sizeof(int32_t), cmp_pos);  /* a a a: leftmost first */
    int32_t *tokens = c->tokens, *prev = c->prev, *next = c->next;
    int64_t merged = 0;
    for (int32_t i = 0; i < places.n; i++) {
        int32_t p = places.v[i], q = next[p];
        if (tokens[p] != a || q < 0 || tokens[q] != b) continue;  /* merged away since it was recorded */
        int64_t w = c->counts[c->word[p]];
        int32_t o = prev[p], r = next[q];
        if (o >= 0 && (change(c, m, tokens[o], a, -w, 0, -1) || change(c, m, tokens[o], tok, w, 0, o))) goto fail;
        if (r >= 0) {
            if (change(c, m, b, tokens[r], -w, 1, -1) || change(c, m, tok, tokens[r], w, 1, p)) goto fail;
            prev[r] = p;
        }
        tokens[p] = tok;
        tokens[q] = -1;
        next[p] = r;
        merged += w;
    }
    list_free(&places);
    set_symbol(c, a, c->symbol[a].count - merged);
    set_symbol(c, b, c->symbol[b].count - merged);
    set_symbol(c, tok, c->symbol[tok].count + merged);
    c->in_corpus -= merged;
    for (int32_t i = 0; i < c->ntouch; i++) {
        Touch t = c->touch[i];
        PairRec *r = &c->pairs[t.pair];
        if (r->count > 0) {
            if ((t.before <= 0 && live_add(c, t.pair)) || list_pair(c, t.pair)) return -1;
        } else {  /* gone: forget its positions (its heap entries are dropped when they surface) */
            if (t.before > 0) live_remove(c, t.pair);
            c->stored -= c->positions[t.pair].n;
            list_free(&c->positions[t.pair]);
        }
        if (event_change(&c->events, r->a, r->b, &t, r->count)) return -1;
    }
    for (int32_t i = 0; i < c->ntouch; i++)
        if (requeue_pair(c, c->touch[i].pair)) return -1;
    int32_t moved[3] = {a, b, tok};
    for (int k = 0; k < 3; k++)
        if (requeue_list(c, &c->left_of[moved[k]], LEFT) || requeue_list(c, &c->right_of[moved[k]], RIGHT)) return -1;
    if (c->heapn > REQUEUE_FACTOR * (int64_t)c->live.n + REQUEUE_SLACK) return requeue(c);  /* mostly stale */
    return 0;
fail:
    list_free(&places);
    return -1;
}

/* Pop the winner: drop stale entries until the top is current. 0 with the winner's entry
 * and counts, 1 when no pair is left, -1 on error. */
static int select_pair(Core *c, Entry *win, Scored *counts) {
    while (c->heapn) {
        Entry top = heap_pop(c);
        if (current(c, &top)) {
            *win = top;
            *counts = c->pool[top.slot];
            return 0;
        }
        const PairRec *r = &c->pairs[top.pair];
        if (event_stale(&c->events, r->a, r->b, c->pool[top.slot].count, r->count)) return -1;
    }
    return 1;
}

/* One merge: select, make the token, merge. 0 done, 1 no pair left, -1 on error; the
 * winner's pair, count and token in ``pair``, ``count``, ``tok``. */
static int merge_next(Core *c, int32_t *pair, int64_t *count, int32_t *tok) {
    Entry win;
    Scored counts;
    int r = select_pair(c, &win, &counts);
    if (r) return r;
    c->merges++;
    *pair = win.pair;
    *count = counts.count;
    *tok = joined(c, c->pairs[win.pair].a, c->pairs[win.pair].b);
    return *tok < 0 || merge(c, win.pair, *tok) ? -1 : 0;
}

/* Up to ``limit`` other current pairs with the winner's score still queued, in the rule's
 * order (a pair pushed twice with the same counts, once). */
static PyObject *ties(Core *c, const Entry *win, int limit) {
    PyObject *out = PyList_New(0);
    Walk w;
    int32_t last = win->pair;
    if (walk_start(&w, c)) Py_CLEAR(out);
    while (out && PyList_GET_SIZE(out) < limit) {
        int32_t i = walk_next(&w);
        if (i < 0 || cmp_score(c, &c->heap[i], win)) {
            if (i == -2) Py_CLEAR(out);
            break;
        }
        const Entry *e = &c->heap[i];
        if (e->pair == last || e->pair == win->pair || !current(c, e)) continue;
        last = e->pair;
        if (append_new(out, pair_tuple(&c->pairs[e->pair]))) Py_CLEAR(out);
    }
    free(w.f);
    return out;
}

/* The pair BPE's rule would merge: the live pair of the largest count, the greater (a, b)
 * by bytes on a tie; -1 if none. */
static int32_t bpe_pair(const Core *c) {
    int32_t best = -1;
    for (int32_t i = 0; i < c->live.n; i++) {
        int32_t p = c->live.v[i];
        const PairRec *r = &c->pairs[p];
        if (best >= 0) {
            const PairRec *q = &c->pairs[best];
            int cmp = r->count != q->count ? (r->count > q->count) - (r->count < q->count) : cmp_token(c->vocab, r->a, q->a);
            if (!cmp) cmp = cmp_token(c->vocab, r->b, q->b);
            if (cmp <= 0) continue;
        }
        best = p;
    }
    return best;
}

/* ((a, b), count, count(a), count(b)) of BPE's pair now, or None. */
static PyObject *bpe_choice_now(const Core *c) {
    int32_t p = bpe_pair(c);
    if (p < 0) Py_RETURN_NONE;
    const PairRec *r = &c->pairs[p];
    return Py_BuildValue("(NLLL)", pair_tuple(r), (long long)r->count, (long long)c->symbol[r->a].count, (long long)c->symbol[r->b].count);
}

/* step(tie_limit) -> None when no pair is left, else (left, right, new, count, count(a),
 * count(b), ties, changes, pushes, stale, heap_size, live_pairs, symbol_changes, bpe):
 * one merge and everything it did, the events as packed rows (see the Core struct), the
 * sizes after it, the symbols' counts (symbol, before, after), and BPE's choice before it
 * (see ``bpe_choice``). */
static PyObject *Core_step(Core *c, PyObject *arg) {
    int limit = (int)PyLong_AsLong(arg);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    events_start(&c->events);
    Entry win;
    Scored counts;
    int r = select_pair(c, &win, &counts);
    PyObject *tied = NULL, *bpe = NULL, *symbols = NULL, *out = NULL;
    if (r) {
        c->events.detail = 0;
        if (r < 0) return NULL;
        Py_RETURN_NONE;
    }
    const PairRec *rec = &c->pairs[win.pair];
    int32_t a = rec->a, b = rec->b, tok;
    tied = ties(c, &win, limit);
    bpe = tied ? bpe_choice_now(c) : NULL;
    c->merges++;
    tok = bpe ? joined(c, a, b) : -1;
    int64_t was[3] = {c->symbol[a].count, c->symbol[b].count, tok >= 0 ? c->symbol[tok].count : 0};
    if (tok < 0 || merge(c, win.pair, tok)) goto done;
    int32_t moved[3] = {a, b, tok};
    symbols = PyList_New(0);
    for (int k = 0; symbols && k < 3; k++) {
        if ((k >= 1 && moved[k] == moved[0]) || (k == 2 && moved[2] == moved[1])) continue;  /* once each */
        if (append_new(symbols, Py_BuildValue("(iLL)", moved[k], (long long)was[k], (long long)c->symbol[moved[k]].count)))
            Py_CLEAR(symbols);
    }
    if (!symbols) goto done;
    Events *e = &c->events;
    out = Py_BuildValue("iiiLLLONNNiiOO", a, b, tok, (long long)counts.count, (long long)counts.left, (long long)counts.right, tied,
                        rows_bytes(&e->changes), rows_bytes(&e->pushes), rows_bytes(&e->stale), c->heapn,
                        c->live.n, symbols, bpe);
done:
    c->events.detail = 0;
    Py_XDECREF(tied);
    Py_XDECREF(bpe);
    Py_XDECREF(symbols);
    return out;
}

/* run(n) -> packed int64 rows (left, right, new, count): up to n merges, fewer when the
 * vocabulary is full or no pair is left. */
static PyObject *Core_run(Core *c, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    Rows done = {0};
    for (Py_ssize_t k = 0; k < n && c->ntok < c->vocab_size; k++) {
        int32_t pair, tok;
        int64_t count;
        int r = merge_next(c, &pair, &count, &tok);
        if (r > 0) break;
        if (r < 0 || row(&done, 4, (int64_t[]){c->pairs[pair].a, c->pairs[pair].b, tok, count})) {
            free(done.v);
            return NULL;
        }
    }
    PyObject *out = rows_bytes(&done);
    free(done.v);
    return out;
}

/* -- queries -------------------------------------------------------------------------------- */

/* top_pairs(k) -> [((left, right), count), ...]: the first k current entries in heap
 * order, once each: the k pairs that would win next, in the rule's order. */
static PyObject *Core_top_pairs(Core *c, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    PyObject *out = PyList_New(0);
    if (!out || k <= 0) return out;
    Walk w;
    if (walk_start(&w, c)) Py_CLEAR(out);
    int32_t last = -1;
    while (out && PyList_GET_SIZE(out) < k) {
        int32_t i = walk_next(&w);
        if (i < 0) {
            if (i == -2) Py_CLEAR(out);
            break;
        }
        const Entry *e = &c->heap[i];
        /* a current pair's entries hold the same counts: equal in the heap's order, so one
         * after the other */
        if (!current(c, e) || e->pair == last) continue;
        last = e->pair;
        if (append_new(out, pair_with_count(&c->pairs[e->pair], c->pool[e->slot].count))) Py_CLEAR(out);
    }
    free(w.f);
    return out;
}

/* bpe_choice() -> ((left, right), count) of the most frequent live pair, or None. */
static PyObject *Core_bpe_choice(Core *c, PyObject *Py_UNUSED(ignored)) {
    int32_t p = bpe_pair(c);
    if (p < 0) Py_RETURN_NONE;
    return pair_with_count(&c->pairs[p], c->pairs[p].count);
}

/* segmentation(i) -> [token ids]: word i as it is now split. */
static PyObject *Core_segmentation(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    PyObject *out = PyList_New(0);
    if (c->starts[w] == c->starts[w + 1]) return out;  /* the empty word */
    for (int32_t p = c->starts[w]; out && p >= 0; p = c->next[p])
        if (append_new(out, PyLong_FromLong(c->tokens[p]))) Py_CLEAR(out);
    return out;
}

/* symbol_count(i) -> count(token i) in the corpus as segmented now. */
static PyObject *Core_symbol_count(Core *c, PyObject *arg) {
    Py_ssize_t t = index_arg(arg, c->ntok, "no such token");
    if (t < 0) return NULL;
    return PyLong_FromLongLong(c->symbol[t].count);
}

/* pair_counter() -> {(left, right): count} for every live pair (a copy). */
static PyObject *Core_pair_counter(Core *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyDict_New();
    for (int32_t i = 0; out && i < c->live.n; i++)
        if (put_pair_count(out, &c->pairs[c->live.v[i]])) Py_CLEAR(out);
    return out;
}

static PyMethodDef Core_methods[] = {
    {"step", (PyCFunction)Core_step, METH_O, "One merge with its events, or None."},
    {"run", (PyCFunction)Core_run, METH_O, "Up to n merges: packed (left, right, new, count) rows."},
    {"top_pairs", (PyCFunction)Core_top_pairs, METH_O, "The k pairs that would win next."},
    {"bpe_choice", (PyCFunction)Core_bpe_choice, METH_NOARGS, "The most frequent pair, or None."},
    {"segmentation", (PyCFunction)Core_segmentation, METH_O, "Word i's current token ids."},
    {"symbol_count", (PyCFunction)Core_symbol_count, METH_O, "count(token i) now."},
    {"pair_counter", (PyCFunction)Core_pair_counter, METH_NOARGS, "A copy of the live pair counts."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Core_members[] = {
    {"heap_size", Py_T_INT, offsetof(Core, heapn), Py_READONLY, "Entries on the heap, stale ones included."},
    {"live_pairs", Py_T_INT, offsetof(Core, live.n), Py_READONLY, "Pairs with a count above 0."},
    {"stored_positions", Py_T_LONGLONG, offsetof(Core, stored), Py_READONLY, "Positions held by live pairs' lists."},
    {"tokens_in_corpus", Py_T_LONGLONG, offsetof(Core, in_corpus), Py_READONLY, "Tokens in the corpus as segmented now."},
    {"corpus_chars", Py_T_LONGLONG, offsetof(Core, chars), Py_READONLY, "The words' characters times their counts."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.train.wordpiece._wordpiece_core.Core",
    .tp_doc = "The WordPiece trainer's state: laid-out words, symbol and pair counts, hash tables and lazy score heap.",
    CORE_TYPE_SLOTS,
};

static PyMethodDef module_methods[] = {
    {"first_words", first_words, METH_VARARGS, "The words in which a symbol is first seen."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.train.wordpiece._wordpiece_core", "The WordPiece trainer's compiled state and merge loop.",
    -1, module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wordpiece_core(void) {
    return module_with_core(&module, &CoreType);
}
