/* SPDX-License-Identifier: Apache-2.0 */
/* gru-world-model: S1's loop on Kernelport alone. Synthetic loss curves, their 64 features in one
 * launch, an ensemble of GRUs trained to continue them, and 50-step rollouts scored on held-out
 * curves against the naive forecasts (README.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "curves.h"
#include "example-cli.h"
#include "features.h"
#include "kernelport/ops/gru.h"
#include "kernelport/ops/random.h"
#include "wm-model.h"

#define PROGRAM "gru-world-model"

static const char usage[] =
    "usage: gru-world-model [--device SPEC] [--seed N] [--curves N] [--test N] [--train N]\n"
    "           [--history W] [--horizon T] [--members E] [--hidden H] [--batch B]\n"
    "           [--epochs N] [--lr LR] [--linear-k K] [--csv FILE] [--predictions FILE]\n"
    "           [--save-data FILE] [--expect-better]\n"
    "Generates synthetic training-loss curves, encodes every history into 64 features with one\n"
    "launch, trains an ensemble of GRUs (gru.sequence, gru.sequence_backward, AdamW) to continue\n"
    "the curves, and scores ensemble rollouts (gru.rollout) on held-out curves in log-loss space\n"
    "against two naive forecasts: the last value, and a line through the last K values.\n"
    "  --device SPEC       a device as `kernelport devices` lists it (default: the manifest's)\n"
    "  --seed N            seed of the curves, the weights and the data order (default 1)\n"
    "  --curves N          curves generated and encoded in the one launch (default 10000)\n"
    "  --test N            held-out curves, the last N (default 1000)\n"
    "  --train N           training curves, the first N (default: all the others)\n"
    "  --history W         observed steps per curve, W >= 3 (default 100)\n"
    "  --horizon T         steps predicted, and trained on (default 50)\n"
    "  --members E         ensemble members (default 5)\n"
    "  --hidden H          GRU units (default 64)\n"
    "  --batch B           curves per training step (default 128)\n"
    "  --epochs N          epochs per member (default 10)\n"
    "  --lr LR             AdamW's learning rate (default 0.003)\n"
    "  --linear-k K        points of a linear-extrapolation baseline, besides 5, 10, 30, 50\n"
    "                      and W (default 20); the best of them is the one to beat\n"
    "  --csv FILE          write epoch,member,loss,heldout_rmse,samples_per_s rows\n"
    "  --predictions FILE  write step,truth,ensemble,last_value,linear rows of held-out curve 0\n"
    "  --save-data FILE    write the curves and their features (README.md, \"The data file\")\n"
    "  --expect-better     exit 1 unless the ensemble beats both baselines\n";

typedef struct options {
    const char *device, *csv, *predictions, *save_data;
    double seed, curves, test, train, history, horizon, members, hidden, batch, epochs, lr,
        linear_k;
    int expect_better;
} options;

/* 0: parsed; 1: --help shown; 2: bad arguments (reported). */
static int parse(int argc, char **argv, options *o)
{
    *o = (options){.seed = 1,
                   .curves = 10000,
                   .test = 1000,
                   .train = -1,
                   .history = 100,
                   .horizon = 50,
                   .members = 5,
                   .hidden = 64,
                   .batch = 128,
                   .epochs = 10,
                   .lr = 0.003,
                   .linear_k = 20};
    const struct {
        const char *name;
        double lo, hi, *value;
    } numbers[] = {{"--seed", 0, 4294967295.0, &o->seed},
                   {"--curves", 2, 1e8, &o->curves},
                   {"--test", 1, 1e8, &o->test},
                   {"--train", 1, 1e8, &o->train},
                   {"--history", FEATURES_MIN_HISTORY, 1e5, &o->history},
                   {"--horizon", 1, 1e4, &o->horizon},
                   {"--members", 1, 64, &o->members},
                   {"--hidden", 1, 4096, &o->hidden},
                   {"--batch", 1, 1e6, &o->batch},
                   {"--epochs", 1, 1e6, &o->epochs},
                   {"--lr", 0, 10, &o->lr},
                   {"--linear-k", 2, 1e5, &o->linear_k}};
    for (int i = 1; i < argc; i++) {
        int ok = 1, known = 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 1;
        }
        const char **strings[] = {&o->device, &o->csv, &o->predictions, &o->save_data};
        const char *string_names[] = {"--device", "--csv", "--predictions", "--save-data"};
        for (int s = 0; s < 4 && !known; s++)
            if (!strcmp(argv[i], string_names[s]) && i + 1 < argc)
                *strings[s] = argv[++i], known = 1;
        for (size_t n = 0; n < sizeof numbers / sizeof numbers[0] && !known; n++)
            if (!strcmp(argv[i], numbers[n].name))
                ok = example_number(PROGRAM, usage, argc, argv, &i, numbers[n].lo, numbers[n].hi,
                                    numbers[n].value),
                known = 1;
        if (!known && !strcmp(argv[i], "--expect-better"))
            o->expect_better = known = 1;
        if (!known) {
            fprintf(stderr, "gru-world-model: unknown argument %s\n%s", argv[i], usage);
            return 2;
        }
        if (!ok)
            return 2;
    }
    if (o->train < 0)
        o->train = o->curves - o->test;
    if (o->train < 1 || o->train + o->test > o->curves || o->linear_k > o->history ||
        o->batch > o->train) {
        fprintf(stderr,
                "gru-world-model: need 1 <= --train, --train + --test <= --curves, --batch <= "
                "--train and --linear-k <= --history (got train %.0f, test %.0f, curves %.0f, "
                "batch %.0f, linear-k %.0f, history %.0f)\n",
                o->train, o->test, o->curves, o->batch, o->linear_k, o->history);
        return 2;
    }
    return 0;
}

/* The line through v[w - k .. w - 1] (least squares), s steps past the last point, minus it. */
static double linear_forecast(const float *v, int w, int k, int s)
{
    const double tbar = 0.5 * (k - 1);
    double mean = 0, sxy = 0, sxx = 0;
    for (int t = 0; t < k; t++)
        mean += v[w - k + t];
    mean /= k;
    for (int t = 0; t < k; t++) {
        sxy += (t - tbar) * (v[w - k + t] - mean);
        sxx += (t - tbar) * (t - tbar);
    }
    return mean + sxy / sxx * (k - 1 + s - tbar) - v[w - 1];
}

/* The data file: "KPWMDATA", u32 version 1, N, W, L, then v [N, L] and the device's features
 * [N, 64], f32, little-endian (this program writes its host's order: x86 and ARM are little). */
static int save_data(const char *path, int64_t n, int w, int l, const float *v,
                     const float *features_t)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "gru-world-model: cannot write %s: %s\n", path, strerror(errno));
        return 0;
    }
    const uint32_t head[4] = {1, (uint32_t)n, (uint32_t)w, (uint32_t)l};
    int ok = fwrite("KPWMDATA", 1, 8, f) == 8 && fwrite(head, sizeof head, 1, f) == 1 &&
             fwrite(v, sizeof *v, (size_t)(n * l), f) == (size_t)(n * l);
    for (int64_t i = 0; ok && i < n; i++)
        for (int j = 0; ok && j < FEATURES; j++)
            ok = fwrite(features_t + (int64_t)j * n + i, sizeof(float), 1, f) == 1;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "gru-world-model: writing %s failed\n", path);
        return 0;
    }
    return 1;
}

/* What the training batches are made from: the curves v [n, l] (the first n_train train), their
 * standardised features [n, F], the history w and the horizon t, the targets' unit. */
typedef struct dataset {
    const float *v, *f;
    int64_t n_train;
    int w, t, l;
    double y_scale;
} dataset;

/*
 * One epoch's nb batches of b curves in the order of a Fisher-Yates shuffle from the Philox stream
 * of (seed, member, epoch) (perm: n_train scratch): x [nb, T, b, F + 1] with x_t = [f, y_{t-1}]
 * (y_{-1} = 0, the last observed value) and targets y [nb, T, b], y_t = (v(W + t) - v(W - 1)) in
 * y_scale units.
 */
static void epoch_batches(const dataset *d, uint64_t seed, int member, int epoch, int b, int64_t nb,
                          int64_t *perm, float *x, float *y)
{
    const int F = FEATURES, I = F + 1, W = d->w, T = d->t;
    const uint64_t stream = ((uint64_t)member << 48) | ((uint64_t)epoch << 32);
    for (int64_t i = 0; i < d->n_train; i++)
        perm[i] = i;
    for (int64_t i = d->n_train - 1; i > 0; i--) {
        const int64_t j =
            (int64_t)(kp_random_uniform(seed, stream, (uint64_t)i) * (double)(i + 1)) % (i + 1);
        const int64_t s = perm[i];
        perm[i] = perm[j], perm[j] = s;
    }
    for (int64_t bi = 0; bi < nb; bi++)
        for (int j = 0; j < b; j++) {
            const int64_t c = perm[bi * b + j];
            const float *vc = d->v + c * d->l;
            for (int t = 0; t < T; t++) {
                float *xt = x + ((bi * T + t) * b + j) * I;
                memcpy(xt, d->f + c * F, F * sizeof *xt);
                xt[F] = t ? (float)((vc[W + t - 1] - vc[W - 1]) / d->y_scale) : 0.0f;
                y[(bi * T + t) * b + j] = (float)((vc[W + t] - vc[W - 1]) / d->y_scale);
            }
        }
}

/*
 * Scores the ensemble's predictions pred [E, n_test, T] (y_scale units) of the held-out curves
 * v_test [n_test, L] against the last value and lines through the last k values, prints the table,
 * and returns whether the ensemble beat both.
 */
static int report(const dataset *d, const float *v_test, int64_t n_test, int E, int K,
                  const float *pred)
{
    const int W = d->w, T = d->t, L = d->l;
    const double y_scale = d->y_scale;
    /* Lines through the last k values for a few k besides --linear-k: the ensemble must beat
     * the best of them (chosen on the held-out curves themselves, which favours the baseline). */
    const int ks[] = {K, 5, 10, 30, 50, W};
    enum { N_KS = sizeof ks / sizeof ks[0] };
    double se_ens = 0, se_ens_end = 0, se_last = 0, se_last_end = 0;
    double se_lin[N_KS] = {0}, se_lin_end[N_KS] = {0};
    for (int64_t i = 0; i < n_test; i++) {
        const float *vc = v_test + i * L;
        for (int t = 0; t < T; t++) {
            double mean = 0;
            for (int e = 0; e < E; e++)
                mean += pred[((int64_t)e * n_test + i) * T + t];
            mean = mean / E * y_scale;
            const double truth = vc[W + t] - vc[W - 1], de = mean - truth;
            se_ens += de * de, se_last += truth * truth;
            if (t == T - 1)
                se_ens_end += de * de, se_last_end += truth * truth;
            for (int q = 0; q < N_KS; q++) {
                if (ks[q] > W)
                    continue;
                const double dn = linear_forecast(vc, W, ks[q], t + 1) - truth;
                se_lin[q] += dn * dn;
                if (t == T - 1)
                    se_lin_end[q] += dn * dn;
            }
        }
    }
    const double cnt = (double)(n_test * T);
    const double r_ens = sqrt(se_ens / cnt), r_last = sqrt(se_last / cnt);
    kp_gru_rollout_metrics metrics = {.struct_size = sizeof metrics};
    kp_gru_rollout_metrics_compute(pred, E, n_test, T, NULL, NULL, NULL, &metrics);
    printf("held-out %d-step prediction, RMSE in log loss over all steps (at step %d):\n", T, T);
    printf("  GRU ensemble (mean of %d)   %.4f  (%.4f)  ensemble spread %.4f\n", E, r_ens,
           sqrt(se_ens_end / (double)n_test), metrics.ensemble_spread * y_scale);
    printf("  last value                 %.4f  (%.4f)\n", r_last,
           sqrt(se_last_end / (double)n_test));
    double r_lin = INFINITY;
    int best_k = K;
    for (int q = 0; q < N_KS; q++) {
        if (ks[q] > W || (q > 0 && ks[q] == K))
            continue;
        const double r = sqrt(se_lin[q] / cnt);
        printf("  line through the last %-4d %.4f  (%.4f)\n", ks[q], r,
               sqrt(se_lin_end[q] / (double)n_test));
        if (r < r_lin)
            r_lin = r, best_k = ks[q];
    }
    const int better = r_ens < r_last && r_ens < r_lin;
    printf("the ensemble %s both baselines (%.2fx the last value's error, %.2fx the best line's, "
           "k = %d)\n",
           better ? "beats" : "does NOT beat", r_ens / r_last, r_ens / r_lin, best_k);
    return better;
}

int main(int argc, char **argv)
{
    options o;
    const int parsed = parse(argc, argv, &o);
    if (parsed)
        return parsed == 1 ? 0 : 2;
    const int64_t N = (int64_t)o.curves, n_test = (int64_t)o.test, n_train = (int64_t)o.train;
    const int W = (int)o.history, T = (int)o.horizon, L = W + T, E = (int)o.members;
    const int B = (int)o.batch, F = FEATURES, I = F + 1, K = (int)o.linear_k;
    const uint64_t seed = (uint64_t)o.seed;

    kp_runtime_options ro = kp_runtime_options_default();
    ro.device = o.device;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&ro, &rt);
    if (st != KP_OK)
        return example_fail(PROGRAM, NULL, st, "kp_runtime_create");
    kp_device_info dev = {.struct_size = sizeof dev};
    const char *why;
    if ((st = kp_runtime_device(rt, &dev, &why)) != KP_OK)
        return example_fail(PROGRAM, rt, st, "kp_runtime_device");
    printf("device: %s (%s)\n", dev.name, kp_vendor_name(dev.vendor));

    int rc = 1;
    FILE *csv = NULL;
    wm_model *m = NULL;
    kp_buffer *hist = NULL, *feat = NULL, *xbuf = NULL, *ybuf = NULL, *ftest = NULL;
    kp_event *ev = NULL;
    const int64_t nb = n_train / B, per_x = (int64_t)T * B * I, per_y = (int64_t)T * B;
    float *v = malloc((size_t)(N * L) * sizeof *v);
    float *hist_host = malloc((size_t)(N * W) * sizeof *hist_host);
    float *fdev = malloc((size_t)(N * F) * sizeof *fdev);
    double *fmean = calloc(F, sizeof *fmean), *fstd = calloc(F, sizeof *fstd);
    float *fnorm = malloc((size_t)(N * F) * sizeof *fnorm);
    float *xh = malloc((size_t)(nb * per_x) * sizeof *xh);
    float *yh = malloc((size_t)(nb * per_y) * sizeof *yh);
    float *pred = malloc((size_t)((int64_t)E * n_test * T) * sizeof *pred);
    int64_t *perm = malloc((size_t)n_train * sizeof *perm);
    if (!v || !hist_host || !fdev || !fmean || !fstd || !fnorm || !xh || !yh || !pred || !perm) {
        fprintf(stderr, "gru-world-model: out of host memory\n");
        goto done;
    }

    /* The curves, and their histories stored time-major ([W, N]: consecutive work-items read
     * consecutive floats), handed to the kernel as the [N, W] view of strides (1, N). */
    curves_generate(seed, N, L, v, NULL);
    for (int64_t i = 0; i < N; i++)
        for (int t = 0; t < W; t++)
            hist_host[(int64_t)t * N + i] = v[i * L + t];
    kp_kernel *encoder = NULL;
    st = features_register(rt, &encoder);
    if (st == KP_OK)
        st = kp_buffer_create(rt, (size_t)(N * W) * sizeof(float), &hist);
    if (st == KP_OK)
        st = kp_buffer_create(rt, (size_t)(N * F) * sizeof(float), &feat);
    if (st == KP_OK)
        st = kp_buffer_write(rt, hist, 0, (size_t)(N * W) * sizeof(float), hist_host);
    /* Once to compile, then five timed launches (the median is printed: the 2-core test machine
     * is shared). */
    const kp_tensor hv = kp_tensor_transpose(kp_tensor_2d(hist, KP_F32, W, N), 0, 1);
    const kp_tensor fv = kp_tensor_transpose(kp_tensor_2d(feat, KP_F32, F, N), 0, 1);
    if (st == KP_OK)
        st = features_encode(rt, encoder, hv, fv, NULL);
    if (st == KP_OK)
        st = kp_finish(rt);
    double runs[5] = {0};
    for (int r = 0; st == KP_OK && r < 5; r++) {
        st = features_encode(rt, encoder, hv, fv, &ev);
        if (st == KP_OK)
            st = kp_event_wait(rt, ev);
        if (st == KP_OK)
            st = kp_event_elapsed(rt, ev, &runs[r]);
        kp_event_destroy(rt, ev);
        ev = NULL;
    }
    for (int a = 1; a < 5; a++)
        for (int b = a; b > 0 && runs[b] < runs[b - 1]; b--) {
            const double s = runs[b];
            runs[b] = runs[b - 1], runs[b - 1] = s;
        }
    const double encode_s = runs[2];
    if (st == KP_OK)
        st = kp_buffer_read(rt, feat, 0, (size_t)(N * F) * sizeof(float), fdev);
    if (st != KP_OK) {
        example_fail(PROGRAM, rt, st, "encoding the histories");
        goto done;
    }
    /* The host reference on every history: |device - reference| <= 1e-3 (1 + |reference|). */
    double worst = 0, t_ref = example_now();
    int worst_j = 0;
    for (int64_t i = 0; i < N; i++) {
        double ref[FEATURES];
        features_reference(v + i * L, W, ref);
        for (int j = 0; j < F; j++) {
            const double err = fabs(fdev[(int64_t)j * N + i] - ref[j]) / (1 + fabs(ref[j]));
            if (!(err <= worst)) {
                worst = isnan(err) ? INFINITY : err;
                worst_j = j;
            }
        }
    }
    t_ref = example_now() - t_ref;
    printf("features: %lld histories of %d steps -> 64 features in one wm.features launch: "
           "%.3f ms on the device (median of 5; %.3f-%.3f); host reference (double, one thread) "
           "%.3f ms; largest error %.2e (feature %s)\n",
           (long long)N, W, 1e3 * encode_s, 1e3 * runs[0], 1e3 * runs[4], 1e3 * t_ref, worst,
           features_names[worst_j]);
    if (!(worst <= 1e-3)) {
        fprintf(stderr, "gru-world-model: feature %s differs from the host reference by %.3g\n",
                features_names[worst_j], worst);
        goto done;
    }
    double worst_views = 0;
    st = features_check_views(rt, encoder, hist, feat, N, W, v, L, &worst_views);
    if (st != KP_OK) {
        example_fail(PROGRAM, rt, st, "encoding views of the histories");
        goto done;
    }
    if (!(worst_views <= 1e-3)) {
        fprintf(stderr,
                "gru-world-model: views of the histories: features differ from the host "
                "reference by %.3g\n",
                worst_views);
        goto done;
    }

    if (o.save_data && !save_data(o.save_data, N, W, L, v, fdev))
        goto done;

    /* Standardised features (training curves' mean and std, clipped to +-5), and targets in
     * units of the training targets' root mean square. */
    for (int j = 0; j < F; j++) {
        double s = 0, s2 = 0;
        for (int64_t i = 0; i < n_train; i++)
            s += fdev[(int64_t)j * N + i];
        fmean[j] = s / (double)n_train;
        for (int64_t i = 0; i < n_train; i++) {
            const double d = fdev[(int64_t)j * N + i] - fmean[j];
            s2 += d * d;
        }
        fstd[j] = sqrt(s2 / (double)n_train);
        if (!(fstd[j] > 1e-12))
            fstd[j] = 1;
        for (int64_t i = 0; i < N; i++) {
            const double z = (fdev[(int64_t)j * N + i] - fmean[j]) / fstd[j];
            fnorm[i * F + j] = (float)fmin(5.0, fmax(-5.0, z));
        }
    }
    double y_scale = 0;
    for (int64_t i = 0; i < n_train; i++)
        for (int t = 0; t < T; t++) {
            const double u = v[i * L + W + t] - v[i * L + W - 1];
            y_scale += u * u;
        }
    y_scale = sqrt(y_scale / (double)(n_train * T));
    if (!(y_scale > 0))
        y_scale = 1;
    printf("data: %lld training curves (%lld batches of %d), %lld held out; history %d, "
           "horizon %d; targets in units of %.4f (their RMS in log loss)\n",
           (long long)n_train, (long long)nb, B, (long long)n_test, W, T, y_scale);

    const dataset ds = {
        .v = v, .f = fnorm, .n_train = n_train, .w = W, .t = T, .l = L, .y_scale = y_scale};
    const wm_config cfg = {.members = E,
                           .hidden = (int)o.hidden,
                           .features = F,
                           .batch = B,
                           .horizon = T,
                           .lr = o.lr,
                           .seed = seed + 1};
    if ((st = wm_model_create(rt, &cfg, &m)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "creating the model");
        goto done;
    }
    st = kp_buffer_create(rt, (size_t)(nb * per_x) * sizeof(float), &xbuf);
    if (st == KP_OK)
        st = kp_buffer_create(rt, (size_t)(nb * per_y) * sizeof(float), &ybuf);
    if (st == KP_OK)
        st = kp_buffer_create(rt, (size_t)(n_test * F) * sizeof(float), &ftest);
    if (st == KP_OK)
        st = kp_buffer_write(rt, ftest, 0, (size_t)(n_test * F) * sizeof(float),
                             fnorm + (N - n_test) * F);
    if (st != KP_OK) {
        example_fail(PROGRAM, rt, st, "allocating the data");
        goto done;
    }
    const kp_tensor f_test = kp_tensor_3d(ftest, KP_F32, 1, n_test, F);
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "gru-world-model: cannot write %s: %s\n", o.csv, strerror(errno));
        goto done;
    }
    if (csv)
        fprintf(csv, "epoch,member,loss,heldout_rmse,samples_per_s\n");

    /* The held-out truth in log-loss units relative to each curve's last observed value. */
    const float *v_test = v + (N - n_test) * L;
    double total_train = 0, first_epoch = 0;
    for (int e = 0; e < E; e++) {
        int64_t step = 0;
        for (int epoch = 0; epoch < (int)o.epochs; epoch++) {
            epoch_batches(&ds, seed + 2, e, epoch, B, nb, perm, xh, yh);
            st = kp_buffer_write(rt, xbuf, 0, (size_t)(nb * per_x) * sizeof(float), xh);
            if (st == KP_OK)
                st = kp_buffer_write(rt, ybuf, 0, (size_t)(nb * per_y) * sizeof(float), yh);
            if (st == KP_OK)
                st = kp_finish(rt);
            const double t0 = example_now();
            for (int64_t bi = 0; st == KP_OK && bi < nb; bi++) {
                kp_tensor x = kp_tensor_3d(xbuf, KP_F32, T, B, I);
                kp_tensor y = kp_tensor_2d(ybuf, KP_F32, T, B);
                x.offset = bi * per_x;
                y.offset = bi * per_y;
                st = wm_model_train_step(m, e, x, y, ++step);
            }
            double loss_sum = 0;
            if (st == KP_OK)
                st = wm_model_take_loss(m, &loss_sum);
            const double dt = example_now() - t0;
            total_train += dt;
            if (e == 0 && epoch == 0)
                first_epoch = dt;
            /* This member alone, rolled out over the held-out curves. */
            if (st == KP_OK)
                st = wm_model_rollout(m, e, 1, f_test, pred);
            if (st != KP_OK) {
                example_fail(PROGRAM, rt, st, "training");
                goto done;
            }
            double se = 0;
            for (int64_t i = 0; i < n_test; i++)
                for (int t = 0; t < T; t++) {
                    const double d =
                        pred[i * T + t] * y_scale - (v_test[i * L + W + t] - v_test[i * L + W - 1]);
                    se += d * d;
                }
            const double rmse = sqrt(se / (double)(n_test * T));
            const double sps = (double)(nb * B) / dt, loss = loss_sum / (double)nb;
            printf("member %d epoch %3d  loss %.5f  held-out rmse %.4f  %.0f samples/s\n", e,
                   epoch + 1, loss, rmse, sps);
            if (csv)
                fprintf(csv, "%d,%d,%.9g,%.9g,%.6g\n", e * (int)o.epochs + epoch + 1, e, loss, rmse,
                        sps);
        }
    }
    /* The first epoch builds the kernels (on a cold cache, seconds): the rest is the speed of a
     * step that a longer training run sees. */
    const double n_steps = (double)E * o.epochs * (double)nb;
    printf("training: %d members x %.0f epochs in %.2f s (%d launches a step, %.2f ms a step; "
           "%.3f ms a step after the first epoch)\n",
           E, o.epochs, total_train, wm_model_launches_per_step(), 1e3 * total_train / n_steps,
           n_steps > (double)nb ? 1e3 * (total_train - first_epoch) / (n_steps - (double)nb) : 0.0);

    /* The ensemble: one gru.rollout launch for all E members over the held-out curves. */
    const double t_roll = example_now();
    if ((st = wm_model_rollout(m, 0, E, f_test, pred)) != KP_OK) {
        example_fail(PROGRAM, rt, st, "the ensemble rollout");
        goto done;
    }
    const double roll_s = example_now() - t_roll;
    printf("ensemble rollout: %d members x %lld curves x %d steps in one gru.rollout launch, "
           "%.2f ms (with its buffers and the read)\n",
           E, (long long)n_test, T, 1e3 * roll_s);
    const int better = report(&ds, v_test, n_test, E, K, pred);

    if (o.predictions) {
        FILE *p = fopen(o.predictions, "w");
        if (!p) {
            fprintf(stderr, "gru-world-model: cannot write %s: %s\n", o.predictions,
                    strerror(errno));
            goto done;
        }
        fprintf(p, "step,truth,ensemble,last_value,linear\n");
        for (int t = 0; t < L; t++) {
            fprintf(p, "%d,%.7g", t, (double)v_test[t]);
            if (t < W) {
                fprintf(p, ",,,\n");
                continue;
            }
            double mean = 0;
            for (int e = 0; e < E; e++)
                mean += pred[(int64_t)e * n_test * T + t - W];
            fprintf(p, ",%.7g,%.7g,%.7g\n", mean / E * y_scale + v_test[W - 1],
                    (double)v_test[W - 1],
                    linear_forecast(v_test, W, K, t - W + 1) + v_test[W - 1]);
        }
        if (fclose(p) != 0) {
            fprintf(stderr, "gru-world-model: writing %s failed\n", o.predictions);
            goto done;
        }
    }
    rc = o.expect_better && !better ? 1 : 0;
done:
    if (csv && fclose(csv) != 0) {
        fprintf(stderr, "gru-world-model: writing %s failed\n", o.csv);
        rc = 1;
    }
    kp_event_destroy(rt, ev);
    kp_buffer *bufs[] = {hist, feat, xbuf, ybuf, ftest};
    for (int i = 0; i < 5; i++)
        kp_buffer_destroy(rt, bufs[i]);
    wm_model_destroy(m);
    kp_runtime_destroy(rt);
    free(v), free(hist_host), free(fdev), free(fmean), free(fstd), free(fnorm), free(xh), free(yh),
        free(pred), free(perm);
    return rc;
}
