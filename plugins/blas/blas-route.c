/* SPDX-License-Identifier: Apache-2.0 */
/* blas.gemm through tc.gemm (tensor cores): f32 products when the manifest asks for a precision
 * below FP32 (opt-in), f16 products always; CLBlast runs where the device has no tensor cores. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "blas.h"

#define precisions blas_precisions

/* The precision the last device launch of this thread ran in, for the tolerance of a verify run
 * (which runs the device launch, the reference and then the tolerance in one thread). */
static _Thread_local int routed;

int blas_routed_precision(void)
{
    return routed;
}

/* Runs the call through tc.gemm in tc precision `p - 1`. */
static kp_status through_tc(const kp_call *call, kp_launch *l, int64_t p)
{
    const kp_value *v = call->args;
    kp_arg args[] = {
        KP_ARG_TENSOR("A", v[GEMM_A].tensor),     KP_ARG_TENSOR("B", v[GEMM_B].tensor),
        KP_ARG_TENSOR("C", v[GEMM_C].tensor),     KP_ARG_FLOAT("alpha", v[GEMM_ALPHA].f),
        KP_ARG_FLOAT("beta", v[GEMM_BETA].f),     KP_ARG_INT("trans_a", v[GEMM_TRANS_A].i),
        KP_ARG_INT("trans_b", v[GEMM_TRANS_B].i), KP_ARG_INT("precision", p - 1),
    };
    return blas_host->launch(l, "tc.gemm", args, sizeof args / sizeof args[0]);
}

/* blas_precisions' index of f16. */
#define F16_PRECISION 3

int blas_route_gemm(const kp_call *call, kp_launch *l, kp_status *st)
{
    /* An f16 product's inputs are f16 already: tc.gemm's only change is its FP32 accumulation
     * (cuBLAS's HGEMM does the same on tensor cores), so it needs no opt-in. */
    const int half = call->args[GEMM_C].tensor.dtype == KP_F16;
    int64_t p = half ? F16_PRECISION : blas_host->tunable_index(l, BLAS_PRECISION_TUNABLE);
    routed = 0;
    if (p <= 0)
        return 0;
    kp_status tc = through_tc(call, l, p);
    if (tc == KP_OK)
        routed = (int)p;
    if (tc != KP_ERR_UNSUPPORTED && tc != KP_ERR_NOT_FOUND) {
        *st = tc;
        return 1;
    }
    if (half)
        return 0;
    /* Once per process: a manifest written for another machine is not an error here. */
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1))
        blas_host->log(l, KP_LOG_WARN,
                       "blas.gemm: precision %s asked for, but tc.gemm cannot run here: running "
                       "CLBlast's FP32 GEMM instead",
                       precisions[p]);
    return 0;
}

/* Runs a 1 x 1 x 1 product of `dtype` through tc.gemm in precision p, to ask tc.gemm itself
 * whether it runs on this device. */
static kp_status probe_tc(kp_launch *l, int32_t dtype, int64_t p)
{
    kp_buffer *buf;
    kp_status st = blas_host->scratch(l, 0, 3 * sizeof(float), &buf);
    if (st != KP_OK)
        return st;
    kp_tensor one = kp_tensor_2d(buf, (kp_dtype)dtype, 1, 1);
    kp_value v[GEMM_NPARAMS] = {
        [GEMM_A].tensor = one, [GEMM_B].tensor = one, [GEMM_C].tensor = one, [GEMM_ALPHA].f = 1.0};
    v[GEMM_B].tensor.offset = 1;
    v[GEMM_C].tensor.offset = 2;
    kp_call call = {.struct_size = sizeof call, .n_args = GEMM_NPARAMS, .args = v};
    return through_tc(&call, l, p);
}

/* The f32 products' path. The same rule as blas_route_gemm: only a missing kernel or device
 * falls back. */
static int describe_f32(kp_launch *l, char *out, size_t size)
{
    int64_t p = blas_host->tunable_index(l, BLAS_PRECISION_TUNABLE);
    int host = p <= 0 ? blas_host_describe(l, BLAS_ROUTE_TUNABLE, out, size) : -1;
    if (host >= 0)
        return host;
    if (p <= 0)
        return snprintf(out, size,
                        "f32: CLBlast's FP32 GEMM (precision fp32: exact FP32 "
                        "arithmetic)");
    kp_status st = probe_tc(l, KP_F32, p);
    if (st == KP_OK)
        return snprintf(out, size,
                        "f32: tc.gemm on tensor cores, precision %s (the manifest's precision; a "
                        "1 x 1 x 1 product ran)",
                        precisions[p]);
    if (st == KP_ERR_NOT_FOUND || st == KP_ERR_UNSUPPORTED)
        return snprintf(out, size,
                        "f32: CLBlast's FP32 GEMM: the manifest asks for precision %s, but %s",
                        precisions[p],
                        st == KP_ERR_NOT_FOUND ? "no tc.gemm is loaded (the tc plugin)"
                                               : "tc.gemm cannot run on this device (kernelport "
                                                 "verify tc says why)");
    return snprintf(out, size,
                    "f32: tc.gemm, precision %s, but a 1 x 1 x 1 product through it failed "
                    "(status %d): blas.gemm calls will fail too",
                    precisions[p], (int)st);
}

static void describe_f16(kp_launch *l, char *out, size_t size)
{
    kp_status st = probe_tc(l, KP_F16, F16_PRECISION);
    const kp_device_info *d = blas_host->device(l);
    if (st == KP_OK)
        snprintf(out, size,
                 "f16: tc.gemm on tensor cores, FP32 accumulation (a 1 x 1 x 1 "
                 "product ran)");
    else if (st != KP_ERR_NOT_FOUND && st != KP_ERR_UNSUPPORTED)
        snprintf(out, size,
                 "f16: tc.gemm, but a 1 x 1 x 1 product through it failed (status %d): f16 "
                 "calls will fail too",
                 (int)st);
    else if (d && d->fp16)
        snprintf(out, size, "f16: CLBlast's HGEMM (cl_khr_fp16; tc.gemm cannot run here)");
    else
        snprintf(out, size,
                 "f16: unsupported (no cl_khr_fp16 for CLBlast, no tensor cores for "
                 "tc.gemm)");
}

kp_status blas_gemm_describe(kp_launch *l, char *out, size_t size)
{
    const kp_device_info *d = blas_host->device(l);
    if (d && d->type == KP_DEVICE_HOST) {
        snprintf(out, size, "the host reference in plain C (the host device runs no CLBlast)");
        return KP_OK;
    }
    int n = describe_f32(l, out, size);
    if (n >= 0 && (size_t)n + 2 < size) {
        out[n] = ';';
        out[n + 1] = ' ';
        describe_f16(l, out + n + 2, size - (size_t)n - 2);
    }
    return KP_OK;
}
