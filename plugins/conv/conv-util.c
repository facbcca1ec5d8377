/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the conv kernels: tunables, geometry checks with their messages, kernel arguments. */
#include <limits.h>
#include <stdio.h>

#include "conv.h"

static const int64_t workgroups[] = {16, 32, 64, 128, 256};
static const char *const shapes[] = {"auto", "rows", "elements", "tiles", NULL};
static const char *const gemm_kinds[] = {"auto", "blas", "tiled", NULL};
static const char *const algos[] = {"auto", "im2col", "winograd", NULL};
static const int64_t col_limits[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
static const int64_t split_lengths[] = {0, 256, 512, 1024, 2048, 4096, 8192, 16384};

const kp_tunable_desc conv_tunables[CONV_N_TUNABLES] = {
    [CONV_TUNE_WG] = {.name = "WG",
                      .default_value = 64,
                      .allowed = workgroups,
                      .n_allowed = sizeof workgroups / sizeof workgroups[0],
                      .flags = KP_TUNABLE_WORKGROUP,
                      .doc = "work-items per work-group of every conv.cl kernel"},
    /* ROWS, COL_MAX_MB, GEMM and ALGO are read at launch only: no kernel compiles them in, so
     * changing them never costs a build. conv_resolve turns the auto of ROWS, GEMM and ALGO into
     * the value for the device, where the device alone decides. */
    [CONV_TUNE_ROWS] = {.name = "ROWS",
                        .default_value = 0,
                        .min = 0,
                        .max = 3,
                        .choices = shapes,
                        .flags = KP_TUNABLE_NO_DEFINE,
                        .doc = "the kernels of im2col, col2im, the pools, the bias gradient "
                               "and the gradients' input pass of dy: rows (a work-item per row, "
                               "or per plane, in vectorisable runs: CPUs), elements (a work-item "
                               "per "
                               "value; the bias gradient a work-group per channel and slice of "
                               "images), tiles (im2col only, the others take elements: a "
                               "work-group per block of output rows, its input rows staged in "
                               "local memory; elements where one row's would not fit in 16 "
                               "KiB, or half the device's local memory: decided per call, by "
                               "the output width), or auto (resolved per device: rows on CPUs, "
                               "tiles elsewhere)"},
    [CONV_TUNE_COL_MAX_MB] = {.name = "COL_MAX_MB",
                              .default_value = 256,
                              .allowed = col_limits,
                              .n_allowed = sizeof col_limits / sizeof col_limits[0],
                              .flags = KP_TUNABLE_NO_DEFINE,
                              .doc = "MiB of scratch per launch for a chunk of images: their "
                                     "column matrix and their [K, images OH OW] GEMM block; "
                                     "the batch runs in as many chunks as that takes (at "
                                     "least one image each)"},
    [CONV_TUNE_GEMM] = {.name = "GEMM",
                        .default_value = 0,
                        .min = 0,
                        .max = 2,
                        .choices = gemm_kinds,
                        .flags = KP_TUNABLE_NO_DEFINE,
                        .doc = "the products: blas (blas.gemm: CLBlast, or OpenBLAS in the "
                               "queue on CPUs, where conv.conv2d's products then write y "
                               "directly), tiled (conv.cl's 8 x 32 register-tiled kernel; "
                               "products whose B or C is not row-major, or narrower than 32 "
                               "columns, still use blas.gemm), or auto (resolved per device: "
                               "blas, but tiled on CPUs in a build without OpenBLAS, where "
                               "blas.gemm would run CLBlast); without blas.gemm, conv.cl's "
                               "kernels either way"},
    [CONV_TUNE_ALGO] = {.name = "ALGO",
                        .default_value = 0,
                        .min = 0,
                        .max = 2,
                        .choices = algos,
                        .flags = KP_TUNABLE_NO_DEFINE,
                        .doc = "conv.conv2d's algorithm: im2col (columns, one GEMM per group), "
                               "winograd (F(2x2, 3x3): 16 GEMMs on transformed tiles, a quarter "
                               "of the products; 3x3, stride-1, undilated convolutions only, the "
                               "others take im2col), or auto (resolved to im2col on CPUs; on "
                               "other devices auto stays and each call decides: winograd where "
                               "it applies with at least 16 channels in and out per group, else "
                               "im2col)"},
    [CONV_TUNE_SPLIT_K] = {.name = "SPLIT_K",
                           .default_value = 512,
                           .allowed = split_lengths,
                           .n_allowed = sizeof split_lengths / sizeof split_lengths[0],
                           .flags = KP_TUNABLE_NO_DEFINE,
                           .doc = "conv.conv2d_backward_weight through blas.gemm: a product with "
                                  "a small output (at most 65536 weights) sums over its images' "
                                  "positions in slices of this many, one batched GEMM into "
                                  "partial sums and a pass adding them, where one GEMM over all "
                                  "positions would leave most of a GPU idle; 0: never"},
};

/* ---- checks ---------------------------------------------------------------------------------- */

kp_status conv_check_nchw(kp_launch *l, const char *name, const kp_tensor *t)
{
    char got[160];
    int ok = t->rank == 4;
    for (int32_t d = 0; ok && d < 4; d++)
        ok = t->shape[d] >= 1;
    if (ok)
        return KP_OK;
    return conv_host->fail(l, KP_ERR_INVALID_ARG,
                           "%s: expected [N, C, H, W] with every dimension >= 1, got %s", name,
                           kp_tensor_describe(t, got, sizeof got));
}

kp_status conv_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                      const int64_t *shape, const char *pattern)
{
    return conv_host->check_shape(l, name, t, rank, shape, pattern);
}

kp_status conv_kernel_size(kp_launch *l, const kp_call *call, int kh, conv_geom *g)
{
    g->KH = call->args[kh].i;
    g->KW = call->args[kh + 1].i;
    if (g->KH < 1)
        return conv_host->fail(l, KP_ERR_INVALID_ARG, "kernel_h: %lld is not >= 1",
                               (long long)g->KH);
    if (g->KW < 1)
        return conv_host->fail(l, KP_ERR_INVALID_ARG, "kernel_w: %lld is not >= 1",
                               (long long)g->KW);
    return KP_OK;
}

/* Checks one axis: the dilated kernel must fit the padded input, so the output has a row. */
static kp_status check_axis(kp_launch *l, const char *kernel, const char *axis, const char *in,
                            const char *out, const char *sfx, int64_t size, int64_t k, int64_t s,
                            int64_t p, int64_t d, int pool, int64_t *o)
{
    int64_t extent = d * (k - 1) + 1;
    if (pool && 2 * p > k)
        return conv_host->fail(l, KP_ERR_INVALID_ARG,
                               "pad_%s: %lld is more than half the kernel %s %lld (padding is "
                               "never selected, so a pool's padding may be at most half its "
                               "window)",
                               sfx, (long long)p, axis, (long long)k);
    if (extent > size + 2 * p)
        return conv_host->fail(l, KP_ERR_INVALID_ARG,
                               "%s: kernel %s %lld (dilation_%s %lld: extent %lld) exceeds the "
                               "padded input %s %lld (%s %lld + 2 x pad_%s %lld), so %s would be "
                               "< 1",
                               kernel, axis, (long long)k, sfx, (long long)d, (long long)extent,
                               axis, (long long)(size + 2 * p), in, (long long)size, sfx,
                               (long long)p, out);
    *o = (size + 2 * p - extent) / s + 1;
    return KP_OK;
}

kp_status conv_check_geometry(kp_launch *l, const kp_call *call, int first, int groups,
                              const char *kernel, int pool, conv_geom *g)
{
    static const char *const names[GEO_N] = {"stride_h", "stride_w",   "pad_h",
                                             "pad_w",    "dilation_h", "dilation_w"};
    int64_t v[GEO_N];
    for (int i = 0; i < GEO_N; i++) {
        v[i] = call->args[first + i].i;
        int64_t min = i == GEO_PH || i == GEO_PW || (pool && i <= GEO_SW) ? 0 : 1;
        if (v[i] < min)
            return conv_host->fail(l, KP_ERR_INVALID_ARG, "%s: %lld is not >= %lld", names[i],
                                   (long long)v[i], (long long)min);
        if (v[i] > INT_MAX / 4)
            return conv_host->fail(l, KP_ERR_INVALID_ARG, "%s: %lld is too large", names[i],
                                   (long long)v[i]);
    }
    g->sh = v[GEO_SH] ? v[GEO_SH] : g->KH;
    g->sw = v[GEO_SW] ? v[GEO_SW] : g->KW;
    g->ph = v[GEO_PH];
    g->pw = v[GEO_PW];
    g->dh = v[GEO_DH];
    g->dw = v[GEO_DW];
    g->groups = 1;
    if (groups >= 0) {
        g->groups = call->args[groups].i;
        if (g->groups < 1)
            return conv_host->fail(l, KP_ERR_INVALID_ARG, "groups: %lld is not >= 1",
                                   (long long)g->groups);
        if (g->C % g->groups)
            return conv_host->fail(l, KP_ERR_INVALID_ARG,
                                   "groups: C = %lld input channels are not divisible by groups "
                                   "= %lld",
                                   (long long)g->C, (long long)g->groups);
        if (g->K % g->groups)
            return conv_host->fail(l, KP_ERR_INVALID_ARG,
                                   "groups: K = %lld output channels are not divisible by groups "
                                   "= %lld",
                                   (long long)g->K, (long long)g->groups);
    }
    if (g->KH > INT_MAX / 4 || g->KW > INT_MAX / 4)
        return conv_host->fail(l, KP_ERR_INVALID_ARG, "%s: kernel %lld x %lld is too large",
                               kernel ? kernel : "kernel_h", (long long)g->KH, (long long)g->KW);
    kp_status st = check_axis(l, kernel ? kernel : "kernel_h", "height", "H", "OH", "h", g->H,
                              g->KH, g->sh, g->ph, g->dh, pool, &g->OH);
    if (st == KP_OK)
        st = check_axis(l, kernel ? kernel : "kernel_w", "width", "W", "OW", "w", g->W, g->KW,
                        g->sw, g->pw, g->dw, pool, &g->OW);
    /* The kernels split plane positions into rows and columns through a float reciprocal. */
    if (st == KP_OK && (g->H * g->W >= 1 << 24 || g->OH * g->OW >= 1 << 24))
        st = conv_host->fail(l, KP_ERR_UNSUPPORTED,
                             "planes of %lld x %lld (input) or %lld x %lld (output) positions: "
                             "at most 2^24 - 1 per plane are supported",
                             (long long)g->H, (long long)g->W, (long long)g->OH, (long long)g->OW);
    return st;
}

kp_status conv_check_int_range(kp_launch *l, const kp_call *call)
{
    for (uint32_t i = 0; i < call->n_args; i++) {
        const kp_tensor *t = &call->args[i].tensor;
        if (call->desc->params[i].kind != KP_ARG_KIND_TENSOR || !call->args[i].present)
            continue;
        if (kp_tensor_extent(t) > INT_MAX || kp_tensor_numel(t) > INT_MAX)
            return conv_host->fail(l, KP_ERR_UNSUPPORTED,
                                   "%s: views reaching beyond 2^31 elements are not supported",
                                   call->desc->params[i].name);
        /* Views reach the kernels as int (kp_view<R>); the core sends the stride of an extent-1
         * dimension, which reaches no element, as 0, and refuses any other past int. */
        for (int32_t d = 0; d < t->rank; d++)
            if (t->shape[d] > 1 && t->strides[d] > INT_MAX)
                return conv_host->fail(l, KP_ERR_UNSUPPORTED,
                                       "%s: stride %lld of dimension %d is past 2^31 - 1",
                                       call->desc->params[i].name, (long long)t->strides[d], d);
    }
    return KP_OK;
}

kp_status conv_check_columns(kp_launch *l, const conv_geom *g)
{
    /* In double: C, KH and KW come from different tensors, so their product may pass int64. */
    double L = (double)(g->OH * g->OW), ckk = (double)g->C * (double)g->KH * (double)g->KW;
    if ((ckk + (double)g->K) * L > (double)INT_MAX)
        return conv_host->fail(l, KP_ERR_UNSUPPORTED,
                               "one image's columns and GEMM block, (C KH KW + K) OH OW = "
                               "(%.0f + %lld) x %.0f values, pass 2^31",
                               ckk, (long long)g->K, L);
    if ((double)g->N * (double)g->K * L > (double)INT_MAX)
        return conv_host->fail(l, KP_ERR_UNSUPPORTED, "N K OH OW = %.0f outputs pass 2^31",
                               (double)g->N * (double)g->K * L);
    return KP_OK;
}

kp_status conv_check_weight_matrix(kp_launch *l, const char *name, const kp_tensor *w)
{
    int64_t kw = w->shape[3], khw = w->shape[2] * kw;
    int ok = (kw == 1 || w->strides[3] == 1) && (w->shape[2] == 1 || w->strides[2] == kw) &&
             (w->shape[1] == 1 || w->strides[1] == khw) &&
             (w->shape[0] == 1 || w->strides[0] >= w->shape[1] * khw);
    if (ok)
        return KP_OK;
    char got[160];
    return conv_host->fail(l, KP_ERR_UNSUPPORTED,
                           "%s: the last three dimensions must be contiguous and rows at least "
                           "C/groups KH KW apart (a [K, C/groups KH KW] matrix for the GEMM), "
                           "got %s",
                           name, kp_tensor_describe(w, got, sizeof got));
}

/* ---- tunables decided per device ------------------------------------------------------------- */

const char *conv_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (value != 0 ||
        (index != CONV_TUNE_ROWS && index != CONV_TUNE_GEMM && index != CONV_TUNE_ALGO))
        return NULL;
    const kp_device_info *d = conv_host->device(l);
    int cpu = d && d->type == KP_DEVICE_CPU;
    if (index == CONV_TUNE_ROWS) {
        *resolved = cpu ? 1 : 3;
        return cpu ? "rows on CPUs" : "tiles off CPUs (col2im and the pools take elements)";
    }
    if (index == CONV_TUNE_GEMM) {
#ifdef KP_BLAS_HOST_ROUTE
        /* blas.gemm runs OpenBLAS on CPUs in this build: in bench-cpu-routes and kernelport
         * bench on the 2-core EPYC, conv.conv2d (its products straight into y) beat the tiled
         * GEMM by 1.6-4.7x on the 5x5 and stem shapes and came within 0.85-1.0x of it on the
         * others, the weight gradient by 2-5x on all four, the data gradient by 1.4-1.9x on
         * 56x56 and 28x28 (slower on the 5x5 shape, mixed on the stem): docs/PERFORMANCE.md, #30.
         */
        *resolved = 1;
        return cpu ? "blas on CPUs (blas.gemm runs OpenBLAS there)" : "blas off CPUs";
#else
        *resolved = cpu ? 2 : 1;
        return cpu ? "tiled on CPUs (blas.gemm runs CLBlast there: built without OpenBLAS)"
                   : "blas off CPUs";
#endif
    }
    /* ALGO: off CPUs, auto stays and each call decides by its channels (conv_winograd_chosen). */
    if (!cpu)
        return NULL;
    *resolved = 1;
    return "im2col on CPUs";
}

/* ---- kernel arguments ------------------------------------------------------------------------ */

void conv_clargs_geom(kp_clargs *a, const conv_geom *g)
{
    /* The int16 layout kernels/conv.cl documents. */
    const int64_t v[16] = {g->N,  g->C,  g->H,  g->W,  g->KH, g->KW, g->sh,     g->sw,
                           g->ph, g->pw, g->dh, g->dw, g->OH, g->OW, g->groups, 0};
    int32_t packed[16];
    for (int i = 0; i < 16; i++)
        packed[i] = (int32_t)v[i];
    kp_clargs_value(a, sizeof packed, packed);
}

void conv_clargs_bias(kp_clargs *a, const kp_tensor *bias, kp_buffer *any)
{
    kp_tensor none = kp_tensor_1d(any, KP_F32, 1);
    kp_clargs_tensor(a, bias ? bias : &none, 1);
    kp_clargs_int(a, bias != NULL);
}

kp_status conv_clargs_run(kp_clargs *a, int64_t rows, int64_t cols)
{
    size_t wg = (size_t)conv_host->tunable_index(a->l, CONV_TUNE_WG);
    size_t global[2] = {((size_t)rows + wg - 1) / wg * wg, (size_t)cols}, local[2] = {wg, 1};
    return kp_clargs_enqueue(a, 2, global, local);
}

int conv_row_kernels(kp_launch *l)
{
    return conv_host->tunable_index(l, CONV_TUNE_ROWS) == 1;
}

/* conv_im2col_tiles' tile of `rows` output rows: its width and height in input values. */
static int64_t tile_width(const conv_geom *g)
{
    return (g->OW - 1) * g->sw + (g->KW - 1) * g->dw + 1;
}

static int64_t tile_height(const conv_geom *g, int64_t rows)
{
    return (rows - 1) * g->sh + (g->KH - 1) * g->dh + 1;
}

/*
 * Output rows per work-group of conv_im2col_tiles, or 0 where one row's tile would not fit in
 * 16 KiB (or half the device's local memory). Among the row counts whose tile fits, the one whose
 * work-items idle least in their last pass over the block's positions, scaled down where it
 * leaves fewer than 4 work-groups per compute unit; ties go to the larger blocks (less of the
 * input read twice). On an H200 at WG 256, 56x56 and 26x26 outputs take whole channels, the 7x7
 * stride-2 stem (24 channels of 109 rows) blocks of 2 rows. (Several small channels per
 * work-group idled less but placed each position at a higher cost: 26x26 went from 36.8 to
 * 42.6 us.)
 */
static int64_t tile_rows(const kp_device_info *d, const conv_geom *g, int64_t wg)
{
    int64_t budget = d ? (int64_t)(d->local_mem / 2) : 0;
    budget = (budget < 16384 ? budget : 16384) / (int64_t)sizeof(float);
    int64_t tw = tile_width(g);
    if (budget / tw < tile_height(g, 1))
        return 0;
    int64_t fit = (budget / tw - tile_height(g, 1)) / g->sh + 1, rows = 0;
    double want = 4.0 * (double)(d->compute_units ? d->compute_units : 1), top = -1.0;
    for (int64_t r = fit < g->OH ? fit : g->OH; r >= 1; r--) {
        int64_t blocks = (g->OH + r - 1) / r, even = (g->OH + blocks - 1) / blocks;
        int64_t passes = (even * g->OW + wg - 1) / wg;
        double all = (double)(g->N * g->C * blocks);
        double score = (double)(g->OH * g->OW) / (double)(blocks * passes * wg) *
                       (all < want ? all / want : 1.0);
        if (score > top + 1e-9)
            top = score, rows = even;
    }
    return rows;
}

kp_status conv_im2col_launch(kp_launch *l, const conv_geom *g, const kp_tensor *im,
                             const kp_tensor *col)
{
    int64_t kind = conv_host->tunable_index(l, CONV_TUNE_ROWS);
    int64_t wg = conv_host->tunable_index(l, CONV_TUNE_WG);
    int64_t rows = kind == 3 ? tile_rows(conv_host->device(l), g, wg) : 0;
    const char *entry = kind == 1 ? "conv_im2col_rows" : rows ? "conv_im2col_tiles" : "conv_im2col";
    kp_clargs a = kp_clargs_begin(conv_host, l, entry, NULL);
    conv_clargs_geom(&a, g);
    kp_clargs_tensor(&a, im, 4);
    kp_clargs_tensor(&a, col, 3);
    if (kind == 1)
        return conv_clargs_run(&a, g->C * g->KH * g->KW, g->N);
    if (!rows)
        return conv_clargs_run(&a, g->N * g->C * g->OH * g->OW, 1);
    conv_host->log(l, KP_LOG_DEBUG, "conv: im2col in tiles of %lld rows", (long long)rows);
    kp_clargs_int(&a, (int)rows);
    kp_clargs_local(&a, (size_t)(tile_height(g, rows) * tile_width(g)) * sizeof(float));
    return conv_clargs_run(&a, (g->OH + rows - 1) / rows * wg, g->N * g->C);
}

kp_status conv_col2im_launch(kp_launch *l, const conv_geom *g, const kp_tensor *col,
                             const kp_tensor *im)
{
    int rows = conv_row_kernels(l);
    kp_clargs a = kp_clargs_begin(conv_host, l, rows ? "conv_col2im_rows" : "conv_col2im", NULL);
    conv_clargs_geom(&a, g);
    kp_clargs_tensor(&a, col, 3);
    kp_clargs_tensor(&a, im, 4);
    if (rows)
        return conv_clargs_run(&a, g->C * g->H, g->N);
    return conv_clargs_run(&a, g->H * g->W, g->N * g->C);
}
