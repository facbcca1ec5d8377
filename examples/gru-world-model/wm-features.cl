/* SPDX-License-Identifier: Apache-2.0 */
/* wm.features: the 64 features of each loss history (examples/gru-world-model/README.md, "The 64
 * features"), r(t) = v(t) - v(W - 1) throughout. The windows, EMA weights and spike threshold are
 * features.c's too; the program compares the two on every run.
 *
 * A work-item encodes LANES histories at once, one per lane of a vector (LANES 1: a scalar, one
 * history per work-item, for GPUs): the loops over time run once for all lanes, so a CPU's vector
 * unit does LANES histories' arithmetic per instruction (PoCL vectorises across work-items only
 * in loops without inner loops, which this kernel's are not). Every lane computes what the
 * one-history work-item did, in the same order. With the histories time-major (hist's stride
 * along N is 1) a time step of the lanes is one vector load; the last work-item starts LANES
 * before N, so its loads stay in bounds, and stores only the lanes no other work-item has. Other
 * views, and N < LANES, gather the lanes one by one.
 */
#ifndef LANES
#define LANES 1
#endif
#define SPIKE 0.1f

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if LANES == 1
typedef float vf;
typedef int vi;
#define LOADV(p) (*(p))
#define TO_FLOAT(x) ((float)(x))
#else
typedef CAT(float, LANES) vf;
typedef CAT(int, LANES) vi;
#define LOADV(p) CAT(vload, LANES)(0, (p))
#define TO_FLOAT(x) CAT(convert_float, LANES)(x)
#endif

/* Time step t of the lanes: history i0 + j in lane j, the lanes past `top` repeating lane top.
 * After inlining, the fast path's constant unit stride and top make it one vector load. */
inline vf lanes_at(__global const float *h, const int step, const int stride, const int top,
                   const int t)
{
    __global const float *p = h + t * step;
    if (stride == 1 && top == LANES - 1)
        return LOADV(p);
    float g[LANES];
    for (int j = 0; j < LANES; j++)
        g[j] = p[min(j, top) * stride];
    return LOADV(g);
}

/* Feature o of lanes first .. top (the others belong to another work-item, or are past N). */
inline void lanes_store(__global float *f, const int step, const int stride, const int first,
                        const int top, const int o, const vf x)
{
    float g[LANES];
#if LANES == 1
    g[0] = x;
#else
    CAT(vstore, LANES)(x, 0, g);
#endif
    for (int j = first; j <= top; j++)
        f[j * stride + o * step] = g[j];
}

#define AT(t) lanes_at(h, hstep, hstride, top, (t))
#define OUT(x) lanes_store(f, fstep, fstride, first, top, o++, (x))

/* h and f point at history i0's first step and first feature; stride and step are the views'
 * strides along N and along time (features). */
inline void encode(__global const float *h, const int hstride, const int hstep, __global float *f,
                   const int fstride, const int fstep, const int first, const int top, const int w)
{
    const int windows[] = {8, 16, 32, 64, 0};
    const float alphas[] = {0.5f, 0.3f, 0.1f, 0.05f, 0.02f, 0.01f};
    const vf last = AT(w - 1);
    int o = 0;
    vf slopes[5];
    for (int q = 0; q < 5; q++) {
        const int k = windows[q] && windows[q] < w ? windows[q] : w, s = w - k;
        vf sum = 0, lo = INFINITY, hi = -INFINITY;
        for (int t = s; t < w; t++) {
            const vf r = AT(t) - last;
            sum += r;
            lo = fmin(lo, r);
            hi = fmax(hi, r);
        }
        const vf mean = sum / (float)k;
        const float tbar = 0.5f * (k - 1);
        vf var = 0, sxy = 0;
        for (int t = s; t < w; t++) {
            const vf d = AT(t) - last - mean;
            var += d * d;
            sxy += (t - s - tbar) * d;
        }
        const vf slope = sxy / ((float)k * ((float)k * k - 1) / 12);
        /* The residuals' sum of squares without a third pass: sum (d - slope tc)^2 = var - slope
         * sxy, since slope = sxy / sum tc^2. */
        const vf res = fmax(var - slope * sxy, 0.0f);
        slopes[q] = slope;
        OUT(mean);
        OUT(sqrt(var / (float)k));
        OUT(lo);
        OUT(hi);
        OUT(slope);
        OUT(mean + slope * tbar);
        OUT(sqrt(res / (float)k));
    }
    for (int lag = 1; lag <= 12; lag++)
        OUT(AT(max(w - 1 - lag, 0)) - last);
    /* The six EMAs in one pass over the history. */
    vf e[6];
    for (int q = 0; q < 6; q++)
        e[q] = AT(0);
    for (int t = 1; t < w; t++) {
        const vf vt = AT(t);
        for (int q = 0; q < 6; q++)
            e[q] += alphas[q] * (vt - e[q]);
    }
    for (int q = 0; q < 6; q++)
        OUT(e[q] - last);
    vf dsum = 0, dsq = 0, dmax = -INFINITY, dmin = INFINITY, vmin = AT(0), rough = 0;
    vi up = 0, spikes = 0, last_spike = -1, at_min = 0;
    const int r0 = max(w - 16, 2);
    vf prev = AT(0), prev2 = prev;
    for (int t = 1; t < w; t++) {
        const vf vt = AT(t), d = vt - prev;
        dsum += d;
        dsq += d * d;
        dmax = fmax(dmax, d);
        dmin = fmin(dmin, d);
        /* Selects: a comparison gives 1 in a scalar and -1 in a vector lane. */
        up += select((vi)0, (vi)1, d > 0.0f);
        const vi spike = d > SPIKE;
        spikes += select((vi)0, (vi)1, spike);
        last_spike = select(last_spike, (vi)t, spike);
        at_min = select(at_min, (vi)t, vt < vmin);
        vmin = fmin(vmin, vt);
        rough += t >= r0 ? fabs(vt - 2 * prev + prev2) : 0.0f;
        prev2 = prev;
        prev = vt;
    }
    /* One pass: the differences' mean is small next to their spread, so the sum of squares
     * minus the squared sum keeps f32's accuracy (README: checked against the reference). */
    OUT(sqrt(fmax(dsq - dsum * dsum / (float)(w - 1), 0.0f) / (float)(w - 1)));
    OUT(dmax);
    OUT(dmin);
    OUT(TO_FLOAT(up) / (float)(w - 1));
    OUT(TO_FLOAT(spikes));
    OUT(TO_FLOAT(select((vi)(w - 1) - last_spike, (vi)w, last_spike < 0)) / (float)w);
    OUT(last);
    OUT(AT(0) - last);
    OUT(TO_FLOAT((vi)(w - 1) - at_min) / (float)w);
    OUT(slopes[1] - slopes[3]);
    OUT(rough / (float)(w - r0));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void wm_features(const int n, const int w, __global const float *h, const kp_view2 hv,
                 __global float *f, const kp_view2 fv)
{
    const int g = get_global_id(0) * LANES;
    if (g >= n)
        return;
    const int i0 = n >= LANES ? min(g, n - LANES) : 0, first = g - i0;
    const int top = min(LANES - 1, n - 1 - i0);
    __global const float *hp = h + kp_at2(hv, i0, 0);
    __global float *fp = f + kp_at2(fv, i0, 0);
    if (kp_stride(hv, 0) == 1 && top == LANES - 1)
        encode(hp, 1, kp_stride(hv, 1), fp, kp_stride(fv, 0), kp_stride(fv, 1), first,
               LANES - 1, w);
    else
        encode(hp, kp_stride(hv, 0), kp_stride(hv, 1), fp, kp_stride(fv, 0), kp_stride(fv, 1),
               first, top, w);
}
