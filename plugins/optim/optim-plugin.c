/* SPDX-License-Identifier: Apache-2.0 */
/* The optim plugin: fused optimizer steps, gradient clipping and the weights' moving average
 * over a parameter arena, one launch for a whole parameter list (family `optim`,
 * docs/kernels/optim.md). */
#include "optim.h"

const kp_host_api *optim_host;

static kp_status optim_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!optim_host)
        optim_host = api;
    kp_status st = optim_register_adam(api, reg);
    if (st == KP_OK)
        st = optim_register_sgd(api, reg);
    if (st == KP_OK)
        st = optim_register_clip(api, reg);
    return st == KP_OK ? optim_register_ema(api, reg) : st;
}

KP_PLUGIN_DEFINE(optim, .name = "optim", .version = "0.1.0",
                 .description = "Optimizers over a parameter arena in one launch: SGD, Adam, "
                                "AdamW, gradient clipping by the global norm, and the "
                                "weights' moving average",
                 .init = optim_init)
