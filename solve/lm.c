// SPDX-License-Identifier: Apache-2.0
/* Batched Levenberg-Marquardt on the device: solve/lm.cl after the generated residual, registered
 * at run time, with kp_lm_solve_host as its host reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solve-embedded.h"
#include "solve-internal.h"

struct kp_lm {
    kp_runtime *rt;
    kp_kernel *kernel;
    kp__compiled *compiled;
    kp_precision precision;
};

/* Parameters, in order; data is left out of graphs without data slots. */
enum {
    L_DATA,
    L_ROWS,
    L_X,
    L_COST,
    L_ITERS,
    L_STATUS,
    L_N,
    L_MAX_IT,
    L_GTOL,
    L_XTOL,
    L_FTOL,
    L_MU0,
    L_MIN_DIAG,
    L_LOSS,
    L_SCALE,
    L_COUNT
};

static int has_data(const kp__compiled *c)
{
    return c->graph->n_data > 0;
}

static const kp_value *arg(const kp_call *call, const kp__compiled *c, int which)
{
    return &call->args[has_data(c) ? which : which - 1];
}

static kp_status make_lm(kp__compiled *c)
{
    kp_status st = kp__solve_make_source(c);
    size_t len = st == KP_OK ? strlen(c->source) : 0;
    if (st == KP_OK && !kp__str_append(&c->source, &len, "%s", kp_kernel_lm_cl))
        st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->name);
    return st;
}

static const kp__compiled *user(kp_launch *l)
{
    return kp_host_api_get()->kernel_user(l);
}

/* Bytes of local memory the kernel declares: x, xt, h, ht, g, gt, d, dt, D, Dt, qtr, qtrt; rowk,
 * coef and the 8 slices of part (S + 1 each); R, Rt, W; a cost and the state (5 reals, 4 ints). */
static size_t local_bytes(const kp__compiled *c)
{
    const size_t S = c->graph->n_params, e = c->f32 ? 4 : 8;
    return e * (12 * S + 10 * (S + 1) + 3 * S * S + 6) + 4 * 4;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const kp_expr_graph *g = c->graph;
    const kp_tensor *x = &arg(call, c, L_X)->tensor;
    const int64_t B = x->rank == 2 ? x->shape[0] : -1, n = arg(call, c, L_N)->i;
    kp_status st =
        kp_host_api_get()->check_shape(l, "x", x, 2, (int64_t[]){-1, g->n_params}, "[B, S]");
    if (st == KP_OK)
        st = kp_host_api_get()->check_shape(l, "rows", &arg(call, c, L_ROWS)->tensor, 1,
                                            (int64_t[]){B + 1}, "[B + 1]");
    const char *outs[] = {"cost", "iterations", "status"};
    for (int i = 0; st == KP_OK && i < 3; i++)
        st = kp_host_api_get()->check_shape(l, outs[i], &arg(call, c, L_COST + i)->tensor, 1,
                                            (int64_t[]){B}, "[B]");
    if (st == KP_OK && (n < 0 || n > INT32_MAX / 2))
        st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "instances: %lld (0 to %d)",
                                     (long long)n, INT32_MAX / 2);
    if (st == KP_OK && has_data(c))
        st = kp_host_api_get()->check_shape(l, "data", &arg(call, c, L_DATA)->tensor, 2,
                                            (int64_t[]){n, g->n_data}, "[instances, D]");
    const kp_device_info *d = kp_host_api_get()->device(l);
    if (st == KP_OK && d->local_mem && local_bytes(c) > d->local_mem)
        st = kp_host_api_get()->fail(
            l, KP_ERR_UNSUPPORTED, "%u parameters need %zu bytes of local memory; %s has %llu",
            g->n_params, local_bytes(c), d->name, (unsigned long long)d->local_mem);
    return st;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const size_t B = (size_t)arg(call, c, L_X)->tensor.shape[0];
    const size_t n = (size_t)arg(call, c, L_N)->i, e = c->f32 ? 4 : 8;
    const size_t per = c->graph->n_outputs * (c->graph->n_params + 2u);
    if (B == 0)
        return KP_OK;
    kp_buffer *scratch;
    kp_status st = kp_host_api_get()->scratch(l, 0, (n ? n : 1) * per * e, &scratch);
    if (st != KP_OK)
        return st;
    size_t wg = (size_t)kp_host_api_get()->tunable(l, "WG"), global = B * wg;
    kp_clargs a = kp_clargs_begin(kp_host_api_get(), l, "solve_lm", NULL);
    for (int i = has_data(c) ? L_DATA : L_ROWS; i <= L_STATUS; i++)
        kp_clargs_tensor(&a, &arg(call, c, i)->tensor, (uint32_t)arg(call, c, i)->tensor.rank);
    kp_clargs_buffer(&a, scratch);
    kp_clargs_int(&a, (int32_t)n);
    kp_clargs_int(&a, (int32_t)arg(call, c, L_MAX_IT)->i);
    for (int i = L_GTOL; i <= L_SCALE; i++) {
        if (i == L_LOSS) {
            kp_clargs_int(&a, (int32_t)arg(call, c, i)->i);
            continue;
        }
        const double v = arg(call, c, i)->f;
        if (c->f32)
            kp_clargs_float(&a, (float)v);
        else
            kp_clargs_value(&a, sizeof v, &v);
    }
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static kp_lm_options options_of(const kp_call *call, const kp__compiled *c)
{
    kp_lm_options o = kp_lm_options_default();
    o.max_iterations = (uint32_t)arg(call, c, L_MAX_IT)->i;
    o.gradient_tolerance = arg(call, c, L_GTOL)->f;
    o.step_tolerance = arg(call, c, L_XTOL)->f;
    o.function_tolerance = arg(call, c, L_FTOL)->f;
    o.initial_damping = arg(call, c, L_MU0)->f;
    o.min_diagonal = arg(call, c, L_MIN_DIAG)->f;
    o.loss = (kp_loss)arg(call, c, L_LOSS)->i;
    o.loss_scale = arg(call, c, L_SCALE)->f;
    return o;
}

static double at(const kp_value *v, int64_t i, int64_t j)
{
    const kp_tensor *t = &v->tensor;
    return kp_dtype_load(v->host, (kp_dtype)t->dtype,
                         t->offset + i * t->strides[0] + (t->rank > 1 ? j * t->strides[1] : 0));
}

static void put(const kp_value *v, int64_t i, int64_t j, double x)
{
    const kp_tensor *t = &v->tensor;
    int64_t k = t->offset + i * t->strides[0] + (t->rank > 1 ? j * t->strides[1] : 0);
    if (t->dtype == KP_F64)
        ((double *)v->host)[k] = x;
    else if (t->dtype == KP_F32)
        ((float *)v->host)[k] = (float)x;
    else
        ((int32_t *)v->host)[k] = (int32_t)x;
}

/* kp_lm_solve_host on copies of the call's tensors, one problem at a time over the rows the
 * kernel reads (clamped into [0, instances] and made non-decreasing, as it clamps them). */
static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const kp_expr_graph *g = c->graph;
    const int64_t B = arg(call, c, L_X)->tensor.shape[0], n = arg(call, c, L_N)->i;
    const uint32_t S = g->n_params, D = g->n_data;
    double *data = malloc(((size_t)n * D + 1) * sizeof *data);
    if (!data)
        return kp_host_api_get()->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < D; k++)
            data[i * D + k] = at(arg(call, c, L_DATA), i, k);
    const kp_lm_options o = options_of(call, c);
    kp_status st = KP_OK;
    for (int64_t b = 0; st == KP_OK && b < B; b++) {
        const double lo = at(arg(call, c, L_ROWS), b, 0), hi = at(arg(call, c, L_ROWS), b + 1, 0);
        const int32_t r0 = (int32_t)fmin(fmax(lo, 0), (double)n);
        const int32_t r1 = (int32_t)fmin(fmax(hi, r0), (double)n);
        int32_t rows[2] = {0, r1 - r0}, it, status;
        double x[32], cost;
        for (uint32_t s = 0; s < S; s++)
            x[s] = at(arg(call, c, L_X), b, s);
        kp_lm_batch one = {.struct_size = sizeof one,
                           .n_problems = 1,
                           .rows = rows,
                           .data = D ? data + (size_t)r0 * D : NULL,
                           .x = x,
                           .cost = &cost,
                           .iterations = &it,
                           .status = &status};
        st = kp_lm_solve_host(g, &o, &one);
        if (st != KP_OK) {
            st = kp_host_api_get()->fail(l, st, "%s", kp_solve_last_error());
            break;
        }
        for (uint32_t s = 0; s < S; s++)
            put(arg(call, c, L_X), b, s, x[s]);
        put(arg(call, c, L_COST), b, 0, cost);
        put(arg(call, c, L_ITERS), b, 0, it);
        put(arg(call, c, L_STATUS), b, 0, status);
    }
    free(data);
    return st;
}

/* B problems of 2 S + 1 to 2 S + 12 instances each (never fitted exactly, so no residual rounds
 * to zero in one precision and not the other), data and starting points in [0.5, 1.5], five
 * iterations with no tolerance that can stop them: the device and the reference take the same
 * path. */
static kp_status sample(kp_sample *s, const char *size)
{
    const kp__compiled *c = kp_host_api_get()->sample_kernel_user(s);
    const kp_expr_graph *g = c->graph;
    const int64_t B = strcmp(size, "one") == 0 ? 1 : strcmp(size, "prime") == 0 ? 37 : 1 << 14;
    const int32_t dt = c->f32 ? KP_F32 : KP_F64;
    int32_t *rows;
    int64_t nb = B + 1;
    kp_status st =
        kp_host_api_get()->sample_tensor(s, "rows", KP_I32, 1, &nb, 0, 1, (void **)&rows);
    int64_t n = 0;
    for (int64_t b = 0; st == KP_OK && b <= B; b++) {
        rows[b] = (int32_t)n;
        n += strcmp(size, "large") == 0
                 ? 25
                 : 2 * g->n_params + 1 + (int64_t)(kp_host_api_get()->sample_random(s) % 12);
    }
    n = st == KP_OK ? rows[B] : 0;
    if (st == KP_OK && has_data(c))
        st = kp_host_api_get()->sample_tensor(s, "data", dt, 2, (int64_t[]){n, g->n_data}, 0.5, 1.5,
                                              NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(s, "x", dt, 2, (int64_t[]){B, g->n_params}, 0.5, 1.5,
                                              NULL);
    const char *outs[] = {"cost", "iterations", "status"};
    for (int i = 0; st == KP_OK && i < 3; i++)
        st = kp_host_api_get()->sample_tensor(s, outs[i], i ? KP_I32 : dt, 1, &B, 0, 0, NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_int(s, "instances", n);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_int(s, "max_iterations", 5);
    const char *off[] = {"gradient_tolerance", "step_tolerance", "function_tolerance"};
    for (int i = 0; st == KP_OK && i < 3; i++)
        st = kp_host_api_get()->sample_float(s, off[i], i == 0 ? -1 : 0);
    return st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp__compiled *c = call->desc->user;
    const double n = (double)arg(call, c, L_N)->i, it = (double)arg(call, c, L_MAX_IT)->i;
    const double S = c->graph->n_params, O = c->graph->n_outputs;
    /* An upper bound: every problem running max_iterations evaluations. */
    out->flops = it * n * (c->n_values + O * (S * (S + 1) + 2 * S + 6));
    out->bytes = n * c->graph->n_data * (c->f32 ? 4 : 8);
}

static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp__compiled *c = call->desc->user;
    *atol = c->f32 ? 1e-3 : 1e-9;
    *rtol = c->f32 ? 1e-2 : 1e-7;
}

static kp_status create_lm(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                           kp_lm **out)
{
    if (out)
        *out = NULL;
    if (!rt || !g || !out)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_lm_create: NULL argument");
    if (g->status != KP_OK || g->n_outputs == 0 || g->n_params == 0 || g->n_params > 32)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "kp_lm_create: the graph must be valid, with outputs and 1 to 32 "
                              "parameters (it has %u)%s%s",
                              g->n_params, g->status ? ": " : "", g->message);
    kp_precision prec;
    kp_status st = kp__solve_precision(rt, precision, &prec);
    if (st != KP_OK)
        return st;
    char name[64];
    snprintf(name, sizeof name, "solve.lm%016llx_%s", (unsigned long long)kp__expr_key(g),
             kp_precision_name(prec));
    kp__compiled *c;
    if ((st = kp__compiled_get(name, g, prec == KP_PRECISION_F32, make_lm, &c)) != KP_OK)
        return st;
    const uint32_t dts = KP_DT(prec == KP_PRECISION_F32 ? KP_F32 : KP_F64);
    const kp_lm_options d = kp_lm_options_default();
#define T(n, acc, dt, doc_)                                                                        \
    {                                                                                              \
        .name = n, .kind = KP_ARG_KIND_TENSOR, .access = acc, .dtypes = dt, .doc = doc_            \
    }
#define F(n, v, doc_)                                                                              \
    {                                                                                              \
        .name = n, .kind = KP_ARG_KIND_FLOAT, .access = KP_ACCESS_IN, .flags = KP_PARAM_OPTIONAL,  \
        .float_default = v, .doc = doc_                                                            \
    }
    const kp_param_desc all[L_COUNT] = {
        T("data", KP_ACCESS_IN, dts, "[instances, D] every problem's data rows"),
        T("rows", KP_ACCESS_IN, KP_DT(KP_I32), "[B + 1] problem b owns rows[b] .. rows[b+1]-1"),
        T("x", KP_ACCESS_INOUT, dts, "[B, S] starting points in, estimates out"),
        T("cost", KP_ACCESS_OUT, dts, "[B] 0.5 sum rho(r^2) at x"),
        T("iterations", KP_ACCESS_OUT, KP_DT(KP_I32), "[B] Jacobian evaluations"),
        T("status", KP_ACCESS_OUT, KP_DT(KP_I32), "[B] kp_lm_status"),
        {.name = "instances",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .doc = "rows[B]: the instances of all problems"},
        {.name = "max_iterations",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .flags = KP_PARAM_OPTIONAL,
         .int_default = d.max_iterations},
        F("gradient_tolerance", d.gradient_tolerance, NULL),
        F("step_tolerance", d.step_tolerance, NULL),
        F("function_tolerance", d.function_tolerance, NULL),
        F("initial_damping", d.initial_damping, NULL),
        F("min_diagonal", d.min_diagonal, NULL),
        {.name = "loss",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .flags = KP_PARAM_OPTIONAL,
         .doc = "kp_loss: 0 squared, 1 Huber, 2 Cauchy"},
        F("loss_scale", d.loss_scale, NULL),
    };
#undef T
#undef F
    static const int64_t wgs[] = {16, 32, 64, 128, 256};
    static const char *const verify_sizes[] = {"one", "prime", NULL};
    static const char *const bench_sizes[] = {"large", NULL};
    const kp_tunable_desc wg = {.name = "WG",
                                .default_value = 32,
                                .allowed = wgs,
                                .n_allowed = 5,
                                .flags = KP_TUNABLE_WORKGROUP,
                                .doc = "work-items per problem"};
    const kp_kernel_desc desc = {.struct_size = sizeof desc,
                                 .name = name,
                                 .summary = "Levenberg-Marquardt, one work-group per problem",
                                 .params = has_data(c) ? all : all + 1,
                                 .n_params = has_data(c) ? L_COUNT : L_COUNT - 1,
                                 .tunables = &wg,
                                 .n_tunables = 1,
                                 .source = c->source,
                                 .source_name = "solve-lm.cl",
                                 .entry = "solve_lm",
                                 .check = check,
                                 .enqueue = enqueue,
                                 .reference = reference,
                                 .sample = sample,
                                 .cost = cost,
                                 .tolerance = tolerance,
                                 .verify_sizes = verify_sizes,
                                 .bench_sizes = bench_sizes,
                                 .user = c,
                                 .supported = kp__solve_supported};
    kp_lm *lm = calloc(1, sizeof *lm);
    if (!lm)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_lm_create: out of host memory");
    lm->rt = rt;
    lm->compiled = c;
    lm->precision = prec;
    if ((st = kp__solve_register(rt, &desc, &lm->kernel)) != KP_OK) {
        free(lm);
        return st;
    }
    *out = lm;
    return KP_OK;
}

kp_status kp_lm_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision, kp_lm **out)
{
    return kp__solve_report(rt, create_lm(rt, g, precision, out));
}

void kp_lm_destroy(kp_lm *lm)
{
    free(lm);
}

kp_kernel *kp_lm_kernel(const kp_lm *lm)
{
    return lm ? lm->kernel : NULL;
}

kp_precision kp_lm_precision(const kp_lm *lm)
{
    return lm ? lm->precision : KP_PRECISION_AUTO;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Host doubles into a device buffer of the solver's precision (converted when f32). */
static kp_status upload(kp_runtime *rt, kp_buffer **buf, const double *src, size_t n, int f32)
{
    kp_status st = kp_buffer_create(rt, (n ? n : 1) * (f32 ? 4 : 8), buf);
    if (st != KP_OK || n == 0)
        return st;
    if (!f32)
        return kp_buffer_write(rt, *buf, 0, n * 8, src);
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return KP_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        tmp[i] = (float)src[i];
    st = kp_buffer_write(rt, *buf, 0, n * 4, tmp);
    free(tmp);
    return st;
}

static kp_status download(kp_runtime *rt, kp_buffer *buf, double *dst, size_t n, int f32)
{
    if (!dst || n == 0)
        return KP_OK;
    if (!f32)
        return kp_buffer_read(rt, buf, 0, n * 8, dst);
    float *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return KP_ERR_OUT_OF_MEMORY;
    kp_status st = kp_buffer_read(rt, buf, 0, n * 4, tmp);
    for (size_t i = 0; st == KP_OK && i < n; i++)
        dst[i] = tmp[i];
    free(tmp);
    return st;
}

static kp_status run_lm(kp_lm *lm, const kp_lm_options *opt, kp_lm_batch *b)
{
    if (!lm)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_lm_solve: NULL solver");
    const kp_expr_graph *g = lm->compiled->graph;
    kp_status st = kp__lm_check(g, opt, b, "kp_lm_solve");
    if (st != KP_OK)
        return st;
    const kp_lm_options o = opt ? *opt : kp_lm_options_default();
    const size_t B = b->n_problems, n = (size_t)b->rows[B], S = g->n_params, D = g->n_data;
    const int f32 = lm->precision == KP_PRECISION_F32;
    const kp_dtype dt = f32 ? KP_F32 : KP_F64;
    if (B == 0)
        return KP_OK;
    kp_runtime *rt = lm->rt;
    kp_buffer *bd = NULL, *br = NULL, *bx = NULL, *bc = NULL, *bi = NULL, *bs = NULL;
    const double t0 = now();
    if (D)
        st = upload(rt, &bd, b->data, n * D, f32);
    if (st == KP_OK && (st = kp_buffer_create(rt, (B + 1) * 4, &br)) == KP_OK)
        st = kp_buffer_write(rt, br, 0, (B + 1) * 4, b->rows);
    if (st == KP_OK)
        st = upload(rt, &bx, b->x, B * S, f32);
    if (st == KP_OK)
        st = kp_buffer_create(rt, B * (f32 ? 4 : 8), &bc);
    if (st == KP_OK)
        st = kp_buffer_create(rt, B * 4, &bi);
    if (st == KP_OK)
        st = kp_buffer_create(rt, B * 4, &bs);
    if (st == KP_OK)
        st = kp_finish(rt);
    const double t1 = now();
    kp_arg args[L_COUNT];
    size_t na = 0;
    if (D)
        args[na++] = kp_arg_tensor("data", kp_tensor_2d(bd, dt, (int64_t)n, (int64_t)D));
    args[na++] = kp_arg_tensor("rows", kp_tensor_1d(br, KP_I32, (int64_t)B + 1));
    args[na++] = kp_arg_tensor("x", kp_tensor_2d(bx, dt, (int64_t)B, (int64_t)S));
    args[na++] = kp_arg_tensor("cost", kp_tensor_1d(bc, dt, (int64_t)B));
    args[na++] = kp_arg_tensor("iterations", kp_tensor_1d(bi, KP_I32, (int64_t)B));
    args[na++] = kp_arg_tensor("status", kp_tensor_1d(bs, KP_I32, (int64_t)B));
    args[na++] = kp_arg_int("instances", (int64_t)n);
    args[na++] = kp_arg_int("max_iterations", o.max_iterations);
    args[na++] = kp_arg_float("gradient_tolerance", o.gradient_tolerance);
    args[na++] = kp_arg_float("step_tolerance", o.step_tolerance);
    args[na++] = kp_arg_float("function_tolerance", o.function_tolerance);
    args[na++] = kp_arg_float("initial_damping", o.initial_damping);
    args[na++] = kp_arg_float("min_diagonal", o.min_diagonal);
    args[na++] = kp_arg_int("loss", o.loss);
    args[na++] = kp_arg_float("loss_scale", o.loss_scale);
    if (st == KP_OK)
        st = kp_kernel_launch(rt, lm->kernel, args, na, NULL);
    if (st == KP_OK)
        st = kp_finish(rt);
    const double t2 = now();
    if (st == KP_OK)
        st = download(rt, bx, b->x, B * S, f32);
    if (st == KP_OK)
        st = download(rt, bc, b->cost, B, f32);
    if (st == KP_OK && b->iterations)
        st = kp_buffer_read(rt, bi, 0, B * 4, b->iterations);
    if (st == KP_OK && b->status)
        st = kp_buffer_read(rt, bs, 0, B * 4, b->status);
    b->seconds[0] = t1 - t0;
    b->seconds[1] = t2 - t1;
    b->seconds[2] = now() - t2;
    kp_buffer *bufs[] = {bd, br, bx, bc, bi, bs};
    for (int i = 0; i < 6; i++)
        kp_buffer_destroy(rt, bufs[i]);
    if (st == KP_ERR_OUT_OF_MEMORY && !*kp_last_error(rt))
        return kp__solve_fail(st, "kp_lm_solve: out of host memory");
    return st == KP_OK ? KP_OK : kp__solve_fail(st, "kp_lm_solve: %s", kp_last_error(rt));
}

kp_status kp_lm_solve(kp_lm *lm, const kp_lm_options *opt, kp_lm_batch *b)
{
    return kp__solve_report(lm ? lm->rt : NULL, run_lm(lm, opt, b));
}
