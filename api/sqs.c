/* The SQS front end's dispatch (see sqs.h). */
#include "sqs.h"

#include <string.h>
#include <strings.h>

#include "app.h"
#include "config.h"
#include "reply.h"
#include "sqs_lease.h"
#include "sqs_params.h"
#include "sqs_queues.h"
#include "sqs_receive.h"
#include "sqs_send.h"
#include "sqs_wire.h"

#define TARGET_PREFIX "AmazonSQS."

/* The actions: one row each; a NULL action answers UnsupportedOperation. */
static const struct {
    const char *name;
    sqs_action_fn run;
} actions[] = {
    {"CreateQueue", sqs_create_queue},
    {"GetQueueUrl", sqs_get_queue_url},
    {"ListQueues", sqs_list_queues},
    {"DeleteQueue", sqs_delete_queue},
    {"GetQueueAttributes", sqs_get_queue_attributes},
    {"SetQueueAttributes", NULL},
    {"PurgeQueue", sqs_purge_queue},
    {"SendMessage", sqs_send_message},
    {"SendMessageBatch", sqs_send_message_batch},
    {"ReceiveMessage", sqs_receive_message},
    {"DeleteMessage", sqs_delete_message},
    {"DeleteMessageBatch", sqs_delete_message_batch},
    {"ChangeMessageVisibility", sqs_change_visibility},
    {"ChangeMessageVisibilityBatch", sqs_change_visibility_batch},
    {"ListDeadLetterSourceQueues", NULL},
    {"AddPermission", NULL},
    {"RemovePermission", NULL},
    {"TagQueue", NULL},
    {"UntagQueue", NULL},
    {"ListQueueTags", NULL},
    {"StartMessageMoveTask", NULL},
    {"CancelMessageMoveTask", NULL},
    {"ListMessageMoveTasks", NULL},
};

/* 1 when the request's Content-Type is the JSON 1.0 protocol's (any parameters). */
static int json_protocol(struct request *rq)
{
    static const char type[] = "application/x-amz-json-1.0";
    const char *ct =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return 0;
    ct += strspn(ct, " \t");
    size_t n = strcspn(ct, "; \t");
    return n == sizeof type - 1 && strncasecmp(ct, type, n) == 0;
}

/* Read the action and its parameters, then run it. */
static enum MHD_Result start(struct request *rq)
{
    if (rq->too_large)
        return sqs_reply_error(rq, SQS_TOO_LARGE, "the request body is larger than %lld bytes",
                               (long long)rq->app->cfg->max_body_bytes);
    if (strcmp(rq->method, "POST") != 0)
        return sqs_reply_error(rq, SQS_INVALID_ACTION, "the SQS API takes POST requests only");
    const char *target = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Amz-Target");
    if (!json_protocol(rq) || !target)
        return sqs_reply_error(rq, SQS_UNSUPPORTED,
                               "jobq speaks the AWS JSON 1.0 protocol (X-Amz-Target and "
                               "application/x-amz-json-1.0) only, for now");
    if (strncmp(target, TARGET_PREFIX, sizeof TARGET_PREFIX - 1) != 0)
        return sqs_reply_error(rq, SQS_INVALID_ACTION, "unknown target %.64s", target);
    const char *name = target + sizeof TARGET_PREFIX - 1;
    size_t i = 0;
    while (i < sizeof actions / sizeof actions[0] && strcmp(actions[i].name, name) != 0)
        i++;
    if (i == sizeof actions / sizeof actions[0])
        return sqs_reply_error(rq, SQS_INVALID_ACTION, "unknown action %.64s", name);
    if (!actions[i].run)
        return sqs_reply_error(rq, SQS_UNSUPPORTED, "jobq does not support %s", name);
    cJSON *params = rq->body_len ? cJSON_ParseWithLengthOpts(rq->body, rq->body_len + 1, NULL, 1)
                                 : cJSON_CreateObject();
    if (!cJSON_IsObject(params)) {
        cJSON_Delete(params);
        return sqs_reply_error(rq, SQS_SERIALIZATION, NULL);
    }
    enum MHD_Result r = actions[i].run(rq, params);
    cJSON_Delete(params);
    return r;
}

enum MHD_Result sqs_serve(struct request *rq)
{
    const struct sqs_state *st = rq->state;
    if (st && !rq->answered)
        return st->resume(rq);
    return start(rq);
}
