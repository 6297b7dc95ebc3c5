/* store_cancel and store_retry for SQLite: state changes a person asks for. */
#include <string.h>

#include "sqlite_row.h"
#include "sqlite_store.h"

struct admin_arg {
    enum stmt_id stmt; /* STMT_CANCEL or STMT_RETRY: ?1 id, ?2 now */
    int64_t id;
    int64_t now;
    struct job *out;
    struct sqlite_notes *notes;
};

static int admin_tx(struct sqlite_conn *c, void *p)
{
    struct admin_arg *a = p;
    memset(a->out, 0, sizeof *a->out);
    sqlite3_stmt *st = sqlite_conn_stmt(c, a->stmt);
    int rc = sqlite3_bind_int64(st, 1, a->id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, a->now);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind cancel/retry");
        sqlite3_reset(st);
        return r;
    }
    enum store_result r =
        sqlite_row_one(c, st, 0, a->stmt == STMT_CANCEL ? "cancel" : "retry", a->out);
    if (r == STORE_NOT_FOUND) {
        /* The state does not allow it, or there is no such job. */
        struct job j;
        r = sqlite_row_get(c, a->id, 0, &j);
        if (r == STORE_OK) {
            job_clear(&j);
            r = STORE_CONFLICT;
        }
        return r;
    }
    if (r == STORE_OK && a->stmt == STMT_RETRY && sqlite_notes_ready(a->notes, a->out->queue))
        return STORE_ERROR;
    return r;
}

static void admin_discard(void *p)
{
    struct admin_arg *a = p;
    job_clear(a->out);
}

static enum store_result run(struct store *s, const char *name, enum stmt_id stmt, int64_t id,
                             int64_t now, struct job *out)
{
    struct sqlite_notes notes = SQLITE_NOTES_INIT;
    struct admin_arg a = {stmt, id, now, out, &notes};
    struct sqlite_tx tx = {name, admin_tx, admin_discard, &a, &notes};
    return sqlite_tx_run(&sqlite_store_of(s)->writer, &tx);
}

enum store_result sqlite_admin_cancel(struct store *s, int64_t id, int64_t now, struct job *out)
{
    return run(s, "cancel", STMT_CANCEL, id, now, out);
}

enum store_result sqlite_admin_retry(struct store *s, int64_t id, int64_t now, struct job *out)
{
    return run(s, "retry", STMT_RETRY, id, now, out);
}
