/* store_enqueue for PostgreSQL: one insert per job in one transaction; an idempotency_key
 * hit (ON CONFLICT DO NOTHING, then the existing row) creates nothing. */
#include <string.h>

#include "pg_row.h"
#include "pg_store.h"

static enum store_result insert_one(struct pg_conn *c, const struct job_spec *sp, int64_t now,
                                    struct job *out, int *created, struct pg_notes *notes)
{
    char prio[24], run_at[24], max_att[24], runtime[24], created_at[24];
    const char *requires = sp->requires && strcmp(sp->requires, "[]") != 0 ? sp->requires : NULL;
    const char *params[9] = {sp->queue,
                             sp->payload,
                             pg_int_param(prio, sp->priority),
                             pg_int_param(run_at, sp->run_at),
                             pg_int_param(max_att, sp->max_attempts),
                             pg_int_param(runtime, sp->max_runtime_seconds),
                             requires,
                             sp->idempotency_key,
                             pg_int_param(created_at, now)};
    enum store_result r;
    PGresult *res = pg_exec(c, PG_JOB_INSERT, 9, params, "enqueue", &r);
    if (!res)
        return r;
    *created = PQntuples(res) == 1;
    if (*created) {
        r = pg_row_job(res, 0, 0, out) == 0 ? STORE_OK : STORE_ERROR;
        PQclear(res);
        if (r == STORE_OK && out->run_at <= now)
            pg_notes_ready(notes, out->queue);
        return r;
    }
    PQclear(res);
    const char *key[2] = {sp->queue, sp->idempotency_key};
    res = pg_exec(c, PG_JOB_BY_KEY, 2, key, "enqueue: idempotency hit", &r);
    if (!res)
        return r;
    r = PQntuples(res) == 1 ? (pg_row_job(res, 0, 0, out) == 0 ? STORE_OK : STORE_ERROR)
                            : STORE_BUSY; /* inserted by a transaction that rolled back */
    PQclear(res);
    return r;
}

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
    return 1;
}
