/* Operator endpoints: cancel, retry, GET /stats/throughput, /healthz, /readyz. */
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
    as->p.call = (struct store_call){.kind = kind, .now = clock_now()};
    if (kind == STORE_CALL_CANCEL)
        as->p.call.cancel = (struct store_cancel_call){.id = rq->id, .out = &as->job};
    else
        as->p.call.retry = (struct store_retry_call){.id = rq->id, .out = &as->job};
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

/* GET /stats/throughput across its two calls. */
struct throughput_read {
    struct pending_read r;
    struct counters_point pts[COUNTERS_POINTS];
};

static enum store_result throughput_run(struct pending_read *r, struct store *s)
{
    struct throughput_read *tr = (struct throughput_read *)r;
    int64_t now = clock_now();
    counters_throughput(now, tr->pts);
    /* Other processes on the same database: theirs too (as of their last publish). */
    return store_throughput_others(s, now, tr->pts, COUNTERS_POINTS);
}

enum MHD_Result handle_throughput(struct request *rq)
{
    struct throughput_read *tr = rq->state;
    if (!tr)
        return pending_read_start(rq, sizeof *tr, throughput_run, NULL);
    if (tr->r.result != STORE_OK)
        return reply_store_error(rq, tr->r.result, "the throughput");
    const struct counters_point *pts = tr->pts;
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

static enum store_result ping_run(struct pending_read *r, struct store *s)
{
    (void)r;
    return store_ping(s);
}

enum MHD_Result handle_readyz(struct request *rq)
{
    struct pending_read *r = rq->state;
    if (!r)
        return pending_read_start(rq, sizeof *r, ping_run, NULL);
    if (r->result != STORE_OK)
        return reply_error(rq, ERR_UNAVAILABLE, "the database is not usable (%s)",
                           store_result_name(r->result));
    return reply_status(rq, "ready");
}
