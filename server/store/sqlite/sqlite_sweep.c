/* store_sweep for SQLite: promotion, expired leases, expired jobs and retention, each its own
 * short transaction of at most `batch` rows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "limit.h"
#include "log.h"
#include "rand.h"
#include "sqlite_deps.h"
#include "sqlite_events.h"
#include "sqlite_lanes.h"
#include "sqlite_store.h"
#include "store_sqs.h"

#define SWEEP_BATCH_MAX 10000
#define PROMOTE_LANES 64 /* lanes of promoted jobs told one by one */

struct sweep_arg {
    int64_t now;
    int64_t cutoff; /* retention: finished before this */
    int batch;
    int64_t lanes_from;  /* the lanes part: the last lane looked at before it */
    int64_t lanes_next;  /* and after it (committed: the next sweep's lanes_from) */
    int64_t opened_from; /* the promote part: the now of the last one (see keys_opened) */
    int64_t backoff_base, backoff_max;
    int64_t events_retention, events_max;
    struct event_log_seen events_seen; /* the events part: the log after its deletes */
    struct sweep_result *res;
    struct sqlite_notes *notes;
};

/* One running job whose lease is no longer live. */
struct expired {
    int64_t id;
    int64_t attempts;
    int64_t max_attempts;
    int timed_out;
    int ordered;         /* its concurrency key is ordered (limit_key_ordered) */
    int64_t created_at;  /* for job_requeue_at */
    int64_t max_receive; /* its queue's dead-letter policy (0: none; job_dead_letter) */
    char dead_letter[JOB_QUEUE_MAX + 1]; /* and the queue it names */
};

/* Add lane to lanes[0..*n) unless it is there. Returns 1 when there was no room. */
static int note_lane(int64_t *lanes, size_t *n, int64_t lane)
{
    for (size_t i = 0; i < *n; i++) {
        if (lanes[i] == lane)
            return 0;
    }
    if (*n >= PROMOTE_LANES)
        return 1;
    lanes[(*n)++] = lane;
    return 0;
}

enum store_result sqlite_sweep_promote(struct sqlite_conn *c, int64_t now, int limit,
                                       struct sqlite_notes *notes, int *promoted)
{
    *promoted = 0;
    int64_t lanes[PROMOTE_LANES];
    size_t nlanes = 0;
    int lanes_lost = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_PROMOTE);
    int rc = sqlite3_bind_int64(st, 1, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, limit);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind promote");
        sqlite3_reset(st);
        return r;
    }
    enum store_result r = STORE_OK;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        (*promoted)++;
        /* Whether the promoted job requires anything is not known here: plain 0. */
        const char *queue = (const char *)sqlite3_column_text(st, 0);
        if (queue)
            store_news_ready(&notes->news, queue, 0);
        if (!queue || sqlite_notes_move(notes, 0, queue, SQLITE_SCHEDULED, JOB_QUEUED,
                                        ATTEMPT_RUNNING) != 0) {
            r = STORE_ERROR;
            break;
        }
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            lanes_lost |= note_lane(lanes, &nlanes, sqlite3_column_int64(st, 1));
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "promote");
    sqlite3_reset(st);
    /* The lanes of the promoted jobs look at their heads again (one write per lane); past
     * PROMOTE_LANES of them, every lane without a head (sqlite_lane_promoted). */
    for (size_t i = 0; i < nlanes && r == STORE_OK; i++)
        r = sqlite_lane_promoted(c, lanes[i]);
    if (r == STORE_OK && lanes_lost)
        r = sqlite_lane_promoted(c, JOB_NONE);
    if (r != STORE_OK)
        return r;
    /* What is left scheduled: the claims skip promotion until then. */
    st = sqlite_conn_stmt(c, STMT_NEXT_DUE);
    rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW)
        sqlite_notes_promoted(notes, sqlite3_column_type(st, 0) == SQLITE_NULL
                                         ? SQLITE_DUE_NONE
                                         : sqlite3_column_int64(st, 0));
    else
        r = sqlite_conn_fail(c, rc == SQLITE_DONE ? SQLITE_MISUSE : rc, "next due");
    sqlite3_reset(st);
    return r;
}

/* The queues of keyed lanes whose open_at came in [from, now] (a rate window freed a slot, a
 * pause ended) are told, so that their parked claims look again: the claim that closed them
 * poked the sweeper for that time. from is the last sweep's now, included: a claim of that
 * second may have closed a lane after that sweep looked. */
static enum store_result keys_opened(struct sqlite_conn *c, int64_t from, int64_t now,
                                     struct sqlite_notes *notes)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_KEYS_OPENED);
    int rc = sqlite_conn_bindf(st, "ii", from, now);
    while (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        const char *queue = (const char *)sqlite3_column_text(st, 0);
        if (queue)
            store_news_ready(&notes->news, queue, 0);
        rc = SQLITE_OK;
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "keys opened");
    sqlite3_reset(st);
    return r;
}

static int promote_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    enum store_result r = sqlite_sweep_promote(c, a->now, a->batch, a->notes, &a->res->promoted);
    return r == STORE_OK ? keys_opened(c, a->opened_from, a->now, a->notes) : r;
}

/* Collect at most batch expired leases before changing any row. */
static enum store_result find_expired(struct sqlite_conn *c, const struct sweep_arg *a,
                                      struct expired *rows, int *n)
{
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SWEEP_EXPIRED);
    int rc = sqlite3_bind_int64(st, 1, a->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, a->batch);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind sweep expired");
        sqlite3_reset(st);
        return r;
    }
    while (*n < a->batch && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        rows[*n].id = sqlite3_column_int64(st, 0);
        rows[*n].attempts = sqlite3_column_int64(st, 1);
        rows[*n].max_attempts = sqlite3_column_int64(st, 2);
        rows[*n].timed_out = sqlite3_column_int(st, 3) != 0;
        rows[*n].ordered = limit_key_ordered((const char *)sqlite3_column_text(st, 4));
        rows[*n].created_at = sqlite3_column_int64(st, 5);
        rows[*n].max_receive = sqlite3_column_int64(st, 6);
        if (store_sqs_arn_queue((const char *)sqlite3_column_text(st, 7), rows[*n].dead_letter))
            rows[*n].max_receive = 0;
        (*n)++;
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = sqlite_conn_fail(c, rc, "sweep expired");
    sqlite3_reset(st);
    return r;
}

static int expire_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    a->res->requeued = a->res->failed = 0;
    sweep_result_forget(a->res);
    struct expired *rows = malloc((size_t)a->batch * sizeof *rows);
    if (!rows) {
        log_error("out of memory for %d expired leases", a->batch);
        return STORE_ERROR;
    }
    int n = 0;
    enum store_result r = find_expired(c, a, rows, &n);
    for (int i = 0; r == STORE_OK && i < n; i++) {
        struct job_lease_end e =
            job_lease_end_plan(1, rows[i].attempts, rows[i].max_attempts, -1, a->now,
                               a->backoff_base, a->backoff_max, rand_unit());
        if (e.requeue)
            e.run_at = job_requeue_at(rows[i].ordered, rows[i].created_at, e.run_at);
        int dead = job_dead_letter(1, rows[i].attempts, rows[i].max_receive);
        e.requeue = e.requeue && !dead;
        const char *code = dead                ? JOB_DEAD_LETTER_CODE
                           : rows[i].timed_out ? "timeout"
                                               : "lease_expired";
        struct job j;
        r = sqlite_lease_end(c, rows[i].id, e.requeue, e.run_at, a->now, code, NULL,
                             rows[i].timed_out ? ATTEMPT_TIMEOUT : ATTEMPT_EXPIRED, a->notes, &j);
        if (r == STORE_OK && dead) {
            r = sqlite_dead_letter(c, &j, rows[i].dead_letter, a->now, a->notes);
            if (r != STORE_OK)
                job_clear(&j);
        }
        if (r == STORE_OK) {
            (*(e.requeue ? &a->res->requeued : &a->res->failed))++;
            if (sweep_result_note(a->res, a->batch, j.queue, rows[i].timed_out, e.requeue) != 0)
                r = STORE_ERROR;
            job_clear(&j);
        } else if (r == STORE_NOT_FOUND) {
            r = STORE_OK; /* not running any more: nothing to do */
        }
    }
    free(rows);
    return r;
}

/* One queued or scheduled job whose expires_at passed. */
struct lapsed {
    int64_t id;
    int status; /* the stored status it was picked in */
    int has_dependents;
    char queue[JOB_QUEUE_MAX + 1];
};

/* Collect at most batch jobs whose expires_at passed before changing any row. */
static enum store_result find_lapsed(struct sqlite_conn *c, const struct sweep_arg *a,
                                     struct lapsed *rows, int *n)
{
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPIRY_PICK);
    int rc = sqlite3_bind_int64(st, 1, a->now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, a->batch);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind sweep expiry");
        sqlite3_reset(st);
        return r;
    }
    while (*n < a->batch && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        const char *queue = (const char *)sqlite3_column_text(st, 2);
        rows[*n].id = sqlite3_column_int64(st, 0);
        rows[*n].status = sqlite3_column_int(st, 1);
        rows[*n].has_dependents = sqlite3_column_int(st, 3);
        snprintf(rows[*n].queue, sizeof rows[*n].queue, "%s", queue ? queue : "");
        (*n)++;
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        r = sqlite_conn_fail(c, rc, "sweep expiry");
    sqlite3_reset(st);
    return r;
}

/* Cancel one picked job (error_code "expired"); *done is 1 when its row changed. */
static enum store_result cancel_lapsed(struct sqlite_conn *c, const struct sweep_arg *a,
                                       const struct lapsed *row, int *done)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPIRY_CANCEL);
    int rc = sqlite3_bind_int64(st, 1, row->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, row->status);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, a->now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = STORE_OK;
    if (rc == SQLITE_DONE)
        *done = sqlite3_changes(c->db) == 1;
    else
        r = sqlite_conn_fail(c, rc, "sweep expiry cancel");
    sqlite3_reset(st);
    if (r == STORE_OK && *done &&
        sqlite_notes_move(a->notes, row->id, row->queue, row->status, JOB_CANCELLED,
                          ATTEMPT_RUNNING) != 0)
        r = STORE_ERROR;
    if (r == STORE_OK && *done && row->has_dependents) {
        struct job j = {.id = row->id, .queue = (char *)row->queue, .has_dependents = 1};
        r = sqlite_deps_moved(c, &j, a->now, a->notes);
    }
    return r;
}

/* Queued jobs whose expires_at passed become cancelled (expiry.h), at most batch. */
static int expiry_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    a->res->expired = 0;
    sweep_result_forget(a->res);
    struct lapsed *rows = malloc((size_t)a->batch * sizeof *rows);
    if (!rows) {
        log_error("out of memory for %d expired jobs", a->batch);
        return STORE_ERROR;
    }
    int n = 0;
    enum store_result r = find_lapsed(c, a, rows, &n);
    for (int i = 0; r == STORE_OK && i < n; i++) {
        int done = 0;
        r = cancel_lapsed(c, a, &rows[i], &done);
        if (r != STORE_OK || !done)
            continue;
        a->res->expired++;
        if (sweep_result_note_expired(a->res, a->batch, rows[i].queue) != 0)
            r = STORE_ERROR;
    }
    free(rows);
    return r;
}

/* Jobs whose dependents an earlier write left for the sweep (depend.h's step bound). */
static int deps_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    return sqlite_deps_sweep(c, a->now, a->batch, &a->res->visited, a->notes);
}

/* Run delete statement id with (cutoff, batch); *deleted is how many rows went. */
static enum store_result delete_batch(struct sqlite_conn *c, enum stmt_id id, int64_t cutoff,
                                      int batch, const char *what, int *deleted)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite3_bind_int64(st, 1, cutoff);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, batch);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = STORE_OK;
    if (rc == SQLITE_DONE)
        *deleted = (int)sqlite3_changes(c->db);
    else
        r = sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    return r;
}

/* Retention: one batch of old succeeded and cancelled jobs deleted, then what their
 * dependents need, as for a purge (a cancelled one pins the dependents that another
 * dependency cancelled: a retry of that one must leave them cancelled). */
static int retention_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    a->res->deleted = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SWEEP_DELETE);
    int rc = sqlite_conn_bindf(st, "ii", a->cutoff, (int64_t)a->batch);
    if (rc != SQLITE_OK) {
        sqlite3_reset(st);
        return sqlite_conn_fail(c, rc, "sweep delete");
    }
    size_t deleted = 0;
    enum store_result r =
        sqlite_deps_deleted(c, st, (size_t)a->batch, NULL, a->now, a->notes, &deleted);
    a->res->deleted = (int)deleted;
    return r;
}

/* The events past the log's bounds go (sqlite_events_prune). */
static int events_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    a->res->events = 0;
    return sqlite_events_prune(c, a->now, a->events_retention, a->events_max, a->batch,
                               &a->res->events, &a->events_seen);
}

/* The lanes that no job references go (sqlite_lanes_drop), `batch` lanes looked at from where
 * the last sweep stopped; when some went, the writer learns whether any lane is left. Then at
 * most `batch` claim rows older than every window (limit_claims_oldest). */
static int lanes_tx(struct sqlite_conn *c, void *p)
{
    struct sweep_arg *a = p;
    a->res->lanes = a->res->claims = 0;
    a->lanes_next = a->lanes_from; /* a transaction run again starts where it started */
    enum store_result r = sqlite_lanes_drop(c, &a->lanes_next, a->batch, &a->res->lanes);
    if (r == STORE_OK && a->res->lanes > 0)
        r = sqlite_lanes_any(c, &a->notes->lanes);
    if (r == STORE_OK)
        r = delete_batch(c, STMT_KEY_CLAIMS_EXPIRE, limit_claims_oldest(a->now), a->batch,
                         "sweep key claims", &a->res->claims);
    return r;
}

/* Run one part in its own transaction; its counts stay 0 unless it committed. */
static enum store_result part(struct sqlite_store *st, struct sweep_arg *a, const char *name,
                              int (*fn)(struct sqlite_conn *, void *), int *count, int *count2)
{
    struct sqlite_notes notes = SQLITE_NOTES_INIT;
    a->notes = &notes;
    struct sqlite_tx tx = {.name = name, .fn = fn, .arg = a, .notes = &notes, .weight = a->batch};
    enum store_result r = sqlite_tx_run(&st->writer, &tx);
    if (r != STORE_OK) {
        *count = 0;
        if (count2)
            *count2 = 0;
        sweep_result_forget(a->res);
    } else {
        sweep_result_keep(a->res);
    }
    return r;
}

enum store_result sqlite_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                               struct sweep_result *res)
{
    struct sqlite_store *st = sqlite_store_of(s);
    memset(res, 0, sizeof *res);
    res->led = 1; /* one process per file: it always sweeps */
    if (batch < 1)
        batch = 1;
    if (batch > SWEEP_BATCH_MAX)
        batch = SWEEP_BATCH_MAX;
    if (retention < 0)
        retention = 0;
    struct sweep_arg a = {.now = now,
                          .cutoff = now - retention,
                          .batch = batch,
                          .lanes_from = st->lanes_swept,
                          /* the first sweep: no claim is parked yet */
                          .opened_from = st->opened_swept ? st->opened_swept : now,
                          .backoff_base = st->backoff_base,
                          .backoff_max = st->backoff_max,
                          .events_retention = st->events_retention,
                          .events_max = st->events_max,
                          .res = res};
    enum store_result r = part(st, &a, "sweep promote", promote_tx, &res->promoted, NULL);
    if (r == STORE_OK)
        st->opened_swept = now;
    if (r == STORE_OK)
        r = part(st, &a, "sweep leases", expire_tx, &res->requeued, &res->failed);
    if (r == STORE_OK)
        r = part(st, &a, "sweep expiry", expiry_tx, &res->expired, NULL);
    if (r == STORE_OK)
        r = part(st, &a, "sweep dependents", deps_tx, &res->visited, NULL);
    if (r == STORE_OK)
        r = part(st, &a, "sweep retention", retention_tx, &res->deleted, NULL);
    if (r == STORE_OK)
        r = part(st, &a, "sweep events", events_tx, &res->events, NULL);
    if (r == STORE_OK)
        event_log_gauge_set(&st->events_seen, &a.events_seen);
    if (r == STORE_OK) {
        r = part(st, &a, "sweep lanes", lanes_tx, &res->lanes, &res->claims);
        if (r == STORE_OK)
            st->lanes_swept = a.lanes_next;
    }
    return r;
}
