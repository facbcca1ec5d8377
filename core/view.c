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
    int64_t last = t->offset;
    int empty = 0;
    for (uint32_t d = 0; d < rank; d++) {
        int64_t n = d < pad ? 1 : t->shape[d - pad], s = d < pad ? 0 : t->strides[d - pad];
        /* A dimension of extent 0 or 1 never multiplies its stride by anything but 0. */
        if (n <= 1 && s > INT_MAX)
            s = 0;
        if (n > INT_MAX || s > INT_MAX) {
            *why = "an extent or stride is past 2^31 - 1";
            return KP_ERR_UNSUPPORTED;
        }
        int64_t step;
        if (n == 0)
            empty = 1;
        else if (__builtin_mul_overflow(n - 1, s, &step) ||
                 __builtin_add_overflow(last, step, &last))
            last = INT64_MAX;
        out[1 + d] = (int32_t)s;
    }
    /* Nothing of an empty view is read: -1 marks it, so a kernel can tell an omitted tensor. */
    if (empty) {
        out[0] = -1;
        return KP_OK;
    }
    if (last > INT_MAX) {
        *why = "the view reaches past element 2^31 - 1 (kernels index with int)";
        return KP_ERR_UNSUPPORTED;
    }
    out[0] = (int32_t)t->offset;
    return KP_OK;
}
