/* Reads of the PostgreSQL store (get, list, queues, ping, stats), on a pooled connection
 * taken on the caller's thread within the reads' share of the pool (pg_pool_take_read):
 * bounded by the checkout and statement timeouts. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

PGresult *pg_read_one(struct pg_store *st, enum pg_stmt_id id, int n, const char *const *params,
                      const char *what, enum store_result *r)
{
    struct pg_conn *c = NULL;
    PGresult *res = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        *r = pg_pool_take_read(st, &c);
        if (*r != STORE_OK)
            return NULL;
        res = pg_conn_exec(c, id, n, params, what, r);
        pg_pool_give_read(st, c);
        /* A read is safe to run again on a new connection when this one had died. */
        if (res || *r != STORE_UNAVAILABLE)
            break;
    }
    if (!res)
        atomic_fetch_add(&st->errors, 1);
    return res;
}

enum store_result pg_read_get(struct store *s, int64_t id, struct job *out)
{
    char idb[24];
    const char *params[1] = {pg_int_param(idb, id)};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), PG_JOB_GET, 1, params, "get", &r);
    if (!res)
        return r;
    r = PQntuples(res) == 0               ? STORE_NOT_FOUND
        : pg_row_job(res, 0, 0, out) == 0 ? STORE_OK
                                          : STORE_ERROR;
    PQclear(res);
    return r;
}

enum store_result pg_read_list(struct store *s, const struct list_filter *f, struct job *out,
                               size_t *n, int *more)
{
    *n = 0;
    *more = 0;
    char after[24], limit[24], status[8];
    const char *params[4] = {pg_int_param(after, f->after_id), pg_int_param(limit, f->limit + 1)};
    enum pg_stmt_id id = PG_LIST_ALL;
    int np = 2;
    if (f->status >= 0) {
        /* "queued" covers what SQLite calls scheduled: PostgreSQL stores both as queued. */
        int want = f->status;
        params[np++] = pg_int_param(status, want);
        id = PG_LIST_STATUS;
    }
    if (f->queue) {
        params[np++] = f->queue;
        id = id == PG_LIST_STATUS ? PG_LIST_QUEUE_STATUS : PG_LIST_QUEUE;
    }
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), id, np, params, "list", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    for (int i = 0; i < rows && i < f->limit; i++) {
        if (pg_row_job(res, i, 0, &out[*n]) != 0) {
            for (size_t k = 0; k < *n; k++)
                job_clear(&out[k]);
            *n = 0;
            PQclear(res);
            return STORE_ERROR;
        }
        (*n)++;
    }
    *more = rows > f->limit;
    PQclear(res);
    return STORE_OK;
}

/* The row of queue name in rows[0..*n), appended when new. NULL when memory ran out. */
static struct queue_stats *row_of(struct queue_stats **rows, size_t *n, size_t *cap,
                                  const char *name)
{
    if (*n > 0 && strcmp((*rows)[*n - 1].name, name) == 0)
        return &(*rows)[*n - 1];
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*rows)[i].name, name) == 0)
            return &(*rows)[i];
    }
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct queue_stats *m = realloc(*rows, ncap * sizeof **rows);
        if (!m)
            return NULL;
        *rows = m;
        *cap = ncap;
    }
    struct queue_stats *q = &(*rows)[*n];
    memset(q, 0, sizeof *q);
    if (!(q->name = strdup(name)))
        return NULL;
    (*n)++;
    return q;
}

enum store_result pg_read_queues(struct store *s, int64_t now, struct queue_stats **out, size_t *n)
{
    struct pg_store *st = pg_store_of(s);
    now = pg_now(st, now);
    *out = NULL;
    *n = 0;
    enum store_result r;
    char nowb[24];
    const char *params[1] = {pg_int_param(nowb, now)};
    PGresult *res = pg_read_one(st, PG_QUEUE_COUNTS, 1, params, "queue counts", &r);
    if (!res)
        return r;
    struct queue_stats *rows = NULL;
    size_t nrows = 0, cap = 0;
    int bad = 0;
    for (int i = 0; i < PQntuples(res) && !bad; i++) {
        struct queue_stats *q = row_of(&rows, &nrows, &cap, PQgetvalue(res, i, 0));
        int64_t status = pg_row_int(res, i, 1);
        if (!q) {
            bad = 1;
            continue;
        }
        if (status >= 0 && status < JOB_STATUS_COUNT)
            q->count[status] += pg_row_int(res, i, 2);
        if (!PQgetisnull(res, i, 3)) {
            int64_t age = now - pg_row_int(res, i, 3);
            q->oldest_queued_age = age > 0 ? age : 0;
        }
        if (PQgetvalue(res, i, 4)[0] == 't')
            q->paused = 1;
    }
    PQclear(res);
    if (bad) {
        log_error("out of memory listing queues");
        queue_stats_free(rows, nrows);
        return STORE_ERROR;
    }
    *out = rows;
    *n = nrows;
    return STORE_OK;
}

enum store_result pg_read_attempts(struct store *s, int64_t id, struct job_attempt **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char idb[24];
    const char *params[1] = {pg_int_param(idb, id)};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), PG_ATTEMPTS, 1, params, "attempts", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows == 0) {
        PQclear(res);
        return STORE_NOT_FOUND;
    }
    struct job_attempt *a = calloc((size_t)rows, sizeof *a);
    r = a ? STORE_OK : STORE_ERROR;
    for (int i = 0; r == STORE_OK && i < rows; i++) {
        if (PQgetisnull(res, i, 0))
            continue; /* the job, no attempt yet */
        struct job_attempt *t = &a[(*n)++];
        t->attempt = pg_row_int(res, i, 0);
        t->claimed_at = pg_row_int(res, i, 2);
        t->ended_at = PQgetisnull(res, i, 3) ? JOB_NONE : pg_row_int(res, i, 3);
        t->outcome = (enum attempt_outcome)pg_row_int(res, i, 4);
        if (pg_row_text(res, i, 1, &t->worker_id) || pg_row_text(res, i, 5, &t->error_code) ||
            pg_row_text(res, i, 6, &t->error_detail))
            r = STORE_ERROR;
    }
    PQclear(res);
    if (r != STORE_OK) {
        log_error("out of memory reading attempts");
        job_attempts_free(a, *n);
        *n = 0;
        return r;
    }
    if (*n == 0) {
        free(a);
        a = NULL;
    }
    *out = a;
    return STORE_OK;
}

enum store_result pg_read_ping(struct store *s)
{
    struct pg_store *st = pg_store_of(s);
    struct pg_conn *c = NULL;
    enum store_result r = pg_pool_take_read(st, &c);
    if (r != STORE_OK)
        return r;
    r = pg_clock_sync(st, c);
    pg_pool_give_read(st, c);
    return r;
}

void pg_read_stats(struct store *s, struct store_stats *out)
{
    struct pg_store *st = pg_store_of(s);
    *out = (struct store_stats){0};
    out->commits = atomic_load(&st->commits);
    out->ops = atomic_load(&st->ops);
    out->retries = atomic_load(&st->retries);
    out->errors = atomic_load(&st->errors);
}

size_t pg_read_metrics(struct store *s, struct store_metric out[STORE_METRICS_MAX])
{
    struct pg_store *st = pg_store_of(s);
    pthread_mutex_lock(&st->pool.mu);
    int size = st->pool.n, busy = st->pool.n - st->pool.nfree;
    pthread_mutex_unlock(&st->pool.mu);
    size_t k = 0;
    out[k++] = (struct store_metric){"jobq_pg_pool_connections",
                                     "Pooled connections (--pool-size).", 0, size};
    out[k++] = (struct store_metric){"jobq_pg_pool_connections_in_use",
                                     "Pooled connections taken by a call now.", 0, busy};
    out[k++] = (struct store_metric){
        "jobq_pg_connects_total",
        "Connections opened to PostgreSQL: the first ones and every reconnect.", 1,
        (double)atomic_load(&st->connects)};
    out[k++] = (struct store_metric){"jobq_pg_notifications_sent_total",
                                     "Queues announced to the other processes (NOTIFY).", 1,
                                     (double)atomic_load(&st->notes_sent)};
    out[k++] = (struct store_metric){"jobq_pg_notifications_received_total",
                                     "Notifications received from the other processes.", 1,
                                     (double)atomic_load(&st->notes_heard)};
    out[k++] =
        (struct store_metric){"jobq_pg_clock_skew_seconds",
                              "The database server's clock minus this host's, which leases follow.",
                              0, (double)atomic_load(&st->skew_ms) / 1000.0};
    out[k++] = (struct store_metric){
        "jobq_pg_round_trip_seconds",
        "The round trip to PostgreSQL: the least of the last ones measured (a probe a second), "
        "which decides when write transactions overlap.",
        0, (double)atomic_load(&st->rtt_us) / 1e6};
    struct pg_exec_figures f;
    pg_exec_figures(st, &f);
    out[k++] = (struct store_metric){"jobq_pg_writers",
                                     "Write transactions this process may keep in flight at most "
                                     "(--pg-writers).",
                                     0, f.writers};
    out[k++] = (struct store_metric){"jobq_pg_transactions_in_flight",
                                     "Groups of write calls running now, each one transaction.", 0,
                                     f.inflight};
    out[k++] = (struct store_metric){
        "jobq_pg_in_flight_seconds_total",
        "The integral of jobq_pg_transactions_in_flight over time: its rate is the average "
        "number in flight.",
        1, (double)f.inflight_us / 1e6};
    out[k++] = (struct store_metric){"jobq_pg_groups_total",
                                     "Groups of write calls run (jobq_store_ops_total over it: "
                                     "calls per group).",
                                     1, (double)f.groups};
    out[k++] = (struct store_metric){"jobq_pg_round_trips_total",
                                     "Round trips to PostgreSQL on pooled connections (writes, "
                                     "reads and the sweeper).",
                                     1, (double)atomic_load(&st->trips)};
    return event_log_gauge_metrics(&st->events_seen, out, k);
}
