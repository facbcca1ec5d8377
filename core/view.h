/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: packing a tensor into the prelude's view vector (kernels/common/prelude.cl). */
#ifndef KP_VIEW_H
#define KP_VIEW_H

#include "kernelport/kernelport.h"

/* The int32 words of a kp_view<rank> argument (int, int2, int4, int8 or int16); 0 past
 * KP_MAX_RANK. */
static inline uint32_t kp__view_words(uint32_t rank)
{
    return rank == 0             ? 1
           : rank == 1           ? 2
           : rank <= 3           ? 4
           : rank <= 7           ? 8
           : rank <= KP_MAX_RANK ? 16
                                 : 0;
}

/* Writes t's view of rank `rank` into out[kp__view_words(rank)]: the offset (-1 for an empty
 * tensor), then each dimension's stride (leading strides 0 when the tensor has fewer dimensions),
 * zeros after. On failure *why says what does not fit: KP_ERR_INVALID_ARG for a rank below the
 * tensor's or above KP_MAX_RANK, KP_ERR_UNSUPPORTED for a view past int. */
kp_status kp__view_pack(const kp_tensor *t, uint32_t rank, int32_t *out, const char **why);

/* The lowest and highest element index t touches: its offset plus the steps (extent - 1) *
 * stride of its dimensions that are negative, resp. positive (a flipped view's offset is its
 * index-0 element, not its lowest). Extents of 0 are skipped: the caller tells an empty view,
 * which touches nothing. Returns 1 when a product or sum passes int64 (then *first and *last mean
 * nothing), else 0. Extents must be >= 0. */
int kp__view_range(const kp_tensor *t, int64_t *first, int64_t *last);

#endif
