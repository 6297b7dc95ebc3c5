/* Helpers shared by the store tests (test_store*.c): open a store for the case, enqueue and
 * claim with defaults, look at the database from the side. Header-only: every function is
 * static inline.
 *
 * The backend under test is SQLite (a file in the case's temp dir), or PostgreSQL when
 * JOBQ_TEST_BACKEND=pg: then the case gets a fresh database of the test cluster that
 * JOBQ_TEST_PG_URL names (test_pg_util.h), dropped when the case ends. Without a cluster a pg
 * case is skipped, unless JOBQ_REQUIRE_PG=1 (then its store does not open and it fails).
 * ctest runs the contract modules both ways (tests/CMakeLists.txt); a case that tests the
 * SQLite backend's own machinery starts with SQLITE_ONLY("why"). */
#ifndef JOBQ_TEST_STORE_UTIL_H
#define JOBQ_TEST_STORE_UTIL_H

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"
#include "store.h"
#include "testlib.h"

#define T0 1700000000LL /* "now" at the start of every test */
#define DB_PATH "data/jobq.db"

#include "test_pg_util.h"

/* 1 when the store tests run on PostgreSQL (JOBQ_TEST_BACKEND=pg). */
static inline int backend_pg(void)
{
    const char *b = getenv("JOBQ_TEST_BACKEND");
    return b && strcmp(b, "pg") == 0;
}

/* Skip the running case on PostgreSQL: it tests the SQLite backend itself (why). Call it
 * first in the case. */
#define SQLITE_ONLY(why)                                                                           \
    do {                                                                                           \
        if (backend_pg())                                                                          \
            test_skip("SQLite only: " why);                                                        \
    } while (0)

static int case_db; /* 1 while the running case has its PostgreSQL database */

static inline void drop_case_db(void)
{
    drop_db();
    case_db = 0;
}

/* The database of the running case: on PostgreSQL made at the first call of the case (and
 * dropped when it ends; skips the case when there is no cluster), the same one when the case
 * opens the store again. Returns its URL, or NULL when it cannot be made. */
static inline const char *case_url(void)
{
    if (!backend_pg())
        return DB_PATH;
    if (!case_db) {
        int made = fresh_db();
        if (made == 0)
            test_skip("no PostgreSQL test cluster (JOBQ_TEST_PG_URL)");
        if (made < 0)
            return NULL;
        case_db = 1;
        test_defer(drop_case_db);
    }
    return db_url;
}

/* Open the store of the running case (see the top of this file) with backoff base 10 s,
 * max 3600 s. Returns NULL when it cannot. */
static int64_t test_events_max; /* the event log's count bound of the next open; 0: default */

static inline struct store *open_store_hooks(const struct store_hooks *hooks)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    o.events.max = test_events_max;
    log_set_level(LOG_WARN);
    o.url = case_url();
    if (!o.url)
        return NULL;
    o.backoff_base = 10;
    o.backoff_max = 3600;
    o.sqlite.sync_full = 1;
    o.sqlite.readers = 2;
    o.pg.pool_size = 4;
    o.pg.checkout_ms = 5000;
    o.pg.statement_ms = 5000;
    o.pg.connect_timeout_s = 5;
    if (hooks)
        o.hooks = *hooks;
    return store_open(&o);
}

static inline struct store *open_store(void)
{
    return open_store_hooks(NULL);
}

static inline struct job_spec spec_of(const char *queue, int32_t priority, int64_t run_at)
{
    struct job_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.queue = queue;
    sp.payload = "{\"n\":1}";
    sp.priority = priority;
    sp.run_at = run_at;
    sp.max_attempts = 5;
    sp.max_runtime_seconds = JOB_NONE;
    return sp;
}

/* Enqueue one job; returns its id, or -1. */
static inline int64_t enqueue_spec(struct store *s, const struct job_spec *sp, int64_t now)
{
    struct job j;
    int created = 0;
    if (store_enqueue(s, sp, 1, now, &j, &created) != STORE_OK || !created)
        return -1;
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

/* Enqueue one due job of queue with concurrency key ckey at T0 (into its lane, made when new);
 * its id, or -1. */
static inline int64_t enqueue_keyed(struct store *s, const char *queue, const char *ckey)
{
    struct job_spec sp = spec_of(queue, 0, T0);
    sp.concurrency_key = ckey;
    return enqueue_spec(s, &sp, T0);
}

static inline int64_t enqueue(struct store *s, const char *queue, int32_t priority, int64_t run_at,
                              int64_t now)
{
    struct job_spec sp = spec_of(queue, priority, run_at);
    return enqueue_spec(s, &sp, now);
}

/* Claim at most max jobs from one queue with capabilities caps (NULL: none). */
static inline enum store_result claim_caps(struct store *s, const char *queue, const char *caps,
                                           int max, int64_t lease, int64_t now, struct job *out,
                                           size_t *n)
{
    const char *queues[1] = {queue};
    struct claim_req req = {"worker-1", queues, 1, caps, lease, max};
    return store_claim(s, &req, now, out, n);
}

/* Claim one job from queue with a 30 s lease into *out; returns its id, 0 when none, -1 on
 * error. The caller clears *out when the id is positive. */
static inline int64_t claim_one(struct store *s, const char *queue, int64_t now, struct job *out)
{
    size_t n = 0;
    if (claim_caps(s, queue, NULL, 1, 30, now, out, &n) != STORE_OK)
        return -1;
    return n == 1 ? out->id : 0;
}

/* The status of job id, or -1. */
static inline int status_of(struct store *s, int64_t id)
{
    struct job j;
    if (store_get(s, id, &j) != STORE_OK)
        return -1;
    int st = (int)j.status;
    job_clear(&j);
    return st;
}

/* SQL that takes a SQLite database back from schema 9 to 8 (lanes' and claims' sweep). */
#define SQLITE_UNDO_MIGRATION_9 "DROP INDEX jobs_lane_any; DROP INDEX key_claims_at; "

/* SQL that takes a SQLite database back from schema 13 to 12 (the event log). */
#define SQLITE_UNDO_MIGRATION_13                                                                   \
    "DROP TABLE events; DROP TABLE events_kept; ALTER TABLE jobs DROP COLUMN traceparent; "        \
    "ALTER TABLE jobs DROP COLUMN tracestate; "

/* SQL that takes a SQLite database back from schema 10 to 9 (schedules). */
#define SQLITE_UNDO_MIGRATION_10 "DROP TABLE schedules; DROP TABLE ticker; "

/* SQL that takes a SQLite database back from schema 14 to 13 (the SQS queues). */
#define SQLITE_UNDO_MIGRATION_14 "DROP TABLE sqs_queues; "

/* SQL that takes a SQLite database back from schema 15 to 14 (webhooks). */
#define SQLITE_UNDO_MIGRATION_15 "DROP TABLE webhooks; DROP TABLE webhook_parked; "

/* SQL that takes a SQLite database back from schema 7 to 6. */
#define SQLITE_UNDO_MIGRATION_7 "DROP INDEX jobs_dedup_live; "

/* SQL that takes a SQLite database back from schema 8 to 7 (workflows). */
#define SQLITE_UNDO_MIGRATION_8                                                                    \
    "DROP TRIGGER jobs_deps_gone; DROP TABLE deps; DROP INDEX jobs_deps_todo; "                    \
    "ALTER TABLE jobs DROP COLUMN depends_on; ALTER TABLE jobs DROP COLUMN on_dep_failure; "       \
    "ALTER TABLE jobs DROP COLUMN deps_pending; ALTER TABLE jobs DROP COLUMN has_dependents; "     \
    "ALTER TABLE jobs DROP COLUMN deps_todo; "

/* SQL that takes a SQLite database back from schema 6 to 5 (what migration 6 added goes), for
 * the tests that rebuild an older schema. */
#define SQLITE_UNDO_MIGRATION_6                                                                    \
    "DROP INDEX jobs_claim_free; DROP INDEX jobs_key_running; DROP INDEX jobs_lane; "              \
    "DROP INDEX jobs_dedup; "                                                                      \
    "DROP INDEX jobs_expires; DROP TABLE limits; DROP TABLE keys; DROP TABLE key_claims; "         \
    "DROP TABLE lanes; ALTER TABLE jobs DROP COLUMN concurrency_key; "                             \
    "ALTER TABLE jobs DROP COLUMN expires_at; ALTER TABLE jobs DROP COLUMN dedup_key; "            \
    "ALTER TABLE jobs DROP COLUMN dedup_mode; ALTER TABLE jobs DROP COLUMN dedup_seconds; "        \
    "ALTER TABLE jobs DROP COLUMN lane; "                                                          \
    "CREATE INDEX jobs_claim_plain ON jobs (queue, priority DESC, run_at, id)"                     \
    " WHERE status = 1 AND requires IS NULL; "                                                     \
    "CREATE INDEX jobs_claim_req ON jobs (queue, priority DESC, run_at, id)"                       \
    " WHERE status = 1 AND requires IS NOT NULL; "

/* Run sql (no rows) on the test's own connection to the database under test, whichever the
 * backend (table names as that backend has them). Returns 0, or -1 (printed). */
static inline int store_sql(const char *sql)
{
    if (backend_pg())
        return pg_sql_on(db_url, sql);
    sqlite3 *db = NULL;
    int rc = sqlite3_open(DB_PATH, &db);
    if (rc == SQLITE_OK)
        sqlite3_busy_timeout(db, 5000);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

/* One integer from a SQL query on the test's own connection to the SQLite database, or -1. */
static inline int64_t sql_int(const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(DB_PATH, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

/* One integer from SELECT expr FROM the jobs table [WHERE where], on the test's own
 * connection to the database under test (both backends' tables have these columns and the
 * same status numbers), or -1. */
static inline int64_t jobs_int(const char *expr, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM %s%s%s", expr, backend_pg() ? "jobq_jobs" : "jobs",
             where ? " WHERE " : "", where ? where : "");
    if (!backend_pg())
        return sql_int(sql);
    int64_t v = -1;
    return pg_sql_value(db_url, sql, &v) == 0 ? v : -1;
}

/* One integer from SELECT expr FROM table `name` (its SQLite name: "jobq_" goes before it on
 * PostgreSQL) WHERE where, on the test's own connection to the database under test, or -1. */
static inline int64_t table_int(const char *expr, const char *name, const char *where)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM %s%s WHERE %s", expr, backend_pg() ? "jobq_" : "",
             name, where);
    if (!backend_pg())
        return sql_int(sql);
    int64_t v = -1;
    return pg_sql_value(db_url, sql, &v) == 0 ? v : -1;
}

/* 1 when store_queues' counts of queue (at now) equal a count of its jobs per API status
 * (a queue without jobs is not listed: all zero); else 0, with what differed on stderr. */
static inline int counts_exact(struct store *s, const char *queue, int64_t now)
{
    struct queue_stats *q = NULL;
    size_t n = 0;
    if (store_queues(s, now, &q, &n) != STORE_OK)
        return 0;
    const struct queue_stats *mine = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(q[i].name, queue) == 0)
            mine = &q[i];
    }
    int ok = 1;
    for (int st = JOB_QUEUED; st < JOB_STATUS_COUNT; st++) {
        char where[160];
        /* API queued covers the stored scheduled */
        snprintf(where, sizeof where, "queue = '%s' AND status IN (%d, %d)", queue, st,
                 st == JOB_QUEUED ? JOB_STATUS_NONE : st);
        int64_t counted = jobs_int("count(*)", where), kept = mine ? mine->count[st] : 0;
        if (kept != counted) {
            fprintf(stderr, "queue %s, status %d: %lld kept, %lld jobs\n", queue, st,
                    (long long)kept, (long long)counted);
            ok = 0;
        }
    }
    queue_stats_free(q, n);
    return ok;
}

/* 1 when the store makes scheduled jobs claimable by promoting them (the sweep and the claim
 * do), 0 when its claims see due jobs by themselves (store.h: store_next_due is then always
 * JOB_NONE and a sweep promotes nothing). */
static inline int promotes(struct store *s)
{
    return s->ops->next_due != NULL;
}

/* The status a backend stores for a queued job that is not due yet (raw SQL): SQLite's own
 * "scheduled" (0, no API status) where the store promotes jobs, else JOB_QUEUED. The store
 * itself shows both as JOB_QUEUED. */
static inline int stored_not_due_status(struct store *s)
{
    return promotes(s) ? JOB_STATUS_NONE : JOB_QUEUED;
}

/* The EXPLAIN QUERY PLAN of sql on the test's own connection, one detail per line, in buf. */
static inline int query_plan(const char *sql, char *buf, size_t size)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char q[4096];
    int rc = -1;
    buf[0] = '\0';
    snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
    if (sqlite3_open_v2(DB_PATH, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        size_t used = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *d = (const char *)sqlite3_column_text(st, 3);
            int w = snprintf(buf + used, size - used, "%s\n", d ? d : "");
            if (w < 0 || (size_t)w >= size - used)
                break;
            used += (size_t)w;
        }
        rc = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

#endif
