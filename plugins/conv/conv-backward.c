/* SPDX-License-Identifier: Apache-2.0 */
/* conv.conv2d_backward_data, _weight and _bias: the gradients of conv.conv2d through GEMMs. */
#include "conv-kernels.h"
#include "conv.h"

#define F32 KP_DT(KP_F32)

static kp_status describe_fail(kp_launch *l, const char *name, const char *pattern,
                               const kp_tensor *t)
{
    char got[160];
    return conv_host->fail(l, KP_ERR_INVALID_ARG,
                           "%s: expected %s with every dimension >= 1, got %s", name, pattern,
                           kp_tensor_describe(t, got, sizeof got));
}

/* The weight (or weight gradient) as a [K, C/groups KH KW] matrix, rows of group q. */
static kp_tensor weight_rows(const kp_tensor *w, int64_t q, int64_t Kg, int64_t R)
{
    return conv_matrix(w->buffer, w->offset + q * Kg * w->strides[0], Kg, R,
                       Kg > 1 ? w->strides[0] : R);
}

/* The checks the data and weight gradients share: geometry from the input-side tensor `in`
 * [N, C, H, W] and the weight-side tensor [K, C/groups, KH, KW], then dy [N, K, OH, OW]. */
static kp_status check_common(const kp_call *call, kp_launch *l, int in, const char *in_name,
                              int wt, const char *w_name, int dy, int geo, int groups, conv_geom *g)
{
    const kp_tensor *x = &call->args[in].tensor, *w = &call->args[wt].tensor;
    kp_status st = conv_check_nchw(l, in_name, x);
    if (st != KP_OK)
        return st;
    if (w->rank != 4 || w->shape[0] < 1 || w->shape[1] < 1 || w->shape[2] < 1 || w->shape[3] < 1)
        return describe_fail(l, w_name, "[K, C/groups, KH, KW]", w);
    *g = (conv_geom){.N = x->shape[0],
                     .C = x->shape[1],
                     .H = x->shape[2],
                     .W = x->shape[3],
                     .K = w->shape[0],
                     .KH = w->shape[2],
                     .KW = w->shape[3]};
    st = conv_check_geometry(l, call, geo, groups, w_name, 0, g);
    if (st == KP_OK)
        st = conv_expect(l, w_name, w, 4, (int64_t[]){g->K, g->C / g->groups, g->KH, g->KW},
                         "[K, C/groups, KH, KW]");
    if (st == KP_OK)
        st = conv_expect(l, "dy", &call->args[dy].tensor, 4, (int64_t[]){g->N, g->K, g->OH, g->OW},
                         "[N, K, OH, OW]");
    if (st == KP_OK)
        st = conv_check_weight_matrix(l, w_name, w);
    if (st == KP_OK)
        st = conv_check_columns(l, g);
    return st == KP_OK ? conv_check_int_range(l, call) : st;
}

/* ---- conv.conv2d_backward_data: dx = col2im(W^T dy) ------------------------------------------ */

static const kp_param_desc data_params[] = {
    [BWD_DY] = {.name = "dy",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[N, K, OH, OW] gradient of the output; any strides"},
    [BWD_W] = {.name = "w",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "[K, C/groups, KH, KW] weights; the last three dimensions contiguous"},
    [BWD_DX] = {.name = "dx",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[N, C, H, W] gradient of the input, overwritten; any strides"},
    CONV_GEO_PARAMS(1),
    CONV_GROUPS_PARAM,
};

static kp_status data_check(const kp_call *call, kp_launch *l)
{
    conv_geom g;
    return check_common(call, l, BWD_DX, "dx", BWD_W, "w", BWD_DY, BWD_GEO, BWD_GROUPS, &g);
}

/*
 * Per chunk of images: an input pass packs dy into the block t [K, nb L], one GEMM per group
 * writes the column gradients dcol_g = W_g^T t_g [C/groups KH KW, nb L], and col2im gathers them
 * into dx. A 1x1, stride-1, unpadded convolution needs neither: dx_n = W^T dy_n per image and
 * group, in place.
 */
static kp_status data_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    const kp_tensor *dy = &call->args[BWD_DY].tensor, *w = &call->args[BWD_W].tensor;
    const kp_tensor *dx = &call->args[BWD_DX].tensor;
    int64_t L = g.OH * g.OW, Cg = g.C / g.groups, Kg = g.K / g.groups, R = Cg * g.KH * g.KW;
    kp_status st = KP_OK;
    if (conv_is_pointwise(&g) && conv_plane_matrix(dy) && conv_plane_matrix(dx)) {
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t q = 0; st == KP_OK && q < g.groups; q++) {
                kp_tensor a = kp_tensor_transpose(weight_rows(w, q, Kg, R), 0, 1);
                kp_tensor b = conv_plane_rows(dy, n, q * Kg, Kg);
                kp_tensor c = conv_plane_rows(dx, n, q * Cg, Cg);
                st = conv_matmul(l, &a, &b, &c, 0.0);
            }
        return st;
    }
    int64_t nb = conv_chunk(l, g.N, 4.0 * (double)(g.C * g.KH * g.KW + g.K) * (double)L);
    kp_buffer *col = NULL, *t = NULL;
    st = conv_host->scratch(l, 0, (size_t)(g.C * g.KH * g.KW * nb * L) * sizeof(float), &col);
    if (st == KP_OK)
        st = conv_host->scratch(l, 1, (size_t)(g.K * nb * L) * sizeof(float), &t);
    for (int64_t n0 = 0; st == KP_OK && n0 < g.N; n0 += nb) {
        int64_t cur = g.N - n0 < nb ? g.N - n0 : nb, ld = cur * L;
        st = conv_pack_chunk(l, &g, dy, n0, cur, t);
        for (int64_t q = 0; st == KP_OK && q < g.groups; q++) {
            kp_tensor a = kp_tensor_transpose(weight_rows(w, q, Kg, R), 0, 1);
            kp_tensor b = conv_matrix(t, q * Kg * ld, Kg, ld, ld);
            kp_tensor c = conv_matrix(col, q * R * ld, R, ld, ld);
            st = conv_matmul(l, &a, &b, &c, 0.0);
        }
        if (st == KP_OK)
            st = conv_col2im_chunk(l, &g, col, dx, n0, cur);
    }
    return st;
}

/* ---- conv.conv2d_backward_weight: dw = sum over images of dy col^T --------------------------- */

static const kp_param_desc weight_params[] = {
    [BWW_X] = {.name = "x",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "[N, C, H, W] the forward's input; any strides"},
    [BWW_DY] = {.name = "dy",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[N, K, OH, OW] gradient of the output; any strides"},
    [BWW_DW] = {.name = "dw",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[K, C/groups, KH, KW] gradient of the weights, overwritten; the last "
                       "three dimensions contiguous"},
    CONV_GEO_PARAMS(1),
    CONV_GROUPS_PARAM,
};

static kp_status weight_check(const kp_call *call, kp_launch *l)
{
    conv_geom g;
    return check_common(call, l, BWW_X, "x", BWW_DW, "dw", BWW_DY, BWW_GEO, BWW_GROUPS, &g);
}

/* c [M, N] = beta c + the `slices` partial sums in `part` (conv_split_sum). */
static kp_status split_sum(kp_launch *l, int64_t slices, kp_buffer *part, const kp_tensor *c,
                           double beta)
{
    kp_clargs sum = kp_clargs_begin(conv_host, l, "conv_split_sum", NULL);
    kp_clargs_int(&sum, (int)slices);
    kp_clargs_int(&sum, (int)c->shape[0]);
    kp_clargs_int(&sum, (int)c->shape[1]);
    kp_clargs_float(&sum, (float)beta);
    kp_clargs_buffer(&sum, part);
    kp_clargs_tensor(&sum, c, 2);
    return conv_clargs_run(&sum, c->shape[0] * c->shape[1], 1);
}

/* Outputs up to this many weights: a handful of CLBlast's tiles, so one GEMM over a chunk's
 * positions keeps a few of a GPU's cores busy (Fashion-MNIST's first layer: 288 weights over
 * 100352 positions, 3.0 ms on an H200; docs/kernels/conv.md). */
#define SPLIT_MAX_WEIGHTS 65536

/*
 * c = a b + beta c with a [M, P] and b [P, N] over P positions cut into slices of ks: one
 * blas.gemm_batched over the whole slices and one blas.gemm over the rest into partial sums in
 * scratch slot 2, then conv_split_sum adds them in order (and beta c). KP_ERR_NOT_FOUND, with
 * nothing enqueued, without blas.gemm_batched.
 */
static kp_status split_product(kp_launch *l, const kp_tensor *a, const kp_tensor *b,
                               const kp_tensor *c, double beta, int64_t ks)
{
    int64_t M = c->shape[0], N = c->shape[1], P = a->shape[1], S = P / ks, rest = P - S * ks;
    int64_t slices = S + (rest > 0);
    kp_buffer *part;
    kp_status st = conv_host->scratch(l, 2, (size_t)(slices * M * N) * sizeof(float), &part);
    if (st != KP_OK)
        return st;
    kp_tensor a3 = *a, b3 = *b, c3 = kp_tensor_3d(part, KP_F32, S, M, N);
    a3.rank = b3.rank = 3;
    a3.shape[2] = ks, a3.shape[1] = M, a3.shape[0] = S;
    a3.strides[2] = a->strides[1], a3.strides[1] = a->strides[0],
    a3.strides[0] = ks * a->strides[1];
    b3.shape[2] = N, b3.shape[1] = ks, b3.shape[0] = S;
    b3.strides[2] = b->strides[1], b3.strides[1] = b->strides[0],
    b3.strides[0] = ks * b->strides[0];
    kp_arg args[] = {KP_ARG_TENSOR("A", a3), KP_ARG_TENSOR("B", b3), KP_ARG_TENSOR("C", c3),
                     KP_ARG_FLOAT("beta", 0.0)};
    st = conv_host->launch(l, "blas.gemm_batched", args, sizeof args / sizeof args[0]);
    if (st == KP_OK && rest) {
        kp_tensor ar = *a, br = *b, cr = conv_matrix(part, S * M * N, M, N, N);
        ar.offset += S * ks * a->strides[1];
        ar.shape[1] = rest;
        br.offset += S * ks * b->strides[0];
        br.shape[0] = rest;
        st = conv_matmul(l, &ar, &br, &cr, 0.0);
    }
    if (st != KP_OK)
        return st;
    return split_sum(l, slices, part, c, beta);
}

/* On CPUs (OpenBLAS's threads, not a GPU's cores, to fill) only outputs this small split: the
 * Fashion-MNIST CNN's first layer (288 weights) took 0.3-0.6x the time of one product split, its
 * second (18432) 1.1-1.4x (PoCL, 2-core EPYC, batch 128, four alternations, 2026-11-26). */
#define SPLIT_MAX_WEIGHTS_CPU 4096

/* dw_g (+)= t_g col_g^T: split over the positions where SPLIT_K allows and the output is small,
 * else one product. */
static kp_status weight_product(kp_launch *l, const kp_tensor *a, const kp_tensor *b,
                                const kp_tensor *c, double beta)
{
    int64_t ks = conv_host->tunable_index(l, CONV_TUNE_SPLIT_K);
    const kp_device_info *d = conv_host->device(l);
    int64_t most = d && d->type == KP_DEVICE_CPU ? SPLIT_MAX_WEIGHTS_CPU : SPLIT_MAX_WEIGHTS;
    if (ks > 0 && !conv_gemm_is_tiled(l) && a->shape[1] >= 2 * ks &&
        c->shape[0] * c->shape[1] <= most) {
        kp_status st = split_product(l, a, b, c, beta, ks);
        if (st != KP_ERR_NOT_FOUND)
            return st;
    }
    return conv_matmul(l, a, b, c, beta);
}

/*
 * Per chunk: im2col of x and the input pass of dy as in the data gradient, then one GEMM per
 * group, dw_g (+)= t_g col_g^T, whose inner dimension runs over the chunk's nb L positions
 * (split in slices for a small dw_g: weight_product): beta 0 for the first chunk, 1 after, so
 * dw sums over every image. The 1x1 path multiplies
 * dy_n x_n^T per image, in place, accumulating the same way.
 */
static kp_status weight_enqueue(const kp_call *call, kp_launch *l)
{
    conv_geom g = conv_geom_of(call);
    const kp_tensor *x = &call->args[BWW_X].tensor, *dy = &call->args[BWW_DY].tensor;
    const kp_tensor *dw = &call->args[BWW_DW].tensor;
    int64_t L = g.OH * g.OW, Cg = g.C / g.groups, Kg = g.K / g.groups, R = Cg * g.KH * g.KW;
    kp_status st = KP_OK;
    if (conv_is_pointwise(&g) && conv_plane_matrix(dy) && conv_plane_matrix(x)) {
        for (int64_t n = 0; n < g.N; n++)
            for (int64_t q = 0; st == KP_OK && q < g.groups; q++) {
                kp_tensor a = conv_plane_rows(dy, n, q * Kg, Kg);
                kp_tensor b = kp_tensor_transpose(conv_plane_rows(x, n, q * Cg, Cg), 0, 1);
                kp_tensor c = weight_rows(dw, q, Kg, R);
                st = conv_matmul(l, &a, &b, &c, n ? 1.0 : 0.0);
            }
        return st;
    }
    int64_t nb = conv_chunk(l, g.N, 4.0 * (double)(g.C * g.KH * g.KW + g.K) * (double)L);
    kp_buffer *col = NULL, *t = NULL;
    st = conv_host->scratch(l, 0, (size_t)(g.C * g.KH * g.KW * nb * L) * sizeof(float), &col);
    if (st == KP_OK)
        st = conv_host->scratch(l, 1, (size_t)(g.K * nb * L) * sizeof(float), &t);
    /* conv.cl's tiled GEMM wants B row-major: im2col then writes the columns transposed,
     * [nb L, C KH KW], so that col_g^T is a row-major [nb L, C/groups KH KW] block. */
    int transposed = conv_gemm_is_tiled(l);
    for (int64_t n0 = 0; st == KP_OK && n0 < g.N; n0 += nb) {
        int64_t cur = g.N - n0 < nb ? g.N - n0 : nb, ld = cur * L;
        st = conv_im2col_chunk(l, &g, x, n0, cur, col, transposed);
        if (st == KP_OK)
            st = conv_pack_chunk(l, &g, dy, n0, cur, t);
        for (int64_t q = 0; st == KP_OK && q < g.groups; q++) {
            kp_tensor a = conv_matrix(t, q * Kg * ld, Kg, ld, ld);
            kp_tensor b = transposed
                              ? conv_matrix(col, q * R, ld, R, g.C * g.KH * g.KW)
                              : kp_tensor_transpose(conv_matrix(col, q * R * ld, R, ld, ld), 0, 1);
            kp_tensor c = weight_rows(dw, q, Kg, R);
            st = weight_product(l, &a, &b, &c, n0 ? 1.0 : 0.0);
        }
    }
    return st;
}

/* ---- conv.conv2d_backward_bias: db[k] = sum of dy[:, k] -------------------------------------- */

static const kp_param_desc bias_params[] = {
    [BWB_DY] = {.name = "dy",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_IN,
                .dtypes = F32,
                .doc = "[N, K, OH, OW] gradient of the output; any strides"},
    [BWB_DB] = {.name = "db",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[K] gradient of the bias, overwritten; any stride"},
};

static kp_status bias_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *dy = &call->args[BWB_DY].tensor;
    kp_status st = conv_check_nchw(l, "dy", dy);
    if (st == KP_OK)
        st = conv_expect(l, "db", &call->args[BWB_DB].tensor, 1, (int64_t[]){dy->shape[1]}, "[K]");
    /* conv_bias_grad splits positions into rows and columns as the geometry's kernels do. */
    if (st == KP_OK && dy->shape[2] * dy->shape[3] >= 1 << 24)
        st = conv_host->fail(l, KP_ERR_UNSUPPORTED,
                             "dy: planes of %lld x %lld positions: at most 2^24 - 1 per plane "
                             "are supported",
                             (long long)dy->shape[2], (long long)dy->shape[3]);
    return st == KP_OK ? conv_check_int_range(l, call) : st;
}

/* Slices of images of about 4096 positions each (at least one image), a fixed function of the
 * shape, then their sum in slice order; with the row kernels (CPUs), a slice per image, each
 * plane summed by one work-item (conv_bias_grad_rows). */
static kp_status bias_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *dy = &call->args[BWB_DY].tensor, *db = &call->args[BWB_DB].tensor;
    int64_t N = dy->shape[0], K = dy->shape[1], L = dy->shape[2] * dy->shape[3];
    int rows = conv_row_kernels(l);
    int64_t per = rows ? 1 : 4096 / L > 1 ? 4096 / L : 1, slices = (N + per - 1) / per;
    kp_buffer *part;
    kp_status st = conv_host->scratch(l, 0, (size_t)(slices * K) * sizeof(float), &part);
    if (st != KP_OK)
        return st;
    kp_clargs a =
        kp_clargs_begin(conv_host, l, rows ? "conv_bias_grad_rows" : "conv_bias_grad", NULL);
    if (rows) {
        kp_clargs_int(&a, (int)K);
        kp_clargs_int(&a, (int)(N * K));
        kp_clargs_int(&a, (int)dy->shape[2]);
        kp_clargs_int(&a, (int)dy->shape[3]);
        kp_clargs_tensor(&a, dy, 4);
        kp_clargs_buffer(&a, part);
        st = conv_clargs_run(&a, N * K, 1);
    } else {
        kp_clargs_int(&a, (int)N);
        kp_clargs_int(&a, (int)per);
        kp_clargs_int(&a, (int)L);
        kp_clargs_int(&a, (int)dy->shape[3]);
        kp_clargs_tensor(&a, dy, 4);
        kp_clargs_buffer(&a, part);
        size_t wg = (size_t)conv_host->tunable_index(l, CONV_TUNE_WG);
        size_t global[3] = {wg, (size_t)K, (size_t)slices}, local[3] = {wg, 1, 1};
        st = kp_clargs_enqueue(&a, 3, global, local);
    }
    /* db [K] as the column [K, 1] conv_split_sum writes. */
    kp_tensor column = *db;
    column.rank = 2;
    column.shape[1] = 1;
    column.strides[1] = 0;
    return st == KP_OK ? split_sum(l, slices, part, &column, 0.0) : st;
}

/* ---- costs and descriptors ------------------------------------------------------------------- */

static void gemm_cost(const kp_call *call, kp_cost *out, int a, int b, int c)
{
    conv_geom g = conv_geom_of(call);
    out->flops = 2.0 * (double)g.N * (double)g.K * (double)(g.OH * g.OW) *
                 (double)(g.C / g.groups * g.KH * g.KW);
    out->bytes = 4.0 * ((double)kp_tensor_numel(&call->args[a].tensor) +
                        (double)kp_tensor_numel(&call->args[b].tensor) +
                        (double)kp_tensor_numel(&call->args[c].tensor));
}

static void data_cost(const kp_call *call, kp_cost *out)
{
    gemm_cost(call, out, BWD_DY, BWD_W, BWD_DX);
}

static void weight_cost(const kp_call *call, kp_cost *out)
{
    gemm_cost(call, out, BWW_X, BWW_DY, BWW_DW);
}

static void bias_cost(const kp_call *call, kp_cost *out)
{
    double n = (double)kp_tensor_numel(&call->args[BWB_DY].tensor);
    out->flops = n;
    out->bytes = 4.0 * (n + (double)call->args[BWB_DB].tensor.shape[0]);
}

static const char *const verify_sizes[] = {"one",        "prime", "groups",     "depthwise",
                                           "pointwise",  "views", "pointviews", "stride1x1",
                                           "fullkernel", NULL};
static const char *const bench_sizes[] = {"mnist", "56x56", "28x28", "stem", NULL};

const kp_kernel_desc conv_backward_data_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.conv2d_backward_data",
    .summary = "gradient of conv.conv2d's input: dx = col2im(W^T dy), overwriting dx, f32",
    .params = data_params,
    .n_params = BWD_N,
    .tunables = conv_tunables,
    .n_tunables = CONV_N_TUNABLES,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_col2im",
    .check = data_check,
    .enqueue = data_enqueue,
    .reference = conv_backward_data_reference,
    .sample = conv_backward_data_sample,
    .cost = data_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_backward_data_tolerance,
    .resolve = conv_resolve,
};

const kp_kernel_desc conv_backward_weight_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.conv2d_backward_weight",
    .summary = "gradient of conv.conv2d's weights: dw = sum over images of dy im2col(x)^T, f32",
    .params = weight_params,
    .n_params = BWW_N,
    .tunables = conv_tunables,
    .n_tunables = CONV_N_TUNABLES,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_im2col",
    .check = weight_check,
    .enqueue = weight_enqueue,
    .reference = conv_backward_weight_reference,
    .sample = conv_backward_weight_sample,
    .cost = weight_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_backward_weight_tolerance,
    .resolve = conv_resolve,
};

static const char *const bias_verify_sizes[] = {"one", "prime", "views", NULL};

const kp_kernel_desc conv_backward_bias_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "conv.conv2d_backward_bias",
    .summary = "gradient of conv.conv2d's bias: db[k] = sum of dy[:, k], overwriting db, f32",
    .params = bias_params,
    .n_params = BWB_N,
    .tunables = conv_tunables,
    .n_tunables = 2,
    .source = kp_kernel_conv_cl,
    .source_name = "conv.cl",
    .entry = "conv_bias_grad",
    .check = bias_check,
    .enqueue = bias_enqueue,
    .reference = conv_backward_bias_reference,
    .sample = conv_backward_bias_sample,
    .cost = bias_cost,
    .verify_sizes = bias_verify_sizes,
    .bench_sizes = bench_sizes,
    .tolerance = conv_backward_bias_tolerance,
    .resolve = conv_resolve,
};
