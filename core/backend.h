/* Internal: the interface between the core and a backend (OpenCL, or the host reference runner). */
#ifndef KP_BACKEND_H
#define KP_BACKEND_H

#include "runtime.h"

enum kp__handle { KP__HANDLE_CONTEXT, KP__HANDLE_QUEUE, KP__HANDLE_DEVICE };

/* One NDRange a prepared launch recorded: a kernel object of its own (a clone of the entry, its
 * arguments set once) and its sizes. */
typedef struct kp__command {
    void *clone;
    uint32_t dims;
    int has_local;
    size_t global[3], local[3];
} kp__command;

/* Each member is required unless marked (optional). Buffers with is_host set never reach a
 * backend: the core serves them from host memory. */
struct kp__backend_ops {
    const char *name;
    void (*close)(kp_runtime *rt);

    kp_status (*buffer_alloc)(kp_runtime *rt, kp_buffer *buf); /* buf->size is set */
    void (*buffer_release)(kp_runtime *rt, kp_buffer *buf);
    kp_status (*buffer_write)(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n,
                              const void *src);
    kp_status (*buffer_read)(kp_runtime *rt, const kp_buffer *buf, size_t off, size_t n, void *dst);
    kp_status (*buffer_copy)(kp_runtime *rt, const kp_buffer *src, size_t src_off, kp_buffer *dst,
                             size_t dst_off, size_t n);
    kp_status (*buffer_fill)(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n,
                             const void *pattern, size_t pattern_size);
    kp_status (*finish)(kp_runtime *rt);

    /* Builds (or finds cached) the program of kernel k with its options plus `extra` and the
     * KP_BUILD_* `flags`, and returns its __kernel `entry`. (optional: NULL on the host backend) */
    kp_status (*kernel_get)(kp_runtime *rt, kp_kernel *k, const char *entry, const char *extra,
                            uint32_t flags, kp_clkernel **out);
    kp_status (*kernel_limits)(kp_runtime *rt, kp_clkernel *ck, size_t *max_wg,
                               uint64_t *local_mem);
    /* value NULL sets `size` bytes of local memory. */
    kp_status (*kernel_arg)(kp_launch *l, kp_clkernel *ck, uint32_t index, size_t size,
                            const void *value);
    kp_status (*enqueue)(kp_launch *l, kp_clkernel *ck, uint32_t dims, const size_t *global,
                         const size_t *local);
    /* Marks the start of a launch's timed span before a library call, whose own event covers
     * only its last command. (optional) */
    void (*event_mark)(kp_launch *l);
    /* Takes ownership of an event a library call produced for this launch. */
    void (*event_adopt)(kp_launch *l, void *event);
    kp_status (*event_wait)(kp_runtime *rt, kp_event *ev);
    kp_status (*event_elapsed)(kp_runtime *rt, kp_event *ev, double *seconds);
    void (*event_release)(kp_runtime *rt, kp_event *ev);
    void *(*handle)(kp_runtime *rt, enum kp__handle which);
    void *(*buffer_handle)(const kp_buffer *buf);
    /* Measures bandwidth, FP32 rate and launch latency. (optional) */
    kp_status (*peak)(kp_runtime *rt, kp_peak *out);

    /* Prepared launches (optional, all four or none). A clone is a kernel object of its own made
     * from ck's program, whose arguments persist from one replay to the next; *n_args is its
     * argument count. */
    kp_status (*clone_create)(kp_runtime *rt, kp_clkernel *ck, void **out, uint32_t *n_args);
    kp_status (*clone_arg)(kp_runtime *rt, void *clone, uint32_t index, size_t size,
                           const void *value);
    void (*clone_release)(void *clone);
    /* Enqueues the commands in order; with `event`, records them for its timing. */
    kp_status (*replay)(kp_runtime *rt, const kp__command *cmds, size_t n, kp_event *event);
};

/* OpenCL (backends/opencl): list every device of every platform; entries are appended to
 * rt->devices. Returns KP_OK with none when there is no platform. */
kp_status kp__cl_enumerate(kp_runtime *rt);
/* Opens a context and a profiling queue on rt->devices[rt->device_index], and the program
 * cache in `cache_dir` (NULL or "": none). */
kp_status kp__cl_open(kp_runtime *rt, const char *cache_dir);

/* Host (backends/host): the host device entry, and the backend that runs references. */
void kp__host_device_info(kp_device_info *info);
kp_status kp__host_open(kp_runtime *rt);

#endif
