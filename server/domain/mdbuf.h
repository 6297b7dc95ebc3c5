/* The 64-byte block buffer that MD5 and SHA-256 share (both Merkle-Damgard hashes): bytes
 * in, whole blocks out to the hash's compression function, and the closing padding. Pure
 * functions: no I/O, no allocation; they can't fail. */
#ifndef JOBQ_MDBUF_H
#define JOBQ_MDBUF_H

#include <stddef.h>
#include <stdint.h>

/* A hash's pending bytes: start it zeroed. */
struct mdbuf {
    unsigned char buf[64];
    size_t n;       /* bytes in buf */
    uint64_t bytes; /* bytes added in all */
};

/* A hash's compression of one 64-byte block into its state. */
typedef void (*mdbuf_block_fn)(void *state, const unsigned char block[64]);

/* Add data[0..n) (n may be 0; data may then be NULL), compressing each block filled. */
void mdbuf_add(struct mdbuf *b, const void *data, size_t n, mdbuf_block_fn block, void *state);

/* The closing padding: 0x80, zeros up to 56 bytes of a block, then the bit length in 8 bytes,
 * most significant first when big_endian (SHA-2), least significant first otherwise (MD5). */
void mdbuf_pad(struct mdbuf *b, int big_endian, mdbuf_block_fn block, void *state);

#endif
