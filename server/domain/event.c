/* Job events (event.h). */
#include "event.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[JOB_EVENT_TYPE_COUNT] = {
    [JOB_EVENT_NONE] = "",
    [JOB_EVENT_CREATED] = "job.created",
    [JOB_EVENT_BLOCKED] = "job.blocked",
    [JOB_EVENT_RELEASED] = "job.released",
    [JOB_EVENT_CLAIMED] = "job.claimed",
    [JOB_EVENT_SUCCEEDED] = "job.succeeded",
    [JOB_EVENT_FAILED] = "job.failed",
    [JOB_EVENT_REQUEUED] = "job.requeued",
    [JOB_EVENT_RETRIED] = "job.retried",
    [JOB_EVENT_SNOOZED] = "job.snoozed",
    [JOB_EVENT_CANCELLED] = "job.cancelled",
};

/* The event of a job that comes back to queued from `from`. */
static enum job_event_type queued_again(enum job_status from, int outcome)
{
    switch (from) {
    case JOB_BLOCKED:
        return JOB_EVENT_RELEASED;
    case JOB_RUNNING:
        return outcome == ATTEMPT_SNOOZED ? JOB_EVENT_SNOOZED : JOB_EVENT_REQUEUED;
    default: /* failed or cancelled: a retry */
        return JOB_EVENT_RETRIED;
    }
}

enum job_event_type job_event_type(enum job_status from, enum job_status to, int outcome)
{
    if (from == to)
        return JOB_EVENT_NONE;
    if (from == JOB_STATUS_NONE)
        return to == JOB_BLOCKED ? JOB_EVENT_BLOCKED : JOB_EVENT_CREATED;
    switch (to) {
    case JOB_QUEUED:
        return queued_again(from, outcome);
    case JOB_RUNNING:
        return JOB_EVENT_CLAIMED;
    case JOB_SUCCEEDED:
        return JOB_EVENT_SUCCEEDED;
    case JOB_FAILED:
        return JOB_EVENT_FAILED;
    case JOB_CANCELLED:
        return JOB_EVENT_CANCELLED;
    case JOB_BLOCKED:
        /* a retried job, or a dependent of one, waits for its dependencies again */
        return from == JOB_FAILED || from == JOB_CANCELLED ? JOB_EVENT_RETRIED : JOB_EVENT_BLOCKED;
    default:
        return JOB_EVENT_NONE;
    }
}

const char *job_event_name(enum job_event_type type)
{
    if ((unsigned)type >= JOB_EVENT_TYPE_COUNT)
        return "";
    return names[type];
}

enum job_event_type job_event_parse(const char *name, size_t len)
{
    for (int t = JOB_EVENT_CREATED; t < JOB_EVENT_TYPE_COUNT; t++) {
        if (strlen(names[t]) == len && memcmp(names[t], name, len) == 0)
            return (enum job_event_type)t;
    }
    return JOB_EVENT_NONE;
}

int64_t event_prune_over(int64_t count, int64_t max)
{
    if (count <= max)
        return 0;
    return count - max < EVENT_PRUNE_BATCH ? count - max : EVENT_PRUNE_BATCH;
}

int64_t event_cutoff(int64_t now, int64_t retention)
{
    return now - retention;
}

void job_event_clear(struct job_event *e)
{
    if (!e)
        return;
    free(e->queue);
    free(e->error_code);
    free(e->concurrency_key);
    free(e->traceparent);
    memset(e, 0, sizeof *e);
}

void job_events_free(struct job_event *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        job_event_clear(&v[i]);
    free(v);
}

int event_filter_scan(const struct event_filter *f)
{
    if (f->job > 0 || f->types || f->nqueues)
        return EVENT_SCAN_MAX;
    return f->limit;
}

int event_filter_match(const struct event_filter *f, const struct job_event *e)
{
    if (f->job > 0 && e->job_id != f->job)
        return 0;
    if (f->types && !(f->types & (1u << e->type)))
        return 0;
    if (f->nqueues == 0)
        return 1;
    for (size_t i = 0; i < f->nqueues; i++) {
        if (e->queue && strcmp(f->queues[i], e->queue) == 0)
            return 1;
    }
    return 0;
}
