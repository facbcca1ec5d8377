/* SPDX-License-Identifier: Apache-2.0 */
/* Tuning resolution: the most specific manifest entry whose value is allowed and fits wins. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry.h"
#include "struct-size.h"
#include "vendor.h"

/* device name > architecture > vendor+type > vendor > type > an empty match */
static int specificity(const kp__tuning_entry *e)
{
    return (e->name ? 16 : 0) + (e->arch ? 8 : 0) + (e->vendor ? 2 : 0) + (e->type ? 1 : 0);
}

static int entry_matches(const kp__tuning_entry *e, const kp_device_info *d)
{
    return (!e->vendor || strcmp(e->vendor, kp_vendor_name(d->vendor)) == 0) &&
           (!e->type || strcmp(e->type, kp_device_type_name(d->type)) == 0) &&
           (!e->name || kp__contains_nocase(d->name, e->name)) &&
           (!e->arch || strcasecmp(e->arch, d->arch) == 0);
}

/* The built-in manifest is layer 0. */
static int entry_applies(const kp_runtime *rt, const kp__tuning_entry *e, const kp_device_info *d)
{
    if ((rt->flags & KP_RUNTIME_NO_BUILTIN_TUNING) && e->layer == 0)
        return 0;
    return entry_matches(e, d);
}

typedef struct candidate {
    const kp__tuning_entry *entry;
    const kp__tuning_value *value;
} candidate;

/* Most specific first; among equals, the later layer, then the later entry. */
static int by_priority(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    int sa = specificity(a->entry), sb = specificity(b->entry);
    if (sa != sb)
        return sb - sa;
    if (a->entry->layer != b->entry->layer)
        return a->entry->layer < b->entry->layer ? 1 : -1;
    return a->entry->order < b->entry->order ? 1 : (a->entry->order > b->entry->order ? -1 : 0);
}

static char *allowed_text(const kp_tunable_desc *t)
{
    char *s = NULL;
    if (t->n_allowed) {
        for (uint32_t i = 0; i < t->n_allowed; i++)
            kp__append(&s, "%s%lld", i ? ", " : "", (long long)t->allowed[i]);
    } else if (t->choices) {
        for (size_t i = 0; t->choices[i]; i++)
            kp__append(&s, "%s%s", i ? ", " : "", t->choices[i]);
    } else {
        s = kp__asprintf("%lld..%lld", (long long)t->min, (long long)t->max);
    }
    return s ? s : kp__strdup("");
}

static char *describe_match(const kp__tuning_entry *e)
{
    char *s = kp__asprintf("%s:%u match {", e->loc.file ? e->loc.file : "?", e->loc.line);
    const char *keys[] = {"vendor", "type", "name", "arch"};
    const char *vals[] = {e->vendor, e->type, e->name, e->arch};
    const char *sep = "";
    for (int i = 0; i < 4; i++)
        if (vals[i]) {
            kp__append(&s, "%s%s: %s", sep, keys[i], vals[i]);
            sep = ", ";
        }
    kp__append(&s, "}");
    return s;
}

/* An entry's `provenance:` as one line ("device: NVIDIA H200, date: 2026-11-21, ..."), NULL when
 * it has none. */
static char *describe_provenance(const kp__tuning_entry *e)
{
    char *s = NULL;
    for (size_t i = 0; i < e->n_prov; i++)
        kp__append(&s, "%s%s: %s", i ? ", " : "", e->prov_keys[i], e->prov_values[i]);
    return s;
}

/* The integer a manifest value stands for, or a reason it stands for none. */
static int value_of(const kp_tunable_desc *t, const kp__tuning_value *v, int64_t *out, char **why)
{
    if (v->is_int) {
        *out = v->value;
    } else {
        size_t i = 0;
        while (t->choices && t->choices[i] && strcmp(t->choices[i], v->text) != 0)
            i++;
        if (!t->choices || !t->choices[i]) {
            *why = kp__asprintf("\"%s\" is not a value of %s", v->text, t->name);
            return 0;
        }
        *out = (int64_t)i;
    }
    return 1;
}

static void note(kp_runtime *rt, kp__tuning_choice *c, const kp_kernel *k,
                 const kp__tuning_value *v, const char *t_name, const char *why, int log)
{
    kp__append(&c->notes, "%s%s:%u: %s = %s rejected: %s", c->notes ? "; " : "",
               v->loc.file ? v->loc.file : "?", v->loc.line, t_name, v->text, why);
    if (log)
        kp__log(rt, KP_LOG_WARN, "%s:%u:%u: warning: %s: %s = %s rejected: %s; using %s",
                v->loc.file ? v->loc.file : "?", v->loc.line, v->loc.col, k->desc->name, t_name,
                v->text, why, "the next less specific entry");
}

/* The default is the last resort, but the device or the compiled kernel may not run it either
 * (a small GPU, POCL_MAX_WORK_GROUP_SIZE): then the largest allowed workgroup that fits is used,
 * so that no launch fails on a default nobody chose for this device. */
static void fit_default(kp_runtime *rt, kp_kernel *k, uint32_t ti, size_t max_wg)
{
    const kp_tunable_desc *t = &k->desc->tunables[ti];
    kp__tuning_choice *c = &k->choices[ti];
    const kp_device_info *d = kp__device(rt);
    if (!(t->flags & KP_TUNABLE_WORKGROUP) || kp__is_host(rt) || !c->origin ||
        strcmp(c->origin, "default") != 0)
        return;
    uint64_t limit = d->max_workgroup ? d->max_workgroup : UINT64_MAX;
    const char *whose = "device's";
    if (max_wg && max_wg < limit) {
        limit = max_wg;
        whose = "compiled kernel's";
    }
    if (c->value >= 1 && (uint64_t)c->value <= limit)
        return;
    int64_t best = 0;
    if (t->n_allowed) {
        for (uint32_t i = 0; t->allowed && i < t->n_allowed; i++)
            if (t->allowed[i] > best && (uint64_t)t->allowed[i] <= limit)
                best = t->allowed[i];
    } else if (!t->choices && t->max >= 1) {
        int64_t hi = (uint64_t)t->max > limit ? (int64_t)limit : t->max;
        best = hi >= t->min ? hi : 0;
    }
    if (best < 1)
        return; /* nothing fits: the launch reports the driver's error */
    kp__append(&c->notes, "%sdefault %lld exceeds the %s maximum workgroup size %llu: using %lld",
               c->notes ? "; " : "", (long long)c->value, whose, (unsigned long long)limit,
               (long long)best);
    kp__log(rt, KP_LOG_INFO,
            "kernel %s: %s default %lld exceeds the %s maximum workgroup size %llu; using %lld",
            k->desc->name, t->name, (long long)c->value, whose, (unsigned long long)limit,
            (long long)best);
    c->value = best;
}

/* The kernel's own say on a value that means "decide on this device" (kp_kernel_desc.resolve). */
static void resolve_auto(kp_runtime *rt, kp_kernel *k, uint32_t ti)
{
    const kp_kernel_desc *d = k->desc;
    if (d->struct_size < offsetof(kp_kernel_desc, resolve) + sizeof d->resolve || !d->resolve)
        return;
    kp__tuning_choice *c = &k->choices[ti];
    const kp_tunable_desc *t = &d->tunables[ti];
    kp_launch l = {.rt = rt, .kernel = k, .reference = kp__is_host(rt)};
    int64_t v = c->value;
    const char *why = d->resolve(&l, ti, c->value, &v);
    if (!why)
        return;
    if (v == c->value) {
        /* A value the kernel keeps but explains (decided per call, a library's own default). */
        kp__append(&c->notes, "%s%s", c->notes ? "; " : "", why);
        return;
    }
    if (!kp__tunable_allows(t, v)) {
        kp__log(rt, KP_LOG_WARN,
                "kernel %s: %s = %lld resolved to %lld, which is not allowed; kept", d->name,
                t->name, (long long)c->value, (long long)v);
        return;
    }
    const char *from = t->choices ? t->choices[c->value] : NULL;
    if (from)
        kp__append(&c->notes, "%s%s: %s", c->notes ? "; " : "", from, why);
    else
        kp__append(&c->notes, "%s%lld: %s", c->notes ? "; " : "", (long long)c->value, why);
    c->value = v;
    free(c->value_text);
    c->value_text = kp__strdup(t->choices ? t->choices[v] : "");
}

/* Chooses tunable ti's value; max_wg > 0 also rejects workgroups above the compiled limit. */
static void choose(kp_runtime *rt, kp_kernel *k, uint32_t ti, size_t max_wg)
{
    const kp_tunable_desc *t = &k->desc->tunables[ti];
    kp__tuning_choice *c = &k->choices[ti];
    const kp_device_info *d = kp__device(rt);
    const kp__manifest *m = &rt->manifest;
    candidate *cand = calloc(m->n_tuning + 1, sizeof *cand);
    size_t n = 0;
    for (size_t e = 0; cand && e < m->n_tuning; e++) {
        const kp__tuning_entry *en = &m->tuning[e];
        if (!entry_applies(rt, en, d))
            continue;
        for (size_t v = 0; v < en->n_values; v++)
            if (strcmp(en->values[v].kernel, k->desc->name) == 0 &&
                strcmp(en->values[v].key, t->name) == 0) {
                cand[n].entry = en;
                cand[n++].value = &en->values[v];
            }
    }
    if (n > 1)
        qsort(cand, n, sizeof *cand, by_priority);
    free(c->value_text);
    free(c->origin);
    free(c->provenance);
    free(c->notes);
    c->notes = NULL;
    c->provenance = NULL;
    c->value = t->default_value;
    c->value_text = kp__strdup("");
    c->origin = kp__strdup("default");
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        char *why = NULL;
        int compiled_limit = 0;
        /* References ignore workgroups: on the host device any allowed value will do. */
        size_t device_max = d->max_workgroup && !kp__is_host(rt) ? d->max_workgroup : SIZE_MAX;
        if (!value_of(t, cand[i].value, &v, &why)) {
        } else if (!kp__tunable_allows(t, v)) {
            why = kp__asprintf("not an allowed value (allowed: %s)", c->allowed);
        } else if ((t->flags & KP_TUNABLE_WORKGROUP) && (v < 1 || (uint64_t)v > device_max)) {
            why = kp__asprintf("exceeds the device's maximum workgroup size %zu", device_max);
        } else if ((t->flags & KP_TUNABLE_WORKGROUP) && max_wg && (uint64_t)v > max_wg) {
            why = kp__asprintf("exceeds the compiled kernel's maximum workgroup size %zu", max_wg);
            compiled_limit = 1;
        } else {
            c->value = v;
            free(c->value_text);
            c->value_text = kp__strdup(cand[i].value->text);
            free(c->origin);
            c->origin = describe_match(cand[i].entry);
            c->provenance = describe_provenance(cand[i].entry);
            break;
        }
        /* The first pass has logged the manifest's own mistakes; a re-check after the build
         * adds only what the compiled limit rejects. */
        note(rt, c, k, cand[i].value, t->name, why ? why : "invalid",
             max_wg == 0 || compiled_limit);
        free(why);
    }
    free(cand);
    resolve_auto(rt, k, ti);
    fit_default(rt, k, ti, max_wg);
}

static void warn_unknown_keys(kp_runtime *rt, const kp_kernel *k)
{
    const kp__manifest *m = &rt->manifest;
    const kp_device_info *d = kp__device(rt);
    for (size_t e = 0; e < m->n_tuning; e++) {
        if (!entry_applies(rt, &m->tuning[e], d))
            continue;
        for (size_t v = 0; v < m->tuning[e].n_values; v++) {
            const kp__tuning_value *tv = &m->tuning[e].values[v];
            if (strcmp(tv->kernel, k->desc->name) != 0)
                continue;
            uint32_t t = 0;
            while (t < k->desc->n_tunables && strcmp(k->desc->tunables[t].name, tv->key) != 0)
                t++;
            if (t == k->desc->n_tunables)
                kp__log(rt, KP_LOG_WARN, "%s:%u:%u: warning: %s has no tunable \"%s\"; ignored",
                        tv->loc.file ? tv->loc.file : "?", tv->loc.line, tv->loc.col, k->desc->name,
                        tv->key);
        }
    }
}

static void build_options(kp_kernel *k)
{
    k->options_generation++;
    free(k->options);
    k->options = NULL;
    const kp_kernel_desc *d = k->desc;
    for (uint32_t i = 0; i < d->n_tunables; i++) {
        if (d->tunables[i].flags & KP_TUNABLE_NO_DEFINE)
            continue;
        char *name = kp__strdup(d->tunables[i].name);
        for (char *p = name; p && *p; p++)
            if (*p == '.')
                *p = '_';
        kp__append(&k->options, "%s-D %s=%lld", k->options ? " " : "", name ? name : "?",
                   (long long)k->choices[i].value);
        free(name);
    }
    if (d->build_options && *d->build_options)
        kp__append(&k->options, "%s%s", k->options ? " " : "", d->build_options);
    if (!k->options)
        k->options = kp__strdup("");
}

static kp_status check_limits(kp_runtime *rt, kp_kernel *k)
{
    const kp_kernel_desc *d = k->desc;
    if (kp__is_host(rt) || !d->source || !d->entry || !rt->ops->kernel_get)
        return KP_OK;
    /* With no workgroup tunable there is nothing to bound, and no reason to build before the
     * kernel's own check has run (tc.gemm's program compiles only where its check passes). */
    uint32_t bounded = 0;
    for (uint32_t i = 0; i < d->n_tunables; i++)
        bounded += (d->tunables[i].flags & KP_TUNABLE_WORKGROUP) != 0;
    if (!bounded)
        return KP_OK;
    /* Nor for a kernel this device cannot run: its launches are refused before any build, and
     * building it may be slow or fail (gru.rollout_grid on PoCL, tc.gemm's PTX). */
    if (kp__kernel_supported(rt, k) != KP_OK)
        return KP_OK;
    /* Each retry drops one rejected value per workgroup tunable; the defaults end it. */
    for (uint32_t attempt = 0; attempt <= d->n_tunables + 1; attempt++) {
        kp_clkernel *ck;
        kp_status st = kp__kernel_get(rt, k, d->entry, NULL, 0, &ck);
        if (st != KP_OK)
            return st;
        size_t max_wg = 0;
        uint64_t local = 0;
        st = rt->ops->kernel_limits(rt->backend, ck, &max_wg, &local);
        if (st != KP_OK)
            return st;
        int changed = 0;
        for (uint32_t i = 0; i < d->n_tunables; i++) {
            if (!(d->tunables[i].flags & KP_TUNABLE_WORKGROUP) ||
                (uint64_t)k->choices[i].value <= max_wg)
                continue;
            /* A value the application asked for is its to change, not ours. */
            if (k->overridden)
                return kp__fail(rt, KP_ERR_UNSUPPORTED,
                                "kernel %s: %s = %lld exceeds the compiled kernel's maximum "
                                "workgroup size %zu",
                                d->name, d->tunables[i].name, (long long)k->choices[i].value,
                                max_wg);
            choose(rt, k, i, max_wg);
            changed = 1;
        }
        if (!changed)
            return KP_OK;
        build_options(k);
    }
    return KP_OK;
}

kp_status kp__tuning_resolve(kp_runtime *rt, kp_kernel *k)
{
    const kp_kernel_desc *d = k->desc;
    if (!k->resolved) {
        if (d->n_tunables && !k->choices) {
            k->choices = calloc(d->n_tunables, sizeof *k->choices);
            if (!k->choices)
                return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        for (uint32_t i = 0; i < d->n_tunables; i++) {
            k->choices[i].allowed = allowed_text(&d->tunables[i]);
            choose(rt, k, i, 0);
        }
        warn_unknown_keys(rt, k);
        build_options(k);
        k->resolved = 1;
    }
    if (!k->limits_checked) {
        kp_status st = check_limits(rt, k);
        if (st != KP_OK)
            return st;
        k->limits_checked = 1;
    }
    return KP_OK;
}

int64_t kp__tuning_get(const kp_kernel *k, const char *name)
{
    for (uint32_t i = 0; i < k->desc->n_tunables; i++)
        if (strcmp(k->desc->tunables[i].name, name) == 0)
            return k->choices ? k->choices[i].value : k->desc->tunables[i].default_value;
    return 0;
}

void kp__tuning_free(kp_kernel *k)
{
    for (uint32_t i = 0; k->choices && i < k->desc->n_tunables; i++) {
        free(k->choices[i].value_text);
        free(k->choices[i].origin);
        free(k->choices[i].provenance);
        free(k->choices[i].allowed);
        free(k->choices[i].notes);
    }
    free(k->choices);
    k->choices = NULL;
    free(k->options);
    k->options = NULL;
    k->resolved = k->limits_checked = k->overridden = 0;
}

kp_status kp_kernel_tunable_set(kp_runtime *rt, kp_kernel *k, const char *name, int64_t value)
{
    if (!rt || !k || !name)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tunable_set: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_tunable_set");
    const kp_kernel_desc *d = k->desc;
    uint32_t i = 0;
    while (i < d->n_tunables && strcmp(d->tunables[i].name, name) != 0)
        i++;
    if (i == d->n_tunables)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s has no tunable \"%s\"", d->name, name);
    const kp_tunable_desc *t = &d->tunables[i];
    size_t device_max = kp__is_host(rt) ? 0 : kp__device(rt)->max_workgroup;
    pthread_mutex_lock(&rt->lock);
    k->limits_checked = 1; /* choosing from the manifest needs no build here */
    kp_status st = kp__tuning_resolve(rt, k);
    k->limits_checked = 0;
    if (st == KP_OK && !kp__tunable_allows(t, value)) {
        st = kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: %s = %lld is not allowed (allowed: %s)",
                      d->name, name, (long long)value, k->choices[i].allowed);
    } else if (st == KP_OK && (t->flags & KP_TUNABLE_WORKGROUP) && device_max &&
               (value < 1 || (uint64_t)value > device_max)) {
        st = kp__fail(rt, KP_ERR_INVALID_ARG,
                      "kernel %s: %s = %lld exceeds the device's maximum workgroup size %zu",
                      d->name, name, (long long)value, device_max);
    } else if (st == KP_OK) {
        kp__tuning_choice *c = &k->choices[i];
        c->value = value;
        free(c->value_text);
        c->value_text = kp__strdup(t->choices ? t->choices[value] : "");
        free(c->origin);
        c->origin = kp__strdup("set by the application");
        free(c->provenance);
        c->provenance = NULL;
        free(c->notes);
        c->notes = NULL;
        resolve_auto(rt, k, i);
        k->overridden = 1;
        build_options(k);
    }
    pthread_mutex_unlock(&rt->lock);
    return st;
}

kp_status kp_kernel_tuning_reset(kp_runtime *rt, kp_kernel *k)
{
    if (!rt || !k)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tuning_reset: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_tuning_reset");
    pthread_mutex_lock(&rt->lock);
    kp__tuning_free(k);
    pthread_mutex_unlock(&rt->lock);
    return KP_OK;
}

kp_status kp_kernel_tuning(kp_runtime *rt, kp_kernel *k, size_t index, kp_tuning_info *out)
{
    if (!rt)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tuning: NULL argument");
    kp_status st = KP__OUT_CHECK(rt, "kp_kernel_tuning", kp_tuning_info, out);
    if (st != KP_OK)
        return st;
    if (!k || index >= k->desc->n_tunables)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tuning: bad kernel or index");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_tuning");
    pthread_mutex_lock(&rt->lock);
    st = kp__tuning_resolve(rt, k);
    pthread_mutex_unlock(&rt->lock);
    const kp_tunable_desc *t = &k->desc->tunables[index];
    /* Named even when resolution failed, so that a caller can say which tunable it was. */
    kp_tuning_info info = {.struct_size = sizeof info,
                           .name = t->name,
                           .doc = t->doc ? t->doc : "",
                           .value = t->default_value,
                           .default_value = t->default_value,
                           .value_text = "",
                           .origin = "",
                           .allowed = "",
                           .notes = "",
                           .provenance = ""};
    if (k->choices) {
        const kp__tuning_choice *c = &k->choices[index];
        info.value = c->value;
        info.value_text = c->value_text ? c->value_text : "";
        info.origin = c->origin ? c->origin : "default";
        info.allowed = c->allowed ? c->allowed : "";
        info.notes = c->notes ? c->notes : "";
        info.provenance = c->provenance ? c->provenance : "";
    }
    KP__OUT_WRITE(kp_tuning_info, out, &info);
    return st;
}
