/* Schedules (server/domain/schedule.h): the body check, every_seconds ticks, the catch-up plan
 * of a pass (on-time ticks, missed ones per policy, the cap and what the next pass does with the
 * rest, long downtimes), and the overlap decision. */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "test_zone_util.h"
#include "testlib.h"

/* A body with only the given cron (or every_seconds when cron is NULL). */
static struct schedule_body body(const char *cron, int64_t every)
{
    struct schedule_body b = {0};
    if (cron) {
        b.cron = cron;
        b.cron_len = strlen(cron);
    } else {
        b.has_every = 1;
        b.every_seconds = every;
    }
    return b;
}

static void set(const char **field, size_t *len, const char *value)
{
    *field = value;
    *len = strlen(value);
}

TEST(body_checks)
{
    struct schedule_rule r;
    char msg[CRON_ERR_MAX];
    struct schedule_body b = body("*/5 * * * *", 0);
    CHECK(schedule_body_check(&b, &r, msg, sizeof msg) == NULL);
    CHECK_INT(r.every_seconds, 0);
    CHECK_STR(r.cron_text, "*/5 * * * *");
    CHECK_INT(r.catch_up, SCHEDULE_CATCH_UP_LATEST); /* the defaults */
    CHECK_INT(r.overlap, SCHEDULE_OVERLAP_ALLOW);
    CHECK_STR(schedule_catch_up_name(r.catch_up), "latest");
    CHECK_STR(schedule_overlap_name(r.overlap), "allow");
    CHECK_STR(r.timezone, "UTC");
    b = body(NULL, 1);
    set(&b.catch_up, &b.catch_up_len, "all");
    set(&b.overlap, &b.overlap_len, "skip");
    set(&b.timezone, &b.timezone_len, "Europe/Berlin");
    CHECK(schedule_body_check(&b, &r, msg, sizeof msg) == NULL);
    CHECK_INT(r.every_seconds, 1);
    CHECK_STR(r.cron_text, "");
    CHECK_INT(r.catch_up, SCHEDULE_CATCH_UP_ALL);
    CHECK_INT(r.overlap, SCHEDULE_OVERLAP_SKIP);
    CHECK_STR(r.timezone, "Europe/Berlin");
    set(&b.catch_up, &b.catch_up_len, "none");
    CHECK(schedule_body_check(&b, &r, msg, sizeof msg) == NULL);
    CHECK_INT(r.catch_up, SCHEDULE_CATCH_UP_NONE);
    b = body(NULL, SCHEDULE_EVERY_MAX);
    CHECK(schedule_body_check(&b, &r, msg, sizeof msg) == NULL);

    /* Errors name the field; r is left alone. */
    struct schedule_rule keep = r;
    b = body(NULL, 0);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "every_seconds");
    CHECK_STR(msg, "every_seconds must be 1..31536000");
    b = body(NULL, SCHEDULE_EVERY_MAX + 1);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "every_seconds");
    b = body(NULL, -5);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "every_seconds");
    b = body("0 0 * * 8", 0);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "cron");
    CHECK_STR(msg, "cron: day-of-week: 8 is out of range 0-7");
    b = body("0 0 30 2 *", 0);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "cron");
    b = body("@hourly", 0);
    b.has_every = 1;
    b.every_seconds = 60;
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "cron or every_seconds");
    memset(&b, 0, sizeof b);
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "cron or every_seconds");
    b = body("@hourly", 0);
    set(&b.catch_up, &b.catch_up_len, "Latest");
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "catch_up");
    b = body("@hourly", 0);
    set(&b.overlap, &b.overlap_len, "skipped");
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "overlap");
    b = body("@hourly", 0);
    set(&b.timezone, &b.timezone_len, "../etc/passwd");
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "timezone");
    b = body("@hourly", 0);
    b.timezone = "";
    CHECK_STR(schedule_body_check(&b, &r, msg, sizeof msg), "timezone");
    CHECK(memcmp(&r, &keep, sizeof r) == 0);
    /* Names with their lengths: a prefix of a name is not the name. */
    enum schedule_catch_up c;
    CHECK_INT(schedule_catch_up_parse("allx", 3, &c), 0);
    CHECK_INT(c, SCHEDULE_CATCH_UP_ALL);
    CHECK_INT(schedule_catch_up_parse("al", 2, &c), -1);
    enum schedule_overlap o;
    CHECK_INT(schedule_overlap_parse("skip", 4, &o), 0);
    CHECK_INT(schedule_overlap_parse("", 0, &o), -1);
}

static struct schedule_rule rule(const char *cron, int64_t every, enum schedule_catch_up c)
{
    struct schedule_rule r;
    char msg[CRON_ERR_MAX];
    struct schedule_body b = body(cron, every);
    memset(&r, 0, sizeof r);
    if (schedule_body_check(&b, &r, msg, sizeof msg) != NULL)
        fprintf(stderr, "rule: %s\n", msg);
    r.catch_up = c;
    return r;
}

TEST(every_seconds_ticks)
{
    struct schedule_rule r = rule(NULL, 3600, SCHEDULE_CATCH_UP_LATEST);
    struct tz *z = zone("Asia/Kolkata"); /* ignored: ticks are aligned to the epoch */
    CHECK(z != NULL);
    CHECK_INT(schedule_next(&r, z, 0), 3600);
    CHECK_INT(schedule_next(&r, z, 3599), 3600);
    CHECK_INT(schedule_next(&r, z, 3600), 7200);
    CHECK_INT(schedule_next(&r, z, -1), 0);
    CHECK_INT(schedule_next(&r, z, -3600), 0);
    CHECK_INT(schedule_next(&r, z, -3601), -3600);
    CHECK_INT(schedule_prev(&r, z, 3600), 0);
    CHECK_INT(schedule_prev(&r, z, 3601), 3600);
    CHECK_INT(schedule_prev(&r, z, 0), -3600);
    CHECK_INT(schedule_count(&r, z, 0, 3600), 1);
    CHECK_INT(schedule_count(&r, z, 0, 3601), 2);
    CHECK_INT(schedule_count(&r, z, 1, 3600), 0);
    CHECK_INT(schedule_count(&r, z, -7200, 7200), 4);
    CHECK_INT(schedule_count(&r, z, 7200, -7200), 0);
    r = rule(NULL, 7, SCHEDULE_CATCH_UP_LATEST); /* 86400 is no multiple of 7 */
    CHECK_INT(schedule_next(&r, z, utc(2026, 1, 1, 0, 0)), (utc(2026, 1, 1, 0, 0) / 7 + 1) * 7);
    CHECK_INT(schedule_next(&r, z, INT64_MAX), SCHEDULE_NEVER);
    /* A cron rule goes to cron_next in the zone. */
    r = rule("0 9 * * *", 0, SCHEDULE_CATCH_UP_LATEST);
    CHECK_INT(schedule_next(&r, z, utc(2026, 6, 1, 0, 0)), utc(2026, 6, 1, 3, 30));
    CHECK_INT(schedule_prev(&r, z, utc(2026, 6, 1, 3, 30)), utc(2026, 5, 31, 3, 30));
    CHECK_INT(schedule_count(&r, z, utc(2026, 6, 1, 0, 0), utc(2026, 7, 1, 0, 0)), 30);
    tz_free(z);
}

#define CAP 2000
static int64_t out[CAP];

/* One pass with the rule's own catch-up policy. */
static struct schedule_plan pass(const struct schedule_rule *r, int64_t next, int64_t now,
                                 int64_t down_from, int64_t down_to, size_t cap)
{
    struct schedule_plan p;
    memset(out, 0, sizeof out);
    schedule_plan(r, tz_utc(), next, now, down_from, down_to, out, cap, &p);
    return p;
}

TEST(plan_on_time)
{
    const int64_t T = 1800000000; /* a multiple of 60 */
    struct schedule_rule r = rule(NULL, 60, SCHEDULE_CATCH_UP_NONE);
    /* Nothing due yet. */
    struct schedule_plan p = pass(&r, T, T - 1, 0, 0, CAP);
    CHECK_INT(p.nticks, 0);
    CHECK_INT(p.next_run_at, T);
    CHECK_INT(p.more, 0);
    /* Due exactly at now. */
    p = pass(&r, T, T, 0, 0, CAP);
    CHECK_INT(p.nticks, 1);
    CHECK_INT(out[0], T);
    CHECK_INT(p.next_run_at, T + 60);
    /* Without downtime, late ticks are on time whatever the policy: all of them. */
    p = pass(&r, T, T + 150, 0, 0, CAP);
    CHECK_INT(p.nticks, 3);
    CHECK_INT(out[0], T);
    CHECK_INT(out[2], T + 120);
    CHECK_INT(p.skipped, 0);
    CHECK_INT(p.next_run_at, T + 180);
    /* A next_run_at that is no tick (the rule changed): from the first tick after it. */
    p = pass(&r, T + 1, T + 150, 0, 0, CAP);
    CHECK_INT(p.nticks, 2);
    CHECK_INT(out[0], T + 60);
    CHECK_INT(pass(&r, SCHEDULE_NEVER, T, 0, 0, CAP).next_run_at, SCHEDULE_NEVER);
    /* Any next_run_at is taken (here the smallest): the cap bounds the pass. */
    p = pass(&r, INT64_MIN, T, 0, 0, 3);
    CHECK_INT(p.nticks, 3);
    CHECK_INT(out[0], CIVIL_TIME_MIN + 60); /* ticks lie after CIVIL_TIME_MIN */
    CHECK_INT(p.more, 1);
    CHECK_INT(p.next_run_at, CIVIL_TIME_MIN + 240);
}

TEST(plan_catch_up_policies)
{
    const int64_t T = 1800000000;
    /* Ticks T, T+60 .. T+600 came due while down (down from T-30 to T+630): 11 missed; T+660
     * is on time; now is T+700. */
    const int64_t from = T - 30, to = T + 630, now = T + 700;
    struct schedule_rule r = rule(NULL, 60, SCHEDULE_CATCH_UP_NONE);
    struct schedule_plan p = pass(&r, T, now, from, to, CAP);
    CHECK_INT(p.nticks, 1);
    CHECK_INT(out[0], T + 660);
    CHECK_INT(p.skipped, 11);
    CHECK_INT(p.next_run_at, T + 720);
    r.catch_up = SCHEDULE_CATCH_UP_LATEST;
    p = pass(&r, T, now, from, to, CAP);
    CHECK_INT(p.nticks, 2);
    CHECK_INT(out[0], T + 600);
    CHECK_INT(out[1], T + 660);
    CHECK_INT(p.skipped, 10);
    r.catch_up = SCHEDULE_CATCH_UP_ALL;
    p = pass(&r, T, now, from, to, CAP);
    CHECK_INT(p.nticks, 12);
    for (int i = 0; i < 12; i++)
        CHECK_INT(out[i], T + 60 * i);
    CHECK_INT(p.skipped, 0);
    CHECK_INT(p.next_run_at, T + 720);
    /* On-time ticks before the downtime (ticks at its bounds are on time), then missed ones. */
    r.catch_up = SCHEDULE_CATCH_UP_LATEST;
    p = pass(&r, T, T + 400, T + 60, T + 300, CAP);
    CHECK_INT(p.nticks, 5); /* T, T+60 on time; T+240 the latest of 120..240; T+300, T+360 */
    CHECK_INT(out[0], T);
    CHECK_INT(out[1], T + 60);
    CHECK_INT(out[2], T + 240);
    CHECK_INT(out[3], T + 300);
    CHECK_INT(out[4], T + 360);
    CHECK_INT(p.skipped, 2);
    /* A downtime not over yet at now: the missed ticks up to now. */
    p = pass(&r, T, T + 130, T - 1, T + 1000, CAP);
    CHECK_INT(p.nticks, 1);
    CHECK_INT(out[0], T + 120);
    CHECK_INT(p.skipped, 2);
    CHECK_INT(p.next_run_at, T + 180);
}

TEST(plan_all_keeps_the_most_recent_thousand)
{
    const int64_t T = 1800000000;
    struct schedule_rule r = rule(NULL, 1, SCHEDULE_CATCH_UP_ALL);
    /* 5000 ticks missed (T .. T+4999), T+5000 on time. */
    struct schedule_plan p = pass(&r, T, T + 5000, T - 1, T + 5000, CAP);
    CHECK_INT(p.nticks, SCHEDULE_CATCH_UP_ALL_MAX + 1);
    CHECK_INT(out[0], T + 4000);
    CHECK_INT(out[999], T + 4999);
    CHECK_INT(out[1000], T + 5000);
    CHECK_INT(p.skipped, 4000);
    CHECK_INT(p.next_run_at, T + 5001);
    CHECK_INT(p.more, 0);
}

/* Passes of `cap` ticks until done, each from the last next_run_at, against one big pass. */
static int passes_match_one(const struct schedule_rule *r, const struct tz *z, int64_t next,
                            int64_t now, int64_t from, int64_t to, size_t cap)
{
    static int64_t all[CAP], part[CAP];
    struct schedule_plan one, p;
    schedule_plan(r, z, next, now, from, to, all, CAP, &one);
    if (one.more)
        return 0;
    size_t n = 0;
    int64_t skipped = 0;
    for (int k = 0; k < CAP + 2; k++) {
        schedule_plan(r, z, next, now, from, to, part, cap, &p);
        if (n + p.nticks > one.nticks || memcmp(all + n, part, p.nticks * sizeof *part) != 0)
            return 0;
        n += p.nticks;
        skipped += p.skipped;
        if (!p.more)
            break;
        if (p.next_run_at > now || p.nticks != cap)
            return 0; /* more means: stopped at a due tick, with the array full */
        next = p.next_run_at;
    }
    return n == one.nticks && skipped == one.skipped && p.next_run_at == one.next_run_at;
}

TEST(plan_in_passes)
{
    const int64_t T = 1800000000;
    for (int c = 0; c < 3; c++) {
        enum schedule_catch_up cu = (enum schedule_catch_up)c;
        struct schedule_rule r = rule(NULL, 60, cu);
        for (size_t cap = 0; cap <= 7; cap++) {
            if (cap == 0) { /* only decides skips; stops at the first planned tick */
                struct schedule_plan p = pass(&r, T, T + 700, T - 30, T + 630, 0);
                CHECK_INT(p.nticks, 0);
                CHECK_INT(p.more, 1);
                CHECK_INT(p.next_run_at, cu == SCHEDULE_CATCH_UP_ALL      ? T
                                         : cu == SCHEDULE_CATCH_UP_LATEST ? T + 600
                                                                          : T + 660);
                continue;
            }
            CHECK(passes_match_one(&r, tz_utc(), T, T + 700, T - 30, T + 630, cap));
            CHECK(passes_match_one(&r, tz_utc(), T, T + 900, T + 100, T + 400, cap));
        }
        r = rule(NULL, 1, cu);
        CHECK(passes_match_one(&r, tz_utc(), T, T + 3000, T + 10, T + 2900, 300));
    }
}

TEST(plan_cron_in_a_zone)
{
    struct tz *z = zone("Europe/Berlin");
    CHECK(z != NULL);
    /* 02:30 daily; down from 2026-03-27 12:00 UTC to 2026-03-31 12:00 UTC: the ticks of 03-28
     * (01:30 UTC), 03-29 (the gap end, 01:00 UTC), 03-30 and 03-31 (00:30 UTC) were missed. */
    struct schedule_rule r = rule("30 2 * * *", 0, SCHEDULE_CATCH_UP_ALL);
    int64_t next = utc(2026, 3, 28, 1, 30), now = utc(2026, 3, 31, 12, 0);
    struct schedule_plan p;
    schedule_plan(&r, z, next, now, utc(2026, 3, 27, 12, 0), now + 1, out, CAP, &p);
    CHECK_INT(p.nticks, 4);
    CHECK_INT(out[0], utc(2026, 3, 28, 1, 30));
    CHECK_INT(out[1], utc(2026, 3, 29, 1, 0));
    CHECK_INT(out[2], utc(2026, 3, 30, 0, 30));
    CHECK_INT(out[3], utc(2026, 3, 31, 0, 30));
    CHECK_INT(p.next_run_at, utc(2026, 4, 1, 0, 30));
    r.catch_up = SCHEDULE_CATCH_UP_LATEST;
    schedule_plan(&r, z, next, now, utc(2026, 3, 27, 12, 0), now + 1, out, CAP, &p);
    CHECK_INT(p.nticks, 1);
    CHECK_INT(out[0], utc(2026, 3, 31, 0, 30));
    CHECK_INT(p.skipped, 3);
    CHECK(passes_match_one(&r, z, next, now, utc(2026, 3, 27, 12, 0), now + 1, 1));
    /* Every minute, "all", down over the fall back of 2026-10-25: the 1000 most recent ticks
     * (walked back with cron_prev) are the last 1000 of the forward walk. */
    r = rule("* * * * *", 0, SCHEDULE_CATCH_UP_ALL);
    next = utc(2026, 10, 24, 12, 0);
    now = utc(2026, 10, 25, 12, 0);
    schedule_plan(&r, z, next, now, next - 1, now + 1, out, CAP, &p);
    CHECK_INT(p.nticks, SCHEDULE_CATCH_UP_ALL_MAX);
    static int64_t fwd[2000];
    int n = 0;
    for (int64_t t = next; t <= now && n < 2000; t = cron_next(&r.cron, z, t))
        fwd[n++] = t;
    CHECK_INT(n, 24 * 60 + 1 - 60); /* the minutes of 24 h, now included, less the repeat */
    CHECK(memcmp(out, fwd + n - 1000, 1000 * sizeof *out) == 0);
    CHECK_INT(p.skipped, n - 1000);
    tz_free(z);
}

TEST(plan_long_downtime_is_cheap)
{
    /* Ten years down, a tick every second (315 million missed) or every minute in Berlin: the
     * pass counts what it skips instead of visiting each tick. */
    const int64_t T = utc(2026, 1, 1, 0, 0), now = utc(2036, 1, 1, 0, 0) + 30;
    struct schedule_rule r = rule(NULL, 1, SCHEDULE_CATCH_UP_LATEST);
    struct schedule_plan p = pass(&r, T, now, T - 1, now - 10, CAP);
    CHECK_INT(p.nticks, 12); /* now-11 (the latest missed), then now-10 .. now */
    CHECK_INT(out[0], now - 11);
    CHECK_INT(out[1], now - 10);
    CHECK_INT(p.skipped, now - 11 - T);
    struct tz *z = zone("Europe/Berlin");
    CHECK(z != NULL);
    r = rule("* * * * *", 0, SCHEDULE_CATCH_UP_NONE);
    schedule_plan(&r, z, T, now, T - 1, now, out, CAP, &p);
    CHECK_INT(p.nticks, 0);
    /* 10 years of minutes (3652 days, through 2036-01-01 00:00 UTC), less the 60 minutes that
     * each of the 10 gaps folds into its end. */
    CHECK_INT(p.skipped, 3652LL * 1440 - 10 * 60 + 1);
    CHECK_INT(p.next_run_at, utc(2036, 1, 1, 0, 1));
    tz_free(z);
}

TEST(overlap)
{
    struct schedule_rule r = rule("@hourly", 0, SCHEDULE_CATCH_UP_LATEST);
    static const char *const statuses[] = {"queued",    "blocked", "running",
                                           "succeeded", "failed",  "cancelled"};
    for (int i = 0; i < 6; i++)
        CHECK_INT(schedule_overlap_skip(&r, statuses[i]), 0);
    CHECK_INT(schedule_overlap_skip(&r, NULL), 0);
    r.overlap = SCHEDULE_OVERLAP_SKIP;
    for (int i = 0; i < 6; i++)
        CHECK_INT(schedule_overlap_skip(&r, statuses[i]), i < 3);
    CHECK_INT(schedule_overlap_skip(&r, NULL), 0); /* no previous job, or it is gone */
}

/* The window of missed ticks after a clean stop, after a crash, and with no pass ever
 * (schedule_downtime), and what a pass then plans: ticks after a clean stop are missed, and
 * after a crash all but the one right after the last pass. */
TEST(downtime_after_a_stop_or_a_crash)
{
    int64_t from, to;
    struct schedule_plan p;
    /* every_seconds 2, stopped cleanly mid-period: the last pass at T+1 (tick T taken, next
     * T+2), the stop marked at T+1, the first pass after the restart at T+7. Ticks T+2, T+4
     * and T+6 came due while nothing ran. */
    const int64_t T = 1800000000;
    schedule_downtime(T + 1, T + 1, T + 7, &from, &to);
    CHECK_INT(from, T + 1);
    CHECK_INT(to, T + 7);
    struct schedule_rule r = rule(NULL, 2, SCHEDULE_CATCH_UP_NONE);
    p = pass(&r, T + 2, T + 7, from, to, CAP);
    CHECK_INT(p.nticks, 0);
    CHECK_INT(p.skipped, 3);
    CHECK_INT(p.next_run_at, T + 8);
    r.catch_up = SCHEDULE_CATCH_UP_LATEST;
    p = pass(&r, T + 2, T + 7, from, to, CAP);
    CHECK_INT(p.nticks, 1);
    CHECK_INT(out[0], T + 6);
    CHECK_INT(p.skipped, 2);
    /* A stop mark before the last pass (two clocks disagree): the later of the two. */
    schedule_downtime(T + 3, T + 1, T + 7, &from, &to);
    CHECK_INT(from, T + 3);
    /* every_seconds 1, crashed after the pass at T: the first tick after it (T+1) may have
     * been due before the crash and stays on time; T+2 .. T+5 came due while nothing ran. */
    schedule_downtime(T, SCHEDULE_NEVER, T + 6, &from, &to);
    CHECK_INT(from, T + SCHEDULE_GRACE);
    CHECK_INT(to, T + 6);
    r = rule(NULL, 1, SCHEDULE_CATCH_UP_NONE);
    p = pass(&r, T + 1, T + 6, from, to, CAP);
    CHECK_INT(p.nticks, 2);
    CHECK_INT(out[0], T + 1);
    CHECK_INT(out[1], T + 6);
    CHECK_INT(p.skipped, 4);
    r.catch_up = SCHEDULE_CATCH_UP_ALL;
    p = pass(&r, T + 1, T + 6, from, to, CAP);
    CHECK_INT(p.nticks, 6);
    CHECK_INT(p.skipped, 0);
    /* Another ticker still passing (its last pass a second ago): nothing is missed. */
    schedule_downtime(T + 5, SCHEDULE_NEVER, T + 6, &from, &to);
    r.catch_up = SCHEDULE_CATCH_UP_NONE;
    p = pass(&r, T + 5, T + 6, from, to, CAP);
    CHECK_INT(p.nticks, 2);
    CHECK_INT(p.skipped, 0);
    /* A restart within the second of a clean stop: nothing is missed either. */
    schedule_downtime(T + 5, T + 5, T + 6, &from, &to);
    p = pass(&r, T + 6, T + 6, from, to, CAP);
    CHECK_INT(p.nticks, 1);
    /* No ticker ever passed: every tick before the first pass is missed. */
    schedule_downtime(SCHEDULE_NEVER, SCHEDULE_NEVER, T + 6, &from, &to);
    CHECK_INT(from, 0);
    CHECK_INT(to, T + 6);
}

/* A put keeps a due tick no ticker has taken when it is a tick of the rule put
 * (schedule_put_next); else it moves on to the first tick after now. */
TEST(put_keeps_a_due_untaken_tick)
{
    const int64_t T = 1800000000; /* a multiple of 60; not of 7 */
    struct schedule_rule r = rule(NULL, 1, SCHEDULE_CATCH_UP_LATEST);
    /* every_seconds 1, the same put 2 ms after the whole second T (now T): T stays. */
    CHECK_INT(schedule_put_next(&r, tz_utc(), T, T), T);
    CHECK_INT(schedule_put_next(&r, tz_utc(), T, T + 1), T);              /* late, still untaken */
    CHECK_INT(schedule_put_next(&r, tz_utc(), T + 1, T), T + 1);          /* not due: the same */
    CHECK_INT(schedule_put_next(&r, tz_utc(), SCHEDULE_NEVER, T), T + 1); /* new, or paused */
    /* Cron: a minute and a day. */
    r = rule("* * * * *", 0, SCHEDULE_CATCH_UP_LATEST);
    CHECK_INT(schedule_put_next(&r, tz_utc(), T, T), T);
    CHECK_INT(schedule_put_next(&r, tz_utc(), SCHEDULE_NEVER, T), T + 60);
    r = rule("0 3 * * *", 0, SCHEDULE_CATCH_UP_LATEST);
    int64_t day = utc(2026, 6, 1, 3, 0);
    CHECK_INT(schedule_put_next(&r, tz_utc(), day, day), day);
    CHECK_INT(schedule_put_next(&r, tz_utc(), SCHEDULE_NEVER, day), day + 86400);
    /* A changed rule keeps the due tick only when it is one of its own ticks. */
    r = rule(NULL, 30, SCHEDULE_CATCH_UP_LATEST);
    CHECK_INT(schedule_put_next(&r, tz_utc(), T, T + 1), T);
    r = rule(NULL, 7, SCHEDULE_CATCH_UP_LATEST);
    CHECK(T % 7 != 0);
    CHECK_INT(schedule_put_next(&r, tz_utc(), T, T + 1), ((T + 1) / 7 + 1) * 7);
    /* A due next_run_at that no tick of the rule is (the rule changed under it): moves on. */
    r = rule(NULL, 60, SCHEDULE_CATCH_UP_LATEST);
    CHECK_INT(schedule_put_next(&r, tz_utc(), T + 1, T + 2), T + 60);
}

TEST_MAIN(TEST_ENTRY(body_checks), TEST_ENTRY(every_seconds_ticks), TEST_ENTRY(plan_on_time),
          TEST_ENTRY(plan_catch_up_policies), TEST_ENTRY(plan_all_keeps_the_most_recent_thousand),
          TEST_ENTRY(plan_in_passes), TEST_ENTRY(plan_cron_in_a_zone),
          TEST_ENTRY(plan_long_downtime_is_cheap), TEST_ENTRY(overlap),
          TEST_ENTRY(downtime_after_a_stop_or_a_crash), TEST_ENTRY(put_keeps_a_due_untaken_tick))
