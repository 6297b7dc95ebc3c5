/* store_submit for SQLite: a store call becomes a transaction for the writer thread (built by
 * the file of its area); the synchronous writes (store_enqueue, store_claim, ...) submit one
 * and wait for it. */
#include <pthread.h>
#include <stdlib.h>

#include "latch.h"
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
    out->commits = atomic_load_explicit(&w->commits, memory_order_relaxed);
    out->ops = atomic_load_explicit(&w->ops, memory_order_relaxed);
}

static void wake(struct store_call *call)
{
    latch_open(call->ctx);
}

/* Submit call and wait for it. */
static enum store_result run(struct store *s, struct store_call *call)
{
    struct latch wt;
    latch_init(&wt);
    call->done = wake;
    call->ctx = &wt;
    sqlite_submit(s, call);
    latch_wait_and_destroy(&wt);
    return call->result;
}

enum store_result sqlite_enqueue(struct store *s, const struct job_spec *specs, size_t n,
                                 int64_t now, struct job *out, int *created)
{
    struct store_call call = {.kind = STORE_CALL_ENQUEUE,
                              .now = now,
                              .specs = specs,
                              .nspecs = n,
                              .out = out,
                              .created = created};
    return run(s, &call);
}

enum store_result sqlite_claim(struct store *s, const struct claim_req *req, int64_t now,
                               struct job *out, size_t *n)
{
    struct store_call call = {.kind = STORE_CALL_CLAIM, .now = now, .claim = req, .out = out};
    enum store_result r = run(s, &call);
    *n = call.n;
    return r;
}

enum store_result sqlite_lease_heartbeat(struct store *s, int64_t id, const char *token,
                                         int64_t lease_seconds, const char *progress, int64_t now,
                                         struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_HEARTBEAT,
                              .now = now,
                              .id = id,
                              .token = token,
                              .lease_seconds = lease_seconds,
                              .json = progress,
                              .out = out};
    return run(s, &call);
}

enum store_result sqlite_lease_complete(struct store *s, int64_t id, const char *token,
                                        const char *result, int64_t now, struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_COMPLETE,
                              .now = now,
                              .id = id,
                              .token = token,
                              .json = result,
                              .out = out};
    return run(s, &call);
}

enum store_result sqlite_lease_fail(struct store *s, int64_t id, const char *token,
                                    const struct fail_req *req, int64_t now, struct job *out)
{
    struct store_call call = {
        .kind = STORE_CALL_FAIL, .now = now, .id = id, .token = token, .fail = req, .out = out};
    return run(s, &call);
}

enum store_result sqlite_admin_cancel(struct store *s, int64_t id, int64_t now, struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_CANCEL, .now = now, .id = id, .out = out};
    return run(s, &call);
}

enum store_result sqlite_admin_retry(struct store *s, int64_t id, int64_t now, struct job *out)
{
    struct store_call call = {.kind = STORE_CALL_RETRY, .now = now, .id = id, .out = out};
    return run(s, &call);
}
