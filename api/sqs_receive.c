/* ReceiveMessage (see sqs_receive.h). */
#include "sqs_receive.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim_poll.h"
#include "log.h"
#include "reply.h"
#include "sqs_lease.h"
#include "sqs_msg.h"
#include "sqs_wire.h"

#define SQS_WAIT_MAX 20
/* The worker_id of a receive (GET /jobs shows it). */
#define SQS_WORKER "sqs"
/* The names in AttributeNames or MessageAttributeNames that a receive keeps, at most. */
#define NAMES_MAX 32

/* The system attributes a receive can return, by name. */
enum sys_attr {
    SYS_SENDER_ID = 1 << 0,
    SYS_SENT = 1 << 1,
    SYS_RECEIVE_COUNT = 1 << 2,
    SYS_FIRST_RECEIVE = 1 << 3,
    SYS_GROUP = 1 << 4,    /* MessageGroupId (FIFO) */
    SYS_DEDUP = 1 << 5,    /* MessageDeduplicationId (FIFO) */
    SYS_SEQUENCE = 1 << 6, /* SequenceNumber (FIFO) */
    SYS_ALL = (1 << 7) - 1
};

struct receive_state {
    struct sqs_state head;
    struct claim_poll cp;
    char queue[JOB_QUEUE_MAX + 1];
    const char *queues[1];
    unsigned sys;           /* enum sys_attr bits */
    char *names[NAMES_MAX]; /* MessageAttributeNames, owned */
    size_t nnames;
};

static void receive_state_free(void *arg)
{
    struct receive_state *st = arg;
    if (!st)
        return;
    claim_poll_clear(&st->cp);
    for (size_t i = 0; i < st->nnames; i++)
        free(st->names[i]);
    free(st);
}

/* The system attributes that the list `name` asks for, or'ed into *bits. Returns 0, or -1
 * after answering. */
static int read_sys(struct request *rq, const cJSON *params, const char *name, unsigned *bits)
{
    static const struct {
        const char *name;
        unsigned bit;
    } known[] = {{"All", SYS_ALL},
                 {"SenderId", SYS_SENDER_ID},
                 {"SentTimestamp", SYS_SENT},
                 {"ApproximateReceiveCount", SYS_RECEIVE_COUNT},
                 {"ApproximateFirstReceiveTimestamp", SYS_FIRST_RECEIVE},
                 {"MessageGroupId", SYS_GROUP},
                 {"MessageDeduplicationId", SYS_DEDUP},
                 {"SequenceNumber", SYS_SEQUENCE}};
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(params, name);
    if (list && !cJSON_IsArray(list)) {
        sqs_reply_error(rq, SQS_INVALID_PARAMETER, "%s must be a list", name);
        return -1;
    }
    for (const cJSON *a = list ? list->child : NULL; a; a = a->next) {
        if (!cJSON_IsString(a)) {
            sqs_reply_error(rq, SQS_INVALID_PARAMETER, "%s must be a list of strings", name);
            return -1;
        }
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (strcmp(a->valuestring, known[i].name) == 0)
                *bits |= known[i].bit;
        /* Others (AWSTraceHeader, ...) have nothing to show: left out. */
    }
    return 0;
}

/* MessageAttributeNames into st->names. Returns 0, or -1 after answering. */
static int read_names(struct request *rq, const cJSON *params, struct receive_state *st)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(params, "MessageAttributeNames");
    if (list && !cJSON_IsArray(list)) {
        sqs_reply_error(rq, SQS_INVALID_PARAMETER, "MessageAttributeNames must be a list");
        return -1;
    }
    for (const cJSON *a = list ? list->child : NULL; a; a = a->next) {
        if (!cJSON_IsString(a) || st->nnames == NAMES_MAX) {
            sqs_reply_error(rq, SQS_INVALID_PARAMETER,
                            "MessageAttributeNames must be at most %d strings", NAMES_MAX);
            return -1;
        }
        if (!(st->names[st->nnames] = strdup(a->valuestring))) {
            sqs_reply_error(rq, SQS_INTERNAL, "out of memory");
            return -1;
        }
        st->nnames++;
    }
    return 0;
}

/* 1 when the message attribute `name` is asked for: "All", ".*", the name, or "PREFIX.*"
 * with name starting with PREFIX (as AWS answers: "Hel.*" gives Hello and Help.Me, recorded
 * in tests/sqs/aws_shapes.json). */
static int name_wanted(const struct receive_state *st, const char *name)
{
    for (size_t i = 0; i < st->nnames; i++) {
        const char *w = st->names[i];
        size_t n = strlen(w);
        if (strcmp(w, "All") == 0 || strcmp(w, ".*") == 0 || strcmp(w, name) == 0)
            return 1;
        if (n > 2 && strcmp(w + n - 2, ".*") == 0 && strncmp(w, name, n - 2) == 0)
            return 1;
    }
    return 0;
}

/* Add the system attributes of job j that st asks for to msg. Returns 0, or -1. */
static int add_sys(const struct receive_state *st, cJSON *msg, const struct job *j)
{
    if (!st->sys)
        return 0;
    cJSON *attrs = cJSON_AddObjectToObject(msg, "Attributes");
    if (!attrs)
        return -1;
    char v[24];
    if (st->sys & SYS_SENDER_ID && !cJSON_AddStringToObject(attrs, "SenderId", "jobq"))
        return -1;
    snprintf(v, sizeof v, "%" PRId64, j->created_at * 1000);
    if (st->sys & SYS_SENT && !cJSON_AddStringToObject(attrs, "SentTimestamp", v))
        return -1;
    snprintf(v, sizeof v, "%" PRId64, j->attempts);
    if (st->sys & SYS_RECEIVE_COUNT &&
        !cJSON_AddStringToObject(attrs, "ApproximateReceiveCount", v))
        return -1;
    snprintf(v, sizeof v, "%" PRId64, j->claimed_at * 1000);
    if (st->sys & SYS_FIRST_RECEIVE &&
        !cJSON_AddStringToObject(attrs, "ApproximateFirstReceiveTimestamp", v))
        return -1;
    char group[SQS_FIFO_ID_MAX + 1], dedup[SQS_FIFO_ID_MAX + 1], seq[SQS_SEQUENCE_LEN + 1];
    if (!(st->sys & (SYS_GROUP | SYS_DEDUP | SYS_SEQUENCE)) ||
        sqs_payload_fifo(j->payload, group, sizeof group, dedup, sizeof dedup) != 0)
        return 0; /* not a FIFO queue's message: nothing to show */
    sqs_sequence_number(j->id, seq);
    if ((st->sys & SYS_GROUP && !cJSON_AddStringToObject(attrs, "MessageGroupId", group)) ||
        (st->sys & SYS_DEDUP && !cJSON_AddStringToObject(attrs, "MessageDeduplicationId", dedup)) ||
        (st->sys & SYS_SEQUENCE && !cJSON_AddStringToObject(attrs, "SequenceNumber", seq)))
        return -1;
    return 0;
}

/* Keep only the message attributes st asks for in attrs (owned); add them and their digest
 * to msg. Returns 0, or -1. */
static int add_attrs(const struct receive_state *st, cJSON *msg, cJSON *attrs)
{
    for (cJSON *a = attrs ? attrs->child : NULL; a;) {
        cJSON *next = a->next;
        if (!name_wanted(st, a->string))
            cJSON_Delete(cJSON_DetachItemViaPointer(attrs, a));
        a = next;
    }
    char md5[33];
    if (sqs_msg_attrs_md5(attrs, md5) != 0) {
        cJSON_Delete(attrs);
        return 0;
    }
    if (!cJSON_AddStringToObject(msg, "MD5OfMessageAttributes", md5)) {
        cJSON_Delete(attrs);
        return -1;
    }
    return cJSON_AddItemToObject(msg, "MessageAttributes", attrs) ? 0 : -1;
}

/* The message of claimed job j, or NULL when out of memory. */
static cJSON *message(const struct receive_state *st, const struct job *j)
{
    char *body;
    cJSON *attrs;
    if (sqs_payload_read(j->payload, &body, &attrs) != 0)
        return NULL;
    char id[24], handle[SQS_HANDLE_MAX + 1], md5[33];
    snprintf(id, sizeof id, "%" PRId64, j->id);
    sqs_handle_format(j->id, j->lease_token, handle);
    sqs_md5_hex(body, strlen(body), md5);
    cJSON *msg = cJSON_CreateObject();
    int ok = msg && cJSON_AddStringToObject(msg, "MessageId", id) &&
             cJSON_AddStringToObject(msg, "ReceiptHandle", handle) &&
             cJSON_AddStringToObject(msg, "MD5OfBody", md5) &&
             cJSON_AddStringToObject(msg, "Body", body) && add_sys(st, msg, j) == 0;
    free(body);
    if (ok && add_attrs(st, msg, attrs) == 0)
        return msg;
    cJSON_Delete(msg);
    return NULL;
}

static enum MHD_Result receive_claimed(struct request *rq, struct claim_poll *cp, size_t n)
{
    const struct receive_state *st = rq->state;
    cJSON *root = cJSON_CreateObject();
    cJSON *msgs = n > 0 ? cJSON_AddArrayToObject(root, "Messages") : NULL;
    for (size_t i = 0; root && i < n; i++) {
        cJSON *m = msgs ? message(st, &cp->jobs[i]) : NULL;
        if (!m) {
            log_error("out of memory answering a receive: %zu received messages are hidden "
                      "until their visibility timeouts pass",
                      n);
            cJSON_Delete(root);
            root = NULL;
            break;
        }
        cJSON_AddItemToArray(msgs, m);
    }
    return sqs_reply(rq, root);
}

static enum MHD_Result receive_failed(struct request *rq, enum store_result r)
{
    return sqs_reply_store(rq, r);
}

static const struct claim_poll_answers receive_answers = {receive_claimed, receive_failed};

static enum MHD_Result receive_resume(struct request *rq)
{
    struct receive_state *st = rq->state;
    return claim_poll_step(rq, &st->cp);
}

enum MHD_Result sqs_receive_message(struct request *rq, const cJSON *params,
                                    const struct sqs_queue *q)
{
    struct receive_state *st = sqs_state_new(rq, sizeof *st, receive_resume, receive_state_free);
    if (!st)
        return reply_result(rq);
    int64_t max, wait, visibility;
    snprintf(st->queue, sizeof st->queue, "%s", q->name);
    if (sqs_param_int(rq, params, "MaxNumberOfMessages", 1, 1, SQS_BATCH_MAX, &max) != 0 ||
        sqs_param_int(rq, params, "WaitTimeSeconds", q->wait, 0, SQS_WAIT_MAX, &wait) != 0 ||
        sqs_param_int(rq, params, "VisibilityTimeout", q->visibility, 0, SQS_VISIBILITY_MAX,
                      &visibility) != 0 ||
        read_sys(rq, params, "AttributeNames", &st->sys) != 0 ||
        read_sys(rq, params, "MessageSystemAttributeNames", &st->sys) != 0 ||
        read_names(rq, params, st) != 0)
        return reply_result(rq);
    st->queues[0] = st->queue;
    struct claim_req req = {
        .worker_id = SQS_WORKER,
        .queues = st->queues,
        .nqueues = 1,
        /* A lease is at least a second: a visibility timeout of 0 makes the message
         * visible again a second later. */
        .lease_seconds = visibility > 0 ? visibility : 1,
        .max_jobs = (int)max,
    };
    if (claim_poll_init(&st->cp, rq, &req, wait * 1000, &receive_answers) != 0)
        return sqs_reply_error(rq, SQS_INTERNAL, "out of memory");
    return claim_poll_start(rq, &st->cp);
}
