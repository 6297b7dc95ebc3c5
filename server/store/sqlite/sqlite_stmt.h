/* The one table of SQL statements of the SQLite store. Every DML statement the store runs is a
 * row here, prepared once per connection (SQLITE_PREPARE_PERSISTENT) and finalized at close.
 * The schema itself lives in the numbered migrations of sqlite_schema.c. */
#ifndef JOBQ_SQLITE_STMT_H
#define JOBQ_SQLITE_STMT_H

#include "job_cols.h"

/* The status the SQLite store gives a queued job that is not due yet (in the number that no
 * API status takes): it is kept out of the claim index and made JOB_QUEUED when due (the
 * sweeper's promotion). Rows read back show it as JOB_QUEUED: it never leaves this folder. */
#define SQLITE_SCHEDULED JOB_STATUS_NONE

/* Which connections prepare a statement. */
#define STMT_ON_WRITER 1
#define STMT_ON_READER 2
#define STMT_ON_EXPORT 4 /* jobqd migrate's read-only connection (sqlite_export.c) */

enum stmt_id {
    STMT_BEGIN = 0,
    STMT_COMMIT,
    STMT_ROLLBACK,
    STMT_READ_BEGIN,
    STMT_PROBE_WRITE,
    STMT_JOB_GET,
    STMT_JOB_BY_KEY,
    STMT_JOB_INSERT,
    STMT_PROMOTE,
    STMT_CLAIM_PICK_PLAIN,
    STMT_CLAIM_TAKE,
    STMT_HEARTBEAT,
    STMT_COMPLETE,
    STMT_LEASE_CHECK,
    STMT_LEASE_END,
    STMT_SNOOZE,
    STMT_KEY_PAUSED,
    STMT_KEY_PAUSE,
    STMT_LANES_PAUSE,
    STMT_CANCEL,
    STMT_RETRY,
    STMT_SWEEP_EXPIRED,
    STMT_SWEEP_DELETE,
    STMT_EXPIRY_PICK,
    STMT_EXPIRY_CANCEL,
    STMT_LIST_ALL,
    STMT_LIST_QUEUE,
    STMT_LIST_STATUS,
    STMT_LIST_QUEUE_STATUS,
    STMT_QUEUE_COUNTS,
    STMT_QUEUE_OLDEST,
    STMT_QUEUES_PAUSED,
    STMT_QUEUE_PAUSED,
    STMT_QUEUE_SET,
    STMT_PURGE,
    STMT_LIMITS_READ,
    STMT_LIMIT_PUT,
    STMT_LIMIT_DELETE,
    STMT_LANES_REOPEN_RANGE,
    STMT_ATTEMPTS,
    STMT_NEXT_DUE,
    STMT_PING,
    STMT_EXPORT_COUNTS,
    STMT_EXPORT_LAST_ID,
    STMT_EXPORT_ROWS,
    STMT_EXPORT_ATTEMPT_COUNT,
    STMT_EXPORT_ATTEMPTS,
    STMT_EXPORT_PAUSED,
    STMT_EXPORT_LIMITS,
    STMT_EXPORT_KEYS,
    STMT_EXPORT_KEY_CLAIMS,
    STMT_EXPORT_SCHEDULES,
    STMT_EXPORT_TICKER,
    STMT_EXPORT_SQS_QUEUES,
    STMT_EXPORT_TABLE_COUNTS,
    STMT_COUNT_ADD,
    STMT_ATTEMPT_END,
    STMT_ATTEMPT_ARCHIVE,
    STMT_ATTEMPTS_TRIM,
    STMT_LANE_UPSERT,
    STMT_LANES_ANY,
    STMT_LANE_TOUCH,
    STMT_LANE_TOUCH_JOB,
    STMT_LANES_TOUCH_EMPTY,
    STMT_LANES_DUE,
    STMT_LANE_BEST,
    STMT_LANE_HEAD,
    STMT_LANES_OPEN,
    STMT_KEY_LIMITS,
    STMT_KEY_RUNNING,
    STMT_KEY_WINDOW,
    STMT_KEY_NEWEST,
    STMT_KEY_WINDOW_ROWS,
    STMT_KEY_CLAIMED,
    STMT_KEY_CLAIMS_PRUNE,
    STMT_KEY_CLOSE,
    STMT_KEY_REOPEN,
    STMT_KEYS_OPENED,
    STMT_LANES_WINDOW,
    STMT_LANES_DROP,
    STMT_KEY_CLAIMS_EXPIRE,
    STMT_DEDUP_ACTIVE,
    STMT_DEDUP_WINDOW,
    STMT_DEDUP_DEBOUNCE,
    STMT_DEDUP_REPLACE,
    STMT_DEP_MARK,
    STMT_DEP_EDGE,
    STMT_DEP_JOB_SET,
    STMT_DEP_SETTLE,
    STMT_DEP_UNSETTLE,
    STMT_DEP_PENDING,
    STMT_DEP_RELEASE,
    STMT_DEP_CANCEL,
    STMT_DEP_PARENTS,
    STMT_DEP_EDGE_SET,
    STMT_DEP_DETAIL,
    STMT_DEP_PIN,
    STMT_DEP_BLOCK,
    STMT_DEP_WAITING,
    STMT_DEP_EDGES_RESET,
    STMT_DEP_TODO_MARK,
    STMT_DEP_TODO_PICK,
    STMT_LINKS_DEPS,
    STMT_LINKS_DEPENDENTS,
    STMT_SCHEDULES_ALL,
    STMT_SCHEDULE_GET,
    STMT_SCHEDULES_NEXT,
    STMT_SCHEDULES_COUNT,
    STMT_SCHEDULE_OLD_NEXT,
    STMT_SCHEDULE_PUT,
    STMT_SCHEDULE_DELETE,
    STMT_SCHEDULE_CAS,
    STMT_SCHEDULE_RAN,
    STMT_JOB_STATUS,
    STMT_TICKER_SEEN,
    STMT_TICKER_PASS,
    STMT_TICKER_STOP,
    STMT_EVENT_ADD,
    STMT_EVENTS_READ,
    STMT_EVENTS_KEPT,
    STMT_EVENTS_BOUNDS,
    STMT_EVENTS_PRUNE,
    STMT_EVENTS_PRUNED,
    STMT_SQS_QUEUE_GET,
    STMT_SQS_QUEUES_LIST,
    STMT_SQS_QUEUE_INSERT,
    STMT_SQS_QUEUE_MERGE,
    STMT_SQS_QUEUE_DELETE,
    STMT_WEBHOOK_GET,
    STMT_WEBHOOKS_ALL,
    STMT_WEBHOOK_PUT,
    STMT_WEBHOOK_DELETE,
    STMT_WEBHOOK_LEASE,
    STMT_WEBHOOK_DONE,
    STMT_WEBHOOK_PARKED,
    STMT_WEBHOOK_PARK,
    STMT_WEBHOOK_UNPARK,
    STMT_WEBHOOK_UNPARK_ALL,
    STMT_COUNT
};

struct stmt_def {
    enum stmt_id id;
    int on; /* STMT_ON_WRITER, STMT_ON_READER and/or STMT_ON_EXPORT */
    const char *sql;
    const char *used_by; /* one line: which store function runs it and why */
};

/* The definition of statement id. Never NULL for id < STMT_COUNT. */
const struct stmt_def *sqlite_stmt_def(enum stmt_id id);

/* The SQL text of statement id (for EXPLAIN QUERY PLAN in tests). Never NULL. */
const char *sqlite_stmt_sql(enum stmt_id id);

/* Columns of every statement that returns whole jobs, in this order (see sqlite_row.h). */
#define SQL_JOB_COLUMNS                                                                            \
    "id, queue, status, payload, priority, run_at, attempts, max_attempts, fencing_token, "        \
    "max_runtime_seconds, requires, idempotency_key, created_at, claimed_at, heartbeat_at, "       \
    "lease_expires_at, worker_id, finished_at, result, progress, error_code, error_detail, "       \
    "concurrency_key, expires_at, dedup_key, dedup_mode, dedup_seconds, depends_on, "              \
    "on_dep_failure, has_dependents, lease_token, traceparent, tracestate"

/* Columns of every statement that returns whole schedules, in this order
 * (sqlite_schedules.c). */
#define SQL_SCHEDULE_COLUMNS                                                                       \
    "name, job, cron, every_seconds, timezone, catch_up, overlap, paused, next_run_at, "           \
    "last_run_at, last_job_id, created_at, updated_at, rev"

/* The webhook statements return these columns, in this order (sqlite_webhooks.c). */
#define SQL_WEBHOOK_COLUMNS                                                                        \
    "name, url, types, queues, secret, prev_secret, prev_until, enabled, ordered, created_at, "    \
    "updated_at, delivered_seq, failing_since, next_attempt_at, attempts, last_status, "           \
    "last_error, last_attempt_at, disabled_reason, deliveries, failures, failed_events, "          \
    "lease_token, lease_until, retry_at"

/* The dedup lookups (STMT_DEDUP_ACTIVE, _WINDOW, _DEBOUNCE) return SQL_JOB_COLUMNS, then
 * the stored status (a scheduled job reads back as queued). */
#define SQL_DEDUP_STORED_STATUS COL_COUNT

/* The export's rows: SQL_JOB_COLUMNS, then the columns the API never shows. */
#define SQL_EXPORT_LEASE_SECONDS COL_COUNT
#define SQL_EXPORT_DEADLINE_AT (COL_COUNT + 1)

#endif
