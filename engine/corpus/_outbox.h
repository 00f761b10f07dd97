/* engine/corpus/_outbox.h: the pre-tokens a parallel counter sends to the counters that own them.
 *
 * Parallel counters split the pre-tokens among themselves by hash (engine/corpus/tally_parts.py):
 * each keeps in its tally only those of its own part and sends every other one to its owner,
 * through a file of that counter's, as tables one after another (two int64, words and bytes of
 * words; the words' ends and their counts, int64; their bytes), which the owner gathers once
 * every counter is done. So a new pre-token is kept in one large tally, by its owner; a counter
 * that kept every pre-token it read and handed the others on at the end would keep half of
 * them twice, and a new pre-token's probe of a large tally misses the cache.
 *
 * Sending a pre-token each time it is seen would send a common one millions of times: an
 * outbox first counts what it is given in slots, direct-mapped by hash, few enough to stay in
 * the cache, and sends a slot's pre-token, with its count so far, only when another takes its
 * place or when the counter is done (outbox_close). A write that fails is kept (failed) and
 * said by outbox_close: counting goes on meanwhile, what it would send dropped, and fails there.
 */
#ifndef BPE_TUI_OUTBOX_H
#define BPE_TUI_OUTBOX_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUTBOX_SLOTS_BYTES (1 << 21) /* the slots of all of a counter's outboxes: near one core's L2 */
#define OUTBOX_INLINE 46             /* a slot's room for a pre-token; a longer one is sent as it comes */
#define OUTBOX_TABLES 16384          /* pre-tokens the tables being filled hold, all outboxes together */
#define OUTBOX_TABLE_MIN 1024        /* pre-tokens one outbox's table holds at least, however many there are */

typedef struct {
    uint64_t hash;
    int64_t count; /* 0: the slot is empty */
    uint8_t len;
    uint8_t bytes[OUTBOX_INLINE + 1];
} OutSlot; /* 64 bytes: one cache line */

typedef struct {
    int fd;     /* the owner's file; -1: no outbox (the counter's own part) */
    int failed; /* errno of a write that failed, or 0 */
    OutSlot *slots;
    size_t mask;     /* slots - 1 */
    size_t room;     /* pre-tokens a table holds at most; 16 bytes of theirs a pre-token */
    size_t n;        /* pre-tokens in the table being filled */
    size_t words_len;
    int64_t *table;  /* two int64 of header, then room ends, then room counts */
    uint8_t *words;  /* 16 * room bytes */
} Outbox;

/* Write n bytes at p to fd, all of them: 0, or -1 with errno set. */
static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* An outbox writing to fd, one of parts - 1 that share OUTBOX_SLOTS_BYTES and OUTBOX_TABLES:
 * 0, or -1 when out of memory. */
static int outbox_open(Outbox *o, int fd, size_t parts) {
    size_t others = parts > 1 ? parts - 1 : 1, slots = 64, room = OUTBOX_TABLES / others;
    while (slots * 2 * sizeof(OutSlot) * others <= OUTBOX_SLOTS_BYTES) slots *= 2;
    *o = (Outbox){.fd = fd, .mask = slots - 1, .room = room > OUTBOX_TABLE_MIN ? room : OUTBOX_TABLE_MIN};
    o->slots = calloc(slots, sizeof *o->slots);
    o->table = malloc((2 + 2 * o->room) * sizeof *o->table);
    o->words = malloc(16 * o->room);
    return o->slots && o->table && o->words ? 0 : -1;
}

/* The memory an outbox holds. */
static size_t outbox_bytes(const Outbox *o) { return (o->mask + 1) * sizeof(OutSlot) + (2 + 2 * o->room) * sizeof *o->table + 16 * o->room; }

static void outbox_free(Outbox *o) {
    free(o->slots);
    free(o->table);
    free(o->words);
    o->slots = NULL, o->table = NULL, o->words = NULL;
}

static void outbox_write(Outbox *o, const void *p, size_t n) {
    if (!o->failed && write_all(o->fd, p, n)) o->failed = errno ? errno : EIO;
}

/* Write the table being filled, if it holds any pre-token, and start another. */
static void outbox_flush(Outbox *o) {
    size_t n = o->n;
    if (!n) return;
    o->table[0] = (int64_t)n;
    o->table[1] = (int64_t)o->words_len;
    memmove(o->table + 2 + n, o->table + 2 + o->room, n * sizeof *o->table); /* the counts, right after the ends */
    outbox_write(o, o->table, (2 + 2 * n) * sizeof *o->table);
    outbox_write(o, o->words, o->words_len);
    o->n = o->words_len = 0;
}

/* Send s[0..len), seen c times, in the table being filled (or a table of its own, when longer). */
static void outbox_send(Outbox *o, const uint8_t *s, size_t len, int64_t c) {
    if (o->n == o->room || o->words_len + len > 16 * o->room) outbox_flush(o);
    if (len > 16 * o->room) {
        int64_t alone[4] = {1, (int64_t)len, (int64_t)len, c};
        outbox_write(o, alone, sizeof alone);
        outbox_write(o, s, len);
        return;
    }
    memcpy(o->words + o->words_len, s, len);
    o->words_len += len;
    o->table[2 + o->n] = (int64_t)o->words_len;
    o->table[2 + o->room + o->n] = c;
    o->n++;
}

/* Where the pre-token of hash h would sit: asked for ahead (PREFETCH) across a batch. */
static inline OutSlot *outbox_slot(const Outbox *o, uint64_t h) { return &o->slots[(h >> 32) & o->mask]; }

/* Count s[0..len) of hash h once more: in its slot, sending what held it before. */
static void outbox_add(Outbox *o, const uint8_t *s, size_t len, uint64_t h) {
    if (len > OUTBOX_INLINE) {
        outbox_send(o, s, len, 1);
        return;
    }
    OutSlot *slot = outbox_slot(o, h);
    if (slot->count) {
        if (slot->hash == h && slot->len == len && memcmp(slot->bytes, s, len) == 0) {
            slot->count++;
            return;
        }
        outbox_send(o, slot->bytes, slot->len, slot->count);
    }
    slot->hash = h;
    slot->count = 1;
    slot->len = (uint8_t)len;
    memcpy(slot->bytes, s, len);
}

/* Send everything the slots hold and the table being filled: 0, or the errno of a write
 * that failed since the outbox opened. The outbox is let go. */
static int outbox_close(Outbox *o) {
    for (size_t k = 0; o->slots && k <= o->mask; k++)
        if (o->slots[k].count) outbox_send(o, o->slots[k].bytes, o->slots[k].len, o->slots[k].count);
    if (o->table) outbox_flush(o);
    outbox_free(o);
    return o->failed;
}

#endif
