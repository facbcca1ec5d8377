/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the whole interface between the core and a backend (OpenCL, or the host reference
 * runner). A backend includes this header, the public ones and the core's stateless helpers
 * (util.h, sha256.h, vendor.h), never runtime.h: it sees no runtime, kernel, launch or event. */
#ifndef KP_BACKEND_H
#define KP_BACKEND_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"
#include "kernelport/plugin.h"

/* A backend's own state (its context, queue, program caches), opaque to the core. */
typedef struct kp__backend kp__backend;
typedef struct kp__backend_ops kp__backend_ops;

/* ---- errors and logs ---------------------------------------------------------------------- */

/*
 * Where a backend reports: the core hands it one at enumeration and at open (a backend copies it).
 * `fail` records a message as the last error of the calling thread for the runtime (what
 * kp_last_error returns) and returns `status`; `log` sends a message through the runtime's log
 * callback when `level` passes the runtime's level. Both format printf-style, and may be called
 * from any thread that calls into the backend.
 */
typedef struct kp__sink {
    void *ctx; /* the runtime, opaque to the backend */
    kp_status (*fail)(void *ctx, kp_status status, const char *fmt, va_list ap);
    void (*log)(void *ctx, kp_log_level level, const char *fmt, va_list ap);
} kp__sink;

static inline kp_status kp__sink_fail(const kp__sink *s, kp_status status, const char *fmt, ...)
    KP_PRINTF(3, 4);
static inline kp_status kp__sink_fail(const kp__sink *s, kp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s->fail(s->ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

static inline void kp__sink_log(const kp__sink *s, kp_log_level level, const char *fmt, ...)
    KP_PRINTF(3, 4);
static inline void kp__sink_log(const kp__sink *s, kp_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s->log(s->ctx, level, fmt, ap);
    va_end(ap);
}

/* ---- what the core hands a backend -------------------------------------------------------- */

/* One device a backend found. `platform` and `device` are the backend's handles
 * (cl_platform_id, cl_device_id; NULL on the host), handed back at open; `ops` is the table of
 * the backend that found it (set by the core). */
typedef struct kp__device_entry {
    kp_device_info info;
    void *platform;
    void *device;
    const kp__backend_ops *ops;
} kp__device_entry;

/* cache.binaries of the manifest: whether built programs are stored in the disk cache. */
typedef enum kp__store_binaries {
    KP__STORE_BINARIES_AUTO = 0, /* where the driver keeps no program cache of its own */
    KP__STORE_BINARIES_ALWAYS,
    KP__STORE_BINARIES_NEVER,
} kp__store_binaries;

/* How the core opens a backend on one of the devices it enumerated. Everything is borrowed for
 * the call only: a backend copies what it keeps. */
typedef struct kp__backend_config {
    const kp__sink *sink;
    const kp__device_entry *device;
    const char *cache_dir; /* program binaries; NULL: no disk cache */
    uint64_t cache_max_mb; /* the cache's bound (least recently used files go first); 0: none */
    kp__store_binaries store_binaries;
} kp__backend_config;

/*
 * One program build, as kernel_get asks for it. The program's text is `text[0..n_text)` in order
 * (the core puts its prelude, kernels/common/prelude.cl, and a #line for the kernel's own file
 * before the kernel's source); its options are `options`, then `extra` after a space. Every
 * pointer is borrowed for the call: a backend copies what it keeps.
 */
typedef struct kp__build_request {
    const void *owner;       /* identity of the kernel asking: built kernels are kept per owner */
    const char *kernel;      /* its name ("gru.step"), for messages */
    const char *source_name; /* its source file ("gru.cl") for messages; NULL: unknown */
    const char *const *text; /* NULL: the kernel has no OpenCL source */
    uint32_t n_text;
    const char *entry;   /* the __kernel to return */
    const char *options; /* the kernel's options: -D per tunable, the descriptor's own */
    const char *extra;   /* the call's extra options; NULL or "": none */
    uint32_t flags;      /* KP_BUILD_* */
    /* Part of the disk cache key, so that another plugin version never loads an old binary. */
    const char *plugin;         /* the name of the plugin that provides the kernel */
    const char *plugin_version; /* NULL: none */
} kp__build_request;

/* The commands of one timed launch as a backend records them: the first and the latest (backend
 * events, cl_event; NULL until recorded). The core keeps one in each kp_event and hands it to
 * every operation of a launch that asked for timing; launches that did not get NULL. */
typedef struct kp__event_record {
    void *first;
    void *last;
} kp__event_record;

/* One NDRange a prepared launch recorded: a kernel object of its own (a clone of the entry, its
 * arguments set once) and its sizes. */
typedef struct kp__command {
    void *clone;
    kp_clkernel *source; /* the kernel it was cloned from: a new recording may reuse the clone */
    uint32_t n_args;
    uint32_t dims;
    int has_local;
    size_t global[3], local[3];
} kp__command;

enum kp__handle { KP__HANDLE_CONTEXT, KP__HANDLE_QUEUE, KP__HANDLE_DEVICE };

/* ---- the operations ----------------------------------------------------------------------- */

/*
 * A backend is this table. Each member is required unless marked (optional); those marked (with
 * kernel_get) are required when kernel_get is set and never called otherwise. Every operation but
 * enumerate and open takes the state open returned. Failures are reported through the sink before
 * a non-KP_OK status is returned. The core serialises launches, kernel builds and prepared
 * launches under its runtime lock; buffer and event operations may come from several threads at
 * once.
 *
 * Buffers are the backend's handles (`mem`): what buffer_alloc returned, handed back to every
 * buffer operation and to plugins as the raw handle (cl_mem). The core serves buffers it keeps in
 * host memory itself (verification copies): they never reach a backend.
 */
struct kp__backend_ops {
    const char *name;

    /* Lists the backend's devices into *out (malloc'd, the caller frees it; NULL with *n 0 when
     * there are none, which is not an error: no OpenCL platform). The core sets each entry's
     * info.index and ops. */
    kp_status (*enumerate)(const kp__sink *sink, kp__device_entry **out, size_t *n);
    /* Opens the backend on cfg->device, one of the entries it enumerated. */
    kp_status (*open)(const kp__backend_config *cfg, kp__backend **out);
    /* Finishes outstanding work and frees everything, after the core released its buffers and
     * clones. */
    void (*close)(kp__backend *b);

    /* `size` bytes: *mem is the handle; *host the same memory as a host pointer when the backend
     * keeps buffers in host memory (the host backend; references then read it directly), else
     * NULL. A buffer with *host set has no raw handle for plugins. */
    kp_status (*buffer_alloc)(kp__backend *b, size_t size, void **mem, void **host);
    void (*buffer_release)(kp__backend *b, void *mem);
    /* Takes a reference on `handle`, memory the application made in the backend's context, as a
     * buffer of `size` bytes (at most the handle's): *mem as buffer_alloc's. (optional: NULL
     * where the backend has no raw handles) */
    kp_status (*buffer_wrap)(kp__backend *b, void *handle, size_t size, void **mem);
    /* Blocking copies between host memory and a buffer, and commands on the queue. */
    kp_status (*buffer_write)(kp__backend *b, void *mem, size_t off, size_t n, const void *src);
    kp_status (*buffer_read)(kp__backend *b, void *mem, size_t off, size_t n, void *dst);
    kp_status (*buffer_copy)(kp__backend *b, void *src, size_t src_off, void *dst, size_t dst_off,
                             size_t n);
    kp_status (*buffer_fill)(kp__backend *b, void *mem, size_t off, size_t n, const void *pattern,
                             size_t pattern_size);
    kp_status (*finish)(kp__backend *b);

    /* Builds (or finds built, in memory or in the disk cache) the program of `req` and returns
     * its __kernel req->entry, owned by the backend until close. Called on every launch: a hit
     * allocates nothing. (optional: NULL on the host backend, which runs references only) */
    kp_status (*kernel_get)(kp__backend *b, const kp__build_request *req, kp_clkernel **out);
    /* The compiled entry's largest workgroup and local memory. (with kernel_get) */
    kp_status (*kernel_limits)(kp__backend *b, kp_clkernel *ck, size_t *max_wg,
                               uint64_t *local_mem);
    /* Sets one argument; value NULL sets `size` bytes of local memory. (with kernel_get) */
    kp_status (*kernel_arg)(kp__backend *b, kp_clkernel *ck, uint32_t index, size_t size,
                            const void *value);
    /* Enqueues an NDRange (local NULL: the driver's choice); with `ev`, records it for timing.
     * (with kernel_get) */
    kp_status (*enqueue)(kp__backend *b, kp_clkernel *ck, uint32_t dims, const size_t *global,
                         const size_t *local, kp__event_record *ev);

    /* Marks the start of a timed launch before a library call, whose own event covers only its
     * last command; nothing when ev already holds a command. (optional) */
    void (*event_mark)(kp__backend *b, kp__event_record *ev);
    /* Takes ownership of an event a library call produced for a launch: recorded into `ev`, or
     * released when ev is NULL (the launch is not timed). (with kernel_get) */
    void (*event_adopt)(kp__backend *b, kp__event_record *ev, void *event);
    kp_status (*event_wait)(kp__backend *b, kp__event_record *ev);
    /* Device seconds from the start of the first command to the end of the last. */
    kp_status (*event_elapsed)(kp__backend *b, kp__event_record *ev, double *seconds);
    void (*event_release)(kp__backend *b, kp__event_record *ev);

    /* Raw handles for plugins and applications (cl_context, cl_command_queue, cl_device_id);
     * NULL where the backend has none. */
    void *(*handle)(kp__backend *b, enum kp__handle which);
    /* Measures bandwidth, FP32 rate and launch latency. (optional) */
    kp_status (*peak)(kp__backend *b, kp_peak *out);

    /* Prepared launches (optional, all four or none). A clone is a kernel object of its own made
     * from ck's program, whose arguments persist from one replay to the next; *n_args is its
     * argument count. */
    kp_status (*clone_create)(kp__backend *b, kp_clkernel *ck, void **out, uint32_t *n_args);
    kp_status (*clone_arg)(kp__backend *b, void *clone, uint32_t index, size_t size,
                           const void *value);
    void (*clone_release)(kp__backend *b, void *clone);
    /* Enqueues the commands in order; with `ev`, records them for its timing. */
    kp_status (*replay)(kp__backend *b, const kp__command *cmds, size_t n, kp__event_record *ev);

    /* Command buffers (optional, all four or none): recorded commands made into one object that
     * one enqueue runs in order. supported: whether to use them, where the device offers them:
     * always when `asked`, else where they are known to pay. */
    int (*cmdbuf_supported)(kp__backend *b, int asked);
    kp_status (*cmdbuf_create)(kp__backend *b, const kp__command *cmds, size_t n, void **out);
    kp_status (*cmdbuf_enqueue)(kp__backend *b, void *cmdbuf, kp__event_record *ev);
    void (*cmdbuf_release)(kp__backend *b, void *cmdbuf);
};

/* The backends, in the order the core enumerates them: OpenCL (backends/opencl), then the host
 * reference runner (backends/host), whose one device is always last. */
extern const kp__backend_ops kp__opencl_backend;
extern const kp__backend_ops kp__host_backend;

#endif
