/* SPDX-License-Identifier: Apache-2.0 */
/* A grayscale PNG of grids of cells, side by side, without a compression library (grid-png.h). */
#include "grid-png.h"

#include <stdlib.h>
#include <string.h>

static uint32_t crc32_of(const uint8_t *p, size_t n, uint32_t crc)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = crc >> 1 ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int chunk(FILE *f, const char *type, const uint8_t *data, size_t n)
{
    uint8_t head[8], tail[4];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    be32(tail, crc32_of(data, n, crc32_of(head + 4, 4, 0)));
    return fwrite(head, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) &&
           fwrite(tail, 1, 4, f) == 4;
}

/* The image as a zlib stream of stored (uncompressed) deflate blocks: grids are small. */
static int write_png(FILE *f, const uint8_t *rows, uint32_t w, uint32_t h)
{
    const size_t raw = (size_t)(w + 1) * h, blocks = raw / 65535 + 1;
    uint8_t *z = malloc(2 + raw + 5 * blocks + 4);
    if (!z)
        return 0;
    size_t n = 0;
    z[n++] = 0x78, z[n++] = 0x01;
    uint32_t s1 = 1, s2 = 0;
    size_t at = 0;
    do {
        const size_t len = raw - at < 65535 ? raw - at : 65535;
        z[n++] = (uint8_t)(at + len == raw);
        z[n++] = (uint8_t)len, z[n++] = (uint8_t)(len >> 8);
        z[n++] = (uint8_t)~len, z[n++] = (uint8_t)(~len >> 8);
        for (size_t i = 0; i < len; i++, at++) {
            z[n++] = rows[at];
            s1 = (s1 + rows[at]) % 65521, s2 = (s2 + s1) % 65521;
        }
    } while (at < raw);
    be32(z + n, s2 << 16 | s1);
    n += 4;
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13] = {0};
    be32(ihdr, w);
    be32(ihdr + 4, h);
    ihdr[8] = 8; /* 8-bit grayscale */
    int ok = fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) && chunk(f, "IDAT", z, n) &&
             chunk(f, "IEND", NULL, 0);
    free(z);
    return ok;
}

int grid_png_write(const char *path, const grid_panel *panels, int n_panels, int height_px)
{
    uint32_t w = 0, h = (uint32_t)height_px;
    for (int i = 0; i < n_panels; i++) {
        const int scale = height_px / panels[i].height > 0 ? height_px / panels[i].height : 1;
        w += (uint32_t)(panels[i].width * scale) + (i ? 4u : 0u);
        if ((uint32_t)(panels[i].height * scale) > h)
            h = (uint32_t)(panels[i].height * scale);
    }
    uint8_t *rows = malloc((size_t)(w + 1) * h);
    if (!rows)
        return 0;
    memset(rows, 128, (size_t)(w + 1) * h); /* gray between and below panels */
    for (uint32_t y = 0; y < h; y++)
        rows[(size_t)y * (w + 1)] = 0; /* filter: none */
    uint32_t x0 = 0;
    for (int i = 0; i < n_panels; i++) {
        const grid_panel *p = &panels[i];
        const int scale = height_px / p->height > 0 ? height_px / p->height : 1;
        for (uint32_t y = 0; y < (uint32_t)(p->height * scale); y++)
            for (uint32_t x = 0; x < (uint32_t)(p->width * scale); x++) {
                const float v = p->cells[(size_t)(y / scale) * p->width + x / scale];
                const float c = v < 0 ? 0 : v > 1 ? 1 : v;
                rows[(size_t)y * (w + 1) + 1 + x0 + x] = (uint8_t)(255.0f * (1 - c) + 0.5f);
            }
        x0 += (uint32_t)(p->width * scale) + 4;
    }
    FILE *f = fopen(path, "wb");
    int ok = f && write_png(f, rows, w, h);
    if (f && fclose(f) != 0)
        ok = 0;
    free(rows);
    return ok;
}
