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

/* y = softmax(x) (log_mode 0: exp(x - max) / sum) or log_softmax(x) (1: x - max - log(sum)) over
 * each row. y may be x's very view: a row is read whole before any of it is written. */
__kernel void rows_softmax(const int rows, const int C, const int lanes, const int log_mode,
                           const int cached, const int nlead, const int8 ext,
                           __global const float *x, const kp_view8 vx, __global float *y,
                           const kp_view8 vy, __local float *cache, __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    __local float *row = cache + (cached ? slot * C : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sy = kp_stride(vy, 7);
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vy, vy, vy, &o);
    float m = -INFINITY;
    if (live)
        for (int c = j; c < C; c += lanes) {
            const float v = x[o.x + c * sx];
            if (cached)
                row[c] = v;
            m = fmax(m, v);
        }
    m = lanes_max(t, j, lanes, m);
    float s = 0.0f;
    if (live)
        for (int c = j; c < C; c += lanes) {
            const float e = exp((cached ? row[c] : x[o.x + c * sx]) - m);
            if (cached && !log_mode)
                row[c] = e;
            s += e;
        }
    s = lanes_sum(t, j, lanes, s);
    if (!live)
        return;
    if (log_mode) {
        const float ls = log(s);
        for (int c = j; c < C; c += lanes)
            y[o.y + c * sy] = ((cached ? row[c] : x[o.x + c * sx]) - m) - ls;
    } else {
        const float inv = 1.0f / s;
        for (int c = j; c < C; c += lanes)
            y[o.y + c * sy] = (cached ? row[c] : exp(x[o.x + c * sx] - m)) * inv;
    }
}

/* dx from dy and the forward's y: softmax (log_mode 0): dx = y (dy - sum(dy y)); log_softmax (1):
 * dx = dy - exp(y) sum(dy). dx may be dy's or y's very view. */
__kernel void rows_softmax_backward(const int rows, const int C, const int lanes,
                                    const int log_mode, const int cached, const int nlead,
                                    const int8 ext, __global const float *dy, const kp_view8 vdy,
                                    __global const float *y, const kp_view8 vy, __global float *dx,
                                    const kp_view8 vdx, __local float *cache,
                                    __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    /* dy's columns, then (softmax) y's. */
    __local float *row = cache + (cached ? slot * C * (2 - log_mode) : 0);
    __local float *row_y = row + C;
    __local float *t = tree + slot * lanes;
    const int sdy = kp_stride(vdy, 7), sy = kp_stride(vy, 7), sdx = kp_stride(vdx, 7);
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vdy, vy, vdx, vdx, &o);
    float s = 0.0f;
    if (live)
        for (int c = j; c < C; c += lanes) {
            const float g = dy[o.x + c * sdy];
            if (log_mode) {
                if (cached)
                    row[c] = g;
                s += g;
            } else {
                const float p = y[o.y + c * sy];
                if (cached) {
                    row[c] = g;
                    row_y[c] = p;
                }
                s += g * p;
            }
        }
    s = lanes_sum(t, j, lanes, s);
    if (!live)
        return;
    for (int c = j; c < C; c += lanes) {
        const float g = cached ? row[c] : dy[o.x + c * sdy];
        if (log_mode) {
            dx[o.z + c * sdx] = g - exp(y[o.y + c * sy]) * s;
        } else {
            const float p = cached ? row_y[c] : y[o.y + c * sy];
            dx[o.z + c * sdx] = p * (g - s);
        }
    }
}

/*
 * Softmax cross-entropy of each row against its integer label, with label smoothing e:
 * loss = lse - (1 - e) x[label] - (e / C) sum(x), lse = max + log(sum(exp(x - max))), PyTorch's
 * definition. A row whose label is ignore_index has loss 0 and gradient 0; a label outside
 * 0 .. C - 1 otherwise gives NaN for the row's loss and gradient (a GPU cannot raise). Writes
 * each row's loss to `loss` and, when vd is not empty, dx = (softmax(x) - (1 - e) onehot - e / C)
 * / count, count[0] being the rows not ignored (rows_count).
 */
__kernel void rows_cross_entropy(const int rows, const int C, const int lanes, const int cached,
                                 const int nlead, const int8 ext, const int ignore_index,
                                 const float smoothing, __global const float *x,
                                 const kp_view8 vx, __global const int *labels,
                                 const kp_view8 vl, __global float *dx, const kp_view8 vd,
                                 __global float *loss, const kp_view8 vloss,
                                 __global const int *count, __local float *cache,
                                 __local float *tree)
{
    const int per = get_local_size(0) / lanes;
    const int slot = get_local_id(0) / lanes, j = get_local_id(0) % lanes;
    const int first = get_group_id(0) * per;
    const int live = slot < rows - first;
    __local float *row = cache + (cached ? slot * C : 0);
    __local float *t = tree + slot * lanes;
    const int sx = kp_stride(vx, 7), sd = kp_stride(vd, 7);
    int4 o = (int4)(0);
    if (live)
        lead_offsets(first + slot, nlead, ext, vx, vl, vd, vloss, &o);
    float m = -INFINITY, sum_x = 0.0f;
    if (live)
        for (int c = j; c < C; c += lanes) {
            const float v = x[o.x + c * sx];
            if (cached)
                row[c] = v;
            m = fmax(m, v);
            sum_x += v;
        }
    m = lanes_max(t, j, lanes, m);
    float s = 0.0f;
    if (live)
        for (int c = j; c < C; c += lanes) {
            const float e = exp((cached ? row[c] : x[o.x + c * sx]) - m);
            if (cached)
                row[c] = e;
            s += e;
        }
    const float2 sums = lanes_sum2(t, j, lanes, (float2)(s, sum_x));
    if (!live)
        return;
    const int label = labels[o.y];
    const int ignored = label == ignore_index;
    const int bad = !ignored && (label < 0 || label >= C);
    const float spread = smoothing / (float)C;
    /* The lane that holds the label's column writes the loss (lane 0 when there is none). */
    if (ignored || bad ? j == 0 : j == label % lanes) {
        const float xl = ignored || bad ? 0.0f : x[o.x + label * sx];
        const float lse = m + log(sums.x);
        loss[o.w] = ignored ? 0.0f : bad ? NAN : lse - (1.0f - smoothing) * xl - spread * sums.y;
    }
    if (kp_empty(vd))
        return;
    const float scale = 1.0f / (float)count[0], inv = 1.0f / sums.x;
    for (int c = j; c < C; c += lanes) {
        const float p = (cached ? row[c] : exp(x[o.x + c * sx] - m)) * inv;
        const float g = p - (c == label ? 1.0f - smoothing : 0.0f) - spread;
        dx[o.z + c * sd] = ignored ? 0.0f : bad ? NAN : g * scale;
    }
}

/* count[0] = how many of the n labels are not ignore_index (one work-group of RED_LANES). */
__kernel void rows_count(const int n, const int nlead, const int8 ext,
                         __global const int *labels, const kp_view8 vl, const int ignore_index,
                         __global int *count, __local int *tree)
{
    const int j = get_local_id(0);
    int k = 0;
    for (int i = j; i < n; i += RED_LANES) {
        int4 o;
        lead_offsets(i, nlead, ext, vl, vl, vl, vl, &o);
        k += labels[o.x] != ignore_index;
    }
    tree[j] = k;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = RED_LANES / 2; h > 0; h >>= 1) {
        if (j < h)
            tree[j] += tree[j + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (j == 0)
        count[0] = tree[0];
}

/* out = the sum of the n values in v (in row-major order of their coalesced dimensions, lane j
 * taking j, j + RED_LANES, ...) divided by count[0] when use_count, else by denom. One
 * work-group of RED_LANES. */
__kernel void rows_mean(const int n, const int nlead, const int8 ext, __global const float *v,
                        const kp_view8 vv, const int use_count, __global const int *count,
                        const float denom, __global float *out, const int out_offset,
                        __local float *tree)
{
    const int j = get_local_id(0);
    float s = 0.0f;
    for (int i = j; i < n; i += RED_LANES) {
        int4 o;
        lead_offsets(i, nlead, ext, vv, vv, vv, vv, &o);
        s += v[o.x];
    }
    s = lanes_sum(tree, j, RED_LANES, s);
    if (j == 0)
        out[out_offset] = s / (use_count ? (float)count[0] : denom);
}

/* Elementwise losses: mode 0 MSE, (a - b)^2 with gradient a - b; mode 1 binary cross-entropy
 * with logits a and targets b, max(a, 0) - a b + log(1 + exp(-|a|)) with gradient sigmoid(a) - b.
 * Work-group k sums elements k chunk .. (k + 1) chunk - 1 of the n (row-major order over the
 * coalesced dimensions) into partial[k]; g, when vg is not empty, gets gscale times each
 * element's gradient. One work-group of RED_LANES per chunk. */
__kernel void rows_loss_partial(const int n, const int chunk, const int mode, const int nd,
                                const int8 ext, __global const float *a, const kp_view8 va,
                                __global const float *b, const kp_view8 vb, __global float *g,
                                const kp_view8 vg, const float gscale, __global float *partial,
                                __local float *tree)
{
    const int j = get_local_id(0);
    const int lo = get_group_id(0) * chunk;
    const int len = chunk < n - lo ? chunk : n - lo;
    const int grad = !kp_empty(vg);
    float s = 0.0f;
    for (int k = j; k < len; k += RED_LANES) {
        int4 o;
        lead_offsets(lo + k, nd, ext, va, vb, vg, vg, &o);
        const float x = a[o.x], t = b[o.y];
        float l, d;
        if (mode == 0) {
            d = x - t;
            l = d * d;
        } else {
            l = fmax(x, 0.0f) - x * t + log1p(exp(-fabs(x)));
            d = 1.0f / (1.0f + exp(-x)) - t;
        }
        if (grad)
            g[o.z] = d * gscale;
        s += l;
    }
    s = lanes_sum(tree, j, RED_LANES, s);
    if (j == 0)
        partial[get_group_id(0)] = s;
}
