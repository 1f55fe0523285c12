/* ranking.trec_eval._rankjoin: trec_eval's join of a run with its qrels in one pass, in C
 * (docs/trec-eval.md#speed).
 *
 * rank() reads a qrels file whole and a run file in blocks, and returns what
 * ranking.trec_eval.merge.merge builds from the columns of both: every qrels query (in
 * strcmp order of its id) with the grades of its ranked documents (score descending, ties by
 * document id descending, the first -M kept, -J dropping the unjudged), the per-grade
 * judgment counts, which queries the run has, and the first duplicated document (strcmp
 * order) of each query in the qrels and in its ranking. Document ids never become Python
 * objects: they are looked up in a hash table of the qrels' (query, document) pairs.
 *
 * Streaming: while the run's lines come grouped by query (as runs are written), a query is
 * ranked as soon as its last line is read and its lines are dropped; a query met again after
 * another one makes the run be read a second time with every line kept.
 *
 * It accepts a strict subset of what the Python readers of ranking.trec_eval.readers accept
 * (fields cut by spaces or tabs, no comment or blank line, no other control byte, 4 fields a
 * qrels line, at least 6 a run line, integer grades of at most 8 characters that end their
 * line, plain decimal scores) and answers
 * with a reason (a str) for anything else; the Python path then reads the files and gives
 * the same output, or its file:line error. Scores are read as strtod reads them (the exact
 * fast path of Clinger, "How to Read Floating Point Numbers Accurately", PLDI 1990, else
 * strtod itself), which is what both trec_eval's atof and Python's float() give.
 *
 * Plain C and the CPython C API only; the module is optional (setup.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* judged_measures() must give numpy's doubles: no fused multiply-add (setup.py also passes
 * -ffp-contract=off, which GCC needs) */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONPOOL (-1)
#define UNJUDGED (-2)
#define PAD (-3)
/* the run is read this many bytes at a time (rank()'s last argument, for the tests) */
#define BLOCK (1 << 22)
/* the longest grade text taken (ranking.trec_eval.strict_text._LONGEST): a qrels file that
 * rank() reads is one that integer_grades() passes, so the caller need not check it first */
#define LONGEST_GRADE 8

static const char BOGUS_DOC[] = "ceci_nest_pas_un_docno";

/* -- growable arrays ----------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap; /* in bytes */
} Vec;

static int
vec_reserve(Vec *v, size_t extra)
{
    if (v->len + extra <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap : 4096;
    while (cap < v->len + extra)
        cap *= 2;
    char *p = realloc(v->p, cap);
    if (p == NULL)
        return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}

static void
vec_free(Vec *v)
{
    free(v->p);
    v->p = NULL;
    v->len = v->cap = 0;
}

/* -- hashing ----------------------------------------------------------------------------- */

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
hash_bytes(const unsigned char *s, size_t n)
{
    uint64_t h = mix((uint64_t)n + 0x9E3779B97F4A7C15ULL);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (w ^ h) * 0x9E3779B97F4A7C15ULL;
    }
    uint64_t w = 0;
    for (size_t k = 0; i < n; i++, k++)
        w |= (uint64_t)s[i] << (8 * k);
    return mix(w ^ h);
}

static size_t
table_size(size_t n)
{
    size_t size = 16;
    while (size < 2 * n + 1)
        size *= 2;
    return size;
}

/* -- fields ------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *s;
    size_t n;
} Field;

/* byte classes of split(): 0 in a field, 1 a delimiter (space, tab), 2 refused */
static unsigned char byte_class[256];

static void
init_classes(void)
{
    for (int c = 0; c < 256; c++)
        byte_class[c] = (c < 0x20 || c == 0x7f) ? 2 : 0;
    byte_class[' '] = byte_class['\t'] = 1;
}

/* Cut [line, end) at runs of spaces and tabs into at most `most` fields; -1 on a control byte
 * (the Python readers' whitespace set is larger), else the number of fields (more than `most`
 * are counted, not stored). */
static int
split(const unsigned char *line, const unsigned char *end, Field *fields, int most)
{
    int count = 0;
    const unsigned char *p = line;
    while (p < end) {
        while (p < end && byte_class[*p] == 1)
            p++;
        if (p >= end)
            break;
        const unsigned char *start = p;
        while (p < end && byte_class[*p] == 0)
            p++;
        if (p < end && byte_class[*p] == 2)
            return -1;
        if (count < most) {
            fields[count].s = start;
            fields[count].n = (size_t)(p - start);
        }
        count++;
    }
    return count;
}

/* Bytes readable past the end of any line split_padded() cuts: the qrels' and the run's
 * buffers are allocated (and zeroed) that much longer. */
#define SPLIT_PAD 16

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>

/* split() of a line followed by SPLIT_PAD readable bytes, 16 bytes at a time: bit masks of
 * the blanks and control bytes of lines up to 64 bytes long (the run's lines are about 30),
 * the fields between them found with bit scans instead of a branch a byte; longer lines go
 * to split(). The same fields and the same -1. */
static int
split_padded(const unsigned char *line, const unsigned char *end, Field *fields, int most)
{
    size_t n = (size_t)(end - line);
    if (n > 64)
        return split(line, end, fields, most);
    uint64_t blank = 0, special = 0;
    const __m128i space = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t');
    const __m128i below = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f);
    for (size_t off = 0; off < n; off += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(line + off));
        __m128i b = _mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(v, tab));
        /* control bytes: below 0x20 (unsigned) or DEL */
        __m128i c = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, below), v),
                                 _mm_cmpeq_epi8(v, del));
        uint64_t bm = (uint64_t)(uint32_t)_mm_movemask_epi8(b);
        uint64_t cm = (uint64_t)(uint32_t)_mm_movemask_epi8(c);
        blank |= bm << off;
        special |= (bm | cm) << off;
    }
    uint64_t valid = n == 64 ? ~0ULL : (1ULL << n) - 1;
    if (special & ~blank & valid)
        return -1; /* a control byte anywhere in the line, as split() finds it */
    uint64_t text = ~special & valid;
    uint64_t starts = text & ~(text << 1), ends = text & ~(text >> 1);
    int count = 0;
    for (; starts; count++) { /* the fields past `most` are counted only */
        if (count < most) {
            int s = __builtin_ctzll(starts), e = __builtin_ctzll(ends);
            fields[count].s = line + s;
            fields[count].n = (size_t)(e - s + 1);
        }
        starts &= starts - 1;
        ends &= ends - 1;
    }
    return count;
}
#else
#define split_padded split
#endif

/* [+-]?digits as a long long; 0 when it is not one (or does not fit in 18 digits) */
static int
parse_grade(Field f, long long *out)
{
    size_t i = 0;
    int negative = 0;
    if (i < f.n && (f.s[i] == '+' || f.s[i] == '-'))
        negative = f.s[i++] == '-';
    if (i >= f.n || f.n - i > 18)
        return 0;
    long long v = 0;
    for (; i < f.n; i++) {
        if (f.s[i] < '0' || f.s[i] > '9')
            return 0;
        v = v * 10 + (f.s[i] - '0');
    }
    *out = negative ? -v : v;
    return 1;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A plain decimal ([+-]?(d+.?d*|.d+)([eE][+-]?d+)?, the strict reader's grammar) as strtod
 * reads it; 0 when the field is not one or its value is not finite. */
static int
parse_score(Field f, double *out)
{
    size_t i = 0, n = f.n;
    const unsigned char *s = f.s;
    int negative = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        negative = s[i++] == '-';
    uint64_t mantissa = 0; /* the first 19 significant digits */
    int kept = 0, digits = 0, truncated = 0;
    long exponent = 0; /* value = mantissa * 10^exponent while nothing is truncated */
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        int d = s[i] - '0';
        if (mantissa == 0 && d == 0)
            continue;
        if (kept < 19) {
            mantissa = mantissa * 10 + (uint64_t)d;
            kept++;
        } else {
            exponent++;
            truncated |= d != 0;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            int d = s[i] - '0';
            if (mantissa == 0 && d == 0) {
                exponent--;
            } else if (kept < 19) {
                mantissa = mantissa * 10 + (uint64_t)d;
                kept++;
                exponent--;
            } else {
                truncated |= d != 0;
            }
        }
    }
    if (digits == 0)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            eneg = s[i++] == '-';
        size_t first = i;
        long e = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        if (i == first)
            return 0;
        exponent += eneg ? -e : e;
    }
    if (i != n)
        return 0;
    double value;
    if (!truncated && mantissa < (1ULL << 53) && exponent >= -22 && exponent <= 22) {
        /* both operands exact, so one correctly rounded operation (Clinger's fast path) */
        value = (double)mantissa;
        value = exponent < 0 ? value / POW10[-exponent] : value * POW10[exponent];
        if (negative)
            value = -value;
    } else {
        char local[128];
        char *text = n < sizeof local ? local : malloc(n + 1);
        if (text == NULL)
            return 0;
        memcpy(text, s, n);
        text[n] = '\0';
        value = strtod(text, NULL);
        if (text != local)
            free(text);
    }
    if (!isfinite(value))
        return 0;
    *out = value;
    return 1;
}

/* -- the qrels ----------------------------------------------------------------------------- */

typedef struct {
    const char *doc; /* NUL-terminated, inside the qrels' bytes */
    uint32_t len;
    int32_t query; /* order of first appearance */
    long long grade;
    uint64_t hash;
} Judgment;

typedef struct {
    char *data; /* the file, its fields NUL-terminated in place */
    Judgment *rows;
    size_t n;
    /* queries by order of first appearance */
    const char **qids;
    uint32_t *qlen;
    size_t nq;
    int32_t *sorted_of; /* first-appearance code -> strcmp rank */
    /* one open-addressing table a query (document -> first row), the tables one after the
     * other and the rows grouped by query, so a query's look-ups stay in a few cache lines */
    int32_t *table;
    size_t *toff, *tmask;
    int32_t *qtable; /* query id -> first-appearance code */
    size_t qmask;
    const char **qrels_dup; /* per query (first appearance): strcmp-least duplicated doc */
    long long rel_count;    /* lines with a grade > 0 */
} Qrels;

static void
qrels_free(Qrels *q)
{
    free(q->data);
    free(q->rows);
    free(q->qids);
    free(q->qlen);
    free(q->sorted_of);
    free(q->table);
    free(q->toff);
    free(q->tmask);
    free(q->qtable);
    free(q->qrels_dup);
    memset(q, 0, sizeof *q);
}

/* The first-appearance code of a query id, -1 when the qrels do not have it. */
static int32_t
find_query(const Qrels *q, const unsigned char *s, size_t n, uint64_t h)
{
    for (size_t slot = h & q->qmask;; slot = (slot + 1) & q->qmask) {
        int32_t code = q->qtable[slot];
        if (code < 0)
            return -1;
        if (q->qlen[code] == n && memcmp(q->qids[code], s, n) == 0)
            return code;
    }
}

/* The row of (query, document), -1 when not judged. */
static int32_t
find_judgment(const Qrels *q, int32_t query, const unsigned char *s, size_t n, uint64_t h)
{
    const int32_t *table = q->table + q->toff[query];
    size_t mask = q->tmask[query];
    for (size_t slot = h & mask;; slot = (slot + 1) & mask) {
        int32_t row = table[slot];
        if (row < 0)
            return -1;
        const Judgment *j = &q->rows[row];
        if (j->hash == h && j->len == n && memcmp(j->doc, s, n) == 0)
            return row;
    }
}

/* a query id and its first-appearance code, sorted by id (the ids are distinct) */
typedef struct {
    const char *id;
    int32_t code;
} QidRef;

static int
cmp_qid(const void *a, const void *b)
{
    return strcmp(((const QidRef *)a)->id, ((const QidRef *)b)->id);
}

static const char *
read_qrels(const char *path, Qrels *q)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return "cannot open the qrels";
    if (fseek(file, 0, SEEK_END) != 0) {
        fclose(file);
        return "cannot seek the qrels";
    }
    long size = ftell(file);
    rewind(file);
    if (size <= 0) {
        fclose(file);
        return "empty qrels";
    }
    q->data = malloc((size_t)size + 1 + SPLIT_PAD);
    if (q->data == NULL) {
        fclose(file);
        return "out of memory";
    }
    size_t got = fread(q->data, 1, (size_t)size, file);
    fclose(file);
    if (got != (size_t)size)
        return "short read of the qrels";
    q->data[size] = '\n';
    memset(q->data + size + 1, 0, SPLIT_PAD);
    if (q->data[size - 1] != '\n')
        return "no final newline in the qrels";
    size_t lines = 0;
    for (const char *nl = q->data; (nl = memchr(nl, '\n', (size_t)(q->data + size - nl)));
         nl++)
        lines++;
    q->rows = malloc(lines * sizeof *q->rows);
    q->qids = malloc(lines * sizeof *q->qids);
    q->qlen = malloc(lines * sizeof *q->qlen);
    q->qmask = table_size(lines) - 1;
    q->qtable = malloc((q->qmask + 1) * sizeof *q->qtable);
    if (!q->rows || !q->qids || !q->qlen || !q->qtable)
        return "out of memory";
    memset(q->qtable, 0xff, (q->qmask + 1) * sizeof *q->qtable);
    unsigned char *p = (unsigned char *)q->data, *stop = p + size;
    while (p < stop) {
        unsigned char *end = memchr(p, '\n', (size_t)(stop - p));
        Field f[4];
        int count = split_padded(p, end, f, 4);
        if (count != 4 || f[0].s[0] == '#')
            return "a qrels line the Python reader reads";
        long long grade;
        /* integer_grades()'s test too: the grade ends the line and is at most LONGEST_GRADE
         * characters (a file it refuses goes to the Python readers) */
        if (f[3].n > LONGEST_GRADE || f[3].s + f[3].n != end || !parse_grade(f[3], &grade))
            return "a grade the Python reader reads";
        uint64_t qh = hash_bytes(f[0].s, f[0].n);
        int32_t code = find_query(q, f[0].s, f[0].n, qh);
        if (code < 0) {
            code = (int32_t)q->nq++;
            q->qids[code] = (const char *)f[0].s;
            q->qlen[code] = (uint32_t)f[0].n;
            size_t slot = qh & q->qmask;
            while (q->qtable[slot] >= 0)
                slot = (slot + 1) & q->qmask;
            q->qtable[slot] = code;
        }
        Judgment *j = &q->rows[q->n++];
        j->doc = (const char *)f[2].s;
        j->len = (uint32_t)f[2].n;
        j->query = code;
        j->grade = grade;
        j->hash = hash_bytes(f[2].s, f[2].n);
        q->rel_count += grade > 0;
        /* NUL-terminate the query and document ids in place (their next byte is a
         * delimiter or the newline, not needed any more) */
        ((unsigned char *)f[0].s)[f[0].n] = '\0';
        ((unsigned char *)f[2].s)[f[2].n] = '\0';
        p = end + 1;
    }
    if (q->n == 0)
        return "no judgments";
    if (q->n >= INT32_MAX / 2)
        return "too many judgments";
    /* strcmp order of the queries */
    QidRef *order = malloc(q->nq * sizeof *order);
    q->sorted_of = malloc(q->nq * sizeof *q->sorted_of);
    q->qrels_dup = calloc(q->nq, sizeof *q->qrels_dup);
    q->toff = calloc(q->nq + 1, sizeof *q->toff);
    q->tmask = calloc(q->nq, sizeof *q->tmask);
    size_t *first = calloc(q->nq + 1, sizeof *first);
    Judgment *grouped = malloc(q->n * sizeof *grouped);
    if (!order || !q->sorted_of || !q->qrels_dup || !q->toff || !q->tmask || !first ||
        !grouped) {
        free(order);
        free(first);
        free(grouped);
        return "out of memory";
    }
    /* the rows grouped by query, in file order within one (a counting sort) */
    for (size_t r = 0; r < q->n; r++)
        first[q->rows[r].query + 1]++;
    for (size_t c = 0; c < q->nq; c++) {
        q->tmask[c] = table_size(first[c + 1]) - 1;
        q->toff[c + 1] = q->toff[c] + q->tmask[c] + 1;
        first[c + 1] += first[c];
    }
    for (size_t r = 0; r < q->n; r++)
        grouped[first[q->rows[r].query]++] = q->rows[r];
    free(first);
    free(q->rows);
    q->rows = grouped;
    q->table = malloc(q->toff[q->nq] * sizeof *q->table);
    if (q->table == NULL) {
        free(order);
        return "out of memory";
    }
    for (size_t i = 0; i < q->nq; i++) {
        order[i].id = q->qids[i];
        order[i].code = (int32_t)i;
    }
    qsort(order, q->nq, sizeof *order, cmp_qid);
    for (size_t i = 0; i < q->nq; i++)
        q->sorted_of[order[i].code] = (int32_t)i;
    free(order);
    memset(q->table, 0xff, q->toff[q->nq] * sizeof *q->table);
    for (size_t r = 0; r < q->n; r++) {
        const Judgment *j = &q->rows[r];
        int32_t *table = q->table + q->toff[j->query];
        size_t mask = q->tmask[j->query];
        for (size_t slot = j->hash & mask;; slot = (slot + 1) & mask) {
            int32_t other = table[slot];
            if (other < 0) {
                table[slot] = (int32_t)r;
                break;
            }
            const Judgment *o = &q->rows[other];
            if (o->hash == j->hash && o->len == j->len &&
                memcmp(o->doc, j->doc, j->len) == 0) {
                const char **dup = &q->qrels_dup[j->query];
                if (*dup == NULL || strcmp(j->doc, *dup) < 0)
                    *dup = j->doc;
                break; /* the first line's grade is the one looked up */
            }
        }
    }
    return NULL;
}

/* -- ranking one query --------------------------------------------------------------------- */

typedef struct {
    uint64_t key; /* ascending key = descending score (score_key) */
    size_t doc;   /* offset of the NUL-terminated id in the arena */
    uint32_t len;
} Line;

/* An integer whose ascending order is the scores' descending order; -0.0 and 0.0 (equal for
 * C's comparisons, as for trec_eval's qsort) get the same key. */
static inline uint64_t
score_key(double score)
{
    score += 0.0; /* -0.0 becomes 0.0 */
    uint64_t bits;
    memcpy(&bits, &score, sizeof bits);
    bits = (bits >> 63) ? ~bits : bits | (1ULL << 63);
    return ~bits;
}

typedef struct {
    Vec lines; /* Line */
    Vec arena; /* document ids */
    const char *arena_base;
    /* per query (first-appearance code) */
    int64_t *start, *count; /* its grades in `grades` */
    unsigned char *present;
    size_t *run_dup; /* strcmp-least duplicated document: offset + 1 in dup_store, 0 none */
    Vec dup_store;   /* duplicated ids, copied (the arena is reset per query) */
    Vec grades;           /* int32 */
    Vec sort_scratch;
    /* scratch */
    int32_t *seen;
    size_t seen_cap;
    long long max_ret;
    int judged_only;
} Ranker;

/* Sort a query's lines by key, then document id descending (strcmp), as trec_eval's qsort
 * in form_res_rels.c orders them: a merge sort on the integer keys (insertion sort below 16
 * lines), then each run of equal keys (tied scores, rare) by document id. */
static void
insertion_by_key(Line *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        Line x = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1].key > x.key; j--)
            a[j] = a[j - 1];
        a[j] = x;
    }
}

static int
sort_lines(Line *a, size_t n, const char *base, Vec *scratch)
{
    const size_t run = 16;
    for (size_t i = 0; i < n; i += run)
        insertion_by_key(a + i, n - i < run ? n - i : run);
    if (n > run) {
        scratch->len = 0;
        if (vec_reserve(scratch, n * sizeof(Line)) < 0)
            return -1;
        Line *from = a, *to = (Line *)scratch->p;
        for (size_t width = run; width < n; width *= 2) {
            for (size_t lo = 0; lo < n; lo += 2 * width) {
                size_t mid = lo + width < n ? lo + width : n;
                size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
                size_t i = lo, j = mid, k = lo;
                while (i < mid && j < hi) {
                    /* without a branch (the keys' order is random, a branch on it is
                     * mispredicted half the time): the index picked by a mask */
                    size_t right = from[j].key < from[i].key, mask = (size_t)0 - right;
                    to[k++] = from[(j & mask) | (i & ~mask)];
                    j += right;
                    i += 1 - right;
                }
                while (i < mid)
                    to[k++] = from[i++];
                while (j < hi)
                    to[k++] = from[j++];
            }
            Line *t = from;
            from = to;
            to = t;
        }
        if (from != a)
            memcpy(a, from, n * sizeof(Line));
    }
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j].key == a[i].key)
            j++;
        for (size_t k = i + 1; k < j; k++) { /* ties: document id descending */
            Line x = a[k];
            size_t m = k;
            for (; m > i && strcmp(base + a[m - 1].doc, base + x.doc) < 0; m--)
                a[m] = a[m - 1];
            a[m] = x;
        }
        i = j;
    }
    return 0;
}

static int
note_dup(Ranker *r, int32_t query, const char *doc, uint32_t len)
{
    size_t *offsets = r->run_dup;
    size_t old = offsets[query];
    if (old && strcmp(doc, r->dup_store.p + old - 1) >= 0)
        return 0;
    if (vec_reserve(&r->dup_store, len + 1) < 0)
        return -1;
    memcpy(r->dup_store.p + r->dup_store.len, doc, len + 1);
    offsets[query] = r->dup_store.len + 1;
    r->dup_store.len += len + 1;
    return 0;
}

/* Rank the lines held for `query` and append its grades; the lines are then dropped. */
static int
rank_query(Ranker *r, const Qrels *q, int32_t query, Line *lines, size_t n)
{
    const char *base = r->arena.p;
    if (sort_lines(lines, n, base, &r->sort_scratch) < 0)
        return -1;
    if (r->max_ret < 0)
        n = 0;
    else if ((unsigned long long)r->max_ret < n)
        n = (size_t)r->max_ret;
    if (vec_reserve(&r->grades, n * sizeof(int32_t)) < 0)
        return -1;
    size_t size = table_size(n);
    if (size > r->seen_cap) {
        free(r->seen);
        r->seen = malloc(size * sizeof *r->seen);
        if (r->seen == NULL)
            return -1;
        r->seen_cap = size;
    }
    memset(r->seen, 0xff, size * sizeof *r->seen);
    int32_t *out = (int32_t *)(r->grades.p + r->grades.len);
    size_t kept = 0;
    /* the documents' hashes, for the duplicate check among the kept ones */
    uint64_t *hashes = malloc((n ? n : 1) * sizeof *hashes);
    if (hashes == NULL)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *doc = base + lines[i].doc;
        uint32_t len = lines[i].len;
        uint64_t h = hash_bytes((const unsigned char *)doc, len);
        hashes[i] = h;
        for (size_t slot = h & (size - 1);; slot = (slot + 1) & (size - 1)) {
            int32_t other = r->seen[slot];
            if (other < 0) {
                r->seen[slot] = (int32_t)i;
                break;
            }
            if (hashes[other] == h && lines[other].len == len &&
                memcmp(base + lines[other].doc, doc, len) == 0) {
                if (note_dup(r, query, doc, len) < 0) {
                    free(hashes);
                    return -1;
                }
                break;
            }
        }
        int32_t row = find_judgment(q, query, (const unsigned char *)doc, len, h);
        long long grade = row < 0 ? NONPOOL : q->rows[row].grade;
        if (row >= 0 && grade < 0)
            grade = UNJUDGED;
        if (r->judged_only && grade < 0)
            continue;
        if (grade > INT32_MAX)
            grade = INT32_MAX; /* not reached: the caller refuses such qrels */
        out[kept++] = (int32_t)grade;
    }
    free(hashes);
    r->start[query] = (int64_t)(r->grades.len / sizeof(int32_t));
    r->count[query] = (int64_t)kept;
    r->grades.len += kept * sizeof(int32_t);
    r->present[query] = 1;
    return 0;
}

/* -- the run ------------------------------------------------------------------------------- */

enum { DONE = 0, FAILED = 1, REGROUP = 2 };

typedef struct {
    const char *reason;
    char *runid;
    size_t runid_len;
} RunState;

static int
add_line(Ranker *r, double score, Field doc)
{
    if (vec_reserve(&r->lines, sizeof(Line)) < 0 || vec_reserve(&r->arena, doc.n + 1) < 0)
        return -1;
    Line *line = (Line *)(r->lines.p + r->lines.len);
    line->key = score_key(score);
    line->doc = r->arena.len;
    line->len = (uint32_t)doc.n;
    memcpy(r->arena.p + r->arena.len, doc.s, doc.n);
    r->arena.p[r->arena.len + doc.n] = '\0';
    r->arena.len += doc.n + 1;
    r->lines.len += sizeof(Line);
    return 0;
}

/* Copy the run id `tag` into st (the last line's is the one kept). */
static int
keep_tag(RunState *st, Field tag)
{
    if (st->runid_len < tag.n + 1) {
        char *grown = realloc(st->runid, tag.n + 1);
        if (grown == NULL)
            return -1;
        st->runid = grown;
    }
    memcpy(st->runid, tag.s, tag.n);
    st->runid[tag.n] = '\0';
    st->runid_len = tag.n + 1;
    return 0;
}

/* The gathering pass: the query code of each held line */
typedef struct {
    Vec codes; /* int32 */
} Gather;

static int
read_run(const char *path, const Qrels *q, Ranker *r, int streaming, size_t block_size,
         RunState *st)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        st->reason = "cannot open the run";
        return FAILED;
    }
    char *block = malloc(block_size + SPLIT_PAD);
    Vec carry = {0};
    Gather gather = {0};
    int status = DONE;
    int32_t current = -2; /* code of the query whose lines are held; -1 unknown query */
    const unsigned char *last_qid = NULL;
    size_t last_qlen = 0;
    Vec last = {0}; /* the previous line's query id (copied: blocks are reused) */
    size_t total_lines = 0;
    Field tag = {NULL, 0};
    int tag_in_block = 0;
    unsigned char *visited = calloc(q->nq ? q->nq : 1, 1);
    if (block == NULL || visited == NULL) {
        st->reason = "out of memory";
        status = FAILED;
        goto done;
    }
    for (;;) {
        size_t got = fread(block, 1, block_size, file);
        memset(block + got, 0, SPLIT_PAD); /* split_padded() reads past the last line */
        int eof = got < block_size;
        /* the lines of carry + block */
        unsigned char *p = (unsigned char *)block, *stop = p + got;
        for (;;) {
            unsigned char *end = memchr(p, '\n', (size_t)(stop - p));
            const unsigned char *line, *line_end;
            if (end == NULL) {
                if (!eof) {
                    if (vec_reserve(&carry, (size_t)(stop - p)) < 0) {
                        st->reason = "out of memory";
                        status = FAILED;
                        goto done;
                    }
                    memcpy(carry.p + carry.len, p, (size_t)(stop - p));
                    carry.len += (size_t)(stop - p);
                    break;
                }
                if (p == stop && carry.len == 0)
                    break;
                if (carry.len || p < stop) {
                    st->reason = "no final newline in the run";
                    status = FAILED;
                    goto done;
                }
                break;
            }
            if (carry.len) {
                if (vec_reserve(&carry, (size_t)(end - p)) < 0) {
                    st->reason = "out of memory";
                    status = FAILED;
                    goto done;
                }
                memcpy(carry.p + carry.len, p, (size_t)(end - p));
                carry.len += (size_t)(end - p);
                line = (unsigned char *)carry.p;
                line_end = line + carry.len;
            } else {
                line = p;
                line_end = end;
            }
            p = end + 1;
            Field f[6];
            /* a line carried over from the previous block has no padding after it */
            int count = carry.len ? split(line, line_end, f, 6)
                                  : split_padded(line, line_end, f, 6);
            if (count < 6 || f[0].s[0] == '#') {
                st->reason = "a run line the Python reader reads";
                status = FAILED;
                goto done;
            }
            double score;
            if (!parse_score(f[4], &score)) {
                st->reason = "a score the Python reader reads";
                status = FAILED;
                goto done;
            }
            if (f[0].n > UINT32_MAX || f[2].n > UINT32_MAX) {
                st->reason = "an id too long";
                status = FAILED;
                goto done;
            }
            total_lines++;
            int same = last_qid != NULL && last_qlen == f[0].n &&
                       memcmp(last.p, f[0].s, f[0].n) == 0;
            if (!same) {
                int32_t code = find_query(q, f[0].s, f[0].n, hash_bytes(f[0].s, f[0].n));
                if (streaming && current >= 0) {
                    if (rank_query(r, q, current, (Line *)r->lines.p,
                                   r->lines.len / sizeof(Line)) < 0) {
                        st->reason = "out of memory";
                        status = FAILED;
                        goto done;
                    }
                    r->lines.len = 0;
                    r->arena.len = 0;
                }
                if (code >= 0 && visited[code] && streaming) {
                    status = REGROUP;
                    goto done;
                }
                if (code >= 0)
                    visited[code] = 1;
                current = code;
                last.len = 0;
                if (vec_reserve(&last, f[0].n + 1) < 0) {
                    st->reason = "out of memory";
                    status = FAILED;
                    goto done;
                }
                memcpy(last.p, f[0].s, f[0].n);
                last_qid = (const unsigned char *)last.p;
                last_qlen = f[0].n;
            }
            /* the run id of the last line (trec_eval keeps that one): where it is, copied
             * only before the block it is in is read over (a carried line's at once) */
            tag = f[5];
            if (carry.len && keep_tag(st, tag) < 0) {
                st->reason = "out of memory";
                status = FAILED;
                goto done;
            }
            tag_in_block = !carry.len;
            if (current >= 0) {
                if (add_line(r, score, f[2]) < 0) {
                    st->reason = "out of memory";
                    status = FAILED;
                    goto done;
                }
                if (!streaming) {
                    if (vec_reserve(&gather.codes, sizeof(int32_t)) < 0) {
                        st->reason = "out of memory";
                        status = FAILED;
                        goto done;
                    }
                    ((int32_t *)gather.codes.p)[gather.codes.len / sizeof(int32_t)] = current;
                    gather.codes.len += sizeof(int32_t);
                }
            }
            carry.len = 0;
        }
        if (tag_in_block) {
            if (keep_tag(st, tag) < 0) {
                st->reason = "out of memory";
                status = FAILED;
                goto done;
            }
            tag_in_block = 0;
        }
        if (eof)
            break;
    }
    if (ferror(file)) {
        st->reason = "cannot read the run";
        status = FAILED;
        goto done;
    }
    if (total_lines == 0) {
        st->reason = "no results";
        status = FAILED;
        goto done;
    }
    if (streaming) {
        if (current >= 0 && rank_query(r, q, current, (Line *)r->lines.p,
                                       r->lines.len / sizeof(Line)) < 0) {
            st->reason = "out of memory";
            status = FAILED;
        }
        r->lines.len = 0;
        r->arena.len = 0;
        goto done;
    }
    {
        /* every held line, grouped by query code (a counting sort: file order within one) */
        size_t n = r->lines.len / sizeof(Line), nq = q->nq;
        size_t *first = calloc(nq + 1, sizeof *first);
        Line *grouped = malloc((n ? n : 1) * sizeof *grouped);
        if (first == NULL || grouped == NULL) {
            free(first);
            free(grouped);
            st->reason = "out of memory";
            status = FAILED;
            goto done;
        }
        const int32_t *codes = (const int32_t *)gather.codes.p;
        for (size_t i = 0; i < n; i++)
            first[codes[i] + 1]++;
        for (size_t c = 0; c < nq; c++)
            first[c + 1] += first[c];
        const Line *held = (const Line *)r->lines.p;
        for (size_t i = 0; i < n; i++)
            grouped[first[codes[i]]++] = held[i];
        /* first[c] is now the end of query c's lines, first[c - 1] their start */
        vec_free(&r->lines);
        vec_free(&gather.codes);
        for (size_t c = 0; c < nq; c++) {
            size_t start = c ? first[c - 1] : 0;
            if (first[c] > start &&
                rank_query(r, q, (int32_t)c, grouped + start, first[c] - start) < 0) {
                st->reason = "out of memory";
                status = FAILED;
                break;
            }
        }
        free(first);
        free(grouped);
    }
done:
    fclose(file);
    free(block);
    free(visited);
    vec_free(&carry);
    vec_free(&last);
    vec_free(&gather.codes);
    return status;
}

/* -- the Python function ------------------------------------------------------------------- */

static void
ranker_free(Ranker *r)
{
    vec_free(&r->lines);
    vec_free(&r->arena);
    vec_free(&r->dup_store);
    vec_free(&r->grades);
    vec_free(&r->sort_scratch);
    free(r->start);
    free(r->count);
    free(r->present);
    free(r->run_dup);
    free(r->seen);
    memset(r, 0, sizeof *r);
}

static int
ranker_init(Ranker *r, size_t nq, long long max_ret, int judged_only)
{
    memset(r, 0, sizeof *r);
    size_t m = nq ? nq : 1;
    r->start = calloc(m, sizeof *r->start);
    r->count = calloc(m, sizeof *r->count);
    r->present = calloc(m, 1);
    r->run_dup = calloc(m, sizeof *r->run_dup);
    r->max_ret = max_ret;
    r->judged_only = judged_only;
    return r->start && r->count && r->present && r->run_dup ? 0 : -1;
}

/* Read both files and rank every query into r (rank()'s work, without the Python objects):
 * NULL, or the reason the files are left to the Python readers. */
static const char *
join_files(const char *qrels_path, const char *run_path, long long max_ret, int judged_only,
           int complete, size_t block_size, Qrels *q, Ranker *r, RunState *st)
{
    const char *reason = read_qrels(qrels_path, q);
    if (reason != NULL)
        return reason;
    for (size_t i = 0; i < q->n; i++)
        if (q->rows[i].grade > INT32_MAX || q->rows[i].grade < INT32_MIN)
            return "a grade beyond 32 bits";
    int status = DONE;
    for (int streaming = 1; streaming >= 0; streaming--) {
        ranker_free(r);
        free(st->runid);
        memset(st, 0, sizeof *st);
        if (ranker_init(r, q->nq, max_ret, judged_only) < 0)
            return "out of memory";
        status = read_run(run_path, q, r, streaming, block_size, st);
        if (status != REGROUP)
            break;
    }
    if (status == FAILED)
        return st->reason;
    if (complete) {
        /* a qrels query absent from the run: one stand-in document, score 1 */
        Field doc = {(const unsigned char *)BOGUS_DOC, sizeof BOGUS_DOC - 1};
        for (size_t c = 0; c < q->nq; c++) {
            if (r->present[c])
                continue;
            r->lines.len = r->arena.len = 0;
            if (add_line(r, 1.0, doc) < 0 ||
                rank_query(r, q, (int32_t)c, (Line *)r->lines.p, 1) < 0)
                return "out of memory";
            r->present[c] = 2; /* evaluated on the stand-in: not in the run */
        }
    }
    return NULL;
}

PyDoc_STRVAR(rank_doc,
             "rank(qrels_path, run_path, max_ret, judged_only, complete, block_size=4 MiB, /)\n--\n\n"
             "trec_eval's ranked grades of every qrels query (module docstring): a tuple\n"
             "(qids, rel, depth, num_ret, levels, top, present, qrels_dup, run_dup, rel_count,\n"
             "runid), rel an int64 (queries, depth) matrix padded with -3, levels the int64\n"
             "(queries, top) counts of judged grades 0..top-1, present one byte a query,\n"
             "qrels_dup and run_dup {query: bytes}; or a str saying why the files are left to\n"
             "the Python readers.");

static PyObject *
rank(PyObject *self, PyObject *args)
{
    const char *qrels_path, *run_path;
    long long max_ret;
    int judged_only, complete;
    Py_ssize_t block_size = BLOCK;
    if (!PyArg_ParseTuple(args, "ssLpp|n:rank", &qrels_path, &run_path, &max_ret, &judged_only,
                          &complete, &block_size))
        return NULL;
    if (block_size < 1) {
        PyErr_SetString(PyExc_ValueError, "block_size must be positive");
        return NULL;
    }
    Qrels q = {0};
    Ranker r = {0};
    RunState st = {0};
    const char *reason = NULL;
    PyObject *result = NULL;
    /* no Python object is touched while the files are read: another thread runs meanwhile
     * (ranking.trec_eval.prefetch imports numpy and the measures while the join reads) */
    Py_BEGIN_ALLOW_THREADS
    reason = join_files(qrels_path, run_path, max_ret, judged_only, complete,
                        (size_t)block_size, &q, &r, &st);
    Py_END_ALLOW_THREADS
    if (reason != NULL) {
        result = PyUnicode_FromString(reason);
        goto done;
    }
    {
        size_t nq = q.nq;
        int64_t depth = 0;
        long long top_grade = -1;
        for (size_t c = 0; c < nq; c++)
            if (r.count[c] > depth)
                depth = r.count[c];
        for (size_t i = 0; i < q.n; i++)
            if (q.rows[i].grade > top_grade)
                top_grade = q.rows[i].grade;
        size_t top = top_grade >= 0 ? (size_t)top_grade + 1 : 1;
        if ((double)nq * (double)depth > 1e9 || (double)nq * (double)top > 1e9) {
            result = PyUnicode_FromString("the matrices would be too large");
            goto done;
        }
        PyObject *rel = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(nq * depth * 8));
        PyObject *num_ret = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(nq * 8));
        PyObject *levels = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(nq * top * 8));
        PyObject *present = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)nq);
        PyObject *qids = PyList_New((Py_ssize_t)nq);
        PyObject *qdup = PyDict_New(), *rdup = PyDict_New();
        PyObject *runid = PyUnicode_DecodeUTF8(st.runid, (Py_ssize_t)strlen(st.runid),
                                               "surrogateescape");
        if (!rel || !num_ret || !levels || !present || !qids || !qdup || !rdup || !runid) {
            Py_XDECREF(rel);
            Py_XDECREF(num_ret);
            Py_XDECREF(levels);
            Py_XDECREF(present);
            Py_XDECREF(qids);
            Py_XDECREF(qdup);
            Py_XDECREF(rdup);
            Py_XDECREF(runid);
            goto done;
        }
        int64_t *relm = (int64_t *)PyByteArray_AS_STRING(rel);
        int64_t *ret = (int64_t *)PyByteArray_AS_STRING(num_ret);
        int64_t *lev = (int64_t *)PyByteArray_AS_STRING(levels);
        char *pres = PyByteArray_AS_STRING(present);
        const int32_t *grades = (const int32_t *)r.grades.p;
        const size_t *dup_offsets = r.run_dup;
        memset(lev, 0, nq * top * 8);
        for (size_t i = 0; i < q.n; i++)
            if (q.rows[i].grade >= 0)
                lev[(size_t)q.sorted_of[q.rows[i].query] * top + (size_t)q.rows[i].grade] += 1;
        int failed = 0;
        for (size_t c = 0; c < nq && !failed; c++) {
            size_t s = (size_t)q.sorted_of[c];
            int64_t *row = relm + s * depth;
            int64_t k = r.count[c];
            const int32_t *g = grades ? grades + r.start[c] : NULL;
            for (int64_t i = 0; i < k; i++)
                row[i] = g[i];
            for (int64_t i = k; i < depth; i++)
                row[i] = PAD;
            ret[s] = k;
            pres[s] = (char)(r.present[c] == 1);
            PyObject *name =
                PyUnicode_DecodeUTF8(q.qids[c], (Py_ssize_t)q.qlen[c], "surrogateescape");
            if (name == NULL) {
                failed = 1;
                break;
            }
            PyList_SET_ITEM(qids, (Py_ssize_t)s, name);
            PyObject *key = PyLong_FromSize_t(s);
            if (key == NULL) {
                failed = 1;
                break;
            }
            if (q.qrels_dup[c] != NULL) {
                PyObject *v = PyBytes_FromString(q.qrels_dup[c]);
                if (v == NULL || PyDict_SetItem(qdup, key, v) < 0)
                    failed = 1;
                Py_XDECREF(v);
            }
            if (!failed && dup_offsets[c]) {
                PyObject *v = PyBytes_FromString(r.dup_store.p + dup_offsets[c] - 1);
                if (v == NULL || PyDict_SetItem(rdup, key, v) < 0)
                    failed = 1;
                Py_XDECREF(v);
            }
            Py_DECREF(key);
        }
        if (failed) {
            Py_DECREF(rel);
            Py_DECREF(num_ret);
            Py_DECREF(levels);
            Py_DECREF(present);
            Py_DECREF(qids);
            Py_DECREF(qdup);
            Py_DECREF(rdup);
            Py_DECREF(runid);
            goto done;
        }
        result = Py_BuildValue("(NNLNNnNNNLN)", qids, rel, (long long)depth, num_ret, levels,
                               (Py_ssize_t)top, present, qdup, rdup, q.rel_count, runid);
    }
done:
    qrels_free(&q);
    ranker_free(&r);
    free(st.runid);
    return result;
}

/* -- bpref, infAP, binG: one walk of each ranking --------------------------------------- */

#define INFAP_EPSILON 0.00001

PyDoc_STRVAR(judged_doc,
             "judged_measures(rel, num_ret, num_rel, num_nonrel, level, /)\n--\n\n"
             "bpref, infAP and binG of every query (ranking.trec_eval.m_judged, whose numpy\n"
             "code this follows operation for operation: the same doubles) as one float64\n"
             "buffer of (queries, 3); rel the int64 (queries, depth) grades, the others int64\n"
             "one a query.");

static PyObject *
judged_measures(PyObject *self, PyObject *args)
{
    Py_buffer rel, ret, nrel, nnon;
    long long level;
    if (!PyArg_ParseTuple(args, "y*y*y*y*L:judged_measures", &rel, &ret, &nrel, &nnon, &level))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nq = ret.len / 8;
    if (nrel.len != ret.len || nnon.len != ret.len || (nq && rel.len % (nq * 8))) {
        PyErr_SetString(PyExc_ValueError, "judged_measures: shapes do not agree");
        goto done;
    }
    Py_ssize_t depth = nq ? rel.len / (nq * 8) : 0;
    result = PyByteArray_FromStringAndSize(NULL, nq * 3 * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = rel.buf, *num_ret = ret.buf, *num_rel = nrel.buf,
                  *num_nonrel = nnon.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        int64_t n = num_ret[q] < depth ? num_ret[q] : depth, R = num_rel[q];
        int64_t den = num_nonrel[q] < R ? num_nonrel[q] : R;
        int64_t nonrel = 0, rel_seen = 0, unjudged = 0, any = 0;
        double bpref = 0.0, infap = 0.0, bing = 0.0;
        for (int64_t i = 0; i < n; i++) {
            int64_t grade = g[i];
            if (grade >= level) { /* relevant at -l (binG), judged if >= 0 (bpref, infAP) */
                any++;
                /* binG: 1 / log2(2 + the non-relevant ones above) */
                bing += 1.0 / log2((double)(3 + i - any));
                if (grade >= 0) {
                    int64_t capped = nonrel < R ? nonrel : R;
                    bpref += nonrel > 0 ? 1.0 - (double)capped / (double)den : 1.0;
                    double term;
                    if (i == 0) {
                        term = 1.0;
                    } else {
                        double fj = (double)i;
                        term = 1.0 / (fj + 1.0) +
                               (fj / (fj + 1.0)) * ((double)(rel_seen + nonrel + unjudged) / fj) *
                                   (((double)rel_seen + INFAP_EPSILON) /
                                    ((double)(rel_seen + nonrel) + 2 * INFAP_EPSILON));
                    }
                    infap += term;
                    rel_seen++;
                }
            } else if (grade >= 0) {
                nonrel++;
            }
            if (grade == UNJUDGED)
                unjudged++;
        }
        out[3 * q] = R > 0 ? bpref / (double)R : bpref;
        out[3 * q + 1] = R > 0 ? infap / (double)R : infap;
        out[3 * q + 2] = any > 0 ? bing / (double)R : 0.0;
    }
done:
    PyBuffer_Release(&rel);
    PyBuffer_Release(&ret);
    PyBuffer_Release(&nrel);
    PyBuffer_Release(&nnon);
    return result;
}

/* -- the graded measures (ranking.trec_eval.m_gain) -------------------------------------- */

/* numpy's cumulative sum: the first value itself, then each added in order */
#define RUNNING(acc, i, x) ((acc) = (i) == 0 ? (x) : (acc) + (x))

/* the value of a running sum of width w after k positions (m_gain._last) */
static inline double
after(const double *cum, int64_t w, int64_t k)
{
    if (w == 0 || k <= 0)
        return 0.0;
    return cum[k - 1 < w - 1 ? k - 1 : w - 1];
}

/* m_gain._cum_dcg of one row: Σ g_i / disc_i, a zero gain adding 0.0 */
static void
running_dcg(const double *g, const double *disc, int64_t w, double *out)
{
    double acc = 0.0;
    for (int64_t i = 0; i < w; i++) {
        double term = g[i] != 0 ? g[i] / disc[i] : 0.0;
        out[i] = RUNNING(acc, i, term);
    }
}

PyDoc_STRVAR(graded_doc,
             "graded_measures(gains, ideal, n_ideal, num_ret, num_rel, disc, /)\n--\n\n"
             "dcg, ideal_dcg, G, ndcg_rel and Rndcg of every query (ranking.trec_eval.m_gain,\n"
             "whose numpy code this follows operation for operation: the same doubles) as one\n"
             "float64 buffer of (queries, 5); gains the float64 (queries, depth) result gains,\n"
             "ideal the float64 (queries, size) ideal gains, n_ideal, num_ret and num_rel int64\n"
             "one a query, disc the float64 log2(i + 2) of positions 0 .. max(depth, size) - 1.");

static PyObject *
graded_measures(PyObject *self, PyObject *args)
{
    Py_buffer gb, ib, nib, retb, relb, db;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*:graded_measures", &gb, &ib, &nib, &retb, &relb,
                          &db))
        return NULL;
    PyObject *result = NULL;
    double *rd = NULL;
    Py_ssize_t nq = retb.len / 8;
    Py_ssize_t depth = nq ? gb.len / (nq * 8) : 0, size = nq ? ib.len / (nq * 8) : 0;
    if (nib.len != retb.len || relb.len != retb.len ||
        (nq && (gb.len % (nq * 8) || ib.len % (nq * 8))) ||
        db.len / 8 < (depth > size ? depth : size)) {
        PyErr_SetString(PyExc_ValueError, "graded_measures: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * 5 * 8);
    rd = malloc(((size_t)depth + (size_t)size + 1) * sizeof(double));
    if (result == NULL || rd == NULL) {
        Py_CLEAR(result);
        if (rd == NULL)
            PyErr_NoMemory();
        goto done;
    }
    double *idc = rd + depth;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const double *gains = gb.buf, *ideals = ib.buf, *disc = db.buf;
    const int64_t *n_ideal = nib.buf, *num_ret = retb.buf, *num_rel = relb.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const double *g = gains + q * depth, *ideal = ideals + q * size;
        int64_t nr = num_ret[q], ni = n_ideal[q];
        running_dcg(g, disc, depth, rd);
        double acc = 0.0, sum_ideal = 0.0;
        for (Py_ssize_t i = 0; i < size; i++) {
            double ig = ideal[i] > 0 ? ideal[i] : 0.0;
            double term = ig != 0 ? ig / disc[i] : 0.0;
            idc[i] = RUNNING(acc, i, term);
            RUNNING(sum_ideal, i, ig);
        }
        double dcg = after(rd, depth, nr), idcg = after(idc, size, ni);
        /* G: gains over log2(2 + ideal cost so far - gain so far) */
        double sum_cost = 0.0, sum_results = 0.0, g_cum = 0.0, g_total = 0.0;
        /* ndcg_rel: the ndcg at each retrieved document of positive gain */
        double r_cum = 0.0, r_total = 0.0;
        int64_t counted = 0;
        for (Py_ssize_t i = 0; i < depth; i++) {
            double cost = ideal[i] >= 1.0 ? ideal[i] : 1.0;
            RUNNING(sum_cost, i, cost);
            RUNNING(sum_results, i, g[i]);
            double term = g[i] != 0 ? g[i] / log2((2 + sum_cost) - sum_results) : 0.0;
            RUNNING(g_cum, i, term);
            int64_t at = i < ni - 1 ? i : ni - 1;
            double id_at = ni > 0 ? idc[at > 0 ? at : 0] : 0.0;
            double rterm = g[i] > 0 ? rd[i] / id_at : 0.0;
            RUNNING(r_cum, i, rterm);
            counted += g[i] > 0;
            if (i == (nr - 1 < depth - 1 ? nr - 1 : depth - 1)) {
                g_total = g_cum;
                r_total = r_cum;
            }
        }
        if (nr <= 0)
            g_total = r_total = 0.0;
        r_total = r_total + (double)(ni - counted) * dcg / idcg;
        /* Rndcg: the ndcg where the ideal gain changes */
        double n_total = 0.0;
        int64_t count = 0;
        for (Py_ssize_t j = 0; j + 1 < size; j++) {
            int64_t k = j + 1 < nr ? j + 1 : nr;
            double rd_b = depth ? after(rd, depth, k) : 0.0, id_b = idc[j];
            int chosen = ideal[j + 1] != ideal[j] && id_b > 0;
            double term = chosen ? rd_b / id_b : 0.0;
            RUNNING(n_total, j, term);
            count += chosen;
        }
        if (nr >= ni + 2 && idcg > 0) {
            n_total = n_total + dcg / idcg;
            count++;
        }
        out[5 * q] = dcg;
        out[5 * q + 1] = idcg;
        out[5 * q + 2] = sum_ideal > 0 ? g_total / sum_ideal : 0.0;
        out[5 * q + 3] = r_total > 0 ? r_total / (double)ni : 0.0;
        out[5 * q + 4] = num_rel[q] > 0 ? n_total / (double)count : 0.0;
    }
done:
    free(rd);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&nib);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&relb);
    PyBuffer_Release(&db);
    return result;
}

PyDoc_STRVAR(cut_doc,
             "ndcg_cuts(gains, ideal, n_ideal, num_ret, disc, cutoffs, /)\n--\n\n"
             "ndcg_cut at each cutoff of every query (ranking.trec_eval.m_gain.ndcg_cut, the\n"
             "operations of its numpy code in the same order) as one float64 buffer of\n"
             "(queries, cutoffs); the arrays as graded_measures', cutoffs int64.");

static PyObject *
ndcg_cuts(PyObject *self, PyObject *args)
{
    Py_buffer gb, ib, nib, retb, db, cb;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*:ndcg_cuts", &gb, &ib, &nib, &retb, &db, &cb))
        return NULL;
    PyObject *result = NULL;
    double *rd = NULL;
    Py_ssize_t nq = retb.len / 8, nc = cb.len / 8;
    Py_ssize_t depth = nq ? gb.len / (nq * 8) : 0, size = nq ? ib.len / (nq * 8) : 0;
    if (nib.len != retb.len || (nq && (gb.len % (nq * 8) || ib.len % (nq * 8))) ||
        db.len / 8 < (depth > size ? depth : size)) {
        PyErr_SetString(PyExc_ValueError, "ndcg_cuts: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * nc * 8);
    rd = malloc(((size_t)depth + (size_t)size + 1) * sizeof(double));
    if (result == NULL || rd == NULL) {
        Py_CLEAR(result);
        if (rd == NULL)
            PyErr_NoMemory();
        goto done;
    }
    double *idc = rd + depth;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const double *gains = gb.buf, *ideals = ib.buf, *disc = db.buf;
    const int64_t *n_ideal = nib.buf, *num_ret = retb.buf, *cuts = cb.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const double *ideal = ideals + q * size;
        int64_t nr = num_ret[q], ni = n_ideal[q];
        running_dcg(gains + q * depth, disc, depth, rd);
        double acc = 0.0;
        for (Py_ssize_t i = 0; i < size; i++) {
            double ig = ideal[i] > 0 ? ideal[i] : 0.0;
            double term = ig != 0 ? ig / disc[i] : 0.0;
            idc[i] = RUNNING(acc, i, term);
        }
        for (Py_ssize_t j = 0; j < nc; j++) {
            int64_t k = cuts[j];
            double dcg = after(rd, depth, k < nr ? k : nr);
            double idcg = after(idc, size, k < ni ? k : ni);
            out[nc * q + j] = idcg > 0 ? dcg / idcg : dcg;
        }
    }
done:
    free(rd);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&nib);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&db);
    PyBuffer_Release(&cb);
    return result;
}

/* -- rbp and rbp_resid (ranking.trec_eval.m_gain) -------------------------------------- */

PyDoc_STRVAR(rbp_doc,
             "rbp(rel, num_ret, num_rel_levels, table, low, param_listed, rescale, low_q,\n"
             "    high_q, powers, p, /)\n--\n\n"
             "rbp of every query (ranking.trec_eval.m_gain.rbp, whose numpy code this follows\n"
             "operation for operation: the same doubles) as one float64 buffer of one value a\n"
             "query; rel the int64 (queries, depth) grades, num_ret and num_rel_levels int64\n"
             "one a query, table the float64 gain of each grade low .. high (grades are clipped\n"
             "to that range), param_listed one byte a grade of the table (a level given as a\n"
             "parameter), rescale one byte a query, low_q and high_q its float64 gain range,\n"
             "powers the float64 p^i of positions 0 .. depth.");

static PyObject *
rbp(PyObject *self, PyObject *args)
{
    Py_buffer relb, retb, nrlb, tb, plb, rsb, lob, hib, pwb;
    long long low;
    double p;
    if (!PyArg_ParseTuple(args, "y*y*y*y*Ly*y*y*y*y*d:rbp", &relb, &retb, &nrlb, &tb, &low, &plb,
                          &rsb, &lob, &hib, &pwb, &p))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nq = retb.len / 8, width = tb.len / 8;
    Py_ssize_t depth = nq ? relb.len / (nq * 8) : 0;
    if (width == 0 || plb.len != width || (nq && relb.len % (nq * 8)) || nrlb.len != nq * 8 ||
        rsb.len != nq || lob.len != nq * 8 || hib.len != nq * 8 || pwb.len < (depth + 1) * 8) {
        PyErr_SetString(PyExc_ValueError, "rbp: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = relb.buf, *num_ret = retb.buf, *nrl = nrlb.buf;
    const double *table = tb.buf, *low_q = lob.buf, *high_q = hib.buf, *powers = pwb.buf;
    const unsigned char *param_listed = plb.buf, *rescale = rsb.buf;
    long long high = low + (long long)width - 1;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        int64_t nr = num_ret[q] < depth ? num_ret[q] : depth;
        double lq = low_q[q], span = high_q[q] - low_q[q], acc = 0.0;
        for (int64_t i = 0; i < nr; i++) {
            long long grade = g[i] < low ? low : g[i] > high ? high : g[i];
            double gain = table[grade - low];
            /* a grade missing from the query's gain list has gain 0, not rescaled */
            int listed = (grade >= 0 && grade < nrl[q]) || param_listed[grade - low];
            if (rescale[q] && listed)
                gain = (gain - lq) / span;
            double term = gain != 0 ? gain * powers[i] : 0.0;
            RUNNING(acc, i, term);
        }
        out[q] = (1.0 - p) * (nr > 0 ? acc : 0.0);
    }
done:
    PyBuffer_Release(&relb);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&nrlb);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&plb);
    PyBuffer_Release(&rsb);
    PyBuffer_Release(&lob);
    PyBuffer_Release(&hib);
    PyBuffer_Release(&pwb);
    return result;
}

PyDoc_STRVAR(resid_doc,
             "rbp_resid(rel, num_ret, powers, p, /)\n--\n\n"
             "rbp_resid of every query (ranking.trec_eval.m_gain.rbp_resid, whose numpy code\n"
             "this follows: the same doubles) as one float64 buffer of one value a query; rel\n"
             "the int64 (queries, depth) grades, num_ret int64 one a query, powers the float64\n"
             "p^i of positions 0 .. depth.");

static PyObject *
rbp_resid(PyObject *self, PyObject *args)
{
    Py_buffer relb, retb, pwb;
    double p;
    if (!PyArg_ParseTuple(args, "y*y*y*d:rbp_resid", &relb, &retb, &pwb, &p))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nq = retb.len / 8;
    Py_ssize_t depth = nq ? relb.len / (nq * 8) : 0;
    if ((nq && relb.len % (nq * 8)) || pwb.len < (depth + 1) * 8) {
        PyErr_SetString(PyExc_ValueError, "rbp_resid: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = relb.buf, *num_ret = retb.buf;
    const double *powers = pwb.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        int64_t nr = num_ret[q] < depth ? num_ret[q] : depth;
        double acc = 0.0;
        int any = 0;
        for (int64_t i = 0; i < nr; i++) {
            int unjudged = g[i] < 0;
            any |= unjudged;
            RUNNING(acc, i, unjudged ? powers[i] : 0.0);
        }
        if (num_ret[q] < 0 || num_ret[q] > depth) { /* outside powers (a batch never is) */
            PyErr_SetString(PyExc_IndexError, "rbp_resid: num_ret beyond the depth");
            Py_CLEAR(result);
            goto done;
        }
        out[q] = any ? powers[num_ret[q]] + (1.0 - p) * (nr > 0 ? acc : 0.0) : 0.0;
    }
done:
    PyBuffer_Release(&relb);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&pwb);
    return result;
}

/* -- gains by position and the ideal rankings (ranking.trec_eval.gains) ------------------ */

PyDoc_STRVAR(gain_rows_doc,
             "gain_rows(rel, num_ret, table, low, /)\n--\n\n"
             "ranking.trec_eval.gains.result_gains: the float64 (queries, depth) gain of each\n"
             "retrieved document, table[clip(grade, low, high) - low] (high = low + len - 1),\n"
             "0.0 past a query's num_ret; rel the int64 (queries, depth) grades, num_ret int64\n"
             "one a query.");

static PyObject *
gain_rows(PyObject *self, PyObject *args)
{
    Py_buffer relb, retb, tb;
    long long low;
    if (!PyArg_ParseTuple(args, "y*y*y*L:gain_rows", &relb, &retb, &tb, &low))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nq = retb.len / 8, width = tb.len / 8;
    Py_ssize_t depth = nq ? relb.len / (nq * 8) : 0;
    if (width == 0 || (nq && relb.len % (nq * 8))) {
        PyErr_SetString(PyExc_ValueError, "gain_rows: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * depth * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = relb.buf, *num_ret = retb.buf;
    const double *table = tb.buf;
    long long high = low + (long long)width - 1;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        double *row = out + q * depth;
        int64_t nr = num_ret[q] < depth ? num_ret[q] : depth, i = 0;
        for (; i < nr; i++) {
            long long grade = g[i] < low ? low : g[i] > high ? high : g[i];
            row[i] = table[grade - low];
        }
        for (; i < depth; i++)
            row[i] = 0.0;
    }
done:
    PyBuffer_Release(&relb);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&tb);
    return result;
}

PyDoc_STRVAR(ideal_rows_doc,
             "ideal_rows(rel_levels, grades, levels, values, width, /)\n--\n\n"
             "ranking.trec_eval.gains.ideal_matrix: (ideal, n_ideal, size), ideal the float64\n"
             "(queries, size) ideal gains (each gain-list entry's value repeated as many times\n"
             "as the query has judged documents of its grade, from the last entry down, up to\n"
             "the first entry of gain <= 0 that has documents; 0.0 past them), n_ideal their\n"
             "int64 count a query, size max(width, max n_ideal + 1); rel_levels the int64\n"
             "(queries, grades) judgment counts, levels and values the entries (int64,\n"
             "float64).");

static PyObject *
ideal_rows(PyObject *self, PyObject *args)
{
    Py_buffer lvb, eb, vb;
    Py_ssize_t top, width;
    if (!PyArg_ParseTuple(args, "y*ny*y*n:ideal_rows", &lvb, &top, &eb, &vb, &width))
        return NULL;
    PyObject *result = NULL, *ideal = NULL, *counts = NULL;
    Py_ssize_t ne = eb.len / 8, nq = top > 0 ? lvb.len / (top * 8) : 0;
    if (top <= 0 || lvb.len % (top * 8) || vb.len != eb.len || width < 0) {
        PyErr_SetString(PyExc_ValueError, "ideal_rows: shapes do not agree");
        goto done;
    }
    const int64_t *rel_levels = lvb.buf, *levels = eb.buf;
    const double *values = vb.buf;
    counts = PyByteArray_FromStringAndSize(NULL, nq * 8);
    if (counts == NULL)
        goto done;
    int64_t *n_ideal = (int64_t *)PyByteArray_AS_STRING(counts);
    int64_t longest = 0;
    for (Py_ssize_t q = 0; q < nq; q++) { /* the entries from the last down, to the stop */
        int64_t total = 0;
        for (Py_ssize_t e = ne - 1; e >= 0; e--) {
            int64_t c = levels[e] >= 0 && levels[e] < top ? rel_levels[q * top + levels[e]] : 0;
            if (c > 0 && values[e] <= 0)
                break;
            total += c;
        }
        n_ideal[q] = total;
        if (total > longest)
            longest = total;
    }
    Py_ssize_t size = width > longest + 1 ? width : (Py_ssize_t)longest + 1;
    ideal = PyByteArray_FromStringAndSize(NULL, nq * size * 8);
    if (ideal == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(ideal);
    for (Py_ssize_t q = 0; q < nq; q++) {
        double *row = out + q * size;
        int64_t at = 0;
        for (Py_ssize_t e = ne - 1; e >= 0 && at < n_ideal[q]; e--) {
            int64_t c = levels[e] >= 0 && levels[e] < top ? rel_levels[q * top + levels[e]] : 0;
            for (int64_t k = 0; k < c && at < n_ideal[q]; k++)
                row[at++] = values[e];
        }
        for (; at < size; at++)
            row[at] = 0.0;
    }
    result = Py_BuildValue("(OOn)", ideal, counts, size);
done:
    PyBuffer_Release(&lvb);
    PyBuffer_Release(&eb);
    PyBuffer_Release(&vb);
    Py_XDECREF(ideal);
    Py_XDECREF(counts);
    return result;
}

/* -- average precision's running sums and the geometric means' logs (m_cutoffs, m_judged) -- */

PyDoc_STRVAR(ap_doc,
             "ap_sums(rel, num_ret, level, /)\n--\n\n"
             "ranking.trec_eval.m_cutoffs.ap_sums: the float64 (queries, depth) running sums\n"
             "of c(i)/i over the relevant ranks (grade >= level among the first num_ret), as\n"
             "its numpy code adds them; rel the int64 (queries, depth) grades, num_ret int64\n"
             "one a query.");

static PyObject *
ap_sums(PyObject *self, PyObject *args)
{
    Py_buffer relb, retb;
    long long level;
    if (!PyArg_ParseTuple(args, "y*y*L:ap_sums", &relb, &retb, &level))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t nq = retb.len / 8;
    Py_ssize_t depth = nq ? relb.len / (nq * 8) : 0;
    if (nq && relb.len % (nq * 8)) {
        PyErr_SetString(PyExc_ValueError, "ap_sums: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * depth * 8);
    if (result == NULL)
        goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = relb.buf, *num_ret = retb.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        double *row = out + q * depth, acc = 0.0;
        int64_t found = 0;
        for (Py_ssize_t i = 0; i < depth; i++) {
            int relevant = i < num_ret[q] && g[i] >= level;
            found += relevant;
            double term = relevant ? (double)found / (double)(i + 1) : 0.0;
            row[i] = RUNNING(acc, i, term);
        }
    }
done:
    PyBuffer_Release(&relb);
    PyBuffer_Release(&retb);
    return result;
}

PyDoc_STRVAR(log_floor_doc,
             "log_floor(values, floor, /)\n--\n\n"
             "ranking.trec_eval.m_judged.log_floor: libm's log of each float64 value, floor\n"
             "where the value is not above it (NaN included), as one float64 buffer.");

static PyObject *
log_floor(PyObject *self, PyObject *args)
{
    Py_buffer vb;
    double floor_value;
    if (!PyArg_ParseTuple(args, "y*d:log_floor", &vb, &floor_value))
        return NULL;
    Py_ssize_t n = vb.len / 8;
    PyObject *result = PyByteArray_FromStringAndSize(NULL, n * 8);
    if (result != NULL) {
        double *out = (double *)PyByteArray_AS_STRING(result);
        const double *v = vb.buf;
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = log(v[i] > floor_value ? v[i] : floor_value);
    }
    PyBuffer_Release(&vb);
    return result;
}

/* -- interpolated precision at recall points (ranking.trec_eval.m_interp) ---------------- */

PyDoc_STRVAR(iprec_doc,
             "iprec_at_recall(rel, num_ret, level, targets, /)\n--\n\n"
             "iprec_at_recall of every query (ranking.trec_eval.m_interp, whose numpy code\n"
             "this follows: the same doubles) as one float64 buffer of (queries, points); rel\n"
             "the int64 (queries, depth) grades (depth > 0), num_ret int64 one a query,\n"
             "targets the int64 (queries, points) ranks m = lround(x R) of the relevant\n"
             "document each point looks at.");

static PyObject *
iprec_at_recall(PyObject *self, PyObject *args)
{
    Py_buffer relb, retb, tb;
    long long level;
    if (!PyArg_ParseTuple(args, "y*y*Ly*:iprec_at_recall", &relb, &retb, &level, &tb))
        return NULL;
    PyObject *result = NULL;
    double *interp = NULL;
    int64_t *relpos = NULL;
    Py_ssize_t nq = retb.len / 8;
    Py_ssize_t depth = nq ? relb.len / (nq * 8) : 0, np_ = nq ? tb.len / (nq * 8) : 0;
    if (nq && (relb.len % (nq * 8) || tb.len % (nq * 8) || depth == 0)) {
        PyErr_SetString(PyExc_ValueError, "iprec_at_recall: shapes do not agree");
        goto done;
    }
    result = PyByteArray_FromStringAndSize(NULL, nq * np_ * 8);
    interp = malloc(((size_t)depth + 1) * sizeof(double));
    relpos = malloc(((size_t)depth + 1) * sizeof(int64_t));
    if (result == NULL || interp == NULL || relpos == NULL) {
        Py_CLEAR(result);
        if (interp == NULL || relpos == NULL)
            PyErr_NoMemory();
        goto done;
    }
    double *out = (double *)PyByteArray_AS_STRING(result);
    const int64_t *grades = relb.buf, *num_ret = retb.buf, *targets = tb.buf;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t *g = grades + q * depth;
        int64_t ret = num_ret[q], n = ret < depth ? ret : depth, rel_ret = 0;
        /* the precision after each rank (cumrel / rank), then its maximum from there on */
        for (int64_t i = 0; i < n; i++) {
            if (g[i] >= level)
                relpos[rel_ret++] = i;
            interp[i] = (double)rel_ret / (double)(i + 1);
        }
        for (int64_t i = n - 2; i >= 0; i--)
            if (interp[i + 1] > interp[i])
                interp[i] = interp[i + 1];
        for (Py_ssize_t j = 0; j < np_; j++) {
            int64_t m = targets[q * np_ + j];
            double value;
            if (m > rel_ret)
                value = 0.0;
            else if (rel_ret == 0) /* nothing relevant retrieved: a / ret (nan for ret 0) */
                value = (double)rel_ret / (double)ret;
            else
                value = interp[relpos[(m > 1 ? m : 1) - 1]];
            out[q * np_ + j] = value;
        }
    }
done:
    free(interp);
    free(relpos);
    PyBuffer_Release(&relb);
    PyBuffer_Release(&retb);
    PyBuffer_Release(&tb);
    return result;
}

/* -- whether a qrels file's grades are integer text (ranking.trec_eval.strict_text) ------ */

/* one line ending before text[end]: its last field is 1 to LONGEST_GRADE digits or signs
 * after a space or tab */

static int
integer_last_field(const unsigned char *text, size_t end)
{
    for (size_t back = 1; back <= LONGEST_GRADE + 1; back++) {
        if (back > end)
            return 0;
        unsigned char c = text[end - back];
        int digit = (c >= '0' && c <= '9') || c == '+' || c == '-';
        if (digit)
            continue;
        return back > 1 && (c == ' ' || c == '\t');
    }
    return 0;
}

PyDoc_STRVAR(integers_doc,
             "integer_grades(path, /)\n--\n\n"
             "ranking.trec_eval.strict_text.last_fields_are_integers in one pass in C: True\n"
             "when every line's last field is 1 to 8 digits or signs after a space or tab (the\n"
             "last line may lack its newline); False otherwise, for an empty file or one that\n"
             "cannot be read.");

static PyObject *
integer_grades(PyObject *self, PyObject *args)
{
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&:integer_grades", PyUnicode_FSConverter, &path_obj))
        return NULL;
    int ok = 0;
    unsigned char *text = NULL;
    size_t len = 0, cap = 0;
    FILE *f = NULL;
    Py_BEGIN_ALLOW_THREADS
    f = fopen(PyBytes_AS_STRING(path_obj), "rb");
    if (f != NULL) {
        int failed = 0;
        for (;;) {
            if (len == cap) {
                size_t grown = cap ? 2 * cap : (size_t)1 << 22;
                unsigned char *bigger = realloc(text, grown);
                if (bigger == NULL) {
                    failed = 1;
                    break;
                }
                text = bigger;
                cap = grown;
            }
            size_t got = fread(text + len, 1, cap - len, f);
            len += got;
            if (got == 0) {
                failed = ferror(f);
                break;
            }
        }
        fclose(f);
        if (!failed && len > 0) {
            ok = 1;
            size_t start = 0;
            const unsigned char *nl;
            while (ok && start < len && (nl = memchr(text + start, '\n', len - start))) {
                size_t i = (size_t)(nl - text);
                ok = integer_last_field(text, i);
                start = i + 1;
            }
            if (ok && start < len) /* a last line without its newline */
                ok = integer_last_field(text, len);
        }
    }
    Py_END_ALLOW_THREADS
    free(text);
    Py_DECREF(path_obj);
    return PyBool_FromLong(ok);
}

/* -- the per-query lines (-q) ---------------------------------------------------------- */

PyDoc_STRVAR(lines_doc,
             "query_lines(qids, columns, start, stop, /)\n--\n\n"
             "trec_eval's -q lines of queries start..stop-1, query by query, each query's\n"
             "columns in order, as one str\n"
             "without the final newline: a column is (prefix, kind, values), prefix the padded\n"
             "measure name, kind 0 for printf's %6.4f of a float64 buffer (trec_eval's own\n"
             "format, so nan, -nan and inf print as its printf prints them), 1 for a count (C's\n"
             "(long) of the double; a value not finite prints LONG_MIN, as on x86-64), 2 for\n"
             "relstring (values a list of str, printed between quotes). None when a count is\n"
             "beyond 64 bits (the Python formatter prints it).");

typedef struct {
    const char *prefix;
    Py_ssize_t prefix_len;
    int kind;
    Py_buffer values;
    PyObject *strings;
} Column;

static int
put(Vec *out, const char *s, size_t n)
{
    if (vec_reserve(out, n) < 0)
        return -1;
    memcpy(out->p + out->len, s, n);
    out->len += n;
    return 0;
}

static PyObject *
query_lines(PyObject *self, PyObject *args)
{
    PyObject *qids, *columns;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "O!O!nn:query_lines", &PyList_Type, &qids, &PyList_Type,
                          &columns, &start, &stop))
        return NULL;
    Py_ssize_t nq = PyList_GET_SIZE(qids), nc = PyList_GET_SIZE(columns);
    if (start < 0 || stop > nq || start > stop) {
        PyErr_SetString(PyExc_ValueError, "start..stop: a range of the queries");
        return NULL;
    }
    Column *cols = calloc(nc ? (size_t)nc : 1, sizeof *cols);
    Vec out = {0};
    PyObject *result = NULL;
    Py_ssize_t ready = 0;
    if (cols == NULL)
        return PyErr_NoMemory();
    for (; ready < nc; ready++) {
        Column *c = &cols[ready];
        PyObject *spec = PyList_GET_ITEM(columns, ready);
        PyObject *prefix, *values;
        if (!PyArg_ParseTuple(spec, "UiO", &prefix, &c->kind, &values))
            goto done;
        c->prefix = PyUnicode_AsUTF8AndSize(prefix, &c->prefix_len);
        if (c->prefix == NULL)
            goto done;
        if (c->kind == 2) {
            if (!PyList_Check(values) || PyList_GET_SIZE(values) != nq) {
                PyErr_SetString(PyExc_ValueError, "relstring: one str a query");
                goto done;
            }
            c->strings = values;
        } else {
            if (PyObject_GetBuffer(values, &c->values, PyBUF_C_CONTIGUOUS) < 0)
                goto done;
            if (c->values.len != nq * 8) {
                PyBuffer_Release(&c->values);
                PyErr_SetString(PyExc_ValueError, "values: one float64 a query");
                goto done;
            }
        }
    }
    for (Py_ssize_t q = start; q < stop; q++) {
        Py_ssize_t qlen;
        const char *qid = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(qids, q), &qlen);
        if (qid == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < nc; k++) {
            Column *c = &cols[k];
            char number[64];
            int n = 0;
            const char *text = number;
            Py_ssize_t text_len;
            if (c->kind == 2) {
                text = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(c->strings, q), &text_len);
                if (text == NULL)
                    goto done;
            } else {
                double v = ((const double *)c->values.buf)[q];
                if (c->kind == 1) {
                    if (!isfinite(v))
                        n = snprintf(number, sizeof number, "%lld", (long long)INT64_MIN);
                    else if (fabs(v) < 9.2e18)
                        n = snprintf(number, sizeof number, "%lld", (long long)v);
                    else {
                        result = Py_None; /* the Python formatter prints big integers */
                        Py_INCREF(result);
                        goto done;
                    }
                } else {
                    n = snprintf(number, sizeof number, "%6.4f", v);
                }
                if (n < 0 || n >= (int)sizeof number) {
                    result = Py_None;
                    Py_INCREF(result);
                    goto done;
                }
                text_len = n;
            }
            if (put(&out, c->prefix, (size_t)c->prefix_len) < 0 || put(&out, "\t", 1) < 0 ||
                put(&out, qid, (size_t)qlen) < 0 || put(&out, "\t", 1) < 0 ||
                (c->kind == 2 && put(&out, "'", 1) < 0) ||
                put(&out, text, (size_t)text_len) < 0 ||
                (c->kind == 2 && put(&out, "'", 1) < 0) || put(&out, "\n", 1) < 0) {
                PyErr_NoMemory();
                goto done;
            }
        }
    }
    result = PyUnicode_DecodeUTF8(out.p ? out.p : "", out.len ? (Py_ssize_t)out.len - 1 : 0,
                                  "strict");
done:
    for (Py_ssize_t k = 0; k < ready && k < nc; k++)
        if (cols[k].kind != 2 && cols[k].values.buf != NULL)
            PyBuffer_Release(&cols[k].values);
    free(cols);
    vec_free(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"rank", rank, METH_VARARGS, rank_doc},
    {"query_lines", query_lines, METH_VARARGS, lines_doc},
    {"judged_measures", judged_measures, METH_VARARGS, judged_doc},
    {"graded_measures", graded_measures, METH_VARARGS, graded_doc},
    {"ndcg_cuts", ndcg_cuts, METH_VARARGS, cut_doc},
    {"iprec_at_recall", iprec_at_recall, METH_VARARGS, iprec_doc},
    {"rbp", rbp, METH_VARARGS, rbp_doc},
    {"ap_sums", ap_sums, METH_VARARGS, ap_doc},
    {"log_floor", log_floor, METH_VARARGS, log_floor_doc},
    {"gain_rows", gain_rows, METH_VARARGS, gain_rows_doc},
    {"ideal_rows", ideal_rows, METH_VARARGS, ideal_rows_doc},
    {"rbp_resid", rbp_resid, METH_VARARGS, resid_doc},
    {"integer_grades", integer_grades, METH_VARARGS, integers_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "ranking.trec_eval._rankjoin",
    "trec_eval's join of a run with its qrels in one pass, in C (docs/trec-eval.md#speed).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__rankjoin(void)
{
    init_classes();
    return PyModule_Create(&module_def);
}
