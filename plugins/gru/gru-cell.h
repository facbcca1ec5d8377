/* SPDX-License-Identifier: Apache-2.0 */
/* The GRU cell kernels' private declarations: parameters, shared launch helpers, references. */
#ifndef KP_GRU_CELL_H
#define KP_GRU_CELL_H

#include <stdint.h>

#include "gru.h"

/* Parameter indices, in the order the descriptors list them. */
enum { STEP_X, STEP_H, STEP_W_IH, STEP_W_HH, STEP_B_IH, STEP_B_HH, STEP_H_OUT, STEP_LBR, STEP_N };
enum { SEQ_X, SEQ_H0, SEQ_W_IH, SEQ_W_HH, SEQ_B_IH, SEQ_B_HH, SEQ_H_ALL, SEQ_WS, SEQ_LBR, SEQ_N };
enum {
    BWD_X,
    BWD_H0,
    BWD_H_ALL,
    BWD_WS,
    BWD_W_IH,
    BWD_W_HH,
    BWD_DH_ALL,
    BWD_DH_LAST,
    BWD_DX,
    BWD_DH0,
    BWD_DW_IH,
    BWD_DW_HH,
    BWD_DB_IH,
    BWD_DB_HH,
    BWD_LBR,
    BWD_N
};

/* The tunables of the cell kernels, in this order: gru.step has the first four, gru.sequence
 * ROWS_H too (a sequence's steps), gru.sequence_backward all (SPLIT_MN: its weight products). */
enum {
    GRU_TUNE_WG,
    GRU_TUNE_LANES,
    GRU_TUNE_VW,
    GRU_TUNE_BATCH_GEMM,
    GRU_TUNE_ROWS_H,
    GRU_TUNE_SPLIT_MN,
    GRU_N_TUNABLES
};
extern const kp_tunable_desc gru_cell_tunables[GRU_N_TUNABLES];

/* Sizes of a call: T steps (1 for gru.step), batch B, input I, hidden H. */
typedef struct gru_dims {
    int64_t T, B, I, H;
    int lbr; /* linear_before_reset */
} gru_dims;

/* ---- gru-cell.c: checks, views, launches ----------------------------------------------------- */

/* The descriptors' resolve hook: LANES, VW and BATCH_GEMM 0 ("by device type") become the CPU or
 * the other devices' value, so the core compiles LANES and VW and launches read BATCH_GEMM
 * resolved. */
const char *gru_cell_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);
/* Whether blas.gemm runs OpenBLAS on this device: a CPU, in a build whose blas plugin has the
 * host route (its `route` auto resolves to host-blas there; a manifest may still force clblast). */
int gru_host_blas(kp_launch *l);
/* The resolved tunables WG and BATCH_GEMM. */
size_t gru_wg(kp_launch *l);
int64_t gru_batch_gemm(kp_launch *l);
/* Whether a sequence's steps (forward or backward) run as one gru_*_rows launch: ROWS_H covers
 * H, linear_before_reset is 1, and the row's state fits the device's local memory (`floats` per
 * work-group). */
int gru_rows_route(kp_launch *l, int64_t H, int lbr, int64_t floats);

/* Fails unless `t` has rank `rank` and `shape`, naming the argument and both shapes:
 * "w_hh: expected [3H, H] = [768, 256], got f32[768, 255]". `pattern` is the symbolic shape. */
kp_status gru_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                     const int64_t *shape, const char *pattern);
/* A sequence's x [T, B, I] and h0 [B, H] (T, B, I, H >= 1): fills dims' T, B, I and H. */
kp_status gru_check_sequence(kp_launch *l, const kp_tensor *x, const kp_tensor *h0, gru_dims *dims);
/* The weights, biases and linear_before_reset of a cell given dims->H and dims->I. */
kp_status gru_check_weights(kp_launch *l, const kp_call *call, int w_ih, int w_hh, int b_ih,
                            int b_hh, int lbr, gru_dims *dims);
/* OpenCL kernels index with int: every present tensor argument, and the call's gate values
 * (T B 4H), must fit. */
kp_status gru_check_int_range(kp_launch *l, const kp_call *call, const gru_dims *d);

/* Rank-2 views: rows [r0, r0 + rows) and columns [c0, c0 + cols) of a matrix, step t of a
 * [T, R, C] tensor, and the steps [t0, t0 + n) of one as a [n R, C] matrix (returns 0 when the
 * strides do not allow it). */
kp_tensor gru_sub(const kp_tensor *m, int64_t r0, int64_t rows, int64_t c0, int64_t cols);
kp_tensor gru_step_of(const kp_tensor *t3, int64_t t);
int gru_flatten(const kp_tensor *t3, int64_t t0, int64_t n, kp_tensor *out);
kp_tensor gru_scratch_matrix(kp_buffer *buf, int64_t offset, int64_t rows, int64_t cols);
/* A tensor value with no buffer: an absent optional argument. */
static inline int gru_present(const kp_tensor *t)
{
    return t->buffer != NULL;
}

/* One cell application: h_out = GRU(x, h). gx, when present, replaces x (the precomputed x
 * w_ih^T without bias); b_ih, b_hh and ws may be absent. */
typedef struct gru_cell {
    int64_t B, I, H;
    int lbr;
    kp_tensor x, gx, h, w_ih, w_hh, b_ih, b_hh, h_out, ws;
    kp_tensor w_hh_t; /* optional: W_hh^T stored [H, 3H], for the GEMM path */
} gru_cell;

/* The fused small-batch path (scratch slot `slot` holds linear_before_reset = 0's [B, 3H]). */
kp_status gru_cell_fused(kp_launch *l, const gru_cell *c, uint32_t slot);
/* The GEMM path: blas.gemm for the products (scratch slots slot..slot + 2), then the gate kernel.
 * KP_ERR_NOT_FOUND, with nothing enqueued, when blas.gemm is absent or cannot take the layouts. */
kp_status gru_cell_gemm(kp_launch *l, const gru_cell *c, uint32_t slot);

/* C = A B + beta C through blas.gemm; KP_ERR_NOT_FOUND when it is not registered or cannot take
 * these layouts (nothing enqueued then). */
kp_status gru_blas_gemm(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                        double beta);
/* Whether blas.gemm can take this view as a matrix (one unit stride, a long enough ld). */
int gru_blas_layout(const kp_tensor *m);
/* out = in^T for in [rows, cols] and out [cols, rows], views of different storage. */
kp_status gru_transpose(kp_launch *l, const kp_tensor *in, const kp_tensor *out);
/* C = A B + beta C: blas.gemm when `use_blas` and it can, else the plugin's own gru_matmul. */
kp_status gru_gemm(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                   double beta, int use_blas);

/* Units per work-item of gru_gates with one lane per unit: gru.cl's GV, its float16 gates. */
#define GRU_GATE_VECTOR 16

/* The kernels' global sizes round up to the work-group size (PoCL compiles once per WG). */
size_t gru_round_up(int64_t n, size_t wg);

/* ---- gru-reference.c: double-precision host math --------------------------------------------- */

kp_status gru_step_reference(const kp_call *call, kp_launch *l);
kp_status gru_sequence_reference(const kp_call *call, kp_launch *l);
kp_status gru_backward_reference(const kp_call *call, kp_launch *l);
void gru_step_tolerance(const kp_call *call, double *atol, double *rtol);
void gru_sequence_tolerance(const kp_call *call, double *atol, double *rtol);
void gru_backward_tolerance(const kp_call *call, double *atol, double *rtol);

/* A strided host matrix: element (r, c) at p[off + r * rs + c * cs]; p NULL when absent. */
typedef struct gru_hview {
    float *p;
    int64_t off, rs, cs;
} gru_hview;
gru_hview gru_hview_of(const kp_call *call, int index);
gru_hview gru_hview_step(gru_hview v, const kp_tensor *t3, int64_t t);

/* The forward over T steps on host views (x, h_all and ws are [T, B, *] with time stride
 * ts_x, ts_h, ts_ws); writes h_all and, when ws.p, the workspace. Used by the references and to
 * build consistent sample inputs for the backward. KP_ERR_OUT_OF_MEMORY when out of memory. */
kp_status gru_forward_host(const gru_dims *d, gru_hview x, int64_t ts_x, gru_hview h0,
                           gru_hview w_ih, gru_hview w_hh, gru_hview b_ih, gru_hview b_hh,
                           gru_hview h_all, int64_t ts_h, gru_hview ws, int64_t ts_ws);

/* ---- samples shared by the three kernels ----------------------------------------------------- */

/* Fills a sample's weights and biases as PyTorch initialises them, U(-1/sqrt(H), 1/sqrt(H)),
 * so that sequences stay in the regime trained models live in. */
kp_status gru_sample_weights(kp_sample *s, const gru_dims *d, int with_biases);

#endif
