#include "sqlite_conn.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job.h"
#include "log.h"

#define BUSY_TIMEOUT_MS 100
#define WAL_LIMIT_BYTES (64 * 1024 * 1024) /* the WAL is truncated to this after checkpoints */

/* The fault injector (tests only). armed is read on every step without the lock; the rest
 * is guarded by fault_mu. */
static atomic_int fault_armed;
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static int fault_skip;  /* steps still let through before the first fault */
static int fault_left;  /* faults still to inject; < 0: no end */
static int fault_rc;    /* what they return */
static int fault_fired; /* faults injected since the last arming */
static int fault_steps; /* steps seen while armed, since the last arming */

static const char *role_name(enum conn_role role)
{
    return role == CONN_WRITER ? "writer" : role == CONN_READER ? "reader" : "export";
}

static int exec(struct sqlite_conn *c, const char *sql)
{
    char *err = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        log_error("sqlite %s: \"%s\" failed: %s (%d)", role_name(c->role), sql,
                  err ? err : sqlite3_errstr(rc), rc);
        sqlite3_free(err);
        return -1;
    }
    return 0;
}

/* PRAGMA journal_mode answers with the mode it ended in. */
static int set_wal(struct sqlite_conn *c)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
    int ok = 0;
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *mode = sqlite3_column_text(st, 0);
        ok = mode && strcmp((const char *)mode, "wal") == 0;
        if (!ok)
            log_error("sqlite writer: journal_mode is %s, not wal", mode ? (char *)mode : "?");
    } else {
        log_error("sqlite writer: cannot set journal_mode: %s (%d)", sqlite3_errmsg(c->db), rc);
    }
    sqlite3_finalize(st);
    return ok ? 0 : -1;
}

static int writer_pragmas(struct sqlite_conn *c, int sync_full)
{
    char sql[96];
    if (set_wal(c) != 0)
        return -1;
    /* Set explicitly: Debian's build changes the WAL default. */
    if (exec(c, sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL") != 0)
        return -1;
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %d", WAL_LIMIT_BYTES);
    return exec(c, sql);
}

/* SQLite creates the -wal and -shm files with the database file's mode, so while the file is
 * not writable (SQLite then opens it read-only) they are made not writable either, and they
 * outlive the connection. Found so later, they keep every connection read-only, the schema
 * check at start-up included, also once the database file is writable again: this process
 * maps the -shm once for all its connections, and each connection opens the -wal. So before
 * the writer opens the database, the -shm, and the -wal when the database file is writable,
 * get back write permission for their owner: when they are this user's and lack it, their
 * mode becomes the database file's plus owner write. By path only: opening and closing a file
 * of the database would drop this process's POSIX locks on it. */
static void restore_wal_modes(const char *path)
{
    static const char *const suffix[] = {"-shm", "-wal"};
    struct stat db;
    if (stat(path, &db) != 0)
        return;
    size_t n = faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0 ? 2 : 1;
    mode_t mode = (db.st_mode & 0777) | S_IWUSR;
    for (size_t i = 0; i < n; i++) {
        char name[PATH_MAX];
        struct stat st;
        if (snprintf(name, sizeof name, "%s%s", path, suffix[i]) >= (int)sizeof name)
            return;
        if (lstat(name, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            faccessat(AT_FDCWD, name, W_OK, AT_EACCESS) == 0)
            continue;
        if (chmod(name, mode) == 0)
            log_warn("%s was not writable: mode set to %03o", name, (unsigned)mode);
        else
            log_warn("%s is not writable and its mode cannot be changed: %s", name,
                     strerror(errno));
    }
}

int sqlite_conn_open(struct sqlite_conn *c, const char *path, enum conn_role role, int sync_full,
                     int create)
{
    memset(c, 0, sizeof *c);
    c->role = role;
    if (role == CONN_WRITER)
        restore_wal_modes(path);
    int flags =
        (role == CONN_EXPORT ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE) |
        SQLITE_OPEN_NOMUTEX;
    if (role == CONN_WRITER && create)
        flags |= SQLITE_OPEN_CREATE;
    int rc = sqlite3_open_v2(path, &c->db, flags, NULL);
    if (rc != SQLITE_OK) {
        log_error("cannot open database %s: %s (%d)", path,
                  c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc), rc);
        sqlite_conn_close(c);
        return -1;
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    int ok = role == CONN_WRITER ? writer_pragmas(c, sync_full) == 0
                                 : exec(c, "PRAGMA query_only = 1") == 0;
    if (!ok) {
        log_error("cannot configure database %s", path);
        sqlite_conn_close(c);
        return -1;
    }
    /* SQLite opens a file this process may not write read-only, silently: say so. */
    if (role == CONN_WRITER && sqlite3_db_readonly(c->db, "main") == 1)
        log_warn("database %s opened read-only (not writable by this user?): writes answer "
                 "unavailable until it is writable",
                 path);
    return 0;
}

int sqlite_conn_prepare(struct sqlite_conn *c)
{
    int mask = c->role == CONN_WRITER   ? STMT_ON_WRITER
               : c->role == CONN_READER ? STMT_ON_READER
                                        : STMT_ON_EXPORT;
    for (int id = 0; id < STMT_COUNT; id++) {
        const struct stmt_def *d = sqlite_stmt_def((enum stmt_id)id);
        if (!(d->on & mask))
            continue;
        int rc =
            sqlite3_prepare_v3(c->db, d->sql, -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[id], NULL);
        if (rc != SQLITE_OK) {
            log_error("cannot prepare statement %d (%s): %s (%d)", id, d->used_by,
                      sqlite3_errmsg(c->db), rc);
            return -1;
        }
    }
    return 0;
}

void sqlite_conn_close(struct sqlite_conn *c)
{
    for (int id = 0; id < STMT_COUNT; id++) {
        sqlite3_finalize(c->stmt[id]);
        c->stmt[id] = NULL;
    }
    if (c->db) {
        int rc = sqlite3_close(c->db);
        if (rc != SQLITE_OK)
            log_error("sqlite close failed: %s (%d)", sqlite3_errmsg(c->db), rc);
        c->db = NULL;
    }
}

sqlite3_stmt *sqlite_conn_stmt(struct sqlite_conn *c, enum stmt_id id)
{
    assert((unsigned)id < STMT_COUNT && c->stmt[id]);
    sqlite3_stmt *st = c->stmt[id];
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return st;
}

int sqlite_conn_run(struct sqlite_conn *c, enum stmt_id id)
{
    sqlite3_stmt *st = sqlite_conn_stmt(c, id);
    int rc = sqlite_conn_step(c, st);
    sqlite3_reset(st);
    return rc;
}

/* 1 and *rc set when this step is to fail. */
static int fault_due(int *rc)
{
    int due = 0;
    pthread_mutex_lock(&fault_mu);
    if (fault_left != 0) {
        fault_steps++;
        if (fault_skip > 0) {
            fault_skip--;
        } else {
            due = 1;
            *rc = fault_rc;
            fault_fired++;
            if (fault_left > 0 && --fault_left == 0)
                atomic_store(&fault_armed, 0);
        }
    }
    pthread_mutex_unlock(&fault_mu);
    return due;
}

int sqlite_conn_step(struct sqlite_conn *c, sqlite3_stmt *st)
{
    (void)c;
    int rc;
    if (atomic_load_explicit(&fault_armed, memory_order_relaxed) && fault_due(&rc))
        return rc;
    return sqlite3_step(st);
}

void sqlite_conn_fault_run(int n, int rc, int count)
{
    pthread_mutex_lock(&fault_mu);
    int on = n > 0 && count != 0;
    fault_skip = on ? n - 1 : 0;
    fault_left = on ? count : 0;
    fault_rc = rc;
    fault_fired = 0;
    fault_steps = 0;
    atomic_store(&fault_armed, on);
    pthread_mutex_unlock(&fault_mu);
}

void sqlite_conn_fault(int n, int rc)
{
    sqlite_conn_fault_run(n, rc, 1);
}

int sqlite_conn_fault_fired(void)
{
    pthread_mutex_lock(&fault_mu);
    int n = fault_fired;
    pthread_mutex_unlock(&fault_mu);
    return n;
}

int sqlite_conn_fault_steps(void)
{
    pthread_mutex_lock(&fault_mu);
    int n = fault_steps;
    pthread_mutex_unlock(&fault_mu);
    return n;
}

enum store_result sqlite_conn_result(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return STORE_BUSY;
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
        return STORE_UNAVAILABLE;
    default:
        return STORE_ERROR;
    }
}

enum store_result sqlite_conn_fail_at(struct sqlite_conn *c, int rc, const char *what,
                                      const char *file, int line, const char *func)
{
    enum store_result r = sqlite_conn_result(rc);
    enum log_level level = r == STORE_BUSY ? LOG_WARN : LOG_ERROR;
    if (log_enabled(level)) {
        /* errmsg describes the last call on the connection; an injected fault has none. */
        const char *msg = sqlite3_errcode(c->db) == rc ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
        log_write(level, file, line, func, "sqlite %s failed: %s (%d)", what, msg, rc);
    }
    return r;
}

int sqlite_conn_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (!s)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

int sqlite_conn_bind_json(sqlite3_stmt *st, int i, const char *s)
{
    if (s && strcmp(s, "null") == 0)
        s = NULL;
    return sqlite_conn_bind_text(st, i, s);
}

int sqlite_conn_bind_time(sqlite3_stmt *st, int i, int64_t t)
{
    if (t == JOB_NONE)
        return sqlite3_bind_null(st, i);
    return sqlite3_bind_int64(st, i, t);
}

int sqlite_conn_bindf(sqlite3_stmt *st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = SQLITE_OK;
    for (int i = 0; fmt[i] && rc == SQLITE_OK; i++) {
        if (fmt[i] == 'i')
            rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
        else if (fmt[i] == 'n')
            rc = sqlite_conn_bind_time(st, i + 1, va_arg(ap, int64_t));
        else if (fmt[i] == 'j')
            rc = sqlite_conn_bind_json(st, i + 1, va_arg(ap, const char *));
        else
            rc = sqlite_conn_bind_text(st, i + 1, va_arg(ap, const char *));
    }
    va_end(ap);
    return rc;
}

enum store_result sqlite_conn_finish(struct sqlite_conn *c, sqlite3_stmt *st, int rc,
                                     const char *what)
{
    if (rc == SQLITE_OK) {
        do
            rc = sqlite_conn_step(c, st);
        while (rc == SQLITE_ROW);
    }
    enum store_result r = rc == SQLITE_DONE ? STORE_OK : sqlite_conn_fail(c, rc, what);
    sqlite3_reset(st);
    return r;
}
