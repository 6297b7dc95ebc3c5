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

#define JOBS 3     /* jobs whose rows the test locks */
#define OTHERS 12  /* enqueues sent while they are held */
#define HELD_MAX 8 /* heartbeats held at most: the pool's size */

struct pending {
    struct store_call call;
    struct job_spec spec;
    struct job out;
    int created;
    int finished;
    struct limit limit, limit_out; /* limit puts */
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

/* A limit put of key k1 (a call that is not one statement: it runs in a transaction after
 * its group's pipeline). */
static void submit_limit_put(struct store *s, struct pending *p)
{
    memset(p, 0, sizeof *p);
    p->limit = (struct limit){.key = "k1", .max_running = 2};
    p->call.kind = STORE_CALL_LIMIT_PUT;
    p->call.now = T0;
    p->call.limit_put = (struct store_limit_put_call){.limit = &p->limit, .out = &p->limit_out};
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

/* The store's transactions that wait on a lock, polled until there are `want` (at most ms).
 * Returns the last count seen. */
static int lock_waiters_within(int want, int ms)
{
    PGconn *c = PQconnectdb(db_url);
    int n = -1;
    int64_t until = clock_mono_ms() + ms;
    while (PQstatus(c) == CONNECTION_OK) {
        PGresult *r = PQexec(c, "SELECT count(*) FROM pg_stat_activity"
                                " WHERE datname = current_database() AND wait_event_type = 'Lock'");
        n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : -1;
        PQclear(r);
        if (n == want || clock_mono_ms() >= until)
            break;
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    }
    PQfinish(c);
    return n;
}

/* lock_waiters_within(want, 10 s). */
static int lock_waiters(int want)
{
    return lock_waiters_within(want, 10000);
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

/* Wait at most 5 s for s to have `want` groups in flight (a writer counts its group out just
 * after the calls' done). Returns the last count seen. */
static int inflight_becomes(struct store *s, int want)
{
    int64_t until = clock_mono_ms() + 5000;
    int n = figures(s).inflight;
    while (n != want && clock_mono_ms() < until) {
        nanosleep(&(struct timespec){0, 5 * 1000000L}, NULL);
        n = figures(s).inflight;
    }
    return n;
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
    CHECK_INT(inflight_becomes(s, 1), 1); /* the held one */
    release(hold);
    CHECK_INT(wait_finished(&hb, 1, 10000), 1);
    CHECK_INT(hb.call.result, STORE_OK);
    job_clear(&hb.out);
    CHECK_INT(inflight_becomes(s, 0), 0);
    for (int i = 0; i < JOBS; i++)
        job_clear(&jobs[i]);
    store_close(s);
    drop_db();
}

/* A lock held by another session: BEGIN; sql. NULL when it could not be taken. */
static PGconn *hold_lock(const char *sql)
{
    PGconn *c = PQconnectdb(db_url);
    PGresult *r = PQexec(c, "BEGIN");
    PQclear(r);
    r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* A group of one-statement calls and a call that is not (a limit put): the pipeline's calls
 * are answered at its commit, not after the limit put's transaction, held here on a table
 * lock. */
TEST(a_call_is_answered_at_its_commit_not_after_the_rest_of_its_group)
{
    int made = fresh_db();
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct store *s = open_pg_pool(3); /* one writer: the group is deterministic */
    CHECK(s != NULL);
    if (!s)
        return;
    PGconn *jobs = hold_lock("LOCK TABLE jobq_jobs IN SHARE ROW EXCLUSIVE MODE");
    PGconn *limits = hold_lock("LOCK TABLE jobq_limits IN EXCLUSIVE MODE");
    CHECK(jobs != NULL && limits != NULL);
    struct pending first, group[2];
    submit_enqueue(s, &first);
    CHECK_INT(lock_waiters(1), 1); /* the writer, held: the group queues behind it */
    submit_enqueue(s, &group[0]);
    submit_limit_put(s, &group[1]);
    release(jobs);
    CHECK_INT(wait_finished(group, 1, 10000), 1); /* the enqueue, while the put is held */
    CHECK_INT(lock_waiters(1), 1);
    CHECK_INT(group[1].finished, 0);
    CHECK_INT(group[0].call.result, STORE_OK);
    CHECK_INT(group[0].created, 1);
    release(limits);
    CHECK_INT(wait_finished(&group[1], 1, 10000), 1);
    CHECK_INT(group[1].call.result, STORE_OK);
    CHECK_INT(first.call.result, STORE_OK);
    job_clear(&first.out);
    job_clear(&group[0].out);
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
    CHECK_INT(inflight_becomes(s, 0), 0);
    store_close(s);
    drop_db();
}

/* The connections of role (on every database) now. */
static int64_t role_conns(const char *role)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM pg_stat_activity WHERE usename = '%s'", role);
    int64_t n = -1;
    return pg_sql_value(NULL, sql, &n) == 0 ? n : -1;
}

/* When the server refuses more connections (other clients took max_connections; here the
 * role's CONNECTION LIMIT, which a superuser would not be held to), the calls that wanted a
 * new one wait for the open one instead of failing, and the pool grows again once the server
 * lets it. */
TEST(calls_wait_for_an_open_connection_when_the_server_refuses_more)
{
    int made = fresh_db();
    CHECK(made >= 0);
    if (made == 0)
        return;
    char role[96], sql[512], url[1024];
    snprintf(role, sizeof role, "%s_lim", db_name);
    snprintf(sql, sizeof sql, "DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN", role, role);
    CHECK_INT(admin_sql(sql), 0);
    snprintf(sql, sizeof sql,
             "GRANT ALL ON SCHEMA public TO %s; GRANT ALL ON ALL TABLES IN SCHEMA public TO %s;"
             "GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s",
             role, role, role);
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    /* db_url names user=jobq (the cluster's superuser): the store logs in as the role. */
    const char *user = strstr(db_url, "user=");
    CHECK(user != NULL);
    if (!user)
        return;
    const char *after = strchr(user, '&');
    snprintf(url, sizeof url, "%.*suser=%s%s", (int)(user - db_url), db_url, role,
             after ? after : "");
    struct store_options o;
    memset(&o, 0, sizeof o);
    o.url = url;
    o.pg.pool_size = 8;
    o.pg.checkout_ms = 10000;
    o.pg.statement_ms = 30000; /* a held heartbeat outlasts the pool's growing again */
    o.pg.connect_timeout_s = 5;
    struct store *s = store_open(&o);
    CHECK(s != NULL);
    if (!s)
        return;
    struct job_spec sp = {.queue = "held",
                          .payload = "{}",
                          .run_at = T0,
                          .max_attempts = 5,
                          .max_runtime_seconds = JOB_NONE};
    struct job q, j;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &q, &created), STORE_OK);
    const char *queues[] = {"held"};
    struct claim_req req = {
        .worker_id = "w", .queues = queues, .nqueues = 1, .lease_seconds = 60, .max_jobs = 1};
    size_t n = 0;
    CHECK_INT(store_claim(s, &req, T0, &j, &n), STORE_OK);
    CHECK_INT(n, 1);
    /* The server takes no more connections of the role than it has now: the listener's and
     * those the pool opened so far (one or more, as the pool saw fit). */
    int64_t open = role_conns(role);
    CHECK(open >= 1);
    snprintf(sql, sizeof sql, "ALTER ROLE %s CONNECTION LIMIT %lld", role, (long long)open);
    CHECK_INT(admin_sql(sql), 0);
    PGconn *hold = PQconnectdb(db_url);
    PGresult *r = PQexec(hold, "BEGIN; SELECT id FROM jobq_jobs WHERE queue = 'held' FOR UPDATE");
    CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
    PQclear(r);
    /* Heartbeats of the locked job, one at a time, each held on the row lock on a pooled
     * connection of its own, until one finds no connection free and none to be had: it waits
     * for one, and never reaches the lock. */
    struct pending hb[HELD_MAX], others[OTHERS];
    int held = 0;
    while (held < HELD_MAX) {
        submit_heartbeat(s, &hb[held], &j);
        held++;
        if (lock_waiters_within(held, 1500) != held)
            break;
    }
    CHECK(held >= 2 && held < HELD_MAX);
    CHECK_INT(lock_waiters_within(held - 1, 0), held - 1);
    for (int i = 0; i < OTHERS; i++)
        submit_enqueue(s, &others[i]);
    /* They want a group of their own, cannot have a connection for it, and wait. */
    CHECK_INT(wait_finished(others, OTHERS, 1500), 0);
    CHECK_INT(wait_finished(hb, held, 0), 0);
    release(hold);
    CHECK_INT(wait_finished(hb, held, 10000), held);
    for (int i = 0; i < held; i++) {
        CHECK_INT(hb[i].call.result, STORE_OK);
        job_clear(&hb[i].out);
    }
    CHECK_INT(wait_finished(others, OTHERS, 10000), OTHERS);
    for (int i = 0; i < OTHERS; i++) {
        CHECK_INT(others[i].call.result, STORE_OK);
        job_clear(&others[i].out);
    }
    CHECK(role_conns(role) <= open);
    /* The server lets more in again: the pool grows when the load asks (a second later). */
    snprintf(sql, sizeof sql, "ALTER ROLE %s CONNECTION LIMIT -1", role);
    CHECK_INT(admin_sql(sql), 0);
    nanosleep(&(struct timespec){1, 100 * 1000000L}, NULL);
    hold = PQconnectdb(db_url);
    PQclear(PQexec(hold, "BEGIN; SELECT id FROM jobq_jobs WHERE queue = 'held' FOR UPDATE"));
    /* Every pooled connection held again, as above: the enqueues open one more. */
    for (int i = 0; i < held - 1; i++) {
        submit_heartbeat(s, &hb[i], &j);
        CHECK_INT(lock_waiters(i + 1), i + 1);
    }
    for (int i = 0; i < OTHERS; i++)
        submit_enqueue(s, &others[i]);
    /* On a new connection, once the pool may grow again and the executor starts their group
     * beside the held ones (seconds, after groups held this long). */
    CHECK_INT(wait_finished(others, OTHERS, 25000), OTHERS);
    CHECK(role_conns(role) > open);
    release(hold);
    CHECK_INT(wait_finished(hb, held - 1, 10000), held - 1);
    for (int i = 0; i < OTHERS; i++)
        job_clear(&others[i].out);
    for (int i = 0; i < held - 1; i++)
        job_clear(&hb[i].out);
    job_clear(&q);
    job_clear(&j);
    store_close(s);
    drop_db();
    snprintf(sql, sizeof sql, "DROP ROLE IF EXISTS %s", role);
    admin_sql(sql);
}

/* The round trip that decides when groups overlap: the least of the last PG_RTT_SAMPLES
 * measured, so one slow exchange does not count and a link that changed counts once the old
 * samples are out. */
TEST(the_round_trip_is_the_least_of_the_last_samples)
{
    static struct pg_store st; /* zeroed: no sample yet */
    pg_rtt_record(&st, 900);
    CHECK_INT(atomic_load(&st.rtt_us), 900);
    pg_rtt_record(&st, 5000); /* a busy server answers late */
    CHECK_INT(atomic_load(&st.rtt_us), 900);
    pg_rtt_record(&st, 40);
    CHECK_INT(atomic_load(&st.rtt_us), 40);
    for (int i = 0; i < PG_RTT_SAMPLES; i++) /* the link became 1 ms slower */
        pg_rtt_record(&st, 1040 + i);
    CHECK_INT(atomic_load(&st.rtt_us), 1040);
    pg_rtt_record(&st, -3); /* a clock that went back counts as the least possible */
    CHECK_INT(atomic_load(&st.rtt_us), 1);
}

/* Besides the exchange at each connect, the listener times a round trip once a second. */
TEST(the_listener_measures_the_round_trip_every_second)
{
    int made = fresh_db();
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct store *s = open_pg_pool(2);
    CHECK(s != NULL);
    if (!s)
        return;
    struct pg_store *st = (struct pg_store *)s;
    unsigned n0 = atomic_load(&st->rtt_n);
    CHECK(n0 >= 1); /* the connect's */
    int64_t until = clock_mono_ms() + 5000;
    while (atomic_load(&st->rtt_n) < n0 + 2 && clock_mono_ms() < until)
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    CHECK(atomic_load(&st->rtt_n) >= n0 + 2); /* two probes within 5 s */
    CHECK(atomic_load(&st->rtt_us) > 0);
    CHECK(atomic_load(&st->rtt_us) < 1000000);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(a_write_held_on_a_row_lock_does_not_hold_up_the_others),
          TEST_ENTRY(a_call_is_answered_at_its_commit_not_after_the_rest_of_its_group),
          TEST_ENTRY(transactions_in_flight_follow_the_load_up_to_the_writers),
          TEST_ENTRY(calls_wait_for_an_open_connection_when_the_server_refuses_more),
          TEST_ENTRY(the_round_trip_is_the_least_of_the_last_samples),
          TEST_ENTRY(the_listener_measures_the_round_trip_every_second))
