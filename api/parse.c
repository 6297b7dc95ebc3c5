/* Request bodies and query strings to the store's request shapes (see parse.h). */
#include "parse.h"
#include "parse_deps.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dedup.h"
#include "expiry.h"
#include "trace.h"

#define DEFAULT_QUEUE "default"
#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_LEASE_SECONDS 30
#define DEFAULT_LIST_LIMIT 100

static const char *const default_queues[] = {DEFAULT_QUEUE};

/* expires_at (1..JOB_RUN_AT_MAX) and expires_in_seconds (1..EXPIRY_IN_MAX) as given;
 * parse_spec_times checks the rest (expiry_check). */
static int parse_expiry(struct fields *f, struct job_spec *spec)
{
    if (fields_int(f, "expires_at", 1, JOB_RUN_AT_MAX, &spec->expires_at) < 0)
        return -1;
    return fields_int(f, "expires_in_seconds", 1, EXPIRY_IN_MAX, &spec->expires_in) < 0 ? -1 : 0;
}

/* dedup: {"key", "mode", "seconds"}, checked by dedup_check. A debounce decides when the job
 * is due: with run_at or delay_seconds (timed: either was given, not null; a delay_seconds of
 * 0 too) it is invalid_request. */
static int parse_dedup(struct fields *f, struct job_spec *spec, int timed)
{
    struct fields d;
    int r = fields_object(f, "dedup", &d);
    if (r <= 0)
        return r; /* absent, or f's error set */
    const char *key = NULL, *mode = NULL;
    int64_t seconds = JOB_NONE;
    if (fields_string(&d, "key", 1, JOB_IDENT_MAX, &key) < 0 ||
        fields_string(&d, "mode", 1, 16, &mode) < 0 ||
        fields_int(&d, "seconds", 0, DEDUP_SECONDS_MAX, &seconds) < 0) {
        *f = d;
        return -1;
    }
    struct dedup checked;
    const char *bad = dedup_check(key, key ? strlen(key) : 0, mode, seconds, &checked);
    if (bad)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s%s is %s", f->prefix, bad,
                           strcmp(bad, "dedup.mode") == 0
                               ? "required: one of active, window, debounce"
                           : strcmp(bad, "dedup.key") == 0
                               ? "required: 1 to 200 bytes"
                               : "required for window (1 to 31536000) and debounce (0 to "
                                 "31536000)");
    if (checked.mode == DEDUP_DEBOUNCE && timed)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%sdedup with mode debounce decides when the job is due: no %srun_at "
                           "or %sdelay_seconds with it",
                           f->prefix, f->prefix, f->prefix);
    spec->dedup_key = checked.key;
    spec->dedup_mode = checked.mode;
    spec->dedup_seconds = checked.seconds;
    return 1;
}

/* traceparent and tracestate: W3C trace context (trace.h); a tracestate needs a traceparent. */
static int parse_trace(struct fields *f, struct job_spec *spec)
{
    const char *tp = NULL, *ts = NULL;
    if (fields_string(f, "traceparent", 0, TRACE_PARENT_LEN, &tp) < 0 ||
        fields_string(f, "tracestate", 0, TRACE_STATE_MAX, &ts) < 0)
        return -1;
    if (tp && !trace_parent_ok(tp, strlen(tp)))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%straceparent is not a W3C traceparent of version 00 "
                           "(00-<32 hex>-<16 hex>-<2 hex>, lowercase, ids not all zero)",
                           f->prefix);
    if (ts && !trace_state_ok(ts, strlen(ts)))
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%stracestate is not a W3C tracestate (at most %d bytes and %d "
                           "key=value members, no key twice)",
                           f->prefix, TRACE_STATE_MAX, TRACE_STATE_MEMBERS);
    if (ts && !ts[strspn(ts, " \t,")])
        ts = NULL; /* blank: none */
    if (ts && !tp)
        return fields_fail(f, ERR_INVALID_REQUEST, "%stracestate needs a %straceparent", f->prefix,
                           f->prefix);
    spec->traceparent = tp;
    spec->tracestate = ts;
    return 0;
}

int parse_spec_times(struct fields *f, const struct job_spec *spec, int64_t now)
{
    const char *bad = expiry_check(spec->expires_at > 0 ? spec->expires_at : JOB_NONE,
                                   spec->expires_in > 0 ? spec->expires_in : JOB_NONE, now);
    if (!bad)
        return 0;
    if (strcmp(bad, "expires_at") == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%sexpires_at must be after now (%" PRId64 ")",
                           f->prefix, now);
    if (strcmp(bad, "expires_in_seconds") == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%sexpires_in_seconds must be 1 to %d",
                           f->prefix, EXPIRY_IN_MAX);
    return fields_fail(f, ERR_INVALID_REQUEST,
                       "%sexpires_at and %sexpires_in_seconds cannot be given together", f->prefix,
                       f->prefix);
}

int parse_job_spec(struct fields *f, struct job_spec *spec, struct spec_buf *buf)
{
    int64_t v;
    int r;
    memset(spec, 0, sizeof *spec);
    memset(buf, 0, sizeof *buf);
    spec->queue = DEFAULT_QUEUE;
    spec->run_at = JOB_NONE; /* due at the store's now (+ delay_seconds) */
    spec->max_attempts = DEFAULT_MAX_ATTEMPTS;
    spec->max_runtime_seconds = JOB_NONE;

    if (fields_queue(f, "queue", &spec->queue) < 0)
        return -1;
    r = fields_json(f, "payload", 1, &buf->payload);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%spayload is required", f->prefix);
    spec->payload = buf->payload;
    r = fields_int(f, "priority", INT32_MIN, INT32_MAX, &v);
    if (r < 0)
        return -1;
    if (r > 0)
        spec->priority = (int32_t)v;

    int64_t run_at, delay;
    int has_run_at = fields_int(f, "run_at", 0, JOB_RUN_AT_MAX, &run_at);
    if (has_run_at < 0)
        return -1;
    int has_delay = fields_int(f, "delay_seconds", 0, JOB_DELAY_MAX, &delay);
    if (has_delay < 0)
        return -1;
    if (has_run_at && has_delay)
        return fields_fail(f, ERR_INVALID_REQUEST,
                           "%srun_at and %sdelay_seconds cannot be given together", f->prefix,
                           f->prefix);
    if (has_run_at)
        spec->run_at = run_at;
    if (has_delay)
        spec->delay = delay;

    if (fields_int(f, "max_attempts", 1, JOB_ATTEMPTS_MAX, &spec->max_attempts) < 0)
        return -1;
    if (fields_int(f, "max_runtime_seconds", 1, JOB_RUNTIME_MAX, &spec->max_runtime_seconds) < 0)
        return -1;
    if (fields_tags(f, "requires", &buf->requires) < 0)
        return -1;
    spec->requires = buf->requires;
    if (fields_string(f, "idempotency_key", 1, JOB_IDENT_MAX, &spec->idempotency_key) < 0)
        return -1;
    if (fields_string(f, "concurrency_key", 1, JOB_IDENT_MAX, &spec->concurrency_key) < 0)
        return -1;
    if (parse_dedup(f, spec, has_run_at || has_delay) < 0)
        return -1;
    if (parse_workflow(f, spec, buf) < 0)
        return -1;
    if (parse_trace(f, spec) < 0)
        return -1;
    return parse_expiry(f, spec);
}

void spec_buf_clear(struct spec_buf *buf)
{
    if (!buf)
        return;
    free(buf->payload);
    free(buf->requires);
    free(buf->deps);
    free(buf->dep_refs);
    memset(buf, 0, sizeof *buf);
}

int parse_claim(struct fields *f, struct claim_args *c)
{
    int64_t v;
    int r;
    memset(c, 0, sizeof *c);
    c->lease_seconds = DEFAULT_LEASE_SECONDS;
    c->max_jobs = 1;

    r = fields_string(f, "worker_id", 1, JOB_IDENT_MAX, &c->worker_id);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "worker_id is required");

    const char *queue = NULL;
    int has_queue = fields_queue(f, "queue", &queue);
    if (has_queue < 0)
        return -1;
    int has_queues = fields_queue_list(f, "queues", c->queues, JOB_QUEUES_MAX, &c->nqueues);
    if (has_queues < 0)
        return -1;
    if (has_queue && has_queues)
        return fields_fail(f, ERR_INVALID_REQUEST, "queue and queues cannot be given together");
    if (has_queue) {
        c->queues[0] = queue;
        c->nqueues = 1;
    } else if (!has_queues) {
        c->queues[0] = default_queues[0];
        c->nqueues = 1;
    }

    if (fields_int(f, "lease_seconds", 1, JOB_LEASE_MAX, &c->lease_seconds) < 0)
        return -1;
    r = fields_int(f, "max_jobs", 1, JOB_CLAIM_MAX, &v);
    if (r < 0)
        return -1;
    if (r > 0)
        c->max_jobs = (int)v;
    if (fields_int(f, "wait_seconds", 0, JOB_WAIT_MAX, &c->wait_seconds) < 0)
        return -1;
    if (fields_tags(f, "capabilities", &c->capabilities) < 0)
        return -1;
    return 0;
}

void claim_args_clear(struct claim_args *c)
{
    if (!c)
        return;
    free(c->capabilities);
    memset(c, 0, sizeof *c);
}

static int read_token(struct fields *f, struct lease_args *a)
{
    memset(a, 0, sizeof *a);
    int r = fields_string(f, "lease_token", 1, PARSE_TOKEN_MAX, &a->lease_token);
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "lease_token is required");
    return r < 0 ? -1 : 0;
}

int parse_heartbeat(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    if (fields_int(f, "lease_seconds", 1, JOB_LEASE_MAX, &a->lease_seconds) < 0)
        return -1;
    if (fields_json(f, "progress", 0, &a->json) < 0)
        return -1;
    return 0;
}

int parse_complete(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    if (fields_json(f, "result", 0, &a->json) < 0)
        return -1;
    return 0;
}

int parse_fail(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    a->fail.retry = 1;
    a->fail.retry_in_seconds = -1;
    if (fields_string(f, "error_code", 1, JOB_IDENT_MAX, &a->fail.error_code) < 0)
        return -1;
    if (fields_json(f, "error_detail", 0, &a->json) < 0)
        return -1;
    a->fail.error_detail = a->json;
    if (fields_bool(f, "retry", &a->fail.retry) < 0)
        return -1;
    if (fields_int(f, "retry_in_seconds", 0, JOB_DELAY_MAX, &a->fail.retry_in_seconds) < 0)
        return -1;
    return 0;
}

int parse_snooze(struct fields *f, struct lease_args *a)
{
    if (read_token(f, a) < 0)
        return -1;
    int r = fields_int(f, "seconds", 0, JOB_DELAY_MAX, &a->seconds);
    if (r < 0)
        return -1;
    if (r == 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "seconds is required");
    if (fields_bool(f, "pause_key", &a->pause_key) < 0)
        return -1;
    return 0;
}

void lease_args_clear(struct lease_args *a)
{
    if (!a)
        return;
    free(a->json);
    memset(a, 0, sizeof *a);
}

/* Parse an unsigned decimal of at most 9 digits. */
static int parse_small_uint(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 9 || strspn(s, "0123456789") != n)
        return -1;
    *out = strtoll(s, NULL, 10);
    return 0;
}

int parse_list_query(struct fields *f, const char *queue, const char *status, const char *limit,
                     const char *cursor, struct list_filter *out)
{
    memset(out, 0, sizeof *out);
    out->status = -1;
    out->limit = DEFAULT_LIST_LIMIT;
    if (queue) {
        if (!job_queue_name_ok(queue)) {
            char why[64];
            fields_queue_why(queue, strlen(queue), why, sizeof why);
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "queue must be 1 to %d characters of A-Z a-z 0-9 . _ : - (%s)",
                               JOB_QUEUE_MAX, why);
        }
        out->queue = queue;
    }
    if (status) {
        enum job_status s;
        if (job_status_parse(status, &s) < 0)
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "status must be one of queued, blocked, running, succeeded, "
                               "failed, cancelled");
        out->status = (int)s;
    }
    if (limit) {
        int64_t v;
        if (parse_small_uint(limit, &v) < 0 || v < 1 || v > JOB_LIST_MAX)
            return fields_fail(f, ERR_INVALID_REQUEST, "limit must be an integer between 1 and %d",
                               JOB_LIST_MAX);
        out->limit = (int)v;
    }
    if (cursor && cursor_parse(cursor, &out->after_id) < 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "cursor is not a cursor from next_cursor");
    return 0;
}

static const char base36[] = "0123456789abcdefghijklmnopqrstuvwxyz";

void cursor_format(int64_t after, char *buf, size_t len)
{
    char tmp[16];
    size_t n = 0;
    uint64_t v = after > 0 ? (uint64_t)after : 0;
    do {
        tmp[n++] = base36[v % 36];
        v /= 36;
    } while (v && n < sizeof tmp);
    size_t i = 0;
    for (; i < n && i + 1 < len; i++)
        buf[i] = tmp[n - 1 - i];
    if (len)
        buf[i] = '\0';
}

int cursor_parse(const char *s, int64_t *after)
{
    size_t n = strlen(s);
    if (n == 0 || n > 13 || s[0] == '0')
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = s[i] ? strchr(base36, s[i]) : NULL;
        if (!d)
            return -1;
        uint64_t digit = (uint64_t)(d - base36);
        if (v > ((uint64_t)INT64_MAX - digit) / 36)
            return -1;
        v = v * 36 + digit;
    }
    *after = (int64_t)v;
    return 0;
}
