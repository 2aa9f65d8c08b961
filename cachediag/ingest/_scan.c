/* The line scanner of cachediag.ingest.lines, compiled.
 *
 * Most of a Claude Code transcript is tool output that can never carry a request; the
 * reader keeps only lines holding a needle (and odd lines, so that their parse fails and
 * they are counted). The pure-Python scanner in lines.py does this with one bytes.find per
 * needle plus one per line; this does it in one pass with memchr and memmem, which is most
 * of `analyze`'s time saved on a large tree. Both must give identical answers:
 * tests/test_scan_ext.py holds them to it.
 *
 * Plain C and the Python C API. glibc's memmem and memrchr are used where they exist
 * (GNU extensions); elsewhere (macOS, musl without them, MSVC) the simple loops below
 * stand in. setup.py marks the extension optional, so a machine without a compiler
 * still installs cachediag and uses the Python scanner.
 */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem, memrchr */
#endif
#include <Python.h>
#include <string.h>

#define SCAN_API 2 /* native.py loads only the API it was written for */

#if defined(__GLIBC__) && !defined(SCAN_PORTABLE) /* -DSCAN_PORTABLE tests the loops */
#define find_bytes memmem
#define find_last_byte memrchr
#else
static void *
find_bytes(const void *haystack, size_t n, const void *needle, size_t m)
{
    const char *h = haystack, *end = h + n;
    const char *first = needle;
    if (m == 0 || m > n)
        return NULL;
    while ((h = memchr(h, first[0], (size_t)(end - h) - m + 1)) != NULL) {
        if (memcmp(h, needle, m) == 0)
            return (void *)h;
        if ((size_t)(end - ++h) < m)
            break;
    }
    return NULL;
}

static void *
find_last_byte(const void *s, int c, size_t n)
{
    const unsigned char *p = (const unsigned char *)s + n;
    while (p > (const unsigned char *)s)
        if (*--p == (unsigned char)c)
            return (void *)p;
    return NULL;
}
#endif

#define MAX_NEEDLES 8

typedef struct {
    const char *ptr[MAX_NEEDLES];
    Py_ssize_t len[MAX_NEEDLES];
    Py_ssize_t next[MAX_NEEDLES]; /* offset of the next occurrence at or after the cursor */
    Py_ssize_t count;
} Needles;

static int
load_needles(PyObject *tuple, Needles *out)
{
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "needles must be a tuple of bytes");
        return -1;
    }
    out->count = PyTuple_GET_SIZE(tuple);
    if (out->count > MAX_NEEDLES) {
        PyErr_SetString(PyExc_ValueError, "at most 8 needles");
        return -1;
    }
    for (Py_ssize_t k = 0; k < out->count; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "needles must be a tuple of bytes");
            return -1;
        }
        out->ptr[k] = PyBytes_AS_STRING(item);
        out->len[k] = PyBytes_GET_SIZE(item);
        /* A needle spanning lines, or an empty one, has no line to belong to. */
        if (out->len[k] == 0 || memchr(out->ptr[k], '\n', out->len[k]) != NULL) {
            PyErr_SetString(PyExc_ValueError, "a needle must be non-empty and hold no newline");
            return -1;
        }
        out->next[k] = -1;
    }
    return 0;
}

/* True when the line buf[start:stop) holds a needle. Occurrences are found over the
 * whole buffer and remembered, so each needle costs one memmem pass, not one per line. */
static int
holds_needle(const char *buf, Py_ssize_t end, Needles *n, Py_ssize_t start, Py_ssize_t stop)
{
    int found = 0;
    for (Py_ssize_t k = 0; k < n->count; k++) {
        if (n->next[k] < start) {
            const char *hit = find_bytes(buf + start, (size_t)(end - start), n->ptr[k], (size_t)n->len[k]);
            n->next[k] = hit ? (Py_ssize_t)(hit - buf) : end;
        }
        if (n->next[k] + n->len[k] <= stop)
            found = 1;
    }
    return found;
}

static int
is_space(unsigned char c)
{
    /* The set bytes.strip() removes. */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* True when the line is not blank and, stripped, is not "{...}": it cannot be a JSON
 * object, so the reader must see it to count it as a bad line. */
static int
is_odd(const char *buf, Py_ssize_t start, Py_ssize_t stop)
{
    while (start < stop && is_space((unsigned char)buf[start]))
        start++;
    while (stop > start && is_space((unsigned char)buf[stop - 1]))
        stop--;
    return start < stop && !(buf[start] == '{' && buf[stop - 1] == '}');
}

/* Append a new reference (NULL: its creation failed) to list, giving the reference up. */
static int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed;
}

static int
check_args(Py_buffer *view, Py_ssize_t start, Py_ssize_t end, PyObject *tuple, Needles *needles)
{
    if (start < 0 || end < start || end > view->len) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "start and end must satisfy 0 <= start <= end <= len(data)");
        return -1;
    }
    if (load_needles(tuple, needles) < 0) {
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(scan_chunk_doc,
"scan_chunk(data, start, end, needles) -> (lines, newlines)\n\n"
"For the lines of data[start:end] (start must begin a line): lines is a list of\n"
"(index, line_start, line_stop) for each line holding a needle or not blank and not\n"
"shaped like {...} once stripped, where index counts lines from 0 at start and\n"
"data[line_start:line_stop] is the line with its newline; newlines is how many\n"
"newlines data[start:end] holds.");

static PyObject *
scan_chunk(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t start, end;
    PyObject *tuple;
    Needles needles;
    if (!PyArg_ParseTuple(args, "y*nnO", &view, &start, &end, &tuple))
        return NULL;
    if (check_args(&view, start, end, tuple, &needles) < 0)
        return NULL;
    const char *buf = view.buf;
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pos = start, index = 0;
    while (pos < end) {
        const char *newline = memchr(buf + pos, '\n', (size_t)(end - pos));
        Py_ssize_t stop = newline ? (Py_ssize_t)(newline - buf) + 1 : end;
        if (holds_needle(buf, end, &needles, pos, stop) || is_odd(buf, pos, stop)) {
            if (append_new(found, Py_BuildValue("(nnn)", index, pos, stop)) < 0) {
                Py_DECREF(found);
                PyBuffer_Release(&view);
                return NULL;
            }
        }
        if (newline)
            index++;
        pos = stop;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", found, index);
}

PyDoc_STRVAR(wanted_lines_doc,
"wanted_lines(data, end, needles) -> list[int]\n\n"
"Start offsets, in order, of the lines of data[:end] holding any needle.");

static PyObject *
wanted_lines(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t end;
    PyObject *tuple;
    Needles needles;
    if (!PyArg_ParseTuple(args, "y*nO", &view, &end, &tuple))
        return NULL;
    if (check_args(&view, 0, end, tuple, &needles) < 0)
        return NULL;
    const char *buf = view.buf;
    PyObject *starts = PyList_New(0);
    if (starts == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pos = 0;
    while (pos < end) {
        /* The earliest occurrence of any needle from pos on. */
        Py_ssize_t first = end;
        for (Py_ssize_t k = 0; k < needles.count; k++) {
            if (needles.next[k] < pos) {
                const char *hit = find_bytes(buf + pos, (size_t)(end - pos), needles.ptr[k],
                                         (size_t)needles.len[k]);
                needles.next[k] = hit ? (Py_ssize_t)(hit - buf) : end;
            }
            if (needles.next[k] + needles.len[k] <= end && needles.next[k] < first)
                first = needles.next[k];
        }
        if (first >= end)
            break;
        const char *before = find_last_byte(buf + pos, '\n', (size_t)(first - pos));
        Py_ssize_t start = before ? (Py_ssize_t)(before - buf) + 1 : pos;
        if (append_new(starts, PyLong_FromSsize_t(start)) < 0) {
            Py_DECREF(starts);
            PyBuffer_Release(&view);
            return NULL;
        }
        const char *newline = memchr(buf + first, '\n', (size_t)(end - first));
        pos = newline ? (Py_ssize_t)(newline - buf) + 1 : end;
    }
    PyBuffer_Release(&view);
    return starts;
}

PyDoc_STRVAR(scan_head_doc,
"scan_head(data, lines) -> (end, plain, v2)\n\n"
"The first `lines` lines of data, as sniff.py_scan_head looks at them: where they end,\n"
"whether they are plain (no NUL byte, no line starting with 'event:' or 'data:') and\n"
"whether the first '\"version\":\"' of each line that has one is followed by a digit\n"
"other than 1 (False when no line has one).");

static PyObject *
scan_head(PyObject *self, PyObject *args)
{
    (void)self;
    static const char key[] = "\"version\":\""; /* Claude Code's version field */
    const size_t key_len = sizeof key - 1;
    Py_buffer view;
    Py_ssize_t lines;
    if (!PyArg_ParseTuple(args, "y*n", &view, &lines))
        return NULL;
    const char *buf = view.buf;
    Py_ssize_t size = view.len, pos = 0;
    int plain = 1, named = 0, v2 = 1;
    for (Py_ssize_t n = 0; n < lines && pos < size; n++) {
        const char *newline = memchr(buf + pos, '\n', (size_t)(size - pos));
        Py_ssize_t stop = newline ? (Py_ssize_t)(newline - buf) + 1 : size;
        size_t len = (size_t)(stop - pos);
        if ((len >= 6 && memcmp(buf + pos, "event:", 6) == 0) ||
            (len >= 5 && memcmp(buf + pos, "data:", 5) == 0))
            plain = 0;
        const char *hit = find_bytes(buf + pos, len, key, key_len);
        if (hit) {
            named = 1;
            Py_ssize_t at = (Py_ssize_t)(hit - buf) + (Py_ssize_t)key_len;
            /* at < stop unless the key ends the data: then no major version follows */
            if (at >= stop || buf[at] < '0' || buf[at] > '9' || buf[at] == '1')
                v2 = 0;
        }
        pos = stop;
    }
    if (pos > 0 && memchr(buf, '\0', (size_t)pos) != NULL)
        plain = 0;
    PyBuffer_Release(&view);
    return Py_BuildValue("(nNN)", pos, PyBool_FromLong(plain), PyBool_FromLong(named && v2));
}

static PyMethodDef scan_methods[] = {
    {"scan_chunk", scan_chunk, METH_VARARGS, scan_chunk_doc},
    {"wanted_lines", wanted_lines, METH_VARARGS, wanted_lines_doc},
    {"scan_head", scan_head, METH_VARARGS, scan_head_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef scan_module = {
    PyModuleDef_HEAD_INIT, "_scan", "Compiled line scanner (see lines.py).", -1, scan_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    PyObject *module = PyModule_Create(&scan_module);
    if (module != NULL && PyModule_AddIntConstant(module, "API", SCAN_API) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
