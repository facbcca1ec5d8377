/* SPDX-License-Identifier: Apache-2.0 */
/* optim.sgd: PyTorch's SGD (momentum, dampening, Nesterov, weight decay, maximize) over a whole
 * parameter arena in one launch. */
#include <math.h>
#include <string.h>

#include "optim-kernels.h"
#include "optim.h"

#define F32 KP_DT(KP_F32)
#define OPT KP_PARAM_OPTIONAL

static const kp_param_desc params[SG_N] = {
    [SG_PARAM] = {.name = "param",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_INOUT,
                  .dtypes = F32 | KP_DT(KP_BF16),
                  .doc = "[N] the parameter arena, updated in place (bf16: through `master`)"},
    [SG_GRAD] = {.name = "grad",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = F32 | KP_DT(KP_BF16),
                 .doc = "[N] the gradients"},
    [SG_BUF] = {.name = "momentum_buffer",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_INOUT,
                .dtypes = F32,
                .flags = OPT,
                .doc = "[N] the momentum (needed when momentum != 0; set from the gradients on "
                       "step 1)"},
    [SG_MASTER] = {.name = "master",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_INOUT,
                   .dtypes = F32,
                   .flags = OPT,
                   .doc = "[N] the f32 master copy of bf16 parameters (param then gets it "
                          "rounded)"},
    [SG_SEGMENTS] = {.name = "segments",
                     .kind = KP_ARG_KIND_TENSOR,
                     .access = KP_ACCESS_IN,
                     .dtypes = KP_DT(KP_I32),
                     .flags = OPT,
                     .doc = "[n, 2] (offset, length) of each parameter tensor in the arena, "
                            "sorted and disjoint; only elements inside one are updated"},
    [SG_SCALES] = {.name = "scales",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_IN,
                   .dtypes = F32,
                   .flags = OPT,
                   .doc = "[n, 2] per segment: lr multiplier, weight_decay multiplier"},
    [SG_GRAD_MUL] = {.name = "grad_mul",
                     .kind = KP_ARG_KIND_TENSOR,
                     .access = KP_ACCESS_IN,
                     .dtypes = F32,
                     .flags = OPT,
                     .doc = "scalar: the gradients are multiplied by it first "
                            "(optim.clip_grad_norm's coef)"},
    [SG_STEP] = {.name = "step",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .doc = "this step's number, 1 on the first (the momentum starts as the "
                        "gradient)"},
    [SG_LR] = {.name = "lr",
               .kind = KP_ARG_KIND_FLOAT,
               .access = KP_ACCESS_IN,
               .flags = OPT,
               .float_default = 1e-3,
               .doc = "learning rate"},
    [SG_MOMENTUM] = {.name = "momentum",
                     .kind = KP_ARG_KIND_FLOAT,
                     .access = KP_ACCESS_IN,
                     .flags = OPT,
                     .doc = "momentum factor (0: none)"},
    [SG_DAMPENING] = {.name = "dampening",
                      .kind = KP_ARG_KIND_FLOAT,
                      .access = KP_ACCESS_IN,
                      .flags = OPT,
                      .doc = "dampening of the momentum"},
    [SG_WEIGHT_DECAY] = {.name = "weight_decay",
                         .kind = KP_ARG_KIND_FLOAT,
                         .access = KP_ACCESS_IN,
                         .flags = OPT,
                         .doc = "weight decay (L2, added to the gradient)"},
    [SG_NESTEROV] = {.name = "nesterov",
                     .kind = KP_ARG_KIND_INT,
                     .access = KP_ACCESS_IN,
                     .flags = OPT,
                     .doc = "1: Nesterov momentum (momentum > 0, dampening 0)"},
    [SG_MAXIMIZE] = {.name = "maximize",
                     .kind = KP_ARG_KIND_INT,
                     .access = KP_ACCESS_IN,
                     .flags = OPT,
                     .doc = "1: ascend the gradient"},
    [SG_CHECK] = {.name = "check_segments",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = OPT,
                  .int_default = 1,
                  .doc = "1: read the segment table back and check it (a blocking read); 0: "
                         "trust it"},
};

static const int arrays[] = {SG_PARAM, SG_GRAD, SG_BUF, SG_MASTER};
#define N_ARRAYS (int)(sizeof arrays / sizeof arrays[0])

static int has_momentum(const kp_call *call)
{
    return call->args[SG_MOMENTUM].f != 0.0;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    int64_t n = 0;
    kp_status st = optim_check_arrays(l, call, arrays, N_ARRAYS, &n);
    const kp_value *a = call->args;
    if (st == KP_OK && has_momentum(call) && !a[SG_BUF].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "momentum_buffer: momentum = %g needs the [N] momentum buffer",
                              a[SG_MOMENTUM].f);
    if (st == KP_OK && a[SG_NESTEROV].i && (a[SG_MOMENTUM].f <= 0 || a[SG_DAMPENING].f != 0))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "nesterov: Nesterov momentum needs momentum > 0 and dampening 0 "
                              "(momentum %g, dampening %g)",
                              a[SG_MOMENTUM].f, a[SG_DAMPENING].f);
    if (st == KP_OK && a[SG_PARAM].tensor.dtype == KP_BF16 && !a[SG_MASTER].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "master: bf16 parameters need their [N] f32 master copy");
    if (st == KP_OK && a[SG_PARAM].tensor.dtype != KP_BF16 && a[SG_MASTER].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "master: only bf16 parameters have a master copy (param is f32)");
    if (st == KP_OK && (a[SG_STEP].i < 1 || a[SG_STEP].i > INT32_MAX))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "step: %lld is outside 1..2^31 - 1 (1 on the first step)",
                              (long long)a[SG_STEP].i);
    if (st == KP_OK)
        st = optim_check_range(l, call, SG_LR, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_range(l, call, SG_MOMENTUM, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_range(l, call, SG_WEIGHT_DECAY, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_scalar(l, call, SG_GRAD_MUL);
    return st == KP_OK ? optim_check_segments(l, call, SG_SEGMENTS, SG_SCALES, SG_CHECK, n) : st;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[SG_PARAM].tensor.shape[0];
    if (n == 0)
        return KP_OK;
    char options[64];
    size_t wg, global = optim_global_size(l, n, &wg);
    const kp_tensor *p = &a[SG_PARAM].tensor;
    kp_clargs c =
        kp_clargs_begin(optim_host, l, "optim_sgd",
                        optim_build_options(call, SG_PARAM, SG_GRAD, options, sizeof options));
    kp_clargs_int(&c, (int32_t)n);
    kp_clargs_int(&c, optim_aligned(call, arrays, N_ARRAYS));
    kp_clargs_int(&c, a[SG_STEP].i == 1);
    kp_clargs_int(&c, a[SG_NESTEROV].i != 0);
    kp_clargs_int(&c, a[SG_MAXIMIZE].i != 0);
    kp_clargs_float(&c, (float)a[SG_LR].f);
    kp_clargs_float(&c, (float)a[SG_MOMENTUM].f);
    kp_clargs_float(&c, (float)a[SG_DAMPENING].f);
    kp_clargs_float(&c, (float)a[SG_WEIGHT_DECAY].f);
    kp_clargs_tensor(&c, p, 1);
    kp_clargs_tensor(&c, &a[SG_GRAD].tensor, 1);
    /* Without momentum the buffer is not touched, as PyTorch keeps none. */
    if (has_momentum(call)) {
        kp_clargs_tensor(&c, &a[SG_BUF].tensor, 1);
    } else {
        kp_tensor none = kp_tensor_1d(p->buffer, (kp_dtype)p->dtype, 0);
        kp_clargs_tensor(&c, &none, 1);
    }
    optim_clargs_optional(&c, call, SG_MASTER, p, 1);
    optim_clargs_optional(&c, call, SG_GRAD_MUL, p, 1);
    optim_clargs_segments(&c, call, SG_SEGMENTS, SG_SCALES, p);
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[SG_PARAM].tensor.shape[0];
    const int bf16 = a[SG_PARAM].tensor.dtype == KP_BF16, momentum_on = has_momentum(call);
    const double lr = (float)a[SG_LR].f, momentum = (float)a[SG_MOMENTUM].f,
                 dampening = (float)a[SG_DAMPENING].f, weight_decay = (float)a[SG_WEIGHT_DECAY].f;
    const double gmul = a[SG_GRAD_MUL].present ? *KP_HOST_PTR(call, SG_GRAD_MUL, const float) : 1;
    const optim_segments segs = optim_segments_of(call, SG_SEGMENTS, SG_SCALES);
    for (int64_t i = 0; i < n; i++) {
        double lr_mul, wd_mul;
        if (optim_segment_of(&segs, i, &lr_mul, &wd_mul) < 0)
            continue;
        double p = optim_load(call, bf16 ? SG_MASTER : SG_PARAM, i);
        double g = optim_load(call, SG_GRAD, i) * gmul;
        if (a[SG_MAXIMIZE].i)
            g = -g;
        g += weight_decay * wd_mul * p;
        if (momentum_on) {
            double b = g;
            if (a[SG_STEP].i != 1)
                b = momentum * optim_load(call, SG_BUF, i) + (1 - dampening) * g;
            optim_store(call, SG_BUF, i, b);
            g = a[SG_NESTEROV].i ? g + momentum * b : b;
        }
        p -= lr * lr_mul * g;
        if (bf16) {
            optim_store(call, SG_MASTER, i, p);
            p = (float)p;
        }
        optim_store(call, SG_PARAM, i, p);
    }
    return KP_OK;
}

/*
 * Sizes: one element without momentum; a prime length at offset 1 with momentum, dampening and
 * weight decay past the first step; Nesterov on its first step in segments with multipliers and
 * grad_mul; bf16 parameters through an f32 master with momentum, maximizing; "large" (4M) or a
 * number for benchmarks (momentum 0.9).
 */
static kp_status sample(kp_sample *s, const char *size)
{
    optim_layout lay = {.n = 1009};
    double momentum = 0.9, dampening = 0, weight_decay = 0.01;
    int nesterov = 0, maximize = 0, gmul = 0, step = 2;
    if (strcmp(size, "one") == 0) {
        lay.n = 1;
        momentum = 0;
        step = 1;
    } else if (strcmp(size, "prime") == 0) {
        lay.offset = 1;
        dampening = 0.1;
    } else if (strcmp(size, "nesterov") == 0) {
        lay.n = 301;
        lay.segments = 11;
        lay.scales = 1;
        nesterov = gmul = 1;
        step = 1;
    } else if (strcmp(size, "bf16") == 0) {
        lay.n = 263;
        lay.param_dtype = lay.grad_dtype = KP_BF16;
        maximize = 1;
    } else if (strcmp(size, "large") == 0) {
        lay.n = (int64_t)1 << 22;
    } else if (!optim_size_number(size, &lay.n)) {
        return KP_ERR_NOT_FOUND;
    }
    kp_status st = optim_sample_array(s, &lay, "param", lay.param_dtype, -1, 1);
    if (st == KP_OK)
        st = optim_sample_array(s, &lay, "grad", lay.grad_dtype, -1, 1);
    if (st == KP_OK && momentum != 0)
        st = optim_sample_array(s, &lay, "momentum_buffer", 0, -1, 1);
    if (st == KP_OK && lay.param_dtype == KP_BF16)
        st = optim_sample_array(s, &lay, "master", 0, -1, 1);
    if (st == KP_OK)
        st = optim_sample_segments(s, &lay);
    if (st == KP_OK && gmul)
        st = optim_host->sample_tensor(s, "grad_mul", KP_F32, 0, NULL, 0.25, 0.75, NULL);
    if (st == KP_OK)
        st = optim_host->sample_int(s, "step", step);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "lr", 0.05);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "momentum", momentum);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "dampening", dampening);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "weight_decay", weight_decay);
    if (st == KP_OK)
        st = optim_host->sample_int(s, "nesterov", nesterov);
    return st == KP_OK ? optim_host->sample_int(s, "maximize", maximize) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp_value *a = call->args;
    const double n = (double)a[SG_PARAM].tensor.shape[0];
    const double p = (double)kp_dtype_size((kp_dtype)a[SG_PARAM].tensor.dtype);
    const double g = (double)kp_dtype_size((kp_dtype)a[SG_GRAD].tensor.dtype);
    double bytes = (a[SG_MASTER].present ? p + 8 : 2 * p) + g;
    if (has_momentum(call))
        bytes += a[SG_STEP].i == 1 ? 4 : 8;
    out->bytes = n * bytes;
    out->flops = n * 6;
}

static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 1e-6;
    *rtol = call->args[SG_PARAM].tensor.dtype == KP_BF16 ? 1.0 / 128 : 1e-6;
}

static const char *const verify_sizes[] = {"one", "prime", "nesterov", "bf16", NULL};
static const char *const bench_sizes[] = {"large", NULL};

static const kp_kernel_desc desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "optim.sgd",
    .summary = "PyTorch's SGD over a parameter arena in one launch (momentum, dampening, "
               "Nesterov, weight decay)",
    .params = params,
    .n_params = SG_N,
    .n_tunables = OPTIM_N_TUNABLES,
    .tunables = optim_tunables,
    .resolve = optim_resolve,
    .source = kp_kernel_optim_cl,
    .source_name = "optim.cl",
    .entry = "optim_sgd",
    .check = check,
    .enqueue = enqueue,
    .reference = reference,
    .sample = sample,
    .cost = cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = tolerance,
};

kp_status optim_register_sgd(const kp_host_api *api, kp_registrar *reg)
{
    return api->register_kernel(reg, &desc);
}
