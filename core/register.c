/* SPDX-License-Identifier: Apache-2.0 */
/* Kernels registered at run time: the caller's descriptor deep-copied into the runtime, then
 * registered like a plugin's (same checks, caches, verify, bench, tune and explain). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"

/* One copied descriptor and everything it points to, freed with the runtime. */
struct kp__owned_desc {
    kp_kernel_desc desc;
    void **blocks; /* every allocation the copy made, desc's strings and arrays */
    size_t n_blocks;
    struct kp__owned_desc *next;
};

/* Remembers `p` as part of the copy (NULL stays NULL); on failure frees it and flags the copy. */
static void *keep(kp__owned_desc *o, void *p, int *failed)
{
    if (!p)
        return NULL;
    void **grown = realloc(o->blocks, (o->n_blocks + 1) * sizeof *grown);
    if (!grown) {
        free(p);
        *failed = 1;
        return NULL;
    }
    o->blocks = grown;
    o->blocks[o->n_blocks++] = p;
    return p;
}

static const char *copy_str(kp__owned_desc *o, const char *s, int *failed)
{
    if (!s)
        return NULL;
    char *c = kp__strdup(s);
    if (!c)
        *failed = 1;
    return keep(o, c, failed);
}

static void *copy_bytes(kp__owned_desc *o, const void *p, size_t bytes, int *failed)
{
    if (!p || bytes == 0)
        return NULL;
    void *c = malloc(bytes);
    if (!c) {
        *failed = 1;
        return NULL;
    }
    memcpy(c, p, bytes);
    return keep(o, c, failed);
}

/* A NULL-terminated list of strings. */
static const char *const *copy_list(kp__owned_desc *o, const char *const *list, int *failed)
{
    if (!list)
        return NULL;
    size_t n = 0;
    while (list[n])
        n++;
    const char **c = keep(o, calloc(n + 1, sizeof *c), failed);
    if (!c) {
        *failed = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        c[i] = copy_str(o, list[i], failed);
    return c;
}

static void owned_free(kp__owned_desc *o)
{
    for (size_t i = 0; i < o->n_blocks; i++)
        free(o->blocks[i]);
    free(o->blocks);
    free(o);
}

/* The copy; NULL when memory ran out (the caller reports it). Counts are checked against their
 * arrays by the registry afterwards, so a NULL array with a count fails there, not here. */
static kp__owned_desc *copy_desc(const kp_kernel_desc *d)
{
    kp__owned_desc *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    int failed = 0;
    kp_kernel_desc *c = &o->desc;
    size_t given = d->struct_size < sizeof *c ? d->struct_size : sizeof *c;
    memcpy(c, d, given);
    c->struct_size = sizeof *c;
    c->name = copy_str(o, d->name, &failed);
    c->summary = copy_str(o, d->summary, &failed);
    c->source = copy_str(o, d->source, &failed);
    c->source_name = copy_str(o, d->source_name, &failed);
    c->entry = copy_str(o, d->entry, &failed);
    c->build_options = copy_str(o, d->build_options, &failed);
    c->verify_sizes = copy_list(o, d->verify_sizes, &failed);
    c->bench_sizes = copy_list(o, d->bench_sizes, &failed);
    if (d->params) {
        kp_param_desc *p = copy_bytes(o, d->params, d->n_params * sizeof *p, &failed);
        for (uint32_t i = 0; p && i < d->n_params; i++) {
            p[i].name = copy_str(o, d->params[i].name, &failed);
            p[i].doc = copy_str(o, d->params[i].doc, &failed);
        }
        c->params = p;
    }
    if (d->tunables) {
        kp_tunable_desc *t = copy_bytes(o, d->tunables, d->n_tunables * sizeof *t, &failed);
        for (uint32_t i = 0; t && i < d->n_tunables; i++) {
            const kp_tunable_desc *s = &d->tunables[i];
            t[i].name = copy_str(o, s->name, &failed);
            t[i].doc = copy_str(o, s->doc, &failed);
            t[i].allowed =
                s->n_allowed ? copy_bytes(o, s->allowed, s->n_allowed * sizeof *s->allowed, &failed)
                             : NULL;
            t[i].choices = copy_list(o, s->choices, &failed);
        }
        c->tunables = t;
    }
    if (failed) {
        owned_free(o);
        return NULL;
    }
    return o;
}

/* The pseudo-plugin that owns every kernel registered at run time. */
static kp__plugin *runtime_plugin(kp_runtime *rt)
{
    if (rt->runtime_plugin)
        return rt->runtime_plugin;
    kp__plugin *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->path = kp__strdup("(registered at run time)");
    p->name = kp__strdup("runtime");
    p->version = kp__strdup(KP_VERSION_STRING);
    if (!p->path || !p->name || !p->version) {
        free(p->path);
        free(p->name);
        free(p->version);
        free(p);
        return NULL;
    }
    rt->runtime_plugin = p;
    return p;
}

kp_status kp_kernel_register(kp_runtime *rt, const kp_kernel_desc *desc, kp_kernel **out)
{
    if (out)
        *out = NULL;
    if (!rt || !desc || !out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_register: NULL argument");
    if (desc->struct_size < offsetof(kp_kernel_desc, user) + sizeof desc->user)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_kernel_register: descriptor struct_size %u is smaller than ABI "
                        "1.0's %zu",
                        desc->struct_size, offsetof(kp_kernel_desc, user) + sizeof desc->user);
    if (desc->n_params > KP_MAX_PARAMS)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_kernel_register: kernel %s has %u parameters (at most %d)",
                        desc->name ? desc->name : "(null)", desc->n_params, KP_MAX_PARAMS);
    pthread_mutex_lock(&rt->lock);
    kp_status st = KP_OK;
    kp__plugin *plugin = runtime_plugin(rt);
    kp__owned_desc *o = plugin ? copy_desc(desc) : NULL;
    if (!o)
        st = kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "kp_kernel_register: out of host memory");
    else if (desc->name && kp__registry_find(rt, desc->name))
        st =
            kp__fail(rt, KP_ERR_INVALID_ARG,
                     "kp_kernel_register: a kernel named \"%s\" is already registered", desc->name);
    if (st == KP_OK) {
        size_t before = rt->n_kernels;
        st = kp__registry_add(rt, plugin, &o->desc);
        if (st == KP_OK && rt->n_kernels == before)
            st =
                kp__fail(rt, KP_ERR_INVALID_ARG,
                         "kp_kernel_register: kernel %s is disabled by the manifest", o->desc.name);
        else if (st != KP_OK)
            /* The registry calls a malformed descriptor a plugin's mistake; here it is the
             * caller's argument. */
            st = kp__fail_prefix(rt, st == KP_ERR_PLUGIN ? KP_ERR_INVALID_ARG : st,
                                 "kp_kernel_register");
    }
    if (st != KP_OK) {
        if (o)
            owned_free(o);
        pthread_mutex_unlock(&rt->lock);
        return st;
    }
    o->next = rt->owned_descs;
    rt->owned_descs = o;
    *out = kp__registry_find(rt, o->desc.name);
    kp__registry_finish(rt);
    pthread_mutex_unlock(&rt->lock);
    return KP_OK;
}

void kp__register_free(kp_runtime *rt)
{
    for (kp__owned_desc *o = rt->owned_descs, *next; o; o = next) {
        next = o->next;
        owned_free(o);
    }
    rt->owned_descs = NULL;
    kp__plugin *p = rt->runtime_plugin;
    if (p) {
        free(p->path);
        free(p->name);
        free(p->version);
        free(p);
        rt->runtime_plugin = NULL;
    }
}

const kp_host_api *kp_host_api_get(void)
{
    return kp__host_api();
}
