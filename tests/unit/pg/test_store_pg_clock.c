/* The PostgreSQL store on a host whose clock lags the database's by LAG seconds (the host's
 * clock faked with clock_set_fake): a job enqueued with a delay is due `delay` seconds after
 * its created_at, both on the database's clock, so the lag shortens no delay; and the hook
 * that sets the sweeper's timer (on_scheduled) gets the due time on the host's clock, the
 * one the sweeper's timer runs on. Needs JOBQ_TEST_PG_URL (see test_pg_util.h). */
#include <pthread.h>
#include <string.h>

#include "clock.h"
#include "job.h"
#include "store.h"
#include "test_pg_util.h"
#include "testlib.h"

#define LAG 30
#define DELAY 5

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t poked = JOB_NONE; /* the earliest on_scheduled time */

static void on_scheduled(void *ctx, int64_t run_at)
{
    (void)ctx;
    pthread_mutex_lock(&mu);
    if (poked == JOB_NONE || run_at < poked)
        poked = run_at;
    pthread_mutex_unlock(&mu);
}

static void real_clock(void)
{
    clock_set_fake(-1);
}

/* A store on a fresh database, opened with this process's clock LAG seconds behind the
 * database's; *host is that clock's now (frozen). 1 when open, 0 when there is no cluster
 * (skip), -1 on failure. */
static int open_lagging(struct store **s, int64_t *host)
{
    int made = fresh_db();
    if (made <= 0)
        return made;
    int64_t db = 0;
    if (pg_sql_value(db_url, "SELECT extract(epoch FROM now())::bigint", &db) != 0)
        return -1;
    *host = db - LAG;
    clock_set_fake(*host);
    test_defer(real_clock);
    struct store_options o;
    memset(&o, 0, sizeof o);
    log_set_level(LOG_ERROR); /* the skew is logged as a warning */
    o.url = db_url;
    o.pg.pool_size = 1;
    o.pg.checkout_ms = 5000;
    o.pg.statement_ms = 5000;
    o.pg.connect_timeout_s = 5;
    o.hooks.on_scheduled = on_scheduled;
    *s = store_open(&o);
    return *s ? 1 : -1;
}

static size_t claim_at(struct store *s, int64_t now, struct job *out)
{
    const char *queues[1] = {"q"};
    struct claim_req req = {"w", queues, 1, NULL, 30, 1};
    size_t n = 0;
    return store_claim(s, &req, now, out, &n) == STORE_OK ? n : (size_t)-1;
}

TEST(a_delay_is_kept_on_the_database_clock_and_poked_on_the_host_clock)
{
    struct store *s = NULL;
    int64_t host = 0;
    int made = open_lagging(&s, &host);
    CHECK(made >= 0);
    if (made == 0)
        return;
    struct job_spec sp = {.queue = "q",
                          .payload = "1",
                          .run_at = JOB_NONE,
                          .delay = DELAY,
                          .max_attempts = 5,
                          .max_runtime_seconds = JOB_NONE};
    struct job j;
    int created = 0;
    CHECK_INT(store_enqueue(s, &sp, 1, host, &j, &created), STORE_OK);
    CHECK_INT(created, 1);
    /* The database's clock: created_at is past the host's now by the lag (the host's clock
     * stands still while the database's runs on: a second or two more). */
    CHECK(j.created_at >= host + LAG && j.created_at <= host + LAG + 3);
    CHECK_INT(j.run_at - j.created_at, DELAY);
    /* The sweeper's timer runs on the host's clock: due DELAY seconds after its now (and, as
     * above, up to the seconds the database's clock ran on meanwhile: the host's stands still,
     * so a loaded machine sees a second or two more). */
    pthread_mutex_lock(&mu);
    int64_t at = poked;
    pthread_mutex_unlock(&mu);
    CHECK(at >= host + DELAY && at <= host + DELAY + 3);
    /* Not due at the host's now; due DELAY seconds later. */
    struct job out;
    CHECK_INT(claim_at(s, host, &out), 0);
    CHECK_INT(claim_at(s, host + DELAY, &out), 1);
    CHECK_INT(out.id, j.id);
    CHECK(out.claimed_at >= j.run_at);
    job_clear(&out);
    job_clear(&j);
    store_close(s);
    drop_db();
}

TEST_MAIN(TEST_ENTRY(a_delay_is_kept_on_the_database_clock_and_poked_on_the_host_clock))
