/* The SQLite export of jobqd migrate (sqlite_export_open, store_copy.h): refused while a
 * store has the file open, counts per stored status and the highest id ever given, rows in
 * id order bounded by rows and by bytes with every column, and clear refusals of files that
 * are not jobq databases. */
#include <stdio.h>
#include <sys/stat.h>

#include "sqlite_open.h"
#include "store_copy.h"
#include "test_store_util.h"

static struct store_export *open_export(char *err, size_t n)
{
    err[0] = '\0';
    return sqlite_export_open(DB_PATH, err, n);
}

TEST(refused_while_a_store_has_the_file)
{
    struct store *s = open_store();
    CHECK(s);
    CHECK(enqueue(s, "q", 0, T0, T0) == 1);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    int refused = x == NULL && strstr(err, "is in use by a running jobqd") != NULL;
    if (x)
        x->ops->close(x);
    store_close(s);
    CHECK(refused);
    x = open_export(err, sizeof err);
    CHECK(x);
    /* ...and while the export has it, no store opens it. */
    s = open_store();
    x->ops->close(x);
    int second = s == NULL;
    store_close(s);
    CHECK(second);
}

TEST(counts_per_stored_status_and_the_highest_id_ever_given)
{
    struct store *s = open_store();
    CHECK(s);
    CHECK(enqueue(s, "q", 0, T0, T0) == 1);
    CHECK(enqueue(s, "q", 0, T0 + 3600, T0) == 2); /* scheduled */
    CHECK(enqueue(s, "q", 0, T0, T0) == 3);
    struct job j;
    CHECK(claim_one(s, "q", T0, &j) == 1);
    job_clear(&j);
    CHECK(claim_one(s, "q", T0, &j) == 3);
    struct job done;
    enum store_result completed = store_complete(s, 3, j.lease_token, NULL, T0, &done);
    job_clear(&j);
    CHECK_INT(completed, STORE_OK);
    job_clear(&done);
    /* Retention deletes job 3, the highest id: it is still "given". */
    struct sweep_result res;
    CHECK(store_sweep(s, T0 + 20, 10, 100, &res) == STORE_OK); /* the lease lives on */
    CHECK_INT(res.deleted, 1);
    store_close(s);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    struct store_copy_counts c;
    enum store_result r = x->ops->counts(x, &c);
    x->ops->close(x);
    CHECK_INT(r, STORE_OK);
    CHECK_INT(c.total, 2);
    CHECK_INT(c.status[JOB_QUEUED], 1); /* the scheduled job, in its API status */
    CHECK_INT(c.status[JOB_RUNNING], 1);
    CHECK_INT(c.status[JOB_SUCCEEDED], 0);
    CHECK_INT(c.last_id, 3);
}

/* Read every row of x in calls of at most max_rows / max_bytes: ids into ids[], how many
 * calls returned rows into *calls. Returns how many rows, or -1. */
static int read_all(struct store_export *x, size_t max_rows, size_t max_bytes, int64_t *ids,
                    int *calls)
{
    struct store_row rows[8];
    int64_t after = 0;
    int got = 0;
    for (*calls = 0; *calls < 100; (*calls)++) {
        size_t n = 0;
        if (x->ops->rows(x, after, max_rows, max_bytes, rows, &n) != STORE_OK || n > max_rows)
            return -1;
        if (n == 0)
            return got;
        for (size_t i = 0; i < n; i++)
            ids[got++] = rows[i].job.id;
        after = rows[n - 1].job.id;
        store_rows_clear(rows, n);
    }
    return -1;
}

TEST(rows_in_id_order_bounded_by_rows_and_bytes)
{
    struct store *s = open_store();
    CHECK(s);
    for (int i = 0; i < 7; i++)
        CHECK(enqueue(s, "q", i, T0, T0) == i + 1);
    store_close(s);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    int64_t ids[16];
    int calls = 0;
    int n = read_all(x, 3, STORE_COPY_BATCH_BYTES, ids, &calls);
    int by_rows = n == 7 && calls == 3 && ids[0] == 1 && ids[6] == 7;
    n = read_all(x, 8, 1, ids, &calls); /* one row is over the bytes: one row per call */
    int by_bytes = n == 7 && calls == 7 && ids[3] == 4;
    x->ops->close(x);
    CHECK(by_rows);
    CHECK(by_bytes);
}

TEST(a_running_job_keeps_every_column)
{
    struct store *s = open_store();
    CHECK(s);
    struct job_spec sp = spec_of("q", 4, T0);
    sp.max_runtime_seconds = 600;
    sp.requires = "[\"gpu\"]";
    CHECK(enqueue_spec(s, &sp, T0) == 1);
    struct job j;
    size_t got = 0;
    CHECK(claim_caps(s, "q", "[\"gpu\"]", 1, 45, T0, &j, &got) == STORE_OK && got == 1);
    char token[JOB_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%s", j.lease_token);
    job_clear(&j);
    store_close(s);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    struct store_row row;
    size_t n = 0;
    enum store_result r = x->ops->rows(x, 0, 1, STORE_COPY_BATCH_BYTES, &row, &n);
    x->ops->close(x);
    CHECK_INT(r, STORE_OK);
    CHECK_INT(n, 1);
    int ok = row.job.status == JOB_RUNNING && row.job.lease_token &&
             strcmp(row.job.lease_token, token) == 0 && row.lease_seconds == 45 &&
             row.deadline_at == T0 + 600 && row.job.lease_expires_at == T0 + 45 &&
             row.job.priority == 4 && strcmp(row.job.requires, "[\"gpu\"]") == 0 &&
             row.job.attempts == 1 && row.job.fencing_token == 1;
    store_rows_clear(&row, 1);
    CHECK(ok);
}

TEST(files_that_are_not_jobq_databases_are_refused)
{
    char err[512];
    CHECK(sqlite_export_open("missing.db", err, sizeof err) == NULL);
    CHECK(strstr(err, "No such file") != NULL);
    struct stat sb;
    CHECK(stat("missing.db", &sb) != 0);
    FILE *f = fopen("notes.txt", "w");
    CHECK(f);
    for (int i = 0; i < 200; i++)
        fputs("not a database\n", f);
    fclose(f);
    CHECK(sqlite_export_open("notes.txt", err, sizeof err) == NULL);
    CHECK(strstr(err, "is not a SQLite database") != NULL);
    CHECK(stat("notes.txt.lock", &sb) != 0);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open("other.db", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(sqlite_export_open("other.db", err, sizeof err) == NULL);
    CHECK(strstr(err, "is not a jobq database") != NULL);
}

TEST(attempt_history_and_paused_queues_in_order)
{
    struct store *s = open_store();
    CHECK(s);
    CHECK(enqueue(s, "q", 0, T0, T0) == 1);
    CHECK(enqueue(s, "q", 0, T0, T0) == 2);
    struct job j, out;
    CHECK(claim_one(s, "q", T0, &j) == 1); /* job 1: failed with retry, then running */
    struct fail_req f = {.retry = 1, .retry_in_seconds = 0, .error_code = "flaky"};
    CHECK_INT(store_fail(s, 1, j.lease_token, &f, T0, &out), STORE_OK);
    job_clear(&j);
    job_clear(&out);
    CHECK(claim_one(s, "q", T0, &j) == 1);
    job_clear(&j);
    CHECK(claim_one(s, "q", T0, &j) == 2); /* job 2: running */
    job_clear(&j);
    CHECK_INT(store_pause(s, "b-paused", 1, T0), STORE_OK);
    CHECK_INT(store_pause(s, "a-paused", 1, T0), STORE_OK);
    CHECK_INT(store_pause(s, "c-resumed", 1, T0), STORE_OK);
    CHECK_INT(store_pause(s, "c-resumed", 0, T0), STORE_OK);
    store_close(s);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    if (!x)
        return;
    struct store_copy_counts c;
    CHECK_INT(x->ops->counts(x, &c), STORE_OK);
    CHECK_INT(c.attempts, 3);
    /* Two per batch: (1, 1) and (1, 2), then (2, 1). */
    struct store_attempt_row rows[2];
    size_t n = 0;
    CHECK_INT(x->ops->attempts(x, 0, 0, 2, rows, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK(rows[0].job_id == 1 && rows[0].fencing_token == 1);
        CHECK_INT(rows[0].attempt.outcome, ATTEMPT_RETRIED);
        CHECK_STR(rows[0].attempt.error_code, "flaky");
        CHECK(rows[1].job_id == 1 && rows[1].fencing_token == 2);
        CHECK_INT(rows[1].attempt.outcome, ATTEMPT_RUNNING);
        CHECK_INT(rows[1].attempt.ended_at, JOB_NONE);
    }
    for (size_t i = 0; i < n; i++)
        job_attempt_clear(&rows[i].attempt);
    CHECK_INT(x->ops->attempts(x, 1, 2, 2, rows, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1)
        CHECK(rows[0].job_id == 2 && rows[0].fencing_token == 1);
    for (size_t i = 0; i < n; i++)
        job_attempt_clear(&rows[i].attempt);
    CHECK_INT(x->ops->attempts(x, 2, 1, 2, rows, &n), STORE_OK);
    CHECK_INT(n, 0);
    char *names[4];
    CHECK_INT(x->ops->paused(x, "", 4, names, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(names[0], "a-paused");
        CHECK_STR(names[1], "b-paused");
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    CHECK_INT(x->ops->paused(x, "b-paused", 4, names, &n), STORE_OK);
    CHECK_INT(n, 0);
    x->ops->close(x);
}

/* Jobs whose history is partly in the attempts table (requeued attempts) and partly in their
 * rows (the latest): batches of 2 give every entry once, in (job, fencing token) order, with
 * the outcome the API shows. */
TEST(attempt_batches_merge_the_table_and_the_job_rows)
{
    struct store *s = open_store();
    CHECK(s);
    struct job c, j;
    struct fail_req again = {"again", NULL, 1, 0};
    /* job 1: 3 requeued attempts, then one running; job 2: never claimed; job 3: running;
     * job 4: 2 requeued, then succeeded. */
    for (int k = 1; k <= 4; k++)
        CHECK(enqueue(s, "q", 10 - k, T0, T0) == k);
    int64_t t = T0;
    for (int k = 0; k < 3; k++) {
        CHECK(claim_one(s, "q", t, &c) == 1);
        CHECK_INT(store_fail(s, 1, c.lease_token, &again, ++t, &j), STORE_OK);
        job_clear(&j);
        job_clear(&c);
    }
    CHECK(claim_one(s, "q", t, &c) == 1);
    job_clear(&c);
    CHECK_INT(store_cancel(s, 2, t, &j), STORE_OK);
    job_clear(&j);
    CHECK(claim_one(s, "q", t, &c) == 3);
    job_clear(&c);
    for (int k = 0; k < 2; k++) {
        CHECK(claim_one(s, "q", t, &c) == 4);
        CHECK_INT(store_fail(s, 4, c.lease_token, &again, ++t, &j), STORE_OK);
        job_clear(&j);
        job_clear(&c);
    }
    CHECK(claim_one(s, "q", t, &c) == 4);
    CHECK_INT(store_complete(s, 4, c.lease_token, NULL, ++t, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    store_close(s);

    static const struct {
        int64_t job, token;
        enum attempt_outcome outcome;
    } want[] = {{1, 1, ATTEMPT_RETRIED}, {1, 2, ATTEMPT_RETRIED},  {1, 3, ATTEMPT_RETRIED},
                {1, 4, ATTEMPT_RUNNING}, {3, 1, ATTEMPT_RUNNING},  {4, 1, ATTEMPT_RETRIED},
                {4, 2, ATTEMPT_RETRIED}, {4, 3, ATTEMPT_SUCCEEDED}};
    size_t nwant = sizeof want / sizeof want[0];
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    if (!x)
        return;
    struct store_copy_counts cn;
    CHECK_INT(x->ops->counts(x, &cn), STORE_OK);
    CHECK_INT(cn.attempts, (int64_t)nwant);
    size_t got = 0;
    int64_t after_job = 0, after_token = 0;
    for (int batch = 0; batch < 10; batch++) {
        struct store_attempt_row rows[2];
        size_t n = 0;
        CHECK_INT(x->ops->attempts(x, after_job, after_token, 2, rows, &n), STORE_OK);
        for (size_t i = 0; i < n; i++) {
            if (got < nwant) {
                CHECK_INT(rows[i].job_id, want[got].job);
                CHECK_INT(rows[i].fencing_token, want[got].token);
                CHECK_INT(rows[i].attempt.outcome, want[got].outcome);
            }
            got++;
            after_job = rows[i].job_id;
            after_token = rows[i].fencing_token;
            job_attempt_clear(&rows[i].attempt);
        }
        if (n == 0)
            break;
    }
    CHECK_INT(got, nwant);
    x->ops->close(x);
}

/* A file as the jobqd of schema 4 left it (every attempt in the attempts table) exports
 * its history without being upgraded first (it may be on a read-only mount). */
TEST(a_schema_4_file_exports_its_history)
{
    struct store *s = open_store();
    CHECK(s);
    struct job c, j;
    CHECK(enqueue(s, "q", 1, T0, T0) == 1);
    CHECK(enqueue(s, "q", 0, T0, T0) == 2);
    CHECK(claim_one(s, "q", T0, &c) == 1);
    struct fail_req again = {"again", NULL, 1, 0};
    CHECK_INT(store_fail(s, 1, c.lease_token, &again, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK(claim_one(s, "q", T0 + 1, &c) == 1); /* running */
    job_clear(&c);
    CHECK(claim_one(s, "q", T0 + 1, &c) == 2);
    CHECK_INT(store_complete(s, 2, c.lease_token, NULL, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    store_close(s);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "INSERT INTO attempts SELECT id, fencing_token, attempts, worker_id, "
                       "claimed_at, ended_at, attempt_outcome, NULL, NULL FROM jobs "
                       "WHERE attempt_in_row = 1; ALTER TABLE jobs DROP COLUMN attempt_in_row; "
                       "PRAGMA user_version = 4",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);

    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    if (!x)
        return;
    struct store_copy_counts cn;
    CHECK_INT(x->ops->counts(x, &cn), STORE_OK);
    CHECK_INT(cn.attempts, 3);
    struct store_attempt_row rows[4];
    size_t n = 0;
    CHECK_INT(x->ops->attempts(x, 0, 0, 4, rows, &n), STORE_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK(rows[0].job_id == 1 && rows[0].attempt.outcome == ATTEMPT_RETRIED);
        CHECK(rows[1].job_id == 1 && rows[1].attempt.outcome == ATTEMPT_RUNNING);
        CHECK(rows[2].job_id == 2 && rows[2].attempt.outcome == ATTEMPT_SUCCEEDED);
    }
    for (size_t i = 0; i < n; i++)
        job_attempt_clear(&rows[i].attempt);
    x->ops->close(x);
}

/* The tables beside the jobs: counted, read in key order after a given row, bounded by rows
 * and by bytes, every column as stored (NULL as JOB_NONE). */
TEST(limits_and_schedules_in_order_bounded_by_rows_and_bytes)
{
    struct store *s = open_store();
    CHECK(s);
    static const char *const keys[] = {"b", "a*", "c"};
    for (int i = 0; i < 3; i++) {
        struct limit l = {.max_running = i + 1}, out;
        snprintf(l.key, sizeof l.key, "%s", keys[i]);
        CHECK_INT(store_limit_put(s, &l, T0 + i, &out), STORE_OK);
    }
    store_close(s);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "INSERT INTO schedules VALUES ('s1', '{\"payload\":1}', NULL, 60, 'UTC', 1, "
                       "0, 0, 1000, 940, 7, 900, 901, 3)",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    char err[512];
    struct store_export *x = open_export(err, sizeof err);
    CHECK(x);
    if (!x)
        return;
    struct store_copy_counts c;
    CHECK_INT(x->ops->counts(x, &c), STORE_OK);
    CHECK_INT(c.tables[STORE_COPY_LIMITS], 3);
    CHECK_INT(c.tables[STORE_COPY_SCHEDULES], 1);
    CHECK_INT(c.tables[STORE_COPY_KEYS], 0);
    struct store_table_row rows[3];
    size_t n = 0;
    CHECK_INT(x->ops->table(x, STORE_COPY_LIMITS, "", INT64_MIN, 2, 1 << 20, rows, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(rows[0].text[0], "a*");
        CHECK_STR(rows[1].text[0], "b");
        CHECK_INT(rows[1].num[0], T0); /* changed_at */
        CHECK_INT(rows[1].num[1], 1);  /* max_running */
        CHECK(rows[1].num[2] == JOB_NONE);
        store_table_rows_clear(rows, n);
        /* One byte: one row per batch. */
        CHECK_INT(x->ops->table(x, STORE_COPY_LIMITS, "b", T0, 3, 1, rows, &n), STORE_OK);
        CHECK_INT(n, 1);
        CHECK_STR(rows[0].text[0], "c");
    }
    store_table_rows_clear(rows, n);
    CHECK_INT(x->ops->table(x, STORE_COPY_LIMITS, "c", T0 + 2, 3, 1 << 20, rows, &n), STORE_OK);
    CHECK_INT(n, 0);
    CHECK_INT(x->ops->table(x, STORE_COPY_SCHEDULES, "", INT64_MIN, 3, 1 << 20, rows, &n),
              STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(rows[0].text[0], "s1");
        CHECK(rows[0].text[2] == NULL); /* cron */
        CHECK_INT(rows[0].num[0], 900); /* created_at */
        CHECK_INT(rows[0].num[1], 60);  /* every_seconds */
        CHECK_INT(rows[0].num[8], 901); /* updated_at */
        CHECK_INT(rows[0].num[9], 3);   /* rev */
    }
    store_table_rows_clear(rows, n);
    x->ops->close(x);
}

TEST_MAIN(TEST_ENTRY(refused_while_a_store_has_the_file),
          TEST_ENTRY(counts_per_stored_status_and_the_highest_id_ever_given),
          TEST_ENTRY(rows_in_id_order_bounded_by_rows_and_bytes),
          TEST_ENTRY(a_running_job_keeps_every_column),
          TEST_ENTRY(files_that_are_not_jobq_databases_are_refused),
          TEST_ENTRY(attempt_history_and_paused_queues_in_order),
          TEST_ENTRY(attempt_batches_merge_the_table_and_the_job_rows),
          TEST_ENTRY(a_schema_4_file_exports_its_history),
          TEST_ENTRY(limits_and_schedules_in_order_bounded_by_rows_and_bytes))
