/* SPDX-License-Identifier: Apache-2.0 */
/* Grids of cells as one grayscale PNG (live cells black), panels side by side. */
#ifndef GRID_PNG_H
#define GRID_PNG_H

#include <stdint.h>
#include <stdio.h>

/* A height x width grid of values in [0, 1], row-major. */
typedef struct grid_panel {
    const float *cells;
    int height, width;
} grid_panel;

/* Writes the panels scaled by whole pixels to about height_px rows, 4 gray pixels apart.
 * Returns 1, or 0 when the file cannot be written or memory runs out. */
int grid_png_write(const char *path, const grid_panel *panels, int n_panels, int height_px);

#endif
