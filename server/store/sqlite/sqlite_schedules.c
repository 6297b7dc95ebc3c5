/* Schedules for SQLite: the reads (on a reader), and the writes on the writer: put, delete, a
 * tick (its compare and swap, then the tick's job through the enqueue's own code) and a
 * ticker's pass (the liveness row). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

/* Copy a text column into *out (NULL stays NULL). Returns 0, or -1 when out of memory. */
static int copy_text(sqlite3_stmt *st, int col, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0;
    const char *s = (const char *)sqlite3_column_text(st, col);
    return s && (*out = strdup(s)) ? 0 : -1;
}

static int64_t col_int(sqlite3_stmt *st, int col, int64_t null)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? null : sqlite3_column_int64(st, col);
}

/* The schedule of the current row (SQL_SCHEDULE_COLUMNS) into out. Returns 0, or -1 when out
 * of memory (logged; out is left empty). */
static int schedule_row(sqlite3_stmt *st, struct store_schedule *out)
{
    *out = (struct store_schedule){0};
    const char *name = (const char *)sqlite3_column_text(st, 0);
    if (name)
        snprintf(out->name, sizeof out->name, "%s", name);
    int bad = copy_text(st, 1, &out->job) | copy_text(st, 2, &out->cron) |
              copy_text(st, 4, &out->timezone);
    out->every_seconds = col_int(st, 3, 0);
    out->catch_up = (enum schedule_catch_up)sqlite3_column_int(st, 5);
    out->overlap = (enum schedule_overlap)sqlite3_column_int(st, 6);
    out->paused = sqlite3_column_int(st, 7);
    out->next_run_at = col_int(st, 8, JOB_NONE);
    out->last_run_at = col_int(st, 9, JOB_NONE);
    out->last_job_id = col_int(st, 10, 0);
    out->created_at = sqlite3_column_int64(st, 11);
    out->updated_at = sqlite3_column_int64(st, 12);
    out->rev = sqlite3_column_int64(st, 13);
    if (bad || !out->job || !out->timezone) {
        log_error("out of memory reading schedule %s", out->name);
        store_schedule_clear(out);
        return -1;
    }
    return 0;
}

static int schedule_element(sqlite3_stmt *st, void *out)
{
    return schedule_row(st, out);
}

static void schedules_release(void *rows, size_t n)
{
    store_schedules_free(rows, n);
}

/* Run st (bound) and collect its schedules into a new array *out of *n. */
static enum store_result rows_on(struct sqlite_conn *c, sqlite3_stmt *st, const char *what,
                                 struct store_schedule **out, size_t *n)
{
    void *rows = NULL;
    enum store_result r = sqlite_row_collect(c, st, what, sizeof **out, schedule_element,
                                             schedules_release, &rows, n);
    *out = rows;
    return r;
}

/* A read of schedules on a reader: statement id with name (or NULL) or limit bound. */
static enum store_result read_rows(struct store *s, enum stmt_id id, const char *name, int limit,
                                   struct store_schedule **out, size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = name    ? sqlite_conn_bind_text(st, 1, name)
             : limit ? sqlite3_bind_int(st, 1, limit)
                     : SQLITE_OK;
    enum store_result r = rc == SQLITE_OK ? rows_on(c, st, "schedules", out, n)
                                          : sqlite_conn_fail(c, rc, "bind schedules");
    if (rc != SQLITE_OK)
        sqlite3_reset(st);
    sqlite_pool_give(pool, c);
    if (r == STORE_OK && name && *n == 0)
        r = STORE_NOT_FOUND;
    return r;
}

enum store_result sqlite_read_schedules(struct store *s, const char *name,
                                        struct store_schedule **out, size_t *n)
{
    return read_rows(s, name ? STMT_SCHEDULE_GET : STMT_SCHEDULES_ALL, name, 0, out, n);
}

enum store_result sqlite_read_schedules_next(struct store *s, int limit,
                                             struct store_schedule **out, size_t *n)
{
    return read_rows(s, STMT_SCHEDULES_NEXT, NULL, limit > 0 ? limit : 1, out, n);
}

enum store_result sqlite_read_schedules_count(struct store *s, size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SCHEDULES_COUNT);
    int rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW)
        *n = (size_t)sqlite3_column_int64(st, 0);
    enum store_result r = rc == SQLITE_ROW ? STORE_OK : sqlite_conn_fail(c, rc, "schedules count");
    sqlite3_reset(st);
    sqlite_pool_give(pool, c);
    return r;
}

/* The one schedule statement id (bound by the caller) returns, into *out. */
static enum store_result one_row(struct sqlite_conn *c, sqlite3_stmt *st, const char *what,
                                 struct store_schedule *out)
{
    struct store_schedule *rows = NULL;
    size_t n = 0;
    enum store_result r = rows_on(c, st, what, &rows, &n);
    if (r == STORE_OK && n == 0)
        r = STORE_NOT_FOUND;
    if (r == STORE_OK) {
        *out = rows[0];
        rows[0] = (struct store_schedule){0};
    }
    store_schedules_free(rows, n);
    return r;
}

/* A new row's rev: far from any rev an earlier row of the same name reached, so that a tick
 * read before a delete never applies to the row created after it. */
#define REV_OF_NEW(now) ((now)*1000000)

/* The next_run_at of schedule name as the put finds it into *old (JOB_NONE: no such
 * schedule, or paused). */
static enum store_result old_next(struct sqlite_conn *c, const char *name, int64_t *old)
{
    *old = JOB_NONE;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SCHEDULE_OLD_NEXT);
    int rc = sqlite_conn_bind_text(st, 1, name);
    if (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        *old = col_int(st, 0, JOB_NONE);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "schedule put: read");
}

static int put_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    struct store_schedule_put_call *a = &call->schedule_put;
    const struct store_schedule *in = a->in;
    int64_t old = JOB_NONE;
    enum store_result r = in->paused ? STORE_OK : old_next(c, in->name, &old);
    if (r != STORE_OK)
        return r;
    int64_t next = in->paused ? JOB_NONE : a->next_of(a->rule, old, call->now);
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SCHEDULE_PUT);
    int rc = sqlite_conn_bind_text(st, 1, in->name);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, in->job);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 3, in->cron);
    if (rc == SQLITE_OK)
        rc = in->cron ? sqlite3_bind_null(st, 4) : sqlite3_bind_int64(st, 4, in->every_seconds);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 5, in->timezone);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 6, (int)in->catch_up);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 7, (int)in->overlap);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 8, in->paused ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 9, next);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 10, call->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 11, STORE_SCHEDULES_MAX);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 12, REV_OF_NEW(call->now));
    if (rc != SQLITE_OK) {
        sqlite3_reset(st);
        return sqlite_conn_fail(c, rc, "bind schedule put");
    }
    r = one_row(c, st, "schedule put", a->out);
    if (r == STORE_NOT_FOUND)
        return STORE_CONFLICT; /* a new name past STORE_SCHEDULES_MAX: nothing written */
    if (r == STORE_OK)
        a->created = a->out->rev == REV_OF_NEW(call->now);
    return r;
}

static int delete_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    struct store_schedule_delete_call *a = &call->schedule_delete;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SCHEDULE_GET);
    int rc = sqlite_conn_bind_text(st, 1, a->name);
    enum store_result r = rc == SQLITE_OK ? one_row(c, st, "schedule delete: read", a->out)
                                          : sqlite_conn_fail(c, rc, "bind schedule get");
    if (rc != SQLITE_OK)
        sqlite3_reset(st);
    if (r != STORE_OK)
        return r; /* STORE_NOT_FOUND: nothing written */
    st = sqlite_conn_stmt(c, STMT_SCHEDULE_DELETE);
    rc = sqlite_conn_bind_text(st, 1, a->name);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "schedule delete");
}

/* The API status name of job id into *name (NULL when there is no such job: it was deleted):
 * what the overlap decision looks at. */
static enum store_result job_status_of(struct sqlite_conn *c, int64_t id, const char **name)
{
    *name = NULL;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_JOB_STATUS);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        int stored = sqlite3_column_int(st, 0);
        *name = job_status_name(stored == SQLITE_SCHEDULED ? JOB_QUEUED : (enum job_status)stored);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "schedule tick: last job");
}

struct tick_arg {
    struct store_call *call;
    struct sqlite_notes *notes;
};

static int tick_tx(struct sqlite_conn *c, void *p)
{
    struct tick_arg *ta = p;
    struct store_call *call = ta->call;
    struct store_schedule_tick_call *t = &call->schedule_tick;
    t->job_id = 0;
    t->created = t->skipped = 0;
    *t->out = (struct job){0};
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SCHEDULE_CAS);
    int rc = sqlite_conn_bind_text(st, 1, t->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, t->rev);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, t->next_run_at);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 4, t->next);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    int64_t last_job = 0;
    if (rc == SQLITE_ROW) {
        last_job = sqlite3_column_int64(st, 0);
        rc = sqlite_conn_step(c, st);
    } else if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return STORE_CONFLICT; /* another tick, a put or a delete came first: nothing written */
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "schedule tick");
    if (!t->spec)
        return STORE_OK;
    if (t->rule->overlap == SCHEDULE_OVERLAP_SKIP && last_job > 0) {
        const char *status;
        enum store_result r = job_status_of(c, last_job, &status);
        if (r != STORE_OK)
            return r;
        if (schedule_overlap_skip(t->rule, status)) {
            t->skipped = 1;
            return STORE_OK;
        }
    }
    enum store_result r = sqlite_enqueue_one(c, t->spec, call->now, t->out, &t->created, ta->notes);
    if (r != STORE_OK)
        return r;
    t->job_id = t->out->id;
    st = sqlite_conn_stmt(c, STMT_SCHEDULE_RAN);
    rc = sqlite_conn_bind_text(st, 1, t->name);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, t->tick);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, t->job_id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "schedule tick: its job");
}

static void tick_discard(void *p)
{
    struct tick_arg *ta = p;
    struct store_schedule_tick_call *t = &ta->call->schedule_tick;
    job_clear(t->out);
    t->job_id = 0;
    t->created = t->skipped = 0;
}

/* Run the ticker row's write id with now as ?1. */
static int ticker_write(struct sqlite_conn *c, enum stmt_id id, int64_t now, const char *what)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite3_bind_int64(st, 1, now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, what);
}

static int pass_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    struct store_schedule_pass_call *a = &call->schedule_pass;
    a->seen_before = a->stopped_at = JOB_NONE;
    a->now = call->now;
    if (a->stop)
        return ticker_write(c, STMT_TICKER_STOP, call->now, "schedule stop");
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_TICKER_SEEN);
    int rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW) {
        a->seen_before = sqlite3_column_int64(st, 0);
        a->stopped_at = col_int(st, 1, JOB_NONE);
        rc = SQLITE_DONE;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "schedule pass: read");
    return ticker_write(c, STMT_TICKER_PASS, call->now, "schedule pass");
}

static void put_discard(void *p)
{
    struct store_call *call = p;
    if (call->kind == STORE_CALL_SCHEDULE_PUT)
        store_schedule_clear(call->schedule_put.out);
    else
        store_schedule_clear(call->schedule_delete.out);
}

/* A schedule write and its arguments, in one block. */
struct schedule_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct tick_arg a;
};

struct sqlite_tx *sqlite_schedule_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    struct schedule_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a schedule write");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct tick_arg){call, &b->notes};
    b->tx = (struct sqlite_tx){
        .arg = call, .notes = &b->notes, .now = call->at_clock ? &call->now : NULL, .weight = 1};
    switch (call->kind) {
    case STORE_CALL_SCHEDULE_PUT:
        b->tx.name = "schedule put";
        b->tx.fn = put_tx;
        b->tx.discard = put_discard;
        break;
    case STORE_CALL_SCHEDULE_DELETE:
        b->tx.name = "schedule delete";
        b->tx.fn = delete_tx;
        b->tx.discard = put_discard;
        break;
    case STORE_CALL_SCHEDULE_TICK:
        b->tx.name = "schedule tick";
        b->tx.fn = tick_tx;
        b->tx.discard = tick_discard;
        b->tx.arg = &b->a;
        break;
    default:
        b->tx.name = call->schedule_pass.stop ? "schedule stop" : "schedule pass";
        b->tx.fn = pass_tx;
        break;
    }
    return &b->tx;
}
