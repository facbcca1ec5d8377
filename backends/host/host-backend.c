/* The host backend: buffers in host memory, kernels run as their plain-C references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

void kp__host_device_info(kp_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    info->vendor = KP_VENDOR_HOST;
    info->type = KP_DEVICE_HOST;
    snprintf(info->name, sizeof info->name, "Kernelport host reference");
    snprintf(info->vendor_string, sizeof info->vendor_string, "Kernelport");
    snprintf(info->platform, sizeof info->platform, "Kernelport host");
    snprintf(info->driver, sizeof info->driver, "%s", KP_VERSION_STRING);
    snprintf(info->version, sizeof info->version, "host reference (plain C)");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->compute_units = cpus > 0 ? (uint32_t)cpus : 1;
    info->global_mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    info->max_alloc = info->global_mem;
    info->local_mem = 0;
    info->max_workgroup = 1;
    info->max_work_item[0] = info->max_work_item[1] = info->max_work_item[2] = 1;
    info->fp64 = 1;
}

static kp_status buffer_alloc(kp_runtime *rt, kp_buffer *buf)
{
    buf->host = malloc(buf->size);
    if (!buf->host)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory",
                        buf->size);
    return KP_OK;
}

static void buffer_release(kp_runtime *rt, kp_buffer *buf)
{
    free(buf->host);
}

static kp_status buffer_write(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n, const void *src)
{
    memcpy((char *)buf->host + off, src, n);
    return KP_OK;
}

static kp_status buffer_read(kp_runtime *rt, const kp_buffer *buf, size_t off, size_t n, void *dst)
{
    memcpy(dst, (const char *)buf->host + off, n);
    return KP_OK;
}

static kp_status buffer_copy(kp_runtime *rt, const kp_buffer *src, size_t src_off, kp_buffer *dst,
                             size_t dst_off, size_t n)
{
    memmove((char *)dst->host + dst_off, (const char *)src->host + src_off, n);
    return KP_OK;
}

static kp_status buffer_fill(kp_runtime *rt, kp_buffer *buf, size_t off, size_t n,
                             const void *pattern, size_t pattern_size)
{
    for (size_t i = 0; i < n; i += pattern_size)
        memcpy((char *)buf->host + off + i, pattern, pattern_size);
    return KP_OK;
}

static kp_status finish(kp_runtime *rt)
{
    return KP_OK;
}

static kp_status event_wait(kp_runtime *rt, kp_event *ev)
{
    return KP_OK;
}

static kp_status event_elapsed(kp_runtime *rt, kp_event *ev, double *seconds)
{
    *seconds = ev->host_seconds;
    return KP_OK;
}

static void event_release(kp_runtime *rt, kp_event *ev)
{
}

static void *handle(kp_runtime *rt, enum kp__handle which)
{
    return NULL;
}

static void *buffer_handle(const kp_buffer *buf)
{
    return NULL;
}

static void close_backend(kp_runtime *rt)
{
}

static const kp__backend_ops host_ops = {
    .name = "host",
    .close = close_backend,
    .buffer_alloc = buffer_alloc,
    .buffer_release = buffer_release,
    .buffer_write = buffer_write,
    .buffer_read = buffer_read,
    .buffer_copy = buffer_copy,
    .buffer_fill = buffer_fill,
    .finish = finish,
    .event_wait = event_wait,
    .event_elapsed = event_elapsed,
    .event_release = event_release,
    .handle = handle,
    .buffer_handle = buffer_handle,
};

kp_status kp__host_open(kp_runtime *rt)
{
    rt->backend = NULL;
    rt->ops = &host_ops;
    return KP_OK;
}
