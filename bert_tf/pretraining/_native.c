/* create_pretraining_data's inner loops in C: Google's RNG, and its
 * instances.
 *
 * 1. `Twin`: Python's `random.Random`, replayed.
 *
 * Google's create_pretraining_data.py draws everything from one
 * `random.Random(seed)`; its output depends on the exact sequence of draws.
 * Most of its time is the masking shuffle: a Fisher-Yates shuffle of every
 * instance's ~125 candidate positions, one rejection-sampled draw per
 * element, each a Python-level step. `Twin` is a generator with the same
 * Mersenne Twister (MT19937) state as a given `random.Random` that makes the
 * same draws as its methods, word for word:
 *
 *   getrandbits(k), k <= 64: 32-bit words, least significant first, the
 *     last one shifted right to keep its top bits;
 *   randbelow(n): getrandbits(n.bit_length()) until below n
 *     (`Random._randbelow_with_getrandbits`);
 *   random(): (a * 2**26 + b) / 2**53 with a, b the top 27 and 26 bits of
 *     two words;
 *   shuffle(x): for i from len(x) - 1 down to 1, swap x[i] and
 *     x[randbelow(i + 1)] (`Random.shuffle`), on a list or any writable
 *     buffer (e.g. `array.array`), here without a Python step per element.
 *
 * Its state goes in and out in the form of `Random.getstate()[1]` (624
 * words and the position), so a `random.Random` can hand its stream to a
 * `Twin` and take it back where the `Twin` left it. bert_tf/data/
 * exact_random.py checks a `Twin` against this Python's `random.Random`
 * before using it, and without this extension uses Python's generator.
 *
 * 2. `append_instances`: one pass of Google's
 * `create_instances_from_document` over a range of documents (the caller
 * goes through a pass in ranges: bounded memory, Ctrl-C between them),
 * drawing from a
 * `Twin`: the same loop, line for line, as `_append_all_instances` in
 * bert_tf/data/pretraining_instances.py (which documents it and is what
 * runs without this extension); tests hold the two to the same records.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* MT19937 (Matsumoto and Nishimura, 1998). */
#define STATE_WORDS 624
#define SHIFT_SIZE 397
#define MATRIX_A 0x9908b0dfU
#define UPPER_MASK 0x80000000U
#define LOWER_MASK 0x7fffffffU

typedef struct {
    PyObject_HEAD
    uint32_t state[STATE_WORDS];
    int index; /* Next word of `state` to temper; STATE_WORDS: regenerate. */
} TwinObject;

static void
regenerate(TwinObject *self)
{
    uint32_t *mt = self->state;
    for (int k = 0; k < STATE_WORDS; k++) {
        uint32_t y = (mt[k] & UPPER_MASK)
                     | (mt[(k + 1) % STATE_WORDS] & LOWER_MASK);
        mt[k] = mt[(k + SHIFT_SIZE) % STATE_WORDS] ^ (y >> 1)
                ^ ((y & 1U) ? MATRIX_A : 0U);
    }
    self->index = 0;
}

static inline uint32_t
next_word(TwinObject *self)
{
    if (self->index >= STATE_WORDS) {
        regenerate(self);
    }
    uint32_t y = self->state[self->index++];
    /* Tempering. */
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= y >> 18;
    return y;
}

/* The top `bits` (1..64) bits of the stream, as `getrandbits(bits)`. */
static inline uint64_t
next_bits(TwinObject *self, int bits)
{
    if (bits <= 32) {
        return next_word(self) >> (32 - bits);
    }
    uint64_t low = next_word(self);
    uint64_t high = next_word(self) >> (64 - bits);
    return low | (high << 32);
}

static inline int
bit_length(uint64_t n)
{
    int length = 0;
    while (n) {
        length++;
        n >>= 1;
    }
    return length;
}

/* A uniform integer in [0, n), n >= 1, as `Random._randbelow(n)`. */
static inline uint64_t
below(TwinObject *self, uint64_t n)
{
    int bits = bit_length(n);
    uint64_t r = next_bits(self, bits);
    while (r >= n) {
        r = next_bits(self, bits);
    }
    return r;
}

/* A float in [0, 1), as `Random.random()`. */
static inline double
uniform(TwinObject *self)
{
    uint32_t a = next_word(self) >> 5;
    uint32_t b = next_word(self) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

/* `Random.shuffle` of `count` int64s in place. */
static void
shuffle_int64(TwinObject *self, int64_t *values, int64_t count)
{
    for (int64_t i = count - 1; i > 0; i--) {
        int64_t j = (int64_t)below(self, (uint64_t)i + 1);
        int64_t value = values[i];
        values[i] = values[j];
        values[j] = value;
    }
}

static int
set_state(TwinObject *self, PyObject *state)
{
    if (!PyTuple_Check(state) || PyTuple_GET_SIZE(state) != STATE_WORDS + 1) {
        PyErr_SetString(PyExc_ValueError,
                        "state must be a tuple of 625 ints, as "
                        "random.Random().getstate()[1]");
        return -1;
    }
    for (int i = 0; i < STATE_WORDS; i++) {
        unsigned long word = PyLong_AsUnsignedLong(
            PyTuple_GET_ITEM(state, i));
        if (word == (unsigned long)-1 && PyErr_Occurred()) {
            return -1;
        }
        if (word > 0xffffffffUL) {
            PyErr_SetString(PyExc_ValueError, "state word out of range");
            return -1;
        }
        self->state[i] = (uint32_t)word;
    }
    long index = PyLong_AsLong(PyTuple_GET_ITEM(state, STATE_WORDS));
    if (index == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (index < 0 || index > STATE_WORDS) {
        PyErr_SetString(PyExc_ValueError, "state position out of range");
        return -1;
    }
    self->index = (int)index;
    return 0;
}

static int
Twin_init(TwinObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *state;
    static char *keywords[] = {"state", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", keywords, &state)) {
        return -1;
    }
    return set_state(self, state);
}

static PyObject *
Twin_getstate(TwinObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *state = PyTuple_New(STATE_WORDS + 1);
    if (state == NULL) {
        return NULL;
    }
    for (int i = 0; i <= STATE_WORDS; i++) {
        PyObject *value = i < STATE_WORDS
            ? PyLong_FromUnsignedLong(self->state[i])
            : PyLong_FromLong(self->index);
        if (value == NULL) {
            Py_DECREF(state);
            return NULL;
        }
        PyTuple_SET_ITEM(state, i, value);
    }
    return state;
}

static PyObject *
Twin_random(TwinObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyFloat_FromDouble(uniform(self));
}

static PyObject *
Twin_getrandbits(TwinObject *self, PyObject *arg)
{
    long bits = PyLong_AsLong(arg);
    if (bits == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (bits < 0 || bits > 64) {
        PyErr_SetString(PyExc_ValueError, "getrandbits: bits must be 0..64");
        return NULL;
    }
    if (bits == 0) {
        return PyLong_FromLong(0);
    }
    return PyLong_FromUnsignedLongLong(next_bits(self, (int)bits));
}

static PyObject *
Twin_randbelow(TwinObject *self, PyObject *arg)
{
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "randbelow: n must be positive");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(below(self, n));
}

static PyObject *
Twin_shuffle(TwinObject *self, PyObject *items)
{
    if (PyList_CheckExact(items)) {
        /* Swapping the item pointers is `x[i], x[j] = x[j], x[i]`; no
         * Python code runs, so the list cannot change meanwhile. */
        PyObject **values = ((PyListObject *)items)->ob_item;
        for (Py_ssize_t i = PyList_GET_SIZE(items) - 1; i > 0; i--) {
            Py_ssize_t j = (Py_ssize_t)below(self, (uint64_t)i + 1);
            PyObject *value = values[i];
            values[i] = values[j];
            values[j] = value;
        }
        Py_RETURN_NONE;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(items, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
            < 0) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "shuffle: needs a list or a writable contiguous "
                        "buffer (e.g. array.array)");
        return NULL;
    }
    Py_ssize_t size = view.itemsize;
    if (size <= 0 || size > 16 || view.len % size != 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "shuffle: unsupported item size");
        return NULL;
    }
    char *data = (char *)view.buf;
    char swap[16];
    for (Py_ssize_t i = view.len / size - 1; i > 0; i--) {
        Py_ssize_t j = (Py_ssize_t)below(self, (uint64_t)i + 1);
        memcpy(swap, data + i * size, size);
        memcpy(data + i * size, data + j * size, size);
        memcpy(data + j * size, swap, size);
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyMethodDef Twin_methods[] = {
    {"getstate", (PyCFunction)Twin_getstate, METH_NOARGS,
     "The state, as random.Random().getstate()[1]."},
    {"random", (PyCFunction)Twin_random, METH_NOARGS,
     "A float in [0, 1), as random.Random.random."},
    {"getrandbits", (PyCFunction)Twin_getrandbits, METH_O,
     "An int of k random bits (k <= 64), as random.Random.getrandbits."},
    {"randbelow", (PyCFunction)Twin_randbelow, METH_O,
     "An int in [0, n) (n < 2**64), as random.Random._randbelow."},
    {"shuffle", (PyCFunction)Twin_shuffle, METH_O,
     "Shuffles a list or writable buffer in place, as "
     "random.Random.shuffle."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TwinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bert_tf.pretraining._native.Twin",
    .tp_doc = PyDoc_STR(
        "Twin(state): MT19937 draws identical to a random.Random whose "
        "getstate()[1] is `state`."),
    .tp_basicsize = sizeof(TwinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Twin_init,
    .tp_methods = Twin_methods,
};


/* ------------------------------------------------------------------------
 * append_instances
 * ------------------------------------------------------------------------ */

#define KEEP_ORIGINAL (-1)

typedef struct {
    char *data;
    Py_ssize_t length; /* Bytes used. */
    Py_ssize_t capacity;
} Growing;

static int
grow_append(Growing *out, const void *values, Py_ssize_t size)
{
    if (out->length + size > out->capacity) {
        Py_ssize_t capacity = out->capacity ? out->capacity : 1 << 16;
        while (capacity < out->length + size) {
            capacity *= 2;
        }
        char *data = PyMem_Realloc(out->data, capacity);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        out->data = data;
        out->capacity = capacity;
    }
    memcpy(out->data + out->length, values, size);
    out->length += size;
    return 0;
}

static PyObject *
grow_to_bytes(Growing *out)
{
    return PyBytes_FromStringAndSize(out->data ? out->data : "", out->length);
}

/* A read-only buffer argument with `count` items of `itemsize` bytes. */
static int
get_items(PyObject *object, Py_buffer *view, Py_ssize_t itemsize,
          const char *name)
{
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (view->len % itemsize != 0
            || (view->itemsize != itemsize && view->itemsize != 1)) {
        PyErr_Format(PyExc_TypeError,
                     "append_instances: %s must hold %zd-byte items",
                     name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

typedef struct {
    const int64_t *sentence_starts;
    const int32_t *tokens;
    Py_ssize_t num_tokens;
    const int64_t *first_sentence;
    const int64_t *num_sentences;
    Py_ssize_t num_documents;
    const int32_t *word_ids;
    Py_ssize_t num_words;
    const uint8_t *is_continuation;
    Py_ssize_t vocab_size;
    const uint8_t *joins_previous; /* NULL: no Chinese word segmentation. */
    const int64_t *num_to_predict;
    int64_t max_seq_length;
    double short_seq_prob;
    int32_t mask_id;
    int do_whole_word_mask;
    /* The documents of this call: [first_document, end_document). */
    int64_t first_document;
    int64_t end_document;
} Corpus;

/* `_whole_word_positions`: groups of candidates ("##" pieces and joined
 * CJK characters join the group before them), shuffled, taken whole. */
static int
whole_word_positions(TwinObject *rng, const Corpus *c,
                     const int64_t *candidates, int64_t num_candidates,
                     int64_t a_start,
                     int64_t b_start, int64_t b_offset,
                     int64_t num_to_predict, int64_t *group_starts,
                     int64_t *group_order, int64_t *positions)
{
    int64_t num_groups = 0;
    for (int64_t k = 0; k < num_candidates; k++) {
        int64_t position = candidates[k];
        int64_t index = position < b_offset ? a_start + position - 1
                                            : b_start + position - b_offset;
        int32_t token = c->tokens[index];
        if (token < 0 || token >= c->vocab_size) {
            PyErr_Format(PyExc_IndexError, "token id %d outside the "
                         "vocabulary", (int)token);
            return -1;
        }
        int joins = num_groups > 0 && (c->is_continuation[token]
            || (c->joins_previous != NULL && c->joins_previous[index]));
        if (!joins) {
            group_starts[num_groups++] = k;
        }
    }
    group_starts[num_groups] = num_candidates;
    /* Shuffling the list of groups = shuffling their indices. */
    for (int64_t g = 0; g < num_groups; g++) {
        group_order[g] = g;
    }
    shuffle_int64(rng, group_order, num_groups);
    int64_t count = 0;
    for (int64_t g = 0; g < num_groups; g++) {
        if (count >= num_to_predict) {
            break;
        }
        int64_t first = group_starts[group_order[g]];
        int64_t size = group_starts[group_order[g] + 1] - first;
        if (count + size > num_to_predict) {
            continue;
        }
        for (int64_t k = 0; k < size; k++) {
            positions[count++] = candidates[first + k];
        }
    }
    return (int)count;
}

/* The loop of `_append_all_instances`, with the same names. */
static int
all_instances(TwinObject *rng, const Corpus *c, Growing *fields_out,
              Growing *positions_out, Growing *replacements_out)
{
    const int64_t *sentence_starts = c->sentence_starts;
    int64_t max_num_tokens = c->max_seq_length - 3;
    Py_ssize_t scratch = (Py_ssize_t)c->max_seq_length + 1;
    int64_t *candidates = PyMem_Malloc(4 * scratch * sizeof(int64_t));
    if (candidates == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t *group_starts = candidates + scratch;
    int64_t *group_order = group_starts + scratch;
    int64_t *positions = group_order + scratch;
    int32_t *masked = PyMem_Malloc(2 * scratch * sizeof(int32_t));
    if (masked == NULL) {
        PyMem_Free(candidates);
        PyErr_NoMemory();
        return -1;
    }
    int32_t *replacements = masked + scratch;
    int status = -1;

    for (int64_t document_index = c->first_document;
         document_index < c->end_document; document_index++) {
        int64_t first = c->first_sentence[document_index];
        int64_t count = c->num_sentences[document_index];
        int64_t target_seq_length = max_num_tokens;
        if (uniform(rng) < c->short_seq_prob) {
            target_seq_length = 2 + (int64_t)below(
                rng, (uint64_t)(max_num_tokens - 1));
        }
        int64_t chunk_first = 0;
        int64_t chunk_start = sentence_starts[first];
        int64_t i = 0;
        while (i < count) {
            int64_t chunk_end = sentence_starts[first + i + 1];
            if (i == count - 1
                    || chunk_end - chunk_start >= target_seq_length) {
                int64_t chunk_size = i - chunk_first + 1;
                int64_t a_end = 1;
                if (chunk_size >= 2) {
                    a_end = 1 + (int64_t)below(
                        rng, (uint64_t)(chunk_size - 1));
                }
                int64_t a_start = chunk_start;
                int64_t a_length =
                    sentence_starts[first + chunk_first + a_end] - a_start;
                int64_t b_start, b_length, is_random_next;
                if (chunk_size == 1 || uniform(rng) < 0.5) {
                    is_random_next = 1;
                    int64_t target_b_length = target_seq_length - a_length;
                    int64_t random_document = 0;
                    for (int tries = 0; tries < 10; tries++) {
                        random_document = (int64_t)below(
                            rng, (uint64_t)c->num_documents);
                        if (random_document != document_index) {
                            break;
                        }
                    }
                    int64_t random_first = c->first_sentence[random_document];
                    int64_t random_end =
                        random_first + c->num_sentences[random_document];
                    int64_t sentence = random_first + (int64_t)below(
                        rng, (uint64_t)c->num_sentences[random_document]);
                    b_start = sentence_starts[sentence];
                    sentence += 1;
                    int64_t b_end = sentence_starts[sentence];
                    while (b_end - b_start < target_b_length
                           && sentence < random_end) {
                        sentence += 1;
                        b_end = sentence_starts[sentence];
                    }
                    b_length = b_end - b_start;
                    i -= chunk_size - a_end;
                } else {
                    is_random_next = 0;
                    b_start = a_start + a_length;
                    b_length = chunk_end - b_start;
                }

                while (a_length + b_length > max_num_tokens) {
                    if (a_length > b_length) {
                        if (uniform(rng) < 0.5) {
                            a_start += 1;
                        }
                        a_length -= 1;
                    } else {
                        if (uniform(rng) < 0.5) {
                            b_start += 1;
                        }
                        b_length -= 1;
                    }
                }

                int64_t b_offset = a_length + 2;
                int64_t num_to_predict =
                    c->num_to_predict[a_length + b_length + 3];
                int64_t num_candidates = 0;
                for (int64_t p = 1; p <= a_length; p++) {
                    candidates[num_candidates++] = p;
                }
                for (int64_t p = b_offset; p < b_offset + b_length; p++) {
                    candidates[num_candidates++] = p;
                }
                int64_t num_positions;
                if (c->do_whole_word_mask) {
                    int got = whole_word_positions(
                        rng, c, candidates, num_candidates, a_start, b_start,
                        b_offset, num_to_predict, group_starts, group_order,
                        positions);
                    if (got < 0) {
                        goto done;
                    }
                    num_positions = got;
                } else {
                    shuffle_int64(rng, candidates, num_candidates);
                    num_positions = num_candidates < num_to_predict
                                    ? num_candidates : num_to_predict;
                    memcpy(positions, candidates,
                           num_positions * sizeof(int64_t));
                }
                for (int64_t k = 0; k < num_positions; k++) {
                    masked[k] = (int32_t)positions[k];
                    if (uniform(rng) < 0.8) {
                        replacements[k] = c->mask_id;
                    } else if (uniform(rng) < 0.5) {
                        replacements[k] = KEEP_ORIGINAL;
                    } else {
                        replacements[k] = c->word_ids[
                            below(rng, (uint64_t)c->num_words)];
                    }
                }
                int64_t fields[6] = {a_start, a_length, b_start, b_length,
                                     is_random_next, num_positions};
                if (grow_append(fields_out, fields, sizeof(fields)) < 0
                        || grow_append(positions_out, masked,
                                       num_positions * sizeof(int32_t)) < 0
                        || grow_append(replacements_out, replacements,
                                       num_positions * sizeof(int32_t)) < 0) {
                    goto done;
                }

                chunk_first = i + 1;
                chunk_start = sentence_starts[first + chunk_first];
            }
            i += 1;
        }
    }
    status = 0;
done:
    PyMem_Free(candidates);
    PyMem_Free(masked);
    return status;
}

static PyObject *
append_instances(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *rng_object, *sentence_starts, *tokens, *first_sentence,
        *num_sentences, *word_ids, *is_continuation, *joins_previous,
        *num_to_predict;
    long long max_seq_length, first_document, end_document;
    double short_seq_prob;
    int mask_id, do_whole_word_mask;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOLdipLL:append_instances",
                          &TwinType, &rng_object, &sentence_starts, &tokens,
                          &first_sentence, &num_sentences, &word_ids,
                          &is_continuation, &joins_previous, &num_to_predict,
                          &max_seq_length, &short_seq_prob, &mask_id,
                          &do_whole_word_mask, &first_document,
                          &end_document)) {
        return NULL;
    }
    Py_buffer views[8];
    PyObject *objects[8] = {sentence_starts, tokens, first_sentence,
                            num_sentences, word_ids, is_continuation,
                            num_to_predict, joins_previous};
    const Py_ssize_t itemsizes[8] = {8, 4, 8, 8, 4, 1, 8, 1};
    const char *names[8] = {"sentence_starts", "tokens", "first_sentence",
                            "num_sentences", "word_ids", "is_continuation",
                            "num_to_predict", "joins_previous"};
    int num_views = joins_previous == Py_None ? 7 : 8;
    int acquired = 0;
    PyObject *result = NULL;
    Growing fields = {0}, positions = {0}, replacements = {0};
    for (; acquired < num_views; acquired++) {
        if (get_items(objects[acquired], &views[acquired],
                      itemsizes[acquired], names[acquired]) < 0) {
            goto done;
        }
    }
    Corpus corpus = {
        .sentence_starts = views[0].buf,
        .tokens = views[1].buf,
        .num_tokens = views[1].len / 4,
        .first_sentence = views[2].buf,
        .num_sentences = views[3].buf,
        .num_documents = views[2].len / 8,
        .word_ids = views[4].buf,
        .num_words = views[4].len / 4,
        .is_continuation = views[5].buf,
        .vocab_size = views[5].len,
        .joins_previous = num_views == 8 ? views[7].buf : NULL,
        .num_to_predict = views[6].buf,
        .max_seq_length = max_seq_length,
        .short_seq_prob = short_seq_prob,
        .mask_id = mask_id,
        .do_whole_word_mask = do_whole_word_mask,
        .first_document = first_document,
        .end_document = end_document,
    };
    if (views[3].len != views[2].len || max_seq_length < 5
            || views[6].len / 8 < max_seq_length + 1
            || corpus.num_documents < 1 || corpus.num_words < 1
            || first_document < 0 || first_document > end_document
            || end_document > corpus.num_documents
            || (num_views == 8 && views[7].len < corpus.num_tokens)) {
        PyErr_SetString(PyExc_ValueError,
                        "append_instances: inconsistent arguments");
        goto done;
    }
    if (all_instances((TwinObject *)rng_object, &corpus, &fields, &positions,
                      &replacements) < 0) {
        goto done;
    }
    result = Py_BuildValue("(NNN)", grow_to_bytes(&fields),
                           grow_to_bytes(&positions),
                           grow_to_bytes(&replacements));
done:
    for (int k = 0; k < acquired; k++) {
        PyBuffer_Release(&views[k]);
    }
    PyMem_Free(fields.data);
    PyMem_Free(positions.data);
    PyMem_Free(replacements.data);
    return result;
}

static PyMethodDef module_methods[] = {
    {"append_instances", append_instances, METH_VARARGS,
     "append_instances(twin, sentence_starts, tokens, first_sentence, "
     "num_sentences, word_ids, is_continuation, joins_previous, "
     "num_to_predict, max_seq_length, short_seq_prob, mask_id, "
     "do_whole_word_mask, first_document, end_document) -> (fields, "
     "positions, replacements): documents [first_document, end_document) "
     "of one pass of `_append_all_instances`; int64 fields (6 an "
     "instance), int32 masked positions and replacement ids, as bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef pretraining_native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = PyDoc_STR(
        "create_pretraining_data's RNG and instance loop in C."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    if (PyType_Ready(&TwinType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&pretraining_native_module);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&TwinType);
    if (PyModule_AddObject(module, "Twin", (PyObject *)&TwinType) < 0) {
        Py_DECREF(&TwinType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
