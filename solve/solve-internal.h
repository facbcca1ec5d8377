/* SPDX-License-Identifier: Apache-2.0 */
/* The solve layer's shared internals: the graph's node store, the code generator's entry points
 * and the registry of compiled graphs. Built on the public API alone. */
#ifndef KP_SOLVE_INTERNAL_H
#define KP_SOLVE_INTERNAL_H

#include <stdarg.h>

#include "kernelport/plugin.h"
#include "kernelport/solve.h"

/* One node. Operands a, b, c are node ids (-1 when unused); k is the slot of a data or parameter
 * node and the exponent of powi; v the value of a constant. */
typedef struct kp__node {
    int32_t op;
    int32_t a, b, c;
    int32_t k;
    double v;
    uint64_t hash;    /* structural: the same for the same expression in any graph */
    uint64_t depends; /* bit s: the node depends on parameter slot s (through a derivative) */
} kp__node;

struct kp_expr_graph {
    kp__node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *table; /* open addressing over node ids, -1 empty; cap_table a power of two */
    uint32_t cap_table;
    char *data_names[KP_EXPR_MAX_SLOTS];
    char *param_names[KP_EXPR_MAX_SLOTS];
    uint32_t n_data, n_params;
    int32_t outputs[KP_EXPR_MAX_OUTPUTS];
    uint32_t n_outputs;
    kp_status status; /* the first builder error */
    char message[1024];
};

/* Records a builder error (the first one sticks in status) and returns an invalid node. */
kp_expr kp__expr_fail(kp_expr_graph *g, kp_status st, const char *fmt, ...) KP_PRINTF(3, 4);
/* Sets the graph's message without touching its sticky status; returns st. */
kp_status kp__expr_message(kp_expr_graph *g, kp_status st, const char *fmt, ...) KP_PRINTF(3, 4);
kp_status kp__expr_vmessage(kp_expr_graph *g, kp_status st, const char *fmt, va_list ap);

/* A deep copy (NULL when memory runs out). */
kp_expr_graph *kp__expr_graph_copy(const kp_expr_graph *g);
/* The operator's name in the text form and in messages ("exp", "+"). */
const char *kp__expr_op_name(int32_t op);
/* Number of operands of op (0 for leaves). */
int kp__expr_arity(int32_t op);
/* A function name of the text form: its op (and 1 for the vector helpers norm2/norm3/dot2/dot3
 * in *helper), or -1. */
int32_t kp__expr_function(const char *name, size_t len, int *helper);
/* Marks in `reach` (n_nodes bytes) every node the outputs reach; returns how many. */
int32_t kp__expr_reach(const kp_expr_graph *g, const int32_t *roots, uint32_t n_roots,
                       unsigned char *reach);
/* The normalized graph's key. */
uint64_t kp__expr_key(const kp_expr_graph *g);
/* x in double, for one op: the interpreter's and the folder's shared arithmetic. */
double kp__expr_apply(int32_t op, double a, double b, double c, int32_t k);

/* Symbolic forward mode: appends to g the nodes of d output / d param slot for every output and
 * slot, into jac[o * n_params + s] (node ids). Errors: out of memory (message in g). */
kp_status kp__expr_differentiate(kp_expr_graph *g, int32_t *jac);

/* Real type of generated code. */
typedef enum { KP__REAL_F64, KP__REAL_F32 } kp__real;

/* Appends to *src (malloc'd, grown) an OpenCL C function
 *   void NAME(const real *d, const real *p, real *r, real *J)
 * computing the graph's outputs into r and the Jacobian (row-major, n_outputs x n_params) into J,
 * as straight-line code over the normalized graph, with float literals when f32. Adds the
 * derivative nodes to g. Returns KP_OK or KP_ERR_OUT_OF_MEMORY (message in g). */
kp_status kp__expr_codegen(kp_expr_graph *g, const char *name, int f32, char **src, size_t *len);

/* Whether the code kp__expr_codegen makes for g's nodes (after it ran: derivatives included)
 * calls a math library function (exp, log, sin, ...: not one instruction), what a vector of
 * instances speeds up on CPUs. */
int kp__expr_calls_library(const kp_expr_graph *g);

/* printf onto a growing string; 0 when memory ran out (*s freed then, set NULL). */
int kp__str_append(char **s, size_t *len, const char *fmt, ...) KP_PRINTF(3, 4);

/* Evaluates every output of one instance (kp_expr_graph_eval without its checks). `scratch` holds
 * n_nodes * (1 + n_params) doubles. */
void kp__expr_eval(const kp_expr_graph *g, const double *data, const double *params, double *r,
                   double *jac, double *scratch);

/* A compiled graph kept for the life of the process, so that kernels registered from it can call
 * back into it from any runtime until that runtime is destroyed. */
typedef struct kp__compiled {
    char name[64];
    kp_expr_graph *graph; /* the caller's graph, copied: what the host references interpret */
    char *source;         /* the kernel's OpenCL C */
    int f32;
    int32_t n_values;  /* values the generated function computes (its cost) */
    int calls_library; /* kp__expr_calls_library of the graph */
    struct kp__compiled *next;
} kp__compiled;

/* Makes the source of c->graph (f32 or f64 per c->f32) into c->source; KP_OK or an error with
 * kp__solve_fail's message. */
typedef kp_status (*kp__make_fn)(kp__compiled *c);

/* The compiled graph of kernel `name` ("solve.r<key>_f64"), made on first use from a copy of g
 * by `make`. Process-wide and thread-safe. A stored graph whose source differs from the one made
 * now (a 64-bit key collision) is an error. */
kp_status kp__compiled_get(const char *name, const kp_expr_graph *g, int f32, kp__make_fn make,
                           kp__compiled **out);

/* The solve layer's thread-local message (kp_solve_last_error): sets it and returns st. */
kp_status kp__solve_fail(kp_status st, const char *fmt, ...) KP_PRINTF(2, 3);

/* Every public solve call returns through this: a failure's message (kp__solve_fail's) becomes
 * kp_last_error(rt) too (rt NULL for the host-only calls). Returns st. */
kp_status kp__solve_report(const kp_runtime *rt, kp_status st);

/* Resolves `precision` on rt's device to f64 or f32; KP_ERR_UNSUPPORTED for f64 without
 * cl_khr_fp64. */
kp_status kp__solve_precision(kp_runtime *rt, kp_precision precision, kp_precision *out);

/* Registers (or finds, when already registered) the kernel described by desc; kernel name in
 * desc->name. Message through kp__solve_fail. */
kp_status kp__solve_register(kp_runtime *rt, const kp_kernel_desc *desc, kp_kernel **out);

/* The descriptor's `supported`: refuses an f64 kernel on a device without cl_khr_fp64. */
kp_status kp__solve_supported(kp_launch *l);

/* The program text the evaluation and LM kernels start with: the precision's `real`, KP_ND,
 * KP_NS and KP_NO, and the generated kp_residual; into c->source, c->n_values. */
kp_status kp__solve_make_source(kp__compiled *c);

/* Registers (or finds) the large-problem LM's generic kernels in one precision: out[] =
 * solve.sp_jv, sp_jtu, sp_dot, sp_vec, sp_loss, sp_block, sp_bsolve, sp_jtj (_f64 or _f32).
 * Message through kp__solve_fail. */
enum { KP__SPARSE_KERNELS = 8 };
kp_status kp__sparse_kernels(kp_runtime *rt, int f32, kp_kernel *out[KP__SPARSE_KERNELS]);

/* CG's iterations a step: max_cg_iterations, or with 0 4 sqrt(P) and at least 100 (CG's
 * iterations grow as the square root of the condition number, which on a mesh's Laplacian-like
 * normal equations grows as the vertices do). */
uint32_t kp__lm_max_cg(const kp_lm_sparse_options *o, size_t P);

/* The checks kp_lm_sparse_solve_host and kp_lm_sparse_solve share (every index in range). */
/* The LM options of a sparse solve: *opt->lm (struct_size checked by kp__lm_sparse_check), or
 * kp_lm_options_default() when opt or opt->lm is NULL. */
kp_lm_options kp__lm_sparse_lm(const kp_lm_sparse_options *opt);
kp_status kp__lm_sparse_check(const kp_expr_graph *g, const kp_lm_sparse_options *opt,
                              const kp_lm_sparse_problem *pb, const kp_lm_sparse_report *rep,
                              const char *fn);

/* The transposed index: parameter q's uses (i * S + s) are tent[tptr[q] .. tptr[q+1]-1], in
 * increasing order. 0 when memory ran out. */
int kp__lm_sparse_transpose(const int32_t *index, size_t n, size_t S, size_t P, int32_t *tptr,
                            int32_t *tent);

/* Diagonal block k (parameters k bs .. k bs + bs - 1, fewer at the end) of J^T J into B
 * [bs, bs]: over each parameter's uses in order, then the instance's slots. solve/sparse.cl's
 * sp_block sums the same way. */
void kp__lm_block(const double *J, const int32_t *index, const int32_t *tptr, const int32_t *tent,
                  size_t n, size_t O, size_t S, size_t P, size_t bs, size_t k, double *B);
/* z = (B + mu diag(D))^-1 r for one block of b <= bs <= 8 parameters by Cholesky, or r over
 * B's diagonal + mu D (where positive) when the factorization fails. sp_bsolve does the same. */
void kp__lm_block_solve(const double *B, const double *D, const double *r, double mu, size_t b,
                        size_t bs, double *z);

/* The dense path (solve/lm-dense.c). Whether a problem of P parameters takes it; the largest
 * dense_max_parameters accepted. */
enum { KP__LM_DENSE_MAX = 4096 };
int kp__lm_dense(const kp_lm_sparse_options *o, size_t P);
/* Columns [lo, hi) of row p of J^T J into row[hi - lo]: over p's uses in order, then the
 * instance's slots (an instance that uses p in two slots adds both cross terms); uses past n and
 * slots whose index is outside [lo, hi) are skipped. The dense path takes whole rows ([0, P):
 * solve/sparse.cl's sp_jtj sums the same way), kp__lm_block the block's columns. */
void kp__lm_jtj_row(const double *J, const int32_t *index, const int32_t *tptr, const int32_t *tent,
                    size_t n, size_t O, size_t S, size_t lo, size_t hi, size_t p, double *row);
/* The Cholesky factor L (lower, row stride lda) of A + mu diag(D), n x n; 0 when a pivot is not
 * positive and finite (L then partly written). */
int kp__lm_cholesky(const double *A, size_t lda, const double *D, double mu, size_t n, double *L);
/* z = (L L^T)^-1 r; z may be r. */
void kp__lm_cholesky_solve(const double *L, size_t lda, size_t n, const double *r, double *z);
/* h = -(A + mu diag D)^-1 g for the P x P matrix A (L: P x P scratch, its factor after); 0 when
 * it does not factor or the step is not finite. The drivers then refine h against the
 * matrix-free operator J^T (J h) + mu D h, at most KP__LM_DENSE_PASSES times, until its
 * residual is at most cg_tolerance |g| (J^T J formed in floating point loses what J's
 * conditioning squared costs: Lanczos3 from NIST's first start reached 6.7 digits without). */
enum { KP__LM_DENSE_PASSES = 3 };
int kp__lm_dense_step(const double *A, const double *D, const double *g, double mu, size_t P,
                      double *L, double *h);

/* The graph a residual was compiled from (its copy). */
const kp_expr_graph *kp__residual_graph(const kp_residual *res);

/* The scaling's and the damping's ceiling: a damping above it means the system is singular
 * (lm.cl repeats it for the device). */
#define KP__LM_CEILING 1e32

/* Nielsen's damping update (docs/solve.md): an accepted step of gain ratio rho shrinks mu by
 * max(1/3, 1 - (2 rho - 1)^3) and resets nu to 2. */
void kp__lm_damping_accept(double rho, double *mu, double *nu);
/* A refused step or a failed factorization: mu grows by nu, which doubles. Returns 1 where mu
 * passed KP__LM_CEILING (the system is singular). */
int kp__lm_damping_refuse(double *mu, double *nu);

/* Step 7 of docs/solve.md's mode 1, which mode 2 takes too: a step the cost cannot judge. Near a
 * close fit the cost carries rounding of the order of eps |r| |model| per residual, far above
 * eps * cost, and the model's predicted drop sinks below it while the steps are still accurate:
 * the ratio test then refuses good steps and the estimate stops digits short of the minimum, by
 * an amount that depends on the device's rounding (exp, contraction). kp__lm_unjudged: whether a
 * step the ratio test refused is one of those, the predicted drop `pred` (positive) and the
 * change cost_new - cost both below tol * cost (tol: KP__LM_UNJUDGED_F64 or _F32, the square
 * root of the precision's epsilon). Such a step is taken if the next step from the trial point
 * (its own J, g and D, the same damping) is at most half as long in D's norm, kp__lm_contracts
 * of next = sum D' h'^2 and step = sum D h^2: the iteration contracts, as Gauss-Newton does at a
 * minimum. Otherwise it is refused as before, so that a run of refusals ends on the step
 * tolerance. A step taken this way leaves the damping as it was and does not stop on the
 * function tolerance. lm.cl repeats both tests for mode 1 on the device. */
#define KP__LM_UNJUDGED_F64 1.4901161193847656e-08
#define KP__LM_UNJUDGED_F32 3.4526698e-4
int kp__lm_unjudged(double cost, double cost_new, double pred, double tol);
int kp__lm_contracts(double next, double step);

/* rho(s) and rho'(s) of the options' loss, s = r^2. */
void kp__lm_loss(const kp_lm_options *opt, double s, double *rho, double *rho1);

/* The argument checks kp_lm_solve_host and kp_lm_solve share (message via kp__solve_fail). */
kp_status kp__lm_check(const kp_expr_graph *g, const kp_lm_options *opt, const kp_lm_batch *b,
                       const char *fn);

#endif
