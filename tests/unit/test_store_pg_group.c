/* The PostgreSQL store's group commit: calls queued together run in one transaction (one
 * BEGIN, one NOTIFY per queue, one COMMIT), each with its own result; a call that cannot share
 * the transaction (its statement failed) rolls the group back and every call runs alone, so
 * one bad call never takes the others down with it. The executor is held on a table lock
 * while the group queues up, so the grouping is deterministic. Needs JOBQ_TEST_PG_URL (see
 * test_pg_util.h). */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job.h"
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

static void submit_enqueue(struct store *s, struct pending *p, const char *payload)
{
    memset(p, 0, sizeof *p);
    p->spec.queue = "g";
    p->spec.payload = payload;
    p->spec.run_at = T0;
    p->spec.max_attempts = 5;
    p->spec.max_runtime_seconds = JOB_NONE;
    p->call.kind = STORE_CALL_ENQUEUE;
    p->call.now = T0;
    p->call.specs = &p->spec;
    p->call.nspecs = 1;
    p->call.out = &p->out;
    p->call.created = &p->created;
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

/* Hold the store's only executor on a table lock, queue calls p[1..n) behind the one it runs
 * (p[0]), then let go. payloads[i] is call i's payload. Returns 0, or -1. */
static int run_held(struct store *s, struct pending *p, const char *const *payloads, int n)
{
    PGconn *hold = PQconnectdb(db_url);
    PGresult *r = PQexec(hold, "BEGIN; LOCK TABLE jobq_jobs IN SHARE ROW EXCLUSIVE MODE");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (ok) {
        submit_enqueue(s, &p[0], payloads[0]);
        ok = someone_waits();
        for (int i = 1; i < n; i++)
            submit_enqueue(s, &p[i], payloads[i]);
    }
    r = PQexec(hold, "COMMIT");
    PQclear(r);
    PQfinish(hold);
    return ok && wait_all(p, n) == 0 ? 0 : -1;
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

TEST_MAIN(TEST_ENTRY(calls_queued_together_share_one_commit),
          TEST_ENTRY(a_call_that_fails_rolls_its_group_back_and_the_others_run_alone))
