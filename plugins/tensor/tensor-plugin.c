/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor plugin: elementwise ops with broadcasting, reductions, softmax and losses, and their
 * backward (family `tensor`, docs/kernels/tensor.md). */
#include "tensor.h"

const kp_host_api *tensor_host;

static kp_status tensor_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!tensor_host)
        tensor_host = api;
    kp_status st = tensor_register_elementwise(api, reg);
    if (st == KP_OK)
        st = tensor_register_reductions(api, reg);
    if (st == KP_OK)
        st = tensor_register_stats(api, reg);
    if (st == KP_OK)
        st = tensor_register_generators(api, reg);
    if (st == KP_OK)
        st = tensor_register_movement(api, reg);
    if (st == KP_OK)
        st = tensor_register_contractions(api, reg);
    if (st == KP_OK)
        st = tensor_register_rows(api, reg);
    return st == KP_OK ? tensor_register_losses(api, reg) : st;
}

KP_PLUGIN_DEFINE(tensor, .name = "tensor", .version = "0.1.0",
                 .description = "Tensor ops: elementwise with broadcasting, reductions, and their "
                                "backward, deterministic",
                 .init = tensor_init)
