/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-optim: one optimizer step over a model of 100 tensors totalling 25M parameters (2.5M with
 * --quick), the case of issue #23 that peer-optim.py runs through torch.optim.AdamW(fused=True).
 *
 * The tensors' sizes follow one rule (optim-model.c; bench/peers/optim_model.py the same):
 * w_i = 1 + 37 i mod 101 for i = 0..99, n_i = floor(total w_i / sum w) and the last takes the
 * rest. Kernelport holds them in one arena per array (each tensor at a multiple of 4 elements); a
 * step is one launch. Cases: AdamW over the arena; AdamW with the segment table and per-tensor
 * multipliers (param groups); SGD with momentum; clip_grad_norm; and clipping fused into AdamW
 * (clip_coef, then AdamW with grad_mul = coef: the two launches' times added). AdamW's result is
 * first compared with a host loop of the same step; its row's peer is that loop (one thread), a
 * floor on a CPU device. Bytes are what a step must move per parameter: AdamW 28, SGD with momentum
 * 20, clipping 12.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernelport/ops/optim.h"
#include "optim-model.h"

/* One AdamW step on the device against the host loop from the same state: the largest difference
 * relative to 1 + |p|, and the host loop's time for the row's peer. */
static kp_status check_adamw(kpb *b, optim_arena *a, kp_kernel *k, const kp_arg *args,
                             size_t n_args, double *err, double *host_s)
{
    const size_t n = (size_t)a->n;
    optim_host_adamw h = {.n = a->n};
    optim_host_adamw_at(&h, 1);
    h.p = malloc(n * 4), h.g = malloc(n * 4), h.m = malloc(n * 4), h.v = malloc(n * 4);
    float *got = malloc(n * 4);
    if (!h.p || !h.g || !h.m || !h.v || !got)
        return KP_ERR_OUT_OF_MEMORY;
    kp_status st = kp_buffer_read(b->rt, a->p, 0, n * 4, h.p);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, a->g, 0, n * 4, h.g);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, a->m, 0, n * 4, h.m);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, a->v, 0, n * 4, h.v);
    if (st == KP_OK)
        st = kp_kernel_launch(b->rt, k, args, n_args, NULL);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, a->p, 0, n * 4, got);
    optim_host_adamw_step(&h);
    *err = 0;
    for (size_t i = 0; st == KP_OK && i < n; i++)
        *err = fmax(*err, fabs((double)got[i] - h.p[i]) / (1 + fabs(h.p[i])));
    if (st == KP_OK)
        *host_s = kpb_time_host(b, optim_host_adamw_step, &h);
    free(h.p), free(h.g), free(h.m), free(h.v), free(got);
    return st;
}

static kp_kernel *find(kpb *b, const char *name)
{
    kp_kernel *k = NULL;
    if (kp_kernel_find(b->rt, name, &k) != KP_OK) {
        fprintf(stderr, "bench-optim: %s\n", kp_last_error(b->rt));
        exit(1);
    }
    return k;
}

/* Times one launch of k and records the row; KP_OK or the launch's error. */
static kp_status time_row(kpb *b, kpb_row *row, kp_kernel *k, const kp_arg *args, size_t n)
{
    kp_status st = kpb_time_kernel(b, k, args, n, &row->ours_s, &row->ours_p10, &row->ours_p90);
    if (st != KP_OK)
        fprintf(stderr, "bench-optim: %s: %s\n", row->ours, kp_last_error(b->rt));
    row->status = st;
    return st;
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-optim", argc, argv);
    optim_arena a = {.total = b.quick ? 2500000 : 25000000};
    float *host = malloc((size_t)(a.total + 4 * OPTIM_TENSORS) * 4);
    if (!host || optim_arena_init(&b, &a, host) != KP_OK) {
        fprintf(stderr, "bench-optim: cannot lay out the arena: %s\n", kp_last_error(b.rt));
        return 1;
    }
    free(host);
    const double P = (double)a.total;
    kp_tensor p = kp_tensor_1d(a.p, KP_F32, a.n), g = kp_tensor_1d(a.g, KP_F32, a.n),
              m = kp_tensor_1d(a.m, KP_F32, a.n), v = kp_tensor_1d(a.v, KP_F32, a.n),
              seg = kp_tensor_2d(a.segments, KP_I32, OPTIM_TENSORS, 2),
              scl = kp_tensor_2d(a.scale, KP_F32, OPTIM_TENSORS, 2),
              norm = kp_tensor_nd(a.norm, KP_F32, 0, NULL),
              coef = kp_tensor_nd(a.coef, KP_F32, 0, NULL);
    char name[96];
    snprintf(name, sizeof name, "%d tensors, %.1fM params", OPTIM_TENSORS, P / 1e6);
    kpb_note(&b, "model: %d tensors totalling %lld parameters in arenas of %lld elements",
             OPTIM_TENSORS, (long long)a.total, (long long)a.n);

    kp_kernel *adamw = find(&b, "optim.adamw"), *sgd = find(&b, "optim.sgd"),
              *clip = find(&b, "optim.clip_grad_norm");
    kp_arg adamw_args[] = {kp_arg_tensor("param", p), kp_arg_tensor("grad", g),
                           kp_arg_tensor("exp_avg", m), kp_arg_tensor("exp_avg_sq", v),
                           kp_arg_int("step", 1)};
    double err = 0, host_s = 0;
    kpb_row row = {.case_name = name, .ours = "optim.adamw", .bytes = 28 * P, .flops = 16 * P};
    kp_status st = check_adamw(&b, &a, adamw, adamw_args, 5, &err, &host_s);
    if (st == KP_OK && !(err <= 1e-5)) {
        fprintf(stderr, "bench-optim: optim.adamw differs from the host loop by %g\n", err);
        st = KP_ERR_VERIFY;
    }
    row.peer = "host loop (1 thread)";
    row.peer_s = host_s;
    kpb_row_metric(&row, "max_rel_err_vs_host", err);
    if (st == KP_OK)
        time_row(&b, &row, adamw, adamw_args, 5);
    else
        row.status = st;
    kpb_add(&b, &row);

    kp_arg groups_args[] = {kp_arg_tensor("param", p),      kp_arg_tensor("grad", g),
                            kp_arg_tensor("exp_avg", m),    kp_arg_tensor("exp_avg_sq", v),
                            kp_arg_tensor("segments", seg), kp_arg_tensor("scales", scl),
                            kp_arg_int("step", 2),          kp_arg_int("check_segments", 0)};
    kpb_row groups = {.case_name = name,
                      .ours = "optim.adamw (segments, multipliers)",
                      .bytes = 28 * P,
                      .flops = 16 * P};
    time_row(&b, &groups, adamw, groups_args, 8);
    kpb_add(&b, &groups);

    kp_arg sgd_args[] = {
        kp_arg_tensor("param", p), kp_arg_tensor("grad", g), kp_arg_tensor("momentum_buffer", m),
        kp_arg_int("step", 2),     kp_arg_float("lr", 1e-3), kp_arg_float("momentum", 0.9)};
    kpb_row sgd_row = {
        .case_name = name, .ours = "optim.sgd (momentum)", .bytes = 20 * P, .flops = 6 * P};
    time_row(&b, &sgd_row, sgd, sgd_args, 6);
    kpb_add(&b, &sgd_row);

    /* max_norm far above the norm keeps the gradients as they are from run to run. */
    kp_arg clip_args[] = {kp_arg_tensor("grad", g), kp_arg_tensor("norm", norm),
                          kp_arg_float("max_norm", 1e30)};
    kpb_row clip_row = {
        .case_name = name, .ours = "optim.clip_grad_norm", .bytes = 12 * P, .flops = 3 * P};
    time_row(&b, &clip_row, clip, clip_args, 3);
    kpb_add(&b, &clip_row);

    kp_arg coef_args[] = {kp_arg_tensor("grad", g), kp_arg_tensor("norm", norm),
                          kp_arg_tensor("coef", coef), kp_arg_float("max_norm", 1.0),
                          kp_arg_int("scale_grads", 0)};
    kp_arg fused_args[] = {kp_arg_tensor("param", p),       kp_arg_tensor("grad", g),
                           kp_arg_tensor("exp_avg", m),     kp_arg_tensor("exp_avg_sq", v),
                           kp_arg_tensor("grad_mul", coef), kp_arg_int("step", 3)};
    kpb_row coef_row = {.case_name = name,
                        .ours = "optim.clip_grad_norm (coef only)",
                        .bytes = 4 * P,
                        .flops = 2 * P};
    kpb_row fused = {.case_name = name,
                     .ours = "clip_grad_norm (coef) + optim.adamw (grad_mul)",
                     .bytes = 32 * P,
                     .flops = 18 * P};
    if (time_row(&b, &coef_row, clip, coef_args, 5) == KP_OK &&
        time_row(&b, &fused, adamw, fused_args, 6) == KP_OK) {
        fused.ours_s += coef_row.ours_s;
        fused.ours_p10 += coef_row.ours_p10;
        fused.ours_p90 += coef_row.ours_p90;
    }
    kpb_add(&b, &coef_row);
    kpb_add(&b, &fused);

    /* The weights' average after a step (not the first: that one is a copy), in exp_avg's arena:
     * the values do not matter to the time. */
    kp_kernel *ema = find(&b, "optim.ema");
    kp_arg ema_args[] = {kp_arg_tensor("averaged", m), kp_arg_tensor("param", p),
                         kp_arg_int("step", 2), kp_arg_float("decay", 0.999)};
    kpb_row ema_row = {.case_name = name, .ours = "optim.ema", .bytes = 12 * P, .flops = 3 * P};
    time_row(&b, &ema_row, ema, ema_args, 4);
    kpb_add(&b, &ema_row);
    optim_arena_fini(&b, &a);
    return kpb_close(&b);
}
