// SPDX-License-Identifier: Apache-2.0
/* The products and vector steps of the large-problem LM (solve/lm-sparse.c), after a prefix that
 * defines `real`. Sums run in a fixed order, with no atomics: J^T u is gathered per parameter
 * through the transposed index, and a dot product leaves KP_DOT_PARTS partial sums, each over a
 * fixed stride of the elements, for the host to add in order. Indices are checked, so bad ones
 * read zeros rather than memory outside the tensors. */

#define KP_DOT_PARTS 4096

/* u[i, o] = sum_s J[i, o, s] v[index[i, s]]: one work-item per instance. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_jv(const int n, const int O, const int S, const int P, __global const real *J,
           const kp_view3 jv, __global const int *index, const kp_view2 iv,
           __global const real *v, const kp_view1 vv, __global real *u, const kp_view2 uv)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    for (int o = 0; o < O; o++) {
        real t = 0;
        for (int s = 0; s < S; s++) {
            const int q = index[kp_at2(iv, i, s)];
            if (q >= 0 && q < P)
                t += J[kp_at3(jv, i, o, s)] * v[kp_at1(vv, q)];
        }
        u[kp_at2(uv, i, o)] = t;
    }
}

/* out[q] = sum over q's uses e (instance e / S, slot e % S) of sum_o J[i, o, s] u[i, o], or of
 * J[i, o, s]^2 when `square`: one work-item per parameter, its uses in order. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_jtu(const int P, const int n, const int O, const int S, const int square,
            __global const real *J, const kp_view3 jv, __global const real *u, const kp_view2 uv,
            __global const int *tptr, const kp_view1 pv, __global const int *tent,
            const kp_view1 ev, __global real *out, const kp_view1 ov)
{
    const int q = get_global_id(0);
    if (q >= P)
        return;
    const int uses = n * S, e0 = clamp(tptr[kp_at1(pv, q)], 0, uses);
    const int e1 = clamp(tptr[kp_at1(pv, q + 1)], e0, uses);
    real t = 0;
    for (int e = e0; e < e1; e++) {
        const int use = tent[kp_at1(ev, e)];
        if (use < 0 || use >= uses)
            continue;
        const int i = use / S, s = use % S;
        for (int o = 0; o < O; o++) {
            const real j = J[kp_at3(jv, i, o, s)];
            t += j * (square ? j : u[kp_at2(uv, i, o)]);
        }
    }
    out[kp_at1(ov, q)] = t;
}

/* partial[t] = sum_{k = t, t + KP_DOT_PARTS, ...} a[k] b[k]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_dot(const int m, __global const real *a, const kp_view1 av, __global const real *b,
            const kp_view1 bv, __global real *partial, const kp_view1 pv)
{
    const int t = get_global_id(0);
    if (t >= KP_DOT_PARTS)
        return;
    real s = 0;
    for (int k = t; k < m; k += KP_DOT_PARTS)
        s += a[kp_at1(av, k)] * b[kp_at1(bv, k)];
    partial[kp_at1(pv, t)] = s;
}

/* op 0: out = alpha a + beta b; op 1: out = a / (b + alpha c), or a where that is not positive
 * (the Jacobi step); op 2: out = a + alpha b c; op 3: out = a clamped to [alpha, beta]. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_vec(const int m, const int op, const real alpha, const real beta, __global const real *a,
            const kp_view1 av, __global const real *b, const kp_view1 bv, __global const real *c,
            const kp_view1 cv, __global real *out, const kp_view1 ov)
{
    const int k = get_global_id(0);
    if (k >= m)
        return;
    const real x = a[kp_at1(av, k)], y = b[kp_at1(bv, k)], z = c[kp_at1(cv, k)];
    real r;
    if (op == 0)
        r = alpha * x + beta * y;
    else if (op == 1) {
        const real d = y + alpha * z;
        r = d > 0 ? x / d : x;
    } else if (op == 2)
        r = x + alpha * y * z;
    else
        r = x < alpha ? alpha : x > beta ? beta : x;
    out[kp_at1(ov, k)] = r;
}

/* The robust loss on r [n, O] and J [n, O, S] in place: rho = rho(r^2), then r and J's row
 * scaled by sqrt(rho'(r^2)) (loss 1 Huber, 2 Cauchy, with scale a). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_loss(const int n, const int O, const int S, const int loss, const real a,
             __global real *r, const kp_view2 rv, __global real *J, const kp_view3 jv,
             __global real *rho, const kp_view2 hv)
{
    const int i = get_global_id(0);
    if (i >= n)
        return;
    const real a2 = a * a;
    for (int o = 0; o < O; o++) {
        const real x = r[kp_at2(rv, i, o)], s = x * x;
        real p, p1;
        if (loss == 1 && s > a2) {
            const real q = sqrt(s);
            p = 2 * a * q - a2;
            p1 = a / q;
        } else if (loss == 2) {
            p = a2 * log1p(s / a2);
            p1 = 1 / (1 + s / a2);
        } else {
            p = s;
            p1 = 1;
        }
        const real w = sqrt(p1);
        rho[kp_at2(hv, i, o)] = p;
        r[kp_at2(rv, i, o)] = w * x;
        for (int k = 0; k < S; k++)
            J[kp_at3(jv, i, o, k)] *= w;
    }
}

/* Diagonal block k of J^T J (parameters k bs .. k bs + bs - 1, fewer at the end) into
 * B[k, bs, bs], one work-item per block, over each parameter's uses in order, then the
 * instance's slots: solve/lm-sparse-host.c's kp__lm_block. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_block(const int nb, const int bs, const int P, const int n, const int O, const int S,
              __global const real *J, const kp_view3 jv, __global const int *index,
              const kp_view2 iv, __global const int *tptr, const kp_view1 pv,
              __global const int *tent, const kp_view1 ev, __global real *B, const kp_view3 bv)
{
    const int k = get_global_id(0);
    if (k >= nb)
        return;
    const int q0 = k * bs, q1 = min(q0 + bs, P), uses = n * S;
    real acc[64];
    for (int t = 0; t < bs * bs; t++)
        acc[t] = 0;
    for (int q = q0; q < q1; q++) {
        const int e0 = clamp(tptr[kp_at1(pv, q)], 0, uses);
        const int e1 = clamp(tptr[kp_at1(pv, q + 1)], e0, uses);
        for (int e = e0; e < e1; e++) {
            const int use = tent[kp_at1(ev, e)];
            if (use < 0 || use >= uses)
                continue;
            const int i = use / S, s1 = use % S;
            for (int s2 = 0; s2 < S; s2++) {
                const int q2 = index[kp_at2(iv, i, s2)];
                if (q2 < q0 || q2 >= q1)
                    continue;
                real t = 0;
                for (int o = 0; o < O; o++)
                    t += J[kp_at3(jv, i, o, s1)] * J[kp_at3(jv, i, o, s2)];
                acc[(q - q0) * bs + (q2 - q0)] += t;
            }
        }
    }
    for (int a = 0; a < bs; a++)
        for (int b = 0; b < bs; b++)
            B[kp_at3(bv, k, a, b)] = acc[a * bs + b];
}

/* z = (B_k + mu diag(D))^-1 r per block by Cholesky, or r / (B_k's diagonal + mu D) where the
 * factorization fails (Jacobi's step, positive denominators only): kp__lm_block_solve. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_bsolve(const int nb, const int bs, const int P, const real mu, __global const real *B,
               const kp_view3 bv, __global const real *D, const kp_view1 dv,
               __global const real *r, const kp_view1 rv, __global real *z, const kp_view1 zv)
{
    const int k = get_global_id(0);
    if (k >= nb)
        return;
    const int q0 = k * bs, b = min(bs, P - q0);
    real L[64], y[8];
    int ok = 1;
    for (int j = 0; ok && j < b; j++) {
        real v = B[kp_at3(bv, k, j, j)] + mu * D[kp_at1(dv, q0 + j)];
        for (int t = 0; t < j; t++)
            v -= L[j * bs + t] * L[j * bs + t];
        ok = v > 0 && isfinite(v);
        v = ok ? sqrt(v) : 1;
        L[j * bs + j] = v;
        for (int i = j + 1; i < b; i++) {
            real w = B[kp_at3(bv, k, i, j)];
            for (int t = 0; t < j; t++)
                w -= L[i * bs + t] * L[j * bs + t];
            L[i * bs + j] = w / v;
        }
    }
    if (!ok) {
        for (int i = 0; i < b; i++) {
            const real m = B[kp_at3(bv, k, i, i)] + mu * D[kp_at1(dv, q0 + i)];
            const real x = r[kp_at1(rv, q0 + i)];
            z[kp_at1(zv, q0 + i)] = m > 0 ? x / m : x;
        }
        return;
    }
    for (int i = 0; i < b; i++) {
        real v = r[kp_at1(rv, q0 + i)];
        for (int t = 0; t < i; t++)
            v -= L[i * bs + t] * y[t];
        y[i] = v / L[i * bs + i];
    }
    for (int i = b - 1; i >= 0; i--) {
        real v = y[i];
        for (int t = i + 1; t < b; t++)
            v -= L[t * bs + i] * y[t];
        y[i] = v / L[i * bs + i];
    }
    for (int i = 0; i < b; i++)
        z[kp_at1(zv, q0 + i)] = y[i];
}

/* Row p of J^T J into A[p, :], one work-item per parameter (its own row: no atomics), over p's
 * uses in order, then the instance's slots: solve/lm-dense.c's kp__lm_jtj_row. The dense path
 * of small problems. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sp_jtj(const int P, const int n, const int O, const int S, __global const real *J,
            const kp_view3 jv, __global const int *index, const kp_view2 iv,
            __global const int *tptr, const kp_view1 pv, __global const int *tent,
            const kp_view1 ev, __global real *A, const kp_view2 av)
{
    const int p = get_global_id(0);
    if (p >= P)
        return;
    for (int c = 0; c < P; c++)
        A[kp_at2(av, p, c)] = 0;
    const int uses = n * S, e0 = clamp(tptr[kp_at1(pv, p)], 0, uses);
    const int e1 = clamp(tptr[kp_at1(pv, p + 1)], e0, uses);
    for (int e = e0; e < e1; e++) {
        const int use = tent[kp_at1(ev, e)];
        if (use < 0 || use >= uses)
            continue;
        const int i = use / S, s1 = use % S;
        for (int s2 = 0; s2 < S; s2++) {
            const int q2 = index[kp_at2(iv, i, s2)];
            if (q2 < 0 || q2 >= P)
                continue;
            real t = 0;
            for (int o = 0; o < O; o++)
                t += J[kp_at3(jv, i, o, s1)] * J[kp_at3(jv, i, o, s2)];
            A[kp_at2(av, p, q2)] += t;
        }
    }
}
