/* The queue actions: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue, GetQueueAttributes,
 * PurgeQueue. An SQS queue is the jobq queue of the same name: every valid name exists (a
 * jobq queue needs no creation), ListQueues lists the queues that hold a job or are paused
 * (store_queues), the Approximate* counts are the queue's counts, and PurgeQueue (and
 * DeleteQueue) delete its queued jobs (store_purge, batch after batch). Queue attributes
 * other than the counts keep their SQS defaults: a CreateQueue that asks for another value
 * is refused (InvalidAttributeValue). */
#ifndef JOBQ_SQS_QUEUES_H
#define JOBQ_SQS_QUEUES_H

#include "sqs_params.h"

enum MHD_Result sqs_create_queue(struct request *rq, const cJSON *params);
enum MHD_Result sqs_get_queue_url(struct request *rq, const cJSON *params);
enum MHD_Result sqs_list_queues(struct request *rq, const cJSON *params);
enum MHD_Result sqs_delete_queue(struct request *rq, const cJSON *params);
enum MHD_Result sqs_get_queue_attributes(struct request *rq, const cJSON *params);
enum MHD_Result sqs_purge_queue(struct request *rq, const cJSON *params);

#endif
