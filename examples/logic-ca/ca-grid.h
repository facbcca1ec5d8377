/* SPDX-License-Identifier: Apache-2.0 */
/* A trained CA's hard circuit on one large grid two ways, for logic-ca and bench-logic-ca: the
 * fused hard rollout (kp_ca_rollout on an inference_only CA of that grid) and the bit-packed run
 * (kp_ca_packed), from the same random state. */
#ifndef CA_GRID_H
#define CA_GRID_H

#include <stdint.h>

#include "kernelport/ca.h"

typedef struct ca_grid {
    kp_runtime *rt;
    kp_ca *fused; /* NULL where the fused rollout does not fit (fused_why says why) */
    kp_ca_packed *packed;
    int64_t side, steps, cells; /* a side x side grid, `steps` steps, cells = side^2 */
    int64_t channels;
    float *init; /* [C, cells] the random initial state */
    char fused_why[256];
} ca_grid;

/*
 * Sets up both runs of `trained`'s current circuit on a side x side grid (the training CA's
 * boundary, one grid) for `steps` steps from a random 0/1 state drawn from `seed`, the packed run
 * in tiles of `tile_bytes` (0: the device's default). A fused CA
 * that cannot be created (too many activations for one buffer, memory) is left out with the
 * reason in fused_why. Returns KP_OK, or the packed run's error (kp_last_error).
 */
kp_status ca_grid_open(ca_grid *g, kp_runtime *rt, kp_ca *trained,
                       const kp_ca_options *trained_options, int64_t side, int64_t steps,
                       uint64_t seed, int64_t tile_bytes);
/* One run of the steps, packed or fused, finished (kp_finish): the fused rollout from the initial
 * state, the packed one from the state the last packed run left (the initial state first). */
kp_status ca_grid_run(ca_grid *g, int packed);
/* Blocking: the channel values that differ between the two runs' final states (after one run
 * of each), or -1 on an error. */
int64_t ca_grid_differ(ca_grid *g);
void ca_grid_close(ca_grid *g);

#endif
