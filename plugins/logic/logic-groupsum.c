/* SPDX-License-Identifier: Apache-2.0 */
/* logic.groupsum, its backward and its packed variant: class scores from groups of gates. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "logic-kernels.h"
#include "logic.h"

#define F32 KP_DT(KP_F32)

/* WG for all three; VW for the float ones (groupsum_packed lists only the first). */
static const kp_tunable_desc tunables[] = {
    {
        .name = "WG",
        .default_value = 64,
        .allowed = logic_pow2_256,
        .n_allowed = 9,
        .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
        .doc = "work-items along the batch (packed: along the words) per work-group",
    },
    LOGIC_VW_TUNABLE,
};

static const kp_param_desc tau_param = {.name = "tau",
                                        .kind = KP_ARG_KIND_FLOAT,
                                        .access = KP_ACCESS_IN,
                                        .flags = KP_PARAM_OPTIONAL,
                                        .float_default = 1.0,
                                        .doc = "temperature: sums are divided by it (> 0)"};

/* G = K S: every class sums S contiguous gates. */
static kp_status check_groups(kp_launch *l, const char *gname, int64_t G, const char *kname,
                              int64_t K, double tau)
{
    if (K < 1 || G % K != 0)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "%s: its %lld rows do not split evenly into the %lld classes "
                                "of %s",
                                gname, (long long)G, (long long)K, kname);
    if (!(tau > 0) || !isfinite(tau))
        return logic_host->fail(l, KP_ERR_INVALID_ARG, "tau: %g is not a positive number", tau);
    return KP_OK;
}

/* {G, K, N}. */
static const char *const names[] = {"one", "prime", "classes", "views", NULL};
static const int64_t dims[][3] = {{1, 1, 1}, {3 * 13, 3, 97}, {1000, 10, 75}, {21, 7, 45}};
static const char *const bench_sizes[] = {"64000x10x1024", NULL};

static int sample_dims(const char *name, int64_t d[3])
{
    int n = logic_sample_dims(name, names, dims, d);
    return n == 3 && d[0] % d[1] == 0;
}

/* ---- logic.groupsum -------------------------------------------------------------------------- */

static const kp_param_desc sum_params[] = {
    [GS_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[G, N] a layer's outputs"},
    [GS_OUT] = {.name = "out",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[K, N] class scores: out[k] = (y[k S] + ... + y[k S + S - 1]) / tau"},
    [GS_TAU] = tau_param,
};

static kp_status sum_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[GS_Y].tensor, *out = &call->args[GS_OUT].tensor;
    kp_status st = logic_expect(l, "y", y, 2, (int64_t[]){-1, -1}, "[G, N]");
    if (st == KP_OK)
        st = logic_expect(l, "out", out, 2, (int64_t[]){-1, y->shape[1]}, "[K, N]");
    if (st == KP_OK)
        st = check_groups(l, "y", y->shape[0], "out", out->shape[0], call->args[GS_TAU].f);
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status sum_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[GS_Y].tensor, *out = &call->args[GS_OUT].tensor;
    int64_t N = y->shape[1], K = out->shape[0];
    int64_t vw = logic_host->tunable_index(l, 1);
    kp_clargs a = logic_clargs_vw(l, "logic_groupsum", vw);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)K);
    kp_clargs_int(&a, (int32_t)(y->shape[0] / K));
    kp_clargs_float(&a, (float)call->args[GS_TAU].f);
    kp_clargs_tensor(&a, y, 2);
    kp_clargs_tensor(&a, out, 2);
    return logic_clargs_enqueue(&a, (N + vw - 1) / vw, K, (size_t)logic_host->tunable_index(l, 0),
                                1);
}

static kp_status sum_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    if (!sample_dims(name, d))
        return KP_ERR_NOT_FOUND;
    int64_t G = d[0], K = d[1], N = d[2];
    int pad = strcmp(name, "views") == 0 ? 3 : 0;
    kp_status st =
        logic_host->sample_tensor(s, "y", KP_F32, 1, (int64_t[]){G * (N + pad) + pad}, 0, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "y", 2, (int64_t[]){G, N}, pad, (int64_t[]){N + pad, 1});
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "out", KP_F32, 2, (int64_t[]){K, N}, 0, 0, NULL);
    return st == KP_OK ? logic_host->sample_float(s, "tau", pad ? 1.0 : 3.5) : st;
}

static void sum_cost(const kp_call *call, kp_cost *out)
{
    double G = (double)call->args[GS_Y].tensor.shape[0];
    double N = (double)call->args[GS_Y].tensor.shape[1];
    double K = (double)call->args[GS_OUT].tensor.shape[0];
    out->flops = G * N + K * N;
    out->bytes = 4.0 * (G + K) * N;
}

/* S terms in [0, 1] added in order: at most S roundings of a sum below S. */
static void sum_tolerance(const kp_call *call, double *atol, double *rtol)
{
    double S =
        (double)call->args[GS_Y].tensor.shape[0] / (double)call->args[GS_OUT].tensor.shape[0];
    *atol = 1e-6;
    *rtol = 2.0 * FLT_EPSILON * (S + 2);
}

const kp_kernel_desc logic_groupsum_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.groupsum",
    .summary = "class scores [K, N]: sums of K contiguous groups of a layer's outputs / tau",
    .params = sum_params,
    .n_params = GS_N,
    .tunables = tunables,
    .n_tunables = 2,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_groupsum",
    .check = sum_check,
    .enqueue = sum_enqueue,
    .reference = logic_groupsum_reference,
    .sample = sum_sample,
    .cost = sum_cost,
    .verify_sizes = names,
    .bench_sizes = bench_sizes,
    .tolerance = sum_tolerance,
    .resolve = logic_resolve_vw,
};

/* ---- logic.groupsum_backward ----------------------------------------------------------------- */

static const kp_param_desc back_params[] = {
    [GB_DOUT] = {.name = "dout",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = F32,
                 .doc = "[K, N] gradient of the class scores"},
    [GB_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = F32,
               .doc = "[G, N] gradient of the layer's outputs: dy[g] = dout[g / S] / tau"},
    [GB_TAU] = tau_param,
};

static kp_status back_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *d = &call->args[GB_DOUT].tensor, *dy = &call->args[GB_DY].tensor;
    kp_status st = logic_expect(l, "dout", d, 2, (int64_t[]){-1, -1}, "[K, N]");
    if (st == KP_OK)
        st = logic_expect(l, "dy", dy, 2, (int64_t[]){-1, d->shape[1]}, "[G, N]");
    if (st == KP_OK)
        st = check_groups(l, "dy", dy->shape[0], "dout", d->shape[0], call->args[GB_TAU].f);
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status back_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *d = &call->args[GB_DOUT].tensor, *dy = &call->args[GB_DY].tensor;
    int64_t N = d->shape[1], G = dy->shape[0];
    int64_t vw = logic_host->tunable_index(l, 1);
    kp_clargs a = logic_clargs_vw(l, "logic_groupsum_backward", vw);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)(G / d->shape[0]));
    kp_clargs_float(&a, (float)call->args[GB_TAU].f);
    kp_clargs_tensor(&a, d, 2);
    kp_clargs_tensor(&a, dy, 2);
    return logic_clargs_enqueue(&a, (N + vw - 1) / vw, G, (size_t)logic_host->tunable_index(l, 0),
                                1);
}

static kp_status back_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    if (!sample_dims(name, d))
        return KP_ERR_NOT_FOUND;
    int64_t G = d[0], K = d[1], N = d[2];
    int pad = strcmp(name, "views") == 0 ? 3 : 0;
    kp_status st = logic_host->sample_tensor(s, "dout", KP_F32, 2, (int64_t[]){K, N}, -1, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "dy", KP_F32, 1, (int64_t[]){G * (N + pad) + pad}, 0, 0,
                                       NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "dy", 2, (int64_t[]){G, N}, pad, (int64_t[]){N + pad, 1});
    return st == KP_OK ? logic_host->sample_float(s, "tau", 3.5) : st;
}

static void back_cost(const kp_call *call, kp_cost *out)
{
    double G = (double)call->args[GB_DY].tensor.shape[0];
    double N = (double)call->args[GB_DY].tensor.shape[1];
    double K = (double)call->args[GB_DOUT].tensor.shape[0];
    out->flops = G * N;
    out->bytes = 4.0 * (G + K) * N;
}

const kp_kernel_desc logic_groupsum_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.groupsum_backward",
    .summary = "logic.groupsum's backward: dy [G, N] = dout [K, N] of each gate's group / tau",
    .params = back_params,
    .n_params = GB_N,
    .tunables = tunables,
    .n_tunables = 2,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_groupsum_backward",
    .check = back_check,
    .enqueue = back_enqueue,
    .reference = logic_groupsum_backward_reference,
    .sample = back_sample,
    .cost = back_cost,
    .verify_sizes = names,
    .bench_sizes = bench_sizes,
    /* One correctly rounded division on each side. */
    .atol = 0,
    .rtol = FLT_EPSILON,
    .resolve = logic_resolve_vw,
};

/* ---- logic.groupsum_packed ------------------------------------------------------------------- */

static const kp_param_desc packed_params[] = {
    [GP_BITS] = {.name = "bits",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = KP_DT(KP_U32),
                 .doc = "[G, ceil(N / 32)] a layer's packed outputs (logic.eval_packed)"},
    [GP_OUT] = {.name = "out",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32 | KP_DT(KP_I32),
                .doc = "[K, N] set bits of each group per sample: f32 count / tau, or i32 count"},
    [GP_TAU] = tau_param,
};

static kp_status packed_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *bits = &call->args[GP_BITS].tensor, *out = &call->args[GP_OUT].tensor;
    kp_status st = logic_expect(l, "out", out, 2, (int64_t[]){-1, -1}, "[K, N]");
    if (st == KP_OK)
        st = logic_expect(l, "bits", bits, 2, (int64_t[]){-1, (out->shape[1] + 31) / 32},
                          "[G, ceil(N / 32)]");
    if (st == KP_OK)
        st = check_groups(l, "bits", bits->shape[0], "out", out->shape[0], call->args[GP_TAU].f);
    /* The kernel's bit-sliced counters have 20 planes. */
    if (st == KP_OK && bits->shape[0] / out->shape[0] >= (1 << 20))
        st = logic_host->fail(l, KP_ERR_UNSUPPORTED,
                              "bits: groups of %lld gates are beyond the 2^20 - 1 counted",
                              (long long)(bits->shape[0] / out->shape[0]));
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status packed_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *bits = &call->args[GP_BITS].tensor, *out = &call->args[GP_OUT].tensor;
    int64_t N = out->shape[1], K = out->shape[0], W = bits->shape[1];
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_groupsum_packed", NULL);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)K);
    kp_clargs_int(&a, (int32_t)(bits->shape[0] / K));
    kp_clargs_int(&a, (int32_t)W);
    kp_clargs_float(&a, (float)call->args[GP_TAU].f);
    kp_clargs_int(&a, out->dtype == KP_I32);
    kp_clargs_tensor(&a, bits, 2);
    kp_clargs_tensor(&a, out, 2);
    return logic_clargs_enqueue(&a, W, K, (size_t)logic_host->tunable_index(l, 0), 1);
}

static kp_status packed_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    if (!sample_dims(name, d))
        return KP_ERR_NOT_FOUND;
    int64_t G = d[0], K = d[1], N = d[2], W = (N + 31) / 32;
    int as_int = strcmp(name, "classes") == 0, pad = strcmp(name, "views") == 0 ? 2 : 0;
    kp_status st = logic_host->sample_tensor(s, "bits", KP_U32, 1, (int64_t[]){G * (W + pad) + pad},
                                             0, 4294967296.0, NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "bits", 2, (int64_t[]){G, W}, pad, (int64_t[]){W + pad, 1});
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "out", as_int ? KP_I32 : KP_F32, 2, (int64_t[]){K, N}, 0,
                                       0, NULL);
    return st == KP_OK ? logic_host->sample_float(s, "tau", 3.5) : st;
}

static void packed_cost(const kp_call *call, kp_cost *out)
{
    double G = (double)call->args[GP_BITS].tensor.shape[0];
    double W = (double)call->args[GP_BITS].tensor.shape[1];
    double K = (double)call->args[GP_OUT].tensor.shape[0];
    double N = (double)call->args[GP_OUT].tensor.shape[1];
    out->flops = 0;
    out->bytes = 4.0 * (G * W + K * N);
}

const kp_kernel_desc logic_groupsum_packed_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.groupsum_packed",
    .summary = "class scores [K, N] from packed outputs: each group's set bits per sample",
    .params = packed_params,
    .n_params = GP_N,
    .tunables = tunables,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_groupsum_packed",
    .check = packed_check,
    .enqueue = packed_enqueue,
    .reference = logic_groupsum_packed_reference,
    .sample = packed_sample,
    .cost = packed_cost,
    .verify_sizes = names,
    .bench_sizes = bench_sizes,
    /* Exact counts; the f32 form is one correctly rounded division. */
    .atol = 0,
    .rtol = FLT_EPSILON,
};
