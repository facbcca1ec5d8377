/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for core/sha256.c: FIPS 180-4 example vectors, padding boundaries, incremental hashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void assert_hex(const uint8_t digest[32], const char *expected)
{
    char hex[65];
    kp__sha256_hex(digest, hex);
    assert_string_equal(hex, expected);
}

static void assert_oneshot(const void *data, size_t len, const char *expected)
{
    uint8_t digest[32];
    kp__sha256(data, len, digest);
    assert_hex(digest, expected);
}

/* A fixed-seed generator so a failure reproduces; quality hardly matters here. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_empty_message(void **state)
{
    (void)state;
    assert_oneshot("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    /* A NULL pointer with no bytes is an empty message, not a crash. */
    assert_oneshot(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
    (void)state;
    assert_oneshot("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_448_bit_message(void **state)
{
    (void)state;
    /* 56 bytes: the length no longer fits after the padding bit, so padding takes a second block.
     */
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(strlen(m), 56);
    assert_oneshot(m, strlen(m),
                   "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bit_message(void **state)
{
    (void)state;
    const char *m = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                    "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    assert_int_equal(strlen(m), 112);
    assert_oneshot(m, strlen(m),
                   "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_million_a_in_odd_pieces(void **state)
{
    (void)state;
    /* Odd piece sizes keep the buffered tail at every offset, so the block-joining path runs. */
    static const size_t pieces[] = {1, 3, 7, 13, 31, 63, 64, 65, 127, 333, 1001};
    char buf[1001];
    memset(buf, 'a', sizeof buf);
    kp__sha256_ctx h;
    kp__sha256_init(&h);
    size_t left = 1000000;
    for (size_t i = 0; left > 0; i++) {
        size_t n = pieces[i % (sizeof pieces / sizeof pieces[0])];
        if (n > left)
            n = left;
        kp__sha256_update(&h, buf, n);
        left -= n;
    }
    uint8_t digest[32];
    kp__sha256_final(&h, digest);
    assert_hex(digest, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    /* Lengths around 55/56 and 64 bytes, where the padding does or does not spill into a second
     * block (reference digests from coreutils sha256sum). */
    static const struct {
        size_t len;
        const char *hex;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    char buf[128];
    memset(buf, 'a', sizeof buf);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_oneshot(buf, cases[i].len, cases[i].hex);
}

static void test_incremental_matches_oneshot(void **state)
{
    (void)state;
    enum { MAX_LEN = 4099 };
    uint8_t *data = malloc(MAX_LEN);
    assert_non_null(data);
    uint64_t rng = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < MAX_LEN; i++)
        data[i] = (uint8_t)next_random(&rng);

    for (int round = 0; round < 500; round++) {
        size_t len = (size_t)(next_random(&rng) % (MAX_LEN + 1));
        uint8_t expected[32], actual[32];
        kp__sha256(data, len, expected);

        kp__sha256_ctx h;
        kp__sha256_init(&h);
        size_t done = 0;
        while (done < len) {
            /* Mostly short pieces, sometimes empty, sometimes long enough to skip the buffer. */
            uint64_t r = next_random(&rng);
            size_t n = (r & 3) == 0 ? (size_t)(r >> 8) % 300 : (size_t)(r >> 8) % 70;
            if (n > len - done)
                n = len - done;
            kp__sha256_update(&h, data + done, n);
            done += n;
        }
        kp__sha256_final(&h, actual);
        assert_memory_equal(actual, expected, 32);
    }
    free(data);
}

static void test_hex_is_lowercase_and_terminated(void **state)
{
    (void)state;
    uint8_t digest[32];
    for (int i = 0; i < 32; i++)
        digest[i] = (uint8_t)(i * 8 + 7);
    char hex[66];
    memset(hex, 'X', sizeof hex);
    kp__sha256_hex(digest, hex);
    assert_string_equal(hex, "070f171f272f373f474f575f676f777f878f979fa7afb7bfc7cfd7dfe7eff7ff");
    assert_int_equal(hex[65], 'X');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_message),
        cmocka_unit_test(test_abc),
        cmocka_unit_test(test_448_bit_message),
        cmocka_unit_test(test_896_bit_message),
        cmocka_unit_test(test_million_a_in_odd_pieces),
        cmocka_unit_test(test_padding_boundaries),
        cmocka_unit_test(test_incremental_matches_oneshot),
        cmocka_unit_test(test_hex_is_lowercase_and_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
