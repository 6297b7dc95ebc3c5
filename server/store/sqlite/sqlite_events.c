#include "sqlite_events.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store_events.h"

/* A stored status as the API's (a stored 0, scheduled, is queued). */
static enum job_status api_status(int stored)
{
    return stored == 0 ? JOB_QUEUED : (enum job_status)stored;
}

int sqlite_events_note(struct sqlite_events *ev, int64_t id, int from, int to, int outcome)
{
    enum job_status a = from < 0 ? JOB_STATUS_NONE : api_status(from), b = api_status(to);
    enum job_event_type type = job_event_type(a, b, outcome);
    if (type == JOB_EVENT_NONE)
        return 0;
    if (ev->n == ev->cap) {
        size_t cap = ev->cap ? ev->cap * 2 : 4;
        struct sqlite_event_note *v = realloc(ev->v, cap * sizeof *v);
        if (!v) {
            log_error("out of memory noting an event");
            return -1;
        }
        ev->v = v;
        ev->cap = cap;
    }
    ev->v[ev->n++] = (struct sqlite_event_note){id, type, b};
    return 0;
}

void sqlite_events_clear(struct sqlite_events *ev)
{
    free(ev->v);
    ev->v = NULL;
    ev->n = ev->cap = 0;
}

int sqlite_events_write(struct sqlite_conn *conn, const struct sqlite_events *ev, int64_t now)
{
    for (size_t i = 0; i < ev->n; i++) {
        sqlite3_stmt *st = sqlite_conn_stmt(conn, STMT_EVENT_ADD);
        int rc = sqlite_conn_bindf(st, "iiii", ev->v[i].id, (int64_t)ev->v[i].type, now,
                                   (int64_t)ev->v[i].status);
        if (rc == SQLITE_OK)
            rc = sqlite_conn_step(conn, st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return rc;
    }
    return SQLITE_DONE;
}

/* Copy text column col into *out (NULL for NULL). Returns 0 or -1 (out of memory). */
static int text_dup(sqlite3_stmt *st, int col, char **out)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    *out = NULL;
    if (!t)
        return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : -1;
    *out = strdup((const char *)t);
    return *out ? 0 : -1;
}

/* The current row of STMT_EVENTS_READ into e (zeroed first). Returns 0 or -1. */
static int event_row(sqlite3_stmt *st, struct job_event *e)
{
    memset(e, 0, sizeof *e);
    e->seq = sqlite3_column_int64(st, 0);
    e->type = (enum job_event_type)sqlite3_column_int(st, 1);
    e->at = sqlite3_column_int64(st, 2);
    e->job_id = sqlite3_column_int64(st, 3);
    e->status = (enum job_status)sqlite3_column_int(st, 5);
    e->attempts = sqlite3_column_int64(st, 6);
    e->fencing_token = sqlite3_column_int64(st, 7);
    if (text_dup(st, 4, &e->queue) != 0 || text_dup(st, 8, &e->error_code) != 0 ||
        text_dup(st, 9, &e->concurrency_key) != 0 || text_dup(st, 10, &e->traceparent) != 0) {
        job_event_clear(e);
        return -1;
    }
    return 0;
}

enum store_result sqlite_events_read(struct sqlite_conn *conn, const struct event_filter *f,
                                     struct event_page *out)
{
    memset(out, 0, sizeof *out);
    out->next = f->after;
    sqlite3_stmt *st = sqlite_conn_stmt(conn, STMT_EVENTS_READ);
    int rc = sqlite_conn_bindf(st, "ii", f->after, (int64_t)event_filter_scan(f));
    int full = 0;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if (full || (rc = sqlite_conn_step(conn, st)) != SQLITE_ROW)
            break;
        struct job_event e;
        if (event_row(st, &e) != 0 || (full = event_page_add(out, f, &e)) < 0) {
            log_error("out of memory reading events");
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && !(full && rc == SQLITE_ROW)) {
        event_page_clear(out);
        return sqlite_conn_fail(conn, rc, "events read");
    }
    /* After the events: a sweep between the two reads shows as a gap, never as a miss. */
    st = sqlite_conn_stmt(conn, STMT_EVENTS_KEPT);
    rc = sqlite_conn_step(conn, st);
    if (rc == SQLITE_ROW)
        out->pruned_through = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW) {
        event_page_clear(out);
        return sqlite_conn_fail(conn, rc == SQLITE_DONE ? SQLITE_CORRUPT : rc, "events kept");
    }
    return STORE_OK;
}

/* The oldest and newest seq of the log (0 and 0: empty) into *seen. */
static enum store_result bounds(struct sqlite_conn *conn, struct event_log_seen *seen)
{
    sqlite3_stmt *st = sqlite_conn_stmt(conn, STMT_EVENTS_BOUNDS);
    int rc = sqlite_conn_step(conn, st);
    if (rc == SQLITE_ROW) {
        seen->oldest = sqlite3_column_int64(st, 0);
        seen->written = sqlite3_column_int64(st, 1);
        /* seq is dense here (the rowid, deleted from the oldest end only). */
        seen->kept = seen->written ? seen->written - seen->oldest + 1 : 0;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return sqlite_conn_fail(conn, rc, "events bounds");
    return STORE_OK;
}

enum store_result sqlite_events_prune(struct sqlite_conn *conn, int64_t now, int64_t retention,
                                      int64_t max, int batch, int *deleted,
                                      struct event_log_seen *seen)
{
    *deleted = 0;
    *seen = (struct event_log_seen){0};
    enum store_result r = bounds(conn, seen);
    if (r != STORE_OK || seen->written == 0)
        return r;
    int64_t oldest = seen->oldest, newest = seen->written;
    int64_t over = event_prune_over(seen->kept, max);
    if (batch > EVENT_PRUNE_BATCH)
        batch = EVENT_PRUNE_BATCH;
    sqlite3_stmt *st = sqlite_conn_stmt(conn, STMT_EVENTS_PRUNE);
    int rc = sqlite_conn_bindf(st, "iiii", event_cutoff(now, retention), (int64_t)batch, newest,
                               over > 0 ? oldest + over - 1 : 0);
    int64_t top = 0;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite_conn_step(conn, st)) != SQLITE_ROW)
            break;
        int64_t seq = sqlite3_column_int64(st, 0);
        if (seq > top)
            top = seq;
        (*deleted)++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(conn, rc, "events prune");
    if (top == 0)
        return STORE_OK;
    if ((r = bounds(conn, seen)) != STORE_OK)
        return r;
    st = sqlite_conn_stmt(conn, STMT_EVENTS_PRUNED);
    return sqlite_conn_finish(conn, st, sqlite_conn_bindf(st, "i", top), "events pruned");
}
