/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned text tables: cells are collected first so each column is as wide as its widest cell. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct cli_table {
    int ncols;
    unsigned char *right; /* per column: right-aligned */
    char **cells;         /* row-major */
    size_t n_cells;
    size_t cap;
};

cli_table *cli_table_create(int ncols)
{
    cli_table *t = cli_realloc(NULL, sizeof *t);
    t->ncols = ncols > 0 ? ncols : 1;
    t->right = cli_realloc(NULL, (size_t)t->ncols);
    memset(t->right, 0, (size_t)t->ncols);
    t->cells = NULL;
    t->n_cells = 0;
    t->cap = 0;
    return t;
}

void cli_table_destroy(cli_table *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n_cells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->right);
    free(t);
}

void cli_table_align_right(cli_table *t, int col)
{
    if (col >= 0 && col < t->ncols)
        t->right[col] = 1;
}

void cli_table_percent(cli_table *t, double fraction, int bandwidth)
{
    if (fraction < 0)
        cli_table_cell(t, "-");
    else if (fraction > 1)
        cli_table_cell(t, "%.1f %s", fraction * 100, bandwidth ? "(cache)" : "(above peak)");
    else
        cli_table_cell(t, "%.1f", fraction * 100);
}

void cli_table_cell(cli_table *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        cli_out_of_memory();
    if (t->n_cells == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->cells = cli_realloc(t->cells, t->cap * sizeof *t->cells);
    }
    t->cells[t->n_cells++] = text;
}

/* Bytes of the cell's first line. */
static size_t line_bytes(const char *s)
{
    return strcspn(s, "\n");
}

/* Terminal columns of the first `bytes` bytes of UTF-8 text: one per code point. */
static size_t display_width(const char *s, size_t bytes)
{
    size_t w = 0;
    for (size_t i = 0; i < bytes; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            w++;
    return w;
}

static void spaces(FILE *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fputc(' ', out);
}

static const char *cell_at(const cli_table *t, size_t row, int col)
{
    size_t i = row * (size_t)t->ncols + (size_t)col;
    return i < t->n_cells ? t->cells[i] : "";
}

void cli_table_print(const cli_table *t, FILE *out, int indent)
{
    size_t rows = (t->n_cells + (size_t)t->ncols - 1) / (size_t)t->ncols;
    size_t *width = calloc((size_t)t->ncols, sizeof *width);
    if (width == NULL)
        cli_out_of_memory();
    for (size_t r = 0; r < rows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = cell_at(t, r, c);
            size_t w = display_width(s, line_bytes(s));
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t r = 0; r < rows; r++) {
        /* Stop after the last non-empty cell so lines carry no trailing blanks. */
        int last = -1;
        for (int c = 0; c < t->ncols; c++)
            if (cell_at(t, r, c)[0] != '\0')
                last = c;
        spaces(out, indent > 0 ? (size_t)indent : 0);
        size_t column = (size_t)(indent > 0 ? indent : 0);
        for (int c = 0; c <= last; c++) {
            const char *s = cell_at(t, r, c);
            size_t bytes = line_bytes(s);
            size_t pad = width[c] - display_width(s, bytes);
            if (c > 0) {
                spaces(out, 2);
                column += 2;
            }
            if (t->right[c])
                spaces(out, pad);
            fwrite(s, 1, bytes, out);
            if (!t->right[c] && c < last)
                spaces(out, pad);
            if (c == t->ncols - 1) {
                /* The last column keeps its further lines, aligned under its first. */
                for (const char *p = s + bytes; *p == '\n' && p[1] != '\0';
                     p += 1 + line_bytes(p + 1)) {
                    fputc('\n', out);
                    if (p[1] != '\n')
                        spaces(out, column);
                    fwrite(p + 1, 1, line_bytes(p + 1), out);
                }
            }
            column += width[c];
        }
        fputc('\n', out);
    }
    free(width);
}
