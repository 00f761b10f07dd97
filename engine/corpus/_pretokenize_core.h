/* The pre-tokenizer patterns of GPT-2, GPT-4 (cl100k), GPT-4o (o200k), Llama-3 and Qwen2,
 * matched without a regex engine over UTF-8.
 *
 * The classes of each code point come from the regex module (engine/corpus/_unicode_classes.h,
 * written by engine/corpus/gen_unicode_tables.py): L (\p{L}), N (\p{N}) and S (\s), at most
 * one of them, else "other" (marks, punctuation, symbols, controls); and for o200k UPPER
 * ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]) and LOWER ([\p{Ll}\p{Lm}\p{Lo}\p{M}]). Every pattern here
 * matches at every position, so findall's pre-tokens tile the text, and each alternative
 * reduces to runs of classes:
 *
 * GPT-2   '(?:[sdmt]|ll|ve|re) | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
 *   a contraction; else an optional space and a run of L, N or other; else a run of S,
 *   less its last character when a non-space follows it and the run is longer than one
 *   (backtracking into \s+(?!\S) gives back exactly one character).
 * GPT-4   '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}+ | \p{N}{1,3}
 *         | ?[^\s\p{L}\p{N}]++[\r\n]* | \s*[\r\n] | \s+(?!\S) | \s+
 *   a contraction, letters matched case-insensitively (FOLDED); a run of L, or one
 *   character that is not \r, \n, L or N followed by a run of L; one to three N; an
 *   optional space, a run of other and any \r\n after it; a run of S up to its last \r or
 *   \n; else as GPT-2. Llama-3's string (and cl100k's until 2024) says the same without
 *   possessive quantifiers; Qwen2's takes one N at a time (QWEN2).
 * cl100k  as GPT-4 with \s++$ before \s*[\r\n]: a run of S that ends the text is one
 *   pre-token, newlines or not (CL100K).
 * o200k   [^\r\n\p{L}\p{N}]?[UPPER]*[LOWER]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *         | [^\r\n\p{L}\p{N}]?[UPPER]+[LOWER]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
 *         | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
 *   Lm, Lo and marks are in both UPPER and LOWER ("both"). The first alternative, after its
 *   optional prefix, takes the run of UPPER and then a run of LOWER if one follows; if none
 *   does, backtracking ends it just after the run's last "both" (the one LOWER character it
 *   can give back), and it fails if there is none. With the prefix it fails, it is tried
 *   without (a mark is a prefix and a letter); then the second alternative likewise: a
 *   run of UPPER, then of LOWER. Either ends with an optional contraction. The rest is as
 *   GPT-4, with / among the newlines after punctuation.
 *
 * tests/test_pretokenize_core.py checks every family against the regex module on arbitrary
 * text, under every pattern string engine/corpus/pretokenize.py maps to it.
 *
 * The scanners are inline here, so a caller's loop over pre-tokens (the encoder's) is
 * compiled with its family's scanner in it; engine/corpus/_pretokenize_core.c holds the
 * tables and the rest.
 */
#ifndef PRETOKENIZE_CORE_H
#define PRETOKENIZE_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_unicode_classes.h"

/* The families of patterns: every pattern string of one family splits every text alike
 * (engine/corpus/pretokenize.py maps the strings to them). */
enum {
    PATTERN_GPT2 = 0,   /* GPT-2 (r50k, p50k) */
    PATTERN_GPT4 = 1,   /* cl100k as tiktoken wrote it until 2024, and Llama-3 */
    PATTERN_CL100K = 2, /* cl100k as tiktoken writes it now: \s++$ keeps the whitespace that ends a text whole */
    PATTERN_O200K = 3,  /* GPT-4o */
    PATTERN_QWEN2 = 4,  /* Llama-3's with one digit a pre-token */
    PATTERN_COUNT = 5
};

#define PT_FLAT_LIMIT 0x20000 /* classes of code points below it are looked up in one table */
#define BASE (CLASS_L | CLASS_N | CLASS_S) /* a character is in one of these, or "other" */
#define OTHER 0
#define CASED (CLASS_UPPER | CLASS_LOWER)
#define WIDE 0x80 /* pt_base_of a byte that starts a character of two bytes or more */

extern uint8_t pt_flat_classes[PT_FLAT_LIMIT]; /* the classes of each code point below the limit */
extern uint8_t pt_base_of[256];                /* the base class of each ASCII byte; WIDE for the others */
extern uint8_t pt_wide3_classes[16 * 64];      /* see pt_class_at */
#define PT_MIXED 0xFF                          /* in pt_wide3_classes: not one class for all 64 */

/* The instruction sets pretoken_ends may run on (engine/corpus/_pretokenize_simd.h). */
enum { PT_SIMD_SCALAR = 0, PT_SIMD_SSE2 = 1, PT_SIMD_AVX2 = 2, PT_SIMD_NEON = 3, PT_SIMD_COUNT = 4 };
extern const char *const pt_simd_names[PT_SIMD_COUNT];

/* Whether this build and this machine can run level; the level pretoken_ends runs on; and
 * setting it (-1 for one it cannot run). */
int pt_simd_supported(int level);
int pt_simd_level(void);
int pt_set_simd_level(int level);

/* Fill the tables and choose the widest instruction set; call once before anything below. */
void pretokenize_tables_init(void);

/* The classes of a code point at or above PT_FLAT_LIMIT. */
uint8_t pt_class_wide(uint32_t c);

/* The lowercase ASCII letter that (?i:letter) matches c as, or 0. */
char pt_folded(uint32_t c);

/* Where the pre-token that starts at byte i (< len) of the UTF-8 text s[0..len) ends: what the
 * pattern's regex, run by findall on the text, matches at i. Surrogates (U+D800-U+DFFF, as
 * UTF-8 would write them) are characters of no class. */
ptrdiff_t pretoken_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern);

/* The ends of the pre-tokens from byte i on (i at a pre-token's start), at most max of them,
 * into ends: how many were written (0 only when i == len). 64 bytes at a time where the
 * machine can (pt_simd_level), the same ends as pretoken_end's one at a time. */
ptrdiff_t pretoken_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern, ptrdiff_t *ends, ptrdiff_t max);

/* The bytes utf8_encode may write for n code units of kind bytes each (1, 2 or 4). */
static inline size_t utf8_room(int kind, ptrdiff_t n) {
    return (size_t)n * (kind == 1 ? 2u : kind == 2 ? 3u : 4u);
}

/* The UTF-8 of the n code units of kind bytes each (a Python str's code points as stored, PEP
 * 393) at data, into out (utf8_room bytes): the bytes written. A lone surrogate is written as
 * its three bytes and *surrogates is set (no valid UTF-8 has it; str.encode refuses it). */
ptrdiff_t utf8_encode(const void *data, int kind, ptrdiff_t n, uint8_t *out, int *surrogates);

/* ---- the scanners ---------------------------------------------------------------------- */

static inline uint8_t pt_class_of(uint32_t c) {
    return c < PT_FLAT_LIMIT ? pt_flat_classes[c] : pt_class_wide(c);
}

static inline int pt_little_endian(void) {
    const union {
        uint16_t word;
        uint8_t bytes[2];
    } probe = {1};
    return probe.bytes[0];
}

/* Past the bytes from i that are ASCII in [lo, hi] once ORed with fold (0x20: A-Z count as
 * a-z), eight at a time while eight are left (on a little-endian machine; elsewhere it stops
 * at once and the caller goes on a byte at a time): where the first other byte is, or where
 * fewer than eight are left. */
static inline ptrdiff_t pt_ascii_run(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t lo, uint8_t hi, uint8_t fold) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    if (!pt_little_endian()) return i;
    while (i + 8 <= len) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t v = (w | fold * ones) & ~highs;
        uint64_t in = (v + (0x80u - lo) * ones) & ~(v + (0x7Fu - hi) * ones) & ~w & highs;
        if (in == highs) {
            i += 8;
            continue;
        }
        uint64_t out = ~in & highs, lowest = out & (~out + 1); /* the first byte not in the run */
        return i + (ptrdiff_t)(((lowest >> 7) * 0x0001020304050607ULL) >> 56);
    }
    return i;
}

static inline uint32_t pt_decode(const uint8_t *s, ptrdiff_t i, ptrdiff_t *next) {
    uint32_t c = s[i];
    if (c < 0x80) {
        *next = i + 1;
        return c;
    }
    if (c < 0xE0) {
        *next = i + 2;
        return (c & 0x1F) << 6 | (s[i + 1] & 0x3Fu);
    }
    if (c < 0xF0) {
        *next = i + 3;
        return (c & 0x0F) << 12 | (s[i + 1] & 0x3Fu) << 6 | (s[i + 2] & 0x3Fu);
    }
    *next = i + 4;
    return (c & 0x07) << 18 | (s[i + 1] & 0x3Fu) << 12 | (s[i + 2] & 0x3Fu) << 6 | (s[i + 3] & 0x3Fu);
}

/* The classes of the character at byte i, and in *next the byte after it. A character of three
 * bytes (most of Chinese and Japanese text) is looked up by its first two when the 64 code
 * points they begin share their classes: a table of 1 KB, not a decode and a load from 128. */
static inline uint8_t pt_class_at(const uint8_t *s, ptrdiff_t i, ptrdiff_t *next) {
    if (s[i] < 0x80) {
        *next = i + 1;
        return pt_flat_classes[s[i]];
    }
    if ((s[i] & 0xF0) == 0xE0) {
        uint8_t classes = pt_wide3_classes[(s[i] & 0x0F) << 6 | (s[i + 1] & 0x3F)];
        if (classes != PT_MIXED) {
            *next = i + 3;
            return classes;
        }
    }
    return pt_class_of(pt_decode(s, i, next));
}

/* The end of the run of characters from i whose base class is cls: ASCII letters eight
 * bytes at a time, other ASCII a byte at a time through base_of, the wider characters
 * through pt_class_at. */
static inline ptrdiff_t pt_run_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t cls) {
    if (cls == CLASS_L) i = pt_ascii_run(s, len, i, 'a', 'z', 0x20);
    for (;;) {
        while (i < len && pt_base_of[s[i]] == cls) i++;
        ptrdiff_t next;
        if (i >= len || s[i] < 0x80 || (pt_class_at(s, i, &next) & BASE) != cls) return i;
        i = next;
    }
}

/* The end of the run of characters from i that have a class of mask (CLASS_UPPER or
 * CLASS_LOWER: ASCII A-Z or a-z eight bytes at a time first). */
static inline ptrdiff_t pt_run_in(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t mask) {
    ptrdiff_t next;
    i = mask == CLASS_LOWER ? pt_ascii_run(s, len, i, 'a', 'z', 0) : pt_ascii_run(s, len, i, 'A', 'Z', 0);
    while (i < len && (pt_class_at(s, i, &next) & mask)) i = next;
    return i;
}

static inline int pt_is_newline(uint8_t c) { return c == '\r' || c == '\n'; }

static inline ptrdiff_t pt_newlines_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    while (i < len && pt_is_newline(s[i])) i++;
    return i;
}

/* The lowercase ASCII letter the character at i is (fold: that (?i:letter) matches it as),
 * or 0; *next is the byte after it. */
static inline char pt_letter_at(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int fold, ptrdiff_t *next) {
    if (i >= len) return 0;
    uint32_t c = pt_decode(s, i, next);
    return fold ? pt_folded(c) : c < 128 ? (char)c : 0;
}

/* The end of a contraction at i, where s[i] is ' ('s 'd 'm 't 'll 've 're), or 0. */
static inline ptrdiff_t pt_contraction_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int fold) {
    ptrdiff_t j = 0, k = 0;
    char x = pt_letter_at(s, len, i + 1, fold, &j);
    if (x == 's' || x == 'd' || x == 'm' || x == 't') return j;
    if (x != 'l' && x != 'v' && x != 'r') return 0;
    char y = pt_letter_at(s, len, j, fold, &k);
    return (x == 'l' && y == 'l') || ((x == 'v' || x == 'r') && y == 'e') ? k : 0;
}

/* \s+(?!\S) | \s+ at i, a run of S ending at end: less its last character when a non-space
 * follows and the run holds more than one. */
static inline ptrdiff_t pt_spaces_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, ptrdiff_t end) {
    if (end >= len) return end;
    ptrdiff_t last = end - 1;
    while (last > i && (s[last] & 0xC0) == 0x80) last--; /* i bounds it on bytes that are not UTF-8 */
    return last > i ? last : end;
}

/* \s*[\r\n] | \s+(?!\S) | \s+ at i, a run of S ending at end. */
static inline ptrdiff_t pt_lines_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, ptrdiff_t end) {
    for (ptrdiff_t k = end - 1; k >= i; k--)
        if (pt_is_newline(s[k])) return k + 1;
    return pt_spaces_end(s, len, i, end);
}

static inline ptrdiff_t pt_gpt2_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    uint8_t c = s[i];
    ptrdiff_t next, after, end;
    if (c == '\'' && (end = pt_contraction_end(s, len, i, 0))) return end;
    uint8_t cls = pt_class_at(s, i, &next) & BASE;
    if (c == ' ' && next < len) {
        uint8_t k = pt_class_at(s, next, &after) & BASE;
        if (k != CLASS_S) return pt_run_end(s, len, after, k);
    }
    if (cls != CLASS_S) return pt_run_end(s, len, next, cls);
    return pt_spaces_end(s, len, i, pt_run_end(s, len, next, CLASS_S));
}

/* GPT-4 and its kin: up to digits N a pre-token; with ends_text, \s++$ first among the
 * whitespace alternatives. */
static inline ptrdiff_t pt_gpt4_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int digits, int ends_text) {
    uint8_t c = s[i];
    ptrdiff_t next, after = 0, end;
    if (c == '\'' && (end = pt_contraction_end(s, len, i, 1))) return end;
    uint8_t cls = pt_class_at(s, i, &next) & BASE;
    if (cls == CLASS_L) return pt_run_end(s, len, next, CLASS_L);
    uint8_t k = next < len ? pt_class_at(s, next, &after) & BASE : CLASS_S;
    if (cls != CLASS_N && !pt_is_newline(c) && k == CLASS_L) return pt_run_end(s, len, after, CLASS_L);
    if (cls == CLASS_N) {
        end = next;
        for (int d = 1; d < digits && end < len && (pt_class_at(s, end, &after) & BASE) == CLASS_N; d++) end = after;
        return end;
    }
    if (c == ' ' && k == OTHER) return pt_newlines_end(s, len, pt_run_end(s, len, after, OTHER));
    if (cls == OTHER) return pt_newlines_end(s, len, pt_run_end(s, len, next, OTHER));
    end = pt_run_end(s, len, next, CLASS_S);
    return ends_text && end == len ? end : pt_lines_end(s, len, i, end);
}

/* Past the ASCII capitals from j, eight at a time when two come first (a run of them, as in
 * DNA, not the one that starts a word). */
static inline ptrdiff_t pt_capitals_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t j) {
    if (j + 1 < len && (uint8_t)(s[j] - 'A') < 26 && (uint8_t)(s[j + 1] - 'A') < 26) return pt_ascii_run(s, len, j, 'A', 'Z', 0);
    return j;
}

/* [UPPER]*[LOWER]+ at j: its end, or -1 where it does not match. */
static inline ptrdiff_t pt_o200k_lower_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t j) {
    ptrdiff_t k = pt_capitals_end(s, len, j), next = k, both_end = -1; /* A-Z: none "both" */
    uint8_t cls = 0;
    while (k < len && ((cls = pt_class_at(s, k, &next)) & CLASS_UPPER)) {
        if (cls & CLASS_LOWER) both_end = next;
        k = next;
    }
    if (k < len && (cls & CLASS_LOWER)) return pt_run_in(s, len, next, CLASS_LOWER);
    return both_end;
}

/* [UPPER]+[LOWER]* at j: its end, or -1 where it does not match. */
static inline ptrdiff_t pt_o200k_upper_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t j) {
    ptrdiff_t k = pt_capitals_end(s, len, j), next = k;
    uint8_t cls = 0;
    while (k < len && ((cls = pt_class_at(s, k, &next)) & CLASS_UPPER)) k = next;
    if (k == j) return -1;
    return k < len && (cls & CLASS_LOWER) ? pt_run_in(s, len, next, CLASS_LOWER) : k;
}

/* o200k's two letter alternatives at i, each with its prefix (the character at i, which
 * ends at next) and then without: the end before any contraction, or -1. */
static inline ptrdiff_t pt_o200k_letters_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t cls, ptrdiff_t next) {
    int prefix = !(cls & (CLASS_L | CLASS_N)) && !pt_is_newline(s[i]);
    ptrdiff_t end;
    if (prefix && (end = pt_o200k_lower_end(s, len, next)) >= 0) return end;
    if ((end = pt_o200k_lower_end(s, len, i)) >= 0) return end;
    if (prefix && (end = pt_o200k_upper_end(s, len, next)) >= 0) return end;
    return pt_o200k_upper_end(s, len, i);
}

static inline ptrdiff_t pt_o200k_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    uint8_t c = s[i];
    ptrdiff_t next, after = 0, end;
    uint8_t cls = pt_class_at(s, i, &next);
    uint8_t k = next < len ? pt_class_at(s, next, &after) : CLASS_S;
    if ((cls & CASED) || (k & CASED)) { /* else neither letter alternative can match */
        end = pt_o200k_letters_end(s, len, i, cls, next);
        if (end >= 0) {
            ptrdiff_t with = end < len && s[end] == '\'' ? pt_contraction_end(s, len, end, 1) : 0;
            return with ? with : end;
        }
    }
    cls &= BASE;
    k &= BASE;
    if (cls == CLASS_N) {
        end = next;
        for (int d = 1; d < 3 && end < len && (pt_class_at(s, end, &after) & BASE) == CLASS_N; d++) end = after;
        return end;
    }
    if ((c == ' ' && k == OTHER) || cls == OTHER) {
        end = pt_run_end(s, len, cls == OTHER ? next : after, OTHER);
        while (end < len && (pt_is_newline(s[end]) || s[end] == '/')) end++;
        return end;
    }
    return pt_lines_end(s, len, i, pt_run_end(s, len, next, CLASS_S));
}

#endif
