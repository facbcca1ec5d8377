/* SPDX-License-Identifier: Apache-2.0 */
/* Program builds: per (device, source, options), cached in memory and in the on-disk cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl-build-log.h"
#include "cl-internal.h"
#include "cl-ptx.h"
#include "sha256.h"
#include "util.h"

#define CACHE_FORMAT "kernelport-program-v2"

/* The options a build uses: the kernel's, then the call's extra ones after a space. */
static char *join_options(const kp__build_request *req)
{
    const char *base = req->options ? req->options : "";
    if (!req->extra || !*req->extra)
        return kp__strdup(base);
    return kp__asprintf("%s%s%s", base, *base ? " " : "", req->extra);
}

/* Whether `joined` is what join_options would make of req, without making it: this is asked on
 * every launch. */
static int same_options(const char *joined, const kp__build_request *req)
{
    const char *base = req->options ? req->options : "";
    size_t n = strlen(base);
    if (strncmp(joined, base, n) != 0)
        return 0;
    joined += n;
    if (!req->extra || !*req->extra)
        return *joined == '\0';
    if (*base && *joined++ != ' ')
        return 0;
    return strcmp(joined, req->extra) == 0;
}

static void program_key(const kp__backend *b, const kp__build_request *req, const char *options,
                        uint8_t key[32])
{
    char flag_text[16];
    snprintf(flag_text, sizeof flag_text, "%x", req->flags);
    const char *head[] = {CACHE_FORMAT, b->identity};
    const char *tail[] = {options, flag_text, req->plugin ? req->plugin : "",
                          req->plugin_version ? req->plugin_version : ""};
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    /* The NUL after each field separates them, so ("ab", "c") and ("a", "bc") hash differently. */
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        kp__sha256_update(&h, head[i], strlen(head[i]) + 1);
    for (uint32_t i = 0; i < req->n_text; i++)
        kp__sha256_update(&h, req->text[i], strlen(req->text[i]) + 1);
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++)
        kp__sha256_update(&h, tail[i], strlen(tail[i]) + 1);
    kp__sha256_final(&h, key);
}

/* The program's build log with its locations named by the request's files (cl-build-log.h). */
static char *build_log(cl_program p, cl_device_id d, const kp__build_request *req)
{
    size_t n = 0;
    if (clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
        return kp__strdup("(no build log)");
    char *log = calloc(1, n + 1);
    if (!log)
        return NULL;
    clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    char *mapped = kp__build_log_map(log, req->text, req->n_text);
    if (!mapped)
        return log;
    free(log);
    return mapped;
}

/*
 * KP_BUILD_PTX_SM90A: Hopper's sm_90a instructions (wgmma) are refused in the PTX NVIDIA's OpenCL
 * compiler emits, which targets sm_90. A kernel that asks for the flag writes them behind
 * KP_PTX_SM90A_MARK inside its inline asm; the core takes the compiled PTX, re-targets it
 * (kp__ptx_sm90a) and builds that as the program's binary.
 */

/* A cached binary that no longer loads is only a miss: the source build replaces it. NULL when it
 * does not load, with the reason in `why`. */
static cl_program from_binary(kp__backend *b, const void *bin, size_t size, const char *options,
                              char *why, size_t why_size)
{
    cl_int err, status = CL_SUCCESS;
    const char *call = "clCreateProgramWithBinary";
    const unsigned char *ptr = bin;
    cl_program p = clCreateProgramWithBinary(b->context, 1, &b->device, &size, &ptr, &status, &err);
    if (err == CL_SUCCESS && status != CL_SUCCESS)
        err = status;
    if (err == CL_SUCCESS) {
        call = "clBuildProgram";
        err = clBuildProgram(p, 1, &b->device, options, NULL, NULL);
    }
    if (err == CL_SUCCESS)
        return p;
    if (p)
        clReleaseProgram(p);
    snprintf(why, why_size, "did not load on this device (%s failed: %s)", call,
             kp__cl_error_name(err));
    return NULL;
}

static void store_binary(kp__backend *b, cl_program p, const uint8_t key[32])
{
    size_t size = 0;
    if (!b->disk.dir || !b->store_binaries ||
        clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *bin = malloc(size);
    if (bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS)
        kp__disk_cache_put(&b->disk, key, bin, size);
    free(bin);
}

static kp_status build_failed(kp__backend *b, const kp__build_request *req, cl_program p,
                              cl_int err, const char *what, const char *options)
{
    char *log = build_log(p, b->device, req);
    const kp_device_info *d = &b->info;
    kp_status st = kp__sink_fail(
        &b->sink, err == CL_BUILD_PROGRAM_FAILURE ? KP_ERR_BUILD : KP_ERR_CL,
        "kernel %s: building %s%s failed (%s) on %s (driver %s)\n"
        "options: %s\nbuild log:\n%s",
        req->kernel, what, req->source_name ? req->source_name : "?", kp__cl_error_name(err),
        d->name, d->driver, *options ? options : "(none)", log ? log : "");
    free(log);
    return st;
}

/* The program p (built from source) rebuilt from its PTX raised to sm_90a; p is released. */
static kp_status rebuild_sm90a(kp__backend *b, const kp__build_request *req, const char *options,
                               cl_program *p)
{
    size_t size = 0;
    char *bin = NULL, *ptx = NULL;
    cl_int err = clGetProgramInfo(*p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    if (err == CL_SUCCESS && size > 0 && (bin = calloc(1, size + 1)) != NULL)
        err = clGetProgramInfo(*p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
    clReleaseProgram(*p);
    *p = NULL;
    if (err == CL_SUCCESS && bin)
        ptx = kp__ptx_sm90a(bin);
    free(bin);
    if (!ptx) {
        const kp_device_info *d = &b->info;
        return kp__sink_fail(&b->sink, err != CL_SUCCESS ? KP_ERR_CL : KP_ERR_UNSUPPORTED,
                             "kernel %s: %s asks for sm_90a instructions (KP_BUILD_PTX_SM90A), "
                             "which need a compiler that emits PTX for sm_90; %s (%s, driver %s) "
                             "did not",
                             req->kernel, req->source_name ? req->source_name : "the source",
                             d->name, d->platform, d->driver);
    }
    size_t len = strlen(ptx) + 1;
    const unsigned char *text = (const unsigned char *)ptx;
    cl_int status;
    cl_program q = clCreateProgramWithBinary(b->context, 1, &b->device, &len, &text, &status, &err);
    free(ptx);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clCreateProgramWithBinary", "kernel %s (sm_90a PTX)",
                           req->kernel);
    err = clBuildProgram(q, 1, &b->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        kp_status st = build_failed(b, req, q, err, "the sm_90a PTX of ", options);
        clReleaseProgram(q);
        return st;
    }
    *p = q;
    return KP_OK;
}

/* A compiler may print a bare "N warnings generated." on stderr (PoCL's does); the warnings
 * themselves are in the log, shown here with the kernel and its file for KP_LOG=info. */
static void built_with_messages(kp__backend *b, const kp__build_request *req, cl_program p)
{
    char *log = build_log(p, b->device, req);
    size_t n = log ? strlen(log) : 0;
    while (n && strchr(" \t\r\n", log[n - 1]))
        log[--n] = '\0';
    if (n)
        kp__sink_log(&b->sink, KP_LOG_INFO, "kernel %s: %s built with compiler messages:\n%s",
                     req->kernel, req->source_name ? req->source_name : "its source", log);
    free(log);
}

static kp_status from_source(kp__backend *b, const kp__build_request *req, const char *options,
                             int sm90a, cl_program *out)
{
    cl_int err;
    cl_program p =
        clCreateProgramWithSource(b->context, req->n_text, (const char **)req->text, NULL, &err);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clCreateProgramWithSource", "kernel %s", req->kernel);
    err = clBuildProgram(p, 1, &b->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        kp_status st = build_failed(b, req, p, err, "", options);
        clReleaseProgram(p);
        return st;
    }
    built_with_messages(b, req, p);
    if (sm90a) {
        kp_status st = rebuild_sm90a(b, req, options, &p);
        if (st != KP_OK)
            return st;
    }
    *out = p;
    return KP_OK;
}

/* A cache file that could not be used, and why. A program found under another's name is worth a
 * warning (someone renamed or copied it there); a damaged or outdated file only a note. */
static void log_unusable(kp__backend *b, const kp__build_request *req, const uint8_t key[32],
                         kp_log_level level, const char *why)
{
    char *file = kp__disk_cache_file(&b->disk, key);
    kp__sink_log(&b->sink, level, "kernel %s: the program cache file %s %s; the program is rebuilt",
                 req->kernel, file ? file : "(out of memory)", why);
    free(file);
}

static void log_miss(kp__backend *b, const kp__build_request *req, const uint8_t key[32],
                     kp__cache_miss miss)
{
    switch (miss) {
    case KP__CACHE_ABSENT:
        return;
    case KP__CACHE_DAMAGED:
        log_unusable(b, req, key, KP_LOG_INFO, "was damaged and is deleted");
        return;
    case KP__CACHE_OTHER_FORMAT:
        log_unusable(b, req, key, KP_LOG_INFO,
                     "was in another format (another Kernelport version) and is deleted");
        return;
    case KP__CACHE_OTHER_KEY:
        log_unusable(b, req, key, KP_LOG_WARN,
                     "held another program's entry (renamed or copied there) and is deleted");
        return;
    }
}

static kp_status get_program(kp__backend *b, const kp__build_request *req, const char *options,
                             cl_program *out)
{
    uint8_t key[32];
    program_key(b, req, options, key);
    for (kp__cl_program *p = b->programs; p; p = p->next)
        if (memcmp(p->key, key, 32) == 0) {
            *out = p->program;
            return KP_OK;
        }
    int sm90a = (req->flags & KP_BUILD_PTX_SM90A) != 0;
    cl_program prog = NULL;
    void *bin = NULL;
    size_t size = 0;
    kp__cache_miss miss;
    if (kp__disk_cache_get(&b->disk, key, &bin, &size, &miss)) {
        char why[160];
        prog = from_binary(b, bin, size, options, why, sizeof why);
        free(bin);
        if (prog)
            kp__sink_log(&b->sink, KP_LOG_DEBUG, "kernel %s: program loaded from the disk cache",
                         req->kernel);
        else
            log_unusable(b, req, key, KP_LOG_INFO, why);
    } else {
        log_miss(b, req, key, miss);
    }
    if (!prog) {
        kp_status st = from_source(b, req, options, sm90a, &prog);
        if (st != KP_OK)
            return st;
        store_binary(b, prog, key);
    }
    kp__cl_program *entry = calloc(1, sizeof *entry);
    if (!entry) {
        clReleaseProgram(prog);
        return kp__sink_fail(&b->sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    memcpy(entry->key, key, 32);
    entry->program = prog;
    entry->next = b->programs;
    b->programs = entry;
    *out = prog;
    return KP_OK;
}

kp_status kp__cl_kernel_get(kp__backend *b, const kp__build_request *req, kp_clkernel **out)
{
    const char *entry = req->entry;
    if (!req->n_text)
        return kp__sink_fail(&b->sink, KP_ERR_PLUGIN, "kernel %s has no OpenCL source to build %s",
                             req->kernel, entry);
    /* Keyed by the full options: new tuning values mean another program. */
    for (kp_clkernel *c = b->kernels; c; c = c->next)
        if (c->owner == req->owner && c->flags == req->flags && strcmp(c->entry, entry) == 0 &&
            same_options(c->options, req)) {
            *out = c;
            return KP_OK;
        }
    char *options = join_options(req);
    if (!options)
        return kp__sink_fail(&b->sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    cl_program prog = NULL;
    kp_status st = get_program(b, req, options, &prog);
    if (st != KP_OK) {
        free(options);
        return st;
    }
    cl_int err;
    cl_kernel ck = clCreateKernel(prog, entry, &err);
    if (err != CL_SUCCESS) {
        free(options);
        if (err == CL_INVALID_KERNEL_NAME)
            return kp__sink_fail(&b->sink, KP_ERR_NOT_FOUND,
                                 "kernel %s: %s has no __kernel named %s", req->kernel,
                                 req->source_name ? req->source_name : "the source", entry);
        return kp__cl_fail(&b->sink, err, "clCreateKernel", "kernel %s, entry %s", req->kernel,
                           entry);
    }
    kp_clkernel *c = calloc(1, sizeof *c);
    if (!c || !(c->entry = kp__strdup(entry)) || !(c->name = kp__strdup(req->kernel))) {
        if (c)
            free(c->entry);
        free(c);
        free(options);
        clReleaseKernel(ck);
        return kp__sink_fail(&b->sink, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    c->options = options;
    c->flags = req->flags;
    c->program = prog;
    c->owner = req->owner;
    c->kernel = ck;
    c->next = b->kernels;
    b->kernels = c;
    *out = c;
    return KP_OK;
}

kp_status kp__cl_kernel_limits(kp__backend *b, kp_clkernel *ck, size_t *max_wg, uint64_t *local_mem)
{
    cl_ulong lm = 0;
    cl_int err = clGetKernelWorkGroupInfo(ck->kernel, b->device, CL_KERNEL_WORK_GROUP_SIZE,
                                          sizeof *max_wg, max_wg, NULL);
    if (err == CL_SUCCESS)
        err = clGetKernelWorkGroupInfo(ck->kernel, b->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm,
                                       &lm, NULL);
    if (err != CL_SUCCESS)
        return kp__cl_fail(&b->sink, err, "clGetKernelWorkGroupInfo", "entry %s", ck->entry);
    *local_mem = lm;
    return KP_OK;
}

void kp__cl_programs_free(kp__backend *b)
{
    for (kp_clkernel *c = b->kernels, *next; c; c = next) {
        next = c->next;
        clReleaseKernel(c->kernel);
        free(c->name);
        free(c->entry);
        free(c->options);
        free(c);
    }
    b->kernels = NULL;
    for (kp__cl_program *p = b->programs, *next; p; p = next) {
        next = p->next;
        clReleaseProgram(p->program);
        free(p);
    }
    b->programs = NULL;
}
