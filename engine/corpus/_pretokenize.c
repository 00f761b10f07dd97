/* engine.corpus._pretokenize: the compiled pre-tokenizer (engine/corpus/_pretokenize_core.c)
 * for Python: the pre-tokens of a str under a family of patterns, or how many there are.
 * Counting for training splits its distinct parts with it (engine/corpus/pretokenize.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_pretokenize_core.h"

/* The UTF-8 of text (a new buffer, or the str's own bytes when it is ASCII: *owned 0) and
 * its length; NULL with MemoryError. Lone surrogates are kept (see utf8_encode). */
static const uint8_t *utf8_of(PyObject *text, ptrdiff_t *len, int *owned) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text), surrogates = 0;
    *owned = !PyUnicode_IS_ASCII(text);
    if (!*owned) {
        *len = n;
        return PyUnicode_DATA(text);
    }
    uint8_t *buf = PyMem_Malloc(utf8_room(kind, n) + 1);
    if (!buf) {
        PyErr_NoMemory();
        return NULL;
    }
    *len = utf8_encode(PyUnicode_DATA(text), kind, n, buf, &surrogates);
    return buf;
}

static int parse(PyObject *args, PyObject **text, int *pattern) {
    if (!PyArg_ParseTuple(args, "Ui", text, pattern)) return -1;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(*text) < 0) return -1; /* legacy (wstr) strings; 3.12 has none left */
#endif
    if (*pattern < 0 || *pattern >= PATTERN_COUNT) {
        PyErr_Format(PyExc_ValueError, "pattern must be a family number, 0-%d", PATTERN_COUNT - 1);
        return -1;
    }
    return 0;
}

/* pretokens(text: str, pattern: int) -> list[str] */
static PyObject *pretokens(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *text;
    int pattern, owned;
    ptrdiff_t len, ends[256], got;
    if (parse(args, &text, &pattern)) return NULL;
    const uint8_t *s = utf8_of(text, &len, &owned);
    if (!s) return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t at = 0; /* the code point where the pre-token starts */
    for (ptrdiff_t i = 0; out && (got = pretoken_ends(s, len, i, pattern, ends, 256)) > 0;) {
        for (ptrdiff_t k = 0; out && k < got; i = ends[k++]) {
            Py_ssize_t chars = 0;
            for (ptrdiff_t b = i; b < ends[k]; b++) chars += (s[b] & 0xC0) != 0x80;
            PyObject *piece = PyUnicode_Substring(text, at, at + chars);
            if (!piece || PyList_Append(out, piece)) Py_CLEAR(out);
            Py_XDECREF(piece);
            at += chars;
        }
    }
    if (owned) PyMem_Free((void *)s);
    return out;
}

/* Whether the last three bytes of s[0..len) are ASCII: then no character the scanner decodes
 * reaches past the end, whatever the bytes before. */
static int ascii_ending(const uint8_t *s, ptrdiff_t len) {
    for (ptrdiff_t k = len < 3 ? 0 : len - 3; k < len; k++)
        if (s[k] >= 0x80) return 0;
    return 1;
}

/* pretoken_count(text: str | bytes, pattern: int) -> int: how many pre-tokens, no str made
 * (to time the scan alone: bytes are taken as UTF-8 as they are, copied only when their end is
 * not ASCII; bytes that are not UTF-8 give a count of no meaning; the GIL is released). */
static PyObject *pretoken_count(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *text;
    int pattern, owned = 0;
    ptrdiff_t len, n = 0, ends[256], got;
    const uint8_t *s;
    if (PyTuple_GET_SIZE(args) == 2 && PyBytes_Check(PyTuple_GET_ITEM(args, 0))) {
        if (!PyArg_ParseTuple(args, "Si", &text, &pattern)) return NULL;
        if (pattern < 0 || pattern >= PATTERN_COUNT) return PyErr_Format(PyExc_ValueError, "pattern must be a family number, 0-%d", PATTERN_COUNT - 1);
        s = (const uint8_t *)PyBytes_AS_STRING(text);
        len = PyBytes_GET_SIZE(text);
        if (!ascii_ending(s, len)) { /* a character cut off at the end would be read past it */
            uint8_t *padded = PyMem_Calloc((size_t)len + 4, 1);
            if (!padded) return PyErr_NoMemory();
            s = memcpy(padded, s, (size_t)len);
            owned = 1;
        }
    } else {
        if (parse(args, &text, &pattern)) return NULL;
        if (!(s = utf8_of(text, &len, &owned))) return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (ptrdiff_t i = 0; (got = pretoken_ends(s, len, i, pattern, ends, 256)) > 0; i = ends[got - 1]) n += got;
    Py_END_ALLOW_THREADS
    if (owned) PyMem_Free((void *)s);
    return PyLong_FromSsize_t(n);
}

/* simd_levels() -> list[str]: the instruction sets this build can run here, scalar first. */
static PyObject *simd_levels(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args)) {
    PyObject *out = PyList_New(0);
    for (int level = 0; out && level < PT_SIMD_COUNT; level++) {
        if (!pt_simd_supported(level)) continue;
        PyObject *name = PyUnicode_FromString(pt_simd_names[level]);
        if (!name || PyList_Append(out, name)) Py_CLEAR(out);
        Py_XDECREF(name);
    }
    return out;
}

/* simd_level() -> str: the one this module's scanner runs on. */
static PyObject *simd_level(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(args)) {
    return PyUnicode_FromString(pt_simd_names[pt_simd_level()]);
}

/* set_simd_level(name: str) -> None: for tests and benchmarks, this module's scanner only. */
static PyObject *set_simd_level(PyObject *Py_UNUSED(module), PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    for (int level = 0; level < PT_SIMD_COUNT; level++)
        if (!strcmp(name, pt_simd_names[level])) {
            if (pt_set_simd_level(level)) return PyErr_Format(PyExc_ValueError, "%s is not available on this machine", name);
            Py_RETURN_NONE;
        }
    return PyErr_Format(PyExc_ValueError, "no instruction set is called %s", name);
}

static PyMethodDef functions[] = {
    {"pretokens", pretokens, METH_VARARGS, "The pre-tokens of a text under a family of patterns (a PATTERN_ number)."},
    {"pretoken_count", pretoken_count, METH_VARARGS, "How many pre-tokens pretokens() would give, without making them."},
    {"simd_levels", simd_levels, METH_NOARGS, "The instruction sets the scanner can run on here."},
    {"simd_level", simd_level, METH_NOARGS, "The instruction set the scanner runs on."},
    {"set_simd_level", set_simd_level, METH_VARARGS, "Run the scanner on an instruction set (for tests and benchmarks)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "engine.corpus._pretokenize", "The compiled pre-tokenizer.", -1, functions, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pretokenize(void) {
    pretokenize_tables_init();
    return PyModule_Create(&module);
}
