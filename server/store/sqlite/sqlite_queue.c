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
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_PURGE);
    int rc = sqlite_conn_bindf(st, "tiii", purge->queue, (int64_t)status, (int64_t)status2,
                               (int64_t)purge->limit);
    if (rc != SQLITE_OK) {
        sqlite3_reset(st);
        return sqlite_conn_fail(c, rc, "purge");
    }
    size_t limit = purge->limit > 0 ? (size_t)purge->limit : 0;
    return sqlite_deps_deleted(c, st, limit, purge->queue, a->call->now, a->notes, &purge->deleted);
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
