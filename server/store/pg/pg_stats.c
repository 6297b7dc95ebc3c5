/* The planner's statistics of the jobs table, kept fresh by a thread of their own
 * (pg_store.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "pg_store.h"

/* A queue's table swings from empty to a million rows and back faster than autovacuum looks
 * (once a minute), and a claim planned on statistics that say few jobs are queued sorts every
 * queued job instead of walking the claim index: 120,000 jobs enqueued at once made claims
 * take 250-400 ms each, for the 4 s until the sweeper (every 5 s) analyzed. Looked at once a
 * second; an ANALYZE at most once per ANALYZE_GAP_MS here and, across processes, only when
 * none ran in the last 10 s and none is running (PG_STATS_STALE's lock), outside any
 * transaction. */
#define STATS_LOOK_MS 1000
#define ANALYZE_GAP_MS 10000

struct pg_stats {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
    int stop;          /* under mu */
    int64_t analyze_after_ms;
};

/* Analyze the jobs table when its statistics are stale (and not within ANALYZE_GAP_MS of the
 * last time here). A failure is logged and tried again at the next look. */
static void refresh(struct pg_store *st, struct pg_stats *ps)
{
    if (clock_mono_ms() < ps->analyze_after_ms)
        return;
    struct pg_conn *c = NULL;
    if (pg_pool_take(st, &c) != STORE_OK)
        return;
    enum store_result r;
    PGresult *res = pg_conn_exec(c, PG_STATS_STALE, 0, NULL, "stats", &r);
    int stale = res && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    if (stale) { /* this session holds PG_STATS_KEY */
        ps->analyze_after_ms = clock_mono_ms() + ANALYZE_GAP_MS;
        if (pg_command(c, "ANALYZE jobq_jobs", "analyze") == STORE_OK)
            log_debug("postgresql: the jobs table's statistics were stale: analyzed");
        /* A connection that failed is closed, which ends its session's lock too. */
        pg_command(c, "SELECT pg_advisory_unlock(" PG_STATS_KEY ")", "analyze unlock");
    }
    pg_pool_give(st, c);
}

static void *stats_main(void *arg)
{
    struct pg_store *st = arg;
    struct pg_stats *ps = st->stats;
    pthread_mutex_lock(&ps->mu);
    while (!ps->stop) {
        int64_t at = clock_mono_us() + STATS_LOOK_MS * 1000;
        struct timespec ts = clock_ts_us(at);
        while (!ps->stop && pthread_cond_timedwait(&ps->cv, &ps->mu, &ts) != ETIMEDOUT) {
        }
        if (ps->stop || atomic_load(&st->abandoned))
            break;
        pthread_mutex_unlock(&ps->mu);
        refresh(st, ps);
        pthread_mutex_lock(&ps->mu);
    }
    pthread_mutex_unlock(&ps->mu);
    return NULL;
}

int pg_stats_start(struct pg_store *st)
{
    struct pg_stats *ps = calloc(1, sizeof *ps);
    if (!ps) {
        log_error("out of memory for the statistics thread");
        return -1;
    }
    pthread_mutex_init(&ps->mu, NULL);
    clock_cond_init(&ps->cv);
    st->stats = ps;
    int rc = pthread_create(&ps->thread, NULL, stats_main, st);
    if (rc != 0) {
        log_error("cannot start the statistics thread: %s", strerror(rc));
        pthread_cond_destroy(&ps->cv);
        pthread_mutex_destroy(&ps->mu);
        free(ps);
        st->stats = NULL;
        return -1;
    }
    return 0;
}

void pg_stats_stop(struct pg_store *st)
{
    struct pg_stats *ps = st->stats;
    if (!ps)
        return;
    pthread_mutex_lock(&ps->mu);
    ps->stop = 1;
    pthread_cond_signal(&ps->cv);
    pthread_mutex_unlock(&ps->mu);
    pthread_join(ps->thread, NULL);
    pthread_cond_destroy(&ps->cv);
    pthread_mutex_destroy(&ps->mu);
    free(ps);
    st->stats = NULL;
}
