/* The PostgreSQL store keeps as many write transactions in flight as the load needs, up to
 * its writers (--pg-writers, at most --pool-size less two): a call that waits on a row lock
 * holds up only its own transaction, the calls behind it start another, and the figures of
 * /metrics count the transactions in flight. Row locks taken from a connection of the test's
 * own hold the store's transactions, so the counts are deterministic. Needs JOBQ_TEST_PG_URL
 * (see test_pg_util.h). */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "job.h"
#include "pg_store.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define JOBS 3    /* jobs whose rows the test locks */
#define OTHERS 12 /* enqueues sent while they are held */

struct pending {
    struct store_call call;
    struct job_spec spec;
    struct job out;
    int created;
    int finished;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void on_done(struct store_call *call)
{
    struct pending *p = call->ctx;
    pthread_mutex_lock(&mu);
    p->finished = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void submit_enqueue(struct store *s, struct pending *p)
{
    memset(p, 0, sizeof *p);
    p->spec = (struct job_spec){.queue = "other",
                                .payload = "{}",
                                .run_at = T0,
                                .max_attempts = 5,
                                .max_runtime_seconds = JOB_NONE};
    p->call.kind = STORE_CALL_ENQUEUE;
    p->call.now = T0;
    p->call.enqueue = (struct store_enqueue_call){
        .specs = &p->spec, .n = 1, .out = &p->out, .created = &p->created};
    p->call.done = on_done;
    p->call.ctx = p;
    store_submit(s, &p->call);
}

static void submit_heartbeat(struct store *s, struct pending *p, const struct job *j)
{
    memset(p, 0, sizeof *p);
    p->call.kind = STORE_CALL_HEARTBEAT;
    p->call.now = T0;
    p->call.heartbeat = (struct store_heartbeat_call){
        .id = j->id, .token = j->lease_token, .lease_seconds = 60, .out = &p->out};
    p->call.done = on_done;
    p->call.ctx = p;
    store_submit(s, &p->call);
}

/* Wait at most ms for every call of p[0..n) to finish. Returns how many did. */
static int wait_finished(struct pending *p, int n, int ms)
{
    int64_t until = clock_mono_ms() + ms;
    int done = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        done = 0;
        for (int i = 0; i < n; i++)
            done += p[i].finished;
        if (done == n || clock_mono_ms() >= until)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&cv, &mu, &ts);
    }
    pthread_mutex_unlock(&mu);
    return done;
}

/* The store's transactions that wait on a lock, polled until there are `want` (at most 10 s).
 * Returns the last count seen. */
static int lock_waiters(int want)
{
    PGconn *c = PQconnectdb(db_url);
    int n = -1;
    for (int i = 0; i < 200 && n != want && PQstatus(c) == CONNECTION_OK; i++) {
        PGresult *r = PQexec(c, "SELECT count(*) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND wait_event_type = 'Lock'");
        n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : -1;
        PQclear(r);
        if (n != want)
            nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    PQfinish(c);
    return n;
}

/* A store of pool_size connections on a fresh database with JOBS running jobs in out[], and a
 * connection of the test's own holding their rows locked. 1, 0 (no cluster: skip) or -1. */
static int open_held(int pool_size, struct store **s, struct job *out, PGconn **hold)
{
    int made = fresh_db();
    if (made <= 0)
        return made;
    *s = open_pg_pool(pool_size);
    if (!*s)
        return -1;
    for (int i = 0; i < JOBS; i++) {
        struct job_spec sp = {.queue = "held",
                              .payload = "{}",
                              .run_at = T0,
                              .max_attempts = 5,
                              .max_runtime_seconds = JOB_NONE};
        struct job q;
        int created = 0;
        if (store_enqueue(*s, &sp, 1, T0, &q, &created) != STORE_OK)
            return -1;
        job_clear(&q);
        const char *queues[] = {"held"};
        struct claim_req req = {
            .worker_id = "w", .queues = queues, .nqueues = 1, .lease_seconds = 60, .max_jobs = 1};
        size_t n = 0;
        if (store_claim(*s, &req, T0, &out[i], &n) != STORE_OK || n != 1)
            return -1;
    }
    *hold = PQconnectdb(db_url);
    PGresult *r = PQexec(*hold, "BEGIN; SELECT id FROM jobq_jobs WHERE queue = 'held' FOR UPDATE");
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == JOBS;
    PQclear(r);
    return ok ? 1 : -1;
}

static void release(PGconn *hold)
{
    PQclear(PQexec(hold, "COMMIT"));
    PQfinish(hold);
}

static struct pg_exec_figures figures(struct store *s)
{
    struct pg_exec_figures f;
    pg_exec_figures(pg_store_of(s), &f);
    return f;
}

/* With one writer (the landed design before this test), the enqueues would wait for the
 * heartbeat held on its row lock: here they are answered while it is still held. */
TEST(a_write_held_on_a_row_lock_does_not_hold_up_the_others)
{
    struct store *s = NULL;
    struct job jobs[JOBS];
    PGconn *hold = NULL;
    int made = open_held(8, &s, jobs, &hold);
    CHECK(made >= 0);
    if (made == 0)
        return;
    CHECK_INT(figures(s).writers, 6);
    struct pending hb, others[OTHERS];
    submit_heartbeat(s, &hb, &jobs[0]);
    CHECK_INT(lock_waiters(1), 1);
    for (int i = 0; i < OTHERS; i++)
        submit_enqueue(s, &others[i]);
    CHECK_INT(wait_finished(others, OTHERS, 10000), OTHERS);
    CHECK_INT(hb.finished, 0); /* still held */
    for (int i = 0; i < OTHERS; i++) {
        CHECK_INT(others[i].call.result, STORE_OK);
        CHECK_INT(others[i].created, 1);
        job_clear(&others[i].out);
    }
    CHECK_INT(figures(s).inflight, 1); /* the held one */
    release(hold);
    CHECK_INT(wait_finished(&hb, 1, 10000), 1);
    CHECK_INT(hb.call.result, STORE_OK);
    job_clear(&hb.out);
    CHECK_INT(figures(s).inflight, 0);
    for (int i = 0; i < JOBS; i++)
        job_clear(&jobs[i]);
    store_close(s);
    drop_db();
}

/* Calls that each wait on a lock are each in a transaction of their own, in flight at once,
 * up to the writers the pool leaves (pool 4: 2); the rest queue. The in-flight integral grows
 * by about the time they were held. */
TEST(transactions_in_flight_follow_the_load_up_to_the_writers)
{
    struct store *s = NULL;
    struct job jobs[JOBS];
    PGconn *hold = NULL;
    int made = open_held(4, &s, jobs, &hold);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct pg_exec_figures before = figures(s);
    CHECK_INT(before.writers, 2);
    CHECK_INT(before.inflight, 0);
    struct pending hb[JOBS];
    for (int i = 0; i < JOBS; i++) {
        submit_heartbeat(s, &hb[i], &jobs[i]);
        CHECK_INT(lock_waiters(i < 2 ? i + 1 : 2), i < 2 ? i + 1 : 2);
    }
    nanosleep(&(struct timespec){0, 300 * 1000000L}, NULL); /* held: the integral grows */
    struct pg_exec_figures held = figures(s);
    CHECK_INT(held.inflight, 2);
    CHECK(held.inflight_us - before.inflight_us >= 2 * 250000);
    CHECK_INT(wait_finished(hb, JOBS, 0), 0);
    release(hold);
    CHECK_INT(wait_finished(hb, JOBS, 10000), JOBS);
    for (int i = 0; i < JOBS; i++) {
        CHECK_INT(hb[i].call.result, STORE_OK);
        job_clear(&hb[i].out);
        job_clear(&jobs[i]);
    }
    CHECK_INT(figures(s).inflight, 0);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(a_write_held_on_a_row_lock_does_not_hold_up_the_others),
          TEST_ENTRY(transactions_in_flight_follow_the_load_up_to_the_writers))
