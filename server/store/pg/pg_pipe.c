/* The PostgreSQL store's pipeline: one-statement calls (struct pg_one) sent together and
 * committed at one Sync, calls of one kind sharing one statement (pg_store.h). */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

int64_t pg_calls_now(const struct pg_call *calls, size_t k)
{
    int64_t now = calls[0].now;
    for (size_t i = 1; i < k; i++)
        now = calls[i].now > now ? calls[i].now : now;
    return now;
}

void pg_call_answer(struct pg_call *pc)
{
    if (pc->answered)
        return;
    pc->answered = 1;
    pc->call->done(pc->call);
}

int pg_result_shareable(enum store_result r)
{
    return r == STORE_OK || r == STORE_EXISTS || r == STORE_NOT_FOUND || r == STORE_LEASE_LOST ||
           r == STORE_CONFLICT;
}

enum store_result pg_one_tx(struct pg_conn *c, void *arg, struct store_news *notes)
{
    struct pg_call *pc = arg;
    struct pg_bind b;
    if (pc->one->bind(pc, 1, &b) != 0)
        return STORE_ERROR;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, b.id, b.n, b.params, b.what, &r);
    pg_bind_free(&b);
    if (!res)
        return r;
    pc->follow = 0;
    pc->one->recv(pc, 1, res, notes);
    r = pc->call->result;
    PQclear(res);
    if (r == STORE_OK && pc->follow)
        r = pc->one->follow(c, pc, notes);
    return r;
}

/* The pipeline of one-statement calls (pg_one): every statement is sent, then one Sync; the
 * server runs them in one implicit transaction that commits at the Sync, so there is one
 * round trip and one WAL flush for all of them and no BEGIN or COMMIT. A statement that fails
 * aborts the rest: nothing is committed and every call runs alone again. An answer that does
 * not come in time (a synchronous standby that does not confirm, a connection lost under
 * it) may follow a commit: those calls end STORE_UNAVAILABLE and are not run again. */
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

/* The answers of the BEGIN (when begin), of the nu statements (one per unit) and of the
 * Sync. Returns 0 when all succeeded and the transaction committed (begin: is open), 1 when
 * a statement failed (rolled back, begin: aborted; c still usable), -1 when the answer did
 * not come (c marked bad, the outcome unknown), -2 when the connection was lost after a
 * statement failed or before any answer (c marked bad; nothing committed). */
static int pipe_read(struct pg_store *st, struct pg_conn *c, struct pg_call *calls,
                     const struct pg_unit *units, size_t nu, int begin, struct store_news *notes)
{
    int64_t deadline = clock_mono_ms() + st->statement_ms;
    int failed = 0, lost = 0, from_server = 0;
    if (begin) {
        PGresult *res = next_result(c, deadline, &lost);
        if (!res) {
            c->bad = 1; /* nothing ran */
            return -2;
        }
        if (!pg_result_ok(res)) {
            pg_fail(c, res, "pipeline: begin");
            failed = from_server = 1;
        }
        PQclear(res);
        PQclear(next_result(c, deadline, &lost));
    }
    for (size_t u = 0; u < nu && !lost; u++) {
        struct pg_call *uc = &calls[units[u].first];
        PGresult *res = next_result(c, deadline, &lost);
        if (!res && u == 0 && !begin && PQstatus(c->db) != CONNECTION_OK) {
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

/* The follow-ups that belong in the pipeline's transaction (begun with BEGIN, open on c),
 * then its COMMIT. Returns 0 when it committed, 1 when a follow-up could not share the
 * transaction (c still in it: rolled back by the caller; c marked bad when it failed), -1
 * when the COMMIT failed (the outcome unknown: c marked bad). */
static int follow_in_tx(struct pg_store *st, struct pg_conn *c, struct pg_call *calls, size_t n,
                        struct store_news *notes)
{
    for (size_t i = 0; i < n; i++) {
        struct pg_call *pc = &calls[i];
        if (pc->call->result != STORE_OK || !pc->follow || !pc->one->follow_in_tx)
            continue;
        pc->follow = 0;
        enum store_result r = pc->one->follow(c, pc, notes);
        pc->call->result = r;
        if (!pg_result_shareable(r) || PQtransactionStatus(c->db) != PQTRANS_INTRANS)
            return 1;
    }
    if (pg_commit(c, st->statement_ms, "pipeline: commit") == STORE_OK)
        return 0;
    c->bad = 1;
    return -1;
}

/* A statement shared by calls carries at most this much of their text (past it, another
 * statement starts). */
#define PG_UNIT_BYTES (4u << 20)

size_t pg_pipe_arrange(const struct pg_call *const *in, size_t n, struct pg_call *out,
                       struct pg_unit *units, size_t *nu)
{
    unsigned char used[PG_GROUP_MAX] = {0};
    size_t placed = 0;
    *nu = 0;
    for (size_t i = 0; i < n; i++) {
        const struct pg_one *one = in[i]->one;
        if (used[i] || !one)
            continue;
        struct pg_unit *u = &units[(*nu)++];
        *u = (struct pg_unit){.first = placed};
        size_t bytes = 0;
        for (size_t j = i; j < n; j++) {
            if (used[j] || in[j]->one != one)
                continue;
            if (j > i && (!one->same || bytes + in[j]->bytes > PG_UNIT_BYTES))
                continue;
            int ok = 1;
            for (size_t m = u->first; m < placed && ok; m++)
                ok = one->same(&out[m], in[j]);
            if (!ok)
                continue;
            bytes += in[j]->bytes;
            out[placed++] = *in[j];
            used[j] = 1;
            u->n++;
        }
    }
    size_t ones = placed;
    for (size_t i = 0; i < n; i++) {
        if (!used[i])
            out[placed++] = *in[i];
    }
    for (size_t i = 0; i < n; i++)
        out[i].tx.arg = &out[i];
    return ones;
}

enum pg_pipe_outcome pg_pipe_run(struct pg_store *st, struct pg_call *calls, size_t n,
                                 const struct pg_unit *units, size_t nu)
{
    struct pg_bind binds[PG_GROUP_MAX];
    size_t bound = 0;
    struct pg_conn *c = NULL;
    enum store_result r = pg_pool_take(st, &c);
    if (r != STORE_OK) {
        for (size_t i = 0; i < n; i++)
            calls[i].call->result = r;
        atomic_fetch_add(&st->errors, n);
        return PG_PIPE_DONE;
    }
    pg_calls_clock(calls, n); /* the connection is theirs: the time they run at */
    for (; bound < nu; bound++) {
        struct pg_call *uc = &calls[units[bound].first];
        if (uc->one->bind(uc, units[bound].n, &binds[bound]) != 0)
            break;
    }
    if (bound < nu) {
        for (size_t u = 0; u < bound; u++)
            pg_bind_free(&binds[u]);
        pg_pool_give(st, c);
        return PG_PIPE_AGAIN; /* each call's own bind fails again, alone */
    }
    /* The statements the units bound are prepared outside the pipeline (a Parse skipped
     * after an error in it would leave one thought prepared that is not): whatever a call
     * binds is prepared, so none is ever sent unprepared. */
    for (size_t u = 0; u < nu && r == STORE_OK; u++)
        r = pg_prepare(c, binds[u].id, "prepare");
    int begin = 0; /* a transaction of the pipeline's own, for follow-ups inside it */
    for (size_t i = 0; i < n; i++)
        begin |= calls[i].in_tx;
    size_t sent = 0;
    if (r == STORE_OK && PQenterPipelineMode(c->db)) {
        if (begin && !PQsendQueryParams(c->db, "BEGIN", 0, NULL, NULL, NULL, NULL, 0))
            sent = nu + 1; /* none sent: the connection failed */
        for (; sent < nu; sent++) {
            if (pg_send(c, binds[sent].id, binds[sent].n, binds[sent].params) != 0)
                break;
        }
    } else {
        r = STORE_ERROR;
    }
    for (size_t u = 0; u < nu; u++)
        pg_bind_free(&binds[u]);
    if (r != STORE_OK) {
        pg_pool_give(st, c);
        return PG_PIPE_AGAIN;
    }
    if (sent != nu || !PQpipelineSync(c->db)) {
        /* Nothing was committed without a Sync: drop the connection, run them alone. */
        c->bad = 1;
        pg_pool_give(st, c);
        return PG_PIPE_AGAIN;
    }
    pg_conn_trip(c);
    struct store_news notes = {0};
    int rc = pipe_read(st, c, calls, units, nu, begin, &notes);
    if (rc == 0 && !PQexitPipelineMode(c->db))
        c->bad = 1; /* cannot happen: every result was read; the follow-ups then fail */
    if (rc == 0 && begin)
        rc = follow_in_tx(st, c, calls, n, &notes);
    if (rc != 0) {
        pipe_discard(calls, n);
        store_news_clear(&notes);
        if ((rc > 0 && (c->bad || PQexitPipelineMode(c->db))) || rc == -2) {
            if (rc > 0 && begin && !c->bad)
                pg_command(c, "ROLLBACK", "pipeline: rollback"); /* a failure marks c bad */
            pg_pool_give(st, c);
            return PG_PIPE_AGAIN;
        }
        c->bad = 1; /* unknown outcome: not run again */
        pg_pool_give(st, c);
        for (size_t i = 0; i < n; i++)
            calls[i].call->result = STORE_UNAVAILABLE;
        atomic_fetch_add(&st->errors, n);
        return PG_PIPE_DONE;
    }
    atomic_fetch_add(&st->commits, 1);
    atomic_fetch_add(&st->ops, n);
    pg_news_publish(st, &notes);
    store_news_clear(&notes);
    /* A call whose result is final is answered now, on nothing but the commit: not after the
     * reads below, nor after the calls of its group that run in a transaction after. */
    for (size_t i = 0; i < n; i++) {
        if (calls[i].call->result != STORE_OK || !calls[i].follow)
            pg_call_answer(&calls[i]);
    }
    /* The reads that decide the calls whose statement found nothing (a follow-up may also be a
     * transaction of its own on c: its news go out after it). */
    for (size_t i = 0; i < n; i++) {
        if (!calls[i].answered)
            calls[i].call->result = calls[i].one->follow(c, &calls[i], &notes);
    }
    pg_news_publish(st, &notes);
    store_news_clear(&notes);
    pg_pool_give(st, c);
    for (size_t i = 0; i < n; i++)
        pg_call_answer(&calls[i]);
    return PG_PIPE_DONE;
}
