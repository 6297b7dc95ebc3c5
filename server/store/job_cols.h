/* The column order in which both backends read a job row (the SQLite store's
 * SQL_JOB_COLUMNS, the PostgreSQL store's PG_JOB_COLUMNS): private to server/store/. */
#ifndef JOBQ_JOB_COLS_H
#define JOBQ_JOB_COLS_H

enum job_col {
    COL_ID = 0,
    COL_QUEUE,
    COL_STATUS,
    COL_PAYLOAD,
    COL_PRIORITY,
    COL_RUN_AT,
    COL_ATTEMPTS,
    COL_MAX_ATTEMPTS,
    COL_FENCING_TOKEN,
    COL_MAX_RUNTIME,
    COL_REQUIRES,
    COL_IDEMPOTENCY_KEY,
    COL_CREATED_AT,
    COL_CLAIMED_AT,
    COL_HEARTBEAT_AT,
    COL_LEASE_EXPIRES_AT,
    COL_WORKER_ID,
    COL_FINISHED_AT,
    COL_RESULT,
    COL_PROGRESS,
    COL_ERROR_CODE,
    COL_ERROR_DETAIL,
    COL_CONCURRENCY_KEY,
    COL_EXPIRES_AT,
    COL_DEDUP_KEY,
    COL_DEDUP_MODE,
    COL_DEDUP_SECONDS,
    COL_LEASE_TOKEN,
    COL_COUNT
};

#endif
