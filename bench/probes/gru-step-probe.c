// SPDX-License-Identifier: Apache-2.0
/*
 * gru-step-probe: where a batch-1 gru.step's time goes on a CPU device (PoCL) against the OpenBLAS
 * host path of the same math (#30). Wall time per call of bursts (each call then a wait for the
 * queue), every variant alternated with the others over rounds in one process, medians:
 *   host         two cblas_sgemv and the gates on this thread (bench-cpu-routes' host path)
 *   gru.step     kp_kernel_launch + kp_finish (the fused kernel), and its event time; WG 128
 *                and WG 256 the same at those work-group sizes; BATCH_GEMM 1 every product
 *                through blas.gemm (OpenBLAS in the queue) and the gate kernel
 *   empty native an empty clEnqueueNativeKernel + clFinish: what any trip through the queue costs
 *   native 1     the host path inside one native command whose mem_list is one buffer holding
 *                every operand (no maps)
 *   native 7     the same on the step's seven buffers through mem_list, listed in the order
 *                they were created (the permutation PoCL hands the pointers over in is printed
 *                first: 3.1 sorts them into creation order)
 *   maps         the seven buffers mapped (one wait), the host path on this thread, unmapped
 * A diagnostic run by hand on a CPU device; not a test.
 *
 *   --also SPEC  the fused step and an empty native command on a second device too, alternated
 *                with the rest: POCL_DEVICES="pthread basic" gru-step-probe --device pthread
 *                --also basic compares PoCL's basic device, whose commands run in the thread that
 *                enqueues them, with its pthread one
 *
 *   gru-step-probe [--rounds 7] [--device SPEC] [--also SPEC] [H I]...
 *   (default sizes: 256 321 and 1024 1024)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernelport/kernelport.h>

enum { W_IH, W_HH, B_IH, B_HH, X, HS, H_OUT, NBUF };
enum {
    V_HOST,
    V_STEP,
    V_STEP128,
    V_STEP256,
    V_GEMM,
    V_EMPTY,
    V_NATIVE1,
    V_NATIVE7,
    V_MAPS,
    V_OTHER_STEP, /* on the --also device */
    V_OTHER_EMPTY,
    NV
};
static const char *const names[NV] = {
    "host",     "gru.step", "WG 128", "WG 256",          "BATCH_GEMM 1",       "empty native",
    "native 1", "native 7", "maps",   "--also gru.step", "--also empty native"};
/* gru.step's work-group size and BATCH_GEMM in each gru.step variant (0: not one) */
static const int64_t wg_of[NV] = {
    [V_STEP] = 64, [V_STEP128] = 128, [V_STEP256] = 256, [V_GEMM] = 64};
static const int64_t gemm_of[NV] = {[V_STEP] = 8, [V_STEP128] = 8, [V_STEP256] = 8, [V_GEMM] = 1};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void check(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) {
        fprintf(stderr, "gru-step-probe: %s failed (OpenCL error %d)\n", what, (int)err);
        exit(1);
    }
}

static void check_kp(kp_status st, const char *what)
{
    if (st != KP_OK) {
        fprintf(stderr, "gru-step-probe: %s: %s\n", what, kp_last_error(NULL));
        exit(1);
    }
}

/* The step on host pointers: gx = W_ih x + b_ih, gh = W_hh h + b_hh, then the gates. */
typedef struct step {
    int H, NI; /* NI: "I" is <complex.h>'s, which cblas.h includes */
    float *p[NBUF];
    float *gx, *gh;
} step;

static void host_step(const step *s)
{
    const int H = s->H, G = 3 * H;
    memcpy(s->gx, s->p[B_IH], (size_t)G * sizeof(float));
    memcpy(s->gh, s->p[B_HH], (size_t)G * sizeof(float));
    cblas_sgemv(CblasRowMajor, CblasNoTrans, G, s->NI, 1.0f, s->p[W_IH], s->NI, s->p[X], 1, 1.0f,
                s->gx, 1);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, G, H, 1.0f, s->p[W_HH], H, s->p[HS], 1, 1.0f, s->gh,
                1);
    for (int u = 0; u < H; u++) {
        float r = 1.0f / (1.0f + expf(-(s->gx[u] + s->gh[u])));
        float z = 1.0f / (1.0f + expf(-(s->gx[H + u] + s->gh[H + u])));
        float n = tanhf(s->gx[2 * H + u] + r * s->gh[2 * H + u]);
        s->p[H_OUT][u] = (1.0f - z) * n + z * s->p[HS][u];
    }
}

/* A native command's arguments: the pointers PoCL fills in (ptr), and where each operand lives
 * in them: operand i is at ptr[slot[i]] + off[i] floats. */
typedef struct native_args {
    step s;
    void *ptr[NBUF];
    int slot[NBUF];
    size_t off[NBUF];
} native_args;

static void native_step(void *a)
{
    native_args *n = a;
    for (int i = 0; i < NBUF; i++)
        n->s.p[i] = (float *)n->ptr[n->slot[i]] + n->off[i];
    host_step(&n->s);
}

static void noop(void *a)
{
    (void)a;
}

static void *seen[NBUF];
static void record(void *a)
{
    memcpy(seen, a, sizeof seen);
}

typedef struct probe {
    cl_context ctx;
    cl_command_queue q;
    kp_runtime *rt;
    kp_kernel *k;
    int H, NI;
    size_t len[NBUF], packed_off[NBUF];
    cl_mem m[NBUF], packed;
    kp_buffer *kb[NBUF];
    kp_arg args[NBUF];
    step host;
    float *want;
} probe;

/* The probe on the --also device, when there is one. */
static probe *other;

static void run(probe *p, int v)
{
    if (v == V_OTHER_STEP || v == V_OTHER_EMPTY) {
        run(other, v == V_OTHER_STEP ? V_STEP : V_EMPTY);
    } else if (v == V_HOST) {
        host_step(&p->host);
    } else if (wg_of[v]) {
        check_kp(kp_kernel_launch(p->rt, p->k, p->args, NBUF, NULL), "gru.step");
        check_kp(kp_finish(p->rt), "kp_finish");
    } else if (v == V_EMPTY) {
        check(clEnqueueNativeKernel(p->q, noop, NULL, 0, 0, NULL, NULL, 0, NULL, NULL), "native");
        check(clFinish(p->q), "clFinish");
    } else if (v == V_NATIVE1 || v == V_NATIVE7) {
        native_args n = {.s = p->host};
        const void *loc[NBUF];
        int count = v == V_NATIVE1 ? 1 : NBUF;
        for (int i = 0; i < NBUF; i++) {
            n.slot[i] = v == V_NATIVE1 ? 0 : i;
            n.off[i] = v == V_NATIVE1 ? p->packed_off[i] : 0;
        }
        for (int i = 0; i < count; i++)
            loc[i] = &n.ptr[i];
        /* The result is checked below, so a permutation shows as a wrong answer. */
        check(clEnqueueNativeKernel(p->q, native_step, &n, sizeof n, (cl_uint)count,
                                    v == V_NATIVE1 ? &p->packed : p->m, loc, 0, NULL, NULL),
              "native step");
        check(clFinish(p->q), "clFinish");
    } else {
        step s = p->host;
        cl_event done;
        cl_int err;
        for (int i = 0; i < NBUF; i++) {
            s.p[i] = clEnqueueMapBuffer(p->q, p->m[i], CL_FALSE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                        p->len[i] * sizeof(float), 0, NULL,
                                        i == NBUF - 1 ? &done : NULL, &err);
            check(err, "map");
        }
        check(clWaitForEvents(1, &done), "wait");
        clReleaseEvent(done);
        host_step(&s);
        for (int i = 0; i < NBUF; i++)
            check(clEnqueueUnmapMemObject(p->q, p->m[i], s.p[i], 0, NULL, NULL), "unmap");
        check(clFinish(p->q), "clFinish");
    }
}

static double max_diff(probe *p, int v)
{
    float *got = malloc(p->len[H_OUT] * sizeof(float));
    cl_mem m = v == V_NATIVE1 ? p->packed : p->m[H_OUT];
    size_t off = v == V_NATIVE1 ? p->packed_off[H_OUT] : 0;
    check(clEnqueueReadBuffer(p->q, m, CL_TRUE, off * sizeof(float), p->len[H_OUT] * sizeof(float),
                              got, 0, NULL, NULL),
          "read");
    double d = 0;
    for (size_t i = 0; i < p->len[H_OUT]; i++)
        d = fmax(d, fabs((double)got[i] - (double)p->want[i]));
    free(got);
    return d;
}

/* Which buffer's pointer each slot of a native command's arguments gets when mem_list lists the
 * seven buffers in creation order: each buffer's own pointer comes from a command of its own. */
static void permutation(probe *p)
{
    void *own[NBUF];
    for (int i = 0; i < NBUF; i++) {
        void *a[NBUF] = {0};
        const void *l0 = &a[0];
        check(clEnqueueNativeKernel(p->q, record, a, sizeof a, 1, &p->m[i], &l0, 0, NULL, NULL),
              "native");
        check(clFinish(p->q), "clFinish");
        own[i] = seen[0];
    }
    for (int reversed = 0; reversed < 2; reversed++) {
        void *a[NBUF] = {0};
        const void *loc[NBUF];
        cl_mem list[NBUF];
        for (int i = 0; i < NBUF; i++) {
            loc[i] = &a[i];
            list[i] = p->m[reversed ? NBUF - 1 - i : i];
        }
        check(clEnqueueNativeKernel(p->q, record, a, sizeof a, NBUF, list, loc, 0, NULL, NULL),
              "native");
        check(clFinish(p->q), "clFinish");
        printf("mem_list of buffers (creation order)");
        for (int i = 0; i < NBUF; i++)
            printf(" %d", reversed ? NBUF - 1 - i : i);
        printf(": slot i got buffer");
        for (int i = 0; i < NBUF; i++) {
            int j = 0;
            while (j < NBUF && own[j] != seen[i])
                j++;
            printf(" %d", j);
        }
        printf("; the handles' address ranks:");
        for (int i = 0; i < NBUF; i++) {
            int rank = 0;
            for (int j = 0; j < NBUF; j++)
                rank += (uintptr_t)p->m[j] < (uintptr_t)list[i];
            printf(" %d", rank);
        }
        printf("\n");
    }
}

static void setup(probe *p, int H, int in)
{
    p->H = H, p->NI = in;
    const size_t G = 3 * (size_t)H;
    const size_t len[NBUF] = {G * in, G * H, G, G, (size_t)in, (size_t)H, (size_t)H};
    size_t total = 0;
    float k = 1.0f / sqrtf((float)H);
    srand(7);
    p->host =
        (step){.H = H, .NI = in, .gx = malloc(G * sizeof(float)), .gh = malloc(G * sizeof(float))};
    cl_int err;
    for (int i = 0; i < NBUF; i++) {
        p->len[i] = len[i];
        p->packed_off[i] = total;
        total += (len[i] + 15) / 16 * 16;
        p->host.p[i] = malloc(len[i] * sizeof(float));
        float scale = i <= B_HH ? k : 1.0f;
        for (size_t e = 0; e < len[i]; e++)
            p->host.p[i][e] = scale * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
        p->m[i] = clCreateBuffer(p->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 len[i] * sizeof(float), p->host.p[i], &err);
        check(err, "clCreateBuffer");
        check_kp(kp_buffer_wrap(p->rt, p->m[i], len[i] * sizeof(float), &p->kb[i]), "wrap");
    }
    p->packed = clCreateBuffer(p->ctx, CL_MEM_READ_WRITE, total * sizeof(float), NULL, &err);
    check(err, "clCreateBuffer");
    for (int i = 0; i < NBUF; i++)
        check(clEnqueueWriteBuffer(p->q, p->packed, CL_TRUE, p->packed_off[i] * sizeof(float),
                                   len[i] * sizeof(float), p->host.p[i], 0, NULL, NULL),
              "write");
    const kp_arg args[NBUF] = {
        KP_ARG_TENSOR("w_ih", kp_tensor_2d(p->kb[W_IH], KP_F32, (int64_t)G, in)),
        KP_ARG_TENSOR("w_hh", kp_tensor_2d(p->kb[W_HH], KP_F32, (int64_t)G, H)),
        KP_ARG_TENSOR("b_ih", kp_tensor_1d(p->kb[B_IH], KP_F32, (int64_t)G)),
        KP_ARG_TENSOR("b_hh", kp_tensor_1d(p->kb[B_HH], KP_F32, (int64_t)G)),
        KP_ARG_TENSOR("x", kp_tensor_2d(p->kb[X], KP_F32, 1, in)),
        KP_ARG_TENSOR("h", kp_tensor_2d(p->kb[HS], KP_F32, 1, H)),
        KP_ARG_TENSOR("h_out", kp_tensor_2d(p->kb[H_OUT], KP_F32, 1, H))};
    memcpy(p->args, args, sizeof args);
    host_step(&p->host);
    p->want = malloc((size_t)H * sizeof(float));
    memcpy(p->want, p->host.p[H_OUT], (size_t)H * sizeof(float));
}

static void teardown(probe *p)
{
    for (int i = 0; i < NBUF; i++) {
        kp_buffer_destroy(p->rt, p->kb[i]);
        clReleaseMemObject(p->m[i]);
        free(p->host.p[i]);
    }
    clReleaseMemObject(p->packed);
    free(p->host.gx), free(p->host.gh), free(p->want);
}

static void tune(probe *p, int v)
{
    if (v == V_OTHER_STEP)
        tune(other, V_STEP);
    if (!wg_of[v])
        return;
    check_kp(kp_kernel_tunable_set(p->rt, p->k, "WG", wg_of[v]), "WG");
    check_kp(kp_kernel_tunable_set(p->rt, p->k, "BATCH_GEMM", gemm_of[v]), "BATCH_GEMM");
}

static void nap(void)
{
    struct timespec t = {0, 100 * 1000 * 1000};
    nanosleep(&t, NULL);
}

static void measure(probe *p, int rounds)
{
    double t[NV][32], ev[32];
    int reps[NV];
    const int nv = other ? NV : V_OTHER_STEP;
    for (int v = 0; v < nv; v++) {
        tune(p, v);
        run(p, v);
        if (v != V_HOST && v != V_EMPTY && v != V_OTHER_EMPTY)
            printf("  %-12s max |h' - host| = %.3g\n", names[v],
                   v == V_OTHER_STEP ? max_diff(other, V_STEP) : max_diff(p, v));
        double t0 = now();
        run(p, v);
        double one = now() - t0;
        reps[v] = one > 0.02 ? 1 : (int)(0.02 / one) + 1;
        reps[v] = reps[v] > 400 ? 400 : reps[v];
    }
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < nv; i++) {
            int v = (i + r) % nv;
            nap();
            tune(p, v);
            double t0 = now();
            for (int k = 0; k < reps[v]; k++)
                run(p, v);
            t[v][r] = (now() - t0) / reps[v];
        }
        /* the fused kernel's own time (WG 64): its event, one launch at a time */
        tune(p, V_STEP);
        double sum = 0;
        const int n = 50;
        for (int k = 0; k < n; k++) {
            kp_event *e;
            double s;
            check_kp(kp_kernel_launch(p->rt, p->k, p->args, NBUF, &e), "gru.step");
            check_kp(kp_event_wait(p->rt, e), "wait");
            check_kp(kp_event_elapsed(p->rt, e, &s), "elapsed");
            kp_event_destroy(p->rt, e);
            sum += s;
        }
        ev[r] = sum / n;
    }
    double host[32];
    memcpy(host, t[V_HOST], sizeof host);
    qsort(host, (size_t)rounds, sizeof(double), cmp);
    double hm = host[rounds / 2];
    for (int v = 0; v < nv; v++) {
        double s[32];
        memcpy(s, t[v], sizeof s);
        qsort(s, (size_t)rounds, sizeof(double), cmp);
        printf("  %-12s %8.1f us per call (min %.1f, max %.1f)  host/this %.2fx\n", names[v],
               1e6 * s[rounds / 2], 1e6 * s[0], 1e6 * s[rounds - 1], hm / s[rounds / 2]);
    }
    qsort(ev, (size_t)rounds, sizeof(double), cmp);
    printf("  gru.step event time %.1f us (median of %d means)\n", 1e6 * ev[rounds / 2], rounds);
}

/* A runtime on device `spec` (NULL: the default) with gru.step found. */
static void open_probe(probe *p, const char *spec)
{
    kp_runtime_options o = kp_runtime_options_default();
    o.device = spec;
    kp_device_info d = {.struct_size = sizeof d};
    check_kp(kp_runtime_create(&o, &p->rt), "runtime");
    check_kp(kp_runtime_opencl(p->rt, (void **)&p->ctx, (void **)&p->q, NULL), "opencl");
    check_kp(kp_kernel_find(p->rt, "gru.step", &p->k), "gru.step");
    check_kp(kp_runtime_device(p->rt, &d, NULL), "device");
    printf("%s: %s\n", spec ? spec : "device", d.name);
}

int main(int argc, char **argv)
{
    int rounds = 7, sizes[8][2], n = 0;
    const char *device = NULL, *also = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            device = argv[++i];
        else if (strcmp(argv[i], "--also") == 0 && i + 1 < argc)
            also = argv[++i];
        else if (i + 1 < argc && n < 8) {
            sizes[n][0] = atoi(argv[i]);
            sizes[n++][1] = atoi(argv[++i]);
        }
    }
    rounds = rounds < 1 ? 1 : rounds > 31 ? 31 : rounds;
    if (n == 0) {
        sizes[0][0] = 256, sizes[0][1] = 321, sizes[1][0] = 1024, sizes[1][1] = 1024;
        n = 2;
    }
    probe p = {0}, o = {0};
    open_probe(&p, device);
    if (also) {
        open_probe(&o, also);
        other = &o;
    }
    printf("gru-step-probe: %d OpenBLAS threads, %d rounds\n", openblas_get_num_threads(), rounds);
    for (int i = 0; i < n; i++) {
        setup(&p, sizes[i][0], sizes[i][1]);
        if (other)
            setup(other, sizes[i][0], sizes[i][1]);
        printf("B 1, H %d, I %d\n", p.H, p.NI);
        if (i == 0)
            permutation(&p);
        measure(&p, rounds);
        teardown(&p);
        if (other)
            teardown(other);
    }
    kp_runtime_destroy(p.rt);
    if (other)
        kp_runtime_destroy(o.rt);
    return 0;
}
