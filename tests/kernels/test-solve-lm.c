/* SPDX-License-Identifier: Apache-2.0 */
/* The batched LM kernel on the device: the NIST StRD problems from both starting points in one
 * launch per model against the certified values, verification against the host reference,
 * the same bits whatever the work-group size, robust losses, and the statuses of a singular and
 * a non-finite problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "solve-nist.h"

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

static kp_lm *solver(const kp_expr_graph *g, kp_precision p)
{
    kp_lm *lm = NULL;
    if (kp_lm_create(rt, g, p, &lm) != KP_OK)
        fail_msg("%s", kp_solve_last_error());
    return lm;
}

/* Every model, both starts as two problems of one launch, in f64: at least 7 digits of every
 * certified parameter, and the host reference's estimates to within its own rounding. */
static void test_nist_on_device(void **state)
{
    (void)state;
    if (!fp64) {
        print_message("the device has no cl_khr_fp64: NIST in f64 skipped\n");
        skip();
    }
    int failures = 0;
    double total = 0;
    print_message("%-10s %5s %6s %6s  %s\n", "problem", "start", "digits", "iters", "status");
    for (int m = 0; m < NIST_MODELS; m++) {
        nist_problem *p = malloc(sizeof *p);
        assert_non_null(p);
        assert_int_equal(nist_load(nist_models[m].name, p), 0);
        kp_expr_graph *g = nist_graph(&nist_models[m]);
        assert_non_null(g);
        const int S = p->n_params, n = p->n_obs, C = p->n_cols;
        double *data = malloc(2 * (size_t)n * C * sizeof *data), x[16], hx[16], cost[2], hcost[2];
        assert_non_null(data);
        memcpy(data, p->rows, (size_t)n * C * sizeof *data);
        memcpy(data + n * C, p->rows, (size_t)n * C * sizeof *data);
        for (int s = 0; s < 2; s++)
            for (int j = 0; j < S; j++)
                x[s * S + j] = hx[s * S + j] = p->start[s][j];
        int32_t rows[3] = {0, n, 2 * n}, iters[2], status[2], hiters[2], hstatus[2];
        kp_lm_batch b = {.struct_size = sizeof b,
                         .n_problems = 2,
                         .rows = rows,
                         .data = data,
                         .x = x,
                         .cost = cost,
                         .iterations = iters,
                         .status = status};
        kp_lm_batch hb = b;
        hb.x = hx, hb.cost = hcost, hb.iterations = hiters, hb.status = hstatus;
        const kp_lm_options o = nist_options();
        kp_lm *lm = solver(g, KP_PRECISION_F64);
        if (kp_lm_solve(lm, &o, &b) != KP_OK)
            fail_msg("%s", kp_solve_last_error());
        assert_int_equal(kp_lm_solve_host(g, &o, &hb), KP_OK);
        for (int s = 0; s < 2; s++) {
            double digits = 15;
            for (int j = 0; j < S; j++) {
                digits = fmin(digits, nist_digits(x[s * S + j], p->certified[j]));
                /* Device and host may round differently (exp, pow, contraction): they agree to
                 * about as many digits as the problem's conditioning allows, here 6. */
                assert_true(nist_digits(x[s * S + j], hx[s * S + j]) >= 6);
            }
            total += digits;
            print_message("%-10s %5d %6.1f %6d  %s\n", nist_models[m].name, s + 1, digits, iters[s],
                          kp_lm_status_name((kp_lm_status)status[s]));
            failures += digits < 7;
        }
        kp_lm_destroy(lm);
        kp_expr_graph_destroy(g);
        free(data);
        free(p);
    }
    print_message("mean digits %.2f over %d solves\n", total / (2 * NIST_MODELS), 2 * NIST_MODELS);
    assert_int_equal(failures, 0);
}

/* The 2D line y = a x + b, with outliers: kernelport verify's path (device against the host
 * reference on random problems) in f32, and f64 where available. */
static const char *const line = "a*x + b - y";

static kp_expr_graph *line_graph(void)
{
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "a b"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "x y"), KP_OK);
    assert_int_equal(kp_expr_parse(g, line), KP_OK);
    return g;
}

static void report(void *user, const kp_verify_result *r)
{
    (void)user;
    if (!r->passed)
        print_message("%s %s %s: max abs %g rel %g at %lld\n", r->kernel, r->size, r->output,
                      r->max_abs_err, r->max_rel_err, (long long)r->worst_index);
}

static void test_verify_against_reference(void **state)
{
    (void)state;
    kp_expr_graph *g = nist_graph(&nist_models[0]); /* Misra1a */
    for (int f32 = 0; f32 < 2; f32++) {
        if (!f32 && !fp64)
            continue;
        kp_lm *lm = solver(g, f32 ? KP_PRECISION_F32 : KP_PRECISION_F64);
        if (kp_kernel_verify(rt, kp_lm_kernel(lm), NULL, 5, report, NULL) != KP_OK)
            fail_msg("%s", kp_last_error(rt));
        kp_lm_destroy(lm);
    }
    kp_expr_graph_destroy(g);
}

/* 40 fits of a line through 30 points each, three of them outliers; solved with WG 16 and 64:
 * the same bits (sums in a fixed order). The robust losses pull the fit back to the line. */
static void test_work_group_size_and_robust_losses(void **state)
{
    (void)state;
    enum { B = 40, M = 30 };
    static double data[B * M * 2], x1[B * 2], x2[B * 2], cost1[B], cost2[B];
    int32_t rows[B + 1], it[B], status[B];
    for (int b = 0; b <= B; b++)
        rows[b] = b * M;
    float noise[B * M];
    test_fill(noise, B * M, 5);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < M; i++) {
            double xv = i / (double)M, y = (1 + 0.01 * b) * xv + 0.5 + 0.01 * noise[b * M + i];
            if (i % 10 == 3)
                y += 5; /* outliers */
            data[(b * M + i) * 2] = xv;
            data[(b * M + i) * 2 + 1] = y;
        }
    kp_expr_graph *g = line_graph();
    kp_lm *lm = solver(g, KP_PRECISION_AUTO);
    kp_lm_options o = kp_lm_options_default();
    double err[3];
    for (int loss = 0; loss < 3; loss++) {
        o.loss = (kp_loss)loss;
        o.loss_scale = 0.1;
        kp_lm_batch b = {.struct_size = sizeof b,
                         .n_problems = B,
                         .rows = rows,
                         .data = data,
                         .cost = cost1,
                         .iterations = it,
                         .status = status};
        for (int i = 0; i < B * 2; i++)
            x1[i] = x2[i] = 0;
        b.x = x1;
        assert_int_equal(kp_kernel_tunable_set(rt, kp_lm_kernel(lm), "WG", 16), KP_OK);
        assert_int_equal(kp_lm_solve(lm, &o, &b), KP_OK);
        b.x = x2;
        b.cost = cost2;
        assert_int_equal(kp_kernel_tunable_set(rt, kp_lm_kernel(lm), "WG", 64), KP_OK);
        assert_int_equal(kp_lm_solve(lm, &o, &b), KP_OK);
        assert_memory_equal(x1, x2, sizeof x1);
        assert_memory_equal(cost1, cost2, sizeof cost1);
        err[loss] = 0;
        for (int p = 0; p < B; p++) {
            assert_true(KP_LM_CONVERGED(status[p]));
            err[loss] = fmax(err[loss], fabs(x1[2 * p] - (1 + 0.01 * p)));
        }
    }
    assert_int_equal(kp_kernel_tuning_reset(rt, kp_lm_kernel(lm)), KP_OK);
    print_message("largest slope error: squared %.3g, Huber %.3g, Cauchy %.3g\n", err[0], err[1],
                  err[2]);
    assert_true(err[1] < err[0] / 4);
    assert_true(err[2] < err[0] / 4);
    kp_lm_destroy(lm);
    kp_expr_graph_destroy(g);
}

/* A parameter with no effect on the residuals makes the undamped-diagonal system singular
 * (min_diagonal 0); a NaN at the start is reported as non-finite; the others still converge. */
static void test_singular_and_nonfinite_statuses(void **state)
{
    (void)state;
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "a b c"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "x y"), KP_OK);
    /* c enters only through a select that never picks it here (x < 100). */
    assert_int_equal(kp_expr_parse(g, "a*sqrt(x) + where(x < 100, b, c) - y"), KP_OK);
    double data[3 * 8 * 2], x[3 * 3] = {1, 1, 1, 1, 1, 1, -1, 1, 1}, cost[3];
    int32_t rows[4] = {0, 8, 16, 24}, it[3], status[3];
    for (int i = 0; i < 24; i++) {
        data[2 * i] = 1 + i % 8;
        data[2 * i + 1] = 2 * sqrt(data[2 * i]) + 0.5;
    }
    data[2 * 16] = -1; /* problem 2: sqrt(-1) */
    kp_lm_options o = kp_lm_options_default();
    o.min_diagonal = 0;
    kp_lm_batch b = {.struct_size = sizeof b,
                     .n_problems = 3,
                     .rows = rows,
                     .data = data,
                     .x = x,
                     .cost = cost,
                     .iterations = it,
                     .status = status};
    kp_lm *lm = solver(g, KP_PRECISION_AUTO);
    assert_int_equal(kp_lm_solve(lm, &o, &b), KP_OK);
    assert_int_equal(status[0], KP_LM_SINGULAR);
    assert_int_equal(status[1], KP_LM_SINGULAR);
    assert_int_equal(status[2], KP_LM_NONFINITE);
    char text[512];
    assert_int_equal(kp_lm_summary(&b, text, sizeof text), KP_OK);
    assert_non_null(strstr(text, "0 of 3 converged; 2 singular (first: problem 0)"));
    assert_non_null(strstr(text, "1 non-finite (first: problem 2)"));
    /* With the default clamp the same problems converge (c stays where it was). */
    o = kp_lm_options_default();
    for (int i = 0; i < 9; i++)
        x[i] = 1;
    data[2 * 16] = 1;
    assert_int_equal(kp_lm_solve(lm, &o, &b), KP_OK);
    for (int p = 0; p < 3; p++) {
        assert_true(KP_LM_CONVERGED(status[p]));
        assert_true(fabs(x[3 * p] - 2) < 1e-3 && fabs(x[3 * p + 1] - 0.5) < 1e-3);
        assert_true(x[3 * p + 2] == 1);
    }
    /* Bad rows are refused before anything runs. */
    rows[2] = 4;
    assert_int_equal(kp_lm_solve(lm, &o, &b), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "rows must not decrease: rows[2] = 4 < rows[1] = 8"));
    assert_int_equal(kp_lm_solve_host(g, &o, &b), KP_ERR_INVALID_ARG);
    assert_non_null(
        strstr(kp_last_error(NULL), "rows must not decrease: rows[2] = 4 < rows[1] = 8"));
    /* More than 32 parameters: kp_lm_create's message is the runtime's last error too. */
    kp_expr_graph *big;
    assert_int_equal(kp_expr_graph_create(&big), KP_OK);
    char names[40 * 5] = "", sum[40 * 6] = "";
    for (int i = 0; i < 33; i++) {
        snprintf(names + strlen(names), 8, "p%d ", i);
        snprintf(sum + strlen(sum), 8, "%sp%d", i ? "+" : "", i);
    }
    assert_int_equal(kp_expr_declare(big, 1, names), KP_OK);
    assert_int_equal(kp_expr_parse(big, sum), KP_OK);
    kp_lm *none = NULL;
    assert_int_equal(kp_lm_create(rt, big, KP_PRECISION_AUTO, &none), KP_ERR_INVALID_ARG);
    assert_null(none);
    assert_non_null(strstr(kp_last_error(rt), "1 to 32 parameters (it has 33)"));
    assert_string_equal(kp_solve_last_error(), kp_last_error(rt));
    kp_expr_graph_destroy(big);
    kp_lm_destroy(lm);
    kp_expr_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nist_on_device),
        cmocka_unit_test(test_verify_against_reference),
        cmocka_unit_test(test_work_group_size_and_robust_losses),
        cmocka_unit_test(test_singular_and_nonfinite_statuses),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
