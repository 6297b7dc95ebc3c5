/* One SQLite connection of the store with its prepared statements, plus the helpers every
 * store operation uses to step, bind and report errors. A connection is used by one thread at
 * a time (its owner holds the write mutex or took it from the reader pool). */
#ifndef JOBQ_SQLITE_CONN_H
#define JOBQ_SQLITE_CONN_H

#include <sqlite3.h>
#include <stdint.h>

#include "sqlite_stmt.h"
#include "store.h"

/* CONN_EXPORT: jobqd migrate reading a store file (sqlite_export.c), opened read-only. */
enum conn_role { CONN_WRITER, CONN_READER, CONN_EXPORT };

struct sqlite_conn {
    sqlite3 *db;
    enum conn_role role;
    sqlite3_stmt *stmt[STMT_COUNT]; /* the statements of this role; NULL for the others */
};

/* Open path with the pragmas of role: the writer sets WAL and synchronous = FULL (sync_full)
 * or NORMAL, and creates the file when create is set; a reader sets query_only; an export
 * connection opens the file read-only (never creating it; path may be a file: URI) and sets
 * query_only. All get
 * extended result codes and a short busy timeout. A file this process may not write opens
 * read-only (every write then fails with SQLITE_READONLY; the writer logs a warning). Before
 * the writer opens, the database's -shm, and its -wal when the file is writable, get write
 * permission for their owner back when this user owns them (a read-only open left them
 * without). Statements are not prepared yet (see sqlite_conn_prepare). Returns 0, or -1 after
 * logging why (c is then closed). */
int sqlite_conn_open(struct sqlite_conn *c, const char *path, enum conn_role role, int sync_full,
                     int create);

/* Prepare every statement of the table that runs on c's role, once, persistent.
 * Returns 0, or -1 after logging which statement failed. */
int sqlite_conn_prepare(struct sqlite_conn *c);

/* Finalize the statements and close the connection. Accepts a closed or zeroed c. */
void sqlite_conn_close(struct sqlite_conn *c);

/* Statement id of c, reset and with its bindings cleared, ready to bind. The caller resets it
 * again when done with it, on every path. id must be prepared on c's role (asserted). */
sqlite3_stmt *sqlite_conn_stmt(struct sqlite_conn *c, enum stmt_id id);

/* Step statement id, which takes no bindings, once through sqlite_conn_step() and reset it.
 * Returns the step's code (SQLITE_DONE for a statement that ran). */
int sqlite_conn_run(struct sqlite_conn *c, enum stmt_id id);

/* sqlite3_step(st), unless a fault injected by sqlite_conn_fault() is due. Returns
 * SQLITE_ROW, SQLITE_DONE or an error code. */
int sqlite_conn_step(struct sqlite_conn *c, sqlite3_stmt *st);

/* The store result of a failed SQLite call rc: STORE_BUSY for BUSY/LOCKED, STORE_UNAVAILABLE
 * for FULL/READONLY/IOERR/CANTOPEN, STORE_ERROR for anything else. */
enum store_result sqlite_conn_result(int rc);

/* Log the failure rc of `what` on c (errmsg included) at the caller's file:line and return
 * sqlite_conn_result(rc). BUSY is logged as a warning, everything else as an error. Call it
 * before resetting the statement that failed, so the message is still the right one. */
enum store_result sqlite_conn_fail_at(struct sqlite_conn *c, int rc, const char *what,
                                      const char *file, int line, const char *func);
#define sqlite_conn_fail(c, rc, what)                                                              \
    sqlite_conn_fail_at((c), (rc), (what), __FILE__, __LINE__, __func__)

/* Bind helpers; each returns the sqlite3_bind_* code. Strings are bound SQLITE_STATIC: they
 * must live until the statement is reset. */
int sqlite_conn_bind_text(sqlite3_stmt *st, int i, const char *s); /* NULL: SQL NULL */
int sqlite_conn_bind_json(sqlite3_stmt *st, int i, const char *s); /* NULL, "null": NULL */
int sqlite_conn_bind_time(sqlite3_stmt *st, int i, int64_t t);     /* JOB_NONE: NULL */

/* Bind st's parameters from 1 by fmt, one character each: 'i' an int64_t, 'n' an int64_t
 * that is NULL when JOB_NONE, 't' a text (NULL: SQL NULL), 'j' JSON text (NULL or "null":
 * NULL). Returns the first sqlite3_bind_* code that is not SQLITE_OK, or SQLITE_OK. */
int sqlite_conn_bindf(sqlite3_stmt *st, const char *fmt, ...);

/* Step st (its bind result rc: nothing is stepped unless SQLITE_OK) to its end, its rows
 * unread, and reset it: STORE_OK, or the failure logged as `what`. */
enum store_result sqlite_conn_finish(struct sqlite_conn *c, sqlite3_stmt *st, int rc,
                                     const char *what);

/* For tests: make the nth sqlite_conn_step() call from now (1 = the next one, on any
 * connection) return rc without stepping. n <= 0 cancels a pending fault. Same as
 * sqlite_conn_fault_run(n, rc, 1). */
void sqlite_conn_fault(int n, int rc);

/* For tests: make `count` sqlite_conn_step() calls in a row return rc without stepping, the
 * first of them the nth call from now (1 = the next one, on any connection); count < 0: every
 * call from the nth on, until cancelled. n <= 0 or count == 0 cancels a pending fault. Resets
 * the counter of sqlite_conn_fault_fired(). */
void sqlite_conn_fault_run(int n, int rc, int count);

/* For tests: how many injected faults fired since the last sqlite_conn_fault*() call. */
int sqlite_conn_fault_fired(void);

/* For tests: how many sqlite_conn_step() calls were made while a fault was pending, since the
 * last sqlite_conn_fault*() call. Arm a fault that never comes (n huge) to count the steps of
 * an operation. */
int sqlite_conn_fault_steps(void);

/* 1 when SQLite opened c's database read-only because the file was not writable: every write
 * on it fails with SQLITE_READONLY until a connection is opened again on a writable file. */
static inline int sqlite_conn_read_only(const struct sqlite_conn *c)
{
    return c->db && sqlite3_db_readonly(c->db, "main") == 1;
}

#endif
