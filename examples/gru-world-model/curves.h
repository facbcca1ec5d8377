/* SPDX-License-Identifier: Apache-2.0 */
/* Synthetic training-loss curves for the GRU world model (README.md, "The curves"). */
#ifndef WM_CURVES_H
#define WM_CURVES_H

#include <stdint.h>

/* The curve families; a curve's plateau and spikes are drawn on top of its family. */
enum { CURVE_EXP = 0, CURVE_POWER = 1, CURVE_FAMILIES = 2 };

/*
 * Fills v [n, length] (row-major) with the natural log of n synthetic loss curves, curve i drawn
 * from the Philox stream of (seed, i) alone, so a curve does not depend on n or on the others.
 * family[i] (may be NULL) receives its CURVE_* family.
 */
void curves_generate(uint64_t seed, int64_t n, int length, float *v, unsigned char *family);

#endif
