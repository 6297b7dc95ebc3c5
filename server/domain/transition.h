/* The job state machine as one table: for each API status and each action, whether the
 * action applies and which status it leaves. Both backends enforce it in their statements'
 * guards; tests/unit/store/test_store_transitions.c runs every status x action against each backend
 * and compares the outcome with this table, so the guards cannot drift from it. Pure data. */
#ifndef JOBQ_TRANSITION_H
#define JOBQ_TRANSITION_H

#include "job.h"

/* What can happen to a job. */
enum job_action {
    JOB_ACT_CLAIM,     /* a worker's claim takes it */
    JOB_ACT_HEARTBEAT, /* its lease holder extends the lease */
    JOB_ACT_COMPLETE,  /* its lease holder reports success */
    JOB_ACT_FAIL,      /* its lease holder reports a failure (with retry) */
    JOB_ACT_CANCEL,    /* a producer or operator cancels it */
    JOB_ACT_RETRY,     /* an operator sends it back to the queue */
    JOB_ACT_EXPIRE,    /* the sweeper finds its lease (or max runtime) over */
    JOB_ACT_SNOOZE,    /* its lease holder sends it back to the queue for a while */
    JOB_ACTION_COUNT
};

/* How an action that does not apply is answered. */
enum job_refusal {
    JOB_REFUSED_NONE = 0, /* it applies */
    JOB_REFUSED_LEASE,    /* 409 lease_lost: the caller holds no live lease on the job */
    JOB_REFUSED_CONFLICT, /* 409 conflict: the job's status does not allow it */
    JOB_REFUSED_UNSEEN    /* nothing is answered for the job: a claim or a sweep passes it by */
};

struct job_transition {
    enum job_refusal refusal;
    /* When it applies: the status it leaves, or JOB_STATUS_NONE when the lease-end plan
     * (lease.h) decides (queued again or failed). */
    enum job_status to;
    /* 1 when it applies only as an idempotent repeat that changes nothing (completing again
     * with the token that completed the job); any other token is refused lease_lost. */
    int repeat;
};

/* The transition of `action` from status `from` (an API status). For a lease action
 * (heartbeat, complete, fail, snooze) the table assumes the caller's token is the job's latest and
 * the lease deadline has not passed; a stale token or a passed deadline is lease_lost in every
 * status. An unknown status or action gives {JOB_REFUSED_CONFLICT, JOB_STATUS_NONE, 0}. This
 * function can't fail. */
struct job_transition job_transition(enum job_status from, enum job_action action);

/* A short lowercase name of an action ("claim", ...), for messages and tests. Never NULL. */
const char *job_action_name(enum job_action action);

#endif
