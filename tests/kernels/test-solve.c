/* SPDX-License-Identifier: Apache-2.0 */
/* The solve layer's generated kernels on the device: a residual using every operation in f64 and
 * f32 against the host interpreter (kp_kernel_verify) and central differences, one dispatch of n
 * instances sharing parameters, the name shared by equal graphs, and bad input (an index out of
 * range, a NaN, f64 where the device lacks it) reported with the instance. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/solve.h"
#include "test-util.h"

static kp_runtime *rt;

/* Every operation, two outputs, three parameter slots, two data slots. */
static const char *const all_ops =
    "u = a*x + b/(1 + y*y) - c\n"
    "v = abs(u) + min(a, b) * max(b, c) + where(x < 1, a, b) + select(y >= 1, c*c, -c)\n"
    "w = exp(-a*x) + log(1 + b*b) + sqrt(1 + c*c) + rsqrt(1 + a*a) + pow(1 + b*b, 1.5) + a^3 "
    "+ powi(b, -2)\n"
    "z = sin(a) * cos(b) + tan(0.3*c) + atan(a - b) + atan2(b, c + 2) + tanh(x*a) + sigmoid(b)\n"
    "q = norm3(a, b, c) + dot2(a, b, x, y) + norm2(u, 1) + (a == b) + (a != b) * (c <= 2)\n"
    "u * v + w; z - q / (2 + v*v)\n";

/* LANES tried: an instance a work-item, and vectors of 8 and 16 (CPUs' f64 and f32 defaults). */
static const int lanes_tried[] = {1, 8, 16};

static kp_expr_graph *graph_of(const char *text)
{
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "a b c"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "x y"), KP_OK);
    if (kp_expr_parse(g, text) != KP_OK)
        fail_msg("%s", kp_expr_graph_error(g));
    return g;
}

static int setup(void **state)
{
    (void)state;
    return test_runtime(NULL, &rt);
}

static int teardown(void **state)
{
    (void)state;
    kp_runtime_destroy(rt);
    return 0;
}

static void report(void *user, const kp_verify_result *r)
{
    (void)user;
    if (!r->passed)
        print_message("%s %s %s: max abs %g rel %g at %lld (atol %g rtol %g)\n", r->kernel, r->size,
                      r->output, r->max_abs_err, r->max_rel_err, (long long)r->worst_index, r->atol,
                      r->rtol);
}

/* The generated r and Jacobian against the host interpreter, through `kernelport verify`'s code
 * path, in both precisions the device offers, with each of lanes_tried. */
static void test_verify_every_op(void **state)
{
    (void)state;
    kp_expr_graph *g = graph_of(all_ops);
    for (int f32 = 0; f32 < 2; f32++) {
        if (!f32 && !test_device_fp64(rt))
            continue;
        kp_residual *res;
        kp_status st = kp_residual_create(rt, g, f32 ? KP_PRECISION_F32 : KP_PRECISION_F64, &res);
        if (st != KP_OK)
            fail_msg("%s", kp_solve_last_error());
        assert_int_equal(kp_residual_precision(res), f32 ? KP_PRECISION_F32 : KP_PRECISION_F64);
        for (size_t t = 0; t < sizeof lanes_tried / sizeof *lanes_tried; t++) {
            const int lanes = lanes_tried[t];
            assert_int_equal(kp_kernel_tunable_set(rt, kp_residual_kernel(res), "LANES", lanes),
                             KP_OK);
            st = kp_kernel_verify(rt, kp_residual_kernel(res), NULL, 7, report, NULL);
            if (st != KP_OK)
                fail_msg("LANES %d: %s\n%s", lanes, kp_last_error(rt), kp_residual_source(res));
        }
        assert_int_equal(kp_kernel_tuning_reset(rt, kp_residual_kernel(res)), KP_OK);
        kp_residual_destroy(res);
    }
    kp_expr_graph_destroy(g);
}

/* n instances sharing P parameters in one dispatch, in f64 where the device has it: r against
 * the interpreter, the Jacobian against central differences of the interpreter. */
static void test_evaluate_against_finite_differences(void **state)
{
    (void)state;
    enum { N = 257, P = 10, S = 3, D = 2, O = 2 };
    kp_expr_graph *g = graph_of(all_ops);
    kp_residual *res;
    assert_int_equal(kp_residual_create(rt, g, KP_PRECISION_AUTO, &res), KP_OK);
    const int f32 = kp_residual_precision(res) == KP_PRECISION_F32;
    const size_t e = f32 ? 4 : 8;
    static double data[N * D], params[P], r[N * O], jac[N * O * S];
    static int32_t index[N * S];
    float tmp[N * D];
    test_fill(tmp, N * D, 11);
    for (int i = 0; i < N * D; i++)
        data[i] = 1.0 + 0.4 * tmp[i];
    test_fill(tmp, P, 12);
    for (int i = 0; i < P; i++)
        params[i] = 1.0 + 0.4 * tmp[i];
    for (int i = 0; i < N * S; i++)
        index[i] = (i * 7 + i / S) % P;
    kp_buffer *bd, *bi, *bp, *br, *bj;
    assert_int_equal(kp_buffer_create(rt, sizeof data / 8 * e, &bd), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof index, &bi), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof params / 8 * e, &bp), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof r / 8 * e, &br), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof jac / 8 * e, &bj), KP_OK);
    static float fd[N * D], fp[P], fr[N * O], fj[N * O * S];
    for (int i = 0; i < N * D; i++)
        fd[i] = (float)data[i];
    for (int i = 0; i < P; i++)
        fp[i] = (float)params[i];
    assert_int_equal(kp_buffer_write(rt, bd, 0, N * D * e, f32 ? (void *)fd : (void *)data), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bp, 0, P * e, f32 ? (void *)fp : (void *)params), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bi, 0, sizeof index, index), KP_OK);
    const kp_dtype dt = f32 ? KP_F32 : KP_F64;
    kp_status st = kp_residual_evaluate(res, N, kp_tensor_2d(bd, dt, N, D),
                                        kp_tensor_2d(bi, KP_I32, N, S), kp_tensor_1d(bp, dt, P),
                                        kp_tensor_2d(br, dt, N, O), kp_tensor_3d(bj, dt, N, O, S));
    if (st != KP_OK)
        fail_msg("%s", kp_solve_last_error());
    assert_int_equal(kp_buffer_read(rt, br, 0, N * O * e, f32 ? (void *)fr : (void *)r), KP_OK);
    assert_int_equal(kp_buffer_read(rt, bj, 0, N * O * S * e, f32 ? (void *)fj : (void *)jac),
                     KP_OK);
    for (int i = 0; f32 && i < N * O; i++)
        r[i] = fr[i];
    for (int i = 0; f32 && i < N * O * S; i++)
        jac[i] = fj[i];
    const double tol = f32 ? 2e-3 : 1e-6;
    for (int i = 0; i < N; i++) {
        double p[S], want[O], up[O], down[O];
        for (int s = 0; s < S; s++)
            p[s] = params[index[i * S + s]];
        assert_int_equal(kp_expr_graph_eval(g, data + i * D, p, want, NULL), KP_OK);
        for (int o = 0; o < O; o++)
            assert_true(fabs(r[i * O + o] - want[o]) <= tol * (1 + fabs(want[o])));
        for (int s = 0; s < S; s++) {
            const double h = 1e-6 * (1 + fabs(p[s])), keep = p[s];
            p[s] = keep + h;
            kp_expr_graph_eval(g, data + i * D, p, up, NULL);
            p[s] = keep - h;
            kp_expr_graph_eval(g, data + i * D, p, down, NULL);
            p[s] = keep;
            for (int o = 0; o < O; o++) {
                const double want_d = (up[o] - down[o]) / (2 * h), got = jac[(i * O + o) * S + s];
                if (fabs(got - want_d) > tol * (1 + fabs(want_d)))
                    fail_msg("instance %d output %d slot %d: jac %.10g, differences %.10g", i, o, s,
                             got, want_d);
            }
        }
    }
    kp_buffer *bufs[] = {bd, bi, bp, br, bj};
    for (int i = 0; i < 5; i++)
        kp_buffer_destroy(rt, bufs[i]);
    kp_residual_destroy(res);
    kp_expr_graph_destroy(g);
}

/* Equal graphs built differently share one kernel (its name is the normalized graph's key). */
static void test_equal_graphs_share_a_kernel(void **state)
{
    (void)state;
    kp_expr_graph *g1 = graph_of("b1 = a*x\nexp(-b1) * c + y"), *g2 = graph_of("y + c*exp(-(x*a))");
    kp_expr_graph_info i1 = {.struct_size = sizeof i1}, i2 = {.struct_size = sizeof i2};
    assert_int_equal(kp_expr_graph_get_info(g1, &i1), KP_OK);
    assert_int_equal(kp_expr_graph_get_info(g2, &i2), KP_OK);
    assert_true(i1.key == i2.key);
    kp_residual *r1, *r2;
    assert_int_equal(kp_residual_create(rt, g1, KP_PRECISION_F32, &r1), KP_OK);
    assert_int_equal(kp_residual_create(rt, g2, KP_PRECISION_F32, &r2), KP_OK);
    assert_ptr_equal(kp_residual_kernel(r1), kp_residual_kernel(r2));
    kp_expr_graph_destroy(g1);
    kp_expr_graph_destroy(g2);
    /* The kernel outlives the graphs and the handles: its reference still runs. */
    kp_residual_destroy(r1);
    assert_int_equal(kp_kernel_verify(rt, kp_residual_kernel(r2), "one", 3, NULL, NULL), KP_OK);
    kp_residual_destroy(r2);
}

/* An index outside [0, P) and a NaN are reported with the first instance that has them, and the
 * runtime stays usable; with each of lanes_tried (bad instances in the middle of a vector, the
 * last vector partly past n). */
static void test_bad_index_and_nan_name_the_instance(void **state)
{
    (void)state;
    enum { N = 100, P = 4 };
    kp_expr_graph *g = graph_of("log(a - x) * b + c");
    kp_residual *res;
    assert_int_equal(kp_residual_create(rt, g, KP_PRECISION_F32, &res), KP_OK);
    float data[N * 2], params[P] = {2, 1, 1, 1};
    int32_t index[N * 3];
    kp_buffer *bd, *bi, *bp, *br, *bj;
    assert_int_equal(kp_buffer_create(rt, sizeof data, &bd), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof index, &bi), KP_OK);
    assert_int_equal(kp_buffer_create(rt, sizeof params, &bp), KP_OK);
    assert_int_equal(kp_buffer_create(rt, N * 4, &br), KP_OK);
    assert_int_equal(kp_buffer_create(rt, N * 3 * 4, &bj), KP_OK);
    assert_int_equal(kp_buffer_write(rt, bp, 0, sizeof params, params), KP_OK);
    kp_tensor td = kp_tensor_2d(bd, KP_F32, N, 2), ti = kp_tensor_2d(bi, KP_I32, N, 3),
              tp = kp_tensor_1d(bp, KP_F32, P), tr = kp_tensor_2d(br, KP_F32, N, 1),
              tj = kp_tensor_3d(bj, KP_F32, N, 1, 3);
    for (size_t t = 0; t < sizeof lanes_tried / sizeof *lanes_tried; t++) {
        assert_int_equal(
            kp_kernel_tunable_set(rt, kp_residual_kernel(res), "LANES", lanes_tried[t]), KP_OK);
        for (int i = 0; i < N; i++) {
            data[2 * i] = 1, data[2 * i + 1] = 0;
            index[3 * i] = 0, index[3 * i + 1] = 1, index[3 * i + 2] = 2;
        }
        index[3 * 42 + 1] = P;  /* out of range */
        index[3 * 77 + 2] = -1; /* and another, later */
        data[2 * 63] = 3;       /* log of a negative number: NaN */
        assert_int_equal(kp_buffer_write(rt, bd, 0, sizeof data, data), KP_OK);
        assert_int_equal(kp_buffer_write(rt, bi, 0, sizeof index, index), KP_OK);
        assert_int_equal(kp_residual_evaluate(res, N, td, ti, tp, tr, tj), KP_ERR_INVALID_ARG);
        /* The solve layer reports through kp_last_error, like the core; kp_solve_last_error is
         * the same message (the 0.2 API). */
        assert_non_null(strstr(kp_last_error(rt),
                               "instance 42: parameter slot 1 (b) has index 4, outside [0, 4)"));
        assert_string_equal(kp_solve_last_error(), kp_last_error(rt));
        index[3 * 42 + 1] = 1;
        index[3 * 77 + 2] = 2;
        assert_int_equal(kp_buffer_write(rt, bi, 0, sizeof index, index), KP_OK);
        assert_int_equal(kp_residual_evaluate(res, N, td, ti, tp, tr, tj), KP_ERR_VERIFY);
        assert_non_null(
            strstr(kp_last_error(rt), "instance 63: the residual or its Jacobian is NaN"));
        data[2 * 63] = 1;
        assert_int_equal(kp_buffer_write(rt, bd, 0, sizeof data, data), KP_OK);
        float r[N] = {0}, jac[N * 3] = {0};
        assert_int_equal(kp_buffer_write(rt, br, 0, sizeof r, r), KP_OK);
        assert_int_equal(kp_buffer_write(rt, bj, 0, sizeof jac, jac), KP_OK);
        assert_int_equal(kp_residual_evaluate(res, N, td, ti, tp, tr, tj), KP_OK);
        /* Every instance written: r = log(2 - 1) * 1 + 1, J = [1 / (2 - 1), log(2 - 1), 1]. */
        assert_int_equal(kp_buffer_read(rt, br, 0, sizeof r, r), KP_OK);
        assert_int_equal(kp_buffer_read(rt, bj, 0, sizeof jac, jac), KP_OK);
        for (int i = 0; i < N; i++) {
            assert_float_equal(r[i], 1, 1e-6);
            assert_float_equal(jac[3 * i], 1, 1e-6);
            assert_float_equal(jac[3 * i + 1], 0, 1e-6);
            assert_float_equal(jac[3 * i + 2], 1, 1e-6);
        }
    }
    /* A wrong shape is refused before anything runs, naming the argument. */
    assert_int_equal(
        kp_residual_evaluate(res, N, td, ti, tp, tr, kp_tensor_3d(bj, KP_F32, N, 3, 1)),
        KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "jac"));
    assert_string_equal(kp_solve_last_error(), kp_last_error(rt));
    kp_buffer *bufs[] = {bd, bi, bp, br, bj};
    for (int i = 0; i < 5; i++)
        kp_buffer_destroy(rt, bufs[i]);
    kp_residual_destroy(res);
    kp_expr_graph_destroy(g);
}

/* A LANES whose vectors of values would outgrow a work-item's 64 KiB (PoCL's stack) is halved
 * until they fit, with the reason in the tuning's notes: 520 values in f64 take 8 lanes of 16. */
static void test_lanes_fit_the_stack(void **state)
{
    (void)state;
    if (!test_device_fp64(rt))
        skip();
    char text[2048] = "", term[64];
    for (int k = 1; k <= 40; k++) {
        snprintf(term, sizeof term, "%sexp(a*x*%d/7)*b + c*%d", k > 1 ? " + " : "", k, k);
        strcat(text, term);
    }
    kp_expr_graph *g = graph_of(text);
    kp_residual *res;
    assert_int_equal(kp_residual_create(rt, g, KP_PRECISION_F64, &res), KP_OK);
    assert_non_null(strstr(kp_residual_source(res), ": 520 values"));
    kp_kernel *k = kp_residual_kernel(res);
    kp_tuning_info info = {.struct_size = sizeof info};
    for (int lanes = 8; lanes <= 16; lanes *= 2) {
        assert_int_equal(kp_kernel_tunable_set(rt, k, "LANES", lanes), KP_OK);
        assert_int_equal(kp_kernel_tuning(rt, k, 1, &info), KP_OK);
        assert_string_equal(info.name, "LANES");
        assert_int_equal(info.value, 8);
        assert_true((lanes == 16) == (strstr(info.notes, "64 KiB") != NULL));
    }
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    kp_residual_destroy(res);
    kp_expr_graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_every_op),
        cmocka_unit_test(test_evaluate_against_finite_differences),
        cmocka_unit_test(test_equal_graphs_share_a_kernel),
        cmocka_unit_test(test_bad_index_and_nan_name_the_instance),
        cmocka_unit_test(test_lanes_fit_the_stack),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
