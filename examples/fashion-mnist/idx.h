/* SPDX-License-Identifier: Apache-2.0 */
/* The IDX files of MNIST and Fashion-MNIST (gzip-compressed or not): images as u8 [n, rows,
 * cols], labels as u8 [n]. */
#ifndef IDX_H
#define IDX_H

#include <stddef.h>
#include <stdint.h>

typedef struct idx_set {
    uint8_t *images; /* n * rows * cols bytes, row-major */
    uint8_t *labels; /* n */
    size_t n, rows, cols;
} idx_set;

/* Reads `dir`/`images` and `dir`/`labels` (e.g. "train-images-idx3-ubyte.gz"). On failure returns
 * nonzero with a message naming the file and what was wrong in err. */
int idx_load(const char *dir, const char *images, const char *labels, idx_set *out, char *err,
             size_t err_size);
void idx_free(idx_set *s);

#endif
