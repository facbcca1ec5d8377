// SPDX-License-Identifier: Apache-2.0
/* Symbolic forward mode: the partial derivatives of a graph's outputs built as nodes of the same
 * graph, so hash-consing shares them with the values and with each other. */
#include <stdlib.h>

#include "solve-internal.h"

typedef struct diff {
    kp_expr_graph *g;
    int32_t *d; /* d[id * S + s]: the node of d node / d slot s (the zero node when none) */
    uint32_t S;
    kp_expr zero, one;
} diff;

static kp_expr node(int32_t id)
{
    return (kp_expr){id};
}

static kp_expr D(const diff *df, int32_t id, uint32_t s)
{
    return id < 0 ? df->zero : node(df->d[(size_t)id * df->S + s]);
}

static kp_expr add(kp_expr_graph *g, kp_expr a, kp_expr b)
{
    return kp_expr_binary(g, KP_EXPR_ADD, a, b);
}

static kp_expr sub(kp_expr_graph *g, kp_expr a, kp_expr b)
{
    return kp_expr_binary(g, KP_EXPR_SUB, a, b);
}

static kp_expr mul(kp_expr_graph *g, kp_expr a, kp_expr b)
{
    return kp_expr_binary(g, KP_EXPR_MUL, a, b);
}

static kp_expr divide(kp_expr_graph *g, kp_expr a, kp_expr b)
{
    return kp_expr_binary(g, KP_EXPR_DIV, a, b);
}

static kp_expr num(kp_expr_graph *g, double v)
{
    return kp_expr_const(g, v);
}

/* d node / d slot s, its operands' derivatives already known. */
static kp_expr rule(const diff *df, int32_t id, uint32_t s)
{
    kp_expr_graph *g = df->g;
    const kp__node n = g->nodes[id];
    const kp_expr E = node(id), A = node(n.a), B = node(n.b);
    const kp_expr da = D(df, n.a, s), db = D(df, n.b, s);
    switch (n.op) {
    case KP_EXPR_PARAM:
        return (uint32_t)n.k == s ? df->one : df->zero;
    case KP_EXPR_ADD:
        return add(g, da, db);
    case KP_EXPR_SUB:
        return sub(g, da, db);
    case KP_EXPR_MUL:
        return add(g, mul(g, da, B), mul(g, A, db));
    case KP_EXPR_DIV:
        return divide(g, sub(g, da, mul(g, E, db)), B);
    case KP_EXPR_NEG:
        return kp_expr_unary(g, KP_EXPR_NEG, da);
    case KP_EXPR_ABS:
        return kp_expr_select(g, kp_expr_binary(g, KP_EXPR_GE, A, df->zero), da,
                              kp_expr_unary(g, KP_EXPR_NEG, da));
    case KP_EXPR_MIN:
        return kp_expr_select(g, kp_expr_binary(g, KP_EXPR_LE, A, B), da, db);
    case KP_EXPR_MAX:
        return kp_expr_select(g, kp_expr_binary(g, KP_EXPR_GE, A, B), da, db);
    case KP_EXPR_SELECT:
        return kp_expr_select(g, A, db, D(df, n.c, s));
    case KP_EXPR_EXP:
        return mul(g, E, da);
    case KP_EXPR_LOG:
        return divide(g, da, A);
    case KP_EXPR_SQRT:
        return divide(g, mul(g, num(g, 0.5), da), E);
    case KP_EXPR_RSQRT: /* E is 0 where the argument is not positive, and so is this */
        return mul(g, mul(g, num(g, -0.5), kp_expr_powi(g, E, 3)), da);
    case KP_EXPR_POW: { /* x^y for x > 0: y x^(y-1) = y E / x, without a second pow */
        kp_expr t = mul(g, divide(g, mul(g, B, E), A), da);
        if (!(g->nodes[n.b].depends & (1ull << s)))
            return t;
        return add(g, t, mul(g, mul(g, E, kp_expr_unary(g, KP_EXPR_LOG, A)), db));
    }
    case KP_EXPR_POWI:
        return mul(g, mul(g, num(g, n.k), kp_expr_powi(g, A, n.k - 1)), da);
    case KP_EXPR_SIN:
        return mul(g, kp_expr_unary(g, KP_EXPR_COS, A), da);
    case KP_EXPR_COS:
        return kp_expr_unary(g, KP_EXPR_NEG, mul(g, kp_expr_unary(g, KP_EXPR_SIN, A), da));
    case KP_EXPR_TAN:
        return mul(g, add(g, df->one, mul(g, E, E)), da);
    case KP_EXPR_ATAN:
        return divide(g, da, add(g, df->one, mul(g, A, A)));
    case KP_EXPR_ATAN2:
        return divide(g, sub(g, mul(g, B, da), mul(g, A, db)), add(g, mul(g, A, A), mul(g, B, B)));
    case KP_EXPR_TANH:
        return mul(g, sub(g, df->one, mul(g, E, E)), da);
    case KP_EXPR_SIGMOID:
        return mul(g, mul(g, E, sub(g, df->one, E)), da);
    default: /* constants, data and comparisons */
        return df->zero;
    }
}

kp_status kp__expr_differentiate(kp_expr_graph *g, int32_t *jac)
{
    diff df = {.g = g, .S = g->n_params};
    df.zero = kp_expr_const(g, 0);
    df.one = kp_expr_const(g, 1);
    /* The nodes so far, constants included: the derivatives made below come after them. */
    const int32_t n0 = g->n_nodes;
    unsigned char *reach = malloc((size_t)n0 + 1);
    df.d = malloc(((size_t)n0 * df.S + 1) * sizeof *df.d);
    if (!reach || !df.d || g->status != KP_OK) {
        free(reach);
        free(df.d);
        return kp__expr_message(g, KP_ERR_OUT_OF_MEMORY, "differentiation: out of memory");
    }
    kp__expr_reach(g, g->outputs, g->n_outputs, reach);
    /* Operands come before their nodes, so one pass in id order sees every operand first. */
    for (int32_t id = 0; id < n0; id++)
        for (uint32_t s = 0; s < df.S; s++) {
            kp_expr e = df.zero;
            if (reach[id] && (g->nodes[id].depends & (1ull << s)))
                e = rule(&df, id, s);
            df.d[(size_t)id * df.S + s] = e.id;
        }
    for (uint32_t o = 0; o < g->n_outputs; o++)
        for (uint32_t s = 0; s < df.S; s++)
            jac[o * df.S + s] = df.d[(size_t)g->outputs[o] * df.S + s];
    free(reach);
    free(df.d);
    return g->status;
}
