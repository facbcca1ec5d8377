/* SPDX-License-Identifier: Apache-2.0 */
/* optim.clip_grad_norm: torch.nn.utils.clip_grad_norm_ over a gradient arena. The L2 norm of all
 * gradients is a two-pass reduction whose order depends on the arena's length alone (the same bits
 * on every run and at every work-group size); the gradients are then scaled by
 * min(1, max_norm / (norm + 1e-6)), or left alone for the optimizer to scale (grad_mul = coef). */
#include <math.h>
#include <string.h>

#include "optim-kernels.h"
#include "optim.h"

#define F32 KP_DT(KP_F32)

static const kp_param_desc params[CL_N] = {
    [CL_GRAD] = {.name = "grad",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_INOUT,
                 .dtypes = F32 | KP_DT(KP_BF16),
                 .doc = "[N] the gradient arena, scaled in place (unless scale_grads = 0)"},
    [CL_NORM] = {.name = "norm",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = F32,
                 .doc = "scalar: the L2 norm of all gradients (inside the segments), before "
                        "clipping"},
    [CL_COEF] = {.name = "coef",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = F32,
                 .flags = KP_PARAM_OPTIONAL,
                 .doc = "scalar: min(1, max_norm / (norm + 1e-6)), for an optimizer's grad_mul"},
    [CL_SEGMENTS] = {.name = "segments",
                     .kind = KP_ARG_KIND_TENSOR,
                     .access = KP_ACCESS_IN,
                     .dtypes = KP_DT(KP_I32),
                     .flags = KP_PARAM_OPTIONAL,
                     .doc = "[n, 2] (offset, length) of each gradient tensor in the arena, sorted "
                            "and disjoint; elements outside them are neither counted nor scaled"},
    [CL_MAX_NORM] = {.name = "max_norm",
                     .kind = KP_ARG_KIND_FLOAT,
                     .access = KP_ACCESS_IN,
                     .doc = "the largest norm the gradients keep"},
    [CL_SCALE_GRADS] = {.name = "scale_grads",
                        .kind = KP_ARG_KIND_INT,
                        .access = KP_ACCESS_IN,
                        .flags = KP_PARAM_OPTIONAL,
                        .int_default = 1,
                        .doc = "1: scale the gradients; 0: only compute norm and coef"},
    [CL_CHECK] = {.name = "check_segments",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .int_default = 1,
                  .doc = "1: read the segment table back and check it (a blocking read); 0: "
                         "trust it"},
};

static const char *const layouts[] = {"auto", "interleaved", "blocked", NULL};
/* optim_tunables' two (WG; RUN, for the scaling pass), then LAYOUT. */
enum { TUNE_LAYOUT = OPTIM_N_TUNABLES, N_TUNABLES };
static const kp_tunable_desc tunables[N_TUNABLES] = {
    OPTIM_TUNABLES,
    /* The order of the sum, so never searched: tuning would change the norm's last bits. */
    [TUNE_LAYOUT] = {.name = "LAYOUT",
                     .default_value = 0,
                     .min = 0,
                     .max = 2,
                     .choices = layouts,
                     .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
                     .doc = "which gradients each lane of the norm's first pass sums: "
                            "interleaved (lane j: groups of four j, j + lanes, ...; coalesced "
                            "on GPUs), blocked (a run of consecutive groups each; CPUs), or auto "
                            "(resolved per device: blocked on CPUs, interleaved elsewhere). The "
                            "norm's bits follow the layout, never the work-group size"},
};

static const char *resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index != TUNE_LAYOUT)
        return optim_resolve(l, index, value, resolved);
    if (value != 0)
        return NULL;
    const kp_device_info *d = optim_host->device(l);
    const int cpu = d && d->type == KP_DEVICE_CPU;
    *resolved = cpu ? 2 : 1;
    return cpu ? "blocked on CPUs" : "interleaved on GPUs and other devices";
}

/* Lanes of the first pass: a multiple of 32 fixed by the length alone, about one per eight groups
 * of four, at most 2^18: a full H100 (132 multiprocessors of 2048 threads) with a 16-byte load in
 * flight each, about the bytes its memory system needs in flight. */
#define MAX_LANES (1 << 18)

static int64_t lanes_of(int64_t n)
{
    int64_t groups = (n + 3) / 4, lanes = (groups + 7) / 8;
    lanes = (lanes + 31) / 32 * 32;
    return lanes < 32 ? 32 : lanes > MAX_LANES ? MAX_LANES : lanes;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    static const int arrays[] = {CL_GRAD};
    int64_t n = 0;
    kp_status st = optim_check_arrays(l, call, arrays, 1, &n);
    if (st == KP_OK)
        st = optim_check_scalar(l, call, CL_NORM);
    if (st == KP_OK)
        st = optim_check_scalar(l, call, CL_COEF);
    if (st == KP_OK && isnan(call->args[CL_MAX_NORM].f))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG, "max_norm: NaN");
    return st == KP_OK ? optim_check_segments(l, call, CL_SEGMENTS, -1, CL_CHECK, n) : st;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    static const int arrays[] = {CL_GRAD};
    const kp_value *a = call->args;
    const kp_tensor *g = &a[CL_GRAD].tensor;
    const int64_t n = g->shape[0], lanes = lanes_of(n), count = lanes / 32;
    const int aligned = optim_aligned(call, arrays, 1);
    size_t wg = (size_t)optim_host->tunable_index(l, OPTIM_TUNE_WG);
    const int blocked = optim_host->tunable_index(l, TUNE_LAYOUT) == 2;
    kp_buffer *partial = NULL;
    kp_status st = optim_host->scratch(l, 0, (size_t)(count + 1) * sizeof(float), &partial);
    if (st != KP_OK)
        return st;
    char options[64];
    optim_build_options(call, -1, CL_GRAD, options, sizeof options);
    size_t global = ((size_t)lanes + wg - 1) / wg * wg;
    kp_clargs c = kp_clargs_begin(optim_host, l, "optim_sumsq", options);
    kp_clargs_int(&c, (int32_t)n);
    kp_clargs_int(&c, aligned);
    kp_clargs_int(&c, (int32_t)lanes);
    kp_clargs_int(&c, blocked);
    kp_clargs_tensor(&c, g, 1);
    optim_clargs_segments(&c, call, CL_SEGMENTS, -1, g);
    kp_clargs_buffer(&c, partial);
    kp_clargs_local(&c, wg * sizeof(float));
    st = kp_clargs_enqueue(&c, 1, &global, &wg);
    if (st != KP_OK)
        return st;
    size_t final_lanes = 256; /* FINAL_LANES of kernels/optim.cl */
    c = kp_clargs_begin(optim_host, l, "optim_norm_final", options);
    kp_clargs_int(&c, (int32_t)count);
    kp_clargs_float(&c, (float)a[CL_MAX_NORM].f);
    kp_clargs_buffer(&c, partial);
    kp_clargs_tensor(&c, &a[CL_NORM].tensor, 1);
    optim_clargs_optional(&c, call, CL_COEF, &a[CL_NORM].tensor, 1);
    st = kp_clargs_enqueue(&c, 1, &final_lanes, &final_lanes);
    if (st != KP_OK || !a[CL_SCALE_GRADS].i || n == 0)
        return st;
    global = optim_global_size(l, n, &wg);
    c = kp_clargs_begin(optim_host, l, "optim_scale", options);
    kp_clargs_int(&c, (int32_t)n);
    kp_clargs_int(&c, aligned);
    kp_clargs_int(&c, (int32_t)count);
    kp_clargs_tensor(&c, g, 1);
    optim_clargs_segments(&c, call, CL_SEGMENTS, -1, g);
    kp_clargs_buffer(&c, partial);
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[CL_GRAD].tensor.shape[0];
    const optim_segments segs = optim_segments_of(call, CL_SEGMENTS, -1);
    double sum = 0, lr_mul, wd_mul;
    for (int64_t i = 0; i < n; i++)
        if (optim_segment_of(&segs, i, &lr_mul, &wd_mul) >= 0) {
            const double g = optim_load(call, CL_GRAD, i);
            sum += g * g;
        }
    const double norm = sqrt(sum), c = (float)a[CL_MAX_NORM].f / (norm + 1e-6);
    const double coef = c > 1 ? 1 : c;
    *KP_HOST_PTR(call, CL_NORM, float) = (float)norm;
    if (a[CL_COEF].present)
        *KP_HOST_PTR(call, CL_COEF, float) = (float)coef;
    for (int64_t i = 0; a[CL_SCALE_GRADS].i && i < n; i++)
        if (optim_segment_of(&segs, i, &lr_mul, &wd_mul) >= 0)
            optim_store(call, CL_GRAD, i, optim_load(call, CL_GRAD, i) * coef);
    return KP_OK;
}

/*
 * Sizes: one element under max_norm (coef 1); a prime length at offset 1 over it; segments with
 * gaps and the coefficient out; bf16 gradients left unscaled (scale_grads 0, for a fused step);
 * "large" (4M) or a number for benchmarks.
 */
static kp_status sample(kp_sample *s, const char *size)
{
    optim_layout lay = {.n = 1009};
    double max_norm = 1.0;
    int coef = 0, scale = 1;
    if (strcmp(size, "one") == 0) {
        lay.n = 1;
        max_norm = 5.0;
    } else if (strcmp(size, "prime") == 0) {
        lay.offset = 1;
    } else if (strcmp(size, "segments") == 0) {
        lay.n = 4133;
        lay.segments = 23;
        coef = 1;
    } else if (strcmp(size, "bf16") == 0) {
        lay.n = 263;
        lay.grad_dtype = KP_BF16;
        coef = 1;
        scale = 0;
    } else if (strcmp(size, "large") == 0) {
        lay.n = (int64_t)1 << 22;
    } else if (!optim_size_number(size, &lay.n)) {
        return KP_ERR_NOT_FOUND;
    }
    kp_status st = optim_sample_array(s, &lay, "grad", lay.grad_dtype, -1, 1);
    if (st == KP_OK)
        st = optim_host->sample_tensor(s, "norm", KP_F32, 0, NULL, 0, 0, NULL);
    if (st == KP_OK && coef)
        st = optim_host->sample_tensor(s, "coef", KP_F32, 0, NULL, 0, 0, NULL);
    if (st == KP_OK)
        st = optim_sample_segments(s, &lay);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "max_norm", max_norm);
    return st == KP_OK ? optim_host->sample_int(s, "scale_grads", scale) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *g = &call->args[CL_GRAD].tensor;
    const double n = (double)g->shape[0], size = (double)kp_dtype_size((kp_dtype)g->dtype);
    /* Read for the norm; read and written again when scaled. */
    out->bytes = n * size * (call->args[CL_SCALE_GRADS].i ? 3 : 1);
    out->flops = n * (call->args[CL_SCALE_GRADS].i ? 3 : 2);
}

/* The f32 sum of squares against the host's double sum: a relative error of about the machine
 * epsilon times the terms each partial adds up in order. Scaled bf16 gradients may round one
 * step apart where the coefficients differ in their last bit. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 1e-7;
    const int rounded = call->args[CL_GRAD].tensor.dtype == KP_BF16 && call->args[CL_SCALE_GRADS].i;
    *rtol = rounded ? 1.0 / 128 : 1e-5;
}

static const char *const verify_sizes[] = {"one", "prime", "segments", "bf16", NULL};
static const char *const bench_sizes[] = {"large", NULL};

static const kp_kernel_desc desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "optim.clip_grad_norm",
    .summary = "torch.nn.utils.clip_grad_norm_ over a gradient arena: the global L2 norm (a "
               "deterministic two-pass reduction), then the gradients scaled",
    .params = params,
    .n_params = CL_N,
    .n_tunables = N_TUNABLES,
    .tunables = tunables,
    .source = kp_kernel_optim_cl,
    .source_name = "optim.cl",
    .entry = "optim_sumsq",
    .check = check,
    .enqueue = enqueue,
    .reference = reference,
    .sample = sample,
    .cost = cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = tolerance,
    .resolve = resolve,
};

kp_status optim_register_clip(const kp_host_api *api, kp_registrar *reg)
{
    return api->register_kernel(reg, &desc);
}
