/* The job state machine (transition.h). */
#include "transition.h"

/* clang-format off */
#define OK(status) {JOB_REFUSED_NONE, status, 0}
#define PLAN {JOB_REFUSED_NONE, JOB_STATUS_NONE, 0}
#define REPEAT(status) {JOB_REFUSED_NONE, status, 1}
#define LEASE {JOB_REFUSED_LEASE, JOB_STATUS_NONE, 0}
#define CONFLICT {JOB_REFUSED_CONFLICT, JOB_STATUS_NONE, 0}
#define UNSEEN {JOB_REFUSED_UNSEEN, JOB_STATUS_NONE, 0}
/* clang-format on */

/* Rows: the status a job is in; columns: the action. */
static const struct job_transition table[JOB_STATUS_COUNT][JOB_ACTION_COUNT] = {
    [JOB_QUEUED] =
        {
            [JOB_ACT_CLAIM] = OK(JOB_RUNNING),
            [JOB_ACT_HEARTBEAT] = LEASE,
            [JOB_ACT_COMPLETE] = LEASE,
            [JOB_ACT_FAIL] = LEASE,
            [JOB_ACT_CANCEL] = OK(JOB_CANCELLED),
            [JOB_ACT_RETRY] = CONFLICT,
            [JOB_ACT_EXPIRE] = UNSEEN,
            [JOB_ACT_SNOOZE] = LEASE,
        },
    [JOB_RUNNING] =
        {
            [JOB_ACT_CLAIM] = UNSEEN,
            [JOB_ACT_HEARTBEAT] = OK(JOB_RUNNING),
            [JOB_ACT_COMPLETE] = OK(JOB_SUCCEEDED),
            [JOB_ACT_FAIL] = PLAN,
            [JOB_ACT_CANCEL] = OK(JOB_CANCELLED), /* the lease dies with it */
            [JOB_ACT_RETRY] = CONFLICT,
            [JOB_ACT_EXPIRE] = PLAN,
            [JOB_ACT_SNOOZE] = OK(JOB_QUEUED),
        },
    [JOB_SUCCEEDED] =
        {
            [JOB_ACT_CLAIM] = UNSEEN,
            [JOB_ACT_HEARTBEAT] = LEASE,
            [JOB_ACT_COMPLETE] = REPEAT(JOB_SUCCEEDED),
            [JOB_ACT_FAIL] = LEASE,
            [JOB_ACT_CANCEL] = CONFLICT,
            [JOB_ACT_RETRY] = CONFLICT,
            [JOB_ACT_EXPIRE] = UNSEEN,
            [JOB_ACT_SNOOZE] = LEASE,
        },
    [JOB_FAILED] =
        {
            [JOB_ACT_CLAIM] = UNSEEN,
            [JOB_ACT_HEARTBEAT] = LEASE,
            [JOB_ACT_COMPLETE] = LEASE,
            [JOB_ACT_FAIL] = LEASE,
            [JOB_ACT_CANCEL] = CONFLICT,
            [JOB_ACT_RETRY] = OK(JOB_QUEUED),
            [JOB_ACT_EXPIRE] = UNSEEN,
            [JOB_ACT_SNOOZE] = LEASE,
        },
    [JOB_CANCELLED] =
        {
            [JOB_ACT_CLAIM] = UNSEEN,
            [JOB_ACT_HEARTBEAT] = LEASE,
            [JOB_ACT_COMPLETE] = LEASE,
            [JOB_ACT_FAIL] = LEASE,
            [JOB_ACT_CANCEL] = CONFLICT,
            [JOB_ACT_RETRY] = OK(JOB_QUEUED),
            [JOB_ACT_EXPIRE] = UNSEEN,
            [JOB_ACT_SNOOZE] = LEASE,
        },
    [JOB_BLOCKED] =
        {
            [JOB_ACT_CLAIM] = UNSEEN, /* out of every claim until its dependencies are done */
            [JOB_ACT_HEARTBEAT] = LEASE,
            [JOB_ACT_COMPLETE] = LEASE,
            [JOB_ACT_FAIL] = LEASE,
            [JOB_ACT_CANCEL] = OK(JOB_CANCELLED),
            [JOB_ACT_RETRY] = CONFLICT,
            [JOB_ACT_EXPIRE] = UNSEEN,
            [JOB_ACT_SNOOZE] = LEASE,
        },
};

struct job_transition job_transition(enum job_status from, enum job_action action)
{
    if ((unsigned)from >= JOB_STATUS_COUNT || from == JOB_STATUS_NONE ||
        (unsigned)action >= JOB_ACTION_COUNT)
        return (struct job_transition)CONFLICT;
    return table[from][action];
}

static const char *const action_names[JOB_ACTION_COUNT] = {
    [JOB_ACT_CLAIM] = "claim",   [JOB_ACT_HEARTBEAT] = "heartbeat", [JOB_ACT_COMPLETE] = "complete",
    [JOB_ACT_FAIL] = "fail",     [JOB_ACT_CANCEL] = "cancel",       [JOB_ACT_RETRY] = "retry",
    [JOB_ACT_EXPIRE] = "expire", [JOB_ACT_SNOOZE] = "snooze",
};

const char *job_action_name(enum job_action action)
{
    if ((unsigned)action >= JOB_ACTION_COUNT)
        return "unknown";
    return action_names[action];
}
