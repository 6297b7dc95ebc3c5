#include "sqlite_tx.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

#define TX_SLOW_MS 1000    /* a group slower than this is logged */
#define HOOK_QUEUES_MAX 64 /* distinct queues remembered when merging the notes of a group */

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

void sqlite_notes_promoted(struct sqlite_notes *n, int64_t next_due)
{
    n->promoted = 1;
    n->next_due = next_due;
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
    n->promoted = 0;
    n->next_due = SQLITE_DUE_NONE;
}

static int kept(enum store_result r)
{
    return r == STORE_OK || r == STORE_EXISTS;
}

/* Undo what a transaction's fn put in its outputs and notes. */
static void drop(struct sqlite_tx *tx)
{
    if (tx->discard)
        tx->discard(tx->arg);
    notes_free(tx->notes);
}

/* Fold the due-time notes of a transaction that went through into the group's view. */
static void due_apply(struct sqlite_writer *w, const struct sqlite_notes *n)
{
    if (!n)
        return;
    if (n->promoted)
        w->due_work = n->next_due;
    if (n->scheduled != JOB_NONE && n->scheduled < w->due_work)
        w->due_work = n->scheduled;
}

/* The group's transaction is lost: roll it back, drop the work of the first k transactions
 * (those that went through), and return r for all. */
static enum store_result group_lost(struct sqlite_writer *w, const char *name,
                                    struct sqlite_tx **txs, size_t k, enum store_result r)
{
    sqlite_writer_rollback(w, name);
    for (size_t i = 0; i < k; i++) {
        if (kept(txs[i]->result))
            drop(txs[i]);
    }
    return r;
}

/* A statement of the runner's own (BEGIN, COMMIT, a savepoint) failed with rc. */
static enum store_result step_failed(struct sqlite_writer *w, const char *name, int rc,
                                     const char *what, struct sqlite_tx **txs, size_t k)
{
    enum store_result r = sqlite_conn_result(rc);
    if (r != STORE_BUSY)
        sqlite_conn_fail(&w->conn, rc, what);
    return group_lost(w, name, txs, k, r);
}

/* One BEGIN..COMMIT attempt at the group. Returns STORE_OK when each transaction's result
 * stands (*committed is set when a COMMIT ran, *wrote when it changed rows); any other
 * result is the group's: everything was rolled back and dropped. */
static enum store_result attempt(struct sqlite_writer *w, const char *name, struct sqlite_tx **txs,
                                 size_t n, int *committed, int *wrote)
{
    struct sqlite_conn *c = &w->conn;
    *committed = *wrote = 0;
    sqlite3_int64 changes = sqlite3_total_changes64(c->db);
    int rc = sqlite_conn_run(c, STMT_BEGIN);
    if (rc != SQLITE_DONE)
        return step_failed(w, name, rc, "begin", txs, 0);
    w->due_work = w->next_due;
    size_t through = 0;
    for (size_t i = 0; i < n; i++) {
        struct sqlite_tx *tx = txs[i];
        tx->result = STORE_BUSY;
        if (n > 1 && (rc = sqlite_conn_run(c, STMT_SAVEPOINT)) != SQLITE_DONE)
            return step_failed(w, name, rc, "savepoint", txs, i);
        enum store_result r = (enum store_result)tx->fn(c, tx->arg);
        tx->result = r;
        if (kept(r)) {
            if (n > 1 && (rc = sqlite_conn_run(c, STMT_RELEASE)) != SQLITE_DONE)
                return step_failed(w, name, rc, "release", txs, i + 1);
            due_apply(w, tx->notes);
            through++;
            continue;
        }
        drop(tx);
        /* Alone, busy, or SQLite ended the transaction itself: the group goes. */
        if (n == 1 || r == STORE_BUSY || sqlite3_get_autocommit(c->db))
            return group_lost(w, name, txs, i, r);
        rc = sqlite_conn_run(c, STMT_ROLLBACK_TO);
        if (rc == SQLITE_DONE)
            rc = sqlite_conn_run(c, STMT_RELEASE);
        if (rc != SQLITE_DONE)
            return step_failed(w, name, rc, "rollback to savepoint", txs, i);
    }
    if (through == 0) {
        sqlite_writer_rollback(w, name); /* nothing to keep */
        return STORE_OK;
    }
    rc = sqlite_conn_run(c, STMT_COMMIT);
    if (rc != SQLITE_DONE)
        return step_failed(w, name, rc, "commit", txs, n);
    *committed = 1;
    *wrote = sqlite3_total_changes64(c->db) != changes;
    w->next_due = w->due_work;
    return STORE_OK;
}

/* The result the writer's fault bookkeeping hears of a group whose results stand but that
 * committed nothing: an unavailable one if any, else the first. */
static enum store_result uncommitted_result(struct sqlite_tx **txs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (txs[i]->result == STORE_UNAVAILABLE)
            return STORE_UNAVAILABLE;
    }
    return txs[0]->result;
}

/* After a commit: the hooks, once per distinct queue and once for the earliest schedule. */
static void fire_hooks(const struct store_hooks *h, struct sqlite_tx **txs, size_t n)
{
    const char *seen[HOOK_QUEUES_MAX];
    size_t nseen = 0;
    int64_t scheduled = JOB_NONE;
    for (size_t i = 0; i < n; i++) {
        const struct sqlite_notes *no = txs[i]->notes;
        if (!no || !kept(txs[i]->result))
            continue;
        if (no->scheduled != JOB_NONE && (scheduled == JOB_NONE || no->scheduled < scheduled))
            scheduled = no->scheduled;
        for (size_t q = 0; h->on_ready && q < no->n; q++) {
            size_t k = 0;
            while (k < nseen && strcmp(seen[k], no->queues[q]) != 0)
                k++;
            if (k < nseen)
                continue;
            if (nseen < HOOK_QUEUES_MAX)
                seen[nseen++] = no->queues[q];
            h->on_ready(h->ctx, no->queues[q]);
        }
    }
    if (h->on_scheduled && scheduled != JOB_NONE)
        h->on_scheduled(h->ctx, scheduled);
}

void sqlite_tx_group(struct sqlite_writer *w, struct sqlite_tx **txs, size_t n)
{
    const char *name = n == 1 ? txs[0]->name : "group";
    int committed = 0, wrote = 0, tries = 0;
    enum store_result r = STORE_ERROR;
    int64_t start = clock_mono_ms();
    if (sqlite_writer_lock(w, name) == 0) {
        r = STORE_BUSY;
        while (r == STORE_BUSY && tries < SQLITE_TX_TRIES) {
            tries++;
            r = sqlite_writer_ready(w);
            if (r == STORE_OK)
                r = attempt(w, name, txs, n, &committed, &wrote);
        }
        if (r != STORE_OK)
            sqlite_writer_note(w, r, 0);
        else if (committed)
            sqlite_writer_note(w, STORE_OK, wrote);
        else
            sqlite_writer_note(w, uncommitted_result(txs, n), 0);
        sqlite_writer_unlock(w);
    }
    if (r != STORE_OK) {
        for (size_t i = 0; i < n; i++)
            txs[i]->result = r;
    }

    int64_t ms = clock_mono_ms() - start;
    if (r == STORE_BUSY)
        log_warn("transaction %s: database still locked after %d tries (%lld ms)", name, tries,
                 (long long)ms);
    else if (ms > TX_SLOW_MS)
        log_warn("transaction %s of %zu: slow, %lld ms", name, n, (long long)ms);
    if (committed) {
        fire_hooks(&w->hooks, txs, n);
        size_t through = 0;
        for (size_t i = 0; i < n; i++)
            through += kept(txs[i]->result);
        atomic_fetch_add_explicit(&w->commits, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->ops, through, memory_order_relaxed);
    }
    for (size_t i = 0; i < n; i++) {
        struct sqlite_tx *tx = txs[i];
        notes_free(tx->notes);
        tx->done(tx); /* may free tx */
    }
}

void sqlite_tx_submit(struct sqlite_writer *w, struct sqlite_tx *tx)
{
    tx->result = STORE_ERROR;
    if (sqlite_writer_push(w, tx) != 0) {
        notes_free(tx->notes);
        tx->done(tx);
    }
}

/* A caller of sqlite_tx_run waiting for its transaction. */
struct waiting {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
};

static void wake(struct sqlite_tx *tx)
{
    struct waiting *wt = tx->done_arg;
    pthread_mutex_lock(&wt->mu);
    wt->done = 1;
    pthread_cond_signal(&wt->cv); /* under the lock: the waiter may free wt once it sees done */
    pthread_mutex_unlock(&wt->mu);
}

enum store_result sqlite_tx_run(struct sqlite_writer *w, struct sqlite_tx *tx)
{
    struct waiting wt = {.done = 0};
    pthread_mutex_init(&wt.mu, NULL);
    pthread_cond_init(&wt.cv, NULL);
    tx->done = wake;
    tx->done_arg = &wt;
    sqlite_tx_submit(w, tx);
    pthread_mutex_lock(&wt.mu);
    while (!wt.done)
        pthread_cond_wait(&wt.cv, &wt.mu);
    pthread_mutex_unlock(&wt.mu);
    pthread_cond_destroy(&wt.cv);
    pthread_mutex_destroy(&wt.mu);
    return tx->result;
}
