/* Civil calendar arithmetic (civil.h): the days-from-civil and civil-from-days conversions on
 * eras of 400 years (146097 days), so that every division is of a non-negative number. */
#include "civil.h"

int64_t civil_days(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* 0..399 */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* 0..146096 */
    return era * 146097 + doe - 719468;
}

struct civil_date civil_date_of(int64_t days)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    struct civil_date c;
    c.day = (int)(doy - (153 * mp + 2) / 5 + 1);
    c.month = (int)(mp < 10 ? mp + 3 : mp - 9);
    c.year = yoe + era * 400 + (c.month <= 2);
    return c;
}

int civil_weekday(int64_t days)
{
    int64_t w = (days + 4) % 7; /* 1970-01-01 was a Thursday */
    return (int)(w < 0 ? w + 7 : w);
}

int civil_leap(int64_t y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

int civil_month_days(int64_t y, int m)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 ? 28 + civil_leap(y) : days[m - 1];
}

int64_t civil_day_of(int64_t s)
{
    return s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
}

int64_t civil_clamp(int64_t s)
{
    return s < CIVIL_TIME_MIN ? CIVIL_TIME_MIN : s > CIVIL_TIME_MAX ? CIVIL_TIME_MAX : s;
}
