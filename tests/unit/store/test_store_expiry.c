/* Expiring jobs (expiry.h) in the store: a claim never takes a job at or after its
 * expires_at, whether or not the sweeper ran; the sweep cancels queued (and not yet due)
 * jobs whose expires_at passed with error_code "expired", in batches, counts kept; a blocked
 * job too, its "cancel" dependents with it; a running job is left alone. On SQLite and on
 * PostgreSQL (test_store_util.h). */
#include "test_store_util.h"

/* Enqueue one job of queue due at run_at that expires at expires_at; its id, or -1. */
static int64_t enqueue_expiring(struct store *s, const char *queue, int64_t run_at,
                                int64_t expires_at)
{
    struct job_spec sp = spec_of(queue, 0, run_at);
    sp.expires_at = expires_at;
    return enqueue_spec(s, &sp, T0);
}

TEST(claim_refuses_an_expired_job_before_any_sweep)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t late = enqueue_expiring(s, "q", T0, T0 + 10);
    int64_t keep = enqueue_expiring(s, "q", T0, T0 + 100);
    int64_t never = enqueue(s, "q", 0, T0, T0);
    CHECK(late > 0 && keep > 0 && never > 0);
    /* At expires_at itself the job is expired: the claim passes it by and takes the next. */
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 10, &j), keep);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 10, &j), never);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 10, &j), 0);
    CHECK_INT(status_of(s, late), JOB_QUEUED); /* nothing swept it yet */
    store_close(s);
}

TEST(claim_takes_a_job_just_before_its_expiry)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue_expiring(s, "q", T0, T0 + 10);
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 9, &j), id);
    job_clear(&j);
    /* Running past its expires_at: not expired by it, and the sweep leaves it alone. */
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 20, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 0);
    CHECK_INT(status_of(s, id), JOB_RUNNING);
    store_close(s);
}

TEST(claim_with_capabilities_refuses_an_expired_job)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 0, T0);
    sp.requires = "[\"gpu\"]";
    sp.expires_at = T0 + 5;
    int64_t expired = enqueue_spec(s, &sp, T0);
    sp.expires_at = T0 + 6;
    int64_t id = enqueue_spec(s, &sp, T0);
    CHECK(expired > 0 && id > expired);
    struct job j;
    size_t n = 9;
    /* At T0 + 5 the first (older, first in claim order) has expired: the second comes. */
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 1, 30, T0 + 5, &j, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(j.id, id);
    job_clear(&j);
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 1, 30, T0 + 5, &j, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_close(s);
}

TEST(sweep_cancels_expired_queued_and_scheduled_jobs)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t queued = enqueue_expiring(s, "q", T0, T0 + 10);
    int64_t later = enqueue_expiring(s, "q", T0 + 60, T0 + 10); /* due after it expires */
    int64_t fresh = enqueue_expiring(s, "q", T0, T0 + 100);
    int64_t plain = enqueue(s, "q", 0, T0, T0);
    int64_t running = enqueue_expiring(s, "r", T0, T0 + 10);
    struct job j;
    CHECK_INT(claim_one(s, "r", T0, &j), running);
    job_clear(&j);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 9, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 0);
    CHECK_INT(store_sweep(s, T0 + 10, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 2);
    int64_t gone[2] = {queued, later};
    for (int i = 0; i < 2; i++) {
        CHECK_INT(store_get(s, gone[i], &j), STORE_OK);
        CHECK_INT(j.status, JOB_CANCELLED);
        CHECK_STR(j.error_code, "expired");
        CHECK_INT(j.finished_at, T0 + 10);
        CHECK_INT(j.attempts, 0);
        job_clear(&j);
    }
    CHECK_INT(status_of(s, fresh), JOB_QUEUED);
    CHECK_INT(status_of(s, plain), JOB_QUEUED);
    CHECK_INT(status_of(s, running), JOB_RUNNING);
    CHECK(counts_exact(s, "q", T0 + 10));
    CHECK(counts_exact(s, "r", T0 + 10));
    /* A sweep finds nothing more; a job that went back to queued past its expiry is
     * cancelled too. */
    CHECK_INT(store_sweep(s, T0 + 11, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 0);
    struct fail_req f = {"boom", NULL, 1, 0};
    CHECK_INT(claim_one(s, "q", T0 + 90, &j), fresh);
    char token[JOB_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%s", j.lease_token);
    job_clear(&j);
    CHECK_INT(store_fail(s, fresh, token, &f, T0 + 100, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 100, &j), plain); /* fresh is expired now */
    job_clear(&j);
    /* The same sweep ends the lease of `running` (back to queued, due later) and then
     * cancels it too: it expired while it ran. */
    CHECK_INT(store_sweep(s, T0 + 100, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 1);
    CHECK_INT(r.expired, 2);
    CHECK_INT(status_of(s, fresh), JOB_CANCELLED);
    CHECK_INT(status_of(s, running), JOB_CANCELLED);
    CHECK(counts_exact(s, "q", T0 + 100));
    CHECK(counts_exact(s, "r", T0 + 100));
    store_close(s);
}

/* A blocked job is not claimed either: past its expires_at the sweep cancels it "expired",
 * and its "cancel" dependents with it (dependency_failed); a "run" one is released. */
TEST(sweep_cancels_an_expired_blocked_job_and_its_dependents)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t parent = enqueue(s, "q", 0, T0, T0);
    struct job_dep on_parent = {.id = parent}, on_blocked = {.index = 0};
    struct job_spec sp[3] = {spec_of("q", 0, T0), spec_of("q", 0, T0), spec_of("q", 0, T0)};
    sp[0].deps = &on_parent, sp[0].ndeps = 1;
    sp[0].expires_at = T0 + 10;
    sp[1].deps = &on_blocked, sp[1].ndeps = 1;
    sp[2].deps = &on_blocked, sp[2].ndeps = 1;
    sp[2].on_dependency_failure = DEP_RUN;
    struct job out[3];
    int created[3];
    CHECK_INT(store_enqueue(s, sp, 3, T0, out, created), STORE_OK);
    int64_t blocked = out[0].id, child = out[1].id, runs = out[2].id;
    for (int i = 0; i < 3; i++) {
        CHECK_INT(out[i].status, JOB_BLOCKED);
        job_clear(&out[i]);
    }
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 9, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 0);
    CHECK_INT(status_of(s, blocked), JOB_BLOCKED);
    CHECK_INT(store_sweep(s, T0 + 10, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.expired, 1);
    struct job j;
    CHECK_INT(store_get(s, blocked, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    CHECK_STR(j.error_code, "expired");
    CHECK_INT(j.finished_at, T0 + 10);
    job_clear(&j);
    CHECK_INT(store_get(s, child, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    CHECK_STR(j.error_code, "dependency_failed");
    job_clear(&j);
    CHECK_INT(status_of(s, runs), JOB_QUEUED);
    CHECK_INT(status_of(s, parent), JOB_QUEUED);
    CHECK(counts_exact(s, "q", T0 + 10));
    store_close(s);
}

TEST(sweep_expires_in_batches)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[JOB_BATCH_MAX];
    struct job out[JOB_BATCH_MAX];
    int created[JOB_BATCH_MAX];
    for (int i = 0; i < JOB_BATCH_MAX; i++) {
        sp[i] = spec_of(i % 2 ? "a" : "b", 0, i % 3 ? T0 : T0 + 500);
        sp[i].expires_at = T0 + 1 + i % 7;
    }
    for (int k = 0; k < 2; k++) {
        CHECK_INT(store_enqueue(s, sp, JOB_BATCH_MAX, T0, out, created), STORE_OK);
        for (int i = 0; i < JOB_BATCH_MAX; i++)
            job_clear(&out[i]);
    }
    const int total = 2 * JOB_BATCH_MAX, batch = 300;
    int swept = 0;
    for (int i = 0; i < total / batch + 2; i++) {
        struct sweep_result r;
        CHECK_INT(store_sweep(s, T0 + 10, 86400, batch, &r), STORE_OK);
        CHECK(r.expired <= batch);
        CHECK_INT(r.expired, total - swept < batch ? total - swept : batch);
        swept += r.expired;
    }
    CHECK_INT(swept, total);
    CHECK(counts_exact(s, "a", T0 + 10));
    CHECK(counts_exact(s, "b", T0 + 10));
    store_close(s);
    CHECK_INT(jobs_int("count(*)", "status = 5 AND error_code = 'expired'"), total);
}

TEST_MAIN(TEST_ENTRY(claim_refuses_an_expired_job_before_any_sweep),
          TEST_ENTRY(claim_takes_a_job_just_before_its_expiry),
          TEST_ENTRY(claim_with_capabilities_refuses_an_expired_job),
          TEST_ENTRY(sweep_cancels_expired_queued_and_scheduled_jobs),
          TEST_ENTRY(sweep_cancels_an_expired_blocked_job_and_its_dependents),
          TEST_ENTRY(sweep_expires_in_batches))
