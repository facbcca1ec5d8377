/* SPDX-License-Identifier: Apache-2.0 */
/* Convolution kernels: im2col, col2im, GEMMs and their passes, bias gradient, max-pool. */

/*
 * Tensors arrive as a buffer and a view of the prelude (kernels/common/prelude.cl): kp_view4 for
 * NCHW images (element (n, c, h, w) at kp_at4(v, n, c, h, w)), kp_view3 for a column matrix
 * [N, C KH KW, OH OW] (element (n, r, l) at kp_at3(v, n, r, l)), so one kernel writes both the
 * per-image Caffe layout (strides [C KH KW L, L, 1]) and the batch-chunk layout the GEMMs use
 * (strides [L, N L, 1]: images side by side along the columns), kp_view2 for the GEMMs'
 * matrices, kp_view1 for the bias. The kernels take the
 * products of the leading indices once per work-item (a plane's or a row's start) and the last
 * strides in their loops, as they did when views came as int8/int4 vectors. Scratch that only
 * these kernels lay out (the GEMM block t, Winograd's U, V and M) comes as a plain buffer with
 * its row length.
 *
 * The window's geometry is not a tensor: it arrives as one int16 (conv_clargs_geom in
 * plugins/conv/conv-util.c packs it), read through the G* macros below:
 *   s0 N   s1 C   s2 H   s3 W   s4 KH  s5 KW  s6 SH  s7 SW
 *   s8 PH  s9 PW  sa DH  sb DW  sc OH  sd OW  se groups  sf unused
 *
 * Every kernel runs a 2-D range whose first dimension is rounded up to WG, so the local size is
 * always (WG, 1): PoCL compiles each kernel once. Sums run in a fixed order in each work-item and
 * nothing uses atomics, so every result is deterministic.
 */
#ifndef WG
#define WG 64
#endif

#define GN g.s0
#define GC g.s1
#define GH g.s2
#define GW g.s3
#define GKH g.s4
#define GKW g.s5
#define GSH g.s6
#define GSW g.s7
#define GPH g.s8
#define GPW g.s9
#define GDH g.sa
#define GDW g.sb
#define GOH g.sc
#define GOW g.sd

/*
 * a / b for 0 <= a < 2^24 and b >= 1, through a float reciprocal: vector units have no integer
 * division (PoCL would divide lane by lane), and the estimate is off by at most one either way.
 * The plugin refuses image planes of 2^24 positions or more.
 */
inline int quot(const int a, const int b, const float inv)
{
    int q = convert_int_rtz((float)a * inv);
    q -= q * b > a ? 1 : 0;
    q += (q + 1) * b <= a ? 1 : 0;
    return q;
}

/*
 * col[n][(c KH + kh) KW + kw][oh OW + ow] = im[n][c][oh SH - PH + kh DH][ow SW - PW + kw DW], zero
 * outside the image. Three shapes of the same copy, chosen by the ROWS tunable:
 *
 * conv_im2col_tiles (GPUs): a work-group per block of `rows` output rows of one image channel. It
 * copies the input rows the block reads, zero padding included, into local memory once, then
 * stores the block's columns from there: consecutive work-items store consecutive columns of
 * each tap's row, which GPUs coalesce, with no bounds test and no division per store. On an
 * H200 the element kernel below ran the 3x3 windows at two thirds of the bandwidth, and on
 * those windows every variant that spent more instructions placing each value (a work-item per
 * kernel row, per run of a column row) ran slower still. The host picks `rows` (conv-util.c)
 * and the tile's size.
 *
 * conv_im2col (GPUs, where a block's tile does not fit in local memory): one work-item per output
 * position l of one image channel (n, c), looping over the KH KW taps, over a range of N C OH OW
 * work-items (a range per channel would idle work-items at the end of each).
 *
 * conv_im2col_rows (CPUs): one work-item per column row (n, c, kh, kw), OH runs of OW values.
 * PoCL runs each work-group as a loop over its work-items, with a cost per work-group that the
 * element kernel pays millions of times; here a work-item copies whole runs, the span of each
 * that falls inside the image computed once, so the copy loops have no test per element and the
 * compiler vectorises them.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_im2col_tiles(const int16 g, __global const float *restrict im, const kp_view4 iv,
                       __global float *restrict col, const kp_view3 cv, const int rows,
                       __local float *tile)
{
    const int nc = get_global_id(1), n = nc / GC, c = nc - n * GC, lid = get_local_id(0);
    const int oh0 = get_group_id(0) * rows, nr = min(rows, GOH - oh0), h0 = oh0 * GSH - GPH;
    /* The tile: input rows h0 .. h0 + th - 1, columns -PW .. tw - PW - 1. */
    const int th = (nr - 1) * GSH + (GKH - 1) * GDH + 1;
    const int tw = (GOW - 1) * GSW + (GKW - 1) * GDW + 1, te = th * tw;
    __global const float *plane = im + kp_offset(iv) + n * kp_stride(iv, 0) + c * kp_stride(iv, 1);
    /* Four loads at a time per work-item, so that their latencies overlap. */
    const float inv_tw = 1.0f / (float)tw;
    for (int e0 = lid; e0 < te; e0 += 4 * WG) {
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int e = e0 + k * WG, r = quot(e, tw, inv_tw), h = h0 + r, w = e - r * tw - GPW;
            v[k] = 0.0f;
            if (e < te && h >= 0 && h < GH && w >= 0 && w < GW)
                v[k] = plane[h * kp_stride(iv, 2) + w * kp_stride(iv, 3)];
        }
#pragma unroll
        for (int k = 0; k < 4; k++)
            if (e0 + k * WG < te)
                tile[e0 + k * WG] = v[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    __global float *out = col + kp_offset(cv) + n * kp_stride(cv, 0) + c * GKH * GKW * kp_stride(cv, 1) +
                          oh0 * GOW * kp_stride(cv, 2);
    const float inv_ow = 1.0f / (float)GOW;
    for (int p = lid; p < nr * GOW; p += WG) {
        const int oh = quot(p, GOW, inv_ow), ow = p - oh * GOW;
        __local const float *t = tile + oh * GSH * tw + ow * GSW;
        __global float *o = out + p * kp_stride(cv, 2);
        for (int kh = 0; kh < GKH; kh++)
            for (int kw = 0; kw < GKW; kw++)
                o[(kh * GKW + kw) * kp_stride(cv, 1)] = t[kh * GDH * tw + kw * GDW];
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_im2col(const int16 g, __global const float *restrict im, const kp_view4 iv,
                 __global float *restrict col, const kp_view3 cv)
{
    const int L = GOH * GOW, i = get_global_id(0);
    if (i >= GN * GC * L)
        return;
    const int nc = i / L, l = i - nc * L, n = nc / GC, c = nc - n * GC, taps = GKH * GKW;
    const int oh = quot(l, GOW, 1.0f / (float)GOW), ow = l - oh * GOW;
    const int h0 = oh * GSH - GPH, w0 = ow * GSW - GPW;
    __global const float *plane = im + kp_offset(iv) + n * kp_stride(iv, 0) + c * kp_stride(iv, 1);
    __global float *out =
        col + kp_offset(cv) + n * kp_stride(cv, 0) + c * taps * kp_stride(cv, 1) + l * kp_stride(cv, 2);
    for (int kh = 0; kh < GKH; kh++) {
        const int h = h0 + kh * GDH;
        const bool row_in = h >= 0 && h < GH;
        for (int kw = 0; kw < GKW; kw++) {
            const int w = w0 + kw * GDW;
            float v = 0.0f;
            if (row_in && w >= 0 && w < GW)
                v = plane[h * kp_stride(iv, 2) + w * kp_stride(iv, 3)];
            out[(kh * GKW + kw) * kp_stride(cv, 1)] = v;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_im2col_rows(const int16 g, __global const float *im, const kp_view4 iv,
                      __global float *col, const kp_view3 cv)
{
    const int r = get_global_id(0), n = get_global_id(1), taps = GKH * GKW;
    if (r >= GC * taps)
        return;
    const int c = r / taps, kh = r % taps / GKW, kw = r % GKW, w0 = kw * GDW - GPW;
    /* Columns ow with 0 <= ow SW + w0 < W: [lo, hi) in every row that is not padding. */
    const int hi_in = w0 < GW ? min((GW - 1 - w0) / GSW + 1, GOW) : 0;
    const int lo_in = min(w0 >= 0 ? 0 : (-w0 + GSW - 1) / GSW, hi_in);
    const int step = GSW * kp_stride(iv, 3);
    __global const float *plane = im + kp_offset(iv) + n * kp_stride(iv, 0) + c * kp_stride(iv, 1);
    __global float *cb = col + kp_offset(cv) + n * kp_stride(cv, 0) + r * kp_stride(cv, 1);
    if (GSH == 1 && GSW == 1 && GOW == GW && kp_stride(iv, 3) == 1 && kp_stride(iv, 2) == GW &&
        kp_stride(cv, 2) == 1) {
        /* Stride 1 and OW = W (3x3, padding 1): the row is the plane shifted by (hs, w0), so
         * one contiguous copy moves every row inside the image (each output p reads p + shift,
         * clamped to the plane), zeroes fill the rows in the padding, then the columns that
         * wrapped into a neighbouring row. */
        const int hs = kh * GDH - GPH, shift = hs * GW + w0, L = GOH * GOW;
        const int p0 = clamp(-hs, 0, GOH) * GW, p1 = clamp(GH - hs, p0 / GW, GOH) * GW;
        const int q0 = clamp(-shift, p0, p1), q1 = clamp(GH * GW - shift, q0, p1);
        for (int p = 0; p < q0; p++)
            cb[p] = 0.0f;
        for (int p = q0; p < q1; p++)
            cb[p] = plane[p + shift];
        for (int p = q1; p < L; p++)
            cb[p] = 0.0f;
        for (int p = p0; p < p1; p += GW) {
            for (int ow = 0; ow < lo_in; ow++)
                cb[p + ow] = 0.0f;
            for (int ow = hi_in; ow < GOW; ow++)
                cb[p + ow] = 0.0f;
        }
        return;
    }
    for (int oh = 0; oh < GOH; oh++) {
        const int h = oh * GSH - GPH + kh * GDH, pad = h < 0 || h >= GH;
        const int lo = pad ? 0 : lo_in, hi = pad ? 0 : hi_in;
        /* Column ow reads plane[ip + ow step]: an index from the plane, since the row's start
         * minus the padding (w0 < 0) would be a pointer outside the buffer. */
        const int ip = (pad ? 0 : h * kp_stride(iv, 2)) + w0 * kp_stride(iv, 3);
        __global float *cp = cb + oh * GOW * kp_stride(cv, 2);
        if (kp_stride(cv, 2) == 1) {
            /* The columns' usual layout: contiguous stores (and loads, at stride 1). */
            for (int ow = 0; ow < lo; ow++)
                cp[ow] = 0.0f;
            /* Constant strides let the compiler vectorise the loads too (stride 2: the usual
             * downsampling convolution). */
            if (step == 1)
                for (int ow = lo; ow < hi; ow++)
                    cp[ow] = plane[ip + ow];
            if (step == 2) {
                /* Stride 2 over contiguous rows: eight outputs from the even lanes of sixteen
                 * contiguous inputs, while all sixteen lie in the row (PoCL: 3.84 -> 2.72 ms on
                 * the 7x7 stride-2 stem, the strided loads alone vectorised poorly). */
                int ow = lo;
                for (; GSW == 2 && ow + 8 <= hi && w0 + 2 * ow + 15 < GW; ow += 8)
                    vstore8(vload16(0, plane + ip + 2 * ow).even, 0, cp + ow);
                for (; ow < hi; ow++)
                    cp[ow] = plane[ip + 2 * ow];
            }
            if (step > 2)
                for (int ow = lo; ow < hi; ow++)
                    cp[ow] = plane[ip + ow * step];
            for (int ow = hi; ow < GOW; ow++)
                cp[ow] = 0.0f;
        } else {
            for (int ow = 0; ow < GOW; ow++)
                cp[ow * kp_stride(cv, 2)] = ow >= lo && ow < hi ? plane[ip + ow * step] : 0.0f;
        }
    }
}

/* im[n][c][h][w] = the sum of every column entry im2col copied from (h, w): a gather, one
 * work-item per image element, summing kh then kw in increasing order. Overwrites im. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_col2im(const int16 g, __global const float *col, const kp_view3 cv,
                 __global float *im, const kp_view4 iv)
{
    const int p = get_global_id(0), nc = get_global_id(1);
    if (p >= GH * GW)
        return;
    const int n = nc / GC, c = nc % GC, h = quot(p, GW, 1.0f / (float)GW), w = p - h * GW;
    __global const float *cp =
        col + kp_offset(cv) + n * kp_stride(cv, 0) + c * GKH * GKW * kp_stride(cv, 1);
    float s = 0.0f;
    for (int kh = 0; kh < GKH; kh++) {
        const int t = h + GPH - kh * GDH;
        const int oh = t / GSH;
        if (t < 0 || t - oh * GSH != 0 || oh >= GOH)
            continue;
        for (int kw = 0; kw < GKW; kw++) {
            const int u = w + GPW - kw * GDW;
            const int ow = u / GSW;
            if (u >= 0 && u - ow * GSW == 0 && ow < GOW)
                s += cp[(kh * GKW + kw) * kp_stride(cv, 1) + (oh * GOW + ow) * kp_stride(cv, 2)];
        }
    }
    im[kp_at4(iv, n, c, h, w)] = s;
}

/*
 * The same sums for CPUs: one work-item per image row (n, c, h) zeroes it, then adds every column
 * entry that reads it, (kh, kw) in increasing order as the gather does, so every element gets the
 * same terms in the same order (the same bits); each (kh, kw) adds a run of OW values whose span
 * inside the row is computed once, so the loops vectorise. The work-item owns its row: no races.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_col2im_rows(const int16 g, __global const float *col, const kp_view3 cv,
                      __global float *im, const kp_view4 iv)
{
    const int i = get_global_id(0), n = get_global_id(1);
    if (i >= GC * GH)
        return;
    const int c = i / GH, h = i % GH;
    __global float *row =
        im + kp_offset(iv) + n * kp_stride(iv, 0) + c * kp_stride(iv, 1) + h * kp_stride(iv, 2);
    for (int w = 0; w < GW; w++)
        row[w * kp_stride(iv, 3)] = 0.0f;
    const int fast = kp_stride(iv, 3) == 1 && kp_stride(cv, 2) == 1 && GSW == 1;
    for (int kh = 0; kh < GKH; kh++) {
        const int t = h + GPH - kh * GDH, oh = t / GSH;
        if (t < 0 || t - oh * GSH != 0 || oh >= GOH)
            continue;
        for (int kw = 0; kw < GKW; kw++) {
            const int w0 = kw * GDW - GPW;
            const int hi = w0 < GW ? min((GW - 1 - w0) / GSW + 1, GOW) : 0;
            const int lo = min(w0 >= 0 ? 0 : (-w0 + GSW - 1) / GSW, hi);
            __global const float *cp = col + kp_offset(cv) + n * kp_stride(cv, 0) +
                                       ((c * GKH + kh) * GKW + kw) * kp_stride(cv, 1) +
                                       oh * GOW * kp_stride(cv, 2);
            if (fast)
                for (int ow = lo; ow < hi; ow++)
                    row[ow + w0] += cp[ow];
            else
                for (int ow = lo; ow < hi; ow++)
                    row[(ow * GSW + w0) * kp_stride(iv, 3)] += cp[ow * kp_stride(cv, 2)];
        }
    }
}

/*
 * The GEMM block of a chunk of nb images is [K, nb L]: row k holds channel k of every image side
 * by side. conv_unpack is conv2d's output pass, y[n][k][l] = t[k][n L + l] + bias[k] (has_bias 0:
 * none, and bias is any buffer); conv_pack is the backward's input pass, t[k][n L + l] =
 * dy[n][k][l]. One work-item per (position l, image and channel): rows of L move contiguously
 * on both sides.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_unpack(const int K, const int L, const int OW, __global const float *t, const int ldt,
                 __global const float *bias, const kp_view1 bv, const int has_bias,
                 __global float *y, const kp_view4 yv)
{
    const int l = get_global_id(0), nk = get_global_id(1);
    if (l >= L)
        return;
    const int n = nk / K, k = nk % K, oh = quot(l, OW, 1.0f / (float)OW), ow = l - oh * OW;
    const float b = has_bias ? bias[kp_at1(bv, k)] : 0.0f;
    y[kp_at4(yv, n, k, oh, ow)] = t[k * ldt + n * L + l] + b;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_pack(const int K, const int L, const int OW, __global const float *dy,
               const kp_view4 dv, __global float *t, const int ldt)
{
    const int l = get_global_id(0), nk = get_global_id(1);
    if (l >= L)
        return;
    const int n = nk / K, k = nk % K, oh = quot(l, OW, 1.0f / (float)OW), ow = l - oh * OW;
    t[k * ldt + n * L + l] = dy[kp_at4(dv, n, k, oh, ow)];
}

/* conv_unpack for CPUs: one work-item per (image, channel) plane of y, a run of L values from row
 * k of t plus the bias, vectorisable where the plane is contiguous. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_unpack_rows(const int K, const int planes, const int OH, const int OW,
                      __global const float *t, const int ldt, __global const float *bias,
                      const kp_view1 bv, const int has_bias, __global float *y, const kp_view4 yv)
{
    const int i = get_global_id(0);
    if (i >= planes)
        return;
    const int n = i / K, k = i - n * K, L = OH * OW;
    const float b = has_bias ? bias[kp_at1(bv, k)] : 0.0f;
    __global const float *q = t + k * ldt + n * L;
    __global float *p = y + kp_offset(yv) + n * kp_stride(yv, 0) + k * kp_stride(yv, 1);
    if (kp_stride(yv, 3) == 1 && kp_stride(yv, 2) == OW) {
        for (int l = 0; l < L; l++)
            p[l] = q[l] + b;
    } else {
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                p[oh * kp_stride(yv, 2) + ow * kp_stride(yv, 3)] = q[oh * OW + ow] + b;
    }
}

/* conv_pack for CPUs: one work-item per (image, channel) plane copies its L values into row k
 * of t, in a loop the compiler vectorises where the plane is contiguous (the element kernel pays
 * PoCL's cost per work-group for every 64 values, and a division per value). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_pack_rows(const int K, const int planes, const int OH, const int OW,
                    __global const float *dy, const kp_view4 dv, __global float *t, const int ldt)
{
    const int i = get_global_id(0);
    if (i >= planes)
        return;
    const int n = i / K, k = i - n * K, L = OH * OW;
    __global const float *p = dy + kp_offset(dv) + n * kp_stride(dv, 0) + k * kp_stride(dv, 1);
    __global float *q = t + k * ldt + n * L;
    if (kp_stride(dv, 3) == 1 && kp_stride(dv, 2) == OW) {
        for (int l = 0; l < L; l++)
            q[l] = p[l];
    } else {
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                q[oh * OW + ow] = p[oh * kp_stride(dv, 2) + ow * kp_stride(dv, 3)];
    }
}

/*
 * C = A B + beta C on strided matrices (element (i, j) at kp_at2(v, i, j); beta 0 ignores C),
 * one work-item per four columns of a row of C. The plugin's fallback when blas.gemm is not
 * registered: correct everywhere, fast nowhere.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_gemm(const int M, const int N, const int K, const float beta, __global const float *A,
               const kp_view2 av, __global const float *B, const kp_view2 bv, __global float *C,
               const kp_view2 cv)
{
    const int j0 = 4 * get_global_id(0), i = get_global_id(1);
    if (j0 >= N)
        return;
    __global const float *ap = A + kp_offset(av) + i * kp_stride(av, 0);
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k = 0; k < K; k++) {
        const float a = ap[k * kp_stride(av, 1)];
        __global const float *bp = B + kp_offset(bv) + k * kp_stride(bv, 0);
        for (int q = 0; q < 4; q++)
            s[q] = j0 + q < N ? fma(a, bp[(j0 + q) * kp_stride(bv, 1)], s[q]) : 0.0f;
    }
    for (int q = 0; q < 4 && j0 + q < N; q++) {
        __global float *cp = C + kp_offset(cv) + i * kp_stride(cv, 0) + (j0 + q) * kp_stride(cv, 1);
        *cp = beta != 0.0f ? fma(beta, *cp, s[q]) : s[q];
    }
}

/*
 * C = A B + beta C where B and C have unit column stride (A any strides), for CPUs: a work-item
 * owns 32 columns of C and walks down its rows 8 at a time, keeping the 8 x 32 block in sixteen
 * float16 accumulators while k runs: per k, two 16-wide loads of B's row and 8 scalars of A feed
 * 16 vector FMAs (AVX-512 registers under PoCL), and the work-item's K x 32 strip of B stays in
 * cache from one row block to the next. Rows past M read row M - 1 and are not stored; the last
 * strip shifts left to end at column N and stores only the columns the one before did not (fewer
 * than 32 columns in all take the plain loop). Each output is one sum in k order, so the result
 * does not depend on how many columns a call has. A work-item takes `rows` rows (a
 * multiple of 8) of its strip, the range's second dimension the rest: all of them when there are
 * strips enough to fill the device, 8 when C is narrow (the weight gradient's C is [K, C KH KW]).
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_gemm_tiled(const int M, const int N, const int K, const float beta,
                     __global const float *A, const kp_view2 av, __global const float *B,
                     const kp_view2 bv, __global float *C, const kp_view2 cv, const int rows)
{
    const int first = 32 * get_global_id(0), r0 = rows * get_global_id(1), r1 = min(r0 + rows, M);
    if (first >= N)
        return;
    if (N < 32) {
        for (int i = r0; i < r1; i++)
            for (int j = first; j < N; j++) {
                float s = 0.0f;
                for (int k = 0; k < K; k++)
                    s = fma(A[kp_at2(av, i, k)], B[kp_offset(bv) + k * kp_stride(bv, 0) + j], s);
                __global float *cp = C + kp_offset(cv) + i * kp_stride(cv, 0) + j;
                *cp = beta != 0.0f ? fma(beta, *cp, s) : s;
            }
        return;
    }
    /* The last strip shifts left to stay inside B's rows and stores only its new columns. */
    const int j0 = min(first, N - 32);
    __global const float *bp = B + kp_offset(bv) + j0;
    for (int m0 = r0; m0 < r1; m0 += 8) {
        __global const float *a0 = A + kp_offset(av) + m0 * kp_stride(av, 0);
        __global const float *a1 = A + kp_offset(av) + min(m0 + 1, M - 1) * kp_stride(av, 0);
        __global const float *a2 = A + kp_offset(av) + min(m0 + 2, M - 1) * kp_stride(av, 0);
        __global const float *a3 = A + kp_offset(av) + min(m0 + 3, M - 1) * kp_stride(av, 0);
        __global const float *a4 = A + kp_offset(av) + min(m0 + 4, M - 1) * kp_stride(av, 0);
        __global const float *a5 = A + kp_offset(av) + min(m0 + 5, M - 1) * kp_stride(av, 0);
        __global const float *a6 = A + kp_offset(av) + min(m0 + 6, M - 1) * kp_stride(av, 0);
        __global const float *a7 = A + kp_offset(av) + min(m0 + 7, M - 1) * kp_stride(av, 0);
        float16 s0 = (float16)(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0;
        float16 s7 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0, t4 = s0, t5 = s0, t6 = s0, t7 = s0;
        for (int k = 0; k < K; k++) {
            __global const float *bk = bp + k * kp_stride(bv, 0);
            const float16 b = vload16(0, bk), c = vload16(1, bk);
            const int ka = k * kp_stride(av, 1);
            float16 a = (float16)(a0[ka]);
            s0 = fma(a, b, s0);
            t0 = fma(a, c, t0);
            a = (float16)(a1[ka]);
            s1 = fma(a, b, s1);
            t1 = fma(a, c, t1);
            a = (float16)(a2[ka]);
            s2 = fma(a, b, s2);
            t2 = fma(a, c, t2);
            a = (float16)(a3[ka]);
            s3 = fma(a, b, s3);
            t3 = fma(a, c, t3);
            a = (float16)(a4[ka]);
            s4 = fma(a, b, s4);
            t4 = fma(a, c, t4);
            a = (float16)(a5[ka]);
            s5 = fma(a, b, s5);
            t5 = fma(a, c, t5);
            a = (float16)(a6[ka]);
            s6 = fma(a, b, s6);
            t6 = fma(a, c, t6);
            a = (float16)(a7[ka]);
            s7 = fma(a, b, s7);
            t7 = fma(a, c, t7);
        }
        const float16 lo[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
        const float16 hi[8] = {t0, t1, t2, t3, t4, t5, t6, t7};
        for (int i = 0; i < 8 && m0 + i < r1; i++) {
            __global float *cp = C + kp_offset(cv) + (m0 + i) * kp_stride(cv, 0) + j0;
            float out[32];
            vstore16(lo[i], 0, out);
            vstore16(hi[i], 1, out);
            for (int q = first - j0; q < 32; q++)
                cp[q] = beta != 0.0f ? fma(beta, cp[q], out[q]) : out[q];
        }
    }
}

/*
 * Winograd F(2x2, 3x3) for 3x3, stride-1, undilated convolutions (docs/kernels/conv.md):
 * an output tile of 2x2 positions is Y = A^T [(G g G^T) .* (B^T d B)] A, with d the 4x4 input
 * patch under it and g the 3x3 kernel. Summed over channels, the elementwise product is 16
 * independent GEMMs, M[xi] = U[xi] V[xi] (xi = 4 i + j), with a quarter of im2col's products per
 * output: 16 C K instead of 36 C K per tile.
 *   U [16][C/groups][K]: the transformed kernels, stored transposed (conv_wino_filter): a
 *                        column-major [K, C/groups] operand, which CLBlast's indirect GEMM
 *                        (C^T = V^T U^T, column-major) then reads without a transposed copy,
 *   V [16][C][P]:        the transformed input tiles of a chunk, P >= images x tiles,
 *                        tile p = n TH TW + th TW + tw (conv_wino_input),
 *   M [16][K][P]:        the GEMMs' products, turned into outputs by conv_wino_output.
 * A work-item handles one tile (or one kernel) of one channel; the tile index runs along the
 * first dimension, so each of the 16 rows of V or M is read and written in coalesced runs.
 */
#define WINO_ROWS(x0, x1, x2, x3, y0, y1, y2, y3)                                                 \
    do {                                                                                           \
        y0 = x0 - x2;                                                                              \
        y1 = x1 + x2;                                                                              \
        y2 = x2 - x1;                                                                              \
        y3 = x1 - x3;                                                                              \
    } while (0)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_wino_filter(const int K, const int Cg, __global const float *w, const kp_view4 wv,
                      __global float *u)
{
    const int c = get_global_id(0), k = get_global_id(1);
    if (c >= Cg)
        return;
    __global const float *p = w + kp_offset(wv) + k * kp_stride(wv, 0) + c * 9;
    float t[4][3];
    for (int j = 0; j < 3; j++) {
        const float g0 = p[j], g1 = p[3 + j], g2 = p[6 + j];
        t[0][j] = g0;
        t[1][j] = 0.5f * (g0 + g1 + g2);
        t[2][j] = 0.5f * (g0 - g1 + g2);
        t[3][j] = g2;
    }
    const int stride = K * Cg;
    __global float *out = u + c * K + k;
    for (int i = 0; i < 4; i++) {
        out[(4 * i) * stride] = t[i][0];
        out[(4 * i + 1) * stride] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        out[(4 * i + 2) * stride] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        out[(4 * i + 3) * stride] = t[i][2];
    }
}

/* Range (tiles of one image T = TH TW, images x channels); v's rows are P long: nb T tiles, then
 * the host's padding, which is left alone. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_wino_input(const int16 g, __global const float *im, const kp_view4 iv,
                     __global float *v, const int TW, const int T, const int P)
{
    const int t = get_global_id(0), nc = get_global_id(1);
    if (t >= T)
        return;
    const int n = nc / GC, c = nc - n * GC;
    const int th = quot(t, TW, 1.0f / (float)TW), tw = t - th * TW;
    const int h0 = 2 * th - GPH, w0 = 2 * tw - GPW;
    __global const float *plane = im + kp_offset(iv) + n * kp_stride(iv, 0) + c * kp_stride(iv, 1);
    float d[4][4];
    for (int i = 0; i < 4; i++) {
        const int h = h0 + i;
        const bool row_in = h >= 0 && h < GH;
        for (int j = 0; j < 4; j++) {
            const int x = w0 + j;
            d[i][j] =
                row_in && x >= 0 && x < GW ? plane[h * kp_stride(iv, 2) + x * kp_stride(iv, 3)] : 0.0f;
        }
    }
    float e[4][4];
    for (int j = 0; j < 4; j++)
        WINO_ROWS(d[0][j], d[1][j], d[2][j], d[3][j], e[0][j], e[1][j], e[2][j], e[3][j]);
    const int stride = GC * P;
    __global float *out = v + c * P + n * T + t;
    for (int i = 0; i < 4; i++) {
        float r0, r1, r2, r3;
        WINO_ROWS(e[i][0], e[i][1], e[i][2], e[i][3], r0, r1, r2, r3);
        out[(4 * i) * stride] = r0;
        out[(4 * i + 1) * stride] = r1;
        out[(4 * i + 2) * stride] = r2;
        out[(4 * i + 3) * stride] = r3;
    }
}

/* Range (tiles of one image T, images x K); y[n][k][2 th + a][2 tw + b] for the a, b inside
 * OH x OW, plus bias[k] where has_bias. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_wino_output(const int K, const int OH, const int OW, const int TW, const int T,
                      __global const float *m, const int P, __global const float *bias,
                      const kp_view1 bv, const int has_bias, __global float *y,
                      const kp_view4 yv)
{
    const int t = get_global_id(0), nk = get_global_id(1);
    if (t >= T)
        return;
    const int n = nk / K, k = nk - n * K;
    const int th = quot(t, TW, 1.0f / (float)TW), tw = t - th * TW;
    const int stride = K * P;
    __global const float *in = m + k * P + n * T + t;
    float s[2][4];
    for (int j = 0; j < 4; j++) {
        const float m0 = in[j * stride], m1 = in[(4 + j) * stride];
        const float m2 = in[(8 + j) * stride], m3 = in[(12 + j) * stride];
        s[0][j] = m0 + m1 + m2;
        s[1][j] = m1 - m2 - m3;
    }
    const float b = has_bias ? bias[kp_at1(bv, k)] : 0.0f;
    __global float *out = y + kp_offset(yv) + n * kp_stride(yv, 0) + k * kp_stride(yv, 1);
    const int oh = 2 * th, ow = 2 * tw;
    for (int a = 0; a < 2 && oh + a < OH; a++) {
        const float y0 = s[a][0] + s[a][1] + s[a][2], y1 = s[a][1] - s[a][2] - s[a][3];
        out[(oh + a) * kp_stride(yv, 2) + ow * kp_stride(yv, 3)] = y0 + b;
        if (ow + 1 < OW)
            out[(oh + a) * kp_stride(yv, 2) + (ow + 1) * kp_stride(yv, 3)] = y1 + b;
    }
}

/*
 * The sums of dy[n][k][oh][ow] over oh, ow and the images of one slice: one work-group per
 * (channel k, slice sl), the range WG x K x slices; part[sl K + k] gets the slice's sum, which
 * conv_split_sum adds over the slices into db. Slices of `per` images give a GPU work-groups
 * enough where one per channel left most of it idle. Work-item i sums positions i, i + WG, ...
 * of each image in order, then a tree in local memory adds the WG partial sums (a fixed order:
 * deterministic). The barriers sit outside every loop whose trip count differs between
 * work-items.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_bias_grad(const int N, const int per, const int L, const int OW,
                    __global const float *dy, const kp_view4 dv, __global float *part)
{
    __local float sums[WG];
    const int k = get_global_id(1), sl = get_global_id(2), lid = get_local_id(0);
    const float inv = 1.0f / (float)OW;
    const int n1 = min(N, (sl + 1) * per);
    float s = 0.0f;
    for (int n = sl * per; n < n1; n++) {
        __global const float *p = dy + kp_offset(dv) + n * kp_stride(dv, 0) + k * kp_stride(dv, 1);
        for (int l = lid; l < L; l += WG) {
            const int oh = quot(l, OW, inv);
            s += p[oh * kp_stride(dv, 2) + (l - oh * OW) * kp_stride(dv, 3)];
        }
    }
    sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step >>= 1) {
        if (lid < step)
            sums[lid] += sums[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        part[sl * get_global_size(1) + k] = sums[0];
}

/* The same sums for CPUs: one work-item per (image n, channel k) plane puts its sum in
 * part[n K + k], which conv_split_sum adds over the images in order. A work-item sums a run of
 * L values in eight lanes where the plane is contiguous (PoCL vectorises neither the strided loop
 * of each work-item above nor its tree of barriers). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_bias_grad_rows(const int K, const int planes, const int OH, const int OW,
                         __global const float *dy, const kp_view4 dv, __global float *part)
{
    const int i = get_global_id(0);
    if (i >= planes)
        return;
    const int n = i / K, k = i - n * K;
    __global const float *p = dy + kp_offset(dv) + n * kp_stride(dv, 0) + k * kp_stride(dv, 1);
    float s = 0.0f;
    if (kp_stride(dv, 3) == 1 && kp_stride(dv, 2) == OW) {
        const int L = OH * OW;
        float8 acc = (float8)(0.0f);
        int l = 0;
        for (; l + 8 <= L; l += 8)
            acc += vload8(0, p + l);
        const float4 h = acc.lo + acc.hi;
        s = (h.s0 + h.s1) + (h.s2 + h.s3);
        for (; l < L; l++)
            s += p[l];
    } else {
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                s += p[oh * kp_stride(dv, 2) + ow * kp_stride(dv, 3)];
    }
    part[i] = s;
}

/* y[n0 + n][k][...] += bias[k] over planes of L contiguous values: the bias of conv.conv2d's
 * products where they write y directly (conv-forward.c, CPUs). One work-item per (image,
 * channel) plane of a chunk of `rows` / K images, a run of L values each: PoCL pays per
 * work-group, not per value. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_add_bias_rows(const int K, const int L, const int rows, const int n0,
                        __global const float *bias, const kp_view1 bv, __global float *y,
                        const kp_view4 yv)
{
    const int i = get_global_id(0);
    if (i >= rows)
        return;
    const int k = i % K;
    const float b = bias[kp_at1(bv, k)];
    __global float *p = y + kp_offset(yv) + (n0 + i / K) * kp_stride(yv, 0) + k * kp_stride(yv, 1);
    for (int l = 0; l < L; l++)
        p[l] += b;
}

/* c[m, n] = beta c[m, n] + the sum of `slices` partial products part[s][m N + n], in slice order:
 * the weight gradient's products split over their positions (conv-backward.c). One work-item
 * per weight. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_split_sum(const int slices, const int M, const int N, const float beta,
                    __global const float *part, __global float *c, const kp_view2 cv)
{
    const int i = get_global_id(0);
    if (i >= M * N)
        return;
    float s = 0.0f;
    for (int sl = 0; sl < slices; sl++)
        s += part[(long)sl * M * N + i];
    __global float *cp = c + kp_at2(cv, i / N, i % N);
    *cp = beta != 0.0f ? fma(beta, *cp, s) : s;
}

/*
 * Max-pool: y[n][c][oh][ow] = the largest x in the window, its index h W + w in the plane. The
 * window is scanned in increasing (kh, kw), i.e. increasing index, and only a strictly larger
 * value (or the first NaN) replaces the best: ties keep the lowest index. Padding is never
 * selected; a window wholly in the padding gives -inf and index -1. has_idx 0: no indices.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool(const int16 g, __global const float *x, const kp_view4 xv, __global float *y,
                  const kp_view4 yv, __global int *idx, const kp_view4 jv, const int has_idx)
{
    const int l = get_global_id(0), nc = get_global_id(1);
    if (l >= GOH * GOW)
        return;
    const int n = nc / GC, c = nc % GC, oh = quot(l, GOW, 1.0f / (float)GOW), ow = l - oh * GOW;
    const int h0 = oh * GSH - GPH, w0 = ow * GSW - GPW;
    __global const float *xp = x + kp_offset(xv) + n * kp_stride(xv, 0) + c * kp_stride(xv, 1);
    float best = -INFINITY;
    int at = -1;
    for (int kh = 0; kh < GKH; kh++) {
        const int h = h0 + kh * GDH;
        if (h < 0 || h >= GH)
            continue;
        for (int kw = 0; kw < GKW; kw++) {
            const int w = w0 + kw * GDW;
            if (w < 0 || w >= GW)
                continue;
            const float v = xp[h * kp_stride(xv, 2) + w * kp_stride(xv, 3)];
            if (at < 0 || v > best || (isnan(v) && !isnan(best))) {
                best = v;
                at = h * GW + w;
            }
        }
    }
    y[kp_at4(yv, n, c, oh, ow)] = best;
    if (has_idx)
        idx[kp_at4(jv, n, c, oh, ow)] = at;
}

/* dx[n][c][h][w] = the sum of dy over the windows that selected (h, w): a gather, one work-item
 * per input element, visiting the windows that contain it in increasing (kh, kw). Overwrites dx. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool_backward(const int16 g, __global const float *dy, const kp_view4 dv,
                           __global const int *idx, const kp_view4 jv, __global float *dx,
                           const kp_view4 xv)
{
    const int p = get_global_id(0), nc = get_global_id(1);
    if (p >= GH * GW)
        return;
    const int n = nc / GC, c = nc % GC, h = quot(p, GW, 1.0f / (float)GW), w = p - h * GW;
    __global const float *dp = dy + kp_offset(dv) + n * kp_stride(dv, 0) + c * kp_stride(dv, 1);
    __global const int *jp = idx + kp_offset(jv) + n * kp_stride(jv, 0) + c * kp_stride(jv, 1);
    float s = 0.0f;
    for (int kh = 0; kh < GKH; kh++) {
        const int t = h + GPH - kh * GDH;
        const int oh = t / GSH;
        if (t < 0 || t - oh * GSH != 0 || oh >= GOH)
            continue;
        for (int kw = 0; kw < GKW; kw++) {
            const int u = w + GPW - kw * GDW;
            const int ow = u / GSW;
            if (u >= 0 && u - ow * GSW == 0 && ow < GOW &&
                jp[oh * kp_stride(jv, 2) + ow * kp_stride(jv, 3)] == p)
                s += dp[oh * kp_stride(dv, 2) + ow * kp_stride(dv, 3)];
        }
    }
    dx[kp_at4(xv, n, c, h, w)] = s;
}

/*
 * The two pooling kernels again for CPUs, with the same results bit for bit: a work-item owns a
 * row of the output (conv_maxpool_rows: y and indices of (n, c, oh)) or of the input
 * (conv_maxpool_backward_rows: dx of (n, c, h)) and visits the window taps (kh, kw) in increasing
 * order, each as a run over the row whose span inside the image is computed once: the loops have
 * no test per tap and vectorise. The row, in global memory, is the running state.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool_rows(const int16 g, __global const float *x, const kp_view4 xv,
                       __global float *y, const kp_view4 yv, __global int *idx, const kp_view4 jv,
                       const int has_idx)
{
    const int i = get_global_id(0), n = get_global_id(1);
    if (i >= GC * GOH)
        return;
    const int c = i / GOH, oh = i % GOH;
    __global float *yr =
        y + kp_offset(yv) + n * kp_stride(yv, 0) + c * kp_stride(yv, 1) + oh * kp_stride(yv, 2);
    __global int *jr =
        idx + kp_offset(jv) + n * kp_stride(jv, 0) + c * kp_stride(jv, 1) + oh * kp_stride(jv, 2);
    __global const float *xp = x + kp_offset(xv) + n * kp_stride(xv, 0) + c * kp_stride(xv, 1);
    for (int ow = 0; ow < GOW; ow++)
        yr[ow * kp_stride(yv, 3)] = -INFINITY;
    for (int ow = 0; has_idx && ow < GOW; ow++)
        jr[ow * kp_stride(jv, 3)] = -1;
    for (int kh = 0; kh < GKH; kh++) {
        const int h = oh * GSH - GPH + kh * GDH;
        if (h < 0 || h >= GH)
            continue;
        for (int kw = 0; kw < GKW; kw++) {
            const int w0 = kw * GDW - GPW;
            const int hi = w0 < GW ? min((GW - 1 - w0) / GSW + 1, GOW) : 0;
            const int lo = min(w0 >= 0 ? 0 : (-w0 + GSW - 1) / GSW, hi);
            __global const float *xr = xp + h * kp_stride(xv, 2);
            for (int ow = lo; ow < hi; ow++) {
                const int w = ow * GSW + w0;
                const float v = xr[w * kp_stride(xv, 3)], best = yr[ow * kp_stride(yv, 3)];
                /* A first tap of -inf leaves y at -inf, right; its index is set through -1. */
                if (v > best || (isnan(v) && !isnan(best)) ||
                    (has_idx && jr[ow * kp_stride(jv, 3)] < 0)) {
                    yr[ow * kp_stride(yv, 3)] = v;
                    if (has_idx)
                        jr[ow * kp_stride(jv, 3)] = h * GW + w;
                }
            }
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool_backward_rows(const int16 g, __global const float *dy, const kp_view4 dv,
                                __global const int *idx, const kp_view4 jv, __global float *dx,
                                const kp_view4 xv)
{
    const int i = get_global_id(0), n = get_global_id(1);
    if (i >= GC * GH)
        return;
    const int c = i / GH, h = i % GH;
    __global float *row =
        dx + kp_offset(xv) + n * kp_stride(xv, 0) + c * kp_stride(xv, 1) + h * kp_stride(xv, 2);
    for (int w = 0; w < GW; w++)
        row[w * kp_stride(xv, 3)] = 0.0f;
    for (int kh = 0; kh < GKH; kh++) {
        const int t = h + GPH - kh * GDH, oh = t / GSH;
        if (t < 0 || t - oh * GSH != 0 || oh >= GOH)
            continue;
        __global const float *dr =
            dy + kp_offset(dv) + n * kp_stride(dv, 0) + c * kp_stride(dv, 1) + oh * kp_stride(dv, 2);
        __global const int *jr =
            idx + kp_offset(jv) + n * kp_stride(jv, 0) + c * kp_stride(jv, 1) + oh * kp_stride(jv, 2);
        for (int kw = 0; kw < GKW; kw++) {
            const int w0 = kw * GDW - GPW;
            const int hi = w0 < GW ? min((GW - 1 - w0) / GSW + 1, GOW) : 0;
            const int lo = min(w0 >= 0 ? 0 : (-w0 + GSW - 1) / GSW, hi);
            for (int ow = lo; ow < hi; ow++) {
                const int w = ow * GSW + w0;
                if (jr[ow * kp_stride(jv, 3)] == h * GW + w)
                    row[w * kp_stride(xv, 3)] += dr[ow * kp_stride(dv, 3)];
            }
        }
    }
}


/*
 * The common 2 x 2 window of stride 2 (no padding, no dilation) on rows of unit stride, for CPUs:
 * one work-item per output row (n, c, oh) reads the two input rows under it and keeps each
 * window's running maximum in registers (conv_maxpool_rows keeps it in y, which may alias x,
 * so every tap is a load and a store). The taps in the same order and the same test: the same
 * results bit for bit.
 */
inline void pool_take(const float v, const int at, float *best, int *where)
{
    if (v > *best || (isnan(v) && !isnan(*best))) {
        *best = v;
        *where = at;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool2_rows(const int16 g, __global const float *x, const kp_view4 xv,
                        __global float *y, const kp_view4 yv, __global int *idx, const kp_view4 jv,
                        const int has_idx)
{
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= GC)
        return;
    __global float *yp = y + kp_offset(yv) + n * kp_stride(yv, 0) + c * kp_stride(yv, 1);
    __global int *jp = idx + kp_offset(jv) + n * kp_stride(jv, 0) + c * kp_stride(jv, 1);
    __global const float *xp = x + kp_offset(xv) + n * kp_stride(xv, 0) + c * kp_stride(xv, 1);
    for (int oh = 0; oh < GOH; oh++) {
        const int h = 2 * oh;
        __global const float *r0 = xp + h * kp_stride(xv, 2), *r1 = r0 + kp_stride(xv, 2);
        __global float *yr = yp + oh * kp_stride(yv, 2);
        __global int *jr = jp + oh * kp_stride(jv, 2);
        for (int ow = 0; ow < GOW; ow++) {
            const int w = 2 * ow, base = h * GW + w;
            float best = r0[w];
            int at = base;
            pool_take(r0[w + 1], base + 1, &best, &at);
            pool_take(r1[w], base + GW, &best, &at);
            pool_take(r1[w + 1], base + GW + 1, &best, &at);
            yr[ow] = best;
            if (has_idx)
                jr[ow] = at;
        }
    }
}

/* Its backward, where no two windows overlap: the work-item of output row (n, c, oh) writes
 * input rows 2 oh and 2 oh + 1, each element the dy of its window where the index names it (0 +
 * dy, as the gather's sum from 0 gives), else 0; the last one also zeroes the rows and columns no
 * window covers (odd H or W). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void conv_maxpool2_backward_rows(const int16 g, __global const float *dy, const kp_view4 dv,
                                 __global const int *idx, const kp_view4 jv, __global float *dx,
                                 const kp_view4 xv)
{
    const int c = get_global_id(0), n = get_global_id(1);
    if (c >= GC)
        return;
    __global const float *dp = dy + kp_offset(dv) + n * kp_stride(dv, 0) + c * kp_stride(dv, 1);
    __global const int *jp = idx + kp_offset(jv) + n * kp_stride(jv, 0) + c * kp_stride(jv, 1);
    __global float *plane = dx + kp_offset(xv) + n * kp_stride(xv, 0) + c * kp_stride(xv, 1);
    for (int oh = 0; oh < GOH; oh++) {
        const int h = 2 * oh;
        __global const float *dr = dp + oh * kp_stride(dv, 2);
        __global const int *jr = jp + oh * kp_stride(jv, 2);
        __global float *r0 = plane + h * kp_stride(xv, 2), *r1 = r0 + kp_stride(xv, 2);
        for (int ow = 0; ow < GOW; ow++) {
            const int w = 2 * ow, base = h * GW + w, j = jr[ow];
            const float d = dr[ow];
            r0[w] = 0.0f + (j == base ? d : 0.0f);
            r0[w + 1] = 0.0f + (j == base + 1 ? d : 0.0f);
            r1[w] = 0.0f + (j == base + GW ? d : 0.0f);
            r1[w + 1] = 0.0f + (j == base + GW + 1 ? d : 0.0f);
        }
        for (int w = 2 * GOW; w < GW; w++)
            r0[w] = r1[w] = 0.0f;
    }
    for (int h = 2 * GOH; h < GH; h++)
        for (int w = 0; w < GW; w++)
            plane[h * kp_stride(xv, 2) + w] = 0.0f;
}
