/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel registry: descriptor checks, duplicate resolution, lookup and description. */
#include <fnmatch.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kp-embedded.h"
#include "names.h"
#include "registry.h"
#include "struct-size.h"

/* The size of a version 1.0 descriptor: every field up to and including `user`. */
#define DESC_MIN_SIZE (offsetof(kp_kernel_desc, user) + sizeof(void *))

static kp_status check_params(kp_runtime *rt, const kp_kernel_desc *d)
{
    const uint32_t all_dtypes = ((1u << KP_DTYPE_COUNT) - 1) & ~1u;
    if (d->n_params > KP_MAX_PARAMS || (d->n_params && !d->params))
        return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: n_params is %u but params is %s", d->name,
                        d->n_params, d->params ? "set" : "NULL");
    for (uint32_t i = 0; i < d->n_params; i++) {
        const kp_param_desc *p = &d->params[i];
        if (!kp__name_is_identifier(p->name))
            return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: parameter %u has an invalid name",
                            d->name, i);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(d->params[j].name, p->name) == 0)
                return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: parameter \"%s\" is declared twice",
                                d->name, p->name);
        if (p->kind < KP_ARG_KIND_TENSOR || p->kind > KP_ARG_KIND_FLOAT)
            return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: parameter \"%s\" has kind %d", d->name,
                            p->name, p->kind);
        if (p->access < KP_ACCESS_IN || p->access > KP_ACCESS_INOUT ||
            (p->kind != KP_ARG_KIND_TENSOR && p->access != KP_ACCESS_IN))
            return kp__fail(rt, KP_ERR_PLUGIN,
                            "kernel %s: parameter \"%s\" has access %d (scalars are inputs)",
                            d->name, p->name, p->access);
        if (p->kind == KP_ARG_KIND_TENSOR && (!p->dtypes || (p->dtypes & ~all_dtypes)))
            return kp__fail(rt, KP_ERR_PLUGIN,
                            "kernel %s: tensor parameter \"%s\" has dtypes mask 0x%x", d->name,
                            p->name, p->dtypes);
    }
    return KP_OK;
}

static size_t count_choices(const char *const *c)
{
    size_t n = 0;
    while (c && c[n])
        n++;
    return n;
}

static kp_status check_tunables(kp_runtime *rt, const kp_kernel_desc *d)
{
    if (d->n_tunables && !d->tunables)
        return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: n_tunables is %u but tunables is NULL",
                        d->name, d->n_tunables);
    for (uint32_t i = 0; i < d->n_tunables; i++) {
        const kp_tunable_desc *t = &d->tunables[i];
        if (!kp__name_is_tunable(t->name))
            return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: tunable %u has an invalid name", d->name,
                            i);
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(d->tunables[j].name, t->name) == 0)
                return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: tunable \"%s\" is declared twice",
                                d->name, t->name);
        if (!kp__tunable_allows(t, t->default_value))
            return kp__fail(rt, KP_ERR_PLUGIN,
                            "kernel %s: tunable \"%s\": default %lld is not an allowed value",
                            d->name, t->name, (long long)t->default_value);
    }
    return KP_OK;
}

int kp__tunable_allows(const kp_tunable_desc *t, int64_t v)
{
    if (t->n_allowed) {
        for (uint32_t i = 0; t->allowed && i < t->n_allowed; i++)
            if (t->allowed[i] == v)
                return 1;
        return 0;
    }
    if (t->choices)
        return v >= 0 && (size_t)v < count_choices(t->choices);
    return v >= t->min && v <= t->max;
}

static kp_status check_desc(kp_runtime *rt, const kp_kernel_desc *d)
{
    if (!d)
        return kp__fail(rt, KP_ERR_PLUGIN, "register_kernel: descriptor is NULL");
    if (d->struct_size < DESC_MIN_SIZE)
        return kp__fail(rt, KP_ERR_PLUGIN,
                        "register_kernel: descriptor struct_size %u is smaller than ABI 1.0's %zu",
                        d->struct_size, (size_t)DESC_MIN_SIZE);
    if (!kp__name_is_kernel(d->name))
        return kp__fail(rt, KP_ERR_PLUGIN,
                        "register_kernel: invalid kernel name \"%s\" (expected family.op in "
                        "lowercase letters, digits and '_')",
                        d->name ? d->name : "(null)");
    if (!d->enqueue || !d->reference)
        return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s: enqueue and reference are required",
                        d->name);
    kp_status st = check_params(rt, d);
    return st == KP_OK ? check_tunables(rt, d) : st;
}

static int listed(char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

static const char *preferred_plugin(const kp_runtime *rt, const char *kernel)
{
    const kp__manifest *m = &rt->manifest;
    for (size_t i = m->n_prefer; i-- > 0;)
        if (strcmp(m->prefer_kernel[i], kernel) == 0)
            return m->prefer_plugin[i];
    return NULL;
}

static void load_dev_source(kp_runtime *rt, kp_kernel *k)
{
    if (!rt->kernel_dir || !k->desc->source_name || !k->desc->source)
        return;
    char *path = kp__asprintf("%s/%s", rt->kernel_dir, k->desc->source_name);
    k->source = path ? kp__read_file(path, NULL) : NULL;
    /* The directory holds the sources being edited, usually of one family: the others' missing
     * files are expected (kp__registry_finish warns once when it replaced nothing). */
    if (k->source)
        kp__log(rt, KP_LOG_INFO, "kernel %s: source from %s (KP_KERNEL_DIR)", k->desc->name, path);
    else
        kp__log(rt, KP_LOG_DEBUG,
                "kernel %s: %s not found in KP_KERNEL_DIR; using the embedded "
                "source",
                k->desc->name, path ? path : k->desc->source_name);
    free(path);
}

kp_kernel *kp__registry_find(const kp_runtime *rt, const char *name)
{
    for (size_t i = 0; i < rt->n_kernels; i++)
        if (strcmp(rt->kernels[i]->desc->name, name) == 0)
            return rt->kernels[i];
    return NULL;
}

static void kernel_free(kp_kernel *k)
{
    kp__tuning_free(k);
    free(k->source);
    free(k->line);
    free(k);
}

kp_status kp__registry_add(kp_runtime *rt, kp__plugin *plugin, const kp_kernel_desc *desc)
{
    kp_status st = check_desc(rt, desc);
    if (st != KP_OK)
        return st;
    if (listed(rt->manifest.disable, rt->manifest.n_disable, desc->name)) {
        kp__log(rt, KP_LOG_INFO, "kernel %s from %s is disabled by the manifest", desc->name,
                plugin->path);
        return KP_OK;
    }
    kp_kernel *old = kp__registry_find(rt, desc->name);
    if (old) {
        const char *prefer = preferred_plugin(rt, desc->name);
        if (old->plugin == plugin)
            return kp__fail(rt, KP_ERR_PLUGIN, "kernel %s is registered twice by %s", desc->name,
                            plugin->path);
        if (!prefer || strcmp(prefer, plugin->name) != 0) {
            if (!prefer)
                kp__log(rt, KP_LOG_WARN,
                        "kernel %s is registered by both %s and %s; using %s (set "
                        "plugins.prefer in the manifest to choose)",
                        desc->name, old->plugin->path, plugin->path, old->plugin->path);
            return KP_OK;
        }
        kp__log(rt, KP_LOG_INFO, "kernel %s: using %s over %s (plugins.prefer)", desc->name,
                plugin->path, old->plugin->path);
        old->plugin->n_kernels--;
        old->desc = desc;
        old->plugin = plugin;
        plugin->n_kernels++;
        free(old->source);
        free(old->line);
        old->source = NULL;
        old->line = NULL;
        load_dev_source(rt, old);
        return KP_OK;
    }
    kp_kernel *k = calloc(1, sizeof *k);
    kp_kernel **grown = realloc(rt->kernels, (rt->n_kernels + 1) * sizeof *grown);
    if (!k || !grown) {
        free(k);
        if (grown)
            rt->kernels = grown;
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    rt->kernels = grown;
    k->rt = rt;
    k->desc = desc;
    k->plugin = plugin;
    load_dev_source(rt, k);
    rt->kernels[rt->n_kernels++] = k;
    plugin->n_kernels++;
    return KP_OK;
}

/* A program's text: the prelude (kernels/common/prelude.cl), then the kernel's source, each after a
 * #line naming its file, so that build logs give every line its own file and number (a compiler
 * that ignores #line counts from the start: the backend maps that back, cl-build-log.h). */
kp_status kp__kernel_get(kp_runtime *rt, kp_kernel *k, const char *entry, const char *extra,
                         uint32_t flags, kp_clkernel **out)
{
    const kp_kernel_desc *d = k->desc;
    if (!k->line) {
        const char *name = d->source_name ? d->source_name : d->name;
        k->line = kp__asprintf("\n#line 1 \"%.200s\"\n", strpbrk(name, "\"\\\n") ? "source" : name);
        if (!k->line)
            return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    const char *source = k->source ? k->source : d->source;
    const char *text[] = {"#line 1 \"kernels/common/prelude.cl\"\n", kp_kernel_prelude_cl, k->line,
                          source};
    kp__build_request req = {
        .owner = k,
        .kernel = d->name,
        .source_name = d->source_name,
        .text = source ? text : NULL,
        .n_text = source ? (uint32_t)(sizeof text / sizeof text[0]) : 0,
        .entry = entry,
        .options = k->options ? k->options : "",
        .extra = extra,
        .flags = flags,
        .plugin = k->plugin->name,
        .plugin_version = k->plugin->version,
    };
    return rt->ops->kernel_get(rt->backend, &req, out);
}

void kp__registry_remove_plugin(kp_runtime *rt, const kp__plugin *plugin)
{
    size_t kept = 0;
    for (size_t i = 0; i < rt->n_kernels; i++) {
        if (rt->kernels[i]->plugin == plugin)
            kernel_free(rt->kernels[i]);
        else
            rt->kernels[kept++] = rt->kernels[i];
    }
    rt->n_kernels = kept;
}

static int by_name(const void *a, const void *b)
{
    const kp_kernel *ka = *(kp_kernel *const *)a, *kb = *(kp_kernel *const *)b;
    return strcmp(ka->desc->name, kb->desc->name);
}

void kp__registry_finish(kp_runtime *rt)
{
    if (rt->n_kernels)
        qsort(rt->kernels, rt->n_kernels, sizeof *rt->kernels, by_name);
    size_t replaced = 0;
    const char *example = NULL;
    for (size_t i = 0; i < rt->n_kernels; i++) {
        replaced += rt->kernels[i]->source != NULL;
        if (!example && rt->kernels[i]->desc->source_name)
            example = rt->kernels[i]->desc->source_name;
    }
    if (rt->kernel_dir && !replaced && example)
        kp__log(rt, KP_LOG_WARN,
                "KP_KERNEL_DIR %s holds none of the loaded kernels' sources (such as %s): every "
                "kernel uses its embedded source",
                rt->kernel_dir, example);
}

void kp__registry_free(kp_runtime *rt)
{
    for (size_t i = 0; i < rt->n_kernels; i++)
        kernel_free(rt->kernels[i]);
    free(rt->kernels);
    rt->kernels = NULL;
    rt->n_kernels = 0;
}

int kp_kernel_name_matches(const char *pattern, const char *name)
{
    if (!pattern || !*pattern)
        return 1;
    if (!name)
        return 0;
    if (!strpbrk(pattern, "*?[")) {
        size_t n = strlen(pattern);
        return strcmp(pattern, name) == 0 || (strncmp(pattern, name, n) == 0 && name[n] == '.');
    }
    return fnmatch(pattern, name, 0) == 0;
}

kp_status kp_kernel_find(kp_runtime *rt, const char *name, kp_kernel **out)
{
    if (!out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_find: out is NULL");
    *out = NULL;
    if (!rt || !name)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_find: NULL runtime or name");
    /* Kernels registered at run time change the list. */
    pthread_mutex_lock(&rt->lock);
    kp_kernel *k = kp__registry_find(rt, name);
    if (k) {
        pthread_mutex_unlock(&rt->lock);
        *out = k;
        return KP_OK;
    }
    /* Suggest kernels of the same family: the common mistake is the op's name. */
    char *near = NULL;
    size_t family = strcspn(name, ".");
    for (size_t i = 0; i < rt->n_kernels; i++) {
        const char *n = rt->kernels[i]->desc->name;
        if (strncmp(n, name, family) == 0 && n[family] == '.')
            kp__append(&near, "%s%s", near ? ", " : "", n);
    }
    pthread_mutex_unlock(&rt->lock);
    kp__fail(rt, KP_ERR_NOT_FOUND, "no kernel named \"%s\"%s%s%s", name,
             near ? " (did you mean: " : " (see `kernelport kernels` and `kernelport plugins`)",
             near ? near : "", near ? ")" : "");
    free(near);
    return KP_ERR_NOT_FOUND;
}

/* The lock guards the list, not the runtime's logical state: taking it from a const runtime is
 * what a reader of a list that kp_kernel_register grows needs. */
size_t kp_kernel_count(const kp_runtime *rt)
{
    if (!rt)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&rt->lock);
    size_t n = rt->n_kernels;
    pthread_mutex_unlock((pthread_mutex_t *)&rt->lock);
    return n;
}

kp_kernel *kp_kernel_at(const kp_runtime *rt, size_t index)
{
    if (!rt)
        return NULL;
    pthread_mutex_lock((pthread_mutex_t *)&rt->lock);
    kp_kernel *k = index < rt->n_kernels ? rt->kernels[index] : NULL;
    pthread_mutex_unlock((pthread_mutex_t *)&rt->lock);
    return k;
}

kp_status kp_kernel_info_get(const kp_kernel *k, kp_kernel_info *out)
{
    if (!k)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_kernel_info_get: NULL argument");
    kp_status st = KP__OUT_CHECK(NULL, "kp_kernel_info_get", kp_kernel_info, out);
    if (st != KP_OK)
        return st;
    const kp_kernel_info info = {.struct_size = sizeof info,
                                 .name = k->desc->name,
                                 .summary = k->desc->summary ? k->desc->summary : "",
                                 .plugin = k->plugin->name,
                                 .plugin_path = k->plugin->path,
                                 .source_name = k->desc->source ? k->desc->source_name : NULL,
                                 .n_params = k->desc->n_params,
                                 .n_tunables = k->desc->n_tunables};
    KP__OUT_WRITE(kp_kernel_info, out, &info);
    return KP_OK;
}

kp_status kp_kernel_param(const kp_kernel *k, size_t index, kp_param_info *out)
{
    kp_status st = KP__OUT_CHECK(NULL, "kp_kernel_param", kp_param_info, out);
    if (st != KP_OK)
        return st;
    if (!k || index >= k->desc->n_params)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_kernel_param: bad kernel or index");
    const kp_param_desc *p = &k->desc->params[index];
    const kp_param_info info = {.struct_size = sizeof info,
                                .name = p->name,
                                .doc = p->doc ? p->doc : "",
                                .kind = (kp_arg_kind)p->kind,
                                .access = (kp_access)p->access,
                                .dtypes = p->dtypes,
                                .optional = (p->flags & KP_PARAM_OPTIONAL) != 0,
                                .int_default = p->int_default,
                                .float_default = p->float_default};
    KP__OUT_WRITE(kp_param_info, out, &info);
    return KP_OK;
}

const char *const *kp_kernel_sample_sizes(const kp_kernel *k, int bench)
{
    static const char *const none[] = {NULL};
    if (!k || !k->desc->sample)
        return none;
    const char *const *s = bench ? k->desc->bench_sizes : k->desc->verify_sizes;
    return s ? s : none;
}
