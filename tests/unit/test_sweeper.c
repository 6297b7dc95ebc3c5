#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "store.h"
#include "sweeper.h"
#include "testlib.h"

/* A fake store that records every sweep: lets the tests drive what store_sweep() and
 * store_next_due() answer and see when the sweeper called them. */
#define MAX_CALLS 512

struct fake_store {
    struct store base;
    pthread_mutex_t mu;
    int calls;
    int64_t call_now[MAX_CALLS];     /* the `now` of each sweep */
    int64_t call_wall_ms[MAX_CALLS]; /* when it ran */
    int full_left;                   /* answer this many full batches (-1: always) */
    enum store_result answer;
    int64_t next_due;
    int stuck; /* 1: next_due stays put, as if promotion never worked */
};

static struct fake_store *fake_of(struct store *s)
{
    return (struct fake_store *)(void *)s;
}

static enum store_result fake_sweep(struct store *s, int64_t now, int64_t retention, int batch,
                                    struct sweep_result *res)
{
    (void)retention;
    struct fake_store *f = fake_of(s);
    pthread_mutex_lock(&f->mu);
    if (f->calls < MAX_CALLS) {
        f->call_now[f->calls] = now;
        f->call_wall_ms[f->calls] = clock_now_ms();
    }
    f->calls++;
    memset(res, 0, sizeof *res);
    if (f->full_left != 0) {
        res->promoted = batch;
        if (f->full_left > 0)
            f->full_left--;
    }
    if (!f->stuck && f->answer == STORE_OK && f->next_due != JOB_NONE && f->next_due <= now)
        f->next_due = JOB_NONE; /* promoted */
    enum store_result r = f->answer;
    pthread_mutex_unlock(&f->mu);
    return r;
}

static enum store_result fake_next_due(struct store *s, int64_t *run_at)
{
    struct fake_store *f = fake_of(s);
    pthread_mutex_lock(&f->mu);
    *run_at = f->next_due;
    pthread_mutex_unlock(&f->mu);
    return STORE_OK;
}

static const struct store_ops fake_ops = {.sweep = fake_sweep, .next_due = fake_next_due};

static struct fake_store *fake_new(void)
{
    struct fake_store *f = calloc(1, sizeof *f);
    f->base.ops = &fake_ops;
    pthread_mutex_init(&f->mu, NULL);
    f->answer = STORE_OK;
    f->next_due = JOB_NONE;
    return f;
}

static int fake_calls(struct fake_store *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->calls;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Poll until the fake saw at least want sweeps or timeout_ms passed. */
static int wait_calls(struct fake_store *f, int want, int timeout_ms)
{
    int64_t end = clock_mono_ms() + timeout_ms;
    while (fake_calls(f) < want && clock_mono_ms() < end)
        sleep_ms(5);
    return fake_calls(f);
}

TEST(sweeps_at_start_then_every_interval)
{
    struct fake_store *f = fake_new();
    struct sweeper *sw = sweeper_start(&f->base, 1, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 1, 500) >= 1);
    CHECK(wait_calls(f, 2, 3000) >= 2);
    sweeper_stop(sw);
    int64_t gap = f->call_wall_ms[1] - f->call_wall_ms[0];
    CHECK(gap >= 900);
    CHECK(gap < 2000);
    free(f);
}

TEST(wakes_at_start_of_next_due_second)
{
    struct fake_store *f = fake_new();
    int64_t due = clock_now() + 2;
    f->next_due = due;
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 2, 4000) >= 2);
    sweeper_stop(sw);
    CHECK_INT(f->call_now[1], due);
    CHECK(f->call_wall_ms[1] >= due * 1000);
    CHECK(f->call_wall_ms[1] < due * 1000 + 500);
    free(f);
}

TEST(poke_wakes_early)
{
    struct fake_store *f = fake_new();
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 1, 500) >= 1);
    int64_t run_at = clock_now() + 1;
    pthread_mutex_lock(&f->mu);
    f->next_due = run_at; /* what a store would now answer */
    pthread_mutex_unlock(&f->mu);
    sweeper_poke(sw, run_at + 30); /* later pokes than the plan change nothing */
    sweeper_poke(sw, run_at);
    CHECK(wait_calls(f, 2, 3000) >= 2);
    sleep_ms(300);
    sweeper_stop(sw);
    CHECK_INT(f->calls, 2);
    CHECK_INT(f->call_now[1], run_at);
    CHECK(f->call_wall_ms[1] >= run_at * 1000);
    CHECK(f->call_wall_ms[1] < run_at * 1000 + 500);
    free(f);
}

TEST(loops_while_batches_are_full)
{
    struct fake_store *f = fake_new();
    f->full_left = 3;
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 4, 2000) >= 4);
    sleep_ms(200);
    sweeper_stop(sw);
    CHECK_INT(f->calls, 4); /* three full batches, then one that was not */
    for (int i = 1; i < 4; i++)
        CHECK_INT(f->call_now[i], f->call_now[0]);
    free(f);
}

TEST(endless_work_is_bounded_and_stop_is_prompt)
{
    struct fake_store *f = fake_new();
    f->full_left = -1;
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    /* 100 batches, a pause, then more: the thread neither stops nor spins unbounded. */
    CHECK(wait_calls(f, 150, 3000) >= 150);
    int64_t t0 = clock_mono_ms();
    sweeper_stop(sw);
    CHECK(clock_mono_ms() - t0 < 500);
    free(f);
}

TEST(store_error_waits_for_interval)
{
    struct fake_store *f = fake_new();
    f->answer = STORE_BUSY;
    f->next_due = clock_now() - 5; /* never promoted: must not spin on it */
    struct sweeper *sw = sweeper_start(&f->base, 1, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 1, 500) >= 1);
    sleep_ms(1500);
    sweeper_stop(sw);
    CHECK(f->calls >= 2);
    CHECK(f->calls <= 3);
    free(f);
}

TEST(stuck_due_does_not_spin)
{
    struct fake_store *f = fake_new();
    f->stuck = 1;
    f->next_due = clock_now() - 5;
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 1, 500) >= 1);
    sleep_ms(1500);
    sweeper_stop(sw);
    /* At most one retry per second for a run_at that a sweep should have promoted. */
    CHECK(f->calls >= 2);
    CHECK(f->calls <= 3);
    free(f);
}

TEST(stop_is_prompt)
{
    struct fake_store *f = fake_new();
    struct sweeper *sw = sweeper_start(&f->base, 3600, 60);
    CHECK(sw != NULL);
    CHECK(wait_calls(f, 1, 500) >= 1);
    int64_t t0 = clock_mono_ms();
    sweeper_stop(sw);
    CHECK(clock_mono_ms() - t0 < 500);
    sweeper_stop(NULL);
    sweeper_poke(NULL, 1);
    free(f);
}

/* With the real SQLite store. */

struct hook_log {
    _Atomic(struct sweeper *) sweeper;
    atomic_llong ready_ms; /* wall ms of the first on_ready for queue "sched", 0: none yet */
};

static void log_ready(void *arg, const char *queue)
{
    struct hook_log *h = arg;
    long long zero = 0;
    if (strcmp(queue, "sched") == 0)
        atomic_compare_exchange_strong(&h->ready_ms, &zero, (long long)clock_now_ms());
}

static void log_scheduled(void *arg, int64_t run_at)
{
    struct hook_log *h = arg;
    sweeper_poke(atomic_load(&h->sweeper), run_at);
}

static struct store *open_real(struct hook_log *h)
{
    struct store_options o;
    memset(&o, 0, sizeof o);
    o.url = "jobq.db";
    o.sqlite.sync_full = 0;
    o.backoff_base = 0; /* a requeued job is due at once */
    o.backoff_max = 0;
    o.sqlite.readers = 1;
    if (h) {
        o.hooks.on_ready = log_ready;
        o.hooks.on_scheduled = log_scheduled;
        o.hooks.ctx = h;
    }
    return store_open(&o);
}

static int64_t enqueue_at(struct store *s, const char *queue, int64_t run_at)
{
    struct job_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.queue = queue;
    sp.payload = "{}";
    sp.run_at = run_at;
    sp.max_attempts = 5;
    sp.max_runtime_seconds = JOB_NONE;
    struct job j;
    int created = 0;
    memset(&j, 0, sizeof j);
    if (store_enqueue(s, &sp, 1, clock_now(), &j, &created) != STORE_OK)
        return -1;
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

/* Claim from queue with lease seconds; returns the id claimed, 0 for none, -1 on error. */
static int64_t claim_from(struct store *s, const char *queue, int64_t lease)
{
    const char *queues[1] = {queue};
    struct claim_req req = {"w1", queues, 1, NULL, lease, 1};
    struct job j;
    size_t n = 0;
    memset(&j, 0, sizeof j);
    if (store_claim(s, &req, clock_now(), &j, &n) != STORE_OK)
        return -1;
    if (n == 0)
        return 0;
    int64_t id = j.id;
    job_clear(&j);
    return id;
}

TEST(real_store_expired_lease_requeued)
{
    struct store *s = open_real(NULL);
    CHECK(s != NULL);
    int64_t id = enqueue_at(s, "q", clock_now());
    CHECK(id > 0);
    CHECK_INT(claim_from(s, "q", 1), id);
    struct sweeper *sw = sweeper_start(s, 1, 3600);
    CHECK(sw != NULL);
    /* The lease dies one second after the claim; one sweep interval later it is back. */
    int64_t end = clock_mono_ms() + 5000;
    struct job j;
    memset(&j, 0, sizeof j);
    enum job_status status = JOB_RUNNING;
    while (clock_mono_ms() < end) {
        CHECK_INT(store_get(s, id, &j), STORE_OK);
        status = j.status;
        if (status != JOB_RUNNING)
            break;
        job_clear(&j);
        sleep_ms(50);
    }
    sweeper_stop(sw);
    CHECK_INT(status, JOB_QUEUED);
    CHECK_STR(j.error_code, "lease_expired");
    CHECK_INT(j.attempts, 1);
    job_clear(&j);
    CHECK_INT(claim_from(s, "q", 30), id);
    store_close(s);
}

TEST(real_store_scheduled_job_ready_at_run_at)
{
    static struct hook_log h;
    atomic_store(&h.sweeper, NULL);
    atomic_store(&h.ready_ms, 0);
    struct store *s = open_real(&h);
    CHECK(s != NULL);
    /* A long interval: only run_at (next_due or the poke) can wake the sweeper in time. */
    struct sweeper *sw = sweeper_start(s, 3600, 3600);
    CHECK(sw != NULL);
    atomic_store(&h.sweeper, sw);
    sleep_ms(100); /* the first sweep is over: the poke is what must wake it */
    int64_t run_at = clock_now() + 2;
    int64_t id = enqueue_at(s, "sched", run_at);
    CHECK(id > 0);
    CHECK_INT(claim_from(s, "sched", 30), 0); /* not due yet */
    int64_t end = clock_mono_ms() + 5000;
    while (atomic_load(&h.ready_ms) == 0 && clock_mono_ms() < end)
        sleep_ms(10);
    long long ready = atomic_load(&h.ready_ms);
    CHECK(ready != 0);
    CHECK(ready >= run_at * 1000);
    CHECK(ready < run_at * 1000 + 500);
    CHECK_INT(claim_from(s, "sched", 30), id);

    int64_t t0 = clock_mono_ms();
    atomic_store(&h.sweeper, NULL);
    sweeper_stop(sw);
    CHECK(clock_mono_ms() - t0 < 500);
    store_close(s);
}

TEST_MAIN(TEST_ENTRY(sweeps_at_start_then_every_interval),
          TEST_ENTRY(wakes_at_start_of_next_due_second), TEST_ENTRY(poke_wakes_early),
          TEST_ENTRY(loops_while_batches_are_full),
          TEST_ENTRY(endless_work_is_bounded_and_stop_is_prompt),
          TEST_ENTRY(store_error_waits_for_interval), TEST_ENTRY(stuck_due_does_not_spin),
          TEST_ENTRY(stop_is_prompt), TEST_ENTRY(real_store_expired_lease_requeued),
          TEST_ENTRY(real_store_scheduled_job_ready_at_run_at))
