/* SendMessage and SendMessageBatch (see sqs_send.h). */
#include "sqs_send.h"
#include "sha256.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "limit.h"
#include "pending.h"
#include "reply.h"
#include "sqs_msg.h"
#include "sqs_wire.h"

#define SQS_DELAY_MAX 900

/* One message of a send. */
struct send_entry {
    char id[81];      /* the batch entry's Id ("" for SendMessage) */
    enum sqs_err err; /* refused before the store call: its error, else SQS_ERR_COUNT */
    char msg[256];    /* its message */
    char md5_body[33];
    char md5_attrs[33]; /* "" when it has no attributes */
    char *payload;      /* owned */
    size_t spec;        /* its spec, when not refused */
    /* A FIFO queue's message: its MessageGroupId, MessageDeduplicationId (given, or the
     * body's SHA-256) and the group's concurrency key (sqs_fifo_key); "" otherwise. */
    char group[SQS_FIFO_ID_MAX + 1];
    char dedup[SQS_FIFO_ID_MAX + 1];
    char ckey[LIMIT_KEY_MAX + 1];
};

struct send_state {
    struct sqs_state head;
    struct pending p;
    char queue[JOB_QUEUE_MAX + 1];
    int batch;
    int n;
    struct send_entry e[SQS_BATCH_MAX];
    struct job_spec specs[SQS_BATCH_MAX];
    struct job out[SQS_BATCH_MAX];
    int created[SQS_BATCH_MAX];
    size_t nspecs;
};

static void send_state_free(void *arg)
{
    struct send_state *st = arg;
    if (!st)
        return;
    for (int i = 0; i < st->n; i++)
        free(st->e[i].payload);
    for (size_t i = 0; i < st->nspecs; i++)
        job_clear(&st->out[i]);
    free(st);
}

/* 1 when id (NULL: absent) is a valid MessageGroupId or MessageDeduplicationId: 1-128 of
 * A-Z a-z 0-9 and ASCII punctuation. */
static int fifo_id_ok(const char *id)
{
    size_t n = strlen(id);
    for (size_t i = 0; i < n; i++)
        if (id[i] <= ' ' || id[i] > '~')
            return 0;
    return n >= 1 && n <= SQS_FIFO_ID_MAX;
}

/* The string parameter `name` of message m (NULL when absent) into *out. Returns 0, or -1
 * with e->err and e->msg set when present but not a valid FIFO id. */
static int fifo_id(struct send_entry *e, const cJSON *m, const char *name, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, name);
    *out = cJSON_GetStringValue(v);
    if (!v || cJSON_IsNull(v) || (*out && fifo_id_ok(*out)))
        return 0;
    e->err = SQS_INVALID_PARAMETER;
    snprintf(e->msg, sizeof e->msg,
             "Value for parameter %s is invalid. Reason: it must be 1 to %d characters of "
             "alphanumerics and punctuation.",
             name, SQS_FIFO_ID_MAX);
    return -1;
}

/* The FIFO parameters of message m with body (blen bytes) into e: on a FIFO queue a
 * MessageGroupId is required, a MessageDeduplicationId too unless the queue deduplicates by
 * content (the body's SHA-256), and a DelaySeconds is refused; on a standard queue neither id
 * may be given. Returns 0, or -1 with e->err and e->msg set. */
static int read_fifo(const struct sqs_queue *q, struct send_entry *e, const cJSON *m,
                     const char *body, size_t blen)
{
    const char *group, *dedup;
    if (fifo_id(e, m, "MessageGroupId", &group) != 0 ||
        fifo_id(e, m, "MessageDeduplicationId", &dedup) != 0)
        return -1;
    e->err = SQS_INVALID_PARAMETER;
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(m, "DelaySeconds");
    if (!q->fifo && (group || dedup)) {
        snprintf(e->msg, sizeof e->msg,
                 "The request include parameter %s that is not valid for this queue type.",
                 group ? "MessageGroupId" : "MessageDeduplicationId");
        return -1;
    }
    if (!q->fifo)
        return 0;
    if (delay && !cJSON_IsNull(delay)) {
        snprintf(e->msg, sizeof e->msg,
                 "Value for parameter DelaySeconds is invalid. Reason: The request include "
                 "parameter that is not valid for this queue type.");
        return -1;
    }
    if (!group) {
        e->err = SQS_MISSING_PARAMETER;
        snprintf(e->msg, sizeof e->msg, "The request must contain the parameter MessageGroupId.");
        return -1;
    }
    if (!dedup && !q->dedup_by_content) {
        snprintf(e->msg, sizeof e->msg,
                 "The queue should either have ContentBasedDeduplication enabled or "
                 "MessageDeduplicationId provided explicitly");
        return -1;
    }
    snprintf(e->group, sizeof e->group, "%s", group);
    if (dedup)
        snprintf(e->dedup, sizeof e->dedup, "%s", dedup);
    else
        sha256_hex_of(body, blen, e->dedup);
    sqs_fifo_key(q->name, group, e->ckey);
    return 0;
}

/* Read one message (a SendMessage's parameters or a batch entry) into e and, when it is
 * valid, a spec. *bytes adds its size. Returns 0, or -1 with e->err and e->msg set. */
static int read_entry(struct send_state *st, const struct sqs_queue *q, struct send_entry *e,
                      const cJSON *m, size_t *bytes)
{
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(m, "MessageBody");
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(m, "DelaySeconds");
    const cJSON *attrs = cJSON_GetObjectItemCaseSensitive(m, "MessageAttributes");
    e->err = SQS_INVALID_PARAMETER;
    if (!body) {
        e->err = SQS_MISSING_PARAMETER;
        snprintf(e->msg, sizeof e->msg, "The request must contain the parameter MessageBody.");
        return -1;
    }
    size_t blen = cJSON_IsString(body) ? strlen(body->valuestring) : 0;
    if (blen == 0) {
        snprintf(e->msg, sizeof e->msg, "The request must contain the parameter MessageBody.");
        e->err = SQS_MISSING_PARAMETER;
        return -1;
    }
    if (!sqs_body_ok(body->valuestring, blen)) {
        e->err = SQS_INVALID_CONTENTS;
        snprintf(e->msg, sizeof e->msg, "Invalid characters found.");
        return -1;
    }
    if (read_fifo(q, e, m, body->valuestring, blen) != 0)
        return -1;
    e->err = SQS_INVALID_PARAMETER;
    int64_t d = q->delay;
    if (delay && !cJSON_IsNull(delay)) {
        double v = cJSON_IsNumber(delay) ? delay->valuedouble : -1;
        if (cJSON_IsString(delay))
            v = strtod(delay->valuestring, NULL);
        if (!(v >= 0 && v <= SQS_DELAY_MAX) || v != (double)(int64_t)v) {
            snprintf(e->msg, sizeof e->msg,
                     "Value %s for parameter DelaySeconds is invalid. Reason: DelaySeconds must "
                     "be >= 0 and <= %d.",
                     cJSON_IsString(delay) ? delay->valuestring : "given", SQS_DELAY_MAX);
            return -1;
        }
        d = (int64_t)v;
    }
    size_t size = blen;
    if (sqs_msg_attrs_check(attrs, &size, e->msg, sizeof e->msg) != 0)
        return -1;
    if ((int64_t)size > q->max_size) {
        snprintf(e->msg, sizeof e->msg,
                 "One or more parameters are invalid. Reason: Message must be shorter than "
                 "%lld bytes.",
                 (long long)q->max_size);
        return -1;
    }
    *bytes += size;
    sqs_md5_hex(body->valuestring, blen, e->md5_body);
    if (sqs_msg_attrs_md5(attrs, e->md5_attrs) != 0)
        e->md5_attrs[0] = '\0';
    e->payload = sqs_payload_new(body->valuestring, attrs, q->fifo ? e->group : NULL,
                                 q->fifo ? e->dedup : NULL);
    if (!e->payload) {
        e->err = SQS_INTERNAL;
        snprintf(e->msg, sizeof e->msg, "out of memory");
        return -1;
    }
    e->err = SQS_ERR_COUNT;
    e->spec = st->nspecs++;
    st->specs[e->spec] = (struct job_spec){
        .queue = st->queue,
        .payload = e->payload,
        .run_at = JOB_NONE,
        .delay = d,
        .max_attempts = JOB_ATTEMPTS_MAX,
        .max_runtime_seconds = JOB_NONE,
    };
    if (q->fifo) {
        struct job_spec *sp = &st->specs[e->spec];
        sp->concurrency_key = e->ckey;
        sp->dedup_key = e->dedup;
        sp->dedup_mode = DEDUP_WINDOW;
        sp->dedup_seconds = SQS_DEDUP_SECONDS;
    }
    return 0;
}

/* Add the digests and MessageId of a sent message to obj. Returns 0, or -1 (out of memory). */
static int add_sent(cJSON *obj, const struct send_entry *e, const struct job *j)
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, j->id);
    if (!cJSON_AddStringToObject(obj, "MD5OfMessageBody", e->md5_body) ||
        !cJSON_AddStringToObject(obj, "MessageId", id))
        return -1;
    if (e->md5_attrs[0] && !cJSON_AddStringToObject(obj, "MD5OfMessageAttributes", e->md5_attrs))
        return -1;
    char seq[SQS_SEQUENCE_LEN + 1];
    sqs_sequence_number(j->id, seq);
    if (e->group[0] && !cJSON_AddStringToObject(obj, "SequenceNumber", seq))
        return -1;
    return 0;
}

/* The batch answer: Successful and Failed entries. */
static cJSON *batch_answer(const struct send_state *st)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *ok = cJSON_AddArrayToObject(root, "Successful");
    cJSON *failed = cJSON_AddArrayToObject(root, "Failed");
    if (!ok || !failed) {
        cJSON_Delete(root);
        return NULL;
    }
    for (int i = 0; i < st->n; i++) {
        const struct send_entry *e = &st->e[i];
        cJSON *obj = cJSON_CreateObject();
        if (!obj || !cJSON_AddStringToObject(obj, "Id", e->id)) {
            cJSON_Delete(obj);
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddItemToArray(e->err == SQS_ERR_COUNT ? ok : failed, obj);
        int bad = e->err == SQS_ERR_COUNT
                      ? add_sent(obj, e, &st->out[e->spec])
                      : (!cJSON_AddBoolToObject(obj, "SenderFault", sqs_err_sender(e->err)) ||
                         !cJSON_AddStringToObject(obj, "Code", sqs_err_code(e->err)) ||
                         !cJSON_AddStringToObject(obj, "Message", e->msg));
        if (bad) {
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

static enum MHD_Result send_answer(struct request *rq)
{
    struct send_state *st = rq->state;
    if (st->nspecs > 0 && st->p.call.result != STORE_OK && st->p.call.result != STORE_EXISTS)
        return sqs_reply_store(rq, st->p.call.result);
    if (st->batch)
        return sqs_reply(rq, batch_answer(st));
    cJSON *root = cJSON_CreateObject();
    if (root && add_sent(root, &st->e[0], &st->out[0]) != 0) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

/* Start a send of the messages in m[0..n) (batch: entries with Ids). */
static enum MHD_Result send_start(struct request *rq, const struct sqs_queue *q, const cJSON **m,
                                  int n, int batch)
{
    struct send_state *st = sqs_state_new(rq, sizeof *st, send_answer, send_state_free);
    if (!st)
        return reply_result(rq);
    st->batch = batch;
    snprintf(st->queue, sizeof st->queue, "%s", q->name);
    size_t bytes = 0;
    for (int i = 0; i < n; i++, st->n++) {
        struct send_entry *e = &st->e[i];
        if (batch)
            snprintf(e->id, sizeof e->id, "%s",
                     cJSON_GetObjectItemCaseSensitive(m[i], "Id")->valuestring);
        if (read_entry(st, q, e, m[i], &bytes) != 0 && !batch)
            return sqs_reply_error(rq, e->err, "%s", e->msg);
    }
    if (batch && bytes > SQS_BODY_MAX)
        return sqs_reply_error(rq, SQS_BATCH_TOO_LONG,
                               "Batch requests cannot be longer than %d bytes. You have sent %zu "
                               "bytes.",
                               SQS_BODY_MAX, bytes);
    if (st->nspecs == 0)
        return send_answer(rq);
    st->p.call = (struct store_call){
        .kind = STORE_CALL_ENQUEUE,
        .now = clock_now(),
        .enqueue = {.specs = st->specs, .n = st->nspecs, .out = st->out, .created = st->created}};
    return pending_submit(rq, &st->p);
}

enum MHD_Result sqs_send_message(struct request *rq, const cJSON *params, const struct sqs_queue *q)
{
    return send_start(rq, q, &params, 1, 0);
}

enum MHD_Result sqs_send_message_batch(struct request *rq, const cJSON *params,
                                       const struct sqs_queue *q)
{
    const cJSON *entries[SQS_BATCH_MAX];
    int n = sqs_entries_or_reply(rq, params, entries);
    if (n < 0)
        return reply_result(rq);
    return send_start(rq, q, entries, n, 1);
}
