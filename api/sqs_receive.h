/* ReceiveMessage: a claim of the queue's jobs with its long poll (claim_poll.h, the native
 * claim's machinery): MaxNumberOfMessages is max_jobs, VisibilityTimeout the lease,
 * WaitTimeSeconds the wait; each message's receipt handle carries its lease token
 * (sqs_lease.h), ApproximateReceiveCount is the job's attempts. */
#ifndef JOBQ_SQS_RECEIVE_H
#define JOBQ_SQS_RECEIVE_H

#include "sqs_attrs.h"
#include "sqs_params.h"

enum MHD_Result sqs_receive_message(struct request *rq, const cJSON *params,
                                    const struct sqs_queue *q);

#endif
