/* The pre-tokenizer patterns (engine/corpus/pretokenize.py PATTERNS and KNOWN_PATTERNS),
 * matched by hand over UTF-8: what regex's findall gives, one pre-token at a time.
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
 */
#include "_pretokenize_core.h"

#include <string.h>

#include "_unicode_classes.h"

#define FLAT_LIMIT 0x20000 /* classes of code points below it are looked up in one table */
#define BASE (CLASS_L | CLASS_N | CLASS_S) /* a character is in one of these, or "other" */
#define OTHER 0
#define CASED (CLASS_UPPER | CLASS_LOWER)
#define NRANGES (sizeof CLASS_RANGES / sizeof CLASS_RANGES[0])

#define WIDE 0x80 /* base_of a byte that starts a character of two bytes or more */

static uint8_t flat_classes[FLAT_LIMIT];
static uint8_t base_of[256]; /* the base class of each ASCII byte; WIDE for the others */

void pretokenize_tables_init(void) {
    for (size_t r = 0; r < NRANGES && CLASS_RANGES[r].first < FLAT_LIMIT; r++)
        for (uint32_t c = CLASS_RANGES[r].first; c <= CLASS_RANGES[r].last && c < FLAT_LIMIT; c++)
            flat_classes[c] = CLASS_RANGES[r].bits;
    for (int b = 0; b < 256; b++) base_of[b] = b < 0x80 ? flat_classes[b] & BASE : WIDE;
}

static uint8_t class_of(uint32_t c) {
    if (c < FLAT_LIMIT) return flat_classes[c];
    size_t lo = 0, hi = NRANGES;
    while (lo < hi) { /* the first range ending at or after c */
        size_t mid = (lo + hi) / 2;
        if (CLASS_RANGES[mid].last < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < NRANGES && CLASS_RANGES[lo].first <= c ? CLASS_RANGES[lo].bits : OTHER;
}

/* The code point at byte i, and in *next the byte after it. */
static inline uint32_t decode(const uint8_t *s, ptrdiff_t i, ptrdiff_t *next) {
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

/* The classes of the character at byte i, and in *next the byte after it. */
static inline uint8_t class_at(const uint8_t *s, ptrdiff_t i, ptrdiff_t *next) {
    if (s[i] < 0x80) {
        *next = i + 1;
        return flat_classes[s[i]];
    }
    return class_of(decode(s, i, next));
}

/* The end of the run of characters from i whose base class is cls: ASCII a byte at a time
 * through base_of, decoding only the wider characters. */
static inline ptrdiff_t run_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t cls) {
    for (;;) {
        while (i < len && base_of[s[i]] == cls) i++;
        ptrdiff_t next;
        if (i >= len || s[i] < 0x80 || (class_of(decode(s, i, &next)) & BASE) != cls) return i;
        i = next;
    }
}

/* The end of the run of characters from i that have a class of mask. */
static inline ptrdiff_t run_in(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t mask) {
    ptrdiff_t next;
    while (i < len && (class_at(s, i, &next) & mask)) i = next;
    return i;
}

static inline int is_newline(uint8_t c) { return c == '\r' || c == '\n'; }

static ptrdiff_t newlines_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    while (i < len && is_newline(s[i])) i++;
    return i;
}

/* The lowercase ASCII letter the character at i is (fold: that (?i:letter) matches it as),
 * or 0; *next is the byte after it. */
static char letter_at(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int fold, ptrdiff_t *next) {
    if (i >= len) return 0;
    uint32_t c = decode(s, i, next);
    if (!fold) return c < 128 ? (char)c : 0;
    for (size_t k = 0; k < sizeof FOLDED / sizeof FOLDED[0]; k++)
        if (FOLDED[k].code == c) return FOLDED[k].letter;
    return 0;
}

/* The end of a contraction at i, where s[i] is ' ('s 'd 'm 't 'll 've 're), or 0. */
static ptrdiff_t contraction_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int fold) {
    ptrdiff_t j = 0, k = 0;
    char x = letter_at(s, len, i + 1, fold, &j);
    if (x == 's' || x == 'd' || x == 'm' || x == 't') return j;
    if (x != 'l' && x != 'v' && x != 'r') return 0;
    char y = letter_at(s, len, j, fold, &k);
    return (x == 'l' && y == 'l') || ((x == 'v' || x == 'r') && y == 'e') ? k : 0;
}

/* \s+(?!\S) | \s+ at i, a run of S ending at end: less its last character when a non-space
 * follows and the run holds more than one. */
static inline ptrdiff_t spaces_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, ptrdiff_t end) {
    if (end >= len) return end;
    ptrdiff_t last = end - 1;
    while ((s[last] & 0xC0) == 0x80) last--;
    return last > i ? last : end;
}

/* \s*[\r\n] | \s+(?!\S) | \s+ at i, a run of S ending at end. */
static inline ptrdiff_t lines_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, ptrdiff_t end) {
    for (ptrdiff_t k = end - 1; k >= i; k--)
        if (is_newline(s[k])) return k + 1;
    return spaces_end(s, len, i, end);
}

static inline ptrdiff_t gpt2_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    uint8_t c = s[i];
    ptrdiff_t next, after, end;
    if (c == '\'' && (end = contraction_end(s, len, i, 0))) return end;
    uint8_t cls = class_at(s, i, &next) & BASE;
    if (c == ' ' && next < len) {
        uint8_t k = class_at(s, next, &after) & BASE;
        if (k != CLASS_S) return run_end(s, len, after, k);
    }
    if (cls != CLASS_S) return run_end(s, len, next, cls);
    return spaces_end(s, len, i, run_end(s, len, next, CLASS_S));
}

/* GPT-4 and its kin: up to digits N a pre-token; with ends_text, \s++$ first among the
 * whitespace alternatives. */
static inline ptrdiff_t gpt4_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int digits, int ends_text) {
    uint8_t c = s[i];
    ptrdiff_t next, after = 0, end;
    if (c == '\'' && (end = contraction_end(s, len, i, 1))) return end;
    uint8_t cls = class_at(s, i, &next) & BASE;
    if (cls == CLASS_L) return run_end(s, len, next, CLASS_L);
    uint8_t k = next < len ? class_at(s, next, &after) & BASE : CLASS_S;
    if (cls != CLASS_N && !is_newline(c) && k == CLASS_L) return run_end(s, len, after, CLASS_L);
    if (cls == CLASS_N) {
        end = next;
        for (int d = 1; d < digits && end < len && (class_at(s, end, &after) & BASE) == CLASS_N; d++) end = after;
        return end;
    }
    if (c == ' ' && k == OTHER) return newlines_end(s, len, run_end(s, len, after, OTHER));
    if (cls == OTHER) return newlines_end(s, len, run_end(s, len, next, OTHER));
    end = run_end(s, len, next, CLASS_S);
    return ends_text && end == len ? end : lines_end(s, len, i, end);
}

/* [UPPER]*[LOWER]+ at j: its end, or -1 where it does not match. */
static ptrdiff_t o200k_lower_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t j) {
    ptrdiff_t k = j, next = j, both_end = -1;
    uint8_t cls = 0;
    while (k < len && ((cls = class_at(s, k, &next)) & CLASS_UPPER)) {
        if (cls & CLASS_LOWER) both_end = next;
        k = next;
    }
    if (k < len && (cls & CLASS_LOWER)) return run_in(s, len, next, CLASS_LOWER);
    return both_end;
}

/* [UPPER]+[LOWER]* at j: its end, or -1 where it does not match. */
static ptrdiff_t o200k_upper_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t j) {
    ptrdiff_t k = j, next = j;
    uint8_t cls = 0;
    while (k < len && ((cls = class_at(s, k, &next)) & CLASS_UPPER)) k = next;
    if (k == j) return -1;
    return k < len && (cls & CLASS_LOWER) ? run_in(s, len, next, CLASS_LOWER) : k;
}

/* o200k's two letter alternatives at i, each with its prefix (the character at i, which
 * ends at next) and then without: the end before any contraction, or -1. */
static ptrdiff_t o200k_letters_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, uint8_t cls, ptrdiff_t next) {
    int prefix = !(cls & (CLASS_L | CLASS_N)) && !is_newline(s[i]);
    ptrdiff_t end;
    if (prefix && (end = o200k_lower_end(s, len, next)) >= 0) return end;
    if ((end = o200k_lower_end(s, len, i)) >= 0) return end;
    if (prefix && (end = o200k_upper_end(s, len, next)) >= 0) return end;
    return o200k_upper_end(s, len, i);
}

static inline ptrdiff_t o200k_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i) {
    uint8_t c = s[i];
    ptrdiff_t next, after = 0, end;
    uint8_t cls = class_at(s, i, &next);
    uint8_t k = next < len ? class_at(s, next, &after) : CLASS_S;
    if ((cls & CASED) || (k & CASED)) { /* else neither letter alternative can match */
        end = o200k_letters_end(s, len, i, cls, next);
        if (end >= 0) {
            ptrdiff_t with = end < len && s[end] == '\'' ? contraction_end(s, len, end, 1) : 0;
            return with ? with : end;
        }
    }
    cls &= BASE;
    k &= BASE;
    if (cls == CLASS_N) {
        end = next;
        for (int d = 1; d < 3 && end < len && (class_at(s, end, &after) & BASE) == CLASS_N; d++) end = after;
        return end;
    }
    if ((c == ' ' && k == OTHER) || cls == OTHER) {
        end = run_end(s, len, cls == OTHER ? next : after, OTHER);
        while (end < len && (is_newline(s[end]) || s[end] == '/')) end++;
        return end;
    }
    return lines_end(s, len, i, run_end(s, len, next, CLASS_S));
}

ptrdiff_t pretoken_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern) {
    switch (pattern) {
    case PATTERN_GPT4: return gpt4_end(s, len, i, 3, 0);
    case PATTERN_CL100K: return gpt4_end(s, len, i, 3, 1);
    case PATTERN_QWEN2: return gpt4_end(s, len, i, 1, 0);
    case PATTERN_O200K: return o200k_end(s, len, i);
    default: return gpt2_end(s, len, i);
    }
}

/* One loop a family, so each scanner is inlined with its settings. */
#define ENDS_LOOP(call)                     \
    for (; n < max && i < len; n++) {       \
        i = (call);                         \
        ends[n] = i;                        \
    }

ptrdiff_t pretoken_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern, ptrdiff_t *ends, ptrdiff_t max) {
    ptrdiff_t n = 0;
    switch (pattern) {
    case PATTERN_GPT4: ENDS_LOOP(gpt4_end(s, len, i, 3, 0)) break;
    case PATTERN_CL100K: ENDS_LOOP(gpt4_end(s, len, i, 3, 1)) break;
    case PATTERN_QWEN2: ENDS_LOOP(gpt4_end(s, len, i, 1, 0)) break;
    case PATTERN_O200K: ENDS_LOOP(o200k_end(s, len, i)) break;
    default: ENDS_LOOP(gpt2_end(s, len, i)) break;
    }
    return n;
}

/* The UTF-8 of one code point at p; *surrogates set for a lone surrogate. */
static inline uint8_t *put_utf8(uint8_t *p, uint32_t c, int *surrogates) {
    if (c < 0x80) {
        *p++ = (uint8_t)c;
    } else if (c < 0x800) {
        *p++ = (uint8_t)(0xC0 | c >> 6);
        *p++ = (uint8_t)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        if (c >= 0xD800 && c <= 0xDFFF) *surrogates = 1;
        *p++ = (uint8_t)(0xE0 | c >> 12);
        *p++ = (uint8_t)(0x80 | (c >> 6 & 0x3F));
        *p++ = (uint8_t)(0x80 | (c & 0x3F));
    } else {
        *p++ = (uint8_t)(0xF0 | c >> 18);
        *p++ = (uint8_t)(0x80 | (c >> 12 & 0x3F));
        *p++ = (uint8_t)(0x80 | (c >> 6 & 0x3F));
        *p++ = (uint8_t)(0x80 | (c & 0x3F));
    }
    return p;
}

ptrdiff_t utf8_encode(const void *data, int kind, ptrdiff_t n, uint8_t *out, int *surrogates) {
    uint8_t *p = out;
    ptrdiff_t i = 0;
    uint64_t w;
    /* Runs of ASCII go 8 bytes of code units at a time: 8, 4 or 2 characters. */
    if (kind == 1) {
        const uint8_t *u = data;
        while (i < n) {
            if (i + 8 <= n && (memcpy(&w, u + i, 8), !(w & 0x8080808080808080ULL))) {
                memcpy(p, &w, 8);
                p += 8;
                i += 8;
            } else {
                p = u[i] < 0x80 ? (*p = u[i], p + 1) : put_utf8(p, u[i], surrogates);
                i++;
            }
        }
    } else if (kind == 2) {
        const uint16_t *u = data;
        while (i < n) {
            if (i + 4 <= n && (memcpy(&w, u + i, 8), !(w & 0xFF80FF80FF80FF80ULL))) {
                uint16_t four[4];
                memcpy(four, &w, 8); /* the same code units, in memory order on any machine */
                for (int k = 0; k < 4; k++) p[k] = (uint8_t)four[k];
                p += 4;
                i += 4;
            } else {
                p = u[i] < 0x80 ? (*p = (uint8_t)u[i], p + 1) : put_utf8(p, u[i], surrogates);
                i++;
            }
        }
    } else {
        const uint32_t *u = data;
        for (; i < n; i++) p = u[i] < 0x80 ? (*p = (uint8_t)u[i], p + 1) : put_utf8(p, u[i], surrogates);
    }
    return p - out;
}
