/* Python's `random.Random`, replayed in C for create_pretraining_data.
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
    uint32_t a = next_word(self) >> 5;
    uint32_t b = next_word(self) >> 6;
    return PyFloat_FromDouble((a * 67108864.0 + b) * (1.0 / 9007199254740992.0));
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
    .tp_name = "bert_tf.data._exact_random.Twin",
    .tp_doc = PyDoc_STR(
        "Twin(state): MT19937 draws identical to a random.Random whose "
        "getstate()[1] is `state`."),
    .tp_basicsize = sizeof(TwinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Twin_init,
    .tp_methods = Twin_methods,
};

static struct PyModuleDef exact_random_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_exact_random",
    .m_doc = PyDoc_STR("Python's random.Random draws, replayed in C."),
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__exact_random(void)
{
    if (PyType_Ready(&TwinType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&exact_random_module);
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
