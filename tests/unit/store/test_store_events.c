/* The event log (store_events, event.h): one event per change of a job's API status, written
 * by the transaction of the change (none for one rolled back), of the type job_event_type
 * gives, in seq order; the sweep's bounds and the gap they leave; on PostgreSQL, a reader
 * never passes a transaction that is still running (a seq that commits late is never
 * skipped). On SQLite and on PostgreSQL (test_store_util.h). */
#include <libpq-fe.h>

#include "clock.h"
#include "sqlite_conn.h"
#include "store_events.h"
#include "test_store_util.h"

/* Read every event after `after` of job (0: any) into page. */
static enum store_result read_events(struct store *s, int64_t after, int64_t job,
                                     struct event_page *page)
{
    struct event_filter f = {.after = after, .limit = EVENT_PAGE_MAX, .job = job};
    return store_events(s, &f, page);
}

/* 1 when the events of job id, oldest first, are of the n types want[]; else 0 (on stderr). */
static int types_are(struct store *s, int64_t id, const enum job_event_type *want, size_t n)
{
    struct event_page page;
    if (read_events(s, 0, id, &page) != STORE_OK)
        return 0;
    int ok = page.n == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = page.events[i].type == want[i] &&
             (i == 0 || page.events[i].seq > page.events[i - 1].seq);
    if (!ok) {
        fprintf(stderr, "job %lld events:", (long long)id);
        for (size_t i = 0; i < page.n; i++)
            fprintf(stderr, " %lld:%s", (long long)page.events[i].seq,
                    job_event_name(page.events[i].type));
        fprintf(stderr, "\n");
    }
    event_page_clear(&page);
    return ok;
}

/* Claim job id from queue q at now; its token into token. 0 or -1. */
static int claim_id(struct store *s, int64_t id, int64_t now, char token[JOB_TOKEN_LEN + 1])
{
    struct job j;
    if (claim_one(s, "q", now, &j) != id)
        return -1;
    snprintf(token, JOB_TOKEN_LEN + 1, "%s", j.lease_token);
    job_clear(&j);
    return 0;
}

TEST(lifecycle_writes_one_event_per_change)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    CHECK(id > 0);
    char token[JOB_TOKEN_LEN + 1];
    CHECK(claim_id(s, id, T0, token) == 0);
    struct job j;
    CHECK_INT(store_heartbeat(s, id, token, 0, NULL, T0 + 1, &j), STORE_OK); /* no event */
    job_clear(&j);
    CHECK_INT(store_complete(s, id, token, "{\"ok\":1}", T0 + 2, &j), STORE_OK);
    job_clear(&j);
    struct event_page page;
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, 3);
    const enum job_event_type want[] = {JOB_EVENT_CREATED, JOB_EVENT_CLAIMED, JOB_EVENT_SUCCEEDED};
    const enum job_status status[] = {JOB_QUEUED, JOB_RUNNING, JOB_SUCCEEDED};
    for (size_t i = 0; i < 3; i++) {
        CHECK_INT(page.events[i].type, want[i]);
        CHECK_INT(page.events[i].status, status[i]);
        CHECK_INT(page.events[i].job_id, id);
        CHECK(strcmp(page.events[i].queue, "q") == 0);
        CHECK(i == 0 || page.events[i].seq > page.events[i - 1].seq);
        CHECK(page.events[i].at > 0);
    }
    CHECK_INT(page.events[0].attempts, 0);
    CHECK_INT(page.events[1].attempts, 1);
    CHECK_INT(page.events[1].fencing_token, 1);
    CHECK_INT(page.next, page.events[2].seq);
    CHECK_INT(page.pruned_through, 0);
    /* Resumed from the cursor: nothing again. */
    int64_t next = page.next;
    event_page_clear(&page);
    CHECK_INT(read_events(s, next, 0, &page), STORE_OK);
    CHECK_INT(page.n, 0);
    CHECK_INT(page.next, next);
    event_page_clear(&page);
    store_close(s);
}

TEST(each_change_has_the_type_of_the_domain_table)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    char token[JOB_TOKEN_LEN + 1];
    struct job j;
    /* A failure with retry, then a snooze, then a failure for good, then a retry by hand. */
    struct job_spec sp = spec_of("q", 0, T0);
    sp.max_attempts = 2;
    int64_t id = enqueue_spec(s, &sp, T0);
    CHECK(id > 0);
    CHECK(claim_id(s, id, T0, token) == 0);
    struct fail_req again = {.error_code = "boom", .retry = 1, .retry_in_seconds = 0};
    CHECK_INT(store_fail(s, id, token, &again, T0, &j), STORE_OK);
    CHECK_INT(j.status, JOB_QUEUED);
    job_clear(&j);
    CHECK(claim_id(s, id, T0, token) == 0);
    CHECK_INT(store_snooze(s, id, token, 0, 0, T0, &j), STORE_OK);
    job_clear(&j);
    CHECK(claim_id(s, id, T0, token) == 0);
    CHECK_INT(store_fail(s, id, token, &again, T0, &j), STORE_OK);
    CHECK_INT(j.status, JOB_FAILED);
    job_clear(&j);
    CHECK_INT(store_retry(s, id, T0, &j), STORE_OK);
    job_clear(&j);
    CHECK_INT(store_cancel(s, id, T0, &j), STORE_OK);
    job_clear(&j);
    const enum job_event_type want[] = {JOB_EVENT_CREATED, JOB_EVENT_CLAIMED, JOB_EVENT_REQUEUED,
                                        JOB_EVENT_CLAIMED, JOB_EVENT_SNOOZED, JOB_EVENT_CLAIMED,
                                        JOB_EVENT_FAILED,  JOB_EVENT_RETRIED, JOB_EVENT_CANCELLED};
    CHECK(types_are(s, id, want, sizeof want / sizeof want[0]));
    /* An expired lease: requeued by the sweep. */
    int64_t e = enqueue(s, "q", 0, T0, T0);
    CHECK(claim_id(s, e, T0, token) == 0);
    struct sweep_result res;
    CHECK_INT(store_sweep(s, T0 + 3600, 86400, 100, &res), STORE_OK);
    const enum job_event_type lapsed[] = {JOB_EVENT_CREATED, JOB_EVENT_CLAIMED, JOB_EVENT_REQUEUED};
    CHECK(types_are(s, e, lapsed, 3));
    /* Dependencies: blocked at the enqueue, released by the end of the one it waits for. */
    int64_t a = enqueue(s, "d", 0, T0, T0);
    struct job_spec dsp = spec_of("d", 0, T0);
    struct job_dep dep = {.id = a};
    dsp.deps = &dep;
    dsp.ndeps = 1;
    int64_t b = enqueue_spec(s, &dsp, T0);
    CHECK(a > 0 && b > 0);
    CHECK_INT(claim_one(s, "d", T0, &j), a);
    struct job done;
    CHECK_INT(store_complete(s, a, j.lease_token, NULL, T0, &done), STORE_OK);
    job_clear(&j);
    job_clear(&done);
    const enum job_event_type released[] = {JOB_EVENT_BLOCKED, JOB_EVENT_RELEASED};
    CHECK(types_are(s, b, released, 2));
    store_close(s);
}

/* A write that fails and is rolled back leaves no event: after a fault at each step of an
 * enqueue in turn, the created events are exactly the jobs. */
TEST(rolled_back_change_has_no_event)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    if (backend_pg()) {
        int64_t id = enqueue(s, "q", 0, T0, T0);
        CHECK(id > 0);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "BEGIN; UPDATE jobq_jobs SET status = 5 WHERE id = %lld; ROLLBACK", (long long)id);
        CHECK(pg_sql_on(db_url, sql) == 0);
        CHECK_INT(table_int("count(*)", "events", "true"), 1);
        snprintf(sql, sizeof sql, "UPDATE jobq_jobs SET status = 5 WHERE id = %lld", (long long)id);
        CHECK(pg_sql_on(db_url, sql) == 0); /* the same change committed: its event */
        CHECK_INT(table_int("count(*)", "events", "true"), 2);
        store_close(s);
        return;
    }
    int failed = 0;
    for (int n = 1; n <= 12; n++) {
        sqlite_conn_fault(n, SQLITE_IOERR);
        struct job_spec sp = spec_of("q", 0, T0);
        struct job out;
        int created = 0;
        enum store_result r = store_enqueue(s, &sp, 1, T0, &out, &created);
        sqlite_conn_fault(0, 0);
        if (r == STORE_OK)
            job_clear(&out);
        else
            failed++;
        for (int k = 0; k < 50 && store_ping(s) != STORE_OK; k++)
            ; /* the writer heals at its next write */
        CHECK_INT(table_int("count(*)", "events", "type = 1"), jobs_int("count(*)", NULL));
    }
    CHECK(failed > 0);
    store_close(s);
}

/* *out: a store whose event log keeps at most 3 events, with 5 jobs enqueued (5 events); left
 * NULL when a CHECK failed. */
static void open_five_bounded(struct store **out)
{
    test_events_max = 3;
    struct store *s = open_store();
    test_events_max = 0;
    CHECK(s != NULL);
    for (int i = 0; i < 5; i++)
        CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    *out = s;
}

TEST(sweep_keeps_the_bounds_and_readers_see_the_gap)
{
    struct store *s = NULL;
    open_five_bounded(&s);
    if (!s)
        return;
    struct event_page page;
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, 5);
    int64_t second = page.events[1].seq, newest = page.events[4].seq;
    event_page_clear(&page);
    struct sweep_result res;
    CHECK_INT(store_sweep(s, T0, 604800, 100, &res), STORE_OK);
    CHECK_INT(res.events, 2);
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, 3);
    CHECK_INT(page.pruned_through, second); /* a cursor below it missed events */
    event_page_clear(&page);
    /* Past the retention window: all but the newest go (it keeps seq from being reused). */
    /* (the events' at is the store's clock: the later of the write's now and the clock's) */
    int64_t later = clock_now() + 2 * EVENT_RETENTION_DEFAULT;
    CHECK_INT(store_sweep(s, later, 604800, 100, &res), STORE_OK);
    CHECK(res.events >= 2);
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK(page.n <= 1);
    CHECK(page.pruned_through >= newest - (backend_pg() ? 0 : 1));
    event_page_clear(&page);
    store_close(s);
}

/* The value of backend metric name in store_metrics(s), or -1 when it is not shown. */
static double metric(struct store *s, const char *name)
{
    struct store_metric m[STORE_METRICS_MAX];
    size_t n = store_metrics(s, m);
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return m[i].value;
    return -1;
}

/* /metrics shows the event log as the sweep's pruning pass saw it: nothing before a sweep,
 * then the oldest seq kept, the events kept and written (exact on SQLite; on PostgreSQL the
 * last two come from the table's statistics, which lag). */
TEST(sweep_reports_the_log_for_metrics)
{
    struct store *s = NULL;
    open_five_bounded(&s);
    if (!s)
        return;
    CHECK(metric(s, "jobq_events_oldest_seq") == -1);
    CHECK(metric(s, "jobq_events_written_total") == -1);
    struct event_page page;
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, 5);
    int64_t third = page.events[2].seq, newest = page.events[4].seq;
    event_page_clear(&page);
    struct sweep_result res;
    CHECK_INT(store_sweep(s, T0, 604800, 100, &res), STORE_OK);
    CHECK_INT(res.events, 2);
    CHECK(metric(s, "jobq_events_oldest_seq") == (double)third);
    if (backend_pg()) {
        CHECK(metric(s, "jobq_events_written_total") >= 0);
        CHECK(metric(s, "jobq_events_kept") >= 0);
    } else {
        CHECK(metric(s, "jobq_events_written_total") == (double)newest);
        CHECK(metric(s, "jobq_events_kept") == 3);
    }
    store_close(s);
}

/* On PostgreSQL a transaction that took its seq before another one committed, and commits
 * after it, is never skipped: a reader reads nothing past a transaction still running. */
TEST(reader_waits_for_a_transaction_that_commits_late)
{
    if (!backend_pg())
        test_skip("PostgreSQL only: one writer process orders SQLite's commits");
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    CHECK(id > 0);
    struct event_page page;
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, 1);
    int64_t cursor = page.next;
    event_page_clear(&page);
    PGconn *late = PQconnectdb(db_url);
    CHECK(PQstatus(late) == CONNECTION_OK);
    char sql[256];
    snprintf(sql, sizeof sql, "BEGIN; UPDATE jobq_jobs SET status = 5 WHERE id = %lld",
             (long long)id);
    PGresult *r = PQexec(late, sql);
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    int64_t other = enqueue(s, "q", 0, T0, T0); /* commits first, with a higher seq */
    CHECK(other > 0);
    CHECK_INT(read_events(s, cursor, 0, &page), STORE_OK);
    CHECK_INT(page.n, 0); /* not past the running one */
    CHECK_INT(page.next, cursor);
    event_page_clear(&page);
    r = PQexec(late, "COMMIT");
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    PQfinish(late);
    CHECK_INT(read_events(s, cursor, 0, &page), STORE_OK);
    CHECK_INT(page.n, 2);
    CHECK_INT(page.events[0].job_id, id); /* the late one first */
    CHECK_INT(page.events[0].type, JOB_EVENT_CANCELLED);
    CHECK_INT(page.events[1].job_id, other);
    event_page_clear(&page);
    store_close(s);
}

TEST(filters_pick_queue_job_and_types)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t a = enqueue(s, "a", 0, T0, T0), b = enqueue(s, "b", 0, T0, T0);
    CHECK(a > 0 && b > 0);
    struct job j;
    CHECK_INT(claim_one(s, "b", T0, &j), b);
    job_clear(&j);
    struct event_filter f = {.after = 0, .limit = 10, .nqueues = 1, .queues = {"b"}};
    struct event_page page;
    CHECK_INT(store_events(s, &f, &page), STORE_OK);
    CHECK_INT(page.n, 2);
    event_page_clear(&page);
    f.types = 1u << JOB_EVENT_CLAIMED;
    CHECK_INT(store_events(s, &f, &page), STORE_OK);
    CHECK_INT(page.n, 1);
    CHECK_INT(page.events[0].job_id, b);
    event_page_clear(&page);
    struct event_filter g = {.after = 0, .limit = 1, .job = a};
    CHECK_INT(store_events(s, &g, &page), STORE_OK);
    CHECK_INT(page.n, 1);
    CHECK_INT(page.events[0].job_id, a);
    event_page_clear(&page);
    store_close(s);
}

/* Many events in one transaction keep their order and numbers: a batch enqueue's events follow
 * its ids; on PostgreSQL several statements of one transaction, one of them undone by a rolled
 * back savepoint, take consecutive numbers of the transaction's seq in statement order, and
 * the counts and attempts they keep stay exact. */
TEST(many_events_in_one_transaction_keep_their_order)
{
    enum { BATCH = 300 };
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec specs[BATCH];
    for (int i = 0; i < BATCH; i++)
        specs[i] = spec_of("q", 0, T0);
    struct job out[BATCH];
    int created[BATCH];
    CHECK_INT(store_enqueue(s, specs, BATCH, T0, out, created), STORE_OK);
    struct event_page page;
    CHECK_INT(read_events(s, 0, 0, &page), STORE_OK);
    CHECK_INT(page.n, BATCH);
    for (int i = 0; i < BATCH; i++) {
        CHECK_INT(page.events[i].job_id, out[i].id);
        CHECK_INT(page.events[i].type, JOB_EVENT_CREATED);
        CHECK(i == 0 || page.events[i].seq > page.events[i - 1].seq);
    }
    int64_t cursor = page.next, a = out[0].id, b = out[1].id, c = out[2].id, d = out[3].id;
    event_page_clear(&page);
    for (int i = 0; i < BATCH; i++)
        job_clear(&out[i]);
    if (!backend_pg()) {
        store_close(s);
        return;
    }
    char sql[1024];
    snprintf(sql, sizeof sql,
             "BEGIN; UPDATE jobq_jobs SET status = 2, attempts = attempts + 1, fencing_token ="
             " fencing_token + 1, claimed_at = %lld, worker_id = 'w' WHERE id IN (%lld, %lld,"
             " %lld); SAVEPOINT s; UPDATE jobq_jobs SET status = 5 WHERE id = %lld;"
             " ROLLBACK TO SAVEPOINT s; UPDATE jobq_jobs SET status = 3, finished_at = %lld,"
             " ended_at = %lld, attempt_outcome = 1 WHERE id = %lld; COMMIT",
             T0, (long long)c, (long long)b, (long long)a, (long long)d, T0 + 1, T0 + 1,
             (long long)b);
    CHECK(pg_sql_on(db_url, sql) == 0);
    CHECK_INT(read_events(s, cursor, 0, &page), STORE_OK);
    CHECK_INT(page.n, 4);
    const int64_t ids[] = {a, b, c, b};
    for (int i = 0; i < 4; i++) {
        CHECK_INT(page.events[i].job_id, ids[i]);
        CHECK_INT(page.events[i].type, i < 3 ? JOB_EVENT_CLAIMED : JOB_EVENT_SUCCEEDED);
        CHECK_INT(page.events[i].seq, page.events[0].seq + i); /* one transaction, no hole */
    }
    event_page_clear(&page);
    CHECK_INT(table_int("count(*)", "events", "true"), BATCH + 4);
    CHECK_INT(table_int("count(*)", "attempts", "ended_at IS NULL"), 2);
    CHECK_INT(table_int("count(*)", "attempts", "ended_at IS NOT NULL AND outcome = 1"), 1);
    CHECK(counts_exact(s, "q", T0 + 1));
    store_close(s);
}

/* On PostgreSQL a statement that changes jobs runs one trigger function, which keeps the
 * counts, attempts, lanes and events in one pass over its rows (pg_schema.c, migration 15):
 * a trigger each and a numbering function cost a third of the lifecycle. */
TEST(a_change_runs_one_trigger_function)
{
    if (!backend_pg())
        test_skip("PostgreSQL only: SQLite's jobs have no trigger");
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t id = enqueue(s, "q", 0, T0, T0);
    CHECK(id > 0);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SET track_functions = 'pl'; INSERT INTO jobq_jobs (queue, status, payload, run_at,"
             " max_attempts, created_at) VALUES ('q', 1, '{}', %lld, 3, %lld);"
             " UPDATE jobq_jobs SET status = 5, finished_at = %lld WHERE id = %lld;"
             " SELECT sum(calls) FROM pg_stat_xact_user_functions",
             T0, T0, T0, (long long)id);
    int64_t calls = -1;
    CHECK(pg_sql_value(db_url, sql, &calls) == 0);
    CHECK_INT(calls, 2); /* one for the insert, one for the update */
    CHECK_INT(table_int("count(*)", "events", "true"), 3);
    CHECK(counts_exact(s, "q", T0));
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(lifecycle_writes_one_event_per_change),
          TEST_ENTRY(each_change_has_the_type_of_the_domain_table),
          TEST_ENTRY(rolled_back_change_has_no_event),
          TEST_ENTRY(sweep_keeps_the_bounds_and_readers_see_the_gap),
          TEST_ENTRY(sweep_reports_the_log_for_metrics),
          TEST_ENTRY(reader_waits_for_a_transaction_that_commits_late),
          TEST_ENTRY(filters_pick_queue_job_and_types),
          TEST_ENTRY(many_events_in_one_transaction_keep_their_order),
          TEST_ENTRY(a_change_runs_one_trigger_function))
