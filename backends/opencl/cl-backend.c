/* SPDX-License-Identifier: Apache-2.0 */
/* The OpenCL backend: context, profiling queue, buffers, and the operations table. */
#include <stdlib.h>
#include <string.h>

#include "cl-internal.h"
#include "util.h"

static kp_status buffer_alloc(kp__backend *b, size_t size, void **mem, void **host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(b->context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clCreateBuffer", "%zu bytes on %s", size, b->info.name);
    *mem = m;
    *host = NULL;
    return KP_OK;
}

static void buffer_release(kp__backend *b, void *mem)
{
    if (mem)
        clReleaseMemObject(mem);
}

static kp_status buffer_wrap(kp__backend *b, void *handle, size_t size, void **mem)
{
    cl_context context = NULL;
    size_t have = 0;
    cl_int err = clGetMemObjectInfo(handle, CL_MEM_CONTEXT, sizeof context, &context, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(handle, CL_MEM_SIZE, sizeof have, &have, NULL);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clGetMemObjectInfo",
                           "kp_buffer_wrap: the handle is not a cl_mem");
    if (context != b->context)
        return kp__sink_fail(&b->sink, KP_ERR_INVALID_ARG,
                             "kp_buffer_wrap: the cl_mem belongs to another OpenCL context than "
                             "the runtime's (kp_runtime_opencl gives it)");
    if (size > have)
        return kp__sink_fail(&b->sink, KP_ERR_INVALID_ARG,
                             "kp_buffer_wrap: %zu bytes asked of a cl_mem of %zu bytes", size,
                             have);
    if ((err = clRetainMemObject(handle)) != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clRetainMemObject", "kp_buffer_wrap");
    *mem = handle;
    return KP_OK;
}

static kp_status buffer_write(kp__backend *b, void *mem, size_t off, size_t n, const void *src)
{
    cl_int err = clEnqueueWriteBuffer(b->queue, mem, CL_TRUE, off, n, src, 0, NULL, NULL);
    return err ? kp__cl_fail(&b->sink, err, "clEnqueueWriteBuffer", "%zu bytes at offset %zu", n,
                             off)
               : KP_OK;
}

static kp_status buffer_read(kp__backend *b, void *mem, size_t off, size_t n, void *dst)
{
    cl_int err = clEnqueueReadBuffer(b->queue, mem, CL_TRUE, off, n, dst, 0, NULL, NULL);
    return err ? kp__cl_fail(&b->sink, err, "clEnqueueReadBuffer", "%zu bytes at offset %zu", n,
                             off)
               : KP_OK;
}

static kp_status buffer_copy(kp__backend *b, void *src, size_t src_off, void *dst, size_t dst_off,
                             size_t n)
{
    cl_int err = clEnqueueCopyBuffer(b->queue, src, dst, src_off, dst_off, n, 0, NULL, NULL);
    return err ? kp__cl_fail(&b->sink, err, "clEnqueueCopyBuffer", "%zu bytes", n) : KP_OK;
}

static kp_status buffer_fill(kp__backend *b, void *mem, size_t off, size_t n, const void *pattern,
                             size_t pattern_size)
{
    cl_int err = clEnqueueFillBuffer(b->queue, mem, pattern, pattern_size, off, n, 0, NULL, NULL);
    return err ? kp__cl_fail(&b->sink, err, "clEnqueueFillBuffer", "%zu bytes", n) : KP_OK;
}

static kp_status finish(kp__backend *b)
{
    cl_int err = clFinish(b->queue);
    return err ? kp__cl_fail(&b->sink, err, "clFinish", NULL) : KP_OK;
}

static void *handle(kp__backend *b, enum kp__handle which)
{
    switch (which) {
    case KP__HANDLE_CONTEXT:
        return b->context;
    case KP__HANDLE_QUEUE:
        return b->queue;
    case KP__HANDLE_DEVICE:
        return b->device;
    }
    return NULL;
}

static void close_backend(kp__backend *b)
{
    if (!b)
        return;
    if (b->queue)
        clFinish(b->queue);
    kp__cl_programs_free(b);
    if (b->queue)
        clReleaseCommandQueue(b->queue);
    if (b->context)
        clReleaseContext(b->context);
    kp__disk_cache_close(&b->disk);
    free(b->cmdbuf);
    free(b->identity);
    free(b);
}

static void open_disk_cache(kp__backend *b, const kp__backend_config *cfg)
{
    if (!cfg->cache_dir)
        return;
    char *err = NULL;
    uint64_t max = cfg->cache_max_mb * 1024u * 1024u;
    if (kp__disk_cache_open(&b->disk, cfg->cache_dir, max, &err) != KP_OK) {
        kp__sink_log(&b->sink, KP_LOG_WARN, "program cache disabled: %s",
                     err ? err : cfg->cache_dir);
        free(err);
    }
}

/* A context and a profiling queue on the chosen device, and the program cache. */
static kp_status open_backend(const kp__backend_config *cfg, kp__backend **out)
{
    const kp__device_entry *e = cfg->device;
    kp__backend *b = calloc(1, sizeof *b);
    if (!b)
        return kp__sink_fail(cfg->sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    b->sink = *cfg->sink;
    b->info = e->info;
    b->platform = e->platform;
    b->device = e->device;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)b->platform, 0};
    cl_int err;
    b->context = clCreateContext(props, 1, &b->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        free(b);
        return kp__cl_fail(cfg->sink, err, "clCreateContext", "device %s", e->info.name);
    }
    b->queue = clCreateCommandQueue(b->context, b->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(b->context);
        free(b);
        return kp__cl_fail(cfg->sink, err, "clCreateCommandQueue", "device %s", e->info.name);
    }
    char pversion[128] = "";
    clGetPlatformInfo(b->platform, CL_PLATFORM_VERSION, sizeof pversion, pversion, NULL);
    b->identity = kp__asprintf("%s\n%s\n%s\n%s\n%s", e->info.name, e->info.driver, e->info.version,
                               pversion, e->info.vendor_string);
    /* PoCL's binaries hold every kernel of the program compiled for any local size: asking for
     * one costs a compile of each kernel, most of which a process never launches, while PoCL's
     * own cache (POCL_CACHE_DIR) already keeps what it built. */
    b->store_binaries =
        cfg->store_binaries == KP__STORE_BINARIES_ALWAYS ||
        (cfg->store_binaries == KP__STORE_BINARIES_AUTO && e->info.vendor != KP_VENDOR_POCL);
    open_disk_cache(b, cfg);
    kp__cl_cmdbuf_probe(b);
    *out = b;
    return KP_OK;
}

const kp__backend_ops kp__opencl_backend = {
    .name = "opencl",
    .enumerate = kp__cl_enumerate,
    .open = open_backend,
    .close = close_backend,
    .buffer_alloc = buffer_alloc,
    .buffer_release = buffer_release,
    .buffer_wrap = buffer_wrap,
    .buffer_write = buffer_write,
    .buffer_read = buffer_read,
    .buffer_copy = buffer_copy,
    .buffer_fill = buffer_fill,
    .finish = finish,
    .kernel_get = kp__cl_kernel_get,
    .kernel_limits = kp__cl_kernel_limits,
    .kernel_arg = kp__cl_kernel_arg,
    .enqueue = kp__cl_enqueue,
    .event_mark = kp__cl_event_mark,
    .event_adopt = kp__cl_event_adopt,
    .event_wait = kp__cl_event_wait,
    .event_elapsed = kp__cl_event_elapsed,
    .event_release = kp__cl_event_release,
    .handle = handle,
    .peak = kp__cl_peak,
    .clone_create = kp__cl_clone_create,
    .clone_arg = kp__cl_clone_arg,
    .clone_release = kp__cl_clone_release,
    .replay = kp__cl_replay,
    .cmdbuf_supported = kp__cl_cmdbuf_supported,
    .cmdbuf_create = kp__cl_cmdbuf_create,
    .cmdbuf_enqueue = kp__cl_cmdbuf_enqueue,
    .cmdbuf_release = kp__cl_cmdbuf_release,
};
