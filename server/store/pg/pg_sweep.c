/* store_sweep for PostgreSQL: expired leases, expired jobs and retention, each its own short
 * transaction of at most `batch` rows that starts by taking the sweeper role
 * (pg_try_advisory_xact_lock): one process sweeps at a time, and a dead holder's role ends
 * with its transaction. Rows are locked with SKIP LOCKED, and the expiry is checked again in
 * the update. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "limit.h"
#include "log.h"
#include "pg_deps.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"
#include "store_sqs.h"

#define SWEEP_BATCH_MAX 10000

struct sweep_arg {
    struct pg_store *st;
    int64_t now, cutoff;
    int batch;
    struct sweep_result *res;
    int64_t lanes_next; /* the lanes part: the last lane it looked at (0: start over) */
    struct event_log_seen events_seen; /* the events part: the log after its deletes */
    int events_read;                   /* 1: the events part read events_seen */
};

/* Take the sweeper role for this transaction: 1 taken, 0 another process holds it. */
static enum store_result lead(struct pg_conn *c, int *led)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_SWEEP_LOCK, 0, NULL, "sweep lock", &r);
    if (!res)
        return r;
    *led = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return STORE_OK;
}

static enum store_result expire_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct sweep_arg *a = p;
    a->res->requeued = a->res->failed = 0;
    sweep_result_forget(a->res);
    int led = 0;
    enum store_result r = lead(c, &led);
    a->res->led = led;
    if (r != STORE_OK || !led)
        return r;
    char now[24], batch[24];
    const char *params[2] = {pg_int_param(now, a->now), pg_int_param(batch, a->batch)};
    PGresult *res = pg_conn_exec(c, PG_SWEEP_EXPIRED, 2, params, "sweep expired", &r);
    if (!res)
        return r;
    int n = PQntuples(res);
    if (n == 0) {
        PQclear(res);
        return STORE_OK;
    }
    /* Five parallel arrays: id, status, run_at, finished_at, error_code. */
    struct pg_arr arr[5] = {{0}};
    /* The jobs moved to a dead-letter queue and their targets (job_dead_letter). */
    struct dead {
        int64_t id;
        char target[JOB_QUEUE_MAX + 1];
    } *dead = calloc((size_t)n, sizeof *dead);
    int ndead = 0;
    if (!dead) {
        PQclear(res);
        log_error("out of memory sweeping %d expired leases", n);
        return STORE_ERROR;
    }
    for (int i = 0; i < n; i++) {
        int timed_out = strcmp(PQgetvalue(res, i, 3), "t") == 0;
        struct job_lease_end e =
            job_lease_end_plan(1, pg_row_int(res, i, 1), pg_row_int(res, i, 2), -1, a->now,
                               a->st->backoff_base, a->st->backoff_max, rand_unit());
        if (e.requeue)
            e.run_at = job_requeue_at(limit_key_ordered(PQgetvalue(res, i, 4)),
                                      pg_row_int(res, i, 5), e.run_at);
        if (store_sqs_arn_queue(PQgetvalue(res, i, 7), dead[ndead].target) == 0 &&
            job_dead_letter(1, pg_row_int(res, i, 1), pg_row_int(res, i, 6))) {
            dead[ndead++].id = pg_row_int(res, i, 0);
            e.requeue = 0;
        }
        pg_arr_int(&arr[0], pg_row_int(res, i, 0));
        pg_arr_int(&arr[1], e.requeue ? JOB_QUEUED : JOB_FAILED);
        pg_arr_int(&arr[2], e.run_at);
        pg_arr_int(&arr[3], e.requeue ? JOB_NONE : a->now);
        pg_arr_text(&arr[4], ndead > 0 && dead[ndead - 1].id == pg_row_int(res, i, 0)
                                 ? JOB_DEAD_LETTER_CODE
                             : timed_out ? "timeout"
                                         : "lease_expired");
    }
    PQclear(res);
    char *lit[5];
    int bad = 0;
    for (int k = 0; k < 5; k++) {
        lit[k] = pg_arr_take(&arr[k]);
        bad |= !lit[k];
    }
    if (bad) {
        log_error("out of memory sweeping %d expired leases", n);
        r = STORE_ERROR;
    } else {
        const char *up[6] = {lit[0], lit[1], lit[2], lit[3], lit[4], now};
        res = pg_conn_exec(c, PG_SWEEP_END, 6, up, "sweep end", &r);
        for (int i = 0; res && i < PQntuples(res) && r == STORE_OK; i++) {
            int requeued = pg_row_int(res, i, 1) == JOB_QUEUED;
            (*(requeued ? &a->res->requeued : &a->res->failed))++;
            int timed_out = strcmp(PQgetvalue(res, i, 3), "timeout") == 0;
            if (sweep_result_note(a->res, a->batch, PQgetvalue(res, i, 0), timed_out, requeued))
                r = STORE_ERROR;
            int64_t run_at = pg_row_int(res, i, 2);
            int keyed = PQgetvalue(res, i, 4)[0] == 't'; /* its key has room again */
            if ((requeued && run_at <= a->now) || keyed)
                store_news_ready(notes, PQgetvalue(res, i, 0), 0);
            else if (requeued)
                store_news_later(notes, PQgetvalue(res, i, 0), run_at);
            if (r == STORE_OK && !requeued) /* failed for good: its dependents learn it */
                r = pg_deps_moved(c, pg_row_int(res, i, 5), PQgetvalue(res, i, 0),
                                  PQgetvalue(res, i, 6)[0] == 't', a->now, notes);
        }
        PQclear(res);
    }
    for (int k = 0; k < 5; k++)
        free(lit[k]);
    for (int i = 0; r == STORE_OK && i < ndead; i++) {
        struct job j;
        r = pg_get_on(c, dead[i].id, 0, &j);
        if (r == STORE_OK)
            r = pg_dead_letter(c, &j, dead[i].target, a->now, notes);
        if (r == STORE_OK)
            job_clear(&j);
    }
    free(dead);
    return r;
}

/* Queued jobs whose expires_at passed become cancelled (expiry.h), at most batch. */
static enum store_result expiry_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct sweep_arg *a = p;
    a->res->expired = 0;
    sweep_result_forget(a->res);
    int led = 0;
    enum store_result r = lead(c, &led);
    if (r != STORE_OK || !led)
        return r;
    char now[24], batch[24];
    const char *params[2] = {pg_int_param(now, a->now), pg_int_param(batch, a->batch)};
    PGresult *res = pg_conn_exec(c, PG_SWEEP_EXPIRY, 2, params, "sweep expiry", &r);
    for (int i = 0; res && i < PQntuples(res) && r == STORE_OK; i++) {
        a->res->expired++;
        if (sweep_result_note_expired(a->res, a->batch, PQgetvalue(res, i, 0)) != 0)
            r = STORE_ERROR;
        if (r == STORE_OK)
            r = pg_deps_moved(c, pg_row_int(res, i, 1), PQgetvalue(res, i, 0),
                              PQgetvalue(res, i, 2)[0] == 't', a->now, notes);
    }
    PQclear(res);
    return r;
}

/* Jobs whose dependents an earlier write left for the sweep (depend.h's step bound). */
static enum store_result deps_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct sweep_arg *a = p;
    a->res->visited = 0;
    int led = 0;
    enum store_result r = lead(c, &led);
    if (r != STORE_OK || !led)
        return r;
    return pg_deps_sweep(c, a->now, a->batch, &a->res->visited, notes);
}

/* Retention: one batch of old succeeded and cancelled jobs deleted, then what their
 * dependents need, as for a purge (a cancelled one pins the dependents that another
 * dependency cancelled: a retry of that one must leave them cancelled). */
static enum store_result retention_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct sweep_arg *a = p;
    a->res->deleted = 0;
    int led = 0;
    enum store_result r = lead(c, &led);
    if (r != STORE_OK || !led)
        return r;
    char cutoff[24], batch[24];
    const char *params[2] = {pg_int_param(cutoff, a->cutoff), pg_int_param(batch, a->batch)};
    PGresult *res = pg_conn_exec(c, PG_SWEEP_DELETE, 2, params, "sweep delete", &r);
    if (!res)
        return r;
    a->res->deleted = PQntuples(res);
    r = pg_deps_deleted(c, res, NULL, a->now, notes);
    PQclear(res);
    if (r == STORE_OK)
        PQclear(pg_conn_exec(c, PG_COUNTS_FOLD, 0, NULL, "sweep counts", &r));
    return r;
}

/* The events past the log's bounds (pg_events_prune). */
static enum store_result events_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct sweep_arg *a = p;
    a->res->events = 0;
    a->events_read = 0;
    int led = 0;
    enum store_result r = lead(c, &led);
    if (r != STORE_OK || !led)
        return r;
    r = pg_events_prune(c, a->now, a->st->events_retention, a->st->events_max, a->batch,
                        &a->res->events, &a->events_seen);
    a->events_read = r == STORE_OK;
    return r;
}

/* The lanes that no job references (of any status: a job keeps its lane id, and a requeued
 * or retried job goes back to that lane) among the `batch` lanes after the last one looked
 * at, by id, then at most `batch` claim rows older than every window (PG_KEY_CLAIMS_EXPIRE). Race-free against an enqueue into such a lane: its upsert writes the lane row
 * (ON CONFLICT DO UPDATE), so the lanes are first locked with SKIP LOCKED (an enqueue that
 * wrote one and has not committed holds it: passed by) and then deleted by a statement of
 * its own, whose snapshot sees the jobs of every enqueue that wrote a lane before the lock;
 * an enqueue after the lock waits for it, finds the lane gone and makes it again. */
static enum store_result lanes_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct sweep_arg *a = p;
    a->res->lanes = a->res->claims = 0;
    a->lanes_next = a->st->lanes_swept;
    int led = 0;
    enum store_result r = lead(c, &led);
    if (r != STORE_OK || !led)
        return r;
    char from[24], batch[24];
    const char *params[2] = {pg_int_param(from, a->st->lanes_swept), pg_int_param(batch, a->batch)};
    PGresult *res = pg_conn_exec(c, PG_LANES_PICK, 2, params, "sweep lanes", &r);
    if (!res)
        return r;
    int64_t seen = pg_row_int(res, 0, 1);
    a->lanes_next = seen < a->batch ? 0 : pg_row_int(res, 0, 0);
    if (!PQgetisnull(res, 0, 2)) {
        const char *ids[1] = {PQgetvalue(res, 0, 2)};
        PGresult *del = pg_conn_exec(c, PG_LANES_DROP, 1, ids, "sweep lanes drop", &r);
        if (del)
            a->res->lanes = atoi(PQcmdTuples(del));
        PQclear(del);
    }
    PQclear(res);
    if (r != STORE_OK)
        return r;
    char oldest[24];
    const char *cp[2] = {pg_int_param(oldest, limit_claims_oldest(a->now)), batch};
    res = pg_conn_exec(c, PG_KEY_CLAIMS_EXPIRE, 2, cp, "sweep key claims", &r);
    if (res)
        a->res->claims = atoi(PQcmdTuples(res));
    PQclear(res);
    return r;
}

enum store_result pg_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                           struct sweep_result *res)
{
    struct pg_store *st = pg_store_of(s);
    memset(res, 0, sizeof *res);
    batch = batch < 1 ? 1 : batch > SWEEP_BATCH_MAX ? SWEEP_BATCH_MAX : batch;
    if (retention < 0)
        retention = 0;
    now = pg_now(st, now);
    pg_due_announce(st, now); /* any process: the jobs it scheduled that are due now */
    struct sweep_arg a = {
        .st = st, .now = now, .cutoff = now - retention, .batch = batch, .res = res};
    struct pg_tx tx = {.name = "sweep leases", .fn = expire_tx, .arg = &a};
    enum store_result r = pg_tx_run(st, &tx);
    if (r != STORE_OK) {
        res->requeued = res->failed = 0;
        sweep_result_forget(res);
        return r;
    }
    if (!res->led)
        return STORE_OK;
    sweep_result_keep(res);
    tx = (struct pg_tx){.name = "sweep expiry", .fn = expiry_tx, .arg = &a};
    r = pg_tx_run(st, &tx);
    if (r != STORE_OK) {
        res->expired = 0;
        sweep_result_forget(res);
        return r;
    }
    sweep_result_keep(res);
    tx = (struct pg_tx){.name = "sweep dependents", .fn = deps_tx, .arg = &a};
    r = pg_tx_run(st, &tx);
    if (r != STORE_OK) {
        res->visited = 0;
        return r;
    }
    tx = (struct pg_tx){.name = "sweep retention", .fn = retention_tx, .arg = &a};
    r = pg_tx_run(st, &tx);
    if (r != STORE_OK)
        res->deleted = 0;
    if (r == STORE_OK) {
        tx = (struct pg_tx){.name = "sweep events", .fn = events_tx, .arg = &a};
        r = pg_tx_run(st, &tx);
        if (r != STORE_OK)
            res->events = 0;
        else if (a.events_read)
            event_log_gauge_set(&st->events_seen, &a.events_seen);
    }
    if (r == STORE_OK) {
        tx = (struct pg_tx){.name = "sweep lanes", .fn = lanes_tx, .arg = &a};
        r = pg_tx_run(st, &tx);
        if (r == STORE_OK)
            st->lanes_swept = a.lanes_next;
        else
            res->lanes = res->claims = 0;
    }
    return r;
}
