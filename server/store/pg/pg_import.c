/* The PostgreSQL side of jobqd migrate: a database as a struct store_import (store_copy.h).
 * One connection, the schema brought up to date as at every start (pg_schema_migrate: the
 * same migrations under the same advisory lock), then the whole copy in one transaction that
 * holds an EXCLUSIVE lock on jobq_jobs: a jobqd started on the database too early can read
 * but waits (and times out) on every write until the copy commits or rolls back (the tables of
 * limits, keys and schedules are locked the same way). A batch of
 * rows is one INSERT of column arrays (PG_IMPORT_ROWS). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_cols.h"
#include "log.h"
#include "pg_open.h"
#include "pg_row.h"
#include "pg_schema.h"
#include "pg_store.h"

#define IMPORT_COLS (COL_COUNT + 2) /* job_cols.h, then lease_seconds and deadline_at */
#define IMPORT_LEASE_SECONDS COL_COUNT
#define IMPORT_DEADLINE_AT (COL_COUNT + 1)
#define IMPORT_STATEMENT_MS 60000 /* statement_timeout: a batch insert, the lock, the counts */
#define IMPORT_CONNECT_S 5        /* connect_timeout */

struct pg_import {
    struct store_import base; /* first */
    /* pg_conn_open reads only the URL and the timeouts of a store: this one has no pool, no
     * executor and no listener. */
    struct pg_store st;
    struct pg_conn conn;
    int in_tx; /* 1 between BEGIN and COMMIT or ROLLBACK */
};

static struct pg_import *import_of(struct store_import *t)
{
    return (struct pg_import *)t;
}

/* Append row's columns to cols[], one array per column (see PG_IMPORT_ROWS). */
static void add_row(struct pg_arr *cols, const struct store_row *row)
{
    const struct job *j = &row->job;
    enum job_status status = j->status; /* a queued job is due when run_at <= now */
    pg_arr_int(&cols[COL_ID], j->id);
    pg_arr_text(&cols[COL_QUEUE], j->queue);
    pg_arr_int(&cols[COL_STATUS], status);
    pg_arr_text(&cols[COL_PAYLOAD], j->payload);
    pg_arr_int(&cols[COL_PRIORITY], j->priority);
    pg_arr_int(&cols[COL_RUN_AT], j->run_at);
    pg_arr_int(&cols[COL_ATTEMPTS], j->attempts);
    pg_arr_int(&cols[COL_MAX_ATTEMPTS], j->max_attempts);
    pg_arr_int(&cols[COL_FENCING_TOKEN], j->fencing_token);
    pg_arr_int(&cols[COL_MAX_RUNTIME], j->max_runtime_seconds);
    pg_arr_text(&cols[COL_REQUIRES], j->requires);
    pg_arr_text(&cols[COL_IDEMPOTENCY_KEY], j->idempotency_key);
    pg_arr_int(&cols[COL_CREATED_AT], j->created_at);
    pg_arr_int(&cols[COL_CLAIMED_AT], j->claimed_at);
    pg_arr_int(&cols[COL_HEARTBEAT_AT], j->heartbeat_at);
    pg_arr_int(&cols[COL_LEASE_EXPIRES_AT], j->lease_expires_at);
    pg_arr_text(&cols[COL_WORKER_ID], j->worker_id);
    pg_arr_int(&cols[COL_FINISHED_AT], j->finished_at);
    pg_arr_text(&cols[COL_RESULT], j->result);
    pg_arr_text(&cols[COL_PROGRESS], j->progress);
    pg_arr_text(&cols[COL_ERROR_CODE], j->error_code);
    pg_arr_text(&cols[COL_ERROR_DETAIL], j->error_detail);
    pg_arr_text(&cols[COL_CONCURRENCY_KEY], j->concurrency_key);
    pg_arr_int(&cols[COL_EXPIRES_AT], j->expires_at);
    pg_arr_text(&cols[COL_DEDUP_KEY], j->dedup_key);
    pg_arr_int(&cols[COL_DEDUP_MODE], j->dedup_mode);
    pg_arr_int(&cols[COL_DEDUP_SECONDS], j->dedup_seconds);
    pg_arr_text(&cols[COL_DEPENDS_ON], j->depends_on);
    pg_arr_int(&cols[COL_ON_DEP_FAILURE], j->on_dependency_failure);
    pg_arr_int(&cols[COL_HAS_DEPENDENTS], j->has_dependents);
    pg_arr_text(&cols[COL_LEASE_TOKEN], j->lease_token);
    pg_arr_text(&cols[COL_TRACEPARENT], j->traceparent);
    pg_arr_text(&cols[COL_TRACESTATE], j->tracestate);
    pg_arr_int(&cols[IMPORT_LEASE_SECONDS], row->lease_seconds);
    pg_arr_int(&cols[IMPORT_DEADLINE_AT], row->deadline_at);
}

/* Run statement id (n parameters) and read the first column of its first row into *out
 * (when out is not NULL). */
static enum store_result run(struct pg_conn *c, enum pg_stmt_id id, int n,
                             const char *const *params, const char *what, int64_t *out)
{
    enum store_result r;
    PGresult *res = pg_conn_exec(c, id, n, params, what, &r);
    if (!res)
        return r;
    if (out)
        *out = PQntuples(res) > 0 ? pg_row_int(res, 0, 0) : 0;
    PQclear(res);
    return STORE_OK;
}

static enum store_result import_begin(struct store_import *t, int64_t last_id, int64_t *held)
{
    struct pg_import *im = import_of(t);
    *held = 0;
    enum store_result r = pg_command(&im->conn, "BEGIN", "import: begin");
    if (r != STORE_OK)
        return r;
    im->in_tx = 1;
    r = run(&im->conn, PG_IMPORT_LOCK, 0, NULL, "import: lock", NULL);
    if (r == STORE_OK)
        r = run(&im->conn, PG_IMPORT_HELD, 0, NULL, "import: held", held);
    if (r == STORE_OK && *held > 0)
        return STORE_CONFLICT;
    char idb[24];
    const char *params[1] = {pg_int_param(idb, last_id > 0 ? last_id : 0)};
    if (r == STORE_OK)
        r = run(&im->conn, PG_IMPORT_NEXT_ID, 1, params, "import: next id", NULL);
    return r;
}

static enum store_result import_write(struct store_import *t, const struct store_row *rows,
                                      size_t n)
{
    struct pg_import *im = import_of(t);
    if (n == 0)
        return STORE_OK;
    struct pg_arr cols[IMPORT_COLS];
    memset(cols, 0, sizeof cols);
    for (size_t i = 0; i < n; i++)
        add_row(cols, &rows[i]);
    char *params[IMPORT_COLS];
    int oom = 0;
    for (int k = 0; k < IMPORT_COLS; k++) {
        params[k] = pg_arr_take(&cols[k]);
        oom |= !params[k];
    }
    enum store_result r = STORE_ERROR;
    if (oom) {
        log_error("out of memory building a batch of %zu jobs", n);
    } else {
        PGresult *res = pg_conn_exec(&im->conn, PG_IMPORT_ROWS, IMPORT_COLS,
                                     (const char *const *)params, "import: rows", &r);
        if (res && strtoull(PQcmdTuples(res), NULL, 10) != n) {
            log_error("import: %s of %zu jobs written", PQcmdTuples(res), n);
            r = STORE_ERROR;
        }
        PQclear(res);
    }
    for (int k = 0; k < IMPORT_COLS; k++)
        free(params[k]);
    return r;
}

static enum store_result import_write_attempts(struct store_import *t,
                                               const struct store_attempt_row *rows, size_t n)
{
    if (n == 0)
        return STORE_OK;
    struct pg_arr cols[9] = {{0}};
    for (size_t i = 0; i < n; i++) {
        const struct job_attempt *a = &rows[i].attempt;
        pg_arr_int(&cols[0], rows[i].job_id);
        pg_arr_int(&cols[1], rows[i].fencing_token);
        pg_arr_int(&cols[2], a->attempt);
        pg_arr_text(&cols[3], a->worker_id);
        pg_arr_int(&cols[4], a->claimed_at);
        pg_arr_int(&cols[5], a->ended_at);
        pg_arr_int(&cols[6], a->outcome);
        pg_arr_text(&cols[7], a->error_code);
        pg_arr_text(&cols[8], a->error_detail);
    }
    return pg_run_arrays(&import_of(t)->conn, PG_IMPORT_ATTEMPTS, cols, 9, "import: attempts");
}

/* The statement of each table beside the jobs (enum store_copy_table). */
static const enum pg_stmt_id table_stmts[STORE_COPY_TABLES] = {
    [STORE_COPY_LIMITS] = PG_IMPORT_LIMITS,         [STORE_COPY_KEYS] = PG_IMPORT_KEYS,
    [STORE_COPY_KEY_CLAIMS] = PG_IMPORT_KEY_CLAIMS, [STORE_COPY_SCHEDULES] = PG_IMPORT_SCHEDULES,
    [STORE_COPY_TICKER] = PG_IMPORT_TICKER,         [STORE_COPY_SQS_QUEUES] = PG_IMPORT_SQS_QUEUES,
};

static enum store_result import_write_table(struct store_import *t, enum store_copy_table table,
                                            const struct store_table_row *rows, size_t n)
{
    const struct store_copy_shape *shape = &store_copy_shapes[table];
    if (n == 0)
        return STORE_OK;
    struct pg_arr cols[STORE_COPY_TEXTS + STORE_COPY_INTS] = {{0}};
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < shape->texts; k++)
            pg_arr_text(&cols[k], rows[i].text[k]);
        for (int k = 0; k < shape->ints; k++)
            pg_arr_int(&cols[shape->texts + k], rows[i].num[k]);
    }
    return pg_run_arrays(&import_of(t)->conn, table_stmts[table], cols, shape->texts + shape->ints,
                         "import: a table beside the jobs");
}

static enum store_result import_pause(struct store_import *t, char *const *names, size_t n,
                                      int64_t now)
{
    if (n == 0)
        return STORE_OK;
    struct pg_arr cols[2] = {{0}};
    for (size_t i = 0; i < n; i++)
        pg_arr_text(&cols[0], names[i]);
    char nowb[24];
    struct pg_bind b = {.what = "import: paused queues"};
    if (pg_arr_bind(&cols[0], &b, 0) != 0)
        return STORE_ERROR;
    b.params[1] = pg_int_param(nowb, now);
    enum store_result r = run(&import_of(t)->conn, PG_IMPORT_PAUSE, 2, b.params, b.what, NULL);
    pg_bind_free(&b);
    return r;
}

static enum store_result import_counts(struct store_import *t, struct store_copy_counts *out)
{
    struct pg_import *im = import_of(t);
    memset(out, 0, sizeof *out);
    enum store_result r;
    PGresult *res = pg_conn_exec(&im->conn, PG_IMPORT_COUNTS, 0, NULL, "import: counts", &r);
    if (!res)
        return r;
    for (int i = 0; i < PQntuples(res); i++) {
        int64_t status = pg_row_int(res, i, 0), count = pg_row_int(res, i, 1);
        if (status >= 0 && status < JOB_STATUS_COUNT)
            out->status[status] += count;
        out->total += count;
    }
    PQclear(res);
    r = run(&im->conn, PG_IMPORT_ATTEMPT_COUNT, 0, NULL, "import: attempt count", &out->attempts);
    if (r != STORE_OK)
        return r;
    res = pg_conn_exec(&im->conn, PG_IMPORT_TABLE_COUNTS, 0, NULL, "import: table counts", &r);
    if (!res)
        return r;
    for (int k = 0; k < STORE_COPY_TABLES && PQntuples(res) > 0; k++)
        out->tables[k] = pg_row_int(res, 0, k);
    PQclear(res);
    return STORE_OK;
}

static enum store_result import_commit(struct store_import *t)
{
    struct pg_import *im = import_of(t);
    /* The copied jobs with requires or a concurrency key go into their lanes, made as
     * enqueue makes them (the next claim looks at each lane's head). */
    enum store_result r = run(&im->conn, PG_IMPORT_LANES, 0, NULL, "import: lanes", NULL);
    if (r == STORE_OK)
        r = run(&im->conn, PG_IMPORT_LANE_SET, 0, NULL, "import: lane of each job", NULL);
    if (r == STORE_OK)
        r = run(&im->conn, PG_IMPORT_KEY_PAUSES, 0, NULL, "import: lanes of paused keys", NULL);
    if (r == STORE_OK) /* the workflows' edges, from each job's depends_on */
        r = run(&im->conn, PG_IMPORT_DEPS, 0, NULL, "import: dependencies", NULL);
    if (r != STORE_OK)
        return r;
    r = pg_command(&im->conn, "COMMIT", "import: commit");
    im->in_tx = 0; /* committed, or rolled back by the failure */
    if (r == STORE_OK &&
        run(&im->conn, PG_IMPORT_ANALYZE, 0, NULL, "import: analyze", NULL) != STORE_OK)
        log_warn("postgresql: ANALYZE jobq_jobs failed after the copy; autovacuum will do it");
    return r;
}

static void import_close(struct store_import *t)
{
    struct pg_import *im = import_of(t);
    if (im->in_tx && im->conn.db)
        pg_command(&im->conn, "ROLLBACK", "import: rollback");
    pg_conn_close(&im->conn);
    free(im->st.url);
    free(im);
}

static const struct store_import_ops import_ops = {
    .begin = import_begin,
    .write = import_write,
    .write_attempts = import_write_attempts,
    .pause = import_pause,
    .write_table = import_write_table,
    .counts = import_counts,
    .commit = import_commit,
    .close = import_close,
};

struct store_import *pg_import_open(const char *url, char *err, size_t n)
{
    struct pg_import *im = calloc(1, sizeof *im);
    if (!im || !(im->st.url = strdup(url))) {
        free(im);
        snprintf(err, n, "out of memory");
        return NULL;
    }
    im->base.ops = &import_ops;
    im->st.statement_ms = IMPORT_STATEMENT_MS;
    im->st.connect_timeout_s = IMPORT_CONNECT_S;
    if (pg_conn_open(&im->st, &im->conn) != STORE_OK) {
        char shown[512];
        store_url_redact(url, shown, sizeof shown);
        snprintf(err, n, "cannot connect to %s (see the line above)", shown);
        import_close(&im->base);
        return NULL;
    }
    if (pg_schema_migrate(im->conn.db) != 0) {
        snprintf(err, n, "cannot create or update the target's schema (see the line above)");
        import_close(&im->base);
        return NULL;
    }
    return &im->base;
}
