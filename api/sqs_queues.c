/* The queue actions (see sqs_queues.h). */
#include "sqs_queues.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pending.h"
#include "reply.h"
#include "sqs_msg.h"
#include "sqs_wire.h"

#define LIST_MAX 1000
/* Purge batches one PurgeQueue runs at most (STORE_PURGE_BATCH jobs each). */
#define PURGE_ROUNDS 1000

/* The queue attributes and their values: the defaults of SQS, which jobq keeps (a count's
 * value is NULL: it comes from the queue's row), and whether CreateQueue may name it. */
enum { A_MESSAGES, A_NOT_VISIBLE, A_DELAYED, A_COUNTS, A_ARN = A_COUNTS };
static const struct {
    const char *name;
    const char *value;
    int settable;
} attrs[] = {
    [A_MESSAGES] = {"ApproximateNumberOfMessages", NULL, 0},
    [A_NOT_VISIBLE] = {"ApproximateNumberOfMessagesNotVisible", NULL, 0},
    [A_DELAYED] = {"ApproximateNumberOfMessagesDelayed", NULL, 0},
    [A_ARN] = {"QueueArn", NULL, 0},
    {"VisibilityTimeout", "30", 1},
    {"DelaySeconds", "0", 1},
    {"MessageRetentionPeriod", "345600", 1},
    {"ReceiveMessageWaitTimeSeconds", "0", 1},
    {"MaximumMessageSize", "262144", 1},
    {"SqsManagedSseEnabled", "false", 1},
    {"CreatedTimestamp", "0", 0},
    {"LastModifiedTimestamp", "0", 0},
};
#define NATTRS (sizeof attrs / sizeof attrs[0])

/* The index of attribute name, or -1. */
static int attr_find(const char *name)
{
    for (size_t i = 0; i < NATTRS; i++)
        if (strcmp(attrs[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The QueueName parameter into out. Returns 0, or -1 after answering. */
static int name_or_reply(struct request *rq, const cJSON *params, char out[JOB_QUEUE_MAX + 1])
{
    const char *name;
    if (sqs_param_string(rq, params, "QueueName", &name) != 0)
        return -1;
    if (!name) {
        sqs_reply_error(rq, SQS_MISSING_PARAMETER,
                        "The request must contain the parameter QueueName.");
        return -1;
    }
    if (!sqs_queue_name_ok(name)) {
        sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                        "Can only include alphanumeric characters, hyphens, or underscores. 1 to "
                        "80 in length");
        return -1;
    }
    snprintf(out, JOB_QUEUE_MAX + 1, "%s", name);
    return 0;
}

static enum MHD_Result reply_url(struct request *rq, const char *queue)
{
    char url[1024];
    sqs_queue_url(rq, queue, url, sizeof url);
    cJSON *root = cJSON_CreateObject();
    if (root && !cJSON_AddStringToObject(root, "QueueUrl", url)) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_create_queue(struct request *rq, const cJSON *params)
{
    char queue[JOB_QUEUE_MAX + 1];
    if (name_or_reply(rq, params, queue) != 0)
        return reply_result(rq);
    if (strlen(queue) > 5 && strcmp(queue + strlen(queue) - 5, ".fifo") == 0)
        return sqs_reply_error(rq, SQS_UNSUPPORTED, "jobq does not serve FIFO queues yet");
    const cJSON *given = cJSON_GetObjectItemCaseSensitive(params, "Attributes");
    if (given && !cJSON_IsObject(given))
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER, "Attributes must be a map");
    for (const cJSON *a = given ? given->child : NULL; a; a = a->next) {
        int i = attr_find(a->string);
        if (i < 0 || !attrs[i].settable)
            return sqs_reply_error(rq, SQS_INVALID_ATTR_NAME, "Unknown Attribute %.64s.",
                                   a->string);
        if (!cJSON_IsString(a) || strcmp(a->valuestring, attrs[i].value) != 0)
            return sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                                   "Invalid value for the parameter %s: jobq keeps the SQS "
                                   "default %s",
                                   a->string, attrs[i].value);
    }
    return reply_url(rq, queue);
}

enum MHD_Result sqs_get_queue_url(struct request *rq, const cJSON *params)
{
    char queue[JOB_QUEUE_MAX + 1];
    if (name_or_reply(rq, params, queue) != 0)
        return reply_result(rq);
    return reply_url(rq, queue);
}

/* ListQueues and GetQueueAttributes: a read of the queues' rows. */
struct queues_state {
    struct sqs_state head;
    struct queues_read q;
    char queue[JOB_QUEUE_MAX + 1]; /* GetQueueAttributes: the queue; ListQueues: the prefix */
    char after[JOB_QUEUE_MAX + 1]; /* ListQueues: the NextToken, "" for the start */
    int64_t max;                   /* ListQueues: MaxResults, 0 when not given */
    unsigned char want[NATTRS];    /* GetQueueAttributes: the attributes asked for */
};

static void queues_state_free(void *arg)
{
    struct queues_state *st = arg;
    if (st)
        queues_read_clear(&st->q);
    free(st);
}

static struct queues_state *queues_state_new(struct request *rq,
                                             enum MHD_Result (*resume)(struct request *rq))
{
    struct queues_state *st = sqs_state_new(rq, sizeof *st, resume, queues_state_free);
    if (st)
        queues_read_init(&st->q);
    return st;
}

static enum MHD_Result list_answer(struct request *rq)
{
    struct queues_state *st = rq->state;
    if (st->q.r.result != STORE_OK)
        return sqs_reply_store(rq, st->q.r.result);
    cJSON *root = cJSON_CreateObject();
    cJSON *urls = cJSON_CreateArray();
    size_t prefix = strlen(st->queue);
    int64_t max = st->max ? st->max : LIST_MAX;
    const char *last = NULL;
    int more = 0;
    for (size_t i = 0; root && urls && i < st->q.n; i++) {
        const char *name = st->q.rows[i].name;
        if (strncmp(name, st->queue, prefix) != 0 || strcmp(name, st->after) <= 0 ||
            !sqs_queue_name_ok(name))
            continue;
        if (cJSON_GetArraySize(urls) == max) {
            more = 1;
            break;
        }
        char url[1024];
        sqs_queue_url(rq, name, url, sizeof url);
        cJSON_AddItemToArray(urls, cJSON_CreateString(url));
        last = name;
    }
    if (cJSON_GetArraySize(urls) > 0)
        cJSON_AddItemToObject(root, "QueueUrls", urls);
    else
        cJSON_Delete(urls);
    if (more && st->max && last)
        cJSON_AddStringToObject(root, "NextToken", last);
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_list_queues(struct request *rq, const cJSON *params)
{
    struct queues_state *st = queues_state_new(rq, list_answer);
    if (!st)
        return reply_result(rq);
    const char *prefix, *token;
    if (sqs_param_string(rq, params, "QueueNamePrefix", &prefix) != 0 ||
        sqs_param_string(rq, params, "NextToken", &token) != 0 ||
        sqs_param_int(rq, params, "MaxResults", 0, 1, LIST_MAX, &st->max) != 0)
        return reply_result(rq);
    if ((prefix && strlen(prefix) > JOB_QUEUE_MAX) || (token && strlen(token) > JOB_QUEUE_MAX))
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                               "QueueNamePrefix or NextToken is too "
                               "long");
    snprintf(st->queue, sizeof st->queue, "%s", prefix ? prefix : "");
    snprintf(st->after, sizeof st->after, "%s", token ? token : "");
    return pending_read_submit(rq, &st->q.r);
}

static enum MHD_Result attributes_answer(struct request *rq)
{
    struct queues_state *st = rq->state;
    if (st->q.r.result != STORE_OK)
        return sqs_reply_store(rq, st->q.r.result);
    const struct queue_stats *row = NULL;
    for (size_t i = 0; i < st->q.n && !row; i++)
        if (strcmp(st->q.rows[i].name, st->queue) == 0)
            row = &st->q.rows[i];
    int64_t counts[A_COUNTS] = {0};
    if (row) {
        counts[A_MESSAGES] = row->count[JOB_QUEUED];
        counts[A_NOT_VISIBLE] = row->count[JOB_RUNNING];
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *out = cJSON_AddObjectToObject(root, "Attributes");
    for (size_t i = 0; out && i < NATTRS; i++) {
        if (!st->want[i])
            continue;
        char v[256];
        if (i < A_COUNTS)
            snprintf(v, sizeof v, "%" PRId64, counts[i]);
        else if (i == A_ARN)
            snprintf(v, sizeof v, "arn:aws:sqs:us-east-1:%s:%s", SQS_ACCOUNT, st->queue);
        else
            snprintf(v, sizeof v, "%s", attrs[i].value);
        if (!cJSON_AddStringToObject(out, attrs[i].name, v))
            out = NULL;
    }
    if (!out) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_get_queue_attributes(struct request *rq, const cJSON *params)
{
    struct queues_state *st = queues_state_new(rq, attributes_answer);
    if (!st)
        return reply_result(rq);
    if (sqs_queue_or_reply(rq, params, st->queue) != 0)
        return reply_result(rq);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(params, "AttributeNames");
    if (names && !cJSON_IsArray(names))
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER, "AttributeNames must be a list");
    for (const cJSON *a = names ? names->child : NULL; a; a = a->next) {
        const char *name = cJSON_GetStringValue(a);
        if (name && strcmp(name, "All") == 0) {
            memset(st->want, 1, sizeof st->want);
            continue;
        }
        int i = name ? attr_find(name) : -1;
        if (i < 0)
            return sqs_reply_error(rq, SQS_INVALID_ATTR_NAME, "Unknown Attribute %.64s.",
                                   name ? name : "");
        st->want[i] = 1;
    }
    return pending_read_submit(rq, &st->q.r);
}

/* PurgeQueue and DeleteQueue: store_purge of the queued jobs, batch after batch. */
struct purge_state {
    struct sqs_state head;
    struct pending p;
    char queue[JOB_QUEUE_MAX + 1];
    int rounds;
};

static enum MHD_Result purge_submit(struct request *rq, struct purge_state *st)
{
    st->p.call = (struct store_call){
        .kind = STORE_CALL_PURGE,
        .now = clock_now(),
        .purge = {.queue = st->queue, .status = JOB_QUEUED, .limit = STORE_PURGE_BATCH}};
    return pending_submit(rq, &st->p);
}

static enum MHD_Result purge_resume(struct request *rq)
{
    struct purge_state *st = rq->state;
    if (st->p.call.result != STORE_OK)
        return sqs_reply_store(rq, st->p.call.result);
    if (st->p.call.purge.deleted == STORE_PURGE_BATCH && ++st->rounds < PURGE_ROUNDS)
        return purge_submit(rq, st);
    return sqs_reply(rq, cJSON_CreateObject());
}

static enum MHD_Result purge_start(struct request *rq, const cJSON *params)
{
    struct purge_state *st = sqs_state_new(rq, sizeof *st, purge_resume, free);
    if (!st)
        return reply_result(rq);
    if (sqs_queue_or_reply(rq, params, st->queue) != 0)
        return reply_result(rq);
    return purge_submit(rq, st);
}

enum MHD_Result sqs_delete_queue(struct request *rq, const cJSON *params)
{
    return purge_start(rq, params);
}

enum MHD_Result sqs_purge_queue(struct request *rq, const cJSON *params)
{
    return purge_start(rq, params);
}
