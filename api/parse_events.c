#include "parse_events.h"

#include <stdint.h>
#include <string.h>

#include "job.h"

/* s as a decimal integer in [min, INT64_MAX] without sign or leading zeros ("0" alone is
 * one). Returns 0 and sets *out, or -1. */
static int decimal(const char *s, int64_t min, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 19 || (s[0] == '0' && n > 1))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX || (int64_t)v < min)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* types: comma-separated type names into out->types. */
static int parse_types(struct fields *f, const char *types, struct event_filter *out)
{
    const char *p = types;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        enum job_event_type t = job_event_parse(p, len);
        if (t == JOB_EVENT_NONE)
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "types: '%.*s' is not an event type (job.created, job.blocked, "
                               "job.released, job.claimed, job.succeeded, job.failed, "
                               "job.requeued, job.retried, job.snoozed, job.cancelled)",
                               (int)(len > 64 ? 64 : len), p);
        out->types |= 1u << t;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

int parse_events_query(struct fields *f, const char *const *queues, size_t nqueues, const char *job,
                       const char *types, const char *last_event_id, const char *after,
                       const char *limit, struct event_filter *out)
{
    memset(out, 0, sizeof *out);
    out->limit = EVENT_PAGE_DEFAULT;
    if (nqueues > EVENT_QUEUES_MAX)
        return fields_fail(f, ERR_INVALID_REQUEST, "queue: at most %d queues", EVENT_QUEUES_MAX);
    for (size_t i = 0; i < nqueues; i++) {
        if (!queues[i] || !job_queue_name_ok(queues[i])) {
            char why[64];
            fields_queue_why(queues[i] ? queues[i] : "", queues[i] ? strlen(queues[i]) : 0, why,
                             sizeof why);
            return fields_fail(f, ERR_INVALID_REQUEST,
                               "queue must be 1 to %d characters of A-Z a-z 0-9 . _ : - (%s)",
                               JOB_QUEUE_MAX, why);
        }
        out->queues[out->nqueues++] = queues[i];
    }
    if (job && decimal(job, 1, &out->job) != 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "job must be a job id (a positive integer)");
    if (types && strlen(types) > EVENT_TYPES_MAX)
        return fields_fail(f, ERR_INVALID_REQUEST, "types: at most %d bytes", EVENT_TYPES_MAX);
    if (types && parse_types(f, types, out) != 0)
        return -1;
    const char *cursor = last_event_id ? last_event_id : after;
    if (cursor && decimal(cursor, 0, &out->after) != 0)
        return fields_fail(f, ERR_INVALID_REQUEST, "%s must be an event's seq (0 or more)",
                           last_event_id ? "Last-Event-ID" : "after");
    int64_t v;
    if (limit && (decimal(limit, 1, &v) != 0 || v > EVENT_PAGE_MAX))
        return fields_fail(f, ERR_INVALID_REQUEST, "limit must be an integer between 1 and %d",
                           EVENT_PAGE_MAX);
    if (limit)
        out->limit = (int)v;
    return 0;
}
