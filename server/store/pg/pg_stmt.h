/* The statement table of the PostgreSQL store: every SQL statement it runs, each with the
 * callers that use it, mirroring the SQLite store's table (sqlite_stmt.c) row for row where
 * the two agree. Statements are prepared once per connection, on first use. */
#ifndef JOBQ_PG_STMT_H
#define JOBQ_PG_STMT_H

#define PG_NOTIFY_CHANNEL "jobq_ready" /* NOTIFY/LISTEN channel of claimable jobs */
#define PG_SWEEP_KEY "7461001"         /* pg_try_advisory_xact_lock key of the sweeper role */
#define PG_MIGRATE_KEY "7461002"       /* pg_advisory_lock key held while migrating */
#define PG_LIMITS_KEY "7461003"        /* pg_advisory_xact_lock key of the limit writes */
#define PG_SCHEDULES_KEY "7461004"     /* pg_advisory_xact_lock key of the schedule puts */

enum pg_stmt_id {
    PG_JOB_GET,
    PG_JOB_BY_KEY,
    PG_JOB_INSERT,
    PG_JOB_IDS,
    PG_JOB_BY_KEYS,
    PG_CLAIM,
    PG_CLAIM_ONE_QUEUE,
    PG_HEARTBEAT,
    PG_HEARTBEAT_ONE,
    PG_COMPLETE,
    PG_COMPLETE_ONE,
    PG_COMPLETE_DEPS,
    PG_LEASE_LOCK,
    PG_LEASE_END,
    PG_SNOOZE,
    PG_KEY_LOCK,
    PG_KEY_PAUSE,
    PG_CANCEL,
    PG_RETRY,
    PG_NOTIFY,
    PG_SWEEP_LOCK,
    PG_SWEEP_EXPIRED,
    PG_SWEEP_END,
    PG_SWEEP_DELETE,
    PG_SWEEP_EXPIRY,
    PG_COUNTS_FOLD,
    PG_STATS_STALE,
    PG_LIST_ALL,
    PG_LIST_QUEUE,
    PG_LIST_STATUS,
    PG_LIST_QUEUE_STATUS,
    PG_QUEUE_COUNTS,
    PG_QUEUE_SET,
    PG_PURGE,
    PG_LIMITS_READ_KEY,
    PG_LIMITS_READ_PREFIX,
    PG_LIMIT_LOCK,
    PG_LIMIT_PUT,
    PG_LIMIT_DELETE,
    PG_LANES_OPEN,
    PG_ATTEMPTS,
    PG_TP_PUBLISH,
    PG_TP_OTHERS,
    PG_CLOCK,
    PG_LANES_REFRESH,
    PG_LANES_CANDIDATES,
    PG_CLAIM_TAKE_ID,
    PG_CLAIM_TAKE_NEXT,
    PG_LANE_HEAD,
    PG_KEYS_LOCK,
    PG_KEY_STATE,
    PG_KEY_WINDOW,
    PG_KEY_WINDOW_ROWS,
    PG_KEY_CLAIMED,
    PG_KEY_CLOSE,
    PG_LANES_PICK,
    PG_LANES_DROP,
    PG_KEY_CLAIMS_EXPIRE,
    PG_IMPORT_LOCK,
    PG_IMPORT_HELD,
    PG_IMPORT_NEXT_ID,
    PG_IMPORT_ROWS,
    PG_IMPORT_COUNTS,
    PG_IMPORT_ATTEMPTS,
    PG_IMPORT_ATTEMPT_COUNT,
    PG_IMPORT_PAUSE,
    PG_IMPORT_LANES,
    PG_IMPORT_LANE_SET,
    PG_IMPORT_DEPS,
    PG_IMPORT_ANALYZE,
    PG_IMPORT_LIMITS,
    PG_IMPORT_KEYS,
    PG_IMPORT_KEY_CLAIMS,
    PG_IMPORT_SCHEDULES,
    PG_IMPORT_TICKER,
    PG_IMPORT_TABLE_COUNTS,
    PG_IMPORT_KEY_PAUSES,
    PG_DEDUP_LOCK,
    PG_DEDUP_ACTIVE,
    PG_DEDUP_WINDOW,
    PG_DEDUP_DEBOUNCE,
    PG_DEDUP_REPLACE,
    PG_DEP_LOCK,
    PG_DEP_EDGES,
    PG_DEP_VISIT,
    PG_DEP_SETTLE,
    PG_DEP_UNSETTLE,
    PG_DEP_PARENTS,
    PG_DEP_EDGES_SET,
    PG_DEP_BLOCK,
    PG_DEP_DETAIL,
    PG_DEP_PIN,
    PG_DEP_RETRIED,
    PG_DEP_TODO,
    PG_DEP_TODO_PICK,
    PG_LINKS_DEPS,
    PG_LINKS_DEPENDENTS,
    PG_SCHEDULES_ALL,
    PG_SCHEDULE_GET,
    PG_SCHEDULES_NEXT,
    PG_SCHEDULES_COUNT,
    PG_SCHEDULE_LOCK,
    PG_SCHEDULE_OLD_NEXT,
    PG_SCHEDULE_PUT,
    PG_SCHEDULE_DELETE,
    PG_SCHEDULE_CAS,
    PG_SCHEDULE_RAN,
    PG_JOB_STATUS,
    PG_TICKER_PASS,
    PG_TICKER_STOP,
    PG_EVENTS_READ,
    PG_EVENTS_PRUNE,
    PG_STMT_COUNT
};

struct pg_stmt_def {
    enum pg_stmt_id id;
    const char *name; /* the prepared statement's name */
    const char *sql;
    const char *used_by;
};

/* The definition of statement id. This function can't fail. */
const struct pg_stmt_def *pg_stmt_def(enum pg_stmt_id id);

#endif
