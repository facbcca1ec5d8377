/* SPDX-License-Identifier: Apache-2.0 */
/* Buffers: validation at the public boundary, the runtime's buffer list, host-memory copies. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static void link_buffer(kp_runtime *rt, kp_buffer *b)
{
    pthread_mutex_lock(&rt->lock);
    b->next = rt->buffers;
    if (rt->buffers)
        rt->buffers->prev = b;
    rt->buffers = b;
    pthread_mutex_unlock(&rt->lock);
}

static void unlink_buffer(kp_runtime *rt, kp_buffer *b)
{
    pthread_mutex_lock(&rt->lock);
    kp__prepared_buffer_gone(rt, b);
    kp__graph_buffer_gone(rt, b);
    if (b->prev)
        b->prev->next = b->next;
    else if (rt->buffers == b)
        rt->buffers = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    pthread_mutex_unlock(&rt->lock);
}

static kp_status recording_refused(kp_runtime *rt, const char *call)
{
    return kp__fail(rt, KP_ERR_INVALID_ARG,
                    "%s: this thread is recording a graph, which holds no host transfers (make "
                    "them before kp_graph_begin or after kp_graph_end)",
                    call);
}

static kp_status check_device_memory(kp_runtime *rt, size_t bytes)
{
    const kp_device_info *d = kp__device(rt);
    if (d->max_alloc && bytes > d->max_alloc)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY,
                        "cannot allocate %zu bytes on %s: the device's largest allocation is %llu "
                        "bytes (global memory %llu bytes)",
                        bytes, d->name, (unsigned long long)d->max_alloc,
                        (unsigned long long)d->global_mem);
    return KP_OK;
}

kp_status kp_buffer_create(kp_runtime *rt, size_t bytes, kp_buffer **out)
{
    if (!out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_buffer_create: out is NULL");
    *out = NULL;
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_buffer_create: runtime is NULL");
    if (bytes == 0)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_buffer_create: size is 0");
    kp_status st = check_device_memory(rt, bytes);
    if (st != KP_OK)
        return st;
    kp_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "kp_buffer_create: out of host memory");
    b->rt = rt;
    b->size = bytes;
    st = rt->ops->buffer_alloc(rt->backend, bytes, &b->mem, &b->host);
    if (st != KP_OK) {
        free(b);
        return st;
    }
    link_buffer(rt, b);
    *out = b;
    return KP_OK;
}

kp_status kp_buffer_wrap_external(kp_runtime *rt, void *cl_mem, size_t bytes,
                                  kp_buffer_hand_back_fn hand_back, void *user, kp_buffer **out)
{
    if (!out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_buffer_wrap: out is NULL");
    *out = NULL;
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_buffer_wrap: runtime is NULL");
    if (!cl_mem || bytes == 0)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_buffer_wrap: cl_mem is NULL or size is 0");
    if (!rt->ops->buffer_wrap)
        return kp__fail(rt, KP_ERR_UNSUPPORTED,
                        "kp_buffer_wrap: the %s backend has no OpenCL memory to wrap",
                        rt->ops->name);
    kp_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "kp_buffer_wrap: out of host memory");
    b->rt = rt;
    b->size = bytes;
    b->hand_back = hand_back;
    b->hand_back_user = user;
    kp_status st = rt->ops->buffer_wrap(rt->backend, cl_mem, bytes, &b->mem);
    if (st != KP_OK) {
        free(b);
        return st;
    }
    link_buffer(rt, b);
    *out = b;
    return KP_OK;
}

kp_status kp_buffer_wrap(kp_runtime *rt, void *cl_mem, size_t bytes, kp_buffer **out)
{
    return kp_buffer_wrap_external(rt, cl_mem, bytes, NULL, NULL, out);
}

kp_status kp__buffer_create_host(kp_runtime *rt, size_t bytes, kp_buffer **out)
{
    kp_buffer *b = calloc(1, sizeof *b);
    void *mem = malloc(bytes ? bytes : 1);
    if (!b || !mem) {
        free(b);
        free(mem);
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes of host memory",
                        bytes);
    }
    b->rt = rt;
    b->size = bytes;
    b->host = mem;
    b->is_host = 1;
    link_buffer(rt, b);
    *out = b;
    return KP_OK;
}

static void release(kp_runtime *rt, kp_buffer *b)
{
    if (b->is_host) {
        free(b->host);
    } else {
        if (b->hand_back)
            b->hand_back(rt, b->mem, b->hand_back_user);
        rt->ops->buffer_release(rt->backend, b->mem);
    }
    free(b);
}

void kp_buffer_destroy(kp_runtime *rt, kp_buffer *buf)
{
    if (!rt || !buf)
        return;
    if (buf->rt != rt) {
        /* Released through another runtime's backend and list, it would corrupt both. */
        static const char msg[] = "kp_buffer_destroy: the buffer belongs to another runtime, "
                                  "which still owns it";
        kp__fail(rt, KP_ERR_INVALID_ARG, "%s", msg);
        kp__log(rt, KP_LOG_ERROR, "%s", msg);
        return;
    }
    unlink_buffer(rt, buf);
    release(rt, buf);
}

void kp__buffers_free(kp_runtime *rt)
{
    while (rt->buffers) {
        kp_buffer *b = rt->buffers;
        rt->buffers = b->next;
        release(rt, b);
    }
}

size_t kp_buffer_size(const kp_buffer *buf)
{
    return buf ? buf->size : 0;
}

void *kp_buffer_cl_mem(const kp_buffer *buf)
{
    return buf && !buf->host ? buf->mem : NULL;
}

static kp_status check_range(kp_runtime *rt, const char *fn, const kp_buffer *buf, size_t offset,
                             size_t bytes, const void *ptr)
{
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "%s: runtime is NULL", fn);
    if (!buf)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: buffer is NULL", fn);
    if (buf->rt != rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: the buffer belongs to another runtime", fn);
    if (!ptr && bytes)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: host pointer is NULL", fn);
    if (offset > buf->size || bytes > buf->size - offset)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "%s: range [%zu, %zu) is outside the buffer of %zu bytes", fn, offset,
                        offset + bytes, buf->size);
    return KP_OK;
}

kp_status kp_buffer_write(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                          const void *src)
{
    kp_status st = check_range(rt, "kp_buffer_write", buf, offset, bytes, src);
    if (st == KP_OK && kp__graph_recording(rt))
        st = recording_refused(rt, "kp_buffer_write");
    if (st != KP_OK || bytes == 0)
        return st;
    if (buf->is_host) {
        memcpy((char *)buf->host + offset, src, bytes);
        return KP_OK;
    }
    return rt->ops->buffer_write(rt->backend, buf->mem, offset, bytes, src);
}

kp_status kp_buffer_read(kp_runtime *rt, const kp_buffer *buf, size_t offset, size_t bytes,
                         void *dst)
{
    kp_status st = check_range(rt, "kp_buffer_read", buf, offset, bytes, dst);
    if (st == KP_OK && kp__graph_recording(rt))
        st = recording_refused(rt, "kp_buffer_read");
    if (st != KP_OK || bytes == 0)
        return st;
    if (buf->is_host) {
        memcpy(dst, (const char *)buf->host + offset, bytes);
        return KP_OK;
    }
    return rt->ops->buffer_read(rt->backend, buf->mem, offset, bytes, dst);
}

kp_status kp_buffer_copy(kp_runtime *rt, const kp_buffer *src, size_t src_offset, kp_buffer *dst,
                         size_t dst_offset, size_t bytes)
{
    kp_status st = check_range(rt, "kp_buffer_copy (source)", src, src_offset, bytes, src);
    if (st == KP_OK)
        st = check_range(rt, "kp_buffer_copy (destination)", dst, dst_offset, bytes, dst);
    if (st != KP_OK || bytes == 0)
        return st;
    if (src == dst && src_offset < dst_offset + bytes && dst_offset < src_offset + bytes)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_buffer_copy: source and destination overlap");
    kp_graph *g = kp__graph_recording(rt);
    return g ? kp__graph_capture_copy(g, src, src_offset, dst, dst_offset, bytes)
             : kp__buffer_copy_run(rt, src, src_offset, dst, dst_offset, bytes);
}

kp_status kp__buffer_copy_run(kp_runtime *rt, const kp_buffer *src, size_t src_offset,
                              kp_buffer *dst, size_t dst_offset, size_t bytes)
{
    if (src->is_host && dst->is_host) {
        memcpy((char *)dst->host + dst_offset, (const char *)src->host + src_offset, bytes);
        return KP_OK;
    }
    if (src->is_host)
        return rt->ops->buffer_write(rt->backend, dst->mem, dst_offset, bytes,
                                     (const char *)src->host + src_offset);
    if (dst->is_host)
        return rt->ops->buffer_read(rt->backend, src->mem, src_offset, bytes,
                                    (char *)dst->host + dst_offset);
    return rt->ops->buffer_copy(rt->backend, src->mem, src_offset, dst->mem, dst_offset, bytes);
}

kp_status kp_buffer_fill(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                         const void *pattern, size_t pattern_size)
{
    kp_status st = check_range(rt, "kp_buffer_fill", buf, offset, bytes, pattern);
    if (st != KP_OK)
        return st;
    if (pattern_size == 0 || pattern_size > 128 || (pattern_size & (pattern_size - 1)))
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_buffer_fill: pattern size %zu is not 1, 2, 4, ..., 128", pattern_size);
    if (offset % pattern_size || bytes % pattern_size)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_buffer_fill: offset %zu and size %zu must be multiples of the pattern "
                        "size %zu",
                        offset, bytes, pattern_size);
    if (bytes == 0)
        return KP_OK;
    kp_graph *g = kp__graph_recording(rt);
    return g ? kp__graph_capture_fill(g, buf, offset, bytes, pattern, pattern_size)
             : kp__buffer_fill_run(rt, buf, offset, bytes, pattern, pattern_size);
}

kp_status kp__buffer_fill_run(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                              const void *pattern, size_t pattern_size)
{
    if (buf->is_host) {
        for (size_t i = 0; i < bytes; i += pattern_size)
            memcpy((char *)buf->host + offset + i, pattern, pattern_size);
        return KP_OK;
    }
    return rt->ops->buffer_fill(rt->backend, buf->mem, offset, bytes, pattern, pattern_size);
}
