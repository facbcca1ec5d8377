/* SPDX-License-Identifier: Apache-2.0 */
/* Prepared launches: arguments bound and checked once, the plugin's enqueue recorded once as
 * kernel objects with their arguments set, then replayed with nothing but the enqueues. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

/* An argument value set during a recording, for kernel ck at `index` (bytes NULL: local memory). */
typedef struct recorded_arg {
    kp_clkernel *ck;
    uint32_t index;
    size_t size;
    unsigned char *bytes;
} recorded_arg;

struct kp__capture {
    kp_runtime *rt;
    recorded_arg *args;
    size_t n_args;
    kp__command *cmds;
    size_t n_cmds;
    const kp_buffer **buffers; /* every buffer an argument named */
    size_t n_buffers;
    const char *refused; /* the host call that cannot be recorded, or NULL */
    kp__command *spare;  /* the previous recording's commands, whose clones may be reused */
    size_t n_spare;
};

struct kp_prepared {
    kp_runtime *rt;
    kp_kernel *k;
    kp_arg *args;     /* [n_params]: the bound arguments by parameter; names are the descriptor's */
    int *given;       /* [n_params]: the caller gave this argument */
    kp_value *values; /* [n_params]: as bound and checked */
    int stale;        /* a bound buffer was destroyed: parameter index + 1, or 0 */
    int recorded;     /* cmds hold the plugin's enqueue for the current values */
    const char *direct;  /* why the enqueue cannot be recorded (it runs on every launch), or NULL */
    uint64_t generation; /* the kernel's options_generation when recorded */
    kp__command *cmds;
    size_t n_cmds;
    kp__command *spare; /* the commands of the recording an argument change dropped */
    size_t n_spare;
    const kp_buffer **buffers;
    size_t n_buffers;
    struct kp_prepared *prev, *next;
};

/* ---- recording: what host-api.c calls while l->capture is set ------------------------------ */

kp_status kp__capture_refuse(kp_launch *l, const char *what)
{
    if (!l->capture->refused)
        l->capture->refused = what;
    return kp__fail(l->rt, KP_ERR_UNSUPPORTED,
                    "kernel %s: %s cannot be recorded for a prepared launch", l->kernel->desc->name,
                    what);
}

static kp_status grow(kp_runtime *rt, void **array, size_t n, size_t size)
{
    void *g = realloc(*array, (n + 1) * size);
    if (!g)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    *array = g;
    return KP_OK;
}

kp_status kp__capture_arg(kp_launch *l, kp_clkernel *ck, uint32_t index, size_t size,
                          const void *value, const kp_buffer *buf)
{
    kp__capture *c = l->capture;
    kp_status st = grow(l->rt, (void **)&c->args, c->n_args, sizeof *c->args);
    if (st != KP_OK)
        return st;
    recorded_arg *a = &c->args[c->n_args];
    *a = (recorded_arg){.ck = ck, .index = index, .size = size};
    if (value) {
        if (!(a->bytes = malloc(size ? size : 1)))
            return kp__fail(l->rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        memcpy(a->bytes, value, size);
    }
    c->n_args++;
    if (buf) {
        st = grow(l->rt, (void **)&c->buffers, c->n_buffers, sizeof *c->buffers);
        if (st != KP_OK)
            return st;
        c->buffers[c->n_buffers++] = buf;
    }
    return KP_OK;
}

/* The command gets its own kernel object holding ck's arguments as they stand now (OpenCL keeps
 * arguments between enqueues, so the latest value of each index is the one this enqueue uses). */
kp_status kp__capture_ndrange(kp_launch *l, kp_clkernel *ck, uint32_t dims, const size_t *global,
                              const size_t *local)
{
    kp__capture *c = l->capture;
    kp_runtime *rt = l->rt;
    kp_status st = grow(rt, (void **)&c->cmds, c->n_cmds, sizeof *c->cmds);
    if (st != KP_OK)
        return st;
    kp__command *cmd = &c->cmds[c->n_cmds];
    memset(cmd, 0, sizeof *cmd);
    /* After an argument changed, the plugin usually enqueues the same kernels again: their
     * clones only need their arguments set (clCreateKernel costs far more). */
    kp__command *old = c->n_cmds < c->n_spare ? &c->spare[c->n_cmds] : NULL;
    if (old && old->clone && old->source == ck) {
        cmd->clone = old->clone;
        cmd->n_args = old->n_args;
        old->clone = NULL;
    } else {
        st = rt->ops->clone_create(rt->backend, ck, &cmd->clone, &cmd->n_args);
        if (st != KP_OK)
            return st;
    }
    cmd->source = ck;
    const uint32_t n_args = cmd->n_args;
    c->n_cmds++; /* released with the recording from here on */
    for (uint32_t index = 0; index < n_args; index++) {
        const recorded_arg *latest = NULL;
        for (size_t i = 0; i < c->n_args; i++)
            if (c->args[i].ck == ck && c->args[i].index == index)
                latest = &c->args[i];
        if (!latest)
            return kp__capture_refuse(l, "an argument set before the recording");
        st = rt->ops->clone_arg(rt->backend, cmd->clone, index, latest->size, latest->bytes);
        if (st != KP_OK)
            return st;
    }
    cmd->dims = dims;
    cmd->has_local = local != NULL;
    for (uint32_t d = 0; d < dims; d++) {
        cmd->global[d] = global[d];
        cmd->local[d] = local ? local[d] : 0;
    }
    return KP_OK;
}

static void release_commands(kp_runtime *rt, kp__command *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cmds[i].clone)
            rt->ops->clone_release(rt->backend, cmds[i].clone);
    free(cmds);
}

static void capture_fini(kp__capture *c)
{
    for (size_t i = 0; i < c->n_args; i++)
        free(c->args[i].bytes);
    free(c->args);
    release_commands(c->rt, c->cmds, c->n_cmds);
    free(c->buffers);
}

static void drop_recording(kp_prepared *p)
{
    release_commands(p->rt, p->cmds, p->n_cmds);
    release_commands(p->rt, p->spare, p->n_spare);
    free(p->buffers);
    p->cmds = p->spare = NULL;
    p->buffers = NULL;
    p->n_cmds = p->n_spare = p->n_buffers = 0;
    p->recorded = 0;
}

/* An argument changed: the recording goes, its clones kept for the next one. */
static void spare_recording(kp_prepared *p)
{
    if (!p->recorded)
        return;
    release_commands(p->rt, p->spare, p->n_spare);
    p->spare = p->cmds;
    p->n_spare = p->n_cmds;
    p->cmds = NULL;
    p->n_cmds = 0;
    free(p->buffers);
    p->buffers = NULL;
    p->n_buffers = 0;
    p->recorded = 0;
}

/* ---- binding ------------------------------------------------------------------------------ */

static kp_status bind(kp_prepared *p)
{
    const kp_kernel_desc *d = p->k->desc;
    kp_arg list[KP_MAX_PARAMS];
    size_t n = 0;
    for (uint32_t i = 0; i < d->n_params; i++)
        if (p->given[i])
            list[n++] = p->args[i];
    kp_status st = kp__args_bind(p->rt, p->k, list, n, p->values);
    if (st != KP_OK || !kp__is_host(p->rt))
        return st;
    for (uint32_t i = 0; i < d->n_params; i++)
        if (p->values[i].present && d->params[i].kind == KP_ARG_KIND_TENSOR)
            p->values[i].host = p->values[i].tensor.buffer->host;
    return KP_OK;
}

static int param_index(const kp_kernel *k, const char *name)
{
    for (uint32_t i = 0; name && i < k->desc->n_params; i++)
        if (strcmp(k->desc->params[i].name, name) == 0)
            return (int)i;
    return -1;
}

static kp_status set_one(kp_prepared *p, const kp_arg *a)
{
    int i = param_index(p->k, a->name);
    if (i < 0) {
        /* kp__args_bind words the message (it lists the parameters). */
        kp_value scratch[KP_MAX_PARAMS];
        return kp__args_bind(p->rt, p->k, a, 1, scratch);
    }
    p->args[i] = *a;
    p->args[i].name = p->k->desc->params[i].name;
    p->given[i] = 1;
    return KP_OK;
}

kp_status kp_prepared_create(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n_args,
                             kp_prepared **out)
{
    if (out)
        *out = NULL;
    if (!rt || !k || !out || (n_args && !args))
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_prepared_create: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_prepared_create");
    uint32_t n = k->desc->n_params;
    kp_prepared *p = calloc(1, sizeof *p);
    if (p) {
        p->args = calloc(n ? n : 1, sizeof *p->args);
        p->given = calloc(n ? n : 1, sizeof *p->given);
        p->values = calloc(n ? n : 1, sizeof *p->values);
    }
    if (!p || !p->args || !p->given || !p->values) {
        if (p) {
            free(p->args);
            free(p->given);
            free(p->values);
        }
        free(p);
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "kp_prepared_create: out of host memory");
    }
    p->rt = rt;
    p->k = k;
    /* The full list first, so a repeated or unknown name is reported as kp_kernel_launch does. */
    kp_status st = n_args > KP_MAX_PARAMS
                       ? kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: %zu arguments (at most %d)",
                                  k->desc->name, n_args, KP_MAX_PARAMS)
                       : kp__args_bind(rt, k, args, n_args, p->values);
    for (size_t i = 0; st == KP_OK && i < n_args; i++)
        st = set_one(p, &args[i]);
    if (st == KP_OK)
        st = bind(p);
    if (st != KP_OK) {
        free(p->args);
        free(p->given);
        free(p->values);
        free(p);
        return st;
    }
    pthread_mutex_lock(&rt->lock);
    p->next = rt->prepared;
    if (rt->prepared)
        rt->prepared->prev = p;
    rt->prepared = p;
    pthread_mutex_unlock(&rt->lock);
    *out = p;
    return KP_OK;
}

kp_kernel *kp__prepared_kernel(const kp_prepared *p)
{
    return p->k;
}

kp_status kp__prepared_check(const kp_prepared *p, const kp_arg *a)
{
    int i = param_index(p->k, a->name);
    const kp_kernel_desc *d = p->k->desc;
    kp_arg list[KP_MAX_PARAMS];
    size_t n = 0;
    for (uint32_t j = 0; j < d->n_params; j++)
        if ((int)j == i)
            list[n++] = *a;
        else if (p->given[j])
            list[n++] = p->args[j];
    if (i < 0)
        list[n++] = *a;
    kp_value scratch[KP_MAX_PARAMS];
    return n > KP_MAX_PARAMS ? kp__fail(p->rt, KP_ERR_INVALID_ARG, "too many arguments")
                             : kp__args_bind(p->rt, p->k, list, n, scratch);
}

kp_status kp_prepared_set(kp_prepared *p, const kp_arg *arg)
{
    if (!p || !arg)
        return kp__fail(p ? p->rt : NULL, KP_ERR_INVALID_ARG, "kp_prepared_set: NULL argument");
    int i = param_index(p->k, arg->name);
    kp_arg old = i >= 0 ? p->args[i] : *arg;
    int old_given = i >= 0 ? p->given[i] : 0;
    kp_status st = set_one(p, arg);
    if (st == KP_OK)
        st = bind(p);
    if (st != KP_OK) {
        if (i >= 0) {
            p->args[i] = old;
            p->given[i] = old_given;
            bind(p);
        }
        return st;
    }
    if (i >= 0 && p->stale == i + 1)
        p->stale = 0;
    pthread_mutex_lock(&p->rt->lock);
    spare_recording(p);
    pthread_mutex_unlock(&p->rt->lock);
    return KP_OK;
}

kp_status kp_prepared_set_int(kp_prepared *p, const char *name, int64_t value)
{
    kp_arg a = kp_arg_int(name, value);
    return kp_prepared_set(p, &a);
}

kp_status kp_prepared_set_float(kp_prepared *p, const char *name, double value)
{
    kp_arg a = kp_arg_float(name, value);
    return kp_prepared_set(p, &a);
}

kp_status kp_prepared_set_tensor(kp_prepared *p, const char *name, kp_tensor tensor)
{
    kp_arg a = kp_arg_tensor(name, tensor);
    return kp_prepared_set(p, &a);
}

/* ---- launching ---------------------------------------------------------------------------- */

/* Records the plugin's check and enqueue; falls back to direct launches when it cannot be. The
 * caller holds rt->lock. */
static kp_status record(kp_prepared *p, const kp_call *call)
{
    kp_runtime *rt = p->rt;
    kp__capture c = {.rt = rt, .spare = p->spare, .n_spare = p->n_spare};
    p->spare = NULL;
    p->n_spare = 0;
    uint64_t failures = kp__fail_count();
    kp_status st = kp__launch_record(rt, p->k, call, &c);
    release_commands(rt, c.spare, c.n_spare);
    c.spare = NULL;
    if (c.refused) {
        /* Nothing ran while recording: the launch goes through the plugin from now on. */
        kp__log(rt, KP_LOG_DEBUG, "kernel %s: prepared launches run its enqueue each time (%s)",
                p->k->desc->name, c.refused);
        capture_fini(&c);
        p->direct = c.refused;
        return KP_OK;
    }
    if (st != KP_OK) {
        if (kp__fail_count() == failures)
            kp__fail(rt, st, "kernel %s: recording failed with %s", p->k->desc->name,
                     kp_status_name(st));
        capture_fini(&c);
        return st;
    }
    p->cmds = c.cmds;
    p->n_cmds = c.n_cmds;
    p->buffers = c.buffers;
    p->n_buffers = c.n_buffers;
    c.cmds = NULL;
    c.n_cmds = 0;
    c.buffers = NULL;
    capture_fini(&c);
    p->generation = p->k->options_generation;
    p->recorded = 1;
    return KP_OK;
}

static kp_call call_of(const kp_prepared *p)
{
    return (kp_call){.struct_size = sizeof(kp_call),
                     .n_args = p->k->desc->n_params,
                     .args = p->values,
                     .desc = p->k->desc};
}

static kp_status stale_error(const kp_prepared *p)
{
    return kp__fail(p->rt, KP_ERR_INVALID_ARG,
                    "kernel %s: argument \"%s\": its buffer was destroyed (bind another with "
                    "kp_prepared_set)",
                    p->k->desc->name, p->k->desc->params[p->stale - 1].name);
}

/* Whether launches replay recorded commands rather than run the plugin. */
static int replays(const kp_prepared *p)
{
    return !p->direct && !kp__is_host(p->rt) && p->rt->ops->replay;
}

kp_status kp__prepared_ready(kp_prepared *p, int *recorded_now)
{
    *recorded_now = 0;
    if (p->stale)
        return stale_error(p);
    int retuned = p->recorded && p->generation != p->k->options_generation;
    if (retuned)
        drop_recording(p);
    if (!replays(p) || p->recorded)
        return KP_OK;
    kp_call call = call_of(p);
    kp_status st = record(p, &call);
    *recorded_now = st != KP_OK ? 0 : retuned ? 2 : 1;
    return st;
}

size_t kp__prepared_commands(const kp_prepared *p, const kp__command **cmds)
{
    *cmds = p->cmds;
    return replays(p) && p->recorded ? p->n_cmds : 0;
}

const char *kp__prepared_direct(const kp_prepared *p)
{
    return kp__is_host(p->rt) ? "the host device runs references" : p->direct;
}

kp_status kp__prepared_run(kp_prepared *p, kp_event *ev)
{
    int recorded_now;
    kp_status st = kp__prepared_ready(p, &recorded_now);
    if (st != KP_OK)
        return st;
    kp_runtime *rt = p->rt;
    if (replays(p))
        return rt->ops->replay(rt->backend, p->cmds, p->n_cmds, ev ? &ev->record : NULL);
    kp_call call = call_of(p);
    return kp__launch_call(rt, p->k, &call, 0, ev, 0);
}

kp_status kp_prepared_launch(kp_prepared *p, kp_event **event)
{
    if (event)
        *event = NULL;
    if (!p)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_prepared_launch: NULL prepared launch");
    kp_runtime *rt = p->rt;
    if (p->stale)
        return stale_error(p);
    kp_event *ev = NULL;
    if (event && !(ev = calloc(1, sizeof *ev)))
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    pthread_mutex_lock(&rt->lock);
    kp_status st = kp__prepared_run(p, ev);
    pthread_mutex_unlock(&rt->lock);
    if (st != KP_OK) {
        kp_event_destroy(rt, ev);
        return st;
    }
    if (event)
        *event = ev;
    return KP_OK;
}

static void unlink_prepared(kp_prepared *p)
{
    kp_runtime *rt = p->rt;
    if (p->prev)
        p->prev->next = p->next;
    else if (rt->prepared == p)
        rt->prepared = p->next;
    if (p->next)
        p->next->prev = p->prev;
}

void kp_prepared_destroy(kp_prepared *p)
{
    if (!p)
        return;
    kp_runtime *rt = p->rt;
    pthread_mutex_lock(&rt->lock);
    unlink_prepared(p);
    drop_recording(p);
    pthread_mutex_unlock(&rt->lock);
    free(p->args);
    free(p->given);
    free(p->values);
    free(p);
}

void kp__prepared_buffer_gone(kp_runtime *rt, const kp_buffer *buf)
{
    for (kp_prepared *p = rt->prepared; p; p = p->next) {
        const kp_kernel_desc *d = p->k->desc;
        for (uint32_t i = 0; i < d->n_params; i++)
            if (p->values[i].present && d->params[i].kind == KP_ARG_KIND_TENSOR &&
                p->values[i].tensor.buffer == buf)
                p->stale = (int)i + 1;
        for (size_t i = 0; i < p->n_buffers; i++)
            if (p->buffers[i] == buf) {
                /* A scratch buffer the plugin replaced: the next launch records again. */
                drop_recording(p);
                break;
            }
    }
}

void kp__prepared_free_all(kp_runtime *rt)
{
    while (rt->prepared)
        kp_prepared_destroy(rt->prepared);
}
