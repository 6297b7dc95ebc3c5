/* The job state machine table (server/domain/transition.h), driven directly. Its agreement
 * with each backend's guards is tested in test_store_transitions.c. */
#include <string.h>

#include "testlib.h"
#include "transition.h"

static const enum job_status statuses[] = {JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED, JOB_FAILED,
                                           JOB_CANCELLED};
#define NSTATUSES (sizeof statuses / sizeof statuses[0])

TEST(only_queued_jobs_are_claimed)
{
    for (size_t i = 0; i < NSTATUSES; i++) {
        struct job_transition t = job_transition(statuses[i], JOB_ACT_CLAIM);
        if (statuses[i] == JOB_QUEUED) {
            CHECK_INT(t.refusal, JOB_REFUSED_NONE);
            CHECK_INT(t.to, JOB_RUNNING);
        } else {
            CHECK_INT(t.refusal, JOB_REFUSED_UNSEEN);
        }
    }
}

TEST(lease_actions_need_a_running_job)
{
    const enum job_action lease[] = {JOB_ACT_HEARTBEAT, JOB_ACT_COMPLETE, JOB_ACT_FAIL,
                                     JOB_ACT_SNOOZE};
    for (size_t a = 0; a < sizeof lease / sizeof lease[0]; a++) {
        for (size_t i = 0; i < NSTATUSES; i++) {
            struct job_transition t = job_transition(statuses[i], lease[a]);
            if (statuses[i] == JOB_RUNNING) {
                CHECK_INT(t.refusal, JOB_REFUSED_NONE);
                CHECK_INT(t.repeat, 0);
            } else if (statuses[i] == JOB_SUCCEEDED && lease[a] == JOB_ACT_COMPLETE) {
                /* completing again with the same token: an idempotent repeat */
                CHECK_INT(t.refusal, JOB_REFUSED_NONE);
                CHECK_INT(t.repeat, 1);
                CHECK_INT(t.to, JOB_SUCCEEDED);
            } else {
                CHECK_INT(t.refusal, JOB_REFUSED_LEASE);
            }
        }
    }
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_HEARTBEAT).to, JOB_RUNNING);
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_COMPLETE).to, JOB_SUCCEEDED);
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_SNOOZE).to, JOB_QUEUED); /* never failed */
}

TEST(lease_ends_are_planned)
{
    /* A fail and an expiry leave the status to the lease-end plan (queued again or failed). */
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_FAIL).to, JOB_STATUS_NONE);
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_EXPIRE).to, JOB_STATUS_NONE);
    CHECK_INT(job_transition(JOB_RUNNING, JOB_ACT_EXPIRE).refusal, JOB_REFUSED_NONE);
    for (size_t i = 0; i < NSTATUSES; i++) {
        if (statuses[i] != JOB_RUNNING)
            CHECK_INT(job_transition(statuses[i], JOB_ACT_EXPIRE).refusal, JOB_REFUSED_UNSEEN);
    }
}

TEST(cancel_and_retry)
{
    for (size_t i = 0; i < NSTATUSES; i++) {
        enum job_status s = statuses[i];
        struct job_transition c = job_transition(s, JOB_ACT_CANCEL);
        struct job_transition r = job_transition(s, JOB_ACT_RETRY);
        int live = s == JOB_QUEUED || s == JOB_RUNNING;
        int ended_badly = s == JOB_FAILED || s == JOB_CANCELLED;
        CHECK_INT(c.refusal, live ? JOB_REFUSED_NONE : JOB_REFUSED_CONFLICT);
        CHECK_INT(c.to, live ? JOB_CANCELLED : JOB_STATUS_NONE);
        CHECK_INT(r.refusal, ended_badly ? JOB_REFUSED_NONE : JOB_REFUSED_CONFLICT);
        CHECK_INT(r.to, ended_badly ? JOB_QUEUED : JOB_STATUS_NONE);
    }
}

TEST(finished_jobs_leave_only_by_retry)
{
    const enum job_status finished[] = {JOB_SUCCEEDED, JOB_FAILED, JOB_CANCELLED};
    for (size_t i = 0; i < 3; i++) {
        for (int a = 0; a < JOB_ACTION_COUNT; a++) {
            struct job_transition t = job_transition(finished[i], (enum job_action)a);
            if (t.refusal == JOB_REFUSED_NONE && !t.repeat)
                CHECK_INT(a, JOB_ACT_RETRY);
        }
    }
}

TEST(every_entry_is_defined)
{
    /* An applying transition names its new status unless the plan decides; a refusal never
     * names one. */
    for (size_t i = 0; i < NSTATUSES; i++) {
        for (int a = 0; a < JOB_ACTION_COUNT; a++) {
            struct job_transition t = job_transition(statuses[i], (enum job_action)a);
            int planned = statuses[i] == JOB_RUNNING && (a == JOB_ACT_FAIL || a == JOB_ACT_EXPIRE);
            if (t.refusal == JOB_REFUSED_NONE)
                CHECK(planned ? t.to == JOB_STATUS_NONE : t.to != JOB_STATUS_NONE);
            else
                CHECK_INT(t.to, JOB_STATUS_NONE);
            CHECK(strcmp(job_action_name((enum job_action)a), "unknown") != 0);
        }
    }
}

TEST(unknown_status_or_action_is_a_conflict)
{
    CHECK_INT(job_transition(JOB_STATUS_NONE, JOB_ACT_CLAIM).refusal, JOB_REFUSED_CONFLICT);
    CHECK_INT(job_transition(JOB_STATUS_COUNT, JOB_ACT_CLAIM).refusal, JOB_REFUSED_CONFLICT);
    CHECK_INT(job_transition(JOB_QUEUED, JOB_ACTION_COUNT).refusal, JOB_REFUSED_CONFLICT);
    CHECK_STR(job_action_name(JOB_ACTION_COUNT), "unknown");
}

TEST_MAIN(TEST_ENTRY(only_queued_jobs_are_claimed), TEST_ENTRY(lease_actions_need_a_running_job),
          TEST_ENTRY(lease_ends_are_planned), TEST_ENTRY(cancel_and_retry),
          TEST_ENTRY(finished_jobs_leave_only_by_retry), TEST_ENTRY(every_entry_is_defined),
          TEST_ENTRY(unknown_status_or_action_is_a_conflict))
