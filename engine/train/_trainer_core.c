/* The optimized trainer's state and merge loop (seed lecture 000, PART 3), compiled.
 *
 * engine/train/trainer.py wraps this in the public ``Trainer``; the algorithm is described there.
 * Here, the seed's structures as flat C data, small enough for the tens of millions of distinct
 * pre-tokens of a corpus of a hundred gigabytes (about 2-3 bytes a byte of them in all;
 * positions are 64-bit, so their bytes may pass 4 GB):
 *
 * - cells: every distinct word laid out once, one cell per position, with a separator
 *   between words. A token at position p covers its bytes' positions and its id is in cell p,
 *   so the next token starts at p + its length. Two bits a position, in ``marks``, say where a
 *   token (or separator) starts and where a separator is: the previous token's start is the
 *   start before p, without the seed's prev/next arrays, and a merge only clears a bit. Cells
 *   are a byte while every id fits in 16 bits (a vocabulary of 65,536), then 4 bytes: a
 *   token of one byte is that byte, and a longer token, which covers two cells or more, keeps
 *   its id in its first two (the marks tell which, since p + 1 starts a token only after a
 *   token of one byte). A separator's cell holds the word's count (a count too large for it is kept aside, in
 *   ``big``): a merge finds a word's end from the marks and reads it there, rather than
 *   keeping the count at every position.
 * - pairs: one record per pair ever seen, holding its pair_counter count and its
 *   pair_positions list (append-only; a position is checked when used; a long list that is
 *   mostly stale is compacted; within a memory budget, the least counted pairs keep their
 *   counts alone, and their positions are found again when needed: ``relist``). Records
 *   never move or disappear (ids into ``pairs`` stay valid); a pair whose count falls to 0
 *   is dead for good, since only pairs holding the newest token ever gain counts.
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

#include "_bits.h"
#include "_core_module.h"
#include "_grow.h"
#include "_huge_pages.h"
#include "_pair_hash.h"
#include "_step_events.h"
#include "_token_bytes.h"

#define AHEAD 16 /* a power of two: the positions a list is read ahead of its use (Ahead) */
/* Words of marks a merge reads to find a word's end before it looks the end up instead; a word
 * whose end is not found in them is at least LONG_WORD bytes long (``word_end``). */
#define SHORT_WORD 16
#define LONG_WORD (64 * (SHORT_WORD - 1))

/* A pair_positions list: its positions in ascending order, each kept as its distance from the
 * one before (the first as itself) in a varint, 7 bits a byte. Every list grows in one left to
 * right pass (the layout's, or the merge that made its pair's newer token), and most of a
 * large corpus's positions belong to frequent pairs, a few bytes apart: 1 or 2 bytes a
 * position rather than 4. Up to INLINE bytes are kept in the record itself (cap 0), more in
 * an array of cap bytes. The lists of the layout are made at their size (in a long word they
 * hold most of the state's memory); lists that grow double. */
#define INLINE 8
#define FIRST_ARRAY 16
/* Packed to 4 bytes (a pragma gcc, clang and MSVC all honour): a heap entry is 12 bytes, not
 * 16. The assertions below keep the layout from changing. */
#pragma pack(push, 4)
typedef struct {
    union {
        uint8_t *v;
        uint8_t in[INLINE];
    };
    uint32_t len, cap; /* bytes used; bytes of the array, 0 while in the record */
    uint64_t last;     /* the last position added: the next is kept as its distance from it */
    int32_t n;         /* positions */
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

typedef struct {
    uint64_t at;          /* the separator's position */
    int64_t count;
} BigCount;
#pragma pack(pop)
_Static_assert(sizeof(Positions) == 28 && _Alignof(Positions) == 4, "a positions list is 28 bytes");
_Static_assert(sizeof(PairRec) == 44 && _Alignof(PairRec) == 4, "a pair record is 44 bytes");
_Static_assert(sizeof(Entry) == 12 && _Alignof(Entry) == 4, "a heap entry is 12 bytes");

/* 64 positions' marks: bit k of ``start`` is set where a token or a separator starts, of
 * ``sep`` where a separator is. Side by side, a read of one brings the other. */
typedef struct {
    uint64_t start, sep;
} Marks;

typedef struct {
    PyObject_HEAD
    void *cells;          /* uint8_t or uint32_t: ``width`` bytes */
    int width;
    uint32_t narrow_ids;  /* token ids below this fit in cells of a byte */
    uint32_t count_code;  /* a separator holding this (or more) has its count in ``big`` */
    Marks *marks;
    uint64_t *starts;     /* the first position of every 64th word (``word_start``) */
    uint64_t *long_ends;  /* the separators of the words of LONG_WORD bytes or more, in order */
    int32_t nlong, longcap;
    BigCount *big;        /* by position */
    int32_t nbig, bigcap;
    int32_t nwords;
    uint64_t npos;
    uint64_t poscap;      /* cells and marks made for this many positions (``layout_room``) */
    size_t startcap;      /* entries made for in ``starts`` */
    Token *vocab;         /* each token id's bytes */
    int32_t ntok, tokcap;
    int32_t nbase;        /* base tokens: no merge has been made while ``ntok`` is this */
    PairRec *pairs;
    int32_t npairs, paircap;
    int32_t *spare;       /* records given up, for new pairs to reuse */
    int32_t nspare, sparecap;
    int64_t floor;        /* a plain run keeps no new pair counted below this (see ``Core_run``) */
    int paired;           /* the pairs are counted (``ready``) */
    uint64_t *noted;      /* a bit per pair: changed in this step, its count before noted */
    Slot *slots;          /* hash table of (a, b) (_pair_records.h) */
    uint32_t hmask, hused;
    Entry *heap;
    int32_t heapn, heapcap;
    int64_t live;         /* pairs with a count above 0: the size of pair_counter */
    int64_t stored;       /* positions held in the lists of live pairs */
    int64_t corpus_bytes; /* the words' bytes times their counts */
    size_t freed;         /* bytes of pair_positions arrays freed since memory was last given back */
    int64_t held;         /* bytes of pair_positions arrays held now */
    int64_t budget;       /* bytes they may hold (0: no bound; see ``Core_run``) */
    uint64_t *unlisted;   /* a bit per pair: counted, its positions not kept (``relist``) */
    int64_t relists;      /* passes over the layout that found unlisted pairs' positions */
    Touch *touch;         /* the pairs this step changed, each with its count before */
    int32_t ntouch, touchcap;
    Events events;        /* a detailed step's */
} Core;

/* -- cells and marks -------------------------------------------------------------------- */

static inline int is_start(const Core *c, uint64_t p) {
    return (int)(c->marks[p >> 6].start >> (p & 63) & 1);
}

static inline int is_sep(const Core *c, uint64_t p) {
    return (int)(c->marks[p >> 6].sep >> (p & 63) & 1);
}

/* The cell at ``p`` as stored: a separator's count (or the code that it is kept aside). */
static inline uint32_t raw_cell(const Core *c, uint64_t p) {
    return c->width == 1 ? ((const uint8_t *)c->cells)[p] : ((const uint32_t *)c->cells)[p];
}

static inline void set_raw_cell(Core *c, uint64_t p, uint32_t v) {
    if (c->width == 1) ((uint8_t *)c->cells)[p] = (uint8_t)v;
    else ((uint32_t *)c->cells)[p] = v;
}

/* The id of the token that starts at ``p``. In cells of a byte, a token followed at once by
 * another start is one byte, its id; a longer one keeps its id in its first two cells. */
static inline uint32_t cell(const Core *c, uint64_t p) {
    if (c->width != 1) return ((const uint32_t *)c->cells)[p];
    const uint8_t *b = (const uint8_t *)c->cells + p;
    return is_start(c, p + 1) ? b[0] : (uint32_t)b[0] | (uint32_t)b[1] << 8;
}

/* Token ``v``, ``len`` bytes long, now starts at ``p``. */
static inline void set_cell(Core *c, uint64_t p, uint32_t v, int32_t len) {
    if (c->width != 1) {
        ((uint32_t *)c->cells)[p] = v;
        return;
    }
    uint8_t *b = (uint8_t *)c->cells + p;
    b[0] = (uint8_t)v;
    if (len > 1) b[1] = (uint8_t)(v >> 8);
}

static inline const void *cell_address(const Core *c, uint64_t p) {
    return (const uint8_t *)c->cells + p * (uint64_t)c->width;
}

/* The token at ``p`` (a start that is no separator), or -1 at a separator. */
static inline int32_t token_at(const Core *c, uint64_t p) {
    return is_sep(c, p) ? -1 : (int32_t)cell(c, p);
}

/* The position after the token at ``pos``. */
static inline uint64_t next_start(const Core *c, uint64_t pos) {
    return pos + (uint64_t)c->vocab[cell(c, pos)].len;
}

/* The largest count a separator's cell holds itself. */
static uint32_t largest_count(int width) {
    return width == 1 ? UINT8_MAX : UINT32_MAX;
}

/* Make every cell 4 bytes, for the id past 16 bits a merge is about to make. In place, from
 * the last cell back: the 4 bytes of cell q lie past the bytes p and p + 1 that cell p < q is
 * read from. The counts kept aside that the wider cells hold go back into their separators. */
static int widen(Core *c) {
    uint32_t *cells = realloc(c->cells, (size_t)(c->npos ? c->npos : 1) * sizeof(uint32_t));
    if (!cells) {
        PyErr_NoMemory();
        return -1;
    }
    c->cells = cells;
    advise_huge_mapping(cells, (size_t)c->npos * sizeof(uint32_t));
    for (uint64_t p = c->npos; p-- > 0;) cells[p] = !is_start(c, p) ? 0 : is_sep(c, p) ? raw_cell(c, p) : cell(c, p);
    c->width = 4;
    uint32_t code = largest_count(4);
    int32_t kept = 0;
    for (int32_t i = 0; i < c->nbig; i++) {
        if (c->big[i].count < code) {
            set_raw_cell(c, c->big[i].at, (uint32_t)c->big[i].count);
        } else {
            set_raw_cell(c, c->big[i].at, code);
            c->big[kept++] = c->big[i];
        }
    }
    c->nbig = kept;
    c->count_code = code;
    return 0;
}

/* -- pair_positions lists, tokens, memory given back ---------------------------------- */

static inline uint8_t *positions_bytes_of(Positions *ps) {
    return ps->cap ? ps->v : ps->in;
}

/* Bytes a positions list holds outside its record. */
static size_t positions_bytes(const Positions *ps) {
    return ps->cap;
}

/* Empty a list, its array's bytes counted as given back. */
static void positions_free(Core *c, Positions *ps) {
    c->freed += positions_bytes(ps);
    c->held -= positions_bytes(ps);
    if (ps->cap) free(ps->v);
    *ps = (Positions){0};
}

/* Make an empty list's room for ``k`` bytes at once. */
static int positions_reserve(Core *c, Positions *ps, uint64_t k) {
    if (k <= INLINE) return 0;
    if (k > UINT32_MAX || !(ps->v = malloc((size_t)k))) {
        PyErr_NoMemory();
        return -1;
    }
    ps->cap = (uint32_t)k;
    c->held += (int64_t)k;
    return 0;
}

/* Give back the room past a list's ``len`` bytes: into the record if they fit there. */
static void positions_fit(Core *c, Positions *ps) {
    if (!ps->cap || ps->cap == ps->len) return;
    uint32_t cap = ps->cap, len = ps->len;
    if (len <= INLINE) {
        uint8_t keep[INLINE];
        memcpy(keep, ps->v, len);
        free(ps->v);
        memcpy(ps->in, keep, sizeof(keep));
        ps->cap = 0;
    } else {
        uint8_t *v = realloc(ps->v, len);
        if (v) ps->v = v;  /* else the larger array stays, as good */
        ps->cap = v ? len : cap;
    }
    c->freed += cap - ps->cap;
    c->held -= cap - ps->cap;
}

/* ``d`` as a varint at ``out``; its length. */
static inline uint32_t put_varint(uint8_t *out, uint64_t d) {
    uint32_t k = 0;
    for (; d >= 128; d >>= 7) out[k++] = (uint8_t)(d | 128);
    out[k++] = (uint8_t)d;
    return k;
}

static inline uint32_t varint_len(uint64_t d) {
    uint32_t k = 1;
    for (; d >= 128; d >>= 7) k++;
    return k;
}

/* A list read in order, a position at a time (``positions_next``). */
typedef struct {
    const uint8_t *p, *end;
    uint64_t at;
} Reader;

static inline Reader positions_read(Positions *ps) {
    const uint8_t *b = positions_bytes_of(ps);
    return (Reader){b, b + ps->len, 0};
}

/* The next position into ``*pos``: 1, or 0 at the end. */
static inline int positions_next(Reader *r, uint64_t *pos) {
    if (r->p == r->end) return 0;
    uint64_t d = 0;
    int shift = 0;
    uint8_t byte;
    do {
        byte = *r->p++;
        d |= (uint64_t)(byte & 127) << shift;
        shift += 7;
    } while (byte & 128);
    *pos = r->at += d;
    return 1;
}

static int positions_add(Core *c, Positions *ps, uint64_t pos) {
    if (ps->n && pos <= ps->last) {  /* the order the distances rely on */
        PyErr_SetString(PyExc_SystemError, "a pair_positions list must grow left to right");
        return -1;
    }
    uint64_t d = pos - ps->last;
    uint32_t need = ps->len + varint_len(d);
    if (need > (ps->cap ? ps->cap : INLINE)) {  /* out of the record, or full */
        uint64_t cap = ps->cap ? 2 * (uint64_t)ps->cap : FIRST_ARRAY;
        if (cap > UINT32_MAX) {
            PyErr_SetString(PyExc_MemoryError, "a pair_positions list would pass 4 GB");
            return -1;
        }
        c->freed += positions_bytes(ps);  /* where realloc moves the array */
        uint8_t *v = ps->cap ? realloc(ps->v, (size_t)cap) : malloc((size_t)cap);
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        c->held += (int64_t)cap - (int64_t)ps->cap;
        if (!ps->cap) memcpy(v, ps->in, ps->len);
        ps->v = v;
        ps->cap = (uint32_t)cap;
    }
    put_varint(positions_bytes_of(ps) + ps->len, d);
    ps->len = need;
    ps->last = pos;
    ps->n++;
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
 * free, and a quarter of a byte for every position the lists hold, they go back to the
 * system: a trim walks the whole heap, which in a layout of billions of positions is GBs,
 * so it waits for more the more there is. Large arrays never land there: they get mappings
 * of their own (engine.corpus.shards.keep_mmap_threshold, before a Core is made), which
 * realloc grows in place. */
#define GIVE_BACK (2 << 20)
static void give_back(Core *c) {
    if (c->freed < GIVE_BACK || c->freed < (size_t)c->stored / 4) return;
    c->freed = 0;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* -- pair records and their hash table (_pair_records.h) ----------------------------- */

#define NOTED_WORDS(pairs) (((size_t)(pairs) + 63) / 64)

/* What the shared pair code asks of this core. A record is 32 bytes with its first positions
 * inside it: a pair changed in this step is noted in a bit beside it, in ``noted``. */
static int more_bits(uint64_t **bits, size_t from, size_t to) {
    uint64_t *more = realloc(*bits, to * sizeof(uint64_t));
    if (!more) {
        PyErr_NoMemory();
        return -1;
    }
    memset(more + from, 0, (to - from) * sizeof(uint64_t));
    *bits = more;
    return 0;
}

static int more_pairs(Core *c) {
    size_t words = NOTED_WORDS(c->paircap);
    if (grow((void **)&c->pairs, &c->paircap, (int64_t)c->npairs + 1, sizeof(PairRec))) return -1;
    return more_bits(&c->noted, words, NOTED_WORDS(c->paircap)) || more_bits(&c->unlisted, words, NOTED_WORDS(c->paircap)) ? -1 : 0;
}

static inline int change_noted(const Core *c, int32_t p) {
    return (int)(c->noted[p >> 6] >> (p & 63) & 1);
}

static inline void note_change(Core *c, int32_t p) {
    c->noted[p >> 6] |= 1ull << (p & 63);
}

static int32_t new_record(Core *c) {
    if (c->nspare) return c->spare[--c->nspare];
    return c->npairs == c->paircap && more_pairs(c) ? -1 : c->npairs++;
}

static inline int add_position(Core *c, int32_t p, int64_t at) {
    return positions_add(c, &c->pairs[p].pos, (uint64_t)at);
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
    free(c->cells);
    free(c->marks);
    free(c->big);
    free(c->starts);
    free(c->long_ends);
    for (int32_t t = 0; t < c->ntok; t++) free(c->vocab[t].data);
    free(c->vocab);
    for (int32_t p = 0; p < c->npairs; p++) positions_free(c, &c->pairs[p].pos);
    free(c->pairs);
    free(c->spare);
    free(c->noted);
    free(c->unlisted);
    free(c->slots);
    free(c->heap);
    free(c->touch);
    events_free(&c->events);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

/* Mark position ``p`` as where a token starts, and also a separator if ``sep``. */
static inline void mark(Core *c, uint64_t p, int sep) {
    c->marks[p >> 6].start |= 1ull << (p & 63);
    if (sep) c->marks[p >> 6].sep |= 1ull << (p & 63);
}

/* The separator at ``pos`` after a word of ``count``: the count in its cell, or in ``big``. */
static int put_separator(Core *c, uint64_t pos, int64_t count) {
    mark(c, pos, 1);
    if (count < c->count_code) {
        set_raw_cell(c, pos, (uint32_t)count);
        return 0;
    }
    if (grow((void **)&c->big, &c->bigcap, (int64_t)c->nbig + 1, sizeof(BigCount))) return -1;
    c->big[c->nbig++] = (BigCount){pos, count};
    set_raw_cell(c, pos, c->count_code);
    return 0;
}

/* Room in the layout for ``positions`` cells (of a byte: before any merge) and their marks,
 * and for the starts of ``words`` words: -1 (with MemoryError set) if there is none. The
 * arrays grow by realloc, which moves the mappings of large ones without copying
 * (engine.corpus.shards.keep_mmap_threshold): a corpus read in parts never holds itself
 * twice. Each mapping is asked for huge pages whole, before what it grew by is touched: the
 * merges read the layout at scattered places, and a realloc that moves a mapping as it grows
 * again leaves its huge pages in 4 KB ones, so the room for every part is best made at once
 * (``Core.reserve``). */
static int layout_room(Core *c, uint64_t positions, size_t words) {
    if (positions > c->poscap) {
        size_t marks = (size_t)(positions + 63) / 64;
        uint8_t *cells = realloc(c->cells, (size_t)positions);
        if (cells) c->cells = cells;
        Marks *m = cells ? realloc(c->marks, marks * sizeof(Marks)) : NULL;
        if (m) c->marks = m;
        if (!cells || !m) {
            PyErr_NoMemory();
            return -1;
        }
        advise_huge_mapping(c->cells, (size_t)positions);
        advise_huge_mapping(c->marks, marks * sizeof(Marks));
        c->poscap = positions;
    }
    if (words / 64 + 1 > c->startcap) {
        uint64_t *starts = realloc(c->starts, (words / 64 + 1) * sizeof(uint64_t));
        if (!starts) {
            PyErr_NoMemory();
            return -1;
        }
        c->starts = starts;
        c->startcap = words / 64 + 1;
    }
    return 0;
}

/* Lay out ``nw`` more words (their bytes one after another in ``s``, each ending at
 * ``ends``, each with its count in ``counts``) in cells of a byte after those laid out
 * already, a separator after each, and record where they start (room made by
 * ``layout_room``). Their pairs are counted from the cells later (``recount``), when the
 * buffers they came from may be gone: the table of counts is never held beside the pairs'
 * positions. */
static int lay_out(Core *c, const uint8_t *s, const int64_t *ends, const int64_t *counts, Py_ssize_t nw) {
    uint64_t pos = c->npos, n = pos + (pos == 0) + (nw ? (uint64_t)ends[nw - 1] : 0) + (uint64_t)nw;
    size_t marks = ((size_t)pos + 63) / 64, more = ((size_t)n + 63) / 64;
    if ((int64_t)c->nwords + nw > INT32_MAX) {  /* words are int32 */
        PyErr_SetString(PyExc_MemoryError, "too many distinct pre-tokens to lay out (over 2^31)");
        return -1;
    }
    if (layout_room(c, n ? n : 1, (size_t)c->nwords + (size_t)nw)) return -1;
    memset(c->marks + marks, 0, (more - marks) * sizeof(Marks));
    c->npos = n;
    if (pos == 0 && put_separator(c, pos++, 0)) return -1;
    for (Py_ssize_t w = 0, from = 0; w < nw; from = ends[w++]) {
        int64_t k = counts[w];
        if (k < 0) {
            PyErr_SetString(PyExc_ValueError, "word counts must not be negative");
            return -1;
        }
        if (!(c->nwords & 63)) c->starts[c->nwords >> 6] = pos;
        c->nwords++;
        c->corpus_bytes += (ends[w] - from) * k;
        for (int64_t i = from; i < ends[w]; i++) {
            mark(c, pos, 0);
            set_raw_cell(c, pos++, s[i]);
        }
        if (ends[w] - from >= LONG_WORD) {
            if (grow((void **)&c->long_ends, &c->longcap, (int64_t)c->nlong + 1, sizeof(uint64_t))) return -1;
            c->long_ends[c->nlong++] = pos;
        }
        if (put_separator(c, pos++, k)) return -1;
    }
    return 0;
}

/* Lay out a table given as Python buffers (Core_init's, Core_extend's): 0, or -1 with an
 * exception set. */
static int lay_out_table(Core *c, PyObject *args, const char *format, PyObject **base, unsigned long *narrow) {
    Py_buffer words, ends, counts;
    int parsed = base ? PyArg_ParseTuple(args, format, &words, &ends, &counts, &PyList_Type, base, narrow)
                      : PyArg_ParseTuple(args, format, &words, &ends, &counts);
    if (!parsed) return -1;
    int r = -1;
    Py_ssize_t nw = counts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *end = ends.buf;
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
    if (base && (*narrow < 257 || *narrow > 65536)) {
        PyErr_SetString(PyExc_ValueError, "narrow_ids must be from 257 to 65536");
        goto done;
    }
    if (base) {
        c->narrow_ids = (uint32_t)*narrow;
        c->width = 1;
        c->count_code = largest_count(1);
        for (Py_ssize_t t = 0; t < PyList_GET_SIZE(*base); t++) {
            Token tok;
            if (base_token(PyList_GET_ITEM(*base, t), &tok) || add_token(c, &tok, NULL)) goto done;
        }
        c->nbase = c->ntok;
        if (rehash(c, 1 << 8)) goto done;
    }
    r = lay_out(c, words.buf, end, counts.buf, nw);
done:
    PyBuffer_Release(&words);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&counts);
    return r;
}

/* Core(words, ends, counts, base_tokens, narrow_ids=65536): lay out the words of a
 * ``WordTable`` (its three buffers; engine/corpus/word_table.py); more may follow
 * (``extend``); their pairs are counted and queued when first needed (``ready``). Token ids
 * below ``narrow_ids`` (at most 65,536) are kept in cells of a byte; a lower one widens the
 * cells to 4 bytes sooner (a test's way to reach that). */
static int Core_init(Core *c, PyObject *args, PyObject *Py_UNUSED(kw)) {
    PyObject *base;
    unsigned long narrow = 65536;
    if (c->vocab) {
        PyErr_SetString(PyExc_RuntimeError, "a Core is initialized once");
        return -1;
    }
    return lay_out_table(c, args, "y*y*y*O!|k", &base, &narrow);
}

/* extend(words, ends, counts): lay out a table's words after those laid out already, before
 * the pairs are counted: a corpus too large to hold twice is laid out a part at a time. */
static PyObject *Core_extend(Core *c, PyObject *args) {
    if (c->paired) {
        PyErr_SetString(PyExc_RuntimeError, "words are laid out before the pairs are counted");
        return NULL;
    }
    if (lay_out_table(c, args, "y*y*y*", NULL, NULL)) return NULL;
    Py_RETURN_NONE;
}

/* reserve(words, bytes) -> bool: make room in the layout for that many more words and bytes
 * of words before they are laid out (``layout_room``): at most, as a corpus counted in parts
 * knows it before its parts are read. Only a hint: if the system refuses that much (a bound
 * far above what the parts hold), False, and the room is made as the parts come. */
static PyObject *Core_reserve(Core *c, PyObject *args) {
    unsigned long long words, bytes;
    if (!PyArg_ParseTuple(args, "KK", &words, &bytes)) return NULL;
    if (c->paired) {
        PyErr_SetString(PyExc_RuntimeError, "words are laid out before the pairs are counted");
        return NULL;
    }
    if (layout_room(c, c->npos + (c->npos == 0) + bytes + words, (size_t)c->nwords + (size_t)words)) {
        if (!PyErr_ExceptionMatches(PyExc_MemoryError)) return NULL;
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

/* -- merging ---------------------------------------------------------------------------- */

/* A list read AHEAD positions before each is used, its cells and marks asked for as it is
 * read: a merge or a compaction reads them at positions scattered through a layout far
 * larger than the caches. */
typedef struct {
    Reader in;
    uint64_t ring[AHEAD];
    uint32_t used, held; /* positions used; read and not yet used */
    int end;             /* a merge's: the cache line after each position's, where a word
                          * read there ends with its count (a compaction reads no count) */
} Ahead;

static inline void fetch_position(const Core *c, uint64_t pos, int end) {
    PREFETCH(cell_address(c, pos));
    if (end) PREFETCH((const uint8_t *)cell_address(c, pos) + 63);
    PREFETCH(&c->marks[pos >> 6]);
}

static inline Ahead ahead_read(const Core *c, Positions *ps, int end) {
    Ahead ah = {positions_read(ps), {0}, 0, 0, end};
    for (; ah.held < AHEAD && positions_next(&ah.in, &ah.ring[ah.held]); ah.held++) fetch_position(c, ah.ring[ah.held], end);
    return ah;
}

/* The next position into ``*pos``: 1, or 0 at the end. */
static inline int ahead_next(const Core *c, Ahead *ah, uint64_t *pos) {
    if (!ah->held) return 0;
    uint64_t *slot = &ah->ring[ah->used++ & (AHEAD - 1)];
    *pos = *slot;
    if (positions_next(&ah->in, slot))
        fetch_position(c, *slot, ah->end);
    else
        ah->held--;
    return 1;
}

/* The start of the token before the one at ``pos`` (or of the separator there): the last
 * start marked before it. */
static inline uint64_t prev_start(const Core *c, uint64_t pos) {
    uint64_t p = pos - 1, i = p >> 6;
    uint64_t m = c->marks[i].start & (~0ull >> (63 - (p & 63)));
    while (!m) m = c->marks[--i].start;  /* position 0 is a separator: it ends */
    return (i << 6) + (uint64_t)highest_bit(m);
}

/* The first of the long words' separators at or after ``pos``. */
static uint64_t long_end(const Core *c, uint64_t pos) {
    int32_t lo = 0, hi = c->nlong - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->long_ends[mid] < pos) lo = mid + 1;
        else hi = mid;
    }
    return c->long_ends[lo];
}

/* The separator at or after ``pos``: the end of its word. Most words end within a word of
 * marks; one that does not within SHORT_WORD of them is LONG_WORD bytes or more, and its end
 * is looked up (``long_ends``), so a merge costs what its occurrences cost, not the word's
 * length. */
static inline uint64_t word_end(const Core *c, uint64_t pos) {
    uint64_t i = pos >> 6;
    uint64_t m = c->marks[i].sep & (~0ull << (pos & 63));
    for (int k = 0; !m; k++) {
        if (k == SHORT_WORD) return long_end(c, pos);
        m = c->marks[++i].sep;
    }
    return (i << 6) + (uint64_t)lowest_bit(m);
}

/* Word w's first position: from the last word before it whose start is kept, a word's end at
 * a time. 8 bytes every 64 words rather than every word: 75 million words hold 9 MB, not
 * 600. */
static uint64_t word_start(const Core *c, int32_t w) {
    uint64_t pos = c->starts[w >> 6];
    for (int32_t k = w & 63; k > 0; k--) pos = word_end(c, pos) + 1;
    return pos;
}

/* The word holding position ``pos``. */
static int32_t word_at(const Core *c, uint64_t pos) {
    int32_t lo = 0, hi = (c->nwords - 1) / 64;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (c->starts[mid] <= pos) lo = mid;
        else hi = mid - 1;
    }
    int32_t w = lo * 64;
    for (uint64_t sep, at = c->starts[lo]; (sep = word_end(c, at)) < pos; at = sep + 1) w++;
    return w;
}

/* The count the separator at ``sep`` holds. */
static inline int64_t count_at(const Core *c, uint64_t sep) {
    uint32_t v = raw_cell(c, sep);
    if (v < c->count_code) return v;
    int32_t lo = 0, hi = c->nbig - 1;  /* kept aside, by position */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (c->big[mid].at < sep) lo = mid + 1;
        else hi = mid;
    }
    return c->big[lo].count;
}

/* Does the pair (a, b) start at ``pos`` now? The check a merge makes before using a
 * recorded position: a token still starts there (a recorded position is never a separator),
 * and the next is no separator. */
static inline int starts_pair(const Core *c, uint64_t pos, int32_t a, int32_t b) {
    if (!is_start(c, pos) || (int32_t)cell(c, pos) != a) return 0;
    uint64_t nxt = pos + (uint64_t)c->vocab[a].len;
    return !is_sep(c, nxt) && (int32_t)cell(c, nxt) == b;
}

/* Lists at least this long are compacted once most of their positions are stale. */
#define COMPACT_FROM 1024

/* Drop the stale positions of pair record ``r`` (keeping the live ones in order) and give
 * back the room they took. A pair's count is at least its live positions (each weighs its
 * word's count, at least 1), so a list over twice as long as the count is mostly stale: a
 * neighbour's merges took its positions away, and it would hold them until its own merge.
 * In a long word, that is most of what the lists hold. Written over the list as it is read:
 * the distance between two kept positions never takes more bytes than the distances it
 * spans did. */
static void compact(Core *c, PairRec *r) {
    Positions *ps = &r->pos;
    Ahead in = ahead_read(c, ps, 0);
    uint8_t *out = positions_bytes_of(ps);
    uint32_t len = 0;
    uint64_t last = 0, pos;
    int32_t k = 0;
    while (ahead_next(c, &in, &pos))
        if (starts_pair(c, pos, r->a, r->b)) {
            len += put_varint(out + len, pos - last);
            last = pos;
            k++;
        }
    c->stored -= ps->n - k;
    ps->len = len;
    ps->last = last;
    ps->n = k;
    positions_fit(c, ps);
}

/* -- lists within a budget ---------------------------------------------------------------- */

static inline int is_unlisted(const Core *c, int32_t p) {
    return (int)(c->unlisted[p >> 6] >> (p & 63) & 1);
}

/* Pair ``p``'s positions dropped, listed or not (a pair that is gone, or about to be listed
 * afresh). */
static void drop_positions(Core *c, int32_t p) {
    c->stored -= c->pairs[p].pos.n;
    positions_free(c, &c->pairs[p].pos);
    c->unlisted[p >> 6] &= ~(1ull << (p & 63));
}

/* Keep pair ``p`` counted without its positions. Its list's bytes stay in the record, where
 * its last position was: they bound the list it would have again, since the positions of a
 * pair it does not hold already only go (a pair gains positions only in the merge that makes
 * its newer token). */
static void unlist(Core *c, int32_t p, uint32_t bytes) {
    drop_positions(c, p);
    c->pairs[p].pos.last = bytes;
    c->unlisted[p >> 6] |= 1ull << (p & 63);
}

/* A pair that a budget may list or not: its count and its list's bytes. */
typedef struct {
    int64_t count;
    int32_t pair;
    uint32_t bytes;
} Choice;

static int more_counted(const void *x, const void *y) {
    int64_t a = ((const Choice *)x)->count, b = ((const Choice *)y)->count;
    return (a < b) - (a > b);
}

/* The live pairs listed (``listed``) or unlisted, each with the bytes of its list (or of the
 * list it would have), the most counted first: NULL with MemoryError. A listed pair whose
 * list is inside its record holds no room of the budget, and is left out. */
static Choice *choices(const Core *c, int listed, int32_t *n) {
    Choice *out = malloc(((size_t)c->npairs + 1) * sizeof(Choice));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    *n = 0;
    for (int32_t p = 0; p < c->npairs; p++) {
        const PairRec *r = &c->pairs[p];
        if (r->count <= 0 || is_unlisted(c, p) == listed || (listed && !r->pos.cap)) continue;
        out[(*n)++] = (Choice){r->count, p, listed ? r->pos.cap : (uint32_t)r->pos.last};
    }
    qsort(out, (size_t)*n, sizeof(Choice), more_counted);
    return out;
}

/* Unlist the least counted pairs until the lists hold ``target`` bytes or fewer. */
static int shed(Core *c, int64_t target) {
    int32_t n;
    Choice *ch = choices(c, 1, &n);
    if (!ch) return -1;
    for (int32_t i = n; i-- > 0 && c->held > target;) unlist(c, ch[i].pair, c->pairs[ch[i].pair].pos.len);
    free(ch);
    return 0;
}

/* A small open-addressed table of the pairs a relist looks for, by their ids. */
typedef struct {
    uint64_t *keys;
    int32_t *pairs;
    uint32_t mask;
} Wanted;

static inline int32_t wanted_pair(const Wanted *w, int32_t a, int32_t b) {
    uint64_t key = pair_key(a, b);
    for (uint32_t i = slot_of(key, w->mask);; i = (i + 1) & w->mask) {
        if (w->keys[i] == key) return w->pairs[i];
        if (w->keys[i] == EMPTY_KEY) return -1;
    }
}

static inline int has_bit(const uint64_t *bits, uint32_t i) {
    return (int)(bits[i >> 6] >> (i & 63) & 1);
}

/* Find the positions of unlisted pair ``m``, about to be merged or read, and of as many of
 * the most counted unlisted pairs besides as the budget has room for (half of it at least:
 * the least counted listed pairs make room first), in one pass over the layout: the merges
 * after this one find most of their pairs' positions kept. The positions found are the live
 * ones, in order, as a list kept all along would hold them (and some stale ones). */
static int relist(Core *c, int32_t m) {
    if (c->budget > 0 && c->held > c->budget / 2 && shed(c, c->budget / 2)) return -1;
    int32_t n, k = 0;
    Choice *ch = choices(c, 0, &n);
    if (!ch) return -1;
    int64_t room = c->budget > 0 ? c->budget - c->held : INT64_MAX;
    for (int32_t i = 0; i < n; i++) {  /* m first, then the best that fit */
        if (ch[i].pair == m) {
            Choice t = ch[i];
            memmove(ch + 1, ch, (size_t)i * sizeof(Choice));
            ch[0] = t;
            break;
        }
    }
    for (int64_t used = 0; k < n && (k == 0 || used + ch[k].bytes <= room); used += ch[k++].bytes) {}
    uint32_t size = 4;
    while (size < 2 * (uint32_t)k) size *= 2;
    size_t bitwords = ((size_t)c->ntok + 63) / 64;
    Wanted w = {malloc(size * sizeof(uint64_t)), malloc(size * sizeof(int32_t)), size - 1};
    uint64_t *lefts = calloc(bitwords, sizeof(uint64_t)), *rights = calloc(bitwords, sizeof(uint64_t));
    int r = -1;
    if (!w.keys || !w.pairs || !lefts || !rights) {
        PyErr_NoMemory();
        goto done;
    }
    memset(w.keys, 0xff, size * sizeof(uint64_t));
    for (int32_t i = 0; i < k; i++) {
        int32_t p = ch[i].pair;
        PairRec *rec = &c->pairs[p];
        uint32_t bytes = (uint32_t)rec->pos.last;
        drop_positions(c, p);
        if (positions_reserve(c, &rec->pos, bytes)) goto done;  /* room enough: never grown */
        uint64_t key = pair_key(rec->a, rec->b);
        uint32_t j = slot_of(key, w.mask);
        while (w.keys[j] != EMPTY_KEY) j = (j + 1) & w.mask;
        w.keys[j] = key;
        w.pairs[j] = p;
        lefts[rec->a >> 6] |= 1ull << (rec->a & 63);
        rights[rec->b >> 6] |= 1ull << (rec->b & 63);
    }
    int32_t x = -1;  /* the token before, -1 at a separator */
    uint64_t prv = 0;
    for (uint64_t i = 0, words = (c->npos + 63) / 64; i < words; i++) {  /* the starts, 64 at a time */
        for (uint64_t m = c->marks[i].start, sep = c->marks[i].sep; m; m &= m - 1) {
            int bit = lowest_bit(m);
            uint64_t pos = i << 6 | (uint64_t)bit;
            if (sep >> bit & 1) {
                x = -1;
                continue;
            }
            int32_t y = (int32_t)cell(c, pos);
            if (x >= 0 && has_bit(lefts, (uint32_t)x) && has_bit(rights, (uint32_t)y)) {
                int32_t p = wanted_pair(&w, x, y);
                if (p >= 0 && add_position(c, p, (int64_t)prv)) goto done;
            }
            x = y;
            prv = pos;
        }
    }
    for (int32_t i = 0; i < k; i++) {
        Positions *ps = &c->pairs[ch[i].pair].pos;
        c->stored += ps->n;
        positions_fit(c, ps);
    }
    c->relists++;
    r = 0;
done:
    free(ch);
    free(w.keys);
    free(w.pairs);
    free(lefts);
    free(rights);
    return r;
}

/* Forget record ``p``, a pair made in this step and never queued: its positions, its slot,
 * the record itself (kept for a new pair to reuse). */
static int give_up(Core *c, int32_t p) {
    PairRec *r = &c->pairs[p];
    drop_positions(c, p);
    unslot(c, p);
    *r = (PairRec){.a = -1, .b = -1};
    if (grow((void **)&c->spare, &c->sparecap, (int64_t)c->nspare + 1, sizeof(int32_t))) return -1;
    c->spare[c->nspare++] = p;
    return 0;
}

/* Entries on the heap past twice the live pairs (and this many) make a plain run sweep it. */
#define SWEEP_FROM 4096

/* In a plain run, a pair whose count fell to 0 in a neighbour's merge keeps its heap entry,
 * deep in the heap, and its record, until the entry reaches the top. Once such entries are
 * as many as the live pairs, the heap is made again of the live ones and the dead records are
 * given up. */
static int sweep(Core *c) {
    for (int32_t p = 0; p < c->npairs; p++)
        if (c->pairs[p].a >= 0 && c->pairs[p].count <= 0 && give_up(c, p)) return -1;
    return requeue(c);
}

/* Merge every occurrence of pair record ``m`` left to right and apply the count changes.
 * With ``queue`` the new pairs go on the heap. */
static int merge(Core *c, int32_t m, int queue) {
    if (is_unlisted(c, m) && relist(c, m)) return -1;
    int32_t a = c->pairs[m].a, b = c->pairs[m].b, tok = c->ntok;
    Token left = c->vocab[a], right = c->vocab[b];  /* copies: adding may move the array */
    if ((uint32_t)tok >= c->narrow_ids && c->width == 1 && widen(c)) return -1;
    if (add_token(c, &left, &right)) return -1;
    Positions ps = c->pairs[m].pos;
    c->pairs[m].pos = (Positions){0};
    c->pairs[m].count = 0;
    c->live--;
    c->stored -= ps.n;
    for (int32_t i = 0; i < c->ntouch; i++) c->noted[c->touch[i].pair >> 6] &= ~(1ull << (c->touch[i].pair & 63));
    c->ntouch = 0;  /* the last step's changes, forgotten */
    uint64_t la = (uint64_t)left.len, lb = (uint64_t)right.len;
    int64_t seen = -1, end = -1;  /* the last word's end was found from ``seen``: positions */
    int64_t w = 0;                /* between them lie in it, so its count ``w`` is known */
    Ahead in = ahead_read(c, &ps, 1);
    for (uint64_t pos; ahead_next(c, &in, &pos);) {
        if (!is_start(c, pos) || (int32_t)cell(c, pos) != a) continue;
        uint64_t nxt = pos + la;
        if (is_sep(c, nxt) || (int32_t)cell(c, nxt) != b) continue;
        uint64_t after = nxt + lb, prv = prev_start(c, pos);
        int32_t x = token_at(c, prv), y = token_at(c, after);
        if ((x >= 0 || y >= 0) && ((int64_t)pos < seen || (int64_t)pos > end)) {  /* no neighbour: no count to change */
            seen = pos;
            end = word_end(c, after);
            w = count_at(c, (uint64_t)end);
        }
        if (x >= 0 && (change(c, m, x, a, -w, 0, -1) || change(c, m, x, tok, w, 0, prv))) goto fail;
        if (y >= 0 && (change(c, m, b, y, -w, 1, -1) || change(c, m, tok, y, w, 1, pos))) goto fail;
        set_cell(c, pos, (uint32_t)tok, left.len + right.len);
        c->marks[nxt >> 6].start &= ~(1ull << (nxt & 63));
    }
    positions_free(c, &ps);
    for (int32_t i = 0; i < c->ntouch; i++) {
        Touch t = c->touch[i];
        PairRec *r = &c->pairs[t.pair];
        int made = r->a == tok || r->b == tok;  /* this step: never queued */
        if (made && r->count < c->floor) {
            if (event_change(&c->events, r->a, r->b, &t, r->count) || give_up(c, t.pair)) return -1;
            continue;
        }
        if (r->count == 0) {  /* dead for good: drop its positions */
            drop_positions(c, t.pair);
        } else if (r->pos.n >= COMPACT_FROM && r->pos.n > 2 * r->count) {
            compact(c, r);
        }
        c->live += (r->count > 0) - (t.before > 0);
        /* Only pairs holding the new token can have risen; nothing has queued them yet. */
        if (queue && r->count > 0 && made &&
            (heap_add(c, (Entry){r->count, t.pair}) || event_push(&c->events, r->a, r->b, r->count)))
            return -1;
        if (event_change(&c->events, r->a, r->b, &t, r->count)) return -1;
    }
    /* A plain run gives up the merged pair's record, its heap entry gone, and sweeps. */
    if (c->floor && (give_up(c, m) || (c->heapn > 2 * c->live + SWEEP_FROM && sweep(c)))) return -1;
    if (c->budget > 0 && c->held > c->budget && shed(c, c->budget / 2)) return -1;
    give_back(c);
    return 0;
fail:
    positions_free(c, &ps);
    return -1;
}

/* Pop the best kept pair: correct or drop stale entries until the top is current. Returns
 * its record, -1 when no pair is left, -2 on error. */
static int32_t pop_best(Core *c, int64_t *count) {
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
            if (c->floor && give_up(c, top.pair)) return -2;  /* dead, and its entry gone */
        }
    }
    return -1;
}

/* The record of the pair (x, y), made if ``make`` and new, else -1 if there is none (or -2 on
 * error). Before the first merge every pair is two bytes, and ``byte_pair`` (given then)
 * finds their records without hashing. */
static inline int32_t pair_record(Core *c, int32_t *byte_pair, uint32_t x, uint32_t y, int make) {
    int32_t *known = byte_pair ? &byte_pair[x << 8 | y] : NULL;
    if (known && *known >= 0) return *known;
    int32_t p = make ? get_pair(c, (int32_t)x, (int32_t)y) : find_pair(c, (int32_t)x, (int32_t)y);
    if (make && p < 0) return -2;
    if (known) *known = p;
    return p;
}

/* The count above which a recount lists a pair whose list is ``len`` bytes (kept in its
 * record), so that the lists fit the budget (-1: all of them). */
static int64_t listed_above(const Core *c) {
    if (c->budget <= 0) return -1;
    Choice *ch = malloc(((size_t)c->npairs + 1) * sizeof(Choice));
    if (!ch) return -2;
    int32_t n = 0;
    int64_t used = 0, above = -1;
    for (int32_t p = 0; p < c->npairs; p++)
        if (c->pairs[p].pos.len > INLINE) ch[n++] = (Choice){c->pairs[p].count, p, c->pairs[p].pos.len};
    qsort(ch, (size_t)n, sizeof(Choice), more_counted);
    for (int32_t i = 0; i < n && above < 0; used += ch[i++].bytes)
        if (used + ch[i].bytes > c->budget) above = ch[i].count;
    free(ch);
    return above;
}

/* Count every pair of the layout afresh, keeping the records of those counted ``floor`` or
 * more (all with 0): how the pairs are counted first, how a plain run's state is made whole
 * again for whatever reads it, and how a run lowers its floor. Two passes over the words:
 * counts and the sizes of the lists (kept meanwhile in the records' list fields), then the
 * positions, each list made at its size; within a budget, only the most counted pairs'
 * (``relist`` finds the others' when they are needed). */
static int recount(Core *c, int64_t floor) {
    int bytes_only = c->ntok == c->nbase;  /* no merge yet: every pair is two bytes */
    int32_t *byte_pair = bytes_only ? malloc(65536 * sizeof(int32_t)) : NULL;
    if (bytes_only && !byte_pair) {
        PyErr_NoMemory();
        return -1;
    }
    if (byte_pair) memset(byte_pair, 0xff, 65536 * sizeof(int32_t));
    for (int32_t p = 0; p < c->npairs; p++) positions_free(c, &c->pairs[p].pos);
    if (c->paircap) memset(c->noted, 0, NOTED_WORDS(c->paircap) * sizeof(uint64_t));
    if (c->paircap) memset(c->unlisted, 0, NOTED_WORDS(c->paircap) * sizeof(uint64_t));
    memset(c->slots, 0xff, (size_t)(c->hmask + 1) * sizeof(Slot));
    c->npairs = c->nspare = c->ntouch = c->heapn = 0;
    c->hused = 0;
    c->live = c->stored = 0;
    c->floor = floor;
    c->paired = 1;
    int r = -1;
    for (uint64_t from = 1, sep; from < c->npos; from = sep + 1) {  /* each word in turn */
        sep = word_end(c, from);
        int64_t k = count_at(c, sep);
        uint64_t pos = from;
        for (uint64_t nxt; !is_sep(c, pos) && !is_sep(c, nxt = next_start(c, pos)); pos = nxt) {
            int32_t p = pair_record(c, byte_pair, cell(c, pos), cell(c, nxt), 1);
            if (p < 0) goto done;
            Positions *ps = &c->pairs[p].pos;
            c->pairs[p].count += k;
            ps->len += varint_len(pos - ps->last);
            ps->last = pos;
            ps->n++;
        }
    }
    int32_t kept = 0;
    for (int32_t p = 0; p < c->npairs; p++)
        if (c->pairs[p].count >= floor) c->pairs[kept++] = c->pairs[p];
    c->npairs = kept;
    int64_t above = listed_above(c);
    if (above == -2) {
        PyErr_NoMemory();
        goto done;
    }
    for (int32_t p = 0; p < kept; p++) {
        uint32_t len = c->pairs[p].pos.len;
        c->pairs[p].pos = (Positions){0};
        if (len > INLINE && c->pairs[p].count <= above) unlist(c, p, len);
        else if (positions_reserve(c, &c->pairs[p].pos, len)) goto done;
    }
    uint32_t size = 1 << 8;
    while (size < 2 * (uint32_t)kept) size *= 2;
    if (rehash(c, size)) goto done;
    c->hused = (uint32_t)kept;
    if (byte_pair) memset(byte_pair, 0xff, 65536 * sizeof(int32_t));  /* the records moved */
    for (uint64_t from = 1; from < c->npos; from = word_end(c, from) + 1) {  /* each word in turn */
        for (uint64_t pos = from, nxt; !is_sep(c, pos) && !is_sep(c, nxt = next_start(c, pos)); pos = nxt) {
            int32_t p = pair_record(c, byte_pair, cell(c, pos), cell(c, nxt), 0);
            if (p >= 0 && !is_unlisted(c, p) && add_position(c, p, (int64_t)pos)) goto done;
        }
    }
    for (int32_t p = 0; p < c->npairs; p++) {
        c->live += c->pairs[p].count > 0;
        c->stored += c->pairs[p].pos.n;
    }
    give_back(c);
    r = requeue(c);
done:
    free(byte_pair);
    return r;
}

/* The pairs counted, and every one kept if a plain run gave some up: what any reader of the
 * pairs sees. */
static int ready(Core *c) {
    return !c->paired || c->floor ? recount(c, 0) : 0;
}

/* The winner: the best kept pair, unless a pair given up could beat it (it is below the
 * floor, or none is left), when the pairs are counted again with a lower floor. */
static int32_t select_pair(Core *c, int64_t *count) {
    for (;;) {
        int32_t m = pop_best(c, count);
        if (m == -2 || !c->floor || (m >= 0 && *count >= c->floor)) return m;
        if (recount(c, c->floor / 4)) return -2;
    }
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
    if ((limit == -1 && PyErr_Occurred()) || ready(c)) return NULL;
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

/* run(n, floor=0, budget=0) -> [(left, right, count), ...]: up to n merges, fewer when the
 * pairs run out. From here on, a pair a merge makes with a count below the floor, raised to
 * ``floor`` if that is higher, is given up at once, its record, slot and positions: most
 * pairs a large corpus makes occur a few times, and a run to a vocabulary whose last merges
 * count some hundreds never needs them (engine/train/trainer.py chooses the floor). The
 * merges stay exact: when the best pair kept is below the floor, everything is counted again
 * with a lower one, and a step or a query counts the pairs again whole. A ``budget`` above 0
 * bounds the bytes of the pair_positions arrays from here on: the least counted pairs are
 * kept as counts alone, and their positions found again, for the most counted of them at
 * once, when one is to be merged (``relist``). */
static PyObject *Core_run(Core *c, PyObject *args) {
    Py_ssize_t n;
    long long floor = 0, budget = 0;
    if (!PyArg_ParseTuple(args, "n|LL", &n, &floor, &budget)) return NULL;
    if (budget > 0) c->budget = budget;
    if (!c->paired && recount(c, 0)) return NULL;
    if (floor > c->floor) c->floor = floor;
    PyObject *done = PyList_New(0);
    if (!done) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t count;
        int32_t m = select_pair(c, &count);
        if (m == -1) break;
        int32_t a = m >= 0 ? c->pairs[m].a : 0, b = m >= 0 ? c->pairs[m].b : 0;  /* the merge may give m up */
        if (m == -2 || merge(c, m, 1) || append_new(done, Py_BuildValue("iiL", a, b, (long long)count))) {
            Py_DECREF(done);
            return NULL;
        }
    }
    return done;
}

/* redo(pairs): merge these known pairs in order without selecting or queueing, then
 * queue every live pair afresh (going back rebuilds the start and redoes the merges). */
static PyObject *Core_redo(Core *c, PyObject *pairs) {
    if (ready(c)) return NULL;
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
    if ((k == -1 && PyErr_Occurred()) || ready(c)) return NULL;
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

/* Write the bytes of the word from ``start`` to ``sep`` to ``out``: its tokens' bytes,
 * whatever the merges so far. */
static void word_bytes(const Core *c, uint64_t start, uint8_t *out) {
    for (uint64_t pos = start; !is_sep(c, pos); pos = next_start(c, pos)) {
        const Token *t = &c->vocab[cell(c, pos)];
        memcpy(out + (pos - start), t->data, (size_t)t->len);
    }
}

/* word(i) -> (bytes, count): word i as it was given. */
static PyObject *Core_word(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    uint64_t start = word_start(c, (int32_t)w), sep = word_end(c, start);
    PyObject *text = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(sep - start));
    if (!text) return NULL;
    word_bytes(c, start, (uint8_t *)PyBytes_AS_STRING(text));
    return Py_BuildValue("(NL)", text, (long long)count_at(c, sep));
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
    for (Py_ssize_t w = 0, start = 1; w < nw; w++) {  /* each word in turn */
        uint64_t sep = word_end(c, (uint64_t)start);
        word_bytes(c, (uint64_t)start, out + at);
        end[w] = at += (int64_t)sep - start;
        count[w] = count_at(c, sep);
        start = (Py_ssize_t)sep + 1;
    }
    return Py_BuildValue("(NNN)", words, ends, counts);
}

/* segmentation(i) -> [token ids]: word i as it is now split. */
static PyObject *Core_segmentation(Core *c, PyObject *arg) {
    Py_ssize_t w = index_arg(arg, c->nwords, "no such word");
    if (w < 0) return NULL;
    PyObject *out = PyList_New(0);
    for (uint64_t pos = word_start(c, (int32_t)w); out && !is_sep(c, pos); pos = next_start(c, pos))
        if (append_new(out, PyLong_FromUnsignedLong(cell(c, pos)))) Py_CLEAR(out);
    return out;
}

/* pair_positions(left, right, limit) -> (recorded, live, [(position, word, live), ...]):
 * how many positions the pair's pair_positions list holds, how many of them the pair
 * still starts at, and the first ``limit`` of them in list order. A read (a pair kept as a count
 * alone has its positions found again first: ``relist``). */
static PyObject *Core_pair_positions(Core *c, PyObject *args) {
    int a, b;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "iin", &a, &b, &limit) || ready(c)) return NULL;
    int known = a >= 0 && b >= 0 && a < c->ntok && b < c->ntok;  /* else no key to look up */
    int32_t p = known ? find_pair(c, a, b) : -1;
    if (p >= 0 && is_unlisted(c, p) && relist(c, p)) return NULL;
    Positions none = {0}, *ps = p >= 0 ? &c->pairs[p].pos : &none;
    int32_t n = ps->n, shown = (int32_t)(limit < 0 ? 0 : limit < n ? limit : n);
    int64_t live = 0;
    Reader in = positions_read(ps);
    PyObject *out = PyList_New(shown);
    uint64_t pos;
    for (int32_t i = 0; positions_next(&in, &pos); i++) {
        int now = starts_pair(c, pos, a, b);
        live += now;
        if (!out || i >= shown) continue;
        PyObject *item = Py_BuildValue("(KiO)", (unsigned long long)pos, word_at(c, pos), now ? Py_True : Py_False);
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
    for (uint64_t pos = word_start(c, (int32_t)w); out && !is_sep(c, pos); pos = next_start(c, pos)) {
        uint64_t prv = prev_start(c, pos), nxt = next_start(c, pos);
        long long before = is_sep(c, prv) ? -1 : (long long)prv, after = is_sep(c, nxt) ? -1 : (long long)nxt;
        if (append_new(out, Py_BuildValue("(KkLL)", (unsigned long long)pos, (unsigned long)cell(c, pos), before, after)))
            Py_CLEAR(out);
    }
    return out;
}

/* pair_counter() -> {(left, right): count} for every live pair (a copy). */
static PyObject *Core_pair_counter(Core *c, PyObject *Py_UNUSED(ignored)) {
    if (ready(c)) return NULL;
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
        "{s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
        "tokens", (Py_ssize_t)c->npos * (Py_ssize_t)c->width,
        "token marks", (Py_ssize_t)(((size_t)c->npos + 63) / 64 * sizeof(Marks)),
        "large word counts", (Py_ssize_t)c->bigcap * (Py_ssize_t)sizeof(BigCount),
        "word starts", (Py_ssize_t)(((size_t)c->nwords / 64 + 1) + (size_t)c->longcap) * (Py_ssize_t)sizeof(uint64_t),
        "vocabulary", (Py_ssize_t)(c->tokcap * sizeof(Token) + tokens),
        "pair records", (Py_ssize_t)(c->paircap * sizeof(PairRec) + NOTED_WORDS(c->paircap) * sizeof(uint64_t)),
        "pair_positions arrays", (Py_ssize_t)positions,
        "hash table", (Py_ssize_t)(c->hmask + 1) * (Py_ssize_t)sizeof(Slot),
        "heap", (Py_ssize_t)c->heapcap * (Py_ssize_t)sizeof(Entry));
}

static PyMethodDef Core_methods[] = {
    {"step", (PyCFunction)Core_step, METH_O, "One merge with its events, or None."},
    {"run", (PyCFunction)Core_run, METH_VARARGS, "Up to n merges; the (left, right, count) of each."},
    {"extend", (PyCFunction)Core_extend, METH_VARARGS, "Lay out more words, before the pairs are counted."},
    {"reserve", (PyCFunction)Core_reserve, METH_VARARGS, "Make room for this many more words and bytes of words, before they are laid out."},
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
    {"corpus_bytes", Py_T_LONGLONG, offsetof(Core, corpus_bytes), Py_READONLY, "The words' bytes times their counts."},
    {"words", Py_T_INT, offsetof(Core, nwords), Py_READONLY, "The number of words laid out."},
    {"relists", Py_T_LONGLONG, offsetof(Core, relists), Py_READONLY, "Passes over the layout that found unlisted pairs' positions."},
    {NULL, 0, 0, 0, NULL},
};

/* The sizes of the pair state, read whole (see ``ready``). */
static PyObject *Core_heap_size(Core *c, void *Py_UNUSED(closure)) {
    return ready(c) ? NULL : PyLong_FromLong(c->heapn);
}

static PyObject *Core_live_pairs(Core *c, void *Py_UNUSED(closure)) {
    return ready(c) ? NULL : PyLong_FromLongLong(c->live);
}

static PyObject *Core_stored_positions(Core *c, void *Py_UNUSED(closure)) {
    return ready(c) ? NULL : PyLong_FromLongLong(c->stored);
}

static PyGetSetDef Core_getset[] = {
    {"heap_size", (getter)Core_heap_size, NULL, "Entries on the heap, stale ones included.", NULL},
    {"live_pairs", (getter)Core_live_pairs, NULL, "Pairs with a count above 0.", NULL},
    {"stored_positions", (getter)Core_stored_positions, NULL, "Positions held by live pairs' lists.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "engine.train._trainer_core.Core",
    .tp_doc = "The trainer's state: laid-out words, pair records, hash table and lazy heap.",
    CORE_TYPE_SLOTS,
    .tp_getset = Core_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.train._trainer_core", "The trainer's compiled state and merge loop.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__trainer_core(void) {
    return module_with_core(&module, &CoreType);
}
