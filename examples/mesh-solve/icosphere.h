/* SPDX-License-Identifier: Apache-2.0 */
/* An icosahedron subdivided `level` times, its vertices on the unit sphere: 10 4^level + 2
 * vertices, 30 4^level edges. */
#ifndef MESH_ICOSPHERE_H
#define MESH_ICOSPHERE_H

#include <stdint.h>

typedef struct icosphere {
    int64_t n_vertices, n_edges;
    double *v;  /* [n_vertices, 3] */
    int32_t *e; /* [n_edges, 2], lower vertex first */
} icosphere;

/* 0 on success; -1 when memory runs out or level is outside 0..11 (11: 1.3e8 edges, the
 * largest edge-term row of bench-solve). Free with icosphere_free. */
int icosphere_make(int level, icosphere *out);
void icosphere_free(icosphere *m);

#endif
