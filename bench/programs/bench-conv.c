/* SPDX-License-Identifier: Apache-2.0 */
/* bench-conv: conv.im2col and conv.conv2d against CLBlast's im2col and convgemm and OpenBLAS. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef KP_HAVE_CLBLAST
#include <clblast_c.h>
#endif

/* One of issue #7's shapes: NCHW input, K output channels, a KH x KW kernel. */
typedef struct shape {
    int64_t N, C, H, W, K, KH, KW, stride, pad;
} shape;

static const shape shapes[] = {
    {64, 1, 28, 28, 16, 5, 5, 1, 0},
    {64, 64, 56, 56, 64, 3, 3, 1, 1},
    {32, 128, 28, 28, 128, 3, 3, 1, 0},
    {8, 3, 224, 224, 64, 7, 7, 2, 0},
};

/* One shape's problem: host inputs, device buffers, sizes. */
typedef struct problem {
    shape s;
    char name[64];
    int64_t OH, OW, L, R; /* output size, positions per image, column rows C KH KW */
    float *x, *w, *y;     /* y: the device result read back */
    float *ref;           /* the host im2col + sgemm result (NULL without OpenBLAS) */
    float *hcol;          /* one image's columns (host path and checks) */
    kp_buffer *dx, *dw, *dy, *dcol;
} problem;

static size_t numel_x(const problem *p)
{
    return (size_t)(p->s.N * p->s.C * p->s.H * p->s.W);
}

static size_t numel_y(const problem *p)
{
    return (size_t)(p->s.N * p->s.K * p->L);
}

/* The host im2col of image n into p->hcol (the Caffe layout conv.im2col writes). */
static void host_im2col(const problem *p, int64_t n)
{
    const shape *s = &p->s;
    for (int64_t c = 0; c < s->C; c++)
        for (int64_t kh = 0; kh < s->KH; kh++)
            for (int64_t kw = 0; kw < s->KW; kw++) {
                float *row = p->hcol + ((c * s->KH + kh) * s->KW + kw) * p->L;
                const float *plane = p->x + (n * s->C + c) * s->H * s->W;
                for (int64_t oh = 0; oh < p->OH; oh++) {
                    int64_t h = oh * s->stride - s->pad + kh;
                    for (int64_t ow = 0; ow < p->OW; ow++) {
                        int64_t w = ow * s->stride - s->pad + kw;
                        int in = h >= 0 && h < s->H && w >= 0 && w < s->W;
                        row[oh * p->OW + ow] = in ? plane[h * s->W + w] : 0.0f;
                    }
                }
            }
}

#ifdef KP_HAVE_OPENBLAS
/* The CPU peer: per image, im2col on the host and y_n = W col_n with OpenBLAS. */
static void host_conv(void *user)
{
    problem *p = user;
    const shape *s = &p->s;
    for (int64_t n = 0; n < s->N; n++) {
        host_im2col(p, n);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s->K, (int)p->L, (int)p->R,
                    1.0f, p->w, (int)p->R, p->hcol, (int)p->L, 0.0f, p->ref + n * s->K * p->L,
                    (int)p->L);
    }
}
#endif

static void problem_fini(kpb *b, problem *p)
{
    kp_buffer_destroy(b->rt, p->dx);
    kp_buffer_destroy(b->rt, p->dw);
    kp_buffer_destroy(b->rt, p->dy);
    kp_buffer_destroy(b->rt, p->dcol);
    free(p->x), free(p->w), free(p->y), free(p->ref), free(p->hcol);
    memset(p, 0, sizeof *p);
}

static kp_status problem_init(kpb *b, problem *p, shape s)
{
    memset(p, 0, sizeof *p);
    p->s = s;
    snprintf(p->name, sizeof p->name, "N%lld C%lld %lldx%lld K%lld %lldx%lld%s%s", (long long)s.N,
             (long long)s.C, (long long)s.H, (long long)s.W, (long long)s.K, (long long)s.KH,
             (long long)s.KW, s.pad ? " p1" : "", s.stride > 1 ? " s2" : "");
    p->OH = (s.H + 2 * s.pad - s.KH) / s.stride + 1;
    p->OW = (s.W + 2 * s.pad - s.KW) / s.stride + 1;
    p->L = p->OH * p->OW;
    p->R = s.C * s.KH * s.KW;
    size_t nx = numel_x(p), nw = (size_t)(s.K * p->R), ny = numel_y(p);
    size_t ncol = (size_t)(s.N * p->R * p->L);
    p->x = malloc(nx * 4), p->w = malloc(nw * 4), p->y = malloc(ny * 4);
    p->hcol = malloc((size_t)(p->R * p->L) * 4);
#ifdef KP_HAVE_OPENBLAS
    p->ref = malloc(ny * 4);
    if (!p->ref)
        return KP_ERR_OUT_OF_MEMORY;
#endif
    if (!p->x || !p->w || !p->y || !p->hcol)
        return KP_ERR_OUT_OF_MEMORY;
    kpb_fill(p->x, nx, 21);
    kpb_fill(p->w, nw, 22);
    for (size_t i = 0; i < nw; i++)
        p->w[i] *= (float)(1.0 / sqrt((double)p->R)); /* PyTorch's initial scale */
    kp_status st = kp_buffer_create(b->rt, nx * 4, &p->dx);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, nw * 4, &p->dw);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, ny * 4, &p->dy);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, ncol * 4, &p->dcol);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->dx, 0, nx * 4, p->x);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->dw, 0, nw * 4, p->w);
    return st;
}

/* The geometry arguments every call shares. */
static size_t geometry(const problem *p, kp_arg *a)
{
    a[0] = KP_ARG_INT("stride_h", p->s.stride);
    a[1] = KP_ARG_INT("stride_w", p->s.stride);
    a[2] = KP_ARG_INT("pad_h", p->s.pad);
    a[3] = KP_ARG_INT("pad_w", p->s.pad);
    return 4;
}

/* Compares image n's columns in the device buffer with the host im2col (a copy: exact). */
static int check_columns(kpb *b, problem *p, int64_t n, float *scratch)
{
    size_t count = (size_t)(p->R * p->L), off = (size_t)n * count * 4;
    if (kp_buffer_read(b->rt, p->dcol, off, count * 4, scratch) != KP_OK)
        return 0;
    host_im2col(p, n);
    return memcmp(scratch, p->hcol, count * 4) == 0;
}

/* Whether both images at the ends of the batch hold exactly im2col's columns. */
static int columns_ok(kpb *b, problem *p)
{
    float *scratch = malloc((size_t)(p->R * p->L) * 4);
    int ok = scratch && check_columns(b, p, 0, scratch) && check_columns(b, p, p->s.N - 1, scratch);
    free(scratch);
    return ok;
}

/* max|y - ref| / max|ref| against the host result (or, without OpenBLAS, a double loop over
 * image 0); K-term dot products in f32 stay within 4 R u of it. */
static double conv_error(problem *p, const float *y, double *tol)
{
    const shape *s = &p->s;
    double max_diff = 0, max_ref = 0;
    *tol = 4.0 * (double)p->R * 0x1p-24;
    if (p->ref) {
        for (size_t i = 0; i < numel_y(p); i++) {
            max_diff = fmax(max_diff, fabs((double)y[i] - p->ref[i]));
            max_ref = fmax(max_ref, fabs((double)p->ref[i]));
            if (isnan(y[i]))
                return NAN;
        }
        return max_diff / (max_ref > 0 ? max_ref : 1.0);
    }
    host_im2col(p, 0);
    for (int64_t k = 0; k < s->K; k++)
        for (int64_t l = 0; l < p->L; l++) {
            double acc = 0;
            for (int64_t r = 0; r < p->R; r++)
                acc += (double)p->w[k * p->R + r] * p->hcol[r * p->L + l];
            max_diff = fmax(max_diff, fabs((double)y[k * p->L + l] - acc));
            max_ref = fmax(max_ref, fabs(acc));
        }
    return max_diff / (max_ref > 0 ? max_ref : 1.0);
}

#ifdef KP_HAVE_CLBLAST
/* A CLBlast call on the runtime's queue: enqueues all its work, the last with event `ev`. */
typedef CLBlastStatusCode (*clblast_fn)(const problem *p, cl_command_queue q, cl_event *ev);

static CLBlastStatusCode clblast_im2col(const problem *p, cl_command_queue q, cl_event *ev)
{
    const shape *s = &p->s;
    CLBlastStatusCode code = CLBlastSuccess;
    size_t image = (size_t)(s->C * s->H * s->W), cols = (size_t)(p->R * p->L);
    /* CLBlast's im2col takes one image per call. */
    for (int64_t n = 0; n < s->N && code == CLBlastSuccess; n++)
        code = CLBlastSim2col(
            CLBlastKernelModeCrossCorrelation, (size_t)s->C, (size_t)s->H, (size_t)s->W,
            (size_t)s->KH, (size_t)s->KW, (size_t)s->pad, (size_t)s->pad, (size_t)s->stride,
            (size_t)s->stride, 1, 1, (cl_mem)kp_buffer_cl_mem(p->dx), (size_t)n * image,
            (cl_mem)kp_buffer_cl_mem(p->dcol), (size_t)n * cols, &q, n == s->N - 1 ? ev : NULL);
    return code;
}

static CLBlastStatusCode clblast_convgemm(const problem *p, cl_command_queue q, cl_event *ev)
{
    const shape *s = &p->s;
    return CLBlastSconvgemm(
        CLBlastKernelModeCrossCorrelation, (size_t)s->C, (size_t)s->H, (size_t)s->W, (size_t)s->KH,
        (size_t)s->KW, (size_t)s->pad, (size_t)s->pad, (size_t)s->stride, (size_t)s->stride, 1, 1,
        (size_t)s->K, (size_t)s->N, (cl_mem)kp_buffer_cl_mem(p->dx), 0,
        (cl_mem)kp_buffer_cl_mem(p->dw), 0, (cl_mem)kp_buffer_cl_mem(p->dy), 0, &q, ev);
}

/* Device time of a CLBlast call: from a marker enqueued before it to the end of its last
 * command, the span Kernelport times for a launch (bench-blas times CLBlast the same way).
 * Returns 0, or -1 with `why` filled. */
static int clblast_time(kpb *b, clblast_fn fn, const problem *p, cl_command_queue q, double *median,
                        char *why, size_t why_size)
{
    double t[200], total = 0;
    int runs = 0;
    CLBlastStatusCode code = CLBlastSuccess;
    for (int i = 0; i < 2 && code == CLBlastSuccess; i++)
        code = fn(p, q, NULL);
    clFinish(q);
    while (code == CLBlastSuccess && runs < 200 && kpb_more_runs(b, runs, total)) {
        cl_event mark = NULL, ev = NULL;
        cl_ulong start = 0, end = 0;
        cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &mark);
        code = err == CL_SUCCESS ? fn(p, q, &ev) : CLBlastSuccess;
        if (err == CL_SUCCESS && code == CLBlastSuccess)
            err = clWaitForEvents(1, &ev);
        if (err == CL_SUCCESS && code == CLBlastSuccess)
            err = clGetEventProfilingInfo(mark, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                          NULL);
        if (err == CL_SUCCESS && code == CLBlastSuccess)
            err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        if (mark)
            clReleaseEvent(mark);
        if (ev)
            clReleaseEvent(ev);
        if (err != CL_SUCCESS) {
            snprintf(why, why_size, "OpenCL error %d while timing CLBlast", err);
            return -1;
        }
        t[runs] = end > start ? (double)(end - start) * 1e-9 : 0;
        total += t[runs++];
    }
    if (code != CLBlastSuccess) {
        snprintf(why, why_size, "CLBlast returned status %d", (int)code);
        return -1;
    }
    *median = kpb_median(t, (size_t)runs);
    return 0;
}
#endif

/* conv.im2col on the whole batch against CLBlastSim2col, one call per image. */
static int bench_im2col(kpb *b, kp_kernel *k, problem *p, void *queue)
{
    const shape *s = &p->s;
    kp_arg args[8];
    size_t n = geometry(p, args);
    args[n++] =
        KP_ARG_TENSOR("im", kp_tensor_nd(p->dx, KP_F32, 4, (int64_t[]){s->N, s->C, s->H, s->W}));
    args[n++] = KP_ARG_TENSOR("col", kp_tensor_3d(p->dcol, KP_F32, s->N, p->R, p->L));
    args[n++] = KP_ARG_INT("kernel_h", s->KH);
    args[n++] = KP_ARG_INT("kernel_w", s->KW);
    char note[400] = "";
    kpb_row row = {.case_name = p->name,
                   .ours = "conv.im2col",
                   .bytes = 4.0 * (double)(numel_x(p) + (size_t)(s->N * p->R * p->L)),
                   .note = note};
    kp_status st = kpb_time_kernel(b, k, args, n, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK && !columns_ok(b, p)) {
        st = KP_ERR_VERIFY;
        snprintf(note, sizeof note, "!! WRONG RESULT: columns differ from the host im2col");
    } else if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
    }
    row.status = st;
    if (st != KP_OK)
        row.ours_s = 0;
#ifdef KP_HAVE_CLBLAST
    char why[200];
    double t = 0;
    if (queue && clblast_time(b, clblast_im2col, p, queue, &t, why, sizeof why) == 0) {
        row.peer = "CLBlastSim2col (same device, one call per image)";
        if (columns_ok(b, p))
            row.peer_s = t;
        else
            snprintf(note + strlen(note), sizeof note - strlen(note),
                     "%sCLBlast's columns differ from ours (time withheld)", note[0] ? "; " : "");
    } else if (queue) {
        snprintf(note + strlen(note), sizeof note - strlen(note), "%sCLBlastSim2col: %s",
                 note[0] ? "; " : "", why);
    }
#else
    (void)queue;
#endif
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
    return st != KP_OK;
}

/* OpenBLAS's threads spin for a while after a call; on a CPU device they would take the cores
 * from the next device timing, so the bench waits them out. */
static void let_openblas_idle(void)
{
#ifdef KP_HAVE_OPENBLAS
    struct timespec nap = {0, 200000000};
    nanosleep(&nap, NULL);
#endif
}

/* conv.conv2d against CLBlastSconvgemm (device time) and the host path (wall time). */
static int bench_conv(kpb *b, kp_kernel *k, problem *p, void *queue)
{
    const shape *s = &p->s;
    kp_arg args[8];
    size_t n = geometry(p, args);
    args[n++] =
        KP_ARG_TENSOR("x", kp_tensor_nd(p->dx, KP_F32, 4, (int64_t[]){s->N, s->C, s->H, s->W}));
    args[n++] =
        KP_ARG_TENSOR("w", kp_tensor_nd(p->dw, KP_F32, 4, (int64_t[]){s->K, s->C, s->KH, s->KW}));
    args[n++] =
        KP_ARG_TENSOR("y", kp_tensor_nd(p->dy, KP_F32, 4, (int64_t[]){s->N, s->K, p->OH, p->OW}));
    char note[400] = "", why[200] = "";
    kpb_row row = {.case_name = p->name,
                   .ours = "conv.conv2d",
                   .flops = 2.0 * (double)numel_y(p) * (double)p->R,
                   .bytes = 4.0 * (double)(numel_x(p) + (size_t)(s->K * p->R) + numel_y(p)),
                   .note = note};
    kp_status st = kpb_time_kernel(b, k, args, n, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, p->dy, 0, numel_y(p) * 4, p->y);
    float *peer_y = NULL;
    double peer_t = 0;
#ifdef KP_HAVE_CLBLAST
    if (queue && clblast_time(b, clblast_convgemm, p, queue, &peer_t, why, sizeof why) == 0) {
        peer_y = malloc(numel_y(p) * 4);
        if (peer_y && kp_buffer_read(b->rt, p->dy, 0, numel_y(p) * 4, peer_y) != KP_OK)
            snprintf(why, sizeof why, "%s", kp_last_error(b->rt));
    }
#else
    (void)queue;
#endif
    /* The reference only now, after the device timings (let_openblas_idle). */
#ifdef KP_HAVE_OPENBLAS
    host_conv(p);
#endif
    double err = 0, tol = 0;
    if (st == KP_OK) {
        err = conv_error(p, p->y, &tol);
        kpb_row_metric(&row, "max_rel_err", err);
        if (!(err <= tol)) {
            st = KP_ERR_VERIFY;
            snprintf(note, sizeof note, "!! WRONG RESULT: relative error %.3g > %.3g", err, tol);
        }
    } else {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
    }
    row.status = st;
    if (st != KP_OK)
        row.ours_s = 0;
    kpb_row host = row;
    if (peer_y && !why[0]) {
        double perr = conv_error(p, peer_y, &tol);
        row.peer = "CLBlastSconvgemm (same device)";
        if (perr <= tol)
            row.peer_s = peer_t;
        else
            snprintf(note + strlen(note), sizeof note - strlen(note),
                     "%sCLBlastSconvgemm: relative error %.3g (time withheld)", note[0] ? "; " : "",
                     perr);
    } else if (why[0]) {
        snprintf(note + strlen(note), sizeof note - strlen(note), "%sCLBlastSconvgemm: %s",
                 note[0] ? "; " : "", why);
    }
    free(peer_y);
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
#ifdef KP_HAVE_OPENBLAS
    char name[96];
    snprintf(name, sizeof name, "host im2col + cblas_sgemm (OpenBLAS, %d threads%s)",
             openblas_get_num_threads(), b->device.type == KP_DEVICE_CPU ? "" : "; best CPU path");
    host.peer = name;
    host.peer_s = kpb_time_host(b, host_conv, p);
    host.note = NULL;
    host.n_metrics = 0;
    kpb_add(b, &host);
    let_openblas_idle();
#endif
    return st != KP_OK;
}

/* The tuning a kernel runs with (STYLE: benchmarks say so). */
static void note_tuning(kpb *b, kp_kernel *k, const char *name)
{
    kp_kernel_info ki = {.struct_size = sizeof ki};
    char text[600] = "";
    size_t used = 0;
    if (kp_kernel_info_get(k, &ki) != KP_OK)
        return;
    for (size_t i = 0; i < ki.n_tunables && used < sizeof text; i++) {
        kp_tuning_info ti = {.struct_size = sizeof ti};
        if (kp_kernel_tuning(b->rt, k, i, &ti) != KP_OK)
            return;
        used += (size_t)snprintf(text + used, sizeof text - used, " %s=%lld (%s)", ti.name,
                                 (long long)ti.value, ti.origin);
    }
    kpb_note(b, "%s tuning:%s", name, text);
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-conv", argc, argv);
    kp_kernel *im2col, *conv;
    if (kp_kernel_find(b.rt, "conv.im2col", &im2col) != KP_OK ||
        kp_kernel_find(b.rt, "conv.conv2d", &conv) != KP_OK) {
        fprintf(stderr, "bench-conv: %s\n", kp_last_error(b.rt));
        kp_runtime_destroy(b.rt);
        return 1;
    }
    b.max_case_s = b.quick ? 0.3 : 2.0;
    note_tuning(&b, im2col, "conv.im2col");
    note_tuning(&b, conv, "conv.conv2d");
    kp_kernel *gemm;
    if (kp_kernel_find(b.rt, "blas.gemm", &gemm) != KP_OK)
        kpb_note(&b, "blas.gemm is not registered: conv.conv2d runs conv.cl's fallback GEMM");
    void *queue = NULL;
#ifdef KP_HAVE_CLBLAST
    if (kp_runtime_opencl(b.rt, NULL, &queue, NULL) != KP_OK)
        queue = NULL;
    kpb_note(&b, "CLBlast peers run on the runtime's own queue and buffers, timed from a marker "
                 "before the call to the end of its last command");
#else
    kpb_note(&b, "CLBlast peers not built (CLBlast not found at configure time)");
#endif
    kpb_note(&b, "no bias anywhere (CLBlastSconvgemm has none); pad 0 where the issue names none");
    if (b.quick)
        kpb_note(&b, "--quick: N = 2 for every shape, fewer runs (a smoke test, not figures)");
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        shape s = shapes[i];
        if (b.quick)
            s.N = 2;
        problem p;
        kp_status st = problem_init(&b, &p, s);
        if (st != KP_OK) {
            fprintf(stderr, "bench-conv: %s: %s (%s)\n", p.name, kp_status_name(st),
                    kp_last_error(b.rt));
            failures++;
        } else {
            failures += bench_im2col(&b, im2col, &p, queue);
            failures += bench_conv(&b, conv, &p, queue);
        }
        problem_fini(&b, &p);
    }
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
