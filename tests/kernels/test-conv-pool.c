/* SPDX-License-Identifier: Apache-2.0 */
/* conv.maxpool2d and its backward on PoCL: ties, NaN, overlapping windows, and verify. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-conv.h"

static kp_runtime *rt;

/* ROWS for both pooling kernels: 1 their row kernels (PoCL's default), 2 their element kernels. */
static void set_rows(int kind)
{
    const char *names[] = {"conv.maxpool2d", "conv.maxpool2d_backward"};
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(kp_kernel_tunable_set(rt, find(rt, names[i]), "ROWS", kind), KP_OK);
}

/* Pools x [1, 1, 4, 4] and returns y and indices (both [1, 1, OH, OW]). */
static void run_pool(const float *x, int64_t k, int64_t s, int64_t p, float *y, int32_t *idx,
                     int64_t OH, int64_t OW)
{
    kp_buffer *bx, *by = garbage(rt, (size_t)(OH * OW)), *bi = garbage(rt, (size_t)(OH * OW));
    assert_int_equal(kp_buffer_create(rt, 16 * sizeof(float), &bx), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bx, 0, 16 * sizeof(float), x), KP_OK);
    kp_tensor ti = kp_tensor_nd(bi, KP_I32, 4, (int64_t[]){1, 1, OH, OW});
    kp_arg a[] = {KP_ARG_TENSOR("x", t4(bx, 1, 1, 4, 4)),
                  KP_ARG_TENSOR("y", t4(by, 1, 1, OH, OW)),
                  KP_ARG_TENSOR("indices", ti),
                  KP_ARG_INT("kernel_h", k),
                  KP_ARG_INT("kernel_w", k),
                  KP_ARG_INT("stride_h", s),
                  KP_ARG_INT("stride_w", s),
                  KP_ARG_INT("pad_h", p),
                  KP_ARG_INT("pad_w", p)};
    launch(rt, "conv.maxpool2d", a, sizeof a / sizeof a[0]);
    assert_int_equal(kp_buffer_read(rt, by, 0, (size_t)(OH * OW) * sizeof(float), y), KP_OK);
    assert_int_equal(kp_buffer_read(rt, bi, 0, (size_t)(OH * OW) * sizeof(int32_t), idx), KP_OK);
    kp_buffer_destroy(rt, bx), kp_buffer_destroy(rt, by), kp_buffer_destroy(rt, bi);
}

/* Ties keep the lowest index h W + w (-inf included); a NaN wins its window; the backward gathers
 * dy through the indices, summing where overlapping windows chose the same element. */
static void check_pool(int kind)
{
    set_rows(kind);
    const float x[16] = {1, 1, 0, 2, /**/ 1, 0, 2, 2, /**/ 3, 0, 5, 5, /**/ 0, 3, 5, 5};
    float y[16];
    int32_t idx[16];
    run_pool(x, 2, 2, 0, y, idx, 2, 2);
    const float want_y[4] = {1, 2, 3, 5};
    const int32_t want_i[4] = {0, 3, 8, 10};
    assert_memory_equal(y, want_y, sizeof want_y);
    assert_memory_equal(idx, want_i, sizeof want_i);
    /* 3x3 windows, stride 1, padding 1: overlapping windows share their maxima. */
    run_pool(x, 3, 1, 1, y, idx, 4, 4);
    const int32_t want_o[16] = {0, 6, 3, 3, 8, 10, 10, 10, 8, 10, 10, 10, 8, 10, 10, 10};
    assert_memory_equal(idx, want_o, sizeof want_o);
    float nan_x[16];
    memcpy(nan_x, x, sizeof nan_x);
    nan_x[5] = NAN;
    nan_x[6] = NAN;
    run_pool(nan_x, 2, 2, 0, y, idx, 2, 2);
    assert_true(isnan(y[0]) && idx[0] == 5 && isnan(y[1]) && idx[1] == 6 && y[3] == 5);
    float low[16];
    for (int i = 0; i < 16; i++)
        low[i] = -INFINITY;
    run_pool(low, 2, 2, 0, y, idx, 2, 2);
    assert_true(isinf(y[0]) && y[0] < 0);
    assert_memory_equal(idx, want_i, sizeof want_i - sizeof want_i[0] * 3);
    assert_true(idx[1] == 2 && idx[2] == 8 && idx[3] == 10);

    /* Backward of the overlapping pool: dx[i] = the sum of dy over the windows that chose i. */
    run_pool(x, 3, 1, 1, y, idx, 4, 4);
    double dy[16], want_dx[16] = {0};
    for (int i = 0; i < 16; i++) {
        dy[i] = 0.25 * (i + 1);
        want_dx[want_o[i]] += dy[i];
    }
    kp_buffer *bdy = upload(rt, dy, 16), *bi, *bdx = garbage(rt, 16);
    assert_int_equal(kp_buffer_create(rt, sizeof idx, &bi), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bi, 0, sizeof idx, idx), KP_OK);
    kp_arg a[] = {KP_ARG_TENSOR("dy", t4(bdy, 1, 1, 4, 4)),
                  KP_ARG_TENSOR("indices", kp_tensor_nd(bi, KP_I32, 4, (int64_t[]){1, 1, 4, 4})),
                  KP_ARG_TENSOR("dx", t4(bdx, 1, 1, 4, 4)),
                  KP_ARG_INT("kernel_h", 3),
                  KP_ARG_INT("kernel_w", 3),
                  KP_ARG_INT("stride_h", 1),
                  KP_ARG_INT("stride_w", 1),
                  KP_ARG_INT("pad_h", 1),
                  KP_ARG_INT("pad_w", 1)};
    launch(rt, "conv.maxpool2d_backward", a, sizeof a / sizeof a[0]);
    float *dx = download(rt, bdx, 16);
    expect_close("maxpool backward", dx, want_dx, 16, 0.0);
    kp_buffer_destroy(rt, bdy), kp_buffer_destroy(rt, bi), kp_buffer_destroy(rt, bdx);
    free(dx);
}

static void test_maxpool_ties_and_backward(void **state)
{
    (void)state;
    check_pool(1);
    check_pool(2);
}

/* Both kernels of both on every verify size: ties, overlap, dilation, views, no indices. */
static void test_verify(void **state)
{
    (void)state;
    for (int kind = 1; kind <= 2; kind++) {
        set_rows(kind);
        verify_kernel(rt, "conv.maxpool2d");
        verify_kernel(rt, "conv.maxpool2d_backward");
    }
}

static int setup(void **state)
{
    (void)state;
    rt = open_runtime(NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kp_runtime_destroy(rt);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxpool_ties_and_backward),
        cmocka_unit_test(test_verify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
