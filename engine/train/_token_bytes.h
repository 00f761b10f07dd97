/* A token as its bytes, as the BPE and WordPiece cores keep their vocabularies: compared
 * by bytes for their tie-breaks, joined into the token a merge makes, and read from the
 * base tokens Python gives them. */
#ifndef ENGINE_TOKEN_BYTES_H
#define ENGINE_TOKEN_BYTES_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint8_t *data;
    int32_t len;
} Token;

/* The sign of vocab[x] - vocab[y] by bytes (memcmp order, a prefix first). */
static inline int cmp_token(const Token *vocab, int32_t x, int32_t y) {
    if (x == y) return 0;
    int32_t lx = vocab[x].len, ly = vocab[y].len;
    int r = memcmp(vocab[x].data, vocab[y].data, (size_t)(lx < ly ? lx : ly));
    return r ? r : (lx > ly) - (lx < ly);
}

/* x's bytes, then the ``n`` bytes at ``tail``, in a new array (a byte longer, so that it is
 * never empty): NULL with MemoryError set. */
static inline uint8_t *joined_bytes(const Token *x, const uint8_t *tail, int32_t n) {
    uint8_t *data = malloc((size_t)x->len + (size_t)n + 1);
    if (!data) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(data, x->data, (size_t)x->len);
    if (n) memcpy(data + x->len, tail, (size_t)n);
    return data;
}

/* A base token given as bytes, seen as a Token (its bytes not copied): 0, or -1 with
 * TypeError set if it is not bytes. */
static inline int base_token(PyObject *b, Token *out) {
    if (!PyBytes_Check(b)) {
        PyErr_SetString(PyExc_TypeError, "base tokens must be bytes");
        return -1;
    }
    *out = (Token){(uint8_t *)PyBytes_AS_STRING(b), (int32_t)PyBytes_GET_SIZE(b)};
    return 0;
}

#endif
