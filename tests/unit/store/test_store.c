/* The store: opening, enqueue, idempotency keys, reads, reopen, migrations and fault
 * handling, on SQLite and on PostgreSQL (test_store_util.h). Claims are in
 * test_store_claim.c, leases in test_store_lease.c, the sweep and hooks in
 * test_store_sweep.c. Time is passed explicitly: nothing sleeps. */
#include <sqlite3.h>
#include <sys/stat.h>

#include "sqlite_conn.h"
#include "sqlite_schema.h"
#include "test_store_util.h"

TEST(open_creates_parent_dir_and_wal)
{
    SQLITE_ONLY("a database file, its directory and its WAL");
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
    SQLITE_ONLY("file paths");
    struct store_options o;
    memset(&o, 0, sizeof o);
    o.url = ":memory:";
    o.sqlite.readers = 1;
    CHECK(store_open(&o) == NULL);
    CHECK(system("touch file") == 0);
    o.url = "file/sub/jobq.db"; /* a file where a directory must go */
    CHECK(store_open(&o) == NULL);
}

TEST(enqueue_and_get_roundtrip)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("emails", -7, T0);
    sp.payload = "{\"to\":\"a@b\"}";
    sp.max_attempts = 3;
    sp.max_runtime_seconds = 60;
    struct job j;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_OK);
    CHECK_INT(created, 1);
    CHECK(j.id > 0);
    int64_t id = j.id;
    job_clear(&j);

    CHECK_INT(store_get(s, id, &j), STORE_OK);
    CHECK_INT(j.id, id);
    CHECK_STR(j.queue, "emails");
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_STR(j.payload, "{\"to\":\"a@b\"}");
    CHECK_INT(j.priority, -7);
    CHECK_INT(j.run_at, T0);
    CHECK_INT(j.attempts, 0);
    CHECK_INT(j.max_attempts, 3);
    CHECK_INT(j.fencing_token, 0);
    CHECK_INT(j.max_runtime_seconds, 60);
    CHECK(j.requires == NULL); /* job.h: an empty requires is NULL */
    CHECK(j.idempotency_key == NULL);
    CHECK_INT(j.created_at, T0);
    CHECK_INT(j.claimed_at, JOB_NONE);
    CHECK_INT(j.heartbeat_at, JOB_NONE);
    CHECK_INT(j.lease_expires_at, JOB_NONE);
    CHECK_INT(j.finished_at, JOB_NONE);
    CHECK(j.worker_id == NULL && j.result == NULL && j.progress == NULL);
    CHECK(j.error_code == NULL && j.error_detail == NULL && j.lease_token == NULL);
    job_clear(&j);

    CHECK_INT(store_get(s, id + 100, &j), STORE_NOT_FOUND);
    store_close(s);
}

TEST(enqueue_future_is_scheduled_and_shown_queued)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t due = enqueue(s, "q", 0, T0, T0);
    int64_t later = enqueue(s, "q", 0, T0 + 60, T0);
    int64_t past = enqueue(s, "q", 0, T0 - 60, T0);
    CHECK(due > 0 && later > 0 && past > 0);
    CHECK_INT(status_of(s, due), JOB_QUEUED);
    CHECK_INT(status_of(s, later), JOB_QUEUED);
    CHECK_INT(status_of(s, past), JOB_QUEUED);
    /* The store shows API statuses only; the backend may keep a state of its own. */
    char where[64];
    snprintf(where, sizeof where, "id = %lld", (long long)later);
    CHECK_INT(jobs_int("status", where), stored_not_due_status(s));
    CHECK_STR(job_status_name(JOB_STATUS_NONE), "unknown");
    /* store.h: the earliest not-due run_at, or JOB_NONE from a store that does not promote. */
    int64_t next = 0;
    CHECK_INT(store_next_due(s, &next), STORE_OK);
    CHECK_INT(next, promotes(s) ? T0 + 60 : JOB_NONE);
    store_close(s);
}

/* A spec without run_at is due `delay` seconds after the now the store keeps as created_at
 * (store.h: a delay is resolved on the store's clock). */
TEST(enqueue_delay_is_added_to_the_store_now)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[2] = {spec_of("q", 0, JOB_NONE), spec_of("q", 0, JOB_NONE)};
    sp[0].delay = 60;
    struct job out[2];
    int created[2];
    CHECK_INT(store_enqueue(s, sp, 2, T0, out, created), STORE_OK);
    CHECK(out[0].created_at >= T0 - 1 && out[0].created_at <= T0 + 1);
    CHECK_INT(out[0].run_at, out[0].created_at + 60);
    CHECK_INT(out[1].run_at, out[1].created_at);
    CHECK_INT(status_of(s, out[0].id), JOB_QUEUED);
    CHECK_INT(status_of(s, out[1].id), JOB_QUEUED);
    job_clear(&out[0]);
    job_clear(&out[1]);
    store_close(s);
}

TEST(next_due_none)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t next = 0;
    CHECK_INT(store_next_due(s, &next), STORE_OK);
    CHECK_INT(next, JOB_NONE);
    store_close(s);
}

TEST(enqueue_requires_kept_and_empty_is_null)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 0, T0);
    sp.requires = "[\"gpu\",\"ssd\"]";
    int64_t a = enqueue_spec(s, &sp, T0);
    sp.requires = NULL;
    int64_t b = enqueue_spec(s, &sp, T0);
    CHECK(a > 0 && b > 0);
    struct job j;
    CHECK_INT(store_get(s, a, &j), STORE_OK);
    CHECK_STR(j.requires, "[\"gpu\",\"ssd\"]");
    job_clear(&j);
    CHECK_INT(store_get(s, b, &j), STORE_OK);
    CHECK(j.requires == NULL);
    job_clear(&j);
    store_close(s);
    CHECK_INT(jobs_int("count(*)", "requires IS NULL"), 1);
}

TEST(idempotency_same_queue_returns_existing)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 0, T0);
    sp.idempotency_key = "order-1";
    struct job a, b;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &a, &created), STORE_OK);
    CHECK_INT(created, 1);
    sp.payload = "{\"other\":true}";
    CHECK_INT(store_enqueue(s, &sp, 1, T0 + 5, &b, &created), STORE_EXISTS);
    CHECK_INT(created, 0);
    CHECK_INT(b.id, a.id);
    CHECK_STR(b.payload, "{\"n\":1}");
    CHECK_STR(b.idempotency_key, "order-1");
    CHECK_INT(b.created_at, T0);
    job_clear(&a);
    job_clear(&b);
    store_close(s);
    CHECK_INT(jobs_int("count(*)", NULL), 1);
}

TEST(idempotency_other_queue_creates)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q1", 0, T0);
    sp.idempotency_key = "k";
    int64_t a = enqueue_spec(s, &sp, T0);
    sp.queue = "q2";
    int64_t b = enqueue_spec(s, &sp, T0);
    CHECK(a > 0 && b > 0 && a != b);
    store_close(s);
}

TEST(idempotency_batch_with_duplicate)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[3] = {spec_of("q", 0, T0), spec_of("q", 0, T0), spec_of("q", 0, T0)};
    sp[0].idempotency_key = "dup";
    sp[1].idempotency_key = "dup";
    struct job out[3];
    int created[3];
    CHECK_INT(store_enqueue(s, sp, 3, T0, out, created), STORE_OK);
    CHECK_INT(created[0], 1);
    CHECK_INT(created[1], 0);
    CHECK_INT(created[2], 1);
    CHECK_INT(out[1].id, out[0].id);
    CHECK(out[2].id != out[0].id);
    for (int i = 0; i < 3; i++)
        job_clear(&out[i]);
    store_close(s);
    CHECK_INT(jobs_int("count(*)", NULL), 2);
}

TEST(enqueue_batch_all_or_nothing)
{
    SQLITE_ONLY("injects a SQLite I/O error");
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
    SQLITE_ONLY("injects SQLITE_BUSY and locks the file");
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
    SQLITE_ONLY("maps SQLite result codes");
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
    SQLITE_ONLY("injects SQLite read errors");
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

/* Collect every id a filter lists, page by page; returns the count or -1. */
static int64_t list_all(struct store *s, const char *queue, int status, int limit, int64_t *ids,
                        int *pages)
{
    struct list_filter f = {queue, status, 0, limit};
    struct job *out = calloc((size_t)limit, sizeof *out);
    int64_t total = 0;
    int more = 1;
    *pages = 0;
    while (more && *pages < 1000) {
        size_t n = 0;
        if (store_list(s, &f, out, &n, &more) != STORE_OK) {
            free(out);
            return -1;
        }
        (*pages)++;
        for (size_t i = 0; i < n; i++) {
            ids[total++] = out[i].id;
            f.after_id = out[i].id;
            job_clear(&out[i]);
        }
    }
    free(out);
    return total;
}

TEST(list_pages_by_id_with_filters)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    for (int i = 0; i < 25; i++)
        CHECK(enqueue(s, i % 2 ? "odd" : "even", i % 3, i % 5 == 0 ? T0 + 100 : T0, T0) > 0);
    int64_t ids[64];
    int pages = 0;
    CHECK_INT(list_all(s, NULL, -1, 10, ids, &pages), 25);
    CHECK_INT(pages, 3);
    for (int i = 0; i < 25; i++)
        CHECK_INT(ids[i], i + 1);
    /* Exactly one page when the count is a multiple of the limit: more is 0 on the last. */
    CHECK_INT(list_all(s, NULL, -1, 25, ids, &pages), 25);
    CHECK_INT(pages, 1);

    CHECK_INT(list_all(s, "odd", -1, 4, ids, &pages), 12);
    for (int i = 0; i < 12; i++)
        CHECK_INT(ids[i], 2 * i + 2);
    /* "queued" covers scheduled jobs too. */
    CHECK_INT(list_all(s, NULL, JOB_QUEUED, 7, ids, &pages), 25);
    for (int i = 1; i < 25; i++)
        CHECK(ids[i] > ids[i - 1]);

    struct job j;
    CHECK(claim_one(s, "even", T0, &j) > 0);
    int64_t running = j.id;
    job_clear(&j);
    CHECK_INT(list_all(s, NULL, JOB_RUNNING, 5, ids, &pages), 1);
    CHECK_INT(ids[0], running);
    CHECK_INT(list_all(s, "even", JOB_QUEUED, 5, ids, &pages), 12);
    CHECK_INT(list_all(s, "odd", JOB_RUNNING, 5, ids, &pages), 0);
    CHECK_INT(list_all(s, "none", -1, 5, ids, &pages), 0);
    CHECK_INT(list_all(s, NULL, JOB_FAILED, 5, ids, &pages), 0);
    store_close(s);
}

TEST(queue_stats_counts_and_age)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK(enqueue(s, "b", 0, T0 - 30, T0) > 0);
    CHECK(enqueue(s, "b", 0, T0 - 10, T0) > 0);
    CHECK(enqueue(s, "b", 0, T0 + 50, T0) > 0); /* scheduled: counted queued, not due */
    CHECK(enqueue(s, "a", 0, T0 + 20, T0) > 0); /* only a future job */
    CHECK(enqueue(s, "c", 5, T0, T0) > 0);
    struct job c, j;
    CHECK(claim_one(s, "c", T0, &c) > 0);
    CHECK_INT(store_complete(s, c.id, c.lease_token, NULL, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);

    struct queue_stats *q = NULL;
    size_t n = 0;
    CHECK_INT(store_queues(s, T0 + 40, &q, &n), STORE_OK);
    CHECK_INT(n, 3);
    CHECK_STR(q[0].name, "a");
    CHECK_STR(q[1].name, "b");
    CHECK_STR(q[2].name, "c");
    CHECK_INT(q[0].count[JOB_QUEUED], 1);
    CHECK_INT(q[0].oldest_queued_age, 20); /* the scheduled job became due at T0 + 20 */
    CHECK_INT(q[1].count[JOB_QUEUED], 3);
    CHECK_INT(q[1].count[JOB_STATUS_NONE], 0);
    CHECK_INT(q[1].oldest_queued_age, 70);
    CHECK_INT(q[2].count[JOB_QUEUED], 0);
    CHECK_INT(q[2].count[JOB_SUCCEEDED], 1);
    CHECK_INT(q[2].oldest_queued_age, 0);
    queue_stats_free(q, n);

    CHECK_INT(store_queues(s, T0 + 10, &q, &n), STORE_OK);
    CHECK_INT(q[0].oldest_queued_age, 0); /* nothing due in "a" yet */
    queue_stats_free(q, n);
    store_close(s);
}

TEST(reopen_keeps_data)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = spec_of("q", 3, T0);
    sp.idempotency_key = "keep";
    int64_t id = enqueue_spec(s, &sp, T0);
    CHECK(id > 0);
    store_close(s);

    s = open_store();
    CHECK(s != NULL);
    struct job j;
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    CHECK_INT(j.priority, 3);
    CHECK_STR(j.idempotency_key, "keep");
    job_clear(&j);
    int created = 1;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_EXISTS);
    CHECK_INT(j.id, id);
    job_clear(&j);
    store_close(s);
}

TEST(migrations_set_user_version)
{
    SQLITE_ONLY("PRAGMA user_version");
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
    SQLITE_ONLY("the attempt rows of schema 4");
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
    CHECK(sqlite3_exec(db, SQLITE_UNDO_MIGRATION_13 SQLITE_UNDO_MIGRATION_10, NULL, NULL, NULL) ==
          SQLITE_OK);
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

TEST(ids_are_not_reused)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "q", 0, T0, T0);
    struct job j;
    CHECK_INT(store_cancel(s, a, T0, &j), STORE_OK);
    job_clear(&j);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 100, 10, 500, &r), STORE_OK);
    CHECK_INT(r.deleted, 1);
    int64_t b = enqueue(s, "q", 0, T0, T0);
    CHECK(b > a);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(open_creates_parent_dir_and_wal), TEST_ENTRY(open_refuses_memory_and_bad_dir),
          TEST_ENTRY(enqueue_and_get_roundtrip),
          TEST_ENTRY(enqueue_future_is_scheduled_and_shown_queued),
          TEST_ENTRY(enqueue_delay_is_added_to_the_store_now), TEST_ENTRY(next_due_none),
          TEST_ENTRY(enqueue_requires_kept_and_empty_is_null),
          TEST_ENTRY(idempotency_same_queue_returns_existing),
          TEST_ENTRY(idempotency_other_queue_creates), TEST_ENTRY(idempotency_batch_with_duplicate),
          TEST_ENTRY(enqueue_batch_all_or_nothing), TEST_ENTRY(busy_is_retried_then_reported),
          TEST_ENTRY(error_results_map), TEST_ENTRY(read_error_is_reported),
          TEST_ENTRY(list_pages_by_id_with_filters), TEST_ENTRY(queue_stats_counts_and_age),
          TEST_ENTRY(reopen_keeps_data), TEST_ENTRY(migrations_set_user_version),
          TEST_ENTRY(upgrade_keeps_one_running_attempt), TEST_ENTRY(ids_are_not_reused))
