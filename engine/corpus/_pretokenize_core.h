/* The GPT-2 and GPT-4 pre-tokenizer patterns, matched without a regex engine
 * (engine/corpus/_pretokenize_core.c). */
#ifndef PRETOKENIZE_CORE_H
#define PRETOKENIZE_CORE_H

#include <stddef.h>
#include <stdint.h>

enum { PATTERN_GPT2 = 0, PATTERN_GPT4 = 1 };

/* A Python str's code points as stored (PEP 393): 1, 2 or 4 bytes each. */
typedef struct {
    const void *data;
    int kind;
    ptrdiff_t len;
} Text;

static inline uint32_t text_at(const Text *t, ptrdiff_t i) {
    switch (t->kind) {
    case 1: return ((const uint8_t *)t->data)[i];
    case 2: return ((const uint16_t *)t->data)[i];
    default: return ((const uint32_t *)t->data)[i];
    }
}

/* Fill the lookup table of character classes; call once before pretoken_end. */
void pretokenize_tables_init(void);

/* Where the pre-token that starts at index i (< t->len) ends: what the pattern's regex, run
 * by findall, matches at i. */
ptrdiff_t pretoken_end(const Text *t, ptrdiff_t i, int pattern);

#endif
