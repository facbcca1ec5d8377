/* SPDX-License-Identifier: Apache-2.0 */
/* xor: trains a 2 -> 8 -> 1 MLP on XOR with Kernelport alone, one recorded training step replayed
 * until all four outputs are right. Writes the loss curve as CSV (examples/plot-curves.py draws
 * it). Deterministic for a seed on a device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xor-model.h"
#include "example-cli.h"

#define PROGRAM "xor"

static const char usage[] =
    "usage: xor [--device SPEC] [--seed N] [--hidden H] [--lr LR] [--max-steps N]\n"
    "           [--check-every N] [--csv FILE] [--direct] [--blas]\n"
    "Trains a 2-H-1 MLP (tanh, sigmoid output, AdamW) on the four XOR rows, full batch, until\n"
    "every output is on the right side of 0.5; prints progress and the final outputs.\n"
    "  --device SPEC     a device as `kernelport devices` lists it (default: the manifest's)\n"
    "  --seed N          the weights' seed (default 1)\n"
    "  --hidden H        hidden units (default 8)\n"
    "  --lr LR           AdamW's learning rate (default 0.05)\n"
    "  --max-steps N     give up after N steps (default 5000)\n"
    "  --check-every N   read the loss back every N steps (default 10)\n"
    "  --csv FILE        write step,loss,correct rows\n"
    "  --direct          launch each step's kernels one by one instead of replaying a graph\n"
    "  --blas            matrix products through blas.gemm (CLBlast) instead of tensor.mul_sum\n";

int main(int argc, char **argv)
{
    const char *device = NULL, *csv_path = NULL;
    double seed = 1, hidden = 8, lr = 0.05, max_steps = 5000, check_every = 10;
    int direct = 0, blas = 0;
    for (int i = 1; i < argc; i++) {
        int ok = 1;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            device = argv[++i];
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv_path = argv[++i];
        } else if (!strcmp(argv[i], "--direct")) {
            direct = 1;
        } else if (!strcmp(argv[i], "--blas")) {
            blas = 1;
        } else if (!strcmp(argv[i], "--seed")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 4294967295.0, &seed);
        } else if (!strcmp(argv[i], "--hidden")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 4096, &hidden);
        } else if (!strcmp(argv[i], "--lr")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 10, &lr);
        } else if (!strcmp(argv[i], "--max-steps")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &max_steps);
        } else if (!strcmp(argv[i], "--check-every")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &check_every);
        } else {
            fprintf(stderr, "xor: unknown argument %s\n%s", argv[i], usage);
            return 2;
        }
        if (!ok)
            return 2;
    }

    kp_runtime_options opt = kp_runtime_options_default();
    opt.device = device;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&opt, &rt);
    if (st != KP_OK)
        return example_fail(PROGRAM, NULL, st, "kp_runtime_create");
    kp_device_info dev = {.struct_size = sizeof dev};
    const char *why;
    if ((st = kp_runtime_device(rt, &dev, &why)) != KP_OK)
        return example_fail(PROGRAM, rt, st, "kp_runtime_device");
    printf("device: %s (%s)\n", dev.name, kp_vendor_name(dev.vendor));

    xor_model *m = NULL;
    kp_graph *g = NULL;
    FILE *csv = NULL;
    int rc = 1;
    if ((st = xor_model_create(rt, (int)hidden, (uint64_t)seed, lr, blas, &m)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "creating the model");
        goto done;
    }
    if (!direct && (st = xor_model_record(m, &g)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "recording the step");
        goto done;
    }
    if (g) {
        kp_graph_info info = {.struct_size = sizeof info};
        kp_graph_get_info(g, &info);
        printf("step: %zu launches recorded (%zu replay through the plugin: library calls), "
               "%zu command buffer(s)\n",
               info.n_launches, info.n_direct, info.n_command_buffers);
    }
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(stderr, "xor: cannot write %s: %s\n", csv_path, strerror(errno));
        goto done;
    }
    if (csv)
        fprintf(csv, "step,loss,correct\n");
    const float target[4] = {0, 1, 1, 0};
    double t0 = example_now(), t_check = t0;
    int64_t step = 0, solved = 0;
    float loss = 0, out[4] = {0};
    while (step < (int64_t)max_steps && !solved) {
        const int64_t until = step + (int64_t)check_every;
        for (; step < until && step < (int64_t)max_steps; step++) {
            if (g) {
                st = kp_graph_set_int(g, "step", step + 1);
                if (st == KP_OK)
                    st = kp_graph_replay(g, NULL);
            } else {
                st = xor_model_step(m, step + 1);
            }
            if (st != KP_OK) {
                example_fail(PROGRAM, rt, st, "training step");
                goto done;
            }
        }
        if ((st = xor_model_read(m, &loss, out)) != KP_OK) {
            example_fail(PROGRAM, rt, st, "reading the outputs");
            goto done;
        }
        int correct = 0;
        for (int i = 0; i < 4; i++)
            correct += (out[i] > 0.5f) == (target[i] > 0.5f);
        solved = correct == 4;
        const double t = example_now();
        printf("step %6lld  loss %.6f  correct %d/4  %.0f steps/s\n", (long long)step, (double)loss,
               correct, check_every / (t - t_check));
        t_check = t;
        if (csv)
            fprintf(csv, "%lld,%.9g,%d\n", (long long)step, (double)loss, correct);
    }
    const double total = example_now() - t0;
    printf("outputs: %.4f %.4f %.4f %.4f (targets 0 1 1 0)\n", (double)out[0], (double)out[1],
           (double)out[2], (double)out[3]);
    printf("%s after %lld steps in %.3f s (%.1f us per step, %s)\n",
           solved ? "solved" : "NOT solved", (long long)step, total, 1e6 * total / (double)step,
           g ? "replayed graph" : "direct launches");
    rc = solved ? 0 : 1;
done:
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "xor: writing %s failed\n", csv_path);
        rc = 1;
    }
    kp_graph_destroy(g);
    xor_model_destroy(m);
    kp_runtime_destroy(rt);
    return rc;
}
