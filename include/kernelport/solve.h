/* SPDX-License-Identifier: Apache-2.0 */
/* Kernelport solve layer: residual expressions, their Jacobians compiled to kernels, and
 * Levenberg-Marquardt. Built on the application API only (kernelport.h, plugin.h). */
#ifndef KERNELPORT_SOLVE_H
#define KERNELPORT_SOLVE_H

#include "kernelport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Expression graphs                                                                          */
/* ------------------------------------------------------------------------------------------ */

/*
 * A residual is a scalar expression (or several: its outputs) evaluated once per instance. It
 * reads three kinds of leaves: constants; data inputs (slot d of instance i reads data[i, d]);
 * and parameters, reached through a per-instance index array (slot s of instance i reads
 * params[index[i, s]]), so instances share parameters (the vertices of a mesh edge) or each use
 * their own. Slots are numbered in the order they are declared, from 0.
 *
 * A graph is hash-consed: building the same operation on the same operands twice gives the same
 * node, so common subexpressions are computed once. Operations on constants are folded (unless
 * the result is not finite), x + 0, x * 1, x * 0 (as 0, even for an infinite x), x - 0, x / 1,
 * -(-x), x^0 and x^1 simplify, commutative operands take a fixed order and negation moves out of
 * products and quotients: equal expressions, however built, are one graph (one key).
 *
 * Building never fails loudly: a builder called with a bad operand (an invalid node or an id
 * past this graph's nodes; a node of another graph is not detected), a bad name, or when memory
 * runs out returns an invalid node (id < 0), and
 * the graph keeps the first error (kp_expr_graph_status, kp_expr_graph_error); every later
 * builder given that invalid node returns one too, so a whole expression can be built and
 * checked once at the end. A graph is used by one thread at a time.
 */
typedef struct kp_expr_graph kp_expr_graph;

/* A node of a graph: valid when id >= 0. A plain value; it stays valid as long as its graph. */
typedef struct kp_expr {
    int32_t id;
} kp_expr;

/* Operations. Comparisons give 1 or 0 (and no derivative); select(c, a, b) is a where c != 0,
 * else b, and its derivative is the chosen branch's. */
typedef enum kp_expr_op {
    KP_EXPR_CONST = 0,
    KP_EXPR_DATA,
    KP_EXPR_PARAM,
    KP_EXPR_ADD,
    KP_EXPR_SUB,
    KP_EXPR_MUL,
    KP_EXPR_DIV,
    KP_EXPR_NEG,
    KP_EXPR_ABS,
    KP_EXPR_MIN,
    KP_EXPR_MAX,
    KP_EXPR_SELECT,
    KP_EXPR_LT,
    KP_EXPR_LE,
    KP_EXPR_GT,
    KP_EXPR_GE,
    KP_EXPR_EQ,
    KP_EXPR_NE,
    KP_EXPR_EXP,
    KP_EXPR_LOG,
    KP_EXPR_SQRT,
    KP_EXPR_RSQRT, /* safe: 1 / sqrt(x) for x > 0, else 0 (so normalize(0) is 0, not NaN) */
    KP_EXPR_POW,   /* real exponent: exp(y log x); x < 0 gives NaN, 0^y 0 (y > 0), infinity
                      (y < 0) or NaN (y = 0); an integer constant y makes it powi */
    KP_EXPR_POWI,  /* integer exponent, any sign of x: pown(x, n) */
    KP_EXPR_SIN,
    KP_EXPR_COS,
    KP_EXPR_TAN,
    KP_EXPR_ATAN,
    KP_EXPR_ATAN2, /* atan2(y, x) */
    KP_EXPR_TANH,
    KP_EXPR_SIGMOID,
    KP_EXPR_OP_COUNT
} kp_expr_op;

/* The most data slots, parameter slots and outputs a graph may have. */
#define KP_EXPR_MAX_SLOTS 64
#define KP_EXPR_MAX_OUTPUTS 16

/* Creates an empty graph (*out, caller-owned: kp_expr_graph_destroy). Errors:
 * KP_ERR_INVALID_ARG (out NULL), KP_ERR_OUT_OF_MEMORY. */
KP_API kp_status kp_expr_graph_create(kp_expr_graph **out);

/* Releases a graph. NULL is a no-op. Compiled residuals made from it keep their own copy. */
KP_API void kp_expr_graph_destroy(kp_expr_graph *g);

/* KP_OK, or the first error a builder met (KP_ERR_INVALID_ARG, KP_ERR_OUT_OF_MEMORY). */
KP_API kp_status kp_expr_graph_status(const kp_expr_graph *g);

/* The message of the graph's last error (a builder's first, or the last failed parse),
 * "" when none. Owned by the graph, valid until its next failing call. */
KP_API const char *kp_expr_graph_error(const kp_expr_graph *g);

/* A constant. NaN and infinities are refused (an invalid node). */
KP_API kp_expr kp_expr_const(kp_expr_graph *g, double value);

/* The data input called `name` (copied), declaring it as the next data slot when new; names
 * are letters, digits and '_', not starting with a digit, and not a function's name. A name
 * already declared as a parameter is an error. */
KP_API kp_expr kp_expr_data(kp_expr_graph *g, const char *name);

/* The parameter called `name`, declaring it as the next parameter slot when new (as above). */
KP_API kp_expr kp_expr_param(kp_expr_graph *g, const char *name);

/* Declares several names at once: `names` separated by commas and/or spaces ("b1, b2, b3"),
 * as parameters (is_param != 0) or data. Returns KP_OK or the error (message in the graph). */
KP_API kp_status kp_expr_declare(kp_expr_graph *g, int is_param, const char *names);

/* Operations of one, two and three operands (kp_expr_op; a unary op given to kp_expr_binary is
 * an error, and so on). kp_expr_powi takes an integer exponent. */
KP_API kp_expr kp_expr_unary(kp_expr_graph *g, kp_expr_op op, kp_expr a);
KP_API kp_expr kp_expr_binary(kp_expr_graph *g, kp_expr_op op, kp_expr a, kp_expr b);
KP_API kp_expr kp_expr_select(kp_expr_graph *g, kp_expr cond, kp_expr a, kp_expr b);
KP_API kp_expr kp_expr_powi(kp_expr_graph *g, kp_expr a, int32_t n);

/* Vector helpers over arrays of `n` nodes (n >= 1): the dot product, the Euclidean norm, the
 * 3-vector cross product, and normalize (out[i] = a[i] * rsqrt(dot(a, a)), with the safe
 * rsqrt, so the zero vector maps to zero). `out` receives n (cross: 3) nodes. */
KP_API kp_expr kp_expr_dot(kp_expr_graph *g, size_t n, const kp_expr *a, const kp_expr *b);
KP_API kp_expr kp_expr_norm(kp_expr_graph *g, size_t n, const kp_expr *a);
KP_API void kp_expr_cross(kp_expr_graph *g, const kp_expr a[3], const kp_expr b[3], kp_expr out[3]);
KP_API void kp_expr_normalize(kp_expr_graph *g, size_t n, const kp_expr *a, kp_expr *out);

/* Appends `e` as the graph's next residual output (at most KP_EXPR_MAX_OUTPUTS). */
KP_API kp_status kp_expr_graph_output(kp_expr_graph *g, kp_expr e);

/*
 * Parses `text` (docs/solve.md gives the grammar) into the graph: statements separated by ';'
 * or new lines, each either `name = expression` (a local name for what follows) or an
 * expression, which becomes the next residual output. Names must be declared first
 * (kp_expr_param, kp_expr_data, kp_expr_declare). Example: with b1, b2 parameters and x, y
 * data, "b1*(1-exp(-b2*x)) - y".
 * On error returns KP_ERR_INVALID_ARG and the graph's message reads
 * "LINE:COL: error: expected ..., found ...", then the line and a caret under the column; the
 * graph's outputs are left as they were (nodes built on the way stay, unused). `text` is
 * borrowed for the call.
 */
KP_API kp_status kp_expr_parse(kp_expr_graph *g, const char *text);

/* What a graph holds. */
typedef struct kp_expr_graph_info {
    uint32_t struct_size; /* sizeof(kp_expr_graph_info), set by the caller */
    uint32_t n_data;      /* data slots */
    uint32_t n_params;    /* parameter slots */
    uint32_t n_outputs;
    uint32_t n_nodes; /* nodes the outputs reach */
    uint64_t key;     /* a hash of the normalized graph: equal graphs, however built, share it */
} kp_expr_graph_info;

KP_API kp_status kp_expr_graph_get_info(const kp_expr_graph *g, kp_expr_graph_info *out);

/* The name of data slot or parameter slot `index`, or NULL past the end. Owned by the graph. */
KP_API const char *kp_expr_data_name(const kp_expr_graph *g, uint32_t index);
KP_API const char *kp_expr_param_name(const kp_expr_graph *g, uint32_t index);

/*
 * The host reference: evaluates the outputs of one instance in double, with forward-mode
 * derivatives (dual numbers). `data` holds n_data values, `params` n_params values (the
 * instance's parameters in slot order). r receives n_outputs values; jac (may be NULL)
 * n_outputs * n_params partials, row o holding d r_o / d param slot s at [o * n_params + s].
 * Errors: KP_ERR_INVALID_ARG (an invalid graph, no outputs, NULL pointers).
 */
KP_API kp_status kp_expr_graph_eval(const kp_expr_graph *g, const double *data,
                                    const double *params, double *r, double *jac);

/* ------------------------------------------------------------------------------------------ */
/* Residuals compiled to kernels                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * Errors: every fallible kp_residual_* and kp_lm_* call reports like the core, its message in
 * kp_last_error(rt) for the runtime it works on (the one given to *_create, or the one its handle
 * was made with), or kp_last_error(NULL) for the calls without one (kp_lm_solve_host,
 * kp_lm_sparse_solve_host, kp_lm_summary). The graph builders keep theirs in the graph
 * (kp_expr_graph_error).
 *
 * kp_solve_last_error: the same message as that kp_last_error, for the last failing solve call on
 * this thread ("" when none); kept for the 0.2 API, an alias: new code reads kp_last_error. Valid
 * until the next failing solve call on this thread.
 */
KP_API const char *kp_solve_last_error(void);

typedef enum kp_precision {
    KP_PRECISION_AUTO = 0, /* f64 where the device has cl_khr_fp64 (and on the host), else f32 */
    KP_PRECISION_F64,
    KP_PRECISION_F32,
} kp_precision;

/* "auto", "f64", "f32". */
KP_API const char *kp_precision_name(kp_precision p);

typedef struct kp_residual kp_residual;

/*
 * Compiles graph `g` (copied; the caller may destroy it afterwards) for runtime `rt`: generates
 * OpenCL C computing every output and its partial derivatives (symbolic forward mode, straight-
 * line code, shared subexpressions) and registers it with kp_kernel_register as
 * "solve.r<key>_f64" (or _f32), with a host reference (the graph interpreted in double), a
 * sample and a cost, so `kernelport verify`, `bench` and the program cache treat it like any
 * kernel. The name derives from the normalized graph, so equal graphs share one kernel and its
 * cached binary; a kernel already registered under that name is reused.
 * The generated code's host reference keeps a copy of the graph for as long as the process
 * lives (one per distinct graph), since the runtime may call it until it is destroyed.
 * Errors: KP_ERR_INVALID_ARG (an invalid graph, no outputs), KP_ERR_UNSUPPORTED (f64 asked on a
 * device without cl_khr_fp64), kp_kernel_register's. Message in kp_last_error(rt).
 */
KP_API kp_status kp_residual_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                                    kp_residual **out);

/* Releases the handle (the registered kernel stays with the runtime). NULL is a no-op. A
 * residual, like a kp_lm or kp_lm_sparse, is used by one thread at a time (it owns the buffer
 * its status flags come back in); several may share a runtime. */
KP_API void kp_residual_destroy(kp_residual *res);

/* The registered kernel, its precision (f64 or f32, never auto), and the generated source (owned
 * by the residual). */
KP_API kp_kernel *kp_residual_kernel(const kp_residual *res);
KP_API kp_precision kp_residual_precision(const kp_residual *res);
KP_API const char *kp_residual_source(const kp_residual *res);

/*
 * Evaluates n instances in one dispatch. Tensors, all contiguous, in the residual's precision
 * (f64 or f32) except the int32 index:
 *   data   [n, n_data]  (may be a [n, 0] or absent tensor (buffer NULL) when n_data is 0)
 *   index  [n, n_params] int32: params[index[i, s]] is slot s of instance i
 *   params [P]
 *   r      [n, n_outputs]            output
 *   jac    [n, n_outputs, n_params]  output: the Jacobian in block form, instance i's row o
 *          holding d r[i, o] / d params[index[i, s]] at s; its columns are `index`.
 * Blocking: it then reads back two flags and fails with KP_ERR_INVALID_ARG naming the first
 * instance whose index lies outside [0, P), its slot and the index (that instance's outputs are
 * left unwritten), or with
 * KP_ERR_VERIFY naming the first instance whose r or jac is NaN or infinite. Errors also those
 * of kp_kernel_launch. Message in kp_last_error(rt).
 */
KP_API kp_status kp_residual_evaluate(kp_residual *res, int64_t n, kp_tensor data, kp_tensor index,
                                      kp_tensor params, kp_tensor r, kp_tensor jac);

/* ------------------------------------------------------------------------------------------ */
/* Levenberg-Marquardt, many small problems                                                   */
/* ------------------------------------------------------------------------------------------ */

typedef enum kp_loss {
    KP_LOSS_SQUARED = 0, /* rho(s) = s, s = r^2 */
    KP_LOSS_HUBER,       /* rho(s) = s for s <= a^2, else 2 a sqrt(s) - a^2 */
    KP_LOSS_CAUCHY,      /* rho(s) = a^2 log(1 + s / a^2) */
} kp_loss;

typedef struct kp_lm_options {
    uint32_t struct_size;
    uint32_t max_iterations;   /* Jacobian evaluations, at most (default 100) */
    double gradient_tolerance; /* stop when max |g_j| <= this (default 1e-10) */
    double step_tolerance;     /* stop when |h| <= this * (|x| + this) (default 1e-8) */
    double function_tolerance; /* stop when an accepted step lowers the cost by <= this * cost
                                  (default 1e-6) */
    double initial_damping;    /* mu0: the damping is mu * diag(J^T J), relative to each
                                  parameter's curvature (default 1e-4) */
    double min_diagonal;       /* the scaling diag(J^T J) clamped to [this, 1e32] (1e-6) */
    kp_loss loss;
    double loss_scale; /* `a` of the robust losses (default 1) */
} kp_lm_options;

KP_API kp_lm_options kp_lm_options_default(void);

/* Why a problem stopped. */
typedef enum kp_lm_status {
    KP_LM_GRADIENT = 0,   /* converged: gradient tolerance */
    KP_LM_STEP = 1,       /* converged: step tolerance */
    KP_LM_FUNCTION = 2,   /* converged: function tolerance */
    KP_LM_MAX_ITERATIONS, /* not converged in max_iterations */
    KP_LM_SINGULAR,       /* the damped system stayed singular up to mu = 1e32 */
    KP_LM_NONFINITE,      /* at the starting point a residual or a derivative (as it shows in
                             J^T r) is NaN or infinite; later points where one is are refused
                             like points that raise the cost */
    KP_LM_STATUS_COUNT
} kp_lm_status;

/* "gradient", "step", "function", "max-iterations", "singular", "non-finite". */
KP_API const char *kp_lm_status_name(kp_lm_status s);

/* Converged (gradient, step or function tolerance). */
#define KP_LM_CONVERGED(s) ((s) <= KP_LM_FUNCTION)

/*
 * A batch of independent problems, all with the same residual graph, on host memory. Problem b
 * owns instances rows[b] .. rows[b + 1] - 1 (data rows of `data`, n_data values each) and the
 * parameters x[b * n_params .. ] (parameter slot s is its parameter s: no index array). x is
 * read as the starting point and written with the estimate.
 */
typedef struct kp_lm_batch {
    uint32_t struct_size; /* sizeof(kp_lm_batch) */
    size_t n_problems;    /* B */
    const int32_t *rows;  /* [B + 1], rows[0] = 0, non-decreasing */
    const double *data;   /* [rows[B], n_data] (NULL when n_data is 0) */
    double *x;            /* [B, n_params] in and out */
    double *cost;         /* [B] out: 0.5 * sum rho(r^2) at x (may be NULL) */
    int32_t *iterations;  /* [B] out: Jacobian evaluations (may be NULL) */
    int32_t *status;      /* [B] out: kp_lm_status (may be NULL) */
    double seconds[3];    /* out: upload, solve, download (device); solve alone (host) */
} kp_lm_batch;

/*
 * The host reference solver, in double: for each problem in turn, Levenberg-Marquardt with the
 * step h minimizing |J h + r|^2 + mu h^T D h, D = diag(J^T J) clamped, from a Householder QR of J
 * (J^T J is never formed, so the step is as accurate as J's conditioning allows) and Givens
 * rotations for the damping (MINPACK's way), Nielsen's damping update, stopping on gradient, step
 * and cost (kp_lm_options); near a close fit, where the cost's rounding hides the model's
 * predicted reduction, a step is still taken while the steps contract (docs/solve.md); robust
 * losses by the first-order (IRLS) correction. Every trial point is evaluated with its Jacobian,
 * and `iterations` counts those evaluations. Errors: KP_ERR_INVALID_ARG (an invalid graph, more
 * than 32 parameters, bad rows; message in kp_last_error(NULL)). A problem that does not converge
 * is a status, not an error (kp_lm_summary explains them). `opt` may be NULL for defaults.
 */
KP_API kp_status kp_lm_solve_host(const kp_expr_graph *g, const kp_lm_options *opt,
                                  kp_lm_batch *batch);

/* One paragraph on a solved batch's statuses: "13 of 14 converged; 1 singular (first: problem
 * 3): the damped system stayed singular (...)", into out (truncated to size).
 * Errors: KP_ERR_INVALID_ARG (NULL batch, status or out). */
KP_API kp_status kp_lm_summary(const kp_lm_batch *batch, char *out, size_t size);

typedef struct kp_lm kp_lm;

/*
 * Compiles the batched solver for graph `g` (copied) on runtime `rt`: one work-group per
 * problem, the same algorithm as kp_lm_solve_host, J^T r summed and J factored (Householder QR
 * in place in global scratch, its dot products in fixed slices) in a fixed order (no float
 * atomics: the same bits whatever the work-group size), the damped step in local memory.
 * Registered like kp_residual_create's kernel, as "solve.lm<key>_f64" (or _f32). At most 32
 * parameters. Errors: as kp_residual_create.
 */
KP_API kp_status kp_lm_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                              kp_lm **out);
KP_API void kp_lm_destroy(kp_lm *lm);
KP_API kp_kernel *kp_lm_kernel(const kp_lm *lm);
KP_API kp_precision kp_lm_precision(const kp_lm *lm);

/* Solves a batch on the device: copies it in (converting to f32 for an f32 solver), launches
 * once, copies x, cost, iterations and status back; batch->seconds holds the three phases.
 * Errors: KP_ERR_INVALID_ARG (bad rows, NULL arrays), the launch's. The kernel is also usable
 * directly (kp_lm_kernel: tensors data, rows, x, cost, iterations, status; ints instances,
 * max_iterations, loss; floats for the tolerances), which keeps the batch on the device. */
KP_API kp_status kp_lm_solve(kp_lm *lm, const kp_lm_options *opt, kp_lm_batch *batch);

/* ------------------------------------------------------------------------------------------ */
/* Levenberg-Marquardt, one large sparse problem                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * One problem whose instances share parameters through the index array (a mesh: one instance
 * per edge, its slots the coordinates of the edge's two vertices). Host arrays; x is read as the
 * starting point and written with the estimate.
 */
typedef struct kp_lm_sparse_problem {
    uint32_t struct_size; /* sizeof(kp_lm_sparse_problem) */
    size_t n_instances;   /* n */
    const double *data;   /* [n, n_data] (NULL when n_data is 0) */
    const int32_t *index; /* [n, n_params]: instance i's slot s is x[index[i, s]] */
    size_t n_x;           /* P: the problem's parameters */
    double *x;            /* [P] in and out */
} kp_lm_sparse_problem;

/* Called after each accepted or rejected step; the struct is valid during the call. */
typedef struct kp_lm_sparse_progress {
    int32_t iteration;     /* Jacobian evaluations so far */
    int32_t cg_iterations; /* of this step's linear solve */
    double cost;           /* at the current x (after the step when it was accepted) */
    double damping;        /* mu */
    int accepted; /* 1: the step was taken: the cost fell, or near a close fit the cost could not
                     judge it and the next step contracted (docs/solve.md, step 7), where the
                     cost may rise by its rounding */
    double gradient_max; /* max |J^T r| at the point the step was taken from */
    double cg_residual;  /* where this step's CG stopped: |(J^T J + mu D) h + J^T r| / |J^T r|
                            (above cg_tolerance when max_cg_iterations cut it short); for a
                            dense step the Cholesky solve's (rounding: about 1e-15 in f64) */
    int32_t dense;       /* 1: this step's system was solved by dense Cholesky (cg_iterations
                            0), not CG: see kp_lm_sparse_options.dense_max_parameters */
} kp_lm_sparse_progress;

typedef struct kp_lm_sparse_options {
    uint32_t struct_size;
    uint32_t max_cg_iterations; /* per step; 0 (the default): 4 sqrt(P), at least 100 */
    /* Iterations, tolerances, damping, loss (as for small problems): the caller's kp_lm_options,
     * a structure of its own that grows by its own struct_size, read during the call; NULL:
     * kp_lm_options_default()'s. */
    const kp_lm_options *lm;
    /* Each step's CG stops when |residual| <= this * |J^T r| (default 1e-3: an inexact Newton
     * step; docs/solve.md says why not looser, nor an Eisenstat-Walker sequence). */
    double cg_tolerance;
    void (*progress)(void *user, const kp_lm_sparse_progress *p); /* may be NULL */
    void *user;
    /* The preconditioner's blocks: 1 (Jacobi, the default) or up to 8 consecutive parameters
     * whose block of J^T J + mu D is solved exactly (3 for a mesh's vertices: x, y, z). */
    uint32_t block_size;
    /* Problems of at most this many parameters (P) solve each step's system by a dense Cholesky
     * factorization instead of CG: J^T J assembled as a P x P matrix (on the device, one
     * work-item per row, in a fixed order), then (J^T J + mu D) h = -J^T r factored in double on
     * the host; a matrix that does not factor raises the damping, as a CG breakdown does.
     * Default 256 (docs/solve.md: where dense beat CG on PoCL); 0: always CG; at most 4096 (the
     * matrix and its factor take 2 P^2 doubles on the host, and P^2 reals on the device). */
    uint32_t dense_max_parameters;
} kp_lm_sparse_options;

KP_API kp_lm_sparse_options kp_lm_sparse_options_default(void);

typedef struct kp_lm_sparse_report {
    uint32_t struct_size; /* sizeof(kp_lm_sparse_report), set by the caller */
    kp_lm_status status;
    int32_t iterations;    /* Jacobian evaluations */
    int64_t cg_iterations; /* in all (step 7's steps from a trial point included) */
    double initial_cost, cost;
    double seconds[4]; /* evaluation, normal equations (J^T r, diagonal; J^T J when dense),
                          the linear solves (CG, or the dense factorizations), the rest */
    int32_t dense;     /* 1: every step was solved by dense Cholesky (P <= dense_max_parameters;
                          cg_iterations 0) */
} kp_lm_sparse_report;

/*
 * The host reference, in double: Levenberg-Marquardt as kp_lm_solve_host, except that each step
 * solves (J^T J + mu D) h = -J^T r by conjugate gradients preconditioned by its diagonal (Jacobi)
 * or its diagonal blocks (block_size > 1; a block whose factorization fails falls back to its
 * diagonal),
 * matrix-free (J and J^T applied in turn; J^T gathered per parameter through the transposed
 * index, in a fixed order), from h = 0, until the residual falls below cg_tolerance |J^T r| or
 * max_cg_iterations; the predicted reduction is -g.h - |J h|^2 / 2, exact for an inexact solve;
 * a CG breakdown (p.Ap <= 0) before the first step is treated as a failed factorization (a
 * later one keeps the step so far). With P <= dense_max_parameters each step instead factors
 * J^T J + mu D (J^T J gathered per parameter row through the transposed index) by Cholesky; a
 * matrix that does not factor is a failed factorization too. A step the cost cannot judge near
 * a close fit is taken when the step from the trial point contracts, as kp_lm_solve_host takes
 * it (docs/solve.md, step 7; the trial point's system is solved for that). `opt` may be NULL.
 * Errors: KP_ERR_INVALID_ARG (an invalid graph, NULL arrays, an index outside [0, P): the message,
 * in kp_last_error(NULL), names the instance and slot; block_size above 8, dense_max_parameters
 * above 4096), KP_ERR_OUT_OF_MEMORY.
 */
KP_API kp_status kp_lm_sparse_solve_host(const kp_expr_graph *g, const kp_lm_sparse_options *opt,
                                         const kp_lm_sparse_problem *problem,
                                         kp_lm_sparse_report *report);

typedef struct kp_lm_sparse kp_lm_sparse;

/*
 * Compiles graph `g` (copied) for the device: its residual kernel (kp_residual_create's) and the
 * generic kernels of the large-problem LM (solve.sp_jv, sp_jtu, sp_dot, sp_vec, sp_loss,
 * sp_block, sp_bsolve, sp_jtj, with an _f64 or _f32 suffix), all registered at run time. Errors: as
 * kp_residual_create.
 */
KP_API kp_status kp_lm_sparse_create(kp_runtime *rt, const kp_expr_graph *g, kp_precision precision,
                                     kp_lm_sparse **out);
KP_API void kp_lm_sparse_destroy(kp_lm_sparse *lm);
KP_API kp_precision kp_lm_sparse_precision(const kp_lm_sparse *lm);

/*
 * kp_lm_sparse_solve_host's algorithm on the device: the problem is copied in once, every vector
 * stays on the device, J^T is gathered per parameter in a fixed order and each dot product
 * leaves 4096 partial sums, in a fixed order too, which the host reads and adds (the host takes
 * the decisions: a few reads per CG iteration; on the dense path J^T J is assembled on the
 * device, read once per accepted step (step 7 assembles it at its trial point too, and at x
 * again when it refuses the step), and factored on the host in double, the step written back).
 * Same bits on every run on a device; close to, not equal to, the host reference's.
 * report->seconds: evaluation, normal equations, CG, the rest (uploads included). Errors: as
 * kp_lm_sparse_solve_host; the launches' (message in kp_last_error(rt)).
 */
KP_API kp_status kp_lm_sparse_solve(kp_lm_sparse *lm, const kp_lm_sparse_options *opt,
                                    const kp_lm_sparse_problem *problem,
                                    kp_lm_sparse_report *report);

#ifdef __cplusplus
}
#endif

#endif
