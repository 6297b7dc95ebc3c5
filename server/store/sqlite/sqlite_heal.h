/* The SQLite store's write connection kept healthy between transactions (sqlite_heal.c):
 * the write mutex, rolling back what was left open, reopening after a fault, and the probe
 * that finds a fault cleared (see the top of sqlite_writer.h for when it reopens). Called by
 * the group runner (sqlite_tx.c) and the readiness probe (sqlite_read.c). */
#ifndef JOBQ_SQLITE_HEAL_H
#define JOBQ_SQLITE_HEAL_H

#include "sqlite_writer.h"

/* Take the write mutex for the transaction `name`. Returns 0, or -1 (logged) when it cannot
 * be taken. */
int sqlite_heal_lock(struct sqlite_writer *w, const char *name);

/* Release the write mutex. */
void sqlite_heal_unlock(struct sqlite_writer *w);

/* Under the mutex, before a transaction: make the connection usable. A transaction still open
 * is rolled back, or the connection closed when that fails; a missing connection is opened
 * again when a reopen is due. Returns STORE_OK, or STORE_UNAVAILABLE (logged) when there is
 * no usable connection yet. */
enum store_result sqlite_heal_ready(struct sqlite_writer *w);

/* Under the mutex: roll back the transaction open on the connection, if any; when it stays
 * open the connection is replaced, or closed when no new one can be opened, so that it never
 * keeps the database locked. Failures are logged with `name`. This function can't fail. */
void sqlite_heal_rollback(struct sqlite_writer *w, const char *name);

/* Under the mutex, after a transaction: record its result r; wrote is set when it changed
 * rows. A commit that wrote clears the fault count; STORE_UNAVAILABLE counts towards a
 * reopen, which this function does when due; any result but STORE_BUSY, STORE_UNAVAILABLE
 * and STORE_ERROR shows that the write lock could be had. This function can't fail. */
void sqlite_heal_note(struct sqlite_writer *w, enum store_result r, int wrote);

/* Whether the database accepts writes, for store_ping: fast, and never holding the write lock
 * for more than a moment. Takes the write mutex (waiting at most
 * SQLITE_WRITER_PROBE_WAIT_MS; when a transaction keeps it longer, the outcome of the last
 * write is the answer), then runs BEGIN IMMEDIATE and ROLLBACK with the connection's short
 * busy timeout; while the last write failed as unavailable it commits a one-row write instead,
 * which clears the fault when it gets through. A connection SQLite opened read-only answers
 * STORE_UNAVAILABLE without a statement, and counts towards a reopen like a failed write.
 * Returns STORE_OK, STORE_BUSY, STORE_UNAVAILABLE or STORE_ERROR (logged). */
enum store_result sqlite_heal_probe(struct sqlite_writer *w);

#endif
