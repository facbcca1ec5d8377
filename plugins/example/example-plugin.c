/* SPDX-License-Identifier: Apache-2.0 */
/* The example plugin: descriptors, shape checks and launch planning for example.axpy and
 * example.scale_rows. docs/plugin-authoring.md walks through this file. */
#include <limits.h>

#include "example-kernels.h"
#include "example.h"

static const kp_host_api *host;

static const int64_t workgroups[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
static const kp_tunable_desc tunables[] = {{
    .name = "WG",
    .default_value = 64,
    .allowed = workgroups,
    .n_allowed = sizeof workgroups / sizeof workgroups[0],
    .flags = KP_TUNABLE_WORKGROUP,
    .doc = "work-items per workgroup",
}};

/* OpenCL kernels index with int: views must fit. */
static kp_status fits_int(kp_launch *l, const char *name, const kp_tensor *t)
{
    if (kp_tensor_extent(t) > INT_MAX)
        return host->fail(l, KP_ERR_UNSUPPORTED, "%s: views over 2^31 elements are not supported",
                          name);
    return KP_OK;
}

/* ---- example.axpy: y = alpha * x + y ---- */

static const kp_param_desc axpy_params[] = {
    [AXPY_N] = {.name = "n",
                .kind = KP_ARG_KIND_INT,
                .access = KP_ACCESS_IN,
                .doc = "number of elements"},
    [AXPY_ALPHA] = {.name = "alpha",
                    .kind = KP_ARG_KIND_FLOAT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .float_default = 1.0,
                    .doc = "scale of x"},
    [AXPY_X] = {.name = "x",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = KP_DT(KP_F32),
                .doc = "[n], any stride"},
    [AXPY_Y] = {.name = "y",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_INOUT,
                .dtypes = KP_DT(KP_F32),
                .doc = "[n], updated in place"},
};

static kp_status axpy_check(const kp_call *call, kp_launch *l)
{
    int64_t n = call->args[AXPY_N].i;
    const kp_tensor *x = &call->args[AXPY_X].tensor, *y = &call->args[AXPY_Y].tensor;
    if (n < 0 || n > INT_MAX)
        return host->fail(l, KP_ERR_INVALID_ARG, "n: %lld is outside 0..%d", (long long)n, INT_MAX);
    if (x->rank != 1 || x->shape[0] != n)
        return host->fail(l, KP_ERR_INVALID_ARG,
                          "x: expected shape [n] = [%lld], got rank %d "
                          "with %lld elements",
                          (long long)n, x->rank, (long long)kp_tensor_numel(x));
    if (y->rank != 1 || y->shape[0] != n)
        return host->fail(l, KP_ERR_INVALID_ARG,
                          "y: expected shape [n] = [%lld], got rank %d "
                          "with %lld elements",
                          (long long)n, y->rank, (long long)kp_tensor_numel(y));
    kp_status st = fits_int(l, "x", x);
    return st == KP_OK ? fits_int(l, "y", y) : st;
}

static kp_status axpy_enqueue(const kp_call *call, kp_launch *l)
{
    int n = (int)call->args[AXPY_N].i;
    size_t wg = (size_t)host->tunable(l, "WG");
    size_t global = ((size_t)n + wg - 1) / wg * wg;
    kp_clargs a = kp_clargs_begin(host, l, "example_axpy", NULL);
    kp_clargs_int(&a, n);
    kp_clargs_float(&a, (float)call->args[AXPY_ALPHA].f);
    kp_clargs_tensor(&a, &call->args[AXPY_X].tensor, 1);
    kp_clargs_tensor(&a, &call->args[AXPY_Y].tensor, 1);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static kp_status axpy_sample(kp_sample *s, const char *size)
{
    /* The sizes verify_sizes and bench_sizes name; any other is not this kernel's. */
    int64_t n;
    if (strcmp(size, "one") == 0)
        n = 1;
    else if (strcmp(size, "prime") == 0)
        n = 1009;
    else if (strcmp(size, "small") == 0)
        n = 4133;
    else if (strcmp(size, "large") == 0)
        n = 1 << 24;
    else
        return KP_ERR_NOT_FOUND;
    kp_status st = host->sample_int(s, "n", n);
    if (st == KP_OK)
        st = host->sample_float(s, "alpha", 0.75);
    if (st == KP_OK)
        st = host->sample_tensor(s, "x", KP_F32, 1, &n, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = host->sample_tensor(s, "y", KP_F32, 1, &n, -1.0, 1.0, NULL);
    return st;
}

static void axpy_cost(const kp_call *call, kp_cost *out)
{
    double n = (double)call->args[AXPY_N].i;
    out->flops = 2 * n;
    out->bytes = 12 * n; /* read x and y, write y */
}

/* ---- example.scale_rows: y[r][c] = x[r][c] * scale[r] ---- */

static const kp_param_desc scale_params[] = {
    [SCALE_X] = {.name = "x",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = KP_DT(KP_F32),
                 .doc = "[rows, cols], any strides"},
    [SCALE_S] = {.name = "scale",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = KP_DT(KP_F32),
                 .doc = "[rows]"},
    [SCALE_Y] = {.name = "y",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = KP_DT(KP_F32),
                 .doc = "[rows, cols], any strides"},
};

static kp_status scale_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[SCALE_X].tensor, *s = &call->args[SCALE_S].tensor,
                    *y = &call->args[SCALE_Y].tensor;
    if (x->rank != 2)
        return host->fail(l, KP_ERR_INVALID_ARG, "x: expected rank 2 [rows, cols], got rank %d",
                          x->rank);
    if (s->rank != 1 || s->shape[0] != x->shape[0])
        return host->fail(l, KP_ERR_INVALID_ARG, "scale: expected shape [rows] = [%lld]",
                          (long long)x->shape[0]);
    if (y->rank != 2 || y->shape[0] != x->shape[0] || y->shape[1] != x->shape[1])
        return host->fail(l, KP_ERR_INVALID_ARG, "y: expected shape [%lld, %lld] like x",
                          (long long)x->shape[0], (long long)x->shape[1]);
    if (kp_tensor_numel(x) > INT_MAX)
        return host->fail(l, KP_ERR_UNSUPPORTED, "x: more than 2^31 elements");
    kp_status st = fits_int(l, "x", x);
    if (st == KP_OK)
        st = fits_int(l, "scale", s);
    return st == KP_OK ? fits_int(l, "y", y) : st;
}

static kp_status scale_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[SCALE_X].tensor;
    size_t wg = (size_t)host->tunable(l, "WG");
    size_t global = ((size_t)x->shape[0] * (size_t)x->shape[1] + wg - 1) / wg * wg;
    kp_clargs a = kp_clargs_begin(host, l, "example_scale_rows", NULL);
    kp_clargs_int(&a, (int32_t)x->shape[0]);
    kp_clargs_int(&a, (int32_t)x->shape[1]);
    kp_clargs_tensor(&a, x, 2);
    kp_clargs_tensor(&a, &call->args[SCALE_S].tensor, 1);
    kp_clargs_tensor(&a, &call->args[SCALE_Y].tensor, 2);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static kp_status scale_sample(kp_sample *s, const char *size)
{
    int64_t shape[2] = {1, 1};
    if (strcmp(size, "prime") == 0) {
        shape[0] = 31;
        shape[1] = 67;
    } else if (strcmp(size, "small") == 0) {
        shape[0] = 100;
        shape[1] = 129;
    } else if (strcmp(size, "large") == 0) {
        shape[0] = 4096;
        shape[1] = 4096;
    } else if (strcmp(size, "one") != 0) {
        return KP_ERR_NOT_FOUND;
    }
    kp_status st = host->sample_tensor(s, "x", KP_F32, 2, shape, -2.0, 2.0, NULL);
    if (st == KP_OK)
        st = host->sample_tensor(s, "scale", KP_F32, 1, shape, -2.0, 2.0, NULL);
    if (st == KP_OK)
        st = host->sample_tensor(s, "y", KP_F32, 2, shape, 0.0, 0.0, NULL);
    return st;
}

static void scale_cost(const kp_call *call, kp_cost *out)
{
    const kp_tensor *x = &call->args[SCALE_X].tensor;
    double n = (double)kp_tensor_numel(x);
    out->flops = n;
    out->bytes = 8 * n + 4 * (double)x->shape[0];
}

static const char *const verify_sizes[] = {"one", "prime", "small", NULL};
static const char *const bench_sizes[] = {"large", NULL};

static const kp_kernel_desc kernels[] = {
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "example.axpy",
        .summary = "y = alpha * x + y on strided f32 vectors",
        .params = axpy_params,
        .n_params = AXPY_NPARAMS,
        .tunables = tunables,
        .n_tunables = 1,
        .source = kp_kernel_example_cl,
        .source_name = "example.cl",
        .entry = "example_axpy",
        .check = axpy_check,
        .enqueue = axpy_enqueue,
        .reference = example_axpy_reference,
        .sample = axpy_sample,
        .cost = axpy_cost,
        .verify_sizes = verify_sizes,
        .bench_sizes = bench_sizes,
        .atol = 1e-6,
        .rtol = 1e-6,
    },
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "example.scale_rows",
        .summary = "y[r][c] = x[r][c] * scale[r] on strided f32 matrices",
        .params = scale_params,
        .n_params = SCALE_NPARAMS,
        .tunables = tunables,
        .n_tunables = 1,
        .source = kp_kernel_example_cl,
        .source_name = "example.cl",
        .entry = "example_scale_rows",
        .check = scale_check,
        .enqueue = scale_enqueue,
        .reference = example_scale_rows_reference,
        .sample = scale_sample,
        .cost = scale_cost,
        .verify_sizes = verify_sizes,
        .bench_sizes = bench_sizes,
        .atol = 0,
        .rtol = 0,
    },
};

static kp_status example_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!host)
        host = api;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, &kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

KP_PLUGIN_DEFINE(example, .name = "example", .version = "1.0.0",
                 .description = "Example kernels: the plugin-authoring tutorial",
                 .init = example_init)
