// SPDX-License-Identifier: Apache-2.0
/* OpenCL C from a graph: the outputs and their symbolic derivatives as one straight-line
 * function, every node computed once, numbered in a depth-first order of the normalized graph so
 * that equal graphs give the same text (and share a cached binary). The values are of type
 * `realv`, a scalar or a vector of instances (kp__solve_make_source defines it with KP_SEL and
 * KP_POWN), so the text has no `?:` or `pown` of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

int kp__str_append(char **s, size_t *len, const char *fmt, ...)
{
    if (!*s)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *grown = n < 0 ? NULL : realloc(*s, *len + (size_t)n + 1);
    if (!grown) {
        free(*s);
        *s = NULL;
        return 0;
    }
    *s = grown;
    va_start(ap, fmt);
    vsnprintf(*s + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *len += (size_t)n;
    return 1;
}

/* A literal that stays floating point in either precision ("2.0", "1e-05", "0.5f"). */
static void literal(double v, int f32, char *out, size_t size)
{
    snprintf(out, size, f32 ? "%.9g" : "%.17g", v);
    if (!strpbrk(out, ".e"))
        strncat(out, ".0", size - strlen(out) - 1);
    if (f32)
        strncat(out, "f", size - strlen(out) - 1);
}

/* Depth-first post-order from the roots: order[] lists the nodes to emit, num[id] their number.
 * A node reads operand log_of[id] in place of its first where that is not -1 (pow: the log of its
 * base). */
static int32_t number(const kp_expr_graph *g, const int32_t *log_of, const int32_t *roots,
                      size_t n_roots, int32_t *num, int32_t *order, int32_t *stack)
{
    int32_t n = 0;
    for (size_t r = 0; r < n_roots; r++) {
        if (num[roots[r]] >= 0)
            continue;
        int32_t top = 0;
        stack[top++] = roots[r];
        while (top) {
            int32_t id = stack[top - 1];
            if (num[id] >= 0) {
                top--;
                continue;
            }
            const kp__node *nd = &g->nodes[id];
            /* Push the operands not yet numbered, last first, so `a` is numbered before `b`. */
            const int32_t kids[3] = {nd->c, nd->b, log_of[id] >= 0 ? log_of[id] : nd->a};
            int pushed = 0;
            for (int i = 0; i < 3; i++)
                if (kids[i] >= 0 && num[kids[i]] < 0 && g->nodes[kids[i]].op != KP_EXPR_CONST) {
                    stack[top++] = kids[i];
                    pushed = 1;
                }
            if (pushed)
                continue;
            top--;
            num[id] = n;
            order[n++] = id;
        }
    }
    return n;
}

static void operand(const kp_expr_graph *g, const int32_t *num, int32_t id, int f32, char *out,
                    size_t size)
{
    if (g->nodes[id].op == KP_EXPR_CONST) {
        char lit[48];
        literal(g->nodes[id].v, f32, lit, sizeof lit);
        snprintf(out, size, "(%s)", lit);
    } else
        snprintf(out, size, "t%d", num[id]);
}

/* powi with |n| up to this is multiplied out by squaring (t5_1 = x * x, ...): PoCL's pown took 10
 * times as long as the whole of a cubic residual on the CPU, and at most 4 squarings and 4
 * products stay within pown's 16 ulp (OpenCL C's bound for float). */
enum { POWI_PRODUCTS = 16 };

static int powi_products(char **s, size_t *len, int t, const char *x, int32_t n, const char *one)
{
    uint32_t m = n < 0 ? 0u - (uint32_t)n : (uint32_t)n;
    char square[64], acc[64] = "";
    snprintf(square, sizeof square, "%s", x);
    int aux = 0, ok = 1;
    while (m && ok) {
        if (m & 1) {
            if (!acc[0])
                snprintf(acc, sizeof acc, "%s", square);
            else {
                ok = kp__str_append(s, len, "    const realv t%d_%d = %s * %s;\n", t, ++aux, acc,
                                    square);
                snprintf(acc, sizeof acc, "t%d_%d", t, aux);
            }
        }
        m >>= 1;
        if (m && ok) {
            ok = kp__str_append(s, len, "    const realv t%d_%d = %s * %s;\n", t, ++aux, square,
                                square);
            snprintf(square, sizeof square, "t%d_%d", t, aux);
        }
    }
    if (n < 0)
        return ok && kp__str_append(s, len, "    const realv t%d = %s / %s;\n", t, one, acc);
    return ok && kp__str_append(s, len, "    const realv t%d = %s;\n", t, acc);
}

int kp__expr_calls_library(const kp_expr_graph *g)
{
    for (int32_t id = 0; id < g->n_nodes; id++) {
        const kp__node *n = &g->nodes[id];
        switch (n->op) {
        case KP_EXPR_EXP:
        case KP_EXPR_LOG:
        case KP_EXPR_POW:
        case KP_EXPR_SIN:
        case KP_EXPR_COS:
        case KP_EXPR_TAN:
        case KP_EXPR_ATAN:
        case KP_EXPR_ATAN2:
        case KP_EXPR_TANH:
        case KP_EXPR_SIGMOID:
            return 1;
        case KP_EXPR_POWI:
            if (n->k < -POWI_PRODUCTS || n->k > POWI_PRODUCTS)
                return 1;
            break;
        default:
            break;
        }
    }
    return 0;
}

static int emit(char **s, size_t *len, const kp_expr_graph *g, const int32_t *num,
                const int32_t *log_of, int32_t id, int f32)
{
    const kp__node *n = &g->nodes[id];
    char a[64] = "", b[64] = "", c[64] = "", lit[48];
    if (n->a >= 0)
        operand(g, num, n->a, f32, a, sizeof a);
    if (n->b >= 0)
        operand(g, num, n->b, f32, b, sizeof b);
    if (n->c >= 0)
        operand(g, num, n->c, f32, c, sizeof c);
    const char *one = f32 ? "1.0f" : "1.0", *zero = f32 ? "0.0f" : "0.0";
    int t = num[id];
    switch (n->op) {
    case KP_EXPR_CONST:
        literal(n->v, f32, lit, sizeof lit);
        return kp__str_append(s, len, "    const realv t%d = %s;\n", t, lit);
    case KP_EXPR_DATA:
        return kp__str_append(s, len, "    const realv t%d = d[%d];\n", t, n->k);
    case KP_EXPR_PARAM:
        return kp__str_append(s, len, "    const realv t%d = p[%d];\n", t, n->k);
    case KP_EXPR_ADD:
    case KP_EXPR_SUB:
    case KP_EXPR_MUL:
    case KP_EXPR_DIV:
        return kp__str_append(s, len, "    const realv t%d = %s %s %s;\n", t, a,
                              kp__expr_op_name(n->op), b);
    case KP_EXPR_NEG:
        return kp__str_append(s, len, "    const realv t%d = -%s;\n", t, a);
    case KP_EXPR_ABS:
        return kp__str_append(s, len, "    const realv t%d = fabs(%s);\n", t, a);
    case KP_EXPR_MIN:
        return kp__str_append(s, len, "    const realv t%d = KP_SEL(%s <= %s, %s, %s);\n", t, a, b,
                              a, b);
    case KP_EXPR_MAX:
        return kp__str_append(s, len, "    const realv t%d = KP_SEL(%s >= %s, %s, %s);\n", t, a, b,
                              a, b);
    case KP_EXPR_SELECT:
        return kp__str_append(s, len, "    const realv t%d = KP_SEL(%s != %s, %s, %s);\n", t, a,
                              zero, b, c);
    case KP_EXPR_LT:
    case KP_EXPR_LE:
    case KP_EXPR_GT:
    case KP_EXPR_GE:
    case KP_EXPR_EQ:
    case KP_EXPR_NE:
        return kp__str_append(s, len, "    const realv t%d = KP_SEL(%s %s %s, %s, %s);\n", t, a,
                              kp__expr_op_name(n->op), b, one, zero);
    case KP_EXPR_RSQRT:
        return kp__str_append(s, len, "    const realv t%d = KP_SEL(%s > %s, rsqrt(%s), %s);\n", t,
                              a, zero, a, zero);
    case KP_EXPR_POW: /* exp(y log x), the log a node of its own that the derivative in y shares:
                       * PoCL's pow took 5 times as long (Rat43, f64) */
        operand(g, num, log_of[id], f32, a, sizeof a);
        return kp__str_append(s, len, "    const realv t%d = exp(%s * %s);\n", t, b, a);
    case KP_EXPR_ATAN2:
        return kp__str_append(s, len, "    const realv t%d = %s(%s, %s);\n", t,
                              kp__expr_op_name(n->op), a, b);
    case KP_EXPR_POWI:
        if (n->k < -POWI_PRODUCTS || n->k > POWI_PRODUCTS)
            return kp__str_append(s, len, "    const realv t%d = KP_POWN(%s, %d);\n", t, a, n->k);
        return powi_products(s, len, t, a, n->k, one);
    case KP_EXPR_SIGMOID:
        return kp__str_append(s, len, "    const realv t%d = %s / (%s + exp(-%s));\n", t, one, one,
                              a);
    default: /* exp, log, sqrt, sin, cos, tan, atan, tanh: OpenCL's names are ours */
        return kp__str_append(s, len, "    const realv t%d = %s(%s);\n", t, kp__expr_op_name(n->op),
                              a);
    }
}

kp_status kp__expr_codegen(kp_expr_graph *g, const char *name, int f32, char **src, size_t *len)
{
    const uint32_t O = g->n_outputs, S = g->n_params;
    int32_t *roots = malloc((O + (size_t)O * S + 1) * sizeof *roots);
    if (!roots)
        return kp__expr_message(g, KP_ERR_OUT_OF_MEMORY, "code generation: out of memory");
    memcpy(roots, g->outputs, O * sizeof *roots);
    kp_status st = kp__expr_differentiate(g, roots + O);
    /* Each pow's log(base) as a node, the one a log in the expression or pow's derivative in its
     * exponent already is (hash-consing), so the text computes it once. */
    const int32_t n_pow = g->n_nodes;
    for (int32_t id = 0; st == KP_OK && id < n_pow; id++)
        if (g->nodes[id].op == KP_EXPR_POW)
            kp_expr_unary(g, KP_EXPR_LOG, (kp_expr){g->nodes[id].a});
    if (st == KP_OK)
        st = g->status; /* out of memory, with kp_expr_unary's message */
    int32_t *num = NULL, *order = NULL, *stack = NULL, *log_of = NULL;
    if (st == KP_OK) {
        size_t n = (size_t)g->n_nodes;
        num = malloc(n * sizeof *num);
        order = malloc(n * sizeof *order);
        log_of = malloc(n * sizeof *log_of);
        /* A node is pushed once by each parent expanded before it is numbered: at most three
         * entries per node on the stack. */
        stack = malloc((3 * n + 1) * sizeof *stack);
        if (!num || !order || !stack || !log_of)
            st = kp__expr_message(g, KP_ERR_OUT_OF_MEMORY, "code generation: out of memory");
        else {
            memset(num, 0xff, n * sizeof *num);
            memset(log_of, 0xff, n * sizeof *log_of);
            for (int32_t id = 0; id < n_pow; id++)
                if (g->nodes[id].op == KP_EXPR_POW)
                    log_of[id] = kp_expr_unary(g, KP_EXPR_LOG, (kp_expr){g->nodes[id].a}).id;
        }
    }
    if (st == KP_OK) {
        int32_t n = number(g, log_of, roots, O + (size_t)O * S, num, order, stack);
        kp__str_append(src, len,
                       "/* %u output(s), %u parameter slot(s), %u data slot(s): %d values */\n"
                       "void %s(const realv *d, const realv *p, realv *r, realv *J)\n{\n",
                       O, S, g->n_data, n, name);
        for (int32_t i = 0; i < n && *src; i++)
            emit(src, len, g, num, log_of, order[i], f32);
        char v[64];
        for (uint32_t o = 0; o < O && *src; o++) {
            operand(g, num, roots[o], f32, v, sizeof v);
            kp__str_append(src, len, "    r[%u] = %s;\n", o, v);
            for (uint32_t s = 0; s < S && *src; s++) {
                operand(g, num, roots[O + o * S + s], f32, v, sizeof v);
                kp__str_append(src, len, "    J[%u] = %s;\n", o * S + s, v);
            }
        }
        kp__str_append(src, len, "}\n");
        if (!*src)
            st = kp__expr_message(g, KP_ERR_OUT_OF_MEMORY, "code generation: out of memory");
    }
    free(roots);
    free(num);
    free(order);
    free(stack);
    free(log_of);
    return st;
}
