/* SPDX-License-Identifier: Apache-2.0 */
/* bench-logic: gate layers (forward, backward dx and dw, packed inference) against host loops. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernelport/ops/logic.h"

/* The device buffers of a layer. */
enum { D_X, D_A, D_B, D_W, D_C, D_DY, D_START, D_ENTRIES, D_Y, D_DX, D_DW, D_OP, D_XB, D_YB, D_N };

/* One layer of G gates over IN = G inputs and N samples: host data, device buffers, results. */
typedef struct layer {
    int64_t G, IN, N, W; /* W: 32-bit words per packed row */
    int32_t *a, *b, *op, *start, *entries;
    float *x, *w, *C, *dy;
    uint32_t *xbits;
    float *out;  /* device results read back, as large as the largest output */
    double *ref; /* host results in double */
    kp_buffer *d[D_N];
} layer;

static void layer_fini(kpb *b, layer *s)
{
    free(s->a), free(s->b), free(s->op), free(s->start), free(s->entries);
    free(s->x), free(s->w), free(s->C), free(s->dy), free(s->xbits), free(s->out), free(s->ref);
    for (int i = 0; i < D_N; i++)
        kp_buffer_destroy(b->rt, s->d[i]);
}

static kp_status upload(kpb *b, layer *s, int i, const void *data, size_t bytes)
{
    kp_status st = kp_buffer_create(b->rt, bytes ? bytes : 4, &s->d[i]);
    return st == KP_OK && data ? kp_buffer_write(b->rt, s->d[i], 0, bytes, data) : st;
}

/* difflogic's random wiring, Gaussian logits and their softmax coefficients, x in [0, 1), dy in
 * [-1, 1), random packed inputs; the reverse index. */
static kp_status layer_init(kpb *b, layer *s)
{
    size_t G = (size_t)s->G, IN = (size_t)s->IN, N = (size_t)s->N;
    s->W = (s->N + 31) / 32;
    size_t W = (size_t)s->W, big = (IN > G ? IN : G) * N;
    s->a = malloc(G * 4), s->b = malloc(G * 4), s->op = malloc(G * 4);
    s->start = malloc((IN + 1) * 4), s->entries = malloc(2 * G * 4);
    s->x = malloc(IN * N * 4), s->w = malloc(16 * G * 4), s->C = malloc(4 * G * 4);
    s->dy = malloc(G * N * 4), s->xbits = malloc(IN * W * 4);
    s->out = malloc((big > 16 * G ? big : 16 * G) * 4), s->ref = malloc(big * sizeof(double));
    if (!s->a || !s->b || !s->op || !s->start || !s->entries || !s->x || !s->w || !s->C || !s->dy ||
        !s->xbits || !s->out || !s->ref)
        return KP_ERR_OUT_OF_MEMORY;
    if (kp_logic_wiring_random(s->IN, s->G, 42, s->a, s->b) != 0 ||
        kp_logic_csr_build(s->a, s->b, s->G, s->IN, s->start, s->entries) != 0)
        return KP_ERR_INTERNAL;
    kp_logic_init_gaussian(s->w, s->G, 1.0, 7);
    for (size_t g = 0; g < G; g++) {
        double p[16], m = s->w[16 * g], sum = 0;
        int best = 0;
        for (int i = 0; i < 16; i++) {
            m = fmax(m, s->w[16 * g + i]);
            best = s->w[16 * g + i] > s->w[16 * g + best] ? i : best;
        }
        for (int i = 0; i < 16; i++)
            sum += p[i] = exp(s->w[16 * g + i] - m);
        for (int t = 0; t < 4; t++) {
            double c = 0;
            for (int i = 0; i < 16; i++)
                c += kp_logic_coeff(t, i) * p[i] / sum;
            s->C[4 * g + (size_t)t] = (float)c;
        }
        s->op[g] = best;
    }
    kpb_fill(s->x, IN * N, 1);
    for (size_t i = 0; i < IN * N; i++)
        s->x[i] = 0.5f + 0.5f * s->x[i];
    kpb_fill(s->dy, G * N, 2);
    uint64_t state = 3;
    for (size_t i = 0; i < IN * W; i++)
        s->xbits[i] = (uint32_t)kp_logic_random(&state);
    if (N % 32) /* padding bits zero, as logic.pack leaves them */
        for (size_t i = 0; i < IN; i++)
            s->xbits[i * W + W - 1] &= (1u << (N % 32)) - 1u;
    const struct {
        int i;
        const void *p;
        size_t bytes;
    } up[] = {{D_X, s->x, IN * N * 4},
              {D_A, s->a, G * 4},
              {D_B, s->b, G * 4},
              {D_W, s->w, 16 * G * 4},
              {D_C, s->C, 4 * G * 4},
              {D_DY, s->dy, G * N * 4},
              {D_START, s->start, (IN + 1) * 4},
              {D_ENTRIES, s->entries, 2 * G * 4},
              {D_Y, NULL, G * N * 4},
              {D_DX, NULL, IN * N * 4},
              {D_DW, NULL, 16 * G * 4},
              {D_OP, s->op, G * 4},
              {D_XB, s->xbits, IN * W * 4},
              {D_YB, NULL, G * W * 4}};
    kp_status st = KP_OK;
    for (size_t i = 0; i < sizeof up / sizeof up[0] && st == KP_OK; i++)
        st = upload(b, s, up[i].i, up[i].p, up[i].bytes);
    return st;
}

static kp_tensor mat(const layer *s, int i, int64_t rows, int64_t cols)
{
    return kp_tensor_2d(s->d[i], i == D_A || i == D_B || i == D_OP ? KP_I32 : KP_F32, rows, cols);
}

static kp_tensor vec(const layer *s, int i, int64_t n)
{
    return kp_tensor_1d(s->d[i], i == D_XB || i == D_YB ? KP_U32 : KP_I32, n);
}

/* ---- host loops: the peers, and the checks of the device's results -------------------------- */

static void host_forward(void *user)
{
    layer *s = user;
    float *y = s->out;
    for (int64_t g = 0; g < s->G; g++) {
        const float *xa = s->x + s->a[g] * s->N, *xb = s->x + s->b[g] * s->N, *c = s->C + 4 * g;
        for (int64_t n = 0; n < s->N; n++)
            y[g * s->N + n] = (c[1] + c[3] * xb[n]) * xa[n] + (c[0] + c[2] * xb[n]);
    }
}

/* The plain C packed loop: 64 samples per word, one switch per gate outside the word loop
 * (difflogic's bin_op_eval form; the compiler vectorises each case's loop). */
typedef struct packed_call {
    const layer *s;
    uint64_t *y;
} packed_call;

static void host_packed(void *user)
{
    packed_call *c = user;
    const layer *s = c->s;
    const int64_t W64 = s->W / 2;
    const uint64_t *x = (const uint64_t *)s->xbits;
    for (int64_t g = 0; g < s->G; g++) {
        const uint64_t *a = x + s->a[g] * W64, *b = x + s->b[g] * W64;
        uint64_t *y = c->y + g * W64;
        int64_t i;
        switch (s->op[g]) {
        case 0:
            memset(y, 0, (size_t)W64 * sizeof *y);
            break;
        case 1:
            for (i = 0; i < W64; i++)
                y[i] = a[i] & b[i];
            break;
        case 2:
            for (i = 0; i < W64; i++)
                y[i] = a[i] & ~b[i];
            break;
        case 3:
            memcpy(y, a, (size_t)W64 * sizeof *y);
            break;
        case 4:
            for (i = 0; i < W64; i++)
                y[i] = ~a[i] & b[i];
            break;
        case 5:
            memcpy(y, b, (size_t)W64 * sizeof *y);
            break;
        case 6:
            for (i = 0; i < W64; i++)
                y[i] = a[i] ^ b[i];
            break;
        case 7:
            for (i = 0; i < W64; i++)
                y[i] = a[i] | b[i];
            break;
        case 8:
            for (i = 0; i < W64; i++)
                y[i] = ~(a[i] | b[i]);
            break;
        case 9:
            for (i = 0; i < W64; i++)
                y[i] = ~(a[i] ^ b[i]);
            break;
        case 10:
            for (i = 0; i < W64; i++)
                y[i] = ~b[i];
            break;
        case 11:
            for (i = 0; i < W64; i++)
                y[i] = a[i] | ~b[i];
            break;
        case 12:
            for (i = 0; i < W64; i++)
                y[i] = ~a[i];
            break;
        case 13:
            for (i = 0; i < W64; i++)
                y[i] = ~a[i] | b[i];
            break;
        case 14:
            for (i = 0; i < W64; i++)
                y[i] = ~(a[i] & b[i]);
            break;
        default:
            memset(y, 0xff, (size_t)W64 * sizeof *y);
            break;
        }
    }
}

/* The largest |device - host| over n values, NaN counting as infinite. */
static double max_err(const float *dev, const double *ref, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++)
        e = fmax(e, isnan(dev[i]) ? INFINITY : fabs(dev[i] - ref[i]));
    return e;
}

static void ref_dw(layer *s)
{
    for (int64_t g = 0; g < s->G; g++) {
        const float *xa = s->x + s->a[g] * s->N, *xb = s->x + s->b[g] * s->N;
        const float *dy = s->dy + g * s->N;
        double S[4] = {0, 0, 0, 0}, p[16], gp[16], m = s->w[16 * g], sum = 0, dot = 0;
        for (int64_t n = 0; n < s->N; n++)
            S[0] += dy[n], S[1] += dy[n] * xa[n], S[2] += dy[n] * xb[n],
                S[3] += (double)dy[n] * xa[n] * xb[n];
        for (int i = 0; i < 16; i++)
            m = fmax(m, s->w[16 * g + i]);
        for (int i = 0; i < 16; i++)
            sum += p[i] = exp(s->w[16 * g + i] - m);
        for (int i = 0; i < 16; i++) {
            p[i] /= sum;
            gp[i] = 0;
            for (int t = 0; t < 4; t++)
                gp[i] += kp_logic_coeff(t, i) * S[t];
            dot += p[i] * gp[i];
        }
        for (int i = 0; i < 16; i++)
            s->ref[16 * g + i] = p[i] * (gp[i] - dot);
    }
}

static void ref_dx(layer *s)
{
    memset(s->ref, 0, (size_t)(s->IN * s->N) * sizeof *s->ref);
    for (int64_t g = 0; g < s->G; g++) {
        const float *xa = s->x + s->a[g] * s->N, *xb = s->x + s->b[g] * s->N, *c = s->C + 4 * g;
        double *da = s->ref + s->a[g] * s->N, *db = s->ref + s->b[g] * s->N;
        for (int64_t n = 0; n < s->N; n++) {
            double e = s->dy[g * s->N + n];
            da[n] += e * (c[1] + (double)c[3] * xb[n]);
            db[n] += e * (c[2] + (double)c[3] * xa[n]);
        }
    }
}

/* ---- rows ------------------------------------------------------------------------------------ */

/* Times `kernel` with args, then checks `what` of the output against the host (tolerance tol):
 * a failure is reported as such, never as a speed. */
static int time_row(kpb *b, layer *s, const char *kernel, const char *what, const kp_arg *args,
                    size_t n, double bytes, double gather_bytes, double tol, int out, size_t count,
                    const char *peer, double peer_s)
{
    kp_kernel *k;
    char name[96], note[300] = "";
    snprintf(name, sizeof name, "%s G=%lld N=%lld", what, (long long)s->G, (long long)s->N);
    kpb_row row = {.case_name = name,
                   .ours = (char *)kernel,
                   .bytes = bytes,
                   .peer = (char *)peer,
                   .peer_s = peer_s};
    kp_status st = kp_kernel_find(b->rt, kernel, &k);
    if (st == KP_OK)
        st = kpb_time_kernel(b, k, args, n, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, s->d[out], 0, count * sizeof(float), s->out);
    double err = st == KP_OK ? max_err(s->out, s->ref, count) : 0;
    if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
        row.status = st, row.ours_s = 0;
    } else if (!(err <= tol)) {
        snprintf(note, sizeof note, "!! WRONG RESULT: max |device - host| %.3g > %.3g", err, tol);
        row.status = KP_ERR_VERIFY, row.ours_s = 0;
    }
    double evals = (double)s->G * (double)s->N;
    if (row.ours_s > 0) {
        kpb_row_metric(&row, "gate_evals_per_s", evals / row.ours_s);
        kpb_row_metric(&row, "gather_gbs", gather_bytes / row.ours_s / 1e9);
    }
    kpb_row_metric(&row, "max_abs_err", err);
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
    return row.status != KP_OK;
}

static int bench_layer(kpb *b, int64_t G, int64_t N)
{
    layer s = {.G = G, .IN = G, .N = N};
    kp_status st = layer_init(b, &s);
    if (st != KP_OK) {
        kpb_note(b, "G=%lld N=%lld: setup failed (%s)", (long long)G, (long long)N,
                 kp_status_name(st));
        layer_fini(b, &s);
        return 1;
    }
    double GN = (double)G * (double)N, INN = (double)s.IN * (double)N;
    int failures = 0;
    /* forward: check_wiring 0 in the timed launches (the wiring was made by the helper). */
    kp_arg fw[] = {
        KP_ARG_TENSOR("x", mat(&s, D_X, s.IN, N)), KP_ARG_TENSOR("a_idx", vec(&s, D_A, G)),
        KP_ARG_TENSOR("b_idx", vec(&s, D_B, G)),   KP_ARG_TENSOR("C", mat(&s, D_C, G, 4)),
        KP_ARG_TENSOR("y", mat(&s, D_Y, G, N)),    KP_ARG_INT("check_wiring", 0)};
    /* The forward's peer, the same loop on one host thread, also makes the reference. */
    double peer_s = kpb_time_host(b, host_forward, &s);
    for (size_t i = 0; i < (size_t)GN; i++)
        s.ref[i] = s.out[i];
    failures += time_row(b, &s, "logic.forward", "forward", fw, 6, 4.0 * (INN + GN) + 24.0 * G,
                         12.0 * GN, 2e-6, D_Y, (size_t)GN, "plain C loop (1 thread)", peer_s);
    /* backward, dx and dw apart (each a launch of logic.backward with one output). */
    kp_arg dx[] = {KP_ARG_TENSOR("x", mat(&s, D_X, s.IN, N)),
                   KP_ARG_TENSOR("a_idx", vec(&s, D_A, G)),
                   KP_ARG_TENSOR("b_idx", vec(&s, D_B, G)),
                   KP_ARG_TENSOR("C", mat(&s, D_C, G, 4)),
                   KP_ARG_TENSOR("dy", mat(&s, D_DY, G, N)),
                   KP_ARG_TENSOR("csr_start", vec(&s, D_START, s.IN + 1)),
                   KP_ARG_TENSOR("csr_entries", vec(&s, D_ENTRIES, 2 * G)),
                   KP_ARG_TENSOR("dx", mat(&s, D_DX, s.IN, N)),
                   KP_ARG_INT("check_wiring", 0)};
    ref_dx(&s);
    failures += time_row(b, &s, "logic.backward", "backward dx", dx, 9, 4.0 * (GN + 2 * INN),
                         4.0 * (2 * GN + 2 * GN + INN), 1e-5, D_DX, (size_t)INN, NULL, 0);
    kp_arg dw[] = {KP_ARG_TENSOR("x", mat(&s, D_X, s.IN, N)),
                   KP_ARG_TENSOR("a_idx", vec(&s, D_A, G)),
                   KP_ARG_TENSOR("b_idx", vec(&s, D_B, G)),
                   KP_ARG_TENSOR("w", mat(&s, D_W, G, 16)),
                   KP_ARG_TENSOR("dy", mat(&s, D_DY, G, N)),
                   KP_ARG_TENSOR("dw", mat(&s, D_DW, G, 16)),
                   KP_ARG_INT("check_wiring", 0)};
    ref_dw(&s);
    failures +=
        time_row(b, &s, "logic.backward", "backward dw", dw, 7, 4.0 * (INN + GN) + 128.0 * G,
                 4.0 * 3 * GN, 2e-4 * sqrt((double)N), D_DW, (size_t)(16 * G), NULL, 0);
    /* Packed hard inference, 32 samples per word, against the host's 64-bit-word loop. */
    size_t W = (size_t)s.W, W64 = W / 2;
    uint64_t *host_y = malloc((size_t)G * (W64 ? W64 : 1) * sizeof *host_y);
    kp_arg ev[] = {KP_ARG_TENSOR("x", kp_tensor_2d(s.d[D_XB], KP_U32, s.IN, s.W)),
                   KP_ARG_TENSOR("a_idx", vec(&s, D_A, G)),
                   KP_ARG_TENSOR("b_idx", vec(&s, D_B, G)),
                   KP_ARG_TENSOR("op", vec(&s, D_OP, G)),
                   KP_ARG_TENSOR("y", kp_tensor_2d(s.d[D_YB], KP_U32, G, s.W)),
                   KP_ARG_INT("n", N),
                   KP_ARG_INT("check_wiring", 0)};
    packed_call pc = {&s, host_y};
    if (W % 2 == 0 && host_y) {
        host_packed(&pc);
        /* Compare as floats of 0/1 per word pair would lose bits: compare the words instead. */
        const uint32_t *h32 = (const uint32_t *)host_y;
        uint32_t tail = N % 32 ? (1u << (N % 32)) - 1u : 0xffffffffu;
        for (size_t g = 0; g < (size_t)G; g++)
            for (size_t c = 0; c < W; c++)
                s.ref[g * W + c] = (double)(h32[g * W + c] & (c == W - 1 ? tail : 0xffffffffu));
        kp_kernel *k;
        char name[96], note[200] = "";
        snprintf(name, sizeof name, "eval_packed G=%lld N=%lld", (long long)G, (long long)N);
        kpb_row row = {.case_name = name,
                       .ours = "logic.eval_packed",
                       .bytes = 4.0 * (double)(s.IN + G) * (double)W + 12.0 * G};
        st = kp_kernel_find(b->rt, "logic.eval_packed", &k);
        if (st == KP_OK)
            st = kpb_time_kernel(b, k, ev, 7, &row.ours_s, &row.ours_p10, &row.ours_p90);
        uint32_t *dev = (uint32_t *)s.out;
        if (st == KP_OK)
            st = kp_buffer_read(b->rt, s.d[D_YB], 0, (size_t)G * W * 4, dev);
        size_t wrong = 0;
        for (size_t i = 0; st == KP_OK && i < (size_t)G * W; i++)
            wrong += (double)dev[i] != s.ref[i];
        if (st != KP_OK || wrong) {
            snprintf(note, sizeof note, "%s",
                     st != KP_OK ? kp_last_error(b->rt) : "!! WRONG RESULT: bits differ from host");
            row.status = st != KP_OK ? st : KP_ERR_VERIFY, row.ours_s = 0;
        }
        if (row.ours_s > 0)
            kpb_row_metric(&row, "gate_evals_per_s", GN / row.ours_s);
        row.peer = "plain C 64-bit-word loop (1 thread)";
        row.peer_s = kpb_time_host(b, host_packed, &pc);
        kpb_row_metric(&row, "peer_gate_evals_per_s", GN / row.peer_s);
        row.note = note[0] ? note : NULL;
        kpb_add(b, &row);
        failures += row.status != KP_OK;
    }
    free(host_y);
    layer_fini(b, &s);
    return failures;
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-logic", argc, argv);
    kp_kernel *k;
    if (kp_kernel_find(b.rt, "logic.forward", &k) != KP_OK) {
        fprintf(stderr, "bench-logic: %s\n", kp_last_error(b.rt));
        kp_runtime_destroy(b.rt);
        return 1;
    }
    b.max_case_s = b.quick ? 0.3 : 2.0;
    kpb_note_tuning(&b, "logic.forward");
    kpb_note_tuning(&b, "logic.backward");
    kpb_note_tuning(&b, "logic.eval_packed");
    kpb_note(&b, "layers: G gates over IN = G inputs (difflogic's random wiring, seed 42), N "
                 "samples, Gaussian logits; bytes: each used input row and each output once; "
                 "gather_gbs: the gathers' traffic (two input rows per gate, dx: dy and x per "
                 "CSR entry)");
    kpb_note(&b, "each row is checked against a host loop before it is reported");
    const int64_t sizes[][2] = {{64000, 1024}, {64000, 100}, {8000, 1024}, {8000, 100}};
    int failures = 0;
    for (size_t i = b.quick ? 2 : 0; i < 4; i++)
        failures += bench_layer(&b, sizes[i][0], sizes[i][1]);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
