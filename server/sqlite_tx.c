#include "sqlite_tx.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"

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

/* One BEGIN..COMMIT attempt; rolls back and discards on anything but a commit. *wrote is
 * set when it committed changed rows. */
static enum store_result attempt(struct sqlite_writer *w, const struct sqlite_tx *tx, int *wrote)
{
    struct sqlite_conn *c = &w->conn;
    sqlite3_int64 changes = sqlite3_total_changes64(c->db);
    int rc = sqlite_conn_run(c, STMT_BEGIN);
    if (rc != SQLITE_DONE) {
        enum store_result r = sqlite_conn_result(rc);
        if (r != STORE_BUSY)
            sqlite_conn_fail(c, rc, "begin");
        sqlite_writer_rollback(w, tx->name);
        return r;
    }
    enum store_result r = (enum store_result)tx->fn(c, tx->arg);
    if (r == STORE_OK || r == STORE_EXISTS) {
        rc = sqlite_conn_run(c, STMT_COMMIT);
        if (rc == SQLITE_DONE) {
            *wrote = sqlite3_total_changes64(c->db) != changes;
            return r;
        }
        r = sqlite_conn_result(rc);
        if (r != STORE_BUSY)
            sqlite_conn_fail(c, rc, "commit");
    }
    sqlite_writer_rollback(w, tx->name);
    if (tx->discard)
        tx->discard(tx->arg);
    notes_free(tx->notes);
    return r;
}

enum store_result sqlite_tx_run(struct sqlite_writer *w, const struct sqlite_tx *tx)
{
    if (sqlite_writer_lock(w, tx->name) != 0) {
        notes_free(tx->notes);
        return STORE_ERROR;
    }
    int64_t start = clock_mono_ms();
    enum store_result r = STORE_BUSY;
    int tries = 0, wrote = 0;
    while (r == STORE_BUSY && tries < SQLITE_TX_TRIES) {
        tries++;
        r = sqlite_writer_ready(w);
        if (r == STORE_OK)
            r = attempt(w, tx, &wrote);
    }
    sqlite_writer_note(w, r, wrote);
    sqlite_writer_unlock(w);

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
