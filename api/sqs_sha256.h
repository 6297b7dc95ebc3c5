/* SHA-256 (FIPS 180-4), for a FIFO queue's content-based deduplication id: the hex digest of a
 * message body. Pure: no I/O. */
#ifndef JOBQ_SQS_SHA256_H
#define JOBQ_SQS_SHA256_H

#include <stddef.h>

/* The lowercase hex SHA-256 of data[0..n) into out (65 bytes). This function can't fail. */
void sqs_sha256_hex(const void *data, size_t n, char out[65]);

#endif
