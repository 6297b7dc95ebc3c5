/* Schedules for PostgreSQL: the reads (on a pooled read connection), and the writes: put (one
 * at a time across processes, so the count of schedules holds), delete, a tick (its compare
 * and swap on the schedule's row, then the tick's job through the enqueue's own code) and a
 * ticker's pass (the liveness row). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

/* Row `row` of res (SCHEDULE_COLS) into out. Returns 0, or -1 when out of memory (logged; out
 * is left empty). */
static int schedule_row(const PGresult *res, int row, struct store_schedule *out)
{
    *out = (struct store_schedule){0};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 0));
    int bad = pg_row_text(res, row, 1, &out->job) | pg_row_text(res, row, 2, &out->cron) |
              pg_row_text(res, row, 4, &out->timezone);
    int64_t every = pg_row_int(res, row, 3);
    out->every_seconds = every == JOB_NONE ? 0 : every;
    out->catch_up = (enum schedule_catch_up)pg_row_int(res, row, 5);
    out->overlap = (enum schedule_overlap)pg_row_int(res, row, 6);
    out->paused = pg_row_int(res, row, 7) != 0;
    out->next_run_at = pg_row_int(res, row, 8);
    out->last_run_at = pg_row_int(res, row, 9);
    int64_t last_job = pg_row_int(res, row, 10);
    out->last_job_id = last_job == JOB_NONE ? 0 : last_job;
    out->created_at = pg_row_int(res, row, 11);
    out->updated_at = pg_row_int(res, row, 12);
    out->rev = pg_row_int(res, row, 13);
    if (bad || !out->job || !out->timezone) {
        log_error("out of memory reading schedule %s", out->name);
        store_schedule_clear(out);
        return -1;
    }
    return 0;
}

/* The rows of res into a new array *out of *n. */
static enum store_result rows_of(const PGresult *res, struct store_schedule **out, size_t *n)
{
    int rows = PQntuples(res);
    *out = NULL;
    *n = 0;
    if (rows == 0)
        return STORE_OK;
    if (!(*out = calloc((size_t)rows, sizeof **out))) {
        log_error("out of memory reading %d schedules", rows);
        return STORE_ERROR;
    }
    for (int i = 0; i < rows; i++) {
        if (schedule_row(res, i, &(*out)[*n]) != 0) {
            store_schedules_free(*out, *n);
            *out = NULL;
            *n = 0;
            return STORE_ERROR;
        }
        (*n)++;
    }
    return STORE_OK;
}

/* A read of schedules: statement id with its one parameter (or none). */
static enum store_result read_rows(struct store *s, enum pg_stmt_id id, const char *param,
                                   struct store_schedule **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    enum store_result r;
    const char *params[1] = {param};
    PGresult *res = pg_read_one(pg_store_of(s), id, param ? 1 : 0, params, "schedules", &r);
    if (!res)
        return r;
    r = rows_of(res, out, n);
    PQclear(res);
    return r;
}

enum store_result pg_read_schedules(struct store *s, const char *name, struct store_schedule **out,
                                    size_t *n)
{
    enum store_result r = read_rows(s, name ? PG_SCHEDULE_GET : PG_SCHEDULES_ALL, name, out, n);
    return r == STORE_OK && name && *n == 0 ? STORE_NOT_FOUND : r;
}

enum store_result pg_read_schedules_next(struct store *s, int limit, struct store_schedule **out,
                                         size_t *n)
{
    char b[24];
    return read_rows(s, PG_SCHEDULES_NEXT, pg_int_param(b, limit > 0 ? limit : 1), out, n);
}

enum store_result pg_read_schedules_count(struct store *s, size_t *n)
{
    enum store_result r;
    *n = 0;
    PGresult *res = pg_read_one(pg_store_of(s), PG_SCHEDULES_COUNT, 0, NULL, "schedules count", &r);
    if (!res)
        return r;
    *n = (size_t)pg_row_int(res, 0, 0);
    PQclear(res);
    return STORE_OK;
}

/* Run statement id; the one schedule it returns into *out (STORE_NOT_FOUND: none). */
static enum store_result one_row(struct pg_conn *c, enum pg_stmt_id id, int n,
                                 const char *const *params, const char *what,
                                 struct store_schedule *out)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    r = PQntuples(res) == 0 ? STORE_NOT_FOUND
                            : (schedule_row(res, 0, out) == 0 ? STORE_OK : STORE_ERROR);
    PQclear(res);
    return r;
}

/* A new row's rev: far from any rev an earlier row of the same name reached, so that a tick
 * read before a delete never applies to the row created after it. */
#define REV_OF_NEW(now) ((now)*1000000)

static enum store_result put_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    struct store_schedule_put_call *a = &pc->call->schedule_put;
    const struct store_schedule *in = a->in;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_SCHEDULE_LOCK, 0, NULL, "schedule put: lock", &r);
    if (!res)
        return r;
    PQclear(res);
    int64_t old = JOB_NONE;
    if (!in->paused) {
        const char *name[1] = {in->name};
        if (!(res = pg_conn_exec(c, PG_SCHEDULE_OLD_NEXT, 1, name, "schedule put: read", &r)))
            return r;
        old = PQntuples(res) ? pg_row_int(res, 0, 0) : JOB_NONE;
        PQclear(res);
    }
    int64_t next = in->paused ? JOB_NONE : a->next_of(a->rule, old, pc->now);
    char b[8][24];
    const char *params[12] = {in->name,
                              in->job,
                              in->cron,
                              in->cron ? NULL : pg_int_param(b[0], in->every_seconds),
                              in->timezone,
                              pg_int_param(b[1], in->catch_up),
                              pg_int_param(b[2], in->overlap),
                              in->paused ? "true" : "false",
                              pg_int_param(b[3], next),
                              pg_int_param(b[4], pc->now),
                              pg_int_param(b[5], STORE_SCHEDULES_MAX),
                              pg_int_param(b[6], REV_OF_NEW(pc->now))};
    r = one_row(c, PG_SCHEDULE_PUT, 12, params, "schedule put", a->out);
    if (r == STORE_NOT_FOUND)
        return STORE_CONFLICT; /* a new name past STORE_SCHEDULES_MAX: nothing written */
    if (r == STORE_OK)
        a->created = a->out->rev == REV_OF_NEW(pc->now);
    return r;
}

static enum store_result delete_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    struct store_schedule_delete_call *a = &pc->call->schedule_delete;
    const char *params[1] = {a->name};
    return one_row(c, PG_SCHEDULE_DELETE, 1, params, "schedule delete", a->out);
}

/* The API status name of job id into *name (NULL when there is no such job: it was deleted):
 * what the overlap decision looks at. */
static enum store_result job_status_of(struct pg_conn *c, int64_t id, const char **name)
{
    char b[24];
    const char *params[1] = {pg_int_param(b, id)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_JOB_STATUS, 1, params, "schedule tick: last job", &r);
    if (!res)
        return r;
    *name = PQntuples(res) ? job_status_name((enum job_status)pg_row_int(res, 0, 0)) : NULL;
    PQclear(res);
    return STORE_OK;
}

static enum store_result tick_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *pc = p;
    struct store_schedule_tick_call *t = &pc->call->schedule_tick;
    t->job_id = 0;
    t->created = t->skipped = 0;
    *t->out = (struct job){0};
    char b[4][24];
    const char *params[4] = {t->name, pg_int_param(b[0], t->rev),
                             pg_int_param(b[1], t->next_run_at), pg_int_param(b[2], t->next)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_SCHEDULE_CAS, 4, params, "schedule tick", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    int64_t last_job = rows ? pg_row_int(res, 0, 0) : JOB_NONE;
    PQclear(res);
    if (rows == 0)
        return STORE_CONFLICT; /* another tick, a put or a delete came first: nothing written */
    if (!t->spec)
        return STORE_OK;
    if (t->rule->overlap == SCHEDULE_OVERLAP_SKIP && last_job != JOB_NONE && last_job > 0) {
        const char *status = NULL;
        if ((r = job_status_of(c, last_job, &status)) != STORE_OK)
            return r;
        if (schedule_overlap_skip(t->rule, status)) {
            t->skipped = 1;
            return STORE_OK;
        }
    }
    r = pg_enqueue_one(c, t->spec, pc->now, t->out, &t->created, notes);
    if (r != STORE_OK)
        return r;
    t->job_id = t->out->id;
    const char *ran[3] = {t->name, pg_int_param(b[0], t->tick), pg_int_param(b[1], t->job_id)};
    res = pg_conn_exec(c, PG_SCHEDULE_RAN, 3, ran, "schedule tick: its job", &r);
    if (!res)
        return r;
    PQclear(res);
    return STORE_OK;
}

static void tick_discard(void *p)
{
    struct pg_call *pc = p;
    struct store_schedule_tick_call *t = &pc->call->schedule_tick;
    job_clear(t->out);
    t->job_id = 0;
    t->created = t->skipped = 0;
}

static void row_discard(void *p)
{
    struct pg_call *pc = p;
    if (pc->call->kind == STORE_CALL_SCHEDULE_PUT)
        store_schedule_clear(pc->call->schedule_put.out);
    else
        store_schedule_clear(pc->call->schedule_delete.out);
}

static enum store_result pass_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    struct store_schedule_pass_call *a = &pc->call->schedule_pass;
    char b[24];
    const char *params[1] = {pg_int_param(b, pc->now)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, a->stop ? PG_TICKER_STOP : PG_TICKER_PASS, 1, params,
                                 a->stop ? "schedule stop" : "schedule pass", &r);
    if (!res)
        return r;
    a->seen_before = a->stop ? JOB_NONE : pg_row_int(res, 0, 0);
    a->stopped_at = a->stop ? JOB_NONE : pg_row_int(res, 0, 1);
    a->now = pc->now;
    PQclear(res);
    return STORE_OK;
}

int pg_schedule_put_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "schedule put", .fn = put_tx, .discard = row_discard};
    return 1;
}

int pg_schedule_delete_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "schedule delete", .fn = delete_tx, .discard = row_discard};
    return 1;
}

int pg_schedule_tick_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "schedule tick", .fn = tick_tx, .discard = tick_discard};
    return 1;
}

int pg_schedule_pass_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "schedule pass", .fn = pass_tx};
    return 1;
}
