/* SPDX-License-Identifier: Apache-2.0 */
/* Sample arguments: random, reproducible inputs that plugins describe and the core allocates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"
#include "view.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t hash_string(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

void *kp__sample_kernel_user(kp_sample *s)
{
    return s ? s->kernel->desc->user : NULL;
}

uint64_t kp__sample_random(kp_sample *s)
{
    return splitmix64(&s->state);
}

static double uniform(kp_sample *s)
{
    return (double)(kp__sample_random(s) >> 11) * 0x1.0p-53;
}

kp_status kp__sample_init(kp_sample *s, kp_runtime *rt, const kp_kernel *k, uint64_t seed,
                          const char *size)
{
    memset(s, 0, sizeof *s);
    s->rt = rt;
    s->kernel = k;
    s->state = hash_string(hash_string(0xcbf29ce484222325ull ^ seed, k->desc->name), size);
    s->args = calloc(k->desc->n_params ? k->desc->n_params : 1, sizeof *s->args);
    return s->args ? KP_OK : kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
}

void kp__sample_fini(kp_sample *s)
{
    for (uint32_t i = 0; s->args && i < s->kernel->desc->n_params; i++)
        free(s->args[i].data);
    free(s->args);
    s->args = NULL;
}

static int find(const kp_sample *s, const char *name, int32_t kind, uint32_t *index)
{
    const kp_kernel_desc *d = s->kernel->desc;
    for (uint32_t i = 0; name && i < d->n_params; i++)
        if (strcmp(d->params[i].name, name) == 0) {
            *index = i;
            return d->params[i].kind == kind ? 0 : -2;
        }
    return -1;
}

static kp_status bad_name(kp_sample *s, const char *fn, const char *name, int why)
{
    return kp__fail(s->rt, KP_ERR_PLUGIN, "kernel %s: %s: %s \"%s\"", s->kernel->desc->name, fn,
                    why == -1 ? "no parameter named" : "wrong kind for parameter",
                    name ? name : "(null)");
}

static void fill(kp_sample *s, kp__sample_arg *a, int output, double lo, double hi)
{
    /* Outputs start as random garbage, so an element the device forgets to write differs
     * from the reference's. */
    if (output) {
        lo = -1000.0;
        hi = 1000.0;
    }
    for (int64_t i = 0; i < a->numel; i++) {
        double v = lo + (hi - lo) * uniform(s);
        switch (a->dtype) {
        case KP_F32:
            ((float *)a->data)[i] = (float)v;
            break;
        case KP_F64:
            ((double *)a->data)[i] = v;
            break;
        case KP_F16:
            ((uint16_t *)a->data)[i] = kp_half_from_float((float)v);
            break;
        case KP_BF16:
            ((uint16_t *)a->data)[i] = kp_bf16_from_float((float)v);
            break;
        case KP_I32:
            ((int32_t *)a->data)[i] = output ? (int32_t)kp__sample_random(s) : (int32_t)floor(v);
            break;
        case KP_U32:
            ((uint32_t *)a->data)[i] =
                output ? (uint32_t)kp__sample_random(s) : (uint32_t)floor(v < 0 ? 0 : v);
            break;
        case KP_U8:
            ((uint8_t *)a->data)[i] =
                output ? (uint8_t)kp__sample_random(s) : (uint8_t)floor(v < 0 ? 0 : v);
            break;
        }
    }
}

kp_status kp__sample_tensor(kp_sample *s, const char *name, int32_t dtype, int32_t rank,
                            const int64_t *shape, double lo, double hi, void **data)
{
    uint32_t i;
    int r = find(s, name, KP_ARG_KIND_TENSOR, &i);
    if (r)
        return bad_name(s, "sample_tensor", name, r);
    const kp_param_desc *p = &s->kernel->desc->params[i];
    if (dtype <= KP_DTYPE_NONE || dtype >= KP_DTYPE_COUNT || !(p->dtypes & (1u << dtype)) ||
        rank < 0 || rank > KP_MAX_RANK || (rank && !shape))
        return kp__fail(s->rt, KP_ERR_PLUGIN,
                        "kernel %s: sample_tensor \"%s\": bad dtype %d or rank %d",
                        s->kernel->desc->name, name, dtype, rank);
    kp__sample_arg *a = &s->args[i];
    free(a->data);
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->rank = rank;
    a->numel = 1;
    for (int32_t d = 0; d < rank; d++) {
        if (shape[d] < 0 || __builtin_mul_overflow(a->numel, shape[d], &a->numel))
            return kp__fail(s->rt, KP_ERR_PLUGIN, "kernel %s: sample_tensor \"%s\": bad shape",
                            s->kernel->desc->name, name);
        a->shape[d] = shape[d];
    }
    size_t bytes = 0;
    if (__builtin_mul_overflow((size_t)a->numel, kp_dtype_size((kp_dtype)dtype), &bytes))
        return kp__fail(s->rt, KP_ERR_OUT_OF_MEMORY,
                        "kernel %s: sample \"%s\" of %lld elements passes SIZE_MAX bytes",
                        s->kernel->desc->name, name, (long long)a->numel);
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data)
        return kp__fail(s->rt, KP_ERR_OUT_OF_MEMORY, "kernel %s: sample \"%s\" of %zu bytes",
                        s->kernel->desc->name, name, bytes);
    a->present = 1;
    fill(s, a, p->access == KP_ACCESS_OUT, lo, hi);
    if (data)
        *data = a->data;
    return KP_OK;
}

kp_status kp__sample_view(kp_sample *s, const char *name, int32_t rank, const int64_t *shape,
                          int64_t offset, const int64_t *strides)
{
    uint32_t i;
    int r = find(s, name, KP_ARG_KIND_TENSOR, &i);
    if (r)
        return bad_name(s, "sample_view", name, r);
    kp__sample_arg *a = &s->args[i];
    if (!a->present || rank < 0 || rank > KP_MAX_RANK || (rank && (!shape || !strides)) ||
        offset < 0)
        return kp__fail(s->rt, KP_ERR_PLUGIN,
                        "kernel %s: sample_view \"%s\": sample the tensor first, with rank "
                        "0..%d and offset >= 0",
                        s->kernel->desc->name, name, KP_MAX_RANK);
    kp_tensor t = {.dtype = a->dtype, .rank = rank, .offset = offset};
    const int negative_ok = (s->kernel->desc->params[i].flags & KP_PARAM_NEGATIVE_STRIDES) != 0;
    int empty = 0;
    for (int32_t d = 0; d < rank; d++) {
        if (shape[d] < 0 || (strides[d] < 0 && !negative_ok))
            return kp__fail(s->rt, KP_ERR_PLUGIN,
                            "kernel %s: sample_view \"%s\": negative shape or stride (a negative "
                            "stride needs KP_PARAM_NEGATIVE_STRIDES)",
                            s->kernel->desc->name, name);
        t.shape[d] = shape[d];
        t.strides[d] = strides[d];
        empty |= shape[d] == 0;
    }
    int64_t first, last;
    if (kp__view_range(&t, &first, &last) ||
        (empty ? offset > a->numel : first < 0 || last >= a->numel))
        return kp__fail(s->rt, KP_ERR_PLUGIN,
                        "kernel %s: sample_view \"%s\" reaches outside elements 0 .. %lld of its "
                        "storage",
                        s->kernel->desc->name, name, (long long)a->numel - 1);
    a->has_view = 1;
    a->rank = rank;
    a->offset = offset;
    for (int32_t d = 0; d < rank; d++) {
        a->shape[d] = shape[d];
        a->strides[d] = strides[d];
    }
    return KP_OK;
}

/* The tensor the kernel sees: the whole storage, or the view set by sample_view. */
static kp_tensor view_of(const kp__sample_arg *a, kp_buffer *buf)
{
    if (!a->has_view)
        return kp_tensor_nd(buf, (kp_dtype)a->dtype, a->rank, a->shape);
    kp_tensor t = {.buffer = buf, .dtype = a->dtype, .rank = a->rank, .offset = a->offset};
    for (int32_t d = 0; d < a->rank; d++) {
        t.shape[d] = a->shape[d];
        t.strides[d] = a->strides[d];
    }
    return t;
}

void kp__sample_bind_host(const kp_sample *s, kp_value *values)
{
    for (uint32_t i = 0; i < s->kernel->desc->n_params; i++) {
        const kp__sample_arg *a = &s->args[i];
        memset(&values[i], 0, sizeof values[i]);
        const kp_param_desc *p = &s->kernel->desc->params[i];
        values[i].present = (uint32_t)a->present;
        values[i].i = a->present ? a->i : p->int_default;
        values[i].f = a->present ? a->f : p->float_default;
        if (a->present && p->kind == KP_ARG_KIND_TENSOR) {
            values[i].tensor = view_of(a, NULL);
            values[i].host = a->data;
        }
    }
}

kp_status kp__sample_int(kp_sample *s, const char *name, int64_t value)
{
    uint32_t i;
    int r = find(s, name, KP_ARG_KIND_INT, &i);
    if (r)
        return bad_name(s, "sample_int", name, r);
    s->args[i].present = 1;
    s->args[i].i = value;
    return KP_OK;
}

kp_status kp__sample_float(kp_sample *s, const char *name, double value)
{
    uint32_t i;
    int r = find(s, name, KP_ARG_KIND_FLOAT, &i);
    if (r)
        return bad_name(s, "sample_float", name, r);
    s->args[i].present = 1;
    s->args[i].f = value;
    return KP_OK;
}

kp_status kp__sample_build(kp_sample *s, const char *size)
{
    const kp_kernel_desc *d = s->kernel->desc;
    if (!d->sample)
        return kp__fail(s->rt, KP_ERR_UNSUPPORTED, "kernel %s has no sample function", d->name);
    kp__fail(s->rt, KP_OK, "%s", "");
    kp_status st = d->sample(s, size);
    if (st != KP_OK) {
        if (!*kp_last_error(s->rt))
            kp__fail(s->rt, st, "kernel %s: sample \"%s\" failed with %s", d->name, size,
                     kp_status_name(st));
        return st;
    }
    for (uint32_t i = 0; i < d->n_params; i++)
        if (!s->args[i].present && !(d->params[i].flags & KP_PARAM_OPTIONAL))
            return kp__fail(s->rt, KP_ERR_PLUGIN, "kernel %s: sample \"%s\" did not set \"%s\"",
                            d->name, size, d->params[i].name);
    return KP_OK;
}

void kp__sample_args_free(kp_runtime *rt, kp__sample_args *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->dev[i].kind == KP_ARG_KIND_TENSOR) {
            kp_buffer_destroy(rt, r->dev[i].tensor.buffer);
            kp_buffer_destroy(rt, r->ref[i].tensor.buffer);
        }
    }
    free(r->dev);
    free(r->ref);
    memset(r, 0, sizeof *r);
}

kp_status kp__sample_args_create(kp_runtime *rt, const kp_kernel *k, const kp_sample *s,
                                 int with_reference, kp__sample_args *r)
{
    const kp_kernel_desc *d = k->desc;
    r->dev = calloc(d->n_params + 1, sizeof *r->dev);
    r->ref = calloc(d->n_params + 1, sizeof *r->ref);
    if (!r->dev || !r->ref)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < d->n_params; i++) {
        const kp__sample_arg *a = &s->args[i];
        if (!a->present)
            continue;
        kp_arg *dev = &r->dev[r->n], *ref = &r->ref[r->n];
        dev->name = ref->name = d->params[i].name;
        dev->kind = ref->kind = d->params[i].kind;
        dev->i = ref->i = a->i;
        dev->f = ref->f = a->f;
        r->n++;
        if (d->params[i].kind != KP_ARG_KIND_TENSOR)
            continue;
        size_t bytes = (size_t)a->numel * kp_dtype_size((kp_dtype)a->dtype);
        kp_buffer *db = NULL, *hb = NULL;
        kp_status st = kp_buffer_create(rt, bytes ? bytes : 4, &db);
        if (st == KP_OK && with_reference)
            st = kp__buffer_create_host(rt, bytes ? bytes : 4, &hb);
        dev->tensor = view_of(a, db);
        ref->tensor = view_of(a, hb);
        /* An empty tensor still gets a 4-byte buffer; zero it on both sides so it compares. */
        static const uint32_t zero = 0;
        const void *src = bytes ? a->data : &zero;
        size_t n = bytes ? bytes : sizeof zero;
        if (st == KP_OK) {
            if (hb)
                memcpy(hb->host, src, n);
            st = kp_buffer_write(rt, db, 0, n, src);
        }
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
