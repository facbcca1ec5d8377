/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the runtime, kernel, buffer, event and launch objects shared by the core's files. */
#ifndef KP_RUNTIME_H
#define KP_RUNTIME_H

#include <pthread.h>
#include <stdarg.h>

#include "backend.h"
#include "kernelport/kernelport.h"
#include "kernelport/plugin.h"
#include "manifest/manifest.h"
#include "util.h"

typedef struct kp__owned_desc kp__owned_desc;
typedef struct kp__capture kp__capture;
typedef struct kp__profile kp__profile;

#define KP__SCRATCH_SLOTS 16

struct kp_buffer {
    kp_runtime *rt; /* the owner: its backend holds the memory, its list releases it */
    size_t size;
    void *host;  /* the memory as a host pointer (host backend, reference copies), else NULL */
    void *mem;   /* the backend's handle (cl_mem; the host backend's block); NULL when is_host */
    int is_host; /* lives in host memory even on an OpenCL runtime (verification copies) */
    kp_buffer_hand_back_fn hand_back; /* kp_buffer_wrap_external's, run before the release */
    void *hand_back_user;
    struct kp_buffer *prev, *next; /* the runtime's list, released by kp_runtime_destroy */
};

/* The resolved value of one tunable on this runtime's device. */
typedef struct kp__tuning_choice {
    int64_t value;
    char *value_text;
    char *origin;
    char *provenance; /* the winning entry's `provenance:`, "key: value, ..."; NULL: none */
    char *allowed;
    char *notes;
} kp__tuning_choice;

/* What identifies a plugin file's contents without reading it: a change to any of these sends
 * the file back to the scanner (or to a hash of its contents). */
typedef struct kp__file_id {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
} kp__file_id;

typedef struct kp__plugin {
    char *path;
    char *name;
    char *version;
    char *reason; /* NULL when loaded */
    void *handle; /* dlopen handle; NULL for static plugins */
    const kp_plugin_info *info;
    size_t n_kernels;
    size_t n_registered; /* register_kernel calls its init made that succeeded */
    kp__file_id file;    /* the file when it was found */
    const char *probe;   /* how it was vetted before loading (kp_plugin_probe_result); static */
} kp__plugin;

struct kp_kernel {
    kp_runtime *rt; /* the owner: another runtime's calls refuse the kernel */
    const kp_kernel_desc *desc;
    kp__plugin *plugin;
    char *source;                /* KP_KERNEL_DIR text when set, else NULL (desc->source is used) */
    char *line;                  /* the #line before the source in its program (registry.c) */
    int resolved;                /* tuning values chosen for this runtime's device */
    int limits_checked;          /* chosen values checked against the compiled entry's limits */
    int overridden;              /* the application set values (kp_kernel_tunable_set) */
    kp__tuning_choice *choices;  /* desc->n_tunables entries */
    char *options;               /* build options: -D for each tunable + desc->build_options */
    uint64_t options_generation; /* bumped whenever options change (prepared launches rebuild) */
    kp_buffer *scratch[KP__SCRATCH_SLOTS];      /* device scratch (host->scratch) */
    kp_buffer *scratch_host[KP__SCRATCH_SLOTS]; /* the same slots for reference runs */
};

/* Timing of one launch: the first and the last command it enqueued, or its reference's time. */
struct kp_event {
    kp__event_record record; /* the backend's events (cl_event); empty on the host device */
    double host_seconds;     /* wall time of reference runs on the host device */
    int is_host;
};

/* The state of one check/enqueue/reference call handed to a plugin. */
struct kp_launch {
    kp_runtime *rt;
    kp_kernel *kernel;
    const kp_call *call;
    int reference;        /* the call runs the kernel's host reference */
    kp_event *event;      /* records the commands when timing was asked for */
    void *event_slot;     /* cl_event slot handed to a library call (host->cl_event_slot) */
    int depth;            /* nesting of host->launch */
    kp__capture *capture; /* a prepared launch being recorded: commands are kept, not run */
};

typedef struct kp__error_slot {
    pthread_t thread;
    char *message;
    struct kp__error_slot *next;
} kp__error_slot;

/* A manifest layer the runtime loaded or looked for. */
typedef struct kp__layer {
    const char *name; /* static: "built-in", "system", "user", "explicit" */
    const char *path; /* owned; NULL for the built-in one */
    int read;         /* 0: an optional file that is not there */
} kp__layer;

struct kp_runtime {
    uint32_t flags;
    kp_log_fn log;
    void *log_user;
    kp_log_level log_level;

    kp__manifest manifest;
    kp__layer layers[4];
    size_t n_layers;

    kp__device_entry *devices; /* OpenCL devices, then the host device */
    size_t n_devices;
    size_t device_index; /* the chosen one */
    char *device_why;

    kp__sink sink;        /* where the backend reports: kp__fail and kp__log on this runtime */
    kp__backend *backend; /* the open backend's state */
    const kp__backend_ops *ops; /* and its operations */

    kp__plugin **plugins; /* loaded and rejected, in scan order */
    size_t n_plugins;
    kp_kernel **kernels; /* sorted by name once loading is done */
    size_t n_kernels;
    kp__plugin *runtime_plugin;  /* owner of the kernels registered at run time, or NULL */
    kp__owned_desc *owned_descs; /* their copied descriptors */

    char *kernel_dir;     /* KP_KERNEL_DIR */
    char *cache_dir;      /* program binaries and measured peaks; NULL: no disk cache */
    kp_peak peak;         /* measured or read from the cache; struct_size 0 until then */
    kp__profile *profile; /* KP_PROFILE's per-kernel device times, or NULL */

    struct kp_prepared *prepared; /* live prepared launches, told when a buffer goes away */
    struct kp_graph *graphs;      /* live graphs, likewise */
    pthread_mutex_t lock;         /* kernels' lazy state, launches, the buffer list */
    pthread_mutex_t error_lock;   /* error slots */
    kp__error_slot *errors;
    kp_buffer *buffers;
};

/* ---- errors and logging (error.c, log.c) ---- */

/* Records a message as the last error of this thread for `rt` (NULL: the no-runtime slot) and
 * returns `status`. */
kp_status kp__fail(const kp_runtime *rt, kp_status status, const char *fmt, ...) KP_PRINTF(3, 4);
kp_status kp__failv(const kp_runtime *rt, kp_status status, const char *fmt, va_list ap);
/* Keeps the existing message and prefixes it: "prefix: <old message>". */
kp_status kp__fail_prefix(const kp_runtime *rt, kp_status status, const char *fmt, ...)
    KP_PRINTF(3, 4);
void kp__errors_free(kp_runtime *rt);
/* Fails `fn` with KP_ERR_INVALID_ARG: kernel k was found on another runtime than rt. */
kp_status kp__kernel_foreign(const kp_runtime *rt, const kp_kernel *k, const char *fn);
/* How many messages this thread has recorded so far (any runtime). */
uint64_t kp__fail_count(void);

void kp__log(const kp_runtime *rt, kp_log_level level, const char *fmt, ...) KP_PRINTF(3, 4);
void kp__logv(const kp_runtime *rt, kp_log_level level, const char *fmt, va_list ap);
/* The default sink's level from KP_LOG ("error", "warn", "info", "debug"; default warn). */
kp_log_level kp__log_env_level(void);

/* ---- small utilities (util.c; the stateless ones are in util.h) ---- */
/* getenv unless the runtime ignores the environment; secure_getenv for paths it will load. */
const char *kp__env(const kp_runtime *rt, const char *name);

/* ---- registry (registry.c) ---- */
kp_status kp__registry_add(kp_runtime *rt, kp__plugin *plugin, const kp_kernel_desc *desc);
void kp__registry_finish(kp_runtime *rt);
void kp__registry_free(kp_runtime *rt);
kp_kernel *kp__registry_find(const kp_runtime *rt, const char *name);
/* Builds (or finds built) kernel k's program with its options plus `extra` and the KP_BUILD_*
 * `flags` through the backend's kernel_get, and returns its __kernel `entry`. The caller holds
 * rt->lock or needs no lock; the backend must have kernel_get. */
kp_status kp__kernel_get(kp_runtime *rt, kp_kernel *k, const char *entry, const char *extra,
                         uint32_t flags, kp_clkernel **out);

/* ---- kernels registered at run time (register.c) ---- */
void kp__register_free(kp_runtime *rt);

/* ---- plugin loading (loader.c) ---- */
/* The runtime whose plugin is running init on this thread: where its logs and failures go. */
extern _Thread_local kp_runtime *kp__initializing;
kp_status kp__plugins_load(kp_runtime *rt, const kp_runtime_options *opt);
void kp__plugins_close(kp_runtime *rt);
/* Records why plugin p is refused, logs it as a warning and closes it. */
void kp__plugin_reject(kp_runtime *rt, kp__plugin *p, const char *fmt, ...) KP_PRINTF(3, 4);
/* `rel` resolved against the library's directory (malloc'd), or NULL: that of its own file, or for
 * libkernelport.a linked into a program, the lib directory beside the program's bin directory. */
char *kp__beside_library(const char *rel);
/* kernelport-plugin-scan's work in its own process: loads the plugin at `path` and runs its init
 * as the loader would, writing each step it reaches to `report_fd` (plugin-probe.c reads it). */
void kp__plugin_scan(const char *path, int report_fd);
/* The lines kp__plugin_scan writes, in this order, each before the step it names. */
#define KP__SCAN_STARTED "kernelport-plugin-scan 1"
#define KP__SCAN_LOAD "load"   /* dlopen: the plugin's constructors and the libraries it needs */
#define KP__SCAN_ENTRY "entry" /* calling kp_plugin_entry */
#define KP__SCAN_INIT "init"   /* calling init */
#define KP__SCAN_DONE "done"   /* the plugin's code has returned (or it was refused) */

/* ---- whose code a plugin path runs (plugin-trust.c) ---- */
struct stat;
/* NULL when `real` (a resolved path, stat'ed as `st`: a plugin file, or a directory to scan) and
 * every directory above it belong to root or to the effective user and no one else may write to
 * them, a sticky directory above it excepted; else why not, naming `subject` ("the file") or the
 * directory at fault (malloc'd). The walk stops early at `trusted`, a directory already checked
 * (may be NULL). */
char *kp__path_distrust(const char *real, const struct stat *st, const char *subject,
                        const char *trusted);

/* ---- the out-of-process probe and its verdicts (plugin-probe.c, plugin-verdicts.c) ---- */
/* Vets the `n` plugins found on disk before any is loaded in this process: a plugin new or changed
 * since its last verdict is loaded and initialised by kernelport-plugin-scan in a child process
 * first. Those that crashed there are rejected; the others get their `probe`. */
void kp__plugins_probe(kp_runtime *rt, kp__plugin **plugins, size_t n);

/* ---- host table (host-api.c) ---- */
/* The function table handed to every plugin; static, valid for the life of the process. */
const kp_host_api *kp__host_api(void);

/* ---- tuning (tuning.c) ---- */
/* Chooses every tunable's value (once), then checks them against the compiled entry's limits
 * (once it builds), falling back to less specific entries for values that do not fit. */
kp_status kp__tuning_resolve(kp_runtime *rt, kp_kernel *k);
void kp__tuning_free(kp_kernel *k);
int64_t kp__tuning_get(const kp_kernel *k, const char *name);

/* ---- device choice (device-select.c) ---- */
/* Chooses rt->device_index from a device spec (NULL: the manifest's rules) and sets device_why. */
kp_status kp__device_select(kp_runtime *rt, const char *spec);

/* ---- launching (launch.c) ---- */
/* Validates named arguments against the descriptor and fills `values` (desc->n_params). */
kp_status kp__args_bind(kp_runtime *rt, const kp_kernel *k, const kp_arg *args, size_t n_args,
                        kp_value *values);
/* Runs a bound call: the kernel's check, then its enqueue on the device, or its host reference
 * when `reference` is set or the runtime is on the host device. Takes the runtime's lock. */
kp_status kp__launch_call(kp_runtime *rt, kp_kernel *k, const kp_call *call, int reference,
                          kp_event *event, int depth);
/* Runs k's host reference on arguments whose buffers are in host memory (verification). */
kp_status kp__launch_reference(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n);
/* Nested launch from a plugin (host->launch). */
kp_status kp__launch_nested(kp_launch *parent, const char *name, const kp_arg *args, size_t n);
/* The kernel's `supported` hook on the runtime's device (KP_OK without one, and on the host);
 * the caller holds rt->lock or needs no lock. */
kp_status kp__kernel_supported(kp_runtime *rt, kp_kernel *k);

/* Runs k's check and enqueue with l->capture set, so that every argument and NDRange is recorded
 * into `capture` instead of reaching the device; the caller holds rt->lock. */
kp_status kp__launch_record(kp_runtime *rt, kp_kernel *k, const kp_call *call,
                            kp__capture *capture);

/* ---- prepared launches (prepared.c) ---- */
/* Recording, for host-api.c while l->capture is set: an argument (buf: the buffer it names, or
 * NULL), an NDRange, and a host call that cannot be recorded (KP_ERR_UNSUPPORTED; the prepared
 * launch then runs the plugin's enqueue every time). */
kp_status kp__capture_arg(kp_launch *l, kp_clkernel *ck, uint32_t index, size_t size,
                          const void *value, const kp_buffer *buf);
kp_status kp__capture_ndrange(kp_launch *l, kp_clkernel *ck, uint32_t dims, const size_t *global,
                              const size_t *local);
kp_status kp__capture_refuse(kp_launch *l, const char *what);
/* A buffer is going away (rt->lock held): prepared launches that bound it cannot launch, and
 * those whose recording named it record again. */
void kp__prepared_buffer_gone(kp_runtime *rt, const kp_buffer *buf);
void kp__prepared_free_all(kp_runtime *rt);
/* For graphs, with rt->lock held. Makes p ready to launch: records it when it replays and has no
 * recording for its current arguments and tuning (*recorded_now then 1); fails when a bound
 * buffer was destroyed. */
kp_status kp__prepared_ready(kp_prepared *p, int *recorded_now);
/* Its recorded commands (valid until it records again), or 0 when it has none to replay. */
size_t kp__prepared_commands(const kp_prepared *p, const kp__command **cmds);
/* Why its launches run the plugin's enqueue each time (static text), or NULL. */
const char *kp__prepared_direct(const kp_prepared *p);
/* kp_prepared_launch's work: ready, then the recorded commands or the plugin's enqueue. */
kp_status kp__prepared_run(kp_prepared *p, kp_event *ev);
kp_kernel *kp__prepared_kernel(const kp_prepared *p);
/* Checks what binding `a` in place of its argument would give, changing nothing. */
kp_status kp__prepared_check(const kp_prepared *p, const kp_arg *a);

/* ---- graphs (graph.c) ---- */
/* The graph this thread is recording on rt, or NULL. */
kp_graph *kp__graph_recording(const kp_runtime *rt);
/* What kp_kernel_launch, kp_buffer_copy and kp_buffer_fill do while recording, after their
 * checks. */
kp_status kp__graph_capture_launch(kp_graph *g, kp_kernel *k, const kp_arg *args, size_t n_args,
                                   int wants_event);
kp_status kp__graph_capture_copy(kp_graph *g, const kp_buffer *src, size_t src_offset,
                                 kp_buffer *dst, size_t dst_offset, size_t bytes);
kp_status kp__graph_capture_fill(kp_graph *g, kp_buffer *buf, size_t offset, size_t bytes,
                                 const void *pattern, size_t pattern_size);
/* A buffer is going away (rt->lock held): transfers that use it cannot replay. */
void kp__graph_buffer_gone(kp_runtime *rt, const kp_buffer *buf);
void kp__graph_free_all(kp_runtime *rt);

/* profile.c: KP_PROFILE. open reads the variable (nothing to do when unset); add takes the event
 * of a launch of k that the caller did not ask for; close writes the report and frees it. */
kp_status kp__profile_open(kp_runtime *rt);
void kp__profile_add(kp_runtime *rt, const kp_kernel *k, kp_event *ev);
void kp__profile_close(kp_runtime *rt);

/* ---- buffers (buffer.c) ---- */
kp_status kp__buffer_create_host(kp_runtime *rt, size_t bytes, kp_buffer **out);
void kp__buffers_free(kp_runtime *rt);
/* kp_buffer_copy's and kp_buffer_fill's work once their arguments are checked. */
kp_status kp__buffer_copy_run(kp_runtime *rt, const kp_buffer *src, size_t src_offset,
                              kp_buffer *dst, size_t dst_offset, size_t bytes);
kp_status kp__buffer_fill_run(kp_runtime *rt, kp_buffer *buf, size_t offset, size_t bytes,
                              const void *pattern, size_t pattern_size);

/* The device of this runtime. */
static inline const kp_device_info *kp__device(const kp_runtime *rt)
{
    return &rt->devices[rt->device_index].info;
}

static inline int kp__is_host(const kp_runtime *rt)
{
    return kp__device(rt)->type == KP_DEVICE_HOST;
}

/* Where the backend records the launch's commands; NULL when nobody asked for its timing. */
static inline kp__event_record *kp__launch_events(const kp_launch *l)
{
    return l->event ? &l->event->record : NULL;
}

#endif
