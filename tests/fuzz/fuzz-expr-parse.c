/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the residual text form (kp_expr_parse) on arbitrary bytes. It either parses
 * (and the graph then evaluates, with derivatives, without trouble) or refuses the text with a
 * message that begins "LINE:COL: error: "; it never crashes or leaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelport/solve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    kp_expr_graph *g = NULL;
    if (kp_expr_graph_create(&g) != KP_OK || kp_expr_declare(g, 1, "b1 b2 b3") != KP_OK ||
        kp_expr_declare(g, 0, "x y") != KP_OK)
        abort();
    kp_status st = kp_expr_parse(g, text);
    if (st == KP_OK) {
        double d[2] = {0.7, 1.3}, p[3] = {1.1, -0.4, 2.5}, r[KP_EXPR_MAX_OUTPUTS],
               J[KP_EXPR_MAX_OUTPUTS * 3];
        if (kp_expr_graph_eval(g, d, p, r, J) != KP_OK)
            abort();
    } else {
        int line, col;
        if (st != KP_ERR_INVALID_ARG ||
            sscanf(kp_expr_graph_error(g), "%d:%d: error: ", &line, &col) != 2)
            abort();
    }
    kp_expr_graph_destroy(g);
    free(text);
    return 0;
}
