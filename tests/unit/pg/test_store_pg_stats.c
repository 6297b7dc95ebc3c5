/* The PostgreSQL store keeps the planner's statistics of the jobs table fresh by itself,
 * within seconds of a large change and without waiting for a sweep: a claim planned on
 * statistics that say few jobs are queued sorts every queued job (pg_stats.c). Needs
 * JOBQ_TEST_PG_URL (see test_pg_util.h). */
#include <time.h>

#include "clock.h"
#include "job.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define JOBS 2000 /* past the 1,000 changes that make the statistics stale */

static int64_t last_analyze(void)
{
    int64_t at = -1;
    pg_sql_value(db_url,
                 "SELECT coalesce(extract(epoch FROM last_analyze)::bigint, 0) FROM "
                 "pg_stat_user_tables WHERE relname = 'jobq_jobs'",
                 &at);
    return at;
}

TEST(a_large_enqueue_is_analyzed_within_seconds_without_a_sweep)
{
    int made = fresh_db();
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct store *s = open_pg_pool(4);
    CHECK(s != NULL);
    if (!s)
        return;
    int64_t before = last_analyze();
    CHECK(before >= 0);
    CHECK_INT(enqueue_many(s, "q", 0, T0, 0, JOBS, T0), STORE_OK);
    /* The counters reach pg_stat_user_tables within about a second; the store looks once a
     * second. No sweep runs here (the sweeper's thread is the server's, not the store's). */
    int64_t until = clock_mono_ms() + 8000, at = before;
    while ((at = last_analyze()) <= before && clock_mono_ms() < until)
        nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
    CHECK(at > before);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(a_large_enqueue_is_analyzed_within_seconds_without_a_sweep))
