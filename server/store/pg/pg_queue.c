/* Queue controls for PostgreSQL: pause/resume (a row of jobq_queues, which the claim reads
 * before any job of the queue) and purge (one bounded batch of deletes per call; the trigger
 * keeps the counts and drops the attempts). One statement each. */
#include <stdlib.h>

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

static int purge_bind(struct pg_call *a, size_t k, struct pg_bind *b)
{
    (void)k; /* 1: never shares a statement */
    *b = (struct pg_bind){.id = PG_PURGE, .what = "purge", .n = 3};
    const struct store_purge_call *p = &a->call->purge;
    b->params[0] = p->queue;
    b->params[1] = pg_int_param(b->ints[1], p->status);
    b->params[2] = pg_int_param(b->ints[2], p->limit);
    return 0;
}

static void purge_recv(struct pg_call *a, size_t k, const PGresult *res, struct store_news *notes)
{
    (void)k;
    (void)notes;
    a->call->purge.deleted = (size_t)strtoull(PQcmdTuples((PGresult *)res), NULL, 10);
    a->call->result = STORE_OK;
}

static const struct pg_one pause_one = {pause_bind, pause_recv, NULL, NULL};
static const struct pg_one purge_one = {purge_bind, purge_recv, NULL, NULL};

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
    pc->tx = (struct pg_tx){.name = "purge", .fn = pg_one_tx, .discard = purge_discard};
    pc->one = &purge_one;
    return 1;
}
