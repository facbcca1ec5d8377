/* SPDX-License-Identifier: Apache-2.0 */
/* The subdivided icosahedron (icosphere.h): each level splits every triangle in four at its
 * edges' midpoints, found once per edge through a hash table. */
#include "icosphere.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Edge (lo, hi) -> the vertex at its midpoint, open addressing; keys 0 are empty. */
typedef struct midpoints {
    uint64_t *key;
    int32_t *value;
    uint64_t mask;
} midpoints;

static uint64_t hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
}

static int32_t midpoint(midpoints *t, icosphere *m, int32_t a, int32_t b)
{
    const int32_t lo = a < b ? a : b, hi = a < b ? b : a;
    const uint64_t k = ((uint64_t)(uint32_t)lo << 32 | (uint32_t)hi) + 1;
    uint64_t i = hash(k) & t->mask;
    for (; t->key[i]; i = (i + 1) & t->mask)
        if (t->key[i] == k)
            return t->value[i];
    const int32_t v = (int32_t)m->n_vertices++;
    double *p = m->v + 3 * (int64_t)v, n = 0;
    for (int c = 0; c < 3; c++) {
        p[c] = 0.5 * (m->v[3 * (int64_t)lo + c] + m->v[3 * (int64_t)hi + c]);
        n += p[c] * p[c];
    }
    for (int c = 0; c < 3; c++)
        p[c] /= sqrt(n);
    t->key[i] = k;
    t->value[i] = v;
    return v;
}

int icosphere_make(int level, icosphere *m)
{
    memset(m, 0, sizeof *m);
    if (level < 0 || level > 11)
        return -1;
    const double g = (1 + sqrt(5)) / 2, s = sqrt(1 + g * g);
    const double base[12][3] = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0},
                                {0, -1, g}, {0, 1, g}, {0, -1, -g}, {0, 1, -g},
                                {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
    static const int32_t faces0[20][3] = {
        {0, 11, 5},  {0, 5, 1},  {0, 1, 7},  {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
        {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
        {3, 8, 9},   {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
    const int64_t n_faces = 20 * ((int64_t)1 << (2 * level)),
                  n_edges = 30 * ((int64_t)1 << (2 * level));
    m->v = malloc((size_t)(n_edges / 3 + 2 + 1) * 3 * sizeof *m->v);
    m->e = malloc((size_t)n_edges * 2 * sizeof *m->e);
    int32_t(*faces)[3] = malloc((size_t)n_faces * sizeof *faces);
    int32_t(*next)[3] = malloc((size_t)n_faces * sizeof *next);
    midpoints t = {0};
    uint64_t cap = 1;
    while (cap < (uint64_t)n_edges * 2)
        cap <<= 1;
    t.key = calloc(cap, sizeof *t.key);
    t.value = malloc(cap * sizeof *t.value);
    t.mask = cap - 1;
    int ok = m->v && m->e && faces && next && t.key && t.value;
    if (ok) {
        for (int i = 0; i < 12; i++)
            for (int c = 0; c < 3; c++)
                m->v[3 * i + c] = base[i][c] / s;
        m->n_vertices = 12;
        memcpy(faces, faces0, sizeof faces0);
    }
    int64_t nf = 20;
    for (int l = 0; ok && l < level; l++) {
        /* Midpoints of this level's edges only: the table starts empty each level. */
        memset(t.key, 0, cap * sizeof *t.key);
        for (int64_t f = 0; f < nf; f++) {
            const int32_t a = faces[f][0], b = faces[f][1], c = faces[f][2];
            const int32_t ab = midpoint(&t, m, a, b), bc = midpoint(&t, m, b, c),
                          ca = midpoint(&t, m, c, a);
            const int32_t split[4][3] = {{a, ab, ca}, {b, bc, ab}, {c, ca, bc}, {ab, bc, ca}};
            memcpy(next[4 * f], split, sizeof split);
        }
        nf *= 4;
        int32_t(*swap)[3] = faces;
        faces = next;
        next = swap;
    }
    /* The edges: each face's three, kept the first time (the table again, as a set). */
    if (ok) {
        memset(t.key, 0, cap * sizeof *t.key);
        for (int64_t f = 0; f < nf; f++)
            for (int k = 0; k < 3; k++) {
                const int32_t a = faces[f][k], b = faces[f][(k + 1) % 3];
                const int32_t lo = a < b ? a : b, hi = a < b ? b : a;
                const uint64_t key = ((uint64_t)(uint32_t)lo << 32 | (uint32_t)hi) + 1;
                uint64_t i = hash(key) & t.mask;
                while (t.key[i] && t.key[i] != key)
                    i = (i + 1) & t.mask;
                if (!t.key[i]) {
                    t.key[i] = key;
                    m->e[2 * m->n_edges] = lo;
                    m->e[2 * m->n_edges + 1] = hi;
                    m->n_edges++;
                }
            }
    }
    free(faces);
    free(next);
    free(t.key);
    free(t.value);
    if (!ok) {
        icosphere_free(m);
        return -1;
    }
    return 0;
}

void icosphere_free(icosphere *m)
{
    free(m->v);
    free(m->e);
    memset(m, 0, sizeof *m);
}
