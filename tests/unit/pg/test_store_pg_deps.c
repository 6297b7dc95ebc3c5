/* Two PostgreSQL stores on one database, as two jobqd processes would be, change two
 * dependencies of one dependent D at once: retry and retry, retry and cancel (depend.h). A
 * connection of the test holds D's row lock while both calls run, until each has either
 * answered or waits for a lock, so that neither sees the other's commit before it has read
 * what it reads; then it lets go. Each re-evaluation of D must still see every dependency as
 * the other call left it: D ends as its dependencies say. Needs JOBQ_TEST_PG_URL (a
 * maintenance database of the test cluster, scripts/pg_cluster.sh); without it the cases say
 * so and pass, unless JOBQ_REQUIRE_PG=1 (scripts/test.sh sets it). */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job.h"
#include "log.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define ROUNDS 6           /* each round in its own queues: either call may take D's lock first */
#define LOCK_WAIT_MS 10000 /* how long both calls may take to block behind the held lock */

/* Two stores on a fresh database, as two processes. Returns 1 with *a and *b open, 0 when
 * there is no cluster (skip), -1 on failure. */
static int open_pair(struct store **a, struct store **b)
{
    int made = fresh_db();
    if (made <= 0)
        return made;
    *a = open_pg();
    *b = open_pg();
    if (*a && *b)
        return 1;
    store_close(*a);
    store_close(*b);
    return -1;
}

/* Enqueue one job of queue depending on deps[0..n) ("cancel"); its id, or -1. */
static int64_t enqueue_in(struct store *s, const char *queue, const int64_t *deps, size_t n,
                          int64_t now)
{
    struct job_dep d[2];
    for (size_t i = 0; i < n; i++)
        d[i] = (struct job_dep){.id = deps[i]};
    struct job_spec sp = {.queue = queue,
                          .payload = "1",
                          .run_at = now,
                          .max_attempts = 1,
                          .max_runtime_seconds = JOB_NONE,
                          .deps = n ? d : NULL,
                          .ndeps = n,
                          .on_dependency_failure = DEP_CANCEL};
    struct job j;
    int created = 0;
    if (store_enqueue(s, &sp, 1, now, &j, &created) != STORE_OK)
        return -1;
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

/* Claim the one job of queue on s and fail it for good (ok 0) or complete it (ok 1). Returns
 * its id, or -1. */
static int64_t end_one(struct store *s, const char *queue, int ok, int64_t now)
{
    const char *queues[1] = {queue};
    struct claim_req req = {"w", queues, 1, NULL, 30, 1};
    struct job j, out;
    size_t n = 0;
    if (store_claim(s, &req, now, &j, &n) != STORE_OK || n != 1)
        return -1;
    struct fail_req f = {.error_code = "boom", .retry = 0, .retry_in_seconds = -1};
    enum store_result r = ok ? store_complete(s, j.id, j.lease_token, NULL, now, &out)
                             : store_fail(s, j.id, j.lease_token, &f, now, &out);
    int64_t id = r == STORE_OK ? j.id : -1;
    job_clear(&j);
    if (r == STORE_OK)
        job_clear(&out);
    return id;
}

/* Job id's status and error_detail (into detail, "" when none) as store s reads it; -1 when
 * it cannot be read. */
static int status_detail(struct store *s, int64_t id, char *detail, size_t len)
{
    struct job j;
    if (store_get(s, id, &j) != STORE_OK)
        return -1;
    int st = (int)j.status;
    snprintf(detail, len, "%s", j.error_detail ? j.error_detail : "");
    job_clear(&j);
    return st;
}

/* A retry (cancel 0) or a cancel (cancel 1) of job id on store s, on a thread of its own. */
struct act {
    pthread_t thread;
    struct store *s;
    int cancel;
    int64_t id, now;
    enum store_result r;
    atomic_int done;
};

static void *act_main(void *arg)
{
    struct act *x = arg;
    struct job out;
    x->r = x->cancel ? store_cancel(x->s, x->id, x->now, &out)
                     : store_retry(x->s, x->id, x->now, &out);
    if (x->r == STORE_OK)
        job_clear(&out);
    atomic_store(&x->done, 1);
    return NULL;
}

static int64_t sql_count(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    int64_t v = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1
                    ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                    : -1;
    PQclear(res);
    return v;
}

static int sql_ok(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "%s: %s", sql, PQresultErrorMessage(res));
    PQclear(res);
    return ok;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run x and y at once while a connection of the test holds job d's row lock; let go once
 * each has answered or waits for a lock (at most LOCK_WAIT_MS), then wait for both. Returns
 * 1, or 0 when the lock could not be held or they never got there. */
static int race_behind(int64_t d, struct act *x, struct act *y)
{
    PGconn *holder = PQconnectdb(db_url), *watch = PQconnectdb(db_url);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT id FROM jobq_jobs WHERE id = %lld FOR UPDATE", (long long)d);
    int ok = PQstatus(holder) == CONNECTION_OK && PQstatus(watch) == CONNECTION_OK &&
             sql_ok(holder, "BEGIN") && sql_ok(holder, sql);
    struct act *both[2] = {x, y};
    int started = 0;
    for (; ok && started < 2; started++) {
        atomic_store(&both[started]->done, 0);
        pthread_create(&both[started]->thread, NULL, act_main, both[started]);
    }
    int there = 0;
    for (int64_t until = now_ms() + LOCK_WAIT_MS; ok && !there && now_ms() < until;) {
        /* Not on the holder: a transaction reads pg_stat_activity once. */
        int64_t waiting = sql_count(watch, "SELECT count(*) FROM pg_stat_activity WHERE datname "
                                           "= current_database() AND wait_event_type = 'Lock'");
        there = waiting + atomic_load(&x->done) + atomic_load(&y->done) >= 2;
        if (!there)
            usleep(2000);
    }
    if (!there)
        fprintf(stderr, "the two calls did not reach the held lock in %d ms\n", LOCK_WAIT_MS);
    if (ok)
        ok = sql_ok(holder, "COMMIT") && there;
    PQfinish(holder); /* lets go in any case, so that the threads end */
    PQfinish(watch);
    for (int i = 0; i < started; i++)
        pthread_join(both[i]->thread, NULL);
    return ok;
}

/* D depends on a and b; both failed for good (D cancelled by a). Retry a on one store and b
 * on the other at once: D is blocked again, and released when both succeed. */
TEST(two_retries_on_two_stores_release_the_dependent)
{
    struct store *s1 = NULL, *s2 = NULL;
    int made = open_pair(&s1, &s2);
    CHECK(made >= 0);
    if (made == 0)
        return;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t t = T0 + (int64_t)i * 100;
        char qa[16], qb[16], qd[16], detail[80];
        snprintf(qa, sizeof qa, "a%d", i);
        snprintf(qb, sizeof qb, "b%d", i);
        snprintf(qd, sizeof qd, "d%d", i);
        int64_t ab[2] = {enqueue_in(s1, qa, NULL, 0, t), enqueue_in(s1, qb, NULL, 0, t)};
        int64_t d = enqueue_in(s1, qd, ab, 2, t);
        CHECK(ab[0] > 0 && ab[1] > 0 && d > 0);
        CHECK_INT(end_one(s1, qa, 0, t + 1), ab[0]);
        CHECK_INT(end_one(s1, qb, 0, t + 2), ab[1]);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_CANCELLED);
        struct act x = {.s = s1, .id = ab[0], .now = t + 3};
        struct act y = {.s = s2, .id = ab[1], .now = t + 3};
        CHECK(race_behind(d, &x, &y));
        CHECK_INT(x.r, STORE_OK);
        CHECK_INT(y.r, STORE_OK);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_BLOCKED);
        CHECK_INT(end_one(s2, qa, 1, t + 4), ab[0]);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_BLOCKED);
        CHECK_INT(end_one(s1, qb, 1, t + 5), ab[1]);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_QUEUED);
    }
    store_close(s1);
    store_close(s2);
    drop_db();
}

/* D depends on a and b; a failed for good (D cancelled by a), b is queued. Retry a on one
 * store and cancel b on the other at once: D stays cancelled (by b), also once a succeeds. */
TEST(retry_and_cancel_on_two_stores_leave_the_dependent_cancelled)
{
    struct store *s1 = NULL, *s2 = NULL;
    int made = open_pair(&s1, &s2);
    CHECK(made >= 0);
    if (made == 0)
        return;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t t = T0 + (int64_t)i * 100;
        char qa[16], qb[16], qd[16], detail[80], want[80];
        snprintf(qa, sizeof qa, "a%d", i);
        snprintf(qb, sizeof qb, "b%d", i);
        snprintf(qd, sizeof qd, "d%d", i);
        int64_t ab[2] = {enqueue_in(s1, qa, NULL, 0, t), enqueue_in(s1, qb, NULL, 0, t)};
        int64_t d = enqueue_in(s1, qd, ab, 2, t);
        CHECK(ab[0] > 0 && ab[1] > 0 && d > 0);
        CHECK_INT(end_one(s1, qa, 0, t + 1), ab[0]);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_CANCELLED);
        struct act x = {.s = s1, .id = ab[0], .now = t + 2};
        struct act y = {.s = s2, .id = ab[1], .now = t + 2, .cancel = 1};
        CHECK(race_behind(d, &x, &y));
        CHECK_INT(x.r, STORE_OK);
        CHECK_INT(y.r, STORE_OK);
        CHECK_INT(end_one(s2, qa, 1, t + 3), ab[0]);
        snprintf(want, sizeof want, "\"dependency %lld did not succeed\"", (long long)ab[1]);
        CHECK_INT(status_detail(s1, d, detail, sizeof detail), JOB_CANCELLED);
        CHECK_STR(detail, want);
    }
    store_close(s1);
    store_close(s2);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(two_retries_on_two_stores_release_the_dependent),
          TEST_ENTRY(retry_and_cancel_on_two_stores_leave_the_dependent_cancelled))
