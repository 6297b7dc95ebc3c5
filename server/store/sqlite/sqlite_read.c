/* The reads of the SQLite store: get, list, queues, next_due and ping. They run on a read
 * connection from the pool (WAL: they never wait for the writer); ping then asks the writer
 * whether writes get through (sqlite_heal_probe). */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_events.h"
#include "sqlite_heal.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

enum store_result sqlite_read_get(struct store *s, int64_t id, struct job *out)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    struct job j;
    enum store_result r = sqlite_row_get(c, id, 0, &j);
    sqlite_pool_give(pool, c);
    if (r == STORE_OK)
        *out = j;
    return r;
}

/* The list statement for f, bound but for nothing. */
static sqlite3_stmt *list_stmt(struct sqlite_conn *c, const struct list_filter *f, int limit,
                               int *rc)
{
    int status = f->status, status2 = -1;
    if (status == JOB_QUEUED) {
        status2 = SQLITE_SCHEDULED;
    }
    enum stmt_id id = STMT_LIST_ALL;
    if (f->queue && f->status >= 0)
        id = STMT_LIST_QUEUE_STATUS;
    else if (f->queue)
        id = STMT_LIST_QUEUE;
    else if (f->status >= 0)
        id = STMT_LIST_STATUS;
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    *rc = sqlite3_bind_int64(st, 1, f->after_id > 0 ? f->after_id : 0);
    if (*rc == SQLITE_OK)
        *rc = sqlite3_bind_int(st, 2, limit + 1); /* one more tells whether more exist */
    if (*rc == SQLITE_OK && id == STMT_LIST_QUEUE)
        *rc = sqlite_conn_bind_text(st, 3, f->queue);
    if (*rc == SQLITE_OK && (id == STMT_LIST_STATUS || id == STMT_LIST_QUEUE_STATUS)) {
        *rc = sqlite3_bind_int(st, 3, status);
        if (*rc == SQLITE_OK)
            *rc = sqlite3_bind_int(st, 4, status2);
    }
    if (*rc == SQLITE_OK && id == STMT_LIST_QUEUE_STATUS)
        *rc = sqlite_conn_bind_text(st, 5, f->queue);
    return st;
}

static enum store_result list_on(struct sqlite_conn *c, const struct list_filter *f,
                                 struct job *out, size_t *n, int *more)
{
    int limit = f->limit < 1 ? 1 : f->limit > JOB_LIST_MAX ? JOB_LIST_MAX : f->limit;
    int rc;
    sqlite3_stmt *st = list_stmt(c, f, limit, &rc);
    enum store_result r = STORE_OK;
    if (rc != SQLITE_OK) {
        r = sqlite_conn_fail(c, rc, "bind list");
        sqlite3_reset(st);
        return r;
    }
    size_t got = 0;
    int extra = 0;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        if (got == (size_t)limit) {
            extra = 1;
            break;
        }
        if (sqlite_row_job(st, 0, &out[got]) != 0) {
            r = STORE_ERROR;
            break;
        }
        got++;
    }
    if (r == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "list");
    sqlite3_reset(st);
    if (r != STORE_OK) {
        for (size_t i = 0; i < got; i++)
            job_clear(&out[i]);
        return r;
    }
    *n = got;
    *more = extra;
    return STORE_OK;
}

enum store_result sqlite_read_list(struct store *s, const struct list_filter *f, struct job *out,
                                   size_t *n, int *more)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    enum store_result r = list_on(c, f, out, n, more);
    sqlite_pool_give(pool, c);
    return r;
}

/* Growable array of queue rows, in name order. */
struct stats {
    struct queue_stats *rows;
    size_t n, cap;
};

static struct queue_stats *stats_row(struct stats *qs, const char *name)
{
    if (qs->n > 0 && strcmp(qs->rows[qs->n - 1].name, name) == 0)
        return &qs->rows[qs->n - 1];
    if (qs->n == qs->cap) {
        size_t cap = qs->cap ? qs->cap * 2 : 16;
        struct queue_stats *rows = realloc(qs->rows, cap * sizeof *rows);
        if (!rows)
            return NULL;
        qs->rows = rows;
        qs->cap = cap;
    }
    struct queue_stats *row = &qs->rows[qs->n];
    memset(row, 0, sizeof *row);
    if (!(row->name = strdup(name)))
        return NULL;
    qs->n++;
    return row;
}

static int stats_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct queue_stats *)elem)->name);
}

static enum store_result read_counts(struct sqlite_conn *c, struct stats *qs)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_QUEUE_COUNTS);
    enum store_result r = STORE_OK;
    int rc;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        int status = sqlite3_column_int(st, 1);
        struct queue_stats *row = name ? stats_row(qs, name) : NULL;
        if (!row) {
            log_error("out of memory reading queue stats");
            r = STORE_ERROR;
            break;
        }
        if (status == SQLITE_SCHEDULED)
            status = JOB_QUEUED; /* the API shows scheduled jobs as queued */
        if (status >= 0 && status < JOB_STATUS_COUNT)
            row->count[status] += sqlite3_column_int64(st, 2);
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "queue counts");
    sqlite3_reset(st);
    return r;
}

static enum store_result read_ages(struct sqlite_conn *c, int64_t now, struct stats *qs)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_QUEUE_OLDEST);
    int rc = sqlite3_bind_int64(st, 1, now);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            struct queue_stats *row =
                name ? bsearch(name, qs->rows, qs->n, sizeof *qs->rows, stats_cmp) : NULL;
            int64_t age = now - sqlite3_column_int64(st, 1);
            if (row && sqlite3_column_type(st, 1) != SQLITE_NULL)
                row->oldest_queued_age = age > 0 ? age : 0;
        }
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "queue ages");
    sqlite3_reset(st);
    return r;
}

static int stats_sort_cmp(const void *a, const void *b)
{
    return strcmp(((const struct queue_stats *)a)->name, ((const struct queue_stats *)b)->name);
}

/* Mark the paused queues, adding those that hold no job; the rows end in name order. */
static enum store_result read_paused(struct sqlite_conn *c, struct stats *qs)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_QUEUES_PAUSED);
    size_t sorted = qs->n;
    enum store_result r = STORE_OK;
    int rc;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        struct queue_stats *row =
            name ? bsearch(name, qs->rows, sorted, sizeof *qs->rows, stats_cmp) : NULL;
        if (!row && name && !(row = stats_row(qs, name))) {
            log_error("out of memory reading queue stats");
            r = STORE_ERROR;
            break;
        }
        if (row)
            row->paused = 1;
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "paused queues");
    sqlite3_reset(st);
    if (qs->n > sorted)
        qsort(qs->rows, qs->n, sizeof *qs->rows, stats_sort_cmp);
    return r;
}

/* Counts, ages and pauses in one read transaction, so they describe the same moment. */
static enum store_result queues_on(struct sqlite_conn *c, int64_t now, struct stats *qs)
{
    int rc = sqlite_conn_run(c, STMT_READ_BEGIN);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "begin read");
    enum store_result r = read_counts(c, qs);
    if (r == STORE_OK)
        r = read_ages(c, now, qs);
    if (r == STORE_OK)
        r = read_paused(c, qs);
    rc = sqlite_conn_run(c, r == STORE_OK ? STMT_COMMIT : STMT_ROLLBACK);
    if (rc != SQLITE_DONE && r == STORE_OK)
        r = sqlite_conn_fail(c, rc, "end read");
    if (!sqlite3_get_autocommit(c->db)) {
        log_error("read transaction still open on a reader");
        sqlite_conn_run(c, STMT_ROLLBACK);
    }
    return r;
}

enum store_result sqlite_read_queues(struct store *s, int64_t now, struct queue_stats **out,
                                     size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    struct stats qs = {NULL, 0, 0};
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    enum store_result r = queues_on(c, now, &qs);
    sqlite_pool_give(pool, c);
    if (r != STORE_OK) {
        queue_stats_free(qs.rows, qs.n);
        return r;
    }
    *out = qs.rows;
    *n = qs.n;
    return STORE_OK;
}

enum store_result sqlite_read_next_due(struct store *s, int64_t *run_at)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_NEXT_DUE);
    enum store_result r = STORE_OK;
    int rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW)
        *run_at =
            sqlite3_column_type(st, 0) == SQLITE_NULL ? JOB_NONE : sqlite3_column_int64(st, 0);
    else
        r = sqlite_conn_fail(c, rc == SQLITE_DONE ? SQLITE_MISUSE : rc, "next due");
    sqlite3_reset(st);
    sqlite_pool_give(pool, c);
    return r;
}

enum store_result sqlite_read_ping(struct store *s)
{
    struct sqlite_store *ss = sqlite_store_of(s);
    struct sqlite_conn *c = sqlite_pool_take(&ss->readers);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_PING);
    enum store_result r = STORE_OK;
    int rc = sqlite_conn_step(c, st);
    if (rc != SQLITE_ROW)
        r = sqlite_conn_fail(c, rc == SQLITE_DONE ? SQLITE_MISUSE : rc, "ping reader");
    sqlite3_reset(st);
    sqlite_pool_give(&ss->readers, c);
    if (r == STORE_OK)
        r = sqlite_heal_probe(&ss->writer);
    return r;
}

static enum store_result attempts_on(struct sqlite_conn *c, int64_t id, struct job_attempt **out,
                                     size_t *n)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_ATTEMPTS);
    int rc = sqlite3_bind_int64(st, 1, id);
    int found = 0;
    size_t cap = 0;
    struct job_attempt *a = NULL;
    enum store_result r = STORE_OK;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if ((rc = sqlite_conn_step(c, st)) != SQLITE_ROW)
            break;
        found = 1;
        if (sqlite3_column_type(st, 0) == SQLITE_NULL)
            continue; /* the job, no attempt yet */
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct job_attempt *m = realloc(a, ncap * sizeof *m);
            if (!m) {
                r = STORE_ERROR;
                break;
            }
            a = m;
            cap = ncap;
        }
        if (sqlite_row_attempt(st, 0, &a[*n]) != 0) {
            r = STORE_ERROR;
            break;
        }
        (*n)++;
    }
    if (r == STORE_ERROR)
        log_error("out of memory reading attempts");
    else if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "attempts");
    else if (!found)
        r = STORE_NOT_FOUND;
    sqlite3_reset(st);
    if (r != STORE_OK) {
        job_attempts_free(a, *n);
        *n = 0;
        return r;
    }
    *out = a;
    return STORE_OK;
}

enum store_result sqlite_read_events(struct store *s, const struct event_filter *f,
                                     struct event_page *out)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    memset(out, 0, sizeof *out);
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    enum store_result r = sqlite_events_read(c, f, out);
    sqlite_pool_give(pool, c);
    return r;
}

enum store_result sqlite_read_attempts(struct store *s, int64_t id, struct job_attempt **out,
                                       size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    enum store_result r = attempts_on(c, id, out, n);
    sqlite_pool_give(pool, c);
    return r;
}
