/* The write connection's state, kept healthy between transactions: the write mutex, rolling
 * back what was left open, reopening after a fault (disk full, read-only, I/O error), and the
 * probe that finds a fault cleared (sqlite_writer.h). Called by the group runner
 * (sqlite_tx.c) and the readiness probe (sqlite_read.c); calls only the connection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "sqlite_heal.h"

#define LOCK_PAUSE_MS 5 /* between two tries of the write mutex in a probe */

int sqlite_heal_lock(struct sqlite_writer *w, const char *name)
{
    int err = pthread_mutex_lock(&w->mu);
    if (err) {
        log_error("transaction %s: cannot take the write mutex: error %d", name, err);
        return -1;
    }
    return 0;
}

void sqlite_heal_unlock(struct sqlite_writer *w)
{
    pthread_mutex_unlock(&w->mu);
}

/* Take the mutex within about ms milliseconds (counted in pauses: no clock is read).
 * Returns 0, or -1 when it stayed taken. */
static int lock_within(struct sqlite_writer *w, int ms)
{
    const struct timespec pause = {0, LOCK_PAUSE_MS * 1000000L};
    for (int waited = 0;; waited += LOCK_PAUSE_MS) {
        int err = pthread_mutex_trylock(&w->mu);
        if (err == 0)
            return 0;
        if (err != EBUSY || waited >= ms)
            return -1;
        nanosleep(&pause, NULL);
    }
}

/* Open the connection again. A fresh one replaces the old; when none can be opened the old
 * one stays, unless drop is set (it is stuck in a transaction): then it is closed anyway,
 * which rolls its transaction back and frees the database's write lock. */
static void reopen(struct sqlite_writer *w, const char *why, int drop)
{
    w->next_reopen_ms = clock_mono_ms() + SQLITE_WRITER_REOPEN_MS;
    struct sqlite_conn fresh;
    if (sqlite_conn_open(&fresh, w->path, CONN_WRITER, w->sync_full, 0) != 0 ||
        sqlite_conn_prepare(&fresh) != 0) {
        sqlite_conn_close(&fresh);
        if (drop)
            sqlite_conn_close(&w->conn);
        log_warn("cannot reopen the write connection (%s); next try in %d ms", why,
                 SQLITE_WRITER_REOPEN_MS);
        return;
    }
    sqlite_conn_close(&w->conn);
    w->conn = fresh;
    w->failures = 0;
    w->reopens++;
    log_warn("write connection reopened (%s)", why);
}

void sqlite_heal_rollback(struct sqlite_writer *w, const char *name)
{
    struct sqlite_conn *c = &w->conn;
    if (!c->db || sqlite3_get_autocommit(c->db))
        return; /* nothing open: SQLite already rolled back (e.g. after an I/O error) */
    int rc = sqlite_conn_run(c, STMT_ROLLBACK);
    if (rc != SQLITE_DONE)
        sqlite_conn_fail(c, rc, name);
    if (!sqlite3_get_autocommit(c->db)) {
        log_error("transaction %s: still open after rollback; closing the connection", name);
        reopen(w, "a transaction stayed open", 1);
    }
}

enum store_result sqlite_heal_ready(struct sqlite_writer *w)
{
    sqlite_heal_rollback(w, "left open");
    if (!w->conn.db && clock_mono_ms() >= w->next_reopen_ms)
        reopen(w, "no write connection", 0);
    return w->conn.db ? STORE_OK : STORE_UNAVAILABLE;
}

void sqlite_heal_note(struct sqlite_writer *w, enum store_result r, int wrote)
{
    switch (r) {
    case STORE_BUSY:
        atomic_store(&w->state, STORE_BUSY);
        return;
    case STORE_UNAVAILABLE:
        atomic_store(&w->state, STORE_UNAVAILABLE);
        if (w->failures < SQLITE_WRITER_REOPEN_AFTER)
            w->failures++;
        if (w->failures >= SQLITE_WRITER_REOPEN_AFTER && clock_mono_ms() >= w->next_reopen_ms)
            reopen(w, "writes keep failing", 0);
        return;
    case STORE_ERROR:
        return; /* says nothing about the lock or the disk */
    default:
        break;
    }
    /* The transaction got the write lock. Only a commit that wrote rows shows that the disk
     * takes writes again: an empty one (a sweep with nothing to do) writes no page. */
    if (wrote && (r == STORE_OK || r == STORE_EXISTS)) {
        w->failures = 0;
        atomic_store(&w->state, STORE_OK);
    } else if (atomic_load(&w->state) == STORE_BUSY) {
        atomic_store(&w->state, STORE_OK);
    }
}

/* BEGIN IMMEDIATE, then the probe write and COMMIT when write is set, else ROLLBACK. */
static enum store_result probe_on(struct sqlite_writer *w, int write)
{
    struct sqlite_conn *c = &w->conn;
    int rc = sqlite_conn_run(c, STMT_BEGIN);
    if (rc != SQLITE_DONE) {
        enum store_result r = sqlite_conn_result(rc);
        if (r != STORE_BUSY)
            sqlite_conn_fail(c, rc, "probe begin");
        sqlite_heal_rollback(w, "probe");
        return r;
    }
    if (write) {
        rc = sqlite_conn_run(c, STMT_PROBE_WRITE);
        if (rc == SQLITE_DONE)
            rc = sqlite_conn_run(c, STMT_COMMIT);
    } else {
        rc = sqlite_conn_run(c, STMT_ROLLBACK);
    }
    enum store_result r = STORE_OK;
    if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, write ? "probe write" : "probe rollback");
    sqlite_heal_rollback(w, "probe");
    return r;
}

enum store_result sqlite_heal_probe(struct sqlite_writer *w)
{
    if (lock_within(w, SQLITE_WRITER_PROBE_WAIT_MS) != 0) {
        /* A transaction holds the writer (at most its retry budget): its predecessor's
         * outcome is the freshest word on the storage. */
        return (enum store_result)atomic_load(&w->state);
    }
    int faulted = atomic_load(&w->state) == STORE_UNAVAILABLE;
    enum store_result r = sqlite_heal_ready(w);
    /* On a read-only connection BEGIN IMMEDIATE only starts a read transaction: it would
     * pass. The note counts the failure towards a reopen, which finds the file writable
     * again once it is. */
    if (r == STORE_OK && sqlite_conn_read_only(&w->conn))
        r = STORE_UNAVAILABLE;
    else if (r == STORE_OK)
        r = probe_on(w, faulted);
    if (!faulted || r != STORE_BUSY) /* a busy probe says nothing about a full disk */
        sqlite_heal_note(w, r, faulted);
    pthread_mutex_unlock(&w->mu);
    return r;
}
