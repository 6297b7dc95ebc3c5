/* Rows of the jobs table (columns SQL_JOB_COLUMNS) copied into struct job. */
#ifndef JOBQ_SQLITE_ROW_H
#define JOBQ_SQLITE_ROW_H

#include <sqlite3.h>
#include <string.h>

#include "job.h"
#include "job_cols.h"
#include "sqlite_conn.h"

/* Copy the current row of st into out (overwritten: it must hold no strings). The lease token
 * is copied only when with_token is set; requires stays NULL when empty. Call before resetting st.
 * Returns 0, or -1 when memory ran out (logged; out is left empty). */
int sqlite_row_job(sqlite3_stmt *st, int with_token, struct job *out);

/* Step st, which yields at most one job row, copy it into out and reset st. Returns STORE_OK,
 * STORE_NOT_FOUND when it yielded no row, or an error result (logged as `what`). */
enum store_result sqlite_row_one(struct sqlite_conn *c, sqlite3_stmt *st, int with_token,
                                 const char *what, struct job *out);

/* Step st, a write of at most one job row (an INSERT, or an UPDATE of job id), to its end
 * and reset it; when it changed a row, read that job (the inserted one when id is 0) into
 * out, with its lease token when with_token is set, unless out is NULL. Returns STORE_OK,
 * STORE_NOT_FOUND when no row changed, or an error result (logged as `what`). Used instead
 * of RETURNING, which costs SQLite an ephemeral table per statement. */
enum store_result sqlite_row_write(struct sqlite_conn *c, sqlite3_stmt *st, int64_t id,
                                   int with_token, const char *what, struct job *out);

/* 1 when the job j (read by sqlite_row_job) requires nothing. */
static inline int sqlite_row_plain(const struct job *j)
{
    return !j->requires;
}

/* Step st (bound) to its end, copying each row with row(st, element) into a new array *out
 * of *n elements of size bytes (NULL and 0 when none), and reset st. row returns 0, or -1
 * when memory ran out (logged; the element left empty). On failure (logged as `what`) the
 * elements copied are released with free_rows(*out, *n) and *out, *n are NULL, 0. */
enum store_result sqlite_row_collect(struct sqlite_conn *c, sqlite3_stmt *st, const char *what,
                                     size_t size, int (*row)(sqlite3_stmt *st, void *element),
                                     void (*free_rows)(void *rows, size_t n), void **out,
                                     size_t *n);

/* Copy the attempt in columns col.. of st (attempt, worker_id, claimed_at, ended_at, outcome,
 * error_code, error_detail) into out (overwritten). Returns 0, or -1 when memory ran out
 * (out is left empty). */
int sqlite_row_attempt(sqlite3_stmt *st, int col, struct job_attempt *out);

/* Read job id on c into out (its stored lease token too when with_token is set): STORE_OK,
 * STORE_NOT_FOUND or an error result (logged). */
enum store_result sqlite_row_get(struct sqlite_conn *c, int64_t id, int with_token,
                                 struct job *out);

#endif
