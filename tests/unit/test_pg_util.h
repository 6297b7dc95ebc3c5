/* Helpers for the unit tests that need PostgreSQL: a fresh database of the test cluster
 * (scripts/pg_cluster.sh; JOBQ_TEST_PG_URL names its maintenance database) per case, and a
 * store opened on it. Without JOBQ_TEST_PG_URL a case says so and passes, unless
 * JOBQ_REQUIRE_PG=1 (scripts/test.sh sets it). Header-only: every function is static.
 *
 * Under ctest a fresh database is a copy of a migrated template (JOBQ_TEST_PG_TEMPLATE names
 * it; pg_template.c makes it once per run, tests/CMakeLists.txt), so a case does not run the
 * migrations itself; its store_open finds the schema up to date. Without the variable (a test
 * binary run by hand) the database is empty and store_open migrates it. */
#ifndef JOBQ_TEST_PG_UTIL_H
#define JOBQ_TEST_PG_UTIL_H

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "store.h"

#ifndef T0
#define T0 1700000000LL /* "now" at the start of every test */
#endif

static char db_name[64];  /* the current fresh database */
static char db_url[1024]; /* its libpq URL */

/* Run sql on url (NULL: the maintenance database) on a connection of its own. When v is not
 * NULL, *v is the first column of the first row (a row must come back). Returns 0 or -1
 * (printed). */
static inline int pg_sql_value(const char *url, const char *sql, int64_t *v)
{
    PGconn *c = PQconnectdb(url ? url : getenv("JOBQ_TEST_PG_URL"));
    int ok = PQstatus(c) == CONNECTION_OK;
    if (ok) {
        PGresult *r = PQexec(c, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
        if (!ok)
            fprintf(stderr, "%s: %s", sql, PQresultErrorMessage(r));
        else if (v && (ok = PQntuples(r) > 0 && PQnfields(r) > 0))
            *v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
    } else {
        fprintf(stderr, "cannot connect: %s", PQerrorMessage(c));
    }
    PQfinish(c);
    return ok ? 0 : -1;
}

static inline int pg_sql_on(const char *url, const char *sql)
{
    return pg_sql_value(url, sql, NULL);
}

static inline int admin_sql(const char *sql)
{
    return pg_sql_on(NULL, sql);
}

/* The libpq URL of database name in the test cluster into buf (size n): JOBQ_TEST_PG_URL with
 * its database replaced. Returns 1, or -1 when that URL is not of the form
 * postgresql:///postgres?... (scripts/pg_cluster.sh writes it so). */
static inline int pg_db_url(const char *name, char *buf, size_t n)
{
    const char *base = getenv("JOBQ_TEST_PG_URL");
    const char *q = base ? strchr(base, '?') : NULL;
    if (!q || !strstr(base, ":///"))
        return -1;
    snprintf(buf, n, "postgresql:///%s%s", name, q);
    return 1;
}

/* Whether there is a test cluster to use: 1 when JOBQ_TEST_PG_URL is set, 0 when it is not
 * (skip: said on stderr), -1 when it is not but JOBQ_REQUIRE_PG=1 (said on stderr). */
static inline int pg_cluster_given(void)
{
    const char *base = getenv("JOBQ_TEST_PG_URL");
    if (base && *base)
        return 1;
    const char *req = getenv("JOBQ_REQUIRE_PG");
    if (req && strcmp(req, "1") == 0) {
        fprintf(stderr, "JOBQ_REQUIRE_PG=1 but JOBQ_TEST_PG_URL is not set\n");
        return -1;
    }
    fprintf(stderr, "skipped: no PostgreSQL test cluster (JOBQ_TEST_PG_URL)\n");
    return 0;
}

/* A fresh database in db_url: a copy of the template JOBQ_TEST_PG_TEMPLATE names when set,
 * else an empty one. Returns 1 when made, 0 when there is no cluster (skip), -1 on failure. */
static inline int fresh_db(void)
{
    int given = pg_cluster_given();
    if (given <= 0)
        return given;
    static int n;
    snprintf(db_name, sizeof db_name, "jobq_u_%d_%d", (int)getpid(), ++n);
    const char *tmpl = getenv("JOBQ_TEST_PG_TEMPLATE");
    char sql[256];
    if (tmpl && *tmpl)
        snprintf(sql, sizeof sql, "CREATE DATABASE %s TEMPLATE %s", db_name, tmpl);
    else
        snprintf(sql, sizeof sql, "CREATE DATABASE %s", db_name);
    if (admin_sql(sql) != 0)
        return -1;
    return pg_db_url(db_name, db_url, sizeof db_url);
}

static inline void drop_db(void)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db_name);
    admin_sql(sql);
}

/* A store on db_url with pool_size connections (and writer threads: pool_size less two, at
 * least one). */
static inline struct store *open_pg_pool(int pool_size)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    log_set_level(LOG_WARN);
    o.url = db_url;
    o.backoff_base = 0; /* a requeued job is due at once */
    o.backoff_max = 0;
    o.pg.pool_size = pool_size;
    o.pg.checkout_ms = 5000;
    o.pg.statement_ms = 5000;
    o.pg.connect_timeout_s = 5;
    return store_open(&o);
}

/* Enqueue one due job of queue at T0 on s, with concurrency key ckey (NULL: none). Returns
 * its id, or -1. */
static inline int64_t enqueue_due(struct store *s, const char *queue, const char *ckey)
{
    struct job_spec sp = {.queue = queue,
                          .payload = "{}",
                          .run_at = T0,
                          .max_attempts = 5,
                          .max_runtime_seconds = JOB_NONE,
                          .concurrency_key = ckey};
    struct job j;
    int created = 0;
    if (store_enqueue(s, &sp, 1, T0, &j, &created) != STORE_OK)
        return -1;
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

/* Enqueue n jobs of queue at priority on s at now, the i-th due at first_run_at + i * step,
 * in batches of at most BATCH_ENQUEUE (heap arrays: a batch is large). Returns STORE_OK, or
 * the first failure (STORE_ERROR when out of memory). */
#define BATCH_ENQUEUE 500
static inline enum store_result enqueue_many(struct store *s, const char *queue, int32_t priority,
                                             int64_t first_run_at, int64_t step, int n, int64_t now)
{
    struct job_spec *sp = calloc(BATCH_ENQUEUE, sizeof *sp);
    struct job *out = calloc(BATCH_ENQUEUE, sizeof *out);
    int *created = calloc(BATCH_ENQUEUE, sizeof *created);
    enum store_result r = sp && out && created ? STORE_OK : STORE_ERROR;
    for (int done = 0; r == STORE_OK && done < n; done += BATCH_ENQUEUE) {
        int k = n - done < BATCH_ENQUEUE ? n - done : BATCH_ENQUEUE;
        for (int i = 0; i < k; i++)
            sp[i] = (struct job_spec){.queue = queue,
                                      .payload = "{}",
                                      .priority = priority,
                                      .run_at = first_run_at + (done + i) * step,
                                      .max_attempts = 5,
                                      .max_runtime_seconds = JOB_NONE};
        r = store_enqueue(s, sp, (size_t)k, now, out, created);
        for (int i = 0; r == STORE_OK && i < k; i++)
            job_clear(&out[i]);
    }
    free(sp);
    free(out);
    free(created);
    return r;
}

static inline struct store *open_pg(void)
{
    return open_pg_pool(4);
}

#endif
