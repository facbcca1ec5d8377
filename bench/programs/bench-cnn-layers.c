/* SPDX-License-Identifier: Apache-2.0 */
/* bench-cnn-layers: every conv-family call of one Fashion-MNIST CNN training step (#25), alone,
 * at the example's batch: the two convolutions forward, their weight, data and bias gradients,
 * the two max-pools and their gradients. Each call is timed two ways: its event span (from its
 * first command's start to its last one's end: the device's time plus any gap the host leaves
 * between the commands of one launch) and the wall time per call of 20 calls in a row (what a
 * training loop sees when the host submits ahead). bench/peers/peer-cnn-layers.py times the same
 * calls in PyTorch under the same case names. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

enum { BATCH = 128, IN_ROW = 20 };

/* --loop S: no timings; the interleaved steps only, for S seconds (for a sampling profiler). */
static const char *loop_text;

/* One convolution layer of the example: NCHW input, K outputs, 3x3, pad 1, stride 1. */
typedef struct layer {
    const char *name;
    int64_t C, H, K;
} layer;

static const layer layers[] = {{"conv1 N128 C1 28x28 K32", 1, 28, 32},
                               {"conv2 N128 C32 14x14 K64", 32, 14, 64}};

typedef struct call {
    kpb *b;
    kp_kernel *k;
    kp_arg args[10];
    size_t n;
} call;

/* One layer's buffers and calls, kept for the whole-step rows. */
enum { MAX_CALLS = 8, N_BUFS = 9 };
typedef struct layer_calls {
    kp_buffer *bufs[N_BUFS];
    call calls[MAX_CALLS];
    size_t n;
} layer_calls;

static void run_in_row(void *user)
{
    call *c = user;
    for (int i = 0; i < IN_ROW; i++)
        if (kp_kernel_launch(c->b->rt, c->k, c->args, c->n, NULL) != KP_OK)
            return;
    kp_finish(c->b->rt);
}

static int time_call(kpb *b, const char *kernel, const char *case_name, layer_calls *lc, call *c,
                     double flops, double bytes)
{
    kpb_row row = {
        .case_name = (char *)case_name, .ours = (char *)kernel, .flops = flops, .bytes = bytes};
    c->b = b;
    kp_status st = kp_kernel_find(b->rt, kernel, &c->k);
    double span = 0;
    if (st == KP_OK && loop_text) {
        if (lc->n < MAX_CALLS)
            lc->calls[lc->n++] = *c;
        return kp_kernel_launch(b->rt, c->k, c->args, c->n, NULL) != KP_OK;
    }
    if (st == KP_OK)
        st = kpb_time_kernel(b, c->k, c->args, c->n, &span, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK) {
        row.ours_s = kpb_time_host(b, run_in_row, c) / IN_ROW;
        kpb_row_metric(&row, "span_s", span);
    } else {
        row.note = (char *)kp_last_error(b->rt);
    }
    row.status = st;
    kpb_add(b, &row);
    if (st == KP_OK && lc->n < MAX_CALLS)
        lc->calls[lc->n++] = *c;
    return st != KP_OK;
}

static kp_tensor t4(kp_buffer *buf, int64_t n, int64_t c, int64_t h, int64_t w, kp_dtype dt)
{
    return kp_tensor_nd(buf, dt, 4, (int64_t[]){n, c, h, w});
}

static int bench_layer(kpb *b, const layer *l, layer_calls *lc)
{
    const int64_t N = BATCH, C = l->C, H = l->H, K = l->K, P = H / 2;
    const size_t nx = (size_t)(N * C * H * H), ny = (size_t)(N * K * H * H),
                 nw = (size_t)(K * C * 9);
    const size_t np = (size_t)(N * K * P * P);
    kp_buffer **bufs = lc->bufs;
    kp_status st = KP_OK;
    size_t sizes[N_BUFS] = {nx, nw, (size_t)K, ny, nx, nw, (size_t)K, np, np};
    for (size_t i = 0; i < N_BUFS && st == KP_OK; i++) {
        st = kp_buffer_create(b->rt, sizes[i] * 4, &bufs[i]);
    }
    kp_buffer *x = bufs[0], *w = bufs[1], *bias = bufs[2], *y = bufs[3], *dx = bufs[4],
              *dw = bufs[5], *db = bufs[6], *pooled = bufs[7], *idx = bufs[8];
    float *host = malloc(sizeof(float) * (ny > nx ? ny : nx));
    if (!host || st != KP_OK) {
        free(host);
        fprintf(stderr, "bench-cnn-layers: %s\n", st != KP_OK ? kp_last_error(b->rt) : "no memory");
        return 1;
    }
    for (size_t i = 0; i < 4 && st == KP_OK; i++) {
        kpb_fill(host, sizes[i], 11 + i);
        st = kp_buffer_write(b->rt, bufs[i], 0, sizes[i] * 4, host);
    }
    free(host);
    int failures = 0;
    if (st != KP_OK) {
        fprintf(stderr, "bench-cnn-layers: %s\n", kp_last_error(b->rt));
        failures = 1;
    } else {
        const double conv_flops = 2.0 * (double)ny * (double)(C * 9);
        const kp_arg pad[] = {KP_ARG_INT("pad_h", 1), KP_ARG_INT("pad_w", 1)};
        const kp_arg pool[] = {KP_ARG_INT("kernel_h", 2), KP_ARG_INT("kernel_w", 2)};
        call fwd = {.args = {KP_ARG_TENSOR("x", t4(x, N, C, H, H, KP_F32)),
                             KP_ARG_TENSOR("w", t4(w, K, C, 3, 3, KP_F32)),
                             KP_ARG_TENSOR("bias", kp_tensor_1d(bias, KP_F32, K)),
                             KP_ARG_TENSOR("y", t4(y, N, K, H, H, KP_F32)), pad[0], pad[1]},
                    .n = 6};
        failures += time_call(b, "conv.conv2d", l->name, lc, &fwd, conv_flops,
                              4.0 * (double)(nx + nw + ny));
        call bw = {.args = {KP_ARG_TENSOR("x", t4(x, N, C, H, H, KP_F32)),
                            KP_ARG_TENSOR("dy", t4(y, N, K, H, H, KP_F32)),
                            KP_ARG_TENSOR("dw", t4(dw, K, C, 3, 3, KP_F32)), pad[0], pad[1]},
                   .n = 5};
        failures += time_call(b, "conv.conv2d_backward_weight", l->name, lc, &bw, conv_flops,
                              4.0 * (double)(nx + nw + ny));
        if (C > 1) {
            call bd = {.args = {KP_ARG_TENSOR("dy", t4(y, N, K, H, H, KP_F32)),
                                KP_ARG_TENSOR("w", t4(w, K, C, 3, 3, KP_F32)),
                                KP_ARG_TENSOR("dx", t4(dx, N, C, H, H, KP_F32)), pad[0], pad[1]},
                       .n = 5};
            failures += time_call(b, "conv.conv2d_backward_data", l->name, lc, &bd, conv_flops,
                                  4.0 * (double)(nx + nw + ny));
        }
        call bb = {.args = {KP_ARG_TENSOR("dy", t4(y, N, K, H, H, KP_F32)),
                            KP_ARG_TENSOR("db", kp_tensor_1d(db, KP_F32, K))},
                   .n = 2};
        failures += time_call(b, "conv.conv2d_backward_bias", l->name, lc, &bb, (double)ny,
                              4.0 * (double)ny);
        call mp = {.args = {KP_ARG_TENSOR("x", t4(y, N, K, H, H, KP_F32)),
                            KP_ARG_TENSOR("y", t4(pooled, N, K, P, P, KP_F32)),
                            KP_ARG_TENSOR("indices", t4(idx, N, K, P, P, KP_I32)), pool[0],
                            pool[1]},
                   .n = 5};
        failures +=
            time_call(b, "conv.maxpool2d", l->name, lc, &mp, 0, 4.0 * (double)(ny + 2 * np));
        call mpb = {.args = {KP_ARG_TENSOR("dy", t4(pooled, N, K, P, P, KP_F32)),
                             KP_ARG_TENSOR("indices", t4(idx, N, K, P, P, KP_I32)),
                             KP_ARG_TENSOR("dx", t4(y, N, K, H, H, KP_F32)), pool[0], pool[1]},
                    .n = 5};
        failures += time_call(b, "conv.maxpool2d_backward", l->name, lc, &mpb, 0,
                              4.0 * (double)(ny + 2 * np));
    }
    return failures;
}

typedef struct step_run {
    kpb *b;
    layer_calls *lc;
    size_t n_layers;
    int sync; /* kp_finish after each step, as a loop that reads back each step's loss */
} step_run;

/* Every timed call of every layer, the layers in turn (the step's calls, interleaved as training
 * interleaves them, without the rest of the step), IN_ROW times. */
static void run_steps(void *user)
{
    step_run *r = user;
    for (int i = 0; i < IN_ROW; i++) {
        for (size_t l = 0; l < r->n_layers; l++)
            for (size_t c = 0; c < r->lc[l].n; c++) {
                call *k = &r->lc[l].calls[c];
                if (kp_kernel_launch(r->b->rt, k->k, k->args, k->n, NULL) != KP_OK)
                    return;
            }
        if (r->sync)
            kp_finish(r->b->rt);
    }
    kp_finish(r->b->rt);
}

/* Each call's host submission time and event span inside the interleaved steps (medians of
 * IN_ROW steps): which calls grow when the layers alternate, and whether on the host or device. */
static void note_step_calls(kpb *b, layer_calls *lc, size_t n_layers)
{
    enum { MAX = MAX_CALLS * 4 };
    double host[MAX][IN_ROW], span[MAX][IN_ROW];
    kp_event *ev[MAX] = {0};
    for (int i = 0; i < IN_ROW; i++) {
        size_t j = 0;
        for (size_t l = 0; l < n_layers; l++)
            for (size_t c = 0; c < lc[l].n && j < MAX; c++, j++) {
                call *k = &lc[l].calls[c];
                double t0 = kpb_now();
                if (kp_kernel_launch(b->rt, k->k, k->args, k->n, &ev[j]) != KP_OK)
                    return;
                host[j][i] = kpb_now() - t0;
            }
        for (size_t q = 0; q < j; q++) {
            if (kp_event_elapsed(b->rt, ev[q], &span[q][i]) != KP_OK)
                span[q][i] = 0;
            kp_event_destroy(b->rt, ev[q]);
            ev[q] = NULL;
        }
    }
    size_t j = 0;
    for (size_t l = 0; l < n_layers; l++)
        for (size_t c = 0; c < lc[l].n && j < MAX; c++, j++) {
            kp_kernel_info ki = {.struct_size = sizeof ki};
            kp_kernel_info_get(lc[l].calls[c].k, &ki);
            kpb_note(b, "in the interleaved step, %s %s: host %.1f us, span %.1f us",
                     layers[l].name, ki.name ? ki.name : "?", 1e6 * kpb_median(host[j], IN_ROW),
                     1e6 * kpb_median(span[j], IN_ROW));
        }
}

static void time_steps(kpb *b, layer_calls *lc, size_t n_layers)
{
    for (int sync = 0; sync < 2; sync++) {
        step_run r = {b, lc, n_layers, sync};
        kpb_row row = {.case_name =
                           sync ? "all layers, each step finished" : "all layers, in a row",
                       .ours = "the step's conv calls"};
        row.ours_s = kpb_time_host(b, run_steps, &r) / IN_ROW;
        row.status = KP_OK;
        kpb_add(b, &row);
    }
}

int main(int argc, char **argv)
{
    const kpb_flag flags[] = {
        {"--loop", "no timings: the interleaved steps only, for S seconds (for a profiler)", NULL,
         &loop_text},
        {NULL, NULL, NULL, NULL},
    };
    kpb b;
    kpb_open_flags(&b, "bench-cnn-layers", argc, argv, flags);
    kpb_note(&b,
             "seconds: wall time per call of %d calls in a row; span_s: one call's event span "
             "(median)",
             IN_ROW);
    const char *kernels[] = {"conv.conv2d", "conv.conv2d_backward_weight",
                             "conv.conv2d_backward_data"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        kpb_note_tuning(&b, kernels[i]);
    int failures = 0;
    enum { N_LAYERS = sizeof layers / sizeof layers[0] };
    layer_calls lc[N_LAYERS] = {0};
    for (size_t i = 0; i < N_LAYERS; i++)
        failures += bench_layer(&b, &layers[i], &lc[i]);
    if (!failures && loop_text) {
        step_run r = {&b, lc, N_LAYERS, 0};
        for (double t0 = kpb_now(), limit = atof(loop_text); kpb_now() - t0 < limit;)
            run_steps(&r);
        b.no_peak = 1;
    } else if (!failures) {
        time_steps(&b, lc, N_LAYERS);
        note_step_calls(&b, lc, N_LAYERS);
    }
    for (size_t i = 0; i < N_LAYERS; i++)
        for (size_t j = 0; j < N_BUFS; j++)
            kp_buffer_destroy(b.rt, lc[i].bufs[j]);
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
