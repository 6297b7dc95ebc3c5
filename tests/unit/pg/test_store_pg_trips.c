/* Round trips to PostgreSQL per call (pg_conn_trip counts them): a plain claim, an enqueue
 * and a claim that finds nothing on a queue without lanes each take one; only a queue with a
 * lane that may hold a job makes a claim look through the lanes. Needs JOBQ_TEST_PG_URL (see
 * test_pg_util.h). */
#include <stdatomic.h>
#include <string.h>

#include "job.h"
#include "pg_store.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

static uint64_t trips(struct store *s)
{
    return atomic_load(&pg_store_of(s)->trips);
}

/* Claim one job of queue on s: how many (0 or 1), or -1 on failure; the job's id in *id. */
static int claim(struct store *s, const char *queue, int64_t *id)
{
    const char *queues[] = {queue};
    struct claim_req req = {
        .worker_id = "w", .queues = queues, .nqueues = 1, .lease_seconds = 60, .max_jobs = 1};
    struct job j;
    size_t n = 0;
    if (store_claim(s, &req, T0, &j, &n) != STORE_OK)
        return -1;
    *id = n == 1 ? j.id : 0;
    if (n == 1)
        job_clear(&j);
    return (int)n;
}

/* A fresh database and a store with one writer on it (every call on the same connection):
 * 1 with *s open, 0 when there is no cluster (skip), -1 on failure. */
static int open_one_writer(struct store **s)
{
    int made = fresh_db();
    if (made <= 0)
        return made;
    *s = open_pg_pool(3);
    return *s ? 1 : -1;
}

TEST(plain_calls_and_an_empty_claim_take_one_round_trip)
{
    struct store *s = NULL;
    int made = open_one_writer(&s);
    CHECK(made >= 0);
    if (made <= 0)
        return;
    CHECK(enqueue_due(s, "warm", NULL) > 0); /* the connection made, its statements prepared */
    int64_t id = 0;
    CHECK_INT(claim(s, "plain", &id), 0);
    CHECK(enqueue_due(s, "plain", NULL) > 0);
    uint64_t t = trips(s);
    CHECK_INT(claim(s, "plain", &id), 1);
    CHECK_INT(trips(s) - t, 1);
    t = trips(s);
    CHECK_INT(claim(s, "plain", &id), 0); /* nothing left, and no lane: no second look */
    CHECK_INT(trips(s) - t, 1);
    t = trips(s);
    CHECK(enqueue_due(s, "plain", NULL) > 0);
    CHECK_INT(trips(s) - t, 1);
    store_close(s);
    drop_db();
}

/* A keyed job waits in its lane: the plain statement takes nothing, says a lane may hold one,
 * and the lanes' way claims it. */
TEST(a_claim_looks_through_the_lanes_only_when_one_may_hold_a_job)
{
    struct store *s = NULL;
    int made = open_one_writer(&s);
    CHECK(made >= 0);
    if (made <= 0)
        return;
    int64_t keyed = enqueue_due(s, "keyed", "k1");
    CHECK(keyed > 0);
    int64_t id = 0;
    CHECK_INT(claim(s, "keyed", &id), 0 + 1);
    CHECK_INT(id, keyed);
    uint64_t t = trips(s);
    CHECK_INT(claim(s, "keyed", &id), 0); /* the lane is empty now: one look, no more */
    CHECK_INT(trips(s) - t, 1);
    store_close(s);
    drop_db();
}

/* A claim of a queue whose last claim went through the lanes expects them: its candidates go
 * in its group's pipeline (with BEGIN), then the key's lock and state, the take with the
 * lane's next head, and one COMMIT for the group: four round trips, no statement that takes
 * nothing and no query after the commit. */
TEST(a_claim_that_expects_the_lanes_reads_them_in_its_pipeline)
{
    struct store *s = NULL;
    int made = open_one_writer(&s);
    CHECK(made >= 0);
    if (made <= 0)
        return;
    CHECK(enqueue_due(s, "keyed", "k1") > 0);
    int64_t second = enqueue_due(s, "keyed", "k2");
    CHECK(second > 0);
    int64_t id = 0;
    CHECK_INT(claim(s, "keyed", &id), 1); /* the first: the plain statement, then the lanes */
    uint64_t t = trips(s), commits = pg_store_of(s)->commits;
    CHECK_INT(claim(s, "keyed", &id), 1);
    CHECK_INT(id, second);
    CHECK_INT(trips(s) - t, 4);
    CHECK_INT(pg_store_of(s)->commits - commits, 1);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(plain_calls_and_an_empty_claim_take_one_round_trip),
          TEST_ENTRY(a_claim_that_expects_the_lanes_reads_them_in_its_pipeline),
          TEST_ENTRY(a_claim_looks_through_the_lanes_only_when_one_may_hold_a_job))
