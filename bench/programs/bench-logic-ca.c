/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-logic-ca: the training step of a logic-gate CA (libkernelport-ca) at the reference
 * configurations of examples/logic-ca: the checkerboard (2 x 16 x 16 cells, 20 steps, 4608
 * gates), its asynchronous variant (14 x 14, 50 steps) and Game of Life (512 boards of 3 x 3, one
 * step, 2415 gates), each replayed from a graph and launched directly: wall time per training
 * step, enqueue to finish, over consecutive steps (the step count advancing as in training).
 * bench/peers/peer-logic-ca.py times the same models in plain PyTorch (difflogic's formulation) on
 * the same device, CUDA or CPU. The packed rows run a circuit of the same networks (random logits:
 * the speed does not depend on the ops) on one large grid for 20 steps, bit-packed (kp_ca_packed)
 * against the fused hard rollout (kp_ca_rollout, the peer column), and count the values that
 * differ (a row with any is marked wrong).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca-grid.h"
#include "ca-tasks.h"
#include "kernelport/ops/logic.h"
#include "harness.h"

typedef struct bench_case {
    const char *task;
    int async;
} bench_case;

/* Seconds per training step, median over batches of `per` steps; negative on a failure. */
static double time_steps(kpb *b, kp_ca *ca, kp_graph *g, int64_t *step, int per, double *p10,
                         double *p90)
{
    double times[200];
    int runs = 0;
    double total = 0;
    for (int warm = 0; warm < 2; warm++)
        for (int i = 0; i < per; i++, ++*step)
            if ((g ? kp_ca_replay(ca, g, *step) : kp_ca_train_step(ca, *step)) != KP_OK)
                return -1;
    if (kp_finish(b->rt) != KP_OK)
        return -1;
    while (kpb_more_runs(b, runs, total)) {
        const double t0 = kpb_now();
        for (int i = 0; i < per; i++, ++*step)
            if ((g ? kp_ca_replay(ca, g, *step) : kp_ca_train_step(ca, *step)) != KP_OK)
                return -1;
        if (kp_finish(b->rt) != KP_OK)
            return -1;
        times[runs] = (kpb_now() - t0) / per;
        total += times[runs++] * per;
    }
    const double med = kpb_median(times, (size_t)runs);
    *p10 = times[runs / 10];
    *p90 = times[(runs * 9) / 10];
    return med;
}

static void run_case(kpb *b, const bench_case *c)
{
    ca_task task;
    if (!ca_task_find(c->task, c->async, 1, &task))
        return;
    kp_ca *ca = NULL;
    kp_graph *g = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s%s", c->task, c->async ? "-async" : "");
    kp_status st = kp_ca_create(b->rt, &task.options, &ca);
    if (st == KP_OK)
        st = ca_task_prepare(&task, b->rt, ca);
    if (st == KP_OK)
        st = kp_ca_record(ca, &g);
    if (st != KP_OK) {
        fprintf(stderr, "bench-logic-ca: %s: %s: %s\n", name, kp_status_name(st),
                kp_last_error(b->rt));
        kpb_row row = {.case_name = name, .ours = "kp_ca_replay", .status = st};
        kpb_add(b, &row);
        kp_ca_destroy(ca);
        return;
    }
    int64_t step = 1;
    const int per = b->quick ? 1 : 5;
    for (int direct = 0; direct < 2; direct++) {
        double p10 = 0, p90 = 0;
        const double s = time_steps(b, ca, direct ? NULL : g, &step, per, &p10, &p90);
        kpb_row row = {.case_name = name,
                       .ours =
                           direct ? "kp_ca_train_step (direct launches)" : "kp_ca_replay (graph)",
                       .ours_s = s > 0 ? s : 0,
                       .ours_p10 = p10,
                       .ours_p90 = p90,
                       .status = s > 0 ? KP_OK : KP_ERR_CL};
        const kp_logic_ca_net *net = kp_ca_net(ca);
        /* A gate evaluation forward (twice: soft and hard) and one backward per cell and step. */
        const double evals =
            3.0 * (double)net->n_gates * (double)kp_ca_cells(ca) * (double)task.options.steps;
        kpb_row_metric(&row, "gate_evals_per_step", evals);
        kpb_row_metric(&row, "launches_per_step", kp_ca_launches_per_step(ca));
        kpb_row_metric(&row, "ms_per_step", 1e3 * row.ours_s);
        kpb_add(b, &row);
    }
    kp_graph_destroy(g);
    kp_ca_destroy(ca);
}

/* The task's network with random logits on a side x side grid, packed against fused: median
 * seconds a run of 20 steps, runs alternating. */
static void packed_case(kpb *b, const char *task_name, int64_t side, int64_t tile_bytes)
{
    ca_task task;
    if (!ca_task_find(task_name, 0, 1, &task))
        return;
    task.options.inference_only = 1;
    char name[64];
    snprintf(name, sizeof name, "%s-packed-%lldx%lld", task_name, (long long)side, (long long)side);
    kpb_row row = {.case_name = name, .ours = "kp_ca_packed_run", .status = KP_OK};
    kp_ca *ca = NULL;
    ca_grid g = {0};
    kp_status st = kp_ca_create(b->rt, &task.options, &ca);
    const int64_t P = st == KP_OK ? kp_ca_net(ca)->n_params : 0;
    float *w = malloc((size_t)(16 * P) * sizeof *w);
    if (st == KP_OK && !w)
        st = KP_ERR_OUT_OF_MEMORY;
    if (st == KP_OK) {
        kp_logic_init_gaussian(w, P, 1.0, 5);
        st = kp_buffer_write(b->rt, kp_ca_logits(ca).buffer, 0, (size_t)(16 * P) * sizeof *w, w);
    }
    if (st == KP_OK)
        st = ca_grid_open(&g, b->rt, ca, &task.options, side, 20, 3, tile_bytes);
    int64_t differ = 0;
    if (st == KP_OK && (st = ca_grid_run(&g, 1)) == KP_OK && g.fused &&
        (st = ca_grid_run(&g, 0)) == KP_OK)
        differ = ca_grid_differ(&g);
    double t[2][200];
    int runs = 0;
    double total = 0;
    while (st == KP_OK && kpb_more_runs(b, runs, total)) {
        for (int packed = 1; st == KP_OK && packed >= 0; packed--) {
            const double t0 = kpb_now();
            if (packed || g.fused)
                st = ca_grid_run(&g, packed);
            t[packed][runs] = kpb_now() - t0;
        }
        total += t[1][runs] + t[0][runs];
        runs++;
    }
    if (st != KP_OK) {
        fprintf(stderr, "bench-logic-ca: %s: %s: %s\n", name, kp_status_name(st),
                kp_last_error(b->rt));
        row.status = st;
    } else {
        row.ours_s = kpb_median(t[1], (size_t)runs);
        row.ours_p10 = t[1][runs / 10];
        row.ours_p90 = t[1][(runs * 9) / 10];
        const double work = (double)g.cells * 20;
        kpb_row_metric(&row, "cells_steps_per_s", work / row.ours_s);
        kpb_row_metric(&row, "launches_per_step", (double)kp_ca_packed_launches_per_step(g.packed));
        if (g.fused) {
            row.peer = "kp_ca_rollout hard (fused)";
            row.peer_s = kpb_median(t[0], (size_t)runs);
            kpb_row_metric(&row, "fused_cells_steps_per_s", work / row.peer_s);
            kpb_row_metric(&row, "values_differ", (double)differ);
            row.status = differ == 0 ? KP_OK : KP_ERR_VERIFY;
        } else {
            row.note = g.fused_why;
        }
    }
    kpb_add(b, &row);
    ca_grid_close(&g);
    free(w);
    kp_ca_destroy(ca);
}

int main(int argc, char **argv)
{
    int gol = 0, async = 0;
    const char *grid_text = "256", *tile_text = "0";
    const kpb_flag flags[] = {
        {"--gol", "also Game of Life (3000 training steps' model)", &gol, NULL},
        {"--async", "also the asynchronous checkerboard", &async, NULL},
        {"--packed-grid", "the packed rows' grid side (default 256; 0: no packed rows)", NULL,
         &grid_text},
        {"--packed-tile-mib",
         "the packed run's tiles (MiB of activations; default 0: the "
         "device's)",
         NULL, &tile_text},
        {NULL, NULL, NULL, NULL}};
    kpb b;
    kpb_open_flags(&b, "bench-logic-ca", argc, argv, flags);
    const bench_case cases[] = {{"checkerboard", 0}, {"checkerboard", 1}, {"gol", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (i == 0 || (i == 1 && async) || (i == 2 && gol))
            run_case(&b, &cases[i]);
    const int64_t side = atoll(grid_text), tile = (int64_t)(atof(tile_text) * 1048576);
    if (side > 0) {
        packed_case(&b, "checkerboard", side, tile);
        if (gol)
            packed_case(&b, "gol", side, tile);
    }
    kpb_note_tuning(&b, "logic.ca_step");
    kpb_note_tuning(&b, "logic.ca_step_backward");
    kpb_note_tuning(&b, "logic.eval_packed");
    return kpb_close(&b);
}
