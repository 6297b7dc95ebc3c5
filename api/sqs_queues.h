/* The queue actions: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue, GetQueueAttributes,
 * SetQueueAttributes, PurgeQueue. A queue exists for SQS once CreateQueue made its row
 * (store_sqs.h), which keeps the attributes it was given (sqs_attrs.h); its messages are the
 * jobs of the jobq queue of the same name: the Approximate* counts are that queue's counts
 * (store_queues), and PurgeQueue (and DeleteQueue, after the row) deletes its queued jobs
 * (store_purge, batch after batch). */
#ifndef JOBQ_SQS_QUEUES_H
#define JOBQ_SQS_QUEUES_H

#include "sqs_attrs.h"
#include "sqs_params.h"

enum MHD_Result sqs_create_queue(struct request *rq, const cJSON *params,
                                 const struct sqs_queue *q);
enum MHD_Result sqs_get_queue_url(struct request *rq, const cJSON *params,
                                  const struct sqs_queue *q);
enum MHD_Result sqs_list_queues(struct request *rq, const cJSON *params, const struct sqs_queue *q);
enum MHD_Result sqs_delete_queue(struct request *rq, const cJSON *params,
                                 const struct sqs_queue *q);
enum MHD_Result sqs_get_queue_attributes(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q);
enum MHD_Result sqs_set_queue_attributes(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q);
enum MHD_Result sqs_purge_queue(struct request *rq, const cJSON *params, const struct sqs_queue *q);

#endif
