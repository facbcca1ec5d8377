/* SPDX-License-Identifier: Apache-2.0 */
/* mesh-solve's problem (mesh-problem.h). */
#include "mesh-problem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mesh_problem_make(int level, double smooth, double jitter, mesh_problem *p)
{
    memset(p, 0, sizeof *p);
    if (icosphere_make(level, &p->m) != 0)
        return -1;
    const icosphere *m = &p->m;
    p->n = (size_t)m->n_edges;
    p->P = (size_t)m->n_vertices * 3;
    p->x0 = malloc(p->P * sizeof *p->x0);
    p->data = malloc(p->n * 2 * sizeof *p->data);
    p->index = malloc(p->n * 6 * sizeof *p->index);
    if (!p->x0 || !p->data || !p->index) {
        mesh_problem_free(p);
        return -1;
    }
    /* Vertices start jittered along their radius by up to `jitter` mean edge lengths, from a
     * fixed linear congruential sequence (the same start on every machine). The jitter scales
     * with the edges: a fixed fraction of the radius (5% until #27's fix) is 2.5 edge lengths at
     * level 6 and 5 at level 7, a crumpled start where the Gauss-Newton model holds only for
     * steps below about h^2 / R (h the edge length), so LM crawled with growing damping at every
     * level above 5 (level 6: cost 44 -> 2e-3 in 30 evaluations). */
    double mean_edge = 0;
    for (size_t k = 0; k < p->n; k++) {
        const double *a = m->v + 3 * (size_t)m->e[2 * k], *b = m->v + 3 * (size_t)m->e[2 * k + 1];
        mean_edge += sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                          (b[2] - a[2]) * (b[2] - a[2])) /
                     (double)p->n;
    }
    unsigned s = 12345;
    for (size_t i = 0; i < p->P / 3; i++) {
        s = s * 1103515245u + 12345u;
        const double f = 1 + jitter * mean_edge * ((double)(s >> 8) / 16777216.0 * 2 - 1);
        for (int c = 0; c < 3; c++)
            p->x0[3 * i + c] = m->v[3 * i + c] * f;
    }
    for (size_t k = 0; k < p->n; k++) {
        const double *a = m->v + 3 * (size_t)m->e[2 * k], *b = m->v + 3 * (size_t)m->e[2 * k + 1];
        p->data[2 * k] = 1.2 * sqrt((b[0] - a[0]) * (b[0] - a[0]) + (b[1] - a[1]) * (b[1] - a[1]) +
                                    (b[2] - a[2]) * (b[2] - a[2]));
        p->data[2 * k + 1] = smooth;
        for (int c = 0; c < 3; c++) {
            p->index[6 * k + c] = 3 * m->e[2 * k] + c;
            p->index[6 * k + 3 + c] = 3 * m->e[2 * k + 1] + c;
        }
    }
    return 0;
}

void mesh_problem_free(mesh_problem *p)
{
    icosphere_free(&p->m);
    free(p->x0);
    free(p->data);
    free(p->index);
    memset(p, 0, sizeof *p);
}
