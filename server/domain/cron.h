/* Cron expressions: parse the five fields (minute hour day-of-month month day-of-week) or a
 * macro, and find the ticks of an expression in a time zone. Pure: no I/O, no clock (the
 * instants are parameters).
 *
 * The zone rules (../shared/API.md "Schedules"): a matching local time that does not exist
 * (spring forward) fires at the instant the gap ends (the first minute after the gap); a local
 * time that occurs twice (fall back) fires once, at its first occurrence; several matching
 * local times that name the same instant (the gap-shifted ones and the real match at the end
 * of the gap) are one tick. So the ticks are the distinct values of tz_local_to_utc()'s first
 * instant over the matching local minutes, in order. */
#ifndef JOBQ_CRON_H
#define JOBQ_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "tz.h"

#define CRON_EXPR_MAX 200      /* bytes of an expression */
#define CRON_ERR_MAX 128       /* bytes of an error message, NUL included (enough for any) */
#define CRON_NEVER INT64_MAX   /* no tick (after the search bound) */
#define CRON_SEARCH_DAYS 10300 /* local days cron_next/cron_prev look through (28 years) */

/* A parsed expression: one bit per allowed value. Plain data; copy it freely. */
struct cron {
    uint64_t minute;  /* bit m: minute m, 0..59 */
    uint32_t hour;    /* bit h: hour h, 0..23 */
    uint32_t dom;     /* bit d: day of month d, 1..31 */
    uint16_t month;   /* bit m: month m, 1..12 */
    uint8_t dow;      /* bit d: day of week d, 0 Sunday .. 6 Saturday (7 is stored as 0) */
    uint8_t dom_star; /* 1 when the day-of-month field starts with "*" */
    uint8_t dow_star; /* 1 when the day-of-week field starts with '*' */
};

/* Parse expr[0..len). Fields are separated by spaces or tabs (leading and trailing ones are
 * ignored); each is a comma-separated list of items: `*`, a value, a range `a-b` (a <= b), each
 * optionally followed by a step `/n` (n >= 1), and `a/n` meaning `a-max/n`. Months take JAN..DEC
 * and days of week SUN..SAT, case-insensitive, also in ranges; day-of-week 7 is Sunday.
 * Macros: @yearly and @annually ("0 0 1 1 *"), @monthly ("0 0 1 * *"), @weekly ("0 0 * * 0"),
 * @daily and @midnight ("0 0 * * *"), @hourly ("0 * * * *"), case-insensitive.
 * The day rule (Vixie cron): when both day fields are restricted (neither starts with '*') a day
 * matches if either matches; otherwise both must (a '*' field matches every day).
 * Rejected: more than CRON_EXPR_MAX bytes, a NUL byte, not exactly 5 fields, a bad item, a
 * value out of range, a step outside 1..the field's maximum (59, 23, 31, 12, 7), a reversed
 * range (no wrap-around: FRI-MON is refused), a character other than letters, digits, blanks
 * and "*,-/" outside a macro, and an expression that can never fire (e.g. "0 0 30 2 *": whether
 * some day matches is decided over 28 years of calendar, where every month-day-weekday
 * combination occurs). Returns 0 and fills *out, or -1 and writes into err[0..errlen) (errlen
 * >= CRON_ERR_MAX is always enough; a bad token is quoted at most 40 bytes long) the message
 * the API returns verbatim, starting "cron: " and naming the field when one is at fault:
 * "cron: day-of-week: 8 is out of range 0-7", "cron: hour: bad step \"0-23/24\" (1-23)",
 * "cron: month: bad value \"JANUARY\"", "cron: minute: range 5-3 is reversed",
 * "cron: expected 5 fields, got 4", "cron: unknown macro \"@every\"",
 * "cron: unexpected character at byte 10", "cron: longer than 200 bytes",
 * "cron: can never fire (no day matches day-of-month and month)". On error *out is left
 * alone. This function can't fail otherwise. */
int cron_parse(const char *expr, size_t len, struct cron *out, char *err, size_t errlen);

/* 1 when the local date y-m-d (its weekday derived) matches c's month and day rule.
 * This function can't fail. */
int cron_day_matches(const struct cron *c, int64_t y, int m, int d);

/* The first tick of c strictly after the instant `after` (epoch seconds), evaluated in zone z
 * (tz_utc() for UTC); CRON_NEVER when none lies within CRON_SEARCH_DAYS local days (which a
 * parsed expression always has) or before CIVIL_TIME_MAX. Ticks fall on whole minutes of local
 * time, or on the instant a gap ends. This function can't fail. */
int64_t cron_next(const struct cron *c, const struct tz *z, int64_t after);

/* The last tick of c strictly before the instant `before`; CRON_NEVER when none lies within
 * CRON_SEARCH_DAYS local days or after CIVIL_TIME_MIN. cron_prev(c, z, cron_next(c, z, t)) is
 * the last tick <= t. This function can't fail. */
int64_t cron_prev(const struct cron *c, const struct tz *z, int64_t before);

/* The number of ticks t of c with from <= t < to (0 when to <= from), without visiting every
 * tick: whole local days without an offset change count arithmetically, only the ends and the
 * days with a change are walked. Cost grows with the days in the interval (years are cheap).
 * This function can't fail. */
int64_t cron_count(const struct cron *c, const struct tz *z, int64_t from, int64_t to);

#endif
