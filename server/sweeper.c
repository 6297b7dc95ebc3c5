#include "sweeper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "counters.h"
#include "log.h"
#include "store.h"

#define SWEEP_BATCH 500       /* rows per transaction (the contract's bound) */
#define SWEEP_MAX_BATCHES 100 /* batches per tick before yielding to request writers */
#define SWEEP_YIELD_MS 50     /* pause after a tick that hit SWEEP_MAX_BATCHES */

struct sweeper {
    struct store *store;
    int64_t interval_ms;
    int64_t retention;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    atomic_int stop;
    int64_t poke_at;      /* earliest run_at poked since the last sweep began; INT64_MAX: none */
    int64_t published_ms; /* clock_mono_ms() of the last throughput publish */
};

/* This process's throughput buckets go to the shared store at most this often (GET
 * /stats/throughput on another process lags by at most this, or one sweep interval). */
#define PUBLISH_EVERY_MS 5000

/* Publish the throughput buckets when PUBLISH_EVERY_MS passed (a store that is not shared
 * ignores it). A failure is logged and tried again next time. */
static void publish(struct sweeper *sw, int64_t now)
{
    int64_t mono = clock_mono_ms();
    if (mono - sw->published_ms < PUBLISH_EVERY_MS)
        return;
    sw->published_ms = mono;
    struct counters_point pts[COUNTERS_POINTS];
    counters_throughput(now, pts);
    enum store_result r = store_throughput_publish(sw->store, now, pts, COUNTERS_POINTS);
    if (r != STORE_OK)
        log_warn("sweeper: cannot publish the throughput: %s", store_result_name(r));
}

enum tick { TICK_DONE, TICK_MORE, TICK_ERROR };

static int full_batch(const struct sweep_result *r)
{
    return r->requeued + r->failed >= SWEEP_BATCH || r->deleted >= SWEEP_BATCH ||
           r->promoted >= SWEEP_BATCH || r->expired >= SWEEP_BATCH || r->lanes >= SWEEP_BATCH ||
           r->claims >= SWEEP_BATCH || r->visited >= SWEEP_BATCH || r->events >= SWEEP_BATCH;
}

/* One tick: store_sweep() in bounded batches while a batch came back full. */
static enum tick sweep_tick(struct sweeper *sw, int64_t now)
{
    struct sweep_result total = {0};
    enum tick result = TICK_MORE;
    int batches = 0;
    while (batches < SWEEP_MAX_BATCHES && !atomic_load(&sw->stop)) {
        struct sweep_result r = {0};
        enum store_result rc = store_sweep(sw->store, now, sw->retention, SWEEP_BATCH, &r);
        batches++;
        if (rc != STORE_OK) {
            log_warn("sweep failed: %s; retrying in %lld ms", store_result_name(rc),
                     (long long)sw->interval_ms);
            result = TICK_ERROR;
            break;
        }
        total.requeued += r.requeued;
        total.failed += r.failed;
        total.deleted += r.deleted;
        total.promoted += r.promoted;
        total.expired += r.expired;
        total.lanes += r.lanes;
        total.claims += r.claims;
        total.events += r.events;
        if (!full_batch(&r)) {
            result = TICK_DONE;
            break;
        }
    }
    if (total.requeued || total.failed || total.deleted || total.promoted || total.expired ||
        total.lanes || total.claims || total.events)
        log_debug("sweep: promoted %d, requeued %d, failed %d, expired %d, deleted %d, lanes "
                  "dropped %d, key claims deleted %d, events deleted %d in %d batch%s%s",
                  total.promoted, total.requeued, total.failed, total.expired, total.deleted,
                  total.lanes, total.claims, total.events, batches, batches == 1 ? "" : "es",
                  result == TICK_MORE ? ", more to do" : "");
    return result;
}

/* Wait, lock held, until stop, the next sweep (next_sweep_ms, monotonic), or the start of the
 * epoch second of the earliest due run_at or poke that is later than `swept` (the second
 * just swept: anything due then was handled, or failed and waits for the interval). */
static void wait_for_work(struct sweeper *sw, int64_t next_sweep_ms, int64_t due, int64_t swept)
{
    while (!atomic_load(&sw->stop)) {
        int64_t mono = clock_mono_ms();
        int64_t wake = next_sweep_ms;
        int64_t target = sw->poke_at;
        if (due != JOB_NONE && due < target)
            target = due;
        if (target != INT64_MAX) {
            if (target <= swept)
                target = swept + 1;
            int64_t wait_ms = target * 1000 - clock_now_ms();
            if (mono + wait_ms < wake)
                wake = mono + (wait_ms > 0 ? wait_ms : 0);
        }
        if (mono >= wake)
            return;
        struct timespec ts = clock_ts_ms(wake);
        pthread_cond_timedwait(&sw->cond, &sw->mu, &ts);
    }
}

static void *sweeper_main(void *arg)
{
    struct sweeper *sw = arg;
    pthread_mutex_lock(&sw->mu);
    while (!atomic_load(&sw->stop)) {
        /* Pokes from now on are kept; jobs scheduled before now are seen by next_due. */
        sw->poke_at = INT64_MAX;
        pthread_mutex_unlock(&sw->mu);

        int64_t now = clock_now();
        enum tick t = sweep_tick(sw, now);
        publish(sw, now);
        int64_t due = JOB_NONE;
        if (t != TICK_ERROR) {
            enum store_result rc = store_next_due(sw->store, &due);
            if (rc != STORE_OK) {
                log_warn("sweeper: cannot read the next run_at: %s", store_result_name(rc));
                due = JOB_NONE;
            }
        }
        int64_t next_sweep = clock_mono_ms() + (t == TICK_MORE ? SWEEP_YIELD_MS : sw->interval_ms);

        pthread_mutex_lock(&sw->mu);
        wait_for_work(sw, next_sweep, due, now);
    }
    pthread_mutex_unlock(&sw->mu);
    return NULL;
}

struct sweeper *sweeper_start(struct store *s, int64_t interval, int64_t retention)
{
    struct sweeper *sw = calloc(1, sizeof *sw);
    if (!sw) {
        log_error("sweeper: out of memory");
        return NULL;
    }
    sw->store = s;
    sw->interval_ms = (interval > 0 ? interval : 1) * 1000;
    sw->retention = retention;
    sw->poke_at = INT64_MAX;
    atomic_init(&sw->stop, 0);
    pthread_mutex_init(&sw->mu, NULL);
    clock_cond_init(&sw->cond);
    int rc = pthread_create(&sw->thread, NULL, sweeper_main, sw);
    if (rc != 0) {
        log_error("sweeper: cannot start its thread: %s", strerror(rc));
        pthread_cond_destroy(&sw->cond);
        pthread_mutex_destroy(&sw->mu);
        free(sw);
        return NULL;
    }
    return sw;
}

void sweeper_poke(struct sweeper *sw, int64_t run_at)
{
    if (!sw)
        return;
    pthread_mutex_lock(&sw->mu);
    if (run_at < sw->poke_at) {
        sw->poke_at = run_at;
        pthread_cond_signal(&sw->cond);
    }
    pthread_mutex_unlock(&sw->mu);
}

void sweeper_stop(struct sweeper *sw)
{
    if (!sw)
        return;
    pthread_mutex_lock(&sw->mu);
    atomic_store(&sw->stop, 1);
    pthread_cond_signal(&sw->cond);
    pthread_mutex_unlock(&sw->mu);
    pthread_join(sw->thread, NULL);
    pthread_cond_destroy(&sw->cond);
    pthread_mutex_destroy(&sw->mu);
    free(sw);
}
