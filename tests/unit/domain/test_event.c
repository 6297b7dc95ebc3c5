/* The event rules (server/domain/event.h), driven directly. Their agreement with each
 * backend's writes is tested in test_store_events.c. */
#include <string.h>

#include "event.h"
#include "testlib.h"

TEST(types_follow_the_status_change)
{
    CHECK_INT(job_event_type(JOB_STATUS_NONE, JOB_QUEUED, 0), JOB_EVENT_CREATED);
    CHECK_INT(job_event_type(JOB_STATUS_NONE, JOB_BLOCKED, 0), JOB_EVENT_BLOCKED);
    CHECK_INT(job_event_type(JOB_STATUS_NONE, JOB_CANCELLED, 0), JOB_EVENT_CREATED);
    CHECK_INT(job_event_type(JOB_QUEUED, JOB_RUNNING, 0), JOB_EVENT_CLAIMED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_SUCCEEDED, ATTEMPT_SUCCEEDED), JOB_EVENT_SUCCEEDED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_FAILED, ATTEMPT_FAILED), JOB_EVENT_FAILED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_QUEUED, ATTEMPT_RETRIED), JOB_EVENT_REQUEUED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_QUEUED, ATTEMPT_EXPIRED), JOB_EVENT_REQUEUED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_QUEUED, ATTEMPT_TIMEOUT), JOB_EVENT_REQUEUED);
    CHECK_INT(job_event_type(JOB_RUNNING, JOB_QUEUED, ATTEMPT_SNOOZED), JOB_EVENT_SNOOZED);
    CHECK_INT(job_event_type(JOB_FAILED, JOB_QUEUED, 0), JOB_EVENT_RETRIED);
    CHECK_INT(job_event_type(JOB_CANCELLED, JOB_QUEUED, 0), JOB_EVENT_RETRIED);
    CHECK_INT(job_event_type(JOB_FAILED, JOB_BLOCKED, 0), JOB_EVENT_RETRIED);
    CHECK_INT(job_event_type(JOB_BLOCKED, JOB_QUEUED, 0), JOB_EVENT_RELEASED);
    CHECK_INT(job_event_type(JOB_BLOCKED, JOB_CANCELLED, 0), JOB_EVENT_CANCELLED);
    CHECK_INT(job_event_type(JOB_QUEUED, JOB_CANCELLED, 0), JOB_EVENT_CANCELLED);
}

TEST(no_event_without_a_status_change)
{
    for (int s = JOB_QUEUED; s < JOB_STATUS_COUNT; s++)
        CHECK_INT(job_event_type((enum job_status)s, (enum job_status)s, 0), JOB_EVENT_NONE);
}

TEST(names_round_trip)
{
    for (int t = JOB_EVENT_CREATED; t < JOB_EVENT_TYPE_COUNT; t++) {
        const char *n = job_event_name((enum job_event_type)t);
        CHECK(strncmp(n, "job.", 4) == 0);
        CHECK_INT(job_event_parse(n, strlen(n)), t);
    }
    CHECK_INT(job_event_parse("job.nothing", 11), JOB_EVENT_NONE);
    CHECK_INT(job_event_parse("job.created", 5), JOB_EVENT_NONE);
    CHECK(strcmp(job_event_name(JOB_EVENT_NONE), "") == 0);
    CHECK(strcmp(job_event_name((enum job_event_type)99), "") == 0);
}

TEST(prune_is_bounded_by_the_batch)
{
    CHECK_INT(event_prune_over(10, 20), 0);
    CHECK_INT(event_prune_over(25, 20), 5);
    CHECK_INT(event_prune_over(20 + 5 * EVENT_PRUNE_BATCH, 20), EVENT_PRUNE_BATCH);
    CHECK_INT(event_cutoff(1000, 100), 900);
}

TEST(filters_match_queue_job_and_types)
{
    struct job_event e = {.seq = 1, .type = JOB_EVENT_CLAIMED, .job_id = 7, .queue = "q"};
    struct event_filter f = {.limit = 10};
    CHECK(event_filter_match(&f, &e));
    CHECK_INT(event_filter_scan(&f), 10);
    f.queues[0] = "other";
    f.nqueues = 1;
    CHECK(!event_filter_match(&f, &e));
    f.queues[1] = "q";
    f.nqueues = 2;
    CHECK(event_filter_match(&f, &e));
    CHECK_INT(event_filter_scan(&f), EVENT_SCAN_MAX);
    f.job = 8;
    CHECK(!event_filter_match(&f, &e));
    f.job = 7;
    f.types = 1u << JOB_EVENT_CREATED;
    CHECK(!event_filter_match(&f, &e));
    f.types |= 1u << JOB_EVENT_CLAIMED;
    CHECK(event_filter_match(&f, &e));
}

TEST_MAIN(TEST_ENTRY(types_follow_the_status_change), TEST_ENTRY(no_event_without_a_status_change),
          TEST_ENTRY(names_round_trip), TEST_ENTRY(prune_is_bounded_by_the_batch),
          TEST_ENTRY(filters_match_queue_job_and_types))
