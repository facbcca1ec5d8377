/* SPDX-License-Identifier: Apache-2.0 */
/* Expression graphs on the host: hash-consing and simplification, the text form and its error
 * messages, garbage text, the interpreter's forward-mode derivatives against central differences
 * and against the symbolic derivatives the code generator emits, the vector helpers, and
 * builder errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../solve/solve-internal.h"
#include "test-util.h"

static kp_expr_graph *fresh(void)
{
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "b1, b2 b3"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "x y"), KP_OK);
    return g;
}

static void test_hash_consing_and_simplification(void **state)
{
    (void)state;
    kp_expr_graph *g = fresh();
    kp_expr a = kp_expr_param(g, "b1"), b = kp_expr_param(g, "b2"), x = kp_expr_data(g, "x");
    kp_expr zero = kp_expr_const(g, 0), one = kp_expr_const(g, 1);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_MUL, a, b).id,
                     kp_expr_binary(g, KP_EXPR_MUL, b, a).id);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_ADD, a, zero).id, a.id);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_MUL, one, x).id, x.id);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_MUL, x, zero).id, zero.id);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_DIV, x, one).id, x.id);
    assert_int_equal(kp_expr_unary(g, KP_EXPR_NEG, kp_expr_unary(g, KP_EXPR_NEG, a)).id, a.id);
    assert_int_equal(kp_expr_powi(g, a, 1).id, a.id);
    assert_int_equal(kp_expr_powi(g, a, 0).id, one.id);
    assert_int_equal(kp_expr_binary(g, KP_EXPR_POW, a, kp_expr_const(g, 3)).id,
                     kp_expr_powi(g, a, 3).id);
    kp_expr six = kp_expr_binary(g, KP_EXPR_MUL, kp_expr_const(g, 2), kp_expr_const(g, 3));
    assert_int_equal(six.id, kp_expr_const(g, 6).id);
    /* What overflows is not folded: it stays an operation, to fail where it runs. */
    kp_expr big = kp_expr_unary(g, KP_EXPR_EXP, kp_expr_const(g, 1000));
    assert_int_equal(g->nodes[big.id].op, KP_EXPR_EXP);
    assert_int_equal(kp_expr_select(g, one, a, b).id, a.id);
    assert_int_equal(kp_expr_select(g, x, a, a).id, a.id);
    /* A parameter declared again is the same slot. */
    assert_int_equal(kp_expr_param(g, "b1").id, a.id);
    assert_int_equal(kp_expr_graph_status(g), KP_OK);
    kp_expr_graph_destroy(g);
}

/* The text form and the C API build the same normalized graph, whatever the spelling. */
static void test_text_and_api_agree(void **state)
{
    (void)state;
    kp_expr_graph *t = fresh(), *c = fresh();
    assert_int_equal(kp_expr_parse(t, "# Misra1a\nb1*(1-exp(-b2*x)) - y\n"), KP_OK);
    kp_expr b1 = kp_expr_param(c, "b1"), b2 = kp_expr_param(c, "b2"), x = kp_expr_data(c, "x");
    kp_expr e = kp_expr_unary(c, KP_EXPR_EXP,
                              kp_expr_unary(c, KP_EXPR_NEG, kp_expr_binary(c, KP_EXPR_MUL, x, b2)));
    e = kp_expr_binary(c, KP_EXPR_MUL, kp_expr_binary(c, KP_EXPR_SUB, kp_expr_const(c, 1), e), b1);
    e = kp_expr_binary(c, KP_EXPR_SUB, e, kp_expr_data(c, "y"));
    assert_int_equal(kp_expr_graph_output(c, e), KP_OK);
    kp_expr_graph_info it = {.struct_size = sizeof it}, ic = {.struct_size = sizeof ic};
    assert_int_equal(kp_expr_graph_get_info(t, &it), KP_OK);
    assert_int_equal(kp_expr_graph_get_info(c, &ic), KP_OK);
    assert_true(it.key == ic.key);
    assert_int_equal(it.n_outputs, 1);
    assert_int_equal(it.n_params, 3);
    assert_int_equal(it.n_data, 2);
    /* Locals, ';', comparisons, '**', unary minus binding looser than '^'. */
    assert_int_equal(kp_expr_parse(t, "d = x - b3; -d^2 + (d <= 0) * b1**2"), KP_OK);
    double data[2] = {1.5, 0}, p[3] = {2, 0, 0.5}, r[2];
    assert_int_equal(kp_expr_graph_eval(t, data, p, r, NULL), KP_OK);
    assert_true(fabs(r[1] - (-1.0)) < 1e-15);
    kp_expr_graph_destroy(t);
    kp_expr_graph_destroy(c);
}

/* Each mistake gives LINE:COL, what was expected and what was found, the line and a caret. */
static void test_parse_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"b1*(1-exp(-b2*x)", "1:17: error: expected ')', found end of input\n"
                             "  b1*(1-exp(-b2*x)\n"
                             "                  ^"},
        {"b1*q - y", "1:4: error: unknown name 'q' (parameters: b1, b2, b3; data: x, y)\n"
                     "  b1*q - y\n"
                     "     ^"},
        {"exp(b1, b2)", "1:1: error: exp takes 1 argument, got 2"},
        {"2x", "1:2: error: expected an operator after the number, found 'x'"},
        {"b1 +", "1:5: error: expected a number, a name, a function or '(', found end of input"},
        {"b1 b2", "1:4: error: expected an operator or the end of the residual, found name 'b2'"},
        {"b1\n  x $ 2", "2:5: error: expected an operator or the end of the residual, found '$'\n"
                        "    x $ 2\n"
                        "      ^"},
        {"exp b1", "1:5: error: expected '(' after a function's name, found name 'b1'"},
        {"b1 = 2", "1:1: error: 'b1' is a function, parameter or data name"},
        {"1e999", "1:1: error: number '1e999' is out of range"},
        {"d = x", "1:1: error: expected a residual, found definitions only"},
        {"", "1:1: error: expected a residual, found an empty text"},
        {"powi(x, 1.5)", "1:1: error: powi's exponent must be an integer constant"},
        {"min(x)", "1:1: error: min takes 2 arguments, got 1"},
        {"x\x01", "1:2: error: expected an operator or the end of the residual, found byte 0x01"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kp_expr_graph *g = fresh();
        assert_int_equal(kp_expr_parse(g, "x - y"), KP_OK);
        assert_int_equal(kp_expr_parse(g, cases[i].text), KP_ERR_INVALID_ARG);
        if (strncmp(kp_expr_graph_error(g), cases[i].message, strlen(cases[i].message)) != 0)
            fail_msg("%s\ngave:\n%s\nexpected:\n%s", cases[i].text, kp_expr_graph_error(g),
                     cases[i].message);
        /* A failed parse leaves the outputs as they were, and the graph usable. */
        kp_expr_graph_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_expr_graph_get_info(g, &info), KP_OK);
        assert_int_equal(info.n_outputs, 1);
        assert_int_equal(kp_expr_graph_status(g), KP_OK);
        kp_expr_graph_destroy(g);
    }
    /* Deep nesting is refused, not a stack overflow. */
    char deep[4096];
    memset(deep, '(', 2000);
    strcpy(deep + 2000, "x");
    kp_expr_graph *g = fresh();
    assert_int_equal(kp_expr_parse(g, deep), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_expr_graph_error(g), "nested deeper than"));
    kp_expr_graph_destroy(g);
}

/* Garbage: valid residuals with random bytes replaced, inserted and cut, thousands of times.
 * Each parse succeeds or fails with a positioned message; nothing crashes (the sanitizer build
 * runs this too). */
static void test_parse_garbage(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "b1*(1-exp(-b2*x)) - y", "d = x - b3; -d^2 + (d <= 0) * b1**2",
        "where(x < 1, atan2(b1, b2), pow(b3, 1.5)) + norm3(b1, b2, b3)",
        "sigmoid(tanh(sin(cos(tan(x))))) / sqrt(abs(b1) + 1e-3)"};
    static const char alphabet[] = "()+-*/^,;=<>!.e0123456789 \n\tbxy123_#$\x80\xff";
    unsigned s = 12345;
    char text[256];
    for (int n = 0; n < 20000; n++) {
        const char *seed = seeds[n % 4];
        size_t len = strlen(seed);
        memcpy(text, seed, len + 1);
        for (int k = 0; k < 1 + n % 4; k++) {
            s = s * 1103515245u + 12345u;
            size_t at = (s >> 8) % (len + 1);
            char ch = alphabet[(s >> 20) % (sizeof alphabet - 1)];
            switch ((s >> 16) % 3) {
            case 0:
                if (at < len)
                    text[at] = ch;
                break;
            case 1:
                if (len < sizeof text - 2) {
                    memmove(text + at + 1, text + at, len - at + 1);
                    text[at] = ch;
                    len++;
                }
                break;
            default:
                text[at] = '\0';
                len = at;
            }
        }
        kp_expr_graph *g = fresh();
        kp_status st = kp_expr_parse(g, text);
        if (st == KP_OK) {
            double data[2] = {0.7, 1.3}, p[3] = {1.1, 0.9, 1.2}, r[KP_EXPR_MAX_OUTPUTS],
                   J[KP_EXPR_MAX_OUTPUTS * 3];
            assert_int_equal(kp_expr_graph_eval(g, data, p, r, J), KP_OK);
        } else {
            assert_int_equal(st, KP_ERR_INVALID_ARG);
            const char *m = kp_expr_graph_error(g);
            int line, col;
            if (sscanf(m, "%d:%d: error: ", &line, &col) != 2 || line < 1 || col < 1)
                fail_msg("\"%s\": message without a position: %s", text, m);
        }
        kp_expr_graph_destroy(g);
    }
}

/* A random expression over the parameters and data, on safe domains (log and sqrt of positive
 * arguments, no division by small numbers). */
static kp_expr random_expr(kp_expr_graph *g, unsigned *s, int depth)
{
    *s = *s * 1103515245u + 12345u;
    unsigned r = (*s >> 8) % 23;
    kp_expr leaves[5] = {kp_expr_param(g, "b1"), kp_expr_param(g, "b2"), kp_expr_param(g, "b3"),
                         kp_expr_data(g, "x"), kp_expr_const(g, 0.5 + (*s >> 20) % 7 * 0.25)};
    if (depth == 0 || r < 3)
        return leaves[(*s >> 12) % 5];
    kp_expr a = random_expr(g, s, depth - 1), b = random_expr(g, s, depth - 1);
    kp_expr one = kp_expr_const(g, 1), sq = kp_expr_binary(g, KP_EXPR_MUL, a, a);
    kp_expr pos = kp_expr_binary(g, KP_EXPR_ADD, one, sq); /* 1 + a^2 > 0 */
    switch (r) {
    case 3:
        return kp_expr_binary(g, KP_EXPR_ADD, a, b);
    case 4:
        return kp_expr_binary(g, KP_EXPR_SUB, a, b);
    case 5:
        return kp_expr_binary(g, KP_EXPR_MUL, a, b);
    case 6:
        return kp_expr_binary(g, KP_EXPR_DIV, b, pos);
    case 7:
        return kp_expr_unary(g, KP_EXPR_NEG, a);
    case 8:
        return kp_expr_unary(g, KP_EXPR_LOG, pos);
    case 9:
        return kp_expr_unary(g, KP_EXPR_SQRT, pos);
    case 10:
        return kp_expr_unary(g, KP_EXPR_RSQRT, pos);
    case 11:
        return kp_expr_unary(g, KP_EXPR_EXP, kp_expr_unary(g, KP_EXPR_SIN, a));
    case 12:
        return kp_expr_unary(g, KP_EXPR_COS, a);
    case 13:
        return kp_expr_unary(g, KP_EXPR_TAN, kp_expr_unary(g, KP_EXPR_TANH, a));
    case 14:
        return kp_expr_unary(g, KP_EXPR_ATAN, a);
    case 15:
        return kp_expr_binary(g, KP_EXPR_ATAN2, a, kp_expr_binary(g, KP_EXPR_ADD, pos, b));
    case 16:
        return kp_expr_unary(g, KP_EXPR_SIGMOID, a);
    case 17:
        return kp_expr_binary(g, KP_EXPR_POW, pos, kp_expr_unary(g, KP_EXPR_SIN, b));
    case 18:
        return kp_expr_powi(g, a, (int32_t)((*s >> 4) % 5) - 2 == 0 ? 3 : 2);
    case 19:
        return kp_expr_binary(g, (*s & 16) ? KP_EXPR_MIN : KP_EXPR_MAX, a, b);
    case 20:
        return kp_expr_unary(g, KP_EXPR_ABS, a);
    case 21:
        return kp_expr_select(g, kp_expr_binary(g, KP_EXPR_LT, a, b), a, b);
    default:
        return kp_expr_powi(g, pos, -1);
    }
}

/* The interpreter's dual numbers against central differences, and the symbolic derivatives
 * (kp__expr_differentiate, what the generated kernels compute) against the dual numbers. */
static void test_derivatives_on_random_expressions(void **state)
{
    (void)state;
    unsigned s = 99;
    int checked = 0;
    for (int n = 0; n < 300; n++) {
        kp_expr_graph *g = fresh();
        kp_expr e = random_expr(g, &s, 5);
        assert_int_equal(kp_expr_graph_output(g, e), KP_OK);
        double data[2] = {0.3 + (n % 7) * 0.2, 0}, p[3], r, J[3], up, down;
        for (int k = 0; k < 3; k++)
            p[k] = -1.2 + ((n * 7 + k * 13) % 25) * 0.1;
        assert_int_equal(kp_expr_graph_eval(g, data, p, &r, J), KP_OK);
        kp_expr_graph *d = kp__expr_graph_copy(g);
        int32_t jac[3];
        assert_non_null(d);
        assert_int_equal(kp__expr_differentiate(d, jac), KP_OK);
        d->n_outputs = 3;
        memcpy(d->outputs, jac, sizeof jac);
        double sym[3];
        assert_int_equal(kp_expr_graph_eval(d, data, p, sym, NULL), KP_OK);
        for (int k = 0; k < 3; k++) {
            const double h = 1e-6, keep = p[k];
            p[k] = keep + h;
            kp_expr_graph_eval(g, data, p, &up, NULL);
            p[k] = keep - h;
            kp_expr_graph_eval(g, data, p, &down, NULL);
            p[k] = keep;
            const double fd = (up - down) / (2 * h), scale = 1 + fabs(J[k]);
            /* Kinks (abs, min, max, select) make differences meaningless within h of them:
             * differences are checked only where the two one-sided slopes agree. */
            const double left = (r - down) / h, right = (up - r) / h;
            if (isfinite(fd) && fabs(left - right) < 1e-3 * (1 + fabs(fd))) {
                if (fabs(J[k] - fd) > 1e-5 * scale)
                    fail_msg("expression %d slot %d: dual %.12g, differences %.12g", n, k, J[k],
                             fd);
                checked++;
            }
            if (fabs(sym[k] - J[k]) > 1e-12 * scale && !(isnan(sym[k]) && isnan(J[k])))
                fail_msg("expression %d slot %d: symbolic %.17g, dual %.17g", n, k, sym[k], J[k]);
        }
        kp_expr_graph_destroy(d);
        kp_expr_graph_destroy(g);
    }
    assert_true(checked > 600);
}

static void test_vector_helpers(void **state)
{
    (void)state;
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    kp_expr a[3], b[3], c[3], u[3];
    const char *an[3] = {"ax", "ay", "az"}, *bn[3] = {"bx", "by", "bz"};
    for (int i = 0; i < 3; i++) {
        a[i] = kp_expr_param(g, an[i]);
        b[i] = kp_expr_data(g, bn[i]);
    }
    kp_expr_cross(g, a, b, c);
    kp_expr_normalize(g, 3, a, u);
    for (int i = 0; i < 3; i++)
        assert_int_equal(kp_expr_graph_output(g, c[i]), KP_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(kp_expr_graph_output(g, u[i]), KP_OK);
    assert_int_equal(kp_expr_graph_output(g, kp_expr_dot(g, 3, a, b)), KP_OK);
    assert_int_equal(kp_expr_graph_output(g, kp_expr_norm(g, 3, a)), KP_OK);
    double p[3] = {1, 2, 2}, d[3] = {0, 0, 1}, r[8], J[24];
    assert_int_equal(kp_expr_graph_eval(g, d, p, r, J), KP_OK);
    const double want[8] = {2, -1, 0, 1.0 / 3, 2.0 / 3, 2.0 / 3, 2, 3};
    for (int i = 0; i < 8; i++)
        assert_true(fabs(r[i] - want[i]) < 1e-15);
    /* The zero vector normalizes to zero, with finite (zero) derivatives: the safe rsqrt. */
    double z[3] = {0, 0, 0};
    assert_int_equal(kp_expr_graph_eval(g, d, z, r, J), KP_OK);
    for (int i = 3; i < 6; i++) {
        assert_true(r[i] == 0);
        for (int k = 0; k < 3; k++)
            assert_true(isfinite(J[i * 3 + k]));
    }
    kp_expr_graph_destroy(g);
}

/* Builder errors stick (the first one), name what was wrong, and propagate through later
 * builders without crashing. */
static void test_builder_errors(void **state)
{
    (void)state;
    kp_expr_graph *g = fresh();
    assert_true(kp_expr_param(g, "x").id < 0);
    assert_int_equal(kp_expr_graph_status(g), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_expr_graph_error(g), "kp_expr_param: \"x\" is already declared as data");
    kp_expr bad = kp_expr_binary(g, KP_EXPR_ADD, (kp_expr){12345}, kp_expr_const(g, 1));
    assert_true(bad.id < 0);
    assert_true(kp_expr_unary(g, KP_EXPR_EXP, bad).id < 0);
    assert_string_equal(kp_expr_graph_error(g), "kp_expr_param: \"x\" is already declared as data");
    assert_int_equal(kp_expr_graph_output(g, bad), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_expr_parse(g, "x"), KP_ERR_INVALID_ARG);
    kp_expr_graph_destroy(g);

    static const struct {
        int kind;
        const char *message;
    } cases[] = {
        {0, "kp_expr_const: nan is not finite"},
        {1, "kp_expr_data: \"2x\" is not a name (letters, digits and '_', at most 64)"},
        {2, "kp_expr_param: \"exp\" is the name of a function"},
        {3, "kp_expr_unary: + is not a unary operation"},
        {4, "kp_expr_binary: operand 1 is not a node of this graph"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        g = fresh();
        switch (cases[i].kind) {
        case 0:
            kp_expr_const(g, NAN);
            break;
        case 1:
            kp_expr_data(g, "2x");
            break;
        case 2:
            kp_expr_param(g, "exp");
            break;
        case 3:
            kp_expr_unary(g, KP_EXPR_ADD, kp_expr_const(g, 1));
            break;
        default:
            kp_expr_binary(g, KP_EXPR_ADD, (kp_expr){-1}, kp_expr_const(g, 1));
        }
        assert_string_equal(kp_expr_graph_error(g), cases[i].message);
        kp_expr_graph_destroy(g);
    }
    double r;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_graph_eval(g, NULL, NULL, &r, NULL), KP_ERR_INVALID_ARG);
    kp_expr_graph_destroy(g);
    kp_expr_graph_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_consing_and_simplification),
        cmocka_unit_test(test_text_and_api_agree),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_garbage),
        cmocka_unit_test(test_derivatives_on_random_expressions),
        cmocka_unit_test(test_vector_helpers),
        cmocka_unit_test(test_builder_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
