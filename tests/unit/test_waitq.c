#include <dirent.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "testlib.h"
#include "waitq.h"

/* A stand-in for a parked request: counts suspend and wake calls. */
struct fake_req {
    struct waiter w;
    atomic_int suspended;
    atomic_int woken;
    int64_t woken_at_ms;
};

static void fake_suspend(void *arg)
{
    struct fake_req *r = arg;
    atomic_fetch_add(&r->suspended, 1);
}

static void fake_wake(void *arg)
{
    struct fake_req *r = arg;
    r->woken_at_ms = clock_mono_ms();
    atomic_fetch_add(&r->woken, 1);
}

static void fake_init(struct fake_req *r, const char *const *queues, size_t n, int64_t wait_ms)
{
    memset(r, 0, sizeof *r);
    r->w.queues = queues;
    r->w.nqueues = n;
    r->w.deadline_ms = clock_mono_ms() + wait_ms;
    r->w.wake = fake_wake;
    r->w.arg = r;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Poll until *counter reaches want or timeout_ms passes; returns the final value. */
static int wait_count(atomic_int *counter, int want, int timeout_ms)
{
    int64_t end = clock_mono_ms() + timeout_ms;
    while (atomic_load(counter) < want && clock_mono_ms() < end)
        sleep_ms(2);
    return atomic_load(counter);
}

static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* n waiters on queues, each armed and parked with a wait of wait_ms(i): a calloc'ed array
 * (the caller frees it), or NULL when one could not park. */
static struct fake_req *park_many(struct waitq *q, int n, const char *const *queues,
                                  int64_t (*wait_ms)(int i))
{
    struct fake_req *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; r && i < n; i++) {
        fake_init(&r[i], queues, 1, wait_ms(i));
        if (waitq_arm(q, &r[i].w) != 0 || waitq_park(q, &r[i].w, fake_suspend, &r[i]) != 0) {
            free(r);
            return NULL;
        }
    }
    return r;
}

static int64_t wait_spread(int i)
{
    return 30000 + i; /* spread deadlines: the deadline thread keeps re-planning */
}

static int64_t wait_expiring(int i)
{
    return 50 + (i % 50) * 3;
}

static int64_t wait_long(int i)
{
    (void)i;
    return 60000;
}

static int64_t wait_shuffled(int i)
{
    return 40 + (i * 37) % 400; /* deadlines out of arming order */
}

TEST(notify_wakes_only_matching_queues)
{
    static const char *const qa[] = {"a"};
    static const char *const qbc[] = {"b", "c"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req r1, r2;
    fake_init(&r1, qa, 1, 60000);
    fake_init(&r2, qbc, 2, 60000);
    CHECK_INT(waitq_arm(q, &r1.w), 0);
    CHECK_INT(waitq_arm(q, &r2.w), 0);
    CHECK_INT(waitq_park(q, &r1.w, fake_suspend, &r1), 0);
    CHECK_INT(waitq_park(q, &r2.w, fake_suspend, &r2), 0);
    CHECK_INT(atomic_load(&r1.suspended), 1);
    CHECK_INT(atomic_load(&r2.suspended), 1);
    CHECK_INT(waitq_parked(q), 2);

    waitq_notify(q, "x");
    waitq_notify(q, "ab"); /* whole names only */
    CHECK_INT(waitq_parked(q), 2);
    waitq_notify(q, "c");
    CHECK_INT(atomic_load(&r2.woken), 1);
    CHECK_INT(atomic_load(&r1.woken), 0);
    CHECK_INT(waitq_parked(q), 1);
    waitq_notify(q, "c"); /* woken once only */
    CHECK_INT(atomic_load(&r2.woken), 1);
    waitq_notify(q, "a");
    CHECK_INT(atomic_load(&r1.woken), 1);
    CHECK_INT(waitq_parked(q), 0);
    waitq_free(q);
    CHECK_INT(atomic_load(&r1.woken), 1);
    CHECK_INT(atomic_load(&r2.woken), 1);
}

TEST(signal_between_arm_and_park)
{
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req r;
    fake_init(&r, qa, 1, 60000);
    CHECK_INT(waitq_arm(q, &r.w), 0);
    waitq_notify(q, "a");
    CHECK_INT(waitq_park(q, &r.w, fake_suspend, &r), 1);
    CHECK_INT(atomic_load(&r.suspended), 0);
    CHECK_INT(atomic_load(&r.woken), 0);
    CHECK_INT(waitq_parked(q), 0);

    /* Armed again, an unrelated notify does not count. */
    CHECK_INT(waitq_arm(q, &r.w), 0);
    waitq_notify(q, "b");
    CHECK_INT(waitq_park(q, &r.w, fake_suspend, &r), 0);
    CHECK_INT(atomic_load(&r.suspended), 1);
    waitq_notify(q, "a");
    CHECK_INT(atomic_load(&r.woken), 1);
    waitq_free(q);
}

TEST(disarm_removes)
{
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req r1, r2;
    fake_init(&r1, qa, 1, 60000);
    fake_init(&r2, qa, 1, 50);
    CHECK_INT(waitq_arm(q, &r1.w), 0);
    waitq_disarm(q, &r1.w);
    waitq_disarm(q, &r1.w); /* twice is fine */
    waitq_notify(q, "a");
    CHECK_INT(atomic_load(&r1.woken), 0);

    /* Armed twice: linked once, so one disarm leaves nothing behind. */
    CHECK_INT(waitq_arm(q, &r1.w), 0);
    CHECK_INT(waitq_arm(q, &r1.w), 0);
    waitq_disarm(q, &r1.w);
    waitq_notify(q, "a");
    CHECK_INT(waitq_arm(q, &r1.w), 0);
    CHECK_INT(waitq_park(q, &r1.w, fake_suspend, &r1), 0); /* no stale signal */
    waitq_notify(q, "a");
    CHECK_INT(atomic_load(&r1.woken), 1);

    /* A parked waiter whose request goes away is never woken afterwards. */
    CHECK_INT(waitq_arm(q, &r2.w), 0);
    CHECK_INT(waitq_park(q, &r2.w, fake_suspend, &r2), 0);
    waitq_disarm(q, &r2.w);
    CHECK_INT(waitq_parked(q), 0);
    sleep_ms(150);
    waitq_notify(q, "a");
    waitq_free(q);
    CHECK_INT(atomic_load(&r2.woken), 0);
}

TEST(deadline_expiry_wakes)
{
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req slow, fast;
    fake_init(&slow, qa, 1, 5000);
    CHECK_INT(waitq_arm(q, &slow.w), 0);
    CHECK_INT(waitq_park(q, &slow.w, fake_suspend, &slow), 0);
    sleep_ms(50); /* let the deadline thread go to sleep towards slow's deadline */
    /* Parked second with an earlier deadline: the deadline thread must re-plan. */
    int64_t start = clock_mono_ms();
    fake_init(&fast, qa, 1, 150);
    CHECK_INT(waitq_arm(q, &fast.w), 0);
    CHECK_INT(waitq_park(q, &fast.w, fake_suspend, &fast), 0);
    CHECK_INT(wait_count(&fast.woken, 1, 3000), 1);
    int64_t took = fast.woken_at_ms - start;
    CHECK(took >= 150);
    CHECK(took < 1000);
    CHECK_INT(atomic_load(&slow.woken), 0);
    CHECK_INT(waitq_parked(q), 1);

    /* A deadline already past at park time: look again, no suspend. */
    struct fake_req late;
    fake_init(&late, qa, 1, -1);
    CHECK_INT(waitq_arm(q, &late.w), 0);
    CHECK_INT(waitq_park(q, &late.w, fake_suspend, &late), 1);
    CHECK_INT(atomic_load(&late.suspended), 0);
    waitq_free(q);
    CHECK_INT(atomic_load(&slow.woken), 1);
}

TEST(shutdown_wakes_all_and_refuses)
{
    static const char *const qa[] = {"a"};
    static const char *const qb[] = {"b"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req r[3], armed_only;
    for (int i = 0; i < 3; i++) {
        fake_init(&r[i], i ? qa : qb, 1, 60000);
        CHECK_INT(waitq_arm(q, &r[i].w), 0);
        CHECK_INT(waitq_park(q, &r[i].w, fake_suspend, &r[i]), 0);
    }
    fake_init(&armed_only, qa, 1, 60000);
    CHECK_INT(waitq_arm(q, &armed_only.w), 0);
    CHECK_INT(waitq_closing(q), 0);
    waitq_shutdown(q);
    CHECK_INT(waitq_closing(q), 1);
    for (int i = 0; i < 3; i++)
        CHECK_INT(atomic_load(&r[i].woken), 1);
    CHECK_INT(waitq_parked(q), 0);
    /* The one between arm and park must not park now. */
    CHECK_INT(waitq_park(q, &armed_only.w, fake_suspend, &armed_only), 1);
    struct fake_req after;
    fake_init(&after, qa, 1, 60000);
    CHECK_INT(waitq_arm(q, &after.w), -1);
    waitq_shutdown(q); /* idempotent */
    waitq_free(q);
    for (int i = 0; i < 3; i++)
        CHECK_INT(atomic_load(&r[i].woken), 1);
}

TEST(many_parked_use_no_thread)
{
    enum { N = 500 };
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    int before = thread_count();
    CHECK(before >= 2); /* main + the deadline thread */
    struct fake_req *r = park_many(q, N, qa, wait_spread);
    CHECK(r != NULL);
    CHECK_INT(waitq_parked(q), N);
    CHECK_INT(thread_count(), before);
    waitq_notify(q, "a");
    CHECK_INT(waitq_parked(q), 0);
    int woken = 0;
    for (int i = 0; i < N; i++)
        woken += atomic_load(&r[i].woken);
    CHECK_INT(woken, N);
    waitq_free(q);
    free(r);
}

TEST(expiry_of_many)
{
    enum { N = 300 };
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req *r = park_many(q, N, qa, wait_expiring);
    CHECK(r != NULL);
    int64_t end = clock_mono_ms() + 3000;
    while (waitq_parked(q) > 0 && clock_mono_ms() < end)
        sleep_ms(5);
    size_t left = waitq_parked(q);
    int early = 0, woken = 0;
    for (int i = 0; i < N; i++) {
        woken += atomic_load(&r[i].woken);
        early += atomic_load(&r[i].woken) && r[i].woken_at_ms < r[i].w.deadline_ms;
    }
    waitq_free(q);
    free(r);
    CHECK_INT(left, 0);
    CHECK_INT(woken, N);
    CHECK_INT(early, 0);
}

TEST(notify_some_wakes_as_many_as_jobs)
{
    static const char *const qa[] = {"a"};
    static const char *const qab[] = {"a", "b"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    enum { N = 5 };
    struct fake_req r[N], multi, armed;
    for (int i = 0; i < N; i++) {
        fake_init(&r[i], qa, 1, 60000);
        CHECK_INT(waitq_arm(q, &r[i].w), 0);
        CHECK_INT(waitq_park(q, &r[i].w, fake_suspend, &r[i]), 0);
    }
    fake_init(&multi, qab, 2, 60000);
    CHECK_INT(waitq_arm(q, &multi.w), 0);
    CHECK_INT(waitq_park(q, &multi.w, fake_suspend, &multi), 0);
    fake_init(&armed, qa, 1, 60000);
    CHECK_INT(waitq_arm(q, &armed.w), 0);

    /* Two jobs: the two oldest single-queue waiters, the multi-queue one (it may take a job of
     * b instead), and the armed one looks again at its park. */
    waitq_notify_some(q, "a", 2);
    CHECK_INT(atomic_load(&r[0].woken), 1);
    CHECK_INT(atomic_load(&r[1].woken), 1);
    CHECK_INT(atomic_load(&r[2].woken), 0);
    CHECK_INT(atomic_load(&multi.woken), 1);
    CHECK_INT(waitq_park(q, &armed.w, fake_suspend, &armed), 1);
    CHECK_INT(waitq_parked(q), N - 2);
    waitq_notify_some(q, "b", 5); /* nobody waits on b alone now */
    CHECK_INT(waitq_parked(q), N - 2);
    waitq_notify_some(q, "a", 1);
    CHECK_INT(atomic_load(&r[2].woken), 1);
    CHECK_INT(atomic_load(&r[3].woken), 0);
    waitq_notify_some(q, "a", 0);
    CHECK_INT(waitq_parked(q), N - 3);
    waitq_notify(q, "a"); /* everybody else */
    CHECK_INT(waitq_parked(q), 0);
    for (int i = 0; i < N; i++)
        CHECK_INT(atomic_load(&r[i].woken), 1);
    waitq_free(q);
}

/* A notify costs the waiters of its queue, not every parked waiter: 20,000 notifies of a
 * queue nobody waits on, with 20,000 waiters parked on another, take a few hash lookups each
 * (a scan of every waiter per notify would be 400 million comparisons: seconds). */
TEST(notify_visits_only_its_queue)
{
    enum { N = 20000 };
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req *r = park_many(q, N, qa, wait_long);
    CHECK(r != NULL);
    int64_t t0 = clock_mono_ms();
    for (int i = 0; i < N; i++)
        waitq_notify(q, "b");
    int64_t took = clock_mono_ms() - t0;
    CHECK_INT(waitq_parked(q), N);
    CHECK(took < 250);
    waitq_notify_some(q, "a", 3);
    CHECK_INT(waitq_parked(q), N - 3);
    CHECK_INT(atomic_load(&r[0].woken) + atomic_load(&r[1].woken) + atomic_load(&r[2].woken), 3);
    waitq_free(q); /* wakes the rest */
    free(r);
}

/* A waiter on several queues (one named twice) is woken once, by whichever queue gets a job
 * first; its places in the other queues go with it. */
TEST(waiter_on_several_queues_wakes_once)
{
    static const char *const qs[] = {"x", "y", "x", "z"};
    static const char *const qy[] = {"y"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req multi, single;
    fake_init(&multi, qs, 4, 60000);
    fake_init(&single, qy, 1, 60000);
    CHECK_INT(waitq_arm(q, &multi.w), 0);
    CHECK_INT(waitq_park(q, &multi.w, fake_suspend, &multi), 0);
    CHECK_INT(waitq_arm(q, &single.w), 0);
    CHECK_INT(waitq_park(q, &single.w, fake_suspend, &single), 0);
    waitq_notify(q, "x");
    CHECK_INT(atomic_load(&multi.woken), 1);
    CHECK_INT(waitq_parked(q), 1);
    waitq_notify(q, "z"); /* multi is gone from z: nothing to wake */
    waitq_notify(q, "y");
    CHECK_INT(atomic_load(&multi.woken), 1);
    CHECK_INT(atomic_load(&single.woken), 1);
    CHECK_INT(waitq_parked(q), 0);
    /* Re-armed on the same queues, it is found again. */
    CHECK_INT(waitq_arm(q, &multi.w), 0);
    CHECK_INT(waitq_park(q, &multi.w, fake_suspend, &multi), 0);
    waitq_notify(q, "z");
    CHECK_INT(atomic_load(&multi.woken), 2);
    /* No queue, or too many: not armed. */
    struct fake_req none;
    fake_init(&none, qy, 0, 60000);
    CHECK_INT(waitq_arm(q, &none.w), -1);
    fake_init(&none, qy, JOB_QUEUES_MAX + 1, 60000);
    CHECK_INT(waitq_arm(q, &none.w), -1);
    waitq_free(q);
}

/* Waiters disarmed from the middle of the deadline heap never wake; the others wake at their
 * deadlines, never before. */
TEST(disarm_keeps_deadline_order)
{
    enum { N = 200 };
    static const char *const qa[] = {"a"};
    struct waitq *q = waitq_new(0);
    CHECK(q != NULL);
    struct fake_req *r = park_many(q, N, qa, wait_shuffled);
    CHECK(r != NULL);
    for (int i = 0; i < N; i += 3)
        waitq_disarm(q, &r[i].w);
    int64_t end = clock_mono_ms() + 3000;
    while (waitq_parked(q) > 0 && clock_mono_ms() < end)
        sleep_ms(5);
    size_t left = waitq_parked(q);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int woke = atomic_load(&r[i].woken);
        bad += i % 3 == 0 ? woke != 0 : woke != 1 || r[i].woken_at_ms < r[i].w.deadline_ms;
    }
    waitq_free(q);
    free(r);
    CHECK_INT(left, 0);
    CHECK_INT(bad, 0);
}

TEST_MAIN(TEST_ENTRY(notify_wakes_only_matching_queues), TEST_ENTRY(signal_between_arm_and_park),
          TEST_ENTRY(disarm_removes), TEST_ENTRY(deadline_expiry_wakes),
          TEST_ENTRY(shutdown_wakes_all_and_refuses), TEST_ENTRY(many_parked_use_no_thread),
          TEST_ENTRY(expiry_of_many), TEST_ENTRY(notify_some_wakes_as_many_as_jobs),
          TEST_ENTRY(notify_visits_only_its_queue), TEST_ENTRY(waiter_on_several_queues_wakes_once),
          TEST_ENTRY(disarm_keeps_deadline_order))
