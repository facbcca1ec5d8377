/* SPDX-License-Identifier: Apache-2.0 */
/* The blas plugin's shared declarations: parameter order, matrix layouts, CLBlast glue. */
#ifndef KP_BLAS_H
#define KP_BLAS_H

#include <stddef.h>
#include <stdint.h>

#include "blas-retrieve.h" /* the one C++ function: CLBlast's current parameters */
#include "kernelport/plugin.h"

/* Parameter indices, in the order the descriptors list them. */
enum { GEMM_A, GEMM_B, GEMM_C, GEMM_ALPHA, GEMM_BETA, GEMM_TRANS_A, GEMM_TRANS_B, GEMM_NPARAMS };
enum { GEMV_A, GEMV_X, GEMV_Y, GEMV_ALPHA, GEMV_BETA, GEMV_TRANS, GEMV_NPARAMS };

/* The host table handed to init; every file of the plugin reads it. */
extern const kp_host_api *blas_host;

/* ---- blas-layout.c: tensor views as BLAS matrices ----------------------------------------- */

/* A rank-2 view (or the two trailing dimensions of a batch) as BLAS sees it. Element (i, j) of
 * the view lives at offset + i * ld + j (row-major) or offset + i + j * ld (column-major). */
typedef struct blas_matrix {
    int64_t rows, cols;
    int64_t ld;
    int64_t offset;
    int col_major;
} blas_matrix;

/* The GEMM (batched or not) a call asks for, in CLBlast's terms: C's layout is CLBlast's layout;
 * A and B are passed as the matrices "as stored" in that layout with their transpose flags. */
typedef struct blas_gemm_plan {
    int64_t m, n, k, batch;
    int col_major; /* CLBlast layout */
    int trans_a, trans_b;
    blas_matrix a, b, c; /* a: rows x cols as stored in the CLBlast layout, same for b */
    int64_t stride_a, stride_b, stride_c; /* batch strides (0 broadcasts A or B) */
    int32_t dtype;
} blas_gemm_plan;

typedef struct blas_gemv_plan {
    int64_t m, n; /* A as stored: m x n in its own layout */
    int col_major, trans;
    blas_matrix a;
    int64_t x_offset, x_inc, y_offset, y_inc;
    int64_t len_x, len_y;
    int32_t dtype;
} blas_gemv_plan;

/* Validate a call and fill the plan; report through host->fail naming the argument. A plain
 * (not batched) f16 GEMM's plan leaves the device's f16 support to blas_check_f16. */
kp_status blas_plan_gemm(const kp_call *call, kp_launch *l, int batched, blas_gemm_plan *plan);
kp_status blas_plan_gemv(const kp_call *call, kp_launch *l, blas_gemv_plan *plan);
/* The same product in the other layout: C^T = op(B)^T op(A)^T, over the same memory. */
void blas_plan_swap(blas_gemm_plan *plan);
/* KP_ERR_UNSUPPORTED, naming the device, for f16 where CLBlast cannot run it (no cl_khr_fp16);
 * `tc` adds that tensor cores, too, were missing. */
kp_status blas_check_f16(kp_launch *l, int32_t dtype, int tc);

/* ---- blas-params.c: CLBlast parameter tables and constraints ------------------------------ */

#define BLAS_MAX_PARAMS 16   /* parameters of one CLBlast kernel */
#define BLAS_MAX_CLKERNELS 8 /* CLBlast kernels behind one routine */

/* One CLBlast kernel whose parameters a descriptor exposes as tunables. */
typedef struct blas_clkernel {
    const char *name;                /* CLBlast's kernel name: "Xgemm" */
    const char *const *params;       /* CLBlast's parameter names */
    const kp_tunable_desc *tunables; /* the descriptor's table; default_value means "unset" */
    uint32_t n_params;
    uint32_t first_tunable; /* parameter i is tunables[first_tunable + i] */
    const char *prefix;     /* of the tunables' names: "clblast" ("clblast.Xgemm.MWG") */
} blas_clkernel;

/* The CLBlast kernels behind GEMM (plain and strided batched) and behind GEMV. */
extern const blas_clkernel blas_gemm_clkernels[];
extern const uint32_t blas_n_gemm_clkernels;
extern const blas_clkernel blas_gemv_clkernels[];
extern const uint32_t blas_n_gemv_clkernels;
#define BLAS_N_GEMM_TUNABLES 42
#define BLAS_N_GEMV_TUNABLES 8
/* CLBlast's parameters, then the narrow Xgemm set (narrow.Xgemm.*, blas_narrow_xgemm) and
 * `narrow.max_dim`, which says which products take it, then `route` (blas_routes; blas-host.c:
 * blas.gemm_batched's list ends here), then blas.gemm's `precision`. */
#define BLAS_NARROW_FIRST BLAS_N_GEMM_TUNABLES
#define BLAS_NARROW_MAX_DIM (BLAS_NARROW_FIRST + 16)
#define BLAS_ROUTE_TUNABLE (BLAS_NARROW_MAX_DIM + 1)
#define BLAS_N_BATCHED_TUNABLES (BLAS_ROUTE_TUNABLE + 1)
#define BLAS_PRECISION_TUNABLE BLAS_N_BATCHED_TUNABLES
#define BLAS_N_GEMM_ALL_TUNABLES (BLAS_PRECISION_TUNABLE + 1)
/* blas.gemv's `route`, after its CLBlast parameters. */
#define BLAS_GEMV_ROUTE_TUNABLE BLAS_N_GEMV_TUNABLES
#define BLAS_N_GEMV_ALL_TUNABLES (BLAS_GEMV_ROUTE_TUNABLE + 1)
extern const kp_tunable_desc blas_gemm_tunables[BLAS_N_GEMM_ALL_TUNABLES];
extern const blas_clkernel blas_narrow_xgemm;
extern const char *const blas_precisions[]; /* "fp32", "tf32", "tf32x3", "f16", "bf16" */
extern const kp_tunable_desc blas_gemv_tunables[BLAS_N_GEMV_ALL_TUNABLES];

/* Checks a complete parameter set of kernel `k` against CLBlast's constraints and the device's
 * limits. `from_tuning` has bit i set when parameter i came from the manifest. On a violation
 * writes a sentence into `why` and returns 0. */
int blas_params_valid(const blas_clkernel *k, const size_t *values, uint32_t from_tuning,
                      size_t elem_size, const kp_device_info *dev, char *why, size_t why_size);

/* ---- blas-status.c: CLBlast statuses --------------------------------------------------------- */

/* Fails the launch with the kp_status for CLBlast status `code` of `call`, naming the status:
 * "CLBlastSgemm: CLBlastInsufficientMemoryC (-1009) on device ...". */
kp_status blas_clblast_fail(kp_launch *l, const char *call, int code);
/* Fails the launch for an OpenCL call of the plugin's own as the core reports its calls, with the
 * status it gives the same error: "clFinish failed: CL_OUT_OF_RESOURCES (-5)". */
kp_status blas_cl_fail(kp_launch *l, const char *call, int err);

/* ---- blas-clblast.c: CLBlast calls and parameter overrides ---------------------------------- */

/* Make CLBlast use this launch's tuning values (merged over CLBlast's own set and validated, or
 * CLBlast's own set restored), then run the plan on the runtime's queue. */
kp_status blas_run_gemm(const kp_call *call, kp_launch *l, const blas_gemm_plan *p, int batched);
kp_status blas_run_gemv(const kp_call *call, kp_launch *l, const blas_gemv_plan *p);
/* Compiles CLBlast's programs for this kernel on the runtime's context (tiny calls, and for GEMM
 * one call of the indirect path's size) with the manifest's parameters applied. */
kp_status blas_warmup(kp_launch *l, int which);
enum { BLAS_WARM_GEMM, BLAS_WARM_GEMM_BATCHED, BLAS_WARM_GEMV };

/* ---- blas-route.c: blas.gemm through tc.gemm when the manifest asks ------------------------ */

/* Runs the call through tc.gemm and returns 1 with its status in *st (or with an error that is
 * not the device's lack of tensor cores) when it is f32 and the `precision` tunable asks for
 * tf32, tf32x3, f16 or bf16 (otherwise CLBlast's FP32 GEMM runs, with a warning once per process
 * when a precision was asked for), and whenever it is f16: in f16 with FP32 accumulation, where
 * CLBlast's HGEMM would need cl_khr_fp16 and compute in f16. Returns 0 when CLBlast must run. */
int blas_route_gemm(const kp_call *call, kp_launch *l, kp_status *st);
/* The precision (blas_precisions index) this thread's last blas.gemm launch ran in: 0 for
 * CLBlast. Read by the tolerance of a verify run. */
int blas_routed_precision(void);
/* For `kernelport explain blas.gemm`: which path a launch takes on this device and why. */
kp_status blas_gemm_describe(kp_launch *l, char *out, size_t size);

/* ---- blas-host.c: blas.gemm and blas.gemv through the host's OpenBLAS on CPU devices --------- */

enum { BLAS_ROUTE_AUTO, BLAS_ROUTE_CLBLAST, BLAS_ROUTE_HOST, BLAS_ROUTE_HOST_MAPPED };
extern const char *const blas_routes[]; /* "auto", "clblast", "host-blas", "host-blas-mapped" */
/* The descriptors' resolve hook for a `route` tunable: auto becomes host-blas on CPU devices
 * (host-blas-mapped where the device runs no native kernels) when OpenBLAS was built in, else
 * clblast; a host route asked for without OpenBLAS becomes clblast. */
const char *blas_route_resolve(kp_launch *l, int64_t value, int64_t *resolved);
/* Whether the `route` tunable number `index` resolved to a host route. */
int blas_route_is_host(kp_launch *l, uint32_t index);
/* Enqueue the planned call through OpenBLAS and return 1 with its status in *st, when the route
 * is a host one and cblas takes the call (f32, dimensions and leading dimensions within cblas'
 * int; a batch runs as a loop of cblas_sgemm in one command); otherwise return 0: CLBlast runs
 * it. */
int blas_host_gemm(const kp_call *call, kp_launch *l, const blas_gemm_plan *p, kp_status *st);
int blas_host_gemv(const kp_call *call, kp_launch *l, const blas_gemv_plan *p, kp_status *st);
/* For explain: writes the host route's sentence and returns its length, or -1 when the route
 * `index` names is CLBlast. */
int blas_host_describe(kp_launch *l, uint32_t index, char *out, size_t size);

/* ---- blas-reference.c: host references and precision helpers ------------------------------ */

kp_status blas_gemm_reference(const kp_call *call, kp_launch *l);
kp_status blas_gemm_batched_reference(const kp_call *call, kp_launch *l);
kp_status blas_gemv_reference(const kp_call *call, kp_launch *l);
void blas_gemm_tolerance(const kp_call *call, double *atol, double *rtol);
void blas_gemv_tolerance(const kp_call *call, double *atol, double *rtol);

#endif
