/* The native module of the word-based heuristic filters (curate.filters.words_en, gopher_repetition, c4),
 * reached only through curate.filters.native.
 *
 * Each function does what a polars or numpy path of those modules does, with the same results (held equal
 * by tests/filters/test_native.py and benchmarks/native_identical.py), in one pass over a batch's Arrow
 * buffers instead of a chain of whole-batch expressions. Only the CPython C API and libc.
 *
 * The word split (curate.filters.words_en.split_words_en_native): the text is cut into chunks at Python's
 * str.isspace() characters; a "plain" chunk (only letters, or only ASCII digits) that is not one of spaCy's
 * special cases is a word as it is; every other chunk's words come from a per-process cache the caller
 * fills (by the polars and spaCy path, curate.filters.words_en._distinct_tokens) for the chunks `scan`
 * reports. Characters are classified by one rule on both paths, the interpreter's: letters are what
 * Python's str.isalpha() calls letters (Py_UNICODE_ISALPHA: the interpreter's Unicode database, the one
 * datatrove's isalpha() test and spaCy see), spaces what str.isspace() calls spaces (py_space), digits are
 * ASCII 0-9. The polars path writes the same letters and spaces out as regex classes
 * (curate.filters._text.py_letter_class, PY_SPACE), never polars' own \p{L} or \s, whose Unicode tables
 * are newer (U+13460 is a letter to them, unassigned to Python 3.11).
 *
 *   tables(special: list[bytes], punctuation: list[int]) -> capsule       fixed per process
 *   cache() -> capsule                                                    chunk -> its words
 *   cache_add(tables, cache, chunk_offsets, chunk_data, list_offsets, word_offsets, word_data)
 *   cache_len(cache) -> int; cache_clear(cache)
 *   scan(tables, cache, offsets, data[, sentence_tables]) -> (list[str], plan)
 *                                            the distinct chunks whose words are needed and not cached
 *   emit(cache, plan, data) -> (doc, word_offsets, word_data, n_chars, flags)    after those are added
 *
 * Offsets are int64 buffers as in Arrow's large_string and large_list (n + 1 values). cache_add takes n
 * chunks and, per chunk, the range of words list_offsets gives it. emit returns bytes objects: the uint32
 * row of each word's text, the int64 word offsets (n_words + 1, from 0), the words' UTF-8 data, uint32
 * characters per word and a uint8 per word with bit 0 set when the word has a character outside
 * `punctuation` and bit 1 when it has a letter.
 *
 * Sentence counts (curate.filters.c4.sentence_counts), over a plan scanned with sentence_tables (only
 * chunks holding a sentence-ending character need their words):
 *
 *   sentence_tables(punct_chars: list[int], punctuation: list[int]) -> capsule
 *   sentences(cache, plan, sentence_tables, data) -> int64 bytes, one count per text (a line)
 *
 * gopher_repetition_v1 (curate.filters.gopher_repetition._ngram_chars and piece_stats):
 *
 *   ngram_chars(doc, h, ln, n_docs, tops, dups) -> [float64 bytes per size: tops, then dups]
 *   dup_pieces(offsets, data) -> int64 bytes, 6 per text: paragraphs, repeated, their characters; lines, ...
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CAPSULE_NAME "curate.filters._native.tables"
#define MAX_CP 0x110000

typedef struct {
    const char *s;
    Py_ssize_t n;
} Key;

typedef struct {
    Key *slots;
    size_t mask;
    PyObject *keep; /* the special strings (bytes) the slots point into */
    uint8_t *punct; /* bitmap over all code points */
    uint8_t ascii[128]; /* C_* classes of the ASCII characters */
} Tables;

/* Character classes. */
#define C_SPACE 1
#define C_ALPHA 2
#define C_DIGIT 4
#define C_PUNCT 8

static uint64_t hash_bytes(const char *s, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, v;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    if (i < n) {
        v = 0;
        memcpy(&v, s + i, (size_t)(n - i));
        h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    h ^= h >> 33;
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static int is_special(const Tables *t, const char *s, Py_ssize_t n) {
    size_t i = (size_t)hash_bytes(s, n) & t->mask;
    while (t->slots[i].s != NULL) {
        if (t->slots[i].n == n && memcmp(t->slots[i].s, s, (size_t)n) == 0) return 1;
        i = (i + 1) & t->mask;
    }
    return 0;
}

static uint8_t char_class(const Tables *t, uint32_t c);

static void tables_free(PyObject *capsule) {
    Tables *t = (Tables *)PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (t == NULL) return;
    free(t->slots);
    free(t->punct);
    Py_XDECREF(t->keep);
    free(t);
}

static PyObject *tables(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *special, *punct;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &special, &PyList_Type, &punct)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(special);
    size_t size = 16;
    while (size < (size_t)n * 4) size <<= 1;
    Tables *t = calloc(1, sizeof(Tables));
    if (t == NULL) return PyErr_NoMemory();
    t->slots = calloc(size, sizeof(Key));
    t->punct = calloc(MAX_CP / 8, 1);
    if (t->slots == NULL || t->punct == NULL) {
        free(t->slots);
        free(t->punct);
        free(t);
        return PyErr_NoMemory();
    }
    t->mask = size - 1;
    t->keep = PyList_GetSlice(special, 0, n);
    if (t->keep == NULL) goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *b = PyList_GET_ITEM(t->keep, k);
        if (!PyBytes_Check(b)) {
            PyErr_SetString(PyExc_TypeError, "special cases must be bytes");
            goto fail;
        }
        const char *s = PyBytes_AS_STRING(b);
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        if (is_special(t, s, len)) continue;
        size_t i = (size_t)hash_bytes(s, len) & t->mask;
        while (t->slots[i].s != NULL) i = (i + 1) & t->mask;
        t->slots[i].s = s;
        t->slots[i].n = len;
    }
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(punct); k++) {
        long cp = PyLong_AsLong(PyList_GET_ITEM(punct, k));
        if (cp == -1 && PyErr_Occurred()) goto fail;
        if (cp < 0 || cp >= MAX_CP) {
            PyErr_SetString(PyExc_ValueError, "punctuation code point out of range");
            goto fail;
        }
        t->punct[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    }
    for (uint32_t c = 0; c < 128; c++) t->ascii[c] = char_class(t, c);
    PyObject *cap = PyCapsule_New(t, CAPSULE_NAME, tables_free);
    if (cap == NULL) goto fail;
    return cap;
fail:
    free(t->slots);
    free(t->punct);
    Py_XDECREF(t->keep);
    free(t);
    return NULL;
}

/* One code point of valid UTF-8 (Arrow strings are) at *i; advances *i. */
static inline uint32_t next_cp(const uint8_t *p, Py_ssize_t *i) {
    uint8_t c = p[*i];
    if (c < 0x80) {
        *i += 1;
        return c;
    }
    if (c < 0xE0) {
        uint32_t cp = ((uint32_t)(c & 0x1F) << 6) | (p[*i + 1] & 0x3F);
        *i += 2;
        return cp;
    }
    if (c < 0xF0) {
        uint32_t cp = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[*i + 1] & 0x3F) << 6) | (p[*i + 2] & 0x3F);
        *i += 3;
        return cp;
    }
    uint32_t cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[*i + 1] & 0x3F) << 12) |
                  ((uint32_t)(p[*i + 2] & 0x3F) << 6) | (p[*i + 3] & 0x3F);
    *i += 4;
    return cp;
}

/* Python's str.isspace(): Unicode White_Space plus the information separators U+001C..U+001F. */
static inline int py_space(uint32_t c) {
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static inline int py_alpha(uint32_t c) {
    if (c < 0x80) return (uint32_t)((c | 0x20) - 'a') < 26;
    return Py_UNICODE_ISALPHA((Py_UCS4)c);
}

static inline int is_punct(const Tables *t, uint32_t c) { return (t->punct[c >> 3] >> (c & 7)) & 1; }

static uint8_t char_class(const Tables *t, uint32_t c) {
    return (uint8_t)((py_space(c) ? C_SPACE : 0) | (py_alpha(c) ? C_ALPHA : 0) | (c >= '0' && c <= '9' ? C_DIGIT : 0) |
                     (is_punct(t, c) ? C_PUNCT : 0));
}

/* The class of the character at *i (ASCII from the table); advances *i. */
static inline uint8_t class_at(const Tables *t, const uint8_t *p, Py_ssize_t *i) {
    uint8_t b = p[*i];
    if (b < 0x80) {
        *i += 1;
        return t->ascii[b];
    }
    return char_class(t, next_cp(p, i));
}

/* Characters and flags (bit 0: a character outside the punctuation set, bit 1: a letter) of a word. */
static void word_stats(const Tables *t, const uint8_t *s, Py_ssize_t n, uint32_t *chars, uint8_t *flags) {
    uint32_t k = 0;
    uint8_t f = 0;
    for (Py_ssize_t i = 0; i < n;) {
        uint32_t c = next_cp(s, &i);
        k++;
        if (!is_punct(t, c)) f |= 1;
        if (py_alpha(c)) f |= 2;
    }
    *chars = k;
    *flags = f;
}

/* ---- the chunk cache: an open-addressing table of malloc'd entries ---- */

/* An entry: key bytes, then n_words records (int64 length, uint32 chars, uint8 flags) and the words' bytes. */
typedef struct {
    uint64_t hash;
    Py_ssize_t key_len, n_words, words_len;
    /* followed by: char key[key_len]; WordRec recs[n_words]; char words[words_len] */
} Entry;

typedef struct {
    int64_t len;
    uint32_t chars;
    uint8_t flags;
} WordRec;

typedef struct {
    uint64_t hash;
    Entry *e;
} Slot;

typedef struct {
    Slot *slots; /* the hash beside the pointer: a probe reads an entry only when the hashes agree */
    size_t mask, used;
    uint64_t generation; /* bumped by cache_clear: plans made before it are refused */
} Cache;

#define CACHE_NAME "curate.filters._native.cache"

static inline const char *entry_key(const Entry *e) { return (const char *)(e + 1); }
static inline const WordRec *entry_recs(const Entry *e) {
    size_t at = sizeof(Entry) + (size_t)e->key_len;
    at = (at + 7) & ~(size_t)7;
    return (const WordRec *)((const char *)e + at);
}
static inline const uint8_t *entry_words(const Entry *e) {
    return (const uint8_t *)(entry_recs(e) + e->n_words);
}

static void cache_free_entries(Cache *c) {
    for (size_t i = 0; i <= c->mask; i++) {
        free(c->slots[i].e);
        c->slots[i].e = NULL;
    }
    c->used = 0;
    c->generation++;
}

static void cache_destroy(PyObject *capsule) {
    Cache *c = (Cache *)PyCapsule_GetPointer(capsule, CACHE_NAME);
    if (c == NULL) return;
    cache_free_entries(c);
    free(c->slots);
    free(c);
}

static PyObject *cache_new(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    Cache *c = calloc(1, sizeof(Cache));
    if (c == NULL) return PyErr_NoMemory();
    c->mask = (1u << 16) - 1;
    c->slots = calloc(c->mask + 1, sizeof(Slot));
    if (c->slots == NULL) {
        free(c);
        return PyErr_NoMemory();
    }
    PyObject *cap = PyCapsule_New(c, CACHE_NAME, cache_destroy);
    if (cap == NULL) {
        free(c->slots);
        free(c);
    }
    return cap;
}

static const Entry *cache_get(const Cache *c, const char *s, Py_ssize_t n, uint64_t h) {
    size_t i = (size_t)h & c->mask;
    for (const Slot *q; (q = &c->slots[i])->e != NULL; i = (i + 1) & c->mask)
        if (q->hash == h && q->e->key_len == n && memcmp(entry_key(q->e), s, (size_t)n) == 0) return q->e;
    return NULL;
}

static int cache_grow(Cache *c) {
    size_t size = (c->mask + 1) * 2;
    Slot *slots = calloc(size, sizeof(Slot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= c->mask; i++) {
        if (c->slots[i].e == NULL) continue;
        size_t j = (size_t)c->slots[i].hash & (size - 1);
        while (slots[j].e != NULL) j = (j + 1) & (size - 1);
        slots[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = slots;
    c->mask = size - 1;
    return 0;
}

static int get_buffer(PyObject *o, Py_buffer *b, const char *what) {
    if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0) return -1;
    (void)what;
    return 0;
}

/* Checks that `off` holds n + 1 ascending int64 offsets into `data`; sets n. */
static int check_offsets(const Py_buffer *off, const Py_buffer *data, Py_ssize_t *n) {
    if (off->len % (Py_ssize_t)sizeof(int64_t) != 0 || off->len < (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "offsets must be n + 1 int64 values");
        return -1;
    }
    const int64_t *o = (const int64_t *)off->buf;
    *n = off->len / (Py_ssize_t)sizeof(int64_t) - 1;
    if (o[0] < 0) goto bad;
    for (Py_ssize_t i = 0; i < *n; i++)
        if (o[i] > o[i + 1]) goto bad;
    if (o[*n] > data->len) goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "offsets out of order or past the data");
    return -1;
}

static PyObject *cache_add(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tcap, *ccap, *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOOOO", &tcap, &ccap, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    Tables *t = (Tables *)PyCapsule_GetPointer(tcap, CAPSULE_NAME);
    Cache *c = (Cache *)PyCapsule_GetPointer(ccap, CACHE_NAME);
    if (t == NULL || c == NULL) return NULL;
    Py_buffer b[5];
    int got = 0;
    PyObject *ret = NULL;
    for (; got < 5; got++)
        if (get_buffer(objs[got], &b[got], "") < 0) goto done;
    Py_ssize_t n_chunks, n_lists, n_words;
    Py_buffer list_data = {0};
    if (check_offsets(&b[0], &b[1], &n_chunks) < 0 || check_offsets(&b[3], &b[4], &n_words) < 0) goto done;
    list_data.len = n_words;
    if (check_offsets(&b[2], &list_data, &n_lists) < 0) goto done;
    if (n_lists != n_chunks) {
        PyErr_SetString(PyExc_ValueError, "one word list per chunk");
        goto done;
    }
    const int64_t *co = b[0].buf, *lo = b[2].buf, *wo = b[3].buf;
    const char *cd = b[1].buf;
    const uint8_t *wd = b[4].buf;
    for (Py_ssize_t k = 0; k < n_chunks; k++) {
        const char *key = cd + co[k];
        Py_ssize_t key_len = co[k + 1] - co[k];
        uint64_t h = hash_bytes(key, key_len);
        if (cache_get(c, key, key_len, h) != NULL) continue;
        if ((c->used + 1) * 2 > c->mask + 1 && cache_grow(c) < 0) goto done;
        Py_ssize_t nw = lo[k + 1] - lo[k], wl = wo[lo[k + 1]] - wo[lo[k]];
        size_t at = (sizeof(Entry) + (size_t)key_len + 7) & ~(size_t)7;
        Entry *e = malloc(at + (size_t)nw * sizeof(WordRec) + (size_t)wl);
        if (e == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        e->hash = h;
        e->key_len = key_len;
        e->n_words = nw;
        e->words_len = wl;
        memcpy((char *)(e + 1), key, (size_t)key_len);
        WordRec *recs = (WordRec *)((char *)e + at);
        uint8_t *words = (uint8_t *)(recs + nw);
        for (Py_ssize_t j = 0; j < nw; j++) {
            int64_t s = wo[lo[k] + j], len = wo[lo[k] + j + 1] - s;
            recs[j].len = len;
            word_stats(t, wd + s, len, &recs[j].chars, &recs[j].flags);
        }
        memcpy(words, wd + wo[lo[k]], (size_t)wl);
        size_t i = (size_t)h & c->mask;
        while (c->slots[i].e != NULL) i = (i + 1) & c->mask;
        c->slots[i].hash = h;
        c->slots[i].e = e;
        c->used++;
    }
    ret = Py_NewRef(Py_None);
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return ret;
}

static PyObject *cache_len(PyObject *self, PyObject *arg) {
    (void)self;
    Cache *c = (Cache *)PyCapsule_GetPointer(arg, CACHE_NAME);
    if (c == NULL) return NULL;
    return PyLong_FromSize_t(c->used);
}

static PyObject *cache_clear(PyObject *self, PyObject *arg) {
    (void)self;
    Cache *c = (Cache *)PyCapsule_GetPointer(arg, CACHE_NAME);
    if (c == NULL) return NULL;
    cache_free_entries(c);
    return Py_NewRef(Py_None);
}

/* ---- scanning a batch ---- */

typedef struct {
    Py_buffer off, data;
    const int64_t *offsets;
    const uint8_t *text;
    Py_ssize_t n_docs;
    Tables *t;
    Cache *c;
} Batch;

static int batch_open(Batch *b, PyObject *tcap, PyObject *ccap, PyObject *off, PyObject *data) {
    memset(b, 0, sizeof(Batch));
    b->t = (Tables *)PyCapsule_GetPointer(tcap, CAPSULE_NAME);
    if (b->t == NULL) return -1;
    b->c = (Cache *)PyCapsule_GetPointer(ccap, CACHE_NAME);
    if (b->c == NULL) return -1;
    if (PyObject_GetBuffer(off, &b->off, PyBUF_SIMPLE) < 0) return -1;
    if (PyObject_GetBuffer(data, &b->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&b->off);
        return -1;
    }
    if (check_offsets(&b->off, &b->data, &b->n_docs) < 0) {
        PyBuffer_Release(&b->off);
        PyBuffer_Release(&b->data);
        return -1;
    }
    b->offsets = (const int64_t *)b->off.buf;
    b->text = (const uint8_t *)b->data.buf;
    return 0;
}

static void batch_close(Batch *b) {
    PyBuffer_Release(&b->off);
    PyBuffer_Release(&b->data);
}

typedef struct {
    Py_ssize_t start, stop;
    uint32_t chars;
    uint8_t flags; /* as word_stats */
    int plain;
} Chunk;

/* The next chunk of the text in [*i, end), or 0 at its end. */
static inline int next_chunk(const Batch *b, Py_ssize_t *i, Py_ssize_t end, Chunk *ch) {
    const uint8_t *p = b->text;
    const Tables *t = b->t;
    Py_ssize_t j = *i, k;
    for (; j < end; j = k) {
        k = j;
        if (!(class_at(t, p, &k) & C_SPACE)) break;
    }
    if (j >= end) {
        *i = j;
        return 0;
    }
    ch->start = j;
    uint32_t chars = 0;
    uint8_t all = 0xFF, any = 0;
    for (; j < end; j = k) {
        k = j;
        uint8_t c = class_at(t, p, &k);
        if (c & C_SPACE) break;
        chars++;
        all &= c;
        any |= c;
    }
    ch->stop = j;
    ch->chars = chars;
    ch->flags = (uint8_t)((all & C_PUNCT ? 0 : 1) | (any & C_ALPHA ? 2 : 0));
    *i = j;
    ch->plain = (all & (C_ALPHA | C_DIGIT)) && !is_special(t, (const char *)p + ch->start, j - ch->start);
    return 1;
}

/* A scanned batch: every chunk, with its cache entry where the scan found one. */
typedef struct {
    int64_t start;
    const Entry *e; /* NULL: plain, or not cached at the scan */
    uint32_t len, doc, chars;
    uint8_t flags, plain;
} Rec;

typedef struct {
    Rec *recs;
    size_t n;
    Py_ssize_t n_docs, data_len;
    uint64_t generation;
    const Cache *cache;
    int for_sentences; /* scanned for `sentences`: only chunks with a sentence-ending character were looked up */
} Plan;

#define PLAN_NAME "curate.filters._native.plan"

static void plan_free(PyObject *capsule) {
    Plan *pl = (Plan *)PyCapsule_GetPointer(capsule, PLAN_NAME);
    if (pl == NULL) return;
    free(pl->recs);
    free(pl);
}

/* A set of byte strings in the text (for the distinct missing chunks), open addressing. */
typedef struct {
    int64_t start;
    uint64_t hash;
    Py_ssize_t len; /* 0: empty slot */
} SeenSlot;

/* ---- sentences (curate.filters.c4.sentence_counts, the same counts) ---- */

/* Two bitmaps over all code points: spaCy's sentencizer punct_chars, and the punctuation class \p{P}. */
typedef struct {
    uint8_t *ends, *punct;
} Sent;

#define SENT_NAME "curate.filters._native.sentences"

static inline int bit(const uint8_t *m, uint32_t c) { return (m[c >> 3] >> (c & 7)) & 1; }

static void sent_free(PyObject *capsule) {
    Sent *st = (Sent *)PyCapsule_GetPointer(capsule, SENT_NAME);
    if (st == NULL) return;
    free(st->ends);
    free(st->punct);
    free(st);
}

static int fill_bitmap(uint8_t *m, PyObject *list) {
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list); k++) {
        long cp = PyLong_AsLong(PyList_GET_ITEM(list, k));
        if (cp == -1 && PyErr_Occurred()) return -1;
        if (cp < 0 || cp >= MAX_CP) {
            PyErr_SetString(PyExc_ValueError, "code point out of range");
            return -1;
        }
        m[cp >> 3] |= (uint8_t)(1u << (cp & 7));
    }
    return 0;
}

static PyObject *sent_tables(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ends, *punct;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &ends, &PyList_Type, &punct)) return NULL;
    Sent *st = calloc(1, sizeof(Sent));
    if (st == NULL) return PyErr_NoMemory();
    st->ends = calloc(MAX_CP / 8, 1);
    st->punct = calloc(MAX_CP / 8, 1);
    PyObject *cap = NULL;
    if (st->ends == NULL || st->punct == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (fill_bitmap(st->ends, ends) < 0 || fill_bitmap(st->punct, punct) < 0) goto fail;
    cap = PyCapsule_New(st, SENT_NAME, sent_free);
    if (cap != NULL) return cap;
fail:
    free(st->ends);
    free(st->punct);
    free(st);
    return NULL;
}

static int has_end(const Sent *st, const uint8_t *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n;)
        if (bit(st->ends, next_cp(s, &i))) return 1;
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *tcap, *ccap, *off, *data, *scap = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &tcap, &ccap, &off, &data, &scap)) return NULL;
    const Sent *st = NULL;
    if (scap != Py_None && (st = (Sent *)PyCapsule_GetPointer(scap, SENT_NAME)) == NULL) return NULL;
    Batch b;
    if (batch_open(&b, tcap, ccap, off, data) < 0) return NULL;
    PyObject *missing = PyList_New(0), *cap = NULL;
    size_t mask = 1023, used = 0, cap_recs = 1024;
    SeenSlot *seen = calloc(mask + 1, sizeof(SeenSlot));
    Plan *pl = calloc(1, sizeof(Plan));
    if (pl != NULL) pl->recs = malloc(cap_recs * sizeof(Rec));
    if (missing == NULL || seen == NULL || pl == NULL || pl->recs == NULL) {
        if (missing != NULL) PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t d = 0; d < b.n_docs; d++) {
        Py_ssize_t i = b.offsets[d], end = b.offsets[d + 1];
        Chunk ch;
        while (next_chunk(&b, &i, end, &ch)) {
            if (pl->n == cap_recs) {
                Rec *r = realloc(pl->recs, 2 * cap_recs * sizeof(Rec));
                if (r == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                pl->recs = r;
                cap_recs *= 2;
            }
            Rec *r = &pl->recs[pl->n++];
            Py_ssize_t n = ch.stop - ch.start;
            if (n > UINT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "a chunk of 4 GiB or more");
                goto fail;
            }
            r->start = ch.start;
            r->len = (uint32_t)n;
            r->doc = (uint32_t)d;
            r->chars = ch.chars;
            r->flags = ch.flags;
            r->plain = (uint8_t)ch.plain;
            r->e = NULL;
            if (ch.plain) continue;
            const char *s = (const char *)b.text + ch.start;
            if (st != NULL && !has_end(st, (const uint8_t *)s, n)) continue; /* its words are not needed */
            uint64_t h = hash_bytes(s, n);
            if ((r->e = cache_get(b.c, s, n, h)) != NULL) continue;
            size_t k = (size_t)h & mask;
            int dup = 0;
            for (; seen[k].len != 0; k = (k + 1) & mask) {
                if (seen[k].hash == h && seen[k].len == n && memcmp(b.text + seen[k].start, s, (size_t)n) == 0) {
                    dup = 1;
                    break;
                }
            }
            if (dup) continue;
            seen[k].start = ch.start;
            seen[k].hash = h;
            seen[k].len = n;
            PyObject *str = PyUnicode_DecodeUTF8(s, n, "strict");
            if (str == NULL || PyList_Append(missing, str) < 0) {
                Py_XDECREF(str);
                goto fail;
            }
            Py_DECREF(str);
            if (++used * 2 > mask + 1) { /* grow the set */
                size_t size = (mask + 1) * 2;
                SeenSlot *s2 = calloc(size, sizeof(SeenSlot));
                if (s2 == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                for (size_t q = 0; q <= mask; q++) {
                    if (seen[q].len == 0) continue;
                    size_t r2 = (size_t)seen[q].hash & (size - 1);
                    while (s2[r2].len != 0) r2 = (r2 + 1) & (size - 1);
                    s2[r2] = seen[q];
                }
                free(seen);
                seen = s2;
                mask = size - 1;
            }
        }
    }
    free(seen);
    seen = NULL;
    pl->n_docs = b.n_docs;
    pl->data_len = b.data.len;
    pl->generation = b.c->generation;
    pl->cache = b.c;
    pl->for_sentences = st != NULL;
    batch_close(&b);
    cap = PyCapsule_New(pl, PLAN_NAME, plan_free);
    if (cap == NULL) {
        free(pl->recs);
        free(pl);
        Py_DECREF(missing);
        return NULL;
    }
    PyObject *ret = Py_BuildValue("(NN)", missing, cap);
    return ret;
fail:
    free(seen);
    if (pl != NULL) free(pl->recs);
    free(pl);
    Py_XDECREF(missing);
    batch_close(&b);
    return NULL;
}

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t n) {
    if (b->len + n <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

typedef struct {
    Buf doc, off, data, chars, flags;
    size_t n;
} Words;

static int reserve_words(Words *w, size_t n_words, size_t n_bytes) {
    if (buf_reserve(&w->doc, 4 * n_words) < 0 || buf_reserve(&w->off, 8 * n_words) < 0 ||
        buf_reserve(&w->chars, 4 * n_words) < 0 || buf_reserve(&w->flags, n_words) < 0 ||
        buf_reserve(&w->data, n_bytes) < 0)
        return -1;
    return 0;
}

/* Appends a word (room reserved). */
static inline void put_word(Words *w, uint32_t doc, const uint8_t *s, int64_t n, uint32_t chars, uint8_t flags) {
    memcpy(w->data.p + w->data.len, s, (size_t)n);
    w->data.len += (size_t)n;
    int64_t end = (int64_t)w->data.len;
    ((uint32_t *)w->doc.p)[w->n] = doc;
    ((int64_t *)w->off.p)[w->n + 1] = end;
    ((uint32_t *)w->chars.p)[w->n] = chars;
    ((uint8_t *)w->flags.p)[w->n] = flags;
    w->n++;
    w->doc.len += 4;
    w->off.len += 8;
    w->chars.len += 4;
    w->flags.len += 1;
}

/* The cache entry of a planned chunk at s (found by the scan, or now); NULL with KeyError when missing. */
static const Entry *rec_entry(const Cache *c, const Rec *r, const uint8_t *s) {
    if (r->e != NULL) return r->e;
    const Entry *e = cache_get(c, (const char *)s, r->len, hash_bytes((const char *)s, r->len));
    if (e == NULL) {
        PyObject *key = PyUnicode_DecodeUTF8((const char *)s, r->len, "strict");
        if (key != NULL) {
            PyErr_SetObject(PyExc_KeyError, key);
            Py_DECREF(key);
        }
    }
    return e;
}

static PyObject *emit(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ccap, *pcap, *data;
    if (!PyArg_ParseTuple(args, "OOO", &ccap, &pcap, &data)) return NULL;
    Cache *c = (Cache *)PyCapsule_GetPointer(ccap, CACHE_NAME);
    if (c == NULL) return NULL;
    Plan *pl = (Plan *)PyCapsule_GetPointer(pcap, PLAN_NAME);
    if (pl == NULL) return NULL;
    if (pl->cache != c || pl->generation != c->generation) {
        PyErr_SetString(PyExc_ValueError, "the plan was made with another cache, or before it was cleared");
        return NULL;
    }
    if (pl->for_sentences) {
        PyErr_SetString(PyExc_ValueError, "a plan scanned for sentences has no words");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *text = buf.buf;
    Words w;
    memset(&w, 0, sizeof(w));
    PyObject *out = NULL;
    if (buf.len != pl->data_len) {
        PyErr_SetString(PyExc_ValueError, "emit needs the data the plan was made from");
        goto done;
    }
    if (reserve_words(&w, pl->n + 16, (size_t)buf.len + 16) < 0) goto done;
    ((int64_t *)w.off.p)[0] = 0;
    w.off.len = 8;
    for (size_t q = 0; q < pl->n; q++) {
        const Rec *r = &pl->recs[q];
        const uint8_t *s = text + r->start;
        if (r->plain) {
            if (reserve_words(&w, 1, r->len) < 0) goto done;
            put_word(&w, r->doc, s, r->len, r->chars, r->flags);
            continue;
        }
        const Entry *e = rec_entry(c, r, s);
        if (e == NULL) goto done;
        if (reserve_words(&w, (size_t)e->n_words, (size_t)e->words_len) < 0) goto done;
        const WordRec *wr = entry_recs(e);
        const uint8_t *ws = entry_words(e);
        for (Py_ssize_t k = 0; k < e->n_words; k++) {
            put_word(&w, r->doc, ws, wr[k].len, wr[k].chars, wr[k].flags);
            ws += wr[k].len;
        }
    }
    out = Py_BuildValue("(y#y#y#y#y#)", w.doc.p, (Py_ssize_t)w.doc.len, w.off.p, (Py_ssize_t)w.off.len, w.data.p,
                        (Py_ssize_t)w.data.len, w.chars.p, (Py_ssize_t)w.chars.len, w.flags.p,
                        (Py_ssize_t)w.flags.len);
done:
    free(w.doc.p);
    free(w.off.p);
    free(w.data.p);
    free(w.chars.p);
    free(w.flags.p);
    PyBuffer_Release(&buf);
    return out;
}

/* ---- repeated n-grams (curate.filters.gopher_repetition._ngram_chars, the same numbers) ---- */

#define MIX 0x9E3779B97F4A7C15ULL
#define MULT 0xBF58476D1CE4E5B9ULL

typedef struct {
    uint64_t g;
    uint32_t stamp, count;
    Py_ssize_t first; /* index of the gram's first occurrence among the level's candidates */
} GramSlot;

/* A table of slots that a new stamp empties, for a hash map per document without clearing it. */
typedef struct {
    void *slots;
    size_t mask;
    uint32_t stamp;
} Stamped;

typedef Stamped GramMap;

/* Room for n entries of slot_size bytes at load <= 1/2, all slots empty (stamped before). */
static int stamped_reset(Stamped *m, size_t n, size_t slot_size) {
    size_t size = 64;
    while (size < 2 * n) size <<= 1;
    if (m->slots == NULL || size > m->mask + 1) {
        free(m->slots);
        m->slots = calloc(size, slot_size);
        if (m->slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->mask = size - 1;
        m->stamp = 0;
    }
    if (++m->stamp == 0) { /* wrapped: clear for real */
        memset(m->slots, 0, (m->mask + 1) * slot_size);
        m->stamp = 1;
    }
    return 0;
}

static int gram_map_reset(GramMap *m, size_t n) { return stamped_reset(m, n, sizeof(GramSlot)); }

static GramSlot *gram_slot(GramMap *m, uint64_t g) {
    size_t i = (size_t)((g ^ (g >> 29)) * MULT >> 17) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        GramSlot *q = &((GramSlot *)m->slots)[i];
        if (q->stamp != m->stamp) {
            q->stamp = m->stamp;
            q->g = g;
            q->count = 0;
            q->first = -1;
            return q;
        }
        if (q->g == g) return q;
    }
}

/* datatrove's find_all_duplicate replayed over the candidates whose gram occurred before (see _replay). */
static double replay(const Py_ssize_t *pos, const uint64_t *g, const Py_ssize_t *first, const uint32_t *cnt,
                     const int64_t *csum, Py_ssize_t n_cand, long k, Py_ssize_t *starts, GramMap *added) {
    Py_ssize_t next_idx = -1, n_starts = 0;
    double repeated = 0;
    for (Py_ssize_t q = 0; q < n_cand; q++) {
        if (cnt[q] < 2 || first[q] == q) continue;
        Py_ssize_t p = pos[q];
        if (p < next_idx) continue;
        Py_ssize_t f = pos[first[q]];
        Py_ssize_t lo = 0, hi = n_starts; /* bisect_left(starts, f) */
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (starts[mid] < f)
                lo = mid + 1;
            else
                hi = mid;
        }
        Py_ssize_t j = lo - 1;
        int first_visited = !(j >= 0 && starts[j] < f && f < starts[j] + k);
        GramSlot *a = gram_slot(added, g[q]);
        if (first_visited || a->count) {
            repeated += (double)(csum[p + k] - csum[p]);
            starts[n_starts++] = p;
            next_idx = p + k;
        } else {
            a->count = 1;
        }
    }
    return repeated;
}

static PyObject *ngram_chars(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *doc_o, *h_o, *ln_o, *tops_o, *dups_o;
    Py_ssize_t n_docs;
    if (!PyArg_ParseTuple(args, "OOOnO!O!", &doc_o, &h_o, &ln_o, &n_docs, &PyList_Type, &tops_o, &PyList_Type, &dups_o))
        return NULL;
    Py_buffer bd, bh, bl;
    int got = 0;
    PyObject *ret = NULL;
    long tops[64], dups[64];
    Py_ssize_t n_tops = PyList_GET_SIZE(tops_o), n_dups = PyList_GET_SIZE(dups_o);
    double *out = NULL;
    Py_ssize_t *pos = NULL, *first = NULL, *starts = NULL;
    uint64_t *g = NULL;
    uint32_t *cnt = NULL;
    uint8_t *rep = NULL;
    int64_t *csum = NULL;
    GramMap map = {0}, added = {0};
    if (n_tops > 64 || n_dups > 64 || n_docs < 0) {
        PyErr_SetString(PyExc_ValueError, "at most 64 n-gram sizes of each kind");
        return NULL;
    }
    long k_max = 0;
    for (Py_ssize_t i = 0; i < n_tops + n_dups; i++) {
        long k = PyLong_AsLong(PyList_GET_ITEM(i < n_tops ? tops_o : dups_o, i < n_tops ? i : i - n_tops));
        if (k == -1 && PyErr_Occurred()) return NULL;
        if (k < 2 || k > 1000) {
            PyErr_SetString(PyExc_ValueError, "n-gram sizes must be 2 to 1000");
            return NULL;
        }
        if (i < n_tops)
            tops[i] = k;
        else
            dups[i - n_tops] = k;
        if (k > k_max) k_max = k;
    }
    if (PyObject_GetBuffer(doc_o, &bd, PyBUF_SIMPLE) < 0) goto done;
    got = 1;
    if (PyObject_GetBuffer(h_o, &bh, PyBUF_SIMPLE) < 0) goto done;
    got = 2;
    if (PyObject_GetBuffer(ln_o, &bl, PyBUF_SIMPLE) < 0) goto done;
    got = 3;
    Py_ssize_t n = bd.len / 4;
    if (bd.len % 4 || bh.len != 8 * n || bl.len != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "doc (uint32), h (uint64) and ln (uint32) must have one value per word");
        goto done;
    }
    const uint32_t *doc = bd.buf, *ln = bl.buf;
    const uint64_t *h = bh.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (doc[i] >= (uint64_t)n_docs || (i && doc[i] < doc[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "doc must be ascending and below n_docs");
            goto done;
        }
    }
    Py_ssize_t n_out = n_tops + n_dups;
    out = calloc((size_t)(n_out * n_docs + 1), sizeof(double));
    /* per-doc work arrays, sized for the longest doc */
    Py_ssize_t longest = 0;
    for (Py_ssize_t s = 0, e; s < n; s = e) {
        for (e = s + 1; e < n && doc[e] == doc[s]; e++) {
        }
        if (e - s > longest) longest = e - s;
    }
    size_t m = (size_t)longest + 1;
    pos = malloc(m * sizeof(Py_ssize_t));
    first = malloc(m * sizeof(Py_ssize_t));
    starts = malloc(m * sizeof(Py_ssize_t));
    g = malloc(m * sizeof(uint64_t));
    cnt = malloc(m * sizeof(uint32_t));
    rep = calloc(m + 1, 1);
    csum = malloc((m + 1) * sizeof(int64_t));
    if (out == NULL || pos == NULL || first == NULL || starts == NULL || g == NULL || cnt == NULL || rep == NULL ||
        csum == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0, e; s < n; s = e) {
        for (e = s + 1; e < n && doc[e] == doc[s]; e++) {
        }
        Py_ssize_t nw = e - s, d = doc[s];
        const uint64_t *hd = h + s;
        csum[0] = 0;
        for (Py_ssize_t i = 0; i < nw; i++) csum[i + 1] = csum[i] + ln[s + i];
        /* level 2: every position with a next word */
        Py_ssize_t n_cand = nw - 1 > 0 ? nw - 1 : 0;
        uint64_t mix = (uint64_t)d * MIX;
        for (Py_ssize_t i = 0; i < n_cand; i++) {
            pos[i] = i;
            g[i] = (hd[i] ^ mix) * MULT + hd[i + 1];
        }
        for (long k = 2; k <= k_max; k++) {
            if (k > 2) { /* extend the repeated (k-1)-grams whose successor repeats too */
                Py_ssize_t w = 0;
                for (Py_ssize_t q = 0; q < n_cand; q++) {
                    Py_ssize_t p = pos[q];
                    if (cnt[q] >= 2 && rep[p + 1]) {
                        pos[w] = p;
                        g[w] = g[q] * MULT + hd[p + k - 1];
                        w++;
                    }
                }
                for (Py_ssize_t q = 0; q < n_cand; q++) rep[pos[q]] = 0; /* pos[] was compacted in place */
                for (Py_ssize_t p = 0; p <= nw; p++) rep[p] = 0;
                n_cand = w;
            }
            if (gram_map_reset(&map, (size_t)n_cand) < 0) goto done;
            for (Py_ssize_t q = 0; q < n_cand; q++) {
                GramSlot *sl = gram_slot(&map, g[q]);
                if (sl->first < 0) sl->first = q;
                sl->count++;
                first[q] = sl->first;
            }
            for (Py_ssize_t q = 0; q < n_cand; q++) {
                cnt[q] = gram_slot(&map, g[q])->count;
                if (cnt[q] >= 2) rep[pos[q]] = 1;
            }
            for (Py_ssize_t t = 0; t < n_tops; t++) {
                if (tops[t] != k || nw < k) continue;
                Py_ssize_t best = -1;
                for (Py_ssize_t q = 0; q < n_cand; q++)
                    if (cnt[q] >= 2 && (best < 0 || cnt[q] > cnt[best])) best = q;
                double v;
                if (best < 0)
                    v = (double)(csum[k] - csum[0] + (k - 1));
                else
                    v = (double)(csum[pos[best] + k] - csum[pos[best]] + (k - 1)) * cnt[best];
                out[t * n_docs + d] = v;
            }
            for (Py_ssize_t t = 0; t < n_dups; t++) {
                if (dups[t] != k) continue;
                if (gram_map_reset(&added, (size_t)n_cand) < 0) goto done;
                out[(n_tops + t) * n_docs + d] = replay(pos, g, first, cnt, csum, n_cand, k, starts, &added);
            }
            if (n_cand == 0) {
                /* no repeated gram left: the remaining tops are the doc's first gram; dups stay 0 */
                for (Py_ssize_t t = 0; t < n_tops; t++)
                    if (tops[t] > k && nw >= tops[t]) out[t * n_docs + d] = (double)(csum[tops[t]] + (tops[t] - 1));
                break;
            }
        }
        for (Py_ssize_t p = 0; p <= nw; p++) rep[p] = 0;
    }
    ret = PyList_New(n_out);
    if (ret == NULL) goto done;
    for (Py_ssize_t t = 0; t < n_out; t++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)(out + t * n_docs), (Py_ssize_t)(n_docs * sizeof(double)));
        if (b == NULL) {
            Py_CLEAR(ret);
            goto done;
        }
        PyList_SET_ITEM(ret, t, b);
    }
done:
    if (got >= 1) PyBuffer_Release(&bd);
    if (got >= 2) PyBuffer_Release(&bh);
    if (got >= 3) PyBuffer_Release(&bl);
    free(out);
    free(pos);
    free(first);
    free(starts);
    free(g);
    free(cnt);
    free(rep);
    free(csum);
    free(map.slots);
    free(added.slots);
    return ret;
}

/* Sentences per text (a line) as spaCy's sentencizer counts them over spaCy-en tokens: 1, plus one per
 * W right after a P, where P is a token that is one punct_chars character, Q a token of \p{P} characters
 * only (dropped: it never changes the state), W anything else, and every whitespace run between chunks
 * other than one " " is a W (spaCy keeps it as a token). */
static PyObject *sentences(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *ccap, *pcap, *scap, *data;
    if (!PyArg_ParseTuple(args, "OOOO", &ccap, &pcap, &scap, &data)) return NULL;
    Cache *c = (Cache *)PyCapsule_GetPointer(ccap, CACHE_NAME);
    Plan *pl = c == NULL ? NULL : (Plan *)PyCapsule_GetPointer(pcap, PLAN_NAME);
    Sent *st = pl == NULL ? NULL : (Sent *)PyCapsule_GetPointer(scap, SENT_NAME);
    if (st == NULL) return NULL;
    if (pl->cache != c || pl->generation != c->generation || !pl->for_sentences) {
        PyErr_SetString(PyExc_ValueError, "the plan was not scanned for sentences with this cache");
        return NULL;
    }
    Py_buffer buf;
    if (PyObject_GetBuffer(data, &buf, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = NULL;
    int64_t *counts = NULL;
    if (buf.len != pl->data_len) {
        PyErr_SetString(PyExc_ValueError, "sentences needs the data the plan was made from");
        goto done;
    }
    counts = malloc((size_t)(pl->n_docs + 1) * sizeof(int64_t));
    if (counts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t d = 0; d < pl->n_docs; d++) counts[d] = 1;
    const uint8_t *text = buf.buf;
    enum { NONE = 0, P = 1, W = 2 };
    int last = NONE;
#define STEP(cls)                                              \
    do {                                                       \
        if ((cls) == W && last == P) counts[r->doc]++;         \
        last = (cls);                                          \
    } while (0)
    for (size_t q = 0; q < pl->n; q++) {
        const Rec *r = &pl->recs[q];
        const uint8_t *s = text + r->start;
        if (q == 0 || pl->recs[q - 1].doc != r->doc) {
            last = NONE;
        } else {
            const Rec *prev = &pl->recs[q - 1];
            if (!(r->start - (prev->start + (int64_t)prev->len) == 1 && text[r->start - 1] == ' ')) STEP(W);
        }
        if (r->plain) {
            STEP(W);
            continue;
        }
        if (!has_end(st, s, r->len)) { /* one W unless every character is punctuation */
            for (Py_ssize_t i = 0; i < (Py_ssize_t)r->len;) {
                if (!bit(st->punct, next_cp(s, &i))) {
                    STEP(W);
                    break;
                }
            }
            continue;
        }
        const Entry *e = rec_entry(c, r, s);
        if (e == NULL) goto done;
        const WordRec *wr = entry_recs(e);
        const uint8_t *ws = entry_words(e);
        for (Py_ssize_t k = 0; k < e->n_words; ws += wr[k].len, k++) {
            Py_ssize_t i = 0;
            uint32_t c0 = next_cp(ws, &i);
            if (wr[k].chars == 1 && bit(st->ends, c0)) {
                STEP(P);
                continue;
            }
            int all_punct = bit(st->punct, c0);
            while (all_punct && i < wr[k].len) all_punct = bit(st->punct, next_cp(ws, &i));
            if (!all_punct) STEP(W);
        }
    }
#undef STEP
    out = PyBytes_FromStringAndSize((const char *)counts, (Py_ssize_t)(pl->n_docs * sizeof(int64_t)));
done:
    free(counts);
    PyBuffer_Release(&buf);
    return out;
}

/* ---- duplicate lines and paragraphs (gopher_repetition_v1; curate.filters._text.duplicate_stats) ---- */

typedef struct {
    int64_t start, len;
    uint64_t hash;
    uint32_t stamp;
} PieceSlot;

typedef Stamped PieceSet;

static int piece_set_reset(PieceSet *ps, size_t n) { return stamped_reset(ps, n, sizeof(PieceSlot)); }

/* Adds text[start, start + len); 1 when an equal piece was added before. */
static int piece_seen(PieceSet *ps, const uint8_t *text, int64_t start, int64_t len) {
    uint64_t h = hash_bytes((const char *)text + start, len);
    for (size_t i = (size_t)h & ps->mask;; i = (i + 1) & ps->mask) {
        PieceSlot *q = &((PieceSlot *)ps->slots)[i];
        if (q->stamp != ps->stamp) {
            q->stamp = ps->stamp;
            q->start = start;
            q->len = len;
            q->hash = h;
            return 0;
        }
        if (q->hash == h && q->len == len && memcmp(text + q->start, text + start, (size_t)len) == 0) return 1;
    }
}

static int64_t utf8_chars(const uint8_t *s, int64_t n) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) k += (s[i] & 0xC0) != 0x80;
    return k;
}

/* Per text: paragraphs (the text stripped of str.isspace() characters, cut at runs of two or more "\n") and
 * lines (cut at every "\n", empty lines dropped but the first and the last): how many, how many repeat an
 * earlier one of the same text, and the characters of those. */
static PyObject *dup_pieces(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *off_o, *data_o;
    if (!PyArg_ParseTuple(args, "OO", &off_o, &data_o)) return NULL;
    Py_buffer off, data;
    if (PyObject_GetBuffer(off_o, &off, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(data_o, &data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&off);
        return NULL;
    }
    PyObject *ret = NULL;
    int64_t *out = NULL;
    PieceSet ps = {0};
    Py_ssize_t n_docs;
    if (check_offsets(&off, &data, &n_docs) < 0) goto done;
    out = calloc((size_t)(6 * n_docs + 1), sizeof(int64_t));
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *o = off.buf;
    const uint8_t *t = data.buf;
    for (Py_ssize_t d = 0; d < n_docs; d++) {
        int64_t a = o[d], b = o[d + 1];
        int64_t *r = out + 6 * d;
        /* lines: at most one per "\n" plus one */
        int64_t n_nl = 0;
        for (int64_t i = a; i < b; i++) n_nl += t[i] == '\n';
        if (piece_set_reset(&ps, (size_t)n_nl + 1) < 0) goto done;
        for (int64_t s = a;;) {
            int64_t e = s;
            while (e < b && t[e] != '\n') e++;
            if (e > s || s == a || e == b) { /* non-empty, or the first, or the last */
                r[3]++;
                if (piece_seen(&ps, t, s, e - s)) {
                    r[4]++;
                    r[5] += utf8_chars(t + s, e - s);
                }
            }
            if (e == b) break;
            s = e + 1;
        }
        /* paragraphs: strip, then cut at runs of two or more "\n" */
        int64_t s0 = a, e0 = b;
        while (s0 < e0) {
            Py_ssize_t k = s0;
            if (!py_space(next_cp(t, &k))) break;
            s0 = k;
        }
        while (e0 > s0) {
            int64_t k = e0 - 1;
            while (k > s0 && (t[k] & 0xC0) == 0x80) k--;
            Py_ssize_t j = k;
            if (!py_space(next_cp(t, &j))) break;
            e0 = k;
        }
        if (piece_set_reset(&ps, (size_t)n_nl + 1) < 0) goto done;
        for (int64_t s = s0; s < e0;) {
            int64_t e = s;
            while (e < e0 && !(t[e] == '\n' && e + 1 < e0 && t[e + 1] == '\n')) e++;
            r[0]++;
            if (piece_seen(&ps, t, s, e - s)) {
                r[1]++;
                r[2] += utf8_chars(t + s, e - s);
            }
            while (e < e0 && t[e] == '\n') e++;
            s = e;
        }
    }
    ret = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)(6 * n_docs * sizeof(int64_t)));
done:
    free(out);
    free(ps.slots);
    PyBuffer_Release(&off);
    PyBuffer_Release(&data);
    return ret;
}

static PyMethodDef methods[] = {
    {"tables", tables, METH_VARARGS, "tables(special: list[bytes], punctuation: list[int]) -> capsule"},
    {"cache", cache_new, METH_NOARGS, "cache() -> capsule: an empty chunk cache"},
    {"cache_add", cache_add, METH_VARARGS,
     "cache_add(tables, cache, chunk_offsets, chunk_data, list_offsets, word_offsets, word_data)"},
    {"cache_len", cache_len, METH_O, "cache_len(cache) -> number of chunks cached"},
    {"cache_clear", cache_clear, METH_O, "cache_clear(cache): forget every chunk"},
    {"scan", scan, METH_VARARGS, "scan(tables, cache, offsets, data) -> (uncached non-plain chunks, plan)"},
    {"emit", emit, METH_VARARGS, "emit(cache, plan, data) -> (doc, offsets, data, chars, flags)"},
    {"ngram_chars", ngram_chars, METH_VARARGS,
     "ngram_chars(doc, h, ln, n_docs, tops, dups) -> [float64 bytes per size: tops, then dups]"},
    {"sentence_tables", sent_tables, METH_VARARGS, "sentence_tables(punct_chars: list[int], punctuation: list[int]) -> capsule"},
    {"sentences", sentences, METH_VARARGS, "sentences(cache, plan, sentence_tables, data) -> int64 bytes: sentences per text"},
    {"dup_pieces", dup_pieces, METH_VARARGS,
     "dup_pieces(offsets, data) -> int64 bytes, 6 per text: paragraphs, repeated, their chars; lines, the same"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "Native word split (see the C source).", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
