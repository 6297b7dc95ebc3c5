/* The SQS front end's queue rows for SQLite (store_sqs.h): the read on a reader, and put
 * (create or merge) and delete on the writer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

/* The row of the current step of st (name, attributes, created_at, modified_at) into out.
 * Returns 0, or -1 when out of memory (logged). */
static int queue_row(sqlite3_stmt *st, struct store_sqs_queue *out)
{
    *out = (struct store_sqs_queue){0};
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *attrs = (const char *)sqlite3_column_text(st, 1);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "");
    out->attributes = strdup(attrs ? attrs : "{}");
    out->created_at = sqlite3_column_int64(st, 2);
    out->modified_at = sqlite3_column_int64(st, 3);
    if (!out->attributes) {
        log_error("out of memory reading sqs queue %s", out->name);
        return -1;
    }
    return 0;
}

static int queue_element(sqlite3_stmt *st, void *out)
{
    return queue_row(st, out);
}

static void queues_release(void *rows, size_t n)
{
    store_sqs_queues_free(rows, n);
}

/* Run st (bound) and collect its rows into a new array *out of *n; st is reset. */
static enum store_result rows_on(struct sqlite_conn *c, sqlite3_stmt *st,
                                 struct store_sqs_queue **out, size_t *n)
{
    void *rows = NULL;
    enum store_result r = sqlite_row_collect(c, st, "sqs queues", sizeof **out, queue_element,
                                             queues_release, &rows, n);
    *out = rows;
    return r;
}

enum store_result sqlite_read_sqs_queues(struct store *s, const char *prefix, int exact,
                                         const char *after, int limit, struct store_sqs_queue **out,
                                         size_t *n)
{
    struct sqlite_pool *pool = &sqlite_store_of(s)->readers;
    *out = NULL;
    *n = 0;
    struct sqlite_conn *c = sqlite_pool_take(pool);
    if (!c)
        return STORE_BUSY;
    sqlite3_stmt *st = sqlite_conn_stmt(c, exact ? STMT_SQS_QUEUE_GET : STMT_SQS_QUEUES_LIST);
    int rc = sqlite_conn_bind_text(st, 1, prefix);
    if (rc == SQLITE_OK && !exact)
        rc = sqlite_conn_bind_text(st, 2, after ? after : "");
    if (rc == SQLITE_OK && !exact)
        rc = sqlite3_bind_int(st, 3, limit > 0 ? limit : 1);
    enum store_result r =
        rc == SQLITE_OK ? rows_on(c, st, out, n) : sqlite_conn_fail(c, rc, "bind sqs queues");
    if (rc != SQLITE_OK)
        sqlite3_reset(st);
    sqlite_pool_give(pool, c);
    return r;
}

/* The row of name, read inside the write, into *out: STORE_OK or STORE_NOT_FOUND. */
static enum store_result row_of(struct sqlite_conn *c, const char *name,
                                struct store_sqs_queue *out)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_SQS_QUEUE_GET);
    int rc = sqlite_conn_bind_text(st, 1, name);
    if (rc != SQLITE_OK) {
        sqlite3_reset(st);
        return sqlite_conn_fail(c, rc, "bind sqs queue");
    }
    struct store_sqs_queue *rows = NULL;
    size_t n = 0;
    enum store_result r = rows_on(c, st, &rows, &n);
    if (r == STORE_OK && n == 0)
        r = STORE_NOT_FOUND;
    if (r == STORE_OK) {
        store_sqs_queue_clear(out);
        *out = rows[0];
        rows[0] = (struct store_sqs_queue){0};
    }
    store_sqs_queues_free(rows, n);
    return r;
}

/* Run the write id with name, attributes (NULL: none) and now bound; *changes is how many
 * rows it changed. */
static enum store_result write_row(struct sqlite_conn *c, enum stmt_id id, const char *name,
                                   const char *attributes, int64_t now, int *changes)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite_conn_bind_text(st, 1, name);
    if (rc == SQLITE_OK && attributes)
        rc = sqlite_conn_bind_text(st, 2, attributes);
    if (rc == SQLITE_OK && attributes)
        rc = sqlite3_bind_int64(st, 3, now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "sqs queue write");
    *changes = sqlite3_changes(c->db);
    return STORE_OK;
}

static int put_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    struct store_sqs_queue_put_call *a = &call->sqs_queue_put;
    int changes = 0;
    enum store_result r = write_row(c, a->create ? STMT_SQS_QUEUE_INSERT : STMT_SQS_QUEUE_MERGE,
                                    a->name, a->attributes, call->now, &changes);
    if (r != STORE_OK)
        return r;
    r = row_of(c, a->name, a->out);
    if (r != STORE_OK || changes > 0)
        return r; /* merge without a row: STORE_NOT_FOUND, nothing written */
    return a->create ? STORE_EXISTS : STORE_NOT_FOUND;
}

static void put_discard(void *p)
{
    struct store_call *call = p;
    store_sqs_queue_clear(call->sqs_queue_put.out);
}

static int delete_tx(struct sqlite_conn *c, void *p)
{
    struct store_call *call = p;
    int changes = 0;
    enum store_result r =
        write_row(c, STMT_SQS_QUEUE_DELETE, call->sqs_queue_delete.name, NULL, call->now, &changes);
    return r == STORE_OK && changes == 0 ? STORE_NOT_FOUND : r;
}

/* A put or delete transaction, in one block. */
struct sqs_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
};

struct sqlite_tx *sqlite_sqs_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    struct sqs_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting an sqs queue write");
        call->result = STORE_ERROR;
        return NULL;
    }
    int put = call->kind == STORE_CALL_SQS_QUEUE_PUT;
    b->tx = (struct sqlite_tx){.name = put ? "sqs queue put" : "sqs queue delete",
                               .fn = put ? put_tx : delete_tx,
                               .discard = put ? put_discard : NULL,
                               .arg = call,
                               .now = call->at_clock ? &call->now : NULL,
                               .weight = 1};
    return &b->tx;
}
