/* Internal: packing a tensor into the prelude's view vector (kernels/common/prelude.cl). */
#ifndef KP_VIEW_H
#define KP_VIEW_H

#include "kernelport/kernelport.h"

/* The most dimensions a kernel's view holds: offset and 7 (extent, stride) pairs fill an int16. */
#define KP__VIEW_MAX_RANK 7

/* The int32 words of a kp_view<rank> argument (int, int4, int8 or int16): 0 above the maximum. */
static inline uint32_t kp__view_words(uint32_t rank)
{
    return rank == 0 ? 1 : rank == 1 ? 4 : rank <= 3 ? 8 : rank <= KP__VIEW_MAX_RANK ? 16 : 0;
}

/* Writes t's view of rank `rank` into out[kp__view_words(rank)]: the offset, then each
 * dimension's extent and stride in turn (leading extents 1 with stride 0 when the tensor has fewer
 * dimensions), zeros after. On failure *why says what does not fit: KP_ERR_INVALID_ARG for a rank
 * below the tensor's, KP_ERR_UNSUPPORTED for a rank above 7 or a view past int. */
kp_status kp__view_pack(const kp_tensor *t, uint32_t rank, int32_t *out, const char **why);

#endif
