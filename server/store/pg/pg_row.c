#include "pg_row.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_cols.h"
#include "log.h"

int64_t pg_row_int(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return JOB_NONE;
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

const char *pg_int_param(char *buf, int64_t v)
{
    if (v == JOB_NONE)
        return NULL;
    snprintf(buf, 24, "%" PRId64, v);
    return buf;
}

/* Copy a text column (NULL stays NULL). Sets *bad when memory ran out. */
static char *text(const PGresult *res, int row, int col, int *bad)
{
    if (PQgetisnull(res, row, col))
        return NULL;
    char *s = strdup(PQgetvalue(res, row, col));
    if (!s)
        *bad = 1;
    return s;
}

int pg_row_text(const PGresult *res, int row, int col, char **out)
{
    int bad = 0;
    *out = text(res, row, col, &bad);
    return bad ? -1 : 0;
}

int pg_row_job(const PGresult *res, int row, int with_token, struct job *out)
{
    memset(out, 0, sizeof *out);
    if (PQnfields(res) < COL_COUNT) {
        log_error("job row has %d columns, want %d", PQnfields(res), COL_COUNT);
        return -1;
    }
    int bad = 0;
    out->id = pg_row_int(res, row, COL_ID);
    out->queue = text(res, row, COL_QUEUE, &bad);
    out->status = (enum job_status)pg_row_int(res, row, COL_STATUS);
    out->payload = text(res, row, COL_PAYLOAD, &bad);
    out->priority = pg_row_int(res, row, COL_PRIORITY);
    out->run_at = pg_row_int(res, row, COL_RUN_AT);
    out->attempts = pg_row_int(res, row, COL_ATTEMPTS);
    out->max_attempts = pg_row_int(res, row, COL_MAX_ATTEMPTS);
    out->fencing_token = pg_row_int(res, row, COL_FENCING_TOKEN);
    out->max_runtime_seconds = pg_row_int(res, row, COL_MAX_RUNTIME);
    out->requires = text(res, row, COL_REQUIRES, &bad);
    out->idempotency_key = text(res, row, COL_IDEMPOTENCY_KEY, &bad);
    out->created_at = pg_row_int(res, row, COL_CREATED_AT);
    out->claimed_at = pg_row_int(res, row, COL_CLAIMED_AT);
    out->heartbeat_at = pg_row_int(res, row, COL_HEARTBEAT_AT);
    out->lease_expires_at = pg_row_int(res, row, COL_LEASE_EXPIRES_AT);
    out->worker_id = text(res, row, COL_WORKER_ID, &bad);
    out->finished_at = pg_row_int(res, row, COL_FINISHED_AT);
    out->result = text(res, row, COL_RESULT, &bad);
    out->progress = text(res, row, COL_PROGRESS, &bad);
    out->error_code = text(res, row, COL_ERROR_CODE, &bad);
    out->error_detail = text(res, row, COL_ERROR_DETAIL, &bad);
    if (with_token)
        out->lease_token = text(res, row, COL_LEASE_TOKEN, &bad);
    if (bad) {
        log_error("out of memory reading job %" PRId64, out->id);
        job_clear(out);
        return -1;
    }
    return 0;
}
