/* What the trainers' compiled cores do alike with Python: a module holding one type,
 * ``Core``, whose methods read their arguments and build their results the same way. */
#ifndef ENGINE_CORE_MODULE_H
#define ENGINE_CORE_MODULE_H

#include <Python.h>
#include <stddef.h> /* offsetof, for the members' tables: from 3.12 Python.h no longer brings it */

/* PyMemberDef's field types and flag: in Python.h from 3.12, in structmember.h (which 3.12
 * deprecates) before. */
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_INT T_INT
#define Py_T_LONGLONG T_LONGLONG
#define Py_READONLY READONLY
#endif

/* Append ``item`` (a new reference, or NULL when making it failed) to ``list`` and let it go:
 * 0, or -1 with an exception set. */
static inline int append_new(PyObject *list, PyObject *item) {
    if (!item) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* An index below ``n`` given as ``arg``: -1 with an exception set if it is not one (IndexError
 * with ``no_such``). */
static inline Py_ssize_t index_arg(PyObject *arg, Py_ssize_t n, const char *no_such) {
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= n) {
        PyErr_SetString(PyExc_IndexError, no_such);
        return -1;
    }
    return i;
}

/* The slots each core's type fills alike, from the names each core gives them: made by
 * PyType_GenericNew, set up by Core_init, freed by Core_dealloc, with the Core_methods and
 * the Core_members (plain fields, read-only) it has. */
#define CORE_TYPE_SLOTS                                                                         \
    .tp_basicsize = sizeof(Core), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = PyType_GenericNew, \
    .tp_init = (initproc)Core_init, .tp_dealloc = (destructor)Core_dealloc,                    \
    .tp_methods = Core_methods, .tp_members = Core_members

/* The module ``def`` with ``type`` in it as ``Core``: what each core's PyInit returns. */
static inline PyObject *module_with_core(struct PyModuleDef *def, PyTypeObject *type) {
    if (PyType_Ready(type) < 0) return NULL;
    PyObject *m = PyModule_Create(def);
    if (!m) return NULL;
    Py_INCREF(type);
    if (PyModule_AddObject(m, "Core", (PyObject *)type) < 0) {
        Py_DECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

#endif
