/* SPDX-License-Identifier: Apache-2.0 */
/* A CA's hard circuit run bit-packed on large grids (kernelport/ca.h, kp_ca_packed_*). */
#include <stdlib.h>
#include <string.h>

#include "ca-internal.h"

/*
 * One tile's activations, `rows` = S rows of words: [Q | patch | P], the patch's 9C rows between
 * two regions that the layers alternate (even layers write P, odd ones Q). A layer reads the
 * patch and the layer before it (kp_logic_ca_net_build's networks), so its input is one view that
 * does not overlap what it writes: rows [0, Q + 9C) for an even layer, [Q, S) for an odd one.
 */
struct kp_ca_packed {
    kp_runtime *rt;
    int64_t C, H, W, B, wpr, R, M, L, S, Q, tile_rows, tiles;
    int32_t boundary;
    int32_t *layers;  /* [L + 1] gate offsets */
    int32_t *region;  /* [L]: where layer l's outputs start (its slot 0) */
    int32_t *x_start; /* [L]: the first row of layer l's input view */
    int32_t *x_rows;  /* [L]: its rows */
    kp_kernel *perceive, *eval, *pack, *unpack;
    kp_buffer *state;  /* [C, N] floats */
    kp_buffer *bits;   /* [2][C, M] */
    kp_buffer *acts;   /* [S, tile_rows wpr] */
    kp_buffer *tables; /* [3][G]: a, b (rows of each layer's input view), op */
    int64_t G;
    int cur; /* the packed state's half of bits */
};

kp_ca_packed_options kp_ca_packed_options_default(void)
{
    kp_ca_packed_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

void kp_ca_packed_destroy(kp_ca_packed *p)
{
    if (!p)
        return;
    kp_buffer *b[] = {p->state, p->bits, p->acts, p->tables};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        kp_buffer_destroy(p->rt, b[i]);
    free(p->layers), free(p->region), free(p->x_start), free(p->x_rows);
    free(p);
}

kp_tensor kp_ca_packed_state(const kp_ca_packed *p)
{
    return kp_tensor_2d(p->state, KP_F32, p->C, p->R * p->W);
}

kp_tensor kp_ca_packed_bits(const kp_ca_packed *p)
{
    kp_tensor t = kp_tensor_2d(p->bits, KP_U32, p->C, p->M);
    t.offset = p->cur * p->C * p->M;
    return t;
}

int64_t kp_ca_packed_launches_per_step(const kp_ca_packed *p)
{
    return p->tiles * (1 + p->L);
}

static kp_status check_grid(kp_runtime *rt, const kp_ca_packed_options *o, const kp_ca_options *co,
                            int64_t C, int64_t dims[3])
{
    const int32_t given[3] = {o->height, o->width, o->batch};
    const int32_t ca[3] = {co->height, co->width, co->batch};
    for (int i = 0; i < 3; i++)
        dims[i] = given[i] ? given[i] : ca[i];
    if (dims[0] < 1 || dims[1] < 1 || dims[0] > 65535 || dims[1] > 65535 || dims[2] < 1)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_packed_create: height, width, batch: %lld x %lld, %lld "
                                 "grids (1 .. 65535 each, at least one grid; 0 takes the CA's)",
                                 (long long)dims[0], (long long)dims[1], (long long)dims[2]);
    if (o->tile_bytes < 0)
        return kp_last_error_set(
            rt, KP_ERR_INVALID_ARG,
            "kp_ca_packed_create: tile_bytes: %lld is negative (0: the device's default)",
            (long long)o->tile_bytes);
    if ((double)C * (double)dims[0] * (double)dims[1] * (double)dims[2] > 2147483647.0)
        return kp_last_error_set(rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_packed_create: %lld channels of %lld x %lld x %lld cells "
                                 "pass 2^31 floats in the state",
                                 (long long)C, (long long)dims[2], (long long)dims[0],
                                 (long long)dims[1]);
    if (co->fire_rate < 1)
        return kp_last_error_set(rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_packed_create: the CA is asynchronous (fire_rate %g); the "
                                 "packed run is synchronous",
                                 co->fire_rate);
    return KP_OK;
}

/* The layers' regions and input views, and each gate's inputs as rows of its layer's view;
 * fails if a gate reads a layer other than the one before it (not a kp_logic_ca_net_build
 * network). */
static kp_status plan(kp_ca_packed *p, const kp_logic_ca_net *net, int32_t *ab)
{
    const int64_t C9 = 9 * p->C;
    int64_t wide[2] = {0, 0};
    for (int64_t l = 0; l + 1 < p->L; l++) {
        const int64_t w = net->layers[l + 1] - net->layers[l];
        wide[l % 2] = w > wide[l % 2] ? w : wide[l % 2];
    }
    p->Q = wide[1];
    p->S = wide[1] + C9 + wide[0];
    for (int64_t l = 0; l < p->L; l++) {
        p->region[l] = (int32_t)(l % 2 ? 0 : p->Q + C9);
        p->x_start[l] = (int32_t)(l % 2 ? p->Q : 0);
        p->x_rows[l] = (int32_t)(l % 2 ? C9 + wide[0] : p->Q + C9);
    }
    for (int64_t l = 0; l < p->L; l++)
        for (int64_t g = net->layers[l]; g < net->layers[l + 1]; g++)
            for (int side = 0; side < 2; side++) {
                const int64_t row = side ? net->b_idx[g] : net->a_idx[g], from = row - C9;
                int64_t slot = -1;
                if (row >= 0 && row < C9)
                    slot = p->Q + row;
                else if (l > 0 && from >= net->layers[l - 1] && from < net->layers[l])
                    slot = p->region[l - 1] + from - net->layers[l - 1];
                if (slot < 0)
                    return kp_last_error_set(p->rt, KP_ERR_UNSUPPORTED,
                                             "kp_ca_packed_create: gate %lld (layer %lld) reads "
                                             "row %lld, neither the patch nor the layer before",
                                             (long long)g, (long long)l, (long long)row);
                ab[side * p->G + g] = (int32_t)(slot - p->x_start[l]);
            }
    return KP_OK;
}

static kp_status upload_tables(kp_ca_packed *p, kp_ca *ca, const kp_logic_ca_net *net)
{
    int32_t *t = malloc((size_t)(3 * p->G) * sizeof *t);
    int32_t *ops = malloc((size_t)net->n_params * sizeof *ops);
    kp_status st = t && ops ? KP_OK
                            : kp_last_error_set(p->rt, KP_ERR_OUT_OF_MEMORY,
                                                "kp_ca_packed_create: out of host memory");
    if (st == KP_OK)
        st = plan(p, net, t);
    if (st == KP_OK)
        st = kp_ca_read_ops(ca, ops);
    for (int64_t g = 0; st == KP_OK && g < p->G; g++)
        t[2 * p->G + g] = ops[net->param[g]];
    const size_t bytes = (size_t)(3 * p->G) * sizeof *t;
    if (st == KP_OK)
        st = kp_buffer_create(p->rt, bytes, &p->tables);
    if (st == KP_OK)
        st = kp_buffer_write(p->rt, p->tables, 0, bytes, t);
    free(t), free(ops);
    return st;
}

/* A CPU runs each launch's work-groups through its caches, so a tile whose layers stay in L2
 * beats one big tile despite more launches (PoCL, 2 cores: 4 to 10 times at 512 x 512); a GPU
 * wants few, wide launches. */
static int64_t default_tile_bytes(kp_runtime *rt)
{
    kp_device_info d = {.struct_size = sizeof d};
    const int cpu = kp_runtime_device(rt, &d, NULL) == KP_OK &&
                    (d.type == KP_DEVICE_CPU || d.type == KP_DEVICE_HOST);
    return cpu ? (int64_t)1 << 20 : (int64_t)256 << 20;
}

static kp_status create_buffers(kp_ca_packed *p, int64_t tile_bytes)
{
    const int64_t row_bytes = 4 * p->S * p->wpr;
    if ((double)p->S * (double)p->wpr > 2147483647.0)
        return kp_last_error_set(p->rt, KP_ERR_UNSUPPORTED,
                                 "kp_ca_packed_create: one grid row's activations (%lld rows of "
                                 "%lld words) pass 2^31 words",
                                 (long long)p->S, (long long)p->wpr);
    p->tile_rows = tile_bytes / row_bytes;
    if (p->tile_rows > 2147483647 / (p->S * p->wpr))
        p->tile_rows = 2147483647 / (p->S * p->wpr);
    p->tile_rows = p->tile_rows < 1 ? 1 : p->tile_rows > p->R ? p->R : p->tile_rows;
    p->tiles = (p->R + p->tile_rows - 1) / p->tile_rows;
    const float zero = 0;
    kp_status st = kp_buffer_create(p->rt, (size_t)(p->C * p->R * p->W) * sizeof(float), &p->state);
    if (st == KP_OK)
        st = kp_buffer_fill(p->rt, p->state, 0, (size_t)(p->C * p->R * p->W) * sizeof(float), &zero,
                            sizeof zero);
    if (st == KP_OK)
        st = kp_buffer_create(p->rt, (size_t)(2 * p->C * p->M) * 4, &p->bits);
    if (st == KP_OK)
        st = kp_buffer_create(p->rt, (size_t)(p->tile_rows * row_bytes), &p->acts);
    return st;
}

kp_status kp_ca_packed_create(kp_ca *ca, const kp_ca_packed_options *options, kp_ca_packed **out)
{
    kp_runtime *rt = ca ? kp__ca_runtime(ca) : NULL;
    if (!out)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG, "kp_ca_packed_create: out is NULL");
    *out = NULL;
    if (!ca || !options)
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_packed_create: ca and options are required");
    if (options->struct_size != sizeof(kp_ca_packed_options))
        return kp_last_error_set(rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_packed_create: options: struct_size %u, expected %zu "
                                 "(start from kp_ca_packed_options_default)",
                                 options->struct_size, sizeof(kp_ca_packed_options));
    const kp_logic_ca_net *net = kp_ca_net(ca);
    const kp_ca_options *co = kp__ca_options(ca);
    int64_t dims[3];
    kp_status st = check_grid(rt, options, co, net->channels, dims);
    if (st != KP_OK)
        return st;
    kp_ca_packed *p = calloc(1, sizeof *p);
    if (!p)
        return kp_last_error_set(rt, KP_ERR_OUT_OF_MEMORY,
                                 "kp_ca_packed_create: out of host memory");
    p->rt = rt;
    p->C = net->channels;
    p->H = dims[0], p->W = dims[1], p->B = dims[2];
    p->wpr = (p->W + 31) / 32;
    p->R = p->B * p->H;
    p->M = p->R * p->wpr;
    p->L = net->n_layers;
    p->G = net->n_gates;
    p->boundary = co->boundary;
    p->layers = malloc((size_t)(p->L + 1) * sizeof *p->layers);
    p->region = malloc((size_t)p->L * sizeof *p->region);
    p->x_start = malloc((size_t)p->L * sizeof *p->x_start);
    p->x_rows = malloc((size_t)p->L * sizeof *p->x_rows);
    if (!p->layers || !p->region || !p->x_start || !p->x_rows)
        st = kp_last_error_set(rt, KP_ERR_OUT_OF_MEMORY, "kp_ca_packed_create: out of host memory");
    if (st == KP_OK)
        memcpy(p->layers, net->layers, (size_t)(p->L + 1) * sizeof *p->layers);
    kp_kernel **kernels[] = {&p->perceive, &p->eval, &p->pack, &p->unpack};
    const char *names[] = {"logic.perceive_packed", "logic.eval_packed", "logic.pack",
                           "logic.unpack"};
    for (int i = 0; st == KP_OK && i < 4; i++)
        st = kp_kernel_find(rt, names[i], kernels[i]);
    if (st == KP_OK)
        st = upload_tables(p, ca, net);
    if (st == KP_OK)
        st = create_buffers(p, options->tile_bytes ? options->tile_bytes : default_tile_bytes(rt));
    if (st != KP_OK) {
        kp_ca_packed_destroy(p);
        return st;
    }
    *out = p;
    return KP_OK;
}

/* ---- launches -------------------------------------------------------------------------------- */

static kp_tensor words(kp_buffer *b, int64_t offset, int64_t rows, int64_t cols, int64_t stride)
{
    kp_tensor t = kp_tensor_2d(b, KP_U32, rows, cols);
    t.offset = offset;
    t.strides[0] = stride;
    return t;
}

static kp_tensor table(const kp_ca_packed *p, int i, int64_t from, int64_t n)
{
    kp_tensor t = kp_tensor_1d(p->tables, KP_I32, n);
    t.offset = i * p->G + from;
    return t;
}

/* One step of grid rows r0 .. r0 + rows - 1: their patches from state half `src`, the layers in
 * the tile's activations (rows of `n` words), the last into half 1 - src. */
static kp_status step_tile(kp_ca_packed *p, int src, int64_t r0, int64_t rows)
{
    const int64_t n = rows * p->wpr, C9 = 9 * p->C;
    kp_arg pa[] = {kp_arg_tensor("bits", words(p->bits, src * p->C * p->M, p->C, p->M, p->M)),
                   kp_arg_tensor("out", words(p->acts, p->Q * n, C9, n, n)),
                   kp_arg_int("height", p->H),
                   kp_arg_int("width", p->W),
                   kp_arg_int("boundary", p->boundary),
                   kp_arg_int("first_row", r0)};
    kp_status st = kp_kernel_launch(p->rt, p->perceive, pa, 6, NULL);
    for (int64_t l = 0; st == KP_OK && l < p->L; l++) {
        const int64_t g0 = p->layers[l], g = p->layers[l + 1] - g0;
        const kp_tensor y = l + 1 < p->L
                                ? words(p->acts, p->region[l] * n, g, n, n)
                                : words(p->bits, (1 - src) * p->C * p->M + r0 * p->wpr, g, n, p->M);
        kp_arg a[] = {kp_arg_tensor("x", words(p->acts, p->x_start[l] * n, p->x_rows[l], n, n)),
                      kp_arg_tensor("a_idx", table(p, 0, g0, g)),
                      kp_arg_tensor("b_idx", table(p, 1, g0, g)),
                      kp_arg_tensor("op", table(p, 2, g0, g)),
                      kp_arg_tensor("y", y),
                      kp_arg_int("check_wiring", 0)};
        st = kp_kernel_launch(p->rt, p->eval, a, 6, NULL);
    }
    return st;
}

kp_status kp_ca_packed_run(kp_ca_packed *p, int64_t steps)
{
    if (steps < 0)
        return kp_last_error_set(p->rt, KP_ERR_INVALID_ARG,
                                 "kp_ca_packed_run: steps %lld is negative", (long long)steps);
    const kp_tensor rows = kp_tensor_2d(p->state, KP_F32, p->C * p->R, p->W);
    p->cur = 0;
    kp_arg pk[] = {kp_arg_tensor("x", rows),
                   kp_arg_tensor("bits", words(p->bits, 0, p->C * p->R, p->wpr, p->wpr))};
    kp_status st = kp_kernel_launch(p->rt, p->pack, pk, 2, NULL);
    for (int64_t t = 0; st == KP_OK && t < steps; t++) {
        for (int64_t r0 = 0; st == KP_OK && r0 < p->R; r0 += p->tile_rows)
            st = step_tile(p, p->cur, r0, p->R - r0 < p->tile_rows ? p->R - r0 : p->tile_rows);
        p->cur = 1 - p->cur;
    }
    kp_arg up[] = {
        kp_arg_tensor("bits", words(p->bits, p->cur * p->C * p->M, p->C * p->R, p->wpr, p->wpr)),
        kp_arg_tensor("y", rows)};
    return st == KP_OK ? kp_kernel_launch(p->rt, p->unpack, up, 2, NULL) : st;
}
