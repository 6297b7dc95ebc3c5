/* The one write connection of the SQLite store, the thread that owns it, and how it heals
 * after storage faults. Every write is a transaction (sqlite_tx.h) pushed on the writer's
 * queue; the writer thread takes every transaction waiting there (a bounded group), runs
 * them in one BEGIN IMMEDIATE..COMMIT and only then reports each one's result (group
 * commit). store_ping asks the writer whether the database still accepts writes.
 *
 * Calls flow down: sqlite_writer.c (the queue and the thread; sqlite_tx_submit/_run push on
 * it) -> sqlite_tx.c (the group runner) -> sqlite_heal.c (the write connection's state: the
 * mutex, rollback, readiness, the fault notes and reopen, the probe) -> sqlite_conn.c.
 *
 * Healing: a transaction left open (its ROLLBACK failed) is rolled back again or, failing
 * that, the connection is closed; after SQLITE_WRITER_REOPEN_AFTER writes in a row ended
 * STORE_UNAVAILABLE (disk full, I/O error, read-only) the connection is closed and opened
 * again, so that whatever SQLite or the file system kept of the fault is dropped (a database
 * file that was not writable is opened read-only: only a new connection sees it writable
 * again). Reopens are tried at most once per SQLITE_WRITER_REOPEN_MS; a failed reopen keeps
 * the old connection when there is one. */
#ifndef JOBQ_SQLITE_WRITER_H
#define JOBQ_SQLITE_WRITER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sqlite_conn.h"
#include "store.h"

#define SQLITE_WRITER_REOPEN_AFTER 3    /* unavailable writes in a row before a reopen */
#define SQLITE_WRITER_REOPEN_MS 1000    /* at most one reopen attempt per this many ms */
#define SQLITE_WRITER_PROBE_WAIT_MS 200 /* ping waits this long for the write mutex at most */
#define SQLITE_GROUP_MAX 256            /* transactions committed together at most */
#define SQLITE_GROUP_WEIGHT                                                                        \
    4096 /* rows a group may write at most (a single larger one runs alone) */

/* The writer's knowledge of scheduled jobs (next_due): SQLITE_DUE_UNKNOWN until a promotion
 * looked, SQLITE_DUE_NONE when no job is scheduled, else a time at or before the earliest
 * run_at of a scheduled job. A claim promotes only when next_due <= now. */
#define SQLITE_DUE_UNKNOWN INT64_MIN
#define SQLITE_DUE_NONE INT64_MAX

struct sqlite_tx;

struct sqlite_writer {
    pthread_mutex_t mu;      /* held by the writer thread around a group, by a probe */
    struct sqlite_conn conn; /* conn.db is NULL after a reopen found no usable connection */
    struct store_hooks hooks;
    char *path;    /* owned: what a reopen opens */
    int sync_full; /* the synchronous setting a reopen sets again */
    /* Under mu: */
    int failures;           /* writes in a row that ended STORE_UNAVAILABLE since a commit */
    int64_t next_reopen_ms; /* clock_mono_ms() before which no reopen is tried */
    int reopens;            /* connections opened again since start, for logs and tests */
    int64_t next_due;       /* committed: see SQLITE_DUE_UNKNOWN */
    int64_t due_work;       /* the same inside the transaction of the running group */
    int lanes;              /* committed: enum sqlite_lanes_known */
    int lanes_work;         /* the same inside the transaction of the running group */
    /* The queue of transactions waiting for the writer thread, under qmu. */
    pthread_mutex_t qmu;
    pthread_cond_t qcv; /* signalled when a transaction is queued or stop is set */
    struct sqlite_tx *head, *tail;
    size_t queued; /* transactions in the queue */
    int held;      /* tests: the thread leaves the queue alone (sqlite_writer_hold) */
    int stop;
    int running; /* the thread was started and not joined yet */
    pthread_t thread;
    /* Statistics, for store_read_stats(): */
    atomic_uint_fast64_t commits; /* groups committed */
    atomic_uint_fast64_t ops;     /* transactions that went through in them */
    atomic_uint_fast64_t retries; /* groups run again (busy, or a failure that left others) */
    atomic_uint_fast64_t errors;  /* transactions that ended busy, unavailable or in error */
    /* Read without mu (ping, when the mutex stays taken): the outcome of the last write,
     * STORE_OK, STORE_BUSY or STORE_UNAVAILABLE. */
    atomic_int state;
};

/* Set up w around an open, prepared write connection (consumed: closed by
 * sqlite_writer_close, also when this fails) on path (copied) opened with sync_full, and
 * start the writer thread. A connection SQLite opened read-only (the file was not writable)
 * starts in STORE_UNAVAILABLE. Returns 0, or -1 (logged) when a mutex, the copy or the
 * thread cannot be made. */
int sqlite_writer_init(struct sqlite_writer *w, struct sqlite_conn *conn,
                       const struct store_hooks *hooks, const char *path, int sync_full);

/* Stop the writer thread once its queue is empty, close the write connection and destroy
 * the mutexes. Accepts a writer whose init failed. */
void sqlite_writer_close(struct sqlite_writer *w);

/* Queue tx for the writer thread, which will run it with whatever else is waiting (see
 * sqlite_tx_group). Returns 0, or -1 (logged) when the writer is stopping or the caller is
 * the writer thread itself (a hook that writes would wait for itself forever). */
int sqlite_writer_push(struct sqlite_writer *w, struct sqlite_tx *tx);

/* For tests: while hold is set the writer thread takes nothing from its queue (the group it
 * runs goes on), so that a test can queue several transactions and release them as one
 * group. */
void sqlite_writer_hold(struct sqlite_writer *w, int hold);

/* For tests: how many transactions wait in the queue. */
size_t sqlite_writer_queued(struct sqlite_writer *w);

#endif
