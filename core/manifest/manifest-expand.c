/* SPDX-License-Identifier: Apache-2.0 */
/* Expansion of "~", "${VAR}" and "${VAR:-default}" in manifest paths. */
#include "manifest-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 16

/* A growable output string; `oom` sticks so callers check once at the end. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    int oom;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

/* What the recursion carries: the whole input (messages quote it, not the nested default). */
typedef struct expander {
    const char *whole;
    strbuf out;
    char *err;
    int hint;
    int depth; /* of nested defaults: bounded, as each costs a stack frame */
    kp_status status;
} expander;

static int fail(expander *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    x->err = msg;
    x->status = msg ? KP_ERR_MANIFEST : KP_ERR_OUT_OF_MEMORY;
    return -1;
}

static int is_name_char(char c, int first)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

/* getenv for a name that is not NUL-terminated in the input. */
static const char *env_n(const char *name, size_t n)
{
    char buf[256];
    if (n >= sizeof buf)
        return NULL;
    memcpy(buf, name, n);
    buf[n] = '\0';
    return getenv(buf);
}

/* Expands s[0..n) into x->out. A "~" counts only at the start of the input or of a default. */
static int expand(expander *x, const char *s, size_t n)
{
    size_t i = 0;
    if (n > 0 && s[0] == '~' && (n == 1 || s[1] == '/')) {
        const char *home = getenv("HOME");
        if (!home || !*home)
            return fail(x, "environment variable HOME is not set (needed to expand ~ in \"%s\")",
                        x->whole);
        sb_add(&x->out, home, strlen(home));
        i = 1;
    }
    while (i < n) {
        if (s[i] != '$' || i + 1 >= n || s[i + 1] != '{') {
            sb_add(&x->out, s + i, 1);
            i++;
            continue;
        }
        size_t name = i + 2, e = name;
        while (e < n && is_name_char(s[e], e == name))
            e++;
        if (e >= n)
            return fail(x, "unterminated ${ in \"%s\"", x->whole);
        if (e == name)
            return fail(x, "invalid variable name after ${ in \"%s\"", x->whole);
        const char *val = env_n(s + name, e - name);
        if (s[e] == '}') {
            if (!val)
                return fail(x, "environment variable %.*s is not set%s%.*s%s", (int)(e - name),
                            s + name, x->hint ? " (write ${" : "", x->hint ? (int)(e - name) : 0,
                            s + name, x->hint ? ":-default} for a fallback)" : "");
            sb_add(&x->out, val, strlen(val));
            i = e + 1;
            continue;
        }
        if (s[e] != ':' || e + 1 >= n || s[e + 1] != '-') {
            if (e + 1 >= n && s[e] == ':')
                return fail(x, "unterminated ${ in \"%s\"", x->whole);
            return fail(x, "expected } or :- after ${%.*s in \"%s\"", (int)(e - name), s + name,
                        x->whole);
        }
        /* The default may itself hold ${...}, so find the brace that closes this one. */
        size_t d = e + 2, end = d;
        int depth = 1;
        while (end < n) {
            if (s[end] == '$' && end + 1 < n && s[end + 1] == '{') {
                depth++;
                end += 2;
                continue;
            }
            if (s[end] == '}' && --depth == 0)
                break;
            end++;
        }
        if (end >= n)
            return fail(x, "unterminated ${ in \"%s\"", x->whole);
        if (val && *val) {
            sb_add(&x->out, val, strlen(val));
        } else {
            if (++x->depth > MAX_DEPTH)
                return fail(x, "defaults nest more than %d deep in \"%s\"", MAX_DEPTH, x->whole);
            if (expand(x, s + d, end - d) < 0)
                return -1;
            x->depth--;
        }
        i = end + 1;
    }
    return 0;
}

kp_status kp__path_expand_detail(const char *in, char **out, char **err, int hint)
{
    expander x = {.whole = in ? in : "", .hint = hint, .status = KP_OK};
    *out = NULL;
    if (err)
        *err = NULL;
    sb_add(&x.out, "", 0); /* "" expands to "", not NULL */
    if (expand(&x, x.whole, strlen(x.whole)) == 0 && x.out.oom)
        x.status = KP_ERR_OUT_OF_MEMORY;
    if (x.status != KP_OK) {
        free(x.out.s);
        if (err)
            *err = x.err;
        else
            free(x.err);
        return x.status;
    }
    *out = x.out.s;
    return KP_OK;
}

kp_status kp__path_expand(const char *in, char **out, char **err)
{
    return kp__path_expand_detail(in, out, err, 0);
}
