/* Parked long-poll claims. A waiter is registered by a claim that found nothing and wants to
 * wait; it is woken (once) when a job becomes claimable in one of its queues, when its
 * deadline passes, or at shutdown. The waitq knows nothing of HTTP: waking calls the
 * waiter's wake() callback (which resumes a suspended connection). Thread-safe. Parked
 * waiters cost no thread: one deadline thread serves them all (from a heap ordered by
 * deadline) and wakes an expired waiter at most 10 ms after its deadline, never before.
 * Waiters are indexed by queue: a notify costs the waiters of that queue, not all of them. */
#ifndef JOBQ_WAITQ_H
#define JOBQ_WAITQ_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct waitq;

struct waitq_queue;

/* A waiter's place in the list of one of its queues (private to the waitq). */
struct waitq_link {
    struct waiter *w;
    struct waitq_queue *queue;
    struct waitq_link *prev, *next;
};

/* Embedded in the caller's per-request state; the caller owns it. Fill the public fields
 * before waitq_arm(); the waitq owns the rest while the waiter is armed. */
struct waiter {
    const char *const *queues; /* borrowed, valid while armed; 1..JOB_QUEUES_MAX */
    size_t nqueues;
    int64_t deadline_ms; /* clock_mono_ms() deadline */
    /* Called once, with the waitq lock held: must not re-enter the waitq; resuming a
     * connection is fine. */
    void (*wake)(void *arg);
    void *arg;
    /* private */
    int armed, parked, signaled;
    int64_t due_ms; /* parked: when the deadline thread wakes it (deadline or recheck) */
    size_t heap_at; /* parked: its index in the deadline heap */
    struct waiter *prev, *next;
    size_t nlinks;
    struct waitq_link links[JOB_QUEUES_MAX]; /* one per distinct queue */
};

/* How often a parked waiter looks again by itself when the waitq is made with a recheck:
 * between this and twice this many ms (spread so that waiters do not look all at once). */
#define WAITQ_RECHECK_MS 1000

/* A new waitq with its deadline thread running, or NULL (logged). recheck_ms > 0: a parked
 * waiter is also woken between recheck_ms and 2 * recheck_ms after it parked, to look again
 * (news of jobs may have been lost: other processes); 0: only by notify, deadline or
 * shutdown. */
struct waitq *waitq_new(int64_t recheck_ms);

/* Stop the deadline thread (after waking every waiter) and free the waitq. Accepts NULL. */
void waitq_free(struct waitq *q);

/* Register w before looking for jobs, so that an enqueue between the look and the park is
 * not missed. Arming an armed waiter re-arms it (clearing its signal). Returns 0, or -1 when
 * the waitq is shutting down, w has no queue or more than JOB_QUEUES_MAX, or memory ran out
 * (do not wait). */
int waitq_arm(struct waitq *q, struct waiter *w);

/* Park an armed waiter: if it was signaled since waitq_arm() (or the deadline passed, or
 * shutdown began) it is removed and 1 is returned: look again at once. Else suspend(arg) is
 * called with the lock held (it must suspend the connection) and 0 is returned; w->wake will
 * be called exactly once later (unless waitq_disarm() removes it first), after which the
 * waiter is no longer armed. A waiter that is not armed is never parked: 1 is returned. */
int waitq_park(struct waitq *q, struct waiter *w, void (*suspend)(void *arg), void *arg);

/* Remove w if it is still armed, parked or not; once this returns w->wake will not be called,
 * so the caller may free w (call it from the request's cleanup). Safe on a waiter that is not
 * armed, and with q NULL. */
void waitq_disarm(struct waitq *q, struct waiter *w);

/* Wake every parked waiter that waits on `queue` (and mark armed, not yet parked ones, so
 * that their park returns 1). Every matching waiter is woken, not one: a job may suit only
 * some of them (capabilities). Costs one pass over the waiters of that queue. */
void waitq_notify(struct waitq *q, const char *queue);

/* Like waitq_notify() when n jobs that any claimer can take became claimable in `queue`:
 * mark every armed, not yet parked waiter on queue and wake every parked one that waits on
 * more than one queue (it may take a job of another queue instead), but of the parked ones
 * that wait on this queue alone wake only the n oldest. Each of those takes a job or finds
 * that others took them all; one that cannot look (its client is gone, the claim failed)
 * passes the wake-up on with waitq_notify_some(q, queue, 1). */
void waitq_notify_some(struct waitq *q, const char *queue, size_t n);

/* Wake every parked waiter and mark every armed one, whatever its queues (news may have been
 * lost). Accepts NULL. */
void waitq_notify_all(struct waitq *q);

/* Wake every waiter and refuse new ones (waitq_arm returns -1). Idempotent. */
void waitq_shutdown(struct waitq *q);

/* 1 once waitq_shutdown() was called. */
int waitq_closing(struct waitq *q);

/* How many waiters are parked now (for metrics and tests). */
size_t waitq_parked(struct waitq *q);

#endif
