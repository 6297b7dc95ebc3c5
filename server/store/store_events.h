/* The event log's read side of the store (store.h): a page of events and how a backend fills
 * it (store_events.c), and store_events. docs/events.md says what is guaranteed. */
#ifndef JOBQ_STORE_EVENTS_H
#define JOBQ_STORE_EVENTS_H

#include <stdatomic.h>

#include "event.h"
#include "store.h"

/* One page of the event log (store_events). */
struct event_page {
    struct job_event *events; /* owned: release with event_page_clear() */
    size_t n;
    int64_t next; /* the cursor to read on from: the last seq looked at (f->after when none) */
    int64_t pruned_through; /* the highest seq the sweep deleted: a cursor below it missed
                             * events (a gap) */
};

/* Release what page owns and zero it. Accepts NULL. */
void event_page_clear(struct event_page *page);

/* Add event e (consumed: its strings move into the page, e is zeroed) to page when it passes
 * f, and move page->next to it. Returns 1 when the page now holds f->limit events, 0 when it
 * takes more, -1 when memory ran out (logged; e is cleared). */
int event_page_add(struct event_page *page, const struct event_filter *f, struct job_event *e);

/* The events after f->after that pass f, in seq order: at most f->limit of them, among at
 * most EVENT_SCAN_MAX looked at. Only events whose transaction committed, and never one
 * before an event that may still commit with a lower seq: a reader that goes on from
 * out->next never misses one nor sees one twice (docs/events.md). STORE_OK (out filled, the
 * caller releases it with event_page_clear) or a failure. Never waits for a writer. */
static inline enum store_result store_events(struct store *s, const struct event_filter *f,
                                             struct event_page *out)
{
    return s->ops->events(s, f, out);
}

/* The event log as a sweep's pruning pass saw it after its deletes. */
struct event_log_seen {
    int64_t written; /* events ever written, by every process: SQLite the newest seq (seq is
                      * dense there); PostgreSQL the table's rows inserted as its statistics
                      * count them (rolled-back ones too; reset with the statistics) */
    int64_t oldest;  /* the oldest seq kept; 0: the log is empty */
    int64_t kept;    /* events kept: exact on SQLite, the statistics' estimate on PostgreSQL */
};

/* What a backend shows of the event log in /metrics: the last event_log_seen of this
 * process's sweep (on PostgreSQL one process sweeps at a time: the others show none). */
struct event_log_gauge {
    _Atomic int64_t written, oldest, kept;
    atomic_int seen; /* 1 once a sweep set it */
};

/* Publish what a committed pruning pass saw. Thread-safe; can't fail. */
void event_log_gauge_set(struct event_log_gauge *g, const struct event_log_seen *seen);

/* Add g's rows (jobq_events_written_total, jobq_events_oldest_seq, jobq_events_kept) to out
 * from out[k]; returns the new count (k when no sweep set g yet). out holds
 * STORE_METRICS_MAX rows and k must leave room for EVENT_LOG_METRICS more. Thread-safe. */
#define EVENT_LOG_METRICS 3
size_t event_log_gauge_metrics(struct event_log_gauge *g, struct store_metric *out, size_t k);

#endif
