/* The transaction runner of the SQLite store. Every write is a callback run by
 * sqlite_tx_run() on the one write connection (sqlite_writer.h), inside one BEGIN IMMEDIATE
 * transaction. Today the caller's thread runs it under the write mutex; the same shape lets
 * a later single writer thread run many callbacks per commit. */
#ifndef JOBQ_SQLITE_TX_H
#define JOBQ_SQLITE_TX_H

#include <stddef.h>
#include <stdint.h>

#include "sqlite_conn.h"
#include "sqlite_writer.h"
#include "store.h"

/* What a transaction made happen, for the hooks the runner calls after its commit. */
struct sqlite_notes {
    char **queues; /* distinct queues in which jobs became claimable (owned) */
    size_t n, cap;
    int64_t scheduled; /* the earliest run_at stored as scheduled, JOB_NONE when none */
};

#define SQLITE_TX_TRIES 5 /* BEGIN..COMMIT attempts while the database is busy */

/* An empty notes value (no allocation). */
#define SQLITE_NOTES_INIT                                                                          \
    {                                                                                              \
        NULL, 0, 0, JOB_NONE                                                                       \
    }

/* Record that jobs in queue became claimable (once per distinct queue). Returns 0, or -1 when
 * memory ran out (logged). */
int sqlite_notes_ready(struct sqlite_notes *n, const char *queue);

/* Record that a job was stored as scheduled for run_at. This function can't fail. */
void sqlite_notes_scheduled(struct sqlite_notes *n, int64_t run_at);

/* One write transaction. fn returns an enum store_result: STORE_OK or STORE_EXISTS commit;
 * anything else rolls back and is returned (STORE_BUSY is retried). fn may run more than once
 * (after a busy rollback) and must start from scratch every time; on every rollback the
 * runner first calls discard(arg) (when not NULL) to release what fn put in its outputs, and
 * empties notes. */
struct sqlite_tx {
    const char *name; /* for logs: "claim", "enqueue", ... */
    int (*fn)(struct sqlite_conn *c, void *arg);
    void (*discard)(void *arg);
    void *arg;
    struct sqlite_notes *notes; /* may be NULL; emptied and freed by the runner */
};

/* Run tx: take the write mutex, BEGIN IMMEDIATE, fn, COMMIT; on failure ROLLBACK; retry
 * SQLITE_BUSY a bounded number of times (SQLITE_TX_TRIES, each waiting the connection's busy
 * timeout), then give up with STORE_BUSY. Never leaves a transaction open. Every outcome is
 * reported to the writer (sqlite_writer_note), which heals the connection after repeated
 * faults. After a commit, with the mutex released, call hooks.on_ready once per queue in
 * tx->notes and hooks.on_scheduled with its earliest run_at; after anything else no hook is
 * called. Returns fn's result, STORE_BUSY, STORE_UNAVAILABLE or STORE_ERROR (logged). */
enum store_result sqlite_tx_run(struct sqlite_writer *w, const struct sqlite_tx *tx);

#endif
