/* SPDX-License-Identifier: Apache-2.0 */
/* kp__build_log_map: build logs whose lines count from the program's start, named by file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opencl/cl-build-log.h"

/* The core's layout: the prelude (3 lines here) and the kernel's file, each after its #line; the
 * kernel's #line follows a newline of its own, as registry.c writes it. */
static const char *const text[] = {
    "#line 1 \"kernels/common/prelude.cl\"\n",
    "/* prelude */\n#define KP_S_3(v) ((v).s4)\ntypedef int2 kp_view1;\n",
    "\n#line 1 \"example.cl\"\n",
    "__kernel void f(__global float *x)\n{\n    x[0] = undeclared;\n}\n",
};

static char *mapped(const char *log)
{
    char *out = kp__build_log_map(log, text, sizeof text / sizeof *text);
    assert_non_null(out);
    return out;
}

static void test_counted_from_the_start(void **state)
{
    (void)state;
    /* Oclgrind ignores #line: line 9 is example.cl's 3rd, line 3 the prelude's 2nd. */
    char *out = mapped("input.cl:9:12: error: use of undeclared identifier 'undeclared'\n"
                       "input.cl:3:23: note: expanded from macro 'KP_S_3'\n");
    assert_string_equal(out,
                        "example.cl:3:12: error: use of undeclared identifier 'undeclared'\n"
                        "kernels/common/prelude.cl:2:23: note: expanded from macro 'KP_S_3'\n");
    free(out);
}

/* NVIDIA's OpenCL calls the program "<kernel>" and ignores #line (the H200's log, 2026-11-26). */
static void test_nvidia_program_name(void **state)
{
    (void)state;
    char *out = mapped("<kernel>:9:53: error: use of undeclared identifier 'undeclared'\n"
                       "<kernel>:3:25: note: expanded from macro 'kp_stride'\n"
                       "<scratch space>:34:1: note: expanded from here\n");
    assert_string_equal(out, "example.cl:3:53: error: use of undeclared identifier 'undeclared'\n"
                             "kernels/common/prelude.cl:2:25: note: expanded from macro "
                             "'kp_stride'\n<scratch space>:34:1: note: expanded from here\n");
    free(out);
}

static void test_driver_temp_file_in_a_spelling(void **state)
{
    (void)state;
    char *out = mapped("error: example.cl:3:73 <Spelling=/root/.cache/pocl/kcache/"
                       "tempfile_CoUgkU.cl:3:23>: vector component access exceeds type\n");
    assert_string_equal(out, "error: example.cl:3:73 <Spelling=kernels/common/prelude.cl:2:23>: "
                             "vector component access exceeds type\n");
    free(out);
}

static void test_named_locations_and_other_text_kept(void **state)
{
    (void)state;
    /* Locations the compiler named itself, numbers that are no location, <scratch space>, a
     * line past the text and the #line directives' own lines stay as they are. */
    const char *log = "error: example.cl:3:12: use of undeclared identifier\n"
                      "<scratch space>:34:1: note: expanded from here\n"
                      "12:30:45 input.cl:99:1: x input.cl:7 input.cl:6:2: y input.cl:1:1: z\n"
                      "2 errors generated.\n";
    char *out = mapped(log);
    assert_string_equal(out, log);
    free(out);
}

static void test_line_split_across_texts(void **state)
{
    (void)state;
    const char *const split[] = {"#li", "ne 10 \"a.cl\"\nx\ny\n"};
    char *out = kp__build_log_map("t.cl:3:1: error", split, 2);
    assert_string_equal(out, "a.cl:11:1: error");
    free(out);
    /* No #line at all: nothing to map to. */
    const char *const plain[] = {"x\ny\n"};
    out = kp__build_log_map("t.cl:2:1: error", plain, 1);
    assert_string_equal(out, "t.cl:2:1: error");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counted_from_the_start),
        cmocka_unit_test(test_nvidia_program_name),
        cmocka_unit_test(test_driver_temp_file_in_a_spelling),
        cmocka_unit_test(test_named_locations_and_other_text_kept),
        cmocka_unit_test(test_line_split_across_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
