/* SPDX-License-Identifier: Apache-2.0 */
/* The 64 features of a loss history (README.md, "The 64 features"), computed by one run-time
 * registered kernel over a batch of histories, and by a host reference in double. */
#ifndef WM_FEATURES_H
#define WM_FEATURES_H

#include "kernelport/kernelport.h"

enum { FEATURES = 64, FEATURES_MIN_HISTORY = 3 };

/* Registers "wm.features" on rt (once per runtime): hist [N, W] in (any strides; W >= 3),
 * features [N, 64] out (any strides), LANES histories per work-item (16 on CPUs, 1 elsewhere). */
kp_status features_register(kp_runtime *rt, kp_kernel **out);

/* Enqueues the one launch over all N histories; `event` may be NULL. */
kp_status features_encode(kp_runtime *rt, kp_kernel *k, kp_tensor hist, kp_tensor features,
                          kp_event **event);

/* The same 64 values in double from history v [w] (contiguous). */
void features_reference(const float *v, int w, double out[FEATURES]);

/*
 * The kernel against features_reference on awkward views of the time-major histories hist [W, N]
 * (the same as v [N, l], whose first W steps they hold): the first 1, 13 and 1021 histories (fewer
 * than a work-item's lanes, and a count no lane width divides) and every other one of the first
 * 41 (a stride of 2, gathered lane by lane). Overwrites out [64, N]. *worst: the largest
 * |device - reference| / (1 + |reference|).
 */
kp_status features_check_views(kp_runtime *rt, kp_kernel *k, kp_buffer *hist, kp_buffer *out,
                               int64_t n, int w, const float *v, int l, double *worst);

/* Short names of the 64 features, in order (the README's table). */
extern const char *const features_names[FEATURES];

#endif
