/* Helpers shared by the storage-fault tests (test_store_faults.c, test_store_heal.c): a
 * store on DB_PATH whose hooks count their calls, and looks at the database from a
 * connection of the test's own (a dump of the jobs, their counts and attempts,
 * integrity_check, the write lock).
 * Header-only: every function is static inline. */
#ifndef JOBQ_TEST_FAULTS_UTIL_H
#define JOBQ_TEST_FAULTS_UTIL_H

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqlite_conn.h"
#include "test_store_util.h"

#define DUMP_MAX (64 * 1024)

/* ----- a store with recording hooks ----------------------------------------------------- */

struct recorder {
    int ready;
    int scheduled;
};

static struct recorder rec;

static inline void on_ready(void *ctx, const char *queue)
{
    (void)ctx;
    (void)queue;
    rec.ready++;
}

static inline void on_scheduled(void *ctx, int64_t run_at)
{
    (void)ctx;
    (void)run_at;
    rec.scheduled++;
}

/* A fresh store on DB_PATH: deterministic backoff (0), one reader, synchronous NORMAL (the
 * faults are injected: speed matters more than durability here). */
static inline struct store *fresh_store(void)
{
    unlink(DB_PATH);
    unlink(DB_PATH "-wal");
    unlink(DB_PATH "-shm");
    struct store_options o;
    memset(&o, 0, sizeof o);
    log_set_level(LOG_OFF); /* thousands of injected faults: their logs are noise */
    o.url = DB_PATH;
    o.sqlite.sync_full = 0;
    o.backoff_base = 0;
    o.backoff_max = 0;
    o.sqlite.readers = 1;
    o.hooks.on_ready = on_ready;
    o.hooks.on_scheduled = on_scheduled;
    memset(&rec, 0, sizeof rec);
    return store_open(&o);
}

/* ----- looking at the database from the side --------------------------------------------- */

/* Append the rows of sql to buf as text. The lease token is random: only whether it is set
 * shows. Returns 0, or -1 when the query failed or buf is too small. */
static inline int dump_query(sqlite3 *db, const char *sql, char *buf, size_t size, size_t *used)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char *name = sqlite3_column_name(st, i);
            const char *v = (const char *)sqlite3_column_text(st, i);
            if (v && strcmp(name, "lease_token") == 0)
                v = "<token>";
            int w = snprintf(buf + *used, size - *used, "%s=%s|", name, v ? v : "NULL");
            if (w < 0 || (size_t)w >= size - *used) {
                sqlite3_finalize(st);
                return -1;
            }
            *used += (size_t)w;
        }
        if (*used + 2 >= size) {
            sqlite3_finalize(st);
            return -1;
        }
        buf[(*used)++] = '\n';
        buf[*used] = '\0';
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Every job row, the id counter, the counts, attempts, lanes and key claims, as text, in a new string (NULL on failure). */
static inline char *dump(void)
{
    char *buf = malloc(DUMP_MAX);
    sqlite3 *db = NULL;
    size_t used = 0;
    int ok = buf && sqlite3_open_v2(DB_PATH, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK;
    if (ok) {
        buf[0] = '\0';
        ok = dump_query(db, "SELECT * FROM jobs ORDER BY id", buf, DUMP_MAX, &used) == 0 &&
             dump_query(db, "SELECT * FROM sqlite_sequence ORDER BY name", buf, DUMP_MAX, &used) ==
                 0 &&
             dump_query(db, "SELECT * FROM counts ORDER BY queue, status", buf, DUMP_MAX, &used) ==
                 0 &&
             dump_query(db, "SELECT * FROM attempts ORDER BY job_id, fencing_token", buf, DUMP_MAX,
                        &used) == 0 &&
             dump_query(db, "SELECT * FROM lanes ORDER BY id", buf, DUMP_MAX, &used) == 0 &&
             dump_query(db, "SELECT * FROM key_claims ORDER BY key, at", buf, DUMP_MAX, &used) == 0;
    }
    sqlite3_close(db);
    if (!ok) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* 1 when another connection can take the write lock at once (nothing was left open). */
static inline int write_lock_free(void)
{
    sqlite3 *db = NULL;
    int ok = sqlite3_open_v2(DB_PATH, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
             sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return ok;
}

/* 1 when PRAGMA integrity_check answers "ok". */
static inline int integrity_ok(void)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_open_v2(DB_PATH, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW &&
             strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

/* How often store_ping's probe row was written. */
static inline int writes_probed(void)
{
    return (int)sql_int("SELECT coalesce(max(writes), 0) FROM probe");
}

#endif
