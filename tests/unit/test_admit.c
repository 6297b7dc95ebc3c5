/* admit_wait (server/admit.h): when the PostgreSQL store's executor starts another group of
 * calls beside those in flight. */
#include "admit.h"
#include "testlib.h"

/* A busy executor on 2 cores: one group in flight, 8 calls waiting, a group takes 3 ms. */
static struct admit_state busy(int64_t rtt_us, int64_t since_us)
{
    return (struct admit_state){.inflight = 1,
                                .queued = 8,
                                .group_max = 64,
                                .group_us = 3000,
                                .rtt_us = rtt_us,
                                .since_start_us = since_us,
                                .cpus = 2};
}

TEST(nothing_waiting_means_nothing_to_start)
{
    struct admit_state s = busy(50, 100000);
    s.queued = 0;
    CHECK_INT(admit_wait(&s), -1);
    s.inflight = 0;
    CHECK_INT(admit_wait(&s), -1);
}

TEST(an_idle_executor_starts_at_once)
{
    struct admit_state s = busy(50, 0);
    s.inflight = 0;
    s.queued = 1;
    CHECK_INT(admit_wait(&s), 0);
}

TEST(enough_calls_waiting_start_another_group_at_once)
{
    struct admit_state s = busy(50, 0);
    s.queued = 64; /* a full group */
    CHECK_INT(admit_wait(&s), 0);
    s.queued = 63;
    CHECK(admit_wait(&s) > 0);
}

/* A round trip small beside the group's time: calls wait for the group in flight (two
 * groups' time), unless it stalls past that. */
TEST(on_a_near_database_calls_wait_for_the_group_in_flight)
{
    struct admit_state s = busy(0, 0);
    CHECK_INT(admit_wait(&s), 6000);
    s.since_start_us = 5000;
    CHECK_INT(admit_wait(&s), 1000);
    s.since_start_us = 6000;
    CHECK_INT(admit_wait(&s), 0); /* stalled: let the others by */
}

/* A round trip of a third of the group's time: another group starts a quarter of the
 * server's part in (2000 / 4). */
TEST(on_a_far_database_groups_overlap)
{
    struct admit_state s = busy(1000, 0);
    CHECK_INT(admit_wait(&s), 500);
    s.since_start_us = 500;
    CHECK_INT(admit_wait(&s), 0);
}

/* Between the two, the hold falls with the round trip's share, never below the far one. */
TEST(the_hold_falls_as_the_round_trip_grows)
{
    int64_t last = 1 << 30;
    for (int64_t rtt = 0; rtt <= 3000; rtt += 50) {
        struct admit_state s = busy(rtt, 0);
        int64_t h = admit_wait(&s);
        CHECK(h <= last);
        CHECK(h >= 0);
        last = h;
    }
    CHECK_INT(last, 0); /* a group's time all round trip: overlap at once */
}

/* On a host of many cores a group in flight leaves most of the database's cores idle: groups
 * start at once until half the cores have one. */
TEST(more_cores_start_more_groups_at_once)
{
    CHECK_INT(admit_free(0), 1); /* unknown: as one core */
    CHECK_INT(admit_free(2), 1);
    CHECK_INT(admit_free(3), 1);
    CHECK_INT(admit_free(4), 2);
    CHECK_INT(admit_free(16), 8);
    struct admit_state s = busy(0, 0);
    s.cpus = 16;
    s.queued = 1;
    for (s.inflight = 1; s.inflight < 8; s.inflight++)
        CHECK_INT(admit_wait(&s), 0);
    CHECK(admit_wait(&s) > 0); /* 8 in flight: the hold */
    s.cpus = 2;
    s.inflight = 1;
    CHECK(admit_wait(&s) > 0); /* 2 cores: one in flight already holds */
}

/* Past the groups that start at once, more cores hold less. */
TEST(more_cores_hold_less)
{
    struct admit_state s = busy(0, 0);
    s.cpus = 16;
    s.inflight = 8;
    CHECK_INT(admit_wait(&s), 750); /* 6000 * 2 / 16 */
    s.cpus = 0;                     /* unknown: as one core */
    s.inflight = 1;
    CHECK_INT(admit_wait(&s), 12000);
}

/* A few calls wait four times as long for a near database (a group of their own would cost
 * a commit for little), no longer for a far one (they would wait a round trip more). */
TEST(a_few_calls_wait_four_times_as_long_on_a_near_database)
{
    struct admit_state s = busy(0, 0);
    s.queued = ADMIT_FEW - 1;
    CHECK_INT(admit_wait(&s), 24000);
    s = busy(1000, 0);
    s.queued = ADMIT_FEW - 1;
    CHECK_INT(admit_wait(&s), 500); /* as many calls would: a quarter of the server's part */
}

/* Between the two the few calls' hold falls with the round trip's share too. */
TEST(a_few_calls_hold_less_as_the_round_trip_grows)
{
    int64_t last = 1 << 30;
    for (int64_t rtt = 0; rtt <= 3000; rtt += 50) {
        struct admit_state s = busy(rtt, 0);
        s.queued = 1;
        int64_t h = admit_wait(&s);
        CHECK(h <= last);
        CHECK(h >= 0);
        last = h;
        s.queued = 8;
        CHECK(admit_wait(&s) <= h); /* never more than a few calls' hold */
    }
}

/* Groups' times vary with their calls: the near hold is twice the time most groups end
 * within, not twice the average, which one-call groups pull down. */
TEST(on_a_near_database_the_hold_follows_the_usual_time_not_the_average)
{
    struct admit_state s = busy(0, 0);
    s.usual_us = 5000;
    CHECK_INT(admit_wait(&s), 10000);
    s.since_start_us = 7000; /* past twice the average, short of the usual time's */
    CHECK(admit_wait(&s) > 0);
    s.since_start_us = 10000;
    CHECK_INT(admit_wait(&s), 0);
    s.usual_us = 1000; /* never below the average */
    s.since_start_us = 0;
    CHECK_INT(admit_wait(&s), 6000);
}

/* A far database: the network's wait is what overlap wins back, whatever the usual time. */
TEST(on_a_far_database_the_usual_time_does_not_hold_groups_back)
{
    struct admit_state s = busy(1000, 0);
    s.usual_us = 9000;
    CHECK_INT(admit_wait(&s), 500);
}

/* The usual time: the 90th percentile of the last ADMIT_TIMES groups' times. */
TEST(the_usual_time_is_the_90th_percentile_of_the_last_groups)
{
    struct admit_times t = {0};
    CHECK_INT(admit_usual(&t), 0);
    admit_record(&t, 700);
    CHECK_INT(admit_usual(&t), 700);
    for (int i = 0; i < 100; i++) /* 100 groups: only the last 64 count */
        admit_record(&t, i < 36 ? 1000000 : 100 + (i - 36) * 10);
    /* the last 64: 100, 110, ..., 730; the 90th percentile is index 63 * 90 / 100 = 56 */
    CHECK_INT(admit_usual(&t), 660);
    for (int i = 0; i < 6; i++) /* a few stalled groups do not make a stall usual */
        admit_record(&t, 5000000);
    CHECK(admit_usual(&t) < 1000);
    admit_record(&t, -5); /* a clock that went back counts as 0 */
    CHECK(admit_usual(&t) >= 0);
}

/* Groups stalled on a lock count as twice the usual time: the usual time grows at most
 * twofold, and the next stall is seen as soon as before. */
TEST(stalls_raise_the_usual_time_at_most_twofold)
{
    struct admit_times t = {0};
    for (int i = 0; i < ADMIT_TIMES; i++)
        admit_record(&t, 1000);
    for (int i = 0; i < 10; i++) /* 10 of 64: past the 90th percentile */
        admit_record(&t, 9000000);
    CHECK_INT(admit_usual(&t), 2000);
    for (int i = 0; i < ADMIT_TIMES; i++) /* the slower groups are the usual ones now */
        admit_record(&t, 3000);
    CHECK_INT(admit_usual(&t), 3000);
}

TEST(no_measured_time_starts_at_once)
{
    struct admit_state s = busy(0, 0);
    s.group_us = 0;
    CHECK_INT(admit_wait(&s), 0);
}

TEST_MAIN(TEST_ENTRY(nothing_waiting_means_nothing_to_start),
          TEST_ENTRY(an_idle_executor_starts_at_once),
          TEST_ENTRY(enough_calls_waiting_start_another_group_at_once),
          TEST_ENTRY(on_a_near_database_calls_wait_for_the_group_in_flight),
          TEST_ENTRY(on_a_far_database_groups_overlap),
          TEST_ENTRY(the_hold_falls_as_the_round_trip_grows),
          TEST_ENTRY(more_cores_start_more_groups_at_once), TEST_ENTRY(more_cores_hold_less),
          TEST_ENTRY(a_few_calls_wait_four_times_as_long_on_a_near_database),
          TEST_ENTRY(a_few_calls_hold_less_as_the_round_trip_grows),
          TEST_ENTRY(on_a_near_database_the_hold_follows_the_usual_time_not_the_average),
          TEST_ENTRY(on_a_far_database_the_usual_time_does_not_hold_groups_back),
          TEST_ENTRY(the_usual_time_is_the_90th_percentile_of_the_last_groups),
          TEST_ENTRY(stalls_raise_the_usual_time_at_most_twofold),
          TEST_ENTRY(no_measured_time_starts_at_once))
