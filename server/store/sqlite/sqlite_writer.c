#include "sqlite_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "latch.h"
#include "log.h"
#include "sqlite_tx.h"

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
    w->lanes = w->lanes_work = SQLITE_LANES_UNKNOWN;
    atomic_init(&w->state, sqlite_conn_read_only(&w->conn) ? STORE_UNAVAILABLE : STORE_OK);
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

void sqlite_tx_submit(struct sqlite_writer *w, struct sqlite_tx *tx)
{
    tx->result = STORE_ERROR;
    if (sqlite_writer_push(w, tx) != 0) {
        sqlite_notes_free(tx->notes);
        tx->done(tx);
    }
}

static void wake(struct sqlite_tx *tx)
{
    latch_open(tx->done_arg);
}

enum store_result sqlite_tx_run(struct sqlite_writer *w, struct sqlite_tx *tx)
{
    struct latch wt;
    latch_init(&wt);
    tx->done = wake;
    tx->done_arg = &wt;
    sqlite_tx_submit(w, tx);
    latch_wait_and_destroy(&wt);
    return tx->result;
}
