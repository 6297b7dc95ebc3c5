/* The SQLite side of jobqd migrate: a store file as a struct store_export (store_copy.h).
 * It is opened read-only while this process holds its lock file (no jobqd can have it open),
 * and read in one read transaction: the counts and every batch of rows see one snapshot. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sqlite_lock.h"
#include "sqlite_open.h"
#include "sqlite_row.h"
#include "sqlite_schema.h"

struct sqlite_export {
    struct store_export base; /* first */
    struct sqlite_conn conn;
    int lock_fd;  /* the lock file's descriptor, or SQLITE_LOCKFILE_ABSENT */
    int snapshot; /* 1 while the read transaction is open */
};

static struct sqlite_export *export_of(struct store_export *x)
{
    return (struct sqlite_export *)x;
}

static int64_t col_nullable(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return JOB_NONE;
    return sqlite3_column_int64(st, col);
}

/* Step st (no bindings) to its one row and reset it: *out is its first column. */
static enum store_result one_int(struct sqlite_conn *c, enum stmt_id id, int64_t *out)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite_conn_step(c, st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    enum store_result r = rc == SQLITE_ROW ? STORE_OK : sqlite_conn_fail(c, rc, "export: last id");
    sqlite3_reset(st);
    return r;
}

static enum store_result export_counts(struct store_export *x, struct store_copy_counts *out)
{
    struct sqlite_conn *c = &export_of(x)->conn;
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPORT_COUNTS);
    int rc;
    while ((rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        int status = sqlite3_column_int(st, 0);
        int64_t n = sqlite3_column_int64(st, 1);
        if (status == SQLITE_SCHEDULED)
            status = JOB_QUEUED; /* the API shows scheduled jobs as queued */
        if (status >= 0 && status < JOB_STATUS_COUNT)
            out->status[status] += n;
        out->total += n;
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, "export: counts");
    sqlite3_reset(st);
    if (r == STORE_OK)
        r = one_int(c, STMT_EXPORT_LAST_ID, &out->last_id);
    if (r == STORE_OK)
        r = one_int(c, STMT_EXPORT_ATTEMPT_COUNT, &out->attempts);
    if (r != STORE_OK)
        return r;
    st = sqlite_conn_stmt(c, STMT_EXPORT_TABLE_COUNTS);
    rc = sqlite_conn_step(c, st);
    for (int k = 0; rc == SQLITE_ROW && k < STORE_COPY_TABLES; k++)
        out->tables[k] = sqlite3_column_int64(st, k);
    r = rc == SQLITE_ROW ? STORE_OK : sqlite_conn_fail(c, rc, "export: table counts");
    sqlite3_reset(st);
    return r;
}

/* The statement of each table beside the jobs (enum store_copy_table). */
static const enum stmt_id table_stmts[STORE_COPY_TABLES] = {
    [STORE_COPY_LIMITS] = STMT_EXPORT_LIMITS,
    [STORE_COPY_KEYS] = STMT_EXPORT_KEYS,
    [STORE_COPY_KEY_CLAIMS] = STMT_EXPORT_KEY_CLAIMS,
    [STORE_COPY_SCHEDULES] = STMT_EXPORT_SCHEDULES,
    [STORE_COPY_TICKER] = STMT_EXPORT_TICKER,
    [STORE_COPY_SQS_QUEUES] = STMT_EXPORT_SQS_QUEUES,
};

/* The current row of st into *row, as the shape of its table says. Returns 0, or -1 when
 * memory ran out. */
static int table_row(sqlite3_stmt *st, const struct store_copy_shape *shape,
                     struct store_table_row *row)
{
    memset(row, 0, sizeof *row);
    for (int k = 0; k < shape->texts; k++) {
        const char *v = (const char *)sqlite3_column_text(st, k);
        if (v && !(row->text[k] = strdup(v)))
            return -1;
    }
    for (int k = 0; k < shape->ints; k++)
        row->num[k] = col_nullable(st, shape->texts + k);
    return 0;
}

static enum store_result export_table(struct store_export *x, enum store_copy_table table,
                                      const char *after_text, int64_t after_int, size_t max_rows,
                                      size_t max_bytes, struct store_table_row *out, size_t *n)
{
    struct sqlite_conn *c = &export_of(x)->conn;
    const struct store_copy_shape *shape = &store_copy_shapes[table];
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, table_stmts[table]);
    int rc = sqlite3_bind_text(st, 1, after_text, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, after_int);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)max_rows);
    enum store_result r = STORE_OK;
    size_t bytes = 0;
    while ((rc == SQLITE_OK || rc == SQLITE_ROW) && *n < max_rows && bytes < max_bytes) {
        if ((rc = sqlite_conn_step(c, st)) != SQLITE_ROW)
            break;
        if (table_row(st, shape, &out[*n]) != 0) {
            log_error("out of memory reading the %s", shape->name);
            (*n)++; /* its texts read so far are released below */
            r = STORE_ERROR;
            break;
        }
        bytes += store_table_row_bytes(&out[(*n)++]);
    }
    if (r == STORE_OK && rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "export: a table beside the jobs");
    sqlite3_reset(st);
    if (r != STORE_OK) {
        store_table_rows_clear(out, *n);
        *n = 0;
    }
    return r;
}

static enum store_result export_rows(struct store_export *x, int64_t after_id, size_t max_rows,
                                     size_t max_bytes, struct store_row *out, size_t *n)
{
    struct sqlite_conn *c = &export_of(x)->conn;
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPORT_ROWS);
    int rc = sqlite3_bind_int64(st, 1, after_id);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)max_rows);
    if (rc != SQLITE_OK) {
        enum store_result r = sqlite_conn_fail(c, rc, "export: bind rows");
        sqlite3_reset(st);
        return r;
    }
    size_t got = 0, bytes = 0;
    enum store_result r = STORE_OK;
    while (got < max_rows && bytes < max_bytes && (rc = sqlite_conn_step(c, st)) == SQLITE_ROW) {
        struct store_row *row = &out[got];
        if (sqlite_row_job(st, 1, &row->job) != 0) {
            r = STORE_ERROR;
            break;
        }
        row->lease_seconds = col_nullable(st, SQL_EXPORT_LEASE_SECONDS);
        row->deadline_at = col_nullable(st, SQL_EXPORT_DEADLINE_AT);
        bytes += store_row_bytes(row);
        got++;
    }
    /* The loop also stops on a bound with rc still SQLITE_ROW: that is no failure. */
    if (r == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "export: rows");
    sqlite3_reset(st);
    if (r != STORE_OK) {
        store_rows_clear(out, got);
        return r;
    }
    *n = got;
    return STORE_OK;
}

static enum store_result export_attempts(struct store_export *x, int64_t after_job,
                                         int64_t after_token, size_t max_rows,
                                         struct store_attempt_row *out, size_t *n)
{
    struct sqlite_conn *c = &export_of(x)->conn;
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPORT_ATTEMPTS);
    int rc = sqlite3_bind_int64(st, 1, after_job);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, after_token);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 3, (sqlite3_int64)max_rows);
    enum store_result r = STORE_OK;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if (*n == max_rows || (rc = sqlite_conn_step(c, st)) != SQLITE_ROW)
            break;
        struct store_attempt_row *row = &out[*n];
        row->job_id = sqlite3_column_int64(st, 0);
        row->fencing_token = sqlite3_column_int64(st, 1);
        if (sqlite_row_attempt(st, 2, &row->attempt) != 0) {
            log_error("out of memory reading attempts");
            r = STORE_ERROR;
            break;
        }
        (*n)++;
    }
    if (r == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "export: attempts");
    sqlite3_reset(st);
    if (r != STORE_OK) {
        for (size_t i = 0; i < *n; i++)
            job_attempt_clear(&out[i].attempt);
        *n = 0;
    }
    return r;
}

static enum store_result export_paused(struct store_export *x, const char *after, size_t max,
                                       char **names, size_t *n)
{
    struct sqlite_conn *c = &export_of(x)->conn;
    *n = 0;
    sqlite3_stmt *st = sqlite_conn_stmt(c, STMT_EXPORT_PAUSED);
    int rc = sqlite3_bind_text(st, 1, after, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
    enum store_result r = STORE_OK;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if (*n == max || (rc = sqlite_conn_step(c, st)) != SQLITE_ROW)
            break;
        names[*n] = strdup((const char *)sqlite3_column_text(st, 0));
        if (!names[*n]) {
            log_error("out of memory reading paused queues");
            r = STORE_ERROR;
            break;
        }
        (*n)++;
    }
    if (r == STORE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        r = sqlite_conn_fail(c, rc, "export: paused queues");
    sqlite3_reset(st);
    if (r != STORE_OK) {
        for (size_t i = 0; i < *n; i++)
            free(names[i]);
        *n = 0;
    }
    return r;
}

static void export_close(struct store_export *x)
{
    struct sqlite_export *e = export_of(x);
    if (e->snapshot)
        sqlite_conn_run(&e->conn, STMT_COMMIT); /* a read transaction: nothing to write */
    sqlite_conn_close(&e->conn);
    if (e->lock_fd >= 0)
        close(e->lock_fd); /* releases the lock */
    free(e);
}

static const struct store_export_ops export_ops = {
    .counts = export_counts,
    .rows = export_rows,
    .attempts = export_attempts,
    .paused = export_paused,
    .table = export_table,
    .close = export_close,
};

/* 1 when path must be opened immutable: its directory cannot be written (a read-only mount),
 * so SQLite cannot make the -shm file it needs to read a database in WAL mode; nothing can
 * write the database there either. Not when a -wal file holds writes not yet checkpointed
 * (immutable would not read them): the plain open then says what is wrong. */
static int needs_immutable(const char *path)
{
    char dir[PATH_MAX], wal[PATH_MAX];
    struct stat sb;
    if (snprintf(wal, sizeof wal, "%s-wal", path) >= (int)sizeof wal)
        return 0;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir ? 1 : 0] = '\0';
    return access(dir, W_OK) != 0 && (stat(wal, &sb) != 0 || sb.st_size == 0);
}

/* path as a SQLite URI with immutable=1 into out (size n); "" when it does not fit. */
static void immutable_uri(const char *path, char *out, size_t n)
{
    size_t o = (size_t)snprintf(out, n, "file:");
    for (const char *p = path; *p && o + 4 < n; p++) {
        if (*p == '?' || *p == '#' || *p == '%')
            o += (size_t)snprintf(out + o, n - o, "%%%02X", (unsigned char)*p);
        else
            out[o++] = *p;
    }
    if (o + 13 > n) {
        out[0] = '\0';
        return;
    }
    snprintf(out + o, n - o, "?immutable=1");
}

/* Take the lock file of path for the export. Returns 0 (with *fd the descriptor, or
 * SQLITE_LOCKFILE_ABSENT), or -1 with err set. */
static int lock_for_export(const char *path, int *fd, char *err, size_t n)
{
    *fd = sqlite_lock_take(path);
    if (*fd == SQLITE_LOCKFILE_HELD) {
        snprintf(err, n, "%s is in use by a running jobqd (it holds %s.lock): stop it first", path,
                 path);
        return -1;
    }
    if (*fd == -1) {
        snprintf(err, n, "cannot lock %s (see the line above)", path);
        return -1;
    }
    return 0;
}

struct store_export *sqlite_export_open(const char *path, char *err, size_t n)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, n, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, n, "%s is not a file", path);
        return NULL;
    }
    struct sqlite_export *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    e->base.ops = &export_ops;
    e->lock_fd = SQLITE_LOCKFILE_ABSENT;
    /* What the file is, before a lock file is made beside it; the lock before the snapshot. */
    char uri[3 * PATH_MAX + 16];
    const char *name = path;
    if (needs_immutable(path)) {
        immutable_uri(path, uri, sizeof uri);
        name = uri[0] ? uri : path;
    }
    if (sqlite_conn_open(&e->conn, name, CONN_EXPORT, 0, 0) != 0) {
        snprintf(err, n, "cannot open %s (see the line above)", path);
        export_close(&e->base);
        return NULL;
    }
    /* A file of an older schema reads as the current one (TEMP tables and views of this
     * connection alone): it is only read, and may be on a read-only mount. */
    if (sqlite_schema_check(e->conn.db, path, err, n) != 0 ||
        lock_for_export(path, &e->lock_fd, err, n) != 0) {
        export_close(&e->base);
        return NULL;
    }
    if (sqlite_schema_present(e->conn.db) != 0) {
        snprintf(err, n, "cannot read %s (see the line above)", path);
        export_close(&e->base);
        return NULL;
    }
    int rc = SQLITE_DONE;
    if (sqlite_conn_prepare(&e->conn) != 0 ||
        (rc = sqlite_conn_run(&e->conn, STMT_READ_BEGIN)) != SQLITE_DONE) {
        if (rc != SQLITE_DONE)
            sqlite_conn_fail(&e->conn, rc, "export: begin");
        snprintf(err, n, "cannot read %s (see the line above)", path);
        export_close(&e->base);
        return NULL;
    }
    e->snapshot = 1;
    return &e->base;
}
