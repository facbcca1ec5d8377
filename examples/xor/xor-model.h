/* SPDX-License-Identifier: Apache-2.0 */
/* The XOR model: a 2 -> H -> 1 MLP (tanh hidden layer, a logit out, binary cross-entropy with
 * logits, i.e. a sigmoid output) trained full batch on the four XOR rows with AdamW, every
 * operation a Kernelport launch. Used by the xor example and by bench-launch. */
#ifndef XOR_MODEL_H
#define XOR_MODEL_H

#include <stdint.h>

#include "kernelport/kernelport.h"

typedef struct xor_model xor_model;

/* Buffers on rt, weights drawn from Philox uniforms for `seed` (PyTorch's nn.Linear bounds:
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in))), AdamW with lr and PyTorch's other defaults. The matrix
 * products are tensor.mul_sum launches, or blas.gemm ones (CLBlast, which a graph cannot record:
 * they run through the plugin at each replay) when `blas` is set. */
kp_status xor_model_create(kp_runtime *rt, int hidden, uint64_t seed, double lr, int blas,
                           xor_model **out);
void xor_model_destroy(xor_model *m);

/* Enqueues one training step (forward, backward, AdamW step number `step`, 1 on the first):
 * about 14 launches. */
kp_status xor_model_step(xor_model *m, int64_t step);

/* Records one step into a graph whose parameter "step" is AdamW's step count. */
kp_status xor_model_record(xor_model *m, kp_graph **out);

/* The last step's loss and the four sigmoid outputs of its forward (blocking reads). */
kp_status xor_model_read(xor_model *m, float *loss, float out[4]);

/* The parameters as one array: W1 [2, H], b1 [H], W2 [H, 1], b2 [1] (2 H + H + H + 1 floats). */
kp_status xor_model_params(xor_model *m, float *params, int *n);

/* The launches one step makes (for per-launch figures). */
int xor_model_launches_per_step(const xor_model *m);

#endif
