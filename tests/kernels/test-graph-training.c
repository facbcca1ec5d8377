/* SPDX-License-Identifier: Apache-2.0 */
/* A training step recorded into a graph and replayed gives what the same launches give run
 * directly, bit for bit: the XOR model of examples/xor (tensor.mul_sum, broadcast adds, tanh and
 * its backward, bce_with_logits, sums, AdamW with its step count as the graph's parameter),
 * trained 60 steps each way from the same seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"
#include "xor-model.h"

static void test_replayed_step_equals_direct(void **state)
{
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    xor_model *replayed = NULL, *direct = NULL;
    assert_int_equal(xor_model_create(rt, 8, 7, 0.05, 0, &replayed), KP_OK);
    assert_int_equal(xor_model_create(rt, 8, 7, 0.05, 0, &direct), KP_OK);
    kp_graph *g = NULL;
    assert_int_equal(xor_model_record(replayed, &g), KP_OK);
    kp_graph_info info = {.struct_size = sizeof info};
    assert_int_equal(kp_graph_get_info(g, &info), KP_OK);
    assert_int_equal(info.n_launches, xor_model_launches_per_step(replayed));
    assert_int_equal(info.n_direct, 0);
    assert_int_equal(info.n_params, 1);
    for (int64_t step = 1; step <= 60; step++) {
        assert_int_equal(kp_graph_set_int(g, "step", step), KP_OK);
        assert_int_equal(kp_graph_replay(g, NULL), KP_OK);
        assert_int_equal(xor_model_step(direct, step), KP_OK);
    }
    float a[64], b[64];
    int na = 0, nb = 0;
    assert_int_equal(xor_model_params(replayed, a, &na), KP_OK);
    assert_int_equal(xor_model_params(direct, b, &nb), KP_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof *a);
    /* The step count mattered: a replay left at step 1 (AdamW's bias corrections of step 1 at
     * every step) ends elsewhere, so the parameter reached the kernel. */
    xor_model *frozen = NULL;
    kp_graph *gf = NULL;
    assert_int_equal(xor_model_create(rt, 8, 7, 0.05, 0, &frozen), KP_OK);
    assert_int_equal(xor_model_record(frozen, &gf), KP_OK);
    for (int i = 0; i < 60; i++)
        assert_int_equal(kp_graph_replay(gf, NULL), KP_OK);
    float c[64];
    int nc = 0;
    assert_int_equal(xor_model_params(frozen, c, &nc), KP_OK);
    assert_int_equal(nc, na);
    assert_true(memcmp(a, c, (size_t)na * sizeof *a) != 0);
    kp_graph_destroy(gf);
    xor_model_destroy(frozen);
    kp_graph_destroy(g);
    xor_model_destroy(replayed);
    xor_model_destroy(direct);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_replayed_step_equals_direct)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
