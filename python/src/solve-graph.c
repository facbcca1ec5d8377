/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.ExprGraph: a residual expression graph (kp_expr_graph) from its
 * parameter and data names and the text form, its description, and the host interpreter. The
 * kernelport.solve module wraps it (Model). */
#include "kpy.h"

/* The graph's message as an InvalidArgumentError (the builders' and the parser's errors). */
static PyObject *graph_fail(const kp_expr_graph *g, kp_status st)
{
    return kpy_raise(st, kp_expr_graph_error(g));
}

/* ExprGraph(params, data): parameter and data names, each a string of names separated by commas
 * or spaces, declared in that order (their slots). */
static PyObject *graph_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"params", "data", NULL};
    const char *params, *data;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ss:ExprGraph", keywords, &params, &data))
        return NULL;
    kpy_expr_graph *self = (kpy_expr_graph *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    if (kpy_lock_init(&self->lock) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    kp_status st = kp_expr_graph_create(&self->g);
    if (st != KP_OK) {
        Py_DECREF(self);
        return kpy_raise(st, "kp_expr_graph_create failed");
    }
    if ((st = kp_expr_declare(self->g, 1, params)) != KP_OK ||
        (st = kp_expr_declare(self->g, 0, data)) != KP_OK) {
        graph_fail(self->g, st);
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

int kpy_lock_init(kpy_lock *l)
{
    atomic_init(&l->owner, 0);
    l->lock = PyThread_allocate_lock();
    if (!l->lock)
        PyErr_NoMemory();
    return l->lock ? 0 : -1;
}

void kpy_lock_free(kpy_lock *l)
{
    if (l->lock)
        PyThread_free_lock(l->lock);
    l->lock = NULL;
}

PyThreadState *kpy_lock_enter(kpy_lock *l)
{
    unsigned long me = PyThread_get_thread_ident();
    if (atomic_load(&l->owner) == me) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this model or solver is in use by a call on this thread (a progress "
                        "callback cannot call into the solve it reports on)");
        return NULL;
    }
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(l->lock, WAIT_LOCK);
    atomic_store(&l->owner, me);
    return ts;
}

void kpy_lock_leave(kpy_lock *l, PyThreadState *ts)
{
    atomic_store(&l->owner, 0);
    PyThread_release_lock(l->lock);
    PyEval_RestoreThread(ts);
}

static void graph_dealloc(kpy_expr_graph *self)
{
    kp_expr_graph_destroy(self->g);
    kpy_lock_free(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* parse(text): the statements of the text form; each expression becomes the next output. */
static PyObject *graph_parse(kpy_expr_graph *self, PyObject *args)
{
    const char *text;
    if (!PyArg_ParseTuple(args, "s:parse", &text))
        return NULL;
    kp_status st = kp_expr_parse(self->g, text);
    return st == KP_OK ? Py_NewRef(Py_None) : graph_fail(self->g, st);
}

/* _info(): {n_data, n_params, n_outputs, n_nodes, key, params, data}. */
static PyObject *graph_info(kpy_expr_graph *self, PyObject *unused)
{
    kp_expr_graph_info info = {.struct_size = sizeof info};
    kp_status st = kp_expr_graph_get_info(self->g, &info);
    if (st != KP_OK)
        return graph_fail(self->g, st);
    PyObject *names[2] = {PyTuple_New(info.n_params), PyTuple_New(info.n_data)};
    for (uint32_t i = 0; names[0] && i < info.n_params; i++)
        PyTuple_SET_ITEM(names[0], i, PyUnicode_FromString(kp_expr_param_name(self->g, i)));
    for (uint32_t i = 0; names[1] && i < info.n_data; i++)
        PyTuple_SET_ITEM(names[1], i, PyUnicode_FromString(kp_expr_data_name(self->g, i)));
    PyObject *d = names[0] && names[1] && !PyErr_Occurred()
                      ? Py_BuildValue("{s:I,s:I,s:I,s:I,s:K,s:O,s:O}", "n_data", info.n_data,
                                      "n_params", info.n_params, "n_outputs", info.n_outputs,
                                      "n_nodes", info.n_nodes, "key", (unsigned long long)info.key,
                                      "params", names[0], "data", names[1])
                      : NULL;
    Py_XDECREF(names[0]);
    Py_XDECREF(names[1]);
    return d;
}

/* The Python layer checks shapes first, naming the argument; this guards the C calls against a
 * caller of the private methods. */
int kpy_solve_check_size(const Py_buffer *b, size_t bytes, const char *what)
{
    if ((size_t)b->len == bytes)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: %zd bytes, expected %zu", what, b->len, bytes);
    return -1;
}

/* _eval(n, data, params, r, jac): the host interpreter on n instances, instance i reading data row
 * i ([n, D] float64) and parameter row i ([n, S] float64), writing r [n, O] and jac [n, O, S]. */
static PyObject *graph_eval(kpy_expr_graph *self, PyObject *args)
{
    Py_ssize_t n;
    Py_buffer data, params, r, jac;
    if (!PyArg_ParseTuple(args, "ny*y*w*w*:_eval", &n, &data, &params, &r, &jac))
        return NULL;
    kp_expr_graph_info info = {.struct_size = sizeof info};
    kp_status st = kp_expr_graph_get_info(self->g, &info);
    PyObject *result = NULL;
    size_t un = n < 0 ? 0 : (size_t)n, d = sizeof(double);
    if (st != KP_OK)
        graph_fail(self->g, st);
    else if (kpy_solve_check_size(&data, un * info.n_data * d, "data") == 0 &&
             kpy_solve_check_size(&params, un * info.n_params * d, "params") == 0 &&
             kpy_solve_check_size(&r, un * info.n_outputs * d, "r") == 0 &&
             kpy_solve_check_size(&jac, un * info.n_outputs * info.n_params * d, "jac") == 0) {
        const double *dp = data.buf, *pp = params.buf;
        double *rp = r.buf, *jp = jac.buf, none = 0;
        size_t i = 0;
        PyThreadState *ts = kpy_lock_enter(&self->lock);
        if (ts) {
            for (; i < un && st == KP_OK; i++)
                st = kp_expr_graph_eval(self->g, info.n_data ? dp + i * info.n_data : &none,
                                        info.n_params ? pp + i * info.n_params : &none,
                                        rp + i * info.n_outputs,
                                        jp + i * info.n_outputs * info.n_params);
            kpy_lock_leave(&self->lock, ts);
            if (st == KP_OK) {
                result = Py_NewRef(Py_None);
            } else {
                char msg[160];
                snprintf(msg, sizeof msg, "kp_expr_graph_eval failed at instance %zu: %s", i - 1,
                         info.n_outputs ? "out of host memory" : "the model has no residual");
                kpy_raise(st, msg);
            }
        }
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&params);
    PyBuffer_Release(&r);
    PyBuffer_Release(&jac);
    return result;
}

static PyMethodDef graph_methods[] = {
    {"parse", (PyCFunction)graph_parse, METH_VARARGS,
     "parse(text): statements of the text form (docs/solve.md); each expression becomes the next "
     "residual. InvalidArgumentError with line:col, what was expected and a caret on error."},
    {"_info", (PyCFunction)graph_info, METH_NOARGS, NULL},
    {"_eval", (PyCFunction)graph_eval, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject kpy_expr_graph_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport._kernelport.ExprGraph",
    .tp_basicsize = sizeof(kpy_expr_graph),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ExprGraph(params, data): a residual expression graph with these parameter and data "
              "names (kp_expr_graph); kernelport.solve.Model wraps it.",
    .tp_new = graph_new,
    .tp_dealloc = (destructor)graph_dealloc,
    .tp_methods = graph_methods,
};
