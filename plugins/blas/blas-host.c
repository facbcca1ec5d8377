/* SPDX-License-Identifier: Apache-2.0 */
/* blas.gemm and blas.gemv on CPU devices through the host's OpenBLAS, in the queue: a CPU device's
 * buffers are host memory, and OpenBLAS's SGEMM is several times faster there than CLBlast's
 * OpenCL kernels. The `route` tunable picks it (auto: CPUs when OpenBLAS was found at build
 * time). Where the device runs native kernels (CL_EXEC_NATIVE_KERNEL: PoCL), the call is a native
 * command of the queue, ordered like any kernel and never blocking the host; elsewhere the
 * buffers are mapped around a host call, which waits for the queue (the host-blas-mapped
 * route). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <CL/cl.h>

#include "blas.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>
#endif

const char *const blas_routes[] = {"auto", "clblast", "host-blas", "host-blas-mapped", NULL};

#ifdef KP_HAVE_OPENBLAS
static int native_kernels(kp_launch *l)
{
    cl_device_id dev = (cl_device_id)blas_host->cl_device(l);
    cl_device_exec_capabilities caps = 0;
    return dev &&
           clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof caps, &caps, NULL) ==
               CL_SUCCESS &&
           (caps & CL_EXEC_NATIVE_KERNEL);
}
#endif

const char *blas_route_resolve(kp_launch *l, int64_t value, int64_t *resolved)
{
    const kp_device_info *d = blas_host->device(l);
    if (value == BLAS_ROUTE_CLBLAST || !d || d->type == KP_DEVICE_HOST)
        return NULL;
#ifndef KP_HAVE_OPENBLAS
    *resolved = BLAS_ROUTE_CLBLAST;
    return value == BLAS_ROUTE_AUTO ? "clblast: built without OpenBLAS"
                                    : "clblast: host-blas asked for, but built without OpenBLAS";
#else
    if (value == BLAS_ROUTE_AUTO && d->type != KP_DEVICE_CPU) {
        *resolved = BLAS_ROUTE_CLBLAST;
        return "clblast off CPUs";
    }
    int native = native_kernels(l);
    if (value == BLAS_ROUTE_HOST_MAPPED || (value == BLAS_ROUTE_HOST && native))
        return value == BLAS_ROUTE_HOST ? "OpenBLAS as a native kernel in the queue" : NULL;
    *resolved = native ? BLAS_ROUTE_HOST : BLAS_ROUTE_HOST_MAPPED;
    if (value == BLAS_ROUTE_HOST)
        return "host-blas-mapped: the device runs no native kernels";
    return native ? "host-blas on CPUs (OpenBLAS as a native kernel in the queue)"
                  : "host-blas-mapped on CPUs (no native kernels: the host waits for the queue)";
#endif
}

int blas_route_is_host(kp_launch *l, uint32_t index)
{
    int64_t r = blas_host->tunable_index(l, index);
    return r == BLAS_ROUTE_HOST || r == BLAS_ROUTE_HOST_MAPPED;
}

#ifdef KP_HAVE_OPENBLAS

/* The work a host call gets: the operands' buffers (cl_mem values, replaced by their mapped host
 * memory in the copy `run` sees), which buffer each operand is in (one buffer may hold several:
 * it is listed once), and the plan. */
typedef struct host_call {
    void *mem[3];
    int which[3];
    int n_mems;
    int gemv;
    blas_gemm_plan gemm;
    blas_gemv_plan gemv_plan;
    float alpha, beta;
} host_call;

static float *at(const host_call *h, int operand, int64_t offset)
{
    return (float *)h->mem[h->which[operand]] + offset;
}

static CBLAS_ORDER order(int col_major)
{
    return col_major ? CblasColMajor : CblasRowMajor;
}

static CBLAS_TRANSPOSE trans(int t)
{
    return t ? CblasTrans : CblasNoTrans;
}

/* C = beta C, line by line (beta 0 stores zeros). */
static void scale_c(const blas_matrix *m, float *c, float beta)
{
    int64_t lines = m->col_major ? m->cols : m->rows, len = m->col_major ? m->rows : m->cols;
    for (int64_t i = 0; i < lines; i++)
        for (int64_t j = 0; j < len; j++)
            c[i * m->ld + j] = beta == 0.0f ? 0.0f : beta * c[i * m->ld + j];
}

/* y = alpha op(A) x + beta y for A stored m x n; y has len_y elements. beta 0 ignores y's old
 * contents, NaN included, whichever OpenBLAS version scales it. */
static void sgemv(int col_major, int t, int64_t m, int64_t n, float alpha, const float *a,
                  int64_t lda, const float *x, int64_t incx, float beta, float *y, int64_t len_y,
                  int64_t incy)
{
    if (beta == 0.0f)
        for (int64_t i = 0; i < len_y; i++)
            y[i * incy] = 0.0f;
    cblas_sgemv(order(col_major), trans(t), (blasint)m, (blasint)n, alpha, a, (blasint)lda, x,
                (blasint)incx, beta, y, (blasint)incy);
}

/*
 * Whether a product of one row or one column runs as cblas_sgemv. OpenBLAS 0.3.21 (Debian 12's)
 * forwards such shapes to gemv only from 0.3.27; before, its sgemm takes small ones through
 * small-matrix kernels without packing and packs the whole other operand for the rest. Measured
 * on the 2-core EPYC (#30, medians with OpenBLAS's default two threads, where sgemv splits even
 * a small product): sgemm was 3-26x faster at up to 307k multiply-adds with up to 1200 outputs
 * (1 x 768 x 256, 1 x 1200 x 256) and at 1 x 2048 x 64, within 10% at 1 x 1024 x 768-900; sgemv
 * was 1.0-4.1x faster from 328k multiply-adds with more than 1200 outputs (2.5x at
 * 1 x 1280 x 256, 4.1x at 1 x 3072 x 128) and 4-11x from 1 x 1024 x 1024 on.
 */
static int as_gemv(const blas_gemm_plan *p)
{
    const double macs = (double)p->m * (double)p->n * (double)p->k;
    return (p->m == 1 || p->n == 1) && (macs > 1e6 || (macs > 262144.0 && p->m * p->n > 1200));
}

/* With M 1, c^T = op(B)^T a^T; with N 1, c = op(A) b. A vector's increment is 1 along a stored
 * line and the leading dimension across lines. */
static void gemm_as_gemv(const blas_gemm_plan *p, const float *a, const float *b, float *c,
                         float alpha, float beta)
{
    const int cm = p->col_major;
    if (p->m == 1)
        sgemv(cm, !p->trans_b, p->trans_b ? p->n : p->k, p->trans_b ? p->k : p->n, alpha, b,
              p->b.ld, a, cm != p->trans_a ? p->a.ld : 1, beta, c, p->n, cm ? p->c.ld : 1);
    else
        sgemv(cm, p->trans_a, p->trans_a ? p->k : p->m, p->trans_a ? p->m : p->k, alpha, a, p->a.ld,
              b, cm == p->trans_b ? p->b.ld : 1, beta, c, p->m, cm ? 1 : p->c.ld);
}

static void run(void *args)
{
    const host_call *h = args;
    if (h->gemv) {
        const blas_gemv_plan *p = &h->gemv_plan;
        float *y = at(h, 2, p->y_offset);
        if (p->len_x > 0)
            sgemv(p->col_major, p->trans, p->m, p->n, h->alpha, at(h, 0, p->a.offset), p->a.ld,
                  at(h, 1, p->x_offset), p->x_inc, h->beta, y, p->len_y, p->y_inc);
        else if (h->beta == 0.0f)
            for (int64_t i = 0; i < p->len_y; i++)
                y[i * p->y_inc] = 0.0f;
        else if (h->beta != 1.0f)
            cblas_sscal((blasint)p->len_y, h->beta, y, (blasint)p->y_inc);
        return;
    }
    /* A batch is a loop of cblas_sgemm inside this one command: OpenBLAS 0.3.21 (Debian 12's) has
     * no cblas_sgemm_batch, and one command costs the queue one launch, not one per product. */
    const blas_gemm_plan *p = &h->gemm;
    for (int64_t b = 0; b < p->batch; b++) {
        float *c = at(h, 2, p->c.offset + b * p->stride_c);
        const float *ab = at(h, 0, p->a.offset + b * p->stride_a);
        const float *bb = at(h, 1, p->b.offset + b * p->stride_b);
        if (p->k == 0) /* C = beta C: OpenBLAS returns at once, leaving C as it was */
            scale_c(&p->c, c, h->beta);
        else if (as_gemv(p))
            gemm_as_gemv(p, ab, bb, c, h->alpha, h->beta);
        else /* beta 0 ignores C's old contents, NaN included: OpenBLAS stores zeros first */
            cblas_sgemm(order(p->col_major), trans(p->trans_a), trans(p->trans_b), (blasint)p->m,
                        (blasint)p->n, (blasint)p->k, h->alpha, ab, (blasint)p->a.ld, bb,
                        (blasint)p->b.ld, h->beta, c, (blasint)p->c.ld);
    }
}

/* Whether cblas takes the matrix as the plan has it: ld within blasint and at least the stored
 * line's length (cblas refuses less, where a view of one line may have any ld). */
static int fits(const blas_matrix *m)
{
    int64_t line = m->col_major ? m->rows : m->cols;
    return m->ld <= INT_MAX && m->ld >= (line > 1 ? line : 1) && m->rows <= INT_MAX &&
           m->cols <= INT_MAX;
}

static void list_buffers(host_call *h, const kp_call *call, const int *params)
{
    h->n_mems = 0;
    for (int i = 0; i < 3; i++) {
        void *m = blas_host->cl_mem(call->args[params[i]].tensor.buffer);
        int j = 0;
        while (j < h->n_mems && h->mem[j] != m)
            j++;
        if (j == h->n_mems)
            h->mem[h->n_mems++] = m;
        h->which[i] = j;
    }
}

/*
 * Maps each buffer whole, runs the call on the mapped memory and unmaps. `native`: the maps do
 * not block and the call is a native command between them, all in the queue's order, with the
 * native command's event in the launch's slot (for timing). Otherwise the maps block (after the
 * queue's earlier work), the call runs here, and the last unmap's event is the launch's.
 *
 * The native command gets host pointers from the maps rather than through its own mem_list:
 * PoCL 3.1 sorts that list by buffer creation and then fills args_mem_loc in the sorted order,
 * swapping operands whose buffers were created out of order. On a CPU device the maps are the
 * buffers' own memory (no copies).
 */
static kp_status run_on_maps(kp_launch *l, const host_call *h, int native)
{
    cl_command_queue q = (cl_command_queue)blas_host->cl_queue(l);
    host_call copy = *h;
    int mapped = 0;
    cl_int err = CL_SUCCESS;
    const char *what = "clEnqueueMapBuffer";
    for (; mapped < h->n_mems; mapped++) {
        size_t bytes = 0;
        err = clGetMemObjectInfo((cl_mem)h->mem[mapped], CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
        if (err == CL_SUCCESS)
            copy.mem[mapped] =
                clEnqueueMapBuffer(q, (cl_mem)h->mem[mapped], native ? CL_FALSE : CL_TRUE,
                                   CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL, NULL, &err);
        if (err != CL_SUCCESS)
            break;
    }
    cl_event *slot = (cl_event *)blas_host->cl_event_slot(l);
    if (err == CL_SUCCESS && native) {
        err = clEnqueueNativeKernel(q, run, &copy, sizeof copy, 0, NULL, NULL, 0, NULL, slot);
        what = "clEnqueueNativeKernel";
    } else if (err == CL_SUCCESS) {
        run(&copy);
    }
    for (int i = 0; i < mapped; i++) {
        int last = !native && i == mapped - 1 && err == CL_SUCCESS;
        cl_int rc =
            clEnqueueUnmapMemObject(q, (cl_mem)h->mem[i], copy.mem[i], 0, NULL, last ? slot : NULL);
        if (rc != CL_SUCCESS && err == CL_SUCCESS) {
            err = rc;
            what = "clEnqueueUnmapMemObject";
        }
    }
    return err == CL_SUCCESS ? KP_OK : blas_cl_fail(l, what, err);
}

static kp_status enqueue(kp_launch *l, uint32_t route_index, host_call *h)
{
    return run_on_maps(l, h, blas_host->tunable_index(l, route_index) == BLAS_ROUTE_HOST);
}

int blas_host_gemm(const kp_call *call, kp_launch *l, const blas_gemm_plan *p, kp_status *st)
{
    if (p->dtype != KP_F32 || !blas_route_is_host(l, BLAS_ROUTE_TUNABLE) || p->m > INT_MAX ||
        p->n > INT_MAX || p->k > INT_MAX || !fits(&p->a) || !fits(&p->b) || !fits(&p->c))
        return 0;
    if (p->m == 0 || p->n == 0 || p->batch == 0) {
        *st = KP_OK;
        return 1;
    }
    host_call h = {.gemm = *p,
                   .alpha = (float)call->args[GEMM_ALPHA].f,
                   .beta = (float)call->args[GEMM_BETA].f};
    list_buffers(&h, call, (const int[]){GEMM_A, GEMM_B, GEMM_C});
    *st = enqueue(l, BLAS_ROUTE_TUNABLE, &h);
    return 1;
}

int blas_host_gemv(const kp_call *call, kp_launch *l, const blas_gemv_plan *p, kp_status *st)
{
    if (p->dtype != KP_F32 || !blas_route_is_host(l, BLAS_GEMV_ROUTE_TUNABLE) || p->m > INT_MAX ||
        p->n > INT_MAX || !fits(&p->a) || p->x_inc > INT_MAX || p->y_inc > INT_MAX)
        return 0;
    if (p->len_y == 0) {
        *st = KP_OK;
        return 1;
    }
    host_call h = {.gemv = 1,
                   .gemv_plan = *p,
                   .alpha = (float)call->args[GEMV_ALPHA].f,
                   .beta = (float)call->args[GEMV_BETA].f};
    list_buffers(&h, call, (const int[]){GEMV_A, GEMV_X, GEMV_Y});
    *st = enqueue(l, BLAS_GEMV_ROUTE_TUNABLE, &h);
    return 1;
}

int blas_host_describe(kp_launch *l, uint32_t index, char *out, size_t size)
{
    int64_t r = blas_host->tunable_index(l, index);
    if (r != BLAS_ROUTE_HOST && r != BLAS_ROUTE_HOST_MAPPED)
        return -1;
    return snprintf(
        out, size,
        "f32: cblas_sgemm/sgemv of %s on the buffers' host memory, %s (%d OpenBLAS "
        "threads; a GEMM of one row or column of over 10^6 multiply-adds, or 2^18 with over "
        "1200 outputs, as sgemv); "
        "layouts cblas cannot take run CLBlast",
        openblas_get_config(),
        r == BLAS_ROUTE_HOST ? "a native kernel in the queue"
                             : "between blocking maps of the buffers",
        openblas_get_num_threads());
}

#else

int blas_host_gemm(const kp_call *call, kp_launch *l, const blas_gemm_plan *p, kp_status *st)
{
    (void)call, (void)l, (void)p, (void)st;
    return 0;
}

int blas_host_gemv(const kp_call *call, kp_launch *l, const blas_gemv_plan *p, kp_status *st)
{
    (void)call, (void)l, (void)p, (void)st;
    return 0;
}

int blas_host_describe(kp_launch *l, uint32_t index, char *out, size_t size)
{
    (void)l, (void)index, (void)out, (void)size;
    return -1;
}

#endif
