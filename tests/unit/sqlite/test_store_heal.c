/* The SQLite store heals by itself after storage faults, and store_ping tells: a database
 * locked by another connection answers STORE_BUSY within the retry budget and pings fast;
 * after a write failed as unavailable the ping writes a probe row until it gets through; the
 * write connection is rolled back, or reopened after repeated faults (rate-limited), and a
 * connection stuck read-only recovers that way with no restart. */
#include <sqlite3.h>
#include <string.h>

#include "clock.h"
#include "sqlite_conn.h"
#include "sqlite_pool.h"
#include "sqlite_store.h"
#include "test_faults_util.h"

TEST(busy_database_answers_within_budget)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    CHECK(id > 0);
    CHECK_INT(store_ping(s), STORE_OK);

    sqlite3 *other = NULL;
    CHECK(sqlite3_open(DB_PATH, &other) == SQLITE_OK);
    CHECK(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    struct job_spec sp = spec_of("q", 0, T0);
    struct job j;
    int created = 0;
    int64_t t = clock_mono_ms();
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_BUSY);
    CHECK(clock_mono_ms() - t < 2000);
    t = clock_mono_ms();
    CHECK_INT(store_ping(s), STORE_BUSY);
    CHECK(clock_mono_ms() - t < 1000);
    /* Reads do not wait for the writer. */
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    job_clear(&j);
    CHECK(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(other);

    CHECK_INT(store_ping(s), STORE_OK);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 2);
    CHECK(integrity_ok());
}

TEST(ping_unavailable_until_a_write_gets_through)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    /* Healthy: the ping writes nothing. */
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK_INT(writes_probed(), 0);

    /* The disk fills: the insert (step 2, after BEGIN) fails. */
    sqlite_conn_fault(2, SQLITE_FULL);
    CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    /* A sweep with nothing to do commits without writing a page: that proves nothing. */
    struct sweep_result res;
    CHECK_INT(store_sweep(s, T0, 86400, 500, &res), STORE_OK);
    /* While it stays full the ping's write fails: the read (1), BEGIN (2), the write (3). */
    for (int i = 0; i < 2; i++) {
        sqlite_conn_fault(3, SQLITE_FULL);
        CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
        CHECK_INT(sqlite_conn_fault_fired(), 1);
    }
    CHECK_INT(writes_probed(), 0);
    /* Space again: the next ping's write gets through, and it is ready. */
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK_INT(writes_probed(), 1);
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK_INT(writes_probed(), 1);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    CHECK(integrity_ok());
}

TEST(write_connection_reopens_after_repeated_faults)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct sqlite_writer *w = &sqlite_store_of(s)->writer;
    /* Each time the insert (step 2) fails with an I/O error; the rollback works. */
    for (int i = 0; i < SQLITE_WRITER_REOPEN_AFTER - 1; i++) {
        sqlite_conn_fault(2, SQLITE_IOERR_WRITE);
        CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    }
    CHECK_INT(w->reopens, 0);
    sqlite_conn_fault(2, SQLITE_IOERR_WRITE);
    CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    CHECK_INT(w->reopens, 1);
    /* Rate-limited: more failures right away do not reopen again. */
    for (int i = 0; i < 2 * SQLITE_WRITER_REOPEN_AFTER; i++) {
        sqlite_conn_fault(2, SQLITE_IOERR_WRITE);
        CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    }
    CHECK_INT(w->reopens, 1);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    CHECK_INT(store_ping(s), STORE_OK);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 1);
    CHECK(integrity_ok());
}

TEST(read_only_connection_heals_by_reopening)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    /* The write connection turns read-only (as a connection opened on a read-only file
     * would be): real SQLITE_READONLY from SQLite, which only a new connection gets rid of. */
    struct sqlite_writer *w = &sqlite_store_of(s)->writer;
    CHECK(sqlite3_exec(w->conn.db, "PRAGMA query_only = 1", NULL, NULL, NULL) == SQLITE_OK);
    struct job_spec sp = spec_of("q", 0, T0);
    struct job j;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_UNAVAILABLE);
    CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
    CHECK_INT(store_get(s, 1, &j), STORE_OK);
    job_clear(&j);
    /* The pings alone (no write traffic) bring it back. */
    int pings = 0;
    while (store_ping(s) != STORE_OK && pings < 2 * SQLITE_WRITER_REOPEN_AFTER)
        pings++;
    CHECK(pings < 2 * SQLITE_WRITER_REOPEN_AFTER);
    CHECK_INT(w->reopens, 1);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 2);
    CHECK(integrity_ok());
}

TEST(lost_write_connection_is_reopened)
{
    struct store *s = fresh_store();
    CHECK(s != NULL);
    struct sqlite_writer *w = &sqlite_store_of(s)->writer;
    /* A persistent fault from BEGIN on: the rollback fails too, so the runner must not keep a
     * connection that may sit inside a transaction. */
    sqlite_conn_fault_run(2, SQLITE_IOERR_WRITE, -1);
    CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    CHECK_INT(w->reopens, 1);
    CHECK(w->conn.db != NULL);
    CHECK(sqlite3_get_autocommit(w->conn.db));
    CHECK(write_lock_free());
    sqlite_conn_fault(0, 0);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_close(s);
    CHECK(integrity_ok());
}

/* Every read connection taken: the next read waits SQLITE_POOL_WAIT_MS at most, then gives
 * up (the read answers 503) instead of holding its HTTP thread for ever. */
TEST(reader_pool_wait_is_bounded)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    store_close(s); /* the file now holds the schema */
    struct sqlite_pool p;
    CHECK_INT(sqlite_pool_open(&p, DB_PATH, 1), 0);
    struct sqlite_conn *c = sqlite_pool_take(&p);
    CHECK(c != NULL);
    int64_t t0 = clock_mono_ms();
    CHECK(sqlite_pool_take(&p) == NULL);
    int64_t waited = clock_mono_ms() - t0;
    CHECK(waited >= SQLITE_POOL_WAIT_MS - 50);
    CHECK(waited < SQLITE_POOL_WAIT_MS + 2000);
    sqlite_pool_give(&p, c);
    c = sqlite_pool_take(&p); /* free again: at once */
    CHECK(c != NULL);
    sqlite_pool_give(&p, c);
    sqlite_pool_close(&p);
}

TEST_MAIN(TEST_ENTRY(busy_database_answers_within_budget),
          TEST_ENTRY(ping_unavailable_until_a_write_gets_through),
          TEST_ENTRY(write_connection_reopens_after_repeated_faults),
          TEST_ENTRY(read_only_connection_heals_by_reopening),
          TEST_ENTRY(lost_write_connection_is_reopened), TEST_ENTRY(reader_pool_wait_is_bounded))
