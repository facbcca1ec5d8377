/* SPDX-License-Identifier: Apache-2.0 */
/* wm.features: the 64 features of each loss history (examples/gru-world-model/README.md, "The 64
 * features"), one work-item per history, r(t) = v(t) - v(W - 1) throughout. The windows, EMA
 * weights and spike threshold are features.c's too; the program compares the two on every run. */
#define AT(t) h[kp_at2(hv, i, (t))]
#define OUT(x) f[kp_at2(fv, i, o++)] = (x)
#define SPIKE 0.1f

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void wm_features(const int n, const int w, __global const float *h, const kp_view2 hv,
                 __global float *f, const kp_view2 fv)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const int windows[] = {8, 16, 32, 64, 0};
    const float alphas[] = {0.5f, 0.3f, 0.1f, 0.05f, 0.02f, 0.01f};
    const float last = AT(w - 1);
    int o = 0;
    float slopes[5];
    for (int q = 0; q < 5; q++) {
        const int k = windows[q] && windows[q] < w ? windows[q] : w, s = w - k;
        float sum = 0, lo = INFINITY, hi = -INFINITY;
        for (int t = s; t < w; t++) {
            const float r = AT(t) - last;
            sum += r;
            lo = fmin(lo, r);
            hi = fmax(hi, r);
        }
        const float mean = sum / k, tbar = 0.5f * (k - 1);
        float var = 0, sxy = 0;
        for (int t = s; t < w; t++) {
            const float d = AT(t) - last - mean;
            var += d * d;
            sxy += (t - s - tbar) * d;
        }
        const float slope = sxy / ((float)k * ((float)k * k - 1) / 12);
        /* The residuals' sum of squares without a third pass: sum (d - slope tc)^2 = var - slope
         * sxy, since slope = sxy / sum tc^2. */
        const float res = fmax(var - slope * sxy, 0.0f);
        slopes[q] = slope;
        OUT(mean);
        OUT(sqrt(var / k));
        OUT(lo);
        OUT(hi);
        OUT(slope);
        OUT(mean + slope * tbar);
        OUT(sqrt(res / k));
    }
    for (int lag = 1; lag <= 12; lag++)
        OUT(AT(max(w - 1 - lag, 0)) - last);
    /* The six EMAs in one pass over the history. */
    float e[6];
    for (int q = 0; q < 6; q++)
        e[q] = AT(0);
    for (int t = 1; t < w; t++) {
        const float vt = AT(t);
        for (int q = 0; q < 6; q++)
            e[q] += alphas[q] * (vt - e[q]);
    }
    for (int q = 0; q < 6; q++)
        OUT(e[q] - last);
    float dsum = 0, dsq = 0, dmax = -INFINITY, dmin = INFINITY, vmin = AT(0), rough = 0;
    int up = 0, spikes = 0, last_spike = -1, at_min = 0;
    const int r0 = max(w - 16, 2);
    for (int t = 1; t < w; t++) {
        const float vt = AT(t), d = vt - AT(t - 1);
        dsum += d;
        dsq += d * d;
        dmax = fmax(dmax, d);
        dmin = fmin(dmin, d);
        up += d > 0.0f;
        /* Selects rather than branches, so a work-group's items stay in step. */
        const int spike = d > SPIKE;
        spikes += spike;
        last_spike = spike ? t : last_spike;
        at_min = vt < vmin ? t : at_min;
        vmin = fmin(vmin, vt);
        rough += t >= r0 ? fabs(vt - 2 * AT(t - 1) + AT(t - 2)) : 0.0f;
    }
    /* One pass: the differences' mean is small next to their spread, so the sum of squares
     * minus the squared sum keeps f32's accuracy (README: checked against the reference). */
    OUT(sqrt(fmax(dsq - dsum * dsum / (w - 1), 0.0f) / (w - 1)));
    OUT(dmax);
    OUT(dmin);
    OUT((float)up / (w - 1));
    OUT((float)spikes);
    OUT((float)(last_spike < 0 ? w : w - 1 - last_spike) / w);
    OUT(last);
    OUT(AT(0) - last);
    OUT((float)(w - 1 - at_min) / w);
    OUT(slopes[1] - slopes[3]);
    OUT(rough / (w - r0));
}
