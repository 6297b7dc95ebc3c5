/* The job record's pure helpers (server/domain/job.h): status names, claim order, queue
 * names, and the release functions' NULL rules. */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "testlib.h"

TEST(status_names_round_trip)
{
    const enum job_status all[] = {JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED,
                                   JOB_CANCELLED};
    const char *names[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    for (size_t i = 0; i < 5; i++) {
        CHECK_STR(job_status_name(all[i]), names[i]);
        enum job_status s = JOB_STATUS_NONE;
        CHECK_INT(job_status_parse(names[i], &s), 0);
        CHECK_INT(s, all[i]);
    }
    enum job_status s = JOB_QUEUED;
    CHECK_INT(job_status_parse("unknown", &s), -1);
    CHECK_INT(job_status_parse("scheduled", &s), -1);
    CHECK_INT(job_status_parse("", &s), -1);
    CHECK_STR(job_status_name(JOB_STATUS_NONE), "unknown");
    CHECK_STR(job_status_name(JOB_STATUS_COUNT), "unknown");
}

TEST(claim_order_priority_then_run_at_then_id)
{
    CHECK(job_claim_order(5, 100, 9, 1, 50, 1) < 0); /* higher priority first */
    CHECK(job_claim_order(1, 50, 9, 1, 100, 1) < 0); /* then earlier run_at */
    CHECK(job_claim_order(1, 50, 1, 1, 50, 9) < 0);  /* then lower id */
    CHECK(job_claim_order(1, 50, 9, 1, 50, 1) > 0);
    CHECK_INT(job_claim_order(1, 50, 9, 1, 50, 9), 0);
    CHECK(job_claim_order(-5, 0, 1, 0, 100, 2) > 0);
}

TEST(queue_names)
{
    CHECK_INT(job_queue_name_ok("default"), 1);
    CHECK_INT(job_queue_name_ok("a.b_c:d-E9"), 1);
    CHECK_INT(job_queue_name_ok(""), 0);
    CHECK_INT(job_queue_name_ok("a b"), 0);
    CHECK_INT(job_queue_name_ok("é"), 0);
    char name[JOB_QUEUE_MAX + 2];
    memset(name, 'q', sizeof name);
    name[JOB_QUEUE_MAX] = '\0';
    CHECK_INT(job_queue_name_ok(name), 1);
    name[JOB_QUEUE_MAX] = 'q';
    name[JOB_QUEUE_MAX + 1] = '\0';
    CHECK_INT(job_queue_name_ok(name), 0);
}

TEST(outcome_names)
{
    CHECK_STR(attempt_outcome_name(ATTEMPT_RUNNING), "running");
    CHECK_STR(attempt_outcome_name(ATTEMPT_EXPIRED), "lease_expired");
    CHECK_STR(attempt_outcome_name(ATTEMPT_SNOOZED), "snoozed");
    CHECK_STR(attempt_outcome_name(ATTEMPT_OUTCOME_COUNT), "unknown");
}

TEST(release_accepts_null_and_empties)
{
    job_clear(NULL);
    job_array_free(NULL, 3);
    queue_stats_free(NULL, 3);
    job_attempts_free(NULL, 3);
    struct job j = {0};
    j.queue = strdup("q");
    j.requires = strdup("[\"gpu\"]");
    j.id = 7;
    job_clear(&j);
    CHECK(j.queue == NULL && j.requires == NULL);
    CHECK_INT(j.id, 0);
}

TEST_MAIN(TEST_ENTRY(status_names_round_trip), TEST_ENTRY(claim_order_priority_then_run_at_then_id),
          TEST_ENTRY(queue_names), TEST_ENTRY(outcome_names),
          TEST_ENTRY(release_accepts_null_and_empties))
