/* Cron expressions (server/domain/cron.h): the parser and its messages, and the ticks in zones
 * at known dates: across gaps and repeats (Berlin, New York, Lord Howe, Sydney), a skipped day
 * (Apia), no DST (Kolkata), leap years, the far future (the footer), and cron_next, cron_prev
 * and cron_count against a walk over every local minute. */
#include <stdlib.h>
#include <string.h>

#include "cron.h"
#include "test_zone_util.h"
#include "testlib.h"

static struct cron parsed(const char *expr)
{
    struct cron c;
    char err[CRON_ERR_MAX];
    if (cron_parse(expr, strlen(expr), &c, err, sizeof err) != 0) {
        fprintf(stderr, "\"%s\": %s\n", expr, err);
        memset(&c, 0, sizeof c);
    }
    return c;
}

/* The message cron_parse gives for expr ("" when it accepts it). */
static const char *error_of(const char *expr)
{
    static char err[CRON_ERR_MAX];
    struct cron c;
    if (cron_parse(expr, strlen(expr), &c, err, sizeof err) == 0)
        return "";
    return err;
}

TEST(parse_fields)
{
    struct cron c = parsed("*/15 0-6/2,23 1,15 JAN-mar,Dec mon-FRI");
    CHECK(c.minute == ((1ULL << 0) | (1ULL << 15) | (1ULL << 30) | (1ULL << 45)));
    CHECK_INT(c.hour, (1 << 0) | (1 << 2) | (1 << 4) | (1 << 6) | (1 << 23));
    CHECK_INT(c.dom, (1 << 1) | (1 << 15));
    CHECK_INT(c.month, (1 << 1) | (1 << 2) | (1 << 3) | (1 << 12));
    CHECK_INT(c.dow, 0x3e);
    CHECK_INT(c.dom_star, 0);
    CHECK_INT(c.dow_star, 0);
    c = parsed("5/15 * * * 7");
    CHECK(c.minute == ((1ULL << 5) | (1ULL << 20) | (1ULL << 35) | (1ULL << 50)));
    CHECK_INT(c.hour, 0xffffff);
    CHECK_INT(c.dom, 0xfffffffe);
    CHECK_INT(c.month, 0x1ffe);
    CHECK_INT(c.dow, 1); /* 7 is Sunday */
    CHECK_INT(c.dom_star, 1);
    c = parsed("  0\t0   * * 0,7  ");
    CHECK_INT(c.dow, 1);
    c = parsed("0 0 * * 5-7");
    CHECK_INT(c.dow, (1 << 5) | (1 << 6) | 1);
    c = parsed("1-30/5 * */10 * *");
    CHECK(c.minute ==
          ((1ULL << 1) | (1ULL << 6) | (1ULL << 11) | (1ULL << 16) | (1ULL << 21) | (1ULL << 26)));
    CHECK_INT(c.dom, (1u << 1) | (1u << 11) | (1u << 21) | (1u << 31));
    /* Macros. */
    struct cron d = parsed("0 0 1 1 *");
    c = parsed("@yearly");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    c = parsed("@ANNUALLY");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    d = parsed("0 0 1 * *");
    c = parsed("@monthly");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    d = parsed("0 0 * * 0");
    c = parsed("@weekly");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    d = parsed("0 0 * * *");
    c = parsed(" @daily ");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    c = parsed("@midnight");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    d = parsed("0 * * * *");
    c = parsed("@hourly");
    CHECK(memcmp(&c, &d, sizeof c) == 0);
}

TEST(parse_errors)
{
    CHECK_STR(error_of("0 0 * * 8"), "cron: day-of-week: 8 is out of range 0-7");
    CHECK_STR(error_of("60 * * * *"), "cron: minute: 60 is out of range 0-59");
    CHECK_STR(error_of("* 24 * * *"), "cron: hour: 24 is out of range 0-23");
    CHECK_STR(error_of("* * 0 * *"), "cron: day-of-month: 0 is out of range 1-31");
    CHECK_STR(error_of("* * 32 * *"), "cron: day-of-month: 32 is out of range 1-31");
    CHECK_STR(error_of("* * * 13 *"), "cron: month: 13 is out of range 1-12");
    CHECK_STR(error_of("* * * 99999999999999999999 *"),
              "cron: month: 99999999999999999999 is out of range 1-12");
    CHECK_STR(error_of("* * * * *  *"), "cron: expected 5 fields, got 6");
    CHECK_STR(error_of("* * * *"), "cron: expected 5 fields, got 4");
    CHECK_STR(error_of(""), "cron: expected 5 fields, got 0");
    CHECK_STR(error_of("*/0 * * * *"), "cron: minute: bad step \"*/0\" (1-59)");
    CHECK_STR(error_of("* */24 * * *"), "cron: hour: bad step \"*/24\" (1-23)");
    CHECK_STR(error_of("* * * * 1/"), "cron: day-of-week: bad step \"1/\" (1-7)");
    CHECK_STR(error_of("5-3 * * * *"), "cron: minute: range 5-3 is reversed");
    CHECK_STR(error_of("1- * * * *"), "cron: minute: missing value");
    CHECK_STR(error_of("MON * * * *"), "cron: minute: bad value \"MON\"");
    CHECK_STR(error_of("* * * JANUARY *"), "cron: month: bad value \"JANUARY\"");
    CHECK_STR(error_of("* * * * FRI-MON"), "cron: day-of-week: range FRI-MON is reversed");
    CHECK_STR(error_of("1,,2 * * * *"), "cron: minute: empty list item");
    CHECK_STR(error_of("1, * * * *"), "cron: minute: empty list item");
    CHECK_STR(error_of("1-2-3 * * * *"), "cron: minute: bad item \"1-2-3\"");
    CHECK_STR(error_of("** * * * *"), "cron: minute: bad item \"**\"");
    CHECK_STR(error_of("@every"), "cron: unknown macro \"@every\"");
    CHECK_STR(error_of("0 0 * * 1#2"), "cron: unexpected character at byte 10");
    CHECK_STR(error_of("0 0 30 2 *"),
              "cron: can never fire (no day matches day-of-month and month)");
    CHECK_STR(error_of("0 0 31 4,6,9,11 *"),
              "cron: can never fire (no day matches day-of-month and month)");
    CHECK_STR(error_of("0 0 29 2 *"), "");   /* leap days */
    CHECK_STR(error_of("0 0 30 2 MON"), ""); /* either day rule: Mondays of February */
    char err[CRON_ERR_MAX];
    struct cron c;
    CHECK_INT(cron_parse("0 0\0 * * *", 10, &c, err, sizeof err), -1);
    CHECK_STR(err, "cron: unexpected character at byte 4");
    char expr[CRON_EXPR_MAX + 2];
    memset(expr, ' ', sizeof expr);
    memcpy(expr, "* * * * *", 9);
    CHECK_INT(cron_parse(expr, CRON_EXPR_MAX, &c, err, sizeof err), 0);
    CHECK_INT(cron_parse(expr, CRON_EXPR_MAX + 1, &c, err, sizeof err), -1);
    CHECK_STR(err, "cron: longer than 200 bytes");
    /* A long token is quoted short; the message always fits CRON_ERR_MAX. */
    memset(expr, '9', CRON_EXPR_MAX);
    CHECK_INT(cron_parse(expr, CRON_EXPR_MAX, &c, err, sizeof err), -1);
    CHECK(strlen(err) < CRON_ERR_MAX - 1);
}

/* The ticks of expr in zone name after `from`, n of them, into out. 0 when a zone or an
 * expression is missing. */
static int ticks(const char *name, const char *expr, int64_t from, int64_t *out, int n)
{
    struct tz *z = strcmp(name, "UTC") ? zone(name) : NULL;
    const struct tz *zz = z ? z : tz_utc();
    if (strcmp(name, "UTC") && !z)
        return 0;
    struct cron c = parsed(expr);
    int64_t t = from;
    for (int i = 0; i < n; i++)
        out[i] = t = cron_next(&c, zz, t);
    tz_free(z);
    return 1;
}

#define CHECK_TICKS(name, expr, from, ...)                                                         \
    do {                                                                                           \
        const int64_t want_[] = {__VA_ARGS__};                                                     \
        int n_ = (int)(sizeof want_ / sizeof want_[0]);                                            \
        int64_t got_[16];                                                                          \
        CHECK(ticks(name, expr, from, got_, n_));                                                  \
        for (int i_ = 0; i_ < n_; i_++)                                                            \
            CHECK_INT(got_[i_], want_[i_]);                                                        \
    } while (0)

TEST(next_in_utc)
{
    int64_t t0 = utc(2026, 1, 1, 0, 7);
    CHECK_TICKS("UTC", "*/15 * * * *", t0, utc(2026, 1, 1, 0, 15), utc(2026, 1, 1, 0, 30),
                utc(2026, 1, 1, 0, 45), utc(2026, 1, 1, 1, 0));
    /* Strictly after: from a tick, the next one. */
    CHECK_TICKS("UTC", "*/15 * * * *", utc(2026, 1, 1, 0, 15), utc(2026, 1, 1, 0, 30));
    CHECK_TICKS("UTC", "*/15 * * * *", utc(2026, 1, 1, 0, 15) - 1, utc(2026, 1, 1, 0, 15));
    /* Both day fields restricted: the 13th or a Friday (2026-01-02 is a Friday). */
    CHECK_TICKS("UTC", "0 0 13 * FRI", utc(2026, 1, 1, 0, 0), utc(2026, 1, 2, 0, 0),
                utc(2026, 1, 9, 0, 0), utc(2026, 1, 13, 0, 0), utc(2026, 1, 16, 0, 0));
    /* One of them '*': only the other counts. */
    CHECK_TICKS("UTC", "0 0 13 * *", utc(2026, 1, 1, 0, 0), utc(2026, 1, 13, 0, 0),
                utc(2026, 2, 13, 0, 0));
    CHECK_TICKS("UTC", "0 0 * * FRI", utc(2026, 1, 1, 0, 0), utc(2026, 1, 2, 0, 0),
                utc(2026, 1, 9, 0, 0));
    /* "*\/2" starts with '*': both must match (odd days that are Fridays), as in Vixie cron. */
    CHECK_TICKS("UTC", "0 0 */2 * FRI", utc(2026, 1, 1, 0, 0), utc(2026, 1, 9, 0, 0),
                utc(2026, 1, 23, 0, 0), utc(2026, 2, 13, 0, 0));
    /* @monthly and @yearly, leap days, 2100 (no leap day). */
    CHECK_TICKS("UTC", "@monthly", utc(2028, 1, 31, 12, 0), utc(2028, 2, 1, 0, 0),
                utc(2028, 3, 1, 0, 0));
    CHECK_TICKS("UTC", "@yearly", utc(2027, 6, 1, 0, 0), utc(2028, 1, 1, 0, 0),
                utc(2029, 1, 1, 0, 0));
    CHECK_TICKS("UTC", "0 0 29 2 *", utc(2026, 1, 1, 0, 0), utc(2028, 2, 29, 0, 0),
                utc(2032, 2, 29, 0, 0));
    CHECK_TICKS("UTC", "0 0 29 2 *", utc(2096, 3, 1, 0, 0), utc(2104, 2, 29, 0, 0));
    CHECK_TICKS("UTC", "0 0 31 * *", utc(2026, 1, 31, 0, 0), utc(2026, 3, 31, 0, 0),
                utc(2026, 5, 31, 0, 0));
    CHECK_TICKS("UTC", "59 23 31 12 *", utc(9998, 1, 1, 0, 0), utc(9998, 12, 31, 23, 59),
                utc(9999, 12, 31, 23, 59), CRON_NEVER);
    /* Before the epoch as well. */
    CHECK_TICKS("UTC", "@daily", utc(1969, 12, 30, 12, 0), utc(1969, 12, 31, 0, 0), 0);
}

TEST(next_across_dst)
{
    /* Berlin, fall back 2026-10-25: every 15 minutes fires at each first occurrence only. */
    CHECK_TICKS("Europe/Berlin", "*/15 * * * *", utc(2026, 10, 24, 23, 50), utc(2026, 10, 25, 0, 0),
                utc(2026, 10, 25, 0, 15), utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 0, 45),
                utc(2026, 10, 25, 2, 0), utc(2026, 10, 25, 2, 15));
    /* From inside the second occurrence: no tick of the repeated hour again. */
    CHECK_TICKS("Europe/Berlin", "*/15 * * * *", utc(2026, 10, 25, 1, 10), utc(2026, 10, 25, 2, 0));
    /* Berlin, spring forward 2026-03-29: 02:30 fires once, at the gap end (01:00 UTC). */
    CHECK_TICKS("Europe/Berlin", "30 2 * * *", utc(2026, 3, 28, 0, 0), utc(2026, 3, 28, 1, 30),
                utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30));
    CHECK_TICKS("Europe/Berlin", "30 2 * * *", utc(2026, 10, 24, 12, 0), utc(2026, 10, 25, 0, 30),
                utc(2026, 10, 26, 1, 30));
    /* Gap-shifted times and the real 03:00 are one tick. */
    CHECK_TICKS("Europe/Berlin", "0,30 2,3 * * *", utc(2026, 3, 28, 23, 0), utc(2026, 3, 29, 1, 0),
                utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 0));
    /* Every minute over the gap: 01:59 CET, then 03:00 CEST. */
    CHECK_TICKS("Europe/Berlin", "* * * * *", utc(2026, 3, 29, 0, 58), utc(2026, 3, 29, 0, 59),
                utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 1, 1));
    /* New York 2026. */
    CHECK_TICKS("America/New_York", "30 2 * * *", utc(2026, 3, 7, 12, 0), utc(2026, 3, 8, 7, 0),
                utc(2026, 3, 9, 6, 30));
    CHECK_TICKS("America/New_York", "30 1 * * *", utc(2026, 10, 31, 12, 0), utc(2026, 11, 1, 5, 30),
                utc(2026, 11, 2, 6, 30));
    /* Lord Howe, 30-minute DST. */
    CHECK_TICKS("Australia/Lord_Howe", "15 2 * * *", utc(2026, 10, 2, 12, 0),
                utc(2026, 10, 2, 15, 45), utc(2026, 10, 3, 15, 30), utc(2026, 10, 4, 15, 15));
    CHECK_TICKS("Australia/Lord_Howe", "45 1 * * *", utc(2026, 4, 3, 12, 0),
                utc(2026, 4, 3, 14, 45), utc(2026, 4, 4, 14, 45), utc(2026, 4, 5, 15, 15));
    /* Sydney (southern hemisphere): the gap in October, the repeat in April. */
    CHECK_TICKS("Australia/Sydney", "30 2 * * *", utc(2026, 10, 3, 0, 0), utc(2026, 10, 3, 16, 0),
                utc(2026, 10, 4, 15, 30));
    CHECK_TICKS("Australia/Sydney", "30 2 * * *", utc(2026, 4, 4, 0, 0), utc(2026, 4, 4, 15, 30),
                utc(2026, 4, 5, 16, 30));
    /* Kolkata, +05:30. */
    CHECK_TICKS("Asia/Kolkata", "0 9 * * *", utc(2026, 6, 1, 0, 0), utc(2026, 6, 1, 3, 30),
                utc(2026, 6, 2, 3, 30));
    /* Apia skipped 2011-12-30: noon of that day fires when the gap ends. */
    CHECK_TICKS("Pacific/Apia", "0 12 * * *", utc(2011, 12, 29, 0, 0), utc(2011, 12, 29, 22, 0),
                utc(2011, 12, 30, 10, 0), utc(2011, 12, 30, 22, 0));
    CHECK_TICKS("Pacific/Kiritimati", "0 12 31 12 *", utc(1994, 1, 1, 0, 0),
                utc(1994, 12, 31, 10, 0), utc(1995, 12, 30, 22, 0));
    /* The far future, from the footer's rule. */
    CHECK_TICKS("Europe/Berlin", "30 2 * * *", utc(2100, 3, 27, 12, 0), utc(2100, 3, 28, 1, 0),
                utc(2100, 3, 29, 0, 30));
    CHECK_TICKS("Europe/Berlin", "0 12 1 1,7 *", utc(2099, 12, 1, 0, 0), utc(2100, 1, 1, 11, 0),
                utc(2100, 7, 1, 10, 0));
    CHECK_TICKS("America/New_York", "30 1 * * *", utc(2040, 11, 3, 12, 0), utc(2040, 11, 4, 5, 30),
                utc(2040, 11, 5, 6, 30));
}

/* The ticks in [from, to) by the definition: every local minute of the days around, mapped,
 * the distinct first instants in order. Returns how many (at most max) into out. */
static int brute(const struct cron *c, const struct tz *z, int64_t from, int64_t to, int64_t *out,
                 int max)
{
    int n = 0;
    int64_t last = INT64_MIN;
    for (int64_t day = civil_day_of(from) - 2; day <= civil_day_of(to) + 2; day++) {
        struct civil_date d = civil_date_of(day);
        if (!cron_day_matches(c, d.year, d.month, d.day))
            continue;
        for (int h = 0; h < 24; h++)
            for (int m = 0; m < 60; m++) {
                if (!(c->hour >> h & 1) || !(c->minute >> m & 1))
                    continue;
                int64_t t;
                tz_local_to_utc(z, day * 86400 + h * 3600 + m * 60, &t, NULL);
                if (t < from || t >= to || t == last)
                    continue;
                if (t < last || n == max)
                    return -1; /* not monotone, or too many */
                out[n++] = last = t;
            }
    }
    return n;
}

TEST(next_prev_count_agree_with_brute_force)
{
    static const char *const zones[] = {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                        "Pacific/Apia",  "America/Santiago", "Asia/Kolkata"};
    static const char *const exprs[] = {"*/15 * * * *", "30 2 * * *", "0,30 0-3 * * *",
                                        "7 23,0 * * *", "*/7 1-3 */3 * SUN"};
    static const int64_t starts[] = {1774569600 - 3 * 86400, 1792882800 - 3 * 86400,
                                     1325196000 - 3 * 86400, 1775314800 - 3 * 86400,
                                     1788667200 - 3 * 86400};
    static int64_t want[4000];
    for (size_t zi = 0; zi < sizeof zones / sizeof zones[0]; zi++) {
        struct tz *z = zone(zones[zi]);
        CHECK(z != NULL);
        for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
            for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
                struct cron c = parsed(exprs[e]);
                int64_t from = starts[s], to = from + 8 * 86400;
                int n = brute(&c, z, from, to, want, 4000);
                int ok = n >= 0 && cron_count(&c, z, from, to) == n;
                int64_t t = from - 1;
                for (int i = 0; ok && i < n; i++) {
                    int64_t p = cron_prev(&c, z, want[i]);
                    ok = (t = cron_next(&c, z, t)) == want[i] &&
                         (i == 0 ? p < from : p == want[i - 1]);
                }
                ok = ok && cron_next(&c, z, t) >= to;
                if (!ok)
                    fprintf(stderr, "%s \"%s\" from %lld: %d ticks, count %lld\n", zones[zi],
                            exprs[e], (long long)from, n, (long long)cron_count(&c, z, from, to));
                if (!ok)
                    tz_free(z);
                CHECK(ok);
            }
        tz_free(z);
    }
}

TEST(count_over_years)
{
    struct tz *z = zone("Europe/Berlin");
    CHECK(z != NULL);
    struct cron every = parsed("* * * * *");
    /* A year of minutes in UTC; in Berlin 2026 the gap hour and 03:00 are one tick (the gap's
     * end): 60 fewer; the repeated hour fires once per local minute, like any other. */
    CHECK_INT(cron_count(&every, tz_utc(), utc(2026, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)), 525600);
    CHECK_INT(cron_count(&every, z, utc(2026, 1, 1, 0, 0), utc(2027, 1, 1, 0, 0)), 525600 - 60);
    /* Forty years of @daily in Berlin from a tick: one per day. */
    struct cron daily = parsed("@daily");
    int64_t from = cron_next(&daily, z, utc(2000, 1, 1, 0, 0));
    int64_t to = cron_next(&daily, z, utc(2040, 1, 1, 0, 0));
    CHECK_INT(cron_count(&daily, z, from, to), civil_days(2040, 1, 2) - civil_days(2000, 1, 2));
    CHECK_INT(cron_count(&daily, z, to, from), 0);
    tz_free(z);
}

TEST(bounds)
{
    struct cron c = parsed("* * * * *");
    CHECK_INT(cron_next(&c, tz_utc(), CIVIL_TIME_MAX), CRON_NEVER);
    CHECK_INT(cron_next(&c, tz_utc(), INT64_MAX), CRON_NEVER);
    CHECK_INT(cron_next(&c, tz_utc(), INT64_MIN), CIVIL_TIME_MIN + 60);
    CHECK_INT(cron_prev(&c, tz_utc(), CIVIL_TIME_MIN), CRON_NEVER);
    CHECK_INT(cron_prev(&c, tz_utc(), INT64_MAX), CIVIL_TIME_MAX - 59);
    CHECK_INT(cron_prev(&c, tz_utc(), 60), 0);
    CHECK_INT(cron_prev(&c, tz_utc(), 61), 60);
    /* The rarest expressions a parse accepts still have a next tick. */
    c = parsed("0 0 29 2 *");
    CHECK_INT(cron_next(&c, tz_utc(), utc(2096, 2, 29, 0, 0)), utc(2104, 2, 29, 0, 0));
    CHECK_INT(cron_prev(&c, tz_utc(), utc(2104, 2, 29, 0, 0)), utc(2096, 2, 29, 0, 0));
    c = parsed("0 0 */31 2 */6"); /* February 1st on a Saturday or Sunday */
    CHECK_INT(cron_next(&c, tz_utc(), utc(2026, 1, 1, 0, 0)), utc(2026, 2, 1, 0, 0));
    CHECK_INT(cron_next(&c, tz_utc(), utc(2026, 2, 1, 0, 0)), utc(2031, 2, 1, 0, 0));
}

TEST_MAIN(TEST_ENTRY(parse_fields), TEST_ENTRY(parse_errors), TEST_ENTRY(next_in_utc),
          TEST_ENTRY(next_across_dst), TEST_ENTRY(next_prev_count_agree_with_brute_force),
          TEST_ENTRY(count_over_years), TEST_ENTRY(bounds))
