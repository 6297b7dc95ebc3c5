/* store_heartbeat, store_complete and store_fail for PostgreSQL: updates guarded by a live
 * lease (token matches, running, lease and max runtime not expired) in the statement that
 * changes the row; fail locks the row first (FOR UPDATE) and checks the token again. */
#include <string.h>

#include "lease.h"
#include "pg_row.h"
#include "pg_store.h"
#include "rand.h"

/* heartbeat and complete: one guarded UPDATE over arrays (one element per call) returning
 * the jobs, each with the ordinal of its element. */
static int heartbeat_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_HEARTBEAT, .what = "heartbeat", .n = 6};
    b->params[2] = pg_int_param(b->ints[2], pg_calls_now(calls, k));
    const struct store_call *call = calls[0].call;
    if (k == 1) {
        b->id = PG_HEARTBEAT_ONE;
        b->params[0] = pg_int_param(b->ints[0], call->id);
        b->params[1] = call->token;
        b->params[3] = pg_int_param(b->ints[3], call->lease_seconds > 0 ? call->lease_seconds : 0);
        b->params[4] = call->json ? "true" : "false";
        b->params[5] = call->json;
        return 0;
    }
    struct pg_arr id = {0}, token = {0}, lease = {0}, has = {0}, progress = {0};
    for (size_t i = 0; i < k; i++) {
        call = calls[i].call;
        pg_arr_int(&id, call->id);
        pg_arr_text(&token, call->token);
        pg_arr_int(&lease, call->lease_seconds > 0 ? call->lease_seconds : 0);
        pg_arr_bool(&has, call->json != NULL);
        pg_arr_text(&progress, call->json);
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
    const struct store_call *call = calls[0].call;
    if (k == 1) {
        b->id = PG_COMPLETE_ONE;
        b->params[0] = pg_int_param(b->ints[0], call->id);
        b->params[1] = call->token;
        b->params[3] = call->json;
        return 0;
    }
    struct pg_arr id = {0}, token = {0}, result = {0};
    for (size_t i = 0; i < k; i++) {
        call = calls[i].call;
        pg_arr_int(&id, call->id);
        pg_arr_text(&token, call->token);
        pg_arr_text(&result, call->json);
    }
    int rc = pg_arr_bind(&id, b, 0) | pg_arr_bind(&token, b, 1) | pg_arr_bind(&result, b, 3);
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

/* The updated jobs (by the ordinal in the last column), and a follow-up for each call whose
 * guard matched nothing. */
static void lease_recv(struct pg_call *calls, size_t k, const PGresult *res,
                       struct store_news *notes)
{
    (void)notes;
    for (size_t i = 0; i < k; i++) {
        calls[i].call->repeated = 0;
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
        if (pg_row_job(res, row, 0, a->call->out) != 0)
            a->call->result = STORE_ERROR;
    }
}

static int lease_same(const struct pg_call *a, const struct pg_call *b)
{
    return a->call->kind == b->call->kind && a->call->id != b->call->id;
}

static enum store_result heartbeat_follow(struct pg_conn *c, struct pg_call *a)
{
    return pg_miss(c, a->call->id, STORE_LEASE_LOST);
}

/* Complete missed: the same token on a job it already completed is an idempotent repeat. */
static enum store_result complete_follow(struct pg_conn *c, struct pg_call *a)
{
    struct store_call *call = a->call;
    struct job j;
    enum store_result r = pg_get_on(c, call->id, 1, &j);
    if (r != STORE_OK)
        return r;
    int repeat = j.status == JOB_SUCCEEDED && call->token && j.lease_token &&
                 strcmp(j.lease_token, call->token) == 0;
    job_clear(&j);
    if (!repeat)
        return STORE_LEASE_LOST;
    call->repeated = 1;
    return pg_get_on(c, call->id, 0, call->out);
}

static const struct pg_one heartbeat_one = {heartbeat_bind, lease_recv, heartbeat_follow,
                                            lease_same};
static const struct pg_one complete_one = {complete_bind, lease_recv, complete_follow, lease_same};

static enum store_result fail_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    struct pg_call *a = p;
    struct store_call *call = a->call;
    char id[24], now[24];
    const char *guard[3] = {pg_int_param(id, call->id), call->token, pg_int_param(now, a->now)};
    enum store_result r;
    PGresult *res = pg_exec(c, PG_LEASE_LOCK, 3, guard, "fail: lock", &r);
    if (!res)
        return r;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return pg_miss(c, call->id, STORE_LEASE_LOST);
    }
    int64_t attempts = pg_row_int(res, 0, 0), max_attempts = pg_row_int(res, 0, 1);
    PQclear(res);
    const struct fail_req *f = call->fail;
    struct job_lease_end e =
        job_lease_end_plan(f->retry, attempts, max_attempts, f->retry_in_seconds, a->now,
                           a->st->backoff_base, a->st->backoff_max, rand_unit());
    char status[8], run_at[24], finished[24];
    const char *params[8] = {id,
                             pg_int_param(status, e.requeue ? JOB_QUEUED : JOB_FAILED),
                             pg_int_param(run_at, e.run_at),
                             pg_int_param(finished, e.requeue ? JOB_NONE : a->now),
                             f->error_code,
                             f->error_detail,
                             call->token,
                             now};
    r = pg_one_row(c, PG_LEASE_END, 8, params, 0, "fail", call->out);
    if (r == STORE_NOT_FOUND)
        return STORE_LEASE_LOST; /* cannot happen: the row is locked and was checked */
    if (r == STORE_OK && e.requeue && e.run_at <= a->now)
        store_news_ready(notes, call->out->queue, !call->out->requires);
    else if (r == STORE_OK && e.requeue)
        store_news_later(notes, call->out->queue, e.run_at);
    return r;
}

static void lease_discard(void *p)
{
    struct pg_call *a = p;
    job_clear(a->call->out);
}

/* Set pc up as a lease call named `name`: one statement (one) or its own transaction (fn). */
static int lease_prepare(struct pg_call *pc, const char *name, const struct pg_one *one,
                         enum store_result (*fn)(struct pg_conn *, void *, struct store_news *))
{
    pc->tx = (struct pg_tx){.name = name, .fn = one ? pg_one_tx : fn, .discard = lease_discard};
    pc->one = one;
    memset(pc->call->out, 0, sizeof *pc->call->out);
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
