/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the OpenCL backend: its state and helpers. */
#ifndef KP_CL_INTERNAL_H
#define KP_CL_INTERNAL_H

#include <CL/cl.h>

#include "backend.h"
#include "opencl/cl-cache.h"

/* A built __kernel of one kernel's program, cached per (owner, entry, build options, flags). */
struct kp_clkernel {
    const void *owner; /* kp__build_request.owner */
    char *name;        /* the owner's kernel name, for messages */
    char *entry;
    char *options;      /* the kernel's tuning options plus the call's extra options */
    uint32_t flags;     /* KP_BUILD_* */
    cl_program program; /* owned by the program cache */
    cl_kernel kernel;
    struct kp_clkernel *next;
};

typedef struct kp__cl_program {
    uint8_t key[32];
    cl_program program;
    struct kp__cl_program *next;
} kp__cl_program;

struct kp__backend {
    kp__sink sink;       /* the runtime's: every failure and log goes there */
    kp_device_info info; /* the device, as enumerated */
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char *identity; /* device name, driver, versions: part of every program cache key */
    kp__cl_program *programs;
    struct kp_clkernel *kernels;
    kp__disk_cache disk;
    int store_binaries;               /* cache.binaries resolved for this device */
    struct kp__cl_cmdbuf_api *cmdbuf; /* cl_khr_command_buffer's entry points, or NULL */
    int cmdbuf_preferred;             /* graphs use them unless told not to */
};

/* "CL_INVALID_WORK_GROUP_SIZE" for -54. */
const char *kp__cl_error_name(cl_int err);
/* Maps a CL error to a kp_status: allocation failures are KP_ERR_OUT_OF_MEMORY. */
kp_status kp__cl_status(cl_int err);
/* Records "<call> failed: CL_NAME (code)<: context>" through the sink and returns the mapped
 * status. */
kp_status kp__cl_fail(const kp__sink *sink, cl_int err, const char *call, const char *fmt, ...)
    KP_PRINTF(4, 5);

/* Devices (cl-device.c). */
kp_status kp__cl_enumerate(const kp__sink *sink, kp__device_entry **out, size_t *n);

/* Programs (cl-program.c). */
kp_status kp__cl_kernel_get(kp__backend *b, const kp__build_request *req, kp_clkernel **out);
kp_status kp__cl_kernel_limits(kp__backend *b, kp_clkernel *ck, size_t *max_wg,
                               uint64_t *local_mem);
void kp__cl_programs_free(kp__backend *b);

/* Arguments, enqueues, clones and events (cl-launch.c). */
kp_status kp__cl_kernel_arg(kp__backend *b, kp_clkernel *ck, uint32_t index, size_t size,
                            const void *value);
kp_status kp__cl_enqueue(kp__backend *b, kp_clkernel *ck, uint32_t dims, const size_t *global,
                         const size_t *local, kp__event_record *ev);
kp_status kp__cl_clone_create(kp__backend *b, kp_clkernel *ck, void **out, uint32_t *n_args);
kp_status kp__cl_clone_arg(kp__backend *b, void *clone, uint32_t index, size_t size,
                           const void *value);
void kp__cl_clone_release(kp__backend *b, void *clone);

/* Command buffers (cl-command-buffer.c): probe sets b->cmdbuf when the device's extension is one
 * this build can call. */
void kp__cl_cmdbuf_probe(kp__backend *b);
int kp__cl_cmdbuf_supported(kp__backend *b, int asked);
kp_status kp__cl_cmdbuf_create(kp__backend *b, const kp__command *cmds, size_t n, void **out);
kp_status kp__cl_cmdbuf_enqueue(kp__backend *b, void *cmdbuf, kp__event_record *ev);
void kp__cl_cmdbuf_release(kp__backend *b, void *cmdbuf);
kp_status kp__cl_replay(kp__backend *b, const kp__command *cmds, size_t n, kp__event_record *ev);
void kp__cl_event_mark(kp__backend *b, kp__event_record *ev);
void kp__cl_event_adopt(kp__backend *b, kp__event_record *ev, void *event);
kp_status kp__cl_event_wait(kp__backend *b, kp__event_record *ev);
kp_status kp__cl_event_elapsed(kp__backend *b, kp__event_record *ev, double *seconds);
void kp__cl_event_release(kp__backend *b, kp__event_record *ev);

/* Peaks (cl-peak.c). */
kp_status kp__cl_peak(kp__backend *b, kp_peak *out);

#endif
