/* SPDX-License-Identifier: Apache-2.0 */
/* The host helpers of kernelport/ops/gru.h: gru.rollout's random numbers and its metrics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/ops/gru.h"

/* Random123's known-answer vectors for Philox4x32-10. */
static void test_philox_known_answers(void **state)
{
    const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
    const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                 {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                 {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        kp_philox4x32_10(ctr[i], key[i], out);
        for (int j = 0; j < 4; j++)
            assert_int_equal(out[j], want[i][j]);
    }
    /* (seed, e, b, t) = counter (t, b, e, 0), key (seed's halves): the first word's top 24 bits. */
    assert_float_equal(kp_gru_rollout_uniform(0, 0, 0, 0), (float)(0x6627e8d5u >> 8) * 0x1p-24f, 0);
}

/* Two members, one trajectory, four steps: y0 = (1, 2, 4, 7), y1 = (1, 0, 0, 1), by hand. */
static void test_metrics_by_hand(void **state)
{
    const float y[8] = {1, 2, 4, 7, 1, 0, 0, 1};
    float deltas[6], variance[4], spread[4];
    kp_gru_rollout_metrics m = {.struct_size = sizeof m};
    assert_int_equal(kp_gru_rollout_metrics_compute(y, 2, 1, 4, deltas, variance, spread, &m), 0);
    const float want_d[6] = {1, 2, 3, -1, 0, 1}, want_v[4] = {0, 1, 4, 9}, want_s[4] = {0, 2, 4, 6};
    for (int i = 0; i < 6; i++)
        assert_float_equal(deltas[i], want_d[i], 0);
    for (int i = 0; i < 4; i++) {
        assert_float_equal(variance[i], want_v[i], 1e-12);
        assert_float_equal(spread[i], want_s[i], 0);
    }
    assert_float_equal(m.mean_abs_delta, 8.0 / 6.0, 1e-12); /* |1|+|2|+|3|+|-1|+|0|+|1| */
    assert_float_equal(m.smoothness, 1.0, 1e-12);           /* every second difference is 1 */
    assert_float_equal(m.trajectory_variance, (5.25 + 0.25) / 2, 1e-12);
    assert_float_equal(m.ensemble_variance, 14.0 / 4, 1e-12);
    assert_float_equal(m.ensemble_spread, 3.0, 1e-12);
    assert_float_equal(m.final_spread, 6.0, 1e-12);
    /* One step: no deltas, no second differences; bad arguments write nothing. */
    assert_int_equal(kp_gru_rollout_metrics_compute(y, 2, 1, 1, NULL, NULL, NULL, &m), 0);
    assert_float_equal(m.mean_abs_delta, 0, 0);
    assert_float_equal(m.smoothness, 0, 0);
    assert_int_equal(kp_gru_rollout_metrics_compute(NULL, 2, 1, 4, NULL, NULL, NULL, &m), -1);
    assert_int_equal(kp_gru_rollout_metrics_compute(y, 0, 1, 4, NULL, NULL, NULL, &m), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_metrics_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
