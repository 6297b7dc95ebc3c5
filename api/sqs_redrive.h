/* Dead-letter queues (docs/sqs.md "Dead-letter queues"): the RedrivePolicy and
 * RedriveAllowPolicy attributes checked, whether a target queue takes a source, and
 * ListDeadLetterSourceQueues. The move itself is the store's (store_sqs.h). */
#ifndef JOBQ_SQS_REDRIVE_H
#define JOBQ_SQS_REDRIVE_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "request.h"

#define SQS_MAX_RECEIVE_MAX 1000 /* maxReceiveCount, at most jobq's max_attempts */
#define SQS_ALLOW_SOURCES_MAX 10 /* sourceQueueArns of a byQueue RedriveAllowPolicy */

/* A RedrivePolicy. */
struct sqs_redrive {
    char target[JOB_QUEUE_MAX + 1]; /* the queue deadLetterTargetArn names; "" for none */
    int64_t max_receive;            /* maxReceiveCount: 1..SQS_MAX_RECEIVE_MAX */
};

/* Read a RedrivePolicy value (text, borrowed): "" removes the policy (out->target ""); else a
 * JSON object with deadLetterTargetArn (arn:aws:sqs:us-east-1:000000000000:QUEUE, a valid
 * queue name) and maxReceiveCount (1..SQS_MAX_RECEIVE_MAX, a number or its text). Returns 0,
 * or -1 with why in err. Pure: this function can't fail otherwise. */
int sqs_redrive_parse(const char *text, struct sqs_redrive *out, char *err, size_t errlen);

/* Check a RedriveAllowPolicy value (text, borrowed): "" or a JSON object with
 * redrivePermission allowAll, denyAll or byQueue, and with byQueue sourceQueueArns, 1 to
 * SQS_ALLOW_SOURCES_MAX ARNs (only then). Returns 0, or -1 with why in err. */
int sqs_redrive_allow_check(const char *text, char *err, size_t errlen);

/* Whether queue `target`, whose stored attributes are target_attrs (JSON text, borrowed),
 * takes queue `source` (FIFO when source_fifo) as a source of dead letters: both FIFO or both
 * standard, and its RedriveAllowPolicy allows it (none: allowAll). Returns 0, or -1 with why
 * in err. */
int sqs_redrive_target_ok(const char *source, int source_fifo, const char *target,
                          const char *target_attrs, char *err, size_t errlen);

/* The dead-letter queue that stored attributes (JSON text; NULL: none) name into out; ""
 * when none. This function can't fail. */
void sqs_redrive_target_of(const char *stored, char out[JOB_QUEUE_MAX + 1]);

struct sqs_queue; /* sqs_attrs.h */

/* ListDeadLetterSourceQueues of queue q: the queues whose RedrivePolicy names it, among the
 * queues after NextToken (at most STORE_SQS_LIST_MAX of them looked at), at most MaxResults
 * (1..1000), with a NextToken when more matched. */
enum MHD_Result sqs_list_dead_letter_sources(struct request *rq, const cJSON *params,
                                             const struct sqs_queue *q);

#endif
