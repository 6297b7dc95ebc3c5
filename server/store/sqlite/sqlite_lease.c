/* store_heartbeat, store_complete, store_fail and store_snooze for SQLite: compare-and-swap
 * updates guarded by a live lease (token matches, running, lease and max runtime not
 * expired). */
#include <stdlib.h>
#include <string.h>

#include "lease.h"
#include "limit.h"
#include "log.h"
#include "rand.h"
#include "sqlite_deps.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"
#include "sqlite_store.h"
#include "store_sqs.h"

struct lease_arg {
    int64_t id;
    const char *token;
    int64_t now;
    int64_t lease_seconds;       /* heartbeat */
    const char *progress;        /* heartbeat */
    const char *result;          /* complete */
    int *repeated;               /* complete: set to 1 for an idempotent repeat */
    const struct fail_req *fail; /* fail */
    int64_t seconds;             /* snooze */
    int pause_key;               /* snooze */
    int64_t backoff_base, backoff_max;
    struct job *out;
    struct sqlite_notes *notes;
};

static enum store_result bind_fail(struct sqlite_conn *c, sqlite3_stmt *st, int rc,
                                   const char *what)
{
    enum store_result r = sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    return r;
}

/* Bind ?1 id, ?2 token, ?3 now: the live-lease guard of every statement here. */
static int bind_guard(sqlite3_stmt *st, const struct lease_arg *a)
{
    int rc = sqlite3_bind_int64(st, 1, a->id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 2, a->token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, a->now);
    return rc;
}

/* The guard matched no row: STORE_NOT_FOUND, or STORE_LEASE_LOST when the job exists. */
static enum store_result miss(struct sqlite_conn *c, int64_t id)
{
    struct job j;
    enum store_result r = sqlite_row_get(c, id, 0, &j);
    if (r == STORE_OK) {
        job_clear(&j);
        return STORE_LEASE_LOST;
    }
    return r;
}

static int heartbeat_tx(struct sqlite_conn *c, void *p)
{
    struct lease_arg *a = p;
    memset(a->out, 0, sizeof *a->out);
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_HEARTBEAT);
    int rc = bind_guard(st, a);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 4, a->lease_seconds);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 5, a->progress != NULL);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_json(st, 6, a->progress);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind heartbeat");
    enum store_result r = sqlite_row_write(c, st, a->id, 0, "heartbeat", a->out);
    return r == STORE_NOT_FOUND ? miss(c, a->id) : r;
}

enum store_result sqlite_lease_attempt(struct sqlite_conn *c, const struct job *j, int64_t now,
                                       enum attempt_outcome how, const char *error_code,
                                       const char *error_detail)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_ATTEMPT_END);
    int rc = sqlite3_bind_int64(st, 1, j->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, j->fencing_token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, j->attempts);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 4, j->worker_id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 5, j->claimed_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 6, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 7, (int)how);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 8, error_code);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_json(st, 9, error_detail);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind attempt end");
    rc = sqlite_conn_step(c, st);
    if (rc != SQLITE_DONE)
        return bind_fail(c, st, rc, "attempt end");
    sqlite3_reset(st);
    return STORE_OK;
}

/* Complete missed: the same token on a job it already completed is an idempotent repeat. */
static enum store_result complete_miss(struct sqlite_conn *c, const struct lease_arg *a)
{
    struct job j;
    enum store_result r = sqlite_row_get(c, a->id, 1, &j);
    if (r != STORE_OK)
        return r;
    int repeat = j.status == JOB_SUCCEEDED && a->token && j.lease_token &&
                 strcmp(j.lease_token, a->token) == 0;
    if (!repeat) {
        job_clear(&j);
        return STORE_LEASE_LOST;
    }
    free(j.lease_token);
    j.lease_token = NULL;
    *a->out = j;
    *a->repeated = 1;
    return STORE_OK;
}

static int complete_tx(struct sqlite_conn *c, void *p)
{
    struct lease_arg *a = p;
    memset(a->out, 0, sizeof *a->out);
    *a->repeated = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_COMPLETE);
    int rc = bind_guard(st, a);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_json(st, 4, a->result);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind complete");
    enum store_result r = sqlite_row_write(c, st, a->id, 0, "complete", a->out);
    if (r == STORE_NOT_FOUND)
        return complete_miss(c, a);
    if (r == STORE_OK && sqlite_notes_move(a->notes, a->out->id, a->out->queue, JOB_RUNNING,
                                           JOB_SUCCEEDED, ATTEMPT_SUCCEEDED) != 0)
        r = STORE_ERROR;
    if (r == STORE_OK)
        r = sqlite_key_released(c, a->out, a->notes);
    if (r == STORE_OK)
        r = sqlite_deps_moved(c, a->out, a->now, a->notes);
    return r;
}

/* What the live lease of a fail or snooze finds on its job. */
struct lease_found {
    int64_t attempts, max_attempts;
    int has_key;         /* 1: the job has a concurrency_key */
    int ordered;         /* 1: an ordered one (limit_key_ordered) */
    int64_t created_at;  /* for job_requeue_at */
    int64_t max_receive; /* its queue's dead-letter policy (0: none; job_dead_letter) */
    char dead_letter[JOB_QUEUE_MAX + 1]; /* and the queue it names */
};

/* Start a fail or snooze (its answer empty): read what it decides on while the lease is
 * live; STORE_NOT_FOUND or STORE_LEASE_LOST when it is not. */
static enum store_result lease_check(struct sqlite_conn *c, const struct lease_arg *a,
                                     struct lease_found *found)
{
    memset(a->out, 0, sizeof *a->out);
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LEASE_CHECK);
    int rc = bind_guard(st, a);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind lease check");
    rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW) {
        found->attempts = sqlite3_column_int64(st, 0);
        found->max_attempts = sqlite3_column_int64(st, 1);
        found->has_key = sqlite3_column_int(st, 2) != 0;
        found->ordered = limit_key_ordered((const char *)sqlite3_column_text(st, 3));
        found->created_at = sqlite3_column_int64(st, 4);
        found->max_receive = sqlite3_column_int64(st, 5);
        if (store_sqs_arn_queue((const char *)sqlite3_column_text(st, 6), found->dead_letter) != 0)
            found->max_receive = 0;
    } else if (rc != SQLITE_DONE) {
        return bind_fail(c, st, rc, "lease check");
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? miss(c, a->id) : STORE_OK;
}

static int fail_tx(struct sqlite_conn *c, void *p)
{
    struct lease_arg *a = p;
    struct lease_found found;
    enum store_result r = lease_check(c, a, &found);
    if (r != STORE_OK)
        return r;
    int64_t attempts = found.attempts, max_attempts = found.max_attempts;
    const struct fail_req *f = a->fail;
    struct job_lease_end e =
        job_lease_end_plan(f->retry, attempts, max_attempts, f->retry_in_seconds, a->now,
                           a->backoff_base, a->backoff_max, rand_unit());
    if (e.requeue)
        e.run_at = job_requeue_at(found.ordered, found.created_at, e.run_at);
    int dead = job_dead_letter(f->retry, attempts, found.max_receive);
    r = sqlite_lease_end(c, a->id, e.requeue && !dead, e.run_at, a->now,
                         dead ? JOB_DEAD_LETTER_CODE : f->error_code, f->error_detail,
                         ATTEMPT_RETRIED, a->notes, a->out);
    if (r == STORE_OK && dead)
        r = sqlite_dead_letter(c, a->out, found.dead_letter, a->now, a->notes);
    return r;
}

enum store_result sqlite_dead_letter(struct sqlite_conn *c, const struct job *j, const char *target,
                                     int64_t now, struct sqlite_notes *notes)
{
    struct job_spec sp;
    store_dead_letter_spec(j, target, &sp);
    struct job copy = {0};
    int created = 0;
    enum store_result r = sqlite_enqueue_one(c, &sp, now, &copy, &created, notes);
    job_clear(&copy);
    return r;
}

/* With pause_key: the job's key waits until `until` at least (limit_pause_merge), and so do
 * its lanes. */
static enum store_result pause_ckey(struct sqlite_conn *c, const char *key, int64_t until)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_KEY_PAUSED);
    int rc = sqlite_conn_bind_text(st, 1, key);
    int64_t held = JOB_NONE;
    if (rc == SQLITE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW)
        held = sqlite3_column_int64(st, 0);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return bind_fail(c, st, rc, "key paused");
    sqlite3_reset(st);
    until = limit_pause_merge(held, until);
    const enum stmt_id writes[2] = {STMT_KEY_PAUSE, STMT_LANES_PAUSE};
    for (int i = 0; i < 2; i++) {
        st = sqlite_conn_stmt(c, writes[i]);
        rc = sqlite_conn_bind_text(st, 1, key);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_int64(st, 2, until);
        if (rc == SQLITE_OK)
            rc = sqlite_conn_step(c, st);
        if (rc != SQLITE_DONE)
            return bind_fail(c, st, rc, "pause key");
        sqlite3_reset(st);
    }
    return STORE_OK;
}

static int snooze_tx(struct sqlite_conn *c, void *p)
{
    struct lease_arg *a = p;
    struct lease_found found;
    enum store_result r = lease_check(c, a, &found);
    if (r != STORE_OK)
        return r;
    struct job_snooze plan =
        job_snooze_plan(found.attempts, found.has_key, a->pause_key, a->seconds, a->now);
    int status = plan.run_at > a->now ? SQLITE_SCHEDULED : (int)plan.status;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SNOOZE);
    int rc = bind_guard(st, a);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 4, status);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 5, plan.run_at);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 6, plan.attempts);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 7, (int)plan.outcome);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind snooze");
    struct job *j = a->out;
    r = sqlite_row_write(c, st, a->id, 0, "snooze", j);
    if (r == STORE_NOT_FOUND)
        return miss(c, a->id); /* cannot happen: checked in this transaction */
    if (r != STORE_OK)
        return r;
    /* The attempt that ends is the claim's: its number before the claim was undone. */
    struct job claimed = *j;
    claimed.attempts = found.attempts;
    if (sqlite_notes_move(a->notes, j->id, j->queue, JOB_RUNNING, status, (int)plan.outcome) != 0)
        r = STORE_ERROR;
    else
        r = sqlite_lease_attempt(c, &claimed, a->now, plan.outcome, NULL, NULL);
    if (r == STORE_OK) /* before the pause: a lane reopened here opens no earlier than it */
        r = sqlite_key_released(c, j, a->notes);
    if (r == STORE_OK && status == JOB_QUEUED)
        r = sqlite_lane_requeued(c, j);
    if (r == STORE_OK && plan.pause_until != JOB_NONE && j->concurrency_key)
        r = pause_ckey(c, j->concurrency_key, plan.pause_until);
    if (r == STORE_OK && status == SQLITE_SCHEDULED)
        store_news_later(&a->notes->news, j->queue, plan.run_at);
    else if (r == STORE_OK)
        store_news_ready(&a->notes->news, j->queue, sqlite_row_plain(j));
    return r;
}

static void lease_discard(void *p)
{
    struct lease_arg *a = p;
    job_clear(a->out);
}

enum store_result sqlite_lease_end(struct sqlite_conn *c, int64_t id, int requeue, int64_t run_at,
                                   int64_t now, const char *error_code, const char *error_detail,
                                   enum attempt_outcome how, struct sqlite_notes *notes,
                                   struct job *out)
{
    int status = !requeue ? JOB_FAILED : run_at > now ? SQLITE_SCHEDULED : JOB_QUEUED;
    if (how == ATTEMPT_RETRIED && !requeue)
        how = ATTEMPT_FAILED;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_LEASE_END);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, status);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 3, requeue ? run_at : JOB_NONE);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_time(st, 4, requeue ? JOB_NONE : now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_text(st, 5, error_code);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_bind_json(st, 6, error_detail);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 7, now);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 8, (int)how);
    if (rc != SQLITE_OK)
        return bind_fail(c, st, rc, "bind lease end");
    struct job j;
    enum store_result r = sqlite_row_write(c, st, id, 0, "lease end", &j);
    if (r != STORE_OK)
        return r;
    if (sqlite_notes_move(notes, id, j.queue, JOB_RUNNING, status, (int)how) != 0)
        r = STORE_ERROR;
    else if (requeue) /* the next claim makes the row the record of the next attempt */
        r = sqlite_lease_attempt(c, &j, now, how, error_code, error_detail);
    if (r == STORE_OK)
        r = sqlite_key_released(c, &j, notes);
    if (r == STORE_OK && !requeue)
        r = sqlite_deps_moved(c, &j, now, notes);
    if (r == STORE_OK && status == JOB_QUEUED)
        r = sqlite_lane_requeued(c, &j);
    if (r == STORE_OK && status == SQLITE_SCHEDULED)
        store_news_later(&notes->news, j.queue, run_at);
    else if (r == STORE_OK && status == JOB_QUEUED)
        store_news_ready(&notes->news, j.queue, sqlite_row_plain(&j));
    if (r == STORE_OK && out)
        *out = j;
    else
        job_clear(&j);
    return r;
}

/* A lease transaction and its arguments, in one block. */
struct lease_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct lease_arg a;
};

struct sqlite_tx *sqlite_lease_tx(struct sqlite_store *st, struct store_call *call)
{
    struct lease_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a lease call");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct lease_arg){.id = store_call_job_id(call),
                              .now = call->now,
                              .backoff_base = st->backoff_base,
                              .backoff_max = st->backoff_max,
                              .out = store_call_job_out(call),
                              .notes = &b->notes};
    b->tx = (struct sqlite_tx){.discard = lease_discard,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &b->a.now : NULL,
                               .weight = 1};
    switch (call->kind) {
    case STORE_CALL_HEARTBEAT:
        b->a.token = call->heartbeat.token;
        b->a.lease_seconds = job_heartbeat_lease(call->heartbeat.lease_seconds);
        b->a.progress = call->heartbeat.progress;
        b->tx.name = "heartbeat";
        b->tx.fn = heartbeat_tx;
        break;
    case STORE_CALL_COMPLETE:
        b->a.token = call->complete.token;
        b->a.result = call->complete.result;
        b->a.repeated = &call->complete.repeated;
        b->tx.name = "complete";
        b->tx.fn = complete_tx;
        break;
    case STORE_CALL_SNOOZE:
        b->a.token = call->snooze.token;
        b->a.seconds = call->snooze.seconds;
        b->a.pause_key = call->snooze.pause_key;
        b->tx.name = "snooze";
        b->tx.fn = snooze_tx;
        break;
    case STORE_CALL_FAIL:
    default:
        b->a.token = call->fail.token;
        b->a.fail = call->fail.req;
        b->tx.name = "fail";
        b->tx.fn = fail_tx;
        break;
    }
    return &b->tx;
}
