/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor plugin's shared declarations: the op table, iteration spaces, launches, references.
 * docs/kernels/tensor.md describes the family. */
#ifndef KP_TENSOR_H
#define KP_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "kernelport/plugin.h"

/* Set by init; valid while the plugin is loaded. */
extern const kp_host_api *tensor_host;

/* Map ops and combines, numbered as kernels/tensor.cl numbers them. */
enum {
    TM_NEG,
    TM_ABS,
    TM_EXP,
    TM_EXP2,
    TM_LOG,
    TM_LOG2,
    TM_SQRT,
    TM_RSQRT,
    TM_RECIP,
    TM_SIN,
    TM_COS,
    TM_TANH,
    TM_SIGMOID,
    TM_RELU,
    TM_GELU,
    TM_GELU_ERF,
    TM_SILU,
    TM_SQUARE,
    TM_COPY,
    TM_SCALE,
    TM_ADD,
    TM_SUB,
    TM_MUL,
    TM_DIV,
    TM_MAX,
    TM_MIN,
    TM_POW,
    TM_MOD,
    TM_CMPLT,
    TM_CMPEQ,
    TM_WHERE,
    TM_D_NEG,
    TM_D_ABS,
    TM_D_EXP,
    TM_D_EXP2,
    TM_D_LOG,
    TM_D_LOG2,
    TM_D_SQRT,
    TM_D_RSQRT,
    TM_D_RECIP,
    TM_D_SIN,
    TM_D_COS,
    TM_D_TANH,
    TM_D_SIGMOID,
    TM_D_RELU,
    TM_D_GELU,
    TM_D_GELU_ERF,
    TM_D_SILU,
    TM_D_SQUARE,
    TM_DA_ADD,
    TM_DB_ADD,
    TM_DA_SUB,
    TM_DB_SUB,
    TM_DA_MUL,
    TM_DB_MUL,
    TM_DA_DIV,
    TM_DB_DIV,
    TM_DA_MAX,
    TM_DB_MAX,
    TM_DA_MIN,
    TM_DB_MIN,
    TM_DA_POW,
    TM_DB_POW,
    TM_DA_MOD,
    TM_DB_MOD,
    TM_D_VAR,
    TM_D_LSE,
    TM_D_EXTREME,
    TM_D_STD,
    TM_TIE,
    TM_COUNT
};
enum { TC_SUM, TC_PROD, TC_MAX, TC_MIN, TC_ARGMAX, TC_ARGMIN, TC_VAR, TC_STD, TC_LSE, TC_COUNT };

/* The op the plugin registers a kernel for, with what its samples need. */
typedef struct tensor_op {
    const char *name;    /* "exp": kernels tensor.exp and tensor.exp_backward */
    const char *summary; /* "y = exp(x)" */
    int map;             /* TM_* of the forward */
    int d_map;           /* TM_* of the backward (unary: dy f'(x); binary: da), -1: none */
    int db_map;          /* binary: TM_* of db */
    int arity;           /* 1, 2 or 3 (where) */
    double lo, hi;       /* the samples' input range: the op's domain, away from its poles */
    double b_lo, b_hi;   /* the second operand's, for binary ops */
} tensor_op;

extern const tensor_op tensor_unary_ops[];
extern const size_t tensor_n_unary;
extern const tensor_op tensor_binary_ops[];
extern const size_t tensor_n_binary;

/* The family's tunables: WG, then REDUCE, which kernels that may reduce (reductions, gradients
 * summed over broadcast axes) list too (n_tunables 2) and the others leave out (1). */
enum { TT_WG, TT_REDUCE, TT_COUNT };
enum { TR_AUTO, TR_ITEMS, TR_LANES, TR_CHUNKS };
extern const kp_tunable_desc tensor_tunables[TT_COUNT];

/* The map in double, for the host references. */
double tensor_map_host(int map, double a, double b, double c, double alpha);

/* ---- tensor-space.c: iteration spaces ------------------------------------------------------ */

#define TS_MAX_IN 3
/* Elements per work-item of an elementwise launch: kernels/tensor.cl's UNROLL, which must equal
 * it. */
#define UNROLL 4

/*
 * One launch's iteration space: every operand viewed over the same dimensions, the kept ones
 * (the output's) first and the reduced ones (the output is broadcast along them) last, each group
 * coalesced (extent-1 dimensions dropped, neighbours merged where every operand steps through
 * them as through one).
 */
typedef struct tensor_space {
    int rank_kept, rank_red;
    int64_t ext[KP_MAX_RANK];        /* kept extents, then reduced ones */
    int64_t out_stride[KP_MAX_RANK]; /* 0 at reduced dimensions */
    int64_t in_stride[TS_MAX_IN][KP_MAX_RANK];
    int64_t out_offset, in_offset[TS_MAX_IN];
    int n_in;
    int64_t n_out, n_red; /* elements of the output; terms of each output element */
    int32_t out_dtype, in_dtype[TS_MAX_IN]; /* each operand's storage (kp_dtype) */
} tensor_space;

/*
 * Lays out `full`-shaped operands: `out` and each of `in` must broadcast to `full` (NumPy's rule:
 * aligned at the last dimension, extents equal or 1). A dimension where `out` is broadcast (extent
 * 1 or absent, against more than 1) is reduced. Fails naming the operands and their shapes.
 */
kp_status tensor_space_make(kp_launch *l, int rank, const int64_t *full, const kp_tensor *out,
                            const char *out_name, const kp_tensor *const *in,
                            const char *const *in_names, int n_in, tensor_space *s);

/* Runs `map` then `comb` over the space on the device: one tensor_map_reduce launch. The
 * tensors give buffers and dtypes; the space gives their views. `post` scales a sum after (a
 * mean's 1 / N); var and std divide by it (max(0, N - correction)). */
kp_status tensor_space_enqueue(kp_launch *l, const tensor_space *s, const kp_tensor *out,
                               const kp_tensor *const *in, int map, int comb, double alpha,
                               double post);

/* The same on host memory, in double: `out` and `in` point at each operand's element 0, read and
 * written as the space's dtypes say (out_dtype: the output's, as given). Each result is rounded
 * to float before it is stored, as the kernel's f32 arithmetic does. */
void tensor_space_reference(const tensor_space *s, void *out, int32_t out_dtype,
                            const void *const *in, int map, int comb, double alpha, double post);

/* Index-only values (tensor_generate in kernels/tensor.cl): y[o] for its row-major index o. */
enum { TG_FILL, TG_ARANGE, TG_UNIFORM, TG_NORMAL, TG_BERNOULLI };
kp_status tensor_space_enqueue_generate(kp_launch *l, const tensor_space *s, const kp_tensor *y,
                                        int kind, double a, double b, uint64_t seed,
                                        uint64_t offset);
/* The same on host memory (y points at element 0), in double: the random ones from the same
 * Philox4x32-10 words (kernelport/ops/random.h). */
void tensor_space_reference_generate(const tensor_space *s, void *y, int kind, double a, double b,
                                     uint64_t seed, uint64_t offset);

/* ---- tensor-dtypes.c: storage dtypes (docs/kernels/tensor.md, "Dtypes") ------------------ */

/* The dtypes a tensor parameter may take: the floating ones (arithmetic), or any of the four
 * (cast, and where's condition). */
#define TENSOR_FLOATS (KP_DT(KP_F32) | KP_DT(KP_F16) | KP_DT(KP_BF16))
#define TENSOR_ANY_DTYPE (TENSOR_FLOATS | KP_DT(KP_I32))

/* " -D DT0=2 -D DTY=6"-style options for the space's dtypes other than f32 (none when every
 * operand is f32, so f32 programs stay as they were); an arg combine writes i32 indices and
 * takes no DTY. With `raw`, " -D RAW": a copy between tensors of one dtype moves bits. */
void tensor_dtype_options(const tensor_space *s, int comb, int raw, char *buf, size_t size);
/* Appends " -D name=dtype" to the options in buf when dtype is not f32 (a kernel's storage
 * dtype build option; f32, the default, adds nothing). */
void tensor_dtype_define(char *buf, size_t size, const char *name, int32_t dtype);
/* Widens a call's tolerance for its outputs' dtypes: a 16-bit result the device and the host
 * each round once may land one unit in the last place apart (f16: 2^-10 relative and 2^-24
 * among its subnormals, bf16: 2^-7). */
void tensor_dtype_tolerance(const kp_call *call, double *atol, double *rtol);
/* A sample size's dtypes: "rows-bf16" is size "rows" (into base) with every operand bf16,
 * "permute-f16-i32" size "permute" with the first operand f16 and the others i32 (the last one
 * named goes on); dt[0 .. n - 1] in the kernel's parameter order, f32 where none is named. */
void tensor_size_dtypes(const char *size, char *base, size_t base_size, int32_t *dt, int n);
/* Bytes of all a call's present tensors at their dtypes (each kernel's `cost`). */
double tensor_dtype_bytes(const kp_call *call);

/* y (x reduced over `axes`, a bit mask or -1 for all, keepdim or not) as a view over x's
 * dimensions: extent 1 and stride 0 at the reduced axes; *terms the reduced elements of each
 * output. Fails naming y_name and the shapes when y is neither form (tensor-reduce.c). */
kp_status tensor_keepdim_view(kp_launch *l, const kp_tensor *x, const kp_tensor *y,
                              const char *y_name, int64_t axes, kp_tensor *out, int64_t *terms);

/* "[3, 1, 7]" of a tensor's shape, into buf. */
const char *tensor_shape_str(const kp_tensor *t, char *buf, size_t size);

/* ---- descriptors ---------------------------------------------------------------------------- */

/* Registers the elementwise kernels (tensor-elementwise.c) and the reductions (tensor-reduce.c). */
kp_status tensor_register_elementwise(const kp_host_api *api, kp_registrar *reg);
kp_status tensor_register_reductions(const kp_host_api *api, kp_registrar *reg);
/* var, std, logsumexp and the backward of var, std, logsumexp, max and min (tensor-stats.c). */
kp_status tensor_register_stats(const kp_host_api *api, kp_registrar *reg);
/* tensor.fill, arange, uniform, normal, bernoulli (tensor-generate.c); copy and its backward
 * (tensor-movement.c). */
kp_status tensor_register_generators(const kp_host_api *api, kp_registrar *reg);
kp_status tensor_register_movement(const kp_host_api *api, kp_registrar *reg);
/* tensor.mul_sum (tensor-contract.c). */
kp_status tensor_register_contractions(const kp_host_api *api, kp_registrar *reg);

/* Makes the sampled tensor `name`, whose storage is `shape` row-major, a view of it reversed
 * along the dimensions whose bit is set in `dims` (negative strides), for the samples named
 * "flipped" (tensor-movement.c). */
kp_status tensor_sample_flip(kp_sample *smp, const char *name, int rank, const int64_t *shape,
                             unsigned dims);

/* ---- tensor-rows.c: row kernels (kernels/tensor-rows.cl) ---------------------------------- */

/* A row kernel's operands as its OpenCL code reads them: the dimensions before the last
 * coalesced over every operand and stored innermost first at view positions 0 .. nlead - 1, the
 * last axis at position 7 (stride 0 for an operand without it, such as labels). */
typedef struct tensor_rows {
    int64_t rows, cols; /* rows: the product of the leading extents; cols: C */
    int32_t nlead;
    int32_t ext[8]; /* leading extents at 0 .. nlead - 1, C at 7 */
    kp_tensor view[TS_MAX_IN + 1];
} tensor_rows;

/* Kernels index with int, and a lane steps its index by up to 1024 past the end. */
#define TENSOR_ROWS_MAX_ELEMENTS ((int64_t)INT32_MAX - 1024)

/*
 * Lays out n (at most 4) operands whose shapes are lead (lrank extents) followed by cols where
 * with_col[i], else lead alone, or (without a column) shapes that broadcast to lead; their shapes
 * must be checked already. t[0] is the one the space is laid out for (tensor_space_make's output,
 * never broadcast). Fails naming an operand past TENSOR_ROWS_MAX_ELEMENTS.
 */
kp_status tensor_rows_make(kp_launch *l, int lrank, const int64_t *lead, int64_t cols,
                           const kp_tensor *const *t, const int *with_col, const char *const *names,
                           int n, tensor_rows *r);

/* Fails naming `name` and its shape when t has more than TENSOR_ROWS_MAX_ELEMENTS elements. */
kp_status tensor_rows_fits(kp_launch *l, const kp_tensor *t, const char *name);

/* A row launch's shape: `lanes` work-items per row, a work-group of `local` (rows of
 * local / lanes), `groups` of them, and whether `arrays` floats per column fit in local memory. */
typedef struct tensor_rows_grid {
    int32_t lanes, cached;
    size_t local, groups, cache_bytes, tree_bytes;
} tensor_rows_grid;

/* The grid for rows of `cols` columns, caching `arrays` floats per column where they fit (and
 * the CACHE tunable allows), with `trees` floats of tree per work-item. The kernel's tunables
 * are tensor_rows_tunables. */
tensor_rows_grid tensor_rows_grid_for(kp_launch *l, int64_t rows, int64_t cols, int arrays,
                                      int trees);

/* The row kernels' tunables (docs/kernels/tensor.md, "Rows"), in this order; the pointwise
 * losses take the first (VW) alone. The descriptors' resolve decides VW 0 and EPL 0 by the
 * device's type. */
enum { TR_VW, TR_WG, TR_CACHE, TR_EPL, TR_N };
extern const kp_tunable_desc tensor_rows_tunables[TR_N];
const char *tensor_rows_resolve(kp_launch *l, uint32_t index, int64_t value, int64_t *resolved);

/* The storage dtypes of a row launch (kernels/tensor-rows.cl, "Dtypes"): the first and second
 * row input, the row output, the values rows_mean sums and its result. */
enum { TR_DT0, TR_DT1, TR_DTY, TR_DTL, TR_DTM, TR_DT_N };
/* Their build options into buf, always in that order, so that the launches of one dtype
 * combination share a program; KP_F32 (no option) for an operand a launch lacks. */
void tensor_rows_options(const int32_t *dt, char *buf, size_t size);

/* One launch of rows_mean: out (rank 0) = the sum of the n values of v (a view laid out as
 * tensor_rows_make lays out an operand without a column, n = its rows) divided by count[0] when
 * count is given, else by denom; `options` tensor_rows_options' (v's dtype DTL, out's DTM). */
kp_status tensor_rows_mean(kp_launch *l, const tensor_rows *v, int which, const kp_buffer *count,
                           double denom, const kp_tensor *out, const char *options);

/* Whether operand i of r may be read and written as whole vectors: with its column (with_col),
 * contiguous along it; without, a flat operand (nlead 1), contiguous. `aligned` (VW 4, and the
 * sums' blocks of 4) asks for float4 alignment too: every row's first element a multiple of 4
 * elements into its buffer (and C a multiple of 4, so rows stay aligned). */
int tensor_rows_vec(const tensor_rows *r, int i, int with_col, int aligned);

/* Host references' offset of row r of t, whose first lrank dimensions are the leading ones. */
int64_t tensor_rows_offset(const kp_tensor *t, int lrank, int64_t r);

/* The shape inputs broadcast to (NumPy's rule), or a failure naming two of them and their
 * shapes (tensor-elementwise.c). */
kp_status tensor_broadcast_shape(kp_launch *l, const kp_tensor *const *in, const char *const *names,
                                 int n, int *rank, int64_t *shape);

/* Registers the row kernels (tensor-rows.c) and the losses (tensor-losses.c). */
kp_status tensor_register_rows(const kp_host_api *api, kp_registrar *reg);
kp_status tensor_register_losses(const kp_host_api *api, kp_registrar *reg);

#endif
