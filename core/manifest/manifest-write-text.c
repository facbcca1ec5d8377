/* SPDX-License-Identifier: Apache-2.0 */
/* The text kp_manifest_write_tuning writes: YAML scalars quoted as needed, tuning entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "manifest-internal.h"
#include "manifest-write.h"

static const char *const match_keys[4] = {"vendor", "type", "name", "arch"};

/* ---- text building ----------------------------------------------------------------------- */

void kp__strbuf_put(kp__strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->oom = 1;
            return;
        }
        b->s = grown;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void kp__strbuf_puts(kp__strbuf *b, const char *s)
{
    kp__strbuf_put(b, s, strlen(s));
}

void kp__strbuf_pad(kp__strbuf *b, size_t n)
{
    for (; n; n--)
        kp__strbuf_put(b, " ", 1);
}

/* One UTF-8 character at `s`: its length, or 0 when malformed (overlong, surrogate, too big). */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : 4;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7F >> n);
    if (n == 4 && (s[0] & 0xF8) != 0xF0)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if ((n > 1 && c < min[n]) || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

int kp__utf8_valid(const char *s)
{
    uint32_t c;
    for (size_t n; *s; s += n)
        if (!(n = utf8_next((const unsigned char *)s, &c)))
            return 0;
    return 1;
}

/* Characters that libyaml reads back as themselves inside double quotes. Its reader refuses
 * control characters, and NEL, LS and PS would be folded as line breaks, so those are escaped. */
static int quotable_as_is(uint32_t c)
{
    return (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') ||
           (c >= 0xA0 && c != 0x2028 && c != 0x2029 && c != 0xFEFF && c != 0xFFFE && c != 0xFFFF);
}

static void put_escape(kp__strbuf *b, uint32_t c)
{
    char esc[12];
    switch (c) {
    case '"':
        kp__strbuf_puts(b, "\\\"");
        return;
    case '\\':
        kp__strbuf_puts(b, "\\\\");
        return;
    case '\n':
        kp__strbuf_puts(b, "\\n");
        return;
    case '\t':
        kp__strbuf_puts(b, "\\t");
        return;
    default:
        /* Code points from U+10000 are all written as they are, so four digits suffice. */
        snprintf(esc, sizeof esc, c < 0x100 ? "\\x%02X" : "\\u%04X", (unsigned)c);
        kp__strbuf_puts(b, esc);
    }
}

static void put_quoted(kp__strbuf *b, const char *s)
{
    kp__strbuf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t c = *p;
        size_t n = utf8_next(p, &c); /* arguments were checked to be UTF-8 */
        if (!n)
            n = 1;
        if (quotable_as_is(c))
            kp__strbuf_put(b, (const char *)p, n);
        else
            put_escape(b, c);
        p += n;
    }
    kp__strbuf_put(b, "\"", 1);
}

static int is_alpha(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/*
 * Whether `s` may go unquoted and still read back as this same string: a word of letters, digits,
 * '_', '.' and '-' that starts with a letter or '_' (so it cannot be a number), and is none of
 * YAML's null or boolean spellings. Anything else is quoted, which never changes the meaning of
 * a string, so erring towards quotes is safe.
 */
static int plain_ok(const char *s)
{
    static const char *const words[] = {"null", "y", "n"};
    if (!is_alpha(*s) && *s != '_')
        return 0;
    for (const char *p = s; *p; p++)
        if (!is_alpha(*p) && !is_digit(*p) && *p != '_' && *p != '.' && *p != '-')
            return 0;
    int b;
    if (kp__yaml_parse_bool(s, &b))
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasecmp(s, words[i]) == 0)
            return 0;
    return 1;
}

static void put_str(kp__strbuf *b, const char *s)
{
    if (plain_ok(s))
        kp__strbuf_puts(b, s);
    else
        put_quoted(b, s);
}

/* Whether a tuned value reads as an integer (or boolean) when written plain, as the loader does. */
static int reads_as_int(const char *s)
{
    int64_t i;
    int b;
    return kp__yaml_parse_int(s, &i) > 0 || kp__yaml_parse_bool(s, &b);
}

/* ---- entries ----------------------------------------------------------------------------- */

typedef struct wvalue {
    const char *kernel, *name, *text;
    int is_int;   /* written plain; else as a string, quoted when it would read as another type */
    size_t order; /* keeps a kernel's values in their order through the sort */
} wvalue;

/* An entry to write. Strings are borrowed from the request or from the loaded manifest. */
typedef struct wentry {
    const char *match[4]; /* vendor, type, name, arch; NULL: left out */
    wvalue *values;
    size_t n_values;
    const char *const *prov; /* key, value, key, value, ... */
    size_t n_prov;
    const char **owned; /* the prov array when copied from a loaded entry */
} wentry;

static void wentry_fini(wentry *w)
{
    free(w->values);
    free(w->owned);
}

/* An existing entry as the loader read it, re-emitted when a flow `tuning` becomes a block. */
static int copy_entry(wentry *w, const kp__tuning_entry *e)
{
    *w = (wentry){.match = {e->vendor, e->type, e->name, e->arch}, .n_prov = e->n_prov};
    w->values = calloc(e->n_values + 1, sizeof *w->values);
    w->owned = calloc(2 * e->n_prov + 1, sizeof *w->owned);
    w->prov = w->owned;
    if (!w->values || !w->owned)
        return -1;
    for (size_t i = 0; i < e->n_values; i++) {
        const kp__tuning_value *v = &e->values[i];
        w->values[w->n_values++] = (wvalue){v->kernel, v->key, v->text, v->is_int, i};
    }
    for (size_t i = 0; i < e->n_prov; i++) {
        w->owned[2 * i] = e->prov_keys[i];
        w->owned[2 * i + 1] = e->prov_values[i];
    }
    return 0;
}

/* The entry to write: `base`'s values (if any) with the new ones merged in, a new value
 * replacing the one of the same kernel and name in its place; the request's match and
 * provenance. */
static int make_entry(wentry *w, const kp__tuning_request *r, const kp__tuning_entry *base)
{
    wentry old = {0};
    *w = (wentry){0};
    if (base && copy_entry(&old, base) < 0) {
        wentry_fini(&old);
        return -1;
    }
    *w = (wentry){.match = {r->match[0], r->match[1], r->match[2], r->match[3]},
                  .prov = r->prov,
                  .n_prov = r->n_prov};
    w->values = calloc(old.n_values + r->n_values, sizeof *w->values);
    if (!w->values) {
        wentry_fini(&old);
        return -1;
    }
    if (old.n_values)
        memcpy(w->values, old.values, old.n_values * sizeof *w->values);
    w->n_values = old.n_values;
    wentry_fini(&old);
    for (size_t i = 0; i < r->n_values; i++) {
        const kp_tuned_value *v = &r->values[i];
        size_t j = 0;
        while (j < w->n_values &&
               (strcmp(w->values[j].kernel, v->kernel) || strcmp(w->values[j].name, v->name)))
            j++;
        if (j == w->n_values)
            w->values[w->n_values++] = (wvalue){v->kernel, v->name, NULL, 0, j};
        w->values[j].text = v->value;
        w->values[j].is_int = reads_as_int(v->value);
    }
    return 0;
}

static int by_kernel(const void *pa, const void *pb)
{
    const wvalue *a = pa, *b = pb;
    int r = strcmp(a->kernel, b->kernel);
    return r ? r : (a->order > b->order) - (a->order < b->order);
}

static void next_key(kp__strbuf *b, int flow, size_t indent, const char *nl)
{
    if (flow) {
        kp__strbuf_puts(b, ", ");
    } else {
        kp__strbuf_puts(b, nl);
        kp__strbuf_pad(b, indent);
    }
}

/*
 * Writes the entry's mapping. Block style starts at its first key (the caller wrote "- " or
 * kept the text before it) and puts later keys at column `indent`; it ends without a newline,
 * so whatever followed the replaced text (a comment, the line break) stays after it.
 */
static void emit_entry(kp__strbuf *b, wentry *w, size_t indent, int flow, const char *nl)
{
    qsort(w->values, w->n_values, sizeof *w->values, by_kernel);
    kp__strbuf_puts(b, flow ? "{ match: {" : "match: {");
    const char *sep = " ";
    for (int i = 0; i < 4; i++)
        if (w->match[i]) {
            kp__strbuf_puts(b, sep);
            kp__strbuf_puts(b, match_keys[i]);
            kp__strbuf_puts(b, ": ");
            put_str(b, w->match[i]);
            sep = ", ";
        }
    kp__strbuf_puts(b, *sep == ',' ? " }" : "}");
    next_key(b, flow, indent, nl);
    /* A loaded entry may have none (`kernels: { gru.step: {} }`); an empty map says the same. */
    kp__strbuf_puts(b, w->n_values == 0 ? "kernels: {}" : flow ? "kernels: {" : "kernels:");
    for (size_t i = 0; i < w->n_values; i++) {
        const wvalue *v = &w->values[i];
        int first = i == 0 || strcmp(v->kernel, w->values[i - 1].kernel) != 0;
        if (first && flow) {
            kp__strbuf_puts(b, i ? " }, " : " ");
        } else if (first) {
            if (i)
                kp__strbuf_puts(b, " }");
            kp__strbuf_puts(b, nl);
            kp__strbuf_pad(b, indent + 2);
        }
        if (first) {
            put_str(b, v->kernel);
            kp__strbuf_puts(b, ": {");
        }
        kp__strbuf_puts(b, first ? " " : ", ");
        put_str(b, v->name);
        kp__strbuf_puts(b, ": ");
        if (v->is_int)
            kp__strbuf_puts(b, v->text);
        else
            put_str(b, v->text);
    }
    if (w->n_values)
        kp__strbuf_puts(b, flow ? " } }" : " }");
    if (w->n_prov) {
        next_key(b, flow, indent, nl);
        kp__strbuf_puts(b, "provenance: {");
        for (size_t i = 0; i < w->n_prov; i++) {
            kp__strbuf_puts(b, i ? ", " : " ");
            put_str(b, w->prov[2 * i]);
            kp__strbuf_puts(b, ": ");
            put_str(b, w->prov[2 * i + 1]);
        }
        kp__strbuf_puts(b, " }");
    }
    if (flow)
        kp__strbuf_puts(b, " }");
}

int kp__tuning_emit_new(kp__strbuf *b, const kp__tuning_request *r, const kp__tuning_entry *base,
                        size_t indent, int flow)
{
    wentry w;
    int rc = make_entry(&w, r, base);
    if (rc == 0)
        emit_entry(b, &w, indent, flow, r->nl);
    wentry_fini(&w);
    return rc;
}

int kp__tuning_emit_copy(kp__strbuf *b, const kp__tuning_entry *e, size_t indent, int flow,
                         const char *nl)
{
    wentry w;
    int rc = copy_entry(&w, e);
    if (rc == 0)
        emit_entry(b, &w, indent, flow, nl);
    wentry_fini(&w);
    return rc;
}
