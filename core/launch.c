/* SPDX-License-Identifier: Apache-2.0 */
/* Launching: argument binding and validation, then the kernel's check and enqueue or reference. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime.h"
#include "view.h"

#define MAX_DEPTH 16

static kp_status arg_fail(kp_runtime *rt, const kp_kernel *k, const char *arg, const char *fmt, ...)
    KP_PRINTF(4, 5);
static kp_status arg_fail(kp_runtime *rt, const kp_kernel *k, const char *arg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = kp__vasprintf(fmt, ap);
    va_end(ap);
    kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: argument \"%s\": %s", k->desc->name, arg,
             msg ? msg : "invalid");
    free(msg);
    return KP_ERR_INVALID_ARG;
}

static char *dtype_list(uint32_t mask)
{
    char *s = NULL;
    for (int d = 1; d < KP_DTYPE_COUNT; d++)
        if (mask & (1u << d))
            kp__append(&s, "%s%s", s ? " or " : "", kp_dtype_name((kp_dtype)d));
    return s;
}

static char *param_list(const kp_kernel_desc *d)
{
    char *s = NULL;
    for (uint32_t i = 0; i < d->n_params; i++)
        kp__append(&s, "%s%s", i ? ", " : "", d->params[i].name);
    return s;
}

/* Whether two elements of t may be one: sorted by absolute stride (a flipped dimension holds the
 * same elements), each dimension longer than 1 must step past all the elements of those with
 * smaller strides (PyTorch's rule; sufficient, and for two dimensions also necessary). Spans fit
 * int64: the caller checked the view's range, whose width is the sum of the spans. */
static int self_overlaps(const kp_tensor *t)
{
    int64_t shape[KP_MAX_RANK], strides[KP_MAX_RANK];
    int n = 0;
    /* First, as an empty view's strides are unchecked (INT64_MIN has no absolute value). */
    for (int32_t d = 0; d < t->rank; d++)
        if (t->shape[d] == 0)
            return 0;
    for (int32_t d = 0; d < t->rank; d++) {
        if (t->shape[d] == 1)
            continue;
        const int64_t stride = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
        int i = n++;
        for (; i > 0 && strides[i - 1] > stride; i--) {
            shape[i] = shape[i - 1];
            strides[i] = strides[i - 1];
        }
        shape[i] = t->shape[d];
        strides[i] = stride;
    }
    int64_t span = 0;
    for (int i = 0; i < n; i++) {
        if (strides[i] <= span)
            return 1;
        span += (shape[i] - 1) * strides[i];
    }
    return 0;
}

/* Checks a tensor against its parameter and its buffer; byte range in *lo, *hi. */
static kp_status check_tensor(kp_runtime *rt, const kp_kernel *k, const kp_param_desc *p,
                              const kp_tensor *t, size_t *lo, size_t *hi)
{
    if (!t->buffer)
        return arg_fail(rt, k, p->name, "the tensor has no buffer");
    if (t->buffer->rt != rt)
        return arg_fail(rt, k, p->name, "the tensor's buffer belongs to another runtime");
    if (t->dtype <= KP_DTYPE_NONE || t->dtype >= KP_DTYPE_COUNT ||
        !(p->dtypes & (1u << t->dtype))) {
        char *want = dtype_list(p->dtypes);
        kp_status st = arg_fail(rt, k, p->name, "dtype %s is not accepted (expected %s)",
                                kp_dtype_name((kp_dtype)t->dtype), want ? want : "?");
        free(want);
        return st;
    }
    if (t->rank < 0 || t->rank > KP_MAX_RANK)
        return arg_fail(rt, k, p->name, "rank %d is outside 0..%d", t->rank, KP_MAX_RANK);
    if (t->offset < 0)
        return arg_fail(rt, k, p->name, "negative offset %lld", (long long)t->offset);
    const int negative_ok = (p->flags & KP_PARAM_NEGATIVE_STRIDES) != 0;
    for (int32_t d = 0; d < t->rank; d++)
        if (t->shape[d] < 0 || (t->strides[d] < 0 && !negative_ok))
            return arg_fail(
                rt, k, p->name, "dimension %d has shape %lld and stride %lld (%s)", d,
                (long long)t->shape[d], (long long)t->strides[d],
                t->shape[d] < 0 && negative_ok ? "the shape must be >= 0"
                : t->shape[d] < 0
                    ? "both must be >= 0"
                    : "both must be >= 0: this kernel does not accept negative strides");
    char desc[160];
    /* Stride-0 dimensions cost no memory, so only this bounds the element count; zeros count as
     * ones so that a kernel may multiply any of an empty view's extents. */
    int64_t count = 1;
    for (int32_t d = 0; d < t->rank; d++)
        if (t->shape[d] > 0 && __builtin_mul_overflow(count, t->shape[d], &count))
            return arg_fail(rt, k, p->name, "%s: its extents multiply past 2^63 - 1",
                            kp_tensor_describe(t, desc, sizeof desc));
    int64_t first, last, size = (int64_t)kp_dtype_size((kp_dtype)t->dtype);
    int empty = 0;
    for (int32_t d = 0; d < t->rank; d++)
        empty |= t->shape[d] == 0;
    int overflow = kp__view_range(t, &first, &last);
    int64_t end_bytes = 0;
    overflow |=
        __builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, size, &end_bytes);
    if (overflow || (!empty && (uint64_t)end_bytes > t->buffer->size))
        return arg_fail(rt, k, p->name, "%s needs %lld bytes but its buffer has %zu",
                        kp_tensor_describe(t, desc, sizeof desc),
                        overflow ? -1LL : (long long)end_bytes, t->buffer->size);
    if (!empty && first < 0)
        return arg_fail(rt, k, p->name, "%s reaches element %lld, before its buffer's start",
                        kp_tensor_describe(t, desc, sizeof desc), (long long)first);
    /* An empty view touches nothing, but where it starts must still be in its buffer (the
     * product cannot overflow: it is at most end_bytes). Otherwise the lowest element starts it. */
    int64_t start_bytes = (empty ? t->offset : first) * size;
    if (empty && (uint64_t)start_bytes > t->buffer->size)
        return arg_fail(rt, k, p->name, "%s starts at byte %lld but its buffer has %zu",
                        kp_tensor_describe(t, desc, sizeof desc), (long long)start_bytes,
                        t->buffer->size);
    if (p->access != KP_ACCESS_IN && self_overlaps(t))
        return arg_fail(rt, k, p->name,
                        "%s: the output's elements would overlap (each stride must exceed the "
                        "span of the dimensions with smaller strides)",
                        kp_tensor_describe(t, desc, sizeof desc));
    *lo = (size_t)start_bytes;
    *hi = empty ? *lo : (size_t)end_bytes;
    return KP_OK;
}

/* Whether a and b are the same view of the same buffer: an in-place output's input. */
static int same_view(const kp_tensor *a, const kp_tensor *b)
{
    if (a->buffer != b->buffer || a->dtype != b->dtype || a->rank != b->rank ||
        a->offset != b->offset)
        return 0;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d] || (a->shape[d] > 1 && a->strides[d] != b->strides[d]))
            return 0;
    return 1;
}

kp_status kp__args_bind(kp_runtime *rt, const kp_kernel *k, const kp_arg *args, size_t n_args,
                        kp_value *values)
{
    const kp_kernel_desc *d = k->desc;
    memset(values, 0, d->n_params * sizeof *values);
    if (n_args && !args)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: %zu arguments but args is NULL",
                        d->name, n_args);
    for (size_t i = 0; i < n_args; i++) {
        const kp_arg *a = &args[i];
        /* A later, larger kp_arg would be read with the caller's stride; this version knows one
         * layout (0 stands for it: designated initialisers). */
        if (a->struct_size != 0 && a->struct_size != sizeof *a)
            return kp__fail(rt, KP_ERR_INVALID_ARG,
                            "kernel %s: argument %zu (\"%s\"): struct_size %u is not a kp_arg "
                            "layout this library knows (0 or %zu): build arguments with "
                            "kp_arg_tensor, kp_arg_int or kp_arg_float",
                            d->name, i, a->name ? a->name : "(no name)", a->struct_size, sizeof *a);
        if (!a->name)
            return kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: argument %zu has no name", d->name,
                            i);
        uint32_t p = 0;
        while (p < d->n_params && strcmp(d->params[p].name, a->name) != 0)
            p++;
        if (p == d->n_params) {
            char *list = param_list(d);
            kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: unknown argument \"%s\" (parameters: %s)",
                     d->name, a->name, list ? list : "none");
            free(list);
            return KP_ERR_INVALID_ARG;
        }
        if (values[p].present)
            return arg_fail(rt, k, a->name, "given twice");
        if (a->kind != d->params[p].kind)
            return arg_fail(rt, k, a->name, "expected %s, got %s",
                            kp_arg_kind_name((kp_arg_kind)d->params[p].kind),
                            kp_arg_kind_name((kp_arg_kind)a->kind));
        values[p].present = 1;
        values[p].tensor = a->tensor;
        values[p].i = a->i;
        values[p].f = a->f;
    }
    size_t lo[KP_MAX_PARAMS], hi[KP_MAX_PARAMS];
    for (uint32_t p = 0; p < d->n_params; p++) {
        const kp_param_desc *pd = &d->params[p];
        if (!values[p].present) {
            if (!(pd->flags & KP_PARAM_OPTIONAL)) {
                char *dt = pd->kind == KP_ARG_KIND_TENSOR ? dtype_list(pd->dtypes) : NULL;
                kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: missing argument \"%s\" (%s%s%s, %s)",
                         d->name, pd->name, dt ? dt : "", dt ? " " : "",
                         kp_arg_kind_name((kp_arg_kind)pd->kind),
                         kp_access_name((kp_access)pd->access));
                free(dt);
                return KP_ERR_INVALID_ARG;
            }
            values[p].i = pd->int_default;
            values[p].f = pd->float_default;
            continue;
        }
        if (pd->kind == KP_ARG_KIND_TENSOR) {
            kp_status st = check_tensor(rt, k, pd, &values[p].tensor, &lo[p], &hi[p]);
            if (st != KP_OK)
                return st;
        }
    }
    /* An output that shares bytes with another argument would make the result depend on the
     * order work-items run in. */
    for (uint32_t p = 0; p < d->n_params; p++) {
        if (!values[p].present || d->params[p].kind != KP_ARG_KIND_TENSOR ||
            d->params[p].access == KP_ACCESS_IN || lo[p] == hi[p])
            continue;
        for (uint32_t q = 0; q < d->n_params; q++)
            if (q != p && values[q].present && d->params[q].kind == KP_ARG_KIND_TENSOR &&
                values[q].tensor.buffer == values[p].tensor.buffer && lo[q] < hi[q] &&
                lo[p] < hi[q] && lo[q] < hi[p] &&
                !((d->params[p].flags & KP_PARAM_ALIAS_INPUTS) &&
                  d->params[q].access == KP_ACCESS_IN &&
                  same_view(&values[p].tensor, &values[q].tensor)))
                return arg_fail(rt, k, d->params[p].name,
                                "output overlaps argument \"%s\" in the same buffer (bytes "
                                "[%zu, %zu) and [%zu, %zu))",
                                d->params[q].name, lo[p], hi[p], lo[q], hi[q]);
    }
    return KP_OK;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Reference runs read host memory: each tensor's buffer must live there. */
static kp_status attach_host(kp_runtime *rt, const kp_kernel *k, kp_value *values)
{
    for (uint32_t p = 0; p < k->desc->n_params; p++) {
        if (!values[p].present || k->desc->params[p].kind != KP_ARG_KIND_TENSOR)
            continue;
        values[p].host = values[p].tensor.buffer->host;
        if (!values[p].host)
            return arg_fail(rt, k, k->desc->params[p].name,
                            "a host reference needs a buffer in host memory");
    }
    return KP_OK;
}

kp_status kp__launch_call(kp_runtime *rt, kp_kernel *k, const kp_call *call, int reference,
                          kp_event *event, int depth)
{
    if (depth > MAX_DEPTH)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kernel %s: launches nested deeper than %d",
                        k->desc->name, MAX_DEPTH);
    reference = reference || kp__is_host(rt);
    /* A plugin that fails without a message gets a generic one, not an older message. */
    uint64_t failures = kp__fail_count();
    pthread_mutex_lock(&rt->lock);
    kp_status st = reference ? KP_OK : kp__tuning_resolve(rt, k);
    kp_launch l = {.rt = rt,
                   .kernel = k,
                   .call = call,
                   .reference = reference,
                   .event = event,
                   .depth = depth};
    if (st == KP_OK && k->desc->check)
        st = k->desc->check(call, &l);
    /* After the kernel's own checks, so a bad argument is reported as such on any device. */
    if (st == KP_OK && !reference)
        st = kp__kernel_supported(rt, k);
    if (st == KP_OK) {
        if (reference) {
            double t0 = now_seconds();
            st = k->desc->reference(call, &l);
            if (event) {
                event->is_host = 1;
                event->host_seconds += now_seconds() - t0;
            }
        } else {
            st = k->desc->enqueue(call, &l);
            if (l.event_slot)
                rt->ops->event_adopt(rt->backend, kp__launch_events(&l), l.event_slot);
        }
    }
    pthread_mutex_unlock(&rt->lock);
    if (st != KP_OK && kp__fail_count() == failures)
        kp__fail(rt, st, "kernel %s: %s failed with %s", k->desc->name,
                 reference ? "reference" : "launch", kp_status_name(st));
    return st;
}

kp_status kp__launch_record(kp_runtime *rt, kp_kernel *k, const kp_call *call, kp__capture *capture)
{
    kp_status st = kp__tuning_resolve(rt, k);
    kp_launch l = {.rt = rt, .kernel = k, .call = call, .capture = capture};
    if (st == KP_OK && k->desc->check)
        st = k->desc->check(call, &l);
    if (st == KP_OK)
        st = kp__kernel_supported(rt, k);
    if (st == KP_OK && !k->desc->source)
        return kp__capture_refuse(&l, "a library-backed kernel");
    return st == KP_OK ? k->desc->enqueue(call, &l) : st;
}

static kp_status run(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n_args, int reference,
                     kp_event *event, int depth)
{
    kp_value values[KP_MAX_PARAMS];
    kp_status st = kp__args_bind(rt, k, args, n_args, values);
    if (st == KP_OK && (reference || kp__is_host(rt)))
        st = attach_host(rt, k, values);
    if (st != KP_OK)
        return st;
    kp_call call = {
        .struct_size = sizeof call, .n_args = k->desc->n_params, .args = values, .desc = k->desc};
    return kp__launch_call(rt, k, &call, reference, event, depth);
}

kp_status kp_kernel_launch(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n_args,
                           kp_event **event)
{
    if (event)
        *event = NULL;
    if (!rt || !k)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_launch: NULL runtime or kernel");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_launch");
    kp_graph *g = kp__graph_recording(rt);
    if (g)
        return kp__graph_capture_launch(g, k, args, n_args, event != NULL);
    kp_event *ev = NULL;
    if ((event || rt->profile) && !(ev = calloc(1, sizeof *ev)))
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    kp_status st = run(rt, k, args, n_args, 0, ev, 0);
    if (st != KP_OK) {
        kp_event_destroy(rt, ev);
        return st;
    }
    if (event)
        *event = ev;
    else if (ev)
        kp__profile_add(rt, k, ev);
    return KP_OK;
}

kp_status kp__launch_nested(kp_launch *parent, const char *name, const kp_arg *args, size_t n)
{
    kp_runtime *rt = parent->rt;
    kp_kernel *k = name ? kp__registry_find(rt, name) : NULL;
    if (!k)
        return kp__fail(rt, KP_ERR_NOT_FOUND, "kernel %s: host->launch: no kernel named \"%s\"",
                        parent->kernel->desc->name, name ? name : "(null)");
    /* The nested call's commands belong to the parent's launch: one event spans both. */
    if (parent->event_slot) {
        rt->ops->event_adopt(rt->backend, kp__launch_events(parent), parent->event_slot);
        parent->event_slot = NULL;
    }
    return run(rt, k, args, n, parent->reference, parent->event, parent->depth + 1);
}

kp_status kp__launch_reference(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n)
{
    return run(rt, k, args, n, 1, NULL, 0);
}

kp_status kp_kernel_describe(kp_runtime *rt, kp_kernel *k, char *out, size_t size)
{
    if (!rt || !k || !out || size == 0)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_describe: NULL argument or size 0");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_describe");
    out[0] = '\0';
    const kp_kernel_desc *d = k->desc;
    if (d->struct_size < offsetof(kp_kernel_desc, describe) + sizeof d->describe || !d->describe)
        return KP_OK;
    int reference = kp__is_host(rt);
    pthread_mutex_lock(&rt->lock);
    kp_status st = reference ? KP_OK : kp__tuning_resolve(rt, k);
    kp_launch l = {.rt = rt, .kernel = k, .reference = reference};
    if (st == KP_OK)
        st = d->describe(&l, out, size);
    pthread_mutex_unlock(&rt->lock);
    return st;
}

kp_status kp__kernel_supported(kp_runtime *rt, kp_kernel *k)
{
    const kp_kernel_desc *d = k->desc;
    if (kp__is_host(rt) ||
        d->struct_size < offsetof(kp_kernel_desc, supported) + sizeof d->supported || !d->supported)
        return KP_OK;
    kp_launch l = {.rt = rt, .kernel = k};
    return d->supported(&l);
}

kp_status kp_kernel_supported(kp_runtime *rt, kp_kernel *k)
{
    if (!rt || !k)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_supported: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_supported");
    pthread_mutex_lock(&rt->lock);
    kp_status st = kp__kernel_supported(rt, k);
    pthread_mutex_unlock(&rt->lock);
    return st;
}
