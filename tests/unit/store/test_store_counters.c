/* What the store counts (counters.h) for the writes that committed and for the leases its
 * sweep ended, on SQLite and on PostgreSQL (test_store_util.h). */
#include "test_counters_util.h"
#include "test_store_util.h"

/* Enqueue one job of queue with max_attempts and max_runtime, and claim it (lease 30 s) at
 * T0 into *c. Returns its id, or -1. */
static int64_t claimed(struct store *s, const char *queue, int64_t max_attempts,
                       int64_t max_runtime, struct job *c)
{
    struct job_spec sp = spec_of(queue, 0, T0);
    sp.max_attempts = max_attempts;
    sp.max_runtime_seconds = max_runtime;
    int64_t id = enqueue_spec(s, &sp, T0);
    if (id < 0 || claim_one(s, queue, T0, c) != id)
        return -1;
    return id;
}

TEST(writes_are_counted_when_committed)
{
    counters_reset();
    struct store *s = open_store();
    CHECK(s != NULL);
    /* Three new jobs and one idempotency hit. */
    struct job_spec sp[2] = {spec_of("w", 0, T0), spec_of("w", 0, T0)};
    sp[1].idempotency_key = "k1";
    struct job out[2];
    int created[2];
    CHECK_INT(store_enqueue(s, sp, 2, T0, out, created), STORE_OK);
    job_clear(&out[0]);
    job_clear(&out[1]);
    CHECK(enqueue(s, "w", 0, T0, T0) > 0);
    struct job j;
    CHECK_INT(store_enqueue(s, &sp[1], 1, T0, &j, created), STORE_EXISTS);
    job_clear(&j);
    CHECK_INT(counter_value("w", COUNTER_ENQUEUED), 3);

    /* Claim all three: complete one (twice), fail one with retry, fail one without. */
    struct job c[3];
    size_t n = 0;
    CHECK_INT(claim_caps(s, "w", NULL, 3, 30, T0, c, &n), STORE_OK);
    CHECK_INT(n, 3);
    CHECK_INT(counter_value("w", COUNTER_CLAIMED), 3);
    CHECK_INT(store_complete(s, c[0].id, c[0].lease_token, NULL, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_complete(s, c[0].id, c[0].lease_token, NULL, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_complete(s, c[1].id, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL, T0, &j),
              STORE_LEASE_LOST);
    CHECK_INT(counter_value("w", COUNTER_SUCCEEDED), 1);
    struct fail_req retry = {"boom", NULL, 1, 0}, final = {"boom", NULL, 0, -1};
    CHECK_INT(store_fail(s, c[1].id, c[1].lease_token, &retry, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_fail(s, c[2].id, c[2].lease_token, &final, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(counter_value("w", COUNTER_RETRIED), 1);
    CHECK_INT(counter_value("w", COUNTER_FAILED), 1);
    /* The retried job is queued again: cancel it; a second cancel is a conflict. */
    CHECK_INT(store_cancel(s, c[1].id, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_cancel(s, c[1].id, T0 + 2, &j), STORE_CONFLICT);
    CHECK_INT(counter_value("w", COUNTER_CANCELLED), 1);
    for (int i = 0; i < 3; i++)
        job_clear(&c[i]);
    store_close(s);
    counters_reset();
}

TEST(sweep_counts_leases_by_queue)
{
    counters_reset();
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c;
    /* "x": two leases that expire, the last attempt of each; "y": one that times out at
     * max runtime 10 s and goes back to queued. */
    CHECK(claimed(s, "x", 1, JOB_NONE, &c) > 0);
    job_clear(&c);
    CHECK(claimed(s, "x", 1, JOB_NONE, &c) > 0);
    job_clear(&c);
    CHECK(claimed(s, "y", 5, 10, &c) > 0);
    job_clear(&c);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 10, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 1);
    CHECK(r.queues == NULL && r.nqueues == 0); /* counted and freed */
    CHECK_INT(counter_value("y", COUNTER_TIMED_OUT), 1);
    CHECK_INT(counter_value("y", COUNTER_RETRIED), 1);
    CHECK_INT(counter_value("y", COUNTER_LEASE_EXPIRED), 0);
    CHECK_INT(counter_value("x", COUNTER_LEASE_EXPIRED), 0);
    CHECK_INT(store_sweep(s, T0 + 30, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.failed, 2);
    CHECK_INT(counter_value("x", COUNTER_LEASE_EXPIRED), 2);
    CHECK_INT(counter_value("x", COUNTER_FAILED), 2);
    CHECK_INT(counter_value("x", COUNTER_RETRIED), 0);
    CHECK_INT(counter_value("y", COUNTER_TIMED_OUT), 1);
    /* In batches of one: each lease counted once. */
    CHECK(claimed(s, "z", 5, JOB_NONE, &c) > 0);
    job_clear(&c);
    CHECK(claimed(s, "z", 5, JOB_NONE, &c) > 0);
    job_clear(&c);
    for (int i = 0; i < 3; i++)
        CHECK_INT(store_sweep(s, T0 + 30, 86400, 1, &r), STORE_OK);
    CHECK_INT(counter_value("z", COUNTER_LEASE_EXPIRED), 2);
    CHECK_INT(counter_value("z", COUNTER_RETRIED), 2);
    store_close(s);
    counters_reset();
}

TEST_MAIN(TEST_ENTRY(writes_are_counted_when_committed), TEST_ENTRY(sweep_counts_leases_by_queue))
