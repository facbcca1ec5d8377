/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the conv plugin's tests: runtimes, buffers from doubles, comparisons. */
#ifndef KP_TEST_CONV_H
#define KP_TEST_CONV_H

/* Include after <cmocka.h>: the helpers fail the running test with cmocka's assertions. */
#include <math.h>
#include <stdint.h>

#include "test-util.h"

/* A runtime loading the build's plugins, with `manifest` (may be NULL) layered on top. */
static inline kp_runtime *open_runtime(const char *manifest)
{
    kp_runtime_options o = test_options(test_build_path("lib/kernelport/plugins"), NULL, NULL);
    o.manifest_path = manifest;
    kp_runtime *r = NULL;
    kp_status st = kp_runtime_create(&o, &r);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return r;
}

static inline kp_kernel *find(kp_runtime *r, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(r, name, &k), KP_OK);
    return k;
}

static inline double *doubles(size_t n, unsigned seed)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    double *d = malloc((n ? n : 1) * sizeof *d);
    assert_true(f && d);
    test_fill(f, n, seed);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i]; /* representable in f32: host and device see the same values */
    free(f);
    return d;
}

static inline kp_buffer *upload(kp_runtime *r, const double *d, size_t n)
{
    float *f = malloc((n ? n : 1) * sizeof *f);
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)d[i];
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(r, (n ? n : 1) * sizeof(float), &b), KP_OK);
    assert_int_equal(kp_buffer_write(r, b, 0, n * sizeof(float), f), KP_OK);
    free(f);
    return b;
}

/* An output buffer full of NaN: an element a kernel forgets fails every comparison. */
static inline kp_buffer *garbage(kp_runtime *r, size_t n)
{
    kp_buffer *b = NULL;
    float nan = NAN;
    assert_int_equal(kp_buffer_create(r, (n ? n : 1) * sizeof(float), &b), KP_OK);
    assert_int_equal(kp_buffer_fill(r, b, 0, (n ? n : 1) * sizeof(float), &nan, sizeof nan), KP_OK);
    return b;
}

static inline float *download(kp_runtime *r, kp_buffer *b, size_t n)
{
    float *out = malloc((n ? n : 1) * sizeof *out);
    assert_non_null(out);
    assert_int_equal(kp_buffer_read(r, b, 0, n * sizeof(float), out), KP_OK);
    return out;
}

static inline kp_tensor t4(kp_buffer *b, int64_t a, int64_t c, int64_t h, int64_t w)
{
    return kp_tensor_nd(b, KP_F32, 4, (int64_t[]){a, c, h, w});
}

/* The window's integers, appended to args from index n; returns the new count. */
static inline void launch(kp_runtime *r, const char *kernel, const kp_arg *args, size_t n)
{
    kp_status st = kp_kernel_launch(r, find(r, kernel), args, n, NULL);
    if (st != KP_OK)
        fail_msg("%s: %s", kernel, kp_last_error(r));
}

/* Fails unless |got - want| <= tol max|want| for every element (NaN fails). */
static inline void expect_close(const char *what, const float *got, const double *want, size_t n,
                                double tol)
{
    double scale = 0.0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (scale > 0 ? scale : 1.0)))
            fail_msg("%s: element %zu is %.9g, expected %.9g (tolerance %.3g x %.3g)", what, i,
                     (double)got[i], want[i], tol, scale);
}

static inline void conv_report(void *user, const kp_verify_result *r)
{
    (void)user;
    if (!r->passed)
        fprintf(stderr, "verify %s %s %s: max abs err %g (atol %g, rtol %g)\n", r->kernel, r->size,
                r->output, r->max_abs_err, r->atol, r->rtol);
}

/* kp_kernel_verify of `kernel` on every verify size, failing the test on any difference. */
static inline void verify_kernel(kp_runtime *r, const char *kernel)
{
    kp_status st = kp_kernel_verify(r, find(r, kernel), NULL, 7, conv_report, NULL);
    if (st != KP_OK)
        fail_msg("verify %s: %s", kernel, kp_last_error(r));
}

#endif
