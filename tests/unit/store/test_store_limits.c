/* Limits in the store (store_limit_put, store_limit_delete, store_limits), on SQLite and on
 * PostgreSQL (test_store_util.h): a put creates or replaces, a delete answers the limit as it
 * was, the list is in key order and bounded by STORE_LIMITS_MAX, each limit shows the running
 * jobs and pauses of the keys it governs, and a put or delete reopens the closed lanes of the
 * keys it covers (only those) and tells their queues, in the same transaction. */

#include "test_store_util.h"

/* A table's name on the backend under test. */
static const char *T(const char *table)
{
    static char buf[4][64];
    static int i;
    char *b = buf[i++ % 4];
    snprintf(b, 64, "%s%s", backend_pg() ? "jobq_" : "", table);
    return b;
}

static struct limit lim(const char *key, int64_t max_running, int64_t jobs, int64_t per)
{
    struct limit l = {.max_running = max_running, .rate_jobs = jobs, .rate_per_seconds = per};
    snprintf(l.key, sizeof l.key, "%s", key);
    return l;
}

TEST(put_get_list_delete)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct limit out, l = lim("tenant:42", 2, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_STR(out.key, "tenant:42");
    CHECK_INT(out.max_running, 2);
    CHECK_INT(out.rate_jobs, 0);
    CHECK_INT(out.running, 0);
    CHECK_INT(out.paused_until, JOB_NONE);
    l = lim("tenant:*", 0, 5, 60);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(out.max_running, 0);
    CHECK_INT(out.rate_jobs, 5);
    CHECK_INT(out.rate_per_seconds, 60);
    l = lim("a/b:c", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    l = lim("Z", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);

    struct limit *all = NULL;
    size_t n = 0;
    CHECK_INT(store_limits(s, NULL, T0, &all, &n), STORE_OK);
    CHECK_INT(n, 4);
    if (n == 4) { /* bytewise: 'Z' < 'a' < 't'; '*' < '4' */
        CHECK_STR(all[0].key, "Z");
        CHECK_STR(all[1].key, "a/b:c");
        CHECK_STR(all[2].key, "tenant:*");
        CHECK_STR(all[3].key, "tenant:42");
    }
    free(all);

    /* A put replaces every bound. */
    l = lim("tenant:42", 0, 3, 10);
    CHECK_INT(store_limit_put(s, &l, T0 + 1, &out), STORE_OK);
    CHECK_INT(out.max_running, 0);
    CHECK_INT(out.rate_jobs, 3);
    CHECK_INT(store_limits(s, "tenant:42", T0, &all, &n), STORE_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
        CHECK_STR(all[0].key, "tenant:42");
        CHECK_INT(all[0].max_running, 0);
        CHECK_INT(all[0].rate_per_seconds, 10);
    }
    free(all);
    CHECK_INT(store_limits(s, "tenant:4", T0, &all, &n), STORE_NOT_FOUND);
    CHECK_INT(n, 0);
    CHECK_INT(store_limits(s, "tenant:4*", T0, &all, &n), STORE_NOT_FOUND);

    CHECK_INT(store_limit_delete(s, "tenant:*", T0, &out), STORE_OK);
    CHECK_STR(out.key, "tenant:*");
    CHECK_INT(out.rate_jobs, 5);
    CHECK_INT(store_limit_delete(s, "tenant:*", T0, &out), STORE_NOT_FOUND);
    CHECK_INT(store_limits(s, "tenant:*", T0, &all, &n), STORE_NOT_FOUND);
    CHECK_INT(store_limits(s, NULL, T0, &all, &n), STORE_OK);
    CHECK_INT(n, 3);
    free(all);
    store_close(s);
}

TEST(at_most_store_limits_max)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    char sql[512];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
             "INSERT INTO %s (key, max_running, changed_at) SELECT 'k' || i, 1, 0 FROM n",
             STORE_LIMITS_MAX - 1, T("limits"));
    CHECK_INT(store_sql(sql), 0);
    struct limit out, l = lim("last", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    l = lim("one-too-many", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_CONFLICT);
    l = lim("k7", 9, 0, 0); /* replacing is always allowed */
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(out.max_running, 9);
    struct limit *all = NULL;
    size_t n = 0;
    CHECK_INT(store_limits(s, NULL, T0, &all, &n), STORE_OK);
    CHECK_INT(n, STORE_LIMITS_MAX);
    free(all);
    CHECK_INT(store_limits(s, "one-too-many", T0, &all, &n), STORE_NOT_FOUND);
    CHECK_INT(store_limit_delete(s, "k1", T0, &out), STORE_OK);
    l = lim("one-too-many", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    store_close(s);
}

TEST(running_and_paused_by_governing_limit)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct limit out, l = lim("t:1", 5, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    l = lim("t:*", 5, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    l = lim("t:x*", 5, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    const char *keys[] = {"t:1", "t:1", "t:2", "t:x1", "u:1"};
    for (size_t i = 0; i < 5; i++)
        CHECK(enqueue_keyed(s, "q", keys[i]) > 0);
    struct job j;
    for (int i = 0; i < 5; i++) {
        CHECK(claim_one(s, "q", T0, &j) > 0);
        job_clear(&j);
    }
    CHECK(enqueue_keyed(s, "q", "t:3") > 0); /* queued: not counted */
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s (key, paused_until) VALUES ('t:2', %lld), ('t:3', %lld), "
             "('t:1', %lld), ('t:x1', %lld)",
             T("keys"), T0 + 100, T0 + 300, T0 - 1, T0 + 50);
    CHECK_INT(store_sql(sql), 0);
    struct limit *all = NULL;
    size_t n = 0;
    CHECK_INT(store_limits(s, NULL, T0, &all, &n), STORE_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_STR(all[0].key, "t:*");
        CHECK_INT(all[0].running, 1);             /* t:2; not t:1 (exact), not t:x1 */
        CHECK_INT(all[0].paused_until, T0 + 300); /* the latest of t:2 and t:3 */
        CHECK_STR(all[1].key, "t:1");
        CHECK_INT(all[1].running, 2);
        CHECK_INT(all[1].paused_until, JOB_NONE); /* passed */
        CHECK_STR(all[2].key, "t:x*");
        CHECK_INT(all[2].running, 1);
        CHECK_INT(all[2].paused_until, T0 + 50);
    }
    free(all);
    /* One limit read alone shows the same. */
    CHECK_INT(store_limits(s, "t:*", T0, &all, &n), STORE_OK);
    CHECK(n == 1 && all[0].running == 1 && all[0].paused_until == T0 + 300);
    free(all);
    CHECK_INT(store_limits(s, "t:1", T0 + 400, &all, &n), STORE_OK);
    CHECK(n == 1 && all[0].running == 2 && all[0].paused_until == JOB_NONE);
    free(all);
    /* The answer of a write too; without t:x*, t:x1 counts for t:*. */
    CHECK_INT(store_limit_delete(s, "t:x*", T0, &out), STORE_OK);
    CHECK_INT(out.running, 1);
    l = lim("t:*", 7, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(out.running, 2);
    CHECK_INT(out.max_running, 7);
    store_close(s);
}

struct recorder {
    char ready[16][32];
    int nready;
};

static void on_ready(void *ctx, const char *queue)
{
    struct recorder *r = ctx;
    if (r->nready < 16)
        snprintf(r->ready[r->nready++], sizeof r->ready[0], "%s", queue);
}

static int told(const struct recorder *r, const char *queue)
{
    for (int i = 0; i < r->nready; i++)
        if (strcmp(r->ready[i], queue) == 0)
            return 1;
    return 0;
}

/* The open_at of the lane of ckey (one lane per key here). */
static int64_t open_at(const char *ckey)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT open_at FROM %s WHERE ckey = '%s'", T("lanes"), ckey);
    if (!backend_pg())
        return sql_int(sql);
    int64_t v = -1;
    return pg_sql_value(db_url, sql, &v) == 0 ? v : -1;
}

TEST(writes_reopen_the_lanes_they_cover)
{
    struct recorder rec;
    memset(&rec, 0, sizeof rec);
    struct store_hooks hooks = {.on_ready = on_ready, .ctx = &rec};
    struct store *s = open_store_hooks(&hooks);
    CHECK(s != NULL);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s (queue, requires, ckey, check_at, open_at) VALUES "
             "('qa', '', 'a:1', 0, 9223372036854775807), ('qb', '', 'a:2', 0, %lld), "
             "('qc', '', 'b:1', 0, 9223372036854775807), ('qd', '', 'a', 0, %lld), "
             "('qe', '', 'a:3', 0, 0)",
             T("lanes"), T0 + 60, T0 + 60);
    CHECK_INT(store_sql(sql), 0);
    struct limit out, l = lim("a:*", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(open_at("a:1"), 0);
    CHECK_INT(open_at("a:2"), 0);
    CHECK_INT(open_at("b:1"), INT64_MAX); /* not covered */
    CHECK_INT(open_at("a"), T0 + 60);     /* "a" does not start with "a:" */
    CHECK(told(&rec, "qa") && told(&rec, "qb"));
    CHECK(!told(&rec, "qc") && !told(&rec, "qd"));
    CHECK(!told(&rec, "qe")); /* open already: nothing waited on it */

    /* An exact key covers its own lanes only; a delete reopens as a put does. */
    rec.nready = 0;
    l = lim("b:1", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(open_at("b:1"), 0);
    CHECK_INT(open_at("a"), T0 + 60);
    CHECK(told(&rec, "qc") && !told(&rec, "qd"));
    snprintf(sql, sizeof sql, "UPDATE %s SET open_at = 9223372036854775807", T("lanes"));
    CHECK_INT(store_sql(sql), 0);
    rec.nready = 0;
    CHECK_INT(store_limit_delete(s, "b:1", T0, &out), STORE_OK);
    CHECK_INT(open_at("b:1"), 0);
    CHECK_INT(open_at("a:1"), INT64_MAX);
    CHECK(told(&rec, "qc") && !told(&rec, "qa"));
    /* A refused write reopens nothing. */
    rec.nready = 0;
    CHECK_INT(store_limit_delete(s, "b:1", T0, &out), STORE_NOT_FOUND);
    CHECK_INT(open_at("a:1"), INT64_MAX);
    CHECK_INT(rec.nready, 0);
    /* "*" covers every key. */
    l = lim("*", 1, 0, 0);
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK_INT(open_at("a:1"), 0);
    CHECK_INT(open_at("a"), 0);
    CHECK(told(&rec, "qa") && told(&rec, "qd") && told(&rec, "qe"));
    store_close(s);
}

/* A lane a claim closed until a time (a rate window full, a key paused) opens then: the sweep
 * that the claim poked for that time tells its queue, so that the claims parked on it look
 * again (PostgreSQL announces the times its claims closed lanes until, from memory). */
TEST(sweep_tells_the_queues_of_lanes_that_opened)
{
    SQLITE_ONLY("the SQLite sweep reads the lanes' open_at");
    struct recorder rec;
    memset(&rec, 0, sizeof rec);
    struct store_hooks hooks = {.on_ready = on_ready, .ctx = &rec};
    struct store *s = open_store_hooks(&hooks);
    CHECK(s != NULL);
    const char *queues[] = {"qa", "qb", "qc", "qd"}, *keys[] = {"k:a", "k:b", "k:c", "k:d"};
    for (size_t i = 0; i < 4; i++)
        CHECK(enqueue_keyed(s, queues[i], keys[i]) > 0);
    char sql[256];
    snprintf(sql, sizeof sql,
             "UPDATE lanes SET open_at = CASE ckey WHEN 'k:a' THEN %lld WHEN 'k:b' THEN %lld "
             "WHEN 'k:c' THEN 9223372036854775807 ELSE 0 END",
             T0 + 5, T0 + 50);
    CHECK_INT(store_sql(sql), 0);
    rec.nready = 0;
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0, 86400, 500, &r), STORE_OK);
    CHECK_INT(rec.nready, 0); /* nothing opened yet */
    CHECK_INT(store_sweep(s, T0 + 10, 86400, 500, &r), STORE_OK);
    CHECK(told(&rec, "qa"));
    CHECK(!told(&rec, "qb") && !told(&rec, "qc") && !told(&rec, "qd"));
    rec.nready = 0;
    CHECK_INT(store_sweep(s, T0 + 11, 86400, 500, &r), STORE_OK);
    CHECK_INT(rec.nready, 0); /* told once */
    CHECK_INT(store_sweep(s, T0 + 60, 86400, 500, &r), STORE_OK);
    CHECK(told(&rec, "qb") && !told(&rec, "qa") && !told(&rec, "qc"));
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(put_get_list_delete), TEST_ENTRY(at_most_store_limits_max),
          TEST_ENTRY(running_and_paused_by_governing_limit),
          TEST_ENTRY(writes_reopen_the_lanes_they_cover),
          TEST_ENTRY(sweep_tells_the_queues_of_lanes_that_opened))
