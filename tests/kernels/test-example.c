/* SPDX-License-Identifier: Apache-2.0 */
/* The example plugin's kernels on PoCL and the host device against host math in this file. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test-util.h"

static const char *plugin_dir(void)
{
    return test_build_path(KP_TEST_EXAMPLE_PLUGIN_DIR);
}

/* A runtime on `device` with the example plugin, and `manifest` (may be NULL) layered on top. */
static kp_runtime *open_runtime(const char *device, const char *manifest)
{
    kp_runtime_options o = test_options(plugin_dir(), device, NULL);
    o.manifest_path = manifest;
    kp_runtime *rt = NULL;
    kp_status st = kp_runtime_create(&o, &rt);
    if (st != KP_OK)
        fprintf(stderr, "kp_runtime_create: %s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    return rt;
}

static kp_kernel *find(kp_runtime *rt, const char *name)
{
    kp_kernel *k = NULL;
    assert_int_equal(kp_kernel_find(rt, name, &k), KP_OK);
    assert_non_null(k);
    return k;
}

static kp_buffer *upload(kp_runtime *rt, const float *data, size_t n)
{
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_create(rt, n * sizeof(float), &b), KP_OK);
    assert_int_equal(kp_buffer_write(rt, b, 0, n * sizeof(float), data), KP_OK);
    return b;
}

static void download(kp_runtime *rt, kp_buffer *b, float *out, size_t n)
{
    assert_int_equal(kp_buffer_read(rt, b, 0, n * sizeof(float), out), KP_OK);
}

static void launch_ok(kp_runtime *rt, kp_kernel *k, const kp_arg *args, size_t n)
{
    kp_status st = kp_kernel_launch(rt, k, args, n, NULL);
    if (st != KP_OK)
        fprintf(stderr, "kp_kernel_launch: %s\n", kp_last_error(rt));
    assert_int_equal(st, KP_OK);
}

/* Bitwise comparison: NaN-safe, and the kernels' math is exact (one fma, one multiply). */
static void expect_same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, (double)got[i],
                     (double)want[i]);
        }
}

/* ---- example.axpy --------------------------------------------------------------------- */

typedef struct vec_layout {
    int64_t offset, stride;
} vec_layout;

/* y = alpha * x + y on views x (layout lx) and y (layout ly) of larger buffers; everything
 * outside y's view must keep its value. */
static void check_axpy(kp_runtime *rt, kp_kernel *k, int64_t n, vec_layout lx, vec_layout ly,
                       double alpha, int pass_alpha, unsigned seed)
{
    size_t nx = (size_t)(lx.offset + (n - 1) * lx.stride + 1 + 5);
    size_t ny = (size_t)(ly.offset + (n - 1) * ly.stride + 1 + 7);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    assert_true(x && y && want && got);
    test_fill_nonzero(x, nx, seed);
    test_fill_nonzero(y, ny, seed + 1000);
    memcpy(want, y, ny * sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        float *w = &want[ly.offset + i * ly.stride];
        *w = fmaf((float)alpha, x[lx.offset + i * lx.stride], *w);
    }
    kp_buffer *bx = upload(rt, x, nx), *by = upload(rt, y, ny);
    kp_tensor tx = kp_tensor_1d(bx, KP_F32, n), ty = kp_tensor_1d(by, KP_F32, n);
    tx.offset = lx.offset;
    tx.strides[0] = lx.stride;
    ty.offset = ly.offset;
    ty.strides[0] = ly.stride;
    kp_arg args[4] = {KP_ARG_TENSOR("y", ty), KP_ARG_INT("n", n), KP_ARG_TENSOR("x", tx),
                      KP_ARG_FLOAT("alpha", alpha)};
    launch_ok(rt, k, args, pass_alpha ? 4 : 3);
    download(rt, by, got, ny);
    char what[128];
    snprintf(what, sizeof what, "axpy n=%lld x(off %lld, stride %lld) y(off %lld, stride %lld)",
             (long long)n, (long long)lx.offset, (long long)lx.stride, (long long)ly.offset,
             (long long)ly.stride);
    expect_same(got, want, ny, what);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, by);
    free(x);
    free(y);
    free(want);
    free(got);
}

static const int64_t lengths[] = {1, 2, 63, 65, 1009, 4133};
#define N_LENGTHS (sizeof lengths / sizeof lengths[0])

static void axpy_suite(kp_runtime *rt)
{
    kp_kernel *k = find(rt, "example.axpy");
    const vec_layout dense = {0, 1}, strided_x = {5, 3}, strided_y = {7, 2};
    for (size_t i = 0; i < N_LENGTHS; i++) {
        unsigned seed = (unsigned)i * 17u + 1u;
        check_axpy(rt, k, lengths[i], dense, dense, 0.75, 1, seed);
        check_axpy(rt, k, lengths[i], strided_x, strided_y, -1.3, 1, seed + 1);
        check_axpy(rt, k, lengths[i], strided_x, dense, 2.5, 1, seed + 2);
        check_axpy(rt, k, lengths[i], dense, strided_y, 1.0, 0, seed + 3); /* alpha's default */
    }
}

/* ---- example.scale_rows --------------------------------------------------------------- */

/* A [rows, cols] view: row-major with a row pitch of cols + pad, or (transposed) the transpose
 * of a [cols, rows] row-major matrix with a row pitch of rows + pad; elements start at offset. */
typedef struct mat_layout {
    int transposed;
    int64_t pad, offset;
} mat_layout;

static size_t mat_elements(int64_t rows, int64_t cols, mat_layout l)
{
    int64_t outer = l.transposed ? cols : rows, inner = l.transposed ? rows : cols;
    return (size_t)(l.offset + outer * (inner + l.pad) + 3);
}

static kp_tensor mat_view(kp_buffer *b, int64_t rows, int64_t cols, mat_layout l)
{
    if (!l.transposed) {
        kp_tensor t = kp_tensor_2d(b, KP_F32, rows, cols);
        t.strides[0] = cols + l.pad;
        t.offset = l.offset;
        return t;
    }
    kp_tensor t = kp_tensor_2d(b, KP_F32, cols, rows);
    t.strides[0] = rows + l.pad;
    t.offset = l.offset;
    kp_tensor v = kp_tensor_transpose(t, 0, 1);
    assert_int_equal(v.shape[0], rows);
    assert_int_equal(v.shape[1], cols);
    return v;
}

static int64_t mat_index(const kp_tensor *t, int64_t r, int64_t c)
{
    return t->offset + r * t->strides[0] + c * t->strides[1];
}

static void check_scale_rows(kp_runtime *rt, kp_kernel *k, int64_t rows, int64_t cols,
                             mat_layout lx, mat_layout ly, vec_layout ls, unsigned seed)
{
    size_t nx = mat_elements(rows, cols, lx), ny = mat_elements(rows, cols, ly);
    size_t ns = (size_t)(ls.offset + (rows - 1) * ls.stride + 1 + 2);
    float *x = malloc(nx * sizeof *x), *s = malloc(ns * sizeof *s), *y = malloc(ny * sizeof *y);
    float *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
    assert_true(x && s && y && want && got);
    test_fill_nonzero(x, nx, seed);
    test_fill_nonzero(s, ns, seed + 7);
    test_fill_nonzero(y, ny, seed + 13);
    kp_buffer *bx = upload(rt, x, nx), *bs = upload(rt, s, ns), *by = upload(rt, y, ny);
    kp_tensor tx = mat_view(bx, rows, cols, lx), ty = mat_view(by, rows, cols, ly);
    kp_tensor ts = kp_tensor_1d(bs, KP_F32, rows);
    ts.offset = ls.offset;
    ts.strides[0] = ls.stride;
    memcpy(want, y, ny * sizeof *y);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            want[mat_index(&ty, r, c)] = x[mat_index(&tx, r, c)] * s[ls.offset + r * ls.stride];
    kp_arg args[] = {KP_ARG_TENSOR("x", tx), KP_ARG_TENSOR("scale", ts), KP_ARG_TENSOR("y", ty)};
    launch_ok(rt, k, args, 3);
    download(rt, by, got, ny);
    char what[160];
    snprintf(what, sizeof what,
             "scale_rows %lldx%lld x(t%d pad %lld off %lld) y(t%d pad %lld off %lld)",
             (long long)rows, (long long)cols, lx.transposed, (long long)lx.pad,
             (long long)lx.offset, ly.transposed, (long long)ly.pad, (long long)ly.offset);
    expect_same(got, want, ny, what);
    kp_buffer_destroy(rt, bx);
    kp_buffer_destroy(rt, bs);
    kp_buffer_destroy(rt, by);
    free(x);
    free(s);
    free(y);
    free(want);
    free(got);
}

static void scale_rows_suite(kp_runtime *rt)
{
    kp_kernel *k = find(rt, "example.scale_rows");
    static const int64_t shapes[][2] = {{1, 1}, {31, 67}, {1, 257}, {257, 1}, {63, 65}};
    const mat_layout dense = {0, 0, 0}, padded = {0, 3, 11}, trans = {1, 0, 0},
                     trans_padded = {1, 2, 4};
    const vec_layout s_dense = {0, 1}, s_strided = {3, 2};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t r = shapes[i][0], c = shapes[i][1];
        unsigned seed = (unsigned)i * 31u + 5u;
        check_scale_rows(rt, k, r, c, dense, dense, s_dense, seed);
        check_scale_rows(rt, k, r, c, padded, trans_padded, s_strided, seed + 1);
        check_scale_rows(rt, k, r, c, trans, dense, s_dense, seed + 2);
        check_scale_rows(rt, k, r, c, trans_padded, padded, s_strided, seed + 3);
        check_scale_rows(rt, k, r, c, trans, trans, s_strided, seed + 4);
    }
}

/* ---- runs on each device and workgroup size ------------------------------------------- */

static void expect_wg(kp_runtime *rt, const char *kernel, int64_t wg, const char *origin_part)
{
    kp_tuning_info t = {.struct_size = sizeof t};
    assert_int_equal(kp_kernel_tuning(rt, find(rt, kernel), 0, &t), KP_OK);
    assert_string_equal(t.name, "WG");
    assert_int_equal(t.value, wg);
    assert_non_null(strstr(t.origin, origin_part));
}

static void run_all(const char *device, const char *manifest, int64_t wg, const char *origin)
{
    kp_runtime *rt = open_runtime(device, manifest);
    kp_device_info d = {.struct_size = sizeof d};
    assert_int_equal(kp_runtime_device(rt, &d, NULL), KP_OK);
    if (strcmp(device, "host") == 0) {
        assert_int_equal(d.type, KP_DEVICE_HOST);
    } else {
        if (strcmp(device, "pocl") == 0)
            assert_int_equal(d.vendor, KP_VENDOR_POCL);
        expect_wg(rt, "example.axpy", wg, origin);
        expect_wg(rt, "example.scale_rows", wg, origin);
    }
    axpy_suite(rt);
    scale_rows_suite(rt);
    kp_runtime_destroy(rt);
}

static void test_pocl_default_workgroup(void **state)
{
    run_all(test_device(), NULL, 64, "default");
}

static void test_pocl_workgroup_1_by_vendor(void **state)
{
    const char *m = test_write_tmp("wg-vendor.yaml", "kernelport: 1\n"
                                                     "tuning:\n"
                                                     "  - match: { vendor: pocl }\n"
                                                     "    kernels:\n"
                                                     "      example.axpy: { WG: 1 }\n"
                                                     "      example.scale_rows: { WG: 1 }\n");
    run_all("pocl", m, 1, "match {vendor: pocl}");
}

static void test_pocl_workgroup_256_by_type(void **state)
{
    const char *m = test_write_tmp("wg-type.yaml", "kernelport: 1\n"
                                                   "tuning:\n"
                                                   "  - match: { type: cpu }\n"
                                                   "    kernels:\n"
                                                   "      example.axpy: { WG: 256 }\n"
                                                   "      example.scale_rows: { WG: 256 }\n");
    run_all("pocl", m, 256, "match {type: cpu}");
}

static void test_host_device_same_results(void **state)
{
    run_all("host", NULL, 0, NULL);
}

/* ---- events --------------------------------------------------------------------------- */

static void timed_axpy(const char *device, int expect_positive)
{
    kp_runtime *rt = open_runtime(device, NULL);
    kp_kernel *k = find(rt, "example.axpy");
    const int64_t n = 1 << 20;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    assert_true(x && y);
    test_fill_nonzero(x, (size_t)n, 3);
    test_fill_nonzero(y, (size_t)n, 4);
    kp_buffer *bx = upload(rt, x, (size_t)n), *by = upload(rt, y, (size_t)n);
    kp_arg args[] = {KP_ARG_INT("n", n), KP_ARG_FLOAT("alpha", 0.5),
                     KP_ARG_TENSOR("x", kp_tensor_1d(bx, KP_F32, n)),
                     KP_ARG_TENSOR("y", kp_tensor_1d(by, KP_F32, n))};
    kp_event *ev = NULL;
    assert_int_equal(kp_kernel_launch(rt, k, args, 4, &ev), KP_OK);
    assert_non_null(ev);
    assert_int_equal(kp_event_wait(rt, ev), KP_OK);
    double t = -1;
    assert_int_equal(kp_event_elapsed(rt, ev, &t), KP_OK);
    assert_true(t >= 0);
    if (expect_positive)
        assert_true(t > 0);
    kp_event_destroy(rt, ev);
    /* The launch's result is still right after timing it. */
    float *got = malloc((size_t)n * sizeof *got);
    assert_non_null(got);
    download(rt, by, got, (size_t)n);
    for (int64_t i = 0; i < n; i += 4099)
        assert_memory_equal(&got[i], &(float){fmaf(0.5f, x[i], y[i])}, sizeof(float));
    free(got);
    free(x);
    free(y);
    kp_runtime_destroy(rt);
}

static void test_event_elapsed_positive_on_pocl(void **state)
{
    timed_axpy(test_device(), 1);
}

static void test_event_elapsed_on_host(void **state)
{
    timed_axpy("host", 0);
}

static void test_event_destroy_null_is_noop(void **state)
{
    kp_event_destroy(NULL, NULL);
    kp_runtime *rt = open_runtime("host", NULL);
    kp_event_destroy(rt, NULL);
    kp_event *ev = (kp_event *)0x1;
    /* A failed launch hands back no event. */
    kp_kernel *k = find(rt, "example.axpy");
    assert_int_equal(kp_kernel_launch(rt, k, NULL, 0, &ev), KP_ERR_INVALID_ARG);
    assert_null(ev);
    kp_runtime_destroy(rt);
}

/* ---- verification --------------------------------------------------------------------- */

typedef struct seen {
    int count;
    char sizes[8][16];
} seen;

static void on_report(void *user, const kp_verify_result *r)
{
    seen *s = user;
    assert_string_equal(r->output, "y");
    assert_true(r->passed);
    assert_int_equal(r->failures, 0);
    assert_true(r->elements > 0);
    assert_true(r->max_abs_err <= r->atol + r->rtol * 4.0);
    if (s->count < 8)
        snprintf(s->sizes[s->count], sizeof s->sizes[0], "%s", r->size);
    s->count++;
}

static void verify_kernel(kp_runtime *rt, const char *name)
{
    kp_kernel *k = find(rt, name);
    const char *const *sizes = kp_kernel_sample_sizes(k, 0);
    int n_sizes = 0;
    while (sizes[n_sizes])
        n_sizes++;
    assert_true(n_sizes > 0);
    seen s = {0};
    kp_status st = kp_kernel_verify(rt, k, NULL, 42, on_report, &s);
    if (st != KP_OK)
        fprintf(stderr, "kp_kernel_verify: %s\n", kp_last_error(rt));
    assert_int_equal(st, KP_OK);
    /* One output (y) per sample size, each reported. */
    assert_int_equal(s.count, n_sizes);
    for (int i = 0; i < n_sizes; i++)
        assert_string_equal(s.sizes[i], sizes[i]);
}

static void test_verify_passes_on_pocl(void **state)
{
    kp_runtime *rt = open_runtime(test_device(), NULL);
    verify_kernel(rt, "example.axpy");
    verify_kernel(rt, "example.scale_rows");
    kp_runtime_destroy(rt);
}

/* A size the examples do not have is refused by their samples (#28: "huge" ran axpy on 16M
 * elements, read as its first letter). */
static void test_unknown_size_is_not_found(void **state)
{
    kp_runtime *rt = open_runtime("host", NULL);
    const char *const names[] = {"example.axpy", "example.scale_rows"};
    for (int i = 0; i < 2; i++) {
        seen s = {0};
        assert_int_equal(kp_kernel_verify(rt, find(rt, names[i]), "huge", 1, on_report, &s),
                         KP_ERR_NOT_FOUND);
        assert_int_equal(s.count, 0);
    }
    kp_runtime_destroy(rt);
}

/* kp_kernel_sample_bytes: the sample's tensors, x [rows, cols], scale [rows] and y [rows, cols]
 * in f32, built without a launch; `verify --smallest` picks the size by it. */
static void test_sample_bytes(void **state)
{
    kp_runtime *rt = open_runtime("host", NULL);
    kp_kernel *k;
    assert_int_equal(kp_kernel_find(rt, "example.scale_rows", &k), KP_OK);
    const struct {
        const char *size;
        uint64_t bytes;
    } want[] = {
        {"one", 12}, {"prime", 4 * (2 * 31 * 67 + 31)}, {"small", 4 * (2 * 100 * 129 + 100)}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint64_t bytes = 0;
        assert_int_equal(kp_kernel_sample_bytes(rt, k, want[i].size, &bytes), KP_OK);
        assert_int_equal(bytes, want[i].bytes);
    }
    uint64_t bytes;
    assert_int_equal(kp_kernel_sample_bytes(rt, k, NULL, &bytes), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_kernel_sample_bytes(rt, k, "one", NULL), KP_ERR_INVALID_ARG);
    kp_runtime_destroy(rt);
}

static void test_verify_passes_on_host(void **state)
{
    kp_runtime *rt = open_runtime("host", NULL);
    verify_kernel(rt, "example.axpy");
    verify_kernel(rt, "example.scale_rows");
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pocl_default_workgroup),
        cmocka_unit_test(test_pocl_workgroup_1_by_vendor),
        cmocka_unit_test(test_pocl_workgroup_256_by_type),
        cmocka_unit_test(test_host_device_same_results),
        cmocka_unit_test(test_event_elapsed_positive_on_pocl),
        cmocka_unit_test(test_event_elapsed_on_host),
        cmocka_unit_test(test_event_destroy_null_is_noop),
        cmocka_unit_test(test_verify_passes_on_pocl),
        cmocka_unit_test(test_unknown_size_is_not_found),
        cmocka_unit_test(test_verify_passes_on_host),
        cmocka_unit_test(test_sample_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
