/* SPDX-License-Identifier: Apache-2.0 */
/* The logic kernels' host references: the same math in double, on host memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/ops/logic.h"
#include "logic.h"

/* A host 2-D view: element (r, c) at p[r * rs + c] (offset folded into p). */
#define ROW(call, i, type, r) (KP_HOST_PTR(call, i, type) + (r) * (call)->args[i].tensor.strides[0])
#define IDX(call, i, g)                                                                            \
    (KP_HOST_PTR(call, i, const int32_t)[(g) * (call)->args[i].tensor.strides[0]])

void logic_softmax16(const float *w, double p[16])
{
    double m = w[0], s = 0;
    for (int i = 1; i < 16; i++)
        m = fmax(m, w[i]);
    for (int i = 0; i < 16; i++)
        s += p[i] = exp(w[i] - m);
    for (int i = 0; i < 16; i++)
        p[i] /= s;
}

static int argmax16(const float *w)
{
    int best = 0;
    for (int i = 1; i < 16; i++)
        if (w[i] > w[best])
            best = i;
    return best;
}

kp_status logic_coeffs_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t G = v[CO_W].tensor.shape[0];
    for (int64_t g = 0; g < G; g++) {
        const float *w = ROW(call, CO_W, const float, g);
        int best = argmax16(w);
        if (v[CO_OP].present)
            KP_HOST_PTR(call, CO_OP, int32_t)[g * v[CO_OP].tensor.strides[0]] = best;
        if (!v[CO_C].present)
            continue;
        double p[16] = {0};
        if (v[CO_HARD].i)
            p[best] = 1;
        else
            logic_softmax16(w, p);
        float *c = ROW(call, CO_C, float, g);
        for (int t = 0; t < 4; t++) {
            double s = 0;
            for (int i = 0; i < 16; i++)
                s += kp_logic_coeff(t, i) * p[i];
            c[t] = (float)s;
        }
    }
    return KP_OK;
}

static int64_t wire(const kp_call *call, int index, int64_t g, int64_t in_dim)
{
    int64_t i = IDX(call, index, g);
    return i < 0 ? 0 : i >= in_dim ? in_dim - 1 : i; /* the kernels clamp alike */
}

kp_status logic_forward_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[FW_X].tensor.shape[0], N = v[FW_X].tensor.shape[1];
    for (int64_t g = 0; g < v[FW_A].tensor.shape[0]; g++) {
        const float *xa = ROW(call, FW_X, const float, wire(call, FW_A, g, IN));
        const float *xb = ROW(call, FW_X, const float, wire(call, FW_B, g, IN));
        const float *c = ROW(call, FW_C, const float, g);
        float *y = ROW(call, FW_Y, float, g);
        for (int64_t n = 0; n < N; n++) {
            double a = xa[n], b = xb[n];
            y[n] = (float)(c[0] + c[1] * a + c[2] * b + c[3] * a * b);
        }
    }
    return KP_OK;
}

/* dw: the four batch sums, dL/dp = M^T S, then the softmax's backward. */
static void reference_dw(const kp_call *call, int64_t G, int64_t IN, int64_t N)
{
    for (int64_t g = 0; g < G; g++) {
        const float *xa = ROW(call, BW_X, const float, wire(call, BW_A, g, IN));
        const float *xb = ROW(call, BW_X, const float, wire(call, BW_B, g, IN));
        const float *dy = ROW(call, BW_DY, const float, g);
        double S[4] = {0, 0, 0, 0}, p[16], gp[16], dot = 0;
        for (int64_t n = 0; n < N; n++) {
            double a = xa[n], b = xb[n], e = dy[n];
            S[0] += e, S[1] += e * a, S[2] += e * b, S[3] += e * a * b;
        }
        logic_softmax16(ROW(call, BW_W, const float, g), p);
        for (int i = 0; i < 16; i++) {
            gp[i] = 0;
            for (int t = 0; t < 4; t++)
                gp[i] += kp_logic_coeff(t, i) * S[t];
            dot += p[i] * gp[i];
        }
        float *dw = ROW(call, BW_DW, float, g);
        for (int i = 0; i < 16; i++)
            dw[i] = (float)(p[i] * (gp[i] - dot));
    }
}

/* dx straight from the wiring (not from the CSR, which the device path uses): every gate adds
 * dy (Ca + Cab b) to its a input and dy (Cb + Cab a) to its b input, both when they coincide. */
static kp_status reference_dx(const kp_call *call, kp_launch *l, int64_t G, int64_t IN, int64_t N)
{
    double *acc = calloc((size_t)(IN * N > 0 ? IN * N : 1), sizeof *acc);
    if (!acc)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t g = 0; g < G; g++) {
        int64_t ia = wire(call, BW_A, g, IN), ib = wire(call, BW_B, g, IN);
        const float *xa = ROW(call, BW_X, const float, ia), *xb = ROW(call, BW_X, const float, ib);
        const float *dy = ROW(call, BW_DY, const float, g), *c = ROW(call, BW_C, const float, g);
        for (int64_t n = 0; n < N; n++) {
            acc[ia * N + n] += (double)dy[n] * (c[1] + (double)c[3] * xb[n]);
            acc[ib * N + n] += (double)dy[n] * (c[2] + (double)c[3] * xa[n]);
        }
    }
    for (int64_t i = 0; i < IN; i++) {
        float *dx = ROW(call, BW_DX, float, i);
        for (int64_t n = 0; n < N; n++)
            dx[n] = (float)acc[i * N + n];
    }
    free(acc);
    return KP_OK;
}

kp_status logic_backward_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[BW_X].tensor.shape[0], N = v[BW_X].tensor.shape[1];
    int64_t G = v[BW_A].tensor.shape[0];
    if (v[BW_DW].present)
        reference_dw(call, G, IN, N);
    return v[BW_DX].present ? reference_dx(call, l, G, IN, N) : KP_OK;
}

kp_status logic_pack_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *x = &call->args[PK_X].tensor;
    int64_t N = x->shape[1], W = (N + 31) / 32;
    for (int64_t f = 0; f < x->shape[0]; f++) {
        const float *row = ROW(call, PK_X, const float, f);
        uint32_t *bits = ROW(call, PK_BITS, uint32_t, f);
        memset(bits, 0, (size_t)W * sizeof *bits);
        for (int64_t n = 0; n < N; n++)
            bits[n / 32] |= (uint32_t)(row[n] > 0.5f) << (n % 32);
    }
    return KP_OK;
}

kp_status logic_unpack_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[UP_Y].tensor;
    for (int64_t f = 0; f < y->shape[0]; f++) {
        const uint32_t *bits = ROW(call, UP_BITS, const uint32_t, f);
        float *row = ROW(call, UP_Y, float, f);
        for (int64_t n = 0; n < y->shape[1]; n++)
            row[n] = (float)(bits[n / 32] >> (n % 32) & 1u);
    }
    return KP_OK;
}

/* Written with a switch over the ops, as difflogic's C reads, not with the kernel's normal form. */
static uint32_t op_bits(int op, uint32_t a, uint32_t b)
{
    switch (op & 15) {
    case 0:
        return 0;
    case 1:
        return a & b;
    case 2:
        return a & ~b;
    case 3:
        return a;
    case 4:
        return ~a & b;
    case 5:
        return b;
    case 6:
        return a ^ b;
    case 7:
        return a | b;
    case 8:
        return ~(a | b);
    case 9:
        return ~(a ^ b);
    case 10:
        return ~b;
    case 11:
        return a | ~b;
    case 12:
        return ~a;
    case 13:
        return ~a | b;
    case 14:
        return ~(a & b);
    default:
        return ~0u;
    }
}

kp_status logic_eval_packed_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    int64_t IN = v[EV_X].tensor.shape[0], W = v[EV_X].tensor.shape[1], n = v[EV_SAMPLES].i;
    int64_t used = n ? n - 32 * (W - 1) : 32;
    uint32_t tail = used >= 32 ? 0xffffffffu : (1u << used) - 1u;
    for (int64_t g = 0; g < v[EV_A].tensor.shape[0]; g++) {
        const uint32_t *xa = ROW(call, EV_X, const uint32_t, wire(call, EV_A, g, IN));
        const uint32_t *xb = ROW(call, EV_X, const uint32_t, wire(call, EV_B, g, IN));
        int op = IDX(call, EV_OP, g);
        uint32_t *y = ROW(call, EV_Y, uint32_t, g);
        for (int64_t c = 0; c < W; c++)
            y[c] = op_bits(op, xa[c], xb[c]) & (c == W - 1 ? tail : 0xffffffffu);
    }
    return KP_OK;
}

kp_status logic_groupsum_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *y = &call->args[GS_Y].tensor, *out = &call->args[GS_OUT].tensor;
    int64_t K = out->shape[0], S = y->shape[0] / K, N = y->shape[1];
    for (int64_t k = 0; k < K; k++) {
        float *o = ROW(call, GS_OUT, float, k);
        for (int64_t n = 0; n < N; n++) {
            double s = 0;
            for (int64_t r = k * S; r < (k + 1) * S; r++)
                s += ROW(call, GS_Y, const float, r)[n];
            o[n] = (float)(s / call->args[GS_TAU].f);
        }
    }
    return KP_OK;
}

kp_status logic_groupsum_backward_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *d = &call->args[GB_DOUT].tensor, *dy = &call->args[GB_DY].tensor;
    int64_t S = dy->shape[0] / d->shape[0];
    float tau = (float)call->args[GB_TAU].f;
    for (int64_t g = 0; g < dy->shape[0]; g++)
        for (int64_t n = 0; n < dy->shape[1]; n++)
            ROW(call, GB_DY, float, g)[n] = ROW(call, GB_DOUT, const float, g / S)[n] / tau;
    return KP_OK;
}

kp_status logic_groupsum_packed_reference(const kp_call *call, kp_launch *l)
{
    const kp_tensor *bits = &call->args[GP_BITS].tensor, *out = &call->args[GP_OUT].tensor;
    int64_t K = out->shape[0], S = bits->shape[0] / K, N = out->shape[1];
    float tau = (float)call->args[GP_TAU].f;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) {
            int32_t count = 0;
            for (int64_t r = k * S; r < (k + 1) * S; r++)
                count += (int32_t)(ROW(call, GP_BITS, const uint32_t, r)[n / 32] >> (n % 32) & 1u);
            if (out->dtype == KP_I32)
                ROW(call, GP_OUT, int32_t, k)[n] = count;
            else
                ROW(call, GP_OUT, float, k)[n] = (float)count / tau;
        }
    return KP_OK;
}

/* Coordinate v + d on an axis of n: wrapped, or -1 outside with zero boundaries. */
static int64_t neighbour(int64_t v, int64_t d, int64_t n, int zero)
{
    int64_t u = v + d;
    if (u >= 0 && u < n)
        return u;
    return zero ? -1 : (u % n + n) % n;
}

/* Grid element (b, c, y, x) of a [C, H, W] or [B, C, H, W] tensor argument. */
static float *grid_at(const kp_call *call, int i, int64_t b, int64_t c, int64_t y, int64_t x)
{
    const kp_tensor *t = &call->args[i].tensor;
    int r = t->rank == 4;
    int64_t off = (r ? b * t->strides[0] : 0) + c * t->strides[r] + y * t->strides[r + 1] +
                  x * t->strides[r + 2];
    return KP_HOST_PTR(call, i, float) + off;
}

static void grid_dims(const kp_tensor *t, int64_t *B, int64_t *C, int64_t *H, int64_t *W)
{
    int r = t->rank == 4;
    *B = r ? t->shape[0] : 1;
    *C = t->shape[r], *H = t->shape[r + 1], *W = t->shape[r + 2];
}

kp_status logic_perceive_reference(const kp_call *call, kp_launch *l)
{
    int64_t B, C, H, W;
    grid_dims(&call->args[PC_GRID].tensor, &B, &C, &H, &W);
    int zero = (int)call->args[PC_BOUNDARY].i;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    for (int k = 0; k < 9; k++) {
                        int64_t u = neighbour(y, k / 3 - 1, H, zero);
                        int64_t v = neighbour(x, k % 3 - 1, W, zero);
                        float val = u < 0 || v < 0 ? 0.0f : *grid_at(call, PC_GRID, b, c, u, v);
                        ROW(call, PC_OUT, float, 9 * c + k)[(b * H + y) * W + x] = val;
                    }
    return KP_OK;
}

/* The adjoint of the reference above, written as a scatter (the kernel gathers). */
kp_status logic_perceive_backward_reference(const kp_call *call, kp_launch *l)
{
    int64_t B, C, H, W;
    grid_dims(&call->args[PB_DGRID].tensor, &B, &C, &H, &W);
    int zero = (int)call->args[PB_BOUNDARY].i;
    double *acc = calloc((size_t)(B * C * H * W), sizeof *acc);
    if (!acc)
        return logic_host->fail(l, KP_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    for (int k = 0; k < 9; k++) {
                        int64_t u = neighbour(y, k / 3 - 1, H, zero);
                        int64_t v = neighbour(x, k % 3 - 1, W, zero);
                        if (u >= 0 && v >= 0)
                            acc[((b * C + c) * H + u) * W + v] +=
                                ROW(call, PB_DOUT, const float, 9 * c + k)[(b * H + y) * W + x];
                    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    *grid_at(call, PB_DGRID, b, c, y, x) =
                        (float)acc[((b * C + c) * H + y) * W + x];
    free(acc);
    return KP_OK;
}

/* Cell by cell: patch bit k of cell (r, x) is the cell at (y + k / 3 - 1, x + k % 3 - 1) of its
 * grid, wrapped or 0 outside; bits past W stay 0. */
kp_status logic_perceive_packed_reference(const kp_call *call, kp_launch *l)
{
    const kp_value *v = call->args;
    const int64_t H = v[PP_HEIGHT].i, W = v[PP_WIDTH].i, wpr = (W + 31) / 32;
    const int64_t C = v[PP_BITS].tensor.shape[0], rows = v[PP_OUT].tensor.shape[1] / wpr;
    const int zero = (int)v[PP_BOUNDARY].i;
    for (int64_t c = 0; c < C; c++) {
        const uint32_t *in = ROW(call, PP_BITS, const uint32_t, c);
        for (int k = 0; k < 9; k++) {
            uint32_t *out = ROW(call, PP_OUT, uint32_t, 9 * c + k);
            memset(out, 0, (size_t)(rows * wpr) * sizeof *out);
            for (int64_t i = 0; i < rows; i++) {
                const int64_t r = v[PP_FIRST].i + i, y = r % H,
                              u = neighbour(y, k / 3 - 1, H, zero);
                for (int64_t x = 0; u >= 0 && x < W; x++) {
                    const int64_t s = neighbour(x, k % 3 - 1, W, zero);
                    const int64_t at = (r - y + u) * wpr + s / 32;
                    if (s >= 0 && (in[at] >> (s % 32) & 1u))
                        out[i * wpr + x / 32] |= 1u << (x % 32);
                }
            }
        }
    }
    return KP_OK;
}
