#include "sqlite_tx.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "sqlite_heal.h"

#define TX_SLOW_MS 1000 /* a group slower than this is logged */

void sqlite_notes_promoted(struct sqlite_notes *n, int64_t next_due)
{
    n->promoted = 1;
    n->next_due = next_due;
}

int sqlite_notes_move(struct sqlite_notes *n, int64_t id, const char *queue, int from, int to,
                      int outcome)
{
    if (sqlite_counts_move(&n->counts, queue, from, to) != 0)
        return -1;
    return sqlite_events_note(&n->events, id, from, to, outcome);
}

void sqlite_notes_free(struct sqlite_notes *n)
{
    if (!n)
        return;
    store_news_clear(&n->news);
    n->promoted = 0;
    n->next_due = SQLITE_DUE_NONE;
    n->lanes = SQLITE_LANES_UNKNOWN;
    sqlite_counts_clear(&n->counts);
    sqlite_events_clear(&n->events);
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
    sqlite_notes_free(tx->notes);
}

/* Fold the due-time notes of a transaction that went through into the group's view. */
static void due_apply(struct sqlite_writer *w, const struct sqlite_notes *n)
{
    if (!n)
        return;
    if (n->promoted)
        w->due_work = n->next_due;
    int64_t scheduled = store_news_first_later(&n->news);
    if (scheduled != JOB_NONE && scheduled < w->due_work)
        w->due_work = scheduled;
    if (n->lanes != SQLITE_LANES_UNKNOWN)
        w->lanes_work = n->lanes;
}

/* Roll the group's transaction back and drop the work of the transactions among the first k
 * that went through in it. */
static void roll_back(struct sqlite_writer *w, const char *name, struct sqlite_tx **txs, size_t k)
{
    sqlite_heal_rollback(w, name);
    for (size_t i = 0; i < k; i++) {
        if (!txs[i]->settled && kept(txs[i]->result))
            drop(txs[i]);
    }
}

/* A statement of the runner's own (BEGIN, COMMIT) failed with rc: the group's result. */
static enum store_result step_failed(struct sqlite_writer *w, const char *name, int rc,
                                     const char *what, struct sqlite_tx **txs, size_t k)
{
    enum store_result r = sqlite_conn_result(rc);
    if (r != STORE_BUSY)
        sqlite_conn_fail(&w->conn, rc, what);
    roll_back(w, name, txs, k);
    return r;
}

/* The count moves of the transactions that went through, into the counts table. */
static int write_counts(struct sqlite_conn *c, struct sqlite_tx **txs, size_t n)
{
    const struct sqlite_counts *sets[SQLITE_GROUP_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n && k < SQLITE_GROUP_MAX; i++) {
        if (txs[i]->notes && !txs[i]->settled && kept(txs[i]->result))
            sets[k++] = &txs[i]->notes->counts;
    }
    return sqlite_counts_write(c, sets, k);
}

/* What one attempt at a group ended in. */
enum outcome {
    DONE,  /* each transaction's result stands */
    RERUN, /* one failed after changing rows: it is settled, the others run again */
    LOST   /* the group failed as a whole with *r (STORE_BUSY: try again) */
};

/* One BEGIN..COMMIT attempt at the transactions of the group that are not settled yet.
 * A transaction that fails without having changed a row fails alone, and the others go on in
 * the same database transaction; one that fails after changing rows (or after which SQLite
 * ended the transaction) cannot be undone alone: the group is rolled back, it is settled
 * with its result, and the others run again without it. *committed is set when a COMMIT
 * ran, *wrote when it changed rows. */
static enum outcome attempt(struct sqlite_writer *w, const char *name, struct sqlite_tx **txs,
                            size_t n, enum store_result *r, int *committed, int *wrote)
{
    struct sqlite_conn *c = &w->conn;
    *committed = *wrote = 0;
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        left += !txs[i]->settled;
    if (left == 0)
        return DONE;
    sqlite3_int64 start = sqlite3_total_changes64(c->db);
    int rc = sqlite_conn_run(c, STMT_BEGIN);
    if (rc != SQLITE_DONE) {
        *r = step_failed(w, name, rc, "begin", txs, 0);
        return LOST;
    }
    w->due_work = w->next_due;
    w->lanes_work = w->lanes;
    size_t through = 0;
    for (size_t i = 0; i < n; i++) {
        struct sqlite_tx *tx = txs[i];
        if (tx->settled)
            continue;
        sqlite3_int64 before = sqlite3_total_changes64(c->db);
        int64_t clock = clock_now(); /* the write lock is held: no wait comes after this */
        if (tx->now && clock > *tx->now)
            *tx->now = clock;
        tx->result = (enum store_result)tx->fn(c, tx->arg);
        if (kept(tx->result) && tx->notes &&
            (rc = sqlite_events_write(c, &tx->notes->events, tx->now ? *tx->now : clock)) !=
                SQLITE_DONE) {
            *r = step_failed(w, name, rc, "events", txs, i + 1);
            return LOST;
        }
        if (kept(tx->result)) {
            due_apply(w, tx->notes);
            through++;
            continue;
        }
        drop(tx);
        if (tx->result == STORE_BUSY) {
            *r = STORE_BUSY;
            roll_back(w, name, txs, i);
            return LOST;
        }
        if (sqlite3_total_changes64(c->db) != before || sqlite3_get_autocommit(c->db)) {
            tx->settled = 1;
            roll_back(w, name, txs, i);
            return RERUN;
        }
    }
    if (through == 0) {
        sqlite_heal_rollback(w, name); /* nothing to keep */
        return DONE;
    }
    rc = write_counts(c, txs, n);
    if (rc != SQLITE_DONE) {
        *r = step_failed(w, name, rc, "counts", txs, n);
        return LOST;
    }
    rc = sqlite_conn_run(c, STMT_COMMIT);
    if (rc != SQLITE_DONE) {
        *r = step_failed(w, name, rc, "commit", txs, n);
        return LOST;
    }
    *committed = 1;
    *wrote = sqlite3_total_changes64(c->db) != start;
    w->next_due = w->due_work;
    w->lanes = w->lanes_work;
    return DONE;
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

/* After a commit: the hooks, once per distinct queue and once for the earliest schedule, for
 * the news of every transaction of the group that stands. */
static void fire_hooks(const struct store_hooks *h, struct sqlite_tx **txs, size_t n)
{
    struct store_news all = {0};
    for (size_t i = 0; i < n; i++) {
        if (txs[i]->notes && kept(txs[i]->result))
            store_news_merge(&all, &txs[i]->notes->news);
    }
    store_news_fire(h, &all, 0);
    store_news_clear(&all);
}

/* Under the write mutex: attempts until the results stand, within the retry budgets. Returns
 * STORE_OK (each transaction's result stands) or the group's failure. */
static enum store_result run_group(struct sqlite_writer *w, const char *name,
                                   struct sqlite_tx **txs, size_t n, int *committed, int *wrote,
                                   int *tries)
{
    enum store_result r = STORE_OK;
    int reruns = 0;
    for (;;) {
        r = sqlite_heal_ready(w);
        if (r != STORE_OK)
            return r;
        enum outcome o = attempt(w, name, txs, n, &r, committed, wrote);
        if (o == DONE)
            return STORE_OK;
        if (o == RERUN && ++reruns > SQLITE_TX_RERUNS) {
            /* Failure after failure: the storage is in trouble; the rest fail alike. */
            for (size_t i = 0; i < n; i++) {
                if (txs[i]->settled && !kept(txs[i]->result))
                    r = txs[i]->result;
            }
            return r;
        }
        if (o == LOST && (r != STORE_BUSY || ++*tries >= SQLITE_TX_TRIES))
            return r;
        atomic_fetch_add_explicit(&w->retries, 1, memory_order_relaxed); /* once more */
    }
}

void sqlite_tx_group(struct sqlite_writer *w, struct sqlite_tx **txs, size_t n)
{
    const char *name = n == 1 ? txs[0]->name : "group";
    int committed = 0, wrote = 0, tries = 0;
    enum store_result r = STORE_ERROR;
    int64_t start = clock_mono_ms();
    for (size_t i = 0; i < n; i++)
        txs[i]->settled = 0;
    if (sqlite_heal_lock(w, name) == 0) {
        r = run_group(w, name, txs, n, &committed, &wrote, &tries);
        if (r != STORE_OK)
            sqlite_heal_note(w, r, 0);
        else if (committed)
            sqlite_heal_note(w, STORE_OK, wrote);
        else
            sqlite_heal_note(w, uncommitted_result(txs, n), 0);
        sqlite_heal_unlock(w);
    }
    if (r != STORE_OK) {
        for (size_t i = 0; i < n; i++) {
            if (!txs[i]->settled)
                txs[i]->result = r;
        }
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
        if (tx->result == STORE_BUSY || tx->result == STORE_UNAVAILABLE ||
            tx->result == STORE_ERROR)
            atomic_fetch_add_explicit(&w->errors, 1, memory_order_relaxed);
        sqlite_notes_free(tx->notes);
        tx->done(tx); /* may free tx */
    }
}
