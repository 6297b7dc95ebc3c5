/* Dead-letter queues (see sqs_redrive.h). */
#include "sqs_redrive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pending.h"
#include "reply.h"
#include "sqs_attrs.h"
#include "sqs_params.h"
#include "sqs_wire.h"
#include "store_sqs.h"

#define ARN_PREFIX "arn:aws:sqs:us-east-1:" SQS_ACCOUNT ":"

/* The queue an ARN names into out. Returns 0, or -1 when it is no queue ARN of ours. */
static int arn_queue(const char *arn, char out[JOB_QUEUE_MAX + 1])
{
    size_t n = strlen(ARN_PREFIX);
    if (!arn || strncmp(arn, ARN_PREFIX, n) != 0 || !sqs_queue_name_ok(arn + n))
        return -1;
    snprintf(out, JOB_QUEUE_MAX + 1, "%s", arn + n);
    return 0;
}

int sqs_redrive_parse(const char *text, struct sqs_redrive *out, char *err, size_t errlen)
{
    *out = (struct sqs_redrive){{0}, 0};
    if (!text[0])
        return 0;
    cJSON *p = cJSON_ParseWithOpts(text, NULL, 1);
    const cJSON *arn = cJSON_GetObjectItemCaseSensitive(p, "deadLetterTargetArn");
    const cJSON *max = cJSON_GetObjectItemCaseSensitive(p, "maxReceiveCount");
    double m = cJSON_IsNumber(max)   ? max->valuedouble
               : cJSON_IsString(max) ? strtod(max->valuestring, NULL)
                                     : 0;
    int ok = cJSON_IsObject(p) && cJSON_GetArraySize(p) == 2 &&
             arn_queue(cJSON_GetStringValue(arn), out->target) == 0;
    if (ok && (m < 1 || m > SQS_MAX_RECEIVE_MAX || m != (double)(int64_t)m))
        ok = 0;
    cJSON_Delete(p);
    if (!ok) {
        out->target[0] = '\0';
        snprintf(err, errlen,
                 "Value for parameter RedrivePolicy is invalid. Reason: it must be a JSON object "
                 "with deadLetterTargetArn (a queue's ARN) and maxReceiveCount (1 to %d).",
                 SQS_MAX_RECEIVE_MAX);
        return -1;
    }
    out->max_receive = (int64_t)m;
    return 0;
}

int sqs_redrive_allow_check(const char *text, char *err, size_t errlen)
{
    if (!text[0])
        return 0;
    cJSON *p = cJSON_ParseWithOpts(text, NULL, 1);
    const char *perm =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "redrivePermission"));
    const cJSON *arns = cJSON_GetObjectItemCaseSensitive(p, "sourceQueueArns");
    int by_queue = perm && strcmp(perm, "byQueue") == 0;
    int ok = cJSON_IsObject(p) && perm &&
             (by_queue || strcmp(perm, "allowAll") == 0 || strcmp(perm, "denyAll") == 0) &&
             cJSON_GetArraySize(p) == 1 + by_queue;
    if (ok && by_queue) {
        int n = cJSON_IsArray(arns) ? cJSON_GetArraySize(arns) : 0;
        char name[JOB_QUEUE_MAX + 1];
        ok = n >= 1 && n <= SQS_ALLOW_SOURCES_MAX;
        for (const cJSON *a = ok ? arns->child : NULL; a && ok; a = a->next)
            ok = arn_queue(cJSON_GetStringValue(a), name) == 0;
    }
    cJSON_Delete(p);
    if (!ok)
        snprintf(err, errlen,
                 "Value for parameter RedriveAllowPolicy is invalid. Reason: redrivePermission "
                 "must be allowAll, denyAll or byQueue (with 1 to %d sourceQueueArns).",
                 SQS_ALLOW_SOURCES_MAX);
    return ok ? 0 : -1;
}

int sqs_redrive_target_ok(const char *source, int source_fifo, const char *target,
                          const char *target_attrs, char *err, size_t errlen)
{
    cJSON *s = cJSON_Parse(target_attrs);
    const char *fifo = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "FifoQueue"));
    if ((fifo && strcmp(fifo, "true") == 0) != (source_fifo != 0)) {
        cJSON_Delete(s);
        snprintf(err, errlen,
                 "Value for parameter RedrivePolicy is invalid. Reason: Dead-letter target owner "
                 "queue type must match the source queue type (FIFO or standard).");
        return -1;
    }
    cJSON *p = cJSON_Parse(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "RedriveAllowPolicy")));
    const char *perm =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "redrivePermission"));
    int allowed = !perm || strcmp(perm, "allowAll") == 0;
    const cJSON *arns = cJSON_GetObjectItemCaseSensitive(p, "sourceQueueArns");
    for (const cJSON *a = arns ? arns->child : NULL;
         !allowed && perm && strcmp(perm, "byQueue") == 0 && a; a = a->next) {
        char name[JOB_QUEUE_MAX + 1];
        allowed = arn_queue(cJSON_GetStringValue(a), name) == 0 && strcmp(name, source) == 0;
    }
    cJSON_Delete(p);
    cJSON_Delete(s);
    if (!allowed)
        snprintf(err, errlen,
                 "Value for parameter RedrivePolicy is invalid. Reason: Queue %s does not allow "
                 "this queue to use it as a dead-letter queue (RedriveAllowPolicy).",
                 target);
    return allowed ? 0 : -1;
}

void sqs_redrive_target_of(const char *stored, char out[JOB_QUEUE_MAX + 1])
{
    cJSON *s = cJSON_Parse(stored ? stored : "{}");
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "RedrivePolicy"));
    struct sqs_redrive r;
    char err[256];
    if (!text || sqs_redrive_parse(text, &r, err, sizeof err) != 0)
        r.target[0] = '\0';
    snprintf(out, JOB_QUEUE_MAX + 1, "%s", r.target);
    cJSON_Delete(s);
}

/* ListDeadLetterSourceQueues: a read of the rows after NextToken. */
struct sources_state {
    struct sqs_state head;
    struct pending_read r;
    char queue[JOB_QUEUE_MAX + 1];
    char after[JOB_QUEUE_MAX + 1];
    int64_t max;
    struct store_sqs_queue *rows;
    size_t n;
};

static void sources_state_free(void *arg)
{
    struct sources_state *st = arg;
    if (st)
        store_sqs_queues_free(st->rows, st->n);
    free(st);
}

static enum store_result sources_read(struct pending_read *r, struct store *s)
{
    struct sources_state *st =
        (struct sources_state *)((char *)r - offsetof(struct sources_state, r));
    return store_sqs_queues(s, "", 0, st->after, STORE_SQS_LIST_MAX, &st->rows, &st->n);
}

static enum MHD_Result sources_answer(struct request *rq)
{
    struct sources_state *st = rq->state;
    if (st->r.result != STORE_OK)
        return sqs_reply_store(rq, st->r.result);
    cJSON *root = cJSON_CreateObject();
    cJSON *urls = cJSON_AddArrayToObject(root, "queueUrls");
    int64_t shown = 0;
    for (size_t i = 0; urls && i < st->n; i++) {
        char target[JOB_QUEUE_MAX + 1], url[1024];
        sqs_redrive_target_of(st->rows[i].attributes, target);
        if (strcmp(target, st->queue) != 0)
            continue;
        if (shown == st->max) { /* one more than asked for: the page ends before it */
            cJSON_AddStringToObject(root, "NextToken", st->rows[i - 1].name);
            break;
        }
        sqs_queue_url(rq, st->rows[i].name, url, sizeof url);
        cJSON_AddItemToArray(urls, cJSON_CreateString(url));
        shown++;
    }
    if (!urls) {
        cJSON_Delete(root);
        root = NULL;
    }
    return sqs_reply(rq, root);
}

enum MHD_Result sqs_list_dead_letter_sources(struct request *rq, const cJSON *params,
                                             const struct sqs_queue *q)
{
    struct sources_state *st = sqs_state_new(rq, sizeof *st, sources_answer, sources_state_free);
    if (!st)
        return reply_result(rq);
    st->r.read = sources_read;
    const char *token;
    if (sqs_param_string(rq, params, "NextToken", &token) != 0 ||
        sqs_param_int(rq, params, "MaxResults", STORE_SQS_LIST_MAX, 1, STORE_SQS_LIST_MAX,
                      &st->max) != 0)
        return reply_result(rq);
    if (token && strlen(token) > JOB_QUEUE_MAX)
        return sqs_reply_error(rq, SQS_INVALID_PARAMETER, "NextToken is too long");
    snprintf(st->queue, sizeof st->queue, "%s", q->name);
    snprintf(st->after, sizeof st->after, "%s", token ? token : "");
    return pending_read_submit(rq, &st->r);
}
