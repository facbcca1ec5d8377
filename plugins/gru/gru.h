/* SPDX-License-Identifier: Apache-2.0 */
/* The gru plugin's shared declarations: the host table and each kernel's descriptor. */
#ifndef KP_GRU_H
#define KP_GRU_H

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *gru_host;

/* Adds a tensor to an argument list as its buffer and kp_view<rank> (kp_clargs_tensor). An
 * absent one (t NULL or without a buffer) goes as an empty view (offset -1) on `stand_in`'s
 * buffer, which the kernels never read: they test an optional tensor's presence with kp_empty
 * (PRESENT in gru.cl, the has_ flags of gru-rollout.cl), and every tensor the family takes has
 * extents >= 1 where given. (gru-plugin.c) */
void gru_clargs_tensor(kp_clargs *a, const kp_tensor *t, uint32_t rank, kp_buffer *stand_in);

/* One descriptor per kernel, each defined in its own file. */
extern const kp_kernel_desc gru_step_desc;              /* gru-step.c */
extern const kp_kernel_desc gru_sequence_desc;          /* gru-sequence.c */
extern const kp_kernel_desc gru_sequence_backward_desc; /* gru-backward.c */
extern const kp_kernel_desc gru_rollout_desc;           /* gru-rollout.c */
extern const kp_kernel_desc gru_rollout_grid_desc;      /* gru-rollout-grid.c */

#endif
