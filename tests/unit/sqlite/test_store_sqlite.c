/* The SQLite store's own machinery behind the store contract (test_store.c runs that on both
 * backends): the database file, its directory and WAL, SQLite's result codes and injected
 * faults (a batch all or nothing, busy retried), PRAGMA user_version and the attempt rows of
 * schema 4. */
#include <sqlite3.h>
#include <sys/stat.h>

#include "sqlite_conn.h"
#include "sqlite_schema.h"
#include "sqlite_stmt.h"
#include "test_store_util.h"

TEST(open_creates_parent_dir_and_wal)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct stat sb;
    CHECK(stat("data", &sb) == 0 && S_ISDIR(sb.st_mode));
    CHECK(stat(DB_PATH, &sb) == 0);
    CHECK_INT(store_ping(s), STORE_OK);
    store_close(s);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    int wal = strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    CHECK(wal);
}

TEST(open_refuses_memory_and_bad_dir)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    o.url = ":memory:";
    o.sqlite.readers = 1;
    CHECK(store_open(&o) == NULL);
    CHECK(system("touch file") == 0);
    o.url = "file/sub/jobq.db"; /* a file where a directory must go */
    CHECK(store_open(&o) == NULL);
}

TEST(enqueue_batch_all_or_nothing)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[4] = {spec_of("q", 0, T0), spec_of("q", 0, T0), spec_of("q", 0, T0),
                             spec_of("q", 0, T0)};
    struct job out[4];
    int created[4];
    /* Step 1 is BEGIN, then one step per insert: step 3 makes the second insert hit a disk
     * I/O error after the first one went in. */
    sqlite_conn_fault(3, SQLITE_IOERR_WRITE);
    CHECK_INT(store_enqueue(s, sp, 4, T0, out, created), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_fault_fired(), 1);
    sqlite_conn_fault(0, 0);
    struct list_filter f = {NULL, -1, 0, 10};
    struct job got[10];
    size_t n = 99;
    int more = 1;
    CHECK_INT(store_list(s, &f, got, &n, &more), STORE_OK);
    CHECK_INT(n, 0);
    CHECK_INT(more, 0);
    /* The store still works and nothing was left open. */
    CHECK_INT(store_enqueue(s, sp, 4, T0, out, created), STORE_OK);
    for (int i = 0; i < 4; i++)
        job_clear(&out[i]);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 4);
}

TEST(busy_is_retried_then_reported)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    /* One busy BEGIN: retried, succeeds. */
    sqlite_conn_fault(1, SQLITE_BUSY);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    /* A busy COMMIT (BEGIN, insert, COMMIT): rolled back and retried. */
    sqlite_conn_fault(3, SQLITE_BUSY);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    CHECK_INT(sqlite_conn_fault_fired(), 1);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 2);

    /* Locked by another process past the retry budget: STORE_BUSY, then fine again. */
    sqlite3 *other = NULL;
    CHECK(sqlite3_open(DB_PATH, &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    struct job_spec sp = spec_of("q", 0, T0);
    struct job j;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_BUSY);
    CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 3);
}

TEST(error_results_map)
{
    CHECK_INT(sqlite_conn_result(SQLITE_BUSY), STORE_BUSY);
    CHECK_INT(sqlite_conn_result(SQLITE_LOCKED), STORE_BUSY);
    CHECK_INT(sqlite_conn_result(SQLITE_FULL), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_result(SQLITE_READONLY), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_result(SQLITE_IOERR_FSYNC), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_result(SQLITE_CANTOPEN), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_result(SQLITE_CORRUPT), STORE_ERROR);
    CHECK_INT(sqlite_conn_result(SQLITE_CONSTRAINT_UNIQUE), STORE_ERROR);
    CHECK_STR(store_result_name(STORE_LEASE_LOST), "lease lost");
    CHECK_STR(store_result_name(STORE_OK), "ok");
}

TEST(read_error_is_reported)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    struct job j;
    sqlite_conn_fault(1, SQLITE_IOERR_READ);
    CHECK_INT(store_get(s, id, &j), STORE_UNAVAILABLE);
    sqlite_conn_fault(1, SQLITE_CORRUPT);
    CHECK_INT(store_ping(s), STORE_ERROR);
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    job_clear(&j);
    store_close(s);
}

TEST(migrations_set_user_version)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    store_close(s);
    CHECK(sqlite_schema_version() >= 1);
    CHECK_INT(sql_int("PRAGMA user_version"), sqlite_schema_version());
    CHECK_INT(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'jobs_claim_free'"), 1);
    CHECK_INT(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'jobs_claim'"), 0);

    /* Reopening applies nothing and keeps the version. */
    s = open_store();
    CHECK(s != NULL);
    store_close(s);
    CHECK_INT(sql_int("PRAGMA user_version"), sqlite_schema_version());

    /* A database from a newer program is refused. */
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA user_version = 999", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(open_store() == NULL);
}

TEST(upgrade_keeps_one_running_attempt)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    int64_t id = enqueue(s, "q", 0, T0, T0);
    CHECK_INT(claim_one(s, "q", T0, &c), id);
    struct fail_req f = {"flaky", NULL, 1, 0};
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(claim_one(s, "q", T0 + 1, &c), id);
    store_close(s);
    /* As schema 4 left it: the running attempt had an open row of its own. */
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       SQLITE_UNDO_MIGRATION_15 SQLITE_UNDO_MIGRATION_14 SQLITE_UNDO_MIGRATION_13
                           SQLITE_UNDO_MIGRATION_10,
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(
              db,
              "INSERT INTO attempts SELECT id, fencing_token, attempts, worker_id, "
              "claimed_at, NULL, 0, NULL, NULL FROM jobs WHERE status = 2; " SQLITE_UNDO_MIGRATION_9
                  SQLITE_UNDO_MIGRATION_8 SQLITE_UNDO_MIGRATION_7
              "ALTER TABLE jobs DROP COLUMN attempt_in_row; " SQLITE_UNDO_MIGRATION_6
              "PRAGMA user_version = 4",
              NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK_INT(sql_int("SELECT count(*) FROM attempts"), 2);

    s = open_store();
    CHECK(s != NULL);
    CHECK_INT(sql_int("SELECT count(*) FROM attempts"), 1); /* the job row is its record */
    CHECK_INT(sql_int("SELECT count(*) FROM jobs WHERE attempt_in_row = 1"), 1);
    struct job_attempt *a = NULL;
    size_t n = 0;
    CHECK_INT(store_attempts(s, id, &a, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_INT(a[0].outcome, ATTEMPT_RETRIED);
        CHECK_INT(a[1].outcome, ATTEMPT_RUNNING);
        CHECK_INT(a[1].claimed_at, T0 + 1);
    }
    job_attempts_free(a, n);
    CHECK_INT(store_complete(s, id, c.lease_token, NULL, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(store_attempts(s, id, &a, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2)
        CHECK_INT(a[1].outcome, ATTEMPT_SUCCEEDED);
    job_attempts_free(a, n);
    store_close(s);
}

/* Step st once to its end, then reset it; *peak: the most bytes SQLite held meanwhile beyond
 * what it held before. */
static void step_peak(sqlite3_stmt *st, sqlite3_int64 *peak)
{
    sqlite3_int64 cur = 0, hi = 0;
    sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &cur, &hi, 1);
    sqlite3_int64 before = cur;
    *peak = -1;
    CHECK_INT(sqlite3_step(st), SQLITE_DONE);
    sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &cur, &hi, 0);
    sqlite3_reset(st);
    *peak = hi - before;
}

/* The event log's statements on the writer's path stay cheap (docs/events.md "Cost"): the
 * sweep's bounds read the two ends of the log instead of scanning it, and an event's insert
 * keeps no statement journal (which would copy the page it changes, every time). */
TEST(event_statements_stay_cheap)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    for (int i = 0; i < 300; i++)
        CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, sqlite_stmt_sql(STMT_EVENTS_BOUNDS), -1, &st, NULL) == SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_INT(sqlite3_column_int64(st, 0), 1);
    CHECK_INT(sqlite3_column_int64(st, 1), 300);
    CHECK_INT(sqlite3_stmt_status(st, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0), 0);
    CHECK(sqlite3_stmt_status(st, SQLITE_STMTSTATUS_VM_STEP, 0) < 100);
    sqlite3_finalize(st);
    st = NULL;
    CHECK(sqlite3_prepare_v2(db, sqlite_stmt_sql(STMT_EVENT_ADD), -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_bind_int64(st, 1, 1) == SQLITE_OK && sqlite3_bind_int64(st, 2, 1) == SQLITE_OK &&
          sqlite3_bind_int64(st, 3, T0) == SQLITE_OK && sqlite3_bind_int64(st, 4, 1) == SQLITE_OK);
    sqlite3_int64 peak = 0;
    step_peak(st, &peak); /* the first: the statement's own memory, the pages read */
    step_peak(st, &peak);
    CHECK(peak >= 0 && peak < 2048); /* a statement journal would hold a copy of a 4 KiB page */
    CHECK_INT(sqlite3_changes(db), 1);
    sqlite3_finalize(st);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
}

TEST_MAIN(TEST_ENTRY(open_creates_parent_dir_and_wal), TEST_ENTRY(open_refuses_memory_and_bad_dir),
          TEST_ENTRY(enqueue_batch_all_or_nothing), TEST_ENTRY(busy_is_retried_then_reported),
          TEST_ENTRY(error_results_map), TEST_ENTRY(read_error_is_reported),
          TEST_ENTRY(migrations_set_user_version), TEST_ENTRY(upgrade_keeps_one_running_attempt),
          TEST_ENTRY(event_statements_stay_cheap))
