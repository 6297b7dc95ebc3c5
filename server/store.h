/* The storage seam. Handlers and the sweeper talk to a struct store through these
 * functions only; SQLite (store_sqlite.c) is the first implementation and PostgreSQL can be
 * added as another without touching a caller.
 *
 * Rules for every function below:
 * - `now` is the current time in epoch seconds, passed in (only clock.c reads the clock).
 * - `out` jobs are filled on STORE_OK (and STORE_EXISTS); the caller owns their strings and
 *   releases them with job_clear()/job_array_free(). On any other result out is untouched.
 * - Each write runs in one short transaction (BEGIN IMMEDIATE), shared with the writes that
 *   arrived at the same time (group commit; one failing never takes another's work with it);
 *   nothing slow runs inside it. A write returns (or calls done) only after its transaction
 *   committed.
 * - All functions are safe to call from many threads at once.
 * - STORE_BUSY means the database stayed locked past the retry budget (answer 503);
 *   STORE_ERROR means anything else went wrong in storage; it has been logged with file:line
 *   (answer 500). */
#ifndef JOBQ_STORE_H
#define JOBQ_STORE_H

#include "job.h"

enum store_result {
    STORE_OK = 0,
    STORE_EXISTS,      /* enqueue: an idempotency_key hit; out is the existing job */
    STORE_NOT_FOUND,   /* no job with that id */
    STORE_LEASE_LOST,  /* token does not match a live lease */
    STORE_CONFLICT,    /* the job's state does not allow the transition */
    STORE_BUSY,        /* locked past the retry budget */
    STORE_UNAVAILABLE, /* disk full, read-only, I/O error: a fault that may clear by itself */
    STORE_ERROR        /* anything else */
};

/* Hooks the store calls after a commit, from the committing thread (the SQLite store's
 * writer thread: a hook must not write to the store), with no lock of the store held, before
 * the writes of that commit are answered; once per commit for each queue and for the
 * earliest schedule. Either may be NULL. */
struct store_hooks {
    /* Jobs in `queue` became claimable (enqueued due, requeued due, retried, promoted). */
    void (*on_ready)(void *ctx, const char *queue);
    /* A job was scheduled for `run_at` in the future (the timer may need to wake earlier). */
    void (*on_scheduled)(void *ctx, int64_t run_at);
    void *ctx;
    /* May be NULL: `jobs` jobs in `queue` became claimable, none of which requires anything,
     * so any claimer of the queue can take them (a long poll need wake only about that many
     * waiters). When it is NULL, or a job requires something or is not known, on_ready is
     * called instead. */
    void (*on_ready_some)(void *ctx, const char *queue, int jobs);
};

struct store_options {
    const char *path;     /* database file; ":memory:" is not supported (readers) */
    int sync_full;        /* 1: synchronous=FULL; 0: NORMAL */
    int64_t backoff_base; /* seconds */
    int64_t backoff_max;  /* seconds */
    int readers;          /* read connections in the pool, >= 1 */
    struct store_hooks hooks;
};

/* Totals of one sweep batch. */
struct sweep_result {
    int requeued; /* expired or timed-out leases sent back to queued */
    int failed;   /* expired or timed-out leases with attempts exhausted */
    int deleted;  /* succeeded/cancelled jobs past retention */
    int promoted; /* scheduled jobs that became due */
};

struct store;

/* What the store counted since it opened (store_read_stats). */
struct store_stats {
    uint64_t commits; /* write transactions committed */
    uint64_t ops;     /* write operations committed in them (ops / commits: the group size) */
};

/* The kinds of write store_submit() takes: the asynchronous forms of store_enqueue,
 * store_claim, store_heartbeat, store_complete, store_fail, store_cancel and store_retry. */
enum store_call_kind {
    STORE_CALL_ENQUEUE,
    STORE_CALL_CLAIM,
    STORE_CALL_HEARTBEAT,
    STORE_CALL_COMPLETE,
    STORE_CALL_FAIL,
    STORE_CALL_CANCEL,
    STORE_CALL_RETRY
};

/* One write for store_submit(), with the arguments and outputs of the matching store_*
 * function below. The caller owns the struct and everything it points to, which must stay
 * valid until done() runs; the store never touches the call after calling done(). */
struct store_call {
    enum store_call_kind kind;
    int64_t now;
    /* Inputs (borrowed); which ones are read depends on kind. */
    const struct job_spec *specs; /* enqueue: nspecs specs */
    size_t nspecs;
    const struct claim_req *claim; /* claim */
    int64_t id;                    /* heartbeat, complete, fail, cancel, retry */
    const char *token;             /* heartbeat, complete, fail */
    int64_t lease_seconds;         /* heartbeat */
    const char *json;              /* heartbeat: progress; complete: result */
    const struct fail_req *fail;   /* fail */
    /* Outputs, as the matching function fills them. out holds nspecs jobs (enqueue),
     * claim->max_jobs (claim) or one (the others). */
    struct job *out;
    int *created;             /* enqueue: nspecs flags */
    size_t n;                 /* claim: how many were claimed */
    enum store_result result; /* what the matching function would have returned */
    /* Called exactly once when the call is over, from the store's writer thread (or from the
     * caller's own thread, before store_submit returns, when the call could not start), with
     * no lock of the store held. It may free the call. */
    void (*done)(struct store_call *call);
    void *ctx; /* the caller's */
};

struct store_ops {
    enum store_result (*enqueue)(struct store *s, const struct job_spec *specs, size_t n,
                                 int64_t now, struct job *out, int *created);
    enum store_result (*claim)(struct store *s, const struct claim_req *req, int64_t now,
                               struct job *out, size_t *n);
    enum store_result (*heartbeat)(struct store *s, int64_t id, const char *token,
                                   int64_t lease_seconds, const char *progress, int64_t now,
                                   struct job *out);
    enum store_result (*complete)(struct store *s, int64_t id, const char *token,
                                  const char *result, int64_t now, struct job *out);
    enum store_result (*fail)(struct store *s, int64_t id, const char *token,
                              const struct fail_req *req, int64_t now, struct job *out);
    enum store_result (*cancel)(struct store *s, int64_t id, int64_t now, struct job *out);
    enum store_result (*retry)(struct store *s, int64_t id, int64_t now, struct job *out);
    enum store_result (*get)(struct store *s, int64_t id, struct job *out);
    enum store_result (*list)(struct store *s, const struct list_filter *f, struct job *out,
                              size_t *n, int *more);
    enum store_result (*queues)(struct store *s, int64_t now, struct queue_stats **out, size_t *n);
    enum store_result (*sweep)(struct store *s, int64_t now, int64_t retention, int batch,
                               struct sweep_result *res);
    enum store_result (*next_due)(struct store *s, int64_t *run_at);
    enum store_result (*ping)(struct store *s);
    void (*close)(struct store *s);
    void (*submit)(struct store *s, struct store_call *call);
    void (*stats)(struct store *s, struct store_stats *out);
};

/* Every backend's handle starts with this. */
struct store {
    const struct store_ops *ops;
};

/* Open the SQLite store at opts->path, creating the file and its directory-less schema
 * (migrations tracked by PRAGMA user_version). Returns the store, or NULL after logging why.
 * The caller releases it with store_close(). */
struct store *store_sqlite_open(const struct store_options *opts);

/* Enqueue n (1..JOB_BATCH_MAX) jobs in one transaction, all or nothing. out[i] receives job i
 * (created, or the existing job of an idempotency_key hit); created[i] is 1 when job i is new.
 * Returns STORE_OK when at least one job is new or n == 1 and it is new, STORE_EXISTS when
 * n == 1 and it was an idempotency hit; for n > 1 STORE_OK whenever it committed. */
static inline enum store_result store_enqueue(struct store *s, const struct job_spec *specs,
                                              size_t n, int64_t now, struct job *out, int *created)
{
    return s->ops->enqueue(s, specs, n, now, out, created);
}

/* Claim up to req->max_jobs due jobs for req->worker_id from req->queues, by priority desc,
 * run_at asc, id asc, taking only jobs whose every `requires` tag is in req->capabilities.
 * Each claimed job gets status running, attempts+1, fencing_token+1, a fresh random lease
 * token (out[i].lease_token), claimed_at = heartbeat_at = now and lease_expires_at = now +
 * lease_seconds. out must hold req->max_jobs jobs; *n is set to how many were claimed (0 is
 * STORE_OK). */
static inline enum store_result store_claim(struct store *s, const struct claim_req *req,
                                            int64_t now, struct job *out, size_t *n)
{
    return s->ops->claim(s, req, now, out, n);
}

/* Extend the live lease that `token` holds on job id to now + lease_seconds (lease_seconds 0:
 * the claim's lease length), set heartbeat_at = now and, when progress is not NULL, store it.
 * Returns STORE_NOT_FOUND, STORE_LEASE_LOST (token stale, job not running, lease or max
 * runtime expired) or STORE_OK. */
static inline enum store_result store_heartbeat(struct store *s, int64_t id, const char *token,
                                                int64_t lease_seconds, const char *progress,
                                                int64_t now, struct job *out)
{
    return s->ops->heartbeat(s, id, token, lease_seconds, progress, now, out);
}

/* Mark job id succeeded with `result` (JSON text, NULL for null) if token holds its live
 * lease. Repeating it with the same token once succeeded returns STORE_OK and the job
 * unchanged. Else STORE_NOT_FOUND or STORE_LEASE_LOST. */
static inline enum store_result store_complete(struct store *s, int64_t id, const char *token,
                                               const char *result, int64_t now, struct job *out)
{
    return s->ops->complete(s, id, token, result, now, out);
}

/* Record a failure of job id if token holds its live lease: back to queued with run_at = now
 * + backoff while retry is set and attempts < max_attempts, else failed. Returns STORE_OK,
 * STORE_NOT_FOUND or STORE_LEASE_LOST. */
static inline enum store_result store_fail(struct store *s, int64_t id, const char *token,
                                           const struct fail_req *req, int64_t now, struct job *out)
{
    return s->ops->fail(s, id, token, req, now, out);
}

/* Cancel a queued or running job (a running job's lease dies with it). STORE_CONFLICT for a
 * job that is already succeeded, failed or cancelled; STORE_NOT_FOUND. */
static inline enum store_result store_cancel(struct store *s, int64_t id, int64_t now,
                                             struct job *out)
{
    return s->ops->cancel(s, id, now, out);
}

/* Send a failed or cancelled job back to queued with run_at = now and attempts = 0.
 * STORE_CONFLICT for any other state; STORE_NOT_FOUND. */
static inline enum store_result store_retry(struct store *s, int64_t id, int64_t now,
                                            struct job *out)
{
    return s->ops->retry(s, id, now, out);
}

/* Read job id (without its lease token). STORE_OK or STORE_NOT_FOUND. Runs on a read
 * connection and never waits for a writer. */
static inline enum store_result store_get(struct store *s, int64_t id, struct job *out)
{
    return s->ops->get(s, id, out);
}

/* List jobs with id > f->after_id matching f, ordered by id, at most f->limit of them into
 * out (which must hold f->limit). *more is 1 when further matches exist. Read connection. */
static inline enum store_result store_list(struct store *s, const struct list_filter *f,
                                           struct job *out, size_t *n, int *more)
{
    return s->ops->list(s, f, out, n, more);
}

/* Per-queue counts for every queue that holds a job, ordered by name. *out is a new array
 * the caller releases with queue_stats_free(). Read connection. */
static inline enum store_result store_queues(struct store *s, int64_t now, struct queue_stats **out,
                                             size_t *n)
{
    return s->ops->queues(s, now, out, n);
}

/* One bounded sweep step, each part its own short transaction of at most `batch` rows:
 * promote due scheduled jobs; requeue or fail running jobs whose lease expired
 * (error_code "lease_expired") or whose max runtime passed (error_code "timeout"); delete
 * succeeded and cancelled jobs finished more than `retention` seconds ago. The caller loops
 * while any count equals batch. */
static inline enum store_result store_sweep(struct store *s, int64_t now, int64_t retention,
                                            int batch, struct sweep_result *res)
{
    return s->ops->sweep(s, now, retention, batch, res);
}

/* The earliest run_at of a scheduled job in *run_at, or JOB_NONE when there is none. */
static inline enum store_result store_next_due(struct store *s, int64_t *run_at)
{
    return s->ops->next_due(s, run_at);
}

/* STORE_OK when the database answers a read and accepts writes. */
static inline enum store_result store_ping(struct store *s)
{
    return s->ops->ping(s);
}

/* Start call (see struct store_call) and return without waiting for it: writes that arrive
 * together are committed together, and call->done(call) runs once the call's transaction
 * committed or failed, with call->result and the outputs set exactly as the matching
 * synchronous function would have set them. A 2xx built on a STORE_OK result is durable
 * like theirs. */
static inline void store_submit(struct store *s, struct store_call *call)
{
    s->ops->submit(s, call);
}

/* Copy the store's counters into *out. Safe from any thread. This function can't fail. */
static inline void store_read_stats(struct store *s, struct store_stats *out)
{
    s->ops->stats(s, out);
}

/* Close the store and free it. Accepts NULL. No call may be in flight. */
static inline void store_close(struct store *s)
{
    if (s)
        s->ops->close(s);
}

/* A short lowercase name of a result, for logs. */
const char *store_result_name(enum store_result r);

#endif
