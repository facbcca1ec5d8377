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

/* Buffers for batches of up to `batch` images; weights drawn for `seed` with PyTorch's default
 * bounds (U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases); AdamW with lr and
 * weight_decay, PyTorch's betas and eps. */
kp_status cnn_create(kp_runtime *rt, int batch, uint64_t seed, double lr, double weight_decay,
                     cnn **out);
void cnn_destroy(cnn *m);

/* Uploads n images (u8 [n, 28, 28], normalised as PyTorch's tutorials do: (p / 255 - 0.2860) /
 * 0.3530) and their labels into the batch buffers. Not recordable: call it outside a graph. */
kp_status cnn_set_batch(cnn *m, const uint8_t *images, const uint8_t *labels, int n);

/* Enqueues a training step on the whole batch (forward, cross-entropy, backward, AdamW step
 * number `step`), adding its loss to the running sum. About 30 launches. */
kp_status cnn_train_step(cnn *m, int64_t step);
/* Records cnn_train_step into a graph whose parameter "step" is AdamW's step count. */
kp_status cnn_record(cnn *m, kp_graph **out);
int cnn_launches_per_step(void);

/* The forward of the first n images of the batch, and each one's predicted class. */
kp_status cnn_predict(cnn *m, int n, int32_t *classes);

/* The running sum of the training losses since the last call, which resets it. */
kp_status cnn_take_loss_sum(cnn *m, double *sum);

/* Writes the parameters to `path` in the format of examples/fashion-mnist/README.md; reads them
 * back, checking every name and shape (a message in err on failure). */
kp_status cnn_save(cnn *m, const char *path, char *err, size_t err_size);
kp_status cnn_load(cnn *m, const char *path, char *err, size_t err_size);

#endif
