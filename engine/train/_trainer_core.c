/* The optimized trainer's state and merge loop (seed lecture 000, PART 3), compiled.
 *
 * engine/train/trainer.py wraps this in the public ``Trainer``; the algorithm is described there.
 * Here, the seed's structures as flat C data:
 *
 * - tokens: every distinct word laid out once, one token per position, with a separator
 *   between words. A token at position p covers its bytes' positions, so the next token
 *   starts at p + its length; the positions it has merged away hold MERGED(p) (the last one
 *   is kept current), so the previous token's start is read at p - 1. These are the seed's
 *   prev/next links, without two more int32 per position. The separator after a word holds
 *   its count, as SEP(count) below every MERGED value (a count too large for that is kept
 *   aside, in ``big``): a merge reads it by going token by token to the end of a short word
 *   and from the word starts in a long one (``word_end``), rather than keeping the count at
 *   every position (4 or 8 bytes a position more).
 * - pairs: one record per pair ever seen, holding its pair_counter count and its
 *   pair_positions list (append-only; a position is checked when used; a long list that is
 *   mostly stale is compacted). Records never move or disappear (ids into ``pairs`` stay
 *   valid); a pair whose count falls to 0 is dead for good, since only pairs holding the
 *   newest token ever gain counts.
 * - a hash table from (left, right) token ids to the pair's record.
 * - the lazy max-heap of (count when pushed, pair). A merge only lowers the counts of the
 *   pairs already queued, so their entries stay put and are corrected when they reach the
 *   top (stale pops); each pair has at most one entry.
 *
 * Ties go to the lexicographically greater pair of byte strings, so the heap compares the
 * tokens' bytes when counts are equal. A detailed step writes its events as rows of int64
 * (engine/train/events.py reads them); plain runs write none.
 *
 * What WordPiece's core does the same way is written once, in headers under engine/: the
 * pair records' hash table and count changes (_pair_records.h), the lazy heap and its walk
 * (_lazy_heap.h), the event rows (_step_events.h), tokens' bytes (_token_bytes.h), and the
 * Python module around the Core (_core_module.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "_core_module.h"
#include "_grow.h"
#include "_positions.h"
#include "_step_events.h"
#include "_token_bytes.h"

/* Ask for memory a loop will read a few iterations later: a merge reads the tokens at its
 * pair's positions, scattered through a layout far larger than the caches. A hint only,
 * through the SSE intrinsic that gcc, clang and MSVC all have on x86; elsewhere nothing. */
#if defined(__SSE__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 1)
#include <xmmintrin.h>
#define PREFETCH(addr) _mm_prefetch((const char *)(addr), _MM_HINT_T0)
#else
#define PREFETCH(addr) ((void)(addr))
#endif
#define AHEAD 16

#define MERGED(start) (-2 - (start))  /* a position merged away into the token at ``start`` */
/* A separator: SEP(code) for code >= 0 (the count, or big_from + its index in ``big``); the
 * one before the first word is sep_top. All of them lie below MERGED(npos). */
#define SEP(code) (c->sep_top - 1 - (code))
#define IS_SEP(t) ((t) <= c->sep_top)

/* A pair_positions list. Most pairs occur in a few words only: up to INLINE positions are
 * kept in the record itself (cap 0), more in an array of cap. The lists of the layout are
 * made at their size (in a long word they hold most of the state's memory); lists that grow
 * double. */
#define INLINE 2
#define FIRST_ARRAY 8
/* Packed to 4 bytes (a pragma gcc, clang and MSVC all honour): a heap entry is 12 bytes, not
 * 16. The assertions below keep the layout from changing. */
#pragma pack(push, 4)
typedef struct {
    union {
        int32_t *v;
        int32_t in[INLINE];
    };
    int32_t n, cap;
} Positions;

typedef struct {
    int32_t a, b;
    int64_t count;        /* pair_counter */
    Positions pos;        /* pair_positions */
} PairRec;

typedef struct {
    int64_t count;        /* the count when pushed: stale once the pair's count is lower */
    int32_t pair;
} Entry;
#pragma pack(pop)
_Static_assert(sizeof(Positions) == 16 && _Alignof(Positions) == 4, "a positions list is 16 bytes");
_Static_assert(sizeof(PairRec) == 32 && _Alignof(PairRec) == 4, "a pair record is 32 bytes");
_Static_assert(sizeof(Entry) == 12 && _Alignof(Entry) == 4, "a heap entry is 12 bytes");

typedef struct {
    PyObject_HEAD
    int32_t *tokens;
    int32_t *starts;      /* each word's first position */
    int32_t sep_top;      /* the greatest separator value: MERGED(npos) */
    int32_t big_from;     /* separator codes from here index ``big``: counts too large to be codes */
    int64_t *big;
    int32_t nbig, bigcap;
    int32_t nwords, npos;
    Token *vocab;         /* each token id's bytes */
    int32_t ntok, tokcap;
    PairRec *pairs;
    int32_t npairs, paircap;
    uint64_t *noted;      /* a bit per pair: changed in this step, its count before noted */
    int32_t *slots;       /* hash table of (a, b): index into pairs, -1 free */
    uint32_t hmask, hused;
    Entry *heap;
    int32_t heapn, heapcap;
    int64_t live;         /* pairs with a count above 0: the size of pair_counter */
    int64_t stored;       /* positions held in the lists of live pairs */
    int64_t corpus_bytes; /* the words' bytes times their counts */
    size_t freed;         /* bytes of pair_positions arrays freed since memory was last given back */
    Touch *touch;         /* the pairs this step changed, each with its count before */
    int32_t ntouch, touchcap;
    Events events;        /* a detailed step's */
} Core;

/* -- pair_positions lists, tokens, memory given back ---------------------------------- */

static inline int32_t *positions_of(Positions *ps) {
    return ps->cap ? ps->v : ps->in;
}

/* Bytes a positions list holds outside its record. */
static size_t positions_bytes(const Positions *ps) {
    return (size_t)ps->cap * sizeof(int32_t);
}

/* Empty a list; ``freed`` counts the bytes given back. */
static void positions_free(Positions *ps, size_t *freed) {
    *freed += positions_bytes(ps);
    if (ps->cap) free(ps->v);
    *ps = (Positions){0};
}

/* Make an empty list's room for ``k`` positions at once. */
static int positions_reserve(Positions *ps, int32_t k) {
    if (k <= INLINE) return 0;
    ps->v = malloc((size_t)k * sizeof(int32_t));
    if (!ps->v) {
        PyErr_NoMemory();
        return -1;
    }
    ps->cap = k;
    return 0;
}

static int positions_add(Positions *ps, int32_t pos, size_t *freed) {
    int32_t n = ps->n;
    if (n == (ps->cap ? ps->cap : INLINE)) {  /* out of the record, or full */
        int64_t cap = ps->cap ? 2 * (int64_t)ps->cap : FIRST_ARRAY;
        if (cap > INT32_MAX) cap = INT32_MAX;  /* positions are int32: a list never holds more */
        *freed += positions_bytes(ps);  /* where realloc moves the array */
        int32_t *v = ps->cap ? realloc(ps->v, (size_t)cap * sizeof(int32_t)) : malloc((size_t)cap * sizeof(int32_t));
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        if (!ps->cap) memcpy(v, ps->in, sizeof(ps->in));
        ps->v = v;
        ps->cap = (int32_t)cap;
    }
    (ps->cap ? ps->v : ps->in)[n] = pos;
    ps->n = n + 1;
    return 0;
}

/* A token with a's bytes, then b's if given, the next id. */
static int add_token(Core *c, const Token *a, const Token *b) {
    if (grow((void **)&c->vocab, &c->tokcap, (int64_t)c->ntok + 1, sizeof(Token))) return -1;
    uint8_t *data = joined_bytes(a, b ? b->data : NULL, b ? b->len : 0);
    if (!data) return -1;
    c->vocab[c->ntok++] = (Token){data, a->len + (b ? b->len : 0)};
    return 0;
}

/* Merges free pair_positions arrays of every size, scattered through the heap: glibc keeps
 * such memory, and the process would grow by what the lists once held. Once a few MB are
 * free, they go back to the system. Large arrays never land there: they get mappings of
 * their own (engine.corpus.shards.keep_mmap_threshold, before a Core is made), which realloc grows in
 * place. */
#define GIVE_BACK (2 << 20)
static void give_back(Core *c) {
    if (c->freed < GIVE_BACK) return;
    c->freed = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* -- pair records and their hash table (_pair_records.h) ----------------------------- */

#define NOTED_WORDS(pairs) (((size_t)(pairs) + 63) / 64)

/* What the shared pair code asks of this core. A record is 32 bytes with its first positions
 * inside it: a pair changed in this step is noted in a bit beside it, in ``noted``. */
static int more_pairs(Core *c) {
    size_t words = NOTED_WORDS(c->paircap);
    if (grow((void **)&c->pairs, &c->paircap, (int64_t)c->npairs + 1, sizeof(PairRec))) return -1;
    uint64_t *noted = realloc(c->noted, NOTED_WORDS(c->paircap) * sizeof(uint64_t));
    if (!noted) {
        PyErr_NoMemory();
        return -1;
    }
    memset(noted + words, 0, (NOTED_WORDS(c->paircap) - words) * sizeof(uint64_t));
    c->noted = noted;
    return 0;
}

static inline int change_noted(const Core *c, int32_t p) {
    return (int)(c->noted[p >> 6] >> (p & 63) & 1);
}

static inline void note_change(Core *c, int32_t p) {
    c->noted[p >> 6] |= 1ull << (p & 63);
}

static inline int add_position(Core *c, int32_t p, int32_t at) {
    return positions_add(&c->pairs[p].pos, at, &c->freed);
}

#include "_pair_records.h"

/* -- the heap (_lazy_heap.h) ------------------------------------------------------------ */

/* Does entry e come before f: a higher count, or an equal count and the greater pair? */
static inline int before(const Core *c, const Entry *e, const Entry *f) {
    if (e->count != f->count) return e->count > f->count;
    const PairRec *p = &c->pairs[e->pair], *q = &c->pairs[f->pair];
    int r = cmp_token(c->vocab, p->a, q->a);
    return (r ? r : cmp_token(c->vocab, p->b, q->b)) > 0;
}

#include "_lazy_heap.h"

/* Every live pair on a fresh heap: no stale entries. */
static int requeue(Core *c) {
    c->heapn = 0;
    if (grow((void **)&c->heap, &c->heapcap, c->live, sizeof(Entry))) return -1;
    for (int32_t p = 0; p < c->npairs; p++)
        if (c->pairs[p].count > 0) c->heap[c->heapn++] = (Entry){c->pairs[p].count, p};
    heapify(c);
    return 0;
}

/* -- construction ----------------------------------------------------------------------- */

static void Core_dealloc(Core *c) {
    free(c->tokens);
    free(c->big);
    free(c->starts);
    for (int32_t t = 0; t < c->ntok; t++) free(c->vocab[t].data);
    free(c->vocab);
    for (int32_t p = 0; p < c->npairs; p++) positions_free(&c->pairs[p].pos, &c->freed);
    free(c->pairs);
    free(c->noted);
    free(c->slots);
    free(c->heap);
    free(c->touch);
    events_free(&c->events);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Lay out ``nw`` words (their bytes one after another in ``s``, each ending at ``ends``, each
 * with its count in ``counts``), count their pairs and record where they start. Every pair
 * is a pair of bytes here: a table of 65,536 finds their records, made in the order they
 * first occur, and a first pass counts each one's positions, so its list is made at its
 * size, without growing, before the second pass fills it. */
static int lay_out(Core *c, const uint8_t *s, const int64_t *ends, const int64_t *counts, Py_ssize_t nw, int64_t n) {
    c->nwords = (int32_t)nw;
    c->npos = (int32_t)n;
    c->sep_top = MERGED((int32_t)n);
    c->big_from = (int32_t)(INT32_MAX - 2 - n - nw);  /* so that SEP(big_from + nw - 1) fits int32 */
    c->tokens = malloc((size_t)n * sizeof(int32_t));
    c->starts = malloc((size_t)(nw ? nw : 1) * sizeof(int32_t));
    int32_t *byte_pair = malloc(65536 * sizeof(int32_t));
    int r = -1;
    if (!c->tokens || !c->starts || !byte_pair) {
        PyErr_NoMemory();
        goto done;
    }
    memset(byte_pair, 0xff, 65536 * sizeof(int32_t));
    if (rehash(c, 1 << 8)) goto done;  /* small: grows as it fills, which the tests then reach */
    for (Py_ssize_t w = 0, from = 0; w < nw; from = ends[w++]) {
        int64_t k = counts[w];
        if (k < 0) {
            PyErr_SetString(PyExc_ValueError, "word counts must not be negative");
            goto done;
        }
        for (int64_t i = from + 1; i < ends[w]; i++) {
            int32_t *p = &byte_pair[s[i - 1] << 8 | s[i]];
            if (*p < 0 && (*p = get_pair(c, s[i - 1], s[i])) < 0) goto done;
            c->pairs[*p].count += k;
            c->pairs[*p].pos.n++;  /* counted here, filled below */
        }
    }
    for (int32_t p = 0; p < c->npairs; p++) {
        Positions *ps = &c->pairs[p].pos;
        int32_t k = ps->n;
        ps->n = 0;
        if (positions_reserve(ps, k)) goto done;
    }
    int32_t pos = 0;
    c->tokens[pos++] = c->sep_top;
    for (Py_ssize_t w = 0, from = 0; w < nw; from = ends[w++]) {
        int64_t k = counts[w];
        c->starts[w] = pos;
        c->corpus_bytes += (ends[w] - from) * k;
        for (int64_t i = from; i < ends[w]; i++) {
            if (i > from && positions_add(&c->pairs[byte_pair[s[i - 1] << 8 | s[i]]].pos, pos - 1, &c->freed)) goto done;
            c->tokens[pos++] = s[i];
        }
        if (k >= c->big_from) {
            if (grow((void **)&c->big, &c->bigcap, (int64_t)c->nbig + 1, sizeof(int64_t))) goto done;
            c->big[c->nbig] = k;
            k = c->big_from + c->nbig++;
        }
        c->tokens[pos++] = SEP(k);
    }
    r = 0;
done:
    free(byte_pair);
    return r;
}

/* Core(words, ends, counts, base_tokens): lay out the words of a ``WordTable`` (its three
 * buffers; engine/corpus/word_table.py), count their pairs and queue them all. */
static int Core_init(Core *c, PyObject *args, PyObject *Py_UNUSED(kw)) {
    Py_buffer words, ends, counts;
    PyObject *base;
    if (!PyArg_ParseTuple(args, "y*y*y*O!", &words, &ends, &counts, &PyList_Type, &base)) return -1;
    int r = -1;
    Py_ssize_t nw = counts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *end = ends.buf;
    if (c->tokens) {
        PyErr_SetString(PyExc_RuntimeError, "a Core is initialized once");
        goto done;
    }
    if (ends.len != counts.len || counts.len % (Py_ssize_t)sizeof(int64_t) ||
        (nw && end[nw - 1] != words.len)) {
        PyErr_SetString(PyExc_ValueError, "ends and counts must be int64, one each per word, ending with the words");
        goto done;
    }
    for (Py_ssize_t w = 0, from = 0; w < nw; from = end[w++])
        if (end[w] < from || end[w] > words.len) {
            PyErr_SetString(PyExc_ValueError, "word ends must not go back or past the words");
            goto done;
        }
    if (words.len + 2 * nw + 3 > INT32_MAX) {  /* positions and separator values fit int32 */
        PyErr_SetString(PyExc_MemoryError, "too many distinct pre-token bytes to lay out (over 2^31)");
        goto done;
    }
    for (Py_ssize_t t = 0; t < PyList_GET_SIZE(base); t++) {
        Token tok;
        if (base_token(PyList_GET_ITEM(base, t), &tok) || add_token(c, &tok, NULL)) goto done;
    }
    if (lay_out(c, words.buf, end, counts.buf, nw, words.len + nw + 1)) goto done;
    for (int32_t p = 0; p < c->npairs; p++) {
        if (c->pairs[p].count > 0) c->live++;
        c->stored += c->pairs[p].pos.n;
    }
    give_back(c);
    r = requeue(c);
done:
    PyBuffer_Release(&words);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&counts);
    return r;
}

/* -- merging ---------------------------------------------------------------------------- */

/* The start of the token before the one at ``pos`` (or of the separator there). */
static inline int32_t prev_start(const Core *c, int32_t pos) {
    int32_t t = c->tokens[pos - 1];
    return t >= 0 || IS_SEP(t) ? pos - 1 : -2 - t;
}

/* Word w's separator: just before the next word's start. */
static inline int32_t word_sep(const Core *c, int32_t w) {
    return (w + 1 < c->nwords ? c->starts[w + 1] : c->npos) - 1;
}

/* Tokens a merge steps over to find a word's end before it looks the word up instead. */
#define SHORT_WORD 16

/* The separator after the token (or separator) at ``pos``: the end of its word. Most words
 * are a few tokens, and going token by token is quickest; in a long one, the end is found
 * from the word starts, so a merge costs what its occurrences cost, not the word's length. */
static inline int32_t word_end(const Core *c, int32_t pos) {
    int32_t from = pos;
    for (int k = 0; k < SHORT_WORD; k++) {
        int32_t t = c->tokens[pos];
        if (t < 0) return pos;
        pos += c->vocab[t].len;
    }
    return word_sep(c, word_at(c->starts, c->nwords, from));  /* a merged-away position lies in its word */
}

/* The count a word's separator holds. */
static inline int64_t count_at(const Core *c, int32_t sep) {
    int64_t code = (int64_t)c->sep_top - 1 - sep;
    return code < c->big_from ? code : c->big[code - c->big_from];
}

/* Does the pair (a, b) start at ``pos`` now? The check a merge makes before using a
 * recorded position; a live token's end is read, so it stays inside the layout. */
static inline int starts_pair(const Core *c, int32_t pos, int32_t a, int32_t b) {
    return c->tokens[pos] == a && c->tokens[pos + c->vocab[a].len] == b;
}

/* Lists at least this long are compacted once most of their positions are stale. */
#define COMPACT_FROM 1024

/* Drop the stale positions of pair record ``r`` (keeping the live ones in order) and give
 * back the room they took. A pair's count is at least its live positions (each weighs its
 * word's count, at least 1), so a list over twice as long as the count is mostly stale: a
 * neighbour's merges took its positions away, and it would hold them until its own merge.
 * In a long word, that is most of what the lists hold. */
static void compact(Core *c, PairRec *r) {
    Positions *ps = &r->pos;
    int32_t *at = positions_of(ps), k = 0;
    for (int32_t i = 0; i < ps->n; i++)
        if (starts_pair(c, at[i], r->a, r->b)) at[k++] = at[i];
    c->stored -= ps->n - k;
    c->freed += (size_t)(ps->cap - k) * sizeof(int32_t);
    if (k <= INLINE) {
        int32_t keep[INLINE];
        memcpy(keep, at, (size_t)k * sizeof(int32_t));
        free(ps->v);
        memcpy(ps->in, keep, sizeof(keep));
        ps->cap = 0;
    } else {
        int32_t *v = realloc(ps->v, (size_t)k * sizeof(int32_t));
        if (v) ps->v = v;  /* else the larger array stays, as good */
        ps->cap = v ? k : ps->cap;
    }
    ps->n = k;
}

/* Merge every occurrence of pair record ``m`` left to right and apply the count changes.
 * With ``queue`` the new pairs go on the heap. */
static int merge(Core *c, int32_t m, int queue) {
    int32_t a = c->pairs[m].a, b = c->pairs[m].b, tok = c->ntok;
    Token left = c->vocab[a], right = c->vocab[b];  /* copies: adding may move the array */
    if (add_token(c, &left, &right)) return -1;
    Positions ps = c->pairs[m].pos;
    c->pairs[m].pos = (Positions){0};
    c->pairs[m].count = 0;
    c->live--;
    c->stored -= ps.n;
    int32_t *at = positions_of(&ps);
    if (a == b) qsort(at, (size_t)ps.n, sizeof(int32_t), cmp_pos);  /* a a a: leftmost first */
    for (int32_t i = 0; i < c->ntouch; i++) c->noted[c->touch[i].pair >> 6] &= ~(1ull << (c->touch[i].pair & 63));
    c->ntouch = 0;  /* the last step's changes, forgotten */
    int32_t *tokens = c->tokens, la = left.len, lb = right.len;
    int32_t seen = -1, end = -1;  /* the last word's end was found from ``seen``: positions */
    int64_t w = 0;                /* between them lie in it, so its count ``w`` is known */
    for (int32_t i = 0; i < ps.n; i++) {
        int32_t pos = at[i];
        if (i + AHEAD < ps.n) PREFETCH(&tokens[at[i + AHEAD]]);
        if (tokens[pos] != a) continue;
        int32_t nxt = pos + la;
        if (tokens[nxt] != b) continue;
        int32_t after = nxt + lb, y = tokens[after];
        int32_t prv = prev_start(c, pos), x = tokens[prv];
        if ((x >= 0 || y >= 0) && (pos < seen || pos > end)) {  /* no neighbour: no count to change */
            seen = pos;
            end = word_end(c, after);
            w = count_at(c, tokens[end]);
        }
        if (x >= 0 && (change(c, m, x, a, -w, 0, -1) || change(c, m, x, tok, w, 0, prv))) goto fail;
        if (y >= 0 && (change(c, m, b, y, -w, 1, -1) || change(c, m, tok, y, w, 1, pos))) goto fail;
        tokens[pos] = tok;
        tokens[nxt] = tokens[after - 1] = MERGED(pos);
    }
    positions_free(&ps, &c->freed);
    for (int32_t i = 0; i < c->ntouch; i++) {
        Touch t = c->touch[i];
        PairRec *r = &c->pairs[t.pair];
        if (r->count == 0) {  /* dead for good: drop its positions */
            c->stored -= r->pos.n;
            positions_free(&r->pos, &c->freed);
        } else if (r->pos.n >= COMPACT_FROM && r->pos.n > 2 * r->count) {
            compact(c, r);
        }
        c->live += (r->count > 0) - (t.before > 0);
        /* Only pairs holding the new token can have risen; nothing has queued them yet. */
        if (queue && r->count > 0 && (r->a == tok || r->b == tok) &&
            (heap_add(c, (Entry){r->count, t.pair}) || event_push(&c->events, r->a, r->b, r->count)))
            return -1;
        if (event_change(&c->events, r->a, r->b, &t, r->count)) return -1;
    }
    give_back(c);
    return 0;
fail:
    positions_free(&ps, &c->freed);
    return -1;
}

/* Pop the winner: correct or drop stale entries until the top is current. Returns its
 * record, -1 when no pair is left, -2 on error. */
static int32_t select_pair(Core *c, int64_t *count) {
    while (c->heapn) {
        Entry top = c->heap[0];
        const PairRec *r = &c->pairs[top.pair];
        if (r->count == top.count) {
            heap_pop(c);
            *count = top.count;
            return top.pair;
        }
        if (event_stale(&c->events, r->a, r->b, top.count, r->count)) return -2;
        if (r->count > 0) {
            c->heap[0].count = r->count;
            sift_down(c, 0);
            if (event_push(&c->events, r->a, r->b, r->count)) return -2;
        } else {
            heap_pop(c);
        }
    }
    return -1;
}

/* Up to ``limit`` current pairs with ``count`` still queued, in tie-break order. */
static PyObject *ties(Core *c, int64_t count, int limit) {
    PyObject *out = PyList_New(0);
    Walk w;
    if (walk_start(&w, c)) Py_CLEAR(out);
    while (out && PyList_GET_SIZE(out) < limit) {
        int32_t i = walk_next(&w);
        if (i < 0 || c->heap[i].count != count) {
            if (i == -2) Py_CLEAR(out);
            break;
        }
        const PairRec *r = &c->pairs[c->heap[i].pair];
        if (r->count == count && append_new(out, pair_tuple(r))) Py_CLEAR(out);
    }
    free(w.f);
    return out;
}

/* step(tie_limit) -> None when no pair is left, else (left, right, count, ties, changes,
 * pushes, stale, heap_size, live_pairs): one merge and everything it did, the events as
 * packed rows (see the Core struct), and the sizes after it. */
static PyObject *Core_step(Core *c, PyObject *arg) {
    int limit = (int)PyLong_AsLong(arg);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    events_start(&c->events);
    int64_t count;
    int32_t m = select_pair(c, &count);
    PyObject *tied = m >= 0 ? ties(c, count, limit) : NULL;
    int failed = m == -2 || (m >= 0 && (!tied || merge(c, m, 1)));
    c->events.detail = 0;
    if (failed) {
        Py_XDECREF(tied);
        return NULL;
    }
    if (m == -1) Py_RETURN_NONE;
    Events *e = &c->events;
    return Py_BuildValue("iiLNNNNiL", c->pairs[m].a, c->pairs[m].b, (long long)count, tied, rows_bytes(&e->changes),
                         rows_bytes(&e->pushes), rows_bytes(&e->stale), c->heapn, (long long)c->live);
}

/* run(n) -> [(left, right, count), ...]: up to n merges, fewer when the pairs run out. */
static PyObject *Core_run(Core *c, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    PyObject *done = PyList_New(0);
    if (!done) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t count;
        int32_t m = select_pair(c, &count);
        if (m == -1) break;
        if (m == -2 || merge(c, m, 1) ||
            append_new(done, Py_BuildValue("iiL", c->pairs[m].a, c->pairs[m].b, (long long)count))) {
            Py_DECREF(done);
            return NULL;
        }
    }
    return done;
}

/* redo(pairs): merge these known pairs in order without selecting or queueing, then
 * queue every live pair afresh (going back rebuilds the start and redoes the merges). */
static PyObject *Core_redo(Core *c, PyObject *pairs) {
    PyObject *seq = PySequence_Fast(pairs, "redo takes a sequence of pairs");
    if (!seq) return NULL;
    c->heapn = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int a, b;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ii", &a, &b)) goto fail;
        int32_t m = find_pair(c, a, b);
        if (m < 0 || c->pairs[m].count <= 0) {
            PyErr_Format(PyExc_ValueError, "pair (%d, %d) does not occur", a, b);
            goto fail;
        }
        if (merge(c, m, 0)) goto fail;
    }
    Py_DECREF(seq);
    if (requeue(c)) return NULL;
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    requeue(c);
    return NULL;
}

/* -- queries ---------------------------------------------------------------------------- */

/* top_pairs(k) -> [((left, right), count), ...]: the k pairs that would win next, in order.
 * A stale entry stands for its pair at the current count, never above the stored one: the
 * walk stops once stored counts fall below the k-th best current count. */
static PyObject *Core_top_pairs(Core *c, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k <= 0 || !c->heapn) return PyList_New(0);
    Entry *best = malloc((size_t)k * sizeof(Entry));
    Py_ssize_t nb = 0;
    Walk w;
    PyObject *out = NULL;
    if (walk_start(&w, c) || !best) goto done;
    for (;;) {
        int32_t i = walk_next(&w);
        if (i == -2) goto done;
        if (i < 0 || (nb == k && c->heap[i].count < best[k - 1].count)) break;
        Entry e = {c->pairs[c->heap[i].pair].count, c->heap[i].pair};
        if (e.count <= 0 || (nb == k && !before(c, &e, &best[k - 1]))) continue;
        Py_ssize_t j = nb < k ? nb++ : k - 1;  /* insertion into the sorted best list */
        for (; j > 0 && before(c, &e, &best[j - 1]); j--) best[j] = best[j - 1];
        best[j] = e;
    }
    out = PyList_New(nb);
    for (Py_ssize_t j = 0; out && j < nb; j++) {
        PyObject *item = pair_with_count(&c->pairs[best[j].pair], best[j].count);
        if (!item) Py_CLEAR(out);
        else PyList_SET_ITEM(out, j, item);
    }
done:
    if (!best) PyErr_NoMemory();
    free(best);
    free(w.f);
    return out;
}

/* Word w's length in bytes: up to its separator. */
static int64_t word_len(const Core *c, Py_ssize_t w) {
    return word_sep(c, (int32_t)w) - c->starts[w];
}

static int64_t word_count(const Core *c, Py_ssize_t w) {
    return count_at(c, c->tokens[word_sep(c, (int32_t)w)]);
}

/* Write word w's bytes to ``out``: its tokens' bytes, whatever the merges so far. */
static void word_bytes(const Core *c, Py_ssize_t w, uint8_t *out) {
    for (int32_t pos = c->starts[w]; c->tokens[pos] >= 0; pos += c->vocab[c->tokens[pos]].len) {
        const Token *t = &c->vocab[c->tokens[pos]];
        memcpy(out + (pos - c->starts[w]), t->data, (size_t)t->len);
    }
}

/* word(i) -> (bytes, count): word i as it was given. */
static PyObject *Core_word(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    PyObject *text = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)word_len(c, w));
    if (!text) return NULL;
    word_bytes(c, w, (uint8_t *)PyBytes_AS_STRING(text));
    return Py_BuildValue("(NL)", text, (long long)word_count(c, w));
}

/* token(i) -> bytes: token i's bytes. */
static PyObject *Core_token(Core *c, PyObject *arg) {
    Py_ssize_t t = index_arg(arg, c->ntok, "no such token");
    if (t < 0) return NULL;
    return PyBytes_FromStringAndSize((const char *)c->vocab[t].data, c->vocab[t].len);
}

/* table() -> (words, ends, counts): the words as they were given, in the buffers the core is
 * built from (ends and counts as int64 bytes), to build a fresh core or read them all. */
static PyObject *Core_table(Core *c, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t nw = c->nwords;
    PyObject *words = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)c->npos - nw - 1);
    PyObject *ends = PyBytes_FromStringAndSize(NULL, nw * (Py_ssize_t)sizeof(int64_t));
    PyObject *counts = PyBytes_FromStringAndSize(NULL, nw * (Py_ssize_t)sizeof(int64_t));
    if (!words || !ends || !counts) {
        Py_XDECREF(words);
        Py_XDECREF(ends);
        Py_XDECREF(counts);
        return NULL;
    }
    uint8_t *out = (uint8_t *)PyBytes_AS_STRING(words);
    int64_t *end = (int64_t *)PyBytes_AS_STRING(ends), *count = (int64_t *)PyBytes_AS_STRING(counts), at = 0;
    for (Py_ssize_t w = 0; w < nw; w++) {
        word_bytes(c, w, out + at);
        end[w] = at += word_len(c, w);
        count[w] = word_count(c, w);
    }
    return Py_BuildValue("(NNN)", words, ends, counts);
}

/* segmentation(i) -> [token ids]: word i as it is now split. */
static PyObject *Core_segmentation(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    PyObject *out = PyList_New(0);
    for (int32_t pos = c->starts[w]; out && c->tokens[pos] >= 0; pos += c->vocab[c->tokens[pos]].len)
        if (append_new(out, PyLong_FromLong(c->tokens[pos]))) Py_CLEAR(out);
    return out;
}

/* pair_positions(left, right, limit) -> (recorded, live, [(position, word, live), ...]):
 * how many positions the pair's pair_positions list holds, how many of them the pair
 * still starts at, and the first ``limit`` of them in list order. A read, not a change. */
static PyObject *Core_pair_positions(Core *c, PyObject *args) {
    int a, b;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "iin", &a, &b, &limit)) return NULL;
    int known = a >= 0 && b >= 0 && a < c->ntok && b < c->ntok;  /* else no key to look up */
    int32_t p = known ? find_pair(c, a, b) : -1;
    Positions *ps = p >= 0 ? &c->pairs[p].pos : NULL;
    const int32_t *at = ps ? positions_of(ps) : NULL;
    int32_t n = ps ? ps->n : 0, shown = (int32_t)(limit < 0 ? 0 : limit < n ? limit : n);
    int64_t live = 0;
    for (int32_t i = 0; i < n; i++) live += starts_pair(c, at[i], a, b);
    PyObject *out = PyList_New(shown);
    for (int32_t i = 0; out && i < shown; i++) {
        int32_t pos = at[i];
        int32_t word = word_at(c->starts, c->nwords, pos);
        PyObject *item = Py_BuildValue("(iiO)", pos, word, starts_pair(c, pos, a, b) ? Py_True : Py_False);
        if (!item) Py_CLEAR(out);
        else PyList_SET_ITEM(out, i, item);
    }
    return out ? Py_BuildValue("(iLN)", n, (long long)live, out) : NULL;
}

/* cells(i) -> [(position, token, prev, next), ...]: word i's tokens as laid out now, each
 * with its prev/next links; a link out of the word (to a separator) is -1. */
static PyObject *Core_cells(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    PyObject *out = PyList_New(0);
    for (int32_t pos = c->starts[w]; out && c->tokens[pos] >= 0; pos += c->vocab[c->tokens[pos]].len) {
        int32_t prv = prev_start(c, pos), nxt = pos + c->vocab[c->tokens[pos]].len;
        if (append_new(out, Py_BuildValue("(iiii)", pos, c->tokens[pos], c->tokens[prv] < 0 ? -1 : prv,
                                          c->tokens[nxt] < 0 ? -1 : nxt)))
            Py_CLEAR(out);
    }
    return out;
}

/* pair_counter() -> {(left, right): count} for every live pair (a copy). */
static PyObject *Core_pair_counter(Core *c, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyDict_New();
    for (int32_t p = 0; out && p < c->npairs; p++)
        if (c->pairs[p].count > 0 && put_pair_count(out, &c->pairs[p])) Py_CLEAR(out);
    return out;
}

/* memory() -> {structure: bytes}: what each of the state's structures has allocated. */
static PyObject *Core_memory(Core *c, PyObject *Py_UNUSED(ignored)) {
    size_t tokens = 0, positions = 0;
    for (int32_t t = 0; t < c->ntok; t++) tokens += (size_t)c->vocab[t].len + 1;
    for (int32_t p = 0; p < c->npairs; p++) positions += positions_bytes(&c->pairs[p].pos);
    return Py_BuildValue(
        "{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
        "tokens", (Py_ssize_t)c->npos * (Py_ssize_t)sizeof(int32_t),
        "large word counts", (Py_ssize_t)c->bigcap * (Py_ssize_t)sizeof(int64_t),
        "word starts", (Py_ssize_t)c->nwords * (Py_ssize_t)sizeof(int32_t),
        "vocabulary", (Py_ssize_t)(c->tokcap * sizeof(Token) + tokens),
        "pair records", (Py_ssize_t)(c->paircap * sizeof(PairRec) + NOTED_WORDS(c->paircap) * sizeof(uint64_t)),
        "pair_positions arrays", (Py_ssize_t)positions,
        "hash table", (Py_ssize_t)(c->hmask + 1) * (Py_ssize_t)sizeof(int32_t),
        "heap", (Py_ssize_t)c->heapcap * (Py_ssize_t)sizeof(Entry));
}

static PyMethodDef Core_methods[] = {
    {"step", (PyCFunction)Core_step, METH_O, "One merge with its events, or None."},
    {"run", (PyCFunction)Core_run, METH_O, "Up to n merges; the (left, right, count) of each."},
    {"redo", (PyCFunction)Core_redo, METH_O, "Merge known pairs in order, then requeue."},
    {"top_pairs", (PyCFunction)Core_top_pairs, METH_O, "The k pairs that would win next."},
    {"segmentation", (PyCFunction)Core_segmentation, METH_O, "Word i's current token ids."},
    {"word", (PyCFunction)Core_word, METH_O, "Word i's bytes and count, as given."},
    {"token", (PyCFunction)Core_token, METH_O, "Token i's bytes."},
    {"table", (PyCFunction)Core_table, METH_NOARGS, "The words as given: (words, ends, counts) buffers."},
    {"pair_counter", (PyCFunction)Core_pair_counter, METH_NOARGS, "A copy of the live pair counts."},
    {"pair_positions", (PyCFunction)Core_pair_positions, METH_VARARGS, "A pair's recorded positions, live or stale."},
    {"cells", (PyCFunction)Core_cells, METH_O, "Word i's positions with their tokens and links."},
    {"memory", (PyCFunction)Core_memory, METH_NOARGS, "Bytes allocated by each structure."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Core_members[] = {
    {"heap_size", Py_T_INT, offsetof(Core, heapn), Py_READONLY, "Entries on the heap, stale ones included."},
    {"live_pairs", Py_T_LONGLONG, offsetof(Core, live), Py_READONLY, "Pairs with a count above 0."},
    {"corpus_bytes", Py_T_LONGLONG, offsetof(Core, corpus_bytes), Py_READONLY, "The words' bytes times their counts."},
    {"stored_positions", Py_T_LONGLONG, offsetof(Core, stored), Py_READONLY, "Positions held by live pairs' lists."},
    {"words", Py_T_INT, offsetof(Core, nwords), Py_READONLY, "The number of words laid out."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.train._trainer_core.Core",
    .tp_doc = "The trainer's state: laid-out words, pair records, hash table and lazy heap.",
    CORE_TYPE_SLOTS,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.train._trainer_core", "The trainer's compiled state and merge loop.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__trainer_core(void) {
    return module_with_core(&module, &CoreType);
}
