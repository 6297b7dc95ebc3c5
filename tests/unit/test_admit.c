/* admit_wait (server/admit.h): when the PostgreSQL store's executor starts another group of
 * calls beside those in flight. */
#include "admit.h"
#include "testlib.h"

/* A busy executor on 2 cores: one group in flight, 8 calls waiting, a group takes 3 ms. */
static struct admit_state busy(int64_t rtt_us, int64_t since_us)
{
    return (struct admit_state){.inflight = 1,
                                .queued = 8,
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
    s.queued = ADMIT_JOIN;
    CHECK_INT(admit_wait(&s), 0);
    s.queued = ADMIT_JOIN - 1;
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

TEST(more_cores_hold_less)
{
    struct admit_state s = busy(0, 0);
    s.cpus = 16;
    CHECK_INT(admit_wait(&s), 750); /* 6000 * 2 / 16 */
    s.cpus = 0;                     /* unknown: as one core */
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
          TEST_ENTRY(the_hold_falls_as_the_round_trip_grows), TEST_ENTRY(more_cores_hold_less),
          TEST_ENTRY(a_few_calls_wait_four_times_as_long_on_a_near_database),
          TEST_ENTRY(a_few_calls_hold_less_as_the_round_trip_grows),
          TEST_ENTRY(no_measured_time_starts_at_once))
