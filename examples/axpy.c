/* SPDX-License-Identifier: Apache-2.0 */
/* Example: y = alpha * x + y with the example.axpy kernel, checked against a plain C loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelport/kernelport.h>

/* A prime: never a multiple of the workgroup size, so the kernel's bounds check is exercised. */
#define N 1000003

/* Prints the failing call's status and the runtime's message (rt may be NULL before the runtime
 * exists); returns non-zero when `st` is KP_OK so calls read `if (!ok(...)) goto done;`. */
static int ok(const kp_runtime *rt, kp_status st, const char *what)
{
    if (st == KP_OK)
        return 1;
    fprintf(stderr, "axpy: %s: %s: %s\n", what, kp_status_name(st), kp_last_error(rt));
    return 0;
}

int main(void)
{
    int rc = 1;
    const size_t bytes = (size_t)N * sizeof(float);
    const float alpha = 0.5f;
    kp_runtime *rt = NULL;
    kp_buffer *xb = NULL, *yb = NULL;
    kp_event *ev = NULL;
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    if (!x || !y || !out) {
        fprintf(stderr, "axpy: out of host memory\n");
        goto done;
    }
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000) * 0.001f - 0.5f;
        y[i] = (float)(i % 7) - 3.0f;
    }

    /* Defaults: the manifest layers, KP_DEVICE / KP_PLUGIN_PATH, the installed plugins. */
    kp_runtime_options opt = kp_runtime_options_default();
    if (!ok(NULL, kp_runtime_create(&opt, &rt), "kp_runtime_create"))
        goto done;
    kp_device_info dev = {.struct_size = sizeof dev};
    const char *why;
    if (!ok(rt, kp_runtime_device(rt, &dev, &why), "kp_runtime_device"))
        goto done;
    printf("device: %s (%s %s, %s)\n        %s\n", dev.name, kp_vendor_name(dev.vendor),
           kp_device_type_name(dev.type), dev.driver, why);

    kp_kernel *k;
    kp_kernel_info info = {.struct_size = sizeof info};
    if (!ok(rt, kp_kernel_find(rt, "example.axpy", &k), "kp_kernel_find") ||
        !ok(rt, kp_kernel_info_get(k, &info), "kp_kernel_info_get"))
        goto done;
    printf("kernel: %s from plugin %s (%s)\n", info.name, info.plugin, info.plugin_path);

    if (!ok(rt, kp_buffer_create(rt, bytes, &xb), "kp_buffer_create x") ||
        !ok(rt, kp_buffer_create(rt, bytes, &yb), "kp_buffer_create y") ||
        !ok(rt, kp_buffer_write(rt, xb, 0, bytes, x), "kp_buffer_write x") ||
        !ok(rt, kp_buffer_write(rt, yb, 0, bytes, y), "kp_buffer_write y"))
        goto done;

    /* Arguments are matched by name, in any order; tensors are views that do not own buffers. */
    kp_arg args[] = {
        KP_ARG_INT("n", N),
        KP_ARG_FLOAT("alpha", alpha),
        KP_ARG_TENSOR("x", kp_tensor_1d(xb, KP_F32, N)),
        KP_ARG_TENSOR("y", kp_tensor_1d(yb, KP_F32, N)),
    };
    if (!ok(rt, kp_kernel_launch(rt, k, args, sizeof args / sizeof args[0], &ev),
            "kp_kernel_launch"))
        goto done;
    double seconds;
    if (!ok(rt, kp_event_elapsed(rt, ev, &seconds), "kp_event_elapsed") ||
        !ok(rt, kp_buffer_read(rt, yb, 0, bytes, out), "kp_buffer_read y"))
        goto done;

    /* The kernel computes fma(alpha, x, y), correctly rounded like fmaf; allow an ulp or so
     * for devices that do not fuse. */
    long bad = 0;
    double worst = 0;
    for (int i = 0; i < N; i++) {
        float ref = fmaf(alpha, x[i], y[i]);
        double err = fabs((double)out[i] - ref);
        worst = err > worst ? err : worst;
        if (err > 1e-6 * (1.0 + fabs(ref)))
            bad++;
    }
    printf("n = %d: %.3f ms on the device, %.2f GB/s, max abs error %g, %ld mismatches\n", N,
           seconds * 1e3, seconds > 0 ? 12.0 * N / seconds / 1e9 : 0.0, worst, bad);
    rc = bad ? 1 : 0;

done:
    /* Every _destroy accepts NULL, so one label covers every way of getting here. */
    kp_event_destroy(rt, ev);
    kp_buffer_destroy(rt, yb);
    kp_buffer_destroy(rt, xb);
    kp_runtime_destroy(rt);
    free(out);
    free(y);
    free(x);
    return rc;
}
