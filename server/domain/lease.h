/* How a lease ends when its job is not completed: the requeue-or-fail rule of the contract
 * and the retry delay policy behind it, and a snooze. Pure functions: no I/O, no clock (now is
 * given). */
#ifndef JOBQ_LEASE_H
#define JOBQ_LEASE_H

#include <stdint.h>

#include "job.h"

/* The delay before retry number `attempts` (>= 1): min(max, base * 2^(attempts-1)) seconds,
 * plus jitter * 10% of that (jitter in [0, 1), e.g. rand_unit()), rounded down. Never
 * overflows: large attempts saturate at max. This function can't fail. */
int64_t backoff_delay(int64_t base, int64_t max, int64_t attempts, double jitter);

/* What a lease's end does to its job: the same for a worker's fail and for the sweeper's
 * expiry and timeout. */
struct job_lease_end {
    int requeue;    /* 1: back to queued, due at run_at; 0: failed now */
    int64_t run_at; /* when requeue: now + the delay; else JOB_NONE */
};

/* Decide how a lease ends. retry: 0 when the worker asked for no retry (fail with
 * retry:false), else 1 (every expiry and timeout); attempts and max_attempts: the job's;
 * retry_in: the worker's retry_in_seconds, or -1 for the backoff policy (backoff_base,
 * backoff_max, jitter in [0, 1), e.g. rand_unit()). A job requeues while retry is set and
 * attempts < max_attempts. This function can't fail. */
struct job_lease_end job_lease_end_plan(int retry, int64_t attempts, int64_t max_attempts,
                                        int64_t retry_in, int64_t now, int64_t backoff_base,
                                        int64_t backoff_max, double jitter);

/* When a job that a lease's end requeues (job_lease_end_plan: due at `planned`) is due: at
 * planned, except a job of an ordered key (ordered: 1 when limit_key_ordered() holds for its
 * concurrency_key), which is due at once and keeps its place in its key: at its created_at,
 * no later than the run_at of any job of the key enqueued after it, so the claim order
 * (priority, run_at, id) takes it first again. This function can't fail. */
int64_t job_requeue_at(int ordered, int64_t created_at, int64_t planned);

/* Whether a lease's end (with retry: an expiry, a timeout, a fail with retry) moves its job to
 * its queue's dead-letter queue: when the queue has one, with max_receive its
 * maxReceiveCount (> 0; 0 or JOB_NONE: none), and the job was claimed max_receive times or
 * more (attempts). The store then ends the job failed (error_code JOB_DEAD_LETTER_CODE, its
 * attempt history ending) and enqueues a copy in the target queue in the same transaction.
 * This function can't fail. */
#define JOB_DEAD_LETTER_CODE "dead_lettered"
int job_dead_letter(int retry, int64_t attempts, int64_t max_receive);

/* The lease a heartbeat asks for: lease_seconds when it is positive, else 0, which keeps the
 * lease's own length (the store extends by the job's lease_seconds). This function can't
 * fail. */
int64_t job_heartbeat_lease(int64_t lease_seconds);

/* What a snooze does to its job (POST /jobs/{id}/snooze by the lease holder). */
struct job_snooze {
    enum job_status status;       /* JOB_QUEUED */
    int64_t run_at;               /* now + seconds */
    int64_t attempts;             /* the claim undone: attempts - 1, never below 0 */
    enum attempt_outcome outcome; /* ATTEMPT_SNOOZED, the claim's attempt row */
    /* With pause_key and a concurrency key: now + seconds, when the key opens again (a pause
     * that ends at now pauses nothing); else JOB_NONE. The key keeps the later of this and
     * the pause it holds (limit_pause_merge): a snooze never shortens a pause. */
    int64_t pause_until;
};

/* Plan a snooze of `seconds` (0..JOB_DELAY_MAX) at now of a running job whose attempts count
 * is `attempts`; has_key: 1 when the job has a concurrency_key; pause_key: the request's.
 * The fencing_token is not changed (the claim stays counted there). The lease is checked
 * before, as for a fail. This function can't fail. */
struct job_snooze job_snooze_plan(int64_t attempts, int has_key, int pause_key, int64_t seconds,
                                  int64_t now);

#endif
