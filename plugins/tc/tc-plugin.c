/* SPDX-License-Identifier: Apache-2.0 */
/* The tc plugin: registers tc.gemm, the GEMM on NVIDIA tensor cores (family `tc`). */
#include "tc.h"

const kp_host_api *tc_host;

static kp_status tc_init(const kp_host_api *api, kp_registrar *reg)
{
    /* Set once: every init gets the same table, and other runtimes' launches may be reading it. */
    if (!tc_host)
        tc_host = api;
    return api->register_kernel(reg, &tc_gemm_desc);
}

KP_PLUGIN_DEFINE(tc, .name = "tc", .version = "0.1.0",
                 .description = "GEMM on NVIDIA tensor cores (sm_80+) through inline PTX: TF32, "
                                "3xTF32, FP16 and BF16 inputs with FP32 accumulation",
                 .init = tc_init)
