/* Enqueue with a dedup key (dedup.h, store.h store_enqueue), on SQLite and on PostgreSQL
 * (test_store_util.h): what each mode answers, creates and replaces, what a batch sees of its
 * own earlier elements, how an idempotency_key comes first, and that enqueues of one key from
 * many threads at once create exactly one job. */
#include <pthread.h>

#include "sqlite_stmt.h"
#include "test_store_util.h"

static struct job_spec dedup_spec(const char *queue, const char *key, enum dedup_mode mode,
                                  int64_t seconds, const char *payload)
{
    struct job_spec sp = spec_of(queue, 0, JOB_NONE);
    sp.payload = payload;
    sp.dedup_key = key;
    sp.dedup_mode = mode;
    sp.dedup_seconds = seconds;
    return sp;
}

/* Enqueue sp at now into *out (the caller clears it): the job's id, with *created set; -1 on
 * a store error (out untouched). */
static int64_t enq(struct store *s, const struct job_spec *sp, int64_t now, int *created,
                   struct job *out)
{
    int c = -1;
    enum store_result r = store_enqueue(s, sp, 1, now, out, &c);
    if (r != STORE_OK && r != STORE_EXISTS)
        return -1;
    *created = c;
    if (r != (c ? STORE_OK : STORE_EXISTS)) { /* a hit answers as an idempotency hit */
        job_clear(out);
        return -1;
    }
    return out->id;
}

/* Enqueue sp at now; returns the id and whether it was created (0/1), or -1 in *created. */
static int64_t enq_id(struct store *s, const struct job_spec *sp, int64_t now, int *created)
{
    struct job j;
    *created = -1;
    int64_t id = enq(s, sp, now, created, &j);
    if (id > 0)
        job_clear(&j);
    return id;
}

/* The number of jobs of queue q with dedup key k. */
static int64_t jobs_of_key(const char *q, const char *k)
{
    char where[256];
    snprintf(where, sizeof where, "queue = '%s' AND dedup_key = '%s'", q, k);
    return jobs_int("count(*)", where);
}

/* The count GET /queues shows for queue q in status st. */
static int64_t queue_count(struct store *s, const char *q, enum job_status st)
{
    struct queue_stats *rows = NULL;
    size_t n = 0;
    int64_t v = -1;
    if (store_queues(s, T0 + 1000, &rows, &n) == STORE_OK) {
        v = 0;
        for (size_t i = 0; i < n; i++)
            if (strcmp(rows[i].name, q) == 0)
                v = rows[i].count[st];
    }
    queue_stats_free(rows, n);
    return v;
}

TEST(active_answers_an_unfinished_job)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = dedup_spec("q", "k", DEDUP_ACTIVE, 0, "{\"n\":1}");
    int created = 0;
    int64_t id = enq_id(s, &sp, T0, &created);
    CHECK(id > 0);
    CHECK_INT(created, 1);
    struct job j;
    CHECK_INT(enq(s, &sp, T0 + 1, &created, &j), id); /* queued */
    CHECK_INT(created, 0);
    CHECK_STR(j.payload, "{\"n\":1}");
    CHECK_INT(j.dedup_mode, DEDUP_ACTIVE);
    CHECK_STR(j.dedup_key, "k");
    job_clear(&j);
    /* Another queue has keys of its own. */
    struct job_spec other = dedup_spec("q2", "k", DEDUP_ACTIVE, 0, "{}");
    int64_t id2 = enq_id(s, &other, T0 + 1, &created);
    CHECK(id2 > 0 && id2 != id);
    CHECK_INT(created, 1);
    /* Running counts too. */
    struct job c;
    CHECK_INT(claim_one(s, "q", T0 + 2, &c), id);
    CHECK_INT(enq_id(s, &sp, T0 + 3, &created), id);
    CHECK_INT(created, 0);
    /* A finished one does not. */
    CHECK_INT(store_complete(s, id, c.lease_token, NULL, T0 + 4, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    int64_t id3 = enq_id(s, &sp, T0 + 5, &created);
    CHECK(id3 > id2);
    CHECK_INT(created, 1);
    /* A job due later (SQLite stores it as scheduled) counts as queued. */
    struct job_spec later = dedup_spec("q", "later", DEDUP_ACTIVE, 0, "{}");
    later.run_at = T0 + 3600;
    int64_t id4 = enq_id(s, &later, T0 + 5, &created);
    CHECK_INT(created, 1);
    later.run_at = JOB_NONE;
    CHECK_INT(enq_id(s, &later, T0 + 6, &created), id4);
    CHECK_INT(created, 0);
    CHECK_INT(jobs_of_key("q", "k"), 2);
    CHECK_INT(jobs_of_key("q", "later"), 1);
    store_close(s);
}

TEST(window_answers_a_job_of_the_last_seconds)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = dedup_spec("q", "w", DEDUP_WINDOW, 10, "{}");
    int created = 0;
    int64_t id = enq_id(s, &sp, T0, &created);
    CHECK_INT(created, 1);
    /* Finished or not: it counts while it is in the window. */
    struct job c, j;
    CHECK_INT(claim_one(s, "q", T0 + 1, &c), id);
    CHECK_INT(store_complete(s, id, c.lease_token, NULL, T0 + 2, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(enq_id(s, &sp, T0 + 9, &created), id); /* T0 + 9 - 10 + 1 = T0 */
    CHECK_INT(created, 0);
    int64_t id2 = enq_id(s, &sp, T0 + 10, &created); /* the window starts at T0 + 1 */
    CHECK(id2 > id);
    CHECK_INT(created, 1);
    CHECK_INT(enq_id(s, &sp, T0 + 11, &created), id2);
    CHECK_INT(created, 0);
    /* The modes share the key: an active enqueue answers the window's queued job. */
    struct job_spec act = dedup_spec("q", "w", DEDUP_ACTIVE, 0, "{}");
    CHECK_INT(enq_id(s, &act, T0 + 12, &created), id2);
    CHECK_INT(created, 0);
    CHECK_INT(jobs_of_key("q", "w"), 2);
    store_close(s);
}

TEST(debounce_replaces_a_queued_job_never_claimed)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = dedup_spec("q", "d", DEDUP_DEBOUNCE, 30, "{\"n\":1}");
    int created = 0;
    struct job j;
    int64_t id = enq(s, &sp, T0, &created, &j);
    CHECK_INT(created, 1);
    CHECK_INT(j.run_at, T0 + 30);
    CHECK_INT(j.dedup_seconds, 30);
    job_clear(&j);
    CHECK_INT(jobs_int("status", "dedup_key = 'd'"), stored_not_due_status(s));
    /* Again: the payload is replaced and run_at pushed; nothing is created. */
    sp.payload = "{\"n\":2}";
    CHECK_INT(enq(s, &sp, T0 + 5, &created, &j), id);
    CHECK_INT(created, 0);
    CHECK_INT(j.status, JOB_QUEUED);
    CHECK_STR(j.payload, "{\"n\":2}");
    CHECK_INT(j.run_at, T0 + 35);
    job_clear(&j);
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    CHECK_STR(j.payload, "{\"n\":2}");
    CHECK_INT(j.run_at, T0 + 35);
    job_clear(&j);
    struct job c;
    CHECK_INT(claim_one(s, "q", T0 + 34, &c), 0); /* not due */
    /* seconds 0: due now, claimable at once (SQLite: scheduled becomes queued). */
    struct job_spec now = dedup_spec("q", "d", DEDUP_DEBOUNCE, 0, "{\"n\":3}");
    CHECK_INT(enq(s, &now, T0 + 6, &created, &j), id);
    CHECK_INT(created, 0);
    CHECK_INT(j.run_at, T0 + 6);
    job_clear(&j);
    CHECK_INT(jobs_int("status", "dedup_key = 'd'"), JOB_QUEUED);
    CHECK_INT(queue_count(s, "q", JOB_QUEUED), 1);
    /* And back to later: queued becomes scheduled again, the counts follow. */
    CHECK_INT(enq(s, &sp, T0 + 7, &created, &j), id);
    CHECK_INT(j.run_at, T0 + 37);
    job_clear(&j);
    CHECK_INT(jobs_int("status", "dedup_key = 'd'"), stored_not_due_status(s));
    CHECK_INT(queue_count(s, "q", JOB_QUEUED), 1);
    CHECK_INT(claim_one(s, "q", T0 + 36, &c), 0);
    if (promotes(s)) { /* the sweep makes it queued at run_at */
        struct sweep_result res = {0};
        CHECK_INT(store_sweep(s, T0 + 37, 3600, 100, &res), STORE_OK);
    }
    CHECK_INT(claim_one(s, "q", T0 + 37, &c), id);
    CHECK_STR(c.payload, "{\"n\":2}");
    /* Claimed: not replaced; a new job is created, due at now + seconds. */
    sp.payload = "{\"n\":4}";
    int64_t id2 = enq(s, &sp, T0 + 40, &created, &j);
    CHECK(id2 > id);
    CHECK_INT(created, 1);
    CHECK_INT(j.run_at, T0 + 70);
    CHECK_STR(j.payload, "{\"n\":4}");
    job_clear(&j);
    /* Requeued after a failure (claimed once): not replaced either. */
    struct fail_req f = {"e", NULL, 1, 0};
    CHECK_INT(store_fail(s, id, c.lease_token, &f, T0 + 41, &j), STORE_OK);
    job_clear(&j);
    job_clear(&c);
    CHECK_INT(enq_id(s, &sp, T0 + 42, &created), id2); /* the newest never claimed */
    CHECK_INT(created, 0);
    CHECK_INT(store_get(s, id, &j), STORE_OK);
    CHECK_STR(j.payload, "{\"n\":2}");
    job_clear(&j);
    CHECK_INT(jobs_of_key("q", "d"), 2);
    CHECK_INT(queue_count(s, "q", JOB_QUEUED), 2);
    store_close(s);
}

TEST(batch_elements_see_earlier_ones)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp[6] = {
        dedup_spec("q", "a", DEDUP_ACTIVE, 0, "{\"n\":1}"),
        dedup_spec("q", "a", DEDUP_ACTIVE, 0, "{\"n\":2}"),
        spec_of("q", 0, JOB_NONE),
        dedup_spec("q", "d", DEDUP_DEBOUNCE, 10, "{\"n\":3}"),
        dedup_spec("q", "d", DEDUP_DEBOUNCE, 20, "{\"n\":4}"),
        dedup_spec("q", "w", DEDUP_WINDOW, 60, "{\"n\":5}"),
    };
    struct job out[6];
    int created[6];
    CHECK_INT(store_enqueue(s, sp, 6, T0, out, created), STORE_OK);
    const int want[6] = {1, 0, 1, 1, 0, 1};
    for (int i = 0; i < 6; i++)
        CHECK_INT(created[i], want[i]);
    CHECK_INT(out[1].id, out[0].id);
    CHECK_STR(out[1].payload, "{\"n\":1}");
    CHECK_INT(out[4].id, out[3].id);
    CHECK_STR(out[4].payload, "{\"n\":4}");
    CHECK_INT(out[4].run_at, T0 + 20);
    CHECK(out[2].id > out[0].id && out[3].id > out[2].id && out[5].id > out[3].id);
    for (int i = 0; i < 6; i++)
        job_clear(&out[i]);
    /* A second batch hits what the first made. */
    CHECK_INT(store_enqueue(s, sp, 2, T0 + 1, out, created), STORE_OK);
    CHECK_INT(created[0] + created[1], 0);
    job_clear(&out[0]);
    job_clear(&out[1]);
    CHECK_INT(jobs_int("count(*)", NULL), 4);
    CHECK_INT(queue_count(s, "q", JOB_QUEUED), 4);
    store_close(s);
}

TEST(idempotency_key_comes_first)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec sp = dedup_spec("q", "k", DEDUP_DEBOUNCE, 30, "{\"n\":1}");
    sp.idempotency_key = "i1";
    int created = 0;
    int64_t id = enq_id(s, &sp, T0, &created);
    CHECK_INT(created, 1);
    /* The same idempotency_key: its job, unchanged (no debounce). */
    sp.payload = "{\"n\":2}";
    struct job j;
    CHECK_INT(enq(s, &sp, T0 + 1, &created, &j), id);
    CHECK_INT(created, 0);
    CHECK_STR(j.payload, "{\"n\":1}");
    CHECK_INT(j.run_at, T0 + 30);
    job_clear(&j);
    /* Another idempotency_key: the dedup decides (replaced). */
    sp.idempotency_key = "i2";
    CHECK_INT(enq(s, &sp, T0 + 2, &created, &j), id);
    CHECK_INT(created, 0);
    CHECK_STR(j.payload, "{\"n\":2}");
    CHECK_STR(j.idempotency_key, "i1");
    job_clear(&j);
    /* A dedup miss creates the job with its idempotency_key, which then hits. */
    struct job_spec act = dedup_spec("q", "other", DEDUP_ACTIVE, 0, "{}");
    act.idempotency_key = "i3";
    int64_t id2 = enq_id(s, &act, T0 + 3, &created);
    CHECK_INT(created, 1);
    act.dedup_key = "third";
    CHECK_INT(enq_id(s, &act, T0 + 4, &created), id2);
    CHECK_INT(created, 0);
    CHECK_INT(jobs_int("count(*)", NULL), 2);
    store_close(s);
}

/* Threads that enqueue one spec at once. */
struct racer {
    struct store *s;
    const struct job_spec *sp;
    pthread_barrier_t *go;
    int64_t id;
    int created, errors;
};

static void *race(void *arg)
{
    struct racer *r = arg;
    pthread_barrier_wait(r->go);
    struct job j;
    int created = 0;
    enum store_result res = store_enqueue(r->s, r->sp, 1, T0 + 1, &j, &created);
    if (res == STORE_OK || res == STORE_EXISTS) {
        r->id = j.id;
        r->created = created;
        job_clear(&j);
    } else {
        r->errors++;
    }
    return NULL;
}

#define RACERS 32

/* RACERS threads enqueue sp at once: exactly one creates, every other answers its job. */
static void race_one_key(struct store *s, const struct job_spec *sp)
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, RACERS);
    struct racer r[RACERS];
    pthread_t t[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i] = (struct racer){.s = s, .sp = sp, .go = &go};
        CHECK(pthread_create(&t[i], NULL, race, &r[i]) == 0);
    }
    int created = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(r[i].errors, 0);
        created += r[i].created;
        CHECK_INT(r[i].id, r[0].id);
    }
    pthread_barrier_destroy(&go);
    CHECK_INT(created, 1);
    CHECK_INT(jobs_of_key(sp->queue, sp->dedup_key), 1);
}

TEST(many_threads_one_key_one_job)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct job_spec a = dedup_spec("q", "ra", DEDUP_ACTIVE, 0, "{}");
    struct job_spec w = dedup_spec("q", "rw", DEDUP_WINDOW, 3600, "{}");
    struct job_spec d = dedup_spec("q", "rd", DEDUP_DEBOUNCE, 60, "{}");
    race_one_key(s, &a);
    race_one_key(s, &w);
    race_one_key(s, &d);
    CHECK_INT(queue_count(s, "q", JOB_QUEUED), 3);
    store_close(s);
}

/* The lookups of active and debounce use the index of unfinished jobs of a key, not the
 * finished ones (SQLite's plan). */
TEST(dedup_lookups_use_their_index)
{
    SQLITE_ONLY("the plan of SQLite's statements");
    struct store *s = open_store();
    CHECK(s != NULL);
    char plan[2048];
    CHECK_INT(query_plan(sqlite_stmt_sql(STMT_DEDUP_ACTIVE), plan, sizeof plan), 0);
    CHECK(strstr(plan, "jobs_dedup_live") != NULL);
    CHECK_INT(query_plan(sqlite_stmt_sql(STMT_DEDUP_DEBOUNCE), plan, sizeof plan), 0);
    CHECK(strstr(plan, "jobs_dedup_live") != NULL);
    CHECK_INT(query_plan(sqlite_stmt_sql(STMT_DEDUP_WINDOW), plan, sizeof plan), 0);
    CHECK(strstr(plan, "jobs_dedup ") != NULL);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(active_answers_an_unfinished_job),
          TEST_ENTRY(window_answers_a_job_of_the_last_seconds),
          TEST_ENTRY(debounce_replaces_a_queued_job_never_claimed),
          TEST_ENTRY(batch_elements_see_earlier_ones), TEST_ENTRY(idempotency_key_comes_first),
          TEST_ENTRY(many_threads_one_key_one_job), TEST_ENTRY(dedup_lookups_use_their_index))
