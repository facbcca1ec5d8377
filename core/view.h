/* Internal: packing a tensor into the prelude's view struct (kernels/common/prelude.cl). */
#ifndef KP_VIEW_H
#define KP_VIEW_H

#include "kernelport/kernelport.h"

/* The int32 words of a kp_view<rank>: 1 + 2 * rank. */
#define KP__VIEW_WORDS(rank) (1 + 2 * (rank))

/* Writes t's view of rank `rank` (leading extents 1, strides 0 when the tensor has fewer
 * dimensions) into out[KP__VIEW_WORDS(rank)]. On failure *why says what does not fit:
 * KP_ERR_INVALID_ARG for a rank the view cannot hold, KP_ERR_UNSUPPORTED for a view past int. */
kp_status kp__view_pack(const kp_tensor *t, uint32_t rank, int32_t *out, const char **why);

#endif
