/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor view kernels receive (core/view.c, the prelude's kp_view<R> vectors): the offset
 * (-1 when empty), then the strides, zero-padded; padding to the kernel's rank, broadcast strides,
 * and views a kernel cannot reach. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "view.h"

static void test_same_rank(void **state)
{
    kp_tensor t = kp_tensor_2d(NULL, KP_F32, 3, 5);
    t.offset = 7;
    t.strides[0] = 9;
    int32_t v[4];
    const char *why = NULL;
    assert_int_equal(kp__view_words(2), 4);
    assert_int_equal(kp__view_pack(&t, 2, v, &why), KP_OK);
    const int32_t want[4] = {7, 9, 1, 0};
    assert_memory_equal(v, want, sizeof want);
}

/* A [5] tensor seen as rank 3 is [1, 1, 5] with strides [0, 0, 2]: NumPy's alignment. */
static void test_padded_to_a_higher_rank(void **state)
{
    kp_tensor t = kp_tensor_1d(NULL, KP_F32, 5);
    t.strides[0] = 2;
    int32_t v[4];
    const char *why = NULL;
    assert_int_equal(kp__view_pack(&t, 3, v, &why), KP_OK);
    const int32_t want[4] = {0, 0, 0, 2};
    assert_memory_equal(v, want, sizeof want);
}

static void test_rank_zero_is_the_offset(void **state)
{
    kp_tensor t = kp_tensor_nd(NULL, KP_F32, 0, NULL);
    t.offset = 11;
    int32_t v[1];
    const char *why = NULL;
    assert_int_equal(kp__view_pack(&t, 0, v, &why), KP_OK);
    assert_int_equal(v[0], 11);
}

/* A view below the tensor's rank, or above KP_MAX_RANK, is the plugin's mistake; rank 8 (the most
 * a tensor has) fills an int16. */
static void test_rank_above_the_view_is_refused(void **state)
{
    kp_tensor t = kp_tensor_3d(NULL, KP_F32, 2, 3, 4);
    int32_t v[16];
    const char *why = NULL;
    assert_int_equal(kp__view_pack(&t, 2, v, &why), KP_ERR_INVALID_ARG);
    assert_non_null(why);
    assert_int_equal(kp__view_words(KP_MAX_RANK), 16);
    assert_int_equal(kp__view_pack(&t, KP_MAX_RANK, v, &why), KP_OK);
    const int32_t want[16] = {0, 0, 0, 0, 0, 0, 12, 4, 1};
    assert_memory_equal(v, want, sizeof want);
    assert_int_equal(kp__view_pack(&t, KP_MAX_RANK + 1, v, &why), KP_ERR_INVALID_ARG);
}

/* A broadcast of 2^32 x 2^32 elements (stride 0) touches one element, but its extents do not fit
 * an int; a view whose last element is past 2^31 - 1 does not either; one that ends exactly at
 * 2^31 - 1 does, and so does an empty view whatever its strides. */
static void test_views_past_int_are_refused(void **state)
{
    int32_t v[4];
    const char *why = NULL;
    kp_tensor huge = kp_tensor_2d(NULL, KP_F32, 1, 1);
    huge.shape[0] = huge.shape[1] = (int64_t)1 << 32;
    huge.strides[0] = huge.strides[1] = 0;
    assert_int_equal(kp__view_pack(&huge, 2, v, &why), KP_ERR_UNSUPPORTED);
    kp_tensor far = kp_tensor_2d(NULL, KP_F32, 2, 2);
    far.strides[0] = INT_MAX;
    assert_int_equal(kp__view_pack(&far, 2, v, &why), KP_ERR_UNSUPPORTED);
    kp_tensor edge = kp_tensor_1d(NULL, KP_F32, 2);
    edge.offset = INT_MAX - 1;
    assert_int_equal(kp__view_pack(&edge, 1, v, &why), KP_OK);
    edge.offset = INT_MAX;
    assert_int_equal(kp__view_pack(&edge, 1, v, &why), KP_ERR_UNSUPPORTED);
    kp_tensor empty = kp_tensor_2d(NULL, KP_F32, 0, 3);
    empty.strides[1] = INT_MAX;
    empty.offset = (int64_t)1 << 40;
    assert_int_equal(kp__view_pack(&empty, 2, v, &why), KP_OK);
    assert_int_equal(v[0], -1); /* nothing is read: the offset says so */
    /* A stride past int on a dimension of extent 1 reaches nothing: it goes as 0. */
    kp_tensor one = kp_tensor_2d(NULL, KP_F32, 1, 3);
    one.strides[0] = (int64_t)1 << 40;
    assert_int_equal(kp__view_pack(&one, 2, v, &why), KP_OK);
    const int32_t want[4] = {0, 0, 1, 0};
    assert_memory_equal(v, want, sizeof want);
}

/* A flipped view goes with its negative strides and its index-0 element as the offset. Its
 * highest element bounds it, not offset + the sum of every step: [2, 3] at offset 2^30 with
 * strides [-2^30, 2^30 - 1] reaches element 2^30 + 2 (2^30 - 1) = 2^31 + 2^30 - 2, past int,
 * though the sum of its steps stops at 2^31 - 2. A stride below -(2^31 - 1) does not fit, and a
 * view reaching below element 0 is refused. */
static void test_negative_strides(void **state)
{
    int32_t v[4];
    const char *why = NULL;
    kp_tensor t = kp_tensor_flip(kp_tensor_2d(NULL, KP_F32, 3, 4), 0);
    assert_int_equal(kp__view_pack(&t, 2, v, &why), KP_OK);
    const int32_t want[4] = {8, -4, 1, 0};
    assert_memory_equal(v, want, sizeof want);
    kp_tensor far = kp_tensor_2d(NULL, KP_F32, 2, 3);
    far.offset = (int64_t)1 << 30;
    far.strides[0] = -((int64_t)1 << 30);
    far.strides[1] = ((int64_t)1 << 30) - 1;
    assert_int_equal(kp__view_pack(&far, 2, v, &why), KP_ERR_UNSUPPORTED);
    kp_tensor wide = kp_tensor_1d(NULL, KP_F32, 2);
    wide.offset = INT_MAX;
    wide.strides[0] = -(int64_t)INT_MAX - 1;
    assert_int_equal(kp__view_pack(&wide, 1, v, &why), KP_ERR_UNSUPPORTED);
    kp_tensor before = kp_tensor_flip(kp_tensor_1d(NULL, KP_F32, 5), 0);
    before.offset = 3;
    assert_int_equal(kp__view_pack(&before, 1, v, &why), KP_ERR_INVALID_ARG);
    assert_string_equal(why, "the view reaches before element 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_rank),
        cmocka_unit_test(test_padded_to_a_higher_rank),
        cmocka_unit_test(test_rank_zero_is_the_offset),
        cmocka_unit_test(test_rank_above_the_view_is_refused),
        cmocka_unit_test(test_views_past_int_are_refused),
        cmocka_unit_test(test_negative_strides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
