/* Rows of the jobq_jobs table (columns PG_JOB_COLUMNS, in the order of the SQLite store's)
 * copied into struct job. */
#ifndef JOBQ_PG_ROW_H
#define JOBQ_PG_ROW_H

#include <libpq-fe.h>

#include "job.h"

/* Every column of a job, the table aliased as j; requires as a JSON array (NULL when empty). */
#define PG_JOB_COLUMNS                                                                             \
    "j.id, j.queue, j.status, j.payload, j.priority, j.run_at, j.attempts, j.max_attempts, "       \
    "j.fencing_token, j.max_runtime_seconds, array_to_json(j.requires)::text, "                    \
    "j.idempotency_key, j.created_at, j.claimed_at, j.heartbeat_at, j.lease_expires_at, "          \
    "j.worker_id, j.finished_at, j.result, j.progress, j.error_code, j.error_detail, "             \
    "j.concurrency_key, j.expires_at, j.dedup_key, j.dedup_mode, j.dedup_seconds, j.depends_on, "  \
    "j.on_dep_failure, j.has_dependents::int, j.lease_token, j.traceparent, j.tracestate"

/* Copy row `row` of res into out (overwritten). The lease token is copied only when
 * with_token is set. Returns 0, or -1 when memory ran out (logged; out is left empty). */
int pg_row_job(const PGresult *res, int row, int with_token, struct job *out);

/* An int64 column (NULL: JOB_NONE). */
int64_t pg_row_int(const PGresult *res, int row, int col);

/* A copy of a text column into *out (NULL for SQL NULL). Returns 0, or -1 when memory ran
 * out. */
int pg_row_text(const PGresult *res, int row, int col, char **out);

/* Format v into buf (at least 24 bytes) for a text parameter; JOB_NONE gives NULL. */
const char *pg_int_param(char *buf, int64_t v);

#endif
