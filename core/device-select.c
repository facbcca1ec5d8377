/* SPDX-License-Identifier: Apache-2.0 */
/* Device choice: a device spec (--device, KP_DEVICE) or the manifest's ordered device rules. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "runtime.h"
#include "vendor.h"

static int is_uuid(const char *s)
{
    if (strlen(s) != 36)
        return 0;
    for (int i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
            return 0;
    }
    return 1;
}

static int uuid_equals(const kp_device_info *d, const char *text)
{
    char buf[37];
    if (!d->has_uuid)
        return 0;
    kp_uuid_format(d->uuid, buf);
    return strcasecmp(buf, text) == 0;
}

/* The OpenCL devices, then the host: rules and specs see the host only when they name it. */
static int matches_kind(const kp_device_info *d, const char *word)
{
    kp_vendor v;
    kp_device_type t;
    if (kp__vendor_parse(word, &v) == 0)
        return d->vendor == v;
    if (kp__device_type_parse(word, &t) == 0)
        return d->type == t;
    return -1; /* not a vendor or a type */
}

static char *device_list(const kp_runtime *rt)
{
    char *s = NULL;
    for (size_t i = 0; i < rt->n_devices; i++) {
        const kp_device_info *d = &rt->devices[i].info;
        kp__append(&s, "\n  %zu: %s %s \"%s\"", i, kp_vendor_name(d->vendor),
                   kp_device_type_name(d->type), d->name);
    }
    return s;
}

static kp_status no_match(kp_runtime *rt, const char *what)
{
    char *list = device_list(rt);
    kp__fail(rt, KP_ERR_NO_DEVICE, "%s; the devices are:%s", what, list ? list : " (none)");
    free(list);
    return KP_ERR_NO_DEVICE;
}

static kp_status choose(kp_runtime *rt, size_t index, char *why)
{
    if (!why)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    rt->device_index = index;
    free(rt->device_why);
    rt->device_why = why;
    return KP_OK;
}

static kp_status select_by_spec(kp_runtime *rt, const char *spec)
{
    char word[64];
    long nth = 0;
    const char *colon = strchr(spec, ':');
    /* KIND:N only when KIND is a vendor or a type: AMD names such as "gfx90a:xnack-" are names. */
    if (colon && !is_uuid(spec) && (size_t)(colon - spec) < sizeof word) {
        memcpy(word, spec, (size_t)(colon - spec));
        word[colon - spec] = '\0';
        kp_vendor v;
        kp_device_type t;
        if (kp__vendor_parse(word, &v) != 0 && kp__device_type_parse(word, &t) != 0)
            colon = NULL;
    }
    if (colon && !is_uuid(spec)) {
        char *end;
        nth = strtol(colon + 1, &end, 10);
        if (*end || nth < 0 || (size_t)(colon - spec) >= sizeof word)
            return kp__fail(rt, KP_ERR_INVALID_ARG,
                            "device spec \"%s\": expected KIND:N with N >= 0 (e.g. gpu:1)", spec);
        memcpy(word, spec, (size_t)(colon - spec));
        word[colon - spec] = '\0';
    } else {
        snprintf(word, sizeof word, "%s", spec);
    }
    char *end;
    long index = strtol(spec, &end, 10);
    if (!*end && *spec && index >= 0) {
        if ((size_t)index >= rt->n_devices)
            return no_match(rt, "device index out of range");
        return choose(rt, (size_t)index, kp__asprintf("device spec \"%s\" (index)", spec));
    }
    long seen = 0;
    for (size_t i = 0; i < rt->n_devices; i++) {
        const kp_device_info *d = &rt->devices[i].info;
        int m = matches_kind(d, word);
        if (m < 0)
            m = is_uuid(spec) ? uuid_equals(d, spec) : kp__contains_nocase(d->name, spec);
        if (m && seen++ == nth)
            return choose(rt, i, kp__asprintf("device spec \"%s\"", spec));
    }
    char *what = kp__asprintf("device spec \"%s\" matches no device", spec);
    kp_status st = no_match(rt, what ? what : spec);
    free(what);
    return st;
}

static int rule_matches(const kp__device_rule *r, const kp_device_info *d)
{
    if (r->vendor && strcmp(r->vendor, kp_vendor_name(d->vendor)) != 0)
        return 0;
    if (r->type && strcmp(r->type, kp_device_type_name(d->type)) != 0)
        return 0;
    if (d->type == KP_DEVICE_HOST && !r->vendor && !r->type)
        return 0;
    if (r->name && !kp__contains_nocase(d->name, r->name))
        return 0;
    if (r->arch && strcasecmp(r->arch, d->arch) != 0)
        return 0;
    if (r->uuid && !uuid_equals(d, r->uuid))
        return 0;
    return 1;
}

static char *describe_rule(const kp__device_rule *r, size_t i)
{
    char *s = kp__asprintf("manifest device rule %zu {", i + 1);
    const char *sep = "";
    const char *keys[] = {"vendor", "type", "name", "arch", "uuid"};
    const char *vals[] = {r->vendor, r->type, r->name, r->arch, r->uuid};
    for (int k = 0; k < 5; k++)
        if (vals[k]) {
            kp__append(&s, "%s%s: %s", sep, keys[k], vals[k]);
            sep = ", ";
        }
    if (r->index >= 0)
        kp__append(&s, "%sindex: %lld", sep, (long long)r->index);
    kp__append(&s, "} at %s:%u", r->loc.file ? r->loc.file : "?", r->loc.line);
    return s;
}

static kp_status select_by_rules(kp_runtime *rt)
{
    const kp__manifest *m = &rt->manifest;
    for (size_t i = 0; i < m->n_rules; i++) {
        const kp__device_rule *r = &m->rules[i];
        int64_t seen = 0, want = r->index >= 0 ? r->index : 0;
        for (size_t d = 0; d < rt->n_devices; d++)
            if (rule_matches(r, &rt->devices[d].info) && seen++ == want)
                return choose(rt, d, describe_rule(r, i));
    }
    return no_match(rt, "none of the manifest's device rules matches a device");
}

kp_status kp__device_select(kp_runtime *rt, const char *spec)
{
    size_t n_opencl = rt->n_devices - 1; /* the host device is last */
    if (spec)
        return select_by_spec(rt, spec);
    if (n_opencl == 0) {
        if (rt->manifest.require_opencl)
            return kp__fail(rt, KP_ERR_NO_DEVICE,
                            "no OpenCL platform was found and the manifest says require: opencl "
                            "(install an OpenCL driver, e.g. pocl-opencl-icd)");
        kp__log(rt, KP_LOG_WARN,
                "no OpenCL platform found: kernels run as their host references (install an "
                "OpenCL driver such as pocl-opencl-icd for a real device)");
        return choose(rt, n_opencl, kp__strdup("no OpenCL platform found: host fallback"));
    }
    return select_by_rules(rt);
}
