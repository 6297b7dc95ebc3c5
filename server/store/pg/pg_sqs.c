/* The SQS front end's queue rows for PostgreSQL (store_sqs.h): the read on a pooled read
 * connection, and put (create or merge: one statement each, then the row as stored) and
 * delete. */
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "pg_row.h"
#include "pg_store.h"

/* Row `row` of res (name, attributes, created_at, modified_at) into out. Returns 0, or -1
 * when out of memory (logged). */
static int queue_row(const PGresult *res, int row, struct store_sqs_queue *out)
{
    *out = (struct store_sqs_queue){0};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 0));
    int bad = pg_row_text(res, row, 1, &out->attributes);
    out->created_at = pg_row_int(res, row, 2);
    out->modified_at = pg_row_int(res, row, 3);
    if (bad || !out->attributes) {
        log_error("out of memory reading sqs queue %s", out->name);
        store_sqs_queue_clear(out);
        return -1;
    }
    return 0;
}

enum store_result pg_read_sqs_queues(struct store *s, const char *prefix, int exact,
                                     const char *after, int limit, struct store_sqs_queue **out,
                                     size_t *n)
{
    *out = NULL;
    *n = 0;
    char lim[24];
    const char *params[3] = {prefix, after ? after : "", pg_int_param(lim, limit > 0 ? limit : 1)};
    enum store_result r;
    PGresult *res = pg_read_one(pg_store_of(s), exact ? PG_SQS_QUEUE_GET : PG_SQS_QUEUES_LIST,
                                exact ? 1 : 3, params, "sqs queues", &r);
    if (!res)
        return r;
    int rows = PQntuples(res);
    if (rows > 0 && !(*out = calloc((size_t)rows, sizeof **out))) {
        log_error("out of memory reading %d sqs queues", rows);
        r = STORE_ERROR;
    }
    for (int i = 0; r == STORE_OK && i < rows; i++) {
        if (queue_row(res, i, &(*out)[i]) != 0)
            r = STORE_ERROR;
        else
            (*n)++;
    }
    PQclear(res);
    if (r != STORE_OK) {
        store_sqs_queues_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return r;
}

/* Run statement id; the one row it returns into *out (STORE_NOT_FOUND: none). */
static enum store_result one_row(struct pg_conn *c, enum pg_stmt_id id, int n,
                                 const char *const *params, const char *what,
                                 struct store_sqs_queue *out)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    r = STORE_NOT_FOUND;
    if (PQntuples(res) > 0) {
        store_sqs_queue_clear(out);
        r = queue_row(res, 0, out) == 0 ? STORE_OK : STORE_ERROR;
    }
    PQclear(res);
    return r;
}

static enum store_result put_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    struct store_sqs_queue_put_call *a = &pc->call->sqs_queue_put;
    char now[24];
    const char *params[3] = {a->name, a->attributes, pg_int_param(now, pc->now)};
    enum store_result r =
        one_row(c, a->create ? PG_SQS_QUEUE_INSERT : PG_SQS_QUEUE_MERGE, 3, params,
                a->create ? "sqs queue create" : "sqs queue merge", a->out);
    if (r != STORE_NOT_FOUND || !a->create)
        return r;
    /* It exists: nothing written; the row as stored. */
    r = one_row(c, PG_SQS_QUEUE_GET, 1, params, "sqs queue read", a->out);
    return r == STORE_OK ? STORE_EXISTS : r;
}

static void put_discard(void *p)
{
    struct pg_call *pc = p;
    store_sqs_queue_clear(pc->call->sqs_queue_put.out);
}

static enum store_result delete_tx(struct pg_conn *c, void *p, struct store_news *notes)
{
    (void)notes;
    struct pg_call *pc = p;
    const char *params[1] = {pc->call->sqs_queue_delete.name};
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_SQS_QUEUE_DELETE, 1, params, "sqs queue delete", &r);
    if (!res)
        return r;
    r = PQntuples(res) > 0 ? STORE_OK : STORE_NOT_FOUND;
    PQclear(res);
    return r;
}

int pg_sqs_queue_put_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "sqs queue put", .fn = put_tx, .discard = put_discard};
    return 1;
}

int pg_sqs_queue_delete_prepare(struct pg_call *pc)
{
    pc->tx = (struct pg_tx){.name = "sqs queue delete", .fn = delete_tx};
    return 1;
}
