/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of kp_manifest_write_tuning: creating, appending, updating, and leaving the rest alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest/manifest.h"
#include "test-util.h"

/* ---- the standard request and its expected text ------------------------------------------ */

static const kp_tuning_match std_match = {.vendor = "pocl",
                                          .name = "pthread-skylake-avx512-AMD EPYC"};
static const kp_tuned_value std_values[] = {
    {"example.axpy", "WG", "128"},
    {"blas.gemm", "clblast.Xgemm.MWG", "64"},
    {"blas.gemm", "clblast.Xgemm.NWG", "64"},
};
static const char *const std_prov[] = {"device",     "pthread-skylake-avx512-AMD EPYC",
                                       "driver",     "3.1+debian",
                                       "date",       "2026-11-21",
                                       "kernelport", "0.1.0",
                                       "speedup",    "1.23"};

#define STD_MATCH "match: { vendor: pocl, name: \"pthread-skylake-avx512-AMD EPYC\" }"
#define STD_PROV                                                                                   \
    "provenance: { device: \"pthread-skylake-avx512-AMD EPYC\", driver: \"3.1+debian\", "          \
    "date: \"2026-11-21\", kernelport: \"0.1.0\", speedup: \"1.23\" }"
/* The standard entry as an item of a block sequence at column 2 (without its line break). */
#define STD_ITEM_TEXT                                                                              \
    "  - " STD_MATCH "\n"                                                                          \
    "    kernels:\n"                                                                               \
    "      blas.gemm: { clblast.Xgemm.MWG: 64, clblast.Xgemm.NWG: 64 }\n"                          \
    "      example.axpy: { WG: 128 }\n"                                                            \
    "    " STD_PROV
#define STD_ITEM STD_ITEM_TEXT "\n"

/* ---- helpers ----------------------------------------------------------------------------- */

/* KP_TEST_TMP/name, malloc'd; the file may be left from an earlier run. */
static char *scratch(const char *name)
{
    char *path = NULL;
    assert_true(asprintf(&path, "%s/%s", test_env("KP_TEST_TMP"), name) > 0);
    return path;
}

/* As scratch, and the file is not there. */
static char *fresh(const char *name)
{
    char *path = scratch(name);
    unlink(path);
    return path;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void spill(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static kp_status write_std(const char *path)
{
    return kp_manifest_write_tuning(path, &std_match, std_values, 3, std_prov, 5);
}

/* Writes `before` to a scratch file, applies the standard request, checks the result is exactly
 * `after` and that a second run changes nothing. */
static void expect_edit(const char *name, const char *before, const char *after)
{
    char *path = scratch(name);
    spill(path, before);
    kp_status st = write_std(path);
    if (st != KP_OK)
        print_error("%s\n", kp_last_error(NULL));
    assert_int_equal(st, KP_OK);
    char *got = slurp(path);
    assert_string_equal(got, after);
    assert_int_equal(write_std(path), KP_OK);
    char *again = slurp(path);
    assert_string_equal(again, after);
    free(again);
    free(got);
    free(path);
}

static char *cat3(const char *a, size_t na, const char *b, const char *c)
{
    char *s = NULL;
    assert_true(asprintf(&s, "%.*s%s%s", (int)na, a, b, c) > 0);
    return s;
}

static kp__manifest load(const char *path)
{
    kp__manifest m;
    char *err = NULL;
    kp__manifest_init(&m);
    kp_status st = kp__manifest_load_file(&m, path, 0, 1, &err);
    if (err)
        print_error("%s\n", err);
    assert_int_equal(st, KP_OK);
    return m;
}

static const kp__tuning_value *find(const kp__tuning_entry *e, const char *kernel, const char *key)
{
    for (size_t i = 0; i < e->n_values; i++)
        if (!strcmp(e->values[i].kernel, kernel) && !strcmp(e->values[i].key, key))
            return &e->values[i];
    fail_msg("no value %s %s", kernel, key);
    return NULL;
}

static void check_value(const kp__tuning_entry *e, const char *kernel, const char *key,
                        const char *text, int is_int, int64_t value)
{
    const kp__tuning_value *v = find(e, kernel, key);
    assert_string_equal(v->text, text);
    assert_int_equal(v->is_int, is_int);
    if (is_int)
        assert_int_equal(v->value, value);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_creates_missing_file(void **state)
{
    char *path = fresh("new.yaml");
    assert_int_equal(write_std(path), KP_OK);
    char *text = slurp(path);
    assert_string_equal(text, "kernelport: 1\ntuning:\n" STD_ITEM);

    kp__manifest m = load(path);
    assert_int_equal(m.n_tuning, 1);
    const kp__tuning_entry *e = &m.tuning[0];
    assert_string_equal(e->vendor, "pocl");
    assert_string_equal(e->name, "pthread-skylake-avx512-AMD EPYC");
    assert_null(e->type);
    assert_null(e->arch);
    assert_int_equal(e->n_values, 3);
    check_value(e, "example.axpy", "WG", "128", 1, 128);
    check_value(e, "blas.gemm", "clblast.Xgemm.MWG", "64", 1, 64);
    check_value(e, "blas.gemm", "clblast.Xgemm.NWG", "64", 1, 64);
    assert_int_equal(e->n_prov, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(e->prov_keys[i], std_prov[2 * i]);
        assert_string_equal(e->prov_values[i], std_prov[2 * i + 1]);
    }
    kp__manifest_fini(&m);

    /* The same request again leaves the same bytes. */
    assert_int_equal(write_std(path), KP_OK);
    char *again = slurp(path);
    assert_string_equal(again, text);
    free(again);
    free(text);
    free(path);
}

static void test_appends_keeping_the_rest(void **state)
{
    char *fixture = test_fixture_path("manifests/write-append.yaml");
    char *before = slurp(fixture);
    /* The new entry goes after the last one's line (its comment stays there), before the blank
     * line and the comment about what follows. */
    const char *split = strstr(before, "\n\n# cache") + 1;
    char *after = cat3(before, (size_t)(split - before), STD_ITEM, split);
    expect_edit("append.yaml", before, after);
    assert_non_null(strstr(after, "# the GPU\n"));
    assert_non_null(strstr(after, "{ WG: 256 }   # measured by hand\n"));

    char *path = scratch("append.yaml");
    kp__manifest m = load(path);
    assert_int_equal(m.n_tuning, 3);
    check_value(&m.tuning[0], "example.axpy", "WG", "256", 1, 256);
    check_value(&m.tuning[2], "example.axpy", "WG", "128", 1, 128);
    kp__manifest_fini(&m);
    free(path);
    free(after);
    free(before);
}

static void test_updates_matching_entry(void **state)
{
    char *before = slurp(test_fixture_path("manifests/write-update.yaml"));
    /* Only the PoCL entry's text changes: from its first key to the end of its last value. */
    const char *from = strstr(before, "match: { name:");
    const char *to = strstr(before, "\n  - match: { vendor: amd }");
    static const char entry[] =
        STD_MATCH "\n"
                  "    kernels:\n"
                  "      blas.gemm: { clblast.Xgemm.MWG: 64, clblast.Xgemm.KWG: 16, "
                  "clblast.Xgemm.NWG: 64 }\n"
                  "      example.axpy: { WG: 128, VEC: 4 }\n"
                  "      gru.step: { WG: 32, MODE: \"64\" }\n"
                  "    " STD_PROV;
    char *after = cat3(before, (size_t)(from - before), entry, to);
    expect_edit("update.yaml", before, after);
    assert_non_null(strstr(after, "# comment before the pocl entry — é\n"));
    assert_non_null(strstr(after, "{ vendor: amd }   # trailing\n"));

    char *path = scratch("update.yaml");
    kp__manifest m = load(path);
    assert_int_equal(m.n_tuning, 3);
    const kp__tuning_entry *e = &m.tuning[1];
    assert_int_equal(e->n_values, 7);
    check_value(e, "example.axpy", "WG", "128", 1, 128); /* replaced */
    check_value(e, "example.axpy", "VEC", "4", 1, 4);    /* kept */
    check_value(e, "gru.step", "MODE", "64", 0, 0);      /* kept as text */
    check_value(e, "blas.gemm", "clblast.Xgemm.KWG", "16", 1, 16);
    check_value(e, "blas.gemm", "clblast.Xgemm.MWG", "64", 1, 64);
    assert_string_equal(e->prov_values[0], std_prov[1]); /* provenance replaced */
    assert_int_equal(e->n_prov, 5);
    kp__manifest_fini(&m);
    free(path);
    free(after);
    free(before);
}

static void test_entry_without_match_is_the_empty_match(void **state)
{
    static const kp_tuning_match any = {0};
    static const kp_tuned_value v[] = {{"example.axpy", "WG", "32"}};
    char *path = scratch("any.yaml");
    spill(path, "kernelport: 1\ntuning:\n  - kernels: { gru.step: { WG: 4 } }  # old\n");
    assert_int_equal(kp_manifest_write_tuning(path, &any, v, 1, NULL, 0), KP_OK);
    char *text = slurp(path);
    assert_string_equal(text, "kernelport: 1\ntuning:\n  - match: {}\n    kernels:\n"
                              "      example.axpy: { WG: 32 }\n      gru.step: { WG: 4 }  # old\n");
    free(text);
    free(path);
}

static void test_last_matching_entry_is_updated(void **state)
{
    static const kp_tuning_match cpu = {.type = "CPU"};
    static const kp_tuned_value v[] = {{"gru.step", "WG", "8"}};
    char *path = scratch("last.yaml");
    spill(path, "kernelport: 1\ntuning:\n"
                "  - { match: { type: cpu }, kernels: { gru.step: { WG: 1 } } }\n"
                "  - { match: { type: cpu }, kernels: { gru.step: { WG: 2 } } }\n");
    assert_int_equal(kp_manifest_write_tuning(path, &cpu, v, 1, NULL, 0), KP_OK);
    char *text = slurp(path);
    assert_string_equal(text, "kernelport: 1\ntuning:\n"
                              "  - { match: { type: cpu }, kernels: { gru.step: { WG: 1 } } }\n"
                              "  - match: { type: cpu }\n    kernels:\n"
                              "      gru.step: { WG: 8 }\n");
    free(text);
    free(path);
}

static void test_flow_tuning_becomes_block(void **state)
{
    /* The comment after the brackets stays on the line where the replaced text ends. */
    expect_edit("flow-empty.yaml", "kernelport: 1\ntuning: []   # none yet\ncache: { max_mb: 1 }\n",
                "kernelport: 1\ntuning:\n" STD_ITEM_TEXT "   # none yet\ncache: { max_mb: 1 }\n");

    expect_edit(
        "flow-items.yaml",
        "kernelport: 1\ntuning: [ { match: { type: GPU }, kernels: { gru.step: "
        "{ WG: 8, MODE: \"64\" } } },\n  { kernels: { gru.rollout: {} } } ]\n",
        "kernelport: 1\ntuning:\n  - match: { type: gpu }\n    kernels:\n"
        "      gru.step: { WG: 8, MODE: \"64\" }\n  - match: {}\n    kernels: {}\n" STD_ITEM);
    char *path = scratch("flow-items.yaml");
    kp__manifest m = load(path);
    assert_int_equal(m.n_tuning, 3);
    check_value(&m.tuning[0], "gru.step", "MODE", "64", 0, 0);
    kp__manifest_fini(&m);
    free(path);
}

static void test_no_tuning_key(void **state)
{
    expect_edit("no-key.yaml", "kernelport: 1\ncache:\n  max_mb: 8\n# end",
                "kernelport: 1\ncache:\n  max_mb: 8\n# end\ntuning:\n" STD_ITEM);
    /* After an explicit document end, text would start a second document. */
    expect_edit("doc-end.yaml", "kernelport: 1\n...\n",
                "kernelport: 1\ntuning:\n" STD_ITEM "...\n");
    expect_edit(
        "flow-root.yaml", "{ kernelport: 1 }  # flow\n",
        "{ kernelport: 1, tuning: [{ " STD_MATCH ", kernels: { blas.gemm: "
        "{ clblast.Xgemm.MWG: 64, clblast.Xgemm.NWG: 64 }, example.axpy: { WG: 128 } }, " STD_PROV
        " }] }  # flow\n");
}

static void test_layouts_kept(void **state)
{
    /* An indentless sequence, and a byte-order mark with multibyte text before the edit. */
    expect_edit("indentless.yaml", "kernelport: 1\ntuning:\n- kernels: { gru.step: { WG: 4 } }\n",
                "kernelport: 1\ntuning:\n- kernels: { gru.step: { WG: 4 } }\n- " STD_MATCH
                "\n  kernels:\n    blas.gemm: { clblast.Xgemm.MWG: 64, clblast.Xgemm.NWG: 64 }\n"
                "    example.axpy: { WG: 128 }\n  " STD_PROV "\n");
    expect_edit("bom.yaml",
                "\xEF\xBB\xBFkernelport: 1 # ü—é\ntuning:\n  - match: { name: \"é\" }\n"
                "    kernels: { gru.step: { WG: 4 } }\n",
                "\xEF\xBB\xBFkernelport: 1 # ü—é\ntuning:\n  - match: { name: \"é\" }\n"
                "    kernels: { gru.step: { WG: 4 } }\n" STD_ITEM);
    /* The entry's block scalar ends the lines it owns; the blank line after it stays after. */
    expect_edit("block-scalar.yaml",
                "kernelport: 1\ntuning:\n  - kernels: { gru.step: { WG: 4 } }\n"
                "    provenance:\n      note: |\n        two\n        lines\n\n# after\n",
                "kernelport: 1\ntuning:\n  - kernels: { gru.step: { WG: 4 } }\n"
                "    provenance:\n      note: |\n        two\n        lines\n" STD_ITEM
                "\n# after\n");
    /* Windows line breaks stay Windows line breaks. */
    expect_edit("crlf.yaml", "kernelport: 1\r\ntuning:\r\n  - kernels: { gru.step: { WG: 4 } }\r\n",
                "kernelport: 1\r\ntuning:\r\n  - kernels: { gru.step: { WG: 4 } }\r\n  - " STD_MATCH
                "\r\n    kernels:\r\n      blas.gemm: { clblast.Xgemm.MWG: 64, clblast.Xgemm.NWG: "
                "64 }\r\n      example.axpy: { WG: 128 }\r\n    " STD_PROV "\r\n");
}

static void test_entry_with_anchor_is_not_rewritten(void **state)
{
    /* Rewriting the first entry would drop the anchor the second one uses: append instead. */
    static const char before[] = "kernelport: 1\ntuning:\n"
                                 "  - match: { vendor: pocl, name: \"pthread-skylake-avx512-AMD "
                                 "EPYC\" }\n    kernels: &k { gru.step: { WG: 4 } }\n"
                                 "  - match: { type: gpu }\n    kernels: *k\n";
    char *after = cat3(before, sizeof before - 1, STD_ITEM, "");
    expect_edit("anchor.yaml", before, after);
    free(after);
}

static void test_quoting_round_trips(void **state)
{
    static const kp_tuning_match gpu = {.name = "GPU: #1 \"fast\"", .arch = "sm_90"};
    static const kp_tuned_value v[] = {
        {"k.op", "MODE", "tf32x3"},
        {"k.op", "FLOAT", "1.5"},
        {"k.op", "NUL", "null"},
        {"k.op", "SPACE", "a b"},
        {"k.op", "ESC", "t\tn\n\\q"},
        {"k.op", "UNI", "é—ü"},
        {"k.op", "CTL", "\x01\xC2\x85"},
        {"k.op", "HEX", "0x40"},
        {"k.op", "BOOL", "Off"},
        {"k.op", "NEG", "-3"},
        {"k.op", "BIG", "99999999999999999999"},
        {"k.op", "EMPTY", ""},
        {"k.op", "on", "1"},
        {"k.op", "y", "tilde ~"},
        {"1x.op", "a.b.c", "#x"},
        {"k.op", "COLON", "a: b"},
    };
    static const char *const prov[] = {"speed up", "1.23", "note", "# not a comment"};
    char *path = scratch("quoting.yaml");
    size_t n = sizeof v / sizeof *v;
    assert_int_equal(kp_manifest_write_tuning(path, &gpu, v, n, prov, 2), KP_OK);
    char *text = slurp(path);
    assert_non_null(strstr(text, "match: { name: \"GPU: #1 \\\"fast\\\"\", arch: sm_90 }"));
    assert_non_null(strstr(text, "MODE: tf32x3, FLOAT: \"1.5\", NUL: \"null\""));
    assert_non_null(strstr(text, "ESC: \"t\\tn\\n\\\\q\""));
    assert_non_null(strstr(text, "CTL: \"\\x01\\x85\""));
    assert_non_null(strstr(text, "HEX: 0x40, BOOL: Off, NEG: -3"));
    kp__manifest m = load(path);
    const kp__tuning_entry *e = &m.tuning[0];
    assert_string_equal(e->name, gpu.name);
    assert_int_equal(e->n_values, n);
    for (size_t i = 0; i < n; i++) {
        const kp__tuning_value *got = find(e, v[i].kernel, v[i].name);
        assert_string_equal(got->text, v[i].value);
    }
    check_value(e, "k.op", "HEX", "0x40", 1, 64);
    check_value(e, "k.op", "BOOL", "Off", 1, 0);
    check_value(e, "k.op", "NEG", "-3", 1, -3);
    check_value(e, "k.op", "on", "1", 1, 1);
    check_value(e, "k.op", "FLOAT", "1.5", 0, 0);
    check_value(e, "k.op", "BIG", "99999999999999999999", 0, 0);
    assert_string_equal(e->prov_keys[0], "speed up");
    assert_string_equal(e->prov_values[1], "# not a comment");
    kp__manifest_fini(&m);
    free(text);
    free(path);
}

static void expect_unchanged_error(const char *name, const char *text, kp_status want,
                                   const char *message)
{
    char *path = scratch(name);
    spill(path, text);
    assert_int_equal(write_std(path), want);
    char *expected = NULL;
    assert_true(asprintf(&expected, message, path) > 0);
    if (!strstr(kp_last_error(NULL), expected))
        fail_msg("message \"%s\" lacks \"%s\"", kp_last_error(NULL), expected);
    char *after = slurp(path);
    assert_string_equal(after, text);
    free(after);
    free(expected);
    free(path);
}

static void test_invalid_manifest_is_left_alone(void **state)
{
    char *bad = slurp(test_fixture_path("manifests/write-invalid.yaml"));
    expect_unchanged_error("invalid.yaml", bad, KP_ERR_MANIFEST,
                           "%s:3:22: error: tuning[0].match.vendor: unknown vendor \"nvidea\"");
    expect_unchanged_error("syntax.yaml", "kernelport: 1\ntuning: [\n", KP_ERR_MANIFEST,
                           "%s:3:1: error: YAML syntax: ");
    expect_unchanged_error("empty.yaml", "", KP_ERR_MANIFEST,
                           "%s:1:1: error: (top level): missing key \"kernelport\"");
    expect_unchanged_error("utf16.yaml", "\xFF\xFEk", KP_ERR_MANIFEST,
                           "%s: error: the manifest is UTF-16");
    free(bad);
}

static void test_invalid_arguments(void **state)
{
    char *path = fresh("args.yaml");
    const kp_tuned_value nul[] = {{"example.axpy", NULL, "1"}};
    const kp_tuned_value kern[] = {{"Example.axpy", "WG", "1"}};
    const kp_tuned_value tun[] = {{"example.axpy", "1WG", "1"}};
    const kp_tuned_value utf[] = {{"example.axpy", "WG", "\xC3"}};
    const kp_tuning_match vendor = {.vendor = "nvidea"}, type = {.type = "dsp"};
    const char *const dup[] = {"date", "a", "date", "b"};
    const char *const null_prov[] = {"date", NULL};
    assert_int_equal(kp_manifest_write_tuning(NULL, &std_match, std_values, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, NULL, std_values, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, NULL, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, std_values, 0, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL), "kp_manifest_write_tuning: no values to write");
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, std_values, 1, NULL, 1),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, nul, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, kern, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "values[0]: invalid kernel name \"Example"));
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, tun, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "invalid tunable name \"1WG\""));
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, utf, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &vendor, std_values, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_non_null(strstr(kp_last_error(NULL), "unknown vendor \"nvidea\""));
    assert_int_equal(kp_manifest_write_tuning(path, &type, std_values, 1, NULL, 0),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, std_values, 1, dup, 2),
                     KP_ERR_INVALID_ARG);
    assert_string_equal(kp_last_error(NULL),
                        "kp_manifest_write_tuning: provenance: duplicate key \"date\"");
    assert_int_equal(kp_manifest_write_tuning(path, &std_match, std_values, 1, null_prov, 1),
                     KP_ERR_INVALID_ARG);
    assert_int_equal(access(path, F_OK), -1); /* nothing was created */
    free(path);
}

static void test_files_and_links(void **state)
{
    /* Through a symbolic link the target is rewritten, keeping its permissions. */
    char *real = scratch("real.yaml"), *link = fresh("link.yaml");
    spill(real, "kernelport: 1\n");
    assert_int_equal(chmod(real, 0640), 0);
    assert_int_equal(symlink(real, link), 0);
    assert_int_equal(write_std(link), KP_OK);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(stat(real, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    char *text = slurp(real);
    assert_string_equal(text, "kernelport: 1\ntuning:\n" STD_ITEM);
    free(text);

    char *missing = scratch("no-such-dir/m.yaml");
    assert_int_equal(write_std(missing), KP_ERR_IO);
    assert_non_null(strstr(kp_last_error(NULL), "cannot write manifest: No such file"));
    assert_int_equal(write_std(test_env("KP_TEST_TMP")), KP_ERR_IO);
    assert_non_null(strstr(kp_last_error(NULL), "Is a directory"));
    /* No temporary file is left behind, after success or failure. */
    DIR *dir = opendir(test_env("KP_TEST_TMP"));
    assert_non_null(dir);
    for (struct dirent *d; (d = readdir(dir));)
        if (strstr(d->d_name, ".kp-tmp-"))
            fail_msg("left behind: %s", d->d_name);
    closedir(dir);
    free(missing);
    free(link);
    free(real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_creates_missing_file),
        cmocka_unit_test(test_appends_keeping_the_rest),
        cmocka_unit_test(test_updates_matching_entry),
        cmocka_unit_test(test_entry_without_match_is_the_empty_match),
        cmocka_unit_test(test_last_matching_entry_is_updated),
        cmocka_unit_test(test_flow_tuning_becomes_block),
        cmocka_unit_test(test_no_tuning_key),
        cmocka_unit_test(test_layouts_kept),
        cmocka_unit_test(test_entry_with_anchor_is_not_rewritten),
        cmocka_unit_test(test_quoting_round_trips),
        cmocka_unit_test(test_invalid_manifest_is_left_alone),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_files_and_links),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
