/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the two files of the test-manifest executable. */
#ifndef KP_TEST_MANIFEST_H
#define KP_TEST_MANIFEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "manifest/manifest.h"

/* $KP_TEST_FIXTURES/manifests/NAME, malloc'd. */
char *kp__test_fixture(const char *name);
/* asprintf that fails the test instead of returning NULL. */
char *kp__test_fmt(const char *f, ...);
/* Loads a fixture or inline text ("inline.yaml") and fails the test on any error. */
void kp__test_load_ok(kp__manifest *m, const char *name, uint32_t layer);
void kp__test_text_ok(kp__manifest *m, const char *text, uint32_t layer);
/* Loads good.yaml, then the broken input: checks the exact message (for a fixture, everything
 * after its real path), that the manifest did not change, and that it still loads good.yaml. */
void kp__test_expect_fixture_error(const char *name, const char *suffix);
void kp__test_expect_text_error(const char *text, const char *expected);

/* Runs test-manifest-errors.c's group; returns how many failed. */
int kp__test_manifest_errors(void);

#endif
