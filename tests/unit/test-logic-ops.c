/* SPDX-License-Identifier: Apache-2.0 */
/* The host helpers of kernelport/ops/logic.h: the op table, wirings, initialisations, the CSR. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "kernelport/ops/logic.h"

/* The table's affine forms equal the op definitions, and on {0, 1} the op ids' truth
 * tables; the bitwise form agrees bit by bit. */
static void test_table_and_truth(void **state)
{
    for (int op = 0; op < 16; op++) {
        for (int ab = 0; ab < 4; ab++) {
            int a = ab >> 1, b = ab & 1, want = op >> (3 - ab) & 1;
            assert_float_equal(kp_logic_op_soft(op, a, b), want, 0);
            uint64_t bits = kp_logic_op_bits(op, a ? ~0ull : 0, b ? ~0ull : 0);
            assert_true(bits == (want ? ~0ull : 0));
        }
        /* Affine in each input: the soft value at the centre is the mean of the corners'
         * bilinear interpolation. */
        double corners = 0;
        for (int ab = 0; ab < 4; ab++)
            corners += (op >> (3 - ab) & 1) / 4.0;
        assert_float_equal(kp_logic_op_soft(op, 0.5, 0.5), corners, 1e-15);
    }
    /* Per bit, against the switch form, on random words. */
    uint64_t s = 9;
    for (int op = 0; op < 16; op++)
        for (int t = 0; t < 8; t++) {
            uint64_t a = kp_logic_random(&s), b = kp_logic_random(&s);
            uint64_t y = kp_logic_op_bits(op, a, b);
            for (int i = 0; i < 64; i++) {
                int ai = a >> i & 1, bi = b >> i & 1;
                assert_int_equal(y >> i & 1, op >> (3 - (2 * ai + bi)) & 1);
            }
        }
    assert_string_equal(kp_logic_op_name(KP_LOGIC_XOR), "XOR");
    assert_string_equal(kp_logic_op_name(KP_LOGIC_NOT_A_OR_B), "NOT_A_OR_B");
    assert_string_equal(kp_logic_op_name(16), "?");
    assert_int_equal(kp_logic_coeff(KP_LOGIC_TAB, KP_LOGIC_XNOR), 2);
    assert_int_equal(kp_logic_coeff(4, 0), 0);
}

/* random: seeded, reproducible; with 2 out >= in every input is used, and as evenly as
 * possible (each floor or ceil of 2 out / in times). */
static void test_wiring_random(void **state)
{
    enum { IN = 37, OUT = 50 };
    int32_t a[OUT], b[OUT], a2[OUT], b2[OUT];
    assert_int_equal(kp_logic_wiring_random(IN, OUT, 5, a, b), 0);
    assert_int_equal(kp_logic_wiring_random(IN, OUT, 5, a2, b2), 0);
    assert_memory_equal(a, a2, sizeof a);
    assert_memory_equal(b, b2, sizeof b);
    assert_int_equal(kp_logic_wiring_random(IN, OUT, 6, a2, b2), 0);
    assert_true(memcmp(a, a2, sizeof a) != 0);
    int uses[IN] = {0};
    for (int g = 0; g < OUT; g++) {
        assert_true(a[g] >= 0 && a[g] < IN && b[g] >= 0 && b[g] < IN);
        uses[a[g]]++, uses[b[g]]++;
    }
    for (int i = 0; i < IN; i++)
        assert_true(uses[i] == 2 * OUT / IN || uses[i] == 2 * OUT / IN + 1);
    assert_int_equal(kp_logic_wiring_bad_gate(a, b, OUT, IN), -1);
    /* difflogic's condition: 2 out >= in. */
    assert_int_equal(kp_logic_wiring_random(101, 50, 1, a, b), -1);
    assert_int_equal(kp_logic_wiring_random(0, 5, 1, a, b), -1);
}

/* unique: difflogic's pairs in its order, shuffled; distinct pairs of distinct inputs. */
static void test_wiring_unique(void **state)
{
    int32_t a[10], b[10];
    /* in = 4, out = 5: (0, 1), (2, 3), then (1, 2), then offset 2: (0, 2), (1, 3). */
    assert_int_equal(kp_logic_wiring_unique(4, 5, 3, a, b), 0);
    const int want[5][2] = {{0, 1}, {2, 3}, {1, 2}, {0, 2}, {1, 3}};
    int seen[5] = {0};
    for (int g = 0; g < 5; g++)
        for (int p = 0; p < 5; p++)
            if (a[g] == want[p][0] && b[g] == want[p][1])
                seen[p]++;
    for (int p = 0; p < 5; p++)
        assert_int_equal(seen[p], 1);
    /* in = 4, out = 7: offsets stop once fewer pairs than the offset remain (difflogic's loop):
     * (0, 1), (2, 3), (1, 2), (0, 2), (1, 3), (0, 3) are all there are. */
    assert_int_equal(kp_logic_wiring_unique(4, 6, 3, a, b), 0);
    assert_int_equal(kp_logic_wiring_unique(4, 7, 3, a, b), -1);
    assert_int_equal(kp_logic_wiring_unique(1, 1, 3, a, b), -1);
    /* in = 10, out = 8: only the first kind of pairs, and every a < b. */
    assert_int_equal(kp_logic_wiring_unique(10, 8, 1, a, b), 0);
    for (int g = 0; g < 8; g++)
        assert_true(a[g] < b[g]);
}

/* The reverse index by hand: gate 0 (0, 2), gate 1 (2, 2), gate 2 (1, 0) over 4 inputs. */
static void test_csr(void **state)
{
    const int32_t a[3] = {0, 2, 1}, b[3] = {2, 2, 0};
    int32_t start[5], entries[6];
    assert_int_equal(kp_logic_csr_build(a, b, 3, 4, start, entries), 0);
    const int32_t want_start[5] = {0, 2, 3, 6, 6};
    const int32_t want_entries[6] = {0, 5, 4, 1, 2, 3}; /* codes 2 g + side, sorted per wire */
    assert_memory_equal(start, want_start, sizeof start);
    assert_memory_equal(entries, want_entries, sizeof entries);
    const int32_t bad[3] = {0, 4, 1};
    assert_int_equal(kp_logic_csr_build(bad, b, 3, 4, start, entries), -1);
    assert_int_equal(kp_logic_wiring_bad_gate(bad, b, 3, 4), 1);
}

/* Initialisations: residual and pass-through probabilities of op A; Gaussian moments. */
static void test_inits(void **state)
{
    float w[16 * 2];
    kp_logic_init_residual(w, 2);
    double s = 0;
    for (int i = 0; i < 16; i++)
        s += exp(w[i]);
    assert_float_equal(exp(w[KP_LOGIC_A]) / s, exp(5.0) / (exp(5.0) + 15), 1e-12);
    assert_float_equal(w[16 + KP_LOGIC_A], 5.0f, 0);
    kp_logic_init_pass_through(w, 2);
    assert_float_equal(w[KP_LOGIC_A], 10.0f, 0);
    assert_float_equal(w[KP_LOGIC_B], 0.0f, 0);
    enum { G = 4096 };
    float *g = malloc(16 * G * sizeof *g);
    assert_non_null(g);
    kp_logic_init_gaussian(g, G, 2.0, 11);
    double mean = 0, var = 0;
    for (int i = 0; i < 16 * G; i++)
        mean += g[i];
    mean /= 16 * G;
    for (int i = 0; i < 16 * G; i++)
        var += (g[i] - mean) * (g[i] - mean);
    var /= 16 * G;
    assert_float_equal(mean, 0, 0.05);
    assert_float_equal(sqrt(var), 2.0, 0.05);
    free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_and_truth), cmocka_unit_test(test_wiring_random),
        cmocka_unit_test(test_wiring_unique),   cmocka_unit_test(test_csr),
        cmocka_unit_test(test_inits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
