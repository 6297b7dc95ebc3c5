#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "clock.h"
#include "testlib.h"
#include "workers.h"

#define WAIT_MS 10000 /* every wait below is bounded by this */

/* A gate the test opens; items that find it closed wait at it (bounded). */
static atomic_int gate_open;

/* One item: records how it ran. */
struct item {
    struct work w;
    int gated;            /* wait at the gate before returning */
    atomic_int ran;       /* run calls */
    atomic_int abandoned; /* the flag of the last call */
    atomic_int started;   /* set on entry, before the gate */
    int order;            /* position among the items run (order_next) */
    pthread_t thread;
};

static atomic_int order_next;

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Poll until *v reaches want or WAIT_MS pass; returns the final value. */
static int wait_for(atomic_int *v, int want)
{
    int64_t end = clock_mono_ms() + WAIT_MS;
    while (atomic_load(v) < want && clock_mono_ms() < end)
        sleep_ms(1);
    return atomic_load(v);
}

static void item_run(struct work *w, int abandoned)
{
    struct item *it = (struct item *)w;
    it->thread = pthread_self();
    atomic_store(&it->started, 1);
    if (it->gated && !abandoned)
        wait_for(&gate_open, 1);
    it->order = atomic_fetch_add(&order_next, 1);
    atomic_store(&it->abandoned, abandoned);
    atomic_fetch_add(&it->ran, 1);
}

static void item_init(struct item *it, int gated)
{
    memset(it, 0, sizeof *it);
    it->w.run = item_run;
    it->gated = gated;
}

static void reset(void)
{
    atomic_store(&gate_open, 0);
    atomic_store(&order_next, 0);
}

/* Make items[0..n) (gated or not) and submit them to p. Returns how many were accepted. */
static int submit_items(struct workers *p, struct item *items, int n, int gated)
{
    int accepted = 0;
    for (int i = 0; i < n; i++) {
        item_init(&items[i], gated);
        accepted += workers_submit(p, &items[i].w) == 0;
    }
    return accepted;
}

TEST(start_refuses_out_of_bounds)
{
    CHECK(workers_start(0, 4, "test") == NULL);
    CHECK(workers_start(65, 4, "test") == NULL);
    CHECK(workers_start(1, 0, "test") == NULL);
    struct workers *p = workers_start(64, 1, "test");
    CHECK(p != NULL);
    workers_stop(p);
    workers_stop(NULL);
    workers_abandon(NULL);
}

TEST(items_run_in_order_on_a_pool_thread)
{
    reset();
    struct workers *p = workers_start(1, 16, "test");
    CHECK(p != NULL);
    struct item items[10];
    CHECK_INT(submit_items(p, items, 10, 0), 10);
    CHECK_INT(wait_for(&items[9].ran, 1), 1);
    for (int i = 0; i < 10; i++) {
        CHECK_INT(atomic_load(&items[i].ran), 1);
        CHECK_INT(atomic_load(&items[i].abandoned), 0);
        CHECK_INT(items[i].order, i);
        CHECK(!pthread_equal(items[i].thread, pthread_self()));
    }
    workers_stop(p);
}

TEST(threads_run_items_at_the_same_time)
{
    reset();
    struct workers *p = workers_start(3, 8, "test");
    CHECK(p != NULL);
    struct item items[3];
    CHECK_INT(submit_items(p, items, 3, 1), 3);
    /* All three are inside run at once, each held at the gate. */
    for (int i = 0; i < 3; i++)
        CHECK_INT(wait_for(&items[i].started, 1), 1);
    CHECK_INT(workers_queued(p), 0);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < 3; i++)
        CHECK_INT(wait_for(&items[i].ran, 1), 1);
    workers_stop(p);
}

TEST(submit_past_the_queue_is_refused)
{
    reset();
    struct workers *p = workers_start(1, 4, "test");
    CHECK(p != NULL);
    struct item busy, waiting[4], refused;
    CHECK_INT(submit_items(p, &busy, 1, 1), 1);
    CHECK_INT(wait_for(&busy.started, 1), 1); /* the thread holds it: the queue is empty */
    CHECK_INT(submit_items(p, waiting, 4, 0), 4);
    CHECK_INT(workers_queued(p), 4);
    item_init(&refused, 0);
    CHECK_INT(workers_submit(p, &refused.w), -1);
    atomic_store(&gate_open, 1);
    for (int i = 0; i < 4; i++)
        CHECK_INT(wait_for(&waiting[i].ran, 1), 1);
    CHECK_INT(atomic_load(&refused.ran), 0); /* a refused item is never run */
    /* Room again once the queue drained. */
    CHECK_INT(workers_submit(p, &refused.w), 0);
    CHECK_INT(wait_for(&refused.ran, 1), 1);
    workers_stop(p);
    CHECK_INT(atomic_load(&refused.ran), 1);
}

TEST(abandon_ends_waiting_items_at_once_and_refuses_more)
{
    reset();
    struct workers *p = workers_start(1, 8, "test");
    CHECK(p != NULL);
    struct item busy, waiting[3], late;
    CHECK_INT(submit_items(p, &busy, 1, 1), 1);
    CHECK_INT(wait_for(&busy.started, 1), 1);
    CHECK_INT(submit_items(p, waiting, 3, 1), 3);
    workers_abandon(p); /* the gate is still closed: they must not wait at it */
    for (int i = 0; i < 3; i++) {
        CHECK_INT(atomic_load(&waiting[i].ran), 1);
        CHECK_INT(atomic_load(&waiting[i].abandoned), 1);
        CHECK(pthread_equal(waiting[i].thread, pthread_self()));
        CHECK_INT(waiting[i].order, i);
    }
    CHECK_INT(workers_queued(p), 0);
    item_init(&late, 0);
    CHECK_INT(workers_submit(p, &late.w), -1);
    workers_abandon(p);                   /* idempotent */
    CHECK_INT(atomic_load(&busy.ran), 0); /* the running item goes on */
    atomic_store(&gate_open, 1);
    CHECK_INT(wait_for(&busy.ran, 1), 1);
    CHECK_INT(atomic_load(&busy.abandoned), 0);
    workers_stop(p);
    CHECK_INT(atomic_load(&late.ran), 0);
    for (int i = 0; i < 3; i++)
        CHECK_INT(atomic_load(&waiting[i].ran), 1); /* exactly once */
}

/* Open the gate once *arg (an item's ran) is set, a little later: whoever waits for the
 * running items must have been waiting by then. */
static void *open_gate_after(void *arg)
{
    wait_for(arg, 1);
    sleep_ms(20);
    atomic_store(&gate_open, 1);
    return NULL;
}

TEST(stop_waits_for_running_items_and_abandons_the_rest)
{
    reset();
    struct workers *p = workers_start(2, 8, "test");
    CHECK(p != NULL);
    struct item running[2], waiting;
    CHECK_INT(submit_items(p, running, 2, 1), 2);
    for (int i = 0; i < 2; i++)
        CHECK_INT(wait_for(&running[i].started, 1), 1);
    CHECK_INT(submit_items(p, &waiting, 1, 1), 1);
    pthread_t opener;
    CHECK_INT(pthread_create(&opener, NULL, open_gate_after, &waiting.ran), 0);
    workers_stop(p);
    pthread_join(opener, NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(atomic_load(&running[i].ran), 1); /* over before stop returned */
        CHECK_INT(atomic_load(&running[i].abandoned), 0);
    }
    CHECK_INT(atomic_load(&waiting.ran), 1);
    CHECK_INT(atomic_load(&waiting.abandoned), 1);
}

TEST_MAIN(TEST_ENTRY(start_refuses_out_of_bounds), TEST_ENTRY(items_run_in_order_on_a_pool_thread),
          TEST_ENTRY(threads_run_items_at_the_same_time),
          TEST_ENTRY(submit_past_the_queue_is_refused),
          TEST_ENTRY(abandon_ends_waiting_items_at_once_and_refuses_more),
          TEST_ENTRY(stop_waits_for_running_items_and_abandons_the_rest))
