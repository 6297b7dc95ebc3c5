/* A small JSON reader for the one answer the generator must look into: the jobs of a claim,
 * {"jobs": [{"id": 42, "lease_token": "...", "payload": {"t": 123}, ...}, ...]}.
 *
 * It walks the text once without allocating, skipping every member it does not need (any
 * JSON value, nested up to JSCAN_DEPTH levels). */
#ifndef BENCH_JSCAN_H
#define BENCH_JSCAN_H

#include <stddef.h>
#include <stdint.h>

#define JSCAN_DEPTH 64
#define JSCAN_TOKEN_MAX 127

/* One claimed job. t is the payload's "t" member (the generator's send time), has_t 0 when
 * the payload had none. */
struct claimed {
    int64_t id;
    int64_t t;
    int has_t;
    char token[JSCAN_TOKEN_MAX + 1];
};

/* Read up to max jobs of the claim answer s (len bytes, no NUL needed) into out[]. Returns the
 * number of jobs (0 for an empty list), or -1 when the text is not such an answer, a job lacks
 * an id or a lease_token, or a token is longer than JSCAN_TOKEN_MAX. */
int jscan_claim(const char *s, size_t len, struct claimed *out, int max);

#endif
