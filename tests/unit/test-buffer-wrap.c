/* SPDX-License-Identifier: Apache-2.0 */
/* kp_buffer_wrap: a cl_mem the application made (clCreateBuffer in the runtime's context) used as
 * a buffer, its reference counted, and the handles it must refuse; kp_buffer_wrap_external's
 * hand-back function. */
#include <CL/cl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "test-util.h"

enum { N = 37 };

static cl_uint refs(cl_mem m)
{
    cl_uint n = 0;
    assert_int_equal(clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, NULL), CL_SUCCESS);
    return n;
}

static void test_wrap(void **state)
{
    (void)state;
    kp_runtime_options o = test_options(NULL, test_device(), NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    cl_context ctx = NULL;
    cl_command_queue q = NULL;
    assert_int_equal(kp_runtime_opencl(rt, (void **)&ctx, (void **)&q, NULL), KP_OK);
    cl_int err = CL_SUCCESS;
    /* One float more than the buffer wraps: a prefix is allowed. */
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (N + 1) * sizeof(float), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    float x[N + 1], got[N];
    test_fill(x, N + 1, 7);
    assert_int_equal(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL),
                     CL_SUCCESS);

    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_wrap(rt, m, N * sizeof(float), &b), KP_OK);
    assert_ptr_equal(kp_buffer_cl_mem(b), m);
    assert_int_equal(kp_buffer_size(b), N * sizeof(float));
    assert_int_equal(refs(m), 2);
    /* The application's data is the buffer's, and the buffer's writes are the application's. */
    assert_int_equal(kp_buffer_read(rt, b, 0, sizeof got, got), KP_OK);
    assert_memory_equal(got, x, sizeof got);
    const float two = 2.0f;
    assert_int_equal(kp_buffer_fill(rt, b, 0, sizeof got, &two, sizeof two), KP_OK);
    assert_int_equal(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof x, x, 0, NULL, NULL), CL_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(x[i] == 2.0f);
    /* Past the wrapped size is outside the buffer, though inside the cl_mem. */
    assert_int_equal(kp_buffer_read(rt, b, sizeof got, sizeof(float), got), KP_ERR_INVALID_ARG);
    kp_buffer_destroy(rt, b);
    assert_int_equal(refs(m), 1);

    /* Refused: NULL, 0 bytes, more bytes than the cl_mem has, a cl_mem of another context. */
    assert_int_equal(kp_buffer_wrap(rt, NULL, 4, &b), KP_ERR_INVALID_ARG);
    assert_null(b);
    assert_int_equal(kp_buffer_wrap(rt, m, 0, &b), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_buffer_wrap(rt, m, (N + 2) * sizeof(float), &b), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "bytes asked of a cl_mem of"));
    assert_int_equal(kp_buffer_wrap(NULL, m, 4, &b), KP_ERR_INVALID_ARG);
    assert_int_equal(kp_buffer_wrap(rt, m, 4, NULL), KP_ERR_INVALID_ARG);
    cl_device_id dev = NULL;
    assert_int_equal(kp_runtime_opencl(rt, NULL, NULL, (void **)&dev), KP_OK);
    cl_context other = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    assert_int_equal(kp_buffer_wrap(rt, foreign, 64, &b), KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(rt), "another OpenCL context"));
    assert_int_equal(refs(foreign), 1);
    clReleaseMemObject(foreign);
    clReleaseContext(other);

    /* A wrapped buffer left to kp_runtime_destroy drops its reference there. */
    assert_int_equal(kp_buffer_wrap(rt, m, 4, &b), KP_OK);
    assert_int_equal(refs(m), 2);
    kp_runtime_destroy(rt);
    assert_int_equal(refs(m), 1);
    clReleaseMemObject(m);
}

/* What the hand-back function of kp_buffer_wrap_external saw. */
struct hand_back_seen {
    int calls;
    kp_runtime *rt;
    void *mem;
    cl_uint refs;
    float first; /* the buffer's first float, read in the function on the runtime's queue */
};

static void hand_back(kp_runtime *rt, void *mem, void *user)
{
    struct hand_back_seen *seen = user;
    cl_command_queue q = NULL;
    seen->calls++;
    seen->rt = rt;
    seen->mem = mem;
    seen->refs = refs(mem);
    if (kp_runtime_opencl(rt, NULL, (void **)&q, NULL) == KP_OK)
        clEnqueueReadBuffer(q, mem, CL_TRUE, 0, sizeof seen->first, &seen->first, 0, NULL, NULL);
}

/* kp_buffer_wrap_external: the function runs once, before the buffer's reference goes and after
 * the work queued on the buffer, with the runtime's queue usable, from kp_buffer_destroy and from
 * kp_runtime_destroy; never for a wrap that was refused. */
static void test_wrap_external(void **state)
{
    (void)state;
    kp_runtime_options o = test_options(NULL, test_device(), NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    cl_context ctx = NULL;
    assert_int_equal(kp_runtime_opencl(rt, (void **)&ctx, NULL, NULL), KP_OK);
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    struct hand_back_seen seen = {0};
    kp_buffer *b = NULL;
    assert_int_equal(kp_buffer_wrap_external(rt, m, N * sizeof(float), hand_back, &seen, &b),
                     KP_OK);
    const float three = 3.0f;
    assert_int_equal(kp_buffer_fill(rt, b, 0, N * sizeof(float), &three, sizeof three), KP_OK);
    assert_int_equal(seen.calls, 0);
    kp_buffer_destroy(rt, b);
    assert_int_equal(seen.calls, 1);
    assert_ptr_equal(seen.rt, rt);
    assert_ptr_equal(seen.mem, m);
    /* Ours and the buffer's at least (a command in flight may hold one more). */
    assert_true(seen.refs >= 2);
    assert_true(seen.first == 3.0f);
    assert_int_equal(refs(m), 1);

    assert_int_equal(kp_buffer_wrap_external(rt, m, (N + 1) * sizeof(float), hand_back, &seen, &b),
                     KP_ERR_INVALID_ARG);
    assert_null(b);
    /* NULL: kp_buffer_wrap. */
    assert_int_equal(kp_buffer_wrap_external(rt, m, 4, NULL, NULL, &b), KP_OK);
    kp_buffer_destroy(rt, b);
    assert_int_equal(seen.calls, 1);

    memset(&seen, 0, sizeof seen);
    assert_int_equal(kp_buffer_wrap_external(rt, m, 4, hand_back, &seen, &b), KP_OK);
    const float five = 5.0f;
    assert_int_equal(kp_buffer_fill(rt, b, 0, 4, &five, sizeof five), KP_OK);
    kp_runtime_destroy(rt);
    assert_int_equal(seen.calls, 1);
    assert_ptr_equal(seen.mem, m);
    assert_true(seen.refs >= 2);
    assert_true(seen.first == 5.0f);
    assert_int_equal(refs(m), 1);
    clReleaseMemObject(m);
}

static void test_wrap_host_device(void **state)
{
    (void)state;
    kp_runtime_options o = test_options(NULL, "host", NULL);
    kp_runtime *rt = NULL;
    assert_int_equal(kp_runtime_create(&o, &rt), KP_OK);
    kp_buffer *b = NULL;
    int not_a_cl_mem = 0;
    assert_int_equal(kp_buffer_wrap(rt, &not_a_cl_mem, 4, &b), KP_ERR_UNSUPPORTED);
    assert_null(b);
    kp_runtime_destroy(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_wrap_external),
        cmocka_unit_test(test_wrap_host_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
