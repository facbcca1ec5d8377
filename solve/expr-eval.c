// SPDX-License-Identifier: Apache-2.0
/* The host reference: a graph interpreted in double with forward-mode derivatives (dual
 * numbers), independent of the symbolic derivatives the code generator emits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

/* d op / d a and d op / d b at (a, b), v being op's value there. */
static void partials(const kp__node *n, double a, double b, double v, double *pa, double *pb)
{
    *pa = *pb = 0;
    switch (n->op) {
    case KP_EXPR_ADD:
        *pa = 1, *pb = 1;
        break;
    case KP_EXPR_SUB:
        *pa = 1, *pb = -1;
        break;
    case KP_EXPR_MUL:
        *pa = b, *pb = a;
        break;
    case KP_EXPR_DIV:
        *pa = 1 / b, *pb = -v / b;
        break;
    case KP_EXPR_NEG:
        *pa = -1;
        break;
    case KP_EXPR_ABS:
        *pa = a >= 0 ? 1 : -1;
        break;
    case KP_EXPR_MIN:
        *(a <= b ? pa : pb) = 1;
        break;
    case KP_EXPR_MAX:
        *(a >= b ? pa : pb) = 1;
        break;
    case KP_EXPR_EXP:
        *pa = v;
        break;
    case KP_EXPR_LOG:
        *pa = 1 / a;
        break;
    case KP_EXPR_SQRT:
        *pa = 0.5 / v;
        break;
    case KP_EXPR_RSQRT:
        *pa = -0.5 * v * v * v;
        break;
    case KP_EXPR_POW:
        *pa = b * pow(a, b - 1);
        *pb = v * log(a);
        break;
    case KP_EXPR_POWI:
        *pa = n->k * pow(a, n->k - 1);
        break;
    case KP_EXPR_SIN:
        *pa = cos(a);
        break;
    case KP_EXPR_COS:
        *pa = -sin(a);
        break;
    case KP_EXPR_TAN:
        *pa = 1 + v * v;
        break;
    case KP_EXPR_ATAN:
        *pa = 1 / (1 + a * a);
        break;
    case KP_EXPR_ATAN2: /* atan2(y = a, x = b) */
        *pa = b / (a * a + b * b), *pb = -a / (a * a + b * b);
        break;
    case KP_EXPR_TANH:
        *pa = 1 - v * v;
        break;
    case KP_EXPR_SIGMOID:
        *pa = v * (1 - v);
        break;
    default:
        break;
    }
}

void kp__expr_eval(const kp_expr_graph *g, const double *data, const double *params, double *r,
                   double *jac, double *scratch)
{
    const uint32_t np = g->n_params;
    int32_t top = 0;
    for (uint32_t o = 0; o < g->n_outputs; o++)
        top = g->outputs[o] > top ? g->outputs[o] : top;
    double *val = scratch, *dot = scratch + top + 1;
    for (int32_t id = 0; id <= top; id++) {
        const kp__node *n = &g->nodes[id];
        double *d = dot + (size_t)id * np;
        memset(d, 0, np * sizeof *d);
        const double a = n->a >= 0 ? val[n->a] : 0, b = n->b >= 0 ? val[n->b] : 0;
        switch (n->op) {
        case KP_EXPR_CONST:
            val[id] = n->v;
            continue;
        case KP_EXPR_DATA:
            val[id] = data[n->k];
            continue;
        case KP_EXPR_PARAM:
            val[id] = params[n->k];
            d[n->k] = 1;
            continue;
        case KP_EXPR_SELECT: {
            int32_t pick = a != 0 ? n->b : n->c;
            val[id] = val[pick];
            memcpy(d, dot + (size_t)pick * np, np * sizeof *d);
            continue;
        }
        default:
            break;
        }
        const double v = kp__expr_apply(n->op, a, b, 0, n->k);
        val[id] = v;
        if (!n->depends)
            continue;
        double pa, pb;
        partials(n, a, b, v, &pa, &pb);
        /* Only the slots an operand depends on: elsewhere its derivative is exactly zero, and a
         * partial that is infinite must not turn that zero into a NaN. */
        for (uint32_t s = 0; s < np; s++) {
            const uint64_t bit = 1ull << s;
            double t = 0;
            if (n->a >= 0 && (g->nodes[n->a].depends & bit))
                t += pa * dot[(size_t)n->a * np + s];
            if (n->b >= 0 && (g->nodes[n->b].depends & bit))
                t += pb * dot[(size_t)n->b * np + s];
            d[s] = t;
        }
    }
    for (uint32_t o = 0; o < g->n_outputs; o++) {
        r[o] = val[g->outputs[o]];
        if (jac)
            memcpy(jac + (size_t)o * np, dot + (size_t)g->outputs[o] * np, np * sizeof *jac);
    }
}

kp_status kp_expr_graph_eval(const kp_expr_graph *g, const double *data, const double *params,
                             double *r, double *jac)
{
    if (!g || !r || (!data && g->n_data) || (!params && g->n_params))
        return KP_ERR_INVALID_ARG;
    if (g->status != KP_OK || g->n_outputs == 0)
        return KP_ERR_INVALID_ARG;
    int32_t top = 0;
    for (uint32_t o = 0; o < g->n_outputs; o++)
        top = g->outputs[o] > top ? g->outputs[o] : top;
    double *scratch = malloc((size_t)(top + 1) * (1 + g->n_params) * sizeof *scratch);
    if (!scratch)
        return KP_ERR_OUT_OF_MEMORY;
    kp__expr_eval(g, data, params, r, jac, scratch);
    free(scratch);
    return KP_OK;
}
