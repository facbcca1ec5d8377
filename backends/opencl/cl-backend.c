/* The OpenCL backend: context, profiling queue, buffers, and the operations table. */
#include <stdlib.h>
#include <string.h>

#include "cl-internal.h"

static kp__backend *be(const kp_runtime *rt)
{
    return rt->backend;
}

static kp_status buffer_alloc(kp_runtime *rt, kp_buffer *buf)
{
    cl_int err;
    cl_mem m = clCreateBuffer(be(rt)->context, CL_MEM_READ_WRITE, buf->size, NULL, &err);
    if (err != CL_SUCCESS)
        return kp__cl_fail(rt, err, "clCreateBuffer", "%zu bytes on %s", buf->size,
                           kp__device(rt)->name);
    buf->mem = m;
    return KP_OK;
}

static void buffer_release(kp_runtime *rt, kp_buffer *buf)
{
    if (buf->mem)
        clReleaseMemObject(buf->mem);
}

static kp_status buffer_write(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n, const void *src)
{
    cl_int err = clEnqueueWriteBuffer(be(rt)->queue, buf->mem, CL_TRUE, off, n, src, 0, NULL, NULL);
    return err ? kp__cl_fail(rt, err, "clEnqueueWriteBuffer", "%zu bytes at offset %zu", n, off)
               : KP_OK;
}

static kp_status buffer_read(kp_runtime *rt, const kp_buffer *buf, size_t off, size_t n, void *dst)
{
    cl_int err = clEnqueueReadBuffer(be(rt)->queue, buf->mem, CL_TRUE, off, n, dst, 0, NULL, NULL);
    return err ? kp__cl_fail(rt, err, "clEnqueueReadBuffer", "%zu bytes at offset %zu", n, off)
               : KP_OK;
}

static kp_status buffer_copy(kp_runtime *rt, const kp_buffer *src, size_t src_off, kp_buffer *dst,
                             size_t dst_off, size_t n)
{
    cl_int err =
        clEnqueueCopyBuffer(be(rt)->queue, src->mem, dst->mem, src_off, dst_off, n, 0, NULL, NULL);
    return err ? kp__cl_fail(rt, err, "clEnqueueCopyBuffer", "%zu bytes", n) : KP_OK;
}

static kp_status buffer_fill(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n,
                             const void *pattern, size_t pattern_size)
{
    cl_int err =
        clEnqueueFillBuffer(be(rt)->queue, buf->mem, pattern, pattern_size, off, n, 0, NULL, NULL);
    return err ? kp__cl_fail(rt, err, "clEnqueueFillBuffer", "%zu bytes", n) : KP_OK;
}

static kp_status finish(kp_runtime *rt)
{
    cl_int err = clFinish(be(rt)->queue);
    return err ? kp__cl_fail(rt, err, "clFinish", NULL) : KP_OK;
}

static void *handle(kp_runtime *rt, enum kp__handle which)
{
    switch (which) {
    case KP__HANDLE_CONTEXT:
        return be(rt)->context;
    case KP__HANDLE_QUEUE:
        return be(rt)->queue;
    case KP__HANDLE_DEVICE:
        return be(rt)->device;
    }
    return NULL;
}

static void *buffer_handle(const kp_buffer *buf)
{
    return buf ? buf->mem : NULL;
}

static void close_backend(kp_runtime *rt)
{
    kp__backend *b = be(rt);
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
    free(b->identity);
    free(b);
    rt->backend = NULL;
}

static const kp__backend_ops cl_ops = {
    .name = "opencl",
    .close = close_backend,
    .buffer_alloc = buffer_alloc,
    .buffer_release = buffer_release,
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
    .buffer_handle = buffer_handle,
    .peak = kp__cl_peak,
    .clone_create = kp__cl_clone_create,
    .clone_arg = kp__cl_clone_arg,
    .clone_release = kp__cl_clone_release,
    .replay = kp__cl_replay,
};

static void open_disk_cache(kp_runtime *rt, kp__backend *b, const char *dir)
{
    if (!dir)
        return;
    char *err = NULL;
    uint64_t max = (uint64_t)rt->manifest.cache_max_mb * 1024u * 1024u;
    if (kp__disk_cache_open(&b->disk, dir, max, &err) != KP_OK) {
        kp__log(rt, KP_LOG_WARN, "program cache disabled: %s", err ? err : dir);
        free(err);
    }
}

kp_status kp__cl_open(kp_runtime *rt, const char *cache_dir)
{
    const kp__device_entry *e = &rt->devices[rt->device_index];
    kp__backend *b = calloc(1, sizeof *b);
    if (!b)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    b->platform = e->platform;
    b->device = e->device;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)b->platform, 0};
    cl_int err;
    b->context = clCreateContext(props, 1, &b->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        free(b);
        return kp__cl_fail(rt, err, "clCreateContext", "device %s", e->info.name);
    }
    b->queue = clCreateCommandQueue(b->context, b->device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(b->context);
        free(b);
        return kp__cl_fail(rt, err, "clCreateCommandQueue", "device %s", e->info.name);
    }
    char pversion[128] = "";
    clGetPlatformInfo(b->platform, CL_PLATFORM_VERSION, sizeof pversion, pversion, NULL);
    b->identity = kp__asprintf("%s\n%s\n%s\n%s\n%s", e->info.name, e->info.driver, e->info.version,
                               pversion, e->info.vendor_string);
    /* PoCL's binaries hold every kernel of the program compiled for any local size: asking for
     * one costs a compile of each kernel, most of which a process never launches, while PoCL's
     * own cache (POCL_CACHE_DIR) already keeps what it built. */
    int binaries = rt->manifest.cache_binaries;
    b->store_binaries = binaries == KP__BINARIES_ALWAYS ||
                        (binaries == KP__BINARIES_AUTO && e->info.vendor != KP_VENDOR_POCL);
    rt->backend = b;
    rt->ops = &cl_ops;
    open_disk_cache(rt, b, cache_dir);
    return KP_OK;
}
