/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.softmax, log_softmax and their backward over the last axis, and the row layout and
 * launch shape every row kernel shares (kernels/tensor-rows.cl). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

static const int64_t workgroups[] = {32, 64, 128, 256, 512, 1024};
static const int64_t widths[] = {0, 4, 8, 16};
static const int64_t per_lane[] = {0, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
static const char *const cache_choices[] = {"auto", "off", NULL};
const kp_tunable_desc tensor_rows_tunables[TR_N] = {
    [TR_VW] =
        {
            .name = "VW",
            .default_value = 0,
            .allowed = widths,
            .n_allowed = sizeof widths / sizeof widths[0],
            .flags = KP_TUNABLE_NO_SEARCH,
            .doc = "columns a block (a lane reads a block as one vector where the row allows); "
                   "a lane sums each of a block's columns apart, so results depend on it; 0: 16 "
                   "on CPUs, 4 on others",
        },
    [TR_WG] =
        {
            .name = "WG",
            .default_value = 256,
            .allowed = workgroups,
            .n_allowed = sizeof workgroups / sizeof workgroups[0],
            .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
            .doc = "work-items per work-group, at least one row's lanes (results do not depend on "
                   "it)",
        },
    [TR_CACHE] =
        {
            .name = "CACHE",
            .default_value = 0,
            .min = 0,
            .max = 1,
            .choices = cache_choices,
            .flags = KP_TUNABLE_NO_DEFINE,
            .doc = "auto: keep rows in local memory where they fit, reading x once; off: read x "
                   "again for each pass (results do not depend on it)",
        },
    [TR_EPL] =
        {
            .name = "EPL",
            .default_value = 0,
            .allowed = per_lane,
            .n_allowed = sizeof per_lane / sizeof per_lane[0],
            .flags = KP_TUNABLE_NO_DEFINE | KP_TUNABLE_NO_SEARCH,
            .doc = "columns per lane a row's lane count aims at (lanes: the least power of two "
                   "up to 256 with lanes * EPL >= C); it orders the row sums, so results depend on "
                   "it; 0: 256 on CPUs, 16 on others",
        },
};

const char *tensor_rows_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if ((index != TR_VW && index != TR_EPL) || value != 0)
        return NULL;
    const kp_device_info *d = tensor_host->device(l);
    const int cpu = d && d->type == KP_DEVICE_CPU;
    if (index == TR_VW) {
        *resolved = cpu ? 16 : 4;
        return cpu ? "16 on CPUs (a block is one AVX-512 vector, or two AVX ones)"
                   : "4 on devices other than CPUs (a block is one 16-byte load)";
    }
    *resolved = cpu ? 256 : 16;
    return cpu ? "256 on CPUs (a work-item walks long stretches of a row)"
               : "16 on devices other than CPUs (rows of 4096 take 256 lanes, four blocks each)";
}

/* ---- layout and launch shape ---- */

kp_status tensor_rows_fits(kp_launch *l, const kp_tensor *t, const char *name)
{
    if (kp_tensor_numel(t) <= TENSOR_ROWS_MAX_ELEMENTS)
        return KP_OK;
    char a[160];
    return tensor_host->fail(l, KP_ERR_UNSUPPORTED,
                             "%s: %s has more than 2^31 - 1025 elements (kernels index with int)",
                             name, tensor_shape_str(t, a, sizeof a));
}

kp_status tensor_rows_make(kp_launch *l, int lrank, const int64_t *lead, int64_t cols,
                           const kp_tensor *const *t, const int *with_col, const char *const *names,
                           int n, tensor_rows *r)
{
    memset(r, 0, sizeof *r);
    kp_tensor lt[TS_MAX_IN + 1];
    const kp_tensor *in[TS_MAX_IN];
    for (int i = 0; i < n; i++) {
        kp_status st = tensor_rows_fits(l, t[i], names[i]);
        if (st != KP_OK)
            return st;
        lt[i] = *t[i];
        lt[i].rank = t[i]->rank - (with_col[i] && t[i]->rank > 0);
        if (i)
            in[i - 1] = &lt[i];
    }
    tensor_space s;
    kp_status st = tensor_space_make(l, lrank, lead, &lt[0], names[0], in, names + 1, n - 1, &s);
    if (st != KP_OK)
        return st;
    r->rows = s.n_out;
    r->cols = cols;
    r->nlead = s.rank_kept;
    for (int p = 0; p < 8; p++)
        r->ext[p] = 1;
    r->ext[7] = (int32_t)cols;
    for (int p = 0; p < s.rank_kept; p++)
        r->ext[p] = (int32_t)s.ext[s.rank_kept - 1 - p];
    for (int i = 0; i < n; i++) {
        kp_tensor *v = &r->view[i];
        *v = *t[i];
        v->rank = KP_MAX_RANK;
        v->offset = i ? s.in_offset[i - 1] : s.out_offset;
        for (int p = 0; p < KP_MAX_RANK; p++) {
            v->shape[p] = 1;
            v->strides[p] = 0;
        }
        for (int p = 0; p < s.rank_kept; p++) {
            int d = s.rank_kept - 1 - p;
            v->shape[p] = s.ext[d];
            v->strides[p] = i ? s.in_stride[i - 1][d] : s.out_stride[d];
        }
        if (with_col[i]) {
            v->shape[7] = cols;
            v->strides[7] = t[i]->rank ? t[i]->strides[t[i]->rank - 1] : 0;
        }
    }
    return KP_OK;
}

tensor_rows_grid tensor_rows_grid_for(kp_launch *l, int64_t rows, int64_t cols, int arrays,
                                      int trees)
{
    const kp_device_info *dev = tensor_host->device(l);
    const int64_t wg = tensor_host->tunable_index(l, TR_WG);
    const int64_t epl = tensor_host->tunable_index(l, TR_EPL);
    const int64_t vw = tensor_host->tunable_index(l, TR_VW);
    tensor_rows_grid g = {.lanes = 1};
    while (g.lanes < 256 && (size_t)g.lanes * 2 <= dev->max_workgroup &&
           (int64_t)g.lanes * epl < cols)
        g.lanes *= 2;
    g.local = (size_t)(wg > g.lanes ? wg : g.lanes);
    const size_t per = g.local / (size_t)g.lanes;
    g.groups = (size_t)((rows + (int64_t)per - 1) / (int64_t)per);
    g.tree_bytes = g.local * (size_t)trees * sizeof(float);
    /* A quarter of local memory stays free, so caching rows does not starve occupancy on GPUs
     * (48 KiB a work-group on NVIDIA's OpenCL: at WG 256, rows of up to 8,960 floats). */
    const size_t cache =
        per * (size_t)((cols + vw - 1) / vw) * (size_t)vw * (size_t)arrays * sizeof(float);
    g.cached = tensor_host->tunable_index(l, TR_CACHE) == 0 && arrays > 0 &&
               cache + g.tree_bytes <= dev->local_mem / 4 * 3;
    g.cache_bytes = g.cached && cache ? cache : sizeof(float);
    return g;
}

void tensor_rows_options(const int32_t *dt, char *buf, size_t size)
{
    static const char *const names[TR_DT_N] = {"DT0", "DT1", "DTY", "DTL", "DTM"};
    buf[0] = '\0';
    for (int i = 0; i < TR_DT_N; i++)
        tensor_dtype_define(buf, size, names[i], dt[i]);
}

kp_status tensor_rows_mean(kp_launch *l, const tensor_rows *v, int which, const kp_buffer *count,
                           double denom, const kp_tensor *out, const char *options)
{
    const size_t local = 256, global = 256;
    kp_clargs a = kp_clargs_begin(tensor_host, l, "rows_mean", options);
    kp_clargs_int(&a, (int32_t)v->rows);
    kp_clargs_int(&a, tensor_rows_vec(v, which, 0, 1));
    kp_clargs_int(&a, v->nlead);
    kp_clargs_value(&a, sizeof v->ext, v->ext);
    kp_clargs_tensor(&a, &v->view[which], KP_MAX_RANK);
    kp_clargs_int(&a, count != NULL);
    kp_clargs_buffer(&a, count ? count : v->view[which].buffer);
    kp_clargs_float(&a, (float)denom);
    kp_clargs_buffer(&a, out->buffer);
    kp_clargs_int(&a, (int32_t)out->offset);
    kp_clargs_local(&a, local * sizeof(float));
    return kp_clargs_enqueue(&a, 1, &global, &local);
}

int tensor_rows_vec(const tensor_rows *r, int i, int with_col, int aligned)
{
    const kp_tensor *v = &r->view[i];
    if (!with_col)
        return r->nlead == 1 && v->strides[0] == 1 && (!aligned || v->offset % 4 == 0);
    int ok = v->strides[7] == 1;
    if (aligned) {
        ok &= v->offset % 4 == 0 && r->cols % 4 == 0;
        for (int p = 0; p < r->nlead; p++)
            ok &= v->strides[p] % 4 == 0;
    }
    return ok;
}

int64_t tensor_rows_offset(const kp_tensor *t, int lrank, int64_t r)
{
    int64_t off = t->offset;
    for (int d = lrank - 1; d >= 0; d--) {
        off += (r % t->shape[d]) * t->strides[d];
        r /= t->shape[d];
    }
    return off;
}

/* ---- softmax, log_softmax and their backward ---- */

/* What a descriptor computes: the forward or the backward of softmax or log_softmax. */
typedef struct rows_op {
    const char *name, *summary;
    int log_mode, backward;
} rows_op;

static const rows_op rows_ops[] = {
    {"softmax", "y = exp(x - max) / sum(exp(x - max)) over the last axis", 0, 0},
    {"log_softmax", "y = x - max - log(sum(exp(x - max))) over the last axis", 1, 0},
    {"softmax_backward", "dx = y (dy - sum(dy y)) over the last axis", 0, 1},
    {"log_softmax_backward", "dx = dy - exp(y) sum(dy) over the last axis", 1, 1},
};
#define N_ROWS_OPS (sizeof rows_ops / sizeof rows_ops[0])

enum { FW_X, FW_Y, FW_N };
static const kp_param_desc forward_params[] = {
    [FW_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "[..., C], any strides"},
    [FW_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = TENSOR_FLOATS,
              .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
              .doc = "x's shape; may be x itself"},
};
enum { BW_DY, BW_Y, BW_DX, BW_N };
static const kp_param_desc backward_params[] = {
    [BW_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_IN,
               .dtypes = TENSOR_FLOATS,
               .doc = "the gradient of y, [..., C]"},
    [BW_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = TENSOR_FLOATS,
              .doc = "the forward's output, dy's shape"},
    [BW_DX] = {.name = "dx",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = TENSOR_FLOATS,
               .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
               .doc = "dy's shape; may be dy or y itself"},
};

static const rows_op *op_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

/* The operands in launch order (the output first) and the layout over their rows. A rank-0
 * tensor is one row of one column. */
static kp_status layout(kp_launch *l, const kp_call *call, const rows_op *op, tensor_rows *r)
{
    static const char *const fw_names[] = {"y", "x"}, *const bw_names[] = {"dx", "dy", "y"};
    const kp_tensor *t[3];
    const char *const *names = op->backward ? bw_names : fw_names;
    int n;
    if (op->backward) {
        t[0] = &call->args[BW_DX].tensor;
        t[1] = &call->args[BW_DY].tensor;
        t[2] = &call->args[BW_Y].tensor;
        n = 3;
    } else {
        t[0] = &call->args[FW_Y].tensor;
        t[1] = &call->args[FW_X].tensor;
        n = 2;
    }
    const kp_tensor *ref = t[1];
    for (int i = 0; i < n; i++)
        if (i != 1) {
            kp_status st = tensor_host->check_shape(l, names[i], t[i], ref->rank, ref->shape, NULL);
            if (st != KP_OK)
                return st;
        }
    const int lrank = ref->rank ? ref->rank - 1 : 0;
    const int64_t cols = ref->rank ? ref->shape[ref->rank - 1] : 1;
    static const int with_col[3] = {1, 1, 1};
    return tensor_rows_make(l, lrank, ref->shape, cols, t, with_col, names, n, r);
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    tensor_rows r;
    return layout(l, call, op_of(l), &r);
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const rows_op *op = op_of(l);
    tensor_rows r;
    kp_status st = layout(l, call, op, &r);
    if (st != KP_OK || r.rows == 0 || r.cols == 0)
        return st;
    /* Cached: the forward's x; the backward's dy, and y for softmax's. */
    const int arrays = op->backward && !op->log_mode ? 2 : 1;
    tensor_rows_grid g = tensor_rows_grid_for(l, r.rows, r.cols, arrays, 1);
    /* Inputs in order (views 1 and 2), the output (view 0). */
    const int32_t dt[TR_DT_N] = {r.view[1].dtype, op->backward ? r.view[2].dtype : KP_F32,
                                 r.view[0].dtype, KP_F32, KP_F32};
    char options[64];
    tensor_rows_options(dt, options, sizeof options);
    kp_clargs a = kp_clargs_begin(tensor_host, l,
                                  op->backward ? "rows_softmax_backward" : "rows_softmax", options);
    kp_clargs_int(&a, (int32_t)r.rows);
    kp_clargs_int(&a, (int32_t)r.cols);
    kp_clargs_int(&a, g.lanes);
    kp_clargs_int(&a, op->log_mode);
    kp_clargs_int(&a, g.cached);
    /* vec: a bit for each input in order, then the output's (view 0). */
    const int n_in = op->backward ? 2 : 1, aligned = tensor_host->tunable_index(l, TR_VW) == 4;
    int vec = tensor_rows_vec(&r, 0, 1, aligned) << n_in;
    for (int i = 1; i <= n_in; i++)
        vec |= tensor_rows_vec(&r, i, 1, aligned) << (i - 1);
    kp_clargs_int(&a, vec);
    kp_clargs_int(&a, r.nlead);
    kp_clargs_value(&a, sizeof r.ext, r.ext);
    /* Inputs, then the output (view 0). */
    for (int i = 1; i < (op->backward ? 3 : 2); i++)
        kp_clargs_tensor(&a, &r.view[i], KP_MAX_RANK);
    kp_clargs_tensor(&a, &r.view[0], KP_MAX_RANK);
    kp_clargs_local(&a, g.cache_bytes);
    kp_clargs_local(&a, g.tree_bytes);
    const size_t global = g.groups * g.local;
    return kp_clargs_enqueue(&a, 1, &global, &g.local);
}

static kp_status reference(const kp_call *call, kp_launch *l)
{
    const rows_op *op = op_of(l);
    tensor_rows r;
    kp_status st = layout(l, call, op, &r);
    if (st != KP_OK)
        return st;
    const kp_tensor *x = &call->args[op->backward ? BW_DY : FW_X].tensor;
    const int lrank = x->rank ? x->rank - 1 : 0;
    const int64_t C = r.cols;
    const int nt = op->backward ? 3 : 2;
    /* The inputs in order, then the output; each read and written at its dtype. */
    const kp_value *arg[3];
    if (op->backward) {
        arg[0] = &call->args[BW_DY], arg[1] = &call->args[BW_Y], arg[2] = &call->args[BW_DX];
    } else {
        arg[0] = &call->args[FW_X], arg[1] = &call->args[FW_Y];
    }
    kp_dtype dt[3];
    int64_t cs[3];
    for (int i = 0; i < nt; i++) {
        const kp_tensor *t = &arg[i]->tensor;
        dt[i] = (kp_dtype)t->dtype;
        cs[i] = t->rank ? t->strides[t->rank - 1] : 0;
    }
    const void *in0 = arg[0]->host, *in1 = op->backward ? arg[1]->host : NULL;
    void *out = arg[nt - 1]->host;
    for (int64_t row = 0; row < r.rows; row++) {
        int64_t o[3];
        for (int i = 0; i < nt; i++)
            o[i] = tensor_rows_offset(&arg[i]->tensor, lrank, row);
        if (op->backward) {
            double s = 0;
            for (int64_t c = 0; c < C; c++) {
                double g = kp_dtype_load(in0, dt[0], o[0] + c * cs[0]);
                double y = kp_dtype_load(in1, dt[1], o[1] + c * cs[1]);
                s += op->log_mode ? g : g * y;
            }
            for (int64_t c = 0; c < C; c++) {
                double g = kp_dtype_load(in0, dt[0], o[0] + c * cs[0]);
                double y = kp_dtype_load(in1, dt[1], o[1] + c * cs[1]);
                kp_dtype_store(out, dt[2], o[2] + c * cs[2],
                               (float)(op->log_mode ? g - exp(y) * s : y * (g - s)));
            }
            continue;
        }
        /* As the kernel: a NaN is passed over by the max and poisons the sum. */
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++) {
            double v = kp_dtype_load(in0, dt[0], o[0] + c * cs[0]);
            m = v > m ? v : m;
        }
        for (int64_t c = 0; c < C; c++)
            s += exp(kp_dtype_load(in0, dt[0], o[0] + c * cs[0]) - m);
        for (int64_t c = 0; c < C; c++) {
            double v = kp_dtype_load(in0, dt[0], o[0] + c * cs[0]) - m;
            kp_dtype_store(out, dt[1], o[1] + c * cs[1],
                           (float)(op->log_mode ? v - log(s) : exp(v) / s));
        }
    }
    return KP_OK;
}

/* ---- samples ---- */

/* One element; primes [37, 53]; rows of one column; a wide prime row (lanes 256 on GPUs, several
 * columns each); leading dimensions that do not coalesce (x [5, 3, 7] permuted from [3, 5, 7]);
 * a transposed x (its last axis strided) with y's rows gapped; a rank-0 x; rows of 60, read and
 * written as whole vectors (vec; the last block of 16 element by element), or read so and written
 * with gaps (vec_gap); inputs reversed along both axes into an output whose rows come in reverse
 * order (flipped: negative strides), and rows of 60 in reverse order, read and written as whole
 * vectors (vec_flipped: a float4 row start a negative stride away from the next). 16-bit storage
 * (tensor_size_dtypes names it; one program per dtype combination): softmax and log_softmax of
 * bf16 into bf16, their backward of f16 into f16, in whole vectors and element by element. */
static const char *const forward_sizes[] = {
    "one", "prime",   "col",     "wide",        "lead",       "views",    "scalar",
    "vec", "vec_gap", "flipped", "vec_flipped", "prime-bf16", "vec-bf16", NULL};
static const char *const backward_sizes[] = {
    "one", "prime",   "col",     "wide",        "lead",      "views",   "scalar",
    "vec", "vec_gap", "flipped", "vec_flipped", "views-f16", "vec-f16", NULL};
/* The bf16 twin moves half the bytes (docs/kernels/tensor.md, "Dtypes"). */
static const char *const bench_sizes[] = {"4096x4096", "512x4096", "4096x4096-bf16", NULL};

static int sample_shape(const char *size, int *rank, int64_t *shape)
{
    *rank = 2;
    shape[0] = 37, shape[1] = 53;
    if (strcmp(size, "one") == 0) {
        *rank = 1, shape[0] = 1;
    } else if (strcmp(size, "col") == 0) {
        shape[1] = 1;
    } else if (strcmp(size, "wide") == 0) {
        shape[0] = 3, shape[1] = 4099;
    } else if (strcmp(size, "lead") == 0) {
        *rank = 3, shape[0] = 5, shape[1] = 3, shape[2] = 7;
    } else if (strcmp(size, "scalar") == 0) {
        *rank = 0;
    } else if (strcmp(size, "vec") == 0 || strcmp(size, "vec_gap") == 0 ||
               strcmp(size, "vec_flipped") == 0) {
        shape[1] = 60;
    } else if (strcmp(size, "4096x4096") == 0) {
        shape[0] = shape[1] = 4096;
    } else if (strcmp(size, "512x4096") == 0) {
        shape[0] = 512, shape[1] = 4096;
    } else if (strcmp(size, "prime") != 0 && strcmp(size, "views") != 0 &&
               strcmp(size, "flipped") != 0) {
        return 0;
    }
    return 1;
}

/* An input of `shape` and dtype dt in [lo, hi): permuted (lead), transposed (views) or reversed
 * (flipped) where the size says. */
static kp_status sample_in(kp_sample *smp, const char *name, int32_t dt, const char *size, int rank,
                           const int64_t *shape, double lo, double hi)
{
    kp_status st = tensor_host->sample_tensor(smp, name, dt, rank, shape, lo, hi, NULL);
    if (st == KP_OK && strcmp(size, "views") == 0) {
        const int64_t strides[2] = {1, shape[0]};
        st = tensor_host->sample_view(smp, name, 2, shape, 0, strides);
    } else if (st == KP_OK && strcmp(size, "lead") == 0) {
        /* [5, 3, 7] over storage [3, 5, 7]: dimension 0 steps 7, dimension 1 steps 35. */
        const int64_t strides[3] = {shape[2], shape[0] * shape[2], 1};
        st = tensor_host->sample_view(smp, name, 3, shape, 0, strides);
    } else if (st == KP_OK && strcmp(size, "flipped") == 0) {
        st = tensor_sample_flip(smp, name, rank, shape, 3);
    } else if (st == KP_OK && strcmp(size, "vec_flipped") == 0) {
        st = tensor_sample_flip(smp, name, rank, shape, 1);
    }
    return st;
}

/* An output of `shape`, its rows 3 elements apart (views, vec_gap) or in reverse order
 * (flipped, vec_flipped). */
static kp_status sample_out(kp_sample *smp, const char *name, int32_t dt, const char *size,
                            int rank, const int64_t *shape)
{
    if (strcmp(size, "flipped") == 0 || strcmp(size, "vec_flipped") == 0) {
        kp_status st = tensor_host->sample_tensor(smp, name, dt, rank, shape, 0.0, 0.0, NULL);
        return st == KP_OK ? tensor_sample_flip(smp, name, rank, shape, 1) : st;
    }
    if (strcmp(size, "views") != 0 && strcmp(size, "vec_gap") != 0)
        return tensor_host->sample_tensor(smp, name, dt, rank, shape, 0.0, 0.0, NULL);
    const int64_t storage = 2 + shape[0] * (shape[1] + 3), strides[2] = {shape[1] + 3, 1};
    kp_status st = tensor_host->sample_tensor(smp, name, dt, 1, &storage, 0.0, 0.0, NULL);
    return st == KP_OK ? tensor_host->sample_view(smp, name, 2, shape, 2, strides) : st;
}

static kp_status sample(kp_sample *smp, const char *full_size)
{
    const rows_op *op = tensor_host->sample_kernel_user(smp);
    int rank;
    int64_t shape[3];
    char size[32];
    int32_t dt[3];
    tensor_size_dtypes(full_size, size, sizeof size, dt, op->backward ? 3 : 2);
    if (!sample_shape(size, &rank, shape))
        return KP_ERR_NOT_FOUND;
    if (!op->backward) {
        kp_status st = sample_in(smp, "x", dt[0], size, rank, shape, -4.0, 4.0);
        return st == KP_OK ? sample_out(smp, "y", dt[1], size, rank, shape) : st;
    }
    /* y as the forward gives it: probabilities, or log-probabilities. */
    kp_status st = sample_in(smp, "dy", dt[0], size, rank, shape, -1.0, 1.0);
    if (st == KP_OK)
        st = sample_in(smp, "y", dt[1], size, rank, shape, op->log_mode ? -6.0 : 0.0,
                       op->log_mode ? 0.0 : 1.0);
    return st == KP_OK ? sample_out(smp, "dx", dt[2], size, rank, shape) : st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    out->flops = 5 * (double)kp_tensor_numel(&call->args[0].tensor);
    out->bytes = tensor_dtype_bytes(call);
}

/* A row's sum of C terms rounds once per term; log_softmax's values reach log(C) and more. */
static void tolerance(const kp_call *call, double *atol, double *rtol)
{
    const kp_tensor *x = &call->args[0].tensor;
    const double C = x->rank ? (double)x->shape[x->rank - 1] : 1;
    *atol = 1e-6 * (2 + log2(C > 1 ? C : 1));
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* ---- registration ---- */

static char names[N_ROWS_OPS][40];
static kp_kernel_desc descs[N_ROWS_OPS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Fills the descriptors once: a runtime created earlier reads them while a later runtime's
 * init runs. */
static void build(void)
{
    for (size_t i = 0; i < N_ROWS_OPS; i++) {
        const rows_op *op = &rows_ops[i];
        snprintf(names[i], sizeof names[i], "tensor.%s", op->name);
        descs[i] = (kp_kernel_desc){
            .struct_size = sizeof(kp_kernel_desc),
            .name = names[i],
            .summary = op->summary,
            .params = op->backward ? backward_params : forward_params,
            .n_params = op->backward ? BW_N : FW_N,
            .n_tunables = TR_N,
            .tunables = tensor_rows_tunables,
            .source = kp_kernel_tensor_rows_cl,
            .source_name = "tensor-rows.cl",
            .entry = op->backward ? "rows_softmax_backward" : "rows_softmax",
            .check = check,
            .enqueue = enqueue,
            .reference = reference,
            .sample = sample,
            .cost = cost,
            .verify_sizes = op->backward ? backward_sizes : forward_sizes,
            .bench_sizes = bench_sizes,
            .atol = 1e-6,
            .rtol = 1e-5,
            .tolerance = tolerance,
            .user = (void *)op,
            .resolve = tensor_rows_resolve,
        };
    }
}

kp_status tensor_register_rows(const kp_host_api *api, kp_registrar *reg)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < N_ROWS_OPS; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}
