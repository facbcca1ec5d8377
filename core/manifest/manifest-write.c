/* SPDX-License-Identifier: Apache-2.0 */
/* kp_manifest_write_tuning: adds or updates a tuning entry by editing the manifest's text. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest-internal.h"
#include "manifest-write.h"
#include "names.h"
#include "runtime.h"
#include "struct-size.h"
#include "vendor.h"

/* Deeper than any manifest the loader accepts (it bounds the nesting of tuned values). */
#define MAX_DEPTH 64

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
static void put_lines(kp__strbuf *b, const char *text, size_t from, size_t to, const char *nl)
{
    kp__strbuf_put(b, text + from, to - from);
    if (to > 0 && text[to - 1] != '\n')
        kp__strbuf_puts(b, nl);
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
                      const kp__manifest *m, const kp__tuning_request *r, kp__strbuf *out)
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
            kp__strbuf_put(out, text, L.root_end);
            kp__strbuf_puts(out, ", tuning: [");
            rc = kp__tuning_emit_new(out, r, NULL, 0, 1);
            kp__strbuf_puts(out, "]");
            ins = L.root_end;
            break;
        }
        put_lines(out, text, 0, L.doc_end, r->nl);
        kp__strbuf_pad(out, L.root_col);
        kp__strbuf_puts(out, "tuning:");
        kp__strbuf_puts(out, r->nl);
        kp__strbuf_pad(out, ind);
        kp__strbuf_puts(out, "- ");
        rc = kp__tuning_emit_new(out, r, NULL, ind + 2, 0);
        kp__strbuf_puts(out, r->nl);
        ins = L.doc_end;
        break;
    case BLOCK_TUNING:
        if (hit && L.items[j].editable) {
            kp__strbuf_put(out, text, L.items[j].start);
            rc = kp__tuning_emit_new(out, r, hit, L.items[j].col, 0);
            ins = L.items[j].end;
            break;
        }
        /* An entry with anchors or aliases cannot be rewritten without breaking references;
         * a new entry after it takes precedence all the same. */
        ins = line_after(text, len, L.items[L.n_items - 1].end);
        put_lines(out, text, 0, ins, r->nl);
        kp__strbuf_pad(out, dash_col(text, &L));
        kp__strbuf_puts(out, "- ");
        rc = kp__tuning_emit_new(out, r, NULL, dash_col(text, &L) + 2, 0);
        kp__strbuf_puts(out, r->nl);
        break;
    case FLOW_TUNING: {
        size_t from = L.seq_start;
        /* A block sequence cannot follow its key on the same line; drop the space before it. */
        while (!L.root_flow && from > 0 && (text[from - 1] == ' ' || text[from - 1] == '\t'))
            from--;
        kp__strbuf_put(out, text, from);
        if (L.root_flow)
            kp__strbuf_puts(out, "[");
        for (size_t i = 0; i <= m->n_tuning && rc == 0; i++) {
            if (i == m->n_tuning && hit)
                break;
            if (L.root_flow) {
                kp__strbuf_puts(out, i ? ", " : "");
            } else {
                kp__strbuf_puts(out, r->nl);
                kp__strbuf_pad(out, ind);
                kp__strbuf_puts(out, "- ");
            }
            if (i == m->n_tuning || &m->tuning[i] == hit) {
                rc = kp__tuning_emit_new(out, r, hit, ind + 2, L.root_flow);
                continue;
            }
            rc = kp__tuning_emit_copy(out, &m->tuning[i], ind + 2, L.root_flow, r->nl);
        }
        if (L.root_flow)
            kp__strbuf_puts(out, "]");
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
    kp__strbuf_put(out, text + ins, len - ins);
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
                            const char *const *provenance, size_t n_provenance,
                            kp__tuning_request *r)
{
    if (!path || !*path)
        return bad_arg("path is NULL or empty");
    if (!match)
        return bad_arg("match is NULL");
    kp_tuning_match m = {0};
    kp_status st = KP__IN_COPY(NULL, "kp_manifest_write_tuning", kp_tuning_match, &m, match);
    if (st != KP_OK)
        return st;
    if (n_values == 0 || !values)
        return bad_arg(n_values ? "values is NULL" : "no values to write");
    if (n_provenance && !provenance)
        return bad_arg("provenance is NULL");
    static const char *const keys[4] = {"vendor", "type", "name", "arch"};
    const char *fields[4] = {m.vendor, m.type, m.name, m.arch};
    for (size_t i = 0; i < 4; i++) {
        r->match[i] = fields[i];
        if (fields[i] && !kp__utf8_valid(fields[i]))
            return bad_arg("match.%s is not valid UTF-8", keys[i]);
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
        if (!kp__name_is_kernel(v->kernel))
            return bad_arg("values[%zu]: invalid kernel name %s (expected family.op in lowercase "
                           "letters, digits and '_')",
                           i, kp__yaml_show(v->kernel).s);
        if (!kp__name_is_tunable(v->name))
            return bad_arg("values[%zu]: invalid tunable name %s (expected letters, digits and "
                           "'_', not starting with a digit)",
                           i, kp__yaml_show(v->name).s);
        if (!kp__utf8_valid(v->value))
            return bad_arg("values[%zu]: the value is not valid UTF-8", i);
    }
    for (size_t i = 0; i < 2 * n_provenance; i++) {
        if (!provenance[i])
            return bad_arg("provenance[%zu] is NULL", i);
        if (!kp__utf8_valid(provenance[i]))
            return bad_arg("provenance[%zu] is not valid UTF-8", i);
        for (size_t k = 0; i % 2 == 0 && k < i; k += 2)
            if (strcmp(provenance[k], provenance[i]) == 0)
                return bad_arg("provenance: duplicate key %s", kp__yaml_show(provenance[i]).s);
    }
    *r = (kp__tuning_request){.match = {r->match[0], r->match[1], r->match[2], r->match[3]},
                              .values = values,
                              .n_values = n_values,
                              .prov = provenance,
                              .n_prov = n_provenance,
                              .nl = "\n"};
    return KP_OK;
}

/* Loads `text` into scratch manifest `m` (always to be finalised): the loader's own check, and
 * the entries' values. A manifest error becomes `on_error`, its message prefixed by `what`. */
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

/* Reads the manifest when there is one: *text NULL and KP_OK when `target` does not exist. */
static kp_status read_manifest(const char *path, const char *target, char **text, size_t *len,
                               struct stat *sb)
{
    *text = NULL;
    *len = 0;
    if (stat(target, sb) != 0)
        return errno == ENOENT ? KP_OK
                               : kp__fail(NULL, KP_ERR_IO, "%s: error: cannot open manifest: %s",
                                          path, strerror(errno));
    if (S_ISDIR(sb->st_mode))
        return kp__fail(NULL, KP_ERR_IO, "%s: error: cannot open manifest: %s", path,
                        strerror(EISDIR));
    if (!(*text = kp__read_file(target, len)))
        return kp__fail(NULL, KP_ERR_IO, "%s: error: cannot read manifest: %s", path,
                        strerror(errno));
    /* Text edits work on UTF-8; libyaml would also read UTF-16 that starts with a BOM. */
    if (*len >= 2 && (memcmp(*text, "\xFF\xFE", 2) == 0 || memcmp(*text, "\xFE\xFF", 2) == 0))
        return kp__fail(NULL, KP_ERR_MANIFEST,
                        "%s: error: the manifest is UTF-16; only UTF-8 manifests can be edited",
                        path);
    return KP_OK;
}

/* The new text for an existing manifest, which must load first. */
static kp_status rewrite(const char *path, const char *text, size_t len, kp__tuning_request *r,
                         kp__strbuf *out)
{
    kp__manifest m;
    kp_status st = load(&m, path, text, len, KP_ERR_MANIFEST, "");
    const char *lf = memchr(text, '\n', len);
    r->nl = lf && lf > text && lf[-1] == '\r' ? "\r\n" : "\n";
    size_t bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    if (st == KP_OK)
        st = edit(path, text, len, bom, &m, r, out);
    kp__manifest_fini(&m);
    return st;
}

kp_status kp_manifest_write_tuning(const char *path, const kp_tuning_match *match,
                                   const kp_tuned_value *values, size_t n_values,
                                   const char *const *provenance, size_t n_provenance)
{
    kp__tuning_request r = {0};
    kp_status st = check_args(path, match, values, n_values, provenance, n_provenance, &r);
    if (st != KP_OK)
        return st;
    /* Write through a symbolic link (a dotfile kept elsewhere) rather than replace it. */
    struct stat sb;
    char *real = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) ? realpath(path, NULL) : NULL;
    const char *target = real ? real : path;
    char *text;
    size_t len;
    kp__strbuf out = {0};
    st = read_manifest(path, target, &text, &len, &sb);
    if (st == KP_OK && text) {
        st = rewrite(path, text, len, &r, &out);
    } else if (st == KP_OK) {
        kp__strbuf_puts(&out, "kernelport: 1\ntuning:\n  - ");
        if (kp__tuning_emit_new(&out, &r, NULL, 4, 0) < 0)
            out.oom = 1;
        kp__strbuf_puts(&out, "\n");
        if (out.oom)
            st = kp__fail(NULL, KP_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* Never replace a file with one that Kernelport would refuse to load. */
    kp__manifest m;
    kp__manifest_init(&m);
    if (st == KP_OK)
        st = load(&m, path, out.s, out.len, KP_ERR_INTERNAL,
                  "the rewritten manifest does not load (a Kernelport bug; the file is "
                  "unchanged): ");
    kp__manifest_fini(&m);
    /* An unchanged file is left alone, not even touched. */
    if (st == KP_OK && (!text || out.len != len || memcmp(out.s, text, len) != 0))
        st = write_atomic(target, out.s, out.len, text ? &sb : NULL);
    free(out.s);
    free(text);
    free(real);
    return st;
}
