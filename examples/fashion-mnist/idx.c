/* SPDX-License-Identifier: Apache-2.0 */
/* IDX reading through zlib's gz* calls, which read plain files unchanged. */
#include "idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* The format's big-endian u32 header words. */
static int read_u32(gzFile f, uint32_t *out)
{
    unsigned char b[4];
    if (gzread(f, b, 4) != 4)
        return 0;
    *out = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 1;
}

/* Reads one IDX file of u8 values with `dims` dimensions (magic 0x0800 | dims), at most 2^31
 * elements. */
static int read_idx(const char *path, uint32_t dims, uint8_t **data, uint32_t *shape, char *err,
                    size_t err_size)
{
    gzFile f = gzopen(path, "rb");
    if (!f) {
        snprintf(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        return 1;
    }
    uint32_t magic = 0;
    int ok = read_u32(f, &magic);
    if (ok && magic != (0x0800u | dims)) {
        snprintf(err, err_size, "%s: magic 0x%08x, expected 0x%08x (u8 data, %u dimensions)", path,
                 magic, 0x0800u | dims, dims);
        gzclose(f);
        return 1;
    }
    uint64_t n = 1;
    for (uint32_t d = 0; ok && d < dims; d++) {
        ok = read_u32(f, &shape[d]);
        n *= shape[d];
    }
    if (!ok || n == 0 || n > ((uint64_t)1 << 31)) {
        snprintf(err, err_size, "%s: %s", path,
                 ok ? "an empty or oversized shape" : "the header ends early");
        gzclose(f);
        return 1;
    }
    *data = malloc((size_t)n);
    if (!*data || gzread(f, *data, (unsigned)n) != (int)n) {
        snprintf(err, err_size, "%s: %s", path,
                 *data ? "the data ends before the header's shape" : "out of memory");
        free(*data);
        *data = NULL;
        gzclose(f);
        return 1;
    }
    gzclose(f);
    return 0;
}

int idx_load(const char *dir, const char *images, const char *labels, idx_set *out, char *err,
             size_t err_size)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    uint32_t ishape[3], lshape[1];
    snprintf(path, sizeof path, "%s/%s", dir, images);
    if (read_idx(path, 3, &out->images, ishape, err, err_size))
        return 1;
    snprintf(path, sizeof path, "%s/%s", dir, labels);
    if (read_idx(path, 1, &out->labels, lshape, err, err_size)) {
        idx_free(out);
        return 1;
    }
    if (lshape[0] != ishape[0]) {
        snprintf(err, err_size, "%s: %u labels for %u images in %s", path, lshape[0], ishape[0],
                 images);
        idx_free(out);
        return 1;
    }
    out->n = ishape[0];
    out->rows = ishape[1];
    out->cols = ishape[2];
    return 0;
}

void idx_free(idx_set *s)
{
    free(s->images);
    free(s->labels);
    memset(s, 0, sizeof *s);
}
