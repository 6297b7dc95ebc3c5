/* The SQS front end's queues in the store (docs/sqs.md): one row per queue created through
 * SQS, with its attributes. The jobs of the queue are the jobq queue of the same name. The
 * write kinds (SQS_QUEUE_PUT, _DELETE) are store.h's, like every kind; the rules of store.h
 * hold for every function here. */
#ifndef JOBQ_STORE_SQS_H
#define JOBQ_STORE_SQS_H

#include "store.h"

/* A queue's row. Owns attributes (store_sqs_queue_clear()). */
struct store_sqs_queue {
    char name[JOB_QUEUE_MAX + 1];
    char *attributes; /* a JSON object of strings: the attributes set, as given */
    int64_t created_at;
    int64_t modified_at;
};

/* Dead-letter queues. A queue whose stored attributes hold a RedrivePolicy (the text of a JSON
 * object {"deadLetterTargetArn": "arn:...:TARGET", "maxReceiveCount": N}, as the front end
 * checked it) has a dead-letter queue: the lease's end that job_dead_letter() (lease.h) picks
 * ends the job failed and enqueues a copy (store_dead_letter_spec) in TARGET, in the
 * transaction that ends the lease (the sweep's, or a fail's). Both backends read the policy in
 * the statement that finds the lease's end. */

/* The queue an SQS queue ARN names (what follows its last ':') into out. Returns 0, or -1
 * when arn (NULL: none) names no valid queue. This function can't fail. */
int store_sqs_arn_queue(const char *arn, char out[JOB_QUEUE_MAX + 1]);

/* The spec of the copy of ended job j that a dead-letter move enqueues in queue target: its
 * payload, priority, max_attempts, max_runtime_seconds, requires and concurrency_key, due
 * now, without its idempotency or dedup key. Borrows j and target. This function can't
 * fail. */
void store_dead_letter_spec(const struct job *j, const char *target, struct job_spec *out);

/* Release what q owns and zero it. Accepts NULL. */
void store_sqs_queue_clear(struct store_sqs_queue *q);

/* Release n rows and the array. Accepts NULL. */
void store_sqs_queues_free(struct store_sqs_queue *q, size_t n);

/* create 1: make the row of `name` with attributes (created_at = modified_at = now) and
 * return STORE_OK; when the row exists already, write nothing and return STORE_EXISTS (the
 * caller compares the attributes). create 0: merge attributes into the existing row (each
 * key given replaces the stored one; modified_at = now) and return STORE_OK, or
 * STORE_NOT_FOUND when there is no row. Either way *out is the row as stored. */
enum store_result store_sqs_queue_put(struct store *s, const char *name, const char *attributes,
                                      int create, int64_t now, struct store_sqs_queue *out);

/* Delete the row of `name`: STORE_OK, or STORE_NOT_FOUND when there is none. The queue's jobs
 * are left alone (the caller purges them). */
enum store_result store_sqs_queue_delete(struct store *s, const char *name, int64_t now);

/* The rows whose name is `prefix` (exact 1) or starts with it (exact 0), after the name
 * `after` ("" for the start), ordered by name, at most limit (1..STORE_SQS_LIST_MAX) into a
 * new array *out of *n (NULL when empty) the caller releases with store_sqs_queues_free().
 * Never waits for a writer. */
#define STORE_SQS_LIST_MAX 1000
static inline enum store_result store_sqs_queues(struct store *s, const char *prefix, int exact,
                                                 const char *after, int limit,
                                                 struct store_sqs_queue **out, size_t *n)
{
    return s->ops->sqs_queues(s, prefix, exact, after, limit, out, n);
}

#endif
