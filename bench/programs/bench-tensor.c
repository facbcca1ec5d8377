/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-tensor: the tensor family at issue #23's sizes (--quick: sizes a 2-core CPU runs in
 * seconds): add with a broadcast row, exp, the sums over the last and over the first axis, a
 * permute (tensor.copy of a permuted view), softmax, cross-entropy forward and backward (the fused
 * kernel and the launches it makes), AdamW over 100 tensors (optim.adamw over an arena), and the
 * rows beside them: fill, uniform, and mul's backward with a broadcast operand. Each row is
 * checked against a host loop in double before it is reported. The peers are Python (NumPy and
 * PyTorch on the CPU, PyTorch on CUDA): bench/peers/peer-tensor.py runs this program with --dump
 * DIR, times them on the inputs written there and compares their results with Kernelport's, also
 * written there.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernelport/ops/random.h"
#include "optim-model.h"

/* The operands the first rows share: a [N, N] (add's, the sums', softmax's and mul's a), b [N]
 * (the broadcast row), x [M] (exp's input, mul's dy as [N, N]), y (every row's output). M = N^2. */
enum { OP_A, OP_B, OP_X, OP_Y, OP_N };
static const char *const operand_names[OP_N] = {"a", "b", "x", "y"};

typedef struct bench_tensor {
    kpb *b;
    int64_t N, M;
    int64_t perm[4];    /* permute's input [B, C, H, W] */
    int64_t rows, cols; /* cross-entropy's logits */
    int64_t params;     /* AdamW's parameters */
    float *host[OP_N];  /* inputs, then the output read back */
    kp_buffer *dev[OP_N];
    const char *dump; /* --dump DIR, or NULL */
} bench_tensor;

/* One output a row checks: read back from `dev` after the first launch, compared element by
 * element with ref within tol, and dumped as DIR/NAME.npy. */
typedef struct output {
    const char *name;
    kp_buffer *dev;
    float *host; /* count floats */
    int64_t shape[4];
    int rank;
    double *ref, *tol; /* count each */
} output;

static size_t output_count(const output *o)
{
    size_t n = 1;
    for (int d = 0; d < o->rank; d++)
        n *= (size_t)o->shape[d];
    return n;
}

/* Writes `rank` extents of `v` (4-byte elements: float, or int32 where `ints`) as DIR/NAME.npy
 * (NumPy's format 1.0, which Python reads without NumPy as well). */
static int write_npy(const char *dir, const char *name, const void *v, int ints,
                     const int64_t *shape, int rank)
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
    const int little = *(const uint8_t *)&one;
    const char *descr = ints ? (little ? "<i4" : ">i4") : little ? "<f4" : ">f4";
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
    bad |= fwrite(v, 4, (size_t)n, f) != (size_t)n;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "bench-tensor: cannot write %s\n", path);
    return bad;
}

/* Dumps an input when --dump asks; 0 or 1 (failed, said on stderr). */
static int dump_input(const bench_tensor *s, const char *name, const void *v, int ints,
                      const int64_t *shape, int rank)
{
    return s->dump ? write_npy(s->dump, name, v, ints, shape, rank) : 0;
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
 * Launches `kernel` once, reads each output back and checks it against its reference, element
 * by element (a wrong result is reported as such, never as a speed), then times the launch. The
 * check comes first so that a kernel that updates its operands (AdamW) is checked on one step
 * from the inputs dumped. `tag` starts the case name. Returns 1 when the row failed.
 */
static int run_row(bench_tensor *s, const char *tag, const char *shape, const char *kernel,
                   const kp_arg *args, size_t n_args, output *outs, int n_outs, double bytes)
{
    kpb *b = s->b;
    char name[160], note[300] = "";
    snprintf(name, sizeof name, "%s %s", tag, shape);
    kpb_row row = {.case_name = name, .ours = (char *)kernel, .bytes = bytes};
    kp_kernel *k;
    double wall = 0, err = 0, ref_max = 0, worst = 0; /* worst: the largest error / its bound */
    kp_status st = kp_kernel_find(b->rt, kernel, &k);
    if (st == KP_OK)
        st = kp_kernel_launch(b->rt, k, args, n_args, NULL);
    for (int j = 0; j < n_outs && st == KP_OK; j++) {
        const output *o = &outs[j];
        const size_t count = output_count(o);
        st = kp_buffer_read(b->rt, o->dev, 0, count * sizeof(float), o->host);
        for (size_t i = 0; st == KP_OK && i < count; i++) {
            const float v = o->host[i];
            const double e = isnan(v) ? INFINITY : fabs(v - o->ref[i]);
            err = fmax(err, e);
            ref_max = fmax(ref_max, fabs(o->ref[i]));
            worst = fmax(worst, e / o->tol[i]);
        }
    }
    if (st == KP_OK && worst <= 1)
        st = kpb_time_kernel(b, k, args, n_args, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (st == KP_OK && worst <= 1)
        st = time_wall(b, k, args, n_args, &wall);
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
    int bad = row.status != KP_OK;
    for (int j = 0; j < n_outs && st == KP_OK && s->dump; j++)
        bad |= write_npy(s->dump, outs[j].name, outs[j].host, 0, outs[j].shape, outs[j].rank);
    return bad;
}

/* An output's reference and bound arrays, and its host copy unless given; NULL on failure. */
static output *output_alloc(output *o, float *host)
{
    const size_t n = output_count(o);
    o->host = host ? host : malloc(n * sizeof(float));
    o->ref = malloc(n * sizeof(double));
    o->tol = malloc(n * sizeof(double));
    return o->host && o->ref && o->tol ? o : NULL;
}

static void output_free(output *o, int own_host)
{
    if (own_host)
        free(o->host);
    free(o->ref);
    free(o->tol);
}

/* A failed allocation or buffer: the row is recorded as failed with why. */
static int fail_row(bench_tensor *s, const char *tag, const char *kernel, kp_status st,
                    const char *why)
{
    char name[64];
    snprintf(name, sizeof name, "%s", tag);
    kpb_row row = {.case_name = name, .ours = (char *)kernel, .status = st, .note = (char *)why};
    kpb_add(s->b, &row);
    return 1;
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
    output y = {"add", s->dev[OP_Y], NULL, {s->N, s->N}, 2, NULL, NULL};
    if (!output_alloc(&y, s->host[OP_Y]))
        return fail_row(s, "add", "tensor.add", KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++) {
            y.ref[i * N + j] = (double)s->host[OP_A][i * N + j] + s->host[OP_B][j];
            y.tol[i * N + j] = 0x1p-24 * fabs(y.ref[i * N + j]) + FLT_MIN;
        }
    kp_arg args[] = {KP_ARG_TENSOR("a", tensor_of(s, OP_A, 2, s->N, s->N)),
                     KP_ARG_TENSOR("b", tensor_of(s, OP_B, 1, s->N, 0)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 2, s->N, s->N))};
    char shape[96];
    snprintf(shape, sizeof shape, "[%lld,%lld]+[%lld]", (long long)s->N, (long long)s->N,
             (long long)s->N);
    int bad = run_row(s, "add", shape, "tensor.add", args, 3, &y, 1,
                      4.0 * (2.0 * (double)N * (double)N + (double)N));
    output_free(&y, 0);
    return bad;
}

/* y = exp(x): OpenCL allows exp 3 ulp; the bound is 4 ulp of the exact value. */
static int bench_exp(bench_tensor *s)
{
    const size_t M = (size_t)s->M;
    output y = {"exp", s->dev[OP_Y], NULL, {s->M}, 1, NULL, NULL};
    if (!output_alloc(&y, s->host[OP_Y]))
        return fail_row(s, "exp", "tensor.exp", KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < M; i++) {
        y.ref[i] = exp((double)s->host[OP_X][i]);
        y.tol[i] = 4 * 0x1p-23 * y.ref[i];
    }
    kp_arg args[] = {KP_ARG_TENSOR("x", tensor_of(s, OP_X, 1, s->M, 0)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->M, 0))};
    char shape[64];
    snprintf(shape, sizeof shape, "[%lld]", (long long)s->M);
    int bad = run_row(s, "exp", shape, "tensor.exp", args, 2, &y, 1, 8.0 * (double)M);
    output_free(&y, 0);
    return bad;
}

/* y = the sum of a [N, N] over axis `axis` (y [N], not keepdim). Any order of n float additions
 * errs by at most n 2^-24 times the sum of the terms' magnitudes. */
static int bench_sum(bench_tensor *s, int axis)
{
    const size_t N = (size_t)s->N;
    const char *tag = axis == 1 ? "sum_last" : "sum_first";
    output y = {tag, s->dev[OP_Y], NULL, {s->N}, 1, NULL, NULL};
    if (!output_alloc(&y, s->host[OP_Y]))
        return fail_row(s, tag, "tensor.sum", KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t o = 0; o < N; o++) {
        double sum = 0, mag = 0;
        for (size_t r = 0; r < N; r++) {
            const double v = s->host[OP_A][axis == 1 ? o * N + r : r * N + o];
            sum += v;
            mag += fabs(v);
        }
        y.ref[o] = sum;
        y.tol[o] = (double)N * 0x1p-24 * mag + FLT_MIN;
    }
    kp_arg args[] = {KP_ARG_TENSOR("x", tensor_of(s, OP_A, 2, s->N, s->N)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->N, 0)),
                     KP_ARG_INT("axes", (int64_t)1 << axis)};
    char shape[96];
    snprintf(shape, sizeof shape, "[%lld,%lld] axis %d", (long long)s->N, (long long)s->N, axis);
    int bad = run_row(s, tag, shape, "tensor.sum", args, 3, &y, 1,
                      4.0 * ((double)N * (double)N + (double)N));
    output_free(&y, 0);
    return bad;
}

/* A host array of n floats uniform in [-scale, scale) (`seed`) and its device copy. */
static kp_status array_new(bench_tensor *s, size_t n, uint64_t seed, float scale, float **host,
                           kp_buffer **dev)
{
    *host = malloc(n * sizeof(float));
    *dev = NULL;
    if (!*host)
        return KP_ERR_OUT_OF_MEMORY;
    kpb_fill(*host, n, seed);
    for (size_t i = 0; scale != 1.0f && i < n; i++)
        (*host)[i] *= scale;
    kp_status st = kp_buffer_create(s->b->rt, n * sizeof(float), dev);
    return st == KP_OK ? kp_buffer_write(s->b->rt, *dev, 0, n * sizeof(float), *host) : st;
}

/* y [B, H, W, C] = x [B, C, H, W] permuted (0, 2, 3, 1): tensor.copy of x's permuted view, as
 * PyTorch's x.permute(0, 2, 3, 1).contiguous(). Exact. */
static int bench_permute(bench_tensor *s)
{
    const int64_t B = s->perm[0], C = s->perm[1], H = s->perm[2], W = s->perm[3];
    const size_t n = (size_t)(B * C * H * W);
    float *x = NULL;
    kp_buffer *xd = NULL, *yd = NULL;
    output y = {"permute", NULL, NULL, {B, H, W, C}, 4, NULL, NULL};
    kp_status st = array_new(s, n, 5, 1.0f, &x, &xd);
    if (st == KP_OK)
        st = kp_buffer_create(s->b->rt, n * sizeof(float), &yd);
    y.dev = yd;
    int bad;
    if (st != KP_OK || !output_alloc(&y, NULL)) {
        bad = fail_row(s, "permute", "tensor.copy", st == KP_OK ? KP_ERR_OUT_OF_MEMORY : st,
                       st == KP_OK ? "out of host memory" : kp_last_error(s->b->rt));
    } else {
        for (int64_t b = 0; b < B; b++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t w = 0; w < W; w++) {
                        const size_t to = (size_t)(((b * H + h) * W + w) * C + c);
                        y.ref[to] = x[((b * C + c) * H + h) * W + w];
                        y.tol[to] = FLT_MIN;
                    }
        kp_tensor xv = kp_tensor_nd(xd, KP_F32, 4, y.shape);
        const int64_t strides[4] = {C * H * W, W, 1, H * W};
        memcpy(xv.strides, strides, sizeof strides);
        kp_arg args[] = {KP_ARG_TENSOR("x", xv),
                         KP_ARG_TENSOR("y", kp_tensor_nd(yd, KP_F32, 4, y.shape))};
        char shape[96];
        snprintf(shape, sizeof shape, "[%lld,%lld,%lld,%lld]->(0,2,3,1)", (long long)B,
                 (long long)C, (long long)H, (long long)W);
        bad = dump_input(s, "permute_x", x, 0, s->perm, 4);
        bad |= run_row(s, "permute", shape, "tensor.copy", args, 2, &y, 1, 8.0 * (double)n);
    }
    output_free(&y, 1);
    free(x);
    kp_buffer_destroy(s->b->rt, xd);
    kp_buffer_destroy(s->b->rt, yd);
    return bad;
}

/* y = softmax of a's rows. Against the exact value, in units of 2^-24 y: the exponent's argument
 * rounded once (its magnitude at most 2), exp's 4 ulp, the row sum's C and the division's one:
 * (C + 16) 2^-24 y. */
static int bench_softmax(bench_tensor *s)
{
    const size_t N = (size_t)s->N;
    output y = {"softmax", s->dev[OP_Y], NULL, {s->N, s->N}, 2, NULL, NULL};
    if (!output_alloc(&y, s->host[OP_Y]))
        return fail_row(s, "softmax", "tensor.softmax", KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < N; i++) {
        const float *x = s->host[OP_A] + i * N;
        double m = -INFINITY, sum = 0;
        for (size_t j = 0; j < N; j++)
            m = fmax(m, x[j]);
        for (size_t j = 0; j < N; j++)
            sum += exp(x[j] - m);
        for (size_t j = 0; j < N; j++) {
            y.ref[i * N + j] = exp(x[j] - m) / sum;
            y.tol[i * N + j] = ((double)N + 16) * 0x1p-24 * y.ref[i * N + j] + FLT_MIN;
        }
    }
    kp_arg args[] = {KP_ARG_TENSOR("x", tensor_of(s, OP_A, 2, s->N, s->N)),
                     KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 2, s->N, s->N))};
    char shape[64];
    snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)s->N, (long long)s->N);
    int bad =
        run_row(s, "softmax", shape, "tensor.softmax", args, 2, &y, 1, 8.0 * (double)N * (double)N);
    output_free(&y, 0);
    return bad;
}

/*
 * loss = the mean over rows of logsumexp(x) - x[label], and dlogits = (softmax(x) - onehot) /
 * rows, in one call (tensor.cross_entropy: its fused pass and the launches it makes). Logits
 * uniform in [-4, 4), label r = (7919 r + 13) mod C. Bounds, as softmax's with arguments up to 8
 * in magnitude: dlogits (C + 32) 2^-24 (p + onehot) / rows; the loss (C + 32) 2^-24 times each
 * row's |max| + |log sum| + |x[label]|, averaged, plus rows 2^-24 times the mean of |row loss|
 * (the sum of the rows).
 */
static int bench_cross_entropy(bench_tensor *s)
{
    const int64_t R = s->rows, C = s->cols;
    const size_t n = (size_t)(R * C);
    float *x = NULL;
    int32_t *labels = malloc((size_t)R * sizeof(int32_t));
    kp_buffer *xd = NULL, *ld = NULL, *dd = NULL, *lossd = NULL;
    output outs[2] = {{"cross_entropy_loss", NULL, NULL, {0}, 0, NULL, NULL},
                      {"cross_entropy_dlogits", NULL, NULL, {R, C}, 2, NULL, NULL}};
    kp_status st = labels ? array_new(s, n, 6, 4.0f, &x, &xd) : KP_ERR_OUT_OF_MEMORY;
    for (int64_t r = 0; labels && r < R; r++)
        labels[r] = (int32_t)((7919 * r + 13) % C);
    if (st == KP_OK)
        st = kp_buffer_create(s->b->rt, (size_t)R * sizeof(int32_t), &ld);
    if (st == KP_OK)
        st = kp_buffer_write(s->b->rt, ld, 0, (size_t)R * sizeof(int32_t), labels);
    if (st == KP_OK)
        st = kp_buffer_create(s->b->rt, n * sizeof(float), &dd);
    if (st == KP_OK)
        st = kp_buffer_create(s->b->rt, sizeof(float), &lossd);
    outs[0].dev = lossd;
    outs[1].dev = dd;
    int bad;
    if (st != KP_OK || !output_alloc(&outs[0], NULL) || !output_alloc(&outs[1], NULL)) {
        bad = fail_row(s, "cross_entropy", "tensor.cross_entropy",
                       st == KP_OK ? KP_ERR_OUT_OF_MEMORY : st,
                       st == KP_OK ? "out of host memory" : kp_last_error(s->b->rt));
    } else {
        double total = 0, mag = 0, loss_mag = 0;
        for (int64_t r = 0; r < R; r++) {
            const float *xr = x + r * C;
            double m = -INFINITY, sum = 0;
            for (int64_t c = 0; c < C; c++)
                m = fmax(m, xr[c]);
            for (int64_t c = 0; c < C; c++)
                sum += exp(xr[c] - m);
            const double loss = m + log(sum) - xr[labels[r]];
            total += loss;
            mag += fabs(m) + fabs(log(sum)) + fabs(xr[labels[r]]);
            loss_mag += fabs(loss);
            for (int64_t c = 0; c < C; c++) {
                const double p = exp(xr[c] - m) / sum, hot = c == labels[r];
                outs[1].ref[r * C + c] = (p - hot) / (double)R;
                outs[1].tol[r * C + c] =
                    ((double)C + 32) * 0x1p-24 * (p + hot) / (double)R + FLT_MIN;
            }
        }
        outs[0].ref[0] = total / (double)R;
        outs[0].tol[0] = 0x1p-24 * (((double)C + 32) * mag + (double)R * loss_mag) / (double)R;
        const int64_t lshape[1] = {R};
        kp_arg args[] = {KP_ARG_TENSOR("logits", kp_tensor_2d(xd, KP_F32, R, C)),
                         KP_ARG_TENSOR("labels", kp_tensor_1d(ld, KP_I32, R)),
                         KP_ARG_TENSOR("loss", kp_tensor_nd(lossd, KP_F32, 0, NULL)),
                         KP_ARG_TENSOR("dlogits", kp_tensor_2d(dd, KP_F32, R, C))};
        char shape[96];
        snprintf(shape, sizeof shape, "[%lld,%lld] fwd+bwd", (long long)R, (long long)C);
        bad = dump_input(s, "logits", x, 0, outs[1].shape, 2);
        bad |= dump_input(s, "labels", labels, 1, lshape, 1);
        bad |= run_row(s, "cross_entropy", shape, "tensor.cross_entropy", args, 4, outs, 2,
                       8.0 * (double)n + 4.0 * (double)R);
    }
    for (int j = 0; j < 2; j++)
        output_free(&outs[j], 1);
    free(x);
    free(labels);
    kp_buffer *bufs[] = {xd, ld, dd, lossd};
    for (int i = 0; i < 4; i++)
        kp_buffer_destroy(s->b->rt, bufs[i]);
    return bad;
}

/*
 * One AdamW step (optim.adamw over the arena of bench-optim's model, step 1) against the step in
 * double from the same state with the same hyperparameters. Bound: 2^-24 (2 |p| + 16 t), the decay
 * and the subtraction rounding p, and t = step_size (|m| + |g| + |m'|) / denominator the update's
 * terms, for the dozen float operations and hyperparameters rounded to float that make it.
 */
static int bench_adamw(bench_tensor *s)
{
    optim_arena a = {.total = s->params};
    const size_t cap = (size_t)(a.total + 4 * OPTIM_TENSORS);
    float *h[4] = {malloc(cap * 4), malloc(cap * 4), malloc(cap * 4), malloc(cap * 4)};
    output p = {"adamw", NULL, NULL, {0}, 1, NULL, NULL};
    kp_status st =
        h[0] && h[1] && h[2] && h[3] ? optim_arena_init(s->b, &a, h[0]) : KP_ERR_OUT_OF_MEMORY;
    kp_buffer *bufs[4] = {a.p, a.g, a.m, a.v};
    for (int i = 0; i < 4 && st == KP_OK; i++)
        st = kp_buffer_read(s->b->rt, bufs[i], 0, (size_t)a.n * 4, h[i]);
    p.shape[0] = a.n;
    p.dev = a.p;
    int bad;
    if (st != KP_OK || !output_alloc(&p, NULL)) {
        bad = fail_row(s, "adamw", "optim.adamw", st == KP_OK ? KP_ERR_OUT_OF_MEMORY : st,
                       st == KP_OK ? "out of host memory" : kp_last_error(s->b->rt));
    } else {
        const double step_size = OPTIM_LR / (1 - OPTIM_BETA1), bc2 = sqrt(1 - OPTIM_BETA2);
        for (int64_t i = 0; i < a.n; i++) {
            const double x = h[0][i], g = h[1][i], m0 = h[2][i], v0 = h[3][i];
            const double m = OPTIM_BETA1 * m0 + (1 - OPTIM_BETA1) * g;
            const double v = OPTIM_BETA2 * v0 + (1 - OPTIM_BETA2) * g * g;
            const double den = sqrt(v) / bc2 + OPTIM_EPS;
            p.ref[i] = x * (1 - OPTIM_LR * OPTIM_WD) - step_size * m / den;
            p.tol[i] =
                0x1p-24 * (2 * fabs(x) + 16 * step_size * (fabs(m0) + fabs(g) + fabs(m)) / den) +
                FLT_MIN;
        }
        kp_arg args[] = {kp_arg_tensor("param", kp_tensor_1d(a.p, KP_F32, a.n)),
                         kp_arg_tensor("grad", kp_tensor_1d(a.g, KP_F32, a.n)),
                         kp_arg_tensor("exp_avg", kp_tensor_1d(a.m, KP_F32, a.n)),
                         kp_arg_tensor("exp_avg_sq", kp_tensor_1d(a.v, KP_F32, a.n)),
                         kp_arg_int("step", 1),
                         kp_arg_float("lr", OPTIM_LR),
                         kp_arg_float("beta1", OPTIM_BETA1),
                         kp_arg_float("beta2", OPTIM_BETA2),
                         kp_arg_float("eps", OPTIM_EPS),
                         kp_arg_float("weight_decay", OPTIM_WD)};
        const char *names[4] = {"adamw_p", "adamw_g", "adamw_m", "adamw_v"};
        const int64_t seg_shape[2] = {OPTIM_TENSORS, 2};
        bad = 0;
        for (int i = 0; i < 4; i++)
            bad |= dump_input(s, names[i], h[i], 0, p.shape, 1);
        bad |= dump_input(s, "adamw_segments", a.seg, 1, seg_shape, 2);
        char shape[96];
        snprintf(shape, sizeof shape, "%d tensors, %.1fM params", OPTIM_TENSORS,
                 (double)a.total / 1e6);
        bad |= run_row(s, "adamw", shape, "optim.adamw", args, 10, &p, 1, 28.0 * (double)a.total);
    }
    output_free(&p, 1);
    for (int i = 0; i < 4; i++)
        free(h[i]);
    if (a.p)
        optim_arena_fini(s->b, &a);
    return bad;
}

/* y = 1.5 (tensor.fill) or uniform in [0, 1) (tensor.uniform, seed 7): both exact, the uniform
 * numbers kp_random_uniform's. */
static int bench_generate(bench_tensor *s, int uniform)
{
    const size_t M = (size_t)s->M;
    const char *tag = uniform ? "uniform" : "fill";
    char kernel[32];
    snprintf(kernel, sizeof kernel, "tensor.%s", tag);
    output y = {tag, s->dev[OP_Y], NULL, {s->M}, 1, NULL, NULL};
    if (!output_alloc(&y, s->host[OP_Y]))
        return fail_row(s, tag, kernel, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < M; i++) {
        y.ref[i] = uniform ? kp_random_uniform(7, 0, i) : 1.5;
        y.tol[i] = FLT_MIN;
    }
    kp_arg fill_args[] = {KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->M, 0)),
                          kp_arg_float("value", 1.5)};
    kp_arg uniform_args[] = {KP_ARG_TENSOR("y", tensor_of(s, OP_Y, 1, s->M, 0)),
                             kp_arg_int("seed", 7)};
    char shape[64];
    snprintf(shape, sizeof shape, "[%lld]", (long long)s->M);
    int bad = run_row(s, tag, shape, kernel, uniform ? uniform_args : fill_args, 2, &y, 1,
                      4.0 * (double)M);
    output_free(&y, 0);
    return bad;
}

/* mul's backward with b [N] broadcast over a [N, N]: da = dy b, db = the sum over rows of dy a
 * (dy: x as [N, N]). da rounds once; db sums N rounded products: (N + 1) ulp of sum |dy a|. */
static int bench_mul_backward(bench_tensor *s)
{
    const size_t N = (size_t)s->N;
    kp_buffer *dbd = NULL;
    output outs[2] = {{"mul_backward_da", s->dev[OP_Y], NULL, {s->N, s->N}, 2, NULL, NULL},
                      {"mul_backward_db", NULL, NULL, {s->N}, 1, NULL, NULL}};
    kp_status st = kp_buffer_create(s->b->rt, N * sizeof(float), &dbd);
    outs[1].dev = dbd;
    int bad;
    if (st != KP_OK || !output_alloc(&outs[0], s->host[OP_Y]) || !output_alloc(&outs[1], NULL)) {
        bad = fail_row(s, "mul_backward", "tensor.mul_backward",
                       st == KP_OK ? KP_ERR_OUT_OF_MEMORY : st,
                       st == KP_OK ? "out of host memory" : kp_last_error(s->b->rt));
    } else {
        const float *dy = s->host[OP_X], *a = s->host[OP_A], *b = s->host[OP_B];
        for (size_t j = 0; j < N; j++)
            outs[1].ref[j] = outs[1].tol[j] = 0;
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < N; j++) {
                const double da = (double)dy[i * N + j] * b[j],
                             t = (double)dy[i * N + j] * a[i * N + j];
                outs[0].ref[i * N + j] = da;
                outs[0].tol[i * N + j] = 0x1p-24 * fabs(da) + FLT_MIN;
                outs[1].ref[j] += t;
                outs[1].tol[j] += fabs(t);
            }
        for (size_t j = 0; j < N; j++)
            outs[1].tol[j] = ((double)N + 1) * 0x1p-24 * outs[1].tol[j] + FLT_MIN;
        kp_arg args[] = {KP_ARG_TENSOR("dy", tensor_of(s, OP_X, 2, s->N, s->N)),
                         KP_ARG_TENSOR("a", tensor_of(s, OP_A, 2, s->N, s->N)),
                         KP_ARG_TENSOR("b", tensor_of(s, OP_B, 1, s->N, 0)),
                         KP_ARG_TENSOR("da", tensor_of(s, OP_Y, 2, s->N, s->N)),
                         KP_ARG_TENSOR("db", kp_tensor_1d(dbd, KP_F32, s->N))};
        char shape[96];
        snprintf(shape, sizeof shape, "[%lld,%lld]*[%lld]", (long long)s->N, (long long)s->N,
                 (long long)s->N);
        bad = run_row(s, "mul_backward", shape, "tensor.mul_backward", args, 5, outs, 2,
                      4.0 * (3.0 * (double)N * (double)N + 2.0 * (double)N));
    }
    output_free(&outs[0], 0);
    output_free(&outs[1], 1);
    kp_buffer_destroy(s->b->rt, dbd);
    return bad;
}

/* The shared operands (uniform in [-1, 1), one seed each), their device copies and dumps. On
 * failure *why says what failed. */
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
    const int64_t a[] = {s->N, s->N}, b[] = {s->N}, x[] = {s->M};
    if (dump_input(s, operand_names[OP_A], s->host[OP_A], 0, a, 2) ||
        dump_input(s, operand_names[OP_B], s->host[OP_B], 0, b, 1) ||
        dump_input(s, operand_names[OP_X], s->host[OP_X], 0, x, 1)) {
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
    s.M = s.N * s.N;
    const int64_t perm[2][4] = {{64, 128, 56, 56}, {16, 128, 28, 28}};
    memcpy(s.perm, perm[b.quick], sizeof s.perm);
    s.rows = b.quick ? 2048 : 8192;
    s.cols = 1000;
    s.params = b.quick ? 2500000 : 25000000;
    b.quick = 0;
    b.max_case_s = 2.0;
    const char *const kernels[] = {"tensor.add",         "tensor.exp",     "tensor.sum",
                                   "tensor.copy",        "tensor.softmax", "tensor.cross_entropy",
                                   "optim.adamw",        "tensor.fill",    "tensor.uniform",
                                   "tensor.mul_backward"};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        kpb_note_tuning(&b, kernels[i]);
    kpb_note(&b, "inputs uniform in [-1, 1) (logits in [-4, 4)); bytes: each input read once and "
                 "each output written once (AdamW: 28 per parameter); wall_s: launch and wait, "
                 "from the host");
    kpb_note(&b, "each row is checked against a host loop in double before it is reported (add, "
                 "mul_backward's da: 1/2 ulp; exp: 4 ulp; sums: n 2^-24 sum |x|; permute, fill, "
                 "uniform: exact; softmax: (C + 16) 2^-24 y; cross-entropy: (C + 32) 2^-24 of its "
                 "terms; AdamW: 2^-24 (2 |p| + 16 times the update's terms))");
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
        failures += bench_permute(&s);
        failures += bench_softmax(&s);
        failures += bench_cross_entropy(&s);
        failures += bench_adamw(&s);
        failures += bench_generate(&s, 0);
        failures += bench_generate(&s, 1);
        failures += bench_mul_backward(&s);
    }
    teardown(&s);
    if (failures)
        kpb_note(&b, "!! %d case(s) FAILED: see the rows marked !!", failures);
    const int rc = kpb_close(&b);
    return rc ? rc : failures ? 1 : 0;
}
