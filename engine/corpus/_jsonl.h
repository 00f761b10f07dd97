/* A JSONL line's text field, read in C: what the tally counts a JSONL shard from, and the
 * encoder encodes a dataset from, without making a Python string per document (decoding the
 * line, scanning its JSON, encoding the text back to UTF-8 would each cost more than
 * counting or encoding it).
 *
 * It takes only what it can be sure of: a line that is one JSON object, valid UTF-8, holding
 * the field once, as a string. Any other line (not JSON, the field missing, twice or not a
 * string, an escaped key, a lone surrogate, a NaN, nesting past JSONL_DEPTH) is left to the
 * caller, which reads it with Python's json as before: its error, or its text, is the same. */
#ifndef ENGINE_JSONL_H
#define ENGINE_JSONL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_bits.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define JSONL_SSE2 1
#elif (defined(__aarch64__) && !defined(__AARCH64EB__)) || defined(_M_ARM64)
#include <arm_neon.h>
#define JSONL_NEON 1
#endif

#define JSONL_DEPTH 32 /* arrays and objects nested deeper are left to Python */

/* Past the run of a string's own bytes at p (any but the quote, the backslash and the control
 * bytes), to the first that ends the run, or end; *wide set if the run holds a byte of 0x80 or
 * above (to be checked as UTF-8). Sixteen bytes a step (SSE2, NEON), the rest one at a time. A
 * document is mostly such runs: English was a tenth of writing a dataset a byte at a time, and
 * Chinese, a character at a time, a tenth of encoding one from JSONL. */
static inline const uint8_t *jsonl_run(const uint8_t *p, const uint8_t *end, int *wide) {
#if defined(JSONL_SSE2)
    const __m128i control = _mm_set1_epi8(0x1F), quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    __m128i high = _mm_setzero_si128();
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i stop = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, control), v), /* v <= 0x1F, unsigned */
                                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
        int mask = _mm_movemask_epi8(stop);
        if (mask) {
            int at = lowest_bit((uint64_t)(unsigned)mask);
            *wide |= (_mm_movemask_epi8(high) | (_mm_movemask_epi8(v) & ((1 << at) - 1))) != 0;
            return p + at;
        }
        high = _mm_or_si128(high, v);
    }
    *wide |= _mm_movemask_epi8(high) != 0;
#elif defined(JSONL_NEON)
    const uint8x16_t control = vdupq_n_u8(0x20), quote = vdupq_n_u8('"'), backslash = vdupq_n_u8('\\');
    uint8x16_t high = vdupq_n_u8(0);
    for (; end - p >= 16; p += 16) {
        uint8x16_t v = vld1q_u8(p);
        uint8x16_t stop = vorrq_u8(vcltq_u8(v, control), vorrq_u8(vceqq_u8(v, quote), vceqq_u8(v, backslash)));
        uint64_t nibbles = vget_lane_u64(vreinterpret_u64_u8(vshrn_n_u16(vreinterpretq_u16_u8(stop), 4)), 0); /* 4 bits a byte */
        if (nibbles) {
            const uint8_t *at = p + lowest_bit(nibbles) / 4;
            *wide |= vmaxvq_u8(high) >= 0x80;
            for (; p < at; p++) *wide |= *p >= 0x80;
            return at;
        }
        high = vorrq_u8(high, v);
    }
    *wide |= vmaxvq_u8(high) >= 0x80;
#endif
    for (; p < end && *p >= 0x20 && *p != '"' && *p != '\\'; p++) *wide |= *p >= 0x80;
    return p;
}

static inline const uint8_t *jsonl_space(const uint8_t *p, const uint8_t *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* The length of the UTF-8 character at p (lead byte >= 0x80), or 0 if it is not one:
 * overlong forms, surrogates and code points past U+10FFFF are not. */
static inline int jsonl_utf8(const uint8_t *p, const uint8_t *end) {
    uint8_t c = p[0];
    int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!n || end - p < n) return 0;
    uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    if (p[1] < lo || p[1] > hi) return 0;
    for (int k = 2; k < n; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    return n;
}

/* Past the whole three-byte characters from U+1000 on, outside the surrogates (a lead byte
 * E1-EC or EE-EF and two continuation bytes: no such one is overlong or a surrogate), that
 * start at s, four at a time (twelve of sixteen bytes read): most of Chinese and Japanese.
 * SSE2 only; elsewhere, and past them, a character at a time. */
static inline const uint8_t *jsonl_cjk_run(const uint8_t *s, const uint8_t *end) {
#if defined(JSONL_SSE2)
    const __m128i top = _mm_set1_epi8((char)0xC0), cont = _mm_set1_epi8((char)0x80);
    const __m128i bias = _mm_set1_epi8((char)0x80), low = _mm_set1_epi8((char)(0xE1 ^ 0x80)), high = _mm_set1_epi8((char)(0xEF ^ 0x80));
    const __m128i ed = _mm_set1_epi8((char)0xED);
    while (end - s >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)s), signed_v = _mm_xor_si128(v, bias); /* unsigned compares, as signed */
        int conts = _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, top), cont));
        int leads = _mm_movemask_epi8(_mm_andnot_si128(_mm_or_si128(_mm_cmplt_epi8(signed_v, low), _mm_cmpgt_epi8(signed_v, high)),
                                                       _mm_xor_si128(_mm_cmpeq_epi8(v, ed), _mm_set1_epi8(-1))));
        if ((leads & 0x249) != 0x249 || (conts & 0xDB6) != 0xDB6) break; /* bytes 0, 3, 6, 9 leads; 1-2, 4-5, 7-8, 10-11 continuations */
        s += 12;
    }
#else
    (void)end;
#endif
    return s;
}

/* Whether s[0..len) is valid UTF-8, as Python's strict decoder has it. */
static inline int jsonl_valid_utf8(const uint8_t *s, size_t len) {
    const uint8_t *end = s + len;
    while (s < end) {
        uint64_t w;
        while (end - s >= 8 && (memcpy(&w, s, 8), !(w & 0x8080808080808080ULL))) s += 8;
        while (s < end && *s < 0x80) s++;
        if (s == end) break;
        const uint8_t *run = jsonl_cjk_run(s, end);
        if (run != s) { /* past it: ASCII, perhaps, next */
            s = run;
            continue;
        }
        /* A three-byte character past U+1000 and outside the surrogates (most of Chinese and
         * Japanese) needs only its continuation bytes looked at. */
        if (end - s >= 3 && (uint8_t)(*s - 0xE1) < 0x0F && *s != 0xED && (s[1] & 0xC0) == 0x80 && (s[2] & 0xC0) == 0x80) {
            s += 3;
            continue;
        }
        int n = jsonl_utf8(s, end);
        if (!n) return 0;
        s += n;
    }
    return 1;
}

/* One more than each byte's value as a hex digit, 0 for a byte that is none: an escape's
 * four digits read with four loads and one test (a text json.dumps wrote with ensure_ascii,
 * as it does by default, is escapes all but its ASCII). */
static const int8_t jsonl_hex[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* The four hex digits at p as a number, or -1. */
static inline long jsonl_hex4(const uint8_t *p) {
    int a = jsonl_hex[p[0]], b = jsonl_hex[p[1]], c = jsonl_hex[p[2]], d = jsonl_hex[p[3]];
    if (!a || !b || !c || !d) return -1;
    return (long)(a - 1) << 12 | (long)(b - 1) << 8 | (long)(c - 1) << 4 | (d - 1);
}

static inline uint8_t *jsonl_put(uint8_t *out, long cp) {
    if (cp < 0x80) {
        *out++ = (uint8_t)cp;
    } else if (cp < 0x800) {
        *out++ = (uint8_t)(0xC0 | cp >> 6);
        *out++ = (uint8_t)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (uint8_t)(0xE0 | cp >> 12);
        *out++ = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (uint8_t)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (uint8_t)(0xF0 | cp >> 18);
        *out++ = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        *out++ = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        *out++ = (uint8_t)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* The string whose opening quote is at p: past its closing quote, or NULL to leave the line
 * to Python. With out, its value is written there as UTF-8 (never longer than the string as
 * written) and *out_end set past it. */
static const uint8_t *jsonl_string(const uint8_t *p, const uint8_t *end, uint8_t *out, uint8_t **out_end) {
    for (p++; p < end;) {
        if (*p != '\\') { /* escapes one after another go on without a look for a run */
            const uint8_t *run = p;
            int wide = 0;
            p = jsonl_run(p, end, &wide);
            if (wide && !jsonl_valid_utf8(run, (size_t)(p - run))) return NULL;
            if (out) {
                memcpy(out, run, (size_t)(p - run));
                out += p - run;
            }
        }
        if (p == end || *p < 0x20) return NULL; /* unterminated, or a control character */
        if (*p == '"') {
            if (out) *out_end = out;
            return p + 1;
        }
        if (end - p < 2) return NULL; /* a backslash */
        long cp;
        switch (p[1]) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (end - p < 6 || (cp = jsonl_hex4(p + 2)) < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) return NULL;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a pair's first half; alone it is left to Python */
                long low;
                if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || (low = jsonl_hex4(p + 8)) < 0xDC00 || low > 0xDFFF) return NULL;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            }
            p += 4;
            break;
        default: return NULL;
        }
        p += 2;
        if (out) out = jsonl_put(out, cp);
    }
    return NULL;
}

static inline const uint8_t *jsonl_digits(const uint8_t *p, const uint8_t *end) {
    const uint8_t *start = p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    return p > start ? p : NULL;
}

/* A number as JSON writes it: past it, or NULL. */
static const uint8_t *jsonl_number(const uint8_t *p, const uint8_t *end) {
    if (p < end && *p == '-') p++;
    if (p < end && *p == '0') {
        p++;
    } else if (!(p = jsonl_digits(p, end))) {
        return NULL;
    }
    if (p < end && *p == '.' && !(p = jsonl_digits(p + 1, end))) return NULL;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (!(p = jsonl_digits(p, end))) return NULL;
    }
    return p;
}

static inline const uint8_t *jsonl_word(const uint8_t *p, const uint8_t *end, const char *word, size_t n) {
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* The value at p (not space): past it, or NULL. */
static const uint8_t *jsonl_value(const uint8_t *p, const uint8_t *end, int depth) {
    switch (*p) {
    case '"': return jsonl_string(p, end, NULL, NULL);
    case 't': return jsonl_word(p, end, "true", 4);
    case 'f': return jsonl_word(p, end, "false", 5);
    case 'n': return jsonl_word(p, end, "null", 4);
    case '[':
    case '{': {
        uint8_t close = *p == '[' ? ']' : '}';
        if (depth >= JSONL_DEPTH) return NULL;
        p = jsonl_space(p + 1, end);
        if (p < end && *p == close) return p + 1;
        for (;;) {
            if (p == end) return NULL;
            if (close == '}') {
                if (*p != '"' || !(p = jsonl_string(p, end, NULL, NULL))) return NULL;
                p = jsonl_space(p, end);
                if (p == end || *p != ':') return NULL;
                p = jsonl_space(p + 1, end);
                if (p == end) return NULL;
            }
            if (!(p = jsonl_value(p, end, depth + 1))) return NULL;
            p = jsonl_space(p, end);
            if (p == end) return NULL;
            if (*p == close) return p + 1;
            if (*p != ',') return NULL;
            p = jsonl_space(p + 1, end);
        }
    }
    default: return jsonl_number(p, end);
    }
}

/* The line [p, end) (without its newline): 1 with the field's text written to out (room:
 * end - p bytes) and *out_end set past it; 0 for a blank line (as bytes.strip() finds it);
 * -1 to leave the line to Python. */
static int jsonl_text(const uint8_t *p, const uint8_t *end, const uint8_t *field, size_t field_len, uint8_t *out, uint8_t **out_end) {
    const uint8_t *q = p;
    while (q < end && (*q == ' ' || (*q >= '\t' && *q <= '\r'))) q++;
    if (q == end) return 0;
    p = jsonl_space(p, end);
    if (p == end || *p != '{') return -1;
    p = jsonl_space(p + 1, end);
    int found = 0;
    while (p < end && *p == '"') {
        const uint8_t *key = p + 1, *after = jsonl_string(p, end, NULL, NULL);
        if (!after || memchr(key, '\\', (size_t)(after - 1 - key))) return -1;
        int mine = (size_t)(after - 1 - key) == field_len && memcmp(key, field, field_len) == 0;
        p = jsonl_space(after, end);
        if (p == end || *p != ':') return -1;
        p = jsonl_space(p + 1, end);
        if (p == end) return -1;
        if (mine) {
            if (found || *p != '"' || !(p = jsonl_string(p, end, out, out_end))) return -1;
            found = 1;
        } else if (!(p = jsonl_value(p, end, 1))) {
            return -1;
        }
        p = jsonl_space(p, end);
        if (p < end && *p == '}') {
            return found && jsonl_space(p + 1, end) == end ? 1 : -1;
        }
        if (p == end || *p != ',') return -1;
        p = jsonl_space(p + 1, end);
    }
    return -1;
}

#endif
