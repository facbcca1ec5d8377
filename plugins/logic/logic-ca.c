/* SPDX-License-Identifier: Apache-2.0 */
/* logic.ca_step, logic.ca_step_backward, logic.ca_dw: a logic-gate CA's step fused per cell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/logic-ca.h"
#include "logic-kernels.h"
#include "logic.h"

#define TENSOR(nm, acc, dt, flg, text)                                                             \
    {                                                                                              \
        .name = nm, .kind = KP_ARG_KIND_TENSOR, .access = acc, .dtypes = KP_DT(dt), .flags = flg,  \
        .doc = text                                                                                \
    }
#define INT(nm, dflt, text)                                                                        \
    {                                                                                              \
        .name = nm, .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN, .flags = KP_PARAM_OPTIONAL,   \
        .int_default = dflt, .doc = text                                                           \
    }
#define OPT KP_PARAM_OPTIONAL
#define IN KP_ACCESS_IN

/* The network's arguments, shared by the step and its backward (the step stops before
 * csr_start). height and width have no default: a call must say its grid. */
#define NET_PARAMS                                                                                 \
    TENSOR("layers", IN, KP_I32, 0, "[L + 1] gate offsets of the layers (0 first, G last)"),       \
        TENSOR("a_idx", IN, KP_I32, 0,                                                             \
               "[G] each gate's first input, a row of acts below its layer"),                      \
        TENSOR("b_idx", IN, KP_I32, 0, "[G] each gate's second input"),                            \
        TENSOR("param", IN, KP_I32, 0, "[G] each gate's row of C"),                                \
        TENSOR("C", IN, KP_F32, 0, "[P, 4] coefficients (logic.coeffs, soft or hard)"),            \
        TENSOR("fire", IN, KP_F32, OPT,                                                            \
               "[N] uniforms: cell n updates where fire[n] < fire_rate (none: every cell)"),       \
        {.name = "fire_rate",                                                                      \
         .kind = KP_ARG_KIND_FLOAT,                                                                \
         .access = IN,                                                                             \
         .flags = OPT,                                                                             \
         .float_default = 1.0,                                                                     \
         .doc = "the asynchronous update's probability, 0 .. 1"},                                  \
        {.name = "height", .kind = KP_ARG_KIND_INT, .access = IN, .doc = "the grid's rows H"},     \
        {.name = "width", .kind = KP_ARG_KIND_INT, .access = IN, .doc = "the grid's columns W"},   \
        INT("boundary", 0, "0: periodic (a torus); 1: zero (cells outside read 0)"),               \
        INT("check_wiring", 1,                                                                     \
            "1: read the network's tables back and reject any that does not fit; 0: skip")

static const kp_param_desc step_params[] = {
    TENSOR("state", IN, KP_F32, 0,
           "[C, N] cell states, N = B H W cells (cell (b H + y) W + x), feature-major"),
    TENSOR("next", KP_ACCESS_OUT, KP_F32, 0, "[C, N] the states after the step"),
    TENSOR("acts", KP_ACCESS_OUT, KP_F32, 0,
           "[9C + G, N] the patch, then every gate's output (what the backward reads)"),
    NET_PARAMS,
};

static const kp_param_desc backward_params[] = {
    TENSOR("acts", IN, KP_F32, 0, "[9C + G, N] the step's activations (logic.ca_step)"),
    TENSOR("dnext", IN, KP_F32, 0, "[C, N] gradient of the step's next"),
    TENSOR("dacts", KP_ACCESS_OUT, KP_F32, 0, "[9C + G, N] gradients of acts (overwritten)"),
    TENSOR("dstate", KP_ACCESS_OUT, KP_F32, 0, "[C, N] gradient of the step's state"),
    TENSOR("sums", KP_ACCESS_INOUT, KP_F32, 0,
           "[4G, N] per gate, rows 4g .. 4g + 3: (dy, dy a, dy b, dy a b) at each cell, added "
           "over the steps"),
    INT("accumulate", 0, "0: sums = this step's; 1: sums += this step's"),
    NET_PARAMS,
    TENSOR("csr_start", IN, KP_I32, 0, "[9C + G + 1] the network's reverse index over acts' rows"),
    TENSOR("csr_entries", IN, KP_I32, 0, "[2G] its entries, 2 gate + side"),
};

static const kp_param_desc dw_params[] = {
    [CD_SUMS] = TENSOR("sums", IN, KP_F32, 0, "[4G, N] logic.ca_step_backward's sums"),
    [CD_START] = TENSOR("param_start", IN, KP_I32, 0,
                        "[P + 1] parameter p's gates are param_start[p] .. [p + 1] - 1"),
    [CD_W] = TENSOR("w", IN, KP_F32, 0, "[P, 16] logits"),
    [CD_DW] = TENSOR("dw", KP_ACCESS_OUT, KP_F32, 0, "[P, 16] gradient of w (overwritten)"),
    [CD_CHECK] = INT("check_wiring", 1, "1: read param_start back and check it; 0: skip"),
};

enum { TUNE_WG_N, TUNE_LANES, TUNE_VW };
enum { TUNE_DW_LANES, TUNE_DW_WG_P };

/* The sizes a call's shapes give. */
typedef struct ca_dims {
    int64_t C, N, G, L, P, A, H, W;
} ca_dims;

static ca_dims dims_of(const kp_call *call, int states, int net)
{
    const kp_value *v = call->args;
    ca_dims d = {.C = v[states].tensor.shape[0],
                 .N = v[states].tensor.shape[1],
                 .G = v[net + CA_A].tensor.shape[0],
                 .L = v[net + CA_LAYERS].tensor.shape[0] - 1,
                 .P = v[net + CA_C].tensor.shape[0],
                 .H = v[net + CA_HEIGHT].i,
                 .W = v[net + CA_WIDTH].i};
    d.A = 9 * d.C + d.G;
    return d;
}

/* Reads layers, a_idx, b_idx and param back and checks them against each other: layers from 0
 * up to G, the last layer the C output gates, every gate reading rows below its layer's first,
 * every parameter a row of C. */
static kp_status check_tables(kp_launch *l, const kp_call *call, int net, const ca_dims *d)
{
    int32_t *layers = NULL, *a = NULL, *b = NULL, *p = NULL;
    kp_status st = logic_read_ints(l, call, net + CA_LAYERS, &layers);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_A, &a);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_B, &b);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_PARAM, &p);
    if (st == KP_OK && (layers[0] != 0 || layers[d->L] != d->G))
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "layers: must run from 0 to G = %lld, got %d .. %d", (long long)d->G,
                              layers[0], layers[d->L]);
    for (int64_t i = 0; st == KP_OK && i < d->L; i++)
        if (layers[i + 1] < layers[i])
            st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                  "layers: element %lld (%d) is below element %lld (%d)",
                                  (long long)(i + 1), layers[i + 1], (long long)i, layers[i]);
    if (st == KP_OK && layers[d->L - 1] != d->G - d->C)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "layers: the last layer has %d gates, but it gives the %lld "
                              "channels of the new state",
                              (int)(d->G - layers[d->L - 1]), (long long)d->C);
    for (int64_t i = 0, g = 0; st == KP_OK && i < d->L; i++)
        for (; st == KP_OK && g < layers[i + 1]; g++) {
            const int64_t top = 9 * d->C + layers[i];
            const int32_t *side = a[g] < 0 || a[g] >= top ? a : b;
            if (side[g] < 0 || side[g] >= top)
                st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                      "%s: gate %lld (layer %lld) reads row %d, but its layer "
                                      "reads rows 0..%lld (the patch and earlier layers)",
                                      side == a ? "a_idx" : "b_idx", (long long)g, (long long)i,
                                      side[g], (long long)(top - 1));
            else if (p[g] < 0 || p[g] >= d->P)
                st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                      "param: gate %lld uses row %d, outside C's rows 0..%lld",
                                      (long long)g, p[g], (long long)(d->P - 1));
        }
    free(layers), free(a), free(b), free(p);
    return st;
}

/* The reverse index must be what kp_logic_csr_build makes of this wiring over acts' rows. */
static kp_status check_csr(kp_launch *l, const kp_call *call, int net, const ca_dims *d)
{
    int32_t *a = NULL, *b = NULL, *start = NULL, *entries = NULL, *want = NULL;
    kp_status st = logic_read_ints(l, call, net + CA_A, &a);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_B, &b);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_START, &start);
    if (st == KP_OK)
        st = logic_read_ints(l, call, net + CA_ENTRIES, &entries);
    if (st == KP_OK && !(want = malloc((size_t)(d->A + 1 + 2 * d->G) * sizeof *want)))
        st = logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == KP_OK)
        kp_logic_csr_build(a, b, d->G, d->A, want, want + d->A + 1);
    for (int64_t i = 0; st == KP_OK && i < d->A + 1 + 2 * d->G; i++) {
        const int in_start = i < d->A + 1;
        const int32_t got = in_start ? start[i] : entries[i - d->A - 1];
        if (got != want[i])
            st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                  "%s: element %lld is %d, but this wiring's reverse index has "
                                  "%d (kp_logic_ca_net_build makes it)",
                                  in_start ? "csr_start" : "csr_entries",
                                  (long long)(in_start ? i : i - d->A - 1), got, want[i]);
    }
    free(a), free(b), free(start), free(entries), free(want);
    return st;
}

/* Shapes and scalars of a step (backward 0) or its backward (1), whose [C, N] argument is
 * `states` and whose network arguments start at `net`; then the tables when check_wiring. */
static kp_status check_net(kp_launch *l, const kp_call *call, int states, int net, int backward)
{
    const kp_value *v = call->args;
    const kp_param_desc *pd = call->desc->params;
    kp_status st =
        logic_expect(l, pd[states].name, &v[states].tensor, 2, (int64_t[]){-1, -1}, "[C, N]");
    if (st == KP_OK)
        st = logic_expect(l, "layers", &v[net + CA_LAYERS].tensor, 1, (int64_t[]){-1}, "[L + 1]");
    if (st == KP_OK)
        st = logic_expect(l, "a_idx", &v[net + CA_A].tensor, 1, (int64_t[]){-1}, "[G]");
    if (st == KP_OK)
        st = logic_expect(l, "C", &v[net + CA_C].tensor, 2, (int64_t[]){-1, 4}, "[P, 4]");
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st != KP_OK)
        return st;
    ca_dims d = dims_of(call, states, net);
    if (d.C < 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG, "%s: a CA needs at least one channel",
                                pd[states].name);
    if (d.L < 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "layers: a network needs at least one layer ([L + 1], L >= 1)");
    if (d.G < d.C || d.P < 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "a_idx, C: %lld gates and %lld coefficient rows cannot give %lld "
                                "channels",
                                (long long)d.G, (long long)d.P, (long long)d.C);
    /* Each cell walks the L layers, and the tables' check reads all L + 1 offsets: a broadcast
     * `layers` of 2^31 entries cost 8 GiB of host memory there (and a device loop of 2^31
     * without the check), for a network whose G gates fill at most G layers. */
    if (d.L > d.G)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "layers: %lld layers for %lld gates (at most one layer a gate)",
                                (long long)d.L, (long long)d.G);
    if (d.H < 1 || d.W < 1 || d.H > 65535 || d.W > 65535)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "height, width: %lld x %lld is not a grid (1 .. 65535 each)",
                                (long long)d.H, (long long)d.W);
    if (d.N % (d.H * d.W) != 0)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "%s: %lld cells are not a whole number of %lld x %lld grids",
                                pd[states].name, (long long)d.N, (long long)d.H, (long long)d.W);
    /* The step has no sums: only the backward's [4G, N] bounds the cells by 4G. */
    if ((double)d.A * (double)d.N > 2147483647.0 ||
        (backward && 4.0 * (double)d.G * (double)d.N > 2147483647.0))
        return logic_host->fail(l, KP_ERR_UNSUPPORTED,
                                "acts: %lld rows x %lld cells is beyond 2^31 elements",
                                (long long)d.A, (long long)d.N);
    const double rate = v[net + CA_RATE].f;
    if (!(rate >= 0 && rate <= 1))
        return logic_host->fail(l, KP_ERR_INVALID_ARG, "fire_rate: %g is not in 0 .. 1", rate);
    if (v[net + CA_BOUNDARY].i != 0 && v[net + CA_BOUNDARY].i != 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "boundary: %lld is not 0 (periodic) or 1 "
                                "(zero)",
                                (long long)v[net + CA_BOUNDARY].i);
    struct {
        int index, rank;
        int64_t shape[2];
        const char *pattern;
    } expect[] = {
        {net + CA_B, 1, {d.G}, "[G]"},
        {net + CA_PARAM, 1, {d.G}, "[G]"},
        {net + CA_FIRE, 1, {d.N}, "[N]"},
        {backward ? net + CA_START : -1, 1, {d.A + 1}, "[9C + G + 1]"},
        {backward ? net + CA_ENTRIES : -1, 1, {2 * d.G}, "[2G]"},
        {backward ? CB_ACTS : CS_ACTS, 2, {d.A, d.N}, "[9C + G, N]"},
        {backward ? CB_DACTS : CS_NEXT,
         2,
         {backward ? d.A : d.C, d.N},
         backward ? "[9C + G, N]" : "[C, N]"},
        {backward ? CB_DSTATE : -1, 2, {d.C, d.N}, "[C, N]"},
        {backward ? CB_SUMS : -1, 2, {4 * d.G, d.N}, "[4G, N]"},
    };
    for (size_t i = 0; st == KP_OK && i < sizeof expect / sizeof expect[0]; i++)
        if (expect[i].index >= 0 && v[expect[i].index].present)
            st = logic_expect(l, pd[expect[i].index].name, &v[expect[i].index].tensor,
                              expect[i].rank, expect[i].shape, expect[i].pattern);
    if (st == KP_OK && backward)
        st = logic_check_flag(l, call, CB_ACCUMULATE);
    if (st == KP_OK)
        st = logic_check_flag(l, call, net + CA_CHECK);
    if (st == KP_OK && v[net + CA_CHECK].i)
        st = check_tables(l, call, net, &d);
    if (st == KP_OK && v[net + CA_CHECK].i && backward)
        st = check_csr(l, call, net, &d);
    return st;
}

static kp_status step_check(const kp_call *call, kp_launch *l)
{
    return check_net(l, call, CS_STATE, CS_NET, 0);
}

static kp_status backward_check(const kp_call *call, kp_launch *l)
{
    return check_net(l, call, CB_DNEXT, CB_NET, 1);
}

/* The arguments every entry of the step takes after its sizes: the network's tables. */
static void net_args(kp_clargs *a, const kp_call *call, int net)
{
    const kp_value *v = call->args;
    kp_clargs_tensor(a, &v[net + CA_LAYERS].tensor, 1);
    kp_clargs_tensor(a, &v[net + CA_A].tensor, 1);
    kp_clargs_tensor(a, &v[net + CA_B].tensor, 1);
    kp_clargs_tensor(a, &v[net + CA_PARAM].tensor, 1);
    kp_clargs_tensor(a, &v[net + CA_C].tensor, 2);
}

/* Work-items of VW cells each, WG_N x LANES a work-group. */
static kp_status enqueue_cells(kp_clargs *a, kp_launch *l, int64_t N)
{
    const int64_t wn = logic_host->tunable_index(l, TUNE_WG_N);
    const int64_t lanes = logic_host->tunable_index(l, TUNE_LANES);
    const int64_t vw = logic_host->tunable_index(l, TUNE_VW);
    kp_status st = logic_check_workgroup(l, wn, lanes, "WG_N x LANES");
    return st == KP_OK
               ? logic_clargs_enqueue(a, (N + vw - 1) / vw, lanes, (size_t)wn, (size_t)lanes)
               : st;
}

static kp_status step_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const ca_dims d = dims_of(call, CS_STATE, CS_NET);
    kp_clargs a = logic_clargs_vw(l, "logic_ca_step", logic_host->tunable_index(l, TUNE_VW));
    const int32_t sizes[] = {(int32_t)d.N,
                             (int32_t)d.C,
                             (int32_t)d.H,
                             (int32_t)d.W,
                             (int32_t)v[CS_NET + CA_BOUNDARY].i,
                             (int32_t)d.L,
                             (int32_t)d.G,
                             (int32_t)d.P,
                             v[CS_NET + CA_FIRE].present};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        kp_clargs_int(&a, sizes[i]);
    kp_clargs_float(&a, (float)v[CS_NET + CA_RATE].f);
    kp_clargs_tensor(&a, &v[CS_STATE].tensor, 2);
    kp_clargs_tensor(&a, &v[CS_NEXT].tensor, 2);
    kp_clargs_tensor(&a, &v[CS_ACTS].tensor, 2);
    net_args(&a, call, CS_NET);
    logic_clargs_optional(&a, &v[CS_NET + CA_FIRE], &v[CS_STATE].tensor, 1);
    return enqueue_cells(&a, l, d.N);
}

static kp_status backward_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const ca_dims d = dims_of(call, CB_DNEXT, CB_NET);
    const int has_fire = v[CB_NET + CA_FIRE].present;
    const float rate = (float)v[CB_NET + CA_RATE].f;
    kp_clargs a =
        logic_clargs_vw(l, "logic_ca_step_backward", logic_host->tunable_index(l, TUNE_VW));
    const int32_t sizes[] = {(int32_t)d.N, (int32_t)d.C, (int32_t)d.L, (int32_t)d.G,
                             (int32_t)d.P, (int32_t)d.A, has_fire};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        kp_clargs_int(&a, sizes[i]);
    kp_clargs_float(&a, rate);
    kp_clargs_int(&a, (int32_t)v[CB_ACCUMULATE].i);
    kp_clargs_tensor(&a, &v[CB_ACTS].tensor, 2);
    kp_clargs_tensor(&a, &v[CB_DNEXT].tensor, 2);
    kp_clargs_tensor(&a, &v[CB_DACTS].tensor, 2);
    kp_clargs_tensor(&a, &v[CB_SUMS].tensor, 2);
    net_args(&a, call, CB_NET);
    kp_clargs_tensor(&a, &v[CB_NET + CA_START].tensor, 1);
    kp_clargs_tensor(&a, &v[CB_NET + CA_ENTRIES].tensor, 1);
    logic_clargs_optional(&a, &v[CB_NET + CA_FIRE], &v[CB_DNEXT].tensor, 1);
    kp_status st = enqueue_cells(&a, l, d.N);
    if (st != KP_OK)
        return st;
    a = kp_clargs_begin(logic_host, l, "logic_ca_step_backward_grid", NULL);
    const int32_t grid[] = {
        (int32_t)d.N, (int32_t)d.C, (int32_t)d.H, (int32_t)d.W, (int32_t)v[CB_NET + CA_BOUNDARY].i,
        has_fire};
    for (size_t i = 0; i < sizeof grid / sizeof grid[0]; i++)
        kp_clargs_int(&a, grid[i]);
    kp_clargs_float(&a, rate);
    kp_clargs_tensor(&a, &v[CB_DNEXT].tensor, 2);
    kp_clargs_tensor(&a, &v[CB_DACTS].tensor, 2);
    kp_clargs_tensor(&a, &v[CB_DSTATE].tensor, 2);
    logic_clargs_optional(&a, &v[CB_NET + CA_FIRE], &v[CB_DNEXT].tensor, 1);
    return logic_clargs_enqueue(&a, d.N, d.C, 64, 1);
}

/* ---- logic.ca_dw ----------------------------------------------------------------------------- */

static kp_status dw_check(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    kp_status st = logic_expect(l, "w", &v[CD_W].tensor, 2, (int64_t[]){-1, 16}, "[P, 16]");
    if (st == KP_OK)
        st = logic_expect(l, "sums", &v[CD_SUMS].tensor, 2, (int64_t[]){-1, -1}, "[4G, N]");
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st != KP_OK)
        return st;
    const int64_t P = v[CD_W].tensor.shape[0], G = v[CD_SUMS].tensor.shape[0] / 4;
    if (v[CD_SUMS].tensor.shape[0] % 4 != 0)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "sums: %lld rows are not 4 per gate ([4G, N])",
                                (long long)v[CD_SUMS].tensor.shape[0]);
    st = logic_expect(l, "param_start", &v[CD_START].tensor, 1, (int64_t[]){P + 1}, "[P + 1]");
    if (st == KP_OK)
        st = logic_expect(l, "dw", &v[CD_DW].tensor, 2, (int64_t[]){P, 16}, "[P, 16]");
    if (st == KP_OK)
        st = logic_check_flag(l, call, CD_CHECK);
    if (st != KP_OK || !v[CD_CHECK].i)
        return st;
    int32_t *start = NULL;
    st = logic_read_ints(l, call, CD_START, &start);
    if (st == KP_OK && (start[0] != 0 || start[P] != G))
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "param_start: must run from 0 to G = %lld, got %d .. %d",
                              (long long)G, start[0], start[P]);
    for (int64_t p = 0; st == KP_OK && p < P; p++)
        if (start[p + 1] < start[p])
            st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                  "param_start: element %lld (%d) is below element %lld (%d)",
                                  (long long)(p + 1), start[p + 1], (long long)p, start[p]);
    free(start);
    return st;
}

static kp_status dw_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const int64_t P = v[CD_W].tensor.shape[0], G = v[CD_SUMS].tensor.shape[0] / 4;
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_ca_dw", NULL);
    kp_clargs_int(&a, (int32_t)P);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)v[CD_SUMS].tensor.shape[1]);
    kp_clargs_tensor(&a, &v[CD_SUMS].tensor, 2);
    kp_clargs_tensor(&a, &v[CD_START].tensor, 1);
    kp_clargs_tensor(&a, &v[CD_W].tensor, 2);
    kp_clargs_tensor(&a, &v[CD_DW].tensor, 2);
    const int64_t lanes = logic_host->tunable_index(l, TUNE_DW_LANES);
    const int64_t wgp = logic_host->tunable_index(l, TUNE_DW_WG_P);
    kp_status st = logic_check_workgroup(l, lanes, wgp, "LANES x WG_P");
    if (st != KP_OK)
        return st;
    kp_clargs_local(&a, (size_t)(lanes * wgp) * 4 * sizeof(float));
    return logic_clargs_enqueue(&a, lanes, P, (size_t)lanes, (size_t)wgp);
}

/* ---- cost, tolerance, tunables --------------------------------------------------------------- */

/* A gate: three FMAs forward; its backward about twice that plus the four sums. Bytes: acts
 * written once and read twice per gate (cached on GPUs), so the fewest bytes are acts once. */
static void step_cost(const kp_call *call, kp_cost *out)
{
    const ca_dims d = dims_of(call, CS_STATE, CS_NET);
    out->flops = 6.0 * (double)d.G * (double)d.N;
    out->bytes = 4.0 * (double)(d.A + 2 * d.C) * (double)d.N;
}

static void backward_cost(const kp_call *call, kp_cost *out)
{
    const ca_dims d = dims_of(call, CB_DNEXT, CB_NET);
    out->flops = 20.0 * (double)d.G * (double)d.N;
    out->bytes = 4.0 * (double)(2 * d.A + 2 * d.C + 8 * d.G) * (double)d.N;
}

static void dw_cost(const kp_call *call, kp_cost *out)
{
    const double n = (double)kp_tensor_numel(&call->args[CD_SUMS].tensor);
    out->flops = n;
    out->bytes = 4.0 * n;
}

/* Soft values through a dozen layers of three roundings each; the backward's products of
 * coefficients up to 2 in magnitude grow the error with the depth, so relative and absolute. */
static void step_tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 2e-5;
    *rtol = 1e-5;
}

/* dw adds G_p x N terms per parameter in one float sum. */
static void dw_tolerance(const kp_call *call, double *atol, double *rtol)
{
    const double n = (double)kp_tensor_numel(&call->args[CD_SUMS].tensor);
    *atol = 1e-5 + 1e-6 * sqrt(n);
    *rtol = 1e-5;
}

static const kp_tunable_desc cell_tunables[] = {
    [TUNE_WG_N] = LOGIC_AUTO_TUNABLE("WG_N", logic_auto_256, 10, 0,
                                     "work-items (of VW cells each) per work-group; 0: 1 on CPUs, "
                                     "32 on others"),
    [TUNE_LANES] = LOGIC_AUTO_TUNABLE("LANES", logic_auto_64, 8, 0,
                                      "work-items sharing a cell's gates, layer by layer; 0: 1 "
                                      "on CPUs, 8 on others"),
    [TUNE_VW] = LOGIC_VW_TUNABLE,
};

static const kp_tunable_desc dw_tunables[] = {
    [TUNE_DW_LANES] = LOGIC_AUTO_TUNABLE("LANES", logic_auto_256, 10, 0,
                                         "work-items summing one parameter's cells; 0: 1 on "
                                         "CPUs, 64 on others"),
    [TUNE_DW_WG_P] = LOGIC_AUTO_TUNABLE("WG_P", logic_auto_256, 10, 0,
                                        "parameters per work-group (LANES x WG_P work-items); "
                                        "0: 64 on CPUs, 4 on others"),
};

/* CPUs: a work-item takes 16 cells as one float16 per gate (PoCL does not vectorise the
 * layer loop across work-items by itself); GPUs: 4 cells of coalesced columns by 64 lanes over
 * the gates, so that a 16 x 16 batch of 2 fills the device's units (the H200's checkerboard
 * step: 35.2 ms at 32 x 8, 8.9 ms at 4 x 64; its manifest entry takes 8 x 64). */
static const char *cell_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {
        [TUNE_WG_N] = {1, 4}, [TUNE_LANES] = {1, 64}, [TUNE_VW] = {LOGIC_VW_CPU, LOGIC_VW_OTHER}};
    return logic_resolve(l, by_type, 3, index, value, resolved);
}

/* CPUs: a work-item per parameter, its sums in one loop; GPUs: 64 lanes read a parameter's
 * rows coalesced (one work-item per parameter took 0.85 ms a checkerboard step on the H200). */
static const char *dw_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {[TUNE_DW_LANES] = {1, 64}, [TUNE_DW_WG_P] = {64, 4}};
    return logic_resolve(l, by_type, 2, index, value, resolved);
}

const kp_kernel_desc logic_ca_step_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.ca_step",
    .summary = "a logic-gate CA step fused per cell: 3 x 3 patch, perception and update gates, "
               "the new state (synchronous or fire-masked)",
    .params = step_params,
    .n_params = CS_NET + CA_START,
    .tunables = cell_tunables,
    .n_tunables = 3,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_ca_step",
    .check = step_check,
    .enqueue = step_enqueue,
    .reference = logic_ca_step_reference,
    .sample = logic_ca_step_sample,
    .cost = step_cost,
    .verify_sizes = logic_ca_verify_sizes,
    .bench_sizes = logic_ca_bench_sizes,
    .tolerance = step_tolerance,
    .resolve = cell_resolve,
};

const kp_kernel_desc logic_ca_step_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.ca_step_backward",
    .summary = "logic.ca_step's backward: the gates' gradients and batch sums, the state's "
               "gradient through the patches",
    .params = backward_params,
    .n_params = CB_NET + CA_N,
    .tunables = cell_tunables,
    .n_tunables = 3,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_ca_step_backward",
    .check = backward_check,
    .enqueue = backward_enqueue,
    .reference = logic_ca_step_backward_reference,
    .sample = logic_ca_step_backward_sample,
    .cost = backward_cost,
    .verify_sizes = logic_ca_verify_sizes,
    .bench_sizes = logic_ca_bench_sizes,
    .tolerance = step_tolerance,
    .resolve = cell_resolve,
};

const kp_kernel_desc logic_ca_dw_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.ca_dw",
    .summary = "the CA logits' gradient [P, 16] from logic.ca_step_backward's sums",
    .params = dw_params,
    .n_params = CD_N,
    .tunables = dw_tunables,
    .n_tunables = 2,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_ca_dw",
    .check = dw_check,
    .enqueue = dw_enqueue,
    .reference = logic_ca_dw_reference,
    .sample = logic_ca_dw_sample,
    .cost = dw_cost,
    .verify_sizes = logic_ca_verify_sizes,
    .bench_sizes = logic_ca_bench_sizes,
    .tolerance = dw_tolerance,
    .resolve = dw_resolve,
};
