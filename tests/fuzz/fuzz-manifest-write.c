/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: kp_manifest_write_tuning on an arbitrary existing manifest and arbitrary
 * arguments. The input is NUL-separated fields: the existing text, then vendor, type, name and
 * arch of the match (empty: left out), then (kernel, tunable, value) triples, then after a field
 * "=" (key, value) provenance pairs. When the write succeeds, the file must load and the entry
 * with that match must hold every value written; when it fails, the file must be unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manifest/manifest.h"
#include "vendor.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FIELDS 64

static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[] = "/tmp/kp-fuzz-write-XXXXXX";
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof path, "%s/manifest.yaml", dir);
    return 0;
}

static char *read_all(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 4096 > cap) {
            cap = 2 * cap + 4096;
            char *g = realloc(s, cap);
            if (!g)
                abort();
            s = g;
        }
        size_t n = fread(s + *len, 1, cap - *len, f);
        *len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    return s;
}

static int same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether the value of `v`'s kernel and name that the loaded manifest gives a device of
 * `match` is v's: the last entry with exactly that match which sets it wins, as in the runtime. */
static int holds(const kp__manifest *m, const kp_tuning_match *match, const kp_tuned_value *v)
{
    kp_vendor vendor;
    kp_device_type type;
    const char *vn = match->vendor && kp__vendor_parse(match->vendor, &vendor) == 0
                         ? kp_vendor_name(vendor)
                         : NULL;
    const char *tn = match->type && kp__device_type_parse(match->type, &type) == 0
                         ? kp_device_type_name(type)
                         : NULL;
    for (size_t i = m->n_tuning; i-- > 0;) {
        const kp__tuning_entry *e = &m->tuning[i];
        if (!same(e->vendor, vn) || !same(e->type, tn) || !same(e->name, match->name) ||
            !same(e->arch, match->arch))
            continue;
        for (size_t j = e->n_values; j-- > 0;)
            if (strcmp(e->values[j].kernel, v->kernel) == 0 &&
                strcmp(e->values[j].key, v->name) == 0)
                return strcmp(e->values[j].text, v->value) == 0;
    }
    return 0;
}

/* Whether a later value of the request sets the same kernel and name as values[v]. */
static int superseded(const kp_tuned_value *values, size_t n, size_t v)
{
    for (size_t w = v + 1; w < n; w++)
        if (strcmp(values[w].kernel, values[v].kernel) == 0 &&
            strcmp(values[w].name, values[v].name) == 0)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Fields as NUL-terminated strings in a copy with a terminator at the end. */
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *field[MAX_FIELDS];
    size_t n = 0;
    for (size_t at = 0; at <= size && n < MAX_FIELDS;) {
        field[n++] = buf + at;
        at += strlen(buf + at) + 1;
    }
    const size_t text_len = strlen(field[0]);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(field[0], 1, text_len, f) != text_len || fclose(f) != 0)
        abort();

    const char *m4[4] = {NULL, NULL, NULL, NULL};
    for (size_t i = 0; i < 4 && 1 + i < n; i++)
        m4[i] = *field[1 + i] ? field[1 + i] : NULL;
    kp_tuning_match match = {.vendor = m4[0], .type = m4[1], .name = m4[2], .arch = m4[3]};
    kp_tuned_value values[MAX_FIELDS / 3];
    size_t nv = 0, i = 5;
    for (; i + 2 < n && strcmp(field[i], "=") != 0; i += 3)
        values[nv++] = (kp_tuned_value){field[i], field[i + 1], field[i + 2]};
    const char *const *prov = i < n ? &field[i + 1] : NULL;
    size_t np = i < n ? (n - i - 1) / 2 : 0;

    kp_status st = kp_manifest_write_tuning(path, &match, values, nv, prov, np);
    size_t len;
    char *after = read_all(path, &len);
    if (st != KP_OK) {
        if (!after || len != text_len || memcmp(after, field[0], len) != 0)
            abort(); /* a refused write changed the file */
    } else {
        kp__manifest m;
        kp__manifest_init(&m);
        char *err = NULL;
        if (kp__manifest_load_text(&m, after, len, path, 0, &err) != KP_OK) {
            fprintf(stderr, "written manifest does not load: %s\n", err ? err : "?");
            abort();
        }
        for (size_t v = 0; v < nv; v++)
            if (!superseded(values, nv, v) && !holds(&m, &match, &values[v])) {
                fprintf(stderr, "value %s %s = %s not found after the write\n", values[v].kernel,
                        values[v].name, values[v].value);
                abort();
            }
        free(err);
        kp__manifest_fini(&m);
    }
    free(after);
    free(buf);
    return 0;
}
