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
    b->params[0] = a->call->queue;
    b->params[1] = a->call->flag ? "true" : "false";
    b->params[2] = pg_int_param(b->ints[2], a->now);
    return 0;
}

static void pause_recv(struct pg_call *a, size_t k, const PGresult *res, struct store_news *notes)
{
    (void)k;
    (void)res;
    a->call->result = STORE_OK;
    if (!a->call->flag)
        store_news_ready(notes, a->call->queue, 0); /* resumed: parked claims look again */
}

static int purge_bind(struct pg_call *a, size_t k, struct pg_bind *b)
{
    (void)k; /* 1: never shares a statement */
    *b = (struct pg_bind){.id = PG_PURGE, .what = "purge", .n = 3};
    b->params[0] = a->call->queue;
    b->params[1] = pg_int_param(b->ints[1], a->call->status);
    b->params[2] = pg_int_param(b->ints[2], a->call->limit);
    return 0;
}

static void purge_recv(struct pg_call *a, size_t k, const PGresult *res, struct store_news *notes)
{
    (void)k;
    (void)notes;
    a->call->n = (size_t)strtoull(PQcmdTuples((PGresult *)res), NULL, 10);
    a->call->result = STORE_OK;
}

static const struct pg_one pause_one = {pause_bind, pause_recv, NULL, NULL};
static const struct pg_one purge_one = {purge_bind, purge_recv, NULL, NULL};

static void purge_discard(void *p)
{
    struct pg_call *a = p;
    a->call->n = 0;
}

static int queue_prepare(struct pg_call *pc, const char *name, const struct pg_one *one)
{
    pc->call->n = 0;
    pc->tx = (struct pg_tx){.name = name, .fn = pg_one_tx, .discard = purge_discard};
    pc->one = one;
    return 1;
}

int pg_pause_prepare(struct pg_call *pc)
{
    return queue_prepare(pc, "pause", &pause_one);
}

int pg_purge_prepare(struct pg_call *pc)
{
    return queue_prepare(pc, "purge", &purge_one);
}
