/* SPDX-License-Identifier: Apache-2.0 */
/* conv.maxpool2d and conv.maxpool2d_backward: max-pool with argmax indices, and its gather. */
#include "conv-kernels.h"
#include "conv.h"

#define F32 KP_DT(KP_F32)
#define I32 KP_DT(KP_I32)

#define POOL_SIZE_PARAMS                                                                           \
    {.name = "kernel_h",                                                                           \
     .kind = KP_ARG_KIND_INT,                                                                      \
     .access = KP_ACCESS_IN,                                                                       \
     .doc = "window height KH"},                                                                   \
    {                                                                                              \
        .name = "kernel_w", .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN,                       \
        .doc = "window width KW"                                                                   \
    }

static const kp_param_desc pool_params[] = {
    [MP_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[N, C, H, W] input; any strides"},
    [MP_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .doc = "[N, C, OH, OW] window maxima; any strides"},
    [MP_IDX] = {.name = "indices",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = I32,
                .flags = KP_PARAM_OPTIONAL,
                .doc = "[N, C, OH, OW] i32: h W + w of each maximum in its plane (PyTorch's "
                       "return_indices), the lowest on ties (omitted: not written)"},
    POOL_SIZE_PARAMS,
    CONV_GEO_PARAMS(0),
};

static const kp_param_desc back_params[] = {
    [MPB_DY] = {.name = "dy",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[N, C, OH, OW] gradient of y; any strides"},
    [MPB_IDX] = {.name = "indices",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = I32,
                 .doc = "[N, C, OH, OW] i32 from conv.maxpool2d with the same geometry"},
    [MPB_DX] = {.name = "dx",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[N, C, H, W] gradient of x, overwritten; any strides"},
    POOL_SIZE_PARAMS,
    CONV_GEO_PARAMS(0),
};

/* `image` gives N C H W; `out` and `idx` (when present) must be [N, C, OH, OW]. */
static kp_status check_pool(const kp_call *call, kp_launch *l, int image, const char *image_name,
                            int out, const char *out_name, int idx, int kh, int geo)
{
    const kp_tensor *t = &call->args[image].tensor;
    kp_status st = conv_check_nchw(l, image_name, t);
    if (st != KP_OK)
        return st;
    conv_geom g = {.N = t->shape[0], .C = t->shape[1], .H = t->shape[2], .W = t->shape[3]};
    g.K = g.C;
    st = conv_kernel_size(l, call, kh, &g);
    if (st == KP_OK)
        st = conv_check_geometry(l, call, geo, -1, NULL, 1, &g);
    int64_t shape[4] = {g.N, g.C, g.OH, g.OW};
    if (st == KP_OK)
        st = conv_expect(l, out_name, &call->args[out].tensor, 4, shape, "[N, C, OH, OW]");
    if (st == KP_OK && call->args[idx].present)
        st = conv_expect(l, "indices", &call->args[idx].tensor, 4, shape, "[N, C, OH, OW]");
    return st == KP_OK ? conv_check_int_range(l, call) : st;
}

static kp_status pool_check(const kp_call *call, kp_launch *l)
{
    return check_pool(call, l, MP_X, "x", MP_Y, "y", MP_IDX, MP_KH, MP_GEO);
}

static kp_status back_check(const kp_call *call, kp_launch *l)
{
    return check_pool(call, l, MPB_DX, "dx", MPB_DY, "dy", MPB_IDX, MPB_KH, MPB_GEO);
}

/* Whether the row kernels' 2 x 2, stride-2 shape applies (conv_maxpool2_rows and its backward):
 * that window, no padding or dilation, and rows of unit stride in the three tensors. */
static int pool2(const conv_geom *g, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c)
{
    return g->KH == 2 && g->KW == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0 &&
           g->dh == 1 && g->dw == 1 && a->strides[3] == 1 && b->strides[3] == 1 &&
           c->strides[3] == 1;
}

static kp_status pool_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    int has_idx = call->args[MP_IDX].present != 0;
    const kp_tensor *x = &call->args[MP_X].tensor, *y = &call->args[MP_Y].tensor;
    const kp_tensor *idx = has_idx ? &call->args[MP_IDX].tensor : y;
    int rows = conv_row_kernels(l), two = rows && pool2(&g, x, y, idx);
    kp_clargs a = kp_clargs_begin(conv_host, l,
                                  two    ? "conv_maxpool2_rows"
                                  : rows ? "conv_maxpool_rows"
                                         : "conv_maxpool",
                                  NULL);
    conv_clargs_geom(&a, &g);
    kp_clargs_tensor(&a, x, 4);
    kp_clargs_tensor(&a, y, 4);
    /* Without indices the kernel is handed y and never touches it through them. */
    kp_clargs_tensor(&a, idx, 4);
    kp_clargs_int(&a, has_idx);
    if (two)
        return conv_clargs_run(&a, g.C, g.N);
    if (rows)
        return conv_clargs_run(&a, g.C * g.OH, g.N);
    return conv_clargs_run(&a, g.OH * g.OW, g.N * g.C);
}

static kp_status back_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    const kp_tensor *dy = &call->args[MPB_DY].tensor, *idx = &call->args[MPB_IDX].tensor;
    const kp_tensor *dx = &call->args[MPB_DX].tensor;
    int rows = conv_row_kernels(l), two = rows && pool2(&g, dy, idx, dx);
    kp_clargs a = kp_clargs_begin(conv_host, l,
                                  two    ? "conv_maxpool2_backward_rows"
                                  : rows ? "conv_maxpool_backward_rows"
                                         : "conv_maxpool_backward",
                                  NULL);
    conv_clargs_geom(&a, &g);
    kp_clargs_tensor(&a, dy, 4);
    kp_clargs_tensor(&a, idx, 4);
    kp_clargs_tensor(&a, dx, 4);
    if (two)
        return conv_clargs_run(&a, g.C, g.N);
    if (rows)
        return conv_clargs_run(&a, g.C * g.H, g.N);
    return conv_clargs_run(&a, g.H * g.W, g.N * g.C);
}

/* A comparison per window tap; bytes: x read, y (and indices) written once. */
static void pool_cost(const kp_call *call, kp_cost *out)
{
    conv_geom g = conv_geom_of(call);
    double outputs = (double)g.N * (double)g.C * (double)(g.OH * g.OW);
    out->flops = outputs * (double)(g.KH * g.KW);
    out->bytes = 4.0 * ((double)g.N * (double)g.C * (double)(g.H * g.W) +
                        outputs * (call->args[MP_IDX].present ? 2.0 : 1.0));
}

static void back_cost(const kp_call *call, kp_cost *out)
{
    conv_geom g = conv_geom_of(call);
    double outputs = (double)g.N * (double)g.C * (double)(g.OH * g.OW);
    out->flops = outputs;
    out->bytes = 4.0 * (2.0 * outputs + (double)g.N * (double)g.C * (double)(g.H * g.W));
}

static const char *const verify_sizes[] = {"one",   "prime", "ties",  "overlap", "dilated",
                                           "views", "noidx", "halve", NULL};
static const char *const back_verify_sizes[] = {"one",     "prime", "ties",  "overlap",
                                                "dilated", "views", "halve", NULL};
static const char *const bench_sizes[] = {"resnet", "vgg", NULL};

const kp_kernel_desc conv_maxpool_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.maxpool2d",
    .summary = "2-D max-pool over NCHW with int32 argmax indices (lowest on ties), f32",
    .params = pool_params,
    .n_params = MP_N,
    .tunables = conv_tunables,
    .n_tunables = 2,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_maxpool",
    .check = pool_check,
    .enqueue = pool_enqueue,
    .reference = conv_maxpool_reference,
    .sample = conv_maxpool_sample,
    .cost = pool_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .atol = 0.0, /* a selection: exact, indices included */
    .rtol = 0.0,
    .resolve = conv_resolve,
};

const kp_kernel_desc conv_maxpool_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.maxpool2d_backward",
    .summary = "gradient of conv.maxpool2d: a deterministic gather through the indices, f32",
    .params = back_params,
    .n_params = MPB_N,
    .tunables = conv_tunables,
    .n_tunables = 2,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_maxpool_backward",
    .check = back_check,
    .enqueue = back_enqueue,
    .reference = conv_maxpool_backward_reference,
    .sample = conv_maxpool_backward_sample,
    .cost = back_cost,
    .verify_sizes = back_verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_maxpool_backward_tolerance,
    .resolve = conv_resolve,
};
