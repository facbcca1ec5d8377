/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest schema: walks libyaml's document tree with tables of {key, node kind, handler}. */
#include "manifest-internal.h"
#include "names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vendor.h"

/* Appends a zeroed element to arr[0..n) and points `slot` at it; returns from the handler when
 * out of memory. */
#define APPEND(c, arr, n, slot)                                                                    \
    do {                                                                                           \
        void *grown_ = realloc((arr), ((n) + 1) * sizeof *(arr));                                  \
        if (!grown_)                                                                               \
            return kp__yaml_oom(c);                                                                \
        (arr) = grown_;                                                                            \
        (slot) = &(arr)[(n)++];                                                                    \
        memset((slot), 0, sizeof *(slot));                                                         \
    } while (0)

/* How deep `kernels:` maps may nest; deeper is a mistake (or a recursive alias). */
#define MAX_TUNING_DEPTH 16

static kp__manifest *model(kp__yaml *c)
{
    return &((kp__manifest_layer *)c->user)->m;
}

static kp__manifest_layer *layer(kp__yaml *c)
{
    return c->user;
}

static int push_str(kp__yaml *c, char ***arr, size_t *n, const char *s)
{
    char **slot;
    APPEND(c, *arr, *n, slot);
    if (!(*slot = strdup(s))) {
        --*n;
        return kp__yaml_oom(c);
    }
    return 0;
}

static int set_str(kp__yaml *c, char **dst, const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        return kp__yaml_oom(c);
    free(*dst);
    *dst = copy;
    return 0;
}

static kp__loc loc_of(kp__yaml *c, const yaml_node_t *node)
{
    return (kp__loc){c->file, (uint32_t)node->start_mark.line + 1,
                     (uint32_t)node->start_mark.column + 1};
}

static int check_kernel_name(kp__yaml *c, yaml_node_t *key, const char *name)
{
    if (kp__name_is_kernel(name))
        return 0;
    return kp__yaml_fail(c, key,
                         "invalid kernel name %s (expected family.op in lowercase letters, "
                         "digits and '_')",
                         kp__yaml_show(name).s);
}

/* The directory relative paths in this file are taken against, absolute so that it stays right
 * whatever the process's working directory later becomes. */
static char *file_dir(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (slash && file[0] == '/')
        return strndup(file, slash == file ? 1 : (size_t)(slash - file));
    /* errno from getcwd, or ENOMEM, tells the caller which went wrong. */
    char *cwd = getcwd(NULL, 0), *abs = NULL;
    if (!cwd || !slash)
        return cwd;
    if (asprintf(&abs, "%s/%.*s", cwd, (int)(slash - file), file) < 0)
        abs = NULL;
    free(cwd);
    if (!abs)
        errno = ENOMEM;
    return abs;
}

/* Expands `raw` and anchors a relative result at the manifest's directory. */
static int resolve_path(kp__yaml *c, yaml_node_t *node, const char *raw, int allow_empty,
                        char **out)
{
    char *msg = NULL, *path = NULL;
    kp_status st = kp__path_expand_detail(raw, &path, &msg, 1);
    if (st == KP_ERR_OUT_OF_MEMORY)
        return kp__yaml_oom(c);
    if (st != KP_OK) {
        kp__yaml_fail(c, node, "%s", msg);
        free(msg);
        return -1;
    }
    if (path[0] == '/' || (path[0] == '\0' && allow_empty)) {
        *out = path;
        return 0;
    }
    if (path[0] == '\0') {
        free(path);
        return kp__yaml_fail(c, node, "expected a directory, got an empty string");
    }
    if (strcmp(c->file, KP__MANIFEST_BUILTIN_NAME) == 0) {
        kp__yaml_fail(c, node, "relative path %s is not allowed in the built-in manifest",
                      kp__yaml_show(path).s);
        free(path);
        return -1;
    }
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    int here = strcmp(rel, ".") == 0;
    errno = 0;
    char *dir = file_dir(c->file);
    *out = NULL;
    if (!dir && errno != ENOMEM) {
        kp__yaml_fail(c, node, "cannot resolve %s against the working directory: %s",
                      kp__yaml_show(path).s, strerror(errno));
        free(path);
        return -1;
    }
    const char *sep = here || (dir && dir[strlen(dir) - 1] == '/') ? "" : "/";
    if (dir && asprintf(out, "%s%s%s", dir, sep, here ? "" : rel) < 0)
        *out = NULL;
    free(dir);
    free(path);
    return *out ? 0 : kp__yaml_oom(c);
}

/* ---- device rules and tuning matches share their fields ---------------------------------- */

typedef struct match_target {
    char **vendor, **type, **name, **arch, **uuid;
    int64_t *index;
} match_target;

static int on_vendor(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp_vendor vendor;
    if (kp__vendor_parse(v->s, &vendor) < 0)
        return kp__yaml_fail(c, node, "unknown vendor %s (known: %s)", kp__yaml_show(v->s).s,
                             kp__vendor_known_names());
    return set_str(c, ((match_target *)obj)->vendor, kp_vendor_name(vendor));
}

static int on_type(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp_device_type type;
    if (kp__device_type_parse(v->s, &type) < 0)
        return kp__yaml_fail(c, node, "unknown device type %s (known: %s)", kp__yaml_show(v->s).s,
                             kp__device_type_known_names());
    return set_str(c, ((match_target *)obj)->type, kp_device_type_name(type));
}

static int on_name(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return set_str(c, ((match_target *)obj)->name, v->s);
}

static int on_arch(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return set_str(c, ((match_target *)obj)->arch, v->s);
}

static int on_uuid(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return set_str(c, ((match_target *)obj)->uuid, v->s);
}

static int on_index(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    if (v->i < 0)
        return kp__yaml_fail(c, node, "index must be >= 0, got %lld", (long long)v->i);
    *((match_target *)obj)->index = v->i;
    return 0;
}

/* Device rules take every field; a tuning match only the first N_MATCH_FIELDS, because tuned
 * values belong to a kind of device (uuid and index pick one device). */
static const kp__yaml_field rule_fields[] = {
    {.key = "vendor", .kind = KP__YAML_STRING, .fn = on_vendor},
    {.key = "type", .kind = KP__YAML_STRING, .fn = on_type},
    {.key = "name", .kind = KP__YAML_STRING, .fn = on_name},
    {.key = "arch", .kind = KP__YAML_STRING, .fn = on_arch},
    {.key = "uuid", .kind = KP__YAML_STRING, .fn = on_uuid},
    {.key = "index", .kind = KP__YAML_INT, .fn = on_index},
};
#define N_MATCH_FIELDS 4

static int on_rule(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp__manifest *m = model(c);
    kp__device_rule *r;
    APPEND(c, m->rules, m->n_rules, r);
    r->index = -1;
    r->loc = loc_of(c, node);
    match_target t = {&r->vendor, &r->type, &r->name, &r->arch, &r->uuid, &r->index};
    return kp__yaml_walk_mapping(c, node, rule_fields, sizeof rule_fields / sizeof *rule_fields,
                                 &t);
}

static int on_device(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    layer(c)->has_device = 1;
    return kp__yaml_walk_sequence(c, node, KP__YAML_MAPPING, on_rule, NULL);
}

/* ---- plugins and cache ------------------------------------------------------------------- */

static int on_dir(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp__manifest *m = model(c);
    char *path, **slot;
    if (resolve_path(c, node, v->s, 0, &path) < 0)
        return -1;
    void *grown = realloc(m->plugin_dirs, (m->n_plugin_dirs + 1) * sizeof *m->plugin_dirs);
    if (!grown) {
        free(path);
        return kp__yaml_oom(c);
    }
    m->plugin_dirs = grown;
    slot = &m->plugin_dirs[m->n_plugin_dirs++];
    *slot = path;
    return 0;
}

static int on_dirs(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_sequence(c, node, KP__YAML_STRING, on_dir, NULL);
}

static int on_disable_item(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return push_str(c, &model(c)->disable, &model(c)->n_disable, v->s);
}

static int on_disable(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_sequence(c, node, KP__YAML_STRING, on_disable_item, NULL);
}

static int on_prefer_pair(kp__yaml *c, yaml_node_t *key, yaml_node_t *node, const kp__yaml_value *v,
                          void *obj)
{
    kp__manifest *m = model(c);
    const char *kernel = kp__yaml_text(key);
    if (check_kernel_name(c, key, kernel) < 0)
        return -1;
    void *k = realloc(m->prefer_kernel, (m->n_prefer + 1) * sizeof *m->prefer_kernel);
    if (k)
        m->prefer_kernel = k;
    void *p = realloc(m->prefer_plugin, (m->n_prefer + 1) * sizeof *m->prefer_plugin);
    if (p)
        m->prefer_plugin = p;
    char *ks = strdup(kernel), *ps = strdup(v->s);
    if (!k || !p || !ks || !ps) {
        free(ks);
        free(ps);
        return kp__yaml_oom(c);
    }
    m->prefer_kernel[m->n_prefer] = ks;
    m->prefer_plugin[m->n_prefer++] = ps;
    return 0;
}

static int on_prefer(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_pairs(c, node, KP__YAML_STRING, on_prefer_pair, NULL);
}

static int on_insecure(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    model(c)->allow_insecure = (int)v->i;
    layer(c)->has_allow_insecure = 1;
    return 0;
}

static int on_probe(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    model(c)->plugin_probe = (int)v->i;
    layer(c)->has_plugin_probe = 1;
    return 0;
}

static const kp__yaml_field plugin_fields[] = {
    {.key = "dirs", .kind = KP__YAML_SEQUENCE, .fn = on_dirs},
    {.key = "disable", .kind = KP__YAML_SEQUENCE, .fn = on_disable},
    {.key = "prefer", .kind = KP__YAML_MAPPING, .fn = on_prefer},
    {.key = "allow_insecure", .kind = KP__YAML_BOOL, .fn = on_insecure},
    {.key = "probe", .kind = KP__YAML_BOOL, .fn = on_probe},
};

static int on_plugins(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_mapping(c, node, plugin_fields,
                                 sizeof plugin_fields / sizeof *plugin_fields, NULL);
}

static int on_cache_dir(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp__manifest *m = model(c);
    char *path;
    if (resolve_path(c, node, v->s, 1, &path) < 0)
        return -1;
    free(m->cache_dir);
    m->cache_dir = path;
    layer(c)->has_cache_dir = 1;
    return 0;
}

/* The bound in bytes must fit the cache's 64-bit count: past this, max_mb * 2^20 would wrap. */
#define MAX_CACHE_MB ((int64_t)(UINT64_MAX >> 20))

static int on_max_mb(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    if (v->i < 0 || v->i > MAX_CACHE_MB)
        return kp__yaml_fail(c, node, "max_mb must be between 0 (no limit) and %lld, got %lld",
                             (long long)MAX_CACHE_MB, (long long)v->i);
    model(c)->cache_max_mb = v->i;
    layer(c)->has_cache_max_mb = 1;
    return 0;
}

static int on_binaries(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    static const char *const names[] = {"auto", "always", "never"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v->s, names[i]) == 0) {
            model(c)->cache_binaries = i;
            layer(c)->has_cache_binaries = 1;
            return 0;
        }
    return kp__yaml_fail(c, node, "binaries must be \"auto\", \"always\" or \"never\", got %s",
                         kp__yaml_show(v->s).s);
}

static const kp__yaml_field cache_fields[] = {
    {.key = "dir", .kind = KP__YAML_STRING, .fn = on_cache_dir},
    {.key = "max_mb", .kind = KP__YAML_INT, .fn = on_max_mb},
    {.key = "binaries", .kind = KP__YAML_STRING, .fn = on_binaries},
};

static int on_cache(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_mapping(c, node, cache_fields, sizeof cache_fields / sizeof *cache_fields,
                                 NULL);
}

/* ---- tuning ------------------------------------------------------------------------------ */

/* Takes `key`. */
static int add_value(kp__yaml *c, kp__tuning_entry *e, const char *kernel, char *key,
                     yaml_node_t *node)
{
    const char *text = kp__yaml_text(node);
    /* `{ a.b: 1, a: { b: 2 } }` sets "a.b" twice though no mapping repeats a key. A kernel's
     * values are contiguous at the end, so only those are compared. */
    for (size_t i = e->n_values; i-- > 0 && strcmp(e->values[i].kernel, kernel) == 0;)
        if (strcmp(e->values[i].key, key) == 0) {
            free(key);
            return kp__yaml_fail(c, node, "duplicate tunable %s (first set at %u:%u)",
                                 kp__yaml_show(e->values[i].key).s, e->values[i].loc.line,
                                 e->values[i].loc.col);
        }
    int64_t value = 0;
    int is_int = 0;
    /* A quoted scalar is a string in YAML, so `WG: "64"` stays text. */
    if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        int r = kp__yaml_parse_int(text, &value);
        if (r < 0) {
            free(key);
            return kp__yaml_fail(c, node, "integer %s is out of range (int64)", text);
        }
        is_int = r > 0;
        int b = 0;
        if (!is_int && kp__yaml_parse_bool(text, &b)) {
            is_int = 1;
            value = b;
        }
    }
    void *grown = realloc(e->values, (e->n_values + 1) * sizeof *e->values);
    if (!grown) {
        free(key);
        return kp__yaml_oom(c);
    }
    e->values = grown;
    kp__tuning_value *tv = &e->values[e->n_values];
    *tv = (kp__tuning_value){.key = key, .value = value, .is_int = is_int, .loc = loc_of(c, node)};
    tv->kernel = strdup(kernel);
    tv->text = strdup(text);
    e->n_values++; /* counted even when a strdup failed, so fini frees what was made */
    return tv->kernel && tv->text ? 0 : kp__yaml_oom(c);
}

/* Flattens { clblast.Xgemm: { MWG: 64 } } into "clblast.Xgemm.MWG" = 64. */
static int flatten(kp__yaml *c, kp__tuning_entry *e, const char *kernel, const char *prefix,
                   yaml_node_t *map, int depth)
{
    if (depth > MAX_TUNING_DEPTH)
        return kp__yaml_fail(c, map, "tuned values nest deeper than %d levels", MAX_TUNING_DEPTH);
    if (kp__yaml_check_keys(c, map) < 0)
        return -1;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = yaml_document_get_node(&c->doc, p->key);
        yaml_node_t *val = yaml_document_get_node(&c->doc, p->value);
        const char *name = kp__yaml_text(key);
        size_t saved = kp__yaml_path_key(c, name);
        if (!kp__name_is_tunable(name))
            return kp__yaml_fail(c, key,
                                 "invalid tunable name %s (expected letters, digits and '_', "
                                 "not starting with a digit)",
                                 kp__yaml_show(name).s);
        char *full = NULL;
        if (asprintf(&full, "%s%s%s", prefix, *prefix ? "." : "", name) < 0)
            return kp__yaml_oom(c);
        int r;
        if (val->type == YAML_MAPPING_NODE) {
            r = flatten(c, e, kernel, full, val, depth + 1);
            free(full);
        } else if (val->type == YAML_SCALAR_NODE && !kp__yaml_is_null(val)) {
            r = add_value(c, e, kernel, full, val);
        } else {
            free(full);
            r = kp__yaml_fail(c, val, "expected a scalar or a mapping, got %s",
                              kp__yaml_describe(val).s);
        }
        if (r < 0)
            return -1;
        kp__yaml_path_pop(c, saved);
    }
    return 0;
}

static int on_kernel(kp__yaml *c, yaml_node_t *key, yaml_node_t *node, const kp__yaml_value *v,
                     void *obj)
{
    const char *kernel = kp__yaml_text(key);
    if (check_kernel_name(c, key, kernel) < 0)
        return -1;
    return flatten(c, obj, kernel, "", node, 0);
}

static int on_kernels(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_pairs(c, node, KP__YAML_MAPPING, on_kernel, obj);
}

static int on_match(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp__tuning_entry *e = obj;
    match_target t = {&e->vendor, &e->type, &e->name, &e->arch, NULL, NULL};
    return kp__yaml_walk_mapping(c, node, rule_fields, N_MATCH_FIELDS, &t);
}

static int on_prov_pair(kp__yaml *c, yaml_node_t *key, yaml_node_t *node, const kp__yaml_value *v,
                        void *obj)
{
    kp__tuning_entry *e = obj;
    void *k = realloc(e->prov_keys, (e->n_prov + 1) * sizeof *e->prov_keys);
    if (k)
        e->prov_keys = k;
    void *p = realloc(e->prov_values, (e->n_prov + 1) * sizeof *e->prov_values);
    if (p)
        e->prov_values = p;
    char *ks = strdup(kp__yaml_text(key)), *vs = strdup(v->s);
    if (!k || !p || !ks || !vs) {
        free(ks);
        free(vs);
        return kp__yaml_oom(c);
    }
    e->prov_keys[e->n_prov] = ks;
    e->prov_values[e->n_prov++] = vs;
    return 0;
}

static int on_provenance(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_pairs(c, node, KP__YAML_STRING, on_prov_pair, obj);
}

static const kp__yaml_field entry_fields[] = {
    {.key = "match", .kind = KP__YAML_MAPPING, .fn = on_match},
    {.key = "kernels", .kind = KP__YAML_MAPPING, .fn = on_kernels, .required = "the tuned values"},
    {.key = "provenance", .kind = KP__YAML_MAPPING, .fn = on_provenance},
};

static int on_entry(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    kp__manifest *m = model(c);
    kp__tuning_entry *e;
    APPEND(c, m->tuning, m->n_tuning, e);
    /* The entry's place is its first key, which is where a block mapping's `- ` item begins. */
    yaml_node_pair_t *first = node->data.mapping.pairs.start;
    e->loc =
        loc_of(c, first < node->data.mapping.pairs.top ? yaml_document_get_node(&c->doc, first->key)
                                                       : node);
    return kp__yaml_walk_mapping(c, node, entry_fields, sizeof entry_fields / sizeof *entry_fields,
                                 e);
}

static int on_tuning(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    return kp__yaml_walk_sequence(c, node, KP__YAML_MAPPING, on_entry, NULL);
}

/* ---- top level --------------------------------------------------------------------------- */

static int on_version(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    if (v->i > 1)
        return kp__yaml_fail(c, node,
                             "schema version %lld is newer than this Kernelport supports (1)",
                             (long long)v->i);
    if (v->i < 1)
        return kp__yaml_fail(c, node, "schema version %lld is not valid (the current one is 1)",
                             (long long)v->i);
    return 0;
}

static int on_require(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj)
{
    if (strcmp(v->s, "opencl") != 0 && strcmp(v->s, "any") != 0)
        return kp__yaml_fail(c, node, "require must be \"opencl\" or \"any\", got %s",
                             kp__yaml_show(v->s).s);
    model(c)->require_opencl = strcmp(v->s, "opencl") == 0;
    layer(c)->has_require = 1;
    return 0;
}

static const kp__yaml_field top_fields[] = {
    {.key = "kernelport", .kind = KP__YAML_INT, .fn = on_version, .required = "the schema version"},
    {.key = "require", .kind = KP__YAML_STRING, .fn = on_require},
    {.key = "device", .kind = KP__YAML_SEQUENCE, .fn = on_device},
    {.key = "plugins", .kind = KP__YAML_MAPPING, .fn = on_plugins},
    {.key = "cache", .kind = KP__YAML_MAPPING, .fn = on_cache},
    {.key = "tuning", .kind = KP__YAML_SEQUENCE, .fn = on_tuning},
};

static int walk_root(kp__yaml *c, yaml_node_t *root)
{
    if (!root || kp__yaml_is_null(root)) {
        static const yaml_mark_t start = {0, 0, 0};
        return kp__yaml_fail_at(c, root ? root->start_mark : start,
                                "missing key \"kernelport\" (the schema version)");
    }
    if (root->type != YAML_MAPPING_NODE)
        return kp__yaml_fail(c, root, "expected a mapping, got %s",
                             root->type == YAML_SCALAR_NODE ? "a scalar"
                                                            : kp__yaml_describe(root).s);
    /* The version first: a newer file's unknown keys should read as "too new", not as typos. */
    if (kp__yaml_check_keys(c, root) < 0 || kp__yaml_walk_key(c, root, &top_fields[0], NULL) < 0)
        return -1;
    return kp__yaml_walk_mapping(c, root, top_fields, sizeof top_fields / sizeof *top_fields, NULL);
}

kp_status kp__manifest_parse(kp__manifest_layer *out, const char *text, size_t len,
                             const char *file, char **err)
{
    return kp__yaml_run(text, len, file, walk_root, out, err);
}
