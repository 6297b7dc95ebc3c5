/* Queue controls for SQLite: pause/resume (a row of the queues table) and purge (one bounded
 * batch of deletes per transaction; the triggers keep the counts and drop the attempts). */
#include <stdlib.h>

#include "log.h"
#include "sqlite_deps.h"
#include "sqlite_store.h"

struct queue_arg {
    struct store_call *call;
    struct sqlite_notes *notes;
};

static int pause_tx(struct sqlite_conn *c, void *p)
{
    struct queue_arg *a = p;
    const struct store_call *call = a->call;
    const struct store_pause_call *pause = &call->pause;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_QUEUE_SET);
    int rc = sqlite_conn_bind_text(st, 1, pause->queue);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, pause->paused ? 1 : 0);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, call->now);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return sqlite_conn_fail(c, rc, "pause");
    /* Resumed: parked claims of the queue look again (plain 0: wake them all). */
    if (!pause->paused)
        store_news_ready(&a->notes->news, pause->queue, 0);
    return STORE_OK;
}

/* One batch of a purge: the delete, then the dependents of the deleted jobs that need it
 * (depend_purged: those of a job that had not ended settle as a cancel's would). */
static int purge_tx(struct sqlite_conn *c, void *p)
{
    struct queue_arg *a = p;
    struct store_purge_call *purge = &a->call->purge;
    int status = purge->status, status2 = -1;
    if (status == JOB_QUEUED)
        status2 = SQLITE_SCHEDULED;
    purge->deleted = 0;
    int64_t *ids = malloc((size_t)(purge->limit > 0 ? purge->limit : 1) * sizeof *ids);
    enum job_status *ends = malloc((size_t)(purge->limit > 0 ? purge->limit : 1) * sizeof *ends);
    size_t n = 0, deleted = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_PURGE);
    int rc = ids && ends ? sqlite_conn_bind_text(st, 1, purge->queue) : SQLITE_NOMEM;
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 2, status);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 3, status2);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int(st, 4, purge->limit);
    while ((rc == SQLITE_OK || rc == SQLITE_ROW) && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        enum job_status end =
            depend_purged((enum job_status)sqlite3_column_int(st, 1), sqlite3_column_int(st, 3));
        if (sqlite3_column_int(st, 2) && end != JOB_STATUS_NONE && n < (size_t)purge->limit) {
            ids[n] = sqlite3_column_int64(st, 0);
            ends[n++] = end;
        }
        deleted++;
    }
    sqlite3_reset(st);
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "purge");
    else if (n > 0)
        r = sqlite_deps_purged(c, ids, ends, n, purge->queue, a->call->now, a->notes);
    free(ids);
    free(ends);
    if (r == STORE_OK)
        purge->deleted = deleted;
    return r;
}

/* A pause or purge transaction and its arguments, in one block. */
struct queue_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct queue_arg a;
};

struct sqlite_tx *sqlite_queue_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    int pause = call->kind == STORE_CALL_PAUSE;
    if (!pause)
        call->purge.deleted = 0;
    struct queue_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a %s", pause ? "pause" : "purge");
        call->result = STORE_ERROR;
        return NULL;
    }
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct queue_arg){call, &b->notes};
    b->tx = (struct sqlite_tx){.name = pause ? "pause" : "purge",
                               .fn = pause ? pause_tx : purge_tx,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &call->now : NULL,
                               .weight = pause ? 1 : call->purge.limit};
    return &b->tx;
}
