/* One PostgreSQL connection of the store: connect with bounded timeouts and keepalives, run
 * statements from the table (prepared on first use), turn failures into store results. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

/* Connection failures repeat while the server is down: log at most one a second. */
static atomic_int_fast64_t last_down_log_ms;

static int down_log_due(void)
{
    int64_t now = clock_mono_ms();
    int64_t last = atomic_load(&last_down_log_ms);
    return now - last >= 1000 && atomic_compare_exchange_strong(&last_down_log_ms, &last, now);
}

/* libpq's message without its trailing newline, on one line. */
static void one_line(const char *msg, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = msg ? msg : ""; *p && o + 1 < n; p++)
        out[o++] = (*p == '\n' || *p == '\r' || *p == '\t') ? ' ' : *p;
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
}

/* What the server says outside an answer (a warning, the reason it is closing the
 * connection), in the log's format rather than on stderr. */
static void on_notice(void *arg, const char *message)
{
    (void)arg;
    char msg[512];
    one_line(message, msg, sizeof msg);
    log_warn("postgresql: %s", msg);
}

enum store_result pg_conn_open(struct pg_store *st, struct pg_conn *c)
{
    pg_conn_close(c);
    char timeout[24], options[96], user_timeout[24];
    snprintf(timeout, sizeof timeout, "%" PRId64, st->connect_timeout_s);
    snprintf(options, sizeof options,
             "-c statement_timeout=%" PRId64 " -c client_min_messages=warning", st->statement_ms);
    /* TCP: notice a dead server within ~10 s of silence, and give up on unacknowledged data
     * after as long (a failover must not hang a connection). */
    snprintf(user_timeout, sizeof user_timeout, "%d", 10000);
    /* Entries before dbname can be overridden by the URL's own parameters. */
    const char *keys[] = {"connect_timeout",  "keepalives",
                          "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout",
                          "application_name", "options",
                          "dbname",           NULL};
    const char *vals[] = {timeout,      "1",     "5",     "2",     "3",
                          user_timeout, "jobqd", options, st->url, NULL};
    c->db = PQconnectdbParams(keys, vals, 1);
    memset(c->prepared, 0, sizeof c->prepared);
    c->bad = 0;
    if (!c->db || PQstatus(c->db) != CONNECTION_OK) {
        char msg[512];
        one_line(c->db ? PQerrorMessage(c->db) : "out of memory", msg, sizeof msg);
        if (down_log_due())
            log_warn("postgresql: cannot connect: %s", msg);
        pg_conn_close(c);
        return STORE_UNAVAILABLE;
    }
    atomic_fetch_add(&st->connects, 1);
    PQsetNoticeProcessor(c->db, on_notice, NULL);
    if (c->cancel_mu) {
        PGcancel *k = PQgetCancel(c->db); /* NULL (out of memory): not cancellable */
        pthread_mutex_lock(c->cancel_mu);
        c->cancel = k;
        pthread_mutex_unlock(c->cancel_mu);
    }
    return STORE_OK;
}

void pg_conn_close(struct pg_conn *c)
{
    if (c->cancel_mu) {
        pthread_mutex_lock(c->cancel_mu);
        PGcancel *k = c->cancel;
        c->cancel = NULL;
        pthread_mutex_unlock(c->cancel_mu);
        if (k)
            PQfreeCancel(k);
    }
    if (c->db)
        PQfinish(c->db);
    c->db = NULL;
    c->bad = 0;
}

/* 1 when the SQLSTATE means the connection or the server cannot be used now. */
static int state_unavailable(const char *s)
{
    return strncmp(s, "08", 2) == 0 || strcmp(s, "57P01") == 0 || strcmp(s, "57P02") == 0 ||
           strcmp(s, "57P03") == 0 || strcmp(s, "25006") == 0 || strcmp(s, "53300") == 0;
}

/* 1 when the SQLSTATE is contention or a timeout: worth a retry, else 503. */
static int state_busy(const char *s)
{
    return strcmp(s, "40001") == 0 || strcmp(s, "40P01") == 0 || strcmp(s, "55P03") == 0 ||
           strcmp(s, "57014") == 0;
}

enum store_result pg_fail(struct pg_conn *c, const PGresult *res, const char *what)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    char msg[512];
    one_line(res     ? PQresultErrorMessage(res)
             : c->db ? PQerrorMessage(c->db)
                     : "no connection",
             msg, sizeof msg);
    if (!msg[0] && c->db)
        one_line(PQerrorMessage(c->db), msg, sizeof msg);
    int gone = !c->db || PQstatus(c->db) != CONNECTION_OK;
    if (gone || !state || state_unavailable(state)) {
        c->bad = 1;
        if (down_log_due())
            log_warn("postgresql: %s: connection unusable (%s): %s", what, state ? state : "-",
                     msg);
        return STORE_UNAVAILABLE;
    }
    if (state_busy(state)) {
        log_info("postgresql: %s: contention or timeout (%s): %s", what, state, msg);
        return STORE_BUSY;
    }
    if (strcmp(state, "53100") == 0) { /* disk full */
        log_warn("postgresql: %s: %s", what, msg);
        return STORE_UNAVAILABLE;
    }
    log_error("postgresql: %s failed (%s): %s", what, state, msg);
    return STORE_ERROR;
}

static int ok_status(const PGresult *res)
{
    ExecStatusType s = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

enum store_result pg_prepare(struct pg_conn *c, enum pg_stmt_id id, const char *what)
{
    uint64_t bit = 1ULL << (id % 64);
    if (!c->db) {
        c->bad = 1;
        return STORE_UNAVAILABLE;
    }
    const struct pg_stmt_def *d = pg_stmt_def(id);
    if (c->prepared[id / 64] & bit)
        return STORE_OK;
    pg_conn_trip(c);
    PGresult *p = PQprepare(c->db, d->name, d->sql, 0, NULL);
    enum store_result r = ok_status(p) ? STORE_OK : pg_fail(c, p, what);
    PQclear(p);
    if (r == STORE_OK)
        c->prepared[id / 64] |= bit;
    return r;
}

void pg_conn_trip(struct pg_conn *c)
{
    if (c->trips)
        atomic_fetch_add(c->trips, 1);
}

PGresult *pg_conn_exec(struct pg_conn *c, enum pg_stmt_id id, int n, const char *const *params,
                       const char *what, enum store_result *r)
{
    *r = pg_prepare(c, id, what);
    if (*r != STORE_OK)
        return NULL;
    pg_conn_trip(c);
    PGresult *res = PQexecPrepared(c->db, pg_stmt_def(id)->name, n, params, NULL, NULL, 0);
    if (!ok_status(res)) {
        *r = pg_fail(c, res, what);
        PQclear(res);
        return NULL;
    }
    *r = STORE_OK;
    return res;
}

int pg_send(struct pg_conn *c, enum pg_stmt_id id, int n, const char *const *params)
{
    return PQsendQueryPrepared(c->db, pg_stmt_def(id)->name, n, params, NULL, NULL, 0) ? 0 : -1;
}

int pg_result_ok(const PGresult *res)
{
    return ok_status(res);
}

enum store_result pg_command(struct pg_conn *c, const char *sql, const char *what)
{
    if (!c->db) {
        c->bad = 1;
        return STORE_UNAVAILABLE;
    }
    pg_conn_trip(c);
    PGresult *res = PQexec(c->db, sql);
    enum store_result r = ok_status(res) ? STORE_OK : pg_fail(c, res, what);
    PQclear(res);
    return r;
}

int pg_await(struct pg_conn *c, int64_t deadline)
{
    while (PQisBusy(c->db)) {
        int64_t left = deadline - clock_mono_ms();
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = PQsocket(c->db), .events = POLLIN};
        if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) < 0 && errno != EINTR)
            return -1;
        if (!PQconsumeInput(c->db))
            return -1;
    }
    return 0;
}

void pg_cancel(struct pg_conn *c)
{
    if (!c->db || PQstatus(c->db) != CONNECTION_OK)
        return;
    PGcancel *k = PQgetCancel(c->db);
    char err[256];
    if (k) {
        PQcancel(k, err, sizeof err);
        PQfreeCancel(k);
    }
}

enum store_result pg_commit(struct pg_conn *c, int64_t timeout_ms, const char *what)
{
    if (!c->db || !PQsendQuery(c->db, "COMMIT"))
        return pg_fail(c, NULL, what);
    pg_conn_trip(c);
    int late = pg_await(c, clock_mono_ms() + timeout_ms) != 0;
    if (late && PQstatus(c->db) == CONNECTION_OK) {
        /* Waiting for a synchronous standby (statement_timeout does not cover it): cancel
         * the wait. The commit may then be on this server only: not acknowledged. */
        pg_cancel(c);
        if (pg_await(c, clock_mono_ms() + PG_CANCEL_WAIT_MS) != 0)
            c->bad = 1; /* no answer even to the cancel: drop the connection */
    }
    enum store_result r = STORE_OK;
    if (c->bad || PQstatus(c->db) != CONNECTION_OK) {
        c->bad = 1;
        r = pg_fail(c, NULL, what);
    } else {
        PGresult *res;
        while ((res = PQgetResult(c->db)) != NULL) {
            if (r == STORE_OK && !ok_status(res))
                r = pg_fail(c, res, what);
            PQclear(res);
        }
    }
    if (late) {
        log_warn("postgresql: %s: no answer to COMMIT within %lld ms (a synchronous standby "
                 "that does not confirm?): answered as unavailable",
                 what, (long long)timeout_ms);
        return STORE_UNAVAILABLE;
    }
    return r;
}
