/* SPDX-License-Identifier: Apache-2.0 */
/* An icosphere's edges as a large sparse LM problem for the solve tests: the mesh, and the edge
 * length residual over the coordinates of the edge's two vertices. */
#ifndef KP_TEST_SOLVE_MESH_H
#define KP_TEST_SOLVE_MESH_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/solve.h"

/* An icosahedron subdivided `levels` times: vertices on the unit sphere, unique edges. */
typedef struct mesh {
    int nv, ne;
    double *v;  /* [nv, 3] */
    int32_t *e; /* [ne, 2] */
} mesh;

static inline int edge_vertex(mesh *m, int32_t *mid, int cap, int a, int b)
{
    /* The midpoint of a-b, made once: mid[] maps the edge (a < b) to its vertex. */
    const int lo = a < b ? a : b, hi = a < b ? b : a;
    for (int k = 0; k < m->ne; k++)
        if (m->e[2 * k] == lo && m->e[2 * k + 1] == hi)
            return mid[k];
    assert_true(m->ne < cap);
    m->e[2 * m->ne] = lo;
    m->e[2 * m->ne + 1] = hi;
    double *p = m->v + 3 * m->nv, n = 0;
    for (int c = 0; c < 3; c++) {
        p[c] = 0.5 * (m->v[3 * lo + c] + m->v[3 * hi + c]);
        n += p[c] * p[c];
    }
    for (int c = 0; c < 3; c++)
        p[c] /= sqrt(n);
    mid[m->ne++] = m->nv;
    return m->nv++;
}

static inline mesh icosphere(int levels)
{
    const double t = (1 + sqrt(5)) / 2;
    const double base[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                                {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                                {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
    static const int faces0[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                      {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                      {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                      {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    int nf = 20, cap_v = 12, cap_f = 20;
    for (int l = 0; l < levels; l++)
        cap_v = cap_v + cap_f * 3 / 2, cap_f *= 4;
    mesh m = {.v = malloc((size_t)cap_v * 3 * sizeof(double)),
              .e = malloc((size_t)cap_f * 3 * sizeof(int32_t))};
    int(*faces)[3] = malloc((size_t)cap_f * sizeof *faces);
    int32_t *mid = malloc((size_t)cap_f * 3 * sizeof *mid);
    assert_true(m.v && m.e && faces && mid);
    memcpy(faces, faces0, sizeof faces0);
    for (int i = 0; i < 12; i++) {
        const double n = sqrt(1 + t * t);
        for (int c = 0; c < 3; c++)
            m.v[3 * i + c] = base[i][c] / n;
    }
    m.nv = 12;
    for (int l = 0; l <= levels; l++) {
        /* Each pass collects the current faces' edges; all but the last also split them. */
        m.ne = 0;
        int(*next)[3] = malloc((size_t)cap_f * sizeof *next);
        assert_non_null(next);
        int nn = 0;
        for (int f = 0; f < nf; f++) {
            const int a = faces[f][0], b = faces[f][1], c = faces[f][2];
            if (l == levels) {
                const int pairs[3][2] = {{a, b}, {b, c}, {c, a}};
                for (int k = 0; k < 3; k++) {
                    const int lo = pairs[k][0] < pairs[k][1] ? pairs[k][0] : pairs[k][1];
                    const int hi = pairs[k][0] ^ pairs[k][1] ^ lo;
                    int seen = 0;
                    for (int j = 0; j < m.ne && !seen; j++)
                        seen = m.e[2 * j] == lo && m.e[2 * j + 1] == hi;
                    if (!seen) {
                        m.e[2 * m.ne] = lo;
                        m.e[2 * m.ne + 1] = hi;
                        m.ne++;
                    }
                }
                continue;
            }
            const int ab = edge_vertex(&m, mid, cap_f * 3, a, b),
                      bc = edge_vertex(&m, mid, cap_f * 3, b, c),
                      ca = edge_vertex(&m, mid, cap_f * 3, c, a);
            const int split[4][3] = {{a, ab, ca}, {b, bc, ab}, {c, ca, bc}, {ab, bc, ca}};
            memcpy(next[nn], split, sizeof split);
            nn += 4;
        }
        if (l < levels) {
            memcpy(faces, next, (size_t)nn * sizeof *next);
            nf = nn;
        }
        free(next);
    }
    free(faces);
    free(mid);
    return m;
}

static inline kp_expr_graph *edge_graph(void)
{
    kp_expr_graph *g;
    assert_int_equal(kp_expr_graph_create(&g), KP_OK);
    assert_int_equal(kp_expr_declare(g, 1, "ax ay az bx by bz"), KP_OK);
    assert_int_equal(kp_expr_declare(g, 0, "L"), KP_OK);
    assert_int_equal(kp_expr_parse(g, "norm3(bx - ax, by - ay, bz - az) - L"), KP_OK);
    return g;
}

/* The icosphere's vertices jittered by up to 5%, every edge's target 1.2 times its length: the
 * index (slots: the two vertices' coordinates), targets and starting point. */
static inline void edge_problem(const mesh *m, int32_t *index, double *L, double *x, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (int k = 0; k < m->ne; k++) {
        const int a = m->e[2 * k], b = m->e[2 * k + 1];
        double d = 0;
        for (int c = 0; c < 3; c++) {
            d += (m->v[3 * b + c] - m->v[3 * a + c]) * (m->v[3 * b + c] - m->v[3 * a + c]);
            index[6 * k + c] = 3 * a + c;
            index[6 * k + 3 + c] = 3 * b + c;
        }
        L[k] = 1.2 * sqrt(d);
    }
    for (int i = 0; i < m->nv * 3; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = m->v[i] * (1 + 0.05 * ((double)s / 4294967296.0 * 2 - 1));
    }
}

/* edge_problem's arrays as a kp_lm_sparse_problem of n_x coordinates. */
static inline kp_lm_sparse_problem edge_sparse_problem(const mesh *m, const int32_t *index,
                                                       const double *L, size_t n_x, double *x)
{
    return (kp_lm_sparse_problem){.struct_size = sizeof(kp_lm_sparse_problem),
                                  .n_instances = (size_t)m->ne,
                                  .data = L,
                                  .index = index,
                                  .n_x = n_x,
                                  .x = x};
}

/* The edge problems' LM options: squares or Huber (scale 0.05, about the jitter's edge errors),
 * the function tolerance 1e-12 (1e-6 in f32). */
static inline kp_lm_options edge_lm_options(int f32, int huber)
{
    kp_lm_options lo = kp_lm_options_default();
    lo.function_tolerance = f32 ? 1e-6 : 1e-12;
    lo.loss = huber ? KP_LOSS_HUBER : KP_LOSS_SQUARED;
    lo.loss_scale = 0.05;
    return lo;
}

#endif
