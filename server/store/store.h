/* The storage seam. Handlers and the sweeper talk to a struct store through these
 * functions only. Each backend lives in its own folder behind it (store/sqlite: an embedded
 * file; store/pg: PostgreSQL, shared by any number of jobqd processes); store_open() picks
 * one from the database URL. This header says what each call guarantees, never how.
 *
 * Rules for every function below:
 * - `now` is the current time in epoch seconds, passed in (only clock.c reads the clock). A
 *   backend shared by several processes keeps every process on one clock (see its folder).
 *   A write submitted with at_clock (struct store_call) is decided at the store's clock
 *   when it runs, not at the now it was made with.
 * - `out` jobs are filled on STORE_OK (and STORE_EXISTS); the caller owns their strings and
 *   releases them with job_clear()/job_array_free(). On any other result out is untouched.
 * - Each write is atomic: all of it or nothing is applied, and no other writer, in this
 *   process or another, sees or overwrites half of it. Every lease operation re-checks the
 *   token, the status and the lease deadline in the step that changes the row. A write
 *   returns (or calls done) only after it is durable; one write failing never takes another
 *   write's work with it. Nothing slow runs inside a write.
 * - Every call ends within a bounded time (the backend's retry budget, connection checkout
 *   and statement timeouts): none waits forever for a lock or a connection.
 * - All functions are safe to call from many threads at once.
 * - STORE_BUSY means the database stayed contended past the retry budget (answer 503);
 *   STORE_UNAVAILABLE that it cannot be used now (a fault that may clear by itself: disk
 *   full, read-only, connection lost, failover; answer 503); STORE_ERROR means anything else
 *   went wrong in storage; it has been logged with file:line (answer 500). */
#ifndef JOBQ_STORE_H
#define JOBQ_STORE_H

#include "event.h"
#include "job.h"
#include "limit.h"
#include "schedule.h"
#include "sweep_result.h"

enum store_result {
    STORE_OK = 0,
    STORE_EXISTS,      /* enqueue: an idempotency_key or dedup hit; out is that job */
    STORE_NOT_FOUND,   /* no job with that id */
    STORE_LEASE_LOST,  /* token does not match a live lease */
    STORE_CONFLICT,    /* the job's state does not allow the transition */
    STORE_BUSY,        /* locked past the retry budget */
    STORE_UNAVAILABLE, /* disk full, read-only, I/O error: a fault that may clear by itself */
    STORE_ERROR        /* anything else */
};

/* Hooks the store calls after a write that made something happen, from one of the store's
 * own threads (a hook must not call the store), with no lock of the store held, before the
 * write is answered; once per write for each queue and for the earliest schedule. A backend
 * shared by several processes also calls on_ready when another process made jobs claimable
 * (best effort: a long poll must look again now and then by itself) and on_lost when such
 * news may have been missed. Any of them may be NULL. */
struct store_hooks {
    /* Jobs in `queue` became claimable (enqueued due, requeued due, retried, promoted). */
    void (*on_ready)(void *ctx, const char *queue);
    /* A job was scheduled for `run_at` in the future (the timer may need to wake earlier);
     * run_at is on the clock the callers' `now` comes from. */
    void (*on_scheduled)(void *ctx, int64_t run_at);
    void *ctx;
    /* May be NULL: `jobs` jobs in `queue` became claimable, none of which requires anything,
     * so any claimer of the queue can take them (a long poll need wake only about that many
     * waiters). When it is NULL, or a job requires something or is not known, on_ready is
     * called instead. */
    void (*on_ready_some)(void *ctx, const char *queue, int jobs);
    /* News of other processes may have been lost (a reconnect): every waiter should look
     * again. */
    void (*on_lost)(void *ctx);
};

struct store_options {
    /* Where the data lives: a SQLite file path, or a PostgreSQL URL (postgres://... or
     * postgresql://..., any libpq connection URI). */
    const char *url;
    int64_t backoff_base; /* seconds */
    int64_t backoff_max;  /* seconds */
    struct store_hooks hooks;
    /* The event log's bounds (event.h): the sweep deletes the events older than
     * retention seconds, and the oldest beyond max events. */
    struct {
        int64_t retention; /* seconds, >= 1 */
        int64_t max;       /* events, >= 1 */
    } events;
    /* Options of the SQLite backend (ignored by the others). */
    struct {
        int sync_full; /* 1: an acknowledged write is on disk; 0: may lose the last ones */
        int readers;   /* read connections, >= 1 */
    } sqlite;
    /* Options of the PostgreSQL backend (ignored by the others). */
    struct {
        int pool_size;             /* connections for requests and the sweeper, >= 1 */
        int writers;               /* the most write transactions in flight; 0: the pool's */
        int64_t checkout_ms;       /* wait at most this long for a pooled connection */
        int64_t statement_ms;      /* statement_timeout of every statement */
        int64_t connect_timeout_s; /* libpq connect_timeout */
    } pg;
};

struct store;
struct counters_point;
struct job_link;
struct store_schedule;  /* store_schedule.h */
struct store_sqs_queue; /* store_sqs.h */
struct store_webhook;   /* store_webhook.h, with struct store_webhook_call */

/* What the store counted since it opened (store_read_stats). */
struct store_stats {
    uint64_t commits; /* write transactions committed */
    uint64_t ops;     /* write operations committed in them (ops / commits: the group size) */
    uint64_t retries; /* transactions run again after contention or a lost connection */
    uint64_t errors;  /* calls that ended STORE_BUSY, STORE_UNAVAILABLE or STORE_ERROR */
};

/* One figure of a backend's own, for /metrics: its name says its backend (jobq_sqlite_...,
 * jobq_pg_...). */
struct store_metric {
    const char *name; /* static */
    const char *help; /* static: one sentence */
    int counter;      /* 1: a counter (the name ends in _total); 0: a gauge */
    double value;
};

#define STORE_METRICS_MAX 16

/* The kinds of write store_submit() takes, each also a synchronous function built on it. */
enum store_call_kind {
    STORE_CALL_ENQUEUE,
    STORE_CALL_CLAIM,
    STORE_CALL_HEARTBEAT,
    STORE_CALL_COMPLETE,
    STORE_CALL_FAIL,
    STORE_CALL_CANCEL,
    STORE_CALL_RETRY,
    STORE_CALL_PAUSE,        /* pause or resume a queue */
    STORE_CALL_PURGE,        /* delete one bounded batch of a queue's jobs in one status */
    STORE_CALL_LIMIT_PUT,    /* create or replace a limit */
    STORE_CALL_LIMIT_DELETE, /* delete a limit */
    STORE_CALL_SNOOZE,       /* back to queued without spending an attempt */
    /* schedules */
    STORE_CALL_SCHEDULE_PUT,    /* create or replace a schedule */
    STORE_CALL_SCHEDULE_DELETE, /* delete a schedule */
    STORE_CALL_SCHEDULE_TICK,   /* one tick of a schedule: its job and its next run */
    STORE_CALL_SCHEDULE_PASS,   /* a ticker's pass: the liveness row */
    /* the SQS front end's queues (store_sqs.h) */
    STORE_CALL_SQS_QUEUE_PUT,    /* create a queue's row, or merge attributes into it */
    STORE_CALL_SQS_QUEUE_DELETE, /* delete a queue's row */
    STORE_CALL_WEBHOOK,          /* a webhook subscription's write (store_webhook.h: its op) */
    STORE_CALL_KIND_COUNT
};

/* The arguments and outputs of each kind of write, one struct per kind, named after the
 * matching store_* function below (which says what each means in full). Inputs are borrowed;
 * outputs are set as that function sets them. */

/* STORE_CALL_ENQUEUE: store_enqueue. */
struct store_enqueue_call {
    const struct job_spec *specs; /* in: n specs */
    size_t n;                     /* in: how many specs (1..JOB_BATCH_MAX) */
    struct job *out;              /* out: n jobs, job i for spec i (new or existing) */
    int *created;                 /* out: n flags, 1 when job i is new */
    /* out, with STORE_NOT_FOUND: the spec whose depends_on names a job that does not exist,
     * and that id (nothing was written). */
    size_t missing_spec;
    int64_t missing_id;
};

/* STORE_CALL_CLAIM: store_claim. */
struct store_claim_call {
    const struct claim_req *req; /* in: who claims what */
    struct job *out;             /* out: room for req->max_jobs jobs, the first n claimed */
    size_t n;                    /* out: how many were claimed */
};

/* STORE_CALL_HEARTBEAT: store_heartbeat. */
struct store_heartbeat_call {
    int64_t id;            /* in: the job */
    const char *token;     /* in: the lease token the worker holds */
    int64_t lease_seconds; /* in: the new lease length; 0: the claim's */
    const char *progress;  /* in: JSON text to store, NULL: keep the stored one */
    struct job *out;       /* out: the job as extended */
};

/* STORE_CALL_COMPLETE: store_complete. */
struct store_complete_call {
    int64_t id;         /* in: the job */
    const char *token;  /* in: the lease token the worker holds */
    const char *result; /* in: JSON text, NULL for null */
    struct job *out;    /* out: the succeeded job */
    int repeated;       /* out: 1 when it was an idempotent repeat (nothing changed) */
};

/* STORE_CALL_FAIL: store_fail. */
struct store_fail_call {
    int64_t id;                 /* in: the job */
    const char *token;          /* in: the lease token the worker holds */
    const struct fail_req *req; /* in: what the worker reports */
    struct job *out;            /* out: the job, requeued or failed */
};

/* STORE_CALL_CANCEL: store_cancel. */
struct store_cancel_call {
    int64_t id;      /* in: the job */
    struct job *out; /* out: the cancelled job */
};

/* STORE_CALL_RETRY: store_retry. */
struct store_retry_call {
    int64_t id;      /* in: the job */
    struct job *out; /* out: the job, queued again */
};

/* STORE_CALL_PAUSE: store_pause. Its only output is the result. */
struct store_pause_call {
    const char *queue; /* in: the queue's name */
    int paused;        /* in: 1 pause, 0 resume */
};

/* STORE_CALL_PURGE: store_purge. */
struct store_purge_call {
    const char *queue; /* in: the queue's name */
    int status;        /* in: the API status (enum job_status) */
    int limit;         /* in: at most this many jobs (1..STORE_PURGE_BATCH) */
    size_t deleted;    /* out: how many were deleted */
};

/* STORE_CALL_LIMIT_PUT: store_limit_put. */
struct store_limit_put_call {
    const struct limit *limit; /* in: key, max_running, rate_jobs, rate_per_seconds */
    struct limit *out;         /* out: the limit as stored, with running and paused_until */
};

/* STORE_CALL_LIMIT_DELETE: store_limit_delete. */
struct store_limit_delete_call {
    const char *key;   /* in: a checked limit key */
    struct limit *out; /* out: the limit as it was, with running and paused_until */
};

/* STORE_CALL_SNOOZE: store_snooze. */
struct store_snooze_call {
    int64_t id;        /* in: the job */
    const char *token; /* in: the lease token the worker holds */
    int64_t seconds;   /* in: back to queued for this long (0..JOB_DELAY_MAX) */
    int pause_key;     /* in: 1: the job's concurrency key waits as long */
    struct job *out;   /* out: the job, queued again */
};

/* STORE_CALL_SCHEDULE_PUT: store_schedule_put. */
struct store_schedule_put_call {
    const struct store_schedule *in; /* in: name, job, cron or every_seconds, timezone,
                                        catch_up, overlap, paused */
    /* in: the next_run_at to store at now (the store's now) when the row held old_next
     * (JOB_NONE: the name is new or the schedule was paused), JOB_NONE when it never ticks
     * again; a pure function of (rule, old_next, now), called inside the write. */
    int64_t (*next_of)(const void *rule, int64_t old_next, int64_t now);
    const void *rule;
    struct store_schedule *out; /* out: the schedule as stored */
    int created;                /* out: 1 when the name was new */
};

/* STORE_CALL_SCHEDULE_DELETE: store_schedule_delete. */
struct store_schedule_delete_call {
    const char *name;           /* in: a checked schedule name */
    struct store_schedule *out; /* out: the schedule as it was */
};

/* STORE_CALL_SCHEDULE_TICK: store_schedule_tick. */
struct store_schedule_tick_call {
    const char *name;                 /* in: the schedule */
    int64_t rev;                      /* in: its rev as read (compared and swapped) */
    int64_t next_run_at;              /* in: its next_run_at as read (compared) */
    int64_t next;                     /* in: its next_run_at after this tick (JOB_NONE: never) */
    int64_t tick;                     /* in: the tick whose job spec is (JOB_NONE with spec NULL) */
    const struct job_spec *spec;      /* in: the tick's job (its idempotency key set), NULL: none */
    const struct schedule_rule *rule; /* in: its overlap (schedule_overlap_skip) */
    struct job *out;                  /* out: the tick's job when job_id is set */
    int64_t job_id;                   /* out: the tick's job (new or an idempotency hit), 0: none */
    int created;                      /* out: 1 when that job is new */
    int skipped;                      /* out: 1 when the previous tick's job was active */
};

/* STORE_CALL_SCHEDULE_PASS: store_schedule_pass. */
struct store_schedule_pass_call {
    int stop;            /* in: 1: a clean stop's mark (store_schedule_stop), not a pass */
    int64_t seen_before; /* out: the last pass of any ticker before this one, JOB_NONE: none */
    int64_t stopped_at;  /* out: the clean stop marked after that pass, JOB_NONE: none */
    int64_t now;         /* out: the store's now, as written */
};

/* STORE_CALL_SQS_QUEUE_PUT: store_sqs_queue_put (store_sqs.h). */
struct store_sqs_queue_put_call {
    const char *name;            /* in: a checked SQS queue name */
    const char *attributes;      /* in: a JSON object of strings, compact */
    int create;                  /* in: 1 create (or find), 0 merge into the existing row */
    struct store_sqs_queue *out; /* out: the row as stored */
};

/* STORE_CALL_SQS_QUEUE_DELETE: store_sqs_queue_delete (store_sqs.h). */
struct store_sqs_queue_delete_call {
    const char *name; /* in: the queue */
};

/* One write for store_submit(): what every kind has (its kind, now, result and the done
 * callback), then the arguments and outputs of its kind, in the union member of that name
 * (call->enqueue for STORE_CALL_ENQUEUE, ...); no other member may be read or written. The
 * caller owns the struct and everything it points to, which must stay valid until done()
 * runs; the store never touches the call after calling done(). */
struct store_call {
    enum store_call_kind kind;
    int64_t now;
    /* 1: now is the clock's when the call was made (a request's): the store decides the call
     * at its own clock's time when the call runs, read when the call's transaction begins and
     * again after a wait for a lock the call decides under, never earlier than now, so that
     * a call that waited (for the writer, a connection, a lock) is not decided at the time
     * it was made (claimed_at, a lease's deadline, an expiry, a rate window); the store may
     * move now itself up to that time before done(). 0: it is decided at now as given (tests
     * and the ticker drive time so). */
    int at_clock;
    enum store_result result; /* what the matching function would have returned */
    /* Called exactly once when the call is over, from one of the store's threads (or from
     * the caller's own thread, before store_submit returns, when the call could not start),
     * with no lock of the store held. It may free the call. */
    void (*done)(struct store_call *call);
    void *ctx;                                    /* the caller's */
    void (*caller_done)(struct store_call *call); /* private to store_submit() */
    union {
        struct store_enqueue_call enqueue;
        struct store_claim_call claim;
        struct store_heartbeat_call heartbeat;
        struct store_complete_call complete;
        struct store_fail_call fail;
        struct store_cancel_call cancel;
        struct store_retry_call retry;
        struct store_pause_call pause;
        struct store_purge_call purge;
        struct store_limit_put_call limit_put;
        struct store_limit_delete_call limit_delete;
        struct store_snooze_call snooze;
        struct store_schedule_put_call schedule_put;
        struct store_schedule_delete_call schedule_delete;
        struct store_schedule_tick_call schedule_tick;
        struct store_schedule_pass_call schedule_pass;
        struct store_sqs_queue_put_call sqs_queue_put;
        struct store_sqs_queue_delete_call sqs_queue_delete;
        struct store_webhook_call *webhook; /* the caller's, like everything it points to */
    };
};

/* For backends that serve several kinds with one code path: the job a heartbeat, complete,
 * fail, cancel, retry or snooze call names, and where its answer goes (0 and NULL for the other
 * kinds, which name no one job). */
static inline int64_t store_call_job_id(const struct store_call *call)
{
    switch (call->kind) {
    case STORE_CALL_HEARTBEAT:
        return call->heartbeat.id;
    case STORE_CALL_COMPLETE:
        return call->complete.id;
    case STORE_CALL_FAIL:
        return call->fail.id;
    case STORE_CALL_CANCEL:
        return call->cancel.id;
    case STORE_CALL_RETRY:
        return call->retry.id;
    case STORE_CALL_SNOOZE:
        return call->snooze.id;
    default:
        return 0;
    }
}

static inline struct job *store_call_job_out(const struct store_call *call)
{
    switch (call->kind) {
    case STORE_CALL_HEARTBEAT:
        return call->heartbeat.out;
    case STORE_CALL_COMPLETE:
        return call->complete.out;
    case STORE_CALL_FAIL:
        return call->fail.out;
    case STORE_CALL_CANCEL:
        return call->cancel.out;
    case STORE_CALL_RETRY:
        return call->retry.out;
    case STORE_CALL_SNOOZE:
        return call->snooze.out;
    default:
        return NULL;
    }
}

struct event_page;

/* What a backend implements. Writes go through submit only; the synchronous forms are
 * built on it once, in store.c. */
struct store_ops {
    void (*submit)(struct store *s, struct store_call *call);
    enum store_result (*get)(struct store *s, int64_t id, struct job *out);
    enum store_result (*list)(struct store *s, const struct list_filter *f, struct job *out,
                              size_t *n, int *more);
    enum store_result (*queues)(struct store *s, int64_t now, struct queue_stats **out, size_t *n);
    enum store_result (*attempts)(struct store *s, int64_t id, struct job_attempt **out, size_t *n);
    enum store_result (*limits)(struct store *s, const char *key, int64_t now, struct limit **out,
                                size_t *n);
    enum store_result (*links)(struct store *s, int64_t id, int dependents, struct job_link **out,
                               size_t *n, int *more);
    enum store_result (*schedules)(struct store *s, const char *name, struct store_schedule **out,
                                   size_t *n);
    enum store_result (*schedules_next)(struct store *s, int limit, struct store_schedule **out,
                                        size_t *n);
    enum store_result (*schedules_count)(struct store *s, size_t *n);
    enum store_result (*events)(struct store *s, const struct event_filter *f,
                                struct event_page *out);
    enum store_result (*webhooks)(struct store *s, const char *name, struct store_webhook **out,
                                  size_t *n);
    enum store_result (*sqs_queues)(struct store *s, const char *prefix, int exact,
                                    const char *after, int limit, struct store_sqs_queue **out,
                                    size_t *n);
    enum store_result (*sweep)(struct store *s, int64_t now, int64_t retention, int batch,
                               struct sweep_result *res);
    /* May be NULL: the backend's claims see due jobs by themselves. */
    enum store_result (*next_due)(struct store *s, int64_t *run_at);
    enum store_result (*ping)(struct store *s);
    /* May be NULL: the store's clock is this process's. */
    int64_t (*clock)(struct store *s, int64_t now);
    void (*stats)(struct store *s, struct store_stats *out);
    /* May be NULL: the backend reports no figures of its own. */
    size_t (*metrics)(struct store *s, struct store_metric out[STORE_METRICS_MAX]);
    /* May be NULL (with throughput_others): one process owns the data, so its own counters
     * are the whole picture. */
    enum store_result (*throughput_publish)(struct store *s, int64_t now,
                                            const struct counters_point *pts, size_t n);
    enum store_result (*throughput_others)(struct store *s, int64_t now, struct counters_point *pts,
                                           size_t n);
    /* May be NULL: the backend's calls end within their own bounds. */
    void (*abandon)(struct store *s);
    void (*close)(struct store *s);
};

/* Every backend's handle starts with this. */
struct store {
    const struct store_ops *ops;
    /* 1 when other processes may write to the same data (their news of claimable jobs is a
     * hint that may be lost: parked long polls must look again now and then). */
    int shared;
};

/* Open the store that opts->url names: a postgres:// or postgresql:// URL opens the
 * PostgreSQL backend, anything else is a SQLite file path (its directory is created when
 * missing; a second process on the same file is refused). The schema is brought up to date
 * (versioned migrations; a database newer than this program is refused). Returns the store,
 * or NULL after logging one line that says why (never a password). The caller releases it
 * with store_close(). */
struct store *store_open(const struct store_options *opts);

/* 1 when url names a PostgreSQL database (postgres:// or postgresql://). */
int store_url_is_pg(const char *url);

/* Copy url into out (size n, truncated) with any password replaced by "***", for logs.
 * This function can't fail. */
void store_url_redact(const char *url, char *out, size_t n);

/* Jobs a purge deletes per transaction at most: other writers wait on one batch at most. */
#define STORE_PURGE_BATCH 1000

/* Pause (paused = 1) or resume (0) queue, which need not hold any job. Claims skip a paused
 * queue, in every process, from the moment this returns; resuming calls on_ready for the
 * queue (parked claims look again). Idempotent. */
enum store_result store_pause(struct store *s, const char *queue, int paused, int64_t now);

/* Delete at most limit (1..STORE_PURGE_BATCH) jobs of queue in API status `status`
 * (JOB_QUEUED covers jobs due later too; JOB_BLOCKED the jobs waiting for dependencies;
 * JOB_RUNNING is never purged: STORE_CONFLICT), oldest id first, in one transaction; *deleted
 * is how many. The caller repeats while *deleted == limit. */
enum store_result store_purge(struct store *s, const char *queue, int status, int limit,
                              int64_t now, size_t *deleted);

/* The most limits a store holds: a PUT of a new key beyond it is refused (STORE_CONFLICT),
 * so that GET /limits answers them all at once. */
#define STORE_LIMITS_MAX 10000

/* Create or replace the limit limit->key (a checked key; its max_running, rate_jobs and
 * rate_per_seconds as limit_body_check() sets them) and, in the same transaction, reopen
 * every lane of the keys it covers (the key itself, or every key starting with a pattern's
 * prefix), calling on_ready for their queues: waiting jobs are looked at again at once under
 * the new limit. *out is the limit as stored, with running and paused_until as
 * store_limits() shows them. STORE_CONFLICT when the key is new and STORE_LIMITS_MAX limits
 * exist already (nothing is written). */
enum store_result store_limit_put(struct store *s, const struct limit *limit, int64_t now,
                                  struct limit *out);

/* Delete the limit `key` and reopen the lanes it covered, as store_limit_put. *out is the
 * limit as it was, with running and paused_until. STORE_NOT_FOUND when there is none. */
enum store_result store_limit_delete(struct store *s, const char *key, int64_t now,
                                     struct limit *out);

/* Enqueue n (1..JOB_BATCH_MAX) jobs in one transaction, all or nothing, spec after spec.
 * out[i] receives job i: created, or the existing job of an idempotency_key hit, or (a spec
 * with a dedup key and no idempotency hit) what dedup_decide_spec (dedup.h) says of the job
 * its mode selects among the jobs of its queue and key, earlier specs of the call included:
 * that job unchanged, that job with the spec's payload and run_at = now + seconds (debounce),
 * or a new job (debounce: due at now + seconds). created[i] is 1 when job i is new. The
 * enqueues of one queue and dedup key are decided one at a time, across every process
 * sharing the data, each on what the previous one committed. Returns STORE_OK when at least
 * one job is new or n == 1 and it is new, STORE_EXISTS when n == 1 and it was not created;
 * for n > 1 STORE_OK whenever it committed. A spec's delay is resolved on the store's clock
 * (job_spec_run_at with the now of every other time the job keeps), never on the caller's.
 * Dependencies (depends_on, depend.h): an id entry names an existing job (else STORE_NOT_FOUND
 * with missing_spec and missing_id set, and nothing written); an index entry names an
 * earlier-inserted element of the same call: specs are inserted in depend_order()'s order
 * (the caller checked it has no cycle), so ids follow that order. A new job with
 * dependencies is blocked, queued or cancelled as depend_plan() says of its dependencies'
 * statuses at the commit, in the same transaction that records its edges: a dependency that
 * ends concurrently, in any process, is either seen ended here or settles the edge itself. */
enum store_result store_enqueue(struct store *s, const struct job_spec *specs, size_t n,
                                int64_t now, struct job *out, int *created);

/* Claim up to req->max_jobs due jobs for req->worker_id from req->queues, by priority desc,
 * run_at asc, id asc, taking only jobs whose every `requires` tag is in req->capabilities.
 * Each claimed job gets status running, attempts+1, fencing_token+1, a fresh random lease
 * token (out[i].lease_token), claimed_at = heartbeat_at = now and lease_expires_at = now +
 * lease_seconds. out must hold req->max_jobs jobs; *n is set to how many were claimed (0 is
 * STORE_OK). */
enum store_result store_claim(struct store *s, const struct claim_req *req, int64_t now,
                              struct job *out, size_t *n);

/* Extend the live lease that `token` holds on job id to now + lease_seconds (lease_seconds 0:
 * the claim's lease length), set heartbeat_at = now and, when progress is not NULL, store it.
 * Returns STORE_NOT_FOUND, STORE_LEASE_LOST (token stale, job not running, lease or max
 * runtime expired) or STORE_OK. */
enum store_result store_heartbeat(struct store *s, int64_t id, const char *token,
                                  int64_t lease_seconds, const char *progress, int64_t now,
                                  struct job *out);

/* Mark job id succeeded with `result` (JSON text, NULL for null) if token holds its live
 * lease. Repeating it with the same token once succeeded returns STORE_OK and the job
 * unchanged. Else STORE_NOT_FOUND or STORE_LEASE_LOST. */
enum store_result store_complete(struct store *s, int64_t id, const char *token, const char *result,
                                 int64_t now, struct job *out);

/* Record a failure of job id if token holds its live lease: back to queued with run_at = now
 * + backoff while retry is set and attempts < max_attempts, else failed. Returns STORE_OK,
 * STORE_NOT_FOUND or STORE_LEASE_LOST. */
enum store_result store_fail(struct store *s, int64_t id, const char *token,
                             const struct fail_req *req, int64_t now, struct job *out);

/* Snooze job id if token holds its live lease (checked as for store_fail, in the step that
 * changes the row): back to queued with run_at = now + seconds (0..JOB_DELAY_MAX), the claim
 * undone in attempts (never below 0) but kept in fencing_token, and the attempt recorded in
 * the history as ATTEMPT_SNOOZED (job_snooze_plan, lease.h). With pause_key and a job that has
 * a concurrency_key, in the same transaction the key's paused_until becomes the later of the
 * one it holds and now + seconds (limit_pause_merge, limit.h): no job of the key is claimed
 * before it, in any process. Returns STORE_OK, STORE_NOT_FOUND or STORE_LEASE_LOST. */
enum store_result store_snooze(struct store *s, int64_t id, const char *token, int64_t seconds,
                               int pause_key, int64_t now, struct job *out);

/* Cancel a queued, blocked or running job (a running job's lease dies with it). STORE_CONFLICT
 * for a job that is already succeeded, failed or cancelled; STORE_NOT_FOUND.
 * Every write that ends a job some job depends on (complete, fail without retry, cancel, a
 * sweep that fails a lease or expires a job) settles its dependents in the same transaction
 * (depend.h): released (queued, on_ready for their queues) or cancelled with
 * "dependency_failed", down the graph for at most DEPEND_STEP_MAX jobs; the sweep goes on
 * from where it stopped. */
enum store_result store_cancel(struct store *s, int64_t id, int64_t now, struct job *out);

/* Send a failed or cancelled job back to queued with run_at = now and attempts = 0 (blocked
 * instead when it has dependencies that have not all settled again: depend_plan()), and, in
 * the same transaction, every dependent cancelled because of it back to blocked, re-evaluated
 * from its dependencies (depend.h), down the graph as a job's end does. STORE_CONFLICT for
 * any other state; STORE_NOT_FOUND. */
enum store_result store_retry(struct store *s, int64_t id, int64_t now, struct job *out);

/* Read job id (without its lease token). STORE_OK or STORE_NOT_FOUND. Never waits for a
 * writer. */
static inline enum store_result store_get(struct store *s, int64_t id, struct job *out)
{
    return s->ops->get(s, id, out);
}

/* List jobs with id > f->after_id matching f, ordered by id, at most f->limit of them into
 * out (which must hold f->limit). *more is 1 when further matches exist. */
static inline enum store_result store_list(struct store *s, const struct list_filter *f,
                                           struct job *out, size_t *n, int *more)
{
    return s->ops->list(s, f, out, n, more);
}

/* Per-queue counts for every queue that holds a job or is paused, ordered by name (bytewise).
 * The counts are kept up by every write (no scan of the jobs); the age costs one index probe
 * per queue that holds queued jobs. *out is a new array the caller releases with
 * queue_stats_free(). */
static inline enum store_result store_queues(struct store *s, int64_t now, struct queue_stats **out,
                                             size_t *n)
{
    return s->ops->queues(s, now, out, n);
}

/* The attempt history of job id, oldest first (at most JOB_ATTEMPTS_KEPT, the newest): one
 * entry per claim, written by the transaction of the claim and ended by the one that ended
 * its lease. *out is a new array (NULL when empty) the caller releases with
 * job_attempts_free(). STORE_NOT_FOUND for an unknown job. Never waits for a writer. */
static inline enum store_result store_attempts(struct store *s, int64_t id,
                                               struct job_attempt **out, size_t *n)
{
    return s->ops->attempts(s, id, out, n);
}

/* One job a job depends on, or one that depends on it (GET /jobs/{id}/dependencies). Owns
 * result. */
struct job_link {
    int64_t id;
    enum job_status status;
    char *result; /* compact JSON text, NULL for null */
    char *queue;
};

/* Release an array of n links and the array itself. Accepts NULL. */
void job_links_free(struct job_link *links, size_t n);

/* The jobs that job id depends on (dependents 0: every one of its depends_on that still
 * exists, at most JOB_DEPS_MAX) or the jobs that depend on it (dependents 1: at most
 * STORE_LINKS_MAX, the lowest ids; *more is 1 when there are others), ordered by id. *out is
 * a new array (NULL when empty) the caller releases with job_links_free(). STORE_NOT_FOUND
 * for an unknown job. Never waits for a writer. */
#define STORE_LINKS_MAX 1000
static inline enum store_result store_links(struct store *s, int64_t id, int dependents,
                                            struct job_link **out, size_t *n, int *more)
{
    return s->ops->links(s, id, dependents, out, n, more);
}

/* The limits, ordered by key (bytewise), each with what it shows of the keys it governs
 * (limit_tally: running is the sum of the running jobs of the keys for which it is the limit
 * that applies, limit_resolve; so an exact limit counts its own key, and a pattern the keys
 * that start with its prefix and that no exact limit or longer pattern takes; paused_until
 * the latest pause among them that is after now, JOB_NONE when none): every limit when key is
 * NULL (at most STORE_LIMITS_MAX), else the limit `key` alone (STORE_NOT_FOUND when there is
 * none). *out is a new array (NULL when empty) the caller releases with free(). The cost is
 * one read of the limits, of the running jobs that have a key, and of the paused keys (of the
 * key or under the pattern when key is given). Never waits for a writer. */
static inline enum store_result store_limits(struct store *s, const char *key, int64_t now,
                                             struct limit **out, size_t *n)
{
    return s->ops->limits(s, key, now, out, n);
}

/* One bounded sweep step, each part its own short transaction of at most `batch` rows:
 * make due scheduled jobs claimable (where the backend needs it); requeue or fail running
 * jobs whose lease expired (error_code "lease_expired") or whose max runtime passed
 * (error_code "timeout"), by the same rule as store_fail (job_lease_end_plan, lease.h);
 * cancel queued jobs whose expires_at passed (expiry_passed, expiry.h: status cancelled,
 * error_code "expired", finished_at now; a running job is left alone); delete
 * succeeded and cancelled jobs finished more than `retention` seconds ago, their dependents
 * settled and pinned in the same transaction as store_purge's (depend.h); delete the oldest
 * events past the event log's bounds (store_options.events), never the newest. At most one
 * process sweeps at a time: when another holds the role, nothing is done, res->led is 0 and
 * the result is STORE_OK. The caller loops while any count equals batch. The leases ended
 * are counted by queue (counters.h) when their transaction committed. */
enum store_result store_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                              struct sweep_result *res);

/* The earliest run_at of a queued job that is not yet due and that the sweeper must make
 * claimable at that second, in *run_at; JOB_NONE when there is none, or when the backend's
 * claims see due jobs by themselves. */
static inline enum store_result store_next_due(struct store *s, int64_t *run_at)
{
    if (!s->ops->next_due) {
        *run_at = JOB_NONE;
        return STORE_OK;
    }
    return s->ops->next_due(s, run_at);
}

/* STORE_OK when the database answers a read and accepts writes. STORE_UNAVAILABLE also when
 * a newer jobqd migrated the shared database in a way this program cannot work with (logged,
 * naming the migration; PostgreSQL). */
static inline enum store_result store_ping(struct store *s)
{
    return s->ops->ping(s);
}

/* now (this process's clock, epoch seconds) on the store's clock: the time the store decides
 * writes at (PostgreSQL: the database's, through the skew measured at every connect and
 * ping; SQLite: now itself). For a check that must agree with the store without a round trip
 * (an SQS request's SigV4 date). No I/O; this function can't fail. Thread-safe. */
static inline int64_t store_clock_now(struct store *s, int64_t now)
{
    return s->ops->clock ? s->ops->clock(s, now) : now;
}

/* Start call (see struct store_call) and return without waiting for it: call->done(call)
 * runs once the write is durable or failed, with call->result and the outputs of its kind's
 * member set exactly as the matching synchronous function would have set them. A 2xx built on a STORE_OK result
 * is durable like theirs. What a committed call did is counted (counters.h) before done()
 * runs. */
void store_submit(struct store *s, struct store_call *call);

/* Submit call (its done and ctx are overwritten) and wait for it; returns call->result, with
 * the outputs of its kind's member set as the matching synchronous function sets them. */
enum store_result store_call_run(struct store *s, struct store_call *call);

/* Count what a call that is over did (counters.h): nothing unless its result says it
 * committed. store_submit does it before done() runs; exported for tests. Borrows call. */
void store_count_call(const struct store_call *call);

/* Copy the store's counters into *out. Safe from any thread. This function can't fail. */
static inline void store_read_stats(struct store *s, struct store_stats *out)
{
    s->ops->stats(s, out);
}

/* Fill out with the backend's own figures (pool sizes, connections in use, file sizes...)
 * and return how many (at most STORE_METRICS_MAX). Cheap: no query, no wait for a lock held
 * across I/O. Safe from any thread. This function can't fail. */
static inline size_t store_metrics(struct store *s, struct store_metric out[STORE_METRICS_MAX])
{
    return s->ops->metrics ? s->ops->metrics(s, out) : 0;
}

/* Share this process's throughput buckets pts[0..n) (counters.h; zero buckets may be left
 * out) with the other processes of a shared store, replacing what it shared for the same
 * buckets before; buckets older than 15 minutes are forgotten. A store that is not shared
 * does nothing. One short statement, outside any other transaction. */
static inline enum store_result store_throughput_publish(struct store *s, int64_t now,
                                                         const struct counters_point *pts, size_t n)
{
    return s->ops->throughput_publish ? s->ops->throughput_publish(s, now, pts, n) : STORE_OK;
}

/* Add to each of pts[0..n) (buckets by their `at`) what the other processes of a shared
 * store published for that bucket. A store that is not shared adds nothing. */
static inline enum store_result store_throughput_others(struct store *s, int64_t now,
                                                        struct counters_point *pts, size_t n)
{
    return s->ops->throughput_others ? s->ops->throughput_others(s, now, pts, n) : STORE_OK;
}

/* Shutdown, when calls outlive its timeout: calls not started yet end STORE_UNAVAILABLE at
 * once and those in progress are asked to stop (their statements cancelled); every call's
 * done() still runs, once. Later calls end STORE_UNAVAILABLE. A backend without it (NULL)
 * lets its calls end within their own bounds. This function can't fail. */
static inline void store_abandon(struct store *s)
{
    if (s->ops->abandon)
        s->ops->abandon(s);
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
