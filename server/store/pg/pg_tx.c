/* The PostgreSQL store's transaction runner and its executor threads (store_submit). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

void pg_notes_ready(struct pg_notes *n, const char *queue)
{
    if (n->all)
        return;
    for (size_t i = 0; i < n->n; i++) {
        if (strcmp(n->queues[i], queue) == 0) {
            n->jobs[i]++;
            return;
        }
    }
    char *copy = n->n < JOB_QUEUES_MAX ? strdup(queue) : NULL;
    if (!copy) {
        n->all = 1; /* too many queues, or no memory: wake everyone instead */
        return;
    }
    n->queues[n->n] = copy;
    n->jobs[n->n++] = 1;
}

void pg_notes_later(struct pg_notes *n, const char *queue, int64_t run_at)
{
    for (size_t i = 0; i < n->nlater; i++) {
        if (strcmp(n->later[i], queue) == 0) {
            if (run_at < n->later_at[i])
                n->later_at[i] = run_at;
            return;
        }
    }
    char *copy = n->nlater < JOB_QUEUES_MAX ? strdup(queue) : NULL;
    if (!copy)
        return;
    n->later[n->nlater] = copy;
    n->later_at[n->nlater++] = run_at;
}

void pg_notes_clear(struct pg_notes *n)
{
    for (size_t i = 0; i < n->n; i++)
        free(n->queues[i]);
    for (size_t i = 0; i < n->nlater; i++)
        free(n->later[i]);
    memset(n, 0, sizeof *n);
}

/* After a commit, from this thread: the local hooks. */
static void fire_hooks(struct pg_store *st, const struct pg_notes *n)
{
    const struct store_hooks *h = &st->hooks;
    if (n->all) {
        if (h->on_lost)
            h->on_lost(h->ctx);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        if (h->on_ready)
            h->on_ready(h->ctx, n->queues[i]);
    }
}

void pg_notes_publish(struct pg_store *st, const struct pg_notes *n)
{
    fire_hooks(st, n);
    pg_listen_announce(st, n);
    if (n->nlater == 0)
        return;
    pg_due_add(st, n);
    int64_t first = n->later_at[0];
    for (size_t i = 1; i < n->nlater; i++)
        first = n->later_at[i] < first ? n->later_at[i] : first;
    if (st->hooks.on_scheduled)
        st->hooks.on_scheduled(st->hooks.ctx, pg_host_time(st, first));
}

enum store_result pg_tx_run(struct pg_store *st, const struct pg_tx *tx)
{
    enum store_result r = STORE_ERROR;
    for (int attempt = 0; attempt < PG_TX_TRIES; attempt++) {
        if (atomic_load(&st->abandoned)) {
            r = STORE_UNAVAILABLE;
            break;
        }
        if (attempt > 0)
            atomic_fetch_add(&st->retries, 1);
        struct pg_conn *c = NULL;
        r = pg_pool_take(st, &c);
        if (r != STORE_OK)
            break;
        r = pg_command(c, "BEGIN", tx->name);
        if (r != STORE_OK) {
            /* Nothing was sent but BEGIN: a connection that died while idle in the pool (a
             * restart, pg_terminate_backend, a failover) is safe to replace and try again. */
            pg_pool_give(st, c);
            if (r == STORE_UNAVAILABLE || r == STORE_BUSY)
                continue;
            break;
        }
        struct pg_notes notes = {0};
        r = tx->fn(c, tx->arg, &notes);
        int committed = 0;
        if (r == STORE_OK || r == STORE_EXISTS) {
            /* A COMMIT that fails on a lost connection may have committed: 503, and the
             * client retries (at least once, as documented). */
            enum store_result cr = pg_commit(c, st->statement_ms, tx->name);
            if (cr == STORE_OK)
                committed = 1;
            else
                r = cr;
        } else {
            pg_command(c, "ROLLBACK", tx->name); /* a failure marks the connection bad */
        }
        pg_pool_give(st, c);
        if (committed) {
            atomic_fetch_add(&st->commits, 1);
            atomic_fetch_add(&st->ops, tx->ops ? tx->ops : 1);
            pg_notes_publish(st, &notes);
            pg_notes_clear(&notes);
            return r;
        }
        pg_notes_clear(&notes);
        if (tx->discard)
            tx->discard(tx->arg);
        if (r != STORE_BUSY)
            break;
    }
    if (r == STORE_BUSY || r == STORE_UNAVAILABLE || r == STORE_ERROR)
        atomic_fetch_add(&st->errors, 1);
    return r;
}

/* One queued call. */
struct pg_job_node {
    struct store_call *call;
    struct pg_job_node *next;
};

/* Calls that share one transaction: at most PG_GROUP_MAX, and at most PG_GROUP_ROWS jobs
 * among them (a batch enqueue counts its jobs, a claim its max_jobs), so that the
 * transaction, and the row locks it holds, stay short. */
#define PG_GROUP_MAX 64
#define PG_GROUP_ROWS 1000

static size_t call_rows(const struct store_call *call)
{
    if (call->kind == STORE_CALL_ENQUEUE)
        return call->nspecs;
    if (call->kind == STORE_CALL_CLAIM && call->claim->max_jobs > 1)
        return (size_t)call->claim->max_jobs;
    if (call->kind == STORE_CALL_PURGE)
        return (size_t)call->limit;
    return 1;
}

/* Set pc up for call. Returns 1 when it needs a transaction, 0 when call->result is set. */
static int prepare(struct pg_store *st, struct store_call *call, struct pg_call *pc)
{
    memset(pc, 0, sizeof *pc);
    pc->st = st;
    pc->call = call;
    pc->now = pg_now(st, call->now);
    int need;
    switch (call->kind) {
    case STORE_CALL_ENQUEUE:
        need = pg_enqueue_prepare(pc);
        break;
    case STORE_CALL_CLAIM:
        need = pg_claim_prepare(pc);
        break;
    case STORE_CALL_HEARTBEAT:
    case STORE_CALL_COMPLETE:
    case STORE_CALL_FAIL:
        need = pg_lease_prepare(pc);
        break;
    case STORE_CALL_CANCEL:
    case STORE_CALL_RETRY:
        need = pg_admin_prepare(pc);
        break;
    case STORE_CALL_PAUSE:
    case STORE_CALL_PURGE:
        need = pg_queue_prepare(pc);
        break;
    default:
        call->result = STORE_ERROR;
        return 0;
    }
    pc->tx.arg = pc;
    return need;
}

/* Several calls in one transaction: one BEGIN, one NOTIFY and one COMMIT (one WAL flush) for
 * all of them, as the SQLite backend's group commit. A call whose result may follow writes
 * that must be undone (see pg_call) cannot share it: the group rolls back and every call
 * runs alone. */
struct pg_group {
    struct pg_call *calls;
    size_t n, ran;
    int split; /* a call could not share the transaction */
};

static int shareable(enum store_result r)
{
    return r == STORE_OK || r == STORE_EXISTS || r == STORE_NOT_FOUND || r == STORE_LEASE_LOST ||
           r == STORE_CONFLICT;
}

static enum store_result group_tx(struct pg_conn *c, void *p, struct pg_notes *notes)
{
    struct pg_group *g = p;
    for (g->ran = 0; g->ran < g->n; g->ran++) {
        struct pg_call *pc = &g->calls[g->ran];
        enum store_result r = pc->tx.fn(c, pc, notes);
        if (!shareable(r) || PQtransactionStatus(c->db) != PQTRANS_INTRANS) {
            if (pc->tx.discard)
                pc->tx.discard(pc);
            g->split = 1;
            return STORE_CONFLICT; /* roll back; not a retry, not an error */
        }
        pc->call->result = r;
    }
    return STORE_OK;
}

static void group_discard(void *p)
{
    struct pg_group *g = p;
    for (size_t i = 0; i < g->ran && i < g->n; i++) {
        if (g->calls[i].tx.discard)
            g->calls[i].tx.discard(&g->calls[i]);
    }
    g->ran = 0;
}

static void run_group(struct pg_store *st, struct pg_call *calls, size_t n);

int64_t pg_calls_now(const struct pg_call *calls, size_t k)
{
    int64_t now = calls[0].now;
    for (size_t i = 1; i < k; i++)
        now = calls[i].now > now ? calls[i].now : now;
    return now;
}

enum store_result pg_one_tx(struct pg_conn *c, void *arg, struct pg_notes *notes)
{
    struct pg_call *pc = arg;
    struct pg_bind b;
    if (pc->one->bind(pc, 1, &b) != 0)
        return STORE_ERROR;
    enum store_result r;
    PGresult *res = pg_exec(c, b.id, b.n, b.params, b.what, &r);
    pg_bind_free(&b);
    if (!res)
        return r;
    pc->follow = 0;
    pc->one->recv(pc, 1, res, notes);
    r = pc->call->result;
    PQclear(res);
    if (r == STORE_OK && pc->follow)
        r = pc->one->follow(c, pc);
    return r;
}

/* The pipeline of one-statement calls (pg_one): every statement is sent, then one Sync; the
 * server runs them in one implicit transaction that commits at the Sync, so there is one
 * round trip and one WAL flush for all of them and no BEGIN or COMMIT. A statement that fails
 * aborts the rest: nothing is committed and every call runs alone again. An answer that does
 * not come in time (a synchronous standby that does not confirm, a connection lost under
 * it) may follow a commit: those calls end STORE_UNAVAILABLE and are not run again. */
enum pipe_outcome { PIPE_DONE, PIPE_AGAIN };

/* Read the next result of c (waiting until deadline). NULL on timeout or a lost connection. */
static PGresult *next_result(struct pg_conn *c, int64_t deadline, int *lost)
{
    if (pg_await(c, deadline) != 0) {
        *lost = 1;
        return NULL;
    }
    return PQgetResult(c->db);
}

/* Drop what pipe_run's calls put in their outputs. */
static void pipe_discard(struct pg_call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (calls[i].tx.discard)
            calls[i].tx.discard(&calls[i]);
    }
}

/* Calls [first, first + n) of a pipeline, done by one statement. */
struct pg_unit {
    size_t first, n;
};

/* The answers of the nu statements (one per unit) and of the Sync. Returns 0 when all
 * succeeded and the transaction committed, 1 when a statement failed (rolled back; c still
 * usable), -1 when the answer did not come (c marked bad, the outcome unknown), -2 when the
 * connection was lost after a statement failed or before any answer (c marked bad; nothing
 * committed). */
static int pipe_read(struct pg_store *st, struct pg_conn *c, struct pg_call *calls,
                     const struct pg_unit *units, size_t nu, struct pg_notes *notes)
{
    int64_t deadline = clock_mono_ms() + st->statement_ms;
    int failed = 0, lost = 0, from_server = 0;
    for (size_t u = 0; u < nu && !lost; u++) {
        struct pg_call *uc = &calls[units[u].first];
        PGresult *res = next_result(c, deadline, &lost);
        if (!res && u == 0 && PQstatus(c->db) != CONNECTION_OK) {
            /* Closed before it answered anything: a backend ended while the connection was
             * idle (a restart, pg_terminate_backend) never read the pipeline. */
            c->bad = 1;
            return -2;
        }
        if (!res)
            break;
        if (!failed && pg_result_ok(res)) {
            /* A result it cannot read (no memory) ends those calls alone: the statement
             * succeeded and commits with the others. */
            for (size_t i = 0; i < units[u].n; i++)
                uc[i].follow = 0;
            uc->one->recv(uc, units[u].n, res, notes);
        } else if (!failed) {
            if (PQresultStatus(res) != PGRES_PIPELINE_ABORTED)
                pg_fail(c, res, uc->tx.name); /* logs it */
            failed = 1;
            /* The server said why (an SQLSTATE outside class 08): the transaction is rolled
             * back. libpq's own "connection lost" is not a word from the server: the commit
             * may have happened before it. */
            const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
            from_server = state && strncmp(state, "08", 2) != 0;
        }
        PQclear(res);
        res = next_result(c, deadline, &lost); /* the NULL that ends this statement's results */
        PQclear(res);
    }
    /* The Sync's answer comes after the commit (and an error before it if the commit
     * failed). */
    for (int k = 0; k < 4 && !lost; k++) {
        PGresult *res = next_result(c, deadline, &lost);
        if (!res)
            continue;
        ExecStatusType t = PQresultStatus(res);
        if (t != PGRES_PIPELINE_SYNC) {
            if (!failed)
                pg_fail(c, res, "pipeline: commit");
            failed = 1;
            PQclear(res);
            continue;
        }
        PQclear(res);
        return failed ? 1 : 0;
    }
    if (failed && from_server) {
        /* A statement failed, so the transaction did not commit, whatever became of the
         * connection after (a backend ended by a restart or pg_terminate_backend says so in
         * its first answer: 57P01). */
        c->bad = 1;
        return -2;
    }
    pg_cancel(c); /* the wait, then the connection is dropped */
    log_warn("postgresql: no answer to a pipeline of %zu statements within %lld ms (a synchronous "
             "standby that does not confirm, or the connection lost): answered as unavailable",
             nu, (long long)st->statement_ms);
    c->bad = 1;
    return -1;
}

/* Bytes of parameter text a call adds to its statement (what bounds a shared one). */
static size_t call_bytes(const struct pg_call *pc)
{
    const struct store_call *call = pc->call;
    size_t n = call->json ? strlen(call->json) : 0;
    if (call->kind == STORE_CALL_ENQUEUE) {
        for (size_t i = 0; i < call->nspecs; i++)
            n += strlen(call->specs[i].payload) + 64;
    }
    return n;
}

/* A statement shared by calls carries at most this much of their text (past it, another
 * statement starts). */
#define PG_UNIT_BYTES (4u << 20)

/* Reorder calls[0..n) into units of calls that share one statement (their `one` and `same`
 * agree, pairwise), each unit's calls adjacent and in their order. Returns the units. */
static size_t make_units(struct pg_call *calls, size_t n, struct pg_unit *units)
{
    struct pg_call sorted[PG_GROUP_MAX];
    unsigned char used[PG_GROUP_MAX] = {0};
    size_t out = 0, nu = 0;
    for (size_t i = 0; i < n; i++) {
        if (used[i])
            continue;
        const struct pg_one *one = calls[i].one;
        struct pg_unit *u = &units[nu++];
        *u = (struct pg_unit){.first = out};
        size_t bytes = 0;
        for (size_t j = i; j < n; j++) {
            if (used[j] || calls[j].one != one)
                continue;
            if (j > i && (!one->same || bytes + call_bytes(&calls[j]) > PG_UNIT_BYTES))
                continue;
            int ok = 1;
            for (size_t m = u->first; m < out && ok; m++)
                ok = one->same(&sorted[m], &calls[j]);
            if (!ok)
                continue;
            bytes += call_bytes(&calls[j]);
            sorted[out++] = calls[j];
            used[j] = 1;
            u->n++;
        }
    }
    memcpy(calls, sorted, n * sizeof *calls);
    for (size_t i = 0; i < n; i++)
        calls[i].tx.arg = &calls[i]; /* they moved */
    return nu;
}

static enum pipe_outcome pipe_run(struct pg_store *st, struct pg_call *calls, size_t n)
{
    struct pg_conn *c = NULL;
    enum store_result r = pg_pool_take(st, &c);
    if (r != STORE_OK) {
        for (size_t i = 0; i < n; i++)
            calls[i].call->result = r;
        atomic_fetch_add(&st->errors, n);
        return PIPE_DONE;
    }
    /* Statements are prepared outside the pipeline (a Parse skipped after an error in it
     * would leave one thought prepared that is not). */
    static const enum pg_stmt_id hot[] = {
        PG_JOB_INSERT,   PG_CLAIM,  PG_CLAIM_ONE_QUEUE, PG_HEARTBEAT, PG_HEARTBEAT_ONE, PG_COMPLETE,
        PG_COMPLETE_ONE, PG_CANCEL, PG_RETRY,           PG_QUEUE_SET, PG_PURGE};
    for (size_t i = 0; i < sizeof hot / sizeof hot[0] && r == STORE_OK; i++)
        r = pg_prepare(c, hot[i], "prepare");
    if (r != STORE_OK || !PQenterPipelineMode(c->db)) {
        pg_pool_give(st, c);
        return PIPE_AGAIN;
    }
    struct pg_unit units[PG_GROUP_MAX];
    size_t nu = make_units(calls, n, units), sent = 0;
    for (; sent < nu; sent++) {
        struct pg_call *uc = &calls[units[sent].first];
        struct pg_bind b;
        if (uc->one->bind(uc, units[sent].n, &b) != 0)
            break;
        int rc = pg_send(c, b.id, b.n, b.params);
        pg_bind_free(&b);
        if (rc != 0)
            break;
    }
    if (sent < nu || !PQpipelineSync(c->db)) {
        /* Nothing was committed without a Sync: drop the connection, run them alone. */
        c->bad = 1;
        pg_pool_give(st, c);
        return PIPE_AGAIN;
    }
    struct pg_notes notes = {0};
    int rc = pipe_read(st, c, calls, units, nu, &notes);
    if (rc == 0 && !PQexitPipelineMode(c->db))
        c->bad = 1; /* cannot happen: every result was read; the follow-ups then fail */
    if (rc != 0) {
        pipe_discard(calls, n);
        pg_notes_clear(&notes);
        if ((rc > 0 && PQexitPipelineMode(c->db)) || rc == -2) {
            pg_pool_give(st, c);
            return PIPE_AGAIN;
        }
        c->bad = 1; /* unknown outcome: not run again */
        pg_pool_give(st, c);
        for (size_t i = 0; i < n; i++)
            calls[i].call->result = STORE_UNAVAILABLE;
        atomic_fetch_add(&st->errors, n);
        return PIPE_DONE;
    }
    atomic_fetch_add(&st->commits, 1);
    atomic_fetch_add(&st->ops, n);
    pg_notes_publish(st, &notes);
    pg_notes_clear(&notes);
    /* The reads that decide the calls whose statement found nothing. */
    for (size_t i = 0; i < n; i++) {
        if (calls[i].call->result == STORE_OK && calls[i].follow)
            calls[i].call->result = calls[i].one->follow(c, &calls[i]);
    }
    pg_pool_give(st, c);
    return PIPE_DONE;
}

/* Run the n calls: the one-statement ones in one pipeline, the others alone when there is
 * one, else together in one transaction (alone after a split). */
static void run_calls(struct pg_store *st, struct pg_call *calls, size_t n)
{
    size_t k = 0; /* the one-statement calls first, in their order */
    for (size_t i = 0; i < n; i++) {
        if (calls[i].one) {
            struct pg_call t = calls[i];
            memmove(&calls[k + 1], &calls[k], (i - k) * sizeof *calls);
            calls[k++] = t;
        }
    }
    for (size_t i = 0; i < n; i++)
        calls[i].tx.arg = &calls[i]; /* they moved */
    if (k > 0 && pipe_run(st, calls, k) == PIPE_DONE) {
        calls += k;
        n -= k;
    }
    run_group(st, calls, n);
}

/* Run the n calls alone when n is 1, else together (alone after a split). */
static void run_group(struct pg_store *st, struct pg_call *calls, size_t n)
{
    if (n == 0)
        return;
    if (n > 1) {
        struct pg_group g = {.calls = calls, .n = n};
        struct pg_tx tx = {
            .name = "group", .ops = n, .fn = group_tx, .discard = group_discard, .arg = &g};
        enum store_result r = pg_tx_run(st, &tx);
        if (!g.split) {
            if (r != STORE_OK) { /* the transaction failed as a whole */
                for (size_t i = 0; i < n; i++)
                    calls[i].call->result = r;
            }
            return;
        }
    }
    for (size_t i = 0; i < n; i++)
        calls[i].call->result = pg_tx_run(st, &calls[i].tx);
}

/* Take the next group of queued calls (st->qmu held, the queue not empty) into calls[]. */
static size_t take_group(struct pg_store *st, struct store_call **calls)
{
    size_t n = 0, rows = 0;
    while (st->head && n < PG_GROUP_MAX) {
        struct pg_job_node *node = st->head;
        size_t r = call_rows(node->call);
        if (n > 0 && rows + r > PG_GROUP_ROWS)
            break;
        rows += r;
        calls[n++] = node->call;
        st->head = node->next;
        free(node);
    }
    if (!st->head)
        st->tail = NULL;
    return n;
}

static void *exec_main(void *arg)
{
    struct pg_store *st = arg;
    struct store_call *taken[PG_GROUP_MAX];
    struct pg_call calls[PG_GROUP_MAX];
    pthread_mutex_lock(&st->qmu);
    for (;;) {
        while (!st->head && !st->stop)
            pthread_cond_wait(&st->qcv, &st->qmu);
        if (!st->head)
            break; /* stop, and the queue is empty */
        size_t n = take_group(st, taken);
        pthread_mutex_unlock(&st->qmu);
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (atomic_load(&st->abandoned))
                taken[i]->result = STORE_UNAVAILABLE; /* shutdown: do not start it */
            else if (prepare(st, taken[i], &calls[k]))
                k++;
        }
        if (k > 0)
            run_calls(st, calls, k);
        for (size_t i = 0; i < n; i++)
            taken[i]->done(taken[i]);
        pthread_mutex_lock(&st->qmu);
    }
    pthread_mutex_unlock(&st->qmu);
    return NULL;
}

int pg_exec_start(struct pg_store *st, int nthreads)
{
    pthread_mutex_init(&st->qmu, NULL);
    pthread_cond_init(&st->qcv, NULL);
    st->threads = calloc((size_t)nthreads, sizeof *st->threads);
    if (!st->threads) {
        log_error("out of memory for %d executor threads", nthreads);
        return -1;
    }
    for (int i = 0; i < nthreads; i++) {
        int rc = pthread_create(&st->threads[i], NULL, exec_main, st);
        if (rc != 0) {
            log_error("cannot start an executor thread: %s", strerror(rc));
            pg_exec_stop(st);
            return -1;
        }
        st->nthreads++;
    }
    return 0;
}

void pg_exec_stop(struct pg_store *st)
{
    if (!st->threads)
        return;
    pthread_mutex_lock(&st->qmu);
    st->stop = 1;
    pthread_cond_broadcast(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
    for (int i = 0; i < st->nthreads; i++)
        pthread_join(st->threads[i], NULL);
    free(st->threads);
    st->threads = NULL;
    st->nthreads = 0;
    pthread_cond_destroy(&st->qcv);
    pthread_mutex_destroy(&st->qmu);
}

void pg_submit(struct store *s, struct store_call *call)
{
    struct pg_store *st = pg_store_of(s);
    struct pg_job_node *node = malloc(sizeof *node);
    if (!node) {
        log_error("out of memory queueing a store call");
        call->result = STORE_ERROR;
        call->done(call);
        return;
    }
    node->call = call;
    node->next = NULL;
    pthread_mutex_lock(&st->qmu);
    if (st->stop) {
        pthread_mutex_unlock(&st->qmu);
        free(node);
        call->result = STORE_UNAVAILABLE;
        call->done(call);
        return;
    }
    if (st->tail)
        st->tail->next = node;
    else
        st->head = node;
    st->tail = node;
    pthread_cond_signal(&st->qcv);
    pthread_mutex_unlock(&st->qmu);
}
