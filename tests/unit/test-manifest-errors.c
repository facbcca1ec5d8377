/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the manifest loader's errors: every kind of mistake, with its exact message. */
#include "test-manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- mistakes, each with its exact message ----------------------------------------------- */

static void test_syntax_error(void **state)
{
    kp__test_expect_fixture_error("syntax-error.yaml",
                                  ":5:5: error: YAML syntax: did not find expected ',' or '}' "
                                  "(while parsing a flow mapping at 4:5)\n"
                                  "    - { type: cpu }\n"
                                  "      ^");
    kp__test_expect_text_error(
        "kernelport: 1\ncache:\n  dir: x\n   max_mb: 3\n",
        "inline.yaml:4:10: error: YAML syntax: mapping values are not allowed in "
        "this context\n"
        "     max_mb: 3\n"
        "           ^");
    kp__test_expect_text_error("kernelport: 1\ndevice: *rules\n",
                               "inline.yaml:2:9: error: YAML syntax: found undefined alias\n"
                               "  device: *rules\n"
                               "          ^");
    /* The reader reports a byte offset; the column still counts characters. */
    kp__test_expect_text_error("kernelport: 1\nx: \"\xc3\xa9\xff\"\n",
                               "inline.yaml:2:6: error: YAML syntax: invalid leading UTF-8 octet\n"
                               "  x: \"\xc3\xa9\xff\"\n"
                               "       ^");
}

static void test_wrong_type(void **state)
{
    kp__test_expect_fixture_error("wrong-type.yaml",
                                  ":4:11: error: cache.max_mb: expected an integer, got \"abc\"\n"
                                  "    max_mb: abc\n"
                                  "            ^");
    kp__test_expect_text_error(
        "kernelport: 1\nplugins: [a]\n",
        "inline.yaml:2:10: error: plugins: expected a mapping, got a sequence\n"
        "  plugins: [a]\n"
        "           ^");
    kp__test_expect_text_error(
        "kernelport: 1\ndevice:\n  - { name: { x: 1 } }\n",
        "inline.yaml:3:13: error: device[0].name: expected a string, got a mapping\n"
        "    - { name: { x: 1 } }\n"
        "              ^");
    kp__test_expect_text_error(
        "kernelport: 1\nplugins: { allow_insecure: maybe }\n",
        "inline.yaml:2:28: error: plugins.allow_insecure: expected a boolean, got "
        "\"maybe\"\n"
        "  plugins: { allow_insecure: maybe }\n"
        "                             ^");
    kp__test_expect_text_error("kernelport: 1\ntuning: none\n",
                               "inline.yaml:2:9: error: tuning: expected a sequence, got a scalar\n"
                               "  tuning: none\n"
                               "          ^");
    kp__test_expect_text_error(
        "kernelport: 1\ncache: { max_mb: \"64\" }\n",
        "inline.yaml:2:18: error: cache.max_mb: expected an integer, got the string "
        "\"64\" (drop the quotes)\n"
        "  cache: { max_mb: \"64\" }\n"
        "                   ^");
    kp__test_expect_text_error(
        "- kernelport: 1\n",
        "inline.yaml:1:1: error: (top level): expected a mapping, got a sequence\n"
        "  - kernelport: 1\n"
        "  ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels: { a.b: { WG: [64, 128] } }\n",
        "inline.yaml:3:27: error: tuning[0].kernels[\"a.b\"].WG: expected a scalar or "
        "a mapping, got a sequence\n"
        "    - kernels: { a.b: { WG: [64, 128] } }\n"
        "                            ^");
}

static void test_null_values_are_errors(void **state)
{
    kp__test_expect_text_error("kernelport: 1\ndevice:\nplugins: {}\n",
                               "inline.yaml:2:8: error: device: expected a sequence, got null\n"
                               "  device:\n"
                               "         ^");
    kp__test_expect_text_error("kernelport: 1\ncache: { dir: ~ }\n",
                               "inline.yaml:2:15: error: cache.dir: expected a string, got null\n"
                               "  cache: { dir: ~ }\n"
                               "                ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels: { a.b: { WG: null } }\n",
        "inline.yaml:3:27: error: tuning[0].kernels[\"a.b\"].WG: expected a scalar or "
        "a mapping, got null\n"
        "    - kernels: { a.b: { WG: null } }\n"
        "                            ^");
    /* Quoted, it is the string "null", a fine plugin name to disable. */
    kp__manifest m;
    kp__manifest_init(&m);
    kp__test_text_ok(&m, "kernelport: 1\nplugins: { disable: [\"null\"] }\ntuning: []\n", 0);
    assert_string_equal(m.disable[0], "null");
    kp__manifest_fini(&m);
}

static void test_unknown_key_top_level(void **state)
{
    kp__test_expect_fixture_error(
        "unknown-key.yaml", ":3:1: error: devices: unknown key \"devices\" (allowed: kernelport, "
                            "require, device, plugins, cache, tuning)\n"
                            "  devices:\n"
                            "  ^");
}

static void test_unknown_key_nested(void **state)
{
    kp__test_expect_fixture_error(
        "unknown-key-nested.yaml",
        ":5:3: error: plugins.dir: unknown key \"dir\" (allowed: dirs, disable, "
        "prefer, allow_insecure, probe)\n"
        "    dir: [\"/opt/kernelport/plugins\"]\n"
        "    ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - match: { vendor: amd, uuid: x }\n"
        "    kernels: {}\n",
        "inline.yaml:3:27: error: tuning[0].match.uuid: unknown key \"uuid\" "
        "(allowed: vendor, type, name, arch)\n"
        "    - match: { vendor: amd, uuid: x }\n"
        "                            ^");
}

static void test_unknown_vendor_and_type(void **state)
{
    kp__test_expect_fixture_error(
        "unknown-vendor.yaml",
        ":5:15: error: device[1].vendor: unknown vendor \"nvidea\" (known: pocl, "
        "nvidia, amd, intel, apple, arm, qualcomm, host)\n"
        "    - { vendor: nvidea, type: gpu }\n"
        "                ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - match: { type: dsp }\n    kernels: {}\n",
        "inline.yaml:3:20: error: tuning[0].match.type: unknown device type \"dsp\" "
        "(known: cpu, gpu, accelerator, host)\n"
        "    - match: { type: dsp }\n"
        "                     ^");
}

static void test_bad_values(void **state)
{
    kp__test_expect_text_error("kernelport: 1\nplugins: { dirs: [\"\"] }\n",
                               "inline.yaml:2:19: error: plugins.dirs[0]: expected a directory, "
                               "got an empty string\n"
                               "  plugins: { dirs: [\"\"] }\n"
                               "                    ^");
    kp__test_expect_text_error(
        "kernelport: 1\nrequire: cuda\n",
        "inline.yaml:2:10: error: require: require must be \"opencl\" or \"any\", got "
        "\"cuda\"\n"
        "  require: cuda\n"
        "           ^");
    kp__test_expect_text_error(
        "kernelport: 1\ncache:\n  max_mb: -5\n",
        "inline.yaml:3:11: error: cache.max_mb: max_mb must be between 0 (no limit) and "
        "17592186044415, got -5\n"
        "    max_mb: -5\n"
        "            ^");
    /* One more MiB than 2^64 bytes hold: it used to wrap to a 1 MiB bound. */
    kp__test_expect_text_error(
        "kernelport: 1\ncache:\n  max_mb: 17592186044417\n",
        "inline.yaml:3:11: error: cache.max_mb: max_mb must be between 0 (no limit) and "
        "17592186044415, got 17592186044417\n"
        "    max_mb: 17592186044417\n"
        "            ^");
    kp__test_expect_text_error(
        "kernelport: 1\ncache: { max_mb: 0x7fffffffffffffff }\n",
        "inline.yaml:2:18: error: cache.max_mb: max_mb must be between 0 (no limit) and "
        "17592186044415, got 9223372036854775807\n"
        "  cache: { max_mb: 0x7fffffffffffffff }\n"
        "                   ^");
    kp__test_expect_text_error(
        "kernelport: 1\ndevice:\n  - { type: gpu, index: -1 }\n",
        "inline.yaml:3:25: error: device[0].index: index must be >= 0, got -1\n"
        "    - { type: gpu, index: -1 }\n"
        "                          ^");
    kp__test_expect_text_error(
        "kernelport: 1\ncache: { max_mb: 9223372036854775808 }\n",
        "inline.yaml:2:18: error: cache.max_mb: integer 9223372036854775808 is out of "
        "range (int64)\n"
        "  cache: { max_mb: 9223372036854775808 }\n"
        "                   ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels: { a.b: { WG: -0x8000000000000001 } }\n",
        "inline.yaml:3:27: error: tuning[0].kernels[\"a.b\"].WG: integer "
        "-0x8000000000000001 is out of range (int64)\n"
        "    - kernels: { a.b: { WG: -0x8000000000000001 } }\n"
        "                            ^");
}

static void test_bad_kernel_and_tunable_names(void **state)
{
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels:\n      Gru: { WG: 64 }\n",
        "inline.yaml:4:7: error: tuning[0].kernels.Gru: invalid kernel name \"Gru\" "
        "(expected family.op in lowercase letters, digits and '_')\n"
        "        Gru: { WG: 64 }\n"
        "        ^");
    kp__test_expect_text_error(
        "kernelport: 1\nplugins: { prefer: { gru.: gru } }\n",
        "inline.yaml:2:22: error: plugins.prefer[\"gru.\"]: invalid kernel name "
        "\"gru.\" (expected family.op in lowercase letters, digits and '_')\n"
        "  plugins: { prefer: { gru.: gru } }\n"
        "                       ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels:\n      gru.step: { 1WG: 64 }\n",
        "inline.yaml:4:19: error: tuning[0].kernels[\"gru.step\"].1WG: invalid "
        "tunable name \"1WG\" (expected letters, digits and '_', not starting with a "
        "digit)\n"
        "        gru.step: { 1WG: 64 }\n"
        "                    ^");
}

static void test_duplicate_key(void **state)
{
    kp__test_expect_fixture_error(
        "duplicate-key.yaml", ":6:3: error: cache.max_mb: duplicate key \"max_mb\" (first at 4:3)\n"
                              "    max_mb: 128\n"
                              "    ^");
    kp__test_expect_text_error(
        "kernelport: 1\nkernelport: 1\n",
        "inline.yaml:2:1: error: kernelport: duplicate key \"kernelport\" (first at "
        "1:1)\n"
        "  kernelport: 1\n"
        "  ^");
}

static void test_newer_schema(void **state)
{
    kp__test_expect_fixture_error(
        "newer-schema.yaml",
        ":2:13: error: kernelport: schema version 2 is newer than this Kernelport "
        "supports (1)\n"
        "  kernelport: 2\n"
        "              ^");
    kp__test_expect_text_error(
        "kernelport: 0\n",
        "inline.yaml:1:13: error: kernelport: schema version 0 is not valid (the "
        "current one is 1)\n"
        "  kernelport: 0\n"
        "              ^");
}

static void test_empty_and_versionless_documents(void **state)
{
    kp__test_expect_fixture_error(
        "empty.yaml", ":1:1: error: (top level): missing key \"kernelport\" (the schema "
                      "version)\n"
                      "  # Only comments: no schema version.\n"
                      "  ^");
    kp__test_expect_text_error(
        "", "inline.yaml:1:1: error: (top level): missing key \"kernelport\" (the "
            "schema version)\n"
            "  \n"
            "  ^");
    /* Missing before any other mistake: the version decides how to read the rest. */
    kp__test_expect_text_error(
        "cache: { max_mb: 1 }\nbogus: 1\n",
        "inline.yaml:1:1: error: (top level): missing key \"kernelport\" (the "
        "schema version)\n"
        "  cache: { max_mb: 1 }\n"
        "  ^");
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - match: { vendor: amd }\n",
        "inline.yaml:3:5: error: tuning[0]: missing key \"kernels\" (the tuned "
        "values)\n"
        "    - match: { vendor: amd }\n"
        "      ^");
    kp__test_expect_text_error(
        "kernelport: 1\n---\nkernelport: 1\n",
        "inline.yaml:3:1: error: (top level): a manifest is one YAML document, and a "
        "second one starts here\n"
        "  kernelport: 1\n"
        "  ^");
}

static void test_missing_file(void **state)
{
    kp__manifest m;
    kp__manifest_init(&m);
    char *path = kp__test_fixture("does-not-exist.yaml"), *err = (char *)"sentinel";
    assert_int_equal(kp__manifest_load_file(&m, path, 1, 0, &err), KP_OK);
    assert_null(err);
    assert_int_equal(m.n_files, 0);

    kp__test_expect_fixture_error("does-not-exist.yaml",
                                  ": error: cannot open manifest: No such file or directory");

    /* A directory is there but is no manifest: an error even when the file is optional. */
    const char *tmp = getenv("KP_TEST_TMP");
    assert_non_null(tmp);
    assert_int_equal(kp__manifest_load_file(&m, tmp, 1, 0, &err), KP_ERR_MANIFEST);
    char *expected = kp__test_fmt("%s: error: cannot read manifest: Is a directory", tmp);
    assert_string_equal(err, expected);
    free(expected);
    free(err);
    free(path);
    kp__manifest_fini(&m);
}

static void test_tabs_kept_in_source_line(void **state)
{
    kp__test_expect_text_error(
        "kernelport: 1\nrequire:\t\"cuda\"\n",
        "inline.yaml:2:10: error: require: require must be \"opencl\" or \"any\", got "
        "\"cuda\"\n"
        "  require:\t\"cuda\"\n"
        "          \t^");
}

static void test_unset_variable_in_manifest(void **state)
{
    unsetenv("KP_TEST_NEVER_SET");
    kp__test_expect_fixture_error(
        "unset-env.yaml", ":4:8: error: cache.dir: environment variable KP_TEST_NEVER_SET is not "
                          "set (write ${KP_TEST_NEVER_SET:-default} for a fallback)\n"
                          "    dir: \"${KP_TEST_NEVER_SET}/kernelport\"\n"
                          "         ^");
}

static void test_aliases_cannot_recurse(void **state)
{
    kp__test_expect_text_error(
        "kernelport: 1\ntuning:\n  - kernels:\n      a.b: &x { X: 1, Y: *x }\n",
        "inline.yaml:4:12: error: tuning[0].kernels[\"a.b\"].Y.Y.Y.Y.Y.Y.Y.Y.Y.Y.Y.Y.Y."
        "Y.Y.Y.Y: tuned values nest deeper than 16 levels\n"
        "        a.b: &x { X: 1, Y: *x }\n"
        "             ^");
}

int kp__test_manifest_errors(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_null_values_are_errors),
        cmocka_unit_test(test_unknown_key_top_level),
        cmocka_unit_test(test_unknown_key_nested),
        cmocka_unit_test(test_unknown_vendor_and_type),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_bad_kernel_and_tunable_names),
        cmocka_unit_test(test_duplicate_key),
        cmocka_unit_test(test_newer_schema),
        cmocka_unit_test(test_empty_and_versionless_documents),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_tabs_kept_in_source_line),
        cmocka_unit_test(test_unset_variable_in_manifest),
        cmocka_unit_test(test_aliases_cannot_recurse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
