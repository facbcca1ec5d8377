/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.mul_sum: y = the sum of a * b over the axes y is broadcast along, a, b and y broadcast
 * together: a contraction in one launch of the map-reduce kernel (a small matrix product is a
 * [M, K, 1] by [1, K, N] into [M, 1, N]). Each output element is one work-item's (or, for few
 * outputs of many terms, one fixed lane layout's) sum in row-major order: deterministic. */
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

enum { MS_A, MS_B, MS_Y, MS_N };
static const kp_param_desc params[] = {
    [MS_A] = {.name = "a",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "broadcasts with b (NumPy's rule)"},
    [MS_B] = {.name = "b",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "broadcasts with a"},
    [MS_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_OUT,
              .dtypes = TENSOR_FLOATS,
              .doc = "broadcasts to a and b's shape; summed over the axes where it has extent 1 "
                     "(or none) against more"},
};

static kp_status space(kp_launch *l, const kp_call *call, tensor_space *s)
{
    const kp_tensor *in[2] = {&call->args[MS_A].tensor, &call->args[MS_B].tensor};
    static const char *const names[2] = {"a", "b"};
    int rank;
    int64_t full[KP_MAX_RANK];
    kp_status st = tensor_broadcast_shape(l, in, names, 2, &rank, full);
    return st == KP_OK
               ? tensor_space_make(l, rank, full, &call->args[MS_Y].tensor, "y", in, names, 2, s)
               : st;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    return space(l, call, &s);
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = space(l, call, &s);
    const kp_tensor *in[2] = {&call->args[MS_A].tensor, &call->args[MS_B].tensor};
    return st == KP_OK
               ? tensor_space_enqueue(l, &s, &call->args[MS_Y].tensor, in, TM_MUL, TC_SUM, 0.0, 1.0)
               : st;
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = space(l, call, &s);
    const void *ptr[2] = {call->args[MS_A].host, call->args[MS_B].host};
    if (st == KP_OK)
        tensor_space_reference(&s, call->args[MS_Y].host, call->args[MS_Y].tensor.dtype, ptr,
                               TM_MUL, TC_SUM, 0.0, 1.0);
    return st;
}

/* ---- samples ---- */

/* A matrix product [5, 7] x [7, 3]; a batched one [2, 3, 4] x [2, 4, 5]; a dot product of 13
 * into rank 0; a [37, 11] times a broadcast row, summed over the rows; a product whose a is a
 * transposed view; the XOR model's first layer [4, 2] x [2, 8]; one of 64 x 129 x 17 (terms past
 * the work-group); the matrix product with a reversed along M and K, b along K and y along N
 * (negative strides); in 16-bit storage, a bf16 product into bf16 and an f16 by bf16 batched one
 * into f32. */
static const char *const verify_sizes[] = {
    "matmul", "batched", "dot",     "rows",        "views",
    "xor",    "big",     "flipped", "matmul-bf16", "batched-f16-bf16-f32",
    NULL};
static const char *const bench_sizes[] = {"xor", "256x256x256", NULL};

typedef struct mul_sum_shapes {
    int rank[3];
    int64_t shape[3][4];
} mul_sum_shapes;

static void matmul_shapes(mul_sum_shapes *s, int64_t m, int64_t k, int64_t n)
{
    *s = (mul_sum_shapes){.rank = {3, 3, 3}, .shape = {{m, k, 1}, {1, k, n}, {m, 1, n}}};
}

static int sample_shapes(const char *size, mul_sum_shapes *s)
{
    if (strcmp(size, "matmul") == 0 || strcmp(size, "views") == 0 || strcmp(size, "flipped") == 0)
        matmul_shapes(s, 5, 7, 3);
    else if (strcmp(size, "xor") == 0)
        matmul_shapes(s, 4, 2, 8);
    else if (strcmp(size, "big") == 0)
        matmul_shapes(s, 64, 129, 17);
    else if (strcmp(size, "256x256x256") == 0)
        matmul_shapes(s, 256, 256, 256);
    else if (strcmp(size, "batched") == 0)
        *s = (mul_sum_shapes){.rank = {4, 4, 4},
                              .shape = {{2, 3, 4, 1}, {2, 1, 4, 5}, {2, 3, 1, 5}}};
    else if (strcmp(size, "dot") == 0)
        *s = (mul_sum_shapes){.rank = {1, 1, 0}, .shape = {{13}, {13}, {0}}};
    else if (strcmp(size, "rows") == 0)
        *s = (mul_sum_shapes){.rank = {2, 1, 1}, .shape = {{37, 11}, {11}, {11}}};
    else
        return 0;
    return 1;
}

static kp_status sample(kp_sample *smp, const char *size)
{
    mul_sum_shapes s;
    char base[32];
    int32_t dt[3];
    tensor_size_dtypes(size, base, sizeof base, dt, 3);
    size = base;
    if (!sample_shapes(size, &s))
        return KP_ERR_NOT_FOUND;
    kp_status st =
        tensor_host->sample_tensor(smp, "a", dt[0], s.rank[0], s.shape[0], -1.0, 1.0, NULL);
    if (st == KP_OK && strcmp(size, "views") == 0) {
        /* a [5, 7, 1] read from a [7, 5] buffer: the transpose of a stored matrix. */
        const int64_t strides[3] = {1, s.shape[0][0], 1};
        st = tensor_host->sample_view(smp, "a", 3, s.shape[0], 0, strides);
    }
    const int flipped = strcmp(size, "flipped") == 0;
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "a", s.rank[0], s.shape[0], 3);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "b", dt[1], s.rank[1], s.shape[1], -1.0, 1.0, NULL);
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "b", s.rank[1], s.shape[1], 2);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "y", dt[2], s.rank[2], s.shape[2], 0.0, 0.0, NULL);
    return st == KP_OK && flipped ? tensor_sample_flip(smp, "y", s.rank[2], s.shape[2], 4) : st;
}

/* The broadcast shape's elements: one multiply-add each. */
static double terms_total(const kp_call *call)
{
    const kp_tensor *a = &call->args[MS_A].tensor, *b = &call->args[MS_B].tensor;
    const int rank = a->rank > b->rank ? a->rank : b->rank;
    double n = 1;
    for (int d = 0; d < rank; d++) {
        const int da = d - (rank - a->rank), db = d - (rank - b->rank);
        const int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        n *= (double)(ea > eb ? ea : eb);
    }
    return n;
}

static void cost(const kp_call *call, kp_cost *out)
{
    out->flops = 2 * terms_total(call);
    out->bytes = tensor_dtype_bytes(call);
}

/* One rounding per term of each output element. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    const double ny = (double)kp_tensor_numel(&call->args[MS_Y].tensor);
    const double terms = ny > 0 ? terms_total(call) / ny : 1;
    *atol = 2e-6 * (terms > 1 ? terms : 1);
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

kp_status tensor_register_contractions(const kp_host_api *api, kp_registrar *reg)
{
    static const kp_kernel_desc d = {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "tensor.mul_sum",
        .summary = "y = the sum of a * b over the axes y is broadcast along (a contraction: small "
                   "matrix products, batched dot products)",
        .params = params,
        .n_params = MS_N,
        .n_tunables = 2,
        .tunables = tensor_tunables,
        .source = kp_kernel_tensor_cl,
        .source_name = "tensor.cl",
        .entry = "tensor_map_reduce",
        .check = check,
        .enqueue = enqueue,
        .reference = reference,
        .sample = sample,
        .cost = cost,
        .verify_sizes = verify_sizes,
        .bench_sizes = bench_sizes,
        .atol = 1e-6,
        .rtol = 1e-5,
        .tolerance = tolerance,
    };
    return api->register_kernel(reg, &d);
}
