/* bench-launch: the host's cost per launch of example.axpy through kp_prepared_launch and
 * kp_kernel_launch, against a bare clEnqueueNDRangeKernel of the same kernel (its arguments set
 * once) on the runtime's own queue. Host time of the enqueue calls only: the device work is
 * finished between batches, outside the timing. */
#include <stdio.h>
#include <stdlib.h>

#include <CL/cl.h>

#include "harness.h"

/* example.cl's axpy with the prelude's view type (kp_view1, an int2: offset, stride) written out,
 * so the bare kernel takes the same arguments and does the same work. */
static const char bare_source[] =
    "__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))\n"
    "void axpy(const int n, const float alpha, __global const float *x, const int2 xv,\n"
    "          __global float *y, const int2 yv)\n"
    "{\n"
    "    const int i = get_global_id(0);\n"
    "    if (i >= n)\n"
    "        return;\n"
    "    const int yi = yv.s0 + i * yv.s1;\n"
    "    y[yi] = fma(alpha, x[xv.s0 + i * xv.s1], y[yi]);\n"
    "}\n";

enum { BATCH = 100 };

typedef enum path { BARE, PREPARED, LAUNCH } path;

typedef struct setup {
    kp_runtime *rt;
    cl_command_queue queue;
    cl_kernel bare;
    size_t global, local;
    kp_prepared *prepared;
    kp_kernel *axpy;
    const kp_arg *args;
} setup;

/* Seconds of host time per launch over one batch, or a negative value when a launch failed. */
static double batch(const setup *s, path p)
{
    double t0 = kpb_now();
    for (int i = 0; i < BATCH; i++) {
        int ok;
        if (p == BARE)
            ok = clEnqueueNDRangeKernel(s->queue, s->bare, 1, NULL, &s->global, &s->local, 0, NULL,
                                        NULL) == CL_SUCCESS;
        else if (p == PREPARED)
            ok = kp_prepared_launch(s->prepared, NULL) == KP_OK;
        else
            ok = kp_kernel_launch(s->rt, s->axpy, s->args, 4, NULL) == KP_OK;
        if (!ok)
            return -1;
    }
    double t = kpb_now() - t0;
    clFinish(s->queue);
    return t / BATCH;
}

/* The median over rounds in which the three paths alternate, so drift in the machine's load
 * falls on all of them alike. */
static int measure(kpb *b, const setup *s, double out[3])
{
    enum { MAX_ROUNDS = 200 };
    double v[3][MAX_ROUNDS];
    int rounds = b->quick ? 10 : MAX_ROUNDS;
    for (int p = 0; p < 3; p++)
        if (batch(s, (path)p) < 0) /* warm-up: builds, the first recording */
            return -1;
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < 3; p++)
            if ((v[p][r] = batch(s, (path)p)) < 0)
                return -1;
    for (int p = 0; p < 3; p++)
        out[p] = kpb_median(v[p], (size_t)rounds);
    return 0;
}

static cl_kernel build_bare(cl_context ctx, cl_device_id dev, int wg)
{
    const char *src = bare_source;
    char options[32];
    snprintf(options, sizeof options, "-D WG=%d", wg);
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS || clBuildProgram(prog, 1, &dev, options, NULL, NULL) != CL_SUCCESS)
        return NULL;
    cl_kernel k = clCreateKernel(prog, "axpy", &err);
    clReleaseProgram(prog);
    return err == CL_SUCCESS ? k : NULL;
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-launch", argc, argv);
    setup s = {.rt = b.rt};
    cl_context ctx;
    cl_device_id dev;
    if (kp_runtime_opencl(b.rt, (void **)&ctx, (void **)&s.queue, (void **)&dev) != KP_OK ||
        kp_kernel_find(b.rt, "example.axpy", &s.axpy) != KP_OK) {
        fprintf(stderr, "bench-launch: %s\n", kp_last_error(b.rt));
        return 1;
    }
    const int n = 1024;
    kp_tuning_info wg;
    if (kp_kernel_tuning(b.rt, s.axpy, 0, &wg) != KP_OK) {
        fprintf(stderr, "bench-launch: %s\n", kp_last_error(b.rt));
        return 1;
    }
    float *host = calloc((size_t)n, sizeof *host);
    kp_buffer *bx = NULL, *by = NULL;
    if (!host || kp_buffer_create(b.rt, (size_t)n * 4, &bx) != KP_OK ||
        kp_buffer_create(b.rt, (size_t)n * 4, &by) != KP_OK) {
        fprintf(stderr, "bench-launch: out of memory\n");
        return 1;
    }
    kpb_fill(host, (size_t)n, 1);
    kp_buffer_write(b.rt, bx, 0, (size_t)n * 4, host);
    kp_buffer_write(b.rt, by, 0, (size_t)n * 4, host);
    kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 0.5),
                     KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
    s.args = args;
    s.local = (size_t)wg.value;
    s.global = ((size_t)n + s.local - 1) / s.local * s.local;
    s.bare = build_bare(ctx, dev, (int)wg.value);
    if (!s.bare || kp_prepared_create(b.rt, s.axpy, args, 4, &s.prepared) != KP_OK) {
        fprintf(stderr, "bench-launch: %s\n", s.bare ? kp_last_error(b.rt) : "bare kernel");
        return 1;
    }
    const float alpha = 0.5f;
    const int32_t view[2] = {0, 1};
    cl_mem mx = kp_buffer_cl_mem(bx), my = kp_buffer_cl_mem(by);
    clSetKernelArg(s.bare, 0, sizeof n, &n);
    clSetKernelArg(s.bare, 1, sizeof alpha, &alpha);
    clSetKernelArg(s.bare, 2, sizeof mx, &mx);
    clSetKernelArg(s.bare, 3, sizeof view, view);
    clSetKernelArg(s.bare, 4, sizeof my, &my);
    clSetKernelArg(s.bare, 5, sizeof view, view);

    double t[3];
    if (measure(&b, &s, t) != 0) {
        fprintf(stderr, "bench-launch: a launch failed: %s\n", kp_last_error(b.rt));
        return 1;
    }
    char case_name[64];
    snprintf(case_name, sizeof case_name, "host time per launch, n=%d, WG %lld", n,
             (long long)wg.value);
    kpb_row row = {.case_name = case_name,
                   .ours = "kp_prepared_launch(example.axpy)",
                   .peer = "clEnqueueNDRangeKernel (arguments set once)",
                   .ours_s = t[PREPARED],
                   .ours_p10 = t[PREPARED],
                   .ours_p90 = t[PREPARED],
                   .peer_s = t[BARE]};
    kpb_row_metric(&row, "kp_kernel_launch_s", t[LAUNCH]);
    kpb_add(&b, &row);
    kpb_note(&b, "prepared / bare %.2fx, kp_kernel_launch / bare %.2fx (target: prepared <= 1.2x)",
             t[PREPARED] / t[BARE], t[LAUNCH] / t[BARE]);
    kp_prepared_destroy(s.prepared);
    clReleaseKernel(s.bare);
    free(host);
    return kpb_close(&b);
}
