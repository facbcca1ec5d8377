/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest model's lifetime, reading manifest files, and merging each layer over the last. */
#include "manifest-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A manifest is a few kilobytes; anything this big is the wrong file. */
#define MAX_MANIFEST_BYTES ((size_t)16 << 20)

void kp__manifest_init(kp__manifest *m)
{
    memset(m, 0, sizeof *m);
    m->cache_max_mb = 512;
    m->plugin_probe = 1;
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void rule_fini(kp__device_rule *r)
{
    free(r->vendor);
    free(r->type);
    free(r->name);
    free(r->arch);
    free(r->uuid);
}

static void rules_free(kp__device_rule *rules, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rule_fini(&rules[i]);
    free(rules);
}

static void entry_fini(kp__tuning_entry *e)
{
    free(e->vendor);
    free(e->type);
    free(e->name);
    free(e->arch);
    for (size_t i = 0; i < e->n_values; i++) {
        free(e->values[i].kernel);
        free(e->values[i].key);
        free(e->values[i].text);
    }
    free(e->values);
    free_strs(e->prov_keys, e->n_prov);
    free_strs(e->prov_values, e->n_prov);
}

void kp__manifest_fini(kp__manifest *m)
{
    if (!m)
        return;
    rules_free(m->rules, m->n_rules);
    free_strs(m->plugin_dirs, m->n_plugin_dirs);
    free_strs(m->disable, m->n_disable);
    free_strs(m->prefer_kernel, m->n_prefer);
    free_strs(m->prefer_plugin, m->n_prefer);
    free(m->cache_dir);
    for (size_t i = 0; i < m->n_tuning; i++)
        entry_fini(&m->tuning[i]);
    free(m->tuning);
    free_strs(m->files, m->n_files);
    /* Left as kp__manifest_init leaves it, so a fini'd manifest can be loaded into again. */
    kp__manifest_init(m);
}

/* Grows `arr` to hold `n` elements, or returns KP_ERR_OUT_OF_MEMORY from the enclosing function
 * with the old block (still valid) in place. */
#define RESERVE(arr, have, add)                                                                    \
    do {                                                                                           \
        if ((add) > 0) {                                                                           \
            void *grown_ = realloc((arr), ((have) + (add)) * sizeof *(arr));                       \
            if (!grown_)                                                                           \
                return KP_ERR_OUT_OF_MEMORY;                                                       \
            (arr) = grown_;                                                                        \
        }                                                                                          \
    } while (0)

/* Appends src's strings to dst, which has room for them, and leaves src owning none. */
static void move_strs(char **dst, size_t *n_dst, char **src, size_t *n_src)
{
    for (size_t i = 0; i < *n_src; i++)
        dst[(*n_dst)++] = src[i];
    *n_src = 0;
}

/*
 * Moves the layer's contents into `m`. Every allocation happens before the first move, so running
 * out of memory leaves `m` as it was (only with roomier arrays). What is moved is cleared from
 * the layer; the caller finalises the layer either way.
 */
static kp_status merge(kp__manifest *m, kp__manifest_layer *l, uint32_t layer)
{
    kp__manifest *s = &l->m;
    RESERVE(m->plugin_dirs, m->n_plugin_dirs, s->n_plugin_dirs);
    RESERVE(m->disable, m->n_disable, s->n_disable);
    RESERVE(m->prefer_kernel, m->n_prefer, s->n_prefer);
    RESERVE(m->prefer_plugin, m->n_prefer, s->n_prefer);
    RESERVE(m->tuning, m->n_tuning, s->n_tuning);
    RESERVE(m->files, m->n_files, s->n_files);

    if (l->has_require)
        m->require_opencl = s->require_opencl;
    if (l->has_device) {
        rules_free(m->rules, m->n_rules);
        m->rules = s->rules;
        m->n_rules = s->n_rules;
        s->rules = NULL;
        s->n_rules = 0;
    }
    move_strs(m->plugin_dirs, &m->n_plugin_dirs, s->plugin_dirs, &s->n_plugin_dirs);
    move_strs(m->disable, &m->n_disable, s->disable, &s->n_disable);
    for (size_t i = 0; i < s->n_prefer; i++) {
        size_t j = 0;
        while (j < m->n_prefer && strcmp(m->prefer_kernel[j], s->prefer_kernel[i]) != 0)
            j++;
        if (j < m->n_prefer) {
            free(s->prefer_kernel[i]);
            free(m->prefer_plugin[j]);
        } else {
            m->prefer_kernel[m->n_prefer++] = s->prefer_kernel[i];
        }
        m->prefer_plugin[j] = s->prefer_plugin[i];
    }
    s->n_prefer = 0;
    if (l->has_allow_insecure)
        m->allow_insecure = s->allow_insecure;
    if (l->has_plugin_probe)
        m->plugin_probe = s->plugin_probe;
    if (l->has_cache_dir) {
        free(m->cache_dir);
        m->cache_dir = s->cache_dir;
        s->cache_dir = NULL;
    }
    if (l->has_cache_max_mb)
        m->cache_max_mb = s->cache_max_mb;
    if (l->has_cache_binaries)
        m->cache_binaries = s->cache_binaries;
    for (size_t i = 0; i < s->n_tuning; i++) {
        kp__tuning_entry *e = &m->tuning[m->n_tuning];
        *e = s->tuning[i];
        e->layer = layer;
        e->order = (uint32_t)m->n_tuning++;
    }
    s->n_tuning = 0;
    /* The same strings move, so every kp__loc.file made while parsing stays valid. */
    move_strs(m->files, &m->n_files, s->files, &s->n_files);
    return KP_OK;
}

static kp_status oom(const char *file, char **err)
{
    if (err && asprintf(err, "%s: error: out of memory", file) < 0)
        *err = NULL;
    return KP_ERR_OUT_OF_MEMORY;
}

kp_status kp__manifest_load_text(kp__manifest *m, const char *text, size_t len, const char *file,
                                 uint32_t layer, char **err)
{
    assert(m);
    if (err)
        *err = NULL;
    if (!file)
        file = "<text>";
    /* Parsed on the side, so a broken file changes nothing. */
    kp__manifest_layer tmp = {0};
    kp__manifest_init(&tmp.m);
    tmp.m.files = malloc(sizeof *tmp.m.files);
    if (!tmp.m.files || !(tmp.m.files[0] = strdup(file))) {
        free(tmp.m.files);
        return oom(file, err);
    }
    tmp.m.n_files = 1;
    kp_status st = kp__manifest_parse(&tmp, text, len, tmp.m.files[0], err);
    if (st == KP_OK && (st = merge(m, &tmp, layer)) != KP_OK)
        oom(file, err);
    kp__manifest_fini(&tmp.m);
    return st;
}

static kp_status io_error(const char *path, const char *what, int errnum, char **err)
{
    if (err && asprintf(err, "%s: error: %s: %s", path, what, strerror(errnum)) < 0)
        *err = NULL;
    return KP_ERR_MANIFEST;
}

kp_status kp__manifest_load_file(kp__manifest *m, const char *path, uint32_t layer, int must_exist,
                                 char **err)
{
    assert(m && path);
    if (err)
        *err = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        /* Only absence is optional: a file that is there but unreadable would otherwise be
         * ignored without a word. */
        if (!must_exist && (e == ENOENT || e == ENOTDIR))
            return KP_OK;
        return io_error(path, "cannot open manifest", e, err);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    kp_status st = KP_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= MAX_MANIFEST_BYTES) {
                if (err && asprintf(err, "%s: error: manifest is larger than %zu MiB", path,
                                    MAX_MANIFEST_BYTES >> 20) < 0)
                    *err = NULL;
                st = KP_ERR_MANIFEST;
                break;
            }
            cap = cap ? cap * 2 : 4096;
            char *grown = realloc(buf, cap);
            if (!grown) {
                st = oom(path, err);
                break;
            }
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                st = io_error(path, "cannot read manifest", errno, err);
            break;
        }
    }
    fclose(f);
    if (st == KP_OK)
        st = kp__manifest_load_text(m, buf, len, path, layer, err);
    free(buf);
    return st;
}
