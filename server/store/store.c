/* store_open (the backend is chosen from the URL), the synchronous writes built on
 * store_submit, and result names. */
#include "store.h"
#include "store_schedule.h"
#include "store_sqs.h"
#include "store_webhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "latch.h"
#include "log.h"
#include "pg_open.h"
#include "sqlite_open.h"

const char *store_result_name(enum store_result r)
{
    switch (r) {
    case STORE_OK:
        return "ok";
    case STORE_EXISTS:
        return "exists";
    case STORE_NOT_FOUND:
        return "not found";
    case STORE_LEASE_LOST:
        return "lease lost";
    case STORE_CONFLICT:
        return "conflict";
    case STORE_BUSY:
        return "busy";
    case STORE_UNAVAILABLE:
        return "unavailable";
    case STORE_ERROR:
        return "error";
    }
    return "unknown";
}

int store_url_is_pg(const char *url)
{
    return url && (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0);
}

void store_url_redact(const char *url, char *out, size_t n)
{
    if (n == 0)
        return;
    size_t o = 0;
    const char *at = store_url_is_pg(url) ? strchr(url, '@') : NULL;
    const char *auth = store_url_is_pg(url) ? strstr(url, "://") + 3 : NULL;
    const char *colon = auth ? memchr(auth, ':', at && at > auth ? (size_t)(at - auth) : 0) : NULL;
    for (const char *p = url; *p && o + 1 < n; p++) {
        if (colon && p == colon + 1) {
            for (const char *m = "***"; *m && o + 1 < n; m++)
                out[o++] = *m;
            p = at - 1; /* continue with '@' */
            continue;
        }
        /* password=... in the query string */
        if ((p == url || p[-1] == '?' || p[-1] == '&') && strncmp(p, "password=", 9) == 0) {
            for (const char *m = "password=***"; *m && o + 1 < n; m++)
                out[o++] = *m;
            while (p[1] && p[1] != '&')
                p++;
            continue;
        }
        out[o++] = *p;
    }
    out[o] = '\0';
}

struct store *store_open(const struct store_options *opts)
{
    if (!opts->url || !*opts->url) {
        log_error("no database given (--db)");
        return NULL;
    }
    if (store_url_is_pg(opts->url))
        return pg_store_open(opts);
    return sqlite_store_open(opts);
}

/* What each kind of committed call counts (counters.h), one row per kind; NULL: nothing. A
 * call without outputs counts nothing. */
static void count_enqueue(const struct store_call *call)
{
    const struct store_enqueue_call *e = &call->enqueue;
    for (size_t i = 0; e->created && e->out && i < e->n; i++)
        if (e->created[i])
            counters_add(e->out[i].queue, COUNTER_ENQUEUED, 1, call->now);
}

static void count_claim(const struct store_call *call)
{
    for (size_t i = 0; call->claim.out && i < call->claim.n; i++)
        counters_add(call->claim.out[i].queue, COUNTER_CLAIMED, 1, call->now);
}

static void count_complete(const struct store_call *call)
{
    if (call->complete.out && !call->complete.repeated)
        counters_add(call->complete.out->queue, COUNTER_SUCCEEDED, 1, call->now);
}

static void count_fail(const struct store_call *call)
{
    const struct job *out = call->fail.out;
    if (out)
        counters_add(out->queue, out->status == JOB_FAILED ? COUNTER_FAILED : COUNTER_RETRIED, 1,
                     call->now);
}

static void count_cancel(const struct store_call *call)
{
    if (call->cancel.out)
        counters_add(call->cancel.out->queue, COUNTER_CANCELLED, 1, call->now);
}

static void count_snooze(const struct store_call *call)
{
    if (call->snooze.out)
        counters_add(call->snooze.out->queue, COUNTER_SNOOZED, 1, call->now);
}

static void count_tick(const struct store_call *call)
{
    if (call->schedule_tick.created && call->schedule_tick.out)
        counters_add(call->schedule_tick.out->queue, COUNTER_ENQUEUED, 1, call->now);
}

static void (*const count_kind[STORE_CALL_KIND_COUNT])(const struct store_call *) = {
    [STORE_CALL_ENQUEUE] = count_enqueue,    [STORE_CALL_CLAIM] = count_claim,
    [STORE_CALL_COMPLETE] = count_complete,  [STORE_CALL_FAIL] = count_fail,
    [STORE_CALL_CANCEL] = count_cancel,      [STORE_CALL_SNOOZE] = count_snooze,
    [STORE_CALL_SCHEDULE_TICK] = count_tick,
};

void store_count_call(const struct store_call *call)
{
    int ok = call->result == STORE_OK ||
             (call->kind == STORE_CALL_ENQUEUE && call->result == STORE_EXISTS);
    if (!ok || (unsigned)call->kind >= STORE_CALL_KIND_COUNT || !count_kind[call->kind])
        return;
    count_kind[call->kind](call);
}

/* The call is over: count what it did, then hand it back to its caller. */
static void counted_done(struct store_call *call)
{
    store_count_call(call);
    call->done = call->caller_done;
    call->done(call); /* may free call */
}

/* A purge that needs no transaction, by the same rule on every backend: running jobs are
 * never purged. Returns 1 with call->result set. */
static int purge_settled(struct store_call *call)
{
    if (call->kind != STORE_CALL_PURGE)
        return 0;
    call->purge.deleted = 0;
    if (call->purge.status != JOB_RUNNING)
        return 0;
    call->result = STORE_CONFLICT;
    return 1;
}

void store_submit(struct store *s, struct store_call *call)
{
    call->caller_done = call->done;
    call->done = counted_done;
    if (call->kind == STORE_CALL_COMPLETE)
        call->complete.repeated = 0;
    if (purge_settled(call)) {
        call->done(call);
        return;
    }
    s->ops->submit(s, call);
}

enum store_result store_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                              struct sweep_result *res)
{
    enum store_result r = s->ops->sweep(s, now, retention, batch, res);
    if (r == STORE_OK)
        counters_sweep(res, now);
    free(res->queues);
    res->queues = NULL;
    res->nqueues = res->kept = res->room = 0;
    return r;
}

static void wake(struct store_call *call)
{
    latch_open(call->ctx);
}

/* Every call ends within the store's own bounds (see the rules at the top of store.h), so
 * the wait is bounded too. */
enum store_result store_call_run(struct store *s, struct store_call *call)
{
    struct latch wt;
    latch_init(&wt);
    call->done = wake;
    call->ctx = &wt;
    store_submit(s, call);
    latch_wait_and_destroy(&wt);
    return call->result;
}

enum store_result store_enqueue(struct store *s, const struct job_spec *specs, size_t n,
                                int64_t now, struct job *out, int *created)
{
    struct store_call call = {.kind = STORE_CALL_ENQUEUE,
                              .now = now,
                              .enqueue = {.specs = specs, .n = n, .out = out, .created = created}};
    return store_call_run(s, &call);
}

enum store_result store_claim(struct store *s, const struct claim_req *req, int64_t now,
                              struct job *out, size_t *n)
{
    struct store_call call = {
        .kind = STORE_CALL_CLAIM, .now = now, .claim = {.req = req, .out = out}};
    enum store_result r = store_call_run(s, &call);
    *n = call.claim.n;
    return r;
}

enum store_result store_heartbeat(struct store *s, int64_t id, const char *token,
                                  int64_t lease_seconds, const char *progress, int64_t now,
                                  struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_HEARTBEAT,
                              .now = now,
                              .heartbeat = {.id = id,
                                            .token = token,
                                            .lease_seconds = lease_seconds,
                                            .progress = progress,
                                            .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_complete(struct store *s, int64_t id, const char *token, const char *result,
                                 int64_t now, struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_COMPLETE,
                              .now = now,
                              .complete = {.id = id, .token = token, .result = result, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_fail(struct store *s, int64_t id, const char *token,
                             const struct fail_req *req, int64_t now, struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_FAIL,
                              .now = now,
                              .fail = {.id = id, .token = token, .req = req, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_snooze(struct store *s, int64_t id, const char *token, int64_t seconds,
                               int pause_key, int64_t now, struct job *out)
{
    struct store_call call = {
        .kind = STORE_CALL_SNOOZE,
        .now = now,
        .snooze = {
            .id = id, .token = token, .seconds = seconds, .pause_key = pause_key, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_cancel(struct store *s, int64_t id, int64_t now, struct job *out)
{
    struct store_call call = {
        .kind = STORE_CALL_CANCEL, .now = now, .cancel = {.id = id, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_retry(struct store *s, int64_t id, int64_t now, struct job *out)
{
    struct store_call call = {
        .kind = STORE_CALL_RETRY, .now = now, .retry = {.id = id, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_pause(struct store *s, const char *queue, int paused, int64_t now)
{
    struct store_call call = {
        .kind = STORE_CALL_PAUSE, .now = now, .pause = {.queue = queue, .paused = paused}};
    return store_call_run(s, &call);
}

enum store_result store_limit_put(struct store *s, const struct limit *limit, int64_t now,
                                  struct limit *out)
{
    struct store_call call = {
        .kind = STORE_CALL_LIMIT_PUT, .now = now, .limit_put = {.limit = limit, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_limit_delete(struct store *s, const char *key, int64_t now,
                                     struct limit *out)
{
    struct store_call call = {
        .kind = STORE_CALL_LIMIT_DELETE, .now = now, .limit_delete = {.key = key, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_purge(struct store *s, const char *queue, int status, int limit,
                              int64_t now, size_t *deleted)
{
    struct store_call call = {.kind = STORE_CALL_PURGE,
                              .now = now,
                              .purge = {.queue = queue, .status = status, .limit = limit}};
    enum store_result r = store_call_run(s, &call);
    *deleted = call.purge.deleted;
    return r;
}

enum store_result
store_schedule_put(struct store *s, const struct store_schedule *in,
                   int64_t (*next_of)(const void *rule, int64_t old_next, int64_t now),
                   const void *rule, int64_t now, struct store_schedule *out, int *created)
{
    struct store_call call = {
        .kind = STORE_CALL_SCHEDULE_PUT,
        .now = now,
        .schedule_put = {.in = in, .next_of = next_of, .rule = rule, .out = out}};
    enum store_result r = store_call_run(s, &call);
    *created = call.schedule_put.created;
    return r;
}

enum store_result store_schedule_delete(struct store *s, const char *name, int64_t now,
                                        struct store_schedule *out)
{
    struct store_call call = {.kind = STORE_CALL_SCHEDULE_DELETE,
                              .now = now,
                              .schedule_delete = {.name = name, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_schedule_tick(struct store *s, struct store_schedule_tick_call *t,
                                      int64_t now)
{
    struct store_call call = {.kind = STORE_CALL_SCHEDULE_TICK, .now = now, .schedule_tick = *t};
    enum store_result r = store_call_run(s, &call);
    *t = call.schedule_tick;
    return r;
}

enum store_result store_schedule_pass(struct store *s, int64_t now, int64_t *seen_before,
                                      int64_t *stopped_at, int64_t *store_now)
{
    struct store_call call = {.kind = STORE_CALL_SCHEDULE_PASS, .now = now};
    enum store_result r = store_call_run(s, &call);
    *seen_before = call.schedule_pass.seen_before;
    *stopped_at = call.schedule_pass.stopped_at;
    *store_now = call.schedule_pass.now;
    return r;
}

enum store_result store_schedule_stop(struct store *s, int64_t now)
{
    struct store_call call = {
        .kind = STORE_CALL_SCHEDULE_PASS, .now = now, .schedule_pass = {.stop = 1}};
    return store_call_run(s, &call);
}

enum store_result store_sqs_queue_put(struct store *s, const char *name, const char *attributes,
                                      int create, int64_t now, struct store_sqs_queue *out)
{
    struct store_call call = {
        .kind = STORE_CALL_SQS_QUEUE_PUT,
        .now = now,
        .sqs_queue_put = {.name = name, .attributes = attributes, .create = create, .out = out}};
    return store_call_run(s, &call);
}

enum store_result store_sqs_queue_delete(struct store *s, const char *name, int64_t now)
{
    struct store_call call = {
        .kind = STORE_CALL_SQS_QUEUE_DELETE, .now = now, .sqs_queue_delete = {.name = name}};
    return store_call_run(s, &call);
}

/* Run the webhook write wc at *now (at_clock: on the store's clock, written back). */
static enum store_result webhook_run_at(struct store *s, struct store_webhook_call *wc,
                                        int64_t *now, int at_clock)
{
    struct store_call call = {
        .kind = STORE_CALL_WEBHOOK, .now = *now, .at_clock = at_clock, .webhook = wc};
    enum store_result r = store_call_run(s, &call);
    *now = call.now;
    return r;
}

static enum store_result webhook_run(struct store *s, struct store_webhook_call *wc, int64_t now)
{
    return webhook_run_at(s, wc, &now, 0);
}

enum store_result store_webhook_put(struct store *s, const struct store_webhook *in,
                                    const char *fresh_secret, int64_t now,
                                    struct store_webhook *out, int *created)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_PUT,
                                    .name = in->name,
                                    .in = in,
                                    .fresh_secret = fresh_secret,
                                    .out = out};
    enum store_result r = webhook_run(s, &wc, now);
    *created = wc.created;
    return r;
}

enum store_result store_webhook_delete(struct store *s, const char *name, int64_t now,
                                       struct store_webhook *out)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_DELETE, .name = name, .out = out};
    return webhook_run(s, &wc, now);
}

enum store_result store_webhook_lease(struct store *s, const char *name, const char *token,
                                      int64_t seconds, int64_t *now, struct store_webhook *out)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_LEASE,
                                    .name = name,
                                    .token = token,
                                    .lease_seconds = seconds,
                                    .out = out};
    return webhook_run_at(s, &wc, now, 1);
}

enum store_result store_webhook_done(struct store *s, const char *name, const char *token,
                                     const struct store_webhook *in,
                                     const struct store_webhook_parked *park, int64_t unpark,
                                     int64_t now, struct store_webhook *out)
{
    struct store_webhook_call wc = {.op = STORE_WEBHOOK_DONE,
                                    .name = name,
                                    .in = in,
                                    .token = token,
                                    .park = park,
                                    .unpark = unpark,
                                    .out = out};
    return webhook_run_at(s, &wc, &now, 1);
}
