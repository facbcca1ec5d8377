/* SPDX-License-Identifier: Apache-2.0 */
/* logic.perceive and its backward: 3 x 3 Moore patches of a cellular automaton's grid. */
#include <string.h>

#include "logic-kernels.h"
#include "logic.h"

#define F32 KP_DT(KP_F32)

static const kp_tunable_desc wg_tunable[] = {{
    .name = "WG",
    .default_value = 64,
    .allowed = logic_pow2_256,
    .n_allowed = 9,
    .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
    .doc = "work-items (cells) per work-group",
}};

static const kp_param_desc boundary_param = {
    .name = "boundary",
    .kind = KP_ARG_KIND_INT,
    .access = KP_ACCESS_IN,
    .flags = KP_PARAM_OPTIONAL,
    .doc = "0: periodic (the grid wraps around, a torus); 1: zero (cells outside read 0)"};

/* The grid's extents as [B, C, H, W] (a rank-3 grid is one image; the kernels get it as a
 * kp_view4, where it has B = 1 with stride 0). */
typedef struct grid_dims {
    int64_t B, C, H, W;
} grid_dims;

static grid_dims dims_of(const kp_tensor *g)
{
    int r = g->rank == 4;
    grid_dims d = {
        .B = r ? g->shape[0] : 1, .C = g->shape[r], .H = g->shape[r + 1], .W = g->shape[r + 2]};
    return d;
}

/* grid: [C, H, W] or [B, C, H, W]; out: [9C, B H W]. */
static kp_status check_pair(kp_launch *l, const kp_call *call, int grid, int out, int boundary)
{
    const kp_tensor *g = &call->args[grid].tensor;
    char got[160];
    const char *gname = call->desc->params[grid].name, *oname = call->desc->params[out].name;
    if (g->rank != 3 && g->rank != 4)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "%s: expected [C, H, W] or [B, C, H, W], "
                                "got %s",
                                gname, kp_tensor_describe(g, got, sizeof got));
    /* First: a broadcast grid's extents cost no memory, and 9C must fit int64. */
    kp_status st = logic_fits_int(l, call);
    if (st != KP_OK)
        return st;
    grid_dims d = dims_of(g);
    st = logic_expect(l, oname, &call->args[out].tensor, 2, (int64_t[]){9 * d.C, d.B * d.H * d.W},
                      "[9C, B H W]");
    if (st == KP_OK && call->args[boundary].i != 0 && call->args[boundary].i != 1)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG,
                              "boundary: %lld is not 0 (periodic) or 1 "
                              "(zero)",
                              (long long)call->args[boundary].i);
    return st;
}

/* Arguments B, C, H, W and zero. */
static void grid_args(kp_clargs *a, const kp_tensor *g, int64_t zero)
{
    grid_dims d = dims_of(g);
    kp_clargs_int(a, (int32_t)d.B);
    kp_clargs_int(a, (int32_t)d.C);
    kp_clargs_int(a, (int32_t)d.H);
    kp_clargs_int(a, (int32_t)d.W);
    kp_clargs_int(a, (int32_t)zero);
}

static kp_status launch_cells(kp_clargs *a, const kp_tensor *g, kp_launch *l)
{
    grid_dims d = dims_of(g);
    return logic_clargs_enqueue(a, d.H * d.W, d.B * d.C, (size_t)logic_host->tunable_index(l, 0),
                                1);
}

/* {B, C, H, W, boundary, rank}; "views" stores the grid as [H, W, C] (channels last). */
static const struct {
    const char *name;
    int64_t B, C, H, W, zero, rank;
} sizes[] = {
    {"one", 1, 1, 1, 1, 0, 3},   {"one-zero", 1, 1, 1, 1, 1, 3}, {"prime", 1, 3, 7, 11, 0, 3},
    {"zero", 1, 2, 6, 5, 1, 3},  {"batch", 2, 2, 5, 4, 0, 4},    {"thin", 3, 1, 2, 1, 0, 4},
    {"views", 1, 4, 5, 3, 1, 3}, {"ca", 1, 16, 64, 64, 0, 3},
};
static const char *const verify_sizes[] = {"one",   "one-zero", "prime", "zero",
                                           "batch", "thin",     "views", NULL};
static const char *const bench_sizes[] = {"ca", NULL};

static kp_status sample_grid(kp_sample *s, const char *name, const char *grid, const char *out,
                             double lo, double hi)
{
    size_t i = 0;
    while (i < sizeof sizes / sizeof sizes[0] && strcmp(sizes[i].name, name) != 0)
        i++;
    if (i == sizeof sizes / sizeof sizes[0])
        return KP_ERR_NOT_FOUND;
    int64_t B = sizes[i].B, C = sizes[i].C, H = sizes[i].H, W = sizes[i].W;
    int grid_in = strcmp(grid, "grid") == 0;
    double glo = grid_in ? lo : 0, ghi = grid_in ? hi : 0, olo = grid_in ? 0 : lo;
    double ohi = grid_in ? 0 : hi;
    kp_status st;
    if (sizes[i].rank == 4)
        st = logic_host->sample_tensor(s, grid, KP_F32, 4, (int64_t[]){B, C, H, W}, glo, ghi, NULL);
    else
        st = logic_host->sample_tensor(s, grid, KP_F32, 3, (int64_t[]){C, H, W}, glo, ghi, NULL);
    if (st == KP_OK && strcmp(name, "views") == 0)
        st = logic_host->sample_view(s, grid, 3, (int64_t[]){C, H, W}, 0, (int64_t[]){1, W * C, C});
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, out, KP_F32, 2, (int64_t[]){9 * C, B * H * W}, olo, ohi,
                                       NULL);
    return st == KP_OK ? logic_host->sample_int(s, "boundary", sizes[i].zero) : st;
}

/* ---- logic.perceive -------------------------------------------------------------------------- */

static const kp_param_desc perceive_params[] = {
    [PC_GRID] = {.name = "grid",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = F32,
                 .doc = "[C, H, W] or [B, C, H, W] cell states; any strides"},
    [PC_OUT] = {.name = "out",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = F32,
                .doc = "[9C, B H W]: feature 9 c + 3 dy + dx of cell b H W + y W + x is channel c "
                       "at (y + dy - 1, x + dx - 1); 9 c + 4 is the cell itself"},
    [PC_BOUNDARY] = boundary_param,
};

static kp_status perceive_check(const kp_call *call, kp_launch *l)
{
    return check_pair(l, call, PC_GRID, PC_OUT, PC_BOUNDARY);
}

static kp_status perceive_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *g = &call->args[PC_GRID].tensor;
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_perceive", NULL);
    grid_args(&a, g, call->args[PC_BOUNDARY].i);
    kp_clargs_tensor(&a, g, 4); /* [C, H, W] pads to [1, C, H, W] with stride 0 */
    kp_clargs_tensor(&a, &call->args[PC_OUT].tensor, 2);
    return launch_cells(&a, g, l);
}

static kp_status perceive_sample(kp_sample *s, const char *name)
{
    return sample_grid(s, name, "grid", "out", 0, 1);
}

static void perceive_cost(const kp_call *call, kp_cost *out)
{
    double n = (double)kp_tensor_numel(&call->args[PC_GRID].tensor);
    out->flops = 0;
    out->bytes = 4.0 * 10 * n;
}

const kp_kernel_desc logic_perceive_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.perceive",
    .summary = "3 x 3 Moore patches of a grid [B, C, H, W] as a layer's input [9C, B H W]",
    .params = perceive_params,
    .n_params = PC_N,
    .tunables = wg_tunable,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_perceive",
    .check = perceive_check,
    .enqueue = perceive_enqueue,
    .reference = logic_perceive_reference,
    .sample = perceive_sample,
    .cost = perceive_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
};

/* ---- logic.perceive_backward ----------------------------------------------------------------- */

static const kp_param_desc backward_params[] = {
    [PB_DOUT] = {.name = "dout",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = F32,
                 .doc = "[9C, B H W] gradient of logic.perceive's out"},
    [PB_DGRID] = {.name = "dgrid",
                  .kind = KP_ARG_KIND_TENSOR,
                  .access = KP_ACCESS_OUT,
                  .dtypes = F32,
                  .doc = "[C, H, W] or [B, C, H, W] gradient of the grid (overwritten)"},
    [PB_BOUNDARY] = boundary_param,
};

static kp_status backward_check(const kp_call *call, kp_launch *l)
{
    return check_pair(l, call, PB_DGRID, PB_DOUT, PB_BOUNDARY);
}

static kp_status backward_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *g = &call->args[PB_DGRID].tensor;
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_perceive_backward", NULL);
    grid_args(&a, g, call->args[PB_BOUNDARY].i);
    kp_clargs_tensor(&a, &call->args[PB_DOUT].tensor, 2);
    kp_clargs_tensor(&a, g, 4);
    return launch_cells(&a, g, l);
}

static kp_status backward_sample(kp_sample *s, const char *name)
{
    return sample_grid(s, name, "dgrid", "dout", -1, 1);
}

static void backward_cost(const kp_call *call, kp_cost *out)
{
    double n = (double)kp_tensor_numel(&call->args[PB_DGRID].tensor);
    out->flops = 9 * n;
    out->bytes = 4.0 * 10 * n;
}

const kp_kernel_desc logic_perceive_backward_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.perceive_backward",
    .summary = "logic.perceive's backward: each cell gathers the nine patch entries it fed",
    .params = backward_params,
    .n_params = PB_N,
    .tunables = wg_tunable,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_perceive_backward",
    .check = backward_check,
    .enqueue = backward_enqueue,
    .reference = logic_perceive_backward_reference,
    .sample = backward_sample,
    .cost = backward_cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
    /* Nine terms in [-1, 1] in a fixed order against a double sum. */
    .atol = 4e-6,
    .rtol = 0,
};
