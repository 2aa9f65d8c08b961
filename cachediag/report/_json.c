/* cachediag's JSON lines, compiled: exactly json.dumps(obj, ensure_ascii=False), with the
 * C1 controls (U+0080-U+009F) and U+2028/U+2029 written as \u escapes as well (json_line's
 * Python twin, serialize.escape_json, does the same to json.dumps's text): a log string
 * holding U+009B (CSI) must not reach a terminal raw through `analyze --json`.
 *
 * `analyze --json` renders one object per session; on a history of 10,000 small sessions
 * the standard library's encoder (its per-call set-up, its list of chunks) is a tenth of
 * the run. This writes the same bytes in one pass into one buffer, for the types the
 * serializer builds: dicts with str keys, lists, tuples, str (and str subclasses such as
 * StrEnum), int (not bool), float, bool and None (containers of exactly those types).
 * Anything else (another type, a key that is not a str, a lone surrogate, nesting past 64
 * levels) raises TypeError and the caller uses json.dumps, so the answer never depends on
 * this file. Numbers are written without making a str of each, and a line that is all
 * ASCII (most are) is copied into its str, not decoded.
 * tests/test_json_native.py holds the two to identical output.
 *
 * Plain C and the Python C API; setup.py marks the extension optional.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define JSON_API 2
#define MAX_DEPTH 64

typedef struct {
    char *data;
    Py_ssize_t len, cap;
    int ascii; /* every string put so far was ASCII: the result needs no UTF-8 decoding */
} Out;

static int
reserve(Out *out, Py_ssize_t more)
{
    if (out->len + more <= out->cap)
        return 0;
    Py_ssize_t cap = out->cap ? out->cap : 1024;
    while (cap < out->len + more)
        cap *= 2;
    char *data = PyMem_Realloc(out->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = data;
    out->cap = cap;
    return 0;
}

static int
put(Out *out, const char *s, Py_ssize_t n)
{
    if (reserve(out, n) < 0)
        return -1;
    memcpy(out->data + out->len, s, (size_t)n);
    out->len += n;
    return 0;
}

static int
unsupported(const char *what)
{
    PyErr_SetString(PyExc_TypeError, what);
    return -1;
}

/* json's escape_unicode: " \ \b \f \n \r \t short, other controls as \u00xx (lower
 * case), every other character as it is (UTF-8 here), except the C1 controls and
 * U+2028/U+2029, also as \uxxxx. Their UTF-8 starts with 0xC2 (C1) or 0xE2: a string
 * holding neither byte (every ASCII one, and memchr tells the others fast) is scanned by
 * json's own test alone. The UTF-8 is Python's own, so well formed: a lead byte has its
 * continuation bytes after it. */
static int
put_string(Out *out, PyObject *s)
{
    static const char hex[] = "0123456789abcdef";
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(s, &n);
    if (utf8 == NULL) { /* a lone surrogate: json.dumps keeps it, UTF-8 cannot */
        PyErr_Clear();
        return unsupported("string not encodable as UTF-8");
    }
    if (reserve(out, n + 2) < 0)
        return -1;
    int wide = 0; /* a C1 control or U+2028/U+2029 may be in it */
    if (!PyUnicode_IS_ASCII(s)) {
        out->ascii = 0;
        wide = memchr(utf8, 0xC2, (size_t)n) != NULL || memchr(utf8, 0xE2, (size_t)n) != NULL;
    }
    out->data[out->len++] = '"';
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)utf8[i];
        unsigned int code = c; /* the character a \u escape names */
        Py_ssize_t width = 1;  /* the bytes of UTF-8 it replaces */
        if (c >= 0x20 && c != '"' && c != '\\') {
            if (!wide)
                continue;
            if (c == 0xC2 && (unsigned char)utf8[i + 1] <= 0x9F) {
                code = (unsigned char)utf8[i + 1]; /* 0xC2 0x80-0x9F: U+0080-U+009F */
                width = 2;
            }
            else if (c == 0xE2 && (unsigned char)utf8[i + 1] == 0x80 &&
                     ((unsigned char)utf8[i + 2] == 0xA8 || (unsigned char)utf8[i + 2] == 0xA9)) {
                code = 0x2000u | ((unsigned char)utf8[i + 2] - 0x80u); /* U+2028/U+2029 */
                width = 3;
            }
            else
                continue;
        }
        if (put(out, utf8 + run, i - run) < 0)
            return -1;
        char esc[6] = {'\\', 'u', 0, 0, 0, 0};
        Py_ssize_t len = 2;
        switch (code) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[2] = hex[(code >> 12) & 0xf];
            esc[3] = hex[(code >> 8) & 0xf];
            esc[4] = hex[(code >> 4) & 0xf];
            esc[5] = hex[code & 0xf];
            len = 6;
        }
        if (put(out, esc, len) < 0)
            return -1;
        i += width - 1;
        run = i + 1;
    }
    if (put(out, utf8 + run, n - run) < 0 || put(out, "\"", 1) < 0)
        return -1;
    return 0;
}

/* The text of a repr (int.__repr__, float.__repr__), ASCII by construction. */
static int
put_repr(Out *out, PyObject *text)
{
    if (text == NULL)
        return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(text, &n);
    int failed = s == NULL ? -1 : put(out, s, n);
    Py_DECREF(text);
    return failed;
}

/* An int as int.__repr__ writes it: decimal digits, a minus sign if negative. Those
 * past a long long (rare: token counts are far smaller) go through the repr itself. */
static int
put_int(Out *out, PyObject *obj)
{
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow)
        return put_repr(out, PyLong_Type.tp_repr(obj));
    if (value == -1 && PyErr_Occurred())
        return -1;
    char digits[24];
    char *end = digits + sizeof digits, *at = end;
    /* The magnitude as unsigned: -LLONG_MIN does not fit a long long. */
    unsigned long long rest =
        value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        *--at = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest);
    if (value < 0)
        *--at = '-';
    return put(out, at, end - at);
}

/* A finite float as float.__repr__ writes it (floatobject.c: the shortest repr that
 * reads back the same, ".0" added to a whole number), without making it a str first. */
static int
put_float(Out *out, double x)
{
    char *text = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL)
        return -1;
    int failed = put(out, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return failed;
}

static int put_value(Out *out, PyObject *obj, int depth);

static int
put_items(Out *out, PyObject *seq, int depth)
{
    PyObject *fast = PySequence_Fast(seq, "a list or tuple");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    int failed = put(out, "[", 1);
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        if (i)
            failed = put(out, ", ", 2);
        if (!failed)
            failed = put_value(out, PySequence_Fast_GET_ITEM(fast, i), depth + 1);
    }
    Py_DECREF(fast);
    return failed ? -1 : put(out, "]", 1);
}

static int
put_dict(Out *out, PyObject *dict, int depth)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    int first = 1;
    if (put(out, "{", 1) < 0)
        return -1;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyUnicode_Check(key))
            return unsupported("a key that is not a str");
        if (!first && put(out, ", ", 2) < 0)
            return -1;
        first = 0;
        /* Borrowed references: hold them while a value's repr could run Python code. */
        Py_INCREF(key);
        Py_INCREF(value);
        int failed = put_string(out, key) < 0 || put(out, ": ", 2) < 0 ||
                     put_value(out, value, depth + 1) < 0;
        Py_DECREF(key);
        Py_DECREF(value);
        if (failed)
            return -1;
    }
    return put(out, "}", 1);
}

static int
put_value(Out *out, PyObject *obj, int depth)
{
    if (depth > MAX_DEPTH)
        return unsupported("nested too deeply");
    if (obj == Py_None)
        return put(out, "null", 4);
    if (obj == Py_True)
        return put(out, "true", 4);
    if (obj == Py_False)
        return put(out, "false", 5);
    if (PyUnicode_Check(obj))
        return put_string(out, obj);
    if (PyLong_Check(obj))
        return put_int(out, obj);
    if (PyFloat_Check(obj)) {
        double x = PyFloat_AS_DOUBLE(obj);
        if (Py_IS_NAN(x))
            return put(out, "NaN", 3);
        if (Py_IS_INFINITY(x))
            return x > 0 ? put(out, "Infinity", 8) : put(out, "-Infinity", 9);
        return put_float(out, x);
    }
    /* Exact types only: json.dumps reads a subclass through its own methods. */
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj))
        return put_items(out, obj, depth);
    if (PyDict_CheckExact(obj))
        return put_dict(out, obj, depth);
    return unsupported("a type json.dumps is left to encode");
}

PyDoc_STRVAR(dumps_doc,
"dumps(obj) -> str\n\n"
"json.dumps(obj, ensure_ascii=False), C1 controls and U+2028/U+2029 escaped, for dicts with str keys, lists, tuples, str, int,\n"
"float, bool and None; TypeError for anything else.");

static PyObject *
dumps(PyObject *self, PyObject *obj)
{
    (void)self;
    Out out = {NULL, 0, 0, 1};
    PyObject *result = NULL;
    if (put_value(&out, obj, 0) == 0) {
        if (out.ascii) { /* most lines: copied, not decoded */
            result = PyUnicode_New(out.len, 127);
            if (result != NULL && out.len)
                memcpy(PyUnicode_1BYTE_DATA(result), out.data, (size_t)out.len);
        } else {
            result = PyUnicode_DecodeUTF8(out.data ? out.data : "", out.len, "strict");
        }
    }
    PyMem_Free(out.data);
    return result;
}

static PyMethodDef json_methods[] = {
    {"dumps", dumps, METH_O, dumps_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef json_module = {
    PyModuleDef_HEAD_INIT, "_json", "Compiled JSON lines (see report/serialize.py).", -1,
    json_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__json(void)
{
    PyObject *module = PyModule_Create(&json_module);
    if (module != NULL && PyModule_AddIntConstant(module, "API", JSON_API) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
