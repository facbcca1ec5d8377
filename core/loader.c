/* SPDX-License-Identifier: Apache-2.0 */
/* Plugin loading: directory scan, trust and probe, dlopen, ABI and field checks, init, and
 * rejection records. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp-static-plugins.h"
#include "registry.h"
#include "struct-size.h"

_Thread_local kp_runtime *kp__initializing;

/* Plugin inits run one at a time in the process: runtimes created on several threads at once load
 * the same modules (dlopen shares one copy), and an init may fill static tables (plugin.h). */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where kp__plugin_scan reports the steps it reaches; -1 in every other process. */
static int scan_fd = -1;

static void reached(const char *line)
{
    if (scan_fd < 0)
        return;
    /* Unbuffered, so that the line is out before a crash in the step it announces. */
    size_t n = strlen(line);
    while (n) {
        ssize_t w = write(scan_fd, line, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        line += w;
        n -= (size_t)w;
    }
}

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

void kp__plugin_reject(kp_runtime *rt, kp__plugin *p, const char *fmt, ...)
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
        kp__plugin_reject(rt, p, "kp_plugin_entry returned NULL");
        return;
    }
    if (info->struct_size < INFO_MIN_SIZE) {
        kp__plugin_reject(rt, p, "kp_plugin_info is %u bytes, smaller than ABI 1.0's %zu",
                          info->struct_size, (size_t)INFO_MIN_SIZE);
        return;
    }
    if (info->abi_major != KP_ABI_MAJOR) {
        kp__plugin_reject(
            rt, p,
            "plugin ABI %u.%u is not supported by this Kernelport (ABI %d.%d); rebuild the "
            "plugin against Kernelport %s",
            info->abi_major, info->abi_minor, KP_ABI_MAJOR, KP_ABI_MINOR, KP_VERSION_STRING);
        return;
    }
    if (info->abi_minor > KP_ABI_MINOR) {
        kp__plugin_reject(
            rt, p, "plugin needs ABI %u.%u but this Kernelport provides %d.%d; upgrade Kernelport",
            info->abi_major, info->abi_minor, KP_ABI_MAJOR, KP_ABI_MINOR);
        return;
    }
    if (!valid_plugin_name(info->name)) {
        kp__plugin_reject(
            rt, p,
            "plugin name \"%s\" is missing or invalid (lowercase letters, digits, '_', "
            "'-')",
            info->name ? info->name : "");
        return;
    }
    p->name = kp__strdup(info->name);
    p->version = kp__strdup(info->version ? info->version : "");
    if (!info->init) {
        kp__plugin_reject(rt, p, "plugin %s has no init function", info->name);
        return;
    }
    if (disabled(rt, info->name)) {
        kp__plugin_reject(rt, p, "plugin %s is disabled by the manifest (plugins.disable)",
                          info->name);
        return;
    }
    p->info = info;
    kp_registrar reg = {.rt = rt, .plugin = p};
    /* An init that fails without a message must not inherit an older one. */
    kp__fail(rt, KP_OK, "%s", "");
    reached(KP__SCAN_INIT "\n");
    kp__initializing = rt;
    pthread_mutex_lock(&init_lock);
    kp_status st = info->init(kp__host_api(), &reg);
    pthread_mutex_unlock(&init_lock);
    kp__initializing = NULL;
    if (st != KP_OK) {
        kp__registry_remove_plugin(rt, p);
        p->n_kernels = 0;
        const char *why = kp_last_error(rt);
        kp__plugin_reject(rt, p, "init failed with %s%s%s", kp_status_name(st), *why ? ": " : "",
                          why);
    } else if (!p->n_registered) {
        /* Often an init cut short: PoCL's LLVM, for one, catches SIGABRT and lets it return. */
        kp__log(rt, KP_LOG_WARN,
                "plugin %s (%s) registered no kernels: its init returned KP_OK without "
                "registering any",
                info->name, p->path);
    }
}

static int already_seen(const kp_runtime *rt, const char *real)
{
    for (size_t i = 0; i < rt->n_plugins; i++)
        if (strcmp(rt->plugins[i]->path, real) == 0)
            return 1;
    return 0;
}

/* Non-zero unless the symbol table says `sym` is data: calling data jumps into it. Symbols
 * without a type (hand-written assembly) get the benefit of the doubt. */
static int is_function(void *sym)
{
    Dl_info dl;
    const ElfW(Sym) *entry = NULL;
    if (!dladdr1(sym, &dl, (void **)&entry, RTLD_DL_SYMENT) || !entry)
        return 1;
    int type = ELF64_ST_TYPE(entry->st_info); /* the same bits in ELF32 */
    return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

/* dlopen, the entry point and start: everything of loading that runs the plugin's code. */
static void open_plugin(kp_runtime *rt, kp__plugin *p)
{
    reached(KP__SCAN_LOAD "\n");
    p->handle = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) {
        const char *e = dlerror();
        kp__plugin_reject(rt, p, "dlopen failed: %s", e ? e : "unknown error");
        return;
    }
    dlerror();
    void *sym = dlsym(p->handle, "kp_plugin_entry");
    if (!sym) {
        kp__plugin_reject(rt, p,
                          "no kp_plugin_entry symbol: not a Kernelport plugin (define the entry "
                          "with KP_PLUGIN_DEFINE)");
        return;
    }
    if (!is_function(sym)) {
        kp__plugin_reject(rt, p,
                          "kp_plugin_entry is not a function: the library exports it as data "
                          "(define the entry with KP_PLUGIN_DEFINE)");
        return;
    }
    kp_plugin_entry_fn entry;
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    memcpy(&entry, &sym, sizeof entry);
    reached(KP__SCAN_ENTRY "\n");
    start(rt, p, entry());
}

static void file_id(const struct stat *st, kp__file_id *id)
{
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->size = (uint64_t)st->st_size;
    id->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    id->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

/* The plugins found on disk that may be loaded, in scan order, until the probe has vetted them. */
typedef struct found {
    kp__plugin **v;
    size_t n;
} found;

/* Records a plugin file of directory `dir` (resolved and checked) unless it was seen before, and
 * adds it to `f` when its path is safe. */
static void find_file(kp_runtime *rt, const char *path, const char *dir, found *f)
{
    char real[PATH_MAX];
    if (!realpath(path, real) || already_seen(rt, real))
        return;
    kp__plugin *p = record(rt, real);
    if (!p)
        return;
    struct stat st;
    if (stat(real, &st) != 0) {
        kp__plugin_reject(rt, p, "cannot stat: %s", strerror(errno));
        return;
    }
    if (!rt->manifest.allow_insecure) {
        char *why = kp__path_distrust(real, &st, "the file", dir);
        if (why) {
            kp__plugin_reject(rt, p,
                              "refused: %s; set plugins.allow_insecure: true in the manifest to "
                              "load it anyway",
                              why);
            free(why);
            return;
        }
    }
    file_id(&st, &p->file);
    kp__plugin **grown = realloc(f->v, (f->n + 1) * sizeof *grown);
    if (!grown) {
        kp__plugin_reject(rt, p, "out of host memory");
        return;
    }
    f->v = grown;
    f->v[f->n++] = p;
}

static int is_plugin_file(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 3 && strcmp(e->d_name + n - 3, ".so") == 0;
}

static void scan_dir(kp_runtime *rt, const char *dir, int quiet_if_missing, found *f)
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
    char *why =
        rt->manifest.allow_insecure ? NULL : kp__path_distrust(real, &st, "the directory", NULL);
    if (why) {
        kp__plugin *p = record(rt, real);
        if (p)
            kp__plugin_reject(rt, p,
                              "refused directory: %s; set plugins.allow_insecure: true in the "
                              "manifest to load from it anyway",
                              why);
        free(why);
        return;
    }
    struct dirent **names = NULL;
    int n = scandir(real, &names, is_plugin_file, alphasort);
    for (int i = 0; i < n; i++) {
        char *path = kp__asprintf("%s/%s", real, names[i]->d_name);
        if (path)
            find_file(rt, path, real, f);
        free(path);
        free(names[i]);
    }
    free(names);
}

char *kp__beside_library(const char *rel)
{
    Dl_info dl, program;
    if (!dladdr((void *)&kp_runtime_create, &dl) || !dl.dli_fname)
        return NULL;
    /* Linked into the program from libkernelport.a: the library's directory is where an install
     * puts it, KP_LIBDIR_FROM_BINDIR from the program's (dli_fname is then only argv[0]). */
    const int in_program =
        dladdr((void *)getauxval(AT_PHDR), &program) && program.dli_fbase == dl.dli_fbase;
    char real[PATH_MAX];
    if (!realpath(in_program ? "/proc/self/exe" : dl.dli_fname, real))
        return NULL;
    char *slash = strrchr(real, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return in_program ? kp__asprintf("%s/%s/%s", real, KP_LIBDIR_FROM_BINDIR, rel)
                      : kp__asprintf("%s/%s", real, rel);
}

static void load_static(kp_runtime *rt)
{
    for (size_t i = 0; kp__static_plugins[i]; i++) {
        kp__plugin *p = record(rt, "(static)");
        if (!p)
            continue;
        p->probe = "static"; /* part of the library: it runs as the library does */
        start(rt, p, kp__static_plugins[i]());
    }
}

kp_status kp__plugins_load(kp_runtime *rt, const kp_runtime_options *opt)
{
    load_static(rt);
    found f = {NULL, 0};
    for (size_t i = 0; i < opt->n_plugin_dirs; i++)
        if (opt->plugin_dirs[i])
            scan_dir(rt, opt->plugin_dirs[i], 0, &f);
    const char *env = kp__env(rt, "KP_PLUGIN_PATH");
    if (env) {
        char *copy = kp__strdup(env), *save = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
            scan_dir(rt, d, 0, &f);
        free(copy);
    }
    for (size_t i = 0; i < rt->manifest.n_plugin_dirs; i++)
        scan_dir(rt, rt->manifest.plugin_dirs[i], 1, &f);
    if (!(rt->flags & KP_RUNTIME_NO_INSTALLED_PLUGINS)) {
        /* lib/kernelport/plugins beside the library: an installed tree (or the build tree, which
         * mirrors it) needs no configuration. */
        char *dir = kp__beside_library(KP_PLUGIN_SUBDIR);
        if (dir)
            scan_dir(rt, dir, 1, &f);
        free(dir);
    }
    /* Nothing found on disk runs in this process before the probe has vetted all of it. */
    kp__plugins_probe(rt, f.v, f.n);
    for (size_t i = 0; i < f.n; i++)
        if (!f.v[i]->reason)
            open_plugin(rt, f.v[i]);
    free(f.v);
    kp__registry_finish(rt);
    return KP_OK;
}

void kp__plugin_scan(const char *path, int report_fd)
{
    scan_fd = report_fd;
    reached(KP__SCAN_STARTED "\n");
    /* The runtime init needs, and no more: no device, no manifest file, no log but errors. */
    kp_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return;
    rt->log_level = KP_LOG_ERROR;
    kp__manifest_init(&rt->manifest);
    pthread_mutex_init(&rt->lock, NULL);
    pthread_mutex_init(&rt->error_lock, NULL);
    kp__plugin *p = record(rt, path);
    if (p)
        open_plugin(rt, p);
    reached(KP__SCAN_DONE "\n");
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

/* The index-th loaded (or rejected) plugin, or NULL. */
static const kp__plugin *nth(const kp_runtime *rt, size_t index, int rejected)
{
    size_t seen = 0;
    for (size_t i = 0; rt && i < rt->n_plugins; i++) {
        const kp__plugin *p = rt->plugins[i];
        if ((p->reason != NULL) == rejected && seen++ == index)
            return p;
    }
    return NULL;
}

static kp_status get_record(const kp_runtime *rt, size_t index, int rejected, kp_plugin_record *out)
{
    const char *call = rejected ? "kp_plugin_rejected" : "kp_plugin_get";
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: NULL argument", call);
    kp_status st = KP__OUT_CHECK(rt, call, kp_plugin_record, out);
    if (st != KP_OK)
        return st;
    const kp__plugin *p = nth(rt, index, rejected);
    if (!p)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "%s: plugin record %zu does not exist", call,
                        index);
    const kp_plugin_record r = {.struct_size = sizeof r,
                                .path = p->path,
                                .name = p->name ? p->name : "",
                                .version = p->version ? p->version : "",
                                .reason = p->reason ? p->reason : "",
                                .n_kernels = p->n_kernels};
    KP__OUT_WRITE(kp_plugin_record, out, &r);
    return KP_OK;
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

const char *kp_plugin_probe_result(const kp_runtime *rt, size_t index)
{
    const kp__plugin *p = nth(rt, index, 0);
    return p ? p->probe : NULL;
}
