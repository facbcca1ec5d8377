/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.cross_entropy (fused softmax cross-entropy with integer labels), tensor.mse and
 * tensor.bce_with_logits: a rank-0 mean loss and its gradient, the mean a fixed-order sum
 * (kernels/tensor-rows.cl). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

/* Scratch slots: the count of rows not ignored, then per-row losses or per-chunk sums. */
enum { SLOT_COUNT, SLOT_TERMS };

/* ---- cross_entropy ---- */

enum { CE_LOGITS, CE_LABELS, CE_LOSS, CE_DLOGITS, CE_LOSSES, CE_IGNORE, CE_SMOOTHING, CE_N };
static const kp_param_desc ce_params[] = {
    [CE_LOGITS] = {.name = "logits",
                   .kind = KP_ARG_KIND_TENSOR,
                   .flags = KP_PARAM_NEGATIVE_STRIDES,
                   .access = KP_ACCESS_IN,
                   .dtypes = TENSOR_FLOATS,
                   .doc = "[..., C], any strides"},
    [CE_LABELS] = {.name = "labels",
                   .kind = KP_ARG_KIND_TENSOR,
                   .flags = KP_PARAM_NEGATIVE_STRIDES,
                   .access = KP_ACCESS_IN,
                   .dtypes = KP_DT(KP_I32),
                   .doc = "[...]: each row's class, 0 .. C - 1, or ignore_index"},
    [CE_LOSS] = {.name = "loss",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = TENSOR_FLOATS,
                 .doc = "rank 0: the mean loss over the rows not ignored (NaN if none); logits' "
                        "dtype or f32"},
    [CE_DLOGITS] = {.name = "dlogits",
                    .kind = KP_ARG_KIND_TENSOR,
                    .access = KP_ACCESS_OUT,
                    .dtypes = TENSOR_FLOATS,
                    .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
                    .doc = "logits' shape: the gradient of the mean loss"},
    [CE_LOSSES] = {.name = "losses",
                   .kind = KP_ARG_KIND_TENSOR,
                   .access = KP_ACCESS_OUT,
                   .dtypes = TENSOR_FLOATS,
                   .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
                   .doc = "labels' shape: each row's loss (0 where ignored); logits' dtype or "
                          "f32"},
    [CE_IGNORE] = {.name = "ignore_index",
                   .kind = KP_ARG_KIND_INT,
                   .access = KP_ACCESS_IN,
                   .flags = KP_PARAM_OPTIONAL,
                   .int_default = -100,
                   .doc = "rows with this label count for nothing (PyTorch's default -100)"},
    [CE_SMOOTHING] = {.name = "label_smoothing",
                      .kind = KP_ARG_KIND_FLOAT,
                      .access = KP_ACCESS_IN,
                      .flags = KP_PARAM_OPTIONAL,
                      .float_default = 0.0,
                      .doc = "0 .. 1: the target is (1 - e) onehot + e / C, as PyTorch's"},
};

/* As PyTorch: a loss in its input's dtype, or f32 (the arithmetic is f32 either way). */
static kp_status loss_dtype(kp_launch *l, const char *name, const kp_tensor *t, const char *in_name,
                            const kp_tensor *in)
{
    if (t->dtype == KP_F32 || t->dtype == in->dtype)
        return KP_OK;
    const char *dt = kp_dtype_name((kp_dtype)in->dtype);
    return tensor_host->fail(l, KP_ERR_INVALID_ARG, "%s: dtype %s, but the loss of %s %s is %s%s",
                             name, kp_dtype_name((kp_dtype)t->dtype), dt, in_name, dt,
                             in->dtype == KP_F32 ? "" : " or f32");
}

/* The operands in the kernel's order, logits, labels, dlogits, losses, each absent one stood in
 * for by one of the same layout. */
static kp_status ce_layout(kp_launch *l, const kp_call *call, const kp_tensor *losses,
                           tensor_rows *r)
{
    const kp_tensor *x = &call->args[CE_LOGITS].tensor, *y = &call->args[CE_LABELS].tensor;
    const double e = call->args[CE_SMOOTHING].f;
    if (!(e >= 0.0 && e <= 1.0))
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "label_smoothing: %g is not in 0 .. 1", e);
    const int64_t ignore = call->args[CE_IGNORE].i;
    if (ignore < INT32_MIN || ignore > INT32_MAX)
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "ignore_index: %lld is not an i32",
                                 (long long)ignore);
    if (x->rank < 1)
        return tensor_host->fail(l, KP_ERR_INVALID_ARG,
                                 "logits: rank 0 has no class axis (expected [..., C])");
    kp_status st = tensor_host->check_shape(l, "labels", y, x->rank - 1, x->shape, NULL);
    if (st == KP_OK)
        st = tensor_host->check_shape(l, "loss", &call->args[CE_LOSS].tensor, 0, NULL, NULL);
    if (st == KP_OK)
        st = loss_dtype(l, "loss", &call->args[CE_LOSS].tensor, "logits", x);
    if (st == KP_OK && call->args[CE_LOSSES].present)
        st = loss_dtype(l, "losses", &call->args[CE_LOSSES].tensor, "logits", x);
    if (st == KP_OK && call->args[CE_DLOGITS].present)
        st = tensor_host->check_shape(l, "dlogits", &call->args[CE_DLOGITS].tensor, x->rank,
                                      x->shape, NULL);
    if (st == KP_OK && call->args[CE_LOSSES].present)
        st = tensor_host->check_shape(l, "losses", &call->args[CE_LOSSES].tensor, y->rank, y->shape,
                                      NULL);
    if (st != KP_OK)
        return st;
    const kp_tensor *t[4] = {
        x, y, call->args[CE_DLOGITS].present ? &call->args[CE_DLOGITS].tensor : x, losses};
    static const int with_col[4] = {1, 0, 1, 0};
    static const char *const names[4] = {"logits", "labels", "dlogits", "losses"};
    st = tensor_rows_make(l, y->rank, y->shape, x->shape[x->rank - 1], t, with_col, names, 4, r);
    if (st == KP_OK && !call->args[CE_DLOGITS].present)
        r->view[2].shape[7] = 0; /* empty: the kernel writes no gradient */
    return st;
}

static kp_status ce_check(const kp_call *call, kp_launch *l)
{
    tensor_rows r;
    return ce_layout(l, call,
                     call->args[CE_LOSSES].present ? &call->args[CE_LOSSES].tensor
                                                   : &call->args[CE_LABELS].tensor,
                     &r);
}

static kp_status ce_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[CE_LABELS].tensor;
    kp_buffer *count, *terms = NULL;
    kp_tensor losses = call->args[CE_LOSSES].tensor;
    kp_status st = tensor_host->scratch(l, SLOT_COUNT, sizeof(int32_t), &count);
    if (st == KP_OK && !call->args[CE_LOSSES].present) {
        const int64_t rows = kp_tensor_numel(y);
        st = tensor_host->scratch(
            l, SLOT_TERMS, (size_t)(rows > 0 && rows <= INT32_MAX ? rows : 1) * sizeof(float),
            &terms);
        losses = kp_tensor_nd(terms, KP_F32, y->rank, y->shape);
    }
    tensor_rows r;
    if (st == KP_OK)
        st = ce_layout(l, call, &losses, &r);
    if (st != KP_OK)
        return st;
    const int32_t ignore = (int32_t)call->args[CE_IGNORE].i;
    /* One program for the call's three launches: logits, dlogits, the per-row losses (f32 in
     * scratch when not asked for) and the loss. */
    const int32_t dt[TR_DT_N] = {
        call->args[CE_LOGITS].tensor.dtype, KP_F32,
        call->args[CE_DLOGITS].present ? call->args[CE_DLOGITS].tensor.dtype : KP_F32, losses.dtype,
        call->args[CE_LOSS].tensor.dtype};
    char options[80];
    tensor_rows_options(dt, options, sizeof options);
    const size_t red = 256;
    kp_clargs a = kp_clargs_begin(tensor_host, l, "rows_count", options);
    kp_clargs_int(&a, (int32_t)r.rows);
    kp_clargs_int(&a, tensor_rows_vec(&r, 1, 0, 1));
    kp_clargs_int(&a, r.nlead);
    kp_clargs_value(&a, sizeof r.ext, r.ext);
    kp_clargs_tensor(&a, &r.view[1], KP_MAX_RANK);
    kp_clargs_int(&a, ignore);
    kp_clargs_buffer(&a, count);
    kp_clargs_local(&a, red * sizeof(int32_t));
    st = kp_clargs_enqueue(&a, 1, &red, &red);
    if (st == KP_OK && r.rows > 0) {
        tensor_rows_grid g = tensor_rows_grid_for(l, r.rows, r.cols, 1, 2);
        a = kp_clargs_begin(tensor_host, l, "rows_cross_entropy", options);
        kp_clargs_int(&a, (int32_t)r.rows);
        kp_clargs_int(&a, (int32_t)r.cols);
        kp_clargs_int(&a, g.lanes);
        kp_clargs_int(&a, g.cached);
        const int aligned = tensor_host->tunable_index(l, TR_VW) == 4;
        kp_clargs_int(&a, tensor_rows_vec(&r, 0, 1, aligned) | tensor_rows_vec(&r, 2, 1, aligned)
                                                                   << 2);
        kp_clargs_int(&a, r.nlead);
        kp_clargs_value(&a, sizeof r.ext, r.ext);
        kp_clargs_int(&a, ignore);
        kp_clargs_float(&a, (float)call->args[CE_SMOOTHING].f);
        for (int i = 0; i < 4; i++)
            kp_clargs_tensor(&a, &r.view[i], KP_MAX_RANK);
        kp_clargs_buffer(&a, count);
        kp_clargs_local(&a, g.cache_bytes);
        kp_clargs_local(&a, g.tree_bytes);
        const size_t global = g.groups * g.local;
        st = kp_clargs_enqueue(&a, 1, &global, &g.local);
    }
    return st == KP_OK
               ? tensor_rows_mean(l, &r, 3, count, 1.0, &call->args[CE_LOSS].tensor, options)
               : st;
}

static kp_status ce_reference(const kp_call *call, kp_launch *l)
{
    tensor_rows r;
    const kp_tensor *x = &call->args[CE_LOGITS].tensor, *y = &call->args[CE_LABELS].tensor;
    kp_status st = ce_layout(l, call, y, &r);
    if (st != KP_OK)
        return st;
    const void *xh = call->args[CE_LOGITS].host;
    const int32_t *yh = call->args[CE_LABELS].host;
    void *dh = call->args[CE_DLOGITS].present ? call->args[CE_DLOGITS].host : NULL;
    void *lh = call->args[CE_LOSSES].present ? call->args[CE_LOSSES].host : NULL;
    const kp_tensor *dt = &call->args[CE_DLOGITS].tensor, *lt = &call->args[CE_LOSSES].tensor;
    const kp_dtype xd = (kp_dtype)x->dtype;
    const int64_t C = r.cols, ignore = call->args[CE_IGNORE].i;
    const int lrank = y->rank;
    const int64_t sx = x->strides[x->rank - 1], sd = dh ? dt->strides[dt->rank - 1] : 0;
    const double e = call->args[CE_SMOOTHING].f;
    int64_t count = 0;
    for (int64_t row = 0; row < r.rows; row++)
        count += yh[tensor_rows_offset(y, lrank, row)] != ignore;
    double total = 0;
    for (int64_t row = 0; row < r.rows; row++) {
        const int64_t ox = tensor_rows_offset(x, lrank, row);
        const int64_t label = yh[tensor_rows_offset(y, lrank, row)];
        const int ignored = label == ignore, bad = !ignored && (label < 0 || label >= C);
        double m = -INFINITY, s = 0, sum_x = 0;
        for (int64_t c = 0; c < C; c++) {
            double v = kp_dtype_load(xh, xd, ox + c * sx);
            m = v > m ? v : m;
            sum_x += v;
        }
        for (int64_t c = 0; c < C; c++)
            s += exp(kp_dtype_load(xh, xd, ox + c * sx) - m);
        const double xl = ignored || bad ? 0 : kp_dtype_load(xh, xd, ox + label * sx);
        const double loss = ignored ? 0 : bad ? NAN : m + log(s) - (1 - e) * xl - e / C * sum_x;
        /* The mean is the kernel's of the losses as stored (rows_mean reads them back). */
        if (lh) {
            const int64_t ol = tensor_rows_offset(lt, lrank, row);
            kp_dtype_store(lh, (kp_dtype)lt->dtype, ol, (float)loss);
            total += kp_dtype_load(lh, (kp_dtype)lt->dtype, ol);
        } else {
            total += loss;
        }
        if (!dh)
            continue;
        const int64_t od = tensor_rows_offset(dt, lrank, row);
        for (int64_t c = 0; c < C; c++) {
            double p = exp(kp_dtype_load(xh, xd, ox + c * sx) - m) / s;
            double g = (p - (c == label ? 1 - e : 0) - e / C) / (double)count;
            kp_dtype_store(dh, (kp_dtype)dt->dtype, od + c * sd,
                           (float)(ignored ? 0
                                   : bad   ? NAN
                                           : g));
        }
    }
    const kp_tensor *lo = &call->args[CE_LOSS].tensor;
    kp_dtype_store(call->args[CE_LOSS].host, (kp_dtype)lo->dtype, lo->offset,
                   (float)(total / (double)count));
    return KP_OK;
}

/* ---- mse and bce_with_logits ---- */

typedef struct pointwise {
    const char *name, *summary;
    int mode;                 /* rows_loss_partial's: 0 MSE, 1 BCE with logits */
    const char *a, *b, *grad; /* parameter names */
    double scale;             /* the gradient's factor besides 1 / n */
} pointwise;

static const pointwise pointwise_losses[] = {
    {"mse", "loss = mean((a - b)^2) over a and b broadcast; da = 2 (a - b) / n", 0, "a", "b", "da",
     2.0},
    {"bce_with_logits",
     "loss = mean(max(x, 0) - x t + log(1 + exp(-|x|))); dlogits = (sigmoid(x) - t) / n", 1,
     "logits", "targets", "dlogits", 1.0},
};

enum { PW_A, PW_B, PW_LOSS, PW_GRAD, PW_N };
static const kp_param_desc mse_params[] = {
    [PW_A] = {.name = "a",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "the prediction; broadcasts with b"},
    [PW_B] = {.name = "b",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "the target; broadcasts with a"},
    [PW_LOSS] = {.name = "loss",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = TENSOR_FLOATS,
                 .doc = "rank 0: the mean over the broadcast shape; a's dtype or f32"},
    [PW_GRAD] = {.name = "da",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = TENSOR_FLOATS,
                 .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
                 .doc = "a's shape, which must be the broadcast shape: the gradient of the "
                        "loss"},
};
static const kp_param_desc bce_params[] = {
    [PW_A] = {.name = "logits",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "any shape, any strides"},
    [PW_B] = {.name = "targets",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "logits' shape: probabilities, 0 .. 1"},
    [PW_LOSS] = {.name = "loss",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = TENSOR_FLOATS,
                 .doc = "rank 0: the mean over the elements; logits' dtype or f32"},
    [PW_GRAD] = {.name = "dlogits",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = TENSOR_FLOATS,
                 .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
                 .doc = "logits' shape: the gradient of the loss"},
};

/* A pointwise loss's layout: the broadcast shape and its elements. */
typedef struct pw_layout {
    int rank;
    int64_t full[KP_MAX_RANK];
    int64_t n;
    tensor_rows r; /* the broadcast shape (a contiguous stand-in), a, b, the gradient */
} pw_layout;

static kp_status pw_make(kp_launch *l, const kp_call *call, const pointwise *pw, pw_layout *p)
{
    const kp_tensor *a = &call->args[PW_A].tensor, *b = &call->args[PW_B].tensor;
    const kp_tensor *grad = call->args[PW_GRAD].present ? &call->args[PW_GRAD].tensor : NULL;
    const kp_tensor *in[2] = {a, b};
    const char *names2[2] = {pw->a, pw->b};
    kp_status st = pw->mode == 0 ? tensor_broadcast_shape(l, in, names2, 2, &p->rank, p->full)
                                 : tensor_host->check_shape(l, pw->b, b, a->rank, a->shape, NULL);
    if (pw->mode != 0) {
        p->rank = a->rank;
        memcpy(p->full, a->shape, sizeof a->shape);
    }
    if (st == KP_OK)
        st = tensor_host->check_shape(l, "loss", &call->args[PW_LOSS].tensor, 0, NULL, NULL);
    if (st == KP_OK)
        st = loss_dtype(l, "loss", &call->args[PW_LOSS].tensor, pw->a, a);
    if (st == KP_OK && grad)
        st = tensor_host->check_shape(l, pw->grad, grad, a->rank, a->shape, NULL);
    if (st != KP_OK)
        return st;
    /* a's gradient where a is broadcast would be a sum over the broadcast axes, which this pass
     * does not make; a prediction is rarely broadcast. */
    int broadcast = a->rank != p->rank;
    for (int d = 0; !broadcast && d < p->rank; d++)
        broadcast = a->shape[d] != p->full[d];
    char sa[160], sf[160];
    const kp_tensor full = kp_tensor_nd(a->buffer, KP_F32, p->rank, p->full);
    p->n = kp_tensor_numel(&full);
    if (grad && broadcast)
        return tensor_host->fail(l, KP_ERR_UNSUPPORTED,
                                 "%s: %s %s is broadcast to %s; its gradient is only given for "
                                 "%s of the broadcast shape",
                                 pw->grad, pw->a, tensor_shape_str(a, sa, sizeof sa),
                                 tensor_shape_str(&full, sf, sizeof sf), pw->a);
    const kp_tensor *t[4] = {&full, a, b, grad ? grad : a};
    static const int with_col[4] = {0, 0, 0, 0};
    char full_name[64];
    snprintf(full_name, sizeof full_name, "%s and %s broadcast", pw->a, pw->b);
    const char *names[4] = {full_name, pw->a, pw->b, pw->grad};
    st = tensor_rows_make(l, p->rank, p->full, 1, t, with_col, names, 4, &p->r);
    if (st == KP_OK && !grad)
        p->r.view[3].shape[7] = 0; /* empty: the kernel writes no gradient */
    return st;
}

/* The chunks the n elements are summed in: fixed by n alone, so is the order of the sum. */
static int64_t pw_chunks(int64_t n)
{
    int64_t g = (n + 4095) / 4096;
    return g < 1024 ? g : 1024;
}

static const pointwise *pw_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

static kp_status pw_check(const kp_call *call, kp_launch *l)
{
    pw_layout p;
    return pw_make(l, call, pw_of(l), &p);
}

static kp_status pw_enqueue(const kp_call *call, kp_launch *l)
{
    const pointwise *pw = pw_of(l);
    pw_layout p;
    kp_status st = pw_make(l, call, pw, &p);
    const int64_t groups = pw_chunks(p.n);
    kp_buffer *partial = NULL;
    if (st == KP_OK)
        st = tensor_host->scratch(l, SLOT_TERMS, (size_t)(groups ? groups : 1) * sizeof(float),
                                  &partial);
    if (st != KP_OK)
        return st;
    const double gscale = pw->scale / (double)p.n;
    /* One program for both launches: a, b, the gradient and the loss (the partial sums f32). */
    const int32_t dt[TR_DT_N] = {call->args[PW_A].tensor.dtype, call->args[PW_B].tensor.dtype,
                                 call->args[PW_GRAD].present ? call->args[PW_GRAD].tensor.dtype
                                                             : KP_F32,
                                 KP_F32, call->args[PW_LOSS].tensor.dtype};
    char options[80];
    tensor_rows_options(dt, options, sizeof options);
    if (groups > 0) {
        /* A multiple of every VW, so the chunks do not depend on it. */
        const int64_t chunk = ((p.n + groups - 1) / groups + 15) / 16 * 16;
        const int64_t vw = tensor_host->tunable_index(l, TR_VW);
        int vec = p.n % vw == 0;
        for (int i = 1; i < (call->args[PW_GRAD].present ? 4 : 3); i++)
            vec &= tensor_rows_vec(&p.r, i, 0, vw == 4);
        const size_t local = 256, global = (size_t)groups * local;
        kp_clargs a = kp_clargs_begin(tensor_host, l, "rows_loss_partial", options);
        kp_clargs_int(&a, (int32_t)p.n);
        kp_clargs_int(&a, (int32_t)chunk);
        kp_clargs_int(&a, pw->mode);
        kp_clargs_int(&a, vec);
        kp_clargs_int(&a, p.r.nlead);
        kp_clargs_value(&a, sizeof p.r.ext, p.r.ext);
        for (int i = 1; i < 4; i++)
            kp_clargs_tensor(&a, &p.r.view[i], KP_MAX_RANK);
        kp_clargs_float(&a, (float)gscale);
        kp_clargs_buffer(&a, partial);
        kp_clargs_local(&a, local * sizeof(float));
        st = kp_clargs_enqueue(&a, 1, &global, &local);
    }
    if (st != KP_OK)
        return st;
    const kp_tensor pt = kp_tensor_1d(partial, KP_F32, groups);
    const kp_tensor *t[1] = {&pt};
    static const int with_col[1] = {0};
    static const char *const names[1] = {"partial sums"};
    tensor_rows sums;
    st = tensor_rows_make(l, 1, &groups, 1, t, with_col, names, 1, &sums);
    return st == KP_OK ? tensor_rows_mean(l, &sums, 0, NULL, (double)p.n,
                                          &call->args[PW_LOSS].tensor, options)
                       : st;
}

/* Offset of element i (row-major over `full`) in t, which broadcasts to full. */
static int64_t broadcast_offset(const kp_tensor *t, int rank, const int64_t *full, int64_t i)
{
    int64_t off = t->offset;
    for (int d = rank - 1; d >= 0; d--) {
        const int64_t c = i % full[d];
        i /= full[d];
        const int td = d - (rank - t->rank);
        if (td >= 0 && t->shape[td] != 1)
            off += c * t->strides[td];
    }
    return off;
}

static kp_status pw_reference(const kp_call *call, kp_launch *l)
{
    const pointwise *pw = pw_of(l);
    pw_layout p;
    kp_status st = pw_make(l, call, pw, &p);
    if (st != KP_OK)
        return st;
    const kp_tensor *a = &call->args[PW_A].tensor, *b = &call->args[PW_B].tensor;
    const void *ah = call->args[PW_A].host, *bh = call->args[PW_B].host;
    const kp_dtype ad = (kp_dtype)a->dtype, bd = (kp_dtype)b->dtype;
    double sum = 0;
    for (int64_t i = 0; i < p.n; i++) {
        const double x = kp_dtype_load(ah, ad, broadcast_offset(a, p.rank, p.full, i));
        const double t = kp_dtype_load(bh, bd, broadcast_offset(b, p.rank, p.full, i));
        sum += pw->mode == 0 ? (x - t) * (x - t) : (x > 0 ? x : 0) - x * t + log1p(exp(-fabs(x)));
    }
    const kp_tensor *lo = &call->args[PW_LOSS].tensor;
    kp_dtype_store(call->args[PW_LOSS].host, (kp_dtype)lo->dtype, lo->offset,
                   (float)(sum / (double)p.n));
    if (!call->args[PW_GRAD].present)
        return KP_OK;
    const kp_tensor *g = &call->args[PW_GRAD].tensor;
    void *gh = call->args[PW_GRAD].host;
    const double scale = pw->scale / (double)p.n;
    for (int64_t i = 0; i < p.n; i++) {
        const double x = kp_dtype_load(ah, ad, broadcast_offset(a, p.rank, p.full, i));
        const double t = kp_dtype_load(bh, bd, broadcast_offset(b, p.rank, p.full, i));
        kp_dtype_store(gh, (kp_dtype)g->dtype, broadcast_offset(g, p.rank, p.full, i),
                       (float)(scale * (pw->mode == 0 ? x - t : 1 / (1 + exp(-x)) - t)));
    }
    return KP_OK;
}

/* ---- samples ---- */

/* Cross-entropy: one row of one class; primes [37, 53] with some rows ignored; label smoothing
 * with per-row losses and a valid class as ignore_index; the forward alone; a wide prime row;
 * logits [5, 3, 7] permuted from [3, 5, 7] with labels [5, 3] transposed; transposed logits
 * (the class axis strided) with gapped dlogits and strided labels and losses; rows of 60 classes
 * read and written as whole vectors (vec; the last block of 16 element by element); logits
 * reversed along both axes, labels, dlogits' rows and the losses reversed (flipped: negative
 * strides). 16-bit storage (tensor_size_dtypes names it, in the parameters' order; labels stay
 * i32): every tensor bf16 with label smoothing and per-row losses; bf16 logits and dlogits in
 * whole vectors with an f32 loss (the program of softmax's bf16 samples: the row kernels share
 * one program per dtype combination). */
static const char *const ce_verify_sizes[] = {"one",
                                              "prime",
                                              "smooth",
                                              "forward",
                                              "wide",
                                              "lead",
                                              "views",
                                              "vec",
                                              "flipped",
                                              "smooth-bf16",
                                              "vec-bf16-i32-f32-bf16",
                                              NULL};
static const char *const ce_bench_sizes[] = {"8192x1000", "1024x1000", "8192x1000-bf16", NULL};

static kp_status ce_sample(kp_sample *smp, const char *full_size)
{
    char size[32];
    int32_t dt[CE_LOSSES + 1];
    tensor_size_dtypes(full_size, size, sizeof size, dt, CE_LOSSES + 1);
    int rank = 2;
    int64_t shape[3] = {37, 53, 0};
    if (strcmp(size, "one") == 0) {
        shape[0] = shape[1] = 1;
    } else if (strcmp(size, "wide") == 0) {
        shape[0] = 3, shape[1] = 4099;
    } else if (strcmp(size, "lead") == 0) {
        rank = 3, shape[0] = 5, shape[1] = 3, shape[2] = 7;
    } else if (strcmp(size, "vec") == 0) {
        shape[1] = 60;
    } else if (strcmp(size, "8192x1000") == 0) {
        shape[0] = 8192, shape[1] = 1000;
    } else if (strcmp(size, "1024x1000") == 0) {
        shape[0] = 1024, shape[1] = 1000;
    } else if (strcmp(size, "prime") != 0 && strcmp(size, "smooth") != 0 &&
               strcmp(size, "forward") != 0 && strcmp(size, "views") != 0 &&
               strcmp(size, "flipped") != 0) {
        return KP_ERR_NOT_FOUND;
    }
    const int views = strcmp(size, "views") == 0, lead = strcmp(size, "lead") == 0;
    const int flipped = strcmp(size, "flipped") == 0;
    const int smooth = strcmp(size, "smooth") == 0;
    const int64_t C = shape[rank - 1];
    kp_status st =
        tensor_host->sample_tensor(smp, "logits", dt[CE_LOGITS], rank, shape, -4.0, 4.0, NULL);
    if (st == KP_OK && views) {
        const int64_t strides[2] = {1, shape[0]};
        st = tensor_host->sample_view(smp, "logits", 2, shape, 0, strides);
    } else if (st == KP_OK && lead) {
        const int64_t strides[3] = {shape[2], shape[0] * shape[2], 1};
        st = tensor_host->sample_view(smp, "logits", 3, shape, 0, strides);
    } else if (st == KP_OK && flipped) {
        st = tensor_sample_flip(smp, "logits", rank, shape, 3);
    }
    /* Labels: every class, and about one row in six ignored (-100, or class 0 with smooth);
     * views: every other element from the second; lead: [5, 3] transposed from [3, 5]. */
    int64_t rows = 1;
    for (int d = 0; d < rank - 1; d++)
        rows *= shape[d];
    const int64_t label_storage = views ? 2 * rows : rows;
    int32_t *labels = NULL;
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "labels", KP_I32, views ? 1 : rank - 1,
                                        views ? &label_storage : shape, 0, (double)C,
                                        (void **)&labels);
    for (int64_t i = 0; st == KP_OK && i < label_storage; i++)
        if (tensor_host->sample_random(smp) % 6 == 0 && C > 1)
            labels[i] = smooth ? 0 : -100;
    if (st == KP_OK && views) {
        const int64_t stride = 2;
        st = tensor_host->sample_view(smp, "labels", 1, shape, 1, &stride);
    } else if (st == KP_OK && lead) {
        const int64_t strides[2] = {1, shape[0]};
        st = tensor_host->sample_view(smp, "labels", 2, shape, 0, strides);
    } else if (st == KP_OK && flipped) {
        st = tensor_sample_flip(smp, "labels", rank - 1, shape, 1);
    }
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "loss", dt[CE_LOSS], 0, NULL, 0.0, 0.0, NULL);
    if (st == KP_OK && strcmp(size, "forward") != 0) {
        if (views) {
            const int64_t storage = 2 + shape[0] * (shape[1] + 3), strides[2] = {shape[1] + 3, 1};
            st = tensor_host->sample_tensor(smp, "dlogits", dt[CE_DLOGITS], 1, &storage, 0.0, 0.0,
                                            NULL);
            if (st == KP_OK)
                st = tensor_host->sample_view(smp, "dlogits", 2, shape, 2, strides);
        } else {
            st = tensor_host->sample_tensor(smp, "dlogits", dt[CE_DLOGITS], rank, shape, 0.0, 0.0,
                                            NULL);
        }
        if (st == KP_OK && flipped)
            st = tensor_sample_flip(smp, "dlogits", rank, shape, 1);
    }
    if (st == KP_OK && (smooth || views || flipped || strcmp(size, "forward") == 0)) {
        if (views) {
            const int64_t storage = 3 * shape[0], stride = 3;
            st = tensor_host->sample_tensor(smp, "losses", dt[CE_LOSSES], 1, &storage, 0.0, 0.0,
                                            NULL);
            if (st == KP_OK)
                st = tensor_host->sample_view(smp, "losses", 1, shape, 0, &stride);
        } else {
            st = tensor_host->sample_tensor(smp, "losses", dt[CE_LOSSES], rank - 1, shape, 0.0, 0.0,
                                            NULL);
        }
        if (st == KP_OK && flipped)
            st = tensor_sample_flip(smp, "losses", rank - 1, shape, 1);
    }
    if (st == KP_OK && smooth)
        st = tensor_host->sample_int(smp, "ignore_index", 0);
    if (st == KP_OK && (smooth || views))
        st = tensor_host->sample_float(smp, "label_smoothing", 0.1);
    return st;
}

static void ce_cost(const kp_call *call, kp_cost *out)
{
    out->flops = 6 * (double)kp_tensor_numel(&call->args[CE_LOGITS].tensor);
    out->bytes = tensor_dtype_bytes(call);
}

/* The gradient's elements are of the order of 1 / rows: its absolute tolerance scales so. */
static void ce_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *x = &call->args[CE_LOGITS].tensor;
    const double rows = (double)kp_tensor_numel(&call->args[CE_LABELS].tensor);
    const double C = (double)x->shape[x->rank - 1];
    *atol = 1e-6 * (2 + log2(C > 1 ? C : 1)) / (rows > 1 ? rows : 1);
    *rtol = 2e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* Pointwise losses: one element; primes [97, 131] (four chunks); a broadcast operand (MSE: b
 * [131] against a [97, 131], and a [97, 1] against b [97, 131] without da; BCE, whose shapes
 * match: a transposed target); transposed a with a gapped gradient; the loss alone; [97, 144],
 * read and written as whole vectors (vec); a reversed along both axes, b along its rows and the
 * gradient along its columns (flipped: negative strides). 16-bit storage, in the programs of
 * softmax's and softmax_backward's 16-bit samples: MSE's a and da bf16 against an f32 b
 * broadcast, BCE's logits, targets and gradient f16 in whole vectors (both with an f32 loss). */
static const char *const mse_verify_sizes[] = {"one",     "prime",   "bcast",
                                               "bcast_a", "views",   "forward",
                                               "vec",     "flipped", "bcast-bf16-f32-f32-bf16",
                                               NULL};
static const char *const bce_verify_sizes[] = {
    "one", "prime", "bcast", "views", "forward", "vec", "flipped", "vec-f16-f16-f32-f16", NULL};
static const char *const pw_bench_sizes[] = {"16M", "1M", NULL};

static kp_status pw_sample(kp_sample *smp, const char *full_size)
{
    const pointwise *pw = tensor_host->sample_kernel_user(smp);
    char size[32];
    int32_t dt[PW_N];
    tensor_size_dtypes(full_size, size, sizeof size, dt, PW_N);
    int rank = 2;
    int64_t shape[2] = {97, 131};
    if (strcmp(size, "one") == 0) {
        rank = 1, shape[0] = 1;
    } else if (strcmp(size, "16M") == 0) {
        rank = 1, shape[0] = 1 << 24;
    } else if (strcmp(size, "1M") == 0) {
        rank = 1, shape[0] = 1 << 20;
    } else if (strcmp(size, "vec") == 0) {
        shape[1] = 144;
    } else if ((strcmp(size, "bcast_a") == 0 && pw->mode != 0) ||
               (strcmp(size, "prime") != 0 && strcmp(size, "bcast") != 0 &&
                strcmp(size, "bcast_a") != 0 && strcmp(size, "views") != 0 &&
                strcmp(size, "forward") != 0 && strcmp(size, "flipped") != 0)) {
        return KP_ERR_NOT_FOUND;
    }
    const int views = strcmp(size, "views") == 0, bcast = strcmp(size, "bcast") == 0;
    const int flipped = strcmp(size, "flipped") == 0;
    const int bcast_a = strcmp(size, "bcast_a") == 0;
    const double lo = pw->mode ? -6.0 : -2.0, hi = pw->mode ? 6.0 : 2.0;
    const int64_t a_shape[2] = {shape[0], bcast_a ? 1 : shape[1]};
    kp_status st = tensor_host->sample_tensor(smp, pw->a, dt[PW_A], rank, a_shape, lo, hi, NULL);
    if (st == KP_OK && views) {
        const int64_t strides[2] = {1, shape[0]};
        st = tensor_host->sample_view(smp, pw->a, 2, shape, 0, strides);
    } else if (st == KP_OK && flipped) {
        st = tensor_sample_flip(smp, pw->a, rank, shape, 3);
    }
    /* MSE's b [131] against a [97, 131]; BCE's targets transposed. */
    const int b_rank = bcast && pw->mode == 0 ? 1 : rank;
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, pw->b, dt[PW_B], b_rank, shape + (rank - b_rank),
                                        pw->mode ? 0.0 : lo, pw->mode ? 1.0 : hi, NULL);
    if (st == KP_OK && bcast && pw->mode != 0) {
        const int64_t strides[2] = {1, shape[0]};
        st = tensor_host->sample_view(smp, pw->b, 2, shape, 0, strides);
    } else if (st == KP_OK && flipped) {
        st = tensor_sample_flip(smp, pw->b, rank, shape, 1);
    }
    if (st == KP_OK)
        st = tensor_host->sample_tensor(smp, "loss", dt[PW_LOSS], 0, NULL, 0.0, 0.0, NULL);
    if (st != KP_OK || strcmp(size, "forward") == 0 || bcast_a)
        return st;
    if (flipped) {
        st = tensor_host->sample_tensor(smp, pw->grad, dt[PW_GRAD], rank, shape, 0.0, 0.0, NULL);
        return st == KP_OK ? tensor_sample_flip(smp, pw->grad, rank, shape, 2) : st;
    }
    if (!views)
        return tensor_host->sample_tensor(smp, pw->grad, dt[PW_GRAD], rank, shape, 0.0, 0.0, NULL);
    const int64_t storage = 2 + shape[0] * (shape[1] + 3), strides[2] = {shape[1] + 3, 1};
    st = tensor_host->sample_tensor(smp, pw->grad, dt[PW_GRAD], 1, &storage, 0.0, 0.0, NULL);
    return st == KP_OK ? tensor_host->sample_view(smp, pw->grad, 2, shape, 2, strides) : st;
}

static void pw_cost(const kp_call *call, kp_cost *out)
{
    const double a = (double)kp_tensor_numel(&call->args[PW_A].tensor);
    const double b = (double)kp_tensor_numel(&call->args[PW_B].tensor);
    out->flops = 4 * (a > b ? a : b);
    out->bytes = tensor_dtype_bytes(call);
}

/* The gradient's elements are of the order of 1 / n. */
static void pw_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const double a = (double)kp_tensor_numel(&call->args[PW_A].tensor);
    const double b = (double)kp_tensor_numel(&call->args[PW_B].tensor);
    const double n = a > b ? a : b;
    *atol = 1e-6 / (n > 1 ? n : 1);
    *rtol = 2e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* ---- registration ---- */

static char names[2][40];
static kp_kernel_desc descs[2];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Fills the pointwise losses' descriptors once: a runtime created earlier reads them while a
 * later runtime's init runs. */
static void build(void)
{
    for (size_t i = 0; i < 2; i++) {
        const pointwise *pw = &pointwise_losses[i];
        snprintf(names[i], sizeof names[i], "tensor.%s", pw->name);
        descs[i] = (kp_kernel_desc){
            .struct_size = sizeof(kp_kernel_desc),
            .name = names[i],
            .summary = pw->summary,
            .params = pw->mode ? bce_params : mse_params,
            .n_params = PW_N,
            .source = kp_kernel_tensor_rows_cl,
            .source_name = "tensor-rows.cl",
            .entry = "rows_loss_partial",
            .check = pw_check,
            .enqueue = pw_enqueue,
            .reference = pw_reference,
            .sample = pw_sample,
            .cost = pw_cost,
            .verify_sizes = pw->mode ? bce_verify_sizes : mse_verify_sizes,
            .n_tunables = 1,
            .tunables = tensor_rows_tunables,
            .resolve = tensor_rows_resolve,
            .bench_sizes = pw_bench_sizes,
            .atol = 1e-6,
            .rtol = 2e-5,
            .tolerance = pw_tolerance,
            .user = (void *)pw,
        };
    }
}

kp_status tensor_register_losses(const kp_host_api *api, kp_registrar *reg)
{
    static const kp_kernel_desc ce = {
        .struct_size = sizeof(kp_kernel_desc),
        .name = "tensor.cross_entropy",
        .summary = "softmax cross-entropy of [..., C] logits against i32 labels: mean loss, "
                   "dlogits and per-row losses in one pass",
        .params = ce_params,
        .n_params = CE_N,
        .n_tunables = TR_N,
        .tunables = tensor_rows_tunables,
        .source = kp_kernel_tensor_rows_cl,
        .source_name = "tensor-rows.cl",
        .entry = "rows_cross_entropy",
        .check = ce_check,
        .enqueue = ce_enqueue,
        .reference = ce_reference,
        .sample = ce_sample,
        .cost = ce_cost,
        .verify_sizes = ce_verify_sizes,
        .bench_sizes = ce_bench_sizes,
        .atol = 1e-6,
        .rtol = 2e-5,
        .tolerance = ce_tolerance,
        .resolve = tensor_rows_resolve,
    };
    kp_status st = api->register_kernel(reg, &ce);
    pthread_once(&once, build);
    for (size_t i = 0; st == KP_OK && i < 2; i++)
        st = api->register_kernel(reg, &descs[i]);
    return st;
}
