/* Time zones (server/domain/tz.h, civil.h): TZif files of the system's tzdata decoded and asked
 * for offsets, changes and local times at known dates (the expected instants were computed
 * with Python's zoneinfo), POSIX TZ rules alone, and truncated or corrupt files that must be
 * refused without a crash. */
#include <stdlib.h>
#include <string.h>

#include "test_zone_util.h"
#include "testlib.h"

TEST(civil_dates)
{
    CHECK_INT(civil_days(1970, 1, 1), 0);
    CHECK_INT(civil_days(2000, 3, 1), 11017);
    CHECK_INT(civil_days(1969, 12, 31), -1);
    CHECK_INT(civil_days(1, 1, 1) * 86400, CIVIL_TIME_MIN);
    CHECK_INT(civil_days(9999, 12, 31) * 86400 + 86399, CIVIL_TIME_MAX);
    CHECK_INT(civil_weekday(civil_days(2026, 3, 29)), 0); /* a Sunday */
    CHECK_INT(civil_weekday(civil_days(1970, 1, 1)), 4);
    CHECK_INT(civil_weekday(civil_days(1969, 12, 28)), 0);
    CHECK_INT(civil_leap(2000), 1);
    CHECK_INT(civil_leap(2100), 0);
    CHECK_INT(civil_leap(2028), 1);
    CHECK_INT(civil_month_days(2028, 2), 29);
    CHECK_INT(civil_month_days(2100, 2), 28);
    CHECK_INT(civil_day_of(-1), -1);
    CHECK_INT(civil_day_of(86399), 0);
    CHECK_INT(civil_day_of(-86400), -1);
    CHECK_INT(civil_day_of(-86401), -2);
    /* Round trips over every day of years 1..9999, stepping a prime number of days. */
    for (int64_t day = civil_days(1, 1, 1); day <= civil_days(9999, 12, 31); day += 97) {
        struct civil_date d = civil_date_of(day);
        CHECK(d.month >= 1 && d.month <= 12 && d.day >= 1 &&
              d.day <= civil_month_days(d.year, d.month));
        CHECK_INT(civil_days(d.year, d.month, d.day), day);
    }
}

TEST(utc_zone)
{
    const struct tz *u = tz_utc();
    int64_t a = 0, b = 0;
    CHECK_INT(tz_offset(u, utc(2026, 3, 29, 1, 0)), 0);
    CHECK_INT(tz_next_change(u, 0), TZ_NEVER);
    CHECK_INT(tz_local_to_utc(u, LOCAL(2026, 3, 29, 2, 30), &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 3, 29, 2, 30));
    CHECK_INT(b, a);
    tz_free(u); /* ignored */
    tz_free(NULL);
    struct tz *f = zone("UTC"); /* the file, a v2 file without transitions: footer "UTC0" */
    CHECK(f != NULL);
    CHECK_INT(tz_offset(f, utc(2100, 1, 1, 0, 0)), 0);
    CHECK_INT(tz_next_change(f, 0), TZ_NEVER);
    tz_free(f);
}

/* A zone's changes in one year, as Python's zoneinfo sees them. */
struct year_changes {
    const char *zone;
    int64_t year;
    int64_t at[2];  /* the two changes of the year */
    int32_t off[3]; /* offsets before, between and after */
};

static const struct year_changes changes[] = {
    {"Europe/Berlin", 2026, {1774746000, 1792890000}, {3600, 7200, 3600}},
    {"America/New_York", 2026, {1772953200, 1793512800}, {-18000, -14400, -18000}},
    {"Australia/Sydney", 2026, {1775318400, 1791043200}, {39600, 36000, 39600}},
    {"America/Santiago", 2026, {1775358000, 1788667200}, {-10800, -14400, -10800}},
    {"Asia/Jerusalem", 2026, {1774569600, 1792882800}, {7200, 10800, 7200}},
    {"America/Nuuk", 2026, {1774746000, 1792890000}, {-7200, -3600, -7200}},
    {"Australia/Lord_Howe", 2026, {1775314800, 1791041400}, {39600, 37800, 39600}},
    /* After the files' last transition (2037): the footer's rule. */
    {"Europe/Berlin", 2040, {2216250000, 2234998800}, {3600, 7200, 3600}},
    {"America/New_York", 2040, {2215062000, 2235621600}, {-18000, -14400, -18000}},
    {"Australia/Sydney", 2040, {2216822400, 2233152000}, {39600, 36000, 39600}},
    {"America/Santiago", 2040, {2217466800, 2230171200}, {-10800, -14400, -10800}},
    {"Asia/Jerusalem", 2040, {2216073600, 2234991600}, {7200, 10800, 7200}},
    {"America/Nuuk", 2040, {2216250000, 2234998800}, {-7200, -3600, -7200}},
    {"Australia/Lord_Howe", 2040, {2216818800, 2233150200}, {39600, 37800, 39600}},
    {"Europe/Berlin", 2100, {4109878800, 4128627600}, {3600, 7200, 3600}},
    {"America/New_York", 2100, {4108690800, 4129250400}, {-18000, -14400, -18000}},
    {"Australia/Sydney", 2100, {4110451200, 4126176000}, {39600, 36000, 39600}},
    {"America/Santiago", 2100, {4110490800, 4123800000}, {-10800, -14400, -10800}},
    {"Asia/Jerusalem", 2100, {4109702400, 4128620400}, {7200, 10800, 7200}},
    {"America/Nuuk", 2100, {4109878800, 4128627600}, {-7200, -3600, -7200}},
    {"Australia/Lord_Howe", 2100, {4110447600, 4126174200}, {39600, 37800, 39600}},
};

TEST(offsets_and_changes)
{
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        const struct year_changes *c = &changes[i];
        struct tz *z = zone(c->zone);
        CHECK(z != NULL);
        int64_t jan1 = utc(c->year, 1, 1, 0, 0);
        int ok = tz_offset(z, jan1) == c->off[0] && tz_next_change(z, jan1) == c->at[0] &&
                 tz_offset(z, c->at[0] - 1) == c->off[0] && tz_offset(z, c->at[0]) == c->off[1] &&
                 tz_next_change(z, c->at[0] - 1) == c->at[0] &&
                 tz_next_change(z, c->at[0]) == c->at[1] &&
                 tz_offset(z, c->at[1] - 1) == c->off[1] && tz_offset(z, c->at[1]) == c->off[2] &&
                 tz_next_change(z, c->at[1]) > utc(c->year, 12, 31, 0, 0);
        if (!ok)
            fprintf(stderr, "zone %s year %lld: next %lld, offsets %d %d %d\n", c->zone,
                    (long long)c->year, (long long)tz_next_change(z, jan1), (int)tz_offset(z, jan1),
                    (int)tz_offset(z, c->at[0]), (int)tz_offset(z, c->at[1]));
        tz_free(z);
        CHECK(ok);
    }
}

/* tz_local_to_utc of the wall-clock time y-m-d h:mi in `name`. */
static enum tz_local_kind local(const char *name, int64_t y, int m, int d, int h, int mi,
                                int64_t *first, int64_t *second)
{
    struct tz *z = zone(name);
    if (!z)
        return (enum tz_local_kind) - 1;
    enum tz_local_kind k = tz_local_to_utc(z, LOCAL(y, m, d, h, mi), first, second);
    tz_free(z);
    return k;
}

TEST(local_times)
{
    int64_t a, b;
    /* Berlin: 02:30 does not exist on 2026-03-29 (the gap ends at 03:00 CEST = 01:00 UTC), and
     * occurs twice on 2026-10-25 (00:30 and 01:30 UTC). */
    CHECK_INT(local("Europe/Berlin", 2026, 3, 29, 2, 30, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2026, 3, 29, 1, 0));
    CHECK_INT(local("Europe/Berlin", 2026, 3, 29, 3, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 3, 29, 1, 0));
    CHECK_INT(local("Europe/Berlin", 2026, 3, 29, 1, 59, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 3, 29, 0, 59));
    CHECK_INT(local("Europe/Berlin", 2026, 10, 25, 2, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2026, 10, 25, 0, 30));
    CHECK_INT(b, utc(2026, 10, 25, 1, 30));
    CHECK_INT(local("Europe/Berlin", 2026, 10, 25, 3, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 10, 25, 2, 0));
    CHECK_INT(local("Europe/Berlin", 2026, 7, 1, 12, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 7, 1, 10, 0));
    /* New York 2026: 02:30 on March 8 is in the gap (ends 07:00 UTC), 01:30 on November 1
     * twice. */
    CHECK_INT(local("America/New_York", 2026, 3, 8, 2, 30, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2026, 3, 8, 7, 0));
    CHECK_INT(local("America/New_York", 2026, 11, 1, 1, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2026, 11, 1, 5, 30));
    CHECK_INT(b, utc(2026, 11, 1, 6, 30));
    /* Lord Howe: a 30-minute shift. 02:15 on 2026-10-04 is in the gap 02:00-02:30 (ends 15:30
     * UTC the day before); 01:45 on 2026-04-05 occurs at +11 and at +10:30. */
    CHECK_INT(local("Australia/Lord_Howe", 2026, 10, 4, 2, 15, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2026, 10, 3, 15, 30));
    CHECK_INT(local("Australia/Lord_Howe", 2026, 4, 5, 1, 45, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2026, 4, 4, 14, 45));
    CHECK_INT(b, utc(2026, 4, 4, 15, 15));
    /* Sydney (southern hemisphere): the gap in October, the repeat in April. */
    CHECK_INT(local("Australia/Sydney", 2026, 10, 4, 2, 30, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2026, 10, 3, 16, 0));
    CHECK_INT(local("Australia/Sydney", 2026, 4, 5, 2, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2026, 4, 4, 15, 30));
    CHECK_INT(b, utc(2026, 4, 4, 16, 30));
    /* Santiago changes at 24:00: the gap is 2026-09-06 00:00-01:00, the repeat 04-04 23:xx. */
    CHECK_INT(local("America/Santiago", 2026, 9, 6, 0, 30, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2026, 9, 6, 4, 0));
    CHECK_INT(local("America/Santiago", 2026, 4, 4, 23, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2026, 4, 5, 2, 30));
    CHECK_INT(b, utc(2026, 4, 5, 3, 30));
    /* Kolkata: +05:30, no DST. */
    CHECK_INT(local("Asia/Kolkata", 2026, 6, 1, 9, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2026, 6, 1, 3, 30));
    CHECK_INT(local("Asia/Kolkata", 2100, 6, 1, 9, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2100, 6, 1, 3, 30));
    /* Apia skipped 2011-12-30 (-10 to +14): all of that day is one gap ending at 10:00 UTC. */
    CHECK_INT(local("Pacific/Apia", 2011, 12, 29, 12, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2011, 12, 29, 22, 0));
    CHECK_INT(local("Pacific/Apia", 2011, 12, 30, 12, 0, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2011, 12, 30, 10, 0));
    CHECK_INT(local("Pacific/Apia", 2011, 12, 31, 12, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(2011, 12, 30, 22, 0));
    /* Kiritimati skipped 1994-12-31 the same way. */
    CHECK_INT(local("Pacific/Kiritimati", 1994, 12, 31, 0, 0, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(1994, 12, 31, 10, 0));
    CHECK_INT(local("Pacific/Kiritimati", 1995, 1, 1, 12, 0, &a, &b), TZ_LOCAL_ONE);
    CHECK_INT(a, utc(1994, 12, 31, 22, 0));
    /* Far future, from the footer: Berlin 2100, New York 2040. */
    CHECK_INT(local("Europe/Berlin", 2100, 3, 28, 2, 30, &a, &b), TZ_LOCAL_GAP);
    CHECK_INT(a, utc(2100, 3, 28, 1, 0));
    CHECK_INT(local("Europe/Berlin", 2100, 10, 31, 2, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2100, 10, 31, 0, 30));
    CHECK_INT(b, utc(2100, 10, 31, 1, 30));
    CHECK_INT(local("America/New_York", 2040, 11, 4, 1, 30, &a, &b), TZ_LOCAL_TWICE);
    CHECK_INT(a, utc(2040, 11, 4, 5, 30));
}

/* The offset of rule `spec` at t, or INT32_MIN when it does not parse. */
static int64_t rule_offset(const char *spec, int64_t t)
{
    struct tz *z = NULL;
    const char *why = NULL;
    if (tz_from_posix(spec, strlen(spec), &z, &why) != TZ_OK)
        return INT32_MIN;
    int32_t off = tz_offset(z, t);
    tz_free(z);
    return off;
}

TEST(posix_rules)
{
    CHECK_INT(rule_offset("UTC0", 0), 0);
    CHECK_INT(rule_offset("<+0330>-3:30", utc(2030, 1, 1, 0, 0)), 12600);
    CHECK_INT(rule_offset("<-0930>9:30", 0), -34200);
    CHECK_INT(rule_offset("EST5EDT,M3.2.0,M11.1.0", utc(2026, 3, 8, 6, 59)), -18000);
    CHECK_INT(rule_offset("EST5EDT,M3.2.0,M11.1.0", utc(2026, 3, 8, 7, 0)), -14400);
    CHECK_INT(rule_offset("EST5EDT,M3.2.0,M11.1.0", utc(2026, 11, 1, 5, 59)), -14400);
    CHECK_INT(rule_offset("EST5EDT,M3.2.0,M11.1.0", utc(2026, 11, 1, 6, 0)), -18000);
    /* Default DST offset (one hour east) and default time 02:00. */
    CHECK_INT(rule_offset("EST5EDT4,M3.2.0/2:00:00,M11.1.0/2", utc(2026, 7, 1, 0, 0)), -14400);
    /* Jn never counts February 29: J60 is March 1 in every year; n counts it: 59 is Feb 29 in
     * a leap year. DST (+1h east) from that day 00:00 to J300. */
    CHECK_INT(rule_offset("AAA0BBB,J60/0,J300", utc(2028, 2, 29, 23, 59)), 0);
    CHECK_INT(rule_offset("AAA0BBB,J60/0,J300", utc(2028, 3, 1, 0, 0)), 3600);
    CHECK_INT(rule_offset("AAA0BBB,59/0,J300", utc(2028, 2, 28, 23, 59)), 0);
    CHECK_INT(rule_offset("AAA0BBB,59/0,J300", utc(2028, 2, 29, 0, 0)), 3600);
    CHECK_INT(rule_offset("AAA0BBB,59/0,J300", utc(2027, 3, 1, 0, 0)), 3600);
    CHECK_INT(rule_offset("AAA0BBB,59/0,J300", utc(2027, 2, 28, 23, 59)), 0);
    /* Negative and >24h rule times (RFC 8536): Nuuk's -1 and -2, Jerusalem's 26. */
    CHECK_INT(rule_offset("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", utc(2040, 3, 25, 0, 59)), -7200);
    CHECK_INT(rule_offset("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", utc(2040, 3, 25, 1, 0)), -3600);
    CHECK_INT(rule_offset("IST-2IDT,M3.4.4/26,M10.5.0", utc(2040, 3, 22, 23, 59)), 7200);
    CHECK_INT(rule_offset("IST-2IDT,M3.4.4/26,M10.5.0", utc(2040, 3, 23, 0, 0)), 10800);
    /* DST all year (RFC 8536 3.3.1's example): -4h for ever, no change. */
    struct tz *z = NULL;
    CHECK_INT(tz_from_posix("EST5EDT,0/0,J365/25", 19, &z, NULL), TZ_OK);
    for (int64_t y = 2020; y < 2030; y++)
        for (int m = 1; m <= 12; m++)
            CHECK_INT(tz_offset(z, utc(y, m, 1, 0, 0)), -14400);
    CHECK_INT(tz_next_change(z, utc(2026, 1, 1, 0, 0)), TZ_NEVER);
    tz_free(z);
    /* DST periods that overlap (each ends on January 2 of the next year, after the next one
     * began): one answer per instant, whichever year it is looked at from (found by fuzzing). */
    CHECK_INT(tz_from_posix("EST5UDT,0/5,J365/53", 19, &z, NULL), TZ_OK);
    for (int64_t t = utc(1899, 12, 25, 0, 0); t < utc(1900, 1, 10, 0, 0); t += 1800) {
        int64_t c = tz_next_change(z, t);
        CHECK(c > t);
        CHECK(c == TZ_NEVER ||
              (tz_offset(z, c - 1) == tz_offset(z, t) && tz_offset(z, c) != tz_offset(z, t)));
    }
    tz_free(z);
    /* Southern hemisphere: DST from October to April. */
    CHECK_INT(rule_offset("AEST-10AEDT,M10.1.0,M4.1.0/3", utc(2040, 1, 15, 0, 0)), 39600);
    CHECK_INT(rule_offset("AEST-10AEDT,M10.1.0,M4.1.0/3", utc(2040, 7, 15, 0, 0)), 36000);
    static const char *const bad[] = {
        "",
        "AB0",
        "CET",
        "CET-1CEST",
        "CET-1CEST,M3.5.0",
        "CET-1CEST,M13.1.0,M10.5.0",
        "CET-1CEST,M3.6.0,M10.5.0",
        "CET-1CEST,M3.5.7,M10.5.0",
        "CET-25",
        "CET-1:60",
        "CET-1CEST,M3.5.0/168,M10.5.0",
        "CET-1CEST,J0,J365",
        "CET-1CEST,366,J365",
        "<AB>0",
        "<ABC",
        "<A_C>0",
        "CET-1 ",
        "CET-1CEST,M3.5.0,M10.5.0/3x",
        "CET-1CEST-2:00:00:00",
        "CET-1CEST,M3.5.0,M10.5.0/",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *why = NULL;
        z = NULL;
        if (tz_from_posix(bad[i], strlen(bad[i]), &z, &why) != TZ_INVALID || !why) {
            fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
            tz_free(z);
            CHECK(0);
        }
    }
    char longer[TZ_FOOTER_MAX + 2];
    memset(longer, 'A', sizeof longer);
    CHECK_INT(tz_from_posix(longer, sizeof longer, &z, NULL), TZ_INVALID);
}

TEST(zone_names)
{
    static const char *const good[] = {
        "UTC",       "Europe/Berlin", "America/Argentina/Buenos_Aires",
        "Etc/GMT+5", "Etc/GMT-14",    "America/Port-au-Prince",
        "EST5EDT"};
    static const char *const bad[] = {
        "",    "/etc/passwd",    "../etc/passwd",  "Europe/../../x", "Europe//Berlin", "Europe/",
        "a.b", "Europe/Berlin ", "Europe\\Berlin", "~root",          "Europe/Ber%6cin"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK_INT(tz_name_check(good[i], strlen(good[i])), 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(tz_name_check(bad[i], strlen(bad[i])), 0);
    CHECK_INT(tz_name_check("UTC\0x", 5), 0);
    char n[TZ_NAME_MAX + 1];
    memset(n, 'a', sizeof n);
    CHECK_INT(tz_name_check(n, TZ_NAME_MAX), 1);
    CHECK_INT(tz_name_check(n, TZ_NAME_MAX + 1), 0);
}

/* A TZif file written by hand: version v ('\0' for 1), one transition at `at` from type 0
 * (offset off0) to type 1 (off1), with v1 data and, from version 2, the 64-bit block and
 * `footer`. Returns its length in buf. */
static size_t tzif(unsigned char *buf, char v, int64_t at, int32_t off0, int32_t off1,
                   const char *footer)
{
    size_t n = 0;
    for (int pass = 0; pass < (v ? 2 : 1); pass++) {
        int tsize = pass ? 8 : 4;
        memcpy(buf + n, "TZif", 4);
        buf[n + 4] = (unsigned char)v;
        memset(buf + n + 5, 0, 39);
        uint32_t counts[6] = {0, 0, 0, 1, 2, 4}; /* isut isstd leap time type char */
        for (int i = 0; i < 6; i++)
            for (int k = 0; k < 4; k++)
                buf[n + 20 + i * 4 + k] = (unsigned char)(counts[i] >> (24 - 8 * k));
        n += 44;
        for (int k = 0; k < tsize; k++)
            buf[n++] = (unsigned char)((uint64_t)at >> (8 * (tsize - 1 - k)));
        buf[n++] = 1;
        int32_t offs[2] = {off0, off1};
        for (int t = 0; t < 2; t++) {
            for (int k = 0; k < 4; k++)
                buf[n++] = (unsigned char)((uint32_t)offs[t] >> (24 - 8 * k));
            buf[n++] = (unsigned char)t; /* isdst */
            buf[n++] = 0;                /* abbreviation index */
        }
        memcpy(buf + n, "AB\0\0", 4);
        n += 4;
    }
    if (v) {
        size_t f = strlen(footer);
        buf[n++] = '\n';
        memcpy(buf + n, footer, f);
        n += f;
        buf[n++] = '\n';
    }
    return n;
}

TEST(tzif_versions)
{
    unsigned char buf[512];
    struct tz *z = NULL;
    const char *why = NULL;
    /* Version 1: 32-bit data only, no footer: the last type holds for ever. */
    size_t n = tzif(buf, 0, 1000000, 3600, 7200, "");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_OK);
    CHECK_INT(tz_offset(z, 999999), 3600);
    CHECK_INT(tz_offset(z, 1000000), 7200);
    CHECK_INT(tz_offset(z, utc(2100, 1, 1, 0, 0)), 7200);
    CHECK_INT(tz_next_change(z, 0), 1000000);
    CHECK_INT(tz_next_change(z, 1000000), TZ_NEVER);
    tz_free(z);
    /* Version 2 with an empty footer, and version 3 with a footer beyond POSIX (/26). */
    n = tzif(buf, '2', 1000000, 3600, 7200, "");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_OK);
    CHECK_INT(tz_offset(z, utc(2100, 1, 1, 0, 0)), 7200);
    tz_free(z);
    n = tzif(buf, '3', 1000000, 7200, 10800, "IST-2IDT,M3.4.4/26,M10.5.0");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_OK);
    CHECK_INT(tz_offset(z, 0), 7200);
    CHECK_INT(tz_offset(z, utc(2040, 3, 23, 0, 0)), 10800);
    CHECK_INT(tz_offset(z, utc(2040, 12, 1, 0, 0)), 7200);
    tz_free(z);
    /* The file's own bounds: an offset out of range, a bad footer, an unknown version, bytes
     * after the footer, a file too large. */
    n = tzif(buf, '2', 1000000, 3600, TZ_OFFSET_MAX + 1, "");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_INVALID);
    n = tzif(buf, '2', 1000000, 3600, 7200, "CET-1CEST");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_INVALID);
    n = tzif(buf, 0, 1000000, 3600, 7200, ""); /* one leap-second record (8 bytes in v1) */
    buf[31] = 1;
    memset(buf + n, 0, 8);
    why = NULL;
    CHECK_INT(tz_parse(buf, n + 8, &z, &why), TZ_INVALID);
    CHECK(why && strstr(why, "leap"));
    n = tzif(buf, '9', 1000000, 3600, 7200, "");
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_INVALID);
    n = tzif(buf, '2', 1000000, 3600, 7200, "");
    buf[n++] = 'x';
    CHECK_INT(tz_parse(buf, n, &z, &why), TZ_INVALID);
    unsigned char *big = calloc(1, TZ_FILE_MAX + 1);
    CHECK(big != NULL);
    memcpy(big, buf, n - 1);
    why = NULL;
    CHECK_INT(tz_parse(big, TZ_FILE_MAX + 1, &z, &why), TZ_INVALID);
    free(big);
    CHECK(why && strstr(why, "too large"));
}

/* Decode buf[0..len) and, when it is accepted, ask it things: nothing may crash. */
static int probe(const unsigned char *buf, size_t len)
{
    struct tz *z = NULL;
    enum tz_result r = tz_parse(buf, len, &z, NULL);
    if (r == TZ_OK) {
        int64_t a, b;
        for (int64_t t = utc(1900, 1, 1, 0, 0); t < utc(2200, 1, 1, 0, 0); t += 86400 * 997) {
            (void)tz_offset(z, t);
            (void)tz_next_change(z, t);
            (void)tz_local_to_utc(z, t, &a, &b);
        }
        tz_free(z);
    }
    return r;
}

TEST(truncated_and_corrupt_files)
{
    static const char *const names[] = {"Europe/Berlin", "Asia/Kolkata", "America/Santiago", "UTC"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = 0;
        unsigned char *full = zone_file(names[i], &len);
        CHECK(full != NULL && len > 44 && len <= TZ_FILE_MAX);
        CHECK_INT(probe(full, len), TZ_OK);
        /* Every proper prefix is refused (each in a buffer of its own size, so that a read past
         * its end is a read past the allocation, which the sanitizer build catches). */
        for (size_t n = 0; n < len; n++) {
            unsigned char *cut = malloc(n ? n : 1);
            memcpy(cut, full, n);
            int r = probe(cut, n);
            free(cut);
            if (r != TZ_INVALID)
                fprintf(stderr, "%s cut at %zu: %d\n", names[i], n, r);
            CHECK_INT(r, TZ_INVALID);
        }
        /* Each byte replaced by a few values: refused or decoded, never a crash. */
        static const unsigned char vals[] = {0x00, 0xff, 0x7f, 0x80};
        for (size_t n = 0; n < len; n++)
            for (size_t k = 0; k < sizeof vals; k++) {
                unsigned char keep = full[n];
                full[n] = vals[k];
                int r = probe(full, len);
                full[n] = keep;
                CHECK(r == TZ_OK || r == TZ_INVALID);
            }
        free(full);
    }
}

TEST_MAIN(TEST_ENTRY(civil_dates), TEST_ENTRY(utc_zone), TEST_ENTRY(offsets_and_changes),
          TEST_ENTRY(local_times), TEST_ENTRY(posix_rules), TEST_ENTRY(zone_names),
          TEST_ENTRY(tzif_versions), TEST_ENTRY(truncated_and_corrupt_files))
