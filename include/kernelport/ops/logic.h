/* SPDX-License-Identifier: Apache-2.0 */
/* Host helpers of the logic family: the 16 gate ops, wirings, initialisations, the reverse CSR. */
#ifndef KERNELPORT_OPS_LOGIC_H
#define KERNELPORT_OPS_LOGIC_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The 16 two-input ops in difflogic's order (docs/kernels/logic.md, "Semantics"). An op's id is
 * also its truth table: bit 0 is its value at (a, b) = (1, 1), bit 1 at (1, 0), bit 2 at (0, 1)
 * and bit 3 at (0, 0).
 */
typedef enum kp_logic_op {
    KP_LOGIC_FALSE = 0,
    KP_LOGIC_AND = 1,
    KP_LOGIC_A_AND_NOT_B = 2,
    KP_LOGIC_A = 3,
    KP_LOGIC_NOT_A_AND_B = 4,
    KP_LOGIC_B = 5,
    KP_LOGIC_XOR = 6,
    KP_LOGIC_OR = 7,
    KP_LOGIC_NOR = 8,
    KP_LOGIC_XNOR = 9,
    KP_LOGIC_NOT_B = 10,
    KP_LOGIC_A_OR_NOT_B = 11,
    KP_LOGIC_NOT_A = 12,
    KP_LOGIC_NOT_A_OR_B = 13,
    KP_LOGIC_NAND = 14,
    KP_LOGIC_TRUE = 15,
    KP_LOGIC_N_OPS = 16
} kp_logic_op;

/* The four terms every op is affine in, the rows of the coefficient table. */
enum { KP_LOGIC_T1 = 0, KP_LOGIC_TA = 1, KP_LOGIC_TB = 2, KP_LOGIC_TAB = 3 };

/*
 * The 4 x 16 coefficient table M: op i is M[T1][i] + M[TA][i] a + M[TB][i] b + M[TAB][i] ab on
 * soft inputs a, b in [0, 1]. A gate with op probabilities p has coefficients C = M p. Returns
 * 0 for a term or op out of range.
 */
KP_INLINE int kp_logic_coeff(int term, int op)
{
    static const int8_t m[4][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},       /* 1 */
                                    {0, 0, 1, 1, 0, 0, 1, 1, -1, -1, 0, 0, -1, -1, 0, 0},   /* a */
                                    {0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 0, 0},   /* b */
                                    {0, 1, -1, 0, -1, 0, -2, -1, 1, 2, 0, 1, 0, 1, -1, 0}}; /* ab */
    return term >= 0 && term < 4 && op >= 0 && op < 16 ? m[term][op] : 0;
}

/* "FALSE", "AND", "A_AND_NOT_B", ... "TRUE"; "?" out of range. Static strings. */
KP_INLINE const char *kp_logic_op_name(int op)
{
    static const char *const names[16] = {
        "FALSE", "AND",  "A_AND_NOT_B", "A",          "NOT_A_AND_B", "B",          "XOR",  "OR",
        "NOR",   "XNOR", "NOT_B",       "A_OR_NOT_B", "NOT_A",       "NOT_A_OR_B", "NAND", "TRUE"};
    return op >= 0 && op < 16 ? names[op] : "?";
}

/* Op `op`'s relaxation on soft inputs (the table's affine form). */
KP_INLINE double kp_logic_op_soft(int op, double a, double b)
{
    return kp_logic_coeff(KP_LOGIC_T1, op) + kp_logic_coeff(KP_LOGIC_TA, op) * a +
           kp_logic_coeff(KP_LOGIC_TB, op) * b + kp_logic_coeff(KP_LOGIC_TAB, op) * a * b;
}

/*
 * Op `op` on 64 samples at once (bit i of each word is sample i): its algebraic normal form
 * c0 ^ (ca & a) ^ (cb & b) ^ (cab & a & b), read off the truth table in the op's id. This is what
 * logic.eval_packed computes on 32-bit words.
 */
KP_INLINE uint64_t kp_logic_op_bits(int op, uint64_t a, uint64_t b)
{
    unsigned t11 = (unsigned)op & 1, t10 = (unsigned)op >> 1 & 1, t01 = (unsigned)op >> 2 & 1;
    unsigned t00 = (unsigned)op >> 3 & 1;
    uint64_t c0 = 0 - (uint64_t)t00, ca = 0 - (uint64_t)(t10 ^ t00);
    uint64_t cb = 0 - (uint64_t)(t01 ^ t00), cab = 0 - (uint64_t)(t11 ^ t10 ^ t01 ^ t00);
    return c0 ^ (ca & a) ^ (cb & b) ^ (cab & a & b);
}

/* ------------------------------------------------------------------------------------------ */
/* Random numbers (seeded, reproducible on every platform)                                    */
/* ------------------------------------------------------------------------------------------ */

/* splitmix64: the stream every helper below draws from; *state is the seed, advanced. */
KP_INLINE uint64_t kp_logic_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) for n >= 1, without modulo bias (rejection of the short last interval). */
KP_INLINE uint64_t kp_logic_random_below(uint64_t *state, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do
        r = kp_logic_random(state);
    while (r >= limit);
    return r % n;
}

/* p[0..n) = a uniformly random permutation of 0..n-1 (Fisher-Yates). */
KP_INLINE void kp_logic_randperm(int32_t *p, int64_t n, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (int32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)kp_logic_random_below(state, (uint64_t)i + 1);
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Wirings                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/*
 * difflogic's `random` connections for a layer of out_dim gates over in_dim inputs: the 2 out_dim
 * input slots are a random permutation of 0..2 out_dim-1 taken modulo in_dim (so every input is
 * used when 2 out_dim >= in_dim, as evenly as possible), relabelled by a random permutation of the
 * inputs; slots 0..out_dim-1 are a_idx, the rest b_idx. A gate may read one wire twice. Seeded by
 * `seed` (the same seed gives the same wiring everywhere; not torch's stream). a_idx and b_idx
 * (caller-owned, out_dim each) receive the wiring. Returns 0; -1 (nothing written) when
 * in_dim < 1, out_dim < 1, 2 out_dim < in_dim (difflogic's condition), beyond int32, or out of
 * memory. Thread-safe.
 */
KP_INLINE int kp_logic_wiring_random(int64_t in_dim, int64_t out_dim, uint64_t seed, int32_t *a_idx,
                                     int32_t *b_idx)
{
    if (!a_idx || !b_idx || in_dim < 1 || out_dim < 1 || 2 * out_dim < in_dim ||
        2 * out_dim > INT32_MAX)
        return -1;
    int32_t *slots = (int32_t *)malloc((size_t)(2 * out_dim) * sizeof *slots);
    int32_t *relabel = (int32_t *)malloc((size_t)in_dim * sizeof *relabel);
    if (!slots || !relabel) {
        free(slots);
        free(relabel);
        return -1;
    }
    uint64_t state = seed;
    kp_logic_randperm(slots, 2 * out_dim, &state);
    kp_logic_randperm(relabel, in_dim, &state);
    for (int64_t g = 0; g < out_dim; g++) {
        a_idx[g] = relabel[slots[g] % in_dim];
        b_idx[g] = relabel[slots[out_dim + g] % in_dim];
    }
    free(slots);
    free(relabel);
    return 0;
}

/*
 * difflogic's `unique` connections: distinct pairs of inputs, taken in this order until out_dim
 * are found: (0, 1), (2, 3), ...; then (1, 2), (3, 4), ...; then pairs (i, i + d) for
 * d = 2, 3, ... while fewer than out_dim pairs exist and more than d do (difflogic's loop
 * condition, kept so both give the same pairs); the out_dim pairs are then shuffled by a random
 * permutation of the gates (seeded). Returns 0, or -1 (nothing written) when the inputs cannot
 * give out_dim such pairs, when 2 out_dim < in_dim, or out of memory. Thread-safe.
 */
KP_INLINE int kp_logic_wiring_unique(int64_t in_dim, int64_t out_dim, uint64_t seed, int32_t *a_idx,
                                     int32_t *b_idx)
{
    if (!a_idx || !b_idx || in_dim < 1 || out_dim < 1 || 2 * out_dim < in_dim ||
        out_dim > INT32_MAX)
        return -1;
    int32_t *pa = (int32_t *)malloc((size_t)out_dim * sizeof *pa);
    int32_t *pb = (int32_t *)malloc((size_t)out_dim * sizeof *pb);
    int32_t *perm = (int32_t *)malloc((size_t)out_dim * sizeof *perm);
    int64_t n = 0;
    if (!pa || !pb || !perm) {
        free(pa), free(pb), free(perm);
        return -1;
    }
    for (int64_t i = 0; i + 1 < in_dim && n < out_dim; i += 2, n++)
        pa[n] = (int32_t)i, pb[n] = (int32_t)(i + 1);
    for (int64_t i = 1; i + 1 < in_dim && n < out_dim; i += 2, n++)
        pa[n] = (int32_t)i, pb[n] = (int32_t)(i + 1);
    for (int64_t d = 2; out_dim > n && n > d; d++)
        for (int64_t i = 0; i + d < in_dim && n < out_dim; i++, n++)
            pa[n] = (int32_t)i, pb[n] = (int32_t)(i + d);
    if (n < out_dim) {
        free(pa), free(pb), free(perm);
        return -1;
    }
    uint64_t state = seed;
    kp_logic_randperm(perm, out_dim, &state);
    for (int64_t g = 0; g < out_dim; g++) {
        a_idx[g] = pa[perm[g]];
        b_idx[g] = pb[perm[g]];
    }
    free(pa), free(pb), free(perm);
    return 0;
}

/*
 * Checks a wiring: every a_idx[g] and b_idx[g] in 0..in_dim-1. Returns -1 when all are, else the
 * first gate that is not (the kernels' `check` reports the same gate).
 */
KP_INLINE int64_t kp_logic_wiring_bad_gate(const int32_t *a_idx, const int32_t *b_idx,
                                           int64_t n_gates, int64_t in_dim)
{
    for (int64_t g = 0; g < n_gates; g++)
        if (a_idx[g] < 0 || a_idx[g] >= in_dim || b_idx[g] < 0 || b_idx[g] >= in_dim)
            return g;
    return -1;
}

/*
 * The reverse index logic.backward gathers dx with, built once per wiring: for input wire i, the
 * entries csr_entries[csr_start[i] .. csr_start[i + 1]) name each (gate, side) reading it, coded
 * 2 g + side (side 0: the gate's a input, 1: its b input), in increasing code order. A gate whose
 * two inputs are one wire has two entries there, so its dx gets dy/da + dy/db. csr_start has
 * in_dim + 1 elements, csr_entries 2 n_gates (caller-owned). Returns 0, or -1 (nothing
 * meaningful written) for a wiring out of range (kp_logic_wiring_bad_gate) or n_gates >= 2^30.
 * Deterministic: the same wiring gives the same index. Thread-safe.
 */
KP_INLINE int kp_logic_csr_build(const int32_t *a_idx, const int32_t *b_idx, int64_t n_gates,
                                 int64_t in_dim, int32_t *csr_start, int32_t *csr_entries)
{
    if (n_gates < 0 || n_gates >= ((int64_t)1 << 30) || in_dim < 1 ||
        kp_logic_wiring_bad_gate(a_idx, b_idx, n_gates, in_dim) >= 0)
        return -1;
    memset(csr_start, 0, (size_t)(in_dim + 1) * sizeof *csr_start);
    for (int64_t g = 0; g < n_gates; g++) {
        csr_start[a_idx[g] + 1]++;
        csr_start[b_idx[g] + 1]++;
    }
    for (int64_t i = 0; i < in_dim; i++)
        csr_start[i + 1] += csr_start[i];
    /* Counting sort by wire; gates in increasing order keep each wire's codes sorted. */
    for (int64_t g = 0; g < n_gates; g++) {
        csr_entries[csr_start[a_idx[g]]++] = (int32_t)(2 * g);
        csr_entries[csr_start[b_idx[g]]++] = (int32_t)(2 * g + 1);
    }
    /* Each start now holds the next wire's start: shift back by one. */
    for (int64_t i = in_dim; i > 0; i--)
        csr_start[i] = csr_start[i - 1];
    csr_start[0] = 0;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Initial logits w [n_gates, 16]                                                             */
/* ------------------------------------------------------------------------------------------ */

/* w = N(0, std^2) (difflogic's torch.randn with std 1), Box-Muller on the seeded stream. */
KP_INLINE void kp_logic_init_gaussian(float *w, int64_t n_gates, double std, uint64_t seed)
{
    uint64_t state = seed;
    for (int64_t i = 0; i < 16 * n_gates; i += 2) {
        double u1 = ((double)(kp_logic_random(&state) >> 11) + 1.0) * 0x1.0p-53;
        double u2 = (double)(kp_logic_random(&state) >> 11) * 0x1.0p-53;
        double r = sqrt(-2.0 * log(u1)), t = 6.283185307179586 * u2;
        w[i] = (float)(std * r * cos(t));
        if (i + 1 < 16 * n_gates)
            w[i + 1] = (float)(std * r * sin(t));
    }
}

/* Every gate starts as the pass-through op A (id 3) with logit `logit`, every other logit 0. */
KP_INLINE void kp_logic_init_pass(float *w, int64_t n_gates, float logit)
{
    for (int64_t g = 0; g < n_gates; g++) {
        for (int i = 0; i < 16; i++)
            w[16 * g + i] = 0.0f;
        w[16 * g + KP_LOGIC_A] = logit;
    }
}

/* Residual initialisation: op A at logit 5 (softmax probability 0.908). */
KP_INLINE void kp_logic_init_residual(float *w, int64_t n_gates)
{
    kp_logic_init_pass(w, n_gates, 5.0f);
}

/* Pass-through initialisation of DiffLogic CA: op A at logit 10 (probability 0.9993). */
KP_INLINE void kp_logic_init_pass_through(float *w, int64_t n_gates)
{
    kp_logic_init_pass(w, n_gates, 10.0f);
}

#ifdef __cplusplus
}
#endif

#endif
