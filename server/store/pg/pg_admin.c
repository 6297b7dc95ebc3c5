/* store_cancel and store_retry for PostgreSQL: one guarded update each. */
#include <string.h>

#include "pg_row.h"
#include "pg_store.h"

static int admin_bind(struct pg_call *a, size_t k, struct pg_bind *b)
{
    (void)k; /* 1: never shares a statement */
    int cancel = a->call->kind == STORE_CALL_CANCEL;
    *b = (struct pg_bind){
        .id = cancel ? PG_CANCEL : PG_RETRY, .what = cancel ? "cancel" : "retry", .n = 2};
    b->params[0] = pg_int_param(b->ints[0], store_call_job_id(a->call));
    b->params[1] = pg_int_param(b->ints[1], a->now);
    return 0;
}

static void admin_recv(struct pg_call *a, size_t k, const PGresult *res, struct store_news *notes)
{
    (void)k;
    struct store_call *call = a->call;
    struct job *out = store_call_job_out(call);
    call->result = STORE_OK;
    a->follow = PQntuples(res) != 1; /* no such job, or its state does not allow the change */
    if (a->follow)
        return;
    if (pg_row_job(res, 0, 0, out) != 0)
        call->result = STORE_ERROR;
    else if (call->kind == STORE_CALL_RETRY || out->concurrency_key)
        store_news_ready(notes, out->queue, !out->requires); /* queued again, or a key's room */
}

static enum store_result admin_follow(struct pg_conn *c, struct pg_call *a)
{
    return pg_miss(c, store_call_job_id(a->call), STORE_CONFLICT);
}

static const struct pg_one admin_one = {admin_bind, admin_recv, admin_follow, NULL};

static void admin_discard(void *p)
{
    struct pg_call *a = p;
    job_clear(store_call_job_out(a->call));
}

static int admin_prepare(struct pg_call *pc, const char *name)
{
    pc->tx = (struct pg_tx){.name = name, .fn = pg_one_tx, .discard = admin_discard};
    pc->one = &admin_one;
    memset(store_call_job_out(pc->call), 0, sizeof(struct job));
    return 1;
}

int pg_cancel_prepare(struct pg_call *pc)
{
    return admin_prepare(pc, "cancel");
}

int pg_retry_prepare(struct pg_call *pc)
{
    return admin_prepare(pc, "retry");
}
