// SPDX-License-Identifier: Apache-2.0
/* Batched Levenberg-Marquardt: one work-group per problem (solve/lm-host.c is the same algorithm
 * in double on the host). Appended to the generated residual function kp_residual and the
 * definitions of real, KP_ND, KP_NS and KP_NO.
 *
 * Each evaluation has every work-item compute the residuals and Jacobian rows of its share of
 * the problem's instances into global scratch (already weighted by the robust loss); then J^T r,
 * the diagonal of J^T J and the cost are each summed by one work-item over the rows in order,
 * and the rows [J | r] are factored in place by Householder reflections into R and Q^T r in
 * local memory: each reflection's dot products are summed in LM_CHUNKS fixed slices of the rows
 * (each slice by one work-item, in order) and the slices added in order, so the result is the
 * same bits whatever the work-group size, with no atomics. One work-item then takes the
 * decisions (damping, the damped step from R by Givens rotations, stopping) and the others wait
 * at a barrier; every loop that holds a barrier runs the same number of times on every
 * work-item, as its trip count is KP_NS or is read from local memory after a barrier. */

#define KP_PER (KP_NO * (KP_NS + 2)) /* scratch per instance: w r, w J, rho */
#define LM_CHUNKS 8

enum { LM_GRADIENT, LM_STEP, LM_FUNCTION, LM_MAX_ITERATIONS, LM_SINGULAR, LM_NONFINITE };
enum { LM_EVALUATE, LM_SUMS, LM_QR_DOTS, LM_QR_COEF, LM_QR_UPDATE, LM_DECIDE };

typedef struct lm_options {
    int max_iterations, loss;
    real gtol, xtol, ftol, mu0, min_diag, scale;
} lm_options;

static void lm_loss(const lm_options *o, real s, real *rho, real *rho1)
{
    const real a2 = o->scale * o->scale;
    if (o->loss == 1 && s > a2) {
        const real r = sqrt(s);
        *rho = 2 * o->scale * r - a2;
        *rho1 = o->scale / r;
    } else if (o->loss == 2) {
        *rho = a2 * log1p(s / a2);
        *rho1 = 1 / (1 + s / a2);
    } else {
        *rho = s;
        *rho1 = 1;
    }
}

/* The residuals and Jacobian rows at xt of this work-item's share of the instances, weighted by
 * the loss, into scratch. */
static void lm_residuals(const lm_options *o,
#if KP_ND > 0
                         __global const real *data, const kp_view2 dv,
#endif
                         const int r0, const int r1, __global real *scratch,
                         __local const real *xt)
{
    real d[KP_ND > 0 ? KP_ND : 1], p[KP_NS], rr[KP_NO], J[KP_NO * KP_NS];
    for (int s = 0; s < KP_NS; s++)
        p[s] = xt[s];
    for (int i = r0 + (int)get_local_id(0); i < r1; i += WG) {
#if KP_ND > 0
        for (int k = 0; k < KP_ND; k++)
            d[k] = data[kp_at2(dv, i, k)];
#endif
        kp_residual(d, p, rr, J);
        __global real *out = scratch + (size_t)i * KP_PER;
        for (int q = 0; q < KP_NO; q++) {
            real rho, rho1;
            lm_loss(o, rr[q] * rr[q], &rho, &rho1);
            const real w = sqrt(rho1);
            out[q] = w * rr[q];
            out[KP_NO * (KP_NS + 1) + q] = rho;
            for (int s = 0; s < KP_NS; s++)
                out[KP_NO + q * KP_NS + s] = w * J[q * KP_NS + s];
        }
    }
}

/* Entry (row, col) of the problem's weighted [J | r]: row = instance * KP_NO + output, counted
 * from the problem's first instance r0; column KP_NS is r. */
static __global real *lm_at(__global real *scratch, const int r0, const int row, const int col)
{
    __global real *in = scratch + (size_t)(r0 + row / KP_NO) * KP_PER;
    const int q = row % KP_NO;
    return col < KP_NS ? in + KP_NO + q * KP_NS + col : in + q;
}

/* J^T r, the diagonal of J^T J and the cost, each summed by one work-item over the rows in
 * order. */
static void lm_sums(const int r0, const int rows, __global real *scratch, __local real *gt,
                    __local real *dt, __local real *cost)
{
    for (int e = (int)get_local_id(0); e < 2 * KP_NS + 1; e += WG) {
        real sum = 0;
        if (e < 2 * KP_NS) {
            const int j = e % KP_NS;
            for (int i = 0; i < rows; i++) {
                const real a = *lm_at(scratch, r0, i, j);
                sum += a * (e < KP_NS ? *lm_at(scratch, r0, i, KP_NS) : a);
            }
            if (e < KP_NS)
                gt[j] = sum;
            else
                dt[j] = sum;
        } else {
            for (int i = 0; i < rows; i++)
                sum += scratch[(size_t)(r0 + i / KP_NO) * KP_PER + KP_NO * (KP_NS + 1) + i % KP_NO];
            *cost = (real)0.5 * sum;
        }
    }
}

/* Householder QR of the rows [J | r] in place, into R (the upper triangle of Rt) and the first
 * KP_NS entries of Q^T r, in three phases per reflection k, a barrier after each. First sigma and
 * the dot products d_j of column k with column j below row k, in LM_CHUNKS slices of the rows,
 * and row k itself. */
static void lm_qr_dots(const int k, const int r0, const int rows, __global real *scratch,
                       __local real *part, __local real *rowk)
{
    const int nc = KP_NS + 1 - k, below = rows > k + 1 ? rows - k - 1 : 0;
    const int len = (below + LM_CHUNKS - 1) / LM_CHUNKS;
    for (int t = (int)get_local_id(0); t < LM_CHUNKS * nc; t += WG) {
        const int c = t / nc, j = k + t % nc;
        const int i0 = k + 1 + c * len, i1 = min(i0 + len, rows);
        real sum = 0;
        for (int i = i0; i < i1; i++)
            sum += *lm_at(scratch, r0, i, k) * *lm_at(scratch, r0, i, j);
        part[c * (KP_NS + 1) + j] = sum;
        if (c == 0)
            rowk[j] = k < rows ? *lm_at(scratch, r0, k, j) : 0;
    }
}

/* Then the slices added in order, and column j's new entry in row k with the coefficient f_j of
 * the update of its rows below: H a_j = a_j - f_j u, u = a_k - beta e_k,
 * f_j = u.a_j / (beta (beta - alpha)). */
static void lm_qr_coef(const int k, __local const real *part, __local const real *rowk,
                       __local real *coef, __local real *Rt, __local real *qtrt)
{
    for (int j = k + (int)get_local_id(0); j <= KP_NS; j += WG) {
        real sigma = 0, dj = 0;
        for (int c = 0; c < LM_CHUNKS; c++) {
            sigma += part[c * (KP_NS + 1) + k];
            dj += part[c * (KP_NS + 1) + j];
        }
        const real alpha = rowk[k];
        const real beta = sigma == 0 ? alpha : -copysign(sqrt(alpha * alpha + sigma), alpha);
        const real f =
            j == k || sigma == 0 ? 0 : ((alpha - beta) * rowk[j] + dj) / (beta * (beta - alpha));
        coef[j] = f;
        const real v = j == k ? beta : rowk[j] - f * (alpha - beta);
        if (j < KP_NS)
            Rt[k * KP_NS + j] = v;
        else
            qtrt[k] = v;
    }
}

/* Then the rows below k of the columns right of it, one entry per work-item. */
static void lm_qr_update(const int k, const int r0, const int rows, __global real *scratch,
                         __local const real *coef)
{
    const int below = rows > k + 1 ? rows - k - 1 : 0, nu = KP_NS - k;
    for (int t = (int)get_local_id(0); t < below * nu; t += WG) {
        const int i = k + 1 + t / nu, j = k + 1 + t % nu;
        *lm_at(scratch, r0, i, j) -= coef[j] * *lm_at(scratch, r0, i, k);
    }
}

/* A NaN or infinite derivative shows in the gradient: the cost then carries it (work-item 0,
 * after the barrier that follows lm_sums), so one test catches both. */
static real lm_checked_cost(__local const real *gt, real cost)
{
    for (int j = 0; j < KP_NS; j++)
        if (!isfinite(gt[j]))
            return NAN;
    return cost;
}

/* The damped step h minimizing |R h + Q^T r|^2 + mu |D^(1/2) h|^2: Givens rotations fold the rows
 * sqrt(mu D_j) e_j into W, a copy of R (MINPACK's qrsolv without pivoting). 0 when the damped
 * system is singular. */
static int lm_damped_step(__local const real *R, __local const real *qtr, __local const real *D,
                          real mu, __local real *W, __local real *h, real *z)
{
    real *row = z + KP_NS;
    for (int i = 0; i < KP_NS; i++) {
        z[i] = qtr[i];
        for (int j = i; j < KP_NS; j++)
            W[i * KP_NS + j] = R[i * KP_NS + j];
    }
    for (int j = 0; j < KP_NS; j++) {
        const real s = sqrt(mu * D[j]);
        if (s == 0)
            continue;
        for (int i = 0; i < KP_NS; i++)
            row[i] = i == j ? s : 0;
        real zr = 0;
        for (int k = j; k < KP_NS; k++) {
            if (row[k] == 0)
                continue;
            real c, sn;
            const real wkk = W[k * KP_NS + k];
            if (fabs(wkk) < fabs(row[k])) {
                const real t = wkk / row[k];
                sn = 1 / sqrt(1 + t * t);
                c = sn * t;
            } else {
                const real t = row[k] / wkk;
                c = 1 / sqrt(1 + t * t);
                sn = c * t;
            }
            W[k * KP_NS + k] = c * wkk + sn * row[k];
            const real zk = c * z[k] + sn * zr;
            zr = c * zr - sn * z[k];
            z[k] = zk;
            for (int i = k + 1; i < KP_NS; i++) {
                const real wi = c * W[k * KP_NS + i] + sn * row[i];
                row[i] = c * row[i] - sn * W[k * KP_NS + i];
                W[k * KP_NS + i] = wi;
            }
        }
    }
    for (int i = KP_NS - 1; i >= 0; i--) {
        const real wii = W[i * KP_NS + i];
        if (!(wii != 0) || !isfinite(wii))
            return 0;
        real v = -z[i];
        for (int k = i + 1; k < KP_NS; k++)
            v -= W[i * KP_NS + k] * h[k];
        h[i] = v / wii;
        if (!isfinite(h[i]))
            return 0;
    }
    return 1;
}

typedef struct lm_state {
    real cost, mu, nu, pred, hd;
    int it, done, status, probe;
} lm_state;

static void lm_scaling(const lm_options *o, __local const real *d, __local real *D)
{
    for (int j = 0; j < KP_NS; j++)
        D[j] = d[j] < o->min_diag ? o->min_diag : d[j] > (real)1e32 ? (real)1e32 : d[j];
}

/* The trial point becomes the current one, with its factors (R's upper triangle: the lower one
 * is never written). */
static void lm_take(const lm_options *o, __local lm_state *st, real cost_t, __local real *x,
                    __local const real *xt, __local real *g, __local const real *gt,
                    __local real *d, __local const real *dt, __local real *D, __local real *qtr,
                    __local const real *qtrt, __local real *R, __local const real *Rt)
{
    for (int j = 0; j < KP_NS; j++) {
        x[j] = xt[j];
        g[j] = gt[j];
        d[j] = dt[j];
        qtr[j] = qtrt[j];
    }
    for (int i = 0; i < KP_NS; i++)
        for (int j = i; j < KP_NS; j++)
            R[i * KP_NS + j] = Rt[i * KP_NS + j];
    st->cost = cost_t;
    lm_scaling(o, d, D);
}

/* The decisions after an evaluation of xt (work-item 0 alone): take it, probe it
 * (solve-internal.h's kp__lm_unjudged and kp__lm_contracts, which say why: a step the cost cannot
 * judge is taken when the next step from the trial point, with its own factors and the same
 * damping, is at most half as long in D's norm), or refuse it; then stop, or set the next trial
 * point. lm_damped_step has one call site, for the probe and the step alike, so the kernel
 * inlines it once. */
static void lm_step(const lm_options *o, __local lm_state *st, real cost_t, __local real *x,
                    __local real *xt, __local real *h, __local real *ht, __local real *g,
                    __local const real *gt, __local real *d, __local const real *dt,
                    __local real *D, __local real *Dt, __local real *qtr,
                    __local const real *qtrt, __local real *R, __local const real *Rt,
                    __local real *W)
{
    const real tol = sizeof(real) == 4 ? (real)3.4526698e-4 : (real)1.4901161193847656e-08;
    cost_t = lm_checked_cost(gt, cost_t);
    st->probe = 0;
    if (st->it++ == 0) {
        if (!isfinite(cost_t)) {
            st->status = LM_NONFINITE;
            st->done = 1;
            return;
        }
        st->mu = o->mu0;
        st->nu = 2;
        lm_take(o, st, cost_t, x, xt, g, gt, d, dt, D, qtr, qtrt, R, Rt);
    } else if (isfinite(cost_t) && st->pred > 0 && st->cost - cost_t > 0) {
        const real rho = (st->cost - cost_t) / ((real)0.5 * st->pred);
        const real drop = st->cost - cost_t;
        lm_take(o, st, cost_t, x, xt, g, gt, d, dt, D, qtr, qtrt, R, Rt);
        if (drop <= o->ftol * (cost_t + drop)) {
            st->status = LM_FUNCTION;
            st->done = 1;
            return;
        }
        const real t = 2 * rho - 1;
        st->mu *= fmax((real)1 / 3, 1 - t * t * t);
        st->nu = 2;
    } else if (isfinite(cost_t) && st->pred > 0 && (real)0.5 * st->pred <= tol * st->cost &&
               cost_t - st->cost <= tol * st->cost) {
        st->probe = 1;
        lm_scaling(o, dt, Dt);
    } else {
        st->mu *= st->nu;
        st->nu *= 2;
    }
    real z[2 * KP_NS];
    for (;;) {
        const int probe = st->probe;
        if (!probe) {
            real gmax = 0;
            for (int j = 0; j < KP_NS; j++)
                gmax = fmax(gmax, fabs(g[j]));
            if (gmax <= o->gtol) {
                st->status = LM_GRADIENT;
                st->done = 1;
                return;
            }
            if (st->it >= o->max_iterations) {
                st->status = LM_MAX_ITERATIONS;
                st->done = 1;
                return;
            }
        }
        const int ok = lm_damped_step(probe ? Rt : R, probe ? qtrt : qtr, probe ? Dt : D, st->mu,
                                      W, probe ? ht : h, z);
        if (probe) {
            st->probe = 0;
            real a = 0;
            for (int j = 0; j < KP_NS; j++)
                a += Dt[j] * ht[j] * ht[j];
            if (ok && 4 * a <= st->hd) {
                lm_take(o, st, cost_t, x, xt, g, gt, d, dt, D, qtr, qtrt, R, Rt);
            } else {
                st->mu *= st->nu;
                st->nu *= 2;
            }
            continue;
        }
        if (!ok) {
            st->mu *= st->nu;
            st->nu *= 2;
            if (!(st->mu <= (real)1e32)) {
                st->status = LM_SINGULAR;
                st->done = 1;
                return;
            }
            continue;
        }
        /* |J h|^2 + 2 mu h^T D h: twice the model's drop, a sum of squares. */
        real hn = 0, xn = 0, pred = 0, hd = 0;
        for (int i = 0; i < KP_NS; i++) {
            real rh = 0;
            for (int k = i; k < KP_NS; k++)
                rh += R[i * KP_NS + k] * h[k];
            pred += rh * rh + 2 * st->mu * D[i] * h[i] * h[i];
            hd += D[i] * h[i] * h[i];
            hn += h[i] * h[i];
            xn += x[i] * x[i];
            xt[i] = x[i] + h[i];
        }
        st->pred = pred;
        st->hd = hd;
        if (sqrt(hn) <= o->xtol * (sqrt(xn) + o->xtol)) {
            st->status = LM_STEP;
            st->done = 1;
        }
        return;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void solve_lm(
#if KP_ND > 0
    __global const real *data, const kp_view2 dv,
#endif
    __global const int *rows, const kp_view1 rv, __global real *xg, const kp_view2 xv,
    __global real *cost_out, const kp_view1 cv, __global int *iters_out, const kp_view1 iv,
    __global int *status_out, const kp_view1 sv, __global real *scratch, const int n,
    const int max_iterations,
    const real gtol, const real xtol, const real ftol, const real mu0, const real min_diag,
    const int loss, const real scale)
{
    __local real x[KP_NS], xt[KP_NS], h[KP_NS], ht[KP_NS];
    __local real g[KP_NS], gt[KP_NS], d[KP_NS], dt[KP_NS], D[KP_NS], Dt[KP_NS];
    __local real qtr[KP_NS], qtrt[KP_NS], rowk[KP_NS + 1], coef[KP_NS + 1];
    __local real part[LM_CHUNKS * (KP_NS + 1)];
    __local real R[KP_NS * KP_NS], Rt[KP_NS * KP_NS], W[KP_NS * KP_NS];
    __local real cost_t;
    __local lm_state st;
    const lm_options o = {max_iterations, loss, gtol, xtol, ftol, mu0, min_diag, scale};
    const int b = get_group_id(0), lid = get_local_id(0);
    /* Rows are clamped into [0, n], so bad ones cannot reach past the data or the scratch. */
    const int r0 = clamp(rows[kp_at1(rv, b)], 0, n), r1 = clamp(rows[kp_at1(rv, b + 1)], r0, n);
    const int m = (r1 - r0) * KP_NO;
    for (int j = lid; j < KP_NS; j += WG)
        x[j] = xt[j] = xg[kp_at2(xv, b, j)];
    if (lid == 0) {
        st.it = 0;
        st.done = 0;
        st.status = LM_MAX_ITERATIONS;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* One phase per pass, one barrier after each: evaluate xt, sum, the QR's three phases per
     * column, then work-item 0 takes the decisions. Every work-item steps through the phases
     * alike and reads the exit from local memory after the decisions' barrier, so all leave at
     * the same pass; the barrier stands in the loop alone, never in a nested one. */
    int phase = LM_DECIDE, k = 0;
    for (;;) {
        if (phase == LM_QR_UPDATE && k + 1 < KP_NS) {
            k++;
            phase = LM_QR_DOTS;
        } else {
            k = phase == LM_SUMS ? 0 : k;
            phase = phase == LM_DECIDE ? LM_EVALUATE : phase + 1;
        }
        if (phase == LM_EVALUATE)
            lm_residuals(&o,
#if KP_ND > 0
                         data, dv,
#endif
                         r0, r1, scratch, xt);
        else if (phase == LM_SUMS)
            lm_sums(r0, m, scratch, gt, dt, &cost_t);
        else if (phase == LM_QR_DOTS)
            lm_qr_dots(k, r0, m, scratch, part, rowk);
        else if (phase == LM_QR_COEF)
            lm_qr_coef(k, part, rowk, coef, Rt, qtrt);
        else if (phase == LM_QR_UPDATE)
            lm_qr_update(k, r0, m, scratch, coef);
        /* Its own test, not the chain's last else: PoCL 5.0's work-group function generation
         * aborted on that shape for some models (createParallelRegionBefore, Misra1a). */
        if (phase == LM_DECIDE && lid == 0)
            lm_step(&o, &st, cost_t, x, xt, h, ht, g, gt, d, dt, D, Dt, qtr, qtrt, R, Rt, W);
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        /* Read only after the decisions' barrier: work-item 0 writes st again no sooner than the
         * next decisions, 3 S + 2 barriers on (read after every barrier, the flag raced with
         * the write in the pass that follows the QR's last: Oclgrind's report). */
        if (phase == LM_DECIDE && st.done)
            break;
    }
    for (int j = lid; j < KP_NS; j += WG)
        xg[kp_at2(xv, b, j)] = x[j];
    if (lid == 0) {
        cost_out[kp_at1(cv, b)] = st.cost;
        iters_out[kp_at1(iv, b)] = st.it;
        status_out[kp_at1(sv, b)] = st.status;
    }
}
