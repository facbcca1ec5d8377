/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the GRU cell kernels: argument checks, views, the fused and GEMM launch paths. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "gru-cell.h"

static const int64_t workgroups[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
static const int64_t lane_counts[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
static const int64_t widths[] = {0, 4, 8, 16};
static const int64_t batch_gemm[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 1 << 30};
static const int64_t rows_h[] = {-1, 0, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
static const int64_t split_mn[] = {-1, 0, 4096, 16384, 65536, 262144, 1048576};

/*
 * LANES, VW and BATCH_GEMM default to 0, "by device type": what suits a CPU and a GPU differs by
 * several times (docs/kernels/gru.md has the measurements), and a device without a manifest entry
 * should still get the right kind. gru_cell_resolve turns 0 into the device's value when the core
 * resolves tuning, so the core compiles LANES and VW in (-D, one program for all of a call's
 * kernels), launches read resolved values, and `kernelport explain` shows them.
 */
const kp_tunable_desc gru_cell_tunables[GRU_N_TUNABLES] = {
    [GRU_TUNE_WG] = {.name = "WG",
                     .default_value = 64,
                     .allowed = workgroups,
                     .n_allowed = sizeof workgroups / sizeof workgroups[0],
                     .flags = KP_TUNABLE_WORKGROUP,
                     .doc = "work-items per work-group of every kernel of the cell"},
    [GRU_TUNE_LANES] = {.name = "LANES",
                        .default_value = 0,
                        .allowed = lane_counts,
                        .n_allowed = sizeof lane_counts / sizeof lane_counts[0],
                        .doc = "work-items per hidden unit in the fused kernel (WG / LANES units "
                               "per work-group, capped at WG; at 1 the GEMM path's gate kernel "
                               "takes 16 units per work-item); 0: 1 on CPUs, 32 on others"},
    [GRU_TUNE_VW] = {.name = "VW",
                     .default_value = 0,
                     .allowed = widths,
                     .n_allowed = sizeof widths / sizeof widths[0],
                     .doc = "floats per vector load in the fused kernel; 0: 16 on CPUs, 4 on "
                            "others"},
    [GRU_TUNE_BATCH_GEMM] = {.name = "BATCH_GEMM",
                             .default_value = 0,
                             .allowed = batch_gemm,
                             .n_allowed = sizeof batch_gemm / sizeof batch_gemm[0],
                             .flags = KP_TUNABLE_NO_DEFINE,
                             .doc = "products with at least this many rows (batch rows; T*B for "
                                    "a sequence's input projection) go through blas.gemm, "
                                    "smaller ones through the plugin's kernels; 1073741824: "
                                    "never; 0: 8 on CPUs where blas.gemm runs OpenBLAS "
                                    "(gru.sequence_backward: 1), else 256 on CPUs, 32 on "
                                    "others"},
    [GRU_TUNE_ROWS_H] = {.name = "ROWS_H",
                         .default_value = 0,
                         .allowed = rows_h,
                         .n_allowed = sizeof rows_h / sizeof rows_h[0],
                         .flags = KP_TUNABLE_NO_DEFINE,
                         .doc =
                             "sequences (linear_before_reset 1) whose H is at most this run "
                             "all their steps, forward and backward, in one kernel with a "
                             "work-group per batch row; -1: never; 0: -1 on CPUs, 256 on others"},
    [GRU_TUNE_SPLIT_MN] = {.name = "SPLIT_MN",
                           .default_value = 0,
                           .allowed = split_mn,
                           .n_allowed = sizeof split_mn / sizeof split_mn[0],
                           .flags = KP_TUNABLE_NO_DEFINE,
                           .doc = "weight-gradient products with at most this many outputs split "
                                  "the T B rows they sum over in chunks (two kernels) instead of "
                                  "one GEMM; -1: never; 0: -1 on CPUs, 65536 on others"},
};

const char *gru_cell_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    /* Each 0's value on CPUs and on other devices, and why. */
    static const struct {
        int64_t cpu, other;
        const char *cpu_why, *other_why;
    } by_type[GRU_N_TUNABLES] = {
        [GRU_TUNE_LANES] = {1, 32, "1 on CPUs (a work-item walks whole rows with vector loads)",
                            "32 on devices other than CPUs (coalesced rows)"},
        [GRU_TUNE_VW] = {16, 4, "16 on CPUs (AVX-512 loads)",
                         "4 on devices other than CPUs (16-byte loads)"},
        [GRU_TUNE_BATCH_GEMM] = {256, 32, "256 on CPUs", "32 on devices other than CPUs"},
        [GRU_TUNE_ROWS_H] = {-1, 256, "-1 on CPUs (measured slower there)",
                             "256 on devices other than CPUs"},
        [GRU_TUNE_SPLIT_MN] = {-1, 65536, "-1 on CPUs (measured slower there)",
                               "65536 on devices other than CPUs"},
    };
    if (value != 0 || index >= GRU_N_TUNABLES || !by_type[index].cpu)
        return NULL;
    /* Where blas.gemm runs OpenBLAS, a product of 8 rows or more is faster there than in the
     * fused kernel: `kernelport bench gru.step` (I 321, H 256) on the 2-core EPYC under PoCL took
     * 164-262 us by GEMM against 236 us fused at B 8, 306 against 475-480 us at B 16, 31 against
     * 24-30 us at B 1 (docs/PERFORMANCE.md, #30). */
    if (index == GRU_TUNE_BATCH_GEMM && gru_host_blas(l)) {
        *resolved = 8;
        return "8 on CPUs (blas.gemm runs OpenBLAS there)";
    }
    const kp_device_info *d = gru_host->device(l);
    int cpu = d && d->type == KP_DEVICE_CPU;
    *resolved = cpu ? by_type[index].cpu : by_type[index].other;
    return cpu ? by_type[index].cpu_why : by_type[index].other_why;
}

int gru_host_blas(kp_launch *l)
{
#ifdef KP_BLAS_HOST_ROUTE
    const kp_device_info *d = gru_host->device(l);
    return d && d->type == KP_DEVICE_CPU;
#else
    (void)l;
    return 0;
#endif
}

int64_t gru_batch_gemm(kp_launch *l)
{
    return gru_host->tunable_index(l, GRU_TUNE_BATCH_GEMM);
}

size_t gru_wg(kp_launch *l)
{
    return (size_t)gru_host->tunable_index(l, GRU_TUNE_WG);
}

int gru_rows_route(kp_launch *l, int64_t H, int lbr, int64_t floats)
{
    const kp_device_info *d = gru_host->device(l);
    return lbr && H <= gru_host->tunable_index(l, GRU_TUNE_ROWS_H) && d &&
           (uint64_t)floats * sizeof(float) <= d->local_mem;
}

/* ---- checks ---------------------------------------------------------------------------------- */

kp_status gru_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                     const int64_t *shape, const char *pattern)
{
    return gru_host->check_shape(l, name, t, rank, shape, pattern);
}

kp_status gru_check_sequence(kp_launch *l, const kp_tensor *x, const kp_tensor *h0, gru_dims *dims)
{
    char got[160];
    if (x->rank != 3)
        return gru_host->fail(l, KP_ERR_INVALID_ARG, "x: expected [T, B, I], got %s",
                              kp_tensor_describe(x, got, sizeof got));
    if (x->shape[0] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "x: T = %lld: a sequence needs at least one step (got %s)",
                              (long long)x->shape[0], kp_tensor_describe(x, got, sizeof got));
    if (x->shape[1] < 1 || x->shape[2] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG, "x: expected B, I >= 1, got %s",
                              kp_tensor_describe(x, got, sizeof got));
    gru_dims d = {.T = x->shape[0], .B = x->shape[1], .I = x->shape[2]};
    if (h0->rank != 2 || h0->shape[0] != d.B || h0->shape[1] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "h0: expected [B, H] with B = %lld (x's) and H >= 1, got %s",
                              (long long)d.B, kp_tensor_describe(h0, got, sizeof got));
    d.H = h0->shape[1];
    *dims = d;
    return KP_OK;
}

kp_status gru_check_weights(kp_launch *l, const kp_call *call, int w_ih, int w_hh, int b_ih,
                            int b_hh, int lbr, gru_dims *d)
{
    int64_t lbr_v = call->args[lbr].i;
    if (lbr_v != 0 && lbr_v != 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "linear_before_reset: %lld is not 0 (ONNX) or 1 (PyTorch)",
                              (long long)lbr_v);
    d->lbr = (int)lbr_v;
    /* Broadcast views cost no memory whatever their extents; the kernels take sizes as int (and
     * 3H then fits int64). */
    if (d->T > INT_MAX || d->B > INT_MAX || d->I > INT_MAX || d->H > INT_MAX)
        return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                              "T, B, I, H = %lld, %lld, %lld, %lld: sizes beyond 2^31 - 1 are not "
                              "supported",
                              (long long)d->T, (long long)d->B, (long long)d->I, (long long)d->H);
    kp_status st =
        gru_expect(l, "w_ih", &call->args[w_ih].tensor, 2, (int64_t[]){3 * d->H, d->I}, "[3H, I]");
    if (st == KP_OK)
        st = gru_expect(l, "w_hh", &call->args[w_hh].tensor, 2, (int64_t[]){3 * d->H, d->H},
                        "[3H, H]");
    if (st == KP_OK && b_ih >= 0 && call->args[b_ih].present)
        st = gru_expect(l, "b_ih", &call->args[b_ih].tensor, 1, (int64_t[]){3 * d->H}, "[3H]");
    if (st == KP_OK && b_hh >= 0 && call->args[b_hh].present)
        st = gru_expect(l, "b_hh", &call->args[b_hh].tensor, 1, (int64_t[]){3 * d->H}, "[3H]");
    return st;
}

kp_status gru_check_int_range(kp_launch *l, const kp_call *call, const gru_dims *d)
{
    /* The scratch gate buffers hold [T B, 3H] (the workspace [T B, 4H]) and are indexed alike. */
    if ((double)d->T * (double)d->B * 4.0 * (double)d->H > (double)INT_MAX)
        return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                              "T B 4H = %lld x %lld x 4 x %lld gate values are beyond 2^31",
                              (long long)d->T, (long long)d->B, (long long)d->H);
    for (uint32_t i = 0; i < call->n_args; i++) {
        const kp_tensor *t = &call->args[i].tensor;
        if (call->desc->params[i].kind != KP_ARG_KIND_TENSOR || !call->args[i].present)
            continue;
        if (kp_tensor_extent(t) > INT_MAX || kp_tensor_numel(t) > INT_MAX)
            return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                                  "%s: views reaching beyond 2^31 elements are not supported",
                                  call->desc->params[i].name);
    }
    return KP_OK;
}

/* ---- views ----------------------------------------------------------------------------------- */

kp_tensor gru_sub(const kp_tensor *m, int64_t r0, int64_t rows, int64_t c0, int64_t cols)
{
    kp_tensor t = *m;
    t.offset += r0 * m->strides[0] + c0 * m->strides[1];
    t.shape[0] = rows;
    t.shape[1] = cols;
    return t;
}

kp_tensor gru_step_of(const kp_tensor *t3, int64_t t)
{
    kp_tensor v = *t3;
    v.rank = 2;
    v.offset += t * t3->strides[0];
    v.shape[0] = t3->shape[1];
    v.shape[1] = t3->shape[2];
    v.strides[0] = t3->strides[1];
    v.strides[1] = t3->strides[2];
    v.shape[2] = v.strides[2] = 0;
    return v;
}

int gru_flatten(const kp_tensor *t3, int64_t t0, int64_t n, kp_tensor *out)
{
    if (n > 1 && t3->shape[1] > 1 && t3->strides[0] != t3->shape[1] * t3->strides[1])
        return 0;
    *out = gru_step_of(t3, t0);
    if (n > 1 && t3->shape[1] == 1)
        out->strides[0] = t3->strides[0]; /* one row per step: the time stride is the row's */
    out->shape[0] = n * t3->shape[1];
    return 1;
}

kp_tensor gru_scratch_matrix(kp_buffer *buf, int64_t offset, int64_t rows, int64_t cols)
{
    kp_tensor t = kp_tensor_2d(buf, KP_F32, rows, cols);
    t.offset = offset;
    return t;
}

/* ---- launch sizes ---------------------------------------------------------------------------- */

size_t gru_round_up(int64_t n, size_t wg)
{
    return ((size_t)n + wg - 1) / wg * wg;
}

/* ---- GEMMs ----------------------------------------------------------------------------------- */

int gru_blas_layout(const kp_tensor *m)
{
    int64_t rows = m->shape[0], cols = m->shape[1], s0 = m->strides[0], s1 = m->strides[1];
    int row_ok = (cols <= 1 || s1 == 1) && (rows <= 1 || s0 >= cols);
    int col_ok = (rows <= 1 || s0 == 1) && (cols <= 1 || s1 >= rows);
    return m->rank == 2 && (row_ok || col_ok);
}

kp_status gru_blas_gemm(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                        double beta)
{
    if (!gru_blas_layout(a) || !gru_blas_layout(b) || !gru_blas_layout(c))
        return KP_ERR_NOT_FOUND;
    kp_arg args[] = {KP_ARG_TENSOR("A", *a), KP_ARG_TENSOR("B", *b), KP_ARG_TENSOR("C", *c),
                     KP_ARG_FLOAT("beta", beta)};
    return gru_host->launch(l, "blas.gemm", args, sizeof args / sizeof args[0]);
}

static kp_status matmul(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                        double beta)
{
    size_t wg = gru_wg(l);
    int m = (int)c->shape[0], n = (int)c->shape[1];
    kp_clargs g = kp_clargs_begin(gru_host, l, "gru_matmul", NULL);
    kp_clargs_int(&g, m);
    kp_clargs_int(&g, n);
    kp_clargs_int(&g, (int)a->shape[1]);
    kp_clargs_float(&g, 1.0f);
    kp_clargs_float(&g, (float)beta);
    kp_clargs_tensor(&g, a, 2);
    kp_clargs_tensor(&g, b, 2);
    kp_clargs_tensor(&g, c, 2);
    size_t global[2] = {gru_round_up((n + 3) / 4, wg), (size_t)m}, local[2] = {wg, 1};
    return kp_clargs_enqueue(&g, 2, global, local);
}

kp_status gru_transpose(kp_launch *l, const kp_tensor *in, const kp_tensor *out)
{
    size_t wg = gru_wg(l);
    int rows = (int)in->shape[0], cols = (int)in->shape[1];
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_transpose", NULL);
    kp_clargs_int(&a, rows);
    kp_clargs_int(&a, cols);
    kp_clargs_tensor(&a, in, 2);
    kp_clargs_tensor(&a, out, 2);
    size_t global[2] = {gru_round_up(cols, wg), (size_t)rows}, local[2] = {wg, 1};
    return kp_clargs_enqueue(&a, 2, global, local);
}

kp_status gru_gemm(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                   double beta, int use_blas)
{
    if (use_blas) {
        kp_status st = gru_blas_gemm(l, a, b, c, beta);
        if (st != KP_ERR_NOT_FOUND)
            return st;
    }
    return matmul(l, a, b, c, beta);
}

/* ---- the fused path -------------------------------------------------------------------------- */

static int unit_columns(const kp_tensor *t)
{
    return !gru_present(t) || t->shape[1] <= 1 || t->strides[1] == 1;
}

static kp_status fused_stage(kp_launch *l, const gru_cell *c, int stage, const kp_tensor *tmp)
{
    size_t wg = gru_wg(l);
    const kp_tensor none = {0};
    const kp_tensor *x = gru_present(&c->gx) || stage == 2 ? &none : &c->x;
    int in = gru_present(x) ? (int)c->I : 0;
    int unit = unit_columns(x) && unit_columns(&c->h) && unit_columns(&c->w_ih) &&
               unit_columns(&c->w_hh) && unit_columns(tmp);
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_fused", NULL);
    kp_clargs_int(&a, stage);
    kp_clargs_int(&a, unit);
    kp_clargs_int(&a, in);
    kp_clargs_int(&a, (int)c->H);
    const kp_tensor *views[] = {x,        &c->gx,   &c->h, &c->w_ih,  &c->w_hh,
                                &c->b_ih, &c->b_hh, tmp,   &c->h_out, &c->ws};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        gru_clargs_tensor(&a, views[v], 2, c->h.buffer);
    size_t lanes = (size_t)gru_host->tunable_index(l, GRU_TUNE_LANES);
    size_t units = wg / (lanes < wg ? lanes : wg);
    size_t global[2] = {gru_round_up(c->H, units) / units * wg, (size_t)c->B}, local[2] = {wg, 1};
    return kp_clargs_enqueue(&a, 2, global, local);
}

kp_status gru_cell_fused(kp_launch *l, const gru_cell *c, uint32_t slot)
{
    const kp_tensor none = {0};
    if (c->lbr)
        return fused_stage(l, c, 0, &none);
    /* linear_before_reset = 0: W_hn multiplies r * h, so every unit's r must exist before any n
     * can start; pass 1 leaves (r * h, z, xn) per row in scratch for pass 2. */
    kp_buffer *buf;
    kp_status st = gru_host->scratch(l, slot, (size_t)(c->B * 3 * c->H) * sizeof(float), &buf);
    kp_tensor tmp = gru_scratch_matrix(buf, 0, c->B, 3 * c->H);
    if (st == KP_OK)
        st = fused_stage(l, c, 1, &tmp);
    return st == KP_OK ? fused_stage(l, c, 2, &tmp) : st;
}

/* ---- the GEMM path --------------------------------------------------------------------------- */

static kp_status gates(kp_launch *l, const gru_cell *c, int stage, const kp_tensor *gx,
                       const kp_tensor *gh, const kp_tensor *rh)
{
    size_t wg = gru_wg(l);
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_gates", NULL);
    kp_clargs_int(&a, stage);
    kp_clargs_int(&a, (int)c->H);
    const kp_tensor *views[] = {gx, gh, &c->h, &c->b_ih, &c->b_hh, rh, &c->h_out, &c->ws};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        gru_clargs_tensor(&a, views[v], 2, c->h.buffer);
    /* With one lane per unit (LANES 1, or WG 1) a work-item applies GV (gru.cl) units' gates. */
    int64_t lanes = gru_host->tunable_index(l, GRU_TUNE_LANES);
    int64_t per_item = lanes == 1 || wg == 1 ? GRU_GATE_VECTOR : 1;
    size_t global[2] = {gru_round_up((c->H + per_item - 1) / per_item, wg), (size_t)c->B};
    size_t local[2] = {wg, 1};
    return kp_clargs_enqueue(&a, 2, global, local);
}

kp_status gru_cell_gemm(kp_launch *l, const gru_cell *c, uint32_t slot)
{
    int64_t B = c->B, H = c->H;
    kp_tensor w_ih_t = kp_tensor_transpose(c->w_ih, 0, 1);
    kp_tensor w_hh_t = gru_present(&c->w_hh_t) ? c->w_hh_t : kp_tensor_transpose(c->w_hh, 0, 1);
    kp_tensor w_rz_t = gru_sub(&w_hh_t, 0, H, 0, 2 * H), w_n_t = gru_sub(&w_hh_t, 0, H, 2 * H, H);
    /* Decide before enqueueing anything, so that a refusal leaves nothing half done. */
    if ((!gru_present(&c->gx) && (!gru_blas_layout(&c->x) || !gru_blas_layout(&w_ih_t))) ||
        !gru_blas_layout(&c->h) || !gru_blas_layout(&w_rz_t) || !gru_blas_layout(&w_n_t))
        return KP_ERR_NOT_FOUND;
    kp_buffer *bx = NULL, *bh = NULL, *brh = NULL;
    size_t gate_bytes = (size_t)(B * 3 * H) * sizeof(float);
    kp_status st = gru_host->scratch(l, slot + 1, gate_bytes, &bh);
    if (st == KP_OK && !gru_present(&c->gx))
        st = gru_host->scratch(l, slot, gate_bytes, &bx);
    if (st != KP_OK)
        return st;
    kp_tensor gh = gru_scratch_matrix(bh, 0, B, 3 * H);
    kp_tensor gx = gru_present(&c->gx) ? c->gx : gru_scratch_matrix(bx, 0, B, 3 * H);
    if (!gru_present(&c->gx))
        st = gru_blas_gemm(l, &c->x, &w_ih_t, &gx, 0.0);
    if (st != KP_OK)
        return st; /* KP_ERR_NOT_FOUND here (the first product) means no blas.gemm */
    if (c->lbr) {
        st = gru_blas_gemm(l, &c->h, &w_hh_t, &gh, 0.0);
        return st == KP_OK ? gates(l, c, 0, &gx, &gh, NULL) : st;
    }
    /* linear_before_reset = 0: gh's r and z columns, then r * h (into the workspace's 4th slot
     * when there is one, which is where the backward wants it), then W_hn (r * h). */
    kp_tensor gh_rz = gru_sub(&gh, 0, B, 0, 2 * H), gh_n = gru_sub(&gh, 0, B, 2 * H, H);
    kp_tensor rh;
    if (gru_present(&c->ws) && gru_blas_layout(&c->ws)) {
        rh = gru_sub(&c->ws, 0, B, 3 * H, H);
    } else {
        st = gru_host->scratch(l, slot + 2, (size_t)(B * H) * sizeof(float), &brh);
        rh = gru_scratch_matrix(brh, 0, B, H);
    }
    if (st == KP_OK)
        st = gru_blas_gemm(l, &c->h, &w_rz_t, &gh_rz, 0.0);
    if (st == KP_OK)
        st = gates(l, c, 1, &gx, &gh, &rh);
    if (st == KP_OK)
        st = gru_blas_gemm(l, &rh, &w_n_t, &gh_n, 0.0);
    return st == KP_OK ? gates(l, c, 2, &gx, &gh, &rh) : st;
}

/* ---- samples --------------------------------------------------------------------------------- */

kp_status gru_sample_weights(kp_sample *s, const gru_dims *d, int with_biases)
{
    double k = 1.0 / sqrt((double)d->H);
    kp_status st =
        gru_host->sample_tensor(s, "w_ih", KP_F32, 2, (int64_t[]){3 * d->H, d->I}, -k, k, NULL);
    if (st == KP_OK)
        st =
            gru_host->sample_tensor(s, "w_hh", KP_F32, 2, (int64_t[]){3 * d->H, d->H}, -k, k, NULL);
    if (st == KP_OK && with_biases)
        st = gru_host->sample_tensor(s, "b_ih", KP_F32, 1, (int64_t[]){3 * d->H}, -k, k, NULL);
    if (st == KP_OK && with_biases)
        st = gru_host->sample_tensor(s, "b_hh", KP_F32, 1, (int64_t[]){3 * d->H}, -k, k, NULL);
    return st;
}
