/* counters: per-queue job counters (what counts, the overflow label) and the throughput ring;
 * what a store call counts (store_count_call). Store calls are made up here; test_store_counters.c runs real ones on both backends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "store.h"
#include "test_counters_util.h"
#include "testlib.h"

#define NOW 1700000005LL /* 5 s into a 10 s bucket */

TEST(calls_count_only_what_committed)
{
    counters_reset();
    struct job out[3];
    memset(out, 0, sizeof out);
    out[0].queue = "a";
    out[1].queue = "a";
    out[2].queue = "b";
    int created[3] = {1, 0, 1}; /* the second one was an idempotency hit */
    struct store_call call = {.kind = STORE_CALL_ENQUEUE,
                              .now = NOW,
                              .enqueue = {.n = 3, .out = out, .created = created},
                              .result = STORE_OK};
    store_count_call(&call);
    CHECK_INT(counter_value("a", COUNTER_ENQUEUED), 1);
    CHECK_INT(counter_value("b", COUNTER_ENQUEUED), 1);
    call.result = STORE_BUSY; /* rolled back: nothing */
    store_count_call(&call);
    CHECK_INT(counter_value("a", COUNTER_ENQUEUED), 1);

    call = (struct store_call){.kind = STORE_CALL_CLAIM, .now = NOW, .claim = {.out = out, .n = 2}};
    store_count_call(&call);
    CHECK_INT(counter_value("a", COUNTER_CLAIMED), 2);

    call =
        (struct store_call){.kind = STORE_CALL_COMPLETE, .now = NOW, .complete = {.out = &out[2]}};
    store_count_call(&call);
    call.complete.repeated = 1; /* an idempotent repeat changed nothing */
    store_count_call(&call);
    call.complete.repeated = 0;
    call.result = STORE_LEASE_LOST;
    store_count_call(&call);
    CHECK_INT(counter_value("b", COUNTER_SUCCEEDED), 1);

    out[0].status = JOB_QUEUED;
    out[1].status = JOB_FAILED;
    call = (struct store_call){.kind = STORE_CALL_FAIL, .now = NOW, .fail = {.out = &out[0]}};
    store_count_call(&call);
    call.fail.out = &out[1];
    store_count_call(&call);
    CHECK_INT(counter_value("a", COUNTER_RETRIED), 1);
    CHECK_INT(counter_value("a", COUNTER_FAILED), 1);

    call = (struct store_call){.kind = STORE_CALL_CANCEL, .now = NOW, .cancel = {.out = &out[2]}};
    store_count_call(&call);
    call = (struct store_call){
        .kind = STORE_CALL_HEARTBEAT, .now = NOW, .heartbeat = {.out = &out[2]}};
    store_count_call(&call); /* counted nowhere */
    CHECK_INT(counter_value("b", COUNTER_CANCELLED), 1);
    CHECK_INT(counter_value("b", COUNTER_CLAIMED), 0);

    struct sweep_queue sq[2] = {{"a", 2, 1, 2, 1, 0}, {"c", 1, 0, 0, 1, 3}};
    struct sweep_result res = {.queues = sq, .nqueues = 2};
    counters_sweep(&res, NOW);
    CHECK_INT(counter_value("a", COUNTER_LEASE_EXPIRED), 2);
    CHECK_INT(counter_value("a", COUNTER_TIMED_OUT), 1);
    CHECK_INT(counter_value("a", COUNTER_RETRIED), 3);
    CHECK_INT(counter_value("a", COUNTER_FAILED), 2);
    CHECK_INT(counter_value("c", COUNTER_FAILED), 1);
    CHECK_INT(counter_value("c", COUNTER_LEASE_EXPIRED), 1);
    CHECK_INT(counter_value("c", COUNTER_EXPIRED), 3);
    CHECK_INT(counter_value("a", COUNTER_EXPIRED), 0);
    counters_reset();
}

TEST(queues_past_the_limit_share_the_overflow_row)
{
    counters_reset();
    char name[32];
    for (int i = 0; i < COUNTERS_QUEUES_MAX; i++) {
        snprintf(name, sizeof name, "q%05d", i);
        counters_add(name, COUNTER_ENQUEUED, 1, NOW);
    }
    CHECK_INT(counter_value(COUNTERS_OTHER, COUNTER_ENQUEUED), -1);
    counters_add("late-1", COUNTER_ENQUEUED, 2, NOW);
    counters_add("late-2", COUNTER_CLAIMED, 1, NOW);
    counters_add("q00042", COUNTER_ENQUEUED, 1, NOW); /* a known queue keeps its row */
    size_t n = 0;
    struct counters_row *rows = counters_snapshot(&n);
    CHECK(rows != NULL);
    CHECK_INT(n, COUNTERS_QUEUES_MAX + 1);
    CHECK_STR(rows[0].queue, COUNTERS_OTHER); /* first: sorted by name */
    CHECK_INT(rows[0].v[COUNTER_ENQUEUED], 2);
    CHECK_INT(rows[0].v[COUNTER_CLAIMED], 1);
    CHECK_STR(rows[1].queue, "q00000");
    CHECK_STR(rows[n - 1].queue, "q09999");
    free(rows);
    CHECK_INT(counter_value("q00042", COUNTER_ENQUEUED), 2);
    CHECK_INT(counter_value("late-1", COUNTER_ENQUEUED), -1);
    counters_reset();
}

TEST(throughput_ring)
{
    counters_reset();
    struct counters_point p[COUNTERS_POINTS];
    counters_throughput(NOW, p);
    CHECK_INT(p[COUNTERS_POINTS - 1].at, NOW - 5);
    CHECK_INT(p[0].at, NOW - 5 - (COUNTERS_POINTS - 1) * COUNTERS_STEP);
    for (int i = 0; i < COUNTERS_POINTS; i++) {
        CHECK_INT(p[i].at, p[0].at + i * COUNTERS_STEP);
        CHECK_INT(p[i].enqueued + p[i].succeeded + p[i].failed, 0);
    }
    counters_add("a", COUNTER_ENQUEUED, 3, NOW);
    counters_add("b", COUNTER_ENQUEUED, 1, NOW + 4); /* the same bucket */
    counters_add("a", COUNTER_SUCCEEDED, 2, NOW - 10);
    counters_add("a", COUNTER_FAILED, 1, NOW - 890); /* the oldest bucket shown */
    counters_add("a", COUNTER_FAILED, 5, NOW - 900); /* older than the ring: only the total */
    counters_add("a", COUNTER_CLAIMED, 7, NOW);      /* not a throughput figure */
    counters_throughput(NOW, p);
    CHECK_INT(p[COUNTERS_POINTS - 1].enqueued, 4);
    CHECK_INT(p[COUNTERS_POINTS - 2].succeeded, 2);
    CHECK_INT(p[0].failed, 1);
    uint64_t total = 0;
    for (int i = 0; i < COUNTERS_POINTS; i++)
        total += p[i].enqueued + p[i].succeeded + p[i].failed;
    CHECK_INT(total, 7);
    CHECK_INT(counter_value("a", COUNTER_FAILED), 6);
    /* Fifteen minutes later the old buckets read as zeros, and their slots serve again. */
    counters_throughput(NOW + 900, p);
    total = 0;
    for (int i = 0; i < COUNTERS_POINTS; i++)
        total += p[i].enqueued + p[i].succeeded + p[i].failed;
    CHECK_INT(total, 0);
    counters_add("a", COUNTER_ENQUEUED, 1, NOW + 900);
    counters_add("a", COUNTER_ENQUEUED, 9, NOW); /* now too old: its slot holds a newer bucket */
    counters_throughput(NOW + 900, p);
    CHECK_INT(p[COUNTERS_POINTS - 1].at, NOW + 895);
    CHECK_INT(p[COUNTERS_POINTS - 1].enqueued, 1);
    counters_reset();
}

TEST_MAIN(TEST_ENTRY(calls_count_only_what_committed),
          TEST_ENTRY(queues_past_the_limit_share_the_overflow_row), TEST_ENTRY(throughput_ring))
