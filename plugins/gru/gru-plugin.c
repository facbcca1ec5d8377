/* SPDX-License-Identifier: Apache-2.0 */
/* The gru plugin: registers the GRU kernels (step, sequence, backward, ensemble rollout); the
 * family's way of passing a tensor that may be omitted. */
#include "gru.h"

const kp_host_api *gru_host;

void gru_clargs_tensor(kp_clargs *a, const kp_tensor *t, uint32_t rank, kp_buffer *stand_in)
{
    if (t && t->buffer) {
        kp_clargs_tensor(a, t, rank);
        return;
    }
    /* Extents 0: an empty tensor, whose view the core packs with offset -1 (kp_empty). */
    kp_tensor none = {.buffer = stand_in, .dtype = KP_F32, .rank = (int32_t)rank};
    kp_clargs_tensor(a, &none, rank);
}

static kp_status gru_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!gru_host)
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
