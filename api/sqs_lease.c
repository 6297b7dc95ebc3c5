/* Deletes and visibility changes by receipt handle (see sqs_lease.h). */
#include "sqs_lease.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "pending.h"
#include "reply.h"
#include "sqs_msg.h"
#include "sqs_wire.h"

#define RELEASED_CODE "sqs_visibility_released"

/* One entry: its handle, parsed, and how it ended. */
struct lease_entry {
    char id[81];
    int64_t job;
    char token[JOB_TOKEN_LEN + 1];
    int64_t visibility; /* ChangeMessageVisibility: the new timeout */
    enum sqs_err err;   /* SQS_ERR_COUNT: done */
    char msg[160];
};

struct lease_state {
    struct sqs_state head;
    struct pending p;
    int change; /* 1: ChangeMessageVisibility, 0: DeleteMessage */
    int batch;
    int n, at; /* entries, and the one whose call is in flight */
    struct lease_entry e[SQS_BATCH_MAX];
    struct fail_req release;
    struct job out;
};

static void lease_state_free(void *arg)
{
    struct lease_state *st = arg;
    if (st)
        job_clear(&st->out);
    free(st);
}

void sqs_handle_format(int64_t id, const char *token, char out[SQS_HANDLE_MAX + 1])
{
    snprintf(out, SQS_HANDLE_MAX + 1, "%" PRId64 ".%s", id, token);
}

/* Parse a receipt handle into e. Returns 0, or -1 with e's error set. */
static int handle_parse(const char *h, struct lease_entry *e)
{
    const char *dot = h ? strchr(h, '.') : NULL;
    size_t digits = dot ? strspn(h, "0123456789") : 0;
    if (!dot || digits == 0 || digits > 18 || h + digits != dot ||
        strlen(dot + 1) != JOB_TOKEN_LEN) {
        e->err = SQS_RECEIPT_INVALID;
        snprintf(e->msg, sizeof e->msg,
                 "The input receipt handle \"%.64s\" is not a valid "
                 "receipt handle.",
                 h ? h : "");
        return -1;
    }
    e->job = strtoll(h, NULL, 10);
    memcpy(e->token, dot + 1, JOB_TOKEN_LEN + 1);
    return 0;
}

/* Read one entry (a single call's parameters or a batch entry). Returns 0, or -1 with its
 * error set. */
static int read_entry(const struct lease_state *st, struct lease_entry *e, const cJSON *m)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(m, "ReceiptHandle");
    if (!h) {
        e->err = SQS_MISSING_PARAMETER;
        snprintf(e->msg, sizeof e->msg, "The request must contain the parameter ReceiptHandle.");
        return -1;
    }
    if (handle_parse(cJSON_GetStringValue(h), e) != 0)
        return -1;
    if (!st->change)
        return 0;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "VisibilityTimeout");
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (cJSON_IsString(v))
        d = strtod(v->valuestring, NULL);
    if (!v) {
        e->err = SQS_MISSING_PARAMETER;
        snprintf(e->msg, sizeof e->msg,
                 "The request must contain the parameter VisibilityTimeout.");
        return -1;
    }
    if (!(d >= 0 && d <= SQS_VISIBILITY_MAX) || d != (double)(int64_t)d) {
        e->err = SQS_INVALID_PARAMETER;
        snprintf(e->msg, sizeof e->msg,
                 "Value for parameter VisibilityTimeout is invalid. Reason: must be from 0 to "
                 "%d.",
                 SQS_VISIBILITY_MAX);
        return -1;
    }
    e->visibility = (int64_t)d;
    return 0;
}

/* The next entry still to run, from st->at on; st->n when none is left. */
static int next_entry(const struct lease_state *st, int from)
{
    while (from < st->n && st->e[from].err != SQS_ERR_COUNT + 1)
        from++;
    return from;
}

/* Submit the call of entry st->at. */
static enum MHD_Result submit(struct request *rq, struct lease_state *st)
{
    const struct lease_entry *e = &st->e[st->at];
    struct store_call *call = &st->p.call;
    job_clear(&st->out);
    *call = (struct store_call){.now = clock_now()};
    if (!st->change) {
        call->kind = STORE_CALL_COMPLETE;
        call->complete =
            (struct store_complete_call){.id = e->job, .token = e->token, .out = &st->out};
    } else if (e->visibility > 0) {
        call->kind = STORE_CALL_HEARTBEAT;
        call->heartbeat = (struct store_heartbeat_call){
            .id = e->job, .token = e->token, .lease_seconds = e->visibility, .out = &st->out};
    } else {
        st->release =
            (struct fail_req){.error_code = RELEASED_CODE, .retry = 1, .retry_in_seconds = 0};
        call->kind = STORE_CALL_FAIL;
        call->fail = (struct store_fail_call){
            .id = e->job, .token = e->token, .req = &st->release, .out = &st->out};
    }
    return pending_submit(rq, &st->p);
}

/* What a lease call's result makes of entry e. */
static void settle(const struct lease_state *st, struct lease_entry *e, enum store_result r)
{
    switch (r) {
    case STORE_OK:
        e->err = SQS_ERR_COUNT;
        return;
    case STORE_NOT_FOUND:
        e->err = SQS_RECEIPT_INVALID;
        snprintf(e->msg, sizeof e->msg, "The receipt handle names no message.");
        return;
    case STORE_LEASE_LOST:
        e->err = st->change ? SQS_NOT_INFLIGHT : SQS_RECEIPT_INVALID;
        snprintf(e->msg, sizeof e->msg,
                 "The receipt handle no longer holds the message: it was received again, "
                 "deleted, or its visibility timeout passed.");
        return;
    case STORE_BUSY:
    case STORE_UNAVAILABLE:
        e->err = SQS_UNAVAILABLE;
        snprintf(e->msg, sizeof e->msg, "The service is unavailable now: retry.");
        return;
    default:
        e->err = SQS_INTERNAL;
        snprintf(e->msg, sizeof e->msg, "internal error");
        return;
    }
}

static enum MHD_Result answer(struct request *rq, const struct lease_state *st)
{
    if (!st->batch) {
        const struct lease_entry *e = &st->e[0];
        if (e->err != SQS_ERR_COUNT)
            return sqs_reply_error(rq, e->err, "%s", e->msg);
        return sqs_reply(rq, cJSON_CreateObject());
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *ok = cJSON_AddArrayToObject(root, "Successful");
    cJSON *failed = cJSON_AddArrayToObject(root, "Failed");
    for (int i = 0; ok && failed && i < st->n; i++) {
        const struct lease_entry *e = &st->e[i];
        cJSON *obj = cJSON_CreateObject();
        cJSON_AddItemToArray(e->err == SQS_ERR_COUNT ? ok : failed, obj);
        if (!cJSON_AddStringToObject(obj, "Id", e->id) ||
            (e->err != SQS_ERR_COUNT &&
             (!cJSON_AddBoolToObject(obj, "SenderFault", sqs_err_sender(e->err)) ||
              !cJSON_AddStringToObject(obj, "Code", sqs_err_code(e->err)) ||
              !cJSON_AddStringToObject(obj, "Message", e->msg)))) {
            cJSON_Delete(root);
            return sqs_reply(rq, NULL);
        }
    }
    if (!ok || !failed) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

/* A call is over: settle its entry, then run the next or answer. */
static enum MHD_Result lease_resume(struct request *rq)
{
    struct lease_state *st = rq->state;
    settle(st, &st->e[st->at], st->p.call.result);
    st->at = next_entry(st, st->at + 1);
    if (st->at < st->n)
        return submit(rq, st);
    return answer(rq, st);
}

static enum MHD_Result lease_start(struct request *rq, const cJSON **m, int n, int change,
                                   int batch)
{
    struct lease_state *st = sqs_state_new(rq, sizeof *st, lease_resume, lease_state_free);
    if (!st)
        return reply_result(rq);
    st->change = change;
    st->batch = batch;
    st->n = n;
    for (int i = 0; i < n; i++) {
        struct lease_entry *e = &st->e[i];
        e->err = SQS_ERR_COUNT + 1; /* to run */
        if (batch)
            snprintf(e->id, sizeof e->id, "%s",
                     cJSON_GetObjectItemCaseSensitive(m[i], "Id")->valuestring);
        if (read_entry(st, e, m[i]) != 0 && !batch)
            return sqs_reply_error(rq, e->err, "%s", e->msg);
    }
    st->at = next_entry(st, 0);
    if (st->at < st->n)
        return submit(rq, st);
    return answer(rq, st);
}

/* The queue must exist (it was read before) even though the handle decides the job. */
static enum MHD_Result lease_action(struct request *rq, const cJSON *params, int change, int batch)
{
    if (!batch)
        return lease_start(rq, &params, 1, change, 0);
    const cJSON *entries[SQS_BATCH_MAX];
    int n = sqs_entries_or_reply(rq, params, entries);
    if (n < 0)
        return reply_result(rq);
    return lease_start(rq, entries, n, change, 1);
}

enum MHD_Result sqs_delete_message(struct request *rq, const cJSON *params,
                                   const struct sqs_queue *q)
{
    (void)q;
    return lease_action(rq, params, 0, 0);
}

enum MHD_Result sqs_delete_message_batch(struct request *rq, const cJSON *params,
                                         const struct sqs_queue *q)
{
    (void)q;
    return lease_action(rq, params, 0, 1);
}

enum MHD_Result sqs_change_visibility(struct request *rq, const cJSON *params,
                                      const struct sqs_queue *q)
{
    (void)q;
    return lease_action(rq, params, 1, 0);
}

enum MHD_Result sqs_change_visibility_batch(struct request *rq, const cJSON *params,
                                            const struct sqs_queue *q)
{
    (void)q;
    return lease_action(rq, params, 1, 1);
}
