/* SPDX-License-Identifier: Apache-2.0 */
/* Every inline helper of the public headers is also a symbol libkernelport exports (other
 * languages call it through the C ABI): the names come from the headers themselves, so a helper
 * added later is checked too. */
#include <ctype.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kernelport/kernelport.h"
#include "test-util.h"

/* Checks the name after each "KP_INLINE <type...> " up to '(' in `header`; how many it saw. */
static int check_header(const char *header)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../../include/kernelport/%s", test_env("KP_TEST_FIXTURES"),
             header);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    int seen = 0;
    for (const char *at = strstr(text, "\nKP_INLINE "); at; at = strstr(at + 1, "\nKP_INLINE ")) {
        const char *paren = strchr(at, '(');
        assert_non_null(paren);
        const char *end = paren, *start = paren;
        while (start > at && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
            start--;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(end - start), start);
        if (!dlsym(RTLD_DEFAULT, name))
            fail_msg("%s: %s is not exported by libkernelport", header, name);
        seen++;
    }
    return seen;
}

static void test_helpers_are_exported(void **state)
{
    /* Touch the library so the loader keeps it (the test calls nothing else from it). */
    assert_non_null(kp_version());
    assert_true(check_header("tensor.h") >= 13);
    assert_true(check_header("kernelport.h") >= 3);
    assert_true(check_header("ops/gru.h") >= 1);
    assert_true(check_header("ops/logic.h") >= 10);
    assert_true(check_header("ops/logic-ca.h") >= 4);
    assert_true(check_header("ops/tensor.h") >= 31);
    assert_true(check_header("ops/random.h") >= 2);
    assert_true(check_header("ops/optim.h") >= 11);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helpers_are_exported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
