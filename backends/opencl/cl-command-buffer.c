/* SPDX-License-Identifier: Apache-2.0 */
/* Command buffers (cl_khr_command_buffer): a graph's recorded kernels enqueued by one call. The
 * extension is provisional, so its entry points are looked up at run time and only the version
 * range whose signatures these calls match (0.9.x, as CL/cl_ext.h declares them) is used. */
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>

#include "cl-internal.h"

/* OpenCL 3.0's query of extension versions, which this build's 1.2 headers leave out. */
#define EXTENSIONS_WITH_VERSION 0x1060
typedef struct name_version {
    cl_uint version;
    char name[64];
} name_version;
#define VERSION_MAJOR(v) ((v) >> 22)
#define VERSION_MINOR(v) (((v) >> 12) & 0x3ff)
#define VERSION_PATCH(v) ((v)&0xfff)

struct kp__cl_cmdbuf_api {
    clCreateCommandBufferKHR_fn create;
    clFinalizeCommandBufferKHR_fn finalize;
    clReleaseCommandBufferKHR_fn release;
    clEnqueueCommandBufferKHR_fn enqueue;
    clCommandNDRangeKernelKHR_fn ndrange;
};

/* The extension's version on the device, 0 when it has none. */
static cl_uint extension_version(cl_device_id device)
{
    size_t size = 0;
    if (clGetDeviceInfo(device, EXTENSIONS_WITH_VERSION, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return 0;
    name_version *v = malloc(size);
    cl_uint found = 0;
    if (v && clGetDeviceInfo(device, EXTENSIONS_WITH_VERSION, size, v, NULL) == CL_SUCCESS)
        for (size_t i = 0; i < size / sizeof *v; i++)
            if (strcmp(v[i].name, CL_KHR_COMMAND_BUFFER_EXTENSION_NAME) == 0)
                found = v[i].version;
    free(v);
    return found;
}

void kp__cl_cmdbuf_probe(kp__backend *b)
{
    cl_uint version = extension_version(b->device);
    if (!version)
        return;
    if (VERSION_MAJOR(version) != 0 || VERSION_MINOR(version) != 9) {
        kp__sink_log(&b->sink, KP_LOG_INFO,
                     "cl_khr_command_buffer %u.%u.%u is not the 0.9 this build calls: graphs "
                     "replay kernel by kernel",
                     (unsigned)VERSION_MAJOR(version), (unsigned)VERSION_MINOR(version),
                     (unsigned)VERSION_PATCH(version));
        return;
    }
    cl_device_command_buffer_capabilities_khr caps = 0;
    cl_command_queue_properties required = 0;
    if (clGetDeviceInfo(b->device, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof caps, &caps,
                        NULL) != CL_SUCCESS ||
        clGetDeviceInfo(b->device, CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR,
                        sizeof required, &required, NULL) != CL_SUCCESS)
        return;
    /* A graph replayed again before its last replay finished needs simultaneous use; the queue
     * is in order with profiling, which is all it can offer. */
    if (!(caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) ||
        (required & ~(cl_command_queue_properties)CL_QUEUE_PROFILING_ENABLE)) {
        kp__sink_log(&b->sink, KP_LOG_INFO,
                     "cl_khr_command_buffer without simultaneous use or needing other queue "
                     "properties: graphs replay kernel by kernel");
        return;
    }
    struct kp__cl_cmdbuf_api api = {
        .create = (clCreateCommandBufferKHR_fn)clGetExtensionFunctionAddressForPlatform(
            b->platform, "clCreateCommandBufferKHR"),
        .finalize = (clFinalizeCommandBufferKHR_fn)clGetExtensionFunctionAddressForPlatform(
            b->platform, "clFinalizeCommandBufferKHR"),
        .release = (clReleaseCommandBufferKHR_fn)clGetExtensionFunctionAddressForPlatform(
            b->platform, "clReleaseCommandBufferKHR"),
        .enqueue = (clEnqueueCommandBufferKHR_fn)clGetExtensionFunctionAddressForPlatform(
            b->platform, "clEnqueueCommandBufferKHR"),
        .ndrange = (clCommandNDRangeKernelKHR_fn)clGetExtensionFunctionAddressForPlatform(
            b->platform, "clCommandNDRangeKernelKHR"),
    };
    if (!api.create || !api.finalize || !api.release || !api.enqueue || !api.ndrange)
        return;
    if ((b->cmdbuf = malloc(sizeof *b->cmdbuf)))
        *b->cmdbuf = api;
    /* PoCL 3.1 runs a command buffer command by command, each costing the host about what an
     * enqueue does: a chain of 1000 tiny kernels took 4-7 us a kernel against 1.3-3.4 us
     * enqueued one by one (bench-launch, docs/performance-log/graphs.md). Its command buffers
     * are used only when a graph asks for them. */
    b->cmdbuf_preferred = b->info.vendor != KP_VENDOR_POCL;
}

int kp__cl_cmdbuf_supported(kp__backend *b, int asked)
{
    return b->cmdbuf != NULL && (asked || b->cmdbuf_preferred);
}

kp_status kp__cl_cmdbuf_create(kp__backend *b, const kp__command *cmds, size_t n, void **out)
{
    const struct kp__cl_cmdbuf_api *api = b->cmdbuf;
    *out = NULL;
    if (!api)
        return kp__sink_fail(&b->sink, KP_ERR_UNSUPPORTED,
                             "the device has no usable cl_khr_command_buffer");
    cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR,
                                                CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    cl_int err;
    cl_command_buffer_khr cb = api->create(1, &b->queue, props, &err);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clCreateCommandBufferKHR", "%zu commands", n);
    /* Each command waits for the one before: the order the graph was recorded in, whatever the
     * implementation makes of an in-order queue's command buffer. */
    cl_sync_point_khr prev = 0;
    for (size_t i = 0; i < n && err == CL_SUCCESS; i++) {
        const kp__command *c = &cmds[i];
        cl_sync_point_khr point = 0;
        err =
            api->ndrange(cb, NULL, NULL, c->clone, c->dims, NULL, c->global,
                         c->has_local ? c->local : NULL, i ? 1 : 0, i ? &prev : NULL, &point, NULL);
        if (err != CL_SUCCESS) {
            api->release(cb);
            return kp__cl_fail(&b->sink, err, "clCommandNDRangeKernelKHR", "command %zu of %zu", i,
                               n);
        }
        prev = point;
    }
    err = api->finalize(cb);
    if (err != CL_SUCCESS) {
        api->release(cb);
        return kp__cl_fail(&b->sink, err, "clFinalizeCommandBufferKHR", "%zu commands", n);
    }
    *out = cb;
    return KP_OK;
}

kp_status kp__cl_cmdbuf_enqueue(kp__backend *b, void *cmdbuf, kp__event_record *ev)
{
    cl_event e = NULL;
    cl_int err = b->cmdbuf->enqueue(0, NULL, cmdbuf, 0, NULL, ev ? &e : NULL);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clEnqueueCommandBufferKHR", "a graph's commands");
    if (e)
        kp__cl_event_adopt(b, ev, e);
    return KP_OK;
}

void kp__cl_cmdbuf_release(kp__backend *b, void *cmdbuf)
{
    if (cmdbuf)
        b->cmdbuf->release(cmdbuf);
}
