/* SPDX-License-Identifier: Apache-2.0 */
/* Benchmarks: a kernel timed with events on its sample arguments, with warm-up and percentiles. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "sample.h"
#include "struct-size.h"

kp_bench_options kp_bench_options_default(void)
{
    return (kp_bench_options){.struct_size = sizeof(kp_bench_options),
                              .warmup = 3,
                              .min_runs = 10,
                              .max_runs = 1000,
                              .min_seconds = 0.25,
                              .seed = 1};
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, uint32_t n, double q)
{
    double pos = q * (double)(n - 1);
    uint32_t i = (uint32_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? sorted[i] * (1 - f) + sorted[i + 1] * f : sorted[n - 1];
}

static kp_status time_launches(kp_runtime *rt, kp_kernel *k, const kp__sample_args *a,
                               const kp_bench_options *o, kp_bench_result *out)
{
    for (uint32_t i = 0; i < o->warmup; i++) {
        kp_status st = kp_kernel_launch(rt, k, a->dev, a->n, NULL);
        if (st != KP_OK)
            return st;
    }
    kp_status st = kp_finish(rt);
    uint32_t cap = o->max_runs ? o->max_runs : 1;
    double *t = malloc(cap * sizeof *t), total = 0;
    if (!t)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    uint32_t n = 0;
    /* Launches go out in batches and are read back after: the device never idles between them,
     * so each event spans the device's work rather than the host's submission gap. */
    enum { BATCH = 16 };
    while (st == KP_OK && n < cap && (n < o->min_runs || total < o->min_seconds)) {
        kp_event *ev[BATCH] = {NULL};
        uint32_t b = 0, want = cap - n < BATCH ? cap - n : BATCH;
        while (st == KP_OK && b < want)
            st = kp_kernel_launch(rt, k, a->dev, a->n, &ev[b++]);
        for (uint32_t i = 0; i < b; i++) {
            if (st == KP_OK && ev[i])
                st = kp_event_elapsed(rt, ev[i], &t[n]);
            if (st == KP_OK && ev[i])
                total += t[n++];
            kp_event_destroy(rt, ev[i]);
        }
    }
    if (st == KP_OK && n) {
        qsort(t, n, sizeof *t, by_value);
        out->runs = n;
        out->min_s = t[0];
        out->max_s = t[n - 1];
        out->median_s = percentile(t, n, 0.5);
        out->p10_s = percentile(t, n, 0.1);
        out->p90_s = percentile(t, n, 0.9);
    }
    free(t);
    return st;
}

kp_status kp_kernel_bench(kp_runtime *rt, kp_kernel *k, const char *size,
                          const kp_bench_options *opt, kp_bench_result *out)
{
    if (!rt || !k || !size)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_bench: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_bench");
    kp_status st = KP__OUT_CHECK(rt, "kp_kernel_bench", kp_bench_result, out);
    kp_bench_options o = kp_bench_options_default();
    if (st == KP_OK && opt)
        st = KP__IN_COPY(rt, "kp_kernel_bench", kp_bench_options, &o, opt);
    if (st != KP_OK)
        return st;
    if (!k->desc->sample)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has no sample function to time",
                        k->desc->name);
    kp_bench_result r = {.struct_size = sizeof r};
    kp_sample s;
    kp__sample_args a = {0};
    st = kp__sample_init(&s, rt, k, o.seed, size);
    if (st == KP_OK)
        st = kp__sample_build(&s, size);
    if (st == KP_OK)
        st = kp__sample_args_create(rt, k, &s, 0, &a);
    if (st == KP_OK)
        st = time_launches(rt, k, &a, &o, &r);
    if (st == KP_OK && k->desc->cost) {
        /* The cost reads only shapes and scalars, which the bound device arguments carry. */
        kp_value values[KP_MAX_PARAMS];
        if (kp__args_bind(rt, k, a.dev, a.n, values) == KP_OK) {
            kp_call call = {.struct_size = sizeof call,
                            .n_args = k->desc->n_params,
                            .args = values,
                            .desc = k->desc};
            kp_cost cost = {.struct_size = sizeof cost};
            k->desc->cost(&call, &cost);
            r.flops = cost.flops;
            r.bytes = cost.bytes;
            if (r.median_s > 0) {
                r.gflops = cost.flops / r.median_s * 1e-9;
                r.gbs = cost.bytes / r.median_s * 1e-9;
            }
        }
    }
    if (st != KP_OK)
        kp__fail_prefix(rt, st, "bench %s (size %s)", k->desc->name, size);
    kp__sample_args_free(rt, &a);
    kp__sample_fini(&s);
    KP__OUT_WRITE(kp_bench_result, out, &r);
    return st;
}
