/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport application API: runtime, devices, buffers, tensors, kernels, launch, errors. */
#ifndef KERNELPORT_H
#define KERNELPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KP_API __attribute__((visibility("default")))
#define KP_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KP_API
#define KP_PRINTF(fmt, args)
#endif

#define KP_VERSION_MAJOR 0
#define KP_VERSION_MINOR 2
#define KP_VERSION_PATCH 0
#define KP_VERSION_STRING "0.2.0"

/* The version of the library actually loaded ("0.2.0"), which may differ from the header's
 * KP_VERSION_STRING when an application runs against a newer shared library. Static string. */
KP_API const char *kp_version(void);

/*
 * Structures that grow (docs/stability.md has the whole rule). The structures below carry a
 * `uint32_t struct_size` (their first member; kp_arg's is at offset 12), so a later version can
 * add members at their end:
 *   - one the library fills (kp_device_info, kp_kernel_info, ...): the caller sets struct_size to
 *     sizeof the structure it was compiled with (`kp_kernel_info info = {.struct_size = sizeof
 *     info};`); the library writes only that many bytes, and sets struct_size to the bytes it
 *     wrote (smaller when the library is older than the caller's header). A struct_size below the
 *     structure's first layout fails with KP_ERR_INVALID_ARG naming the structure.
 *   - one the caller fills (kp_runtime_options, kp_bench_options, ...): set by its _default()
 *     constructor; 0 stands for the first layout (designated initialisers); members past the
 *     caller's struct_size take their defaults; a larger struct_size than the library knows is
 *     accepted when the bytes past its own layout are zero.
 *   - one the library passes to a callback (kp_verify_result, kp_tune_step): the library sets
 *     struct_size; a callback reads a later member only when struct_size covers it.
 */

/* ------------------------------------------------------------------------------------------ */
/* Status codes                                                                               */
/* ------------------------------------------------------------------------------------------ */

/*
 * Every fallible call returns a kp_status. KP_OK is zero, errors are negative. The status says
 * what kind of failure happened; the message (kp_last_error) says where and why: the manifest
 * file:line:col, the plugin path, the kernel and argument, the OpenCL call and its error name, or
 * the build log. OpenCL error codes are never folded into this enum.
 */
#define KP_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                                     \
    X(ERR_NOT_FOUND, -2, "not found")                                                              \
    X(ERR_BUILD, -3, "OpenCL program build failed")                                                \
    X(ERR_CL, -4, "OpenCL call failed")                                                            \
    X(ERR_OUT_OF_MEMORY, -5, "out of memory")                                                      \
    X(ERR_MANIFEST, -6, "manifest error")                                                          \
    X(ERR_PLUGIN, -7, "plugin error")                                                              \
    X(ERR_UNSUPPORTED, -8, "not supported on this device")                                         \
    X(ERR_IO, -9, "input/output error")                                                            \
    X(ERR_VERIFY, -10, "result differs from the host reference")                                   \
    X(ERR_NO_DEVICE, -11, "no usable device")                                                      \
    X(ERR_INTERNAL, -12, "internal error")

typedef enum kp_status {
#define KP__STATUS_ENUM(name, value, text) KP_##name = value,
    KP_STATUS_MAP(KP__STATUS_ENUM)
#undef KP__STATUS_ENUM
} kp_status;

/* "KP_ERR_BUILD" for KP_ERR_BUILD; "KP_STATUS_UNKNOWN" for a value outside the enum. Static string.
 */
KP_API const char *kp_status_name(kp_status status);

/* "OpenCL program build failed" for KP_ERR_BUILD; a static, human description of the status. */
KP_API const char *kp_status_str(kp_status status);

/* ------------------------------------------------------------------------------------------ */
/* Opaque handles                                                                             */
/* ------------------------------------------------------------------------------------------ */

typedef struct kp_runtime kp_runtime;   /* a device, its plugins, kernels, caches and queue */
typedef struct kp_buffer kp_buffer;     /* device memory (or host memory on the host device) */
typedef struct kp_kernel kp_kernel;     /* a registered kernel; owned by the runtime */
typedef struct kp_event kp_event;       /* the commands of one launch, for timing */
typedef struct kp_prepared kp_prepared; /* a launch bound once, launched many times */
typedef struct kp_graph kp_graph;       /* a recorded sequence of launches, replayed many times */

/* ------------------------------------------------------------------------------------------ */
/* Logging                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef enum kp_log_level {
    KP_LOG_ERROR = 0,
    KP_LOG_WARN = 1,
    KP_LOG_INFO = 2,
    KP_LOG_DEBUG = 3,
} kp_log_level;

/*
 * A log sink. `message` is one line without a trailing newline, valid only during the call.
 * The callback may be called from any thread that uses the runtime, and must not call back
 * into the runtime.
 */
typedef void (*kp_log_fn)(void *user, kp_log_level level, const char *message);

/* "error", "warn", "info", "debug". */
KP_API const char *kp_log_level_name(kp_log_level level);

/* ------------------------------------------------------------------------------------------ */
/* Runtime                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * Threads and several runtimes (docs/threads.md). A runtime is one device: its own OpenCL context
 * and in-order queue, kernels, tuning, program cache in memory, buffers, prepared launches and
 * graphs. A process may hold several at once (one per GPU: "gpu:0" and "gpu:1"), created, used and
 * destroyed from any threads, each independently of the others; what they share is made safe by
 * the library (device enumeration, plugin inits, the on-disk caches, CLBlast's state).
 *   - The calls documented "Thread-safe", and launches, buffer calls and kp_finish, may be made on
 *     one runtime from several threads at once; launches are serialised on its queue in the order
 *     their calls take its lock.
 *   - A prepared launch and a graph are used by one thread at a time. A thread records at most one
 *     graph per runtime, and may record on several runtimes at once.
 *   - kp_last_error is kept per runtime and per thread (and per thread for calls without one).
 *   - Objects never cross runtimes: a buffer, kernel, event, prepared launch or graph belongs to
 *     the runtime that made it, and another runtime's calls refuse it. Move data between devices
 *     through host memory (kp_buffer_read, kp_buffer_write), or with comm.h between processes.
 *   - kp_runtime_destroy needs every other thread to be done with that runtime; the others are
 *     unaffected.
 */

/* Flags for kp_runtime_options.flags. */
enum {
    /* Ignore KP_MANIFEST, KP_DEVICE, KP_PLUGIN_PATH and KP_KERNEL_DIR (tests, embedding). */
    KP_RUNTIME_NO_ENV = 1u << 0,
    /* Skip the system and user manifest files; the built-in default and `manifest` still apply. */
    KP_RUNTIME_NO_USER_MANIFESTS = 1u << 1,
    /* Do not scan the installed plugin directory (lib/kernelport/plugins beside the library). */
    KP_RUNTIME_NO_INSTALLED_PLUGINS = 1u << 2,
    /* Do not read or write the on-disk program cache. */
    KP_RUNTIME_NO_DISK_CACHE = 1u << 3,
    /* Ignore the built-in manifest's tuning entries (its device rules still apply): every
     * tunable starts from its default unless a manifest file sets it (tests, untuned baselines). */
    KP_RUNTIME_NO_BUILTIN_TUNING = 1u << 4,
};

typedef struct kp_runtime_options {
    uint32_t struct_size; /* set by kp_runtime_options_default; 0: the 0.2 layout (stability.md) */
    uint32_t flags;       /* KP_RUNTIME_* flags */
    /* A manifest file layered over the default, system and user manifests. NULL: KP_MANIFEST. */
    const char *manifest_path;
    /* Extra plugin directories, scanned before every other directory. Borrowed during create. */
    const char *const *plugin_dirs;
    size_t n_plugin_dirs;
    /* Device spec that overrides the manifest's device rules ("nvidia", "pocl", "gpu:1",
     * "cpu", "host", a name substring or a UUID). NULL: KP_DEVICE, else the manifest rules. */
    const char *device;
    /* Log sink; NULL uses the default sink (stderr, level from KP_LOG, default "warn"). */
    kp_log_fn log;
    void *log_user;
    /* The most verbose level passed to `log` when `log` is set. */
    kp_log_level log_level;
    /* Directory for the program binary cache. NULL: the manifest's cache.dir. */
    const char *cache_dir;
} kp_runtime_options;

/* Options with every field at its default; thread-safe, no allocation. */
KP_API kp_runtime_options kp_runtime_options_default(void);

/*
 * Creates a runtime: reads the manifest layers (built-in default < system file
 * <sysconfdir>/kernelport/manifest.yaml (/etc/... for a /usr install, /usr/local/etc/... by
 * default) < user file $XDG_CONFIG_HOME/kernelport/manifest.yaml (~/.config/...) <
 * options->manifest_path or KP_MANIFEST), enumerates OpenCL devices, picks one (options->device,
 * else KP_DEVICE, else the manifest's device rules), creates a context and a profiling queue,
 * loads the plugins and registers their kernels. With no OpenCL platform it falls back to the
 * host device with a warning, unless the manifest says `require: opencl`.
 *
 * `options` may be NULL for defaults; it is only read during the call. On success *out owns a
 * runtime to be released with kp_runtime_destroy. Plugins that fail to load do not fail the
 * runtime: they are recorded (kp_plugin_rejected) and logged as warnings.
 *
 * Errors: KP_ERR_INVALID_ARG (out is NULL, bad struct_size), KP_ERR_MANIFEST (a manifest is
 * malformed; the message reads "file:line:col: error: ..."), KP_ERR_NO_DEVICE (the device spec or
 * rules match no device, or OpenCL is required and absent), KP_ERR_CL, KP_ERR_OUT_OF_MEMORY.
 * On failure *out is NULL and kp_last_error(NULL) holds the message.
 * Thread-safety: may be called from any thread; runtimes are independent.
 */
KP_API kp_status kp_runtime_create(const kp_runtime_options *options, kp_runtime **out);

/*
 * Waits for queued work, releases every buffer, event, program and context the runtime owns,
 * and closes its plugins. NULL is a no-op. No other thread may use the runtime during or after.
 */
KP_API void kp_runtime_destroy(kp_runtime *rt);

/*
 * Builds, ahead of first use, the programs of every kernel whose name matches `pattern` (a glob
 * such as "gru.*"; NULL for all), with their resolved tuning values, filling the in-memory and
 * on-disk caches; library-backed kernels run their plugin's warm-up. Errors: the first failure
 * (KP_ERR_BUILD, ...), after trying every kernel. Thread-safe.
 */
KP_API kp_status kp_runtime_warmup(kp_runtime *rt, const char *pattern);

/*
 * The message of the last failing call made on this thread with this runtime, or with no
 * runtime (rt NULL: kp_runtime_create and the other functions that take none). Never NULL
 * (empty when nothing failed). Valid until the next failing call on this thread and runtime.
 */
KP_API const char *kp_last_error(const kp_runtime *rt);

/*
 * Records a message (printf's `fmt` and arguments) as the last error of this thread on `rt` (NULL:
 * the slot of calls without a runtime) and returns `status`, for libraries layered over Kernelport
 * (comm.h, ca.h): their failures then read through kp_last_error like the core's. Thread-safe.
 */
KP_API kp_status kp_last_error_set(const kp_runtime *rt, kp_status status, const char *fmt, ...)
    KP_PRINTF(3, 4);

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef enum kp_vendor {
    KP_VENDOR_UNKNOWN = 0,
    KP_VENDOR_POCL,
    KP_VENDOR_NVIDIA,
    KP_VENDOR_AMD,
    KP_VENDOR_INTEL,
    KP_VENDOR_APPLE,
    KP_VENDOR_ARM,
    KP_VENDOR_QUALCOMM,
    KP_VENDOR_HOST,
    KP_VENDOR_COUNT
} kp_vendor;

typedef enum kp_device_type {
    KP_DEVICE_OTHER = 0,
    KP_DEVICE_CPU,
    KP_DEVICE_GPU,
    KP_DEVICE_ACCELERATOR,
    KP_DEVICE_HOST, /* Kernelport's own host backend: kernels run their C reference */
} kp_device_type;

/* "pocl", "nvidia", "amd", "intel", "apple", "arm", "qualcomm", "host", "unknown". */
KP_API const char *kp_vendor_name(kp_vendor vendor);
/* "cpu", "gpu", "accelerator", "host", "other". */
KP_API const char *kp_device_type_name(kp_device_type type);

/* Filled by the library, which writes only the struct_size bytes the caller set (the rule of
 * output structures: docs/stability.md). Numeric fields the driver does not report are 0,
 * strings "". */
typedef struct kp_device_info {
    uint32_t struct_size; /* sizeof(kp_device_info), set by the caller */
    kp_vendor vendor;     /* normalised from platform, vendor and device strings */
    kp_device_type type;
    uint32_t index;          /* position in kp_device_count's enumeration */
    char name[256];          /* CL_DEVICE_NAME */
    char vendor_string[128]; /* CL_DEVICE_VENDOR as the driver reports it */
    char platform[128];      /* CL_PLATFORM_NAME */
    char driver[128];        /* CL_DRIVER_VERSION */
    char version[128];       /* CL_DEVICE_VERSION */
    char c_version[64];      /* CL_DEVICE_OPENCL_C_VERSION */
    char arch[64];    /* "sm_90" (NVIDIA), "gfx1030" (AMD), "skylake-avx512" (PoCL); may be "" */
    char pci_bus[32]; /* "0000:17:00.0" where the driver reports it, else "" */
    uint8_t uuid[16]; /* cl_khr_device_uuid, valid when has_uuid */
    uint32_t has_uuid;
    uint32_t vendor_id; /* CL_DEVICE_VENDOR_ID */
    uint32_t compute_units;
    uint32_t clock_mhz;
    uint64_t global_mem; /* bytes */
    uint64_t local_mem;  /* bytes */
    uint64_t max_alloc;  /* bytes */
    size_t max_workgroup;
    size_t max_work_item[3];
    uint32_t fp16; /* cl_khr_fp16 */
    uint32_t fp64; /* cl_khr_fp64 */
} kp_device_info;

/* Number of devices the runtime enumerated (every OpenCL device, then the host device). */
KP_API size_t kp_device_count(const kp_runtime *rt);

/* Copies device `index`'s description into *out. Errors: KP_ERR_INVALID_ARG. Thread-safe. */
KP_API kp_status kp_device_get(const kp_runtime *rt, size_t index, kp_device_info *out);

/*
 * Copies the description of the device the runtime runs on into *out, and, when `why` is not
 * NULL, a pointer to a runtime-owned sentence saying which rule chose it. Thread-safe.
 */
KP_API kp_status kp_runtime_device(const kp_runtime *rt, kp_device_info *out, const char **why);

/* Formats a UUID as 8-4-4-4-12 lowercase hex into buf (at least 37 bytes). */
KP_API void kp_uuid_format(const uint8_t uuid[16], char *buf);

/*
 * OpenCL interop: the runtime's cl_context, cl_command_queue (in order, profiling enabled) and
 * cl_device_id, for applications that enqueue their own OpenCL work or call an OpenCL library on
 * the same queue. Each out pointer may be NULL. The handles stay owned by the runtime: do not
 * release them (retain them if you keep them past kp_runtime_destroy). Errors: KP_ERR_UNSUPPORTED
 * on the host device. Thread-safe; work enqueued directly is ordered with Kernelport's launches.
 */
KP_API kp_status kp_runtime_opencl(kp_runtime *rt, void **context, void **queue, void **device);

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * Allocates `bytes` (> 0) of device memory, uninitialised. *out is owned by the caller and
 * released with kp_buffer_destroy (or by kp_runtime_destroy). Errors: KP_ERR_INVALID_ARG,
 * KP_ERR_OUT_OF_MEMORY (the message names the size and the device's limits), KP_ERR_CL.
 * Thread-safe.
 */
KP_API kp_status kp_buffer_create(kp_runtime *rt, size_t bytes, kp_buffer **out);

/*
 * Wraps memory the application made as a buffer: `cl_mem`, a cl_mem of the runtime's OpenCL
 * context (kp_runtime_opencl), its first `bytes` (> 0, at most its size). The buffer takes a
 * reference of its own (clRetainMemObject): the caller may release its own at once, and
 * kp_buffer_destroy (or kp_runtime_destroy) drops the buffer's. Memory imported from another API
 * (cl_khr_external_memory) is wrapped the same way; acquiring and releasing it around the other
 * API's use stays the caller's job. *out as kp_buffer_create's. Errors: KP_ERR_INVALID_ARG (NULL
 * or 0 arguments, a cl_mem of another context, more bytes than it has), KP_ERR_UNSUPPORTED (the
 * host device), KP_ERR_CL (a handle OpenCL does not know as a cl_mem), KP_ERR_OUT_OF_MEMORY.
 * Thread-safe.
 */
KP_API kp_status kp_buffer_wrap(kp_runtime *rt, void *cl_mem, size_t bytes, kp_buffer **out);

/* What kp_buffer_wrap_external calls as the buffer is released: `cl_mem` is the buffer's, `user`
 * the pointer given with the function. */
typedef void (*kp_buffer_hand_back_fn)(kp_runtime *rt, void *cl_mem, void *user);

/*
 * kp_buffer_wrap for memory imported from another API (cl_khr_external_memory) and acquired by
 * OpenCL: as the buffer is released (kp_buffer_destroy, or kp_runtime_destroy before the queue
 * goes), `hand_back(rt, cl_mem, user)` runs on that thread before the buffer drops its reference,
 * to hand the memory back to its API (clEnqueueReleaseExternalMemObjectsKHR on the runtime's queue,
 * then clFinish). Deleting an import OpenCL still holds is what hung NVIDIA's clReleaseContext
 * (docs/comm.md). hand_back may be NULL (then this is kp_buffer_wrap). Errors as kp_buffer_wrap's.
 * Thread-safe.
 */
KP_API kp_status kp_buffer_wrap_external(kp_runtime *rt, void *cl_mem, size_t bytes,
                                         kp_buffer_hand_back_fn hand_back, void *user,
                                         kp_buffer **out);

/* Releases a buffer after the work queued on it. NULL is a no-op. A buffer of another runtime is
 * left to it: the call logs an error and sets kp_last_error(rt). */
KP_API void kp_buffer_destroy(kp_runtime *rt, kp_buffer *buf);

/* Size in bytes; 0 for NULL. */
KP_API size_t kp_buffer_size(const kp_buffer *buf);

/* The buffer's cl_mem for OpenCL interop (owned by the buffer: do not release it), or NULL on the
 * host device. */
KP_API void *kp_buffer_cl_mem(const kp_buffer *buf);

/*
 * Copies `bytes` from host memory `src` (borrowed, only read during the call) into the buffer at
 * byte `offset`. Blocking: returns after the data left `src`, ordered after earlier launches.
 * Errors: KP_ERR_INVALID_ARG (range outside the buffer, NULL pointers, a buffer of another
 * runtime: here and in every call that takes a runtime and a buffer), KP_ERR_CL.
 */
KP_API kp_status kp_buffer_write(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                                 const void *src);

/* Copies `bytes` from the buffer at `offset` into `dst`, after all earlier queued work. Blocking.
 */
KP_API kp_status kp_buffer_read(kp_runtime *rt, const kp_buffer *buf, size_t offset, size_t bytes,
                                void *dst);

/* Device-side copy between buffers (ranges may not overlap within one buffer). Asynchronous. */
KP_API kp_status kp_buffer_copy(kp_runtime *rt, const kp_buffer *src, size_t src_offset,
                                kp_buffer *dst, size_t dst_offset, size_t bytes);

/*
 * Fills `bytes` at `offset` with repetitions of a pattern of 1, 2, 4, 8, 16, 32, 64 or 128 bytes;
 * offset and bytes must be multiples of the pattern size. Asynchronous.
 */
KP_API kp_status kp_buffer_fill(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                                const void *pattern, size_t pattern_size);

/* ------------------------------------------------------------------------------------------ */
/* Tensors                                                                                    */
/* ------------------------------------------------------------------------------------------ */

#include "tensor.h"

/* ------------------------------------------------------------------------------------------ */
/* Kernels                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef enum kp_arg_kind {
    KP_ARG_NONE = 0,
    KP_ARG_KIND_TENSOR = 1,
    KP_ARG_KIND_INT = 2,
    KP_ARG_KIND_FLOAT = 3,
} kp_arg_kind;

typedef enum kp_access {
    KP_ACCESS_IN = 1,
    KP_ACCESS_OUT = 2,
    KP_ACCESS_INOUT = 3,
} kp_access;

/*
 * A named argument of a launch; name is borrowed for the duration of the launch call. Build it
 * with kp_arg_tensor/_int/_float (KP_ARG_*), which set struct_size to sizeof(kp_arg); 0 (a
 * designated initialiser that leaves it out) means the same, first layout. Launches refuse any
 * other struct_size, naming the argument. Every element of one array has the same layout.
 */
typedef struct kp_arg {
    const char *name;
    int32_t kind;         /* a kp_arg_kind */
    uint32_t struct_size; /* sizeof(kp_arg) or 0 */
    kp_tensor tensor;
    int64_t i;
    double f;
} kp_arg;

/* Constructors of named arguments (functions, so C++ can use them too; the macros are the
 * short spelling in C). */
KP_INLINE kp_arg kp_arg_tensor(const char *name, kp_tensor t)
{
    kp_arg a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.name = name;
    a.kind = KP_ARG_KIND_TENSOR;
    a.tensor = t;
    return a;
}

KP_INLINE kp_arg kp_arg_int(const char *name, int64_t v)
{
    kp_arg a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.name = name;
    a.kind = KP_ARG_KIND_INT;
    a.i = v;
    return a;
}

KP_INLINE kp_arg kp_arg_float(const char *name, double v)
{
    kp_arg a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.name = name;
    a.kind = KP_ARG_KIND_FLOAT;
    a.f = v;
    return a;
}

#define KP_ARG_TENSOR(n, t) kp_arg_tensor((n), (t))
#define KP_ARG_INT(n, v) kp_arg_int((n), (v))
#define KP_ARG_FLOAT(n, v) kp_arg_float((n), (v))

/* "tensor", "int", "float"; "in", "out", "inout". */
KP_API const char *kp_arg_kind_name(kp_arg_kind kind);
KP_API const char *kp_access_name(kp_access access);

/* A parameter of a kernel, as kp_kernel_param reports it. Strings are owned by the runtime. */
typedef struct kp_param_info {
    uint32_t struct_size; /* sizeof(kp_param_info), set by the caller */
    const char *name;
    const char *doc;
    kp_arg_kind kind;
    kp_access access;
    uint32_t dtypes; /* bit (1 << kp_dtype) for each accepted dtype (tensors) */
    int optional;    /* may be omitted: ints and floats take `int_default`/`float_default` */
    int64_t int_default;
    double float_default;
} kp_param_info;

/* A kernel's description. Strings are owned by the runtime and live as long as it does. */
typedef struct kp_kernel_info {
    uint32_t struct_size; /* sizeof(kp_kernel_info), set by the caller */
    const char *name;     /* "family.op" */
    const char *summary;
    const char *plugin;      /* the plugin's name */
    const char *plugin_path; /* the file it was loaded from ("(static)" for built-in plugins) */
    const char *source_name; /* "example.cl", or NULL for library-backed kernels */
    size_t n_params;
    size_t n_tunables;
} kp_kernel_info;

/*
 * Finds a registered kernel by its exact name. *out is owned by the runtime, valid until
 * kp_runtime_destroy. Errors: KP_ERR_NOT_FOUND (the message suggests near names),
 * KP_ERR_INVALID_ARG.
 */
KP_API kp_status kp_kernel_find(kp_runtime *rt, const char *name, kp_kernel **out);

/*
 * Registers a kernel at run time, from a descriptor the caller built (include/kernelport/plugin.h):
 * for a kernel whose OpenCL C a program, or a compiler inside Kernelport, generated. The kernel
 * goes through the checks a plugin's does and then works like one: the program cache (keyed by
 * its source and options), kp_kernel_verify, kp_kernel_bench, kp_kernel_tune, tuning from the
 * manifest and `explain`. Its plugin reads "runtime" ("(registered at run time)").
 *
 * The descriptor and everything it points to (strings, params, tunables with their allowed values
 * and choices, the size lists) are copied during the call: the caller may free them afterwards.
 * Function pointers (check, enqueue, reference, sample, cost, ...) and `user` are kept as given,
 * so that code, and whatever `user` points to, must outlive the runtime. The callbacks reach the
 * core through kp_host_api_get(). On success *out is the kernel, owned by the runtime.
 *
 * Errors: KP_ERR_INVALID_ARG (NULL arguments, a malformed descriptor, with the reason; a kernel of
 * that name already registered; the manifest's plugins.disable names it), KP_ERR_OUT_OF_MEMORY.
 * Thread-safe; kp_kernel_at's indices change (the list stays sorted by name).
 */
struct kp_kernel_desc;
KP_API kp_status kp_kernel_register(kp_runtime *rt, const struct kp_kernel_desc *desc,
                                    kp_kernel **out);

/* The host function table plugins receive in init, for the callbacks of kernels registered with
 * kp_kernel_register. Static, valid for the life of the process. */
struct kp_host_api;
KP_API const struct kp_host_api *kp_host_api_get(void);

/* Number of registered kernels; kp_kernel_at returns them sorted by name (NULL past the end). */
KP_API size_t kp_kernel_count(const kp_runtime *rt);
KP_API kp_kernel *kp_kernel_at(const kp_runtime *rt, size_t index);

/* Non-zero when `name` matches the glob `pattern` ("*", "?", "[...]"; a pattern with no
 * wildcard matches the name itself or the family: "gru" matches "gru.step"). NULL matches all. */
KP_API int kp_kernel_name_matches(const char *pattern, const char *name);

/* Fills *out with the kernel's description. */
KP_API kp_status kp_kernel_info_get(const kp_kernel *k, kp_kernel_info *out);

/* Fills *out with parameter `index` (< n_params). Errors: KP_ERR_INVALID_ARG. */
KP_API kp_status kp_kernel_param(const kp_kernel *k, size_t index, kp_param_info *out);

/*
 * The tuning of one tunable for this runtime's device: its value, where it came from and what
 * was rejected on the way. Strings are owned by the runtime, valid until kp_runtime_destroy.
 */
typedef struct kp_tuning_info {
    uint32_t struct_size; /* sizeof(kp_tuning_info), set by the caller */
    const char *name;
    const char *doc;
    int64_t value;
    int64_t default_value;
    const char *value_text; /* the value as written (a choice name, "true"), or "" */
    const char *origin;     /* "default", or the manifest entry "file:line" and its match */
    const char *allowed;    /* "1, 2, 4, 8" or "1..1024" */
    const char *notes;      /* rejected candidates with reasons, "" when none */
    /* The `provenance:` of the manifest entry the value came from, as one line ("device: NVIDIA
     * H200, driver: 580.159.04, date: 2026-11-21, kernelport: 0.2.0, speedup: 1.43x ..."), or ""
     * (the default, a value set by the application, an entry without provenance). */
    const char *provenance;
} kp_tuning_info;

/*
 * Resolves (once per runtime) and reports tunable `index` of kernel `k`: the most specific
 * manifest entry matching the device whose value is allowed and fits the device and the compiled
 * kernel wins. Resolution may build the kernel's program to read its limits.
 * Errors: KP_ERR_INVALID_ARG, KP_ERR_BUILD (the program could not be built to check limits);
 * after a resolution error *out still holds the tunable's name, doc and default (value the
 * default, the other strings "").
 */
KP_API kp_status kp_kernel_tuning(kp_runtime *rt, kp_kernel *k, size_t index, kp_tuning_info *out);

/*
 * Writes into out (size bytes, the caller's; a longer sentence is truncated) the kernel's own
 * sentence on which implementation its launches take on this device with the resolved tuning,
 * and why ("" when the kernel gives none). It may run a tiny launch to find out, which enqueues
 * device work and may build a program. Errors: KP_ERR_INVALID_ARG, the kernel's (message in
 * kp_last_error). Thread-safe.
 */
KP_API kp_status kp_kernel_describe(kp_runtime *rt, kp_kernel *k, char *out, size_t size);

/*
 * KP_OK when the runtime's device can run kernel `k` at all (always on the host device, where
 * kernels run their references); KP_ERR_UNSUPPORTED, with the message naming the device in
 * kp_last_error, when the kernel says it cannot (tc.gemm without tensor cores); launches of such
 * a kernel fail the same way. Builds nothing. Errors: KP_ERR_INVALID_ARG (NULL rt or k).
 * Thread-safe.
 */
KP_API kp_status kp_kernel_supported(kp_runtime *rt, kp_kernel *k);

/*
 * Launches `k` with named arguments (any order; optional parameters may be omitted).
 * Validates before anything is enqueued: argument count, unknown or repeated names, kinds,
 * dtypes, NULL buffers and buffers of another runtime, extents that multiply past 2^63 - 1,
 * tensor extents and offsets within their buffers, outputs whose elements overlap each other
 * or another argument, then the kernel's own check of shapes. Asynchronous on OpenCL devices:
 * buffers must stay alive until the work is done (kp_finish, a read, or an event). When `event` is
 * not NULL, *event receives a caller-owned event spanning every command of the launch. Errors:
 * KP_ERR_INVALID_ARG (message names the kernel and argument), KP_ERR_BUILD, KP_ERR_UNSUPPORTED,
 * KP_ERR_CL, KP_ERR_OUT_OF_MEMORY. A failed launch leaves the runtime usable. Thread-safety:
 * launches from several threads are serialised on the runtime's queue.
 */
KP_API kp_status kp_kernel_launch(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n_args,
                                  kp_event **event);

/* A manifest layer the runtime read or looked for, in the order they apply (later ones win). */
typedef struct kp_manifest_layer {
    uint32_t struct_size; /* sizeof(kp_manifest_layer), set by the caller */
    const char *name;     /* "built-in", "system", "user" or "explicit" (--manifest, KP_MANIFEST) */
    const char *path;     /* the file; "" for the built-in one. Owned by the runtime */
    int read;             /* 1: read; 0: an optional file that is not there */
} kp_manifest_layer;

/* How many layers the runtime looked at, and layer `index` of them. Errors: KP_ERR_INVALID_ARG. */
KP_API size_t kp_runtime_manifest_count(const kp_runtime *rt);
KP_API kp_status kp_runtime_manifest_layer(const kp_runtime *rt, size_t index,
                                           kp_manifest_layer *out);

/* Waits until every queued command of the runtime has finished. */
KP_API kp_status kp_finish(kp_runtime *rt);

/* ------------------------------------------------------------------------------------------ */
/* Prepared launches                                                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * Binds kernel k's arguments once, for launching many times: they are validated as
 * kp_kernel_launch validates them (names, kinds, dtypes, extents, overlaps). The first
 * kp_prepared_launch then runs the kernel's own check and records what its enqueue does, the
 * OpenCL kernels with their arguments set, so every later launch only enqueues them: no name
 * matching, no validation, no planning. Kernels whose enqueue cannot be recorded (library-backed
 * ones such as blas.gemm, or ones that launch other kernels or read results back) run their
 * enqueue on every launch, still without the matching and validation; on the host device every
 * launch runs the reference. `args` is only read during the call (names included).
 *
 * *out belongs to the caller (kp_prepared_destroy; kp_runtime_destroy destroys those left).
 * Errors: those of kp_kernel_launch's validation, KP_ERR_OUT_OF_MEMORY. Thread-safety: a prepared
 * launch is used by one thread at a time; its launches are ordered with the runtime's others.
 */
KP_API kp_status kp_prepared_create(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n_args,
                                    kp_prepared **out);

/*
 * Changes one bound argument (by name; an optional one may be given for the first time): checked
 * as at create, and the next launch runs the kernel's check and records again. A tensor may name
 * another buffer (the next batch) or another view. On error the prepared launch keeps its
 * previous arguments. The _int, _float and _tensor forms build the kp_arg.
 */
KP_API kp_status kp_prepared_set(kp_prepared *p, const kp_arg *arg);
KP_API kp_status kp_prepared_set_int(kp_prepared *p, const char *name, int64_t value);
KP_API kp_status kp_prepared_set_float(kp_prepared *p, const char *name, double value);
KP_API kp_status kp_prepared_set_tensor(kp_prepared *p, const char *name, kp_tensor tensor);

/*
 * Launches the prepared call: asynchronous like kp_kernel_launch, with an optional event. It
 * records again by itself when the kernel's tuning changed (kp_kernel_tunable_set) or a buffer
 * its recording used was replaced. Errors: the kernel's check and build errors on the launch that
 * records; KP_ERR_INVALID_ARG when a bound buffer was destroyed (bind another with
 * kp_prepared_set); KP_ERR_CL.
 */
KP_API kp_status kp_prepared_launch(kp_prepared *p, kp_event **event);

/* Releases a prepared launch (its recorded kernels after the work queued with them). NULL is a
 * no-op. */
KP_API void kp_prepared_destroy(kp_prepared *p);

/* ------------------------------------------------------------------------------------------ */
/* Graphs: recorded launch sequences                                                          */
/* ------------------------------------------------------------------------------------------ */

/* kp_graph_begin's flags. Without either command-buffer flag, a graph uses cl_khr_command_buffer
 * where the device offers it and it is known to pay (not on PoCL, where it was measured slower
 * than enqueuing the kernels one by one). */
enum {
    /* Replay kernel by kernel even where the device offers cl_khr_command_buffer. */
    KP_GRAPH_NO_COMMAND_BUFFER = 1u << 0,
    /* Use cl_khr_command_buffer wherever the device offers it. */
    KP_GRAPH_COMMAND_BUFFER = 1u << 1
};

/*
 * Starts recording on this thread: until kp_graph_end, its kp_kernel_launch, kp_buffer_copy and
 * kp_buffer_fill calls on `rt` (the typed calls of include/kernelport/ops/ included) are checked
 * as usual and captured instead of run, and return KP_OK without touching the device. A launch
 * is checked completely when captured (its arguments and its kernel's own check), so a bad one
 * fails at its call and is left out of the graph. While recording, this thread's
 * kp_buffer_write, kp_buffer_read, kp_graph_replay and launches asking for an event fail:
 * host transfers and timing are not part of a graph. Other threads' calls run as usual.
 * A thread may record on several runtimes at once, one graph on each.
 * Errors: KP_ERR_INVALID_ARG when this thread is already recording on rt.
 */
KP_API kp_status kp_graph_begin(kp_runtime *rt, uint32_t flags);

/*
 * Declares a parameter: argument `arg` of the launch captured last becomes the graph's parameter
 * `param`, whose value kp_graph_set changes before a replay without recording again. Several
 * launches may share a parameter (the batch that the forward and the backward read); all must
 * take the same kind of argument. Errors: KP_ERR_INVALID_ARG (no launch captured yet, no such
 * argument, a kind that differs from the parameter's).
 */
KP_API kp_status kp_graph_param(kp_runtime *rt, const char *param, const char *arg);

/*
 * Stops this thread's recording and returns the graph (*out, caller-owned: kp_graph_destroy;
 * kp_runtime_destroy destroys those left), with its command buffers made. A graph with nothing
 * captured is valid. Errors: KP_ERR_INVALID_ARG when this thread records nothing on rt; those of
 * kp_graph_replay's preparation (a buffer destroyed while recording), after which *out still
 * holds the graph.
 */
KP_API kp_status kp_graph_end(kp_runtime *rt, kp_graph **out);

/*
 * Gives parameter `param` a new value for the next replays: value->kind must be the parameter's
 * (value->name is ignored). Checked as a launch checks it, for every launch that reads it; on
 * error nothing changes. The _int, _float and _tensor forms build the kp_arg.
 */
KP_API kp_status kp_graph_set(kp_graph *g, const char *param, const kp_arg *value);
KP_API kp_status kp_graph_set_int(kp_graph *g, const char *param, int64_t value);
KP_API kp_status kp_graph_set_float(kp_graph *g, const char *param, double value);
KP_API kp_status kp_graph_set_tensor(kp_graph *g, const char *param, kp_tensor value);

/*
 * Runs the recorded sequence once, asynchronously like kp_kernel_launch, in the order recorded
 * and after the runtime's earlier work. No argument is matched or checked again: each launch's
 * OpenCL kernels replay with their arguments already set, through one command buffer per run of
 * recorded launches where the device offers cl_khr_command_buffer. Launches whose enqueue cannot
 * be recorded (library-backed kernels such as blas.gemm, ones that read results back or launch
 * other kernels) run their enqueue each time without the checks; kp_graph_describe lists them.
 * A launch whose parameter changed, or whose kernel's tuning changed, records again first (a
 * tuning change is logged). With `event`, *event spans the whole replay.
 * Errors: KP_ERR_INVALID_ARG naming the launch (its index, kernel and argument) when a buffer the
 * graph uses was destroyed; the kernel's check and build errors of a launch recording again;
 * KP_ERR_CL. Thread-safety: a graph is used by one thread at a time; its replays are serialised
 * with the runtime's other launches.
 */
KP_API kp_status kp_graph_replay(kp_graph *g, kp_event **event);

/* What a graph holds. */
typedef struct kp_graph_info {
    uint32_t struct_size;     /* sizeof(kp_graph_info), set by the caller */
    size_t n_launches;        /* kernel launches captured */
    size_t n_transfers;       /* buffer copies and fills */
    size_t n_direct;          /* launches that run their enqueue at each replay */
    size_t n_commands;        /* OpenCL kernels the recorded launches enqueue */
    size_t n_command_buffers; /* command buffers a replay enqueues (0 without the extension) */
    size_t n_params;
} kp_graph_info;

KP_API kp_status kp_graph_get_info(const kp_graph *g, kp_graph_info *out);

/* One line per launch and transfer ("3 tensor.add: recorded, 1 command"; "4 blas.gemm: direct
 * (a library-backed kernel)"), then the parameters; truncated to `size`. */
KP_API kp_status kp_graph_describe(const kp_graph *g, char *out, size_t size);

/* Releases a graph (after the work queued by its replays). NULL is a no-op. */
KP_API void kp_graph_destroy(kp_graph *g);

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Waits for the launch's commands. */
KP_API kp_status kp_event_wait(kp_runtime *rt, kp_event *ev);

/*
 * Waits, then stores in *seconds the device time from the start of the launch's first command to
 * the end of its last (profiling counters; wall time on the host device).
 */
KP_API kp_status kp_event_elapsed(kp_runtime *rt, kp_event *ev, double *seconds);

/* Releases an event. NULL is a no-op. */
KP_API void kp_event_destroy(kp_runtime *rt, kp_event *ev);

/* ------------------------------------------------------------------------------------------ */
/* Plugins                                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct kp_plugin_record {
    uint32_t struct_size; /* sizeof(kp_plugin_record), set by the caller */
    const char *path;     /* the file (or "(static)") */
    const char *name;     /* the plugin's name, or "" when it was rejected before reading it */
    const char *version;
    const char *reason; /* why it was rejected ("" for loaded plugins) */
    size_t n_kernels;   /* kernels it registered that are in use */
} kp_plugin_record;

/* Loaded plugins, in load order; strings owned by the runtime. */
KP_API size_t kp_plugin_count(const kp_runtime *rt);
KP_API kp_status kp_plugin_get(const kp_runtime *rt, size_t index, kp_plugin_record *out);

/*
 * How loaded plugin `index` (kp_plugin_get's numbering) was vetted before this process loaded it,
 * a static string: "probed" (kernelport-plugin-scan loaded it and ran its init in a child process
 * first, during this kp_runtime_create), "cached" (a child process did so on an earlier start,
 * and the file is unchanged since), "static" (compiled into the library), "off" (the manifest
 * says plugins.probe: false) or "unavailable" (the scanner could not run; a warning said why).
 * NULL when there is no such plugin.
 */
KP_API const char *kp_plugin_probe_result(const kp_runtime *rt, size_t index);

/* Plugins that were found but refused, with the reason. */
KP_API size_t kp_plugin_rejected_count(const kp_runtime *rt);
KP_API kp_status kp_plugin_rejected(const kp_runtime *rt, size_t index, kp_plugin_record *out);

/* ------------------------------------------------------------------------------------------ */
/* Verification                                                                               */
/* ------------------------------------------------------------------------------------------ */

/* One output compared between the device and the host reference. The strings are valid only
 * during the report callback. The library sets struct_size: a member added in a later version is
 * read only when struct_size covers it. */
typedef struct kp_verify_result {
    uint32_t struct_size;
    const char *kernel;
    const char *size;   /* the sample size name */
    const char *output; /* the output parameter compared */
    int64_t elements;
    double max_abs_err;
    double max_rel_err;  /* |dev - ref| / max(|ref|, tiny) at its worst element */
    double atol, rtol;   /* the tolerance used: |dev - ref| <= atol + rtol * |ref| */
    int64_t worst_index; /* element index (in the tensor's row-major order) of the worst error */
    int64_t failures;    /* elements outside the tolerance */
    int passed;
} kp_verify_result;

typedef void (*kp_verify_fn)(void *user, const kp_verify_result *result);

/*
 * Runs kernel `k` on each of its sample sizes (all when `size` is NULL; a size the kernel does not
 * list is passed to its sample function, which decides) on the runtime's device
 * and its host reference on copies of the same random inputs (seeded by `seed`), and compares
 * every output. `report` (may be NULL) is called once per output compared. Returns KP_OK when
 * all pass, KP_ERR_VERIFY when any output is outside its tolerance, or the launch's error.
 * On the host device both runs use the reference.
 */
KP_API kp_status kp_kernel_verify(kp_runtime *rt, kp_kernel *k, const char *size, uint64_t seed,
                                  kp_verify_fn report, void *user);

/* The NULL-terminated list of sample size names the kernel offers for verification ("tiny",
 * "prime", ...) or for benchmarks (bench != 0). Owned by the plugin; never NULL. */
KP_API const char *const *kp_kernel_sample_sizes(const kp_kernel *k, int bench);

/* Bytes of storage the tensors of kernel k's sample `size` take: the sample is built on the host
 * (seed 1) and nothing is launched. Lets a caller pick the cheapest sample to run where each run
 * is dear (`kernelport verify --smallest` under a simulator). Errors: KP_ERR_INVALID_ARG,
 * KP_ERR_UNSUPPORTED (no sample function), the sample function's (KP_ERR_NOT_FOUND for a size
 * it does not know). */
KP_API kp_status kp_kernel_sample_bytes(kp_runtime *rt, kp_kernel *k, const char *size,
                                        uint64_t *bytes);

/* ------------------------------------------------------------------------------------------ */
/* Tuning overrides, benchmarks, device peaks and the tuner                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * Overrides the value of one tunable of `k` for this runtime (until kp_kernel_tuning_reset). The
 * value must be allowed by the tunable and fit the device; kp_kernel_tuning then reports origin
 * "set by the application". The next launch builds (or finds cached) the program for the new
 * values. Errors: KP_ERR_INVALID_ARG (unknown tunable, value not allowed). Thread-safe.
 */
KP_API kp_status kp_kernel_tunable_set(kp_runtime *rt, kp_kernel *k, const char *name,
                                       int64_t value);
/* Forgets overrides: the manifest decides again. */
KP_API kp_status kp_kernel_tuning_reset(kp_runtime *rt, kp_kernel *k);

/* The measured limits of a device, the denominators of every "fraction of peak". */
typedef struct kp_peak {
    uint32_t struct_size;  /* sizeof(kp_peak), set by the caller */
    double bandwidth_gbs;  /* the best of the three streams below: the denominator of "% BW" */
    double read_gbs;       /* streaming reads (a sum), bytes per second / 1e9 */
    double copy_gbs;       /* dst[i] = src[i], bytes read + written */
    double triad_gbs;      /* a[i] = b[i] + s * c[i], bytes read + written */
    uint32_t vector_width; /* float vector width of the best stream (1, 2, 4, 8, 16) */
    double fp32_gflops;    /* independent FMA chains, 2 FLOPs per FMA */
    double launch_us;      /* empty kernel: from queued to start (as clpeak reports it) */
    double roundtrip_us;   /* empty kernel: host enqueue to completion seen by the host */
    int from_cache;        /* read from the cache rather than measured now */
    char measured[32];     /* UTC date and time of the measurement, ISO 8601 */
} kp_peak;

/*
 * The device's measured peaks. Measured once (about a second) and cached per device and driver
 * in the cache directory; `remeasure` forces a new measurement. Errors: KP_ERR_UNSUPPORTED on the
 * host device, KP_ERR_BUILD, KP_ERR_CL, KP_ERR_OUT_OF_MEMORY. Thread-safe.
 */
KP_API kp_status kp_device_peak(kp_runtime *rt, int remeasure, kp_peak *out);

typedef struct kp_bench_options {
    uint32_t struct_size; /* set by kp_bench_options_default; 0: the 0.2 layout */
    uint32_t warmup;      /* untimed launches first (builds happen here) */
    uint32_t min_runs;    /* timed launches, at least */
    uint32_t max_runs;    /* and at most */
    double min_seconds;   /* keep launching until this much device time is measured */
    uint64_t seed;        /* for the sample arguments */
} kp_bench_options;

/* warmup 3, min_runs 10, max_runs 1000, min_seconds 0.25, seed 1. */
KP_API kp_bench_options kp_bench_options_default(void);

typedef struct kp_bench_result {
    uint32_t struct_size; /* sizeof(kp_bench_result), set by the caller */
    uint32_t runs;
    double median_s, min_s, max_s;
    double p10_s, p90_s; /* spread: 10th and 90th percentile */
    double flops, bytes; /* per launch, from the kernel's cost (0 when it has none) */
    double gflops, gbs;  /* at the median time */
} kp_bench_result;

/*
 * Times kernel `k` on its sample arguments of size `size` (any name its sample function accepts;
 * kp_kernel_sample_sizes lists them): warm-up launches, then timed launches with events until
 * min_runs and min_seconds are both reached (or max_runs). `opt` may be NULL for defaults.
 * Errors: KP_ERR_UNSUPPORTED (no sample function), the launch's errors.
 */
KP_API kp_status kp_kernel_bench(kp_runtime *rt, kp_kernel *k, const char *size,
                                 const kp_bench_options *opt, kp_bench_result *out);

/* One candidate the tuner tried, reported as it goes; struct_size as in kp_verify_result. */
typedef struct kp_tune_step {
    uint32_t struct_size;
    const char *kernel;
    const int64_t *values; /* one per tunable, in the kernel's order */
    size_t n_values;
    double median_s;     /* 0 when not measured */
    const char *outcome; /* "best so far", "slower", "build failed: ...", "wrong result", ... */
} kp_tune_step;

typedef void (*kp_tune_fn)(void *user, const kp_tune_step *step);

typedef struct kp_tune_options {
    uint32_t struct_size;  /* set by kp_tune_options_default; 0: the 0.2 layout */
    const char *size;      /* sample size to time; NULL: the kernel's first bench size */
    double budget_seconds; /* wall-clock budget per kernel (0: no limit) */
    uint32_t grid_limit;   /* search the full grid when it has at most this many points */
    /* How each candidate is timed (borrowed during the call; a pointer, so that
     * kp_bench_options can grow). NULL: kp_bench_options_default() with min_runs 5 and
     * min_seconds 0.1. */
    const kp_bench_options *bench;
    kp_tune_fn report; /* may be NULL */
    void *user;
    /* Globs of the tunables to search, comma-separated ("clblast.Xgemm.*,clblast.Copy.*"); the
     * others keep their current values. NULL: all. */
    const char *tunables;
} kp_tune_options;

/* size NULL, budget 60 s, grid_limit 64, bench NULL. */
KP_API kp_tune_options kp_tune_options_default(void);

typedef struct kp_tune_result {
    uint32_t struct_size; /* sizeof(kp_tune_result), set by the caller */
    size_t n_values;
    int64_t values[128]; /* the fastest verified values, one per tunable */
    double default_s;    /* median time with the values the manifest gave before tuning */
    double best_s;
    double speedup;                    /* default_s / best_s */
    uint32_t tried, skipped, rejected; /* measured; failed to build or exceeded limits; wrong */
    int exhaustive;                    /* the whole grid was searched */
    /* The spread of the final comparison: the larger of (slowest - fastest) / median of each
     * side's re-measured medians (0 when there was nothing to compare). */
    double noise;
    /* 1 when `values` beat the starting values beyond that spread (every re-measured median of
     * `values` below every one of the starting values'), or the starting values could not run
     * here: then they are worth writing. 0 when the starting values were the fastest found, or
     * the difference was within noise. */
    int improved;
} kp_tune_result;

/*
 * Searches kernel `k`'s tunables on this device: the full grid when small, otherwise coordinate
 * descent from the current values plus random points within the budget. The starting values are
 * benchmarked once first and that time discarded (a cold first measurement flatters every
 * candidate after it). Every candidate is first verified against the host reference on the
 * kernel's verify sizes; candidates that fail to build, exceed device limits or give wrong
 * results are skipped. When the
 * fastest differs from the starting values, both are timed again three times each, alternating,
 * outside the budget: default_s, best_s and speedup come from those medians, and `improved` says
 * whether the difference exceeds their spread. Leaves the kernel's tuning reset (the manifest
 * decides again); the result says what to write. Errors: KP_ERR_UNSUPPORTED (no tunables or no
 * sample), KP_ERR_VERIFY (not even the starting values verify).
 */
KP_API kp_status kp_kernel_tune(kp_runtime *rt, kp_kernel *k, const kp_tune_options *opt,
                                kp_tune_result *out);

/* ------------------------------------------------------------------------------------------ */
/* Writing tuned values into a manifest                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Which devices a written tuning entry applies to; NULL fields are left out of `match`.
 * struct_size: sizeof(kp_tuning_match), or 0 (a designated initialiser) for the 0.2 layout. */
typedef struct kp_tuning_match {
    uint32_t struct_size;
    const char *vendor; /* "nvidia" */
    const char *type;   /* "gpu" */
    const char *name;   /* a device-name substring, "NVIDIA H200" */
    const char *arch;   /* "sm_90" */
} kp_tuning_match;

/* One tuned value as it is written: value "64", "true" or a choice name such as "tf32x3". An
 * element of an array, so its layout does not change within an ABI (docs/stability.md). */
typedef struct kp_tuned_value {
    const char *kernel; /* "example.axpy" */
    const char *name;   /* the tunable, "WG" or dotted "clblast.Xgemm.MWG" */
    const char *value;
} kp_tuned_value;

/*
 * Writes tuned values into the manifest file `path`, creating it when missing. An existing
 * `tuning` entry whose match is exactly `match` is updated in place (new values replace values of
 * the same kernel and name, other values stay, its provenance is replaced); otherwise a new entry
 * is appended. Everything else in the file (other entries, comments, key order) is kept as
 * written; only the updated entry's own comments may be lost. `provenance` holds
 * 2 * n_provenance strings, key then value ("device", "NVIDIA H200", "date", "2026-11-21", ...).
 * The file is replaced atomically, and only after the new text parses as a valid manifest.
 * Errors: KP_ERR_INVALID_ARG, KP_ERR_MANIFEST (the existing file is not a valid manifest: the
 * message is the parser's file:line:col error), KP_ERR_IO. Message in kp_last_error(NULL).
 * Thread-safety: safe, but concurrent writers of one file race (the last rename wins).
 */
KP_API kp_status kp_manifest_write_tuning(const char *path, const kp_tuning_match *match,
                                          const kp_tuned_value *values, size_t n_values,
                                          const char *const *provenance, size_t n_provenance);

#ifdef __cplusplus
}
#endif

#endif
