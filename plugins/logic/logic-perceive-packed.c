/* SPDX-License-Identifier: Apache-2.0 */
/* logic.perceive_packed: 3 x 3 Moore patches of a bit-packed grid, for a CA's packed steps. */
#include <string.h>

#include "logic-kernels.h"
#include "logic.h"

#define U32 KP_DT(KP_U32)

static int64_t words_of(int64_t n)
{
    return (n + 31) / 32;
}

static const kp_tunable_desc wg_tunable[] = {{
    .name = "WG",
    .default_value = 64,
    .allowed = logic_pow2_256,
    .n_allowed = 9,
    .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
    .doc = "work-items (words) per work-group",
}};

static const kp_param_desc params[] = {
    [PP_BITS] = {.name = "bits",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = U32,
                 .doc = "[C, R ceil(W / 32)]: R = B H grid rows (whole grids) of ceil(W / 32) "
                        "words each, bit j of word w of a row the cell x = 32 w + j; bits past W "
                        "are ignored"},
    [PP_OUT] = {.name = "out",
                .kind = KP_ARG_KIND_TENSOR,
                .access = KP_ACCESS_OUT,
                .dtypes = U32,
                .doc = "[9C, rows ceil(W / 32)]: the patches of grid rows first_row .. first_row + "
                       "rows - 1, packed as bits; feature 9 c + 3 dy + dx is channel c at "
                       "(y + dy - 1, x + dx - 1); bits past W are 0"},
    [PP_HEIGHT] = {.name = "height",
                   .kind = KP_ARG_KIND_INT,
                   .access = KP_ACCESS_IN,
                   .doc = "each grid's rows H"},
    [PP_WIDTH] = {.name = "width",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .doc = "each grid's columns W (cells, not words)"},
    [PP_BOUNDARY] = {.name = "boundary",
                     .kind = KP_ARG_KIND_INT,
                     .access = KP_ACCESS_IN,
                     .flags = KP_PARAM_OPTIONAL,
                     .doc = "0: periodic (the grid wraps around, a torus); 1: zero (cells outside "
                            "read 0)"},
    [PP_FIRST] = {.name = "first_row",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .doc = "the first grid row of out (a tile of rows; default 0)"},
};

static kp_status check(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const kp_tensor *bits = &v[PP_BITS].tensor;
    const int64_t H = v[PP_HEIGHT].i, W = v[PP_WIDTH].i, first = v[PP_FIRST].i;
    kp_status st = logic_expect(l, "bits", bits, 2, (int64_t[]){-1, -1}, "[C, R ceil(W / 32)]");
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st != KP_OK)
        return st;
    if (H < 1 || W < 1 || H > 65535 || W > 65535)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "height, width: %lld x %lld is not a grid (1 .. 65535 each)",
                                (long long)H, (long long)W);
    const int64_t C = bits->shape[0], wpr = words_of(W);
    if (C < 1 || bits->shape[1] < 1 || bits->shape[1] % (H * wpr) != 0)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "bits: %lld channels of %lld words are not whole %lld x %lld "
                                "grids (%lld words a row)",
                                (long long)C, (long long)bits->shape[1], (long long)H, (long long)W,
                                (long long)wpr);
    const int64_t R = bits->shape[1] / wpr;
    const kp_tensor *out = &v[PP_OUT].tensor;
    st = logic_expect(l, "out", out, 2, (int64_t[]){9 * C, -1}, "[9C, rows ceil(W / 32)]");
    if (st != KP_OK)
        return st;
    if (out->shape[1] < 1 || out->shape[1] % wpr != 0)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "out: %lld words are not whole rows of %lld words",
                                (long long)out->shape[1], (long long)wpr);
    const int64_t rows = out->shape[1] / wpr;
    /* The last row named, clamped: a hostile first_row near INT64_MAX must not overflow. */
    const int64_t last = first > INT64_MAX - (rows - 1) ? INT64_MAX : first + (rows - 1);
    if (first < 0 || first > R - rows)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "first_row: rows %lld .. %lld are not within the grids' %lld rows",
                                (long long)first, (long long)last, (long long)R);
    if (v[PP_BOUNDARY].i != 0 && v[PP_BOUNDARY].i != 1)
        return logic_host->fail(l, KP_ERR_INVALID_ARG,
                                "boundary: %lld is not 0 (periodic) or 1 (zero)",
                                (long long)v[PP_BOUNDARY].i);
    return KP_OK;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const int64_t C = v[PP_BITS].tensor.shape[0], words = v[PP_OUT].tensor.shape[1];
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_perceive_packed", NULL);
    kp_clargs_int(&a, (int32_t)C);
    kp_clargs_int(&a, (int32_t)v[PP_HEIGHT].i);
    kp_clargs_int(&a, (int32_t)v[PP_WIDTH].i);
    kp_clargs_int(&a, (int32_t)words_of(v[PP_WIDTH].i));
    kp_clargs_int(&a, (int32_t)v[PP_BOUNDARY].i);
    kp_clargs_int(&a, (int32_t)v[PP_FIRST].i);
    kp_clargs_int(&a, (int32_t)words);
    kp_clargs_tensor(&a, &v[PP_BITS].tensor, 2);
    kp_clargs_tensor(&a, &v[PP_OUT].tensor, 2);
    return logic_clargs_enqueue(&a, words, C, (size_t)logic_host->tunable_index(l, 0), 1);
}

/* {B, C, H, W, boundary, first_row, rows (0: to the last)}: widths off and on a word's edge,
 * 1-row and 1-column grids, and a tile of rows spanning two grids. */
static const struct {
    const char *name;
    int64_t B, C, H, W, zero, first, rows;
} sizes[] = {
    {"one", 1, 1, 1, 1, 0, 0, 0},    {"one-zero", 1, 1, 1, 1, 1, 0, 0},
    {"prime", 1, 3, 7, 37, 0, 0, 0}, {"zero", 2, 2, 5, 41, 1, 0, 0},
    {"row", 3, 1, 1, 97, 0, 0, 0},   {"column", 1, 2, 13, 1, 1, 0, 0},
    {"word", 1, 1, 3, 32, 0, 0, 0},  {"words", 1, 2, 4, 64, 1, 0, 0},
    {"tile", 2, 2, 5, 45, 0, 3, 4},  {"ca", 1, 8, 1024, 1024, 0, 0, 0},
};
static const char *const verify_sizes[] = {"one",    "one-zero", "prime", "zero", "row",
                                           "column", "word",     "words", "tile", NULL};
static const char *const bench_sizes[] = {"ca", NULL};

static kp_status sample(kp_sample *s, const char *name)
{
    size_t i = 0;
    while (i < sizeof sizes / sizeof sizes[0] && strcmp(sizes[i].name, name) != 0)
        i++;
    if (i == sizeof sizes / sizeof sizes[0])
        return KP_ERR_NOT_FOUND;
    const int64_t C = sizes[i].C, wpr = words_of(sizes[i].W), R = sizes[i].B * sizes[i].H;
    const int64_t rows = sizes[i].rows ? sizes[i].rows : R - sizes[i].first;
    /* Every bit random, the padding past W too: the kernel must not read it. */
    kp_status st = logic_host->sample_tensor(s, "bits", KP_U32, 2, (int64_t[]){C, R * wpr}, 0,
                                             4294967296.0, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "out", KP_U32, 2, (int64_t[]){9 * C, rows * wpr}, 0, 0,
                                       NULL);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "height", sizes[i].H);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "width", sizes[i].W);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "boundary", sizes[i].zero);
    return st == KP_OK ? logic_host->sample_int(s, "first_row", sizes[i].first) : st;
}

/* Each work-item reads three rows' words (and their neighbours, mostly cached) and writes nine. */
static void cost(const kp_call *call, kp_cost *out)
{
    const double C = (double)call->args[PP_BITS].tensor.shape[0];
    const double words = (double)call->args[PP_OUT].tensor.shape[1];
    out->flops = 0;
    out->bytes = 4.0 * C * words * (3 + 9);
}

const kp_kernel_desc logic_perceive_packed_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.perceive_packed",
    .summary =
        "3 x 3 Moore patches of bit-packed grid rows [C, R words] as packed rows [9C, words]",
    .params = params,
    .n_params = PP_N,
    .tunables = wg_tunable,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_perceive_packed",
    .check = check,
    .enqueue = enqueue,
    .reference = logic_perceive_packed_reference,
    .sample = sample,
    .cost = cost,
    .verify_sizes = verify_sizes,
    .bench_sizes = bench_sizes,
};
