/* SPDX-License-Identifier: Apache-2.0 */
/* Logic-gate CAs on PoCL: the network builder, the fused step kernels against their references
 * (and on GPU work-group shapes), the logits' gradient against finite differences of a double
 * model, determinism, hard mode against logic.eval_packed and the packed run (kp_ca_packed_*),
 * bad configurations, and a small rule trained to an exact circuit. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernelport/ca.h"
#include "kernelport/ops/random.h"
#include "test-util.h"

static kp_runtime *rt;

static int setup(void **state)
{
    (void)state;
    return test_runtime(test_build_path("lib/kernelport/plugins"), &rt);
}

static int teardown(void **state)
{
    kp_runtime_destroy(rt);
    return 0;
}

/* A small CA: 2 channels, 2 kernels {8, 4}, update 18 -> 12 -> 6 -> 3 -> 2, 4 x 3 grids. */
static const kp_logic_ca_config small_net = {.struct_size = sizeof small_net,
                                             .channels = 2,
                                             .kernels = 2,
                                             .n_perceive = 2,
                                             .perceive = {8, 4},
                                             .n_update = 4,
                                             .update = {12, 6, 3, 2},
                                             .seed = 5};

static kp_ca_options small_options(int32_t steps, double fire_rate, int32_t boundary)
{
    kp_ca_options o = kp_ca_options_default();
    o.net = &small_net;
    o.height = 4;
    o.width = 3;
    o.batch = 2;
    o.steps = steps;
    o.fire_rate = fire_rate;
    o.boundary = boundary;
    o.seed = 11;
    return o;
}

/* Asserts KP_OK, printing the runtime's message otherwise. */
#define OK(call)                                                                                   \
    do {                                                                                           \
        kp_status st_ = (call);                                                                    \
        if (st_ != KP_OK)                                                                          \
            fail_msg("%s: %s: %s", #call, kp_status_name(st_), kp_last_error(rt));                 \
    } while (0)

static kp_ca *make(const kp_ca_options *o)
{
    kp_ca *ca = NULL;
    kp_status st = kp_ca_create(rt, o, &ca);
    if (st != KP_OK)
        fprintf(stderr, "kp_ca_create: %s\n", kp_last_error(rt));
    assert_int_equal(st, KP_OK);
    return ca;
}

static void write_tensor(kp_tensor t, const float *src)
{
    assert_int_equal(kp_buffer_write(rt, t.buffer, (size_t)t.offset * sizeof(float),
                                     (size_t)kp_tensor_numel(&t) * sizeof(float), src),
                     KP_OK);
}

static void read_tensor(kp_tensor t, float *dst)
{
    assert_int_equal(kp_buffer_read(rt, t.buffer, (size_t)t.offset * sizeof(float),
                                    (size_t)kp_tensor_numel(&t) * sizeof(float), dst),
                     KP_OK);
}

/* ---- the network builder --------------------------------------------------------------------- */

/* Every gate reads rows below its layer; the reverse index lists each read; the parameters'
 * gates are consecutive; the first perception layer reads a neighbour against the centre. */
static void test_net_structure(void **state)
{
    const kp_ca_options o = small_options(1, 1, 0);
    kp_logic_ca_net net, again;
    char why[256];
    assert_int_equal(kp_logic_ca_net_build(o.net, &net, why, sizeof why), 0);
    assert_int_equal(net.n_layers, 6);
    assert_int_equal(net.n_gates, 2 * 2 * (8 + 4) + 12 + 6 + 3 + 2);
    assert_int_equal(net.n_params, 2 * (8 + 4) + 12 + 6 + 3 + 2);
    assert_int_equal(net.n_rows, 18 + net.n_gates);
    for (int32_t l = 0; l < net.n_layers; l++)
        for (int32_t g = net.layers[l]; g < net.layers[l + 1]; g++) {
            assert_in_range(net.a_idx[g], 0, 18 + net.layers[l] - 1);
            assert_in_range(net.b_idx[g], 0, 18 + net.layers[l] - 1);
            assert_in_range(g, net.param_start[net.param[g]],
                            net.param_start[net.param[g] + 1] - 1);
            if (l == 0) {
                assert_int_equal(net.b_idx[g] % 9, 4);
                assert_int_not_equal(net.a_idx[g] % 9, 4);
                assert_int_equal(net.a_idx[g] / 9, net.b_idx[g] / 9);
            }
        }
    for (int64_t r = 0; r < net.n_rows; r++)
        for (int32_t e = net.csr_start[r]; e < net.csr_start[r + 1]; e++) {
            const int32_t g = net.csr_entries[e] >> 1;
            assert_int_equal(net.csr_entries[e] & 1 ? net.b_idx[g] : net.a_idx[g], r);
        }
    assert_int_equal(net.csr_start[net.n_rows], 2 * net.n_gates);
    assert_int_equal(kp_logic_ca_net_build(o.net, &again, NULL, 0), 0);
    assert_memory_equal(net.a_idx, again.a_idx, (size_t)net.n_gates * sizeof(int32_t));
    assert_memory_equal(net.b_idx, again.b_idx, (size_t)net.n_gates * sizeof(int32_t));
    kp_logic_ca_net_free(&net);
    kp_logic_ca_net_free(&again);
}

/* Bad configurations: the builder's message, and kp_ca_create's through kp_last_error. */
static void test_bad_configs(void **state)
{
    kp_ca_options o = small_options(1, 1, 0);
    kp_logic_ca_config cfg = small_net;
    o.net = &cfg;
    kp_logic_ca_net net;
    char why[256];
    cfg.channels = 0;
    assert_int_equal(kp_logic_ca_net_build(&cfg, &net, why, sizeof why), -1);
    assert_string_equal(why, "channels: 0 is not in 1 .. 4096");
    kp_ca *ca = (kp_ca *)1;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_null(ca);
    assert_string_equal(kp_last_error(rt), "kp_ca_create: channels: 0 is not in 1 .. 4096");
    /* A layer too narrow to read every output of the one before. */
    cfg = small_net;
    cfg.update[1] = 5;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_ca_create: update layer 1: 5 gates cannot read all 12 outputs of the "
                        "layer before (2 x gates must be at least the inputs)");
    cfg = small_net;
    cfg.update[3] = 3;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_ca_create: update layer 3: 3 gates, but the last layer gives the 2 "
                        "channels of the new state");
    cfg = small_net;
    cfg.perceive[0] = 6;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_ca_create: perceive layer 0: 6 gates, but the "
                                           "first layer has one per neighbour (8)");
    /* The configuration's own struct_size: 0 is its first layout, below that is refused. */
    cfg = small_net;
    cfg.struct_size = 8;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    snprintf(why, sizeof why,
             "kp_ca_create: config: struct_size 8 is below %zu (its first layout): set it to "
             "sizeof(kp_logic_ca_config), or leave it 0",
             (size_t)KP_LOGIC_CA_CONFIG_FIRST);
    assert_string_equal(kp_last_error(rt), why);
    cfg.struct_size = 0;
    ca = make(&o);
    /* kp_ca_create copied it: the caller's may change or go. */
    memset(&cfg, 0xff, sizeof cfg);
    assert_int_equal(kp_ca_net(ca)->channels, 2);
    OK(kp_ca_train_step(ca, 1));
    kp_ca_destroy(ca);
    o.net = NULL;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_ca_create: options: net is NULL (set it to the "
                                           "networks' kp_logic_ca_config)");
    o = small_options(1, 1, 0);
    o.fire_rate = 0;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_ca_create: fire_rate: 0 is not in (0, 1]");
    o = small_options(1, 1, 0);
    o.struct_size = 0;
    assert_int_equal(kp_ca_create(rt, &o, &ca), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "struct_size 0, expected"));
    /* An inference_only CA rolls out (its hard states equal a training CA's) and refuses to
     * train. */
    o = small_options(2, 1, 0);
    kp_ca *train = make(&o);
    o.inference_only = 1;
    ca = make(&o);
    const int64_t n = 2 * kp_ca_cells(ca);
    float *s0 = malloc((size_t)n * sizeof *s0), *x = malloc((size_t)n * 4),
          *y = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        s0[i] = (float)(kp_random_uniform(6, 0, (uint64_t)i) < 0.5f);
    write_tensor(kp_ca_state(ca, 0, 0), s0);
    write_tensor(kp_ca_state(train, 0, 0), s0);
    OK(kp_ca_rollout(ca, 1));
    OK(kp_ca_rollout(train, 1));
    read_tensor(kp_ca_state(ca, 2, 1), x);
    read_tensor(kp_ca_state(train, 2, 1), y);
    assert_memory_equal(x, y, (size_t)n * sizeof *x);
    assert_int_equal(kp_ca_train_step(ca, 1), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt), "kp_ca_train_step: the CA was created inference_only");
    assert_int_equal(kp_ca_backward(ca), KP_ERR_UNSUPPORTED);
    free(s0), free(x), free(y);
    kp_ca_destroy(ca);
    kp_ca_destroy(train);
    /* The runtime stays usable. */
    o = small_options(1, 1, 0);
    ca = make(&o);
    OK(kp_ca_train_step(ca, 1));
    assert_int_equal(kp_ca_train_step(ca, 0), KP_ERR_INVALID_ARG);
    kp_ca_destroy(ca);
}

/* ---- the kernels ----------------------------------------------------------------------------- */

static void report(void *user, const kp_verify_result *r)
{
    if (!r->passed)
        fprintf(stderr, "%s %s %s: max abs err %g at %lld, %lld failures\n", r->kernel, r->size,
                r->output, r->max_abs_err, (long long)r->worst_index, (long long)r->failures);
    (*(int *)user)++;
}

static const char *const ca_kernels[] = {"logic.ca_step", "logic.ca_step_backward", "logic.ca_dw"};

/* The three kernels against their references, two seeds (CPUs: 16 cells a work-item as vectors,
 * a partial last one), then at the GPUs' shape (4 cells by 64 lanes sharing a cell's gates,
 * barriers between layers, one cell a work-item; ca_dw's 64 lanes a parameter, 4 parameters a
 * work-group, the lanes' sums met in local memory). */
static void test_verify(void **state)
{
    int checks = 0;
    for (int shape = 0; shape < 2; shape++)
        for (size_t i = 0; i < 3; i++) {
            kp_kernel *k = NULL;
            assert_int_equal(kp_kernel_find(rt, ca_kernels[i], &k), KP_OK);
            if (shape && i < 2) {
                assert_int_equal(kp_kernel_tunable_set(rt, k, "WG_N", 4), KP_OK);
                assert_int_equal(kp_kernel_tunable_set(rt, k, "LANES", 64), KP_OK);
                assert_int_equal(kp_kernel_tunable_set(rt, k, "VW", 1), KP_OK);
            } else if (shape) {
                assert_int_equal(kp_kernel_tunable_set(rt, k, "LANES", 64), KP_OK);
                assert_int_equal(kp_kernel_tunable_set(rt, k, "WG_P", 4), KP_OK);
            }
            for (uint64_t seed = 1; seed <= 2 - (uint64_t)shape; seed++) {
                kp_status st = kp_kernel_verify(rt, k, NULL, seed, report, &checks);
                if (st != KP_OK)
                    fprintf(stderr, "%s: %s\n", ca_kernels[i], kp_last_error(rt));
                assert_int_equal(st, KP_OK);
            }
            assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
        }
    assert_int_equal(checks, 3 * 24);
}

/* ---- the logits' gradient against finite differences ----------------------------------------- */

/* The CA in double from the definitions: softmax mixtures of the 16 ops, T steps. */
typedef struct host_ca {
    const kp_logic_ca_net *net;
    const kp_ca_options *o;
    const double *state0, *target, *fire; /* fire: [T, N] uniforms, or NULL */
} host_ca;

static double op_soft(int i, double a, double b)
{
    return kp_logic_op_soft(i, a, b);
}

static double host_loss(const host_ca *h, const double *w)
{
    const kp_logic_ca_net *net = h->net;
    const int64_t C = net->channels, H = h->o->height, W = h->o->width;
    const int64_t N = H * W * h->o->batch, A = net->n_rows;
    double *x = malloc((size_t)(C * N) * sizeof *x), *nx = malloc((size_t)(C * N) * sizeof *nx);
    double *v = malloc((size_t)A * sizeof *v), *p = malloc((size_t)net->n_params * 16 * sizeof *p);
    memcpy(x, h->state0, (size_t)(C * N) * sizeof *x);
    for (int64_t q = 0; q < net->n_params; q++) {
        double m = w[16 * q], s = 0;
        for (int i = 1; i < 16; i++)
            m = fmax(m, w[16 * q + i]);
        for (int i = 0; i < 16; i++)
            s += p[16 * q + i] = exp(w[16 * q + i] - m);
        for (int i = 0; i < 16; i++)
            p[16 * q + i] /= s;
    }
    for (int64_t t = 0; t < h->o->steps; t++) {
        for (int64_t n = 0; n < N; n++) {
            const int64_t cell = n % (H * W), y = cell / W, xx = cell % W;
            for (int64_t r = 0; r < 9 * C; r++) {
                int64_t u = y + (r % 9) / 3 - 1, s = xx + (r % 9) % 3 - 1;
                int outside = u < 0 || u >= H || s < 0 || s >= W;
                u = (u + H) % H, s = (s + W) % W;
                v[r] = outside && h->o->boundary ? 0 : x[(r / 9) * N + n - cell + u * W + s];
            }
            for (int64_t g = 0; g < net->n_gates; g++) {
                double y_ = 0;
                for (int i = 0; i < 16; i++)
                    y_ +=
                        p[16 * net->param[g] + i] * op_soft(i, v[net->a_idx[g]], v[net->b_idx[g]]);
                v[9 * C + g] = y_;
            }
            const int fires = !h->fire || h->fire[t * N + n] < h->o->fire_rate;
            for (int64_t c = 0; c < C; c++)
                nx[c * N + n] = fires ? v[A - C + c] : x[c * N + n];
        }
        memcpy(x, nx, (size_t)(C * N) * sizeof *x);
    }
    double loss = 0;
    for (int64_t n = 0; n < N; n++)
        loss += (x[n] - h->target[n]) * (x[n] - h->target[n]);
    free(x), free(nx), free(v), free(p);
    return loss;
}

/* One training step with lr 0 leaves the logits and gives their gradient: compared with central
 * differences of the double model, synchronous (periodic) and fire-masked (zero boundary). */
static void check_gradient(double fire_rate, int32_t boundary)
{
    kp_ca_options o = small_options(3, fire_rate, boundary);
    o.lr = 0;
    o.weight_decay = 0;
    kp_ca *ca = make(&o);
    const kp_logic_ca_net *net = kp_ca_net(ca);
    const int64_t N = kp_ca_cells(ca), C = net->channels, P = net->n_params;
    float *w = malloc((size_t)P * 16 * sizeof *w), *g = malloc((size_t)P * 16 * sizeof *g);
    float *s0 = malloc((size_t)(C * N) * sizeof *s0), *tg = malloc((size_t)N * sizeof *tg);
    double *wd = malloc((size_t)P * 16 * sizeof *wd), *s0d = malloc((size_t)(C * N) * sizeof *s0d);
    double *tgd = malloc((size_t)N * sizeof *tgd), *fire = malloc((size_t)(3 * N) * sizeof *fire);
    /* Logits N(0, 0.25) (pass-through ones would make every gradient tiny), binary states. */
    kp_logic_init_gaussian(w, P, 0.5, 3);
    for (int64_t i = 0; i < C * N; i++)
        s0[i] = (float)(kp_random_uniform(9, 0, (uint64_t)i) < 0.5f), s0d[i] = s0[i];
    for (int64_t n = 0; n < N; n++)
        tg[n] = (float)(n % 3 == 0), tgd[n] = tg[n];
    for (int64_t i = 0; i < 16 * P; i++)
        wd[i] = w[i];
    /* The fire masks of step 1 (kernelport/ca.h documents the stream). */
    for (int64_t i = 0; i < 3 * N; i++)
        fire[i] = kp_random_uniform(o.seed ^ KP_CA_FIRE_KEY, 0, (uint64_t)i);
    write_tensor(kp_ca_logits(ca), w);
    write_tensor(kp_ca_state(ca, 0, 0), s0);
    write_tensor(kp_ca_target(ca), tg);
    OK(kp_ca_train_step(ca, 1));
    read_tensor(kp_ca_grad(ca), g);
    float loss = 0;
    assert_int_equal(kp_ca_read_losses(ca, &loss, NULL), KP_OK);
    host_ca h = {
        .net = net, .o = &o, .state0 = s0d, .target = tgd, .fire = fire_rate < 1 ? fire : NULL};
    assert_float_equal(loss, host_loss(&h, wd), 1e-4 * (1 + fabs(loss)));
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < 16 * P; i++) {
        const double e = 1e-5, keep = wd[i];
        wd[i] = keep + e;
        const double up = host_loss(&h, wd);
        wd[i] = keep - e;
        const double fd = (up - host_loss(&h, wd)) / (2 * e);
        wd[i] = keep;
        worst = fmax(worst, fabs(fd - g[i]));
        scale = fmax(scale, fabs(fd));
    }
    if (worst > 1e-3 * scale + 1e-5)
        fail_msg("gradient vs finite differences: worst %g, largest %g", worst, scale);
    assert_true(scale > 1e-3); /* a gradient that is all zeros would pass trivially */
    free(w), free(g), free(s0), free(tg), free(wd), free(s0d), free(tgd), free(fire);
    kp_ca_destroy(ca);
}

static void test_gradient_sync(void **state)
{
    check_gradient(1, 0);
}

static void test_gradient_async(void **state)
{
    check_gradient(0.6, 1);
}

/* ---- determinism, graphs --------------------------------------------------------------------- */

/* Two CAs with the same options, four steps each (one directly, one by a replayed graph): the
 * same logits, bit for bit, and losses. */
static void test_determinism(void **state)
{
    kp_ca_options o = small_options(3, 0.6, 0);
    o.random_init = 1;
    kp_ca *a = make(&o), *b = make(&o);
    const int64_t P = kp_ca_net(a)->n_params, N = kp_ca_cells(a);
    float *target = calloc((size_t)N, sizeof *target);
    for (int64_t n = 0; n < N; n++)
        target[n] = (float)(n % 2);
    write_tensor(kp_ca_target(a), target);
    write_tensor(kp_ca_target(b), target);
    kp_graph *g = NULL;
    OK(kp_ca_record(b, &g));
    for (int64_t s = 1; s <= 4; s++) {
        OK(kp_ca_train_step(a, s));
        OK(kp_ca_replay(b, g, s));
    }
    float *wa = malloc((size_t)P * 16 * sizeof *wa), *wb = malloc((size_t)P * 16 * sizeof *wb);
    read_tensor(kp_ca_logits(a), wa);
    read_tensor(kp_ca_logits(b), wb);
    assert_memory_equal(wa, wb, (size_t)P * 16 * sizeof *wa);
    float init[16 * 4];
    kp_logic_init_pass_through(init, 4);
    assert_memory_not_equal(wa, init, sizeof init); /* training moved them */
    float la, ha, lb, hb;
    assert_int_equal(kp_ca_read_losses(a, &la, &ha), KP_OK);
    assert_int_equal(kp_ca_read_losses(b, &lb, &hb), KP_OK);
    assert_memory_equal(&la, &lb, sizeof la);
    assert_memory_equal(&ha, &hb, sizeof ha);
    kp_graph_destroy(g);
    free(target), free(wa), free(wb);
    kp_ca_destroy(a);
    kp_ca_destroy(b);
}

/* ---- hard mode against logic.eval_packed ----------------------------------------------------- */

static kp_tensor i32_rows(kp_buffer *b, int64_t from, int64_t n)
{
    kp_tensor t = kp_tensor_1d(b, KP_I32, n);
    t.offset = from;
    return t;
}

static kp_status launch(const char *name, const kp_arg *args, size_t n)
{
    kp_kernel *k = NULL;
    kp_status st = kp_kernel_find(rt, name, &k);
    if (st == KP_OK)
        st = kp_kernel_launch(rt, k, args, n, NULL);
    if (st != KP_OK)
        fprintf(stderr, "%s: %s\n", name, kp_last_error(rt));
    return st;
}

/* A hard step of the fused kernel equals the same circuit run bit-packed: logic.perceive,
 * logic.pack, then logic.eval_packed layer by layer over the rows below each layer, on random
 * logits and states (batch 2 x 4 x 3 = 24 cells: one partial word). */
static void test_hard_matches_packed(void **state)
{
    const kp_ca_options o = small_options(1, 1, 0);
    kp_ca *ca = make(&o);
    const kp_logic_ca_net *net = kp_ca_net(ca);
    const int64_t N = kp_ca_cells(ca), C = net->channels, P = net->n_params, G = net->n_gates;
    const int64_t A = net->n_rows, words = (N + 31) / 32, HW = (int64_t)o.height * o.width;
    float *w = malloc((size_t)P * 16 * sizeof *w), *s0 = malloc((size_t)(C * N) * sizeof *s0);
    kp_logic_init_gaussian(w, P, 1.0, 8);
    for (int64_t i = 0; i < C * N; i++)
        s0[i] = (float)(kp_random_uniform(4, 0, (uint64_t)i) < 0.5f);
    write_tensor(kp_ca_logits(ca), w);
    write_tensor(kp_ca_state(ca, 0, 0), s0);
    OK(kp_ca_rollout(ca, 1));
    int32_t *ops = malloc((size_t)P * sizeof *ops), *gops = malloc((size_t)G * sizeof *gops);
    OK(kp_ca_read_ops(ca, ops));
    for (int64_t g = 0; g < G; g++)
        gops[g] = ops[net->param[g]];
    kp_buffer *patch, *bits, *ab, *bb, *ob, *out;
    assert_int_equal(kp_buffer_create(rt, (size_t)(9 * C * N) * 4, &patch), KP_OK);
    assert_int_equal(kp_buffer_create(rt, (size_t)(A * words) * 4, &bits), KP_OK);
    assert_int_equal(kp_buffer_create(rt, (size_t)(C * N) * 4, &out), KP_OK);
    kp_buffer **tables[] = {&ab, &bb, &ob};
    const int32_t *src[] = {net->a_idx, net->b_idx, gops};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kp_buffer_create(rt, (size_t)G * 4, tables[i]), KP_OK);
        assert_int_equal(kp_buffer_write(rt, *tables[i], 0, (size_t)G * 4, src[i]), KP_OK);
    }
    /* The state [C, N] as the grid [B, C, H, W] logic.perceive reads. */
    kp_tensor grid = kp_tensor_nd(kp_ca_state(ca, 0, 0).buffer, KP_F32, 4,
                                  (int64_t[]){o.batch, C, o.height, o.width});
    grid.strides[0] = HW, grid.strides[1] = N;
    kp_arg pa[] = {kp_arg_tensor("grid", grid),
                   kp_arg_tensor("out", kp_tensor_2d(patch, KP_F32, 9 * C, N)),
                   kp_arg_int("boundary", o.boundary)};
    assert_int_equal(launch("logic.perceive", pa, 3), KP_OK);
    kp_arg pk[] = {kp_arg_tensor("x", kp_tensor_2d(patch, KP_F32, 9 * C, N)),
                   kp_arg_tensor("bits", kp_tensor_2d(bits, KP_U32, 9 * C, words))};
    assert_int_equal(launch("logic.pack", pk, 2), KP_OK);
    for (int32_t l = 0; l < net->n_layers; l++) {
        const int64_t g0 = net->layers[l], g1 = net->layers[l + 1];
        kp_tensor y = kp_tensor_2d(bits, KP_U32, g1 - g0, words);
        y.offset = (9 * C + g0) * words;
        kp_arg ev[] = {kp_arg_tensor("x", kp_tensor_2d(bits, KP_U32, 9 * C + g0, words)),
                       kp_arg_tensor("a_idx", i32_rows(ab, g0, g1 - g0)),
                       kp_arg_tensor("b_idx", i32_rows(bb, g0, g1 - g0)),
                       kp_arg_tensor("op", i32_rows(ob, g0, g1 - g0)),
                       kp_arg_tensor("y", y),
                       kp_arg_int("n", N)};
        assert_int_equal(launch("logic.eval_packed", ev, 6), KP_OK);
    }
    kp_tensor last = kp_tensor_2d(bits, KP_U32, C, words);
    last.offset = (A - C) * words;
    kp_arg up[] = {kp_arg_tensor("bits", last),
                   kp_arg_tensor("y", kp_tensor_2d(out, KP_F32, C, N))};
    assert_int_equal(launch("logic.unpack", up, 2), KP_OK);
    float *want = malloc((size_t)(C * N) * sizeof *want), *got = malloc((size_t)(C * N) * 4);
    assert_int_equal(kp_buffer_read(rt, out, 0, (size_t)(C * N) * 4, want), KP_OK);
    read_tensor(kp_ca_state(ca, 1, 1), got);
    assert_memory_equal(got, want, (size_t)(C * N) * sizeof *got);
    int ones = 0;
    for (int64_t i = 0; i < C * N; i++)
        ones += got[i] == 1.0f;
    assert_true(ones > 0 && ones < C * N); /* not a constant circuit */
    kp_buffer *all[] = {patch, bits, ab, bb, ob, out};
    for (int i = 0; i < 6; i++)
        kp_buffer_destroy(rt, all[i]);
    free(w), free(s0), free(ops), free(gops), free(want), free(got);
    kp_ca_destroy(ca);
}

/* ---- the packed run against the fused hard rollout ------------------------------------------- */

/* kp_ca_packed_run equals kp_ca_rollout(ca, 1) bit for bit, step by step, on random logits and
 * states: `batch` grids of height x width (37: a partial word per row), one tile or tiles of
 * tile_rows grid rows (8 of 6-row grids: tiles straddle grids). Every tile's rows are at least
 * 16 words, so eval_packed runs the VW 16 program the fused step already built on CPUs. */
static void check_packed(int32_t boundary, int32_t height, int32_t width, int32_t batch,
                         int64_t tile_rows, uint64_t seed)
{
    const int32_t T = 5;
    kp_ca_options o = small_options(T, 1, boundary);
    o.height = height, o.width = width, o.batch = batch;
    o.inference_only = 1;
    kp_ca *ca = make(&o);
    const kp_logic_ca_net *net = kp_ca_net(ca);
    const int64_t N = kp_ca_cells(ca), C = net->channels, P = net->n_params;
    float *w = malloc((size_t)P * 16 * sizeof *w), *s0 = malloc((size_t)(C * N) * sizeof *s0);
    float *want = malloc((size_t)(C * N) * sizeof *want), *got = malloc((size_t)(C * N) * 4);
    kp_logic_init_gaussian(w, P, 1.0, seed);
    for (int64_t i = 0; i < C * N; i++)
        s0[i] = (float)(kp_random_uniform(seed, 0, (uint64_t)i) < 0.5f);
    write_tensor(kp_ca_logits(ca), w);
    write_tensor(kp_ca_state(ca, 0, 0), s0);
    OK(kp_ca_rollout(ca, 1));
    kp_ca_packed_options po = kp_ca_packed_options_default();
    /* The activations of a grid row: 9C patch rows and the widest even and odd layers. */
    const int64_t row_bytes = 4 * (18 + 32 + 16) * ((width + 31) / 32);
    po.tile_bytes = tile_rows * row_bytes;
    kp_ca_packed *p = NULL;
    OK(kp_ca_packed_create(ca, &po, &p));
    const int64_t rows = (int64_t)batch * height;
    assert_int_equal(kp_ca_packed_launches_per_step(p),
                     (tile_rows ? (rows + tile_rows - 1) / tile_rows : 1) * (1 + net->n_layers));
    write_tensor(kp_ca_packed_state(p), s0);
    OK(kp_ca_packed_run(p, 0));
    read_tensor(kp_ca_packed_state(p), got);
    assert_memory_equal(got, s0, (size_t)(C * N) * sizeof *got);
    for (int32_t t = 1; t <= T; t++) {
        OK(kp_ca_packed_run(p, 1));
        read_tensor(kp_ca_packed_state(p), got);
        read_tensor(kp_ca_state(ca, t, 1), want);
        int ones = 0;
        for (int64_t i = 0; i < C * N; i++)
            ones += want[i] == 1.0f;
        assert_true(ones > 0 && ones < C * N); /* the circuit is not constant */
        assert_memory_equal(got, want, (size_t)(C * N) * sizeof *got);
    }
    write_tensor(kp_ca_packed_state(p), s0);
    OK(kp_ca_packed_run(p, T));
    read_tensor(kp_ca_packed_state(p), got);
    assert_memory_equal(got, want, (size_t)(C * N) * sizeof *got);
    kp_ca_packed_destroy(p);
    free(w), free(s0), free(want), free(got);
    kp_ca_destroy(ca);
}

static void test_packed_periodic_tiles(void **state)
{
    check_packed(0, 6, 37, 4, 8, 3);
}

static void test_packed_zero(void **state)
{
    check_packed(1, 5, 64, 3, 0, 8);
}

/* Bad packed runs fail with a message and allocate nothing. */
static void test_packed_rejects(void **state)
{
    kp_ca_options o = small_options(1, 1, 0);
    kp_ca *ca = make(&o);
    kp_ca_packed_options po = kp_ca_packed_options_default();
    kp_ca_packed *p = (kp_ca_packed *)&po;
    po.struct_size = 4;
    assert_int_equal(kp_ca_packed_create(ca, &po, &p), KP_ERR_INVALID_ARG);
    assert_null(p);
    assert_non_null(strstr(kp_last_error(rt), "struct_size 4, expected"));
    po = kp_ca_packed_options_default();
    po.width = 70000;
    assert_int_equal(kp_ca_packed_create(ca, &po, &p), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kp_ca_packed_create: height, width, batch: 4 x 70000, 2 grids (1 .. "
                        "65535 each, at least one grid; 0 takes the CA's)");
    po.width = 0, po.tile_bytes = -1;
    assert_int_equal(kp_ca_packed_create(ca, &po, &p), KP_ERR_INVALID_ARG);
    assert_string_equal(
        kp_last_error(rt),
        "kp_ca_packed_create: tile_bytes: -1 is negative (0: the device's default)");
    po.tile_bytes = 0, po.height = 65535, po.width = 65535;
    assert_int_equal(kp_ca_packed_create(ca, &po, &p), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt),
                        "kp_ca_packed_create: 2 channels of 2 x 65535 x 65535 cells pass 2^31 "
                        "floats in the state");
    assert_int_equal(kp_ca_packed_create(NULL, &po, &p), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_ca_packed_create(ca, NULL, &p), KP_ERR_INVALID_ARG);
    po = kp_ca_packed_options_default();
    OK(kp_ca_packed_create(ca, &po, &p));
    assert_int_equal(kp_ca_packed_run(p, -1), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kp_ca_packed_run: steps -1 is negative");
    OK(kp_ca_packed_run(p, 1)); /* still usable */
    kp_ca_packed_destroy(p);
    kp_ca_destroy(ca);
    o = small_options(1, 0.5, 0);
    ca = make(&o);
    assert_int_equal(kp_ca_packed_create(ca, &po, &p), KP_ERR_UNSUPPORTED);
    assert_string_equal(kp_last_error(rt), "kp_ca_packed_create: the CA is asynchronous "
                                           "(fire_rate 0.5); the packed run is synchronous");
    kp_ca_destroy(ca);
}

/* ---- the kernels' checks -------------------------------------------------------------------- */

/* The step refuses a table that does not fit, naming what is wrong, and writes nothing. */
static void test_kernel_rejects(void **state)
{
    const kp_ca_options o = small_options(1, 1, 0);
    kp_logic_ca_net net;
    assert_int_equal(kp_logic_ca_net_build(o.net, &net, NULL, 0), 0);
    const int64_t C = net.channels, G = net.n_gates, A = net.n_rows, N = 24;
    kp_buffer *buf[7];
    const int32_t *tables[] = {net.layers, net.a_idx, net.b_idx, net.param};
    const int64_t lens[] = {net.n_layers + 1, G, G, G};
    for (int i = 0; i < 4; i++) {
        OK(kp_buffer_create(rt, (size_t)lens[i] * 4, &buf[i]));
        OK(kp_buffer_write(rt, buf[i], 0, (size_t)lens[i] * 4, tables[i]));
    }
    float *nan = malloc((size_t)(A * N) * sizeof *nan);
    for (int64_t i = 0; i < A * N; i++)
        nan[i] = NAN;
    const int64_t floats[] = {C * N, C * N, A * N};
    for (int i = 0; i < 3; i++) {
        OK(kp_buffer_create(rt, (size_t)floats[i] * 4, &buf[4 + i]));
        OK(kp_buffer_write(rt, buf[4 + i], 0, (size_t)floats[i] * 4, nan));
    }
    kp_buffer *coef;
    OK(kp_buffer_create(rt, (size_t)net.n_params * 16, &coef));
    kp_kernel *k = NULL;
    OK(kp_kernel_find(rt, "logic.ca_step", &k));
    kp_arg a[] = {kp_arg_tensor("state", kp_tensor_2d(buf[4], KP_F32, C, N)),
                  kp_arg_tensor("next", kp_tensor_2d(buf[5], KP_F32, C, N)),
                  kp_arg_tensor("acts", kp_tensor_2d(buf[6], KP_F32, A, N)),
                  kp_arg_tensor("layers", kp_tensor_1d(buf[0], KP_I32, net.n_layers + 1)),
                  kp_arg_tensor("a_idx", kp_tensor_1d(buf[1], KP_I32, G)),
                  kp_arg_tensor("b_idx", kp_tensor_1d(buf[2], KP_I32, G)),
                  kp_arg_tensor("param", kp_tensor_1d(buf[3], KP_I32, G)),
                  kp_arg_tensor("C", kp_tensor_2d(coef, KP_F32, net.n_params, 4)),
                  kp_arg_int("height", 4),
                  kp_arg_int("width", 3)};
    /* A gate of layer 1 reading its own layer's first row. */
    const int32_t g = net.layers[1], bad = (int32_t)(9 * C + net.layers[1]);
    OK(kp_buffer_write(rt, buf[1], (size_t)g * 4, 4, &bad));
    assert_int_equal(kp_kernel_launch(rt, k, a, 10, NULL), KP_ERR_INVALID_ARG);
    char want[200];
    snprintf(want, sizeof want,
             "kernel logic.ca_step: a_idx: gate %d (layer 1) reads row %d, but its layer reads "
             "rows 0..%d (the patch and earlier layers)",
             g, bad, bad - 1);
    assert_string_equal(kp_last_error(rt), want);
    OK(kp_buffer_write(rt, buf[1], (size_t)g * 4, 4, &net.a_idx[g]));
    /* The last layer is not the state. */
    const int32_t moved = net.layers[net.n_layers - 1] + 1;
    OK(kp_buffer_write(rt, buf[0], (size_t)(net.n_layers - 1) * 4, 4, &moved));
    assert_int_equal(kp_kernel_launch(rt, k, a, 10, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt), "kernel logic.ca_step: layers: the last layer has 1 "
                                           "gates, but it gives the 2 channels of the new state");
    OK(kp_buffer_write(rt, buf[0], (size_t)(net.n_layers - 1) * 4, 4,
                       &net.layers[net.n_layers - 1]));
    /* More layers than gates: a broadcast `layers` of 2^31 - 1 entries, refused before it is
     * read. */
    a[3].tensor.shape[0] = INT_MAX;
    a[3].tensor.strides[0] = 0;
    assert_int_equal(kp_kernel_launch(rt, k, a, 10, NULL), KP_ERR_INVALID_ARG);
    snprintf(want, sizeof want,
             "kernel logic.ca_step: layers: %d layers for %lld gates (at most one layer a gate)",
             INT_MAX - 1, (long long)G);
    assert_string_equal(kp_last_error(rt), want);
    a[3] = kp_arg_tensor("layers", kp_tensor_1d(buf[0], KP_I32, net.n_layers + 1));
    /* Cells that are not whole grids. */
    a[9] = kp_arg_int("width", 5);
    assert_int_equal(kp_kernel_launch(rt, k, a, 10, NULL), KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(rt),
                        "kernel logic.ca_step: state: 24 cells are not a whole number of 4 x 5 "
                        "grids");
    float out[2 * 24];
    OK(kp_buffer_read(rt, buf[5], 0, sizeof out, out));
    for (int i = 0; i < 2 * 24; i++)
        assert_true(isnan(out[i])); /* nothing ran */
    /* Fixed, it runs. */
    a[9] = kp_arg_int("width", 3);
    OK(kp_kernel_launch(rt, k, a, 10, NULL));
    for (int i = 0; i < 7; i++)
        kp_buffer_destroy(rt, buf[i]);
    kp_buffer_destroy(rt, coef);
    free(nan);
    kp_logic_ca_net_free(&net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_net_structure),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_gradient_sync),
        cmocka_unit_test(test_gradient_async),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_hard_matches_packed),
        cmocka_unit_test(test_packed_periodic_tiles),
        cmocka_unit_test(test_packed_zero),
        cmocka_unit_test(test_packed_rejects),
        cmocka_unit_test(test_kernel_rejects),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
