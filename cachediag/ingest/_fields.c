/* The transcript line picker of cachediag.ingest.fields, compiled.
 *
 * The transcript reader needs about twenty fields of a Claude Code line (its type, ids,
 * timestamp, and the usage of an assistant message); parsing the whole line builds every
 * string of its content only to drop them, and half the assistant lines are later copies
 * of a response already read. pick() checks the line is JSON and builds only those
 * fields, as the tuple fields.fields_of() builds from the parsed object.
 *
 * It never decides that a line is bad: it answers None for anything it does not take
 * (not JSON, not an object, a number orjson could read otherwise, a key spelled with an
 * escape, a repeated key, a field of an unexpected type...) and the caller then parses
 * the line with orjson, as before. So it accepts only strict JSON that every orjson
 * reads the same way: valid UTF-8 without surrogates, no lone surrogate escapes, short
 * numbers, nesting far below orjson's limit. tests/test_fields.py holds it to
 * fields_of(orjson.loads(line)) on real and random lines.
 *
 * Plain C and the Python C API (SSE2 where the compiler has it; -DFIELDS_PORTABLE
 * builds the plain loops, which a test holds to the same answers); setup.py marks the
 * extension optional.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__) && !defined(FIELDS_PORTABLE)
#include <emmintrin.h>
#endif

#define FIELDS_API 1 /* native.py loads only the API it was written for */
#define MAX_DEPTH 128
#define MAX_NUMBER 64 /* longer numbers go to orjson (a 400-digit one is an error there) */

typedef struct {
    const unsigned char *p, *end;
    int depth;
} Cur;

/* A string's bytes between its quotes, and whether it holds an escape. */
typedef struct {
    const unsigned char *start;
    Py_ssize_t len;
    int escaped;
} Span;

#define FAIL (-1)

static void
skip_ws(Cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
        c->p++;
}

static int
hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f')
            v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            v |= (unsigned)(h - 'A' + 10);
        else
            return FAIL;
    }
    *out = v;
    return 0;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 when it is not one. */
static int
utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char b = p[0];
    Py_ssize_t left = end - p;
#define CONT(i) ((p[i] & 0xC0) == 0x80)
    if (b >= 0xC2 && b <= 0xDF)
        return left >= 2 && CONT(1) ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        if (left < 3 || !CONT(1) || !CONT(2))
            return 0;
        if (b == 0xE0 && p[1] < 0xA0)
            return 0; /* overlong */
        if (b == 0xED && p[1] > 0x9F)
            return 0; /* a surrogate */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (left < 4 || !CONT(1) || !CONT(2) || !CONT(3))
            return 0;
        if (b == 0xF0 && p[1] < 0x90)
            return 0; /* overlong */
        if (b == 0xF4 && p[1] > 0x8F)
            return 0; /* past U+10FFFF */
        return 4;
    }
    return 0;
#undef CONT
}

#if !(defined(__SSE2__) && defined(__GNUC__) && !defined(FIELDS_PORTABLE))
/* Eight bytes at once: none is a quote, a backslash, a control byte or non-ASCII. */
static int
plain8(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
    uint64_t found = (w | ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) |
                      ((slash - ones) & ~slash)) & highs;
    return found == 0;
}
#endif

/* 1 for the bytes a string holds as they are: printable ASCII but the quote and the
 * backslash. */
static unsigned char PLAIN[256];

static void
init_plain(void)
{
    for (int b = 0x20; b < 0x80; b++)
        PLAIN[b] = b != '"' && b != '\\';
}

/* The first byte from p on that a string does not hold as it is (or end). */
static const unsigned char *
skip_plain(const unsigned char *p, const unsigned char *end)
{
#if defined(__SSE2__) && defined(__GNUC__) && !defined(FIELDS_PORTABLE)
    /* Sixteen bytes at a time: a signed byte below 0x20 is a control byte or non-ASCII. */
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i odd = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                                   _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(odd);
        if (mask != 0)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#else
    while (end - p >= 8 && plain8(p))
        p += 8;
#endif
    while (p < end && PLAIN[*p])
        p++;
    return p;
}

/* The string at c->p (its opening quote); on success c->p is past the closing quote. */
static int
scan_string(Cur *c, Span *span)
{
    const unsigned char *p = c->p + 1, *end = c->end;
    span->start = p;
    span->escaped = 0;
    for (;;) {
        p = skip_plain(p, end);
        if (p >= end)
            return FAIL;
        unsigned char b = *p;
        if (b == '"')
            break;
        if (b == '\\') {
            span->escaped = 1;
            if (end - p < 2)
                return FAIL;
            unsigned char e = p[1];
            if (e == 'u') {
                unsigned cp, low;
                if (end - p < 6 || hex4(p + 2, &cp) < 0)
                    return FAIL;
                p += 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return FAIL; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &low) < 0 ||
                        low < 0xDC00 || low > 0xDFFF)
                        return FAIL; /* a high surrogate without its low half */
                    p += 6;
                }
                continue;
            }
            if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' &&
                e != 'r' && e != 't')
                return FAIL;
            p += 2;
            continue;
        }
        if (b < 0x20)
            return FAIL;
        if (b < 0x80) {
            p++;
            continue;
        }
        int n = utf8_len(p, end);
        if (n == 0)
            return FAIL;
        p += n;
    }
    span->len = p - span->start;
    c->p = p + 1;
    return 0;
}

static void
put_utf8(unsigned char **out, unsigned cp)
{
    unsigned char *o = *out;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | (cp >> 6));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xE0 | (cp >> 12));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | (cp >> 18));
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (cp & 0x3F));
    }
    *out = o;
}

/* The str a checked string stands for (its escapes resolved). */
static PyObject *
span_str(const Span *s)
{
    if (!s->escaped)
        return PyUnicode_DecodeUTF8((const char *)s->start, s->len, NULL);
    /* Each escape is at least as long as the UTF-8 it stands for. */
    unsigned char *buf = PyMem_Malloc((size_t)s->len + 1), *o = buf;
    if (buf == NULL)
        return PyErr_NoMemory();
    const unsigned char *p = s->start, *end = s->start + s->len;
    while (p < end) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        unsigned char e = p[1];
        if (e == 'u') {
            unsigned cp = 0, low = 0;
            hex4(p + 2, &cp);
            p += 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                hex4(p + 2, &low);
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            put_utf8(&o, cp);
            continue;
        }
        *o++ = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r'
             : e == 't' ? '\t' : e;
        p += 2;
    }
    PyObject *str = PyUnicode_DecodeUTF8((const char *)buf, o - buf, NULL);
    PyMem_Free(buf);
    return str;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, short enough that every
 * orjson reads it as a finite value. *plain is set for an integer of at most 18 digits,
 * whose value is then *value. */
static int
scan_number(Cur *c, int *plain, long long *value)
{
    const unsigned char *p = c->p, *start = p, *end = c->end;
    int negative = 0, digits = 0;
    long long v = 0;
    *plain = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end || *p < '0' || *p > '9')
        return FAIL;
    if (*p == '0') {
        p++;
        digits = 1;
    } else {
        while (p < end && *p >= '0' && *p <= '9') {
            if (digits < 18)
                v = v * 10 + (*p - '0');
            digits++;
            p++;
        }
    }
    int integer = 1;
    if (p < end && *p == '.') {
        integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return FAIL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const unsigned char *exp = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == exp || p - exp > 2)
            return FAIL; /* no exponent digits, or an exponent that may overflow */
    }
    if (p - start > MAX_NUMBER)
        return FAIL;
    if (integer && digits <= 18) {
        *plain = 1;
        *value = negative ? -v : v;
    }
    c->p = p;
    return 0;
}

static int
scan_literal(Cur *c, const char *word, Py_ssize_t len)
{
    if (c->end - c->p < len || memcmp(c->p, word, (size_t)len) != 0)
        return FAIL;
    c->p += len;
    return 0;
}

/* What a value was, for the fields that care about its type. */
enum { V_OTHER, V_STRING, V_INT, V_TRUE, V_FALSE, V_NULL, V_OBJECT, V_ARRAY };

typedef struct {
    int kind;
    Span span;       /* V_STRING */
    long long value; /* V_INT, or the element count of a V_ARRAY */
} Value;

static int skip_value(Cur *c, Value *v);

/* A member's key, the colon and the spaces around them: the value comes next. */
static int
member_key(Cur *c, Span *key)
{
    if (c->p >= c->end || *c->p != '"' || scan_string(c, key) < 0)
        return FAIL;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
        return FAIL;
    c->p++;
    skip_ws(c);
    return 0;
}

/* After an item of a container: 1 when a comma says another follows, 0 when ``close``
 * ends the container (stepped past), FAIL for anything else. */
static int
next_item(Cur *c, unsigned char close)
{
    skip_ws(c);
    if (c->p >= c->end)
        return FAIL;
    if (*c->p == ',') {
        c->p++;
        skip_ws(c);
        return 1;
    }
    if (*c->p != close)
        return FAIL;
    c->p++;
    return 0;
}

static int
skip_container(Cur *c, unsigned char close, Value *v)
{
    if (++c->depth > MAX_DEPTH)
        return FAIL;
    c->p++;
    skip_ws(c);
    long long count = 0;
    if (c->p < c->end && *c->p == close) {
        c->p++;
    } else {
        int more = 1;
        while (more) {
            Span key;
            if (close == '}' && member_key(c, &key) < 0)
                return FAIL;
            if (skip_value(c, NULL) < 0)
                return FAIL;
            count++;
            if ((more = next_item(c, close)) < 0)
                return FAIL;
        }
    }
    c->depth--;
    if (v != NULL)
        v->value = count;
    return 0;
}

/* Check a value and step past it; ``v`` (may be NULL) says what it was. */
static int
skip_value(Cur *c, Value *v)
{
    Value ignored;
    if (v == NULL)
        v = &ignored;
    v->kind = V_OTHER;
    if (c->p >= c->end)
        return FAIL;
    switch (*c->p) {
    case '"':
        v->kind = V_STRING;
        return scan_string(c, &v->span);
    case '{':
        v->kind = V_OBJECT;
        return skip_container(c, '}', v);
    case '[':
        v->kind = V_ARRAY;
        return skip_container(c, ']', v);
    case 't':
        v->kind = V_TRUE;
        return scan_literal(c, "true", 4);
    case 'f':
        v->kind = V_FALSE;
        return scan_literal(c, "false", 5);
    case 'n':
        v->kind = V_NULL;
        return scan_literal(c, "null", 4);
    default: {
        int plain;
        if (scan_number(c, &plain, &v->value) < 0)
            return FAIL;
        v->kind = plain ? V_INT : V_OTHER;
        return 0;
    }
    }
}

/* The members of the object at c->p, one call of ``member`` per key. A key of the object
 * written with an escape could spell a picked name: the line goes to orjson. */
typedef int (*Member)(Cur *c, const Span *key, void *out);

static int
walk_object(Cur *c, Member member, void *out)
{
    if (++c->depth > MAX_DEPTH)
        return FAIL;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        c->depth--;
        return 0;
    }
    int more = 1;
    while (more) {
        Span key;
        if (member_key(c, &key) < 0 || key.escaped || member(c, &key, out) < 0)
            return FAIL;
        if ((more = next_item(c, '}')) < 0)
            return FAIL;
    }
    c->depth--;
    return 0;
}

#define IS(key, name) ((key)->len == (Py_ssize_t)sizeof(name) - 1 && \
                       memcmp((key)->start, name, sizeof(name) - 1) == 0)

/* A picked key seen a second time (orjson keeps the last): to orjson. */
#define ONCE(seen, bit) do { if ((seen) & (1u << (bit))) return FAIL; (seen) |= 1u << (bit); } while (0)

/* Fields of the line, as owned references or NULL for "not given" (None). */
enum {
    F_TYPE, F_UUID, F_PARENT, F_SIDECHAIN, F_AGENT, F_TIMESTAMP, F_AT, F_REQUEST,
    F_API_ERROR, F_SUBTYPE, F_COMPACT_SUMMARY, F_CWD, F_SESSION, F_MESSAGE, F_COUNT
};
enum { M_MODEL, M_ID, M_USAGE, M_DIAG, M_EDITS, M_COUNT };
enum { U_INPUT, U_READ, U_CREATION, U_OUTPUT, U_SPLIT, U_COUNT };

typedef struct {
    PyObject *slot[F_COUNT];
    unsigned seen;
} Top;

typedef struct {
    PyObject *slot[M_COUNT];
    unsigned seen;
} Message;

typedef struct {
    PyObject *slot[U_COUNT];
    unsigned seen;
} Usage;

typedef struct {
    PyObject *c5m, *c1h;
    unsigned seen;
} Split;

typedef struct {
    PyObject *type, *missed;
    int type_is_str;
    unsigned seen;
} Reason;

static void
clear(PyObject **slots, int n)
{
    for (int i = 0; i < n; i++)
        Py_CLEAR(slots[i]);
}

/* Store ``value`` (a new reference; NULL with an error set fails) in *slot. */
static int
put(PyObject **slot, PyObject *value)
{
    if (value == NULL)
        return FAIL;
    Py_XSETREF(*slot, value);
    return 0;
}

static PyObject *
as_tuple(PyObject **slots, int n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = slots[i] ? slots[i] : Py_None;
        Py_INCREF(v);
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* A str field: the string, else None whatever the value was. */
static int
str_or_none(Cur *c, PyObject **slot, int nonempty)
{
    Value v;
    if (skip_value(c, &v) < 0)
        return FAIL;
    if (v.kind == V_STRING && !(nonempty && v.span.len == 0))
        return put(slot, span_str(&v.span));
    return 0;
}

/* A flag the reader tests with ``is True``. */
static int
is_true(Cur *c, PyObject **slot)
{
    Value v;
    if (skip_value(c, &v) < 0)
        return FAIL;
    return put(slot, PyBool_FromLong(v.kind == V_TRUE));
}

/* A token count: an int or null (None); anything else goes to orjson. */
static int
count(Cur *c, PyObject **slot)
{
    Value v;
    if (skip_value(c, &v) < 0)
        return FAIL;
    if (v.kind == V_NULL)
        return 0;
    if (v.kind != V_INT)
        return FAIL;
    return put(slot, PyLong_FromLongLong(v.value));
}

static int
split_member(Cur *c, const Span *key, void *out)
{
    Split *s = out;
    if (IS(key, "ephemeral_5m_input_tokens")) {
        ONCE(s->seen, 0);
        return count(c, &s->c5m);
    }
    if (IS(key, "ephemeral_1h_input_tokens")) {
        ONCE(s->seen, 1);
        return count(c, &s->c1h);
    }
    return skip_value(c, NULL);
}

static int
usage_member(Cur *c, const Span *key, void *out)
{
    Usage *u = out;
    int field = IS(key, "input_tokens")                  ? U_INPUT
                : IS(key, "cache_read_input_tokens")     ? U_READ
                : IS(key, "cache_creation_input_tokens") ? U_CREATION
                : IS(key, "output_tokens")               ? U_OUTPUT
                : IS(key, "cache_creation")              ? U_SPLIT
                                                         : -1;
    if (field < 0)
        return skip_value(c, NULL);
    ONCE(u->seen, field);
    if (field != U_SPLIT)
        return count(c, &u->slot[field]);
    Py_CLEAR(u->slot[U_SPLIT]);
    if (c->p >= c->end || *c->p != '{')
        return skip_value(c, NULL); /* not an object: None */
    Split s = {NULL, NULL, 0};
    if (walk_object(c, split_member, &s) < 0) {
        Py_XDECREF(s.c5m);
        Py_XDECREF(s.c1h);
        return FAIL;
    }
    PyObject *pair[2] = {s.c5m, s.c1h};
    PyObject *t = as_tuple(pair, 2);
    clear(pair, 2);
    return put(&u->slot[U_SPLIT], t);
}

static int
reason_member(Cur *c, const Span *key, void *out)
{
    Reason *r = out;
    Value v;
    if (IS(key, "type")) {
        ONCE(r->seen, 0);
        if (skip_value(c, &v) < 0)
            return FAIL;
        r->type_is_str = v.kind == V_STRING;
        return r->type_is_str ? put(&r->type, span_str(&v.span)) : 0;
    }
    if (IS(key, "cache_missed_input_tokens")) {
        ONCE(r->seen, 1);
        if (skip_value(c, &v) < 0)
            return FAIL;
        /* isinstance(missed, int): a bool is one too. */
        if (v.kind == V_INT)
            return put(&r->missed, PyLong_FromLongLong(v.value));
        if (v.kind == V_TRUE || v.kind == V_FALSE)
            return put(&r->missed, PyBool_FromLong(v.kind == V_TRUE));
        if (v.kind == V_OTHER)
            return FAIL; /* a float, or an integer too long: orjson's type decides */
        return 0;
    }
    return skip_value(c, NULL);
}

/* The server's reason (anthropic.reason_code): (type, missed), or False for none. */
static PyObject *
reason_pair(PyObject *type, PyObject *missed)
{
    PyObject *pair[2] = {type, missed};
    return as_tuple(pair, 2);
}

typedef struct {
    PyObject *code; /* starts as (None, None): no cache_miss_reason */
    unsigned seen;
} Diag;

static int
diag_member(Cur *c, const Span *key, void *out)
{
    Diag *d = out;
    if (!IS(key, "cache_miss_reason"))
        return skip_value(c, NULL);
    ONCE(d->seen, 0);
    if (c->p < c->end && *c->p == '{') {
        Reason r = {NULL, NULL, 0, 0};
        if (walk_object(c, reason_member, &r) < 0) {
            Py_XDECREF(r.type);
            Py_XDECREF(r.missed);
            return FAIL;
        }
        PyObject *result = r.type_is_str ? reason_pair(r.type, r.missed) : Py_NewRef(Py_False);
        Py_XDECREF(r.type);
        Py_XDECREF(r.missed);
        return put(&d->code, result);
    }
    Value v;
    if (skip_value(c, &v) < 0)
        return FAIL;
    return put(&d->code, v.kind == V_NULL ? reason_pair(NULL, NULL) : Py_NewRef(Py_False));
}

static int
edits_member(Cur *c, const Span *key, void *out)
{
    long long *edits = out;
    if (!IS(key, "applied_edits"))
        return skip_value(c, NULL);
    Value v;
    if (skip_value(c, &v) < 0)
        return FAIL;
    *edits = v.kind == V_ARRAY ? v.value : 0;
    return 0;
}

static int
message_member(Cur *c, const Span *key, void *out)
{
    Message *m = out;
    if (IS(key, "model")) {
        ONCE(m->seen, M_MODEL);
        return str_or_none(c, &m->slot[M_MODEL], 0);
    }
    if (IS(key, "id")) {
        ONCE(m->seen, M_ID);
        return str_or_none(c, &m->slot[M_ID], 0);
    }
    if (IS(key, "usage")) {
        ONCE(m->seen, M_USAGE);
        if (c->p >= c->end || *c->p != '{')
            return skip_value(c, NULL);
        Usage u = {{NULL}, 0};
        if (walk_object(c, usage_member, &u) < 0) {
            clear(u.slot, U_COUNT);
            return FAIL;
        }
        PyObject *t = as_tuple(u.slot, U_COUNT);
        clear(u.slot, U_COUNT);
        return put(&m->slot[M_USAGE], t);
    }
    if (IS(key, "diagnostics")) {
        ONCE(m->seen, M_DIAG);
        if (c->p < c->end && *c->p == '{') {
            Diag d = {reason_pair(NULL, NULL), 0};
            if (d.code == NULL || walk_object(c, diag_member, &d) < 0) {
                Py_XDECREF(d.code);
                return FAIL;
            }
            return put(&m->slot[M_DIAG], d.code);
        }
        Value v;
        if (skip_value(c, &v) < 0)
            return FAIL;
        return put(&m->slot[M_DIAG],
                   v.kind == V_NULL ? reason_pair(NULL, NULL) : Py_NewRef(Py_False));
    }
    if (IS(key, "context_management")) {
        ONCE(m->seen, M_EDITS);
        long long edits = 0;
        if (c->p < c->end && *c->p == '{') {
            if (walk_object(c, edits_member, &edits) < 0)
                return FAIL;
        } else if (skip_value(c, NULL) < 0) {
            return FAIL;
        }
        return put(&m->slot[M_EDITS], PyLong_FromLongLong(edits));
    }
    return skip_value(c, NULL);
}

static const int DAYS_BEFORE[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};

static int
digits(const char *p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* Epoch seconds of "YYYY-MM-DDTHH:MM:SS.mmmZ" (what Claude Code writes), exactly as
 * datetime.fromisoformat(...).timestamp() gives them; None for any other text. Years
 * 1970-2199 only: their microseconds fit a double exactly, so one division rounds as
 * Python's int / int does. */
static PyObject *
epoch_of(const char *s, Py_ssize_t len)
{
    if (len != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
        s[16] != ':' || s[19] != '.' || s[23] != 'Z')
        Py_RETURN_NONE;
    int year = digits(s, 4), month = digits(s + 5, 2), day = digits(s + 8, 2);
    int hour = digits(s + 11, 2), minute = digits(s + 14, 2), second = digits(s + 17, 2);
    int milli = digits(s + 20, 3);
    if (year < 1970 || year > 2199 || month < 1 || month > 12 || day < 1 || hour < 0 ||
        hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 || milli < 0)
        Py_RETURN_NONE;
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    static const int MONTH_DAYS[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (day > MONTH_DAYS[month - 1] + (month == 2 && leap))
        Py_RETURN_NONE;
    long long y = year - 1;
    long long days = y * 365 + y / 4 - y / 100 + y / 400 - 719162; /* days since 1970 */
    days += DAYS_BEFORE[month - 1] + (month > 2 && leap) + day - 1;
    long long micros = ((days * 86400 + hour * 3600 + minute * 60 + second) * 1000 + milli) * 1000;
    return PyFloat_FromDouble((double)micros / 1e6);
}

/* How a top-level field is read. */
enum { K_STR, K_NAMED, K_FLAG, K_PARENT, K_TIMESTAMP, K_MESSAGE };

static const struct {
    const char *name;
    Py_ssize_t len;
    int field, kind;
} TOP_FIELDS[] = {
#define TOP(name, field, kind) {name, sizeof(name) - 1, field, kind}
    TOP("type", F_TYPE, K_STR),
    TOP("uuid", F_UUID, K_STR),
    TOP("parentUuid", F_PARENT, K_PARENT),
    TOP("isSidechain", F_SIDECHAIN, K_FLAG),
    TOP("agentId", F_AGENT, K_NAMED),
    TOP("timestamp", F_TIMESTAMP, K_TIMESTAMP),
    TOP("requestId", F_REQUEST, K_STR),
    TOP("isApiErrorMessage", F_API_ERROR, K_FLAG),
    TOP("subtype", F_SUBTYPE, K_STR),
    TOP("isCompactSummary", F_COMPACT_SUMMARY, K_FLAG),
    TOP("cwd", F_CWD, K_NAMED),
    TOP("sessionId", F_SESSION, K_NAMED),
    TOP("message", F_MESSAGE, K_MESSAGE),
#undef TOP
};

static int
message_value(Cur *c, PyObject **slot)
{
    if (c->p >= c->end || *c->p != '{')
        return skip_value(c, NULL); /* not an object: None */
    Message m = {{NULL}, 0};
    if (walk_object(c, message_member, &m) < 0 ||
        (m.slot[M_EDITS] == NULL && put(&m.slot[M_EDITS], PyLong_FromLong(0)) < 0)) {
        clear(m.slot, M_COUNT);
        return FAIL;
    }
    PyObject *tuple = as_tuple(m.slot, M_COUNT);
    clear(m.slot, M_COUNT);
    return put(slot, tuple);
}

static int
top_member(Cur *c, const Span *key, void *out)
{
    Top *t = out;
    int i = 0, n = (int)(sizeof TOP_FIELDS / sizeof TOP_FIELDS[0]);
    while (i < n && !(TOP_FIELDS[i].len == key->len &&
                      memcmp(TOP_FIELDS[i].name, key->start, (size_t)key->len) == 0))
        i++;
    if (i == n)
        return skip_value(c, NULL);
    int field = TOP_FIELDS[i].field;
    PyObject **slot = &t->slot[field];
    ONCE(t->seen, field);
    Value v;
    switch (TOP_FIELDS[i].kind) {
    case K_STR:
        return str_or_none(c, slot, 0);
    case K_NAMED:
        return str_or_none(c, slot, 1);
    case K_FLAG:
        return is_true(c, slot);
    case K_MESSAGE:
        return message_value(c, slot);
    case K_PARENT:
        if (skip_value(c, &v) < 0)
            return FAIL;
        if (v.kind == V_STRING)
            return put(slot, span_str(&v.span));
        /* null stays None; any other value is False: present, not a str, not null. */
        return v.kind == V_NULL ? 0 : put(slot, Py_NewRef(Py_False));
    default: /* K_TIMESTAMP */
        if (skip_value(c, &v) < 0)
            return FAIL;
        if (v.kind == V_NULL)
            return 0;
        if (v.kind != V_STRING)
            return FAIL; /* epoch numbers and odd values: parse_timestamp's */
        if (!v.span.escaped &&
            put(&t->slot[F_AT], epoch_of((const char *)v.span.start, v.span.len)) < 0)
            return FAIL;
        return put(slot, span_str(&v.span));
    }
}

PyDoc_STRVAR(pick_doc,
"pick(line) -> tuple | None\n\n"
"The fields of a transcript line the reader needs, as fields.fields_of() gives them\n"
"from the parsed line (plus the timestamp's epoch seconds when it has Claude Code's\n"
"form); None when the line must be parsed whole (see fields.py).");

static PyObject *
pick(PyObject *self, PyObject *arg)
{
    (void)self;
    char *data;
    Py_ssize_t len;
    /* orjson refuses a bytes subclass and reads bytearray, memoryview and str: leaving
       every other type to it keeps the answer orjson's. */
    if (!PyBytes_CheckExact(arg))
        Py_RETURN_NONE;
    if (PyBytes_AsStringAndSize(arg, &data, &len) < 0)
        return NULL;
    Cur c = {(const unsigned char *)data, (const unsigned char *)data + len, 0};
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        Py_RETURN_NONE;
    Top t;
    memset(&t, 0, sizeof t);
    if (walk_object(&c, top_member, &t) < 0)
        goto fallback;
    skip_ws(&c);
    if (c.p != c.end)
        goto fallback;
    if (t.slot[F_SIDECHAIN] == NULL)
        t.slot[F_SIDECHAIN] = Py_NewRef(Py_False);
    if (t.slot[F_API_ERROR] == NULL)
        t.slot[F_API_ERROR] = Py_NewRef(Py_False);
    if (t.slot[F_COMPACT_SUMMARY] == NULL)
        t.slot[F_COMPACT_SUMMARY] = Py_NewRef(Py_False);
    PyObject *result = as_tuple(t.slot, F_COUNT);
    clear(t.slot, F_COUNT);
    return result;
fallback:
    clear(t.slot, F_COUNT);
    if (PyErr_Occurred())
        return NULL; /* out of memory: not a line to hand on */
    Py_RETURN_NONE;
}

static PyMethodDef fields_methods[] = {
    {"pick", pick, METH_O, pick_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fields_module = {
    PyModuleDef_HEAD_INIT, "_fields", "Compiled transcript line picker (see fields.py).", -1,
    fields_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fields(void)
{
    init_plain();
    PyObject *module = PyModule_Create(&fields_module);
    if (module != NULL && PyModule_AddIntConstant(module, "API", FIELDS_API) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
