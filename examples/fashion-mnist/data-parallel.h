/* SPDX-License-Identifier: Apache-2.0 */
/* Data-parallel training of the CNN over MPI ranks (issue #29, docs/comm.md): each rank trains on
 * its slice of every global batch and the gradients are averaged in buckets as the backward
 * produces them. Without MPI (a build without libkernelport-comm, or a program not started by
 * mpirun) it is one rank and every call is a no-op. */
#ifndef DATA_PARALLEL_H
#define DATA_PARALLEL_H

#include <stddef.h>

#include "cnn-model.h"

typedef struct dp dp;

/* Initialises MPI when the program was started by mpirun or mpiexec (Open MPI's, MPICH's or a
 * PMIx launcher's environment says so). Never fails: MPI errors abort the job, MPI's way. */
dp *dp_init(int *argc, char ***argv);
int dp_rank(const dp *d);
int dp_size(const dp *d);

/* The device spec of this rank: `spec` with "%r" replaced by the rank's index among the ranks
 * on its node ("gpu:%r": gpu:0, gpu:1, ...), into out. */
void dp_device(const dp *d, const char *spec, char *out, size_t size);

/* Creates the communicator for rt, broadcasts rank 0's parameters (every rank starts from the
 * same weights whatever its seed) and prepares the gradient buckets: the parts of the step
 * (cnn_bucket) in the backward's order, merged until a bucket holds bucket_bytes (0: a bucket per
 * part). */
kp_status dp_attach(dp *d, kp_runtime *rt, cnn *m, size_t bucket_bytes);

/* Part `part` of the step is enqueued: the all-reduce (mean) of the bucket it completes begins. */
kp_status dp_part_done(dp *d, int part);
/* The gradient buckets' ranges of the arena, in the order they complete (offset[k], count[k]; at
 * most CNN_PARTS): their number, 0 without buckets (one rank). */
size_t dp_buckets(const dp *d, int64_t *offset, int64_t *count);
/* Bucket k is averaged: launches enqueued from now on (its parameters' optimizer step) follow it,
 * while the later buckets are still exchanged. A no-op without buckets. */
kp_status dp_bucket_ready(dp *d, size_t k);
/* The round is over: every bucket averaged and written back. */
kp_status dp_gradients_ready(dp *d);

/* The mean of v over the ranks. */
kp_status dp_mean(dp *d, double *v);

/* Fails (KP_ERR_VERIFY, message in `err`) unless every rank's parameters are the same bits. */
kp_status dp_check_replicas(dp *d, cnn *m, char *err, size_t err_size);

/* Prints "fashion-mnist: rank R: message" and, on several ranks, tells the others this rank
 * fails and aborts the job (MPI_Finalize could wait for the failed rank for ever). Returns 1. */
int dp_fail(dp *d, const char *message);

/* Releases the buckets and the communicator (before the runtime) and finalises MPI. */
void dp_finish(dp *d);

#endif
