/* SPDX-License-Identifier: Apache-2.0 */
/* optim.ema: the exponential moving average of a parameter arena (PyTorch's
 * AveragedModel(multi_avg_fn=get_ema_multi_avg_fn(decay)); with warmup, TensorFlow's
 * ExponentialMovingAverage with num_updates) in one launch. */
#include <math.h>
#include <string.h>

#include "optim-kernels.h"
#include "optim.h"

static const kp_param_desc params[EM_N] = {
    [EM_AVERAGED] = {.name = "averaged",
                     .kind = KP_ARG_KIND_TENSOR,
                     .access = KP_ACCESS_INOUT,
                     .dtypes = KP_DT(KP_F32),
                     .doc = "[N] the average, updated in place (not read on step 1)"},
    [EM_PARAM] = {.name = "param",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_IN,
                  .dtypes = KP_DT(KP_F32) | KP_DT(KP_BF16),
                  .doc = "[N] the parameter arena"},
    [EM_STEP] = {.name = "step",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .doc = "this update's number, 1 on the first (which copies param)"},
    [EM_DECAY] = {.name = "decay",
                  .kind = KP_ARG_KIND_FLOAT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .float_default = 0.999,
                  .doc = "the average keeps decay of itself and takes 1 - decay of param"},
    [EM_WARMUP] = {.name = "warmup",
                   .kind = KP_ARG_KIND_INT,
                   .access = KP_ACCESS_IN,
                   .flags = KP_PARAM_OPTIONAL,
                   .doc = "1: update `step` uses min(decay, (1 + step) / (10 + step)), so the "
                          "first updates weigh more (TensorFlow's num_updates)"},
};

static const int arrays[] = {EM_AVERAGED, EM_PARAM};
#define N_ARRAYS (int)(sizeof arrays / sizeof arrays[0])

/* The weight of param in update `step` (1 - the decay used), in float as the kernel gets it. */
static float param_weight(const kp_call *call)
{
    const kp_value *a = call->args;
    double decay = a[EM_DECAY].f;
    if (a[EM_WARMUP].i) {
        const double t = (double)a[EM_STEP].i;
        decay = fmin(decay, (1 + t) / (10 + t));
    }
    return (float)(1.0 - decay);
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    int64_t n = 0;
    kp_status st = optim_check_arrays(l, call, arrays, N_ARRAYS, &n);
    const kp_value *a = call->args;
    if (st == KP_OK && (a[EM_STEP].i < 1 || a[EM_STEP].i > INT32_MAX))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "step: %lld is outside 1..2^31 - 1 (1 on the first update)",
                              (long long)a[EM_STEP].i);
    if (st == KP_OK)
        st = optim_check_range(l, call, EM_DECAY, 0.0, 1.0, 0);
    if (st == KP_OK && (a[EM_WARMUP].i < 0 || a[EM_WARMUP].i > 1))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG, "warmup: %lld is neither 0 nor 1",
                              (long long)a[EM_WARMUP].i);
    return st;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[EM_PARAM].tensor.shape[0];
    if (n == 0)
        return KP_OK;
    char options[64];
    size_t wg, global = optim_global_size(l, n, &wg);
    kp_clargs c =
        kp_clargs_begin(optim_host, l, "optim_ema",
                        optim_build_options(call, EM_PARAM, EM_AVERAGED, options, sizeof options));
    kp_clargs_int(&c, (int32_t)n);
    kp_clargs_int(&c, optim_aligned(call, arrays, N_ARRAYS));
    kp_clargs_int(&c, a[EM_STEP].i == 1);
    kp_clargs_float(&c, param_weight(call));
    kp_clargs_tensor(&c, &a[EM_AVERAGED].tensor, 1);
    kp_clargs_tensor(&c, &a[EM_PARAM].tensor, 1);
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    (void)l;
    const int64_t n = call->args[EM_PARAM].tensor.shape[0];
    const double w = param_weight(call);
    const int first = call->args[EM_STEP].i == 1;
    for (int64_t i = 0; i < n; i++) {
        const double p = optim_load(call, EM_PARAM, i);
        const double old = first ? p : optim_load(call, EM_AVERAGED, i);
        optim_store(call, EM_AVERAGED, i, old + w * (p - old));
    }
    return KP_OK;
}

/*
 * Sizes: one element on the first update (a copy); a prime length at offset 1 (the unaligned
 * path) past it; bf16 parameters with warmup; "large" (4M) or a number for benchmarks.
 */
static kp_status sample(kp_sample *s, const char *size)
{
    optim_layout lay = {.n = 1009};
    int step = 7, warmup = 0;
    if (strcmp(size, "one") == 0) {
        lay.n = 1;
        step = 1;
    } else if (strcmp(size, "prime") == 0) {
        lay.offset = 1;
    } else if (strcmp(size, "bf16") == 0) {
        lay.n = 263;
        lay.param_dtype = KP_BF16;
        warmup = 1;
    } else if (strcmp(size, "large") == 0) {
        lay.n = (int64_t)1 << 22;
    } else if (!optim_size_number(size, &lay.n)) {
        return KP_ERR_NOT_FOUND;
    }
    kp_status st = optim_sample_array(s, &lay, "averaged", 0, -1, 1);
    if (st == KP_OK)
        st = optim_sample_array(s, &lay, "param", lay.param_dtype, -1, 1);
    if (st == KP_OK)
        st = optim_host->sample_int(s, "step", step);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "decay", 0.9);
    return st == KP_OK ? optim_host->sample_int(s, "warmup", warmup) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp_value *a = call->args;
    const double n = (double)a[EM_PARAM].tensor.shape[0];
    const double p = (double)kp_dtype_size((kp_dtype)a[EM_PARAM].tensor.dtype);
    out->bytes = n * (p + (a[EM_STEP].i == 1 ? 4 : 8));
    out->flops = n * 3;
}

static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    (void)call;
    *atol = 1e-6;
    *rtol = 1e-6;
}

static const char *const verify_sizes[] = {"one", "prime", "bf16", NULL};
static const char *const bench_sizes[] = {"large", NULL};

static const kp_kernel_desc desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "optim.ema",
    .summary = "the exponential moving average of a parameter arena in one launch (PyTorch's "
               "AveragedModel with get_ema_multi_avg_fn)",
    .params = params,
    .n_params = EM_N,
    .n_tunables = OPTIM_N_TUNABLES,
    .tunables = optim_tunables,
    .resolve = optim_resolve,
    .source = kp_kernel_optim_cl,
    .source_name = "optim.cl",
    .entry = "optim_ema",
    .check = check,
    .enqueue = enqueue,
    .reference = reference,
    .sample = sample,
    .cost = cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = tolerance,
};

kp_status optim_register_ema(const kp_host_api *api, kp_registrar *reg)
{
    return api->register_kernel(reg, &desc);
}
