/* SPDX-License-Identifier: Apache-2.0 */
/* Levenberg-Marquardt on one large sparse problem, the host reference: an icosphere's edges
 * brought to a target length (parameters shared between edges through the index), a NIST
 * problem through the same path against its certified values, progress reports, and bad input;
 * the dense Cholesky path of small problems against CG, a system that does not factor, and its
 * option. */
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

/* Mode 2 on problem `m` from start s through CG (dense 0) or the dense path; the digits. */
static double nist_mode2(const nist_model *model, const nist_problem *p, int s, int dense,
                         double *x, kp_lm_sparse_report *rep)
{
    kp_expr_graph *g = nist_graph(model);
    int32_t *index = nist_sparse_index(p);
    assert_non_null(index);
    const kp_lm_sparse_problem pb = nist_sparse_problem(p, index, s, x);
    const kp_lm_options lo = nist_options();
    const kp_lm_sparse_options o = nist_sparse_options(&lo, dense);
    *rep = (kp_lm_sparse_report){.struct_size = sizeof *rep};
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, rep), KP_OK);
    assert_int_equal(rep->dense, dense);
    assert_true(dense ? rep->cg_iterations == 0 : rep->cg_iterations > 0);
    free(index);
    kp_expr_graph_destroy(g);
    return nist_min_digits(p, x);
}

/* Small dense problems through the sparse path (every instance's slots index the same
 * parameters): the 14 NIST problems from both starts, by CG and by the dense path (the default
 * for so few parameters), each to NIST_MODE2_DIGITS; on Misra1a and DanWood the two agree. */
static void test_nist_cg_and_dense(void **state)
{
    (void)state;
    nist_problem *p = malloc(sizeof *p);
    assert_non_null(p);
    for (int m = 0; m < NIST_MODELS; m++) {
        const nist_model *model = &nist_models[m];
        assert_int_equal(nist_load(model->name, p), 0);
        for (int s = 0; s < 2; s++) {
            double xc[8], xd[8];
            kp_lm_sparse_report rc, rd;
            const double dc = nist_mode2(model, p, s, 0, xc, &rc);
            const double dd = nist_mode2(model, p, s, 1, xd, &rd);
            print_message("%-8s start %d: CG %4.1f digits (%3d evaluations, %6lld CG iterations, "
                          "%-14s) dense %4.1f digits (%3d evaluations, %s)\n",
                          model->name, s + 1, dc, rc.iterations, (long long)rc.cg_iterations,
                          kp_lm_status_name(rc.status), dd, rd.iterations,
                          kp_lm_status_name(rd.status));
            if (dc < NIST_MODE2_DIGITS || dd < NIST_MODE2_DIGITS)
                fail_msg("%s start %d: CG %.1f, dense %.1f digits (at least %.1f)", model->name,
                         s + 1, dc, dd, NIST_MODE2_DIGITS);
            if (m == 0 || m == 6)
                for (int j = 0; j < p->n_params; j++)
                    assert_true(fabs(xc[j] - xd[j]) <= 1e-7 * fabs(xd[j]));
        }
    }
    free(p);
}

typedef struct solver_log {
    int calls, dense, refused_unevaluated, last_iteration;
} solver_log;

static void on_solver(void *user, const kp_lm_sparse_progress *p)
{
    solver_log *log = user;
    log->calls++;
    log->dense += p->dense;
    /* A failed factorization raises the damping without evaluating a trial point. */
    log->refused_unevaluated += !p->accepted && p->iteration == log->last_iteration;
    log->last_iteration = p->iteration;
}

/* An icosphere at level 1 (126 parameters, the dense path by default) by dense Cholesky and by
 * CG, squared and Huber loss: both reach the zero-cost minimum (every edge at its length; the
 * mesh may rotate, so the points themselves differ), every step of the one dense, none of the
 * other, and the dense path in fewer evaluations or as many plus one. */
static void test_dense_mesh(void **state)
{
    (void)state;
    mesh m = icosphere(1);
    const size_t P = (size_t)m.nv * 3;
    assert_int_equal(P, 126);
    double *L = malloc((size_t)m.ne * sizeof *L), *x = malloc(P * sizeof *x);
    int32_t *index = malloc((size_t)m.ne * 6 * sizeof *index);
    assert_true(L && x && index);
    kp_expr_graph *g = edge_graph();
    for (int loss = 0; loss < 2; loss++) {
        int evaluations[2];
        for (int dense = 1; dense >= 0; dense--) {
            edge_problem(&m, index, L, x, 5);
            kp_lm_sparse_problem pb = edge_sparse_problem(&m, index, L, P, x);
            kp_lm_options lo = edge_lm_options(0, loss);
            kp_lm_sparse_options o = kp_lm_sparse_options_default();
            assert_int_equal(o.dense_max_parameters, 256);
            o.lm = &lo;
            o.block_size = 3;
            if (!dense)
                o.dense_max_parameters = 0;
            solver_log log = {0};
            o.progress = on_solver;
            o.user = &log;
            kp_lm_sparse_report rep = {.struct_size = sizeof rep};
            if (kp_lm_sparse_solve_host(g, &o, &pb, &rep) != KP_OK)
                fail_msg("%s", kp_last_error(NULL));
            print_message("level 1, %s, %s: %s after %d evaluations, %lld CG iterations, cost "
                          "%.3g -> %.3g\n",
                          loss ? "Huber" : "squared", dense ? "dense" : "CG",
                          kp_lm_status_name(rep.status), rep.iterations,
                          (long long)rep.cg_iterations, rep.initial_cost, rep.cost);
            assert_true(KP_LM_CONVERGED(rep.status));
            assert_int_equal(rep.dense, dense);
            assert_int_equal(log.dense, dense ? log.calls : 0);
            assert_true(dense ? rep.cg_iterations == 0 : rep.cg_iterations > 0);
            assert_true(rep.cost < 1e-12 * rep.initial_cost);
            for (int k = 0; k < m.ne; k++) {
                const int a = m.e[2 * k], b = m.e[2 * k + 1];
                double d = 0;
                for (int c = 0; c < 3; c++)
                    d += (x[3 * b + c] - x[3 * a + c]) * (x[3 * b + c] - x[3 * a + c]);
                assert_true(fabs(sqrt(d) - L[k]) < 1e-6);
            }
            evaluations[dense] = rep.iterations;
        }
        assert_true(evaluations[1] <= evaluations[0] + 1);
    }
    kp_expr_graph_destroy(g);
    free(L), free(x), free(index), free(m.v), free(m.e);
}

/* Systems the dense path cannot factor. b1 + b2 - y: J^T J is singular (J's two columns are
 * equal), and with the damping at 1e-20 J^T J + mu D rounds to it, so the first steps fail to
 * factor; the damping rises until it factors, and LM converges to b1 + b2 = y. Then b1 1e160 - y (y
 * 1e-10): J^T J overflows to infinity, no damping helps, and the status is `singular`, as CG's is.
 */
static void test_dense_not_factorable(void **state)
{
    (void)state;
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "b1 b2"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "y"), KP_OK);
    assert_int_equal(kp_expr_parse(g, "b1 + b2 - y"), KP_OK);
    double y[4] = {3, 3, 3, 3}, x[2] = {0, 0};
    int32_t index[8] = {0, 1, 0, 1, 0, 1, 0, 1};
    kp_lm_sparse_problem pb = {
        .struct_size = sizeof pb, .n_instances = 4, .data = y, .index = index, .n_x = 2, .x = x};
    kp_lm_options lo = kp_lm_options_default();
    lo.initial_damping = 1e-20;
    kp_lm_sparse_options o = kp_lm_sparse_options_default();
    o.lm = &lo;
    solver_log log = {.last_iteration = 1};
    o.progress = on_solver;
    o.user = &log;
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_OK);
    print_message("b1 + b2 = y: %s after %d evaluations, %d factorizations failed\n",
                  kp_lm_status_name(rep.status), rep.iterations, log.refused_unevaluated);
    assert_true(rep.dense);
    assert_true(KP_LM_CONVERGED(rep.status));
    assert_true(log.refused_unevaluated >= 1);
    assert_true(fabs(x[0] + x[1] - 3) < 1e-9);
    kp_expr_graph_destroy(g);

    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "b1"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "y"), KP_OK);
    assert_int_equal(kp_expr_parse(g, "1e160 * b1 - y"), KP_OK);
    int32_t zero[4] = {0};
    for (int i = 0; i < 4; i++)
        y[i] = 1e-10; /* J^T r stays finite, J^T J does not */
    pb.index = zero;
    pb.n_x = 1;
    for (int dense = 0; dense < 2; dense++) {
        x[0] = 0;
        o = kp_lm_sparse_options_default();
        o.dense_max_parameters = dense ? 1 : 0;
        assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_OK);
        assert_int_equal(rep.dense, dense);
        assert_int_equal(rep.status, KP_LM_SINGULAR);
        assert_int_equal(rep.iterations, 1);
        assert_true(x[0] == 0);
    }
    kp_expr_graph_destroy(g);
}

/* dense_max_parameters: at most 4096 (the P x P matrices); an empty problem; struct sizes. */
static void test_dense_option(void **state)
{
    (void)state;
    kp_expr_graph *g = edge_graph();
    double L[1] = {1}, x[6] = {0, 0, 0, 1, 0, 0};
    int32_t index[6] = {0, 1, 2, 3, 4, 5};
    kp_lm_sparse_problem pb = {
        .struct_size = sizeof pb, .n_instances = 1, .data = L, .index = index, .n_x = 6, .x = x};
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    kp_lm_sparse_options o = kp_lm_sparse_options_default();
    o.dense_max_parameters = 4097;
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL), "kp_lm_sparse_solve_host: dense_max_parameters 4097 "
                                             "(at most 4096: the dense path holds P x P matrices)");
    o.dense_max_parameters = 4096;
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_OK);
    assert_true(rep.dense && KP_LM_CONVERGED(rep.status));
    /* No parameters and no instances: nothing to factor, converged at once. */
    kp_lm_sparse_problem empty = {.struct_size = sizeof empty, .x = x};
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &empty, &rep), KP_OK);
    assert_true(rep.dense && rep.status == KP_LM_GRADIENT);
    o.struct_size = sizeof o - 8;
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_ERR_INVALID_ARG);
    rep.struct_size = sizeof rep - 8;
    o.struct_size = sizeof o;
    assert_int_equal(kp_lm_sparse_solve_host(g, &o, &pb, &rep), KP_ERR_INVALID_ARG);
    kp_expr_graph_destroy(g);
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
        cmocka_unit_test(test_icosphere_edges), cmocka_unit_test(test_nist_cg_and_dense),
        cmocka_unit_test(test_dense_mesh),      cmocka_unit_test(test_dense_not_factorable),
        cmocka_unit_test(test_dense_option),    cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
