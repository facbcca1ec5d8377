/* SPDX-License-Identifier: Apache-2.0 */
/* The world model: an ensemble of GRUs with a linear loss head, trained with gru.sequence and
 * gru.sequence_backward (teacher forcing) and rolled forward with gru.rollout (README.md). */
#ifndef WM_MODEL_H
#define WM_MODEL_H

#include <stdint.h>

#include "kernelport/kernelport.h"

typedef struct wm_config {
    int members;   /* E, ensemble members, trained one after another */
    int hidden;    /* H */
    int features;  /* F; the GRU's input is [f, y_{t-1}], I = F + 1 */
    int batch;     /* B, curves per training step */
    int horizon;   /* T, steps per training sequence and per rollout */
    double lr;     /* AdamW's */
    uint64_t seed; /* member e's weights come from the Philox stream of (seed, e) */
} wm_config;

typedef struct wm_model wm_model;

kp_status wm_model_create(kp_runtime *rt, const wm_config *c, wm_model **out);
void wm_model_destroy(wm_model *m);

/*
 * One AdamW step of member `member` (its `step`-th, 1 on the first) on x [T, B, F + 1] (x_t =
 * [f, y_{t-1}]) and targets y [T, B] (contiguous: read as [T B, 1]): the GRU over the T steps from
 * a zero state, the head y_t = w_y . h_t + b_y, the mean squared error, its gradients and the
 * update. The loss is added on the device to a sum that wm_model_take_loss reads.
 */
kp_status wm_model_train_step(wm_model *m, int member, kp_tensor x, kp_tensor y, int64_t step);

/* The sum of the losses since the last call (a blocking read), then zeroed. */
kp_status wm_model_take_loss(wm_model *m, double *sum);

/*
 * Rolls members [first, first + count) forward T = horizon steps from a zero state and y_{-1} = 0,
 * each feeding its own predictions back, for features f [1, B, F] (shared by the members; any B):
 * one gru.rollout launch. Writes y [count, B, T] to host memory (a blocking read).
 */
kp_status wm_model_rollout(wm_model *m, int first, int count, kp_tensor f, float *y);

/* The launches of one training step. */
int wm_model_launches_per_step(void);

#endif
