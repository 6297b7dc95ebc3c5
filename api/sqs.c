/* The SQS front end's dispatch (see sqs.h). */
#include "sqs.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "clock.h"
#include "config.h"
#include "jsonin.h"
#include "pending.h"
#include "reply.h"
#include "sqs_auth.h"
#include "sqs_cache.h"
#include "sqs_lease.h"
#include "sqs_params.h"
#include "sqs_query.h"
#include "sqs_queues.h"
#include "sqs_receive.h"
#include "sqs_redrive.h"
#include "sqs_send.h"
#include "sqs_wire.h"
#include "store_sqs.h"

#define TARGET_PREFIX "AmazonSQS."

/* Which queue an action names, read before it runs. */
enum lookup {
    NONE,    /* none, or the action makes it */
    BY_URL,  /* QueueUrl */
    BY_NAME, /* QueueName */
};

/* The actions: one row each; a NULL action answers UnsupportedOperation. The access column
 * is the role a SigV4 key needs (sqs_auth.h), as the native routes': reads for any role,
 * sends for producers, the lease's actions for workers, the queue's shape for admins (the
 * default, 0, of a row that names none). */
static const struct {
    const char *name;
    sqs_action_fn run;
    enum lookup lookup;
    enum auth_access access;
} actions[] = {
    {"CreateQueue", sqs_create_queue, NONE, AUTH_ACCESS_ADMIN},
    {"GetQueueUrl", sqs_get_queue_url, BY_NAME, AUTH_ACCESS_READ},
    {"ListQueues", sqs_list_queues, NONE, AUTH_ACCESS_READ},
    {"DeleteQueue", sqs_delete_queue, BY_URL, AUTH_ACCESS_ADMIN},
    {"GetQueueAttributes", sqs_get_queue_attributes, BY_URL, AUTH_ACCESS_READ},
    {"SetQueueAttributes", sqs_set_queue_attributes, BY_URL, AUTH_ACCESS_ADMIN},
    {"PurgeQueue", sqs_purge_queue, BY_URL, AUTH_ACCESS_ADMIN},
    {"SendMessage", sqs_send_message, BY_URL, AUTH_ACCESS_PRODUCE},
    {"SendMessageBatch", sqs_send_message_batch, BY_URL, AUTH_ACCESS_PRODUCE},
    {"ReceiveMessage", sqs_receive_message, BY_URL, AUTH_ACCESS_WORK},
    {"DeleteMessage", sqs_delete_message, BY_URL, AUTH_ACCESS_WORK},
    {"DeleteMessageBatch", sqs_delete_message_batch, BY_URL, AUTH_ACCESS_WORK},
    {"ChangeMessageVisibility", sqs_change_visibility, BY_URL, AUTH_ACCESS_WORK},
    {"ChangeMessageVisibilityBatch", sqs_change_visibility_batch, BY_URL, AUTH_ACCESS_WORK},
    {"ListDeadLetterSourceQueues", sqs_list_dead_letter_sources, BY_URL, AUTH_ACCESS_READ},
    {"AddPermission", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"RemovePermission", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"TagQueue", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"UntagQueue", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"ListQueueTags", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"StartMessageMoveTask", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"CancelMessageMoveTask", NULL, NONE, AUTH_ACCESS_ADMIN},
    {"ListMessageMoveTasks", NULL, NONE, AUTH_ACCESS_ADMIN},
};

/* An action waiting for the read of its queue's row: its parameters (owned) until it runs. */
struct lookup_state {
    struct sqs_state head;
    struct pending_read r;
    size_t action;
    cJSON *params;
    char queue[JOB_QUEUE_MAX + 1];
    struct store_sqs_queue *rows;
    size_t n;
    int64_t started_ms; /* clock_mono_ms() before the read, for the cache (sqs_cache.h) */
    char stored[SQS_CACHE_STORED_MAX + 1]; /* a cached row's attributes */
};

static void lookup_state_free(void *arg)
{
    struct lookup_state *st = arg;
    if (!st)
        return;
    cJSON_Delete(st->params);
    store_sqs_queues_free(st->rows, st->n);
    free(st);
}

static enum store_result lookup_read(struct pending_read *r, struct store *s)
{
    struct lookup_state *st = (struct lookup_state *)((char *)r - offsetof(struct lookup_state, r));
    return store_sqs_queues(s, st->queue, 1, "", 1, &st->rows, &st->n);
}

/* 1 when action i may use a cached copy of its queue's row: the message actions, whose
 * rows a second's delay of another process's change cannot harm (sqs_cache.h). */
static int cacheable(size_t i)
{
    return actions[i].access == AUTH_ACCESS_PRODUCE || actions[i].access == AUTH_ACCESS_WORK;
}

/* Run the action of st with q (st's state is dropped first: the action sets its own). */
static enum MHD_Result lookup_run(struct request *rq, struct lookup_state *st,
                                  const struct sqs_queue *q)
{
    rq->state = NULL;
    rq->state_free = NULL;
    enum MHD_Result r = actions[st->action].run(rq, st->params, q);
    lookup_state_free(st);
    return r;
}

/* The queue's row is read: run the action with it (its state replaces this one). */
static enum MHD_Result lookup_done(struct request *rq)
{
    struct lookup_state *st = rq->state;
    if (st->r.result != STORE_OK)
        return sqs_reply_store(rq, st->r.result);
    if (st->n == 0)
        return sqs_reply_error(rq, SQS_NO_QUEUE, NULL);
    struct sqs_queue q;
    const struct store_sqs_queue *row = &st->rows[0];
    sqs_queue_read(&q, row->name, row->attributes, row->created_at, row->modified_at);
    if (cacheable(st->action))
        sqs_cache_put(rq->app->sqs_cache, &q, st->started_ms);
    return lookup_run(rq, st, &q);
}

/* Read the queue that action i names, then run it (lookup_done). Consumes params. */
static enum MHD_Result lookup_start(struct request *rq, size_t i, cJSON *params)
{
    struct lookup_state *st = sqs_state_new(rq, sizeof *st, lookup_done, lookup_state_free);
    if (!st) {
        cJSON_Delete(params);
        return reply_result(rq);
    }
    st->params = params;
    st->action = i;
    st->r.read = lookup_read;
    int bad = actions[i].lookup == BY_URL ? sqs_queue_or_reply(rq, params, st->queue)
                                          : sqs_queue_name_or_reply(rq, params, st->queue);
    if (bad)
        return reply_result(rq);
    st->started_ms = clock_mono_ms();
    struct sqs_queue q;
    if (cacheable(i) &&
        sqs_cache_get(rq->app->sqs_cache, st->queue, st->started_ms, &q, st->stored))
        return lookup_run(rq, st, &q);
    return pending_read_submit(rq, &st->r);
}

/* 1 when the request's Content-Type is `type` (any parameters, any case). */
static int content_type_is(struct request *rq, const char *type)
{
    const char *ct =
        MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return 0;
    ct += strspn(ct, " \t");
    size_t n = strcspn(ct, "; \t");
    return n == strlen(type) && strncasecmp(ct, type, n) == 0;
}

/* The action named `name`: its index, or the table's length when there is none. */
static size_t action_find(const char *name)
{
    size_t i = 0;
    while (i < sizeof actions / sizeof actions[0] && strcmp(actions[i].name, name) != 0)
        i++;
    return i;
}

/* Read the request's action and parameters, by its protocol: *params is a new object and
 * *i the action's index. Returns 0, or -1 after answering. */
static int read_request(struct request *rq, size_t *i, cJSON **params)
{
    const char *name = NULL;
    *params = NULL;
    if (content_type_is(rq, "application/x-www-form-urlencoded")) {
        rq->sqs_query = 1; /* errors too are XML from here on */
        *params = sqs_query_params(rq->body ? rq->body : "", rq->body_len);
        if (!*params) {
            sqs_reply_error(rq, SQS_SERIALIZATION, "the form is malformed");
            return -1;
        }
        name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(*params, "Action"));
        if (!name) {
            sqs_reply_error(rq, SQS_MISSING_PARAMETER, "the form names no Action");
            return -1;
        }
    } else {
        const char *target = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "X-Amz-Target");
        if (!content_type_is(rq, "application/x-amz-json-1.0") || !target) {
            sqs_reply_error(rq, SQS_INVALID_ACTION,
                            "jobq speaks the AWS JSON 1.0 protocol (X-Amz-Target and "
                            "application/x-amz-json-1.0) and the query protocol "
                            "(application/x-www-form-urlencoded)");
            return -1;
        }
        if (strncmp(target, TARGET_PREFIX, sizeof TARGET_PREFIX - 1) != 0) {
            sqs_reply_error(rq, SQS_INVALID_ACTION, "unknown target %.64s", target);
            return -1;
        }
        name = target + sizeof TARGET_PREFIX - 1;
    }
    *i = action_find(name);
    if (*i == sizeof actions / sizeof actions[0]) {
        sqs_reply_error(rq, SQS_INVALID_ACTION, "unknown action %.64s", name);
        return -1;
    }
    rq->sqs_action = actions[*i].name;
    if (!sqs_auth_allows_or_reply(rq, actions[*i].access, actions[*i].name))
        return -1;
    if (!actions[*i].run) {
        sqs_reply_error(rq, SQS_UNSUPPORTED, "jobq does not support %s", actions[*i].name);
        return -1;
    }
    if (rq->sqs_query)
        return 0;
    /* Strict JSON (valid UTF-8, bounded depth, nothing after the value), and no U+0000,
     * which a C string would silently cut a body at. */
    if (rq->body_len && json_validate(rq->body, rq->body_len, NULL) != JV_OK) {
        sqs_reply_error(rq, SQS_SERIALIZATION, NULL);
        return -1;
    }
    if (rq->body_len && json_has_nul((struct jspan){rq->body, rq->body_len})) {
        sqs_reply_error(rq, SQS_INVALID_CONTENTS, "the request holds the character U+0000");
        return -1;
    }
    *params = rq->body_len ? cJSON_ParseWithLengthOpts(rq->body, rq->body_len + 1, NULL, 1)
                           : cJSON_CreateObject();
    if (!cJSON_IsObject(*params)) {
        sqs_reply_error(rq, SQS_SERIALIZATION, NULL);
        return -1;
    }
    return 0;
}

/* Read the action and its parameters, then run it. */
static enum MHD_Result start(struct request *rq)
{
    rq->sqs_query = content_type_is(rq, "application/x-www-form-urlencoded");
    if (rq->too_large)
        return sqs_reply_error(rq, SQS_TOO_LARGE, "the request body is larger than %lld bytes",
                               (long long)rq->app->cfg->max_body_bytes);
    /* Authentication before anything else is read from the body (sqs_auth.h). */
    if (sqs_auth_check_or_reply(rq) != 0)
        return reply_result(rq);
    if (strcmp(rq->method, "POST") != 0)
        return sqs_reply_error(rq, SQS_INVALID_ACTION, "the SQS API takes POST requests only");
    size_t i;
    cJSON *params;
    if (read_request(rq, &i, &params) != 0) {
        cJSON_Delete(params);
        return reply_result(rq);
    }
    if (actions[i].lookup != NONE)
        return lookup_start(rq, i, params);
    enum MHD_Result r = actions[i].run(rq, params, NULL);
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
