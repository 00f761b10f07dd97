/* engine._space_parts: count the parts of a piece without a str per part.
 *
 * count_space_parts(piece, bare, spaced, newline_after) cuts the piece where a pre-token
 * always starts under the named patterns (see engine/corpus/pretokenize.py):
 *
 * - before each space whose predecessor is not whitespace; the space is dropped and the
 *   part after it is counted in ``spaced`` (it stands for " " + part);
 * - with newline_after 1 (GPT-2), before each "\n" whose predecessor is not whitespace;
 *   with 2 (GPT-4), before each "\n" that follows an ASCII letter or digit; the newline
 *   stays, and the part from it is counted in ``bare``, as is the piece's first part.
 *
 * Whitespace is Py_UNICODE_ISSPACE, which is both str.isspace and what re's \S excludes
 * for str patterns. tests/test_pretokenize.py checks this against the same cuts in Python.
 *
 * Why C: a long piece has about a million parts but only a tenth of them distinct. The
 * parts are counted as code-unit spans of the piece in a small hash table of our own, and
 * a str is made only once per distinct part, when the counts go into the dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

/* One distinct part: the span piece[start:start+len], seen count times. */
typedef struct {
    Py_ssize_t start;
    Py_ssize_t len;
    Py_ssize_t count;
    uint64_t hash;
    int spaced;                /* after a dropped space */
} Entry;

/* Entries stay in first-seen order (as a dict fills up in Python), so the results are
 * written in the same order every run; the index is an open-addressing table of entry
 * positions, -1 for an empty slot. */
typedef struct {
    Entry *entries;
    Py_ssize_t used, capacity; /* entries */
    Py_ssize_t *index;
    size_t mask;               /* index slots - 1, a power of two minus one */
} Table;

#define FNV_OFFSET 14695981039346656037ULL
#define FNV_PRIME 1099511628211ULL

/* FNV-1a leaves the low bits (the ones the mask keeps) weakly mixed: finish with a
 * multiply-xorshift so that short parts differing in one character spread out. */
static inline uint64_t
finish_hash(uint64_t h)
{
    h ^= h >> 32;
    h *= 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

static int
table_init(Table *t)
{
    t->used = 0;
    t->capacity = 64;
    t->mask = 127; /* kept at most half full: probes stay short */
    t->entries = PyMem_New(Entry, t->capacity);
    t->index = PyMem_New(Py_ssize_t, t->mask + 1);
    if (t->entries == NULL || t->index == NULL) {
        PyMem_Free(t->entries);
        PyMem_Free(t->index);
        PyErr_NoMemory();
        return -1;
    }
    memset(t->index, 0xff, (t->mask + 1) * sizeof(Py_ssize_t)); /* all -1 */
    return 0;
}

static void
table_free(Table *t)
{
    PyMem_Free(t->entries);
    PyMem_Free(t->index);
}

/* Double both arrays; the index is rebuilt from the stored hashes. */
static int
table_grow(Table *t)
{
    Py_ssize_t capacity = t->capacity * 2;
    size_t mask = t->mask * 2 + 1;
    /* PyMem_Realloc, not PyMem_Resize: that macro overwrites the pointer with NULL on
     * failure, and the old block would leak. */
    Entry *entries = PyMem_Realloc(t->entries, (size_t)capacity * sizeof(Entry));
    if (entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    t->entries = entries;
    Py_ssize_t *index = PyMem_New(Py_ssize_t, mask + 1);
    if (index == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(index, 0xff, (mask + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t k = 0; k < t->used; k++) {
        size_t slot = (size_t)t->entries[k].hash & mask;
        while (index[slot] >= 0)
            slot = (slot + 1) & mask;
        index[slot] = k;
    }
    PyMem_Free(t->index);
    t->index = index;
    t->capacity = capacity;
    t->mask = mask;
    return 0;
}

/* Count the span piece[start:start+len] (code units of `kind` bytes at `data`). */
static int
table_add(Table *t, const char *data, int kind, Py_ssize_t start, Py_ssize_t len, int spaced,
          uint64_t hash)
{
    hash ^= (uint64_t)spaced;
    size_t slot = (size_t)hash & t->mask;
    Py_ssize_t k;
    while ((k = t->index[slot]) >= 0) {
        Entry *e = &t->entries[k];
        if (e->hash == hash && e->len == len && e->spaced == spaced &&
            memcmp(data + e->start * kind, data + start * kind, (size_t)(len * kind)) == 0) {
            e->count++;
            return 0;
        }
        slot = (slot + 1) & t->mask;
    }
    if (t->used == t->capacity) {
        if (table_grow(t) < 0)
            return -1;
        slot = (size_t)hash & t->mask; /* the mask changed: probe again */
        while (t->index[slot] >= 0)
            slot = (slot + 1) & t->mask;
    }
    t->index[slot] = t->used;
    t->entries[t->used++] = (Entry){start, len, 1, hash, spaced};
    return 0;
}

/* dict[piece[start:end]] += n, starting from 0 when the key is missing. */
static int
dict_add(PyObject *dict, PyObject *piece, Py_ssize_t start, Py_ssize_t end, Py_ssize_t n)
{
    int rc = -1;
    PyObject *old, *sum = NULL;
    PyObject *key = PyUnicode_Substring(piece, start, end);
    PyObject *add = PyLong_FromSsize_t(n);
    if (key == NULL || add == NULL)
        goto done;
    old = PyDict_GetItemWithError(dict, key); /* borrowed */
    if (old == NULL && PyErr_Occurred())
        goto done;
    if (old == NULL) {
        sum = add;
        Py_INCREF(sum);
    }
    else if ((sum = PyNumber_Add(old, add)) == NULL) {
        goto done;
    }
    rc = PyDict_SetItem(dict, key, sum);
done:
    Py_XDECREF(key);
    Py_XDECREF(add);
    Py_XDECREF(sum);
    return rc;
}

static inline int
newline_cut(Py_UCS4 before, int newline_after)
{
    if (newline_after == 1)
        return !Py_UNICODE_ISSPACE(before);
    return newline_after == 2 && before < 128 && Py_ISALNUM(before);
}

/* Cut and count one piece of a given kind. Kept inline and called with a constant kind,
 * so the compiler makes one tight loop per kind instead of switching per char. */
static inline int
scan(const void *data, int kind, Py_ssize_t n, Table *t, int newline_after)
{
    Py_ssize_t start = 0;
    int spaced = 0;
    uint64_t h = FNV_OFFSET;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        /* Only a space or a newline can be a cut, so the (slower) whitespace test runs for
         * those alone. Like re's lookbehind it looks at the piece itself: right after a
         * cut the char before is the dropped space, so "a  b" gives "a", " b". */
        if ((ch == ' ' || (ch == '\n' && newline_after)) && i > 0) {
            Py_UCS4 before = PyUnicode_READ(kind, data, i - 1);
            int space = ch == ' ' && !Py_UNICODE_ISSPACE(before);
            if (space || (ch == '\n' && newline_cut(before, newline_after))) {
                if (table_add(t, data, kind, start, i - start, spaced, finish_hash(h)) < 0)
                    return -1;
                start = space ? i + 1 : i;
                spaced = space;
                h = FNV_OFFSET;
                if (space)
                    continue;
            }
        }
        h = (h ^ ch) * FNV_PRIME;
    }
    return table_add(t, data, kind, start, n - start, spaced, finish_hash(h));
}

static PyObject *
count_space_parts(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *piece, *bare, *spaced;
    int newline_after;
    if (!PyArg_ParseTuple(args, "UO!O!i:count_space_parts", &piece, &PyDict_Type, &bare,
                          &PyDict_Type, &spaced, &newline_after))
        return NULL;
#if PY_VERSION_HEX < 0x030C0000
    /* Legacy (wstr) strings need this before PyUnicode_DATA; 3.12 has none left. */
    if (PyUnicode_READY(piece) < 0)
        return NULL;
#endif

    const void *data = PyUnicode_DATA(piece);
    int kind = PyUnicode_KIND(piece);
    Py_ssize_t n = PyUnicode_GET_LENGTH(piece);
    Table t;
    if (table_init(&t) < 0)
        return NULL;

    int rc;
    switch (kind) {
    case PyUnicode_1BYTE_KIND: rc = scan(data, PyUnicode_1BYTE_KIND, n, &t, newline_after); break;
    case PyUnicode_2BYTE_KIND: rc = scan(data, PyUnicode_2BYTE_KIND, n, &t, newline_after); break;
    default: rc = scan(data, PyUnicode_4BYTE_KIND, n, &t, newline_after); break;
    }

    for (Py_ssize_t k = 0; rc == 0 && k < t.used; k++) {
        Entry *e = &t.entries[k];
        rc = dict_add(e->spaced ? spaced : bare, piece, e->start, e->start + e->len, e->count);
    }
    table_free(&t);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"count_space_parts", count_space_parts, METH_VARARGS,
     "count_space_parts(piece, bare, spaced, newline_after)\n--\n\n"
     "Add the counts of the piece's parts to two dicts (str -> int): parts after a\n"
     "dropped space to spaced, the others to bare."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_space_parts",
    "Fast counting of the space parts of a pre-tokenizer piece.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__space_parts(void)
{
    return PyModule_Create(&module);
}
