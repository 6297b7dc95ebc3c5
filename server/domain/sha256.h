/* SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104): what SigV4 (sigv4.h) signs with. Pure
 * functions: no I/O, no allocation; every function here can't fail. */
#ifndef JOBQ_SHA256_H
#define JOBQ_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "mdbuf.h"

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

/* A digest under way: sha256_init(), any number of sha256_add(), then sha256_final(). */
struct sha256 {
    uint32_t h[8];
    struct mdbuf b; /* bytes not yet compressed (mdbuf.h) */
};

/* Start a digest. */
void sha256_init(struct sha256 *s);

/* Add data[0..n) to the digest (n may be 0; data may then be NULL). */
void sha256_add(struct sha256 *s, const void *data, size_t n);

/* End the digest into out; s must be started again before it is used again. */
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);

/* The digest of data[0..n) into out. */
void sha256(const void *data, size_t n, unsigned char out[SHA256_LEN]);

/* HMAC-SHA-256 of msg[0..n) under key[0..klen) into out (a key of any length). */
void sha256_hmac(const void *key, size_t klen, const void *msg, size_t n,
                 unsigned char out[SHA256_LEN]);

/* d as 64 lowercase hex digits and a NUL. */
void sha256_hex(const unsigned char d[SHA256_LEN], char out[SHA256_HEX_LEN + 1]);

/* The digest of data[0..n) as 64 lowercase hex digits and a NUL (a FIFO queue's
 * content-based deduplication id, a long group's name). */
void sha256_hex_of(const void *data, size_t n, char out[SHA256_HEX_LEN + 1]);

#endif
