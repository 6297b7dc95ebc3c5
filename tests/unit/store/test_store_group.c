/* Group commit's contract on both backends (test_store_util.h): an enqueue's wake-up counts
 * its ready jobs per queue (or calls on_ready where a backend cannot count), and a lone write
 * commits at once, one commit each. How each backend groups: SQLite's writer in
 * tests/unit/sqlite/test_store_writer_group.c, PostgreSQL's executor in
 * tests/unit/pg/test_store_pg_group.c and test_store_pg_inflight.c. */
#include <string.h>

#include "test_store_util.h"

/* on_ready_some: how many jobs, per queue and group, when none requires anything. Calls for
 * queue "a", for "r", and for any other. */
struct counted {
    int some_a, jobs_a, all_a, all_r, other;
};

static void count_some(void *ctx, const char *queue, int jobs)
{
    struct counted *c = ctx;
    if (strcmp(queue, "a") == 0) {
        c->some_a++;
        c->jobs_a += jobs;
    } else {
        c->other++;
    }
}

static void count_all(void *ctx, const char *queue)
{
    struct counted *c = ctx;
    c->all_a += strcmp(queue, "a") == 0;
    c->all_r += strcmp(queue, "r") == 0;
    c->other += strcmp(queue, "a") != 0 && strcmp(queue, "r") != 0;
}

TEST(ready_jobs_are_counted_for_the_wake_up)
{
    struct counted cnt = {0, 0, 0, 0, 0};
    struct store_hooks hooks = {.on_ready = count_all, .ctx = &cnt, .on_ready_some = count_some};
    log_set_level(LOG_OFF);
    struct store *s = open_store_hooks(&hooks);
    CHECK(s != NULL);
    struct job_spec sp[4] = {spec_of("a", 0, T0), spec_of("a", 1, T0), spec_of("a", 2, T0),
                             spec_of("r", 0, T0)};
    sp[3].requires = "[\"gpu\"]";
    /* One batch of three plain jobs in a and one with requires in r. */
    struct job out[4];
    int created[4];
    CHECK_INT(store_enqueue(s, sp, 4, T0, out, created), STORE_OK);
    for (int i = 0; i < 4; i++)
        job_clear(&out[i]);
    /* a: one wake-up, counted (three jobs) or not; r: a job with requires wakes every
     * waiter. store.h lets a store that does not know call on_ready instead of counting. */
    CHECK_INT(cnt.some_a + cnt.all_a, 1);
    CHECK_INT(cnt.jobs_a, 3 * cnt.some_a);
    CHECK_INT(cnt.all_r, 1);
    CHECK_INT(cnt.other, 0);
    /* SQLite knows what it enqueued: it counts. */
    if (!backend_pg())
        CHECK_INT(cnt.some_a, 1);
    store_close(s);
}

TEST(lone_write_commits_at_once)
{
    struct store *s = open_store();
    CHECK(s != NULL);
    struct store_stats before, after;
    store_read_stats(s, &before);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    CHECK(enqueue(s, "q", 0, T0, T0) > 0);
    store_read_stats(s, &after);
    CHECK_INT(after.commits - before.commits, 2);
    CHECK_INT(after.ops - before.ops, 2);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(ready_jobs_are_counted_for_the_wake_up),
          TEST_ENTRY(lone_write_commits_at_once))
