/* The PostgreSQL store's event log: its read and the sweep's part (pg_store.h). The events are
 * written by the statement triggers of migration 15 (pg_schema.c); docs/events.md says why a
 * reader that goes on from the last seq it saw never misses one that commits late. */
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "log.h"
#include "pg_row.h"
#include "pg_store.h"
#include "store_events.h"

/* Row i of PG_EVENTS_READ (columns from 1) into e (zeroed first). Returns 0 or -1. */
static int event_row(const PGresult *res, int i, struct job_event *e)
{
    memset(e, 0, sizeof *e);
    e->seq = pg_row_int(res, i, 1);
    e->type = (enum job_event_type)pg_row_int(res, i, 2);
    e->at = pg_row_int(res, i, 3);
    e->job_id = pg_row_int(res, i, 4);
    e->status = (enum job_status)pg_row_int(res, i, 6);
    e->attempts = pg_row_int(res, i, 7);
    e->fencing_token = pg_row_int(res, i, 8);
    if (pg_row_text(res, i, 5, &e->queue) || pg_row_text(res, i, 9, &e->error_code) ||
        pg_row_text(res, i, 10, &e->concurrency_key) || pg_row_text(res, i, 11, &e->traceparent)) {
        job_event_clear(e);
        return -1;
    }
    return 0;
}

enum store_result pg_events_read(struct store *s, const struct event_filter *f,
                                 struct event_page *out)
{
    memset(out, 0, sizeof *out);
    out->next = f->after;
    char after[24], scan[24];
    const char *params[2] = {pg_int_param(after, f->after),
                             pg_int_param(scan, event_filter_scan(f))};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), PG_EVENTS_READ, 2, params, "events read", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows > 0)
        out->pruned_through = pg_row_int(res, 0, 0);
    for (int i = 0; i < rows && !PQgetisnull(res, i, 1); i++) {
        struct job_event e;
        int full = event_row(res, i, &e) != 0 ? -1 : event_page_add(out, f, &e);
        if (full < 0) {
            log_error("out of memory reading events");
            PQclear(res);
            event_page_clear(out);
            return STORE_ERROR;
        }
        if (full)
            break;
    }
    PQclear(res);
    return STORE_OK;
}

enum store_result pg_events_prune(struct pg_conn *c, int64_t now, int64_t retention, int64_t max,
                                  int batch, int *deleted, struct event_log_seen *seen)
{
    *deleted = 0;
    *seen = (struct event_log_seen){0};
    if (batch > EVENT_PRUNE_BATCH)
        batch = EVENT_PRUNE_BATCH;
    char cutoff[24], n[24], m[24];
    const char *params[3] = {pg_int_param(cutoff, event_cutoff(now, retention)),
                             pg_int_param(n, batch), pg_int_param(m, max)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_EVENTS_PRUNE, 3, params, "events prune", &r);
    if (res && PQntuples(res) == 1) {
        *deleted = (int)pg_row_int(res, 0, 0);
        *seen = (struct event_log_seen){.oldest = pg_row_int(res, 0, 1),
                                        .written = pg_row_int(res, 0, 2),
                                        .kept = pg_row_int(res, 0, 3)};
    }
    PQclear(res);
    return r;
}
