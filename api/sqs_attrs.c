/* The attributes of an SQS queue (see sqs_attrs.h). */
#include "sqs_attrs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqs_params.h"
#include "sqs_redrive.h"

enum attr_kind {
    A_COUNT,    /* an Approximate* count: the caller's */
    A_INT,      /* settable, an integer within [min, max] */
    A_BOOL,     /* settable, "true" or "false" */
    A_POLICY,   /* settable, any JSON text (kept, not acted on) */
    A_REDRIVE,  /* settable, a RedrivePolicy (sqs_redrive_parse) or "" */
    A_ALLOW,    /* settable, a RedriveAllowPolicy (sqs_redrive_allow_check) or "" */
    A_ARN,      /* read only: the queue's ARN */
    A_CREATED,  /* read only: created_at */
    A_MODIFIED, /* read only: modified_at */
};

static const struct {
    const char *name;
    enum attr_kind kind;
    const char *def;
    int64_t min, max;
    int fifo_only; /* shown and settable on FIFO queues only */
} attrs[] = {
    {"ApproximateNumberOfMessages", A_COUNT, NULL, 0, 0, 0},
    {"ApproximateNumberOfMessagesNotVisible", A_COUNT, NULL, 0, 0, 0},
    {"ApproximateNumberOfMessagesDelayed", A_COUNT, NULL, 0, 0, 0},
    {"VisibilityTimeout", A_INT, "30", 0, 43200, 0},
    {"DelaySeconds", A_INT, "0", 0, 900, 0},
    {"MessageRetentionPeriod", A_INT, "345600", 60, 1209600, 0},
    {"ReceiveMessageWaitTimeSeconds", A_INT, "0", 0, 20, 0},
    {"MaximumMessageSize", A_INT, "262144", 1024, 262144, 0},
    {"SqsManagedSseEnabled", A_BOOL, "false", 0, 0, 0},
    {"Policy", A_POLICY, NULL, 0, 0, 0},
    {"RedrivePolicy", A_REDRIVE, NULL, 0, 0, 0},
    {"RedriveAllowPolicy", A_ALLOW, NULL, 0, 0, 0},
    {"FifoQueue", A_BOOL, "false", 0, 0, 1},
    {"ContentBasedDeduplication", A_BOOL, "false", 0, 0, 1},
    {"QueueArn", A_ARN, NULL, 0, 0, 0},
    {"CreatedTimestamp", A_CREATED, NULL, 0, 0, 0},
    {"LastModifiedTimestamp", A_MODIFIED, NULL, 0, 0, 0},
};
#define NATTRS (sizeof attrs / sizeof attrs[0])

size_t sqs_attr_count(void)
{
    return NATTRS;
}

const char *sqs_attr_name(size_t i)
{
    return i < NATTRS ? attrs[i].name : "";
}

int sqs_attr_find(const char *name)
{
    for (size_t i = 0; name && i < NATTRS; i++)
        if (strcmp(attrs[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* 1 when attribute i is settable (CreateQueue, SetQueueAttributes). */
static int settable(size_t i)
{
    return attrs[i].kind == A_INT || attrs[i].kind == A_BOOL || attrs[i].kind == A_POLICY ||
           attrs[i].kind == A_REDRIVE || attrs[i].kind == A_ALLOW;
}

/* The integer text s, within [min, max], into *out. Returns 0, or -1. */
static int int_in(const char *s, int64_t min, int64_t max, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
        return -1;
    int64_t v = strtoll(s, NULL, 10);
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

int sqs_attrs_check(const cJSON *given, int *bad_name, char *err, size_t errlen)
{
    *bad_name = 0;
    if (!given)
        return 0;
    if (!cJSON_IsObject(given)) {
        snprintf(err, errlen, "Attributes must be a map of strings");
        return -1;
    }
    for (const cJSON *a = given->child; a; a = a->next) {
        int i = sqs_attr_find(a->string);
        if (i < 0 || !settable((size_t)i)) {
            *bad_name = 1;
            snprintf(err, errlen, "Unknown Attribute %.64s.", a->string);
            return -1;
        }
        const char *v = cJSON_GetStringValue(a);
        struct sqs_redrive redrive;
        if (v && (attrs[i].kind == A_REDRIVE || attrs[i].kind == A_ALLOW)) {
            if ((attrs[i].kind == A_REDRIVE ? sqs_redrive_parse(v, &redrive, err, errlen)
                                            : sqs_redrive_allow_check(v, err, errlen)) != 0)
                return -1;
            continue;
        }
        int64_t iv;
        int ok = v && (attrs[i].kind != A_INT || int_in(v, attrs[i].min, attrs[i].max, &iv) == 0) &&
                 (attrs[i].kind != A_BOOL || strcmp(v, "true") == 0 || strcmp(v, "false") == 0);
        if (!ok) {
            if (attrs[i].kind == A_INT)
                snprintf(err, errlen,
                         "Invalid value for the parameter %s: it must be an integer from %" PRId64
                         " to %" PRId64 ".",
                         a->string, attrs[i].min, attrs[i].max);
            else
                snprintf(err, errlen, "Invalid value for the parameter %s.", a->string);
            return -1;
        }
    }
    return 0;
}

/* The value of settable attribute i in the map obj, or its default. */
static const char *value_in(const cJSON *obj, size_t i)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, attrs[i].name));
    return v ? v : attrs[i].def ? attrs[i].def : "";
}

int sqs_attrs_match(const cJSON *given, const char *stored)
{
    cJSON *s = cJSON_Parse(stored);
    int same = 1;
    for (size_t i = 0; same && i < NATTRS; i++)
        if (settable(i))
            same = strcmp(value_in(given, i), value_in(s, i)) == 0;
    cJSON_Delete(s);
    return same;
}

void sqs_queue_read(struct sqs_queue *q, const char *name, const char *stored, int64_t created_at,
                    int64_t modified_at)
{
    cJSON *s = cJSON_Parse(stored);
    int64_t v[NATTRS] = {0};
    for (size_t i = 0; i < NATTRS; i++)
        if (attrs[i].kind == A_INT && int_in(value_in(s, i), 0, INT64_MAX / 2, &v[i]) != 0)
            int_in(attrs[i].def, 0, INT64_MAX / 2, &v[i]);
    q->fifo = strcmp(value_in(s, (size_t)sqs_attr_find("FifoQueue")), "true") == 0;
    q->dedup_by_content =
        strcmp(value_in(s, (size_t)sqs_attr_find("ContentBasedDeduplication")), "true") == 0;
    cJSON_Delete(s);
    snprintf(q->name, sizeof q->name, "%s", name);
    q->visibility = v[sqs_attr_find("VisibilityTimeout")];
    q->delay = v[sqs_attr_find("DelaySeconds")];
    q->wait = v[sqs_attr_find("ReceiveMessageWaitTimeSeconds")];
    q->max_size = v[sqs_attr_find("MaximumMessageSize")];
    q->created_at = created_at;
    q->modified_at = modified_at;
    q->stored = stored;
}

int sqs_attr_value(const struct sqs_queue *q, size_t i, char *out, size_t len)
{
    if (i >= NATTRS || attrs[i].kind == A_COUNT || (attrs[i].fifo_only && !q->fifo))
        return -1;
    switch (attrs[i].kind) {
    case A_ARN:
        snprintf(out, len, "arn:aws:sqs:us-east-1:%s:%s", SQS_ACCOUNT, q->name);
        return 0;
    case A_CREATED:
        snprintf(out, len, "%" PRId64, q->created_at);
        return 0;
    case A_MODIFIED:
        snprintf(out, len, "%" PRId64, q->modified_at);
        return 0;
    default: {
        cJSON *s = cJSON_Parse(q->stored ? q->stored : "{}");
        snprintf(out, len, "%s", value_in(s, i));
        cJSON_Delete(s);
        return attrs[i].def == NULL && !out[0] ? -1 : 0;
    }
    }
}

/* 1 when name ends in ".fifo". */
static int fifo_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".fifo") == 0;
}

enum sqs_fifo_check sqs_attrs_check_fifo(const cJSON *given, const char *name, int create, int fifo,
                                         char *err, size_t errlen)
{
    const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(given, "FifoQueue"));
    if (!create && f) {
        snprintf(err, errlen, "Unknown Attribute FifoQueue.");
        return SQS_FIFO_BAD_NAME;
    }
    if (create)
        fifo = f && strcmp(f, "true") == 0;
    if (create && fifo != fifo_name(name)) {
        snprintf(err, errlen,
                 fifo ? "The name of a FIFO queue can only include alphanumeric characters, "
                        "hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in "
                        "length."
                      : "Can only include alphanumeric characters, hyphens, or underscores. 1 "
                        "to 80 in length. A queue named .fifo must be created with FifoQueue "
                        "true.");
        return SQS_FIFO_BAD_VALUE;
    }
    for (size_t i = 0; !fifo && i < NATTRS; i++)
        if (attrs[i].fifo_only && cJSON_GetObjectItemCaseSensitive(given, attrs[i].name)) {
            snprintf(err, errlen, "Unknown Attribute %s.", attrs[i].name);
            return SQS_FIFO_BAD_NAME;
        }
    return SQS_FIFO_OK;
}
