/* What every SQS action shares: reading its parameters (a JSON object, borrowed for the
 * action's first call only), naming its queue, and the head of its state across calls. */
#ifndef JOBQ_SQS_PARAMS_H
#define JOBQ_SQS_PARAMS_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdint.h>

#include "job.h"
#include "request.h"

/* The account part of every queue URL. */
#define SQS_ACCOUNT "000000000000"

/* An action's state across the calls of its request (a store call or a long poll), kept in
 * rq->state: it starts with this head, and resume() goes on when the connection is
 * resumed. */
struct sqs_state {
    enum MHD_Result (*resume)(struct request *rq);
};

/* A new zeroed state of size bytes (at least sizeof (struct sqs_state)) whose head resumes
 * with `resume`, made rq->state (freed by state_free). Returns it, or NULL after answering
 * InternalError (out of memory). */
void *sqs_state_new(struct request *rq, size_t size, enum MHD_Result (*resume)(struct request *rq),
                    void (*state_free)(void *state));

struct sqs_queue; /* sqs_attrs.h */

/* An SQS action: answers (or keeps a struct sqs_state in rq->state and suspends). params is
 * borrowed for this call only; so is q, the queue the request names, read before the action
 * runs (NULL for the actions that name none, or that create it). */
typedef enum MHD_Result (*sqs_action_fn)(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q);

/* The string parameter `name`, NULL when absent; -1 after answering when it is present but
 * not a string. */
int sqs_param_string(struct request *rq, const cJSON *params, const char *name, const char **out);

/* The integer parameter `name` into *out (def when absent), which must lie in [min, max].
 * Returns 0, or -1 after answering InvalidParameterValue. */
int sqs_param_int(struct request *rq, const cJSON *params, const char *name, int64_t def,
                  int64_t min, int64_t max, int64_t *out);

/* 1 when name is a valid SQS queue name (1-80 of A-Z a-z 0-9 - _, a ".fifo" suffix
 * allowed), else 0. */
int sqs_queue_name_ok(const char *name);

/* The queue that the QueueUrl parameter names (its last path segment) into out. Returns 0,
 * or -1 after answering (missing, or not a queue URL: QueueDoesNotExist). */
int sqs_queue_or_reply(struct request *rq, const cJSON *params, char out[JOB_QUEUE_MAX + 1]);

/* The queue that the QueueName parameter names into out. Returns 0, or -1 after answering
 * (missing: MissingParameter; not a valid name: InvalidParameterValue). */
int sqs_queue_name_or_reply(struct request *rq, const cJSON *params, char out[JOB_QUEUE_MAX + 1]);

/* The URL of queue into out (room for len bytes): the base URL (--sqs-base-url, or the
 * listener's address), SQS_ACCOUNT and the name. */
void sqs_queue_url(const struct request *rq, const char *queue, char *out, size_t len);

/* An entry Id of a batch: 1-80 of A-Z a-z 0-9 - _. */
int sqs_entry_id_ok(const char *id);

/* The entries of a batch (the parameter `Entries`, 1..10 objects with distinct valid Ids)
 * into *entries. Returns how many, or -1 after answering. */
int sqs_entries_or_reply(struct request *rq, const cJSON *params, const cJSON **entries);

#endif
