/* SPDX-License-Identifier: Apache-2.0 */
/* Private to the manifest module: the parsed layer with its "was set" flags, shared helpers. */
#ifndef KP_MANIFEST_INTERNAL_H
#define KP_MANIFEST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "manifest.h"

/*
 * One file as parsed, before it is merged. kp__manifest alone cannot tell "set to the default"
 * from "not written", and the merge rules need that difference.
 */
typedef struct kp__manifest_layer {
    kp__manifest m;
    int has_require;
    int has_device;
    int has_allow_insecure;
    int has_plugin_probe;
    int has_cache_dir;
    int has_cache_max_mb;
    int has_cache_binaries;
} kp__manifest_layer;

/*
 * Parses `text` into `out` (initialised by the caller; its m.files[0] is the interned `file` that
 * every kp__loc points to). On error returns KP_ERR_MANIFEST or KP_ERR_OUT_OF_MEMORY, sets *err to
 * a malloc'd message (NULL only when even that allocation failed) and leaves whatever it had
 * built in `out` for kp__manifest_fini.
 */
kp_status kp__manifest_parse(kp__manifest_layer *out, const char *text, size_t len,
                             const char *file, char **err);

/*
 * kp__path_expand; with `hint`, the message for an unset ${VAR} goes on with
 * " (write ${VAR:-default} for a fallback)", which suits a manifest the user can edit.
 */
kp_status kp__path_expand_detail(const char *in, char **out, char **err, int hint);

/* The name load_text gives the compiled-in manifest; relative paths are refused there. */
#define KP__MANIFEST_BUILTIN_NAME "<built-in>"

/* ---- the table-driven YAML walker (manifest-yaml.c), used by the schema (manifest-parse.c) ----
 */

/* What a table expects at a key; the walker checks it, so handlers get a checked value. */
typedef enum kp__yaml_kind {
    KP__YAML_MAPPING,
    KP__YAML_SEQUENCE,
    KP__YAML_STRING, /* any scalar but null */
    KP__YAML_INT,    /* plain decimal or 0x hex within int64 */
    KP__YAML_BOOL,   /* plain true/false/yes/no/on/off, any case */
} kp__yaml_kind;

/* The checked scalar: `s` for strings, `i` for integers and booleans (1/0). */
typedef struct kp__yaml_value {
    const char *s;
    int64_t i;
} kp__yaml_value;

typedef struct kp__yaml kp__yaml;

/* Handlers return 0, or -1 after recording an error with kp__yaml_fail or kp__yaml_oom. */
typedef int (*kp__yaml_handler)(kp__yaml *c, yaml_node_t *node, const kp__yaml_value *v, void *obj);
typedef int (*kp__yaml_pair_handler)(kp__yaml *c, yaml_node_t *key, yaml_node_t *node,
                                     const kp__yaml_value *v, void *obj);

typedef struct kp__yaml_field {
    const char *key;
    kp__yaml_kind kind;
    kp__yaml_handler fn;
    const char *required; /* NULL: optional; else what the key is, for "missing key" */
} kp__yaml_field;

/* One walk over one document. `path` is the YAML path of the node being handled. */
struct kp__yaml {
    yaml_document_t doc;
    const char *text; /* the source, for the line quoted under each error */
    size_t len;
    const char *file;
    void *user;
    char *path;
    size_t path_len, path_cap;
    int path_oom;
    size_t budget; /* nodes left to visit: aliases can make a small file a huge tree */
    char *err;
    kp_status status;
};

/* A value quoted for a message, escaped and cut short; valid for one full expression. */
typedef struct kp__yaml_shown {
    char s[100];
} kp__yaml_shown;

#if defined(__GNUC__)
#define KP__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KP__PRINTF(f, a)
#endif

/* Records "FILE:LINE:COL: error: PATH: message" + source line + caret; keeps the first error. */
int kp__yaml_fail(kp__yaml *c, const yaml_node_t *node, const char *fmt, ...) KP__PRINTF(3, 4);
int kp__yaml_fail_at(kp__yaml *c, yaml_mark_t mark, const char *fmt, ...) KP__PRINTF(3, 4);
int kp__yaml_oom(kp__yaml *c);

kp__yaml_shown kp__yaml_show(const char *s);
/* "null", "a mapping", "a sequence", or the scalar quoted. */
kp__yaml_shown kp__yaml_describe(const yaml_node_t *node);
const char *kp__yaml_text(const yaml_node_t *scalar);
int kp__yaml_is_null(const yaml_node_t *node);
/* 1 and *out set, 0 when `s` is not an integer, -1 when it is one outside int64. */
int kp__yaml_parse_int(const char *s, int64_t *out);
/* 1 and *out set to 1/0, or 0 when `s` is not a boolean. */
int kp__yaml_parse_bool(const char *s, int *out);

/* Extend the path; pass the result to kp__yaml_path_pop to undo. */
size_t kp__yaml_path_key(kp__yaml *c, const char *key);
size_t kp__yaml_path_index(kp__yaml *c, size_t index);
void kp__yaml_path_pop(kp__yaml *c, size_t saved);

/* Every key of `map` a non-null scalar, none twice. */
int kp__yaml_check_keys(kp__yaml *c, yaml_node_t *map);
/* Dispatches each key of `map` through `fields` (unknown keys are errors, naming the allowed
 * ones), then reports the first missing required key. */
int kp__yaml_walk_mapping(kp__yaml *c, yaml_node_t *map, const kp__yaml_field *fields,
                          size_t n_fields, void *obj);
/* Handles just `field` of `map`, when present (or reports it missing when required). */
int kp__yaml_walk_key(kp__yaml *c, yaml_node_t *map, const kp__yaml_field *field, void *obj);
int kp__yaml_walk_sequence(kp__yaml *c, yaml_node_t *seq, kp__yaml_kind kind, kp__yaml_handler fn,
                           void *obj);
/* For mappings with free-form keys (prefer, kernels, provenance): every value of `kind`. */
int kp__yaml_walk_pairs(kp__yaml *c, yaml_node_t *map, kp__yaml_kind kind, kp__yaml_pair_handler fn,
                        void *obj);

/* Loads `text` as one YAML document and calls `walk` on its root (NULL when empty). Returns
 * KP_OK, or KP_ERR_MANIFEST / KP_ERR_OUT_OF_MEMORY with *err as kp__manifest_parse. */
kp_status kp__yaml_run(const char *text, size_t len, const char *file,
                       int (*walk)(kp__yaml *c, yaml_node_t *root), void *user, char **err);

#endif
