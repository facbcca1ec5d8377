/* SPDX-License-Identifier: Apache-2.0 */
/* The host backend: buffers in host memory, kernels run as their plain-C references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

static void describe(kp_device_info *info)
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

/* One device, the host, always there. */
static kp_status enumerate(const kp__sink *sink, kp__device_entry **out, size_t *n)
{
    *n = 0;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return kp__sink_fail(sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    describe(&(*out)->info);
    *n = 1;
    return KP_OK;
}

/* The host backend's state: only the sink, where buffer_alloc reports host memory running out. */
struct kp__backend {
    kp__sink sink;
};

static kp_status open_backend(const kp__backend_config *cfg, kp__backend **out)
{
    kp__backend *b = calloc(1, sizeof *b);
    if (!b)
        return kp__sink_fail(cfg->sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    b->sink = *cfg->sink;
    *out = b;
    return KP_OK;
}

static void close_backend(kp__backend *b)
{
    free(b);
}

/* Buffers are plain host memory: the handle is the pointer, which references read directly. */
static kp_status buffer_alloc(kp__backend *b, size_t size, void **mem, void **host)
{
    void *p = malloc(size);
    if (!p)
        return kp__sink_fail(&b->sink, KP_ERR_OUT_OF_MEMORY,
                             "cannot allocate %zu bytes of host memory", size);
    *mem = *host = p;
    return KP_OK;
}

static void buffer_release(kp__backend *b, void *mem)
{
    free(mem);
}

static kp_status buffer_write(kp__backend *b, void *mem, size_t off, size_t n, const void *src)
{
    memcpy((char *)mem + off, src, n);
    return KP_OK;
}

static kp_status buffer_read(kp__backend *b, void *mem, size_t off, size_t n, void *dst)
{
    memcpy(dst, (const char *)mem + off, n);
    return KP_OK;
}

static kp_status buffer_copy(kp__backend *b, void *src, size_t src_off, void *dst, size_t dst_off,
                             size_t n)
{
    memmove((char *)dst + dst_off, (const char *)src + src_off, n);
    return KP_OK;
}

static kp_status buffer_fill(kp__backend *b, void *mem, size_t off, size_t n, const void *pattern,
                             size_t pattern_size)
{
    for (size_t i = 0; i < n; i += pattern_size)
        memcpy((char *)mem + off + i, pattern, pattern_size);
    return KP_OK;
}

static kp_status finish(kp__backend *b)
{
    return KP_OK;
}

/* Launches on the host run references, which the core times itself: no backend events. */
static kp_status event_wait(kp__backend *b, kp__event_record *ev)
{
    return KP_OK;
}

static kp_status event_elapsed(kp__backend *b, kp__event_record *ev, double *seconds)
{
    *seconds = 0;
    return KP_OK;
}

static void event_release(kp__backend *b, kp__event_record *ev)
{
}

static void *handle(kp__backend *b, enum kp__handle which)
{
    return NULL;
}

const kp__backend_ops kp__host_backend = {
    .name = "host",
    .enumerate = enumerate,
    .open = open_backend,
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
};
