/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Prepared: a launch whose arguments were validated once
 * (kp_prepared_create), launched by calling it. */
#include "args.h"

typedef struct kpy_prepared {
    PyObject ob_base;
    vectorcallfunc vectorcall;
    kpy_kernel *kernel;
    kp_prepared *p;
    PyObject *bound; /* name -> the object bound, so that bound Buffers stay alive */
} kpy_prepared;

/* Keeps the bound objects: a Buffer collected while bound would leave the launch a destroyed
 * buffer. */
static int keep(kpy_prepared *self, PyObject *const *values, PyObject *names)
{
    Py_ssize_t n = names ? PyTuple_GET_SIZE(names) : 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (values[i] != Py_None &&
            PyDict_SetItem(self->bound, PyTuple_GET_ITEM(names, i), values[i]) < 0)
            return -1;
    return 0;
}

static PyObject *prepared_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    kpy_prepared *self = (kpy_prepared *)callable;
    if (PyVectorcall_NARGS(nargsf) || kwnames)
        return PyErr_Format(PyExc_TypeError, "a Prepared launch takes no arguments (set() them)");
    kp_runtime *rt = kpy_runtime_get(self->kernel->runtime);
    if (!rt)
        return NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_prepared_launch(self->p, NULL);
    PyEval_RestoreThread(ts);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

PyObject *kpy_prepared_create(kpy_kernel *k, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    kp_arg argv[KP_MAX_PARAMS];
    size_t n;
    if (nargs)
        return PyErr_Format(PyExc_TypeError, "prepare() takes keyword arguments only");
    kp_runtime *rt = kpy_runtime_get(k->runtime);
    if (!rt || kpy_args_convert(k, args, kwnames, argv, &n) < 0)
        return NULL;
    kpy_prepared *self = PyObject_New(kpy_prepared, &kpy_prepared_type);
    if (!self)
        return NULL;
    self->vectorcall = prepared_vectorcall;
    self->kernel = (kpy_kernel *)Py_NewRef(k);
    self->p = NULL;
    self->bound = PyDict_New();
    if (!self->bound || keep(self, args, kwnames) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    kp_status st = kp_prepared_create(rt, k->k, argv, n, &self->p);
    if (st != KP_OK) {
        Py_DECREF(self);
        return kpy_fail(st, rt);
    }
    return (PyObject *)self;
}

static void prepared_dealloc(kpy_prepared *self)
{
    if (self->kernel && self->kernel->runtime->rt)
        kp_prepared_destroy(self->p);
    Py_XDECREF(self->bound);
    Py_XDECREF(self->kernel);
    PyObject_Free(self);
}

/* set(**kwargs): rebinds arguments (kp_prepared_set), each checked as at prepare(). */
static PyObject *prepared_set(PyObject *self_obj, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    kpy_prepared *self = (kpy_prepared *)self_obj;
    kp_arg argv[KP_MAX_PARAMS];
    size_t n;
    if (nargs)
        return PyErr_Format(PyExc_TypeError, "set() takes keyword arguments only");
    kp_runtime *rt = kpy_runtime_get(self->kernel->runtime);
    if (!rt || kpy_args_convert(self->kernel, args, kwnames, argv, &n) < 0)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        kp_status st = kp_prepared_set(self->p, &argv[i]);
        if (st != KP_OK)
            return kpy_fail(st, rt);
    }
    return keep(self, args, kwnames) < 0 ? NULL : Py_NewRef(Py_None);
}

/* _time_launches(n): n kp_prepared_launch calls in a C loop; the host seconds they took (the C
 * API's cost, for python/bench). */
static PyObject *prepared_time_launches(kpy_prepared *self, PyObject *arg)
{
    long long count = PyLong_AsLongLong(arg);
    kp_runtime *rt = kpy_runtime_get(self->kernel->runtime);
    if ((count == -1 && PyErr_Occurred()) || !rt)
        return NULL;
    kp_status st = KP_OK;
    PyThreadState *ts = PyEval_SaveThread();
    double t0 = kpy_now();
    for (long long i = 0; i < count && st == KP_OK; i++)
        st = kp_prepared_launch(self->p, NULL);
    double t = kpy_now() - t0;
    PyEval_RestoreThread(ts);
    return st == KP_OK ? PyFloat_FromDouble(t) : kpy_fail(st, rt);
}

static PyMethodDef prepared_methods[] = {
    {"_time_launches", (PyCFunction)prepared_time_launches, METH_O, NULL},
    {"set", (PyCFunction)(void (*)(void))prepared_set, METH_FASTCALL | METH_KEYWORDS,
     "set(**kwargs): binds new values to arguments (the next batch's Buffer, a step count)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject kpy_prepared_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport.Prepared",
    .tp_basicsize = sizeof(kpy_prepared),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A launch bound once by Kernel.prepare(**kwargs); call it to launch.",
    .tp_dealloc = (destructor)prepared_dealloc,
    .tp_vectorcall_offset = offsetof(kpy_prepared, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_methods = prepared_methods,
};
