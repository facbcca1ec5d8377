/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport plugin ABI: the only header a plugin includes. */
#ifndef KERNELPORT_PLUGIN_H
#define KERNELPORT_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ABI rules. The loader accepts a plugin when its abi_major equals KP_ABI_MAJOR and its
 * abi_minor is at most KP_ABI_MINOR. Every struct here begins with `struct_size`, holds only
 * fixed-width integers, doubles, pointers and size_t, and only grows at the end; the core reads
 * struct_size before touching a field added in a later minor version. A plugin links nothing from
 * the core: everything it needs comes through the kp_host_api table handed to `init`.
 */
#define KP_ABI_MAJOR 1
/* 1: kp_kernel_desc.describe and .supported, KP_TUNABLE_NO_SEARCH.
 * 2: tensor views (kp_host_api.arg_tensor and the prelude, kp_clargs), build flags
 *    (cl_kernel_build, KP_BUILD_PTX_SM90A), buffer_read, check_shape, kp_kernel_desc.resolve.
 * 3: KP_PARAM_ALIAS_INPUTS (in-place outputs), sample_kernel_user (table-driven plugins).
 * 4: KP_PARAM_NEGATIVE_STRIDES (flipped views). */
#define KP_ABI_MINOR 4

/* Opaque objects the core passes to plugin callbacks. */
typedef struct kp_registrar kp_registrar; /* registration, valid during init */
typedef struct kp_launch kp_launch;       /* one check/enqueue/reference call */
typedef struct kp_sample kp_sample;       /* a set of sample arguments being built */
typedef struct kp_clkernel kp_clkernel;   /* a built OpenCL kernel of this launch's program */

/*
 * Tensors in OpenCL C. Every program the core builds starts with the prelude
 * (kernels/common/prelude.cl), which defines one view type per rank R = 0..8: an int vector
 * (int, int2, int4, int8 or int16) holding the element offset (-1 for an empty tensor), then each
 * dimension's stride, zero-padded; the accessors kp_offset(v), kp_stride(v, d) and kp_empty(v),
 * the index helpers kp_at1..kp_at4, and the horizontal sums kp_hsum2..kp_hsum16. A kernel takes a
 * tensor as two parameters, its buffer and its view: `__global const float *x, const kp_view2 xv`,
 * and the plugin sets both with host->arg_tensor (or kp_clargs_tensor); extents go as int
 * arguments. Offsets and strides are in elements.
 */

/* ------------------------------------------------------------------------------------------ */
/* Kernel descriptors                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Bit for dtype d in kp_param_desc.dtypes. */
#define KP_DT(d) (1u << (d))

enum {
    KP_PARAM_OPTIONAL = 1u << 0, /* may be omitted; ints/floats then take their default */
    /* An output that may be exactly one of the inputs' views (same buffer, offset, shape and
     * strides): in-place use of a kernel whose every output element depends only on the input
     * elements at its own position, read before it is written. Any other overlap is refused.
     * (ABI 1.3) */
    KP_PARAM_ALIAS_INPUTS = 1u << 1,
    /* A tensor that may have negative strides (a flipped view, kp_tensor_flip): the core checks
     * that every element from the lowest to the highest lies in the buffer, and an output's
     * overlap by the absolute strides. Without the flag a negative stride is refused, so a kernel
     * whose code assumes strides >= 0 (a library's leading dimension, unsigned offsets) never
     * sees one. The kernel's views then carry negative strides and an offset that is the element
     * at index 0, not the lowest one. (ABI 1.4) */
    KP_PARAM_NEGATIVE_STRIDES = 1u << 2,
};

typedef struct kp_param_desc {
    const char *name;
    int32_t kind;    /* kp_arg_kind */
    int32_t access;  /* kp_access; KP_ACCESS_IN for ints and floats */
    uint32_t dtypes; /* KP_DT(KP_F32) | ...; tensors only */
    uint32_t flags;  /* KP_PARAM_* */
    int64_t int_default;
    double float_default;
    const char *doc;
} kp_param_desc;

enum {
    /* A workgroup size: checked against the device's and the compiled entry kernel's limits. */
    KP_TUNABLE_WORKGROUP = 1u << 0,
    /* Read at launch only; not passed to the OpenCL compiler as -D NAME=value. */
    KP_TUNABLE_NO_DEFINE = 1u << 1,
    /* A choice of what is computed, not of speed (blas.gemm's precision): `kernelport tune`
     * never searches it and keeps the value the manifest gives. */
    KP_TUNABLE_NO_SEARCH = 1u << 2,
};

/*
 * A tuning parameter. Its value is an integer: one of `allowed` (when n_allowed > 0), else in
 * [min, max]. With `choices` (NULL-terminated names), the manifest may write a choice name and the
 * value is its index; `true`/`false` read as 1/0. Unless KP_TUNABLE_NO_DEFINE, the value is
 * compiled into the kernel's program as -D NAME=value (dots in NAME become underscores).
 */
typedef struct kp_tunable_desc {
    const char *name;
    int64_t default_value;
    const int64_t *allowed;
    uint32_t n_allowed;
    uint32_t flags; /* KP_TUNABLE_* */
    int64_t min, max;
    const char *const *choices;
    const char *doc;
} kp_tunable_desc;

/*
 * The arguments of one call, in the order of the descriptor's params (the core has matched names
 * and filled defaults). `host` is the host address of a tensor's buffer (its byte 0) when the call
 * runs a host reference, NULL otherwise.
 */
typedef struct kp_value {
    kp_tensor tensor;
    int64_t i;
    double f;
    void *host;
    uint32_t present; /* 0 when an optional parameter was omitted */
    uint32_t reserved;
} kp_value;

typedef struct kp_call {
    uint32_t struct_size;
    uint32_t n_args;
    const kp_value *args; /* n_args == the descriptor's n_params */
    const struct kp_kernel_desc *desc;
} kp_call;

/* Host address of element `index` of tensor argument `i` in a reference call. */
#define KP_HOST_PTR(call, i, type)                                                                 \
    ((type *)(call)->args[(i)].host + (call)->args[(i)].tensor.offset)

typedef struct kp_cost {
    uint32_t struct_size;
    double flops; /* floating-point operations (a multiply-add counts 2) */
    double bytes; /* the fewest bytes the kernel must move through device memory */
} kp_cost;

typedef struct kp_kernel_desc {
    uint32_t struct_size; /* sizeof(kp_kernel_desc) */
    const char *name;     /* "family.op": lowercase letters, digits, '_' and one or more '.' */
    const char *summary;  /* one line */
    const kp_param_desc *params;
    uint32_t n_params;
    uint32_t n_tunables;
    const kp_tunable_desc *tunables;
    /* OpenCL C source (NUL-terminated) and its file name; KP_KERNEL_DIR/<source_name> replaces
     * the embedded text while developing. NULL for library-backed kernels. */
    const char *source;
    const char *source_name;
    const char *entry;         /* the main __kernel; its limits bound workgroup tunables */
    const char *build_options; /* extra compiler options, may be NULL */
    /* Validates shapes and values beyond what the core checks; reports with host->fail. (optional)
     */
    kp_status (*check)(const kp_call *call, kp_launch *l);
    /* Sizes the NDRange, sets arguments and enqueues one or several kernels or library calls. */
    kp_status (*enqueue)(const kp_call *call, kp_launch *l);
    /* The same math in plain C on host memory (args[i].host). */
    kp_status (*reference)(const kp_call *call, kp_launch *l);
    /* Builds sample arguments of a named size with host->sample_* (optional: no verify/bench). */
    kp_status (*sample)(kp_sample *s, const char *size);
    /* FLOPs and bytes of a call (optional). */
    void (*cost)(const kp_call *call, kp_cost *out);
    /* NULL-terminated size names for sample(): for verification, and for benchmarks. */
    const char *const *verify_sizes;
    const char *const *bench_sizes;
    /* Verification tolerance |dev - ref| <= atol + rtol * |ref|; `tolerance` overrides per call
     * (optional). */
    double atol, rtol;
    void (*tolerance)(const kp_call *call, double *atol, double *rtol);
    /* Prepares library state ahead of first use (optional; library-backed kernels). */
    kp_status (*warmup)(kp_launch *l);
    void *user; /* free for the plugin; read back with host->kernel_user */
    /* One sentence on which implementation a launch takes on this device and why, for
     * `kernelport explain` (optional; a launch with no call, tuning resolved). Read only when
     * struct_size covers it. */
    kp_status (*describe)(kp_launch *l, char *out, size_t size);
    /* KP_OK when this device can run the kernel at all; otherwise fails with
     * KP_ERR_UNSUPPORTED naming the device (a launch with no call). The core asks it on every
     * device launch after `check` and before `enqueue`, and never builds such a kernel's program
     * for its limits; `kernelport verify`, `bench` and `warmup` skip a kernel that says no,
     * rather than failing it. (optional; read only when struct_size covers it) */
    kp_status (*supported)(kp_launch *l);
    /* Resolves a tunable whose value means "decide on this device" (an `auto` choice, or a value
     * the tunable's doc reserves for it): the core calls it for each tunable when it resolves the
     * kernel's tuning, with the value the manifest or the default gave. Returns NULL to keep that
     * value silently, or a short reason ("rows on CPUs") after writing the value to use to
     * *resolved, which must be allowed too. That value is what is compiled (-D) and what
     * host->tunable returns, and `kernelport explain` shows it with the reason. A reason with
     * *resolved left as it was keeps the value and explains it ("decided per call"). (optional;
     * a launch with no call; ABI 1.2) */
    const char *(*resolve)(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);
} kp_kernel_desc;

/* ------------------------------------------------------------------------------------------ */
/* The host function table                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct kp_host_api {
    uint32_t struct_size;
    uint32_t abi_major, abi_minor;

    /* Registration (during init). The descriptor must live until the plugin is closed (static
     * storage). Errors: KP_ERR_PLUGIN for a malformed descriptor (the reason is recorded). */
    kp_status (*register_kernel)(kp_registrar *reg, const kp_kernel_desc *desc);

    /* Reports a failure of this call: formats the message (the core prefixes the kernel's name)
     * and returns `status`, so `return host->fail(l, KP_ERR_INVALID_ARG, "x: ...");` works. */
    kp_status (*fail)(kp_launch *l, kp_status status, const char *fmt, ...) KP_PRINTF(3, 4);
    /* Logs through the runtime's sink; l may be NULL during init. */
    void (*log)(kp_launch *l, kp_log_level level, const char *fmt, ...) KP_PRINTF(3, 4);

    /* The resolved value of a tunable of this kernel (its default when unknown). */
    int64_t (*tunable)(kp_launch *l, const char *name);
    /* The device this call runs on (the host device for references). */
    const kp_device_info *(*device)(kp_launch *l);

    /* Gets the OpenCL kernel `entry` of this kernel's program, built for this device with the
     * resolved tunables as -D and `extra_options` (may be NULL); cached by the core. Errors:
     * KP_ERR_BUILD with the build log, KP_ERR_NOT_FOUND for a missing entry.
     * The core's own option `-kp-ptx-sm90a` (never passed to the compiler) takes the compiled
     * PTX, raises its `.target sm_90` to sm_90a and deletes every "//KP:" in it, so that inline
     * asm can hold Hopper's sm_90a instructions (wgmma) behind that comment mark; where the
     * program is not PTX for sm_90 it fails with KP_ERR_UNSUPPORTED. */
    kp_status (*cl_kernel)(kp_launch *l, const char *entry, const char *extra_options,
                           kp_clkernel **out);
    /* Sets argument `index` to a tensor's buffer (the cl_mem; pass offsets as separate ints), a
     * plain value of `size` bytes, or `bytes` of local memory. */
    kp_status (*arg_buffer)(kp_launch *l, kp_clkernel *k, uint32_t index, const kp_buffer *buf);
    kp_status (*arg_value)(kp_launch *l, kp_clkernel *k, uint32_t index, size_t size,
                           const void *value);
    kp_status (*arg_local)(kp_launch *l, kp_clkernel *k, uint32_t index, size_t bytes);
    /* Enqueues an NDRange of `dims` (1..3) dimensions; `local` may be NULL. */
    kp_status (*enqueue_ndrange)(kp_launch *l, kp_clkernel *k, uint32_t dims, const size_t *global,
                                 const size_t *local);

    /* A device buffer owned by the runtime for this kernel's slot `slot` (0..15), at least
     * `bytes` long, kept and reused across launches; contents undefined. */
    kp_status (*scratch)(kp_launch *l, uint32_t slot, size_t bytes, kp_buffer **out);
    /* Launches another registered kernel as part of this call (its commands join this call's
     * event); on the host device runs its reference. */
    kp_status (*launch)(kp_launch *l, const char *kernel, const kp_arg *args, size_t n_args);

    /* Raw OpenCL handles for library-backed kernels (cl_context, cl_command_queue,
     * cl_device_id, cl_mem), NULL on the host device. */
    void *(*cl_context)(kp_launch *l);
    void *(*cl_queue)(kp_launch *l);
    void *(*cl_device)(kp_launch *l);
    void *(*cl_mem)(const kp_buffer *buf);
    /* A cl_event slot to hand to a library call that enqueues work; the core keeps the event for
     * timing and releases it. NULL when the launch is not being timed (OpenCL libraries accept a
     * NULL event pointer), so untimed launches create no event. */
    void **(*cl_event_slot)(kp_launch *l);
    /* The descriptor's `user` pointer. */
    void *(*kernel_user)(kp_launch *l);

    /* Sample building. sample_tensor allocates a host tensor named `name` of the given shape,
     * fills it uniformly in [lo, hi) (integers: lo <= v < hi) and returns its host memory in
     * *data for the plugin to overwrite if it wants. Outputs are filled with random values by
     * the core whatever lo and hi say. */
    kp_status (*sample_tensor)(kp_sample *s, const char *name, int32_t dtype, int32_t rank,
                               const int64_t *shape, double lo, double hi, void **data);
    kp_status (*sample_int)(kp_sample *s, const char *name, int64_t value);
    kp_status (*sample_float)(kp_sample *s, const char *name, double value);
    /* The sample's random stream: uniform 64-bit values, reproducible for a given seed. */
    uint64_t (*sample_random)(kp_sample *s);
    /* Makes the already sampled tensor `name` a strided view of its storage (shape, element
     * offset and strides), to verify transposed, padded or offset layouts; strides may be
     * negative for a KP_PARAM_NEGATIVE_STRIDES parameter (ABI 1.4). Elements outside the view are
     * compared too, so a kernel that writes outside its output view fails. */
    kp_status (*sample_view)(kp_sample *s, const char *name, int32_t rank, const int64_t *shape,
                             int64_t offset, const int64_t *strides);
    /* The resolved value of the descriptor's tunable number `index` (as `tunable`, without the
     * search by name: for kernels that read many tunables on every launch). */
    int64_t (*tunable_index)(kp_launch *l, uint32_t index);

    /* ---- ABI 1.2 ---- */

    /* Sets argument `index` to tensor t's buffer and argument `index + 1` to its view as a
     * kp_view<rank> of the prelude: the element offset (-1 when the tensor is empty), then
     * `rank` strides. A tensor of lower rank than `rank` gets leading strides 0 (NumPy's
     * alignment for broadcasting). Errors: KP_ERR_INVALID_ARG (rank below the tensor's or above
     * KP_MAX_RANK, no buffer), KP_ERR_UNSUPPORTED (the view reaches past element 2^31 - 1:
     * kernels index with int). */
    kp_status (*arg_tensor)(kp_launch *l, kp_clkernel *k, uint32_t index, const kp_tensor *t,
                            uint32_t rank);
    /* cl_kernel with build flags (KP_BUILD_*), which ask the core for what the OpenCL compiler
     * cannot be told through options. Errors: as cl_kernel; KP_ERR_UNSUPPORTED when the device
     * cannot honour a flag. */
    kp_status (*cl_kernel_build)(kp_launch *l, const char *entry, const char *extra_options,
                                 uint32_t flags, kp_clkernel **out);
    /* Copies `bytes` of a buffer from byte `offset` into host memory, after the work this
     * launch has enqueued so far (blocking). On a reference run the buffer is in host memory and
     * this is a copy. Errors: KP_ERR_INVALID_ARG (range outside the buffer), KP_ERR_CL. */
    kp_status (*buffer_read)(kp_launch *l, const kp_buffer *buf, size_t offset, size_t bytes,
                             void *dst);
    /* KP_OK when tensor t has rank `rank` and extents `shape` (a negative extent accepts any);
     * else fails with KP_ERR_INVALID_ARG and "NAME: expected PATTERN = [2, 3], got f32[2, 4]",
     * PATTERN the caller's names of the dimensions ("[N, C, H, W]"). For `check`. */
    kp_status (*check_shape)(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                             const int64_t *shape, const char *pattern);

    /* ---- ABI 1.3 ---- */

    /* The `user` pointer of the descriptor whose sample is being built, so one sample function
     * can serve kernels a plugin generates from a table. */
    void *(*sample_kernel_user)(kp_sample *s);
} kp_host_api;

/* Flags of host->cl_kernel_build. */
enum {
    /* Build the program's PTX raised from sm_90 to sm_90a, with every "//KP:" mark deleted, so
     * that inline asm can hold Hopper's sm_90a instructions (wgmma) behind that mark. Only where
     * the OpenCL compiler emits PTX for sm_90 (NVIDIA Hopper); elsewhere KP_ERR_UNSUPPORTED. */
    KP_BUILD_PTX_SM90A = 1u << 0,
};

/*
 * An argument list being set on one OpenCL kernel, in order: each kp_clargs_* call sets the next
 * argument (a tensor sets two). The first failure sticks, later calls do nothing, and
 * kp_clargs_enqueue returns it, so a plugin's enqueue reads as a list:
 *
 *     kp_clargs a = kp_clargs_begin(host, l, "example_axpy", NULL);
 *     kp_clargs_int(&a, n);
 *     kp_clargs_float(&a, alpha);
 *     kp_clargs_tensor(&a, x, 1);
 *     kp_clargs_tensor(&a, y, 1);
 *     return kp_clargs_enqueue(&a, 1, &global, &wg);
 */
typedef struct kp_clargs {
    const kp_host_api *host;
    kp_launch *l;
    kp_clkernel *k;
    uint32_t next;    /* the index of the next argument */
    kp_status status; /* the first failure */
} kp_clargs;

/* An argument list on a kernel the plugin already has (host->cl_kernel or cl_kernel_build). */
static inline kp_clargs kp_clargs_for(const kp_host_api *host, kp_launch *l, kp_clkernel *k)
{
    kp_clargs a;
    a.host = host;
    a.l = l;
    a.k = k;
    a.next = 0;
    a.status = KP_OK;
    return a;
}

/* An argument list on the kernel `entry` of this launch's program (host->cl_kernel). */
static inline kp_clargs kp_clargs_begin(const kp_host_api *host, kp_launch *l, const char *entry,
                                        const char *extra_options)
{
    kp_clargs a = kp_clargs_for(host, l, NULL);
    a.status = host->cl_kernel(l, entry, extra_options, &a.k);
    return a;
}

static inline void kp_clargs_tensor(kp_clargs *a, const kp_tensor *t, uint32_t rank)
{
    if (a->status == KP_OK)
        a->status = a->host->arg_tensor(a->l, a->k, a->next, t, rank);
    a->next += 2;
}

/* A buffer alone (a scratch buffer, or a tensor whose view the kernel does not need). */
static inline void kp_clargs_buffer(kp_clargs *a, const kp_buffer *buf)
{
    if (a->status == KP_OK)
        a->status = a->host->arg_buffer(a->l, a->k, a->next, buf);
    a->next++;
}

/* A plain value of `size` bytes: a struct, an int4, ... */
static inline void kp_clargs_value(kp_clargs *a, size_t size, const void *value)
{
    if (a->status == KP_OK)
        a->status = a->host->arg_value(a->l, a->k, a->next, size, value);
    a->next++;
}

static inline void kp_clargs_int(kp_clargs *a, int32_t v)
{
    kp_clargs_value(a, sizeof v, &v);
}

static inline void kp_clargs_uint(kp_clargs *a, uint32_t v)
{
    kp_clargs_value(a, sizeof v, &v);
}

static inline void kp_clargs_float(kp_clargs *a, float v)
{
    kp_clargs_value(a, sizeof v, &v);
}

/* `bytes` of local memory (a __local pointer parameter). */
static inline void kp_clargs_local(kp_clargs *a, size_t bytes)
{
    if (a->status == KP_OK)
        a->status = a->host->arg_local(a->l, a->k, a->next, bytes);
    a->next++;
}

/* Enqueues the kernel (host->enqueue_ndrange) unless an argument failed; the first failure. */
static inline kp_status kp_clargs_enqueue(kp_clargs *a, uint32_t dims, const size_t *global,
                                          const size_t *local)
{
    if (a->status == KP_OK)
        a->status = a->host->enqueue_ndrange(a->l, a->k, dims, global, local);
    return a->status;
}

/* ------------------------------------------------------------------------------------------ */
/* Plugin entry                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct kp_plugin_info {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t reserved0;
    const char *name; /* a family name: lowercase letters, digits, '_', '-' */
    const char *version;
    const char *description;
    /* Registers kernels. Returning an error rejects the whole plugin; `host` stays valid for as
     * long as the plugin is loaded. Called once by every runtime that loads the plugin (a process
     * with one runtime per device calls it several times on one copy of the module), never by two
     * threads at once: an init may fill static tables without a lock. `host` is the same table
     * at every init: keep it in a static written once (`if (!host) host = api;`), since another
     * runtime's launches may read it while a later init runs. The kernels' callbacks
     * (check, enqueue, reference, ...) have no such guarantee: several runtimes, on several
     * threads, call them at the same time, so any state they share across runtimes needs a lock
     * (the blas plugin's CLBlast overrides hold one). */
    kp_status (*init)(const kp_host_api *host, kp_registrar *reg);
    void *reserved[4];
} kp_plugin_info;

typedef const kp_plugin_info *(*kp_plugin_entry_fn)(void);

#if defined(__GNUC__)
#define KP_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define KP_PLUGIN_EXPORT
#endif

/*
 * Defines the plugin's entry: KP_PLUGIN_DEFINE(example, .name = "example", .version = "1.0",
 * .init = example_init). Built as a loadable module it exports `kp_plugin_entry`; built into the
 * library (KP_STATIC_PLUGINS, which compiles plugins with -DKP_PLUGIN_STATIC) it defines
 * `kp_static_plugin_<ident>`, which the core's generated table lists.
 */
#ifdef KP_PLUGIN_STATIC
#define KP_PLUGIN_DEFINE(ident, ...)                                                               \
    const kp_plugin_info *kp_static_plugin_##ident(void);                                          \
    const kp_plugin_info *kp_static_plugin_##ident(void)                                           \
    {                                                                                              \
        static const kp_plugin_info info = {.struct_size = sizeof(kp_plugin_info),                 \
                                            .abi_major = KP_ABI_MAJOR,                             \
                                            .abi_minor = KP_ABI_MINOR,                             \
                                            __VA_ARGS__};                                          \
        return &info;                                                                              \
    }
#else
#define KP_PLUGIN_DEFINE(ident, ...)                                                               \
    KP_PLUGIN_EXPORT const kp_plugin_info *kp_plugin_entry(void);                                  \
    KP_PLUGIN_EXPORT const kp_plugin_info *kp_plugin_entry(void)                                   \
    {                                                                                              \
        static const kp_plugin_info info = {.struct_size = sizeof(kp_plugin_info),                 \
                                            .abi_major = KP_ABI_MAJOR,                             \
                                            .abi_minor = KP_ABI_MINOR,                             \
                                            __VA_ARGS__};                                          \
        return &info;                                                                              \
    }
#endif

#ifdef __cplusplus
}
#endif

#endif
