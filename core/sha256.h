/* SPDX-License-Identifier: Apache-2.0 */
/* Internal: SHA-256 (FIPS 180-4), for program cache keys and cache file checksums. */
#ifndef KP_SHA256_H
#define KP_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct kp__sha256 {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used; /* bytes waiting in block */
} kp__sha256_ctx;

void kp__sha256_init(kp__sha256_ctx *h);
void kp__sha256_update(kp__sha256_ctx *h, const void *data, size_t len);
void kp__sha256_final(kp__sha256_ctx *h, uint8_t digest[32]);
/* One-shot digest of `len` bytes. */
void kp__sha256(const void *data, size_t len, uint8_t digest[32]);
/* 64 lowercase hex digits and a NUL into `hex` (65 bytes). */
void kp__sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
