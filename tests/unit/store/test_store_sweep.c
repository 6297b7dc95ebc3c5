/* The store's sweep (promotion, expired leases, max runtime, retention, batches) and the
 * hooks it calls after commits, on SQLite and on PostgreSQL (test_store_util.h). */
#include "sqlite_conn.h"
#include "test_store_util.h"

/* Claim n fresh jobs of "q" at T0 with a 30 s lease and the given limits. */
static int claim_many(struct store *s, int n, int64_t max_attempts, int64_t max_runtime)
{
    struct job_spec *sp = calloc((size_t)n, sizeof *sp);
    struct job *out = calloc((size_t)n, sizeof *out);
    int *created = calloc((size_t)n, sizeof *created);
    int ok = 1;
    for (int done = 0; ok && done < n; done += JOB_BATCH_MAX) {
        int k = n - done < JOB_BATCH_MAX ? n - done : JOB_BATCH_MAX;
        for (int i = 0; i < k; i++) {
            sp[i] = spec_of("q", 0, T0);
            sp[i].max_attempts = max_attempts;
            sp[i].max_runtime_seconds = max_runtime;
        }
        ok = store_enqueue(s, sp, (size_t)k, T0, out, created) == STORE_OK;
        for (int i = 0; i < k; i++)
            job_clear(&out[i]);
    }
    int claimed = 0;
    while (ok && claimed < n) {
        size_t got = 0;
        ok = claim_caps(s, "q", NULL, JOB_CLAIM_MAX, 30, T0, out, &got) == STORE_OK && got > 0;
        for (size_t i = 0; i < got; i++)
            job_clear(&out[i]);
        claimed += (int)got;
    }
    free(sp);
    free(out);
    free(created);
    return ok ? claimed : -1;
}

TEST(sweep_requeues_expired_leases)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(claim_many(s, 3, 5, JOB_NONE), 3);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 29, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued + r.failed + r.deleted + r.promoted, 0);
    CHECK_INT(store_sweep(s, T0 + 30, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 3);
    CHECK_INT(r.failed, 0);
    struct job j;
    CHECK_INT(store_get(s, 1, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED); /* backoff base 10: due at T0 + 40..41 */
    CHECK_STR(j.error_code, "lease_expired");
    CHECK(j.run_at >= T0 + 40 && j.run_at <= T0 + 41);
    CHECK_INT(j.attempts, 1);
    job_clear(&j);
    /* The next sweep at that time promotes them (store.h: a store that does not promote
     * counts 0). */
    CHECK_INT(store_sweep(s, T0 + 41, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.promoted, promotes(s) ? 3 : 0);
    CHECK_INT(r.requeued, 0);
    CHECK_INT(status_of(s, 1), JOB_QUEUED);
    store_close(s);
}

TEST(sweep_fails_exhausted_leases)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(claim_many(s, 2, 1, JOB_NONE), 2);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 31, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 0);
    CHECK_INT(r.failed, 2);
    struct job j;
    CHECK_INT(store_get(s, 2, &j), STORE_OK);
    CHECK_INT(j.status, JOB_FAILED);
    CHECK_INT(j.finished_at, T0 + 31);
    CHECK_STR(j.error_code, "lease_expired");
    job_clear(&j);
    store_close(s);
}

TEST(sweep_times_out_max_runtime)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(claim_many(s, 1, 5, 20), 1); /* deadline T0 + 20, lease T0 + 30 */
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 19, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 0);
    CHECK_INT(store_sweep(s, T0 + 20, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.requeued, 1);
    struct job j;
    CHECK_INT(store_get(s, 1, &j), STORE_OK);
    CHECK_STR(j.error_code, "timeout");
    job_clear(&j);
    /* Both expired at once: timeout wins. */
    CHECK_INT(claim_many(s, 1, 5, 10), 1); /* job 2: deadline T0 + 10, lease T0 + 30 */
    CHECK_INT(store_sweep(s, T0 + 60, 86400, 500, &r), STORE_OK);
    CHECK_INT(store_get(s, 2, &j), STORE_OK);
    CHECK_STR(j.error_code, "timeout");
    job_clear(&j);
    store_close(s);
}

TEST(sweep_expired_in_batches)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    CHECK_INT(claim_many(s, 1200, 5, JOB_NONE), 1200);
    const int want[4] = {500, 500, 200, 0};
    for (int i = 0; i < 4; i++) {
        struct sweep_result r;
        CHECK_INT(store_sweep(s, T0 + 30, 86400, 500, &r), STORE_OK);
        CHECK_INT(r.requeued, want[i]);
    }
    store_close(s);
    CHECK_INT(jobs_int("count(*)", "status = 2"), 0);
}

TEST(sweep_retention_deletes_old_finished_jobs)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job c, j;
    /* 1: succeeded at T0 + 1; 2: cancelled at T0 + 2; 3: failed at T0 + 3; 4: queued. */
    CHECK(enqueue(s, "q", 3, T0, T0) == 1);
    CHECK(enqueue(s, "q", 2, T0, T0) == 2);
    CHECK(enqueue(s, "q", 1, T0, T0) == 3);
    CHECK(enqueue(s, "q", 0, T0, T0) == 4);
    CHECK_INT(claim_one(s, "q", T0, &c), 1);
    CHECK_INT(store_complete(s, 1, c.lease_token, NULL, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(store_cancel(s, 2, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(claim_one(s, "q", T0, &c), 3);
    struct fail_req f = {NULL, NULL, 0, 0};
    CHECK_INT(store_fail(s, 3, c.lease_token, &f, T0 + 3, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);

    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 101, 100, 500, &r), STORE_OK); /* cutoff T0 + 1 */
    CHECK_INT(r.deleted, 0);
    CHECK_INT(store_sweep(s, T0 + 102, 100, 500, &r), STORE_OK); /* cutoff T0 + 2 */
    CHECK_INT(r.deleted, 1);
    CHECK_INT(status_of(s, 1), -1);
    CHECK_INT(store_sweep(s, T0 + 1000, 100, 500, &r), STORE_OK);
    CHECK_INT(r.deleted, 1);
    CHECK_INT(status_of(s, 2), -1);
    CHECK_INT(status_of(s, 3), JOB_FAILED); /* failed jobs are kept */
    CHECK_INT(status_of(s, 4), JOB_QUEUED);
    store_close(s);
}

TEST(sweep_retention_in_batches)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[JOB_BATCH_MAX];
    struct job out[JOB_BATCH_MAX];
    int created[JOB_BATCH_MAX];
    for (int i = 0; i < 700; i++)
        sp[i] = spec_of("q", 0, T0);
    CHECK_INT(store_enqueue(s, sp, 700, T0, out, created), STORE_OK);
    for (int i = 0; i < 700; i++) {
        struct job j;
        CHECK_INT(store_cancel(s, out[i].id, T0, &j), STORE_OK);
        job_clear(&j);
        job_clear(&out[i]);
    }
    const int want[3] = {300, 300, 100};
    for (int i = 0; i < 3; i++) {
        struct sweep_result r;
        CHECK_INT(store_sweep(s, T0 + 10, 5, 300, &r), STORE_OK);
        CHECK_INT(r.deleted, want[i]);
    }
    store_close(s);
    CHECK_INT(jobs_int("count(*)", NULL), 0);
}

TEST(sweep_promotes_in_batches)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[250];
    struct job out[250];
    int created[250];
    for (int i = 0; i < 250; i++)
        sp[i] = spec_of("q", 0, T0 + 10 + i % 3);
    CHECK_INT(store_enqueue(s, sp, 250, T0, out, created), STORE_OK);
    for (int i = 0; i < 250; i++)
        job_clear(&out[i]);
    /* store.h: a store that does not promote counts 0 promoted. */
    const int64_t p = promotes(s);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 9, 86400, 100, &r), STORE_OK);
    CHECK_INT(r.promoted, 0);
    CHECK_INT(store_sweep(s, T0 + 20, 86400, 100, &r), STORE_OK);
    CHECK_INT(r.promoted, p * 100);
    CHECK_INT(store_sweep(s, T0 + 20, 86400, 100, &r), STORE_OK);
    CHECK_INT(r.promoted, p * 100);
    CHECK_INT(store_sweep(s, T0 + 20, 86400, 100, &r), STORE_OK);
    CHECK_INT(r.promoted, p * 50);
    int64_t next = 0;
    CHECK_INT(store_next_due(s, &next), STORE_OK);
    CHECK_INT(next, JOB_NONE);
    /* Promoted or not, every one of them is claimable now. */
    size_t n = 0, total = 0;
    do {
        CHECK_INT(claim_caps(s, "q", NULL, JOB_CLAIM_MAX, 30, T0 + 20, out, &n), STORE_OK);
        for (size_t i = 0; i < n; i++)
            job_clear(&out[i]);
        total += n;
    } while (n > 0 && total < 250);
    CHECK_INT(total, 250);
    store_close(s);
}

/* The lanes of concurrency key ckey (any queue). */
static int64_t lanes_of(const char *ckey)
{
    char where[64];
    snprintf(where, sizeof where, "ckey = '%s'", ckey);
    return table_int("count(*)", "lanes", where);
}

TEST(sweep_drops_lanes_no_job_references)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    /* 1 (key a) succeeds at T0 + 1; 2 (key b) runs, its lease ends at T0 + 30; 3 (key c)
     * fails (kept: a retry brings it back to its lane). */
    CHECK_INT(enqueue_keyed(s, "q", "a"), 1);
    CHECK_INT(enqueue_keyed(s, "q", "b"), 2);
    CHECK_INT(enqueue_keyed(s, "q", "c"), 3);
    struct job out[3], j;
    size_t n = 0;
    CHECK_INT(claim_caps(s, "q", NULL, 3, 30, T0, out, &n), STORE_OK);
    CHECK_INT(n, 3);
    for (size_t i = 0; i < n; i++) {
        if (out[i].id == 1)
            CHECK_INT(store_complete(s, 1, out[i].lease_token, NULL, T0 + 1, &j), STORE_OK);
        if (out[i].id == 3) {
            struct fail_req f = {NULL, NULL, 0, 0};
            CHECK_INT(store_fail(s, 3, out[i].lease_token, &f, T0 + 1, &j), STORE_OK);
        }
        if (out[i].id != 2)
            job_clear(&j);
        job_clear(&out[i]);
    }
    CHECK_INT(status_of(s, 3), JOB_FAILED);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 10, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.lanes, 0); /* every lane holds a job */
    CHECK_INT(table_int("count(*)", "lanes", "1 = 1"), 3);
    /* Job 1 goes past retention and its lane with it; job 2's lease ends (requeued). */
    CHECK_INT(store_sweep(s, T0 + 40, 5, 500, &r), STORE_OK);
    CHECK_INT(r.deleted, 1);
    CHECK_INT(r.requeued, 1);
    CHECK_INT(r.lanes, 1);
    CHECK_INT(lanes_of("a"), 0);
    CHECK_INT(lanes_of("b"), 1);
    CHECK_INT(lanes_of("c"), 1);
    CHECK_INT(store_sweep(s, T0 + 41, 5, 500, &r), STORE_OK);
    CHECK_INT(r.lanes, 0);
    /* The requeued and the retried job are claimed from the lanes they kept; key a gets a
     * lane again. */
    CHECK_INT(store_retry(s, 3, T0 + 50, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(enqueue_keyed(s, "q", "a"), 4);
    CHECK_INT(store_sweep(s, T0 + 100, 5, 500, &r), STORE_OK);
    CHECK_INT(r.lanes, 0);
    CHECK_INT(claim_caps(s, "q", NULL, 3, 30, T0 + 100, out, &n), STORE_OK);
    CHECK_INT(n, 3);
    for (size_t i = 0; i < n; i++)
        job_clear(&out[i]);
    CHECK_INT(lanes_of("a"), 1);
    store_close(s);
}

TEST(sweep_drops_lanes_in_batches)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    const char *keys[5] = {"k1", "k2", "k3", "k4", "k5"};
    for (int i = 0; i < 5; i++) {
        int64_t id = enqueue_keyed(s, i % 2 ? "q" : "r", keys[i]);
        CHECK(id > 0);
        struct job j;
        CHECK_INT(store_cancel(s, id, T0, &j), STORE_OK);
        job_clear(&j);
    }
    /* Two lanes looked at per sweep, from where the last one stopped, round and round. */
    int dropped = 0;
    for (int i = 0; i < 10 && dropped < 5; i++) {
        struct sweep_result r;
        CHECK_INT(store_sweep(s, T0 + 100, 5, 2, &r), STORE_OK);
        CHECK(r.lanes <= 2);
        dropped += r.lanes;
    }
    CHECK_INT(dropped, 5);
    CHECK_INT(table_int("count(*)", "lanes", "1 = 1"), 0);
    /* No lane left (SQLite's claims then skip the lanes): a new one is claimable at once. */
    CHECK_INT(enqueue_keyed(s, "q", "k1"), 6);
    struct job j;
    CHECK_INT(claim_one(s, "q", T0 + 100, &j), 6);
    job_clear(&j);
    store_close(s);
}

/* Claim the one job of key ckey (enqueued now) at `at`: one claim row of the key at `at`. */
static int claimed_at(struct store *s, const char *ckey, int64_t at)
{
    struct job j;
    int64_t id = enqueue_keyed(s, ckey, ckey);
    int ok = id > 0 && claim_one(s, ckey, at, &j) == id;
    if (ok)
        job_clear(&j);
    return ok;
}

TEST(sweep_deletes_claim_rows_older_than_every_window)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct limit out, l = {.rate_jobs = 5, .rate_per_seconds = 10};
    snprintf(l.key, sizeof l.key, "r*");
    CHECK_INT(store_limit_put(s, &l, T0, &out), STORE_OK);
    CHECK(claimed_at(s, "r1", T0));
    CHECK(claimed_at(s, "r2", T0 + 1));
    CHECK(claimed_at(s, "r3", T0 + 2));
    CHECK(claimed_at(s, "r4", T0 + 3));
    CHECK_INT(table_int("count(*)", "key_claims", "1 = 1"), 4);
    /* A longer window may apply to a key later (86400 s at most): its rows are kept that
     * long, then go, oldest first, `batch` at a time. */
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 86399, 10 * 86400, 2, &r), STORE_OK);
    CHECK_INT(r.claims, 0);
    CHECK_INT(store_sweep(s, T0 + 86402, 10 * 86400, 2, &r), STORE_OK);
    CHECK_INT(r.claims, 2);
    CHECK_INT(table_int("count(*)", "key_claims", "key IN ('r1', 'r2')"), 0);
    CHECK_INT(store_sweep(s, T0 + 86402, 10 * 86400, 2, &r), STORE_OK);
    CHECK_INT(r.claims, 1);
    CHECK_INT(table_int("count(*)", "key_claims", "1 = 1"), 1);
    CHECK_INT(table_int("at", "key_claims", "key = 'r4'"), T0 + 3);
    store_close(s);
}

/* PostgreSQL: an enqueue that wrote a lane (its upsert) and has not committed holds the lane;
 * the sweep passes it by, and once the enqueue's job is in, the lane stays. */
TEST(sweep_passes_by_a_lane_an_enqueue_writes)
{
    if (!backend_pg())
        test_skip("PostgreSQL only: concurrent transactions (SQLite has one writer)");
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue_keyed(s, "q", "k");
    size_t deleted = 0;
    CHECK_INT(store_purge(s, "q", JOB_QUEUED, 10, T0, &deleted), STORE_OK);
    CHECK_INT(deleted, 1);
    /* The enqueue's two writes, as PG_JOB_INSERT makes them, in a transaction left open. */
    PGconn *side = PQconnectdb(db_url);
    CHECK(PQstatus(side) == CONNECTION_OK);
    PGresult *res = PQexec(side, "BEGIN");
    CHECK(PQresultStatus(res) == PGRES_COMMAND_OK);
    PQclear(res);
    res = PQexec(side, "INSERT INTO jobq_lanes AS l (queue, requires, ckey, check_at) "
                       "VALUES ('q', '', 'k', 0) ON CONFLICT (queue, requires, ckey) DO UPDATE "
                       "SET check_at = least(l.check_at, excluded.check_at) RETURNING l.id");
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO jobq_jobs (queue, status, payload, run_at, max_attempts, created_at, "
             "concurrency_key, lane) VALUES ('q', %d, '{}', %lld, 5, %lld, 'k', %s)",
             JOB_QUEUED, T0, T0, PQgetvalue(res, 0, 0));
    PQclear(res);
    res = PQexec(side, sql);
    CHECK(PQresultStatus(res) == PGRES_COMMAND_OK);
    PQclear(res);
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 10, 5, 500, &r), STORE_OK);
    CHECK_INT(r.lanes, 0);
    res = PQexec(side, "COMMIT");
    CHECK(PQresultStatus(res) == PGRES_COMMAND_OK);
    PQclear(res);
    PQfinish(side);
    CHECK_INT(store_sweep(s, T0 + 10, 5, 500, &r), STORE_OK);
    CHECK_INT(r.lanes, 0);
    struct job j;
    CHECK(claim_one(s, "q", T0 + 10, &j) > id);
    job_clear(&j);
    store_close(s);
}

/* Hook recorder. The store is set after opening; the hooks read it to prove they run after
 * the commit (the change is visible to a read connection) and without the write mutex (a
 * ping, which takes it, works). */
struct recorder {
    struct store *s;
    char ready[16][32];
    int nready;
    int64_t scheduled[16];
    int nscheduled;
    int64_t watch_id; /* when > 0: the job that must be visible inside on_ready */
    int visible;      /* status_of(watch_id) seen inside the last on_ready */
    int ping;         /* store_ping inside the last hook */
};

static void on_ready(void *ctx, const char *queue)
{
    struct recorder *r = ctx;
    if (r->nready < 16)
        snprintf(r->ready[r->nready++], sizeof r->ready[0], "%s", queue);
    if (r->s && r->watch_id > 0)
        r->visible = status_of(r->s, r->watch_id);
    if (r->s)
        r->ping = store_ping(r->s);
}

static void on_scheduled(void *ctx, int64_t run_at)
{
    struct recorder *r = ctx;
    if (r->nscheduled < 16)
        r->scheduled[r->nscheduled++] = run_at;
    if (r->s)
        r->ping = store_ping(r->s);
}

TEST(hooks_called_after_commit)
{
    struct recorder rec;
    memset(&rec, 0, sizeof rec);
    struct store_hooks hooks = {.on_ready = on_ready, .on_scheduled = on_scheduled, .ctx = &rec};
    struct store *s = open_store_hooks(&hooks);
    CHECK(s != NULL);
    rec.s = s;

    /* A due job: on_ready once, the job already visible to readers. */
    rec.watch_id = 1;
    rec.visible = -1;
    rec.ping = -1;
    CHECK_INT(enqueue(s, "mail", 0, T0, T0), 1);
    CHECK_INT(rec.nready, 1);
    CHECK_STR(rec.ready[0], "mail");
    CHECK_INT(rec.visible, JOB_QUEUED);
    CHECK_INT(rec.ping, STORE_OK);
    CHECK_INT(rec.nscheduled, 0);
    rec.watch_id = 0;

    /* A future job: on_scheduled with its run_at, no on_ready (store.h: every store calls
     * it once per write, with the earliest future run_at). */
    rec.ping = -1;
    CHECK_INT(enqueue(s, "mail", 0, T0 + 50, T0), 2);
    CHECK_INT(rec.nready, 1);
    CHECK_INT(rec.nscheduled, 1);
    CHECK_INT(rec.scheduled[0], T0 + 50);
    CHECK_INT(rec.ping, STORE_OK);

    /* A batch: once per distinct queue; on_scheduled with the earliest run_at. */
    struct job_spec sp[5] = {spec_of("a", 0, T0), spec_of("b", 0, T0), spec_of("a", 0, T0),
                             spec_of("b", 0, T0 + 9), spec_of("b", 0, T0 + 7)};
    struct job out[5];
    int created[5];
    rec.nready = rec.nscheduled = 0;
    CHECK_INT(store_enqueue(s, sp, 5, T0, out, created), STORE_OK);
    for (int i = 0; i < 5; i++)
        job_clear(&out[i]);
    CHECK_INT(rec.nready, 2);
    CHECK_STR(rec.ready[0], "a");
    CHECK_STR(rec.ready[1], "b");
    CHECK_INT(rec.nscheduled, 1);
    CHECK_INT(rec.scheduled[0], T0 + 7);

    /* Claims make nothing ready; a due fail requeue, a retry and a promotion do. */
    struct job c, j;
    rec.nready = rec.nscheduled = 0;
    CHECK_INT(claim_one(s, "mail", T0, &c), 1);
    CHECK_INT(rec.nready, 0);
    struct fail_req f = {NULL, NULL, 1, 0};
    CHECK_INT(store_fail(s, 1, c.lease_token, &f, T0 + 1, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(rec.nready, 1);
    CHECK_STR(rec.ready[0], "mail");
    CHECK_INT(store_cancel(s, 1, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(rec.nready, 1);
    CHECK_INT(store_retry(s, 1, T0 + 3, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(rec.nready, 2);
    rec.nready = 0;
    /* At T0 + 50 the jobs of "mail" and "b" scheduled above are due: a sweep says so, once
     * per queue (SQLite promotes them; PostgreSQL, which does not promote (store.h: promoted
     * is 0), announces the queues of the jobs it scheduled when their time comes). */
    struct sweep_result r;
    CHECK_INT(store_sweep(s, T0 + 50, 86400, 500, &r), STORE_OK);
    CHECK_INT(r.promoted, promotes(s) ? 3 : 0);
    CHECK_INT(rec.nready, 2);
    store_close(s);
}

TEST(hooks_not_called_after_rollback)
{
    SQLITE_ONLY("injects SQLITE_FULL at the COMMIT");
    struct recorder rec;
    memset(&rec, 0, sizeof rec);
    struct store_hooks hooks = {.on_ready = on_ready, .on_scheduled = on_scheduled, .ctx = &rec};
    struct store *s = open_store_hooks(&hooks);
    CHECK(s != NULL);
    struct job_spec sp[2] = {spec_of("a", 0, T0), spec_of("b", 0, T0 + 100)};
    struct job out[2];
    int created[2];
    sqlite_conn_fault(4, SQLITE_FULL); /* BEGIN, insert a, insert b, COMMIT */
    CHECK_INT(store_enqueue(s, sp, 2, T0, out, created), STORE_UNAVAILABLE);
    CHECK_INT(sqlite_conn_fault_fired(), 1);
    CHECK_INT(rec.nready, 0);
    CHECK_INT(rec.nscheduled, 0);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(sweep_requeues_expired_leases), TEST_ENTRY(sweep_fails_exhausted_leases),
          TEST_ENTRY(sweep_times_out_max_runtime), TEST_ENTRY(sweep_expired_in_batches),
          TEST_ENTRY(sweep_retention_deletes_old_finished_jobs),
          TEST_ENTRY(sweep_retention_in_batches), TEST_ENTRY(sweep_promotes_in_batches),
          TEST_ENTRY(sweep_drops_lanes_no_job_references), TEST_ENTRY(sweep_drops_lanes_in_batches),
          TEST_ENTRY(sweep_passes_by_a_lane_an_enqueue_writes),
          TEST_ENTRY(sweep_deletes_claim_rows_older_than_every_window),
          TEST_ENTRY(hooks_called_after_commit), TEST_ENTRY(hooks_not_called_after_rollback))
