/* SPDX-License-Identifier: Apache-2.0 */
/* kp_kernel_tune: the search space of a kernel's tunables, and candidates verified then timed. */
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "sample.h"
#include "runtime.h"
#include "struct-size.h"
#include "tune.h"

kp_tune_options kp_tune_options_default(void)
{
    kp_tune_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.budget_seconds = 60;
    o.grid_limit = 64;
    return o;
}

/* Whether `name` matches one of the comma-separated globs in `globs`. */
static int matches_any(const char *globs, const char *name)
{
    char one[256];
    for (const char *p = globs; *p;) {
        size_t n = strcspn(p, ",");
        if (n < sizeof one) {
            memcpy(one, p, n);
            one[n] = '\0';
            if (fnmatch(one, name, 0) == 0)
                return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

/* Candidate values of a ranged tunable: powers of two within the range, plus its default. */
static size_t range_values(const kp_tunable_desc *t, int64_t *out, size_t cap)
{
    size_t n = 0;
    /* Doubling stops before it could pass the maximum, INT64_MAX included. */
    for (int64_t v = 1; v <= t->max && n + 1 < cap; v *= 2) {
        if (v >= t->min)
            out[n++] = v;
        if (v > t->max / 2)
            break;
    }
    int has_default = 0;
    for (size_t i = 0; i < n; i++)
        has_default |= out[i] == t->default_value;
    if (!has_default && n < cap)
        out[n++] = t->default_value;
    return n;
}

/* The outputs of one run at the timing size, in host memory. */
typedef struct outputs {
    size_t n;
    void *data[16];
    size_t bytes[16];
    int32_t dtype[16];
    double atol, rtol;
} outputs;

typedef struct tune_ctx {
    kp_runtime *rt;
    kp_kernel *k;
    const kp_tune_options *opt;
    kp_bench_options bench; /* opt->bench, or the tuner's defaults */
    const char *size;
    outputs golden; /* the starting point's outputs: every candidate must agree with them */
    int have_golden;
} tune_ctx;

static void outputs_free(outputs *o)
{
    for (size_t i = 0; i < o->n; i++)
        free(o->data[i]);
    o->n = 0;
}

/* Runs the kernel once at `size` with the current tuning and copies every output (its whole
 * buffer) to host memory, with the tolerance the kernel states for that call. */
static kp_status run_outputs(tune_ctx *c, outputs *out)
{
    const kp_kernel_desc *d = c->k->desc;
    kp_sample s;
    kp__sample_args a = {0};
    memset(out, 0, sizeof *out);
    out->atol = d->atol;
    out->rtol = d->rtol;
    kp_status st = kp__sample_init(&s, c->rt, c->k, c->bench.seed, c->size);
    if (st == KP_OK)
        st = kp__sample_build(&s, c->size);
    if (st == KP_OK && d->tolerance) {
        kp_value values[KP_MAX_PARAMS];
        kp__sample_bind_host(&s, values);
        kp_call call = {
            .struct_size = sizeof call, .n_args = d->n_params, .args = values, .desc = d};
        d->tolerance(&call, &out->atol, &out->rtol);
    }
    if (st == KP_OK)
        st = kp__sample_args_create(c->rt, c->k, &s, 0, &a);
    if (st == KP_OK)
        st = kp_kernel_launch(c->rt, c->k, a.dev, a.n, NULL);
    for (size_t i = 0; st == KP_OK && i < a.n && out->n < 16; i++) {
        uint32_t p = 0;
        while (strcmp(d->params[p].name, a.dev[i].name) != 0)
            p++;
        if (d->params[p].kind != KP_ARG_KIND_TENSOR || d->params[p].access == KP_ACCESS_IN)
            continue;
        const kp_buffer *b = a.dev[i].tensor.buffer;
        size_t bytes = kp_buffer_size(b);
        void *host = malloc(bytes);
        if (!host) {
            st = kp__fail(c->rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
            break;
        }
        out->data[out->n] = host;
        out->bytes[out->n] = bytes;
        out->dtype[out->n++] = a.dev[i].tensor.dtype;
        st = kp_buffer_read(c->rt, b, 0, bytes, host);
    }
    kp__sample_args_free(c->rt, &a);
    kp__sample_fini(&s);
    if (st != KP_OK)
        outputs_free(out);
    return st;
}

static double value_at(const void *p, int32_t dtype, size_t i)
{
    switch (dtype) {
    case KP_F32:
        return ((const float *)p)[i];
    case KP_F16:
        return kp_half_to_float(((const uint16_t *)p)[i]);
    case KP_I32:
        return ((const int32_t *)p)[i];
    case KP_U32:
        return ((const uint32_t *)p)[i];
    case KP_BF16:
        return kp_bf16_to_float(((const uint16_t *)p)[i]);
    case KP_F64:
        return ((const double *)p)[i];
    default:
        return ((const uint8_t *)p)[i];
    }
}

/* Both runs are within the kernel's tolerance of the exact result, so of each other within
 * twice that. Returns a malloc'd description of the first disagreement, or NULL. */
static char *disagreement(const outputs *a, const outputs *b)
{
    for (size_t o = 0; o < a->n && o < b->n; o++) {
        size_t n = a->bytes[o] / kp_dtype_size((kp_dtype)a->dtype[o]);
        for (size_t i = 0; i < n; i++) {
            double x = value_at(a->data[o], a->dtype[o], i),
                   y = value_at(b->data[o], a->dtype[o], i);
            if (x != x && y != y)
                continue;
            if (!(fabs(x - y) <= 2 * (a->atol + a->rtol * fabs(x))))
                return kp__asprintf("output %zu element %zu is %.9g, the starting values gave "
                                    "%.9g",
                                    o, i, y, x);
        }
    }
    return NULL;
}

/* Whether the device still works: a candidate that faults can take the OpenCL context down. */
static int device_alive(kp_runtime *rt)
{
    kp_buffer *b = NULL;
    uint32_t v = 1;
    int ok = kp_buffer_create(rt, sizeof v, &b) == KP_OK &&
             kp_buffer_write(rt, b, 0, sizeof v, &v) == KP_OK && kp_finish(rt) == KP_OK;
    kp_buffer_destroy(rt, b);
    return ok;
}

/* Makes `values` the kernel's tuning and resolves it; *allowed is 0 when the runtime refused
 * one of them (the error is then that refusal's). */
static kp_status set_values(tune_ctx *c, const int64_t *values, int *allowed)
{
    const kp_kernel_desc *d = c->k->desc;
    kp_status st = KP_OK;
    kp_kernel_tuning_reset(c->rt, c->k);
    for (uint32_t i = 0; i < d->n_tunables && st == KP_OK; i++)
        st = kp_kernel_tunable_set(c->rt, c->k, d->tunables[i].name, values[i]);
    *allowed = st == KP_OK;
    if (st != KP_OK)
        return st;
    pthread_mutex_lock(&c->rt->lock);
    st = kp__tuning_resolve(c->rt, c->k);
    pthread_mutex_unlock(&c->rt->lock);
    return st;
}

static int time_point(void *user, const int64_t *values, double *seconds)
{
    tune_ctx *c = user;
    kp_bench_result r = {.struct_size = sizeof r};
    int allowed;
    if (set_values(c, values, &allowed) != KP_OK ||
        kp_kernel_bench(c->rt, c->k, c->size, &c->bench, &r) != KP_OK)
        return -1;
    *seconds = r.median_s;
    return 0;
}

static kp__tune_outcome eval(void *user, const int64_t *values, double *seconds, char **why)
{
    tune_ctx *c = user;
    const kp_kernel_desc *d = c->k->desc;
    int allowed;
    kp_status st = set_values(c, values, &allowed);
    if (!allowed) {
        *why = kp__asprintf("not allowed here: %s", kp_last_error(c->rt));
        return KP__TUNE_SKIPPED;
    }
    /* Correctness first: a fast wrong answer is never a candidate. */
    if (st == KP_OK)
        st = kp_kernel_verify(c->rt, c->k, NULL, c->bench.seed, NULL, NULL);
    if (st == KP_ERR_VERIFY)
        return KP__TUNE_REJECTED;
    if (st == KP_OK) {
        kp_bench_result r = {.struct_size = sizeof r};
        st = kp_kernel_bench(c->rt, c->k, c->size, &c->bench, &r);
        *seconds = r.median_s;
    }
    /* The verify sizes are small: values that only matter at the timing size (a library's
     * large-matrix kernel) are checked there against the starting point's result. */
    if (st == KP_OK && c->have_golden) {
        outputs mine;
        st = run_outputs(c, &mine);
        char *bad = st == KP_OK ? disagreement(&c->golden, &mine) : NULL;
        if (st == KP_OK)
            outputs_free(&mine);
        if (bad) {
            kp__log(c->rt, KP_LOG_INFO, "kernel %s: candidate rejected at size %s: %s", d->name,
                    c->size, bad);
            free(bad);
            return KP__TUNE_REJECTED;
        }
    }
    if (st == KP_OK)
        return KP__TUNE_MEASURED;
    const char *m = kp_last_error(c->rt);
    size_t line = strcspn(m, "\n");
    *why = kp__asprintf("skipped (%s): %.*s", kp_status_name(st), (int)line, m);
    /* A candidate that faults can take the context down; then nothing after it can be trusted. */
    if ((st == KP_ERR_CL || st == KP_ERR_OUT_OF_MEMORY) && !device_alive(c->rt)) {
        char *fatal = kp__asprintf("the device stopped working after this candidate (%s); "
                                   "tuning stops",
                                   *why);
        free(*why);
        *why = fatal;
        return KP__TUNE_FATAL;
    }
    return st == KP_ERR_INTERNAL ? KP__TUNE_FATAL : KP__TUNE_SKIPPED;
}

static void forward(void *user, const int64_t *values, double seconds, const char *outcome)
{
    tune_ctx *c = user;
    if (!c->opt->report)
        return;
    kp_tune_step step = {.struct_size = sizeof step,
                         .kernel = c->k->desc->name,
                         .values = values,
                         .n_values = c->k->desc->n_tunables,
                         .median_s = seconds,
                         .outcome = outcome};
    c->opt->report(c->opt->user, &step);
}

kp_status kp_kernel_tune(kp_runtime *rt, kp_kernel *k, const kp_tune_options *opt,
                         kp_tune_result *out)
{
    if (!rt || !k)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tune: NULL argument");
    if (k->rt != rt)
        return kp__kernel_foreign(rt, k, "kp_kernel_tune");
    const kp_kernel_desc *d = k->desc;
    kp_status st = KP__OUT_CHECK(rt, "kp_kernel_tune", kp_tune_result, out);
    kp_tune_options o = kp_tune_options_default();
    if (st == KP_OK && opt)
        st = KP__IN_COPY(rt, "kp_kernel_tune", kp_tune_options, &o, opt);
    /* Each candidate is timed a little less than a lone benchmark: the search times many. */
    kp_bench_options bench = kp_bench_options_default();
    bench.min_runs = 5;
    bench.min_seconds = 0.1;
    if (st == KP_OK && o.bench)
        st = KP__IN_COPY(rt, "kp_kernel_tune (options.bench)", kp_bench_options, &bench, o.bench);
    if (st != KP_OK)
        return st;
    if (!d->n_tunables || !d->sample)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has %s to tune", d->name,
                        d->n_tunables ? "no sample function" : "no tunables");
    if (d->n_tunables > KP__TUNE_MAX)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has more than %d tunables", d->name,
                        KP__TUNE_MAX);
    const char *const *bench_sizes = kp_kernel_sample_sizes(k, 1), *const *verify =
                                                                       kp_kernel_sample_sizes(k, 0);
    const char *size = o.size ? o.size : bench_sizes[0];
    for (size_t i = 0; !size && verify[i]; i++)
        size = verify[i];
    if (!size)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s lists no sample sizes", d->name);

    /* The starting point is what the manifest chooses today. */
    kp_kernel_tuning_reset(rt, k);
    pthread_mutex_lock(&rt->lock);
    k->limits_checked = 1;
    st = kp__tuning_resolve(rt, k);
    k->limits_checked = 0;
    pthread_mutex_unlock(&rt->lock);
    if (st != KP_OK)
        return st;
    kp__tune_space space = {.n = d->n_tunables};
    int64_t *storage = calloc(d->n_tunables * 64, sizeof *storage);
    if (!storage)
        return kp__fail(rt, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (uint32_t i = 0; i < d->n_tunables; i++) {
        const kp_tunable_desc *t = &d->tunables[i];
        int64_t *vals = &storage[i * 64];
        size_t n = 0;
        if (t->n_allowed)
            for (; n < t->n_allowed && n < 64; n++)
                vals[n] = t->allowed[n];
        else if (t->choices)
            for (; t->choices[n] && n < 64; n++)
                vals[n] = (int64_t)n;
        else
            n = range_values(t, vals, 64);
        space.start[i] = k->choices[i].value;
        /* A tunable left out of the search keeps the value it starts with. */
        if ((o.tunables && !matches_any(o.tunables, t->name)) ||
            (t->flags & KP_TUNABLE_NO_SEARCH)) {
            vals[0] = space.start[i];
            n = 1;
        }
        space.values[i] = vals;
        space.counts[i] = n;
    }
    tune_ctx c = {.rt = rt, .k = k, .opt = &o, .bench = bench, .size = size};
    c.have_golden = run_outputs(&c, &c.golden) == KP_OK;
    if (!c.have_golden)
        kp__log(rt, KP_LOG_WARN,
                "kernel %s: the starting values do not run at size %s (%s); "
                "candidates are checked on the verify sizes only",
                d->name, size, kp_last_error(rt));
    /* Warm-up: the first benchmark of a process runs cold (caches, clocks, a driver's threads
     * starting), and the starting values are measured first. */
    double discarded;
    if (c.have_golden)
        time_point(&c, space.start, &discarded);
    kp_tune_result r;
    st = kp__tune_search(&space, eval, time_point, &c, o.budget_seconds, o.grid_limit, bench.seed,
                         forward, &r);
    KP__OUT_WRITE(kp_tune_result, out, &r);
    outputs_free(&c.golden);
    free(storage);
    kp_kernel_tuning_reset(rt, k);
    if (st == KP_ERR_VERIFY)
        return kp__fail(rt, st,
                        "kernel %s: the starting values give wrong results; fix the "
                        "kernel before tuning it",
                        d->name);
    if (st == KP_ERR_NOT_FOUND)
        return kp__fail(rt, st, "kernel %s: no candidate could be measured", d->name);
    if (st != KP_OK)
        return kp__fail_prefix(rt, st, "kernel %s: tuning stopped", d->name);
    return KP_OK;
}
