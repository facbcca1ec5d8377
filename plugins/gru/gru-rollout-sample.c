/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout's sample arguments: awkward verification sizes, the seed plan's benchmark sizes. */
#include <math.h>
#include <string.h>

#include "gru-rollout.h"
#include "kernelport/ops/gru.h"

/* One named size. `separated`: a sample-mode size whose draws stay far from every category
 * boundary, so f32 and double pick the same categories (see pick_separated_seed). */
typedef struct ro_size {
    const char *name;
    int64_t E, B, F, H, S, T;
    int mode, lbr, shared_f, separated;
} ro_size;

static const ro_size sizes[] = {
    /* Verification: every mode and variant, E 1 and 3, B 1 and 2, H 1, 7, 33, S 0 and 5,
     * T 1 and 6, f shared by the members or not; "wide" has 3H and S above the default WG so
     * the multi-pass paths and multi-category chunks run. */
    {"h1-argmax", 1, 1, 3, 1, 5, 6, RO_MODE_ARGMAX, 1, 0, 0},
    {"h7-mean-lbr0", 3, 2, 3, 7, 5, 6, RO_MODE_MEAN, 0, 1, 0},
    {"h33-argmax-lbr0", 3, 2, 3, 33, 5, 6, RO_MODE_ARGMAX, 0, 0, 0},
    {"h33-mean-t1", 1, 2, 3, 33, 5, 1, RO_MODE_MEAN, 1, 1, 0},
    {"s0", 3, 2, 3, 7, 0, 6, RO_MODE_SAMPLE, 1, 1, 0},
    {"s0-lbr0", 1, 1, 3, 33, 0, 6, RO_MODE_MEAN, 0, 0, 0},
    {"sample", 3, 2, 3, 7, 5, 6, RO_MODE_SAMPLE, 1, 0, 1},
    {"sample-lbr0", 1, 2, 3, 33, 5, 6, RO_MODE_SAMPLE, 0, 1, 1},
    {"wide", 2, 1, 5, 129, 300, 3, RO_MODE_MEAN, 1, 0, 0},
    /* Benchmarks: the seed plan's ensemble (E 5, B 1, F 64, H 256, S 256), T 50 and 100, and
     * H 1024. */
    {"seed", 5, 1, 64, 256, 256, 50, RO_MODE_SAMPLE, 1, 1, 0},
    {"seed100", 5, 1, 64, 256, 256, 100, RO_MODE_SAMPLE, 1, 1, 0},
    {"h1024", 5, 1, 64, 1024, 256, 50, RO_MODE_SAMPLE, 1, 1, 0},
};

const char *const gru_rollout_verify_sizes[] = {
    "h1-argmax", "h7-mean-lbr0", "h33-argmax-lbr0", "h33-mean-t1", "s0",
    "s0-lbr0",   "sample",       "sample-lbr0",     "wide",        NULL};
const char *const gru_rollout_bench_sizes[] = {"seed", "seed100", "h1024", NULL};

/*
 * A seed whose draws u(seed, e, b, t) all lie at least `margin` from every boundary of the CDF
 * of softmax(b_p[e]). With |w_p| <= bound, |w_p h| <= H bound (|h| < 1), so the logits move by
 * at most that and the CDF by at most twice it: a margin above that keeps every draw's category
 * the same in any precision. Tries seeds from the sample's stream; returns 0 when none fits.
 */
static int pick_separated_seed(kp_sample *s, const ro_size *z, const float *bp, double margin,
                               uint64_t *out)
{
    for (int attempt = 0; attempt < 4096; attempt++) {
        uint64_t seed = gru_host->sample_random(s);
        int ok = 1;
        for (int64_t e = 0; ok && e < z->E; e++) {
            double p[64], total = 0;
            for (int64_t c = 0; c < z->S; c++)
                total += p[c] = exp(bp[e * z->S + c]);
            for (int64_t b = 0; ok && b < z->B; b++) {
                for (int64_t t = 0; ok && t < z->T; t++) {
                    double u = kp_gru_rollout_uniform(seed, e, b, t), cdf = 0;
                    for (int64_t c = 0; ok && c + 1 < z->S; c++) {
                        cdf += p[c] / total;
                        ok = fabs(u - cdf) >= margin;
                    }
                }
            }
        }
        if (ok) {
            *out = seed;
            return 1;
        }
    }
    return 0;
}

kp_status gru_rollout_sample(kp_sample *s, const char *size)
{
    const ro_size *z = NULL;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].name, size) == 0)
            z = &sizes[i];
    if (!z)
        return KP_ERR_NOT_FOUND; /* the core names the size in its message */
    const int64_t E = z->E, B = z->B, F = z->F, H = z->H, S = z->S, I = F + 1 + S;
    /* PyTorch's initialisation, U(-1/sqrt(H), 1/sqrt(H)), keeps every sum near 1. */
    const double w = 1.0 / sqrt((double)H);
    /* Separated draws need logits that barely depend on h: |w_p| <= 1e-3 / H. */
    const double wp = z->separated ? 1e-3 / (double)H : w;
    float *bp = NULL;
    kp_status st =
        gru_host->sample_tensor(s, "w_ih", KP_F32, 3, (int64_t[]){E, 3 * H, I}, -w, w, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "w_hh", KP_F32, 3, (int64_t[]){E, 3 * H, H}, -w, w, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "b_ih", KP_F32, 2, (int64_t[]){E, 3 * H}, -w, w, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "b_hh", KP_F32, 2, (int64_t[]){E, 3 * H}, -w, w, NULL);
    if (st == KP_OK && S > 0)
        st = gru_host->sample_tensor(s, "w_p", KP_F32, 3, (int64_t[]){E, S, H}, -wp, wp, NULL);
    /* Prior biases in [-1.5, 1.5): categories of clearly different probability, so argmax
     * near-ties are rare too. */
    if (st == KP_OK && S > 0)
        st = gru_host->sample_tensor(s, "b_p", KP_F32, 2, (int64_t[]){E, S}, -1.5, 1.5,
                                     (void **)&bp);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "w_y", KP_F32, 2, (int64_t[]){E, H + S}, -w, w, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "b_y", KP_F32, 1, (int64_t[]){E}, -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "f", KP_F32, 3, (int64_t[]){z->shared_f ? 1 : E, B, F},
                                     -1.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "y0", KP_F32, 1, (int64_t[]){B}, 0.0, 3.0, NULL);
    if (st == KP_OK && S > 0)
        st = gru_host->sample_tensor(s, "z0", KP_F32, 3, (int64_t[]){E, B, S}, 0.0, 1.0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h0", KP_F32, 3, (int64_t[]){E, B, H}, -0.5, 0.5, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "y", KP_F32, 3, (int64_t[]){E, B, z->T}, 0, 0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "h_T", KP_F32, 3, (int64_t[]){E, B, H}, 0, 0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "entropy", KP_F32, 3, (int64_t[]){E, B, z->T}, 0, 0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_tensor(s, "hnorm", KP_F32, 3, (int64_t[]){E, B, z->T}, 0, 0, NULL);
    if (st == KP_OK)
        st = gru_host->sample_int(s, "T", z->T);
    if (st == KP_OK)
        st = gru_host->sample_int(s, "mode", z->mode);
    if (st == KP_OK)
        st = gru_host->sample_int(s, "linear_before_reset", z->lbr);
    uint64_t seed = gru_host->sample_random(s);
    /* Margin: 4x the CDF's largest move, |w_p h| <= 1e-3, plus f32 rounding. */
    if (st == KP_OK && z->separated && !pick_separated_seed(s, z, bp, 4e-3, &seed))
        return KP_ERR_INTERNAL; /* 4096 seeds without one: the margin is far too wide */
    if (st == KP_OK)
        st = gru_host->sample_int(s, "seed", (int64_t)seed);
    return st;
}
