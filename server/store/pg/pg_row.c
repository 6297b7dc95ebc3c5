#include "pg_row.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_cols.h"
#include "log.h"
#include "pg_store.h"

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
    out->concurrency_key = text(res, row, COL_CONCURRENCY_KEY, &bad);
    out->expires_at = pg_row_int(res, row, COL_EXPIRES_AT);
    out->dedup_key = text(res, row, COL_DEDUP_KEY, &bad);
    int64_t mode = pg_row_int(res, row, COL_DEDUP_MODE);
    out->dedup_mode = mode == JOB_NONE ? DEDUP_NONE : (enum dedup_mode)mode;
    out->dedup_seconds = pg_row_int(res, row, COL_DEDUP_SECONDS);
    out->depends_on = text(res, row, COL_DEPENDS_ON, &bad);
    out->on_dependency_failure = (enum dep_mode)pg_row_int(res, row, COL_ON_DEP_FAILURE);
    out->has_dependents = pg_row_int(res, row, COL_HAS_DEPENDENTS) == 1;
    out->traceparent = text(res, row, COL_TRACEPARENT, &bad);
    out->tracestate = text(res, row, COL_TRACESTATE, &bad);
    if (with_token)
        out->lease_token = text(res, row, COL_LEASE_TOKEN, &bad);
    if (bad) {
        log_error("out of memory reading job %" PRId64, out->id);
        job_clear(out);
        return -1;
    }
    return 0;
}

enum store_result pg_one_row(struct pg_conn *c, enum pg_stmt_id id, int n,
                             const char *const *params, int with_token, const char *what,
                             struct job *out)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    r = PQntuples(res) == 0                        ? STORE_NOT_FOUND
        : pg_row_job(res, 0, with_token, out) == 0 ? STORE_OK
                                                   : STORE_ERROR;
    PQclear(res);
    return r;
}

enum store_result pg_get_on(struct pg_conn *c, int64_t id, int with_token, struct job *out)
{
    char idb[24];
    const char *params[1] = {pg_int_param(idb, id)};
    return pg_one_row(c, PG_JOB_GET, 1, params, with_token, "get", out);
}

enum store_result pg_miss(struct pg_conn *c, int64_t id, enum store_result exists_result)
{
    struct job j;
    enum store_result r = pg_get_on(c, id, 0, &j);
    if (r == STORE_OK) {
        job_clear(&j);
        return exists_result;
    }
    return r;
}
