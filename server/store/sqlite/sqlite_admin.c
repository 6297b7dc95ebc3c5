/* store_cancel and store_retry for SQLite: state changes a person asks for. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sqlite_deps.h"
#include "sqlite_lanes.h"
#include "sqlite_row.h"
#include "sqlite_store.h"

struct admin_arg {
    enum stmt_id stmt; /* STMT_CANCEL or STMT_RETRY: ?1 id, ?2 now */
    int64_t id;
    int64_t now;
    struct job *out;
    struct sqlite_notes *notes;
};

/* The status job id is stored in, into *out (a row read by sqlite_row_job shows
 * SQLITE_SCHEDULED as queued): STORE_OK, STORE_NOT_FOUND or the failure (logged). */
static enum store_result stored_status(struct sqlite_conn *c, int64_t id, int *out)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_JOB_GET);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = STORE_NOT_FOUND;
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int(st, COL_STATUS);
        r = STORE_OK;
    } else if (rc != SQLITE_DONE) {
        r = sqlite_conn_fail(c, rc, "job status");
    }
    sqlite3_reset(st);
    return r;
}

/* Move the latest attempt of job id from its row (if the row holds it) to the attempts
 * table. */
static enum store_result archive(struct sqlite_conn *c, int64_t id)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_ATTEMPT_ARCHIVE);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc == SQLITE_OK)
        rc = sqlite_conn_step(c, st);
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "archive attempt");
    sqlite3_reset(st);
    return r;
}

static int admin_tx(struct sqlite_conn *c, void *p)
{
    struct admin_arg *a = p;
    memset(a->out, 0, sizeof *a->out);
    /* The job's stored status (SQLITE_SCHEDULED included) is where its count moves from (no
     * such job: not found). */
    int from = -1;
    enum store_result r = stored_status(c, a->id, &from);
    if (r != STORE_OK)
        return r;
    /* A retry resets attempts: the latest attempt moves from the row to the attempts table. */
    if (a->stmt == STMT_RETRY && (from == JOB_FAILED || from == JOB_CANCELLED) &&
        (r = archive(c, a->id)) != STORE_OK)
        return r;
    sqlite3_stmt *st = sqlite_conn_stmt(c, a->stmt);
    int rc = sqlite3_bind_int64(st, 1, a->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, a->now);
    if (rc != SQLITE_OK) {
        r = sqlite_conn_fail(c, rc, "bind cancel/retry");
        sqlite3_reset(st);
        return r;
    }
    r = sqlite_row_write(c, st, a->id, 0, a->stmt == STMT_CANCEL ? "cancel" : "retry", a->out);
    if (r == STORE_NOT_FOUND)
        return STORE_CONFLICT; /* the state does not allow it */
    if (r != STORE_OK)
        return r;
    int blocked = 0; /* a retried job whose dependencies have not all ended waits for them */
    if (a->stmt == STMT_RETRY && (r = sqlite_deps_retried(c, a->out, &blocked)) != STORE_OK)
        return r;
    if (sqlite_notes_move(a->notes, a->out->id, a->out->queue, from, (int)a->out->status,
                          ATTEMPT_RUNNING) != 0)
        return STORE_ERROR;
    if (a->stmt == STMT_RETRY && !blocked) {
        store_news_ready(&a->notes->news, a->out->queue, sqlite_row_plain(a->out));
        r = sqlite_lane_requeued(c, a->out);
    } else if (a->stmt == STMT_CANCEL && from == JOB_RUNNING) {
        r = sqlite_key_released(c, a->out, a->notes);
    }
    /* Its dependents: cancelled by its end, or back to blocked by its retry. */
    return r == STORE_OK ? sqlite_deps_moved(c, a->out, a->now, a->notes) : r;
}

static void admin_discard(void *p)
{
    struct admin_arg *a = p;
    job_clear(a->out);
}

/* A cancel or retry transaction and its arguments, in one block. */
struct admin_block {
    struct sqlite_tx tx; /* first: free(tx) frees the block */
    struct sqlite_notes notes;
    struct admin_arg a;
};

struct sqlite_tx *sqlite_admin_tx(struct sqlite_store *st, struct store_call *call)
{
    (void)st;
    struct admin_block *b = malloc(sizeof *b);
    if (!b) {
        log_error("out of memory starting a cancel or retry");
        call->result = STORE_ERROR;
        return NULL;
    }
    int cancel = call->kind == STORE_CALL_CANCEL;
    b->notes = (struct sqlite_notes)SQLITE_NOTES_INIT;
    b->a = (struct admin_arg){cancel ? STMT_CANCEL : STMT_RETRY, store_call_job_id(call), call->now,
                              store_call_job_out(call), &b->notes};
    b->tx = (struct sqlite_tx){.name = cancel ? "cancel" : "retry",
                               .fn = admin_tx,
                               .discard = admin_discard,
                               .arg = &b->a,
                               .notes = &b->notes,
                               .now = call->at_clock ? &b->a.now : NULL,
                               .weight = 1};
    return &b->tx;
}
