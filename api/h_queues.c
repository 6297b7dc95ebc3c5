/* Queue endpoints: GET /queues, POST /queues/{name}/pause and /resume, DELETE
 * /queues/{name}/jobs?status=S (purge, in bounded batches, each its own transaction). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "fields.h"
#include "handlers.h"
#include "pending.h"
#include "reply.h"

/* A purge answers after this long even when jobs remain ("more": true). */
#define PURGE_BUDGET_MS 30000

static int add_count(cJSON *obj, const char *name, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_AddRawToObject(obj, name, buf) != NULL;
}

/* One queue's object, or NULL when out of memory. */
static cJSON *queue_json(const struct queue_stats *q)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", q->name) &&
             add_count(o, "queued", q->count[JOB_QUEUED]) &&
             add_count(o, "running", q->count[JOB_RUNNING]) &&
             add_count(o, "succeeded", q->count[JOB_SUCCEEDED]) &&
             add_count(o, "failed", q->count[JOB_FAILED]) &&
             add_count(o, "cancelled", q->count[JOB_CANCELLED]) &&
             add_count(o, "blocked", q->count[JOB_BLOCKED]) &&
             add_count(o, "oldest_queued_age_seconds", q->oldest_queued_age) &&
             cJSON_AddBoolToObject(o, "paused", q->paused);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *queues_body(const struct queue_stats *rows, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "queues");
    if (!arr) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *o = queue_json(&rows[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

enum MHD_Result handle_queues(struct request *rq)
{
    struct queues_read *q = rq->state;
    if (!q)
        return queues_read_start(rq);
    if (q->r.result != STORE_OK)
        return reply_store_error(rq, q->r.result, "the queue list");
    return reply_json(rq, MHD_HTTP_OK, queues_body(q->rows, q->n));
}

/* A pause, resume or purge across its calls. */
struct queue_state {
    struct pending p;
    char name[JOB_QUEUE_MAX + 1];
    int64_t deleted;  /* purge: so far */
    int64_t deadline; /* purge: clock_mono_ms() to answer by */
    /* pause, resume: the queue's row, read once the write is over (store_queues reads every
     * queue: the store has no read of one) */
    struct queues_read rd;
    int reading;
};

static void queue_state_free(void *arg)
{
    struct queue_state *qs = arg;
    if (qs)
        queues_read_clear(&qs->rd);
    free(qs);
}

/* The {name} of /queues/{name}/...: copied into name (JOB_QUEUE_MAX + 1 bytes). Returns 0, or
 * -1 when it is not a valid queue name. */
static int path_queue(const struct request *rq, char *name)
{
    const char *s = rq->url + strlen("/queues/");
    size_t n = strcspn(s, "/");
    if (n == 0 || n > JOB_QUEUE_MAX)
        return -1;
    memcpy(name, s, n);
    name[n] = '\0';
    return job_queue_name_ok(name) ? 0 : -1;
}

/* Start a queue call with a new state, or answer why it cannot start. */
static enum MHD_Result queue_start(struct request *rq, struct store_call call)
{
    char name[JOB_QUEUE_MAX + 1];
    if (path_queue(rq, name) != 0) {
        const char *s = rq->url + strlen("/queues/");
        char why[64];
        fields_queue_why(s, strcspn(s, "/"), why, sizeof why);
        return reply_error(rq, ERR_INVALID_REQUEST,
                           "name: a queue name is 1-%d characters of A-Z a-z 0-9 . _ : - (%s)",
                           JOB_QUEUE_MAX, why);
    }
    struct queue_state *qs = calloc(1, sizeof *qs);
    if (!qs)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    memcpy(qs->name, name, sizeof name);
    qs->deadline = clock_mono_ms() + PURGE_BUDGET_MS;
    qs->p.call = call;
    if (call.kind == STORE_CALL_PAUSE)
        qs->p.call.pause.queue = qs->name;
    else
        qs->p.call.purge.queue = qs->name;
    rq->state = qs;
    rq->state_free = queue_state_free;
    return pending_submit(rq, &qs->p);
}

/* Once the pause or resume is over, read the queues; once that is over, answer with the
 * queue's row (all zeros when it holds no job). */
static enum MHD_Result pause_reply(struct request *rq, struct queue_state *qs)
{
    if (qs->p.call.result != STORE_OK)
        return reply_store_error(rq, qs->p.call.result, "the queue");
    if (!qs->reading) {
        queues_read_init(&qs->rd);
        qs->reading = 1;
        return pending_read_submit(rq, &qs->rd.r);
    }
    if (qs->rd.r.result != STORE_OK)
        return reply_store_error(rq, qs->rd.r.result, "the queue");
    struct queue_stats empty = {.name = qs->name, .paused = qs->p.call.pause.paused};
    const struct queue_stats *row = &empty;
    for (size_t i = 0; i < qs->rd.n; i++)
        if (strcmp(qs->rd.rows[i].name, qs->name) == 0)
            row = &qs->rd.rows[i];
    return reply_json(rq, MHD_HTTP_OK, queue_json(row));
}

static enum MHD_Result pause_call(struct request *rq, int paused)
{
    if (rq->state)
        return pause_reply(rq, rq->state);
    return queue_start(rq, (struct store_call){.kind = STORE_CALL_PAUSE,
                                               .now = clock_now(),
                                               .pause = {.paused = paused}});
}

enum MHD_Result handle_pause(struct request *rq)
{
    return pause_call(rq, 1);
}

enum MHD_Result handle_resume(struct request *rq)
{
    return pause_call(rq, 0);
}

/* The purge's status query: an API status other than running. */
static int purge_status(const char *v, int *status)
{
    enum job_status s;
    if (!v || job_status_parse(v, &s) != 0 || s == JOB_RUNNING)
        return -1;
    *status = (int)s;
    return 0;
}

static enum MHD_Result purge_reply(struct request *rq, int more, int64_t deleted)
{
    cJSON *body = cJSON_CreateObject();
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, deleted);
    if (body && (!cJSON_AddRawToObject(body, "deleted", buf) ||
                 (more && !cJSON_AddTrueToObject(body, "more")))) {
        cJSON_Delete(body);
        body = NULL;
    }
    return reply_json(rq, MHD_HTTP_OK, body);
}

enum MHD_Result handle_purge(struct request *rq)
{
    struct queue_state *qs = rq->state;
    if (!qs) {
        int status;
        const char *v = MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, "status");
        if (purge_status(v, &status) != 0)
            return reply_error(rq, ERR_INVALID_REQUEST,
                               "status: required, one of queued, blocked, succeeded, failed, "
                               "cancelled (running jobs are never purged)");
        return queue_start(
            rq, (struct store_call){.kind = STORE_CALL_PURGE,
                                    .now = clock_now(),
                                    .purge = {.status = status, .limit = STORE_PURGE_BATCH}});
    }
    struct store_call *call = &qs->p.call;
    if (call->result != STORE_OK) {
        if (qs->deleted == 0)
            return reply_store_error(rq, call->result, "the purge");
        /* Batches before it committed: say how many, and that some remain. */
        return purge_reply(rq, 1, qs->deleted);
    }
    qs->deleted += (int64_t)call->purge.deleted;
    if (call->purge.deleted < (size_t)call->purge.limit)
        return purge_reply(rq, 0, qs->deleted);
    if (clock_mono_ms() >= qs->deadline)
        return purge_reply(rq, 1, qs->deleted);
    call->now = clock_now();
    return pending_submit(rq, &qs->p); /* the next batch: other writers went in between */
}
