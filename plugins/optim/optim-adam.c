/* SPDX-License-Identifier: Apache-2.0 */
/* optim.adam and optim.adamw: PyTorch's Adam and AdamW (bias correction, AMSGrad, maximize) over a
 * whole parameter arena in one launch. */
#include <math.h>
#include <string.h>

#include "optim-kernels.h"
#include "optim.h"

#define F32 KP_DT(KP_F32)
#define ARRAY(idx, nm, acc, dt, fl, dc)                                                            \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_TENSOR,                                                           \
             .access = acc,                                                                        \
             .dtypes = dt,                                                                         \
             .flags = fl,                                                                          \
             .doc = dc}
#define FLOAT(idx, nm, def, dc)                                                                    \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_FLOAT,                                                            \
             .access = KP_ACCESS_IN,                                                               \
             .flags = KP_PARAM_OPTIONAL,                                                           \
             .float_default = def,                                                                 \
             .doc = dc}
#define FLAG(idx, nm, def, dc)                                                                     \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_INT,                                                              \
             .access = KP_ACCESS_IN,                                                               \
             .flags = KP_PARAM_OPTIONAL,                                                           \
             .int_default = def,                                                                   \
             .doc = dc}
#define OPT KP_PARAM_OPTIONAL

#define ADAM_PARAMS(wd_default)                                                                    \
    ARRAY(AD_PARAM, "param", KP_ACCESS_INOUT, F32 | KP_DT(KP_BF16), 0,                             \
          "[N] the parameter arena, updated in place (bf16: through `master`)"),                   \
        ARRAY(AD_GRAD, "grad", KP_ACCESS_IN, F32 | KP_DT(KP_BF16), 0, "[N] the gradients"),        \
        ARRAY(AD_EXP_AVG, "exp_avg", KP_ACCESS_INOUT, F32, 0, "[N] the first moment"),             \
        ARRAY(AD_EXP_AVG_SQ, "exp_avg_sq", KP_ACCESS_INOUT, F32, 0, "[N] the second moment"),      \
        ARRAY(AD_MAX_EXP_AVG_SQ, "max_exp_avg_sq", KP_ACCESS_INOUT, F32, OPT,                      \
              "[N] the largest second moment so far (amsgrad only)"),                              \
        ARRAY(AD_MASTER, "master", KP_ACCESS_INOUT, F32, OPT,                                      \
              "[N] the f32 master copy of bf16 parameters (param then gets it rounded)"),          \
        ARRAY(AD_SEGMENTS, "segments", KP_ACCESS_IN, KP_DT(KP_I32), OPT,                           \
              "[n, 2] (offset, length) of each parameter tensor in the arena, sorted and "         \
              "disjoint; only elements inside one are updated"),                                   \
        ARRAY(AD_SCALES, "scales", KP_ACCESS_IN, F32, OPT,                                         \
              "[n, 2] per segment: lr multiplier, weight_decay multiplier (param groups)"),        \
        ARRAY(AD_GRAD_MUL, "grad_mul", KP_ACCESS_IN, F32, OPT,                                     \
              "scalar: the gradients are multiplied by it first (optim.clip_grad_norm's coef)"),   \
        [AD_STEP] = {.name = "step",                                                               \
                     .kind = KP_ARG_KIND_INT,                                                      \
                     .access = KP_ACCESS_IN,                                                       \
                     .doc = "this step's number, 1 on the first (bias correction)"},               \
        FLOAT(AD_LR, "lr", 1e-3, "learning rate"),                                                 \
        FLOAT(AD_BETA1, "beta1", 0.9, "decay of the first moment"),                                \
        FLOAT(AD_BETA2, "beta2", 0.999, "decay of the second moment"),                             \
        FLOAT(AD_EPS, "eps", 1e-8, "added to the denominator"),                                    \
        FLOAT(AD_WEIGHT_DECAY, "weight_decay", wd_default, "weight decay"),                        \
        FLAG(AD_AMSGRAD, "amsgrad", 0, "1: AMSGrad (needs max_exp_avg_sq)"),                       \
        FLAG(AD_MAXIMIZE, "maximize", 0, "1: ascend the gradient"),                                \
        FLAG(AD_CHECK, "check_segments", 1,                                                        \
             "1: read the segment table back and check it (a blocking read); 0: trust it")

static const kp_param_desc adam_params[AD_N] = {ADAM_PARAMS(0.0)};
static const kp_param_desc adamw_params[AD_N] = {ADAM_PARAMS(1e-2)};

/* The arrays, in the order the kernel's 16-byte accesses need aligned. */
static const int arrays[] = {AD_PARAM,      AD_GRAD,           AD_EXP_AVG,
                             AD_EXP_AVG_SQ, AD_MAX_EXP_AVG_SQ, AD_MASTER};
#define N_ARRAYS (int)(sizeof arrays / sizeof arrays[0])

static int decoupled(const kp_call *call)
{
    return strcmp(call->desc->name, "optim.adamw") == 0;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    int64_t n = 0;
    kp_status st = optim_check_arrays(l, call, arrays, N_ARRAYS, &n);
    const kp_value *a = call->args;
    if (st == KP_OK && a[AD_AMSGRAD].i && !a[AD_MAX_EXP_AVG_SQ].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "max_exp_avg_sq: amsgrad = 1 needs the [N] maximum of the second "
                              "moment");
    if (st == KP_OK && a[AD_PARAM].tensor.dtype == KP_BF16 && !a[AD_MASTER].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "master: bf16 parameters need their [N] f32 master copy");
    if (st == KP_OK && a[AD_PARAM].tensor.dtype != KP_BF16 && a[AD_MASTER].present)
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "master: only bf16 parameters have a master copy (param is f32)");
    if (st == KP_OK && (a[AD_STEP].i < 1 || a[AD_STEP].i > INT32_MAX))
        st = optim_host->fail(l, KP_ERR_INVALID_ARG,
                              "step: %lld is outside 1..2^31 - 1 (1 on the first step)",
                              (long long)a[AD_STEP].i);
    if (st == KP_OK)
        st = optim_check_range(l, call, AD_LR, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_range(l, call, AD_BETA1, 0.0, 1.0, 1);
    if (st == KP_OK)
        st = optim_check_range(l, call, AD_BETA2, 0.0, 1.0, 1);
    if (st == KP_OK)
        st = optim_check_range(l, call, AD_EPS, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_range(l, call, AD_WEIGHT_DECAY, 0.0, INFINITY, 0);
    if (st == KP_OK)
        st = optim_check_scalar(l, call, AD_GRAD_MUL);
    return st == KP_OK ? optim_check_segments(l, call, AD_SEGMENTS, AD_SCALES, AD_CHECK, n) : st;
}

/* PyTorch's bias corrections of step t, in double: lr / (1 - beta1^t) and sqrt(1 - beta2^t). */
static void bias_corrections(const kp_call *call, double *step_size, double *bc2_sqrt)
{
    const double t = (double)call->args[AD_STEP].i;
    *step_size = call->args[AD_LR].f / (1.0 - pow(call->args[AD_BETA1].f, t));
    *bc2_sqrt = sqrt(1.0 - pow(call->args[AD_BETA2].f, t));
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[AD_PARAM].tensor.shape[0];
    if (n == 0)
        return KP_OK;
    double step_size, bc2_sqrt;
    bias_corrections(call, &step_size, &bc2_sqrt);
    char options[64];
    size_t wg, global = optim_global_size(l, n, &wg);
    const kp_tensor *p = &a[AD_PARAM].tensor;
    kp_clargs c =
        kp_clargs_begin(optim_host, l, "optim_adam",
                        optim_build_options(call, AD_PARAM, AD_GRAD, options, sizeof options));
    kp_clargs_int(&c, (int32_t)n);
    kp_clargs_int(&c, optim_aligned(call, arrays, N_ARRAYS));
    kp_clargs_int(&c, decoupled(call));
    kp_clargs_int(&c, (int32_t)a[AD_AMSGRAD].i);
    kp_clargs_int(&c, a[AD_MAXIMIZE].i != 0);
    kp_clargs_float(&c, (float)a[AD_LR].f);
    kp_clargs_float(&c, (float)a[AD_BETA1].f);
    kp_clargs_float(&c, (float)a[AD_BETA2].f);
    kp_clargs_float(&c, (float)a[AD_EPS].f);
    kp_clargs_float(&c, (float)a[AD_WEIGHT_DECAY].f);
    kp_clargs_float(&c, (float)step_size);
    kp_clargs_float(&c, (float)bc2_sqrt);
    kp_clargs_tensor(&c, p, 1);
    kp_clargs_tensor(&c, &a[AD_GRAD].tensor, 1);
    kp_clargs_tensor(&c, &a[AD_EXP_AVG].tensor, 1);
    kp_clargs_tensor(&c, &a[AD_EXP_AVG_SQ].tensor, 1);
    optim_clargs_optional(&c, call, AD_MAX_EXP_AVG_SQ, p, 1);
    optim_clargs_optional(&c, call, AD_MASTER, p, 1);
    optim_clargs_optional(&c, call, AD_GRAD_MUL, p, 1);
    optim_clargs_segments(&c, call, AD_SEGMENTS, AD_SCALES, p);
    return kp_clargs_enqueue(&c, 1, &global, &wg);
}

/* The same update in double, element by element, as the kernel reads the segment table. */
static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const int64_t n = a[AD_PARAM].tensor.shape[0];
    const int adamw = decoupled(call), amsgrad = a[AD_AMSGRAD].i != 0;
    const int bf16 = a[AD_PARAM].tensor.dtype == KP_BF16;
    const double lr = (float)a[AD_LR].f, beta1 = (float)a[AD_BETA1].f, beta2 = (float)a[AD_BETA2].f,
                 eps = (float)a[AD_EPS].f, weight_decay = (float)a[AD_WEIGHT_DECAY].f;
    double step_size, bc2_sqrt;
    bias_corrections(call, &step_size, &bc2_sqrt);
    const double gmul = a[AD_GRAD_MUL].present ? *KP_HOST_PTR(call, AD_GRAD_MUL, const float) : 1;
    const optim_segments segs = optim_segments_of(call, AD_SEGMENTS, AD_SCALES);
    for (int64_t i = 0; i < n; i++) {
        double lr_mul, wd_mul;
        if (optim_segment_of(&segs, i, &lr_mul, &wd_mul) < 0)
            continue;
        double p = optim_load(call, bf16 ? AD_MASTER : AD_PARAM, i);
        double g = optim_load(call, AD_GRAD, i) * gmul;
        double m = optim_load(call, AD_EXP_AVG, i), v = optim_load(call, AD_EXP_AVG_SQ, i);
        if (a[AD_MAXIMIZE].i)
            g = -g;
        const double wd = weight_decay * wd_mul;
        if (adamw)
            p -= lr * lr_mul * wd * p;
        else
            g += wd * p;
        m = beta1 * m + (1 - beta1) * g;
        v = beta2 * v + (1 - beta2) * g * g;
        double second = v;
        if (amsgrad) {
            second = fmax(optim_load(call, AD_MAX_EXP_AVG_SQ, i), v);
            optim_store(call, AD_MAX_EXP_AVG_SQ, i, second);
        }
        p -= step_size * lr_mul * m / (sqrt(second) / bc2_sqrt + eps);
        optim_store(call, AD_EXP_AVG, i, m);
        optim_store(call, AD_EXP_AVG_SQ, i, v);
        if (bf16) {
            optim_store(call, AD_MASTER, i, p);
            p = (float)p;
        }
        optim_store(call, AD_PARAM, i, p);
    }
    return KP_OK;
}

/*
 * Sizes: one element (the first step); a prime length at offset 1 (the unaligned path); segments
 * of odd lengths with gaps and per-segment multipliers, the gradients scaled by grad_mul;
 * AMSGrad maximizing; bf16 parameters and gradients through an f32 master, in segments; a
 * 4M-element arena for benchmarks ("large"), or any length given as a number.
 */
static kp_status sample(kp_sample *s, const char *size)
{
    optim_layout lay = {.n = 1009};
    int amsgrad = 0, maximize = 0, gmul = 0, step = 3;
    if (strcmp(size, "one") == 0) {
        lay.n = 1;
        step = 1;
    } else if (strcmp(size, "prime") == 0) {
        lay.offset = 1;
    } else if (strcmp(size, "segments") == 0) {
        lay.n = 301;
        lay.segments = 11;
        lay.scales = 1;
        gmul = 1;
    } else if (strcmp(size, "amsgrad") == 0) {
        lay.n = 4133;
        amsgrad = maximize = 1;
        step = 1000;
    } else if (strcmp(size, "bf16") == 0) {
        lay.n = 263;
        lay.param_dtype = lay.grad_dtype = KP_BF16;
        lay.segments = 5;
    } else if (strcmp(size, "large") == 0) {
        lay.n = (int64_t)1 << 22;
    } else if (!optim_size_number(size, &lay.n)) {
        return KP_ERR_NOT_FOUND;
    }
    kp_status st = optim_sample_array(s, &lay, "param", lay.param_dtype, -1, 1);
    if (st == KP_OK)
        st = optim_sample_array(s, &lay, "grad", lay.grad_dtype, -1, 1);
    if (st == KP_OK)
        st = optim_sample_array(s, &lay, "exp_avg", 0, -0.5, 0.5);
    /* The second moment is never negative; from 0.01 the update stays well conditioned. */
    if (st == KP_OK)
        st = optim_sample_array(s, &lay, "exp_avg_sq", 0, 0.01, 1);
    if (st == KP_OK && amsgrad)
        st = optim_sample_array(s, &lay, "max_exp_avg_sq", 0, 0.01, 1);
    if (st == KP_OK && lay.param_dtype == KP_BF16)
        st = optim_sample_array(s, &lay, "master", 0, -1, 1);
    if (st == KP_OK)
        st = optim_sample_segments(s, &lay);
    if (st == KP_OK && gmul)
        st = optim_host->sample_tensor(s, "grad_mul", KP_F32, 0, NULL, 0.25, 0.75, NULL);
    if (st == KP_OK)
        st = optim_host->sample_int(s, "step", step);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "lr", 0.01);
    if (st == KP_OK)
        st = optim_host->sample_float(s, "weight_decay", 0.1);
    if (st == KP_OK)
        st = optim_host->sample_int(s, "amsgrad", amsgrad);
    return st == KP_OK ? optim_host->sample_int(s, "maximize", maximize) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp_value *a = call->args;
    const double n = (double)a[AD_PARAM].tensor.shape[0];
    const double p = (double)kp_dtype_size((kp_dtype)a[AD_PARAM].tensor.dtype);
    const double g = (double)kp_dtype_size((kp_dtype)a[AD_GRAD].tensor.dtype);
    /* param read and written (bf16: written, its master read and written), grad read, each
     * moment read and written. */
    double bytes = (a[AD_MASTER].present ? p + 8 : 2 * p) + g + 16;
    if (a[AD_AMSGRAD].i)
        bytes += 8;
    out->bytes = n * bytes;
    out->flops = n * 16;
}

/* bf16 parameters are compared after rounding: one bf16 step of theirs may differ where the
 * master copies differ in their last bit. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 2e-6;
    *rtol = call->args[AD_PARAM].tensor.dtype == KP_BF16 ? 1.0 / 128 : 2e-6;
}

static const char *const verify_sizes[] = {"one", "prime", "segments", "amsgrad", "bf16", NULL};
static const char *const bench_sizes[] = {"large", NULL};

#define ADAM_DESC(nm, sum, prm)                                                                    \
    {                                                                                              \
        .struct_size = sizeof(kp_kernel_desc), .name = nm, .summary = sum, .params = prm,          \
        .n_params = AD_N, .n_tunables = OPTIM_N_TUNABLES, .tunables = optim_tunables,              \
        .source = kp_kernel_optim_cl, .source_name = "optim.cl", .entry = "optim_adam",            \
        .check = check, .enqueue = enqueue, .reference = reference, .sample = sample,              \
        .cost = cost, .verify_sizes = verify_sizes, .bench_sizes = bench_sizes,                    \
        .tolerance = tolerance, .resolve = optim_resolve,                                          \
    }

static const kp_kernel_desc kernels[] = {
    ADAM_DESC("optim.adam",
              "PyTorch's Adam over a parameter arena in one launch (L2 weight decay, AMSGrad)",
              adam_params),
    ADAM_DESC("optim.adamw",
              "PyTorch's AdamW over a parameter arena in one launch (decoupled weight decay, "
              "AMSGrad)",
              adamw_params),
};

kp_status optim_register_adam(const kp_host_api *api, kp_registrar *reg)
{
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, &kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
