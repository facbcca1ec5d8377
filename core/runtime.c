/* SPDX-License-Identifier: Apache-2.0 */
/* The runtime's life: options, manifest layers, device choice, backend, plugins, teardown. */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "kp-embedded.h"
#include "runtime.h"
#include "struct-size.h"

enum { LAYER_BUILTIN, LAYER_SYSTEM, LAYER_USER, LAYER_EXPLICIT };

kp_runtime_options kp_runtime_options_default(void)
{
    kp_runtime_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.log_level = KP_LOG_WARN;
    return o;
}

static const char *const layer_names[] = {"built-in", "system", "user", "explicit"};

/* Loads one manifest file as `layer` and records it (read, or absent where that is allowed). */
static kp_status load_layer(kp_runtime *rt, uint32_t layer, const char *path, int must_exist,
                            char **err)
{
    struct stat sb;
    const int there = stat(path, &sb) == 0;
    kp_status st = kp__manifest_load_file(&rt->manifest, path, layer, must_exist, err);
    if (st != KP_OK)
        return st;
    kp__layer *l = &rt->layers[rt->n_layers];
    *l = (kp__layer){.name = layer_names[layer], .path = kp__strdup(path), .read = there};
    if (!l->path)
        return kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    rt->n_layers++;
    kp__log(rt, KP_LOG_INFO, "manifest (%s): %s: %s", l->name, path, there ? "read" : "absent");
    return KP_OK;
}

/* Drops each "name/.." pair of an absolute path in place ("/p/lib/../etc" is "/p/etc"), without
 * touching the file system: the directories may not exist. */
static void collapse_dotdot(char *path)
{
    char *out = path, *in = path;
    while (*in) {
        while (*in == '/')
            in++;
        char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (out > path && *--out != '/')
                ;
        } else if (len && !(len == 1 && in[0] == '.')) {
            *out++ = '/';
            memmove(out, in, len);
            out += len;
        }
        in += len;
    }
    if (out == path)
        *out++ = '/';
    *out = '\0';
}

/* The system manifest: KP_SYSCONF_RELPATH from the library's directory. */
static char *system_manifest(void)
{
    char *path = kp__beside_library(KP_SYSCONF_RELPATH);
    if (path && path[0] == '/')
        collapse_dotdot(path);
    return path;
}

static kp_status load_manifests(kp_runtime *rt, const kp_runtime_options *opt)
{
    char *err = NULL;
    kp_status st = kp__manifest_load_text(&rt->manifest, kp_kernel_default_manifest_yaml,
                                          kp_kernel_default_manifest_yaml_len, "<built-in>",
                                          LAYER_BUILTIN, &err);
    if (st == KP_OK) {
        rt->layers[rt->n_layers++] = (kp__layer){.name = layer_names[LAYER_BUILTIN], .read = 1};
        kp__log(rt, KP_LOG_INFO, "manifest (built-in): read");
    }
    if (st == KP_OK && !(rt->flags & KP_RUNTIME_NO_USER_MANIFESTS)) {
        char *system = system_manifest();
        if (system)
            st = load_layer(rt, LAYER_SYSTEM, system, 0, &err);
        free(system);
        if (st == KP_OK) {
            const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
            char *user = xdg && *xdg ? kp__asprintf("%s/kernelport/manifest.yaml", xdg)
                         : home      ? kp__asprintf("%s/.config/kernelport/manifest.yaml", home)
                                     : NULL;
            if (user)
                st = load_layer(rt, LAYER_USER, user, 0, &err);
            free(user);
        }
    }
    const char *explicit_path =
        opt->manifest_path ? opt->manifest_path : kp__env(rt, "KP_MANIFEST");
    if (st == KP_OK && explicit_path)
        st = load_layer(rt, LAYER_EXPLICIT, explicit_path, 1, &err);
    if (st != KP_OK) {
        kp__fail(NULL, st, "%s", err ? err : "manifest error");
        free(err);
    }
    return st;
}

/* The backend's sink: its failures and logs are the runtime's. */
static kp_status sink_fail(void *ctx, kp_status status, const char *fmt, va_list ap)
{
    return kp__failv(ctx, status, fmt, ap);
}

static void sink_log(void *ctx, kp_log_level level, const char *fmt, va_list ap)
{
    kp__logv(ctx, level, fmt, ap);
}

static kp__store_binaries store_binaries(int manifest_binaries)
{
    switch (manifest_binaries) {
    case KP__BINARIES_ALWAYS:
        return KP__STORE_BINARIES_ALWAYS;
    case KP__BINARIES_NEVER:
        return KP__STORE_BINARIES_NEVER;
    default:
        return KP__STORE_BINARIES_AUTO;
    }
}

/* Opens the backend that found the chosen device. */
static kp_status open_backend(kp_runtime *rt, const kp_runtime_options *opt)
{
    const char *cache = opt->cache_dir ? opt->cache_dir : rt->manifest.cache_dir;
    if (cache && *cache && !(rt->flags & KP_RUNTIME_NO_DISK_CACHE))
        rt->cache_dir = kp__strdup(cache);
    const kp__device_entry *e = &rt->devices[rt->device_index];
    kp__backend_config cfg = {
        .sink = &rt->sink,
        .device = e,
        .cache_dir = rt->cache_dir,
        .cache_max_mb = (uint64_t)rt->manifest.cache_max_mb,
        .store_binaries = store_binaries(rt->manifest.cache_binaries),
    };
    kp__backend *b = NULL;
    kp_status st = e->ops->open(&cfg, &b);
    if (st == KP_OK) {
        rt->backend = b;
        rt->ops = e->ops;
    }
    return st;
}

/* The devices of every backend, in order: OpenCL's, then the host's one, which is last. */
static kp_status enumerate(kp_runtime *rt)
{
    static const kp__backend_ops *const backends[] = {&kp__opencl_backend, &kp__host_backend};
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        kp__device_entry *found = NULL;
        size_t n = 0;
        kp_status st = backends[i]->enumerate(&rt->sink, &found, &n);
        if (st != KP_OK)
            return st;
        if (!n)
            continue;
        kp__device_entry *grown = realloc(rt->devices, (rt->n_devices + n) * sizeof *grown);
        if (!grown) {
            free(found);
            return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        rt->devices = grown;
        for (size_t d = 0; d < n; d++) {
            kp__device_entry *e = &rt->devices[rt->n_devices];
            *e = found[d];
            e->info.index = (uint32_t)rt->n_devices++;
            e->ops = backends[i];
        }
        free(found);
    }
    return KP_OK;
}

/* Moves this runtime's last error to the no-runtime slot, where kp_runtime_create reports. */
static kp_status hand_over_error(kp_runtime *rt, kp_status st)
{
    const char *m = kp_last_error(rt);
    if (*m)
        kp__fail(NULL, st, "%s", m);
    return st;
}

kp_status kp_runtime_create(const kp_runtime_options *options, kp_runtime **out)
{
    if (!out)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_runtime_create: out is NULL");
    *out = NULL;
    kp_runtime_options opt = kp_runtime_options_default();
    if (options) {
        kp_status st = KP__IN_COPY(NULL, "kp_runtime_create", kp_runtime_options, &opt, options);
        if (st != KP_OK)
            return st;
    }
    kp_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    rt->flags = opt.flags;
    rt->log = opt.log;
    rt->log_user = opt.log_user;
    rt->log_level = opt.log ? opt.log_level : kp__log_env_level();
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    /* Plugins launch other kernels from inside a launch (host->launch). */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rt->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&rt->error_lock, NULL);
    rt->sink = (kp__sink){.ctx = rt, .fail = sink_fail, .log = sink_log};
    kp__manifest_init(&rt->manifest);
    rt->kernel_dir = kp__strdup(kp__env(rt, "KP_KERNEL_DIR"));

    kp_status st = load_manifests(rt, &opt);
    if (st == KP_OK)
        st = enumerate(rt);
    if (st == KP_OK) {
        const char *spec = opt.device ? opt.device : kp__env(rt, "KP_DEVICE");
        st = kp__device_select(rt, spec);
        /* A spec nobody passed on the command line is easy to forget: say where it came from. */
        if (st != KP_OK && !opt.device && spec)
            st = kp__fail_prefix(rt, st, "KP_DEVICE (from the environment)");
    }
    if (st == KP_OK)
        st = open_backend(rt, &opt);
    if (st == KP_OK)
        st = kp__plugins_load(rt, &opt);
    if (st == KP_OK)
        st = kp__profile_open(rt);
    if (st != KP_OK) {
        hand_over_error(rt, st);
        kp_runtime_destroy(rt);
        return st;
    }
    kp__log(rt, KP_LOG_INFO, "runtime on %s (%s): %s", kp__device(rt)->name,
            kp_vendor_name(kp__device(rt)->vendor), rt->device_why);
    *out = rt;
    return KP_OK;
}

void kp_runtime_destroy(kp_runtime *rt)
{
    if (!rt)
        return;
    if (rt->ops)
        rt->ops->finish(rt->backend);
    kp__profile_close(rt);
    kp__graph_free_all(rt);
    kp__prepared_free_all(rt);
    kp__buffers_free(rt);
    if (rt->ops)
        rt->ops->close(rt->backend);
    kp__registry_free(rt);
    kp__register_free(rt);
    kp__plugins_close(rt);
    kp__manifest_fini(&rt->manifest);
    for (size_t i = 0; i < rt->n_layers; i++)
        free((char *)rt->layers[i].path);
    free(rt->devices);
    free(rt->device_why);
    free(rt->kernel_dir);
    free(rt->cache_dir);
    kp__errors_free(rt);
    pthread_mutex_destroy(&rt->lock);
    pthread_mutex_destroy(&rt->error_lock);
    free(rt);
}

kp_status kp_finish(kp_runtime *rt)
{
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_finish: runtime is NULL");
    return rt->ops->finish(rt->backend);
}

size_t kp_device_count(const kp_runtime *rt)
{
    return rt ? rt->n_devices : 0;
}

kp_status kp_device_get(const kp_runtime *rt, size_t index, kp_device_info *out)
{
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_device_get: NULL argument");
    kp_status st = KP__OUT_CHECK(rt, "kp_device_get", kp_device_info, out);
    if (st != KP_OK)
        return st;
    if (index >= rt->n_devices)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_device_get: index %zu is past the %zu devices",
                        index, rt->n_devices);
    KP__OUT_WRITE(kp_device_info, out, &rt->devices[index].info);
    return KP_OK;
}

kp_status kp_runtime_device(const kp_runtime *rt, kp_device_info *out, const char **why)
{
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_runtime_device: NULL argument");
    kp_status st = KP__OUT_CHECK(rt, "kp_runtime_device", kp_device_info, out);
    if (st != KP_OK)
        return st;
    KP__OUT_WRITE(kp_device_info, out, kp__device(rt));
    if (why)
        *why = rt->device_why ? rt->device_why : "";
    return KP_OK;
}

void kp_uuid_format(const uint8_t uuid[16], char *buf)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            buf[n++] = '-';
        buf[n++] = hex[uuid[i] >> 4];
        buf[n++] = hex[uuid[i] & 15];
    }
    buf[n] = '\0';
}

kp_status kp_runtime_warmup(kp_runtime *rt, const char *pattern)
{
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_runtime_warmup: runtime is NULL");
    kp_status first = KP_OK;
    char *first_message = NULL;
    for (size_t i = 0; i < rt->n_kernels; i++) {
        kp_kernel *k = rt->kernels[i];
        if (!kp_kernel_name_matches(pattern, k->desc->name))
            continue;
        pthread_mutex_lock(&rt->lock);
        /* A kernel the device cannot run has nothing to warm up (and must not be built). */
        int runs = kp__kernel_supported(rt, k) == KP_OK;
        kp_status st = runs ? kp__tuning_resolve(rt, k) : KP_OK;
        if (st == KP_OK && runs && !kp__is_host(rt)) {
            kp_launch l = {.rt = rt, .kernel = k};
            if (k->desc->warmup)
                st = k->desc->warmup(&l);
            else if (k->desc->source && k->desc->entry) {
                /* Tuning resolution builds only kernels with a workgroup tunable to bound. */
                kp_clkernel *ck;
                st = kp__kernel_get(rt, k, k->desc->entry, NULL, 0, &ck);
            }
        }
        pthread_mutex_unlock(&rt->lock);
        if (st != KP_OK && first == KP_OK) {
            first = st;
            first_message = kp__strdup(kp_last_error(rt));
        }
    }
    if (first != KP_OK) {
        kp__fail(rt, first, "%s", first_message ? first_message : "warm-up failed");
        free(first_message);
    }
    return first;
}

kp_status kp_runtime_opencl(kp_runtime *rt, void **context, void **queue, void **device)
{
    if (!rt)
        return kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_runtime_opencl: runtime is NULL");
    if (kp__is_host(rt))
        return kp__fail(rt, KP_ERR_UNSUPPORTED,
                        "kp_runtime_opencl: the host device has no "
                        "OpenCL handles");
    if (context)
        *context = rt->ops->handle(rt->backend, KP__HANDLE_CONTEXT);
    if (queue)
        *queue = rt->ops->handle(rt->backend, KP__HANDLE_QUEUE);
    if (device)
        *device = rt->ops->handle(rt->backend, KP__HANDLE_DEVICE);
    return KP_OK;
}

size_t kp_runtime_manifest_count(const kp_runtime *rt)
{
    return rt ? rt->n_layers : 0;
}

kp_status kp_runtime_manifest_layer(const kp_runtime *rt, size_t index, kp_manifest_layer *out)
{
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_runtime_manifest_layer: NULL argument");
    kp_status st = KP__OUT_CHECK(rt, "kp_runtime_manifest_layer", kp_manifest_layer, out);
    if (st != KP_OK)
        return st;
    if (index >= rt->n_layers)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_runtime_manifest_layer: index %zu is past the %zu layers", index,
                        rt->n_layers);
    const kp__layer *l = &rt->layers[index];
    const kp_manifest_layer layer = {.struct_size = sizeof layer,
                                     .name = l->name,
                                     .path = l->path ? l->path : "",
                                     .read = l->read};
    KP__OUT_WRITE(kp_manifest_layer, out, &layer);
    return KP_OK;
}
