// SPDX-License-Identifier: Apache-2.0
/* Batched Levenberg-Marquardt: one work-group per problem (solve/lm-host.c is the same algorithm
 * in double on the host). Appended to the generated residual function kp_residual and the
 * definitions of real, KP_ND, KP_NS and KP_NO.
 *
 * Each evaluation has every work-item compute the residuals and Jacobian rows of its share of
 * the problem's instances into global scratch (already weighted by the robust loss); then the
 * entries of J^T J, J^T r and the cost are each summed by one work-item over the instances in
 * order, so the result is the same bits whatever the work-group size, with no atomics. One
 * work-item then takes the decisions (damping, Cholesky in local memory, stopping) and the
 * others wait at a barrier; every loop that holds a barrier runs the same number of times on
 * every work-item, as its condition is read from local memory after a barrier. */

#define KP_NA (KP_NS * (KP_NS + 1) / 2) /* entries of the lower triangle of J^T J */
#define KP_PER (KP_NO * (KP_NS + 2))    /* scratch per instance: w r, w J, rho */

enum { LM_GRADIENT, LM_STEP, LM_FUNCTION, LM_MAX_ITERATIONS, LM_SINGULAR, LM_NONFINITE };

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

/* This work-item's entries of the normal equations, each summed over the instances in order:
 * entry e < KP_NA is (a, b) of the lower triangle of J^T J, then the KP_NS of J^T r, then the
 * cost. */
static void lm_reduce(const int r0, const int r1, __global const real *scratch,
                      __local real *At, __local real *gt, __local real *cost)
{
    for (int e = (int)get_local_id(0); e < KP_NA + KP_NS + 1; e += WG) {
        int a = 0, b = 0, kind = e < KP_NA ? 0 : e < KP_NA + KP_NS ? 1 : 2;
        if (kind == 0) {
            while ((a + 1) * (a + 2) / 2 <= e)
                a++;
            b = e - a * (a + 1) / 2;
        } else if (kind == 1)
            a = e - KP_NA;
        real sum = 0;
        for (int i = r0; i < r1; i++) {
            __global const real *in = scratch + (size_t)i * KP_PER;
            for (int q = 0; q < KP_NO; q++) {
                if (kind == 0)
                    sum += in[KP_NO + q * KP_NS + a] * in[KP_NO + q * KP_NS + b];
                else if (kind == 1)
                    sum += in[KP_NO + q * KP_NS + a] * in[q];
                else
                    sum += in[KP_NO * (KP_NS + 1) + q];
            }
        }
        if (kind == 0)
            At[a * KP_NS + b] = sum;
        else if (kind == 1)
            gt[a] = sum;
        else
            *cost = (real)0.5 * sum;
    }
}

/* A NaN or infinite derivative shows in the gradient: the cost then carries it (work-item 0,
 * after the barrier that follows lm_reduce), so one test catches both. */
static real lm_checked_cost(__local const real *gt, real cost)
{
    for (int j = 0; j < KP_NS; j++)
        if (!isfinite(gt[j]))
            return NAN;
    return cost;
}

static int lm_cholesky(__local real *M)
{
    for (int j = 0; j < KP_NS; j++) {
        real d = M[j * KP_NS + j];
        for (int k = 0; k < j; k++)
            d -= M[j * KP_NS + k] * M[j * KP_NS + k];
        if (!(d > 0) || !isfinite(d))
            return j;
        d = sqrt(d);
        M[j * KP_NS + j] = d;
        for (int i = j + 1; i < KP_NS; i++) {
            real v = M[i * KP_NS + j];
            for (int k = 0; k < j; k++)
                v -= M[i * KP_NS + k] * M[j * KP_NS + k];
            M[i * KP_NS + j] = v / d;
        }
    }
    return -1;
}

typedef struct lm_state {
    real cost, mu, nu;
    int it, done, status;
} lm_state;

static void lm_scaling(const lm_options *o, __local const real *A, __local real *diag)
{
    for (int j = 0; j < KP_NS; j++) {
        const real d = A[j * KP_NS + j];
        diag[j] = d < o->min_diag ? o->min_diag : d > (real)1e32 ? (real)1e32 : d;
    }
}

/* From the normal equations at x, the next trial point xt, or a stop (work-item 0 alone). */
static void lm_decide(const lm_options *o, __local lm_state *st, __local const real *x,
                      __local real *xt, __local const real *A, __local const real *g,
                      __local const real *diag, __local real *M, __local real *h)
{
    for (;;) {
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
        for (int a = 0; a < KP_NS; a++)
            for (int b = 0; b <= a; b++)
                M[a * KP_NS + b] = A[a * KP_NS + b] + (a == b ? st->mu * diag[a] : 0);
        if (lm_cholesky(M) >= 0) {
            st->mu *= st->nu;
            st->nu *= 2;
            if (!(st->mu <= (real)1e32)) {
                st->status = LM_SINGULAR;
                st->done = 1;
                return;
            }
            continue;
        }
        for (int i = 0; i < KP_NS; i++) {
            real v = -g[i];
            for (int k = 0; k < i; k++)
                v -= M[i * KP_NS + k] * h[k];
            h[i] = v / M[i * KP_NS + i];
        }
        for (int i = KP_NS - 1; i >= 0; i--) {
            real v = h[i];
            for (int k = i + 1; k < KP_NS; k++)
                v -= M[k * KP_NS + i] * h[k];
            h[i] = v / M[i * KP_NS + i];
        }
        real hn = 0, xn = 0;
        for (int j = 0; j < KP_NS; j++) {
            hn += h[j] * h[j];
            xn += x[j] * x[j];
            xt[j] = x[j] + h[j];
        }
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
    __local real x[KP_NS], xt[KP_NS], g[KP_NS], gt[KP_NS], diag[KP_NS], h[KP_NS];
    __local real A[KP_NS * KP_NS], At[KP_NS * KP_NS], M[KP_NS * KP_NS];
    __local real cost_t;
    __local lm_state st;
    const lm_options o = {max_iterations, loss, gtol, xtol, ftol, mu0, min_diag, scale};
    const int b = get_group_id(0), lid = get_local_id(0);
    /* Rows are clamped into [0, n], so bad ones cannot reach past the data or the scratch. */
    const int r0 = clamp(rows[kp_at1(rv, b)], 0, n), r1 = clamp(rows[kp_at1(rv, b + 1)], r0, n);
    for (int j = lid; j < KP_NS; j += WG)
        x[j] = xt[j] = xg[kp_at2(xv, b, j)];
    if (lid == 0) {
        st.it = 0;
        st.done = 0;
        st.status = LM_MAX_ITERATIONS;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Each pass evaluates xt, then work-item 0 takes the decisions; the loop's exit is read from
     * local memory after a barrier, so every work-item leaves it at the same pass. */
    for (;;) {
        lm_residuals(&o,
#if KP_ND > 0
                     data, dv,
#endif
                     r0, r1, scratch, xt);
        barrier(CLK_GLOBAL_MEM_FENCE);
        lm_reduce(r0, r1, scratch, At, gt, &cost_t);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            cost_t = lm_checked_cost(gt, cost_t);
            if (st.it++ == 0) {
                for (int j = 0; j < KP_NS * KP_NS; j++)
                    A[j] = At[j];
                for (int j = 0; j < KP_NS; j++)
                    g[j] = gt[j];
                st.cost = cost_t;
                if (!isfinite(cost_t)) {
                    st.status = LM_NONFINITE;
                    st.done = 1;
                } else {
                    lm_scaling(&o, A, diag);
                    st.mu = mu0;
                    st.nu = 2;
                }
            } else {
                real pred = 0;
                for (int j = 0; j < KP_NS; j++)
                    pred += h[j] * (st.mu * diag[j] * h[j] - g[j]);
                const real rho = (st.cost - cost_t) / ((real)0.5 * pred);
                if (isfinite(cost_t) && pred > 0 && rho > 0) {
                    const real drop = st.cost - cost_t;
                    for (int j = 0; j < KP_NS; j++) {
                        x[j] = xt[j];
                        g[j] = gt[j];
                    }
                    for (int j = 0; j < KP_NS * KP_NS; j++)
                        A[j] = At[j];
                    st.cost = cost_t;
                    lm_scaling(&o, A, diag);
                    if (drop <= ftol * (cost_t + drop)) {
                        st.status = LM_FUNCTION;
                        st.done = 1;
                    } else {
                        const real t = 2 * rho - 1;
                        st.mu *= fmax((real)1 / 3, 1 - t * t * t);
                        st.nu = 2;
                    }
                } else {
                    st.mu *= st.nu;
                    st.nu *= 2;
                }
            }
            if (!st.done)
                lm_decide(&o, &st, x, xt, A, g, diag, M, h);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (st.done)
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
