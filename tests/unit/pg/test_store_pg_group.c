/* The PostgreSQL store's group commit: calls queued together run in one transaction (one
 * BEGIN, one NOTIFY per queue, one COMMIT), each with its own result; a call that cannot share
 * the transaction (its statement failed) rolls the group back and every call runs alone, so
 * one bad call never takes the others down with it. The executor is held on a table lock
 * while the group queues up, so the grouping is deterministic. The jobs of a shared insert
 * are paired with their calls and elements by the element each row names, whatever order the
 * rows come in. Needs JOBQ_TEST_PG_URL (see test_pg_util.h). */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job.h"
#include "pg_store.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define CALLS 6

/* One asynchronous call and its completion. */
struct pending {
    struct store_call call;
    struct job_spec spec;
    struct job out;
    int created;
    int finished;
    struct claim_req claim; /* claims */
    const char *queues[1];
    struct job outs[4];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready_calls; /* on_ready hooks seen */

static void on_done(struct store_call *call)
{
    struct pending *p = call->ctx;
    pthread_mutex_lock(&mu);
    p->finished = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void on_ready(void *ctx, const char *queue)
{
    (void)ctx;
    (void)queue;
    pthread_mutex_lock(&mu);
    ready_calls++;
    pthread_mutex_unlock(&mu);
}

static void submit_enqueue_prio(struct store *s, struct pending *p, const char *payload,
                                const char *key, int32_t priority)
{
    memset(p, 0, sizeof *p);
    p->spec.idempotency_key = key;
    p->spec.queue = "g";
    p->spec.payload = payload;
    p->spec.priority = priority;
    p->spec.run_at = T0;
    p->spec.max_attempts = 5;
    p->spec.max_runtime_seconds = JOB_NONE;
    p->call.kind = STORE_CALL_ENQUEUE;
    p->call.now = T0;
    p->call.enqueue = (struct store_enqueue_call){
        .specs = &p->spec, .n = 1, .out = &p->out, .created = &p->created};
    p->call.done = on_done;
    p->call.ctx = p;
    store_submit(s, &p->call);
}

static void submit_enqueue_key(struct store *s, struct pending *p, const char *payload,
                               const char *key)
{
    submit_enqueue_prio(s, p, payload, key, 0);
}

static void submit_enqueue(struct store *s, struct pending *p, const char *payload)
{
    submit_enqueue_key(s, p, payload, NULL);
}

static void submit_claim(struct store *s, struct pending *p, const char *queue, int max_jobs,
                         const char *worker, int64_t lease)
{
    memset(p, 0, sizeof *p);
    p->queues[0] = queue;
    p->claim = (struct claim_req){.worker_id = worker,
                                  .queues = p->queues,
                                  .nqueues = 1,
                                  .lease_seconds = lease,
                                  .max_jobs = max_jobs};
    p->call.kind = STORE_CALL_CLAIM;
    p->call.now = T0;
    p->call.claim = (struct store_claim_call){.req = &p->claim, .out = p->outs};
    p->call.done = on_done;
    p->call.ctx = p;
    store_submit(s, &p->call);
}

/* A complete (json: the result) or heartbeat (json: the progress) of job id. */
static void submit_lease(struct store *s, struct pending *p, enum store_call_kind kind, int64_t id,
                         const char *token, int64_t lease, const char *json)
{
    memset(p, 0, sizeof *p);
    p->call.kind = kind;
    p->call.now = T0;
    if (kind == STORE_CALL_HEARTBEAT)
        p->call.heartbeat = (struct store_heartbeat_call){
            .id = id, .token = token, .lease_seconds = lease, .progress = json, .out = &p->out};
    else
        p->call.complete =
            (struct store_complete_call){.id = id, .token = token, .result = json, .out = &p->out};
    p->call.done = on_done;
    p->call.ctx = p;
    store_submit(s, &p->call);
}

/* Wait (at most 30 s) until every call of p[0..n) finished. Returns 0 or -1. */
static int wait_all(struct pending *p, int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&mu);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        while (!p[i].finished && rc == 0)
            rc = pthread_cond_timedwait(&cv, &mu, &until);
    }
    pthread_mutex_unlock(&mu);
    return rc == 0 ? 0 : -1;
}

/* 1 when some session of the database waits on a lock (the executor, held), polled for at
 * most 10 s; 0 when none did. */
static int someone_waits(void)
{
    PGconn *c = PQconnectdb(db_url);
    int found = 0;
    for (int i = 0; i < 200 && !found && PQstatus(c) == CONNECTION_OK; i++) {
        PGresult *r = PQexec(c, "SELECT count(*) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND wait_event_type = 'Lock'");
        found = PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) > 0;
        PQclear(r);
        if (!found)
            nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    PQfinish(c);
    return found;
}

/* Submit calls p[1..n) (the case's own). */
typedef void (*queue_fn)(struct store *s, struct pending *p, int n, void *arg);

/* Hold the store's only executor on a table lock, queue calls p[1..n) behind the one it runs
 * (p[0], an enqueue of payload0) with queue(s, p, n, arg), then let go. Returns 0, or -1. */
static int run_held_with(struct store *s, struct pending *p, const char *payload0, int n,
                         queue_fn queue, void *arg)
{
    PGconn *hold = PQconnectdb(db_url);
    PGresult *r = PQexec(hold, "BEGIN; LOCK TABLE jobq_jobs IN SHARE ROW EXCLUSIVE MODE");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok) {
        submit_enqueue(s, &p[0], payload0);
        ok = someone_waits();
        queue(s, p, n, arg);
    }
    r = PQexec(hold, "COMMIT");
    PQclear(r);
    PQfinish(hold);
    return ok && wait_all(p, n) == 0 ? 0 : -1;
}

static void queue_enqueues(struct store *s, struct pending *p, int n, void *arg)
{
    const char *const *payloads = arg;
    for (int i = 1; i < n; i++)
        submit_enqueue(s, &p[i], payloads[i]);
}

/* run_held_with for enqueues of payloads[i]. */
static int run_held(struct store *s, struct pending *p, const char *const *payloads, int n)
{
    return run_held_with(s, p, payloads[0], n, queue_enqueues, (void *)payloads);
}

static struct store *open_one_executor(void)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    log_set_level(LOG_ERROR); /* the poisoned insert below is logged as an error */
    o.url = db_url;
    o.pg.pool_size = 1; /* one executor thread */
    o.pg.checkout_ms = 5000;
    o.pg.statement_ms = 20000;
    o.pg.connect_timeout_s = 5;
    o.hooks.on_ready = on_ready;
    return store_open(&o);
}

/* A fresh database and a store on it with one executor: 1 with *s open, 0 when there is no
 * cluster (skip), -1 on failure. */
static int open_case(struct store **s)
{
    int made = fresh_db();
    if (made <= 0)
        return made;
    *s = open_one_executor();
    return *s ? 1 : -1;
}

TEST(calls_queued_together_share_one_commit)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct store_stats before, after;
    store_read_stats(s, &before);
    ready_calls = 0;
    struct pending p[CALLS];
    const char *payloads[CALLS] = {"0", "1", "2", "3", "4", "5"};
    CHECK_INT(run_held(s, p, payloads, CALLS), 0);
    store_read_stats(s, &after);
    for (int i = 0; i < CALLS; i++) {
        CHECK_INT(p[i].call.result, STORE_OK);
        CHECK_INT(p[i].created, 1);
        CHECK_STR(p[i].out.payload, payloads[i]);
        CHECK_INT(p[i].out.status, JOB_QUEUED);
        job_clear(&p[i].out);
    }
    /* The held call alone, then the five queued behind it in one transaction. */
    CHECK_INT(after.commits - before.commits, 2);
    CHECK_INT(after.ops - before.ops, CALLS);
    CHECK_INT(after.errors - before.errors, 0);
    CHECK_INT(ready_calls, 2); /* one hook per queue per commit */
    store_close(s);
    drop_db();
}

TEST(a_call_that_fails_rolls_its_group_back_and_the_others_run_alone)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    /* A statement that fails for one payload only. */
    CHECK_INT(pg_sql_on(db_url, "ALTER TABLE jobq_jobs ADD CONSTRAINT poison"
                                " CHECK (payload <> '\"poison\"')"),
              0);
    struct store_stats before, after;
    store_read_stats(s, &before);
    struct pending p[CALLS];
    const char *payloads[CALLS] = {"0", "1", "2", "\"poison\"", "4", "5"};
    CHECK_INT(run_held(s, p, payloads, CALLS), 0);
    store_read_stats(s, &after);
    for (int i = 0; i < CALLS; i++) {
        if (i == 3) {
            CHECK_INT(p[i].call.result, STORE_ERROR);
            continue;
        }
        CHECK_INT(p[i].call.result, STORE_OK);
        CHECK_STR(p[i].out.payload, payloads[i]);
        job_clear(&p[i].out);
    }
    /* Every good call committed once, alone, and nothing of the failed group remains. */
    CHECK_INT(after.commits - before.commits, CALLS - 1);
    CHECK_INT(after.ops - before.ops, CALLS - 1);
    struct job out[CALLS + 1];
    size_t n = 0;
    int more = 0;
    struct list_filter f = {.queue = "g", .status = -1, .limit = CALLS + 1};
    CHECK_INT(store_list(s, &f, out, &n, &more), STORE_OK);
    CHECK_INT(n, CALLS - 1);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    store_close(s);
    drop_db();
}

/* Log the statements that insert or update jobs from here on, with their transaction (a
 * statement trigger of the test's own): calls that share a statement run it once. Returns 0
 * or -1. */
static int log_statements(void)
{
    return pg_sql_on(db_url, "CREATE TABLE stmt_log (op text, tx bigint DEFAULT txid_current());"
                             "CREATE FUNCTION stmt_log_add() RETURNS trigger LANGUAGE plpgsql AS"
                             " $$ BEGIN INSERT INTO stmt_log VALUES (TG_OP); RETURN NULL; END $$;"
                             "CREATE TRIGGER stmt_log_t AFTER INSERT OR UPDATE ON jobq_jobs"
                             " FOR EACH STATEMENT EXECUTE FUNCTION stmt_log_add()");
}

/* The logged statements of op (what: "*"), or their transactions (what: "DISTINCT tx"). */
static int64_t logged(const char *what, const char *op)
{
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(%s) FROM stmt_log WHERE op = '%s'", what, op);
    int64_t n = -1;
    return pg_sql_value(db_url, sql, &n) == 0 ? n : -1;
}

static int64_t statements(const char *op)
{
    return logged("*", op);
}

static void enqueue_now(struct store *s, const char *queue, const char *payload, int priority,
                        const char *key, struct job *out)
{
    struct job_spec sp = {.queue = queue,
                          .payload = payload,
                          .priority = priority,
                          .run_at = T0,
                          .max_attempts = 5,
                          .max_runtime_seconds = JOB_NONE,
                          .idempotency_key = key};
    int created = 0;
    if (store_enqueue(s, &sp, 1, T0, out, &created) != STORE_OK)
        memset(out, 0, sizeof *out);
}

static void queue_keyed(struct store *s, struct pending *p, int n, void *arg)
{
    (void)arg;
    (void)n;
    submit_enqueue_key(s, &p[1], "1", "k");
    submit_enqueue_key(s, &p[2], "2", "k");   /* the same key in the same statement */
    submit_enqueue_key(s, &p[3], "3", "pre"); /* a key enqueued before */
    submit_enqueue(s, &p[4], "4");
    submit_enqueue(s, &p[5], "5");
}

TEST(enqueues_of_a_group_share_one_insert_each_with_its_own_answer)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct job pre;
    enqueue_now(s, "g", "\"pre\"", 0, "pre", &pre);
    CHECK(pre.id > 0);
    CHECK_INT(log_statements(), 0);
    struct pending p[6];
    CHECK_INT(run_held_with(s, p, "0", 6, queue_keyed, NULL), 0);
    CHECK_INT(statements("INSERT"), 2); /* the held call's, then one for the five */
    CHECK_INT(p[1].call.result, STORE_OK);
    CHECK_INT(p[1].created, 1);
    CHECK_STR(p[1].out.payload, "1");
    CHECK_INT(p[2].call.result, STORE_EXISTS);
    CHECK_INT(p[2].created, 0);
    CHECK_INT(p[2].out.id, p[1].out.id);
    CHECK_STR(p[2].out.payload, "1");
    CHECK_INT(p[3].call.result, STORE_EXISTS);
    CHECK_INT(p[3].out.id, pre.id);
    for (int i = 4; i < 6; i++) {
        CHECK_INT(p[i].call.result, STORE_OK);
        CHECK_INT(p[i].created, 1);
        CHECK_INT(p[i].out.payload[0], '0' + i);
    }
    CHECK(p[4].out.id != p[5].out.id && p[4].out.id != p[1].out.id);
    for (int i = 0; i < 6; i++)
        job_clear(&p[i].out);
    job_clear(&pre);
    store_close(s);
    drop_db();
}

/* 1 when out holds a new job of spec sp (queue, payload, priority, run_at, key). */
static int is_job_of(const struct job *out, const struct job_spec *sp)
{
    return out->id > 0 && strcmp(out->queue, sp->queue) == 0 &&
           strcmp(out->payload, sp->payload) == 0 && out->priority == sp->priority &&
           out->run_at == sp->run_at &&
           (sp->idempotency_key
                ? out->idempotency_key && strcmp(out->idempotency_key, sp->idempotency_key) == 0
                : !out->idempotency_key);
}

/* The rows of a batch's insert read in reverse (as a server may send them: RETURNING
 * promises no order) still answer each element with its own job: jobs that differ only in
 * priority and run_at, other queues, an idempotency hit on an older job and one on an
 * element of the same batch. */
TEST(a_batch_pairs_each_element_with_its_row_in_any_row_order)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct job pre;
    enqueue_now(s, "g", "\"pre\"", 0, "pre", &pre);
    CHECK(pre.id > 0);
    struct job_spec sp[7];
    for (int i = 0; i < 7; i++)
        sp[i] = (struct job_spec){.queue = "g",
                                  .payload = "\"same\"",
                                  .priority = i,
                                  .run_at = T0 + 10 * i,
                                  .max_attempts = 5,
                                  .max_runtime_seconds = JOB_NONE};
    sp[2].queue = "h";
    sp[2].payload = "\"other\"";
    sp[3].idempotency_key = "pre"; /* the job enqueued before */
    sp[4].idempotency_key = "k";
    sp[5].idempotency_key = "k"; /* element 4's */
    struct job out[7];
    int created[7];
    pg_enqueue_reverse_rows(1);
    enum store_result r = store_enqueue(s, sp, 7, T0, out, created);
    pg_enqueue_reverse_rows(0);
    CHECK_INT(r, STORE_OK);
    for (int i = 0; i < 7; i++) {
        CHECK_INT(created[i], i != 3 && i != 5);
        if (created[i])
            CHECK(is_job_of(&out[i], &sp[i]));
    }
    CHECK_INT(out[3].id, pre.id);
    CHECK_INT(out[5].id, out[4].id);
    /* New ids follow the order of the elements (the claim order of equal jobs). */
    CHECK(out[0].id < out[1].id && out[1].id < out[2].id && out[2].id < out[4].id &&
          out[4].id < out[6].id);
    for (int i = 0; i < 7; i++) {
        struct job got;
        CHECK_INT(store_get(s, out[i].id, &got), STORE_OK);
        CHECK_INT(got.priority, out[i].priority);
        CHECK_INT(got.run_at, out[i].run_at);
        job_clear(&got);
        job_clear(&out[i]);
    }
    job_clear(&pre);
    store_close(s);
    drop_db();
}

static void queue_prioritized(struct store *s, struct pending *p, int n, void *arg)
{
    (void)arg;
    for (int i = 1; i < n; i++)
        submit_enqueue_prio(s, &p[i], "\"same\"", NULL, 10 * i);
}

/* Enqueue calls that share one insert get their own rows when the rows are read in reverse,
 * though nothing but the priority tells their jobs apart. */
TEST(calls_that_share_an_insert_get_their_own_rows_in_any_row_order)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    CHECK_INT(log_statements(), 0);
    struct pending p[CALLS];
    pg_enqueue_reverse_rows(1);
    int rc = run_held_with(s, p, "0", CALLS, queue_prioritized, NULL);
    pg_enqueue_reverse_rows(0);
    CHECK_INT(rc, 0);
    CHECK_INT(statements("INSERT"), 2); /* the held call's, then one for the others */
    for (int i = 1; i < CALLS; i++) {
        CHECK_INT(p[i].call.result, STORE_OK);
        CHECK_INT(p[i].created, 1);
        CHECK(is_job_of(&p[i].out, &p[i].spec));
        CHECK(i == 1 || p[i].out.id > p[i - 1].out.id);
    }
    for (int i = 0; i < CALLS; i++)
        job_clear(&p[i].out);
    store_close(s);
    drop_db();
}

static void queue_claims(struct store *s, struct pending *p, int n, void *arg)
{
    (void)arg;
    (void)n;
    submit_claim(s, &p[1], "g", 2, "a", 30);
    submit_claim(s, &p[2], "g", 1, "b", 60);
    submit_claim(s, &p[3], "g", 2, "c", 90);
    submit_claim(s, &p[4], "other", 1, "d", 30); /* other queues: a statement of its own */
}

TEST(claims_of_a_group_share_one_statement_in_claim_order)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    for (int i = 0; i < 6; i++) {
        struct job j;
        char payload[8];
        snprintf(payload, sizeof payload, "%d", 60 - 10 * i);
        enqueue_now(s, "g", payload, 60 - 10 * i, NULL, &j);
        CHECK(j.id > 0);
        job_clear(&j);
    }
    CHECK_INT(log_statements(), 0);
    struct pending p[5];
    CHECK_INT(run_held_with(s, p, "0", 5, queue_claims, NULL), 0);
    CHECK_INT(statements("UPDATE"), 2);
    const struct {
        size_t n;
        int first_priority;
        const char *worker;
        int64_t lease;
    } want[5] = {
        {0, 0, NULL, 0}, {2, 60, "a", 30}, {1, 40, "b", 60}, {2, 30, "c", 90}, {0, 0, NULL, 0}};
    const char *tokens[5] = {0};
    size_t ntokens = 0;
    for (int i = 1; i < 5; i++) {
        CHECK_INT(p[i].call.result, STORE_OK);
        CHECK_INT(p[i].call.claim.n, want[i].n);
        for (size_t k = 0; k < p[i].call.claim.n && k < want[i].n; k++) {
            const struct job *j = &p[i].outs[k];
            CHECK_INT(j->priority, want[i].first_priority - 10 * (int)k);
            CHECK_STR(j->worker_id, want[i].worker);
            CHECK_INT(j->lease_expires_at, T0 + want[i].lease);
            CHECK_INT(j->status, JOB_RUNNING);
            CHECK(j->lease_token != NULL);
            for (size_t t = 0; t < ntokens && j->lease_token; t++)
                CHECK(strcmp(tokens[t], j->lease_token) != 0);
            if (j->lease_token && ntokens < 5)
                tokens[ntokens++] = j->lease_token;
        }
    }
    for (int i = 0; i < 5; i++) {
        for (size_t k = 0; k < p[i].call.claim.n && k < 4; k++)
            job_clear(&p[i].outs[k]);
        job_clear(&p[i].out);
    }
    store_close(s);
    drop_db();
}

static void queue_mixed_claims(struct store *s, struct pending *p, int n, void *arg)
{
    (void)arg;
    for (int i = 1; i < n; i++)
        submit_claim(s, &p[i], i % 2 ? "plain" : "keyed", 1, i % 2 ? "a" : "b", 30);
}

/* Keyed claims (their queue has lanes: the plain statement takes nothing there) go through
 * the lanes inside the group's transaction, beside the plain claims: the group commits once,
 * and the key's max_running holds inside it. The queue's first claim went the lanes' way,
 * so the next ones expect to. */
TEST(keyed_claims_commit_with_the_plain_ones_of_their_group)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct limit lim = {.key = "k1", .max_running = 1}, out;
    CHECK_INT(store_limit_put(s, &lim, T0, &out), STORE_OK);
    CHECK(enqueue_due(s, "keyed", "k0") > 0);
    CHECK(enqueue_due(s, "keyed", "k1") > 0);
    CHECK(enqueue_due(s, "keyed", "k1") > 0);
    CHECK(enqueue_due(s, "keyed", "k2") > 0);
    for (int i = 0; i < 3; i++)
        CHECK(enqueue_due(s, "plain", NULL) > 0);
    struct pending first;
    submit_claim(s, &first, "keyed", 1, "w", 30); /* k0's job, through the lanes */
    CHECK_INT(wait_all(&first, 1), 0);
    CHECK_INT(first.call.claim.n, 1);
    job_clear(&first.outs[0]);
    CHECK_INT(log_statements(), 0);
    struct store_stats before, after;
    store_read_stats(s, &before);
    struct pending p[7]; /* the held enqueue, then three plain and three keyed claims */
    CHECK_INT(run_held_with(s, p, "0", 7, queue_mixed_claims, NULL), 0);
    store_read_stats(s, &after);
    /* The held enqueue alone, then one transaction for the six claims: every claim's update
     * (the plain statement's, each take of a lane's head) in it. */
    CHECK_INT(after.commits - before.commits, 2);
    CHECK_INT(after.ops - before.ops, 7);
    CHECK_INT(logged("DISTINCT tx", "UPDATE"), 1);
    int64_t got[2] = {0, 0};
    for (int i = 1; i < 7; i++) {
        CHECK_INT(p[i].call.result, STORE_OK);
        if (i % 2)
            CHECK_INT(p[i].call.claim.n, 1);
        for (size_t k = 0; k < p[i].call.claim.n; k++) {
            const char *key = p[i].outs[k].concurrency_key;
            got[0] += i % 2 == 0 && key && strcmp(key, "k1") == 0;
            got[1] += i % 2 == 0 && key && strcmp(key, "k2") == 0;
            job_clear(&p[i].outs[k]);
        }
    }
    CHECK_INT(got[0], 1); /* k1 runs one at a time: its second job waits */
    CHECK_INT(got[1], 1);
    job_clear(&p[0].out);
    store_close(s);
    drop_db();
}

struct leases {
    struct job jobs[4];
};

static void queue_lease_calls(struct store *s, struct pending *p, int n, void *arg)
{
    (void)n;
    struct leases *l = arg;
    submit_lease(s, &p[1], STORE_CALL_COMPLETE, l->jobs[0].id, l->jobs[0].lease_token, 0, "1");
    submit_lease(s, &p[2], STORE_CALL_COMPLETE, l->jobs[1].id, "stale-token", 0, "2");
    /* the same job again: a statement of its own after the first, an idempotent repeat */
    submit_lease(s, &p[3], STORE_CALL_COMPLETE, l->jobs[0].id, l->jobs[0].lease_token, 0, "1");
    submit_lease(s, &p[4], STORE_CALL_HEARTBEAT, l->jobs[2].id, l->jobs[2].lease_token, 100, NULL);
    submit_lease(s, &p[5], STORE_CALL_HEARTBEAT, l->jobs[3].id, l->jobs[3].lease_token, 0,
                 "{\"p\":1}");
}

TEST(completes_and_heartbeats_of_a_group_share_statements)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    for (int i = 0; i < 4; i++) {
        struct job j;
        enqueue_now(s, "g", "0", 0, NULL, &j);
        job_clear(&j);
    }
    struct leases l;
    const char *q[1] = {"g"};
    struct claim_req req = {
        .worker_id = "w", .queues = q, .nqueues = 1, .lease_seconds = 30, .max_jobs = 4};
    size_t n = 0;
    CHECK_INT(store_claim(s, &req, T0, l.jobs, &n), STORE_OK);
    CHECK_INT(n, 4);
    if (n != 4)
        return;
    CHECK_INT(log_statements(), 0);
    struct pending p[6];
    CHECK_INT(run_held_with(s, p, "0", 6, queue_lease_calls, &l), 0);
    CHECK_INT(statements("UPDATE"), 3); /* complete x2, the repeat, heartbeat x2 */
    CHECK_INT(p[1].call.result, STORE_OK);
    CHECK_INT(p[1].call.complete.repeated, 0);
    CHECK_INT(p[1].out.status, JOB_SUCCEEDED);
    CHECK_STR(p[1].out.result, "1");
    CHECK_INT(p[2].call.result, STORE_LEASE_LOST);
    CHECK_INT(p[3].call.result, STORE_OK);
    CHECK_INT(p[3].call.complete.repeated, 1);
    CHECK_INT(p[4].call.result, STORE_OK);
    CHECK_INT(p[4].out.lease_expires_at, T0 + 100);
    CHECK(p[4].out.progress == NULL);
    CHECK_INT(p[5].call.result, STORE_OK);
    CHECK_INT(p[5].out.lease_expires_at, T0 + 30);
    CHECK_STR(p[5].out.progress, "{\"p\":1}");
    /* The statement trigger ended job 0's attempt and left the others running. */
    struct job_attempt *a = NULL;
    size_t na = 0;
    CHECK_INT(store_attempts(s, l.jobs[0].id, &a, &na), STORE_OK);
    CHECK_INT(na, 1);
    if (na == 1)
        CHECK_INT(a[0].outcome, ATTEMPT_SUCCEEDED);
    job_attempts_free(a, na);
    CHECK_INT(store_attempts(s, l.jobs[2].id, &a, &na), STORE_OK);
    CHECK_INT(na, 1);
    if (na == 1)
        CHECK_INT(a[0].outcome, ATTEMPT_RUNNING);
    job_attempts_free(a, na);
    for (int i = 0; i < 6; i++)
        job_clear(&p[i].out);
    for (int i = 0; i < 4; i++)
        job_clear(&l.jobs[i]);
    store_close(s);
    drop_db();
}

/* Count rows whose backend ended (a shard is a pid), polled for at most 10 s until want. */
static int64_t ended_count_rows(int64_t want)
{
    int64_t n = -1;
    for (int i = 0; i < 200; i++) {
        if (pg_sql_value(db_url,
                         "SELECT count(*) FROM jobq_counts WHERE shard <> 0 AND shard NOT IN"
                         " (SELECT pid FROM pg_stat_activity)",
                         &n) != 0 ||
            n == want)
            break;
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    return n;
}

TEST(counts_of_ended_connections_fold_into_one_row)
{
    struct store *s = NULL;
    int made = open_case(&s);
    CHECK(made >= 0);
    if (made == 0)
        return;
    for (int i = 0; i < 3; i++) {
        struct job j;
        enqueue_now(s, "g", "0", 0, NULL, &j);
        job_clear(&j);
    }
    store_close(s); /* its connections end, their count rows stay */
    CHECK_INT(ended_count_rows(1), 1);
    s = open_one_executor();
    CHECK(s != NULL);
    if (!s)
        return;
    struct sweep_result res;
    CHECK_INT(store_sweep(s, T0, 3600, 100, &res), STORE_OK);
    CHECK_INT(ended_count_rows(0), 0);
    int64_t folded = -1;
    CHECK_INT(
        pg_sql_value(db_url, "SELECT n FROM jobq_counts WHERE shard = 0 AND queue = 'g'", &folded),
        0);
    CHECK_INT(folded, 3);
    struct queue_stats *q = NULL;
    size_t nq = 0;
    CHECK_INT(store_queues(s, T0, &q, &nq), STORE_OK);
    CHECK_INT(nq, 1);
    if (nq == 1)
        CHECK_INT(q[0].count[JOB_QUEUED], 3);
    queue_stats_free(q, nq);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(calls_queued_together_share_one_commit),
          TEST_ENTRY(a_call_that_fails_rolls_its_group_back_and_the_others_run_alone),
          TEST_ENTRY(enqueues_of_a_group_share_one_insert_each_with_its_own_answer),
          TEST_ENTRY(a_batch_pairs_each_element_with_its_row_in_any_row_order),
          TEST_ENTRY(calls_that_share_an_insert_get_their_own_rows_in_any_row_order),
          TEST_ENTRY(claims_of_a_group_share_one_statement_in_claim_order),
          TEST_ENTRY(completes_and_heartbeats_of_a_group_share_statements),
          TEST_ENTRY(keyed_claims_commit_with_the_plain_ones_of_their_group),
          TEST_ENTRY(counts_of_ended_connections_fold_into_one_row))
