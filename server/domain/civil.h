/* Civil (proleptic Gregorian) calendar arithmetic on epoch seconds, the way a zone sees them:
 * "local seconds" are seconds since 1970-01-01 00:00 of a wall clock, as if that clock were UTC.
 * Pure functions: no I/O, no clock, no zone. Every function here can't fail for years in
 * CIVIL_YEAR_MIN..CIVIL_YEAR_MAX; callers clamp instants into CIVIL_TIME_MIN..CIVIL_TIME_MAX. */
#ifndef JOBQ_CIVIL_H
#define JOBQ_CIVIL_H

#include <stdint.h>

#define CIVIL_YEAR_MIN 1
#define CIVIL_YEAR_MAX 9999
#define CIVIL_TIME_MIN (-62135596800LL) /* 0001-01-01T00:00:00 */
#define CIVIL_TIME_MAX 253402300799LL   /* 9999-12-31T23:59:59 */

/* A civil date. */
struct civil_date {
    int64_t year;
    int month; /* 1..12 */
    int day;   /* 1..31 */
};

/* Days since 1970-01-01 of the date y-m-d (m 1..12, d 1..31; d past the month's end counts on
 * into the next month). */
int64_t civil_days(int64_t y, int m, int d);

/* The date of a day number (days since 1970-01-01). */
struct civil_date civil_date_of(int64_t days);

/* The day of the week of a day number: 0 Sunday .. 6 Saturday. */
int civil_weekday(int64_t days);

/* 1 when y is a leap year, else 0. */
int civil_leap(int64_t y);

/* The number of days of month m (1..12) in year y. */
int civil_month_days(int64_t y, int m);

/* Floor division of seconds into days (days since 1970-01-01 of the second s). */
int64_t civil_day_of(int64_t s);

/* s clamped into CIVIL_TIME_MIN..CIVIL_TIME_MAX. */
int64_t civil_clamp(int64_t s);

#endif
