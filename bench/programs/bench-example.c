/* SPDX-License-Identifier: Apache-2.0 */
/* bench-example: example.axpy against OpenBLAS cblas_saxpy in the same process. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#ifdef KP_HAVE_OPENBLAS
#include <cblas.h>

typedef struct saxpy_call {
    int n;
    const float *x;
    float *y;
} saxpy_call;

static void run_saxpy(void *user)
{
    saxpy_call *c = user;
    cblas_saxpy(c->n, 0.5f, c->x, 1, c->y, 1);
}
#endif

int main(int argc, char **argv)
{
    kpb b;
    kpb_open(&b, "bench-example", argc, argv);
    kp_kernel *axpy;
    if (kp_kernel_find(b.rt, "example.axpy", &axpy) != KP_OK) {
        fprintf(stderr, "bench-example: %s\n", kp_last_error(b.rt));
        return 1;
    }
    const int sizes[] = {1 << 16, 1 << 20, 1 << 24};
    for (size_t s = 0; s < (b.quick ? 2u : 3u); s++) {
        int n = sizes[s];
        float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
        kp_buffer *bx = NULL, *by = NULL;
        if (!x || !y || kp_buffer_create(b.rt, (size_t)n * 4, &bx) != KP_OK ||
            kp_buffer_create(b.rt, (size_t)n * 4, &by) != KP_OK) {
            fprintf(stderr, "bench-example: out of memory at n=%d\n", n);
            return 1;
        }
        kpb_fill(x, (size_t)n, 1);
        kpb_fill(y, (size_t)n, 2);
        kp_buffer_write(b.rt, bx, 0, (size_t)n * 4, x);
        kp_buffer_write(b.rt, by, 0, (size_t)n * 4, y);
        kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 0.5),
                         KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                         KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
        char name[64];
        snprintf(name, sizeof name, "n=%d", n);
        kpb_row row = {
            .case_name = name, .ours = "example.axpy", .flops = 2.0 * n, .bytes = 12.0 * n};
        kp_status st =
            kpb_time_kernel(&b, axpy, args, 4, &row.ours_s, &row.ours_p10, &row.ours_p90);
        if (st != KP_OK) {
            fprintf(stderr, "bench-example: %s\n", kp_last_error(b.rt));
            return 1;
        }
#ifdef KP_HAVE_OPENBLAS
        saxpy_call c = {n, x, y};
        row.peer = "cblas_saxpy (OpenBLAS)";
        row.peer_s = kpb_time_host(&b, run_saxpy, &c);
#endif
        kpb_add(&b, &row);
        kp_buffer_destroy(b.rt, bx);
        kp_buffer_destroy(b.rt, by);
        free(x);
        free(y);
    }
    return kpb_close(&b);
}
