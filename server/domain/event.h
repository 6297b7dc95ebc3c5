/* Job events (../shared/API.md "Events, webhooks and trace context"): which event a change of
 * a job's status is, and the bounds of the event log. Pure: both backends write the event of
 * each change in the transaction that makes it; the SQLite store asks job_event_type at each
 * change, and the PostgreSQL store's trigger (pg_schema.c, migration 12) is the same table in
 * SQL (tests/unit/store/test_store_events.c checks that both agree with this one). */
#ifndef JOBQ_EVENT_H
#define JOBQ_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* The event types. The numbers are stored: append only. */
enum job_event_type {
    JOB_EVENT_NONE = 0, /* no event: the change is no API status change */
    JOB_EVENT_CREATED = 1,
    JOB_EVENT_BLOCKED = 2,
    JOB_EVENT_RELEASED = 3,
    JOB_EVENT_CLAIMED = 4,
    JOB_EVENT_SUCCEEDED = 5,
    JOB_EVENT_FAILED = 6,
    JOB_EVENT_REQUEUED = 7, /* a failure with retry or an expired lease sent it back */
    JOB_EVENT_RETRIED = 8,  /* by hand */
    JOB_EVENT_SNOOZED = 9,
    JOB_EVENT_CANCELLED = 10,
    JOB_EVENT_TYPE_COUNT
};

#define EVENT_RETENTION_DEFAULT 86400 /* --events-retention-seconds */
#define EVENT_RETENTION_MAX 31536000
#define EVENT_MAX_DEFAULT 1000000 /* --events-max */
#define EVENT_PAGE_MAX 1000       /* limit of one page of GET /events */
#define EVENT_PRUNE_BATCH 1000    /* events one sweep transaction deletes at most */

/* One event of the log. Owns its strings (released by job_event_clear). */
struct job_event {
    int64_t seq; /* strictly increasing in the order readers see the log */
    enum job_event_type type;
    int64_t at; /* the store's clock, epoch seconds */
    int64_t job_id;
    char *queue;
    enum job_status status; /* the job's API status after the change */
    int64_t attempts;
    int64_t fencing_token;
    char *error_code;      /* NULL */
    char *concurrency_key; /* NULL */
    char *traceparent;     /* NULL */
};

/* Release what e owns and zero it. Accepts NULL. */
void job_event_clear(struct job_event *e);

/* Release an array of n events and the array itself. Accepts NULL. */
void job_events_free(struct job_event *v, size_t n);

/* Which events a reader wants. Borrowed strings. */
#define EVENT_QUEUES_MAX 32
struct event_filter {
    int64_t after; /* the events with a greater seq */
    int limit;     /* at most this many, 1..EVENT_PAGE_MAX */
    const char *queues[EVENT_QUEUES_MAX];
    size_t nqueues; /* 0: every queue */
    int64_t job;    /* 0: every job */
    unsigned types; /* bit 1 << type for each type wanted; 0: every type */
};

/* 1 when e passes f's queue, job and type filters (after and limit are not looked at). This
 * function can't fail. */
int event_filter_match(const struct event_filter *f, const struct job_event *e);

/* A read of the log looks at this many events after the cursor at most, matched or not: a
 * filter that matches little never scans the whole log in one read (the page's next moves
 * on past what was looked at). */
#define EVENT_SCAN_MAX 10000

/* How many events after the cursor a read asks the database for: f->limit when f filters
 * nothing (every event is a match), else EVENT_SCAN_MAX. */
int event_filter_scan(const struct event_filter *f);

/* The event of a job that went from API status `from` (JOB_STATUS_NONE: it was just
 * inserted) to `to`, the attempt outcome its row holds after the change telling a snooze from
 * a requeue (enum attempt_outcome; any value when the job was not running). JOB_EVENT_NONE
 * when from equals to. This function can't fail. */
enum job_event_type job_event_type(enum job_status from, enum job_status to, int outcome);

/* The wire name of a type ("job.created", ...); "" for JOB_EVENT_NONE or an unknown value. */
const char *job_event_name(enum job_event_type type);

/* The type named `name` (len bytes, not NUL-terminated), or JOB_EVENT_NONE when none is. */
enum job_event_type job_event_parse(const char *name, size_t len);

/* How many of the oldest events to delete now so that what remains is within the bounds:
 * `count` events kept, the oldest at `oldest_at` (JOB_NONE when none), `max` the count bound.
 * Only the count: the retention window is a time cutoff (event_cutoff). Never more than
 * EVENT_PRUNE_BATCH. This function can't fail. */
int64_t event_prune_over(int64_t count, int64_t max);

/* The time before which events are dropped at now with `retention` seconds. */
int64_t event_cutoff(int64_t now, int64_t retention);

#endif
