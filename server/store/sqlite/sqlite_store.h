/* The SQLite implementation of struct store: its handle and the operations that
 * sqlite_store.c (open, the ops table, close) puts in its ops table; the contracts are those
 * of the matching store_* functions in store.h. Calls flow down, file by file:
 * sqlite_call.c (store_submit and the kind table) -> the op files, each building its writes
 * as transactions for the writer thread (sqlite_enqueue.c, sqlite_claim.c over
 * sqlite_lanes.c, sqlite_lease.c, sqlite_admin.c, sqlite_queue.c, sqlite_limits.c,
 * sqlite_schedules.c, sqlite_sweep.c; sqlite_deps.c walks a job's dependents, sqlite_counts.c
 * keeps the per-queue counts) -> sqlite_writer.c (the queue and the writer thread) ->
 * sqlite_tx.c (the group runner) -> sqlite_heal.c (the write connection kept healthy) ->
 * sqlite_conn.c (one connection: statements, errors). Reads run on the reader pool
 * (sqlite_pool.c): sqlite_read.c, sqlite_links.c, and jobqd migrate's source,
 * sqlite_export.c. Beside them: sqlite_row.c (rows into struct job), sqlite_stmt.c (the
 * statement table), sqlite_schema.c (migrations), sqlite_lock.c (the one process that may
 * open a file). */
#ifndef JOBQ_SQLITE_STORE_H
#define JOBQ_SQLITE_STORE_H

#include "sqlite_pool.h"
#include "sqlite_tx.h"
#include "store.h"
#include "store_events.h"
#include "store_schedule.h"
#include "store_sqs.h"
#include "store_webhook.h"

#define SQLITE_PROMOTE_BATCH 200 /* due scheduled jobs promoted at the start of a claim */

struct sqlite_store {
    struct store base; /* first: a struct store * is a struct sqlite_store * */
    struct sqlite_writer writer;
    struct sqlite_pool readers;
    struct event_log_gauge events_seen; /* the event log as the last sweep saw it (/metrics) */
    int64_t backoff_base;
    int64_t backoff_max;
    int64_t events_retention, events_max; /* the event log's bounds (store_options.events) */
    int lock_fd;          /* the open PATH.lock this process holds an exclusive lock on */
    int64_t lanes_swept;  /* the sweeper's: the last lane its lanes part looked at (0: none) */
    int64_t opened_swept; /* the sweeper's: the now of its last promote part (0: none) */
};

static inline struct sqlite_store *sqlite_store_of(struct store *s)
{
    return (struct sqlite_store *)s;
}

/* The transaction of a store call of the matching kind, allocated in one block with
 * everything it needs (free(tx) releases it), reading call's inputs and writing its outputs.
 * Returns NULL with call->result set when there is nothing to run (STORE_OK: an empty
 * enqueue or claim) or memory ran out (STORE_ERROR, logged). Used by sqlite_submit. */
struct sqlite_tx *sqlite_enqueue_tx(struct sqlite_store *st, struct store_call *call);
struct sqlite_tx *sqlite_claim_tx(struct sqlite_store *st, struct store_call *call);
struct sqlite_tx *sqlite_lease_tx(struct sqlite_store *st, struct store_call *call);
struct sqlite_tx *sqlite_admin_tx(struct sqlite_store *st, struct store_call *call);
/* Pause/resume and purge (sqlite_queue.c; store_submit settles the purges that need no
 * transaction). NULL when out of memory (call->result says so). */
struct sqlite_tx *sqlite_queue_tx(struct sqlite_store *st, struct store_call *call);

/* Limit put and delete (sqlite_limits.c). NULL when out of memory (call->result says so). */
struct sqlite_tx *sqlite_limit_tx(struct sqlite_store *st, struct store_call *call);

/* Schedule put, delete, tick and pass (sqlite_schedules.c). NULL when out of memory
 * (call->result says so). */
struct sqlite_tx *sqlite_schedule_tx(struct sqlite_store *st, struct store_call *call);

/* SQS queue put and delete (sqlite_sqs.c). NULL when out of memory (call->result says so). */
struct sqlite_tx *sqlite_sqs_tx(struct sqlite_store *st, struct store_call *call);

/* Webhook put, delete, lease and done (sqlite_webhooks.c). NULL when out of memory
 * (call->result says so). */
struct sqlite_tx *sqlite_webhook_tx(struct sqlite_store *st, struct store_call *call);

/* Enqueue one job of sp inside the caller's transaction, as store_enqueue does for one spec
 * (an idempotency_key hit: *out is the job that holds it and *created stays 0; a dedup key:
 * what its mode decides). Returns STORE_OK or an error result (logged). Used by enqueue and
 * by a schedule's tick. */
enum store_result sqlite_enqueue_one(struct sqlite_conn *c, const struct job_spec *sp, int64_t now,
                                     struct job *out, int *created, struct sqlite_notes *notes);

/* store_submit (sqlite_call.c) and the reads (sqlite_read.c, sqlite_schedules.c). */
void sqlite_submit(struct store *s, struct store_call *call);
void sqlite_read_stats(struct store *s, struct store_stats *out);
size_t sqlite_read_metrics(struct store *s, struct store_metric out[STORE_METRICS_MAX]);
enum store_result sqlite_read_get(struct store *s, int64_t id, struct job *out);
enum store_result sqlite_read_list(struct store *s, const struct list_filter *f, struct job *out,
                                   size_t *n, int *more);
enum store_result sqlite_read_events(struct store *s, const struct event_filter *f,
                                     struct event_page *out);
enum store_result sqlite_read_attempts(struct store *s, int64_t id, struct job_attempt **out,
                                       size_t *n);
enum store_result sqlite_read_queues(struct store *s, int64_t now, struct queue_stats **out,
                                     size_t *n);
enum store_result sqlite_read_limits(struct store *s, const char *key, int64_t now,
                                     struct limit **out, size_t *n);
enum store_result sqlite_read_links(struct store *s, int64_t id, int dependents,
                                    struct job_link **out, size_t *n, int *more);
enum store_result sqlite_read_schedules(struct store *s, const char *name,
                                        struct store_schedule **out, size_t *n);
enum store_result sqlite_read_schedules_next(struct store *s, int limit,
                                             struct store_schedule **out, size_t *n);
enum store_result sqlite_read_schedules_count(struct store *s, size_t *n);
/* store_sqs_queues (sqlite_sqs.c). */
enum store_result sqlite_read_sqs_queues(struct store *s, const char *prefix, int exact,
                                         const char *after, int limit, struct store_sqs_queue **out,
                                         size_t *n);

/* store_webhooks (sqlite_webhooks.c). */
enum store_result sqlite_read_webhooks(struct store *s, const char *name,
                                       struct store_webhook **out, size_t *n);
enum store_result sqlite_read_next_due(struct store *s, int64_t *run_at);
enum store_result sqlite_read_ping(struct store *s);
enum store_result sqlite_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                               struct sweep_result *res);

/* Run the promotion statement on c inside the caller's transaction: at most limit due
 * scheduled jobs (run_at <= now) become queued; their queues go to notes, and so does the
 * earliest run_at still scheduled afterwards (sqlite_notes_promoted). Sets *promoted.
 * Returns STORE_OK or an error result (logged). Used by claim and sweep. */
enum store_result sqlite_sweep_promote(struct sqlite_conn *c, int64_t now, int limit,
                                       struct sqlite_notes *notes, int *promoted);

/* End the lease of running job id inside the caller's transaction: back to queued (or
 * scheduled when run_at > now, noted for the hooks) while requeue is set, else failed with
 * finished_at = now; error_code and error_detail (borrowed, may be NULL) are recorded. When
 * out is not NULL the job is copied into it. The job's count moves; the row keeps the ended
 * attempt when the job failed for good, else it goes to the attempts table
 * (sqlite_lease_attempt). Returns STORE_OK, STORE_NOT_FOUND when the job
 * is not running, or an error result (logged). how is what the attempt history records:
 * ATTEMPT_RETRIED for a worker's fail (recorded as ATTEMPT_FAILED when the job fails), or the
 * sweeper's ATTEMPT_EXPIRED or ATTEMPT_TIMEOUT. Used by fail and sweep. */
enum store_result sqlite_lease_end(struct sqlite_conn *c, int64_t id, int requeue, int64_t run_at,
                                   int64_t now, const char *error_code, const char *error_detail,
                                   enum attempt_outcome how, struct sqlite_notes *notes,
                                   struct job *out);

/* Inside the caller's transaction: enqueue the copy of job j, whose lease just ended failed
 * for a dead-letter move (job_dead_letter), in queue target (store_dead_letter_spec). Returns
 * STORE_OK or an error result (logged). Used by fail and sweep. */
enum store_result sqlite_dead_letter(struct sqlite_conn *c, const struct job *j, const char *target,
                                     int64_t now, struct sqlite_notes *notes);

/* Inside the caller's transaction: write the attempt of job j (read after the write that
 * ended its lease and sent it back to queued: its fencing_token, attempts, worker_id and
 * claimed_at are the attempt's) that ended at now as how, with error_code and error_detail
 * (borrowed, may be NULL), into the attempts table. Returns STORE_OK or an error result
 * (logged). Used by fail and sweep: until then the job row was the attempt's record. */
enum store_result sqlite_lease_attempt(struct sqlite_conn *c, const struct job *j, int64_t now,
                                       enum attempt_outcome how, const char *error_code,
                                       const char *error_detail);

#endif
