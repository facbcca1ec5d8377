/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Solver: a graph compiled on a runtime (kp_residual, kp_lm or
 * kp_lm_sparse), or with no runtime the host reference solvers over the graph; NumPy arrays in and
 * out through the buffer protocol. The kernelport.solve module checks the arrays' shapes first. */
#include "kpy.h"

enum { KIND_RESIDUAL, KIND_LM, KIND_SPARSE, N_KINDS };
static const char *const kind_names[N_KINDS] = {"residual", "lm", "sparse"};

typedef struct kpy_solver {
    PyObject ob_base;
    kpy_runtime *runtime; /* NULL: the host reference */
    kpy_expr_graph *graph;
    int kind;
    void *handle;      /* kp_residual, kp_lm or kp_lm_sparse; NULL on the host or once released */
    kpy_lock lock;     /* of the handle; the host reference takes the graph's */
    kpy_dependent dep; /* in the runtime's list while the handle lives */
} kpy_solver;

static void release(kpy_solver *s)
{
    if (!s->handle)
        return;
    kpy_dependent_unlink(s->runtime, &s->dep);
    if (s->kind == KIND_RESIDUAL)
        kp_residual_destroy(s->handle);
    else if (s->kind == KIND_LM)
        kp_lm_destroy(s->handle);
    else
        kp_lm_sparse_destroy(s->handle);
    s->handle = NULL;
}

static void release_dependent(kpy_dependent *d)
{
    release((kpy_solver *)((char *)d - offsetof(kpy_solver, dep)));
}

/* Solver(runtime, graph, kind, precision): runtime None for the host reference. */
static PyObject *solver_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"runtime", "graph", "kind", "precision", NULL};
    PyObject *runtime;
    kpy_expr_graph *graph;
    const char *kind_name;
    int precision;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!si:Solver", keywords, &runtime,
                                     &kpy_expr_graph_type, &graph, &kind_name, &precision))
        return NULL;
    int kind = 0;
    while (kind < N_KINDS && strcmp(kind_names[kind], kind_name) != 0)
        kind++;
    if (kind == N_KINDS)
        return kpy_raise(KP_ERR_INVALID_ARG, "kind: expected residual, lm or sparse");
    if (runtime != Py_None && !PyObject_TypeCheck(runtime, &kpy_runtime_type)) {
        PyErr_SetString(PyExc_TypeError, "runtime: expected a kernelport.Runtime or None");
        return NULL;
    }
    kp_runtime *rt = NULL;
    if (runtime != Py_None && !(rt = kpy_runtime_get((kpy_runtime *)runtime)))
        return NULL;
    kpy_solver *self = (kpy_solver *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->graph = (kpy_expr_graph *)Py_NewRef(graph);
    self->kind = kind;
    if (kpy_lock_init(&self->lock) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (!rt)
        return (PyObject *)self;
    /* Generating the code and registering it (a PoCL build comes later, at the first launch). */
    kp_status st;
    PyThreadState *ts = kpy_lock_enter(&graph->lock);
    if (!ts) {
        Py_DECREF(self);
        return NULL;
    }
    if (kind == KIND_RESIDUAL)
        st = kp_residual_create(rt, graph->g, (kp_precision)precision,
                                (kp_residual **)&self->handle);
    else if (kind == KIND_LM)
        st = kp_lm_create(rt, graph->g, (kp_precision)precision, (kp_lm **)&self->handle);
    else
        st = kp_lm_sparse_create(rt, graph->g, (kp_precision)precision,
                                 (kp_lm_sparse **)&self->handle);
    kpy_lock_leave(&graph->lock, ts);
    if (st != KP_OK) {
        self->handle = NULL;
        Py_DECREF(self);
        return kpy_fail(st, rt);
    }
    self->runtime = (kpy_runtime *)Py_NewRef(runtime);
    kpy_dependent_link(self->runtime, &self->dep, release_dependent);
    return (PyObject *)self;
}

/* The runtime caches solvers (kernelport.solve) and each keeps its runtime alive: the collector
 * must see that edge, as for kernels. */
static int solver_traverse(kpy_solver *self, visitproc visit, void *arg)
{
    Py_VISIT(self->runtime);
    return 0;
}

static void solver_dealloc(kpy_solver *self)
{
    PyObject_GC_UnTrack(self);
    release(self);
    kpy_lock_free(&self->lock);
    Py_XDECREF(self->graph);
    Py_XDECREF(self->runtime);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* *rt: the solver's runtime (NULL for the host reference); -1 with an exception when the runtime
 * was closed. */
static int usable(kpy_solver *self, kp_runtime **rt)
{
    *rt = NULL;
    if (!self->runtime)
        return 0;
    if (!(*rt = kpy_runtime_get(self->runtime)))
        return -1;
    if (!self->handle) {
        kpy_raise(KP_ERR_INVALID_ARG, "the solver was released with its runtime");
        return -1;
    }
    return 0;
}

static kpy_lock *lock_of(kpy_solver *self)
{
    return self->runtime ? &self->lock : &self->graph->lock;
}

static kp_precision precision_of(const kpy_solver *self)
{
    if (!self->handle)
        return KP_PRECISION_F64; /* the host reference computes in double */
    if (self->kind == KIND_RESIDUAL)
        return kp_residual_precision(self->handle);
    if (self->kind == KIND_LM)
        return kp_lm_precision(self->handle);
    return kp_lm_sparse_precision(self->handle);
}

/* The LM options from the tuple (max_iterations, gradient_tolerance, step_tolerance,
 * function_tolerance, initial_damping, min_diagonal, loss, loss_scale). */
static int lm_options(PyObject *t, kp_lm_options *o)
{
    *o = kp_lm_options_default();
    int loss;
    if (!PyArg_ParseTuple(t, "Idddddid;LM options", &o->max_iterations, &o->gradient_tolerance,
                          &o->step_tolerance, &o->function_tolerance, &o->initial_damping,
                          &o->min_diagonal, &loss, &o->loss_scale))
        return -1;
    o->loss = (kp_loss)loss;
    return 0;
}

/* _fit(options, rows, data, x, cost, iterations, status): problem b owns data rows rows[b] ..
 * rows[b + 1] - 1 ([N, D] float64) and x[b] ([B, S] float64, in and out); cost [B] float64,
 * iterations and status [B] int32 out. Returns (summary, seconds). */
static PyObject *solver_fit(kpy_solver *self, PyObject *args)
{
    PyObject *opt_t;
    Py_buffer rows, data, x, cost, iters, status;
    kp_runtime *rt;
    kp_lm_options o;
    if (self->kind != KIND_LM)
        return kpy_raise(KP_ERR_INVALID_ARG, "_fit needs a solver of kind lm");
    if (usable(self, &rt) < 0 || !PyArg_ParseTuple(args, "Oy*y*w*w*w*w*:_fit", &opt_t, &rows, &data,
                                                   &x, &cost, &iters, &status))
        return NULL;
    PyObject *result = NULL;
    kp_expr_graph_info info = {.struct_size = sizeof info};
    kp_expr_graph_get_info(self->graph->g, &info);
    size_t B = rows.len >= (Py_ssize_t)sizeof(int32_t) ? (size_t)rows.len / sizeof(int32_t) - 1 : 0;
    const int32_t *rp = rows.buf;
    /* Negative offsets are refused by the library, before it reads data. */
    size_t n = B && rp[B] > 0 ? (size_t)rp[B] : 0;
    if (lm_options(opt_t, &o) == 0 && rows.len >= (Py_ssize_t)sizeof(int32_t) &&
        kpy_solve_check_size(&data, n * info.n_data * sizeof(double), "data") == 0 &&
        kpy_solve_check_size(&x, B * info.n_params * sizeof(double), "x") == 0 &&
        kpy_solve_check_size(&cost, B * sizeof(double), "cost") == 0 &&
        kpy_solve_check_size(&iters, B * sizeof(int32_t), "iterations") == 0 &&
        kpy_solve_check_size(&status, B * sizeof(int32_t), "status") == 0) {
        kp_lm_batch b = {.struct_size = sizeof b,
                         .n_problems = B,
                         .rows = rp,
                         .data = info.n_data ? data.buf : NULL,
                         .x = x.buf,
                         .cost = cost.buf,
                         .iterations = iters.buf,
                         .status = status.buf};
        PyThreadState *ts = kpy_lock_enter(lock_of(self));
        kp_status st = KP_OK;
        if (ts) {
            st = rt ? kp_lm_solve(self->handle, &o, &b) : kp_lm_solve_host(self->graph->g, &o, &b);
            kpy_lock_leave(lock_of(self), ts);
        }
        char summary[1024] = "";
        if (!ts)
            ; /* the exception is set */
        else if (st != KP_OK)
            kpy_fail(st, rt);
        else if (B && (st = kp_lm_summary(&b, summary, sizeof summary)) != KP_OK)
            kpy_fail(st, NULL);
        else
            result = Py_BuildValue("s(ddd)", summary, b.seconds[0], b.seconds[1], b.seconds[2]);
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "rows: at least one offset");
    }
    PyBuffer_Release(&rows);
    PyBuffer_Release(&data);
    PyBuffer_Release(&x);
    PyBuffer_Release(&cost);
    PyBuffer_Release(&iters);
    PyBuffer_Release(&status);
    return result;
}

/* The progress callback's state: the Python callable, and whether it raised. Its exception stays
 * set on this thread (the callback runs on the thread that released the GIL) and later calls are
 * skipped: the library's solve cannot be stopped from its callback. */
typedef struct progress {
    PyObject *fn;
    int failed;
} progress;

static void progress_call(void *user, const kp_lm_sparse_progress *p)
{
    progress *ctx = user;
    if (ctx->failed)
        return;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *d =
        Py_BuildValue("{s:i,s:i,s:d,s:d,s:O,s:d,s:d,s:O}", "iteration", p->iteration,
                      "cg_iterations", p->cg_iterations, "cost", p->cost, "damping", p->damping,
                      "accepted", p->accepted ? Py_True : Py_False, "gradient_max", p->gradient_max,
                      "cg_residual", p->cg_residual, "dense", p->dense ? Py_True : Py_False);
    PyObject *info = kpy_result("SparseProgress", d);
    PyObject *r = info ? PyObject_CallOneArg(ctx->fn, info) : NULL;
    ctx->failed = r == NULL;
    Py_XDECREF(r);
    Py_XDECREF(info);
    PyGILState_Release(gil);
}

/* _fit_sparse(options, (max_cg_iterations, cg_tolerance, block_size, dense_max_parameters),
 * index, data, x, progress): one problem of n instances, index [n, S] int32, data [n, D] float64,
 * x [P] float64 in and out; progress a callable or None. Returns the report as a dict. */
static PyObject *solver_fit_sparse(kpy_solver *self, PyObject *args)
{
    PyObject *opt_t, *fn;
    Py_buffer index, data, x;
    kp_runtime *rt;
    kp_lm_options lo;
    kp_lm_sparse_options so = kp_lm_sparse_options_default();
    if (self->kind != KIND_SPARSE)
        return kpy_raise(KP_ERR_INVALID_ARG, "_fit_sparse needs a solver of kind sparse");
    if (usable(self, &rt) < 0 ||
        !PyArg_ParseTuple(args, "O(IdII)y*y*w*O:_fit_sparse", &opt_t, &so.max_cg_iterations,
                          &so.cg_tolerance, &so.block_size, &so.dense_max_parameters, &index, &data,
                          &x, &fn))
        return NULL;
    PyObject *result = NULL;
    kp_expr_graph_info info = {.struct_size = sizeof info};
    kp_expr_graph_get_info(self->graph->g, &info);
    size_t n = info.n_params ? (size_t)index.len / sizeof(int32_t) / info.n_params : 0;
    progress ctx = {.fn = fn};
    if (lm_options(opt_t, &lo) == 0 &&
        kpy_solve_check_size(&index, n * info.n_params * sizeof(int32_t), "index") == 0 &&
        kpy_solve_check_size(&data, n * info.n_data * sizeof(double), "data") == 0) {
        so.lm = &lo;
        if (fn != Py_None) {
            so.progress = progress_call;
            so.user = &ctx;
        }
        kp_lm_sparse_problem prob = {.struct_size = sizeof prob,
                                     .n_instances = n,
                                     .data = info.n_data ? data.buf : NULL,
                                     .index = index.buf,
                                     .n_x = (size_t)x.len / sizeof(double),
                                     .x = x.buf};
        kp_lm_sparse_report rep = {.struct_size = sizeof rep};
        PyThreadState *ts = kpy_lock_enter(lock_of(self));
        kp_status st = KP_OK;
        if (ts) {
            st = rt ? kp_lm_sparse_solve(self->handle, &so, &prob, &rep)
                    : kp_lm_sparse_solve_host(self->graph->g, &so, &prob, &rep);
            kpy_lock_leave(lock_of(self), ts);
        }
        if (!ts || ctx.failed)
            ; /* the exception is set (the lock's, or the callback's) */
        else if (st != KP_OK)
            kpy_fail(st, rt);
        else
            result = Py_BuildValue(
                "{s:i,s:i,s:L,s:d,s:d,s:(dddd),s:O}", "status", (int)rep.status, "iterations",
                rep.iterations, "cg_iterations", (long long)rep.cg_iterations, "initial_cost",
                rep.initial_cost, "cost", rep.cost, "seconds", rep.seconds[0], rep.seconds[1],
                rep.seconds[2], rep.seconds[3], "dense", rep.dense ? Py_True : Py_False);
    }
    PyBuffer_Release(&index);
    PyBuffer_Release(&data);
    PyBuffer_Release(&x);
    return result;
}

/* A device buffer of `size` bytes (at least `min`: the library allocates no empty buffers) holding
 * `src` (NULL for an output); NULL on failure, the message in kp_last_error(rt). */
static kp_buffer *device_copy(kp_runtime *rt, const Py_buffer *src, size_t size, size_t min,
                              kp_status *st)
{
    kp_buffer *b = NULL;
    *st = kp_buffer_create(rt, size > min ? size : min, &b);
    if (*st == KP_OK && src && size)
        *st = kp_buffer_write(rt, b, 0, size, src->buf);
    if (*st != KP_OK) {
        kp_buffer_destroy(rt, b);
        return NULL;
    }
    return b;
}

/* _evaluate(n, data, index, params, r, jac): kp_residual_evaluate on the device, arrays in the
 * residual's precision (index int32): data [n, D], index [n, S], params [P], r [n, O] and
 * jac [n, O, S] out. */
static PyObject *solver_evaluate(kpy_solver *self, PyObject *args)
{
    Py_ssize_t n;
    Py_buffer data, index, params, r, jac;
    kp_runtime *rt;
    if (self->kind != KIND_RESIDUAL || !self->runtime)
        return kpy_raise(KP_ERR_INVALID_ARG, "_evaluate needs a residual on a runtime");
    if (usable(self, &rt) < 0 ||
        !PyArg_ParseTuple(args, "ny*y*y*w*w*:_evaluate", &n, &data, &index, &params, &r, &jac))
        return NULL;
    PyObject *result = NULL;
    kp_expr_graph_info info = {.struct_size = sizeof info};
    kp_expr_graph_get_info(self->graph->g, &info);
    int f32 = kp_residual_precision(self->handle) == KP_PRECISION_F32;
    kp_dtype dt = f32 ? KP_F32 : KP_F64;
    size_t es = kp_dtype_size(dt), un = n < 0 ? 0 : (size_t)n;
    size_t D = info.n_data, S = info.n_params, O = info.n_outputs, P = (size_t)params.len / es;
    if (kpy_solve_check_size(&data, un * D * es, "data") == 0 &&
        kpy_solve_check_size(&index, un * S * sizeof(int32_t), "index") == 0 &&
        kpy_solve_check_size(&params, P * es, "params") == 0 &&
        kpy_solve_check_size(&r, un * O * es, "r") == 0 &&
        kpy_solve_check_size(&jac, un * O * S * es, "jac") == 0) {
        PyThreadState *ts = kpy_lock_enter(&self->lock);
        if (!ts)
            goto done;
        kp_status st;
        kp_buffer *bd = device_copy(rt, &data, (size_t)data.len, es, &st);
        kp_buffer *bi = bd ? device_copy(rt, &index, (size_t)index.len, es, &st) : NULL;
        kp_buffer *bp = bi ? device_copy(rt, &params, (size_t)params.len, es, &st) : NULL;
        kp_buffer *br = bp ? device_copy(rt, NULL, (size_t)r.len, es, &st) : NULL;
        kp_buffer *bj = br ? device_copy(rt, NULL, (size_t)jac.len, es, &st) : NULL;
        if (bj) {
            int64_t sd[2] = {n, (int64_t)D}, si[2] = {n, (int64_t)S}, sp[1] = {(int64_t)P};
            int64_t sr[2] = {n, (int64_t)O}, sj[3] = {n, (int64_t)O, (int64_t)S};
            st = kp_residual_evaluate(self->handle, n, kp_tensor_nd(bd, dt, 2, sd),
                                      kp_tensor_nd(bi, KP_I32, 2, si), kp_tensor_nd(bp, dt, 1, sp),
                                      kp_tensor_nd(br, dt, 2, sr), kp_tensor_nd(bj, dt, 3, sj));
            if (st == KP_OK && r.len)
                st = kp_buffer_read(rt, br, 0, (size_t)r.len, r.buf);
            if (st == KP_OK && jac.len)
                st = kp_buffer_read(rt, bj, 0, (size_t)jac.len, jac.buf);
        }
        kp_buffer *all[] = {bd, bi, bp, br, bj};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            kp_buffer_destroy(rt, all[i]);
        kpy_lock_leave(&self->lock, ts);
        result = st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&index);
    PyBuffer_Release(&params);
    PyBuffer_Release(&r);
    PyBuffer_Release(&jac);
    return result;
}

static PyObject *solver_get_precision(kpy_solver *self, void *unused)
{
    return PyUnicode_FromString(kp_precision_name(precision_of(self)));
}

static PyObject *solver_get_kind(kpy_solver *self, void *unused)
{
    return PyUnicode_FromString(kind_names[self->kind]);
}

/* The registered kernel's name (a residual's or a batched LM's), None otherwise. */
static PyObject *solver_get_kernel(kpy_solver *self, void *unused)
{
    kp_kernel *k = NULL;
    if (self->handle && self->kind == KIND_RESIDUAL)
        k = kp_residual_kernel(self->handle);
    else if (self->handle && self->kind == KIND_LM)
        k = kp_lm_kernel(self->handle);
    kp_kernel_info info;
    kpy_kernel_info_init(&info);
    if (!k || kp_kernel_info_get(k, &info) != KP_OK)
        Py_RETURN_NONE;
    return PyUnicode_FromString(info.name);
}

static PyObject *solver_get_source(kpy_solver *self, void *unused)
{
    if (!self->handle || self->kind != KIND_RESIDUAL)
        Py_RETURN_NONE;
    return PyUnicode_FromString(kp_residual_source(self->handle));
}

static PyMethodDef solver_methods[] = {
    {"_fit", (PyCFunction)solver_fit, METH_VARARGS, NULL},
    {"_fit_sparse", (PyCFunction)solver_fit_sparse, METH_VARARGS, NULL},
    {"_evaluate", (PyCFunction)solver_evaluate, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef solver_getset[] = {
    {"precision", (getter)solver_get_precision, NULL, "\"f64\" or \"f32\" (never auto).", NULL},
    {"kind", (getter)solver_get_kind, NULL, "\"residual\", \"lm\" or \"sparse\".", NULL},
    {"kernel", (getter)solver_get_kernel, NULL,
     "The registered kernel's name (residual and lm on a runtime), else None.", NULL},
    {"source", (getter)solver_get_source, NULL,
     "The generated OpenCL C of a residual on a runtime, else None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kpy_solver_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport._kernelport.Solver",
    .tp_basicsize = sizeof(kpy_solver),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Solver(runtime, graph, kind, precision): a graph compiled on a runtime, or the host "
              "reference (runtime None); kernelport.solve uses it.",
    .tp_new = solver_new,
    .tp_dealloc = (destructor)solver_dealloc,
    .tp_traverse = (traverseproc)solver_traverse,
    .tp_free = PyObject_GC_Del,
    .tp_methods = solver_methods,
    .tp_getset = solver_getset,
};

int kpy_solve_constants(PyObject *m)
{
    PyObject *names = PyTuple_New(KP_LM_STATUS_COUNT);
    for (int s = 0; names && s < KP_LM_STATUS_COUNT; s++)
        PyTuple_SET_ITEM(names, s, PyUnicode_FromString(kp_lm_status_name((kp_lm_status)s)));
    if (!names || PyErr_Occurred() || PyModule_AddObjectRef(m, "LM_STATUS_NAMES", names) < 0) {
        Py_XDECREF(names);
        return -1;
    }
    Py_DECREF(names);
    kp_lm_options o = kp_lm_options_default();
    kp_lm_sparse_options so = kp_lm_sparse_options_default();
    PyObject *defaults = Py_BuildValue(
        "{s:I,s:d,s:d,s:d,s:d,s:d,s:d,s:I,s:d,s:I,s:I}", "max_iterations", o.max_iterations,
        "gradient_tolerance", o.gradient_tolerance, "step_tolerance", o.step_tolerance,
        "function_tolerance", o.function_tolerance, "initial_damping", o.initial_damping,
        "min_diagonal", o.min_diagonal, "loss_scale", o.loss_scale, "max_cg_iterations",
        so.max_cg_iterations, "cg_tolerance", so.cg_tolerance, "block_size", so.block_size,
        "dense_max_parameters", so.dense_max_parameters);
    if (!defaults || PyModule_AddObjectRef(m, "LM_DEFAULTS", defaults) < 0) {
        Py_XDECREF(defaults);
        return -1;
    }
    Py_DECREF(defaults);
    const struct {
        const char *name;
        long value;
    } constants[] = {
        {"LOSS_SQUARED", KP_LOSS_SQUARED},   {"LOSS_HUBER", KP_LOSS_HUBER},
        {"LOSS_CAUCHY", KP_LOSS_CAUCHY},     {"PRECISION_AUTO", KP_PRECISION_AUTO},
        {"PRECISION_F64", KP_PRECISION_F64}, {"PRECISION_F32", KP_PRECISION_F32},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
            return -1;
    return 0;
}
