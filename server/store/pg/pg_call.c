/* The PostgreSQL store's calls: store_submit's entry (pg_submit) and the one table of write
 * kinds. A call is set up for its transaction here, on the submitting thread, and queued for
 * the executor (pg_exec.c), which never names an operation. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_store.h"

/* The rows a call holds locks on (what bounds a group's transaction). */
static size_t one_row(const struct store_call *call)
{
    (void)call;
    return 1;
}

static size_t enqueue_rows(const struct store_call *call)
{
    return call->enqueue.n;
}

static size_t claim_rows(const struct store_call *call)
{
    int max_jobs = call->claim.req->max_jobs;
    return max_jobs > 1 ? (size_t)max_jobs : 1;
}

static size_t tick_rows(const struct store_call *call)
{
    (void)call;
    return 2; /* the schedule and its job */
}

static size_t purge_rows(const struct store_call *call)
{
    return (size_t)call->purge.limit;
}

/* The bytes of parameter text a call adds to a statement it shares (what bounds one). */
static size_t no_bytes(const struct store_call *call)
{
    (void)call;
    return 0;
}

static size_t progress_bytes(const struct store_call *call)
{
    return call->heartbeat.progress ? strlen(call->heartbeat.progress) : 0;
}

static size_t result_bytes(const struct store_call *call)
{
    return call->complete.result ? strlen(call->complete.result) : 0;
}

static size_t enqueue_bytes(const struct store_call *call)
{
    size_t n = 0;
    for (size_t i = 0; i < call->enqueue.n; i++)
        n += strlen(call->enqueue.specs[i].payload) + 64;
    return n;
}

/* One row per write kind: how to set a call up (the op files), the rows it locks and the
 * bytes it adds to a shared statement. The statements a call runs are prepared from what it
 * binds (pg_pipe.c), so no list of them is kept by hand. */
struct pg_kind {
    int (*prepare)(struct pg_call *pc);
    size_t (*rows)(const struct store_call *call);
    size_t (*bytes)(const struct store_call *call);
};

static const struct pg_kind kinds[STORE_CALL_KIND_COUNT] = {
    [STORE_CALL_ENQUEUE] = {pg_enqueue_prepare, enqueue_rows, enqueue_bytes},
    [STORE_CALL_CLAIM] = {pg_claim_prepare, claim_rows, no_bytes},
    [STORE_CALL_HEARTBEAT] = {pg_heartbeat_prepare, one_row, progress_bytes},
    [STORE_CALL_COMPLETE] = {pg_complete_prepare, one_row, result_bytes},
    [STORE_CALL_FAIL] = {pg_fail_prepare, one_row, no_bytes},
    [STORE_CALL_CANCEL] = {pg_cancel_prepare, one_row, no_bytes},
    [STORE_CALL_RETRY] = {pg_retry_prepare, one_row, no_bytes},
    [STORE_CALL_PAUSE] = {pg_pause_prepare, one_row, no_bytes},
    [STORE_CALL_PURGE] = {pg_purge_prepare, purge_rows, no_bytes},
    [STORE_CALL_LIMIT_PUT] = {pg_limit_put_prepare, one_row, no_bytes},
    [STORE_CALL_LIMIT_DELETE] = {pg_limit_delete_prepare, one_row, no_bytes},
    [STORE_CALL_SNOOZE] = {pg_snooze_prepare, one_row, no_bytes},
    [STORE_CALL_SCHEDULE_PUT] = {pg_schedule_put_prepare, one_row, no_bytes},
    [STORE_CALL_SCHEDULE_DELETE] = {pg_schedule_delete_prepare, one_row, no_bytes},
    [STORE_CALL_SCHEDULE_TICK] = {pg_schedule_tick_prepare, tick_rows, no_bytes},
    [STORE_CALL_SCHEDULE_PASS] = {pg_schedule_pass_prepare, one_row, no_bytes},
    [STORE_CALL_SQS_QUEUE_PUT] = {pg_sqs_queue_put_prepare, one_row, no_bytes},
    [STORE_CALL_SQS_QUEUE_DELETE] = {pg_sqs_queue_delete_prepare, one_row, no_bytes},
    [STORE_CALL_WEBHOOK] = {pg_webhook_prepare, one_row, no_bytes},
};

void pg_submit(struct store *s, struct store_call *call)
{
    struct pg_store *st = pg_store_of(s);
    if ((unsigned)call->kind >= STORE_CALL_KIND_COUNT || !kinds[call->kind].prepare) {
        log_error("postgresql: unknown store call kind %d", (int)call->kind);
        call->result = STORE_ERROR;
        call->done(call);
        return;
    }
    const struct pg_kind *k = &kinds[call->kind];
    struct pg_call_node *node = calloc(1, sizeof *node);
    if (!node) {
        log_error("out of memory queueing a store call");
        call->result = STORE_ERROR;
        call->done(call);
        return;
    }
    struct pg_call *pc = &node->pc;
    pc->st = st;
    pc->call = call;
    pc->now = pg_now(st, call->now);
    pc->rows = k->rows(call);
    pc->bytes = k->bytes(call);
    if (!k->prepare(pc)) { /* settled without a transaction: call->result is set */
        free(node);
        call->done(call);
        return;
    }
    pc->tx.begin = pg_call_begin;
    if (pg_exec_push(st, node) != 0) {
        free(node);
        call->result = STORE_UNAVAILABLE;
        call->done(call);
    }
}
