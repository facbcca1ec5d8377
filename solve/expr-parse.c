// SPDX-License-Identifier: Apache-2.0
/* The text form of residuals: a recursive-descent parser onto the graph builders, whose errors
 * give the line, the column and what was expected. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

enum { MAX_LOCALS = 256, MAX_DEPTH = 200 };

typedef struct parser {
    kp_expr_graph *g;
    const char *text, *at;
    int depth;  /* parentheses open: a new line inside them is a space */
    int nested; /* recursion depth, bounded so hostile input cannot exhaust the stack */
    int failed;
    struct {
        const char *name;
        size_t len;
        kp_expr e;
    } locals[MAX_LOCALS];
    int n_locals;
} parser;

static const kp_expr bad = {-1};

static void skip_space(parser *p)
{
    for (;;) {
        while (*p->at == ' ' || *p->at == '\t' || *p->at == '\r' ||
               (*p->at == '\n' && p->depth > 0))
            p->at++;
        if (*p->at != '#')
            return;
        while (*p->at && *p->at != '\n')
            p->at++;
    }
}

/* "name 'q'", "')'", "end of input": what stands at `at`. */
static void describe(const char *at, char *out, size_t size)
{
    if (!*at)
        snprintf(out, size, "end of input");
    else if (*at == '\n')
        snprintf(out, size, "end of line");
    else if (isalpha((unsigned char)*at) || *at == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)at[n]) || at[n] == '_')
            n++;
        snprintf(out, size, "name '%.*s'", (int)(n > 40 ? 40 : n), at);
    } else if (isdigit((unsigned char)*at) || *at == '.') {
        size_t n = strspn(at, "0123456789.eE+-");
        snprintf(out, size, "number '%.*s'", (int)(n > 40 ? 40 : n), at);
    } else if (isprint((unsigned char)*at))
        snprintf(out, size, "'%c'", *at);
    else
        snprintf(out, size, "byte 0x%02x", (unsigned char)*at);
}

/* Fails the parse at `at` (the first failure wins): "L:C: error: ...", the line, a caret. */
static kp_expr fail_at(parser *p, const char *at, const char *fmt, ...) KP_PRINTF(3, 4);
static kp_expr fail_at(parser *p, const char *at, const char *fmt, ...)
{
    if (p->failed)
        return bad;
    p->failed = 1;
    int line = 1;
    const char *start = p->text;
    for (const char *c = p->text; c < at; c++)
        if (*c == '\n') {
            line++;
            start = c + 1;
        }
    int col = (int)(at - start) + 1;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int len = (int)strcspn(start, "\n");
    /* The line shown is cut to 120 columns around the caret. */
    int from = col > 100 ? col - 100 : 0, shown = len - from > 120 ? 120 : len - from;
    char line_text[128];
    for (int i = 0; i < shown; i++) {
        unsigned char ch = (unsigned char)start[from + i];
        line_text[i] = isprint(ch) ? (char)ch : '?';
    }
    line_text[shown] = '\0';
    kp__expr_message(p->g, KP_ERR_INVALID_ARG, "%d:%d: error: %s\n  %s\n  %*s^", line, col, what,
                     line_text, col - 1 - from, "");
    return bad;
}

static kp_expr expected(parser *p, const char *what)
{
    char found[64];
    describe(p->at, found, sizeof found);
    return fail_at(p, p->at, "expected %s, found %s", what, found);
}

static int accept(parser *p, const char *tok)
{
    skip_space(p);
    size_t n = strlen(tok);
    if (strncmp(p->at, tok, n) != 0)
        return 0;
    /* '<' is not the start of '<=', '*' not of '**', '=' not of '=='. */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '=') && p->at[1] == '=')
        return 0;
    if (n == 1 && tok[0] == '*' && p->at[1] == '*')
        return 0;
    p->at += n;
    return 1;
}

static kp_expr expr(parser *p);

static int find_declared(const kp_expr_graph *g, const char *name, size_t len)
{
    for (uint32_t i = 0; i < g->n_params; i++)
        if (strlen(g->param_names[i]) == len && memcmp(g->param_names[i], name, len) == 0)
            return 1;
    for (uint32_t i = 0; i < g->n_data; i++)
        if (strlen(g->data_names[i]) == len && memcmp(g->data_names[i], name, len) == 0)
            return 1;
    return 0;
}

static const char *names_list(char *const *names, uint32_t n, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
    return n ? buf : "none";
}

static kp_expr name_ref(parser *p, const char *name, size_t len)
{
    for (int i = p->n_locals - 1; i >= 0; i--)
        if (p->locals[i].len == len && memcmp(p->locals[i].name, name, len) == 0)
            return p->locals[i].e;
    kp_expr_graph *g = p->g;
    for (uint32_t i = 0; i < g->n_params; i++)
        if (strlen(g->param_names[i]) == len && memcmp(g->param_names[i], name, len) == 0)
            return kp_expr_param(g, g->param_names[i]);
    for (uint32_t i = 0; i < g->n_data; i++)
        if (strlen(g->data_names[i]) == len && memcmp(g->data_names[i], name, len) == 0)
            return kp_expr_data(g, g->data_names[i]);
    if (len == 2 && memcmp(name, "pi", 2) == 0)
        return kp_expr_const(g, 3.14159265358979323846);
    char ps[256], ds[256];
    return fail_at(p, name, "unknown name '%.*s' (parameters: %s; data: %s)",
                   (int)(len > 64 ? 64 : len), name,
                   names_list(g->param_names, g->n_params, ps, sizeof ps),
                   names_list(g->data_names, g->n_data, ds, sizeof ds));
}

static kp_expr call(parser *p, const char *name, size_t len, int32_t op, int helper)
{
    static const int helper_arity[] = {2, 3, 4, 6};
    int want = helper ? (op == KP_EXPR_SELECT ? 3 : helper_arity[op]) : kp__expr_arity(op);
    if (op == KP_EXPR_POWI)
        want = 2;
    kp_expr args[6];
    int n = 0;
    p->depth++;
    skip_space(p);
    if (!accept(p, ")")) {
        do {
            if (n == 6)
                return fail_at(p, p->at, "too many arguments to %.*s", (int)len, name);
            args[n++] = expr(p);
            if (p->failed)
                return bad;
        } while (accept(p, ","));
        if (!accept(p, ")"))
            return expected(p, "',' or ')'");
    }
    p->depth--;
    if (n != want)
        return fail_at(p, name, "%.*s takes %d argument%s, got %d", (int)len, name, want,
                       want == 1 ? "" : "s", n);
    kp_expr_graph *g = p->g;
    if (helper && op != KP_EXPR_SELECT) {
        int dim = op == 0 || op == 2 ? 2 : 3;
        return op < 2 ? kp_expr_norm(g, (size_t)dim, args)
                      : kp_expr_dot(g, (size_t)dim, args, args + dim);
    }
    if (op == KP_EXPR_SELECT)
        return kp_expr_select(g, args[0], args[1], args[2]);
    if (op == KP_EXPR_POWI) {
        const kp__node *e = &g->nodes[args[1].id];
        if (e->op != KP_EXPR_CONST || e->v != floor(e->v) || fabs(e->v) > 1 << 20)
            return fail_at(p, name, "powi's exponent must be an integer constant");
        return kp_expr_powi(g, args[0], (int32_t)e->v);
    }
    return want == 1 ? kp_expr_unary(g, op, args[0]) : kp_expr_binary(g, op, args[0], args[1]);
}

static kp_expr primary(parser *p)
{
    skip_space(p);
    const char *start = p->at;
    if (isdigit((unsigned char)*start) || (*start == '.' && isdigit((unsigned char)start[1]))) {
        const char *c = start;
        while (isdigit((unsigned char)*c))
            c++;
        if (*c == '.')
            for (c++; isdigit((unsigned char)*c);)
                c++;
        if ((*c == 'e' || *c == 'E') &&
            (isdigit((unsigned char)c[1]) ||
             ((c[1] == '+' || c[1] == '-') && isdigit((unsigned char)c[2])))) {
            c += 2;
            while (isdigit((unsigned char)*c))
                c++;
        }
        char buf[128];
        size_t n = (size_t)(c - start);
        if (n >= sizeof buf)
            return fail_at(p, start, "number too long");
        memcpy(buf, start, n);
        buf[n] = '\0';
        double v = strtod(buf, NULL);
        if (!isfinite(v))
            return fail_at(p, start, "number '%s' is out of range", buf);
        if (isalpha((unsigned char)*c) || *c == '_')
            return fail_at(p, c, "expected an operator after the number, found '%c'", *c);
        p->at = c;
        return kp_expr_const(p->g, v);
    }
    if (isalpha((unsigned char)*start) || *start == '_') {
        const char *c = start;
        while (isalnum((unsigned char)*c) || *c == '_')
            c++;
        size_t len = (size_t)(c - start);
        p->at = c;
        int helper;
        int32_t op = kp__expr_function(start, len, &helper);
        if (op >= 0 || helper) {
            if (!accept(p, "("))
                return expected(p, "'(' after a function's name");
            return call(p, start, len, op, helper);
        }
        return name_ref(p, start, len);
    }
    if (accept(p, "(")) {
        p->depth++;
        kp_expr e = expr(p);
        if (p->failed)
            return bad;
        if (!accept(p, ")"))
            return expected(p, "')'");
        p->depth--;
        return e;
    }
    return expected(p, "a number, a name, a function or '('");
}

static kp_expr unary(parser *p);

static kp_expr power(parser *p)
{
    kp_expr base = primary(p);
    if (p->failed)
        return bad;
    if (accept(p, "^") || accept(p, "**")) {
        kp_expr e = unary(p);
        return p->failed ? bad : kp_expr_binary(p->g, KP_EXPR_POW, base, e);
    }
    return base;
}

static kp_expr unary(parser *p)
{
    if (++p->nested > MAX_DEPTH)
        return fail_at(p, p->at, "expression nested deeper than %d", MAX_DEPTH);
    kp_expr e;
    if (accept(p, "-")) {
        e = unary(p);
        e = p->failed ? bad : kp_expr_unary(p->g, KP_EXPR_NEG, e);
    } else if (accept(p, "+"))
        e = unary(p);
    else
        e = power(p);
    p->nested--;
    return e;
}

static kp_expr binary_chain(parser *p, kp_expr (*next)(parser *), const char *const *toks,
                            const kp_expr_op *op_of, int n_toks, int once)
{
    kp_expr left = next(p);
    while (!p->failed) {
        int t = 0;
        while (t < n_toks && !accept(p, toks[t]))
            t++;
        if (t == n_toks)
            break;
        kp_expr right = next(p);
        if (p->failed)
            return bad;
        left = kp_expr_binary(p->g, op_of[t], left, right);
        if (once)
            break;
    }
    return p->failed ? bad : left;
}

static kp_expr term(parser *p)
{
    static const char *const toks[] = {"*", "/"};
    static const kp_expr_op o[] = {KP_EXPR_MUL, KP_EXPR_DIV};
    return binary_chain(p, unary, toks, o, 2, 0);
}

static kp_expr sum(parser *p)
{
    static const char *const toks[] = {"+", "-"};
    static const kp_expr_op o[] = {KP_EXPR_ADD, KP_EXPR_SUB};
    return binary_chain(p, term, toks, o, 2, 0);
}

static kp_expr expr(parser *p)
{
    static const char *const toks[] = {"<=", ">=", "==", "!=", "<", ">"};
    static const kp_expr_op o[] = {KP_EXPR_LE, KP_EXPR_GE, KP_EXPR_EQ,
                                   KP_EXPR_NE, KP_EXPR_LT, KP_EXPR_GT};
    if (++p->nested > MAX_DEPTH)
        return fail_at(p, p->at, "expression nested deeper than %d", MAX_DEPTH);
    kp_expr e = binary_chain(p, sum, toks, o, 6, 1);
    p->nested--;
    return e;
}

/* `name =` at p->at (not `name ==`): the local's name, else NULL. */
static const char *assignment(parser *p, size_t *len)
{
    skip_space(p);
    const char *c = p->at;
    if (!(isalpha((unsigned char)*c) || *c == '_'))
        return NULL;
    while (isalnum((unsigned char)*c) || *c == '_')
        c++;
    const char *name_end = c;
    while (*c == ' ' || *c == '\t')
        c++;
    if (*c != '=' || c[1] == '=')
        return NULL;
    *len = (size_t)(name_end - p->at);
    const char *name = p->at;
    p->at = c + 1;
    return name;
}

kp_status kp_expr_parse(kp_expr_graph *g, const char *text)
{
    if (!g || !text)
        return KP_ERR_INVALID_ARG;
    if (g->status != KP_OK)
        return g->status;
    parser *p = calloc(1, sizeof *p);
    if (!p)
        return kp__expr_message(g, KP_ERR_OUT_OF_MEMORY, "kp_expr_parse: out of memory");
    p->g = g;
    p->text = p->at = text;
    int32_t outs[KP_EXPR_MAX_OUTPUTS];
    uint32_t n_outs = 0;
    for (;;) {
        skip_space(p);
        if (!*p->at)
            break;
        if (*p->at == ';' || *p->at == '\n') {
            p->at++;
            continue;
        }
        size_t len = 0;
        const char *stmt = p->at, *local = assignment(p, &len);
        if (local) {
            int helper;
            if (kp__expr_function(local, len, &helper) >= 0 || helper ||
                find_declared(g, local, len))
                fail_at(p, local,
                        "'%.*s' is a function, parameter or data name: a local needs "
                        "another name",
                        (int)(len > 64 ? 64 : len), local);
            else if (p->n_locals == MAX_LOCALS)
                fail_at(p, local, "more than %d local names", MAX_LOCALS);
        }
        kp_expr e = p->failed ? bad : expr(p);
        if (!p->failed && g->status != KP_OK)
            break;
        if (!p->failed) {
            skip_space(p);
            if (*p->at && *p->at != ';' && *p->at != '\n')
                expected(p, local ? "an operator or the end of the definition"
                                  : "an operator or the end of the residual");
        }
        if (p->failed)
            break;
        if (local) {
            p->locals[p->n_locals].name = local;
            p->locals[p->n_locals].len = len;
            p->locals[p->n_locals++].e = e;
        } else if (n_outs + g->n_outputs == KP_EXPR_MAX_OUTPUTS) {
            fail_at(p, stmt, "more than %d residual outputs", KP_EXPR_MAX_OUTPUTS);
            break;
        } else
            outs[n_outs++] = e.id;
    }
    kp_status st = p->failed ? KP_ERR_INVALID_ARG : g->status;
    if (st == KP_OK && n_outs == 0)
        st = kp__expr_message(g, KP_ERR_INVALID_ARG, "1:1: error: expected a residual, found %s",
                              p->n_locals ? "definitions only" : "an empty text");
    if (st == KP_OK)
        for (uint32_t i = 0; i < n_outs; i++)
            g->outputs[g->n_outputs++] = outs[i];
    free(p);
    return st;
}
