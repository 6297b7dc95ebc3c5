/* The queue actions (see sqs_queues.h). */
#include "sqs_queues.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "pending.h"
#include "reply.h"
#include "sqs_cache.h"
#include "sqs_msg.h"
#include "sqs_redrive.h"
#include "sqs_wire.h"
#include "store_sqs.h"

/* Purge batches one PurgeQueue runs at most (STORE_PURGE_BATCH jobs each). */
#define PURGE_ROUNDS 1000

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

/* The Attributes parameter, checked. Returns 0 with *out set (NULL: none given), or -1 after
 * answering. */
static int attributes_or_reply(struct request *rq, const cJSON *params, const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(params, "Attributes");
    char err[256];
    int bad_name = 0;
    if (sqs_attrs_check(*out, &bad_name, err, sizeof err) == 0)
        return 0;
    sqs_reply_error(rq, bad_name ? SQS_INVALID_ATTR_NAME : SQS_INVALID_ATTR_VALUE, "%s", err);
    return -1;
}

/* The FIFO rules of the attributes given (sqs_attrs_check_fifo). Returns 0, or -1 after
 * answering. */
static int fifo_or_reply(struct request *rq, const cJSON *attrs, const char *queue, int create,
                         int fifo)
{
    char err[256];
    enum sqs_fifo_check c = sqs_attrs_check_fifo(attrs, queue, create, fifo, err, sizeof err);
    if (c == SQS_FIFO_OK)
        return 0;
    sqs_reply_error(rq, c == SQS_FIFO_BAD_NAME ? SQS_INVALID_ATTR_NAME : SQS_INVALID_PARAMETER,
                    "%s", err);
    return -1;
}

/* CreateQueue and SetQueueAttributes: one put of the queue's row, after a read of the
 * RedrivePolicy's target when one is given (it must exist and take this queue). */
struct put_state {
    struct sqs_state head;
    struct pending p;
    char queue[JOB_QUEUE_MAX + 1];
    char *attributes; /* the attributes given, compact JSON text; owned */
    struct store_sqs_queue row;
    int create, fifo;      /* the put's kind; the queue is FIFO */
    struct pending_read r; /* the read of the target */
    char target[JOB_QUEUE_MAX + 1];
    struct store_sqs_queue *rows; /* the target's row, when it exists */
    size_t n;
};

static void put_state_free(void *arg)
{
    struct put_state *st = arg;
    if (!st)
        return;
    free(st->attributes);
    store_sqs_queue_clear(&st->row);
    store_sqs_queues_free(st->rows, st->n);
    free(st);
}

static enum MHD_Result put_answer(struct request *rq)
{
    struct put_state *st = rq->state;
    enum store_result r = st->p.call.result;
    int create = st->p.call.sqs_queue_put.create;
    if (r == STORE_EXISTS) {
        cJSON *given = cJSON_Parse(st->attributes);
        int same = sqs_attrs_match(given, st->row.attributes);
        cJSON_Delete(given);
        if (!same)
            return sqs_reply_error(rq, SQS_QUEUE_EXISTS, NULL);
        r = STORE_OK;
    }
    if (r == STORE_NOT_FOUND)
        return sqs_reply_error(rq, SQS_NO_QUEUE, NULL);
    if (r != STORE_OK)
        return sqs_reply_store(rq, r);
    sqs_cache_forget(rq->app->sqs_cache, st->queue, clock_mono_ms());
    return create ? reply_url(rq, st->queue) : sqs_reply(rq, cJSON_CreateObject());
}

static enum MHD_Result put_submit(struct request *rq, struct put_state *st)
{
    st->head.resume = put_answer;
    st->p.call = (struct store_call){.kind = STORE_CALL_SQS_QUEUE_PUT,
                                     .now = clock_now(),
                                     .sqs_queue_put = {.name = st->queue,
                                                       .attributes = st->attributes,
                                                       .create = st->create,
                                                       .out = &st->row}};
    return pending_submit(rq, &st->p);
}

static enum store_result target_read(struct pending_read *r, struct store *s)
{
    struct put_state *st = (struct put_state *)((char *)r - offsetof(struct put_state, r));
    return store_sqs_queues(s, st->target, 1, "", 1, &st->rows, &st->n);
}

/* The target was read: it must exist and take this queue (sqs_redrive_target_ok). */
static enum MHD_Result target_checked(struct request *rq)
{
    struct put_state *st = rq->state;
    char err[256];
    if (st->r.result != STORE_OK)
        return sqs_reply_store(rq, st->r.result);
    if (st->n == 0)
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                               "Value for parameter RedrivePolicy is invalid. Reason: Dead letter "
                               "target does not exist.");
    if (sqs_redrive_target_ok(st->queue, st->fifo, st->target, st->rows[0].attributes, err,
                              sizeof err) != 0)
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER, "%s", err);
    return put_submit(rq, st);
}

static enum MHD_Result put_start(struct request *rq, const char *queue, const cJSON *attrs,
                                 int create, int fifo)
{
    struct put_state *st = sqs_state_new(rq, sizeof *st, put_answer, put_state_free);
    if (!st)
        return reply_result(rq);
    snprintf(st->queue, sizeof st->queue, "%s", queue);
    st->create = create;
    st->fifo = fifo;
    st->attributes = attrs ? cJSON_PrintUnformatted(attrs) : strdup("{}");
    if (!st->attributes)
        return sqs_reply_error(rq, SQS_INTERNAL, "out of memory");
    sqs_redrive_target_of(st->attributes, st->target);
    if (!st->target[0])
        return put_submit(rq, st);
    st->head.resume = target_checked;
    st->r.read = target_read;
    return pending_read_submit(rq, &st->r);
}

enum MHD_Result sqs_create_queue(struct request *rq, const cJSON *params, const struct sqs_queue *q)
{
    (void)q;
    char queue[JOB_QUEUE_MAX + 1];
    const cJSON *attrs;
    if (sqs_queue_name_or_reply(rq, params, queue) != 0 ||
        attributes_or_reply(rq, params, &attrs) != 0)
        return reply_result(rq);
    if (fifo_or_reply(rq, attrs, queue, 1, 0) != 0)
        return reply_result(rq);
    const char *fifo = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(attrs, "FifoQueue"));
    return put_start(rq, queue, attrs, 1, fifo && strcmp(fifo, "true") == 0);
}

enum MHD_Result sqs_set_queue_attributes(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q)
{
    const cJSON *attrs;
    if (attributes_or_reply(rq, params, &attrs) != 0)
        return reply_result(rq);
    if (!attrs)
        return sqs_reply_error(rq, SQS_MISSING_PARAMETER,
                               "The request must contain the parameter Attributes.");
    if (fifo_or_reply(rq, attrs, q->name, 0, q->fifo) != 0)
        return reply_result(rq);
    return put_start(rq, q->name, attrs, 0, q->fifo);
}

enum MHD_Result sqs_get_queue_url(struct request *rq, const cJSON *params,
                                  const struct sqs_queue *q)
{
    (void)params;
    return reply_url(rq, q->name);
}

/* ListQueues: a read of the rows. */
struct list_state {
    struct sqs_state head;
    struct pending_read r;
    char prefix[JOB_QUEUE_MAX + 1];
    char after[JOB_QUEUE_MAX + 1]; /* the NextToken, "" for the start */
    int64_t max;                   /* MaxResults, 0 when not given */
    struct store_sqs_queue *rows;
    size_t n;
};

static void list_state_free(void *arg)
{
    struct list_state *st = arg;
    if (st)
        store_sqs_queues_free(st->rows, st->n);
    free(st);
}

static enum store_result list_read(struct pending_read *r, struct store *s)
{
    struct list_state *st = (struct list_state *)((char *)r - offsetof(struct list_state, r));
    int limit = st->max ? (int)st->max + 1 : STORE_SQS_LIST_MAX;
    return store_sqs_queues(s, st->prefix, 0, st->after, limit, &st->rows, &st->n);
}

static enum MHD_Result list_answer(struct request *rq)
{
    struct list_state *st = rq->state;
    if (st->r.result != STORE_OK)
        return sqs_reply_store(rq, st->r.result);
    cJSON *root = cJSON_CreateObject();
    cJSON *urls = cJSON_CreateArray();
    size_t shown = st->max && st->n > (size_t)st->max ? (size_t)st->max : st->n;
    for (size_t i = 0; root && urls && i < shown; i++) {
        char url[1024];
        sqs_queue_url(rq, st->rows[i].name, url, sizeof url);
        cJSON_AddItemToArray(urls, cJSON_CreateString(url));
    }
    if (shown > 0)
        cJSON_AddItemToObject(root, "QueueUrls", urls);
    else
        cJSON_Delete(urls);
    if (shown < st->n)
        cJSON_AddStringToObject(root, "NextToken", st->rows[shown - 1].name);
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_list_queues(struct request *rq, const cJSON *params, const struct sqs_queue *q)
{
    (void)q;
    struct list_state *st = sqs_state_new(rq, sizeof *st, list_answer, list_state_free);
    if (!st)
        return reply_result(rq);
    st->r.read = list_read;
    const char *prefix, *token;
    if (sqs_param_string(rq, params, "QueueNamePrefix", &prefix) != 0 ||
        sqs_param_string(rq, params, "NextToken", &token) != 0 ||
        sqs_param_int(rq, params, "MaxResults", 0, 1, STORE_SQS_LIST_MAX - 1, &st->max) != 0)
        return reply_result(rq);
    if ((prefix && strlen(prefix) > JOB_QUEUE_MAX) || (token && strlen(token) > JOB_QUEUE_MAX))
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                               "QueueNamePrefix or NextToken is too long");
    snprintf(st->prefix, sizeof st->prefix, "%s", prefix ? prefix : "");
    snprintf(st->after, sizeof st->after, "%s", token ? token : "");
    return pending_read_submit(rq, &st->r);
}

/* GetQueueAttributes: a read of the queues' counts. */
struct attributes_state {
    struct sqs_state head;
    struct queues_read q;
    struct sqs_queue queue;
    char *stored; /* queue.stored's copy, owned */
    unsigned char *want;
};

static void attributes_state_free(void *arg)
{
    struct attributes_state *st = arg;
    if (!st)
        return;
    queues_read_clear(&st->q);
    free(st->stored);
    free(st->want);
    free(st);
}

static enum MHD_Result attributes_answer(struct request *rq)
{
    struct attributes_state *st = rq->state;
    if (st->q.r.result != STORE_OK)
        return sqs_reply_store(rq, st->q.r.result);
    const struct queue_stats *row = NULL;
    for (size_t i = 0; i < st->q.n && !row; i++)
        if (strcmp(st->q.rows[i].name, st->queue.name) == 0)
            row = &st->q.rows[i];
    int64_t counts[3] = {row ? row->count[JOB_QUEUED] : 0, row ? row->count[JOB_RUNNING] : 0, 0};
    cJSON *root = cJSON_CreateObject();
    cJSON *out = cJSON_AddObjectToObject(root, "Attributes");
    for (size_t i = 0; out && i < sqs_attr_count(); i++) {
        char v[4096];
        if (!st->want[i])
            continue;
        if (i < 3)
            snprintf(v, sizeof v, "%" PRId64, counts[i]);
        else if (sqs_attr_value(&st->queue, i, v, sizeof v) != 0)
            continue;
        if (!cJSON_AddStringToObject(out, sqs_attr_name(i), v))
            out = NULL;
    }
    if (!out) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_get_queue_attributes(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q)
{
    struct attributes_state *st =
        sqs_state_new(rq, sizeof *st, attributes_answer, attributes_state_free);
    if (!st)
        return reply_result(rq);
    queues_read_init(&st->q);
    st->queue = *q;
    st->stored = strdup(q->stored ? q->stored : "{}");
    st->want = calloc(sqs_attr_count(), 1);
    if (!st->stored || !st->want)
        return sqs_reply_error(rq, SQS_INTERNAL, "out of memory");
    st->queue.stored = st->stored;
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(params, "AttributeNames");
    if (names && !cJSON_IsArray(names))
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER, "AttributeNames must be a list");
    for (const cJSON *a = names ? names->child : NULL; a; a = a->next) {
        const char *name = cJSON_GetStringValue(a);
        if (name && strcmp(name, "All") == 0) {
            memset(st->want, 1, sqs_attr_count());
            continue;
        }
        int i = sqs_attr_find(name);
        if (i < 0)
            return sqs_reply_error(rq, SQS_INVALID_ATTR_NAME, "Unknown Attribute %.64s.",
                                   name ? name : "");
        st->want[i] = 1;
    }
    return pending_read_submit(rq, &st->q.r);
}

/* PurgeQueue and DeleteQueue (its row first): store_purge of the queued jobs, batch after
 * batch. */
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
    enum store_result r = st->p.call.result;
    if (st->p.call.kind == STORE_CALL_SQS_QUEUE_DELETE && r == STORE_NOT_FOUND)
        return sqs_reply_error(rq, SQS_NO_QUEUE, NULL);
    if (r != STORE_OK)
        return sqs_reply_store(rq, r);
    if (st->p.call.kind == STORE_CALL_SQS_QUEUE_DELETE)
        sqs_cache_forget(rq->app->sqs_cache, st->queue, clock_mono_ms());
    if (st->p.call.kind == STORE_CALL_SQS_QUEUE_DELETE ||
        (st->p.call.purge.deleted == STORE_PURGE_BATCH && ++st->rounds < PURGE_ROUNDS))
        return purge_submit(rq, st);
    return sqs_reply(rq, cJSON_CreateObject());
}

static enum MHD_Result purge_start(struct request *rq, const struct sqs_queue *q, int delete_row)
{
    struct purge_state *st = sqs_state_new(rq, sizeof *st, purge_resume, free);
    if (!st)
        return reply_result(rq);
    snprintf(st->queue, sizeof st->queue, "%s", q->name);
    if (!delete_row)
        return purge_submit(rq, st);
    st->p.call = (struct store_call){.kind = STORE_CALL_SQS_QUEUE_DELETE,
                                     .now = clock_now(),
                                     .sqs_queue_delete = {.name = st->queue}};
    return pending_submit(rq, &st->p);
}

enum MHD_Result sqs_delete_queue(struct request *rq, const cJSON *params, const struct sqs_queue *q)
{
    (void)params;
    return purge_start(rq, q, 1);
}

enum MHD_Result sqs_purge_queue(struct request *rq, const cJSON *params, const struct sqs_queue *q)
{
    (void)params;
    return purge_start(rq, q, 0);
}
