/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport tensors: the kp_tensor value type and its helpers, header-only so that plugins,
 * which link nothing from the library, can use them too. */
#ifndef KERNELPORT_TENSOR_H
#define KERNELPORT_TENSOR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The small helpers of the public headers are defined here (static inline: plugins, which link
 * nothing from the library, and C and C++ programs use them without a call) and the library also
 * exports each under the same name (core/exports.c defines KP_INLINE before including the
 * headers), so that a program in another language can call them through the C ABI.
 */
#ifndef KP_INLINE
#define KP_INLINE static inline
#endif

/* The most parameters a kernel may declare; a launch passes at most this many arguments. */
#define KP_MAX_PARAMS 64

typedef struct kp_buffer kp_buffer;

typedef enum kp_dtype {
    KP_DTYPE_NONE = 0,
    KP_F32 = 1,
    KP_F16 = 2,
    KP_I32 = 3,
    KP_U32 = 4,
    KP_U8 = 5,
    KP_BF16 = 6, /* bfloat16: the upper half of an IEEE single */
    KP_F64 = 7,  /* IEEE double; only kernels that say so take it (cl_khr_fp64 devices) */
    KP_DTYPE_COUNT
} kp_dtype;

#define KP_MAX_RANK 8

/*
 * A view of a buffer: element type, shape, strides and offset in elements. A plain value that
 * does not own its buffer. A rank-0 tensor is a scalar (one element at `offset`). Strides may
 * be 0 (broadcast); negative ones (a flipped view: `offset` is then the element at index 0, not
 * the lowest) only where a kernel's parameter accepts them (KP_PARAM_NEGATIVE_STRIDES in its
 * descriptor: the tensor family's do); launches refuse them elsewhere. Passed by value and
 * embedded in other structures, so its layout never changes within an ABI (docs/stability.md).
 */
typedef struct kp_tensor {
    kp_buffer *buffer;
    int32_t dtype; /* a kp_dtype */
    int32_t rank;
    int64_t offset;
    int64_t shape[KP_MAX_RANK];
    int64_t strides[KP_MAX_RANK];
} kp_tensor;

/*
 * Helpers. All are pure functions of their arguments, thread-safe, and never fail:
 *   kp_dtype_name: "f32", "f16", "i32", "u32", "u8", "bf16", "f64" ("none" otherwise);
 * kp_dtype_size: bytes per element (0 for none); kp_tensor_nd/1d/2d/3d: a contiguous row-major view
 * over `buf` at offset 0 (rank <= KP_MAX_RANK; a bad rank gives rank -1, which launches reject;
 * strides past INT64_MAX stop at INT64_MAX, a view launches reject); kp_tensor_numel: the product
 * of the shape (1 for rank 0); kp_tensor_is_contiguous: row-major strides; kp_tensor_extent: one
 * past the largest element index the view touches (offset for an empty view); kp_tensor_transpose:
 * dimensions d0 and d1 swapped, no data moved; kp_tensor_flip: dimension d reversed (its stride
 * negated, the offset moved to its last element; a move past int64 gives offset INT64_MAX, which
 * launches reject; a d outside the rank, or an empty dimension, leaves t as it is);
 * kp_tensor_narrow: `length` elements of dimension d from `start` (PyTorch's narrow; a length of 0
 * keeps the offset; start and length outside 0 .. the extent give extent 0 at offset INT64_MAX,
 * which launches reject; a d outside the rank leaves t as it is); kp_tensor_step_overflows: whether
 *   offset + n * s passes int64 (their helper); kp_tensor_describe: "f32[3, 4]" plus strides and
 *   offset when they matter, into buf.
 * kp_tensor_numel and kp_tensor_extent return INT64_MAX for a count past INT64_MAX (stride-0
 * dimensions cost no memory, so [2^32, 2^32] is a view of one element) and for a view with a
 * negative extent, stride or offset: never a small number, so that a check against a limit
 * refuses such a view. Launches reject a view whose extents multiply past INT64_MAX, so a
 * kernel's callbacks never see one.
 */
KP_INLINE const char *kp_dtype_name(kp_dtype dtype)
{
    static const char *const names[KP_DTYPE_COUNT] = {"none", "f32", "f16",  "i32",
                                                      "u32",  "u8",  "bf16", "f64"};
    return (unsigned)dtype < KP_DTYPE_COUNT ? names[dtype] : "none";
}

KP_INLINE size_t kp_dtype_size(kp_dtype dtype)
{
    static const size_t sizes[KP_DTYPE_COUNT] = {0, 4, 2, 4, 4, 1, 2, 8};
    return (unsigned)dtype < KP_DTYPE_COUNT ? sizes[dtype] : 0;
}

KP_INLINE kp_tensor kp_tensor_nd(kp_buffer *buf, kp_dtype dtype, int32_t rank, const int64_t *shape)
{
    kp_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = buf;
    t.dtype = dtype;
    if (rank < 0 || rank > KP_MAX_RANK) {
        t.rank = -1; /* rejected by launch validation with a clear message */
        return t;
    }
    t.rank = rank;
    int64_t stride = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        if (shape[d] > 1)
            stride = stride > INT64_MAX / shape[d] ? INT64_MAX : stride * shape[d];
    }
    return t;
}

KP_INLINE kp_tensor kp_tensor_1d(kp_buffer *buf, kp_dtype dtype, int64_t n0)
{
    const int64_t shape[1] = {n0};
    return kp_tensor_nd(buf, dtype, 1, shape);
}

KP_INLINE kp_tensor kp_tensor_2d(kp_buffer *buf, kp_dtype dtype, int64_t n0, int64_t n1)
{
    const int64_t shape[2] = {n0, n1};
    return kp_tensor_nd(buf, dtype, 2, shape);
}

KP_INLINE kp_tensor kp_tensor_3d(kp_buffer *buf, kp_dtype dtype, int64_t n0, int64_t n1, int64_t n2)
{
    const int64_t shape[3] = {n0, n1, n2};
    return kp_tensor_nd(buf, dtype, 3, shape);
}

KP_INLINE int64_t kp_tensor_numel(const kp_tensor *t)
{
    int64_t n = 1;
    int past = 0;
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++) {
        if (t->shape[d] < 0)
            return INT64_MAX;
        if (t->shape[d] == 0)
            n = 0;
        else if (n > INT64_MAX / t->shape[d])
            past = 1;
        else
            n *= t->shape[d];
    }
    return n == 0 ? 0 : past ? INT64_MAX : n;
}

KP_INLINE int kp_tensor_is_contiguous(const kp_tensor *t)
{
    int64_t stride = 1;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        if (t->shape[d] < 0 || (t->shape[d] != 1 && t->strides[d] != stride))
            return 0;
        if (t->shape[d] > 1 && stride > INT64_MAX / t->shape[d]) {
            /* The next stride would pass INT64_MAX, which no stride equals. */
            while (--d >= 0)
                if (t->shape[d] != 1)
                    return 0;
            return 1;
        }
        stride *= t->shape[d];
    }
    return 1;
}

KP_INLINE int64_t kp_tensor_extent(const kp_tensor *t)
{
    int empty = 0;
    if (t->offset < 0 || t->offset == INT64_MAX)
        return INT64_MAX;
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++) {
        if (t->shape[d] < 0 || t->strides[d] < 0)
            return INT64_MAX;
        empty |= t->shape[d] == 0;
    }
    if (empty)
        return t->offset;
    int64_t last = t->offset; /* at most INT64_MAX - 1, so that last + 1 fits */
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++) {
        int64_t n = t->shape[d] - 1;
        if (n > 0 && t->strides[d] > (INT64_MAX - 1 - last) / n)
            return INT64_MAX;
        last += n * t->strides[d];
    }
    return last + 1;
}

KP_INLINE kp_tensor kp_tensor_transpose(kp_tensor t, int32_t d0, int32_t d1)
{
    if (d0 < 0 || d1 < 0 || d0 >= t.rank || d1 >= t.rank)
        return t;
    int64_t s = t.shape[d0], st = t.strides[d0];
    t.shape[d0] = t.shape[d1];
    t.strides[d0] = t.strides[d1];
    t.shape[d1] = s;
    t.strides[d1] = st;
    return t;
}

/* Whether offset + n * s passes int64 (n >= 0, offset >= 0). */
KP_INLINE int kp_tensor_step_overflows(int64_t offset, int64_t n, int64_t s)
{
    if (offset < 0 || s == INT64_MIN || (s != 0 && n > INT64_MAX / (s < 0 ? -s : s)))
        return 1;
    return s > 0 && n * s > INT64_MAX - offset;
}

KP_INLINE kp_tensor kp_tensor_flip(kp_tensor t, int32_t d)
{
    if (d < 0 || d >= t.rank || t.shape[d] <= 0)
        return t;
    const int64_t s = t.strides[d];
    if (kp_tensor_step_overflows(t.offset, t.shape[d] - 1, s)) {
        t.offset = INT64_MAX;
        return t;
    }
    t.offset += (t.shape[d] - 1) * s;
    t.strides[d] = -s;
    return t;
}

KP_INLINE kp_tensor kp_tensor_narrow(kp_tensor t, int32_t d, int64_t start, int64_t length)
{
    if (d < 0 || d >= t.rank)
        return t;
    if (start < 0 || length < 0 || start > t.shape[d] || length > t.shape[d] - start ||
        kp_tensor_step_overflows(t.offset, start, t.strides[d])) {
        t.shape[d] = 0;
        t.offset = INT64_MAX;
        return t;
    }
    /* An empty part keeps the offset, which a flipped dimension could otherwise move below 0. */
    if (length > 0)
        t.offset += start * t.strides[d];
    t.shape[d] = length;
    return t;
}

KP_INLINE char *kp_tensor_describe(const kp_tensor *t, char *buf, size_t size)
{
    size_t n = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w = snprintf(buf + n, n < size ? size - n : 0, __VA_ARGS__);                           \
        if (w > 0)                                                                                 \
            n += (size_t)w;                                                                        \
    } while (0)
    if (!buf || size == 0)
        return buf;
    PUT("%s[", kp_dtype_name((kp_dtype)t->dtype));
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++)
        PUT("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    PUT("]");
    if (!kp_tensor_is_contiguous(t)) {
        PUT(" strides [");
        for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++)
            PUT("%s%lld", d ? ", " : "", (long long)t->strides[d]);
        PUT("]");
    }
    if (t->offset)
        PUT(" offset %lld", (long long)t->offset);
#undef PUT
    if (n >= size)
        buf[size - 1] = '\0';
    return buf;
}

/* IEEE 754 half precision <-> float, rounding to nearest even (for f16 tensors' host data). */
KP_INLINE uint16_t kp_half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1)))
        half++;
    return (uint16_t)half;
}

KP_INLINE float kp_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float f;
    if (exp == 0)
        f = ldexpf((float)mant, -24);
    else if (exp == 31)
        f = mant ? NAN : INFINITY;
    else
        f = ldexpf((float)(mant | 0x400u), (int)exp - 25);
    uint32_t x;
    memcpy(&x, &f, 4);
    x |= sign;
    memcpy(&f, &x, 4);
    return f;
}

/* bfloat16 <-> float: to nearest even, NaN kept a (quiet) NaN; widening is exact. */
KP_INLINE uint16_t kp_bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

KP_INLINE float kp_bf16_to_float(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/*
 * Element i of host data of `dtype` as a double (0 for none), and a store of the float v into
 * element i, converted as the kernels convert: f16 and bf16 to nearest even (a NaN stays a NaN),
 * integers truncated toward zero and saturated to their range, NaN as 0 (OpenCL's
 * convert_int_sat_rtz; PyTorch's .to(torch.int32) leaves those cases undefined).
 */
KP_INLINE double kp_dtype_load(const void *data, kp_dtype dtype, int64_t i)
{
    switch (dtype) {
    case KP_F32:
        return ((const float *)data)[i];
    case KP_F16:
        return kp_half_to_float(((const uint16_t *)data)[i]);
    case KP_I32:
        return ((const int32_t *)data)[i];
    case KP_U32:
        return ((const uint32_t *)data)[i];
    case KP_U8:
        return ((const uint8_t *)data)[i];
    case KP_BF16:
        return kp_bf16_to_float(((const uint16_t *)data)[i]);
    case KP_F64:
        return ((const double *)data)[i];
    default:
        return 0;
    }
}

KP_INLINE void kp_dtype_store(void *data, kp_dtype dtype, int64_t i, float v)
{
    /* Truncated toward zero within [lo, hi], as a double holds every 32-bit integer. */
    double t = isnan(v) ? 0.0 : trunc((double)v), lo = dtype == KP_I32 ? -2147483648.0 : 0.0;
    double hi = dtype == KP_I32 ? 2147483647.0 : dtype == KP_U32 ? 4294967295.0 : 255.0;
    t = t < lo ? lo : t > hi ? hi : t;
    switch (dtype) {
    case KP_F32:
        ((float *)data)[i] = v;
        break;
    case KP_F16:
        ((uint16_t *)data)[i] = kp_half_from_float(v);
        break;
    case KP_I32:
        ((int32_t *)data)[i] = (int32_t)t;
        break;
    case KP_U32:
        ((uint32_t *)data)[i] = (uint32_t)t;
        break;
    case KP_U8:
        ((uint8_t *)data)[i] = (uint8_t)t;
        break;
    case KP_BF16:
        ((uint16_t *)data)[i] = kp_bf16_from_float(v);
        break;
    case KP_F64:
        ((double *)data)[i] = v;
        break;
    default:
        break;
    }
}

#ifdef __cplusplus
}
#endif

#endif
