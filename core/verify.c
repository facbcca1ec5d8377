/* SPDX-License-Identifier: Apache-2.0 */
/* Verification: the device against the host reference on the same random sample arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "sample.h"

static void compare(const void *dev, const void *ref, int32_t dtype, int64_t n, double atol,
                    double rtol, kp_verify_result *res)
{
    double worst_excess = -INFINITY, floor_ref = atol > 0 ? atol : 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double d = kp_dtype_load(dev, (kp_dtype)dtype, i),
               r = kp_dtype_load(ref, (kp_dtype)dtype, i);
        double err = fabs(d - r), excess;
        if (isnan(d) || isnan(r)) {
            err = isnan(d) && isnan(r) ? 0 : INFINITY;
        } else if (isinf(d) || isinf(r)) {
            err = d == r ? 0 : INFINITY;
        }
        double rel = err / fmax(fabs(r), floor_ref);
        excess = err - (atol + rtol * fabs(r));
        if (err > res->max_abs_err || isinf(err))
            res->max_abs_err = err;
        if (rel > res->max_rel_err)
            res->max_rel_err = rel;
        if (excess > 0)
            res->failures++;
        if (excess > worst_excess) {
            worst_excess = excess;
            res->worst_index = i;
        }
    }
    res->passed = res->failures == 0;
}

static kp_status check_outputs(kp_runtime *rt, kp_kernel *k, const char *size, kp__sample_args *r,
                               kp_verify_fn report, void *user, int *all_passed)
{
    const kp_kernel_desc *d = k->desc;
    double atol = d->atol, rtol = d->rtol;
    if (d->tolerance) {
        kp_value values[KP_MAX_PARAMS];
        kp_status st = kp__args_bind(rt, k, r->ref, r->n, values);
        if (st != KP_OK)
            return st;
        for (uint32_t i = 0; i < d->n_params; i++)
            if (values[i].present && d->params[i].kind == KP_ARG_KIND_TENSOR)
                values[i].host = values[i].tensor.buffer->host;
        kp_call call = {
            .struct_size = sizeof call, .n_args = d->n_params, .args = values, .desc = d};
        d->tolerance(&call, &atol, &rtol);
    }
    for (size_t a = 0; a < r->n; a++) {
        uint32_t p = 0;
        while (strcmp(d->params[p].name, r->dev[a].name) != 0)
            p++;
        if (d->params[p].kind != KP_ARG_KIND_TENSOR || d->params[p].access == KP_ACCESS_IN)
            continue;
        /* The whole storage, not just the view: a write outside the view is an error too. */
        const kp_tensor *t = &r->dev[a].tensor;
        size_t esize = kp_dtype_size((kp_dtype)t->dtype), bytes = t->buffer->size;
        int64_t n = (int64_t)(bytes / esize);
        void *dev = malloc(bytes ? bytes : 1);
        if (!dev)
            return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
        kp_status st = kp_buffer_read(rt, t->buffer, 0, bytes, dev);
        if (st != KP_OK) {
            free(dev);
            return st;
        }
        kp_verify_result res = {.struct_size = sizeof res,
                                .kernel = d->name,
                                .size = size,
                                .output = d->params[p].name,
                                .elements = n,
                                .atol = atol,
                                .rtol = rtol};
        compare(dev, r->ref[a].tensor.buffer->host, t->dtype, n, atol, rtol, &res);
        free(dev);
        *all_passed &= res.passed;
        if (report)
            report(user, &res);
    }
    return KP_OK;
}

static kp_status verify_size(kp_runtime *rt, kp_kernel *k, const char *size, uint64_t seed,
                             kp_verify_fn report, void *user, int *all_passed)
{
    kp_sample s;
    kp__sample_args r = {0};
    kp_status st = kp__sample_init(&s, rt, k, seed, size);
    if (st == KP_OK)
        st = kp__sample_build(&s, size);
    if (st == KP_OK)
        st = kp__sample_args_create(rt, k, &s, 1, &r);
    if (st == KP_OK)
        st = kp_kernel_launch(rt, k, r.dev, r.n, NULL);
    if (st == KP_OK)
        st = kp__launch_reference(rt, k, r.ref, r.n);
    if (st == KP_OK)
        st = check_outputs(rt, k, size, &r, report, user, all_passed);
    if (st != KP_OK)
        kp__fail_prefix(rt, st, "verify %s (size %s)", k->desc->name, size);
    kp__sample_args_free(rt, &r);
    kp__sample_fini(&s);
    return st;
}

kp_status kp_kernel_verify(kp_runtime *rt, kp_kernel *k, const char *size, uint64_t seed,
                           kp_verify_fn report, void *user)
{
    if (!rt || !k)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_verify: NULL runtime or kernel");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_verify");
    if (!k->desc->sample)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has no sample function to verify with",
                        k->desc->name);
    const char *one[] = {size, NULL};
    const char *const *sizes = size ? one : kp_kernel_sample_sizes(k, 0);
    if (!sizes[0])
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s lists no sample sizes to verify",
                        k->desc->name);
    int all_passed = 1;
    for (size_t i = 0; sizes[i]; i++) {
        kp_status st = verify_size(rt, k, sizes[i], seed, report, user, &all_passed);
        if (st != KP_OK)
            return st;
    }
    if (!all_passed)
        return kp__fail(rt, KP_ERR_VERIFY, "kernel %s: results differ from the host reference",
                        k->desc->name);
    return KP_OK;
}

kp_status kp_kernel_sample_bytes(kp_runtime *rt, kp_kernel *k, const char *size, uint64_t *bytes)
{
    if (!rt || !k || !size || !bytes)
        return kp__fail(rt, KP_ERR_INVALID_ARG,
                        "kp_kernel_sample_bytes: NULL runtime, kernel, size or bytes");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_sample_bytes");
    if (!k->desc->sample)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has no sample function", k->desc->name);
    kp_sample s;
    kp_status st = kp__sample_init(&s, rt, k, 1, size);
    if (st == KP_OK)
        st = kp__sample_build(&s, size);
    if (st == KP_OK) {
        uint64_t sum = 0;
        for (uint32_t p = 0; p < k->desc->n_params; p++) {
            const kp__sample_arg *a = &s.args[p];
            if (a->present && k->desc->params[p].kind == KP_ARG_KIND_TENSOR)
                sum += (uint64_t)a->numel * kp_dtype_size((kp_dtype)a->dtype);
        }
        *bytes = sum;
    }
    kp__sample_fini(&s);
    return st;
}
