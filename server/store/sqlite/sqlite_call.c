/* store_submit for SQLite: a store call becomes a transaction for the writer thread (built by
 * the file of its area). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "sqlite_store.h"

/* The writer is done with the call's transaction: report to the caller. */
static void call_done(struct sqlite_tx *tx)
{
    struct store_call *call = tx->done_arg;
    call->result = tx->result;
    free(tx); /* the block the builder allocated */
    call->done(call);
}

/* The one table of write kinds: the builder that makes each kind's transaction (its op
 * file). A builder returns the transaction, or NULL with call->result set. */
typedef struct sqlite_tx *(*sqlite_builder)(struct sqlite_store *st, struct store_call *call);

static const sqlite_builder kinds[STORE_CALL_KIND_COUNT] = {
    [STORE_CALL_ENQUEUE] = sqlite_enqueue_tx,
    [STORE_CALL_CLAIM] = sqlite_claim_tx,
    [STORE_CALL_HEARTBEAT] = sqlite_lease_tx,
    [STORE_CALL_COMPLETE] = sqlite_lease_tx,
    [STORE_CALL_FAIL] = sqlite_lease_tx,
    [STORE_CALL_CANCEL] = sqlite_admin_tx,
    [STORE_CALL_RETRY] = sqlite_admin_tx,
    [STORE_CALL_PAUSE] = sqlite_queue_tx,
    [STORE_CALL_PURGE] = sqlite_queue_tx,
    [STORE_CALL_LIMIT_PUT] = sqlite_limit_tx,
    [STORE_CALL_LIMIT_DELETE] = sqlite_limit_tx,
    [STORE_CALL_SNOOZE] = sqlite_lease_tx,
    [STORE_CALL_SCHEDULE_PUT] = sqlite_schedule_tx,
    [STORE_CALL_SCHEDULE_DELETE] = sqlite_schedule_tx,
    [STORE_CALL_SCHEDULE_TICK] = sqlite_schedule_tx,
    [STORE_CALL_SCHEDULE_PASS] = sqlite_schedule_tx,
    [STORE_CALL_SQS_QUEUE_PUT] = sqlite_sqs_tx,
    [STORE_CALL_SQS_QUEUE_DELETE] = sqlite_sqs_tx,
    [STORE_CALL_WEBHOOK] = sqlite_webhook_tx,
};

void sqlite_submit(struct store *s, struct store_call *call)
{
    struct sqlite_store *st = sqlite_store_of(s);
    struct sqlite_tx *tx = NULL;
    call->result = STORE_ERROR;
    if ((unsigned)call->kind < STORE_CALL_KIND_COUNT && kinds[call->kind])
        tx = kinds[call->kind](st, call);
    if (!tx) {
        call->done(call); /* result set by the builder */
        return;
    }
    tx->done = call_done;
    tx->done_arg = call;
    sqlite_tx_submit(&st->writer, tx);
}

void sqlite_read_stats(struct store *s, struct store_stats *out)
{
    struct sqlite_writer *w = &sqlite_store_of(s)->writer;
    *out = (struct store_stats){0};
    out->commits = atomic_load_explicit(&w->commits, memory_order_relaxed);
    out->ops = atomic_load_explicit(&w->ops, memory_order_relaxed);
    out->retries = atomic_load_explicit(&w->retries, memory_order_relaxed);
    out->errors = atomic_load_explicit(&w->errors, memory_order_relaxed);
}

size_t sqlite_read_metrics(struct store *s, struct store_metric out[STORE_METRICS_MAX])
{
    struct sqlite_store *st = sqlite_store_of(s);
    struct sqlite_pool *p = &st->readers;
    pthread_mutex_lock(&p->mu);
    int busy = p->n - p->nidle;
    pthread_mutex_unlock(&p->mu);
    char wal[4096];
    struct stat sb;
    int n = snprintf(wal, sizeof wal, "%s-wal", st->writer.path);
    double wal_bytes =
        n > 0 && (size_t)n < sizeof wal && stat(wal, &sb) == 0 ? (double)sb.st_size : 0;
    size_t k = 0;
    out[k++] =
        (struct store_metric){"jobq_sqlite_readers", "Read connections (--readers).", 0, p->n};
    out[k++] = (struct store_metric){"jobq_sqlite_readers_in_use",
                                     "Read connections taken by a read now.", 0, busy};
    out[k++] = (struct store_metric){"jobq_sqlite_writer_queue",
                                     "Write transactions waiting for the writer thread.", 0,
                                     (double)sqlite_writer_queued(&st->writer)};
    out[k++] = (struct store_metric){"jobq_sqlite_wal_bytes",
                                     "Size of the write-ahead log file in bytes.", 0, wal_bytes};
    return event_log_gauge_metrics(&st->events_seen, out, k);
}
