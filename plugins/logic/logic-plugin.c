/* SPDX-License-Identifier: Apache-2.0 */
/* The logic plugin: registers the logic-gate network kernels (family `logic`). */
#include "logic.h"

const kp_host_api *logic_host;

static kp_status logic_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!logic_host)
        logic_host = api;
    const kp_kernel_desc *const kernels[] = {&logic_coeffs_desc,
                                             &logic_forward_desc,
                                             &logic_backward_desc,
                                             &logic_pack_desc,
                                             &logic_unpack_desc,
                                             &logic_eval_packed_desc,
                                             &logic_groupsum_desc,
                                             &logic_groupsum_backward_desc,
                                             &logic_groupsum_packed_desc,
                                             &logic_perceive_desc,
                                             &logic_perceive_backward_desc,
                                             &logic_perceive_packed_desc,
                                             &logic_ca_step_desc,
                                             &logic_ca_step_backward_desc,
                                             &logic_ca_dw_desc};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

KP_PLUGIN_DEFINE(logic, .name = "logic", .version = "0.1.0",
                 .description =
                     "Differentiable logic-gate networks: soft and hard gates with "
                     "backward, bit-packed inference, group sums, CA perception (packed too), "
                     "fused CA steps",
                 .init = logic_init)
