/* store_enqueue for PostgreSQL: one insert per job in one transaction; an idempotency_key
 * hit (ON CONFLICT DO NOTHING, then the existing row) creates nothing. */
#include <string.h>

#include "pg_row.h"
#include "pg_store.h"

static void insert_bind(const struct job_spec *sp, int64_t now, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_JOB_INSERT, .what = "enqueue", .n = 9};
    b->params[0] = sp->queue;
    b->params[1] = sp->payload;
    b->params[2] = pg_int_param(b->ints[2], sp->priority);
    b->params[3] = pg_int_param(b->ints[3], sp->run_at);
    b->params[4] = pg_int_param(b->ints[4], sp->max_attempts);
    b->params[5] = pg_int_param(b->ints[5], sp->max_runtime_seconds);
    b->params[6] = sp->requires && strcmp(sp->requires, "[]") != 0 ? sp->requires : NULL;
    b->params[7] = sp->idempotency_key;
    b->params[8] = pg_int_param(b->ints[8], now);
}

/* The insert's result: the new job (created), or nothing (an idempotency_key hit: *created
 * 0, out untouched). */
static enum store_result insert_recv(const PGresult *res, int64_t now, struct job *out,
                                     int *created, struct pg_notes *notes)
{
    *created = PQntuples(res) == 1;
    if (!*created)
        return STORE_OK;
    if (pg_row_job(res, 0, 0, out) != 0)
        return STORE_ERROR;
    if (out->run_at <= now)
        pg_notes_ready(notes, out->queue);
    else
        pg_notes_later(notes, out->queue, out->run_at);
    return STORE_OK;
}

/* An idempotency_key hit: the existing job into out. */
static enum store_result existing(struct pg_conn *c, const struct job_spec *sp, struct job *out)
{
    const char *key[2] = {sp->queue, sp->idempotency_key};
    enum store_result r;
    PGresult *res = pg_exec(c, PG_JOB_BY_KEY, 2, key, "enqueue: idempotency hit", &r);
    if (!res)
        return r;
    r = PQntuples(res) == 1 ? (pg_row_job(res, 0, 0, out) == 0 ? STORE_OK : STORE_ERROR)
                            : STORE_BUSY; /* inserted by a transaction that rolled back */
    PQclear(res);
    return r;
}

static enum store_result insert_one(struct pg_conn *c, const struct job_spec *sp, int64_t now,
                                    struct job *out, int *created, struct pg_notes *notes)
{
    struct pg_bind b;
    insert_bind(sp, now, &b);
    enum store_result r;
    PGresult *res = pg_exec(c, b.id, b.n, b.params, b.what, &r);
    if (!res)
        return r;
    r = insert_recv(res, now, out, created, notes);
    PQclear(res);
    return r == STORE_OK && !*created ? existing(c, sp, out) : r;
}

/* One job: a one-statement call. */
static int one_bind(struct pg_call *a, struct pg_bind *b)
{
    insert_bind(&a->call->specs[0], a->now, b);
    return 0;
}

static enum store_result one_recv(struct pg_call *a, const PGresult *res, struct pg_notes *notes)
{
    struct store_call *call = a->call;
    enum store_result r = insert_recv(res, a->now, &call->out[0], &call->created[0], notes);
    a->done = r == STORE_OK && call->created[0];
    a->follow = r == STORE_OK && !call->created[0];
    return r;
}

static enum store_result one_follow(struct pg_conn *c, struct pg_call *a)
{
    enum store_result r = existing(c, &a->call->specs[0], &a->call->out[0]);
    a->done = r == STORE_OK;
    return r == STORE_OK ? STORE_EXISTS : r;
}

static const struct pg_one enqueue_one = {one_bind, one_recv, one_follow};

static enum store_result enqueue_tx(struct pg_conn *c, void *p, struct pg_notes *notes)
{
    struct pg_call *a = p;
    struct store_call *call = a->call;
    for (a->done = 0; a->done < call->nspecs; a->done++) {
        size_t i = a->done;
        enum store_result r =
            insert_one(c, &call->specs[i], a->now, &call->out[i], &call->created[i], notes);
        if (r != STORE_OK)
            return r;
    }
    return call->nspecs == 1 && !call->created[0] ? STORE_EXISTS : STORE_OK;
}

static void enqueue_discard(void *p)
{
    struct pg_call *a = p;
    for (size_t i = 0; i < a->done && i < a->call->nspecs; i++)
        job_clear(&a->call->out[i]);
    a->done = 0;
}

int pg_enqueue_prepare(struct pg_call *pc)
{
    if (pc->call->nspecs == 0) {
        pc->call->result = STORE_OK;
        return 0;
    }
    pc->tx = (struct pg_tx){.name = "enqueue", .fn = enqueue_tx, .discard = enqueue_discard};
    if (pc->call->nspecs == 1) {
        pc->tx.fn = pg_one_tx;
        pc->one = &enqueue_one;
    }
    return 1;
}
