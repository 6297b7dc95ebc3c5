/* The attributes of an SQS queue: which exist, which CreateQueue and SetQueueAttributes may
 * set and within what bounds, their defaults, and what a queue's stored attributes (a JSON
 * object of strings, store_sqs.h) mean to the actions. Pure: no I/O. */
#ifndef JOBQ_SQS_ATTRS_H
#define JOBQ_SQS_ATTRS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* What the actions read of a queue's attributes (the defaults where none is stored). */
struct sqs_queue {
    char name[JOB_QUEUE_MAX + 1];
    int64_t visibility;   /* VisibilityTimeout: a receive's default */
    int64_t delay;        /* DelaySeconds: a send's default */
    int64_t wait;         /* ReceiveMessageWaitTimeSeconds: a receive's default */
    int64_t max_size;     /* MaximumMessageSize: a message's bytes at most */
    int64_t created_at;   /* seconds */
    int64_t modified_at;  /* seconds */
    int fifo;             /* FifoQueue: 1 for a FIFO queue */
    int dedup_by_content; /* ContentBasedDeduplication */
    const char *stored;   /* the stored attributes (borrowed) */
};

/* The number of attributes GetQueueAttributes knows. */
size_t sqs_attr_count(void);

/* The name of attribute i (< sqs_attr_count()). */
const char *sqs_attr_name(size_t i);

/* The index of attribute `name`, or -1 when there is none. */
int sqs_attr_find(const char *name);

/* Check attributes given to CreateQueue or SetQueueAttributes (a map of strings; NULL:
 * none): every name settable, every value within its bounds. Returns 0, or -1 with why in
 * err and *bad_name set to 1 when a name is unknown (InvalidAttributeName) rather than a
 * value out of bounds (InvalidAttributeValue). */
int sqs_attrs_check(const cJSON *given, int *bad_name, char *err, size_t errlen);

/* What sqs_attrs_check_fifo finds. */
enum sqs_fifo_check {
    SQS_FIFO_OK,
    SQS_FIFO_BAD_NAME, /* an attribute a queue of this kind cannot be given: InvalidAttributeName */
    SQS_FIFO_BAD_VALUE /* the name and FifoQueue disagree: InvalidParameterValue */
};

/* Check the FIFO rules of attributes given (checked by sqs_attrs_check; NULL: none) for the
 * queue `name`: create 1 for a CreateQueue (the queue is FIFO when FifoQueue is "true", and
 * then only then its name must end in ".fifo"); create 0 for a SetQueueAttributes of a
 * queue that is FIFO or not (fifo), which cannot change FifoQueue. The attributes of FIFO
 * queues only (FifoQueue, ContentBasedDeduplication) are refused for a standard queue. Returns
 * SQS_FIFO_OK, or another value with why in err. This function can't fail. */
enum sqs_fifo_check sqs_attrs_check_fifo(const cJSON *given, const char *name, int create, int fifo,
                                         char *err, size_t errlen);

/* 1 when the attributes given to a CreateQueue match those stored (each attribute's value,
 * the default standing for one absent, is the same on both sides), else 0. */
int sqs_attrs_match(const cJSON *given, const char *stored);

/* Fill q from name and the stored attributes (JSON text; borrowed by q->stored). This
 * function can't fail: what cannot be read keeps its default. */
void sqs_queue_read(struct sqs_queue *q, const char *name, const char *stored, int64_t created_at,
                    int64_t modified_at);

/* The value GetQueueAttributes shows for attribute i of q, into out (counts: the caller's;
 * this gives the stored or default value, the ARN, the times). Returns 0, or -1 for an
 * attribute whose value is the caller's (the Approximate* counts). */
int sqs_attr_value(const struct sqs_queue *q, size_t i, char *out, size_t len);

#endif
