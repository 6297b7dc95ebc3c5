/* Schedule endpoints: PUT /schedules/{name} (create or replace), GET /schedules, GET
 * /schedules/{name}, DELETE /schedules/{name}; and the reading of a schedule's job body that
 * the ticker is given (schedule_job_spec). Writes go through store_submit, reads through the
 * reader threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "clock.h"
#include "fields.h"
#include "handlers.h"
#include "parse.h"
#include "pending.h"
#include "reply.h"
#include "sched_rule.h"
#include "store_schedule.h"
#include "ticker.h"

#define SCHEDULES_PATH "/schedules/"
#define TEXT_MAX                                                                                   \
    4096 /* bytes of cron, timezone, catch_up and overlap read (schedule.h then
                         checks each against its own bound) */

/* Add name: v, or null when v is none; 0 when out of memory. */
static int add_time(cJSON *o, const char *name, int64_t v, int64_t none)
{
    if (v == none)
        return cJSON_AddNullToObject(o, name) != NULL;
    return cJSON_AddNumberToObject(o, name, (double)v) != NULL;
}

/* A schedule's object, or NULL when out of memory. */
static cJSON *schedule_json(const struct store_schedule *s)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o && cJSON_AddStringToObject(o, "name", s->name);
    if (ok && s->cron)
        ok = cJSON_AddStringToObject(o, "cron", s->cron) != NULL;
    else if (ok)
        ok = cJSON_AddNumberToObject(o, "every_seconds", (double)s->every_seconds) != NULL;
    ok = ok && cJSON_AddStringToObject(o, "timezone", s->timezone);
    ok = ok && cJSON_AddRawToObject(o, "job", s->job);
    ok = ok && cJSON_AddStringToObject(o, "catch_up", schedule_catch_up_name(s->catch_up));
    ok = ok && cJSON_AddStringToObject(o, "overlap", schedule_overlap_name(s->overlap));
    ok = ok && cJSON_AddBoolToObject(o, "paused", s->paused);
    ok = ok && add_time(o, "next_run_at", s->next_run_at, JOB_NONE);
    ok = ok && add_time(o, "last_run_at", s->last_run_at, JOB_NONE);
    ok = ok && add_time(o, "last_job_id", s->last_job_id, 0);
    ok = ok && cJSON_AddNumberToObject(o, "created_at", (double)s->created_at);
    ok = ok && cJSON_AddNumberToObject(o, "updated_at", (double)s->updated_at);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A schedule call or read across its calls: the name of the path, the body, the answer. */
struct schedule_state {
    struct pending p;      /* writes */
    struct pending_read r; /* reads (r.read is set) */
    char name[JOB_QUEUE_MAX + 1];
    int64_t now;
    struct store_schedule in, out; /* put: the body (in owns its texts); put, delete: answer */
    struct sched_rule rule;        /* put */
    struct store_schedule *all;    /* reads: n of them, owned */
    size_t n;
};

static void schedule_state_free(void *arg)
{
    struct schedule_state *ss = arg;
    if (!ss)
        return;
    store_schedule_clear(&ss->in);
    store_schedule_clear(&ss->out);
    sched_rule_clear(&ss->rule);
    store_schedules_free(ss->all, ss->n);
    free(ss);
}

/* How a request names a schedule in its path. */
enum schedule_path {
    PATH_NONE,   /* GET /schedules */
    PATH_PUT,    /* a name that cannot be valid is invalid_request */
    PATH_LOOKUP, /* GET, DELETE: a name that cannot be valid names no schedule (not_found) */
};

/* A new state for rq with its path name (or none), or an answer (400, 404, 500) in *res. */
static struct schedule_state *schedule_start(struct request *rq, enum schedule_path path,
                                             enum MHD_Result *res)
{
    const char *s = rq->url + strlen(SCHEDULES_PATH);
    size_t n = path != PATH_NONE ? strlen(s) : 0;
    if (path != PATH_NONE &&
        (n == 0 || n > JOB_QUEUE_MAX || memchr(s, '/', n) || !job_queue_name_ok(s))) {
        char why[64], rule[128];
        fields_queue_why(s, n, why, sizeof why);
        snprintf(rule, sizeof rule,
                 "a schedule name is 1-%d characters of A-Z a-z 0-9 . _ : - (%s)", JOB_QUEUE_MAX,
                 why);
        *res = path == PATH_LOOKUP
                   ? reply_error(rq, ERR_NOT_FOUND, "no schedule can have this name: %s", rule)
                   : reply_error(rq, ERR_INVALID_REQUEST, "name: %s", rule);
        return NULL;
    }
    struct schedule_state *ss = calloc(1, sizeof *ss);
    if (!ss) {
        *res = reply_error(rq, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    memcpy(ss->name, s, n);
    ss->now = clock_now();
    rq->state = ss;
    rq->state_free = schedule_state_free;
    return ss;
}

/* The job fields a schedule's job may not hold: the schedule sets its idempotency_key, and
 * a tick's job depends on no other job. */
static int job_refusals(struct fields *job)
{
    static const struct {
        const char *field, *why;
    } refused[] = {
        {"idempotency_key", "set by the schedule for each tick (schedule:{name}:{tick})"},
        {"depends_on", "a schedule's job cannot depend on other jobs"},
        {"traceparent", "each run of a schedule starts a trace of its own"},
        {"tracestate", "each run of a schedule starts a trace of its own"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(job->obj, refused[i].field);
        if (v && !cJSON_IsNull(v))
            return fields_fail(job, ERR_INVALID_REQUEST, "%s%s: %s", job->prefix, refused[i].field,
                               refused[i].why);
    }
    return 0;
}

/* Check the job body of a schedule as POST /jobs checks it, and the fields it may not hold.
 * Messages name job.<field>. */
static int read_job(struct fields *f, int64_t now, char **text)
{
    struct fields job;
    int has = fields_object(f, "job", &job);
    if (has == 0)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "job: required (a job body as POST /jobs takes)");
    if (has < 0)
        return -1;
    struct job_spec spec;
    struct spec_buf buf = {0};
    int rc = parse_job_spec(&job, &spec, &buf);
    if (rc == 0)
        rc = parse_spec_times(&job, &spec, now);
    if (rc == 0)
        rc = job_refusals(&job);
    spec_buf_clear(&buf);
    if (rc != 0) {
        f->code = job.code;
        memcpy(f->msg, job.msg, sizeof f->msg);
        return -1;
    }
    return fields_json(f, "job", 0, text) == 1 ? 0 : -1;
}

/* A string field's text and length into *out and *len (NULL when absent). */
static int read_text(struct fields *f, const char *name, const char **out, size_t *len)
{
    int has = fields_string(f, name, 0, TEXT_MAX, out);
    *len = has == 1 ? strlen(*out) : 0;
    return has;
}

/* The body of PUT /schedules/{name} into ss->in and ss->rule, or -1 with f's error set
 * (internal when a zone file cannot be read). */
static int read_schedule_body(struct fields *f, struct schedule_state *ss)
{
    struct store_schedule *in = &ss->in;
    struct schedule_body b = {0};
    int paused = 0;
    if (read_job(f, ss->now, &in->job) < 0 || read_text(f, "cron", &b.cron, &b.cron_len) < 0 ||
        (b.has_every = fields_int(f, "every_seconds", INT64_MIN, INT64_MAX, &b.every_seconds)) <
            0 ||
        read_text(f, "timezone", &b.timezone, &b.timezone_len) < 0 ||
        read_text(f, "catch_up", &b.catch_up, &b.catch_up_len) < 0 ||
        read_text(f, "overlap", &b.overlap, &b.overlap_len) < 0 ||
        fields_bool(f, "paused", &paused) < 0)
        return -1;
    char why[256];
    switch (sched_rule_make(&b, &ss->rule, why, sizeof why)) {
    case SCHED_RULE_OK:
        break;
    case SCHED_RULE_INVALID:
        return fields_fail(f, ERR_INVALID_REQUEST, "%s", why);
    default:
        return fields_fail(f, ERR_INTERNAL, "%s", why);
    }
    memcpy(in->name, ss->name, sizeof in->name);
    in->cron = b.cron ? strdup(ss->rule.rule.cron_text) : NULL;
    in->every_seconds = ss->rule.rule.every_seconds;
    in->timezone = strdup(ss->rule.rule.timezone);
    in->catch_up = ss->rule.rule.catch_up;
    in->overlap = ss->rule.rule.overlap;
    in->paused = paused;
    if ((b.cron && !in->cron) || !in->timezone)
        return fields_fail(f, ERR_INTERNAL, "out of memory");
    return 0;
}

/* Answer a schedule write or single read that is over. */
static enum MHD_Result schedule_reply(struct request *rq, struct schedule_state *ss,
                                      enum store_result r)
{
    if (r == STORE_NOT_FOUND)
        return reply_error(rq, ERR_NOT_FOUND, "no schedule named %s", ss->name);
    if (r == STORE_CONFLICT)
        return reply_error(rq, ERR_CONFLICT,
                           "name: at most %d schedules may exist; delete one before adding %s",
                           STORE_SCHEDULES_MAX, ss->name);
    if (r != STORE_OK)
        return reply_store_error(rq, r, "the schedule");
    return reply_json(rq, MHD_HTTP_OK, schedule_json(&ss->out));
}

enum MHD_Result handle_schedule_put(struct request *rq)
{
    struct schedule_state *ss = rq->state;
    if (ss)
        return schedule_reply(rq, ss, ss->p.call.result);
    enum MHD_Result res;
    if (!(ss = schedule_start(rq, PATH_PUT, &res)))
        return res;
    struct fields f;
    cJSON *root = NULL;
    if (fields_parse_body(&f, &root, rq->body, rq->body_len) < 0 ||
        read_schedule_body(&f, ss) < 0) {
        cJSON_Delete(root);
        return fields_reply(rq, &f);
    }
    cJSON_Delete(root);
    ss->p.call = (struct store_call){
        .kind = STORE_CALL_SCHEDULE_PUT,
        .now = ss->now,
        .schedule_put = {
            .in = &ss->in, .next_of = sched_rule_put_next, .rule = &ss->rule, .out = &ss->out}};
    return pending_submit(rq, &ss->p);
}

enum MHD_Result handle_schedule_delete(struct request *rq)
{
    struct schedule_state *ss = rq->state;
    if (ss)
        return schedule_reply(rq, ss, ss->p.call.result);
    enum MHD_Result res;
    if (!(ss = schedule_start(rq, PATH_LOOKUP, &res)))
        return res;
    ss->p.call = (struct store_call){.kind = STORE_CALL_SCHEDULE_DELETE,
                                     .now = ss->now,
                                     .schedule_delete = {.name = ss->name, .out = &ss->out}};
    return pending_submit(rq, &ss->p);
}

/* The state of a read, from its struct pending_read. */
static struct schedule_state *state_of(struct pending_read *r)
{
    return (struct schedule_state *)((char *)r - offsetof(struct schedule_state, r));
}

static enum store_result schedules_read(struct pending_read *r, struct store *s)
{
    struct schedule_state *ss = state_of(r);
    return store_schedules(s, ss->name[0] ? ss->name : NULL, &ss->all, &ss->n);
}

/* Start the read of ss (its name, or every schedule when it has none). */
static enum MHD_Result read_start(struct request *rq, enum schedule_path path)
{
    enum MHD_Result res;
    struct schedule_state *ss = schedule_start(rq, path, &res);
    if (!ss)
        return res;
    ss->r.read = schedules_read;
    return pending_read_submit(rq, &ss->r);
}

enum MHD_Result handle_schedule_get(struct request *rq)
{
    struct schedule_state *ss = rq->state;
    if (!ss)
        return read_start(rq, PATH_LOOKUP);
    if (ss->r.result != STORE_OK)
        return schedule_reply(rq, ss, ss->r.result);
    return reply_json(rq, MHD_HTTP_OK, schedule_json(&ss->all[0]));
}

enum MHD_Result handle_schedules(struct request *rq)
{
    struct schedule_state *ss = rq->state;
    if (!ss)
        return read_start(rq, PATH_NONE);
    if (ss->r.result != STORE_OK)
        return reply_store_error(rq, ss->r.result, "the schedule list");
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "schedules");
    for (size_t i = 0; arr && i < ss->n; i++) {
        cJSON *o = schedule_json(&ss->all[i]);
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            arr = NULL;
        }
    }
    if (!arr) {
        cJSON_Delete(root);
        root = NULL;
    }
    return reply_json(rq, MHD_HTTP_OK, root);
}

/* What schedule_job_spec's hold owns. */
struct spec_hold {
    cJSON *root;
    struct spec_buf buf;
};

static void schedule_job_release(void *hold)
{
    struct spec_hold *h = hold;
    if (!h)
        return;
    cJSON_Delete(h->root);
    spec_buf_clear(&h->buf);
    free(h);
}

static int schedule_job_spec(const char *job, struct job_spec *spec, void **hold)
{
    struct spec_hold *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    struct fields f;
    if (fields_parse_body(&f, &h->root, job, strlen(job)) < 0 ||
        parse_job_spec(&f, spec, &h->buf) < 0) {
        schedule_job_release(h);
        return -1;
    }
    *hold = h;
    return 0;
}

const struct ticker_spec_fns schedule_job_fns = {schedule_job_spec, schedule_job_release};
