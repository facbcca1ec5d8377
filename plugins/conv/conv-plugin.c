/* SPDX-License-Identifier: Apache-2.0 */
/* The conv plugin: registers im2col/col2im, conv2d with its gradients, and max-pool. */
#include "conv.h"

const kp_host_api *conv_host;

static kp_status conv_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!conv_host)
        conv_host = api;
    const kp_kernel_desc *const kernels[] = {
        &conv_im2col_desc,        &conv_col2im_desc,           &conv_conv2d_desc,
        &conv_backward_data_desc, &conv_backward_weight_desc,  &conv_backward_bias_desc,
        &conv_maxpool_desc,       &conv_maxpool_backward_desc,
    };
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

KP_PLUGIN_DEFINE(conv, .name = "conv", .version = "0.1.0",
                 .description = "2-D convolution via im2col + GEMM with its gradients, max-pool",
                 .init = conv_init)
