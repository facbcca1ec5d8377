// SPDX-License-Identifier: Apache-2.0
/* Residuals compiled to kernels: the generated evaluation kernel (r and its block Jacobian for n
 * instances in one dispatch), registered at run time with its host reference, sample and cost. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve-internal.h"

struct kp_residual {
    kp_runtime *rt;
    kp_kernel *kernel;
    kp__compiled *compiled;
    kp_precision precision;
    kp_buffer *status; /* two ints: the first bad index, the first non-finite instance */
};

/* The parameters in order; data is left out of graphs without data slots. */
enum { A_DATA, A_INDEX, A_PARAMS, A_R, A_JAC, A_STATUS, A_COUNT };

static int has_data(const kp__compiled *c)
{
    return c->graph->n_data > 0;
}

/* Argument `which` of a call: its position among the descriptor's parameters. */
static const kp_value *arg(const kp_call *call, const kp__compiled *c, int which)
{
    return &call->args[has_data(c) ? which : which - 1];
}

/* One instance a work-item (LANES 1), or LANES of them with each value a vector of instances:
 * PoCL runs a vector's exp and log as SLEEF's vector functions, where its work-group loop over
 * scalar calls stays scalar (docs/performance-log/solve.md). The lanes of the last work-item
 * past n repeat instance n - 1 and, like a lane whose index is out of range, store nothing. */
static const char *const kernel_text =
    "__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))\n"
    "void solve_eval(const int n, const int P,\n"
    "#if KP_ND > 0\n"
    "                __global const real *data, const kp_view2 dv,\n"
    "#endif\n"
    "                __global const int *index, const kp_view2 iv,\n"
    "                __global const real *params, const kp_view1 pv,\n"
    "                __global real *r, const kp_view2 rv, __global real *jac, const kp_view3 jv,\n"
    "                __global int *status, const kp_view1 sv)\n"
    "#if LANES == 1\n"
    "{\n"
    "    const int i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    real d[KP_ND > 0 ? KP_ND : 1], p[KP_NS], rr[KP_NO], J[KP_NO * KP_NS];\n"
    "#if KP_ND > 0\n"
    "    for (int k = 0; k < KP_ND; k++)\n"
    "        d[k] = data[kp_at2(dv, i, k)];\n"
    "#endif\n"
    "    for (int s = 0; s < KP_NS; s++) {\n"
    "        const int q = index[kp_at2(iv, i, s)];\n"
    "        if (q < 0 || q >= P) {\n"
    "            atomic_min(&status[kp_at1(sv, 0)], i);\n"
    "            return;\n"
    "        }\n"
    "        p[s] = params[kp_at1(pv, q)];\n"
    "    }\n"
    "    kp_residual(d, p, rr, J);\n"
    "    int bad = 0;\n"
    "    for (int o = 0; o < KP_NO; o++) {\n"
    "        r[kp_at2(rv, i, o)] = rr[o];\n"
    "        bad |= !isfinite(rr[o]);\n"
    "        for (int s = 0; s < KP_NS; s++) {\n"
    "            jac[kp_at3(jv, i, o, s)] = J[o * KP_NS + s];\n"
    "            bad |= !isfinite(J[o * KP_NS + s]);\n"
    "        }\n"
    "    }\n"
    "    if (bad)\n"
    "        atomic_min(&status[kp_at1(sv, 1)], i);\n"
    "}\n"
    "#else\n"
    "{\n"
    "    const int i0 = get_global_id(0) * LANES;\n"
    "    if (i0 >= n)\n"
    "        return;\n"
    "    real dl[KP_ND > 0 ? KP_ND * LANES : 1], pl[KP_NS * LANES], rl[KP_NO * LANES],\n"
    "        Jl[KP_NO * KP_NS * LANES];\n"
    "    realv d[KP_ND > 0 ? KP_ND : 1], p[KP_NS], rr[KP_NO], J[KP_NO * KP_NS];\n"
    "    int store[LANES];\n"
    "    for (int j = 0; j < LANES; j++) {\n"
    "        const int i = min(i0 + j, n - 1);\n"
    "        store[j] = i0 + j < n;\n"
    "#if KP_ND > 0\n"
    "        for (int k = 0; k < KP_ND; k++)\n"
    "            dl[k * LANES + j] = data[kp_at2(dv, i, k)];\n"
    "#endif\n"
    "        for (int s = 0; s < KP_NS; s++) {\n"
    "            const int q = index[kp_at2(iv, i, s)];\n"
    "            const int good = q >= 0 && q < P;\n"
    "            if (!good && store[j])\n"
    "                atomic_min(&status[kp_at1(sv, 0)], i);\n"
    "            store[j] &= good;\n"
    "            pl[s * LANES + j] = good ? params[kp_at1(pv, q)] : 0;\n"
    "        }\n"
    "    }\n"
    "#if KP_ND > 0\n"
    "    for (int k = 0; k < KP_ND; k++)\n"
    "        d[k] = KP_CAT(vload, LANES)(k, dl);\n"
    "#endif\n"
    "    for (int s = 0; s < KP_NS; s++)\n"
    "        p[s] = KP_CAT(vload, LANES)(s, pl);\n"
    "    kp_residual(d, p, rr, J);\n"
    "    for (int o = 0; o < KP_NO; o++)\n"
    "        KP_CAT(vstore, LANES)(rr[o], o, rl);\n"
    "    for (int o = 0; o < KP_NO * KP_NS; o++)\n"
    "        KP_CAT(vstore, LANES)(J[o], o, Jl);\n"
    "    int bad = n;\n"
    "    for (int j = 0; j < LANES; j++) {\n"
    "        if (!store[j])\n"
    "            continue;\n"
    "        const int i = i0 + j;\n"
    "        for (int o = 0; o < KP_NO; o++) {\n"
    "            const real v = rl[o * LANES + j];\n"
    "            r[kp_at2(rv, i, o)] = v;\n"
    "            bad = isfinite(v) ? bad : min(bad, i);\n"
    "            for (int s = 0; s < KP_NS; s++) {\n"
    "                const real w = Jl[(o * KP_NS + s) * LANES + j];\n"
    "                jac[kp_at3(jv, i, o, s)] = w;\n"
    "                bad = isfinite(w) ? bad : min(bad, i);\n"
    "            }\n"
    "        }\n"
    "    }\n"
    "    if (bad < n)\n"
    "        atomic_min(&status[kp_at1(sv, 1)], bad);\n"
    "}\n"
    "#endif\n";

kp_status kp__solve_make_source(kp__compiled *c)
{
    kp_expr_graph *g = c->graph;
    size_t len = 0;
    char *src = malloc(1);
    if (src)
        src[0] = '\0';
    kp__str_append(&src, &len,
                   "/* Generated by Kernelport's solve layer from a residual graph. */\n%s"
                   "#define KP_ND %u\n#define KP_NS %u\n#define KP_NO %u\n"
                   "/* kp_residual's values: one instance's, or LANES instances' as a vector */\n"
                   "#ifndef LANES\n#define LANES 1\n#endif\n"
                   "#if LANES == 1\n"
                   "typedef real realv;\n"
                   "#define KP_SEL(c, a, b) ((c) ? (a) : (b))\n"
                   "#define KP_POWN(x, k) pown(x, k)\n"
                   "#else\n"
                   "typedef KP_CAT(%s, LANES) realv;\n"
                   "#define KP_SEL(c, a, b) select((realv)(b), (realv)(a), c)\n"
                   "#define KP_POWN(x, k) pown(x, (KP_CAT(int, LANES))(k))\n"
                   "#endif\n",
                   c->f32 ? "typedef float real;\n"
                          : "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\ntypedef double real;\n",
                   g->n_data, g->n_params, g->n_outputs, c->f32 ? "float" : "double");
    if (!src)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->name);
    kp_status st = kp__expr_codegen(g, "kp_residual", c->f32, &src, &len);
    if (st != KP_OK) {
        free(src);
        return kp__solve_fail(st, "%s: %s", c->name, g->message);
    }
    const char *values = strstr(src, "): ");
    c->n_values = values ? atoi(values + 3) : 0;
    c->calls_library = kp__expr_calls_library(g);
    c->source = src;
    return KP_OK;
}

static kp_status make_residual(kp__compiled *c)
{
    kp_status st = kp__solve_make_source(c);
    size_t len = strlen(c->source);
    if (st == KP_OK && !kp__str_append(&c->source, &len, "%s", kernel_text))
        st = kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->name);
    return st;
}

static const kp__compiled *user(kp_launch *l)
{
    return kp_host_api_get()->kernel_user(l);
}

static kp_status check(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const kp_expr_graph *g = c->graph;
    const kp_tensor *ix = &arg(call, c, A_INDEX)->tensor;
    const int64_t n = ix->rank == 2 ? ix->shape[0] : -1, O = g->n_outputs, S = g->n_params;
    const int64_t P = arg(call, c, A_PARAMS)->tensor.shape[0];
    const int dt = c->f32 ? KP_F32 : KP_F64;
    kp_status st = kp_host_api_get()->check_shape(l, "index", ix, 2, (int64_t[]){-1, S}, "[n, S]");
    if (st == KP_OK && n > INT_MAX / 2)
        st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "index: %lld instances (at most %d)",
                                     (long long)n, INT_MAX / 2);
    if (st == KP_OK && P > INT_MAX)
        st = kp_host_api_get()->fail(l, KP_ERR_INVALID_ARG, "params: %lld values (at most %d)",
                                     (long long)P, INT_MAX);
    if (st == KP_OK && has_data(c))
        st = kp_host_api_get()->check_shape(l, "data", &arg(call, c, A_DATA)->tensor, 2,
                                            (int64_t[]){n, g->n_data}, "[n, D]");
    if (st == KP_OK)
        st = kp_host_api_get()->check_shape(l, "r", &arg(call, c, A_R)->tensor, 2,
                                            (int64_t[]){n, O}, "[n, O]");
    if (st == KP_OK)
        st = kp_host_api_get()->check_shape(l, "jac", &arg(call, c, A_JAC)->tensor, 3,
                                            (int64_t[]){n, O, S}, "[n, O, S]");
    if (st == KP_OK)
        st = kp_host_api_get()->check_shape(l, "status", &arg(call, c, A_STATUS)->tensor, 1,
                                            (int64_t[]){2}, "[2]");
    for (int a = has_data(c) ? A_DATA : A_INDEX; st == KP_OK && a <= A_JAC; a++)
        if (a != A_INDEX && arg(call, c, a)->tensor.dtype != dt)
            st = kp_host_api_get()->fail(
                l, KP_ERR_INVALID_ARG, "argument %d is %s; this kernel computes in %s", a,
                kp_dtype_name((kp_dtype)arg(call, c, a)->tensor.dtype), c->f32 ? "f32" : "f64");
    return st;
}

static kp_status enqueue(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const kp_tensor *ix = &arg(call, c, A_INDEX)->tensor;
    size_t wg = (size_t)kp_host_api_get()->tunable(l, "WG"), n = (size_t)ix->shape[0];
    const size_t lanes = (size_t)kp_host_api_get()->tunable(l, "LANES");
    if (n == 0)
        return KP_OK;
    const size_t items = (n + lanes - 1) / lanes, global = (items + wg - 1) / wg * wg;
    kp_clargs a = kp_clargs_begin(kp_host_api_get(), l, "solve_eval", NULL);
    kp_clargs_int(&a, (int32_t)n);
    kp_clargs_int(&a, (int32_t)arg(call, c, A_PARAMS)->tensor.shape[0]);
    for (int i = has_data(c) ? A_DATA : A_INDEX; i <= A_STATUS; i++)
        kp_clargs_tensor(&a, &arg(call, c, i)->tensor, (uint32_t)arg(call, c, i)->tensor.rank);
    return kp_clargs_enqueue(&a, 1, &global, &wg);
}

static double load(const kp_value *v, int64_t i)
{
    return kp_dtype_load(v->host, (kp_dtype)v->tensor.dtype, i);
}

static void store(const kp_value *v, int64_t i, double x)
{
    if (v->tensor.dtype == KP_F64)
        ((double *)v->host)[i] = x;
    else
        ((float *)v->host)[i] = (float)x;
}

/* The same contract in double, through the interpreter (its dual numbers, not the generated
 * symbolic derivatives). */
static kp_status reference(const kp_call *call, kp_launch *l)
{
    const kp__compiled *c = user(l);
    const kp_expr_graph *g = c->graph;
    const uint32_t D = g->n_data, S = g->n_params, O = g->n_outputs;
    const kp_value *vd = has_data(c) ? arg(call, c, A_DATA) : NULL, *vi = arg(call, c, A_INDEX),
                   *vp = arg(call, c, A_PARAMS), *vr = arg(call, c, A_R), *vj = arg(call, c, A_JAC),
                   *vs = arg(call, c, A_STATUS);
    const kp_tensor *td = vd ? &vd->tensor : NULL, *ti = &vi->tensor, *tp = &vp->tensor,
                    *tr = &vr->tensor, *tj = &vj->tensor, *ts = &vs->tensor;
    const int64_t n = ti->shape[0], P = tp->shape[0];
    int32_t top = 0;
    for (uint32_t o = 0; o < O; o++)
        top = g->outputs[o] > top ? g->outputs[o] : top;
    double *scratch =
        malloc(((size_t)(top + 1) * (1 + S) + D + S + O + (size_t)O * S) * sizeof *scratch);
    if (!scratch)
        return kp_host_api_get()->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    double *d = scratch + (size_t)(top + 1) * (1 + S), *p = d + D, *r = p + S, *J = r + O;
    int32_t *status = vs->host;
    for (int64_t i = 0; i < n; i++) {
        int ok = 1;
        for (uint32_t k = 0; k < D; k++)
            d[k] = load(vd, td->offset + i * td->strides[0] + k * td->strides[1]);
        for (uint32_t s = 0; s < S && ok; s++) {
            int32_t q =
                ((const int32_t *)vi->host)[ti->offset + i * ti->strides[0] + s * ti->strides[1]];
            ok = q >= 0 && q < P;
            if (ok)
                p[s] = load(vp, tp->offset + q * tp->strides[0]);
        }
        int32_t *bad_index = &status[ts->offset], *bad_value = &status[ts->offset + ts->strides[0]];
        if (!ok) {
            *bad_index = *bad_index < i ? *bad_index : (int32_t)i;
            continue;
        }
        kp__expr_eval(g, d, p, r, J, scratch);
        int bad = 0;
        for (uint32_t o = 0; o < O; o++) {
            /* Rounded to the storage precision before the finiteness test, as the device
             * computes in it. */
            store(vr, tr->offset + i * tr->strides[0] + o * tr->strides[1], r[o]);
            bad |= !isfinite(load(vr, tr->offset + i * tr->strides[0] + o * tr->strides[1]));
            for (uint32_t s = 0; s < S; s++) {
                int64_t at =
                    tj->offset + i * tj->strides[0] + o * tj->strides[1] + s * tj->strides[2];
                store(vj, at, J[o * S + s]);
                bad |= !isfinite(load(vj, at));
            }
        }
        if (bad)
            *bad_value = *bad_value < i ? *bad_value : (int32_t)i;
    }
    free(scratch);
    return KP_OK;
}

static kp_status sample(kp_sample *s, const char *size)
{
    const kp__compiled *c = kp_host_api_get()->sample_kernel_user(s);
    const kp_expr_graph *g = c->graph;
    int64_t n = strcmp(size, "one") == 0 ? 1 : strcmp(size, "prime") == 0 ? 1009 : 1 << 20;
    int64_t P = 3 * (int64_t)g->n_params + 1;
    const int32_t dt = c->f32 ? KP_F32 : KP_F64;
    kp_status st = KP_OK;
    /* Data and parameters in [0.5, 1.5]: away from the poles of log, sqrt and division. */
    if (has_data(c))
        st = kp_host_api_get()->sample_tensor(s, "data", dt, 2, (int64_t[]){n, g->n_data}, 0.5, 1.5,
                                              NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(s, "index", KP_I32, 2, (int64_t[]){n, g->n_params}, 0,
                                              (double)P, NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(s, "params", dt, 1, &P, 0.5, 1.5, NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(s, "r", dt, 2, (int64_t[]){n, g->n_outputs}, 0, 0,
                                              NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(
            s, "jac", dt, 3, (int64_t[]){n, g->n_outputs, g->n_params}, 0, 0, NULL);
    if (st == KP_OK)
        st = kp_host_api_get()->sample_tensor(s, "status", KP_I32, 1, (int64_t[]){2}, 0, 0, NULL);
    return st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    const kp__compiled *c = call->desc->user;
    const kp_expr_graph *g = c->graph;
    const double n = (double)arg(call, c, A_INDEX)->tensor.shape[0], e = c->f32 ? 4 : 8;
    out->flops = n * c->n_values;
    out->bytes = n * (e * (g->n_data + g->n_outputs * (1.0 + g->n_params) + g->n_params) +
                      4.0 * g->n_params);
}

/* A work-item's values (n_values of them, LANES wide) stay within this: PoCL's work-group
 * function ran out of an 8 MiB thread stack at 4168 values x 16 lanes in f64 (533 KB), where
 * 2116 x 16 (270 KB) ran. */
enum { LANES_BYTES = 64 * 1024 };

/* LANES 0 resolves on CPUs to a 512-bit vector of instances (8 in f64, 16 in f32) for a residual
 * that calls exp, log and the like, whose vector forms pay there; to 1 for one of arithmetic and
 * sqrt alone, which a vector does not speed up (the mesh edge term; a cubic ran 1.2 to 1.5
 * times as long), and off CPUs, where an instance a work-item fills a GPU
 * (docs/performance-log/solve.md). Any value, chosen or set, is halved until the values fit
 * LANES_BYTES. */
static const char *resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    if (index != 1)
        return NULL;
    const kp__compiled *c = user(l);
    const kp_device_info *d = kp_host_api_get()->device(l);
    const int cpu = d && d->type == KP_DEVICE_CPU;
    const char *why = NULL;
    int64_t lanes = value;
    if (value == 0) {
        lanes = cpu && c->calls_library ? (c->f32 ? 16 : 8) : 1;
        why = !cpu               ? "an instance a work-item off CPUs"
              : c->calls_library ? "a 512-bit vector of instances on CPUs (vector exp, log, ...)"
                                 : "an instance a work-item: no exp, log, ... to vectorize";
    }
    const int64_t per_lane = (int64_t)(c->n_values + 1) * (c->f32 ? 4 : 8);
    if (lanes > 1 && lanes * per_lane > LANES_BYTES) {
        while (lanes > 1 && lanes * per_lane > LANES_BYTES)
            lanes /= 2;
        why = "fewer lanes: a work-item's values kept within 64 KiB (PoCL's stack)";
    }
    *resolved = lanes;
    return why;
}

static kp_status create_residual(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                                 kp_residual **out)
{
    if (out)
        *out = NULL;
    if (!rt || !g || !out)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_residual_create: NULL argument");
    if (g->status != KP_OK || g->n_outputs == 0 || g->n_params == 0)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_residual_create: %s",
                              g->status != KP_OK ? g->message
                              : g->n_outputs     ? "the graph has no parameters"
                                                 : "the graph has no outputs");
    kp_precision prec;
    kp_status st = kp__solve_precision(rt, precision, &prec);
    if (st != KP_OK)
        return st;
    char name[64];
    snprintf(name, sizeof name, "solve.r%016llx_%s", (unsigned long long)kp__expr_key(g),
             kp_precision_name(prec));
    kp__compiled *c;
    st = kp__compiled_get(name, g, prec == KP_PRECISION_F32, make_residual, &c);
    if (st != KP_OK)
        return st;
    const uint32_t dts = KP_DT(prec == KP_PRECISION_F32 ? KP_F32 : KP_F64);
    const kp_param_desc all[A_COUNT] = {
        {.name = "data",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_IN,
         .dtypes = dts,
         .doc = "[n, D] each instance's data"},
        {.name = "index",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_IN,
         .dtypes = KP_DT(KP_I32),
         .doc = "[n, S] each parameter slot's index into params"},
        {.name = "params",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_IN,
         .dtypes = dts,
         .doc = "[P] the parameters"},
        {.name = "r",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_OUT,
         .dtypes = dts,
         .doc = "[n, O] the residuals"},
        {.name = "jac",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_OUT,
         .dtypes = dts,
         .doc = "[n, O, S] d r[i, o] / d params[index[i, s]]"},
        {.name = "status",
         .kind = KP_ARG_KIND_TENSOR,
         .access = KP_ACCESS_INOUT,
         .dtypes = KP_DT(KP_I32),
         .doc = "[2] lowered to the first instance with an index outside [0, P), and the first "
                "with a non-finite r or jac"},
    };
    static const int64_t wgs[] = {32, 64, 128, 256};
    static const char *const verify_sizes[] = {"one", "prime", NULL};
    static const char *const bench_sizes[] = {"large", NULL};
    static const int64_t lanes[] = {0, 1, 2, 4, 8, 16};
    const kp_tunable_desc tunables[] = {
        {.name = "WG",
         .default_value = 64,
         .allowed = wgs,
         .n_allowed = 4,
         .flags = KP_TUNABLE_WORKGROUP,
         .doc = "work-items per work-group"},
        {.name = "LANES",
         .default_value = 0,
         .allowed = lanes,
         .n_allowed = 6,
         .doc = "instances per work-item, a vector of each value; 0: 8 in f64 and 16 in f32 on "
                "CPUs where the residual calls exp, log, ..., else 1"}};
    const int f32 = prec == KP_PRECISION_F32;
    const kp_kernel_desc desc = {.struct_size = sizeof desc,
                                 .name = name,
                                 .summary = "a residual graph's values and Jacobian, generated",
                                 .params = has_data(c) ? all : all + 1,
                                 .n_params = has_data(c) ? A_COUNT : A_COUNT - 1,
                                 .tunables = tunables,
                                 .n_tunables = 2,
                                 .source = c->source,
                                 .source_name = "solve-residual.cl",
                                 .entry = "solve_eval",
                                 .check = check,
                                 .enqueue = enqueue,
                                 .reference = reference,
                                 .sample = sample,
                                 .cost = cost,
                                 .verify_sizes = verify_sizes,
                                 .bench_sizes = bench_sizes,
                                 .atol = f32 ? 1e-4 : 1e-11,
                                 .rtol = f32 ? 1e-3 : 1e-9,
                                 .user = c,
                                 .supported = kp__solve_supported,
                                 .resolve = resolve};
    kp_residual *res = calloc(1, sizeof *res);
    if (!res)
        return kp__solve_fail(KP_ERR_OUT_OF_MEMORY, "kp_residual_create: out of host memory");
    res->rt = rt;
    res->compiled = c;
    res->precision = prec;
    st = kp__solve_register(rt, &desc, &res->kernel);
    if (st == KP_OK && (st = kp_buffer_create(rt, 2 * sizeof(int32_t), &res->status)) != KP_OK)
        kp__solve_fail(st, "%s", kp_last_error(rt));
    if (st != KP_OK) {
        free(res);
        return st;
    }
    *out = res;
    return KP_OK;
}

kp_status kp_residual_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                             kp_residual **out)
{
    return kp__solve_report(rt, create_residual(rt, g, precision, out));
}

void kp_residual_destroy(kp_residual *res)
{
    if (!res)
        return;
    kp_buffer_destroy(res->rt, res->status);
    free(res);
}

kp_kernel *kp_residual_kernel(const kp_residual *res)
{
    return res ? res->kernel : NULL;
}

kp_precision kp_residual_precision(const kp_residual *res)
{
    return res ? res->precision : KP_PRECISION_AUTO;
}

const kp_expr_graph *kp__residual_graph(const kp_residual *res)
{
    return res->compiled->graph;
}

const char *kp_residual_source(const kp_residual *res)
{
    return res ? res->compiled->source : NULL;
}

static kp_status evaluate_residual(kp_residual *res, int64_t n, kp_tensor data, kp_tensor index,
                                   kp_tensor params, kp_tensor r, kp_tensor jac)
{
    if (!res)
        return kp__solve_fail(KP_ERR_INVALID_ARG, "kp_residual_evaluate: NULL residual");
    const kp_expr_graph *g = res->compiled->graph;
    if (index.rank != 2 || index.shape[0] != n)
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "kp_residual_evaluate: index must be [n, %u] with n = %lld",
                              g->n_params, (long long)n);
    const int32_t big[2] = {INT32_MAX, INT32_MAX};
    kp_runtime *rt = res->rt;
    kp_status st = kp_buffer_write(rt, res->status, 0, sizeof big, big);
    kp_arg args[A_COUNT];
    size_t na = 0;
    if (g->n_data)
        args[na++] = kp_arg_tensor("data", data);
    args[na++] = kp_arg_tensor("index", index);
    args[na++] = kp_arg_tensor("params", params);
    args[na++] = kp_arg_tensor("r", r);
    args[na++] = kp_arg_tensor("jac", jac);
    args[na++] = kp_arg_tensor("status", kp_tensor_1d(res->status, KP_I32, 2));
    if (st == KP_OK)
        st = kp_kernel_launch(rt, res->kernel, args, na, NULL);
    int32_t flags[2] = {INT32_MAX, INT32_MAX};
    if (st == KP_OK)
        st = kp_buffer_read(rt, res->status, 0, sizeof flags, flags);
    if (st != KP_OK)
        return kp__solve_fail(st, "%s", kp_last_error(rt));
    if (flags[0] != INT32_MAX) {
        /* The kernel records the instance; its row of the index says which slot. */
        int32_t q = 0;
        uint32_t s = 0;
        for (; s < g->n_params; s++) {
            const int64_t at = index.offset + flags[0] * index.strides[0] + s * index.strides[1];
            if (kp_buffer_read(rt, index.buffer, (size_t)at * 4, 4, &q) != KP_OK || q < 0 ||
                q >= params.shape[0])
                break;
        }
        return kp__solve_fail(KP_ERR_INVALID_ARG,
                              "kp_residual_evaluate: instance %d: parameter slot %u (%s) has "
                              "index %d, outside [0, %lld) (params has %lld values); the "
                              "instance's outputs were not written",
                              flags[0], s, s < g->n_params ? g->param_names[s] : "?", q,
                              (long long)params.shape[0], (long long)params.shape[0]);
    }
    if (flags[1] != INT32_MAX)
        return kp__solve_fail(KP_ERR_VERIFY,
                              "kp_residual_evaluate: instance %d: the residual or its Jacobian "
                              "is NaN or infinite (the first such instance)",
                              flags[1]);
    return KP_OK;
}

kp_status kp_residual_evaluate(kp_residual *res, int64_t n, kp_tensor data, kp_tensor index,
                               kp_tensor params, kp_tensor r, kp_tensor jac)
{
    return kp__solve_report(res ? res->rt : NULL,
                            evaluate_residual(res, n, data, index, params, r, jac));
}
