/* Two PostgreSQL stores on one database, as two jobqd processes would be: a heartbeat races
 * the other store's sweeper expiring the same lease, and a zombie's fail races the other
 * store's new claim of the same job, a thousand times each. No interleaving may run a job
 * twice: a heartbeat that was answered OK kept its lease, and a stale token never changes a
 * job that another claim took. Needs JOBQ_TEST_PG_URL (a maintenance database of the test
 * cluster, scripts/pg_cluster.sh); without it the cases say so and pass, unless
 * JOBQ_REQUIRE_PG=1 (scripts/test.sh sets it). */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "log.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define ROUNDS 1000

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

enum op { OP_HEARTBEAT, OP_SWEEP, OP_FAIL, OP_CLAIM };

struct racer {
    pthread_t thread;
    pthread_barrier_t *start;
    struct store *s;
    enum op op;
    int64_t id, now;
    const char *token, *queue;
    enum store_result r;
    struct sweep_result sweep;
    struct job job;
    size_t n;
};

static void *race_main(void *arg)
{
    struct racer *x = arg;
    pthread_barrier_wait(x->start);
    struct fail_req f = {.retry = 1, .retry_in_seconds = -1};
    const char *queues[1] = {x->queue};
    struct claim_req req = {"worker-b", queues, 1, NULL, 10, 1};
    switch (x->op) {
    case OP_HEARTBEAT:
        x->r = store_heartbeat(x->s, x->id, x->token, 30, NULL, x->now, &x->job);
        break;
    case OP_SWEEP:
        x->r = store_sweep(x->s, x->now, 1000000000, 500, &x->sweep);
        break;
    case OP_FAIL:
        x->r = store_fail(x->s, x->id, x->token, &f, x->now, &x->job);
        break;
    case OP_CLAIM:
        x->r = store_claim(x->s, &req, x->now, &x->job, &x->n);
        break;
    }
    return NULL;
}

/* Run a and b at once. */
static void race(struct racer *a, struct racer *b)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    a->start = b->start = &start;
    pthread_create(&a->thread, NULL, race_main, a);
    pthread_create(&b->thread, NULL, race_main, b);
    pthread_join(a->thread, NULL);
    pthread_join(b->thread, NULL);
    pthread_barrier_destroy(&start);
}

/* Enqueue one job in queue at now and claim it on s with a 10 s lease: its id and token. */
static int64_t claimed(struct store *s, const char *queue, int64_t now, char *token)
{
    struct job_spec sp = {.queue = queue,
                          .payload = "1",
                          .run_at = now,
                          .max_attempts = 1000,
                          .max_runtime_seconds = JOB_NONE};
    struct job j;
    int created = 0;
    if (store_enqueue(s, &sp, 1, now, &j, &created) != STORE_OK)
        return -1;
    job_clear(&j);
    const char *queues[1] = {queue};
    struct claim_req req = {"worker-a", queues, 1, NULL, 10, 1};
    size_t n = 0;
    if (store_claim(s, &req, now, &j, &n) != STORE_OK || n != 1)
        return -1;
    snprintf(token, JOB_TOKEN_LEN + 1, "%s", j.lease_token);
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

TEST(heartbeat_races_expiry_on_another_store)
{
    struct store *a = NULL, *b = NULL;
    int made = open_pair(&a, &b);
    CHECK(made >= 0);
    if (made == 0)
        return;
    int kept = 0, expired = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t t = T0 + (int64_t)i * 100;
        char queue[32], token[JOB_TOKEN_LEN + 1];
        snprintf(queue, sizeof queue, "hb-%d", i);
        int64_t id = claimed(a, queue, t, token);
        CHECK(id > 0);
        /* The heartbeat comes at the last live second; the sweeper at the first dead one. */
        struct racer hb = {.s = a, .op = OP_HEARTBEAT, .id = id, .token = token, .now = t + 9};
        struct racer sw = {.s = b, .op = OP_SWEEP, .now = t + 10};
        race(&hb, &sw);
        CHECK_INT(sw.r, STORE_OK);
        struct job j;
        CHECK_INT(store_get(b, id, &j), STORE_OK);
        if (hb.r == STORE_OK) {
            /* Answered OK: the lease was extended and the sweeper left the job alone. */
            kept++;
            CHECK_INT(j.status, JOB_RUNNING);
            CHECK_INT(j.lease_expires_at, t + 9 + 30);
            job_clear(&hb.job);
        } else {
            expired++;
            CHECK_INT(hb.r, STORE_LEASE_LOST);
            CHECK_INT(j.status, JOB_QUEUED);
            CHECK_STR(j.error_code, "lease_expired");
        }
        job_clear(&j);
        CHECK_INT(store_cancel(a, id, t + 50, &j), STORE_OK); /* out of the next rounds */
        job_clear(&j);
    }
    fprintf(stderr, "heartbeat kept the lease %d times, expiry won %d times\n", kept, expired);
    CHECK(kept + expired == ROUNDS);
    store_close(a);
    store_close(b);
    drop_db();
}

TEST(stale_fail_races_a_new_claim_on_another_store)
{
    struct store *a = NULL, *b = NULL;
    int made = open_pair(&a, &b);
    CHECK(made >= 0);
    if (made == 0)
        return;
    int taken = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t t = T0 + (int64_t)i * 100;
        char queue[32], token[JOB_TOKEN_LEN + 1];
        snprintf(queue, sizeof queue, "fc-%d", i);
        int64_t id = claimed(a, queue, t, token);
        CHECK(id > 0);
        struct sweep_result sr;
        CHECK_INT(store_sweep(b, t + 10, 1000000000, 500, &sr), STORE_OK);
        CHECK_INT(sr.requeued, 1); /* the lease expired: the job is due again */
        /* The zombie fails with its old token while store b claims the job anew. */
        struct racer fail = {.s = a, .op = OP_FAIL, .id = id, .token = token, .now = t + 11};
        struct racer cl = {.s = b, .op = OP_CLAIM, .queue = queue, .now = t + 11};
        race(&fail, &cl);
        CHECK_INT(fail.r, STORE_LEASE_LOST);
        CHECK_INT(cl.r, STORE_OK);
        CHECK_INT(cl.n, 1);
        taken++;
        struct job j;
        CHECK_INT(store_get(a, id, &j), STORE_OK);
        CHECK_INT(j.status, JOB_RUNNING);
        CHECK_INT(j.fencing_token, 2);
        CHECK_STR(j.worker_id, "worker-b");
        job_clear(&j);
        /* The new owner's token holds the lease; the old one still cannot touch it. */
        CHECK_INT(store_complete(a, id, token, NULL, t + 12, &j), STORE_LEASE_LOST);
        CHECK_INT(store_complete(a, id, cl.job.lease_token, NULL, t + 12, &j), STORE_OK);
        job_clear(&j);
        job_clear(&cl.job);
    }
    CHECK_INT(taken, ROUNDS);
    store_close(a);
    store_close(b);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(heartbeat_races_expiry_on_another_store),
          TEST_ENTRY(stale_fail_races_a_new_claim_on_another_store))
