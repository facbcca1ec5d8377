/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-launch: what the host costs per launch. Three parts:
 * - one launch of example.axpy through kp_prepared_launch and kp_kernel_launch against a bare
 *   clEnqueueNDRangeKernel of the same kernel (its arguments set once) on the runtime's own queue:
 *   host time of the enqueue calls only, the device work finished between batches;
 * - a chain of 1000 example.axpy launches on 256 elements, each reading what the one before wrote,
 *   replayed from a graph (kp_graph_replay: through a command buffer where the device offers one,
 *   and kernel by kernel) against the same launches made directly and against 1000 bare enqueues:
 *   wall time per launch (enqueue to finish) and the host's time per replayed launch;
 * - the XOR model's training step (examples/xor: 13 launches, the five products through
 *   tensor.mul_sum, then through blas.gemm) replayed 200 times against 200 direct steps;
 *   bench/peers/peer-launch.py times the same step in PyTorch eager on the same device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "harness.h"
#include "xor-model.h"

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

/* ---- a chain of launches ---------------------------------------------------------------- */

enum { CHAIN = 1000, CHAIN_N = 256 };

typedef enum chain_path {
    CH_DIRECT,    /* kp_kernel_launch, 1000 times */
    CH_GRAPH,     /* kp_graph_replay, command buffers wherever offered */
    CH_GRAPH_KBK, /* kp_graph_replay, kernel by kernel */
    CH_BARE,      /* clEnqueueNDRangeKernel of the bare kernel, arguments set once */
    CH_PATHS
} chain_path;

typedef struct chain_setup {
    kp_runtime *rt;
    kp_kernel *axpy;
    kp_arg fwd[4], back[4]; /* y += x, then x -= y */
    kp_graph *graph[2];
    cl_command_queue queue;
    cl_kernel bare[2]; /* the same two launches */
    size_t global, local;
} chain_setup;

/* One pass of the chain: host seconds of the calls in host[p], and of the calls and kp_finish in
 * wall[p]; negative when a call failed. */
static void chain_pass(const chain_setup *c, chain_path p, double *host, double *wall)
{
    double t0 = kpb_now();
    int ok = 1;
    if (p == CH_GRAPH || p == CH_GRAPH_KBK)
        ok = kp_graph_replay(c->graph[p == CH_GRAPH_KBK], NULL) == KP_OK;
    for (int i = 0; ok && p == CH_DIRECT && i < CHAIN; i++)
        ok = kp_kernel_launch(c->rt, c->axpy, i % 2 ? c->back : c->fwd, 4, NULL) == KP_OK;
    for (int i = 0; ok && p == CH_BARE && i < CHAIN; i++)
        ok = clEnqueueNDRangeKernel(c->queue, c->bare[i % 2], 1, NULL, &c->global, &c->local, 0,
                                    NULL, NULL) == CL_SUCCESS;
    double t1 = kpb_now();
    ok = ok && kp_finish(c->rt) == KP_OK;
    *host = ok ? t1 - t0 : -1;
    *wall = ok ? kpb_now() - t0 : -1;
}

static void set_bare(cl_kernel k, int n, float alpha, cl_mem x, cl_mem y)
{
    const int32_t view[2] = {0, 1};
    clSetKernelArg(k, 0, sizeof n, &n);
    clSetKernelArg(k, 1, sizeof alpha, &alpha);
    clSetKernelArg(k, 2, sizeof x, &x);
    clSetKernelArg(k, 3, sizeof view, view);
    clSetKernelArg(k, 4, sizeof y, &y);
    clSetKernelArg(k, 5, sizeof view, view);
}

static int chain_record(chain_setup *c, uint32_t flags, kp_graph **out)
{
    if (kp_graph_begin(c->rt, flags) != KP_OK)
        return -1;
    int ok = 1;
    for (int i = 0; ok && i < CHAIN; i++)
        ok = kp_kernel_launch(c->rt, c->axpy, i % 2 ? c->back : c->fwd, 4, NULL) == KP_OK;
    return kp_graph_end(c->rt, out) == KP_OK && ok ? 0 : -1;
}

static int chain(kpb *b, cl_context ctx, cl_device_id dev, const setup *s)
{
    chain_setup c = {.rt = b->rt, .axpy = s->axpy, .queue = s->queue, .local = s->local};
    c.global = (CHAIN_N + c.local - 1) / c.local * c.local;
    float host[CHAIN_N];
    kpb_fill(host, CHAIN_N, 2);
    kp_buffer *bx = NULL, *by = NULL;
    if (kp_buffer_create(b->rt, sizeof host, &bx) != KP_OK ||
        kp_buffer_create(b->rt, sizeof host, &by) != KP_OK ||
        kp_buffer_write(b->rt, bx, 0, sizeof host, host) != KP_OK ||
        kp_buffer_write(b->rt, by, 0, sizeof host, host) != KP_OK) {
        fprintf(stderr, "bench-launch: %s\n", kp_last_error(b->rt));
        return -1;
    }
    kp_tensor x = kp_tensor_1d(bx, KP_F32, CHAIN_N), y = kp_tensor_1d(by, KP_F32, CHAIN_N);
    const kp_arg fwd[4] = {KP_ARG_INT("n", CHAIN_N), KP_ARG_FLOAT("alpha", 0.5),
                           KP_ARG_TENSOR("x", x), KP_ARG_TENSOR("y", y)};
    const kp_arg back[4] = {KP_ARG_INT("n", CHAIN_N), KP_ARG_FLOAT("alpha", -0.5),
                            KP_ARG_TENSOR("x", y), KP_ARG_TENSOR("y", x)};
    memcpy(c.fwd, fwd, sizeof fwd);
    memcpy(c.back, back, sizeof back);
    c.bare[0] = build_bare(ctx, dev, (int)s->local);
    c.bare[1] = build_bare(ctx, dev, (int)s->local);
    if (!c.bare[0] || !c.bare[1] || chain_record(&c, KP_GRAPH_COMMAND_BUFFER, &c.graph[0]) != 0 ||
        chain_record(&c, KP_GRAPH_NO_COMMAND_BUFFER, &c.graph[1]) != 0) {
        fprintf(stderr, "bench-launch: chain: %s\n", kp_last_error(b->rt));
        return -1;
    }
    cl_mem mx = kp_buffer_cl_mem(bx), my = kp_buffer_cl_mem(by);
    set_bare(c.bare[0], CHAIN_N, 0.5f, mx, my);
    set_bare(c.bare[1], CHAIN_N, -0.5f, my, mx);
    enum { MAX_ROUNDS = 100 };
    double h[CH_PATHS][MAX_ROUNDS], w[CH_PATHS][MAX_ROUNDS], dummy;
    const int rounds = b->quick ? 5 : 30;
    for (int p = 0; p < CH_PATHS; p++)
        chain_pass(&c, (chain_path)p, &dummy, &dummy);
    /* The paths alternate within each round, so the machine's drift falls on all alike. */
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < CH_PATHS; p++) {
            chain_pass(&c, (chain_path)p, &h[p][r], &w[p][r]);
            if (h[p][r] < 0) {
                fprintf(stderr, "bench-launch: chain: %s\n", kp_last_error(b->rt));
                return -1;
            }
        }
    double host_s[CH_PATHS], wall_s[CH_PATHS];
    for (int p = 0; p < CH_PATHS; p++) {
        host_s[p] = kpb_median(h[p], (size_t)rounds) / CHAIN;
        wall_s[p] = kpb_median(w[p], (size_t)rounds) / CHAIN;
    }
    kp_graph_info info = {.struct_size = sizeof info};
    kp_graph_get_info(c.graph[0], &info);
    const int cmdbuf = info.n_command_buffers > 0;
    char name[96];
    snprintf(name, sizeof name, "chain of %d axpy launches, n=%d: wall per launch", CHAIN, CHAIN_N);
    kpb_row row = {.case_name = name,
                   .ours = cmdbuf ? "kp_graph_replay (command buffer)" : "kp_graph_replay",
                   .peer = "kp_kernel_launch",
                   .ours_s = wall_s[CH_GRAPH],
                   .ours_p10 = wall_s[CH_GRAPH],
                   .ours_p90 = wall_s[CH_GRAPH],
                   .peer_s = wall_s[CH_DIRECT]};
    kpb_row_metric(&row, "graph_kernel_by_kernel_s", wall_s[CH_GRAPH_KBK]);
    kpb_row_metric(&row, "bare_enqueue_s", wall_s[CH_BARE]);
    kpb_add(b, &row);
    snprintf(name, sizeof name, "chain of %d axpy launches, n=%d: host per launch", CHAIN, CHAIN_N);
    kpb_row host_row = {.case_name = name,
                        .ours = "kp_graph_replay, kernel by kernel",
                        .peer = "clEnqueueNDRangeKernel (arguments set once)",
                        .ours_s = host_s[CH_GRAPH_KBK],
                        .ours_p10 = host_s[CH_GRAPH_KBK],
                        .ours_p90 = host_s[CH_GRAPH_KBK],
                        .peer_s = host_s[CH_BARE]};
    kpb_row_metric(&host_row, "graph_command_buffer_s", cmdbuf ? host_s[CH_GRAPH] : 0);
    kpb_row_metric(&host_row, "kp_kernel_launch_s", host_s[CH_DIRECT]);
    kpb_add(b, &host_row);
    kpb_note(b,
             "chain: replay %.2fx faster than direct launches (target >= 3x); host per replayed "
             "launch %.3f us with %s (target <= 1.5 us with a command buffer), kernel by kernel "
             "%.2fx a bare clEnqueueNDRangeKernel (target <= 1.2x)",
             wall_s[CH_DIRECT] / wall_s[CH_GRAPH], 1e6 * host_s[CH_GRAPH],
             cmdbuf ? "a command buffer" : "no command buffer (the device has none)",
             host_s[CH_GRAPH_KBK] / host_s[CH_BARE]);
    for (int i = 0; i < 2; i++) {
        kp_graph_destroy(c.graph[i]);
        clReleaseKernel(c.bare[i]);
    }
    kp_buffer_destroy(b->rt, bx);
    kp_buffer_destroy(b->rt, by);
    return 0;
}

/* ---- the XOR training step ---------------------------------------------------------------- */

enum { XOR_STEPS = 200 };

/* Seconds for XOR_STEPS steps, from the first call to kp_finish; negative on failure. */
static double xor_run(xor_model *m, kp_graph *g, kp_runtime *rt, int64_t *step)
{
    double t0 = kpb_now();
    for (int i = 0; i < XOR_STEPS; i++) {
        ++*step;
        kp_status st = g ? kp_graph_set_int(g, "step", *step) : xor_model_step(m, *step);
        if (st == KP_OK && g)
            st = kp_graph_replay(g, NULL);
        if (st != KP_OK)
            return -1;
    }
    return kp_finish(rt) == KP_OK ? kpb_now() - t0 : -1;
}

/* The step with its products through tensor.mul_sum (blas 0) or blas.gemm (1). */
static int xor_steps(kpb *b, int blas)
{
    xor_model *m = NULL;
    kp_graph *g = NULL;
    if (xor_model_create(b->rt, 8, 1, 0.05, blas, &m) != KP_OK ||
        xor_model_record(m, &g) != KP_OK) {
        fprintf(stderr, "bench-launch: xor: %s\n", kp_last_error(b->rt));
        return -1;
    }
    enum { MAX_ROUNDS = 50 };
    double t[2][MAX_ROUNDS];
    const int rounds = b->quick ? 3 : 15;
    int64_t step = 0;
    if (xor_run(m, g, b->rt, &step) < 0 || xor_run(m, NULL, b->rt, &step) < 0) {
        fprintf(stderr, "bench-launch: xor: %s\n", kp_last_error(b->rt));
        return -1;
    }
    for (int r = 0; r < rounds; r++)
        for (int p = 0; p < 2; p++)
            if ((t[p][r] = xor_run(m, p ? NULL : g, b->rt, &step)) < 0) {
                fprintf(stderr, "bench-launch: xor: %s\n", kp_last_error(b->rt));
                return -1;
            }
    const double graph_s = kpb_median(t[0], (size_t)rounds),
                 direct_s = kpb_median(t[1], (size_t)rounds);
    kp_graph_info info = {.struct_size = sizeof info};
    kp_graph_get_info(g, &info);
    char name[96];
    snprintf(name, sizeof name, "xor 2-8-1 MLP: %d training steps, products by %s", XOR_STEPS,
             blas ? "blas.gemm" : "tensor.mul_sum");
    kpb_row row = {.case_name = name,
                   .ours = "kp_graph_replay",
                   .peer = "the same launches, direct",
                   .ours_s = graph_s,
                   .ours_p10 = graph_s,
                   .ours_p90 = graph_s,
                   .peer_s = direct_s};
    kpb_row_metric(&row, "launches_per_step", xor_model_launches_per_step(m));
    kpb_row_metric(&row, "direct_launches_per_step", (double)info.n_direct);
    kpb_add(b, &row);
    kpb_note(b,
             "xor (%s): %d steps in %.2f ms replayed (target <= 18 ms on an H100/H200), %.2f ms "
             "direct; %zu of %d launches per step run through the plugin at each replay",
             blas ? "blas.gemm" : "tensor.mul_sum", XOR_STEPS, 1e3 * graph_s, 1e3 * direct_s,
             info.n_direct, xor_model_launches_per_step(m));
    kp_graph_destroy(g);
    xor_model_destroy(m);
    return 0;
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
    kp_tuning_info wg = {.struct_size = sizeof wg};
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
    int have_blas = kp_kernel_find(b.rt, "blas.gemm", &(kp_kernel *){NULL}) == KP_OK;
    if (chain(&b, ctx, dev, &s) != 0 || xor_steps(&b, 0) != 0 || (have_blas && xor_steps(&b, 1)))
        return 1;
    clReleaseKernel(s.bare);
    free(host);
    return kpb_close(&b);
}
