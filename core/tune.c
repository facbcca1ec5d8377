/* kp_kernel_tune: the search space of a kernel's tunables, and candidates verified then timed. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "runtime.h"
#include "tune.h"

kp_tune_options kp_tune_options_default(void)
{
    kp_tune_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.budget_seconds = 60;
    o.grid_limit = 64;
    o.bench = kp_bench_options_default();
    o.bench.min_runs = 5;
    o.bench.min_seconds = 0.1;
    return o;
}

/* Candidate values of a ranged tunable: powers of two within the range, plus its default. */
static size_t range_values(const kp_tunable_desc *t, int64_t *out, size_t cap)
{
    size_t n = 0;
    for (int64_t v = 1; v > 0 && v <= t->max && n + 1 < cap; v *= 2)
        if (v >= t->min)
            out[n++] = v;
    int has_default = 0;
    for (size_t i = 0; i < n; i++)
        has_default |= out[i] == t->default_value;
    if (!has_default && n < cap)
        out[n++] = t->default_value;
    return n;
}

typedef struct tune_ctx {
    kp_runtime *rt;
    kp_kernel *k;
    const kp_tune_options *opt;
    const char *size;
} tune_ctx;

static kp__tune_outcome eval(void *user, const int64_t *values, double *seconds, char **why)
{
    tune_ctx *c = user;
    const kp_kernel_desc *d = c->k->desc;
    kp_status st = KP_OK;
    kp_kernel_tuning_reset(c->rt, c->k);
    for (uint32_t i = 0; i < d->n_tunables && st == KP_OK; i++)
        st = kp_kernel_tunable_set(c->rt, c->k, d->tunables[i].name, values[i]);
    if (st != KP_OK) {
        *why = kp__asprintf("not allowed here: %s", kp_last_error(c->rt));
        return KP__TUNE_SKIPPED;
    }
    pthread_mutex_lock(&c->rt->lock);
    st = kp__tuning_resolve(c->rt, c->k);
    pthread_mutex_unlock(&c->rt->lock);
    /* Correctness first: a fast wrong answer is never a candidate. */
    if (st == KP_OK)
        st = kp_kernel_verify(c->rt, c->k, NULL, c->opt->bench.seed, NULL, NULL);
    if (st == KP_ERR_VERIFY)
        return KP__TUNE_REJECTED;
    if (st == KP_OK) {
        kp_bench_result r;
        st = kp_kernel_bench(c->rt, c->k, c->size, &c->opt->bench, &r);
        *seconds = r.median_s;
    }
    if (st == KP_OK)
        return KP__TUNE_MEASURED;
    const char *m = kp_last_error(c->rt);
    size_t line = strcspn(m, "\n");
    *why = kp__asprintf("skipped (%s): %.*s", kp_status_name(st), (int)line, m);
    /* Only our own bugs end the search; a launch the device refuses is this point's problem. */
    return st == KP_ERR_INTERNAL ? KP__TUNE_FATAL : KP__TUNE_SKIPPED;
}

static void forward(void *user, const int64_t *values, double seconds, const char *outcome)
{
    tune_ctx *c = user;
    if (!c->opt->report)
        return;
    kp_tune_step step = {.kernel = c->k->desc->name,
                         .values = values,
                         .n_values = c->k->desc->n_tunables,
                         .median_s = seconds,
                         .outcome = outcome};
    c->opt->report(c->opt->user, &step);
}

kp_status kp_kernel_tune(kp_runtime *rt, kp_kernel *k, const kp_tune_options *opt,
                         kp_tune_result *out)
{
    if (!rt || !k || !out)
        return kp__fail(rt, KP_ERR_INVALID_ARG, "kp_kernel_tune: NULL argument");
    const kp_kernel_desc *d = k->desc;
    kp_tune_options o = kp_tune_options_default();
    if (opt)
        memcpy(&o, opt, opt->struct_size < sizeof o ? opt->struct_size : sizeof o);
    if (!d->n_tunables || !d->sample)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has %s to tune", d->name,
                        d->n_tunables ? "no sample function" : "no tunables");
    if (d->n_tunables > KP__TUNE_MAX)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s has more than %d tunables", d->name,
                        KP__TUNE_MAX);
    const char *const *bench = kp_kernel_sample_sizes(k, 1), *const *verify =
                                                                 kp_kernel_sample_sizes(k, 0);
    const char *size = o.size ? o.size : bench[0];
    for (size_t i = 0; !size && verify[i]; i++)
        size = verify[i];
    if (!size)
        return kp__fail(rt, KP_ERR_UNSUPPORTED, "kernel %s lists no sample sizes", d->name);

    /* The starting point is what the manifest chooses today. */
    kp_kernel_tuning_reset(rt, k);
    pthread_mutex_lock(&rt->lock);
    k->limits_checked = 1;
    kp_status st = kp__tuning_resolve(rt, k);
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
        if (o.tunables && fnmatch(o.tunables, t->name, 0) != 0) {
            vals[0] = space.start[i];
            n = 1;
        }
        space.values[i] = vals;
        space.counts[i] = n;
    }
    tune_ctx c = {.rt = rt, .k = k, .opt = &o, .size = size};
    st = kp__tune_search(&space, eval, &c, o.budget_seconds, o.grid_limit, o.bench.seed, forward,
                         out);
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
