/* SPDX-License-Identifier: Apache-2.0 */
/* kernelport._kernelport.Runtime: kp_runtime_create's options, the device, kernels and plugins. */
#include "kpy.h"

/* Optional str or None keyword argument as a filesystem path; *bytes keeps it alive. */
static int path_arg(PyObject *obj, PyObject **bytes, const char **out)
{
    *out = NULL;
    if (!obj || obj == Py_None)
        return 0;
    if (!PyUnicode_FSConverter(obj, bytes))
        return -1;
    *out = PyBytes_AS_STRING(*bytes);
    return 0;
}

static PyObject *runtime_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"device", "manifest", "plugin_dirs", "cache_dir", "flags", NULL};
    PyObject *device = NULL, *manifest = NULL, *dirs = NULL, *cache = NULL;
    unsigned int flags = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOOOI:Runtime", keywords, &device, &manifest,
                                     &dirs, &cache, &flags))
        return NULL;
    kp_runtime_options opt = kp_runtime_options_default();
    opt.flags = flags;
    PyObject *device_b = NULL, *manifest_b = NULL, *cache_b = NULL, *dirs_b = NULL;
    const char **dir_paths = NULL;
    kpy_runtime *self = NULL;
    if (path_arg(device, &device_b, &opt.device) < 0 ||
        path_arg(manifest, &manifest_b, &opt.manifest_path) < 0 ||
        path_arg(cache, &cache_b, &opt.cache_dir) < 0)
        goto done;
    if (dirs && dirs != Py_None) {
        if (PyUnicode_Check(dirs) || PyBytes_Check(dirs)) {
            PyErr_SetString(PyExc_TypeError, "plugin_dirs is a list of directories, not one");
            goto done;
        }
        dirs_b = PySequence_List(dirs);
        if (!dirs_b)
            goto done;
        Py_ssize_t n = PyList_GET_SIZE(dirs_b);
        dir_paths = PyMem_Calloc((size_t)n + 1, sizeof *dir_paths);
        if (!dir_paths) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *b = NULL;
            if (!PyUnicode_FSConverter(PyList_GET_ITEM(dirs_b, i), &b))
                goto done;
            PyList_SetItem(dirs_b, i, b); /* the list now keeps the encoded path alive */
            dir_paths[i] = PyBytes_AS_STRING(b);
        }
        opt.plugin_dirs = dir_paths;
        opt.n_plugin_dirs = (size_t)n;
    }
    self = (kpy_runtime *)type->tp_alloc(type, 0);
    if (!self)
        goto done;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_runtime_create(&opt, &self->rt);
    PyEval_RestoreThread(ts);
    if (st != KP_OK) {
        Py_CLEAR(self);
        kpy_fail(st, NULL);
    }
done:
    PyMem_Free(dir_paths);
    Py_XDECREF(dirs_b);
    Py_XDECREF(device_b);
    Py_XDECREF(manifest_b);
    Py_XDECREF(cache_b);
    return (PyObject *)self;
}

void kpy_dependent_link(kpy_runtime *r, kpy_dependent *d, void (*release)(kpy_dependent *))
{
    d->release = release;
    d->prev = NULL;
    d->next = r->dependents;
    if (r->dependents)
        r->dependents->prev = d;
    r->dependents = d;
}

void kpy_dependent_unlink(kpy_runtime *r, kpy_dependent *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        r->dependents = d->next;
    if (d->next)
        d->next->prev = d->prev;
    d->prev = d->next = NULL;
}

static void runtime_destroy(kpy_runtime *self)
{
    while (self->dependents)
        self->dependents->release(self->dependents);
    kp_runtime *rt = self->rt;
    self->rt = NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_runtime_destroy(rt);
    PyEval_RestoreThread(ts);
}

static void runtime_dealloc(kpy_runtime *self)
{
    runtime_destroy(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *runtime_close(kpy_runtime *self, PyObject *unused)
{
    runtime_destroy(self);
    Py_RETURN_NONE;
}

static PyObject *runtime_finish(kpy_runtime *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt)
        return NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_finish(rt);
    PyEval_RestoreThread(ts);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *runtime_warmup(kpy_runtime *self, PyObject *args)
{
    const char *pattern = NULL;
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt || !PyArg_ParseTuple(args, "|z:warmup", &pattern))
        return NULL;
    PyThreadState *ts = PyEval_SaveThread();
    kp_status st = kp_runtime_warmup(rt, pattern);
    PyEval_RestoreThread(ts);
    return st == KP_OK ? Py_NewRef(Py_None) : kpy_fail(st, rt);
}

static PyObject *device_dict(const kp_device_info *d, const char *why)
{
    char uuid[40] = "";
    if (d->has_uuid)
        kp_uuid_format(d->uuid, uuid);
    return Py_BuildValue(
        "{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:K,s:K,s:K,s:n,s:O,s:O,s:s}",
        "index", d->index, "name", d->name, "vendor", kp_vendor_name(d->vendor), "type",
        kp_device_type_name(d->type), "vendor_string", d->vendor_string, "platform", d->platform,
        "driver", d->driver, "version", d->version, "c_version", d->c_version, "arch", d->arch,
        "pci_bus", d->pci_bus, "uuid", uuid, "compute_units", d->compute_units, "clock_mhz",
        d->clock_mhz, "global_mem", (unsigned long long)d->global_mem, "local_mem",
        (unsigned long long)d->local_mem, "max_alloc", (unsigned long long)d->max_alloc,
        "max_workgroup", (Py_ssize_t)d->max_workgroup, "fp16", d->fp16 ? Py_True : Py_False, "fp64",
        d->fp64 ? Py_True : Py_False, "why", why ? why : "");
}

static PyObject *runtime_device(kpy_runtime *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt)
        return NULL;
    kp_device_info d;
    kpy_device_info_init(&d);
    const char *why = NULL;
    kp_status st = kp_runtime_device(rt, &d, &why);
    return st == KP_OK ? device_dict(&d, why) : kpy_fail(st, rt);
}

static PyObject *runtime_devices(kpy_runtime *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt)
        return NULL;
    size_t n = kp_device_count(rt);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        kp_device_info d;
        kpy_device_info_init(&d);
        kp_status st = kp_device_get(rt, i, &d);
        PyObject *item = st == KP_OK ? device_dict(&d, NULL) : kpy_fail(st, rt);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *runtime_kernel_names(kpy_runtime *self, PyObject *args)
{
    const char *pattern = NULL;
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt || !PyArg_ParseTuple(args, "|z:kernel_names", &pattern))
        return NULL;
    PyObject *list = PyList_New(0);
    size_t n = kp_kernel_count(rt);
    for (size_t i = 0; list && i < n; i++) {
        kp_kernel_info info;
        kpy_kernel_info_init(&info);
        kp_status st = kp_kernel_info_get(kp_kernel_at(rt, i), &info);
        if (st != KP_OK) {
            Py_CLEAR(list);
            kpy_fail(st, NULL);
        } else if (kp_kernel_name_matches(pattern, info.name)) {
            PyObject *name = PyUnicode_FromString(info.name);
            if (!name || PyList_Append(list, name) < 0)
                Py_CLEAR(list);
            Py_XDECREF(name);
        }
    }
    return list;
}

/* Loaded (rejected 0) or rejected plugins as dicts. */
static PyObject *plugin_list(kpy_runtime *self, int rejected)
{
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt)
        return NULL;
    size_t n = rejected ? kp_plugin_rejected_count(rt) : kp_plugin_count(rt);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        kp_plugin_record r;
        kpy_plugin_record_init(&r);
        kp_status st = rejected ? kp_plugin_rejected(rt, i, &r) : kp_plugin_get(rt, i, &r);
        const char *probe = rejected ? "" : kp_plugin_probe_result(rt, i);
        PyObject *item =
            st != KP_OK ? kpy_fail(st, rt)
                        : Py_BuildValue("{s:s,s:s,s:s,s:s,s:n,s:s}", "path", r.path, "name", r.name,
                                        "version", r.version, "reason", r.reason, "n_kernels",
                                        (Py_ssize_t)r.n_kernels, "probe", probe ? probe : "");
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *runtime_plugins(kpy_runtime *self, PyObject *unused)
{
    return plugin_list(self, 0);
}

static PyObject *runtime_rejected_plugins(kpy_runtime *self, PyObject *unused)
{
    return plugin_list(self, 1);
}

static PyObject *runtime_manifests(kpy_runtime *self, PyObject *unused)
{
    kp_runtime *rt = kpy_runtime_get(self);
    if (!rt)
        return NULL;
    size_t n = kp_runtime_manifest_count(rt);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        kp_manifest_layer l;
        kpy_manifest_layer_init(&l);
        kp_status st = kp_runtime_manifest_layer(rt, i, &l);
        PyObject *item = st != KP_OK ? kpy_fail(st, rt)
                                     : Py_BuildValue("{s:s,s:s,s:O}", "name", l.name, "path",
                                                     l.path, "read", l.read ? Py_True : Py_False);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *runtime_closed(kpy_runtime *self, void *unused)
{
    return PyBool_FromLong(self->rt == NULL);
}

static PyMethodDef runtime_methods[] = {
    {"close", (PyCFunction)runtime_close, METH_NOARGS,
     "Destroys the runtime now (kp_runtime_destroy): its buffers and kernels become unusable."},
    {"finish", (PyCFunction)runtime_finish, METH_NOARGS, "Waits for every queued command."},
    {"warmup", (PyCFunction)runtime_warmup, METH_VARARGS,
     "warmup(pattern=None): builds the programs of the kernels matching the glob ahead of use."},
    {"_device", (PyCFunction)runtime_device, METH_NOARGS, NULL},
    {"_devices", (PyCFunction)runtime_devices, METH_NOARGS, NULL},
    {"kernel_names", (PyCFunction)runtime_kernel_names, METH_VARARGS,
     "kernel_names(pattern=None): the registered kernels' names matching the glob, sorted."},
    {"_plugins", (PyCFunction)runtime_plugins, METH_NOARGS, NULL},
    {"_rejected_plugins", (PyCFunction)runtime_rejected_plugins, METH_NOARGS, NULL},
    {"_manifests", (PyCFunction)runtime_manifests, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef runtime_getset[] = {
    {"closed", (getter)runtime_closed, NULL, "Whether close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject kpy_runtime_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernelport._kernelport.Runtime",
    .tp_basicsize = sizeof(kpy_runtime),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Runtime(device=None, manifest=None, plugin_dirs=None, cache_dir=None, flags=0)",
    .tp_new = runtime_new,
    .tp_dealloc = (destructor)runtime_dealloc,
    .tp_methods = runtime_methods,
    .tp_getset = runtime_getset,
};
