/* SPDX-License-Identifier: Apache-2.0 */
/* bench-blas: blas.gemm against OpenBLAS, CLBlast called directly, and its own launch path. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef KP_HAVE_CLBLAST
#include <clblast_c.h>
#endif

/* Row-major C[m, n] = A[m, k] B[k, n]. */
typedef struct shape {
    int64_t m, n, k;
} shape;

/* Squares up to 1024 everywhere (up to 512 with --quick), larger ones on GPUs only. */
static const int64_t squares[] = {256, 512, 1024, 2048, 4096, 8192};
/* A GRU step's gate product (batch 64, 3 x 256 gates, 256 inputs), a transformer-sized MLP
 * product and a 3x3x3 convolution over 448^2 pixels as im2col GEMM. */
static const shape model_shapes[] = {{64, 768, 256}, {1024, 3072, 1024}, {16, 200704, 27}};

/* One problem: random host inputs, their device copies and, with OpenBLAS, the reference. */
typedef struct problem {
    shape s;
    char name[64];
    float *a, *b, *c; /* c: the device result read back (and scratch for the CPU peer) */
    float *ref;       /* OpenBLAS's C, or NULL: the check then recomputes entries in double */
    kp_buffer *da, *db, *dc;
    kp_arg args[5];
} problem;

/* The outcome of comparing a result with the reference. */
typedef struct check {
    double err; /* max |C - R| / max |R| over the entries compared; NaN when C holds a NaN */
    double tol;
    int ok;
} check;

#ifdef KP_HAVE_OPENBLAS
static void sgemm_host(const problem *p, float *out)
{
    int m = (int)p->s.m, n = (int)p->s.n, k = (int)p->s.k;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, p->a, k, p->b, n, 0.0f,
                out, n);
}

static void run_sgemm(void *user)
{
    problem *p = user;
    sgemm_host(p, p->c);
}
#endif

static size_t numel_c(const shape *s)
{
    return (size_t)s->m * (size_t)s->n;
}

static void problem_fini(kpb *b, problem *p)
{
    kp_buffer_destroy(b->rt, p->da);
    kp_buffer_destroy(b->rt, p->db);
    kp_buffer_destroy(b->rt, p->dc);
    free(p->a);
    free(p->b);
    free(p->c);
    free(p->ref);
    memset(p, 0, sizeof *p);
}

/* Allocates and fills everything but the reference; on failure `why` says what (the problem still
 * needs fini). */
static kp_status problem_init(kpb *b, problem *p, shape s, char *why, size_t why_size)
{
    memset(p, 0, sizeof *p);
    p->s = s;
    snprintf(p->name, sizeof p->name, "%lldx%lldx%lld", (long long)s.m, (long long)s.n,
             (long long)s.k);
    size_t na = (size_t)s.m * (size_t)s.k, nb = (size_t)s.k * (size_t)s.n, nc = numel_c(&s);
    p->a = malloc(na * sizeof *p->a);
    p->b = malloc(nb * sizeof *p->b);
    p->c = malloc(nc * sizeof *p->c);
#ifdef KP_HAVE_OPENBLAS
    p->ref = malloc(nc * sizeof *p->ref);
    int no_ref = p->ref == NULL;
#else
    int no_ref = 0;
#endif
    if (!p->a || !p->b || !p->c || no_ref) {
        snprintf(why, why_size, "host out of memory for %s", p->name);
        return KP_ERR_OUT_OF_MEMORY;
    }
    /* Random inputs: zeros would let a kernel that skips work look right and run fast. C is
     * prefilled too, so that entries the kernel never writes fail the check. */
    kpb_fill(p->a, na, 11);
    kpb_fill(p->b, nb, 12);
    kpb_fill(p->c, nc, 13);
    kp_status st = kp_buffer_create(b->rt, na * sizeof(float), &p->da);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, nb * sizeof(float), &p->db);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, nc * sizeof(float), &p->dc);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->da, 0, na * sizeof(float), p->a);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->db, 0, nb * sizeof(float), p->b);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->dc, 0, nc * sizeof(float), p->c);
    if (st != KP_OK) {
        snprintf(why, why_size, "%s", kp_last_error(b->rt));
        return st;
    }
    p->args[0] = KP_ARG_TENSOR("A", kp_tensor_2d(p->da, KP_F32, s.m, s.k));
    p->args[1] = KP_ARG_TENSOR("B", kp_tensor_2d(p->db, KP_F32, s.k, s.n));
    p->args[2] = KP_ARG_TENSOR("C", kp_tensor_2d(p->dc, KP_F32, s.m, s.n));
    p->args[3] = KP_ARG_FLOAT("alpha", 1.0);
    p->args[4] = KP_ARG_FLOAT("beta", 0.0);
    return KP_OK;
}

/* Computes the reference, when OpenBLAS is there (the check falls back to a double loop). */
static void problem_reference(problem *p)
{
#ifdef KP_HAVE_OPENBLAS
    if (p->ref)
        sgemm_host(p, p->ref);
#else
    (void)p;
#endif
}

/* Folds one compared entry into the running maxima. */
static void compare(double got, double want, double *max_diff, double *max_ref, int *nan)
{
    double d = fabs(got - want);
    if (isnan(d))
        *nan = 1;
    else if (d > *max_diff)
        *max_diff = d;
    if (fabs(want) > *max_ref)
        *max_ref = fabs(want);
}

/*
 * Normwise relative error max|C - R| / max|R|. Rounding in a K-term float dot product grows at
 * most linearly with K (Higham's gamma_K = K u), so the tolerance is 4 K u with u = 2^-24: a few
 * times what either library's rounding can reach, and far below what one skipped, doubled or
 * misplaced tile of the sum produces. Without OpenBLAS the reference is a double-precision loop
 * over every entry up to 2^27 multiply-adds, else over 4096 entries (64 random rows of 64 random
 * columns).
 */
static check check_result(const problem *p, const float *out)
{
    const shape *s = &p->s;
    size_t m = (size_t)s->m, n = (size_t)s->n, k = (size_t)s->k;
    double max_diff = 0, max_ref = 0;
    int nan = 0;
    if (p->ref) {
        for (size_t i = 0; i < m * n; i++)
            compare(out[i], p->ref[i], &max_diff, &max_ref, &nan);
    } else if ((double)m * (double)n * (double)k <= 0x1p27) {
        double *acc = malloc(n * sizeof *acc);
        if (!acc)
            return (check){.err = NAN, .tol = 0, .ok = 0};
        for (size_t i = 0; i < m; i++) {
            memset(acc, 0, n * sizeof *acc);
            for (size_t kk = 0; kk < k; kk++) {
                double aik = p->a[i * k + kk];
                const float *row = p->b + kk * n;
                for (size_t j = 0; j < n; j++)
                    acc[j] += aik * row[j];
            }
            for (size_t j = 0; j < n; j++)
                compare(out[i * n + j], acc[j], &max_diff, &max_ref, &nan);
        }
        free(acc);
    } else {
        /* 64 random columns by 64 random rows; each column of B is gathered once, so the
         * check reads B with a large stride only 64 K times. */
        double *col = malloc(k * sizeof *col);
        if (!col)
            return (check){.err = NAN, .tol = 0, .ok = 0};
        uint64_t r = 0x2545f4914f6cdd1dull;
        for (int cj = 0; cj < 64; cj++) {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            size_t j = (size_t)(r % n);
            for (size_t kk = 0; kk < k; kk++)
                col[kk] = p->b[kk * n + j];
            for (int ri = 0; ri < 64; ri++) {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                size_t i = (size_t)(r % m);
                double dot = 0;
                for (size_t kk = 0; kk < k; kk++)
                    dot += (double)p->a[i * k + kk] * col[kk];
                compare(out[i * n + j], dot, &max_diff, &max_ref, &nan);
            }
        }
        free(col);
    }
    check c = {.tol = 4.0 * (double)k * 0x1p-24};
    c.err = nan ? NAN : max_diff / (max_ref > 0 ? max_ref : 1.0);
    c.ok = !nan && c.err <= c.tol;
    return c;
}

/* Reads C back and checks it; a failure is printed on stderr at once, not only in the table. */
static kp_status read_and_check(kpb *b, problem *p, const char *who, check *c)
{
    kp_status st = kp_buffer_read(b->rt, p->dc, 0, numel_c(&p->s) * sizeof(float), p->c);
    if (st != KP_OK)
        return st;
    *c = check_result(p, p->c);
    if (!c->ok)
        fprintf(stderr,
                "bench-blas: !! WRONG RESULT: %s on %s: relative error %.3g > tolerance %.3g; "
                "its time is withheld\n",
                who, p->name, c->err, c->tol);
    return KP_OK;
}

#ifdef KP_HAVE_CLBLAST
/*
 * A one-work-item kernel that spins for roughly 100 us on a GPU. On GPUs it is enqueued before
 * every event-timed call (Kernelport's and CLBlast's): the queue is then busy while the host
 * submits the call, so the timed span, which starts at a marker, holds the GEMM's own commands
 * rather than the host's submission latency. peer-blas.py does the same with torch.cuda._sleep.
 */
typedef struct busy {
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem mem;
} busy;

static const char busy_source[] = "__kernel void kp_bench_busy(__global float *x, int n)\n"
                                  "{\n"
                                  "    float v = x[0];\n"
                                  "    for (int i = 0; i < n; i++)\n"
                                  "        v = v * 0.999f + 0.001f;\n"
                                  "    if (v == 12345.0f)\n"
                                  "        x[0] = v;\n"
                                  "}\n";

static void busy_fini(busy *bz)
{
    if (bz->kernel)
        clReleaseKernel(bz->kernel);
    if (bz->program)
        clReleaseProgram(bz->program);
    if (bz->mem)
        clReleaseMemObject(bz->mem);
    memset(bz, 0, sizeof *bz);
}

/* Returns 0, or -1 when the kernel could not be made (timing then goes without it). */
static int busy_init(busy *bz, void *context, void *queue, void *device)
{
    memset(bz, 0, sizeof *bz);
    const char *src = busy_source;
    float seed = 0.5f;
    cl_int n = 50000, err = CL_SUCCESS;
    cl_device_id dev = device;
    bz->queue = queue;
    bz->program = clCreateProgramWithSource(context, 1, &src, NULL, &err);
    if (err == CL_SUCCESS)
        err = clBuildProgram(bz->program, 1, &dev, "", NULL, NULL);
    if (err == CL_SUCCESS)
        bz->kernel = clCreateKernel(bz->program, "kp_bench_busy", &err);
    if (err == CL_SUCCESS)
        bz->mem = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof seed,
                                 &seed, &err);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(bz->kernel, 0, sizeof bz->mem, &bz->mem);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(bz->kernel, 1, sizeof n, &n);
    if (err != CL_SUCCESS)
        busy_fini(bz);
    return err == CL_SUCCESS ? 0 : -1;
}

static void busy_enqueue(void *user)
{
    busy *bz = user;
    size_t one = 1;
    clEnqueueNDRangeKernel(bz->queue, bz->kernel, 1, NULL, &one, &one, 0, NULL, NULL);
}

/* CLBlast on the runtime's own queue and buffers, as the blas plugin calls it. */
static CLBlastStatusCode direct_sgemm(const problem *p, cl_command_queue queue, cl_event *ev)
{
    size_t m = (size_t)p->s.m, n = (size_t)p->s.n, k = (size_t)p->s.k;
    return CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k,
                        1.0f, (cl_mem)kp_buffer_cl_mem(p->da), 0, k,
                        (cl_mem)kp_buffer_cl_mem(p->db), 0, n, 0.0f,
                        (cl_mem)kp_buffer_cl_mem(p->dc), 0, n, &queue, ev);
}

/*
 * Device time of a direct CLBlastSgemm: from a marker enqueued just before the call to the end
 * of the call's event, the same span the core times for a library-backed launch (CLBlast may
 * enqueue pad or transpose kernels before the GEMM, and its event covers only the last one).
 * Returns 0, or writes why not into `why`.
 */
static int direct_time(kpb *b, const problem *p, cl_command_queue q, double *median, char *why,
                       size_t why_size)
{
    double t[200], total = 0;
    int runs = 0;
    CLBlastStatusCode code = CLBlastSuccess;
    for (int i = 0; i < 3 && code == CLBlastSuccess; i++)
        code = direct_sgemm(p, q, NULL);
    clFinish(q);
    while (code == CLBlastSuccess && runs < 200 && kpb_more_runs(b, runs, total)) {
        cl_event mark = NULL, ev = NULL;
        cl_ulong start = 0, end = 0;
        if (b->before_timed)
            b->before_timed(b->before_timed_user);
        cl_int err = clEnqueueMarkerWithWaitList(q, 0, NULL, &mark);
        code = err == CL_SUCCESS ? direct_sgemm(p, q, &ev) : CLBlastSuccess;
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
            snprintf(why, why_size, "OpenCL error %d while timing CLBlast directly", err);
            return -1;
        }
        t[runs] = end > start ? (double)(end - start) * 1e-9 : 0;
        total += t[runs++];
    }
    if (code != CLBlastSuccess) {
        snprintf(why, why_size, "CLBlastSgemm returned status %d", (int)code);
        return -1;
    }
    *median = kpb_median(t, (size_t)runs);
    return 0;
}

/* Wall time of `reps` back-to-back calls on one path, then a wait for all of them. */
static double batch_wall(kpb *b, kp_kernel *gemm, const problem *p, cl_command_queue q, int reps,
                         int through_kp, int *failed)
{
    double t0 = kpb_now();
    for (int r = 0; r < reps && !*failed; r++) {
        if (through_kp)
            *failed = kp_kernel_launch(b->rt, gemm, p->args, 5, NULL) != KP_OK;
        else
            *failed = direct_sgemm(p, q, NULL) != CLBlastSuccess;
    }
    if (through_kp)
        kp_finish(b->rt);
    else
        clFinish(q);
    return kpb_now() - t0;
}

/*
 * The cost of the Kernelport launch path (validation, tuning lookup, plugin planning) over
 * calling CLBlast directly: the wall time of R back-to-back calls plus one wait, each path, same
 * queue, same buffers. R is chosen so one batch lasts about a quarter second; the paths alternate
 * which goes first in each trial so clock and thermal drift do not favour either.
 */
static void launch_path(kpb *b, kp_kernel *gemm, const problem *p, cl_command_queue q,
                        double kernel_s)
{
    enum { MAX_TRIALS = 7 };
    double target = b->quick ? 0.05 : 0.25;
    int reps = kernel_s > 0 ? (int)ceil(target / kernel_s) : 100;
    int max_reps = b->quick ? 200 : 2000;
    reps = reps < 5 ? 5 : reps > max_reps ? max_reps : reps;
    int trials = b->quick ? 3 : MAX_TRIALS, failed = 0;
    double kp_t[MAX_TRIALS], cl_t[MAX_TRIALS];
    batch_wall(b, gemm, p, q, 2, 1, &failed);
    batch_wall(b, gemm, p, q, 2, 0, &failed);
    for (int tr = 0; tr < trials && !failed; tr++) {
        int kp_first = tr % 2 == 0;
        double first = batch_wall(b, gemm, p, q, reps, kp_first, &failed);
        double second = batch_wall(b, gemm, p, q, reps, !kp_first, &failed);
        kp_t[tr] = kp_first ? first : second;
        cl_t[tr] = kp_first ? second : first;
    }
    char name[96], note[400];
    snprintf(name, sizeof name, "%s launch-path", p->name);
    kpb_row row = {.case_name = name,
                   .ours = "blas.gemm",
                   .peer = "CLBlastSgemm direct",
                   .flops = 2.0 * (double)p->s.m * (double)p->s.n * (double)p->s.k,
                   .bytes = 4.0 * (double)(p->s.m * p->s.k + p->s.k * p->s.n + p->s.m * p->s.n),
                   .note = note};
    if (failed) {
        row.status = KP_ERR_CL;
        snprintf(note, sizeof note, "a call failed during the launch-path batches: %s",
                 kp_last_error(b->rt));
        kpb_add(b, &row);
        return;
    }
    double kp_med = kpb_median(kp_t, (size_t)trials), cl_med = kpb_median(cl_t, (size_t)trials);
    double overhead = (kp_med - cl_med) / cl_med * 100.0;
    /* Noise only ever adds time, so the fastest batches give a second, steadier estimate. */
    double overhead_min = (kp_t[0] - cl_t[0]) / cl_t[0] * 100.0;
    row.ours_s = kp_med / reps;
    row.ours_p10 = kp_t[trials / 10] / reps;
    row.ours_p90 = kp_t[(trials * 9) / 10] / reps;
    row.peer_s = cl_med / reps;
    snprintf(note, sizeof note,
             "wall time per call of %d back-to-back calls + one wait, median of %d trials; "
             "Kernelport launch path %+.2f%% over CLBlast direct (fastest batches: %+.2f%%)%s",
             reps, trials, overhead, overhead_min,
             p->s.m == 256 ? (overhead < 2.0 ? " (target < 2%: met)" : " (target < 2%: NOT met)")
                           : "");
    kpb_row_metric(&row, "overhead_pct", overhead);
    kpb_row_metric(&row, "overhead_min_pct", overhead_min);
    kpb_row_metric(&row, "repeats", reps);
    kpb_row_metric(&row, "trials", trials);
    kpb_add(b, &row);
}
#endif

/* The tuning blas.gemm runs with (STYLE: benchmarks say so): the values the manifest sets, where
 * they come from, and how many tunables keep their defaults. */
static void note_tuning(kpb *b, kp_kernel *k)
{
    kp_kernel_info ki = {.struct_size = sizeof ki};
    if (kp_kernel_info_get(k, &ki) != KP_OK)
        return;
    char values[900] = "", origins[600] = "";
    size_t nv = 0, no = 0, set = 0;
    for (size_t i = 0; i < ki.n_tunables; i++) {
        kp_tuning_info ti = {.struct_size = sizeof ti};
        if (kp_kernel_tuning(b->rt, k, i, &ti) != KP_OK) {
            kpb_note(b, "blas.gemm tuning: %s", kp_last_error(b->rt));
            return;
        }
        if (strcmp(ti.origin, "default") == 0)
            continue;
        set++;
        char value[64];
        if (ti.value_text && ti.value_text[0])
            snprintf(value, sizeof value, "%s", ti.value_text);
        else
            snprintf(value, sizeof value, "%lld", (long long)ti.value);
        if (nv < sizeof values)
            nv += (size_t)snprintf(values + nv, sizeof values - nv, " %s=%s", ti.name, value);
        if (no < sizeof origins && !strstr(origins, ti.origin))
            no += (size_t)snprintf(origins + no, sizeof origins - no, "%s%s", no ? "; " : "",
                                   ti.origin);
    }
    kpb_note(b, "blas.gemm tuning: %zu of %zu tunables set by the manifest%s%s", set, ki.n_tunables,
             set ? ":" : " (all at their defaults)", values);
    kpb_note(b, "blas.gemm tuning from: %s", set ? origins : "default");
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && v[0] ? v : fallback;
}

/*
 * --first-call: in this fresh process, the wall time from kp_kernel_launch to kp_finish of the
 * first 1024^3 GEMM (program builds or cache loads included), then of the second. Run it twice
 * in a row with the same cache directories: the first run shows a cold cache, the second a warm
 * one.
 */
static int first_call(kpb *b, kp_kernel *gemm, double create_s)
{
    b->no_peak = 1; /* the peak kernels would warm the OpenCL compiler before the timed call */
    problem p;
    char why[512] = "";
    double t[2] = {0, 0};
    check c = {0};
    kp_status st = problem_init(b, &p, (shape){1024, 1024, 1024}, why, sizeof why);
    for (int i = 0; i < 2 && st == KP_OK; i++) {
        double t0 = kpb_now();
        st = kp_kernel_launch(b->rt, gemm, p.args, 5, NULL);
        if (st == KP_OK)
            st = kp_finish(b->rt);
        t[i] = kpb_now() - t0;
    }
    /* The reference only now: OpenBLAS's threads spin for a while after a call and would
     * compete with a CPU device's compiler and kernel during the timed calls. */
    if (st == KP_OK) {
        problem_reference(&p);
        st = read_and_check(b, &p, "blas.gemm", &c);
    }
    if (st != KP_OK && !why[0])
        snprintf(why, sizeof why, "%s", kp_last_error(b->rt));
    kpb_note(b,
             "first call: wall time from kp_kernel_launch to kp_finish of the first 1024^3 "
             "blas.gemm in this process (program build or cache load included), then the second");
    kpb_note(b, "caches: POCL_CACHE_DIR=%s XDG_CACHE_HOME=%s CUDA_CACHE_PATH=%s",
             env_or("POCL_CACHE_DIR", "(default)"), env_or("XDG_CACHE_HOME", "(default)"),
             env_or("CUDA_CACHE_PATH", "(default)"));
    kpb_metric_add(b, "runtime_create_s", create_s);
    if (st != KP_OK) {
        fprintf(stderr, "bench-blas: first call failed: %s: %s\n", kp_status_name(st), why);
        kpb_note(b, "FAILED: %s: %s", kp_status_name(st), why);
    } else {
        kpb_note(b, "first 1024^3 blas.gemm: %.2f ms; second: %.2f ms; runtime creation: %.2f ms%s",
                 t[0] * 1e3, t[1] * 1e3, create_s * 1e3, c.ok ? "" : "; !! WRONG RESULT");
        kpb_metric_add(b, "first_call_s", t[0]);
        kpb_metric_add(b, "second_call_s", t[1]);
        kpb_metric_add(b, "max_rel_err", c.err);
        kpb_metric_add(b, "tolerance", c.tol);
    }
    problem_fini(b, &p);
    int rc = kpb_close(b);
    return rc ? rc : st != KP_OK || !c.ok;
}

/* Times one shape on every path; returns the number of failures (0 or 1). */
static int bench_shape(kpb *b, kp_kernel *gemm, shape s, void *queue)
{
    problem p;
    char note[600] = "", why[512] = "";
    int failures = 0;
    kp_status st = problem_init(b, &p, s, why, sizeof why);
    if (st == KP_OK)
        problem_reference(&p);
    kpb_row row = {.case_name = p.name,
                   .ours = "blas.gemm",
                   .flops = 2.0 * (double)s.m * (double)s.n * (double)s.k,
                   .bytes = 4.0 * (double)(s.m * s.k + s.k * s.n + s.m * s.n)};
    if (st == KP_OK)
        st = kpb_time_kernel(b, gemm, p.args, 5, &row.ours_s, &row.ours_p10, &row.ours_p90);
    check c = {0};
    if (st == KP_OK)
        st = read_and_check(b, &p, "blas.gemm", &c);
    if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", why[0] ? why : kp_last_error(b->rt));
        fprintf(stderr, "bench-blas: %s: %s: %s\n", p.name, kp_status_name(st), note);
        row.status = st;
        row.ours_s = 0;
        failures = 1;
    } else {
        kpb_row_metric(&row, "max_rel_err", c.err);
        kpb_row_metric(&row, "tolerance", c.tol);
        if (!c.ok) {
            snprintf(note, sizeof note, "!! WRONG RESULT: relative error %.3g > %.3g", c.err,
                     c.tol);
            row.status = KP_ERR_VERIFY;
            row.ours_s = 0; /* a fast wrong kernel is never reported as a speed */
            failures = 1;
        }
    }
#ifdef KP_HAVE_CLBLAST
    double direct_s = 0;
    if (queue && p.dc && direct_time(b, &p, queue, &direct_s, why, sizeof why) == 0) {
        check dc = {0};
        if (read_and_check(b, &p, "CLBlastSgemm (direct)", &dc) == KP_OK && dc.ok)
            kpb_row_metric(&row, "clblast_direct_s", direct_s);
        else
            snprintf(note + strlen(note), sizeof note - strlen(note),
                     "%sCLBlast direct: !! WRONG RESULT (time withheld)", note[0] ? "; " : "");
    } else if (queue && p.dc) {
        snprintf(note + strlen(note), sizeof note - strlen(note), "%sCLBlast direct: %s",
                 note[0] ? "; " : "", why);
    }
#else
    (void)queue;
#endif
#ifdef KP_HAVE_OPENBLAS
    char peer[96];
    if (p.ref) {
        /* On a GPU device OpenBLAS is not a peer on the same device but the best path the host
         * offers without the accelerator. */
        snprintf(peer, sizeof peer, "cblas_sgemm (OpenBLAS, %d threads%s)",
                 openblas_get_num_threads(),
                 b->device.type == KP_DEVICE_CPU ? "" : "; best CPU path");
        row.peer = peer;
        row.peer_s = kpb_time_host(b, run_sgemm, &p);
    }
#endif
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
#ifdef KP_HAVE_CLBLAST
    if (queue && row.status == KP_OK && s.m == s.n && s.n == s.k &&
        (s.n == 256 || (s.n == 1024 && !b->quick)))
        launch_path(b, gemm, &p, queue, row.ours_s);
#endif
    problem_fini(b, &p);
    return failures;
}

int main(int argc, char **argv)
{
    int first = 0;
    const kpb_flag flags[] = {
        {"--first-call", "time runtime creation and the first two 1024^3 GEMMs (wall), only",
         &first, NULL},
        {NULL, NULL, NULL, NULL},
    };
    kpb b;
    double t0 = kpb_now();
    kpb_open_flags(&b, "bench-blas", argc, argv, flags);
    double create_s = kpb_now() - t0;
    kp_kernel *gemm;
    if (kp_kernel_find(b.rt, "blas.gemm", &gemm) != KP_OK) {
        fprintf(stderr, "bench-blas: %s\n", kp_last_error(b.rt));
        kp_runtime_destroy(b.rt);
        return 1;
    }
    if (first)
        return first_call(&b, gemm, create_s);
    b.max_case_s = b.quick ? 0.5 : 2.0;
    note_tuning(&b, gemm);

    void *queue = NULL;
#ifdef KP_HAVE_CLBLAST
    void *context = NULL, *device = NULL;
    busy bz = {0};
    if (kp_runtime_opencl(b.rt, &context, &queue, &device) != KP_OK)
        queue = NULL;
    /* Only GPUs: on a CPU device the spinning work-item would take a core from the GEMM, and the
     * host's submission latency is small against its milliseconds. */
    if (queue && b.device.type == KP_DEVICE_GPU) {
        if (busy_init(&bz, context, queue, device) == 0) {
            b.before_timed = busy_enqueue;
            b.before_timed_user = &bz;
            kpb_note(&b, "each event-timed call is preceded by a ~100 us busy kernel, so that its "
                         "span holds the GEMM rather than the host's submission latency");
        } else {
            kpb_note(&b, "the busy kernel could not be built: event-timed spans include the "
                         "host's submission latency");
        }
    }
    kpb_note(&b, "clblast_direct_s: CLBlastSgemm on the runtime's queue and buffers, device time "
                 "from a marker before the call to the end of its event (the span Kernelport "
                 "times for a library-backed launch); CLBlast's parameter overrides hold per "
                 "device for the whole process, so it runs with the parameters the plugin set");
#else
    kpb_note(&b, "CLBlast-direct comparison not built (CLBlast not found at configure time)");
#endif
#ifdef KP_HAVE_OPENBLAS
    kpb_note(&b, "checked against OpenBLAS cblas_sgemm: max|C-R|/max|R| <= 4*K*2^-24");
#else
    kpb_note(&b, "no CPU peer (OpenBLAS not found at build time); checked against a double "
                 "host loop (every entry up to 2^27 multiply-adds, else 4096 sampled entries): "
                 "max|C-R|/max|R| <= 4*K*2^-24");
#endif

    int failures = 0, gpu = b.device.type == KP_DEVICE_GPU;
    int64_t largest = b.quick ? 512 : gpu ? 8192 : 1024;
    for (size_t i = 0; i < sizeof squares / sizeof *squares; i++)
        if (squares[i] <= largest)
            failures += bench_shape(&b, gemm, (shape){squares[i], squares[i], squares[i]}, queue);
    /* --quick keeps the smallest model shape: it is cheaper than 512^3 and the only
     * non-square product, where a layout mistake would show. */
    for (size_t i = 0; i < (b.quick ? 1u : sizeof model_shapes / sizeof *model_shapes); i++)
        failures += bench_shape(&b, gemm, model_shapes[i], queue);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
#ifdef KP_HAVE_CLBLAST
    kp_finish(b.rt);
    busy_fini(&bz);
#endif
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
