/* DeleteMessage(Batch) and ChangeMessageVisibility(Batch): lease calls on the job a receipt
 * handle names ("ID.TOKEN": the job's id and the lease token of the receive that handed it
 * out). A delete is a complete (store_complete), a visibility change a heartbeat
 * (store_heartbeat) and a change to 0 a fail with retry at once (store_fail): each re-checks
 * the token, so a handle whose message was received again since is refused (fencing). The
 * entries of a batch run one store call after another, each answered on its own. */
#ifndef JOBQ_SQS_LEASE_H
#define JOBQ_SQS_LEASE_H

#include "sqs_params.h"

enum MHD_Result sqs_delete_message(struct request *rq, const cJSON *params,
                                   const struct sqs_queue *q);
enum MHD_Result sqs_delete_message_batch(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q);
enum MHD_Result sqs_change_visibility(struct request *rq, const cJSON *params,
                                      const struct sqs_queue *q);
enum MHD_Result sqs_change_visibility_batch(struct request *rq, const cJSON *params,
                                            const struct sqs_queue *q);

/* Write the receipt handle of job id with lease token into out (room for
 * SQS_HANDLE_MAX + 1 bytes). This function can't fail. */
#define SQS_HANDLE_MAX (20 + 1 + JOB_TOKEN_LEN)
void sqs_handle_format(int64_t id, const char *token, char out[SQS_HANDLE_MAX + 1]);

#endif
