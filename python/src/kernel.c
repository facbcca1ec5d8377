/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Kernel: a registered kernel, called with keyword arguments; its
 * description, verification, benchmark and tuning. */
#include "args.h"

static PyObject *kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames);

/* Kernel(runtime, name): kp_kernel_find, then the parameters read once. */
static PyObject *kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"runtime", "name", NULL};
    kpy_runtime *runtime;
    const char *name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!s:Kernel", keywords, &kpy_runtime_type,
                                     &runtime, &name))
        return NULL;
    kp_runtime *rt = kpy_runtime_get(runtime);
    if (!rt)
        return NULL;
    kp_kernel *k;
    kp_status st = kp_kernel_find(rt, name, &k);
    if (st != KP_OK)
        return kpy_fail(st, rt);
    kp_kernel_info info;
    kpy_kernel_info_init(&info);
    st = kp_kernel_info_get(k, &info);
    if (st != KP_OK)
        return kpy_fail(st, NULL);
    kpy_kernel *self = (kpy_kernel *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->vectorcall = kernel_vectorcall;
    self->runtime = (kpy_runtime *)Py_NewRef(runtime);
    self->k = k;
    self->name = info.name;
    for (size_t i = 0; i < info.n_params && i < KP_MAX_PARAMS; i++) {
        kp_param_info p;
        kpy_param_info_init(&p);
        st = kp_kernel_param(k, i, &p);
        if (st != KP_OK) {
            Py_DECREF(self);
            return kpy_fail(st, NULL);
        }
        self->params[i].name = p.name;
        self->params[i].kind = p.kind;
        self->params[i].key = PyUnicode_InternFromString(p.name);
        self->n_params = i + 1;
        if (!self->params[i].key) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

/* Runtime.kernel caches kernels in the runtime's __dict__, and each kernel keeps its runtime
 * alive: the collector must see that edge to free a runtime dropped without close(). Clearing the
 * runtime's __dict__ breaks the cycle, so kernels need no tp_clear. */
static int kernel_traverse(kpy_kernel *self, visitproc visit, void *arg)
{
    Py_VISIT(self->runtime);
    return 0;
}

static void kernel_dealloc(kpy_kernel *self)
{
    PyObject_GC_UnTrack(self);
    for (size_t i = 0; i < self->n_params; i++)
        Py_XDECREF(self->params[i].key);
    Py_XDECREF(self->runtime);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Launches with keyword arguments; `event` as kp_kernel_launch takes it. */
static kp_status launch(kpy_kernel *self, PyObject *const *args, size_t nargsf, PyObject *kwnames,
                        kp_runtime **rt, kp_event **event)
{
    kp_arg argv[KP_MAX_PARAMS];
    size_t n;
    if (PyVectorcall_NARGS(nargsf)) {
        PyErr_Format(PyExc_TypeError, "kernel %s takes keyword arguments only", self->name);
        return KP_ERR_INVALID_ARG;
    }
    *rt = kpy_runtime_get(self->runtime);
    if (!*rt || kpy_args_convert(self, args, kwnames, argv, &n) < 0)
        return KP_ERR_INVALID_ARG;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_kernel_launch(*rt, self->k, argv, n, event);
    PyEval_RestoreThread(ts);
    if (st != KP_OK)
        kpy_fail(st, *rt);
    return st;
}

static PyObject *kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    kp_runtime *rt;
    if (launch((kpy_kernel *)callable, args, nargsf, kwnames, &rt, NULL) != KP_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* timed(**kwargs): launches and waits; the seconds its commands took on the device. */
static PyObject *kernel_timed(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    kp_runtime *rt;
    kp_event *ev = NULL;
    if (launch((kpy_kernel *)self, args, (size_t)nargs, kwnames, &rt, &ev) != KP_OK)
        return NULL;
    double seconds = 0;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_event_elapsed(rt, ev, &seconds);
    kp_event_destroy(rt, ev);
    PyEval_RestoreThread(ts);
    return st == KP_OK ? PyFloat_FromDouble(seconds) : kpy_fail(st, rt);
}

/* _time_launches(n, **kwargs): the arguments converted once, then n kp_kernel_launch calls in a
 * C loop; the host seconds the loop took (no wait for the device). python/bench compares a
 * launch from Python against this, the C API's own cost, in the same process. */
static PyObject *kernel_time_launches(PyObject *self_obj, PyObject *const *args, Py_ssize_t nargs,
                                      PyObject *kwnames)
{
    kpy_kernel *self = (kpy_kernel *)self_obj;
    kp_arg argv[KP_MAX_PARAMS];
    size_t n;
    if (nargs != 1)
        return PyErr_Format(PyExc_TypeError, "_time_launches(n, **kwargs)");
    long long count = PyLong_AsLongLong(args[0]);
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if ((count == -1 && PyErr_Occurred()) || !rt ||
        kpy_args_convert(self, args + 1, kwnames, argv, &n) < 0)
        return NULL;
    kp_status st = KP_OK;
    PyThreadState *ts = PyEval_SaveThread();
    double t0 = kpy_now();
    for (long long i = 0; i < count && st == KP_OK; i++)
        st = kp_kernel_launch(rt, self->k, argv, n, NULL);
    double t = kpy_now() - t0;
    PyEval_RestoreThread(ts);
    return st == KP_OK ? PyFloat_FromDouble(t) : kpy_fail(st, rt);
}

static PyObject *param_dict(const kp_param_info *p)
{
    PyObject *dtypes = PyList_New(0);
    for (int d = KP_DTYPE_NONE + 1; dtypes && d < KP_DTYPE_COUNT; d++) {
        if (!(p->dtypes & (1u << d)))
            continue;
        PyObject *name = PyUnicode_FromString(kp_dtype_name((kp_dtype)d));
        if (!name || PyList_Append(dtypes, name) < 0)
            Py_CLEAR(dtypes);
        Py_XDECREF(name);
    }
    if (!dtypes)
        return NULL;
    PyObject *dflt = !p->optional                   ? Py_NewRef(Py_None)
                     : p->kind == KP_ARG_KIND_INT   ? PyLong_FromLongLong(p->int_default)
                     : p->kind == KP_ARG_KIND_FLOAT ? PyFloat_FromDouble(p->float_default)
                                                    : Py_NewRef(Py_None);
    if (!dflt) {
        Py_DECREF(dtypes);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:s,s:s,s:s,s:N,s:O,s:N}", "name", p->name, "doc", p->doc, "kind",
                         kp_arg_kind_name(p->kind), "access", kp_access_name(p->access), "dtypes",
                         dtypes, "optional", p->optional ? Py_True : Py_False, "default", dflt);
}

/* info(): a KernelInfo with its ParamInfo list. */
static PyObject *kernel_info(kpy_kernel *self, PyObject *unused)
{
    kp_kernel_info info;
    kpy_kernel_info_init(&info);
    kp_status st = kp_kernel_info_get(self->k, &info);
    if (st != KP_OK)
        return kpy_fail(st, NULL);
    PyObject *params = PyList_New((Py_ssize_t)info.n_params);
    for (size_t i = 0; params && i < info.n_params; i++) {
        kp_param_info p;
        kpy_param_info_init(&p);
        st = kp_kernel_param(self->k, i, &p);
        PyObject *item = st == KP_OK ? kpy_result("ParamInfo", param_dict(&p)) : kpy_fail(st, NULL);
        if (!item)
            Py_CLEAR(params);
        else
            PyList_SET_ITEM(params, (Py_ssize_t)i, item);
    }
    if (!params)
        return NULL;
    return kpy_result("KernelInfo",
                      Py_BuildValue("{s:s,s:s,s:s,s:s,s:z,s:N,s:n}", "name", info.name, "summary",
                                    info.summary, "plugin", info.plugin, "plugin_path",
                                    info.plugin_path, "source_name", info.source_name, "params",
                                    params, "n_tunables", (Py_ssize_t)info.n_tunables));
}

/* tuning(): one Tunable per tunable, resolved for the device (may build the program). */
static PyObject *kernel_tuning(kpy_kernel *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    kp_kernel_info info;
    kpy_kernel_info_init(&info);
    if (!rt)
        return NULL;
    kp_status st = kp_kernel_info_get(self->k, &info);
    if (st != KP_OK)
        return kpy_fail(st, NULL);
    PyObject *list = PyList_New((Py_ssize_t)info.n_tunables);
    for (size_t i = 0; list && i < info.n_tunables; i++) {
        kp_tuning_info t;
        kpy_tuning_info_init(&t);
        PyThreadState *ts = PyEval_SaveThread();
        st = kp_kernel_tuning(rt, self->k, i, &t);
        PyEval_RestoreThread(ts);
        PyObject *item =
            st != KP_OK
                ? kpy_fail(st, rt)
                : kpy_result("Tunable",
                             Py_BuildValue("{s:s,s:s,s:L,s:L,s:s,s:s,s:s,s:s,s:s}", "name", t.name,
                                           "doc", t.doc, "value", (long long)t.value, "default",
                                           (long long)t.default_value, "value_text", t.value_text,
                                           "origin", t.origin, "allowed", t.allowed, "notes",
                                           t.notes, "provenance", t.provenance));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

typedef struct verify_state {
    PyObject *list; /* NULL once an append failed: the error is raised after the call */
} verify_state;

/* The report callback runs without the GIL held (verify releases it), so it takes it. */
static void verify_report(void *user, const kp_verify_result *r)
{
    verify_state *s = user;
    PyGILState_STATE g = PyGILState_Ensure();
    if (s->list) {
        PyObject *item = kpy_result(
            "VerifyResult",
            Py_BuildValue("{s:s,s:s,s:s,s:L,s:d,s:d,s:d,s:d,s:L,s:L,s:O}", "kernel", r->kernel,
                          "size", r->size, "output", r->output, "elements", (long long)r->elements,
                          "max_abs_err", r->max_abs_err, "max_rel_err", r->max_rel_err, "atol",
                          r->atol, "rtol", r->rtol, "worst_index", (long long)r->worst_index,
                          "failures", (long long)r->failures, "passed",
                          r->passed ? Py_True : Py_False));
        if (!item || PyList_Append(s->list, item) < 0)
            Py_CLEAR(s->list);
        Py_XDECREF(item);
    }
    PyGILState_Release(g);
}

/* verify(size=None, seed=1): a list of VerifyResult, one per output and sample size; a result
 * outside its tolerance is reported in the list (passed False), not raised. */
static PyObject *kernel_verify(kpy_kernel *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"size", "seed", NULL};
    const char *size = NULL;
    unsigned long long seed = 1;
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt || !PyArg_ParseTupleAndKeywords(args, kwds, "|zK:verify", keywords, &size, &seed))
        return NULL;
    verify_state s = {PyList_New(0)};
    if (!s.list)
        return NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_kernel_verify(rt, self->k, size, seed, verify_report, &s);
    PyEval_RestoreThread(ts);
    if (!s.list)
        return NULL;
    if (st != KP_OK && st != KP_ERR_VERIFY) {
        Py_DECREF(s.list);
        return kpy_fail(st, rt);
    }
    return s.list;
}

/* bench(size=None, warmup=3, min_runs=10, max_runs=1000, min_seconds=0.25, seed=1): a
 * BenchResult on sample size `size`, by default the kernel's first bench size. */
static PyObject *kernel_bench(kpy_kernel *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"size",        "warmup", "min_runs", "max_runs",
                               "min_seconds", "seed",   NULL};
    kp_bench_options opt = kp_bench_options_default();
    const char *size = NULL;
    unsigned long long seed = opt.seed;
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt ||
        !PyArg_ParseTupleAndKeywords(args, kwds, "|zIIIdK:bench", keywords, &size, &opt.warmup,
                                     &opt.min_runs, &opt.max_runs, &opt.min_seconds, &seed))
        return NULL;
    opt.seed = seed;
    if (!size)
        size = kp_kernel_sample_sizes(self->k, 1)[0];
    if (!size)
        return kpy_raise(KP_ERR_UNSUPPORTED, "the kernel has no sample sizes to time");
    kp_bench_result r;
    kpy_bench_result_init(&r);
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_kernel_bench(rt, self->k, size, &opt, &r);
    PyEval_RestoreThread(ts);
    if (st != KP_OK)
        return kpy_fail(st, rt);
    return kpy_result("BenchResult",
                      Py_BuildValue("{s:s,s:s,s:I,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "kernel",
                                    self->name, "size", size, "runs", r.runs, "median_s",
                                    r.median_s, "min_s", r.min_s, "max_s", r.max_s, "p10_s",
                                    r.p10_s, "p90_s", r.p90_s, "flops", r.flops, "bytes", r.bytes,
                                    "gflops", r.gflops, "gbs", r.gbs));
}

static PyObject *kernel_sample_sizes(kpy_kernel *self, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"bench", NULL};
    int bench = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p:sample_sizes", keywords, &bench))
        return NULL;
    PyObject *list = PyList_New(0);
    for (const char *const *s = kp_kernel_sample_sizes(self->k, bench); list && *s; s++) {
        PyObject *name = PyUnicode_FromString(*s);
        if (!name || PyList_Append(list, name) < 0)
            Py_CLEAR(list);
        Py_XDECREF(name);
    }
    return list;
}

static PyObject *kernel_describe(kpy_kernel *self, PyObject *unused)
{
    char text[1024];
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt)
        return NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_kernel_describe(rt, self->k, text, sizeof text);
    PyEval_RestoreThread(ts);
    return st == KP_OK ? PyUnicode_FromString(text) : kpy_fail(st, rt);
}

static PyObject *kernel_supported(kpy_kernel *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt)
        return NULL;
    kp_status st = kp_kernel_supported(rt, self->k);
    if (st == KP_OK || st == KP_ERR_UNSUPPORTED)
        return PyBool_FromLong(st == KP_OK);
    return kpy_fail(st, rt);
}

static PyObject *kernel_set_tunable(kpy_kernel *self, PyObject *args)
{
    const char *name;
    long long value;
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt || !PyArg_ParseTuple(args, "sL:set_tunable", &name, &value))
        return NULL;
    kp_status st = kp_kernel_tunable_set(rt, self->k, name, value);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *kernel_reset_tuning(kpy_kernel *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self->runtime);
    if (!rt)
        return NULL;
    kp_status st = kp_kernel_tuning_reset(rt, self->k);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *kernel_get_name(kpy_kernel *self, void *unused)
{
    return PyUnicode_FromString(self->name);
}

static PyObject *kernel_get_runtime(kpy_kernel *self, void *unused)
{
    return Py_NewRef(self->runtime);
}

static PyObject *kernel_get_params(kpy_kernel *self, void *unused)
{
    PyObject *t = PyTuple_New((Py_ssize_t)self->n_params);
    for (size_t i = 0; t && i < self->n_params; i++)
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, Py_NewRef(self->params[i].key));
    return t;
}

static PyObject *kernel_repr(kpy_kernel *self)
{
    return PyUnicode_FromFormat("<kernelport.Kernel %s>", self->name);
}

static PyObject *kernel_prepare(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    return kpy_prepared_create((kpy_kernel *)self, args, nargs, kwnames);
}

static PyMethodDef kernel_methods[] = {
    {"timed", (PyCFunction)(void (*)(void))kernel_timed, METH_FASTCALL | METH_KEYWORDS,
     "timed(**kwargs): launches, waits, and returns the device seconds the launch took."},
    {"prepare", (PyCFunction)(void (*)(void))kernel_prepare, METH_FASTCALL | METH_KEYWORDS,
     "prepare(**kwargs): a Prepared launch, its arguments validated once (kp_prepared_create)."},
    {"_time_launches", (PyCFunction)(void (*)(void))kernel_time_launches,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"info", (PyCFunction)kernel_info, METH_NOARGS,
     "The kernel's description: a KernelInfo with a ParamInfo per parameter."},
    {"tuning", (PyCFunction)kernel_tuning, METH_NOARGS,
     "A Tunable per tunable: value, origin, allowed values, as resolved for the device."},
    {"verify", (PyCFunction)(void (*)(void))kernel_verify, METH_VARARGS | METH_KEYWORDS,
     "verify(size=None, seed=1): the device against the host reference on sample inputs; a list "
     "of VerifyResult (outputs outside their tolerance have passed False)."},
    {"bench", (PyCFunction)(void (*)(void))kernel_bench, METH_VARARGS | METH_KEYWORDS,
     "bench(size=None, warmup=3, min_runs=10, max_runs=1000, min_seconds=0.25, seed=1): a "
     "BenchResult of the kernel on its sample arguments of `size` (default: its first bench "
     "size)."},
    {"sample_sizes", (PyCFunction)(void (*)(void))kernel_sample_sizes, METH_VARARGS | METH_KEYWORDS,
     "sample_sizes(bench=False): the sample size names for verify (or bench)."},
    {"describe", (PyCFunction)kernel_describe, METH_NOARGS,
     "The kernel's sentence on which implementation it takes on this device."},
    {"supported", (PyCFunction)kernel_supported, METH_NOARGS,
     "Whether the device can run the kernel at all."},
    {"set_tunable", (PyCFunction)kernel_set_tunable, METH_VARARGS,
     "set_tunable(name, value): overrides a tunable for this runtime."},
    {"reset_tuning", (PyCFunction)kernel_reset_tuning, METH_NOARGS,
     "Forgets set_tunable's overrides."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef kernel_getset[] = {
    {"name", (getter)kernel_get_name, NULL, "\"family.op\"", NULL},
    {"runtime", (getter)kernel_get_runtime, NULL, "The runtime the kernel belongs to.", NULL},
    {"params", (getter)kernel_get_params, NULL, "The parameters' names, in order.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kpy_kernel_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport.Kernel",
    .tp_basicsize = sizeof(kpy_kernel),
    /* Not a base type: the vectorcall slot would not reach subclasses on Python < 3.12. */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Kernel(runtime, name): a registered kernel; call it with keyword arguments.",
    .tp_new = kernel_new,
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_free = PyObject_GC_Del,
    .tp_vectorcall_offset = offsetof(kpy_kernel, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)kernel_repr,
    .tp_methods = kernel_methods,
    .tp_getset = kernel_getset,
};
