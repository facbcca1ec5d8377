/* Plugin loading: directory scan, dlopen, ABI and field checks, init, and rejection records. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp-static-plugins.h"
#include "registry.h"

_Thread_local kp_runtime *kp__initializing;

/* Every field of a version 1.0 kp_plugin_info up to and including init. */
#define INFO_MIN_SIZE (offsetof(kp_plugin_info, init) + sizeof(void (*)(void)))

static kp__plugin *record(kp_runtime *rt, const char *path)
{
    kp__plugin *p = calloc(1, sizeof *p);
    kp__plugin **grown = realloc(rt->plugins, (rt->n_plugins + 1) * sizeof *grown);
    if (!p || !grown) {
        free(p);
        if (grown)
            rt->plugins = grown;
        return NULL;
    }
    rt->plugins = grown;
    p->path = kp__strdup(path);
    rt->plugins[rt->n_plugins++] = p;
    return p;
}

static void reject(kp_runtime *rt, kp__plugin *p, const char *fmt, ...) KP_PRINTF(3, 4);
static void reject(kp_runtime *rt, kp__plugin *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    p->reason = kp__vasprintf(fmt, ap);
    va_end(ap);
    kp__log(rt, KP_LOG_WARN, "plugin %s rejected: %s", p->path, p->reason ? p->reason : "?");
    if (p->handle) {
        dlclose(p->handle);
        p->handle = NULL;
    }
    p->info = NULL;
}

static int valid_plugin_name(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

static int disabled(const kp_runtime *rt, const char *name)
{
    for (size_t i = 0; i < rt->manifest.n_disable; i++)
        if (strcmp(rt->manifest.disable[i], name) == 0)
            return 1;
    return 0;
}

/* Checks what kp_plugin_entry returned and runs init; rejects the plugin on any failure. */
static void start(kp_runtime *rt, kp__plugin *p, const kp_plugin_info *info)
{
    if (!info) {
        reject(rt, p, "kp_plugin_entry returned NULL");
        return;
    }
    if (info->struct_size < INFO_MIN_SIZE) {
        reject(rt, p, "kp_plugin_info is %u bytes, smaller than ABI 1.0's %zu", info->struct_size,
               (size_t)INFO_MIN_SIZE);
        return;
    }
    if (info->abi_major != KP_ABI_MAJOR) {
        reject(rt, p,
               "plugin ABI %u.%u is not supported by this Kernelport (ABI %d.%d); rebuild the "
               "plugin against Kernelport %s",
               info->abi_major, info->abi_minor, KP_ABI_MAJOR, KP_ABI_MINOR, KP_VERSION_STRING);
        return;
    }
    if (info->abi_minor > KP_ABI_MINOR) {
        reject(rt, p,
               "plugin needs ABI %u.%u but this Kernelport provides %d.%d; upgrade Kernelport",
               info->abi_major, info->abi_minor, KP_ABI_MAJOR, KP_ABI_MINOR);
        return;
    }
    if (!valid_plugin_name(info->name)) {
        reject(rt, p,
               "plugin name \"%s\" is missing or invalid (lowercase letters, digits, '_', "
               "'-')",
               info->name ? info->name : "");
        return;
    }
    p->name = kp__strdup(info->name);
    p->version = kp__strdup(info->version ? info->version : "");
    if (!info->init) {
        reject(rt, p, "plugin %s has no init function", info->name);
        return;
    }
    if (disabled(rt, info->name)) {
        reject(rt, p, "plugin %s is disabled by the manifest (plugins.disable)", info->name);
        return;
    }
    p->info = info;
    kp_registrar reg = {.rt = rt, .plugin = p};
    /* An init that fails without a message must not inherit an older one. */
    kp__fail(rt, KP_OK, "%s", "");
    kp__initializing = rt;
    kp_status st = info->init(kp__host_api(), &reg);
    kp__initializing = NULL;
    if (st != KP_OK) {
        kp__registry_remove_plugin(rt, p);
        p->n_kernels = 0;
        const char *why = kp_last_error(rt);
        reject(rt, p, "init failed with %s%s%s", kp_status_name(st), *why ? ": " : "", why);
    }
}

static int insecure(const struct stat *st)
{
    /* Anyone else who can write there could make us run their code. */
    return (st->st_mode & (S_IWGRP | S_IWOTH)) != 0 || (st->st_uid != geteuid() && st->st_uid != 0);
}

static int already_seen(const kp_runtime *rt, const char *real)
{
    for (size_t i = 0; i < rt->n_plugins; i++)
        if (strcmp(rt->plugins[i]->path, real) == 0)
            return 1;
    return 0;
}

static void load_file(kp_runtime *rt, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || already_seen(rt, real))
        return;
    kp__plugin *p = record(rt, real);
    if (!p)
        return;
    struct stat st;
    if (stat(real, &st) != 0) {
        reject(rt, p, "cannot stat: %s", strerror(errno));
        return;
    }
    if (insecure(&st) && !rt->manifest.allow_insecure) {
        reject(rt, p,
               "refused: the file is writable by other users (mode %03o, owner %u); set "
               "plugins.allow_insecure: true in the manifest to load it anyway",
               (unsigned)(st.st_mode & 0777), (unsigned)st.st_uid);
        return;
    }
    p->handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        const char *e = dlerror();
        reject(rt, p, "dlopen failed: %s", e ? e : "unknown error");
        return;
    }
    dlerror();
    void *sym = dlsym(p->handle, "kp_plugin_entry");
    if (!sym) {
        reject(rt, p,
               "no kp_plugin_entry symbol: not a Kernelport plugin (define the entry with "
               "KP_PLUGIN_DEFINE)");
        return;
    }
    kp_plugin_entry_fn entry;
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    memcpy(&entry, &sym, sizeof entry);
    start(rt, p, entry());
}

static int is_plugin_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 3 && strcmp(e->d_name + n - 3, ".so") == 0;
}

static void scan_dir(kp_runtime *rt, const char *dir, int quiet_if_missing)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        if (!quiet_if_missing)
            kp__log(rt, KP_LOG_WARN, "plugin directory %s: %s", dir, strerror(errno));
        return;
    }
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
        kp__log(rt, KP_LOG_WARN, "plugin directory %s is not a directory", dir);
        return;
    }
    if (insecure(&st) && !rt->manifest.allow_insecure) {
        kp__plugin *p = record(rt, real);
        if (p)
            reject(rt, p,
                   "refused directory: writable by other users (mode %03o, owner %u); set "
                   "plugins.allow_insecure: true in the manifest to load from it anyway",
                   (unsigned)(st.st_mode & 0777), (unsigned)st.st_uid);
        return;
    }
    struct dirent **names = NULL;
    int n = scandir(real, &names, is_plugin_file, alphasort);
    for (int i = 0; i < n; i++) {
        char *path = kp__asprintf("%s/%s", real, names[i]->d_name);
        if (path)
            load_file(rt, path);
        free(path);
        free(names[i]);
    }
    free(names);
}

/* lib/kernelport/plugins beside the library, found from the library's own path so an installed
 * tree (or the build tree, which mirrors it) needs no configuration. */
static char *installed_dir(void)
{
    Dl_info dl;
    if (!dladdr((void *)&kp_runtime_create, &dl) || !dl.dli_fname)
        return NULL;
    char real[PATH_MAX];
    if (!realpath(dl.dli_fname, real))
        return NULL;
    char *slash = strrchr(real, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return kp__asprintf("%s/%s", real, KP_PLUGIN_SUBDIR);
}

static void load_static(kp_runtime *rt)
{
    for (size_t i = 0; kp__static_plugins[i]; i++) {
        kp__plugin *p = record(rt, "(static)");
        if (p)
            start(rt, p, kp__static_plugins[i]());
    }
}

kp_status kp__plugins_load(kp_runtime *rt, const kp_runtime_options *opt)
{
    load_static(rt);
    for (size_t i = 0; i < opt->n_plugin_dirs; i++)
        if (opt->plugin_dirs[i])
            scan_dir(rt, opt->plugin_dirs[i], 0);
    const char *env = kp__env(rt, "KP_PLUGIN_PATH");
    if (env) {
        char *copy = kp__strdup(env), *save = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
            scan_dir(rt, d, 0);
        free(copy);
    }
    for (size_t i = 0; i < rt->manifest.n_plugin_dirs; i++)
        scan_dir(rt, rt->manifest.plugin_dirs[i], 1);
    if (!(rt->flags & KP_RUNTIME_NO_INSTALLED_PLUGINS)) {
        char *dir = installed_dir();
        if (dir)
            scan_dir(rt, dir, 1);
        free(dir);
    }
    kp__registry_finish(rt);
    return KP_OK;
}

void kp__plugins_close(kp_runtime *rt)
{
    for (size_t i = 0; i < rt->n_plugins; i++) {
        kp__plugin *p = rt->plugins[i];
        if (p->handle)
            dlclose(p->handle);
        free(p->path);
        free(p->name);
        free(p->version);
        free(p->reason);
        free(p);
    }
    free(rt->plugins);
    rt->plugins = NULL;
    rt->n_plugins = 0;
}

static kp_status get_record(const kp_runtime *rt, size_t index, int rejected, kp_plugin_record *out)
{
    if (!rt || !out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "plugin record: NULL argument");
    size_t seen = 0;
    for (size_t i = 0; i < rt->n_plugins; i++) {
        const kp__plugin *p = rt->plugins[i];
        if ((p->reason != NULL) != rejected || seen++ != index)
            continue;
        out->path = p->path;
        out->name = p->name ? p->name : "";
        out->version = p->version ? p->version : "";
        out->reason = p->reason ? p->reason : "";
        out->n_kernels = p->n_kernels;
        return KP_OK;
    }
    return kp__fail(rt, KP_ERR_INVALID_ARG, "plugin record %zu does not exist", index);
}

static size_t count(const kp_runtime *rt, int rejected)
{
    size_t n = 0;
    for (size_t i = 0; rt && i < rt->n_plugins; i++)
        n += (rt->plugins[i]->reason != NULL) == rejected;
    return n;
}

size_t kp_plugin_count(const kp_runtime *rt)
{
    return count(rt, 0);
}

kp_status kp_plugin_get(const kp_runtime *rt, size_t index, kp_plugin_record *out)
{
    return get_record(rt, index, 0, out);
}

size_t kp_plugin_rejected_count(const kp_runtime *rt)
{
    return count(rt, 1);
}

kp_status kp_plugin_rejected(const kp_runtime *rt, size_t index, kp_plugin_record *out)
{
    return get_record(rt, index, 1, out);
}
