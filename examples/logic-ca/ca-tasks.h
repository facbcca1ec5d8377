/* SPDX-License-Identifier: Apache-2.0 */
/* The logic-ca example's tasks: the reference configurations of DiffLogic CA's experiments, their
 * training data, their checks, and the trained circuit written out. */
#ifndef CA_TASKS_H
#define CA_TASKS_H

#include <stdint.h>
#include <stdio.h>

#include "kernelport/ca.h"

typedef enum ca_task_kind { TASK_CHECKERBOARD, TASK_GOL, TASK_XOR } ca_task_kind;

typedef struct ca_task {
    const char *name;
    ca_task_kind kind;
    kp_logic_ca_config net; /* the training CA's networks */
    kp_ca_options options;  /* the training CA; options.net points at net */
    int64_t train_steps;    /* the reference's training steps */
} ca_task;

/* The task called `name` ("checkerboard", "gol", "xor"), asynchronous where asked
 * (checkerboard only); 0 for an unknown name or async elsewhere. */
int ca_task_find(const char *name, int async, uint64_t seed, ca_task *out);

/* Writes the training CA's fixed data: the target (and for gol and xor, the initial
 * states: every 3 x 3 configuration). */
kp_status ca_task_prepare(const ca_task *task, kp_runtime *rt, kp_ca *ca);

/* Checks the trained hard circuit the task's way and prints what it finds: gol and xor, the
 * rule on all 512 neighbourhoods and on `boards` random periodic 64 x 64 boards for 100 steps
 * (a host reference of the rule steps alongside); checkerboard, the rule run on a 64 x 64 grid
 * for 80 steps from random states against the pattern. `final` receives the large grid's
 * channel 0 (64 x 64 floats). Returns 1 when the check passes, 0 when not, -1 on an error
 * (message printed). */
int ca_task_check(const ca_task *task, kp_runtime *rt, kp_ca *trained, int boards, float *final);

/* Writes the logits (raw little-endian float32 [P, 16]) to PREFIX.logits.f32 and the hard
 * circuit (configuration, then one gate a line: layer, inputs, op) to PREFIX.circuit.txt.
 * Returns 1, or 0 with the reason printed. */
int ca_task_save(const ca_task *task, kp_runtime *rt, kp_ca *ca, const char *prefix);

#endif
