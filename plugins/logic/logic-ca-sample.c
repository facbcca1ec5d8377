/* SPDX-License-Identifier: Apache-2.0 */
/* Samples of logic.ca_step, logic.ca_step_backward and logic.ca_dw: small CAs' networks built by
 * kp_logic_ca_net_build, for verify and bench. */
#include <string.h>

#include "kernelport/ops/logic-ca.h"
#include "logic.h"

/* {name, C, K, batch, H, W, boundary, fire}: a small network per configuration (build_net);
 * "ca" is the checkerboard experiment's size. */
static const struct {
    const char *name;
    int32_t C, K, B, H, W, zero, fire;
} sizes[] = {
    {"one", 1, 1, 1, 1, 1, 0, 0},  {"prime", 3, 2, 2, 7, 5, 0, 0}, {"zero", 2, 3, 1, 6, 7, 1, 0},
    {"fire", 2, 2, 3, 5, 3, 1, 1}, {"ca", 8, 16, 2, 16, 16, 1, 0},
};
const char *const logic_ca_verify_sizes[] = {"one", "prime", "zero", "fire", NULL};
const char *const logic_ca_bench_sizes[] = {"ca", NULL};

static int find_size(const char *name)
{
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].name, name) == 0)
            return (int)i;
    return -1;
}

static kp_status sample_ints(kp_sample *s, const char *name, const int32_t *src, int64_t n)
{
    int32_t *dst = NULL;
    kp_status st = logic_host->sample_tensor(s, name, KP_I32, 1, &n, 0, 1, (void **)&dst);
    if (st == KP_OK)
        memcpy(dst, src, (size_t)n * sizeof *dst);
    return st;
}

/* The network of size `i`: perception {8, 4}, an update halving its width from about half its
 * input down to 2C, then the C channels; "ca" is the checkerboard experiment's network. */
static kp_status build_net(int i, kp_logic_ca_net *net)
{
    kp_logic_ca_config cfg = {.channels = sizes[i].C,
                              .kernels = sizes[i].K,
                              .n_perceive = 2,
                              .perceive = {8, 4},
                              .seed = 7};
    if (strcmp(sizes[i].name, "ca") == 0) {
        static const int32_t update[] = {256, 256, 256, 256, 256, 256, 256, 256,
                                         256, 256, 128, 64,  32,  16,  8,   8};
        cfg.n_perceive = 3;
        cfg.perceive[2] = 2;
        cfg.n_update = 16;
        memcpy(cfg.update, update, sizeof update);
    } else {
        int32_t w = sizes[i].C * (1 + 4 * sizes[i].K);
        w = w > 16 ? (w + 1) / 2 : 8;
        cfg.update[cfg.n_update++] = w;
        while (w > 2 * sizes[i].C)
            cfg.update[cfg.n_update++] = w = (w + 1) / 2;
        cfg.update[cfg.n_update++] = sizes[i].C;
    }
    return kp_logic_ca_net_build(&cfg, net, NULL, 0) == 0 ? KP_OK : KP_ERR_INTERNAL;
}

/* The network's arguments of size `i`, and soft coefficients from random logits into "C". */
static kp_status sample_net(kp_sample *s, int i, int backward, kp_logic_ca_net *net)
{
    if (build_net(i, net) != KP_OK)
        return KP_ERR_INTERNAL;
    const int64_t N = (int64_t)sizes[i].B * sizes[i].H * sizes[i].W, P = net->n_params;
    kp_status st = sample_ints(s, "layers", net->layers, net->n_layers + 1);
    if (st == KP_OK)
        st = sample_ints(s, "a_idx", net->a_idx, net->n_gates);
    if (st == KP_OK)
        st = sample_ints(s, "b_idx", net->b_idx, net->n_gates);
    if (st == KP_OK)
        st = sample_ints(s, "param", net->param, net->n_gates);
    float *C = NULL;
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "C", KP_F32, 2, (int64_t[]){P, 4}, 0, 0, (void **)&C);
    for (int64_t p = 0; st == KP_OK && p < P; p++) {
        float w[16];
        double pr[16];
        for (int o = 0; o < 16; o++)
            w[o] = (float)logic_sample_uniform(s, -2, 2);
        logic_softmax16(w, pr);
        for (int t = 0; t < 4; t++) {
            double c = 0;
            for (int o = 0; o < 16; o++)
                c += kp_logic_coeff(t, o) * pr[o];
            C[4 * p + t] = (float)c;
        }
    }
    if (st == KP_OK && sizes[i].fire)
        st = logic_host->sample_tensor(s, "fire", KP_F32, 1, &N, 0, 1, NULL);
    if (st == KP_OK && sizes[i].fire)
        st = logic_host->sample_float(s, "fire_rate", 0.6);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "height", sizes[i].H);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "width", sizes[i].W);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "boundary", sizes[i].zero);
    if (st == KP_OK && backward)
        st = sample_ints(s, "csr_start", net->csr_start, net->n_rows + 1);
    if (st == KP_OK && backward)
        st = sample_ints(s, "csr_entries", net->csr_entries, 2 * net->n_gates);
    return st;
}

kp_status logic_ca_step_sample(kp_sample *s, const char *name)
{
    const int i = find_size(name);
    if (i < 0)
        return KP_ERR_NOT_FOUND;
    kp_logic_ca_net net;
    const int64_t N = (int64_t)sizes[i].B * sizes[i].H * sizes[i].W, C = sizes[i].C;
    kp_status st = logic_host->sample_tensor(s, "state", KP_F32, 2, (int64_t[]){C, N}, 0, 1, NULL);
    if (st == KP_OK)
        st = sample_net(s, i, 0, &net);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "next", KP_F32, 2, (int64_t[]){C, N}, 0, 0, NULL);
    if (st == KP_OK)
        st =
            logic_host->sample_tensor(s, "acts", KP_F32, 2, (int64_t[]){net.n_rows, N}, 0, 0, NULL);
    kp_logic_ca_net_free(&net);
    return st;
}

kp_status logic_ca_step_backward_sample(kp_sample *s, const char *name)
{
    const int i = find_size(name);
    if (i < 0)
        return KP_ERR_NOT_FOUND;
    kp_logic_ca_net net;
    const int64_t N = (int64_t)sizes[i].B * sizes[i].H * sizes[i].W, C = sizes[i].C;
    kp_status st = sample_net(s, i, 1, &net);
    const int64_t A = net.n_rows, G = net.n_gates;
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "acts", KP_F32, 2, (int64_t[]){A, N}, 0, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "dnext", KP_F32, 2, (int64_t[]){C, N}, -1, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "dacts", KP_F32, 2, (int64_t[]){A, N}, 0, 0, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "dstate", KP_F32, 2, (int64_t[]){C, N}, 0, 0, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "sums", KP_F32, 2, (int64_t[]){4 * G, N}, -1, 1, NULL);
    if (st == KP_OK)
        st = logic_host->sample_int(s, "accumulate", N % 2);
    kp_logic_ca_net_free(&net);
    return st;
}

kp_status logic_ca_dw_sample(kp_sample *s, const char *name)
{
    const int i = find_size(name);
    if (i < 0)
        return KP_ERR_NOT_FOUND;
    kp_logic_ca_net net;
    kp_status st = build_net(i, &net);
    const int64_t N = (int64_t)sizes[i].B * sizes[i].H * sizes[i].W, P = net.n_params;
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "sums", KP_F32, 2, (int64_t[]){4 * net.n_gates, N}, -1, 1,
                                       NULL);
    if (st == KP_OK)
        st = sample_ints(s, "param_start", net.param_start, P + 1);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "w", KP_F32, 2, (int64_t[]){P, 16}, -2, 2, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "dw", KP_F32, 2, (int64_t[]){P, 16}, 0, 0, NULL);
    kp_logic_ca_net_free(&net);
    return st;
}
