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
#include "store_schedule.h"

#define TICKER_READ 100 /* schedules read per look */

static atomic_uint_fast64_t n_enqueued, n_skipped, n_missed;

struct ticker {
    struct store *store;
    const struct ticker_spec_fns *fns;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    atomic_int stop;
    /* The missed window on the store's clock, (down_from, first): schedule_downtime() of
     * what this ticker's first pass read. first is JOB_NONE until that pass. */
    int64_t down_from;
    int64_t first;
};

/* The ticks one schedule enqueues at most in one pass (schedule_plan's cap); the rest are
 * left for the next pass, at once. */
#define PLAN_CAP 16

/* One tick write of schedule s: tick t (JOB_NONE: none) with next_run_at from expect to next.
 * Returns the result; *created and *skipped say what it did. */
static enum store_result write_tick(struct ticker *tk, const struct store_schedule *s,
                                    const struct sched_rule *rule, int64_t rev, int64_t expect,
                                    int64_t t, int64_t next, int *created, int *skipped)
{
    struct job_spec spec;
    void *hold = NULL;
    char key[JOB_IDENT_MAX + 1];
    if (t != JOB_NONE) {
        if (tk->fns->make(s->job, &spec, &hold) != 0) {
            log_warn("schedule %s: its job body is not a job; not ticking", s->name);
            return STORE_ERROR;
        }
        snprintf(key, sizeof key, "schedule:%s:%lld", s->name, (long long)t);
        spec.idempotency_key = key;
    }
    struct job out = {0};
    struct store_schedule_tick_call c = {.name = s->name,
                                         .rev = rev,
                                         .next_run_at = expect,
                                         .next = next,
                                         .tick = t,
                                         .spec = t != JOB_NONE ? &spec : NULL,
                                         .rule = &rule->rule,
                                         .out = &out};
    enum store_result r = store_schedule_tick(tk->store, &c, clock_now());
    tk->fns->release(hold);
    *created = c.created;
    *skipped = c.skipped;
    if (r == STORE_OK && c.job_id)
        log_debug("schedule %s: tick %lld is job %lld", s->name, (long long)t, (long long)c.job_id);
    else if (r != STORE_OK && r != STORE_CONFLICT)
        log_warn("schedule %s: tick %lld failed: %s", s->name, (long long)t, store_result_name(r));
    job_clear(&out);
    return r;
}

/* The writes of schedule s (due at now, the store's clock): what schedule_plan() says, one
 * write per planned tick, the row's next_run_at and rev compared and swapped from one to the
 * next. Returns 1 when the schedule is due again at once (the plan's cap stopped it). */
static int tick_one(struct ticker *tk, const struct store_schedule *s, int64_t now)
{
    char why[256];
    struct sched_rule rule;
    if (sched_rule_of(s, &rule, why, sizeof why) != SCHED_RULE_OK) {
        log_warn("schedule %s: %s; not ticking", s->name, why);
        return 0;
    }
    int64_t ticks[PLAN_CAP];
    struct schedule_plan plan;
    schedule_plan(&rule.rule, rule.tz, s->next_run_at, now, tk->down_from, tk->first, ticks,
                  PLAN_CAP, &plan);
    int64_t last = plan.next_run_at == SCHEDULE_NEVER ? JOB_NONE : plan.next_run_at;
    int64_t rev = s->rev, expect = s->next_run_at;
    enum store_result r = STORE_OK;
    for (size_t i = 0; r == STORE_OK && (i < plan.nticks || i == 0); i++) {
        int64_t t = i < plan.nticks ? ticks[i] : JOB_NONE;
        int64_t next = i + 1 < plan.nticks ? ticks[i + 1] : last;
        int created = 0, skipped = 0;
        r = write_tick(tk, s, &rule, rev, expect, t, next, &created, &skipped);
        if (r != STORE_OK)
            break;
        if (i == 0)
            atomic_fetch_add(&n_missed, (uint64_t)plan.skipped);
        atomic_fetch_add(skipped ? &n_skipped : &n_enqueued, (uint64_t)(skipped || created));
        rev++;
        expect = next;
    }
    sched_rule_clear(&rule);
    if (r == STORE_CONFLICT && expect == s->next_run_at)
        return -1; /* its first write lost: a put, a delete or another ticker came between */
    return r == STORE_OK && plan.more;
}

/* Tick schedule s (due at now), and once more as it is now when its first write lost the
 * compare and swap: a put that came between the read and the write may have kept the tick
 * (schedule_put_next). Returns 1 when the schedule is due again at once. */
static int tick_due(struct ticker *tk, const struct store_schedule *s, int64_t now)
{
    int more = tick_one(tk, s, now);
    if (more >= 0)
        return more;
    struct store_schedule *fresh = NULL;
    size_t n = 0;
    more = 0;
    if (store_schedules(tk->store, s->name, &fresh, &n) == STORE_OK && n == 1 && !fresh->paused &&
        fresh->next_run_at != JOB_NONE && fresh->next_run_at <= now)
        more = tick_one(tk, fresh, now) > 0;
    store_schedules_free(fresh, n);
    return more;
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
    int64_t seen = JOB_NONE, stopped = JOB_NONE, now = JOB_NONE;
    r = store_schedule_pass(tk->store, clock_now(), &seen, &stopped, &now);
    if (r != STORE_OK) {
        log_warn("ticker: cannot record its pass: %s", store_result_name(r));
        store_schedules_free(rows, n);
        return 0;
    }
    if (tk->first == JOB_NONE)
        schedule_downtime(seen == JOB_NONE ? SCHEDULE_NEVER : seen,
                          stopped == JOB_NONE ? SCHEDULE_NEVER : stopped, now, &tk->down_from,
                          &tk->first);
    size_t i = 0;
    int more = 0;
    for (; i < n && !atomic_load(&tk->stop) && rows[i].next_run_at <= now; i++)
        more |= tick_due(tk, &rows[i], now);
    more |= i == TICKER_READ; /* every schedule read was due: more may be */
    store_schedules_free(rows, n);
    return more;
}

/* Wait, lock held, until stop or the start of the next second of the clock. */
static void wait_next_second(struct ticker *tk)
{
    int64_t wait_ms = 1000 - clock_now_ms() % 1000 + 5;
    int64_t wake = clock_mono_ms() + wait_ms;
    struct timespec until = clock_ts_ms(wake);
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
    tk->first = tk->down_from = JOB_NONE;
    atomic_init(&tk->stop, 0);
    pthread_mutex_init(&tk->mu, NULL);
    clock_cond_init(&tk->cond);
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
    if (tk->first != JOB_NONE) {
        enum store_result r = store_schedule_stop(tk->store, clock_now());
        if (r != STORE_OK)
            log_warn("ticker: cannot mark its stop: %s", store_result_name(r));
    }
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
