/* SPDX-License-Identifier: Apache-2.0 */
/* tc.gemm: checks, the device test, operand layouts and the launch of kernels/tc.cl. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tc-kernels.h"
#include "tc.h"

static const char *const precision_names[] = {"tf32", "tf32x3", "f16", "bf16"};

static const kp_param_desc params[] = {
    [TC_A] = {.name = "A",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = KP_DT(KP_F32) | KP_DT(KP_F16) | KP_DT(KP_BF16),
              .doc = "[M, K] ([K, M] with trans_a); row- or column-major, any ld and offset; f16 "
                     "or bf16 tensors run in that precision"},
    [TC_B] = {.name = "B",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = KP_DT(KP_F32) | KP_DT(KP_F16) | KP_DT(KP_BF16),
              .doc = "[K, N] ([N, K] with trans_b); row- or column-major, any ld and offset; "
                     "A's dtype"},
    [TC_C] = {.name = "C",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_INOUT,
              .dtypes = KP_DT(KP_F32) | KP_DT(KP_F16) | KP_DT(KP_BF16),
              .doc = "[M, N], updated in place; row- or column-major; f32, or A's dtype when "
                     "that is f16 or bf16"},
    [TC_ALPHA] = {.name = "alpha",
                  .kind = KP_ARG_KIND_FLOAT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .float_default = 1.0,
                  .doc = "scale of op(A) op(B)"},
    [TC_BETA] = {.name = "beta",
                 .kind = KP_ARG_KIND_FLOAT,
                 .access = KP_ACCESS_IN,
                 .flags = KP_PARAM_OPTIONAL,
                 .float_default = 0.0,
                 .doc = "scale of C; 0 ignores C's old contents (NaN included)"},
    [TC_TRANS_A] = {.name = "trans_a",
                    .kind = KP_ARG_KIND_INT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .doc = "1: op(A) = A^T"},
    [TC_TRANS_B] = {.name = "trans_b",
                    .kind = KP_ARG_KIND_INT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .doc = "1: op(B) = B^T"},
    [TC_PRECISION] = {.name = "precision",
                      .kind = KP_ARG_KIND_INT,
                      .access = KP_ACCESS_IN,
                      .flags = KP_PARAM_OPTIONAL,
                      .doc = "0 tf32, 1 tf32x3 (FP32-level accuracy), 2 f16, 3 bf16 "
                             "(kernelport/ops/tc.h); FP32 accumulation in all"},
};

static const int64_t tiles[] = {32, 64, 128, 256};
static const int64_t depths[] = {8, 16, 32};
static const int64_t x3_depths[] = {0, 8, 16, 32};
static const int64_t warp_rows[] = {16, 32, 64, 128};
static const int64_t switches[] = {0, 1};
static const int64_t warp_cols[] = {8, 16, 32, 64};
static const int64_t stage_counts[] = {0, 2, 3, 4};
static const int64_t wg_rows[] = {128, 256};
static const int64_t wg_cols[] = {64, 128, 192, 256};
static const int64_t wg_stages[] = {2, 3, 4, 5, 6, 7};
static const int64_t half_depths[] = {16, 32};
static const int64_t half_stages[] = {2, 3, 4};

/* The work-group size is (BM/WM)(BN/WN) warps, so no tunable is its size; each combination is
 * checked against the device at launch (tc_tiles_valid). */
static const kp_tunable_desc tunables[] = {
    [TC_TUNE_BM] = {.name = "BM",
                    .default_value = 128,
                    .allowed = tiles,
                    .n_allowed = 4,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc = "rows of C per work-group"},
    [TC_TUNE_BN] = {.name = "BN",
                    .default_value = 128,
                    .allowed = tiles,
                    .n_allowed = 4,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc = "columns of C per work-group"},
    /* The tile sizes reach the compiler from tiles_choose, which may halve them for small
     * products, and BK as the one depth the call's precision uses (tc_depth). */
    [TC_TUNE_BK] = {.name = "BK",
                    .default_value = 16,
                    .allowed = depths,
                    .n_allowed = 3,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc = "depth of each double-buffered slice of A and B in local memory"},
    [TC_TUNE_BK_X3] = {.name = "BK_X3",
                       .default_value = 0,
                       .allowed = x3_depths,
                       .n_allowed = 4,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "BK for tf32x3, whose per-slice sums double the accumulators "
                              "(0: BK)"},
    [TC_TUNE_WM] = {.name = "WM",
                    .default_value = 64,
                    .allowed = warp_rows,
                    .n_allowed = 4,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc = "rows of C per warp (multiples of the mma tile's 16)"},
    [TC_TUNE_WN] = {.name = "WN",
                    .default_value = 32,
                    .allowed = warp_cols,
                    .n_allowed = 4,
                    .flags = KP_TUNABLE_NO_DEFINE,
                    .doc = "columns of C per warp (multiples of the mma tile's 8)"},
    [TC_TUNE_LDSM] = {.name = "LDSM",
                      .default_value = 0,
                      .allowed = switches,
                      .n_allowed = 2,
                      .doc = "1: tf32 fragments of k-contiguous tiles through ldmatrix"},
    [TC_TUNE_SMALL] = {.name = "SMALL",
                       .default_value = 1,
                       .allowed = switches,
                       .n_allowed = 2,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "1: halve the tiles of products that would leave compute units "
                              "idle (decided per call at launch: it depends on the shapes)"},
    [TC_TUNE_BT] = {.name = "BT",
                    .default_value = 0,
                    .allowed = switches,
                    .n_allowed = 2,
                    .doc = "1: B's tile transposed into local memory (k-contiguous there, so "
                           "LDSM reaches B too)"},
    /* Reaches the compiler from tc_program: a call whose operands cannot go as float4 groups
     * stages through registers, where cp.async would need four 4-byte copies per group. */
    [TC_TUNE_STAGES] = {.name = "STAGES",
                        .default_value = 0,
                        .allowed = stage_counts,
                        .n_allowed = 4,
                        .flags = KP_TUNABLE_NO_DEFINE,
                        .doc = "0: slices staged through registers, two buffers; 2-4: a ring of "
                               "that many slices filled by cp.async (where the operands allow "
                               "float4 loads)"},
    /* The WG_ tunables shape tc_gemm_wg and reach the compiler from wg_program. */
    [TC_TUNE_WGMMA] = {.name = "WGMMA",
                       .default_value = 0,
                       .allowed = switches,
                       .n_allowed = 2,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "1: tf32 calls with a k-contiguous A and float4 operands run on "
                              "Hopper's wgmma (sm_90 only; slower than 0 on the H200 so far, "
                              "docs/performance-log/tc.md); the rest as before"},
    [TC_TUNE_WG_BM] = {.name = "WG_BM",
                       .default_value = 128,
                       .allowed = wg_rows,
                       .n_allowed = 2,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "wgmma: rows of C per work-group"},
    [TC_TUNE_WG_BN] = {.name = "WG_BN",
                       .default_value = 128,
                       .allowed = wg_cols,
                       .n_allowed = 4,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "wgmma: columns of C per work-group, 64 per warpgroup"},
    [TC_TUNE_WG_BK] = {.name = "WG_BK",
                       .default_value = 8,
                       .allowed = depths,
                       .n_allowed = 3,
                       .flags = KP_TUNABLE_NO_DEFINE,
                       .doc = "wgmma: depth of each slice in local memory"},
    [TC_TUNE_WG_STAGES] = {.name = "WG_STAGES",
                           .default_value = 6,
                           .allowed = wg_stages,
                           .n_allowed = 6,
                           .flags = KP_TUNABLE_NO_DEFINE,
                           .doc = "wgmma: slices in the cp.async ring"},
    [TC_TUNE_WG_LAG] = {.name = "WG_LAG",
                        .default_value = 1,
                        .allowed = switches,
                        .n_allowed = 2,
                        .flags = KP_TUNABLE_NO_DEFINE,
                        .doc = "wgmma: slices whose products may still run while the next is "
                               "read (the ring copies WG_STAGES - 1 - WG_LAG ahead)"},
    /* The H_ tunables shape tc_gemm on 16-bit tensors (HALF) and reach the compiler from
       tc_program. */
    [TC_TUNE_H_BK] = {.name = "H_BK",
                      .default_value = 32,
                      .allowed = half_depths,
                      .n_allowed = 2,
                      .flags = KP_TUNABLE_NO_DEFINE,
                      .doc = "f16 tensors: depth of each slice in local memory"},
    [TC_TUNE_H_STAGES] = {.name = "H_STAGES",
                          .default_value = 2,
                          .allowed = half_stages,
                          .n_allowed = 3,
                          .flags = KP_TUNABLE_NO_DEFINE,
                          .doc = "f16 tensors: slices in the cp.async ring"},
};

/* ---- the device test ------------------------------------------------------------------------ */

kp_status tc_supported(kp_launch *l)
{
    const kp_device_info *d = tc_host->device(l);
    if (!d || d->type == KP_DEVICE_HOST)
        return KP_OK; /* the reference runs anywhere */
    int cc = 0;
    if (d->vendor == KP_VENDOR_NVIDIA && strncmp(d->arch, "sm_", 3) == 0)
        cc = atoi(d->arch + 3);
    if (cc >= 80)
        return KP_OK;
    return tc_host->fail(l, KP_ERR_UNSUPPORTED,
                         "tc.gemm needs an NVIDIA GPU of compute capability 8.0 or newer (mma.sync "
                         "through inline PTX); %s (%s%s%s) has none",
                         d->name, d->platform, d->arch[0] ? ", " : "", d->arch);
}

/* ---- operand layouts ------------------------------------------------------------------------ */

/* A rank-2 view as a row-major matrix (unit column stride; any stride where there is one
 * column): 1 with *rm the view the kernel reads, strides {row pitch, 1}; 0 when it is not one. A
 * single row's pitch is never used and goes as 0. */
static int row_major(const kp_tensor *t, kp_tensor *rm)
{
    if (t->strides[1] != 1 && t->shape[1] != 1)
        return 0;
    *rm = *t;
    rm->strides[0] = t->shape[0] > 1 ? t->strides[0] : 0;
    rm->strides[1] = 1;
    return rm->strides[0] >= 0;
}

/* Operand `i` of the call as the kernel reads it; a column-major view is read as the row-major
 * view of its transpose, with the transpose flag flipped. */
static kp_status operand(kp_launch *l, const kp_call *call, int i, tc_operand *op, int *trans)
{
    const kp_tensor *t = &call->args[i].tensor;
    kp_tensor tt = kp_tensor_transpose(*t, 0, 1);
    if (row_major(t, &op->view))
        return KP_OK;
    if (row_major(&tt, &op->view)) {
        *trans = !*trans;
        return KP_OK;
    }
    return tc_host->fail(l, KP_ERR_UNSUPPORTED,
                         "%s: strides [%lld, %lld]: tc.gemm needs a unit stride along one "
                         "dimension",
                         params[i].name, (long long)t->strides[0], (long long)t->strides[1]);
}

static kp_status plan_gemm(const kp_call *call, kp_launch *l, tc_plan *p)
{
    const kp_tensor *a = &call->args[TC_A].tensor, *b = &call->args[TC_B].tensor,
                    *c = &call->args[TC_C].tensor;
    int ta = call->args[TC_TRANS_A].i != 0, tb = call->args[TC_TRANS_B].i != 0;
    const char *names[] = {"A", "B", "C"};
    const kp_tensor *all[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        if (all[i]->rank != 2)
            return tc_host->fail(l, KP_ERR_INVALID_ARG, "%s: expected rank 2, got rank %d",
                                 names[i], all[i]->rank);
        /* The count too: a broadcast (stride-0) operand's extents cost no memory. */
        if (kp_tensor_extent(all[i]) > INT_MAX || kp_tensor_numel(all[i]) > INT_MAX)
            return tc_host->fail(l, KP_ERR_UNSUPPORTED,
                                 "%s: views reaching beyond 2^31 elements are not supported",
                                 names[i]);
    }
    for (int i = TC_TRANS_A; i <= TC_TRANS_B; i++)
        if (call->args[i].i != 0 && call->args[i].i != 1)
            return tc_host->fail(l, KP_ERR_INVALID_ARG, "%s: %lld is not 0 or 1", params[i].name,
                                 (long long)call->args[i].i);
    int64_t prec = call->args[TC_PRECISION].i;
    if (prec < 0 || prec >= KP_TC_PRECISION_COUNT)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "precision: %lld is none of 0 tf32, 1 tf32x3, 2 f16, 3 bf16",
                             (long long)prec);
    if (b->dtype != a->dtype)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "B: dtype %s, but A is %s: A and B must have one dtype",
                             kp_dtype_name(b->dtype), kp_dtype_name(a->dtype));
    int half = a->dtype != KP_F32, want = a->dtype == KP_BF16 ? KP_TC_BF16 : KP_TC_F16;
    if (half && prec != want)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "precision: %s takes f32 inputs; %s tensors A and B run only with "
                             "precision %d (%s)",
                             precision_names[prec], kp_dtype_name(a->dtype), want,
                             precision_names[want]);
    if (c->dtype != KP_F32 && c->dtype != a->dtype)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "C: dtype %s with A and B %s: C is f32, or the inputs' own 16-bit "
                             "dtype",
                             kp_dtype_name(c->dtype), kp_dtype_name(a->dtype));
    int64_t m = c->shape[0], n = c->shape[1], k = a->shape[ta ? 0 : 1];
    if (a->shape[ta ? 1 : 0] != m)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "A: op(A) has %lld rows but C has %lld (shape [%lld, %lld], "
                             "trans_a %d)",
                             (long long)a->shape[ta ? 1 : 0], (long long)m, (long long)a->shape[0],
                             (long long)a->shape[1], ta);
    if (b->shape[tb ? 1 : 0] != k || b->shape[tb ? 0 : 1] != n)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "B: op(B) must be [K, N] = [%lld, %lld], got shape [%lld, %lld] "
                             "with trans_b %d",
                             (long long)k, (long long)n, (long long)b->shape[0],
                             (long long)b->shape[1], tb);
    int c_trans = 0, cout = c->dtype == KP_F16 ? 1 : c->dtype == KP_BF16 ? 2 : 0;
    tc_operand oa, ob, oc;
    kp_status st = operand(l, call, TC_C, &oc, &c_trans);
    if (st == KP_OK)
        st = operand(l, call, TC_A, &oa, &ta);
    if (st == KP_OK)
        st = operand(l, call, TC_B, &ob, &tb);
    if (st != KP_OK)
        return st;
    *p = (tc_plan){.m = m,
                   .n = n,
                   .k = k,
                   .ta = ta,
                   .tb = tb,
                   .a = oa,
                   .b = ob,
                   .c = oc,
                   .precision = (int)prec,
                   .half = half,
                   .cout = cout};
    if (c_trans) {
        /* C^T = op(B)^T op(A)^T, in row-major terms. */
        *p = (tc_plan){.m = n,
                       .n = m,
                       .k = k,
                       .ta = !tb,
                       .tb = !ta,
                       .a = ob,
                       .b = oa,
                       .c = oc,
                       .precision = (int)prec,
                       .half = half,
                       .cout = cout};
    }
    return KP_OK;
}

static kp_status gemm_check(const kp_call *call, kp_launch *l)
{
    tc_plan p;
    return plan_gemm(call, l, &p); /* the core asks tc_supported next */
}

/* ---- launch --------------------------------------------------------------------------------- */

/* The slice depth a precision runs with: BK, or BK_X3 for tf32x3 when set. */
static int64_t tc_depth(kp_launch *l, int prec)
{
    int64_t x3 = tc_host->tunable_index(l, TC_TUNE_BK_X3);
    return prec == KP_TC_TF32X3 && x3 > 0 ? x3 : tc_host->tunable_index(l, TC_TUNE_BK);
}

/* The tiles of one launch: work-group tile BM x BN, slice depth BK, warp tile WM x WN (mma.sync);
 * lag: wgmma's slices in flight. */
typedef struct tc_tiles {
    int64_t bm, bn, bk, wm, wn, wg, stages, lag;
} tc_tiles;

static kp_status tiles_refuse(kp_launch *l, const tc_tiles *t, int wgmma, const char *why)
{
    if (wgmma)
        return tc_host->fail(l, KP_ERR_INVALID_ARG,
                             "tuning WG_BM=%lld WG_BN=%lld WG_BK=%lld WG_STAGES=%lld WG_LAG=%lld "
                             "(tiles after SMALL): %s",
                             (long long)t->bm, (long long)t->bn, (long long)t->bk,
                             (long long)t->stages, (long long)t->lag, why);
    return tc_host->fail(l, KP_ERR_INVALID_ARG,
                         "tuning BM=%lld BN=%lld BK=%lld WM=%lld WN=%lld: %s", (long long)t->bm,
                         (long long)t->bn, (long long)t->bk, (long long)t->wm, (long long)t->wn,
                         why);
}

/*
 * The tunables' tiles for this call, checked against the kernel's rules and the device. With
 * SMALL, a product that would give fewer work-groups than the device has compute units (1024^3
 * in 128 x 128 tiles: 64 work-groups for an H200's 132) runs in halved tiles and warp tiles, as
 * many warps, down to 32 x 32.
 */
static kp_status tiles_choose(kp_launch *l, const tc_plan *p, tc_tiles *t)
{
    t->bm = tc_host->tunable_index(l, TC_TUNE_BM);
    t->bn = tc_host->tunable_index(l, TC_TUNE_BN);
    t->bk = p->half ? tc_host->tunable_index(l, TC_TUNE_H_BK) : tc_depth(l, p->precision);
    t->wm = tc_host->tunable_index(l, TC_TUNE_WM);
    t->wn = tc_host->tunable_index(l, TC_TUNE_WN);
    const kp_device_info *d = tc_host->device(l);
    /* Values per group a work-item moves: a float4, or 8 halves (16 bytes either way). */
    int64_t group = p->half ? 8 : 4;
    /* Halving both tiles keeps the warp count; the halves must still give each work-item
     * whole groups of a slice. */
    int64_t warps = t->bm % t->wm == 0 && t->bn % t->wn == 0 ? t->bm / t->wm * (t->bn / t->wn) : 0;
    if (tc_host->tunable_index(l, TC_TUNE_SMALL) && warps > 0)
        while ((p->m + t->bm - 1) / t->bm * ((p->n + t->bn - 1) / t->bn) < d->compute_units &&
               t->bm >= 64 && t->bn >= 64 && t->wm >= 32 && t->wn >= 16 &&
               t->bm / 2 * t->bk % (group * 32 * warps) == 0 &&
               t->bn / 2 * t->bk % (group * 32 * warps) == 0) {
            t->bm /= 2, t->bn /= 2, t->wm /= 2, t->wn /= 2;
        }
    int kstep = p->precision >= KP_TC_F16 ? 16 : 8;
    t->wg = t->bm % t->wm == 0 && t->bn % t->wn == 0 ? t->bm / t->wm * (t->bn / t->wn) * 32 : 0;
    /* The tiles' sizes in values, pads included (tc.cl: TILE_FLOATS, H_TILE). */
    int bt = !p->half && tc_host->tunable_index(l, TC_TUNE_BT);
    int64_t kpad = p->half ? 8 : 4;
    int64_t a_values = !p->ta ? t->bm * (t->bk + kpad) : t->bk * (t->bm + 8),
            b_values = p->tb || bt ? t->bn * (t->bk + kpad) : t->bk * (t->bn + 8);
    t->stages = tc_host->tunable_index(l, p->half ? TC_TUNE_H_STAGES : TC_TUNE_STAGES);
    int64_t local = (t->stages ? t->stages : 2) * (a_values + b_values) * (p->half ? 2 : 4);
    const char *why = NULL;
    char buf[160];
    if (t->wg == 0)
        why = "BM must be a multiple of WM and BN of WN";
    else if ((size_t)t->wg > d->max_workgroup) {
        snprintf(buf, sizeof buf, "%lld work-items per work-group, over the device's %zu",
                 (long long)t->wg, d->max_workgroup);
        why = buf;
    } else if (t->bm * t->bk % (group * t->wg) != 0 || t->bn * t->bk % (group * t->wg) != 0)
        why = p->half ? "BM H_BK and BN H_BK must be multiples of 8 values per work-item"
                      : "BM BK and BN BK must be multiples of 4 floats per work-item";
    else if (t->bk % kstep != 0) {
        snprintf(buf, sizeof buf, "BK must be a multiple of %d for %s", kstep,
                 precision_names[p->precision]);
        why = buf;
    } else if ((uint64_t)local > d->local_mem) {
        snprintf(buf, sizeof buf, "%lld bytes of local memory, over the device's %llu",
                 (long long)local, (unsigned long long)d->local_mem);
        why = buf;
    }
    return why ? tiles_refuse(l, t, 0, why) : KP_OK;
}

/* Whether a plan runs on tc_gemm_wg: WGMMA asked for, an sm_90 device (wgmma is sm_90a's; later
 * architectures lack it), tf32, A's rows along k (K-major for wgmma) and float4 operands. */
static int wgmma_fits(kp_launch *l, const tc_plan *p, int vec)
{
    const kp_device_info *d = tc_host->device(l);
    return !p->half && tc_host->tunable_index(l, TC_TUNE_WGMMA) && d->vendor == KP_VENDOR_NVIDIA &&
           strcmp(d->arch, "sm_90") == 0 && p->precision == KP_TC_TF32 && !p->ta && vec;
}

/* tc_gemm_wg's tiles, checked like tiles_choose's. With SMALL, products that would leave compute
 * units idle run in 128-row, then narrower, tiles. */
static kp_status wg_tiles_choose(kp_launch *l, const tc_plan *p, tc_tiles *t)
{
    const kp_device_info *d = tc_host->device(l);
    *t = (tc_tiles){.bm = tc_host->tunable_index(l, TC_TUNE_WG_BM),
                    .bn = tc_host->tunable_index(l, TC_TUNE_WG_BN),
                    .bk = tc_host->tunable_index(l, TC_TUNE_WG_BK),
                    .stages = tc_host->tunable_index(l, TC_TUNE_WG_STAGES),
                    .lag = tc_host->tunable_index(l, TC_TUNE_WG_LAG)};
    if (tc_host->tunable_index(l, TC_TUNE_SMALL))
        while ((p->m + t->bm - 1) / t->bm * ((p->n + t->bn - 1) / t->bn) < d->compute_units) {
            /* Fewer rows must still give each work-item whole float4 groups of A's slice;
             * fewer warpgroups always do. */
            if (t->bm > 128 && 128 * t->bk / 4 % (t->bn / 64 * 128) == 0)
                t->bm = 128;
            else if (t->bn > 64)
                t->bn = t->bn / 128 * 64;
            else
                break;
        }
    t->wg = t->bn / 64 * 128;
    int64_t local = t->stages * (t->bm + t->bn) * t->bk * 4;
    const char *why = NULL;
    char buf[160];
    if ((size_t)t->wg > d->max_workgroup) {
        snprintf(buf, sizeof buf, "%lld work-items per work-group, over the device's %zu",
                 (long long)t->wg, d->max_workgroup);
        why = buf;
    } else if (t->bm * t->bk % (4 * t->wg) != 0)
        why = "WG_BM WG_BK must be a multiple of 4 floats per work-item";
    else if (t->stages - 1 - t->lag < 1)
        why = "WG_STAGES - 1 - WG_LAG must leave a slice to copy ahead";
    else if ((uint64_t)local > d->local_mem) {
        snprintf(buf, sizeof buf, "%lld bytes of local memory, over the device's %llu",
                 (long long)local, (unsigned long long)d->local_mem);
        why = buf;
    }
    return why ? tiles_refuse(l, t, 1, why) : KP_OK;
}

/* The program of a plan's variant and tiles; vec: every operand's offset and row pitch are
 * multiples of 4 floats (8 halves). Without vec f32 slices stage through registers (STAGES 0):
 * on the H200 cp.async's 4-byte copies made 1031 x 2053 x 1019 1-9% slower. 16-bit tensors
 * always run a cp.async ring (tc.cl: HALF). */
static kp_status tc_program(kp_launch *l, const tc_plan *p, const tc_tiles *t, int vec,
                            kp_clkernel **k)
{
    char options[224];
    snprintf(options, sizeof options,
             "-D TC_PTX=1 -D HALF=%d -D COUT=%d -D TA=%d -D TB=%d -D PREC=%d -D VEC=%d -D BM=%d "
             "-D BN=%d -D BK=%d -D WM=%d -D WN=%d -D STAGES=%d",
             p->half, p->cout, p->ta, p->tb, p->precision, vec, (int)t->bm, (int)t->bn, (int)t->bk,
             (int)t->wm, (int)t->wn, vec || p->half ? (int)t->stages : 0);
    return tc_host->cl_kernel(l, "tc_gemm", options, k);
}

static kp_status wg_program(kp_launch *l, const tc_plan *p, const tc_tiles *t, kp_clkernel **k)
{
    char options[224];
    snprintf(options, sizeof options,
             "-D TC_PTX=1 -D WGMMA=1 -D TB=%d -D PREC=%d -D VEC=1 -D BM=%d -D BN=%d -D BK=%d "
             "-D STAGES=%d -D LAG=%d",
             p->tb, p->precision, (int)t->bm, (int)t->bn, (int)t->bk, (int)t->stages, (int)t->lag);
    return tc_host->cl_kernel_build(l, "tc_gemm_wg", options, KP_BUILD_PTX_SM90A, k);
}

/* The kernel, built, and the tiles a plan runs with. */
static kp_status variant_choose(kp_launch *l, const tc_plan *p, int vec, tc_tiles *t,
                                kp_clkernel **k)
{
    int wg = wgmma_fits(l, p, vec);
    kp_status st = wg ? wg_tiles_choose(l, p, t) : tiles_choose(l, p, t);
    if (st != KP_OK)
        return st;
    return wg ? wg_program(l, p, t, k) : tc_program(l, p, t, vec, k);
}

static kp_status gemm_enqueue(const kp_call *call, kp_launch *l)
{
    tc_plan p;
    kp_status st = plan_gemm(call, l, &p);
    if (st != KP_OK || p.m == 0 || p.n == 0)
        return st;
    int64_t group = p.half ? 8 : 4;
    const kp_tensor *a = &p.a.view, *b = &p.b.view;
    int vec = a->offset % group == 0 && a->strides[0] % group == 0 && b->offset % group == 0 &&
              b->strides[0] % group == 0;
    tc_tiles t;
    kp_clkernel *k = NULL;
    st = variant_choose(l, &p, vec, &t, &k);
    if (st != KP_OK)
        return st;
    kp_clargs args = kp_clargs_for(tc_host, l, k);
    kp_clargs_int(&args, (int)p.m);
    kp_clargs_int(&args, (int)p.n);
    kp_clargs_int(&args, (int)p.k);
    kp_clargs_float(&args, (float)call->args[TC_ALPHA].f);
    kp_clargs_float(&args, (float)call->args[TC_BETA].f);
    kp_clargs_tensor(&args, a, 2);
    kp_clargs_tensor(&args, b, 2);
    kp_clargs_tensor(&args, &p.c.view, 2);
    size_t groups = (size_t)((p.m + t.bm - 1) / t.bm) * (size_t)((p.n + t.bn - 1) / t.bn);
    size_t global = groups * (size_t)t.wg, local = (size_t)t.wg;
    return kp_clargs_enqueue(&args, 1, &global, &local);
}

/* Builds the common variant ahead of use: row-major operands, tf32, float4 loads, full tiles. */
static kp_status gemm_warmup(kp_launch *l)
{
    tc_plan p = {.m = 1 << 14, .n = 1 << 14, .k = 1 << 14, .precision = KP_TC_TF32};
    tc_tiles t;
    kp_clkernel *k;
    return variant_choose(l, &p, 1, &t, &k);
}

const kp_kernel_desc tc_gemm_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "tc.gemm",
    .summary = "C = alpha op(A) op(B) + beta C on NVIDIA tensor cores: tf32, tf32x3, f16, bf16 "
               "inputs, f32 accumulation",
    .params = params,
    .n_params = TC_NPARAMS,
    .n_tunables = TC_N_TUNABLES,
    .tunables = tunables,
    .source = kp_kernel_tc_cl,
    .source_name = "tc.cl",
    .entry = "tc_gemm",
    .check = gemm_check,
    .enqueue = gemm_enqueue,
    .reference = tc_gemm_reference,
    .sample = tc_gemm_sample,
    .cost = tc_gemm_cost,
    .verify_sizes = tc_verify_sizes,
    .bench_sizes = tc_bench_sizes,
    .tolerance = tc_gemm_tolerance,
    .warmup = gemm_warmup,
    .supported = tc_supported,
};
