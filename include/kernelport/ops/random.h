/* SPDX-License-Identifier: Apache-2.0 */
/* Counter-based random numbers: the generator of the tensor family's random kernels and of
 * gru.rollout's draws, on the host, so that applications can reproduce or audit them. */
#ifndef KERNELPORT_OPS_RANDOM_H
#define KERNELPORT_OPS_RANDOM_H

#include <stdint.h>

#include "../kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Philox4x32-10 (Salmon et al., SC'11; the generator of cuRAND and PyTorch): four random words of
 * `counter` under `key`. Only 32-bit integer operations, so every device (the OpenCL prelude's
 * kp_philox4x32_10) and the host compute the same bits. Thread-safe, no state.
 */
KP_INLINE void kp_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/*
 * The uniform float in [0, 1) that tensor.uniform writes at element `index` (row-major over the
 * output's shape) for `seed` and `offset`: with n = index + offset, the top 24 bits of word n % 4
 * of Philox4x32-10 of the counter (n / 4 as 64 bits, low word first, 0, 0) under the key (seed's
 * low, high 32 bits). tensor.bernoulli compares the same number with p.
 */
KP_INLINE float kp_random_uniform(uint64_t seed, uint64_t offset, uint64_t index)
{
    const uint64_t n = index + offset, g = n / 4;
    const uint32_t counter[4] = {(uint32_t)g, (uint32_t)(g >> 32), 0, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t out[4];
    kp_philox4x32_10(counter, key, out);
    return (float)(out[n % 4] >> 8) * 0x1p-24f;
}

#ifdef __cplusplus
}
#endif

#endif
