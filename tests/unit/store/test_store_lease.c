/* The store's lease operations: heartbeat, complete and fail as compare-and-swap on a live
 * lease, backoff, and the cancel and retry transitions, on SQLite and on PostgreSQL
 * (test_store_util.h). */
#include "test_store_util.h"

/* Enqueue one job in "q" (with max_attempts and max_runtime) and claim it at `now` with a
 * 30 s lease into *j. Returns the id, or -1. */
static int64_t claimed(struct store *s, int64_t max_attempts, int64_t max_runtime, int64_t now,
                       struct job *j)
{
    struct job_spec sp = spec_of("q", 0, now);
    sp.max_attempts = max_attempts;
    sp.max_runtime_seconds = max_runtime;
    int64_t id = enqueue_spec(s, &sp, now);
    if (id < 0 || claim_one(s, "q", now, j) != id)
        return -1;
    return id;
}

TEST(heartbeat_extends_lease_and_keeps_progress)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK(id > 0);
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 100, "{\"pct\":10}", T0 + 20, &j), STORE_OK);
    CHECK_INT(j.lease_expires_at, T0 + 120);
    CHECK_INT(j.heartbeat_at, T0 + 20);
    CHECK_STR(j.progress, "{\"pct\":10}");
    CHECK(j.lease_token == NULL);
    job_clear(&j);
    /* lease_seconds 0: the claim's 30 s; no progress: the stored one stays. */
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, NULL, T0 + 110, &j), STORE_OK);
    CHECK_INT(j.lease_expires_at, T0 + 140);
    CHECK_STR(j.progress, "{\"pct\":10}");
    job_clear(&j);
    /* The extended lease is live past the claim's first expiry. */
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, "null", T0 + 139, &j), STORE_OK);
    /* JSON null (job.h: a NULL pointer means it; the text "null" is it too). */
    CHECK(j.progress == NULL || strcmp(j.progress, "null") == 0);
    job_clear(&j);
    job_clear(&c);
    store_close(s);
}

TEST(cas_failures)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    struct fail_req f = {NULL, NULL, 1, 0};
    int64_t id = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK(id > 0);
    /* Unknown id. */
    CHECK_INT(store_heartbeat(s, id + 1, c.lease_token, 0, NULL, T0, &j), STORE_NOT_FOUND);
    CHECK_INT(store_complete(s, id + 1, c.lease_token, NULL, T0, &j), STORE_NOT_FOUND);
    CHECK_INT(store_fail(s, id + 1, c.lease_token, &f, T0, &j), STORE_NOT_FOUND);
    /* Wrong token. */
    const char *wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    CHECK_INT(store_heartbeat(s, id, wrong, 0, NULL, T0, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id, wrong, NULL, T0, &j), STORE_LEASE_LOST);
    CHECK_INT(store_fail(s, id, wrong, &f, T0, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id, NULL, NULL, T0, &j), STORE_LEASE_LOST);
    /* Expired lease (live while now < lease_expires_at), before any sweep. */
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, NULL, T0 + 30, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id, c.lease_token, NULL, T0 + 30, &j), STORE_LEASE_LOST);
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 31, &j), STORE_LEASE_LOST);
    CHECK_INT(status_of(s, id), JOB_RUNNING);
    /* Still live one second before. */
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, NULL, T0 + 29, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);

    /* Past max runtime, even with a lease kept alive by heartbeats. */
    int64_t id2 = claimed(s, 5, 50, T0, &c);
    CHECK(id2 > 0);
    CHECK_INT(store_heartbeat(s, id2, c.lease_token, 1000, NULL, T0 + 25, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_heartbeat(s, id2, c.lease_token, 0, NULL, T0 + 49, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_heartbeat(s, id2, c.lease_token, 0, NULL, T0 + 50, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id2, c.lease_token, NULL, T0 + 60, &j), STORE_LEASE_LOST);
    CHECK_INT(store_fail(s, id2, c.lease_token, &f, T0 + 60, &j), STORE_LEASE_LOST);
    job_clear(&c);

    /* A job that is not running. */
    int64_t queued = enqueue(s, "other", 0, T0, T0);
    CHECK_INT(store_heartbeat(s, queued, wrong, 0, NULL, T0, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, queued, wrong, NULL, T0, &j), STORE_LEASE_LOST);
    store_close(s);
}

TEST(complete_is_idempotent_with_same_token)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_complete(s, id, c.lease_token, "{\"ok\":1}", T0 + 3, &j), STORE_OK);
    CHECK_INT(j.status, JOB_SUCCEEDED);
    CHECK_INT(j.finished_at, T0 + 3);
    CHECK_STR(j.result, "{\"ok\":1}");
    job_clear(&j);
    /* Again, later, even past the lease: OK and unchanged. */
    CHECK_INT(store_complete(s, id, c.lease_token, "{\"ok\":2}", T0 + 500, &j), STORE_OK);
    CHECK_INT(j.status, JOB_SUCCEEDED);
    CHECK_INT(j.finished_at, T0 + 3);
    CHECK_STR(j.result, "{\"ok\":1}");
    CHECK(j.lease_token == NULL);
    job_clear(&j);
    /* Another token, or heartbeat/fail after success: lease lost. */
    CHECK_INT(store_complete(s, id, "stale-token-stale-token-stale-to", NULL, T0 + 4, &j),
              STORE_LEASE_LOST);
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, NULL, T0 + 4, &j), STORE_LEASE_LOST);
    struct fail_req f = {NULL, NULL, 1, 0};
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 4, &j), STORE_LEASE_LOST);
    job_clear(&c);
    store_close(s);
}

TEST(progress_survives_requeue)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_heartbeat(s, id, c.lease_token, 0, "{\"step\":3}", T0 + 1, &j), STORE_OK);
    job_clear(&j);
    struct fail_req f = {"flaky", "{\"x\":1}", 1, 0};
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 2, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_STR(j.progress, "{\"step\":3}");
    CHECK_STR(j.error_code, "flaky");
    CHECK_STR(j.error_detail, "{\"x\":1}");
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(claim_one(s, "q", T0 + 2, &c), id);
    CHECK_STR(c.progress, "{\"step\":3}");
    CHECK_STR(c.error_code, "flaky"); /* the last error stays visible */
    job_clear(&c);
    store_close(s);
}

TEST(zombie_worker_loses_its_lease)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job a, b, j;
    int64_t id = claimed(s, 5, JOB_NONE, T0, &a);
    CHECK(id > 0);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 30, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 1);
    struct job got;
    CHECK_INT(store_get(s, id, &got), STORE_OK);
    CHECK_STR(got.error_code, "lease_expired");
    int64_t run_at = got.run_at;
    job_clear(&got);
    CHECK(run_at >= T0 + 30 + 10 && run_at <= T0 + 30 + 11);
    CHECK_INT(claim_one(s, "q", run_at, &b), id);
    CHECK_INT(b.fencing_token, 2);
    CHECK_INT(store_heartbeat(s, id, a.lease_token, 0, NULL, run_at + 1, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id, a.lease_token, NULL, run_at + 1, &j), STORE_LEASE_LOST);
    struct fail_req f = {NULL, NULL, 1, 0};
    CHECK_INT(store_fail(s, id, a.lease_token, &f, run_at + 1, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, id, b.lease_token, "1", run_at + 2, &j), STORE_OK);
    CHECK_INT(j.status, JOB_SUCCEEDED);
    CHECK_STR(j.worker_id, "worker-1");
    job_clear(&j);
    /* A's late complete still loses after B's success. */
    CHECK_INT(store_complete(s, id, a.lease_token, NULL, run_at + 3, &j), STORE_LEASE_LOST);
    job_clear(&a);
    job_clear(&b);
    store_close(s);
}

TEST(fail_retry_in_seconds_is_exact)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, 5, JOB_NONE, T0, &c);
    struct fail_req f = {"later", NULL, 1, 120};
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 5, &j), STORE_OK);
    CHECK_INT(j.run_at, T0 + 125);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_INT(j.finished_at, JOB_NONE);
    CHECK_INT(j.claimed_at, T0); /* history kept */
    CHECK_STR(j.worker_id, "worker-1");
    CHECK_INT(j.lease_expires_at, JOB_NONE); /* no lease any more */
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(claim_one(s, "q", T0 + 124, &c), 0);
    CHECK_INT(claim_one(s, "q", T0 + 125, &c), id);
    job_clear(&c);
    store_close(s);
}

TEST(fail_backoff_within_jitter)
{
    struct store *s = open_store(); /* backoff base 10, max 3600 */
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, 10, JOB_NONE, T0, &c);
    int64_t now = T0;
    struct fail_req f = {NULL, NULL, 1, -1};
    for (int attempt = 1; attempt <= 5; attempt++) {
        int64_t d = 10LL << (attempt - 1);
        CHECK_INT(c.attempts, attempt);
        CHECK_INT(store_fail(s, id, c.lease_token, &f, now, &j), STORE_OK);
        CHECK(j.run_at >= now + d && j.run_at <= now + d + d / 10);
        now = j.run_at;
        job_clear(&j);
        job_clear(&c);
        CHECK_INT(claim_one(s, "q", now, &c), id);
    }
    job_clear(&c);
    store_close(s);
}

TEST(fail_exhausted_or_no_retry_is_failed)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    struct fail_req f = {"bad_input", "{\"line\":3}", 1, 0};
    int64_t id = claimed(s, 2, JOB_NONE, T0, &c);
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_INT(j.run_at, T0 + 1);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(claim_one(s, "q", T0 + 1, &c), id);
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 2, &j), STORE_OK);
    CHECK_INT(j.status, JOB_FAILED);
    CHECK_INT(j.finished_at, T0 + 2);
    CHECK_INT(j.attempts, 2);
    CHECK_STR(j.error_code, "bad_input");
    job_clear(&j);
    job_clear(&c);

    f.retry = 0;
    int64_t id2 = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_fail(s, id2, c.lease_token, &f, T0 + 3, &j), STORE_OK);
    CHECK_INT(j.status, JOB_FAILED);
    CHECK_INT(j.finished_at, T0 + 3);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(claim_one(s, "q", T0 + 100, &c), 0);
    store_close(s);
}

TEST(cancel_transitions)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t queued = enqueue(s, "q", 0, T0, T0);
    int64_t sched = enqueue(s, "q", 0, T0 + 999, T0);
    CHECK_INT(store_cancel(s, queued, T0 + 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    CHECK_INT(j.finished_at, T0 + 1);
    job_clear(&j);
    CHECK_INT(store_cancel(s, sched, T0 + 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    job_clear(&j);
    int64_t next = 0;
    CHECK_INT(store_next_due(s, &next), STORE_OK);
    CHECK_INT(next, JOB_NONE);

    int64_t running = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_cancel(s, running, T0 + 2, &j), STORE_OK);
    CHECK_INT(j.status, JOB_CANCELLED);
    CHECK_INT(j.lease_expires_at, JOB_NONE);
    CHECK_INT(j.finished_at, T0 + 2);
    job_clear(&j);
    /* The running job's lease died with it. */
    CHECK_INT(store_heartbeat(s, running, c.lease_token, 0, NULL, T0 + 3, &j), STORE_LEASE_LOST);
    CHECK_INT(store_complete(s, running, c.lease_token, NULL, T0 + 3, &j), STORE_LEASE_LOST);
    job_clear(&c);

    CHECK_INT(store_cancel(s, queued, T0 + 4, &j), STORE_CONFLICT);
    int64_t done = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_complete(s, done, c.lease_token, NULL, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(store_cancel(s, done, T0 + 4, &j), STORE_CONFLICT);
    CHECK_INT(store_cancel(s, 424242, T0 + 4, &j), STORE_NOT_FOUND);
    CHECK_INT(claim_one(s, "q", T0 + 2000, &c), 0);
    store_close(s);
}

TEST(retry_transitions)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    struct fail_req f = {"x", NULL, 0, 0};
    int64_t failed = claimed(s, 5, JOB_NONE, T0, &c);
    CHECK_INT(store_fail(s, failed, c.lease_token, &f, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(store_retry(s, failed, T0 + 10, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_INT(j.attempts, 0);
    CHECK_INT(j.run_at, T0 + 10);
    CHECK_INT(j.finished_at, JOB_NONE);
    CHECK_INT(j.fencing_token, 1); /* never resets */
    CHECK_STR(j.error_code, "x");
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 10, &c), failed);
    CHECK_INT(c.attempts, 1);
    CHECK_INT(c.fencing_token, 2);
    /* Running: conflict. */
    CHECK_INT(store_retry(s, failed, T0 + 11, &j), STORE_CONFLICT);
    CHECK_INT(store_complete(s, failed, c.lease_token, NULL, T0 + 11, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    /* Succeeded, queued: conflict; unknown: not found. */
    CHECK_INT(store_retry(s, failed, T0 + 12, &j), STORE_CONFLICT);
    int64_t queued = enqueue(s, "q", 0, T0, T0);
    CHECK_INT(store_retry(s, queued, T0 + 12, &j), STORE_CONFLICT);
    CHECK_INT(store_retry(s, 999999, T0 + 12, &j), STORE_NOT_FOUND);
    /* Cancelled: back to queued. */
    CHECK_INT(store_cancel(s, queued, T0 + 13, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_retry(s, queued, T0 + 14, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    job_clear(&j);
    store_close(s);
}

/* 1 when the attempt history of job id is the n outcomes of want, oldest first, each with
 * an ended_at exactly when it ended; else 0 (logged). */
static int history_is(struct store *s, int64_t id, const enum attempt_outcome *want, size_t n)
{
    struct job_attempt *a = NULL;
    size_t got = 0;
    if (store_attempts(s, id, &a, &got) != STORE_OK)
        return 0;
    int ok = got == n;
    for (size_t i = 0; ok && i < n; i++) {
        ok = a[i].outcome == want[i] && (a[i].ended_at == JOB_NONE) == (want[i] == ATTEMPT_RUNNING);
    }
    if (!ok) {
        fprintf(stderr, "job %lld: %zu attempts:", (long long)id, got);
        for (size_t i = 0; i < got; i++)
            fprintf(stderr, " %lld:%s", (long long)a[i].attempt,
                    attempt_outcome_name(a[i].outcome));
        fputc('\n', stderr);
    }
    job_attempts_free(a, got);
    return ok;
}

/* Every kind of write keeps the counts of GET /queues and the attempt history exact: an
 * enqueue (due, scheduled, an idempotency hit), claims, a fail with retry (due and later), an
 * expiry, a fail for good, a complete, retries, cancels (queued, running, scheduled), a purge
 * and retention. */
TEST(counts_and_history_follow_every_write)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    const enum attempt_outcome R = ATTEMPT_RUNNING;
    struct job_spec sp = spec_of("q", 0, T0);
    sp.idempotency_key = "k";
    int64_t a = enqueue_spec(s, &sp, T0);
    CHECK(a > 0);
    int created = 1;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_EXISTS); /* nothing new */
    job_clear(&j);
    int64_t b = enqueue(s, "q", -1, T0, T0); /* claimed after a */
    int64_t later = enqueue(s, "q", 0, T0 + 500, T0);
    CHECK(counts_exact(s, "q", T0));
    CHECK(history_is(s, a, NULL, 0));

    /* a: claimed, failed with retry now, claimed again, completed. */
    CHECK_INT(claim_one(s, "q", T0, &c), a);
    CHECK(counts_exact(s, "q", T0));
    CHECK(history_is(s, a, (enum attempt_outcome[]){R}, 1));
    struct fail_req again = {"flaky", "{\"n\":1}", 1, 0};
    CHECK_INT(store_fail(s, a, c.lease_token, &again, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK(counts_exact(s, "q", T0 + 1));
    CHECK_INT(claim_one(s, "q", T0 + 1, &c), a);
    CHECK(history_is(s, a, (enum attempt_outcome[]){ATTEMPT_RETRIED, R}, 2));
    CHECK_INT(store_complete(s, a, c.lease_token, "1", T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_complete(s, a, c.lease_token, "1", T0 + 2, &j), STORE_OK); /* a repeat */
    job_clear(&j);
    job_clear(&c);
    CHECK(counts_exact(s, "q", T0 + 2));
    CHECK(history_is(s, a, (enum attempt_outcome[]){ATTEMPT_RETRIED, ATTEMPT_SUCCEEDED}, 2));
    struct job_attempt *h = NULL;
    size_t nh = 0;
    CHECK_INT(store_attempts(s, a, &h, &nh), STORE_OK);
    if (nh == 2) {
        CHECK_STR(h[0].error_code, "flaky");
        CHECK_STR(h[0].error_detail, "{\"n\":1}");
        CHECK_INT(h[0].claimed_at, T0);
        CHECK_INT(h[0].ended_at, T0 + 1);
        CHECK(h[1].error_code == NULL);
        CHECK_INT(h[1].claimed_at, T0 + 1);
        CHECK_INT(h[1].ended_at, T0 + 2);
    }
    job_attempts_free(h, nh);

    /* b: fails with a retry in 50 s, comes due, its lease expires, fails for good, is retried,
     * claimed and cancelled while running. */
    CHECK_INT(claim_one(s, "q", T0 + 2, &c), b);
    struct fail_req delay = {"slow", NULL, 1, 50};
    CHECK_INT(store_fail(s, b, c.lease_token, &delay, T0 + 3, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK(counts_exact(s, "q", T0 + 3));
    struct sweep_result sw;
    CHECK_INT(store_sweep(s, T0 + 60, 3600, 100, &sw), STORE_OK);
    sweep_result_forget(&sw);
    CHECK(counts_exact(s, "q", T0 + 60));
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", NULL, 1, 10, T0 + 60, &c, &n), STORE_OK); /* a 10 s lease */
    CHECK_INT(n, 1);
    CHECK_INT(c.id, b);
    job_clear(&c);
    CHECK_INT(store_sweep(s, T0 + 80, 3600, 100, &sw), STORE_OK);
    CHECK_INT(sw.requeued, 1);
    sweep_result_forget(&sw);
    CHECK(counts_exact(s, "q", T0 + 80));
    CHECK_INT(store_get(s, b, &j), STORE_OK); /* requeued after a backoff */
    int64_t due = j.run_at;
    job_clear(&j);
    CHECK(due < T0 + 500);
    CHECK_INT(claim_one(s, "q", due, &c), b);
    struct fail_req stop = {"fatal", NULL, 0, 0};
    CHECK_INT(store_fail(s, b, c.lease_token, &stop, T0 + 81, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK(counts_exact(s, "q", T0 + 81));
    CHECK_INT(store_retry(s, b, T0 + 82, &j), STORE_OK);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 82));
    CHECK_INT(claim_one(s, "q", T0 + 82, &c), b);
    CHECK_INT(store_cancel(s, b, T0 + 83, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK(counts_exact(s, "q", T0 + 83));
    CHECK(history_is(s, b,
                     (enum attempt_outcome[]){ATTEMPT_RETRIED, ATTEMPT_EXPIRED, ATTEMPT_FAILED,
                                              ATTEMPT_CANCELLED},
                     4));
    CHECK_INT(store_attempts(s, b, &h, &nh), STORE_OK);
    if (nh == 4) { /* the retry started the count again */
        CHECK(h[0].attempt == 1 && h[1].attempt == 2 && h[2].attempt == 3 && h[3].attempt == 1);
        CHECK_STR(h[1].error_code, "lease_expired");
        CHECK_STR(h[2].error_code, "fatal");
        CHECK_STR(h[3].worker_id, "worker-1");
        CHECK(h[3].error_code == NULL);
    }
    job_attempts_free(h, nh);

    /* later: cancelled before it ran (no attempt), retried, then purged with the queued. */
    CHECK_INT(store_cancel(s, later, T0 + 84, &j), STORE_OK);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 84));
    CHECK_INT(store_retry(s, later, T0 + 85, &j), STORE_OK);
    job_clear(&j);
    CHECK(counts_exact(s, "q", T0 + 85));
    CHECK(history_is(s, later, NULL, 0));
    size_t purged = 0;
    CHECK_INT(store_purge(s, "q", JOB_QUEUED, 10, T0 + 86, &purged), STORE_OK);
    CHECK_INT(purged, 1);
    CHECK(counts_exact(s, "q", T0 + 86));

    /* Retention deletes a (succeeded) and b (cancelled) with their histories. */
    CHECK_INT(store_sweep(s, T0 + 5000, 10, 100, &sw), STORE_OK);
    CHECK_INT(sw.deleted, 2);
    sweep_result_forget(&sw);
    CHECK(counts_exact(s, "q", T0 + 5000));
    CHECK_INT(store_attempts(s, a, &h, &nh), STORE_NOT_FOUND);
    CHECK_INT(jobs_int("count(*)", NULL), 0);
    store_close(s);
}

/* The history keeps the newest JOB_ATTEMPTS_KEPT attempts, the running one included. */
TEST(history_keeps_the_newest_attempts)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = claimed(s, JOB_ATTEMPTS_MAX, JOB_NONE, T0, &c);
    CHECK(id > 0);
    struct fail_req f = {"again", NULL, 1, 0};
    int64_t t = T0;
    /* Claims 1 .. KEPT + 1: each fails (the last of max_attempts for good, then retried). */
    for (int k = 1; k <= JOB_ATTEMPTS_KEPT + 1 && id > 0; k++) {
        if (k > 1 && claim_one(s, "q", t, &c) != id)
            break;
        CHECK_INT(store_fail(s, id, c.lease_token, &f, ++t, &j), STORE_OK);
        int failed = j.status == JOB_FAILED;
        job_clear(&j);
        if (failed) {
            CHECK_INT(store_retry(s, id, t, &j), STORE_OK);
            job_clear(&j);
        }
        job_clear(&c);
    }
    struct job_attempt *a = NULL;
    size_t n = 0;
    CHECK_INT(store_attempts(s, id, &a, &n), STORE_OK);
    CHECK_INT(n, JOB_ATTEMPTS_KEPT);
    if (n == JOB_ATTEMPTS_KEPT)
        CHECK_INT(a[0].claimed_at, T0 + 1); /* the first claim went */
    job_attempts_free(a, n);
    CHECK_INT(claim_one(s, "q", t, &c), id); /* claim KEPT + 2, running */
    CHECK_INT(store_attempts(s, id, &a, &n), STORE_OK);
    CHECK_INT(n, JOB_ATTEMPTS_KEPT);
    if (n == JOB_ATTEMPTS_KEPT) {
        CHECK_INT(a[0].claimed_at, T0 + 2);
        CHECK_INT(a[n - 1].outcome, ATTEMPT_RUNNING);
    }
    job_attempts_free(a, n);
    job_clear(&c);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(heartbeat_extends_lease_and_keeps_progress), TEST_ENTRY(cas_failures),
          TEST_ENTRY(complete_is_idempotent_with_same_token), TEST_ENTRY(progress_survives_requeue),
          TEST_ENTRY(zombie_worker_loses_its_lease), TEST_ENTRY(fail_retry_in_seconds_is_exact),
          TEST_ENTRY(fail_backoff_within_jitter), TEST_ENTRY(fail_exhausted_or_no_retry_is_failed),
          TEST_ENTRY(cancel_transitions), TEST_ENTRY(retry_transitions),
          TEST_ENTRY(counts_and_history_follow_every_write),
          TEST_ENTRY(history_keeps_the_newest_attempts))
