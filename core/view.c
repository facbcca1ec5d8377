/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor views as kernels see them: the kp_view<R> vectors of the OpenCL prelude. */
#include <limits.h>
#include <string.h>

#include "view.h"

kp_status kp__view_pack(const kp_tensor *t, uint32_t rank, int32_t *out, const char **why)
{
    if (rank > KP_MAX_RANK || t->rank < 0 || (uint32_t)t->rank > rank) {
        *why = "the tensor's rank is above the view's";
        return KP_ERR_INVALID_ARG;
    }
    memset(out, 0, kp__view_words(rank) * sizeof *out);
    uint32_t pad = rank - (uint32_t)t->rank;
    int empty = 0;
    for (uint32_t d = 0; d < rank; d++) {
        int64_t n = d < pad ? 1 : t->shape[d - pad], s = d < pad ? 0 : t->strides[d - pad];
        /* A dimension of extent 0 or 1 never multiplies its stride by anything but 0. */
        if (n <= 1 && (s > INT_MAX || s < -INT_MAX))
            s = 0;
        if (n > INT_MAX || s > INT_MAX || s < -INT_MAX) {
            *why = "an extent or stride is past 2^31 - 1 (in absolute value)";
            return KP_ERR_UNSUPPORTED;
        }
        empty |= n == 0;
        out[1 + d] = (int32_t)s;
    }
    /* Nothing of an empty view is read: -1 marks it, so a kernel can tell an omitted tensor. */
    if (empty) {
        out[0] = -1;
        return KP_OK;
    }
    /* Every partial sum of a kernel's offset arithmetic lies between the lowest and the highest
     * element, so int holds it when they are in 0 .. 2^31 - 1. */
    int64_t first, last;
    if (kp__view_range(t, &first, &last) || last > INT_MAX) {
        *why = "the view reaches past element 2^31 - 1 (kernels index with int)";
        return KP_ERR_UNSUPPORTED;
    }
    if (first < 0) {
        *why = "the view reaches before element 0";
        return KP_ERR_INVALID_ARG;
    }
    out[0] = (int32_t)t->offset;
    return KP_OK;
}

int kp__view_range(const kp_tensor *t, int64_t *first, int64_t *last)
{
    int64_t lo = t->offset, hi = t->offset;
    int overflow = 0;
    for (int32_t d = 0; d < t->rank && d < KP_MAX_RANK; d++) {
        int64_t step;
        if (t->shape[d] == 0)
            continue;
        if (__builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &step))
            overflow = 1;
        else if (step < 0)
            overflow |= __builtin_add_overflow(lo, step, &lo);
        else
            overflow |= __builtin_add_overflow(hi, step, &hi);
    }
    *first = lo;
    *last = hi;
    return overflow;
}
