/* SPDX-License-Identifier: Apache-2.0 */
/* The Fashion-MNIST CNN of issue #25 as Kernelport launches: conv(1->32, 3x3, pad 1) + ReLU +
 * max-pool 2 + conv(32->64, 3x3, pad 1) + ReLU + max-pool 2 + linear(3136->128) + ReLU +
 * linear(128->10), softmax cross-entropy, AdamW over one parameter arena. */
#ifndef CNN_MODEL_H
#define CNN_MODEL_H

#include <stdint.h>

#include "kernelport/kernelport.h"

typedef struct cnn cnn;

enum { CNN_SIDE = 28, CNN_PIXELS = 28 * 28, CNN_CLASSES = 10 };

/* Buffers for batches of up to `batch` images; weights drawn for `seed` from He's uniform
 * U(-sqrt(6/fan_in), sqrt(6/fan_in)) (PyTorch's kaiming_uniform_ for ReLU), biases zero; AdamW
 * with lr, beta2 and weight_decay, PyTorch's beta1 (0.9) and eps (1e-8). */
kp_status cnn_create(kp_runtime *rt, int batch, uint64_t seed, double lr, double beta2,
                     double weight_decay, cnn **out);
void cnn_destroy(cnn *m);

/* Uploads n images (u8 [n, 28, 28], normalised as PyTorch's tutorials do: (p / 255 - 0.2860) /
 * 0.3530) and their labels into the batch buffers. Not recordable: call it outside a graph.
 * cnn_set_batch is cnn_stage_batch (the host's part: n at most the model's batch) and then
 * cnn_upload_batch (blocking writes), which a training loop separates to stage the next batch
 * while the device runs the current step. */
kp_status cnn_set_batch(cnn *m, const uint8_t *images, const uint8_t *labels, int n);
void cnn_stage_batch(cnn *m, const uint8_t *images, const uint8_t *labels, int n);
kp_status cnn_upload_batch(cnn *m);

/* A training step is CNN_PARTS parts of forward and backward, then the optimizer. Part p
 * completes the gradients of one layer, the last layer's first (part 0 runs the forward and the
 * loss too): cnn_bucket gives their range of the gradient arena, so that data-parallel training
 * can all-reduce them while the next parts run. */
enum { CNN_PARTS = 4 };

/* Enqueues part `part` (0 to CNN_PARTS - 1) of a training step on the whole batch; part 0 adds
 * its loss to the running sum. */
kp_status cnn_step_part(cnn *m, int part);
/* The parameter arena's length in floats. */
int64_t cnn_arena_len(const cnn *m);
/* Enqueues AdamW's step number `step` with learning rate lr over the arena's floats [offset,
 * offset + count) (all of it: 0, cnn_arena_len): under MPI, one bucket's parameters at a time,
 * each as soon as its gradients are averaged. */
kp_status cnn_optimizer_step(cnn *m, int64_t step, double lr, int64_t offset, int64_t count);
/* Records each part into a graph of its own; and the optimizer over [offset, offset + count)
 * into a graph whose parameters "step" and "lr" are AdamW's step count and learning rate
 * (cnn_create's lr until set). */
kp_status cnn_record_parts(cnn *m, kp_graph **parts);
kp_status cnn_record_optimizer(cnn *m, int64_t offset, int64_t count, kp_graph **out);
/* The range, in elements of the gradient arena, whose gradients part `part` completes. */
void cnn_bucket(const cnn *m, int part, int64_t *offset, int64_t *count);
kp_buffer *cnn_grad_arena(const cnn *m);
/* Replaces the gradient arena with `grad` (the caller's allocation, at least the arena's size;
 * the model owns it from here, on success or not), zeroed, before anything is recorded: a
 * data-parallel run's arena that the collectives all-reduce in place (kp_comm_buffer_create). */
kp_status cnn_use_grad_arena(cnn *m, kp_buffer *grad);
/* The parameter arena's bytes (same on every rank of a data-parallel run: the check that the
 * replicas agree reads them). */
kp_buffer *cnn_param_arena(const cnn *m);
/* Keeps the parameters' exponential moving average (optim.ema with warm-up: decay
 * min(decay, (1 + t) / (10 + t)) at step t, the first step's a copy), updated by every optimizer
 * step after AdamW over the same range; from then on cnn_predict, cnn_save and cnn_difference use
 * the average, and cnn_load sets both. Call it before recording. decay in (0, 1]. */
kp_status cnn_use_ema(cnn *m, double decay);

/* The forward of the first n images of the batch (with the average when there is one), and each
 * one's predicted class. */
kp_status cnn_predict(cnn *m, int n, int32_t *classes);

/* The running sum of the training losses since the last call, which resets it. */
kp_status cnn_take_loss_sum(cnn *m, double *sum);

/* Writes the parameters (the average when there is one) to `path` in the format of
 * examples/fashion-mnist/README.md; reads them back into the parameters and the average, checking
 * every name and shape (a message in err on failure). */
kp_status cnn_save(cnn *m, const char *path, char *err, size_t err_size);
kp_status cnn_load(cnn *m, const char *path, char *err, size_t err_size);
/* The largest and the mean absolute difference between the parameters (the average when there is
 * one) and those of the weights file `path`. */
kp_status cnn_difference(cnn *m, const char *path, double *max_abs, double *mean_abs, char *err,
                         size_t err_size);

#endif
