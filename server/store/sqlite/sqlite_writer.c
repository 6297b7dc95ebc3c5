#include "sqlite_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "sqlite_tx.h"

#define LOCK_PAUSE_MS 5 /* between two tries of the write mutex in a probe */

/* 1 when SQLite opened c's database read-only because the file was not writable: every write
 * on it fails with SQLITE_READONLY until a connection is opened again on a writable file. */
static int read_only(const struct sqlite_conn *c)
{
    return c->db && sqlite3_db_readonly(c->db, "main") == 1;
}

/* The writer thread: take every transaction waiting (a bounded group) and run them. */
static void *writer_main(void *arg)
{
    struct sqlite_writer *w = arg;
    struct sqlite_tx *group[SQLITE_GROUP_MAX];
    for (;;) {
        pthread_mutex_lock(&w->qmu);
        while ((!w->head || w->held) && !w->stop)
            pthread_cond_wait(&w->qcv, &w->qmu);
        size_t n = 0;
        long weight = 0;
        while (w->head && n < SQLITE_GROUP_MAX) {
            struct sqlite_tx *tx = w->head;
            int wt = tx->weight > 0 ? tx->weight : 1;
            if (n > 0 && weight + wt > SQLITE_GROUP_WEIGHT)
                break;
            w->head = tx->next;
            w->queued--;
            tx->next = NULL;
            weight += wt;
            group[n++] = tx;
        }
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->qmu);
        if (n == 0)
            return NULL; /* stop, and nothing left */
        sqlite_tx_group(w, group, n);
    }
}

int sqlite_writer_init(struct sqlite_writer *w, struct sqlite_conn *conn,
                       const struct store_hooks *hooks, const char *path, int sync_full)
{
    memset(w, 0, sizeof *w);
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (!err)
        err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    if (!err)
        err = pthread_mutex_init(&w->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    if (!err && (err = pthread_mutex_init(&w->qmu, NULL)) != 0)
        pthread_mutex_destroy(&w->mu);
    if (!err && (err = pthread_cond_init(&w->qcv, NULL)) != 0) {
        pthread_mutex_destroy(&w->qmu);
        pthread_mutex_destroy(&w->mu);
    }
    if (err) {
        log_error("cannot create the writer's mutexes: error %d", err);
        sqlite_conn_close(conn);
        return -1;
    }
    if (!(w->path = strdup(path))) {
        log_error("out of memory keeping the database path");
        sqlite_writer_close(w);
        sqlite_conn_close(conn);
        return -1;
    }
    w->conn = *conn;
    w->hooks = *hooks;
    w->sync_full = sync_full;
    w->next_due = w->due_work = SQLITE_DUE_UNKNOWN;
    atomic_init(&w->state, read_only(&w->conn) ? STORE_UNAVAILABLE : STORE_OK);
    atomic_init(&w->commits, 0);
    atomic_init(&w->ops, 0);
    atomic_init(&w->retries, 0);
    atomic_init(&w->errors, 0);
    if ((err = pthread_create(&w->thread, NULL, writer_main, w)) != 0) {
        log_error("cannot start the writer thread: error %d", err);
        sqlite_writer_close(w);
        return -1;
    }
    pthread_setname_np(w->thread, "jobq-writer");
    w->running = 1;
    return 0;
}

void sqlite_writer_close(struct sqlite_writer *w)
{
    if (w->running) {
        pthread_mutex_lock(&w->qmu);
        w->stop = 1;
        pthread_cond_signal(&w->qcv);
        pthread_mutex_unlock(&w->qmu);
        pthread_join(w->thread, NULL);
        w->running = 0;
    }
    sqlite_conn_close(&w->conn);
    pthread_cond_destroy(&w->qcv);
    pthread_mutex_destroy(&w->qmu);
    pthread_mutex_destroy(&w->mu);
    free(w->path);
    w->path = NULL;
}

int sqlite_writer_push(struct sqlite_writer *w, struct sqlite_tx *tx)
{
    if (w->running && pthread_equal(pthread_self(), w->thread)) {
        log_error("transaction %s: started by the writer thread itself (from a hook?)", tx->name);
        return -1;
    }
    tx->next = NULL;
    pthread_mutex_lock(&w->qmu);
    int ok = w->running && !w->stop;
    if (ok) {
        if (w->tail)
            w->tail->next = tx;
        else
            w->head = tx;
        w->tail = tx;
        w->queued++;
        pthread_cond_signal(&w->qcv);
    }
    pthread_mutex_unlock(&w->qmu);
    if (!ok)
        log_error("transaction %s: the writer is stopping", tx->name);
    return ok ? 0 : -1;
}

void sqlite_writer_hold(struct sqlite_writer *w, int hold)
{
    pthread_mutex_lock(&w->qmu);
    w->held = hold;
    pthread_cond_signal(&w->qcv);
    pthread_mutex_unlock(&w->qmu);
}

size_t sqlite_writer_queued(struct sqlite_writer *w)
{
    pthread_mutex_lock(&w->qmu);
    size_t n = w->queued;
    pthread_mutex_unlock(&w->qmu);
    return n;
}

int sqlite_writer_lock(struct sqlite_writer *w, const char *name)
{
    int err = pthread_mutex_lock(&w->mu);
    if (err) {
        log_error("transaction %s: cannot take the write mutex: error %d", name, err);
        return -1;
    }
    return 0;
}

void sqlite_writer_unlock(struct sqlite_writer *w)
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

void sqlite_writer_rollback(struct sqlite_writer *w, const char *name)
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

enum store_result sqlite_writer_ready(struct sqlite_writer *w)
{
    sqlite_writer_rollback(w, "left open");
    if (!w->conn.db && clock_mono_ms() >= w->next_reopen_ms)
        reopen(w, "no write connection", 0);
    return w->conn.db ? STORE_OK : STORE_UNAVAILABLE;
}

void sqlite_writer_note(struct sqlite_writer *w, enum store_result r, int wrote)
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
        sqlite_writer_rollback(w, "probe");
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
    sqlite_writer_rollback(w, "probe");
    return r;
}

enum store_result sqlite_writer_probe(struct sqlite_writer *w)
{
    if (lock_within(w, SQLITE_WRITER_PROBE_WAIT_MS) != 0) {
        /* A transaction holds the writer (at most its retry budget): its predecessor's
         * outcome is the freshest word on the storage. */
        return (enum store_result)atomic_load(&w->state);
    }
    int faulted = atomic_load(&w->state) == STORE_UNAVAILABLE;
    enum store_result r = sqlite_writer_ready(w);
    /* On a read-only connection BEGIN IMMEDIATE only starts a read transaction: it would
     * pass. The note counts the failure towards a reopen, which finds the file writable
     * again once it is. */
    if (r == STORE_OK && read_only(&w->conn))
        r = STORE_UNAVAILABLE;
    else if (r == STORE_OK)
        r = probe_on(w, faulted);
    if (!faulted || r != STORE_BUSY) /* a busy probe says nothing about a full disk */
        sqlite_writer_note(w, r, faulted);
    pthread_mutex_unlock(&w->mu);
    return r;
}
