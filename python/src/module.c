/* SPDX-License-Identifier: Apache-2.0 */
/* The extension module kernelport._kernelport: its types, exception classes and constants. */
#include <time.h>

#include "kpy.h"

/* Exception classes by status: each also derives from the built-in exception a Python caller
 * would catch for that kind of failure (a bad argument is a ValueError). */
static const struct {
    kp_status status;
    const char *name;
    PyObject **builtin;
} error_classes[] = {
    {KP_ERR_INVALID_ARG, "InvalidArgumentError", &PyExc_ValueError},
    {KP_ERR_NOT_FOUND, "NotFoundError", &PyExc_LookupError},
    {KP_ERR_BUILD, "BuildError", NULL},
    {KP_ERR_CL, "OpenCLError", NULL},
    {KP_ERR_OUT_OF_MEMORY, "OutOfMemoryError", &PyExc_MemoryError},
    {KP_ERR_MANIFEST, "ManifestError", NULL},
    {KP_ERR_PLUGIN, "PluginError", NULL},
    {KP_ERR_UNSUPPORTED, "UnsupportedError", NULL},
    {KP_ERR_IO, "InputOutputError", NULL},
    {KP_ERR_VERIFY, "VerifyError", NULL},
    {KP_ERR_NO_DEVICE, "NoDeviceError", NULL},
    {KP_ERR_INTERNAL, "InternalError", NULL},
};
enum { N_ERRORS = sizeof error_classes / sizeof error_classes[0] };

static PyObject *error_base;
static PyObject *error_types[N_ERRORS];

int kpy_errors_init(PyObject *m)
{
    error_base = PyErr_NewExceptionWithDoc(
        "kernelport.Error",
        "A failed Kernelport call: `status` (the kp_status value), `name` (\"KP_ERR_...\") and "
        "`message` (the library's kp_last_error text, also str(error)).",
        NULL, NULL);
    if (!error_base || PyModule_AddObjectRef(m, "Error", error_base) < 0)
        return -1;
    for (int i = 0; i < N_ERRORS; i++) {
        char qualified[64];
        snprintf(qualified, sizeof qualified, "kernelport.%s", error_classes[i].name);
        PyObject *bases = error_classes[i].builtin
                              ? PyTuple_Pack(2, error_base, *error_classes[i].builtin)
                              : PyTuple_Pack(1, error_base);
        if (!bases)
            return -1;
        error_types[i] = PyErr_NewException(qualified, bases, NULL);
        Py_DECREF(bases);
        if (!error_types[i] || PyModule_AddObjectRef(m, error_classes[i].name, error_types[i]) < 0)
            return -1;
    }
    return 0;
}

PyObject *kpy_raise(kp_status status, const char *message)
{
    PyObject *cls = error_base;
    for (int i = 0; i < N_ERRORS; i++)
        if (error_classes[i].status == status)
            cls = error_types[i];
    if (!message || !*message)
        message = kp_status_str(status);
    PyObject *text = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
    PyObject *exc = text ? PyObject_CallOneArg(cls, text) : NULL;
    PyObject *st = PyLong_FromLong(status), *name = PyUnicode_FromString(kp_status_name(status));
    if (exc && st && name && PyObject_SetAttrString(exc, "status", st) == 0 &&
        PyObject_SetAttrString(exc, "name", name) == 0 &&
        PyObject_SetAttrString(exc, "message", text) == 0)
        PyErr_SetObject(cls, exc);
    Py_XDECREF(text);
    Py_XDECREF(exc);
    Py_XDECREF(st);
    Py_XDECREF(name);
    return NULL;
}

PyObject *kpy_fail(kp_status status, const kp_runtime *rt)
{
    return kpy_raise(status, kp_last_error(rt));
}

kp_runtime *kpy_runtime_get(kpy_runtime *r)
{
    if (!r->rt)
        kpy_raise(KP_ERR_INVALID_ARG, "the runtime was closed");
    return r->rt;
}

double kpy_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

PyObject *kpy_result(const char *cls, PyObject *fields)
{
    if (!fields)
        return NULL;
    PyObject *module = PyImport_ImportModule("kernelport._results");
    PyObject *type = module ? PyObject_GetAttrString(module, cls) : NULL;
    PyObject *empty = type ? PyTuple_New(0) : NULL;
    PyObject *result = empty ? PyObject_Call(type, empty, fields) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(type);
    Py_XDECREF(module);
    Py_DECREF(fields);
    return result;
}

static PyObject *version(PyObject *m, PyObject *unused)
{
    return PyUnicode_FromString(kp_version());
}

/* _raise(status, message): the exception the library's status raises, for the checks the Python
 * layer makes before calling it. */
static PyObject *raise_status(PyObject *m, PyObject *args)
{
    int status;
    const char *message;
    if (!PyArg_ParseTuple(args, "is:_raise", &status, &message))
        return NULL;
    return kpy_raise((kp_status)status, message);
}

static PyMethodDef module_methods[] = {
    {"version", version, METH_NOARGS, "The loaded library's version (kp_version)."},
    {"_raise", raise_status, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

/* dtype names and codes, and the runtime flags, from the headers: the Python layer's tables. */
static int add_constants(PyObject *m)
{
    PyObject *dtypes = PyDict_New();
    if (!dtypes)
        return -1;
    for (int d = KP_DTYPE_NONE + 1; d < KP_DTYPE_COUNT; d++) {
        PyObject *code = PyLong_FromLong(d);
        if (!code || PyDict_SetItemString(dtypes, kp_dtype_name((kp_dtype)d), code) < 0) {
            Py_XDECREF(code);
            Py_DECREF(dtypes);
            return -1;
        }
        Py_DECREF(code);
    }
    int st = PyModule_AddObjectRef(m, "DTYPES", dtypes);
    Py_DECREF(dtypes);
    if (st < 0)
        return -1;
    const struct {
        const char *name;
        long value;
    } constants[] = {
        {"NO_ENV", KP_RUNTIME_NO_ENV},
        {"NO_USER_MANIFESTS", KP_RUNTIME_NO_USER_MANIFESTS},
        {"NO_INSTALLED_PLUGINS", KP_RUNTIME_NO_INSTALLED_PLUGINS},
        {"NO_DISK_CACHE", KP_RUNTIME_NO_DISK_CACHE},
        {"NO_BUILTIN_TUNING", KP_RUNTIME_NO_BUILTIN_TUNING},
    };
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
        if (PyModule_AddIntConstant(m, constants[i].name, constants[i].value) < 0)
            return -1;
    return PyModule_AddStringConstant(m, "HEADER_VERSION", KP_VERSION_STRING);
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kernelport._kernelport",
    .m_doc = "Kernelport's C API for Python; use the kernelport package, which wraps it.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__kernelport(void); /* the one symbol the module exports */

PyMODINIT_FUNC PyInit__kernelport(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyTypeObject *types[] = {&kpy_runtime_type,  &kpy_buffer_type,     &kpy_kernel_type,
                             &kpy_prepared_type, &kpy_expr_graph_type, &kpy_solver_type};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (PyModule_AddType(m, types[i]) < 0)
            goto fail;
    if (kpy_errors_init(m) < 0 || add_constants(m) < 0 || kpy_solve_constants(m) < 0)
        goto fail;
#ifdef KPY_WITH_COMM
    if (kpy_comm_init(m) < 0)
        goto fail;
#endif
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
