/* SPDX-License-Identifier: Apache-2.0 */
/* logic.pack, logic.unpack and logic.eval_packed: hard inference on 32 samples per word. */
#include <stdlib.h>
#include <string.h>

#include "logic-kernels.h"
#include "logic.h"

#define F32 KP_DT(KP_F32)
#define U32 KP_DT(KP_U32)
#define I32 KP_DT(KP_I32)

static int64_t words_of(int64_t n)
{
    return (n + 31) / 32;
}

/* WG for pack and unpack; VW for unpack (pack lists only the first). */
static const kp_tunable_desc wg_tunable[] = {
    {
        .name = "WG",
        .default_value = 64,
        .allowed = logic_pow2_256,
        .n_allowed = 9,
        .flags = KP_TUNABLE_WORKGROUP | KP_TUNABLE_NO_DEFINE,
        .doc = "work-items along a row per work-group",
    },
    LOGIC_VW_TUNABLE,
};

/* {F, N}: rows and samples. */
static const char *const pack_names[] = {"one", "prime", "tail", "views", "small", NULL};
static const int64_t pack_dims[][3] = {
    {1, 1, 0}, {7, 97, 0}, {5, 64, 0}, {9, 45, 0}, {300, 1000, 0}};
static const char *const pack_bench[] = {"64000x1024", NULL};

/* ---- logic.pack ------------------------------------------------------------------------------ */

static const kp_param_desc pack_params[] = {
    [PK_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "[F, N] values; a sample above 0.5 is a 1"},
    [PK_BITS] = {.name = "bits",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_OUT,
                 .dtypes = U32,
                 .doc = "[F, ceil(N / 32)]: bit i of word c is sample 32 c + i; padding zero"},
};

static kp_status pack_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[PK_X].tensor;
    kp_status st = logic_expect(l, "x", x, 2, (int64_t[]){-1, -1}, "[F, N]");
    if (st == KP_OK)
        st = logic_expect(l, "bits", &call->args[PK_BITS].tensor, 2,
                          (int64_t[]){x->shape[0], words_of(x->shape[1])}, "[F, ceil(N / 32)]");
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status pack_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[PK_X].tensor;
    int64_t F = x->shape[0], N = x->shape[1], nw = words_of(N);
    kp_clargs a = kp_clargs_begin(logic_host, l, "logic_pack", NULL);
    kp_clargs_int(&a, (int32_t)N);
    kp_clargs_int(&a, (int32_t)F);
    kp_clargs_int(&a, (int32_t)nw);
    kp_clargs_tensor(&a, x, 2);
    kp_clargs_tensor(&a, &call->args[PK_BITS].tensor, 2);
    return logic_clargs_enqueue(&a, nw, F, (size_t)logic_host->tunable_index(l, 0), 1);
}

/* Mostly {0, 1} values, with some soft ones to show the threshold. */
static kp_status pack_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    if (!logic_sample_dims(name, pack_names, pack_dims, d))
        return KP_ERR_NOT_FOUND;
    int64_t F = d[0], N = d[1], nw = words_of(N);
    int views = strcmp(name, "views") == 0;
    float *x = NULL;
    int64_t ld = views ? N + 4 : N;
    kp_status st =
        logic_host->sample_tensor(s, "x", KP_F32, 1, (int64_t[]){F * ld + 1}, 0, 1, (void **)&x);
    for (int64_t i = 0; st == KP_OK && i < F * ld + 1; i++)
        x[i] = x[i] < 0.4f ? 0.0f : x[i] < 0.8f ? 1.0f : x[i];
    if (st == KP_OK)
        st = logic_host->sample_view(s, "x", 2, (int64_t[]){F, N}, views, (int64_t[]){ld, 1});
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "bits", KP_U32, 1, (int64_t[]){F * (nw + views)}, 0, 0,
                                       NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "bits", 2, (int64_t[]){F, nw}, 0,
                                     (int64_t[]){nw + views, 1});
    return st;
}

static void pack_cost(const kp_call *call, kp_cost *out)
{
    double F = (double)call->args[PK_X].tensor.shape[0];
    double N = (double)call->args[PK_X].tensor.shape[1];
    out->flops = 0;
    out->bytes = F * (4.0 * N + 4.0 * (double)words_of((int64_t)N));
}

const kp_kernel_desc logic_pack_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.pack",
    .summary = "{0, 1} floats [F, N] to bits [F, ceil(N / 32)] along the batch",
    .params = pack_params,
    .n_params = PK_N,
    .tunables = wg_tunable,
    .n_tunables = 1,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_pack",
    .check = pack_check,
    .enqueue = pack_enqueue,
    .reference = logic_pack_reference,
    .sample = pack_sample,
    .cost = pack_cost,
    .verify_sizes = pack_names,
    .bench_sizes = pack_bench,
};

/* ---- logic.unpack ---------------------------------------------------------------------------- */

static const kp_param_desc unpack_params[] = {
    [UP_BITS] = {.name = "bits",
                 .kind = KP_ARG_KIND_TENSOR,
                 .access = KP_ACCESS_IN,
                 .dtypes = U32,
                 .doc = "[F, ceil(N / 32)] packed samples"},
    [UP_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .doc = "[F, N] 0.0 or 1.0 per sample"},
};

static kp_status unpack_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[UP_Y].tensor;
    kp_status st = logic_expect(l, "y", y, 2, (int64_t[]){-1, -1}, "[F, N]");
    if (st == KP_OK)
        st = logic_expect(l, "bits", &call->args[UP_BITS].tensor, 2,
                          (int64_t[]){y->shape[0], words_of(y->shape[1])}, "[F, ceil(N / 32)]");
    return st == KP_OK ? logic_fits_int(l, call) : st;
}

static kp_status unpack_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[UP_Y].tensor;
    int64_t vw = logic_host->tunable_index(l, 1);
    kp_clargs a = logic_clargs_vw(l, "logic_unpack", vw);
    kp_clargs_int(&a, (int32_t)y->shape[1]);
    kp_clargs_int(&a, (int32_t)y->shape[0]);
    kp_clargs_tensor(&a, &call->args[UP_BITS].tensor, 2);
    kp_clargs_tensor(&a, y, 2);
    return logic_clargs_enqueue(&a, (y->shape[1] + vw - 1) / vw, y->shape[0],
                                (size_t)logic_host->tunable_index(l, 0), 1);
}

static kp_status unpack_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    if (!logic_sample_dims(name, pack_names, pack_dims, d))
        return KP_ERR_NOT_FOUND;
    int64_t F = d[0], N = d[1], nw = words_of(N);
    int views = strcmp(name, "views") == 0;
    kp_status st = logic_host->sample_tensor(s, "bits", KP_U32, 1, (int64_t[]){F * (nw + views)}, 0,
                                             4294967296.0, NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "bits", 2, (int64_t[]){F, nw}, views,
                                     (int64_t[]){nw + views, 1});
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "y", KP_F32, 2, (int64_t[]){F, N}, 0, 0, NULL);
    return st;
}

static void unpack_cost(const kp_call *call, kp_cost *out)
{
    double F = (double)call->args[UP_Y].tensor.shape[0];
    double N = (double)call->args[UP_Y].tensor.shape[1];
    out->flops = 0;
    out->bytes = F * (4.0 * N + 4.0 * (double)words_of((int64_t)N));
}

const kp_kernel_desc logic_unpack_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.unpack",
    .summary = "bits [F, ceil(N / 32)] to 0.0 / 1.0 floats [F, N]",
    .params = unpack_params,
    .n_params = UP_N,
    .tunables = wg_tunable,
    .n_tunables = 2,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_unpack",
    .check = unpack_check,
    .enqueue = unpack_enqueue,
    .reference = logic_unpack_reference,
    .sample = unpack_sample,
    .cost = unpack_cost,
    .verify_sizes = pack_names,
    .bench_sizes = pack_bench,
    .resolve = logic_resolve_vw,
};

/* ---- logic.eval_packed ----------------------------------------------------------------------- */

static const kp_param_desc eval_params[] = {
    [EV_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = U32,
              .doc = "[IN, W] packed inputs (logic.pack), W = ceil(N / 32) words"},
    [EV_A] = {.name = "a_idx",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = I32,
              .doc = "[G] each gate's first input"},
    [EV_B] = {.name = "b_idx",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_IN,
              .dtypes = I32,
              .doc = "[G] each gate's second input"},
    [EV_OP] = {.name = "op",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_IN,
               .dtypes = I32,
               .doc = "[G] op ids 0..15 (logic.coeffs' op output)"},
    [EV_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = U32,
              .doc = "[G, W] packed outputs"},
    [EV_SAMPLES] = {.name = "n",
                    .kind = KP_ARG_KIND_INT,
                    .access = KP_ACCESS_IN,
                    .flags = KP_PARAM_OPTIONAL,
                    .doc = "samples N: bits past N in the last word are written 0 (ops such as "
                           "NOT would set them); 0 (default): every bit is a sample"},
    [EV_CHECK] = {.name = "check_wiring",
                  .kind = KP_ARG_KIND_INT,
                  .access = KP_ACCESS_IN,
                  .flags = KP_PARAM_OPTIONAL,
                  .int_default = 1,
                  .doc = "1: read a_idx, b_idx and op back and reject values out of range (a "
                         "blocking read); 0: skip (indices are then clamped)"},
};

enum { EV_TUNE_WG_N, EV_TUNE_WG_G, EV_TUNE_WPI, EV_TUNE_VW };

static kp_status check_ops(kp_launch *l, const kp_call *call)
{
    int32_t *op = NULL;
    kp_status st = logic_read_ints(l, call, EV_OP, &op);
    for (int64_t g = 0; st == KP_OK && g < call->args[EV_OP].tensor.shape[0]; g++)
        if (op[g] < 0 || op[g] > 15)
            st = logic_host->fail(l, KP_ERR_INVALID_ARG, "op: gate %lld has op %d, outside 0..15",
                                  (long long)g, op[g]);
    free(op);
    return st;
}

static kp_status eval_check(const kp_call *call, kp_launch *l)
{
    const kp_value *a = call->args;
    const kp_tensor *x = &a[EV_X].tensor;
    kp_status st = logic_expect(l, "x", x, 2, (int64_t[]){-1, -1}, "[IN, W]");
    if (st == KP_OK && x->shape[0] < 1)
        st = logic_host->fail(l, KP_ERR_INVALID_ARG, "x: a layer needs at least one input row");
    if (st == KP_OK)
        st = logic_expect(l, "a_idx", &a[EV_A].tensor, 1, (int64_t[]){-1}, "[G]");
    int64_t G = a[EV_A].tensor.shape[0], W = x->shape[1], n = a[EV_SAMPLES].i;
    if (st == KP_OK)
        st = logic_expect(l, "b_idx", &a[EV_B].tensor, 1, (int64_t[]){G}, "[G]");
    if (st == KP_OK)
        st = logic_expect(l, "op", &a[EV_OP].tensor, 1, (int64_t[]){G}, "[G]");
    if (st == KP_OK)
        st = logic_expect(l, "y", &a[EV_Y].tensor, 2, (int64_t[]){G, W}, "[G, W]");
    if (st == KP_OK && n != 0 && (n <= 32 * (W - 1) || n > 32 * W))
        st = logic_host->fail(
            l, KP_ERR_INVALID_ARG, "n: %lld samples do not fill the %lld words of x (%lld..%lld)",
            (long long)n, (long long)W, (long long)(32 * (W - 1) + 1), (long long)(32 * W));
    if (st == KP_OK)
        st = logic_check_flag(l, call, EV_CHECK);
    if (st == KP_OK)
        st = logic_fits_int(l, call);
    if (st == KP_OK && a[EV_CHECK].i)
        st = logic_check_wiring(l, call, EV_A, EV_B, x->shape[0], "x");
    if (st == KP_OK && a[EV_CHECK].i)
        st = check_ops(l, call);
    return st;
}

static kp_status eval_enqueue(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[EV_X].tensor.shape[0], W = v[EV_X].tensor.shape[1];
    int64_t G = v[EV_A].tensor.shape[0], n = v[EV_SAMPLES].i;
    int64_t wn = logic_host->tunable_index(l, EV_TUNE_WG_N);
    int64_t wg = logic_host->tunable_index(l, EV_TUNE_WG_G);
    int64_t vw = logic_host->tunable_index(l, EV_TUNE_VW);
    int64_t wpi = logic_host->tunable_index(l, EV_TUNE_WPI);
    /* VW or WPI still 0 (only on CPUs: eval_resolve keeps it there) follows the call's rows: one
     * work-item per row, in vectors of up to 16 words but no wider than the row (short rows would
     * otherwise go word by word); at most five programs, one per width. */
    if (vw == 0) {
        vw = 16;
        while (vw > 1 && vw > W)
            vw /= 2;
    }
    if (wpi == 0)
        wpi = (W + vw - 1) / vw < 2 ? 1 : 2;
    int64_t used = n ? n - 32 * (W - 1) : 32;
    uint32_t tail = used >= 32 ? 0xffffffffu : (1u << used) - 1u;
    kp_status st = logic_check_workgroup(l, wn, wg, "WG_N x WG_G");
    if (st != KP_OK)
        return st;
    kp_clargs a = logic_clargs_vw(l, "logic_eval_packed", vw);
    kp_clargs_int(&a, (int32_t)W);
    kp_clargs_int(&a, (int32_t)G);
    kp_clargs_int(&a, (int32_t)IN);
    kp_clargs_int(&a, (int32_t)wpi);
    kp_clargs_uint(&a, tail);
    kp_clargs_tensor(&a, &v[EV_X].tensor, 2);
    kp_clargs_tensor(&a, &v[EV_A].tensor, 1);
    kp_clargs_tensor(&a, &v[EV_B].tensor, 1);
    kp_clargs_tensor(&a, &v[EV_OP].tensor, 1);
    kp_clargs_tensor(&a, &v[EV_Y].tensor, 2);
    int64_t groups = (W + wn * wpi * vw - 1) / (wn * wpi * vw);
    return logic_clargs_enqueue(&a, groups * wn, G, (size_t)wn, (size_t)wg);
}

/* {IN, G, N}: N samples in ceil(N / 32) words; "same" reads one wire twice in every third gate. */
static const char *const eval_names[] = {"one", "prime", "same", "views", "small", NULL};
static const int64_t eval_dims[][3] = {
    {1, 1, 1}, {37, 53, 97}, {16, 67, 64}, {29, 41, 75}, {500, 1000, 3000}};

static kp_status eval_sample(kp_sample *s, const char *name)
{
    int64_t d[3];
    int found = logic_sample_dims(name, eval_names, eval_dims, d);
    if (!found)
        return KP_ERR_NOT_FOUND;
    if (found == 2) /* "GxN": as many inputs as gates */
        d[2] = d[1], d[1] = d[0];
    int64_t IN = d[0], G = d[1], N = d[2], W = words_of(N);
    int pad = strcmp(name, "views") == 0 ? 2 : 0;
    uint32_t *x = NULL;
    int32_t *op = NULL;
    kp_status st = logic_host->sample_tensor(s, "x", KP_U32, 1, (int64_t[]){IN * (W + pad) + pad},
                                             0, 4294967296.0, (void **)&x);
    /* Padding bits zero, as logic.pack leaves them. */
    for (int64_t i = 0; st == KP_OK && N % 32 && i < IN; i++)
        x[pad + i * (W + pad) + W - 1] &= (1u << (N % 32)) - 1u;
    if (st == KP_OK)
        st = logic_host->sample_view(s, "x", 2, (int64_t[]){IN, W}, pad, (int64_t[]){W + pad, 1});
    if (st == KP_OK)
        st = logic_sample_wiring(s, G, IN, strcmp(name, "same") == 0, NULL, NULL);
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "op", KP_I32, 1, &G, 0, 16, (void **)&op);
    for (int64_t g = 0; st == KP_OK && g < G && g < 16; g++)
        op[g] = (int32_t)g; /* every op at least once */
    if (st == KP_OK)
        st = logic_host->sample_tensor(s, "y", KP_U32, 1, (int64_t[]){G * (W + pad) + pad}, 0, 0,
                                       NULL);
    if (st == KP_OK)
        st = logic_host->sample_view(s, "y", 2, (int64_t[]){G, W}, pad, (int64_t[]){W + pad, 1});
    return st == KP_OK ? logic_host->sample_int(s, "n", N) : st;
}

/* Six bitwise operations per 32 samples; bytes: each used input row once, each output once. */
static void eval_cost(const kp_call *call, kp_cost *out)
{
    double IN = (double)call->args[EV_X].tensor.shape[0];
    double W = (double)call->args[EV_X].tensor.shape[1];
    double G = (double)call->args[EV_A].tensor.shape[0];
    out->flops = 0;
    out->bytes = 4.0 * ((IN < 2 * G ? IN : 2 * G) * W + G * W) + 12.0 * G;
}

/* CPUs: one work-item per row of words, 64 gates a group; GPUs: 8 lanes of scalar words. On CPUs
 * VW and WPI follow the row's width, a call's shape: their 0 stays for eval_enqueue. */
static const char *eval_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved)
{
    static const logic_auto by_type[] = {
        [EV_TUNE_WG_N] = {1, 8},
        [EV_TUNE_WG_G] = {64, 32},
        [EV_TUNE_WPI] = {0, 1},
        [EV_TUNE_VW] = {0, 1},
    };
    return logic_resolve(l, by_type, sizeof by_type / sizeof by_type[0], index, value, resolved);
}

static const kp_tunable_desc eval_tunables[] = {
    [EV_TUNE_WG_N] = LOGIC_AUTO_TUNABLE("WG_N", logic_auto_256, 10, 0,
                                        "work-items along a row of words per work-group; 0: 1 "
                                        "on CPUs, 8 on others"),
    [EV_TUNE_WG_G] = LOGIC_AUTO_TUNABLE("WG_G", logic_auto_64, 8, 0,
                                        "gates per work-group; 0: 64 on CPUs, 32 on others"),
    [EV_TUNE_WPI] = LOGIC_AUTO_TUNABLE("WPI", logic_auto_16, 6, 0,
                                       "vectors of VW words per work-item (WG_N apart); 0: 1 "
                                       "on devices other than CPUs; on CPUs it stays 0 and each "
                                       "launch takes 2, or 1 when one vector holds the row"),
    [EV_TUNE_VW] = LOGIC_AUTO_TUNABLE("VW", logic_auto_16, 6, 0,
                                      "words per vector, compiled in; 0: 1 on devices other "
                                      "than CPUs; on CPUs it stays 0 and each launch takes the "
                                      "widest of 16, 8, 4, 2, 1 within the call's rows"),
};

static const char *const eval_bench[] = {"64000x1024", "64000x100", NULL};

const kp_kernel_desc logic_eval_packed_desc = {
    .struct_size = sizeof(kp_kernel_desc),
    .name = "logic.eval_packed",
    .summary = "hard inference of a gate layer on packed samples, 32 per word",
    .params = eval_params,
    .n_params = EV_N,
    .tunables = eval_tunables,
    .n_tunables = 4,
    .source = kp_kernel_logic_cl,
    .source_name = "logic.cl",
    .entry = "logic_eval_packed",
    .check = eval_check,
    .enqueue = eval_enqueue,
    .reference = logic_eval_packed_reference,
    .sample = eval_sample,
    .cost = eval_cost,
    .verify_sizes = eval_names,
    .bench_sizes = eval_bench,
    .resolve = eval_resolve,
};
