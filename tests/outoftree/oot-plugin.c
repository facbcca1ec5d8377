/* SPDX-License-Identifier: Apache-2.0 */
/* A third-party plugin, family "oot" (oot.negate: y = -x), built against an installed package. */
#include <limits.h>

#include <kernelport/plugin.h>

#include "oot-kernels.h"

/* Parameter indices, in the order of the descriptor's params. */
enum { NEG_X, NEG_Y, NEG_NPARAMS };

static const kp_host_api *host;

static const int64_t workgroups[] = {16, 32, 64, 128, 256};
static const kp_tunable_desc tunables[] = {{
    .name = "WG",
    .default_value = 64,
    .allowed = workgroups,
    .n_allowed = sizeof workgroups / sizeof workgroups[0],
    .flags = KP_TUNABLE_WORKGROUP,
    .doc = "work-items per workgroup",
}};

static const kp_param_desc params[] = {
    [NEG_X] = {.name = "x",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = KP_DT(KP_F32),
               .doc = "[n], any stride"},
    [NEG_Y] = {.name = "y",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = KP_DT(KP_F32),
               .doc = "[n], any stride"},
};

static kp_status negate_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[NEG_X].tensor, *y = &call->args[NEG_Y].tensor;
    if (x->rank != 1)
        return host->fail(l, KP_ERR_INVALID_ARG, "x: expected rank 1 [n], got rank %d", x->rank);
    if (y->rank != 1 || y->shape[0] != x->shape[0])
        return host->fail(l, KP_ERR_INVALID_ARG, "y: expected shape [%lld] like x",
                          (long long)x->shape[0]);
    /* The kernel indexes with int. (kp_tensor_extent is static inline in kernelport/tensor.h:
     * a plugin links nothing from the library.) */
    if (kp_tensor_extent(x) > INT_MAX || kp_tensor_extent(y) > INT_MAX)
        return host->fail(l, KP_ERR_UNSUPPORTED, "views over 2^31 elements are not supported");
    return KP_OK;
}

static kp_status negate_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[NEG_X].tensor, *y = &call->args[NEG_Y].tensor;
    int v[] = {(int)x->shape[0], (int)x->offset, (int)x->strides[0], (int)y->offset,
               (int)y->strides[0]};
    /* The local size is the tunable, never derived from n: under PoCL each new local size is a
     * new compile, and the kernel requires exactly WG. */
    size_t wg = (size_t)host->tunable(l, "WG");
    size_t global = ((size_t)v[0] + wg - 1) / wg * wg;
    kp_clkernel *k;
    kp_status st = host->cl_kernel(l, "oot_negate", NULL, &k);
    /* Arguments: n, x, x_off, x_stride, y, y_off, y_stride */
    if (st == KP_OK)
        st = host->arg_value(l, k, 0, sizeof(int), &v[0]);
    if (st == KP_OK)
        st = host->arg_buffer(l, k, 1, x->buffer);
    for (uint32_t i = 0; st == KP_OK && i < 2; i++)
        st = host->arg_value(l, k, 2 + i, sizeof(int), &v[1 + i]);
    if (st == KP_OK)
        st = host->arg_buffer(l, k, 4, y->buffer);
    for (uint32_t i = 0; st == KP_OK && i < 2; i++)
        st = host->arg_value(l, k, 5 + i, sizeof(int), &v[3 + i]);
    if (st == KP_OK)
        st = host->enqueue_ndrange(l, k, 1, &global, &wg);
    return st;
}

static kp_status negate_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[NEG_X].tensor, *y = &call->args[NEG_Y].tensor;
    const float *xp = KP_HOST_PTR(call, NEG_X, const float);
    float *yp = KP_HOST_PTR(call, NEG_Y, float);
    for (int64_t i = 0; i < x->shape[0]; i++)
        yp[i * y->strides[0]] = -xp[i * x->strides[0]];
    return KP_OK;
}

static kp_status negate_sample(kp_sample *s, const char *size)
{
    /* "one" catches a launch that ignores the bounds check; a prime size is never a multiple of
     * the workgroup, so the tail is always exercised. */
    int64_t n = size[0] == 'o' ? 1 : size[0] == 'p' ? 1009 : 1 << 22;
    kp_status st = host->sample_tensor(s, "x", KP_F32, 1, &n, -100.0, 100.0, NULL);
    if (st == KP_OK)
        st = host->sample_tensor(s, "y", KP_F32, 1, &n, 0.0, 0.0, NULL);
    return st;
}

static void negate_cost(const kp_call *call, kp_cost *out)
{
    double n = (double)call->args[NEG_X].tensor.shape[0];
    out->flops = n;
    out->bytes = 8 * n; /* read x, write y */
}

static const char *const verify_sizes[] = {"one", "prime", NULL};
static const char *const bench_sizes[] = {"large", NULL};

static const kp_kernel_desc kernels[] = {{
    .struct_size = sizeof(kp_kernel_desc),
    .name = "oot.negate",
    .summary = "y = -x on strided f32 vectors (out-of-tree test plugin)",
    .params = params,
    .n_params = NEG_NPARAMS,
    .tunables = tunables,
    .n_tunables = 1,
    .source = kp_kernel_oot_cl,
    .source_name = "oot.cl",
    .entry = "oot_negate",
    .check = negate_check,
    .enqueue = negate_enqueue,
    .reference = negate_reference,
    .sample = negate_sample,
    .cost = negate_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    /* Negation is exact: any difference is a bug. */
    .atol = 0,
    .rtol = 0,
}};

static kp_status oot_init(const kp_host_api *api, kp_registrar *reg)
{
    host = api;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, &kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

KP_PLUGIN_DEFINE(oot, .name = "oot", .version = "0.1.0",
                 .description = "Out-of-tree test plugin: built against the installed package",
                 .init = oot_init)
