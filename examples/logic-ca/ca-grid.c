/* SPDX-License-Identifier: Apache-2.0 */
/* A trained CA's hard circuit on one large grid, fused and bit-packed (ca-grid.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca-grid.h"
#include "kernelport/ops/random.h"

static kp_status write_floats(kp_runtime *rt, kp_tensor t, const float *src)
{
    return kp_buffer_write(rt, t.buffer, (size_t)t.offset * sizeof(float),
                           (size_t)kp_tensor_numel(&t) * sizeof(float), src);
}

static kp_status read_floats(kp_runtime *rt, kp_tensor t, float *dst)
{
    return kp_buffer_read(rt, t.buffer, (size_t)t.offset * sizeof(float),
                          (size_t)kp_tensor_numel(&t) * sizeof(float), dst);
}

/* An inference_only CA of the grid with the trained logits, or NULL with the reason. */
static kp_ca *open_fused(ca_grid *g, kp_ca *trained, const kp_ca_options *to)
{
    kp_ca_options o = *to;
    o.height = o.width = (int32_t)g->side;
    o.batch = 1;
    o.steps = (int32_t)g->steps;
    o.inference_only = 1;
    o.random_init = 0;
    kp_ca *ca = NULL;
    const kp_tensor w = kp_ca_logits(trained);
    kp_status st = kp_ca_create(g->rt, &o, &ca);
    if (st == KP_OK)
        st =
            kp_buffer_copy(g->rt, w.buffer, (size_t)w.offset * sizeof(float),
                           kp_ca_logits(ca).buffer, 0, (size_t)kp_tensor_numel(&w) * sizeof(float));
    if (st == KP_OK)
        st = write_floats(g->rt, kp_ca_state(ca, 0, 0), g->init);
    if (st != KP_OK) {
        snprintf(g->fused_why, sizeof g->fused_why, "%s: %s", kp_status_name(st),
                 kp_last_error(g->rt));
        kp_ca_destroy(ca);
        return NULL;
    }
    return ca;
}

kp_status ca_grid_open(ca_grid *g, kp_runtime *rt, kp_ca *trained,
                       const kp_ca_options *trained_options, int64_t side, int64_t steps,
                       uint64_t seed, int64_t tile_bytes)
{
    memset(g, 0, sizeof *g);
    g->rt = rt;
    g->side = side, g->steps = steps, g->cells = side * side;
    g->channels = kp_ca_net(trained)->channels;
    const int64_t n = g->channels * g->cells;
    g->init = malloc((size_t)n * sizeof *g->init);
    if (!g->init)
        return kp_last_error_set(rt, KP_ERR_OUT_OF_MEMORY, "ca_grid_open: out of host memory");
    for (int64_t i = 0; i < n; i++)
        g->init[i] = (float)(kp_random_uniform(seed, 0, (uint64_t)i) < 0.5f);
    kp_ca_packed_options po = kp_ca_packed_options_default();
    po.height = po.width = (int32_t)side;
    po.batch = 1;
    po.tile_bytes = tile_bytes;
    kp_status st = kp_ca_packed_create(trained, &po, &g->packed);
    if (st == KP_OK)
        st = write_floats(rt, kp_ca_packed_state(g->packed), g->init);
    if (st != KP_OK)
        return st;
    g->fused = open_fused(g, trained, trained_options);
    return KP_OK;
}

kp_status ca_grid_run(ca_grid *g, int packed)
{
    const kp_status st =
        packed ? kp_ca_packed_run(g->packed, g->steps) : kp_ca_rollout(g->fused, 1);
    return st == KP_OK ? kp_finish(g->rt) : st;
}

int64_t ca_grid_differ(ca_grid *g)
{
    const int64_t n = g->channels * g->cells;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    int64_t differ = -1;
    if (a && b && read_floats(g->rt, kp_ca_packed_state(g->packed), a) == KP_OK &&
        read_floats(g->rt, kp_ca_state(g->fused, (int32_t)g->steps, 1), b) == KP_OK) {
        differ = 0;
        for (int64_t i = 0; i < n; i++)
            differ += a[i] != b[i];
    }
    free(a), free(b);
    return differ;
}

void ca_grid_close(ca_grid *g)
{
    kp_ca_packed_destroy(g->packed);
    kp_ca_destroy(g->fused);
    free(g->init);
    memset(g, 0, sizeof *g);
}
