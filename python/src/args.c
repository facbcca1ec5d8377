/* SPDX-License-Identifier: Apache-2.0 */
/* Keyword arguments to kp_args, by the kernel's parameter descriptions (kp_kernel_param). */
#include "args.h"

/* The parameter called `key`: by identity first (keyword names in calls and the parameters' keys
 * are interned strings), then by value. */
static const kpy_param *find_param(const kpy_kernel *k, PyObject *key)
{
    for (size_t i = 0; i < k->n_params; i++)
        if (k->params[i].key == key)
            return &k->params[i];
    for (size_t i = 0; i < k->n_params; i++)
        if (PyUnicode_Compare(k->params[i].key, key) == 0)
            return &k->params[i];
    return NULL;
}

static int type_error(const kpy_kernel *k, const char *param, const char *expected, PyObject *got)
{
    PyErr_Format(PyExc_TypeError, "kernel %s: argument \"%s\": expected %s, got %s", k->name, param,
                 expected, Py_TYPE(got)->tp_name);
    return -1;
}

static int convert_one(const kpy_kernel *k, const char *name, int kind, PyObject *value,
                       kp_arg *out)
{
    switch (kind) {
    case KP_ARG_KIND_TENSOR: {
        if (!PyObject_TypeCheck(value, &kpy_buffer_type))
            return type_error(k, name, "a kernelport.Buffer (rt.buffer(array))", value);
        const kpy_buffer *b = (const kpy_buffer *)value;
        if (!b->runtime->rt) {
            kpy_raise(KP_ERR_INVALID_ARG, "the buffer's runtime was closed");
            return -1;
        }
        *out = kp_arg_tensor(name, b->view);
        return 0;
    }
    case KP_ARG_KIND_INT: {
        if (PyFloat_Check(value))
            return type_error(k, name, "an int", value);
        long long v = PyLong_Check(value) ? PyLong_AsLongLong(value) : -1;
        if (!PyLong_Check(value)) {
            PyObject *index = PyNumber_Index(value); /* NumPy's integers */
            if (!index)
                return type_error(k, name, "an int", value);
            v = PyLong_AsLongLong(index);
            Py_DECREF(index);
        }
        if (v == -1 && PyErr_Occurred())
            return -1;
        *out = kp_arg_int(name, v);
        return 0;
    }
    default: {
        double v = PyFloat_Check(value) ? PyFloat_AS_DOUBLE(value) : PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return type_error(k, name, "a float", value);
        }
        *out = kp_arg_float(name, v);
        return 0;
    }
    }
}

int kpy_args_convert(const kpy_kernel *k, PyObject *const *values, PyObject *names, kp_arg *out,
                     size_t *n_out)
{
    size_t n = 0;
    Py_ssize_t count = names ? PyTuple_GET_SIZE(names) : 0;
    if (count > KP_MAX_PARAMS) {
        kpy_raise(KP_ERR_INVALID_ARG, "more keyword arguments than a kernel may have parameters");
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *key = PyTuple_GET_ITEM(names, i), *value = values[i];
        const kpy_param *p = find_param(k, key);
        if (!p) {
            /* Passed on as it is, so that the library's message names it with the parameters. */
            const char *name = PyUnicode_AsUTF8(key);
            if (!name)
                return -1;
            out[n++] = kp_arg_int(name, 0);
            continue;
        }
        if (value == Py_None)
            continue; /* omitted: an optional parameter's default */
        if (convert_one(k, p->name, p->kind, value, &out[n]) < 0)
            return -1;
        n++;
    }
    *n_out = n;
    return 0;
}
