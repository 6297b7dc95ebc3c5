/* The job record and the request shapes that the store takes.
 * Pure data: no I/O, no HTTP, no JSON parsing. */
#ifndef JOBQ_JOB_H
#define JOBQ_JOB_H

#include <stddef.h>
#include <stdint.h>

/* A nullable integer field (a time, max_runtime_seconds) holds JOB_NONE when it is null. */
#define JOB_NONE INT64_MIN

/* Limits of the v1 contract (../shared/API.md). */
#define JOB_QUEUE_MAX 128           /* bytes of A-Z a-z 0-9 . _ : - */
#define JOB_IDENT_MAX 200           /* worker_id, idempotency_key, error_code */
#define JOB_TAGS_MAX 32             /* requires, capabilities */
#define JOB_TAG_MAX 64              /* bytes per tag */
#define JOB_QUEUES_MAX 32           /* queues[] in a claim */
#define JOB_BATCH_MAX 1000          /* jobs in POST /jobs/batch */
#define JOB_CLAIM_MAX 100           /* max_jobs in a claim */
#define JOB_LIST_MAX 1000           /* limit in GET /jobs */
#define JOB_LEASE_MAX 86400         /* lease_seconds */
#define JOB_WAIT_MAX 60             /* wait_seconds */
#define JOB_ATTEMPTS_MAX 1000       /* max_attempts */
#define JOB_RUNTIME_MAX 2592000     /* max_runtime_seconds */
#define JOB_DELAY_MAX 31536000      /* delay_seconds, retry_in_seconds */
#define JOB_RUN_AT_MAX 4102444799LL /* run_at: before 2100-01-01 UTC, a bound that holds still */
#define JOB_TOKEN_LEN 32            /* lease token: 32 URL-safe chars, 192 random bits */
#define JOB_DEPS_MAX 1000           /* depends_on entries of one job */
#define JOB_REF_MAX 200             /* bytes of a batch element's ref */

/* The statuses of the API; the store returns these only. The numbers are stored: append
 * only. 0 is no API status: a backend may store a state of its own under it (the SQLite
 * backend keeps a queued job that is not due yet as "scheduled", out of its claim index). */
enum job_status {
    JOB_STATUS_NONE = 0,
    JOB_QUEUED = 1,
    JOB_RUNNING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_BLOCKED, /* waits for its dependencies (../shared/API.md "Workflows"): never claimed */
    JOB_STATUS_COUNT
};

/* How an enqueue with a dedup key treats an earlier job of its queue with the same key
 * (../shared/API.md "Flow control"; the rules are dedup.h's). Stored as these numbers:
 * append only. */
enum dedup_mode {
    DEDUP_NONE = 0,     /* the job was enqueued without dedup */
    DEDUP_ACTIVE = 1,   /* one queued, blocked or running: answer it, create nothing */
    DEDUP_WINDOW = 2,   /* one enqueued in the last `seconds`: answer it */
    DEDUP_DEBOUNCE = 3, /* one queued, never claimed: replace its payload, push run_at */
    DEDUP_MODE_COUNT
};

/* What a dependent does when one of its dependencies ends failed or cancelled
 * (on_dependency_failure). Stored as these numbers: append only. */
enum dep_mode {
    DEP_CANCEL = 0, /* the dependent is cancelled (error_code "dependency_failed") */
    DEP_RUN = 1,    /* the dependency counts as settled: a clean-up or callback job */
    DEP_MODE_COUNT
};

/* One entry of an enqueue's depends_on: an existing job's id, or (inside a batch) the index
 * of another element of the same batch, resolved from its ref. */
struct job_dep {
    int64_t id;    /* > 0: an existing job; 0: the element `index` */
    int32_t index; /* the element of the batch when id is 0 */
};

/* One job as stored. Strings are owned by the struct (malloc'd) and released by job_clear().
 * JSON-valued fields (payload, requires, result, progress, error_detail) hold compact JSON
 * text; a NULL pointer means JSON null (payload is never NULL once loaded), except requires,
 * which is NULL when empty (the API shows []): an empty requires has that one form. */
struct job {
    int64_t id;
    char *queue;
    enum job_status status;
    char *payload;
    int64_t priority;
    int64_t run_at;
    int64_t attempts;
    int64_t max_attempts;
    int64_t fencing_token;
    int64_t max_runtime_seconds; /* JOB_NONE when unset */
    char *requires;
    char *idempotency_key; /* NULL when unset */
    int64_t created_at;
    int64_t claimed_at;       /* JOB_NONE when never claimed */
    int64_t heartbeat_at;     /* JOB_NONE */
    int64_t lease_expires_at; /* JOB_NONE */
    char *worker_id;          /* NULL */
    int64_t finished_at;      /* JOB_NONE */
    char *result;
    char *progress;
    char *error_code;   /* plain string, NULL */
    char *error_detail; /* JSON text, NULL */
    char *lease_token;  /* set only in the answer to a claim, else NULL */
    /* Flow control (NULL / JOB_NONE / DEDUP_NONE when unset). */
    char *concurrency_key;
    int64_t expires_at; /* a queued job is never claimed from then on */
    char *dedup_key;
    enum dedup_mode dedup_mode;
    int64_t dedup_seconds; /* JOB_NONE for active */
    /* Workflows: the ids it depends on as a compact JSON array ("[1,2]"), NULL when none (the
     * API shows []); what it does when one of them fails. */
    char *depends_on;
    enum dep_mode on_dependency_failure;
    int has_dependents; /* 1: some job depends on it (kept by the store; the API never shows it) */
    /* W3C trace context of the request that created it (trace.h), NULL when none. */
    char *traceparent;
    char *tracestate;
};

/* What a producer asks for. Borrowed strings: the store copies what it keeps. */
struct job_spec {
    const char *queue;   /* validated queue name */
    const char *payload; /* compact JSON text, required */
    int32_t priority;
    /* When it is due: at run_at (epoch seconds, as a client gave it), or, when run_at is
     * JOB_NONE, `delay` seconds (0..JOB_DELAY_MAX) after the store's now, on the store's
     * clock (job_spec_run_at): a delay is never measured on one clock and kept on another. */
    int64_t run_at;
    int64_t delay;
    int64_t max_attempts;
    int64_t max_runtime_seconds; /* JOB_NONE when unset */
    const char *requires;        /* compact JSON array of strings, NULL when empty */
    const char *idempotency_key; /* NULL when unset */
    const char *concurrency_key; /* NULL when unset */
    /* When it expires: at expires_at (> 0), or expires_in (> 0) seconds after the store's now
     * (job_spec_expires_at); neither (both 0, as a zeroed spec has them): never. */
    int64_t expires_at;
    int64_t expires_in;
    const char *dedup_key; /* NULL when unset (then dedup_mode is DEDUP_NONE) */
    enum dedup_mode dedup_mode;
    int64_t dedup_seconds; /* window, debounce: 0..JOB_DELAY_MAX; unused otherwise */
    /* Workflows: deps[0..ndeps) (0..JOB_DEPS_MAX, distinct; an index entry only in a batch,
     * naming another element) and what the job does when one of them fails. */
    const struct job_dep *deps;
    size_t ndeps;
    enum dep_mode on_dependency_failure;
    /* W3C trace context, checked (trace.h); NULL when none. tracestate only with traceparent. */
    const char *traceparent;
    const char *tracestate;
};

/* What a worker asks for in a claim. Borrowed. */
struct claim_req {
    const char *worker_id;
    const char *const *queues; /* 1..JOB_QUEUES_MAX validated, distinct names */
    size_t nqueues;
    const char *capabilities; /* compact JSON array of strings, NULL when empty */
    int64_t lease_seconds;    /* 1..JOB_LEASE_MAX */
    int max_jobs;             /* 1..JOB_CLAIM_MAX */
};

/* What a worker reports in a fail. Borrowed. */
struct fail_req {
    const char *error_code;   /* NULL when not given */
    const char *error_detail; /* compact JSON text, NULL when not given */
    int retry;                /* 1: requeue while attempts remain; 0: fail now */
    int64_t retry_in_seconds; /* -1: use the backoff policy; else 0..JOB_DELAY_MAX */
};

/* GET /jobs filter. Borrowed. */
struct list_filter {
    const char *queue; /* NULL: every queue */
    int status;        /* an API status; -1: any */
    int64_t after_id;  /* 0: from the start */
    int limit;         /* 1..JOB_LIST_MAX */
};

/* One row of GET /queues. Owns name. */
struct queue_stats {
    char *name;
    int64_t count[JOB_STATUS_COUNT]; /* per API status (count[JOB_STATUS_NONE] is 0) */
    int64_t oldest_queued_age;       /* seconds; 0 when no queued job is due */
    int paused;                      /* 1: claims skip the queue */
};

/* How one attempt (one claim) ended. Stored as these numbers: append only. */
enum attempt_outcome {
    ATTEMPT_RUNNING = 0,   /* the live claim */
    ATTEMPT_SUCCEEDED = 1, /* completed */
    ATTEMPT_FAILED = 2,    /* failed, no retry (or attempts exhausted) */
    ATTEMPT_RETRIED = 3,   /* failed with retry: back to queued */
    ATTEMPT_EXPIRED = 4,   /* the lease expired (the sweeper) */
    ATTEMPT_TIMEOUT = 5,   /* max_runtime_seconds passed (the sweeper) */
    ATTEMPT_CANCELLED = 6, /* cancelled while running */
    ATTEMPT_SNOOZED = 7,   /* snoozed */
    ATTEMPT_OUTCOME_COUNT
};
#define JOB_ATTEMPTS_KEPT 1000 /* the newest attempts kept per job */
#define JOB_ATTEMPTS_KEPT_SQL "1000"

/* One row of GET /jobs/{id}/attempts. Owns its strings. */
struct job_attempt {
    int64_t attempt; /* the job's attempts count that claim made */
    char *worker_id;
    int64_t claimed_at;
    int64_t ended_at; /* JOB_NONE while running */
    enum attempt_outcome outcome;
    char *error_code;   /* NULL when none */
    char *error_detail; /* compact JSON text, NULL when none */
};

/* The API name of an outcome ("running", "succeeded", ...). Never NULL. */
const char *attempt_outcome_name(enum attempt_outcome o);

/* Release an array of n attempts' strings and the array itself. Accepts NULL. */
void job_attempts_free(struct job_attempt *a, size_t n);

/* Free the strings of one attempt and zero it. */
void job_attempt_clear(struct job_attempt *a);

/* The API name of a dedup mode ("active", "window", "debounce"; "none" for DEDUP_NONE
 * or any other number). Never NULL. */
const char *job_dedup_mode_name(enum dedup_mode m);

/* The API name of a dependency mode ("cancel", "run"; "cancel" for any other number). Never
 * NULL. */
const char *job_dep_mode_name(enum dep_mode m);

/* Parse an API dependency mode name. Returns 0 and sets *out, or -1 for an unknown name. */
int job_dep_mode_parse(const char *name, enum dep_mode *out);

/* Parse an API dedup mode name. Returns 0 and sets *out, or -1 for an unknown name. */
int job_dedup_mode_parse(const char *name, enum dedup_mode *out);

/* The name the API shows for a status ("unknown" for any other number). Never NULL. */
const char *job_status_name(enum job_status s);

/* Parse an API status name. Returns 0 and sets *out, or -1 for an unknown name.
 * "queued" parses as JOB_QUEUED (which a filter reads as queued-or-scheduled). */
int job_status_parse(const char *name, enum job_status *out);

/* Release every string the job owns and reset it to an empty job. Accepts NULL. */
void job_clear(struct job *j);

/* Release an array of n jobs' strings and the array itself. Accepts NULL. */
void job_array_free(struct job *jobs, size_t n);

/* Release an array of n queue rows and the array itself. Accepts NULL. */
void queue_stats_free(struct queue_stats *rows, size_t n);

/* The run_at of a job enqueued from sp at the store's now: sp->run_at, or now + sp->delay when
 * it is JOB_NONE. A pure function: it can't fail. */
int64_t job_spec_run_at(const struct job_spec *sp, int64_t now);

/* The expires_at of a job enqueued from sp at the store's now: sp->expires_at when > 0, else
 * now + sp->expires_in when that is > 0, else JOB_NONE (never). A pure
 * function: it can't fail. */
int64_t job_spec_expires_at(const struct job_spec *sp, int64_t now);

/* The dedup seconds a job enqueued from sp keeps: sp->dedup_seconds for the window and
 * debounce modes, JOB_NONE otherwise. A pure function: it can't fail. */
int64_t job_spec_dedup_seconds(const struct job_spec *sp);

/* Claim order of two jobs given as (priority, run_at, id): < 0 when a comes first (priority
 * desc, run_at asc, id asc), > 0 when b does, 0 when equal. This function can't fail. */
int job_claim_order(int64_t prio_a, int64_t run_at_a, int64_t id_a, int64_t prio_b,
                    int64_t run_at_b, int64_t id_b);

/* 1 if name is a valid queue name (1..JOB_QUEUE_MAX bytes of A-Z a-z 0-9 . _ : -). */
int job_queue_name_ok(const char *name);

#endif
