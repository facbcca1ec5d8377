/* Internal to the OpenCL backend: its state and helpers. */
#ifndef KP_CL_INTERNAL_H
#define KP_CL_INTERNAL_H

#include <CL/cl.h>

#include "backend.h"
#include "opencl/cl-cache.h"

/* A built __kernel of one kernel's program, cached per (kernel, entry, build options). */
struct kp_clkernel {
    kp_kernel *owner;
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
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    char *identity; /* device name, driver, versions: part of every program cache key */
    kp__cl_program *programs;
    struct kp_clkernel *kernels;
    kp__disk_cache disk;
    int store_binaries; /* cache.binaries resolved for this device */
};

/* "CL_INVALID_WORK_GROUP_SIZE" for -54. */
const char *kp__cl_error_name(cl_int err);
/* Maps a CL error to a kp_status: allocation failures are KP_ERR_OUT_OF_MEMORY. */
kp_status kp__cl_status(cl_int err);
/* Records "<call> failed: CL_NAME (code)<: context>" and returns the mapped status. */
kp_status kp__cl_fail(const kp_runtime *rt, cl_int err, const char *call, const char *fmt, ...)
    KP_PRINTF(4, 5);

kp_status kp__cl_kernel_get(kp_runtime *rt, kp_kernel *k, const char *entry, const char *extra,
                            uint32_t flags, kp_clkernel **out);
kp_status kp__cl_kernel_limits(kp_runtime *rt, kp_clkernel *ck, size_t *max_wg,
                               uint64_t *local_mem);
void kp__cl_programs_free(struct kp__backend *b);

kp_status kp__cl_kernel_arg(kp_launch *l, kp_clkernel *ck, uint32_t index, size_t size,
                            const void *value);
kp_status kp__cl_enqueue(kp_launch *l, kp_clkernel *ck, uint32_t dims, const size_t *global,
                         const size_t *local);
void kp__cl_event_mark(kp_launch *l);
kp_status kp__cl_clone_create(kp_runtime *rt, kp_clkernel *ck, void **out, uint32_t *n_args);
kp_status kp__cl_clone_arg(kp_runtime *rt, void *clone, uint32_t index, size_t size,
                           const void *value);
void kp__cl_clone_release(void *clone);
kp_status kp__cl_replay(kp_runtime *rt, const kp__command *cmds, size_t n, kp_event *event);
void kp__cl_event_adopt(kp_launch *l, void *event);
kp_status kp__cl_event_wait(kp_runtime *rt, kp_event *ev);
kp_status kp__cl_event_elapsed(kp_runtime *rt, kp_event *ev, double *seconds);
void kp__cl_event_release(kp_runtime *rt, kp_event *ev);

kp_status kp__cl_peak(kp_runtime *rt, kp_peak *out);

#endif
