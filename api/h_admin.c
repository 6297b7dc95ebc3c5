/* Operator endpoints: cancel, retry, GET /queues, GET /stats/throughput, /healthz, /readyz. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "clock.h"
#include "counters.h"
#include "handlers.h"
#include "jobjson.h"
#include "pending.h"
#include "reply.h"

/* Answer a store call on job rq->id that fills *job on success. */
static enum MHD_Result job_reply(struct request *rq, enum store_result r, struct job *job)
{
    if (r == STORE_OK)
        return reply_job(rq, MHD_HTTP_OK, job);
    char what[40];
    snprintf(what, sizeof what, "job %" PRId64, rq->id);
    return reply_store_error(rq, r, what);
}

/* A cancel or retry across its two calls. */
struct admin_state {
    struct pending p;
    struct job job;
};

static void admin_state_free(void *arg)
{
    struct admin_state *as = arg;
    if (!as)
        return;
    job_clear(&as->job);
    free(as);
}

/* Start the cancel or retry of job rq->id, or answer it once it is over. */
static enum MHD_Result admin_call(struct request *rq, enum store_call_kind kind)
{
    struct admin_state *as = rq->state;
    if (as)
        return job_reply(rq, as->p.call.result, &as->job);
    as = calloc(1, sizeof *as);
    if (!as)
        return reply_error(rq, ERR_INTERNAL, "out of memory");
    as->p.call =
        (struct store_call){.kind = kind, .now = clock_now(), .id = rq->id, .out = &as->job};
    rq->state = as;
    rq->state_free = admin_state_free;
    return pending_submit(rq, &as->p);
}

enum MHD_Result handle_cancel(struct request *rq)
{
    return admin_call(rq, STORE_CALL_CANCEL);
}

enum MHD_Result handle_retry(struct request *rq)
{
    return admin_call(rq, STORE_CALL_RETRY);
}

static int add_count(cJSON *obj, const char *name, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_AddRawToObject(obj, name, buf) != NULL;
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
        const struct queue_stats *q = &rows[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            cJSON_Delete(root);
            return NULL;
        }
        int ok = cJSON_AddStringToObject(o, "name", q->name) &&
                 add_count(o, "queued", q->count[JOB_QUEUED] + q->count[JOB_SCHEDULED]) &&
                 add_count(o, "running", q->count[JOB_RUNNING]) &&
                 add_count(o, "succeeded", q->count[JOB_SUCCEEDED]) &&
                 add_count(o, "failed", q->count[JOB_FAILED]) &&
                 add_count(o, "cancelled", q->count[JOB_CANCELLED]) &&
                 add_count(o, "oldest_queued_age_seconds", q->oldest_queued_age);
        if (!ok) {
            cJSON_Delete(root);
            return NULL;
        }
    }
    return root;
}

enum MHD_Result handle_queues(struct request *rq)
{
    int64_t now = clock_now();
    struct queue_stats *rows = NULL;
    size_t n = 0;
    enum store_result r = store_queues(rq->app->store, now, &rows, &n);
    if (r != STORE_OK)
        return reply_store_error(rq, r, "the queue list");
    cJSON *body = queues_body(rows, n);
    queue_stats_free(rows, n);
    return reply_json(rq, MHD_HTTP_OK, body);
}

enum MHD_Result handle_throughput(struct request *rq)
{
    struct counters_point pts[COUNTERS_POINTS];
    counters_throughput(clock_now(), pts);
    struct jtext t = {0};
    char buf[160];
    int n = snprintf(buf, sizeof buf, "{\"step_seconds\":%d,\"points\":[", COUNTERS_STEP);
    jtext_put(&t, buf, (size_t)n);
    for (int i = 0; i < COUNTERS_POINTS; i++) {
        n = snprintf(buf, sizeof buf,
                     "%s{\"at\":%" PRId64 ",\"enqueued\":%" PRIu64 ",\"succeeded\":%" PRIu64
                     ",\"failed\":%" PRIu64 "}",
                     i ? "," : "", pts[i].at, pts[i].enqueued, pts[i].succeeded, pts[i].failed);
        jtext_put(&t, buf, (size_t)n);
    }
    jtext_put(&t, "]}", 2);
    return reply_jtext(rq, MHD_HTTP_OK, &t, NULL);
}

static enum MHD_Result reply_status(struct request *rq, const char *status)
{
    cJSON *body = cJSON_CreateObject();
    if (body && !cJSON_AddStringToObject(body, "status", status)) {
        cJSON_Delete(body);
        body = NULL;
    }
    return reply_json(rq, MHD_HTTP_OK, body);
}

enum MHD_Result handle_healthz(struct request *rq)
{
    return reply_status(rq, "ok");
}

enum MHD_Result handle_readyz(struct request *rq)
{
    enum store_result r = store_ping(rq->app->store);
    if (r != STORE_OK)
        return reply_error(rq, ERR_UNAVAILABLE, "the database is not usable (%s)",
                           store_result_name(r));
    return reply_status(rq, "ready");
}
