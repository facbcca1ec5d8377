/* SPDX-License-Identifier: Apache-2.0 */
/* gru.rollout: the ensemble world-model rollout. Two kernels share this file: gru_rollout, one
 * work-group per (member, trajectory), and gru_rollout_grid (gru.rollout_grid's), several
 * work-groups per trajectory exchanging values through global memory. A build compiles one of
 * them: gru.rollout_grid's build options define RO_GRID (PoCL spends minutes compiling the grid
 * kernel's loops of barriers, which gru.rollout must not pay). */

#define MODE_SAMPLE 0
#define MODE_MEAN 1
#define MODE_ARGMAX 2

/*
 * The arguments both kernels start with, in the order gru_rollout_args (gru-rollout.c) sets them:
 * the call's sizes and scalars, then each tensor as its buffer and a kp_view of the prelude (the
 * core packs it: offset, extents, strides, in elements), of the tensor's own rank. A shared f
 * ([1, B, F]) arrives as a broadcast [E, B, F] view with member stride 0. The weight matrices'
 * last dimension is contiguous (check requires it), so rows are read from their row stride
 * alone. An omitted optional tensor arrives as an empty view (offset -1) on a stand-in buffer,
 * never read: the has_ flags of RO_MEMBER test kp_empty.
 */
#define RO_PARAMS                                                                                  \
    const int B, const int F, const int H, const int S, const int T, const int mode,               \
        const int lbr, const uint seed_lo, const uint seed_hi, __global const float *w_ih,         \
        const kp_view3 wihv, __global const float *w_hh, const kp_view3 whhv,                      \
        __global const float *b_ih, const kp_view2 bihv, __global const float *b_hh,               \
        const kp_view2 bhhv, __global const float *w_p, const kp_view3 wpv,                        \
        __global const float *b_p, const kp_view2 bpv, __global const float *w_y,                  \
        const kp_view2 wyv, __global const float *b_y, const kp_view1 byv,                         \
        __global const float *f, const kp_view3 fv, __global const float *y0,                      \
        const kp_view1 y0v, __global const float *z0, const kp_view3 z0v,                          \
        __global const float *h0, const kp_view3 h0v, __global float *y, const kp_view3 yv,        \
        __global float *h_T, const kp_view3 hTv, __global float *ent, const kp_view3 entv,         \
        __global float *hnorm, const kp_view3 hnv

/* Philox4x32-10 of counter (t, b, e, 0) under key (seed_lo, seed_hi); the top 24 bits of the
 * first word as a float in [0, 1). kp_gru_rollout_uniform in kernelport/ops/gru.h is the same. */
float ro_uniform(uint seed_lo, uint seed_hi, uint e, uint b, uint t)
{
    return (float)(kp_philox4x32_10((uint4)(t, b, e, 0), (uint2)(seed_lo, seed_hi)).x >> 8) *
           0x1p-24f;
}

float ro_sigmoid(float x)
{
    return 1.0f / (1.0f + exp(-x));
}

/* (value, index) of the larger value; the lower index on ties. */
void max_combine(float *m, int *k, float m2, int k2)
{
    if (m2 > *m || (m2 == *m && k2 < *k)) {
        *m = m2;
        *k = k2;
    }
}

/* Member e's weights and biases (the kernels' arguments w_ih .. b_y) with their row strides
 * (element strides for the vectors), and which optional tensors were given. */
#define RO_MEMBER(e)                                                                               \
    const __global float *Wih = w_ih + kp_offset(wihv) + (e) * kp_stride(wihv, 0);                        \
    const __global float *Whh = w_hh + kp_offset(whhv) + (e) * kp_stride(whhv, 0);                        \
    const __global float *Bih = b_ih + kp_offset(bihv) + (e) * kp_stride(bihv, 0);                        \
    const __global float *Bhh = b_hh + kp_offset(bhhv) + (e) * kp_stride(bhhv, 0);                        \
    const __global float *Wp = w_p + kp_offset(wpv) + (e) * kp_stride(wpv, 0);                            \
    const __global float *Bp = b_p + kp_offset(bpv) + (e) * kp_stride(bpv, 0);                            \
    const __global float *Wy = w_y + kp_offset(wyv) + (e) * kp_stride(wyv, 0);                            \
    const float by = b_y[kp_at1(byv, e)];                                                          \
    const int wih_r = kp_stride(wihv, 1), whh_r = kp_stride(whhv, 1), bih_r = kp_stride(bihv, 1);           \
    const int bhh_r = kp_stride(bhhv, 1), wp_r = kp_stride(wpv, 1), bp_r = kp_stride(bpv, 1);               \
    const int wy_r = kp_stride(wyv, 1);                                                               \
    const int has_bih = !kp_empty(bihv), has_bhh = !kp_empty(bhhv);                          \
    const int has_ent = !kp_empty(entv), has_hn = !kp_empty(hnv)

#ifndef RO_GRID

/* gru_rollout's arguments after RO_PARAMS, in the order gru-rollout.c sets them: both bodies
 * (WG > 1 and WG 1) take them, the work-group one with its local buffer after. */
#define RO_SCRATCH __global float *scratch

/*
 * Design (docs/kernels/gru.md, "gru.rollout", says more):
 * - One launch runs all T steps. Work-group (e, b) keeps h, r (.) h, the logits and the
 *   stochastic state in local memory (the gate sums in a scratch only it reads) and runs the
 *   steps as one loop of tasks with one barrier; the loop's trip count is the same for every
 *   work-item, and no loop inside it has a work-item-dependent trip count (PoCL, below).
 * - Matrix-vector products go in passes of WG rows. In a pass, LANES consecutive work-items read
 *   consecutive VEC-float pieces of one row (coalesced on GPUs, vector loads on CPUs), each
 *   accumulating LANES rows; the partial sums meet in local memory and work-item i returns row
 *   p + i. Two partial-sum buffers alternate so each pass needs one barrier.
 * - W_ih times the static features f is the same at every step: computed once into scratch.
 *   When z_{t-1} is one-hot (modes sample and argmax, t >= 1) the input product is two columns
 *   of W_ih (y and the drawn category) instead of a pass over 1 + S columns.
 * - Softmax statistics, the inverse-CDF draw and the norms are two-level reductions: each
 *   work-item owns a contiguous chunk of the S categories, NB work-items combine blocks of
 *   partial results, and every work-item reads the NB block results.
 */

#ifndef WG
#define WG 256
#endif
#ifndef LANES
#define LANES 16
#endif
#ifndef VEC
#define VEC 1
#endif

#define NG (WG / LANES)         /* row groups: rows a work-item accumulates are NG apart */
#define RSTRIDE (LANES + 1)     /* padded stride of a row's partial sums: no bank conflicts */
#define RED (WG * RSTRIDE)      /* floats of one partial-sum buffer */
#define NB 32                   /* blocks of the two-level reductions (WG >= 32) */
#define BS (WG / NB)            /* work-items per block */

#if VEC == 1
typedef float vfloat;
#define VLOAD(i, p) ((p)[i])
#define VSTORE(x, i, p) ((p)[i] = (x))
#define HSUM(x) (x)
#elif VEC == 2
typedef float2 vfloat;
#define VLOAD(i, p) vload2((i), (p))
#define VSTORE(x, i, p) vstore2((x), (i), (p))
#define HSUM(x) ((x).s0 + (x).s1)
#elif VEC == 4
typedef float4 vfloat;
#define VLOAD(i, p) vload4((i), (p))
#define VSTORE(x, i, p) vstore4((x), (i), (p))
#define HSUM(x) (((x).s0 + (x).s1) + ((x).s2 + (x).s3))
#elif VEC == 8
typedef float8 vfloat;
#define VLOAD(i, p) vload8((i), (p))
#define VSTORE(x, i, p) vstore8((x), (i), (p))
#define HSUM(x) ((((x).s0 + (x).s1) + ((x).s2 + (x).s3)) + (((x).s4 + (x).s5) + ((x).s6 + (x).s7)))
#elif VEC == 16
typedef float16 vfloat;
#define VLOAD(i, p) vload16((i), (p))
#define VSTORE(x, i, p) vstore16((x), (i), (p))
#define HSUM8(x) ((((x).s0 + (x).s1) + ((x).s2 + (x).s3)) + (((x).s4 + (x).s5) + ((x).s6 + (x).s7)))
#define HSUM(x) (HSUM8((x).lo) + HSUM8((x).hi))
#else
#error "VEC must be 1, 2, 4, 8 or 16"
#endif

#if WG > 1

/*
 * Half of one pass of y = W v over rows [p, p + WG) of R rows (row stride ld, K columns, the
 * first at W): work-item (grp, lane) accumulates rows p + i * NG + grp for i < LANES over the
 * column pieces lane, lane + LANES, ... and leaves its partial sums in rb. Rows past R are
 * clamped to R - 1 (read, then ignored) so every work-item runs the same loop. After a barrier,
 * mv_reduce gives row p + lid's sum.
 */
void mv_partial(const __global float *W, int ld, int p, int R, int K, __local const float *v,
                __local float *rb, int lid)
{
    const int lane = lid % LANES, grp = lid / LANES;
    int row[LANES];
    vfloat acc[LANES];
    float tail[LANES];
    for (int i = 0; i < LANES; i++) {
        row[i] = min(p + i * NG + grp, R - 1) * ld;
        acc[i] = (vfloat)(0.0f);
        tail[i] = 0.0f;
    }
    const int KV = K / VEC;
    for (int c0 = 0; c0 < KV; c0 += LANES) {
        const int c = c0 + lane;
        if (c < KV) {
            const vfloat vc = VLOAD(c, v);
            for (int i = 0; i < LANES; i++)
                acc[i] = fma(VLOAD(c, W + row[i]), vc, acc[i]);
        }
    }
    for (int c0 = KV * VEC; c0 < K; c0 += LANES) {
        const int c = c0 + lane;
        if (c < K) {
            const float vc = v[c];
            for (int i = 0; i < LANES; i++)
                tail[i] = fma(W[row[i] + c], vc, tail[i]);
        }
    }
    for (int i = 0; i < LANES; i++)
        rb[(i * NG + grp) * RSTRIDE + lane] = HSUM(acc[i]) + tail[i];
}

float mv_reduce(__local const float *rb, int lid)
{
    float s = 0.0f;
    for (int l = 0; l < LANES; l++)
        s += rb[lid * RSTRIDE + l];
    return s;
}

/* Where each phase of step t starts in its list of tasks (t = -1: the prologue), and `end`. */
typedef struct ro_sched {
    int cf, load, dense, hid, drain1, rh, n, drain2, gates, logits, drain3;
    int red1a, red1b, red2a, red2b, fin1, fin2, end;
} ro_sched;

ro_sched ro_schedule(int t, int mode, int lbr, int G, int H, int S, int n_rows)
{
    const int pro = t < 0, step = !pro, dense = mode == MODE_MEAN || t == 0;
    const int lbr0 = step && !lbr;
    ro_sched s;
    s.cf = pro;                                  /* task 0 of the prologue loads f and h0 */
    s.load = s.cf + (pro ? (G + WG - 1) / WG : 0); /* cf passes: tasks [cf, load) */
    s.dense = s.load + pro;
    s.hid = s.dense + (step && dense ? (G + WG - 1) / WG : 0);
    s.drain1 = s.hid + (step ? (n_rows + WG - 1) / WG : 0);
    s.rh = s.drain1 + step;
    s.n = s.rh + lbr0; /* W_hn (r (.) h) passes, linear_before_reset = 0 only */
    s.drain2 = s.n + (lbr0 ? (H + WG - 1) / WG : 0);
    s.gates = s.drain2 + lbr0;
    s.logits = s.gates + step;
    s.drain3 = s.logits + (step ? (S + WG - 1) / WG : 0);
    s.red1a = s.drain3 + step;
    s.red1b = s.red1a + step;
    s.red2a = s.red1b + step;
    s.red2b = s.red2a + step;
    s.fin1 = s.red2b + step;
    s.fin2 = s.fin1 + step;
    s.end = s.fin2 + step;
    return s;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_rollout(RO_PARAMS, RO_SCRATCH, __local float *lm)
{
    const int lid = get_local_id(0), traj = get_group_id(0);
    const int e = traj / B, b = traj % B;
    const int G = 3 * H;

    /* Local memory, carved as gru_rollout_local_bytes() in gru-rollout.c sizes it. */
    __local float *hbuf = lm;       /* [H] h_{t-1}, updated in place to h_t */
    __local float *rh = hbuf + H;   /* [H] r (.) h_{t-1}, for linear_before_reset = 0 */
    __local float *lg = rh + H;     /* [S] logits, then exp(logit - max) */
    __local float *vin = lg + S;    /* [max(F, 1 + S)] f, then x's dynamic part [y; z] */
    __local float *red = vin + max(F, 1 + S); /* [2 RED] partial sums */
    __local float blk[4 * NB];
    __local int kcat;

    RO_MEMBER(e);
    /* Global scratch, 10H floats per trajectory; read back by the work-group that wrote it (after
     * a barrier with a global fence), so mostly from cache. Keeping the gate sums here rather
     * than in local memory leaves room for wider partial-sum buffers at H = 1024. */
    __global float *cf = scratch + traj * 10 * H; /* [3H] W_ih[:, :F] f + b_ih, fixed over t */
    __global float *gd = cf + G;  /* [3H] cf + W_ih[:, F:] [y; z] when dense */
    __global float *g = gd + G;   /* [3H] r and z pre-activations, then W_hn (.) + b_hn */
    __global float *gin = g + G;  /* [H] the input side of n: W_in x + b_in */

    /* This work-item's chunk of the categories, for the softmax and the draw. */
    const int C = (S + WG - 1) / WG;
    const int c0 = min(S, lid * C), c1 = min(S, c0 + C);
    const int n_rows = lbr ? G : 2 * H; /* hidden rows of the first pass */
    int k = 0;                            /* z_{t-1}'s category when one-hot */
    float hn2 = 0.0f, yh = 0.0f, M = 0.0f, HN = 0.0f, YH = 0.0f, yt = 0.0f;
    int A = 0;
    float yprev = y0[kp_at1(y0v, b)];

    /* The whole rollout is one loop of tasks, each ended by the one barrier at its bottom: step
     * t = -1 is the prologue (f and h0 into local memory, cf, then [y0; z0] into vin once f is
     * no longer read), then steps 0..T-1. One loop with one barrier site is what PoCL compiles
     * quickly (a barrier per phase, or nested loops of barriers, took minutes on PoCL 3.1). A pass
     * task writes partial sums into buffer task & 1; the next task first reduces them and
     * stores its row (the "epilogue"). */
    const ro_sched sp = ro_schedule(-1, mode, lbr, G, H, S, n_rows);
    const ro_sched s0 = ro_schedule(0, mode, lbr, G, H, S, n_rows);
    const ro_sched s1 = ro_schedule(1, mode, lbr, G, H, S, n_rows);
    const int n_tasks = sp.end + s0.end + (T - 1) * s1.end;
    /* The tasks below are independent ifs, not an else-if chain, and no loop in them has a
     * trip count that depends on the work-item (the work-item is masked inside instead): an
     * else-if chain of arms holding loops, inside this loop, made PoCL 5 assert
     * ("region_entry_barrier != NULL", the shape of pocl/pocl#2281). The do-while (n_tasks >= 3)
     * keeps a loop guard from following a barrier. */
    int pend = 0, pend_p = 0, task = 0;
    do {
        /* Step t and task it within it, from the task number alone: no state carried past the
         * barrier but the pending epilogue (keeping t and it as counters made PoCL save them
         * per work-item at every barrier, 5x slower). Steps 1.. all have s1's schedule. */
        const int q = task - sp.end - s0.end;
        const int t = task < sp.end ? -1 : q < 0 ? 0 : 1 + q / s1.end;
        const int it = task < sp.end ? task : q < 0 ? task - sp.end : q % s1.end;
        const ro_sched sc = t < 0 ? sp : t == 0 ? s0 : s1;
        const int dense = mode == MODE_MEAN || t == 0; /* z_{t-1} is not one-hot */
        __local float *rb = red + (task & 1) * RED;
        if (pend) {
            const float s = mv_reduce(red + ((task - 1) & 1) * RED, lid);
            const int j = pend_p + lid;
            if (pend == 5 && j < G) {
                cf[j] = s + (has_bih ? Bih[j * bih_r] : 0.0f);
            } else if (pend == 1 && j < G) {
                gd[j] = cf[j] + s;
            } else if ((pend == 2 && j < n_rows) || (pend == 3 && j < 3 * H)) {
                const __global float *wj = Wih + j * wih_r + F;
                const float x = dense ? gd[j] : cf[j] + wj[0] * yprev + (S ? wj[1 + k] : 0.0f);
                const float sh = s + (has_bhh ? Bhh[j * bhh_r] : 0.0f);
                if (j < 2 * H) {
                    g[j] = sh + x;
                } else {
                    g[j] = sh;
                    gin[j - 2 * H] = x;
                }
            } else if (pend == 4 && j < S) {
                lg[j] = s + Bp[j * bp_r];
            }
            pend = 0;
        }
        if (it < sc.cf) {
            const __global float *fp = f + kp_at3(fv, e, b, 0);
            for (int i = lid; i - lid < F; i += WG)
                if (i < F)
                    vin[i] = fp[i * kp_stride(fv, 2)];
            for (int i = lid; i - lid < H; i += WG)
                if (i < H)
                    hbuf[i] = h0[kp_at3(h0v, e, b, i)];
        }
        if (it >= sc.cf && it < sc.load) {
            pend_p = (it - sc.cf) * WG;
            mv_partial(Wih, wih_r, pend_p, G, F, vin, rb, lid);
            pend = 5;
        }
        if (it >= sc.load && it < sc.dense) {
            /* The cf passes are done with f: vin now takes [y0; z0]. */
            if (lid == 0)
                vin[0] = yprev;
            for (int i = lid; i - lid < S; i += WG)
                if (i < S)
                    vin[1 + i] = z0[kp_at3(z0v, e, b, i)];
        }
        if (it >= sc.dense && it < sc.hid) {
            pend_p = (it - sc.dense) * WG;
            mv_partial(Wih + F, wih_r, pend_p, G, 1 + S, vin, rb, lid);
            pend = 1;
        }
        if (it >= sc.hid && it < sc.drain1) {
            pend_p = (it - sc.hid) * WG;
            mv_partial(Whh, whh_r, pend_p, n_rows, H, hbuf, rb, lid);
            pend = 2;
        }
        if (it >= sc.rh && it < sc.n) {
            for (int u = lid; u - lid < H; u += WG)
                if (u < H)
                    rh[u] = ro_sigmoid(g[u]) * hbuf[u];
        }
        if (it >= sc.n && it < sc.drain2) {
            /* Rows 2H.. of W_hh times r (.) h; the epilogue stores them as rows 2H + u. */
            const int q = (it - sc.n) * WG;
            mv_partial(Whh + 2 * H * whh_r, whh_r, q, H, H, rh, rb, lid);
            pend_p = 2 * H + q;
            pend = 3;
        }
        if (it >= sc.gates && it < sc.logits) {
            /* Gates and h_t, in place: each unit reads only its own h_{t-1}. */
            hn2 = 0.0f;
            yh = 0.0f;
            for (int u = lid; u - lid < H; u += WG) {
                if (u < H) {
                    const float r = ro_sigmoid(g[u]), z = ro_sigmoid(g[H + u]);
                    const float n = tanh(gin[u] + (lbr ? r * g[2 * H + u] : g[2 * H + u]));
                    const float h = fma(z, hbuf[u] - n, n); /* (1 - z) n + z h */
                    hbuf[u] = h;
                    hn2 = fma(h, h, hn2);
                    yh = fma(Wy[u * wy_r], h, yh);
                }
            }
        }
        if (it >= sc.logits && it < sc.drain3) {
            pend_p = (it - sc.logits) * WG;
            mv_partial(Wp, wp_r, pend_p, S, H, hbuf, rb, lid);
            pend = 4;
        }
        if (it >= sc.red1a && it < sc.red1b) {
            /* Reduction 1: max and argmax of the logits, |h|^2, w_y[:H] . h. P overlays
             * the partial-sum buffers, whose last reads ended at the previous barrier. */
            float m = -INFINITY;
            int am = S;
            for (int s = c0; s < c0 + C; s++)
                if (s < c1)
                    max_combine(&m, &am, lg[s], s);
            red[lid] = m;
            red[WG + lid] = as_float(am);
            red[2 * WG + lid] = hn2;
            red[3 * WG + lid] = yh;
        }
        if (it >= sc.red1b && it < sc.red2a) {
            /* Blocks of BS partial results; work-items NB.. repeat the last block and
             * discard it, so no loop sits under a branch. */
            const int i0 = min(lid, NB - 1) * BS;
            float bm = -INFINITY, bh = 0.0f, byh = 0.0f;
            int ba = S;
            for (int i = i0; i < i0 + BS; i++) {
                max_combine(&bm, &ba, red[i], as_int(red[WG + i]));
                bh += red[2 * WG + i];
                byh += red[3 * WG + i];
            }
            if (lid < NB) {
                blk[lid] = bm;
                blk[NB + lid] = as_float(ba);
                blk[2 * NB + lid] = bh;
                blk[3 * NB + lid] = byh;
            }
        }
        if (it >= sc.red2a && it < sc.red2b) {
            M = -INFINITY;
            A = S;
            HN = 0.0f;
            YH = 0.0f;
            for (int i = 0; i < NB; i++) {
                max_combine(&M, &A, blk[i], as_int(blk[NB + i]));
                HN += blk[2 * NB + i];
                YH += blk[3 * NB + i];
            }
            A = clamp(A, 0, max(S - 1, 0)); /* NaN logits leave no maximum */
            /* Reduction 2: exp(l - M) (to be scanned into the CDF), exp(l - M) (l - M)
             * for the entropy, w_y[H + s] exp(l - M) for the mean state's loss term. */
            float pe = 0.0f, pl = 0.0f, pw = 0.0f;
            for (int s = c0; s < c0 + C; s++) {
                if (s < c1) {
                    const float d = lg[s] - M, x = exp(d);
                    lg[s] = x;
                    pe += x;
                    pl = fma(x, d, pl);
                    pw = fma(Wy[(H + s) * wy_r], x, pw);
                }
            }
            red[lid] = pe;
            red[WG + lid] = pl;
            red[2 * WG + lid] = pw;
        }
        if (it >= sc.red2b && it < sc.fin1) {
            const int i0 = min(lid, NB - 1) * BS;
            float run = 0.0f, bl = 0.0f, bw = 0.0f;
            for (int i = i0; i < i0 + BS; i++) {
                /* Work-items past NB read the next buffer, which no one writes here, so the
                 * block they repeat is not read while it is scanned in place. */
                run += red[(lid < NB ? 0 : WG) + i];
                if (lid < NB)
                    red[i] = run; /* the inclusive scan within the block */
                bl += red[WG + i];
                bw += red[2 * WG + i];
            }
            if (lid < NB) {
                blk[lid] = run;
                blk[NB + lid] = bl;
                blk[2 * NB + lid] = bw;
            }
        }
        if (it >= sc.fin1 && it < sc.fin2) {
            /* One left-to-right chain over the blocks: every work-item gets the same
             * total, and its block's offset is the chain's value there, so the intervals
             * [excl, incl) of consecutive work-items tile [0, total) exactly. */
            const int mb = lid / BS;
            float acc = 0.0f, off = 0.0f, TL = 0.0f, TW = 0.0f;
            for (int i = 0; i < NB; i++) {
                if (i == mb)
                    off = acc;
                acc += blk[i];
                TL += blk[NB + i];
                TW += blk[2 * NB + i];
            }
            const float total = acc;
            float entropy = 0.0f;
            yt = YH + by;
            if (S) {
                entropy = log(total) - TL / total;
                if (mode == MODE_MEAN) {
                    yt += TW / total;
                    for (int s = c0; s < c0 + C; s++)
                        if (s < c1)
                            vin[1 + s] = lg[s] / total;
                } else if (mode == MODE_SAMPLE) {
                    const float target = ro_uniform(seed_lo, seed_hi, e, b, t) * total;
                    const float excl = off + (lid % BS ? red[lid - 1] : 0.0f);
                    const float incl = off + red[lid];
                    /* The work-item whose interval holds the target picks the first category
                     * whose CDF passes it; rounding inside the chunk can leave none, then the
                     * chunk's last likely one. Every work-item runs the loop (no loop under a
                     * branch); only the claimant writes. */
                    const int claim = excl <= target && target < incl;
                    int pick = -1, last = c0;
                    float cdf = excl;
                    for (int s = c0; s < c0 + C; s++) {
                        if (s < c1) {
                            cdf += lg[s];
                            if (lg[s] > 0.0f)
                                last = s;
                            if (pick < 0 && cdf > target)
                                pick = s;
                        }
                    }
                    if (claim) {
                        kcat = pick >= 0 ? pick : last;
                    } else if (lid == 0 && !(target < total)) {
                        kcat = A; /* u * total rounded up to total: no interval holds it */
                    }
                } else if (lid == 0) {
                    kcat = A;
                }
            }
            if (lid == 0) {
                if (has_ent)
                    ent[kp_at3(entv, e, b, t)] = entropy;
                if (has_hn)
                    hnorm[kp_at3(hnv, e, b, t)] = sqrt(HN);
            }
        }
        if (it >= sc.fin2) {
            if (S && mode != MODE_MEAN) {
                k = clamp(kcat, 0, S - 1);
                yt += Wy[(H + k) * wy_r];
            }
            yprev = yt;
            if (lid == 0) {
                y[kp_at3(yv, e, b, t)] = yt;
                vin[0] = yt; /* read by the next step's dense pass */
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    } while (++task < n_tasks);
    for (int i = lid; i - lid < H; i += WG)
        if (i < H)
            h_T[kp_at3(hTv, e, b, i)] = hbuf[i];
}

#else

/*
 * WG 1: gru_rollout as one work-item per trajectory (CPUs), under the same name. The steps
 * are plain loops with no barrier: PoCL runs a work-group as a loop over its work-items between
 * barriers, and the work-group kernel's ~45 barrier regions a step, each paid per work-item,
 * cost more than its arithmetic there. A weight row is read VEC floats at a time into four
 * independent sums, the way a CPU BLAS reads it. Same semantics and the same f32 arithmetic as
 * the work-group body (in another order of summation); the vectors live in the trajectory's
 * global scratch (9H + S + max(F, 1 + S) floats), which stays in cache.
 */

/* w[0, K) . v[0, K). */
float row_dot(const __global float *w, const __global float *v, const int K)
{
    vfloat s0 = (vfloat)(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int c = 0;
    for (; c + 4 * VEC <= K; c += 4 * VEC) {
        s0 = fma(VLOAD(0, w + c), VLOAD(0, v + c), s0);
        s1 = fma(VLOAD(0, w + c + VEC), VLOAD(0, v + c + VEC), s1);
        s2 = fma(VLOAD(0, w + c + 2 * VEC), VLOAD(0, v + c + 2 * VEC), s2);
        s3 = fma(VLOAD(0, w + c + 3 * VEC), VLOAD(0, v + c + 3 * VEC), s3);
    }
    for (; c + VEC <= K; c += VEC)
        s0 = fma(VLOAD(0, w + c), VLOAD(0, v + c), s0);
    float s = HSUM((s0 + s1) + (s2 + s3));
    for (; c < K; c++)
        s = fma(w[c], v[c], s);
    return s;
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gru_rollout(RO_PARAMS, RO_SCRATCH)
{
    const int traj = get_group_id(0), e = traj / B, b = traj % B;
    const int G = 3 * H, V = max(F, 1 + S);
    RO_MEMBER(e);
    __global float *h = scratch + traj * (9 * H + S + V); /* [H] h_{t-1}, then h_t */
    __global float *cf = h + H;   /* [3H] W_ih[:, :F] f + b_ih, fixed over t */
    __global float *g = cf + G;   /* [3H] r and z pre-activations, then W_hn (.) + b_hn */
    __global float *gin = g + G;  /* [H] the input side of n */
    __global float *rh = gin + H; /* [H] r (.) h_{t-1}, for linear_before_reset = 0 */
    __global float *lg = rh + H;  /* [S] logits, then exp(logit - max) */
    __global float *vin = lg + S; /* [V] f, then x's dynamic part [y; z] */

    const __global float *fp = f + kp_at3(fv, e, b, 0);
    for (int i = 0; i < F; i++)
        vin[i] = fp[i * kp_stride(fv, 2)];
    for (int u = 0; u < H; u++)
        h[u] = h0[kp_at3(h0v, e, b, u)];
    for (int j = 0; j < G; j++)
        cf[j] = row_dot(Wih + j * wih_r, vin, F) + (has_bih ? Bih[j * bih_r] : 0.0f);
    float yprev = y0[kp_at1(y0v, b)];
    vin[0] = yprev;
    for (int s = 0; s < S; s++)
        vin[1 + s] = z0[kp_at3(z0v, e, b, s)];

    int k = 0; /* z_{t-1}'s category when one-hot */
    for (int t = 0; t < T; t++) {
        const int dense = mode == MODE_MEAN || t == 0; /* z_{t-1} is not one-hot */
        for (int j = 0; j < G; j++) {
            const __global float *wj = Wih + j * wih_r + F;
            const float x =
                cf[j] + (dense ? row_dot(wj, vin, 1 + S) : wj[0] * yprev + (S ? wj[1 + k] : 0.0f));
            const float bh = has_bhh ? Bhh[j * bhh_r] : 0.0f;
            /* Rows 2H.. multiply r (.) h when linear_before_reset = 0: below. */
            const float sh = lbr || j < 2 * H ? row_dot(Whh + j * whh_r, h, H) + bh : bh;
            if (j < 2 * H) {
                g[j] = sh + x;
            } else {
                g[j] = sh;
                gin[j - 2 * H] = x;
            }
        }
        if (!lbr) {
            for (int u = 0; u < H; u++)
                rh[u] = ro_sigmoid(g[u]) * h[u];
            for (int u = 0; u < H; u++)
                g[2 * H + u] += row_dot(Whh + (2 * H + u) * whh_r, rh, H);
        }
        /* Gates and h_t, in place (each unit reads only its own h_{t-1}), VEC units at a time:
         * the vector exp and tanh, where the scalar ones took a third of the time on PoCL. */
        vfloat hv2 = (vfloat)(0.0f);
        int u = 0;
        for (; u + VEC <= H; u += VEC) {
            const vfloat r = 1.0f / (1.0f + exp(-VLOAD(0, g + u)));
            const vfloat z = 1.0f / (1.0f + exp(-VLOAD(0, g + H + u)));
            const vfloat gn = VLOAD(0, g + 2 * H + u);
            const vfloat n = tanh(VLOAD(0, gin + u) + (lbr ? r * gn : gn));
            const vfloat hu = fma(z, VLOAD(0, h + u) - n, n); /* (1 - z) n + z h */
            VSTORE(hu, 0, h + u);
            hv2 = fma(hu, hu, hv2);
        }
        float hn2 = HSUM(hv2), entropy = 0.0f;
        for (; u < H; u++) {
            const float r = ro_sigmoid(g[u]), z = ro_sigmoid(g[H + u]);
            const float n = tanh(gin[u] + (lbr ? r * g[2 * H + u] : g[2 * H + u]));
            const float hu = fma(z, h[u] - n, n);
            h[u] = hu;
            hn2 = fma(hu, hu, hn2);
        }
        float yt = by;
        if (wy_r == 1) {
            yt += row_dot(Wy, h, H);
        } else {
            for (int i = 0; i < H; i++)
                yt = fma(Wy[i * wy_r], h[i], yt);
        }
        if (S) {
            float M = -INFINITY;
            int A = S;
            for (int s = 0; s < S; s++) {
                lg[s] = row_dot(Wp + s * wp_r, h, H) + Bp[s * bp_r];
                max_combine(&M, &A, lg[s], s);
            }
            A = clamp(A, 0, S - 1); /* NaN logits leave no maximum */
            vfloat vt = (vfloat)(0.0f), vl = vt;
            int s = 0;
            for (; s + VEC <= S; s += VEC) {
                const vfloat d = VLOAD(0, lg + s) - M, x = exp(d);
                VSTORE(x, 0, lg + s);
                vt += x;
                vl = fma(x, d, vl);
            }
            float total = HSUM(vt), tl = HSUM(vl);
            for (; s < S; s++) {
                const float d = lg[s] - M, x = exp(d);
                lg[s] = x;
                total += x;
                tl = fma(x, d, tl);
            }
            entropy = log(total) - tl / total;
            if (mode == MODE_MEAN) {
                float tw = 0.0f;
                if (wy_r == 1) {
                    tw = row_dot(Wy + H, lg, S);
                } else {
                    for (int i = 0; i < S; i++)
                        tw = fma(Wy[(H + i) * wy_r], lg[i], tw);
                }
                yt += tw / total;
                for (int s = 0; s < S; s++)
                    vin[1 + s] = lg[s] / total;
            } else {
                k = A;
                const float target =
                    mode == MODE_SAMPLE ? ro_uniform(seed_lo, seed_hi, e, b, t) * total
                                          : total;
                /* The first category whose CDF passes the target; rounding can leave none, then
                 * the last likely one; a target rounded up to the total keeps the argmax. */
                if (target < total) {
                    float cdf = 0.0f;
                    int last = 0;
                    k = -1;
                    for (int s = 0; s < S && k < 0; s++) {
                        cdf += lg[s];
                        if (cdf > target)
                            k = s;
                        else if (lg[s] > 0.0f)
                            last = s;
                    }
                    k = k >= 0 ? k : last;
                }
                yt += Wy[(H + k) * wy_r];
            }
        }
        if (has_ent)
            ent[kp_at3(entv, e, b, t)] = entropy;
        if (has_hn)
            hnorm[kp_at3(hnv, e, b, t)] = sqrt(hn2);
        y[kp_at3(yv, e, b, t)] = yt;
        yprev = yt;
        vin[0] = yt; /* the next step's dense pass reads it */
    }
    for (int u = 0; u < H; u++)
        h_T[kp_at3(hTv, e, b, u)] = h[u];
}

#endif

#else

/*
 * gru_rollout_grid: G work-groups per (member, trajectory), for GPUs, where one work-group per
 * trajectory leaves most compute units idle and streams every weight through one of them.
 * - Work-group g of a trajectory owns hidden units [g UH, (g + 1) UH) (the r, z and n rows of
 *   each) and prior rows [g US, (g + 1) US). It computes them, publishes them in the
 *   trajectory's global state, and reads back the whole vector the trajectory's other
 *   work-groups publish. A step exchanges h_t (with each group's partial sums), the logits
 *   (S > 0) and r (.) h_{t-1} (linear_before_reset = 0).
 * - Each published value shares one 64-bit word with the number of its step, so a reader polls
 *   the word itself until that number appears: no barrier counter, no fences, one trip through
 *   the device's memory per exchange. The reset kernel zeroes the words before each launch.
 * - The words are written and polled by several work-items at once, so every access to them is
 *   an atomic load or store of device scope (RO_SYNC below); relaxed order is enough, since no
 *   reader infers one word's content from another's: each word carries its own step.
 * - Every work-group then computes the softmax, the draw, y_t and the norms from the published
 *   logits and partial sums, with the same operations in the same order, so all of them hold
 *   the same z_t and y_t without another exchange.
 * - A reader waits on writers, so all of a trajectory's work-groups must be resident at once;
 *   the host keeps E B G within the device's compute units. Were one never scheduled, a reader
 *   gives up after SPIN_LIMIT polls and marks the trajectory, whose y then comes out NaN: a
 *   wrong answer that shows, rather than a launch that never ends.
 */

#ifndef WG
#define WG 256
#endif
#ifndef LANES
#define LANES 8
#endif
#define GNG (WG / LANES)      /* rows of one pass of dot products */
#define CW 32                 /* work-items sharing the categories (WG >= 64): short trees */
#define SPIN_LIMIT (1u << 22) /* polls of one word before giving up: seconds on a GPU */

/*
 * Relaxed atomic loads and stores of device scope on the exchanged words, in what the device
 * offers (the host picks RO_SYNC):
 * 1 NVIDIA's driver, which compiles OpenCL C 1.2 and offers atomics of work-group scope alone:
 *   PTX's relaxed loads and stores of GPU scope (sm_70 and later), which the plain volatile
 *   accesses they replace compiled to in all but name, so they cost nothing;
 * 2 OpenCL C 2.0 and later (the host compiles with -cl-std=CL2.0 or CL3.0): C11-style atomics,
 *   where the device has 64-bit atomics and, in 3.0, device scope;
 * 0 OpenCL C 1.2 elsewhere (or 2 without those): the cl_khr_int64_base_atomics functions, whose
 *   loads are read-modify-writes (atom_cmpxchg with equal operands), dearer, but the only atomic
 *   load 1.2 has.
 */
#ifndef RO_SYNC
#define RO_SYNC 0
#endif
#if RO_SYNC == 1
ulong word_load(volatile __global const ulong *w)
{
    ulong x;
    __asm__ volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(x) : "l"((ulong)w) : "memory");
    return x;
}
void word_store(volatile __global ulong *w, ulong x)
{
    __asm__ volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"((ulong)w), "l"(x) : "memory");
}
uint flag_load(volatile __global const uint *w)
{
    uint x;
    __asm__ volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(x) : "l"((ulong)w) : "memory");
    return x;
}
void flag_store(volatile __global uint *w, uint x)
{
    __asm__ volatile("st.relaxed.gpu.global.u32 [%0], %1;" : : "l"((ulong)w), "r"(x) : "memory");
}
#elif RO_SYNC == 2 && __OPENCL_C_VERSION__ >= 200 && defined(cl_khr_int64_extended_atomics) &&     \
    (__OPENCL_C_VERSION__ < 300 || defined(__opencl_c_atomic_scope_device))
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
ulong word_load(volatile __global const ulong *w)
{
    return atomic_load_explicit((volatile __global atomic_ulong *)w, memory_order_relaxed,
                                memory_scope_device);
}
void word_store(volatile __global ulong *w, ulong x)
{
    atomic_store_explicit((volatile __global atomic_ulong *)w, x, memory_order_relaxed,
                          memory_scope_device);
}
uint flag_load(volatile __global const uint *w)
{
    return atomic_load_explicit((volatile __global atomic_uint *)w, memory_order_relaxed,
                                memory_scope_device);
}
void flag_store(volatile __global uint *w, uint x)
{
    atomic_store_explicit((volatile __global atomic_uint *)w, x, memory_order_relaxed,
                          memory_scope_device);
}
#else
#ifndef cl_khr_int64_base_atomics
#error "gru_rollout_grid exchanges 64-bit words atomically: it needs cl_khr_int64_base_atomics"
#endif
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
ulong word_load(volatile __global const ulong *w)
{
    return atom_cmpxchg((volatile __global ulong *)w, 0, 0);
}
void word_store(volatile __global ulong *w, ulong x)
{
    atom_xchg(w, x);
}
uint flag_load(volatile __global const uint *w)
{
    return atomic_cmpxchg((volatile __global uint *)w, 0, 0);
}
void flag_store(volatile __global uint *w, uint x)
{
    atomic_xchg(w, x);
}
#endif

/* Publishes v as step `tag`'s value of word w: value and tag in one 64-bit store, which a
 * reader sees whole or not at all. */
void put(volatile __global ulong *w, float v, uint tag)
{
    word_store(w, (ulong)tag << 32 | as_uint(v));
}

/* Step `tag`'s value of word w, polled until its writer has published it (or the trajectory has
 * given up waiting: then whatever the word holds). */
float take(volatile __global const ulong *w, uint tag, volatile __global uint *gave_up)
{
    ulong x = word_load(w);
    for (uint spins = 0; (uint)(x >> 32) != tag && !flag_load(gave_up); spins++) {
        if (spins == SPIN_LIMIT)
            flag_store(gave_up, 1);
        x = word_load(w);
    }
    return as_float((uint)x);
}

/* Announces, once every work-item's puts before it are done, that this group's share of an
 * exchange is out. Every work-item calls it. */
void announce(volatile __global ulong *w, uint tag, int lid)
{
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (lid == 0)
        put(w, 0.0f, tag);
}

/* Before reading an exchanged vector of n words: for n > WG, waits until all G groups have
 * announced step `tag` (G work-items poll, one word each). Work-items polling several words each
 * slowed the writers with their traffic (the H 1024 rollout on an H200: 4385 us, and 3085 us
 * with the wait); with one word each, polling the data at once is faster (the seed size: 353
 * us, against 373 us with the wait). Every work-item calls it. */
void await_groups(volatile __global const ulong *w, int G, int n, uint tag,
                  volatile __global uint *gave_up, int lid)
{
    if (n <= WG)
        return;
    for (int i = lid; i < G; i += WG)
        take(&w[i], tag, gave_up);
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* w[c] v[c] summed over c = lane, lane + LANES, ... < k. The weights are loaded eight at a time
 * before any is used: a load-then-use loop waits out the memory latency once per term (batching
 * took the H 1024 rollout on an H200 from 3746 us to 2858 us). */
float dot_lane(const __global float *w, int k, __local const float *v, int lane)
{
    float s = 0.0f;
    int c = lane;
    for (; c + 7 * LANES < k; c += 8 * LANES) {
        float x[8];
        for (int i = 0; i < 8; i++)
            x[i] = w[c + i * LANES];
        for (int i = 0; i < 8; i++)
            s = fma(x[i], v[c + i * LANES], s);
    }
    for (; c < k; c += LANES)
        s = fma(w[c], v[c], s);
    return s;
}

/* The same over weights the work-group keeps in local memory. */
float dot_lane_local(__local const float *w, int k, __local const float *v, int lane)
{
    float s = 0.0f;
    for (int c = lane; c < k; c += LANES)
        s = fma(w[c], v[c], s);
    return s;
}

#if defined(RO_PTX) && RO_PTX
/* Warp shuffles (NVIDIA, inline PTX; work-items 32 w .. 32 w + 31 are warp w, and all 32 call):
 * the softmax's reductions and scan inside warp 0, without local memory or barriers. `xor`
 * reads lane ^ x, `up` lane - x (its own value below x), `idx` lane x. */
#define SHFL(mode, c)                                                                              \
    int shfl_##mode(int v, int x)                                                                  \
    {                                                                                              \
        int r;                                                                                     \
        __asm__ volatile("shfl.sync." #mode ".b32 %0, %1, %2, " #c ", 0xffffffff;"                 \
                         : "=r"(r)                                                                 \
                         : "r"(v), "r"(x));                                                        \
        return r;                                                                                  \
    }
SHFL(bfly, 0x1f)
SHFL(up, 0x0)
SHFL(idx, 0x1f)
#define SHFL_F(mode, v, x) as_float(shfl_##mode(as_int(v), (x)))
#endif

/* The LANES lanes' sums s1 and s2 of each row of a pass meet in r1 and r2 ([WG] each): row i's
 * totals end at r1[i LANES] and r2[i LANES]. Every work-item calls it. With shuffles (a row's
 * lanes share a warp) the lanes add in registers, in the tree's order for lane 0, and one
 * barrier publishes the rows: the tree took four barriers at LANES 8. */
#if defined(RO_PTX) && RO_PTX && LANES <= 32
void lane_sums(float s1, float s2, __local float *r1, __local float *r2, int lid)
{
    for (int d = LANES / 2; d > 0; d /= 2) {
        s1 += SHFL_F(bfly, s1, d);
        s2 += SHFL_F(bfly, s2, d);
    }
    r1[lid] = s1;
    r2[lid] = s2;
    barrier(CLK_LOCAL_MEM_FENCE);
}
#else
void lane_sums(float s1, float s2, __local float *r1, __local float *r2, int lid)
{
    const int lane = lid % LANES;
    r1[lid] = s1;
    r2[lid] = s2;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = LANES / 2; d > 0; d /= 2) {
        if (lane < d) {
            r1[lid] += r1[lid + d];
            r2[lid] += r2[lid + d];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
#endif

/* The sums of r1[0, n) and r2[0, n) (filled by the caller before a barrier; n a power of two, the
 * same for the whole work-group), in r1[0] and r2[0] for work-item 0. A tree, or with shuffles
 * and n <= 32 warp 0 alone, adding in the tree's order for its lane 0, with no barrier. */
void tree_sums(__local float *r1, __local float *r2, int n, int lid)
{
#if defined(RO_PTX) && RO_PTX
    if (n <= 32) {
        if (lid < 32) {
            float a = lid < n ? r1[lid] : 0.0f, b = lid < n ? r2[lid] : 0.0f;
            for (int d = n / 2; d > 0; d /= 2) {
                a += SHFL_F(bfly, a, d);
                b += SHFL_F(bfly, b, d);
            }
            if (lid == 0) {
                r1[0] = a;
                r2[0] = b;
            }
        }
        return;
    }
#endif
    for (int d = n / 2; d > 0; d /= 2) {
        if (lid < d) {
            r1[lid] += r1[lid + d];
            r2[lid] += r2[lid + d];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Whether a step computes the next step's hidden sides while its logits are exchanged: in the
 * shuffle build, which NVIDIA's driver gets where the weight rows are cached (the seed size on an
 * H200: 289.2 -> 278.4 us). With the weights in global memory the H 1024 rollout ran in 5925 us
 * with it, against 3044 us without. */
#if defined(RO_PTX) && RO_PTX
#define LOOK_AHEAD 1
#else
#define LOOK_AHEAD 0
#endif

/* The hidden sides of a work-group's owned rows (3 nu of them, units u0 ..): gh = W_hh h + b_hh,
 * without the n rows' product when linear_before_reset = 0 (it needs r first). The weights come
 * from wa (cached, row stride HP) or from global memory. Every work-item calls it; it ends with a
 * barrier. */
void hidden_sides(const __global float *Whh, int whh_r, const __global float *Bhh, int bhh_r,
                  int has_bhh, __local const float *wa, int cache, int HP, int H, int u0, int nu,
                  int lbr, __local const float *hl, __local float *ra, __local float *rb,
                  __local float *gh, int lid)
{
    const int lane = lid % LANES;
    for (int p = 0; p < 3 * nu; p += GNG) {
        const int i = p + lid / LANES, gate = i / max(nu, 1);
        const int j = gate * H + u0 + i % max(nu, 1);
        const int kh = i < 3 * nu && (lbr || gate < 2) ? H : 0;
        const float sh = cache & 1 ? dot_lane_local(wa + min(i, 3 * nu - 1) * HP, kh, hl, lane)
                                   : dot_lane(Whh + j * whh_r, kh, hl, lane);
        lane_sums(sh, 0.0f, ra, rb, lid);
        if (lid < GNG && p + lid < 3 * nu) {
            const int ir = p + lid, jr = (ir / nu) * H + u0 + ir % nu;
            gh[ir] = ra[lid * LANES] + (has_bhh ? Bhh[jr * bhh_r] : 0.0f);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* A chunk's categories [c0, c1) of the softmax: lg[s] becomes x = exp(lg[s] - M), and the chunk's
 * sums of x, of x (lg[s] - M) (the entropy's) and of wz[s] x (the mean state's loss term; wz is
 * w_y's z part, stride wz_r) go to pe, pl and pw. */
void chunk_exps(__local float *lg, int c0, int c1, float M, const __global float *wz, int wz_r,
                float *pe, float *pl, float *pw)
{
    float e = 0.0f, l = 0.0f, w = 0.0f;
    for (int s = c0; s < c1; s++) {
        const float d = lg[s] - M, x = exp(d);
        lg[s] = x;
        e += x;
        l = fma(x, d, l);
        w = fma(wz[s * wz_r], x, w);
    }
    *pe = e;
    *pl = l;
    *pw = w;
}

/* The smallest power of two >= n (n <= WG). */
int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

__kernel void gru_rollout_grid_reset(__global ulong *state, int n_state, __global uint *gave_up,
                                     int n_traj)
{
    const int i = get_global_id(0);
    if (i < n_state)
        state[i] = 0;
    if (i < n_traj)
        gave_up[i] = 0;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void gru_rollout_grid(RO_PARAMS, const int G, const int cache, volatile __global ulong *state,
                      volatile __global uint *gave_ups, __local float *lm)
{
    const int lid = get_local_id(0), lane = lid % LANES;
    const int tr = get_group_id(0) / G, g = get_group_id(0) % G;
    const int e = tr / B, b = tr % B;
    const int UH = (H + G - 1) / G, u0 = min(H, g * UH), nu = min(H, u0 + UH) - u0;
    const int US = (S + G - 1) / G, q0 = min(S, g * US), nq = min(S, q0 + US) - q0;

    /* Local memory, carved as grid_local_bytes() in gru-rollout-grid.c sizes it. */
    __local float *hl = lm;                  /* [H] h_{t-1}, then h_t once published */
    __local float *rhl = hl + H;             /* [H] r (.) h_{t-1}, linear_before_reset = 0 */
    __local float *xin = rhl + H;            /* [max(F, 1 + S)] f, then [y_{t-1}; z_{t-1}] */
    __local float *lg = xin + max(F, 1 + S); /* [S] logits, then exp(logit - max) */
    __local float *cfl = lg + S;             /* [3 UH] W_ih[:, :F] f + b_ih of the owned rows */
    __local float *gx = cfl + 3 * UH;        /* [3 UH] input sides of the owned rows */
    __local float *gh = gx + 3 * UH;         /* [3 UH] hidden sides of the owned rows */
    __local float *parts = gh + 3 * UH;      /* [2 G] the groups' partial sums */
    /* [4 WG] reductions and scans, or [2 WG] where the softmax runs on shuffles (the room w_p's
     * rows need at the seed size). Then, with cache bit 1, the owned rows of W_hh (wa: [3 UH]
     * rows), with bit 2 those of w_p (wb: [US] rows), copied once at a row stride HP of H padded
     * to LANES more than a multiple of 32: the 32 / LANES rows a warp reads at once then start
     * LANES banks apart, and its LANES-wide runs fill the 32 banks once. */
#if defined(RO_PTX) && RO_PTX
    __local float *ra = parts + 2 * G, *rb = ra + WG, *wa = rb + WG;
#else
    __local float *ra = parts + 2 * G, *rb = ra + WG, *rc = rb + WG, *rd = rc + WG, *wa = rd + WG;
#endif
    const int HP = H + (LANES % 32 - H % 32 + 32) % 32;
    __local float *wb = wa + (cache & 1 ? 3 * UH * HP : 0);
    __local int kcat;
    __local float mean_y;

    RO_MEMBER(e);

    /* The trajectory's published words: h_t in two buffers by the parity of t (with S = 0 a
     * work-group may publish h_{t+1} while a slower one still reads h_t), r (.) h, the logits,
     * each group's (|h|^2, w_y[:H] . h) partial sums, also by parity, and each group's
     * announcements that its r (.) h and its logits are out. A step's words carry the tag t + 1. */
    volatile __global ulong *st = state + tr * (3 * H + S + 6 * G);
    volatile __global ulong *rhs = st + 2 * H, *lgs = st + 3 * H, *part = lgs + S;
    volatile __global ulong *rdy_r = part + 4 * G, *rdy_l = rdy_r + G;
    volatile __global uint *gave_up = gave_ups + tr;

    /* Prologue: f and h0 into local memory, then the owned rows' W_ih[:, :F] f + b_ih. */
    const __global float *fp = f + kp_at3(fv, e, b, 0);
    for (int i = lid; i < F; i += WG)
        xin[i] = fp[i * kp_stride(fv, 2)];
    for (int i = lid; i < H; i += WG)
        hl[i] = h0[kp_at3(h0v, e, b, i)];
    if (cache & 1)
        for (int x = lid; x < 3 * nu * H; x += WG) {
            const int i = x / H, c = x % H;
            wa[i * HP + c] = Whh[((i / nu) * H + u0 + i % nu) * whh_r + c];
        }
    if (cache & 2)
        for (int x = lid; x < nq * H; x += WG)
            wb[(x / H) * HP + x % H] = Wp[(q0 + x / H) * wp_r + x % H];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = 0; p < 3 * nu; p += GNG) {
        const int i = p + lid / LANES, j = (i / max(nu, 1)) * H + u0 + i % max(nu, 1);
        lane_sums(dot_lane(Wih + j * wih_r, i < 3 * nu ? F : 0, xin, lane), 0.0f, ra, rb, lid);
        if (lid < GNG && p + lid < 3 * nu) {
            const int jr = ((p + lid) / nu) * H + u0 + (p + lid) % nu;
            cfl[p + lid] = ra[lid * LANES] + (has_bih ? Bih[jr * bih_r] : 0.0f);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    /* f is no longer read: xin takes [y0; z0]. */
    float yprev = y0[kp_at1(y0v, b)];
    int k = 0;
    if (lid == 0)
        xin[0] = yprev;
    for (int i = lid; i < S; i += WG)
        xin[1 + i] = z0[kp_at3(z0v, e, b, i)];
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int t = 0; t < T; t++) {
        const int dense = mode == MODE_MEAN || t == 0; /* z_{t-1} is not one-hot */
        const uint tag = t + 1;
        volatile __global ulong *hs = st + (t & 1) * H;
        volatile __global ulong *pt = part + (t & 1) * 2 * G;

        /* The owned rows' hidden sides, unless the previous step computed them while its logits
         * were exchanged (LOOK_AHEAD, S > 0); then their input sides: when dense W_ih[:, F:]
         * [y; z], else the two columns of the one-hot input. */
        if (!LOOK_AHEAD || t == 0 || !S)
            hidden_sides(Whh, whh_r, Bhh, bhh_r, has_bhh, wa, cache, HP, H, u0, nu, lbr, hl, ra,
                         rb, gh, lid);
        if (dense) {
            for (int p = 0; p < 3 * nu; p += GNG) {
                const int i = p + lid / LANES, j = (i / max(nu, 1)) * H + u0 + i % max(nu, 1);
                const int kx = i < 3 * nu ? 1 + S : 0;
                lane_sums(dot_lane(Wih + j * wih_r + F, kx, xin, lane), 0.0f, ra, rb, lid);
                if (lid < GNG && p + lid < 3 * nu)
                    gx[p + lid] = cfl[p + lid] + ra[lid * LANES];
                barrier(CLK_LOCAL_MEM_FENCE);
            }
        } else {
            for (int ir = lid; ir < 3 * nu; ir += WG) {
                const __global float *wj = Wih + ((ir / nu) * H + u0 + ir % nu) * wih_r + F;
                gx[ir] = cfl[ir] + wj[0] * yprev + (S ? wj[1 + k] : 0.0f);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (!lbr) {
            /* W_hn (r (.) h_{t-1}) needs every unit's r: publish the owned ones and meet. */
            for (int i = lid; i < nu; i += WG)
                put(&rhs[u0 + i], ro_sigmoid(gx[i] + gh[i]) * hl[u0 + i], tag);
            announce(&rdy_r[g], tag, lid);
            await_groups(rdy_r, G, H, tag, gave_up, lid);
            for (int i = lid; i < H; i += WG)
                rhl[i] = take(&rhs[i], tag, gave_up);
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int p = 0; p < nu; p += GNG) {
                const int i = p + lid / LANES, j = 2 * H + u0 + min(i, nu - 1), kh = i < nu ? H : 0;
                const float sh =
                    cache & 1 ? dot_lane_local(wa + (2 * nu + min(i, nu - 1)) * HP, kh, rhl, lane)
                              : dot_lane(Whh + j * whh_r, kh, rhl, lane);
                lane_sums(sh, 0.0f, ra, rb, lid);
                if (lid < GNG && p + lid < nu)
                    gh[2 * nu + p + lid] += ra[lid * LANES];
                barrier(CLK_LOCAL_MEM_FENCE);
            }
        }

        /* h_t of the owned units, published with the group's share of |h_t|^2 and w_y . h_t. */
        float hn2 = 0.0f, yh = 0.0f;
        for (int i = lid; i < nu; i += WG) {
            const float r = ro_sigmoid(gx[i] + gh[i]), z = ro_sigmoid(gx[nu + i] + gh[nu + i]);
            const float n = tanh(gx[2 * nu + i] + (lbr ? r * gh[2 * nu + i] : gh[2 * nu + i]));
            const float h = fma(z, hl[u0 + i] - n, n); /* (1 - z) n + z h */
            put(&hs[u0 + i], h, tag);
            hn2 = fma(h, h, hn2);
            yh = fma(Wy[(u0 + i) * wy_r], h, yh);
        }
        ra[lid] = hn2;
        rb[lid] = yh;
        /* The partial sums go out after h_t, so they double as the group's announcement. */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        tree_sums(ra, rb, pow2_at_least(min(nu, WG)), lid);
        if (lid == 0) {
            put(&pt[2 * g], ra[0], tag);
            put(&pt[2 * g + 1], rb[0], tag);
        }
        for (int i = lid; i < 2 * G; i += WG)
            parts[i] = take(&pt[i], tag, gave_up);
        if (H > WG) /* the partial sums were await_groups' announcements */
            barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = lid; i < H; i += WG)
            hl[i] = take(&hs[i], tag, gave_up);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* Every group sums the partials in the same order (from local memory: a chain of
         * volatile global loads would pay the device's latency once per group). */
        float HN = 0.0f, yt = by;
        for (int i = 0; i < G; i++) {
            HN += parts[2 * i];
            yt += parts[2 * i + 1];
        }
        float entropy = 0.0f;
        if (S) {
            /* The owned prior rows, published; then every group reads all logits. */
            for (int p = 0; p < nq; p += GNG) {
                const int i = p + lid / LANES, s = q0 + min(i, nq - 1), kh = i < nq ? H : 0;
                const float sh = cache & 2 ? dot_lane_local(wb + min(i, nq - 1) * HP, kh, hl, lane)
                                           : dot_lane(Wp + s * wp_r, kh, hl, lane);
                lane_sums(sh, 0.0f, ra, rb, lid);
                if (lid < GNG && p + lid < nq)
                    put(&lgs[q0 + p + lid], ra[lid * LANES] + Bp[(q0 + p + lid) * bp_r], tag);
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            /* The next step's hidden sides need only h_t: computed here, they overlap the
             * other groups' logits on their way. */
            if (LOOK_AHEAD && t + 1 < T)
                hidden_sides(Whh, whh_r, Bhh, bhh_r, has_bhh, wa, cache, HP, H, u0, nu, lbr, hl,
                             ra, rb, gh, lid);
            announce(&rdy_l[g], tag, lid);
            await_groups(rdy_l, G, S, tag, gave_up, lid);
            for (int i = lid; i < S; i += WG)
                lg[i] = take(&lgs[i], tag, gave_up);
            barrier(CLK_LOCAL_MEM_FENCE);

#if defined(RO_PTX) && RO_PTX
            /* Every work-item a chunk of ceil(S / WG) categories (one at S = WG): each warp
             * reduces and scans its chunks by shuffles, and the warps meet in local memory once
             * for the maximum and once for the sums. (Warp 0 alone with chunks of 8 took a
             * quarter of a step at the seed size on an H200.) A warp's results sit at ra[w],
             * rb[w], its sums at ra[NW + w], rb[NW + w], rb[2 NW + w]. */
            const int NW = WG / 32, wp = lid / 32, l32 = lid % 32, owners = WG;
            const int C = (S + WG - 1) / WG, c0 = min(S, lid * C), c1 = min(S, c0 + C);
            float m = -INFINITY;
            int am = S;
            for (int s = c0; s < c1; s++)
                max_combine(&m, &am, lg[s], s);
            for (int d = 16; d > 0; d /= 2) {
                const float m2 = SHFL_F(bfly, m, d);
                max_combine(&m, &am, m2, shfl_bfly(am, d));
            }
            if (l32 == 0) {
                ra[wp] = m;
                rb[wp] = as_float(am);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            /* Every work-item combines the warps in the same order: all agree, NaN logits too. */
            float M = ra[0];
            int A = as_int(rb[0]);
            for (int w = 1; w < NW; w++)
                max_combine(&M, &A, ra[w], as_int(rb[w]));
            A = clamp(A, 0, S - 1);
            float pe, pl, pw;
            chunk_exps(lg, c0, c1, M, Wy + H * wy_r, wy_r, &pe, &pl, &pw);
            float incl = pe;
            for (int d = 1; d < 32; d *= 2) {
                const float up = SHFL_F(up, incl, d);
                if (l32 >= d)
                    incl += up;
            }
            const float before = SHFL_F(up, incl, 1);
            for (int d = 16; d > 0; d /= 2) {
                pl += SHFL_F(bfly, pl, d);
                pw += SHFL_F(bfly, pw, d);
            }
            if (l32 == 31)
                ra[NW + wp] = incl;
            if (l32 == 0) {
                rb[NW + wp] = pl;
                rb[2 * NW + wp] = pw;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            /* The warps before this one, then all of them, summed in one order: the chunks'
             * intervals [excl, incl) tile [0, total) with no gap. */
            float off = 0.0f, total = 0.0f, TL = 0.0f, TW = 0.0f;
            for (int w = 0; w < NW; w++) {
                if (w == wp)
                    off = total;
                total += ra[NW + w];
                TL += rb[NW + w];
                TW += rb[2 * NW + w];
            }
            const float excl = off + (l32 ? before : 0.0f);
            incl += off;
#else
            /* The maximum and its index (the lowest on ties) over chunks of categories, one chunk
             * for each of the first CW work-items. */
            const int C = (S + CW - 1) / CW, c0 = min(S, lid * C), c1 = min(S, c0 + C);
            float m = -INFINITY;
            int am = S;
            for (int s = c0; s < c1; s++)
                max_combine(&m, &am, lg[s], s);
            ra[lid] = m;
            rb[lid] = as_float(am);
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int d = CW / 2; d > 0; d /= 2) {
                if (lid < d) {
                    float m1 = ra[lid];
                    int a1 = as_int(rb[lid]);
                    max_combine(&m1, &a1, ra[lid + d], as_int(rb[lid + d]));
                    ra[lid] = m1;
                    rb[lid] = as_float(a1);
                }
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            const float M = ra[0];
            const int A = clamp(as_int(rb[0]), 0, S - 1); /* NaN logits leave no maximum */
            barrier(CLK_LOCAL_MEM_FENCE);

            /* exp(l - M) into lg; an inclusive scan of the chunks' sums (the CDF at chunk
             * ends, ping-ponging ra and rb), and sums of exp(d) d (entropy) and of
             * w_y[H + s] exp(d) (the mean state's loss term) by trees in rc and rd. */
            float pe, pl, pw;
            chunk_exps(lg, c0, c1, M, Wy + H * wy_r, wy_r, &pe, &pl, &pw);
            ra[lid] = pe;
            rc[lid] = pl;
            rd[lid] = pw;
            barrier(CLK_LOCAL_MEM_FENCE);
            __local float *src = ra, *dst = rb;
            for (int d = 1; d < CW; d *= 2) {
                if (lid < CW)
                    dst[lid] = src[lid] + (lid >= d ? src[lid - d] : 0.0f);
                const int h2 = CW / (2 * d);
                if (lid < h2) {
                    rc[lid] += rc[lid + h2];
                    rd[lid] += rd[lid + h2];
                }
                barrier(CLK_LOCAL_MEM_FENCE);
                __local float *tmp = src;
                src = dst;
                dst = tmp;
            }
            const float total = src[CW - 1], TL = rc[0], TW = rd[0];
            const float incl = src[min(lid, CW - 1)], excl = lid ? src[min(lid, CW) - 1] : 0.0f;
            const int owners = CW;
#endif
            entropy = log(total) - TL / total;
            if (lid == 0)
                mean_y = TW / total; /* the mean state's loss term, for every work-item */
            if (mode == MODE_MEAN) {
                for (int s = c0; s < c1; s++)
                    xin[1 + s] = lg[s] / total;
            } else if (mode == MODE_SAMPLE) {
                const float target = ro_uniform(seed_lo, seed_hi, e, b, t) * total;
                /* The work-item whose interval [excl, incl) holds the target picks the first
                 * category whose CDF passes it; rounding inside the chunk can leave none, then
                 * the chunk's last likely one. */
                int pick = -1, last = c0;
                float cdf = excl;
                for (int s = c0; s < c1; s++) {
                    cdf += lg[s];
                    if (lg[s] > 0.0f)
                        last = s;
                    if (pick < 0 && cdf > target)
                        pick = s;
                }
                if (lid < owners && excl <= target && target < incl)
                    kcat = pick >= 0 ? pick : last;
                else if (lid == 0 && !(target < total))
                    kcat = A; /* u * total rounded up to total: no interval holds it */
            } else if (lid == 0) {
                kcat = A;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (mode != MODE_MEAN) {
                k = clamp(kcat, 0, S - 1);
                yt += Wy[(H + k) * wy_r];
            } else {
                yt += mean_y;
            }
        }
        yprev = yt;
        if (lid == 0) {
            xin[0] = yt; /* read by the next step's dense pass (mode mean) */
            if (g == 0) {
                y[kp_at3(yv, e, b, t)] = yt;
                if (has_ent)
                    ent[kp_at3(entv, e, b, t)] = entropy;
                if (has_hn)
                    hnorm[kp_at3(hnv, e, b, t)] = sqrt(HN);
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (g == 0) {
        for (int i = lid; i < H; i += WG)
            h_T[kp_at3(hTv, e, b, i)] = hl[i];
        if (lid == 0 && flag_load(gave_up))
            for (int t = 0; t < T; t++)
                y[kp_at3(yv, e, b, t)] = NAN;
    }
}

#endif
