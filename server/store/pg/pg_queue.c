/* Queue controls for PostgreSQL: pause/resume (a row of jobq_queues, which the claim reads
 * before any job of the queue: one statement) and purge (one bounded batch of deletes per
 * call, whose trigger keeps the counts and drops the attempts, then what the deleted jobs'
 * dependents need, in the same transaction). */
#include "pg_deps.h"
#include "pg_row.h"
#include "pg_store.h"

static int pause_bind(struct pg_call *a, size_t k, struct pg_bind *b)
{
    (void)k; /* 1: never shares a statement */
    *b = (struct pg_bind){.id = PG_QUEUE_SET, .what = "pause", .n = 3};
    b->params[0] = a->call->pause.queue;
    b->params[1] = a->call->pause.paused ? "true" : "false";
    b->params[2] = pg_int_param(b->ints[2], a->now);
    return 0;
}

static void pause_recv(struct pg_call *a, size_t k, const PGresult *res, struct store_news *notes)
{
    (void)k;
    (void)res;
    a->call->result = STORE_OK;
    if (!a->call->pause.paused)
        store_news_ready(notes, a->call->pause.queue, 0); /* resumed: parked claims look again */
}

/* One batch of a purge: the delete, then the dependents of the deleted jobs that need it
 * (depend_purged: those of a job that had not ended settle as a cancel's would). */
static enum store_result purge_tx(struct pg_conn *c, void *arg, struct store_news *notes)
{
    struct pg_call *a = arg;
    struct store_purge_call *purge = &a->call->purge;
    char st[24], lim[24];
    const char *p[3] = {purge->queue, pg_int_param(st, purge->status),
                        pg_int_param(lim, purge->limit)};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_PURGE, 3, p, "purge", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    r = pg_deps_deleted(c, res, purge->queue, a->now, notes);
    PQclear(res);
    if (r == STORE_OK)
        purge->deleted = (size_t)rows;
    return r;
}

static const struct pg_one pause_one = {pause_bind, pause_recv, NULL, NULL, 0};

static void purge_discard(void *p)
{
    struct pg_call *a = p;
    a->call->purge.deleted = 0;
}

int pg_pause_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "pause", .fn = pg_one_tx};
    pc->one = &pause_one;
    return 1;
}

int pg_purge_prepare(struct pg_call *pc)
{
    pc->call->purge.deleted = 0;
    pc->tx = (struct pg_tx){.name = "purge", .fn = purge_tx, .discard = purge_discard};
    return 1;
}
