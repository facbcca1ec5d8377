/* kp_manifest_write_tuning: adds or updates a tuning entry by editing the manifest's text. */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest-internal.h"
#include "runtime.h"
#include "vendor.h"

/* Deeper than any manifest the loader accepts (it bounds the nesting of tuned values). */
#define MAX_DEPTH 64

static const char *const match_keys[4] = {"vendor", "type", "name", "arch"};

/* ---- text building ----------------------------------------------------------------------- */

/* A growing string; after a failed allocation every later put is a no-op and `oom` is set. */
typedef struct buf {
    char *s;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n)
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

static void put_s(buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void put_pad(buf *b, size_t n)
{
    for (; n; n--)
        put(b, " ", 1);
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

static int utf8_valid(const char *s)
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

static void put_quoted(buf *b, const char *s)
{
    put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t c = *p;
        size_t n = utf8_next(p, &c); /* arguments were checked to be UTF-8 */
        if (!n)
            n = 1;
        char esc[12];
        if (quotable_as_is(c))
            put(b, (const char *)p, n);
        else if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r')
            put_s(b, c == '"'    ? "\\\""
                     : c == '\\' ? "\\\\"
                     : c == '\n' ? "\\n"
                     : c == '\t' ? "\\t"
                                 : "\\r");
        else {
            snprintf(esc, sizeof esc, c < 0x100 ? "\\x%02X" : "\\u%04X", (unsigned)c);
            put_s(b, esc);
        }
        p += n;
    }
    put(b, "\"", 1);
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

static void put_str(buf *b, const char *s)
{
    if (plain_ok(s))
        put_s(b, s);
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

/* ---- names, checked as the loader checks them (manifest-parse.c) ------------------------- */

static int is_kernel_name(const char *s)
{
    int dots = 0;
    size_t seg = 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (seg == 0)
                return 0;
            dots++;
            seg = 0;
        } else if ((*s >= 'a' && *s <= 'z') || is_digit(*s) || *s == '_') {
            seg++;
        } else {
            return 0;
        }
    }
    return dots > 0 && seg > 0;
}

static int is_tunable_name(const char *s)
{
    int at_start = 1;
    for (; *s; s++) {
        if (*s == '.') {
            if (at_start)
                return 0;
            at_start = 1;
        } else if (is_alpha(*s) || *s == '_' || (!at_start && is_digit(*s))) {
            at_start = 0;
        } else {
            return 0;
        }
    }
    return !at_start;
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

/* What the caller asked for, checked, with vendor and type in their canonical spelling. */
typedef struct request {
    const char *match[4];
    const kp_tuned_value *values;
    size_t n_values;
    const char *const *prov;
    size_t n_prov;
    const char *nl; /* "\r\n" when the file uses it, so added lines look like the others */
} request;

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
static int make_entry(wentry *w, const request *r, const kp__tuning_entry *base)
{
    wentry old = {0};
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

static void next_key(buf *b, int flow, size_t indent, const char *nl)
{
    if (flow) {
        put_s(b, ", ");
    } else {
        put_s(b, nl);
        put_pad(b, indent);
    }
}

/*
 * Writes the entry's mapping. Block style starts at its first key (the caller wrote "- " or
 * kept the text before it) and puts later keys at column `indent`; it ends without a newline,
 * so whatever followed the replaced text (a comment, the line break) stays after it.
 */
static void emit_entry(buf *b, wentry *w, size_t indent, int flow, const char *nl)
{
    qsort(w->values, w->n_values, sizeof *w->values, by_kernel);
    put_s(b, flow ? "{ match: {" : "match: {");
    const char *sep = " ";
    for (int i = 0; i < 4; i++)
        if (w->match[i]) {
            put_s(b, sep);
            put_s(b, match_keys[i]);
            put_s(b, ": ");
            put_str(b, w->match[i]);
            sep = ", ";
        }
    put_s(b, *sep == ',' ? " }" : "}");
    next_key(b, flow, indent, nl);
    /* A loaded entry may have none (`kernels: { gru.step: {} }`); an empty map says the same. */
    put_s(b, w->n_values == 0 ? "kernels: {}" : flow ? "kernels: {" : "kernels:");
    for (size_t i = 0; i < w->n_values; i++) {
        const wvalue *v = &w->values[i];
        int first = i == 0 || strcmp(v->kernel, w->values[i - 1].kernel) != 0;
        if (first && flow) {
            put_s(b, i ? " }, " : " ");
        } else if (first) {
            if (i)
                put_s(b, " }");
            put_s(b, nl);
            put_pad(b, indent + 2);
        }
        if (first) {
            put_str(b, v->kernel);
            put_s(b, ": {");
        }
        put_s(b, first ? " " : ", ");
        put_str(b, v->name);
        put_s(b, ": ");
        if (v->is_int)
            put_s(b, v->text);
        else
            put_str(b, v->text);
    }
    if (w->n_values)
        put_s(b, flow ? " } }" : " }");
    if (w->n_prov) {
        next_key(b, flow, indent, nl);
        put_s(b, "provenance: {");
        for (size_t i = 0; i < w->n_prov; i++) {
            put_s(b, i ? ", " : " ");
            put_str(b, w->prov[2 * i]);
            put_s(b, ": ");
            put_str(b, w->prov[2 * i + 1]);
        }
        put_s(b, " }");
    }
    if (flow)
        put_s(b, " }");
}

/* Emits a fresh entry (merged over `base` when given); -1 when out of memory. */
static int emit_new(buf *b, const request *r, const kp__tuning_entry *base, size_t indent, int flow)
{
    wentry w;
    int rc = make_entry(&w, r, base);
    if (rc == 0)
        emit_entry(b, &w, indent, flow, r->nl);
    wentry_fini(&w);
    return rc;
}

/* ---- where things are in the existing text ----------------------------------------------- */

typedef struct item {
    size_t start, end; /* bytes: the entry's first character, and just past its last one */
    size_t col;        /* the start's column, where its later keys are indented */
    int editable;      /* no anchors or aliases: replacing its text cannot break a reference */
} item;

typedef struct layout {
    int root_flow;
    size_t root_col, root_end;
    size_t doc_end; /* where an explicit "..." starts, else the end of the text */
    enum { NO_TUNING, BLOCK_TUNING, FLOW_TUNING, OTHER_TUNING } tuning;
    size_t seq_start, seq_end, seq_col;
    item *items;
    size_t n_items, cap_items;
} layout;

/* libyaml's marks count characters, and edits need bytes. Marks come nearly in order, so a
 * cursor that restarts only when asked for an earlier one is enough. */
typedef struct cursor {
    const char *text;
    size_t len, base, ci, bi;
} cursor;

static size_t byte_at(cursor *c, size_t index)
{
    if (index < c->ci) {
        c->ci = 0;
        c->bi = c->base;
    }
    for (; c->ci < index && c->bi < c->len; c->ci++)
        for (c->bi++; c->bi < c->len && ((unsigned char)c->text[c->bi] & 0xC0) == 0x80; c->bi++)
            ;
    return c->bi;
}

static int has_anchor(const yaml_event_t *ev)
{
    return (ev->type == YAML_SCALAR_EVENT && ev->data.scalar.anchor) ||
           (ev->type == YAML_SEQUENCE_START_EVENT && ev->data.sequence_start.anchor) ||
           (ev->type == YAML_MAPPING_START_EVENT && ev->data.mapping_start.anchor);
}

/* One event of the scan. Depth 0 is the root mapping, 1 its keys and values, 2 `tuning` items. */
static int on_event(layout *L, cursor *cur, const yaml_event_t *ev, char *flow, int *depth,
                    size_t *root_nodes, int *key_is_tuning, int *in_tuning)
{
    yaml_event_type_t t = ev->type;
    int starts = t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT;
    int ends = t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT;
    int node = starts || t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT;
    int d = ends ? --*depth : *depth;
    if (d < 0)
        return -1;
    size_t start = byte_at(cur, ev->start_mark.index);
    /* A block collection ends at the next token, past comments and blank lines that belong to
     * what follows; only scalars, aliases and closing brackets say where written text stops. */
    int has_end = t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT || (ends && flow[d]);
    size_t end = has_end ? byte_at(cur, ev->end_mark.index) : 0;

    if (t == YAML_DOCUMENT_END_EVENT && !ev->data.document_end.implicit)
        L->doc_end = start;
    if (d == 0 && t == YAML_MAPPING_START_EVENT) {
        L->root_flow = ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
        L->root_col = ev->start_mark.column;
    }
    if (d >= 1 && has_end && end > L->root_end)
        L->root_end = end;
    if (d == 1 && node && (*root_nodes)++ % 2 == 0) {
        *key_is_tuning =
            t == YAML_SCALAR_EVENT && strcmp((const char *)ev->data.scalar.value, "tuning") == 0;
    } else if (d == 1 && node && *key_is_tuning) {
        *key_is_tuning = 0;
        L->tuning = OTHER_TUNING;
        if (t == YAML_SEQUENCE_START_EVENT) {
            int is_flow = ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
            L->tuning = is_flow ? FLOW_TUNING : BLOCK_TUNING;
            L->seq_start = start;
            L->seq_col = ev->start_mark.column;
            *in_tuning = 1;
        }
    } else if (d == 1 && ends && *in_tuning) {
        L->seq_end = end;
        *in_tuning = 0;
    }
    if (*in_tuning && d == 2 && node) {
        if (L->n_items == L->cap_items) {
            size_t cap = L->cap_items ? 2 * L->cap_items : 16;
            item *grown = realloc(L->items, cap * sizeof *grown);
            if (!grown)
                return -2;
            L->items = grown;
            L->cap_items = cap;
        }
        L->items[L->n_items++] = (item){start, start, ev->start_mark.column, 1};
    }
    if (*in_tuning && d >= 2 && L->n_items) {
        item *it = &L->items[L->n_items - 1];
        if (has_end && end > it->end)
            it->end = end;
        if (has_anchor(ev) || t == YAML_ALIAS_EVENT)
            it->editable = 0;
    }
    if (starts) {
        if (*depth >= MAX_DEPTH)
            return -1;
        flow[(*depth)++] = t == YAML_MAPPING_START_EVENT
                               ? ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
                               : ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
    }
    return 0;
}

/* Finds the root mapping, the `tuning` value and each entry's text. The loader has already
 * accepted `text`, so a failure here is a bug (or no memory): KP_ERR_INTERNAL / OUT_OF_MEMORY. */
static kp_status scan(const char *text, size_t len, size_t bom, layout *L)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return KP_ERR_OUT_OF_MEMORY;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    cursor cur = {text, len, bom, 0, bom};
    char flow[MAX_DEPTH];
    int depth = 0, key_is_tuning = 0, in_tuning = 0, rc = 0;
    size_t root_nodes = 0;
    L->doc_end = len;
    for (int done = 0; !done && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser.error == YAML_MEMORY_ERROR ? -2 : -1;
            break;
        }
        rc = on_event(L, &cur, &ev, flow, &depth, &root_nodes, &key_is_tuning, &in_tuning);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    /* Trailing line breaks belong to a block scalar; the entry's text stops before them. */
    for (size_t i = 0; i < L->n_items; i++)
        while (L->items[i].end > L->items[i].start && strchr(" \t\r\n", text[L->items[i].end - 1]))
            L->items[i].end--;
    return rc == 0 ? KP_OK : rc == -2 ? KP_ERR_OUT_OF_MEMORY : KP_ERR_INTERNAL;
}

/* ---- the edit ---------------------------------------------------------------------------- */

static int same_match(const kp__tuning_entry *e, const char *const want[4])
{
    const char *have[4] = {e->vendor, e->type, e->name, e->arch};
    for (int i = 0; i < 4; i++)
        if (!have[i] != !want[i] || (have[i] && strcmp(have[i], want[i]) != 0))
            return 0;
    return 1;
}

/* The start of the line after the one `end` is on, so a trailing comment stays on its line. */
static size_t line_after(const char *text, size_t len, size_t end)
{
    const char *nl = memchr(text + end, '\n', len - end);
    return nl ? (size_t)(nl - text) + 1 : len;
}

/* Copies text[from, to) and, when the copy does not end a line, a line break. */
static void put_lines(buf *b, const char *text, size_t from, size_t to, const char *nl)
{
    put(b, text + from, to - from);
    if (to > 0 && text[to - 1] != '\n')
        put_s(b, nl);
}

/* The column of the block sequence's "-": where the sequence starts, unless an anchor or tag
 * comes first; then found before the first entry. */
static size_t dash_col(const char *text, const layout *L)
{
    if (text[L->seq_start] == '-')
        return L->seq_col;
    size_t at = L->items[0].start, col = L->items[0].col;
    while (at > 0 && col > 1 && text[at - 1] == ' ') {
        at--;
        col--;
    }
    if (at > 0 && col > 0 && text[at - 1] == '-')
        return col - 1;
    return L->items[0].col >= 2 ? L->items[0].col - 2 : 0;
}

/* Builds in `out` the edited text: `m` is `text` as the loader read it. */
static kp_status edit(const char *path, const char *text, size_t len, size_t bom,
                      const kp__manifest *m, const request *r, buf *out)
{
    layout L = {0};
    kp_status st = scan(text, len, bom, &L);
    if (st == KP_OK && (L.tuning == BLOCK_TUNING || L.tuning == FLOW_TUNING) &&
        L.n_items != m->n_tuning)
        st = KP_ERR_INTERNAL;
    if (st != KP_OK) {
        free(L.items);
        return st == KP_ERR_INTERNAL ? kp__fail(NULL, st,
                                                "%s: error: cannot locate the tuning "
                                                "entries in the text (a Kernelport bug)",
                                                path)
                                     : kp__fail(NULL, st, "out of memory");
    }
    /* The last matching entry is the one that takes effect (later entries win ties), so that is
     * the one to update. */
    const kp__tuning_entry *hit = NULL;
    size_t j = m->n_tuning;
    while (j-- > 0 && !hit)
        if (same_match(&m->tuning[j], r->match))
            hit = &m->tuning[j];
    j++;
    size_t ins, ind = L.root_col + 2;
    int rc = 0;
    switch (L.tuning) {
    case NO_TUNING:
        if (L.root_flow) {
            put(out, text, L.root_end);
            put_s(out, ", tuning: [");
            rc = emit_new(out, r, NULL, 0, 1);
            put_s(out, "]");
            ins = L.root_end;
            break;
        }
        put_lines(out, text, 0, L.doc_end, r->nl);
        put_pad(out, L.root_col);
        put_s(out, "tuning:");
        put_s(out, r->nl);
        put_pad(out, ind);
        put_s(out, "- ");
        rc = emit_new(out, r, NULL, ind + 2, 0);
        put_s(out, r->nl);
        ins = L.doc_end;
        break;
    case BLOCK_TUNING:
        if (hit && L.items[j].editable) {
            put(out, text, L.items[j].start);
            rc = emit_new(out, r, hit, L.items[j].col, 0);
            ins = L.items[j].end;
            break;
        }
        /* An entry with anchors or aliases cannot be rewritten without breaking references;
         * a new entry after it takes precedence all the same. */
        ins = line_after(text, len, L.items[L.n_items - 1].end);
        put_lines(out, text, 0, ins, r->nl);
        put_pad(out, dash_col(text, &L));
        put_s(out, "- ");
        rc = emit_new(out, r, NULL, dash_col(text, &L) + 2, 0);
        put_s(out, r->nl);
        break;
    case FLOW_TUNING: {
        size_t from = L.seq_start;
        /* A block sequence cannot follow its key on the same line; drop the space before it. */
        while (!L.root_flow && from > 0 && (text[from - 1] == ' ' || text[from - 1] == '\t'))
            from--;
        put(out, text, from);
        if (L.root_flow)
            put_s(out, "[");
        for (size_t i = 0; i <= m->n_tuning && rc == 0; i++) {
            if (i == m->n_tuning && hit)
                break;
            if (L.root_flow) {
                put_s(out, i ? ", " : "");
            } else {
                put_s(out, r->nl);
                put_pad(out, ind);
                put_s(out, "- ");
            }
            if (i == m->n_tuning || &m->tuning[i] == hit) {
                rc = emit_new(out, r, hit, ind + 2, L.root_flow);
                continue;
            }
            wentry w;
            rc = copy_entry(&w, &m->tuning[i]);
            if (rc == 0)
                emit_entry(out, &w, ind + 2, L.root_flow, r->nl);
            wentry_fini(&w);
        }
        if (L.root_flow)
            put_s(out, "]");
        ins = L.seq_end;
        break;
    }
    default:
        free(L.items);
        return kp__fail(NULL, KP_ERR_MANIFEST,
                        "%s: error: cannot write tuned values: `tuning` is written as an alias; "
                        "write the sequence out in place",
                        path);
    }
    put(out, text + ins, len - ins);
    free(L.items);
    return rc < 0 || out->oom ? kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of memory") : KP_OK;
}

/* ---- files ------------------------------------------------------------------------------- */

/* Writes `text` next to `path` and renames it over `path`, so readers see the old file or the
 * new one, never half of one. `old` (NULL for a new file) gives the permissions to keep. */
static kp_status write_atomic(const char *path, const char *text, size_t len,
                              const struct stat *old)
{
    static atomic_uint counter;
    char *tmp = NULL;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        free(tmp);
        tmp = kp__asprintf("%s.kp-tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
        if (!tmp)
            return kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of memory");
        /* 0666 lets the umask decide a new file's permissions, as for any file one creates. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int err = fd < 0 ? errno : 0;
    for (size_t done = 0; !err && done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        if (n > 0)
            done += (size_t)n;
        else if (n == 0 || errno != EINTR)
            err = n == 0 ? EIO : errno;
    }
    if (!err && old && fchmod(fd, old->st_mode & 07777) != 0)
        err = errno;
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    kp_status st = KP_OK;
    if (err) {
        if (fd >= 0)
            unlink(tmp);
        st = kp__fail(NULL, KP_ERR_IO, "%s: error: cannot write manifest: %s", path, strerror(err));
    }
    free(tmp);
    return st;
}

static kp_status bad_arg(const char *fmt, ...) KP_PRINTF(1, 2);

static kp_status bad_arg(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = kp__vasprintf(fmt, ap);
    va_end(ap);
    kp__fail(NULL, KP_ERR_INVALID_ARG, "kp_manifest_write_tuning: %s", msg ? msg : fmt);
    free(msg);
    return KP_ERR_INVALID_ARG;
}

/* Checks the arguments at the boundary (the loader would refuse what is written otherwise) and
 * fills `r`. */
static kp_status check_args(const char *path, const kp_tuning_match *match,
                            const kp_tuned_value *values, size_t n_values,
                            const char *const *provenance, size_t n_provenance, request *r)
{
    if (!path || !*path)
        return bad_arg("no path");
    if (!match)
        return bad_arg("match is NULL");
    if (n_values == 0 || !values)
        return bad_arg(n_values ? "values is NULL" : "no values to write");
    if (n_provenance && !provenance)
        return bad_arg("provenance is NULL");
    const char *fields[4] = {match->vendor, match->type, match->name, match->arch};
    for (size_t i = 0; i < 4; i++) {
        r->match[i] = fields[i];
        if (fields[i] && !utf8_valid(fields[i]))
            return bad_arg("match.%s is not valid UTF-8", match_keys[i]);
    }
    kp_vendor vendor;
    kp_device_type type;
    if (fields[0] && kp__vendor_parse(fields[0], &vendor) < 0)
        return bad_arg("match.vendor: unknown vendor %s (known: %s)", kp__yaml_show(fields[0]).s,
                       kp__vendor_known_names());
    if (fields[1] && kp__device_type_parse(fields[1], &type) < 0)
        return bad_arg("match.type: unknown device type %s (known: %s)", kp__yaml_show(fields[1]).s,
                       kp__device_type_known_names());
    /* Stored canonical, as the loader stores what it reads, so matches compare equal. */
    if (fields[0])
        r->match[0] = kp_vendor_name(vendor);
    if (fields[1])
        r->match[1] = kp_device_type_name(type);
    for (size_t i = 0; i < n_values; i++) {
        const kp_tuned_value *v = &values[i];
        if (!v->kernel || !v->name || !v->value)
            return bad_arg("values[%zu]: kernel, name and value must not be NULL", i);
        if (!is_kernel_name(v->kernel))
            return bad_arg("values[%zu]: invalid kernel name %s (expected family.op in lowercase "
                           "letters, digits and '_')",
                           i, kp__yaml_show(v->kernel).s);
        if (!is_tunable_name(v->name))
            return bad_arg("values[%zu]: invalid tunable name %s (expected letters, digits and "
                           "'_', not starting with a digit)",
                           i, kp__yaml_show(v->name).s);
        if (!utf8_valid(v->value))
            return bad_arg("values[%zu]: the value is not valid UTF-8", i);
    }
    for (size_t i = 0; i < 2 * n_provenance; i++) {
        if (!provenance[i])
            return bad_arg("provenance[%zu] is NULL", i);
        if (!utf8_valid(provenance[i]))
            return bad_arg("provenance[%zu] is not valid UTF-8", i);
        for (size_t k = 0; i % 2 == 0 && k < i; k += 2)
            if (strcmp(provenance[k], provenance[i]) == 0)
                return bad_arg("provenance: duplicate key %s", kp__yaml_show(provenance[i]).s);
    }
    *r = (request){.match = {r->match[0], r->match[1], r->match[2], r->match[3]},
                   .values = values,
                   .n_values = n_values,
                   .prov = provenance,
                   .n_prov = n_provenance,
                   .nl = "\n"};
    return KP_OK;
}

/* Loads `text` into a scratch manifest: the file's own check, and its entries' values. */
static kp_status load(kp__manifest *m, const char *path, const char *text, size_t len,
                      kp_status on_error, const char *what)
{
    char *err = NULL;
    kp__manifest_init(m);
    kp_status st = kp__manifest_load_text(m, text, len, path, 0, &err);
    if (st == KP_ERR_MANIFEST)
        st = kp__fail(NULL, on_error, "%s%s", what, err ? err : "invalid manifest");
    else if (st != KP_OK)
        st = kp__fail(NULL, st, "%s", err ? err : "out of memory");
    free(err);
    return st;
}

kp_status kp_manifest_write_tuning(const char *path, const kp_tuning_match *match,
                                   const kp_tuned_value *values, size_t n_values,
                                   const char *const *provenance, size_t n_provenance)
{
    request r = {0};
    kp_status st = check_args(path, match, values, n_values, provenance, n_provenance, &r);
    if (st != KP_OK)
        return st;
    /* Write through a symbolic link (a dotfile kept elsewhere) rather than replace it. */
    struct stat sb;
    char *real = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) ? realpath(path, NULL) : NULL;
    const char *target = real ? real : path;
    char *text = NULL;
    size_t len = 0;
    int exists = stat(target, &sb) == 0;
    if (!exists && errno != ENOENT)
        st =
            kp__fail(NULL, KP_ERR_IO, "%s: error: cannot open manifest: %s", path, strerror(errno));
    else if (exists && S_ISDIR(sb.st_mode))
        st = kp__fail(NULL, KP_ERR_IO, "%s: error: cannot open manifest: %s", path,
                      strerror(EISDIR));
    else if (exists && !(text = kp__read_file(target, &len)))
        st =
            kp__fail(NULL, KP_ERR_IO, "%s: error: cannot read manifest: %s", path, strerror(errno));
    buf out = {0};
    kp__manifest m;
    kp__manifest_init(&m);
    if (st == KP_OK && !exists) {
        put_s(&out, "kernelport: 1\ntuning:\n  - ");
        if (emit_new(&out, &r, NULL, 4, 0) < 0 || (put_s(&out, "\n"), out.oom))
            st = kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of memory");
    } else if (st == KP_OK) {
        size_t bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
        /* Text edits work on UTF-8; libyaml would also read UTF-16 with a byte-order mark. */
        if (len >= 2 && (memcmp(text, "\xFF\xFE", 2) == 0 || memcmp(text, "\xFE\xFF", 2) == 0))
            st = kp__fail(NULL, KP_ERR_MANIFEST,
                          "%s: error: the manifest is UTF-16; only UTF-8 manifests can be edited",
                          path);
        if (st == KP_OK)
            st = load(&m, path, text, len, KP_ERR_MANIFEST, "");
        const char *lf = text ? memchr(text, '\n', len) : NULL;
        r.nl = lf && lf > text && lf[-1] == '\r' ? "\r\n" : "\n";
        if (st == KP_OK)
            st = edit(path, text, len, bom, &m, &r, &out);
    }
    kp__manifest_fini(&m);
    /* Never replace a file with one that Kernelport would refuse to load. */
    if (st == KP_OK)
        st = load(
            &m, path, out.s, out.len, KP_ERR_INTERNAL,
            "the rewritten manifest does not load (a Kernelport bug; the file is unchanged): ");
    kp__manifest_fini(&m);
    if (st == KP_OK && (!exists || out.len != len || memcmp(out.s, text, len) != 0))
        st = write_atomic(target, out.s, out.len, exists ? &sb : NULL);
    free(out.s);
    free(text);
    free(real);
    return st;
}
