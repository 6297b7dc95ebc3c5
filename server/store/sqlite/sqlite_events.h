/* The SQLite store's event log (event.h, docs/events.md). Each write transaction notes the
 * changes of its jobs' API statuses as it makes them (sqlite_events_note, into its struct
 * sqlite_notes), and the runner writes their events right after the transaction's work, in
 * the same database transaction (sqlite_events_write): a change that commits has its event, a
 * rolled-back one has none. Only this process writes the file, so seq (the rowid) grows in
 * commit order. No trigger on the jobs table: a trigger makes SQLite keep a statement
 * journal for every write of the table (sqlite_schema.c, migration 5). */
#ifndef JOBQ_SQLITE_EVENTS_H
#define JOBQ_SQLITE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "sqlite_conn.h"
#include "store.h"
#include "store_events.h"

/* One change noted: job id became API status `status` by an event of `type`. */
struct sqlite_event_note {
    int64_t id;
    enum job_event_type type;
    enum job_status status;
};

/* The changes of one transaction, in the order it made them. */
struct sqlite_events {
    struct sqlite_event_note *v;
    size_t n, cap;
};

#define SQLITE_EVENTS_INIT                                                                         \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Note that job id went from stored status `from` (-1: it was inserted) to stored status `to`
 * (a stored 0, scheduled, is the API's queued), the row's attempt outcome after the change
 * being `outcome` (job_event_type). Nothing is noted when the API status did not change.
 * Returns 0, or -1 when memory ran out (logged; the caller fails its transaction). */
int sqlite_events_note(struct sqlite_events *ev, int64_t id, int from, int to, int outcome);

/* Forget every note. Accepts an empty ev. This function can't fail. */
void sqlite_events_clear(struct sqlite_events *ev);

/* Inside the writer's open transaction on conn, right after the work of the transaction that
 * noted ev: one event row per note, `at` now, the other fields from the job's row. Returns
 * SQLITE_DONE or the code of the step that failed; the caller then rolls back. */
int sqlite_events_write(struct sqlite_conn *conn, const struct sqlite_events *ev, int64_t now);

/* store_events on reader connection conn. */
enum store_result sqlite_events_read(struct sqlite_conn *conn, const struct event_filter *f,
                                     struct event_page *out);

/* The sweep's part, inside the writer's open transaction on conn: delete at most `batch` of
 * the oldest events that are older than now - retention or beyond the newest `max`, never
 * the newest event; *deleted is how many went, *seen the log after the deletes. */
enum store_result sqlite_events_prune(struct sqlite_conn *conn, int64_t now, int64_t retention,
                                      int64_t max, int batch, int *deleted,
                                      struct event_log_seen *seen);

#endif
