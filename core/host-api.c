/* SPDX-License-Identifier: Apache-2.0 */
/* The function table handed to plugins: everything a plugin may ask of the core. */
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "sample.h"
#include "view.h"

static kp_status register_kernel(kp_registrar *reg, const kp_kernel_desc *desc)
{
    if (!reg)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "register_kernel: registrar is NULL");
    kp_status st = kp__registry_add(reg->rt, reg->plugin, desc);
    if (st == KP_OK)
        reg->plugin->n_registered++;
    return st;
}

static kp_status fail(kp_launch *l, kp_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = kp__vasprintf(fmt, ap);
    va_end(ap);
    if (l)
        kp__fail(l->rt, status, "kernel %s: %s", l->kernel->desc->name, msg ? msg : "");
    else
        kp__fail(kp__initializing, status, "%s", msg ? msg : "");
    free(msg);
    return status;
}

static void log_message(kp_launch *l, kp_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp__logv(l ? l->rt : kp__initializing, level, fmt, ap);
    va_end(ap);
}

static int64_t tunable(kp_launch *l, const char *name)
{
    return l && name ? kp__tuning_get(l->kernel, name) : 0;
}

static int64_t tunable_index(kp_launch *l, uint32_t index)
{
    if (!l || index >= l->kernel->desc->n_tunables)
        return 0;
    return l->kernel->choices ? l->kernel->choices[index].value
                              : l->kernel->desc->tunables[index].default_value;
}

static const kp_device_info *device(kp_launch *l)
{
    if (!l)
        return NULL;
    /* References run on the host, whatever device the runtime drives. */
    return l->reference ? &l->rt->devices[l->rt->n_devices - 1].info : kp__device(l->rt);
}

static kp_status need_device(kp_launch *l, const char *what)
{
    if (!l)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "%s: launch is NULL", what);
    if (l->reference || !l->rt->ops->kernel_get)
        return kp__fail(l->rt, KP_ERR_UNSUPPORTED,
                        "kernel %s: %s is not available in a host "
                        "reference run",
                        l->kernel->desc->name, what);
    return KP_OK;
}

static kp_status cl_kernel_build(kp_launch *l, const char *entry, const char *extra, uint32_t flags,
                                 kp_clkernel **out)
{
    kp_status st = need_device(l, "cl_kernel");
    if (st != KP_OK)
        return st;
    if (!entry || !out)
        return kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: cl_kernel: NULL entry or out",
                        l->kernel->desc->name);
    if (flags & ~(uint32_t)KP_BUILD_PTX_SM90A)
        return kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: cl_kernel_build: unknown flags 0x%x",
                        l->kernel->desc->name, flags & ~(uint32_t)KP_BUILD_PTX_SM90A);
    return kp__kernel_get(l->rt, l->kernel, entry, extra, flags, out);
}

/* ABI 1.1 asked for sm_90a PTX with this option among the extra options; plugins built then still
 * do, so the option is taken out and becomes KP_BUILD_PTX_SM90A. */
#define LEGACY_SM90A_OPTION "-kp-ptx-sm90a"

static kp_status cl_kernel(kp_launch *l, const char *entry, const char *extra, kp_clkernel **out)
{
    const char *at = extra ? strstr(extra, LEGACY_SM90A_OPTION) : NULL;
    size_t n = strlen(LEGACY_SM90A_OPTION);
    if (!at || (at != extra && at[-1] != ' ') || (at[n] != ' ' && at[n] != '\0'))
        return cl_kernel_build(l, entry, extra, 0, out);
    char *rest = kp__asprintf("%.*s%s", (int)(at - extra), extra, at[n] ? at + n + 1 : "");
    if (!rest)
        return kp__fail(l ? l->rt : NULL, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    kp_status st = cl_kernel_build(l, entry, rest, KP_BUILD_PTX_SM90A, out);
    free(rest);
    return st;
}

/* Sets an argument on the entry's kernel object, and while a prepared launch records, also keeps
 * it for the recording (`buf`: the buffer it names, or NULL). */
static kp_status set_arg(kp_launch *l, kp_clkernel *k, uint32_t index, size_t size,
                         const void *value, const kp_buffer *buf)
{
    kp_status st = l->rt->ops->kernel_arg(l->rt->backend, k, index, size, value);
    return st != KP_OK || !l->capture ? st : kp__capture_arg(l, k, index, size, value, buf);
}

static kp_status arg_buffer(kp_launch *l, kp_clkernel *k, uint32_t index, const kp_buffer *buf)
{
    kp_status st = need_device(l, "arg_buffer");
    if (st != KP_OK)
        return st;
    void *mem = buf && !buf->host && buf->rt == l->rt ? buf->mem : NULL;
    if (!mem)
        return kp__fail(l->rt, KP_ERR_INVALID_ARG,
                        "kernel %s: argument %u: not a device buffer of this runtime",
                        l->kernel->desc->name, index);
    return set_arg(l, k, index, sizeof mem, &mem, buf);
}

static kp_status arg_value(kp_launch *l, kp_clkernel *k, uint32_t index, size_t size,
                           const void *value)
{
    kp_status st = need_device(l, "arg_value");
    if (st == KP_OK && !value)
        st = kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: argument %u: value is NULL",
                      l->kernel->desc->name, index);
    return st != KP_OK ? st : set_arg(l, k, index, size, value, NULL);
}

static kp_status arg_tensor(kp_launch *l, kp_clkernel *k, uint32_t index, const kp_tensor *t,
                            uint32_t rank)
{
    kp_status st = need_device(l, "arg_tensor");
    if (st != KP_OK)
        return st;
    if (!t)
        return kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: argument %u: tensor is NULL",
                        l->kernel->desc->name, index);
    int32_t view[16];
    const char *why = NULL;
    st = kp__view_pack(t, rank, view, &why);
    if (st != KP_OK) {
        char desc[160];
        return kp__fail(l->rt, st, "kernel %s: argument %u: %s as a rank-%u view: %s",
                        l->kernel->desc->name, index, kp_tensor_describe(t, desc, sizeof desc),
                        rank, why);
    }
    st = arg_buffer(l, k, index, t->buffer);
    return st != KP_OK
               ? st
               : set_arg(l, k, index + 1, kp__view_words(rank) * sizeof(int32_t), view, NULL);
}

static kp_status buffer_read(kp_launch *l, const kp_buffer *buf, size_t offset, size_t bytes,
                             void *dst)
{
    if (!l)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "buffer_read: launch is NULL");
    if (l->capture)
        return kp__capture_refuse(l, "host->buffer_read");
    kp_status st = kp_buffer_read(l->rt, buf, offset, bytes, dst);
    return st == KP_OK
               ? st
               : kp__fail_prefix(l->rt, st, "kernel %s: buffer_read", l->kernel->desc->name);
}

static kp_status check_shape(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                             const int64_t *shape, const char *pattern)
{
    if (!l || !name || !t || (rank > 0 && !shape) || rank < 0 || rank > KP_MAX_RANK)
        return kp__fail(l ? l->rt : NULL, KP_ERR_INVALID_ARG, "check_shape: bad argument");
    int ok = t->rank == rank;
    for (int32_t d = 0; ok && d < rank; d++)
        ok = shape[d] < 0 || t->shape[d] == shape[d];
    if (ok)
        return KP_OK;
    char want[KP_MAX_RANK * 24 + 8] = "", got[160];
    size_t n = 0;
    for (int32_t d = 0; d < rank; d++)
        n += (size_t)(shape[d] < 0 ? snprintf(want + n, sizeof want - n, "%s*", d ? ", " : "")
                                   : snprintf(want + n, sizeof want - n, "%s%lld", d ? ", " : "",
                                              (long long)shape[d]));
    return kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: %s: expected %s = [%s], got %s",
                    l->kernel->desc->name, name, pattern ? pattern : "", want,
                    kp_tensor_describe(t, got, sizeof got));
}

static kp_status arg_local(kp_launch *l, kp_clkernel *k, uint32_t index, size_t bytes)
{
    kp_status st = need_device(l, "arg_local");
    return st != KP_OK ? st : set_arg(l, k, index, bytes, NULL, NULL);
}

static kp_status enqueue_ndrange(kp_launch *l, kp_clkernel *k, uint32_t dims, const size_t *global,
                                 const size_t *local)
{
    kp_status st = need_device(l, "enqueue_ndrange");
    if (st != KP_OK)
        return st;
    if (dims < 1 || dims > 3 || !global)
        return kp__fail(l->rt, KP_ERR_INVALID_ARG, "kernel %s: enqueue_ndrange: %u dimensions",
                        l->kernel->desc->name, dims);
    /* An empty range is valid work with nothing to do; OpenCL 1.2 would reject it. */
    for (uint32_t d = 0; d < dims; d++)
        if (global[d] == 0)
            return KP_OK;
    if (l->capture)
        return kp__capture_ndrange(l, k, dims, global, local);
    return l->rt->ops->enqueue(l->rt->backend, k, dims, global, local, kp__launch_events(l));
}

static kp_status scratch(kp_launch *l, uint32_t slot, size_t bytes, kp_buffer **out)
{
    if (!l || !out || slot >= KP__SCRATCH_SLOTS)
        return kp__fail(l ? l->rt : NULL, KP_ERR_INVALID_ARG, "scratch: slot %u is not 0..%d", slot,
                        KP__SCRATCH_SLOTS - 1);
    kp_runtime *rt = l->rt;
    int host = l->reference;
    kp_buffer **s = host ? &l->kernel->scratch_host[slot] : &l->kernel->scratch[slot];
    if (*s && (*s)->size >= bytes) {
        *out = *s;
        return KP_OK;
    }
    kp_buffer_destroy(rt, *s);
    *s = NULL;
    size_t size = bytes ? bytes : 1;
    kp_status st = host ? kp__buffer_create_host(rt, size, s) : kp_buffer_create(rt, size, s);
    if (st != KP_OK)
        return kp__fail_prefix(rt, st, "kernel %s: scratch slot %u", l->kernel->desc->name, slot);
    *out = *s;
    return KP_OK;
}

static kp_status launch(kp_launch *l, const char *kernel, const kp_arg *args, size_t n)
{
    if (!l)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "launch: launch is NULL");
    if (l->capture)
        return kp__capture_refuse(l, "host->launch");
    return kp__launch_nested(l, kernel, args, n);
}

static void *handle(kp_launch *l, enum kp__handle which)
{
    if (l && l->capture) {
        kp__capture_refuse(l, "work on the raw OpenCL queue");
        return NULL;
    }
    return l && !l->reference ? l->rt->ops->handle(l->rt->backend, which) : NULL;
}

static void *cl_context(kp_launch *l)
{
    return handle(l, KP__HANDLE_CONTEXT);
}

static void *cl_queue(kp_launch *l)
{
    return handle(l, KP__HANDLE_QUEUE);
}

static void *cl_device(kp_launch *l)
{
    return handle(l, KP__HANDLE_DEVICE);
}

static void *cl_mem(const kp_buffer *buf)
{
    return buf && !buf->host ? buf->mem : NULL;
}

static void **cl_event_slot(kp_launch *l)
{
    /* Untimed launches need no event: creating and releasing one costs microseconds a call. */
    if (l && l->capture)
        kp__capture_refuse(l, "a library call's event");
    if (!l || l->reference || !l->event || l->capture)
        return NULL;
    /* The previous library call's event joins the launch before the slot is reused. */
    if (l->event_slot) {
        l->rt->ops->event_adopt(l->rt->backend, &l->event->record, l->event_slot);
        l->event_slot = NULL;
    } else if (l->rt->ops->event_mark) {
        l->rt->ops->event_mark(l->rt->backend, &l->event->record);
    }
    return &l->event_slot;
}

static void *kernel_user(kp_launch *l)
{
    return l ? l->kernel->desc->user : NULL;
}

/* One table for the whole process: plugins keep the pointer init gave them for as long as they
 * are loaded, and a plugin shared by several runtimes must not see it change or die with one. */
static const kp_host_api host_api = {
    .struct_size = sizeof(kp_host_api),
    .abi_major = KP_ABI_MAJOR,
    .abi_minor = KP_ABI_MINOR,
    .register_kernel = register_kernel,
    .fail = fail,
    .log = log_message,
    .tunable = tunable,
    .device = device,
    .cl_kernel = cl_kernel,
    .arg_buffer = arg_buffer,
    .arg_value = arg_value,
    .arg_local = arg_local,
    .enqueue_ndrange = enqueue_ndrange,
    .scratch = scratch,
    .launch = launch,
    .cl_context = cl_context,
    .cl_queue = cl_queue,
    .cl_device = cl_device,
    .cl_mem = cl_mem,
    .cl_event_slot = cl_event_slot,
    .kernel_user = kernel_user,
    .sample_tensor = kp__sample_tensor,
    .sample_int = kp__sample_int,
    .sample_float = kp__sample_float,
    .sample_random = kp__sample_random,
    .sample_view = kp__sample_view,
    .sample_kernel_user = kp__sample_kernel_user,
    .tunable_index = tunable_index,
    .arg_tensor = arg_tensor,
    .cl_kernel_build = cl_kernel_build,
    .buffer_read = buffer_read,
    .check_shape = check_shape,
};

const kp_host_api *kp__host_api(void)
{
    return &host_api;
}
