/* SPDX-License-Identifier: Apache-2.0 */
/* conv.conv2d: im2col of a chunk of images, one GEMM per group, an output pass adding the bias. */
#include "conv-kernels.h"
#include "conv.h"

#define F32 KP_DT(KP_F32)

static const kp_param_desc params[] = {
    [FWD_X] = {.name = "x",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "[N, C, H, W] input; any strides"},
    [FWD_W] = {.name = "w",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "[K, C/groups, KH, KW] weights (PyTorch's layout); the last three "
                      "dimensions contiguous"},
    [FWD_B] = {.name = "bias",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .flags = KP_PARAM_OPTIONAL,
               .doc = "[K] (omitted: no bias)"},
    [FWD_Y] = {.name = "y",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = F32,
               .doc = "[N, K, OH, OW] output, OH = (H + 2 pad_h - dilation_h (KH - 1) - 1) / "
                      "stride_h + 1; any strides"},
    CONV_GEO_PARAMS(1),
    CONV_GROUPS_PARAM,
};

static kp_status forward_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[FWD_X].tensor, *w = &call->args[FWD_W].tensor;
    kp_status st = conv_check_nchw(l, "x", x);
    if (st != KP_OK)
        return st;
    if (w->rank != 4 || w->shape[0] < 1 || w->shape[2] < 1 || w->shape[3] < 1) {
        char got[160];
        return conv_host->fail(l, KP_ERR_INVALID_ARG,
                               "w: expected [K, C/groups, KH, KW] with K, KH, KW >= 1, got %s",
                               kp_tensor_describe(w, got, sizeof got));
    }
    conv_geom g = {.N = x->shape[0],
                   .C = x->shape[1],
                   .H = x->shape[2],
                   .W = x->shape[3],
                   .K = w->shape[0],
                   .KH = w->shape[2],
                   .KW = w->shape[3]};
    st = conv_check_geometry(l, call, FWD_GEO, FWD_GROUPS, "w", 0, &g);
    if (st == KP_OK)
        st = conv_expect(l, "w", w, 4, (int64_t[]){g.K, g.C / g.groups, g.KH, g.KW},
                         "[K, C/groups, KH, KW]");
    if (st == KP_OK && call->args[FWD_B].present)
        st = conv_expect(l, "bias", &call->args[FWD_B].tensor, 1, (int64_t[]){g.K}, "[K]");
    if (st == KP_OK)
        st = conv_expect(l, "y", &call->args[FWD_Y].tensor, 4, (int64_t[]){g.N, g.K, g.OH, g.OW},
                         "[N, K, OH, OW]");
    if (st == KP_OK)
        st = conv_check_weight_matrix(l, "w", w);
    if (st == KP_OK)
        st = conv_check_columns(l, &g);
    return st == KP_OK ? conv_check_int_range(l, call) : st;
}

/* Whether a chunk's products write y's images in place (direct_products): on CPU devices with
 * blas.gemm's products (there, OpenBLAS in the queue) where y's planes are rows of one matrix
 * per image, and each output sums fewer than DIRECT_MAX_TERMS products (a 1x1 convolution's
 * always qualifies). Then the output pass over [K, images L] is skipped, for one product per
 * image, which OpenBLAS runs in one command, and a bias pass over whole planes where there is a
 * bias. Past that, one product over the whole chunk and the output pass (a work-item per plane on
 * CPUs) win. On PoCL with 2 OpenBLAS threads (2-core EPYC, loaded; kernelport bench, medians of two
 * runs each), the direct products took 0.47-0.58x the time of the other path on the 5x5 mnist
 * shape (25 terms), 1.0-1.27x on 56x56 (576), 1.3-1.8x on 28x28 (1152), 1.15-1.23x on the stem
 * (147); on the Fashion-MNIST CNN's layers (batch 128, best of 20, three runs) 0.4-0.65x on the
 * first (9 terms) and 1.2-1.35x on the second (288). */
#define DIRECT_MAX_TERMS 64

static int direct_output(kp_launch *l, const kp_tensor *y, int64_t terms)
{
    const kp_device_info *d = conv_host->device(l);
    return d && d->type == KP_DEVICE_CPU && !conv_gemm_is_tiled(l) && conv_plane_matrix(y) &&
           terms < DIRECT_MAX_TERMS;
}

/* y[n0 .. n0 + cur) += bias, one work-item per image plane (conv_add_bias_rows). */
static kp_status add_bias(kp_launch *l, const conv_geom *g, const kp_tensor *bias,
                          const kp_tensor *y, int64_t n0, int64_t cur)
{
    kp_clargs a = kp_clargs_begin(conv_host, l, "conv_add_bias_rows", NULL);
    kp_clargs_int(&a, (int)g->K);
    kp_clargs_int(&a, (int)(g->OH * g->OW));
    kp_clargs_int(&a, (int)(cur * g->K));
    kp_clargs_int(&a, (int)n0);
    kp_clargs_tensor(&a, bias, 1);
    kp_clargs_tensor(&a, y, 4);
    return conv_clargs_run(&a, cur * g->K, 1);
}

/* Group q's products of a chunk of `cur` images from n0, straight into y: one blas.gemm_batched
 * of W_q (every image's) by each image's columns (col's [R, ld] block, image i at i L; or the
 * image's own planes for a pointwise convolution). KP_ERR_NOT_FOUND without blas.gemm_batched,
 * having enqueued nothing. */
static kp_status direct_products(kp_launch *l, const conv_geom *g, const kp_tensor *x,
                                 const kp_tensor *w, const kp_tensor *y, kp_buffer *col, int64_t n0,
                                 int64_t cur, int64_t q)
{
    int64_t L = g->OH * g->OW, Cg = g->C / g->groups, Kg = g->K / g->groups;
    int64_t R = Cg * g->KH * g->KW, ld = cur * L;
    kp_tensor a = kp_tensor_3d(w->buffer, KP_F32, cur, Kg, R);
    a.offset = w->offset + q * Kg * w->strides[0];
    a.strides[0] = 0;
    a.strides[1] = Kg > 1 ? w->strides[0] : R;
    kp_tensor b;
    if (col) {
        b = kp_tensor_3d(col, KP_F32, cur, R, L);
        b.offset = q * R * ld;
        b.strides[0] = L;
        b.strides[1] = ld;
    } else {
        kp_tensor first = conv_plane_rows(x, n0, q * Cg, Cg);
        b = kp_tensor_3d(x->buffer, KP_F32, cur, Cg, L);
        b.offset = first.offset;
        b.strides[0] = x->strides[0];
        b.strides[1] = first.strides[0];
    }
    kp_tensor first = conv_plane_rows(y, n0, q * Kg, Kg);
    kp_tensor c = kp_tensor_3d(y->buffer, KP_F32, cur, Kg, L);
    c.offset = first.offset;
    c.strides[0] = y->strides[0];
    c.strides[1] = first.strides[0];
    kp_arg args[] = {KP_ARG_TENSOR("A", a), KP_ARG_TENSOR("B", b), KP_ARG_TENSOR("C", c),
                     KP_ARG_FLOAT("beta", 0.0)};
    return conv_host->launch(l, "blas.gemm_batched", args, sizeof args / sizeof args[0]);
}

/*
 * A chunk of nb images at a time (as many as COL_MAX_MB of scratch holds): im2col writes their
 * columns side by side, col [C KH KW, nb L], so each group's product W_g col_g is one GEMM of
 * nb L columns rather than nb small ones (CLBlast's indirect kernels, several times faster on
 * large products, only take over above a size). The GEMM writes the block t [K, nb L], and an
 * output pass moves it into y's NCHW layout, adding the bias on the way (on CPUs, through
 * blas.gemm_batched, the products write y instead and a pass adds the bias: direct_output). A 1x1,
 * stride-1, unpadded convolution skips im2col: its columns are the images themselves, read in place
 * by one GEMM per image and group.
 */
static kp_status forward_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    const kp_tensor *x = &call->args[FWD_X].tensor, *w = &call->args[FWD_W].tensor;
    const kp_tensor *bias = call->args[FWD_B].present ? &call->args[FWD_B].tensor : NULL;
    const kp_tensor *y = &call->args[FWD_Y].tensor;
    if (conv_winograd_chosen(l, &g))
        return conv_winograd_forward(l, &g, x, w, bias, y);
    int64_t L = g.OH * g.OW, Cg = g.C / g.groups, Kg = g.K / g.groups, R = Cg * g.KH * g.KW;
    int point = conv_is_pointwise(&g) && conv_plane_matrix(x);
    /* A 1x1 convolution's per-image products read x in place: no pass to save. */
    int direct = direct_output(l, y, point ? 0 : R);
    double rows = (double)(point ? 0 : g.C * g.KH * g.KW) + (double)(direct ? 0 : g.K);
    int64_t nb = conv_chunk(l, g.N, 4.0 * rows * (double)L);
    kp_buffer *col = NULL, *t = NULL;
    kp_status st = KP_OK;
    if (!point)
        st = conv_host->scratch(l, 0, (size_t)(g.C * g.KH * g.KW * nb * L) * sizeof(float), &col);
    int64_t ldw = Kg > 1 ? w->strides[0] : R;
    for (int64_t n0 = 0; st == KP_OK && n0 < g.N; n0 += nb) {
        int64_t cur = g.N - n0 < nb ? g.N - n0 : nb, ld = cur * L;
        if (!point)
            st = conv_im2col_chunk(l, &g, x, n0, cur, col, 0);
        for (int64_t q = 0; st == KP_OK && direct && q < g.groups; q++) {
            st = direct_products(l, &g, x, w, y, col, n0, cur, q);
            if (st == KP_ERR_NOT_FOUND && q == 0) { /* no blas.gemm_batched: through t */
                direct = 0;
                st = KP_OK;
            }
        }
        if (st == KP_OK && !direct && !t)
            st = conv_host->scratch(l, 1, (size_t)(g.K * nb * L) * sizeof(float), &t);
        for (int64_t q = 0; st == KP_OK && !direct && q < g.groups; q++) {
            kp_tensor a = conv_matrix(w->buffer, w->offset + q * Kg * w->strides[0], Kg, R, ldw);
            if (!point) {
                kp_tensor b = conv_matrix(col, q * R * ld, R, ld, ld);
                kp_tensor c = conv_matrix(t, q * Kg * ld, Kg, ld, ld);
                st = conv_matmul(l, &a, &b, &c, 0.0);
            }
            for (int64_t i = 0; point && st == KP_OK && i < cur; i++) {
                kp_tensor b = conv_plane_rows(x, n0 + i, q * Cg, Cg);
                kp_tensor c = conv_matrix(t, q * Kg * ld + i * L, Kg, L, ld);
                st = conv_matmul(l, &a, &b, &c, 0.0);
            }
        }
        if (st == KP_OK && direct && bias)
            st = add_bias(l, &g, bias, y, n0, cur);
        if (st == KP_OK && !direct)
            st = conv_unpack_chunk(l, &g, t, bias, y, n0, cur);
    }
    return st;
}

/* 2 N K OH OW C/groups KH KW FLOPs (a multiply-add is 2), plus the bias; each tensor once. */
static void forward_cost(const kp_call *call, kp_cost *out)
{
    conv_geom g = conv_geom_of(call);
    double outputs = (double)g.N * (double)g.K * (double)(g.OH * g.OW);
    out->flops = outputs * (2.0 * (double)(g.C / g.groups * g.KH * g.KW) +
                            (call->args[FWD_B].present ? 1.0 : 0.0));
    out->bytes = 4.0 * ((double)kp_tensor_numel(&call->args[FWD_X].tensor) +
                        (double)kp_tensor_numel(&call->args[FWD_W].tensor) + outputs +
                        (call->args[FWD_B].present ? (double)g.K : 0.0));
}

static const char *const verify_sizes[] = {"one",        "prime",    "groups",     "depthwise",
                                           "pointwise",  "views",    "pointviews", "stride1x1",
                                           "fullkernel", "winograd", "winogroups", NULL};
static const char *const bench_sizes[] = {"mnist", "56x56", "28x28", "stem", NULL};

const kp_kernel_desc conv_conv2d_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.conv2d",
    .summary = "2-D convolution (cross-correlation, NCHW, groups) via im2col + GEMM, f32",
    .params = params,
    .n_params = FWD_N,
    .tunables = conv_tunables,
    .n_tunables = CONV_N_TUNABLES,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_im2col",
    .check = forward_check,
    .enqueue = forward_enqueue,
    .reference = conv_forward_reference,
    .sample = conv_forward_sample,
    .cost = forward_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_forward_tolerance,
    .resolve = conv_resolve,
};
