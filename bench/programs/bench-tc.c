/* SPDX-License-Identifier: Apache-2.0 */
/* bench-tc: tc.gemm in each precision, from f32 tensors and (f16, bf16) from 16-bit ones, against
 * CLBlast's FP32 GEMM (blas.gemm) on the same device, with each result's error against an FP64
 * product of sampled rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernelport/ops/tc.h"

static const char *const precision_names[] = {"tf32", "tf32x3", "f16", "bf16"};

/* Rows of C checked against FP64: enough to see each precision's error, cheap at n = 8192. */
#define CHECK_ROWS 8

typedef struct problem {
    int64_t m, n, k;
    float *a, *b, *c;
    kp_buffer *da, *db, *dc;
    double *ref; /* CHECK_ROWS rows of A B in FP64 */
} problem;

static void problem_free(kpb *b, problem *p)
{
    free(p->a), free(p->b), free(p->c), free(p->ref);
    kp_buffer_destroy(b->rt, p->da);
    kp_buffer_destroy(b->rt, p->db);
    kp_buffer_destroy(b->rt, p->dc);
}

static int64_t check_row(const problem *p, int i)
{
    return (int64_t)i * (p->m - 1) / (CHECK_ROWS - 1);
}

static kp_status problem_init(kpb *b, problem *p, uint64_t seed)
{
    size_t ak = (size_t)(p->m * p->k), kn = (size_t)(p->k * p->n), mn = (size_t)(p->m * p->n);
    p->a = malloc(ak * 4), p->b = malloc(kn * 4), p->c = malloc(mn * 4);
    p->ref = malloc(CHECK_ROWS * (size_t)p->n * sizeof(double));
    if (!p->a || !p->b || !p->c || !p->ref)
        return KP_ERR_OUT_OF_MEMORY;
    kpb_fill(p->a, ak, seed);
    kpb_fill(p->b, kn, seed + 1);
    kp_status st = kp_buffer_create(b->rt, ak * 4, &p->da);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, kn * 4, &p->db);
    if (st == KP_OK)
        st = kp_buffer_create(b->rt, mn * 4, &p->dc);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->da, 0, ak * 4, p->a);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, p->db, 0, kn * 4, p->b);
    double *row = calloc((size_t)p->n, sizeof *row);
    if (!row)
        return KP_ERR_OUT_OF_MEMORY;
    for (int r = 0; r < CHECK_ROWS; r++) {
        int64_t i = check_row(p, r);
        memset(row, 0, (size_t)p->n * sizeof *row);
        for (int64_t q = 0; q < p->k; q++) {
            double x = p->a[i * p->k + q];
            const float *brow = p->b + q * p->n;
            for (int64_t j = 0; j < p->n; j++)
                row[j] += x * brow[j];
        }
        memcpy(p->ref + (size_t)r * (size_t)p->n, row, (size_t)p->n * sizeof *row);
    }
    free(row);
    return st;
}

/* max |C - ref| / max |ref| over the checked rows of the device's C. */
static double relative_error(kpb *b, problem *p)
{
    size_t mn = (size_t)(p->m * p->n);
    if (kp_buffer_read(b->rt, p->dc, 0, mn * 4, p->c) != KP_OK)
        return NAN;
    double err = 0, top = 0;
    for (int r = 0; r < CHECK_ROWS; r++) {
        int64_t i = check_row(p, r);
        for (int64_t j = 0; j < p->n; j++) {
            double want = p->ref[(size_t)r * (size_t)p->n + (size_t)j];
            err = fmax(err, fabs(p->c[i * p->n + j] - want));
            top = fmax(top, fabs(want));
        }
    }
    return top > 0 ? err / top : err;
}

/* One row: tc.gemm timed on args (A and B of in_size bytes per value), its error against FP64. A
 * device without tensor cores gets a note instead, and the status says so. */
static kp_status time_row(kpb *b, kp_kernel *tc, const kp_arg *args, problem *p, char *name,
                          char *ours, double in_size, double peer_s, double peer_err)
{
    kpb_row row = {.case_name = name,
                   .ours = ours,
                   .peer = peer_s > 0 ? "CLBlast FP32 (blas.gemm, same device)" : NULL,
                   .peer_s = peer_s,
                   .flops = 2.0 * (double)p->m * (double)p->n * (double)p->k,
                   .bytes =
                       in_size * (double)(p->m * p->k + p->k * p->n) + 4.0 * (double)(p->m * p->n)};
    row.status = kpb_time_kernel(b, tc, args, 4, &row.ours_s, &row.ours_p10, &row.ours_p90);
    if (row.status == KP_ERR_UNSUPPORTED) {
        kpb_note(b, "%s: %s", name, kp_last_error(b->rt));
        return row.status;
    }
    if (row.status == KP_OK)
        kpb_row_metric(&row, "rel_err_vs_fp64", relative_error(b, p));
    else
        row.note = (char *)kp_last_error(b->rt);
    if (peer_s > 0)
        kpb_row_metric(&row, "peer_rel_err_vs_fp64", peer_err);
    kpb_add(b, &row);
    return row.status;
}

/* x as 16-bit values of `dtype` (f16 or bf16) in a new device buffer. */
static kp_status upload16(kpb *b, const float *x, size_t n, kp_dtype dtype, kp_buffer **out)
{
    uint16_t *h = malloc(n * 2);
    if (!h)
        return KP_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        h[i] = dtype == KP_F16 ? kp_half_from_float(x[i]) : kp_bf16_from_float(x[i]);
    kp_status st = kp_buffer_create(b->rt, n * 2, out);
    if (st == KP_OK)
        st = kp_buffer_write(b->rt, *out, 0, n * 2, h);
    free(h);
    return st;
}

/* tc.gemm on f16 and bf16 tensors, the inputs converted once outside the timing, as
 * peer-tc.py does for cuBLAS's half-precision GEMMs. */
static void run_tensors16(kpb *b, kp_kernel *tc, problem *p, char *name, double peer_s,
                          double peer_err)
{
    const kp_dtype dtypes[] = {KP_F16, KP_BF16};
    const int precs[] = {KP_TC_F16, KP_TC_BF16};
    for (int i = 0; i < 2; i++) {
        kp_buffer *da = NULL, *db = NULL;
        kp_status st = upload16(b, p->a, (size_t)(p->m * p->k), dtypes[i], &da);
        if (st == KP_OK)
            st = upload16(b, p->b, (size_t)(p->k * p->n), dtypes[i], &db);
        char ours[32];
        snprintf(ours, sizeof ours, "tc.gemm %s tensors", kp_dtype_name(dtypes[i]));
        kp_arg args[] = {KP_ARG_TENSOR("A", kp_tensor_2d(da, dtypes[i], p->m, p->k)),
                         KP_ARG_TENSOR("B", kp_tensor_2d(db, dtypes[i], p->k, p->n)),
                         KP_ARG_TENSOR("C", kp_tensor_2d(p->dc, KP_F32, p->m, p->n)),
                         KP_ARG_INT("precision", precs[i])};
        if (st == KP_OK)
            time_row(b, tc, args, p, name, ours, 2.0, peer_s, peer_err);
        else
            kpb_note(b, "%s: %s: setup failed (%s)", name, ours, kp_last_error(b->rt));
        kp_buffer_destroy(b->rt, da);
        kp_buffer_destroy(b->rt, db);
    }
}

static void run_case(kpb *b, kp_kernel *tc, kp_kernel *gemm, const char *label, int64_t m,
                     int64_t n, int64_t k, const int *precisions, int n_prec)
{
    problem p = {.m = m, .n = n, .k = k};
    char name[96];
    snprintf(name, sizeof name, "%s %lldx%lldx%lld", label, (long long)m, (long long)n,
             (long long)k);
    if (problem_init(b, &p, (uint64_t)(m * 31 + n * 7 + k)) != KP_OK) {
        kpb_note(b, "%s: setup failed (%s)", name, kp_last_error(b->rt));
        problem_free(b, &p);
        return;
    }
    kp_tensor ta = kp_tensor_2d(p.da, KP_F32, m, k), tb = kp_tensor_2d(p.db, KP_F32, k, n),
              tcc = kp_tensor_2d(p.dc, KP_F32, m, n);
    kp_arg peer_args[] = {KP_ARG_TENSOR("A", ta), KP_ARG_TENSOR("B", tb), KP_ARG_TENSOR("C", tcc)};
    double peer_s = 0, p10, p90, peer_err = NAN;
    if (gemm && kpb_time_kernel(b, gemm, peer_args, 3, &peer_s, &p10, &p90) == KP_OK)
        peer_err = relative_error(b, &p);
    else
        peer_s = 0;
    for (int i = 0; i < n_prec; i++) {
        int prec = precisions[i];
        kp_arg args[] = {KP_ARG_TENSOR("A", ta), KP_ARG_TENSOR("B", tb), KP_ARG_TENSOR("C", tcc),
                         KP_ARG_INT("precision", prec)};
        char ours[32];
        snprintf(ours, sizeof ours, "tc.gemm %s", precision_names[prec]);
        if (time_row(b, tc, args, &p, name, ours, 4.0, peer_s, peer_err) == KP_ERR_UNSUPPORTED)
            break;
        if (prec == KP_TC_BF16)
            run_tensors16(b, tc, &p, name, peer_s, peer_err);
    }
    problem_free(b, &p);
}

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-tc", argc, argv);
    kp_kernel *tc, *gemm = NULL;
    if (kp_kernel_find(b.rt, "tc.gemm", &tc) != KP_OK) {
        fprintf(stderr, "bench-tc: %s\n", kp_last_error(b.rt));
        return 1;
    }
    if (kp_kernel_find(b.rt, "blas.gemm", &gemm) != KP_OK)
        kpb_note(&b, "no blas.gemm: no CLBlast column");
    b.max_case_s = b.quick ? 0.2 : 1.0;
    const int all[] = {KP_TC_TF32, KP_TC_TF32X3, KP_TC_F16, KP_TC_BF16};
    const int64_t squares[] = {1024, 2048, 4096, 8192};
    for (int i = 0; i < (b.quick ? 1 : 4); i++)
        run_case(&b, tc, gemm, "square", squares[i], squares[i], squares[i], all, 4);
    if (!b.quick) {
        run_case(&b, tc, gemm, "gru", 1024, 3072, 1024, all, 2);
        run_case(&b, tc, gemm, "skinny", 64, 768, 256, all, 2);
        run_case(&b, tc, gemm, "edges", 1031, 2053, 1019, all, 4);
    }
    kpb_note(&b,
             "rel_err_vs_fp64: max |C - C64| / max |C64| over %d rows of C, C64 the product "
             "of the same f32 inputs in FP64; inputs uniform in [-1, 1)",
             CHECK_ROWS);
    return kpb_close(&b);
}
