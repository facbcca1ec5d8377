/* SPDX-License-Identifier: Apache-2.0 */
/* tensor.<op> and tensor.<op>_backward: elementwise ops with NumPy broadcasting, and their
 * gradients, summed over the axes an operand was broadcast along (a fixed-order sum). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tensor-kernels.h"
#include "tensor.h"

/* Storage f32, f16 or bf16 (tensor-dtypes.c); the arithmetic is f32 whatever it is. */
#define F32 TENSOR_FLOATS

/* Parameters of each kind of kernel. Outputs may be an input's very view (in place). */
enum { UN_X, UN_Y, UN_N };
static const kp_param_desc unary_params[] = {
    [UN_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "any shape that broadcasts to y's, any strides"},
    [UN_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
              .doc = "the result; may be x itself"},
};
enum { BI_A, BI_B, BI_Y, BI_N };
static const kp_param_desc binary_params[] = {
    [BI_A] = {.name = "a",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "broadcasts with b to y's shape"},
    [BI_B] = {.name = "b",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "broadcasts with a to y's shape; rank 0 for a scalar"},
    [BI_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
              .doc = "the result; may be a or b itself"},
};
enum { WH_COND, WH_A, WH_B, WH_Y, WH_N };
static const kp_param_desc where_params[] = {
    [WH_COND] = {.name = "cond",
                 .kind = KP_ARG_KIND_TENSOR,
                 .flags = KP_PARAM_NEGATIVE_STRIDES,
                 .access = KP_ACCESS_IN,
                 .dtypes = TENSOR_ANY_DTYPE,
                 .doc = "nonzero picks a"},
    [WH_A] = {.name = "a",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "where cond is nonzero"},
    [WH_B] = {.name = "b",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "where cond is zero"},
    [WH_Y] = {.name = "y",
              .kind = KP_ARG_KIND_TENSOR,
              .access = KP_ACCESS_OUT,
              .dtypes = F32,
              .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
              .doc = "cond, a and b broadcast to its shape"},
};
enum { UB_DY, UB_X, UB_DX, UB_N };
static const kp_param_desc unary_back_params[] = {
    [UB_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "the gradient of y, y's shape"},
    [UB_X] = {.name = "x",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "the forward's input"},
    [UB_DX] = {.name = "dx",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = F32,
               .flags = KP_PARAM_ALIAS_INPUTS | KP_PARAM_NEGATIVE_STRIDES,
               .doc = "x's shape: dy f'(x), summed over the axes x was broadcast along"},
};
enum { BB_DY, BB_A, BB_B, BB_DA, BB_DB, BB_N };
static const kp_param_desc binary_back_params[] = {
    [BB_DY] = {.name = "dy",
               .kind = KP_ARG_KIND_TENSOR,
               .flags = KP_PARAM_NEGATIVE_STRIDES,
               .access = KP_ACCESS_IN,
               .dtypes = F32,
               .doc = "the gradient of y, y's shape"},
    [BB_A] = {.name = "a",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "the forward's a"},
    [BB_B] = {.name = "b",
              .kind = KP_ARG_KIND_TENSOR,
              .flags = KP_PARAM_NEGATIVE_STRIDES,
              .access = KP_ACCESS_IN,
              .dtypes = F32,
              .doc = "the forward's b"},
    [BB_DA] = {.name = "da",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = F32,
               .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
               .doc = "a's shape, summed over the axes a was broadcast along"},
    [BB_DB] = {.name = "db",
               .kind = KP_ARG_KIND_TENSOR,
               .access = KP_ACCESS_OUT,
               .dtypes = F32,
               .flags = KP_PARAM_OPTIONAL | KP_PARAM_NEGATIVE_STRIDES,
               .doc = "b's shape, summed over the axes b was broadcast along"},
};

/* The shape the inputs broadcast to, or a failure naming them and their shapes. */
static kp_status broadcast_shape(kp_launch *l, const kp_tensor *const *in, const char *const *names,
                                 int n, int *rank, int64_t *shape)
{
    *rank = 0;
    for (int i = 0; i < n; i++)
        if (in[i]->rank > *rank)
            *rank = in[i]->rank;
    for (int d = 0; d < *rank; d++) {
        shape[d] = 1;
        for (int i = 0; i < n; i++) {
            int od = d - (*rank - in[i]->rank);
            int64_t e = od < 0 ? 1 : in[i]->shape[od];
            if (e == 1)
                continue;
            if (shape[d] != 1 && shape[d] != e) {
                char a[160], b[160];
                int j = 0;
                while (j < i && !(d - (*rank - in[j]->rank) >= 0 &&
                                  in[j]->shape[d - (*rank - in[j]->rank)] == shape[d]))
                    j++;
                return tensor_host->fail(l, KP_ERR_INVALID_ARG,
                                         "%s %s and %s %s do not broadcast together (dimension "
                                         "%d: %lld against %lld)",
                                         names[j], tensor_shape_str(in[j], a, sizeof a), names[i],
                                         tensor_shape_str(in[i], b, sizeof b), d - *rank,
                                         (long long)shape[d], (long long)e);
            }
            shape[d] = e;
        }
    }
    return KP_OK;
}

/* The forward's space: the inputs broadcast together, and to y's shape (NumPy's rule with an
 * `out`: y itself is never broadcast). */
static kp_status forward_space(kp_launch *l, const kp_tensor *const *in, const char *const *names,
                               int n, const kp_tensor *y, tensor_space *s)
{
    int rank;
    int64_t shape[KP_MAX_RANK];
    kp_status st = broadcast_shape(l, in, names, n, &rank, shape);
    return st == KP_OK ? tensor_space_make(l, y->rank, y->shape, y, "y", in, names, n, s) : st;
}

static const tensor_op *op_of(kp_launch *l)
{
    return tensor_host->kernel_user(l);
}

/* ---- forward ---- */

static int forward_inputs(const kp_call *call, const tensor_op *op, const kp_tensor **in,
                          const char **names, const kp_tensor **y)
{
    static const char *const unary[] = {"x"}, *const binary[] = {"a", "b"},
                             *const where[] = {"cond", "a", "b"};
    const char *const *n = op->arity == 1 ? unary : op->arity == 2 ? binary : where;
    for (int i = 0; i < op->arity; i++) {
        in[i] = &call->args[i].tensor;
        names[i] = n[i];
    }
    *y = &call->args[op->arity].tensor;
    return op->arity;
}

static kp_status forward_check(const kp_call *call, kp_launch *l)
{
    const kp_tensor *in[3], *y;
    const char *names[3];
    int n = forward_inputs(call, op_of(l), in, names, &y);
    tensor_space s;
    return forward_space(l, in, names, n, y, &s);
}

static kp_status forward_enqueue(const kp_call *call, kp_launch *l)
{
    const tensor_op *op = op_of(l);
    const kp_tensor *in[3], *y;
    const char *names[3];
    int n = forward_inputs(call, op, in, names, &y);
    tensor_space s;
    kp_status st = forward_space(l, in, names, n, y, &s);
    return st == KP_OK ? tensor_space_enqueue(l, &s, y, in, op->map, TC_SUM, 0.0, 1.0) : st;
}

static const void *host_of(const kp_call *call, int i)
{
    return call->args[i].host;
}

static kp_status forward_reference(const kp_call *call, kp_launch *l)
{
    const tensor_op *op = op_of(l);
    const kp_tensor *in[3], *y;
    const char *names[3];
    int n = forward_inputs(call, op, in, names, &y);
    tensor_space s;
    kp_status st = forward_space(l, in, names, n, y, &s);
    if (st != KP_OK)
        return st;
    const void *ptr[3];
    for (int i = 0; i < n; i++)
        ptr[i] = host_of(call, i);
    tensor_space_reference(&s, call->args[n].host, y->dtype, ptr, op->map, TC_SUM, 0.0, 1.0);
    return KP_OK;
}

/* ---- backward ---- */

static kp_status unary_back_space(kp_launch *l, const kp_call *call, tensor_space *s)
{
    const kp_tensor *dy = &call->args[UB_DY].tensor, *x = &call->args[UB_X].tensor,
                    *dx = &call->args[UB_DX].tensor;
    kp_status st = tensor_host->check_shape(l, "dx", dx, x->rank, x->shape, NULL);
    const kp_tensor *in[2] = {dy, x};
    static const char *const names[2] = {"dy", "x"};
    return st == KP_OK ? tensor_space_make(l, dy->rank, dy->shape, dx, "dx", in, names, 2, s) : st;
}

static kp_status unary_back_check(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    return unary_back_space(l, call, &s);
}

static kp_status unary_back_enqueue(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = unary_back_space(l, call, &s);
    const kp_tensor *in[2] = {&call->args[UB_DY].tensor, &call->args[UB_X].tensor};
    return st == KP_OK ? tensor_space_enqueue(l, &s, &call->args[UB_DX].tensor, in, op_of(l)->d_map,
                                              TC_SUM, 0.0, 1.0)
                       : st;
}

static kp_status unary_back_reference(const kp_call *call, kp_launch *l)
{
    tensor_space s;
    kp_status st = unary_back_space(l, call, &s);
    const void *ptr[2] = {host_of(call, UB_DY), host_of(call, UB_X)};
    if (st == KP_OK)
        tensor_space_reference(&s, call->args[UB_DX].host, s.out_dtype, ptr, op_of(l)->d_map,
                               TC_SUM, 0.0, 1.0);
    return st;
}

/* The space of da (which 0) or db (which 1): dy, a and b over dy's shape, the gradient
 * broadcast (reduced) where its operand was. */
static kp_status binary_back_space(kp_launch *l, const kp_call *call, int which, tensor_space *s)
{
    const kp_tensor *dy = &call->args[BB_DY].tensor, *a = &call->args[BB_A].tensor,
                    *b = &call->args[BB_B].tensor;
    const kp_tensor *g = &call->args[which ? BB_DB : BB_DA].tensor, *of = which ? b : a;
    const char *name = which ? "db" : "da";
    kp_status st = tensor_host->check_shape(l, name, g, of->rank, of->shape, NULL);
    const kp_tensor *in[3] = {dy, a, b};
    static const char *const names[3] = {"dy", "a", "b"};
    return st == KP_OK ? tensor_space_make(l, dy->rank, dy->shape, g, name, in, names, 3, s) : st;
}

static kp_status binary_back_check(const kp_call *call, kp_launch *l)
{
    if (!call->args[BB_DA].present && !call->args[BB_DB].present)
        return tensor_host->fail(l, KP_ERR_INVALID_ARG, "da, db: give at least one of them");
    tensor_space s;
    for (int which = 0; which < 2; which++) {
        kp_status st = call->args[which ? BB_DB : BB_DA].present
                           ? binary_back_space(l, call, which, &s)
                           : KP_OK;
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

static kp_status binary_back_run(const kp_call *call, kp_launch *l, int reference)
{
    const tensor_op *op = op_of(l);
    const kp_tensor *in[3] = {&call->args[BB_DY].tensor, &call->args[BB_A].tensor,
                              &call->args[BB_B].tensor};
    for (int which = 0; which < 2; which++) {
        int out = which ? BB_DB : BB_DA, map = which ? op->db_map : op->d_map;
        if (!call->args[out].present)
            continue;
        tensor_space s;
        kp_status st = binary_back_space(l, call, which, &s);
        if (st == KP_OK && !reference)
            st = tensor_space_enqueue(l, &s, &call->args[out].tensor, in, map, TC_SUM, 0.0, 1.0);
        if (st != KP_OK)
            return st;
        if (reference) {
            const void *ptr[3] = {host_of(call, BB_DY), host_of(call, BB_A), host_of(call, BB_B)};
            tensor_space_reference(&s, call->args[out].host, s.out_dtype, ptr, map, TC_SUM, 0.0,
                                   1.0);
        }
    }
    return KP_OK;
}

static kp_status binary_back_enqueue(const kp_call *call, kp_launch *l)
{
    return binary_back_run(call, l, 0);
}

static kp_status binary_back_reference(const kp_call *call, kp_launch *l)
{
    return binary_back_run(call, l, 1);
}

/* ---- samples ---- */

/* Sample sizes: one element; primes; broadcasting (an input of extent 1 or missing on some
 * axes); strided views (a transposed input, an output with gaps between its rows); flipped views
 * (negative strides: flip_masks). */
static const char *const verify_sizes[] = {"one", "prime", "bcast", "views", "flipped", NULL};
static const char *const bench_sizes[] = {"16M", "4096x4096+4096", NULL};
/* A few ops check 16-bit and mixed storage too (each combination of dtypes is one more program
 * to build): "prime-bf16" and "prime-f16" with every operand of that dtype (contiguous: 16-bit
 * vectors), "mixed" with bcast's shapes, a f16 (where: an i32 cond), b bf16 and y f32. */
static const char *const add_sizes[] = {"one",        "prime", "bcast", "views",
                                        "prime-bf16", "mixed", NULL};
static const char *const exp_sizes[] = {"one", "prime", "bcast", "views", "prime-f16", NULL};
static const char *const where_sizes[] = {"one", "prime", "bcast", "views", "mixed", NULL};
static const char *const bf16_bench_sizes[] = {"16M", "4096x4096+4096", "16M-bf16",
                                               "4096x4096+4096-bf16", NULL};

/* The shapes' size name of `size` (without its dtypes) into base, and operand i's dtype in
 * dt[i] (the output's at dt[arity]). */
static void size_dtypes(const char *size, const tensor_op *op, char *base, size_t n, int32_t *dt)
{
    tensor_size_dtypes(size, base, n, dt, op->arity + 1);
    if (strcmp(size, "mixed") == 0) {
        snprintf(base, n, "bcast");
        dt[0] = op->map == TM_WHERE ? KP_I32 : KP_F16;
        dt[1] = KP_BF16;
        dt[2] = KP_F16;
        dt[op->arity] = KP_F32;
    }
}

typedef struct shapes {
    int rank[4]; /* inputs (up to 3), then the output */
    int64_t shape[4][3];
} shapes;

/* Input i's shape at `size` for an op of `arity` inputs (the output's is index arity). */
static int sample_shapes(const char *size, int arity, shapes *sh)
{
    memset(sh, 0, sizeof *sh);
    int64_t y[3] = {37, 53, 0};
    int ry = 2;
    if (strcmp(size, "one") == 0) {
        ry = 1;
        y[0] = 1;
    } else if (strcmp(size, "bcast") == 0) {
        ry = 3;
        y[0] = 5, y[1] = 11, y[2] = 7;
    } else if (strcmp(size, "16M") == 0) {
        ry = 1;
        y[0] = 1 << 24;
    } else if (strcmp(size, "4096x4096+4096") == 0) {
        ry = 2;
        y[0] = y[1] = 4096;
    } else if (strcmp(size, "prime") != 0 && strcmp(size, "views") != 0 &&
               strcmp(size, "flipped") != 0) {
        return 0;
    }
    for (int i = 0; i <= arity; i++) {
        sh->rank[i] = ry;
        memcpy(sh->shape[i], y, sizeof y);
    }
    if (strcmp(size, "bcast") == 0) {
        /* [5, 1, 7] with [11, 1] (with [7] for where's third) into [5, 11, 7]; a unary op's x is
         * [1, 11, 1]. */
        if (arity == 1) {
            sh->shape[0][0] = sh->shape[0][2] = 1;
        } else {
            sh->shape[0][1] = 1;
            sh->rank[1] = 2;
            sh->shape[1][0] = 11;
            sh->shape[1][1] = 1;
            if (arity == 3) {
                sh->rank[2] = 1;
                sh->shape[2][0] = 7;
            }
        }
    } else if (strcmp(size, "4096x4096+4096") == 0 && arity >= 2) {
        sh->rank[1] = 1;
        sh->shape[1][0] = 4096;
    }
    return 1;
}

/* Makes the 2-D sampled tensor `name` [r, c] a transposed view of [c, r] storage (views). */
static kp_status transpose_view(kp_sample *smp, const char *name, const int64_t *shape)
{
    const int64_t strides[2] = {1, shape[0]};
    return tensor_host->sample_view(smp, name, 2, shape, 0, strides);
}

/* Makes output `name` [r, c] rows with 3 elements of gap after each, starting 2 in. */
static kp_status gapped_view(kp_sample *smp, const char *name, const int64_t *shape)
{
    const int64_t strides[2] = {shape[1] + 3, 1};
    return tensor_host->sample_view(smp, name, 2, shape, 2, strides);
}

static kp_status sample_input(kp_sample *smp, const char *name, const tensor_op *op, int i,
                              int32_t dtype, const shapes *sh, int views)
{
    double lo = i == 1 && op->arity == 2 ? op->b_lo : op->lo;
    double hi = i == 1 && op->arity == 2 ? op->b_hi : op->hi;
    /* An i32 cond: -1, 0 or 1 (nonzero picks a). */
    if (dtype == KP_I32)
        lo = -1, hi = 2;
    float *data;
    int64_t n = 1;
    for (int d = 0; d < sh->rank[i]; d++)
        n *= sh->shape[i][d];
    kp_status st = tensor_host->sample_tensor(smp, name, dtype, sh->rank[i], sh->shape[i], lo, hi,
                                              (void **)&data);
    /* where's f32 cond is 0 or 1; cmpeq compares integers, which meet often enough to matter. */
    if (st == KP_OK && dtype == KP_F32 && ((op->map == TM_WHERE && i == 0) || op->map == TM_CMPEQ))
        for (int64_t k = 0; k < n; k++)
            data[k] = op->map == TM_WHERE ? (data[k] > 0.0f) : (float)(int)data[k];
    if (st == KP_OK && views && i == 0)
        st = transpose_view(smp, name, sh->shape[i]);
    return st;
}

static kp_status sample_output(kp_sample *smp, const char *name, int32_t dtype, int rank,
                               const int64_t *shape, int views)
{
    if (!views)
        return tensor_host->sample_tensor(smp, name, dtype, rank, shape, 0.0, 0.0, NULL);
    const int64_t storage = 2 + shape[0] * (shape[1] + 3);
    kp_status st = tensor_host->sample_tensor(smp, name, dtype, 1, &storage, 0.0, 0.0, NULL);
    return st == KP_OK ? gapped_view(smp, name, shape) : st;
}

/* "flipped" [37, 53]: the dimensions (bit d: dimension d) each input reverses, by its index;
 * outputs and dy reverse both, so a unary op's operands coalesce to one dimension of stride -1
 * and a binary op's b keeps them apart. */
static const unsigned flip_masks[3] = {3, 1, 2};

static const char *const unary_names[] = {"x", "y"}, *const binary_names[] = {"a", "b", "y"},
                         *const where_names[] = {"cond", "a", "b", "y"};

static const char *const *names_of(const tensor_op *op)
{
    return op->arity == 1 ? unary_names : op->arity == 2 ? binary_names : where_names;
}

static kp_status forward_sample(kp_sample *smp, const char *size)
{
    const tensor_op *op = tensor_host->sample_kernel_user(smp);
    shapes sh;
    char base[32];
    int32_t dt[4];
    size_dtypes(size, op, base, sizeof base, dt);
    if (!sample_shapes(base, op->arity, &sh))
        return KP_ERR_NOT_FOUND;
    const int views = strcmp(base, "views") == 0, flipped = strcmp(base, "flipped") == 0;
    const char *const *names = names_of(op);
    kp_status st = KP_OK;
    for (int i = 0; st == KP_OK && i < op->arity; i++) {
        st = sample_input(smp, names[i], op, i, dt[i], &sh, views);
        if (st == KP_OK && flipped)
            st = tensor_sample_flip(smp, names[i], sh.rank[i], sh.shape[i], flip_masks[i]);
    }
    if (st == KP_OK)
        st = sample_output(smp, "y", dt[op->arity], sh.rank[op->arity], sh.shape[op->arity], views);
    return st == KP_OK && flipped
               ? tensor_sample_flip(smp, "y", sh.rank[op->arity], sh.shape[op->arity], 3)
               : st;
}

/* dy over y's shape, the forward's inputs, and the gradients of their shapes. */
static kp_status backward_sample(kp_sample *smp, const char *size)
{
    const tensor_op *op = tensor_host->sample_kernel_user(smp);
    shapes sh;
    if (!sample_shapes(size, op->arity, &sh))
        return KP_ERR_NOT_FOUND;
    const int views = strcmp(size, "views") == 0, flipped = strcmp(size, "flipped") == 0;
    const char *const *names = names_of(op);
    kp_status st = tensor_host->sample_tensor(smp, "dy", KP_F32, sh.rank[op->arity],
                                              sh.shape[op->arity], -1.0, 1.0, NULL);
    if (st == KP_OK && flipped)
        st = tensor_sample_flip(smp, "dy", sh.rank[op->arity], sh.shape[op->arity], 3);
    for (int i = 0; st == KP_OK && i < op->arity; i++) {
        char grad[8];
        snprintf(grad, sizeof grad, "d%s", names[i]);
        st = sample_input(smp, names[i], op, i, KP_F32, &sh, views);
        if (st == KP_OK && flipped)
            st = tensor_sample_flip(smp, names[i], sh.rank[i], sh.shape[i], flip_masks[i]);
        if (st == KP_OK)
            st = sample_output(smp, grad, KP_F32, sh.rank[i], sh.shape[i], views && i == 0);
        if (st == KP_OK && flipped)
            st = tensor_sample_flip(smp, grad, sh.rank[i], sh.shape[i], 3);
    }
    return st;
}

static void cost(const kp_call *call, kp_cost *out)
{
    double n = 1;
    for (uint32_t i = 0; i < call->n_args; i++) {
        double e = call->args[i].present ? (double)kp_tensor_numel(&call->args[i].tensor) : 0;
        n = e > n ? e : n;
    }
    out->flops = n;
    out->bytes = tensor_dtype_bytes(call);
}

/* A gradient summed over broadcast axes adds one rounding per term: the tolerance grows with
 * the terms of each output element. */
static void backward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    double terms = 1;
    const double ny = (double)kp_tensor_numel(&call->args[0].tensor);
    for (uint32_t i = 1; i < call->n_args; i++)
        if (call->args[i].present && call->desc->params[i].access != KP_ACCESS_IN) {
            double n = (double)kp_tensor_numel(&call->args[i].tensor);
            if (n > 0 && ny / n > terms)
                terms = ny / n;
        }
    *atol = 2e-6 * terms;
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

static void forward_tolerance(const kp_call *call, double *atol, double *rtol)
{
    *atol = 1e-6;
    *rtol = 1e-5;
    tensor_dtype_tolerance(call, atol, rtol);
}

/* ---- registration ---- */

#define MAX_KERNELS 64

static kp_kernel_desc descs[MAX_KERNELS];
static char names_buf[MAX_KERNELS][40];
static size_t n_descs;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add(const tensor_op *op, int backward)
{
    kp_kernel_desc *d = &descs[n_descs];
    snprintf(names_buf[n_descs], sizeof names_buf[0], "tensor.%s%s", op->name,
             backward ? "_backward" : "");
    n_descs++;
    *d = (kp_kernel_desc){
        .struct_size = sizeof(kp_kernel_desc),
        .name = names_buf[n_descs - 1],
        .summary = op->summary,
        .n_tunables = backward ? 2 : 1,
        .tunables = tensor_tunables,
        .source = kp_kernel_tensor_cl,
        .source_name = "tensor.cl",
        .entry = "tensor_map_reduce",
        .cost = cost,
        .verify_sizes = backward              ? verify_sizes
                        : op->map == TM_ADD   ? add_sizes
                        : op->map == TM_EXP   ? exp_sizes
                        : op->map == TM_WHERE ? where_sizes
                                              : verify_sizes,
        .bench_sizes =
            !backward && (op->map == TM_ADD || op->map == TM_EXP) ? bf16_bench_sizes : bench_sizes,
        .atol = 1e-6,
        .rtol = 1e-5,
        .user = (void *)op,
    };
    if (!backward) {
        d->params = op->arity == 1 ? unary_params : op->arity == 2 ? binary_params : where_params;
        d->n_params = op->arity == 1 ? UN_N : op->arity == 2 ? BI_N : WH_N;
        d->check = forward_check;
        d->enqueue = forward_enqueue;
        d->reference = forward_reference;
        d->sample = forward_sample;
        d->tolerance = forward_tolerance;
    } else {
        d->summary = op->arity == 1 ? "dx = dy f'(x), summed over x's broadcast axes"
                                    : "da, db: dy times y's partials, summed over broadcast axes";
        d->params = op->arity == 1 ? unary_back_params : binary_back_params;
        d->n_params = op->arity == 1 ? UB_N : BB_N;
        d->check = op->arity == 1 ? unary_back_check : binary_back_check;
        d->enqueue = op->arity == 1 ? unary_back_enqueue : binary_back_enqueue;
        d->reference = op->arity == 1 ? unary_back_reference : binary_back_reference;
        d->sample = backward_sample;
        d->tolerance = backward_tolerance;
    }
}

static void build(void)
{
    for (size_t i = 0; i < tensor_n_unary; i++) {
        add(&tensor_unary_ops[i], 0);
        add(&tensor_unary_ops[i], 1);
    }
    for (size_t i = 0; i < tensor_n_binary; i++) {
        add(&tensor_binary_ops[i], 0);
        if (tensor_binary_ops[i].d_map >= 0)
            add(&tensor_binary_ops[i], 1);
    }
}

kp_status tensor_register_elementwise(const kp_host_api *api, kp_registrar *reg)
{
    pthread_once(&once, build);
    for (size_t i = 0; i < n_descs; i++) {
        kp_status st = api->register_kernel(reg, &descs[i]);
        if (st != KP_OK)
            return st;
    }
    return KP_OK;
}

kp_status tensor_broadcast_shape(kp_launch *l, const kp_tensor *const *in, const char *const *names,
                                 int n, int *rank, int64_t *shape)
{
    return broadcast_shape(l, in, names, n, rank, shape);
}
