/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logic-gate cellular automata, trained end to end (libkernelport-ca, docs/logic-ca.md): a layer
 * above the library that owns a CA's buffers and runs its rollouts, backpropagation through time
 * and AdamW steps as launches of the logic, tensor and optim families, through the public API
 * only. Not thread-safe: one thread uses a kp_ca at a time.
 */
#ifndef KERNELPORT_CA_H
#define KERNELPORT_CA_H

#include "kernelport.h"
#include "ops/logic-ca.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kp_ca kp_ca;

/*
 * The random streams of training step s (from 1), so that a program can reproduce them with
 * kp_random_uniform (kernelport/ops/random.h): the initial states are tensor.bernoulli (p 0.5)
 * over [C, N] with key `seed` and offset (s - 1) C N, the fire masks tensor.uniform over [T, N]
 * (step t's row t) with key seed ^ KP_CA_FIRE_KEY and offset (s - 1) T N.
 */
#define KP_CA_FIRE_KEY 0x9e3779b97f4a7c15ull

/* A CA, its grids and its training. Start from kp_ca_options_default (which sets struct_size):
 * members are added at the end only. */
typedef struct kp_ca_options {
    uint32_t struct_size; /* sizeof(kp_ca_options) */
    /* The gate networks (kp_logic_ca_config_check's rules): the caller's configuration, a
     * structure of its own that grows by its own struct_size; read by kp_ca_create only. */
    const kp_logic_ca_config *net;
    int32_t height, width;  /* each grid's cells, 1 .. 65535 */
    int32_t batch;          /* grids side by side: N = batch height width cells */
    int32_t steps;          /* T steps per rollout, >= 1 */
    int32_t boundary;       /* 0: periodic; 1: zero */
    double fire_rate;       /* 1: synchronous; below 1, each cell updates with this probability */
    int32_t random_init;    /* 1: each training step draws the initial states (0 or 1, p 0.5) */
    uint64_t seed;          /* the initial states' and fire masks' Philox stream */
    int32_t inference_only; /* 1: no buffers for the backward (rollouts only; large grids) */
    /* Training: clipping, then AdamW (optax's: Adam, + wd w, times -lr). clip_norm bounds the
     * gradient's global L2 norm (the reading of the reference), or with clip_elementwise
     * each element to [-clip_norm, clip_norm] (optax.clip, what the notebook's code chains). */
    double lr, beta1, beta2, eps, weight_decay, clip_norm;
    int32_t clip_elementwise;
} kp_ca_options;

/* The checkerboard experiment's training options (lr 0.05, betas 0.9 and 0.99, eps 1e-8, weight
 * decay 0.01, clipping at 100), synchronous, periodic, random_init 0; the caller sets net (NULL
 * here), the grid, batch and steps. */
KP_API kp_ca_options kp_ca_options_default(void);

/*
 * Builds the networks (kp_logic_ca_net_build), allocates every buffer on rt (which must outlive
 * the CA), initialises the logits to pass-through (op A at 10) and the optimizer's state to 0.
 * The training target is 0 and the initial states 0 until written. Errors: KP_ERR_INVALID_ARG
 * with the configuration's fault in kp_last_error(rt) ("update layer 3: 3 gates cannot read all
 * 8 outputs ..."), KP_ERR_NOT_FOUND without the logic, tensor or optim plugins, allocation errors.
 * *out is NULL on failure.
 */
KP_API kp_status kp_ca_create(kp_runtime *rt, const kp_ca_options *options, kp_ca **out);
/* Frees the CA's buffers and graphs it recorded; NULL is a no-op. */
KP_API void kp_ca_destroy(kp_ca *ca);

/* The flattened network (owned by the CA). */
KP_API const kp_logic_ca_net *kp_ca_net(const kp_ca *ca);
/* Cells per rollout: batch x height x width. */
KP_API int64_t kp_ca_cells(const kp_ca *ca);

/*
 * Views of the CA's buffers, valid while it lives (contiguous, feature-major: element (c, n) is
 * channel c of cell n = (b height + y) width + x):
 *   kp_ca_state(ca, t, 0): [C, N] the soft rollout's state after t steps (0 .. T; 0 the initial);
 *   kp_ca_state(ca, t, 1): the hard rollout's (t = 0 is the soft rollout's initial state);
 *   kp_ca_target(ca): [N] channel 0's target after T steps; kp_ca_logits, kp_ca_grad: [P, 16].
 * Write them with kp_buffer_write through the tensor's buffer and offset, or with kernels.
 */
KP_API kp_tensor kp_ca_state(const kp_ca *ca, int32_t t, int hard);
KP_API kp_tensor kp_ca_target(const kp_ca *ca);
KP_API kp_tensor kp_ca_logits(const kp_ca *ca);
KP_API kp_tensor kp_ca_grad(const kp_ca *ca);

/* Enqueues the coefficients of the current logits and T steps from state 0, soft (the softmax;
 * keeps every step's activations for kp_ca_backward) or hard (each gate its argmax op, exact on
 * 0/1 states), with the fire masks last drawn (none before the first training step: then every
 * cell fires). */
KP_API kp_status kp_ca_rollout(kp_ca *ca, int hard);
/* Enqueues the loss sum_n (state_T[0, n] - target[n])^2 of the soft (or hard) rollout into the
 * loss scalar (kp_ca_read_losses) and, soft, its gradient; kp_ca_backward, the backpropagation
 * through the T steps into kp_ca_grad (KP_ERR_UNSUPPORTED for an inference_only CA). */
KP_API kp_status kp_ca_loss(kp_ca *ca, int hard);
KP_API kp_status kp_ca_backward(kp_ca *ca);

/*
 * Enqueues one training step, `step` from 1: the initial states drawn (random_init), the fire
 * masks drawn, the soft rollout, loss and backward, clipping and AdamW, then the hard rollout and
 * loss of the updated logits from the same initial states. Deterministic: the same options, seed
 * and step sequence give the same logits, bit for bit, on a device.
 */
KP_API kp_status kp_ca_train_step(kp_ca *ca, int64_t step);
/* Records kp_ca_train_step into a graph (owned by the caller, kp_graph_destroy) and
 * kp_ca_replay runs it for `step`: the same launches without the host's checks. */
KP_API kp_status kp_ca_record(kp_ca *ca, kp_graph **out);
KP_API kp_status kp_ca_replay(kp_ca *ca, kp_graph *g, int64_t step);
/* The number of launches kp_ca_train_step makes. */
KP_API int kp_ca_launches_per_step(const kp_ca *ca);

/* Blocking reads: the last soft and hard losses (either may be NULL). */
KP_API kp_status kp_ca_read_losses(kp_ca *ca, float *soft, float *hard);
/* Blocking read of each parameter's argmax op into ops [P]. */
KP_API kp_status kp_ca_read_ops(kp_ca *ca, int32_t *ops);
/*
 * The hard circuit's active parameters: those some output depends on (following a gate's inputs
 * that its op reads: A reads a, NOT_B reads b, FALSE none) whose op is not a wire (A or B),
 * counted once per parameter (a perception gate's channel copies are one circuit). ops from
 * kp_ca_read_ops. Host only.
 */
KP_API int64_t kp_ca_active_params(const kp_ca *ca, const int32_t *ops);

/* ---- the hard circuit, bit-packed, on large grids -------------------------------------------- */

typedef struct kp_ca_packed kp_ca_packed;

/* A packed run's grid. Start from kp_ca_packed_options_default (which sets struct_size): members
 * are added at the end only. */
typedef struct kp_ca_packed_options {
    uint32_t struct_size;  /* sizeof(kp_ca_packed_options) */
    int32_t height, width; /* each grid's cells, 1 .. 65535; 0: the CA's */
    int32_t batch;         /* grids; 0: the CA's */
    /* The bound, in bytes, on the activations of one tile of grid rows (the circuit runs tile by
     * tile: 1 + L launches a tile and step; at least one grid row a tile); 0: 1 MiB on CPUs (a
     * tile that stays in cache), 256 MiB on other devices. */
    int64_t tile_bytes;
} kp_ca_packed_options;

/* The CA's grid and the device's tile size (every member 0). */
KP_API kp_ca_packed_options kp_ca_packed_options_default(void);

/*
 * Takes the CA's hard circuit as it is now (each gate its argmax op; later training does not
 * change it: create another) to run on grids of the options' size, 32 cells a 32-bit word, with
 * the CA's boundary. Allocates on the CA's runtime: the state [C, N] as floats, two packed
 * states and one tile's activations (the perception's 9C rows and two layers' outputs, not the
 * whole network's). The CA may be destroyed afterwards. Errors: KP_ERR_INVALID_ARG for a grid out
 * of range, a negative tile_bytes or a bad struct_size, KP_ERR_UNSUPPORTED for an asynchronous CA
 * (fire_rate below 1: the packed run is synchronous) or a state beyond 2^31 floats,
 * KP_ERR_NOT_FOUND without logic.perceive_packed, allocation errors; *out is NULL on failure.
 */
KP_API kp_status kp_ca_packed_create(kp_ca *ca, const kp_ca_packed_options *options,
                                     kp_ca_packed **out);
KP_API void kp_ca_packed_destroy(kp_ca_packed *p);

/* The state [C, N] as floats, N = batch height width (kp_ca_state's layout): write the initial
 * state here (a value above 0.5 is a 1); kp_ca_packed_run leaves the final one, 0.0 or 1.0. */
KP_API kp_tensor kp_ca_packed_state(const kp_ca_packed *p);
/* The final state packed, [C, batch height ceil(width / 32)] uint32: row r of channel c is words
 * r ceil(width / 32) .., bit j of word w the cell x = 32 w + j of grid row r; bits past width are
 * undefined. Valid after kp_ca_packed_run. */
KP_API kp_tensor kp_ca_packed_bits(const kp_ca_packed *p);

/* Enqueues `steps` synchronous hard steps (>= 0) from kp_ca_packed_state: logic.pack, per step and
 * tile logic.perceive_packed and logic.eval_packed layer by layer (the new state staying packed),
 * logic.unpack into kp_ca_packed_state. Bit for bit kp_ca_rollout(ca, 1) on the same grid and
 * 0/1 states. KP_ERR_INVALID_ARG for steps below 0. */
KP_API kp_status kp_ca_packed_run(kp_ca_packed *p, int64_t steps);
/* The launches one step makes: tiles x (1 + L). */
KP_API int64_t kp_ca_packed_launches_per_step(const kp_ca_packed *p);

#ifdef __cplusplus
}
#endif

#endif
