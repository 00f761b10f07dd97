/* The pre-tokenizer patterns of GPT-2, GPT-4 (cl100k), GPT-4o (o200k), Llama-3 and Qwen2,
 * matched without a regex engine over UTF-8 (engine/corpus/_pretokenize_core.c). */
#ifndef PRETOKENIZE_CORE_H
#define PRETOKENIZE_CORE_H

#include <stddef.h>
#include <stdint.h>

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

/* Fill the lookup table of character classes; call once before the functions below. */
void pretokenize_tables_init(void);

/* Where the pre-token that starts at byte i (< len) of the UTF-8 text s[0..len) ends: what the
 * pattern's regex, run by findall on the text, matches at i. Surrogates (U+D800-U+DFFF, as
 * UTF-8 would write them) are characters of no class. */
ptrdiff_t pretoken_end(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern);

/* The ends of the pre-tokens from byte i on (i at a pre-token's start), at most max of them,
 * into ends: how many were written (0 only when i == len). */
ptrdiff_t pretoken_ends(const uint8_t *s, ptrdiff_t len, ptrdiff_t i, int pattern, ptrdiff_t *ends, ptrdiff_t max);

/* The bytes utf8_encode may write for n code units of kind bytes each (1, 2 or 4). */
static inline size_t utf8_room(int kind, ptrdiff_t n) {
    return (size_t)n * (kind == 1 ? 2u : kind == 2 ? 3u : 4u);
}

/* The UTF-8 of the n code units of kind bytes each (a Python str's code points as stored, PEP
 * 393) at data, into out (utf8_room bytes): the bytes written. A lone surrogate is written as
 * its three bytes and *surrogates is set (no valid UTF-8 has it; str.encode refuses it). */
ptrdiff_t utf8_encode(const void *data, int kind, ptrdiff_t n, uint8_t *out, int *surrogates);

#endif
