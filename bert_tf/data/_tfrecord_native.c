/* TFRecord framing in C, for bert_tf/data/tfrecord_files.py.
 *
 * A TFRecord file is, per record: the length (uint64, little-endian), the
 * masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data
 * (both uint32, little-endian). `frame_round_robin(data, lengths,
 * num_files)` takes many records laid end to end in one buffer (as numpy
 * builds them) and returns the framed bytes of records k, k + num_files,
 * ... for each file k: no Python object per record. `lay_out_rows` lays
 * out such records from the padded byte rows numpy builds them in. tfrecord_files.py does
 * the same in numpy where this extension is not built, and its tests hold
 * both to TensorFlow's own reader.
 *
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) uses the CPU's
 * crc32 instruction on x86-64 with SSE4.2, else slicing-by-8 tables.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_POLYNOMIAL 0x82F63B78U
#define CRC_MASK_DELTA 0xA282EAD8U

static uint32_t crc_tables[8][256];

static void
make_crc_tables(void)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ ((crc & 1) ? CRC32C_POLYNOMIAL : 0);
        }
        crc_tables[0][byte] = crc;
    }
    for (int table = 1; table < 8; table++) {
        for (int byte = 0; byte < 256; byte++) {
            uint32_t previous = crc_tables[table - 1][byte];
            crc_tables[table][byte] =
                (previous >> 8) ^ crc_tables[0][previous & 0xFF];
        }
    }
}

static uint32_t
crc32c_tables(const unsigned char *data, size_t length)
{
    uint32_t crc = 0xFFFFFFFFU;
    while (length >= 8) {
        /* Little-endian words, whatever the machine's byte order. */
        uint32_t low = crc ^ ((uint32_t)data[0] | (uint32_t)data[1] << 8
                              | (uint32_t)data[2] << 16
                              | (uint32_t)data[3] << 24);
        uint32_t high = (uint32_t)data[4] | (uint32_t)data[5] << 8
                        | (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24;
        crc = crc_tables[7][low & 0xFF] ^ crc_tables[6][(low >> 8) & 0xFF]
              ^ crc_tables[5][(low >> 16) & 0xFF] ^ crc_tables[4][low >> 24]
              ^ crc_tables[3][high & 0xFF]
              ^ crc_tables[2][(high >> 8) & 0xFF]
              ^ crc_tables[1][(high >> 16) & 0xFF]
              ^ crc_tables[0][high >> 24];
        data += 8;
        length -= 8;
    }
    while (length--) {
        crc = crc_tables[0][(crc ^ *data++) & 0xFF] ^ (crc >> 8);
    }
    return crc ^ 0xFFFFFFFFU;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_HARDWARE_CRC 1
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hardware(const unsigned char *data, size_t length)
{
    uint64_t crc = 0xFFFFFFFFU;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, data, 8);
        crc = __builtin_ia32_crc32di(crc, word);
        data += 8;
        length -= 8;
    }
    uint32_t crc32 = (uint32_t)crc;
    while (length--) {
        crc32 = __builtin_ia32_crc32qi(crc32, *data++);
    }
    return crc32 ^ 0xFFFFFFFFU;
}
#endif

static uint32_t (*crc32c)(const unsigned char *, size_t) = crc32c_tables;

static void
put_masked_crc(unsigned char *out, const unsigned char *data, size_t length)
{
    uint32_t crc = crc32c(data, length);
    uint32_t masked = ((crc >> 15) | (crc << 17)) + CRC_MASK_DELTA;
    for (int i = 0; i < 4; i++) {
        out[i] = (unsigned char)(masked >> (8 * i));
    }
}

/* Frames records index, index + step, ... into `out` (sized by the
 * caller). */
static void
frame_every(const unsigned char *data, const int64_t *lengths,
            const int64_t *starts, Py_ssize_t count, Py_ssize_t first,
            Py_ssize_t step, unsigned char *out)
{
    for (Py_ssize_t r = first; r < count; r += step) {
        uint64_t length = (uint64_t)lengths[r];
        for (int i = 0; i < 8; i++) {
            out[i] = (unsigned char)(length >> (8 * i));
        }
        put_masked_crc(out + 8, out, 8);
        memcpy(out + 12, data + starts[r], (size_t)length);
        put_masked_crc(out + 12 + length, data + starts[r], (size_t)length);
        out += 16 + length;
    }
}

static PyObject *
frame_round_robin(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *data_object, *lengths_object;
    Py_ssize_t num_files;
    if (!PyArg_ParseTuple(args, "OOn:frame_round_robin", &data_object,
                          &lengths_object, &num_files)) {
        return NULL;
    }
    if (num_files < 1) {
        PyErr_SetString(PyExc_ValueError, "num_files must be at least 1");
        return NULL;
    }
    Py_buffer data, lengths;
    if (PyObject_GetBuffer(data_object, &data, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(lengths_object, &lengths,
                           PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    PyObject *result = NULL;
    int64_t *starts = NULL;
    Py_ssize_t *sizes = NULL;
    unsigned char **outs = NULL;
    if (lengths.itemsize != 8 || lengths.format == NULL
        || (strcmp(lengths.format, "q") != 0
            && strcmp(lengths.format, "l") != 0
            && strcmp(lengths.format, "<q") != 0
            && strcmp(lengths.format, "<i8") != 0)) {
        PyErr_SetString(PyExc_TypeError,
                        "lengths must be a buffer of int64");
        goto done;
    }
    Py_ssize_t count = lengths.len / 8;
    const int64_t *record_lengths = (const int64_t *)lengths.buf;
    starts = PyMem_Malloc(sizeof(int64_t) * (count ? count : 1));
    sizes = PyMem_Calloc(num_files, sizeof(Py_ssize_t));
    if (starts == NULL || sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t total = 0;
    for (Py_ssize_t r = 0; r < count; r++) {
        if (record_lengths[r] < 0 || total + record_lengths[r] > data.len) {
            PyErr_SetString(PyExc_ValueError,
                            "the record lengths exceed the data");
            goto done;
        }
        starts[r] = total;
        total += record_lengths[r];
        sizes[r % num_files] += 16 + record_lengths[r];
    }
    result = PyList_New(num_files);
    if (result == NULL) {
        goto done;
    }
    outs = PyMem_Calloc(num_files, sizeof(unsigned char *));
    if (outs == NULL) {
        PyErr_NoMemory();
        Py_CLEAR(result);
        goto done;
    }
    for (Py_ssize_t k = 0; k < num_files; k++) {
        PyObject *framed = PyBytes_FromStringAndSize(NULL, sizes[k]);
        if (framed == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, k, framed);
        outs[k] = (unsigned char *)PyBytes_AS_STRING(framed);
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < num_files; k++) {
        frame_every((const unsigned char *)data.buf, record_lengths, starts,
                    count, k, num_files, outs[k]);
    }
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(outs);
    PyMem_Free(sizes);
    PyMem_Free(starts);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&data);
    return result;
}

/* A C-contiguous 2-D buffer argument of one-byte items, `rows` rows. */
static int
get_rows(PyObject *object, Py_buffer *view, Py_ssize_t rows)
{
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_ND) < 0) {
        return -1;
    }
    if (view->itemsize != 1 || view->ndim != 2 || view->shape[0] != rows) {
        PyErr_Format(PyExc_ValueError,
                     "blocks must be 2-D arrays of bytes with %zd rows",
                     rows);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *
lay_out_rows(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *blocks, *lengths_object;
    if (!PyArg_ParseTuple(args, "O!O:lay_out_rows", &PyList_Type, &blocks,
                          &lengths_object)) {
        return NULL;
    }
    Py_buffer lengths;
    if (PyObject_GetBuffer(lengths_object, &lengths, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    Py_ssize_t rows = lengths.len / 8;
    Py_ssize_t num_blocks = PyList_GET_SIZE(blocks);
    Py_buffer *views = PyMem_Calloc(2 * (num_blocks ? num_blocks : 1),
                                    sizeof(Py_buffer));
    char *has_keep = PyMem_Calloc(num_blocks ? num_blocks : 1, 1);
    Py_ssize_t acquired = 0; /* Blocks whose views are held. */
    PyObject *result = NULL;
    if (views == NULL || has_keep == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t total = 0;
    const int64_t *record_lengths = (const int64_t *)lengths.buf;
    for (Py_ssize_t r = 0; r < rows; r++) {
        total += record_lengths[r];
    }
    for (; acquired < num_blocks; acquired++) {
        PyObject *block = PyList_GET_ITEM(blocks, acquired);
        PyObject *matrix, *keep;
        if (!PyArg_ParseTuple(block, "OO:lay_out_rows block", &matrix,
                              &keep)) {
            goto done;
        }
        if (get_rows(matrix, &views[2 * acquired], rows) < 0) {
            goto done;
        }
        if (keep != Py_None) {
            if (get_rows(keep, &views[2 * acquired + 1], rows) < 0) {
                PyBuffer_Release(&views[2 * acquired]);
                goto done;
            }
            if (views[2 * acquired + 1].shape[1]
                != views[2 * acquired].shape[1]) {
                PyErr_SetString(PyExc_ValueError,
                                "a block's keep has another width");
                PyBuffer_Release(&views[2 * acquired + 1]);
                PyBuffer_Release(&views[2 * acquired]);
                goto done;
            }
            has_keep[acquired] = 1;
        }
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) {
        goto done;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    unsigned char *end = out + total;
    for (Py_ssize_t r = 0; r < rows; r++) {
        unsigned char *row_end = out + record_lengths[r];
        for (Py_ssize_t b = 0; b < num_blocks; b++) {
            Py_ssize_t width = views[2 * b].shape[1];
            const unsigned char *data =
                (const unsigned char *)views[2 * b].buf + r * width;
            if (!has_keep[b]) {
                if (out + width > row_end) {
                    goto overflow;
                }
                memcpy(out, data, width);
                out += width;
                continue;
            }
            const unsigned char *keep =
                (const unsigned char *)views[2 * b + 1].buf + r * width;
            for (Py_ssize_t j = 0; j < width; j++) {
                if (keep[j]) {
                    if (out == row_end) {
                        goto overflow;
                    }
                    *out++ = data[j];
                }
            }
        }
        if (out != row_end) {
            goto overflow;
        }
    }
    if (out != end) {
        goto overflow;
    }
    goto done;
overflow:
    PyErr_SetString(PyExc_ValueError,
                    "the kept bytes of a row differ from its length");
    Py_CLEAR(result);
done:
    for (Py_ssize_t b = 0; b < acquired; b++) {
        PyBuffer_Release(&views[2 * b]);
        if (has_keep[b]) {
            PyBuffer_Release(&views[2 * b + 1]);
        }
    }
    PyMem_Free(has_keep);
    PyMem_Free(views);
    PyBuffer_Release(&lengths);
    return result;
}

static PyObject *
crc32c_with(uint32_t (*function)(const unsigned char *, size_t),
            PyObject *object)
{
    Py_buffer data;
    if (PyObject_GetBuffer(object, &data, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    uint32_t crc = function((const unsigned char *)data.buf,
                            (size_t)data.len);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *
crc32c_of(PyObject *Py_UNUSED(module), PyObject *object)
{
    return crc32c_with(crc32c, object);
}

/* The tables alone, so that tests check them on a CPU with crc32. */
static PyObject *
crc32c_tables_of(PyObject *Py_UNUSED(module), PyObject *object)
{
    return crc32c_with(crc32c_tables, object);
}

static PyMethodDef module_methods[] = {
    {"frame_round_robin", frame_round_robin, METH_VARARGS,
     "frame_round_robin(data, lengths, num_files) -> list of bytes: the "
     "TFRecord framing of the records laid end to end in `data` (int64 "
     "`lengths`), record r in file r % num_files."},
    {"lay_out_rows", lay_out_rows, METH_VARARGS,
     "lay_out_rows(blocks, lengths) -> bytes: row r's kept bytes of each "
     "(uint8 matrix, bool keep or None) block in turn, rows end to end; "
     "row r must keep lengths[r] bytes."},
    {"crc32c", crc32c_of, METH_O,
     "crc32c(data) -> int: the (unmasked) CRC-32C of a buffer."},
    {"crc32c_tables", crc32c_tables_of, METH_O,
     "crc32c_tables(data) -> int: crc32c computed with the tables even "
     "where the CPU has a crc32 instruction."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef tfrecord_native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_tfrecord_native",
    .m_doc = PyDoc_STR("TFRecord framing and CRC-32C in C."),
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__tfrecord_native(void)
{
    make_crc_tables();
#ifdef HAVE_HARDWARE_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c = crc32c_hardware;
    }
#endif
    return PyModule_Create(&tfrecord_native_module);
}
