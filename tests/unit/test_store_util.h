/* Helpers shared by the store tests (test_store*.c): open a store in the test's temp dir,
 * enqueue and claim with defaults. Header-only: every function is static inline. */
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

static inline struct store *open_store_hooks(const struct store_hooks *hooks)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    log_set_level(LOG_WARN);
    o.url = DB_PATH;
    o.sqlite.sync_full = 1;
    o.backoff_base = 10;
    o.backoff_max = 3600;
    o.sqlite.readers = 2;
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

/* One integer from a SQL query on the test's own connection to the database, or -1. */
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
