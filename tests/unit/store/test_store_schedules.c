/* Schedules in the store (store_schedule_put, _delete, _tick, _pass, store_schedules,
 * store_schedules_next), on SQLite and on PostgreSQL (test_store_util.h): a put creates or
 * replaces (keeping the runs) and computes next_run_at with the rule it is given, on the
 * store's clock; a tick is one compare and swap plus its job (enqueued as store_enqueue does:
 * an idempotency key hit is the job that holds it), refused with nothing written when the row
 * changed; overlap skip looks at the previous tick's job; two racing ticks make one job; the
 * pass keeps the liveness row; the count of schedules is bounded. */
#include <pthread.h>

#include "sched_rule.h"
#include "store_schedule.h"
#include "test_store_util.h"

/* The rule the tests give: every minute, on the epoch's multiples (sched_rule_put_next, as
 * the API gives it). */
static const struct sched_rule MINUTE = {.rule = {.every_seconds = 60}};
static const struct schedule_rule SKIP = {.overlap = SCHEDULE_OVERLAP_SKIP};
static const struct schedule_rule ALLOW = {.overlap = SCHEDULE_OVERLAP_ALLOW};

static struct store_schedule sched(const char *name, int paused, int overlap)
{
    struct store_schedule s = {.job = "{\"queue\":\"q\",\"payload\":1}",
                               .every_seconds = 60,
                               .timezone = "UTC",
                               .catch_up = SCHEDULE_CATCH_UP_LATEST,
                               .overlap = overlap ? SCHEDULE_OVERLAP_SKIP : SCHEDULE_OVERLAP_ALLOW,
                               .paused = paused};
    snprintf(s.name, sizeof s.name, "%s", name);
    return s;
}

/* Put s; returns its result and fills out (cleared by the caller). */
static enum store_result put(struct store *st, const struct store_schedule *s, int64_t now,
                             struct store_schedule *out, int *created)
{
    return store_schedule_put(st, s, sched_rule_put_next, &MINUTE, now, out, created);
}

/* Read schedule name into out; STORE_OK or the failure. */
static enum store_result get(struct store *st, const char *name, struct store_schedule *out)
{
    struct store_schedule *all = NULL;
    size_t n = 0;
    enum store_result r = store_schedules(st, name, &all, &n);
    if (r == STORE_OK) {
        *out = all[0];
        all[0] = (struct store_schedule){0};
    }
    store_schedules_free(all, n);
    return r;
}

/* Tick s (as read) for tick t, moving next_run_at to next, with a job in queue q (its
 * idempotency key named after t). */
static enum store_result tick(struct store *st, const struct store_schedule *s, int64_t t,
                              int64_t next, int64_t now, struct job *out,
                              struct store_schedule_tick_call *tc)
{
    char key[JOB_IDENT_MAX + 1];
    struct job_spec sp = spec_of("q", 0, JOB_NONE);
    snprintf(key, sizeof key, "schedule:%s:%lld", s->name, (long long)t);
    sp.idempotency_key = key;
    *tc = (struct store_schedule_tick_call){.name = s->name,
                                            .rev = s->rev,
                                            .next_run_at = s->next_run_at,
                                            .next = next,
                                            .tick = t,
                                            .spec = &sp,
                                            .rule = s->overlap == SCHEDULE_OVERLAP_SKIP ? &SKIP
                                                                                        : &ALLOW,
                                            .out = out};
    return store_schedule_tick(st, tc, now);
}

TEST(put_get_list_delete)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_schedule out, in = sched("b", 0, 0);
    int created = 0;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    CHECK_INT(created, 1);
    CHECK_STR(out.name, "b");
    CHECK_STR(out.job, in.job);
    CHECK(out.cron == NULL);
    CHECK_INT(out.every_seconds, 60);
    CHECK_STR(out.timezone, "UTC");
    CHECK_INT(out.catch_up, SCHEDULE_CATCH_UP_LATEST);
    CHECK_INT(out.paused, 0);
    /* The first tick strictly after now, on the store's clock (PostgreSQL: within a second or
     * two of the test's, which T0 stands for). */
    CHECK(out.next_run_at > T0 - 5 && out.next_run_at % 60 == 0 && out.next_run_at <= T0 + 65);
    CHECK_INT(out.last_run_at, JOB_NONE);
    CHECK_INT(out.last_job_id, 0);
    int64_t rev = out.rev;
    store_schedule_clear(&out);
    struct store_schedule a = sched("a", 0, 0);
    a.cron = "*/5 * * * *";
    a.every_seconds = 0;
    /* Put with its own rule: the cron's first minute after now on the store's clock
     * (blackbox.test_schedules waits for a cron minute on SQLite only: this is the put's
     * PostgreSQL path). */
    struct sched_rule five;
    char msg[128];
    CHECK_INT(sched_rule_of(&a, &five, msg, sizeof msg), SCHED_RULE_OK);
    CHECK_INT(store_schedule_put(s, &a, sched_rule_put_next, &five, T0, &out, &created), STORE_OK);
    sched_rule_clear(&five);
    CHECK_STR(out.cron, "*/5 * * * *");
    CHECK(out.next_run_at > T0 - 5 && out.next_run_at % 300 == 0 && out.next_run_at <= T0 + 305);
    store_schedule_clear(&out);
    struct store_schedule *all = NULL;
    size_t n = 0;
    CHECK_INT(store_schedules(s, NULL, &all, &n), STORE_OK);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(all[0].name, "a");
        CHECK_STR(all[1].name, "b");
    }
    store_schedules_free(all, n);

    /* A tick, then a replace: the runs stay, rev grows. */
    CHECK_INT(get(s, "b", &out), STORE_OK);
    struct job j;
    struct store_schedule_tick_call tc;
    CHECK_INT(tick(s, &out, out.next_run_at, out.next_run_at + 60, T0 + 60, &j, &tc), STORE_OK);
    CHECK_INT(tc.created, 1);
    int64_t job_id = tc.job_id;
    job_clear(&j);
    store_schedule_clear(&out);
    in.overlap = SCHEDULE_OVERLAP_SKIP;
    CHECK_INT(put(s, &in, T0 + 61, &out, &created), STORE_OK);
    CHECK_INT(created, 0);
    CHECK_INT(out.overlap, SCHEDULE_OVERLAP_SKIP);
    CHECK_INT(out.last_job_id, job_id);
    CHECK(out.last_run_at != JOB_NONE);
    CHECK(out.rev > rev + 1);
    store_schedule_clear(&out);

    CHECK_INT(store_schedule_delete(s, "b", T0, &out), STORE_OK);
    CHECK_STR(out.name, "b");
    CHECK_INT(out.last_job_id, job_id);
    store_schedule_clear(&out);
    CHECK_INT(store_schedule_delete(s, "b", T0, &out), STORE_NOT_FOUND);
    CHECK_INT(get(s, "b", &out), STORE_NOT_FOUND);
    CHECK_INT(status_of(s, job_id), JOB_QUEUED); /* its jobs stay */
    store_close(s);
}

TEST(paused_never_ticks)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_schedule out, in = sched("p", 1, 0);
    int created;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    CHECK_INT(out.paused, 1);
    CHECK_INT(out.next_run_at, JOB_NONE);
    store_schedule_clear(&out);
    struct store_schedule *due = NULL;
    size_t n = 9;
    CHECK_INT(store_schedules_next(s, 10, &due, &n), STORE_OK);
    CHECK_INT(n, 0);
    store_schedules_free(due, n);
    /* Resumed: next_run_at from now. */
    in.paused = 0;
    CHECK_INT(put(s, &in, T0 + 3600, &out, &created), STORE_OK);
    CHECK(out.next_run_at > T0 + 3600 - 5 && out.next_run_at <= T0 + 3600 + 65);
    store_schedule_clear(&out);
    CHECK_INT(store_schedules_next(s, 10, &due, &n), STORE_OK);
    CHECK_INT(n, 1);
    store_schedules_free(due, n);
    store_close(s);
}

TEST(tick_is_a_compare_and_swap)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_schedule out, in = sched("t", 0, 0);
    int created;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    struct job j;
    struct store_schedule_tick_call tc;
    int64_t t1 = out.next_run_at;
    CHECK_INT(tick(s, &out, t1, t1 + 60, T0 + 60, &j, &tc), STORE_OK);
    CHECK_INT(tc.created, 1);
    CHECK(tc.job_id > 0);
    int64_t first_job = tc.job_id;
    char key[64];
    snprintf(key, sizeof key, "schedule:t:%lld", (long long)t1);
    CHECK_STR(j.idempotency_key, key);
    CHECK_STR(j.queue, "q");
    job_clear(&j);
    /* The same row as read before: refused, nothing written. */
    CHECK_INT(tick(s, &out, t1 + 60, t1 + 120, T0 + 120, &j, &tc), STORE_CONFLICT);
    CHECK_INT(jobs_int("count(*)", NULL), 1);
    store_schedule_clear(&out);
    CHECK_INT(get(s, "t", &out), STORE_OK);
    CHECK_INT(out.next_run_at, t1 + 60);
    CHECK_INT(out.last_run_at, t1);
    CHECK_INT(out.last_job_id, first_job);
    /* A tick whose key was taken already (another ticker's job for it, its CAS lost): the
     * job that holds the key, none created. */
    CHECK_INT(tick(s, &out, t1, t1 + 120, T0 + 120, &j, &tc), STORE_OK);
    CHECK_INT(tc.created, 0);
    CHECK_INT(tc.job_id, first_job);
    job_clear(&j);
    CHECK_INT(jobs_int("count(*)", NULL), 1);
    /* A move without a job (catch_up dropped the tick). */
    store_schedule_clear(&out);
    CHECK_INT(get(s, "t", &out), STORE_OK);
    tc = (struct store_schedule_tick_call){.name = "t",
                                           .rev = out.rev,
                                           .next_run_at = out.next_run_at,
                                           .next = out.next_run_at + 600,
                                           .tick = JOB_NONE,
                                           .rule = &ALLOW,
                                           .out = &j};
    CHECK_INT(store_schedule_tick(s, &tc, T0), STORE_OK);
    CHECK_INT(tc.job_id, 0);
    store_schedule_clear(&out);
    CHECK_INT(get(s, "t", &out), STORE_OK);
    CHECK_INT(out.next_run_at, t1 + 720);
    CHECK_INT(out.last_job_id, first_job);
    /* Paused or deleted: refused. */
    in.paused = 1;
    struct store_schedule p;
    CHECK_INT(put(s, &in, T0, &p, &created), STORE_OK);
    store_schedule_clear(&p);
    CHECK_INT(tick(s, &out, t1 + 720, t1 + 780, T0, &j, &tc), STORE_CONFLICT);
    CHECK_INT(store_schedule_delete(s, "t", T0, &p), STORE_OK);
    store_schedule_clear(&p);
    CHECK_INT(tick(s, &out, t1 + 720, t1 + 780, T0, &j, &tc), STORE_CONFLICT);
    CHECK_INT(jobs_int("count(*)", NULL), 1);
    store_schedule_clear(&out);
    store_close(s);
}

/* Tick schedule name once more (its row read afresh); *skipped and the new job's id. */
static enum store_result tick_again(struct store *s, const char *name, int *skipped,
                                    int64_t *job_id)
{
    struct store_schedule out;
    enum store_result r = get(s, name, &out);
    if (r != STORE_OK)
        return r;
    struct job j = {0};
    struct store_schedule_tick_call tc;
    r = tick(s, &out, out.next_run_at, out.next_run_at + 60, T0, &j, &tc);
    *skipped = tc.skipped;
    *job_id = tc.job_id;
    job_clear(&j);
    store_schedule_clear(&out);
    return r;
}

TEST(overlap_skip_while_the_last_job_is_active)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_schedule out, in = sched("o", 0, 1);
    int created, skipped;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    store_schedule_clear(&out);
    int64_t first, id;
    CHECK_INT(tick_again(s, "o", &skipped, &first), STORE_OK);
    CHECK_INT(skipped, 0);
    CHECK(first > 0);
    /* queued: skipped (next_run_at moves on, no job) */
    CHECK_INT(tick_again(s, "o", &skipped, &id), STORE_OK);
    CHECK_INT(skipped, 1);
    CHECK_INT(id, 0);
    /* running: skipped */
    struct job c, j;
    CHECK_INT(claim_one(s, "q", T0, &c), first);
    CHECK_INT(tick_again(s, "o", &skipped, &id), STORE_OK);
    CHECK_INT(skipped, 1);
    /* succeeded: the next tick enqueues */
    CHECK_INT(store_complete(s, first, c.lease_token, NULL, T0, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(tick_again(s, "o", &skipped, &id), STORE_OK);
    CHECK_INT(skipped, 0);
    CHECK(id > first);
    CHECK_INT(jobs_int("count(*)", NULL), 2);
    CHECK_INT(get(s, "o", &out), STORE_OK);
    CHECK_INT(out.last_job_id, id);
    store_schedule_clear(&out);
    /* overlap allow: a tick while the job is queued enqueues */
    in.overlap = SCHEDULE_OVERLAP_ALLOW;
    CHECK_INT(put(s, &in, T0 + 3600, &out, &created), STORE_OK); /* later ticks: new keys */
    store_schedule_clear(&out);
    CHECK_INT(tick_again(s, "o", &skipped, &id), STORE_OK);
    CHECK_INT(skipped, 0);
    CHECK_INT(jobs_int("count(*)", NULL), 3);
    store_close(s);
}

struct racer {
    struct store *s;
    const struct store_schedule *row;
    enum store_result r;
    int64_t job_id;
};

static void *race(void *arg)
{
    struct racer *rc = arg;
    struct job j = {0};
    struct store_schedule_tick_call tc;
    rc->r = tick(rc->s, rc->row, rc->row->next_run_at, rc->row->next_run_at + 60, T0, &j, &tc);
    rc->job_id = tc.job_id;
    job_clear(&j);
    return NULL;
}

TEST(two_racing_ticks_make_one_job)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    /* PostgreSQL: two stores, as two processes would be; SQLite: one process only. */
    struct store *s2 = backend_pg() ? open_store() : s;
    CHECK(s2 != NULL);
    for (int round = 0; round < 20; round++) {
        struct store_schedule out, in = sched("race", 0, 0);
        int created;
        CHECK_INT(put(s, &in, T0 + round * 60, &out, &created), STORE_OK);
        struct racer r[2] = {{s, &out, STORE_ERROR, 0}, {s2, &out, STORE_ERROR, 0}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            CHECK(pthread_create(&th[i], NULL, race, &r[i]) == 0);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        CHECK((r[0].r == STORE_OK) + (r[1].r == STORE_OK) == 1);
        CHECK((r[0].r == STORE_CONFLICT) + (r[1].r == STORE_CONFLICT) == 1);
        store_schedule_clear(&out);
    }
    CHECK_INT(jobs_int("count(*)", NULL), 20);
    if (s2 != s)
        store_close(s2);
    store_close(s);
}

TEST(pass_keeps_the_last_pass)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t seen = 0, stopped = 0, now = 0;
    CHECK_INT(store_schedule_pass(s, T0, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, JOB_NONE);
    CHECK_INT(stopped, JOB_NONE);
    CHECK(now > T0 - 5 && now < T0 + 5); /* the store's clock */
    int64_t first = now;
    CHECK_INT(store_schedule_pass(s, T0 + 10, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, first);
    CHECK_INT(stopped, JOB_NONE);
    CHECK_INT(now, first + 10);
    store_close(s);
    s = open_store(); /* a restart: the row stays */
    CHECK(s != NULL);
    CHECK_INT(store_schedule_pass(s, T0 + 20, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, first + 10);
    CHECK_INT(stopped, JOB_NONE); /* no clean stop was marked: a crash */
    store_close(s);
}

/* A clean stop marks the liveness row with the store's now; the next pass of any ticker reads
 * the mark and clears it, so that a crash after that pass leaves none (schedule_downtime). */
TEST(stop_marks_the_liveness_row)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    int64_t seen = 0, stopped = 0, now = 0;
    CHECK_INT(store_schedule_stop(s, T0), STORE_OK); /* no ticker ever passed: nothing */
    CHECK_INT(store_schedule_pass(s, T0 + 10, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, JOB_NONE);
    CHECK_INT(stopped, JOB_NONE);
    int64_t first = now;
    CHECK_INT(store_schedule_stop(s, T0 + 13), STORE_OK);
    store_close(s);
    s = open_store(); /* a restart after the clean stop */
    CHECK(s != NULL);
    CHECK_INT(store_schedule_pass(s, T0 + 20, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, first);
    CHECK_INT(stopped, first + 3);
    CHECK_INT(store_schedule_pass(s, T0 + 21, &seen, &stopped, &now), STORE_OK);
    CHECK_INT(seen, first + 10);
    CHECK_INT(stopped, JOB_NONE); /* the pass above cleared it */
    store_close(s);
}

/* A put (identical or not) that finds the row's next_run_at due and untaken keeps it when it
 * is a tick of the rule it puts (schedule_put_next): a put landing between a tick and the
 * ticker's pass loses no tick. A tick taken, or a paused schedule, moves on to the next. */
TEST(put_keeps_a_due_untaken_tick)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_schedule out, in = sched("k", 0, 0);
    int created = 0;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    int64_t skew = out.updated_at - T0; /* the store's clock less the test's */
    int64_t due = out.next_run_at;
    store_schedule_clear(&out);
    for (int late = 0; late < 3; late++) { /* 0 to 2 s after the tick, none taken */
        CHECK_INT(put(s, &in, due - skew + late, &out, &created), STORE_OK);
        CHECK_INT(out.next_run_at, due);
        store_schedule_clear(&out);
    }
    /* A put of another rule of which the due tick is a tick too keeps it. */
    static const struct sched_rule HALF = {.rule = {.every_seconds = 30}};
    static const struct sched_rule ODD = {.rule = {.every_seconds = 7}};
    CHECK_INT(
        store_schedule_put(s, &in, sched_rule_put_next, &HALF, due - skew + 1, &out, &created),
        STORE_OK);
    CHECK_INT(out.next_run_at, due);
    store_schedule_clear(&out);
    /* The tick taken: the put after it moves on. */
    CHECK_INT(get(s, "k", &out), STORE_OK);
    struct job j;
    struct store_schedule_tick_call tc;
    CHECK_INT(tick(s, &out, due, due + 60, due - skew + 1, &j, &tc), STORE_OK);
    CHECK_INT(tc.created, 1);
    job_clear(&j);
    store_schedule_clear(&out);
    CHECK_INT(put(s, &in, due - skew + 2, &out, &created), STORE_OK);
    CHECK_INT(out.next_run_at, due + 60);
    store_schedule_clear(&out);
    /* A put of a rule of which the due tick is no tick moves on to that rule's next. */
    int64_t t = due + 60;
    CHECK_INT(store_schedule_put(s, &in, sched_rule_put_next, &ODD, t - skew + 1, &out, &created),
              STORE_OK);
    CHECK_INT(out.next_run_at, t % 7 == 0 ? t : ((t + 1) / 7 + 1) * 7);
    store_schedule_clear(&out);
    CHECK_INT(put(s, &in, t - skew + 2, &out, &created), STORE_OK);
    CHECK_INT(out.next_run_at, t % 7 == 0 ? t : due + 120); /* t kept by both, or moved on */
    store_schedule_clear(&out);
    /* Paused at the tick, then resumed after it: the tick is not kept. */
    in.paused = 1;
    CHECK_INT(put(s, &in, due + 120 - skew, &out, &created), STORE_OK);
    CHECK_INT(out.next_run_at, JOB_NONE);
    store_schedule_clear(&out);
    in.paused = 0;
    CHECK_INT(put(s, &in, due + 121 - skew, &out, &created), STORE_OK);
    CHECK_INT(out.next_run_at, due + 180);
    store_schedule_clear(&out);
    store_close(s);
}

TEST(at_most_store_schedules_max)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    char sql[768];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
             "INSERT INTO %s (name, job, every_seconds, timezone, catch_up, overlap, paused, "
             "created_at, updated_at, rev) SELECT 's' || i, '{}', 60, 'UTC', 0, 0, %s, 0, 0, 1 "
             "FROM n",
             STORE_SCHEDULES_MAX - 1, backend_pg() ? "jobq_schedules" : "schedules",
             backend_pg() ? "true" : "1");
    CHECK_INT(store_sql(sql), 0);
    struct store_schedule out, in = sched("last", 0, 0);
    int created;
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    store_schedule_clear(&out);
    in = sched("one-too-many", 0, 0);
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_CONFLICT);
    in = sched("s7", 0, 0); /* replacing is always allowed */
    CHECK_INT(put(s, &in, T0, &out, &created), STORE_OK);
    CHECK_INT(created, 0);
    store_schedule_clear(&out);
    struct store_schedule *all = NULL;
    size_t n = 0;
    CHECK_INT(store_schedules(s, NULL, &all, &n), STORE_OK);
    CHECK_INT(n, STORE_SCHEDULES_MAX);
    store_schedules_free(all, n);
    CHECK_INT(store_schedules_count(s, &n), STORE_OK);
    CHECK_INT(n, STORE_SCHEDULES_MAX);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(put_get_list_delete), TEST_ENTRY(paused_never_ticks),
          TEST_ENTRY(tick_is_a_compare_and_swap),
          TEST_ENTRY(overlap_skip_while_the_last_job_is_active),
          TEST_ENTRY(two_racing_ticks_make_one_job), TEST_ENTRY(pass_keeps_the_last_pass),
          TEST_ENTRY(stop_marks_the_liveness_row), TEST_ENTRY(put_keeps_a_due_untaken_tick),
          TEST_ENTRY(at_most_store_schedules_max))
