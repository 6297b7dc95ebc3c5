/* SQS messages as jobq jobs, and their digests. A message sent through SQS is a job whose
 * payload is {"sqs": {"body": BODY, "attributes": MESSAGE_ATTRIBUTES}} ("attributes" only
 * when it has some, as SQS gave them: {NAME: {"DataType": ..., "StringValue" or
 * "BinaryValue" (base64): ...}}); a job whose payload has another shape (enqueued natively)
 * is received with its payload's JSON text as the body. docs/sqs.md says the same. */
#ifndef JOBQ_SQS_MSG_H
#define JOBQ_SQS_MSG_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* SQS's limits. */
#define SQS_BODY_MAX 262144 /* bytes of a message (and of a batch's messages together) */
#define SQS_ATTRS_MAX 10    /* message attributes of one message */
#define SQS_ATTR_NAME_MAX 256
#define SQS_BATCH_MAX 10         /* entries of a batch; messages of a receive */
#define SQS_VISIBILITY_MAX 43200 /* seconds of a visibility timeout */
#define SQS_FIFO_ID_MAX 128      /* bytes of a MessageGroupId or MessageDeduplicationId */
#define SQS_DEDUP_SECONDS 300    /* a FIFO queue's deduplication interval */

/* The lowercase hex MD5 of data[0..n) into out (33 bytes). This function can't fail. */
void sqs_md5_hex(const void *data, size_t n, char out[33]);

/* 1 when the n bytes of body (UTF-8) hold only the characters SQS allows (#x9 #xA #xD,
 * #x20-#xD7FF, #xE000-#xFFFD, #x10000-#x10FFFF), else 0. This function can't fail. */
int sqs_body_ok(const char *body, size_t n);

/* Check message attributes as SendMessage takes them (borrowed; NULL: none). Returns 0 and
 * adds their size (names, types and values, as SQS counts it) to *bytes, or -1 with why
 * written to err. */
int sqs_msg_attrs_check(const cJSON *attrs, size_t *bytes, char *err, size_t errlen);

/* The MD5OfMessageAttributes of attrs (checked) by AWS's algorithm into out; returns 0, or
 * -1 when attrs is NULL or empty (the digest is then omitted). */
int sqs_msg_attrs_md5(const cJSON *attrs, char out[33]);

/* The concurrency key of a FIFO queue's message group into out: an ordered key
 * (LIMIT_ORDERED_PREFIX, limit.h) of the queue and the group, "fifo:QUEUE/GROUP", or, when
 * that is longer than a key may be, "fifo:QUEUE/#" and the group's SHA-256. Borrows queue
 * (a valid SQS queue name) and group (1..SQS_FIFO_ID_MAX bytes). This function can't fail. */
void sqs_fifo_key(const char *queue, const char *group, char out[JOB_IDENT_MAX + 1]);

/* A FIFO message's SequenceNumber: its job id as SQS_SEQUENCE_LEN decimal digits (zeros in
 * front), so that numbers compare as strings do. This function can't fail. */
#define SQS_SEQUENCE_LEN 20
void sqs_sequence_number(int64_t id, char out[SQS_SEQUENCE_LEN + 1]);

/* The payload of a message: compact JSON text, malloc'd (NULL when out of memory). Borrows
 * body, attrs, and a FIFO message's MessageGroupId and MessageDeduplicationId (kept as
 * "group" and "dedup" beside "body"; NULL: none). */
char *sqs_payload_new(const char *body, const cJSON *attrs, const char *group, const char *dedup);

/* The MessageGroupId and MessageDeduplicationId a FIFO message's payload keeps, into group
 * (glen bytes) and dedup (dlen bytes; "" when none). Returns 0, or -1 when the payload has
 * no group (not sent to a FIFO queue; both then ""). */
int sqs_payload_fifo(const char *payload, char *group, size_t glen, char *dedup, size_t dlen);

/* What a job's payload (compact JSON text) is received as: *body (malloc'd) and *attrs (a
 * new object the caller deletes, NULL when the message has none). Returns 0, or -1 when out
 * of memory. */
int sqs_payload_read(const char *payload, char **body, cJSON **attrs);

#endif
