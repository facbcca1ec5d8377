/* SPDX-License-Identifier: Apache-2.0 */
/* fashion-mnist: trains issue #25's CNN on Fashion-MNIST with Kernelport alone (a recorded
 * training step replayed per batch), evaluates it on the test set after each epoch, and saves
 * or loads its weights. Writes the curves as CSV (examples/plot-curves.py draws them). Started
 * by mpirun, it trains data-parallel over the ranks (issue #29, data-parallel.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cnn-model.h"
#include "data-parallel.h"
#include "example-cli.h"
#include "idx.h"

#define PROGRAM "fashion-mnist"

static const char usage[] =
    "usage: fashion-mnist [--device SPEC] [--data DIR] [--epochs N] [--batch N] [--lr LR]\n"
    "                     [--beta2 B] [--weight-decay WD] [--lr-schedule constant|cosine]\n"
    "                     [--ema DECAY]\n"
    "                     [--seed N] [--train-limit N] [--test-limit N]\n"
    "                     [--save FILE] [--load FILE] [--csv FILE] [--direct]\n"
    "                     [--min-accuracy P] [--check-replicas] [--compare FILE]\n"
    "                     [--max-difference D] [--bucket-kb KB]\n"
    "Trains conv(1-32) relu pool conv(32-64) relu pool linear(3136-128) relu linear(128-10) with\n"
    "softmax cross-entropy and AdamW on Fashion-MNIST, reporting loss, test accuracy and\n"
    "samples/s each epoch. With --load, evaluates saved weights instead of training.\n"
    "  --device SPEC       a device as `kernelport devices` lists it (default: the manifest's);\n"
    "                      under mpirun, %r stands for the rank's index on its node (gpu:%r)\n"
    "  --data DIR          the idx files (default /usr/share/datasets/fashion-mnist, Debian's\n"
    "                      dataset-fashion-mnist package)\n"
    "  --epochs N          default 3        --batch N        default 128 per rank (the last\n"
    "                                                          partial batch is skipped)\n"
    "  --lr LR             default 1e-3     --weight-decay W default 0.01 (AdamW's)\n"
    "  --beta2 B           AdamW's second-moment decay, default 0.95 (PyTorch's: 0.999)\n"
    "  --lr-schedule S     constant (default): LR at every step; cosine: LR x (1 + cos(pi k /\n"
    "                      K)) / 2 at step k of K, from LR down to near 0 at the last step\n"
    "  --ema DECAY         evaluate, save and compare the weights' exponential moving average\n"
    "                      (optim.ema with warm-up, updated after every step), default 0.999;\n"
    "                      0: the trained weights themselves\n"
    "  --seed N            weights and shuffling (default 1)\n"
    "  --train-limit N     train on the first N images only; --test-limit N likewise\n"
    "  --save FILE         write the trained weights (format: examples/fashion-mnist/README.md)\n"
    "  --load FILE         read weights and evaluate them, no training\n"
    "  --csv FILE          write epoch,train_loss,test_accuracy,samples_per_s rows\n"
    "  --direct            launch each step's kernels one by one instead of replaying a graph\n"
    "  --min-accuracy P    exit 1 when the final test accuracy is below P (0 to 1)\n"
    "  --check-replicas    under mpirun: after every step, check that every rank holds the same\n"
    "                      parameters, bit for bit (exit 1 otherwise)\n"
    "  --compare FILE      after training, print the largest and the mean difference from the\n"
    "                      weights in FILE; --max-difference D: exit 1 when the largest is above "
    "D\n"
    "  --bucket-kb KB      under mpirun: the layers' gradients, in the backward's order, merged\n"
    "                      into buckets of at least KB (default 256; 0: a bucket per layer)\n"
    "Under mpirun -np N, each rank trains on its slice of every global batch of N x --batch\n"
    "images and the gradients are averaged over the ranks as the backward produces them\n"
    "(libkernelport-comm); only rank 0 prints and writes files.\n";

/* splitmix64: the shuffle's generator, seeded per epoch. */
static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void shuffle(uint32_t *order, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(next_random(&seed) % i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* The learning rate of step k (from 0) of `total`: the peak lr, or its cosine decay. */
static double scheduled_lr(double lr, int cosine, int64_t k, int64_t total)
{
    return cosine ? lr * 0.5 * (1.0 + cos(3.14159265358979323846 * (double)k / (double)total)) : lr;
}

/* Test accuracy over the first n test images, in batches; digest: FNV-1a of the predictions, so
 * that two runs can compare their predictions. */
static kp_status evaluate(cnn *m, const idx_set *test, size_t n, int batch, double *accuracy,
                          uint64_t *digest)
{
    int32_t *pred = malloc((size_t)batch * sizeof *pred);
    if (!pred)
        return KP_ERR_OUT_OF_MEMORY;
    size_t right = 0;
    uint64_t h = 0xcbf29ce484222325ull;
    kp_status st = KP_OK;
    for (size_t at = 0; st == KP_OK && at < n; at += (size_t)batch) {
        const int k = (int)(n - at < (size_t)batch ? n - at : (size_t)batch);
        st = cnn_set_batch(m, test->images + at * CNN_PIXELS, test->labels + at, k);
        if (st == KP_OK)
            st = cnn_predict(m, k, pred);
        for (int i = 0; st == KP_OK && i < k; i++) {
            right += pred[i] == test->labels[at + (size_t)i];
            h = (h ^ (uint64_t)pred[i]) * 0x100000001b3ull;
        }
    }
    free(pred);
    *accuracy = n ? (double)right / (double)n : 0;
    *digest = h;
    return st;
}

/* The first of this rank's images of step s in the shuffled order. */
static size_t s_offset(dp *d, size_t global, int b, size_t s)
{
    return s * global + (size_t)dp_rank(d) * (size_t)b;
}

/* Stages the b images of the shuffled order from `at` as the model's next batch. */
static void stage(cnn *m, const idx_set *set, const uint32_t *order, size_t at, int b, uint8_t *bx,
                  uint8_t *by)
{
    for (int i = 0; i < b; i++) {
        const size_t k = order[at + (size_t)i];
        memcpy(bx + (size_t)i * CNN_PIXELS, set->images + k * CNN_PIXELS, CNN_PIXELS);
        by[i] = set->labels[k];
    }
    cnn_stage_batch(m, bx, by, b);
}

int main(int argc, char **argv)
{
    const char *device = NULL, *data = "/usr/share/datasets/fashion-mnist", *save = NULL,
               *load = NULL, *csv_path = NULL;
    double epochs = 3, batch = 128, lr = 1e-3, beta2 = 0.95, wd = 0.01, seed = 1, train_limit = 0,
           test_limit = 0, min_accuracy = 0, max_difference = -1, bucket_kb = 256, ema = 0.999;
    int direct = 0, check_replicas = 0, cosine = 0;
    const char *compare = NULL;
    dp *d = dp_init(&argc, &argv);
    /* One voice: the other ranks' output would repeat rank 0's. Errors still go to stderr. */
    if (dp_rank(d) != 0 && !freopen("/dev/null", "w", stdout))
        return dp_fail(d, "cannot silence stdout");
    for (int i = 1; i < argc; i++) {
        int ok = 1;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (i + 1 < argc &&
                   (!strcmp(a, "--device") || !strcmp(a, "--data") || !strcmp(a, "--save") ||
                    !strcmp(a, "--load") || !strcmp(a, "--csv") || !strcmp(a, "--compare"))) {
            const char **dst = !strcmp(a, "--device")    ? &device
                               : !strcmp(a, "--data")    ? &data
                               : !strcmp(a, "--save")    ? &save
                               : !strcmp(a, "--load")    ? &load
                               : !strcmp(a, "--compare") ? &compare
                                                         : &csv_path;
            *dst = argv[++i];
        } else if (i + 1 < argc && !strcmp(a, "--lr-schedule")) {
            const char *v = argv[++i];
            if (strcmp(v, "constant") != 0 && strcmp(v, "cosine") != 0) {
                fprintf(stderr, "fashion-mnist: --lr-schedule %s: not constant or cosine\n%s", v,
                        usage);
                return 2;
            }
            cosine = !strcmp(v, "cosine");
        } else if (!strcmp(a, "--direct")) {
            direct = 1;
        } else if (!strcmp(a, "--check-replicas")) {
            check_replicas = 1;
        } else if (!strcmp(a, "--max-difference")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1e9, &max_difference);
        } else if (!strcmp(a, "--bucket-kb")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1048576, &bucket_kb);
        } else if (!strcmp(a, "--epochs")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1000, &epochs);
        } else if (!strcmp(a, "--batch")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 65536, &batch);
        } else if (!strcmp(a, "--lr")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 10, &lr);
        } else if (!strcmp(a, "--beta2")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 0.999999, &beta2);
        } else if (!strcmp(a, "--ema")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1, &ema);
        } else if (!strcmp(a, "--weight-decay")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 10, &wd);
        } else if (!strcmp(a, "--seed")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 4294967295.0, &seed);
        } else if (!strcmp(a, "--train-limit")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &train_limit);
        } else if (!strcmp(a, "--test-limit")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 1, 1e9, &test_limit);
        } else if (!strcmp(a, "--min-accuracy")) {
            ok = example_number(PROGRAM, usage, argc, argv, &i, 0, 1, &min_accuracy);
        } else {
            fprintf(stderr, "fashion-mnist: unknown argument %s\n%s", a, usage);
            return 2;
        }
        if (!ok)
            return 2;
    }
    char err[1024];
    idx_set train = {0}, test = {0};
    if ((!load && idx_load(data, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", &train,
                           err, sizeof err)) ||
        idx_load(data, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", &test, err,
                 sizeof err)) {
        fprintf(stderr, "fashion-mnist: %s\n(Debian: apt-get install dataset-fashion-mnist)\n",
                err);
        return 1;
    }
    if ((!load && (train.rows != CNN_SIDE || train.cols != CNN_SIDE)) || test.rows != CNN_SIDE ||
        test.cols != CNN_SIDE) {
        fprintf(stderr, "fashion-mnist: %s: images are not 28 x 28\n", data);
        return 1;
    }
    const size_t n_train =
        train_limit && train_limit < (double)train.n ? (size_t)train_limit : train.n;
    const size_t n_test = test_limit && test_limit < (double)test.n ? (size_t)test_limit : test.n;
    const int b = (int)batch;

    const int ranks = dp_size(d);
    char spec[256];
    kp_runtime_options opt = kp_runtime_options_default();
    if (device) {
        dp_device(d, device, spec, sizeof spec);
        opt.device = spec;
    }
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&opt, &rt);
    if (st != KP_OK) {
        example_fail(PROGRAM, NULL, st, "kp_runtime_create");
        return dp_fail(d, "could not create its runtime");
    }
    kp_device_info dev = {.struct_size = sizeof dev};
    const char *why;
    if ((st = kp_runtime_device(rt, &dev, &why)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "kp_runtime_device");
        return dp_fail(d, "could not read its device");
    }
    printf("device: %s (%s)\n", dev.name, kp_vendor_name(dev.vendor));
    if (ranks > 1)
        printf("data-parallel: %d ranks, batch %d per rank (%d per step)\n", ranks, b, ranks * b);
    if (cosine)
        printf("learning rate: cosine decay from %g over the %g epochs' steps\n", lr, epochs);
    if (ema > 0)
        printf("evaluated: the weights' moving average (decay %g, with warm-up)\n", ema);

    int rc = 1;
    cnn *m = NULL;
    kp_graph *parts[CNN_PARTS] = {NULL}, *opt_steps[CNN_PARTS] = {NULL};
    /* The optimizer's ranges of the arena: a bucket's each under MPI (each step follows its own
     * bucket's average, not the round's end), else the whole arena. */
    int64_t opt_at[CNN_PARTS], opt_count[CNN_PARTS];
    size_t n_opt = 0;
    FILE *csv = NULL;
    uint32_t *order = NULL;
    uint8_t *bx = NULL, *by = NULL;
    double accuracy = 0;
    uint64_t digest = 0;
    if ((st = cnn_create(rt, b, (uint64_t)seed, lr, beta2, wd, &m)) != KP_OK ||
        (ema > 0 && (st = cnn_use_ema(m, ema)) != KP_OK)) {
        example_fail(PROGRAM, rt, st, "creating the model");
        goto done;
    }
    if ((st = dp_attach(d, rt, m, (size_t)bucket_kb * 1024)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "joining the other ranks");
        goto done;
    }
    if (load) {
        if (cnn_load(m, load, err, sizeof err) != KP_OK) {
            fprintf(stderr, "fashion-mnist: %s\n", err);
            goto done;
        }
        if ((st = evaluate(m, &test, n_test, b, &accuracy, &digest)) != KP_OK) {
            example_fail(PROGRAM, rt, st, "evaluating");
            goto done;
        }
        printf("loaded %s: test accuracy %.2f%% on %zu images\n", load, 100 * accuracy, n_test);
        printf("test predictions digest: %016llx\n", (unsigned long long)digest);
        rc = accuracy >= min_accuracy ? 0 : 1;
        goto done;
    }
    if (!(n_opt = dp_buckets(d, opt_at, opt_count))) {
        opt_at[0] = 0;
        opt_count[0] = cnn_arena_len(m);
        n_opt = 1;
    }
    if (!direct && (st = cnn_record_parts(m, parts)) == KP_OK)
        for (size_t k = 0; st == KP_OK && k < n_opt; k++)
            st = cnn_record_optimizer(m, opt_at[k], opt_count[k], &opt_steps[k]);
    if (st != KP_OK) {
        example_fail(PROGRAM, rt, st, "recording the training step");
        goto done;
    }
    kp_graph **const opt_step = direct ? NULL : opt_steps;
    if (opt_step) {
        size_t launches = 0, library = 0;
        for (size_t g = 0; g < CNN_PARTS + n_opt; g++) {
            kp_graph_info info = {.struct_size = sizeof info};
            kp_graph_get_info(g < CNN_PARTS ? parts[g] : opt_step[g - CNN_PARTS], &info);
            launches += info.n_launches;
            library += info.n_direct;
        }
        printf("training step: %zu launches recorded in %zu graphs, %zu of them library calls run "
               "at each replay\n",
               launches, CNN_PARTS + n_opt, library);
    }
    if (dp_rank(d) == 0 && csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(stderr, "fashion-mnist: cannot write %s: %s\n", csv_path, strerror(errno));
        goto done;
    }
    if (csv)
        fprintf(csv, "epoch,train_loss,test_accuracy,samples_per_s\n");
    order = malloc(n_train * sizeof *order);
    bx = malloc((size_t)b * CNN_PIXELS);
    by = malloc((size_t)b);
    if (!order || !bx || !by) {
        fprintf(stderr, "fashion-mnist: out of host memory\n");
        goto done;
    }
    /* A step takes `global` images of the shuffled order; this rank trains on its slice. */
    const size_t global = (size_t)ranks * (size_t)b, steps = n_train / global;
    if (steps == 0) {
        fprintf(stderr, "fashion-mnist: %zu training images make no batch of %zu\n", n_train,
                global);
        goto done;
    }
    const int tty = isatty(fileno(stdout));
    int64_t step = 0;
    for (int epoch = 1; epoch <= (int)epochs; epoch++) {
        shuffle(order, n_train, (uint64_t)seed * 1000003u + (uint64_t)epoch);
        const double t0 = example_now();
        stage(m, &train, order, s_offset(d, global, b, 0), b, bx, by);
        for (size_t s = 0; s < steps; s++) {
            st = cnn_upload_batch(m);
            step++;
            /* Each part's gradients are averaged over the ranks while the next parts run. */
            for (int p = 0; st == KP_OK && p < CNN_PARTS; p++) {
                st = opt_step ? kp_graph_replay(parts[p], NULL) : cnn_step_part(m, p);
                if (st == KP_OK)
                    st = dp_part_done(d, p);
            }
            /* The next batch is staged while the device runs this step: across ranks the host's
             * time after the last bucket is the step's (every rank waits for it). */
            if (st == KP_OK && s + 1 < steps)
                stage(m, &train, order, s_offset(d, global, b, s + 1), b, bx, by);
            const double step_lr =
                scheduled_lr(lr, cosine, step - 1, (int64_t)epochs * (int64_t)steps);
            for (size_t k = 0; st == KP_OK && k < n_opt; k++) {
                st = dp_bucket_ready(d, k);
                if (st == KP_OK && opt_step)
                    st = kp_graph_set_int(opt_step[k], "step", step);
                if (st == KP_OK && opt_step)
                    st = kp_graph_set_float(opt_step[k], "lr", step_lr);
                if (st == KP_OK)
                    st = opt_step ? kp_graph_replay(opt_step[k], NULL)
                                  : cnn_optimizer_step(m, step, step_lr, opt_at[k], opt_count[k]);
            }
            if (st == KP_OK)
                st = dp_gradients_ready(d);
            if (st != KP_OK) {
                example_fail(PROGRAM, rt, st, "training step");
                goto done;
            }
            if (check_replicas && (st = dp_check_replicas(d, m, err, sizeof err)) != KP_OK) {
                fprintf(stderr, "fashion-mnist: after step %lld: %s\n", (long long)step, err);
                goto done;
            }
            if (tty && (s % 20 == 0 || s + 1 == steps)) {
                printf("\repoch %d: %zu/%zu batches, %.0f samples/s ", epoch, s + 1, steps,
                       (double)((s + 1) * global) / (example_now() - t0));
                fflush(stdout);
            }
        }
        double loss_sum = 0;
        if ((st = cnn_take_loss_sum(m, &loss_sum)) != KP_OK ||
            (st = dp_mean(d, &loss_sum)) != KP_OK) {
            example_fail(PROGRAM, rt, st, "reading the loss");
            goto done;
        }
        const double rate = (double)(steps * global) / (example_now() - t0);
        if ((st = evaluate(m, &test, n_test, b, &accuracy, &digest)) != KP_OK) {
            example_fail(PROGRAM, rt, st, "evaluating");
            goto done;
        }
        printf("%sepoch %d: train loss %.4f, test accuracy %.2f%% (%zu images), %.0f samples/s\n",
               tty ? "\r" : "", epoch, loss_sum / (double)steps, 100 * accuracy, n_test, rate);
        if (csv)
            fprintf(csv, "%d,%.6f,%.6f,%.1f\n", epoch, loss_sum / (double)steps, accuracy, rate);
    }
    printf("test predictions digest: %016llx\n", (unsigned long long)digest);
    if (check_replicas && ranks > 1)
        printf("replicas: every rank held the same parameters after each of the %lld steps\n",
               (long long)step);
    if (save && dp_rank(d) == 0) {
        if (cnn_save(m, save, err, sizeof err) != KP_OK) {
            fprintf(stderr, "fashion-mnist: %s\n", err);
            goto done;
        }
        printf("weights saved to %s\n", save);
    }
    if (compare) {
        double most = 0, mean = 0;
        if (cnn_difference(m, compare, &most, &mean, err, sizeof err) != KP_OK) {
            fprintf(stderr, "fashion-mnist: %s\n", err);
            goto done;
        }
        printf("difference from %s: largest %.3g, mean %.3g\n", compare, most, mean);
        if (max_difference >= 0 && most > max_difference) {
            printf("the largest difference %.3g is above --max-difference %.3g\n", most,
                   max_difference);
            goto done;
        }
    }
    rc = 0;
    if (accuracy < min_accuracy) {
        printf("test accuracy %.2f%% is below --min-accuracy %.2f%%\n", 100 * accuracy,
               100 * min_accuracy);
        rc = 1;
    }
done:
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "fashion-mnist: writing %s failed\n", csv_path);
        rc = 1;
    }
    free(order);
    free(bx);
    free(by);
    for (int p = 0; p < CNN_PARTS; p++) {
        kp_graph_destroy(parts[p]);
        kp_graph_destroy(opt_steps[p]);
    }
    if (rc != 0 && ranks > 1)
        return dp_fail(d, "stopped after the error above");
    dp_finish(d);
    cnn_destroy(m);
    kp_runtime_destroy(rt);
    idx_free(&train);
    idx_free(&test);
    return rc;
}
