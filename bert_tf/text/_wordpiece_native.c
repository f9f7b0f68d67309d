/* Google's FullTokenizer (BasicTokenizer + WordpieceTokenizer) in C.
 *
 * The same rules as bert_tf/text/tokenization.py, which documents them and
 * is the reference the tests hold this to, in one pass over a text's code
 * points:
 *
 *   1. cleaning: NUL, U+FFFD and control characters (Cc, Cf but tab,
 *      newline, carriage return) are dropped; whitespace separates words;
 *   2. a CJK ideograph is a word of its own;
 *   3. with lower-casing, each character of a word becomes its lower case
 *      with accents stripped (NFD, category Mn dropped), from a table; a
 *      word holding a character whose result depends on its neighbours
 *      (flag COMPLEX: final sigma, reordering kept marks) is handed to the
 *      pure-Python `_tokenize_word` instead;
 *   4. a punctuation character is a token of its own;
 *   5. each token is split into word pieces, greedy longest match first,
 *      "##" before every piece but the first; a token of more than
 *      `max_input_chars_per_word` characters, or one that cannot be
 *      covered, is the unknown token.
 *
 * The character classes come from _wordpiece_tables.h, which
 * bert_tf/text/native_tables.py generates from the building Python's
 * `unicodedata` with Google's definitions.
 *
 * The vocabulary is a hash table (open addressing, linear probing) over
 * code point strings holding every vocabulary entry and every prefix of
 * one, word starts and "##" continuations apart: the longest match grows
 * a piece one character at a time, hashing incrementally, and stops at the
 * first string that is no entry's prefix.
 *
 * `encode_batch` and `encode_flat` read their texts, then tokenize them
 * without the GIL (taking it back only for a COMPLEX word), so Python
 * threads can tokenize batches in parallel with one tokenizer.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_wordpiece_tables.h"

#define F_DROP 1
#define F_SPACE 2
#define F_CJK 4
#define F_PUNCT 8
#define F_COMPLEX 16
#define F_KEEP 32

static inline unsigned
char_class(Py_UCS4 cp)
{
    return table_stage2[(size_t)table_stage1[cp / TABLE_BLOCK] * TABLE_BLOCK
                        + cp % TABLE_BLOCK];
}

static inline unsigned
char_flags(Py_UCS4 cp)
{
    return table_flags[char_class(cp)];
}

/* ---------------------------------------------------------------------- */
/* Growable arrays. Raw allocations: a batch grows them without the GIL.
 * A failure returns -1 and sets no exception (the caller records it). */

typedef struct {
    Py_UCS4 *data;
    Py_ssize_t length, capacity;
} CodePoints;

static int
code_points_reserve(CodePoints *array, Py_ssize_t extra)
{
    if (array->length + extra <= array->capacity) {
        return 0;
    }
    Py_ssize_t capacity = array->capacity ? array->capacity : 256;
    while (capacity < array->length + extra) {
        capacity *= 2;
    }
    Py_UCS4 *data = PyMem_RawRealloc(array->data,
                                     capacity * sizeof(Py_UCS4));
    if (data == NULL) {
        return -1;
    }
    array->data = data;
    array->capacity = capacity;
    return 0;
}

typedef struct {
    int32_t *data;
    Py_ssize_t length, capacity;
} Ids;

static int
ids_append(Ids *ids, int32_t id)
{
    if (ids->length == ids->capacity) {
        Py_ssize_t capacity = ids->capacity ? ids->capacity * 2 : 1024;
        int32_t *data = PyMem_RawRealloc(ids->data,
                                         capacity * sizeof(int32_t));
        if (data == NULL) {
            return -1;
        }
        ids->data = data;
        ids->capacity = capacity;
    }
    ids->data[ids->length++] = id;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The vocabulary. */

typedef struct {
    uint64_t hash;
    uint32_t key_start;  /* in `pool` */
    uint32_t key_length;
    int32_t id;          /* -1: only a prefix of entries */
    int continuation;    /* a "##" entry, "##" left out of the key */
    PyObject *token;     /* the vocabulary's string; NULL for a prefix */
} Entry;

static const uint64_t HASH_SEED[2] = {0xcbf29ce484222325ULL,
                                      0x9e3779b97f4a7c15ULL};

static inline uint64_t
hash_step(uint64_t hash, Py_UCS4 cp)
{
    hash ^= cp;
    hash *= 0x100000001b3ULL;
    return hash ^ (hash >> 29);
}

typedef struct {
    PyObject_HEAD
    Entry *entries;
    Py_ssize_t entry_count, entry_capacity;
    uint32_t *slots;     /* entry index + 1; 0: empty */
    uint64_t slot_mask;
    Py_UCS4 *pool;
    Py_ssize_t pool_length, pool_capacity;
    int do_lower_case;
    Py_ssize_t max_chars;
    int32_t unk_id;      /* -1: the unknown token is not in the vocabulary */
    PyObject *unk_token;
    PyObject **id_objects;  /* id -> int object */
    Py_ssize_t id_count;
    PyObject *tokenize_word;  /* Python: COMPLEX words, lower-cased */
} TokenizerObject;

/* Continuations hash from another seed, so one table holds both kinds. */
static inline Entry *
find_entry(TokenizerObject *self, uint64_t hash, int continuation,
           const Py_UCS4 *key, Py_ssize_t length)
{
    uint64_t slot = hash & self->slot_mask;
    for (;;) {
        uint32_t index = self->slots[slot];
        if (index == 0) {
            return NULL;
        }
        Entry *entry = &self->entries[index - 1];
        if (entry->hash == hash && entry->key_length == length
            && entry->continuation == continuation
            && memcmp(self->pool + entry->key_start, key,
                      length * sizeof(Py_UCS4)) == 0) {
            return entry;
        }
        slot = (slot + 1) & self->slot_mask;
    }
}

static int
grow_slots(TokenizerObject *self)
{
    uint64_t size = (self->slot_mask + 1) * 2;
    uint32_t *slots = PyMem_Calloc(size, sizeof(uint32_t));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->entry_count; i++) {
        uint64_t slot = self->entries[i].hash & (size - 1);
        while (slots[slot] != 0) {
            slot = (slot + 1) & (size - 1);
        }
        slots[slot] = (uint32_t)(i + 1);
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->slot_mask = size - 1;
    return 0;
}

/* The entry of `key` (whose hash is `hash`), added if missing. */
static Entry *
add_entry(TokenizerObject *self, uint64_t hash, int continuation,
          const Py_UCS4 *key, Py_ssize_t length)
{
    Entry *entry = find_entry(self, hash, continuation, key, length);
    if (entry != NULL) {
        return entry;
    }
    if ((uint64_t)(self->entry_count + 1) * 2 > self->slot_mask + 1
        && grow_slots(self) < 0) {
        return NULL;
    }
    if (self->entry_count == self->entry_capacity) {
        Py_ssize_t capacity = self->entry_capacity * 2 + 1024;
        Entry *entries = PyMem_Realloc(self->entries,
                                       capacity * sizeof(Entry));
        if (entries == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        self->entries = entries;
        self->entry_capacity = capacity;
    }
    if (self->pool_length + length > self->pool_capacity) {
        Py_ssize_t capacity = self->pool_capacity * 2 + length + 4096;
        Py_UCS4 *pool = PyMem_Realloc(self->pool,
                                      capacity * sizeof(Py_UCS4));
        if (pool == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        self->pool = pool;
        self->pool_capacity = capacity;
    }
    memcpy(self->pool + self->pool_length, key, length * sizeof(Py_UCS4));
    entry = &self->entries[self->entry_count];
    entry->hash = hash;
    entry->key_start = (uint32_t)self->pool_length;
    entry->key_length = (uint32_t)length;
    entry->id = -1;
    entry->continuation = continuation;
    entry->token = NULL;
    self->pool_length += length;
    uint64_t slot = hash & self->slot_mask;
    while (self->slots[slot] != 0) {
        slot = (slot + 1) & self->slot_mask;
    }
    self->slots[slot] = (uint32_t)(++self->entry_count);
    return entry;
}

/* Adds `key` and its prefixes; the whole key gets `id` and `token`. */
static int
add_key(TokenizerObject *self, const Py_UCS4 *key, Py_ssize_t length,
        int continuation, int32_t id, PyObject *token)
{
    uint64_t hash = HASH_SEED[continuation];
    Entry *entry = NULL;
    for (Py_ssize_t end = 0; end < length; end++) {
        hash = hash_step(hash, key[end]);
        entry = add_entry(self, hash, continuation, key, end + 1);
        if (entry == NULL) {
            return -1;
        }
    }
    if (entry != NULL) {
        entry->id = id;
        Py_INCREF(token);
        Py_XSETREF(entry->token, token);
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Tokenizing. */

enum {
    ERROR_NONE = 0,
    ERROR_MEMORY,   /* an allocation failed */
    ERROR_UNKNOWN,  /* an id wanted for the unknown token, which has none */
    ERROR_PYTHON,   /* a Python exception is set */
};

/* One call's state: where the pieces go (ids, or token strings), its
 * buffers (per call: a call of Python code, `tokenize_word`, or a batch
 * without the GIL may let another thread use the same tokenizer
 * meanwhile), the error, and the thread state while the GIL is released
 * (NULL while it is held). */
typedef struct {
    Ids *ids;
    PyObject *tokens;  /* a list, or NULL */
    CodePoints word, lowered;
    int error;
    PyThreadState *released;
} Output;

static void
output_free_buffers(Output *output)
{
    PyMem_RawFree(output->word.data);
    PyMem_RawFree(output->lowered.data);
}

/* Sets the Python exception of `output->error` (with the GIL). */
static void
set_exception(Output *output)
{
    if (output->error == ERROR_MEMORY) {
        PyErr_NoMemory();
    }
    else if (output->error == ERROR_UNKNOWN) {
        PyErr_SetString(PyExc_KeyError, "unknown token not in vocabulary");
    }
}

static int
fail(Output *output, int error)
{
    output->error = error;
    return -1;
}

static int
emit(Output *output, int32_t id, PyObject *token)
{
    if (output->tokens != NULL) {
        return PyList_Append(output->tokens, token) < 0
               ? fail(output, ERROR_PYTHON) : 0;
    }
    if (id < 0) {
        return fail(output, ERROR_UNKNOWN);
    }
    return ids_append(output->ids, id) < 0 ? fail(output, ERROR_MEMORY) : 0;
}

/* WordPiece of one basic token. */
static int
wordpiece(TokenizerObject *self, const Py_UCS4 *token, Py_ssize_t length,
          Output *output)
{
    if (length == 0) {
        return 0;
    }
    if (length > self->max_chars) {
        return emit(output, self->unk_id, self->unk_token);
    }
    /* At most one piece per character. */
    Entry *stack_pieces[256];
    Entry **pieces = stack_pieces;
    if (length > 256) {
        pieces = PyMem_RawMalloc(length * sizeof(Entry *));
        if (pieces == NULL) {
            return fail(output, ERROR_MEMORY);
        }
    }
    Py_ssize_t piece_count = 0;
    Py_ssize_t start = 0;
    int continuation = 0;
    while (start < length) {
        uint64_t hash = HASH_SEED[continuation];
        Entry *best = NULL;
        for (Py_ssize_t end = start; end < length; end++) {
            hash = hash_step(hash, token[end]);
            Entry *entry = find_entry(self, hash, continuation,
                                      token + start, end - start + 1);
            if (entry == NULL) {
                break;
            }
            if (entry->id >= 0) {
                best = entry;
            }
        }
        if (best == NULL) {
            break;
        }
        pieces[piece_count++] = best;
        start += best->key_length;
        continuation = 1;
    }
    int result = 0;
    if (start < length) {
        /* A part no entry covers: the whole token is unknown. */
        result = emit(output, self->unk_id, self->unk_token);
    }
    else {
        for (Py_ssize_t i = 0; result == 0 && i < piece_count; i++) {
            result = emit(output, pieces[i]->id, pieces[i]->token);
        }
    }
    if (pieces != stack_pieces) {
        PyMem_RawFree(pieces);
    }
    return result;
}

/* Splits at punctuation, then word pieces. */
static int
split_punctuation(TokenizerObject *self, const Py_UCS4 *word,
                  Py_ssize_t length, Output *output)
{
    Py_ssize_t run_start = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (char_flags(word[i]) & F_PUNCT) {
            if (wordpiece(self, word + run_start, i - run_start, output) < 0
                || wordpiece(self, word + i, 1, output) < 0) {
                return -1;
            }
            run_start = i + 1;
        }
    }
    return wordpiece(self, word + run_start, length - run_start, output);
}

/* The pure-Python lower-casing of a word with COMPLEX characters (with
 * the GIL, taken back for it where the caller released it). */
static int
complex_word(TokenizerObject *self, const Py_UCS4 *word, Py_ssize_t length,
             Output *output)
{
    PyThreadState *released = output->released;
    if (released != NULL) {
        PyEval_RestoreThread(released);
        output->released = NULL;
    }
    int result = -1;
    PyObject *sequence = NULL;
    PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, word,
                                               length);
    if (text != NULL) {
        PyObject *tokens = PyObject_CallOneArg(self->tokenize_word, text);
        Py_DECREF(text);
        if (tokens != NULL) {
            sequence = PySequence_Fast(tokens, "tokenize_word: a list");
            Py_DECREF(tokens);
        }
    }
    if (sequence == NULL) {
        output->error = ERROR_PYTHON;
    }
    else {
        result = 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(sequence); i++) {
            PyObject *token = PySequence_Fast_GET_ITEM(sequence, i);
            Py_UCS4 *code_points = PyUnicode_AsUCS4Copy(token);
            if (code_points == NULL) {
                result = fail(output, ERROR_PYTHON);
                break;
            }
            result = wordpiece(self, code_points,
                               PyUnicode_GET_LENGTH(token), output);
            PyMem_Free(code_points);
            if (result < 0) {
                break;
            }
        }
        Py_DECREF(sequence);
    }
    if (released != NULL) {
        output->released = PyEval_SaveThread();
    }
    return result;
}

/* Basic tokens, then word pieces, of one whitespace-separated word. */
static int
word_pieces(TokenizerObject *self, int complex, Output *output)
{
    const Py_UCS4 *word = output->word.data;
    Py_ssize_t length = output->word.length;
    if (length == 0) {
        return 0;
    }
    output->word.length = 0;
    if (!self->do_lower_case) {
        return split_punctuation(self, word, length, output);
    }
    if (complex) {
        return complex_word(self, word, length, output);
    }
    CodePoints *lowered = &output->lowered;
    lowered->length = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        unsigned cls = char_class(word[i]);
        if (table_flags[cls] & F_KEEP) {
            if (code_points_reserve(lowered, 1) < 0) {
                return fail(output, ERROR_MEMORY);
            }
            lowered->data[lowered->length++] = word[i];
        }
        else {
            Py_ssize_t count = table_map_length[cls];
            if (code_points_reserve(lowered, count) < 0) {
                return fail(output, ERROR_MEMORY);
            }
            memcpy(lowered->data + lowered->length,
                   table_map_pool + table_map_start[cls],
                   count * sizeof(Py_UCS4));
            lowered->length += count;
        }
    }
    return split_punctuation(self, lowered->data, lowered->length, output);
}

static int
push_char(Output *output, Py_UCS4 cp)
{
    CodePoints *word = &output->word;
    if (word->length == word->capacity && code_points_reserve(word, 1) < 0) {
        return fail(output, ERROR_MEMORY);
    }
    word->data[word->length++] = cp;
    return 0;
}

/* A text's code points, for `tokenize_code_points`. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} Text;

/* `text` (str, or bytes read as UTF-8 dropping bad bytes) as a `Text`;
 * `*decoded` gets a new reference to the str that holds it, or NULL if
 * `text` does (with the GIL). */
static int
prepare_text(PyObject *text, Text *view, PyObject **decoded)
{
    *decoded = NULL;
    if (PyBytes_Check(text)) {
        *decoded = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(text),
                                        PyBytes_GET_SIZE(text), "ignore");
        if (*decoded == NULL) {
            return -1;
        }
        text = *decoded;
    }
    else if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_ValueError, "Unsupported string type: %R",
                     (PyObject *)Py_TYPE(text));
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) {
        Py_CLEAR(*decoded);
        return -1;
    }
#endif
    view->kind = PyUnicode_KIND(text);
    view->data = PyUnicode_DATA(text);
    view->length = PyUnicode_GET_LENGTH(text);
    return 0;
}

/* All pieces of one text: Google's BasicTokenizer and WordPiece in one
 * pass. Runs with or without the GIL (`output->released`). */
static int
tokenize_code_points(TokenizerObject *self, const Text *text, Output *output)
{
    int kind = text->kind;
    const void *data = text->data;
    int complex = 0;
    output->word.length = 0;
    for (Py_ssize_t i = 0; i < text->length; i++) {
        Py_UCS4 cp = PyUnicode_READ(kind, data, i);
        if (cp < 127 && cp > 32) {
            /* Printable ASCII: a letter, digit or punctuation. */
            if (push_char(output, cp) < 0) {
                return -1;
            }
            continue;
        }
        unsigned flags = char_flags(cp);
        if (flags & F_DROP) {
            continue;
        }
        if (flags & (F_SPACE | F_CJK)) {
            if (word_pieces(self, complex, output) < 0) {
                return -1;
            }
            complex = 0;
            if ((flags & F_CJK)
                && (push_char(output, cp) < 0
                    || word_pieces(self, 0, output) < 0)) {
                return -1;
            }
            continue;
        }
        complex |= flags & F_COMPLEX;
        if (push_char(output, cp) < 0) {
            return -1;
        }
    }
    return word_pieces(self, complex, output);
}

/* `tokenize_code_points` of one Python text, with the GIL. */
static int
tokenize_text(TokenizerObject *self, PyObject *text, Output *output)
{
    Text view;
    PyObject *decoded;
    if (prepare_text(text, &view, &decoded) < 0) {
        return -1;
    }
    int result = tokenize_code_points(self, &view, output);
    if (result < 0) {
        set_exception(output);
    }
    Py_XDECREF(decoded);
    return result;
}

/* ---------------------------------------------------------------------- */
/* The Python type. */

static int
Tokenizer_init(TokenizerObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"vocab", "do_lower_case", "unk_token",
                               "max_input_chars_per_word", "tokenize_word",
                               NULL};
    PyObject *vocab, *unk_token, *tokenize_word;
    int do_lower_case;
    Py_ssize_t max_chars;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!pUnO", keywords,
                                     &PyDict_Type, &vocab, &do_lower_case,
                                     &unk_token, &max_chars,
                                     &tokenize_word)) {
        return -1;
    }
    if (self->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tokenizer initialized twice");
        return -1;
    }
    self->do_lower_case = do_lower_case;
    self->max_chars = max_chars;
    Py_INCREF(tokenize_word);
    self->tokenize_word = tokenize_word;
    Py_INCREF(unk_token);
    self->unk_token = unk_token;
    self->slot_mask = 1023;
    self->slots = PyMem_Calloc(self->slot_mask + 1, sizeof(uint32_t));
    if (self->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* Ids are line numbers: at most a little over the number of entries. */
    Py_ssize_t id_count = 0;
    PyObject *key, *value;
    Py_ssize_t position = 0;
    while (PyDict_Next(vocab, &position, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyLong_Check(value)) {
            PyErr_SetString(PyExc_TypeError,
                            "vocab: a dict of str token -> int id");
            return -1;
        }
        long id = PyLong_AsLong(value);
        if (id < 0 || id >= INT32_MAX) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "vocab: id %ld of %R out of "
                             "range", id, key);
            }
            return -1;
        }
        if (id + 1 > id_count) {
            id_count = id + 1;
        }
    }
    self->id_objects = PyMem_Calloc(id_count ? id_count : 1,
                                    sizeof(PyObject *));
    if (self->id_objects == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->id_count = id_count;
    self->unk_id = -1;
    position = 0;
    while (PyDict_Next(vocab, &position, &key, &value)) {
        int32_t id = (int32_t)PyLong_AsLong(value);
        Py_INCREF(value);
        Py_XSETREF(self->id_objects[id], value);
        Py_UCS4 *code_points = PyUnicode_AsUCS4Copy(key);
        if (code_points == NULL) {
            return -1;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(key);
        int result = add_key(self, code_points, length, 0, id, key);
        if (result == 0 && length > 2 && code_points[0] == '#'
            && code_points[1] == '#') {
            result = add_key(self, code_points + 2, length - 2, 1, id, key);
        }
        PyMem_Free(code_points);
        if (result < 0) {
            return -1;
        }
        if (PyUnicode_Compare(key, unk_token) == 0) {
            self->unk_id = id;
        }
    }
    return 0;
}

static void
Tokenizer_dealloc(TokenizerObject *self)
{
    for (Py_ssize_t i = 0; i < self->entry_count; i++) {
        Py_XDECREF(self->entries[i].token);
    }
    for (Py_ssize_t i = 0; i < self->id_count; i++) {
        Py_XDECREF(self->id_objects[i]);
    }
    PyMem_Free(self->entries);
    PyMem_Free(self->slots);
    PyMem_Free(self->pool);
    PyMem_Free(self->id_objects);
    Py_XDECREF(self->unk_token);
    Py_XDECREF(self->tokenize_word);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
ids_to_list(TokenizerObject *self, const int32_t *ids, Py_ssize_t count)
{
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *id = self->id_objects[ids[i]];
        Py_INCREF(id);
        PyList_SET_ITEM(list, i, id);
    }
    return list;
}

static int
check_ready(TokenizerObject *self)
{
    if (self->slots == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Tokenizer not initialized");
        return -1;
    }
    return 0;
}

static PyObject *
Tokenizer_tokenize(TokenizerObject *self, PyObject *text)
{
    if (check_ready(self) < 0) {
        return NULL;
    }
    Output output = {NULL, PyList_New(0)};
    if (output.tokens == NULL) {
        return NULL;
    }
    int result = tokenize_text(self, text, &output);
    output_free_buffers(&output);
    if (result < 0) {
        Py_DECREF(output.tokens);
        return NULL;
    }
    return output.tokens;
}

static PyObject *
Tokenizer_encode(TokenizerObject *self, PyObject *text)
{
    if (check_ready(self) < 0) {
        return NULL;
    }
    Ids ids = {NULL, 0, 0};
    Output output = {&ids, NULL};
    PyObject *result = NULL;
    if (tokenize_text(self, text, &output) == 0) {
        result = ids_to_list(self, ids.data, ids.length);
    }
    output_free_buffers(&output);
    PyMem_RawFree(ids.data);
    return result;
}

/* The ids of every text of `texts` into `ids`, and each text's number of
 * ids into `lengths`, without the GIL once the texts are read. */
static int
encode_all(TokenizerObject *self, PyObject *texts, Ids *ids, Ids *lengths)
{
    /* A tuple: the texts stay alive while the GIL is released, whatever
     * another thread does to a list passed in. */
    PyObject *tuple = PySequence_Tuple(texts);
    if (tuple == NULL) {
        return -1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(tuple);
    Text *views = PyMem_RawMalloc((count ? count : 1) * sizeof(Text));
    PyObject *decoded = PyList_New(0);  /* bytes texts, decoded */
    int result = 0;
    if (views == NULL || decoded == NULL) {
        if (views == NULL) {
            PyErr_NoMemory();
        }
        result = -1;
    }
    for (Py_ssize_t i = 0; result == 0 && i < count; i++) {
        PyObject *text;
        result = prepare_text(PyTuple_GET_ITEM(tuple, i), &views[i], &text);
        if (result == 0 && text != NULL) {
            result = PyList_Append(decoded, text);
            Py_DECREF(text);
        }
    }
    if (result == 0) {
        Output output = {ids, NULL};
        output.released = PyEval_SaveThread();
        for (Py_ssize_t i = 0; result == 0 && i < count; i++) {
            Py_ssize_t before = ids->length;
            result = tokenize_code_points(self, &views[i], &output);
            if (result == 0
                && ids_append(lengths, (int32_t)(ids->length - before)) < 0) {
                result = fail(&output, ERROR_MEMORY);
            }
        }
        PyEval_RestoreThread(output.released);
        if (result < 0) {
            set_exception(&output);
        }
        output_free_buffers(&output);
    }
    PyMem_RawFree(views);
    Py_XDECREF(decoded);
    Py_DECREF(tuple);
    return result;
}

static PyObject *
Tokenizer_encode_batch(TokenizerObject *self, PyObject *texts)
{
    if (check_ready(self) < 0) {
        return NULL;
    }
    Ids ids = {NULL, 0, 0}, lengths = {NULL, 0, 0};
    PyObject *result = NULL;
    if (encode_all(self, texts, &ids, &lengths) == 0) {
        result = PyList_New(lengths.length);
        Py_ssize_t start = 0;
        for (Py_ssize_t i = 0; result != NULL && i < lengths.length; i++) {
            PyObject *list = ids_to_list(self, ids.data + start,
                                         lengths.data[i]);
            if (list == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(result, i, list);
            start += lengths.data[i];
        }
    }
    PyMem_RawFree(ids.data);
    PyMem_RawFree(lengths.data);
    return result;
}

/* (ids, lengths): int32 bytes of the ids of all texts and of the number of
 * ids of each text. */
static PyObject *
Tokenizer_encode_flat(TokenizerObject *self, PyObject *texts)
{
    if (check_ready(self) < 0) {
        return NULL;
    }
    Ids ids = {NULL, 0, 0}, lengths = {NULL, 0, 0};
    PyObject *result = NULL;
    if (encode_all(self, texts, &ids, &lengths) == 0) {
        /* "y#" of NULL is None: an empty array is "". */
        result = Py_BuildValue(
            "(y#y#)", ids.data ? (const char *)ids.data : "",
            (Py_ssize_t)(ids.length * sizeof(int32_t)),
            lengths.data ? (const char *)lengths.data : "",
            (Py_ssize_t)(lengths.length * sizeof(int32_t)));
    }
    PyMem_RawFree(ids.data);
    PyMem_RawFree(lengths.data);
    return result;
}

static PyMethodDef Tokenizer_methods[] = {
    {"tokenize", (PyCFunction)Tokenizer_tokenize, METH_O,
     "Word pieces of a text (str, or UTF-8 bytes)."},
    {"encode", (PyCFunction)Tokenizer_encode, METH_O,
     "Ids of the word pieces of a text."},
    {"encode_batch", (PyCFunction)Tokenizer_encode_batch, METH_O,
     "A list of the ids of each text."},
    {"encode_flat", (PyCFunction)Tokenizer_encode_flat, METH_O,
     "(ids, lengths): int32 bytes of all ids and of each text's count."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TokenizerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bert_tf.text._wordpiece_native.Tokenizer",
    .tp_doc = "Tokenizer(vocab, do_lower_case, unk_token, "
              "max_input_chars_per_word, tokenize_word): Google's "
              "FullTokenizer over `vocab` (dict token -> id); "
              "`tokenize_word(word)` gives the basic tokens of a "
              "lower-cased word the tables cannot.",
    .tp_basicsize = sizeof(TokenizerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Tokenizer_init,
    .tp_dealloc = (destructor)Tokenizer_dealloc,
    .tp_methods = Tokenizer_methods,
};

/* The tables as bytes, for the test that regenerates them. */
static PyObject *
tables(PyObject *module, PyObject *unused)
{
    return Py_BuildValue(
        "{s:y#,s:y#,s:y#,s:y#,s:y#,s:y#}",
        "stage1", (const char *)table_stage1, (Py_ssize_t)sizeof(table_stage1),
        "stage2", (const char *)table_stage2, (Py_ssize_t)sizeof(table_stage2),
        "flags", (const char *)table_flags, (Py_ssize_t)sizeof(table_flags),
        "map_start", (const char *)table_map_start,
        (Py_ssize_t)sizeof(table_map_start),
        "map_length", (const char *)table_map_length,
        (Py_ssize_t)sizeof(table_map_length),
        "map_pool", (const char *)table_map_pool,
        (Py_ssize_t)sizeof(table_map_pool));
}

static PyMethodDef module_methods[] = {
    {"tables", tables, METH_NOARGS,
     "The character tables, as bytes (native byte order)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_wordpiece_native",
    "Google's FullTokenizer in C (see bert_tf/text/tokenization.py).", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__wordpiece_native(void)
{
    if (PyType_Ready(&TokenizerType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_definition);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&TokenizerType);
    if (PyModule_AddObject(module, "Tokenizer",
                           (PyObject *)&TokenizerType) < 0
        || PyModule_AddStringConstant(module, "UNIDATA_VERSION",
                                      UNIDATA_VERSION) < 0) {
        Py_DECREF(&TokenizerType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

