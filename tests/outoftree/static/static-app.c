/* SPDX-License-Identifier: Apache-2.0 */
/* A program linked with libkernelport.a: example.axpy on the host device (its C reference, so
 * nothing is compiled), found among the installed plugins or compiled into the archive. Prints
 * where the kernel came from; exits 1 on any failure. */
#include <stdio.h>

#include <kernelport/kernelport.h>

static int fail(kp_runtime *rt, const char *what, kp_status st)
{
    fprintf(stderr, "static-app: %s: %s: %s\n", what, kp_status_name(st), kp_last_error(rt));
    return 1;
}

int main(void)
{
    kp_runtime_options o = kp_runtime_options_default();
    o.device = "host";
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        return fail(NULL, "kp_runtime_create", st);
    kp_kernel *k = NULL;
    kp_kernel_info info = {.struct_size = sizeof info};
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {1, 1, 1, 1, 1};
    kp_buffer *bx = NULL, *by = NULL;
    if ((st = kp_kernel_find(rt, "example.axpy", &k)) != KP_OK ||
        (st = kp_kernel_info_get(k, &info)) != KP_OK ||
        (st = kp_buffer_create(rt, sizeof x, &bx)) != KP_OK ||
        (st = kp_buffer_create(rt, sizeof y, &by)) != KP_OK ||
        (st = kp_buffer_write(rt, bx, 0, sizeof x, x)) != KP_OK ||
        (st = kp_buffer_write(rt, by, 0, sizeof y, y)) != KP_OK)
        return fail(rt, "setting up example.axpy", st);
    const kp_arg args[] = {kp_arg_int("n", 5), kp_arg_float("alpha", 2.0),
                           kp_arg_tensor("x", kp_tensor_1d(bx, KP_F32, 5)),
                           kp_arg_tensor("y", kp_tensor_1d(by, KP_F32, 5))};
    if ((st = kp_kernel_launch(rt, k, args, 4, NULL)) != KP_OK ||
        (st = kp_buffer_read(rt, by, 0, sizeof y, y)) != KP_OK)
        return fail(rt, "example.axpy", st);
    for (int i = 0; i < 5; i++)
        if (y[i] != 2.0f * x[i] + 1.0f) {
            fprintf(stderr, "static-app: y[%d] is %g, expected %g\n", i, y[i], 2.0 * x[i] + 1);
            return 1;
        }
    printf("static-app: kernelport %s, example.axpy from %s: y = 2 x + 1\n", kp_version(),
           info.plugin_path);
    kp_runtime_destroy(rt);
    return 0;
}
