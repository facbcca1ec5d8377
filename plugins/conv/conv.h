/* SPDX-License-Identifier: Apache-2.0 */
/* The conv plugin's shared declarations: parameters, geometry, launch helpers, references. */
#ifndef KP_CONV_H
#define KP_CONV_H

#include <stdint.h>

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *conv_host;

/* One descriptor per kernel. */
extern const kp_kernel_desc conv_im2col_desc;           /* conv-im2col.c */
extern const kp_kernel_desc conv_col2im_desc;           /* conv-im2col.c */
extern const kp_kernel_desc conv_conv2d_desc;           /* conv-forward.c */
extern const kp_kernel_desc conv_backward_data_desc;    /* conv-backward.c */
extern const kp_kernel_desc conv_backward_weight_desc;  /* conv-backward.c */
extern const kp_kernel_desc conv_backward_bias_desc;    /* conv-backward.c */
extern const kp_kernel_desc conv_maxpool_desc;          /* conv-pool.c */
extern const kp_kernel_desc conv_maxpool_backward_desc; /* conv-pool.c */

/*
 * Parameter indices, in the order the descriptors list them. Every kernel with a window ends its
 * list with the same six geometry integers (stride_h, stride_w, pad_h, pad_w, dilation_h,
 * dilation_w), and the convolutions then with groups, so one function reads them all.
 */
enum { GEO_SH, GEO_SW, GEO_PH, GEO_PW, GEO_DH, GEO_DW, GEO_N };
enum { I2C_IM, I2C_COL, I2C_KH, I2C_KW, I2C_GEO, I2C_N = I2C_GEO + GEO_N };
enum { C2I_COL, C2I_IM, C2I_KH, C2I_KW, C2I_GEO, C2I_N = C2I_GEO + GEO_N };
enum { FWD_X, FWD_W, FWD_B, FWD_Y, FWD_GEO, FWD_GROUPS = FWD_GEO + GEO_N, FWD_N };
enum { BWD_DY, BWD_W, BWD_DX, BWD_GEO, BWD_GROUPS = BWD_GEO + GEO_N, BWD_N };
enum { BWW_X, BWW_DY, BWW_DW, BWW_GEO, BWW_GROUPS = BWW_GEO + GEO_N, BWW_N };
enum { BWB_DY, BWB_DB, BWB_N };
enum { MP_X, MP_Y, MP_IDX, MP_KH, MP_KW, MP_GEO, MP_N = MP_GEO + GEO_N };
enum { MPB_DY, MPB_IDX, MPB_DX, MPB_KH, MPB_KW, MPB_GEO, MPB_N = MPB_GEO + GEO_N };

/* The tunables, in this order: WG (every kernel), ROWS (the kernels that run im2col, col2im or a
 * pool), COL_MAX_MB and GEMM (the kernels that go through GEMMs), ALGO (conv.conv2d), SPLIT_K
 * (conv.conv2d_backward_weight). */
enum {
    CONV_TUNE_WG,
    CONV_TUNE_ROWS,
    CONV_TUNE_COL_MAX_MB,
    CONV_TUNE_GEMM,
    CONV_TUNE_ALGO,
    CONV_TUNE_SPLIT_K,
    CONV_N_TUNABLES
};
extern const kp_tunable_desc conv_tunables[CONV_N_TUNABLES];

/* ---- conv-util.c: geometry, checks, views, launches ------------------------------------------ */

/* A window over NCHW images: input [N, C, H, W], kernel KH x KW, output [N, K, OH, OW]. */
typedef struct conv_geom {
    int64_t N, C, H, W, K, KH, KW;
    int64_t sh, sw, ph, pw, dh, dw, groups;
    int64_t OH, OW;
} conv_geom;

/* The six descriptors of the geometry integers, with `stride_default` for the strides (1 for
 * convolutions; 0, "the kernel size", for pooling), and the groups integer. */
/* clang-format off */
#define CONV_INT_PARAM(pname, pdefault, pdoc)                                                      \
    {.name = pname, .kind = KP_ARG_KIND_INT, .access = KP_ACCESS_IN,                               \
     .flags = KP_PARAM_OPTIONAL, .int_default = pdefault, .doc = pdoc}
#define CONV_GEO_PARAMS(stride_default)                                                            \
    CONV_INT_PARAM("stride_h", stride_default, stride_default ? "vertical stride"                  \
                   : "vertical stride; 0: kernel_h (PyTorch's default)"),                          \
    CONV_INT_PARAM("stride_w", stride_default, stride_default ? "horizontal stride"                \
                   : "horizontal stride; 0: kernel_w (PyTorch's default)"),                        \
    CONV_INT_PARAM("pad_h", 0, "zero rows added above and below"),                                 \
    CONV_INT_PARAM("pad_w", 0, "zero columns added left and right"),                               \
    CONV_INT_PARAM("dilation_h", 1, "rows between kernel taps"),                                   \
    CONV_INT_PARAM("dilation_w", 1, "columns between kernel taps")
#define CONV_GROUPS_PARAM                                                                          \
    CONV_INT_PARAM("groups", 1, "channel groups: C and K divisible by it; group g maps input "     \
                   "channels [g C/groups, (g+1) C/groups) to output channels [g K/groups, "        \
                   "(g+1) K/groups)")
/* clang-format on */

/* Fails unless `t` is [N, C, H, W] with every dimension >= 1, naming `name`. */
kp_status conv_check_nchw(kp_launch *l, const char *name, const kp_tensor *t);
/* Fails unless `t` has exactly `shape` (rank 4 or less): "y: expected [N, K, OH, OW] = [2, 8,
 * 5, 5], got f32[2, 8, 5, 4]". */
kp_status conv_expect(kp_launch *l, const char *name, const kp_tensor *t, int32_t rank,
                      const int64_t *shape, const char *pattern);
/* Reads the geometry integers at call->args[first..first + GEO_N) (and groups when groups >= 0)
 * into g, whose N C H W KH KW (and K) are set, checks them and computes OH and OW. `kernel` names
 * the argument that gave the kernel size ("w", or "kernel_h"/"kernel_w" when NULL). `pool`: a
 * stride of 0 means the kernel size, and padding may be at most half the kernel. */
kp_status conv_check_geometry(kp_launch *l, const kp_call *call, int first, int groups,
                              const char *kernel, int pool, conv_geom *g);
/* The kernel size integers (kernel_h, kernel_w) at call->args[kh], [kh + 1]. */
kp_status conv_kernel_size(kp_launch *l, const kp_call *call, int kh, conv_geom *g);
/* OpenCL kernels index with int: every present tensor argument's view (its extent, element
 * count and the strides of dimensions longer than 1) must fit, as the core's view packing needs;
 * checked before any enqueue. */
kp_status conv_check_int_range(kp_launch *l, const kp_call *call);
/* Fails with KP_ERR_UNSUPPORTED when one image's columns and GEMM block, (C KH KW + K) OH OW
 * values, or the output, N K OH OW values, pass what the kernels index with int. */
kp_status conv_check_columns(kp_launch *l, const conv_geom *g);
/* Fails with KP_ERR_UNSUPPORTED unless w [K, C/groups, KH, KW] is a [K, C/groups KH KW] matrix
 * (its last three dimensions contiguous), which the GEMMs need. */
kp_status conv_check_weight_matrix(kp_launch *l, const char *name, const kp_tensor *w);

/* The descriptors' resolve hook: ROWS auto becomes rows (CPUs) or tiles (other devices), GEMM
 * auto tiled (CPUs) or blas, ALGO auto im2col on CPUs; elsewhere ALGO auto stays, and
 * conv_winograd_chosen decides per call by the channels. Whether a tile fits in local memory
 * depends on the call's output width too, so conv_im2col_launch decides that part. */
const char *conv_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);

/* The geometry as the int16 kernels/conv.cl reads (a value argument; it is not a tensor). */
void conv_clargs_geom(kp_clargs *a, const conv_geom *g);
/* An optional bias [K] as a kp_view1 and the int has_bias; without one (bias NULL) a one-element
 * view of `any`, which the kernel never reads. */
void conv_clargs_bias(kp_clargs *a, const kp_tensor *bias, kp_buffer *any);
/* Enqueues a (rows rounded up to WG) x cols range with local size (WG, 1); the first failure of
 * the list or of the enqueue. */
kp_status conv_clargs_run(kp_clargs *a, int64_t rows, int64_t cols);
/* For col2im and the pools: whether ROWS picks the row kernels (1, CPUs under auto) over the
 * element kernels (2, and 3 which only im2col has in a shape of its own). */
int conv_row_kernels(kp_launch *l);
/* im2col of g->N images `im` (a 4-D view) into `col` (a 3-D view [N, C KH KW, OH OW] of the
 * output or of scratch) with the kernel the ROWS tunable picks. */
kp_status conv_im2col_launch(kp_launch *l, const conv_geom *g, const kp_tensor *im,
                             const kp_tensor *col);
/* col2im from `col` (a 3-D view) into g->N images `im`, likewise. */
kp_status conv_col2im_launch(kp_launch *l, const conv_geom *g, const kp_tensor *col,
                             const kp_tensor *im);

/* ---- conv-gemm.c: the GEMM-based convolution passes ------------------------------------------ */

/* C = A B + beta C on rank-2 views, by the GEMM tunable: blas.gemm (when registered and it takes
 * the layouts), or conv.cl's register-tiled kernel (B and C with unit column stride), else
 * conv.cl's plain strided kernel. */
kp_status conv_matmul(kp_launch *l, const kp_tensor *a, const kp_tensor *b, const kp_tensor *c,
                      double beta);
/* Whether a 4-D view's image n is a [C, H W] matrix blas.gemm can take (1x1 path). */
int conv_plane_matrix(const kp_tensor *t);
/* Image n, channels [c0, c0 + rows) of a 4-D view as a [rows, H W] matrix. */
kp_tensor conv_plane_rows(const kp_tensor *t, int64_t n, int64_t c0, int64_t rows);
/* A rank-2 view [rows, cols] of a buffer with row stride ld at element offset `offset`. */
kp_tensor conv_matrix(kp_buffer *buf, int64_t offset, int64_t rows, int64_t cols, int64_t ld);
/* Images per chunk: as many as fit COL_MAX_MB of scratch at `per_image` bytes each (at least
 * one, at most N). */
int64_t conv_chunk(kp_launch *l, int64_t N, double per_image);
/* Whether the call is a 1x1, stride-1, unpadded convolution (the GEMM reads images in place). */
int conv_is_pointwise(const conv_geom *g);
/* im2col of images [n0, n0 + nb) of x into col [C KH KW, nb L] (the chunk layout), or, with
 * `transposed`, into its transpose [nb L, C KH KW]. */
kp_status conv_im2col_chunk(kp_launch *l, const conv_geom *g, const kp_tensor *x, int64_t n0,
                            int64_t nb, kp_buffer *col, int transposed);
/* Whether the GEMM tunable resolves to conv.cl's tiled kernel on this device. */
int conv_gemm_is_tiled(kp_launch *l);
/* col2im of a chunk's columns into images [n0, n0 + nb) of dx (overwriting them). */
kp_status conv_col2im_chunk(kp_launch *l, const conv_geom *g, kp_buffer *col, const kp_tensor *dx,
                            int64_t n0, int64_t nb);
/* Images [n0, n0 + nb) of a [N, K, OH, OW] view to and from the block t [K, nb L]. */
kp_status conv_unpack_chunk(kp_launch *l, const conv_geom *g, kp_buffer *t, const kp_tensor *bias,
                            const kp_tensor *y, int64_t n0, int64_t nb);
kp_status conv_pack_chunk(kp_launch *l, const conv_geom *g, const kp_tensor *dy, int64_t n0,
                          int64_t nb, kp_buffer *t);
/* A 4-D view narrowed to images [n0, n0 + nb). */
kp_tensor conv_images(const kp_tensor *t, int64_t n0, int64_t nb);

/* ---- conv-winograd.c: conv.conv2d's Winograd F(2x2, 3x3) path ------------------------------- */

/* ALGO auto takes Winograd only with at least this many input and output channels per group. */
#define CONV_WINOGRAD_MIN_CHANNELS 16

/* Whether the geometry allows Winograd F(2x2, 3x3): a 3x3 kernel, stride 1, dilation 1 (any
 * padding, groups), and one image's transformed blocks indexable with int. */
int conv_winograd_fits(const conv_geom *g);
/* Whether conv.conv2d runs this call through Winograd: it fits, and ALGO says winograd, or auto
 * (which conv_resolve leaves only off CPUs) with enough channels per group. */
int conv_winograd_chosen(kp_launch *l, const conv_geom *g);
/* y = conv(x, w) + bias through Winograd; scratch slots 0 (V), 1 (M) and 2 (U). */
kp_status conv_winograd_forward(kp_launch *l, const conv_geom *g, const kp_tensor *x,
                                const kp_tensor *w, const kp_tensor *bias, const kp_tensor *y);

/* ---- conv-reference.c: double-precision host math -------------------------------------------- */

kp_status conv_im2col_reference(const kp_call *call, kp_launch *l);
kp_status conv_col2im_reference(const kp_call *call, kp_launch *l);
kp_status conv_forward_reference(const kp_call *call, kp_launch *l);
kp_status conv_backward_data_reference(const kp_call *call, kp_launch *l);
kp_status conv_backward_weight_reference(const kp_call *call, kp_launch *l);
kp_status conv_backward_bias_reference(const kp_call *call, kp_launch *l);
kp_status conv_maxpool_reference(const kp_call *call, kp_launch *l);
kp_status conv_maxpool_backward_reference(const kp_call *call, kp_launch *l);

/* ---- conv-tolerance.c: geometry of a checked call, verification tolerances ----------------- */

/* The geometry of a call that passed check (for references, costs and tolerances). */
conv_geom conv_geom_of(const kp_call *call);

/* Tolerances derived from f32 rounding and each sum's length. */
void conv_col2im_tolerance(const kp_call *call, double *atol, double *rtol);
void conv_forward_tolerance(const kp_call *call, double *atol, double *rtol);
void conv_backward_data_tolerance(const kp_call *call, double *atol, double *rtol);
void conv_backward_weight_tolerance(const kp_call *call, double *atol, double *rtol);
void conv_backward_bias_tolerance(const kp_call *call, double *atol, double *rtol);
void conv_maxpool_backward_tolerance(const kp_call *call, double *atol, double *rtol);

/* ---- conv-sample.c: sample arguments --------------------------------------------------------- */

/* A named sample problem: sizes and geometry; `views` 1 makes the tensors strided, offset views. */
typedef struct conv_case {
    const char *name;
    int64_t N, C, H, W, K, KH, KW, sh, sw, ph, pw, dh, dw, groups;
    int bias, views;
} conv_case;

/* Copies the case named `size` among `cases` into *out; 0 when there is none. */
int conv_case_find(const conv_case *cases, size_t n, const char *size, conv_case *out);
/* Samples an NCHW tensor named `name` of shape `shape`, as a strided offset view when `views`. */
kp_status conv_sample_nchw(kp_sample *s, const char *name, const int64_t *shape, double lo,
                           double hi, int views);
/* Samples the geometry integers of a case (and groups when `groups`). */
kp_status conv_sample_geometry(kp_sample *s, const conv_case *c, int groups);

/* The kernels' sample functions. */
kp_status conv_im2col_sample(kp_sample *s, const char *size);
kp_status conv_col2im_sample(kp_sample *s, const char *size);
kp_status conv_forward_sample(kp_sample *s, const char *size);
kp_status conv_backward_data_sample(kp_sample *s, const char *size);
kp_status conv_backward_weight_sample(kp_sample *s, const char *size);
kp_status conv_backward_bias_sample(kp_sample *s, const char *size);
kp_status conv_maxpool_sample(kp_sample *s, const char *size);
kp_status conv_maxpool_backward_sample(kp_sample *s, const char *size);

#endif
