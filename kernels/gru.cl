/* SPDX-License-Identifier: Apache-2.0 */
/* GRU cell kernels: the fused small-batch step, the gate kernels of the GEMM path and of BPTT. */

/*
 * Weights follow PyTorch: w_ih [3H, I], w_hh [3H, H], b_ih [3H], b_hh [3H], gates r, z, n.
 * Every tensor arrives as a buffer and a kp_view2 of the prelude (the plugin sets both with
 * kp_clargs_tensor): element (row, col) lives at kp_at2(v, row, col), a vector [n] as a [1, n]
 * view (row 0, stride 0). The host folds a time step into the offset. An omitted optional tensor
 * arrives as an empty view (offset -1) on a stand-in buffer, never read: PRESENT(v) is 0.
 *
 * `stage` selects the variant: 0 is linear_before_reset = 1, where n = tanh(xn + r * hn) needs
 * only this unit's dot products; 1 and 2 are the two passes of linear_before_reset = 0, where
 * n = tanh(xn + W_hn (r * h) + b_hn) needs r of every unit before any n can start.
 */

/* WG is the work-group size, compiled in: reductions size their local memory by it, and
 * reqd_work_group_size makes any other local size an error rather than a slow recompile. LANES
 * work-items share one hidden unit of the fused kernel (a power of two, at most WG), so a
 * work-group finishes WG / LANES units: GPUs want many lanes (coalesced rows, enough threads for
 * a batch of one), CPUs one (a work-item walks whole rows with vector loads, no reduction). The
 * core compiles WG, LANES and VW in as -D options, LANES and VW resolved by device type by the
 * plugin's resolve hook; the defaults here are for a build without them. */
#ifndef WG
#define WG 64
#endif
#ifndef LANES
#define LANES 32
#endif
#define NL (LANES < WG ? LANES : WG)
#define UNITS (WG / NL)

/* VW is the fused kernel's vector width in floats: 4 (16-byte loads) suits GPUs, 8 or 16 the
 * AVX units of CPUs. */
#ifndef VW
#define VW 4
#endif
#if VW == 16
#define VEC float16
#define VLOAD vload16
#define HSUM(q) kp_hsum16(q)
#elif VW == 8
#define VEC float8
#define VLOAD vload8
#define HSUM(q) kp_hsum8(q)
#else
#undef VW
#define VW 4
#define VEC float4
#define VLOAD vload4
#define HSUM(q) kp_hsum4(q)
#endif

#define AT(v, r, c) kp_at2(v, r, c)
/* Whether an optional tensor was given: an omitted one has an empty view. */
#define PRESENT(v) (!kp_empty(v))

static float sigm(float a)
{
    return 1.0f / (1.0f + exp(-a));
}

static float opt_at(__global const float *p, const kp_view2 v, int r, int c)
{
    return PRESENT(v) ? p[AT(v, r, c)] : 0.0f;
}

/*
 * Dot products of up to three weight rows with one vector, this lane's share: VW-float steps NL
 * apart, so a unit's lanes read neighbouring vectors (coalesced on GPUs, SIMD on CPUs). `unit`
 * says every column stride is 1; else a scalar loop follows the strides. A row r < 0 is skipped.
 */
static void dots3(int unit, int lane, int n, __global const float *v, const kp_view2 vv, int vrow,
                  __global const float *w, const kp_view2 wv, int r0, int r1, int r2, float *out)
{
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    if (unit) {
        __global const float *vp = v + kp_offset(vv) + vrow * kp_stride(vv, 0);
        __global const float *w0 = w + kp_offset(wv) + max(r0, 0) * kp_stride(wv, 0);
        __global const float *w1 = w + kp_offset(wv) + max(r1, 0) * kp_stride(wv, 0);
        __global const float *w2 = w + kp_offset(wv) + max(r2, 0) * kp_stride(wv, 0);
        const int nv = n / VW;
        VEC q0 = (VEC)(0.0f), q1 = (VEC)(0.0f), q2 = (VEC)(0.0f);
        for (int k = lane; k < nv; k += NL) {
            const VEC vk = VLOAD(k, vp);
            if (r0 >= 0)
                q0 = fma(VLOAD(k, w0), vk, q0);
            if (r1 >= 0)
                q1 = fma(VLOAD(k, w1), vk, q1);
            if (r2 >= 0)
                q2 = fma(VLOAD(k, w2), vk, q2);
        }
        for (int k = VW * nv + lane; k < n; k += NL) {
            const float vk = vp[k];
            s0 = r0 >= 0 ? fma(w0[k], vk, s0) : s0;
            s1 = r1 >= 0 ? fma(w1[k], vk, s1) : s1;
            s2 = r2 >= 0 ? fma(w2[k], vk, s2) : s2;
        }
        s0 += HSUM(q0);
        s1 += HSUM(q1);
        s2 += HSUM(q2);
    } else {
        for (int k = lane; k < n; k += NL) {
            const float vk = v[AT(vv, vrow, k)];
            s0 = r0 >= 0 ? fma(w[AT(wv, r0, k)], vk, s0) : s0;
            s1 = r1 >= 0 ? fma(w[AT(wv, r1, k)], vk, s1) : s1;
            s2 = r2 >= 0 ? fma(w[AT(wv, r2, k)], vk, s2) : s2;
        }
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
}

/* With one lane per unit (CPUs), a work-group's gates run GV units at a time as vectors after
 * its dot products, by WG / GV of its work-items: scalar exp and tanh per unit, one unit per
 * work-item, were 43% of the kernel's time on an EPYC under PoCL (B 1, H 256, I 321). */
#define GV 16
#define GATE_VEC (NL == 1 && WG % GV == 0)

/* Columns c0 .. c0 + n - 1 (n <= GV) of row r of a view as a vector, 0 past n or when the tensor
 * is absent (`present` 0: PRESENT(v), or 1 where the tensor is always given); scatter16 stores the
 * first n lanes back. A whole vector of a view with unit column stride is one vload16 / vstore16:
 * element by element, PoCL took longer over the loads and stores than over the gates' math. */
static float16 gather16(__global const float *p, const kp_view2 v, int present, int r, int c0,
                        int n)
{
    if (present && n == GV && kp_stride(v, 1) == 1)
        return vload16(0, p + AT(v, r, c0));
    float x[GV];
    for (int i = 0; i < GV; i++)
        x[i] = present && i < n ? p[AT(v, r, c0 + i)] : 0.0f;
    return vload16(0, x);
}

static void scatter16(__global float *p, const kp_view2 v, int r, int c0, int n, float16 q)
{
    if (n == GV && kp_stride(v, 1) == 1) {
        vstore16(q, 0, p + AT(v, r, c0));
        return;
    }
    float x[GV];
    vstore16(q, 0, x);
    for (int i = 0; i < n; i++)
        p[AT(v, r, c0 + i)] = x[i];
}

static float16 sigm16(float16 a)
{
    return 1.0f / (1.0f + exp(-a));
}

/*
 * The gates of units j0 .. j0 + n - 1 of batch row b, as gru_fused's lane 0 computes one unit's,
 * from their six dot products: red[q WG + i] for i < n (red offset to j0's slot).
 */
static void gates16(const int stage, const int H, const int b, const int j0, const int n,
                    __local const float *red, __global const float *gx, const kp_view2 gxv,
                    __global const float *h, const kp_view2 hv, __global const float *b_ih,
                    const kp_view2 biv, __global const float *b_hh, const kp_view2 bhv,
                    __global float *tmp, const kp_view2 tv, __global float *h_out,
                    const kp_view2 hov, __global float *ws, const kp_view2 wsv)
{
    float16 a[6];
    for (int q = 0; q < 6; q++)
        a[q] = vload16(0, red + q * WG);
    const float16 hp = gather16(h, hv, 1, b, j0, n);
    if (stage == 2) {
        const float16 z = gather16(tmp, tv, 1, b, H + j0, n);
        const float16 xn = gather16(tmp, tv, 1, b, 2 * H + j0, n);
        const float16 nn = tanh(xn + a[5] + gather16(b_hh, bhv, PRESENT(bhv), 0, 2 * H + j0, n));
        scatter16(h_out, hov, b, j0, n, fma(z, hp - nn, nn));
        if (PRESENT(wsv))
            scatter16(ws, wsv, b, 2 * H + j0, n, nn);
        return;
    }
    float16 xg[3];
    for (int q = 0; q < 3; q++)
        xg[q] = a[q] + gather16(gx, gxv, PRESENT(gxv), b, q * H + j0, n) +
                gather16(b_ih, biv, PRESENT(biv), 0, q * H + j0, n);
    const float16 r = sigm16(xg[0] + a[3] + gather16(b_hh, bhv, PRESENT(bhv), 0, j0, n));
    const float16 z = sigm16(xg[1] + a[4] + gather16(b_hh, bhv, PRESENT(bhv), 0, H + j0, n));
    if (PRESENT(wsv)) {
        scatter16(ws, wsv, b, j0, n, r);
        scatter16(ws, wsv, b, H + j0, n, z);
    }
    if (stage == 1) {
        scatter16(tmp, tv, b, j0, n, r * hp);
        scatter16(tmp, tv, b, H + j0, n, z);
        scatter16(tmp, tv, b, 2 * H + j0, n, xg[2]);
        if (PRESENT(wsv))
            scatter16(ws, wsv, b, 3 * H + j0, n, r * hp);
        return;
    }
    const float16 hn = a[5] + gather16(b_hh, bhv, PRESENT(bhv), 0, 2 * H + j0, n);
    const float16 nn = tanh(fma(r, hn, xg[2]));
    scatter16(h_out, hov, b, j0, n, fma(z, hp - nn, nn));
    if (PRESENT(wsv)) {
        scatter16(ws, wsv, b, 2 * H + j0, n, nn);
        scatter16(ws, wsv, b, 3 * H + j0, n, hn);
    }
}

/*
 * The fused cell for small batches. Work-group (g, b) owns hidden units g UNITS .. + UNITS - 1 of
 * batch row b; each unit's NL lanes read its rows j, H + j and 2H + j of w_ih and w_hh once, sum
 * the six dot products in local memory, and lane 0 finishes the unit (with one lane per unit,
 * WG / GV work-items finish GV units each: GATE_VEC). With gx present (a
 * sequence's precomputed x w_ih^T, no bias) I is 0 and the x-part comes from gx.
 *   stage 0: h_out = GRU(x, h) with linear_before_reset = 1; ws = (r, z, n, hn).
 *   stage 1: r, z and xn; tmp[b] = (r * h, z, xn); ws = (r, z, -, r * h).
 *   stage 2: hn = W_hn tmp[b, 0:H] + b_hn, n = tanh(xn + hn); h_out; ws n.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_fused(const int stage, const int unit, const int I, const int H,
               __global const float *x, const kp_view2 xv, __global const float *gx,
               const kp_view2 gxv, __global const float *h, const kp_view2 hv,
               __global const float *w_ih, const kp_view2 wiv, __global const float *w_hh,
               const kp_view2 whv, __global const float *b_ih, const kp_view2 biv,
               __global const float *b_hh, const kp_view2 bhv, __global float *tmp,
               const kp_view2 tv, __global float *h_out, const kp_view2 hov, __global float *ws,
               const kp_view2 wsv)
{
    const int lid = get_local_id(0), lane = lid % NL, b = get_group_id(1);
    const int j = get_group_id(0) * UNITS + lid / NL, live = j < H;
    float a[6];
    /* A unit past H computes nothing, but its work-items still reach every barrier. */
    dots3(unit, lane, live ? I : 0, x, xv, b, w_ih, wiv, j, H + j, 2 * H + j, a);
    if (stage == 2)
        dots3(unit, lane, live ? H : 0, tmp, tv, b, w_hh, whv, -1, -1, 2 * H + j, a + 3);
    else
        dots3(unit, lane, live ? H : 0, h, hv, b, w_hh, whv, j, H + j, stage == 0 ? 2 * H + j : -1,
              a + 3);
#if GATE_VEC
    __local float red[6 * WG];
    for (int q = 0; q < 6; q++)
        red[q * WG + lid] = a[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int j0 = get_group_id(0) * UNITS + lid * GV;
    if (lid < WG / GV && j0 < H)
        gates16(stage, H, b, j0, min(GV, H - j0), red + lid * GV, gx, gxv, h, hv, b_ih, biv, b_hh,
                bhv, tmp, tv, h_out, hov, ws, wsv);
#else
#if NL > 1
    __local float red[6 * WG];
    for (int q = 0; q < 6; q++)
        red[q * WG + lid] = a[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = NL / 2; s > 0; s >>= 1) {
        if (lane < s)
            for (int q = 0; q < 6; q++)
                red[q * WG + lid] += red[q * WG + lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int q = 0; q < 6; q++)
        a[q] = red[q * WG + lid];
#endif
    if (lane != 0 || !live)
        return;
    const float hp = h[AT(hv, b, j)];
    if (stage == 2) {
        const float z = tmp[AT(tv, b, H + j)], xn = tmp[AT(tv, b, 2 * H + j)];
        const float n = tanh(xn + a[5] + opt_at(b_hh, bhv, 0, 2 * H + j));
        h_out[AT(hov, b, j)] = fma(z, hp - n, n);
        if (PRESENT(wsv))
            ws[AT(wsv, b, 2 * H + j)] = n;
        return;
    }
    float xg[3];
    for (int q = 0; q < 3; q++)
        xg[q] = a[q] + opt_at(gx, gxv, b, q * H + j) + opt_at(b_ih, biv, 0, q * H + j);
    const float r = sigm(xg[0] + a[3] + opt_at(b_hh, bhv, 0, j));
    const float z = sigm(xg[1] + a[4] + opt_at(b_hh, bhv, 0, H + j));
    if (PRESENT(wsv)) {
        ws[AT(wsv, b, j)] = r;
        ws[AT(wsv, b, H + j)] = z;
    }
    if (stage == 1) {
        tmp[AT(tv, b, j)] = r * hp;
        tmp[AT(tv, b, H + j)] = z;
        tmp[AT(tv, b, 2 * H + j)] = xg[2];
        if (PRESENT(wsv))
            ws[AT(wsv, b, 3 * H + j)] = r * hp;
        return;
    }
    const float hn = a[5] + opt_at(b_hh, bhv, 0, 2 * H + j);
    const float n = tanh(fma(r, hn, xg[2]));
    h_out[AT(hov, b, j)] = fma(z, hp - n, n);
    if (PRESENT(wsv)) {
        ws[AT(wsv, b, 2 * H + j)] = n;
        ws[AT(wsv, b, 3 * H + j)] = hn;
    }
#endif
}

/*
 * The gates of the GEMM path, one work-item per GU units j .. j + GU - 1 of batch row b: gx =
 * x w_ih^T and gh = h w_hh^T come without biases.
 *   stage 0: h_out and ws = (r, z, n, hn) with linear_before_reset = 1.
 *   stage 1: r and z only; rh = r * h, the operand of the next GEMM (and ws's 4th slot).
 *   stage 2: gh's n columns now hold W_hn (r * h); h_out and ws n.
 * With one lane per unit (CPUs) GU is GV and the gates run as float16 vectors, as the fused
 * kernel's do: one unit per work-item, PoCL took 4.9 ms a step at B 128, H 512 on the 2-core
 * EPYC (scalar exp and tanh, a work-group per 64 units), 0.2-0.3 ms in vectors. GPUs keep one
 * unit per work-item (GU 1).
 */
#if NL == 1
#define GU GV
#define GTYPE float16
#define GLOAD(p, v, present, r, c) gather16(p, v, present, r, c, n)
#define GSTORE(p, v, r, c, q) scatter16(p, v, r, c, n, q)
#define GSIGM(a) sigm16(a)
#else
#define GU 1
#define GTYPE float
#define GLOAD(p, v, present, r, c) ((present) ? (p)[AT(v, r, c)] : 0.0f)
#define GSTORE(p, v, r, c, q) ((p)[AT(v, r, c)] = (q))
#define GSIGM(a) sigm(a)
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_gates(const int stage, const int H, __global const float *gx, const kp_view2 gxv,
               __global const float *gh, const kp_view2 ghv, __global const float *h,
               const kp_view2 hv, __global const float *b_ih, const kp_view2 biv,
               __global const float *b_hh, const kp_view2 bhv, __global float *rh,
               const kp_view2 rhv, __global float *h_out, const kp_view2 hov, __global float *ws,
               const kp_view2 wsv)
{
    const int j = get_global_id(0) * GU, b = get_global_id(1);
    if (j >= H)
        return;
    const int n = min(GU, H - j); /* the units of the last vector of a row */
    (void)n;
    GTYPE xg[3], hg[3];
    for (int q = 0; q < 3; q++) {
        xg[q] = GLOAD(gx, gxv, 1, b, q * H + j) + GLOAD(b_ih, biv, PRESENT(biv), 0, q * H + j);
        hg[q] = GLOAD(gh, ghv, 1, b, q * H + j) + GLOAD(b_hh, bhv, PRESENT(bhv), 0, q * H + j);
    }
    const GTYPE r = GSIGM(xg[0] + hg[0]), z = GSIGM(xg[1] + hg[1]), hp = GLOAD(h, hv, 1, b, j);
    if (stage == 1) {
        GSTORE(rh, rhv, b, j, r * hp);
        if (PRESENT(wsv)) {
            GSTORE(ws, wsv, b, j, r);
            GSTORE(ws, wsv, b, H + j, z);
            GSTORE(ws, wsv, b, 3 * H + j, r * hp);
        }
        return;
    }
    const GTYPE nn = tanh(stage == 0 ? fma(r, hg[2], xg[2]) : xg[2] + hg[2]);
    GSTORE(h_out, hov, b, j, fma(z, hp - nn, nn));
    if (!PRESENT(wsv))
        return;
    GSTORE(ws, wsv, b, 2 * H + j, nn);
    if (stage == 0) {
        GSTORE(ws, wsv, b, j, r);
        GSTORE(ws, wsv, b, H + j, z);
        GSTORE(ws, wsv, b, 3 * H + j, hg[2]);
    }
}

/*
 * One step of backpropagation through time, elementwise, one work-item per (unit j, row b).
 * dh = dh_all[t] + carry_in (either may be absent); the saved ws[t] = (r, z, n, s4) and h_prev
 * give the gate gradients (pre-activation) for the x side, dgx = (dar, daz, dan), and the h side,
 * dgh, and carry_out starts the gradient of h_prev with its direct term dh * z; a GEMM with
 * w_hh adds the rest.
 *   stage 0 (linear_before_reset = 1, s4 = hn): dgh = (dar, daz, dan * r).
 *   stage 1 (= 0, s4 = r * h_prev): daz and dan only (dgx = dgh); dar needs W_hn^T dan first.
 *   stage 2: tmp = dan W_hn; dar = tmp * h_prev * r (1 - r); carry_out += tmp * r.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_bwd_gates(const int stage, const int H, __global const float *dh_all,
                   const kp_view2 dav, __global const float *carry_in, const kp_view2 civ,
                   __global float *carry_out, const kp_view2 cov, __global const float *ws,
                   const kp_view2 wsv, __global const float *h_prev, const kp_view2 hv,
                   __global const float *tmp, const kp_view2 tv, __global float *dgx,
                   const kp_view2 dxv, __global float *dgh, const kp_view2 dhv)
{
    const int j = get_global_id(0), b = get_global_id(1);
    if (j >= H)
        return;
    const float r = ws[AT(wsv, b, j)], hp = h_prev[AT(hv, b, j)];
    if (stage == 2) {
        const float t = tmp[AT(tv, b, j)];
        dgx[AT(dxv, b, j)] = t * hp * r * (1.0f - r);
        carry_out[AT(cov, b, j)] = fma(t, r, carry_out[AT(cov, b, j)]);
        return;
    }
    const float z = ws[AT(wsv, b, H + j)], n = ws[AT(wsv, b, 2 * H + j)];
    const float dh = opt_at(dh_all, dav, b, j) + opt_at(carry_in, civ, b, j);
    const float dan = dh * (1.0f - z) * (1.0f - n * n);
    const float daz = dh * (hp - n) * z * (1.0f - z);
    dgx[AT(dxv, b, H + j)] = daz;
    dgx[AT(dxv, b, 2 * H + j)] = dan;
    carry_out[AT(cov, b, j)] = dh * z;
    if (stage == 1)
        return;
    const float dar = dan * ws[AT(wsv, b, 3 * H + j)] * r * (1.0f - r);
    dgx[AT(dxv, b, j)] = dar;
    dgh[AT(dhv, b, j)] = dar;
    dgh[AT(dhv, b, H + j)] = daz;
    dgh[AT(dhv, b, 2 * H + j)] = dan * r;
}

/*
 * A whole sequence with linear_before_reset = 1 in one launch, one work-group per batch row b:
 * the row's state stays in local memory from step to step, so T steps cost one launch instead of
 * a GEMM and a gate kernel each. gx holds x w_ih^T of every step as [T B, 3H] rows (no bias), or
 * is empty and the x products run here. w_t is W_hh^T stored [H, 3H], so for a fixed k the
 * work-items read neighbouring columns. A work-item takes units lid, lid + WG, ...; the state
 * alternates between two halves of `h`, so one barrier per step, outside those loops, orders a
 * step's reads before the writes two steps later. ws[t] = (r, z, n, hn) as gru_gates stage 0.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_seq_rows(const int T, const int B, const int I, const int H, __global const float *x,
                  const kp_view3 xv, __global const float *gx, const kp_view2 gxv,
                  __global const float *h0, const kp_view2 h0v, __global const float *w_ih,
                  const kp_view2 wiv, __global const float *w_t, const kp_view2 wtv,
                  __global const float *b_ih, const kp_view2 biv, __global const float *b_hh,
                  const kp_view2 bhv, __global float *h_all, const kp_view3 hav,
                  __global float *ws, const kp_view3 wsv, __local float *h)
{
    const int b = get_group_id(0), lid = get_local_id(0);
    for (int j = lid; j < H; j += WG)
        h[j] = h0[AT(h0v, b, j)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < T; t++) {
        __local const float *hp = h + (t & 1) * H;
        __local float *hn = h + ((t + 1) & 1) * H;
        for (int j = lid; j < H; j += WG) {
            float xg[3], hg[3] = {0.0f, 0.0f, 0.0f};
            for (int q = 0; q < 3; q++) {
                if (PRESENT(gxv)) {
                    xg[q] = gx[AT(gxv, t * B + b, q * H + j)];
                } else {
                    float s = 0.0f;
                    for (int k = 0; k < I; k++)
                        s = fma(w_ih[AT(wiv, q * H + j, k)], x[kp_at3(xv, t, b, k)], s);
                    xg[q] = s;
                }
                xg[q] += opt_at(b_ih, biv, 0, q * H + j);
            }
            for (int k = 0; k < H; k++) {
                const float hk = hp[k];
                hg[0] = fma(w_t[AT(wtv, k, j)], hk, hg[0]);
                hg[1] = fma(w_t[AT(wtv, k, H + j)], hk, hg[1]);
                hg[2] = fma(w_t[AT(wtv, k, 2 * H + j)], hk, hg[2]);
            }
            for (int q = 0; q < 3; q++)
                hg[q] += opt_at(b_hh, bhv, 0, q * H + j);
            const float r = sigm(xg[0] + hg[0]), z = sigm(xg[1] + hg[1]);
            const float n = tanh(fma(r, hg[2], xg[2])), out = fma(z, hp[j] - n, n);
            hn[j] = out;
            h_all[kp_at3(hav, t, b, j)] = out;
            if (PRESENT(wsv)) {
                ws[kp_at3(wsv, t, b, j)] = r;
                ws[kp_at3(wsv, t, b, H + j)] = z;
                ws[kp_at3(wsv, t, b, 2 * H + j)] = n;
                ws[kp_at3(wsv, t, b, 3 * H + j)] = hg[2];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/*
 * Backpropagation through a gru_seq_rows sequence (linear_before_reset = 1) in one launch, one
 * work-group per batch row: the carry dL/dh stays in local memory, and each step's h-side gate
 * gradients go to local memory too for the product with w_hh that carries dL/dh one step back
 * (the same sums, in the same order over w_hh's rows, for every work-group size). The gate
 * gradients of every step also go to dgx and dgh for the weight products after the loop;
 * `carry` ends as dh0. Local memory: the carry [H], then the gradients [3H] twice (alternating
 * steps, so one barrier per step).
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_bwd_rows(const int T, const int B, const int H, __global const float *dh_all,
                  const kp_view3 dav, __global const float *dh_last, const kp_view2 dlv,
                  __global const float *h0, const kp_view2 h0v, __global const float *h_all,
                  const kp_view3 hav, __global const float *ws, const kp_view3 wsv,
                  __global const float *w_hh, const kp_view2 whv, __global float *dgx,
                  const kp_view2 dxv, __global float *dgh, const kp_view2 dhv,
                  __global float *dh0, const kp_view2 d0v, __local float *carry)
{
    const int b = get_group_id(0), lid = get_local_id(0);
    for (int j = lid; j < H; j += WG)
        carry[j] = opt_at(dh_last, dlv, b, j);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = T - 1; t >= 0; t--) {
        __local float *dg = carry + H + (t & 1) * 3 * H;
        const int row = t * B + b;
        for (int j = lid; j < H; j += WG) {
            const float r = ws[kp_at3(wsv, t, b, j)], z = ws[kp_at3(wsv, t, b, H + j)];
            const float n = ws[kp_at3(wsv, t, b, 2 * H + j)];
            const float hn = ws[kp_at3(wsv, t, b, 3 * H + j)];
            const float hp = t ? h_all[kp_at3(hav, t - 1, b, j)] : h0[AT(h0v, b, j)];
            const float dh = (PRESENT(dav) ? dh_all[kp_at3(dav, t, b, j)] : 0.0f) + carry[j];
            const float dan = dh * (1.0f - z) * (1.0f - n * n);
            const float daz = dh * (hp - n) * z * (1.0f - z);
            const float dar = dan * hn * r * (1.0f - r);
            dgx[AT(dxv, row, j)] = dar;
            dgx[AT(dxv, row, H + j)] = daz;
            dgx[AT(dxv, row, 2 * H + j)] = dan;
            dgh[AT(dhv, row, j)] = dar;
            dgh[AT(dhv, row, H + j)] = daz;
            dgh[AT(dhv, row, 2 * H + j)] = dan * r;
            dg[j] = dar;
            dg[H + j] = daz;
            dg[2 * H + j] = dan * r;
            carry[j] = dh * z;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = lid; k < H; k += WG) {
            float s = carry[k];
            for (int g = 0; g < 3 * H; g++)
                s = fma(dg[g], w_hh[AT(whv, g, k)], s);
            carry[k] = s;
        }
    }
    for (int j = lid; j < H; j += WG)
        dh0[AT(d0v, b, j)] = carry[j];
}

/*
 * C = alpha A B + beta C (beta 0 ignores C), one work-item per four columns of one row of C. B
 * is read along its rows, so with a unit column stride neighbouring work-items read neighbouring
 * float4s. Good for the few rows of a small batch, and the fallback where blas.gemm is absent.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_matmul(const int M, const int N, const int K, const float alpha, const float beta,
                __global const float *A, const kp_view2 av, __global const float *B,
                const kp_view2 bv, __global float *C, const kp_view2 cv)
{
    const int c0 = 4 * get_global_id(0), m = get_global_id(1);
    if (c0 >= N)
        return;
    __global const float *ap = A + kp_offset(av) + m * kp_stride(av, 0);
    float4 s = (float4)(0.0f);
    if (kp_stride(bv, 1) == 1 && c0 + 3 < N) {
        __global const float *bp = B + kp_offset(bv) + c0;
        for (int k = 0; k < K; k++)
            s = fma((float4)(ap[k * kp_stride(av, 1)]), vload4(0, bp + k * kp_stride(bv, 0)), s);
    } else {
        for (int k = 0; k < K; k++) {
            const float a = ap[k * kp_stride(av, 1)];
            s.x = fma(a, B[AT(bv, k, c0)], s.x);
            s.y = c0 + 1 < N ? fma(a, B[AT(bv, k, c0 + 1)], s.y) : 0.0f;
            s.z = c0 + 2 < N ? fma(a, B[AT(bv, k, c0 + 2)], s.z) : 0.0f;
            s.w = c0 + 3 < N ? fma(a, B[AT(bv, k, c0 + 3)], s.w) : 0.0f;
        }
    }
    const float out[4] = {s.x, s.y, s.z, s.w};
    for (int q = 0; q < 4 && c0 + q < N; q++) {
        __global float *cp = C + AT(cv, m, c0 + q);
        *cp = beta != 0.0f ? fma(beta, *cp, alpha * out[q]) : alpha * out[q];
    }
}

/* out = in^T for in [rows, cols], one work-item per element: reads run along in's rows. Used
 * once per sequence, to hand blas.gemm W_hh^T as stored (see gru-sequence.c). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_transpose(const int rows, const int cols, __global const float *in, const kp_view2 iv,
                   __global float *out, const kp_view2 ov)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c < cols)
        out[AT(ov, c, r)] = in[AT(iv, r, c)];
}

/*
 * The weight gradients' products C = A^T V over a sequence's rows, whose shared dimension (T B
 * rows) is long and whose output is small: split in chunks of `chunk` rows, so that the GPU has
 * work-items enough. part[c, n, m] = sum over the rows r of chunk c of A[r, m] V[r, n], row r of
 * V being v[r / B, r % B, n] of a [T, B, N] view; one work-item per (m, n, c), m fastest, so
 * neighbouring work-items read neighbouring elements of a row of A. gru_chunk_sum adds the chunks.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_at_v_part(const int rows, const int chunk, const int B, const int M, const int N,
                   __global const float *A, const kp_view2 av, __global const float *V,
                   const kp_view3 vv, __global float *part)
{
    const int m = get_global_id(0), n = get_global_id(1), c = get_global_id(2);
    if (m >= M)
        return;
    const int r1 = min(rows, (c + 1) * chunk);
    float s = 0.0f;
    for (int r = c * chunk; r < r1; r++)
        s = fma(A[AT(av, r, m)], V[kp_at3(vv, r / B, r % B, n)], s);
    part[((long)c * N + n) * M + m] = s;
}

/* part[c, j] = the sum of G[r, j] over the rows r of chunk c: the bias gradients' column sums
 * split like gru_at_v_part, one work-item per (j, c), added by gru_chunk_sum. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_colsum_part(const int rows, const int chunk, const int N, __global const float *G,
                     const kp_view2 gv, __global float *part)
{
    const int j = get_global_id(0), c = get_global_id(1);
    if (j >= N)
        return;
    const int r1 = min(rows, (c + 1) * chunk);
    float s = 0.0f;
    for (int r = c * chunk; r < r1; r++)
        s += G[AT(gv, r, j)];
    part[(long)c * N + j] = s;
}

/* C[m, n] = beta C[m, n] + the sum of gru_at_v_part's (or gru_colsum_part's, N = 1) `chunks`
 * partial products, in chunk order (beta 0 ignores C). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_chunk_sum(const int chunks, const int M, const int N, const float beta,
                   __global const float *part, __global float *C, const kp_view2 cv)
{
    const int m = get_global_id(0), n = get_global_id(1);
    if (m >= M)
        return;
    float s = 0.0f;
    for (int c = 0; c < chunks; c++)
        s += part[((long)c * N + n) * M + m];
    __global float *cp = C + AT(cv, m, n);
    *cp = beta != 0.0f ? fma(beta, *cp, s) : s;
}

/* out[j] = sum over rows of G[row, j]: the bias gradients, one work-item per column. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_colsum(const int rows, const int N, __global const float *G, const kp_view2 gv,
                __global float *out, const kp_view2 ov)
{
    const int j = get_global_id(0);
    if (j >= N)
        return;
    float s0 = 0.0f, s1 = 0.0f;
    int r = 0;
    for (; r + 1 < rows; r += 2) {
        s0 += G[AT(gv, r, j)];
        s1 += G[AT(gv, r + 1, j)];
    }
    if (r < rows)
        s0 += G[AT(gv, r, j)];
    out[AT(ov, 0, j)] = s0 + s1;
}
