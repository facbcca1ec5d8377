// SPDX-License-Identifier: Apache-2.0
/* Expression graphs: the hash-consed node store, the builders with their simplifications, and
 * the normalized graph's key. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

static const kp_expr invalid = {-1};

kp_status kp__expr_vmessage(kp_expr_graph *g, kp_status st, const char *fmt, va_list ap)
{
    vsnprintf(g->message, sizeof g->message, fmt, ap);
    return st;
}

kp_status kp__expr_message(kp_expr_graph *g, kp_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp__expr_vmessage(g, st, fmt, ap);
    va_end(ap);
    return st;
}

kp_expr kp__expr_fail(kp_expr_graph *g, kp_status st, const char *fmt, ...)
{
    if (g->status == KP_OK) {
        g->status = st;
        va_list ap;
        va_start(ap, fmt);
        kp__expr_vmessage(g, st, fmt, ap);
        va_end(ap);
    }
    return invalid;
}

kp_status kp_expr_graph_create(kp_expr_graph **out)
{
    if (!out)
        return KP_ERR_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? KP_OK : KP_ERR_OUT_OF_MEMORY;
}

void kp_expr_graph_destroy(kp_expr_graph *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_data; i++)
        free(g->data_names[i]);
    for (uint32_t i = 0; i < g->n_params; i++)
        free(g->param_names[i]);
    free(g->nodes);
    free(g->table);
    free(g);
}

kp_status kp_expr_graph_status(const kp_expr_graph *g)
{
    return g ? g->status : KP_ERR_INVALID_ARG;
}

const char *kp_expr_graph_error(const kp_expr_graph *g)
{
    return g ? g->message : "kp_expr_graph_error: NULL graph";
}

static const struct {
    const char *name;
    int arity;
} ops[KP_EXPR_OP_COUNT] = {
    [KP_EXPR_CONST] = {"const", 0},
    [KP_EXPR_DATA] = {"data", 0},
    [KP_EXPR_PARAM] = {"param", 0},
    [KP_EXPR_ADD] = {"+", 2},
    [KP_EXPR_SUB] = {"-", 2},
    [KP_EXPR_MUL] = {"*", 2},
    [KP_EXPR_DIV] = {"/", 2},
    [KP_EXPR_NEG] = {"neg", 1},
    [KP_EXPR_ABS] = {"abs", 1},
    [KP_EXPR_MIN] = {"min", 2},
    [KP_EXPR_MAX] = {"max", 2},
    [KP_EXPR_SELECT] = {"select", 3},
    [KP_EXPR_LT] = {"<", 2},
    [KP_EXPR_LE] = {"<=", 2},
    [KP_EXPR_GT] = {">", 2},
    [KP_EXPR_GE] = {">=", 2},
    [KP_EXPR_EQ] = {"==", 2},
    [KP_EXPR_NE] = {"!=", 2},
    [KP_EXPR_EXP] = {"exp", 1},
    [KP_EXPR_LOG] = {"log", 1},
    [KP_EXPR_SQRT] = {"sqrt", 1},
    [KP_EXPR_RSQRT] = {"rsqrt", 1},
    [KP_EXPR_POW] = {"pow", 2},
    [KP_EXPR_POWI] = {"powi", 1},
    [KP_EXPR_SIN] = {"sin", 1},
    [KP_EXPR_COS] = {"cos", 1},
    [KP_EXPR_TAN] = {"tan", 1},
    [KP_EXPR_ATAN] = {"atan", 1},
    [KP_EXPR_ATAN2] = {"atan2", 2},
    [KP_EXPR_TANH] = {"tanh", 1},
    [KP_EXPR_SIGMOID] = {"sigmoid", 1},
};

const char *kp__expr_op_name(int32_t op)
{
    return op >= 0 && op < KP_EXPR_OP_COUNT ? ops[op].name : "?";
}

int kp__expr_arity(int32_t op)
{
    return op >= 0 && op < KP_EXPR_OP_COUNT ? ops[op].arity : -1;
}

int32_t kp__expr_function(const char *name, size_t len, int *helper)
{
    static const char *const helpers[] = {"norm2", "norm3", "dot2", "dot3", "where"};
    *helper = 0;
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++)
        if (strlen(helpers[i]) == len && memcmp(helpers[i], name, len) == 0) {
            *helper = 1;
            return i == 4 ? KP_EXPR_SELECT : (int32_t)i;
        }
    for (int32_t op = KP_EXPR_NEG; op < KP_EXPR_OP_COUNT; op++)
        if (isalpha((unsigned char)ops[op].name[0]) && strlen(ops[op].name) == len &&
            memcmp(ops[op].name, name, len) == 0)
            return op;
    return -1;
}

double kp__expr_apply(int32_t op, double a, double b, double c, int32_t k)
{
    switch (op) {
    case KP_EXPR_ADD:
        return a + b;
    case KP_EXPR_SUB:
        return a - b;
    case KP_EXPR_MUL:
        return a * b;
    case KP_EXPR_DIV:
        return a / b;
    case KP_EXPR_NEG:
        return -a;
    case KP_EXPR_ABS:
        return fabs(a);
    case KP_EXPR_MIN:
        return a <= b ? a : b;
    case KP_EXPR_MAX:
        return a >= b ? a : b;
    case KP_EXPR_SELECT:
        return a != 0 ? b : c;
    case KP_EXPR_LT:
        return a < b;
    case KP_EXPR_LE:
        return a <= b;
    case KP_EXPR_GT:
        return a > b;
    case KP_EXPR_GE:
        return a >= b;
    case KP_EXPR_EQ:
        return a == b;
    case KP_EXPR_NE:
        return a != b;
    case KP_EXPR_EXP:
        return exp(a);
    case KP_EXPR_LOG:
        return log(a);
    case KP_EXPR_SQRT:
        return sqrt(a);
    case KP_EXPR_RSQRT:
        return a > 0 ? 1.0 / sqrt(a) : 0.0;
    case KP_EXPR_POW: /* exp(b log a), as the kernels compute it, with C's pow where a > 0 */
        return a > 0 ? pow(a, b) : a == 0 ? (b > 0 ? 0.0 : b < 0 ? INFINITY : NAN) : NAN;
    case KP_EXPR_POWI:
        return pow(a, (double)k);
    case KP_EXPR_SIN:
        return sin(a);
    case KP_EXPR_COS:
        return cos(a);
    case KP_EXPR_TAN:
        return tan(a);
    case KP_EXPR_ATAN:
        return atan(a);
    case KP_EXPR_ATAN2:
        return atan2(a, b);
    case KP_EXPR_TANH:
        return tanh(a);
    case KP_EXPR_SIGMOID:
        return 1.0 / (1.0 + exp(-a));
    default:
        return NAN;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

static uint64_t bits(double v)
{
    uint64_t u;
    v = v == 0 ? 0.0 : v; /* -0 and +0 are one constant */
    memcpy(&u, &v, sizeof u);
    return u;
}

static int valid(const kp_expr_graph *g, kp_expr e)
{
    return e.id >= 0 && e.id < g->n_nodes;
}

static int grow_table(kp_expr_graph *g)
{
    uint32_t cap = g->cap_table ? g->cap_table * 2 : 256;
    int32_t *t = malloc(cap * sizeof *t);
    if (!t)
        return 0;
    memset(t, 0xff, cap * sizeof *t);
    for (int32_t id = 0; id < g->n_nodes; id++) {
        uint32_t i = (uint32_t)g->nodes[id].hash & (cap - 1);
        while (t[i] >= 0)
            i = (i + 1) & (cap - 1);
        t[i] = id;
    }
    free(g->table);
    g->table = t;
    g->cap_table = cap;
    return 1;
}

static int same(const kp__node *n, const kp__node *m)
{
    return n->op == m->op && n->a == m->a && n->b == m->b && n->c == m->c && n->k == m->k &&
           bits(n->v) == bits(m->v);
}

/* The node (op, a, b, c, k, v), found or added. */
static kp_expr make(kp_expr_graph *g, int32_t op, int32_t a, int32_t b, int32_t c, int32_t k,
                    double v)
{
    kp__node n = {.op = op, .a = a, .b = b, .c = c, .k = k, .v = v == 0 ? 0.0 : v};
    n.hash = mix(mix(mix((uint64_t)op + 1, (uint64_t)k), bits(n.v)), 0);
    n.depends = op == KP_EXPR_PARAM ? 1ull << k : 0;
    const int32_t kids[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (kids[i] >= 0) {
            n.hash = mix(n.hash, g->nodes[kids[i]].hash);
            /* A condition contributes no derivative. */
            if (!(op == KP_EXPR_SELECT && i == 0))
                n.depends |= g->nodes[kids[i]].depends;
        }
    if (op >= KP_EXPR_LT && op <= KP_EXPR_NE)
        n.depends = 0;
    if ((uint32_t)(g->n_nodes + 1) * 2 > g->cap_table && !grow_table(g))
        return kp__expr_fail(g, KP_ERR_OUT_OF_MEMORY, "expression graph: out of memory");
    uint32_t i = (uint32_t)n.hash & (g->cap_table - 1);
    for (; g->table[i] >= 0; i = (i + 1) & (g->cap_table - 1))
        if (same(&g->nodes[g->table[i]], &n))
            return (kp_expr){g->table[i]};
    if (g->n_nodes == INT32_MAX)
        return kp__expr_fail(g, KP_ERR_OUT_OF_MEMORY, "expression graph: too many nodes");
    if (g->n_nodes == g->cap_nodes) {
        int32_t cap =
            g->cap_nodes ? (g->cap_nodes > INT32_MAX / 2 ? INT32_MAX : g->cap_nodes * 2) : 64;
        kp__node *grown = realloc(g->nodes, (size_t)cap * sizeof *grown);
        if (!grown)
            return kp__expr_fail(g, KP_ERR_OUT_OF_MEMORY, "expression graph: out of memory");
        g->nodes = grown;
        g->cap_nodes = cap;
    }
    g->nodes[g->n_nodes] = n;
    g->table[i] = g->n_nodes;
    return (kp_expr){g->n_nodes++};
}

static int is_const(const kp_expr_graph *g, kp_expr e, double v)
{
    return g->nodes[e.id].op == KP_EXPR_CONST && g->nodes[e.id].v == v;
}

static int constant(const kp_expr_graph *g, kp_expr e)
{
    return g->nodes[e.id].op == KP_EXPR_CONST;
}

kp_expr kp_expr_const(kp_expr_graph *g, double value)
{
    if (!g)
        return invalid;
    if (!isfinite(value))
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "kp_expr_const: %g is not finite", value);
    return make(g, KP_EXPR_CONST, -1, -1, -1, 0, value);
}

static int valid_name(const char *name)
{
    if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return 0;
    for (const char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_')
            return 0;
    return strlen(name) <= 64;
}

static int find_name(char *const *names, uint32_t n, const char *name, size_t len)
{
    for (uint32_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return (int)i;
    return -1;
}

static kp_expr leaf(kp_expr_graph *g, int is_param, const char *name)
{
    const char *fn = is_param ? "kp_expr_param" : "kp_expr_data";
    int helper;
    if (!g)
        return invalid;
    if (!valid_name(name))
        return kp__expr_fail(g, KP_ERR_INVALID_ARG,
                             "%s: \"%s\" is not a name (letters, digits and '_', at most 64)", fn,
                             name ? name : "(null)");
    size_t len = strlen(name);
    if (kp__expr_function(name, len, &helper) >= 0)
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "%s: \"%s\" is the name of a function", fn,
                             name);
    char **own = is_param ? g->param_names : g->data_names;
    char **other = is_param ? g->data_names : g->param_names;
    uint32_t *n = is_param ? &g->n_params : &g->n_data;
    if (find_name(other, is_param ? g->n_data : g->n_params, name, len) >= 0)
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "%s: \"%s\" is already declared as %s", fn,
                             name, is_param ? "data" : "a parameter");
    int slot = find_name(own, *n, name, len);
    if (slot < 0) {
        if (*n == KP_EXPR_MAX_SLOTS)
            return kp__expr_fail(g, KP_ERR_INVALID_ARG, "%s: \"%s\": at most %d %s slots", fn, name,
                                 KP_EXPR_MAX_SLOTS, is_param ? "parameter" : "data");
        char *copy = malloc(len + 1);
        if (!copy)
            return kp__expr_fail(g, KP_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        memcpy(copy, name, len + 1);
        kp_expr e = make(g, is_param ? KP_EXPR_PARAM : KP_EXPR_DATA, -1, -1, -1, (int32_t)*n, 0);
        if (e.id < 0) {
            free(copy);
            return e;
        }
        own[*n] = copy;
        slot = (int)(*n)++;
    }
    return make(g, is_param ? KP_EXPR_PARAM : KP_EXPR_DATA, -1, -1, -1, slot, 0);
}

kp_expr kp_expr_data(kp_expr_graph *g, const char *name)
{
    return leaf(g, 0, name);
}

kp_expr kp_expr_param(kp_expr_graph *g, const char *name)
{
    return leaf(g, 1, name);
}

kp_status kp_expr_declare(kp_expr_graph *g, int is_param, const char *names)
{
    if (!g || !names)
        return KP_ERR_INVALID_ARG;
    char name[80];
    for (const char *c = names; *c;) {
        while (*c == ',' || isspace((unsigned char)*c))
            c++;
        size_t len = strcspn(c, ", \t\r\n");
        if (!len)
            break;
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name - 1 ? len : sizeof name - 1),
                 c);
        if (leaf(g, is_param, name).id < 0)
            return g->status;
        c += len;
    }
    return KP_OK;
}

static kp_expr check_operands(kp_expr_graph *g, const char *fn, int n, const kp_expr *e)
{
    if (g->status != KP_OK)
        return invalid;
    for (int i = 0; i < n; i++)
        if (!valid(g, e[i]))
            return kp__expr_fail(g, KP_ERR_INVALID_ARG,
                                 "%s: operand %d is not a node of this graph", fn, i + 1);
    return (kp_expr){0};
}

static kp_expr fold(kp_expr_graph *g, int32_t op, kp_expr a, kp_expr b, kp_expr c, int32_t k)
{
    double v = kp__expr_apply(op, g->nodes[a.id].v, b.id >= 0 ? g->nodes[b.id].v : 0,
                              c.id >= 0 ? g->nodes[c.id].v : 0, k);
    /* What overflows or is undefined stays an operation, so the run reports it where it
     * happens. */
    return isfinite(v) ? make(g, KP_EXPR_CONST, -1, -1, -1, 0, v)
                       : make(g, op, a.id, b.id, c.id, k, 0);
}

kp_expr kp_expr_unary(kp_expr_graph *g, kp_expr_op op, kp_expr a)
{
    if (!g)
        return invalid;
    if (kp__expr_arity(op) != 1 || op == KP_EXPR_POWI)
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "kp_expr_unary: %s is not a unary operation",
                             kp__expr_op_name(op));
    if (check_operands(g, "kp_expr_unary", 1, &a).id < 0)
        return invalid;
    if (constant(g, a))
        return fold(g, op, a, invalid, invalid, 0);
    if (op == KP_EXPR_NEG && g->nodes[a.id].op == KP_EXPR_NEG)
        return (kp_expr){g->nodes[a.id].a};
    return make(g, op, a.id, -1, -1, 0, 0);
}

static int commutative(int32_t op)
{
    return op == KP_EXPR_ADD || op == KP_EXPR_MUL || op == KP_EXPR_MIN || op == KP_EXPR_MAX ||
           op == KP_EXPR_EQ || op == KP_EXPR_NE;
}

kp_expr kp_expr_binary(kp_expr_graph *g, kp_expr_op op, kp_expr a, kp_expr b)
{
    if (!g)
        return invalid;
    if (kp__expr_arity(op) != 2)
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "kp_expr_binary: %s is not a binary operation",
                             kp__expr_op_name(op));
    const kp_expr ab[2] = {a, b};
    if (check_operands(g, "kp_expr_binary", 2, ab).id < 0)
        return invalid;
    if (constant(g, a) && constant(g, b))
        return fold(g, op, a, b, invalid, 0);
    switch (op) {
    case KP_EXPR_ADD:
        if (is_const(g, a, 0))
            return b;
        if (is_const(g, b, 0))
            return a;
        break;
    case KP_EXPR_SUB:
        if (is_const(g, b, 0))
            return a;
        if (is_const(g, a, 0))
            return kp_expr_unary(g, KP_EXPR_NEG, b);
        break;
    case KP_EXPR_MUL:
        if (is_const(g, a, 0) || is_const(g, b, 0))
            return kp_expr_const(g, 0);
        if (is_const(g, a, 1))
            return b;
        if (is_const(g, b, 1))
            return a;
        if (is_const(g, a, -1))
            return kp_expr_unary(g, KP_EXPR_NEG, b);
        if (is_const(g, b, -1))
            return kp_expr_unary(g, KP_EXPR_NEG, a);
        break;
    case KP_EXPR_DIV:
        if (is_const(g, b, 1))
            return a;
        if (is_const(g, a, 0))
            return a;
        break;
    default:
        break;
    }
    /* Negation moves out of products and quotients, so -a*b, -(a*b) and a*-b are one node. */
    if (op == KP_EXPR_MUL || op == KP_EXPR_DIV) {
        const int na = g->nodes[a.id].op == KP_EXPR_NEG, nb = g->nodes[b.id].op == KP_EXPR_NEG;
        if (na || nb) {
            kp_expr inner = kp_expr_binary(g, op, na ? (kp_expr){g->nodes[a.id].a} : a,
                                           nb ? (kp_expr){g->nodes[b.id].a} : b);
            return na && nb ? inner : kp_expr_unary(g, KP_EXPR_NEG, inner);
        }
    }
    switch (op) {
    case KP_EXPR_POW: {
        double e = constant(g, b) ? g->nodes[b.id].v : 0.5;
        if (e == floor(e) && fabs(e) <= 64)
            return kp_expr_powi(g, a, (int32_t)e);
        break;
    }
    default:
        break;
    }
    /* Commutative operands in a fixed order (by structure), so a*b and b*a are one node. */
    if (commutative(op) && (g->nodes[a.id].hash > g->nodes[b.id].hash ||
                            (g->nodes[a.id].hash == g->nodes[b.id].hash && a.id > b.id))) {
        kp_expr t = a;
        a = b;
        b = t;
    }
    return make(g, op, a.id, b.id, -1, 0, 0);
}

kp_expr kp_expr_select(kp_expr_graph *g, kp_expr cond, kp_expr a, kp_expr b)
{
    if (!g)
        return invalid;
    const kp_expr abc[3] = {cond, a, b};
    if (check_operands(g, "kp_expr_select", 3, abc).id < 0)
        return invalid;
    if (constant(g, cond))
        return g->nodes[cond.id].v != 0 ? a : b;
    if (a.id == b.id)
        return a;
    return make(g, KP_EXPR_SELECT, cond.id, a.id, b.id, 0, 0);
}

kp_expr kp_expr_powi(kp_expr_graph *g, kp_expr a, int32_t n)
{
    if (!g)
        return invalid;
    if (check_operands(g, "kp_expr_powi", 1, &a).id < 0)
        return invalid;
    if (n == 0)
        return kp_expr_const(g, 1);
    if (n == 1)
        return a;
    if (constant(g, a))
        return fold(g, KP_EXPR_POWI, a, invalid, invalid, n);
    return make(g, KP_EXPR_POWI, a.id, -1, -1, n, 0);
}

kp_expr kp_expr_dot(kp_expr_graph *g, size_t n, const kp_expr *a, const kp_expr *b)
{
    if (!g)
        return invalid;
    if (n == 0 || !a || !b)
        return kp__expr_fail(g, KP_ERR_INVALID_ARG, "kp_expr_dot: empty vector");
    kp_expr s = kp_expr_binary(g, KP_EXPR_MUL, a[0], b[0]);
    for (size_t i = 1; i < n; i++)
        s = kp_expr_binary(g, KP_EXPR_ADD, s, kp_expr_binary(g, KP_EXPR_MUL, a[i], b[i]));
    return s;
}

kp_expr kp_expr_norm(kp_expr_graph *g, size_t n, const kp_expr *a)
{
    return kp_expr_unary(g, KP_EXPR_SQRT, kp_expr_dot(g, n, a, a));
}

void kp_expr_cross(kp_expr_graph *g, const kp_expr a[3], const kp_expr b[3], kp_expr out[3])
{
    if (!out)
        return;
    if (!g || !a || !b) {
        out[0] = out[1] = out[2] =
            g ? kp__expr_fail(g, KP_ERR_INVALID_ARG, "kp_expr_cross: NULL vector") : invalid;
        return;
    }
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, k = (i + 2) % 3;
        out[i] = kp_expr_binary(g, KP_EXPR_SUB, kp_expr_binary(g, KP_EXPR_MUL, a[j], b[k]),
                                kp_expr_binary(g, KP_EXPR_MUL, a[k], b[j]));
    }
}

void kp_expr_normalize(kp_expr_graph *g, size_t n, const kp_expr *a, kp_expr *out)
{
    if (!out)
        return;
    kp_expr inv = kp_expr_unary(g, KP_EXPR_RSQRT, kp_expr_dot(g, n, a, a));
    for (size_t i = 0; i < n; i++)
        out[i] = kp_expr_binary(g, KP_EXPR_MUL, a ? a[i] : invalid, inv);
}

kp_status kp_expr_graph_output(kp_expr_graph *g, kp_expr e)
{
    if (!g)
        return KP_ERR_INVALID_ARG;
    if (g->status != KP_OK)
        return g->status;
    if (!valid(g, e))
        return kp__expr_fail(g, KP_ERR_INVALID_ARG,
                             "kp_expr_graph_output: not a node of this graph"),
               g->status;
    if (g->n_outputs == KP_EXPR_MAX_OUTPUTS)
        return kp__expr_message(g, KP_ERR_INVALID_ARG, "kp_expr_graph_output: at most %d outputs",
                                KP_EXPR_MAX_OUTPUTS);
    g->outputs[g->n_outputs++] = e.id;
    return KP_OK;
}

int32_t kp__expr_reach(const kp_expr_graph *g, const int32_t *roots, uint32_t n_roots,
                       unsigned char *reach)
{
    memset(reach, 0, (size_t)g->n_nodes);
    for (uint32_t i = 0; i < n_roots; i++)
        reach[roots[i]] = 1;
    int32_t count = 0;
    /* Operands have smaller ids than their node, so one pass from the top marks everything. */
    for (int32_t id = g->n_nodes - 1; id >= 0; id--) {
        if (!reach[id])
            continue;
        count++;
        const kp__node *n = &g->nodes[id];
        if (n->a >= 0)
            reach[n->a] = 1;
        if (n->b >= 0)
            reach[n->b] = 1;
        if (n->c >= 0)
            reach[n->c] = 1;
    }
    return count;
}

uint64_t kp__expr_key(const kp_expr_graph *g)
{
    uint64_t h = mix(mix(mix(0x6b70736f6c7665ull, g->n_data), g->n_params), g->n_outputs);
    for (uint32_t o = 0; o < g->n_outputs; o++)
        h = mix(h, g->nodes[g->outputs[o]].hash);
    return h;
}

kp_status kp_expr_graph_get_info(const kp_expr_graph *g, kp_expr_graph_info *out)
{
    if (!g || !out || out->struct_size < sizeof *out)
        return KP_ERR_INVALID_ARG;
    out->n_data = g->n_data;
    out->n_params = g->n_params;
    out->n_outputs = g->n_outputs;
    out->n_nodes = 0;
    if (g->n_nodes) {
        unsigned char *reach = malloc((size_t)g->n_nodes);
        if (!reach)
            return KP_ERR_OUT_OF_MEMORY;
        out->n_nodes = (uint32_t)kp__expr_reach(g, g->outputs, g->n_outputs, reach);
        free(reach);
    }
    out->key = kp__expr_key(g);
    return KP_OK;
}

const char *kp_expr_data_name(const kp_expr_graph *g, uint32_t index)
{
    return g && index < g->n_data ? g->data_names[index] : NULL;
}

const char *kp_expr_param_name(const kp_expr_graph *g, uint32_t index)
{
    return g && index < g->n_params ? g->param_names[index] : NULL;
}

kp_expr_graph *kp__expr_graph_copy(const kp_expr_graph *g)
{
    kp_expr_graph *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *g;
    c->nodes = NULL;
    c->table = NULL;
    c->n_data = c->n_params = 0;
    if (!g->n_nodes)
        c->cap_nodes = 0, c->cap_table = 0;
    int ok = 1;
    if (g->n_nodes) {
        c->nodes = malloc((size_t)g->cap_nodes * sizeof *c->nodes);
        c->table = malloc(g->cap_table * sizeof *c->table);
        ok = c->nodes && c->table;
        if (ok) {
            memcpy(c->nodes, g->nodes, (size_t)g->n_nodes * sizeof *c->nodes);
            memcpy(c->table, g->table, g->cap_table * sizeof *c->table);
        }
    }
    for (uint32_t i = 0; ok && i < g->n_data; i++, c->n_data++)
        ok = (c->data_names[i] = strdup(g->data_names[i])) != NULL;
    for (uint32_t i = 0; ok && i < g->n_params; i++, c->n_params++)
        ok = (c->param_names[i] = strdup(g->param_names[i])) != NULL;
    if (!ok) {
        kp_expr_graph_destroy(c);
        return NULL;
    }
    return c;
}
