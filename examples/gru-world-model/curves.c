/* SPDX-License-Identifier: Apache-2.0 */
/* Synthetic loss curves (curves.h): decays with plateaus, log-normal noise and spikes. */
#include "curves.h"

#include <math.h>

#include "kernelport/ops/random.h"

/* Uniform draws from curve i's own stream: index i * 2^32 + k of the seed's Philox sequence. */
typedef struct stream {
    uint64_t seed, base, k;
} stream;

static double uniform(stream *s)
{
    return kp_random_uniform(s->seed, s->base, s->k++);
}

static double between(stream *s, double lo, double hi)
{
    return lo + (hi - lo) * uniform(s);
}

/* exp(U(log lo, log hi)): a scale drawn evenly over its orders of magnitude. */
static double log_between(stream *s, double lo, double hi)
{
    return exp(between(s, log(lo), log(hi)));
}

/* Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
static double normal(stream *s)
{
    const double u = 1.0 - uniform(s), w = uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

static void one_curve(stream *s, int length, float *v, unsigned char *family)
{
    const int fam = uniform(s) < 0.5 ? CURVE_EXP : CURVE_POWER;
    const double floor_ = log_between(s, 0.02, 0.5), scale = log_between(s, 0.5, 3.0);
    const double tau = between(s, 20, 250), t0 = between(s, 5, 60), alpha = between(s, 0.3, 1.5);
    /* A plateau stops the decay's clock for `len` steps from `start` (30% of the curves). */
    const int has_plateau = uniform(s) < 0.3;
    const double start = between(s, 10, length), len = between(s, 10, 60);
    const double sigma = between(s, 0.005, 0.05), spike_rate = between(s, 0.0, 0.02);
    double spike = 0, spike_decay = 1;
    for (int t = 0; t < length; t++) {
        double clock = t;
        if (has_plateau && t >= start)
            clock = t >= start + len ? t - len : start;
        const double loss = fam == CURVE_EXP ? floor_ + scale * exp(-clock / tau)
                                             : floor_ + scale * pow(1.0 + clock / t0, -alpha);
        spike *= spike_decay;
        if (uniform(s) < spike_rate) {
            spike += between(s, 0.2, 1.0);
            spike_decay = exp(-1.0 / between(s, 1.0, 5.0));
        }
        v[t] = (float)(log(loss) + spike + sigma * normal(s));
    }
    if (family)
        *family = (unsigned char)fam;
}

void curves_generate(uint64_t seed, int64_t n, int length, float *v, unsigned char *family)
{
    for (int64_t i = 0; i < n; i++) {
        stream s = {seed, (uint64_t)i << 32, 0};
        one_curve(&s, length, v + i * length, family ? family + i : NULL);
    }
}
