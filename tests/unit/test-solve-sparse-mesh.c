/* SPDX-License-Identifier: Apache-2.0 */
/* The large-problem LM's defaults on an ill-conditioned mesh, the host reference: examples/
 * mesh-solve's icosphere at level 5 (30,720 edges, 30,726 parameters) with Jacobi, the library's
 * default preconditioner. The normal equations' condition number grows about 4 times a level (a
 * Laplacian's), so a CG cap fixed at 200 iterations a step (the default before #27's fix, with a
 * tolerance of 1e-6) left every step cut short, its CG residual above |J^T r|, the damping
 * collapsing and LM crawling: not converged after 15 evaluations. With the cap growing as
 * sqrt(P) and steps solved to 1e-3 it converges on the gradient in 8. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernelport/kernelport.h"
#include "kernelport/solve.h"
#include "mesh-problem.h"

typedef struct steps {
    int calls, capped;
    double worst_uncapped; /* the largest CG residual of a step CG ended by its tolerance */
} steps;

static void on_progress(void *user, const kp_lm_sparse_progress *p)
{
    steps *s = user;
    s->calls++;
    assert_true(p->gradient_max > 0);
    /* P = 30,726: the cap is 4 sqrt(P), 702 iterations. */
    if (p->cg_iterations >= 702)
        s->capped++;
    else
        s->worst_uncapped = fmax(s->worst_uncapped, p->cg_residual);
}

static void test_level5_jacobi_defaults(void **state)
{
    (void)state;
    mesh_problem mp;
    assert_int_equal(mesh_problem_make(5, 0.1, 0.66, &mp), 0);
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "ax ay az bx by bz"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "L w"), KP_OK);
    assert_int_equal(kp_expr_parse(g, MESH_RESIDUAL), KP_OK);
    kp_lm_sparse_options o = kp_lm_sparse_options_default();
    assert_int_equal(o.block_size, 1);
    assert_int_equal(o.max_cg_iterations, 0);
    kp_lm_options lm = kp_lm_options_default();
    lm.max_iterations = 15;
    lm.function_tolerance = 1e-10;
    o.lm = &lm;
    steps s = {0};
    o.progress = on_progress;
    o.user = &s;
    kp_lm_sparse_problem pb = {.struct_size = sizeof pb,
                               .n_instances = mp.n,
                               .data = mp.data,
                               .index = mp.index,
                               .n_x = mp.P,
                               .x = mp.x0};
    kp_lm_sparse_report rep = {.struct_size = sizeof rep};
    if (kp_lm_sparse_solve_host(g, &o, &pb, &rep) != KP_OK)
        fail_msg("%s", kp_last_error(NULL));
    print_message("level 5, Jacobi: %s after %d evaluations, %lld CG iterations (%d steps at the "
                  "cap), cost %.3g -> %.3g\n",
                  kp_lm_status_name(rep.status), rep.iterations, (long long)rep.cg_iterations,
                  s.capped, rep.initial_cost, rep.cost);
    assert_int_equal(rep.status, KP_LM_GRADIENT);
    assert_true(s.calls >= rep.iterations - 1);
    assert_true(s.worst_uncapped <= o.cg_tolerance);
    /* The gradient at the result, from the interpreter, against the stop's 1e-10. */
    double *grad = calloc(mp.P, sizeof *grad), gmax = 0;
    assert_non_null(grad);
    for (size_t k = 0; k < mp.n; k++) {
        double p[6], r[2], J[12];
        for (int c = 0; c < 6; c++)
            p[c] = mp.x0[mp.index[6 * k + c]];
        assert_int_equal(kp_expr_graph_eval(g, mp.data + 2 * k, p, r, J), KP_OK);
        for (int c = 0; c < 6; c++)
            grad[mp.index[6 * k + c]] += J[c] * r[0] + J[6 + c] * r[1];
    }
    for (size_t q = 0; q < mp.P; q++)
        gmax = fmax(gmax, fabs(grad[q]));
    assert_true(gmax <= 1e-9);
    free(grad);
    kp_expr_graph_destroy(g);
    mesh_problem_free(&mp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level5_jacobi_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
