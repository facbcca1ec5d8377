/* SPDX-License-Identifier: Apache-2.0 */
/* mesh-solve's problem on an icosphere, shared with bench-solve and its Ceres peer so that all
 * three solve the same one: per edge, its length against a target 1.2 times its length on the
 * unit sphere, and a smoothness term (its two vertices at similar radii) weighted by w; the
 * vertices start jittered along their radius by up to a given number of mean edge lengths. */
#ifndef MESH_PROBLEM_H
#define MESH_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "icosphere.h"

/* The residuals in the solve layer's text form: parameters ax ay az bx by bz, data L w. */
#define MESH_RESIDUAL                                                                              \
    "d = norm3(bx - ax, by - ay, bz - az)\n"                                                       \
    "d - L\n"                                                                                      \
    "w * (norm3(bx, by, bz) - norm3(ax, ay, az))\n"

typedef struct mesh_problem {
    icosphere m;
    size_t n;       /* instances: one per edge, two residuals each */
    size_t P;       /* parameters: 3 per vertex */
    double *x0;     /* [P] the start */
    double *data;   /* [n, 2] L, w */
    int32_t *index; /* [n, 6] the coordinates of the edge's two vertices in x */
} mesh_problem;

/* The problem at `level`, smoothness weight `smooth`, vertices started up to `jitter` mean edge
 * lengths off the sphere along their radius (mesh-solve's default 0.66). 0 on success; -1 when
 * memory runs out or level is outside 0..11. Free with mesh_problem_free. */
int mesh_problem_make(int level, double smooth, double jitter, mesh_problem *p);
void mesh_problem_free(mesh_problem *p);

#endif
