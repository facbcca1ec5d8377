/* SPDX-License-Identifier: Apache-2.0 */
/* The NIST StRD problems from many starting points near NIST's two: every start of every model
 * perturbed by up to a relative 1e-4 in each parameter, 24 copies per start, solved in one
 * launch per model on the device (f64) and by the host reference. A perturbed start takes
 * another path, with other rounding, to the same minimum: this is how differences of a device's
 * exp or contraction show up on one machine. The batched LM that stopped a refused step or two
 * short of the minimum (#27: Lanczos3 at 6.4 digits on an NVIDIA H200, 8.0 on the host) falls
 * below 7 digits on some of these starts; every solve must reach 7. Prints the fewest and the
 * mean digits per model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "solve-nist.h"

enum { COPIES = 24 };

static kp_runtime *rt;
static int fp64;

static int setup(void **state)
{
    (void)state;
    if (test_runtime(NULL, &rt))
        return -1;
    fp64 = test_device_fp64(rt);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kp_runtime_destroy(rt);
    return 0;
}

/* The fewest digits of any parameter of solve b against the certified values. */
static double digits_of(const nist_problem *p, const double *x, int b)
{
    return nist_min_digits(p, x + (size_t)b * p->n_params);
}

static void test_nist_perturbed_starts(void **state)
{
    (void)state;
    if (!fp64) {
        print_message("the device has no cl_khr_fp64: the f64 stress skipped\n");
        skip();
    }
    enum { B = 2 * COPIES };
    int failures = 0;
    double sum[2] = {0, 0};
    print_message("%-10s %9s %9s %9s %9s\n", "problem", "dev min", "dev mean", "host min",
                  "host mean");
    for (int m = 0; m < NIST_MODELS; m++) {
        nist_problem *p = malloc(sizeof *p);
        assert_non_null(p);
        assert_int_equal(nist_load(nist_models[m].name, p), 0);
        kp_expr_graph *g = nist_graph(&nist_models[m]);
        assert_non_null(g);
        const int S = p->n_params, n = p->n_obs, C = p->n_cols;
        double *data = malloc((size_t)B * n * C * sizeof *data);
        double x[B * 8], hx[B * 8], cost[B];
        int32_t rows[B + 1], iters[B], status[B];
        assert_non_null(data);
        float noise[B * 8];
        test_fill(noise, B * 8, 100 + m);
        for (int b = 0; b < B; b++) {
            memcpy(data + (size_t)b * n * C, p->rows, (size_t)n * C * sizeof *data);
            rows[b] = b * n;
            for (int j = 0; j < S; j++)
                x[b * S + j] = hx[b * S + j] = p->start[b % 2][j] * (1 + 1e-4 * noise[b * 8 + j]);
        }
        rows[B] = B * n;
        kp_lm_batch bt = {.struct_size = sizeof bt,
                          .n_problems = B,
                          .rows = rows,
                          .data = data,
                          .x = x,
                          .cost = cost,
                          .iterations = iters,
                          .status = status};
        const kp_lm_options o = nist_options();
        kp_lm *lm = NULL;
        if (kp_lm_create(rt, g, KP_PRECISION_F64, &lm) != KP_OK ||
            kp_lm_solve(lm, &o, &bt) != KP_OK)
            fail_msg("%s", kp_solve_last_error());
        kp_lm_batch hb = bt;
        hb.x = hx;
        assert_int_equal(kp_lm_solve_host(g, &o, &hb), KP_OK);
        double lo[2] = {15, 15}, mean[2] = {0, 0};
        for (int b = 0; b < B; b++) {
            const double d[2] = {digits_of(p, x, b), digits_of(p, hx, b)};
            for (int k = 0; k < 2; k++) {
                lo[k] = fmin(lo[k], d[k]);
                mean[k] += d[k] / B;
                failures += d[k] < 7;
            }
        }
        print_message("%-10s %9.1f %9.2f %9.1f %9.2f\n", nist_models[m].name, lo[0], mean[0], lo[1],
                      mean[1]);
        sum[0] += mean[0] / NIST_MODELS;
        sum[1] += mean[1] / NIST_MODELS;
        kp_lm_destroy(lm);
        kp_expr_graph_destroy(g);
        free(data);
        free(p);
    }
    print_message("mean digits: device %.2f, host %.2f over %d solves each; %d below 7\n", sum[0],
                  sum[1], B * NIST_MODELS, failures);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nist_perturbed_starts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
