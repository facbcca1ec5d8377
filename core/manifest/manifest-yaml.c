/* SPDX-License-Identifier: Apache-2.0 */
/* A table-driven walker over libyaml's document tree, with file:line:col errors and YAML paths. */
#include "manifest-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Aliases can expand a few lines into millions of nodes; a real manifest is far below this. */
#define MAX_NODES 1000000

/* ---- messages ---------------------------------------------------------------------------- */

/* Builds the whole message once, so a failure leaves exactly one string (or none when memory
 * ran out). Only the first error is kept: handlers stop at it. */
static int record(kp__yaml *c, size_t line0, size_t col0, const char *where, char *msg)
{
    if (c->status != KP_OK) {
        free(msg);
        return -1;
    }
    if (!msg)
        return kp__yaml_oom(c);
    const char *p = c->text, *end = c->text + c->len;
    for (size_t l = 0; l < line0 && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
        eol = end;
    if (eol > p && eol[-1] == '\r')
        eol--;
    /* The caret line copies the source's tabs, so the caret lands under the column whatever the
     * terminal's tab width; libyaml counts columns in characters, not bytes. */
    char *pad = malloc(col0 + 1);
    if (!pad) {
        free(msg);
        return kp__yaml_oom(c);
    }
    const char *q = p;
    for (size_t i = 0; i < col0; i++) {
        pad[i] = q < eol && *q == '\t' ? '\t' : ' ';
        if (q < eol)
            for (q++; q < eol && ((unsigned char)*q & 0xC0) == 0x80; q++)
                ;
    }
    pad[col0] = '\0';
    char *err = NULL;
    if (asprintf(&err, "%s:%zu:%zu: error: %s: %s\n  %.*s\n  %s^", c->file, line0 + 1, col0 + 1,
                 where, msg, (int)(eol - p), p, pad) < 0)
        err = NULL;
    free(pad);
    free(msg);
    if (!err)
        return kp__yaml_oom(c);
    c->err = err;
    c->status = KP_ERR_MANIFEST;
    return -1;
}

static int vfail(kp__yaml *c, yaml_mark_t mark, const char *fmt, va_list ap)
{
    if (c->path_oom)
        return kp__yaml_oom(c);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    return record(c, mark.line, mark.column, c->path_len ? c->path : "(top level)", msg);
}

int kp__yaml_fail(kp__yaml *c, const yaml_node_t *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(c, node->start_mark, fmt, ap);
    va_end(ap);
    return r;
}

int kp__yaml_fail_at(kp__yaml *c, yaml_mark_t mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfail(c, mark, fmt, ap);
    va_end(ap);
    return r;
}

int kp__yaml_oom(kp__yaml *c)
{
    if (c->status != KP_OK)
        return -1;
    c->status = KP_ERR_OUT_OF_MEMORY;
    if (asprintf(&c->err, "%s: error: out of memory", c->file) < 0)
        c->err = NULL;
    return -1;
}

kp__yaml_shown kp__yaml_show(const char *s)
{
    kp__yaml_shown out;
    const size_t soft = 80, hard = sizeof out.s - 9; /* room for an escape, "...", '"', NUL */
    size_t n = 0;
    out.s[n++] = '"';
    /* Cut only before a character's first byte, so the message stays valid UTF-8. */
    for (; *s && n < hard && (n < soft || ((unsigned char)*s & 0xC0) == 0x80); s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out.s[n++] = '\\';
            out.s[n++] = (char)ch;
        } else if (ch == '\n' || ch == '\t') {
            out.s[n++] = '\\';
            out.s[n++] = ch == '\n' ? 'n' : 't';
        } else if (ch < 0x20 || ch == 0x7f) {
            n += (size_t)snprintf(out.s + n, 5, "\\x%02x", ch);
        } else {
            out.s[n++] = (char)ch;
        }
    }
    if (*s) {
        memcpy(out.s + n, "...", 3);
        n += 3;
    }
    out.s[n++] = '"';
    out.s[n] = '\0';
    return out;
}

kp__yaml_shown kp__yaml_describe(const yaml_node_t *node)
{
    kp__yaml_shown out;
    if (node->type == YAML_MAPPING_NODE)
        snprintf(out.s, sizeof out.s, "a mapping");
    else if (node->type == YAML_SEQUENCE_NODE)
        snprintf(out.s, sizeof out.s, "a sequence");
    else if (kp__yaml_is_null(node))
        snprintf(out.s, sizeof out.s, "null");
    else
        return kp__yaml_show(kp__yaml_text(node));
    return out;
}

/* ---- scalars ----------------------------------------------------------------------------- */

const char *kp__yaml_text(const yaml_node_t *scalar)
{
    return (const char *)scalar->data.scalar.value;
}

int kp__yaml_is_null(const yaml_node_t *node)
{
    if (node->type != YAML_SCALAR_NODE)
        return 0;
    if (node->tag && strcmp((const char *)node->tag, YAML_NULL_TAG) == 0)
        return 1;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *s = kp__yaml_text(node);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int digit(char ch, unsigned base)
{
    unsigned d;
    if (ch >= '0' && ch <= '9')
        d = (unsigned)(ch - '0');
    else if (ch >= 'a' && ch <= 'f')
        d = (unsigned)(ch - 'a' + 10);
    else if (ch >= 'A' && ch <= 'F')
        d = (unsigned)(ch - 'A' + 10);
    else
        return -1;
    return d < base ? (int)d : -1;
}

int kp__yaml_parse_int(const char *s, int64_t *out)
{
    int neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s)
        return 0;
    uint64_t v = 0;
    int overflow = 0;
    /* Read every character first: "99999999999999999999x" is text, not an overflow. */
    for (; *s; s++) {
        int d = digit(*s, base);
        if (d < 0)
            return 0;
        if (v > (UINT64_MAX - (unsigned)d) / base)
            overflow = 1;
        else
            v = v * base + (unsigned)d;
    }
    if (overflow || v > (uint64_t)INT64_MAX + (unsigned)neg)
        return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 1;
}

int kp__yaml_parse_bool(const char *s, int *out)
{
    static const char *const words[] = {"false", "no", "off", "true", "yes", "on"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasecmp(s, words[i]) == 0) {
            *out = i >= 3;
            return 1;
        }
    return 0;
}

/* ---- the path ---------------------------------------------------------------------------- */

static void path_add(kp__yaml *c, const char *s, size_t n)
{
    if (c->path_len + n + 1 > c->path_cap) {
        size_t cap = c->path_cap ? c->path_cap * 2 : 128;
        while (cap < c->path_len + n + 1)
            cap *= 2;
        char *p = realloc(c->path, cap);
        if (!p) {
            c->path_oom = 1;
            return;
        }
        c->path = p;
        c->path_cap = cap;
    }
    memcpy(c->path + c->path_len, s, n);
    c->path_len += n;
    c->path[c->path_len] = '\0';
}

size_t kp__yaml_path_key(kp__yaml *c, const char *key)
{
    size_t saved = c->path_len;
    /* `tuning[0].kernels.example.axpy` would read as four keys, so such keys get brackets. */
    if (*key && !strpbrk(key, ".[]\"\\ \t\n")) {
        if (c->path_len)
            path_add(c, ".", 1);
        path_add(c, key, strlen(key));
        return saved;
    }
    path_add(c, "[\"", 2);
    for (; *key; key++) {
        if (*key == '"' || *key == '\\')
            path_add(c, "\\", 1);
        path_add(c, key, 1);
    }
    path_add(c, "\"]", 2);
    return saved;
}

size_t kp__yaml_path_index(kp__yaml *c, size_t index)
{
    size_t saved = c->path_len;
    char buf[32];
    int n = snprintf(buf, sizeof buf, "[%zu]", index);
    path_add(c, buf, (size_t)n);
    return saved;
}

void kp__yaml_path_pop(kp__yaml *c, size_t saved)
{
    if (saved <= c->path_len && c->path) {
        c->path_len = saved;
        c->path[saved] = '\0';
    }
}

/* ---- walking ----------------------------------------------------------------------------- */

static int spend(kp__yaml *c, const yaml_node_t *node, size_t n)
{
    if (n > c->budget)
        return kp__yaml_fail(c, node, "the document is too large (over %d nodes with aliases)",
                             MAX_NODES);
    c->budget -= n;
    return 0;
}

static yaml_node_t *node_at(kp__yaml *c, int index)
{
    return yaml_document_get_node(&c->doc, index);
}

/* A scalar with an embedded NUL ("\0" in double quotes) would be silently cut as a C string. */
static int check_nul(kp__yaml *c, const yaml_node_t *node)
{
    if (strlen(kp__yaml_text(node)) == node->data.scalar.length)
        return 0;
    return kp__yaml_fail(c, node, "a NUL character is not allowed here");
}

typedef struct key_ref {
    const char *text;
    size_t order;
    yaml_node_t *node;
} key_ref;

static int key_cmp(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int r = strcmp(x->text, y->text);
    return r ? r : (x->order > y->order) - (x->order < y->order);
}

int kp__yaml_check_keys(kp__yaml *c, yaml_node_t *map)
{
    yaml_node_pair_t *pairs = map->data.mapping.pairs.start;
    size_t n = (size_t)(map->data.mapping.pairs.top - pairs);
    if (spend(c, map, n) < 0)
        return -1;
    if (n == 0)
        return 0;
    key_ref *keys = malloc(n * sizeof *keys);
    if (!keys)
        return kp__yaml_oom(c);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *key = node_at(c, pairs[i].key);
        if (key->type != YAML_SCALAR_NODE || kp__yaml_is_null(key)) {
            free(keys);
            return kp__yaml_fail(c, key, "expected a string key, got %s", kp__yaml_describe(key).s);
        }
        if (check_nul(c, key) < 0) {
            free(keys);
            return -1;
        }
        keys[i] = (key_ref){kp__yaml_text(key), i, key};
    }
    /* Sorted, a duplicate sits next to its first use; report the one that comes first in the
     * file, as a reader going down it would meet them. */
    qsort(keys, n, sizeof *keys, key_cmp);
    const key_ref *dup = NULL, *first = NULL;
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i].text, keys[i - 1].text) == 0 &&
            (i < 2 || strcmp(keys[i - 1].text, keys[i - 2].text) != 0) &&
            (!dup || keys[i].order < dup->order)) {
            dup = &keys[i];
            first = &keys[i - 1];
        }
    int r = 0;
    if (dup) {
        size_t saved = kp__yaml_path_key(c, dup->text);
        r = kp__yaml_fail(c, dup->node, "duplicate key %s (first at %zu:%zu)",
                          kp__yaml_show(dup->text).s, first->node->start_mark.line + 1,
                          first->node->start_mark.column + 1);
        kp__yaml_path_pop(c, saved);
    }
    free(keys);
    return r;
}

static const char *const kind_names[] = {"a mapping", "a sequence", "a string", "an integer",
                                         "a boolean"};

static int check_kind(kp__yaml *c, yaml_node_t *node, kp__yaml_kind kind, kp__yaml_value *v)
{
    const char *want = kind_names[kind];
    if (kind == KP__YAML_MAPPING || kind == KP__YAML_SEQUENCE) {
        yaml_node_type_t type = kind == KP__YAML_MAPPING ? YAML_MAPPING_NODE : YAML_SEQUENCE_NODE;
        if (node->type == type)
            return 0;
        if (node->type == YAML_SCALAR_NODE && !kp__yaml_is_null(node))
            return kp__yaml_fail(c, node, "expected %s, got a scalar", want);
        return kp__yaml_fail(c, node, "expected %s, got %s", want, kp__yaml_describe(node).s);
    }
    if (node->type != YAML_SCALAR_NODE || kp__yaml_is_null(node))
        return kp__yaml_fail(c, node, "expected %s, got %s", want, kp__yaml_describe(node).s);
    if (check_nul(c, node) < 0)
        return -1;
    const char *s = kp__yaml_text(node);
    int plain = node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE, looks, b = 0;
    v->s = s;
    if (kind == KP__YAML_STRING)
        return 0;
    if (kind == KP__YAML_INT) {
        looks = kp__yaml_parse_int(s, &v->i);
        if (looks < 0)
            return kp__yaml_fail(c, node, "integer %s is out of range (int64)", s);
    } else {
        looks = kp__yaml_parse_bool(s, &b);
        v->i = b;
    }
    if (looks && plain)
        return 0;
    /* In YAML a quoted 64 is the string "64"; say so rather than a puzzling "got \"64\"". */
    if (looks)
        return kp__yaml_fail(c, node, "expected %s, got the string %s (drop the quotes)", want,
                             kp__yaml_show(s).s);
    return kp__yaml_fail(c, node, "expected %s, got %s", want, kp__yaml_show(s).s);
}

static int handle(kp__yaml *c, yaml_node_t *node, kp__yaml_kind kind, kp__yaml_handler fn,
                  void *obj)
{
    kp__yaml_value v = {0};
    if (check_kind(c, node, kind, &v) < 0)
        return -1;
    return fn(c, node, &v, obj);
}

static const kp__yaml_field *find_field(const kp__yaml_field *fields, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(fields[i].key, key) == 0)
            return &fields[i];
    return NULL;
}

static yaml_node_t *find_value(kp__yaml *c, yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++)
        if (strcmp(kp__yaml_text(node_at(c, p->key)), key) == 0)
            return node_at(c, p->value);
    return NULL;
}

static int missing(kp__yaml *c, yaml_node_t *map, const kp__yaml_field *f)
{
    return kp__yaml_fail(c, map, "missing key \"%s\" (%s)", f->key, f->required);
}

int kp__yaml_walk_mapping(kp__yaml *c, yaml_node_t *map, const kp__yaml_field *fields,
                          size_t n_fields, void *obj)
{
    if (kp__yaml_check_keys(c, map) < 0)
        return -1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = node_at(c, p->key);
        const char *name = kp__yaml_text(key);
        const kp__yaml_field *f = find_field(fields, n_fields, name);
        size_t saved = kp__yaml_path_key(c, name);
        if (!f) {
            char allowed[256] = "";
            for (size_t i = 0; i < n_fields; i++)
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                         i ? ", " : "", fields[i].key);
            return kp__yaml_fail(c, key, "unknown key %s (allowed: %s)", kp__yaml_show(name).s,
                                 allowed);
        }
        if (handle(c, node_at(c, p->value), f->kind, f->fn, obj) < 0)
            return -1;
        kp__yaml_path_pop(c, saved);
    }
    for (size_t i = 0; i < n_fields; i++)
        if (fields[i].required && !find_value(c, map, fields[i].key))
            return missing(c, map, &fields[i]);
    return 0;
}

int kp__yaml_walk_key(kp__yaml *c, yaml_node_t *map, const kp__yaml_field *field, void *obj)
{
    yaml_node_t *value = find_value(c, map, field->key);
    if (!value)
        return field->required ? missing(c, map, field) : 0;
    size_t saved = kp__yaml_path_key(c, field->key);
    if (handle(c, value, field->kind, field->fn, obj) < 0)
        return -1;
    kp__yaml_path_pop(c, saved);
    return 0;
}

int kp__yaml_walk_sequence(kp__yaml *c, yaml_node_t *seq, kp__yaml_kind kind, kp__yaml_handler fn,
                           void *obj)
{
    yaml_node_item_t *items = seq->data.sequence.items.start;
    size_t n = (size_t)(seq->data.sequence.items.top - items);
    if (spend(c, seq, n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t saved = kp__yaml_path_index(c, i);
        if (handle(c, node_at(c, items[i]), kind, fn, obj) < 0)
            return -1;
        kp__yaml_path_pop(c, saved);
    }
    return 0;
}

int kp__yaml_walk_pairs(kp__yaml *c, yaml_node_t *map, kp__yaml_kind kind, kp__yaml_pair_handler fn,
                        void *obj)
{
    if (kp__yaml_check_keys(c, map) < 0)
        return -1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = node_at(c, p->key), *value = node_at(c, p->value);
        size_t saved = kp__yaml_path_key(c, kp__yaml_text(key));
        kp__yaml_value v = {0};
        if (check_kind(c, value, kind, &v) < 0 || fn(c, key, value, &v, obj) < 0)
            return -1;
        kp__yaml_path_pop(c, saved);
    }
    return 0;
}

/* ---- loading ----------------------------------------------------------------------------- */

static void syntax_error(kp__yaml *c, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR) {
        kp__yaml_oom(c);
        return;
    }
    size_t line = p->problem_mark.line, col = p->problem_mark.column;
    if (p->error == YAML_READER_ERROR) {
        /* The reader reports a byte offset and no mark. */
        line = col = 0;
        for (size_t i = 0; i < p->problem_offset && i < c->len; i++) {
            if (c->text[i] == '\n') {
                line++;
                col = 0;
            } else if (((unsigned char)c->text[i] & 0xC0) != 0x80) {
                col++;
            }
        }
    }
    char *msg = NULL, where[48] = "";
    const char *problem = p->problem ? p->problem : "malformed YAML", *context = p->context;
    /* An unclosed quote or bracket is found at the end of the file; say where it was opened. */
    if (context && p->context_mark.line != line)
        snprintf(where, sizeof where, " at %zu:%zu", p->context_mark.line + 1,
                 p->context_mark.column + 1);
    if (asprintf(&msg, "%s%s%s%s%s", problem, context ? " (" : "", context ? context : "", where,
                 context ? ")" : "") < 0)
        msg = NULL;
    record(c, line, col, "YAML syntax", msg);
}

kp_status kp__yaml_run(const char *text, size_t len, const char *file,
                       int (*walk)(kp__yaml *c, yaml_node_t *root), void *user, char **err)
{
    kp__yaml c = {.text = text ? text : "",
                  .len = text ? len : 0,
                  .file = file,
                  .user = user,
                  .budget = MAX_NODES,
                  .status = KP_OK};
    yaml_parser_t parser;
    int loaded = 0;
    if (!yaml_parser_initialize(&parser)) {
        kp__yaml_oom(&c);
        goto out;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)c.text, c.len);
    if (!yaml_parser_load(&parser, &c.doc)) {
        syntax_error(&c, &parser);
    } else {
        loaded = 1;
        /* A second document would be silently ignored; a stray "---" usually means a bad merge
         * of two files. */
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            syntax_error(&c, &parser);
        } else {
            yaml_node_t *root = yaml_document_get_root_node(&extra);
            if (root)
                kp__yaml_fail_at(&c, root->start_mark,
                                 "a manifest is one YAML document, and a second one starts here");
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    if (c.status == KP_OK)
        walk(&c, yaml_document_get_root_node(&c.doc));
out:
    if (loaded)
        yaml_document_delete(&c.doc);
    free(c.path);
    if (err)
        *err = c.err;
    else
        free(c.err);
    return c.status;
}
