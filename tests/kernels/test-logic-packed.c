/* SPDX-License-Identifier: Apache-2.0 */
/* The logic plugin on PoCL: packed inference, group sums, perception, errors, verification. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-logic.h"

/* ---- packed against unpacked hard inference -------------------------------------------------- */

/* A hard layer both ways: forward on {0, 1} floats, and eval_packed on their bits. */
typedef struct hard_layer {
    int64_t IN, G, N, W;
    kp_buffer *a, *b, *C, *op;
} hard_layer;

static hard_layer hard_make(int64_t IN, int64_t G, int64_t N, unsigned seed)
{
    hard_layer h = {.IN = IN, .G = G, .N = N, .W = (N + 31) / 32};
    int32_t *a = malloc((size_t)G * 4), *b = malloc((size_t)G * 4);
    assert_true(a && b);
    uint64_t s = seed;
    for (int64_t g = 0; g < G; g++) {
        a[g] = (int32_t)kp_logic_random_below(&s, (uint64_t)IN);
        b[g] = g % 5 == 0 ? a[g] : (int32_t)kp_logic_random_below(&s, (uint64_t)IN);
    }
    double *w = rand_doubles((size_t)(16 * G), seed + 1, -2, 2);
    float *wf = malloc((size_t)(16 * G) * 4);
    assert_non_null(wf);
    for (int64_t i = 0; i < 16 * G; i++)
        wf[i] = (float)w[i];
    for (int64_t g = 0; g < G && g < 16; g++)
        wf[16 * g + g] = 9.0f; /* every op at least once */
    h.a = up(a, (size_t)G * 4), h.b = up(b, (size_t)G * 4);
    h.C = out_f32((size_t)(4 * G)), h.op = up(NULL, (size_t)G * 4);
    kp_buffer *bw = up(wf, (size_t)(16 * G) * 4);
    kp_arg co[] = {KP_ARG_TENSOR("w", T2(bw, KP_F32, G, 16)),
                   KP_ARG_TENSOR("C", T2(h.C, KP_F32, G, 4)),
                   KP_ARG_TENSOR("op", T1(h.op, KP_I32, G)), KP_ARG_INT("hard", 1)};
    assert_int_equal(launch("logic.coeffs", co, 4), KP_OK);
    kp_buffer_destroy(rt, bw);
    free(a), free(b), free(w), free(wf);
    return h;
}

static void hard_free(hard_layer *h)
{
    kp_buffer_destroy(rt, h->a), kp_buffer_destroy(rt, h->b);
    kp_buffer_destroy(rt, h->C), kp_buffer_destroy(rt, h->op);
}

static void hard_forward(const hard_layer *h, kp_buffer *x, kp_buffer *y)
{
    kp_arg fw[] = {KP_ARG_TENSOR("x", T2(x, KP_F32, h->IN, h->N)),
                   KP_ARG_TENSOR("a_idx", T1(h->a, KP_I32, h->G)),
                   KP_ARG_TENSOR("b_idx", T1(h->b, KP_I32, h->G)),
                   KP_ARG_TENSOR("C", T2(h->C, KP_F32, h->G, 4)),
                   KP_ARG_TENSOR("y", T2(y, KP_F32, h->G, h->N))};
    assert_int_equal(launch("logic.forward", fw, 5), KP_OK);
}

static void hard_packed(const hard_layer *h, kp_buffer *x, kp_buffer *y)
{
    kp_arg ev[] = {KP_ARG_TENSOR("x", T2(x, KP_U32, h->IN, h->W)),
                   KP_ARG_TENSOR("a_idx", T1(h->a, KP_I32, h->G)),
                   KP_ARG_TENSOR("b_idx", T1(h->b, KP_I32, h->G)),
                   KP_ARG_TENSOR("op", T1(h->op, KP_I32, h->G)),
                   KP_ARG_TENSOR("y", T2(y, KP_U32, h->G, h->W)),
                   KP_ARG_INT("n", h->N)};
    assert_int_equal(launch("logic.eval_packed", ev, 6), KP_OK);
}

static void pack(kp_buffer *x, kp_buffer *bits, int64_t F, int64_t N)
{
    kp_arg a[] = {KP_ARG_TENSOR("x", T2(x, KP_F32, F, N)),
                  KP_ARG_TENSOR("bits", T2(bits, KP_U32, F, (N + 31) / 32))};
    assert_int_equal(launch("logic.pack", a, 2), KP_OK);
}

/* Two hard layers on {0, 1} inputs with N = 77 (a partial last word): the packed path's words
 * equal the packed floats of the unpacked path, padding included, and unpack gives the floats. */
static void packed_layers(kp_buffer **y2, kp_buffer **yb2, int64_t *G2)
{
    const int64_t IN = 37, G1 = 53, N = 77, W = 3;
    *G2 = 42;
    float *x = malloc(IN * N * 4);
    assert_non_null(x);
    test_fill(x, (size_t)(IN * N), 5);
    for (int64_t i = 0; i < IN * N; i++)
        x[i] = x[i] > 0 ? 1.0f : 0.0f;
    hard_layer l1 = hard_make(IN, G1, N, 50), l2 = hard_make(G1, *G2, N, 60);
    kp_buffer *bx = up(x, IN * N * 4), *bxb = up(NULL, IN * W * 4);
    kp_buffer *y1 = out_f32(G1 * N), *yb1 = up(NULL, G1 * W * 4), *ref = up(NULL, G1 * W * 4);
    *y2 = out_f32(*G2 * N), *yb2 = up(NULL, *G2 * W * 4);
    pack(bx, bxb, IN, N);
    hard_forward(&l1, bx, y1);
    hard_packed(&l1, bxb, yb1);
    hard_forward(&l2, y1, *y2);
    hard_packed(&l2, yb1, *yb2);
    uint32_t want[53 * 3], got[53 * 3];
    /* Layer 1's floats packed, against its packed path. */
    pack(y1, ref, G1, N);
    down(ref, want, G1 * W * 4);
    down(yb1, got, G1 * W * 4);
    assert_memory_equal(got, want, G1 * W * 4);
    for (int64_t g = 0; g < G1; g++)
        assert_int_equal(got[g * W + W - 1] >> (N % 32), 0); /* padding zero */
    /* Layer 2 unpacked, against its floats. */
    kp_buffer *yu = out_f32(*G2 * N);
    kp_arg un[] = {KP_ARG_TENSOR("bits", T2(*yb2, KP_U32, *G2, W)),
                   KP_ARG_TENSOR("y", T2(yu, KP_F32, *G2, N))};
    assert_int_equal(launch("logic.unpack", un, 2), KP_OK);
    float *f1 = malloc(*G2 * N * 4), *f2 = malloc(*G2 * N * 4);
    assert_true(f1 && f2);
    down(*y2, f1, *G2 * N * 4);
    down(yu, f2, *G2 * N * 4);
    for (int64_t i = 0; i < *G2 * N; i++)
        assert_true(f1[i] == 0.0f || f1[i] == 1.0f);
    assert_memory_equal(f1, f2, *G2 * N * 4);
    free(x), free(f1), free(f2);
    kp_buffer *all[] = {bx, bxb, y1, yb1, ref, yu};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kp_buffer_destroy(rt, all[i]);
    hard_free(&l1), hard_free(&l2);
}

void test_packed_matches_unpacked(void **state)
{
    kp_buffer *y2, *yb2;
    int64_t G2;
    packed_layers(&y2, &yb2, &G2);
    kp_buffer_destroy(rt, y2), kp_buffer_destroy(rt, yb2);
}

/* Class scores: the float group sums of a hard layer equal the packed counts, exactly; the
 * backward spreads dout / tau over each group. */
void test_groupsum_matches(void **state)
{
    kp_buffer *y2, *yb2;
    int64_t G2, K = 6, N = 77;
    packed_layers(&y2, &yb2, &G2);
    kp_buffer *sf = out_f32(K * N), *pf = out_f32(K * N), *pi = up(NULL, K * N * 4);
    kp_arg gs[] = {KP_ARG_TENSOR("y", T2(y2, KP_F32, G2, N)),
                   KP_ARG_TENSOR("out", T2(sf, KP_F32, K, N)), KP_ARG_FLOAT("tau", 2.5)};
    assert_int_equal(launch("logic.groupsum", gs, 3), KP_OK);
    kp_arg gp[] = {KP_ARG_TENSOR("bits", T2(yb2, KP_U32, G2, 3)),
                   KP_ARG_TENSOR("out", T2(pf, KP_F32, K, N)), KP_ARG_FLOAT("tau", 2.5)};
    assert_int_equal(launch("logic.groupsum_packed", gp, 3), KP_OK);
    kp_arg gi[] = {KP_ARG_TENSOR("bits", T2(yb2, KP_U32, G2, 3)),
                   KP_ARG_TENSOR("out", T2(pi, KP_I32, K, N))};
    assert_int_equal(launch("logic.groupsum_packed", gi, 2), KP_OK);
    float a[6 * 77], b[6 * 77];
    int32_t c[6 * 77];
    down(sf, a, sizeof a), down(pf, b, sizeof b), down(pi, c, sizeof c);
    assert_memory_equal(a, b, sizeof a);
    for (int i = 0; i < 6 * 77; i++) {
        assert_true(c[i] >= 0 && c[i] <= 7);
        assert_float_equal(a[i], (float)c[i] / 2.5f, 0);
    }
    /* Backward: dy[g, n] = dout[g / 7, n] / tau. */
    kp_buffer *dy = out_f32(G2 * N);
    kp_arg gb[] = {KP_ARG_TENSOR("dout", T2(sf, KP_F32, K, N)),
                   KP_ARG_TENSOR("dy", T2(dy, KP_F32, G2, N)), KP_ARG_FLOAT("tau", 2.5)};
    assert_int_equal(launch("logic.groupsum_backward", gb, 3), KP_OK);
    float *d = malloc(G2 * N * 4);
    assert_non_null(d);
    down(dy, d, G2 * N * 4);
    for (int64_t g = 0; g < G2; g++)
        for (int64_t n = 0; n < N; n++)
            assert_float_equal(d[g * N + n], a[(g / 7) * N + n] / 2.5f, 0);
    free(d);
    kp_buffer *all[] = {y2, yb2, sf, pf, pi, dy};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kp_buffer_destroy(rt, all[i]);
}

/* ---- perception ------------------------------------------------------------------------------ */

static float cell_value(int b, int c, int y, int x)
{
    return (float)(1000 * b + 100 * c + 10 * y + x + 1);
}

/* Every feature of a [2, 2, 3, 4] grid, periodic and zero: feature 9 c + 3 dy + dx of cell
 * (b, y, x) is channel c at (y + dy - 1, x + dx - 1), wrapped or 0 outside. */
void test_perceive_indices(void **state)
{
    enum { B = 2, C = 2, H = 3, W = 4 };
    float grid[B * C * H * W], out[9 * C * B * H * W];
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++)
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    grid[((b * C + c) * H + y) * W + x] = cell_value(b, c, y, x);
    kp_buffer *bg = up(grid, sizeof grid), *bo = out_f32(9 * C * B * H * W);
    for (int zero = 0; zero < 2; zero++) {
        kp_arg a[] = {KP_ARG_TENSOR("grid", kp_tensor_nd(bg, KP_F32, 4, (int64_t[]){B, C, H, W})),
                      KP_ARG_TENSOR("out", T2(bo, KP_F32, 9 * C, B * H * W)),
                      KP_ARG_INT("boundary", zero)};
        assert_int_equal(launch("logic.perceive", a, 3), KP_OK);
        down(bo, out, sizeof out);
        for (int b = 0; b < B; b++)
            for (int c = 0; c < C; c++)
                for (int y = 0; y < H; y++)
                    for (int x = 0; x < W; x++)
                        for (int k = 0; k < 9; k++) {
                            int u = y + k / 3 - 1, v = x + k % 3 - 1;
                            int inside = u >= 0 && u < H && v >= 0 && v < W;
                            float want =
                                !inside && zero ? 0.0f : cell_value(b, c, (u + H) % H, (v + W) % W);
                            float got = out[(9 * c + k) * B * H * W + (b * H + y) * W + x];
                            assert_float_equal(got, want, 0);
                            if (k == 4)
                                assert_float_equal(got, cell_value(b, c, y, x), 0);
                        }
    }
    kp_buffer_destroy(rt, bg), kp_buffer_destroy(rt, bo);
}

/* The backward is the adjoint: <perceive(g), d> = <g, perceive_backward(d)>, on a grid with a
 * 2-row and a 1-column axis (where the periodic neighbours coincide) and on a square one. */
void test_perceive_adjoint(void **state)
{
    const int64_t shapes[2][4] = {{3, 2, 2, 1}, {1, 3, 7, 5}};
    for (int s = 0; s < 2; s++)
        for (int zero = 0; zero < 2; zero++) {
            int64_t B = shapes[s][0], C = shapes[s][1], H = shapes[s][2], W = shapes[s][3];
            size_t n = (size_t)(B * C * H * W);
            double *g = rand_doubles(n, 70 + s, -1, 1), *d = rand_doubles(9 * n, 80 + s, -1, 1);
            float *gf = malloc(9 * n * 4), *df = malloc(9 * n * 4);
            assert_true(gf && df);
            for (size_t i = 0; i < 9 * n; i++)
                df[i] = (float)d[i], gf[i] = i < n ? (float)g[i] : 0;
            kp_buffer *bg = up(gf, n * 4), *bd = up(df, 9 * n * 4);
            kp_buffer *po = out_f32(9 * n), *pg = out_f32(n);
            kp_tensor grid = kp_tensor_nd(bg, KP_F32, 4, (int64_t[]){B, C, H, W});
            kp_arg f[] = {KP_ARG_TENSOR("grid", grid),
                          KP_ARG_TENSOR("out", T2(po, KP_F32, 9 * C, B * H * W)),
                          KP_ARG_INT("boundary", zero)};
            assert_int_equal(launch("logic.perceive", f, 3), KP_OK);
            grid.buffer = pg;
            kp_arg r[] = {KP_ARG_TENSOR("dout", T2(bd, KP_F32, 9 * C, B * H * W)),
                          KP_ARG_TENSOR("dgrid", grid), KP_ARG_INT("boundary", zero)};
            assert_int_equal(launch("logic.perceive_backward", r, 3), KP_OK);
            down(po, gf, 9 * n * 4);
            double lhs = 0, rhs = 0;
            for (size_t i = 0; i < 9 * n; i++)
                lhs += gf[i] * d[i];
            down(pg, df, n * 4);
            for (size_t i = 0; i < n; i++)
                rhs += g[i] * df[i];
            assert_float_equal(lhs, rhs, 1e-4);
            free(g), free(d), free(gf), free(df);
            kp_buffer_destroy(rt, bg), kp_buffer_destroy(rt, bd);
            kp_buffer_destroy(rt, po), kp_buffer_destroy(rt, pg);
        }
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* Launches `kernel`, expecting `status` and exactly `message`. */
static void expect_fail(const char *kernel, const kp_arg *args, size_t n, kp_status status,
                        const char *message)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, kernel, &k), KP_OK);
    assert_int_equal(kp_kernel_launch(rt, k, args, n, NULL), status);
    assert_string_equal(kp_last_error(rt), message);
}

/* A gate reading past x's rows (or below 0) is refused before anything runs, naming the lowest
 * such gate; check_wiring 0 skips the read-back and the kernel clamps instead. */
void test_wiring_rejected(void **state)
{
    int32_t a[8] = {0, 1, 2, 3, 4, 10, 6, 7}, b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float x[10 * 5] = {0}, sentinel[8 * 5], y[8 * 5];
    for (int i = 0; i < 40; i++)
        sentinel[i] = 7.0f;
    float C[32] = {0};
    kp_buffer *ba = up(a, sizeof a), *bb = up(b, sizeof b), *bx = up(x, sizeof x);
    kp_buffer *bc = up(C, sizeof C), *by = up(sentinel, sizeof sentinel);
    kp_arg fw[] = {
        KP_ARG_TENSOR("x", T2(bx, KP_F32, 10, 5)), KP_ARG_TENSOR("a_idx", T1(ba, KP_I32, 8)),
        KP_ARG_TENSOR("b_idx", T1(bb, KP_I32, 8)), KP_ARG_TENSOR("C", T2(bc, KP_F32, 8, 4)),
        KP_ARG_TENSOR("y", T2(by, KP_F32, 8, 5)),  KP_ARG_INT("check_wiring", 1)};
    expect_fail("logic.forward", fw, 6, KP_ERR_INVALID_ARG,
                "kernel logic.forward: a_idx: gate 5 reads input 10, outside x's rows 0..9");
    down(by, y, sizeof y);
    assert_memory_equal(y, sentinel, sizeof y); /* nothing ran */
    b[2] = -1;
    assert_int_equal(kp_buffer_write(rt, bb, 0, sizeof b, b), KP_OK);
    expect_fail("logic.forward", fw, 6, KP_ERR_INVALID_ARG,
                "kernel logic.forward: b_idx: gate 2 reads input -1, outside x's rows 0..9");
    fw[5] = KP_ARG_INT("check_wiring", 0);
    assert_int_equal(launch("logic.forward", fw, 6), KP_OK);
    /* The packed path checks its ops too. */
    int32_t op[8] = {0, 1, 2, 16, 4, 5, 6, 7}, good[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    kp_buffer *bo = up(op, sizeof op), *bg = up(good, sizeof good), *bxb = up(NULL, 40);
    kp_buffer *byb = up(NULL, 32);
    kp_arg ev[] = {
        KP_ARG_TENSOR("x", T2(bxb, KP_U32, 10, 1)), KP_ARG_TENSOR("a_idx", T1(bg, KP_I32, 8)),
        KP_ARG_TENSOR("b_idx", T1(bg, KP_I32, 8)), KP_ARG_TENSOR("op", T1(bo, KP_I32, 8)),
        KP_ARG_TENSOR("y", T2(byb, KP_U32, 8, 1))};
    expect_fail("logic.eval_packed", ev, 5, KP_ERR_INVALID_ARG,
                "kernel logic.eval_packed: op: gate 3 has op 16, outside 0..15");
    /* The backward's reverse index must be this wiring's. */
    int32_t start[11], entries[16];
    assert_int_equal(kp_logic_csr_build(good, good, 8, 10, start, entries), 0);
    kp_buffer *bs = up(start, sizeof start), *be = up(entries, sizeof entries);
    kp_buffer *bdx = out_f32(50);
    kp_arg bw[] = {KP_ARG_TENSOR("x", T2(bx, KP_F32, 10, 5)),
                   KP_ARG_TENSOR("a_idx", T1(bg, KP_I32, 8)),
                   KP_ARG_TENSOR("b_idx", T1(ba, KP_I32, 8)),
                   KP_ARG_TENSOR("C", T2(bc, KP_F32, 8, 4)),
                   KP_ARG_TENSOR("dy", T2(by, KP_F32, 8, 5)),
                   KP_ARG_TENSOR("csr_start", T1(bs, KP_I32, 11)),
                   KP_ARG_TENSOR("csr_entries", T1(be, KP_I32, 16)),
                   KP_ARG_TENSOR("dx", T2(bdx, KP_F32, 10, 5))};
    expect_fail("logic.backward", bw, 8, KP_ERR_INVALID_ARG,
                "kernel logic.backward: b_idx: gate 5 reads input 10, outside x's rows 0..9");
    bw[2] = KP_ARG_TENSOR("b_idx", T1(bb, KP_I32, 8));
    b[2] = 3;
    assert_int_equal(kp_buffer_write(rt, bb, 0, sizeof b, b), KP_OK);
    expect_fail("logic.backward", bw, 8, KP_ERR_INVALID_ARG,
                "kernel logic.backward: csr_start: element 1 is 2, but this wiring's reverse "
                "index has 1 (build it with kp_logic_csr_build)");
    kp_buffer *all[] = {ba, bb, bx, bc, by, bo, bg, bxb, byb, bs, be, bdx};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        kp_buffer_destroy(rt, all[i]);
}

/* Shapes and arguments each kernel refuses, with its message. */
void test_shapes_rejected(void **state)
{
    kp_buffer *buf = up(NULL, 4096);
    kp_arg fw[] = {
        KP_ARG_TENSOR("x", T2(buf, KP_F32, 10, 5)), KP_ARG_TENSOR("a_idx", T1(buf, KP_I32, 8)),
        KP_ARG_TENSOR("b_idx", T1(buf, KP_I32, 8)), KP_ARG_TENSOR("C", T2(buf, KP_F32, 8, 4)),
        KP_ARG_TENSOR("y", T2(buf, KP_F32, 8, 4))};
    /* (y overlaps the inputs; the core says so first, so give y a buffer of its own) */
    kp_buffer *by = up(NULL, 4096);
    fw[4] = KP_ARG_TENSOR("y", T2(by, KP_F32, 8, 4));
    expect_fail("logic.forward", fw, 5, KP_ERR_INVALID_ARG,
                "kernel logic.forward: y: expected [G, N] = [8, 5], got f32[8, 4]");
    kp_tensor strided = T2(buf, KP_F32, 10, 5);
    strided.strides[1] = 2, strided.strides[0] = 10;
    fw[0] = KP_ARG_TENSOR("x", strided);
    fw[4] = KP_ARG_TENSOR("y", T2(by, KP_F32, 8, 5));
    expect_fail("logic.forward", fw, 5, KP_ERR_UNSUPPORTED,
                "kernel logic.forward: x: the last dimension must be contiguous (stride 1), got "
                "f32[10, 5] strides [10, 2]");
    kp_arg co[] = {KP_ARG_TENSOR("w", T2(buf, KP_F32, 8, 16))};
    expect_fail("logic.coeffs", co, 1, KP_ERR_INVALID_ARG,
                "kernel logic.coeffs: C, op: give at least one output");
    kp_arg gs[] = {KP_ARG_TENSOR("y", T2(buf, KP_F32, 10, 5)),
                   KP_ARG_TENSOR("out", T2(by, KP_F32, 3, 5))};
    expect_fail("logic.groupsum", gs, 2, KP_ERR_INVALID_ARG,
                "kernel logic.groupsum: y: its 10 rows do not split evenly into the 3 classes of "
                "out");
    kp_arg pc[] = {KP_ARG_TENSOR("grid", kp_tensor_3d(buf, KP_F32, 2, 3, 4)),
                   KP_ARG_TENSOR("out", T2(by, KP_F32, 18, 11))};
    expect_fail("logic.perceive", pc, 2, KP_ERR_INVALID_ARG,
                "kernel logic.perceive: out: expected [9C, B H W] = [18, 12], got f32[18, 11]");
    /* The packed patches: whole grids of whole rows of words, a tile within the grids. */
    kp_arg pp[] = {KP_ARG_TENSOR("bits", T2(buf, KP_U32, 2, 30)),
                   KP_ARG_TENSOR("out", T2(by, KP_U32, 18, 4)), KP_ARG_INT("height", 4),
                   KP_ARG_INT("width", 37)};
    expect_fail("logic.perceive_packed", pp, 4, KP_ERR_INVALID_ARG,
                "kernel logic.perceive_packed: bits: 2 channels of 30 words are not whole 4 x 37 "
                "grids (2 words a row)");
    pp[3] = KP_ARG_INT("width", 64);
    pp[2] = KP_ARG_INT("height", 5);
    pp[0] = KP_ARG_TENSOR("bits", T2(buf, KP_U32, 2, 10));
    pp[1] = KP_ARG_TENSOR("out", T2(by, KP_U32, 18, 7));
    expect_fail("logic.perceive_packed", pp, 4, KP_ERR_INVALID_ARG,
                "kernel logic.perceive_packed: out: 7 words are not whole rows of 2 words");
    kp_arg tile[] = {pp[0], KP_ARG_TENSOR("out", T2(by, KP_U32, 18, 8)), pp[2], pp[3],
                     KP_ARG_INT("first_row", 3)};
    expect_fail("logic.perceive_packed", tile, 5, KP_ERR_INVALID_ARG,
                "kernel logic.perceive_packed: first_row: rows 3 .. 6 are not within the grids' "
                "5 rows");
    /* Broadcast views cost no memory whatever their extents: 9C and IN + 1 must not wrap. */
    kp_tensor channels = kp_tensor_3d(buf, KP_F32, (int64_t)1 << 62, 1, 1);
    channels.strides[0] = 0;
    pc[0] = KP_ARG_TENSOR("grid", channels);
    expect_fail("logic.perceive", pc, 2, KP_ERR_UNSUPPORTED,
                "kernel logic.perceive: grid: views reaching beyond 2^31 elements are not "
                "supported");
    kp_tensor rows = T2(buf, KP_F32, INT64_MAX, 1);
    rows.strides[0] = 0;
    kp_arg bw[] = {KP_ARG_TENSOR("x", rows),
                   KP_ARG_TENSOR("a_idx", T1(buf, KP_I32, 8)),
                   KP_ARG_TENSOR("b_idx", T1(buf, KP_I32, 8)),
                   KP_ARG_TENSOR("C", T2(buf, KP_F32, 8, 4)),
                   KP_ARG_TENSOR("dy", T2(buf, KP_F32, 8, 1)),
                   KP_ARG_TENSOR("csr_start", T1(buf, KP_I32, 11)),
                   KP_ARG_TENSOR("csr_entries", T1(buf, KP_I32, 16)),
                   KP_ARG_TENSOR("dx", T2(by, KP_F32, 10, 1))};
    expect_fail("logic.backward", bw, 8, KP_ERR_UNSUPPORTED,
                "kernel logic.backward: x: views reaching beyond 2^31 elements are not "
                "supported");
    kp_buffer_destroy(rt, buf), kp_buffer_destroy(rt, by);
}

/* ---- verification ---------------------------------------------------------------------------- */

static void report(void *user, const kp_verify_result *r)
{
    if (!r->passed)
        fprintf(stderr, "%s %s %s: max abs err %g at %lld, %lld failures\n", r->kernel, r->size,
                r->output, r->max_abs_err, (long long)r->worst_index, (long long)r->failures);
    (*(int *)user)++;
}

/* kp_kernel_verify passes for every kernel of the family on every verify size, two seeds. */
void test_verify_all(void **state)
{
    int kernels = 0, checks = 0;
    for (size_t i = 0; i < kp_kernel_count(rt); i++) {
        kp_kernel *k = kp_kernel_at(rt, i);
        kp_kernel_info info = {.struct_size = sizeof info};
        assert_int_equal(kp_kernel_info_get(k, &info), KP_OK);
        if (!kp_kernel_name_matches("logic", info.name))
            continue;
        kernels++;
        for (uint64_t seed = 1; seed <= 2; seed++) {
            kp_status st = kp_kernel_verify(rt, k, NULL, seed, report, &checks);
            if (st != KP_OK)
                fprintf(stderr, "%s: %s\n", info.name, kp_last_error(rt));
            assert_int_equal(st, KP_OK);
        }
    }
    assert_int_equal(kernels, 15);
    assert_true(checks >= 2 * 94);
}

/* The work-group shapes the plugin picks for GPUs (coalesced lanes, scalar vectors, a tree of
 * dw lanes), verified here on the CPU: the code paths GPUs take are checked wherever tests run. */
void test_verify_gpu_shapes(void **state)
{
    const struct {
        const char *kernel, *name;
        int64_t value;
    } set[] = {
        {"logic.forward", "WG_N", 32},      {"logic.forward", "WG_G", 8},
        {"logic.forward", "VW", 1},         {"logic.backward", "WG_N", 32},
        {"logic.backward", "WG_G", 8},      {"logic.backward", "VW", 1},
        {"logic.backward", "DW_LANES", 32}, {"logic.backward", "DW_GATES", 8},
        {"logic.backward", "DW_ITEMS", 1},  {"logic.eval_packed", "WG_N", 8},
        {"logic.eval_packed", "WG_G", 32},  {"logic.eval_packed", "WPI", 1},
        {"logic.eval_packed", "VW", 1},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        kp_kernel *k = NULL;
        assert_int_equal(kp_kernel_find(rt, set[i].kernel, &k), KP_OK);
        assert_int_equal(kp_kernel_tunable_set(rt, k, set[i].name, set[i].value), KP_OK);
    }
    const char *const kernels[] = {"logic.forward", "logic.backward", "logic.eval_packed"};
    int checks = 0;
    for (size_t i = 0; i < 3; i++) {
        kp_kernel *k = NULL;
        assert_int_equal(kp_kernel_find(rt, kernels[i], &k), KP_OK);
        kp_status st = kp_kernel_verify(rt, k, NULL, 3, report, &checks);
        if (st != KP_OK)
            fprintf(stderr, "%s: %s\n", kernels[i], kp_last_error(rt));
        assert_int_equal(st, KP_OK);
        assert_int_equal(kp_kernel_tuning_reset(rt, k), KP_OK);
    }
    assert_true(checks >= 20);
}
