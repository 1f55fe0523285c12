/* ranking.io._trecscan: one pass over a TREC run or qrels file (docs/metrics.md#large-files).
 *
 * scan() reads a file in blocks, splits its lines at a one-character delimiter, and returns
 * the columns the fast path of ranking.io.trec_fast returns: query ids as codes in order of
 * first appearance, document ids as Arrow string buffers (int32 offsets, bytes) with the
 * 64-bit hash of ranking.io.trec_keys.string_hashes, and the value columns parsed as
 * Python's float() parses them. It accepts exactly the files the pyarrow fast path accepts
 * (printable ASCII fields, no empty field, no comment line, the same number of fields on
 * every line, a delimiter at the end of every line or of none) and answers with a reason
 * (a str) for any other, which the exact Python reader then reads or refuses with its
 * file:line error. The file is parsed without the GIL.
 *
 * Plain C and the CPython C API only: the module is optional (setup.py), the numpy and
 * pyarrow path of ranking.io.trec_fast is used where it is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS 16
#define MAX_VALUES 4
/* bytes readable (and writable) past the end of a block and of the document ids */
#define PADDING 32

/* -- a buffer object: memory the scan allocated, exposed through the buffer protocol ----- */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} ScanBuffer;

static int
buffer_get(PyObject *self, Py_buffer *view, int flags)
{
    ScanBuffer *b = (ScanBuffer *)self;
    return PyBuffer_FillInfo(view, self, b->data, b->size, 0, flags);
}

static void
buffer_dealloc(PyObject *self)
{
    PyMem_RawFree(((ScanBuffer *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t
buffer_len(PyObject *self)
{
    return ((ScanBuffer *)self)->size;
}

static PyBufferProcs buffer_procs = {buffer_get, NULL};
static PySequenceMethods buffer_sequence = {.sq_length = buffer_len};

static PyTypeObject ScanBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ranking.io._trecscan.Buffer",
    .tp_basicsize = sizeof(ScanBuffer),
    .tp_dealloc = buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_as_sequence = &buffer_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Bytes written by scan(), read through the buffer protocol (no copy).",
};

/* -- growable byte vectors (no GIL needed) ------------------------------------------------ */

typedef struct {
    char *p;
    size_t len, cap;
} Vec;

static int
vec_reserve(Vec *v, size_t extra)
{
    if (v->len + extra <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap : 4096;
    while (cap < v->len + extra)
        cap *= 2;
    char *p = PyMem_RawRealloc(v->p, cap);
    if (p == NULL)
        return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}

/* the vector as a Buffer object of its length (its memory handed over, shrunk to fit) */
static PyObject *
vec_release(Vec *v)
{
    ScanBuffer *b = PyObject_New(ScanBuffer, &ScanBufferType);
    if (b == NULL)
        return NULL;
    size_t keep = v->len ? v->len : 8;
    char *p = v->p ? PyMem_RawRealloc(v->p, keep) : PyMem_RawCalloc(1, keep);
    if (p == NULL) {
        p = v->p;
        if (p == NULL) {
            Py_DECREF(b);
            return PyErr_NoMemory();
        }
    }
    b->data = p;
    b->size = (Py_ssize_t)v->len;
    v->p = NULL;
    v->len = v->cap = 0;
    return (PyObject *)b;
}

/* -- the hash of ranking.io.trec_keys._hash_bytes ------------------------------------------ */

#define GOLDEN 0x9E3779B97F4A7C15ULL

static inline uint64_t
mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

static inline uint64_t
load_be(const unsigned char *s, size_t k)
{
    /* the k (1..8) bytes at s as the top bytes of a big-endian word, zeros below */
    uint64_t w = 0;
    for (size_t i = 0; i < k; i++)
        w |= (uint64_t)s[i] << (56 - 8 * i);
    return w;
}

static inline uint64_t
load_be8(const unsigned char *s)
{
#if defined(__GNUC__) || defined(__clang__)
    uint64_t w;
    memcpy(&w, s, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
#else
    return load_be(s, 8);
#endif
}

/* Starting from the length, each 8-byte big-endian word (the last one zero-filled) is xored
 * in and the state multiplied by an odd constant; the splitmix64 finaliser at both ends. */
static inline uint64_t
string_hash(const unsigned char *s, size_t n)
{
    uint64_t h = mix((uint64_t)n + GOLDEN);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        h = (load_be8(s + i) ^ h) * GOLDEN;
    if (i < n)
        h = (load_be(s + i, n - i) ^ h) * GOLDEN;
    return mix(h);
}

/* string_hash where 8 bytes past s + n can be read (the scan's blocks are padded) */
static inline uint64_t
padded_hash(const unsigned char *s, size_t n)
{
    uint64_t h = mix((uint64_t)n + GOLDEN);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        h = (load_be8(s + i) ^ h) * GOLDEN;
    if (i < n)
        h = ((load_be8(s + i) & (~0ULL << (64 - 8 * (n - i)))) ^ h) * GOLDEN;
    return mix(h);
}

/* -- numbers as float() reads them ---------------------------------------------------------- */

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int
same_word(const unsigned char *s, size_t n, const char *word)
{
    size_t k = strlen(word);
    if (n != k)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)word[i])
            return 0;
    }
    return 1;
}

/* strtod on a copy of the field; only decimal numbers checked by parse_number come here, so
 * its other syntaxes (hexadecimal, "nan(...)") never do. glibc's strtod rounds correctly, as
 * float() does; a locale whose decimal point is not '.' stops it early: refused. */
static int
slow_number(const unsigned char *s, size_t n, double *out)
{
    char local[128];
    char *copy = n < sizeof local ? local : PyMem_RawMalloc(n + 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, s, n);
    copy[n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(copy, &end);
    int ok = end == copy + n;
    if (copy != local)
        PyMem_RawFree(copy);
    *out = v;
    return ok;
}

/* A decimal number ([+-] digits [. digits] [e [+-] digits], at least one digit), or inf,
 * infinity, nan in any case with a sign: as float() reads it; 0 for anything else (then
 * the exact reader decides: float() also takes "1_0", which is refused here). */
static int
parse_number(const unsigned char *s, size_t n, double *out)
{
    size_t i = 0;
    int negative = 0;
    if (s[0] == '+' || s[0] == '-') {
        negative = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return 0;
    if ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z') {
        if (same_word(s + i, n - i, "inf") || same_word(s + i, n - i, "infinity")) {
            *out = negative ? -HUGE_VAL : HUGE_VAL;
            return 1;
        }
        if (same_word(s + i, n - i, "nan")) {
            *out = NAN; /* refused by both readers' callers: a NaN score, a non-finite grade */
            return 1;
        }
        return 0;
    }
    uint64_t mantissa = 0;
    int taken = 0, slow = 0, digits = 0;
    long exponent = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        digits = 1;
        if (taken < 19) {
            if (mantissa || s[i] != '0') {
                mantissa = mantissa * 10 + (uint64_t)(s[i] - '0');
                taken++;
            }
        }
        else {
            slow = 1;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            digits = 1;
            if (taken < 19) {
                taken += mantissa || s[i] != '0'; /* leading zeros are not significant */
                mantissa = mantissa * 10 + (uint64_t)(s[i] - '0');
                exponent--;
            }
            else {
                slow = 1;
            }
        }
    }
    if (!digits)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int minus = 0;
        long e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) {
            minus = s[i] == '-';
            i++;
        }
        if (i == n)
            return 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
            else
                slow = 1;
        }
        exponent += minus ? -e : e;
    }
    if (i != n)
        return 0;
    if (mantissa == 0 && !slow) {
        *out = negative ? -0.0 : 0.0;
        return 1;
    }
#if defined(__i386__) && !defined(__SSE2_MATH__)
    slow = 1; /* x87 arithmetic rounds twice: only strtod is exact there */
#endif
    if (!slow && mantissa <= (1ULL << 53) && exponent >= -22 && exponent <= 22) {
        /* both operands exact, one correctly rounded operation (Clinger's fast path) */
        double v = (double)mantissa;
        v = exponent >= 0 ? v * POW10[exponent] : v / POW10[-exponent];
        *out = negative ? -v : v;
        return 1;
    }
    return slow_number(s, n, out);
}

/* -- the scan ------------------------------------------------------------------------------- */

typedef struct {
    /* the layout */
    unsigned char delimiter;
    int trailing, ncols, qcol, dcol, nvalues;
    int vcols[MAX_VALUES];
    /* the columns */
    Vec query, offsets, data, hashes, values[MAX_VALUES];
    /* the query ids: bytes, offsets (int64), an open-addressing table of code + 1 */
    Vec qbytes, qoffsets;
    int32_t *table;
    size_t table_cap, nqueries;
    int32_t last;
    long long rows;
    /* byte classes: 0 a field's byte, 1 the delimiter, 2 a line break, 3 anything else */
    unsigned char cls[256];
    const char *problem;
    int no_memory, too_large;
} Scan;

static inline int
same_bytes(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return 0;
    return 1;
}

static inline const unsigned char *
qid_at(Scan *S, int32_t code, size_t *n)
{
    const int64_t *off = (const int64_t *)S->qoffsets.p;
    *n = (size_t)(off[code + 1] - off[code]);
    return (const unsigned char *)S->qbytes.p + off[code];
}

static int
table_grow(Scan *S)
{
    size_t cap = S->table_cap ? S->table_cap * 2 : 1024;
    int32_t *t = PyMem_RawCalloc(cap, sizeof(int32_t));
    if (t == NULL)
        return -1;
    for (size_t c = 0; c < S->nqueries; c++) {
        size_t n;
        const unsigned char *s = qid_at(S, (int32_t)c, &n);
        size_t at = string_hash(s, n) & (cap - 1);
        while (t[at])
            at = (at + 1) & (cap - 1);
        t[at] = (int32_t)c + 1;
    }
    PyMem_RawFree(S->table);
    S->table = t;
    S->table_cap = cap;
    return 0;
}

/* the code of query id s[0:n) (a new one: the next code) */
static int32_t
intern(Scan *S, const unsigned char *s, size_t n)
{
    size_t len;
    if (S->last >= 0) {
        const unsigned char *q = qid_at(S, S->last, &len);
        if (len == n && same_bytes(q, s, n))
            return S->last;
    }
    if (2 * (S->nqueries + 1) > S->table_cap && table_grow(S) < 0)
        return -1;
    size_t at = string_hash(s, n) & (S->table_cap - 1);
    while (S->table[at]) {
        int32_t code = S->table[at] - 1;
        const unsigned char *q = qid_at(S, code, &len);
        if (len == n && same_bytes(q, s, n))
            return S->last = code;
        at = (at + 1) & (S->table_cap - 1);
    }
    if (S->nqueries >= INT32_MAX - 1 || vec_reserve(&S->qbytes, n) < 0 ||
        vec_reserve(&S->qoffsets, sizeof(int64_t)) < 0)
        return -1;
    memcpy(S->qbytes.p + S->qbytes.len, s, n);
    S->qbytes.len += n;
    int64_t end = (int64_t)S->qbytes.len;
    memcpy(S->qoffsets.p + S->qoffsets.len, &end, sizeof end);
    S->qoffsets.len += sizeof end;
    int32_t code = (int32_t)S->nqueries++;
    S->table[at] = code + 1;
    return S->last = code;
}

static int
refuse(Scan *S, const char *why)
{
    S->problem = why;
    return -1;
}

/* Room for the rows of n more bytes of the file (a line of ncols fields has at least
 * 2 * ncols - 1 bytes), so that the rows are written without a check each. */
static int
reserve_rows(Scan *S, size_t n)
{
    size_t rows = (size_t)S->rows + n / (2 * (size_t)S->ncols - 1) + 2;
    if (vec_reserve(&S->query, rows * 4 - S->query.len) < 0 ||
        vec_reserve(&S->offsets, (rows + 1) * 4 - S->offsets.len) < 0 ||
        vec_reserve(&S->hashes, rows * 8 - S->hashes.len) < 0 ||
        vec_reserve(&S->data, n + PADDING) < 0)
        return -1;
    for (int k = 0; k < S->nvalues; k++)
        if (vec_reserve(&S->values[k], rows * 8 - S->values[k].len) < 0)
            return -1;
    return 0;
}

/* The row of one line's fields: its query code, document id (bytes, end offset, hash) and
 * numbers, written to the room reserve_rows() made. */
static inline int
add_row(Scan *S, const unsigned char *const *start, const size_t *length)
{
    int32_t code = intern(S, start[S->qcol], length[S->qcol]);
    if (code < 0) {
        S->no_memory = 1;
        return -1;
    }
    const unsigned char *doc = start[S->dcol];
    size_t dn = length[S->dcol];
    if (S->data.len + dn > INT32_MAX) {
        S->too_large = 1; /* for 32-bit Arrow offsets: the caller reads it another way */
        return refuse(S, "document ids of more than 2 GiB");
    }
    size_t row = (size_t)S->rows;
    for (int k = 0; k < S->nvalues; k++) {
        double v;
        if (!parse_number(start[S->vcols[k]], length[S->vcols[k]], &v))
            return refuse(S, "a number outside the decimal syntax");
        ((double *)S->values[k].p)[row] = v;
    }
    ((int32_t *)S->query.p)[row] = code;
    /* the block and the data vector both have PADDING bytes past their ends */
    if (dn <= 16)
        memcpy(S->data.p + S->data.len, doc, 16); /* a fixed size: no call */
    else
        memcpy(S->data.p + S->data.len, doc, dn);
    S->data.len += dn;
    ((int32_t *)S->offsets.p)[row + 1] = (int32_t)S->data.len;
    ((uint64_t *)S->hashes.p)[row] = padded_hash(doc, dn);
    S->rows++;
    return 0;
}

/* The first byte at or after p that is not printable ASCII (0x21-0x7E: a field's bytes),
 * read 8 at a time where words are little-endian: a word's bytes below 0x21 or above 0x7E
 * get their high bit set (the lowest one exactly: Anderson's "Bit Twiddling Hacks",
 * hasless and hasmore). The block has PADDING readable bytes past its end. */
static inline const unsigned char *
field_end(const unsigned char *p, const unsigned char *cls)
{
#if (defined(__GNUC__) || defined(__clang__)) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)cls;
    for (;;) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t below = (w - 0x2121212121212121ULL) & ~w;
        uint64_t above = (w + 0x0101010101010101ULL) | w;
        uint64_t flags = (below | above) & 0x8080808080808080ULL;
        if (flags)
            return p + (__builtin_ctzll(flags) >> 3);
        p += 8;
    }
#else
    while (cls[*p] == 0)
        p++;
    return p;
#endif
}

/* The lines of s[0:n), every one ending with a line break; s[n] is one too (a sentinel). */
static int
scan_lines(Scan *S, const unsigned char *s, size_t n)
{
    const unsigned char *start[MAX_COLUMNS];
    size_t length[MAX_COLUMNS];
    const unsigned char *cls = S->cls;
    const unsigned char *p = s, *end = s + n;
    const int ncols = S->ncols, trailing = S->trailing;
    while (p < end) {
        if (cls[*p] == 2) { /* an empty line */
            p++;
            continue;
        }
        if (*p == '#')
            return refuse(S, "a comment line");
        int col = 0;
        for (;;) {
            const unsigned char *from = p;
            p = field_end(p, cls);
            unsigned char kind = cls[*p];
            if (kind == 3)
                return refuse(S, "a byte other than printable ASCII, the delimiter or a line break");
            if (p == from)
                return refuse(S, "an empty field");
            if (col == ncols)
                return refuse(S, "a line with more fields than the first line");
            start[col] = from;
            length[col] = (size_t)(p - from);
            col++;
            if (kind == 2) { /* the line's end */
                if (trailing)
                    return refuse(S, "a line without the delimiter at its end");
                break;
            }
            p++; /* the delimiter */
            if (cls[*p] == 2) {
                if (!trailing)
                    return refuse(S, "an empty field at the end of a line");
                break;
            }
        }
        if (col != ncols)
            return refuse(S, "a line with fewer fields than the first line");
        if (add_row(S, start, length) < 0)
            return -1;
        p++; /* the line break */
    }
    return 0;
}

/* the whole file, in blocks of block_size bytes (a longer line grows the block) */
static int
scan_file(Scan *S, FILE *fh, size_t block_size, int *read_error)
{
    size_t cap = block_size, have = 0;
    unsigned char *buf = PyMem_RawMalloc(cap + PADDING);
    if (buf == NULL)
        goto no_memory;
    for (;;) {
        if (have == cap) {
            unsigned char *bigger = PyMem_RawRealloc(buf, cap * 2 + PADDING);
            if (bigger == NULL)
                goto no_memory;
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + have, 1, cap - have, fh);
        size_t end = have + got;
        int at_end = got < cap - have;
        if (at_end && ferror(fh)) {
            *read_error = errno ? errno : EIO;
            PyMem_RawFree(buf);
            return -1;
        }
        size_t last = end;
        if (!at_end) {
            while (last > 0 && buf[last - 1] != '\n' && buf[last - 1] != '\r')
                last--;
            if (last == 0) {
                have = end; /* no line break yet: a longer block */
                continue;
            }
        }
        memset(buf + end, 0, PADDING);
        if (at_end)
            buf[end] = '\n'; /* the sentinel after the last line */
        if (reserve_rows(S, last) < 0)
            goto no_memory;
        if (scan_lines(S, buf, last) < 0) {
            PyMem_RawFree(buf);
            return -1;
        }
        if (at_end) {
            PyMem_RawFree(buf);
            return 0;
        }
        memmove(buf, buf + last, end - last);
        have = end - last;
    }
no_memory:
    PyMem_RawFree(buf);
    S->no_memory = 1;
    return -1;
}

static void
scan_free(Scan *S)
{
    PyMem_RawFree(S->query.p);
    PyMem_RawFree(S->offsets.p);
    PyMem_RawFree(S->data.p);
    PyMem_RawFree(S->hashes.p);
    for (int k = 0; k < MAX_VALUES; k++)
        PyMem_RawFree(S->values[k].p);
    PyMem_RawFree(S->qbytes.p);
    PyMem_RawFree(S->qoffsets.p);
    PyMem_RawFree(S->table);
}

/* the query ids as a list of str (printable ASCII) */
static PyObject *
query_ids(Scan *S)
{
    PyObject *list = PyList_New((Py_ssize_t)S->nqueries);
    if (list == NULL)
        return NULL;
    for (size_t c = 0; c < S->nqueries; c++) {
        size_t n;
        const unsigned char *s = qid_at(S, (int32_t)c, &n);
        PyObject *q = PyUnicode_DecodeASCII((const char *)s, (Py_ssize_t)n, NULL);
        if (q == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)c, q);
    }
    return list;
}

static PyObject *
scan_result(Scan *S)
{
    PyObject *values = PyTuple_New(S->nvalues);
    if (values == NULL)
        return NULL;
    for (int k = 0; k < S->nvalues; k++) {
        PyObject *v = vec_release(&S->values[k]);
        if (v == NULL) {
            Py_DECREF(values);
            return NULL;
        }
        PyTuple_SET_ITEM(values, k, v);
    }
    PyObject *qids = query_ids(S);
    PyObject *query = vec_release(&S->query);
    PyObject *offsets = vec_release(&S->offsets);
    PyObject *data = vec_release(&S->data);
    PyObject *hashes = vec_release(&S->hashes);
    PyObject *out = NULL;
    if (qids && query && offsets && data && hashes)
        out = PyTuple_Pack(6, qids, query, offsets, data, hashes, values);
    Py_XDECREF(qids);
    Py_XDECREF(query);
    Py_XDECREF(offsets);
    Py_XDECREF(data);
    Py_XDECREF(hashes);
    Py_DECREF(values);
    return out;
}

PyDoc_STRVAR(scan_doc,
             "scan(path, delimiter, trailing, ncols, qid_col, doc_col, value_cols, block_size)\n"
             "--\n\n"
             "Read a TREC file whose lines have ncols fields cut at delimiter (a byte; with\n"
             "trailing, every line also ends with one). Returns (qids, query, offsets, data,\n"
             "hashes, values): the query ids in order of first appearance, and buffers of\n"
             "each row's query code (int32), the document ids as Arrow string offsets (int32,\n"
             "rows + 1) and bytes, their 64-bit hashes (uint64) and a tuple of one float64\n"
             "buffer per value column. Returns a str saying why instead when the file is not\n"
             "one the fast path reads exactly, None when its document ids pass the 2 GiB that\n"
             "32-bit offsets address. Raises OSError when it cannot be read.");

static PyObject *
scan(PyObject *module, PyObject *args)
{
    PyObject *path = NULL, *value_cols;
    int delimiter, trailing, ncols, qcol, dcol;
    Py_ssize_t block_size;
    if (!PyArg_ParseTuple(args, "O&ipiiiO!n", PyUnicode_FSConverter, &path, &delimiter,
                          &trailing, &ncols, &qcol, &dcol, &PyTuple_Type, &value_cols,
                          &block_size))
        return NULL;
    Scan S;
    memset(&S, 0, sizeof S);
    S.delimiter = (unsigned char)delimiter;
    S.trailing = trailing;
    S.ncols = ncols;
    S.qcol = qcol;
    S.dcol = dcol;
    S.nvalues = (int)PyTuple_GET_SIZE(value_cols);
    S.last = -1;
    int bad = ncols < 1 || ncols > MAX_COLUMNS || qcol < 0 || qcol >= ncols || dcol < 0 ||
              dcol >= ncols || S.nvalues > MAX_VALUES || block_size < 16 ||
              (delimiter != ' ' && delimiter != '\t');
    for (int k = 0; k < S.nvalues && !bad; k++) {
        long c = PyLong_AsLong(PyTuple_GET_ITEM(value_cols, k));
        if (c == -1 && PyErr_Occurred()) {
            Py_DECREF(path);
            return NULL;
        }
        bad = c < 0 || c >= ncols;
        S.vcols[k] = (int)c;
    }
    if (bad) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "scan: bad layout");
        return NULL;
    }
    memset(S.cls, 3, 256);
    for (int c = 0x21; c < 0x7F; c++)
        S.cls[c] = 0;
    S.cls['\n'] = S.cls['\r'] = 2;
    S.cls[S.delimiter] = 1;
    /* the offsets start with 0 */
    if (vec_reserve(&S.offsets, 4) < 0) {
        Py_DECREF(path);
        scan_free(&S);
        return PyErr_NoMemory();
    }
    memset(S.offsets.p, 0, 4);
    S.offsets.len = 4;
    if (vec_reserve(&S.qoffsets, 8) < 0) {
        Py_DECREF(path);
        scan_free(&S);
        return PyErr_NoMemory();
    }
    memset(S.qoffsets.p, 0, 8);
    S.qoffsets.len = 8;

    FILE *fh;
    int read_error = 0, r = -1;
    Py_BEGIN_ALLOW_THREADS
    fh = fopen(PyBytes_AS_STRING(path), "rb");
    if (fh == NULL) {
        read_error = errno;
    }
    else {
        setvbuf(fh, NULL, _IONBF, 0); /* fread straight into the block */
        r = scan_file(&S, fh, (size_t)block_size, &read_error);
        fclose(fh);
    }
    Py_END_ALLOW_THREADS

    PyObject *out = NULL;
    if (read_error) {
        errno = read_error;
        PyObject *name = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, name);
        Py_XDECREF(name);
    }
    else if (S.no_memory) {
        PyErr_NoMemory();
    }
    else if (r < 0 && S.too_large) {
        out = Py_NewRef(Py_None);
    }
    else if (r < 0) {
        out = PyUnicode_FromString(S.problem);
    }
    else if (S.rows == 0) {
        out = PyUnicode_FromString("no data lines");
    }
    else {
        S.query.len = (size_t)S.rows * 4;
        S.offsets.len = ((size_t)S.rows + 1) * 4;
        S.hashes.len = (size_t)S.rows * 8;
        for (int k = 0; k < S.nvalues; k++)
            S.values[k].len = (size_t)S.rows * 8;
        out = scan_result(&S);
    }
    Py_DECREF(path);
    scan_free(&S);
    return out;
}

PyDoc_STRVAR(hash_doc,
             "string_hashes(offsets, data) -> Buffer\n--\n\n"
             "The 64-bit hash (uint64) of each string of an Arrow string array given as its\n"
             "int64 offsets buffer (n + 1) and its bytes; ranking.io.trec_keys.string_hashes.");

static PyObject *
hash_strings(PyObject *module, PyObject *args)
{
    Py_buffer off, data;
    if (!PyArg_ParseTuple(args, "y*y*", &off, &data))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = off.len / 8 - 1;
    const int64_t *o = (const int64_t *)off.buf;
    Vec v = {0};
    int ok = n >= 0 && off.len % 8 == 0;
    for (Py_ssize_t i = 0; ok && i < n; i++)
        ok = o[i] >= 0 && o[i] <= o[i + 1] && o[i + 1] <= data.len;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "string_hashes: bad offsets");
    }
    else if (vec_reserve(&v, (size_t)n * 8 + 8) < 0) {
        PyErr_NoMemory();
    }
    else {
        uint64_t *h = (uint64_t *)v.p;
        const unsigned char *d = data.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            h[i] = string_hash(d + o[i], (size_t)(o[i + 1] - o[i]));
        Py_END_ALLOW_THREADS
        v.len = (size_t)n * 8;
        out = vec_release(&v);
    }
    PyMem_RawFree(v.p);
    PyBuffer_Release(&off);
    PyBuffer_Release(&data);
    return out;
}

/* -- the join of a run with qrels ---------------------------------------------------------- */

typedef struct {
    const char *p;
    int wide; /* 8-byte offsets (Arrow large_string) */
} Offsets;

static inline int64_t
offset_at(Offsets o, Py_ssize_t i)
{
    return o.wide ? ((const int64_t *)o.p)[i] : ((const int32_t *)o.p)[i];
}

/* Whether judged row order[at] has the document id a[0:n]; if so, its value goes to *out. */
static inline int
same_row(const void *order, int order_wide, Py_ssize_t at, Offsets t_off,
         const unsigned char *tbytes, const unsigned char *a, int64_t n, const double *values,
         double *out)
{
    Py_ssize_t t = order_wide ? (Py_ssize_t)((const int64_t *)order)[at]
                              : (Py_ssize_t)((const int32_t *)order)[at];
    int64_t b0 = offset_at(t_off, t);
    if (offset_at(t_off, t + 1) - b0 != n)
        return 0;
    const unsigned char *b = tbytes + b0;
    if (n >= 8) { /* 8 bytes at a time, the last 8 overlapping */
        uint64_t u, v;
        for (int64_t x = 0; x < n - 8; x += 8) {
            memcpy(&u, a + x, 8);
            memcpy(&v, b + x, 8);
            if (u != v)
                return 0;
        }
        memcpy(&u, a + n - 8, 8);
        memcpy(&v, b + n - 8, 8);
        if (u != v)
            return 0;
    }
    else {
        for (int64_t x = 0; x < n; x++)
            if (a[x] != b[x])
                return 0;
    }
    *out = values[t];
    return 1;
}

PyDoc_STRVAR(join_doc,
             "join(run_query, run_hashes, truth_code, bits, sorted_keys, key_order,\n"
             "     run_offsets, run_data, truth_offsets, truth_data, truth_values) -> Buffer\n"
             "--\n\n"
             "The judged value (float64) of each run row, 0 where none: row i's key is\n"
             "truth_code[run_query[i]] (skipped when negative) in the high bits and\n"
             "run_hashes[i] >> bits below (ranking.io.trec_keys.pair_keys), searched in the\n"
             "ascending sorted_keys of the qrels (key_order: their rows, int32 or int64), and\n"
             "every match is checked on the document ids themselves (Arrow string offsets,\n"
             "int32 or int64, and bytes), so that a shared key never gives a wrong label.");

static PyObject *
join(PyObject *module, PyObject *args)
{
    Py_buffer rq, rh, tc, keys, order, ro, rd, to, td, tv;
    int bits;
    if (!PyArg_ParseTuple(args, "y*y*y*iy*y*y*y*y*y*y*", &rq, &rh, &tc, &bits, &keys, &order,
                          &ro, &rd, &to, &td, &tv))
        return NULL;
    Py_buffer *all[] = {&rq, &rh, &tc, &keys, &order, &ro, &rd, &to, &td, &tv};
    PyObject *out = NULL;
    Py_ssize_t n = rq.len / 4, m = keys.len / 8, nq = tc.len / 4;
    Py_ssize_t n_truth_queries = bits >= 1 && bits < 32 ? ((Py_ssize_t)1 << bits) : 0;
    int order_wide = m && order.len == m * 8;
    Offsets r_off = {ro.buf, ro.len == (n + 1) * 8};
    Offsets t_off = {to.buf, to.len == (m + 1) * 8};
    Vec labels = {0}, starts = {0};
    int ok = bits >= 1 && bits < 32 && rh.len == n * 8 && (order.len == m * 4 || order_wide) &&
             (ro.len == (n + 1) * 4 || r_off.wide) && (to.len == (m + 1) * 4 || t_off.wide) &&
             tv.len == m * 8;
    /* every code and offset in range: checked once, with the GIL */
    for (Py_ssize_t q = 0; ok && q < nq; q++)
        ok = ((const int32_t *)tc.buf)[q] < n_truth_queries;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        int32_t q = ((const int32_t *)rq.buf)[i];
        ok = q >= 0 && q < nq;
    }
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        int64_t t = order_wide ? ((const int64_t *)order.buf)[j] : ((const int32_t *)order.buf)[j];
        ok = t >= 0 && t < m;
    }
    for (Py_ssize_t i = 0; ok && i <= n; i++)
        ok = offset_at(r_off, i) >= 0 && offset_at(r_off, i) <= rd.len &&
             (i == 0 || offset_at(r_off, i - 1) <= offset_at(r_off, i));
    for (Py_ssize_t j = 0; ok && j <= m; j++)
        ok = offset_at(t_off, j) >= 0 && offset_at(t_off, j) <= td.len &&
             (j == 0 || offset_at(t_off, j - 1) <= offset_at(t_off, j));
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "join: inconsistent buffers");
        goto done;
    }
    if (vec_reserve(&labels, (size_t)n * 8 + 8) < 0 ||
        vec_reserve(&starts, ((size_t)n_truth_queries + 1) * 8) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const uint64_t *k = keys.buf;
    const uint64_t *rhash = rh.buf;
    const int32_t *rquery = rq.buf, *tcode = tc.buf;
    const double *values = tv.buf;
    const unsigned char *rbytes = rd.buf, *tbytes = td.buf;
    double *label = (double *)labels.p;
    Py_ssize_t *start = (Py_ssize_t *)starts.p;
    const int shift = 64 - bits;
    /* start[c]: the first sorted key of query code c (the keys ascend, the code on top) */
    Py_ssize_t j = 0, largest = 0;
    for (Py_ssize_t c = 0; c <= n_truth_queries; c++) {
        while (j < m && (Py_ssize_t)(k[j] >> shift) < c)
            j++;
        start[c] = j;
        if (c && start[c] - start[c - 1] > largest)
            largest = start[c] - start[c - 1];
    }
    size_t table_size = 16;
    while ((Py_ssize_t)table_size < 2 * largest)
        table_size *= 2;
    int32_t *table = PyMem_RawMalloc(table_size * sizeof(int32_t));
    if (table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    /* One query's judged keys in a small hash table (in the cache), built when the run
     * moves to that query: once a query when the run's rows are grouped by query, as runs
     * are. If they are not (the table rebuilt more than twice a query), a binary search in
     * the query's sorted keys instead. */
    int32_t current = -1;
    size_t mask = 0;
    Py_ssize_t rebuilds = 0, rebuild_limit = 2 * nq + 64;
    for (Py_ssize_t i = 0; i < n; i++) {
        label[i] = 0.0;
        int32_t c = tcode[rquery[i]];
        if (c < 0 || start[c] == start[c + 1])
            continue;
        uint64_t key = ((uint64_t)c << shift) | (rhash[i] >> bits);
        Py_ssize_t first = start[c], stop = start[c + 1];
        int64_t a0 = offset_at(r_off, i), a1 = offset_at(r_off, i + 1);
        if (c != current && rebuilds <= rebuild_limit && ++rebuilds <= rebuild_limit) {
            size_t size = 16;
            while ((Py_ssize_t)size < 2 * (stop - first))
                size *= 2;
            mask = size - 1;
            memset(table, 0, size * sizeof(int32_t));
            for (Py_ssize_t at = first; at < stop; at++) {
                size_t slot = (size_t)k[at] & mask;
                while (table[slot])
                    slot = (slot + 1) & mask;
                table[slot] = (int32_t)(at - first + 1);
            }
            current = c;
        }
        Py_ssize_t lo;
        if (c == current) { /* the table: every entry of this key until an empty slot */
            for (size_t slot = (size_t)key & mask; table[slot]; slot = (slot + 1) & mask) {
                lo = first + table[slot] - 1;
                if (k[lo] == key && same_row(order.buf, order_wide, lo, t_off, tbytes, rbytes + a0,
                                             a1 - a0, values, &label[i]))
                    break;
            }
            continue;
        }
        /* the first key >= key among the query's: a binary search without branches */
        const uint64_t *base = k + first;
        Py_ssize_t len = stop - first;
        while (len > 1) {
            Py_ssize_t half = len / 2;
            base = base[half - 1] < key ? base + half : base;
            len -= half;
        }
        for (lo = (base - k) + (len == 1 && *base < key); lo < stop && k[lo] == key; lo++)
            if (same_row(order.buf, order_wide, lo, t_off, tbytes, rbytes + a0, a1 - a0, values,
                         &label[i]))
                break;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(table);
    labels.len = (size_t)n * 8;
    out = vec_release(&labels);
done:
    PyMem_RawFree(labels.p);
    PyMem_RawFree(starts.p);
    for (size_t b = 0; b < sizeof all / sizeof all[0]; b++)
        PyBuffer_Release(all[b]);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"string_hashes", hash_strings, METH_VARARGS, hash_doc},
    {"join", join, METH_VARARGS, join_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "ranking.io._trecscan",
    "One pass over a TREC run or qrels file in C (docs/metrics.md#large-files).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__trecscan(void)
{
    if (PyType_Ready(&ScanBufferType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ScanBufferType);
    if (PyModule_AddObject(m, "Buffer", (PyObject *)&ScanBufferType) < 0) {
        Py_DECREF(&ScanBufferType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
