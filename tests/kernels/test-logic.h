/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the logic plugin's test files: the one runtime, device helpers, double math. */
#ifndef KP_TEST_LOGIC_H
#define KP_TEST_LOGIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernelport/ops/logic.h"
#include "test-util.h"

/* One runtime for the whole executable: each new kernel or local size costs PoCL a compile. */
extern kp_runtime *rt;

/* A buffer holding `bytes` of `data` (NULL: uninitialised). */
kp_buffer *up(const void *data, size_t bytes);
/* An output buffer of n floats, NaN-filled so that an element left unwritten fails. */
kp_buffer *out_f32(size_t n);
void down(kp_buffer *b, void *dst, size_t bytes);
/* Launches kernel `name`, printing the message of a failure. */
kp_status launch(const char *name, const kp_arg *args, size_t n);

/* The 16 ops on soft inputs, as the issue and difflogic write them (not through the table). */
double op_soft(int i, double a, double b);
/* n doubles in [lo, hi), each exactly a float (both sides see the same values). */
double *rand_doubles(size_t n, unsigned seed, double lo, double hi);

#define T2(b, t, r, c) kp_tensor_2d((b), (t), (r), (c))
#define T1(b, t, n) kp_tensor_1d((b), (t), (n))

/* test-logic-packed.c */
void test_packed_matches_unpacked(void **state);
void test_groupsum_matches(void **state);
void test_perceive_indices(void **state);
void test_perceive_adjoint(void **state);
void test_wiring_rejected(void **state);
void test_shapes_rejected(void **state);
void test_verify_all(void **state);
void test_verify_gpu_shapes(void **state);

#endif
