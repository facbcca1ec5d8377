/* Tensor views as kernels see them: the kp_view<R> structs of the OpenCL prelude. */
#include <limits.h>

#include "view.h"

kp_status kp__view_pack(const kp_tensor *t, uint32_t rank, int32_t *out, const char **why)
{
    if (rank > KP_MAX_RANK || t->rank < 0 || (uint32_t)t->rank > rank) {
        *why = "the tensor's rank is above the view's";
        return KP_ERR_INVALID_ARG;
    }
    uint32_t pad = rank - (uint32_t)t->rank;
    int64_t last = t->offset;
    int empty = 0;
    out[0] = (int32_t)t->offset;
    for (uint32_t d = 0; d < rank; d++) {
        int64_t n = d < pad ? 1 : t->shape[d - pad], s = d < pad ? 0 : t->strides[d - pad];
        /* A dimension of extent 0 or 1 never multiplies its stride by anything but 0. */
        if (n <= 1 && s > INT_MAX)
            s = 0;
        if (n > INT_MAX || s > INT_MAX) {
            *why = "an extent or stride is past 2^31 - 1";
            return KP_ERR_UNSUPPORTED;
        }
        if (n == 0)
            empty = 1;
        else if (__builtin_mul_overflow(n - 1, s, &n) || __builtin_add_overflow(last, n, &last))
            last = INT64_MAX;
        out[1 + d] = (int32_t)(d < pad ? 1 : t->shape[d - pad]);
        out[1 + rank + d] = (int32_t)s;
    }
    if (t->offset > INT_MAX || (!empty && last > INT_MAX)) {
        *why = "the view reaches past element 2^31 - 1 (kernels index with int)";
        return KP_ERR_UNSUPPORTED;
    }
    return KP_OK;
}
