/* store_enqueue for PostgreSQL: one set-based insert for every job of the call (and of the
 * enqueue calls that share its statement, see struct pg_one); an idempotency_key hit
 * (ON CONFLICT DO NOTHING, then the existing row, read after the commit) creates nothing. */
#include <string.h>

#include "job_cols.h"
#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

static int insert_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_JOB_INSERT, .what = "enqueue", .n = 9};
    struct pg_arr col[8] = {{0}};
    for (size_t i = 0; i < k; i++) {
        const struct store_call *call = calls[i].call;
        for (size_t s = 0; s < call->nspecs; s++) {
            const struct job_spec *sp = &call->specs[s];
            pg_arr_text(&col[0], sp->queue);
            pg_arr_text(&col[1], sp->payload);
            pg_arr_int(&col[2], sp->priority);
            pg_arr_int(&col[3], sp->run_at);
            pg_arr_int(&col[4], sp->max_attempts);
            pg_arr_int(&col[5], sp->max_runtime_seconds);
            pg_arr_text(&col[6], sp->requires);
            pg_arr_text(&col[7], sp->idempotency_key);
        }
    }
    int rc = 0;
    for (int c = 0; c < 8; c++)
        rc |= pg_arr_bind(&col[c], b, c);
    b->params[8] = pg_int_param(b->ints[8], pg_calls_now(calls, k));
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

/* Row `row` of res is spec sp's new job. Without a key it must be (the rows come back in the
 * order of the specs, those that hit their key left out); with one, the key says. */
static int is_row_of(const PGresult *res, int row, const struct job_spec *sp)
{
    if (strcmp(PQgetvalue(res, row, COL_QUEUE), sp->queue) != 0)
        return 0;
    if (!sp->idempotency_key)
        return PQgetisnull(res, row, COL_IDEMPOTENCY_KEY) &&
               strcmp(PQgetvalue(res, row, COL_PAYLOAD), sp->payload) == 0;
    return !PQgetisnull(res, row, COL_IDEMPOTENCY_KEY) &&
           strcmp(PQgetvalue(res, row, COL_IDEMPOTENCY_KEY), sp->idempotency_key) == 0;
}

static void insert_recv(struct pg_call *calls, size_t k, const PGresult *res,
                        struct pg_notes *notes)
{
    int rows = PQntuples(res), row = 0;
    int64_t now = pg_calls_now(calls, k);
    for (size_t i = 0; i < k; i++) {
        struct store_call *call = calls[i].call;
        call->result = STORE_OK;
        calls[i].follow = 0;
        for (size_t s = 0; s < call->nspecs; s++) {
            const struct job_spec *sp = &call->specs[s];
            call->created[s] = row < rows && is_row_of(res, row, sp);
            if (!call->created[s]) {
                if (!sp->idempotency_key) {
                    log_error("enqueue: the inserted rows came back out of order");
                    call->result = STORE_ERROR;
                }
                calls[i].follow = 1; /* the existing job, read after the commit */
                continue;
            }
            struct job *out = &call->out[s];
            if (pg_row_job(res, row++, 0, out) != 0) {
                call->result = STORE_ERROR;
                continue;
            }
            if (out->run_at <= now)
                pg_notes_ready(notes, out->queue);
            else
                pg_notes_later(notes, out->queue, out->run_at);
        }
        if (call->result != STORE_OK)
            calls[i].follow = 0;
    }
    if (row != rows)
        log_error("enqueue: %d inserted rows answered no job", rows - row);
}

/* The existing jobs of the specs that hit their idempotency_key. */
static enum store_result insert_follow(struct pg_conn *c, struct pg_call *a)
{
    struct store_call *call = a->call;
    for (size_t s = 0; s < call->nspecs; s++) {
        if (call->created[s])
            continue;
        const struct job_spec *sp = &call->specs[s];
        const char *key[2] = {sp->queue, sp->idempotency_key};
        enum store_result r;
        PGresult *res = pg_exec(c, PG_JOB_BY_KEY, 2, key, "enqueue: idempotency hit", &r);
        if (!res)
            return r;
        r = PQntuples(res) == 1
                ? (pg_row_job(res, 0, 0, &call->out[s]) == 0 ? STORE_OK : STORE_ERROR)
                : STORE_BUSY; /* inserted by a transaction that rolled back */
        PQclear(res);
        if (r != STORE_OK)
            return r;
    }
    return call->nspecs == 1 ? STORE_EXISTS : STORE_OK;
}

static int insert_same(const struct pg_call *a, const struct pg_call *b)
{
    (void)a;
    (void)b;
    return 1;
}

static const struct pg_one enqueue_one = {insert_bind, insert_recv, insert_follow, insert_same};

static void enqueue_discard(void *p)
{
    struct pg_call *a = p;
    for (size_t i = 0; i < a->call->nspecs; i++)
        job_clear(&a->call->out[i]);
}

int pg_enqueue_prepare(struct pg_call *pc)
{
    struct store_call *call = pc->call;
    if (call->nspecs == 0) {
        call->result = STORE_OK;
        return 0;
    }
    memset(call->out, 0, call->nspecs * sizeof *call->out);
    memset(call->created, 0, call->nspecs * sizeof *call->created);
    pc->tx = (struct pg_tx){.name = "enqueue", .fn = pg_one_tx, .discard = enqueue_discard};
    pc->one = &enqueue_one;
    return 1;
}
