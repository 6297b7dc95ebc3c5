#include "sqlite_row.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

/* Copy a text column: NULL stays NULL (returns 0); -1 when out of memory. */
static int copy_text(sqlite3_stmt *st, int col, char **out)
{
    *out = NULL;
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return 0;
    const unsigned char *s = sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);
    if (!s)
        return -1;
    char *copy = malloc((size_t)n + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, (size_t)n);
    copy[n] = '\0';
    *out = copy;
    return 0;
}

static int64_t col_time(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return JOB_NONE;
    return sqlite3_column_int64(st, col);
}

int sqlite_row_job(sqlite3_stmt *st, int with_token, struct job *out)
{
    memset(out, 0, sizeof *out);
    out->id = sqlite3_column_int64(st, COL_ID);
    int status = sqlite3_column_int(st, COL_STATUS);
    out->status = status == SQLITE_SCHEDULED ? JOB_QUEUED : (enum job_status)status;
    out->priority = sqlite3_column_int64(st, COL_PRIORITY);
    out->run_at = sqlite3_column_int64(st, COL_RUN_AT);
    out->attempts = sqlite3_column_int64(st, COL_ATTEMPTS);
    out->max_attempts = sqlite3_column_int64(st, COL_MAX_ATTEMPTS);
    out->fencing_token = sqlite3_column_int64(st, COL_FENCING_TOKEN);
    out->max_runtime_seconds = col_time(st, COL_MAX_RUNTIME);
    out->created_at = sqlite3_column_int64(st, COL_CREATED_AT);
    out->claimed_at = col_time(st, COL_CLAIMED_AT);
    out->heartbeat_at = col_time(st, COL_HEARTBEAT_AT);
    out->lease_expires_at = col_time(st, COL_LEASE_EXPIRES_AT);
    out->finished_at = col_time(st, COL_FINISHED_AT);
    out->expires_at = col_time(st, COL_EXPIRES_AT);
    out->dedup_mode = (enum dedup_mode)sqlite3_column_int(st, COL_DEDUP_MODE);
    out->dedup_seconds = col_time(st, COL_DEDUP_SECONDS);
    out->on_dependency_failure = (enum dep_mode)sqlite3_column_int(st, COL_ON_DEP_FAILURE);
    out->has_dependents = sqlite3_column_int(st, COL_HAS_DEPENDENTS) != 0;
    int bad = copy_text(st, COL_QUEUE, &out->queue) | copy_text(st, COL_PAYLOAD, &out->payload) |
              copy_text(st, COL_REQUIRES, &out->requires) |
              copy_text(st, COL_IDEMPOTENCY_KEY, &out->idempotency_key) |
              copy_text(st, COL_WORKER_ID, &out->worker_id) |
              copy_text(st, COL_RESULT, &out->result) |
              copy_text(st, COL_PROGRESS, &out->progress) |
              copy_text(st, COL_ERROR_CODE, &out->error_code) |
              copy_text(st, COL_DEPENDS_ON, &out->depends_on) |
              copy_text(st, COL_ERROR_DETAIL, &out->error_detail) |
              copy_text(st, COL_CONCURRENCY_KEY, &out->concurrency_key) |
              copy_text(st, COL_DEDUP_KEY, &out->dedup_key) |
              copy_text(st, COL_TRACEPARENT, &out->traceparent) |
              copy_text(st, COL_TRACESTATE, &out->tracestate);
    if (with_token)
        bad |= copy_text(st, COL_LEASE_TOKEN, &out->lease_token);
    if (!bad && !out->queue)
        out->queue = strdup("");
    if (!bad && !out->payload)
        out->payload = strdup("null");
    if (bad || !out->queue || !out->payload) {
        log_error("out of memory copying job %lld", (long long)out->id);
        job_clear(out);
        return -1;
    }
    return 0;
}

enum store_result sqlite_row_one(struct sqlite_conn *c, sqlite3_stmt *st, int with_token,
                                 const char *what, struct job *out)
{
    enum store_result r = STORE_NOT_FOUND;
    int rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW) {
        struct job j;
        if (sqlite_row_job(st, with_token, &j) != 0) {
            sqlite3_reset(st);
            return STORE_ERROR;
        }
        rc = sqlite_conn_step(c, st);
        if (rc == SQLITE_DONE) {
            *out = j;
            r = STORE_OK;
        } else {
            job_clear(&j);
        }
    }
    if (rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc == SQLITE_ROW ? SQLITE_MISUSE : rc, what);
    sqlite3_reset(st);
    return r;
}

enum store_result sqlite_row_get(struct sqlite_conn *c, int64_t id, int with_token, struct job *out)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_JOB_GET);
    int rc = sqlite3_bind_int64(st, 1, id);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "bind job get");
        sqlite3_reset(st);
        return r;
    }
    return sqlite_row_one(c, st, with_token, "job get", out);
}

enum store_result sqlite_row_write(struct sqlite_conn *c, sqlite3_stmt *st, int64_t id,
                                   int with_token, const char *what, struct job *out)
{
    int rc = sqlite_conn_step(c, st);
    if (rc != SQLITE_DONE) {
        enum store_result r = sqlite_conn_fail(c, rc == SQLITE_ROW ? SQLITE_MISUSE : rc, what);
        sqlite3_reset(st);
        return r;
    }
    sqlite3_reset(st);
    if (sqlite3_changes(c->db) == 0)
        return STORE_NOT_FOUND;
    if (!out)
        return STORE_OK;
    if (id == 0)
        id = sqlite3_last_insert_rowid(c->db);
    enum store_result r = sqlite_row_get(c, id, with_token, out);
    if (r == STORE_NOT_FOUND) {
        log_error("%s: job %lld changed but cannot be read back", what, (long long)id);
        r = STORE_ERROR;
    }
    return r;
}

/* A column as a new string (NULL for SQL NULL). Returns -1 when out of memory. */
static int column_dup(sqlite3_stmt *st, int col, char **out)
{
    const char *v = (const char *)sqlite3_column_text(st, col);
    *out = v ? strdup(v) : NULL;
    return v && !*out ? -1 : 0;
}

int sqlite_row_attempt(sqlite3_stmt *st, int col, struct job_attempt *out)
{
    memset(out, 0, sizeof *out);
    out->attempt = sqlite3_column_int64(st, col);
    out->claimed_at = sqlite3_column_int64(st, col + 2);
    out->ended_at = sqlite3_column_type(st, col + 3) == SQLITE_NULL
                        ? JOB_NONE
                        : sqlite3_column_int64(st, col + 3);
    out->outcome = (enum attempt_outcome)sqlite3_column_int(st, col + 4);
    if (column_dup(st, col + 1, &out->worker_id) || column_dup(st, col + 5, &out->error_code) ||
        column_dup(st, col + 6, &out->error_detail)) {
        job_attempt_clear(out);
        return -1;
    }
    return 0;
}

enum store_result sqlite_row_collect(struct sqlite_conn *c, sqlite3_stmt *st, const char *what,
                                     size_t size, int (*row)(sqlite3_stmt *st, void *element),
                                     void (*free_rows)(void *rows, size_t n), void **out, size_t *n)
{
    size_t cap = 0;
    int rc;
    enum store_result r = STORE_OK;
    *out = NULL;
    *n = 0;
    while (r == STORE_OK && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            void *grown = realloc(*out, ncap * size);
            if (!grown) {
                log_error("out of memory reading %s", what);
                r = STORE_ERROR;
                break;
            }
            *out = grown;
            cap = ncap;
        }
        if (row(st, (char *)*out + *n * size) != 0)
            r = STORE_ERROR;
        else
            (*n)++;
    }
    if (r == STORE_OK && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    if (r != STORE_OK) {
        free_rows(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return r;
}
