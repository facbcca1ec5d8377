/* SPDX-License-Identifier: Apache-2.0 */
/* logic.backward: dy to dw (batch sums, softmax backward) and dx (gather over a reverse CSR). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/logic.h"
#include "logic-kernels.h"
#include "logic.h"

#define TENSOR(idx, nm, acc, dt, flg, text)                                                        \
    [idx] = {.name = nm,                                                                           \
             .kind = KP_ARG_KIND_TENSOR,                                                           \
             .access = acc,                                                                        \
             .dtypes = KP_DT(dt),                                                                  \
             .flags = flg,                                                                         \
             .doc = text}
#define OPT KP_PARAM_OPTIONAL

static const kp_param_desc params[] = {
    TENSOR(BW_X, "x", KP_ACCESS_IN, KP_F32, 0, "[IN, N] the forward's inputs"),
    TENSOR(BW_A, "a_idx", KP_ACCESS_IN, KP_I32, 0, "[G] the forward's first inputs"),
    TENSOR(BW_B, "b_idx", KP_ACCESS_IN, KP_I32, 0, "[G] the forward's second inputs"),
    TENSOR(BW_W, "w", KP_ACCESS_IN, KP_F32, OPT, "[G, 16] logits (needed for dw)"),
    TENSOR(BW_C, "C", KP_ACCESS_IN, KP_F32, OPT,
           "[G, 4] the forward's coefficients (needed for dx)"),
    TENSOR(BW_DY, "dy", KP_ACCESS_IN, KP_F32, 0, "[G, N] gradient of the layer's output"),
    TENSOR(BW_START, "csr_start", KP_ACCESS_IN, KP_I32, OPT,
           "[IN + 1] reverse index of the wiring, kp_logic_csr_build (needed for dx)"),
    TENSOR(BW_ENTRIES, "csr_entries", KP_ACCESS_IN, KP_I32, OPT,
           "[2G] its entries, 2 gate + side (needed for dx)"),
    TENSOR(BW_DX, "dx", KP_ACCESS_OUT, KP_F32, OPT, "[IN, N] gradient of x (overwritten)"),
    TENSOR(BW_DW, "dw", KP_ACCESS_OUT, KP_F32, OPT, "[G, 16] gradient of w (overwritten)"),
    [BW_CHECK] = {.name = "check_wiring",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = OPT,
                  .int_default = 1,
                  .doc = "1: read the wiring (and the CSR when dx is asked for) back and reject "
                         "an index outside x's rows or a CSR that is not the wiring's; 0: skip"},
};

enum { TUNE_WG_N, TUNE_WG_G, TUNE_SPT, TUNE_DW_LANES, TUNE_DW_GATES, TUNE_DW_ITEMS, TUNE_VW };

/* The CSR must be exactly what kp_logic_csr_build makes of this wiring: rebuilt here, compared. */
static kp_status check_csr(kp_launch *l, const kp_call *call, int64_t G, int64_t IN)
{
    int32_t *a = NULL, *b = NULL, *start = NULL, *entries = NULL, *want = NULL;
    kp_status st = logic_read_ints(l, call, BW_A, &a);
    if (st == KP_OK)
        st = logic_read_ints(l, call, BW_B, &b);
    if (st == KP_OK)
        st = logic_read_ints(l, call, BW_START, &start);
    if (st == KP_OK)
        st = logic_read_ints(l, call, BW_ENTRIES, &entries);
    if (st == KP_OK && !(want = malloc((size_t)(IN + 1 + 2 * G) * sizeof *want)))
        st = logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == KP_OK && kp_logic_csr_build(a, b, G, IN, want, want + IN + 1) != 0)
        st = logic_host->fail(l, KP_ERR_UNSUPPORTED, "a_idx: %lld gates are beyond 2^30",
                              (long long)G);
    for (int64_t i = 0; st == KP_OK && i < IN + 1 + 2 * G; i++) {
        int in_start = i < IN + 1;
        int32_t got = in_start ? start[i] : entries[i - IN - 1];
        if (got != want[i])
            st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                                  "%s: element %lld is %d, but this wiring's reverse index has "
                                  "%d (build it with kp_logic_csr_build)",
                                  in_start ? "csr_start" : "csr_entries",
                                  (long long)(in_start ? i : i - IN - 1), got, want[i]);
    }
    free(a), free(b), free(start), free(entries), free(want);
    return st;
}

static kp_status backward_check(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[BW_X].tensor;
    kp_status st = logic_expect(l, "x", x, 2, (int64_t[]){-1, -1}, "[IN, N]");
    if (st == KP_OK && x->shape[0] < 1)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "x: a layer needs at least one input row");
    if (st == KP_OK)
        st = logic_expect(l, "a_idx", &a[BW_A].tensor, 1, (int64_t[]){-1}, "[G]");
    int64_t G = a[BW_A].tensor.shape[0], IN = x->shape[0], N = x->shape[1];
    if (st == KP_OK && G >= (int64_t)1 << 30)
        st = logic_host->fail(l, KP_ERR_UNSUPPORTED, "a_idx: %lld gates are beyond 2^30",
                              (long long)G);
    if (st == KP_OK && !a[BW_DX].present && !a[BW_DW].present)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "dx, dw: give at least one output");
    if (st == KP_OK && a[BW_DW].present && !a[BW_W].present)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "w: dw needs the logits");
    if (st == KP_OK && a[BW_DX].present && !a[BW_C].present)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "C: dx needs the forward's coefficients");
    if (st == KP_OK && a[BW_DX].present && (!a[BW_START].present || !a[BW_ENTRIES].present))
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "csr_start, csr_entries: dx needs the wiring's reverse index "
                              "(kp_logic_csr_build)");
    /* Before IN + 1 and 2G: broadcast views' extents cost no memory, so only this bounds them. */
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st != KP_OK)
        return st;
    struct {
        int index, rank;
        int64_t shape[2];
        const char *pattern;
    } expect[] = {
        {BW_B, 1, {G}, "[G]"},
        {BW_W, 2, {G, 16}, "[G, 16]"},
        {BW_C, 2, {G, 4}, "[G, 4]"},
        {BW_DY, 2, {G, N}, "[G, N]"},
        {BW_START, 1, {IN + 1}, "[IN + 1]"},
        {BW_ENTRIES, 1, {2 * G}, "[2G]"},
        {BW_DX, 2, {IN, N}, "[IN, N]"},
        {BW_DW, 2, {G, 16}, "[G, 16]"},
    };
    for (size_t i = 0; st == KP_OK && i < sizeof expect / sizeof expect[0]; i++)
        if (a[expect[i].index].present)
            st = logic_expect(l, params[expect[i].index].name, &a[expect[i].index].tensor,
                              expect[i].rank, expect[i].shape, expect[i].pattern);
    if (st == KP_OK)
        st = logic_check_flag(l, call, BW_CHECK);
    if (st == KP_OK && a[BW_CHECK].i)
        st = logic_check_wiring(l, call, BW_A, BW_B, IN, "x");
    if (st == KP_OK && a[BW_CHECK].i && a[BW_DX].present)
        st = check_csr(l, call, G, IN);
    return st;
}

static kp_status enqueue_dw(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[BW_X].tensor.shape[0], N = v[BW_X].tensor.shape[1];
    int64_t G = v[BW_A].tensor.shape[0];
    int64_t lanes = logic_host->tunable_index(l, TUNE_DW_LANES);
    int64_t rows = logic_host->tunable_index(l, TUNE_DW_GATES);
    int64_t items = logic_host->tunable_index(l, TUNE_DW_ITEMS);
    int64_t vw = logic_host->tunable_index(l, TUNE_VW);
    int64_t block = lanes * items * vw, nb = (N + block - 1) / block;
    kp_buffer *part = NULL;
    kp_status st = logic_check_workgroup(l, lanes, rows, "DW_LANES x DW_GATES");
    if (st == KP_OK && (double)G * (double)(nb ? nb : 1) * 4 > 2147483647.0)
        st = logic_host->fail(l, KP_ERR_UNSUPPORTED, "G x %lld batch blocks is beyond 2^31",
                              (long long)nb);
    if (st == KP_OK)
        st = logic_host->scratch(l, 0, (size_t)(G * (nb ? nb : 1)) * 4 * sizeof(float), &part);
    if (st != KP_OK)
        return st;
    /* The scratch of per-block sums is no tensor: the kernels index it as float4 [G, nb]. */
    kp_clargs a = logic_clargs_vw(l, "logic_backward_dw_partial", vw);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)IN);
    kp_clargs_int(&a, (int32_t)items);
    kp_clargs_tensor(&a, &v[BW_X].tensor, 2);
    kp_clargs_tensor(&a, &v[BW_A].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_B].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_DY].tensor, 2);
    kp_clargs_buffer(&a, part);
    kp_clargs_int(&a, (int32_t)nb);
    kp_clargs_local(&a, (size_t)(lanes * rows) * 4 * sizeof(float));
    st = logic_clargs_enqueue(&a, nb * lanes, G, (size_t)lanes, (size_t)rows);
    if (st != KP_OK)
        return st;
    a = logic_clargs_vw(l, "logic_backward_dw_final", vw);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)nb);
    kp_clargs_buffer(&a, part);
    kp_clargs_tensor(&a, &v[BW_W].tensor, 2);
    kp_clargs_tensor(&a, &v[BW_DW].tensor, 2);
    return logic_clargs_enqueue(&a, G, 1, 64, 1);
}

static kp_status enqueue_dx(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[BW_X].tensor.shape[0], N = v[BW_X].tensor.shape[1];
    int64_t G = v[BW_A].tensor.shape[0];
    int64_t wn = logic_host->tunable_index(l, TUNE_WG_N);
    int64_t wg = logic_host->tunable_index(l, TUNE_WG_G);
    int64_t spt = logic_host->tunable_index(l, TUNE_SPT);
    int64_t vw = logic_host->tunable_index(l, TUNE_VW);
    kp_status st = logic_check_workgroup(l, wn, wg, "WG_N x WG_G");
    if (st != KP_OK)
        return st;
    kp_clargs a = logic_clargs_vw(l, "logic_backward_dx", vw);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)IN);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)spt);
    kp_clargs_tensor(&a, &v[BW_X].tensor, 2);
    kp_clargs_tensor(&a, &v[BW_A].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_B].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_C].tensor, 2);
    kp_clargs_tensor(&a, &v[BW_DY].tensor, 2);
    kp_clargs_tensor(&a, &v[BW_START].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_ENTRIES].tensor, 1);
    kp_clargs_tensor(&a, &v[BW_DX].tensor, 2);
    int64_t groups = (N + wn * spt * vw - 1) / (wn * spt * vw);
    return logic_clargs_enqueue(&a, groups * wn, IN, (size_t)wn, (size_t)wg);
}

static kp_status backward_enqueue(const kp_call *call, kp_launch *l)
{
    kp_status st = call->args[BW_DW].present ? enqueue_dw(call, l) : KP_OK;
    return st == KP_OK && call->args[BW_DX].present ? enqueue_dx(call, l) : st;
}

/* ---- samples, cost, tolerance ---------------------------------------------------------------- */

/* {IN, G, N}. "same": every third gate reads one wire twice; "long": many dw blocks; "dx", "dw":
 * one output only; "views": padded, offset rows. */
static const char *const names[] = {"one", "prime", "same",  "long", "views",
                                    "dx",  "dw",    "small", NULL};
static const int64_t dims[][3] = {{1, 1, 1},    {37, 53, 97}, {16, 67, 33},  {7, 5, 3001},
                                  {29, 41, 75}, {23, 31, 45}, {19, 29, 101}, {500, 1000, 300}};

/* A tensor [rows, cols], padded to a row stride of cols + pad at offset `pad` when pad > 0. */
static kp_status sample_matrix(kp_sample *s, const char *name, int64_t rows, int64_t cols, int pad,
                               double lo, double hi, float **data)
{
    if (!pad)
        return logic_host->sample_tensor(s, name, KP_F32, 2, (int64_t[]){rows, cols}, lo, hi,
                                         (void **)data);
    kp_status st = logic_host->sample_tensor(s, name, KP_F32, 1,
                                             (int64_t[]){rows * (cols + pad) + pad}, lo, hi, NULL);
    return st == KP_OK ? logic_host->sample_view(s, name, 2, (int64_t[]){rows, cols}, pad,
                                                 (int64_t[]){cols + pad, 1})
                       : st;
}

static kp_status backward_sample(kp_sample *s, const char *name)
{
    /* "dx-GxN" and "dw-GxN" ask for one output (benchmarks time them apart). */
    int want_dx = strcmp(name, "dw") != 0 && strncmp(name, "dw-", 3) != 0;
    int want_dw = strcmp(name, "dx") != 0 && strncmp(name, "dx-", 3) != 0;
    const char *dims_name = !want_dx || !want_dw ? name + (name[2] == '-' ? 3 : 0) : name;
    int64_t d[3];
    int n = logic_sample_dims(dims_name, names, dims, d);
    if (!n)
        return KP_ERR_NOT_FOUND;
    if (n == 2) /* "GxN": as many inputs as gates */
        d[2] = d[1], d[1] = d[0];
    int64_t IN = d[0], G = d[1], N = d[2];
    int pad = strcmp(name, "views") == 0 ? 3 : 0;
    float *w = NULL, *C = NULL;
    int32_t *start = NULL, *entries = NULL, *a = NULL, *b = NULL;
    kp_status st = sample_matrix(s, "x", IN, N, pad, 0, 1, NULL);
    if (st == KP_OK)
        st = logic_sample_wiring(s, G, IN, strcmp(name, "same") == 0, &a, &b);
    if (st == KP_OK)
        st = sample_matrix(s, "dy", G, N, pad, -1, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "w", KP_F32, 2, (int64_t[]){G, 16}, -2, 2, (void **)&w);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "C", KP_F32, 2, (int64_t[]){G, 4}, 0, 0, (void **)&C);
    for (int64_t g = 0; st == KP_OK && g < G; g++) {
        double p[16];
        logic_softmax16(w + 16 * g, p);
        for (int t = 0; t < 4; t++) {
            double c = 0;
            for (int i = 0; i < 16; i++)
                c += kp_logic_coeff(t, i) * p[i];
            C[4 * g + t] = (float)c;
        }
    }
    if (st == KP_OK && want_dx) {
        st = logic_host->sample_tensor(s, "csr_start", KP_I32, 1, (int64_t[]){IN + 1}, 0, 0,
                                       (void **)&start);
        if (st == KP_OK)
            st = logic_host->sample_tensor(s, "csr_entries", KP_I32, 1, (int64_t[]){2 * G}, 0, 0,
                                           (void **)&entries);
        if (st == KP_OK && kp_logic_csr_build(a, b, G, IN, start, entries) != 0)
            st = KP_ERR_INTERNAL;
        if (st == KP_OK)
            st = sample_matrix(s, "dx", IN, N, pad, 0, 0, NULL);
    }
    if (st == KP_OK && want_dw)
        st = logic_host->sample_tensor(s, "dw", KP_F32, 2, (int64_t[]){G, 16}, 0, 0, NULL);
    return st;
}

/* dw: 7 FLOPs per gate and sample for the four sums; dx: 4 per gate and sample (two FMAs per
 * side). Bytes: x, dy and the outputs once each. */
static void backward_cost(const kp_call *call, kp_cost *out)
{
    const kp_value *v = call->args;
    double IN = (double)v[BW_X].tensor.shape[0], N = (double)v[BW_X].tensor.shape[1];
    double G = (double)v[BW_A].tensor.shape[0];
    double rows = fmin(IN, 2 * G);
    out->flops = (v[BW_DW].present ? 7.0 * G * N : 0) + (v[BW_DX].present ? 8.0 * G * N : 0);
    out->bytes = 4.0 * (rows * N + G * N) + 8.0 * G;
    if (v[BW_DW].present)
        out->bytes += 4.0 * 32 * G;
    if (v[BW_DX].present)
        out->bytes += 4.0 * (IN * N + 4 * G + IN + 1 + 2 * G);
}

/* The batch sums add N terms of magnitude <= 1 in blocks, so their rounding grows like sqrt(N)
 * (observed: about 1e-6 at N = 300); dw multiplies them by coefficients up to 2 and p <= 1, and
 * cancels in p_i (g_i - p.g), so the bound is absolute. dx adds a handful of terms per sample. */
static void backward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    double N = (double)call->args[BW_X].tensor.shape[1];
    *atol = 2e-6 + 16.0 * FLT_EPSILON * sqrt(N + 1);
    *rtol = 1e-5;
}

static const kp_tunable_desc tunables[] = {
    [TUNE_WG_N] = LOGIC_AUTO_TUNABLE("WG_N", logic_auto_256, 10, 0,
                                     "dx: work-items along the batch per work-group; 0: 1 on "
                                     "CPUs, 32 on others"),
    [TUNE_WG_G] = LOGIC_AUTO_TUNABLE("WG_G", logic_auto_64, 8, 0,
                                     "dx: input wires per work-group; 0: 4 on CPUs, 8 on others"),
    [TUNE_SPT] = LOGIC_AUTO_TUNABLE("SPT", logic_auto_16, 6, 0,
                                    "dx: vectors per work-item (WG_N apart); 0: 4"),
    [TUNE_DW_LANES] = LOGIC_AUTO_TUNABLE("DW_LANES", logic_auto_256, 10, 0,
                                         "dw: work-items summing one gate's batch block; 0: 1 on "
                                         "CPUs, 32 on others"),
    [TUNE_DW_GATES] = LOGIC_AUTO_TUNABLE("DW_GATES", logic_auto_64, 8, 0,
                                         "dw: gates per work-group (DW_LANES x DW_GATES "
                                         "work-items); 0: 4 on CPUs, 8 on others"),
    [TUNE_DW_ITEMS] = LOGIC_AUTO_TUNABLE("DW_ITEMS", logic_auto_256, 10, 0,
                                         "dw: vectors per work-item in a block (a block is "
                                         "DW_LANES x DW_ITEMS x VW samples); 0: 16 on CPUs, 8 "
                                         "on others"),
    [TUNE_VW] = LOGIC_VW_TUNABLE,
};

/* dx as the forward; dw: CPUs sum a gate's block in one work-item of 16 runs of 16-float vectors,
 * GPUs in 32 coalesced lanes of 8 scalars each. */
static const char *backward_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {
        [TUNE_WG_N] = {1, 32},
        [TUNE_WG_G] = {4, 8},
        [TUNE_SPT] = {4, 4},
        [TUNE_DW_LANES] = {1, 32},
        [TUNE_DW_GATES] = {4, 8},
        [TUNE_DW_ITEMS] = {16, 8},
        [TUNE_VW] = {LOGIC_VW_CPU, LOGIC_VW_OTHER},
    };
    return logic_resolve(l, by_type, sizeof by_type / sizeof by_type[0], index, value, resolved);
}

static const char *const bench_sizes[] = {"dx-64000x1024", "dw-64000x1024", "dx-64000x100",
                                          "dw-64000x100", NULL};

const kp_kernel_desc logic_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.backward",
    .summary = "a gate layer's backward: dw [G, 16] through the softmax, dx [IN, N] by CSR gather",
    .params = params,
    .n_params = BW_N,
    .tunables = tunables,
    .n_tunables = sizeof tunables / sizeof tunables[0],
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_backward_dx",
    .check = backward_check,
    .enqueue = backward_enqueue,
    .reference = logic_backward_reference,
    .sample = backward_sample,
    .cost = backward_cost,
    .verify_sizes = names,
    .bench_sizes = bench_sizes,
    .tolerance = backward_tolerance,
    .resolve = backward_resolve,
};
