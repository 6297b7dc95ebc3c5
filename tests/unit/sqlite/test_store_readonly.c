/* The SQLite store on a database file it may not write. SQLite then opens the file read-only:
 * the store still opens when its schema is up to date, reads work, every write and store_ping
 * answer STORE_UNAVAILABLE from the start, and once the file is writable again the write
 * connection is reopened by the pings alone (no write traffic, no restart). The -wal and -shm
 * that such a run leaves behind, not writable, do not keep a later store read-only. A
 * read-only file that needs a migration, or an unreadable one, is refused at open.
 *
 * Root ignores file modes: run as root, each case gives its temp dir to the user "nobody" and
 * runs with that effective user and group, switching back at its end. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "sqlite_schema.h"
#include "sqlite_store.h"
#include "test_faults_util.h"

#define HEAL_DEADLINE_MS 15000 /* reopens are rate-limited to one a second; two may be needed */
#define HEAL_PAUSE_MS 20       /* between two pings while waiting */

/* Run fn with file modes enforced: as root, with the effective ids of "nobody" (which owns
 * the case's temp dir for it), then back to root; as anyone else, as is. */
static void unprivileged(void (*fn)(void))
{
    if (geteuid() != 0) {
        fn();
        return;
    }
    const struct passwd *pw = getpwnam("nobody");
    CHECK(pw != NULL);
    uid_t uid = pw->pw_uid;
    gid_t gid = pw->pw_gid, old_gid = getegid();
    CHECK(chown(".", uid, gid) == 0);
    CHECK(setegid(gid) == 0);
    if (seteuid(uid) != 0) {
        CHECK(setegid(old_gid) == 0);
        CHECK(!"seteuid(nobody) failed");
    }
    fn();
    int back = seteuid(0) == 0 && setegid(old_gid) == 0;
    /* Changing ids made the process non-dumpable; LeakSanitizer needs it dumpable at exit. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    CHECK(back);
}

/* 1 when this process cannot open path for writing (the precondition of every case). */
static int not_writable(const char *path)
{
    int fd = open(path, O_RDWR);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno == EACCES;
}

/* A store with n jobs in queue "q", closed again (WAL files removed by the last close). */
static int make_database(int n)
{
    struct store *s = open_store();
    if (!s)
        return -1;
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = enqueue(s, "q", 0, T0, T0) > 0;
    store_close(s);
    return ok ? 0 : -1;
}

/* Ping until it answers STORE_OK or the deadline passes; returns the last answer. */
static enum store_result ping_until_ok(struct store *s)
{
    int64_t deadline = clock_mono_ms() + HEAL_DEADLINE_MS;
    const struct timespec pause = {0, HEAL_PAUSE_MS * 1000000L};
    enum store_result r;
    while ((r = store_ping(s)) != STORE_OK && clock_mono_ms() < deadline)
        nanosleep(&pause, NULL);
    return r;
}

static void serves_reads_and_heals(void)
{
    CHECK(make_database(2) == 0);
    CHECK(chmod(DB_PATH, 0444) == 0);
    CHECK(not_writable(DB_PATH));

    struct store *s = open_store();
    CHECK(s != NULL);
    struct sqlite_writer *w = &sqlite_store_of(s)->writer;
    /* Unavailable before any write was tried: BEGIN IMMEDIATE alone would pass here. */
    CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
    struct job j;
    CHECK_INT(store_get(s, 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    job_clear(&j);
    struct job_spec sp = spec_of("q", 0, T0);
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, T0, &j, &created), STORE_UNAVAILABLE);
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", NULL, 1, 30, T0, &j, &n), STORE_UNAVAILABLE);
    CHECK_INT(store_cancel(s, 2, T0, &j), STORE_UNAVAILABLE);
    CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
    CHECK_INT(status_of(s, 2), JOB_QUEUED);

    /* Writable again: pings alone bring the writes back. */
    CHECK(chmod(DB_PATH, 0644) == 0);
    CHECK_INT(ping_until_ok(s), STORE_OK);
    CHECK(w->reopens >= 1);
    CHECK(enqueue(s, "q", 0, T0, T0) == 3);
    CHECK(claim_one(s, "q", T0, &j) == 1);
    job_clear(&j);
    CHECK_INT(store_cancel(s, 2, T0, &j), STORE_OK);
    job_clear(&j);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 3);
    CHECK(integrity_ok());
}

TEST(read_only_database_serves_reads_and_heals)
{
    unprivileged(serves_reads_and_heals);
}

/* Open the store on the read-only file and close it again: SQLite leaves the -wal and the
 * -shm it made with the file's mode behind. Returns 0 when it did, both not writable. */
static int read_only_run(void)
{
    if (chmod(DB_PATH, 0444) != 0)
        return -1;
    struct store *s = open_store();
    if (!s)
        return -1;
    enum store_result r = store_ping(s);
    store_close(s);
    return r == STORE_UNAVAILABLE && not_writable(DB_PATH "-wal") && not_writable(DB_PATH "-shm")
               ? 0
               : -1;
}

static void leftovers_heal(void)
{
    CHECK(make_database(1) == 0);
    CHECK(read_only_run() == 0);
    /* Still read-only, on those files: made writable, it heals in the running store. */
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(store_ping(s), STORE_UNAVAILABLE);
    CHECK(enqueue(s, "q", 0, T0, T0) < 0);
    CHECK(chmod(DB_PATH, 0644) == 0);
    CHECK_INT(ping_until_ok(s), STORE_OK);
    CHECK(enqueue(s, "q", 0, T0, T0) == 2);
    store_close(s);

    /* Made writable while no store runs: the next one opens and writes at once. */
    CHECK(read_only_run() == 0);
    CHECK(chmod(DB_PATH, 0644) == 0);
    s = open_store();
    CHECK(s != NULL);
    CHECK_INT(store_ping(s), STORE_OK);
    CHECK(enqueue(s, "q", 0, T0, T0) == 3);
    store_close(s);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 3);
    CHECK(integrity_ok());
}

TEST(files_left_by_a_read_only_run_heal)
{
    unprivileged(leftovers_heal);
}

static void migration_refused(void)
{
    CHECK(make_database(1) == 0);
    /* Back to schema version 1 (what migrations 2-10 added, dropped): they must write. */
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(DB_PATH, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       SQLITE_UNDO_MIGRATION_15 SQLITE_UNDO_MIGRATION_14 SQLITE_UNDO_MIGRATION_13
                           SQLITE_UNDO_MIGRATION_10,
                       NULL, NULL, NULL) == SQLITE_OK);
    int rc = sqlite3_exec(db,
                          "DROP TABLE probe; DROP TRIGGER jobs_track_delete; "
                          "DROP TABLE queues; DROP TABLE counts; DROP TABLE attempts; "
                          "DROP INDEX jobs_due; ALTER TABLE jobs DROP COLUMN ended_at; "
                          "ALTER TABLE jobs DROP COLUMN attempt_outcome; " SQLITE_UNDO_MIGRATION_9
                              SQLITE_UNDO_MIGRATION_8 SQLITE_UNDO_MIGRATION_7
                          "ALTER TABLE jobs DROP COLUMN attempt_in_row; " SQLITE_UNDO_MIGRATION_6
                          "PRAGMA user_version = 1",
                          NULL, NULL, NULL);
    sqlite3_close(db);
    CHECK_INT(rc, SQLITE_OK);
    CHECK(chmod(DB_PATH, 0444) == 0);
    CHECK(not_writable(DB_PATH));
    CHECK(open_store() == NULL);

    CHECK(chmod(DB_PATH, 0644) == 0);
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(store_ping(s), STORE_OK);
    store_close(s);
    CHECK_INT(sql_int("PRAGMA user_version"), sqlite_schema_version());
    CHECK_INT(sql_int("SELECT count(*) FROM sqlite_master WHERE name = 'probe'"), 1);
    CHECK_INT(sql_int("SELECT count(*) FROM jobs"), 1);
}

TEST(read_only_database_needing_migration_is_refused)
{
    unprivileged(migration_refused);
}

static void unreadable_refused(void)
{
    CHECK(make_database(1) == 0);
    CHECK(chmod(DB_PATH, 0) == 0);
    CHECK(not_writable(DB_PATH));
    CHECK(open_store() == NULL);
    CHECK(chmod(DB_PATH, 0644) == 0);
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(store_ping(s), STORE_OK);
    store_close(s);
}

TEST(unreadable_database_is_refused)
{
    unprivileged(unreadable_refused);
}

TEST_MAIN(TEST_ENTRY(read_only_database_serves_reads_and_heals),
          TEST_ENTRY(files_left_by_a_read_only_run_heal),
          TEST_ENTRY(read_only_database_needing_migration_is_refused),
          TEST_ENTRY(unreadable_database_is_refused))
