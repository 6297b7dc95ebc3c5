/* store_cancel and store_retry for PostgreSQL: one guarded update each. */
#include <string.h>

#include "pg_row.h"
#include "pg_store.h"

static enum store_result admin_tx(struct pg_conn *c, void *p, struct pg_notes *notes)
{
    struct pg_call *a = p;
    struct store_call *call = a->call;
    int cancel = call->kind == STORE_CALL_CANCEL;
    char id[24], now[24];
    const char *params[2] = {pg_int_param(id, call->id), pg_int_param(now, a->now)};
    enum store_result r;
    PGresult *res =
        pg_exec(c, cancel ? PG_CANCEL : PG_RETRY, 2, params, cancel ? "cancel" : "retry", &r);
    if (!res)
        return r;
    if (PQntuples(res) == 1) {
        r = pg_row_job(res, 0, 0, call->out) == 0 ? STORE_OK : STORE_ERROR;
        PQclear(res);
        if (r == STORE_OK && !cancel)
            pg_notes_ready(notes, call->out->queue);
        return r;
    }
    PQclear(res);
    /* Missed: no such job, or its state does not allow the transition. */
    struct job j;
    r = pg_get_on(c, call->id, 0, &j);
    if (r == STORE_OK) {
        job_clear(&j);
        return STORE_CONFLICT;
    }
    return r;
}

static void admin_discard(void *p)
{
    struct pg_call *a = p;
    job_clear(a->call->out);
}

int pg_admin_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = pc->call->kind == STORE_CALL_CANCEL ? "cancel" : "retry",
                            .fn = admin_tx,
                            .discard = admin_discard};
    memset(pc->call->out, 0, sizeof *pc->call->out);
    return 1;
}
