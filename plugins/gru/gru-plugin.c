/* The gru plugin: registers the GRU kernels (step, sequence, backward, ensemble rollout). */
#include "gru.h"

const kp_host_api *gru_host;

static kp_status gru_init(const kp_host_api *api, kp_registrar *reg)
{
    gru_host = api;
    const kp_kernel_desc *const kernels[] = {&gru_step_desc, &gru_sequence_desc,
                                             &gru_sequence_backward_desc, &gru_rollout_desc,
                                             &gru_rollout_grid_desc};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        kp_status st = api->register_kernel(reg, kernels[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

KP_PLUGIN_DEFINE(gru, .name = "gru", .version = "0.1.0",
                 .description = "GRU cell, sequences with backward, ensemble world-model rollout",
                 .init = gru_init)
