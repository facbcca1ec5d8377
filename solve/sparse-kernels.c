// SPDX-License-Identifier: Apache-2.0
/* The large-problem LM's generic kernels (solve/sparse.cl): J v, J^T u through the transposed
 * index, partial dot products, vector steps, the robust loss, the block-Jacobi
 * preconditioner's blocks and solves, and the dense path's J^T J, in f64 and f32, each
 * registered at run time with a host reference and samples, from one table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-embedded.h"
#include "solve-internal.h"

enum { K_JV, K_JTU, K_DOT, K_VEC, K_LOSS, K_BLOCK, K_BSOLVE, K_JTJ, K_COUNT };
_Static_assert((int)K_COUNT == (int)KP__SPARSE_KERNELS, "solve-internal.h's count");
enum { DOT_PARTS = 4096 };

typedef struct sparse_kernel {
    int which, f32;
} sparse_kernel;

static const sparse_kernel kernels[2][K_COUNT] = {
    {{K_JV, 0},
     {K_JTU, 0},
     {K_DOT, 0},
     {K_VEC, 0},
     {K_LOSS, 0},
     {K_BLOCK, 0},
     {K_BSOLVE, 0},
     {K_JTJ, 0}},
    {{K_JV, 1},
     {K_JTU, 1},
     {K_DOT, 1},
     {K_VEC, 1},
     {K_LOSS, 1},
     {K_BLOCK, 1},
     {K_BSOLVE, 1},
     {K_JTJ, 1}},
};
static const char *const names[K_COUNT] = {"sp_jv",   "sp_jtu",   "sp_dot",    "sp_vec",
                                           "sp_loss", "sp_block", "sp_bsolve", "sp_jtj"};

static const sparse_kernel *kind(kp_launch *l)
{
    return kp_host_api_get()->kernel_user(l);
}

static kp_status supported(kp_launch *l)
{
    const kp_device_info *d = kp_host_api_get()->device(l);
    if (!kind(l)->f32 && !d->fp64)
        return kp_host_api_get()->fail(l, KP_ERR_UNSUPPORTED,
                                       "f64 kernel, and device %s has no cl_khr_fp64", d->name);
    return KP_OK;
}

/* Element (i, j, k) of a tensor argument of a reference call, by its strides. */
static int64_t at(const kp_value *v, int64_t i, int64_t j, int64_t k)
{
    const kp_tensor *t = &v->tensor;
    return t->offset + i * t->strides[0] + (t->rank > 1 ? j * t->strides[1] : 0) +
           (t->rank > 2 ? k * t->strides[2] : 0);
}

static double ld(const kp_value *v, int64_t i, int64_t j, int64_t k)
{
    return kp_dtype_load(v->host, (kp_dtype)v->tensor.dtype, at(v, i, j, k));
}

static int32_t ldi(const kp_value *v, int64_t i)
{
    return ((const int32_t *)v->host)[at(v, i, 0, 0)];
}

static void put(const kp_value *v, int64_t i, int64_t j, double x)
{
    if (v->tensor.dtype == KP_F64)
        ((double *)v->host)[at(v, i, j, 0)] = x;
    else
        ((float *)v->host)[at(v, i, j, 0)] = (float)x;
}

static void put3(const kp_value *v, int64_t i, int64_t j, int64_t k, double x)
{
    if (v->tensor.dtype == KP_F64)
        ((double *)v->host)[at(v, i, j, k)] = x;
    else
        ((float *)v->host)[at(v, i, j, k)] = (float)x;
}

static int64_t dim(const kp_call *c, int a, int d)
{
    return c->args[a].tensor.rank > d ? c->args[a].tensor.shape[d] : -1;
}

static kp_status shape(kp_launch *l, const char *name, const kp_value *v, int32_t rank,
                       const int64_t *s, const char *pattern)
{
    return kp_host_api_get()->check_shape(l, name, &v->tensor, rank, s, pattern);
}

static kp_status kp__solve_host_fail_bs(kp_launch *l, int64_t bs)
{
    return kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "B: block size %lld (1 to 8)",
                                   (long long)bs);
}

/* Arguments: jv (J, index, v, u); jtu (J, u, tptr, tent, out, square); dot (a, b, partial);
 * vec (a, b, c, out, op, alpha, beta); loss (r, J, rho, loss, scale); block (J, index, tptr,
 * tent, B); bsolve (B, D, r, z, mu); jtj (J, index, tptr, tent, A). */
static kp_status check(const kp_call *c, kp_launch *l)
{
    const kp_value *a = c->args;
    const int64_t n = dim(c, 0, 0), O = dim(c, 0, 1), S = dim(c, 0, 2);
    kp_status st = KP_OK;
    switch (kind(l)->which) {
    case K_JV:
        st = shape(l, "J", &a[0], 3, (int64_t[]){-1, -1, -1}, "[n, O, S]");
        if (st == KP_OK)
            st = shape(l, "index", &a[1], 2, (int64_t[]){n, S}, "[n, S]");
        if (st == KP_OK)
            st = shape(l, "v", &a[2], 1, (int64_t[]){-1}, "[P]");
        if (st == KP_OK)
            st = shape(l, "u", &a[3], 2, (int64_t[]){n, O}, "[n, O]");
        break;
    case K_JTU: {
        const int64_t P = dim(c, 4, 0);
        st = shape(l, "J", &a[0], 3, (int64_t[]){-1, -1, -1}, "[n, O, S]");
        if (st == KP_OK)
            st = shape(l, "u", &a[1], 2, (int64_t[]){n, O}, "[n, O]");
        if (st == KP_OK)
            st = shape(l, "out", &a[4], 1, (int64_t[]){-1}, "[P]");
        if (st == KP_OK)
            st = shape(l, "tptr", &a[2], 1, (int64_t[]){P + 1}, "[P + 1]");
        if (st == KP_OK && n * S > INT32_MAX)
            st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "J: n S = %lld uses (at most %d)",
                                         (long long)(n * S), INT32_MAX);
        if (st == KP_OK)
            st = shape(l, "tent", &a[3], 1, (int64_t[]){n * S}, "[n S]");
        break;
    }
    case K_DOT:
        st = shape(l, "a", &a[0], 1, (int64_t[]){-1}, "[m]");
        if (st == KP_OK)
            st = shape(l, "b", &a[1], 1, (int64_t[]){dim(c, 0, 0)}, "[m]");
        if (st == KP_OK)
            st = shape(l, "partial", &a[2], 1, (int64_t[]){DOT_PARTS}, "[4096]");
        break;
    case K_VEC: {
        const int64_t m = dim(c, 0, 0);
        st = shape(l, "a", &a[0], 1, (int64_t[]){-1}, "[m]");
        for (int i = 1; st == KP_OK && i < 4; i++)
            st = shape(l, i == 1 ? "b" : i == 2 ? "c" : "out", &a[i], 1, (int64_t[]){m}, "[m]");
        if (st == KP_OK && (a[4].i < 0 || a[4].i > 3))
            st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "op: %lld (0 to 3)",
                                         (long long)a[4].i);
        break;
    }
    case K_BLOCK: {
        const int64_t P = dim(c, 2, 0) - 1, bs = dim(c, 4, 1);
        st = shape(l, "J", &a[0], 3, (int64_t[]){-1, -1, -1}, "[n, O, S]");
        if (st == KP_OK)
            st = shape(l, "index", &a[1], 2, (int64_t[]){n, S}, "[n, S]");
        if (st == KP_OK)
            st = shape(l, "tptr", &a[2], 1, (int64_t[]){-1}, "[P + 1]");
        if (st == KP_OK)
            st = shape(l, "tent", &a[3], 1, (int64_t[]){n * S}, "[n S]");
        if (st == KP_OK && (bs < 1 || bs > 8 || P < 0))
            st = kp__solve_host_fail_bs(l, bs);
        if (st == KP_OK)
            st = shape(l, "B", &a[4], 3, (int64_t[]){(P + bs - 1) / bs, bs, bs},
                       "[ceil(P / bs), bs, bs]");
        break;
    }
    case K_JTJ: {
        const int64_t P = dim(c, 2, 0) - 1;
        st = shape(l, "J", &a[0], 3, (int64_t[]){-1, -1, -1}, "[n, O, S]");
        if (st == KP_OK)
            st = shape(l, "index", &a[1], 2, (int64_t[]){n, S}, "[n, S]");
        if (st == KP_OK)
            st = shape(l, "tptr", &a[2], 1, (int64_t[]){-1}, "[P + 1]");
        if (st == KP_OK && n * S > INT32_MAX)
            st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "J: n S = %lld uses (at most %d)",
                                         (long long)(n * S), INT32_MAX);
        if (st == KP_OK)
            st = shape(l, "tent", &a[3], 1, (int64_t[]){n * S}, "[n S]");
        if (st == KP_OK)
            st = shape(l, "A", &a[4], 2, (int64_t[]){P, P}, "[P, P]");
        break;
    }
    case K_BSOLVE: {
        const int64_t bs = dim(c, 0, 1), P = dim(c, 1, 0);
        st = shape(l, "D", &a[1], 1, (int64_t[]){-1}, "[P]");
        if (st == KP_OK && (bs < 1 || bs > 8))
            st = kp__solve_host_fail_bs(l, bs);
        if (st == KP_OK)
            st = shape(l, "B", &a[0], 3, (int64_t[]){(P + bs - 1) / bs, bs, bs},
                       "[ceil(P / bs), bs, bs]");
        if (st == KP_OK)
            st = shape(l, "r", &a[2], 1, (int64_t[]){P}, "[P]");
        if (st == KP_OK)
            st = shape(l, "z", &a[3], 1, (int64_t[]){P}, "[P]");
        break;
    }
    default:
        st = shape(l, "r", &a[0], 2, (int64_t[]){-1, -1}, "[n, O]");
        if (st == KP_OK)
            st = shape(l, "J", &a[1], 3, (int64_t[]){n, O, -1}, "[n, O, S]");
        if (st == KP_OK)
            st = shape(l, "rho", &a[2], 2, (int64_t[]){n, O}, "[n, O]");
        if (st == KP_OK && (a[3].i < 0 || a[3].i > 2 || !(a[4].f > 0)))
            st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG,
                                         "loss %lld (0 to 2), scale %g (positive)",
                                         (long long)a[3].i, a[4].f);
    }
    for (int i = 0; st == KP_OK && i < (int)c->n_args; i++)
        if (c->desc->params[i].kind == KP_ARG_KIND_TENSOR &&
            kp_tensor_numel(&a[i].tensor) > INT32_MAX)
            st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "%s: more than 2^31 - 1 elements",
                                         c->desc->params[i].name);
    return st;
}

static void arg_real(kp_clargs *a, int f32, double v)
{
    if (f32)
        kp_clargs_float(a, (float)v);
    else
        kp_clargs_value(a, sizeof v, &v);
}

static kp_status enqueue(const kp_call *c, kp_launch *l)
{
    const sparse_kernel *k = kind(l);
    const kp_value *a = c->args;
    size_t wg = (size_t)kp_host_api_get()->tunable(l, "WG"), items = 0;
    kp_clargs g = kp_clargs_begin(kp_host_api_get(), l, names[k->which], NULL);
    switch (k->which) {
    case K_JV:
        items = (size_t)dim(c, 0, 0);
        kp_clargs_int(&g, (int32_t)dim(c, 0, 0));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 2));
        kp_clargs_int(&g, (int32_t)dim(c, 2, 0));
        for (int i = 0; i < 4; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
        break;
    case K_JTU:
        items = (size_t)dim(c, 4, 0);
        kp_clargs_int(&g, (int32_t)dim(c, 4, 0));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 0));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 2));
        kp_clargs_int(&g, (int32_t)a[5].i);
        for (int i = 0; i < 5; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
        break;
    case K_DOT:
        items = DOT_PARTS;
        kp_clargs_int(&g, (int32_t)dim(c, 0, 0));
        for (int i = 0; i < 3; i++)
            kp_clargs_tensor(&g, &a[i].tensor, 1);
        break;
    case K_VEC:
        items = (size_t)dim(c, 0, 0);
        kp_clargs_int(&g, (int32_t)items);
        kp_clargs_int(&g, (int32_t)a[4].i);
        arg_real(&g, k->f32, a[5].f);
        arg_real(&g, k->f32, a[6].f);
        for (int i = 0; i < 4; i++)
            kp_clargs_tensor(&g, &a[i].tensor, 1);
        break;
    case K_BLOCK:
        items = (size_t)dim(c, 4, 0);
        kp_clargs_int(&g, (int32_t)items);
        kp_clargs_int(&g, (int32_t)dim(c, 4, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 2, 0) - 1);
        kp_clargs_int(&g, (int32_t)dim(c, 0, 0));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 2));
        for (int i = 0; i < 5; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
        break;
    case K_JTJ:
        items = (size_t)dim(c, 4, 0);
        kp_clargs_int(&g, (int32_t)items);
        kp_clargs_int(&g, (int32_t)dim(c, 0, 0));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 0, 2));
        for (int i = 0; i < 5; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
        break;
    case K_BSOLVE:
        items = (size_t)dim(c, 0, 0);
        kp_clargs_int(&g, (int32_t)items);
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 1, 0));
        arg_real(&g, k->f32, a[4].f);
        for (int i = 0; i < 4; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
        break;
    default:
        items = (size_t)dim(c, 0, 0);
        kp_clargs_int(&g, (int32_t)items);
        kp_clargs_int(&g, (int32_t)dim(c, 0, 1));
        kp_clargs_int(&g, (int32_t)dim(c, 1, 2));
        kp_clargs_int(&g, (int32_t)a[3].i);
        arg_real(&g, k->f32, a[4].f);
        for (int i = 0; i < 3; i++)
            kp_clargs_tensor(&g, &a[i].tensor, (uint32_t)a[i].tensor.rank);
    }
    if (items == 0)
        return g.status;
    size_t global = (items + wg - 1) / wg * wg;
    return kp_clargs_enqueue(&g, 1, &global, &wg);
}

/* kp__lm_block (block) or kp__lm_jtj_row (jtj) on copies of the call's tensors in double, the
 * transposed index clamped as the kernels clamp it. */
static kp_status gather_reference(const kp_call *c, kp_launch *l)
{
    const kp_value *a = c->args;
    const int64_t n = dim(c, 0, 0), O = dim(c, 0, 1), S = dim(c, 0, 2), P = dim(c, 2, 0) - 1;
    const int jtj = kind(l)->which == K_JTJ;
    const int64_t nb = jtj ? P : dim(c, 4, 0), bs = jtj ? P : dim(c, 4, 1);
    double *J = malloc((size_t)(n * O * S + 1) * sizeof *J),
           *B = malloc((size_t)(bs * bs + 1) * sizeof *B);
    int32_t *index = malloc((size_t)(n * S + 1) * 4), *tptr = malloc((size_t)(P + 1) * 4),
            *tent = malloc((size_t)(n * S + 1) * 4);
    if (!J || !B || !index || !tptr || !tent) {
        free(J), free(B), free(index), free(tptr), free(tent);
        return kp_host_api_get()->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t s2 = 0; s2 < S; s2++) {
            index[i * S + s2] = ((const int32_t *)a[1].host)[at(&a[1], i, s2, 0)];
            for (int64_t o = 0; o < O; o++)
                J[(i * O + o) * S + s2] = ld(&a[0], i, o, s2);
        }
    const int64_t uses = n * S;
    for (int64_t q = 0; q <= P; q++) {
        const int64_t lo = q ? tptr[q - 1] : 0, v = ldi(&a[2], q);
        tptr[q] = (int32_t)(v < lo ? lo : v > uses ? uses : v);
    }
    for (int64_t e = 0; e < uses; e++) {
        const int32_t u = ldi(&a[3], e);
        tent[e] = u < 0 || u >= uses ? INT32_MAX : u;
    }
    for (int64_t k = 0; k < nb; k++) {
        if (jtj) {
            kp__lm_jtj_row(J, index, tptr, tent, (size_t)n, (size_t)O, (size_t)S, 0, (size_t)P,
                           (size_t)k, B);
            for (int64_t i = 0; i < P; i++)
                put(&a[4], k, i, B[i]);
            continue;
        }
        kp__lm_block(J, index, tptr, tent, (size_t)n, (size_t)O, (size_t)S, (size_t)P, (size_t)bs,
                     (size_t)k, B);
        for (int64_t i = 0; i < bs * bs; i++)
            put3(&a[4], k, i / bs, i % bs, B[i]);
    }
    free(J), free(B), free(index), free(tptr), free(tent);
    return KP_OK;
}

/* The same sums, in the same order, in double. */
static kp_status reference(const kp_call *c, kp_launch *l)
{
    const kp_value *a = c->args;
    switch (kind(l)->which) {
    case K_JV: {
        const int64_t n = dim(c, 0, 0), O = dim(c, 0, 1), S = dim(c, 0, 2), P = dim(c, 2, 0);
        for (int64_t i = 0; i < n; i++)
            for (int64_t o = 0; o < O; o++) {
                double t = 0;
                for (int64_t s = 0; s < S; s++) {
                    const int32_t q = ((const int32_t *)a[1].host)[at(&a[1], i, s, 0)];
                    if (q >= 0 && q < P)
                        t += ld(&a[0], i, o, s) * ld(&a[2], q, 0, 0);
                }
                put(&a[3], i, o, t);
            }
        break;
    }
    case K_JTU: {
        const int64_t n = dim(c, 0, 0), O = dim(c, 0, 1), S = dim(c, 0, 2), P = dim(c, 4, 0);
        const int64_t uses = n * S;
        for (int64_t q = 0; q < P; q++) {
            int64_t e0 = ldi(&a[2], q), e1 = ldi(&a[2], q + 1);
            e0 = e0 < 0 ? 0 : e0 > uses ? uses : e0;
            e1 = e1 < e0 ? e0 : e1 > uses ? uses : e1;
            double t = 0;
            for (int64_t e = e0; e < e1; e++) {
                const int32_t use = ldi(&a[3], e);
                if (use < 0 || use >= uses)
                    continue;
                for (int64_t o = 0; o < O; o++) {
                    const double j = ld(&a[0], use / S, o, use % S);
                    t += j * (a[5].i ? j : ld(&a[1], use / S, o, 0));
                }
            }
            put(&a[4], q, 0, t);
        }
        break;
    }
    case K_DOT: {
        const int64_t m = dim(c, 0, 0);
        for (int64_t t = 0; t < DOT_PARTS; t++) {
            double s = 0;
            for (int64_t k = t; k < m; k += DOT_PARTS)
                s += ld(&a[0], k, 0, 0) * ld(&a[1], k, 0, 0);
            put(&a[2], t, 0, s);
        }
        break;
    }
    case K_VEC: {
        const double alpha = a[5].f, beta = a[6].f;
        for (int64_t k = 0; k < dim(c, 0, 0); k++) {
            const double x = ld(&a[0], k, 0, 0), y = ld(&a[1], k, 0, 0), z = ld(&a[2], k, 0, 0);
            double r;
            if (a[4].i == 0)
                r = alpha * x + beta * y;
            else if (a[4].i == 1)
                r = y + alpha * z > 0 ? x / (y + alpha * z) : x;
            else if (a[4].i == 2)
                r = x + alpha * y * z;
            else
                r = x < alpha ? alpha : x > beta ? beta : x;
            put(&a[3], k, 0, r);
        }
        break;
    }
    case K_BLOCK:
    case K_JTJ:
        return gather_reference(c, l);
    case K_BSOLVE: {
        const int64_t nb = dim(c, 0, 0), bs = dim(c, 0, 1), P = dim(c, 1, 0);
        double B[64], D[8], r[8], z[8];
        for (int64_t k = 0; k < nb; k++) {
            const int64_t q0 = k * bs, b = bs < P - q0 ? bs : P - q0;
            for (int64_t i = 0; i < bs * bs; i++)
                B[i] = ld(&a[0], k, i / bs, i % bs);
            for (int64_t i = 0; i < b; i++) {
                D[i] = ld(&a[1], q0 + i, 0, 0);
                r[i] = ld(&a[2], q0 + i, 0, 0);
            }
            kp__lm_block_solve(B, D, r, a[4].f, (size_t)b, (size_t)bs, z);
            for (int64_t i = 0; i < b; i++)
                put(&a[3], q0 + i, 0, z[i]);
        }
        break;
    }
    default: {
        kp_lm_options o = kp_lm_options_default();
        o.loss = (kp_loss)a[3].i;
        o.loss_scale = a[4].f;
        const int64_t n = dim(c, 0, 0), O = dim(c, 0, 1), S = dim(c, 1, 2);
        for (int64_t i = 0; i < n; i++)
            for (int64_t q = 0; q < O; q++) {
                const double x = ld(&a[0], i, q, 0);
                double rho, rho1;
                kp__lm_loss(&o, x * x, &rho, &rho1);
                const double w = sqrt(rho1);
                put(&a[2], i, q, rho);
                put(&a[0], i, q, w * x);
                for (int64_t k = 0; k < S; k++) {
                    const int64_t e = at(&a[1], i, q, k);
                    if (a[1].tensor.dtype == KP_F64)
                        ((double *)a[1].host)[e] *= w;
                    else
                        ((float *)a[1].host)[e] = (float)(((float *)a[1].host)[e] * w);
                }
            }
    }
    }
    (void)l;
    return KP_OK;
}

static kp_status sample(kp_sample *s, const char *size)
{
    const sparse_kernel *k = kp_host_api_get()->sample_kernel_user(s);
    const int32_t dt = k->f32 ? KP_F32 : KP_F64;
    const int one = strcmp(size, "one") == 0;
    const int64_t n = one ? 1 : 211, O = one ? 1 : 2, S = one ? 1 : 3, P = one ? 1 : 101;
    const kp_host_api *h = kp_host_api_get();
    kp_status st = KP_OK;
    switch (k->which) {
    case K_JV:
    case K_JTU:
    case K_BLOCK:
    case K_JTJ: {
        int32_t *index = malloc((size_t)(n * S) * sizeof *index);
        if (!index)
            return KP_ERR_OUT_OF_MEMORY;
        for (int64_t e = 0; e < n * S; e++)
            index[e] = (int32_t)(h->sample_random(s) % (uint64_t)P);
        st = h->sample_tensor(s, "J", dt, 3, (int64_t[]){n, O, S}, -1, 1, NULL);
        if (k->which == K_BLOCK || k->which == K_JTJ) {
            int32_t *ix = NULL, *tptr = NULL, *tent = NULL;
            const int64_t bs = one ? 1 : 3, nb = (P + bs - 1) / bs;
            if (st == KP_OK)
                st = h->sample_tensor(s, "index", KP_I32, 2, (int64_t[]){n, S}, 0, 1, (void **)&ix);
            if (st == KP_OK)
                st = h->sample_tensor(s, "tptr", KP_I32, 1, (int64_t[]){P + 1}, 0, 1,
                                      (void **)&tptr);
            if (st == KP_OK)
                st = h->sample_tensor(s, "tent", KP_I32, 1, (int64_t[]){n * S}, 0, 1,
                                      (void **)&tent);
            if (st == KP_OK) {
                memcpy(ix, index, (size_t)(n * S) * sizeof *ix);
                kp__lm_sparse_transpose(index, (size_t)n, (size_t)S, (size_t)P, tptr, tent);
                st = k->which == K_JTJ
                         ? h->sample_tensor(s, "A", dt, 2, (int64_t[]){P, P}, 0, 0, NULL)
                         : h->sample_tensor(s, "B", dt, 3, (int64_t[]){nb, bs, bs}, 0, 0, NULL);
            }
        } else if (k->which == K_JV) {
            int32_t *ix = NULL;
            if (st == KP_OK)
                st = h->sample_tensor(s, "index", KP_I32, 2, (int64_t[]){n, S}, 0, 1, (void **)&ix);
            if (st == KP_OK)
                memcpy(ix, index, (size_t)(n * S) * sizeof *ix);
            if (st == KP_OK)
                st = h->sample_tensor(s, "v", dt, 1, &P, -1, 1, NULL);
            if (st == KP_OK)
                st = h->sample_tensor(s, "u", dt, 2, (int64_t[]){n, O}, 0, 0, NULL);
        } else {
            int32_t *tptr = NULL, *tent = NULL;
            if (st == KP_OK)
                st = h->sample_tensor(s, "u", dt, 2, (int64_t[]){n, O}, -1, 1, NULL);
            if (st == KP_OK)
                st = h->sample_tensor(s, "tptr", KP_I32, 1, (int64_t[]){P + 1}, 0, 1,
                                      (void **)&tptr);
            if (st == KP_OK)
                st = h->sample_tensor(s, "tent", KP_I32, 1, (int64_t[]){n * S}, 0, 1,
                                      (void **)&tent);
            if (st == KP_OK) {
                memset(tptr, 0, (size_t)(P + 1) * sizeof *tptr);
                for (int64_t e = 0; e < n * S; e++)
                    tptr[index[e] + 1]++;
                for (int64_t q = 0; q < P; q++)
                    tptr[q + 1] += tptr[q];
                int32_t fill[102];
                memcpy(fill, tptr, (size_t)(P + 1) * sizeof *fill);
                for (int64_t e = 0; e < n * S; e++)
                    tent[fill[index[e]]++] = (int32_t)e;
                st = h->sample_tensor(s, "out", dt, 1, &P, 0, 0, NULL);
            }
            if (st == KP_OK)
                st = h->sample_int(s, "square", strcmp(size, "prime") == 0);
        }
        free(index);
        break;
    }
    case K_BSOLVE: {
        /* Blocks of 3 made positive definite (a dominant diagonal), and one that is not, so
         * that the fallback runs too; "one" is a single negative 1 x 1 block. */
        const int64_t bs = one ? 1 : 3, nb = (P + bs - 1) / bs;
        double *B = NULL;
        st = h->sample_tensor(s, "B", dt, 3, (int64_t[]){nb, bs, bs}, -0.5, 0.5, (void **)&B);
        for (int64_t kk = 0; st == KP_OK && kk < nb; kk++)
            for (int64_t i = 0; i < bs; i++)
                for (int64_t j = 0; j < bs; j++) {
                    const double v = i == j ? (kk == 1 || one ? -1.0 : 3.0 + 0.1 * (double)i)
                                            : 0.1 * (double)((i + j + kk) % 5) - 0.2;
                    if (dt == KP_F64)
                        B[(kk * bs + i) * bs + j] = v;
                    else
                        ((float *)B)[(kk * bs + i) * bs + j] = (float)v;
                }
        if (st == KP_OK)
            st = h->sample_tensor(s, "D", dt, 1, &P, 0.5, 1.5, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "r", dt, 1, &P, -1, 1, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "z", dt, 1, &P, 0, 0, NULL);
        if (st == KP_OK)
            st = h->sample_float(s, "mu", 0.25);
        break;
    }
    case K_DOT: {
        const int64_t m = one ? 1 : 10007, parts = DOT_PARTS;
        st = h->sample_tensor(s, "a", dt, 1, &m, -1, 1, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "b", dt, 1, &m, -1, 1, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "partial", dt, 1, &parts, 0, 0, NULL);
        break;
    }
    case K_VEC: {
        const int64_t m = one ? 1 : 1009;
        const char *t[] = {"a", "b", "c", "out"};
        for (int i = 0; st == KP_OK && i < 4; i++)
            st = h->sample_tensor(s, t[i], dt, 1, &m, i == 1 ? 0.5 : -1, 1.5, NULL);
        if (st == KP_OK)
            st = h->sample_int(s, "op", one ? 0 : (int64_t)(h->sample_random(s) % 4));
        if (st == KP_OK)
            st = h->sample_float(s, "alpha", 0.75);
        if (st == KP_OK)
            st = h->sample_float(s, "beta", 1.25);
        break;
    }
    default:
        st = h->sample_tensor(s, "r", dt, 2, (int64_t[]){n, O}, -3, 3, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "J", dt, 3, (int64_t[]){n, O, S}, -1, 1, NULL);
        if (st == KP_OK)
            st = h->sample_tensor(s, "rho", dt, 2, (int64_t[]){n, O}, 0, 0, NULL);
        if (st == KP_OK)
            st = h->sample_int(s, "loss", one ? 1 : (int64_t)(h->sample_random(s) % 3));
        if (st == KP_OK)
            st = h->sample_float(s, "scale", 0.8);
    }
    return st;
}

#define T(n, acc, dt, doc_)                                                                        \
    {                                                                                              \
        .name = n, .kind = KP_ARG_KIND_TENSOR, .access = acc, .dtypes = dt, .doc = doc_            \
    }

kp_status kp__sparse_kernels(kp_runtime *rt, int f32, kp_kernel *out[KP__SPARSE_KERNELS])
{
    const uint32_t R = KP_DT(f32 ? KP_F32 : KP_F64), I = KP_DT(KP_I32);
    const kp_param_desc jv[] = {T("J", KP_ACCESS_IN, R, "[n, O, S] the Jacobian in block form"),
                                T("index", KP_ACCESS_IN, I, "[n, S] each slot's parameter"),
                                T("v", KP_ACCESS_IN, R, "[P]"),
                                T("u", KP_ACCESS_OUT, R, "[n, O] J v")};
    const kp_param_desc jtu[] = {
        T("J", KP_ACCESS_IN, R, "[n, O, S]"),
        T("u", KP_ACCESS_IN, R, "[n, O]"),
        T("tptr", KP_ACCESS_IN, I, "[P + 1] parameter q's uses are tent[tptr[q] .. tptr[q+1]-1]"),
        T("tent", KP_ACCESS_IN, I, "[n S] uses, i * S + s, grouped by parameter"),
        T("out", KP_ACCESS_OUT, R, "[P] J^T u, or the diagonal of J^T J"),
        {.name = "square",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .flags = KP_PARAM_OPTIONAL,
         .doc = "1: sum J^2 (the diagonal), ignoring u"}};
    const kp_param_desc dot[] = {
        T("a", KP_ACCESS_IN, R, "[m]"), T("b", KP_ACCESS_IN, R, "[m]"),
        T("partial", KP_ACCESS_OUT, R, "[4096] partial t sums a[k] b[k] over k = t mod 4096")};
    const kp_param_desc vec[] = {
        T("a", KP_ACCESS_IN, R, "[m]"),
        T("b", KP_ACCESS_IN, R, "[m]"),
        T("c", KP_ACCESS_IN, R, "[m]"),
        {.name = "out",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_OUT,
         .dtypes = R,
         .flags = KP_PARAM_ALIAS_INPUTS,
         .doc = "[m]; may be one of a, b, c"},
        {.name = "op",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .doc = "0: alpha a + beta b; 1: a / (b + alpha c) where positive, else a; 2: a + alpha "
                "b c; 3: a clamped to [alpha, beta]"},
        {.name = "alpha", .kind = KP_ARG_KIND_FLOAT, .access = KP_ACCESS_IN},
        {.name = "beta",
         .kind = KP_ARG_KIND_FLOAT,
         .access = KP_ACCESS_IN,
         .flags = KP_PARAM_OPTIONAL}};
    const kp_param_desc loss[] = {
        T("r", KP_ACCESS_INOUT, R, "[n, O] in: residuals; out: weighted"),
        T("J", KP_ACCESS_INOUT, R, "[n, O, S] in: Jacobian; out: rows weighted"),
        T("rho", KP_ACCESS_OUT, R, "[n, O] rho(r^2)"),
        {.name = "loss",
         .kind = KP_ARG_KIND_INT,
         .access = KP_ACCESS_IN,
         .doc = "kp_loss: 0 squared, 1 Huber, 2 Cauchy"},
        {.name = "scale",
         .kind = KP_ARG_KIND_FLOAT,
         .access = KP_ACCESS_IN,
         .doc = "the robust loss's a"}};
    const kp_param_desc block[] = {
        T("J", KP_ACCESS_IN, R, "[n, O, S]"), T("index", KP_ACCESS_IN, I, "[n, S]"),
        T("tptr", KP_ACCESS_IN, I, "[P + 1] the transposed index's starts"),
        T("tent", KP_ACCESS_IN, I, "[n S] the transposed index's uses"),
        T("B", KP_ACCESS_OUT, R, "[ceil(P / bs), bs, bs] the diagonal blocks of J^T J")};
    const kp_param_desc bsolve[] = {
        T("B", KP_ACCESS_IN, R, "[ceil(P / bs), bs, bs]"),
        T("D", KP_ACCESS_IN, R, "[P] scaling"),
        T("r", KP_ACCESS_IN, R, "[P]"),
        T("z", KP_ACCESS_OUT, R, "[P] (B + mu diag D)^-1 r"),
        {.name = "mu", .kind = KP_ARG_KIND_FLOAT, .access = KP_ACCESS_IN, .doc = "damping"}};
    const kp_param_desc jtj[] = {
        T("J", KP_ACCESS_IN, R, "[n, O, S]"), T("index", KP_ACCESS_IN, I, "[n, S]"),
        T("tptr", KP_ACCESS_IN, I, "[P + 1] the transposed index's starts"),
        T("tent", KP_ACCESS_IN, I, "[n S] the transposed index's uses"),
        T("A", KP_ACCESS_OUT, R, "[P, P] J^T J")};
    const kp_param_desc *params[K_COUNT] = {jv, jtu, dot, vec, loss, block, bsolve, jtj};
    const uint32_t n_params[K_COUNT] = {4, 6, 3, 7, 5, 5, 5, 5};
    static const int64_t wgs[] = {32, 64, 128, 256};
    static const char *const sizes[] = {"one", "prime", NULL};
    const kp_tunable_desc wg = {.name = "WG",
                                .default_value = 64,
                                .allowed = wgs,
                                .n_allowed = 4,
                                .flags = KP_TUNABLE_WORKGROUP,
                                .doc = "work-items per group"};
    static const char *const summaries[K_COUNT] = {
        "J v for a block Jacobian",
        "J^T u (or diag J^T J) through the transposed index",
        "4096 partial dot products",
        "vector steps of conjugate gradients",
        "a robust loss applied to residuals and Jacobian rows",
        "the diagonal blocks of J^T J through the transposed index",
        "block-Jacobi: each block of (J^T J + mu D) solved by Cholesky",
        "J^T J as a dense matrix, one row per work-item through the transposed index"};
    char *source = NULL;
    size_t len = 0;
    source = malloc(1);
    if (source)
        source[0] = '\0';
    kp__str_append(&source, &len, "%s%s",
                   f32 ? "typedef float real;\n"
                       : "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double real;\n",
                   kp_kernel_sparse_cl);
    if (!source)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "solve: out of host memory");
    kp_status st = KP_OK;
    for (int k = 0; st == KP_OK && k < K_COUNT; k++) {
        char name[32];
        snprintf(name, sizeof name, "solve.%s_%s", names[k], f32 ? "f32" : "f64");
        const kp_kernel_desc desc = {.struct_size = sizeof desc,
                                     .name = name,
                                     .summary = summaries[k],
                                     .params = params[k],
                                     .n_params = n_params[k],
                                     .tunables = &wg,
                                     .n_tunables = 1,
                                     .source = source,
                                     .source_name = "solve-sparse.cl",
                                     .entry = names[k],
                                     .check = check,
                                     .enqueue = enqueue,
                                     .reference = reference,
                                     .sample = sample,
                                     .verify_sizes = sizes,
                                     .atol = f32 ? 1e-5 : 1e-12,
                                     .rtol = f32 ? 1e-5 : 1e-12,
                                     .user = (void *)&kernels[f32][k],
                                     .supported = supported};
        st = kp__solve_register(rt, &desc, &out[k]);
    }
    free(source);
    return st;
}
