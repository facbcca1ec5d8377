/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the tuner's search, separated from measurement so tests can drive it with fakes. */
#ifndef KP_TUNE_H
#define KP_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

#define KP__TUNE_MAX 128

typedef enum kp__tune_outcome {
    KP__TUNE_MEASURED, /* *seconds holds the time */
    KP__TUNE_SKIPPED,  /* failed to build or exceeds a limit */
    KP__TUNE_REJECTED, /* ran but gave wrong results */
    KP__TUNE_FATAL,    /* stop the search: the device is unusable */
} kp__tune_outcome;

/* Evaluates one point; `why` (may stay NULL) receives a malloc'd reason for skips. */
typedef kp__tune_outcome (*kp__tune_eval_fn)(void *user, const int64_t *values, double *seconds,
                                             char **why);

/* Times one point again, without verifying it (it was, when the search measured it); returns 0
 * and *seconds on success. */
typedef int (*kp__tune_time_fn)(void *user, const int64_t *values, double *seconds);

/* How many times the final comparison times the starting values and the best, each. */
#define KP__TUNE_ROUNDS 3

typedef struct kp__tune_space {
    size_t n;                            /* tunables */
    const int64_t *values[KP__TUNE_MAX]; /* candidate values of each */
    size_t counts[KP__TUNE_MAX];
    int64_t start[KP__TUNE_MAX]; /* the current values: measured first, the baseline */
} kp__tune_space;

/*
 * Searches the space: every point when the grid has at most grid_limit points, otherwise
 * coordinate descent from `start` (one tunable at a time, repeated until a pass improves
 * nothing) then random points, until budget_seconds of wall time have passed (0: no limit).
 * `report` (may be NULL) sees each point. Then, when the best is not the start, `time` (may be
 * NULL: no comparison, `improved` when the best is not the start) times the start and the best
 * KP__TUNE_ROUNDS times each, alternating, for default_s, best_s, speedup, noise and improved.
 * Fills result->values, best_s, default_s, counters. Returns KP_ERR_VERIFY when the start point
 * is rejected, KP_ERR_INTERNAL on a fatal outcome, KP_ERR_NOT_FOUND when no point could be
 * measured.
 */
kp_status kp__tune_search(const kp__tune_space *space, kp__tune_eval_fn eval, kp__tune_time_fn time,
                          void *user, double budget_seconds, uint32_t grid_limit, uint64_t seed,
                          void (*report)(void *user, const int64_t *values, double seconds,
                                         const char *outcome),
                          kp_tune_result *result);

#endif
