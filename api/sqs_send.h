/* SendMessage and SendMessageBatch: each message a job enqueued in one store call
 * (store_enqueue), its DelaySeconds (or the queue's) the job's delay; see sqs_msg.h for the payload. */
#ifndef JOBQ_SQS_SEND_H
#define JOBQ_SQS_SEND_H

#include "sqs_attrs.h"
#include "sqs_params.h"

enum MHD_Result sqs_send_message(struct request *rq, const cJSON *params,
                                 const struct sqs_queue *q);
enum MHD_Result sqs_send_message_batch(struct request *rq, const cJSON *params,
                                       const struct sqs_queue *q);

#endif
