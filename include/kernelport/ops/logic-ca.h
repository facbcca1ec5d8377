/* SPDX-License-Identifier: Apache-2.0 */
/* Host helpers of logic-gate cellular automata: a CA's configuration flattened into the one gate
 * network the logic.ca_* kernels run per cell (docs/logic-ca.md). */
#ifndef KERNELPORT_OPS_LOGIC_CA_H
#define KERNELPORT_OPS_LOGIC_CA_H

#include <stdio.h>

#include "logic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most layers of a perception kernel and of the update network. */
#define KP_LOGIC_CA_MAX_PERCEIVE 8
#define KP_LOGIC_CA_MAX_UPDATE 32

/*
 * A logic-gate CA (DiffLogic CA, Miotti et al. 2025): C binary channels per cell; K perception
 * kernels, each a small gate network applied channel-wise to a channel's 3 x 3 Moore patch (the
 * same wiring for every kernel, logits of its own, shared by the channels), whose first layer of
 * 8 gates reads one neighbour (a random permutation of the 8) against the centre; an update
 * network over [the cell's C channels, every perception output] whose last layer gives the C
 * channels of the new state. Later layers are wired `unique` (kp_logic_wiring_unique).
 */
typedef struct kp_logic_ca_config {
    uint32_t struct_size;                       /* sizeof(kp_logic_ca_config); 0: the 0.2 layout */
    int32_t channels;                           /* C >= 1 */
    int32_t kernels;                            /* K >= 1 */
    int32_t n_perceive;                         /* 1 .. KP_LOGIC_CA_MAX_PERCEIVE */
    int32_t perceive[KP_LOGIC_CA_MAX_PERCEIVE]; /* widths: 8 first, e.g. {8, 4, 2} */
    int32_t n_update;                           /* 1 .. KP_LOGIC_CA_MAX_UPDATE */
    int32_t update[KP_LOGIC_CA_MAX_UPDATE];     /* widths; the last is C */
    uint64_t seed;                              /* the wirings' seed */
} kp_logic_ca_config;

/* kp_logic_ca_config's first (0.2) layout, which struct_size 0 stands for; a member added later
 * is read only when struct_size covers it. */
#define KP_LOGIC_CA_CONFIG_FIRST (offsetof(kp_logic_ca_config, seed) + sizeof(uint64_t))

/*
 * The flattened network of one cell, what logic.ca_step and logic.ca_step_backward take. Its
 * activations are rows of acts [n_rows, N] (N cells): rows 0 .. 9C - 1 the patch (row 9 c + f is
 * channel c at patch index f = 3 dy + dx, 4 the cell itself), then row 9C + g gate g's output.
 * Gates come in layers (gates layers[l] .. layers[l + 1] - 1); a gate reads rows a_idx, b_idx
 * below its layer's first row and uses coefficient row param[g]. Perception layers come first:
 * gate (k w + j) C + c of a perception layer of width w is gate j of kernel k on channel c, so
 * the C gates sharing a parameter are consecutive; parameter (k w + j) of that layer (after the
 * earlier layers' K w). Each update gate has a parameter of its own. The last layer's C gates are
 * the new state, channel by channel. The update's input i is row 9 i + 4 for i < C (the cell's
 * channels), else perception output q = i - C: channel c = q / (w_last K), output
 * o = q / K % w_last, kernel k = q % K (DiffLogic CA's order, so that `unique` wiring pairs
 * neighbouring kernels' views of one channel).
 */
typedef struct kp_logic_ca_net {
    int32_t channels, kernels, n_layers, n_perceive_layers;
    int64_t n_gates, n_params, n_rows;
    int32_t *layers;      /* [n_layers + 1] gate offsets */
    int32_t *a_idx;       /* [n_gates] */
    int32_t *b_idx;       /* [n_gates] */
    int32_t *param;       /* [n_gates] */
    int32_t *param_start; /* [n_params + 1]: parameter p's gates are param_start[p] .. [p+1]-1 */
    int32_t *csr_start;   /* [n_rows + 1]: kp_logic_csr_build over the rows */
    int32_t *csr_entries; /* [2 n_gates] */
} kp_logic_ca_net;

/* Frees the arrays of a network built by kp_logic_ca_net_build and zeroes it; NULL is a no-op. */
KP_INLINE void kp_logic_ca_net_free(kp_logic_ca_net *net)
{
    if (!net)
        return;
    free(net->layers), free(net->a_idx), free(net->b_idx), free(net->param);
    free(net->param_start), free(net->csr_start), free(net->csr_entries);
    memset(net, 0, sizeof *net);
}

/* Whether a layer of `width` gates can be wired `unique` over `in` inputs: 2 width >= in (every
 * input read) and no more gates than distinct pairs. 1 if so, else 0 with the reason in why
 * ("WHAT layer L: ..."). */
KP_INLINE int kp_logic_ca_layer_check(const char *what, int l, int64_t in, int32_t width, char *why,
                                      size_t why_size)
{
    if (width < 1) {
        snprintf(why, why_size, "%s layer %d: %d gates (a layer needs at least one)", what, l,
                 width);
        return 0;
    }
    if (2 * (int64_t)width < in) {
        snprintf(why, why_size,
                 "%s layer %d: %d gates cannot read all %lld outputs of the layer before (2 x "
                 "gates must be at least the inputs)",
                 what, l, width, (long long)in);
        return 0;
    }
    if ((int64_t)width > in * (in - 1) / 2) {
        snprintf(why, why_size,
                 "%s layer %d: %d gates cannot have distinct input pairs from %lld inputs", what, l,
                 width, (long long)in);
        return 0;
    }
    return 1;
}

/* Checks a configuration; 0 when good, else -1 with the reason in why (may be NULL). */
KP_INLINE int kp_logic_ca_config_check(const kp_logic_ca_config *cfg, char *why, size_t why_size)
{
    char scratch[256];
    if (!why)
        why = scratch, why_size = sizeof scratch;
    if (!cfg) {
        snprintf(why, why_size, "config: NULL");
        return -1;
    }
    if (cfg->struct_size != 0 && cfg->struct_size < KP_LOGIC_CA_CONFIG_FIRST) {
        snprintf(why, why_size,
                 "config: struct_size %u is below %zu (its first layout): set it to "
                 "sizeof(kp_logic_ca_config), or leave it 0",
                 cfg->struct_size, (size_t)KP_LOGIC_CA_CONFIG_FIRST);
        return -1;
    }
    if (cfg->channels < 1 || cfg->channels > 4096) {
        snprintf(why, why_size, "channels: %d is not in 1 .. 4096", cfg->channels);
        return -1;
    }
    if (cfg->kernels < 1 || cfg->kernels > 4096) {
        snprintf(why, why_size, "kernels: %d is not in 1 .. 4096", cfg->kernels);
        return -1;
    }
    if (cfg->n_perceive < 1 || cfg->n_perceive > KP_LOGIC_CA_MAX_PERCEIVE) {
        snprintf(why, why_size, "n_perceive: %d is not in 1 .. %d", cfg->n_perceive,
                 KP_LOGIC_CA_MAX_PERCEIVE);
        return -1;
    }
    if (cfg->perceive[0] != 8) {
        snprintf(why, why_size,
                 "perceive layer 0: %d gates, but the first layer has one per neighbour (8)",
                 cfg->perceive[0]);
        return -1;
    }
    for (int p = 1; p < cfg->n_perceive; p++)
        if (!kp_logic_ca_layer_check("perceive", p, cfg->perceive[p - 1], cfg->perceive[p], why,
                                     why_size))
            return -1;
    if (cfg->n_update < 1 || cfg->n_update > KP_LOGIC_CA_MAX_UPDATE) {
        snprintf(why, why_size, "n_update: %d is not in 1 .. %d", cfg->n_update,
                 KP_LOGIC_CA_MAX_UPDATE);
        return -1;
    }
    int64_t in =
        cfg->channels + (int64_t)cfg->kernels * cfg->channels * cfg->perceive[cfg->n_perceive - 1];
    int64_t gates = 0;
    for (int p = 0; p < cfg->n_perceive; p++)
        gates += (int64_t)cfg->kernels * cfg->channels * cfg->perceive[p];
    for (int l = 0; l < cfg->n_update; l++) {
        if (!kp_logic_ca_layer_check("update", l, in, cfg->update[l], why, why_size))
            return -1;
        in = cfg->update[l];
        gates += in;
    }
    if (cfg->update[cfg->n_update - 1] != cfg->channels) {
        snprintf(why, why_size,
                 "update layer %d: %d gates, but the last layer gives the %d channels of the new "
                 "state",
                 cfg->n_update - 1, cfg->update[cfg->n_update - 1], cfg->channels);
        return -1;
    }
    if (gates + 9 * (int64_t)cfg->channels >= (int64_t)1 << 30) {
        snprintf(why, why_size, "%lld gates are beyond 2^30", (long long)gates);
        return -1;
    }
    return 0;
}

/*
 * Flattens `cfg` into `net` (arrays malloc'ed, freed by kp_logic_ca_net_free), wirings drawn from
 * cfg->seed: the same configuration gives the same network on every platform. Returns 0, or -1
 * with the reason in `why` (may be NULL; "update layer 3: 3 gates cannot read all 8 outputs of
 * the layer before ...", "channels: 0 is not in 1 .. 4096") and net zeroed. Thread-safe.
 */
KP_INLINE int kp_logic_ca_net_build(const kp_logic_ca_config *cfg, kp_logic_ca_net *net, char *why,
                                    size_t why_size)
{
    memset(net, 0, sizeof *net);
    if (kp_logic_ca_config_check(cfg, why, why_size) != 0)
        return -1;
    const int64_t C = cfg->channels, K = cfg->kernels;
    const int np = cfg->n_perceive, L = np + cfg->n_update;
    int64_t G = 0, P = 0;
    for (int p = 0; p < np; p++)
        G += K * C * cfg->perceive[p], P += K * cfg->perceive[p];
    for (int l = 0; l < cfg->n_update; l++)
        G += cfg->update[l], P += cfg->update[l];
    net->channels = (int32_t)C;
    net->kernels = (int32_t)K;
    net->n_layers = L;
    net->n_perceive_layers = np;
    net->n_gates = G;
    net->n_params = P;
    net->n_rows = 9 * C + G;
    net->layers = (int32_t *)malloc((size_t)(L + 1) * sizeof(int32_t));
    net->a_idx = (int32_t *)malloc((size_t)G * sizeof(int32_t));
    net->b_idx = (int32_t *)malloc((size_t)G * sizeof(int32_t));
    net->param = (int32_t *)malloc((size_t)G * sizeof(int32_t));
    net->param_start = (int32_t *)malloc((size_t)(P + 1) * sizeof(int32_t));
    net->csr_start = (int32_t *)malloc((size_t)(net->n_rows + 1) * sizeof(int32_t));
    net->csr_entries = (int32_t *)malloc((size_t)(2 * G) * sizeof(int32_t));
    int32_t *ua = (int32_t *)malloc(2 * (size_t)G * sizeof(int32_t)); /* a layer's pairs */
    if (!net->layers || !net->a_idx || !net->b_idx || !net->param || !net->param_start ||
        !net->csr_start || !net->csr_entries || !ua) {
        free(ua);
        kp_logic_ca_net_free(net);
        if (why)
            snprintf(why, why_size, "out of host memory");
        return -1;
    }
    int32_t *ub = ua + G;
    uint64_t state = cfg->seed;
    int32_t perm[8];
    kp_logic_randperm(perm, 8, &state);
    static const int32_t neighbours[8] = {0, 1, 2, 3, 5, 6, 7, 8};
    int64_t g = 0, p = 0, prev_row = 0, prev_w = 0;
    /* Perception: per layer, gate (k w + j) C + c; its parameter k w + j of the layer. */
    for (int l = 0; l < np; l++) {
        const int64_t w = cfg->perceive[l], row0 = 9 * C + g;
        if (l > 0)
            kp_logic_wiring_unique(prev_w, w, kp_logic_random(&state), ua, ub);
        net->layers[l] = (int32_t)g;
        for (int64_t kj = 0; kj < K * w; kj++, p++) {
            const int64_t j = kj % w, k = kj / w;
            net->param_start[p] = (int32_t)g;
            for (int64_t c = 0; c < C; c++, g++) {
                if (l == 0) {
                    net->a_idx[g] = (int32_t)(9 * c + neighbours[perm[j]]);
                    net->b_idx[g] = (int32_t)(9 * c + 4);
                } else {
                    net->a_idx[g] = (int32_t)(prev_row + (k * prev_w + ua[j]) * C + c);
                    net->b_idx[g] = (int32_t)(prev_row + (k * prev_w + ub[j]) * C + c);
                }
                net->param[g] = (int32_t)p;
            }
        }
        prev_row = row0;
        prev_w = w;
    }
    /* Update: input i is row 9 i + 4 (i < C), else perception output (c, o, k), row
     * prev_row + (k w + o) C + c. */
    const int64_t w_last = prev_w, perc_row = prev_row;
    int64_t in = C + K * C * w_last;
    for (int l = 0; l < cfg->n_update; l++) {
        const int64_t w = cfg->update[l], row0 = 9 * C + g;
        kp_logic_wiring_unique(in, w, kp_logic_random(&state), ua, ub);
        net->layers[np + l] = (int32_t)g;
        for (int64_t j = 0; j < w; j++, g++, p++) {
            int32_t r[2] = {ua[j], ub[j]};
            for (int s = 0; s < 2; s++) {
                int64_t i = r[s];
                if (l > 0) {
                    r[s] = (int32_t)(prev_row + i);
                } else if (i < C) {
                    r[s] = (int32_t)(9 * i + 4);
                } else {
                    const int64_t q = i - C, c = q / (w_last * K), o = q / K % w_last;
                    r[s] = (int32_t)(perc_row + (q % K * w_last + o) * C + c);
                }
            }
            net->a_idx[g] = r[0];
            net->b_idx[g] = r[1];
            net->param[g] = (int32_t)p;
            net->param_start[p] = (int32_t)g;
        }
        prev_row = row0;
        in = w;
    }
    net->layers[L] = (int32_t)g;
    net->param_start[P] = (int32_t)G;
    free(ua);
    kp_logic_csr_build(net->a_idx, net->b_idx, G, net->n_rows, net->csr_start, net->csr_entries);
    return 0;
}

#ifdef __cplusplus
}
#endif

#endif
