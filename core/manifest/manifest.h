/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: the manifest model, its YAML loader and the layering of manifest files. */
#ifndef KP_MANIFEST_H
#define KP_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/kernelport.h"

/* Where a manifest node was written. `file` points into kp__manifest.files (owned there). */
typedef struct kp__loc {
    const char *file;
    uint32_t line; /* 1-based */
    uint32_t col;  /* 1-based */
} kp__loc;

/* One `device:` rule. NULL fields match anything; `vendor` and `type` are canonical names
 * ("nvidia", "gpu"); `name` is a case-insensitive substring; `index` picks the n-th device that
 * matches the other fields (-1: the first). */
typedef struct kp__device_rule {
    char *vendor;
    char *type;
    char *name;
    char *arch;
    char *uuid;
    int64_t index;
    kp__loc loc;
} kp__device_rule;

/* One tuned value: kernels: { example.axpy: { WG: 64 } } gives kernel "example.axpy", key "WG".
 * Nested maps flatten with dots: { blas.gemm: { clblast.Xgemm: { MWG: 64 } } } gives key
 * "clblast.Xgemm.MWG". */
typedef struct kp__tuning_value {
    char *kernel;
    char *key;
    char *text;    /* the scalar as written */
    int64_t value; /* valid when is_int */
    int is_int;    /* integers, and true/false as 1/0 */
    kp__loc loc;
} kp__tuning_value;

/* One `tuning:` entry. */
typedef struct kp__tuning_entry {
    char *vendor; /* match fields, canonical like kp__device_rule; NULL matches anything */
    char *type;
    char *name;
    char *arch;
    kp__tuning_value *values;
    size_t n_values;
    char **prov_keys; /* `provenance:` scalars, kept to write back and to explain */
    char **prov_values;
    size_t n_prov;
    kp__loc loc;    /* the entry itself (its first key) */
    uint32_t layer; /* the layer it came from: later layers win ties */
    uint32_t order; /* position among all entries of all layers */
} kp__tuning_entry;

typedef struct kp__manifest {
    int require_opencl;     /* `require: opencl` */
    kp__device_rule *rules; /* the last layer that has `device:` replaces earlier rules */
    size_t n_rules;
    char **plugin_dirs; /* expanded (~, ${VAR}); layers append */
    size_t n_plugin_dirs;
    char **disable; /* plugin names or kernel names; layers append */
    size_t n_disable;
    char **prefer_kernel; /* prefer: { kernel: plugin }; later layers override a kernel */
    char **prefer_plugin;
    size_t n_prefer;
    int allow_insecure;
    int plugin_probe;         /* plugins.probe: 1 unless set */
    char *cache_dir;          /* expanded; NULL when no layer set it */
    int64_t cache_max_mb;     /* 512 unless set */
    int cache_binaries;       /* KP__BINARIES_*; auto unless set */
    kp__tuning_entry *tuning; /* all layers, in load order */
    size_t n_tuning;
    char **files; /* every file name loaded, owned; kp__loc.file points here */
    size_t n_files;
} kp__manifest;

/* `cache.binaries`: whether built programs' binaries go to the disk cache. Under `auto` they do
 * except on drivers that keep a build cache of their own and whose binaries cost a compile of
 * every kernel in the program (PoCL). */
enum { KP__BINARIES_AUTO = 0, KP__BINARIES_ALWAYS, KP__BINARIES_NEVER };

/* An empty manifest: no rules, no tuning, cache_max_mb 512, binaries auto. */
void kp__manifest_init(kp__manifest *m);
/* Frees everything the manifest owns. */
void kp__manifest_fini(kp__manifest *m);

/*
 * Parses YAML `text` (len bytes) named `file` (for messages) as layer number `layer` and merges
 * it over `m`. On error, `m` is unchanged, the result is KP_ERR_MANIFEST and *err receives a
 * malloc'd message:
 *     FILE:LINE:COL: error: YAML.PATH: message
 *       the source line
 *       ^
 */
kp_status kp__manifest_load_text(kp__manifest *m, const char *text, size_t len, const char *file,
                                 uint32_t layer, char **err);

/* Reads `path` and loads it as above. A missing file is KP_OK (nothing merged) unless
 * `must_exist`, then KP_ERR_MANIFEST "PATH: error: cannot open manifest: <strerror>". */
kp_status kp__manifest_load_file(kp__manifest *m, const char *path, uint32_t layer, int must_exist,
                                 char **err);

/*
 * Expands a leading "~" or "~/" (HOME), "${VAR}" and "${VAR:-default}" (the default itself
 * expanded). An unset VAR without default is an error: *out NULL, *err malloc'd
 * "environment variable VAR is not set". On success *out is malloc'd.
 */
kp_status kp__path_expand(const char *in, char **out, char **err);

#endif
