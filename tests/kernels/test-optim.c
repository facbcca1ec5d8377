/* SPDX-License-Identifier: Apache-2.0 */
/* The optim family: every kernel against its host reference; five steps of each optimizer over an
 * arena of odd-sized tensors against PyTorch's formulas iterated in double; the same bits across
 * runs and work-group sizes; clipping fused into the step; prepared launches that change the step;
 * the weights' moving average against its formula; and bad inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernelport/ops/optim.h"
#include "test-util.h"

static kp_runtime *rt;

static int setup(void **state)
{
    (void)state;
    return test_runtime(test_build_path("lib/kernelport/plugins"), &rt);
}

static int teardown(void **state)
{
    kp_runtime_destroy(rt);
    return 0;
}

static kp_kernel *find(const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    return k;
}

static kp_buffer *upload(const void *x, size_t bytes)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, bytes ? bytes : 4, &b), KP_OK);
    if (x && bytes)
        assert_int_equal(kp_buffer_write(rt, b, 0, bytes, x), KP_OK);
    return b;
}

static void download(kp_buffer *b, void *x, size_t bytes)
{
    assert_int_equal(kp_buffer_read(rt, b, 0, bytes, x), KP_OK);
}

static void expect_ok(kp_status st, const char *what)
{
    if (st != KP_OK)
        fail_msg("%s: %s", what, kp_last_error(rt));
}

/* ---- every kernel against its reference ---- */

static void test_verify_every_kernel(void **state)
{
    size_t verified = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
        if (!kp_kernel_name_matches("optim.*", info.name))
            continue;
        kp_status st = kp_kernel_verify(rt, k, NULL, 11, NULL, NULL);
        if (st != KP_OK)
            fail_msg("%s: %s", info.name, kp_last_error(rt));
        verified++;
    }
    /* sgd, adam, adamw, clip_grad_norm, ema */
    assert_int_equal(verified, 5);
}

/* ---- the arena layout ---- */

static void test_arena_layout(void **state)
{
    const int64_t numel[4] = {1, 6, 0, 9};
    int32_t seg[8];
    assert_int_equal(kp_optim_arena_layout(4, numel, 4, seg), 4 + 8 + 0 + 9);
    const int32_t want[8] = {0, 1, 4, 6, 12, 0, 12, 9};
    assert_memory_equal(seg, want, sizeof want);
    assert_int_equal(kp_optim_arena_layout(4, numel, 1, seg), 16);
    assert_int_equal(seg[6], 7);
    const int64_t bad[2] = {3, -1}, huge[2] = {INT32_MAX, 1};
    assert_int_equal(kp_optim_arena_layout(2, bad, 4, seg), -1);
    assert_int_equal(kp_optim_arena_layout(2, huge, 1, seg), -1);
    assert_int_equal(kp_optim_arena_layout(0, numel, 4, seg), -1);
    assert_int_equal(kp_optim_arena_layout(4, numel, 0, seg), -1);
    kp_optim_arena_layout(4, numel, 4, seg);
    const int64_t shape[2] = {3, 3}, wrong[2] = {2, 4};
    kp_tensor t = kp_optim_arena_view(NULL, KP_F32, seg, 3, 2, shape);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.offset, 12);
    assert_int_equal(t.strides[0], 3);
    assert_int_equal(kp_optim_arena_view(NULL, KP_F32, seg, 3, 2, wrong).rank, -1);
}

/* ---- five steps against PyTorch's formulas in double ---- */

/* A model of seven odd-sized tensors in one arena (16-byte aligned tensors, padding between),
 * three param groups through the multipliers: a no-decay group and a half-rate group. */
enum { T = 7, STEPS = 5 };
static const int64_t model_numel[T] = {1, 3, 17, 101, 5, 64, 13};
static const float model_scales[T][2] = {{1, 1}, {1, 0},    {0.5f, 1}, {1, 1},
                                         {1, 0}, {0.5f, 1}, {1, 1}};

typedef struct model {
    int32_t seg[2 * T];
    int64_t n;
    kp_buffer *param, *grad, *m, *v, *vmax, *master, *segments, *scales;
    kp_tensor tparam, tgrad, tm, tv, tvmax, tmaster, tsegments, tscales;
    double *p, *rm, *rv, *rvmax; /* the reference's state, in double */
    float *host;                 /* staging */
} model;

/* Padding is filled with values no update may touch: NaN in the gradients (a kernel that read
 * them into the norm or a moment would show it), 7 in the parameters and states. */
static int in_segment(const model *md, int64_t e, int *which)
{
    for (int t = 0; t < T; t++)
        if (e >= md->seg[2 * t] && e < md->seg[2 * t] + md->seg[2 * t + 1]) {
            *which = t;
            return 1;
        }
    return 0;
}

static void model_fill(model *md, kp_buffer *b, unsigned seed, float pad, double *keep)
{
    test_fill_nonzero(md->host, (size_t)md->n, seed);
    int t;
    for (int64_t e = 0; e < md->n; e++) {
        if (!in_segment(md, e, &t))
            md->host[e] = pad;
        else if (keep)
            keep[e] = md->host[e];
    }
    assert_int_equal(kp_buffer_write(rt, b, 0, (size_t)md->n * 4, md->host), KP_OK);
}

static void model_init(model *md, int bf16)
{
    memset(md, 0, sizeof *md);
    md->n = kp_optim_arena_layout(T, model_numel, 4, md->seg);
    assert_true(md->n > 0);
    size_t bytes = (size_t)md->n * 4;
    md->host = calloc((size_t)md->n, 4);
    md->p = calloc((size_t)md->n, sizeof *md->p);
    md->rm = calloc((size_t)md->n, sizeof *md->rm);
    md->rv = calloc((size_t)md->n, sizeof *md->rv);
    md->rvmax = calloc((size_t)md->n, sizeof *md->rvmax);
    md->param = upload(NULL, bytes);
    md->grad = upload(NULL, bytes);
    md->m = upload(NULL, bytes);
    md->v = upload(NULL, bytes);
    md->vmax = upload(NULL, bytes);
    md->master = upload(NULL, bytes);
    model_fill(md, bf16 ? md->master : md->param, 1, 7.0f, md->p);
    if (bf16) {
        uint16_t *h = malloc((size_t)md->n * 2);
        for (int64_t e = 0; e < md->n; e++)
            h[e] = kp_bf16_from_float(md->host[e]);
        assert_int_equal(kp_buffer_write(rt, md->param, 0, (size_t)md->n * 2, h), KP_OK);
        free(h);
    }
    /* The states start at zero inside the tensors, as PyTorch's do. */
    for (int64_t e = 0; e < md->n; e++) {
        int t;
        md->host[e] = in_segment(md, e, &t) ? 0.0f : 7.0f;
    }
    assert_int_equal(kp_buffer_write(rt, md->m, 0, bytes, md->host), KP_OK);
    assert_int_equal(kp_buffer_write(rt, md->v, 0, bytes, md->host), KP_OK);
    assert_int_equal(kp_buffer_write(rt, md->vmax, 0, bytes, md->host), KP_OK);
    md->segments = upload(md->seg, sizeof md->seg);
    md->scales = upload(model_scales, sizeof model_scales);
    md->tparam = kp_tensor_1d(md->param, bf16 ? KP_BF16 : KP_F32, md->n);
    md->tgrad = kp_tensor_1d(md->grad, KP_F32, md->n);
    md->tm = kp_tensor_1d(md->m, KP_F32, md->n);
    md->tv = kp_tensor_1d(md->v, KP_F32, md->n);
    md->tvmax = kp_tensor_1d(md->vmax, KP_F32, md->n);
    md->tmaster = kp_tensor_1d(md->master, KP_F32, md->n);
    md->tsegments = kp_tensor_2d(md->segments, KP_I32, T, 2);
    md->tscales = kp_tensor_2d(md->scales, KP_F32, T, 2);
}

static void model_free(model *md)
{
    kp_buffer *b[] = {md->param, md->grad,   md->m,        md->v,
                      md->vmax,  md->master, md->segments, md->scales};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        kp_buffer_destroy(rt, b[i]);
    free(md->host);
    free(md->p);
    free(md->rm);
    free(md->rv);
    free(md->rvmax);
}

/* Compares an f32 arena with the reference inside the tensors and with the padding value 7
 * outside, bit for bit. */
static void expect_arena(model *md, kp_buffer *b, const double *want, double tol, const char *what,
                         int step)
{
    download(b, md->host, (size_t)md->n * 4);
    for (int64_t e = 0; e < md->n; e++) {
        int t;
        if (!in_segment(md, e, &t)) {
            if (md->host[e] != 7.0f)
                fail_msg("%s, step %d: padding element %lld became %g", what, step, (long long)e,
                         md->host[e]);
            continue;
        }
        if (!(fabs(md->host[e] - want[e]) <= tol * (1 + fabs(want[e]))))
            fail_msg("%s, step %d: element %lld (tensor %d) is %.9g, PyTorch's formula in double "
                     "gives %.9g",
                     what, step, (long long)e, t, md->host[e], want[e]);
    }
}

typedef enum { ADAM, ADAMW, SGD } opt_kind;

typedef struct opt_case {
    opt_kind kind;
    double lr, beta1, beta2, eps, weight_decay, momentum, dampening;
    int amsgrad, maximize, nesterov;
} opt_case;

/* torch.optim's single-tensor formulas (adam.py, sgd.py), in double, on one element. */
static void reference_step(const opt_case *c, int step, double lr_mul, double wd_mul, double g,
                           double *p, double *m, double *v, double *vmax)
{
    const double lr = c->lr * lr_mul, wd = c->weight_decay * wd_mul;
    if (c->maximize)
        g = -g;
    if (c->kind == SGD) {
        g += wd * *p;
        if (c->momentum != 0) {
            *m = step == 1 ? g : c->momentum * *m + (1 - c->dampening) * g;
            g = c->nesterov ? g + c->momentum * *m : *m;
        }
        *p -= lr * g;
        return;
    }
    if (c->kind == ADAMW)
        *p *= 1 - lr * wd;
    else
        g += wd * *p;
    *m += (g - *m) * (1 - c->beta1);
    *v = *v * c->beta2 + (1 - c->beta2) * g * g;
    const double bc1 = 1 - pow(c->beta1, step), bc2 = 1 - pow(c->beta2, step);
    double second = *v;
    if (c->amsgrad) {
        *vmax = fmax(*vmax, *v);
        second = *vmax;
    }
    const double denom = sqrt(second) / sqrt(bc2) + c->eps;
    *p -= lr / bc1 * *m / denom;
}

static kp_status device_step(model *md, const opt_case *c, int step, int bf16,
                             const kp_tensor *grad_mul)
{
    if (c->kind == SGD) {
        kp_sgd_options o = kp_sgd_defaults();
        o.lr = c->lr;
        o.momentum = c->momentum;
        o.dampening = c->dampening;
        o.weight_decay = c->weight_decay;
        o.nesterov = c->nesterov;
        o.maximize = c->maximize;
        o.segments = &md->tsegments;
        o.scales = &md->tscales;
        o.master = bf16 ? &md->tmaster : NULL;
        o.grad_mul = grad_mul;
        return kp_optim_sgd(rt, md->tparam, md->tgrad, c->momentum != 0 ? &md->tm : NULL, step, &o);
    }
    kp_adam_options o = c->kind == ADAM ? kp_adam_defaults() : kp_adamw_defaults();
    o.lr = c->lr;
    o.beta1 = c->beta1;
    o.beta2 = c->beta2;
    o.eps = c->eps;
    o.weight_decay = c->weight_decay;
    o.amsgrad = c->amsgrad;
    o.maximize = c->maximize;
    o.max_exp_avg_sq = c->amsgrad ? &md->tvmax : NULL;
    o.master = bf16 ? &md->tmaster : NULL;
    o.segments = &md->tsegments;
    o.scales = &md->tscales;
    o.grad_mul = grad_mul;
    return c->kind == ADAM ? kp_optim_adam(rt, md->tparam, md->tgrad, md->tm, md->tv, step, &o)
                           : kp_optim_adamw(rt, md->tparam, md->tgrad, md->tm, md->tv, step, &o);
}

/* Five steps with new gradients each; after each, every array against the reference. */
static void run_steps(const opt_case *c, int bf16, const char *name)
{
    model md;
    model_init(&md, bf16);
    double *g = calloc((size_t)md.n, sizeof *g);
    for (int step = 1; step <= STEPS; step++) {
        model_fill(&md, md.grad, 100 + (unsigned)step, NAN, g);
        int t;
        for (int64_t e = 0; e < md.n; e++)
            if (in_segment(&md, e, &t))
                reference_step(c, step, model_scales[t][0], model_scales[t][1], g[e], &md.p[e],
                               &md.rm[e], &md.rv[e], &md.rvmax[e]);
        expect_ok(device_step(&md, c, step, bf16, NULL), name);
        /* f32 state against a double reference over five steps: a few float roundings of the
         * largest term each step. */
        const double tol = 2e-6;
        expect_arena(&md, bf16 ? md.master : md.param, md.p, tol, name, step);
        if (c->kind != SGD || c->momentum != 0)
            expect_arena(&md, md.m, md.rm, tol, name, step);
        if (c->kind != SGD)
            expect_arena(&md, md.v, md.rv, tol, name, step);
        if (c->amsgrad)
            expect_arena(&md, md.vmax, md.rvmax, tol, name, step);
        if (bf16) {
            /* The bf16 parameters are the device's own master copy rounded. */
            uint16_t *h = malloc((size_t)md.n * 2);
            float *w = malloc((size_t)md.n * 4);
            download(md.param, h, (size_t)md.n * 2);
            download(md.master, w, (size_t)md.n * 4);
            for (int64_t e = 0; e < md.n; e++)
                if (in_segment(&md, e, &t) && h[e] != kp_bf16_from_float(w[e]))
                    fail_msg("%s: bf16 param %lld is not its master %g rounded", name, (long long)e,
                             w[e]);
            free(h);
            free(w);
        }
    }
    free(g);
    model_free(&md);
}

static void test_steps_match_pytorch_formulas(void **state)
{
    const opt_case adamw = {
        .kind = ADAMW, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1};
    run_steps(&adamw, 0, "adamw");
    const opt_case adam_ams = {.kind = ADAM,
                               .lr = 0.02,
                               .beta1 = 0.8,
                               .beta2 = 0.99,
                               .eps = 1e-6,
                               .weight_decay = 0.05,
                               .amsgrad = 1,
                               .maximize = 1};
    run_steps(&adam_ams, 0, "adam (amsgrad, maximize)");
    const opt_case adamw_ams = {.kind = ADAMW,
                                .lr = 0.01,
                                .beta1 = 0.9,
                                .beta2 = 0.999,
                                .eps = 1e-8,
                                .weight_decay = 0.1,
                                .amsgrad = 1};
    run_steps(&adamw_ams, 0, "adamw (amsgrad)");
    const opt_case sgd = {
        .kind = SGD, .lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01};
    run_steps(&sgd, 0, "sgd (momentum, dampening)");
    const opt_case nesterov = {.kind = SGD,
                               .lr = 0.05,
                               .momentum = 0.9,
                               .weight_decay = 0.01,
                               .nesterov = 1,
                               .maximize = 1};
    run_steps(&nesterov, 0, "sgd (nesterov, maximize)");
    const opt_case plain = {.kind = SGD, .lr = 0.1};
    run_steps(&plain, 0, "sgd (plain)");
    run_steps(&adamw, 1, "adamw (bf16 parameters)");
    run_steps(&sgd, 1, "sgd (bf16 parameters)");
}

/* ---- clipping ---- */

static void test_clip_matches_pytorch_formula(void **state)
{
    model md;
    model_init(&md, 0);
    double *g = calloc((size_t)md.n, sizeof *g);
    model_fill(&md, md.grad, 5, NAN, g);
    float zero = 0;
    kp_buffer *bn = upload(&zero, 4);
    kp_tensor norm = kp_tensor_nd(bn, KP_F32, 0, NULL);
    double sum = 0;
    int t;
    for (int64_t e = 0; e < md.n; e++)
        if (in_segment(&md, e, &t))
            sum += g[e] * g[e];
    const double total = sqrt(sum), max_norm = 0.5 * total;
    const double coef = max_norm / (total + 1e-6);
    expect_ok(kp_optim_clip_grad_norm(rt, md.tgrad, norm, max_norm, &md.tsegments), "clip");
    float got;
    download(bn, &got, 4);
    assert_true(fabs(got - total) <= 1e-6 * total);
    download(md.grad, md.host, (size_t)md.n * 4);
    for (int64_t e = 0; e < md.n; e++) {
        if (!in_segment(&md, e, &t)) {
            assert_true(isnan(md.host[e]));
            continue;
        }
        if (fabs(md.host[e] - g[e] * coef) > 1e-6 * fabs(g[e] * coef) + 1e-9)
            fail_msg("clip: gradient %lld is %.9g, want %.9g", (long long)e, md.host[e],
                     g[e] * coef);
    }
    /* Under max_norm nothing changes (the coefficient clamps at 1) and the norm is still told. */
    expect_ok(kp_optim_clip_grad_norm(rt, md.tgrad, norm, 10 * total, &md.tsegments), "clip");
    float *before = malloc((size_t)md.n * 4);
    memcpy(before, md.host, (size_t)md.n * 4);
    download(md.grad, md.host, (size_t)md.n * 4);
    for (int64_t e = 0; e < md.n; e++)
        if (in_segment(&md, e, &t))
            assert_true(md.host[e] == before[e]);
    download(bn, &got, 4);
    assert_true(fabs(got - max_norm) <= 1e-5 * max_norm);
    free(before);
    free(g);
    kp_buffer_destroy(rt, bn);
    model_free(&md);
}

/* Clipping inside the step (clip_coef, then AdamW with grad_mul = coef) gives the bits of
 * clipping the gradients first: both multiply each gradient by the same f32 coefficient. */
static void test_clip_fused_into_step(void **state)
{
    model a, b;
    model_init(&a, 0);
    model_init(&b, 0);
    float zero = 0;
    kp_buffer *bn = upload(&zero, 4), *bc = upload(&zero, 4);
    kp_tensor norm = kp_tensor_nd(bn, KP_F32, 0, NULL), coef = kp_tensor_nd(bc, KP_F32, 0, NULL);
    const opt_case adamw = {
        .kind = ADAMW, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1};
    for (int step = 1; step <= 3; step++) {
        model_fill(&a, a.grad, 200 + (unsigned)step, NAN, NULL);
        model_fill(&b, b.grad, 200 + (unsigned)step, NAN, NULL);
        expect_ok(kp_optim_clip_grad_norm(rt, a.tgrad, norm, 0.25, &a.tsegments), "clip");
        expect_ok(device_step(&a, &adamw, step, 0, NULL), "adamw after clip");
        expect_ok(kp_optim_clip_coef(rt, b.tgrad, norm, coef, 0.25, &b.tsegments), "clip_coef");
        expect_ok(device_step(&b, &adamw, step, 0, &coef), "adamw with grad_mul");
    }
    float *x = malloc((size_t)a.n * 4), *y = malloc((size_t)a.n * 4);
    kp_buffer *pairs[3][2] = {{a.param, b.param}, {a.m, b.m}, {a.v, b.v}};
    for (int i = 0; i < 3; i++) {
        download(pairs[i][0], x, (size_t)a.n * 4);
        download(pairs[i][1], y, (size_t)a.n * 4);
        assert_memory_equal(x, y, (size_t)a.n * 4);
    }
    free(x);
    free(y);
    kp_buffer_destroy(rt, bn);
    kp_buffer_destroy(rt, bc);
    model_free(&a);
    model_free(&b);
}

/* ---- the same bits on every run and at every work-group size ---- */

/* Runs `launch` at work-group sizes 32 and 256, twice each, from the same inputs, and compares
 * the `n_out` buffers' bits. */
typedef kp_status (*launch_fn)(void *user);

static void expect_same_bits(const char *kernel, launch_fn launch, void *user, kp_buffer *const *in,
                             const void *const *in_data, const size_t *in_bytes, size_t n_in,
                             kp_buffer *const *out, const size_t *out_bytes, size_t n_out)
{
    kp_kernel *k = find(kernel);
    void *first[4] = {NULL};
    for (int attempt = 0; attempt < 4; attempt++) {
        for (size_t i = 0; i < n_in; i++)
            assert_int_equal(kp_buffer_write(rt, in[i], 0, in_bytes[i], in_data[i]), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(rt, k, "WG", attempt < 2 ? 32 : 256), KP_OK);
        expect_ok(launch(user), kernel);
        for (size_t o = 0; o < n_out; o++) {
            void *got = malloc(out_bytes[o]);
            download(out[o], got, out_bytes[o]);
            if (!first[o]) {
                first[o] = got;
                continue;
            }
            if (memcmp(first[o], got, out_bytes[o]) != 0)
                fail_msg("%s: output %zu differs at attempt %d (WG %d)", kernel, o, attempt,
                         attempt < 2 ? 32 : 256);
            free(got);
        }
    }
    for (size_t o = 0; o < n_out; o++)
        free(first[o]);
    assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
}

typedef struct det {
    kp_tensor grad, norm, p, m, v, seg;
} det;

static kp_status clip_launch(void *user)
{
    det *d = user;
    return kp_optim_clip_grad_norm(rt, d->grad, d->norm, 1.0, d->seg.buffer ? &d->seg : NULL);
}

static kp_status adamw_launch(void *user)
{
    det *d = user;
    kp_adam_options o = kp_adamw_defaults();
    o.segments = &d->seg;
    return kp_optim_adamw(rt, d->p, d->grad, d->m, d->v, 4, &o);
}

static void test_deterministic(void **state)
{
    /* A prime length with 2^15 lanes in the first pass, at offset 1 (the unaligned path). A
     * square root halves a sum's rounding difference, so a norm summed in another order keeps
     * its bits now and then: several gradient sets, each with and without segments, in each
     * layout. */
    enum { N = 1048573, SEEDS = 4 };
    float *g = malloc((N + 1) * sizeof *g), *v = malloc((N + 1) * sizeof *v);
    const int32_t seg[6] = {0, 1000, 1003, 499000, 500004, N - 500004};
    kp_buffer *bg = upload(NULL, (N + 1) * 4), *bn = upload(NULL, 4),
              *bp = upload(NULL, (N + 1) * 4), *bm = upload(NULL, (N + 1) * 4),
              *bv = upload(NULL, (N + 1) * 4), *bs = upload(seg, 24);
    det d = {.grad = kp_tensor_1d(bg, KP_F32, N), .norm = kp_tensor_nd(bn, KP_F32, 0, NULL)};
    kp_buffer *in[4] = {bg, bp, bm, bv};
    const void *in_data[4] = {g, g, g, v};
    const size_t in_bytes[4] = {(N + 1) * 4, (N + 1) * 4, (N + 1) * 4, (N + 1) * 4};
    kp_buffer *out[2] = {bn, bg};
    const size_t out_bytes[2] = {4, (N + 1) * 4};
    /* Both layouts of the first pass (GPUs' interleaved lanes, CPUs' blocked runs). */
    kp_kernel *clip = find("optim.clip_grad_norm");
    for (unsigned seed = 0; seed < 2 * SEEDS; seed++) {
        test_fill(g, N + 1, 41 + seed / 2);
        for (int with_segments = 0; with_segments < 2; with_segments++) {
            d.grad.offset = 1;
            d.seg = with_segments ? kp_tensor_2d(bs, KP_I32, 3, 2) : (kp_tensor){0};
            assert_int_equal(kp_kernel_tunable_set(rt, clip, "LAYOUT", 1 + seed % 2), KP_OK);
            expect_same_bits("optim.clip_grad_norm", clip_launch, &d, in, in_data, in_bytes, 1, out,
                             out_bytes, 2);
        }
    }
    test_fill(v, N + 1, 40);
    for (size_t i = 0; i <= N; i++)
        v[i] = fabsf(v[i]);
    d.p = kp_tensor_1d(bp, KP_F32, N);
    d.m = kp_tensor_1d(bm, KP_F32, N);
    d.v = kp_tensor_1d(bv, KP_F32, N);
    d.grad.offset = 0;
    kp_buffer *aout[3] = {bp, bm, bv};
    const size_t aout_bytes[3] = {(N + 1) * 4, (N + 1) * 4, (N + 1) * 4};
    expect_same_bits("optim.adamw", adamw_launch, &d, in, in_data, in_bytes, 4, aout, aout_bytes,
                     3);
    /* Runs of groups per work-item (RUN: 1 on GPUs, 16 on CPUs) carry the segment found from one
     * group to the next: the same bits as a search for each. */
    kp_kernel *adamw = find("optim.adamw");
    float *first = malloc((N + 1) * sizeof *first), *got = malloc((N + 1) * sizeof *got);
    const int runs[3] = {1, 16, 64};
    for (int r = 0; r < 3; r++) {
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(kp_buffer_write(rt, in[i], 0, in_bytes[i], in_data[i]), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(rt, adamw, "RUN", runs[r]), KP_OK);
        expect_ok(adamw_launch(&d), "optim.adamw");
        download(bp, r ? got : first, (N + 1) * 4);
        if (r && memcmp(first, got, (N + 1) * 4) != 0)
            fail_msg("optim.adamw: RUN %d differs from RUN 1", runs[r]);
    }
    assert_int_equal(kp_kernel_tuning_reset(rt, adamw), KP_OK);
    free(first);
    free(got);
    kp_buffer *bufs[] = {bg, bn, bp, bm, bv, bs};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        kp_buffer_destroy(rt, bufs[i]);
    free(g);
    free(v);
}

/* ---- prepared launches: the step changes, the recording stays ---- */

static void test_prepared_step(void **state)
{
    model a, b;
    model_init(&a, 0);
    model_init(&b, 0);
    kp_arg args[] = {kp_arg_tensor("param", a.tparam),
                     kp_arg_tensor("grad", a.tgrad),
                     kp_arg_tensor("exp_avg", a.tm),
                     kp_arg_tensor("exp_avg_sq", a.tv),
                     kp_arg_tensor("segments", a.tsegments),
                     kp_arg_tensor("scales", a.tscales),
                     kp_arg_int("step", 1),
                     kp_arg_int("check_segments", 0)};
    kp_prepared *p = NULL;
    expect_ok(kp_prepared_create(rt, find("optim.adamw"), args, 8, &p), "prepared");
    const opt_case adamw = {
        .kind = ADAMW, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 1e-2};
    for (int step = 1; step <= 4; step++) {
        model_fill(&a, a.grad, 300 + (unsigned)step, NAN, NULL);
        model_fill(&b, b.grad, 300 + (unsigned)step, NAN, NULL);
        expect_ok(kp_prepared_set_int(p, "step", step), "prepared step");
        expect_ok(kp_prepared_launch(p, NULL), "prepared launch");
        expect_ok(device_step(&b, &adamw, step, 0, NULL), "plain launch");
    }
    float *x = malloc((size_t)a.n * 4), *y = malloc((size_t)a.n * 4);
    download(a.param, x, (size_t)a.n * 4);
    download(b.param, y, (size_t)a.n * 4);
    assert_memory_equal(x, y, (size_t)a.n * 4);
    free(x);
    free(y);
    kp_prepared_destroy(p);
    model_free(&a);
    model_free(&b);
}

/* ---- bad inputs: clear errors, and the runtime goes on ---- */

static void expect_error(kp_status st, kp_status want, const char *part1, const char *part2)
{
    if (st != want)
        fail_msg("status %s, want %s (%s)", kp_status_name(st), kp_status_name(want),
                 kp_last_error(rt));
    const char *msg = kp_last_error(rt);
    if (!strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        fail_msg("message \"%s\" lacks \"%s\"%s%s", msg, part1, part2 ? " or " : "",
                 part2 ? part2 : "");
}

static void test_bad_inputs(void **state)
{
    enum { N = 64 };
    float x[5 * N];
    test_fill(x, 5 * N, 9);
    for (int i = 0; i < 5 * N; i++)
        x[i] = fabsf(x[i]);
    /* The arrays in one buffer at disjoint offsets: param, grad, exp_avg, exp_avg_sq. */
    kp_buffer *b = upload(x, sizeof x);
    kp_tensor p = kp_tensor_1d(b, KP_F32, N), g = p, m = p, v = p;
    g.offset = N;
    m.offset = 2 * N;
    v.offset = 3 * N;
    kp_adam_options o = kp_adamw_defaults();
    expect_ok(kp_optim_adamw(rt, p, g, m, v, 1, &o), "adamw in one buffer");
    /* Mismatched lengths, a strided array, a wrong dtype, overlapping arrays. */
    kp_tensor short_g = kp_tensor_1d(b, KP_F32, N - 1);
    short_g.offset = N;
    expect_error(kp_optim_adamw(rt, p, short_g, m, v, 1, &o), KP_ERR_INVALID_ARG,
                 "grad: expected [N] = [64] like param, got f32[63]", NULL);
    kp_tensor strided = kp_tensor_1d(b, KP_F32, N / 2);
    strided.strides[0] = 2;
    strided.offset = 2 * N;
    kp_tensor half_p = kp_tensor_1d(b, KP_F32, N / 2), half_g = half_p, half_v = half_p;
    half_g.offset = N;
    half_v.offset = 3 * N;
    expect_error(kp_optim_adamw(rt, half_p, half_g, strided, half_v, 1, &o), KP_ERR_INVALID_ARG,
                 "exp_avg:", "is not contiguous");
    kp_tensor ints = p;
    ints.dtype = KP_I32;
    expect_error(kp_optim_adamw(rt, ints, g, m, v, 1, &o), KP_ERR_INVALID_ARG,
                 "dtype i32 is not accepted", NULL);
    kp_tensor overlapping = m;
    overlapping.offset = 2 * N - 1;
    expect_error(kp_optim_adamw(rt, p, g, overlapping, v, 1, &o), KP_ERR_INVALID_ARG,
                 "overlaps argument", NULL);
    expect_error(kp_optim_adamw(rt, p, g, m, m, 1, &o), KP_ERR_INVALID_ARG, "overlaps argument",
                 NULL);
    /* Options PyTorch refuses, and state the options need. */
    expect_error(kp_optim_adamw(rt, p, g, m, v, 0, &o), KP_ERR_INVALID_ARG,
                 "step: 0 is outside 1..2^31 - 1", NULL);
    kp_adam_options bad = o;
    bad.beta1 = 1.0;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "beta1: 1 is outside [0, 1)", NULL);
    bad = o;
    bad.lr = -1;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "lr: -1 is outside [0, inf]", NULL);
    bad = o;
    bad.amsgrad = 1;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "max_exp_avg_sq: amsgrad = 1 needs", NULL);
    kp_tensor bf = p;
    bf.dtype = KP_BF16;
    expect_error(kp_optim_adamw(rt, bf, g, m, v, 1, &o), KP_ERR_INVALID_ARG,
                 "master: bf16 parameters need", NULL);
    kp_tensor two = kp_tensor_1d(b, KP_F32, 2);
    two.offset = 4 * N;
    bad = o;
    bad.grad_mul = &two;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "grad_mul: expected a scalar", NULL);
    kp_sgd_options so = kp_sgd_defaults();
    so.momentum = 0.9;
    expect_error(kp_optim_sgd(rt, p, g, NULL, 1, &so), KP_ERR_INVALID_ARG,
                 "momentum_buffer: momentum = 0.9 needs", NULL);
    so.nesterov = 1;
    so.dampening = 0.1;
    expect_error(kp_optim_sgd(rt, p, g, &m, 1, &so), KP_ERR_INVALID_ARG,
                 "nesterov: Nesterov momentum needs momentum > 0 and dampening 0", NULL);
    /* Segment tables: past the arena, overlapping, negative, a multiplier table of other rows,
     * multipliers without a table. */
    const struct {
        int32_t seg[6];
        const char *msg;
    } tables[] = {
        {{0, 10, 20, 30, 50, 15}, "segment 2 (offset 50, length 15) reaches past the arena's 64"},
        {{0, 10, 9, 30, 50, 4}, "segment 1 starts at 9, before the end of segment 0 [0, 10)"},
        {{0, 10, 20, -3, 50, 4}, "segment 1 has offset 20 and length -3"},
    };
    kp_buffer *bs = upload(NULL, 24), *bsc = upload(x, 24);
    kp_tensor seg = kp_tensor_2d(bs, KP_I32, 3, 2), nrm = kp_tensor_nd(b, KP_F32, 0, NULL);
    nrm.offset = 4 * N;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        assert_int_equal(kp_buffer_write(rt, bs, 0, 24, tables[i].seg), KP_OK);
        bad = o;
        bad.segments = &seg;
        expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                     "segments: ", tables[i].msg);
        expect_error(kp_optim_clip_grad_norm(rt, g, nrm, 1.0, &seg), KP_ERR_INVALID_ARG,
                     "segments: ", tables[i].msg);
    }
    /* More rows than elements (a broadcast table of 2^31 - 1 rows would be read back whole). */
    kp_tensor many = kp_tensor_2d(bs, KP_I32, INT32_MAX, 2);
    many.strides[0] = 0;
    bad = o;
    bad.segments = &many;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "segments: ", "has more rows than the arena's 64 elements");
    const int32_t good[6] = {0, 10, 20, 30, 50, 14};
    assert_int_equal(kp_buffer_write(rt, bs, 0, 24, good), KP_OK);
    kp_tensor scl = kp_tensor_2d(bsc, KP_F32, 2, 2);
    bad = o;
    bad.segments = &seg;
    bad.scales = &scl;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "scales: expected [n, 2] like segments = [3, 2], got f32[2, 2]", NULL);
    bad.segments = NULL;
    expect_error(kp_optim_adamw(rt, p, g, m, v, 1, &bad), KP_ERR_INVALID_ARG,
                 "scales: per-segment multipliers need a segment table", NULL);
    kp_tensor norm = kp_tensor_nd(bsc, KP_F32, 0, NULL);
    expect_error(kp_optim_clip_grad_norm(rt, g, norm, NAN, NULL), KP_ERR_INVALID_ARG,
                 "max_norm: NaN", NULL);
    /* Unchecked, a table past the arena is clipped to it: nothing outside the arrays changes. */
    const int32_t past[6] = {0, 10, 20, 30, 50, 1000};
    assert_int_equal(kp_buffer_write(rt, bs, 0, 24, past), KP_OK);
    float before[5 * N], after[5 * N];
    download(b, before, sizeof before);
    bad = o;
    bad.segments = &seg;
    bad.check_segments = 0;
    kp_tensor p_short = kp_tensor_1d(b, KP_F32, 60), g_short = p_short, m_short = p_short,
              v_short = p_short;
    g_short.offset = N;
    m_short.offset = 2 * N;
    v_short.offset = 3 * N;
    expect_ok(kp_optim_adamw(rt, p_short, g_short, m_short, v_short, 1, &bad), "unchecked table");
    download(b, after, sizeof after);
    for (int a = 0; a < 4; a++)
        for (int i = 60; i < N; i++)
            assert_true(after[a * N + i] == before[a * N + i]);
    assert_true(after[55] != before[55]);
    /* The moving average: its options, and an f32 average only. */
    expect_error(kp_optim_ema(rt, m, p, 2, 1.5, 0), KP_ERR_INVALID_ARG,
                 "decay: 1.5 is outside [0, 1]", NULL);
    expect_error(kp_optim_ema(rt, m, p, 0, 0.9, 0), KP_ERR_INVALID_ARG,
                 "step: 0 is outside 1..2^31 - 1", NULL);
    expect_error(kp_optim_ema(rt, m, p, 2, 0.9, 2), KP_ERR_INVALID_ARG,
                 "warmup: 2 is neither 0 nor 1", NULL);
    expect_error(kp_optim_ema(rt, bf, p, 2, 0.9, 0), KP_ERR_INVALID_ARG,
                 "dtype bf16 is not accepted", NULL);
    expect_error(kp_optim_ema(rt, m, short_g, 2, 0.9, 0), KP_ERR_INVALID_ARG,
                 "param: expected [N] = [64] like averaged, got f32[63]", NULL);
    expect_error(kp_optim_ema(rt, overlapping, m, 2, 0.9, 0), KP_ERR_INVALID_ARG,
                 "overlaps argument", NULL);
    /* The runtime goes on. */
    expect_ok(kp_optim_adamw(rt, p, g, m, v, 2, &o), "adamw after the errors");
    kp_buffer_destroy(rt, b);
    kp_buffer_destroy(rt, bs);
    kp_buffer_destroy(rt, bsc);
}

/* ---- the weights' moving average ---- */

/* Eight updates of a prime-length arena at offset 1 (the unaligned path) with new parameters
 * each, against AveragedModel's rule iterated in double: the first update copies (whatever the
 * average held), the later ones lerp by 1 - decay, or by 1 - min(decay, (1 + t) / (10 + t)) with
 * warmup; nothing outside the view changes. */
static void test_ema_matches_formula(void **state)
{
    enum { N = 1021, UPDATES = 8 };
    float p[N + 2], a[N + 2], got[N + 2];
    double want[N];
    kp_buffer *bp = upload(NULL, sizeof p), *ba = upload(NULL, sizeof a);
    kp_tensor tp = kp_tensor_1d(bp, KP_F32, N), ta = kp_tensor_1d(ba, KP_F32, N);
    tp.offset = ta.offset = 1;
    for (int warmup = 0; warmup < 2; warmup++) {
        const double decay = 0.95;
        test_fill(a, N + 2, 70 + (unsigned)warmup);
        assert_int_equal(kp_buffer_write(rt, ba, 0, sizeof a, a), KP_OK);
        for (int t = 1; t <= UPDATES; t++) {
            test_fill(p, N + 2, 80 + (unsigned)t);
            assert_int_equal(kp_buffer_write(rt, bp, 0, sizeof p, p), KP_OK);
            const double d = warmup ? fmin(decay, (1.0 + t) / (10.0 + t)) : decay;
            for (int i = 0; i < N; i++)
                want[i] = t == 1 ? p[i + 1] : want[i] + (1 - d) * (p[i + 1] - want[i]);
            expect_ok(kp_optim_ema(rt, ta, tp, t, decay, warmup), "optim.ema");
            download(ba, got, sizeof got);
            for (int i = 0; i < N; i++)
                if (fabs(got[i + 1] - want[i]) > 2e-6 * (1 + fabs(want[i])))
                    fail_msg("warmup %d, update %d, element %d: %.9g, want %.9g", warmup, t, i,
                             got[i + 1], want[i]);
            assert_true(got[0] == a[0] && got[N + 1] == a[N + 1]);
        }
    }
    kp_buffer_destroy(rt, bp);
    kp_buffer_destroy(rt, ba);
}

/* ---- an arena of 2^31 - 1 elements ---- */

/* The largest arena the kernels index (8 GB of f32): the norm of its last six elements, a segment,
 * with the rest never written (the OS's zero pages, so the test needs no 8 GB of memory). Group
 * counts and tails computed as (n + 3) / 4 and e + 3 < n overflowed: the norm came out 0. Run as
 * test-optim --huge (label full: 9 s on PoCL). */
static void test_huge_arena(void **state)
{
    const int64_t n = INT32_MAX;
    kp_buffer *g = NULL;
    if (kp_buffer_create(rt, (size_t)n * 4, &g) != KP_OK)
        skip();
    const float tail[7] = {1, 2, 3, 4, 5, 6, 7};
    const int32_t seg[2] = {(int32_t)(n - 6), 6};
    float zero = 0;
    kp_buffer *bs = upload(seg, sizeof seg), *bn = upload(&zero, 4);
    assert_int_equal(kp_buffer_write(rt, g, (size_t)(n - 7) * 4, sizeof tail, tail), KP_OK);
    kp_tensor tseg = kp_tensor_2d(bs, KP_I32, 1, 2);
    expect_ok(kp_optim_clip_grad_norm(rt, kp_tensor_1d(g, KP_F32, n),
                                      kp_tensor_nd(bn, KP_F32, 0, NULL), 1.0, &tseg),
              "clip over 2^31 - 1 elements");
    float norm, got[7];
    download(bn, &norm, 4);
    assert_int_equal(kp_buffer_read(rt, g, (size_t)(n - 7) * 4, sizeof got, got), KP_OK);
    const double want = sqrt(4 + 9 + 16 + 25 + 36 + 49.0);
    if (fabs(norm - want) > 1e-5 * want)
        fail_msg("norm %.7g, want %.7g", norm, want);
    assert_true(got[0] == 1.0f);
    for (int i = 1; i < 7; i++)
        assert_true(fabs(got[i] - tail[i] / want) <= 1e-6);
    kp_buffer_destroy(rt, g);
    kp_buffer_destroy(rt, bs);
    kp_buffer_destroy(rt, bn);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--huge") == 0) {
        const struct CMUnitTest huge[] = {cmocka_unit_test(test_huge_arena)};
        return cmocka_run_group_tests(huge, setup, teardown);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_layout),
        cmocka_unit_test(test_verify_every_kernel),
        cmocka_unit_test(test_steps_match_pytorch_formulas),
        cmocka_unit_test(test_clip_matches_pytorch_formula),
        cmocka_unit_test(test_clip_fused_into_step),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_prepared_step),
        cmocka_unit_test(test_ema_matches_formula),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
