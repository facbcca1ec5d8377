/*
 * The tensor family's row kernels: softmax and log_softmax over the last axis and their backward,
 * fused softmax cross-entropy, and the fixed-order sums behind every rank-0 loss
 * (plugins/tensor/tensor-rows.c and tensor-losses.c launch them).
 *
 * Rows. A row of C elements is the work of `lanes` work-items, a power of two the host picks
 * from C alone: lane j takes columns j, j + lanes, j + 2 lanes, ... in order, then the lanes'
 * partial results meet in a fixed tree (lanes_sum, lanes_max). A work-group of G work-items holds
 * G / lanes rows, one row per slot. So the order of every sum, hence every bit, follows from C:
 * neither the work-group size nor whether rows are cached in local memory changes it.
 *
 * Caching. With `cached`, a lane keeps the columns it reads in its row's slice of `cache` (local
 * memory), so x is read from global memory once; without, each pass reads x again. A lane only
 * ever touches its own columns there, so the cache needs no barrier.
 *
 * Views. The host coalesces the dimensions before the last (tensor_space_make) and passes them
 * innermost first at view positions 0 .. nlead - 1, their extents in `ext` at the same positions;
 * view position 7 holds the last axis (its stride; its extent is C).
 *
 * Sums over everything (a loss's mean) take one work-group of RED_LANES work-items whatever the
 * WG tunable says: lane j takes terms j, j + RED_LANES, ..., then the same tree.
 */

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

/* Columns 4b .. 4b + 3 of a row that starts at element `at` and steps s; a column at C or past
 * it reads as pad. vec: the row is contiguous, 16-byte aligned, and C a multiple of 4. */
float4 load4(__global const float *p, const int at, const int s, const int b, const int C,
             const int vec, const float pad)
{
    const int c = 4 * b;
    if (vec)
        return *(__global const float4 *)(p + at + c);
    return (float4)(p[at + c * s], c + 1 < C ? p[at + (c + 1) * s] : pad,
                    c + 2 < C ? p[at + (c + 2) * s] : pad, c + 3 < C ? p[at + (c + 3) * s] : pad);
}

/* Writes the columns of block b that are below C. */
void store4(__global float *p, const int at, const int s, const int b, const int C,
            const int vec, const float4 v)
{
    const int c = 4 * b;
    if (vec) {
        *(__global float4 *)(p + at + c) = v;
        return;
    }
    p[at + c * s] = v.x;
    if (c + 1 < C)
        p[at + (c + 1) * s] = v.y;
    if (c + 2 < C)
        p[at + (c + 2) * s] = v.z;
    if (c + 3 < C)
        p[at + (c + 3) * s] = v.w;
}

float max4(const float4 v)
{
    return fmax(fmax(v.x, v.y), fmax(v.z, v.w));
}

/* y = softmax(x) (log_mode 0: exp(x - max) / sum) or log_softmax(x) (1: x - max - log(sum)) over
 * each row. y may be x's very view: a row is read whole before any of it is written. vec: bit 0
 * x, bit 1 y. */
__kernel void rows_softmax(const int rows, const int C, const int lanes, const int log_mode,
                           const int cached, const int vec, const int nlead, const int8 ext,
                           __global const float *x, const kp_view8 vx, __global float *y,
                           const kp_view8 vy, __local float4 *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + 3) / 4;
    __local float4 *row = cache + (cached ? slot * nb : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sy = kp_stride(vy, 7);
    const int vx4 = vec & 1, vy4 = vec & 2;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vy, vy, vy, &o);
    float4 m4 = -INFINITY;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const float4 v = load4(x, o.x, sx, b, C, vx4, -INFINITY);
            if (cached)
                row[b] = v;
            m4 = fmax(m4, v);
        }
    const float m = lanes_max(t, j, lanes, max4(m4));
    /* Columns past C read as -inf, whose exponential adds 0. */
    float4 s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const float4 e = exp((cached ? row[b] : load4(x, o.x, sx, b, C, vx4, -INFINITY)) - m);
            if (cached && !log_mode)
                row[b] = e;
            s4 += e;
        }
    const float s = lanes_sum(t, j, lanes, kp_hsum4(s4));
    if (!live)
        return;
    if (log_mode) {
        const float ls = log(s);
        for (int b = j; b < nb; b += lanes)
            store4(y, o.y, sy, b, C, vy4,
                   ((cached ? row[b] : load4(x, o.x, sx, b, C, vx4, 0.0f)) - m) - ls);
    } else {
        const float inv = 1.0f / s;
        for (int b = j; b < nb; b += lanes)
            store4(y, o.y, sy, b, C, vy4,
                   (cached ? row[b] : exp(load4(x, o.x, sx, b, C, vx4, -INFINITY) - m)) * inv);
    }
}

/* dx from dy and the forward's y: softmax (log_mode 0): dx = y (dy - sum(dy y)); log_softmax (1):
 * dx = dy - exp(y) sum(dy). dx may be dy's or y's very view. vec: bit 0 dy, bit 1 y, bit 2 dx. */
__kernel void rows_softmax_backward(const int rows, const int C, const int lanes,
                                    const int log_mode, const int cached, const int vec,
                                    const int nlead, const int8 ext, __global const float *dy,
                                    const kp_view8 vdy, __global const float *y,
                                    const kp_view8 vy, __global float *dx, const kp_view8 vdx,
                                    __local float4 *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + 3) / 4;
    /* dy's blocks, then (softmax) y's. */
    __local float4 *row = cache + (cached ? slot * nb * (2 - log_mode) : 0);
    __local float4 *row_y = row + nb;
    __local float *t = tree + slot * lanes;
    const int sdy = kp_stride(vdy, 7), sy = kp_stride(vy, 7), sdx = kp_stride(vdx, 7);
    const int vdy4 = vec & 1, vy4 = vec & 2, vdx4 = vec & 4;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vdy, vy, vdx, vdx, &o);
    /* Columns past C read as 0 and add nothing. */
    float4 s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const float4 g = load4(dy, o.x, sdy, b, C, vdy4, 0.0f);
            if (cached)
                row[b] = g;
            if (log_mode) {
                s4 += g;
            } else {
                const float4 p = load4(y, o.y, sy, b, C, vy4, 0.0f);
                if (cached)
                    row_y[b] = p;
                s4 += g * p;
            }
        }
    const float s = lanes_sum(t, j, lanes, kp_hsum4(s4));
    if (!live)
        return;
    for (int b = j; b < nb; b += lanes) {
        const float4 g = cached ? row[b] : load4(dy, o.x, sdy, b, C, vdy4, 0.0f);
        if (log_mode) {
            store4(dx, o.z, sdx, b, C, vdx4, g - exp(load4(y, o.y, sy, b, C, vy4, 0.0f)) * s);
        } else {
            const float4 p = cached ? row_y[b] : load4(y, o.y, sy, b, C, vy4, 0.0f);
            store4(dx, o.z, sdx, b, C, vdx4, p * (g - s));
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
                                 __global const float *x, const kp_view8 vx,
                                 __global const int *labels, const kp_view8 vl,
                                 __global float *dx, const kp_view8 vd, __global float *loss,
                                 const kp_view8 vloss, __global const int *count,
                                 __local float4 *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    const int nb = (C + 3) / 4;
    __local float4 *row = cache + (cached ? slot * nb : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sd = kp_stride(vd, 7);
    const int vx4 = vec & 1, vd4 = vec & 4;
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vl, vd, vloss, &o);
    float4 m4 = -INFINITY, sum_x4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const float4 v = load4(x, o.x, sx, b, C, vx4, -INFINITY);
            if (cached)
                row[b] = v;
            m4 = fmax(m4, v);
            sum_x4 += select((float4)(0.0f), v, 4 * b + (int4)(0, 1, 2, 3) < C);
        }
    const float m = lanes_max(t, j, lanes, max4(m4));
    float4 s4 = 0.0f;
    if (live)
        for (int b = j; b < nb; b += lanes) {
            const float4 e = exp((cached ? row[b] : load4(x, o.x, sx, b, C, vx4, -INFINITY)) - m);
            if (cached)
                row[b] = e;
            s4 += e;
        }
    const float2 sums = lanes_sum2(t, j, lanes, (float2)(kp_hsum4(s4), kp_hsum4(sum_x4)));
    if (!live)
        return;
    const int label = labels[o.y];
    const int ignored = label == ignore_index;
    const int bad = !ignored && (label < 0 || label >= C);
    const float spread = smoothing / (float)C;
    /* The lane that holds the label's column writes the loss (lane 0 when there is none). */
    if (ignored || bad ? j == 0 : j == (label / 4) % lanes) {
        const float xl = ignored || bad ? 0.0f : x[o.x + label * sx];
        const float lse = m + log(sums.x);
        loss[o.w] = ignored ? 0.0f : bad ? NAN : lse - (1.0f - smoothing) * xl - spread * sums.y;
    }
    if (kp_empty(vd))
        return;
    const float scale = 1.0f / (float)count[0], inv = 1.0f / sums.x;
    for (int b = j; b < nb; b += lanes) {
        const float4 p =
            (cached ? row[b] : exp(load4(x, o.x, sx, b, C, vx4, -INFINITY) - m)) * inv;
        const float4 hot =
            select((float4)(0.0f), (float4)(1.0f - smoothing), 4 * b + (int4)(0, 1, 2, 3) == label);
        const float4 g = ignored ? (float4)(0.0f) : bad ? (float4)(NAN) : (p - hot - spread) * scale;
        store4(dx, o.z, sd, b, C, vd4, g);
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
                        __global const float *v, const kp_view8 vv, const int use_count,
                        __global const int *count, const float denom, __global float *out,
                        const int out_offset, __local float *tree)
{
    const int j = get_local_id(0);
    float4 s = 0.0f;
    for (int i = 4 * j; i < n; i += 4 * RED_LANES) {
        int4 o;
        lead_offsets(i, nlead, ext, vv, vv, vv, vv, &o);
        if (vec && i + 3 < n) {
            s += *(__global const float4 *)(v + o.x);
            continue;
        }
        float q[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int e = 0; e < 4 && i + e < n; e++) {
            lead_offsets(i + e, nlead, ext, vv, vv, vv, vv, &o);
            q[e] = v[o.x];
        }
        s += (float4)(q[0], q[1], q[2], q[3]);
    }
    const float total = lanes_sum(tree, j, RED_LANES, kp_hsum4(s));
    if (j == 0)
        out[out_offset] = total / (use_count ? (float)count[0] : denom);
}

/* Elementwise losses of x against t, with the gradient in *d: mode 0 MSE, (x - t)^2 and x - t;
 * mode 1 binary cross-entropy with logits x and targets t, max(x, 0) - x t + log(1 + exp(-|x|))
 * and sigmoid(x) - t. */
float4 loss4(const int mode, const float4 x, const float4 t, float4 *d)
{
    if (mode == 0) {
        *d = x - t;
        return *d * *d;
    }
    *d = 1.0f / (1.0f + exp(-x)) - t;
    return fmax(x, 0.0f) - x * t + log1p(exp(-fabs(x)));
}

/* Work-group k sums the losses of elements k chunk .. (k + 1) chunk - 1 of the n (row-major over
 * the coalesced dimensions; chunk a multiple of 4) into partial[k], lane j taking blocks of 4
 * elements j, j + RED_LANES, ... into four sums added at the end; g, when vg is not empty, gets
 * gscale times each element's gradient. vec: a, b and g contiguous, 16-byte aligned, n a
 * multiple of 4. One work-group of RED_LANES per chunk. */
__kernel void rows_loss_partial(const int n, const int chunk, const int mode, const int vec,
                                const int nd, const int8 ext, __global const float *a,
                                const kp_view8 va, __global const float *b, const kp_view8 vb,
                                __global float *g, const kp_view8 vg, const float gscale,
                                __global float *partial, __local float *tree)
{
    const int j = get_local_id(0);
    const int lo = get_group_id(0) * chunk;
    const int len = chunk < n - lo ? chunk : n - lo;
    const int grad = !kp_empty(vg);
    float4 s = 0.0f;
    for (int k = 4 * j; k < len; k += 4 * RED_LANES) {
        float4 x, t, d;
        int4 o;
        if (vec) {
            lead_offsets(lo + k, nd, ext, va, vb, vg, vg, &o);
            x = *(__global const float4 *)(a + o.x);
            t = *(__global const float4 *)(b + o.y);
            const float4 l = loss4(mode, x, t, &d);
            if (grad)
                *(__global float4 *)(g + o.z) = d * gscale;
            s += l;
            continue;
        }
        float xs[4] = {0.0f, 0.0f, 0.0f, 0.0f}, ts[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int gs[4] = {0, 0, 0, 0};
        for (int e = 0; e < 4 && k + e < len; e++) {
            lead_offsets(lo + k + e, nd, ext, va, vb, vg, vg, &o);
            xs[e] = a[o.x];
            ts[e] = b[o.y];
            gs[e] = o.z;
        }
        x = (float4)(xs[0], xs[1], xs[2], xs[3]);
        t = (float4)(ts[0], ts[1], ts[2], ts[3]);
        const float4 l = loss4(mode, x, t, &d);
        const float ds[4] = {d.x, d.y, d.z, d.w};
        for (int e = 0; grad && e < 4 && k + e < len; e++)
            g[gs[e]] = ds[e] * gscale;
        s += select((float4)(0.0f), l, k + (int4)(0, 1, 2, 3) < len);
    }
    const float total = lanes_sum(tree, j, RED_LANES, kp_hsum4(s));
    if (j == 0)
        partial[get_group_id(0)] = total;
}
