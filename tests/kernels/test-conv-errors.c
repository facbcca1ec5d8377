/* SPDX-License-Identifier: Apache-2.0 */
/* The conv plugin's argument checks: every invalid geometry is refused with its exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

/* Checks run before anything is built or enqueued, so these tests compile no kernel. */
static kp_runtime *rt;
static kp_buffer *bufs[4]; /* one per tensor argument: outputs may not share a buffer */

static kp_tensor t4(int i, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return kp_tensor_nd(bufs[i], KP_F32, 4, (int64_t[]){a, b, c, d});
}

/* Launches `kernel` and expects `status` with the message "kernel <kernel>: <message>". */
static void expect(const char *kernel, const kp_arg *args, size_t n, kp_status status,
                   const char *message)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, kernel, &k), KP_OK);
    kp_status st = kp_kernel_launch(rt, k, args, n, NULL);
    char want[512];
    snprintf(want, sizeof want, "kernel %s: %s", kernel, message);
    if (st != status || strcmp(kp_last_error(rt), want) != 0)
        fail_msg("%s: got %s \"%s\"\nwanted %s \"%s\"", kernel, kp_status_name(st),
                 kp_last_error(rt), kp_status_name(status), want);
}

/* conv.conv2d on x [1, C, H, W] and w [K, Cw, KH, KW], y [1, K, OH, OW], plus `extra`. */
static void conv(int64_t C, int64_t H, int64_t W, int64_t K, int64_t Cw, int64_t KH, int64_t KW,
                 int64_t OH, int64_t OW, const kp_arg *extra, size_t n_extra, const char *message)
{
    kp_arg args[16] = {KP_ARG_TENSOR("x", t4(0, 1, C, H, W)),
                       KP_ARG_TENSOR("w", t4(1, K, Cw, KH, KW)),
                       KP_ARG_TENSOR("y", t4(2, 1, K, OH, OW))};
    for (size_t i = 0; i < n_extra; i++)
        args[3 + i] = extra[i];
    expect("conv.conv2d", args, 3 + n_extra, KP_ERR_INVALID_ARG, message);
}

static void test_conv2d_geometry(void **state)
{
    (void)state;
    /* OH <= 0: the kernel is taller than the padded input. */
    conv(2, 3, 3, 4, 2, 5, 2, 1, 1, (kp_arg[]){KP_ARG_INT("pad_h", 0)}, 1,
         "w: kernel height 5 (dilation_h 1: extent 5) exceeds the padded input height 3 (H 3 + "
         "2 x pad_h 0), so OH would be < 1");
    /* OW <= 0 through dilation. */
    conv(2, 3, 3, 4, 2, 2, 2, 2, 1, (kp_arg[]){KP_ARG_INT("dilation_w", 3)}, 1,
         "w: kernel width 2 (dilation_w 3: extent 4) exceeds the padded input width 3 (W 3 + 2 x "
         "pad_w 0), so OW would be < 1");
    conv(6, 5, 5, 4, 2, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("groups", 4)}, 1,
         "groups: C = 6 input channels are not divisible by groups = 4");
    conv(6, 5, 5, 4, 2, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("groups", 3)}, 1,
         "groups: K = 4 output channels are not divisible by groups = 3");
    conv(6, 5, 5, 4, 2, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("groups", 2)}, 1,
         "w: expected [K, C/groups, KH, KW] = [4, 3, 3, 3], got f32[4, 2, 3, 3]");
    conv(6, 5, 5, 4, 6, 3, 3, 3, 2, NULL, 0,
         "y: expected [N, K, OH, OW] = [1, 4, 3, 3], got f32[1, 4, 3, 2]");
    conv(6, 5, 5, 4, 6, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("stride_h", 0)}, 1,
         "stride_h: 0 is not >= 1");
    conv(6, 5, 5, 4, 6, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("pad_w", -1)}, 1,
         "pad_w: -1 is not >= 0");
    conv(6, 5, 5, 4, 6, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("dilation_h", 0)}, 1,
         "dilation_h: 0 is not >= 1");
    conv(6, 5, 5, 4, 6, 3, 3, 3, 3, (kp_arg[]){KP_ARG_INT("groups", 0)}, 1,
         "groups: 0 is not >= 1");
    kp_tensor five = kp_tensor_1d(bufs[3], KP_F32, 5);
    conv(6, 5, 5, 4, 6, 3, 3, 3, 3, (kp_arg[]){KP_ARG_TENSOR("bias", five)}, 1,
         "bias: expected [K] = [4], got f32[5]");
    kp_arg rank3[] = {KP_ARG_TENSOR("x", kp_tensor_3d(bufs[0], KP_F32, 2, 3, 4)),
                      KP_ARG_TENSOR("w", t4(1, 4, 3, 1, 1)), KP_ARG_TENSOR("y", t4(2, 2, 4, 3, 4))};
    expect("conv.conv2d", rank3, 3, KP_ERR_INVALID_ARG,
           "x: expected [N, C, H, W] with every dimension >= 1, got f32[2, 3, 4]");
    /* The GEMM needs the weights as a matrix. */
    kp_tensor w = t4(1, 4, 2, 3, 3);
    w.strides[3] = 2, w.strides[2] = 6, w.strides[1] = 18, w.strides[0] = 36;
    kp_arg strided[] = {KP_ARG_TENSOR("x", t4(0, 1, 2, 5, 5)), KP_ARG_TENSOR("w", w),
                        KP_ARG_TENSOR("y", t4(2, 1, 4, 3, 3))};
    expect("conv.conv2d", strided, 3, KP_ERR_UNSUPPORTED,
           "w: the last three dimensions must be contiguous and rows at least C/groups KH KW "
           "apart (a [K, C/groups KH KW] matrix for the GEMM), got f32[4, 2, 3, 3] strides [36, "
           "18, 6, 2]");
}

static void test_gradient_shapes(void **state)
{
    (void)state;
    kp_arg data[] = {KP_ARG_TENSOR("dy", t4(0, 2, 4, 3, 2)), KP_ARG_TENSOR("w", t4(1, 4, 3, 3, 3)),
                     KP_ARG_TENSOR("dx", t4(2, 2, 3, 5, 5))};
    expect("conv.conv2d_backward_data", data, 3, KP_ERR_INVALID_ARG,
           "dy: expected [N, K, OH, OW] = [2, 4, 3, 3], got f32[2, 4, 3, 2]");
    kp_arg weight[] = {KP_ARG_TENSOR("x", t4(0, 2, 3, 5, 5)),
                       KP_ARG_TENSOR("dy", t4(1, 2, 4, 3, 3)),
                       KP_ARG_TENSOR("dw", t4(2, 4, 3, 3, 3)), KP_ARG_INT("groups", 3)};
    expect("conv.conv2d_backward_weight", weight, 4, KP_ERR_INVALID_ARG,
           "groups: K = 4 output channels are not divisible by groups = 3");
    kp_arg bias[] = {KP_ARG_TENSOR("dy", t4(0, 2, 4, 3, 3)),
                     KP_ARG_TENSOR("db", kp_tensor_1d(bufs[1], KP_F32, 3))};
    expect("conv.conv2d_backward_bias", bias, 2, KP_ERR_INVALID_ARG,
           "db: expected [K] = [4], got f32[3]");
    /* A plane of 2^24 positions, as a broadcast view of a small buffer: refused, not misread. */
    kp_tensor plane = t4(0, 1, 1, 4096, 4096);
    plane.strides[2] = plane.strides[3] = 0;
    kp_arg huge[] = {KP_ARG_TENSOR("dy", plane),
                     KP_ARG_TENSOR("db", kp_tensor_1d(bufs[1], KP_F32, 1))};
    expect("conv.conv2d_backward_bias", huge, 2, KP_ERR_UNSUPPORTED,
           "dy: planes of 4096 x 4096 positions: at most 2^24 - 1 per plane are supported");
}

static void test_im2col_and_pool(void **state)
{
    (void)state;
    /* A kernel larger than the padded input is refused, naming kernel_h. */
    kp_arg big[] = {KP_ARG_TENSOR("im", t4(0, 1, 2, 3, 3)),
                    KP_ARG_TENSOR("col", kp_tensor_3d(bufs[1], KP_F32, 1, 72, 1)),
                    KP_ARG_INT("kernel_h", 6),
                    KP_ARG_INT("kernel_w", 6),
                    KP_ARG_INT("pad_h", 1),
                    KP_ARG_INT("pad_w", 1)};
    expect("conv.im2col", big, 6, KP_ERR_INVALID_ARG,
           "kernel_h: kernel height 6 (dilation_h 1: extent 6) exceeds the padded input height 5 "
           "(H 3 + 2 x pad_h 1), so OH would be < 1");
    big[2] = KP_ARG_INT("kernel_h", 1);
    expect("conv.im2col", big, 6, KP_ERR_INVALID_ARG,
           "kernel_w: kernel width 6 (dilation_w 1: extent 6) exceeds the padded input width 5 "
           "(W 3 + 2 x pad_w 1), so OW would be < 1");
    kp_arg col[] = {KP_ARG_TENSOR("col", kp_tensor_3d(bufs[0], KP_F32, 1, 18, 8)),
                    KP_ARG_TENSOR("im", t4(1, 1, 2, 3, 3)),
                    KP_ARG_INT("kernel_h", 3),
                    KP_ARG_INT("kernel_w", 3),
                    KP_ARG_INT("pad_h", 1),
                    KP_ARG_INT("pad_w", 1)};
    expect("conv.col2im", col, 6, KP_ERR_INVALID_ARG,
           "col: expected [N, C KH KW, OH OW] = [1, 18, 9], got f32[1, 18, 8]");
    col[2] = KP_ARG_INT("kernel_h", 0);
    expect("conv.col2im", col, 6, KP_ERR_INVALID_ARG, "kernel_h: 0 is not >= 1");
    kp_arg pool[] = {KP_ARG_TENSOR("x", t4(0, 1, 2, 6, 6)), KP_ARG_TENSOR("y", t4(1, 1, 2, 3, 3)),
                     KP_ARG_INT("kernel_h", 3), KP_ARG_INT("kernel_w", 3), KP_ARG_INT("pad_h", 2)};
    expect("conv.maxpool2d", pool, 5, KP_ERR_INVALID_ARG,
           "pad_h: 2 is more than half the kernel height 3 (padding is never selected, so a "
           "pool's padding may be at most half its window)");
    pool[4] = KP_ARG_INT("pad_h", 1);
    kp_tensor idx = kp_tensor_nd(bufs[2], KP_I32, 4, (int64_t[]){1, 2, 2, 3});
    kp_arg pool_idx[] = {pool[0],
                         KP_ARG_TENSOR("y", t4(1, 1, 2, 2, 2)),
                         KP_ARG_TENSOR("indices", idx),
                         pool[2],
                         pool[3],
                         pool[4]};
    expect("conv.maxpool2d", pool_idx, 6, KP_ERR_INVALID_ARG,
           "indices: expected [N, C, OH, OW] = [1, 2, 2, 2], got i32[1, 2, 2, 3]");
}

static int setup(void **state)
{
    (void)state;
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), NULL);
    if (kp_runtime_create(&o, &rt) != KP_OK) {
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
        return -1;
    }
    for (int i = 0; i < 4; i++)
        if (kp_buffer_create(rt, 4096 * sizeof(float), &bufs[i]) != KP_OK)
            return -1;
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
        cmocka_unit_test(test_conv2d_geometry),
        cmocka_unit_test(test_gradient_shapes),
        cmocka_unit_test(test_im2col_and_pool),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
