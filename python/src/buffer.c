/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Buffer: device memory with a tensor view (dtype, shape, strides, offset);
 * host transfers in bytes. The kernelport package adds NumPy conversion and view helpers. */
#include "kpy.h"

/* A tuple of int64 into dims[]; -1 with an exception when it is not a sequence of at most
 * KP_MAX_RANK ints. */
static int read_dims(PyObject *seq, int64_t dims[KP_MAX_RANK], const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > KP_MAX_RANK) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: rank %zd is above %d", what, n, KP_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return (int)n;
}

static int check_dtype(int dtype)
{
    if (dtype <= KP_DTYPE_NONE || dtype >= KP_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "dtype code %d is not a kernelport dtype", dtype);
        return -1;
    }
    return 0;
}

/* Buffer(runtime, dtype, shape): uninitialised memory for a contiguous tensor. */
static PyObject *buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"runtime", "dtype", "shape", NULL};
    kpy_runtime *runtime;
    int dtype;
    PyObject *shape_obj;
    int64_t shape[KP_MAX_RANK];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!iO:Buffer", keywords, &kpy_runtime_type,
                                     &runtime, &dtype, &shape_obj) ||
        check_dtype(dtype) < 0)
        return NULL;
    int rank = read_dims(shape_obj, shape, "shape");
    if (rank < 0)
        return NULL;
    size_t size = kp_dtype_size((kp_dtype)dtype), bytes = size;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0)
            return kpy_raise(KP_ERR_INVALID_ARG, "a dimension of the shape is negative");
        if (shape[d] && bytes > SIZE_MAX / (uint64_t)shape[d])
            return kpy_raise(KP_ERR_OUT_OF_MEMORY, "the shape's size passes the address space");
        bytes *= (size_t)shape[d];
    }
    kp_runtime *rt = kpy_runtime_get(runtime);
    if (!rt)
        return NULL;
    kpy_buffer *self = (kpy_buffer *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    /* An empty tensor still gets an element: the library allocates no zero-byte buffers. */
    kp_status st = kp_buffer_create(rt, bytes ? bytes : size, &self->buf);
    if (st != KP_OK) {
        Py_DECREF(self);
        return kpy_fail(st, rt);
    }
    self->runtime = (kpy_runtime *)Py_NewRef(runtime);
    self->view = kp_tensor_nd(self->buf, (kp_dtype)dtype, rank, shape);
    return (PyObject *)self;
}

static void buffer_dealloc(kpy_buffer *self)
{
    if (self->base)
        Py_DECREF(self->base);
    else if (self->runtime && self->runtime->rt)
        kp_buffer_destroy(self->runtime->rt, self->buf);
    Py_XDECREF(self->runtime);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The runtime of a buffer that is still usable, or NULL with an exception. */
static kp_runtime *usable(kpy_buffer *self)
{
    return kpy_runtime_get(self->runtime);
}

/* _view(dtype, shape, strides, offset): another view of the same memory (checked by launches and
 * transfers, not here). */
static PyObject *buffer_view(kpy_buffer *self, PyObject *args)
{
    int dtype;
    PyObject *shape_obj, *strides_obj;
    long long offset;
    kp_tensor v = self->view;
    if (!PyArg_ParseTuple(args, "iOOL:_view", &dtype, &shape_obj, &strides_obj, &offset) ||
        check_dtype(dtype) < 0)
        return NULL;
    int rank = read_dims(shape_obj, v.shape, "shape");
    if (rank < 0 || read_dims(strides_obj, v.strides, "strides") != rank) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "shape and strides differ in length");
        return NULL;
    }
    v.dtype = dtype;
    v.rank = rank;
    v.offset = offset;
    kpy_buffer *view = (kpy_buffer *)Py_TYPE(self)->tp_alloc(Py_TYPE(self), 0);
    if (!view)
        return NULL;
    view->runtime = (kpy_runtime *)Py_NewRef(self->runtime);
    view->base = Py_NewRef(self->base ? self->base : (PyObject *)self);
    view->buf = self->buf;
    view->view = v;
    return (PyObject *)view;
}

/* _write(src, byte_offset) and _read(dst, byte_offset): bytes between host memory (any object with
 * the buffer protocol, C-contiguous) and the buffer's memory, blocking. */
static PyObject *transfer(kpy_buffer *self, PyObject *args, int write)
{
    Py_buffer host;
    Py_ssize_t offset;
    kp_runtime *rt = usable(self);
    if (!rt || !PyArg_ParseTuple(args, write ? "y*n:_write" : "w*n:_read", &host, &offset))
        return NULL;
    if (offset < 0) {
        PyBuffer_Release(&host);
        return kpy_raise(KP_ERR_INVALID_ARG, "negative byte offset");
    }
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = write
                       ? kp_buffer_write(rt, self->buf, (size_t)offset, (size_t)host.len, host.buf)
                       : kp_buffer_read(rt, self->buf, (size_t)offset, (size_t)host.len, host.buf);
    PyEval_RestoreThread(ts);
    PyBuffer_Release(&host);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *buffer_write(kpy_buffer *self, PyObject *args)
{
    return transfer(self, args, 1);
}

static PyObject *buffer_read(kpy_buffer *self, PyObject *args)
{
    return transfer(self, args, 0);
}

/* _fill(pattern): the whole memory filled with repetitions of the pattern's bytes. */
static PyObject *buffer_fill(kpy_buffer *self, PyObject *args)
{
    Py_buffer pattern;
    kp_runtime *rt = usable(self);
    if (!rt || !PyArg_ParseTuple(args, "y*:_fill", &pattern))
        return NULL;
    kp_status st = kp_buffer_fill(rt, self->buf, 0, kp_buffer_size(self->buf), pattern.buf,
                                  (size_t)pattern.len);
    PyBuffer_Release(&pattern);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *dims_tuple(const int64_t *dims, int rank)
{
    PyObject *t = PyTuple_New(rank);
    for (int d = 0; t && d < rank; d++) {
        PyObject *v = PyLong_FromLongLong(dims[d]);
        if (!v)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

static PyObject *get_dtype_code(kpy_buffer *self, void *unused)
{
    return PyLong_FromLong(self->view.dtype);
}

static PyObject *get_shape(kpy_buffer *self, void *unused)
{
    return dims_tuple(self->view.shape, self->view.rank);
}

static PyObject *get_strides(kpy_buffer *self, void *unused)
{
    return dims_tuple(self->view.strides, self->view.rank);
}

static PyObject *get_offset(kpy_buffer *self, void *unused)
{
    return PyLong_FromLongLong(self->view.offset);
}

static PyObject *get_nbytes(kpy_buffer *self, void *unused)
{
    return PyLong_FromSize_t(kp_buffer_size(self->buf));
}

static PyObject *get_contiguous(kpy_buffer *self, void *unused)
{
    return PyBool_FromLong(kp_tensor_is_contiguous(&self->view));
}

static PyObject *get_runtime(kpy_buffer *self, void *unused)
{
    return Py_NewRef(self->runtime);
}

static PyObject *buffer_describe(kpy_buffer *self, PyObject *unused)
{
    char text[256];
    return PyUnicode_FromString(kp_tensor_describe(&self->view, text, sizeof text));
}

static PyMethodDef buffer_methods[] = {
    {"_view", (PyCFunction)buffer_view, METH_VARARGS, NULL},
    {"_write", (PyCFunction)buffer_write, METH_VARARGS, NULL},
    {"_read", (PyCFunction)buffer_read, METH_VARARGS, NULL},
    {"_fill", (PyCFunction)buffer_fill, METH_VARARGS, NULL},
    {"describe", (PyCFunction)buffer_describe, METH_NOARGS,
     "The view as kp_tensor_describe writes it: \"f32[3, 4]\", strides and offset when they "
     "matter."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"_dtype_code", (getter)get_dtype_code, NULL, NULL, NULL},
    {"shape", (getter)get_shape, NULL, "The view's shape.", NULL},
    {"strides", (getter)get_strides, NULL, "The view's strides, in elements.", NULL},
    {"offset", (getter)get_offset, NULL, "The view's first element, in elements.", NULL},
    {"nbytes", (getter)get_nbytes, NULL, "The size of the device memory, in bytes.", NULL},
    {"contiguous", (getter)get_contiguous, NULL, "Whether the view is row-major contiguous.", NULL},
    {"runtime", (getter)get_runtime, NULL, "The runtime the memory belongs to.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kpy_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport._kernelport.Buffer",
    .tp_basicsize = sizeof(kpy_buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Buffer(runtime, dtype_code, shape): device memory seen as a tensor.",
    .tp_new = buffer_new,
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_methods = buffer_methods,
    .tp_getset = buffer_getset,
};
