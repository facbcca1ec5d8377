/* SPDX-License-Identifier: Apache-2.0 */
/* Levenberg-Marquardt on one large sparse problem, the host reference: an icosphere's edges
 * brought to a target length (parameters shared between edges through the index), a NIST
 * problem through the same path against its certified values, progress reports, and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "solve-mesh.h"
#include "solve-nist.h"

typedef struct progress_log {
    int calls, accepted;
    double last_cost;
} progress_log;

static void on_progress(void *user, const kp_lm_sparse_progress *p)
{
    progress_log *log = user;
    log->calls++;
    log->accepted += p->accepted;
    log->last_cost = p->cost;
}

/* 162 vertices (486 parameters, each shared by its edges), 480 edges; the starting vertices
 * jittered, the target length 1.2 times each edge's: converged, every edge at its length. */
static void test_icosphere_edges(void **state)
{
    (void)state;
    mesh m = icosphere(2);
    assert_int_equal(m.nv, 162);
    assert_int_equal(m.ne, 480);
    double *L = malloc((size_t)m.ne * sizeof *L), *x = malloc((size_t)m.nv * 3 * sizeof *x);
    int32_t *index = malloc((size_t)m.ne * 6 * sizeof *index);
    edge_problem(&m, index, L, x, 3);
    kp_expr_graph *g = edge_graph();
    kp_lm_sparse_problem pb = {.struct_size = sizeof pb,
                               .n_instances = (size_t)m.ne,
                               .data = L,
                               .index = index,
                               .n_x = (size_t)m.nv * 3,
                               .x = x};
    kp_lm_sparse_options o = kp_lm_sparse_options_default();
    progress_log log = {0};
    o.progress = on_progress;
    o.user = &log;
    kp_lm_options lo = kp_lm_options_default();
    lo.function_tolerance = 1e-12;
    o.lm = &lo;
    o.block_size = 3;
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    if (kp_lm_sparse_solve_host(g, &o, &pb, &rep) != KP_OK)
        fail_msg("%s", kp_solve_last_error());
    print_message("icosphere: %s after %d evaluations, %lld CG iterations, cost %.3g -> %.3g\n",
                  kp_lm_status_name(rep.status), rep.iterations, (long long)rep.cg_iterations,
                  rep.initial_cost, rep.cost);
    assert_true(KP_LM_CONVERGED(rep.status));
    assert_true(rep.cost < 1e-12 * rep.initial_cost);
    assert_true(log.calls >= rep.iterations - 1 && log.accepted >= 1);
    assert_true(log.last_cost == rep.cost);
    for (int k = 0; k < m.ne; k++) {
        const int a = m.e[2 * k], b = m.e[2 * k + 1];
        double d = 0;
        for (int c = 0; c < 3; c++)
            d += (x[3 * b + c] - x[3 * a + c]) * (x[3 * b + c] - x[3 * a + c]);
        assert_true(fabs(sqrt(d) - L[k]) < 1e-6);
    }
    /* The LM options are a structure of their own, checked by their own struct_size. */
    lo.struct_size = 4;
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_solve_last_error(),
                        "kp_lm_sparse_solve_host: options.lm: struct_size 4 is too small (set it "
                        "to sizeof(kp_lm_options), or start from kp_lm_options_default)");
    kp_expr_graph_destroy(g);
    free(L), free(x), free(index), free(m.v), free(m.e);
}

/* A small dense problem through the sparse path (every instance's slots index the same
 * parameters): Misra1a from both starts to NIST's certified values. */
static void test_nist_through_cg(void **state)
{
    (void)state;
    nist_problem *p = malloc(sizeof *p);
    assert_non_null(p);
    for (int m = 0; m < 2; m++) {
        const nist_model *model = &nist_models[m == 0 ? 0 : 6]; /* Misra1a, DanWood */
        assert_int_equal(nist_load(model->name, p), 0);
        kp_expr_graph *g = nist_graph(model);
        int32_t *index = malloc((size_t)p->n_obs * p->n_params * sizeof *index);
        for (int i = 0; i < p->n_obs * p->n_params; i++)
            index[i] = i % p->n_params;
        for (int s = 0; s < 2; s++) {
            double x[8];
            memcpy(x, p->start[s], sizeof x);
            kp_lm_sparse_problem pb = {.struct_size = sizeof pb,
                                       .n_instances = (size_t)p->n_obs,
                                       .data = p->rows,
                                       .index = index,
                                       .n_x = (size_t)p->n_params,
                                       .x = x};
            kp_lm_sparse_options o = kp_lm_sparse_options_default();
            const kp_lm_options lo = nist_options();
            o.lm = &lo;
            o.cg_tolerance = 1e-14;
            kp_lm_sparse_report rep = {.struct_size = sizeof rep};
            assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_OK);
            double digits = 15;
            for (int j = 0; j < p->n_params; j++)
                digits = fmin(digits, nist_digits(x[j], p->certified[j]));
            print_message("%s start %d: %.1f digits, %d evaluations, %lld CG iterations, %s\n",
                          model->name, s + 1, digits, rep.iterations, (long long)rep.cg_iterations,
                          kp_lm_status_name(rep.status));
            assert_true(digits >= 7);
        }
        free(index);
        kp_expr_graph_destroy(g);
    }
    free(p);
}

static void test_bad_input(void **state)
{
    (void)state;
    kp_expr_graph *g = edge_graph();
    double L[2] = {1, 1}, x[6] = {0};
    int32_t index[12] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 6};
    kp_lm_sparse_problem pb = {
        .struct_size = sizeof pb, .n_instances = 2, .data = L, .index = index, .n_x = 6, .x = x};
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    assert_int_equal(kp_lm_sparse_solve_host(g, NULL, &pb, &rep), KP_ERR_INVALID_ARG);
    /* A call without a runtime reports in kp_last_error(NULL). */
    assert_string_equal(kp_last_error(NULL),
                        "kp_lm_sparse_solve_host: instance 1: parameter slot 5 (bz) has index 6, "
                        "outside [0, 6)");
    assert_string_equal(kp_solve_last_error(), kp_last_error(NULL));
    index[11] = 5;
    pb.data = NULL;
    assert_int_equal(kp_lm_sparse_solve_host(g, NULL, &pb, &rep), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "must not be NULL"));
    /* Both edges of zero length at the start: norm3's derivative is NaN there. */
    pb.data = L;
    assert_int_equal(kp_lm_sparse_solve_host(g, NULL, &pb, &rep), KP_OK);
    assert_int_equal(rep.status, KP_LM_NONFINITE);
    kp_expr_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_icosphere_edges),
        cmocka_unit_test(test_nist_through_cg),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
