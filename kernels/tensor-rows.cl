/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tensor family's row kernels: softmax and log_softmax over the last axis and their backward,
 * fused softmax cross-entropy, and the fixed-order sums behind every rank-0 loss
 * (plugins/tensor/tensor-rows.c and tensor-losses.c launch them).
 *
 * Rows. A row of C elements is the work of `lanes` work-items, a power of two the host picks
 * from C alone, and is read in blocks of VW columns: lane j takes blocks j, j + lanes, ... in
 * order into VW running sums (or maxima), adds them in the prelude's fixed order (kp_hsum*), and
 * the lanes' results meet in a fixed tree (lanes_sum, lanes_max). A work-group of G work-items
 * holds G / lanes rows, one row per slot. So the order of every sum, hence every bit, follows
 * from C, VW and the lane count: neither the work-group size, nor whether a row is cached in
 * local memory, nor whether a block is read as one vector or element by element changes it.
 *
 * Blocks. VW is a build option: 4 on GPUs, where a block is one 16-byte load or store when the
 * host says the operand allows it (`vec`: its rows contiguous, 16-byte aligned); 8 or 16 on
 * CPUs, where a block is one vloadn/vstoren whenever the row is contiguous (`vec`), any
 * alignment. A block past C, or of a strided row, goes element by element.
 *
 * Caching. With `cached`, a lane keeps the blocks it reads in its row's slice of `cache` (local
 * memory), so x is read from global memory once; without, each pass reads x again. A lane only
 * ever touches its own blocks there, so the cache needs no barrier.
 *
 * Views. The host coalesces the dimensions before the last (tensor_space_make) and passes them
 * innermost first at view positions 0 .. nlead - 1, their extents in `ext` at the same positions;
 * view position 7 holds the last axis (its stride; its extent is C).
 *
 * Sums over everything (a loss's mean) take one work-group of RED_LANES work-items whatever the
 * WG tunable says: lane j takes blocks of 4 terms j, j + RED_LANES, ..., then the same tree.
 *
 * Dtypes. Each operand's storage is a build option, as kp_dtype numbers it (1 f32, the default; 2
 * f16; 6 bf16): DT0 and DT1 of a kernel's first and second row input (softmax's x, the backward's
 * dy and y, cross-entropy's logits, a pointwise loss's a and b), DTY of its row output (y, dx,
 * dlogits, a pointwise loss's gradient), DTL of the values rows_mean sums (cross-entropy's
 * per-row losses) and DTM of its result. The prelude's KP_LOAD and KP_STORE read and write them;
 * the arithmetic, the cached rows and the partial sums are f32 whatever they are. A block of a
 * 16-bit operand is one vector load or store as a float block is (8 bytes at VW 4).
 */

#ifndef DT0
#define DT0 1
#endif
#ifndef DT1
#define DT1 1
#endif
#ifndef DTY
#define DTY 1
#endif
#ifndef DTL
#define DTL 1
#endif
#ifndef DTM
#define DTM 1
#endif

#ifndef VW
#define VW 4
#endif
#if VW == 16
#define VEC float16
#define IVEC int16
#define IOTA (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)
#define HSUM kp_hsum16
#define VLOAD_1(p) vload16(0, (p))
#define VLOAD_2(p) vload_half16(0, (p))
#define VLOAD_6(p) as_float16(convert_uint16(vload16(0, (p))) << 16)
#define VSTORE_1(v, p) vstore16((v), 0, (p))
#define VSTORE_2(v, p) vstore_half16_rte((v), 0, (p))
#define VSTORE_6(v, p) vstore16(kp_bf16_rne16(v), 0, (p))
#define PLOAD(q) vload16(0, (q))
#define PSTORE(v, q) vstore16((v), 0, (q))
#elif VW == 8
#define VEC float8
#define IVEC int8
#define IOTA (int8)(0, 1, 2, 3, 4, 5, 6, 7)
#define HSUM kp_hsum8
#define VLOAD_1(p) vload8(0, (p))
#define VLOAD_2(p) vload_half8(0, (p))
#define VLOAD_6(p) as_float8(convert_uint8(vload8(0, (p))) << 16)
#define VSTORE_1(v, p) vstore8((v), 0, (p))
#define VSTORE_2(v, p) vstore_half8_rte((v), 0, (p))
#define VSTORE_6(v, p) vstore8(kp_bf16_rne8(v), 0, (p))
#define PLOAD(q) vload8(0, (q))
#define PSTORE(v, q) vstore8((v), 0, (q))
#else
#undef VW
#define VW 4
#define VEC float4
#define IVEC int4
#define IOTA (int4)(0, 1, 2, 3)
#define HSUM kp_hsum4
#define VLOAD_1(p) KP_LOAD4(1, p, 0)
#define VLOAD_2(p) KP_LOAD4(2, p, 0)
#define VLOAD_6(p) KP_LOAD4(6, p, 0)
#define VSTORE_1(v, p) KP_STORE4(1, p, 0, v)
#define VSTORE_2(v, p) KP_STORE4(2, p, 0, v)
#define VSTORE_6(v, p) KP_STORE4(6, p, 0, v)
#define PLOAD(q) vload4(0, (q))
#define PSTORE(v, q) vstore4((v), 0, (q))
#endif

/* A block of VW elements of dtype d at p, as one vector (aligned as one where VW is 4). */
#define VLOAD(d, p) KP_CAT(VLOAD_, d)(p)
#define VSTORE(d, v, p) KP_CAT(VSTORE_, d)(v, p)

#define RED_LANES 256

/* Offsets of row (or element) r in up to four views whose leading dimensions are coalesced
 * alike; the outermost takes what is left without a division. */
void lead_offsets(const int r, const int nlead, const int8 ext, const kp_view8 v0,
                  const kp_view8 v1, const kp_view8 v2, const kp_view8 v3, int4 *o)
{
    int q = r;
    int4 at = (int4)(kp_offset(v0), kp_offset(v1), kp_offset(v2), kp_offset(v3));
#define LEAD(p)                                                                                    \
    if (p < nlead) {                                                                               \
        const int i = p + 1 == nlead ? q : q % ext.s##p;                                           \
        q = p + 1 == nlead ? 0 : q / ext.s##p;                                                     \
        at += i * (int4)(KP_S_##p(v0), KP_S_##p(v1), KP_S_##p(v2), KP_S_##p(v3));                  \
    }
    LEAD(0)
    LEAD(1)
    LEAD(2)
    LEAD(3)
    LEAD(4)
    LEAD(5)
    LEAD(6)
#undef LEAD
    *o = at;
}

/* The sum of the lanes' values v in a fixed tree: lane j adds lane j + h for h = lanes / 2, ...,
 * 1. Every work-item of the group calls it (it holds barriers); t is the row's `lanes` floats of
 * local memory. */
float lanes_sum(__local float *t, const int j, const int lanes, const float v)
{
    t[j] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = lanes >> 1; h > 0; h >>= 1) {
        if (j < h)
            t[j] = t[j] + t[j + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float s = t[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

/* Two sums through the same tree steps (cross-entropy's sum of exponentials and of logits). */
float2 lanes_sum2(__local float *t, const int j, const int lanes, const float2 v)
{
    __local float *u = t + get_local_size(0);
    t[j] = v.x;
    u[j] = v.y;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = lanes >> 1; h > 0; h >>= 1) {
        if (j < h) {
            t[j] = t[j] + t[j + h];
            u[j] = u[j] + u[j + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float2 s = (float2)(t[0], u[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

/* The largest of the lanes' values; NaN is passed over (a row holding one comes out NaN through
 * its sum of exponentials anyway). */
float lanes_max(__local float *t, const int j, const int lanes, const float v)
{
    t[j] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = lanes >> 1; h > 0; h >>= 1) {
        if (j < h)
            t[j] = fmax(t[j], t[j + h]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float m = t[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return m;
}

/* loadv(d, ...): columns VW b .. VW b + VW - 1 of a row of dtype d that starts at element `at`
 * and steps s; a column at C or past it reads as pad. storev(d, ...) writes the columns of block
 * b that are below C. Defined for the dtypes a program's options name. */
#define ROW_BLOCKS(d)                                                                              \
    VEC loadv_##d(__global const KP_T(d) *p, const int at, const int s, const int b, const int C, \
                  const int vec, const float pad)                                                  \
    {                                                                                              \
        const int c = VW * b;                                                                      \
        if (vec && c + VW <= C)                                                                    \
            return VLOAD(d, p + at + c);                                                           \
        float q[VW];                                                                               \
        for (int k = 0; k < VW; k++)                                                               \
            q[k] = c + k < C ? KP_LOAD(d, p, at + (c + k) * s) : pad;                              \
        return PLOAD(q);                                                                           \
    }                                                                                              \
                                                                                                   \
    void storev_##d(__global KP_T(d) *p, const int at, const int s, const int b, const int C,     \
                    const int vec, const VEC v)                                                    \
    {                                                                                              \
        const int c = VW * b;                                                                      \
        if (vec && c + VW <= C) {                                                                  \
            VSTORE(d, v, p + at + c);                                                              \
            return;                                                                                \
        }                                                                                          \
        float q[VW];                                                                               \
        PSTORE(v, q);                                                                              \
        for (int k = 0; k < VW && c + k < C; k++)                                                  \
            KP_STORE(d, p, at + (c + k) * s, q[k]);                                                \
    }
ROW_BLOCKS(1)
#if DT0 == 2 || DT1 == 2 || DTY == 2
ROW_BLOCKS(2)
#endif
#if DT0 == 6 || DT1 == 6 || DTY == 6
ROW_BLOCKS(6)
#endif
#define loadv(d, ...) KP_CAT(loadv_, d)(__VA_ARGS__)
#define storev(d, ...) KP_CAT(storev_, d)(__VA_ARGS__)

/* The largest component. Written lane by lane, as the prelude's kp_hsum8/16 are: Oclgrind's
 * uninitialized-value check misreports the .lo/.hi halves of a float16 (prelude.cl). */
float vmax(const VEC v)
{
#if VW == 16
    const float4 q = (float4)(fmax(fmax(v.s0, v.s8), fmax(v.s4, v.sc)),
                              fmax(fmax(v.s1, v.s9), fmax(v.s5, v.sd)),
                              fmax(fmax(v.s2, v.sa), fmax(v.s6, v.se)),
                              fmax(fmax(v.s3, v.sb), fmax(v.s7, v.sf)));
#elif VW == 8
    const float4 q = (float4)(fmax(v.s0, v.s4), fmax(v.s1, v.s5), fmax(v.s2, v.s6),
                              fmax(v.s3, v.s7));
#else
    const float4 q = v;
#endif
    return fmax(fmax(q.x, q.z), fmax(q.y, q.w));
}

/* Which columns of block b are below C. */
IVEC in_row(const int b, const int C)
{
    return VW * b + IOTA < C;
}

/* y = softmax(x) (log_mode 0: exp(x - max) / sum) or log_softmax(x) (1: x - max - log(sum)) over
 * each row. y may be x's very view: a row is read whole before any of it is written. vec: bit 0
 * x, bit 1 y. */
__kernel void rows_softmax(const int rows, const int C, const int lanes, const int log_mode,
                           const int cached, const int vec, const int nlead, const int8 ext,
                           __global const KP_T(DT0) *x, const kp_view8 vx,
                           __global KP_T(DTY) *y, const kp_view8 vy, __local VEC *cache,
                           __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + VW - 1) / VW;
    __local VEC *row = cache + (cached ? slot * nb : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sy = kp_stride(vy, 7);
    const int vx1 = vec & 1, vy1 = vec & 2;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vy, vy, vy, &o);
    VEC m4 = -INFINITY;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const VEC v = loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY);
            if (cached)
                row[b] = v;
            m4 = fmax(m4, v);
        }
    const float m = lanes_max(t, j, lanes, vmax(m4));
    /* Columns past C read as -inf, whose exponential adds 0. */
    VEC s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const VEC e =
                exp((cached ? row[b] : loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY)) - m);
            if (cached && !log_mode)
                row[b] = e;
            s4 += e;
        }
    const float s = lanes_sum(t, j, lanes, HSUM(s4));
    if (!live)
        return;
    if (log_mode) {
        const float ls = log(s);
        for (int b = j; b < nb; b += lanes)
            storev(DTY, y, o.y, sy, b, C, vy1,
                   ((cached ? row[b] : loadv(DT0, x, o.x, sx, b, C, vx1, 0.0f)) - m) - ls);
    } else {
        const float inv = 1.0f / s;
        for (int b = j; b < nb; b += lanes)
            storev(DTY, y, o.y, sy, b, C, vy1,
                   (cached ? row[b] : exp(loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY) - m)) *
                       inv);
    }
}

/* dx from dy and the forward's y: softmax (log_mode 0): dx = y (dy - sum(dy y)); log_softmax (1):
 * dx = dy - exp(y) sum(dy). dx may be dy's or y's very view. vec: bit 0 dy, bit 1 y, bit 2 dx. */
__kernel void rows_softmax_backward(const int rows, const int C, const int lanes,
                                    const int log_mode, const int cached, const int vec,
                                    const int nlead, const int8 ext,
                                    __global const KP_T(DT0) *dy, const kp_view8 vdy,
                                    __global const KP_T(DT1) *y, const kp_view8 vy,
                                    __global KP_T(DTY) *dx, const kp_view8 vdx,
                                    __local VEC *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + VW - 1) / VW;
    /* dy's blocks, then (softmax) y's. */
    __local VEC *row = cache + (cached ? slot * nb * (2 - log_mode) : 0);
    __local VEC *row_y = row + nb;
    __local float *t = tree + slot * lanes;
    const int sdy = kp_stride(vdy, 7), sy = kp_stride(vy, 7), sdx = kp_stride(vdx, 7);
    const int vdy1 = vec & 1, vy1 = vec & 2, vdx1 = vec & 4;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vdy, vy, vdx, vdx, &o);
    /* Columns past C read as 0 and add nothing. */
    VEC s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const VEC g = loadv(DT0, dy, o.x, sdy, b, C, vdy1, 0.0f);
            if (cached)
                row[b] = g;
            if (log_mode) {
                s4 += g;
            } else {
                const VEC p = loadv(DT1, y, o.y, sy, b, C, vy1, 0.0f);
                if (cached)
                    row_y[b] = p;
                s4 += g * p;
            }
        }
    const float s = lanes_sum(t, j, lanes, HSUM(s4));
    if (!live)
        return;
    for (int b = j; b < nb; b += lanes) {
        const VEC g = cached ? row[b] : loadv(DT0, dy, o.x, sdy, b, C, vdy1, 0.0f);
        if (log_mode) {
            storev(DTY, dx, o.z, sdx, b, C, vdx1,
                   g - exp(loadv(DT1, y, o.y, sy, b, C, vy1, 0.0f)) * s);
        } else {
            const VEC p = cached ? row_y[b] : loadv(DT1, y, o.y, sy, b, C, vy1, 0.0f);
            storev(DTY, dx, o.z, sdx, b, C, vdx1, p * (g - s));
        }
    }
}

/*
 * Softmax cross-entropy of each row against its integer label, with label smoothing e:
 * loss = lse - (1 - e) x[label] - (e / C) sum(x), lse = max + log(sum(exp(x - max))), PyTorch's
 * definition. A row whose label is ignore_index has loss 0 and gradient 0; a label outside
 * 0 .. C - 1 otherwise gives NaN for the row's loss and gradient (a GPU cannot raise). Writes
 * each row's loss to `loss` and, when vd is not empty, dx = (softmax(x) - (1 - e) onehot - e / C)
 * / count, count[0] being the rows not ignored (rows_count). vec: bit 0 x, bit 2 dx.
 */
__kernel void rows_cross_entropy(const int rows, const int C, const int lanes, const int cached,
                                 const int vec, const int nlead, const int8 ext,
                                 const int ignore_index, const float smoothing,
                                 __global const KP_T(DT0) *x, const kp_view8 vx,
                                 __global const int *labels, const kp_view8 vl,
                                 __global KP_T(DTY) *dx, const kp_view8 vd,
                                 __global KP_T(DTL) *loss, const kp_view8 vloss,
                                 __global const int *count, __local VEC *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + VW - 1) / VW;
    __local VEC *row = cache + (cached ? slot * nb : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sd = kp_stride(vd, 7);
    const int vx1 = vec & 1, vd1 = vec & 4;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vl, vd, vloss, &o);
    VEC m4 = -INFINITY, sum_x4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const VEC v = loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY);
            if (cached)
                row[b] = v;
            m4 = fmax(m4, v);
            sum_x4 += select((VEC)(0.0f), v, in_row(b, C));
        }
    const float m = lanes_max(t, j, lanes, vmax(m4));
    VEC s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const VEC e =
                exp((cached ? row[b] : loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY)) - m);
            if (cached)
                row[b] = e;
            s4 += e;
        }
    const float2 sums = lanes_sum2(t, j, lanes, (float2)(HSUM(s4), HSUM(sum_x4)));
    if (!live)
        return;
    const int label = labels[o.y];
    const int ignored = label == ignore_index;
    const int bad = !ignored && (label < 0 || label >= C);
    const float spread = smoothing / (float)C;
    /* The lane that holds the label's column writes the loss (lane 0 when there is none). */
    if (ignored || bad ? j == 0 : j == (label / VW) % lanes) {
        const float xl = ignored || bad ? 0.0f : KP_LOAD(DT0, x, o.x + label * sx);
        const float lse = m + log(sums.x);
        KP_STORE(DTL, loss, o.w,
                 ignored ? 0.0f : bad ? NAN : lse - (1.0f - smoothing) * xl - spread * sums.y);
    }
    if (kp_empty(vd))
        return;
    const float scale = 1.0f / (float)count[0], inv = 1.0f / sums.x;
    for (int b = j; b < nb; b += lanes) {
        const VEC p =
            (cached ? row[b] : exp(loadv(DT0, x, o.x, sx, b, C, vx1, -INFINITY) - m)) * inv;
        const VEC hot = select((VEC)(0.0f), (VEC)(1.0f - smoothing), VW * b + IOTA == label);
        const VEC g = ignored ? (VEC)(0.0f) : bad ? (VEC)(NAN) : (p - hot - spread) * scale;
        storev(DTY, dx, o.z, sd, b, C, vd1, g);
    }
}

/* count[0] = how many of the n labels are not ignore_index (one work-group of RED_LANES; lane
 * j takes blocks of 4 labels j, j + RED_LANES, ..., as one int4 where vec says the labels are
 * contiguous and 16-byte aligned). */
__kernel void rows_count(const int n, const int vec, const int nlead, const int8 ext,
                         __global const int *labels, const kp_view8 vl, const int ignore_index,
                         __global int *count, __local int *tree)
{
    const int j = get_local_id(0);
    int4 k = 0;
    for (int i = 4 * j; i < n; i += 4 * RED_LANES) {
        int4 o;
        lead_offsets(i, nlead, ext, vl, vl, vl, vl, &o);
        if (vec && i + 3 < n) {
            k -= *(__global const int4 *)(labels + o.x) != ignore_index;
            continue;
        }
        for (int e = 0; e < 4 && i + e < n; e++) {
            lead_offsets(i + e, nlead, ext, vl, vl, vl, vl, &o);
            k.x += labels[o.x] != ignore_index;
        }
    }
    tree[j] = (k.x + k.y) + (k.z + k.w);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = RED_LANES / 2; h > 0; h >>= 1) {
        if (j < h)
            tree[j] += tree[j + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (j == 0)
        count[0] = tree[0];
}

/* out = the sum of the n values in v divided by count[0] when use_count, else by denom. The
 * values count in row-major order of their coalesced dimensions; lane j takes blocks of 4 values
 * j, j + RED_LANES, ... into four sums (one float4 load where vec says v is contiguous and
 * 16-byte aligned), added at the end, then the tree. One work-group of RED_LANES. */
__kernel void rows_mean(const int n, const int vec, const int nlead, const int8 ext,
                        __global const KP_T(DTL) *v, const kp_view8 vv, const int use_count,
                        __global const int *count, const float denom, __global KP_T(DTM) *out,
                        const int out_offset, __local float *tree)
{
    const int j = get_local_id(0);
    float4 s = 0.0f;
    for (int i = 4 * j; i < n; i += 4 * RED_LANES) {
        int4 o;
        lead_offsets(i, nlead, ext, vv, vv, vv, vv, &o);
        if (vec && i + 3 < n) {
            s += KP_LOAD4(DTL, v + o.x, 0);
            continue;
        }
        float q[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int e = 0; e < 4 && i + e < n; e++) {
            lead_offsets(i + e, nlead, ext, vv, vv, vv, vv, &o);
            q[e] = KP_LOAD(DTL, v, o.x);
        }
        s += (float4)(q[0], q[1], q[2], q[3]);
    }
    const float total = lanes_sum(tree, j, RED_LANES, kp_hsum4(s));
    if (j == 0)
        KP_STORE(DTM, out, out_offset, total / (use_count ? (float)count[0] : denom));
}

/* Elementwise losses of x against t, with the gradient in *d: mode 0 MSE, (x - t)^2 and x - t;
 * mode 1 binary cross-entropy with logits x and targets t, max(x, 0) - x t + log(1 + exp(-|x|))
 * and sigmoid(x) - t. */
VEC lossv(const int mode, const VEC x, const VEC t, VEC *d)
{
    if (mode == 0) {
        *d = x - t;
        return *d * *d;
    }
    *d = 1.0f / (1.0f + exp(-x)) - t;
    return fmax(x, 0.0f) - x * t + log1p(exp(-fabs(x)));
}

/* Work-group k sums the losses of elements k chunk .. (k + 1) chunk - 1 of the n (row-major over
 * the coalesced dimensions; chunk a multiple of VW) into partial[k], lane j taking blocks of VW
 * elements j, j + RED_LANES, ... into VW sums added at the end; g, when vg is not empty, gets
 * gscale times each element's gradient. vec: a, b and g contiguous (VW 4: 16-byte aligned too),
 * n a multiple of VW. One work-group of RED_LANES per chunk. */
__kernel void rows_loss_partial(const int n, const int chunk, const int mode, const int vec,
                                const int nd, const int8 ext, __global const KP_T(DT0) *a,
                                const kp_view8 va, __global const KP_T(DT1) *b,
                                const kp_view8 vb, __global KP_T(DTY) *g, const kp_view8 vg,
                                const float gscale,
                                __global float *partial, __local float *tree)
{
    const int j = get_local_id(0);
    const int lo = get_group_id(0) * chunk;
    const int len = chunk < n - lo ? chunk : n - lo;
    const int grad = !kp_empty(vg);
    VEC s = 0.0f;
    for (int k = VW * j; k < len; k += VW * RED_LANES) {
        VEC d;
        int4 o;
        if (vec) {
            lead_offsets(lo + k, nd, ext, va, vb, vg, vg, &o);
            const VEC l = lossv(mode, VLOAD(DT0, a + o.x), VLOAD(DT1, b + o.y), &d);
            if (grad)
                VSTORE(DTY, d * gscale, g + o.z);
            s += l;
            continue;
        }
        float xs[VW], ts[VW], ds[VW];
        int gs[VW];
        for (int e = 0; e < VW; e++) {
            xs[e] = ts[e] = 0.0f;
            gs[e] = 0;
            if (k + e < len) {
                lead_offsets(lo + k + e, nd, ext, va, vb, vg, vg, &o);
                xs[e] = KP_LOAD(DT0, a, o.x);
                ts[e] = KP_LOAD(DT1, b, o.y);
                gs[e] = o.z;
            }
        }
        const VEC l = lossv(mode, PLOAD(xs), PLOAD(ts), &d);
        PSTORE(d * gscale, ds);
        for (int e = 0; grad && e < VW && k + e < len; e++)
            KP_STORE(DTY, g, gs[e], ds[e]);
        s += select((VEC)(0.0f), l, k + IOTA < len);
    }
    const float total = lanes_sum(tree, j, RED_LANES, HSUM(s));
    if (j == 0)
        partial[get_group_id(0)] = total;
}
