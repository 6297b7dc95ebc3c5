/* SQS messages as jobq jobs, and their digests. A message sent through SQS is a job whose
 * payload is {"sqs": {"body": BODY, "attributes": MESSAGE_ATTRIBUTES}} ("attributes" only
 * when it has some, as SQS gave them: {NAME: {"DataType": ..., "StringValue" or
 * "BinaryValue" (base64): ...}}); a job whose payload has another shape (enqueued natively)
 * is received with its payload's JSON text as the body. docs/sqs.md says the same. */
#ifndef JOBQ_SQS_MSG_H
#define JOBQ_SQS_MSG_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* SQS's limits. */
#define SQS_BODY_MAX 262144 /* bytes of a message (and of a batch's messages together) */
#define SQS_ATTRS_MAX 10    /* message attributes of one message */
#define SQS_ATTR_NAME_MAX 256
#define SQS_BATCH_MAX 10         /* entries of a batch; messages of a receive */
#define SQS_VISIBILITY_MAX 43200 /* seconds of a visibility timeout */

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

/* The payload of a message: compact JSON text, malloc'd (NULL when out of memory). Borrows
 * body and attrs (NULL: none). */
char *sqs_payload_new(const char *body, const cJSON *attrs);

/* What a job's payload (compact JSON text) is received as: *body (malloc'd) and *attrs (a
 * new object the caller deletes, NULL when the message has none). Returns 0, or -1 when out
 * of memory. */
int sqs_payload_read(const char *payload, char **body, cJSON **attrs);

#endif
