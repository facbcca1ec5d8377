/* kp_tensor helpers: construction, size, extent and description of strided views. */
#include <stdio.h>
#include <string.h>

#include "kernelport/kernelport.h"

const char *kp_dtype_name(kp_dtype dtype)
{
    static const char *const names[KP_DTYPE_COUNT] = {"none", "f32", "f16", "i32", "u32", "u8"};
    return (unsigned)dtype < KP_DTYPE_COUNT ? names[dtype] : "none";
}

size_t kp_dtype_size(kp_dtype dtype)
{
    static const size_t sizes[KP_DTYPE_COUNT] = {0, 4, 2, 4, 4, 1};
    return (unsigned)dtype < KP_DTYPE_COUNT ? sizes[dtype] : 0;
}

kp_tensor kp_tensor_nd(kp_buffer *buf, kp_dtype dtype, int32_t rank, const int64_t *shape)
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
        stride *= shape[d] > 0 ? shape[d] : 1;
    }
    return t;
}

kp_tensor kp_tensor_1d(kp_buffer *buf, kp_dtype dtype, int64_t n0)
{
    return kp_tensor_nd(buf, dtype, 1, (int64_t[]){n0});
}

kp_tensor kp_tensor_2d(kp_buffer *buf, kp_dtype dtype, int64_t n0, int64_t n1)
{
    return kp_tensor_nd(buf, dtype, 2, (int64_t[]){n0, n1});
}

kp_tensor kp_tensor_3d(kp_buffer *buf, kp_dtype dtype, int64_t n0, int64_t n1, int64_t n2)
{
    return kp_tensor_nd(buf, dtype, 3, (int64_t[]){n0, n1, n2});
}

int64_t kp_tensor_numel(const kp_tensor *t)
{
    int64_t n = 1;
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++)
        n *= t->shape[d];
    return n;
}

int kp_tensor_is_contiguous(const kp_tensor *t)
{
    int64_t stride = 1;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->strides[d] != stride)
            return 0;
        stride *= t->shape[d];
    }
    return 1;
}

int64_t kp_tensor_extent(const kp_tensor *t)
{
    int64_t last = t->offset;
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++) {
        if (t->shape[d] == 0)
            return t->offset;
        last += (t->shape[d] - 1) * t->strides[d];
    }
    return last + 1;
}

kp_tensor kp_tensor_transpose(kp_tensor t, int32_t d0, int32_t d1)
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

char *kp_tensor_describe(const kp_tensor *t, char *buf, size_t size)
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
