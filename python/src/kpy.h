/* SPDX-License-Identifier: Apache-2.0 */
/* The Python extension's shared declarations: its object types and error helpers (kpy_ names are
 * the extension's own, as kp__ names are the library's). */
#ifndef KPY_H
#define KPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <kernelport/kernelport.h>
#include <kernelport/solve.h>
#include <stdatomic.h>

/* A runtime. `rt` is NULL after close(); every object that uses it checks. */
/* A handle made on a runtime that must be released before the runtime is (a solver, a
 * communicator): linked into its runtime's list while the handle lives. */
typedef struct kpy_dependent {
    struct kpy_dependent *prev, *next;
    void (*release)(struct kpy_dependent *d); /* releases the handle and unlinks d */
} kpy_dependent;

/* A runtime. `rt` is NULL after close(); every object that uses it checks. */
typedef struct kpy_runtime {
    PyObject ob_base;
    kp_runtime *rt;
    kpy_dependent *dependents;
} kpy_runtime;

/* A tensor view of device memory. The object that allocated the kp_buffer owns it (base NULL);
 * views made from it hold a reference to that owner (base), so the memory lives as long as any
 * view of it. */
typedef struct kpy_buffer {
    PyObject ob_base;
    kpy_runtime *runtime;
    PyObject *base;
    kp_buffer *buf;
    kp_tensor view;
} kpy_buffer;

/* One parameter of a kernel, read once from kp_kernel_param. */
typedef struct kpy_param {
    const char *name; /* owned by the runtime, which the kernel object keeps alive */
    PyObject *key;    /* the name as an interned str: keyword arguments match it by identity */
    int kind;         /* a kp_arg_kind */
} kpy_param;

typedef struct kpy_kernel {
    PyObject ob_base;
    vectorcallfunc vectorcall; /* calls skip building a dict of the keyword arguments */
    kpy_runtime *runtime;
    kp_kernel *k;
    const char *name;
    size_t n_params;
    kpy_param params[KP_MAX_PARAMS];
} kpy_kernel;

/* The solve layer's graphs and handles are used by one thread at a time: a lock taken with the GIL
 * released, and the thread holding it, so that a call into the same object from its own progress
 * callback raises instead of waiting for itself. */
typedef struct kpy_lock {
    PyThread_type_lock lock;
    _Atomic unsigned long owner; /* PyThread_get_thread_ident() of the holder; 0 when free */
} kpy_lock;

/* 0, or -1 with an exception. */
int kpy_lock_init(kpy_lock *l);
void kpy_lock_free(kpy_lock *l);

/* Releases the GIL and takes `l`: returns the thread state for kpy_lock_leave, or NULL with a
 * RuntimeError when this thread holds `l` already. */
PyThreadState *kpy_lock_enter(kpy_lock *l);

/* Gives `l` back and takes the GIL again. */
void kpy_lock_leave(kpy_lock *l, PyThreadState *ts);

/* A residual expression graph (kp_expr_graph). */
typedef struct kpy_expr_graph {
    PyObject ob_base;
    kp_expr_graph *g;
    kpy_lock lock;
} kpy_expr_graph;

extern PyTypeObject kpy_runtime_type;
extern PyTypeObject kpy_buffer_type;
extern PyTypeObject kpy_kernel_type;
extern PyTypeObject kpy_prepared_type;
extern PyTypeObject kpy_expr_graph_type;
extern PyTypeObject kpy_solver_type;

/* Raises the exception class of `status` (kernelport.Error or a subclass) carrying the status, its
 * name and `message`; returns NULL. */
PyObject *kpy_raise(kp_status status, const char *message);

/* kpy_raise with the library's message for the last failing call on `rt` (NULL: calls made
 * without a runtime). */
PyObject *kpy_fail(kp_status status, const kp_runtime *rt);

/* The runtime handle, or NULL with an exception set when the runtime was closed. */
kp_runtime *kpy_runtime_get(kpy_runtime *r);

/* An instance of the dataclass `cls` of kernelport._results built from the dict `fields` (stolen);
 * NULL with an exception on failure. */
PyObject *kpy_result(const char *cls, PyObject *fields);

/* Seconds on the monotonic clock: the benchmark helpers' C loops time themselves with it. */
double kpy_now(void);

/* Kernel.prepare(**kwargs): a Prepared launch of `k` with the arguments bound. */
PyObject *kpy_prepared_create(kpy_kernel *k, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);

/* Links `d` into runtime `r`'s dependents, released by kpy_dependent_unlink's caller or, at the
 * latest, when the runtime closes (their objects stay, and raise when used). */
void kpy_dependent_link(kpy_runtime *r, kpy_dependent *d, void (*release)(kpy_dependent *));
void kpy_dependent_unlink(kpy_runtime *r, kpy_dependent *d);

/* 0 when buffer `b` holds exactly `bytes` bytes, else -1 with a ValueError naming `what`. */
int kpy_solve_check_size(const Py_buffer *b, size_t bytes, const char *what);

/* Adds the solve layer's names (statuses, losses, precisions) to module `m`; -1 on failure. */
int kpy_solve_constants(PyObject *m);

#ifdef KPY_WITH_COMM
/* Adds the Communicator type (comm.h), _mpi_finalize and the COMM_ constants to module `m`; -1 on
 * failure. Only where libkernelport-comm was built. */
int kpy_comm_init(PyObject *m);
#endif

/* Creates the exception classes and adds them to module `m`; -1 with an exception on failure. */
int kpy_errors_init(PyObject *m);

/* The output structs the extension hands to the library, each initialised here and only here. */
void kpy_kernel_info_init(kp_kernel_info *info);
void kpy_param_info_init(kp_param_info *info);
void kpy_tuning_info_init(kp_tuning_info *info);
void kpy_plugin_record_init(kp_plugin_record *record);
void kpy_device_info_init(kp_device_info *info);
void kpy_bench_result_init(kp_bench_result *result);
void kpy_manifest_layer_init(kp_manifest_layer *layer);

#endif
