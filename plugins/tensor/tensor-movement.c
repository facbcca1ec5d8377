/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.copy: y = x with x broadcast to y's shape, any strides on both, which makes permute
 * (a permuted view of x), expand, slice (a view), strided gathers and, into a slice of y, pad and
 * concatenation; tensor.copy_backward: dx = dy summed over the axes x was broadcast along (the
 * backward of expand; the backward of slice and pad is a copy of the matching view). */
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

enum { CP_X, CP_Y, CP_N };
static const kp_param_desc copy_params[] = {
    [CP_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_ANY_DTYPE,
              .doc = "broadcasts to y's shape; any strides"},
    [CP_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_OUT,
              .dtypes = TENSOR_ANY_DTYPE,
              .doc = "any strides; another dtype than x's converts (cast)"},
};
enum { CB_DY, CB_DX, CB_N };
static const kp_param_desc back_params[] = {
    [CB_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_IN,
               .dtypes = TENSOR_FLOATS,
               .doc = "the gradient of y"},
    [CB_DX] = {.name = "dx",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_OUT,
               .dtypes = TENSOR_FLOATS,
               .doc = "x's shape: dy summed over the axes x was broadcast along"},
};

/* copy: x into y's space; backward: dy's space, dx broadcast (reduced) where x was. */
static kp_status space(kp_launch *l, const kp_call *call, int backward, tensor_space *s)
{
    const kp_tensor *in = &call->args[0].tensor, *out = &call->args[1].tensor;
    const kp_tensor *full = backward ? in : out;
    static const char *const copy_names[1] = {"x"}, *const back_names[1] = {"dy"};
    return tensor_space_make(l, full->rank, full->shape, out, backward ? "dx" : "y", &in,
                             backward ? back_names : copy_names, 1, s);
}

static kp_status run(const kp_call *call, kp_launch *l, int backward, int reference)
{
    tensor_space s;
    kp_status st = space(l, call, backward, &s);
    if (st != KP_OK || !reference) {
        const kp_tensor *in = &call->args[0].tensor;
        return st == KP_OK ? tensor_space_enqueue(l, &s, &call->args[1].tensor, &in, TM_COPY,
                                                  TC_SUM, 0.0, 1.0)
                           : st;
    }
    const void *in = call->args[0].host;
    tensor_space_reference(&s, call->args[1].host, s.out_dtype, &in, TM_COPY, TC_SUM, 0.0, 1.0);
    return KP_OK;
}

static kp_status copy_check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    return space(l, call, 0, &s);
}

static kp_status copy_enqueue(const kp_call *call, kp_launch *l)
{
    return run(call, l, 0, 0);
}

static kp_status copy_reference(const kp_call *call, kp_launch *l)
{
    return run(call, l, 0, 1);
}

static kp_status back_check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    return space(l, call, 1, &s);
}

static kp_status back_enqueue(const kp_call *call, kp_launch *l)
{
    return run(call, l, 1, 0);
}

static kp_status back_reference(const kp_call *call, kp_launch *l)
{
    return run(call, l, 1, 1);
}

kp_status tensor_sample_flip(kp_sample *smp, const char *name, int rank, const int64_t *shape,
                             unsigned dims)
{
    kp_tensor t = kp_tensor_nd(NULL, KP_F32, rank, shape);
    for (int d = 0; d < rank; d++)
        if ((dims >> d) & 1)
            t = kp_tensor_flip(t, d);
    return tensor_host->sample_view(smp, name, rank, shape, t.offset, t.strides);
}

/* One element; a permute of [5, 7, 11] to (2, 0, 1); an expand of [7, 1] to [3, 7, 13]; a slice
 * [2:5, 1:9] of [7, 11] into a gapped y; x [5, 7, 11] reversed along its first and last
 * dimensions into a y reversed along its middle one (flip); the benchmarks' permute
 * [64, 128, 56, 56] to (0, 2, 3, 1) and flip of [4096, 4096] along both dimensions (one
 * dimension of stride -1 once coalesced). Casts (x's dtype, then y's, as tensor_size_dtypes
 * reads them): "cast" is a contiguous [37, 53], four elements a vector; a same-dtype copy of i32
 * or bf16 moves bits. */
static const char *const verify_sizes[] = {
    "one",          "permute",      "expand",           "slice",     "flipped",   "cast-f32-bf16",
    "cast-i32-f16", "cast-f16-i32", "permute-bf16-f16", "slice-i32", "cast-bf16", NULL};
static const char *const bench_sizes[] = {"permute-64x128x56x56", "flip-4096x4096",
                                          "cast-16M-f32-bf16", NULL};

/* The sampled values of a source of `dtype`: integers past f16's range (and, copied as they are,
 * past 2^24), floats with a fraction to truncate. */
static void source_range(int32_t dtype, int raw, double *lo, double *hi)
{
    *hi = dtype != KP_I32 ? 300.0 : raw ? 2147483647.0 : 70000.0;
    *lo = -*hi;
}

/* x and y of `size` (copy: x the source view, y the destination; backward: dy and dx). */
static kp_status copy_sample(kp_sample *smp, const char *size)
{
    kp_status st;
    char base[32];
    int32_t dt[2];
    tensor_size_dtypes(size, base, sizeof base, dt, 2);
    double lo = -1, hi = 1;
    if (strcmp(base, size) != 0)
        source_range(dt[0], dt[0] == dt[1], &lo, &hi);
    if (strcmp(base, "one") == 0) {
        const int64_t n = 1;
        st = tensor_host->sample_tensor(smp, "x", dt[0], 1, &n, lo, hi, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "y", dt[1], 1, &n, 0, 0, NULL) : st;
    }
    if (strcmp(base, "cast") == 0 || strcmp(base, "cast-16M") == 0) {
        const int64_t n[2] = {base[4] ? 4096 : 37, base[4] ? 4096 : 53};
        st = tensor_host->sample_tensor(smp, "x", dt[0], 2, n, lo, hi, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "y", dt[1], 2, n, 0, 0, NULL) : st;
    }
    if (strcmp(base, "permute") == 0 || strcmp(base, "permute-64x128x56x56") == 0) {
        const int big = base[7] == '-';
        const int64_t d[4] = {big ? 64 : 1, big ? 128 : 5, big ? 56 : 7, big ? 56 : 11};
        /* x [N, C, H, W] read as its (0, 2, 3, 1) permutation [N, H, W, C]. */
        const int64_t perm[4] = {d[0], d[2], d[3], d[1]};
        const int64_t strides[4] = {d[1] * d[2] * d[3], d[3], 1, d[2] * d[3]};
        st = tensor_host->sample_tensor(smp, "x", dt[0], 4, d, lo, hi, NULL);
        if (st == KP_OK)
            st = tensor_host->sample_view(smp, "x", 4, perm, 0, strides);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "y", dt[1], 4, perm, 0, 0, NULL) : st;
    }
    if (strcmp(base, "expand") == 0) {
        const int64_t x[2] = {7, 1}, y[3] = {3, 7, 13};
        st = tensor_host->sample_tensor(smp, "x", dt[0], 2, x, lo, hi, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "y", dt[1], 3, y, 0, 0, NULL) : st;
    }
    if (strcmp(size, "flip-4096x4096") == 0) {
        const int64_t d[2] = {4096, 4096};
        st = tensor_host->sample_tensor(smp, "x", KP_F32, 2, d, -1, 1, NULL);
        if (st == KP_OK)
            st = tensor_sample_flip(smp, "x", 2, d, 3);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "y", KP_F32, 2, d, 0, 0, NULL) : st;
    }
    if (strcmp(size, "flipped") == 0) {
        const int64_t d[3] = {5, 7, 11};
        st = tensor_host->sample_tensor(smp, "x", KP_F32, 3, d, -1, 1, NULL);
        if (st == KP_OK)
            st = tensor_sample_flip(smp, "x", 3, d, 5);
        if (st == KP_OK)
            st = tensor_host->sample_tensor(smp, "y", KP_F32, 3, d, 0, 0, NULL);
        return st == KP_OK ? tensor_sample_flip(smp, "y", 3, d, 2) : st;
    }
    if (strcmp(base, "slice") == 0) {
        const int64_t x[2] = {7, 11}, part[2] = {3, 8}, storage = 3 * 12 + 4;
        st = tensor_host->sample_tensor(smp, "x", dt[0], 2, x, lo, hi, NULL);
        if (st == KP_OK)
            st = tensor_host->sample_view(smp, "x", 2, part, 2 * 11 + 1, (const int64_t[]){11, 1});
        if (st == KP_OK)
            st = tensor_host->sample_tensor(smp, "y", dt[1], 1, &storage, 0, 0, NULL);
        return st == KP_OK
                   ? tensor_host->sample_view(smp, "y", 2, part, 2, (const int64_t[]){12, 1})
                   : st;
    }
    return KP_ERR_NOT_FOUND;
}

/* dy of y's shape and dx of x's: the expand's backward sums dy over the broadcast axes. */
static kp_status back_sample(kp_sample *smp, const char *size)
{
    if (strcmp(size, "expand") == 0) {
        const int64_t x[2] = {7, 1}, y[3] = {3, 7, 13};
        kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, 3, y, -1, 1, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "dx", KP_F32, 2, x, 0, 0, NULL) : st;
    }
    if (strcmp(size, "flipped") == 0) {
        const int64_t x[2] = {7, 1}, y[3] = {3, 7, 13};
        kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, 3, y, -1, 1, NULL);
        if (st == KP_OK)
            st = tensor_sample_flip(smp, "dy", 3, y, 4);
        if (st == KP_OK)
            st = tensor_host->sample_tensor(smp, "dx", KP_F32, 2, x, 0, 0, NULL);
        return st == KP_OK ? tensor_sample_flip(smp, "dx", 2, x, 1) : st;
    }
    if (strcmp(size, "one") == 0) {
        const int64_t n = 1;
        kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, 1, &n, -1, 1, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "dx", KP_F32, 1, &n, 0, 0, NULL) : st;
    }
    if (strcmp(size, "all") == 0) {
        const int64_t y[2] = {37, 53};
        kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, 2, y, -1, 1, NULL);
        return st == KP_OK ? tensor_host->sample_tensor(smp, "dx", KP_F32, 0, NULL, 0, 0, NULL)
                           : st;
    }
    return KP_ERR_NOT_FOUND;
}

/* One element; the expand's backward; a sum of everything; the expand's backward with dy
 * reversed along its last dimension and dx along its first (flipped). */
static const char *const back_sizes[] = {"one", "expand", "all", "flipped", NULL};

static void cost(const kp_call *call, kp_cost *out)
{
    out->flops = 0;
    out->bytes = tensor_dtype_bytes(call);
}

static void back_tolerance(const kp_call *call, double *atol, double *rtol)
{
    double a = (double)kp_tensor_numel(&call->args[0].tensor);
    double b = (double)kp_tensor_numel(&call->args[1].tensor);
    *atol = 1e-6 * (b > 0 ? a / b : 1);
    *rtol = 1e-5;
}

static const kp_kernel_desc descs[] = {
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "tensor.copy",
        .summary =
            "y = x broadcast to y's shape, any strides: permute, expand, slice, flip, gather; "
            "cast to y's dtype",
        .params = copy_params,
        .n_params = CP_N,
        .n_tunables = 1,
        .tunables = tensor_tunables,
        .source = kp_kernel_tensor_cl,
        .source_name = "tensor.cl",
        .entry = "tensor_map_reduce",
        .check = copy_check,
        .enqueue = copy_enqueue,
        .reference = copy_reference,
        .sample = copy_sample,
        .cost = cost,
        .verify_sizes = verify_sizes,
        .bench_sizes = bench_sizes,
    },
    {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "tensor.copy_backward",
        .summary = "dx = dy summed over the axes x was broadcast along (expand's backward)",
        .params = back_params,
        .n_params = CB_N,
        .n_tunables = 2,
        .tunables = tensor_tunables,
        .source = kp_kernel_tensor_cl,
        .source_name = "tensor.cl",
        .entry = "tensor_map_reduce",
        .check = back_check,
        .enqueue = back_enqueue,
        .reference = back_reference,
        .sample = back_sample,
        .cost = cost,
        .verify_sizes = back_sizes,
        .tolerance = back_tolerance,
    },
};

kp_status tensor_register_movement(const kp_host_api *api, kp_registrar *reg)
{
    for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
