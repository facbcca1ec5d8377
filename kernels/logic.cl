/* SPDX-License-Identifier: Apache-2.0 */
/* Logic-gate networks: gate coefficients, forward, backward, packed inference, CA perception. */

/*
 * Layouts (docs/kernels/logic.md): activations are feature-major, x [IN, N] with the batch N
 * contiguous, so the gathers x[a_idx[g], n..n+k] read contiguous runs. A tensor arrives as its
 * buffer and a view of the prelude (kp_view1, kp_view2, kp_view4: offset and strides). The
 * last dimension of a 2-D tensor is contiguous (`check` enforces it), so a row is found with ROW
 * below and indexed by its column directly: the column stride is never read.
 *
 * Every size that shapes a loop is a run-time argument and the only value compiled in is VW
 * (below), so the family needs few programs: one without -D VW (coeffs, pack, perceive, the
 * packed group sum) and one per vector width in use, each build serving all seventeen entries
 * (PoCL compiles each entry once per local size anyway). Work-items never leave before a
 * barrier, and no barrier sits in a loop whose trip count differs between work-items (the CA
 * kernels' layer loop runs L times in every one; docs/plugin-authoring.md, section 8).
 *
 * A gate is four coefficients C = (C1, Ca, Cb, Cab): y = C1 + Ca a + Cb b + Cab a b, which is
 * every one of the 16 ops and any mixture of them (the rows of MT below, op by op).
 */

/* VW, the vector width in floats of the batch-parallel kernels, is the one compiled-in value:
 * the plugin passes -D VW from a kernel's VW tunable as resolved for the device (eval_packed on
 * CPUs: the widest that fits the call's rows). */
#ifndef VW
#define VW 4
#endif
#if VW == 16
#define VEC float16
#define UVEC uint16
#define IOTA (uint16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define CONVERT convert_float16
#define VLOAD vload16
#define VSTORE vstore16
#elif VW == 8
#define VEC float8
#define UVEC uint8
#define IOTA (uint8)(0, 1, 2, 3, 4, 5, 6, 7)
#define CONVERT convert_float8
#define VLOAD vload8
#define VSTORE vstore8
#elif VW == 4
#define VEC float4
#define UVEC uint4
#define IOTA (uint4)(0, 1, 2, 3)
#define CONVERT convert_float4
#define VLOAD vload4
#define VSTORE vstore4
#elif VW == 2
#define VEC float2
#define UVEC uint2
#define IOTA (uint2)(0, 1)
#define CONVERT convert_float2
#define VLOAD vload2
#define VSTORE vstore2
#else
#undef VW
#define VW 1
#define VEC float
#define UVEC uint
#define IOTA 0u
#define CONVERT convert_float
#define VLOAD(i, p) (*(p))
#define VSTORE(v, i, p) (*(p) = (v))
#endif

/* A vector's horizontal sum, the prelude's: halves added lane-wise, then pairs, the same order on
 * every device. */
#if VW == 16
#define HSUM(v) kp_hsum16(v)
#elif VW == 8
#define HSUM(v) kp_hsum8(v)
#elif VW == 4
#define HSUM(v) kp_hsum4(v)
#elif VW == 2
#define HSUM(v) kp_hsum2(v)
#else
#define HSUM(v) (v)
#endif

/* The element index of row r's first element in a 2-D view (element (r, c) is ROW(v, r) + c). */
#define ROW(v, r) (kp_offset(v) + (r) * kp_stride(v, 0))

/* The 4 x 16 coefficient table: rows 1, a, b, ab; column i is op i (difflogic's order). */
__constant float MT[4][16] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1},
    {0, 0, 1, 1, 0, 0, 1, 1, -1, -1, 0, 0, -1, -1, 0, 0},
    {0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 0, 0},
    {0, 1, -1, 0, -1, 0, -2, -1, 1, 2, 0, 1, 0, 1, -1, 0}};

/* An index read from a wiring, clamped into 0..n-1: `check` rejects out-of-range wirings, and a
 * caller that turned that off (check_wiring 0) gets wrong values, never a stray access. */
static int wire(__global const int *idx, const kp_view1 v, int g, int n)
{
    return clamp(idx[kp_at1(v, g)], 0, n - 1);
}

/* ---- logic.coeffs ---------------------------------------------------------------------------- */

/* The table's rows as vectors, for the softmax's dot products. */
__constant float16 M16[4] = {
    (float16)(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
    (float16)(0, 0, 1, 1, 0, 0, 1, 1, -1, -1, 0, 0, -1, -1, 0, 0),
    (float16)(0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, 0, 0, 0, 0),
    (float16)(0, 1, -1, 0, -1, 0, -2, -1, 1, 2, 0, 1, 0, 1, -1, 0)};

/* One work-item per gate: the argmax of its 16 logits (ties to the lowest id: a strict > in id
 * order), then C = M p with p one-hot there (hard 1) or the softmax (hard 0), whose exponentials
 * and four dot products run as 16-wide vector operations. has_c / has_op say which outputs
 * exist. */
__kernel void logic_coeffs(const int G, const int hard, __global const float *w, const kp_view2 wv,
                           __global float *C, const kp_view2 cv, const int has_c, __global int *op,
                           const kp_view1 ov, const int has_op)
{
    const int g = get_global_id(0);
    if (g >= G)
        return;
    const float16 lv = vload16(0, w + ROW(wv, g));
    float l[16];
    vstore16(lv, 0, l);
    int best = 0;
    for (int i = 1; i < 16; i++)
        best = l[i] > l[best] ? i : best;
    if (has_op)
        op[kp_at1(ov, g)] = best;
    if (!has_c)
        return;
    float4 c = (float4)(MT[0][best], MT[1][best], MT[2][best], MT[3][best]);
    if (!hard) {
        const float16 e = exp(lv - l[best]);
        c = (float4)(kp_hsum16(e * M16[0]), kp_hsum16(e * M16[1]), kp_hsum16(e * M16[2]),
                     kp_hsum16(e * M16[3])) /
            kp_hsum16(e);
    }
    vstore4(c, 0, C + ROW(cv, g));
}

/* ---- logic.forward --------------------------------------------------------------------------- */

/*
 * Dimension 1 is the gate, dimension 0 the batch in vectors of VW samples: a work-group of
 * L = get_local_size(0) lanes covers L * spt vectors, lane j taking vectors base + j,
 * base + j + L, ... (neighbouring lanes read neighbouring vectors: coalesced on GPUs, whole
 * SIMD registers on CPUs, whose OpenCL compilers do not always vectorise across work-items).
 * The gate's wiring and coefficients are read once per work-item and kept for its spt vectors.
 * The last, partial vector of a row goes sample by sample.
 */
__kernel void logic_forward(const int N, const int G, const int IN, const int spt,
                            __global const float *x, const kp_view2 xv, __global const int *a_idx,
                            const kp_view1 av, __global const int *b_idx, const kp_view1 bv,
                            __global const float *C, const kp_view2 cv, __global float *y,
                            const kp_view2 yv)
{
    const int g = get_global_id(1);
    const int L = get_local_size(0);
    if (g >= G)
        return;
    const int ia = wire(a_idx, av, g, IN), ib = wire(b_idx, bv, g, IN);
    const float c1 = C[ROW(cv, g)], ca = C[ROW(cv, g) + 1], cb = C[ROW(cv, g) + 2];
    const float cab = C[ROW(cv, g) + 3];
    __global const float *xa = x + ROW(xv, ia), *xb = x + ROW(xv, ib);
    __global float *yo = y + ROW(yv, g);
    const int base = get_group_id(0) * L * spt + get_local_id(0);
    for (int k = 0; k < spt; k++) {
        const int n = (base + k * L) * VW;
        if (n + VW <= N) {
            const VEC a = VLOAD(0, xa + n), b = VLOAD(0, xb + n);
            /* (Ca + Cab b) a + (C1 + Cb b): three FMAs. */
            VSTORE(fma(fma((VEC)cab, b, (VEC)ca), a, fma((VEC)cb, b, (VEC)c1)), 0, yo + n);
        } else {
            for (int m = n; m < N; m++)
                yo[m] = fma(fma(cab, xb[m], ca), xa[m], fma(cb, xb[m], c1));
        }
    }
}

/* ---- logic.backward -------------------------------------------------------------------------- */

/*
 * dx by gather: dimension 1 is the input wire i, dimension 0 the batch in vectors as in the
 * forward. Wire i's entries in the reverse CSR name each (gate, side) reading it, coded
 * 2 g + side; the terms are added in entry order, so the sum is the same on every run (no
 * atomics). A side-a entry adds dy[g] (Ca + Cab b), a side-b entry dy[g] (Cb + Cab a): a gate
 * that reads i twice adds both.
 */
__kernel void logic_backward_dx(const int N, const int IN, const int G, const int spt,
                                __global const float *x, const kp_view2 xv,
                                __global const int *a_idx, const kp_view1 av,
                                __global const int *b_idx, const kp_view1 bv,
                                __global const float *C, const kp_view2 cv,
                                __global const float *dy, const kp_view2 dyv,
                                __global const int *start, const kp_view1 sv,
                                __global const int *entries, const kp_view1 ev, __global float *dx,
                                const kp_view2 dxv)
{
    const int i = get_global_id(1);
    const int L = get_local_size(0);
    if (i >= IN)
        return;
    const int base = get_group_id(0) * L * spt + get_local_id(0);
    const int e0 = clamp(start[kp_at1(sv, i)], 0, 2 * G);
    const int e1 = clamp(start[kp_at1(sv, i + 1)], e0, 2 * G);
    __global float *out = dx + ROW(dxv, i);
#if VW > 1
    /* Wide vectors (CPUs): entries outside, the work-item's spt vectors inside, so each entry's
     * rows are read as one run of spt vectors and its wiring and coefficients once. */
    VEC acc[16];
    float tail[VW];
    for (int k = 0; k < spt; k++)
        acc[k] = (VEC)(0.0f);
    for (int m = 0; m < VW; m++)
        tail[m] = 0.0f;
    for (int e = e0; e < e1; e++) {
        const int code = entries[kp_at1(ev, e)];
        const int g = clamp(code >> 1, 0, G - 1), side = code & 1;
        const int other = side ? wire(a_idx, av, g, IN) : wire(b_idx, bv, g, IN);
        const float lin = C[ROW(cv, g) + 1 + side], cab = C[ROW(cv, g) + 3];
        __global const float *xo = x + ROW(xv, other), *d = dy + ROW(dyv, g);
        for (int k = 0; k < spt; k++) {
            const int n = (base + k * L) * VW;
            if (n + VW <= N)
                acc[k] = fma(fma((VEC)cab, VLOAD(0, xo + n), (VEC)lin), VLOAD(0, d + n), acc[k]);
            else
                for (int m = 0; m < N - n; m++)
                    tail[m] = fma(fma(cab, xo[n + m], lin), d[n + m], tail[m]);
        }
    }
    for (int k = 0; k < spt; k++) {
        const int n = (base + k * L) * VW;
        if (n + VW <= N)
            VSTORE(acc[k], 0, out + n);
        else
            for (int m = 0; m < N - n; m++)
                out[n + m] = tail[m];
    }
#else
    /* Scalar lanes (GPUs): the entries per sample, lanes reading neighbouring samples. */
    for (int k = 0; k < spt; k++) {
        const int n = base + k * L;
        if (n >= N)
            break;
        float acc = 0.0f;
        for (int e = e0; e < e1; e++) {
            const int code = entries[kp_at1(ev, e)];
            const int g = clamp(code >> 1, 0, G - 1), side = code & 1;
            const int other = side ? wire(a_idx, av, g, IN) : wire(b_idx, bv, g, IN);
            const float lin = C[ROW(cv, g) + 1 + side], cab = C[ROW(cv, g) + 3];
            acc = fma(fma(cab, x[ROW(xv, other) + n], lin), dy[ROW(dyv, g) + n], acc);
        }
        out[n] = acc;
    }
#endif
}

/*
 * dw, stage 1: the four batch sums S = (sum dy, sum dy a, sum dy b, sum dy a b) of each gate over
 * one block of the batch. A work-group is L lanes (dimension 0) by R gates (dimension 1); block
 * `blk` is L * items vectors, lane j summing vectors blk L items + t L + j for t < items (a
 * partial last vector sample by sample). The lanes' sums meet in local memory after the only
 * barrier and lane 0 adds them in lane order, so every sum is made in one fixed order.
 */
__kernel void logic_backward_dw_partial(const int N, const int G, const int IN, const int items,
                                        __global const float *x, const kp_view2 xv,
                                        __global const int *a_idx, const kp_view1 av,
                                        __global const int *b_idx, const kp_view1 bv,
                                        __global const float *dy, const kp_view2 dyv,
                                        __global float4 *part, const int nb,
                                        __local float4 *red)
{
    const int lane = get_local_id(0), L = get_local_size(0);
    const int row = get_local_id(1) * L;
    const int g = get_global_id(1), blk = get_group_id(0);
    float4 s = (float4)(0.0f);
    if (g < G) {
        const int ia = wire(a_idx, av, g, IN), ib = wire(b_idx, bv, g, IN);
        __global const float *xa = x + ROW(xv, ia), *xb = x + ROW(xv, ib);
        __global const float *d = dy + ROW(dyv, g);
        const int base = blk * L * items + lane;
        VEC s0 = (VEC)(0.0f), s1 = (VEC)(0.0f), s2 = (VEC)(0.0f), s3 = (VEC)(0.0f);
        for (int t = 0; t < items; t++) {
            const int n = (base + t * L) * VW;
            if (n + VW <= N) {
                const VEC a = VLOAD(0, xa + n), b = VLOAD(0, xb + n), e = VLOAD(0, d + n);
                const VEC ea = e * a;
                s0 += e;
                s1 += ea;
                s2 += e * b;
                s3 += ea * b;
            } else {
                for (int m = n; m < N; m++) {
                    const float ea = d[m] * xa[m];
                    s += (float4)(d[m], ea, d[m] * xb[m], ea * xb[m]);
                }
            }
        }
        s += (float4)(HSUM(s0), HSUM(s1), HSUM(s2), HSUM(s3));
    }
    red[row + lane] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane == 0 && g < G) {
        float4 t = red[row];
        for (int j = 1; j < L; j++)
            t += red[row + j];
        part[g * nb + blk] = t;
    }
}

/* A gate's 16 logits' gradient from its four batch sums S = (sum dy, sum dy a, sum dy b,
 * sum dy a b): dL/dp_i = S1 M[1][i] + Sa M[a][i] + Sb M[b][i] + Sab M[ab][i] for each op, and the
 * softmax's backward dw_i = p_i (dL/dp_i - sum_j p_j dL/dp_j). */
static void gate_dw(float4 S, __global const float *w, __global float *dw)
{
    float l[16], m = w[0];
    for (int i = 0; i < 16; i++) {
        l[i] = w[i];
        m = fmax(m, l[i]);
    }
    float sum = 0.0f, dot = 0.0f, gp[16];
    for (int i = 0; i < 16; i++) {
        l[i] = exp(l[i] - m);
        sum += l[i];
        gp[i] = S.x * MT[0][i] + S.y * MT[1][i] + S.z * MT[2][i] + S.w * MT[3][i];
        dot += l[i] * gp[i];
    }
    dot /= sum;
    for (int i = 0; i < 16; i++)
        dw[i] = l[i] / sum * (gp[i] - dot);
}

/*
 * dw, stage 2, one work-item per gate: the blocks' sums in block order, then gate_dw.
 */
__kernel void logic_backward_dw_final(const int G, const int nb, __global const float4 *part,
                                      __global const float *w, const kp_view2 wv,
                                      __global float *dw, const kp_view2 dwv)
{
    const int g = get_global_id(0);
    if (g >= G)
        return;
    float4 S = (float4)(0.0f);
    for (int k = 0; k < nb; k++)
        S += part[g * nb + k];
    gate_dw(S, w + ROW(wv, g), dw + ROW(dwv, g));
}

/* ---- logic.pack / logic.unpack --------------------------------------------------------------- */

/* One work-item per word (dimension 0) of a row (dimension 1): bit j of word c is sample
 * 32 c + j, set when that sample is above 0.5; bits past N stay zero. */
__kernel void logic_pack(const int N, const int F, const int nw, __global const float *x,
                         const kp_view2 xv, __global uint *bits, const kp_view2 bv)
{
    const int c = get_global_id(0), f = get_global_id(1);
    if (c >= nw || f >= F)
        return;
    __global const float *row = x + ROW(xv, f);
    const int n0 = 32 * c, n1 = min(n0 + 32, N);
    uint word = 0;
    for (int n = n0; n < n1; n++)
        word |= (uint)(row[n] > 0.5f) << (n - n0);
    bits[ROW(bv, f) + c] = word;
}

/* One work-item per VW samples (dimension 0; VW divides 32, so they share a word) of a row
 * (dimension 1): 0.0 or 1.0 each. */
__kernel void logic_unpack(const int N, const int F, __global const uint *bits, const kp_view2 bv,
                           __global float *y, const kp_view2 yv)
{
    const int n = get_global_id(0) * VW, f = get_global_id(1);
    if (n >= N || f >= F)
        return;
    const uint word = bits[ROW(bv, f) + (n >> 5)] >> (n & 31);
    __global float *o = y + ROW(yv, f);
    if (n + VW <= N)
        VSTORE(CONVERT(((UVEC)(word) >> IOTA) & (UVEC)(1u)), 0, o + n);
    else
        for (int m = n; m < N; m++)
            o[m] = (float)((word >> (m - n)) & 1u);
}

/* ---- logic.eval_packed ----------------------------------------------------------------------- */

/*
 * Hard inference on packed samples: dimension 1 the gate, dimension 0 its words in vectors of VW
 * (lane j of L takes vectors base + j, base + j + L, ..., wpi of them). The op id is its truth
 * table (bit 0 at (a, b) = (1, 1), bit 1 at (1, 0), bit 2 at (0, 1), bit 3 at (0, 0)), so its
 * algebraic normal form c0 ^ ca a ^ cb b ^ cab a b comes from four bits with no branch on the
 * op: the same instructions for all 16 ops. The row's last word is masked with `tail` so padding
 * bits stay zero (rewritten after its vector's store); a partial vector goes word by word.
 */
__kernel void logic_eval_packed(const int nw, const int G, const int IN, const int wpi,
                                const uint tail, __global const uint *x, const kp_view2 xv,
                                __global const int *a_idx, const kp_view1 av,
                                __global const int *b_idx, const kp_view1 bv,
                                __global const int *op, const kp_view1 ov, __global uint *y,
                                const kp_view2 yv)
{
    const int g = get_global_id(1);
    const int L = get_local_size(0);
    if (g >= G)
        return;
    const uint t = (uint)op[kp_at1(ov, g)];
    const uint t11 = t & 1u, t10 = (t >> 1) & 1u, t01 = (t >> 2) & 1u, t00 = (t >> 3) & 1u;
    const uint c0 = 0u - t00, ca = 0u - (t10 ^ t00), cb = 0u - (t01 ^ t00);
    const uint cab = 0u - (t11 ^ t10 ^ t01 ^ t00);
    const int ia = wire(a_idx, av, g, IN), ib = wire(b_idx, bv, g, IN);
    __global const uint *xa = x + ROW(xv, ia), *xb = x + ROW(xv, ib);
    __global uint *yo = y + ROW(yv, g);
    const int base = get_group_id(0) * L * wpi + get_local_id(0);
    for (int k = 0; k < wpi; k++) {
        const int c = (base + k * L) * VW;
        if (c + VW <= nw) {
            const UVEC a = VLOAD(0, xa + c), b = VLOAD(0, xb + c);
            VSTORE((UVEC)c0 ^ ((UVEC)ca & a) ^ ((UVEC)cb & b) ^ ((UVEC)cab & a & b), 0, yo + c);
            if (c + VW == nw && tail != 0xffffffffu) {
                const uint la = xa[nw - 1], lb = xb[nw - 1];
                yo[nw - 1] = (c0 ^ (ca & la) ^ (cb & lb) ^ (cab & la & lb)) & tail;
            }
        } else {
            for (int m = c; m < nw; m++) {
                const uint a = xa[m], b = xb[m];
                const uint r = c0 ^ (ca & a) ^ (cb & b) ^ (cab & a & b);
                yo[m] = m == nw - 1 ? r & tail : r;
            }
        }
    }
}

/* ---- logic.groupsum -------------------------------------------------------------------------- */

/* out[k, n] = (sum of rows kS .. kS+S-1 of y at n) / tau, added in row order. Dimension 0 the
 * batch in vectors of VW samples (a partial last vector sample by sample), dimension 1 the
 * class. */
__kernel void logic_groupsum(const int N, const int K, const int S, const float tau,
                             __global const float *y, const kp_view2 yv, __global float *out,
                             const kp_view2 ov)
{
    const int n = get_global_id(0) * VW, k = get_global_id(1);
    if (n >= N || k >= K)
        return;
    __global float *o = out + ROW(ov, k);
    if (n + VW <= N) {
        VEC s = (VEC)(0.0f);
        for (int r = k * S; r < k * S + S; r++)
            s += VLOAD(0, y + ROW(yv, r) + n);
        VSTORE(s / tau, 0, o + n);
    } else {
        for (int m = n; m < N; m++) {
            float s = 0.0f;
            for (int r = k * S; r < k * S + S; r++)
                s += y[ROW(yv, r) + m];
            o[m] = s / tau;
        }
    }
}

/* Its backward: dy[g, n] = dout[g / S, n] / tau. Dimension 0 the batch in vectors, 1 the gate. */
__kernel void logic_groupsum_backward(const int N, const int G, const int S, const float tau,
                                      __global const float *dout, const kp_view2 dv,
                                      __global float *dy, const kp_view2 yv)
{
    const int n = get_global_id(0) * VW, g = get_global_id(1);
    if (n >= N || g >= G)
        return;
    __global const float *d = dout + ROW(dv, g / S);
    __global float *o = dy + ROW(yv, g);
    if (n + VW <= N)
        VSTORE(VLOAD(0, d + n) / tau, 0, o + n);
    else
        for (int m = n; m < N; m++)
            o[m] = d[m] / tau;
}

/*
 * The packed variant: class k's count at each sample of word c, by a bit-sliced counter. Plane j
 * holds bit j of 32 counts; adding a row's word is a ripple carry through the planes (a half
 * adder per plane, stopping when the carry dies), 32 samples per instruction. Then each sample's
 * count is read from the planes. 20 planes count groups of up to 2^20 - 1 gates (check enforces
 * it). as_int: out holds int32 counts; else float counts / tau. Dimension 0 the word, 1 the class.
 */
__kernel void logic_groupsum_packed(const int N, const int K, const int S, const int nw,
                                    const float tau, const int as_int, __global const uint *bits,
                                    const kp_view2 bv, __global uint *out, const kp_view2 ov)
{
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= nw || k >= K)
        return;
    uint plane[20];
    for (int j = 0; j < 20; j++)
        plane[j] = 0u;
    for (int r = k * S; r < k * S + S; r++) {
        uint carry = bits[ROW(bv, r) + c];
        for (int j = 0; j < 20 && carry; j++) {
            const uint t = plane[j] & carry;
            plane[j] ^= carry;
            carry = t;
        }
    }
    const int n0 = 32 * c, n1 = min(n0 + 32, N);
    for (int n = n0; n < n1; n++) {
        uint count = 0u;
        for (int j = 0; j < 20; j++)
            count |= ((plane[j] >> (n - n0)) & 1u) << j;
        out[ROW(ov, k) + n] = as_int ? count : as_uint((float)count / tau);
    }
}

/* ---- logic.perceive -------------------------------------------------------------------------- */

/* Neighbour coordinate v + d on an axis of n cells: wrapped (periodic) or -1 outside (zero). */
static int neighbour(int v, int d, int n, int zero)
{
    const int u = v + d;
    if (u >= 0 && u < n)
        return u;
    return zero ? -1 : (u + n) % n;
}

/*
 * 3 x 3 Moore patches: work-item (cell, b C + c) writes features 9 c + 3 dy + dx (dy, dx in
 * 0..2 for offsets -1..1; 4 is the cell itself) at column b H W + cell of out. The grid is a
 * [B, C, H, W] view with any strides (a [C, H, W] grid arrives with B = 1, stride 0).
 */
__kernel void logic_perceive(const int B, const int Cn, const int H, const int W, const int zero,
                             __global const float *grid, const kp_view4 gv, __global float *out,
                             const kp_view2 ov)
{
    const int cell = get_global_id(0), bc = get_global_id(1);
    if (cell >= H * W || bc >= B * Cn)
        return;
    const int b = bc / Cn, c = bc % Cn, y = cell / W, xx = cell % W;
    const int col = b * H * W + cell;
    __global const float *plane = grid + kp_offset(gv) + b * kp_stride(gv, 0) + c * kp_stride(gv, 1);
    for (int k = 0; k < 9; k++) {
        const int u = neighbour(y, k / 3 - 1, H, zero), v = neighbour(xx, k % 3 - 1, W, zero);
        out[ROW(ov, 9 * c + k) + col] =
            u < 0 || v < 0 ? 0.0f : plane[u * kp_stride(gv, 2) + v * kp_stride(gv, 3)];
    }
}

/* Its backward by gather: the grid cell (y, x) was feature k of cell (y - dy + 1, x - dx + 1),
 * wrapped or, with zero boundaries, only when that cell exists; the nine terms in k order. */
__kernel void logic_perceive_backward(const int B, const int Cn, const int H, const int W,
                                      const int zero, __global const float *dout, const kp_view2 dv,
                                      __global float *dgrid, const kp_view4 gv)
{
    const int cell = get_global_id(0), bc = get_global_id(1);
    if (cell >= H * W || bc >= B * Cn)
        return;
    const int b = bc / Cn, c = bc % Cn, y = cell / W, xx = cell % W;
    float s = 0.0f;
    for (int k = 0; k < 9; k++) {
        const int u = neighbour(y, 1 - k / 3, H, zero), v = neighbour(xx, 1 - k % 3, W, zero);
        if (u >= 0 && v >= 0)
            s += dout[ROW(dv, 9 * c + k) + b * H * W + u * W + v];
    }
    dgrid[kp_at4(gv, b, c, y, xx)] = s;
}

/* ---- logic.perceive_packed ------------------------------------------------------------------- */

/*
 * 3 x 3 Moore patches of a bit-packed grid, 32 cells a word: bits [C, R wpr] holds R grid rows
 * (whole grids of H rows) of wpr = ceil(W / 32) words, bit j of word w the cell x = 32 w + j.
 * Work-item (word i of the tile, channel c) takes row first + i / wpr and writes its nine patch
 * words: for the row above, its own and the one below (wrapped, or zero outside), the word
 * shifted one cell east and west, the bit crossing in from the next or previous word. At the
 * row's ends the crossing bit is the other end's cell (periodic) or 0, never a padding bit past
 * W (which a packed step leaves undefined); padding bits of out are 0.
 */
__kernel void logic_perceive_packed(const int Cn, const int H, const int W, const int wpr,
                                    const int zero, const int first, const int words,
                                    __global const uint *bits, const kp_view2 bv,
                                    __global uint *out, const kp_view2 ov)
{
    const int i = get_global_id(0), c = get_global_id(1);
    if (i >= words || c >= Cn)
        return;
    const int r = first + i / wpr, w = i % wpr, y = r % H, top = r - y, last = (W - 1) & 31;
    const uint keep = w == wpr - 1 ? 0xffffffffu >> (31 - last) : 0xffffffffu;
    for (int d = 0; d < 3; d++) {
        const int u = neighbour(y, d - 1, H, zero);
        uint west = 0u, mid = 0u, east = 0u;
        if (u >= 0) {
            __global const uint *row = bits + ROW(bv, c) + (top + u) * wpr;
            mid = row[w];
            /* Cell W - 1 west of cell 0, cell 0 east of cell W - 1: the torus's wrap. */
            const uint wrap_w = zero ? 0u : (row[wpr - 1] >> last) & 1u;
            const uint wrap_e = zero ? 0u : row[0] & 1u;
            west = (mid << 1) | (w > 0 ? row[w - 1] >> 31 : wrap_w);
            east = mid >> 1;
            if (w + 1 < wpr)
                east |= row[w + 1] << 31;
            else
                east = (east & ~(1u << last)) | (wrap_e << last);
        }
        __global uint *o = out + ROW(ov, 9 * c + 3 * d) + i;
        o[0] = west & keep;
        o[kp_stride(ov, 0)] = mid & keep;
        o[2 * kp_stride(ov, 0)] = east & keep;
    }
}

/* ---- logic.ca_step, logic.ca_step_backward, logic.ca_dw -------------------------------------- */

/*
 * A logic-gate CA step, fused: a work-group is WG_N work-items (dimension 0) by LANES lanes
 * (dimension 1); a work-item takes VW consecutive cells (fewer at the end), and a cell's lanes
 * share its gates layer by layer (gate g0 + lane, + LANES, ...), with a barrier between layers
 * (the same count for every work-item: L). The activations live in acts [A, N], feature-major
 * like the rest of the family: a gate is one VW-wide load of each input row and one store (CPUs,
 * VW 16), or neighbouring work-items' columns (GPUs, VW 1, coalesced). Rows 0 .. 9C - 1 are the
 * cell's 3 x 3 patch, row 9C + g gate g's output (kp_logic_ca_net_build documents the network).
 * A gate's rows and its parameter are clamped into what its layer may read: `check` rejects bad
 * tables, and a caller that skips it (check_wiring 0) gets wrong values, never a stray access.
 * The global fence makes a layer's writes visible to the work-group's other lanes; cells never
 * read each other's columns within a launch (the patch reads `state`, which the launch does not
 * write).
 */

/* The coefficient row of gate g's parameter. */
static float4 ca_coeffs(__global const int *param, const kp_view1 pv, __global const float *C,
                        const kp_view2 cv, int g, int P)
{
    return vload4(0, C + ROW(cv, clamp(param[kp_at1(pv, g)], 0, P - 1)));
}

/* The async mask of cell n: 1 where it fires (fire[n] < rate), every cell without fire. */
static int ca_fires(__global const float *fire, const kp_view1 fv, int has_fire, float rate, int n)
{
    return !has_fire || fire[kp_at1(fv, n)] < rate;
}

__kernel void logic_ca_step(const int N, const int Cn, const int H, const int W, const int zero,
                            const int L, const int G, const int P, const int has_fire,
                            const float rate, __global const float *state, const kp_view2 sv,
                            __global float *next, const kp_view2 nv, __global float *acts,
                            const kp_view2 av, __global const int *layers, const kp_view1 lv,
                            __global const int *a_idx, const kp_view1 aiv,
                            __global const int *b_idx, const kp_view1 biv,
                            __global const int *param, const kp_view1 pv,
                            __global const float *C, const kp_view2 cv,
                            __global const float *fire, const kp_view1 fv)
{
    const int n0 = get_global_id(0) * VW, lane = get_local_id(1), LN = get_local_size(1);
    const int cnt = clamp(N - n0, 0, VW), HW = H * W, base = 9 * Cn;
    for (int m = 0; m < cnt; m++) {
        const int n = n0 + m, cell = n % HW, first = n - cell, y = cell / W, x = cell % W;
        for (int r = lane; r < base; r += LN) {
            const int c = r / 9, k = r % 9;
            const int u = neighbour(y, k / 3 - 1, H, zero), v = neighbour(x, k % 3 - 1, W, zero);
            acts[ROW(av, r) + n] = u < 0 || v < 0 ? 0.0f : state[ROW(sv, c) + first + u * W + v];
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    int g0 = 0;
    for (int l = 0; l < L; l++) {
        const int g1 = clamp(layers[kp_at1(lv, l + 1)], g0, G), top = base + g0 - 1;
        for (int g = g0 + lane; cnt > 0 && g < g1; g += LN) {
            const float4 c = ca_coeffs(param, pv, C, cv, g, P);
            __global const float *pa = acts + ROW(av, clamp(a_idx[kp_at1(aiv, g)], 0, top)) + n0;
            __global const float *pb = acts + ROW(av, clamp(b_idx[kp_at1(biv, g)], 0, top)) + n0;
            __global float *py = acts + ROW(av, base + g) + n0;
            if (cnt == VW) {
                const VEC a = VLOAD(0, pa), b = VLOAD(0, pb);
                VSTORE(fma(fma((VEC)c.w, b, (VEC)c.y), a, fma((VEC)c.z, b, (VEC)c.x)), 0, py);
            } else {
                for (int m = 0; m < cnt; m++)
                    py[m] = fma(fma(c.w, pb[m], c.y), pa[m], fma(c.z, pb[m], c.x));
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        g0 = g1;
    }
    /* The last layer's C gates are the new state; a cell that does not fire keeps its own. */
    for (int m = 0; m < cnt; m++) {
        const int n = n0 + m, fires = ca_fires(fire, fv, has_fire, rate, n);
        for (int c = lane; c < Cn; c += LN)
            next[ROW(nv, c) + n] = fires ? acts[ROW(av, base + G - Cn + c) + n]
                                         : acts[ROW(av, 9 * c + 4) + n];
    }
}

/*
 * A gate output's (or patch row's) gradient by gather over the VW cells from n0 (a full vector):
 * the rows that read `row` are listed in the reverse CSR, each adding its gate's dy times the
 * derivative on its side, in entry order. ca_gather1 is the same for one cell.
 */
static VEC ca_gather(int row, int n0, int Cn, int G, int P, int A, __global const float *acts,
                     const kp_view2 av, __global const float *dacts, const kp_view2 dv,
                     __global const int *a_idx, const kp_view1 aiv, __global const int *b_idx,
                     const kp_view1 biv, __global const int *param, const kp_view1 pv,
                     __global const float *C, const kp_view2 cv, __global const int *start,
                     const kp_view1 stv, __global const int *entries, const kp_view1 ev)
{
    const int e0 = clamp(start[kp_at1(stv, row)], 0, 2 * G);
    const int e1 = clamp(start[kp_at1(stv, row + 1)], e0, 2 * G);
    VEC acc = (VEC)(0.0f);
    for (int e = e0; e < e1; e++) {
        const int code = entries[kp_at1(ev, e)];
        const int g = clamp(code >> 1, 0, G - 1), side = code & 1;
        const int other = clamp(side ? a_idx[kp_at1(aiv, g)] : b_idx[kp_at1(biv, g)], 0, A - 1);
        const float4 c = ca_coeffs(param, pv, C, cv, g, P);
        const VEC x = VLOAD(0, acts + ROW(av, other) + n0);
        const VEC dy = VLOAD(0, dacts + ROW(dv, 9 * Cn + g) + n0);
        acc = fma(fma((VEC)c.w, x, (VEC)(side ? c.z : c.y)), dy, acc);
    }
    return acc;
}

static float ca_gather1(int row, int n, int Cn, int G, int P, int A, __global const float *acts,
                        const kp_view2 av, __global const float *dacts, const kp_view2 dv,
                        __global const int *a_idx, const kp_view1 aiv, __global const int *b_idx,
                        const kp_view1 biv, __global const int *param, const kp_view1 pv,
                        __global const float *C, const kp_view2 cv, __global const int *start,
                        const kp_view1 stv, __global const int *entries, const kp_view1 ev)
{
    const int e0 = clamp(start[kp_at1(stv, row)], 0, 2 * G);
    const int e1 = clamp(start[kp_at1(stv, row + 1)], e0, 2 * G);
    float acc = 0.0f;
    for (int e = e0; e < e1; e++) {
        const int code = entries[kp_at1(ev, e)];
        const int g = clamp(code >> 1, 0, G - 1), side = code & 1;
        const int other = clamp(side ? a_idx[kp_at1(aiv, g)] : b_idx[kp_at1(biv, g)], 0, A - 1);
        const float4 c = ca_coeffs(param, pv, C, cv, g, P);
        acc = fma(fma(c.w, acts[ROW(av, other) + n], side ? c.z : c.y),
                  dacts[ROW(dv, 9 * Cn + g) + n], acc);
    }
    return acc;
}

/* The four sums' rows 4g .. 4g + 3 at cell n (columns n .. n + VW - 1 for a vector). */
#define CA_SUM(k) (sums + ROW(smv, 4 * g + (k)) + n0)

/*
 * The step's backward over the cells' networks, layers in reverse: the last layer's dy is dnext
 * where the cell fired, every other gate's the gather of its readers' (all in later layers,
 * done before the barrier). Each gate writes (dy, dy a, dy b, dy a b) into rows 4g .. 4g + 3 of
 * `sums` at its cells (or adds them, accumulate 1): one work-item per (gate, cell), so the steps
 * add in call order. Last, the patch rows' gradients; logic_ca_step_backward_grid then gathers
 * them into dstate.
 */
__kernel void logic_ca_step_backward(const int N, const int Cn, const int L, const int G,
                                     const int P, const int A, const int has_fire,
                                     const float rate, const int accumulate,
                                     __global const float *acts, const kp_view2 av,
                                     __global const float *dnext, const kp_view2 dnv,
                                     __global float *dacts, const kp_view2 dv,
                                     __global float *sums, const kp_view2 smv,
                                     __global const int *layers, const kp_view1 lv,
                                     __global const int *a_idx, const kp_view1 aiv,
                                     __global const int *b_idx, const kp_view1 biv,
                                     __global const int *param, const kp_view1 pv,
                                     __global const float *C, const kp_view2 cv,
                                     __global const int *start, const kp_view1 stv,
                                     __global const int *entries, const kp_view1 ev,
                                     __global const float *fire, const kp_view1 fv)
{
    const int n0 = get_global_id(0) * VW, lane = get_local_id(1), LN = get_local_size(1);
    const int cnt = clamp(N - n0, 0, VW), base = 9 * Cn;
    float mk[VW];
    for (int m = 0; m < VW; m++)
        mk[m] = m < cnt && ca_fires(fire, fv, has_fire, rate, n0 + m) ? 1.0f : 0.0f;
    int g1 = G;
    for (int l = L - 1; l >= 0; l--) {
        const int g0 = clamp(layers[kp_at1(lv, l)], 0, g1);
        for (int g = g0 + lane; cnt > 0 && g < g1; g += LN) {
            __global const float *pa = acts + ROW(av, clamp(a_idx[kp_at1(aiv, g)], 0, A - 1)) + n0;
            __global const float *pb = acts + ROW(av, clamp(b_idx[kp_at1(biv, g)], 0, A - 1)) + n0;
            __global const float *pd = dnext + ROW(dnv, clamp(g - (G - Cn), 0, Cn - 1)) + n0;
            __global float *py = dacts + ROW(dv, base + g) + n0;
            if (cnt == VW) {
                const VEC d = l == L - 1 ? VLOAD(0, mk) * VLOAD(0, pd)
                                         : ca_gather(base + g, n0, Cn, G, P, A, acts, av, dacts,
                                                     dv, a_idx, aiv, b_idx, biv, param, pv, C, cv,
                                                     start, stv, entries, ev);
                const VEC a = VLOAD(0, pa), b = VLOAD(0, pb), da = d * a;
                VSTORE(d, 0, py);
                VSTORE(accumulate ? VLOAD(0, CA_SUM(0)) + d : d, 0, CA_SUM(0));
                VSTORE(accumulate ? VLOAD(0, CA_SUM(1)) + da : da, 0, CA_SUM(1));
                VSTORE(accumulate ? VLOAD(0, CA_SUM(2)) + d * b : d * b, 0, CA_SUM(2));
                VSTORE(accumulate ? VLOAD(0, CA_SUM(3)) + da * b : da * b, 0, CA_SUM(3));
            } else {
                for (int m = 0; m < cnt; m++) {
                    const float d = l == L - 1
                                        ? mk[m] * pd[m]
                                        : ca_gather1(base + g, n0 + m, Cn, G, P, A, acts, av,
                                                     dacts, dv, a_idx, aiv, b_idx, biv, param, pv,
                                                     C, cv, start, stv, entries, ev);
                    const float da = d * pa[m];
                    py[m] = d;
                    const float t[4] = {d, da, d * pb[m], da * pb[m]};
                    for (int k = 0; k < 4; k++)
                        CA_SUM(k)[m] = accumulate ? CA_SUM(k)[m] + t[k] : t[k];
                }
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        g1 = g0;
    }
    for (int r = lane; cnt > 0 && r < base; r += LN) {
        __global float *py = dacts + ROW(dv, r) + n0;
        if (cnt == VW)
            VSTORE(ca_gather(r, n0, Cn, G, P, A, acts, av, dacts, dv, a_idx, aiv, b_idx, biv,
                             param, pv, C, cv, start, stv, entries, ev),
                   0, py);
        else
            for (int m = 0; m < cnt; m++)
                py[m] = ca_gather1(r, n0 + m, Cn, G, P, A, acts, av, dacts, dv, a_idx, aiv, b_idx,
                                   biv, param, pv, C, cv, start, stv, entries, ev);
    }
}
#undef CA_SUM

/* dstate[c, n]: dnext where cell n kept its state (it did not fire), then the nine patch rows
 * that read it (logic_perceive_backward's gather, offsets in k order). Dimension 0 the cell, 1
 * the channel. */
__kernel void logic_ca_step_backward_grid(const int N, const int Cn, const int H, const int W,
                                          const int zero, const int has_fire, const float rate,
                                          __global const float *dnext, const kp_view2 dnv,
                                          __global const float *dacts, const kp_view2 dv,
                                          __global float *dstate, const kp_view2 dsv,
                                          __global const float *fire, const kp_view1 fv)
{
    const int n = get_global_id(0), c = get_global_id(1);
    if (n >= N || c >= Cn)
        return;
    const int HW = H * W, cell = n % HW, first = n - cell, y = cell / W, x = cell % W;
    float s = ca_fires(fire, fv, has_fire, rate, n) ? 0.0f : dnext[ROW(dnv, c) + n];
    for (int k = 0; k < 9; k++) {
        const int u = neighbour(y, 1 - k / 3, H, zero), v = neighbour(x, 1 - k % 3, W, zero);
        if (u >= 0 && v >= 0)
            s += dacts[ROW(dv, 9 * c + k) + first + u * W + v];
    }
    dstate[ROW(dsv, c) + n] = s;
}

/*
 * The logits' gradient from the sums. A work-group is LANES lanes (dimension 0) by WG_P
 * parameters (dimension 1): parameter p's gates' rows (gates param_start[p] .. [p + 1] - 1) are
 * summed gate by gate, lane j taking cells j, j + LANES, ...; the lanes' sums meet in local memory
 * after the only barrier and lane 0 adds them in lane order, so every sum is made in one fixed
 * order. Then gate_dw.
 */
__kernel void logic_ca_dw(const int P, const int G, const int N, __global const float *sums,
                          const kp_view2 smv, __global const int *pstart, const kp_view1 psv,
                          __global const float *w, const kp_view2 wv, __global float *dw,
                          const kp_view2 dwv, __local float4 *red)
{
    const int lane = get_local_id(0), LN = get_local_size(0), row = get_local_id(1) * LN;
    const int p = get_global_id(1);
    float4 S = (float4)(0.0f);
    if (p < P) {
        const int g0 = clamp(pstart[kp_at1(psv, p)], 0, G);
        const int g1 = clamp(pstart[kp_at1(psv, p + 1)], g0, G);
        for (int g = g0; g < g1; g++) {
            __global const float *s0 = sums + ROW(smv, 4 * g), *s1 = sums + ROW(smv, 4 * g + 1);
            __global const float *s2 = sums + ROW(smv, 4 * g + 2), *s3 = sums + ROW(smv, 4 * g + 3);
            for (int n = lane; n < N; n += LN)
                S += (float4)(s0[n], s1[n], s2[n], s3[n]);
        }
    }
    red[row + lane] = S;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane != 0 || p >= P)
        return;
    for (int j = 1; j < LN; j++)
        S += red[row + j];
    gate_dw(S, w + ROW(wv, p), dw + ROW(dwv, p));
}
