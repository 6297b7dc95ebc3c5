#include "sqlite_conn.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "job.h"
#include "log.h"

#define BUSY_TIMEOUT_MS 100
#define WAL_LIMIT_BYTES (64 * 1024 * 1024) /* the WAL is truncated to this after checkpoints */

static atomic_int fault_countdown;
static atomic_int fault_rc;

static int exec(struct sqlite_conn *c, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        log_error("sqlite %s: \"%s\" failed: %s (%d)", c->role == CONN_WRITER ? "writer" : "reader",
                  sql, err ? err : sqlite3_errstr(rc), rc);
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

/* PRAGMA journal_mode answers with the mode it ended in. */
static int set_wal(struct sqlite_conn *c)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    int ok = 0;
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *mode = sqlite3_column_text(st, 0);
        ok = mode && strcmp((const char *)mode, "wal") == 0;
        if (!ok)
            log_error("sqlite writer: journal_mode is %s, not wal", mode ? (char *)mode : "?");
    } else {
        log_error("sqlite writer: cannot set journal_mode: %s (%d)", sqlite3_errmsg(c->db), rc);
    }
    sqlite3_finalize(st);
    return ok ? 0 : -1;
}

static int writer_pragmas(struct sqlite_conn *c, int sync_full)
{
    char sql[96];
    if (set_wal(c) != 0)
        return -1;
    /* Set explicitly: Debian's build changes the WAL default. */
    if (exec(c, sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL") != 0)
        return -1;
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %d", WAL_LIMIT_BYTES);
    return exec(c, sql);
}

int sqlite_conn_open(struct sqlite_conn *c, const char *path, enum conn_role role, int sync_full)
{
    memset(c, 0, sizeof *c);
    c->role = role;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
    if (role == CONN_WRITER)
        flags |= SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        log_error("cannot open database %s: %s (%d)", path,
                  c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc), rc);
        sqlite_conn_close(c);
        return -1;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    int ok = role == CONN_WRITER ? writer_pragmas(c, sync_full) == 0
                                 : exec(c, "PRAGMA query_only = 1") == 0;
    if (!ok) {
        log_error("cannot configure database %s", path);
        sqlite_conn_close(c);
        return -1;
    }
    return 0;
}

int sqlite_conn_prepare(struct sqlite_conn *c)
{
    int mask = c->role == CONN_WRITER ? STMT_ON_WRITER : STMT_ON_READER;
    for (int id = 0; id < STMT_COUNT; id++) {
        const struct stmt_def *d = sqlite_stmt_def((enum stmt_id)id);
        if (!(d->on & mask))
            continue;
        int rc =
            sqlite3_prepare_v3(c->db, d->sql, -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            log_error("cannot prepare statement %d (%s): %s (%d)", id, d->used_by,
                      sqlite3_errmsg(c->db), rc);
            return -1;
        }
    }
    return 0;
}

void sqlite_conn_close(struct sqlite_conn *c)
{
    for (int id = 0; id < STMT_COUNT; id++) {
        sqlite3_finalize(c->stmt[id]);
        c->stmt[id] = NULL;
    }
    if (c->db) {
        int rc = sqlite3_close(c->db);
        if (rc != SQLITE_OK)
            log_error("sqlite close failed: %s (%d)", sqlite3_errmsg(c->db), rc);
        c->db = NULL;
    }
}

sqlite3_stmt *sqlite_conn_stmt(struct sqlite_conn *c, enum stmt_id id)
{
    assert((unsigned)id < STMT_COUNT && c->stmt[id]);
    sqlite3_stmt *st = c->stmt[id];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

int sqlite_conn_step(struct sqlite_conn *c, sqlite3_stmt *st)
{
    (void)c;
    if (atomic_load(&fault_countdown) > 0 && atomic_fetch_sub(&fault_countdown, 1) == 1)
        return atomic_load(&fault_rc);
    return sqlite3_step(st);
}

void sqlite_conn_fault(int n, int rc)
{
    atomic_store(&fault_rc, rc);
    atomic_store(&fault_countdown, n > 0 ? n : 0);
}

enum store_result sqlite_conn_result(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return STORE_BUSY;
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
        return STORE_UNAVAILABLE;
    default:
        return STORE_ERROR;
    }
}

enum store_result sqlite_conn_fail_at(struct sqlite_conn *c, int rc, const char *what,
                                      const char *file, int line, const char *func)
{
    enum store_result r = sqlite_conn_result(rc);
    enum log_level level = r == STORE_BUSY ? LOG_WARN : LOG_ERROR;
    if (log_enabled(level)) {
        /* errmsg describes the last call on the connection; an injected fault has none. */
        const char *msg = sqlite3_errcode(c->db) == rc ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
        log_write(level, file, line, func, "sqlite %s failed: %s (%d)", what, msg, rc);
    }
    return r;
}

int sqlite_conn_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (!s)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

int sqlite_conn_bind_json(sqlite3_stmt *st, int i, const char *s)
{
    if (s && strcmp(s, "null") == 0)
        s = NULL;
    return sqlite_conn_bind_text(st, i, s);
}

int sqlite_conn_bind_time(sqlite3_stmt *st, int i, int64_t t)
{
    if (t == JOB_NONE)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_int64(st, i, t);
}
