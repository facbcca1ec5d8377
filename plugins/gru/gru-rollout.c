/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout: the ensemble world-model rollout's descriptor, shape checks and launch planning. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>

#include "gru-kernels.h"
#include "gru-rollout.h"

#define T_F32 KP_DT(KP_F32)
#define TENSOR(idx, nm, acc, flg, text)                                                            \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_TENSOR,                                                           \
             .access = acc,                                                                        \
             .dtypes = T_F32,                                                                      \
             .flags = flg,                                                                         \
             .doc = text}
#define INT(idx, nm, flg, def, text)                                                               \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_INT,                                                              \
             .access = KP_ACCESS_IN,                                                               \
             .flags = flg,                                                                         \
             .int_default = def,                                                                   \
             .doc = text}

const kp_param_desc gru_rollout_params[RO_NPARAMS] = {
    TENSOR(RO_W_IH, "w_ih", KP_ACCESS_IN, 0, "[E, 3H, I], I = F + 1 + S; gates r, z, n (PyTorch)"),
    TENSOR(RO_W_HH, "w_hh", KP_ACCESS_IN, 0, "[E, 3H, H]; gates r, z, n"),
    TENSOR(RO_B_IH, "b_ih", KP_ACCESS_IN, KP_PARAM_OPTIONAL, "[E, 3H]; omitted: zero"),
    TENSOR(RO_B_HH, "b_hh", KP_ACCESS_IN, KP_PARAM_OPTIONAL, "[E, 3H]; omitted: zero"),
    TENSOR(RO_W_P, "w_p", KP_ACCESS_IN, KP_PARAM_OPTIONAL,
           "[E, S, H] prior head; required when S > 0"),
    TENSOR(RO_B_P, "b_p", KP_ACCESS_IN, KP_PARAM_OPTIONAL, "[E, S]; required when S > 0"),
    TENSOR(RO_W_Y, "w_y", KP_ACCESS_IN, 0, "[E, H + S] loss head (S comes from its width)"),
    TENSOR(RO_B_Y, "b_y", KP_ACCESS_IN, 0, "[E]"),
    TENSOR(RO_F, "f", KP_ACCESS_IN, 0, "[E or 1, B, F] static features (1: shared by members)"),
    TENSOR(RO_Y0, "y0", KP_ACCESS_IN, 0, "[B] the last observed loss"),
    TENSOR(RO_Z0, "z0", KP_ACCESS_IN, KP_PARAM_OPTIONAL, "[E, B, S]; required when S > 0"),
    TENSOR(RO_H0, "h0", KP_ACCESS_IN, 0, "[E, B, H]"),
    INT(RO_T, "T", 0, 0, "steps to roll out, >= 1"),
    INT(RO_MODE, "mode", KP_PARAM_OPTIONAL, RO_MODE_SAMPLE,
        "z_t: 0 sample (one-hot draw), 1 mean (probabilities), 2 argmax (one-hot)"),
    INT(RO_SEED, "seed", KP_PARAM_OPTIONAL, 0, "random stream of mode 0 (Philox4x32-10 key)"),
    INT(RO_LBR, "linear_before_reset", KP_PARAM_OPTIONAL, 1,
        "1: n = tanh(W_in x + b_in + r (W_hn h + b_hn)) (PyTorch); 0: W_hn (r h) (ONNX)"),
    TENSOR(RO_Y, "y", KP_ACCESS_OUT, 0, "[E, B, T] predicted losses"),
    TENSOR(RO_H_T, "h_T", KP_ACCESS_OUT, 0, "[E, B, H] the last hidden state"),
    TENSOR(RO_ENTROPY, "entropy", KP_ACCESS_OUT, KP_PARAM_OPTIONAL,
           "[E, B, T] entropy of softmax(prior logits), nats (0 when S = 0)"),
    TENSOR(RO_HNORM, "hnorm", KP_ACCESS_OUT, KP_PARAM_OPTIONAL, "[E, B, T] |h_t|_2"),
};

/* Tunable indices, in the order of `tunables`. */
enum { TUNE_WG, TUNE_LANES, TUNE_VEC, TUNE_GRID, TUNE_COUNT };
static const int64_t workgroups[] = {1, 32, 64, 128, 256, 512, 1024};
static const int64_t lanes[] = {0, 1, 2, 4, 8, 16};
static const int64_t vecs[] = {0, 1, 2, 4, 8, 16};
static const int64_t switches[] = {0, 1};
/*
 * LANES and VEC default to 0, "by device type", as the cell kernels' tunables do: a CPU wants one
 * work-item per row reading 16 floats at a time, a GPU several work-items per row reading
 * consecutive floats (coalesced), and the two orders differ by several times on each
 * (docs/kernels/gru.md). The resolve hook turns 0 into the device's value, which the core compiles
 * in (-D) and `kernelport explain` shows. GRID is not resolved there: its 1 is a request, which
 * enqueue honours where the device runs gru.rollout_grid and the call's E B leave it room.
 */
static const kp_tunable_desc tunables[] = {
    [TUNE_WG] = {.name = "WG",
                 .default_value = 256,
                 .allowed = workgroups,
                 .n_allowed = sizeof workgroups / sizeof workgroups[0],
                 .flags = KP_TUNABLE_WORKGROUP,
                 .doc = "work-items per trajectory (one work-group runs one (member, trajectory)); "
                        "1: one work-item runs it in plain loops, without barriers (CPUs)"},
    [TUNE_LANES] = {.name = "LANES",
                    .default_value = 0,
                    .allowed = lanes,
                    .n_allowed = sizeof lanes / sizeof lanes[0],
                    .doc = "work-items that share one weight row in a matrix-vector pass; 0: 1 on "
                           "CPUs, 16 on others, or the most below 16 whose partial sums at the "
                           "resolved WG leave room in local memory for H = 1024 (8 with 32 KiB)"},
    [TUNE_VEC] = {.name = "VEC",
                  .default_value = 0,
                  .allowed = vecs,
                  .n_allowed = sizeof vecs / sizeof vecs[0],
                  .doc = "floats each lane loads at once (vloadN); 0: 16 on CPUs, 1 on others"},
    [TUNE_GRID] = {.name = "GRID",
                   .default_value = 0,
                   .allowed = switches,
                   .n_allowed = 2,
                   .flags = KP_TUNABLE_NO_DEFINE,
                   .doc = "1: run as gru.rollout_grid (several work-groups per trajectory, with "
                          "its own tunables); 0: one work-group per trajectory"},
};

static int64_t lanes_of(kp_launch *l)
{
    return gru_host->tunable_index(l, TUNE_LANES);
}

static int64_t vec_of(kp_launch *l)
{
    return gru_host->tunable_index(l, TUNE_VEC);
}

void gru_rollout_dims(const kp_call *call, ro_dims *d)
{
    const kp_tensor *whh = &call->args[RO_W_HH].tensor, *wy = &call->args[RO_W_Y].tensor;
    const kp_tensor *f = &call->args[RO_F].tensor, *h0 = &call->args[RO_H0].tensor;
    d->E = whh->shape[0];
    d->H = whh->shape[2];
    d->S = wy->shape[1] - d->H;
    d->F = f->shape[2];
    d->B = h0->shape[1];
    d->T = call->args[RO_T].i;
    d->I = d->F + 1 + d->S;
}

/* "[3, 2, 7]" into buf. */
/* Fails unless argument `i` has shape `dims` (`names` spells it: "E, B, H"). */
static kp_status expect(const kp_call *call, kp_launch *l, int i, const char *names, int rank,
                        const int64_t *dims)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "[%s]", names);
    return gru_host->check_shape(l, call->desc->params[i].name, &call->args[i].tensor, rank, dims,
                                 pattern);
}

/* The weight matrices are read row by row with vector loads: their rows must be contiguous. */
static kp_status expect_rows(const kp_call *call, kp_launch *l, int i)
{
    const kp_tensor *t = &call->args[i].tensor;
    if (t->shape[t->rank - 1] <= 1 || t->strides[t->rank - 1] == 1)
        return KP_OK;
    return gru_host->fail(l, KP_ERR_INVALID_ARG,
                          "%s: the last dimension must be contiguous (stride 1), got stride %lld",
                          call->desc->params[i].name, (long long)t->strides[t->rank - 1]);
}

/* Bytes of the local buffer the kernel carves (the top of gru_rollout): h, r h, logits, [y; z]
 * (or f), and two partial-sum buffers of WG (LANES + 1). */
static uint64_t local_bytes(const ro_dims *d, int64_t wg, int64_t nlanes)
{
    int64_t vin = d->F > 1 + d->S ? d->F : 1 + d->S;
    return (uint64_t)(2 * d->H + d->S + vin + 2 * wg * (nlanes + 1)) * sizeof(float);
}

/* Floats of global scratch per trajectory: gru_rollout's cf, the dense input side and the gate
 * sums (3H each) and the input side of n (H); WG 1's h, cf, gate sums, n's input side, r (.) h,
 * the logits and [f or y; z] (the top of its gru_rollout). */
static double scratch_floats(const ro_dims *d)
{
    double v = d->F > 1 + d->S ? (double)d->F : (double)(1 + d->S);
    double group = 10.0 * (double)d->H, serial = 9.0 * (double)d->H + (double)d->S + v;
    return group > serial ? group : serial;
}

/* The kernel's own __local arrays: the reduction blocks (4 x 32 floats) and the category. */
#define STATIC_LOCAL_BYTES (4 * 32 * sizeof(float) + sizeof(int))

/*
 * LANES and VEC 0, by device: on CPUs one work-item per row reading 16 floats at once; elsewhere
 * LANES work-items per row reading one float each, LANES 16 where the two partial-sum buffers of
 * WG (LANES + 1) floats leave local memory room for the vectors of H = 1024 (S 0, F 1), else the
 * most lanes that do. At WG 256 LANES 16 needs 42.5 KiB so counted (NVIDIA's 48 KiB, AMD's and
 * Intel's 64 KiB take it; its buffers alone, 34.5 KiB, overflow a 32 KiB device such as
 * Oclgrind's at any H, where LANES 8 leaves room up to H = 1727). WG is resolved before LANES
 * (the core resolves tunables in order), so this is the WG the kernel runs with, unless the
 * compiled kernel's limit lowers it later, which only frees local memory.
 */
static const char *resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static _Thread_local char why[160];
    if (value != 0 || (index != TUNE_LANES && index != TUNE_VEC))
        return NULL;
    const kp_device_info *d = gru_host->device(l);
    if (d && d->type == KP_DEVICE_CPU) {
        *resolved = index == TUNE_LANES ? 1 : 16;
        return index == TUNE_LANES ? "1 on CPUs (a work-item streams its own row)"
                                   : "16 on CPUs (one work-item's row, 16 floats a load)";
    }
    if (index == TUNE_VEC) {
        *resolved = 1;
        return "1 on devices other than CPUs (a row's lanes read consecutive floats)";
    }
    *resolved = 16;
    int64_t wg = gru_host->tunable_index(l, TUNE_WG);
    const ro_dims room = {.H = 1024, .S = 0, .F = 1};
    if (!d || d->type == KP_DEVICE_HOST || !d->local_mem || wg <= 1 ||
        local_bytes(&room, wg, 16) + STATIC_LOCAL_BYTES <= d->local_mem)
        return "16 on devices other than CPUs";
    for (int64_t nl = 8; nl >= 1; nl /= 2)
        if (local_bytes(&room, wg, nl) + STATIC_LOCAL_BYTES <= d->local_mem) {
            *resolved = nl;
            snprintf(why, sizeof why,
                     "%lld on this device: LANES 16 at WG %lld would leave its %.1f KiB of "
                     "local memory no room for H = 1024",
                     (long long)nl, (long long)wg, (double)d->local_mem / 1024);
            return why;
        }
    return "16 on devices other than CPUs (fewer lanes leave no room for H = 1024 either)";
}

static kp_status check_heads(const kp_call *call, kp_launch *l, const ro_dims *d)
{
    const kp_value *a = call->args;
    const int present[] = {RO_W_P, RO_B_P, RO_Z0};
    const char *const what[] = {"the prior head", "the prior head's bias", "the initial state"};
    for (int i = 0; i < 3; i++) {
        const kp_value *v = &a[present[i]];
        if (d->S > 0 && !v->present)
            return gru_host->fail(l, KP_ERR_INVALID_ARG,
                                  "%s: %s is required when S = %lld (w_y has H + S = %lld columns)",
                                  call->desc->params[present[i]].name, what[i], (long long)d->S,
                                  (long long)(d->H + d->S));
        if (d->S == 0 && v->present && kp_tensor_numel(&v->tensor) != 0)
            return gru_host->fail(
                l, KP_ERR_INVALID_ARG,
                "%s: must be omitted or empty when S = 0 (w_y has H = %lld columns)",
                call->desc->params[present[i]].name, (long long)d->H);
    }
    if (d->S == 0)
        return KP_OK;
    kp_status st = expect(call, l, RO_W_P, "E, S, H", 3, (int64_t[]){d->E, d->S, d->H});
    if (st == KP_OK)
        st = expect_rows(call, l, RO_W_P);
    if (st == KP_OK)
        st = expect(call, l, RO_B_P, "E, S", 2, (int64_t[]){d->E, d->S});
    if (st == KP_OK)
        st = expect(call, l, RO_Z0, "E, B, S", 3, (int64_t[]){d->E, d->B, d->S});
    return st;
}

kp_status gru_rollout_check_shapes(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *whh = &a[RO_W_HH].tensor, *wy = &a[RO_W_Y].tensor, *f = &a[RO_F].tensor,
                    *h0 = &a[RO_H0].tensor;
    char got[160];
    /* The tensors that define E, H, S, F and B first, each named in the message. */
    if (whh->rank != 3 || whh->shape[1] % 3 || whh->shape[1] / 3 != whh->shape[2] ||
        whh->shape[0] < 1 || whh->shape[2] < 1)
        return gru_host->fail(
            l, KP_ERR_INVALID_ARG,
            "w_hh: expected [E, 3H, H] with E, H >= 1 (it defines E and H), got %s",
            kp_tensor_describe(whh, got, sizeof got));
    if (wy->rank != 2 || wy->shape[0] != whh->shape[0] || wy->shape[1] < whh->shape[2])
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "w_y: expected [E, H + S] = [%lld, %lld + S] with S >= 0 (it defines "
                              "S), got %s",
                              (long long)whh->shape[0], (long long)whh->shape[2],
                              kp_tensor_describe(wy, got, sizeof got));
    if (f->rank != 3)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "f: expected [E or 1, B, F] (it defines F), got %s",
                              kp_tensor_describe(f, got, sizeof got));
    if (h0->rank != 3 || h0->shape[1] < 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "h0: expected [E, B, H] with B >= 1 (it defines B), got %s",
                              kp_tensor_describe(h0, got, sizeof got));
    /* Broadcast views cost no memory whatever their extents, and the kernel takes them as int
     * (sums such as F + 1 + S then fit int64 too). */
    const int defining[] = {RO_W_HH, RO_W_Y, RO_F, RO_H0};
    for (int i = 0; i < 4; i++) {
        const kp_tensor *t = &a[defining[i]].tensor;
        for (int32_t dim = 0; dim < t->rank; dim++)
            if (t->shape[dim] > INT_MAX)
                return gru_host->fail(
                    l, KP_ERR_UNSUPPORTED, "%s: extents past 2^31 - 1 are not supported, got %s",
                    gru_rollout_params[defining[i]].name, kp_tensor_describe(t, got, sizeof got));
    }
    ro_dims d;
    gru_rollout_dims(call, &d);
    if (f->shape[0] != 1 && f->shape[0] != d.E)
        return gru_host->fail(
            l, KP_ERR_INVALID_ARG,
            "f: its first dimension must be E = %lld or 1 (shared by the members), "
            "got %lld",
            (long long)d.E, (long long)f->shape[0]);
    if (f->shape[1] != d.B)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "f: expected [E or 1, B, F] with B = %lld (h0's), got %s",
                              (long long)d.B, kp_tensor_describe(f, got, sizeof got));
    if (a[RO_T].i < 1 || a[RO_T].i > INT_MAX)
        return gru_host->fail(l, KP_ERR_INVALID_ARG, "T: must be 1..%d, got %lld", INT_MAX,
                              (long long)a[RO_T].i);
    if (a[RO_MODE].i < 0 || a[RO_MODE].i > 2)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "mode: %lld is not 0 (sample), 1 (mean) or 2 (argmax)",
                              (long long)a[RO_MODE].i);
    if (a[RO_LBR].i != 0 && a[RO_LBR].i != 1)
        return gru_host->fail(l, KP_ERR_INVALID_ARG,
                              "linear_before_reset: must be 0 or 1, got %lld",
                              (long long)a[RO_LBR].i);
    const kp_tensor *wih = &a[RO_W_IH].tensor;
    if (wih->rank == 3 && wih->shape[0] == d.E && wih->shape[1] == 3 * d.H && wih->shape[2] != d.I)
        return gru_host->fail(
            l, KP_ERR_INVALID_ARG,
            "w_ih: expected I = F + 1 + S = %lld + 1 + %lld = %lld columns, got %lld",
            (long long)d.F, (long long)d.S, (long long)d.I, (long long)wih->shape[2]);
    kp_status st = expect(call, l, RO_W_IH, "E, 3H, I", 3, (int64_t[]){d.E, 3 * d.H, d.I});
    if (st == KP_OK)
        st = expect_rows(call, l, RO_W_IH);
    if (st == KP_OK)
        st = expect_rows(call, l, RO_W_HH);
    if (st == KP_OK && a[RO_B_IH].present)
        st = expect(call, l, RO_B_IH, "E, 3H", 2, (int64_t[]){d.E, 3 * d.H});
    if (st == KP_OK && a[RO_B_HH].present)
        st = expect(call, l, RO_B_HH, "E, 3H", 2, (int64_t[]){d.E, 3 * d.H});
    if (st == KP_OK)
        st = check_heads(call, l, &d);
    if (st == KP_OK)
        st = expect(call, l, RO_B_Y, "E", 1, (int64_t[]){d.E});
    if (st == KP_OK)
        st = expect(call, l, RO_Y0, "B", 1, (int64_t[]){d.B});
    if (st == KP_OK)
        st = expect(call, l, RO_H0, "E, B, H", 3, (int64_t[]){d.E, d.B, d.H});
    if (st == KP_OK)
        st = expect(call, l, RO_Y, "E, B, T", 3, (int64_t[]){d.E, d.B, d.T});
    if (st == KP_OK)
        st = expect(call, l, RO_H_T, "E, B, H", 3, (int64_t[]){d.E, d.B, d.H});
    if (st == KP_OK && a[RO_ENTROPY].present)
        st = expect(call, l, RO_ENTROPY, "E, B, T", 3, (int64_t[]){d.E, d.B, d.T});
    if (st == KP_OK && a[RO_HNORM].present)
        st = expect(call, l, RO_HNORM, "E, B, T", 3, (int64_t[]){d.E, d.B, d.T});
    if (st != KP_OK)
        return st;

    /* The kernel indexes with int: every view, and the scratch of every trajectory. */
    for (int i = 0; i < RO_NPARAMS; i++)
        if (a[i].present && gru_rollout_params[i].kind == KP_ARG_KIND_TENSOR &&
            kp_tensor_extent(&a[i].tensor) > INT_MAX)
            return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                                  "%s: views over 2^31 elements are not supported",
                                  gru_rollout_params[i].name);
    if ((double)d.E * (double)d.B * scratch_floats(&d) > INT_MAX)
        return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                              "E * B trajectories of %.0f floats of scratch each exceed what int "
                              "indexing reaches",
                              scratch_floats(&d));
    return KP_OK;
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    kp_status st = gru_rollout_check_shapes(call, l);
    if (st != KP_OK || (gru_host->tunable_index(l, TUNE_GRID) && gru_rollout_grid_spreads(call, l)))
        return st; /* gru.rollout_grid checks its own limits */
    ro_dims d;
    gru_rollout_dims(call, &d);
    const kp_device_info *dev = gru_host->device(l);
    int64_t wg = gru_host->tunable_index(l, TUNE_WG);
    if (dev && dev->type != KP_DEVICE_HOST && dev->local_mem > 0 && wg > 1) {
        int64_t nl = lanes_of(l);
        uint64_t need = local_bytes(&d, wg, nl) + STATIC_LOCAL_BYTES;
        if (need > dev->local_mem)
            return gru_host->fail(l, KP_ERR_UNSUPPORTED,
                                  "H = %lld, S = %lld, F = %lld need %.1f KiB of local memory per "
                                  "work-group with WG = %lld, LANES = %lld, but %s has %.1f KiB; "
                                  "set smaller WG or LANES tunables",
                                  (long long)d.H, (long long)d.S, (long long)d.F,
                                  (double)need / 1024, (long long)wg, (long long)nl, dev->name,
                                  (double)dev->local_mem / 1024);
    }
    return KP_OK;
}

void gru_rollout_args(kp_clargs *a, const kp_call *call)
{
    static const struct {
        int index;
        uint32_t rank;
    } tensors[] = {{RO_W_IH, 3}, {RO_W_HH, 3}, {RO_B_IH, 2},    {RO_B_HH, 2},
                   {RO_W_P, 3},  {RO_B_P, 2},  {RO_W_Y, 2},     {RO_B_Y, 1},
                   {RO_F, 3},    {RO_Y0, 1},   {RO_Z0, 3},      {RO_H0, 3},
                   {RO_Y, 3},    {RO_H_T, 3},  {RO_ENTROPY, 3}, {RO_HNORM, 3}};
    const kp_value *v = call->args;
    ro_dims d;
    gru_rollout_dims(call, &d);
    uint64_t seed = (uint64_t)v[RO_SEED].i;
    kp_clargs_int(a, (int32_t)d.B);
    kp_clargs_int(a, (int32_t)d.F);
    kp_clargs_int(a, (int32_t)d.H);
    kp_clargs_int(a, (int32_t)d.S);
    kp_clargs_int(a, (int32_t)d.T);
    kp_clargs_int(a, (int32_t)v[RO_MODE].i);
    kp_clargs_int(a, (int32_t)v[RO_LBR].i);
    kp_clargs_uint(a, (uint32_t)seed);
    kp_clargs_uint(a, (uint32_t)(seed >> 32));
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) {
        const kp_value *t = &v[tensors[i].index];
        kp_tensor view = t->tensor;
        /* A shared f ([1, B, F]) is read by every member: a broadcast [E, B, F], stride 0. */
        if (tensors[i].index == RO_F && view.shape[0] == 1) {
            view.shape[0] = d.E;
            view.strides[0] = 0;
        }
        /* Omitted, or empty (w_p, b_p and z0 when S = 0, f when F = 0): never read, so an empty
         * view on w_hh's buffer, whatever the rank such an empty tensor came with. */
        int given = t->present && kp_tensor_numel(&t->tensor) > 0;
        gru_clargs_tensor(a, given ? &view : NULL, tensors[i].rank, v[RO_W_HH].tensor.buffer);
    }
}

/* GRID 1 runs gru.rollout_grid where it spreads a trajectory over two work-groups or more. On a
 * device it does not run on: this kernel, with one warning a process (a manifest written for
 * another machine is not an error here); with too many trajectories for two groups each: this
 * kernel, silently (a property of the call, documented). */
static int grid_route(const kp_call *call, kp_launch *l)
{
    if (!gru_host->tunable_index(l, TUNE_GRID))
        return 0;
    const kp_device_info *d = gru_host->device(l);
    if (gru_rollout_grid_runs_on(d))
        return gru_rollout_grid_spreads(call, l);
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1))
        gru_host->log(l, KP_LOG_WARN,
                      "gru.rollout: GRID 1 asked for, but gru.rollout_grid does not run on CPUs "
                      "(%s): running one work-group per trajectory instead",
                      d->name);
    return 0;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    if (grid_route(call, l))
        return gru_rollout_through_grid(call, l);
    ro_dims d;
    gru_rollout_dims(call, &d);
    size_t wg = (size_t)gru_host->tunable_index(l, TUNE_WG);
    size_t global = (size_t)(d.E * d.B) * wg;
    kp_buffer *scratch = NULL;
    kp_status st = gru_host->scratch(
        l, 0, (size_t)((double)(d.E * d.B) * scratch_floats(&d)) * sizeof(float), &scratch);
    if (st != KP_OK)
        return st;
    kp_clargs a = kp_clargs_begin(gru_host, l, "gru_rollout", NULL);
    gru_rollout_args(&a, call);
    kp_clargs_buffer(&a, scratch);
    if (wg > 1)
        kp_clargs_local(&a, (size_t)local_bytes(&d, (int64_t)wg, lanes_of(l)));
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

void gru_rollout_cost(const kp_call *call, kp_cost *out)
{
    ro_dims d;
    gru_rollout_dims(call, &d);
    double E = (double)d.E, B = (double)d.B, H = (double)d.H, S = (double)d.S, T = (double)d.T;
    double I = (double)d.I, F = (double)d.F;
    /* Dense input products at every step in mode mean, else only at t = 0 (z0 is dense); a
     * one-hot step reads two columns of W_ih. */
    double dense = call->args[RO_MODE].i == RO_MODE_MEAN ? T : 1;
    double per_traj = 2 * 3 * H * F + dense * 2 * 3 * H * (1 + S) + (T - dense) * 2 * 3 * H * 2 +
                      T * (2 * 3 * H * H + 2 * S * H + 2 * (H + S) + 12 * H + 6 * S);
    out->flops = E * B * per_traj;
    /* Each member's weights once, the inputs once, the outputs once. */
    double weights = 3 * H * I + 3 * H * H + 6 * H + S * H + S + H + S + 1;
    double inputs = (double)kp_tensor_numel(&call->args[RO_F].tensor) + B + E * B * (S + H);
    double outputs = E * B *
                     (H + T * (1 + (call->args[RO_ENTROPY].present ? 1 : 0) +
                               (call->args[RO_HNORM].present ? 1 : 0)));
    out->bytes = 4 * (E * weights + inputs + outputs);
}

/*
 * f32 rounding against the double reference: a dot product of K terms is off by about K u
 * (u = 2^-24) relative to the sum of its terms' magnitudes, which the data keep near 1 (weights
 * scaled by 1/sqrt(H), as PyTorch initialises them); the longest sum feeding a gate is
 * I + H terms, and the error of h feeds back through T steps, growing no faster than sqrt(T)
 * for a contracting GRU. Sampled categories are compared on well-separated draws only (see
 * gru_rollout_sample), so they do not enter the bound.
 */
void gru_rollout_tolerance(const kp_call *call, double *atol, double *rtol)
{
    ro_dims d;
    gru_rollout_dims(call, &d);
    double tol = 2.0 * (double)(d.I + d.H) * sqrt((double)d.T) * FLT_EPSILON / 2;
    *atol = tol;
    *rtol = tol;
}

static kp_status describe(kp_launch *l, char *out, size_t size)
{
    const kp_device_info *d = gru_host->device(l);
    if (d && d->type == KP_DEVICE_HOST) {
        snprintf(out, size, "the host reference in plain C (double)");
        return KP_OK;
    }
    int64_t grid = gru_host->tunable_index(l, TUNE_GRID);
    if (grid && gru_rollout_grid_runs_on(d)) {
        snprintf(out, size,
                 "gru.rollout_grid (GRID 1): several work-groups per trajectory where two or "
                 "more fit (E B at most half of the %u compute units, H >= 2), else "
                 "gru_rollout; `kernelport explain gru.rollout_grid` shows its tunables",
                 d ? d->compute_units : 0);
        return KP_OK;
    }
    int64_t wg = gru_host->tunable_index(l, TUNE_WG);
    const char *why = grid ? ", since GRID 1's gru.rollout_grid does not run on CPUs" : "";
    if (wg == 1)
        snprintf(out, size,
                 "gru_rollout (GRID 0%s, WG 1): one work-item per (member, trajectory), plain "
                 "loops without barriers, VEC %lld",
                 why, (long long)vec_of(l));
    else
        snprintf(out, size,
                 "gru_rollout (GRID 0%s): one work-group of WG %lld per (member, trajectory), "
                 "LANES %lld, VEC %lld",
                 why, (long long)wg, (long long)lanes_of(l), (long long)vec_of(l));
    return KP_OK;
}

const kp_kernel_desc gru_rollout_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "gru.rollout",
    .summary = "ensemble GRU world-model rollout: E members x B trajectories x T steps, one launch",
    .params = gru_rollout_params,
    .n_params = RO_NPARAMS,
    .tunables = tunables,
    .n_tunables = TUNE_COUNT,
    .source = kp_kernel_gru_rollout_cl,
    .source_name = "gru-rollout.cl",
    .entry = "gru_rollout",
    .check = check,
    .enqueue = enqueue,
    .reference = gru_rollout_reference,
    .sample = gru_rollout_sample,
    .cost = gru_rollout_cost,
    .verify_sizes = gru_rollout_verify_sizes,
    .bench_sizes = gru_rollout_bench_sizes,
    .tolerance = gru_rollout_tolerance,
    .describe = describe,
    .resolve = resolve,
};
