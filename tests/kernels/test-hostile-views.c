/* SPDX-License-Identifier: Apache-2.0 */
/* Every kernel's check against hostile calls made from its verify samples: broadcast (stride-0)
 * extents up to INT64_MAX, which cost no memory, and extreme ints. Under ./test.sh --sanitize,
 * UBSan stops at any overflow in the core's or a plugin's size arithmetic; in every build, no
 * check may accept a tensor of more than 2^31 - 1 elements, since every kernel here indexes
 * with int (a wrapped count let such views through before). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Before cmocka.h, whose fail() macro would rewrite the backend sink's member. */
#include "runtime.h"
#include "sample.h"

#include <cmocka.h>

#include "test-util.h"

static const int64_t big_extents[] = {INT_MAX,          (int64_t)INT_MAX + 1, (int64_t)1 << 32,
                                      (int64_t)1 << 40, (int64_t)1 << 62,     INT64_MAX / 3 + 1,
                                      INT64_MAX};
static const int64_t extreme_ints[] = {
    -1, INT64_MIN, INT64_MAX, (int64_t)INT_MAX + 1, (int64_t)1 << 62, -((int64_t)1 << 62)};

typedef struct probe {
    kp_runtime *rt;
    kp_kernel *k;
    kp_buffer *bufs[KP_MAX_PARAMS];
    kp_arg base[KP_MAX_PARAMS];
    size_t n;
    long calls, accepted;
} probe;

/* Binds and checks `args` as a launch would, without enqueueing: KP_OK when the core and the
 * kernel's check accept them. */
static kp_status check(probe *p, const kp_arg *args, const char *what)
{
    kp_value values[KP_MAX_PARAMS];
    kp_status st = kp__args_bind(p->rt, p->k, args, p->n, values);
    p->calls++;
    if (st != KP_OK)
        return st;
    const kp_kernel_desc *d = p->k->desc;
    kp_call call = {.struct_size = sizeof call, .n_args = d->n_params, .args = values, .desc = d};
    pthread_mutex_lock(&p->rt->lock);
    st = kp__tuning_resolve(p->rt, p->k);
    kp_launch l = {.rt = p->rt, .kernel = p->k, .call = &call};
    if (st == KP_OK && d->check)
        st = d->check(&call, &l);
    pthread_mutex_unlock(&p->rt->lock);
    if (st != KP_OK)
        return st;
    p->accepted++;
    for (uint32_t i = 0; i < d->n_params; i++) {
        char desc[200];
        if (values[i].present && d->params[i].kind == KP_ARG_KIND_TENSOR &&
            kp_tensor_numel(&values[i].tensor) > INT_MAX)
            fail_msg("%s accepted %s: %s = %s", d->name, what, d->params[i].name,
                     kp_tensor_describe(&values[i].tensor, desc, sizeof desc));
    }
    return KP_OK;
}

/* The sample as launch arguments, each tensor in a buffer of its own with the sample's data. */
static void bind_sample(probe *p, const kp_sample *s)
{
    const kp_kernel_desc *d = p->k->desc;
    p->n = 0;
    for (uint32_t i = 0; i < d->n_params; i++) {
        const kp__sample_arg *a = &s->args[i];
        if (!a->present)
            continue;
        kp_arg *g = &p->base[p->n++];
        *g = (kp_arg){.name = d->params[i].name, .kind = d->params[i].kind, .i = a->i, .f = a->f};
        if (g->kind != KP_ARG_KIND_TENSOR)
            continue;
        kp_buffer_destroy(p->rt, p->bufs[i]);
        size_t bytes = (size_t)a->numel * kp_dtype_size((kp_dtype)a->dtype);
        assert_int_equal(kp_buffer_create(p->rt, bytes ? bytes : 4, &p->bufs[i]), KP_OK);
        /* Some checks read values (logic's wiring). */
        assert_int_equal(kp_buffer_write(p->rt, p->bufs[i], 0, bytes, a->data), KP_OK);
        g->tensor = kp_tensor_nd(p->bufs[i], (kp_dtype)a->dtype, a->rank, a->shape);
        if (a->has_view) {
            g->tensor.offset = a->offset;
            memcpy(g->tensor.strides, a->strides, sizeof a->strides);
        }
    }
}

/* One dimension of one tensor made a broadcast of each big extent. */
static void one_dimension(probe *p)
{
    for (size_t i = 0; i < p->n; i++)
        for (int32_t dim = 0; p->base[i].kind == KP_ARG_KIND_TENSOR && dim < p->base[i].tensor.rank;
             dim++)
            for (size_t b = 0; b < sizeof big_extents / sizeof big_extents[0]; b++) {
                kp_arg m[KP_MAX_PARAMS];
                memcpy(m, p->base, p->n * sizeof *m);
                m[i].tensor.shape[dim] = big_extents[b];
                m[i].tensor.strides[dim] = 0;
                char what[160];
                snprintf(what, sizeof what, "%s dimension %d = %lld", m[i].name, dim,
                         (long long)big_extents[b]);
                check(p, m, what);
            }
}

/* A size as a whole: every extent (of the inputs, or of every tensor) and int equal to one value
 * of the sample, made each big extent, so that the kernel's shape checks agree and its own
 * arithmetic on the size runs. */
static void one_size(probe *p)
{
    const kp_kernel_desc *d = p->k->desc;
    for (size_t i = 0; i < p->n; i++)
        for (int32_t dim = 0; p->base[i].kind == KP_ARG_KIND_TENSOR && dim < p->base[i].tensor.rank;
             dim++) {
            int64_t v = p->base[i].tensor.shape[dim];
            int seen = 0;
            for (size_t j = 0; j <= i; j++)
                for (int32_t e = 0; p->base[j].kind == KP_ARG_KIND_TENSOR &&
                                    e < (j < i ? p->base[j].tensor.rank : dim);
                     e++)
                    seen |= p->base[j].tensor.shape[e] == v;
            for (size_t b = 0; v > 0 && !seen && b < sizeof big_extents / sizeof big_extents[0];
                 b++)
                for (int outputs = 0; outputs < 2; outputs++) {
                    kp_arg m[KP_MAX_PARAMS];
                    memcpy(m, p->base, p->n * sizeof *m);
                    for (size_t j = 0; j < p->n; j++) {
                        uint32_t q = 0;
                        while (strcmp(d->params[q].name, m[j].name) != 0)
                            q++;
                        if (m[j].kind == KP_ARG_KIND_INT && m[j].i == v)
                            m[j].i = big_extents[b];
                        if (m[j].kind != KP_ARG_KIND_TENSOR ||
                            (!outputs && d->params[q].access != KP_ACCESS_IN))
                            continue;
                        for (int32_t e = 0; e < m[j].tensor.rank; e++)
                            if (m[j].tensor.shape[e] == v) {
                                m[j].tensor.shape[e] = big_extents[b];
                                m[j].tensor.strides[e] = 0;
                            }
                    }
                    char what[160];
                    snprintf(what, sizeof what, "every %lld as %lld%s", (long long)v,
                             (long long)big_extents[b], outputs ? " (outputs too)" : "");
                    check(p, m, what);
                }
        }
}

/* One dimension of one tensor that takes negative strides stepping back by each hostile stride,
 * over its own extent and over big ones: the core's range check and the kernel's own arithmetic
 * on such strides must neither overflow (UBSan) nor let a view reach before its buffer. */
static void negative_strides(probe *p)
{
    static const int64_t strides[] = {-1, -(int64_t)INT_MAX - 1, -((int64_t)1 << 40), -INT64_MAX,
                                      INT64_MIN};
    static const int64_t extents[] = {0, INT_MAX, (int64_t)1 << 32, INT64_MAX};
    const kp_kernel_desc *d = p->k->desc;
    for (size_t i = 0; i < p->n; i++) {
        uint32_t q = 0;
        while (strcmp(d->params[q].name, p->base[i].name) != 0)
            q++;
        if (p->base[i].kind != KP_ARG_KIND_TENSOR ||
            !(d->params[q].flags & KP_PARAM_NEGATIVE_STRIDES))
            continue;
        for (int32_t dim = 0; dim < p->base[i].tensor.rank; dim++)
            for (size_t s = 0; s < sizeof strides / sizeof strides[0]; s++)
                for (size_t e = 0; e < sizeof extents / sizeof extents[0]; e++) {
                    kp_arg m[KP_MAX_PARAMS];
                    memcpy(m, p->base, p->n * sizeof *m);
                    kp_tensor *t = &m[i].tensor;
                    if (extents[e])
                        t->shape[dim] = extents[e];
                    t->strides[dim] = strides[s];
                    t->offset =
                        (int64_t)(kp_buffer_size(t->buffer) / kp_dtype_size((kp_dtype)t->dtype)) -
                        1;
                    char what[160];
                    snprintf(what, sizeof what, "%s dimension %d of %lld stepping %lld", m[i].name,
                             dim, (long long)t->shape[dim], (long long)strides[s]);
                    if (check(p, m, what) == KP_OK) {
                        int64_t lowest = t->offset;
                        for (int32_t k = 0; k < t->rank; k++)
                            if (t->strides[k] < 0 && t->shape[k] > 0)
                                lowest += (t->shape[k] - 1) * t->strides[k];
                        if (lowest < 0)
                            fail_msg("%s accepted %s reaching element %lld", d->name, what,
                                     (long long)lowest);
                    }
                }
    }
}

static void extreme(probe *p)
{
    for (size_t i = 0; i < p->n; i++)
        for (size_t b = 0;
             p->base[i].kind == KP_ARG_KIND_INT && b < sizeof extreme_ints / sizeof extreme_ints[0];
             b++) {
            kp_arg m[KP_MAX_PARAMS];
            memcpy(m, p->base, p->n * sizeof *m);
            m[i].i = extreme_ints[b];
            char what[160];
            snprintf(what, sizeof what, "%s = %lld", m[i].name, (long long)extreme_ints[b]);
            check(p, m, what);
        }
}

static void test_every_kernel(void **state)
{
    probe p = {0};
    kp_runtime_options o =
        test_options(test_build_path("lib/kernelport/plugins"), test_device(), NULL);
    assert_int_equal(kp_runtime_create(&o, &p.rt), KP_OK);
    size_t kernels = 0;
    for (size_t ki = 0; ki < kp_kernel_count(p.rt); ki++) {
        p.k = kp_kernel_at(p.rt, ki);
        const char *const *sizes = kp_kernel_sample_sizes(p.k, 0);
        for (size_t si = 0; p.k->desc->sample && sizes[si]; si++) {
            kp_sample s;
            assert_int_equal(kp__sample_init(&s, p.rt, p.k, 1, sizes[si]), KP_OK);
            assert_int_equal(kp__sample_build(&s, sizes[si]), KP_OK);
            bind_sample(&p, &s);
            kp__sample_fini(&s);
            if (check(&p, p.base, "its sample") != KP_OK)
                fail_msg("%s refused its sample %s: %s", p.k->desc->name, sizes[si],
                         kp_last_error(p.rt));
            one_dimension(&p);
            one_size(&p);
            extreme(&p);
            negative_strides(&p);
        }
        kernels += p.k->desc->sample != NULL;
    }
    print_message("%zu kernels, %ld calls checked, %ld accepted\n", kernels, p.calls, p.accepted);
    assert_true(kernels > 0);
    kp_runtime_destroy(p.rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kernel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
