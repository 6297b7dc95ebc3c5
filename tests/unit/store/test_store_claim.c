/* The store's claim: order, max_jobs, capabilities, scheduled jobs, on SQLite and on
 * PostgreSQL (test_store_util.h); and SQLite's query plans (the delayed-job trap). Many
 * claimers at once: test_store_threads.c. */
#include "sqlite_conn.h"
#include "sqlite_stmt.h"
#include "test_store_util.h"

TEST(claim_sets_lease_fields)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 0, T0);
    sp.max_runtime_seconds = 100;
    int64_t id = enqueue_spec(s, &sp, T0);
    struct job j[2];
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", NULL, 2, 45, T0 + 5, j, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(j[0].id, id);
    CHECK_INT(j[0].status, JOB_RUNNING);
    CHECK_INT(j[0].attempts, 1);
    CHECK_INT(j[0].fencing_token, 1);
    CHECK_INT(j[0].claimed_at, T0 + 5);
    CHECK_INT(j[0].heartbeat_at, T0 + 5);
    CHECK_INT(j[0].lease_expires_at, T0 + 50);
    CHECK_STR(j[0].worker_id, "worker-1");
    CHECK(j[0].lease_token != NULL);
    CHECK_INT(strlen(j[0].lease_token), JOB_TOKEN_LEN);
    CHECK_INT(jobs_int("deadline_at", NULL), T0 + 105);
    CHECK_INT(jobs_int("lease_seconds", NULL), 45);
    job_clear(&j[0]);

    /* GET never shows the token. */
    CHECK_INT(store_get(s, id, &j[0]), STORE_OK);
    CHECK(j[0].lease_token == NULL);
    CHECK_INT(j[0].status, JOB_RUNNING);
    job_clear(&j[0]);

    /* Nothing left: an empty claim is STORE_OK with n = 0. */
    CHECK_INT(claim_caps(s, "q", NULL, 2, 45, T0 + 5, j, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_close(s);
}

TEST(claim_again_grows_fencing_token_and_new_token)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    struct job a, b;
    CHECK_INT(claim_one(s, "q", T0, &a), id);
    struct fail_req f = {"boom", NULL, 1, 0};
    struct job tmp;
    CHECK_INT(store_fail(s, id, a.lease_token, &f, T0 + 1, &tmp), STORE_OK);
    CHECK_INT(tmp.status, JOB_QUEUED);
    job_clear(&tmp);
    CHECK_INT(claim_one(s, "q", T0 + 1, &b), id);
    CHECK_INT(b.fencing_token, 2);
    CHECK_INT(b.attempts, 2);
    CHECK(strcmp(a.lease_token, b.lease_token) != 0);
    job_clear(&a);
    job_clear(&b);
    store_close(s);
}

TEST(claim_order_priority_run_at_id)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t ids[6];
    ids[0] = enqueue(s, "q", 0, T0 - 10, T0);  /* 5th: low priority, oldest */
    ids[1] = enqueue(s, "q", 5, T0 - 1, T0);   /* 3rd: high priority, newer run_at */
    ids[2] = enqueue(s, "q", 5, T0 - 5, T0);   /* 1st: high priority, older run_at */
    ids[3] = enqueue(s, "q", 5, T0 - 5, T0);   /* 2nd: same as ids[2], bigger id */
    ids[4] = enqueue(s, "q", 1, T0, T0);       /* 4th */
    ids[5] = enqueue(s, "q", -3, T0 - 99, T0); /* 6th: negative priority */
    const int64_t want[6] = {ids[2], ids[3], ids[1], ids[4], ids[0], ids[5]};
    for (int i = 0; i < 6; i++) {
        struct job j;
        CHECK_INT(claim_one(s, "q", T0, &j), want[i]);
        job_clear(&j);
    }
    store_close(s);
}

TEST(claim_order_across_queues)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a1 = enqueue(s, "a", 1, T0, T0);
    int64_t b9 = enqueue(s, "b", 9, T0, T0);
    int64_t c5 = enqueue(s, "c", 5, T0 - 1, T0);
    int64_t a5 = enqueue(s, "a", 5, T0, T0);
    int64_t b1old = enqueue(s, "b", 1, T0 - 50, T0);
    CHECK(enqueue(s, "other", 100, T0, T0) > 0); /* not asked for */
    const char *queues[3] = {"a", "b", "c"};
    struct claim_req req = {"w", queues, 3, NULL, 30, 4};
    struct job out[4];
    size_t n = 0;
    CHECK_INT(store_claim(s, &req, T0, out, &n), STORE_OK);
    CHECK_INT(n, 4);
    CHECK_INT(out[0].id, b9);
    CHECK_INT(out[1].id, c5);
    CHECK_INT(out[2].id, a5);
    CHECK_INT(out[3].id, b1old);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    CHECK_INT(store_claim(s, &req, T0, out, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(out[0].id, a1);
    job_clear(&out[0]);
    CHECK_INT(store_claim(s, &req, T0, out, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_close(s);
}

TEST(claim_max_jobs)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    for (int i = 0; i < 150; i++)
        CHECK(enqueue(s, "q", i % 7, T0, T0) > 0);
    struct job *out = calloc(JOB_CLAIM_MAX, sizeof *out);
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", NULL, 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 3);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    CHECK_INT(claim_caps(s, "q", NULL, JOB_CLAIM_MAX, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, JOB_CLAIM_MAX);
    for (size_t i = 1; i < n; i++)
        CHECK(out[i].priority <= out[i - 1].priority);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    CHECK_INT(claim_caps(s, "q", NULL, JOB_CLAIM_MAX, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 47);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    free(out);
    CHECK_INT(jobs_int("count(*)", "status = 2"), 150);
    store_close(s);
}

TEST(capabilities_match_subset)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec gpu = spec_of("q", 9, T0);
    gpu.requires = "[\"gpu\"]";
    struct job_spec both = spec_of("q", 8, T0);
    both.requires = "[\"gpu\",\"ssd\"]";
    int64_t id_gpu = enqueue_spec(s, &gpu, T0);
    int64_t id_both = enqueue_spec(s, &both, T0);
    int64_t id_plain = enqueue(s, "q", 0, T0, T0);
    struct job out[3];
    size_t n = 0;

    /* No capabilities: only the job that requires nothing. */
    CHECK_INT(claim_caps(s, "q", NULL, 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(out[0].id, id_plain);
    job_clear(&out[0]);
    /* gpu only: the gpu job, not the one that also needs ssd. */
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(out[0].id, id_gpu);
    job_clear(&out[0]);
    CHECK_INT(claim_caps(s, "q", "[\"ssd\",\"x\"]", 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 0);
    /* A superset takes it. */
    CHECK_INT(claim_caps(s, "q", "[\"x\",\"ssd\",\"gpu\"]", 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(out[0].id, id_both);
    job_clear(&out[0]);
    store_close(s);
}

TEST(capabilities_claimer_takes_plain_jobs_in_order)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 5, T0);
    sp.requires = "[\"arm\"]";
    CHECK(enqueue_spec(s, &sp, T0) > 0); /* best priority, but not for this claimer */
    int64_t plain = enqueue(s, "q", 1, T0, T0);
    struct job out[2];
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 2, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(out[0].id, plain);
    job_clear(&out[0]);
    store_close(s);
}

TEST(scheduled_claimable_at_run_at_without_sweep)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0 + 60, T0);
    struct job j;
    CHECK_INT(claim_one(s, "q", T0, &j), 0);
    CHECK_INT(claim_one(s, "q", T0 + 59, &j), 0);
    CHECK_INT(status_of(s, id), JOB_QUEUED);
    CHECK_INT(claim_one(s, "q", T0 + 60, &j), id);
    CHECK_INT(j.run_at, T0 + 60);
    job_clear(&j);
    store_close(s);
}

TEST(scheduled_due_job_competes_by_priority)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK(enqueue(s, "q", 1, T0, T0) > 0);
    int64_t late = enqueue(s, "q", 9, T0 + 10, T0);
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 10, &j), late);
    job_clear(&j);
    store_close(s);
}

/* 1 if plan uses index `name` and never sorts in a temp B-tree. */
static int plan_uses(const char *sql, const char *name)
{
    char plan[4096];
    char want[128], last[128];
    snprintf(want, sizeof want, "INDEX %s ", name);
    snprintf(last, sizeof last, "INDEX %s\n", name);
    if (query_plan(sql, plan, sizeof plan) != 0)
        return 0;
    if ((!strstr(plan, want) && !strstr(plan, last)) || strstr(plan, "TEMP B-TREE")) {
        fprintf(stderr, "plan of %s:\n%s", sql, plan);
        return 0;
    }
    return 1;
}

TEST(claim_plan_uses_partial_indexes)
{
    SQLITE_ONLY("the query plans of its statements");
    struct store *s = open_store();
    CHECK(s != NULL);
    store_close(s);
    CHECK(plan_uses(sqlite_stmt_sql(STMT_CLAIM_PICK_PLAIN), "jobs_claim_free"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_LANE_BEST), "jobs_lane"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_LANES_OPEN), "lanes_rank"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_LANES_DUE), "lanes_check"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_KEY_RUNNING), "jobs_key_running"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_PROMOTE), "jobs_scheduled"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_NEXT_DUE), "jobs_scheduled"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_SWEEP_DELETE), "jobs_finished"));
    CHECK(plan_uses(sqlite_stmt_sql(STMT_LANES_DROP), "jobs_lane_any"));
    char plan[4096];
    CHECK(query_plan(sqlite_stmt_sql(STMT_SWEEP_EXPIRED), plan, sizeof plan) == 0);
    CHECK(strstr(plan, "INDEX jobs_lease (lease_expires_at<?)") != NULL);
    CHECK(strstr(plan, "INDEX jobs_deadline (deadline_at<?)") != NULL);
}

TEST(delayed_jobs_stay_out_of_the_claim_index)
{
    SQLITE_ONLY("its claim index and query plans");
    struct store *s = open_store();
    CHECK(s != NULL);
    enum { FUTURE = 10000 };
    CHECK_INT(enqueue_many(s, "q", 1000, T0 + 3600, 1, FUTURE, T0), STORE_OK);
    int64_t low = enqueue(s, "q", -5, T0, T0);
    store_close(s);

    CHECK_INT(sql_int("SELECT count(*) FROM jobs WHERE status = 0"), FUTURE);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs INDEXED BY jobs_claim_free "
                      "WHERE status = 1 AND lane IS NULL"),
              1);
    CHECK(plan_uses(sqlite_stmt_sql(STMT_CLAIM_PICK_PLAIN), "jobs_claim_free"));

    s = open_store();
    CHECK(s != NULL);
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 1, &j), low);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0 + 1, &j), 0);
    /* At its run_at the first future job is promoted by the claim itself and taken. */
    CHECK_INT(claim_one(s, "q", T0 + 3600, &j), low - FUTURE);
    CHECK_INT(j.run_at, T0 + 3600);
    job_clear(&j);
    store_close(s);
}

/* Steps of one claim_one() call, counted with a fault that never fires. Sets *id. */
static int claim_steps(struct store *s, int64_t now, int64_t *id, struct job *out)
{
    sqlite_conn_fault_run(1 << 30, SQLITE_FULL, 1);
    *id = claim_one(s, "q", now, out);
    int steps = sqlite_conn_fault_steps();
    sqlite_conn_fault(0, 0);
    return steps;
}

TEST(claim_promotes_only_when_a_job_is_due)
{
    SQLITE_ONLY("counts SQLite steps of a claim");
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job j, k;
    int64_t got = -1;
    /* The first claim does not know yet what is scheduled: it looks. */
    CHECK_INT(claim_one(s, "q", T0, &j), 0);
    int empty = claim_steps(s, T0, &got, &j);
    CHECK_INT(got, 0);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    int plain = claim_steps(s, T0, &got, &j);
    CHECK_INT(got, a);
    job_clear(&j);
    /* A job scheduled for later does not make claims promote before it is due. */
    int64_t c = enqueue(s, "q", 0, T0 + 100, T0);
    int64_t b = enqueue(s, "q", 0, T0, T0);
    CHECK_INT(claim_steps(s, T0 + 10, &got, &j), plain);
    CHECK_INT(got, b);
    job_clear(&j);
    /* Due: the claim promotes it itself (no sweep) and takes it. */
    CHECK(claim_steps(s, T0 + 100, &got, &j) > plain);
    CHECK_INT(got, c);
    /* A failure with a retry delay schedules it again: claimable exactly at its run_at. */
    struct fail_req f = {"e", NULL, 1, 50};
    CHECK_INT(store_fail(s, c, j.lease_token, &f, T0 + 100, &k), STORE_OK);
    CHECK_INT(k.status, JOB_QUEUED); /* shown as queued; stored as scheduled */
    job_clear(&j);
    job_clear(&k);
    CHECK_INT(claim_steps(s, T0 + 149, &got, &j), empty);
    CHECK_INT(got, 0);
    CHECK_INT(claim_one(s, "q", T0 + 150, &j), c);
    job_clear(&j);
    store_close(s);
}

TEST(first_lane_after_claims_that_found_none)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job j;
    size_t n = 9;
    /* Claims on a store without any lane (SQLite then skips the lanes' statements)... */
    CHECK_INT(claim_one(s, "q", T0, &j), 0);
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 1, 30, T0, &j, &n), STORE_OK);
    CHECK_INT(n, 0);
    /* ...then the first job of a lane, and of a key: both are claimed. */
    struct job_spec sp = spec_of("q", 0, T0);
    sp.requires = "[\"gpu\"]";
    int64_t gpu = enqueue_spec(s, &sp, T0);
    sp.requires = NULL;
    sp.concurrency_key = "k";
    int64_t keyed = enqueue_spec(s, &sp, T0);
    CHECK_INT(claim_caps(s, "q", "[\"gpu\"]", 1, 30, T0, &j, &n), STORE_OK);
    CHECK_INT(n, 1);
    CHECK_INT(j.id, gpu);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0, &j), keyed);
    job_clear(&j);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(claim_sets_lease_fields), TEST_ENTRY(first_lane_after_claims_that_found_none),
          TEST_ENTRY(claim_again_grows_fencing_token_and_new_token),
          TEST_ENTRY(claim_order_priority_run_at_id), TEST_ENTRY(claim_order_across_queues),
          TEST_ENTRY(claim_max_jobs), TEST_ENTRY(capabilities_match_subset),
          TEST_ENTRY(capabilities_claimer_takes_plain_jobs_in_order),
          TEST_ENTRY(scheduled_claimable_at_run_at_without_sweep),
          TEST_ENTRY(scheduled_due_job_competes_by_priority),
          TEST_ENTRY(claim_plan_uses_partial_indexes),
          TEST_ENTRY(delayed_jobs_stay_out_of_the_claim_index),
          TEST_ENTRY(claim_promotes_only_when_a_job_is_due))
