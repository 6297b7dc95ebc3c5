/* Prints every limit the server enforces on a request, one line each:
 *   METHOD /path <TAB> WHERE <TAB> KEYWORD <TAB> VALUE
 * in the words of openapi.yaml's request schemas (WHERE: body, body.queue, body.requires[],
 * body.jobs[].priority, query.limit, path.name; KEYWORD: a JSON Schema keyword, "required",
 * "not-together" or x-jobq-max-bytes), taken from the constants the parsers use (job.h,
 * parse.h), so that check_limits.py can compare them with openapi.yaml both ways (ctest
 * openapi.limits). The rules each reader adds are written once here, beside the reader's
 * name: a limit counted in bytes prints x-jobq-max-bytes and the maxLength a schema gives it,
 * a quarter of it (a character takes up to 4 bytes of UTF-8); every string reader refuses NUL
 * (fields.h). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dedup.h"
#include "expiry.h"
#include "limit.h"
#include "parse.h"
#include "parse_events.h"
#include "router.h"
#include "schedule.h"
#include "trace.h"
#include "webhook.h"
#include "whsign.h"

#define NO_NUL "^[^\\u0000]*$"
#define UTF8_MAX 4 /* bytes of one character */
/* What a schema can say of trace_state_ok: comma-separated members, each blank or one "=". */
#define TRACE_STATE_PATTERN                                                                        \
    "^([ \\t]*|[ \\t]*[^=, \\t][^=,]*=[^=,]+)(,([ \\t]*|[ \\t]*[^=, \\t][^=,]*=[^=,]+))*$"

static const char *op; /* "METHOD /path" of the lines being printed */

static void line(const char *where, const char *keyword, const char *value)
{
    printf("%s\t%s\t%s\t%s\n", op, where, keyword, value);
}

static void num(const char *where, const char *keyword, int64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    line(where, keyword, buf);
}

/* where + "." + name, or where + "[]" when name is NULL, in buf. */
static const char *at(char *buf, size_t len, const char *where, const char *name)
{
    snprintf(buf, len, name ? "%s.%s" : "%s[]", where, name ? name : "");
    return buf;
}

static void required(const char *where)
{
    line(where, "required", "true");
}

/* fields_int(min, max) */
static void integer(const char *where, int64_t min, int64_t max)
{
    num(where, "minimum", min);
    num(where, "maximum", max);
}

/* fields_string(1, max): 1..max bytes without NUL. */
static void text(const char *where, int64_t max)
{
    num(where, "minLength", 1);
    num(where, "maxLength", max / UTF8_MAX);
    num(where, "x-jobq-max-bytes", max);
    line(where, "pattern", NO_NUL);
}

/* fields_queue, job_queue_name_ok: 1..JOB_QUEUE_MAX bytes of A-Z a-z 0-9 . _ : - */
static void queue_name(const char *where)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "^[A-Za-z0-9._:-]{1,%d}$", JOB_QUEUE_MAX);
    num(where, "minLength", 1);
    num(where, "maxLength", JOB_QUEUE_MAX);
    line(where, "pattern", pattern);
}

/* fields_tags: at most JOB_TAGS_MAX strings of 1..JOB_TAG_MAX bytes. */
static void tags(const char *where)
{
    char items[96];
    num(where, "maxItems", JOB_TAGS_MAX);
    text(at(items, sizeof items, where, NULL), JOB_TAG_MAX);
}

/* parse_job_spec, for the body of POST /jobs ("body"), a batch element ("body.jobs[]") or a
 * schedule's job ("body.job", which takes no idempotency_key: key 0). */
static void job_spec_keyed(const char *w, int key)
{
    char b[96];
    line(w, "not-together", "delay_seconds,run_at");
    queue_name(at(b, sizeof b, w, "queue"));
    required(at(b, sizeof b, w, "payload"));
    integer(at(b, sizeof b, w, "priority"), INT32_MIN, INT32_MAX);
    integer(at(b, sizeof b, w, "run_at"), 0, JOB_RUN_AT_MAX);
    integer(at(b, sizeof b, w, "delay_seconds"), 0, JOB_DELAY_MAX);
    integer(at(b, sizeof b, w, "max_attempts"), 1, JOB_ATTEMPTS_MAX);
    integer(at(b, sizeof b, w, "max_runtime_seconds"), 1, JOB_RUNTIME_MAX);
    tags(at(b, sizeof b, w, "requires"));
    if (key)
        text(at(b, sizeof b, w, "idempotency_key"), JOB_IDENT_MAX);
    /* parse_expiry, parse_dedup */
    line(w, "not-together", "expires_at,expires_in_seconds");
    text(at(b, sizeof b, w, "concurrency_key"), JOB_IDENT_MAX);
    integer(at(b, sizeof b, w, "expires_at"), 1, JOB_RUN_AT_MAX);
    integer(at(b, sizeof b, w, "expires_in_seconds"), 1, EXPIRY_IN_MAX);
    char d[48], modes[64];
    at(d, sizeof d, w, "dedup");
    required(at(b, sizeof b, d, "key"));
    text(b, JOB_IDENT_MAX);
    required(at(b, sizeof b, d, "mode"));
    snprintf(modes, sizeof modes, "%s,%s,%s", dedup_mode_name(DEDUP_ACTIVE),
             dedup_mode_name(DEDUP_WINDOW), dedup_mode_name(DEDUP_DEBOUNCE));
    line(b, "enum", modes);
    integer(at(b, sizeof b, d, "seconds"), 0, DEDUP_SECONDS_MAX);
    /* parse_workflow: a batch element's entries may be refs too (the schema's oneOf, which
     * the walk does not enter), POST /jobs's are ids. */
    if (key) /* a schedule's job refuses depends_on whole */
        num(at(b, sizeof b, w, "depends_on"), "maxItems", JOB_DEPS_MAX);
    if (strcmp(w, "body") == 0)
        num("body.depends_on[]", "minimum", 1);
    snprintf(modes, sizeof modes, "%s,%s", job_dep_mode_name(DEP_CANCEL),
             job_dep_mode_name(DEP_RUN));
    line(at(b, sizeof b, w, "on_dependency_failure"), "enum", modes);
    /* parse_trace (trace.h): a schedule's job refuses both whole. A valid traceparent is
     * exactly TRACE_PARENT_LEN bytes of ASCII; tracestate's other rules are no schema's. */
    if (key) {
        line(at(b, sizeof b, w, "traceparent"), "pattern",
             "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$");
        num(b, "maxLength", TRACE_PARENT_LEN);
        num(at(b, sizeof b, w, "tracestate"), "maxLength", TRACE_STATE_MAX);
        line(b, "pattern", TRACE_STATE_PATTERN);
    }
}

static void job_spec(const char *w)
{
    job_spec_keyed(w, 1);
}

/* The lease_token every lease call reads first. */
static void lease_token(void)
{
    required("body");
    required("body.lease_token");
    text("body.lease_token", PARSE_TOKEN_MAX);
}

static void bodies(void)
{
    op = "POST /jobs";
    required("body");
    job_spec("body");

    op = "POST /jobs/batch"; /* handle_enqueue_batch */
    required("body");
    required("body.jobs");
    num("body.jobs", "minItems", 1);
    num("body.jobs", "maxItems", JOB_BATCH_MAX);
    job_spec("body.jobs[]");
    text("body.jobs[].ref", JOB_REF_MAX); /* parse_batch_ref */

    op = "POST /claim"; /* parse_claim */
    required("body");
    line("body", "not-together", "queue,queues");
    required("body.worker_id");
    text("body.worker_id", JOB_IDENT_MAX);
    queue_name("body.queue");
    num("body.queues", "minItems", 1);
    num("body.queues", "maxItems", JOB_QUEUES_MAX);
    queue_name("body.queues[]");
    integer("body.lease_seconds", 1, JOB_LEASE_MAX);
    integer("body.max_jobs", 1, JOB_CLAIM_MAX);
    integer("body.wait_seconds", 0, JOB_WAIT_MAX);
    tags("body.capabilities");

    op = "POST /jobs/{id}/heartbeat"; /* parse_heartbeat */
    lease_token();
    integer("body.lease_seconds", 1, JOB_LEASE_MAX);

    op = "POST /jobs/{id}/complete"; /* parse_complete */
    lease_token();

    op = "POST /jobs/{id}/fail"; /* parse_fail */
    lease_token();
    text("body.error_code", JOB_IDENT_MAX);
    integer("body.retry_in_seconds", 0, JOB_DELAY_MAX);

    op = "PUT /limits/{key}"; /* read_limit_body, limit_body_check */
    required("body");
    integer("body.max_running", 1, LIMIT_RUNNING_MAX);
    required("body.rate.jobs");
    integer("body.rate.jobs", 1, LIMIT_RATE_JOBS_MAX);
    required("body.rate.per_seconds");
    integer("body.rate.per_seconds", 1, LIMIT_RATE_SECONDS_MAX);

    op = "PUT /schedules/{name}"; /* read_schedule_body, schedule_body_check */
    required("body");
    line("body", "not-together", "cron,every_seconds");
    text("body.cron", CRON_EXPR_MAX);
    integer("body.every_seconds", 1, SCHEDULE_EVERY_MAX);
    /* tz_name_check: 1..TZ_NAME_MAX bytes of A-Z a-z 0-9 _ + - in parts joined by one '/' */
    num("body.timezone", "minLength", 1);
    num("body.timezone", "maxLength", TZ_NAME_MAX);
    line("body.timezone", "pattern", "^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$");
    char policies[64];
    snprintf(policies, sizeof policies, "%s,%s,%s", schedule_catch_up_name(SCHEDULE_CATCH_UP_NONE),
             schedule_catch_up_name(SCHEDULE_CATCH_UP_LATEST),
             schedule_catch_up_name(SCHEDULE_CATCH_UP_ALL));
    line("body.catch_up", "enum", policies);
    snprintf(policies, sizeof policies, "%s,%s", schedule_overlap_name(SCHEDULE_OVERLAP_ALLOW),
             schedule_overlap_name(SCHEDULE_OVERLAP_SKIP));
    line("body.overlap", "enum", policies);
    required("body.job");
    job_spec_keyed("body.job", 0);

    op = "PUT /webhooks/{name}"; /* read_webhook_body */
    required("body");
    required("body.url");
    text("body.url", WEBHOOK_URL_MAX);
    text("body.secret", WHSIGN_SECRET_MAX);
    num("body.queues", "minItems", 1);
    num("body.queues", "maxItems", EVENT_QUEUES_MAX);
    queue_name("body.queues[]");
    num("body.types", "maxItems", JOB_EVENT_TYPE_COUNT - 1);
    char types[256] = "";
    for (int t = 1; t < JOB_EVENT_TYPE_COUNT; t++) /* job.* names sort as the enum lists them */
        snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s", t > 1 ? "," : "",
                 job_event_name((enum job_event_type)t));
    line("body.types[]", "enum", types);

    op = "POST /jobs/{id}/snooze"; /* parse_snooze */
    lease_token();
    required("body.seconds");
    integer("body.seconds", 0, JOB_DELAY_MAX);
}

/* Every status name job_status_parse() reads, but skip, plus extra (NULL: none),
 * comma-separated and sorted, in buf. */
static const char *statuses(char *buf, size_t len, int skip, const char *extra)
{
    const char *names[JOB_STATUS_COUNT + 1];
    size_t n = 0;
    for (int s = JOB_QUEUED; s < JOB_STATUS_COUNT; s++)
        if (s != skip)
            names[n++] = job_status_name((enum job_status)s);
    if (extra)
        names[n++] = extra;
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of names */
        for (size_t k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
            const char *t = names[k];
            names[k] = names[k - 1];
            names[k - 1] = t;
        }
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", names[i]);
    return buf;
}

static void queries(void)
{
    char buf[160];
    op = "GET /jobs"; /* parse_list_query */
    queue_name("query.queue");
    line("query.status", "enum", statuses(buf, sizeof buf, -1, NULL));
    integer("query.limit", 1, JOB_LIST_MAX);
    /* cursor_parse: 1..13 base-36 digits without a leading zero, at most INT64_MAX
     * ("1y2p0ij32e8e7"); the pattern keeps below "1y" at 13 digits. */
    num("query.cursor", "minLength", 1);
    num("query.cursor", "maxLength", 13);
    line("query.cursor", "pattern", "^([1-9a-z][0-9a-z]{0,11}|1[0-9a-x][0-9a-z]{11})$");

    op = "GET /events"; /* parse_events_query */
    queue_name("query.queue");
    num("query.job", "minimum", 1);
    num("query.after", "minimum", 0);
    integer("query.limit", 1, EVENT_PAGE_MAX);
    num("query.types", "maxLength", EVENT_TYPES_MAX);
    line("query.types", "pattern", EVENT_TYPES_PATTERN);

    op = "DELETE /queues/{name}/jobs"; /* purge_status: any status but running */
    required("query.status");
    line("query.status", "enum", statuses(buf, sizeof buf, JOB_RUNNING, NULL));
}

/* The router's path parameters: {id} a positive int64 (else 404), {name} a queue name and
 * {key} a limit key (handlers check them: else 400; a GET or DELETE of a schedule or a limit
 * answers 404, as none can be named so). */
static void paths(void)
{
    char name[96];
    for (size_t i = 0; i < router_table_len; i++) {
        const struct route *r = &router_table[i];
        snprintf(name, sizeof name, "%s %s", r->method, r->pattern);
        op = name;
        if (strstr(r->pattern, "{id}")) {
            required("path.id");
            num("path.id", "minimum", 1);
        }
        if (strstr(r->pattern, "{name}")) {
            required("path.name");
            queue_name("path.name");
        }
        if (strstr(r->pattern, "{key}")) { /* limit_key_check: '*' only last */
            required("path.key");
            num("path.key", "minLength", 1);
            num("path.key", "maxLength", LIMIT_KEY_MAX / UTF8_MAX);
            num("path.key", "x-jobq-max-bytes", LIMIT_KEY_MAX);
            line("path.key", "pattern", "^[^*]*[*]?$");
        }
    }
}

int main(void)
{
    bodies();
    queries();
    paths();
    return fflush(stdout) == 0 ? 0 : 1;
}
