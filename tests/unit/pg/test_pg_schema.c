/* The PostgreSQL migration runner (pg_schema.c): two processes migrating an empty database at
 * once both succeed (the index builds run CONCURRENTLY, which would wait for a process blocked
 * in pg_advisory_lock: the lock is polled instead); an index that a dead process left INVALID
 * is dropped and built again at the next start; a database of a newer schema is accepted
 * when its newer migrations say older programs keep working, else refused. Needs
 * JOBQ_TEST_PG_URL (test_pg_util.h); without it the cases say so and pass, unless
 * JOBQ_REQUIRE_PG=1.
 *
 * writes_go_on_during_index_builds is also the measurement of docs/upgrades.md: with
 * JOBQ_SCHEMA_ROWS=1000000 it fills the jobs table with that many rows (20,000 by default)
 * and prints how long writes waited while the index migrations ran, and, for comparison,
 * while the same index was built in a transaction. */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "pg_schema.h"
#include "test_pg_util.h"
#include "testlib.h"

/* A fresh empty database (no template) in db_url. Returns 1, 0 (no cluster: skip) or -1. */
static int empty_db(void)
{
    int given = pg_cluster_given();
    if (given <= 0)
        return given;
    static int n;
    snprintf(db_name, sizeof db_name, "jobq_s_%d_%d", (int)getpid(), ++n);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_name);
    if (admin_sql(sql) != 0)
        return -1;
    log_set_level(LOG_WARN);
    return pg_db_url(db_name, db_url, sizeof db_url);
}

static int64_t value(const char *sql)
{
    int64_t v = -1;
    return pg_sql_value(db_url, sql, &v) == 0 ? v : -1;
}

/* The invalid indexes of the database, and its schema version. */
#define INVALID_INDEXES "SELECT count(*) FROM pg_index WHERE NOT indisvalid"
#define VERSION "SELECT max(version) FROM jobq_schema"

struct migrator {
    pthread_t thread;
    pthread_barrier_t *start;
    int target;
    int rc;
};

static void *migrate_main(void *arg)
{
    struct migrator *m = arg;
    PGconn *c = PQconnectdb(db_url);
    m->rc = -2;
    pthread_barrier_wait(m->start);
    if (PQstatus(c) == CONNECTION_OK)
        m->rc = pg_schema_migrate_to(c, m->target);
    PQfinish(c);
    return NULL;
}

/* Each of the processes migrates to its target at once; returns how many failed. */
static int migrate_at_once(const int *targets, int n)
{
    struct migrator m[4];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        m[i] = (struct migrator){.start = &start, .target = targets[i]};
        pthread_create(&m[i].thread, NULL, migrate_main, &m[i]);
    }
    int failed = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(m[i].thread, NULL);
        failed += m[i].rc != 0;
    }
    pthread_barrier_destroy(&start);
    return failed;
}

/* Start a case on a fresh empty database migrated to version (0: left empty); the case ends
 * there when there is no cluster (skip), and fails when the database cannot be made. */
#define EMPTY_DB_AT(version)                                                                       \
    do {                                                                                           \
        int made_ = empty_db();                                                                    \
        CHECK(made_ >= 0);                                                                         \
        if (made_ == 0)                                                                            \
            return;                                                                                \
        const int to_[1] = {(version)};                                                            \
        if ((version) > 0)                                                                         \
            CHECK_INT(migrate_at_once(to_, 1), 0);                                                 \
    } while (0)

TEST(two_processes_migrate_at_once)
{
    EMPTY_DB_AT(0);
    const int all[3] = {-1, -1, -1};
    CHECK_INT(migrate_at_once(all, 3), 0);
    CHECK_INT(value(VERSION), pg_schema_version());
    CHECK_INT(value(INVALID_INDEXES), 0);
    /* Some of the indexes built concurrently, one per migration that builds any. */
    CHECK_INT(value("SELECT count(*) FROM pg_indexes WHERE indexname IN ('jobq_jobs_due',"
                    " 'jobq_jobs_claim_free', 'jobq_jobs_dedup_live', 'jobq_jobs_deps_todo',"
                    " 'jobq_jobs_lane_any', 'jobq_jobs_expires')"),
              6);
    drop_db();
}

TEST(invalid_index_is_built_again)
{
    /* Migration 10 builds jobq_jobs_expires concurrently: as if its process had died in the
     * build, with the version marked and the index INVALID. */
    EMPTY_DB_AT(10);
    CHECK_INT(pg_sql_on(db_url, "INSERT INTO jobq_jobs (queue, status, payload, run_at,"
                                " max_attempts, created_at, expires_at) VALUES ('q', 1, '{}', 0,"
                                " 1, 0, 5)"),
              0);
    int64_t before = value("SELECT 'jobq_jobs_expires'::regclass::oid");
    CHECK(before > 0);
    CHECK_INT(pg_sql_on(db_url, "UPDATE pg_index SET indisvalid = false"
                                " WHERE indexrelid = 'jobq_jobs_expires'::regclass"),
              0);
    CHECK_INT(value(INVALID_INDEXES), 1);
    const int rest[2] = {-1, -1};
    CHECK_INT(migrate_at_once(rest, 2), 0);
    CHECK_INT(value(INVALID_INDEXES), 0);
    CHECK(value("SELECT 'jobq_jobs_expires'::regclass::oid") != before);
    CHECK_INT(value("SELECT count(*) FROM pg_indexes WHERE indexname = 'jobq_jobs_expires'"
                    " AND indexdef LIKE '%status = ANY%'"),
              1);
    CHECK_INT(value(VERSION), pg_schema_version());
    drop_db();
}

TEST(newer_schema_accepted_only_when_older_programs_keep_working)
{
    EMPTY_DB_AT(pg_schema_version());
    const int all[1] = {-1};
    char sql[160];
    /* A newer build's migration that keeps older programs working: this one still starts. */
    snprintf(sql, sizeof sql, "INSERT INTO jobq_schema (version, older_ok) VALUES (%d, true)",
             pg_schema_version() + 1);
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    CHECK_INT(migrate_at_once(all, 1), 0);
    /* One that does not: refused. */
    snprintf(sql, sizeof sql, "INSERT INTO jobq_schema (version, older_ok) VALUES (%d, false)",
             pg_schema_version() + 2);
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    CHECK_INT(migrate_at_once(all, 1), 1);
    drop_db();
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A writer as jobqd's: one short transaction after another on the jobs table (an insert, then
 * an update of that row), each timed, until stop. */
struct writer {
    pthread_t thread;
    atomic_int stop;
    int64_t writes, max_ms, failed;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    PGconn *c = PQconnectdb(db_url);
    while (PQstatus(c) == CONNECTION_OK && !atomic_load(&w->stop)) {
        int64_t t = ms_now();
        PGresult *r = PQexec(c, "WITH j AS (INSERT INTO jobq_jobs (queue, status, payload, run_at,"
                                " max_attempts, created_at) VALUES ('w', 1, '{}', 0, 1, 0)"
                                " RETURNING id) UPDATE jobq_jobs SET priority = 1"
                                " WHERE id = (SELECT id FROM j)");
        w->failed += PQresultStatus(r) != PGRES_COMMAND_OK;
        PQclear(r);
        int64_t took = ms_now() - t;
        w->writes++;
        if (took > w->max_ms)
            w->max_ms = took;
    }
    w->failed += PQstatus(c) != CONNECTION_OK;
    PQfinish(c);
    return NULL;
}

static void *migrate_all(void *arg)
{
    *(int *)arg = -2;
    PGconn *c = PQconnectdb(db_url);
    if (PQstatus(c) == CONNECTION_OK)
        *(int *)arg = pg_schema_migrate(c);
    PQfinish(c);
    return NULL;
}

/* Run fn(arg) in a thread while a writer writes; *ms is how long fn took. Returns the writer's
 * longest write in ms, or -1 when a write failed. */
static int64_t longest_write_during(void *(*fn)(void *), void *arg, int64_t *ms)
{
    struct writer w = {0};
    pthread_t t;
    pthread_create(&w.thread, NULL, writer_main, &w);
    int64_t start = ms_now();
    pthread_create(&t, NULL, fn, arg);
    pthread_join(t, NULL);
    *ms = ms_now() - start;
    atomic_store(&w.stop, 1);
    pthread_join(w.thread, NULL);
    return w.failed ? -1 : w.max_ms;
}

/* Migration 5's six indexes on jobs built again in one transaction, as it did before. */
static void *build_in_transaction(void *arg)
{
    *(int *)arg = pg_sql_on(
        db_url, "BEGIN;"
                "CREATE INDEX ON jobq_jobs (concurrency_key) WHERE status = 2"
                " AND concurrency_key IS NOT NULL;"
                "CREATE INDEX ON jobq_jobs (lane, priority DESC, run_at, id) WHERE status = 1"
                " AND lane IS NOT NULL;"
                "CREATE INDEX ON jobq_jobs (lane, run_at) WHERE status = 1 AND lane IS NOT NULL;"
                "CREATE INDEX ON jobq_jobs (queue, dedup_key, id) WHERE dedup_key IS NOT NULL;"
                "CREATE INDEX ON jobq_jobs (expires_at) WHERE expires_at IS NOT NULL"
                " AND status = 1;"
                "CREATE INDEX ON jobq_jobs (queue, priority DESC, run_at, id) WHERE status = 1"
                " AND lane IS NULL;"
                "COMMIT");
    return NULL;
}

TEST(writes_go_on_during_index_builds)
{
    /* Schema 4, the jobs table filled, then migrations 5 to the end: 10 indexes built on
     * jobs (5, 6, 7, 8 and 10). */
    EMPTY_DB_AT(4);
    const char *env = getenv("JOBQ_SCHEMA_ROWS");
    long rows = env && atol(env) > 0 ? atol(env) : 20000;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO jobq_jobs (queue, status, payload, run_at, max_attempts, created_at)"
             " SELECT 'q' || (i %% 10), 1 + i %% 5, '{\"n\": 1}', i, 3, i"
             " FROM generate_series(1, %ld) AS i; ANALYZE jobq_jobs",
             rows);
    int64_t t = ms_now();
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    printf("%ld jobs inserted in %lld ms\n", rows, (long long)(ms_now() - t));
    int rc = 0;
    int64_t took = 0, longest = longest_write_during(migrate_all, &rc, &took);
    CHECK_INT(rc, 0);
    printf("migrations 5 to %d (indexes built concurrently): %lld ms; longest write %lld ms\n",
           pg_schema_version(), (long long)took, (long long)longest);
    CHECK(longest >= 0);
    CHECK(longest < 1000);
    CHECK_INT(value(INVALID_INDEXES), 0);
    /* For comparison: the same index built in a transaction. */
    longest = longest_write_during(build_in_transaction, &rc, &took);
    CHECK_INT(rc, 0);
    printf("migration 5's indexes built in a transaction: %lld ms; longest write %lld ms\n",
           (long long)took, (long long)longest);
    drop_db();
}

/* Writes go on while an index build waits for a transaction that holds a row of jobs (a
 * build in a transaction would queue every later write behind its lock). */
TEST(index_build_waiting_for_a_writer_holds_no_write)
{
    EMPTY_DB_AT(5);
    PGconn *holder = PQconnectdb(db_url);
    CHECK(PQstatus(holder) == CONNECTION_OK);
    PGresult *r = PQexec(holder, "BEGIN; INSERT INTO jobq_jobs (queue, status, payload, run_at,"
                                 " max_attempts, created_at) VALUES ('h', 1, '{}', 0, 1, 0)");
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    /* Migration 6 builds one index on jobs: it waits for the holder's transaction. */
    struct migrator m = {.target = 6};
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 1);
    m.start = &start;
    pthread_create(&m.thread, NULL, migrate_main, &m);
    int64_t deadline = ms_now() + 10000, waiting = 0;
    while (waiting == 0 && ms_now() < deadline)
        CHECK_INT(pg_sql_value(db_url,
                               "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type ="
                               " 'Lock' AND query LIKE 'CREATE INDEX%'",
                               &waiting),
                  0);
    int64_t t = ms_now();
    int wrote = pg_sql_on(db_url, "SET statement_timeout = 5000; INSERT INTO jobq_jobs (queue,"
                                  " status, payload, run_at, max_attempts, created_at) VALUES"
                                  " ('w', 1, '{}', 0, 1, 0)");
    int64_t took = ms_now() - t;
    r = PQexec(holder, "COMMIT");
    PQclear(r);
    PQfinish(holder);
    pthread_join(m.thread, NULL);
    pthread_barrier_destroy(&start);
    CHECK_INT(waiting, 1);
    CHECK_INT(wrote, 0);
    CHECK(took < 250);
    CHECK_INT(m.rc, 0);
    CHECK_INT(value(VERSION), 6);
    CHECK_INT(value(INVALID_INDEXES), 0);
    drop_db();
}

/* A running process of this build whose database a newer jobqd migrated: it keeps going
 * while the newer migrations keep it working, and takes no more work once one does not. */
TEST(running_process_stops_on_a_breaking_migration)
{
    EMPTY_DB_AT(0);
    struct store *s = open_pg();
    CHECK(s != NULL);
    CHECK_INT(store_ping(s), STORE_OK);
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT INTO jobq_schema (version, older_ok) VALUES (%d, true)",
             pg_schema_version() + 1);
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    CHECK_INT(store_ping(s), STORE_OK);
    snprintf(sql, sizeof sql, "INSERT INTO jobq_schema (version, older_ok) VALUES (%d, false)",
             pg_schema_version() + 2);
    CHECK_INT(pg_sql_on(db_url, sql), 0);
    CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(running_process_stops_on_a_breaking_migration),
          TEST_ENTRY(writes_go_on_during_index_builds),
          TEST_ENTRY(index_build_waiting_for_a_writer_holds_no_write),
          TEST_ENTRY(two_processes_migrate_at_once), TEST_ENTRY(invalid_index_is_built_again),
          TEST_ENTRY(newer_schema_accepted_only_when_older_programs_keep_working))
