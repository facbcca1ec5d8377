/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: sample arguments that plugins build for verification and benchmarks. */
#ifndef KP_SAMPLE_H
#define KP_SAMPLE_H

#include "runtime.h"

typedef struct kp__sample_arg {
    int present;
    int32_t dtype;
    int32_t rank;
    int64_t shape[KP_MAX_RANK];
    int64_t numel; /* elements of storage */
    void *data;    /* host memory, numel * dtype size bytes */
    int has_view;  /* the tensor is a strided view (offset, strides) of the storage */
    int64_t offset;
    int64_t strides[KP_MAX_RANK];
    int64_t i;
    double f;
} kp__sample_arg;

struct kp_sample {
    kp_runtime *rt;
    const kp_kernel *kernel;
    uint64_t state;       /* splitmix64 */
    kp__sample_arg *args; /* one per parameter */
};

/* Seeds the stream from the seed, the kernel's name and the size name, so each sample is
 * reproducible on its own. */
kp_status kp__sample_init(kp_sample *s, kp_runtime *rt, const kp_kernel *k, uint64_t seed,
                          const char *size);
void kp__sample_fini(kp_sample *s);
/* Runs the kernel's sample function for `size` and checks every required parameter is set. */
kp_status kp__sample_build(kp_sample *s, const char *size);

kp_status kp__sample_tensor(kp_sample *s, const char *name, int32_t dtype, int32_t rank,
                            const int64_t *shape, double lo, double hi, void **data);
kp_status kp__sample_view(kp_sample *s, const char *name, int32_t rank, const int64_t *shape,
                          int64_t offset, const int64_t *strides);
kp_status kp__sample_int(kp_sample *s, const char *name, int64_t value);
kp_status kp__sample_float(kp_sample *s, const char *name, double value);
uint64_t kp__sample_random(kp_sample *s);
void *kp__sample_kernel_user(kp_sample *s);

/* A sample's arguments as device buffers (`dev`) and, with_reference, host copies (`ref`) for
 * the reference; both in the kernel's parameter order, omitting absent optional ones. */
typedef struct kp__sample_args {
    kp_arg *dev;
    kp_arg *ref;
    size_t n;
} kp__sample_args;

/* Binds the sample's host data as a call (values: one per parameter), for cost and tolerance
 * callbacks that read shapes, scalars and host data. */
void kp__sample_bind_host(const kp_sample *s, kp_value *values);

kp_status kp__sample_args_create(kp_runtime *rt, const kp_kernel *k, const kp_sample *s,
                                 int with_reference, kp__sample_args *r);
void kp__sample_args_free(kp_runtime *rt, kp__sample_args *r);

#endif
