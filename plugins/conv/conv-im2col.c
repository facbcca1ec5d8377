/* SPDX-License-Identifier: Apache-2.0 */
/* conv.im2col and conv.col2im: a batch of images to Caffe's column layout and back (a gather). */
#include "conv-kernels.h"
#include "conv.h"

#define F32 KP_DT(KP_F32)

#define KERNEL_SIZE_PARAMS                                                                         \
    {.name = "kernel_h", .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN, .doc = "KH"},            \
    {                                                                                              \
        .name = "kernel_w", .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN, .doc = "KW"           \
    }

static const kp_param_desc im2col_params[] = {
    [I2C_IM] = {.name = "im",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[N, C, H, W] images; any strides"},
    [I2C_COL] = {.name = "col",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = F32,
                 .doc = "[N, C KH KW, OH OW]: col[n][(c KH + kh) KW + kw][oh OW + ow]; any "
                        "strides (strides [OH OW, N OH OW, 1] put the images side by side)"},
    KERNEL_SIZE_PARAMS,
    CONV_GEO_PARAMS(1),
};

static const kp_param_desc col2im_params[] = {
    [C2I_COL] = {.name = "col",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = F32,
                 .doc = "[N, C KH KW, OH OW] columns (im2col's layout); any strides"},
    [C2I_IM] = {.name = "im",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[N, C, H, W] images, overwritten with the sums; any strides"},
    KERNEL_SIZE_PARAMS,
    CONV_GEO_PARAMS(1),
};

/* Both kernels: the images give N C H W, the integers the window, and col must match. */
static kp_status check_pair(const kp_call *call, kp_launch *l, int im, int col, int kh, int geo)
{
    const kp_tensor *t = &call->args[im].tensor;
    kp_status st = conv_check_nchw(l, "im", t);
    if (st != KP_OK)
        return st;
    conv_geom g = {.N = t->shape[0], .C = t->shape[1], .H = t->shape[2], .W = t->shape[3]};
    g.K = g.C;
    st = conv_kernel_size(l, call, kh, &g);
    if (st == KP_OK)
        st = conv_check_geometry(l, call, geo, -1, NULL, 0, &g);
    if (st == KP_OK)
        st = conv_expect(l, "col", &call->args[col].tensor, 3,
                         (int64_t[]){g.N, g.C * g.KH * g.KW, g.OH * g.OW}, "[N, C KH KW, OH OW]");
    return st == KP_OK ? conv_check_int_range(l, call) : st;
}

static kp_status im2col_check(const kp_call *call, kp_launch *l)
{
    return check_pair(call, l, I2C_IM, I2C_COL, I2C_KH, I2C_GEO);
}

static kp_status col2im_check(const kp_call *call, kp_launch *l)
{
    return check_pair(call, l, C2I_IM, C2I_COL, C2I_KH, C2I_GEO);
}

/* One launch for the whole batch. */
static kp_status im2col_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    return conv_im2col_launch(l, &g, &call->args[I2C_IM].tensor, &call->args[I2C_COL].tensor);
}

/* No atomics: each image element (GPUs) or row (CPUs) belongs to one work-item, which sums in a
 * fixed order. */
static kp_status col2im_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    return conv_col2im_launch(l, &g, &call->args[C2I_COL].tensor, &call->args[C2I_IM].tensor);
}

/* No FLOPs; bytes: the images read (written) once and every column entry written (read) once. */
static void pair_cost(const kp_call *call, kp_cost *out)
{
    conv_geom g = conv_geom_of(call);
    out->flops = 0.0;
    out->bytes = 4.0 * (double)g.N * (double)g.C *
                 ((double)(g.H * g.W) + (double)(g.KH * g.KW) * (double)(g.OH * g.OW));
}

static const char *const verify_sizes[] = {
    "one", "prime", "dilated", "pointwise", "views", "stride1x1", "fullkernel", "wide", NULL};
static const char *const bench_sizes[] = {"mnist", "56x56", "28x28", "stem", NULL};

const kp_kernel_desc conv_im2col_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.im2col",
    .summary = "a batch of NCHW images to Caffe's column layout (zero padding, strides, dilation)",
    .params = im2col_params,
    .n_params = I2C_N,
    .tunables = conv_tunables,
    .n_tunables = 2,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_im2col",
    .check = im2col_check,
    .enqueue = im2col_enqueue,
    .reference = conv_im2col_reference,
    .sample = conv_im2col_sample,
    .cost = pair_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .atol = 0.0, /* a copy: exact */
    .rtol = 0.0,
    .resolve = conv_resolve,
};

const kp_kernel_desc conv_col2im_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.col2im",
    .summary = "the adjoint of conv.im2col as a deterministic gather, overwriting the images",
    .params = col2im_params,
    .n_params = C2I_N,
    .tunables = conv_tunables,
    .n_tunables = 2,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_col2im",
    .check = col2im_check,
    .enqueue = col2im_enqueue,
    .reference = conv_col2im_reference,
    .sample = conv_col2im_sample,
    .cost = pair_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_col2im_tolerance,
    .resolve = conv_resolve,
};
