/* The pre-tokenizer 64 bytes at a time: the bytes classified by SSE2, AVX2 or NEON into one
 * 64-bit mask a class (bit k: byte k), the pre-token starts found from those masks with a few
 * shifts, ANDs and one addition, and read off the mask a set bit at a time. Included by
 * engine/corpus/_pretokenize_core.c only: pretoken_ends runs it, pretoken_end and the inline
 * scanners of _pretokenize_core.h stay the scalar reference it falls back to.
 *
 * A block starts at a pre-token's start (bit 0) and holds the bytes up to the first that is
 * not ASCII nor part of a Latin-1 letter (valid of them). Within it each family's rules reduce to masks, for byte k with
 * class c(k) (L letter, N digit, S \s, else O):
 *
 *   every family  a start where the class changes; the last S of a run before a non-S
 *                 starts a pre-token of its own, which may take the run after it
 *   GPT-2         a space there takes the L, N or O after it; a ' at a start followed by
 *                 s d m t ll ve re is a pre-token of its own
 *   GPT-4 kin     as GPT-2 with (?i) contractions, but: an S there (not \r \n) takes the L
 *                 after it, a space the O; \r and \n after an O run belong to it; a run of
 *                 S ends after its last \r or \n; an O that starts a pre-token takes the L
 *                 after it; digits go by threes (Qwen2: ones)
 *   o200k         as GPT-4, with / among the newlines an O run takes, a start at each capital
 *                 after a small letter, and the contraction a suffix of the word before it
 *
 * A start is known once the two bytes after it are, so only the starts below valid - 2 are
 * kept; the next block begins at the last of them. A block that finds none (a pre-token
 * longer than the block, or a wide character among its first eight bytes) leaves one
 * pre-token or more to the scalar scanner. The end of a text, less than a block, is copied
 * into a zeroed one.
 */
#ifndef PRETOKENIZE_SIMD_H
#define PRETOKENIZE_SIMD_H

#include "_bits.h"
#include "_pretokenize_core.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define PT_X86 1
#if defined(__GNUC__) && !defined(__clang__)
#include <cpuid.h>
#define PT_HAVE_AVX2 1 /* through GCC's target pragma; clang and MSVC build SSE2 only */
#endif
#elif (defined(__aarch64__) && !defined(__AARCH64EB__)) || defined(_M_ARM64)
#include <arm_neon.h>
#define PT_NEON 1 /* little-endian: pt_neon_bits reads its lane as the bytes' order */
#endif
#if defined(PT_X86) || defined(PT_NEON)
#define PT_BLOCKS 1 /* elsewhere pretoken_ends runs the scalar scanner alone */
#endif

#define PT_BLOCK 64

typedef struct {
    uint64_t letter, upper, digit, space, newline, blank, quote, slash, wide;
} PtMasks;

/* What a family needs classified beyond letters, digits, spaces, quotes and wide bytes. */
enum { PT_NEED_NEWLINES = 1, PT_NEED_O200K = 2 };

static inline int pt_needs(int family) {
    return family == PATTERN_GPT2 ? 0 : family == PATTERN_O200K ? PT_NEED_NEWLINES | PT_NEED_O200K : PT_NEED_NEWLINES;
}

/* Bits 0 to n-1 (none when n <= 0). */
static inline uint64_t pt_below(int n) { return n <= 0 ? 0 : n >= 64 ? ~0ULL : (1ULL << n) - 1; }

/* How long the contraction after a ' is, given its next two bytes: 2, 3, or 0 for none. */
static inline int pt_contraction_bytes(uint8_t a, uint8_t b, int fold) {
    if (fold) a |= 0x20, b |= 0x20; /* only A-Z become the letters asked for */
    if (a == 's' || a == 'd' || a == 'm' || a == 't') return 2;
    return (a == 'l' && b == 'l') || ((a == 'v' || a == 'r') && b == 'e') ? 3 : 0;
}

/* The starts after the contractions at quotes (bits of ', in order): none inside one, one
 * after it; as a suffix (o200k) its ' is no start, nor a ' right after another contraction. */
static inline uint64_t pt_block_contractions(uint64_t start, uint64_t quotes, const uint8_t *p, int valid, int fold, int suffix) {
    int after = -1; /* where the last contraction ended */
    for (; quotes; quotes &= quotes - 1) {
        int q = lowest_bit(quotes);
        if (q + 2 >= valid) break;
        if (suffix && q == after) continue;
        int k = pt_contraction_bytes(p[q + 1], p[q + 2], fold);
        if (!k) continue;
        start &= ~(pt_below(k) << q) | (suffix ? 0 : 1ULL << q);
        if (q + k < 64) start |= 1ULL << (q + k);
        after = q + k;
    }
    return start;
}

/* The starts among digits: every one (Qwen2), or every third from the first of a run. */
static inline uint64_t pt_block_digits(uint64_t digits, int per) {
    if (per == 1) return digits;
    uint64_t starts = 0, t = digits & ~(digits << 1);
    for (; t; starts |= t) {
        t = t << 1 & digits;
        t = t << 1 & digits;
        t = t << 1 & digits;
    }
    return starts;
}

/* GPT-4 and o200k: the \r or \n after an O run (o200k: and / among them), which the run's
 * pre-token takes; the carry of the addition runs from the first after an O to the end of
 * their run (o200k: a later one after an O, after a /, stops the carry and is taken too). */
static inline uint64_t pt_block_absorbed(const PtMasks *m, uint64_t other, int o200k) {
    uint64_t taken = o200k ? m->newline | m->slash : m->newline;
    uint64_t seeds = other << 1 & m->newline;
    return (taken & ~(taken + seeds)) | seeds;
}

/* GPT-4 and o200k: a run of S that holds a \r or \n ends after the last one; each run of S
 * without them after a newline starts a pre-token where it reaches a non-S (not one more
 * newline): found a candidate at a time, as few as lines that go on with spaces. */
static inline uint64_t pt_block_after_newlines(uint64_t spaces, uint64_t newlines, int valid) {
    uint64_t run = spaces & ~newlines, candidates = run & newlines << 1, starts = 0;
    for (; candidates; candidates &= candidates - 1) {
        int c = lowest_bit(candidates);
        uint64_t beyond = ~run >> c;
        if (!beyond) break;
        int land = c + lowest_bit(beyond);
        if (land < valid && !(newlines >> land & 1)) starts |= 1ULL << c;
    }
    return starts;
}

/* The pre-token starts in a block, bit 0 among them; those below valid - 2 are final. */
static inline uint64_t pt_block_starts(const PtMasks *m, const uint8_t *p, int valid, int family) {
    const uint64_t letter = m->letter, digit = m->digit, space = m->space;
    const uint64_t other = ~(letter | digit | space);
    uint64_t start = (letter ^ letter << 1) | (digit ^ digit << 1);
    if (family == PATTERN_GPT2) {
        uint64_t last = space & ~(space >> 1);
        start = (start | (space ^ space << 1) | last) & ~((last & m->blank) << 1);
        return pt_block_contractions(start | 1, (start | 1) & m->quote, p, valid, 0, 0);
    }
    const int o200k = family == PATTERN_O200K;
    const uint64_t absorbed = pt_block_absorbed(m, other, o200k);
    const uint64_t spaces = space & ~absorbed, rest = other & ~absorbed;
    start = (start | (spaces ^ spaces << 1) | (absorbed ^ absorbed << 1)) & ~absorbed;
    if (o200k) start |= m->upper & (letter & ~m->upper) << 1;
    uint64_t last = spaces & ~m->newline & ~(space >> 1);
    uint64_t join = (last << 1 & letter) | ((last & m->blank) << 1 & rest);
    start = (start | last | pt_block_after_newlines(spaces, m->newline, valid)) & ~join;
    uint64_t prefix = rest & ~(rest << 1) & letter >> 1 & ~join; /* an O that starts a pre-token before L */
    start = (start & ~(prefix << 1)) | pt_block_digits(digit, family == PATTERN_QWEN2 ? 1 : 3) | 1;
    if (o200k) return pt_block_contractions(start, m->quote & letter << 1, p, valid, 1, 1);
    return pt_block_contractions(start, start & m->quote, p, valid, 1, 0);
}

/* The Latin-1 letters (U+00C0-U+00FF but for the signs times and divide, U+00D7 and U+00F7:
 * C3 and a second byte not 97 or B7) are letters of two bytes, so that text with accents
 * stays in the blocks; o200k's capitals among them are those up to U+00DE (second byte
 * 80-9E). A C3 in the last byte stays wide. */
static inline void pt_block_latin1(PtMasks *m, uint64_t c3, uint64_t signs, uint64_t capital) {
    uint64_t lead = c3 & ~(signs >> 1) & ~(1ULL << 63), pair = lead | lead << 1, upper = lead & capital >> 1;
    m->letter |= pair;
    m->upper |= upper | upper << 1;
    m->wide &= ~pair;
}

/* Whether a block at p may find a start: not when the first byte of a wide character among its
 * first eight bytes is other than a Latin-1 letter's C3 (Chinese text, or a newline before
 * it), which leaves the scalar scanner less to redo. The bytes of w in memory order
 * (little-endian: the blocks run only there). */
static inline int pt_block_worth(const uint8_t *p, ptrdiff_t left) {
    uint64_t w;
    if (left < 8) return p[0] < 0x80;
    memcpy(&w, p, 8);
    w &= 0x8080808080808080ULL;
    return !w || p[lowest_bit(w) >> 3] == 0xC3;
}

/* The scalar scanner from byte i, a pre-token at least, into ends from n on, until a block is
 * worth trying again: one loop a family, each with its scanner inlined. */
#define PT_SCALAR_LOOP(call)                                                  \
    do {                                                                      \
        i = (call);                                                           \
        ends[n++] = i;                                                        \
    } while (n < max && i < len && (s[i] >= 0x80 || !pt_block_worth(s + i, len - i)))

#ifdef PT_BLOCKS
static ptrdiff_t pt_scalar_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int family, ptrdiff_t *ends, ptrdiff_t n, ptrdiff_t max);
#endif

/* One loop an instruction set (classify: theirs), pre-tokens through the blocks, else the
 * scalar scanner; as pretoken_ends. */
#define PT_BLOCK_ENDS(name, classify)                                                                                     \
    static ptrdiff_t name(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int family, ptrdiff_t *ends, ptrdiff_t max) {       \
        uint8_t tail[PT_BLOCK];                                                                                           \
        ptrdiff_t n = 0;                                                                                                  \
        while (n < max && i < len) {                                                                                      \
            const uint8_t *p = s + i;                                                                                     \
            ptrdiff_t left = len - i;                                                                                     \
            uint64_t starts = 0;                                                                                          \
            if (pt_block_worth(p, left)) {                                                                                \
                if (left < PT_BLOCK) {                                                                                    \
                    memcpy(tail, p, (size_t)left);                                                                        \
                    memset(tail + left, 0, (size_t)(PT_BLOCK - left));                                                    \
                    p = tail;                                                                                             \
                }                                                                                                         \
                PtMasks m;                                                                                                \
                classify(p, pt_needs(family), &m);                                                                        \
                int valid = left < PT_BLOCK ? (int)left : PT_BLOCK;                                                       \
                if (m.wide && lowest_bit(m.wide) < valid) valid = lowest_bit(m.wide);                                       \
                starts = pt_block_starts(&m, p, valid, family) & pt_below(valid - 2) & ~1ULL;                              \
            }                                                                                                             \
            if (!starts) {                                                                                                \
                n = pt_scalar_ends(s, len, i, family, ends, n, max);                                                      \
                i = ends[n - 1];                                                                                          \
                continue;                                                                                                 \
            }                                                                                                             \
            for (; starts && n < max; starts &= starts - 1) ends[n++] = i + lowest_bit(starts);                           \
            i = ends[n - 1];                                                                                              \
        }                                                                                                                 \
        return n;                                                                                                         \
    }

/* The masks of a block from its vectors v, through an instruction set's tests (ISA: SSE2,
 * AVX2 or NEON): each class a bit a byte, the rarer ones only where the family needs them. */
#define PT_CLASSIFY(v, ISA)                                                                          \
    do {                                                                                             \
        m->letter = PT_##ISA##_BITS(v, PT_##ISA##_LETTER);                                           \
        m->digit = PT_##ISA##_BITS(v, PT_##ISA##_DIGIT);                                             \
        m->space = PT_##ISA##_BITS(v, PT_##ISA##_SPACE);                                             \
        m->blank = PT_##ISA##_BITS(v, PT_##ISA##_BLANK);                                             \
        m->quote = PT_##ISA##_BITS(v, PT_##ISA##_QUOTE);                                             \
        m->wide = PT_##ISA##_BITS(v, PT_##ISA##_WIDE);                                               \
        m->newline = needs & PT_NEED_NEWLINES ? PT_##ISA##_BITS(v, PT_##ISA##_NEWLINE) : 0;          \
        m->upper = needs & PT_NEED_O200K ? PT_##ISA##_BITS(v, PT_##ISA##_UPPER) : 0;                 \
        m->slash = needs & PT_NEED_O200K ? PT_##ISA##_BITS(v, PT_##ISA##_SLASH) : 0;                 \
        if (m->wide)                                                                                 \
            pt_block_latin1(m, PT_##ISA##_BITS(v, PT_##ISA##_C3), PT_##ISA##_BITS(v, PT_##ISA##_SIGNS), \
                            needs & PT_NEED_O200K ? PT_##ISA##_BITS(v, PT_##ISA##_CAPITAL) : 0);     \
    } while (0)

#ifdef PT_X86
/* x in [lo, lo + n), as signed bytes shifted so that the range starts at -128. */
#define PT_SSE2_IN(x, lo, n) _mm_cmplt_epi8(_mm_add_epi8((x), _mm_set1_epi8((char)(0x80 - (lo)))), _mm_set1_epi8((char)(-128 + (n))))
#define PT_SSE2_EQ(x, c) _mm_cmpeq_epi8((x), _mm_set1_epi8((char)(c)))
#define PT_SSE2_BITS(v, test)                                                                                             \
    ((uint64_t)(uint16_t)_mm_movemask_epi8(test(v[0])) | (uint64_t)(uint16_t)_mm_movemask_epi8(test(v[1])) << 16 |      \
     (uint64_t)(uint16_t)_mm_movemask_epi8(test(v[2])) << 32 | (uint64_t)(uint16_t)_mm_movemask_epi8(test(v[3])) << 48)
#define PT_SSE2_LETTER(x) PT_SSE2_IN(_mm_or_si128((x), _mm_set1_epi8(0x20)), 'a', 26)
#define PT_SSE2_UPPER(x) PT_SSE2_IN((x), 'A', 26)
#define PT_SSE2_DIGIT(x) PT_SSE2_IN((x), '0', 10)
#define PT_SSE2_SPACE(x) _mm_or_si128(PT_SSE2_IN((x), '\t', 5), PT_SSE2_EQ((x), ' '))
#define PT_SSE2_NEWLINE(x) _mm_or_si128(PT_SSE2_EQ((x), '\n'), PT_SSE2_EQ((x), '\r'))
#define PT_SSE2_BLANK(x) PT_SSE2_EQ((x), ' ')
#define PT_SSE2_QUOTE(x) PT_SSE2_EQ((x), '\'')
#define PT_SSE2_SLASH(x) PT_SSE2_EQ((x), '/')
#define PT_SSE2_WIDE(x) (x)
#define PT_SSE2_C3(x) PT_SSE2_EQ((x), 0xC3)
#define PT_SSE2_SIGNS(x) _mm_or_si128(PT_SSE2_EQ((x), 0x97), PT_SSE2_EQ((x), 0xB7))
#define PT_SSE2_CAPITAL(x) PT_SSE2_IN((x), 0x80, 31)

static inline void pt_classify_sse2(const uint8_t *p, int needs, PtMasks *m) {
    __m128i v[4];
    for (int k = 0; k < 4; k++) v[k] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * k));
    PT_CLASSIFY(v, SSE2);
}

PT_BLOCK_ENDS(pt_ends_sse2, pt_classify_sse2)
#endif

#ifdef PT_HAVE_AVX2
#pragma GCC push_options
#pragma GCC target("avx2")
#define PT_AVX2_IN(x, lo, n) _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + (n))), _mm256_add_epi8((x), _mm256_set1_epi8((char)(0x80 - (lo)))))
#define PT_AVX2_EQ(x, c) _mm256_cmpeq_epi8((x), _mm256_set1_epi8((char)(c)))
#define PT_AVX2_BITS(v, test) ((uint64_t)(uint32_t)_mm256_movemask_epi8(test(v[0])) | (uint64_t)(uint32_t)_mm256_movemask_epi8(test(v[1])) << 32)
#define PT_AVX2_LETTER(x) PT_AVX2_IN(_mm256_or_si256((x), _mm256_set1_epi8(0x20)), 'a', 26)
#define PT_AVX2_UPPER(x) PT_AVX2_IN((x), 'A', 26)
#define PT_AVX2_DIGIT(x) PT_AVX2_IN((x), '0', 10)
#define PT_AVX2_SPACE(x) _mm256_or_si256(PT_AVX2_IN((x), '\t', 5), PT_AVX2_EQ((x), ' '))
#define PT_AVX2_NEWLINE(x) _mm256_or_si256(PT_AVX2_EQ((x), '\n'), PT_AVX2_EQ((x), '\r'))
#define PT_AVX2_BLANK(x) PT_AVX2_EQ((x), ' ')
#define PT_AVX2_QUOTE(x) PT_AVX2_EQ((x), '\'')
#define PT_AVX2_SLASH(x) PT_AVX2_EQ((x), '/')
#define PT_AVX2_WIDE(x) (x)
#define PT_AVX2_C3(x) PT_AVX2_EQ((x), 0xC3)
#define PT_AVX2_SIGNS(x) _mm256_or_si256(PT_AVX2_EQ((x), 0x97), PT_AVX2_EQ((x), 0xB7))
#define PT_AVX2_CAPITAL(x) PT_AVX2_IN((x), 0x80, 31)

static inline void pt_classify_avx2(const uint8_t *p, int needs, PtMasks *m) {
    __m256i v[2];
    for (int k = 0; k < 2; k++) v[k] = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * k));
    PT_CLASSIFY(v, AVX2);
}

PT_BLOCK_ENDS(pt_ends_avx2, pt_classify_avx2)

/* The UTF-8 of eight code units of 16 bits, each of a character of three bytes (U+0800-U+FFFF,
 * no surrogate), into out[0..24): each unit's three bytes made in its own lane, then put in
 * order by two shuffles of the bytes. */
static inline void pt_put_wide3(__m128i c, uint8_t *out) {
    const __m128i low6 = _mm_set1_epi16(0x3F), next = _mm_set1_epi16(0x80);
    __m128i lead = _mm_or_si128(_mm_srli_epi16(c, 12), _mm_set1_epi16(0xE0));
    __m128i mid = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(c, 6), low6), next);
    __m128i last = _mm_or_si128(_mm_and_si128(c, low6), next);
    __m128i leads_mids = _mm_packus_epi16(lead, mid), lasts = _mm_packus_epi16(last, last);
    const __m128i from_lm = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
    const __m128i from_last = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
    const __m128i rest_lm = _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m128i rest_last = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
    _mm_storeu_si128((__m128i *)(void *)out, _mm_or_si128(_mm_shuffle_epi8(leads_mids, from_lm), _mm_shuffle_epi8(lasts, from_last)));
    _mm_storel_epi64((__m128i *)(void *)(out + 16), _mm_or_si128(_mm_shuffle_epi8(leads_mids, rest_lm), _mm_shuffle_epi8(lasts, rest_last)));
}

/* Whether eight code units are all of characters of three UTF-8 bytes: none below U+0800 or
 * a surrogate (the top five bits of neither 0 nor 11011). */
static inline int pt_all_wide3(__m128i c) {
    __m128i top = _mm_and_si128(c, _mm_set1_epi16((short)0xF800));
    return !_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi16(top, _mm_setzero_si128()), _mm_cmpeq_epi16(top, _mm_set1_epi16((short)0xD800))));
}

/* The UTF-8 of the first n code units at u (2 or 4 bytes each: width) into out, eight at a
 * time while they are characters of three bytes: how many were written (a multiple of 8). */
static ptrdiff_t pt_wide3_avx2(const void *u, int width, ptrdiff_t n, uint8_t *out) {
    ptrdiff_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i c;
        if (width == 2) {
            c = _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)u + i));
        } else {
            const uint32_t *w = (const uint32_t *)u + i;
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)w), b = _mm_loadu_si128((const __m128i *)(const void *)(w + 4));
            if (!_mm_testz_si128(_mm_or_si128(a, b), _mm_set1_epi32((int)0xFFFF0000))) break; /* beyond U+FFFF */
            c = _mm_packus_epi32(a, b);
        }
        if (!pt_all_wide3(c)) break;
        pt_put_wide3(c, out + 3 * i);
    }
    return i;
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("xsave")
static unsigned long long pt_xcr0(void) { return _xgetbv(0); }
#pragma GCC pop_options

/* Whether the CPU has AVX2 and the system saves its registers (OSXSAVE, and the SSE and AVX
 * state bits of XCR0). */
static int pt_cpu_has_avx2(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & 1u << 27) || !(c & 1u << 28)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & 1u << 5)) return 0;
    return (pt_xcr0() & 6) == 6;
}
#endif

#ifdef PT_NEON
/* x in [lo, lo + n), unsigned. */
#define PT_NEON_IN(x, lo, n) vcltq_u8(vsubq_u8((x), vdupq_n_u8(lo)), vdupq_n_u8(n))
#define PT_NEON_EQ(x, c) vceqq_u8((x), vdupq_n_u8(c))
#define PT_NEON_BITS(v, test) pt_neon_bits(test(v[0]), test(v[1]), test(v[2]), test(v[3]))
#define PT_NEON_LETTER(x) PT_NEON_IN(vorrq_u8((x), vdupq_n_u8(0x20)), 'a', 26)
#define PT_NEON_UPPER(x) PT_NEON_IN((x), 'A', 26)
#define PT_NEON_DIGIT(x) PT_NEON_IN((x), '0', 10)
#define PT_NEON_SPACE(x) vorrq_u8(PT_NEON_IN((x), '\t', 5), PT_NEON_EQ((x), ' '))
#define PT_NEON_NEWLINE(x) vorrq_u8(PT_NEON_EQ((x), '\n'), PT_NEON_EQ((x), '\r'))
#define PT_NEON_BLANK(x) PT_NEON_EQ((x), ' ')
#define PT_NEON_QUOTE(x) PT_NEON_EQ((x), '\'')
#define PT_NEON_SLASH(x) PT_NEON_EQ((x), '/')
#define PT_NEON_WIDE(x) vcgeq_u8((x), vdupq_n_u8(0x80))
#define PT_NEON_C3(x) PT_NEON_EQ((x), 0xC3)
#define PT_NEON_SIGNS(x) vorrq_u8(PT_NEON_EQ((x), 0x97), PT_NEON_EQ((x), 0xB7))
#define PT_NEON_CAPITAL(x) PT_NEON_IN((x), 0x80, 31)

/* Four 16-byte masks (0xFF or 0 a byte) as 64 bits: each byte keeps its own bit, and three
 * rounds of pairwise adds pack them. */
static inline uint64_t pt_neon_bits(uint8x16_t a, uint8x16_t b, uint8x16_t c, uint8x16_t d) {
    static const uint8_t weights[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t w = vld1q_u8(weights);
    uint8x16_t ab = vpaddq_u8(vandq_u8(a, w), vandq_u8(b, w)), cd = vpaddq_u8(vandq_u8(c, w), vandq_u8(d, w));
    uint8x16_t all = vpaddq_u8(ab, cd);
    return vgetq_lane_u64(vreinterpretq_u64_u8(vpaddq_u8(all, all)), 0);
}

static inline void pt_classify_neon(const uint8_t *p, int needs, PtMasks *m) {
    uint8x16_t v[4];
    for (int k = 0; k < 4; k++) v[k] = vld1q_u8(p + 16 * k);
    PT_CLASSIFY(v, NEON);
}

PT_BLOCK_ENDS(pt_ends_neon, pt_classify_neon)
#endif

#endif
