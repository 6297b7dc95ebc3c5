#include "sqlite_tx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

#define TX_TRIES 5      /* BEGIN..COMMIT attempts when the database is busy */
#define TX_SLOW_MS 1000 /* a transaction slower than this is logged */

int sqlite_notes_ready(struct sqlite_notes *n, const char *queue)
{
    for (size_t i = 0; i < n->n; i++) {
        if (strcmp(n->queues[i], queue) == 0)
            return 0;
    }
    if (n->n == n->cap) {
        size_t cap = n->cap ? n->cap * 2 : 4;
        char **q = realloc(n->queues, cap * sizeof *q);
        if (!q) {
            log_error("out of memory recording a ready queue");
            return -1;
        }
        n->queues = q;
        n->cap = cap;
    }
    if (!(n->queues[n->n] = strdup(queue))) {
        log_error("out of memory recording a ready queue");
        return -1;
    }
    n->n++;
    return 0;
}

void sqlite_notes_scheduled(struct sqlite_notes *n, int64_t run_at)
{
    if (n->scheduled == JOB_NONE || run_at < n->scheduled)
        n->scheduled = run_at;
}

static void notes_free(struct sqlite_notes *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        free(n->queues[i]);
    free(n->queues);
    n->queues = NULL;
    n->n = n->cap = 0;
    n->scheduled = JOB_NONE;
}

static void notes_fire(const struct store_hooks *h, const struct sqlite_notes *n)
{
    if (!n)
        return;
    if (h->on_ready) {
        for (size_t i = 0; i < n->n; i++)
            h->on_ready(h->ctx, n->queues[i]);
    }
    if (h->on_scheduled && n->scheduled != JOB_NONE)
        h->on_scheduled(h->ctx, n->scheduled);
}

int sqlite_tx_writer_init(struct sqlite_writer *w, struct sqlite_conn *conn,
                          const struct store_hooks *hooks)
{
    pthread_mutexattr_t attr;
    int err = pthread_mutexattr_init(&attr);
    if (!err)
        err = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    if (!err)
        err = pthread_mutex_init(&w->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    if (err) {
        log_error("cannot create the write mutex: error %d", err);
        return -1;
    }
    w->conn = *conn;
    w->hooks = *hooks;
    return 0;
}

void sqlite_tx_writer_close(struct sqlite_writer *w)
{
    sqlite_conn_close(&w->conn);
    pthread_mutex_destroy(&w->mu);
}

static int lock(struct sqlite_writer *w, const char *name)
{
    int err = pthread_mutex_lock(&w->mu);
    if (err) {
        log_error("transaction %s: cannot take the write mutex: error %d%s", name, err,
                  err == EDEADLK ? " (re-entered from a hook?)" : "");
        return -1;
    }
    return 0;
}

/* Step a statement without bindings and reset it. */
static int run_simple(struct sqlite_conn *c, enum stmt_id id)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc;
}

static void rollback(struct sqlite_conn *c, const char *name)
{
    if (sqlite3_get_autocommit(c->db))
        return; /* SQLite already rolled back (e.g. after an I/O error) */
    int rc = run_simple(c, STMT_ROLLBACK);
    if (rc != SQLITE_DONE)
        sqlite_conn_fail(c, rc, name);
    if (!sqlite3_get_autocommit(c->db))
        log_error("transaction %s: still open after rollback", name);
}

/* One BEGIN..COMMIT attempt; rolls back and discards on anything but a commit. */
static enum store_result attempt(struct sqlite_conn *c, const struct sqlite_tx *tx)
{
    int rc = run_simple(c, STMT_BEGIN);
    if (rc != SQLITE_DONE) {
        enum store_result r = sqlite_conn_result(rc);
        if (r != STORE_BUSY)
            sqlite_conn_fail(c, rc, "begin");
        rollback(c, tx->name);
        return r;
    }
    enum store_result r = (enum store_result)tx->fn(c, tx->arg);
    if (r == STORE_OK || r == STORE_EXISTS) {
        rc = run_simple(c, STMT_COMMIT);
        if (rc == SQLITE_DONE)
            return r;
        r = sqlite_conn_result(rc);
        if (r != STORE_BUSY)
            sqlite_conn_fail(c, rc, "commit");
    }
    rollback(c, tx->name);
    if (tx->discard)
        tx->discard(tx->arg);
    notes_free(tx->notes);
    return r;
}

enum store_result sqlite_tx_run(struct sqlite_writer *w, const struct sqlite_tx *tx)
{
    if (lock(w, tx->name) != 0) {
        notes_free(tx->notes);
        return STORE_ERROR;
    }
    int64_t start = clock_mono_ms();
    enum store_result r = STORE_BUSY;
    int tries = 0;
    while (r == STORE_BUSY && tries < TX_TRIES) {
        tries++;
        r = attempt(&w->conn, tx);
    }
    pthread_mutex_unlock(&w->mu);

    int64_t ms = clock_mono_ms() - start;
    if (r == STORE_BUSY)
        log_warn("transaction %s: database still locked after %d tries (%lld ms)", tx->name, tries,
                 (long long)ms);
    else if (ms > TX_SLOW_MS)
        log_warn("transaction %s: slow, %lld ms", tx->name, (long long)ms);
    if (r == STORE_OK || r == STORE_EXISTS)
        notes_fire(&w->hooks, tx->notes);
    notes_free(tx->notes);
    return r;
}

enum store_result sqlite_tx_with_writer(struct sqlite_writer *w,
                                        int (*fn)(struct sqlite_conn *c, void *arg), void *arg)
{
    if (lock(w, "writer read") != 0)
        return STORE_ERROR;
    enum store_result r = (enum store_result)fn(&w->conn, arg);
    pthread_mutex_unlock(&w->mu);
    return r;
}
