/* The lease-end plan and the retry delay policy behind it (server/domain/lease.h):
 * min(max, base * 2^(attempts-1)) plus up to 10% jitter; and the snooze plan. */
#include "job.h"
#include "lease.h"
#include "testlib.h"

TEST(doubles_from_base)
{
    CHECK_INT(backoff_delay(2, 3600, 1, 0.0), 2);
    CHECK_INT(backoff_delay(2, 3600, 2, 0.0), 4);
    CHECK_INT(backoff_delay(2, 3600, 3, 0.0), 8);
    CHECK_INT(backoff_delay(2, 3600, 10, 0.0), 1024);
    CHECK_INT(backoff_delay(10, 3600, 4, 0.0), 80);
}

TEST(saturates_at_max)
{
    CHECK_INT(backoff_delay(2, 3600, 11, 0.0), 2048);
    CHECK_INT(backoff_delay(2, 3600, 12, 0.0), 3600);
    CHECK_INT(backoff_delay(2, 3600, 13, 0.0), 3600);
    CHECK_INT(backoff_delay(5000, 3600, 1, 0.0), 3600); /* base above max */
    CHECK_INT(backoff_delay(0, 3600, 50, 0.0), 0);
}

TEST(huge_attempts_do_not_overflow)
{
    CHECK_INT(backoff_delay(2, 3600, 1000, 0.0), 3600);
    CHECK_INT(backoff_delay(2, 3600, INT64_MAX, 0.0), 3600);
    CHECK_INT(backoff_delay(3, INT64_MAX, 70, 0.0), INT64_MAX);
    CHECK_INT(backoff_delay(3, INT64_MAX / 4, 200, 0.0), INT64_MAX / 4);
    int64_t big = backoff_delay(3, INT64_MAX / 4, 200, 0.999999);
    CHECK(big >= INT64_MAX / 4 && big <= INT64_MAX / 4 + INT64_MAX / 40 + 1);
    int64_t d = backoff_delay(1, INT64_MAX / 4, 63, 0.0);
    CHECK(d > 0 && d <= INT64_MAX / 4);
    /* attempts below 1 count as the first. */
    CHECK_INT(backoff_delay(2, 3600, 0, 0.0), 2);
    CHECK_INT(backoff_delay(2, 3600, -5, 0.0), 2);
}

TEST(jitter_within_ten_percent)
{
    for (int attempts = 1; attempts <= 14; attempts++) {
        int64_t d = backoff_delay(2, 3600, attempts, 0.0);
        CHECK_INT(backoff_delay(2, 3600, attempts, 0.5), d + d / 20);
        int64_t top = backoff_delay(2, 3600, attempts, 0.999999);
        CHECK(top >= d && top <= d + d / 10);
        /* Out-of-range jitter is clamped into [0, 1). */
        CHECK_INT(backoff_delay(2, 3600, attempts, -3.0), d);
        int64_t over = backoff_delay(2, 3600, attempts, 7.0);
        CHECK(over >= d && over <= d + d / 10);
    }
    CHECK_INT(backoff_delay(100, 3600, 1, 0.999999), 109);
    CHECK_INT(backoff_delay(3600, 3600, 1, 0.999999), 3959);
}

TEST(plan_requeues_while_attempts_remain)
{
    /* attempts 1 of 3, backoff base 2: due again 2 s later. */
    struct job_lease_end e = job_lease_end_plan(1, 1, 3, -1, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 1);
    CHECK_INT(e.run_at, 1002);
    e = job_lease_end_plan(1, 2, 3, -1, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 1);
    CHECK_INT(e.run_at, 1004);
    /* The last attempt: failed, no run_at. */
    e = job_lease_end_plan(1, 3, 3, -1, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 0);
    CHECK_INT(e.run_at, JOB_NONE);
    e = job_lease_end_plan(1, 7, 3, -1, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 0);
}

TEST(plan_without_retry_fails_now)
{
    struct job_lease_end e = job_lease_end_plan(0, 1, 5, -1, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 0);
    CHECK_INT(e.run_at, JOB_NONE);
    e = job_lease_end_plan(0, 1, 5, 30, 1000, 2, 3600, 0.0);
    CHECK_INT(e.requeue, 0);
}

TEST(plan_takes_the_workers_delay)
{
    /* retry_in_seconds replaces the backoff policy, 0 included. */
    struct job_lease_end e = job_lease_end_plan(1, 1, 5, 30, 1000, 2, 3600, 0.9);
    CHECK_INT(e.requeue, 1);
    CHECK_INT(e.run_at, 1030);
    e = job_lease_end_plan(1, 4, 5, 0, 1000, 2, 3600, 0.9);
    CHECK_INT(e.run_at, 1000);
    /* The backoff policy with jitter: within 10% above the plain delay. */
    e = job_lease_end_plan(1, 4, 5, -1, 1000, 10, 3600, 0.5);
    CHECK_INT(e.run_at, 1000 + 80 + 4);
}

TEST(snooze_undoes_the_claim)
{
    struct job_snooze s = job_snooze_plan(3, 1, 1, 60, 1000);
    CHECK_INT(s.status, JOB_QUEUED);
    CHECK_INT(s.run_at, 1060);
    CHECK_INT(s.attempts, 2);
    CHECK_INT(s.outcome, ATTEMPT_SNOOZED);
    CHECK_STR(attempt_outcome_name(s.outcome), "snoozed");
    CHECK_INT(s.pause_until, 1060);
    /* Snoozing the first attempt again and again never counts an attempt. */
    int64_t attempts = 0;
    for (int i = 0; i < 50; i++) {
        attempts++; /* the claim */
        attempts = job_snooze_plan(attempts, 0, 0, 0, 1000).attempts;
        CHECK_INT(attempts, 0);
    }
    CHECK_INT(job_snooze_plan(0, 0, 0, 5, 1000).attempts, 0); /* never below 0 */
    s = job_snooze_plan(1, 1, 1, 0, 1000);
    CHECK_INT(s.run_at, 1000);
    CHECK_INT(s.pause_until, 1000); /* ends at once: pauses nothing */
}

TEST(snooze_pauses_only_a_key_it_was_asked_to)
{
    CHECK_INT(job_snooze_plan(1, 1, 0, 60, 1000).pause_until, JOB_NONE);
    CHECK_INT(job_snooze_plan(1, 0, 1, 60, 1000).pause_until, JOB_NONE); /* no key */
    CHECK_INT(job_snooze_plan(1, 0, 0, 60, 1000).pause_until, JOB_NONE);
    CHECK_INT(job_snooze_plan(1, 1, 1, JOB_DELAY_MAX, 1000).pause_until, 1000 + JOB_DELAY_MAX);
}

TEST(heartbeat_keeps_the_lease_length_unless_asked)
{
    CHECK_INT(job_heartbeat_lease(30), 30);
    CHECK_INT(job_heartbeat_lease(0), 0);
    CHECK_INT(job_heartbeat_lease(-5), 0);
}

TEST(ordered_requeue_keeps_its_place)
{
    /* A job of an ordered key is due at once, at its created_at, so it stays ahead of the
     * jobs of its key enqueued after it; any other keeps the planned run_at. */
    CHECK_INT(job_requeue_at(1, 900, 1004), 900);
    CHECK_INT(job_requeue_at(0, 900, 1004), 1004);
    CHECK_INT(job_requeue_at(1, JOB_NONE, 1004), 1004);
    CHECK_INT(job_requeue_at(1, 1010, 1004), 1004); /* never later than planned */
}

TEST(dead_letter_after_max_receives)
{
    CHECK(!job_dead_letter(1, 2, 3));
    CHECK(job_dead_letter(1, 3, 3));
    CHECK(job_dead_letter(1, 4, 3));
    CHECK(!job_dead_letter(0, 4, 3)); /* a fail without retry just fails */
    CHECK(!job_dead_letter(1, 4, 0)); /* no dead-letter queue */
    CHECK(!job_dead_letter(1, 4, JOB_NONE));
}

TEST_MAIN(TEST_ENTRY(heartbeat_keeps_the_lease_length_unless_asked),
          TEST_ENTRY(dead_letter_after_max_receives), TEST_ENTRY(ordered_requeue_keeps_its_place),
          TEST_ENTRY(doubles_from_base), TEST_ENTRY(saturates_at_max),
          TEST_ENTRY(huge_attempts_do_not_overflow), TEST_ENTRY(jitter_within_ten_percent),
          TEST_ENTRY(plan_requeues_while_attempts_remain), TEST_ENTRY(plan_without_retry_fails_now),
          TEST_ENTRY(plan_takes_the_workers_delay), TEST_ENTRY(snooze_undoes_the_claim),
          TEST_ENTRY(snooze_pauses_only_a_key_it_was_asked_to))
