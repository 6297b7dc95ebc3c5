#include "mdbuf.h"

#include <string.h>

void mdbuf_add(struct mdbuf *b, const void *data, size_t n, mdbuf_block_fn block, void *state)
{
    const unsigned char *p = data;
    b->bytes += n;
    while (n > 0) {
        size_t take = 64 - b->n < n ? 64 - b->n : n;
        memcpy(b->buf + b->n, p, take);
        b->n += take;
        p += take;
        n -= take;
        if (b->n == 64) {
            block(state, b->buf);
            b->n = 0;
        }
    }
}

void mdbuf_pad(struct mdbuf *b, int big_endian, mdbuf_block_fn block, void *state)
{
    uint64_t bits = b->bytes * 8;
    static const unsigned char pad = 0x80, zero = 0;
    mdbuf_add(b, &pad, 1, block, state);
    while (b->n != 56)
        mdbuf_add(b, &zero, 1, block, state);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (big_endian ? 56 - 8 * i : 8 * i));
    mdbuf_add(b, len, 8, block, state);
}
