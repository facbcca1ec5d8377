/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tensor family's one kernel: out[o] = combine over r of map(inputs at (o, r)).
 *
 * The host lays every operand out in one iteration space of at most 8 dimensions: RO kept
 * dimensions (the output's) at view positions 0 .. RO - 1, and RR reduced dimensions at positions
 * 8 - RR .. 7, innermost last in each group; `ext` holds their extents at the same positions.
 * Elementwise ops have RR = 0; reductions and the backward of broadcast operands (the sum over
 * the axes an operand was broadcast along) have RR > 0. RO and RR are build options, so the
 * index arithmetic is unrolled, and a coalesced space (the common case: RO = 1, RR <= 1) divides
 * nothing. The op and the combine are arguments: one program serves every op, so a device
 * compiles one program per (RO, RR) rather than one per op.
 *
 * Determinism: each output element is one work-item's sequential loop over r in row-major order
 * of the reduced dimensions, so its bits depend neither on the work-group size nor on the run.
 */

#ifndef RO
#define RO 1
#endif
#ifndef RR
#define RR 0
#endif

/*
 * Storage dtypes, as kp_dtype numbers them: DT0, DT1, DT2 of the inputs x0, x1, x2 and DTY of y
 * (1 f32, the default; 2 f16; 3 i32; 6 bf16). Arithmetic is f32 whatever they are: the prelude's
 * KP_T, KP_LOAD, KP_STORE, KP_LOAD4 and KP_STORE4 read and write them.
 */
#ifndef DT0
#define DT0 1
#endif
#ifndef DT1
#define DT1 1
#endif
#ifndef DT2
#define DT2 1
#endif
#ifndef DTY
#define DTY 1
#endif

/* The bits of a same-dtype copy (RAW): half cannot be read as a value, so as a ushort. */
#define RAW_2 ushort
#define RAW_3 int
#define RAW_6 ushort
#define RAWT(d) KP_CAT(RAW_, d)
#define RAWT4(d) KP_CAT(RAWT(d), 4)

/* Map ops: forward unary (x0), forward binary (x0, x1), where (x0 ? x1 : x2), the backward of
 * unary ops (dy = x0, x = x1: dy f'(x)), of binary ops (dy = x0, a = x1, b = x2) for each
 * operand, and the helpers of reductions. Numbered as plugins/tensor/tensor-ops.h numbers them. */
enum {
    M_NEG, M_ABS, M_EXP, M_EXP2, M_LOG, M_LOG2, M_SQRT, M_RSQRT, M_RECIP, M_SIN, M_COS, M_TANH,
    M_SIGMOID, M_RELU, M_GELU, M_GELU_ERF, M_SILU, M_SQUARE, M_COPY, M_SCALE,
    M_ADD, M_SUB, M_MUL, M_DIV, M_MAX, M_MIN, M_POW, M_MOD, M_CMPLT, M_CMPEQ, M_WHERE,
    M_D_NEG, M_D_ABS, M_D_EXP, M_D_EXP2, M_D_LOG, M_D_LOG2, M_D_SQRT, M_D_RSQRT, M_D_RECIP,
    M_D_SIN, M_D_COS, M_D_TANH, M_D_SIGMOID, M_D_RELU, M_D_GELU, M_D_GELU_ERF, M_D_SILU,
    M_D_SQUARE,
    M_DA_ADD, M_DB_ADD, M_DA_SUB, M_DB_SUB, M_DA_MUL, M_DB_MUL, M_DA_DIV, M_DB_DIV, M_DA_MAX,
    M_DB_MAX, M_DA_MIN, M_DB_MIN, M_DA_POW, M_DB_POW, M_DA_MOD, M_DB_MOD,
    M_D_VAR, M_D_LSE, M_D_EXTREME, M_D_STD, M_TIE,
    M_COUNT
};

/* Combines: a sum (mean is a sum scaled after), a product, the extremes and their first
 * index, Welford's mean and sum of squared deviations (var and std, `post` their divisor), and
 * logsumexp's running max and rescaled sum of exponentials. */
enum { C_SUM, C_PROD, C_MAX, C_MIN, C_ARGMAX, C_ARGMIN, C_VAR, C_STD, C_LSE };

#define SQRT_2_OVER_PI 0.7978845608028654f
#define INV_SQRT_2 0.7071067811865476f

float sigmoid_f(float x)
{
    return 1.0f / (1.0f + exp(-x));
}

/* Python's and NumPy's remainder: the sign of the divisor. */
float mod_f(float a, float b)
{
    const float r = fmod(a, b);
    return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
}

float gelu_tanh_f(float x)
{
    return 0.5f * x * (1.0f + tanh(SQRT_2_OVER_PI * fma(0.044715f * x, x * x, x)));
}

float d_gelu_tanh_f(float x)
{
    const float u = SQRT_2_OVER_PI * fma(0.044715f * x, x * x, x);
    const float t = tanh(u), du = SQRT_2_OVER_PI * fma(3.0f * 0.044715f, x * x, 1.0f);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

float map(int op, float a, float b, float c, float alpha)
{
    switch (op) {
    case M_NEG: return -a;
    case M_ABS: return fabs(a);
    case M_EXP: return exp(a);
    case M_EXP2: return exp2(a);
    case M_LOG: return log(a);
    case M_LOG2: return log2(a);
    case M_SQRT: return sqrt(a);
    case M_RSQRT: return rsqrt(a);
    case M_RECIP: return 1.0f / a;
    case M_SIN: return sin(a);
    case M_COS: return cos(a);
    case M_TANH: return tanh(a);
    case M_SIGMOID: return sigmoid_f(a);
    case M_RELU: return a > 0.0f ? a : 0.0f;
    case M_GELU: return gelu_tanh_f(a);
    case M_GELU_ERF: return 0.5f * a * (1.0f + erf(a * INV_SQRT_2));
    case M_SILU: return a * sigmoid_f(a);
    case M_SQUARE: return a * a;
    case M_COPY: return a;
    case M_SCALE: return a * alpha;
    case M_ADD: return a + b;
    case M_SUB: return a - b;
    case M_MUL: return a * b;
    case M_DIV: return a / b;
    case M_MAX: return isnan(a) || isnan(b) ? NAN : fmax(a, b);
    case M_MIN: return isnan(a) || isnan(b) ? NAN : fmin(a, b);
    case M_POW: return pow(a, b);
    case M_MOD: return mod_f(a, b);
    case M_CMPLT: return a < b ? 1.0f : 0.0f;
    case M_CMPEQ: return a == b ? 1.0f : 0.0f;
    case M_WHERE: return a != 0.0f ? b : c;
    /* dy = a, x = b */
    case M_D_NEG: return -a;
    case M_D_ABS: return b > 0.0f ? a : b < 0.0f ? -a : 0.0f;
    case M_D_EXP: return a * exp(b);
    case M_D_EXP2: return a * exp2(b) * M_LN2_F;
    case M_D_LOG: return a / b;
    case M_D_LOG2: return a / (b * M_LN2_F);
    case M_D_SQRT: return a * 0.5f / sqrt(b);
    case M_D_RSQRT: return a * -0.5f * rsqrt(b) / b;
    case M_D_RECIP: return -a / (b * b);
    case M_D_SIN: return a * cos(b);
    case M_D_COS: return -a * sin(b);
    case M_D_TANH: {
        const float t = tanh(b);
        return a * (1.0f - t * t);
    }
    case M_D_SIGMOID: {
        const float s = sigmoid_f(b);
        return a * s * (1.0f - s);
    }
    case M_D_RELU: return b > 0.0f ? a : 0.0f;
    case M_D_GELU: return a * d_gelu_tanh_f(b);
    case M_D_GELU_ERF:
        return a * (0.5f * (1.0f + erf(b * INV_SQRT_2)) +
                    b * M_2_SQRTPI_F * INV_SQRT_2 * 0.5f * exp(-0.5f * b * b));
    case M_D_SILU: {
        const float s = sigmoid_f(b);
        return a * s * (1.0f + b * (1.0f - s));
    }
    case M_D_SQUARE: return a * 2.0f * b;
    /* dy = a, then the operands b and c of the forward op */
    case M_DA_ADD: return a;
    case M_DB_ADD: return a;
    case M_DA_SUB: return a;
    case M_DB_SUB: return -a;
    case M_DA_MUL: return a * c;
    case M_DB_MUL: return a * b;
    case M_DA_DIV: return a / c;
    case M_DB_DIV: return -a * b / (c * c);
    /* Ties split the gradient evenly between the operands, as PyTorch's maximum and minimum. */
    case M_DA_MAX: return b > c ? a : b == c ? 0.5f * a : 0.0f;
    case M_DB_MAX: return c > b ? a : b == c ? 0.5f * a : 0.0f;
    case M_DA_MIN: return b < c ? a : b == c ? 0.5f * a : 0.0f;
    case M_DB_MIN: return c < b ? a : b == c ? 0.5f * a : 0.0f;
    case M_DA_POW: return c == 0.0f ? 0.0f : a * c * pow(b, c - 1.0f);
    /* As PyTorch: 0^c with c >= 0 gives the exponent no gradient (log 0 would make it NaN). */
    case M_DB_POW: return b == 0.0f && c >= 0.0f ? 0.0f : a * pow(b, c) * log(b);
    case M_DA_MOD: return a;
    case M_DB_MOD: return -a * floor(b / c);
    /* Reductions' backward: var's (g, x, the mean; alpha 2 / (N - correction)), logsumexp's
     * (dy, x, y), the extremes' (dy / ties, x, y: the ties share the gradient evenly); std's
     * g from (dy, y), 0 where y is (PyTorch's masked_fill); whether x (a) ties y (b), NaN tying
     * NaN. */
    case M_D_VAR: return a * alpha * (b - c);
    case M_D_LSE: return a * exp(b - c);
    case M_D_EXTREME: return b == c || (isnan(b) && isnan(c)) ? a : 0.0f;
    case M_D_STD: return b == 0.0f ? 0.0f : a / (2.0f * b);
    case M_TIE: return a == b || (isnan(a) && isnan(b)) ? 1.0f : 0.0f;
    default: return NAN;
    }
}

/* How many inputs op reads: x1 and x2 are read only when it uses them. */
int arity(int op)
{
    return op == M_WHERE || (op >= M_DA_ADD && op <= M_D_EXTREME) ? 3
           : (op >= M_ADD && op <= M_CMPEQ) || (op >= M_D_NEG && op < M_DA_ADD) || op >= M_D_STD
               ? 2
               : 1;
}

/* q / e and q % e for 0 <= q and 1 <= e. With ONE_PASS (CPUs) through a double division, which
 * vectorises where an int one does not (AVX-512 has none): exact, as the correctly rounded
 * quotient of integers below 2^53 errs by less than q 2^-53 / e < 1 / e, less than its distance
 * to the next integer. */
#if defined(ONE_PASS) && defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define QUOT(q, e) ((int)((double)(q) / (double)(e)))
#define REM(q, e) ((q) - QUOT(q, e) * (e))
#else
#define QUOT(q, e) ((q) / (e))
#define REM(q, e) ((q) % (e))
#endif

/* Splits `q` over the dimension at view position p: its coordinate moves the inputs' offsets
 * (and, for a kept dimension, the output's). The outermost dimension of a group takes what is
 * left without a division. */
#define SPLIT_IN(p, last)                                                                          \
    const int c##p = (last) ? q : REM(q, ext.s##p);                                                \
    q = (last) ? 0 : QUOT(q, ext.s##p);                                                            \
    o0 += c##p * KP_S_##p(v0);                                                                     \
    o1 += c##p * KP_S_##p(v1);                                                                     \
    o2 += c##p * KP_S_##p(v2);
#define SPLIT_KEPT(p, last)                                                                        \
    {                                                                                              \
        SPLIT_IN(p, last)                                                                          \
        oy += c##p * KP_S_##p(vy);                                                                 \
    }
#define SPLIT_RED(p, last)                                                                         \
    {                                                                                              \
        SPLIT_IN(p, last)                                                                          \
    }

/* Output element q's offsets in the inputs and the output, from its kept coordinates. */
void kept_offsets(int q, const int8 ext, const kp_view8 v0, const kp_view8 v1, const kp_view8 v2,
                  const kp_view8 vy, int *p0, int *p1, int *p2, int *py)
{
    int o0 = kp_offset(v0), o1 = kp_offset(v1), o2 = kp_offset(v2), oy = kp_offset(vy);
    /* Innermost (RO - 1) first. */
#if RO > 7
    SPLIT_KEPT(7, 0)
#endif
#if RO > 6
    SPLIT_KEPT(6, 0)
#endif
#if RO > 5
    SPLIT_KEPT(5, 0)
#endif
#if RO > 4
    SPLIT_KEPT(4, 0)
#endif
#if RO > 3
    SPLIT_KEPT(3, 0)
#endif
#if RO > 2
    SPLIT_KEPT(2, 0)
#endif
#if RO > 1
    SPLIT_KEPT(1, 0)
#endif
#if RO > 0
    SPLIT_KEPT(0, 1)
#endif
    *p0 = o0;
    *p1 = o1;
    *p2 = o2;
    *py = oy;
}

/* Term q's offsets in the inputs: the bases moved by its reduced coordinates. */
void term_offsets(int q, const int8 ext, const kp_view8 v0, const kp_view8 v1, const kp_view8 v2,
                  int *p0, int *p1, int *p2)
{
    int o0 = *p0, o1 = *p1, o2 = *p2;
    /* Innermost (position 7) first. */
#if RR > 0
    SPLIT_RED(7, RR == 1)
#endif
#if RR > 1
    SPLIT_RED(6, RR == 2)
#endif
#if RR > 2
    SPLIT_RED(5, RR == 3)
#endif
#if RR > 3
    SPLIT_RED(4, RR == 4)
#endif
#if RR > 4
    SPLIT_RED(3, RR == 5)
#endif
#if RR > 5
    SPLIT_RED(2, RR == 6)
#endif
#if RR > 6
    SPLIT_RED(1, RR == 7)
#endif
#if RR > 7
    SPLIT_RED(0, RR == 8)
#endif
    *p0 = o0;
    *p1 = o1;
    *p2 = o2;
}

/* A combine's running state: its value, the index of the extreme it holds, whether that is a
 * NaN (which wins over everything, the first one among NaNs). Welford's (C_VAR, C_STD): v the
 * mean, s the sum of squared deviations, arg the count. logsumexp's: v the running max, s the
 * sum of exp(x - v), nan whether a NaN was seen (v is then NaN). */
typedef struct acc_t {
    float v, s;
    int arg;
    int nan;
} acc_t;

acc_t acc_init(int comb, int first)
{
    acc_t a;
    a.v = comb == C_PROD                                        ? 1.0f
          : comb == C_MAX || comb == C_ARGMAX || comb == C_LSE ? -INFINITY
          : comb == C_MIN || comb == C_ARGMIN                  ? INFINITY
                                                                : 0.0f;
    a.s = 0.0f;
    a.arg = comb == C_VAR || comb == C_STD ? 0 : first;
    a.nan = 0;
    return a;
}

/* Term r of value v, r above every term a holds. */
void acc_add(acc_t *a, int comb, float v, int r)
{
    if (comb == C_SUM) {
        a->v += v;
    } else if (comb == C_PROD) {
        a->v *= v;
    } else if (comb == C_VAR || comb == C_STD) {
        /* 1 / n depends on the count alone, so it is computed beside the chain of dependent
         * updates rather than in it (a division per term in the chain was 8x a sum's time on
         * PoCL). */
        a->arg++;
        const float rn = 1.0f / (float)a->arg, d = v - a->v;
        a->v = fma(d, rn, a->v);
        a->s = fma(d, v - a->v, a->s);
    } else if (comb == C_LSE) {
        /* One exp a term, without a branch on the data: the rescale of the sum when v is the
         * new max, else v's term. -inf adds nothing (and would make inf - inf); a +inf max
         * makes the rest irrelevant (store). */
        if (isnan(v)) {
            a->nan = 1;
            a->v = NAN;
        } else if (!a->nan) {
            const float mx = fmax(a->v, v);
            const float e = v == -INFINITY ? 0.0f : exp(fmin(a->v, v) - mx);
            a->s = v > a->v ? fma(a->s, e, 1.0f) : a->s + e;
            a->v = mx;
        }
    } else if (!a->nan) {
        const int better = comb == C_MAX || comb == C_ARGMAX ? v > a->v : v < a->v;
        if (isnan(v) || better) {
            a->v = v;
            a->arg = r;
            a->nan = isnan(v);
        }
    }
}

/* a, then b's terms: sums add in that order; extremes keep the first in row-major order;
 * Welford's states meet by Chan's formula; logsumexp's rescale to the larger max. */
void acc_merge(acc_t *a, int comb, acc_t b)
{
    if (comb == C_SUM) {
        a->v += b.v;
    } else if (comb == C_PROD) {
        a->v *= b.v;
    } else if (comb == C_VAR || comb == C_STD) {
        if (a->arg == 0) {
            *a = b;
        } else if (b.arg > 0) {
            const float na = (float)a->arg, nb = (float)b.arg, n = na + nb;
            const float d = b.v - a->v;
            a->v += d * (nb / n);
            a->s += b.s + d * d * (na * (nb / n));
            a->arg += b.arg;
        }
    } else if (comb == C_LSE) {
        if (a->nan || b.nan) {
            a->nan = 1;
            a->v = NAN;
        } else if (b.v > a->v) {
            a->s = a->s * exp(a->v - b.v) + b.s;
            a->v = b.v;
        } else if (b.v != -INFINITY) {
            a->s += b.s * exp(b.v - a->v);
        }
    } else if (b.nan || !a->nan) {
        const int better = b.nan ? !a->nan || b.arg < a->arg
                           : comb == C_MAX || comb == C_ARGMAX
                               ? b.v > a->v || (b.v == a->v && b.arg < a->arg)
                               : b.v < a->v || (b.v == a->v && b.arg < a->arg);
        if (better)
            *a = b;
    }
}

float term(int op, int n_in, __global const KP_T(DT0) *x0, __global const KP_T(DT1) *x1,
           __global const KP_T(DT2) *x2, int o0, int o1, int o2, float alpha)
{
    return map(op, KP_LOAD(DT0, x0, o0), n_in > 1 ? KP_LOAD(DT1, x1, o1) : 0.0f,
               n_in > 2 ? KP_LOAD(DT2, x2, o2) : 0.0f, alpha);
}

/* post: the scale of a sum (mean's 1 / N), or var's and std's divisor max(0, N - correction)
 * (0 gives inf, or NaN where every term is equal, as PyTorch's). logsumexp: an infinite max is
 * the result (every term -inf, or one +inf). */
void store(int comb, acc_t a, float post, __global KP_T(DTY) *y, __global int *yi, int oy)
{
    if (comb == C_ARGMAX || comb == C_ARGMIN)
        yi[oy] = a.arg;
    else if (comb == C_VAR)
        KP_STORE(DTY, y, oy, a.s / post);
    else if (comb == C_STD)
        KP_STORE(DTY, y, oy, sqrt(a.s / post));
    else if (comb == C_LSE)
        KP_STORE(DTY, y, oy, a.nan || isinf(a.v) ? a.v : a.v + log(a.s));
    else
        KP_STORE(DTY, y, oy, a.v * post);
}

/* The host compiles the op and the combine in (OP, COMB): a constant folds `map`'s switch and
 * the combine's branches away, which made elementwise ops 2x faster on an H200 and lets PoCL
 * vectorise. Without them the arguments decide, one program serving every op. */
#ifdef OP
#define OP_OF(arg) OP
#else
#define OP_OF(arg) (arg)
#endif
#ifdef COMB
#define COMB_OF(arg) COMB
#else
#define COMB_OF(arg) (arg)
#endif

#define MAP_REDUCE_PARAMS                                                                          \
    const int n_out, const int n_red, const int op_arg, const int comb_arg, const float alpha,     \
        const float post, const int8 ext, __global const KP_T(DT0) *x0, const kp_view8 v0,         \
        __global const KP_T(DT1) *x1, const kp_view8 v1, __global const KP_T(DT2) *x2,             \
        const kp_view8 v2, __global KP_T(DTY) *y, __global int *yi, const kp_view8 vy

/* Block o of four elements, as floats, of an operand of dtype d and stride s (1, -1 or 0) from
 * p: one 16-byte (8-byte for 16-bit dtypes) load, in reverse for -1 (the block ends 3 elements
 * below its first one), or the broadcast scalar; STOREV the same for y. */
#define LOADV(s, d, p, o)                                                                          \
    ((s) > 0   ? KP_LOAD4(d, p, o)                                                                 \
     : (s) < 0 ? KP_LOAD4(d, (p)-3, -(o)).wzyx                                                     \
               : (float4)(KP_LOAD(d, p, 0)))
#define STOREV(s, d, p, o, v)                                                                      \
    do {                                                                                           \
        if ((s) > 0)                                                                               \
            KP_STORE4(d, p, o, v);                                                                 \
        else                                                                                       \
            KP_STORE4(d, (p)-3, -(o), (v).wzyx);                                                   \
    } while (0)

/* A work-item's next item: on GPUs it strides over the grid until none is left; with ONE_PASS
 * (CPUs) the host launches one work-item per item and each takes one, so that a work-item's body
 * holds no loop of its own and PoCL vectorises the work-group across its work-items. */
#ifdef ONE_PASS
#define NEXT(i, n, step) (n)
#else
#define NEXT(i, n, step) ((i) + (step))
#endif

/* Elements per work-item of an elementwise launch (RR = 0), loaded before any is computed;
 * tensor-space.c sizes the launch by its UNROLL, which must equal this one. */
#ifdef ONE_PASS
#define UNROLL 1
#else
#define UNROLL 4
#endif

/* One work-item per output element, its terms in row-major order. */
__kernel void tensor_map_reduce(MAP_REDUCE_PARAMS)
{
    const int op = OP_OF(op_arg), comb = COMB_OF(comb_arg);
    const int n_in = arity(op);
#if RR == 0 && defined(RAW) && defined(VEC4)
    /* A copy between tensors of one 16-bit or i32 dtype: its bits, whole vectors as below (i32
     * past 2^24 and NaN payloads come through unchanged). */
    const int n4 = n_out / 4;
    __global const RAWT(DT0) *p0 = (__global const RAWT(DT0) *)x0 + kp_offset(v0);
    __global RAWT(DTY) *py = (__global RAWT(DTY) *)y + kp_offset(vy);
    for (int o = get_global_id(0); o < n4; o = NEXT(o, n4, get_global_size(0)))
        ((__global RAWT4(DTY) *)py)[o] =
            S0 ? ((__global const RAWT4(DT0) *)p0)[o] : (RAWT4(DT0))(p0[0]);
    for (int i = 4 * n4 + get_global_id(0); i < n_out; i = NEXT(i, n_out, get_global_size(0)))
        py[i] = p0[S0 * i];
#elif RR == 0 && defined(RAW)
    for (int o = get_global_id(0); o < n_out; o = NEXT(o, n_out, get_global_size(0))) {
        int o0, o1, o2, oy;
        kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
        ((__global RAWT(DTY) *)y)[oy] = ((__global const RAWT(DT0) *)x0)[o0];
    }
#elif RR == 0 && defined(VEC4)
    /* One kept dimension along which every operand is contiguous, forward or reversed, or a
     * broadcast scalar (S0..S2, SY its stride: 1, -1 or 0), at offsets the host checked put each
     * block of four on 16 bytes (8 for 16-bit dtypes: a multiple of four elements; a reversed
     * operand's, 3 more): four elements per work-item through whole-vector loads and stores, as
     * the copy kernels of vendor libraries do; the last n_out % 4 elements one by one. */
    const int n4 = n_out / 4;
    __global const KP_T(DT0) *p0 = x0 + kp_offset(v0);
    __global const KP_T(DT1) *p1 = x1 + kp_offset(v1);
    __global const KP_T(DT2) *p2 = x2 + kp_offset(v2);
    __global KP_T(DTY) *py = y + kp_offset(vy);
    for (int o = get_global_id(0); o < n4; o = NEXT(o, n4, get_global_size(0))) {
        const float4 a = LOADV(S0, DT0, p0, o);
        const float4 b = n_in < 2 ? (float4)(0.0f) : LOADV(S1, DT1, p1, o);
        const float4 c = n_in < 3 ? (float4)(0.0f) : LOADV(S2, DT2, p2, o);
        const float4 r = (float4)(map(op, a.x, b.x, c.x, alpha), map(op, a.y, b.y, c.y, alpha),
                                  map(op, a.z, b.z, c.z, alpha), map(op, a.w, b.w, c.w, alpha));
        STOREV(SY, DTY, py, o, r * post);
    }
    for (int i = 4 * n4 + get_global_id(0); i < n_out; i = NEXT(i, n_out, get_global_size(0)))
        KP_STORE(DTY, py, SY * i,
              map(op, KP_LOAD(DT0, p0, S0 * i), n_in > 1 ? KP_LOAD(DT1, p1, S1 * i) : 0.0f,
                  n_in > 2 ? KP_LOAD(DT2, p2, S2 * i) : 0.0f, alpha) *
                  post);
#elif RR == 0
    const int step = get_global_size(0);
    for (int o = get_global_id(0); o < n_out; o = NEXT(o, n_out, UNROLL * step)) {
        float a[UNROLL], b[UNROLL], c[UNROLL];
        int oy[UNROLL];
        for (int k = 0; k < UNROLL; k++) {
            const int i = o + k * step;
            int o0, o1, o2;
            kept_offsets(min(i, n_out - 1), ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy[k]);
            a[k] = KP_LOAD(DT0, x0, o0);
            b[k] = n_in > 1 ? KP_LOAD(DT1, x1, o1) : 0.0f;
            c[k] = n_in > 2 ? KP_LOAD(DT2, x2, o2) : 0.0f;
        }
        for (int k = 0; k < UNROLL; k++) {
            /* One term: a sum or product of it (C_SUM, C_PROD) is the term itself (a sum
             * starting from 0 would turn a -0 into +0, unlike the VEC4 path); the other
             * combines take it as their first term (logsumexp's and var's states hold more than
             * the value). One comparison: with COMB compiled in, `||` of two constant tests draws
             * a warning from NVIDIA's compiler. */
            acc_t acc = acc_init(comb, 0);
            const float v = map(op, a[k], b[k], c[k], alpha);
            if (comb <= C_PROD)
                acc.v = v;
            else
                acc_add(&acc, comb, v, 0);
            if (o + k * step < n_out)
                store(comb, acc, post, y, yi, oy[k]);
        }
    }
#elif defined(ONE_PASS)
    /* CPUs, terms strided in memory (a sum over the first axis): every work-item of the group
     * runs the same terms, its output clamped into range and its store guarded. PoCL puts a
     * barrier in a loop that every work-item runs alike only when the kernel has one (the barrier
     * below): the group then steps through the terms together, each step vectorised across
     * neighbouring outputs, rather than one work-item walking a column after another. */
    const int o = min((int)get_global_id(0), n_out - 1);
    int o0, o1, o2, oy;
    kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
    acc_t a = acc_init(comb, 0);
    for (int r = 0; r < n_red; r++) {
        int t0 = o0, t1 = o1, t2 = o2;
        term_offsets(r, ext, v0, v1, v2, &t0, &t1, &t2);
        acc_add(&a, comb, term(op, n_in, x0, x1, x2, t0, t1, t2, alpha), r);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_global_id(0) < n_out)
        store(comb, a, post, y, yi, oy);
#else
    for (int o = get_global_id(0); o < n_out; o += get_global_size(0)) {
        int o0, o1, o2, oy;
        kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
        acc_t a = acc_init(comb, 0);
        for (int r = 0; r < n_red; r++) {
            int t0 = o0, t1 = o1, t2 = o2;
            term_offsets(r, ext, v0, v1, v2, &t0, &t1, &t2);
            acc_add(&a, comb, term(op, n_in, x0, x1, x2, t0, t1, t2, alpha), r);
        }
        store(comb, a, post, y, yi, oy);
    }
#endif
}

/*
 * LANES work-items per output element, for few outputs of many terms (GPUs): lane j takes terms
 * j, j + LANES, ... in order, then the lanes meet in a fixed tree. The order is fixed by LANES,
 * not by the work-group size, so the bits are the same on every run; they differ from
 * tensor_map_reduce's, and the host picks one kernel from the shapes and the device alone.
 */
#define LANES 64
__kernel __attribute__((reqd_work_group_size(LANES, 1, 1))) void
tensor_map_reduce_lanes(MAP_REDUCE_PARAMS)
{
    const int op = OP_OF(op_arg), comb = COMB_OF(comb_arg);
    __local float lv[LANES], ls[LANES];
    __local int larg[LANES], lnan[LANES];
    const int n_in = arity(op), lane = get_local_id(0);
    for (int o = get_group_id(0); o < n_out; o += get_num_groups(0)) {
        int o0, o1, o2, oy;
        kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
        acc_t a = acc_init(comb, lane);
        for (int r = lane; r < n_red; r += LANES) {
            int t0 = o0, t1 = o1, t2 = o2;
            term_offsets(r, ext, v0, v1, v2, &t0, &t1, &t2);
            acc_add(&a, comb, term(op, n_in, x0, x1, x2, t0, t1, t2, alpha), r);
        }
        lv[lane] = a.v;
        /* Only var's and logsumexp's states have a second value (a constant with COMB). */
        if (comb >= C_VAR)
            ls[lane] = a.s;
        larg[lane] = a.arg;
        lnan[lane] = a.nan;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int step = LANES / 2; step > 0; step /= 2) {
            if (lane < step) {
                acc_t b;
                b.v = lv[lane + step];
                b.s = comb >= C_VAR ? ls[lane + step] : 0.0f;
                b.arg = larg[lane + step];
                b.nan = lnan[lane + step];
                acc_merge(&a, comb, b);
                lv[lane] = a.v;
                if (comb >= C_VAR)
                    ls[lane] = a.s;
                larg[lane] = a.arg;
                lnan[lane] = a.nan;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lane == 0)
            store(comb, a, post, y, yi, oy);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/*
 * Few outputs of many terms that no lanes can read together (a sum over the first axis): each
 * output's terms in chunks of `chunk`, one work-item per (output, chunk) summing its chunk in
 * order into scratch (work-item w: output w % n_out, chunk w / n_out, so neighbours read
 * neighbouring outputs), then one work-item per output merging its chunks in order. The chunk
 * size comes from the shape alone, so the bits repeat. ps holds the combines' second value
 * (var's and logsumexp's s); the others are given pv there and never write it.
 */
__kernel void tensor_map_reduce_chunks(MAP_REDUCE_PARAMS, const int chunk, const int n_chunks,
                                       __global float *pv, __global int *pa, __global float *ps)
{
    const int op = OP_OF(op_arg), comb = COMB_OF(comb_arg);
    const int n_in = arity(op);
    for (int w = get_global_id(0); w < n_out * n_chunks; w += get_global_size(0)) {
        const int o = w % n_out, r0 = (w / n_out) * chunk, r1 = min(n_red, r0 + chunk);
        int o0, o1, o2, oy;
        kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
        acc_t a = acc_init(comb, r0);
        for (int r = r0; r < r1; r++) {
            int t0 = o0, t1 = o1, t2 = o2;
            term_offsets(r, ext, v0, v1, v2, &t0, &t1, &t2);
            acc_add(&a, comb, term(op, n_in, x0, x1, x2, t0, t1, t2, alpha), r);
        }
        pv[w] = a.v;
        pa[w] = a.arg;
        if (comb >= C_VAR)
            ps[w] = a.s;
    }
}

__kernel void tensor_map_reduce_merge(MAP_REDUCE_PARAMS, const int chunk, const int n_chunks,
                                      __global const float *pv, __global const int *pa,
                                      __global const float *ps)
{
    const int op = OP_OF(op_arg), comb = COMB_OF(comb_arg);
    for (int o = get_global_id(0); o < n_out; o += get_global_size(0)) {
        int o0, o1, o2, oy;
        kept_offsets(o, ext, v0, v1, v2, vy, &o0, &o1, &o2, &oy);
        acc_t a = acc_init(comb, 0);
        for (int c = 0; c < n_chunks; c++) {
            acc_t b;
            b.v = pv[c * n_out + o];
            b.s = comb >= C_VAR ? ps[c * n_out + o] : 0.0f;
            b.arg = pa[c * n_out + o];
            b.nan = isnan(b.v);
            if (c == 0)
                a = b;
            else
                acc_merge(&a, comb, b);
        }
        store(comb, a, post, y, yi, oy);
    }
}

/*
 * tensor_generate: values that depend only on an element's index i (row-major over y's shape,
 * which the kept dimensions' order preserves): a constant, a ramp, or random numbers. Element i
 * of a call with `offset` takes word (i + offset) % 4 of Philox4x32-10 of the counter
 * ((i + offset) / 4 as 64 bits, 0, 0) under the key `seed`, so one call of the generator serves
 * four elements and every device and kernelport/ops/random.h give the same bits. A normal value
 * takes Box-Muller of its pair of words (0, 1 or 2, 3): the cosine for the first of the pair, the
 * sine for the second.
 */
enum { G_FILL, G_ARANGE, G_UNIFORM, G_NORMAL, G_BERNOULLI };

#define SPLIT_Y(p, last)                                                                           \
    {                                                                                              \
        const int c = (last) ? q : q % ext.s##p;                                                   \
        q = (last) ? 0 : q / ext.s##p;                                                             \
        oy += c * KP_S_##p(vy);                                                                    \
    }

/* Element q's offset in y. */
int y_offset(int q, const int8 ext, const kp_view8 vy)
{
    int oy = kp_offset(vy);
#if RO > 7
    SPLIT_Y(7, 0)
#endif
#if RO > 6
    SPLIT_Y(6, 0)
#endif
#if RO > 5
    SPLIT_Y(5, 0)
#endif
#if RO > 4
    SPLIT_Y(4, 0)
#endif
#if RO > 3
    SPLIT_Y(3, 0)
#endif
#if RO > 2
    SPLIT_Y(2, 0)
#endif
#if RO > 1
    SPLIT_Y(1, 0)
#endif
#if RO > 0
    SPLIT_Y(0, 1)
#endif
    return oy;
}

float unit(uint word)
{
    return (float)(word >> 8) * 0x1p-24f;
}

/* Element i's value from word k of its counter's four. */
float generate(int kind, float a, float b, uint4 w, int k, int i)
{
    if (kind == G_FILL)
        return a;
    if (kind == G_ARANGE)
        return fma(b, (float)i, a);
    const uint word = k == 0 ? w.x : k == 1 ? w.y : k == 2 ? w.z : w.w;
    if (kind == G_UNIFORM)
        return fma(b - a, unit(word), a);
    if (kind == G_BERNOULLI)
        return unit(word) < a ? b : 0.0f;
    /* Box-Muller: u1 in (0, 1] keeps the logarithm finite. */
    const uint w1 = k < 2 ? w.x : w.z, w2 = k < 2 ? w.y : w.w;
    const float r = sqrt(-2.0f * log((float)((w1 >> 8) + 1) * 0x1p-24f));
    const float theta = 2.0f * M_PI_F * unit(w2);
    return fma(b, r * ((k & 1) ? sin(theta) : cos(theta)), a);
}

/* One work-item per counter: its four elements (fewer at the ends). */
__kernel void tensor_generate(const int n_out, const int kind, const float a, const float b,
                              const uint2 seed, const uint2 offset, const int8 ext,
                              __global KP_T(DTY) *y, const kp_view8 vy)
{
    const ulong off = upsample(offset.y, offset.x), g0 = off >> 2;
#ifdef GVEC4
    /* y contiguous from an offset that is a multiple of four, and `offset` one too: each
     * counter's four elements are one aligned 16-byte store (scalar stores four elements apart
     * across a warp tripled fill's time on an H200). */
    __global KP_T(DTY) *py = y + kp_offset(vy);
    for (int t = get_global_id(0); t < n_out / 4; t += get_global_size(0)) {
        const ulong g = g0 + (ulong)t;
        const uint4 w = kind >= G_UNIFORM
                            ? kp_philox4x32_10((uint4)((uint)g, (uint)(g >> 32), 0, 0), seed)
                            : (uint4)(0);
        KP_STORE4(DTY, py, t,
               (float4)(generate(kind, a, b, w, 0, 4 * t), generate(kind, a, b, w, 1, 4 * t + 1),
                        generate(kind, a, b, w, 2, 4 * t + 2),
                        generate(kind, a, b, w, 3, 4 * t + 3)));
    }
    for (int i = (n_out & ~3) + get_global_id(0); i < n_out; i += get_global_size(0)) {
        const ulong g = g0 + (ulong)(i / 4);
        const uint4 w = kind >= G_UNIFORM
                            ? kp_philox4x32_10((uint4)((uint)g, (uint)(g >> 32), 0, 0), seed)
                            : (uint4)(0);
        KP_STORE(DTY, py, i, generate(kind, a, b, w, i % 4, i));
    }
#else
    const int n_groups = (int)(((off + (ulong)n_out + 3) >> 2) - g0);
    for (int t = get_global_id(0); t < n_groups; t += get_global_size(0)) {
        const ulong g = g0 + (ulong)t;
        const uint4 w = kind >= G_UNIFORM
                            ? kp_philox4x32_10((uint4)((uint)g, (uint)(g >> 32), 0, 0), seed)
                            : (uint4)(0);
        for (int k = 0; k < 4; k++) {
            const long i = (long)(4 * g + (ulong)k - off);
            if (i >= 0 && i < n_out)
                KP_STORE(DTY, y, y_offset((int)i, ext, vy), generate(kind, a, b, w, k, (int)i));
        }
    }
#endif
}
