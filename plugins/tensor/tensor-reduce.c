/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.sum, mean, prod, max, min, argmax, argmin over a set of axes, and the backward of sum
 * and mean. Each output element is one work-item's sequential sum over its terms in row-major
 * order: the same bits on every run and at every work-group size. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

/* One reduction: its combine, the scale applied after (mean), and its output dtype. */
typedef struct reduction {
    const char *name, *summary;
    int comb;
    int mean;
    int32_t out_dtype;
} reduction;

static const reduction reductions[] = {
    {"sum", "y = the sum of x over `axes`", TC_SUM, 0, KP_F32},
    {"mean", "y = the mean of x over `axes`", TC_SUM, 1, KP_F32},
    {"prod", "y = the product of x over `axes`", TC_PROD, 0, KP_F32},
    {"max", "y = the largest x over `axes`; NaN if any is", TC_MAX, 0, KP_F32},
    {"min", "y = the smallest x over `axes`; NaN if any is", TC_MIN, 0, KP_F32},
    {"argmax", "y = the row-major index over `axes` of the first largest x (a NaN wins)", TC_ARGMAX,
     0, KP_I32},
    {"argmin", "y = the row-major index over `axes` of the first smallest x (a NaN wins)",
     TC_ARGMIN, 0, KP_I32},
};
#define N_REDUCTIONS (sizeof reductions / sizeof reductions[0])

enum { RD_X, RD_Y, RD_AXES, RD_N };
static const kp_param_desc params_f32[] = {
    [RD_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "any shape, any strides"},
    [RD_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_OUT,
              .dtypes = TENSOR_FLOATS,
              .doc = "x's shape with the reduced axes 1 (keepdim) or left out; x's dtype or f32 "
                     "(the sum is f32 either way)"},
    [RD_AXES] = {.name = "axes",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .int_default = -1,
                 .doc = "bit d set: reduce x's dimension d; -1 (default): every dimension"},
};
static const kp_param_desc params_i32[] = {
    [RD_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "any shape, any strides"},
    [RD_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_OUT,
              .dtypes = KP_DT(KP_I32),
              .doc = "x's shape with the reduced axes 1 (keepdim) or left out"},
    [RD_AXES] = {.name = "axes",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .int_default = -1,
                 .doc = "bit d set: reduce x's dimension d; -1 (default): every dimension"},
};
enum { RB_DY, RB_DX, RB_AXES, RB_N };
static const kp_param_desc back_params[] = {
    [RB_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_IN,
               .dtypes = TENSOR_FLOATS,
               .doc = "the gradient of y"},
    [RB_DX] = {.name = "dx",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_OUT,
               .dtypes = TENSOR_FLOATS,
               .doc = "x's shape: dy broadcast back (mean: divided by "
                      "the terms)"},
    [RB_AXES] = {.name = "axes",
                 .kind = KP_ARG_KIND_INT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .int_default = -1,
                 .doc = "the forward's axes"},
};

/*
 * y (reduced x over `axes`, keepdim or not) as a view over x's dimensions: extent 1 and stride 0
 * at the reduced axes. Fails naming the shapes when y is neither form.
 */
kp_status tensor_keepdim_view(kp_launch *l, const kp_tensor *x, const kp_tensor *y,
                              const char *y_name, int64_t axes, kp_tensor *out, int64_t *terms)
{
    if (axes != -1 && (axes < 0 || axes >= ((int64_t)1 << x->rank)))
        return tensor_host->fail(
            l, KP_ERR_INVALID_ARG,
            "axes: %lld names a dimension past x's %d (bit d: dimension d; -1: "
            "all)",
            (long long)axes, x->rank);
    *out = *y;
    out->rank = x->rank;
    *terms = 1;
    int kept = 0;
    for (int d = 0; d < x->rank; d++)
        kept += !((axes >> d) & 1);
    const int keepdim = y->rank == x->rank;
    if (!keepdim && y->rank != kept) {
        char a[160];
        return tensor_host->fail(
            l, KP_ERR_INVALID_ARG,
            "%s: rank %d, but x %s reduced over axes 0x%llx has rank %d, or %d "
            "with keepdim",
            y_name, y->rank, tensor_shape_str(x, a, sizeof a),
            (unsigned long long)axes & ((1ull << x->rank) - 1), kept, x->rank);
    }
    for (int d = 0, yd = 0; d < x->rank; d++) {
        int red = (axes >> d) & 1;
        int64_t want = red ? 1 : x->shape[d];
        if (red)
            *terms *= x->shape[d];
        if (red && !keepdim) {
            out->shape[d] = 1;
            out->strides[d] = 0;
            continue;
        }
        if (y->shape[yd] != want) {
            char a[160], b[160];
            return tensor_host->fail(
                l, KP_ERR_INVALID_ARG,
                "%s: shape %s, but x %s reduced over axes 0x%llx gives %lld at "
                "dimension %d",
                y_name, tensor_shape_str(y, a, sizeof a), tensor_shape_str(x, b, sizeof b),
                (unsigned long long)axes & ((1ull << x->rank) - 1), (long long)want, d);
        }
        out->shape[d] = y->shape[yd];
        out->strides[d] = red ? 0 : y->strides[yd];
        yd++;
    }
    return KP_OK;
}

static const reduction *reduction_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

/* The reduction's space over x's dimensions, y's keepdim view in it and the terms of each
 * output element. */
static kp_status space(kp_launch *l, const kp_call *call, tensor_space *s, kp_tensor *y,
                       int64_t *terms)
{
    const kp_tensor *x = &call->args[RD_X].tensor, *yt = &call->args[RD_Y].tensor;
    /* As PyTorch: the result in x's dtype, or f32 (sum(dtype=torch.float32)); f32 inside. */
    if (reduction_of(l)->out_dtype != KP_I32 && yt->dtype != KP_F32 && yt->dtype != x->dtype)
        return tensor_host->fail(
            l, KP_ERR_INVALID_ARG, "y: dtype %s, but a %s of %s x is %s or f32",
            kp_dtype_name((kp_dtype)yt->dtype), reduction_of(l)->name,
            kp_dtype_name((kp_dtype)x->dtype), kp_dtype_name((kp_dtype)x->dtype));
    kp_status st = tensor_keepdim_view(l, x, yt, "y", call->args[RD_AXES].i, y, terms);
    const kp_tensor *in[1] = {x};
    static const char *const names[1] = {"x"};
    if (st == KP_OK)
        st = tensor_space_make(l, x->rank, x->shape, y, "y", in, names, 1, s);
    if (st == KP_OK && *terms == 0 && reduction_of(l)->comb >= TC_MAX)
        st = tensor_host->fail(l, KP_ERR_INVALID_ARG,
                               "x: reducing an empty set of elements has no %s",
                               reduction_of(l)->name);
    return st;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    return space(l, call, &s, &y, &terms);
}

static double post_of(const reduction *r, int64_t terms)
{
    return r->mean ? (terms ? 1.0 / (double)terms : (double)NAN) : 1.0;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const reduction *r = reduction_of(l);
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    kp_status st = space(l, call, &s, &y, &terms);
    const kp_tensor *in[1] = {&call->args[RD_X].tensor};
    return st == KP_OK
               ? tensor_space_enqueue(l, &s, &y, in, TM_COPY, r->comb, 0.0, post_of(r, terms))
               : st;
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    const reduction *r = reduction_of(l);
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    kp_status st = space(l, call, &s, &y, &terms);
    if (st != KP_OK)
        return st;
    const void *in[1] = {call->args[RD_X].host};
    tensor_space_reference(&s, call->args[RD_Y].host, s.out_dtype, in, TM_COPY, r->comb, 0.0,
                           post_of(r, terms));
    return KP_OK;
}

/* ---- sum_backward, mean_backward: dx = dy broadcast over the reduced axes ---- */

/* dx's space, dy's keepdim view in it and the terms each dy element was the sum of. */
static kp_status back_space(kp_launch *l, const kp_call *call, tensor_space *s, kp_tensor *dy,
                            int64_t *terms)
{
    const kp_tensor *dx = &call->args[RB_DX].tensor;
    kp_status st = tensor_keepdim_view(l, dx, &call->args[RB_DY].tensor, "dy",
                                       call->args[RB_AXES].i, dy, terms);
    const kp_tensor *in[1] = {dy};
    static const char *const names[1] = {"dy"};
    return st == KP_OK ? tensor_space_make(l, dx->rank, dx->shape, dx, "dx", in, names, 1, s) : st;
}

static kp_status back_check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_tensor dy;
    int64_t terms;
    return back_space(l, call, &s, &dy, &terms);
}

static kp_status back_run(const kp_call *call, kp_launch *l, int ref)
{
    const reduction *r = reduction_of(l);
    tensor_space s;
    kp_tensor dy;
    int64_t terms;
    kp_status st = back_space(l, call, &s, &dy, &terms);
    if (st != KP_OK)
        return st;
    double scale = post_of(r, terms);
    if (ref) {
        const void *in[1] = {call->args[RB_DY].host};
        tensor_space_reference(&s, call->args[RB_DX].host, s.out_dtype, in, TM_SCALE, TC_SUM, scale,
                               1.0);
        return KP_OK;
    }
    const kp_tensor *in[1] = {&dy};
    return tensor_space_enqueue(l, &s, &call->args[RB_DX].tensor, in, TM_SCALE, TC_SUM, scale, 1.0);
}

static kp_status back_enqueue(const kp_call *call, kp_launch *l)
{
    return back_run(call, l, 0);
}

static kp_status back_reference(const kp_call *call, kp_launch *l)
{
    return back_run(call, l, 1);
}

/* ---- samples ---- */

/* x [37, 53] over its rows (axes 2: the last dimension), its columns (1), everything (-1, y of
 * rank 0); [5, 7, 11] over the middle one, keepdim; a transposed x; one element; x reversed
 * along both dimensions over its rows into a reversed y (negative strides; the backward: dy
 * reversed, dx reversed along its columns). */
static const char *const verify_sizes[] = {"one",    "rows",  "cols",    "all",
                                           "middle", "views", "flipped", NULL};
/* sum and mean check 16-bit storage too (one more program each): a bf16 sum into bf16, a mean of
 * f16 into f32 (tensor_size_dtypes names them). */
static const char *const sum_sizes[] = {"one",   "rows",    "cols",      "all", "middle",
                                        "views", "flipped", "rows-bf16", NULL};
static const char *const mean_sizes[] = {"one",   "rows",    "cols",         "all", "middle",
                                         "views", "flipped", "cols-f16-f32", NULL};
static const char *const bench_sizes[] = {"4096x4096/last", "4096x4096/first", NULL};
static const char *const sum_bench_sizes[] = {"4096x4096/last", "4096x4096/first",
                                              "4096x4096/last-bf16", "4096x4096/first-bf16", NULL};

static int sample_dims(const char *size, int *rank, int64_t *x, int64_t *axes, int *keepdim)
{
    *keepdim = 0;
    *rank = 2;
    x[0] = 37, x[1] = 53;
    if (strcmp(size, "one") == 0) {
        *rank = 1, x[0] = 1, *axes = 1;
    } else if (strcmp(size, "rows") == 0 || strcmp(size, "views") == 0 ||
               strcmp(size, "flipped") == 0) {
        *axes = 2;
    } else if (strcmp(size, "cols") == 0) {
        *axes = 1;
    } else if (strcmp(size, "all") == 0) {
        *axes = -1;
    } else if (strcmp(size, "middle") == 0) {
        *rank = 3, x[0] = 5, x[1] = 7, x[2] = 11, *axes = 2, *keepdim = 1;
    } else if (strcmp(size, "4096x4096/last") == 0) {
        x[0] = x[1] = 4096, *axes = 2;
    } else if (strcmp(size, "4096x4096/first") == 0) {
        x[0] = x[1] = 4096, *axes = 1;
    } else {
        return 0;
    }
    return 1;
}

/* The reduced shape of x [rank] over axes. */
static int reduced_shape(int rank, const int64_t *x, int64_t axes, int keepdim, int64_t *y)
{
    int n = 0;
    for (int d = 0; d < rank; d++) {
        int red = axes == -1 || ((axes >> d) & 1);
        if (!red)
            y[n++] = x[d];
        else if (keepdim)
            y[n++] = 1;
    }
    return n;
}

static kp_status sample(kp_sample *smp, const char *size)
{
    const reduction *r = tensor_host->sample_kernel_user(smp);
    int rank, keepdim;
    int64_t x[3], y[3], axes;
    char base[32];
    int32_t dt[2];
    tensor_size_dtypes(size, base, sizeof base, dt, 2);
    if (!sample_dims(base, &rank, x, &axes, &keepdim))
        return KP_ERR_NOT_FOUND;
    int ry = reduced_shape(rank, x, axes, keepdim, y);
    /* A product of many terms leaves float's range unless they stay near 1. */
    double lo = r->comb == TC_PROD ? 0.9 : -2.0, hi = r->comb == TC_PROD ? 1.1 : 2.0;
    kp_status st = tensor_host->sample_tensor(smp, "x", dt[0], rank, x, lo, hi, NULL);
    if (st == KP_OK && strcmp(base, "views") == 0) {
        const int64_t strides[2] = {1, x[0]};
        st = tensor_host->sample_view(smp, "x", 2, x, 0, strides);
    }
    const int flipped = strcmp(size, "flipped") == 0;
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "x", rank, x, 3);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "y", r->out_dtype == KP_I32 ? KP_I32 : dt[1], ry, y,
                                        0.0, 0.0, NULL);
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "y", ry, y, 1);
    return st == KP_OK && axes != -1 ? tensor_host->sample_int(smp, "axes", axes) : st;
}

static kp_status back_sample(kp_sample *smp, const char *size)
{
    int rank, keepdim;
    int64_t x[3], y[3], axes;
    if (!sample_dims(size, &rank, x, &axes, &keepdim))
        return KP_ERR_NOT_FOUND;
    int ry = reduced_shape(rank, x, axes, keepdim, y);
    const int flipped = strcmp(size, "flipped") == 0;
    kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, ry, y, -1.0, 1.0, NULL);
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "dy", ry, y, 1);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "dx", KP_F32, rank, x, 0.0, 0.0, NULL);
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "dx", rank, x, 2);
    return st == KP_OK && axes != -1 ? tensor_host->sample_int(smp, "axes", axes) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    double n = (double)kp_tensor_numel(&call->args[0].tensor);
    double m = (double)kp_tensor_numel(&call->args[1].tensor);
    out->flops = n > m ? n : m;
    out->bytes = tensor_dtype_bytes(call);
}

/* A sum adds one rounding per term. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    double n = (double)kp_tensor_numel(&call->args[RD_X].tensor);
    double m = (double)kp_tensor_numel(&call->args[RD_Y].tensor);
    double terms = m > 0 ? n / m : 1;
    *atol = 1e-6 * (terms > 1 ? terms : 1);
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* ---- registration ---- */

#define N_DESCS (N_REDUCTIONS + 2)
static const reduction back_of[2] = {
    {"sum_backward", "dx = dy broadcast over the summed axes", TC_SUM, 0, KP_F32},
    {"mean_backward", "dx = dy / n broadcast over the axes", TC_SUM, 1, KP_F32}};

static char names[N_DESCS][40];
static kp_kernel_desc descs[N_DESCS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Fills the descriptors once: a runtime created earlier reads them while a later runtime's
 * init runs. */
static void build(void)
{
    for (size_t i = 0; i < N_DESCS; i++) {
        const int back = i >= N_REDUCTIONS;
        const reduction *r = back ? &back_of[i - N_REDUCTIONS] : &reductions[i];
        snprintf(names[i], sizeof names[i], "tensor.%s", r->name);
        kp_kernel_desc d = {
            .struct_size = sizeof(kp_kernel_desc),
            .name = names[i],
            .summary = r->summary,
            .params = back                     ? back_params
                      : r->out_dtype == KP_I32 ? params_i32
                                               : params_f32,
            .n_params = RD_N,
            .n_tunables = 2,
            .tunables = tensor_tunables,
            .source = kp_kernel_tensor_cl,
            .source_name = "tensor.cl",
            .entry = "tensor_map_reduce",
            .check = back ? back_check : check,
            .enqueue = back ? back_enqueue : enqueue,
            .reference = back ? back_reference : reference,
            .sample = back ? back_sample : sample,
            .cost = cost,
            .verify_sizes = back                           ? verify_sizes
                            : strcmp(r->name, "sum") == 0  ? sum_sizes
                            : strcmp(r->name, "mean") == 0 ? mean_sizes
                                                           : verify_sizes,
            .bench_sizes = !back && strcmp(r->name, "sum") == 0 ? sum_bench_sizes : bench_sizes,
            .atol = 1e-6,
            .rtol = 1e-5,
            .tolerance = back ? NULL : tolerance,
            .user = (void *)r,
        };
        descs[i] = d;
    }
}

kp_status tensor_register_reductions(const kp_host_api *api, kp_registrar *reg)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < N_DESCS; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
