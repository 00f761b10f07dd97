/* The GPT-2 and GPT-4 pre-tokenizer patterns (engine/corpus/pretokenize.py PATTERNS), matched by
 * hand: what regex's findall gives, one pre-token at a time.
 *
 * Every code point is in at most one class, L (\p{L}), N (\p{N}) or S (\s), or in none
 * ("other"); the classes come from the regex module (engine/corpus/_unicode_classes.h, written
 * by engine/corpus/gen_unicode_tables.py). Both patterns match at every position, so findall's
 * pre-tokens tile the text, and each alternative reduces to runs of one class:
 *
 * GPT-2  '(?:[sdmt]|ll|ve|re) | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
 *   a contraction; else an optional space and a run of L, N or other; else a run of S,
 *   less its last character when that is followed by a non-space and the run is longer
 *   than one (backtracking into \s+(?!\S) gives back exactly one character).
 * GPT-4  '(?i:[sdmt]|ll|ve|re) | [^\r\n\p{L}\p{N}]?+\p{L}+ | \p{N}{1,3}
 *        | ?[^\s\p{L}\p{N}]++[\r\n]* | \s*[\r\n] | \s+(?!\S) | \s+
 *   a contraction, letters matched case-insensitively (FOLDED); a run of L, or one
 *   character that is not \r, \n, L or N followed by a run of L; one to three N; an
 *   optional space, a run of other and any \r\n after it; a run of S up to its last \r or
 *   \n; else as GPT-2.
 * tests/test_pretokenize_core.py checks this against the regex module on arbitrary text.
 */
#include "_pretokenize_core.h"

#include "_unicode_classes.h"

#define FLAT_LIMIT 0x20000 /* classes of code points below it are looked up in one table */
#define OTHER 0

static uint8_t flat_classes[FLAT_LIMIT];

void pretokenize_tables_init(void) {
    size_t n = sizeof CLASS_RANGES / sizeof CLASS_RANGES[0];
    for (size_t r = 0; r < n && CLASS_RANGES[r].first < FLAT_LIMIT; r++)
        for (uint32_t c = CLASS_RANGES[r].first; c <= CLASS_RANGES[r].last && c < FLAT_LIMIT; c++)
            flat_classes[c] = CLASS_RANGES[r].bits;
}

static inline uint8_t class_of(uint32_t c) {
    if (c < FLAT_LIMIT) return flat_classes[c];
    size_t lo = 0, hi = sizeof CLASS_RANGES / sizeof CLASS_RANGES[0];
    while (lo < hi) { /* the first range ending at or after c */
        size_t mid = (lo + hi) / 2;
        if (CLASS_RANGES[mid].last < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof CLASS_RANGES / sizeof CLASS_RANGES[0] && CLASS_RANGES[lo].first <= c ? CLASS_RANGES[lo].bits : OTHER;
}

/* The lowercase ASCII letter that (?i:letter) matches c as, or 0. */
static char folded(uint32_t c) {
    for (size_t k = 0; k < sizeof FOLDED / sizeof FOLDED[0]; k++)
        if (FOLDED[k].code == c) return FOLDED[k].letter;
    return 0;
}

/* The end of the run of class cls that starts at i. */
static inline ptrdiff_t run_end(const Text *t, ptrdiff_t i, uint8_t cls) {
    while (i < t->len && class_of(text_at(t, i)) == cls) i++;
    return i;
}

/* The end of a contraction at i ('s 'd 'm 't 'll 've 're), or 0. */
static ptrdiff_t contraction_end(const Text *t, ptrdiff_t i, int fold) {
    if (i + 1 >= t->len) return 0;
    uint32_t a = text_at(t, i + 1), b = i + 2 < t->len ? text_at(t, i + 2) : 0;
    char x = fold ? folded(a) : (a < 128 ? (char)a : 0);
    if (x == 's' || x == 'd' || x == 'm' || x == 't') return i + 2;
    char y = fold ? folded(b) : (b < 128 ? (char)b : 0);
    if ((x == 'l' && y == 'l') || (x == 'v' && y == 'e') || (x == 'r' && y == 'e')) return i + 3;
    return 0;
}

/* \s+(?!\S) | \s+ at i, a run of S ending at end. */
static inline ptrdiff_t spaces_end(const Text *t, ptrdiff_t i, ptrdiff_t end) {
    return end < t->len && end - i > 1 ? end - 1 : end;
}

static ptrdiff_t gpt2_end(const Text *t, ptrdiff_t i) {
    uint32_t c = text_at(t, i);
    ptrdiff_t end;
    if (c == '\'' && (end = contraction_end(t, i, 0))) return end;
    uint8_t cls = class_of(c);
    if (c == ' ' && i + 1 < t->len) {
        uint8_t next = class_of(text_at(t, i + 1));
        if (next != CLASS_S) return run_end(t, i + 1, next);
    }
    if (cls != CLASS_S) return run_end(t, i, cls);
    return spaces_end(t, i, run_end(t, i, CLASS_S));
}

static inline int is_newline(uint32_t c) { return c == '\r' || c == '\n'; }

static ptrdiff_t newlines_end(const Text *t, ptrdiff_t i) {
    while (i < t->len && is_newline(text_at(t, i))) i++;
    return i;
}

static ptrdiff_t gpt4_end(const Text *t, ptrdiff_t i) {
    uint32_t c = text_at(t, i);
    ptrdiff_t end;
    if (c == '\'' && (end = contraction_end(t, i, 1))) return end;
    uint8_t cls = class_of(c);
    uint8_t next = i + 1 < t->len ? class_of(text_at(t, i + 1)) : CLASS_S;
    if (cls == CLASS_L) return run_end(t, i, CLASS_L);
    if (cls != CLASS_N && !is_newline(c) && next == CLASS_L) return run_end(t, i + 1, CLASS_L);
    if (cls == CLASS_N) {
        end = i + 1;
        while (end < t->len && end < i + 3 && class_of(text_at(t, end)) == CLASS_N) end++;
        return end;
    }
    if (c == ' ' && i + 1 < t->len && next == OTHER) return newlines_end(t, run_end(t, i + 1, OTHER));
    if (cls == OTHER) return newlines_end(t, run_end(t, i, OTHER));
    end = run_end(t, i, CLASS_S);
    for (ptrdiff_t k = end - 1; k >= i; k--)
        if (is_newline(text_at(t, k))) return k + 1;
    return spaces_end(t, i, end);
}

ptrdiff_t pretoken_end(const Text *t, ptrdiff_t i, int pattern) {
    return pattern == PATTERN_GPT4 ? gpt4_end(t, i) : gpt2_end(t, i);
}
