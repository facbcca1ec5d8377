/* SPDX-License-Identifier: Apache-2.0 */
/* kp__ptx_sm90a: NVIDIA's sm_90 PTX re-targeted to sm_90a, with the sm_90a marks removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opencl/cl-ptx.h"

static void test_retargets_and_unmarks(void **state)
{
    (void)state;
    const char *ptx = ".version 8.0\n.target sm_90, texmode_independent\n"
                      "\t//KP:wgmma.fence.sync.aligned;\n\t// a comment\n"
                      "\t{\n//KP:wgmma.commit_group.sync.aligned;\n}\n";
    char *out = kp__ptx_sm90a(ptx);
    assert_non_null(out);
    assert_string_equal(out, ".version 8.0\n.target sm_90a, texmode_independent\n"
                             "\twgmma.fence.sync.aligned;\n\t// a comment\n"
                             "\t{\nwgmma.commit_group.sync.aligned;\n}\n");
    free(out);
    /* The target at the end of the text. */
    out = kp__ptx_sm90a(".target sm_90");
    assert_non_null(out);
    assert_string_equal(out, ".target sm_90a");
    free(out);
}

static void test_refuses_other_targets(void **state)
{
    (void)state;
    const char *const others[] = {".target sm_80\n",
                                  ".target sm_90a\n",
                                  ".target sm_900\n",
                                  ".target sm_89, texmode_independent\n",
                                  "",
                                  "not PTX at all"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        assert_null(kp__ptx_sm90a(others[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retargets_and_unmarks),
        cmocka_unit_test(test_refuses_other_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
