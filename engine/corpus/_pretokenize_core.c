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
#ifdef _MSC_VER
#define _CRT_SECURE_NO_WARNINGS /* getenv, which MSVC would have replaced by its own */
#endif
#define UNICODE_CLASS_TABLES
#include "_pretokenize_core.h"
#include "_pretokenize_simd.h"

#include <stdlib.h>

#define NRANGES (sizeof CLASS_RANGES / sizeof CLASS_RANGES[0])

uint8_t pt_flat_classes[PT_FLAT_LIMIT];
uint8_t pt_base_of[256];
uint8_t pt_wide3_classes[16 * 64];

const char *const pt_simd_names[PT_SIMD_COUNT] = {"scalar", "sse2", "avx2", "neon"};

static int simd_level = PT_SIMD_SCALAR;

int pt_simd_supported(int level) {
    switch (level) {
    case PT_SIMD_SCALAR: return 1;
#ifdef PT_X86
    case PT_SIMD_SSE2: return 1;
#endif
#ifdef PT_HAVE_AVX2
    case PT_SIMD_AVX2: return pt_cpu_has_avx2();
#endif
#ifdef PT_NEON
    case PT_SIMD_NEON: return 1;
#endif
    default: return 0;
    }
}

int pt_simd_level(void) { return simd_level; }

int pt_set_simd_level(int level) {
    if (level < 0 || level >= PT_SIMD_COUNT || !pt_simd_supported(level)) return -1;
    simd_level = level;
    return 0;
}

/* The widest instruction set the machine has, or the one BPE_TUI_PRETOKENIZE_SIMD names (the
 * tests run each through every module). */
static void choose_simd_level(void) {
    for (int level = PT_SIMD_COUNT - 1; level > PT_SIMD_SCALAR; level--)
        if (!pt_set_simd_level(level)) break;
    const char *asked = getenv("BPE_TUI_PRETOKENIZE_SIMD");
    for (int level = 0; asked && level < PT_SIMD_COUNT; level++)
        if (!strcmp(asked, pt_simd_names[level])) pt_set_simd_level(level);
}

void pretokenize_tables_init(void) {
    choose_simd_level();
    for (size_t r = 0; r < NRANGES && CLASS_RANGES[r].first < PT_FLAT_LIMIT; r++)
        for (uint32_t c = CLASS_RANGES[r].first; c <= CLASS_RANGES[r].last && c < PT_FLAT_LIMIT; c++)
            pt_flat_classes[c] = CLASS_RANGES[r].bits;
    for (int b = 0; b < 256; b++) pt_base_of[b] = b < 0x80 ? pt_flat_classes[b] & BASE : WIDE;
    for (uint32_t first = 0; first < 16 * 64; first++) { /* a three-byte character's bits 12-17, 6-11 */
        const uint8_t *run = pt_flat_classes + (first << 6);
        pt_wide3_classes[first] = memcmp(run, run + 1, 63) ? PT_MIXED : run[0]; /* all 64 alike */
    }
}

uint8_t pt_class_wide(uint32_t c) {
    size_t lo = 0, hi = NRANGES;
    while (lo < hi) { /* the first range ending at or after c */
        size_t mid = (lo + hi) / 2;
        if (CLASS_RANGES[mid].last < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < NRANGES && CLASS_RANGES[lo].first <= c ? CLASS_RANGES[lo].bits : OTHER;
}

char pt_folded(uint32_t c) {
    for (size_t k = 0; k < sizeof FOLDED / sizeof FOLDED[0]; k++)
        if (FOLDED[k].code == c) return FOLDED[k].letter;
    return 0;
}

ptrdiff_t pretoken_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern) {
    switch (pattern) {
    case PATTERN_GPT4: return pt_gpt4_end(s, len, i, 3, 0);
    case PATTERN_CL100K: return pt_gpt4_end(s, len, i, 3, 1);
    case PATTERN_QWEN2: return pt_gpt4_end(s, len, i, 1, 0);
    case PATTERN_O200K: return pt_o200k_end(s, len, i);
    default: return pt_gpt2_end(s, len, i);
    }
}

/* One loop a family, so each scanner is inlined with its settings. */
#define ENDS_LOOP(call)                     \
    for (; n < max && i < len; n++) {       \
        i = (call);                         \
        ends[n] = i;                        \
    }

#ifdef PT_BLOCKS
static ptrdiff_t pt_scalar_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int family, ptrdiff_t *ends, ptrdiff_t n, ptrdiff_t max) {
    switch (family) {
    case PATTERN_GPT4: PT_SCALAR_LOOP(pt_gpt4_end(s, len, i, 3, 0)); break;
    case PATTERN_CL100K: PT_SCALAR_LOOP(pt_gpt4_end(s, len, i, 3, 1)); break;
    case PATTERN_QWEN2: PT_SCALAR_LOOP(pt_gpt4_end(s, len, i, 1, 0)); break;
    case PATTERN_O200K: PT_SCALAR_LOOP(pt_o200k_end(s, len, i)); break;
    default: PT_SCALAR_LOOP(pt_gpt2_end(s, len, i)); break;
    }
    return n;
}
#endif

ptrdiff_t pretoken_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern, ptrdiff_t *ends, ptrdiff_t max) {
    switch (simd_level) {
#ifdef PT_X86
    case PT_SIMD_SSE2: return pt_ends_sse2(s, len, i, pattern, ends, max);
#endif
#ifdef PT_HAVE_AVX2
    case PT_SIMD_AVX2: return pt_ends_avx2(s, len, i, pattern, ends, max);
#endif
#ifdef PT_NEON
    case PT_SIMD_NEON: return pt_ends_neon(s, len, i, pattern, ends, max);
#endif
    default: break;
    }
    ptrdiff_t n = 0;
    switch (pattern) {
    case PATTERN_GPT4: ENDS_LOOP(pt_gpt4_end(s, len, i, 3, 0)) break;
    case PATTERN_CL100K: ENDS_LOOP(pt_gpt4_end(s, len, i, 3, 1)) break;
    case PATTERN_QWEN2: ENDS_LOOP(pt_gpt4_end(s, len, i, 1, 0)) break;
    case PATTERN_O200K: ENDS_LOOP(pt_o200k_end(s, len, i)) break;
    default: ENDS_LOOP(pt_gpt2_end(s, len, i)) break;
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

/* How many of the first n 2-byte code units at u are ASCII, up to the last multiple of 16
 * of them, written to out as bytes: 16 a step, two vectors narrowed into one. 0 where there
 * are no vectors (the caller's 8-byte words take the rest). */
static inline ptrdiff_t ascii_units16(const uint16_t *u, ptrdiff_t n, uint8_t *out) {
    ptrdiff_t i = 0;
#if defined(PT_X86)
    const __m128i high = _mm_set1_epi16((short)0xFF80), zero = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(u + i)), b = _mm_loadu_si128((const __m128i *)(u + i + 8));
        if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(_mm_or_si128(a, b), high), zero)) != 0xFFFF) break;
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi16(a, b));
    }
#elif defined(PT_NEON)
    for (; i + 16 <= n; i += 16) {
        uint16x8_t a = vld1q_u16(u + i), b = vld1q_u16(u + i + 8);
        if (vmaxvq_u16(vorrq_u16(a, b)) >= 0x80) break;
        vst1q_u8(out + i, vcombine_u8(vmovn_u16(a), vmovn_u16(b)));
    }
#else
    (void)u, (void)n, (void)out;
#endif
    return i;
}

/* Characters of three bytes from u on (code units of width bytes), written eight at a time
 * where the machine can: how many (the rest, one at a time, to the caller). A Chinese text's
 * UTF-8 had been a tenth of encoding it a second time under cl100k. */
static inline ptrdiff_t wide3_units(const void *u, int width, ptrdiff_t n, uint8_t *out) {
#ifdef PT_HAVE_AVX2
    if (simd_level == PT_SIMD_AVX2) return pt_wide3_avx2(u, width, n, out);
#endif
    (void)u, (void)width, (void)n, (void)out;
    return 0;
}

static inline int is_wide3(uint32_t c) { return c >= 0x800 && c < 0x10000 && (c < 0xD800 || c > 0xDFFF); }

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
        const int little = pt_little_endian();
        while (i < n) {
            uint64_t v;
            ptrdiff_t ascii = ascii_units16(u + i, n - i, p);
            if (ascii) {
                p += ascii;
                i += ascii;
            } else if (little && i + 8 <= n && (memcpy(&w, u + i, 8), memcpy(&v, u + i + 4, 8), !((w | v) & 0xFF80FF80FF80FF80ULL))) {
                /* Eight ASCII code units: the low byte of each, packed by shifts into one word. */
                w = (w | w >> 8) & 0x0000FFFF0000FFFFULL, w = (w | w >> 16) & 0xFFFFFFFFULL;
                v = (v | v >> 8) & 0x0000FFFF0000FFFFULL, v = (v | v >> 16) & 0xFFFFFFFFULL;
                w |= v << 32;
                memcpy(p, &w, 8);
                p += 8;
                i += 8;
            } else if (i + 4 <= n && (memcpy(&w, u + i, 8), !(w & 0xFF80FF80FF80FF80ULL))) {
                uint16_t four[4];
                memcpy(four, &w, 8); /* the same code units, in memory order on any machine */
                for (int k = 0; k < 4; k++) p[k] = (uint8_t)four[k];
                p += 4;
                i += 4;
            } else if (is_wide3(u[i])) {
                /* A run of three-byte characters (most of Chinese or Japanese text), none a surrogate. */
                ptrdiff_t wide = wide3_units(u + i, 2, n - i, p);
                p += 3 * wide, i += wide;
                for (; i < n && is_wide3(u[i]); i++) {
                    uint32_t c = u[i];
                    p[0] = (uint8_t)(0xE0 | c >> 12);
                    p[1] = (uint8_t)(0x80 | (c >> 6 & 0x3F));
                    p[2] = (uint8_t)(0x80 | (c & 0x3F));
                    p += 3;
                }
            } else {
                p = u[i] < 0x80 ? (*p = (uint8_t)u[i], p + 1) : put_utf8(p, u[i], surrogates);
                i++;
            }
        }
    } else {
        const uint32_t *u = data;
        while (i < n) {
            ptrdiff_t wide = is_wide3(u[i]) ? wide3_units(u + i, 4, n - i, p) : 0;
            p += 3 * wide, i += wide;
            if (i < n) p = u[i] < 0x80 ? (*p = (uint8_t)u[i], p + 1) : put_utf8(p, u[i], surrogates), i++;
        }
    }
    return p - out;
}
