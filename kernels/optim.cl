/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The optim family: fused optimizer steps and gradient clipping over a parameter arena.
 *
 * Every array of a call (parameters, gradients, each state) is one contiguous [N] view: the
 * parameter tensors of a model are views into one buffer (an arena), and their gradients and
 * states into one buffer each, at the same offsets. One launch then updates the whole list.
 * A work-item owns RUN consecutive groups of four elements (16-byte accesses when every array's
 * offset is a multiple of four: `aligned`).
 *
 * Segments (optional): `seg` [n_seg, 2] holds each parameter tensor's (offset, length) in the
 * arena, sorted by offset and disjoint. Only elements inside a segment are touched; `scl`
 * [n_seg, 2] (optional) gives each segment a learning-rate and a weight-decay multiplier (PyTorch's
 * param groups). The segment of an element is found by a binary search over the offsets; reads
 * stay inside the table whatever it holds, so an unchecked table can give wrong values but never
 * an access outside the arrays.
 *
 * Build options: PARAM_BF16 (the parameters are bf16, updated through an f32 master copy),
 * GRAD_BF16 (the gradients are bf16).
 */

#ifndef PARAM_BF16
#define PARAM_BF16 0
#endif
#ifndef GRAD_BF16
#define GRAD_BF16 0
#endif
/* Groups of four each work-item of the elementwise kernels updates, one after the other (the RUN
 * tunable: 1 on GPUs, where neighbouring work-items must read neighbouring memory; more on CPUs,
 * where a work-group's items run one after another and a run keeps its segment). */
#ifndef RUN
#define RUN 1
#endif

#if PARAM_BF16
typedef ushort ptype;
#else
typedef float ptype;
#endif
#if GRAD_BF16
typedef ushort gtype;
#else
typedef float gtype;
#endif

/* Groups of four in n elements; written so that n up to 2^31 - 1 does not overflow (nor does any
 * index below: tails compare n - e, never e + 3, with n). */
int n_groups(const int n)
{
    return n / 4 + (n % 4 != 0);
}

float4 load4_f32(__global const float *x, const int off, const int k, const int n, const int full,
                 const int aligned)
{
    if (full)
        return aligned ? ((__global const float4 *)(x + off))[k] : vload4(k, x + off);
    const int e = 4 * k;
    return (float4)(x[off + e], n - e > 1 ? x[off + e + 1] : 0.0f,
                    n - e > 2 ? x[off + e + 2] : 0.0f, n - e > 3 ? x[off + e + 3] : 0.0f);
}

float4 load4_bf16(__global const ushort *x, const int off, const int k, const int n, const int full,
                  const int aligned)
{
    uint4 u;
    if (full) {
        u = convert_uint4(aligned ? ((__global const ushort4 *)(x + off))[k] : vload4(k, x + off));
    } else {
        const int e = 4 * k;
        u = (uint4)(x[off + e], n - e > 1 ? x[off + e + 1] : 0, n - e > 2 ? x[off + e + 2] : 0,
                    n - e > 3 ? x[off + e + 3] : 0);
    }
    return as_float4(u << 16);
}

/* Stores the lanes of `v` that `mask` selects (all four at once where it can). */
void store4_f32(__global float *x, const int off, const int k, const float4 v, const int4 mask,
                const int aligned)
{
    if (all(mask)) {
        if (aligned)
            ((__global float4 *)(x + off))[k] = v;
        else
            vstore4(v, k, x + off);
        return;
    }
    const int e = off + 4 * k;
    if (mask.x)
        x[e] = v.x;
    if (mask.y)
        x[e + 1] = v.y;
    if (mask.z)
        x[e + 2] = v.z;
    if (mask.w)
        x[e + 3] = v.w;
}

void store4_bf16(__global ushort *x, const int off, const int k, const float4 v, const int4 mask,
                 const int aligned)
{
    /* Nearest even, a NaN kept a NaN (the prelude's kp_bf16_rne, the host's kp_bf16_from_float). */
    const ushort4 b = kp_bf16_rne4(v);
    if (all(mask)) {
        if (aligned)
            ((__global ushort4 *)(x + off))[k] = b;
        else
            vstore4(b, k, x + off);
        return;
    }
    const int e = off + 4 * k;
    if (mask.x)
        x[e] = b.x;
    if (mask.y)
        x[e + 1] = b.y;
    if (mask.z)
        x[e + 2] = b.z;
    if (mask.w)
        x[e + 3] = b.w;
}

#if PARAM_BF16
#define LOAD_P(x, off, k, n, full, aligned) load4_bf16(x, off, k, n, full, aligned)
#define STORE_P(x, off, k, v, mask, aligned) store4_bf16(x, off, k, v, mask, aligned)
#else
#define LOAD_P(x, off, k, n, full, aligned) load4_f32(x, off, k, n, full, aligned)
#define STORE_P(x, off, k, v, mask, aligned) store4_f32(x, off, k, v, mask, aligned)
#endif
#if GRAD_BF16
#define LOAD_G(x, off, k, n, full, aligned) load4_bf16(x, off, k, n, full, aligned)
#define STORE_G(x, off, k, v, mask, aligned) store4_bf16(x, off, k, v, mask, aligned)
#else
#define LOAD_G(x, off, k, n, full, aligned) load4_f32(x, off, k, n, full, aligned)
#define STORE_G(x, off, k, v, mask, aligned) store4_f32(x, off, k, v, mask, aligned)
#endif

/* ---- segments ---------------------------------------------------------------------------- */

#define SEG_PARAMS                                                                                 \
    const int n_seg, __global const int *seg, const kp_view2 segv, __global const float *scl,      \
        const kp_view2 sclv

/* The last segment whose offset is at most e, or -1 (none starts at or before e). */
int seg_find(const int e, const int n_seg, __global const int *seg, const kp_view2 segv)
{
    int lo = 0, hi = n_seg;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (seg[kp_at2(segv, mid, 0)] <= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo - 1;
}

/* Whether element e lies in segment s (s from seg_find). */
int seg_holds(const int s, const int e, __global const int *seg, const kp_view2 segv)
{
    return s >= 0 && e - seg[kp_at2(segv, s, 0)] < seg[kp_at2(segv, s, 1)];
}

/* The lanes of group k below n. */
int4 lanes_below(const int k, const int n)
{
    const int e = 4 * k;
    return (int4)(-1, n - e > 1 ? -1 : 0, n - e > 2 ? -1 : 0, n - e > 3 ? -1 : 0);
}

/*
 * The lanes of group k that the call updates (elements below n, inside a segment when there are
 * segments) and, with `scl`, each lane's learning-rate and weight-decay multipliers. *hint is the
 * segment of the last lane of a group before k (-1 at first) and receives this group's: a group
 * inside the hinted segment costs no search, one inside another segment one search, and one that
 * straddles a boundary searches lane by lane.
 */
int4 group_lanes(const int k, const int n, SEG_PARAMS, float4 *lr_mul, float4 *wd_mul, int *hint)
{
    const int e = 4 * k;
    *lr_mul = (float4)(1.0f);
    *wd_mul = (float4)(1.0f);
    if (n_seg == 0)
        return lanes_below(k, n);
    /* The hint starts at or before an earlier element: holding e, it is e's segment. */
    const int s = seg_holds(*hint, e, seg, segv) ? *hint : seg_find(e, n_seg, seg, segv);
    int4 in;
    int4 si = (int4)(s);
    if (n - e > 3 && seg_holds(s, e + 3, seg, segv)) {
        in = (int4)(-1);
    } else {
        /* Lanes past the end look up the last element (and are not stored). */
        const int last = n - 1 - e;
        si = (int4)(s, seg_find(e + min(1, last), n_seg, seg, segv),
                    seg_find(e + min(2, last), n_seg, seg, segv),
                    seg_find(e + min(3, last), n_seg, seg, segv));
        in = (int4)(seg_holds(s, e, seg, segv) ? -1 : 0,
                    n - e > 1 && seg_holds(si.y, e + 1, seg, segv) ? -1 : 0,
                    n - e > 2 && seg_holds(si.z, e + 2, seg, segv) ? -1 : 0,
                    n - e > 3 && seg_holds(si.w, e + 3, seg, segv) ? -1 : 0);
    }
    *hint = si.w;
    if (!kp_empty(sclv)) {
        /* Lanes outside every segment keep multipliers 1: they are not stored. */
        const int4 sj = select((int4)(0), si, in);
        *lr_mul = (float4)(scl[kp_at2(sclv, sj.x, 0)], scl[kp_at2(sclv, sj.y, 0)],
                           scl[kp_at2(sclv, sj.z, 0)], scl[kp_at2(sclv, sj.w, 0)]);
        *wd_mul = (float4)(scl[kp_at2(sclv, sj.x, 1)], scl[kp_at2(sclv, sj.y, 1)],
                           scl[kp_at2(sclv, sj.z, 1)], scl[kp_at2(sclv, sj.w, 1)]);
    }
    return in;
}

/* The gradients of group k as the update sees them: times `gmul` (a rank-0 tensor, e.g.
 * optim.clip_grad_norm's coef) when there is one, negated when maximizing. */
float4 grad4(__global const gtype *g, const int goff, const int k, const int n, const int full,
             const int aligned, __global const float *gmul, const kp_view1 gmulv,
             const int maximize)
{
    float4 gv = LOAD_G(g, goff, k, n, full, aligned);
    if (!kp_empty(gmulv))
        gv *= gmul[kp_offset(gmulv)];
    return maximize ? -gv : gv;
}

/* ---- Adam and AdamW ----------------------------------------------------------------------- */

/*
 * PyTorch's Adam (decoupled = 0: weight decay added to the gradient) and AdamW (decoupled = 1:
 * the parameter shrunk by lr * weight_decay first), with its fused kernel's formulas:
 *     m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2;  (AMSGrad: vmax = max(vmax, v))
 *     p -= step_size * m / (sqrt(v or vmax) / bc2_sqrt + eps)
 * with step_size = lr / (1 - beta1^step) and bc2_sqrt = sqrt(1 - beta2^step) from the host. With
 * PARAM_BF16 the update runs on the f32 master copy `w` and p receives it rounded to bf16.
 */
__kernel void optim_adam(const int n, const int aligned, const int decoupled, const int amsgrad,
                         const int maximize, const float lr, const float beta1, const float beta2,
                         const float eps, const float weight_decay, const float step_size,
                         const float bc2_sqrt, __global ptype *p, const kp_view1 pv,
                         __global const gtype *g, const kp_view1 gv, __global float *m,
                         const kp_view1 mv, __global float *v, const kp_view1 vv,
                         __global float *vmax, const kp_view1 vmaxv, __global float *w,
                         const kp_view1 wv, __global const float *gmul, const kp_view1 gmulv,
                         SEG_PARAMS)
{
    int hint = -1;
    for (int r = 0; r < RUN; r++) {
        const int k = get_global_id(0) * RUN + r;
        if (k >= n_groups(n))
            return;
        const int full = k < n / 4;
        /* The loads go first, so that they are in flight while the segment search runs. */
#if PARAM_BF16
        float4 x = load4_f32(w, kp_offset(wv), k, n, full, aligned);
#else
        float4 x = LOAD_P(p, kp_offset(pv), k, n, full, aligned);
#endif
        float4 gr = grad4(g, kp_offset(gv), k, n, full, aligned, gmul, gmulv, maximize);
        float4 ma = load4_f32(m, kp_offset(mv), k, n, full, aligned);
        float4 va = load4_f32(v, kp_offset(vv), k, n, full, aligned);
        float4 lr_mul = 1.0f, wd_mul = 1.0f;
        const int4 in = n_seg == 0 ? lanes_below(k, n)
                                   : group_lanes(k, n, n_seg, seg, segv, scl, sclv, &lr_mul,
                                                 &wd_mul, &hint);
        const float4 wd = weight_decay * wd_mul;
        if (weight_decay != 0.0f) {
            if (decoupled)
                x = fma(-(lr * lr_mul) * wd, x, x);
            else
                gr = fma(wd, x, gr);
        }
        ma = fma(beta1, ma, (1.0f - beta1) * gr);
        va = fma(beta2, va, (1.0f - beta2) * gr * gr);
        float4 second = va;
        if (amsgrad) {
            second = fmax(load4_f32(vmax, kp_offset(vmaxv), k, n, full, aligned), va);
            store4_f32(vmax, kp_offset(vmaxv), k, second, in, aligned);
        }
        const float4 denom = sqrt(second) / bc2_sqrt + eps;
        x = x - (step_size * lr_mul) * ma / denom;
        store4_f32(m, kp_offset(mv), k, ma, in, aligned);
        store4_f32(v, kp_offset(vv), k, va, in, aligned);
#if PARAM_BF16
        store4_f32(w, kp_offset(wv), k, x, in, aligned);
#endif
        STORE_P(p, kp_offset(pv), k, x, in, aligned);
    }
}

/* ---- SGD ---------------------------------------------------------------------------------- */

/*
 * PyTorch's SGD: g += weight_decay p; with momentum, buf = g on the first step, else
 * buf = momentum buf + (1 - dampening) g, and g = g + momentum buf (Nesterov) or buf; p -= lr g.
 */
__kernel void optim_sgd(const int n, const int aligned, const int first, const int nesterov,
                        const int maximize, const float lr, const float momentum,
                        const float dampening, const float weight_decay, __global ptype *p,
                        const kp_view1 pv, __global const gtype *g, const kp_view1 gv,
                        __global float *buf, const kp_view1 bufv, __global float *w,
                        const kp_view1 wv, __global const float *gmul, const kp_view1 gmulv,
                        SEG_PARAMS)
{
    int hint = -1;
    for (int r = 0; r < RUN; r++) {
        const int k = get_global_id(0) * RUN + r;
        if (k >= n_groups(n))
            return;
        const int full = k < n / 4;
#if PARAM_BF16
        float4 x = load4_f32(w, kp_offset(wv), k, n, full, aligned);
#else
        float4 x = LOAD_P(p, kp_offset(pv), k, n, full, aligned);
#endif
        float4 gr = grad4(g, kp_offset(gv), k, n, full, aligned, gmul, gmulv, maximize);
        const int momentum_on = !kp_empty(bufv);
        const float4 before =
            momentum_on && !first ? load4_f32(buf, kp_offset(bufv), k, n, full, aligned) : 0.0f;
        float4 lr_mul = 1.0f, wd_mul = 1.0f;
        const int4 in = n_seg == 0 ? lanes_below(k, n)
                                   : group_lanes(k, n, n_seg, seg, segv, scl, sclv, &lr_mul,
                                                 &wd_mul, &hint);
        if (weight_decay != 0.0f)
            gr = fma(weight_decay * wd_mul, x, gr);
        if (momentum_on) {
            float4 b = gr;
            if (!first)
                b = fma(momentum, before, (1.0f - dampening) * gr);
            store4_f32(buf, kp_offset(bufv), k, b, in, aligned);
            gr = nesterov ? fma(momentum, b, gr) : b;
        }
        x = fma(-(lr * lr_mul), gr, x);
#if PARAM_BF16
        store4_f32(w, kp_offset(wv), k, x, in, aligned);
#endif
        STORE_P(p, kp_offset(pv), k, x, in, aligned);
    }
}

/* ---- gradient clipping by the global norm -------------------------------------------------- */

/*
 * Pass 1: lane j (of `lanes`, a multiple of 32 fixed by n alone) sums the squares of its groups in
 * order: j, j + lanes, j + 2 lanes, ... (interleaved: a GPU's neighbouring lanes read neighbouring
 * groups) or, with `blocked`, the run j rounds .. (j + 1) rounds - 1 (a CPU runs a work-group's
 * items one after another: each reads its own run). Each 32 consecutive lanes then add up in a
 * fixed tree, so partial[j / 32] depends on n, the layout and the data, never on the work-group
 * size (a multiple of 32).
 */
__kernel void optim_sumsq(const int n, const int aligned, const int lanes, const int blocked,
                          __global const gtype *g, const kp_view1 gv, SEG_PARAMS,
                          __global float *partial, __local float *tree)
{
    const int j = get_global_id(0), lid = get_local_id(0);
    const int groups = n_groups(n);
    const int rounds = (groups + lanes - 1) / lanes;
    float4 acc = (float4)(0.0f);
    int s = -1;
    for (int r = 0; r < rounds; r++) {
        const int k = blocked ? j * rounds + r : j + r * lanes;
        if (j >= lanes || k >= groups)
            continue;
        const float4 raw = LOAD_G(g, kp_offset(gv), k, n, k < n / 4, aligned);
        if (n_seg == 0 && k < n / 4) {
            acc = fma(raw, raw, acc);
            continue;
        }
        float4 lr_mul, wd_mul;
        const int4 in = group_lanes(k, n, n_seg, seg, segv, scl, sclv, &lr_mul, &wd_mul, &s);
        const float4 x = select((float4)(0.0f), raw, in);
        acc = fma(x, x, acc);
    }
    tree[lid] = kp_hsum4(acc);
    for (int h = 16; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if ((lid & 31) < h)
            tree[lid] += tree[lid + h];
    }
    if ((lid & 31) == 0 && j < lanes)
        partial[j / 32] = tree[lid];
}

#define FINAL_LANES 256

/*
 * Pass 2, one work-group of FINAL_LANES: the sum of the `count` partials in a fixed order, its
 * square root (the norm, into `norm`) and PyTorch's clip coefficient
 * min(1, max_norm / (norm + 1e-6)) (a NaN norm gives NaN), into partial[count] and `coef`.
 */
__kernel __attribute__((reqd_work_group_size(FINAL_LANES, 1, 1)))
void optim_norm_final(const int count, const float max_norm, __global float *partial,
                      __global float *norm, const kp_view1 normv, __global float *coef,
                      const kp_view1 coefv)
{
    __local float tree[FINAL_LANES];
    const int t = get_local_id(0);
    float s = 0.0f;
    for (int i = t; i < count; i += FINAL_LANES)
        s += partial[i];
    tree[t] = s;
    for (int h = FINAL_LANES / 2; h > 0; h >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (t < h)
            tree[t] += tree[t + h];
    }
    if (t == 0) {
        const float total = sqrt(tree[0]);
        const float c = max_norm / (total + 1e-6f);
        const float clamped = c > 1.0f ? 1.0f : c;
        norm[kp_offset(normv)] = total;
        partial[count] = clamped;
        if (!kp_empty(coefv))
            coef[kp_offset(coefv)] = clamped;
    }
}

/* Pass 3: g *= the coefficient at partial[count], inside the segments. */
__kernel void optim_scale(const int n, const int aligned, const int count,
                          __global gtype *g, const kp_view1 gv, SEG_PARAMS,
                          __global const float *partial)
{
    int hint = -1;
    for (int r = 0; r < RUN; r++) {
        const int k = get_global_id(0) * RUN + r;
        if (k >= n_groups(n))
            return;
        const int full = k < n / 4;
        const float4 x = LOAD_G(g, kp_offset(gv), k, n, full, aligned) * partial[count];
        float4 lr_mul = 1.0f, wd_mul = 1.0f;
        const int4 in = n_seg == 0 ? lanes_below(k, n)
                                   : group_lanes(k, n, n_seg, seg, segv, scl, sclv, &lr_mul,
                                                 &wd_mul, &hint);
        STORE_G(g, kp_offset(gv), k, x, in, aligned);
    }
}

/* ---- the weights' exponential moving average ----------------------------------------------- */

/*
 * a = p on the first update (`first`), else a += w (p - a) with w = 1 - decay from the host
 * (torch._foreach_lerp_, as get_ema_multi_avg_fn does). The average is f32 whatever p's dtype.
 */
__kernel void optim_ema(const int n, const int aligned, const int first, const float w,
                        __global float *a, const kp_view1 av, __global const ptype *p,
                        const kp_view1 pv)
{
    for (int r = 0; r < RUN; r++) {
        const int k = get_global_id(0) * RUN + r;
        if (k >= n_groups(n))
            return;
        const int full = k < n / 4;
        const float4 x = LOAD_P(p, kp_offset(pv), k, n, full, aligned);
        float4 y = x;
        if (!first) {
            const float4 old = load4_f32(a, kp_offset(av), k, n, full, aligned);
            y = fma(w, x - old, old);
        }
        store4_f32(a, kp_offset(av), k, y, lanes_below(k, n), aligned);
    }
}
