#include "ticker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "sched_rule.h"
#include "store.h"

#define TICKER_READ 100   /* schedules read per look */
#define CATCH_UP_ALL 1000 /* catch_up "all": jobs enqueued at most for the ticks missed */
#define MISSED_SCAN 100000 /* missed ticks counted one by one at most (the rest are dropped) */

static atomic_uint_fast64_t n_enqueued, n_skipped, n_missed;

struct ticker {
    struct store *store;
    const struct ticker_spec_fns *fns;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    atomic_int stop;
    /* The missed window on the store's clock: ticks in (seen_before + TICKER_GRACE, first)
     * came due while no ticker ran. first is JOB_NONE until this ticker's first pass. */
    int64_t seen_before;
    int64_t first;
};

/* What one tick write does: the tick whose job is enqueued (JOB_NONE: none), the schedule's
 * next run after it, and how many ticks catch_up dropped. */
struct tick_plan {
    int64_t tick;
    int64_t next;
    uint64_t missed;
};

/* 1 when tick t came due while no ticker ran. */
static int missed(const struct ticker *tk, int64_t t)
{
    if (t >= tk->first)
        return 0;
    return tk->seen_before == JOB_NONE || t > tk->seen_before + TICKER_GRACE;
}

/* The plan of the write for schedule s, whose next_run_at is due. Missed ticks are counted
 * one by one, at most MISSED_SCAN in one plan: the plan of a longer run of them drops what it
 * counted and leaves the rest to the next write. */
static struct tick_plan plan_of(const struct ticker *tk, const struct store_schedule *s,
                                const struct sched_rule *rule)
{
    int64_t t = s->next_run_at;
    struct tick_plan p = {.tick = t, .next = sched_rule_next(rule, t)};
    if (!missed(tk, t))
        return p;
    /* The missed ticks from t on, the newest CATCH_UP_ALL + 1 of them in a ring. */
    int64_t ring[CATCH_UP_ALL + 1];
    uint64_t k = 0;
    int64_t u = t, last = t;
    for (; u != JOB_NONE && missed(tk, u) && k < MISSED_SCAN; u = sched_rule_next(rule, u)) {
        ring[k % (CATCH_UP_ALL + 1)] = last = u;
        k++;
    }
    int final = u == JOB_NONE || !missed(tk, u); /* the run of missed ticks ends at last */
    switch (s->catch_up) {
    case STORE_CATCH_UP_NONE:
        return (struct tick_plan){.tick = JOB_NONE, .next = u, .missed = k};
    case STORE_CATCH_UP_LATEST:
        if (!final) /* keep the last one counted: it may be the latest */
            return (struct tick_plan){.tick = JOB_NONE, .next = last, .missed = k - 1};
        return (struct tick_plan){.tick = last, .next = u, .missed = k - 1};
    default:
        if (k <= CATCH_UP_ALL)
            return p; /* one by one, oldest first */
        /* Drop all but the newest CATCH_UP_ALL counted, which then go one by one. */
        return (struct tick_plan){.tick = JOB_NONE,
                                  .next = ring[(k - CATCH_UP_ALL) % (CATCH_UP_ALL + 1)],
                                  .missed = k - CATCH_UP_ALL};
    }
}

/* Run one tick write for schedule s (due at now, the store's clock). Returns 1 when the
 * schedule is due again at once (its next run is not after now), else 0. */
static int tick_one(struct ticker *tk, const struct store_schedule *s, int64_t now)
{
    char why[256];
    struct sched_rule *rule = sched_rule_make(s->cron, s->every_seconds, s->timezone, why,
                                              sizeof why);
    if (!rule) {
        log_warn("schedule %s: %s; not ticking", s->name, why);
        return 0;
    }
    struct tick_plan p = plan_of(tk, s, rule);
    sched_rule_free(rule);
    struct job_spec spec;
    void *hold = NULL;
    char key[JOB_IDENT_MAX + 1];
    if (p.tick != JOB_NONE) {
        if (tk->fns->make(s->job, &spec, &hold) != 0) {
            log_warn("schedule %s: its job body is not a job; not ticking", s->name);
            return 0;
        }
        snprintf(key, sizeof key, "schedule:%s:%lld", s->name, (long long)p.tick);
        spec.idempotency_key = key;
    }
    struct job out = {0};
    struct store_schedule_tick_call t = {.name = s->name,
                                         .rev = s->rev,
                                         .next_run_at = s->next_run_at,
                                         .next = p.next,
                                         .tick = p.tick,
                                         .spec = p.tick != JOB_NONE ? &spec : NULL,
                                         .overlap_skip = s->overlap == STORE_OVERLAP_SKIP,
                                         .out = &out};
    enum store_result r = store_schedule_tick(tk->store, &t, clock_now());
    tk->fns->release(hold);
    if (r == STORE_OK) {
        atomic_fetch_add(&n_missed, p.missed);
        if (t.skipped)
            atomic_fetch_add(&n_skipped, 1);
        else if (t.created)
            atomic_fetch_add(&n_enqueued, 1);
        if (t.job_id)
            log_debug("schedule %s: tick %lld is job %lld", s->name, (long long)p.tick,
                      (long long)t.job_id);
    } else if (r != STORE_CONFLICT) {
        log_warn("schedule %s: tick %lld failed: %s", s->name, (long long)p.tick,
                 store_result_name(r));
    }
    job_clear(&out);
    return r == STORE_OK && p.next != JOB_NONE && p.next <= now;
}

/* One pass. Returns 1 when more ticks are due at once. */
static int pass(struct ticker *tk)
{
    struct store_schedule *rows = NULL;
    size_t n = 0;
    enum store_result r = store_schedules_next(tk->store, TICKER_READ, &rows, &n);
    if (r != STORE_OK) {
        log_warn("ticker: cannot read the schedules: %s", store_result_name(r));
        return 0;
    }
    if (n == 0)
        return 0; /* no schedule ticks: no liveness to keep */
    int64_t seen = JOB_NONE, now = JOB_NONE;
    r = store_schedule_pass(tk->store, clock_now(), &seen, &now);
    if (r != STORE_OK) {
        log_warn("ticker: cannot record its pass: %s", store_result_name(r));
        store_schedules_free(rows, n);
        return 0;
    }
    if (tk->first == JOB_NONE) {
        tk->first = now;
        tk->seen_before = seen;
    }
    size_t i = 0;
    int more = 0;
    for (; i < n && !atomic_load(&tk->stop) && rows[i].next_run_at <= now; i++)
        more |= tick_one(tk, &rows[i], now);
    more |= i == TICKER_READ; /* every schedule read was due: more may be */
    store_schedules_free(rows, n);
    return more;
}

/* Wait, lock held, until stop or the start of the next second of the clock. */
static void wait_next_second(struct ticker *tk)
{
    int64_t wait_ms = 1000 - clock_now_ms() % 1000 + 5;
    int64_t wake = clock_mono_ms() + wait_ms;
    struct timespec until = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
    while (!atomic_load(&tk->stop)) {
        if (pthread_cond_timedwait(&tk->cond, &tk->mu, &until) != 0)
            break;
    }
}

static void *ticker_main(void *arg)
{
    struct ticker *tk = arg;
    int passes = 0;
    while (!atomic_load(&tk->stop)) {
        int more = pass(tk);
        if (more && ++passes < TICKER_TICKS_MAX)
            continue;
        passes = 0;
        pthread_mutex_lock(&tk->mu);
        wait_next_second(tk);
        pthread_mutex_unlock(&tk->mu);
    }
    return NULL;
}

struct ticker *ticker_start(struct store *s, const struct ticker_spec_fns *fns)
{
    struct ticker *tk = calloc(1, sizeof *tk);
    if (!tk) {
        log_error("ticker: out of memory");
        return NULL;
    }
    tk->store = s;
    tk->fns = fns;
    tk->first = tk->seen_before = JOB_NONE;
    atomic_init(&tk->stop, 0);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&tk->mu, NULL);
    pthread_cond_init(&tk->cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&tk->thread, NULL, ticker_main, tk);
    if (rc != 0) {
        log_error("ticker: cannot start its thread: %s", strerror(rc));
        pthread_cond_destroy(&tk->cond);
        pthread_mutex_destroy(&tk->mu);
        free(tk);
        return NULL;
    }
    return tk;
}

void ticker_stop(struct ticker *tk)
{
    if (!tk)
        return;
    pthread_mutex_lock(&tk->mu);
    atomic_store(&tk->stop, 1);
    pthread_cond_signal(&tk->cond);
    pthread_mutex_unlock(&tk->mu);
    pthread_join(tk->thread, NULL);
    pthread_cond_destroy(&tk->cond);
    pthread_mutex_destroy(&tk->mu);
    free(tk);
}

void ticker_counts(struct ticker_counts *out)
{
    out->enqueued = atomic_load(&n_enqueued);
    out->skipped = atomic_load(&n_skipped);
    out->missed = atomic_load(&n_missed);
}
