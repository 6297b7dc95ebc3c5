/* store_heartbeat, store_complete, store_fail and store_snooze for PostgreSQL: updates guarded
 * by a live lease (token matches, running, lease and max runtime not expired) in the statement
 * that changes the row; fail and snooze lock the row first (FOR UPDATE) and check the lease
 * again. */
#include <string.h>

#include "lease.h"
#include "limit.h"
#include "pg_deps.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"
#include "store_sqs.h"

/* heartbeat and complete: one guarded UPDATE over arrays (one element per call) returning
 * the jobs, each with the ordinal of its element. */
static int heartbeat_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_HEARTBEAT, .what = "heartbeat", .n = 6};
    b->params[2] = pg_int_param(b->ints[2], pg_calls_now(calls, k));
    const struct store_heartbeat_call *h = &calls[0].call->heartbeat;
    if (k == 1) {
        b->id = PG_HEARTBEAT_ONE;
        b->params[0] = pg_int_param(b->ints[0], h->id);
        b->params[1] = h->token;
        b->params[3] = pg_int_param(b->ints[3], job_heartbeat_lease(h->lease_seconds));
        b->params[4] = h->progress ? "true" : "false";
        b->params[5] = h->progress;
        return 0;
    }
    struct pg_arr id = {0}, token = {0}, lease = {0}, has = {0}, progress = {0};
    for (size_t i = 0; i < k; i++) {
        h = &calls[i].call->heartbeat;
        pg_arr_int(&id, h->id);
        pg_arr_text(&token, h->token);
        pg_arr_int(&lease, job_heartbeat_lease(h->lease_seconds));
        pg_arr_bool(&has, h->progress != NULL);
        pg_arr_text(&progress, h->progress);
    }
    int rc = pg_arr_bind(&id, b, 0) | pg_arr_bind(&token, b, 1) | pg_arr_bind(&lease, b, 3) |
             pg_arr_bind(&has, b, 4) | pg_arr_bind(&progress, b, 5);
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

static int complete_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_COMPLETE, .what = "complete", .n = 4};
    b->params[2] = pg_int_param(b->ints[2], pg_calls_now(calls, k));
    const struct store_complete_call *m = &calls[0].call->complete;
    if (k == 1) {
        b->id = PG_COMPLETE_ONE;
        b->params[0] = pg_int_param(b->ints[0], m->id);
        b->params[1] = m->token;
        b->params[3] = m->result;
        return 0;
    }
    struct pg_arr id = {0}, token = {0}, result = {0};
    for (size_t i = 0; i < k; i++) {
        m = &calls[i].call->complete;
        pg_arr_int(&id, m->id);
        pg_arr_text(&token, m->token);
        pg_arr_text(&result, m->result);
    }
    int rc = pg_arr_bind(&id, b, 0) | pg_arr_bind(&token, b, 1) | pg_arr_bind(&result, b, 3);
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

/* The updated jobs (by the ordinal in the last column), and a follow-up for each call whose
 * guard matched nothing (heartbeat and complete calls, all of one kind). */
static void lease_recv(struct pg_call *calls, size_t k, const PGresult *res,
                       struct store_news *notes)
{
    for (size_t i = 0; i < k; i++) {
        if (calls[i].call->kind == STORE_CALL_COMPLETE)
            calls[i].call->complete.repeated = 0;
        calls[i].call->result = STORE_OK;
        calls[i].follow = 1;
    }
    int rows = PQntuples(res), ord_col = PQnfields(res) - 1;
    for (int row = 0; row < rows; row++) {
        int64_t ord = pg_row_int(res, row, ord_col);
        if (ord < 1 || ord > (int64_t)k || !calls[ord - 1].follow)
            continue; /* cannot happen: one row per element at most */
        struct pg_call *a = &calls[ord - 1];
        a->follow = 0;
        struct job *out = store_call_job_out(a->call);
        if (pg_row_job(res, row, 0, out) != 0)
            a->call->result = STORE_ERROR;
        else if (a->call->kind == STORE_CALL_COMPLETE && out->concurrency_key)
            store_news_ready(notes, out->queue, !out->requires); /* its key has room again */
    }
}

static int lease_same(const struct pg_call *a, const struct pg_call *b)
{
    return a->call->kind == b->call->kind &&
           store_call_job_id(a->call) != store_call_job_id(b->call);
}

static enum store_result heartbeat_follow(struct pg_conn *c, struct pg_call *a,
                                          struct store_news *notes)
{
    (void)notes;
    return pg_miss(c, a->call->heartbeat.id, STORE_LEASE_LOST);
}

/* Complete job m->id, which some job depends on, in a transaction of its own (or in the one c
 * is in): the job's row first (its lock makes an enqueue that names it wait, and read it
 * succeeded after this commits), then its dependents, each statement on a snapshot taken after
 * that lock, so an edge an enqueue committed meanwhile is settled too (depend.h). A deadlock
 * with another such write is retried a few times. */
static enum store_result complete_deps(struct pg_conn *c, struct pg_call *a,
                                       struct store_news *notes)
{
    struct store_complete_call *m = &a->call->complete;
    int own = PQtransactionStatus(c->db) == PQTRANS_IDLE;
    char id[24], now[24];
    const char *p[4] = {pg_int_param(id, m->id), m->token, pg_int_param(now, a->now), m->result};
    enum store_result r = STORE_BUSY;
    for (int attempt = 0; attempt < 3 && r == STORE_BUSY; attempt++) {
        job_clear(m->out);
        r = own ? pg_command(c, "BEGIN", "complete: begin") : STORE_OK;
        if (r == STORE_OK)
            r = pg_one_row(c, PG_COMPLETE_DEPS, 4, p, 0, "complete", m->out);
        if (r == STORE_NOT_FOUND)
            r = STORE_LEASE_LOST; /* the lease ended meanwhile */
        if (r == STORE_OK)
            r = pg_deps_moved(c, m->out->id, m->out->queue, 1, a->now, notes);
        if (r == STORE_OK && m->out->concurrency_key)
            store_news_ready(notes, m->out->queue, !m->out->requires); /* its key has room */
        if (own && r == STORE_OK)
            r = pg_commit(c, a->st->statement_ms, "complete");
        else if (own && PQtransactionStatus(c->db) != PQTRANS_IDLE)
            pg_command(c, "ROLLBACK", "complete: rollback");
        if (!own)
            break; /* the caller's transaction retries as a whole */
    }
    if (r != STORE_OK)
        job_clear(m->out);
    return r;
}

/* Complete missed: a live lease on a job that some job depends on completes in a transaction
 * of its own (complete_deps); the same token on a job it already completed is an idempotent
 * repeat. */
static enum store_result complete_follow(struct pg_conn *c, struct pg_call *a,
                                         struct store_news *notes)
{
    struct store_complete_call *m = &a->call->complete;
    struct job j;
    enum store_result r = pg_get_on(c, m->id, 1, &j);
    if (r != STORE_OK)
        return r;
    if (j.status == JOB_RUNNING && j.has_dependents && m->token && j.lease_token &&
        strcmp(j.lease_token, m->token) == 0) {
        job_clear(&j);
        return complete_deps(c, a, notes);
    }
    int repeat = j.status == JOB_SUCCEEDED && m->token && j.lease_token &&
                 strcmp(j.lease_token, m->token) == 0;
    job_clear(&j);
    if (!repeat)
        return STORE_LEASE_LOST;
    m->repeated = 1;
    return pg_get_on(c, m->id, 0, m->out);
}

static const struct pg_one heartbeat_one = {heartbeat_bind, lease_recv, heartbeat_follow,
                                            lease_same, 0};
static const struct pg_one complete_one = {complete_bind, lease_recv, complete_follow, lease_same,
                                           0};

static enum store_result fail_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *a = p;
    const struct store_fail_call *fail = &a->call->fail;
    char id[24], now[24];
    const char *guard[3] = {pg_int_param(id, fail->id), fail->token, pg_int_param(now, a->now)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_LEASE_LOCK, 3, guard, "fail: lock", &r);
    if (!res)
        return r;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return pg_miss(c, fail->id, STORE_LEASE_LOST);
    }
    int64_t attempts = pg_row_int(res, 0, 0), max_attempts = pg_row_int(res, 0, 1);
    int ordered = limit_key_ordered(PQgetvalue(res, 0, 3));
    int64_t created_at = pg_row_int(res, 0, 4);
    char target[JOB_QUEUE_MAX + 1];
    int dead = store_sqs_arn_queue(PQgetvalue(res, 0, 6), target) == 0 &&
               job_dead_letter(fail->req->retry, attempts, pg_row_int(res, 0, 5));
    PQclear(res);
    const struct fail_req *f = fail->req;
    struct job_lease_end e =
        job_lease_end_plan(f->retry, attempts, max_attempts, f->retry_in_seconds, a->now,
                           a->st->backoff_base, a->st->backoff_max, rand_unit());
    if (e.requeue)
        e.run_at = job_requeue_at(ordered, created_at, e.run_at);
    e.requeue = e.requeue && !dead;
    char status[8], run_at[24], finished[24];
    const char *params[8] = {id,
                             pg_int_param(status, e.requeue ? JOB_QUEUED : JOB_FAILED),
                             pg_int_param(run_at, e.run_at),
                             pg_int_param(finished, e.requeue ? JOB_NONE : a->now),
                             dead ? JOB_DEAD_LETTER_CODE : f->error_code,
                             f->error_detail,
                             fail->token,
                             now};
    r = pg_one_row(c, PG_LEASE_END, 8, params, 0, "fail", fail->out);
    if (r == STORE_NOT_FOUND)
        return STORE_LEASE_LOST; /* cannot happen: the row is locked and was checked */
    if (r == STORE_OK && ((e.requeue && e.run_at <= a->now) || fail->out->concurrency_key))
        store_news_ready(notes, fail->out->queue, !fail->out->requires);
    else if (r == STORE_OK && e.requeue)
        store_news_later(notes, fail->out->queue, e.run_at);
    if (r == STORE_OK && !e.requeue) /* failed for good: its dependents learn it */
        r = pg_deps_moved(c, fail->out->id, fail->out->queue, fail->out->has_dependents, a->now,
                          notes);
    if (r == STORE_OK && dead)
        r = pg_dead_letter(c, fail->out, target, a->now, notes);
    return r;
}

enum store_result pg_dead_letter(struct pg_conn *c, const struct job *j, const char *target,
                                 int64_t now, struct store_news *notes)
{
    struct job_spec sp;
    store_dead_letter_spec(j, target, &sp);
    struct job copy = {0};
    int created = 0;
    enum store_result r = pg_enqueue_one(c, &sp, now, &copy, &created, notes);
    job_clear(&copy);
    return r;
}

/* With pause_key: the job's key waits until `until` at least (limit_pause_merge), and so do
 * its lanes; the key's row is locked first, so concurrent pauses merge. */
static enum store_result pause_ckey(struct pg_conn *c, const char *key, int64_t until)
{
    enum store_result r;
    const char *lock[1] = {key};
    PGresult *res = pg_conn_exec(c, PG_KEY_LOCK, 1, lock, "snooze: key lock", &r);
    if (!res)
        return r;
    int64_t held = PQntuples(res) == 1 ? pg_row_int(res, 0, 0) : JOB_NONE;
    PQclear(res);
    char merged[24];
    const char *params[2] = {key, pg_int_param(merged, limit_pause_merge(held, until))};
    PQclear(pg_conn_exec(c, PG_KEY_PAUSE, 2, params, "snooze: key pause", &r));
    return r;
}

static enum store_result snooze_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *a = p;
    const struct store_snooze_call *sn = &a->call->snooze;
    char id[24], now[24];
    const char *guard[3] = {pg_int_param(id, sn->id), sn->token, pg_int_param(now, a->now)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_LEASE_LOCK, 3, guard, "snooze: lock", &r);
    if (!res)
        return r;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return pg_miss(c, sn->id, STORE_LEASE_LOST);
    }
    int64_t attempts = pg_row_int(res, 0, 0);
    int has_key = strcmp(PQgetvalue(res, 0, 2), "t") == 0;
    PQclear(res);
    struct job_snooze plan = job_snooze_plan(attempts, has_key, sn->pause_key, sn->seconds, a->now);
    char status[8], run_at[24], left[24], outcome[8];
    const char *params[7] = {id,
                             sn->token,
                             now,
                             pg_int_param(status, plan.status),
                             pg_int_param(run_at, plan.run_at),
                             pg_int_param(left, plan.attempts),
                             pg_int_param(outcome, plan.outcome)};
    r = pg_one_row(c, PG_SNOOZE, 7, params, 0, "snooze", sn->out);
    if (r == STORE_NOT_FOUND)
        return STORE_LEASE_LOST; /* cannot happen: the row is locked and was checked */
    if (r == STORE_OK && plan.pause_until != JOB_NONE && sn->out->concurrency_key)
        r = pause_ckey(c, sn->out->concurrency_key, plan.pause_until);
    if (r == STORE_OK && plan.run_at <= a->now)
        store_news_ready(notes, sn->out->queue, !sn->out->requires);
    else if (r == STORE_OK)
        store_news_later(notes, sn->out->queue, plan.run_at);
    return r;
}

static void lease_discard(void *p)
{
    struct pg_call *a = p;
    job_clear(store_call_job_out(a->call));
}

/* Set pc up as a lease call named `name`: one statement (one) or its own transaction (fn). */
static int lease_prepare(struct pg_call *pc, const char *name, const struct pg_one *one,
                         enum store_result (*fn)(struct pg_conn *, void *, struct store_news *))
{
    pc->tx = (struct pg_tx){.name = name, .fn = one ? pg_one_tx : fn, .discard = lease_discard};
    pc->one = one;
    memset(store_call_job_out(pc->call), 0, sizeof(struct job));
    return 1;
}

int pg_heartbeat_prepare(struct pg_call *pc)
{
    return lease_prepare(pc, "heartbeat", &heartbeat_one, NULL);
}

int pg_complete_prepare(struct pg_call *pc)
{
    return lease_prepare(pc, "complete", &complete_one, NULL);
}

int pg_fail_prepare(struct pg_call *pc)
{
    return lease_prepare(pc, "fail", NULL, fail_tx);
}

int pg_snooze_prepare(struct pg_call *pc)
{
    return lease_prepare(pc, "snooze", NULL, snooze_tx);
}
