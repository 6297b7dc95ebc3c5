/* store_submit for SQLite: a store call becomes a transaction for the writer thread (built by
 * the file of its area). */
#include <stdlib.h>

#include "sqlite_store.h"

/* The writer is done with the call's transaction: report to the caller. */
static void call_done(struct sqlite_tx *tx)
{
    struct store_call *call = tx->done_arg;
    call->result = tx->result;
    free(tx); /* the block the builder allocated */
    call->done(call);
}

void sqlite_submit(struct store *s, struct store_call *call)
{
    struct sqlite_store *st = sqlite_store_of(s);
    struct sqlite_tx *tx = NULL;
    call->result = STORE_ERROR;
    switch (call->kind) {
    case STORE_CALL_ENQUEUE:
        tx = sqlite_enqueue_tx(st, call);
        break;
    case STORE_CALL_CLAIM:
        tx = sqlite_claim_tx(st, call);
        break;
    case STORE_CALL_HEARTBEAT:
    case STORE_CALL_COMPLETE:
    case STORE_CALL_FAIL:
        tx = sqlite_lease_tx(st, call);
        break;
    case STORE_CALL_CANCEL:
    case STORE_CALL_RETRY:
        tx = sqlite_admin_tx(st, call);
        break;
    case STORE_CALL_PAUSE:
    case STORE_CALL_PURGE:
        tx = sqlite_queue_tx(st, call);
        break;
    default:
        break;
    }
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
}
