/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Communicator: the MPI collectives of include/kernelport/comm.h over a
 * runtime's buffers, compiled in where libkernelport-comm was built (MPI found). MPI is
 * initialised by the first communicator when the program has not done it (MPI_THREAD_SERIALIZED:
 * Python threads reach a communicator one at a time) and finalised by _mpi_finalize, which
 * kernelport.comm registers with atexit. */
#include <kernelport/comm.h>

#include "kpy.h"

typedef struct kpy_comm {
    PyObject ob_base;
    kpy_runtime *runtime;
    kp_comm *c;        /* NULL once closed */
    kpy_lock lock;     /* a communicator is used by one thread at a time */
    kpy_dependent dep; /* in the runtime's list while c lives */
} kpy_comm;

/* Whether this module called MPI_Init_thread, so that _mpi_finalize finalises only its own. */
static int initialised_here;

static int mpi_ready(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin) {
        kpy_raise(KP_ERR_INVALID_ARG, "MPI was finalized: no communicator can be made any more");
        return -1;
    }
    if (init)
        return 0;
    int provided;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        kpy_raise(KP_ERR_IO, "MPI_Init_thread failed");
        return -1;
    }
    initialised_here = 1;
    return 0;
}

static void comm_release(kpy_comm *self)
{
    if (!self->c)
        return;
    kpy_dependent_unlink(self->runtime, &self->dep);
    kp_comm *c = self->c;
    self->c = NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_comm_destroy(c);
    PyEval_RestoreThread(ts);
}

static void release_dependent(kpy_dependent *d)
{
    comm_release((kpy_comm *)((char *)d - offsetof(kpy_comm, dep)));
}

/* Communicator(runtime, fortran_comm, flags, timeout_s): fortran_comm None for MPI_COMM_WORLD,
 * else a communicator's Fortran handle (mpi4py's Comm.py2f()). Collective over its ranks. */
static PyObject *comm_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"runtime", "comm", "flags", "timeout_s", NULL};
    kpy_runtime *runtime;
    PyObject *handle;
    unsigned int flags;
    double timeout_s;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OId:Communicator", keywords, &kpy_runtime_type,
                                     &runtime, &handle, &flags, &timeout_s))
        return NULL;
    kp_runtime *rt = kpy_runtime_get(runtime);
    if (!rt || mpi_ready() < 0)
        return NULL;
    MPI_Comm comm = MPI_COMM_WORLD;
    if (handle != Py_None) {
        long f = PyLong_AsLong(handle);
        if (f == -1 && PyErr_Occurred())
            return NULL;
        comm = MPI_Comm_f2c((MPI_Fint)f);
        if (comm == MPI_COMM_NULL)
            return kpy_raise(KP_ERR_INVALID_ARG, "comm: MPI_COMM_NULL (a freed communicator?)");
    }
    kpy_comm *self = (kpy_comm *)type->tp_alloc(type, 0);
    if (!self || kpy_lock_init(&self->lock) < 0) {
        Py_XDECREF(self);
        return NULL;
    }
    kp_comm_options o = kp_comm_options_default();
    o.flags = flags;
    o.timeout_s = timeout_s;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_comm_create(rt, comm, &o, &self->c);
    PyEval_RestoreThread(ts);
    if (st != KP_OK) {
        self->c = NULL;
        Py_DECREF(self);
        return kpy_fail(st, rt);
    }
    self->runtime = (kpy_runtime *)Py_NewRef(runtime);
    kpy_dependent_link(runtime, &self->dep, release_dependent);
    return (PyObject *)self;
}

static void comm_dealloc(kpy_comm *self)
{
    comm_release(self);
    kpy_lock_free(&self->lock);
    Py_XDECREF(self->runtime);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The communicator and its runtime, or NULL with an exception when either was closed. */
static kp_comm *usable(kpy_comm *self, kp_runtime **rt)
{
    if (!self->c) {
        kpy_raise(KP_ERR_INVALID_ARG, "the communicator was closed");
        return NULL;
    }
    return (*rt = kpy_runtime_get(self->runtime)) ? self->c : NULL;
}

/* Ends a collective run with the GIL released under the communicator's lock
 * (kpy_lock_enter's thread state): None, or the library's error. */
static PyObject *leave(kpy_comm *self, PyThreadState *ts, kp_runtime *rt, kp_status st)
{
    kpy_lock_leave(&self->lock, ts);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

/* allreduce(buffer, op): the buffer's view (contiguous f32) summed (op 0) or averaged (1) over the
 * ranks, in place. */
static PyObject *comm_allreduce(kpy_comm *self, PyObject *args)
{
    kpy_buffer *b;
    int op;
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    if (!c || !PyArg_ParseTuple(args, "O!i:allreduce", &kpy_buffer_type, &b, &op))
        return NULL;
    PyThreadState *ts = kpy_lock_enter(&self->lock);
    return ts ? leave(self, ts, rt, kp_comm_allreduce_tensor(c, b->view, (kp_comm_op)op)) : NULL;
}

/* allreduce_host(array, op): a writable C-contiguous float32 array, in place. */
static PyObject *comm_allreduce_host(kpy_comm *self, PyObject *args)
{
    Py_buffer a;
    int op;
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    if (!c || !PyArg_ParseTuple(args, "w*i:allreduce_host", &a, &op))
        return NULL;
    PyThreadState *ts = kpy_lock_enter(&self->lock);
    PyObject *r =
        ts ? leave(self, ts, rt,
                   kp_comm_allreduce_host(c, a.buf, (size_t)a.len / sizeof(float), (kp_comm_op)op))
           : NULL;
    PyBuffer_Release(&a);
    return r;
}

/* broadcast(buffer, root): the view's bytes (contiguous) from rank root to every other rank. */
static PyObject *comm_broadcast(kpy_comm *self, PyObject *args)
{
    kpy_buffer *b;
    int root;
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    if (!c || !PyArg_ParseTuple(args, "O!i:broadcast", &kpy_buffer_type, &b, &root))
        return NULL;
    if (!kp_tensor_is_contiguous(&b->view))
        return kpy_raise(KP_ERR_INVALID_ARG, "broadcast: the buffer's view must be contiguous");
    size_t es = kp_dtype_size((kp_dtype)b->view.dtype), n = 1;
    for (int d = 0; d < b->view.rank; d++)
        n *= (size_t)b->view.shape[d];
    PyThreadState *ts = kpy_lock_enter(&self->lock);
    return ts ? leave(self, ts, rt,
                      kp_comm_broadcast(c, b->buf, (size_t)b->view.offset * es, n * es, root))
              : NULL;
}

static PyObject *comm_barrier(kpy_comm *self, PyObject *unused)
{
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    if (!c)
        return NULL;
    PyThreadState *ts = kpy_lock_enter(&self->lock);
    return ts ? leave(self, ts, rt, kp_comm_barrier(c)) : NULL;
}

/* fail(reason): tells the other ranks that this one gives up; the communicator is unusable after.
 */
static PyObject *comm_fail(kpy_comm *self, PyObject *args)
{
    const char *reason;
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    if (!c || !PyArg_ParseTuple(args, "s:fail", &reason))
        return NULL;
    PyThreadState *ts = kpy_lock_enter(&self->lock);
    return ts ? leave(self, ts, rt, kp_comm_fail(c, reason)) : NULL;
}

static PyObject *comm_close(kpy_comm *self, PyObject *unused)
{
    comm_release(self);
    Py_RETURN_NONE;
}

static PyObject *comm_get_rank(kpy_comm *self, void *unused)
{
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    return c ? PyLong_FromLong(kp_comm_rank(c)) : NULL;
}

static PyObject *comm_get_size(kpy_comm *self, void *unused)
{
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    return c ? PyLong_FromLong(kp_comm_size(c)) : NULL;
}

/* (transport, why): "staged", "shared" or "nccl", and why it was chosen. */
static PyObject *comm_get_transport(kpy_comm *self, void *unused)
{
    kp_runtime *rt;
    kp_comm *c = usable(self, &rt);
    const char *why = NULL;
    const char *name = c ? kp_comm_transport(c, &why) : NULL;
    return c ? Py_BuildValue("(ss)", name ? name : "", why ? why : "") : NULL;
}

static PyObject *comm_get_closed(kpy_comm *self, void *unused)
{
    return PyBool_FromLong(self->c == NULL);
}

static PyMethodDef comm_methods[] = {
    {"_allreduce", (PyCFunction)comm_allreduce, METH_VARARGS, NULL},
    {"_allreduce_host", (PyCFunction)comm_allreduce_host, METH_VARARGS, NULL},
    {"_broadcast", (PyCFunction)comm_broadcast, METH_VARARGS, NULL},
    {"barrier", (PyCFunction)comm_barrier, METH_NOARGS,
     "Returns once every rank has called it (kp_comm_barrier)."},
    {"fail", (PyCFunction)comm_fail, METH_VARARGS,
     "fail(reason): tells every other rank that this one gives up; their pending or next "
     "collective fails with \"rank R failed: reason\". The communicator is unusable after."},
    {"close", (PyCFunction)comm_close, METH_NOARGS,
     "Destroys the communicator (collective: every rank closes it)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef comm_getset[] = {
    {"rank", (getter)comm_get_rank, NULL, "This process's rank.", NULL},
    {"size", (getter)comm_get_size, NULL, "The number of ranks.", NULL},
    {"_transport", (getter)comm_get_transport, NULL, NULL, NULL},
    {"closed", (getter)comm_get_closed, NULL, "Whether close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject kpy_comm_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport._kernelport.Communicator",
    .tp_basicsize = sizeof(kpy_comm),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Communicator(runtime, comm, flags, timeout_s): kp_comm over MPI; kernelport.comm "
              "wraps it.",
    .tp_new = comm_new,
    .tp_dealloc = (destructor)comm_dealloc,
    .tp_methods = comm_methods,
    .tp_getset = comm_getset,
};

/* _mpi_finalize(): MPI_Finalize, where this module initialised MPI and it is not finalised yet
 * (kernelport.comm closes its communicators first). */
static PyObject *mpi_finalize(PyObject *m, PyObject *unused)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (initialised_here && !fin)
        MPI_Finalize();
    Py_RETURN_NONE;
}

static PyMethodDef comm_functions[] = {
    {"_mpi_finalize", mpi_finalize, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int kpy_comm_init(PyObject *m)
{
    if (PyModule_AddType(m, &kpy_comm_type) < 0 || PyModule_AddFunctions(m, comm_functions) < 0)
        return -1;
    const struct {
        const char *name;
        long value;
    } constants[] = {
        {"COMM_STAGED", KP_COMM_STAGED}, {"COMM_SHARED", KP_COMM_SHARED},
        {"COMM_NCCL", KP_COMM_NCCL},     {"COMM_SUM", KP_COMM_SUM},
        {"COMM_MEAN", KP_COMM_MEAN},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
            return -1;
    return 0;
}
