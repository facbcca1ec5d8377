/* SPDX-License-Identifier: Apache-2.0 */
/* The op table and the maps in double for the host references (kernels/tensor.cl's `map`). */
#include <math.h>

#include "tensor.h"

/* Samples keep inputs inside each op's domain and away from its poles and kinks, where a float
 * result and a double reference part for reasons that are not errors. */
const tensor_op tensor_unary_ops[] = {
    {"neg", "y = -x", TM_NEG, TM_D_NEG, -1, 1, -3, 3, 0, 0},
    {"abs", "y = |x|", TM_ABS, TM_D_ABS, -1, 1, -3, 3, 0, 0},
    {"exp", "y = e^x", TM_EXP, TM_D_EXP, -1, 1, -4, 4, 0, 0},
    {"exp2", "y = 2^x", TM_EXP2, TM_D_EXP2, -1, 1, -4, 4, 0, 0},
    {"log", "y = ln x", TM_LOG, TM_D_LOG, -1, 1, 0.1, 4, 0, 0},
    {"log2", "y = log2 x", TM_LOG2, TM_D_LOG2, -1, 1, 0.1, 4, 0, 0},
    {"sqrt", "y = sqrt(x)", TM_SQRT, TM_D_SQRT, -1, 1, 0.1, 4, 0, 0},
    {"rsqrt", "y = 1 / sqrt(x)", TM_RSQRT, TM_D_RSQRT, -1, 1, 0.1, 4, 0, 0},
    {"recip", "y = 1 / x", TM_RECIP, TM_D_RECIP, -1, 1, 0.25, 4, 0, 0},
    {"sin", "y = sin x", TM_SIN, TM_D_SIN, -1, 1, -3, 3, 0, 0},
    {"cos", "y = cos x", TM_COS, TM_D_COS, -1, 1, -3, 3, 0, 0},
    {"tanh", "y = tanh x", TM_TANH, TM_D_TANH, -1, 1, -3, 3, 0, 0},
    {"sigmoid", "y = 1 / (1 + e^-x)", TM_SIGMOID, TM_D_SIGMOID, -1, 1, -4, 4, 0, 0},
    {"relu", "y = max(x, 0)", TM_RELU, TM_D_RELU, -1, 1, -3, 3, 0, 0},
    {"gelu", "y = GELU(x), tanh form (PyTorch's approximate='tanh')", TM_GELU, TM_D_GELU, -1, 1, -3,
     3, 0, 0},
    {"gelu_erf", "y = x Phi(x), GELU's erf form (PyTorch's default)", TM_GELU_ERF, TM_D_GELU_ERF,
     -1, 1, -3, 3, 0, 0},
    {"silu", "y = x sigmoid(x)", TM_SILU, TM_D_SILU, -1, 1, -4, 4, 0, 0},
    {"square", "y = x^2", TM_SQUARE, TM_D_SQUARE, -1, 1, -3, 3, 0, 0},
};
const size_t tensor_n_unary = sizeof tensor_unary_ops / sizeof tensor_unary_ops[0];

const tensor_op tensor_binary_ops[] = {
    {"add", "y = a + b", TM_ADD, TM_DA_ADD, TM_DB_ADD, 2, -3, 3, -3, 3},
    {"sub", "y = a - b", TM_SUB, TM_DA_SUB, TM_DB_SUB, 2, -3, 3, -3, 3},
    {"mul", "y = a b", TM_MUL, TM_DA_MUL, TM_DB_MUL, 2, -3, 3, -3, 3},
    {"div", "y = a / b", TM_DIV, TM_DA_DIV, TM_DB_DIV, 2, -3, 3, 0.5, 3},
    {"maximum", "y = max(a, b) elementwise; NaN if either is", TM_MAX, TM_DA_MAX, TM_DB_MAX, 2, -3,
     3, -3, 3},
    {"minimum", "y = min(a, b) elementwise; NaN if either is", TM_MIN, TM_DA_MIN, TM_DB_MIN, 2, -3,
     3, -3, 3},
    {"pow", "y = a^b", TM_POW, TM_DA_POW, TM_DB_POW, 2, 0.25, 3, -2, 2},
    {"mod", "y = a mod b, the sign of b (Python's %, torch.remainder)", TM_MOD, TM_DA_MOD,
     TM_DB_MOD, 2, -3, 3, 0.5, 3},
    {"cmplt", "y = 1 where a < b, else 0", TM_CMPLT, -1, -1, 2, -3, 3, -3, 3},
    {"cmpeq", "y = 1 where a == b, else 0", TM_CMPEQ, -1, -1, 2, -2, 2, -2, 2},
    {"where", "y = a where cond != 0, else b", TM_WHERE, -1, -1, 3, -3, 3, -3, 3},
};
const size_t tensor_n_binary = sizeof tensor_binary_ops / sizeof tensor_binary_ops[0];

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double mod(double a, double b)
{
    double r = fmod(a, b);
    return r != 0.0 && (r < 0.0) != (b < 0.0) ? r + b : r;
}

static const double sqrt_2_over_pi = 0.7978845608028654, inv_sqrt_2 = 0.7071067811865476;

static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

static double d_gelu_tanh(double x)
{
    double u = sqrt_2_over_pi * (x + 0.044715 * x * x * x), t = tanh(u);
    double du = sqrt_2_over_pi * (1.0 + 3.0 * 0.044715 * x * x);
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

double tensor_map_host(int map, double a, double b, double c, double alpha)
{
    switch (map) {
    case TM_NEG:
        return -a;
    case TM_ABS:
        return fabs(a);
    case TM_EXP:
        return exp(a);
    case TM_EXP2:
        return exp2(a);
    case TM_LOG:
        return log(a);
    case TM_LOG2:
        return log2(a);
    case TM_SQRT:
        return sqrt(a);
    case TM_RSQRT:
        return 1.0 / sqrt(a);
    case TM_RECIP:
        return 1.0 / a;
    case TM_SIN:
        return sin(a);
    case TM_COS:
        return cos(a);
    case TM_TANH:
        return tanh(a);
    case TM_SIGMOID:
        return sigmoid(a);
    case TM_RELU:
        return a > 0.0 ? a : 0.0;
    case TM_GELU:
        return gelu_tanh(a);
    case TM_GELU_ERF:
        return 0.5 * a * (1.0 + erf(a * inv_sqrt_2));
    case TM_SILU:
        return a * sigmoid(a);
    case TM_SQUARE:
        return a * a;
    case TM_COPY:
        return a;
    case TM_SCALE:
        return a * alpha;
    case TM_ADD:
        return a + b;
    case TM_SUB:
        return a - b;
    case TM_MUL:
        return a * b;
    case TM_DIV:
        return a / b;
    case TM_MAX:
        return isnan(a) || isnan(b) ? NAN : fmax(a, b);
    case TM_MIN:
        return isnan(a) || isnan(b) ? NAN : fmin(a, b);
    case TM_POW:
        return pow(a, b);
    case TM_MOD:
        return mod(a, b);
    case TM_CMPLT:
        return a < b ? 1.0 : 0.0;
    case TM_CMPEQ:
        return a == b ? 1.0 : 0.0;
    case TM_WHERE:
        return a != 0.0 ? b : c;
    case TM_D_NEG:
        return -a;
    case TM_D_ABS:
        return b > 0.0 ? a : b < 0.0 ? -a : 0.0;
    case TM_D_EXP:
        return a * exp(b);
    case TM_D_EXP2:
        return a * exp2(b) * M_LN2;
    case TM_D_LOG:
        return a / b;
    case TM_D_LOG2:
        return a / (b * M_LN2);
    case TM_D_SQRT:
        return a * 0.5 / sqrt(b);
    case TM_D_RSQRT:
        return a * -0.5 / (sqrt(b) * b);
    case TM_D_RECIP:
        return -a / (b * b);
    case TM_D_SIN:
        return a * cos(b);
    case TM_D_COS:
        return -a * sin(b);
    case TM_D_TANH:
        return a * (1.0 - tanh(b) * tanh(b));
    case TM_D_SIGMOID:
        return a * sigmoid(b) * (1.0 - sigmoid(b));
    case TM_D_RELU:
        return b > 0.0 ? a : 0.0;
    case TM_D_GELU:
        return a * d_gelu_tanh(b);
    case TM_D_GELU_ERF:
        return a * (0.5 * (1.0 + erf(b * inv_sqrt_2)) + b * exp(-0.5 * b * b) / sqrt(2.0 * M_PI));
    case TM_D_SILU:
        return a * sigmoid(b) * (1.0 + b * (1.0 - sigmoid(b)));
    case TM_D_SQUARE:
        return a * 2.0 * b;
    case TM_DA_ADD:
        return a;
    case TM_DB_ADD:
        return a;
    case TM_DA_SUB:
        return a;
    case TM_DB_SUB:
        return -a;
    case TM_DA_MUL:
        return a * c;
    case TM_DB_MUL:
        return a * b;
    case TM_DA_DIV:
        return a / c;
    case TM_DB_DIV:
        return -a * b / (c * c);
    case TM_DA_MAX:
        return b > c ? a : b == c ? 0.5 * a : 0.0;
    case TM_DB_MAX:
        return c > b ? a : b == c ? 0.5 * a : 0.0;
    case TM_DA_MIN:
        return b < c ? a : b == c ? 0.5 * a : 0.0;
    case TM_DB_MIN:
        return c < b ? a : b == c ? 0.5 * a : 0.0;
    case TM_DA_POW:
        return c == 0.0 ? 0.0 : a * c * pow(b, c - 1.0);
    case TM_DB_POW:
        return b == 0.0 && c >= 0.0 ? 0.0 : a * pow(b, c) * log(b);
    case TM_DA_MOD:
        return a;
    case TM_DB_MOD:
        return -a * floor(b / c);
    case TM_D_VAR:
        return a * alpha * (b - c);
    case TM_D_LSE:
        return a * exp(b - c);
    case TM_D_EXTREME:
        return b == c || (isnan(b) && isnan(c)) ? a : 0.0;
    case TM_D_STD:
        return b == 0.0 ? 0.0 : a / (2.0 * b);
    case TM_TIE:
        return a == b || (isnan(a) && isnan(b)) ? 1.0 : 0.0;
    default:
        return NAN;
    }
}
