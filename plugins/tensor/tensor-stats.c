/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.var, std and logsumexp over a set of axes (one map-reduce launch each, Welford's and
 * the rescaled running sum as mergeable combines), and the backward of var, std, logsumexp, max
 * and min: a few map-reduce launches with per-output scratch between them, each in an order
 * fixed by the shapes, so the bits repeat on every run and at every work-group size. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

/* Per-output scratch of the backward launches (the chunked route holds slots 0 .. 2). */
enum { SLOT_STAT = 8, SLOT_GRAD = 9 };

typedef enum { ST_VAR, ST_STD, ST_LSE, ST_MAX, ST_MIN } stat_kind;

/* One kernel: what it computes, whether it is a backward, and where its optional operands sit
 * in its parameters (-1: none). */
typedef struct stat {
    const char *name, *summary;
    stat_kind kind;
    int back;
    int y_at, corr_at;
} stat;

/* ---- parameters ---- */

#define AXES_PARAM(doc_text)                                                                       \
    {                                                                                              \
        .name = "axes", .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN,                           \
        .flags = KP_PARAM_OPTIONAL, .int_default = -1, .doc = doc_text                             \
    }
#define CORRECTION_PARAM                                                                           \
    {                                                                                              \
        .name = "correction", .kind = KP_ARG_KIND_FLOAT, .access = KP_ACCESS_IN,                   \
        .flags = KP_PARAM_OPTIONAL, .float_default = 1.0,                                          \
        .doc = "the divisor is max(0, N - correction): 1 (default) unbiased, 0 the population's, " \
               "as PyTorch's"                                                                      \
    }
#define TENSOR_PARAM_OF(n, acc, dt, text)                                                          \
    {                                                                                              \
        .name = n, .kind = KP_ARG_KIND_TENSOR, .access = acc, .dtypes = dt,                        \
        .flags = KP_PARAM_NEGATIVE_STRIDES, .doc = text                                            \
    }
#define TENSOR_PARAM(n, acc, text) TENSOR_PARAM_OF(n, acc, KP_DT(KP_F32), text)

enum { F_X, F_Y, F_AXES, F_CORR };
static const kp_param_desc fwd_params[] = {
    [F_X] = TENSOR_PARAM_OF("x", KP_ACCESS_IN, TENSOR_FLOATS, "any shape, any strides"),
    [F_Y] = TENSOR_PARAM_OF("y", KP_ACCESS_OUT, TENSOR_FLOATS,
                            "x's shape with the reduced axes 1 (keepdim) or left out; x's dtype "
                            "or f32"),
    [F_AXES] = AXES_PARAM("bit d set: reduce x's dimension d; -1 (default): every dimension"),
    [F_CORR] = CORRECTION_PARAM,
};

/* The backward's common operands; y (the forward's output) and correction follow where the
 * kernel takes them. */
enum { B_DY, B_X, B_DX, B_AXES };
static const kp_param_desc back_params_y[] = {
    [B_DY] = TENSOR_PARAM("dy", KP_ACCESS_IN, "the gradient of y: y's shape"),
    [B_X] = TENSOR_PARAM("x", KP_ACCESS_IN, "the forward's input"),
    [B_DX] = TENSOR_PARAM("dx", KP_ACCESS_OUT, "x's shape"),
    [B_AXES] = AXES_PARAM("the forward's axes"),
    TENSOR_PARAM("y", KP_ACCESS_IN, "the forward's output (keepdim or not, as dy)"),
    CORRECTION_PARAM,
};
static const kp_param_desc back_params_var[] = {
    [B_DY] = TENSOR_PARAM("dy", KP_ACCESS_IN, "the gradient of y: y's shape"),
    [B_X] = TENSOR_PARAM("x", KP_ACCESS_IN, "the forward's input"),
    [B_DX] = TENSOR_PARAM("dx", KP_ACCESS_OUT, "x's shape"),
    [B_AXES] = AXES_PARAM("the forward's axes"),
    CORRECTION_PARAM,
};

static const stat stats[] = {
    {"var", "y = the variance of x over `axes`: the squared deviations / max(0, N - correction)",
     ST_VAR, 0, -1, F_CORR},
    {"std", "y = the standard deviation of x over `axes`: sqrt(var)", ST_STD, 0, -1, F_CORR},
    {"logsumexp", "y = log(sum(exp(x))) over `axes`, stable (the max taken out)", ST_LSE, 0, -1,
     -1},
    {"var_backward", "dx = dy 2 (x - mean) / (N - correction)", ST_VAR, 1, -1, 4},
    {"std_backward", "dx = dy (x - mean) / ((N - correction) y); 0 where y is 0", ST_STD, 1, 4, 5},
    {"logsumexp_backward", "dx = dy exp(x - y)", ST_LSE, 1, 4, -1},
    {"max_backward", "dx = dy / ties where x is the max y (its ties share it evenly), else 0",
     ST_MAX, 1, 4, -1},
    {"min_backward", "dx = dy / ties where x is the min y (its ties share it evenly), else 0",
     ST_MIN, 1, 4, -1},
};
#define N_STATS (sizeof stats / sizeof stats[0])

static const stat *stat_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

static int comb_of(stat_kind kind)
{
    return kind == ST_VAR ? TC_VAR : kind == ST_STD ? TC_STD : TC_LSE;
}

/* var's and std's divisor, max(0, N - correction), as PyTorch's: 0 makes the variance inf, or
 * NaN where every term is equal. */
static double divisor(int64_t terms, double correction)
{
    const double d = (double)terms - correction;
    return d > 0.0 ? d : 0.0;
}

/* ---- forward ---- */

/* The reduction's space over x's dimensions and y's keepdim view in it. */
static kp_status fwd_space(kp_launch *l, const kp_call *call, tensor_space *s, kp_tensor *y,
                           int64_t *terms)
{
    const stat *r = stat_of(l);
    const kp_tensor *x = &call->args[F_X].tensor, *yt = &call->args[F_Y].tensor;
    /* As PyTorch: the result in x's dtype, or f32; f32 inside. */
    if (yt->dtype != KP_F32 && yt->dtype != x->dtype)
        return tensor_host->fail(
            l, KP_ERR_INVALID_ARG, "y: dtype %s, but the %s of %s x is %s or f32",
            kp_dtype_name((kp_dtype)yt->dtype), r->name, kp_dtype_name((kp_dtype)x->dtype),
            kp_dtype_name((kp_dtype)x->dtype));
    if (r->corr_at >= 0 && !isfinite(call->args[r->corr_at].f))
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "correction: %g is not finite",
                                 call->args[r->corr_at].f);
    kp_status st =
        tensor_keepdim_view(l, x, &call->args[F_Y].tensor, "y", call->args[F_AXES].i, y, terms);
    const kp_tensor *in[1] = {x};
    static const char *const names[1] = {"x"};
    if (st == KP_OK)
        st = tensor_space_make(l, x->rank, x->shape, y, "y", in, names, 1, s);
    if (st == KP_OK && *terms == 0)
        st = tensor_host->fail(l, KP_ERR_INVALID_ARG,
                               "x: reducing an empty set of elements has no %s", r->name);
    return st;
}

static double fwd_post(const kp_call *call, const stat *s, int64_t terms)
{
    return s->corr_at >= 0 ? divisor(terms, call->args[s->corr_at].f) : 1.0;
}

static kp_status fwd_check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    return fwd_space(l, call, &s, &y, &terms);
}

static kp_status fwd_enqueue(const kp_call *call, kp_launch *l)
{
    const stat *r = stat_of(l);
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    kp_status st = fwd_space(l, call, &s, &y, &terms);
    const kp_tensor *in[1] = {&call->args[F_X].tensor};
    return st == KP_OK ? tensor_space_enqueue(l, &s, &y, in, TM_COPY, comb_of(r->kind), 0.0,
                                              fwd_post(call, r, terms))
                       : st;
}

static kp_status fwd_reference(const kp_call *call, kp_launch *l)
{
    const stat *r = stat_of(l);
    tensor_space s;
    kp_tensor y;
    int64_t terms;
    kp_status st = fwd_space(l, call, &s, &y, &terms);
    if (st != KP_OK)
        return st;
    const void *in[1] = {call->args[F_X].host};
    tensor_space_reference(&s, call->args[F_Y].host, call->args[F_Y].tensor.dtype, in, TM_COPY,
                           comb_of(r->kind), 0.0, fwd_post(call, r, terms));
    return KP_OK;
}

/* ---- backward ---- */

/* A backward call's operands: dy's and y's keepdim views over x's dimensions, the terms of each
 * output element, and the per-output shape (x's with the reduced axes 1). */
typedef struct back_call {
    const kp_tensor *x, *dx;
    kp_tensor dy, y, kept;
    int64_t terms;
    double correction;
} back_call;

static kp_status back_layout(kp_launch *l, const kp_call *call, back_call *b)
{
    const stat *r = stat_of(l);
    b->x = &call->args[B_X].tensor;
    b->dx = &call->args[B_DX].tensor;
    b->correction = r->corr_at >= 0 ? call->args[r->corr_at].f : 0.0;
    if (!isfinite(b->correction))
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "correction: %g is not finite",
                                 b->correction);
    kp_status st = tensor_host->check_shape(l, "x", b->x, b->dx->rank, b->dx->shape, NULL);
    const int64_t axes = call->args[B_AXES].i;
    if (st == KP_OK)
        st = tensor_keepdim_view(l, b->dx, &call->args[B_DY].tensor, "dy", axes, &b->dy, &b->terms);
    if (st == KP_OK && r->y_at >= 0) {
        int64_t terms;
        st = tensor_keepdim_view(l, b->dx, &call->args[r->y_at].tensor, "y", axes, &b->y, &terms);
    }
    /* Contiguous over x's dimensions, the reduced ones of extent 1 (and stride 0, so that x's
     * index finds its output element). */
    memset(&b->kept, 0, sizeof b->kept);
    b->kept.dtype = KP_F32;
    b->kept.rank = b->dx->rank;
    int64_t stride = 1;
    for (int d = b->dx->rank - 1; st == KP_OK && d >= 0; d--) {
        const int red = axes == -1 || ((axes >> d) & 1);
        b->kept.shape[d] = red ? 1 : b->dx->shape[d];
        b->kept.strides[d] = red ? 0 : stride;
        stride *= b->kept.shape[d];
    }
    return st;
}

static kp_status back_check(const kp_call *call, kp_launch *l)
{
    back_call b;
    return back_layout(l, call, &b);
}

/* One launch: `map` over `full`-shaped operands into out, terms summed where out is reduced.
 * The operands' shapes were checked, so the names only label a failure to lay them out. */
static kp_status launch(kp_launch *l, const kp_tensor *full, const kp_tensor *out,
                        const char *out_name, const kp_tensor *const *in, int n_in, int map,
                        double alpha, double post)
{
    static const char *const names[3] = {"operand 0", "operand 1", "operand 2"};
    tensor_space s;
    kp_status st =
        tensor_space_make(l, full->rank, full->shape, out, out_name, in, names, n_in, &s);
    return st == KP_OK ? tensor_space_enqueue(l, &s, out, in, map, TC_SUM, alpha, post) : st;
}

/*
 * var: the mean into scratch, then dx = dy 2 / (N - correction) (x - mean). std: g = dy / (2 y)
 * (0 where y is 0) into scratch first, then var's with g for dy. logsumexp: dx = dy exp(x - y).
 * max, min: the ties of y into scratch, g = dy / ties in place, then dx = g where x ties y.
 */
static kp_status back_enqueue(const kp_call *call, kp_launch *l)
{
    const stat *r = stat_of(l);
    back_call b;
    kp_status st = back_layout(l, call, &b);
    if (st != KP_OK || kp_tensor_numel(b.dx) == 0)
        return st;
    if (r->kind == ST_LSE) {
        const kp_tensor *in[3] = {&b.dy, b.x, &b.y};
        return launch(l, b.dx, b.dx, "dx", in, 3, TM_D_LSE, 0.0, 1.0);
    }
    const size_t bytes = (size_t)kp_tensor_numel(&b.kept) * sizeof(float);
    kp_tensor stat_t = b.kept, grad_t = b.kept;
    st = tensor_host->scratch(l, SLOT_STAT, bytes, &stat_t.buffer);
    if (st != KP_OK)
        return st;
    if (r->kind == ST_MAX || r->kind == ST_MIN) {
        const kp_tensor *tie[2] = {b.x, &b.y}, *div[2] = {&b.dy, &stat_t};
        const kp_tensor *grad[3] = {&stat_t, b.x, &b.y};
        st = launch(l, b.x, &stat_t, "ties", tie, 2, TM_TIE, 0.0, 1.0);
        if (st == KP_OK)
            st = launch(l, &stat_t, &stat_t, "ties", div, 2, TM_DIV, 0.0, 1.0);
        return st == KP_OK ? launch(l, b.dx, b.dx, "dx", grad, 3, TM_D_EXTREME, 0.0, 1.0) : st;
    }
    const kp_tensor *g = &b.dy;
    if (r->kind == ST_STD) {
        st = tensor_host->scratch(l, SLOT_GRAD, bytes, &grad_t.buffer);
        const kp_tensor *in[2] = {&b.dy, &b.y};
        if (st == KP_OK)
            st = launch(l, &grad_t, &grad_t, "g", in, 2, TM_D_STD, 0.0, 1.0);
        g = &grad_t;
    }
    const kp_tensor *mean_in[1] = {b.x}, *in[3] = {g, b.x, &stat_t};
    if (st == KP_OK)
        st = launch(l, b.x, &stat_t, "mean", mean_in, 1, TM_COPY, 0.0, 1.0 / (double)b.terms);
    const double d = divisor(b.terms, b.correction);
    return st == KP_OK
               ? launch(l, b.dx, b.dx, "dx", in, 3, TM_D_VAR, d > 0 ? 2.0 / d : INFINITY, 1.0)
               : st;
}

/* Element i (row-major over t's shape) of x's dimensions: its offset in t. */
static int64_t offset_at(const kp_tensor *t, const int64_t *idx)
{
    int64_t o = t->offset;
    for (int d = 0; d < t->rank; d++)
        o += idx[d] * t->strides[d];
    return o;
}

/* Steps idx through shape row-major; 0 when it wraps. */
static int next_index(int rank, const int64_t *shape, int64_t *idx)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < shape[d])
            return 1;
        idx[d] = 0;
    }
    return 0;
}

/* The backward in double: each output element's mean or ties in a first pass over x, then dx. */
static kp_status back_reference(const kp_call *call, kp_launch *l)
{
    const stat *r = stat_of(l);
    back_call b;
    kp_status st = back_layout(l, call, &b);
    if (st != KP_OK || kp_tensor_numel(b.dx) == 0)
        return st;
    const float *x = call->args[B_X].host, *dy = call->args[B_DY].host;
    const float *y = r->y_at >= 0 ? call->args[r->y_at].host : NULL;
    float *dx = call->args[B_DX].host;
    const int64_t nk = kp_tensor_numel(&b.kept);
    double *acc = calloc((size_t)nk, sizeof *acc);
    if (!acc)
        return tensor_host->fail(l, KP_ERR_OUT_OF_MEMORY, "%s: reference scratch", r->name);
    int64_t idx[KP_MAX_RANK] = {0};
    const int rank = b.dx->rank;
    do {
        const int64_t k = offset_at(&b.kept, idx);
        const double v = x[offset_at(b.x, idx)];
        if (r->kind == ST_VAR || r->kind == ST_STD)
            acc[k] += v / (double)b.terms;
        else if (r->kind != ST_LSE) {
            const double m = y[offset_at(&b.y, idx)];
            acc[k] += v == m || (isnan(v) && isnan(m));
        }
    } while (next_index(rank, b.dx->shape, idx));
    const double d = divisor(b.terms, b.correction), scale = d > 0 ? 2.0 / d : INFINITY;
    do {
        const int64_t k = offset_at(&b.kept, idx);
        const double v = x[offset_at(b.x, idx)], g = dy[offset_at(&b.dy, idx)];
        const double m = y ? y[offset_at(&b.y, idx)] : 0.0;
        double out;
        if (r->kind == ST_VAR)
            out = g * scale * (v - acc[k]);
        else if (r->kind == ST_STD)
            out = (m == 0.0 ? 0.0 : g / (2.0 * m)) * scale * (v - acc[k]);
        else if (r->kind == ST_LSE)
            out = g * exp(v - m);
        else
            out = v == m || (isnan(v) && isnan(m)) ? g / acc[k] : 0.0;
        dx[offset_at(b.dx, idx)] = (float)out;
    } while (next_index(rank, b.dx->shape, idx));
    free(acc);
    return KP_OK;
}

/* ---- samples ---- */

/*
 * x [1] to a rank-0 y; [37, 53] over its rows, over its columns with keepdim, over everything;
 * [5, 7, 11, 3] over dimensions 0 and 2 (apart, so two reduced dimensions stay); a transposed x
 * over its (strided) rows; rows of 4099 (lanes and chunks take many terms each).
 */
static const char *const verify_sizes[] = {"one",   "rows", "cols",    "all", "several",
                                           "views", "long", "flipped", NULL};
/* The forward reductions check 16-bit storage too (a program each): bf16 rows into bf16, f16
 * columns into f32 (tensor_size_dtypes names them). */
static const char *const fwd_sizes[] = {"one",       "rows",         "cols", "all",
                                        "several",   "views",        "long", "flipped",
                                        "rows-bf16", "cols-f16-f32", NULL};
static const char *const bench_sizes[] = {"4096x4096/last", "4096x4096/first", NULL};

typedef struct sample_shape {
    int rank, keepdim, transposed; /* transposed 2: x reversed along both dimensions */
    int64_t x[4], axes;
} sample_shape;

static int sample_dims(const char *size, sample_shape *p)
{
    static const struct {
        const char *name;
        sample_shape s;
    } table[] = {
        {"one", {1, 0, 0, {1}, 1}},
        {"rows", {2, 0, 0, {37, 53}, 2}},
        {"cols", {2, 1, 0, {37, 53}, 1}},
        {"all", {2, 0, 0, {37, 53}, -1}},
        {"several", {4, 0, 0, {5, 7, 11, 3}, 5}},
        {"views", {2, 0, 1, {37, 53}, 2}},
        {"flipped", {2, 0, 2, {37, 53}, 2}},
        {"long", {2, 0, 0, {3, 4099}, 2}},
        {"4096x4096/last", {2, 0, 0, {4096, 4096}, 2}},
        {"4096x4096/first", {2, 0, 0, {4096, 4096}, 1}},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(size, table[i].name) == 0) {
            *p = table[i].s;
            return 1;
        }
    return 0;
}

/* y's shape: x's with the reduced axes 1 (keepdim) or left out. */
static int reduced_shape(const sample_shape *p, int64_t *y)
{
    int n = 0;
    for (int d = 0; d < p->rank; d++) {
        const int red = p->axes == -1 || ((p->axes >> d) & 1);
        if (!red)
            y[n++] = p->x[d];
        else if (p->keepdim)
            y[n++] = 1;
    }
    return n;
}

/* x sampled as p says (transposed: a [C, R] storage read as [R, C]), its view in *t. */
static kp_status sample_x(kp_sample *smp, const sample_shape *p, int32_t dtype, double lo,
                          double hi, float **data, kp_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->rank = p->rank;
    int64_t stride = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        t->shape[d] = p->x[d];
        t->strides[d] = stride;
        stride *= p->x[d];
    }
    kp_status st =
        tensor_host->sample_tensor(smp, "x", dtype, p->rank, p->x, lo, hi, (void **)data);
    if (st == KP_OK && p->transposed == 1) {
        t->strides[0] = 1;
        t->strides[1] = p->x[0];
        st = tensor_host->sample_view(smp, "x", 2, p->x, 0, t->strides);
    } else if (st == KP_OK && p->transposed == 2) {
        *t = kp_tensor_flip(kp_tensor_flip(*t, 0), 1);
        st = tensor_host->sample_view(smp, "x", 2, p->x, t->offset, t->strides);
    }
    return st;
}

static kp_status fwd_sample(kp_sample *smp, const char *size)
{
    const stat *r = tensor_host->sample_kernel_user(smp);
    sample_shape p;
    char base[32];
    int32_t dt[2];
    tensor_size_dtypes(size, base, sizeof base, dt, 2);
    if (!sample_dims(base, &p))
        return KP_ERR_NOT_FOUND;
    int64_t y[4];
    const int ry = reduced_shape(&p, y);
    float *data;
    kp_tensor xt;
    kp_status st = sample_x(smp, &p, dt[0], -2.0, 2.0, &data, &xt);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "y", dt[1], ry, y, 0.0, 0.0, NULL);
    if (st == KP_OK && p.axes != -1)
        st = tensor_host->sample_int(smp, "axes", p.axes);
    /* The population's variance on the wide rows. */
    if (st == KP_OK && r->corr_at >= 0 && strcmp(size, "long") == 0)
        st = tensor_host->sample_float(smp, "correction", 0.0);
    return st;
}

/*
 * The forward's y for a backward's sample, in double: std, logsumexp, or the extreme. Its
 * element k is the k-th output in row-major order, keepdim or not.
 */
static kp_status forward_y(stat_kind kind, const sample_shape *p, const float *x,
                           const kp_tensor *xt, float *y, double correction)
{
    kp_tensor kept = *xt;
    kept.offset = 0;
    int64_t stride = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        const int red = p->axes == -1 || ((p->axes >> d) & 1);
        kept.shape[d] = red ? 1 : p->x[d];
        kept.strides[d] = red ? 0 : stride;
        stride *= kept.shape[d];
    }
    const int64_t nk = stride;
    double *a = calloc((size_t)nk * 3, sizeof *a);
    if (!a)
        return KP_ERR_OUT_OF_MEMORY;
    for (int64_t k = 0; k < nk; k++)
        a[3 * k] = kind == ST_MAX || kind == ST_LSE ? -INFINITY : kind == ST_MIN ? INFINITY : 0.0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t idx[KP_MAX_RANK] = {0};
        do {
            double *s = a + 3 * offset_at(&kept, idx);
            const double v = x[offset_at(xt, idx)];
            if (pass == 0 && kind == ST_MAX)
                s[0] = v > s[0] ? v : s[0];
            else if (pass == 0 && kind == ST_MIN)
                s[0] = v < s[0] ? v : s[0];
            else if (pass == 0 && kind == ST_LSE)
                s[0] = v > s[0] ? v : s[0];
            else if (pass == 0)
                s[0] += v, s[2] += 1;
            else if (kind == ST_LSE)
                s[1] += exp(v - s[0]);
            else if (kind == ST_STD)
                s[1] += (v - s[0] / s[2]) * (v - s[0] / s[2]);
        } while (next_index(p->rank, p->x, idx));
    }
    for (int64_t k = 0; k < nk; k++) {
        const double *s = a + 3 * k;
        y[k] = (float)(kind == ST_LSE   ? s[0] + log(s[1])
                       : kind == ST_STD ? sqrt(s[1] / divisor((int64_t)s[2], correction))
                                        : s[0]);
    }
    free(a);
    return KP_OK;
}

static kp_status back_sample(kp_sample *smp, const char *size)
{
    const stat *r = tensor_host->sample_kernel_user(smp);
    sample_shape p;
    if (!sample_dims(size, &p))
        return KP_ERR_NOT_FOUND;
    int64_t y[4];
    const int ry = reduced_shape(&p, y);
    float *data, *yd = NULL;
    kp_tensor xt;
    kp_status st = sample_x(smp, &p, KP_F32, -2.0, 2.0, &data, &xt);
    /* The extremes' samples from eight values, so that ties are common. */
    if (st == KP_OK && (r->kind == ST_MAX || r->kind == ST_MIN)) {
        const int64_t n = kp_tensor_numel(&xt);
        for (int64_t i = 0; i < n; i++)
            data[i] = 0.5f * floorf(data[i] * 2.0f);
    }
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "dy", KP_F32, ry, y, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "dx", KP_F32, p.rank, p.x, 0.0, 0.0, NULL);
    if (st == KP_OK && r->y_at >= 0)
        st = tensor_host->sample_tensor(smp, "y", KP_F32, ry, y, 0.0, 0.0, (void **)&yd);
    double correction = 1.0;
    if (st == KP_OK && r->corr_at >= 0 && strcmp(size, "long") == 0) {
        correction = 0.0;
        st = tensor_host->sample_float(smp, "correction", correction);
    }
    if (st == KP_OK && yd)
        st = forward_y(r->kind, &p, data, &xt, yd, correction);
    return st == KP_OK && p.axes != -1 ? tensor_host->sample_int(smp, "axes", p.axes) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const stat *r = call->desc->user;
    double n = (double)kp_tensor_numel(&call->args[r->back ? B_X : F_X].tensor);
    out->flops = (r->back ? 4.0 : 3.0) * n;
    /* The backward reads x (twice where a per-output pass comes first) and writes dx. */
    out->bytes = 4 * n * (r->back ? (r->kind == ST_LSE ? 2.0 : 3.0) : 1.0);
}

/* A forward output gathers its terms' roundings, about as many as the square root of their
 * count (Welford's updates and the rescaled sums are well conditioned); a backward element is
 * a few roundings of its own and of its output's mean (dx is small where x is near it). */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    const stat *r = call->desc->user;
    double n = (double)kp_tensor_numel(&call->args[r->back ? B_X : F_X].tensor);
    double m = (double)kp_tensor_numel(&call->args[r->back ? B_DY : F_Y].tensor);
    double terms = m > 0 ? n / m : 1;
    *atol = r->back ? 1e-7 : 1e-6 * (1.0 + sqrt(terms));
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* ---- registration ---- */

static char names[N_STATS][40];
static kp_kernel_desc descs[N_STATS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Fills the descriptors once: a runtime created earlier reads them while a later runtime's
 * init runs. */
static void build(void)
{
    for (size_t i = 0; i < N_STATS; i++) {
        const stat *r = &stats[i];
        snprintf(names[i], sizeof names[i], "tensor.%s", r->name);
        const kp_param_desc *params = !r->back            ? fwd_params
                                      : r->kind == ST_VAR ? back_params_var
                                                          : back_params_y;
        const uint32_t n_params = !r->back          ? (r->corr_at >= 0 ? 4 : 3)
                                  : r->corr_at >= 0 ? (uint32_t)r->corr_at + 1
                                                    : (uint32_t)r->y_at + 1;
        kp_kernel_desc d = {
            .struct_size = sizeof(kp_kernel_desc),
            .name = names[i],
            .summary = r->summary,
            .params = params,
            .n_params = n_params,
            /* logsumexp's backward is elementwise: it never reduces. */
            .n_tunables = r->back && r->kind == ST_LSE ? 1 : 2,
            .tunables = tensor_tunables,
            .source = kp_kernel_tensor_cl,
            .source_name = "tensor.cl",
            .entry = "tensor_map_reduce",
            .check = r->back ? back_check : fwd_check,
            .enqueue = r->back ? back_enqueue : fwd_enqueue,
            .reference = r->back ? back_reference : fwd_reference,
            .sample = r->back ? back_sample : fwd_sample,
            .cost = cost,
            .verify_sizes = r->back ? verify_sizes : fwd_sizes,
            .bench_sizes = bench_sizes,
            .atol = 1e-6,
            .rtol = 1e-5,
            .tolerance = tolerance,
            .user = (void *)r,
        };
        descs[i] = d;
    }
}

kp_status tensor_register_stats(const kp_host_api *api, kp_registrar *reg)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < N_STATS; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
