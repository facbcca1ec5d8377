/* SPDX-License-Identifier: Apache-2.0 */
/* logic-ca: trains a differentiable logic-gate cellular automaton (DiffLogic CA's reference
 * configurations: the checkerboard, Game of Life, and a small xor rule) with libkernelport-ca, one
 * recorded training step replayed; checks the hard circuit, writes the curves (CSV), the final
 * grids (PNG) and the circuit. Deterministic for a seed on a device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca-grid.h"
#include "ca-tasks.h"
#include "example-cli.h"
#include "grid-png.h"

#define PROGRAM "logic-ca"

static const char usage[] =
    "usage: logic-ca [--task checkerboard|gol|xor] [--async] [--device SPEC] [--seed N]\n"
    "                [--steps N] [--lr LR] [--check-every N] [--boards N] [--csv FILE]\n"
    "                [--png FILE] [--save PREFIX] [--clip-value] [--direct] [--expect-solved]\n"
    "                [--packed-grid N] [--packed-steps N]\n"
    "Trains a logic-gate CA end to end (soft gates, backpropagation through time, AdamW) with\n"
    "the reference configuration of the task, then checks its hard circuit (argmax gates).\n"
    "  --task T          checkerboard (16 x 16, 8 channels, 20 steps; default), gol (Game of\n"
    "                    Life on all 512 3 x 3 boards) or xor (west XOR east, a small rule)\n"
    "  --async           checkerboard's asynchronous variant (14 x 14, 50 steps, fire rate 0.6)\n"
    "  --device SPEC     a device as `kernelport devices` lists it (default: the manifest's)\n"
    "  --seed N          the wirings' and random states' seed (default 1)\n"
    "  --steps N         training steps (default the reference's: 500, 800 async, 3000 gol, 300\n"
    "                    xor)\n"
    "  --lr LR           AdamW's learning rate (default 0.05)\n"
    "  --check-every N   read the losses back every N steps (default 10)\n"
    "  --boards N        gol, xor: random 64 x 64 boards to check for 100 steps (default 8)\n"
    "  --csv FILE        write step,soft_loss,hard_loss,active,seconds rows\n"
    "  --png FILE        the final grids: the training batch's and the 64 x 64 one\n"
    "  --save PREFIX     PREFIX.logits.f32 (float32 [P, 16]) and PREFIX.circuit.txt (gates)\n"
    "  --clip-value      clip each gradient element to [-100, 100] (optax.clip, the notebook's\n"
    "                    code) instead of the global norm to 100\n"
    "  --direct          launch each step's kernels one by one instead of replaying a graph\n"
    "  --expect-solved   exit 1 unless the hard loss reached 0 and the check passed\n"
    "  --packed-grid N   after training, run the hard circuit on an N x N grid bit-packed\n"
    "                    (kp_ca_packed) and fused (kp_ca_rollout), print cells*steps/s of each\n"
    "                    and the cells that differ (exit 1 unless 0); default 128, 0: skip\n"
    "  --packed-steps N  steps of that run (default 20)\n";

typedef struct args {
    const char *task, *device, *csv, *png, *save;
    double seed, steps, lr, check_every, boards, packed_grid, packed_steps;
    int async, direct, expect, clip_value;
} args;

/* 0: parsed; 1: --help printed; 2: bad arguments (printed). */
static int parse(int argc, char **argv, args *a)
{
    *a = (args){.task = "checkerboard",
                .seed = 1,
                .steps = -1,
                .lr = 0.05,
                .check_every = 10,
                .boards = 8,
                .packed_grid = 128,
                .packed_steps = 20};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int ok = 1;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(usage, stdout);
            return 1;
        } else if (i + 1 < argc &&
                   (!strcmp(s, "--task") || !strcmp(s, "--device") || !strcmp(s, "--csv") ||
                    !strcmp(s, "--png") || !strcmp(s, "--save"))) {
            const char **dst = !strcmp(s, "--task")     ? &a->task
                               : !strcmp(s, "--device") ? &a->device
                               : !strcmp(s, "--csv")    ? &a->csv
                               : !strcmp(s, "--png")    ? &a->png
                                                        : &a->save;
            *dst = argv[++i];
        } else if (!strcmp(s, "--async")) {
            a->async = 1;
        } else if (!strcmp(s, "--direct")) {
            a->direct = 1;
        } else if (!strcmp(s, "--clip-value")) {
            a->clip_value = 1;
        } else if (!strcmp(s, "--expect-solved")) {
            a->expect = 1;
        } else if (!strcmp(s, "--seed")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 4294967295.0, &a->seed);
        } else if (!strcmp(s, "--steps")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &a->steps);
        } else if (!strcmp(s, "--lr")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 10, &a->lr);
        } else if (!strcmp(s, "--check-every")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &a->check_every);
        } else if (!strcmp(s, "--packed-grid")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 65535, &a->packed_grid);
        } else if (!strcmp(s, "--packed-steps")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e6, &a->packed_steps);
        } else if (!strcmp(s, "--boards")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1e6, &a->boards);
        } else {
            fprintf(stderr, "logic-ca: unknown argument %s\n%s", s, usage);
            return 2;
        }
        if (!ok)
            return 2;
    }
    return 0;
}

/* The training batch's hard final grids (channel 0) and the check's 64 x 64 one, side by side. */
static int write_png(const char *path, kp_runtime *rt, kp_ca *ca, const ca_task *task,
                     const float *large)
{
    const kp_ca_options *o = &task->options;
    const int show = o->batch < 4 ? o->batch : 4, hw = o->height * o->width;
    const kp_tensor last = kp_ca_state(ca, o->steps, 1);
    float *cells = malloc((size_t)kp_ca_cells(ca) * sizeof *cells);
    kp_status st = cells ? kp_buffer_read(rt, last.buffer, (size_t)last.offset * 4,
                                          (size_t)kp_ca_cells(ca) * 4, cells)
                         : KP_ERR_OUT_OF_MEMORY;
    grid_panel panels[5];
    int n = 0;
    /* gol and xor: four of the 512 boards; all of the checkerboard's batch. */
    for (int b = 0; b < show; b++)
        panels[n++] =
            (grid_panel){cells + (size_t)(task->kind == TASK_CHECKERBOARD ? b : 37 * b) * hw,
                         o->height, o->width};
    panels[n++] = (grid_panel){large, 64, 64};
    int ok = st == KP_OK && grid_png_write(path, panels, n, 256);
    if (!ok)
        fprintf(stderr, "logic-ca: cannot write %s\n", path);
    free(cells);
    return ok;
}

/* Trains `steps` steps, printing progress and writing CSV rows; the last hard loss and whether it
 * reached 0 come back. Returns 0, or 1 on a failure (printed). */
static int train(kp_runtime *rt, kp_ca *ca, kp_graph *g, const args *a, int64_t steps, FILE *csv,
                 float *hard_out)
{
    const int64_t every = (int64_t)a->check_every;
    int32_t *ops = malloc((size_t)kp_ca_net(ca)->n_params * sizeof *ops);
    double t0 = example_now(), t_check = t0;
    int64_t step = 0;
    float soft = 0, hard = 0;
    kp_status st = ops ? KP_OK : KP_ERR_OUT_OF_MEMORY;
    while (st == KP_OK && step < steps) {
        const int64_t until = step + every < steps ? step + every : steps, from = step;
        for (; st == KP_OK && step < until; step++)
            st = g ? kp_ca_replay(ca, g, step + 1) : kp_ca_train_step(ca, step + 1);
        if (st == KP_OK)
            st = kp_ca_read_losses(ca, &soft, &hard);
        if (st == KP_OK)
            st = kp_ca_read_ops(ca, ops);
        if (st != KP_OK)
            break;
        const int64_t active = kp_ca_active_params(ca, ops);
        const double t = example_now();
        printf("step %6lld  loss %10.4f  hard %6.0f  active %5lld  %.1f steps/s\n", (long long)step,
               (double)soft, (double)hard, (long long)active,
               (double)(step - from) / (t - t_check));
        fflush(stdout);
        t_check = t;
        if (csv)
            fprintf(csv, "%lld,%.9g,%.9g,%lld,%.3f\n", (long long)step, (double)soft, (double)hard,
                    (long long)active, t - t0);
    }
    free(ops);
    if (st != KP_OK)
        return example_fail(PROGRAM, rt, st, "training");
    const double total = example_now() - t0;
    printf("trained %lld steps in %.2f s (%.2f ms a step, %s)\n", (long long)steps, total,
           1e3 * total / (double)steps, g ? "replayed graph" : "direct launches");
    *hard_out = hard;
    return 0;
}

/* Seconds of one run, packed or fused (negative on a failure). */
static double time_run(ca_grid *g, int packed)
{
    const double t0 = example_now();
    return ca_grid_run(g, packed) == KP_OK ? example_now() - t0 : -1;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The trained circuit on an N x N grid, bit-packed and fused: one run of each from the same
 * random state, their final states compared, then three timed runs of each, alternating (the
 * median printed). Returns 0, or 1 on a failure or a state that differs (printed). */
static int packed_grid(kp_runtime *rt, kp_ca *ca, const ca_task *task, const args *a)
{
    if (a->packed_grid == 0)
        return 0;
    if (task->options.fire_rate < 1) {
        printf("packed grid: skipped (an asynchronous CA has no packed run)\n");
        return 0;
    }
    ca_grid g;
    const int64_t side = (int64_t)a->packed_grid, steps = (int64_t)a->packed_steps;
    kp_status st = ca_grid_open(&g, rt, ca, &task->options, side, steps, (uint64_t)a->seed + 7, 0);
    if (st != KP_OK) {
        ca_grid_close(&g);
        return example_fail(PROGRAM, rt, st, "kp_ca_packed_create");
    }
    printf("packed grid: %lld x %lld, %lld steps; packed %lld launches a step%s%s\n",
           (long long)side, (long long)side, (long long)steps,
           (long long)kp_ca_packed_launches_per_step(g.packed),
           g.fused ? "" : "; no fused run: ", g.fused ? "" : g.fused_why);
    fflush(stdout);
    double t[2][3];
    int64_t differ = 0;
    int rc = 0;
    if ((st = ca_grid_run(&g, 1)) == KP_OK && g.fused && (st = ca_grid_run(&g, 0)) == KP_OK)
        differ = ca_grid_differ(&g);
    for (int r = 0; st == KP_OK && r < 3; r++)
        for (int packed = 1; st == KP_OK && packed >= 0; packed--)
            if (packed || g.fused)
                st = (t[packed][r] = time_run(&g, packed)) < 0 ? KP_ERR_CL : KP_OK;
    if (st != KP_OK) {
        rc = example_fail(PROGRAM, rt, st, "the packed grid's runs");
    } else {
        const double work = (double)g.cells * (double)steps;
        qsort(t[1], 3, sizeof t[1][0], by_value);
        printf("packed grid: packed %.4g cells*steps/s (%.2f ms a run)", work / t[1][1],
               1e3 * t[1][1]);
        if (g.fused) {
            qsort(t[0], 3, sizeof t[0][0], by_value);
            printf(
                ", fused hard %.4g cells*steps/s (%.2f ms): packed %.1fx; values that differ: %lld",
                work / t[0][1], 1e3 * t[0][1], t[0][1] / t[1][1], (long long)differ);
            rc = differ != 0;
        }
        printf("\n");
        if (rc)
            fprintf(stderr, "logic-ca: the packed and fused runs differ\n");
    }
    ca_grid_close(&g);
    return rc;
}

int main(int argc, char **argv)
{
    args a;
    const int parsed = parse(argc, argv, &a);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    ca_task task;
    if (!ca_task_find(a.task, a.async, (uint64_t)a.seed, &task)) {
        fprintf(stderr,
                "logic-ca: unknown task '%s'%s (checkerboard, gol, xor; --async only "
                "with checkerboard)\n",
                a.task, a.async ? " with --async" : "");
        return 2;
    }
    task.options.lr = a.lr;
    task.options.clip_elementwise = a.clip_value;
    const int64_t steps = a.steps > 0 ? (int64_t)a.steps : task.train_steps;

    kp_runtime_options opt = kp_runtime_options_default();
    opt.device = a.device;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&opt, &rt);
    if (st != KP_OK)
        return example_fail(PROGRAM, NULL, st, "kp_runtime_create");
    kp_device_info dev = {.struct_size = sizeof dev};
    const char *why;
    if ((st = kp_runtime_device(rt, &dev, &why)) != KP_OK)
        return example_fail(PROGRAM, rt, st, "kp_runtime_device");
    printf("device: %s (%s)\n", dev.name, kp_vendor_name(dev.vendor));

    kp_ca *ca = NULL;
    kp_graph *g = NULL;
    FILE *csv = NULL;
    float *large = calloc(64 * 64, sizeof *large), hard = -1;
    int rc = 1, check = 0;
    if ((st = kp_ca_create(rt, &task.options, &ca)) != KP_OK ||
        (st = ca_task_prepare(&task, rt, ca)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "creating the CA");
        goto done;
    }
    const kp_logic_ca_net *net = kp_ca_net(ca);
    printf("task %s%s: %lld cells, %d steps a rollout, %lld gates (%lld parameters) in %d "
           "layers, %d launches a training step\n",
           task.name, a.async ? " (async)" : "", (long long)kp_ca_cells(ca), task.options.steps,
           (long long)net->n_gates, (long long)net->n_params, net->n_layers,
           kp_ca_launches_per_step(ca));
    if (!a.direct && (st = kp_ca_record(ca, &g)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "recording the training step");
        goto done;
    }
    if (a.csv && !(csv = fopen(a.csv, "w"))) {
        fprintf(stderr, "logic-ca: cannot write %s: %s\n", a.csv, strerror(errno));
        goto done;
    }
    if (csv)
        fprintf(csv, "step,soft_loss,hard_loss,active,seconds\n");
    if (!large || train(rt, ca, g, &a, steps, csv, &hard) != 0)
        goto done;
    check = ca_task_check(&task, rt, ca, (int)a.boards, large);
    if (check < 0)
        goto done;
    if (a.png && !write_png(a.png, rt, ca, &task, large))
        goto done;
    if (a.save && !ca_task_save(&task, rt, ca, a.save))
        goto done;
    if (packed_grid(rt, ca, &task, &a) != 0)
        goto done;
    printf("%s: hard loss %g after %lld steps, check %s\n", hard == 0 ? "solved" : "NOT solved",
           (double)hard, (long long)steps, check ? "passed" : "FAILED");
    rc = a.expect && (hard != 0 || !check) ? 1 : 0;
done:
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "logic-ca: writing %s failed\n", a.csv);
        rc = 1;
    }
    free(large);
    kp_graph_destroy(g);
    kp_ca_destroy(ca);
    kp_runtime_destroy(rt);
    return rc;
}
