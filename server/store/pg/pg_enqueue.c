/* store_enqueue for PostgreSQL: one set-based insert for every job of the call (and of the
 * enqueue calls that share its statement, see struct pg_one); an idempotency_key hit
 * (ON CONFLICT DO NOTHING, then the existing row, read after the commit) creates nothing. */
#include <stdatomic.h>
#include <string.h>

#include "job_cols.h"
#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

static int insert_bind(struct pg_call *calls, size_t k, struct pg_bind *b)
{
    *b = (struct pg_bind){.id = PG_JOB_INSERT, .what = "enqueue", .n = 14};
    int64_t now = pg_calls_now(calls, k); /* the database's clock: delays are resolved on it */
    struct pg_arr col[14] = {{0}};        /* col[8] stays empty: $9 is now */
    for (size_t i = 0; i < k; i++) {
        const struct store_call *call = calls[i].call;
        for (size_t s = 0; s < call->enqueue.n; s++) {
            const struct job_spec *sp = &call->enqueue.specs[s];
            pg_arr_text(&col[0], sp->queue);
            pg_arr_text(&col[1], sp->payload);
            pg_arr_int(&col[2], sp->priority);
            pg_arr_int(&col[3], job_spec_run_at(sp, now));
            pg_arr_int(&col[4], sp->max_attempts);
            pg_arr_int(&col[5], sp->max_runtime_seconds);
            pg_arr_text(&col[6], sp->requires);
            pg_arr_text(&col[7], sp->idempotency_key);
            pg_arr_text(&col[9], sp->concurrency_key);
            pg_arr_int(&col[10], job_spec_expires_at(sp, now));
            pg_arr_text(&col[11], sp->dedup_key);
            pg_arr_int(&col[12], sp->dedup_key ? (int64_t)sp->dedup_mode : JOB_NONE);
            pg_arr_int(&col[13], job_spec_dedup_seconds(sp));
        }
    }
    int rc = 0;
    for (int c = 0; c < 14; c++) {
        if (c != 8)
            rc |= pg_arr_bind(&col[c], b, c);
    }
    b->params[8] = pg_int_param(b->ints[8], now);
    if (rc != 0)
        pg_bind_free(b);
    return rc;
}

static atomic_int rows_reversed; /* pg_enqueue_reverse_rows() */

void pg_enqueue_reverse_rows(int on)
{
    atomic_store(&rows_reversed, on);
}

/* The index in res of the n-th row read. */
static int row_at(int n, int rows)
{
    return atomic_load(&rows_reversed) ? rows - 1 - n : n;
}

/* Element ord (1-based, over the specs of calls[0..k) in order, as insert_bind sent them):
 * the index of its call, and *spec its spec there; k when there is none. */
static size_t element(const struct pg_call *calls, size_t k, int64_t ord, size_t *spec)
{
    size_t i = 0;
    for (; i < k && ord > 0; i++) {
        size_t n = calls[i].call->enqueue.n;
        if ((uint64_t)ord <= n) {
            *spec = (size_t)ord - 1;
            return i;
        }
        ord -= (int64_t)n;
    }
    return k;
}

/* Each row is the new job of the element its last column names (the rows come back in no
 * promised order); an element without a row hit its idempotency_key. */
static void insert_recv(struct pg_call *calls, size_t k, const PGresult *res,
                        struct store_news *notes)
{
    int64_t now = pg_calls_now(calls, k);
    for (size_t i = 0; i < k; i++) {
        const struct store_enqueue_call *e = &calls[i].call->enqueue;
        calls[i].call->result = STORE_OK;
        memset(e->created, 0, e->n * sizeof *e->created);
    }
    int rows = PQntuples(res);
    for (int n = 0; n < rows; n++) {
        int row = row_at(n, rows);
        size_t s = 0, i = element(calls, k, pg_row_int(res, row, COL_COUNT), &s);
        if (i == k || calls[i].call->enqueue.created[s]) {
            log_error("enqueue: an inserted row names no element of the statement");
            continue;
        }
        struct store_call *call = calls[i].call;
        struct job *out = &call->enqueue.out[s];
        call->enqueue.created[s] = 1;
        if (pg_row_job(res, row, 0, out) != 0) {
            call->result = STORE_ERROR;
            continue;
        }
        if (out->run_at <= now)
            store_news_ready(notes, out->queue, !out->requires);
        else
            store_news_later(notes, out->queue, out->run_at);
    }
    for (size_t i = 0; i < k; i++) {
        struct store_call *call = calls[i].call;
        calls[i].follow = 0;
        for (size_t s = 0; s < call->enqueue.n; s++) {
            if (call->enqueue.created[s])
                continue;
            if (!call->enqueue.specs[s].idempotency_key) {
                log_error("enqueue: no row came back for a job without an idempotency_key");
                call->result = STORE_ERROR;
            }
            calls[i].follow = 1; /* the existing job, read after the commit */
        }
        if (call->result != STORE_OK)
            calls[i].follow = 0;
    }
}

/* The existing jobs of the specs that hit their idempotency_key. */
static enum store_result insert_follow(struct pg_conn *c, struct pg_call *a)
{
    struct store_call *call = a->call;
    for (size_t s = 0; s < call->enqueue.n; s++) {
        if (call->enqueue.created[s])
            continue;
        const struct job_spec *sp = &call->enqueue.specs[s];
        const char *key[2] = {sp->queue, sp->idempotency_key};
        enum store_result r;
        PGresult *res = pg_exec(c, PG_JOB_BY_KEY, 2, key, "enqueue: idempotency hit", &r);
        if (!res)
            return r;
        r = PQntuples(res) == 1
                ? (pg_row_job(res, 0, 0, &call->enqueue.out[s]) == 0 ? STORE_OK : STORE_ERROR)
                : STORE_BUSY; /* inserted by a transaction that rolled back */
        PQclear(res);
        if (r != STORE_OK)
            return r;
    }
    return call->enqueue.n == 1 ? STORE_EXISTS : STORE_OK;
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
    for (size_t i = 0; i < a->call->enqueue.n; i++)
        job_clear(&a->call->enqueue.out[i]);
}

int pg_enqueue_prepare(struct pg_call *pc)
{
    struct store_call *call = pc->call;
    if (call->enqueue.n == 0) {
        call->result = STORE_OK;
        return 0;
    }
    memset(call->enqueue.out, 0, call->enqueue.n * sizeof *call->enqueue.out);
    memset(call->enqueue.created, 0, call->enqueue.n * sizeof *call->enqueue.created);
    pc->tx = (struct pg_tx){.name = "enqueue", .fn = pg_one_tx, .discard = enqueue_discard};
    pc->one = &enqueue_one;
    return 1;
}
