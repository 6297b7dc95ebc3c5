/* The SQS query protocol (older SDKs, Debian's boto3 and awscli): a form-encoded body
 * (Action=...&QueueUrl=...) read into the parameters the JSON protocol would give, and a JSON
 * answer written as the XML that protocol answers with. Pure: no I/O. */
#ifndef JOBQ_SQS_QUERY_H
#define JOBQ_SQS_QUERY_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The parameters of the form body[0..n) as the JSON protocol shapes them: flattened lists
 * (AttributeName.1, MessageAttributeName.N, MessageSystemAttributeName.N) become arrays,
 * Attribute.N.Name/Value and MessageAttribute.N.Name/Value.* maps, and the entries of a
 * batch (...BatchRequestEntry.N.*) the array Entries, in index order. Every value stays a
 * string. Returns a new object (the caller deletes it) with "Action" in it when given, or
 * NULL when the form is malformed (a bad %-escape, a key both a value and a prefix, an index
 * that is not 1..1000) or memory ran out. */
cJSON *sqs_query_params(const char *body, size_t n);

/* The XML answer of `action` (request_id for its ResponseMetadata) from its JSON answer
 * (borrowed): a malloc'd NUL-terminated text, or NULL when out of memory. */
char *sqs_query_answer(const char *action, const cJSON *answer, const char *request_id);

/* The XML error answer: a malloc'd NUL-terminated text, or NULL when out of memory. */
char *sqs_query_error(const char *code, int sender, const char *message, const char *request_id);

#endif
