/* The gru plugin's shared declarations: the host table and each kernel's descriptor. */
#ifndef KP_GRU_H
#define KP_GRU_H

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *gru_host;

/* One descriptor per kernel, each defined in its own file. */
extern const kp_kernel_desc gru_step_desc;              /* gru-step.c */
extern const kp_kernel_desc gru_sequence_desc;          /* gru-sequence.c */
extern const kp_kernel_desc gru_sequence_backward_desc; /* gru-backward.c */
extern const kp_kernel_desc gru_rollout_desc;           /* gru-rollout.c */
extern const kp_kernel_desc gru_rollout_grid_desc;      /* gru-rollout-grid.c */

#endif
