/* The ticks of a cron expression in a zone (cron.h): walk the matching local minutes day by day
 * (forward for cron_next, backward for cron_prev) and map each to its instant with
 * tz_local_to_utc(); the mapping is monotone, so the first instant past the bound is the
 * answer. cron_count() counts whole quiet days without walking them. */
#include "cron.h"

#define DAY 86400

/* The values of a bit set, ascending, into v; returns how many. */
static int values(uint64_t set, int max, int v[60])
{
    int n = 0;
    for (int i = 0; i <= max; i++)
        if (set >> i & 1)
            v[n++] = i;
    return n;
}

/* From the local minute `lt` (local seconds, rounded down to its minute) on, in direction dir
 * (+1 forward, -1 backward), the first matching local minute whose instant lies past bound
 * (> bound forward, < bound backward). CRON_NEVER after CRON_SEARCH_DAYS days. */
static int64_t walk(const struct cron *c, const struct tz *z, int64_t lt, int dir, int64_t bound)
{
    int hv[60], mv[60];
    int nh = values(c->hour, 23, hv), nm = values(c->minute, 59, mv);
    int64_t day = civil_day_of(lt);
    int start = (int)((lt - day * DAY) / 60); /* minute of the first day */
    for (int k = 0; k<CRON_SEARCH_DAYS; k++, day += dir, start = dir> 0 ? 0 : 1439) {
        struct civil_date d = civil_date_of(day);
        if (d.year < CIVIL_YEAR_MIN || d.year > CIVIL_YEAR_MAX)
            return CRON_NEVER;
        if (!cron_day_matches(c, d.year, d.month, d.day))
            continue;
        for (int a = 0; a < nh; a++) {
            int h = hv[dir > 0 ? a : nh - 1 - a];
            if ((dir > 0 && (h + 1) * 60 <= start) || (dir < 0 && h * 60 > start))
                continue;
            for (int b = 0; b < nm; b++) {
                int m = mv[dir > 0 ? b : nm - 1 - b];
                if ((dir > 0 && h * 60 + m < start) || (dir < 0 && h * 60 + m > start))
                    continue;
                int64_t t;
                tz_local_to_utc(z, day * DAY + h * 3600 + m * 60, &t, NULL);
                if (dir > 0 ? t > bound : t < bound)
                    return t;
            }
        }
    }
    return CRON_NEVER;
}

int64_t cron_next(const struct cron *c, const struct tz *z, int64_t after)
{
    if (after >= CIVIL_TIME_MAX)
        return CRON_NEVER;
    if (after < CIVIL_TIME_MIN)
        after = CIVIL_TIME_MIN;
    /* Local minutes before the one of `after` map to instants <= after (monotone mapping). */
    int64_t lt = after + tz_offset(z, after);
    return walk(c, z, lt - (lt - civil_day_of(lt) * DAY) % 60, 1, after);
}

/* The largest offset of z at the instants of [from, to): the changes in it are few. */
static int32_t max_offset(const struct tz *z, int64_t from, int64_t to)
{
    int32_t max = tz_offset(z, from);
    for (int k = 0; k < 16; k++) {
        from = tz_next_change(z, from);
        if (from >= to)
            return max;
        int32_t off = tz_offset(z, from);
        max = off > max ? off : max;
    }
    return TZ_OFFSET_MAX; /* many changes: the bound of every offset */
}

int64_t cron_prev(const struct cron *c, const struct tz *z, int64_t before)
{
    if (before <= CIVIL_TIME_MIN)
        return CRON_NEVER;
    if (before > CIVIL_TIME_MAX)
        before = CIVIL_TIME_MAX;
    /* A tick < before is the instant of a local time below (before - 1) plus the largest offset
     * of the instants that can name it (those within two offsets' span of before): start
     * there, so that a dense expression is answered in a few steps. */
    int64_t lt = before - 1 + max_offset(z, before - 2 * TZ_OFFSET_MAX - 2, before);
    lt = civil_clamp(lt);
    return walk(c, z, lt - (lt - civil_day_of(lt) * DAY) % 60, -1, before);
}

/* The ticks in [from, to), one by one. */
static int64_t count_walk(const struct cron *c, const struct tz *z, int64_t from, int64_t to)
{
    int64_t n = 0;
    for (int64_t t = cron_next(c, z, from - 1); t < to; t = cron_next(c, z, t))
        n++;
    return n;
}

/* The first instant of local day `day` (its 00:00, or the end of a gap over it). */
static int64_t day_start(const struct tz *z, int64_t day)
{
    int64_t t;
    tz_local_to_utc(z, day * DAY, &t, NULL);
    return t;
}

int64_t cron_count(const struct cron *c, const struct tz *z, int64_t from, int64_t to)
{
    if (from < CIVIL_TIME_MIN)
        from = CIVIL_TIME_MIN;
    if (to > CIVIL_TIME_MAX)
        to = CIVIL_TIME_MAX;
    if (to <= from)
        return 0;
    int64_t per_day = (int64_t)__builtin_popcountll(c->minute) * __builtin_popcount(c->hour);
    int64_t day = civil_day_of(from + tz_offset(z, from)) + 1;
    int64_t cur = day_start(z, day);
    for (int k = 0; k < 8 && cur <= from; k++) /* from was in a repeated hour past midnight */
        cur = day_start(z, ++day);
    int64_t n = count_walk(c, z, from, cur < to ? cur : to);
    /* Day by day: a day far (3 days) from any offset change holds its matching minutes once
     * each, in [its start, the next day's start); any other day is walked. */
    while (cur < to) {
        int64_t next = day_start(z, day + 1);
        struct civil_date d = civil_date_of(day);
        if (next <= to && next - cur == DAY && tz_next_change(z, cur - 3 * DAY) > next + 3 * DAY)
            n += cron_day_matches(c, d.year, d.month, d.day) ? per_day : 0;
        else
            n += count_walk(c, z, cur, next < to ? next : to);
        cur = next;
        day++;
    }
    return n;
}
