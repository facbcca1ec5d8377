/*
 * bench-tensor: the tensor family at issue #23's sizes: add with a broadcast row, exp, and sum over
 * the last and over the first axis. Each row is checked against a host loop in double before it
 * is reported. The peers are Python (NumPy and PyTorch on the CPU, PyTorch on CUDA):
 * bench/peers/peer-tensor.py runs this program with --dump DIR, times them on the inputs written
 * there and compares their results with Kernelport's, also written there.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The operands: a [N, N] (add's, and both sums' x), b [N] (add's broadcast row), x [M] (exp's). */
enum { OP_A, OP_B, OP_X, OP_Y, OP_N };
static const char *const operand_names[OP_N] = {"a", "b", "x", "y"};

typedef struct bench_tensor {
    kpb *b;
    int64_t N, M;
    float *host[OP_N]; /* inputs, then the output read back */
    kp_buffer *dev[OP_N];
    double *ref, *tol; /* per output element: the value in double and the error allowed */
    const char *dump;  /* --dump DIR, or NULL */
} bench_tensor;

/* Writes floats of the given shape as DIR/NAME.npy (NumPy's format 1.0, which Python reads
 * without NumPy as well). */
static int write_npy(const char *dir, const char *name, const float *v, const int64_t *shape,
                     int rank)
{
    char path[1024], dims[96] = "", header[160];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        size_t used = strlen(dims);
        snprintf(dims + used, sizeof dims - used, "%lld,%s", (long long)shape[d],
                 d + 1 < rank ? " " : "");
        n *= shape[d];
    }
    const uint16_t one = 1;
    const char *descr = *(const uint8_t *)&one ? "<f4" : ">f4";
    int len = snprintf(header, sizeof header,
                       "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    /* Magic, version, length and header take a multiple of 64 bytes; the header ends in '\n'. */
    const int pad = (64 - (10 + len + 1) % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "bench-tensor: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    const uint16_t hlen = (uint16_t)(len + pad + 1);
    const uint8_t lead[10] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(hlen & 0xff), (uint8_t)(hlen >> 8)};
    int bad = fwrite(lead, 1, sizeof lead, f) != sizeof lead;
    bad |= fprintf(f, "%s%*s\n", header, pad, "") < 0;
    bad |= fwrite(v, sizeof *v, (size_t)n, f) != (size_t)n;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "bench-tensor: cannot write %s\n", path);
    return bad;
}

/* The wall time of a launch and the wait for it: what a NumPy call's time compares with. */
static kp_status time_wall(kpb *b, kp_kernel *k, const kp_arg *args, size_t n, double *median)
{
    enum { MAX_RUNS = 200 };
    double t[MAX_RUNS], total = 0;
    int runs = 0;
    kp_status st = KP_OK;
    while (st == KP_OK && runs < MAX_RUNS && kpb_more_runs(b, runs, total)) {
        const double t0 = kpb_now();
        st = kp_kernel_launch(b->rt, k, args, n, NULL);
        if (st == KP_OK)
            st = kp_finish(b->rt);
        t[runs] = kpb_now() - t0;
        total += t[runs++];
    }
    *median = kpb_median(t, (size_t)runs);
    return st;
}

/*
 * Times `kernel`, reads y back and checks it against s->ref within s->tol, element by element: a
 * wrong result is reported as such, never as a speed. `tag` starts the case name and names the
 * dump of the output (DIR/TAG.npy). Returns 1 when the row failed.
 */
static int time_row(bench_tensor *s, const char *tag, const char *shape, const char *kernel,
                    const kp_arg *args, size_t n_args, const int64_t *y_shape, int y_rank,
                    double bytes)
{
    kpb *b = s->b;
    char name[160], note[300] = "";
    snprintf(name, sizeof name, "%s %s", tag, shape);
    kpb_row row = {.case_name = name, .ours = (char *)kernel, .bytes = bytes};
    size_t count = 1;
    for (int d = 0; d < y_rank; d++)
        count *= (size_t)y_shape[d];
    kp_kernel *k;
    double wall = 0;
    kp_status st = kp_kernel_find(b->rt, kernel, &k);
    if (st == KP_OK)
        st = kpb_time_kernel(b, k, args, n_args, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK)
        st = time_wall(b, k, args, n_args, &wall);
    if (st == KP_OK)
        st = kp_buffer_read(b->rt, s->dev[OP_Y], 0, count * sizeof(float), s->host[OP_Y]);
    double err = 0, ref_max = 0, worst = 0; /* worst: the largest error / its bound */
    for (size_t i = 0; st == KP_OK && i < count; i++) {
        const float v = s->host[OP_Y][i];
        const double e = isnan(v) ? INFINITY : fabs(v - s->ref[i]);
        err = fmax(err, e);
        ref_max = fmax(ref_max, fabs(s->ref[i]));
        worst = fmax(worst, e / s->tol[i]);
    }
    if (st != KP_OK) {
        snprintf(note, sizeof note, "%s", kp_last_error(b->rt));
        row.status = st, row.ours_s = 0;
    } else if (!(worst <= 1)) {
        snprintf(note, sizeof note,
                 "!! WRONG RESULT: an error %.3g times its bound (max |device - host| %.3g)", worst,
                 err);
        row.status = KP_ERR_VERIFY, row.ours_s = 0;
    }
    if (row.status == KP_OK)
        kpb_row_metric(&row, "wall_s", wall);
    kpb_row_metric(&row, "max_abs_err", err);
    kpb_row_metric(&row, "max_rel_err", ref_max > 0 ? err / ref_max : err);
    kpb_row_metric(&row, "max_err_over_bound", worst);
    row.note = note[0] ? note : NULL;
    kpb_add(b, &row);
    if (st == KP_OK && s->dump)
        return write_npy(s->dump, tag, s->host[OP_Y], y_shape, y_rank) || row.status != KP_OK;
    return row.status != KP_OK;
}

static kp_tensor tensor_of(const bench_tensor *s, int op, int rank, int64_t n0, int64_t n1)
{
    return rank == 1 ? kp_tensor_1d(s->dev[op], KP_F32, n0)
                     : kp_tensor_2d(s->dev[op], KP_F32, n0, n1);
}

/* y = a + b, b [N] broadcast over a's rows. Both sides round the exact sum once. */
static int bench_add(bench_tensor *s)
{
    const size_t N = (size_t)s->N;
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++) {
            s->ref[i * N + j] = (double)s->host[OP_A][i * N + j] + s->host[OP_B][j];
            s->tol[i * N + j] = 0x1p-24 * fabs(s->ref[i * N + j]) + FLT_MIN;
        }
    kp_arg args[] = {KP_ARG_TENSOR("a", tensor_of(s, OP_A, 2, s->N, s->N)),
                     KP_ARG_TENSOR("b", tensor_of(s, OP_B, 1, s->N, 0)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 2, s->N, s->N))};
    char shape[96];
    snprintf(shape, sizeof shape, "[%lld,%lld]+[%lld]", (long long)s->N, (long long)s->N,
             (long long)s->N);
    const int64_t y_shape[] = {s->N, s->N};
    return time_row(s, "add", shape, "tensor.add", args, 3, y_shape, 2,
                    4.0 * (2.0 * (double)N * (double)N + (double)N));
}

/* y = exp(x): OpenCL allows exp 3 ulp; the bound is 4 ulp of the exact value. */
static int bench_exp(bench_tensor *s)
{
    const size_t M = (size_t)s->M;
    for (size_t i = 0; i < M; i++) {
        s->ref[i] = exp((double)s->host[OP_X][i]);
        s->tol[i] = 4 * 0x1p-23 * s->ref[i];
    }
    kp_arg args[] = {KP_ARG_TENSOR("x", tensor_of(s, OP_X, 1, s->M, 0)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->M, 0))};
    char shape[64];
    snprintf(shape, sizeof shape, "[%lld]", (long long)s->M);
    const int64_t y_shape[] = {s->M};
    return time_row(s, "exp", shape, "tensor.exp", args, 2, y_shape, 1, 8.0 * (double)M);
}

/* y = the sum of a [N, N] over axis `axis` (y [N], not keepdim). Any order of n float additions
 * errs by at most n 2^-24 times the sum of the terms' magnitudes. */
static int bench_sum(bench_tensor *s, int axis)
{
    const size_t N = (size_t)s->N;
    for (size_t o = 0; o < N; o++) {
        double sum = 0, mag = 0;
        for (size_t r = 0; r < N; r++) {
            const double v = s->host[OP_A][axis == 1 ? o * N + r : r * N + o];
            sum += v;
            mag += fabs(v);
        }
        s->ref[o] = sum;
        s->tol[o] = (double)N * 0x1p-24 * mag + FLT_MIN;
    }
    kp_arg args[] = {KP_ARG_TENSOR("x", tensor_of(s, OP_A, 2, s->N, s->N)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->N, 0)),
                     KP_ARG_INT("axes", (int64_t)1 << axis)};
    char shape[96];
    snprintf(shape, sizeof shape, "[%lld,%lld] axis %d", (long long)s->N, (long long)s->N, axis);
    const int64_t y_shape[] = {s->N};
    return time_row(s, axis == 1 ? "sum_last" : "sum_first", shape, "tensor.sum", args, 3, y_shape,
                    1, 4.0 * ((double)N * (double)N + (double)N));
}

/* Host inputs (uniform in [-1, 1), one seed per operand), their device copies, and the dumps.
 * On failure *why says what failed. */
static kp_status setup(bench_tensor *s, const char **why)
{
    const size_t NN = (size_t)(s->N * s->N), M = (size_t)s->M, big = NN > M ? NN : M;
    const size_t counts[OP_N] = {NN, (size_t)s->N, M, big};
    for (int i = 0; i < OP_N; i++) {
        s->host[i] = malloc(counts[i] * sizeof(float));
        if (!s->host[i]) {
            *why = "out of host memory";
            return KP_ERR_OUT_OF_MEMORY;
        }
        kpb_fill(s->host[i], counts[i], (uint64_t)i + 1);
        kp_status st = kp_buffer_create(s->b->rt, counts[i] * sizeof(float), &s->dev[i]);
        if (st == KP_OK && i != OP_Y)
            st = kp_buffer_write(s->b->rt, s->dev[i], 0, counts[i] * sizeof(float), s->host[i]);
        if (st != KP_OK) {
            *why = kp_last_error(s->b->rt);
            return st;
        }
    }
    s->ref = malloc(big * sizeof *s->ref);
    s->tol = malloc(big * sizeof *s->tol);
    if (!s->ref || !s->tol) {
        *why = "out of host memory";
        return KP_ERR_OUT_OF_MEMORY;
    }
    const int64_t a[] = {s->N, s->N}, b[] = {s->N}, x[] = {s->M};
    if (s->dump && (write_npy(s->dump, operand_names[OP_A], s->host[OP_A], a, 2) ||
                    write_npy(s->dump, operand_names[OP_B], s->host[OP_B], b, 1) ||
                    write_npy(s->dump, operand_names[OP_X], s->host[OP_X], x, 1))) {
        *why = "cannot write the dump (above)";
        return KP_ERR_IO;
    }
    return KP_OK;
}

static void teardown(bench_tensor *s)
{
    for (int i = 0; i < OP_N; i++) {
        free(s->host[i]);
        kp_buffer_destroy(s->b->rt, s->dev[i]);
    }
    free(s->ref);
    free(s->tol);
}

int main(int argc, char **argv)
{
    kpb b;
    bench_tensor s = {.b = &b};
    const kpb_flag flags[] = {
        {"--dump", "write the inputs and Kernelport's outputs as DIR/<name>.npy (for the peers)",
         NULL, &s.dump},
        {NULL, NULL, NULL, NULL},
    };
    kpb_open_flags(&b, "bench-tensor", argc, argv, flags);
    /* --quick: sizes a 2-core CPU runs in seconds, else issue #23's GPU sizes. Both are timed by
     * the harness's full rule (at least 10 runs and 0.3 s): at the small sizes that still takes
     * seconds, and fewer runs left the medians at the mercy of a shared machine's other work. */
    s.N = b.quick ? 1024 : 4096;
    s.M = b.quick ? 1 << 20 : 1 << 24;
    b.quick = 0;
    b.max_case_s = 2.0;
    kpb_note_tuning(&b, "tensor.add");
    kpb_note_tuning(&b, "tensor.exp");
    kpb_note_tuning(&b, "tensor.sum");
    kpb_note(&b, "inputs uniform in [-1, 1); bytes: each input read once and the output written "
                 "once; wall_s: launch and wait, from the host");
    kpb_note(&b, "each row is checked against a host loop in double (add: 1/2 ulp, exp: 4 ulp, "
                 "sum: n 2^-24 sum |x|) before it is reported");
    kpb_note(&b, "not built yet, so not timed: permute [64,128,56,56]->(0,2,3,1), softmax "
                 "[4096,4096], cross-entropy fwd+bwd [8192,1000], AdamW over 100 tensors "
                 "(25M parameters)");
    int failures = 0;
    const char *why = "";
    kp_status st = setup(&s, &why);
    if (st != KP_OK) {
        kpb_note(&b, "!! setup failed: %s (%s)", kp_status_name(st), why);
        failures = 1;
    } else {
        failures += bench_add(&s);
        failures += bench_exp(&s);
        failures += bench_sum(&s, 1);
        failures += bench_sum(&s, 0);
    }
    teardown(&s);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    const int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
