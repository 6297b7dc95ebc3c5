/* POSIX TZ rule strings (tz_posix.h): a small recursive-descent reader over a bounded buffer,
 * and the rule's changes as (instant, DST on/off) events of a few consecutive years. */
#include "tz_posix.h"

#include <ctype.h>

#include "civil.h"
#include "tz.h"

struct reader {
    const char *s;
    size_t len;
    size_t pos;
};

static int peek(const struct reader *r)
{
    return r->pos < r->len ? (unsigned char)r->s[r->pos] : -1;
}

static int eat(struct reader *r, int c)
{
    if (peek(r) != c)
        return 0;
    r->pos++;
    return 1;
}

/* A zone abbreviation: 3+ letters, or <...> of 3+ letters, digits, '+' and '-'. */
static int read_name(struct reader *r)
{
    size_t n = 0;
    if (eat(r, '<')) {
        while (peek(r) >= 0 && (isalnum(peek(r)) || peek(r) == '+' || peek(r) == '-')) {
            r->pos++;
            n++;
        }
        return eat(r, '>') && n >= 3;
    }
    while (peek(r) >= 0 && isalpha(peek(r))) {
        r->pos++;
        n++;
    }
    return n >= 3;
}

/* An unsigned number of at most `digits` digits, at most max. -1 when there is none. */
static long read_num(struct reader *r, int digits, long max)
{
    long v = 0;
    int n = 0;
    while (n < digits && peek(r) >= 0 && isdigit(peek(r))) {
        v = v * 10 + (peek(r) - '0');
        r->pos++;
        n++;
    }
    if (n == 0 || (peek(r) >= 0 && isdigit(peek(r))) || v > max)
        return -1;
    return v;
}

/* [+-]hh[:mm[:ss]] with hh <= max_hours; seconds into *out. */
static int read_hms(struct reader *r, long max_hours, int32_t *out)
{
    int neg = 0;
    if (eat(r, '-'))
        neg = 1;
    else
        eat(r, '+');
    long h = read_num(r, 3, max_hours), m = 0, s = 0;
    if (h < 0)
        return 0;
    if (eat(r, ':')) {
        if ((m = read_num(r, 2, 59)) < 0)
            return 0;
        if (eat(r, ':') && (s = read_num(r, 2, 59)) < 0)
            return 0;
    }
    long v = h * 3600 + m * 60 + s;
    *out = (int32_t)(neg ? -v : v);
    return 1;
}

static int read_date(struct reader *r, struct tz_rule_date *d)
{
    d->n = d->m = d->w = d->d = 0;
    d->time = 2 * 3600;
    if (eat(r, 'J')) {
        d->kind = 'J';
        if ((d->n = (int)read_num(r, 3, 365)) < 1)
            return 0;
    } else if (eat(r, 'M')) {
        d->kind = 'M';
        long m = read_num(r, 2, 12), w = -1, wd = -1;
        if (m >= 1 && eat(r, '.') && (w = read_num(r, 1, 5)) >= 1 && eat(r, '.'))
            wd = read_num(r, 1, 6);
        if (wd < 0)
            return 0;
        d->m = (int)m;
        d->w = (int)w;
        d->d = (int)wd;
    } else {
        d->kind = 'n';
        if ((d->n = (int)read_num(r, 3, 365)) < 0)
            return 0;
    }
    if (eat(r, '/'))
        return read_hms(r, 167, &d->time);
    return 1;
}

int tz_posix_parse(const char *s, size_t len, struct tz_posix *out, const char **why)
{
    struct reader r = {s, len, 0};
    struct tz_posix p = {0};
    int32_t off = 0;
    const char *bad = NULL;
    if (len == 0 || len > TZ_FOOTER_MAX)
        bad = "TZ rule: empty or too long";
    else if (!read_name(&r))
        bad = "TZ rule: bad standard time name";
    else if (!read_hms(&r, 24, &off))
        bad = "TZ rule: bad standard time offset";
    if (!bad) {
        p.std_off = -off;
        if (r.pos < len) {
            p.has_dst = 1;
            p.dst_off = p.std_off + 3600;
            if (!read_name(&r))
                bad = "TZ rule: bad daylight time name";
            else if (peek(&r) >= 0 && peek(&r) != ',') {
                if (read_hms(&r, 24, &off))
                    p.dst_off = -off;
                else
                    bad = "TZ rule: bad daylight time offset";
            }
            if (!bad &&
                !(eat(&r, ',') && read_date(&r, &p.start) && eat(&r, ',') && read_date(&r, &p.end)))
                bad = "TZ rule: bad or missing daylight time rule";
        }
    }
    if (!bad && r.pos != len)
        bad = "TZ rule: trailing characters";
    if (bad) {
        if (why)
            *why = bad;
        return -1;
    }
    *out = p;
    return 0;
}

/* The day number (civil.h) of rule date d in year y. */
static int64_t rule_day(const struct tz_rule_date *d, int64_t y)
{
    int64_t jan1 = civil_days(y, 1, 1);
    if (d->kind == 'J')
        return jan1 + d->n - 1 + (civil_leap(y) && d->n >= 60);
    if (d->kind == 'n')
        return jan1 + d->n;
    int64_t first = civil_days(y, d->m, 1);
    int64_t day = (d->d - civil_weekday(first) + 7) % 7 + (int64_t)(d->w - 1) * 7;
    while (day >= civil_month_days(y, d->m))
        day -= 7;
    return first + day;
}

struct event {
    int64_t at;
    int64_t year;
    int dst; /* 1: DST starts; 0: it ends */
};

#define NEVENTS 12

/* The rule's events of years y-2 .. y+3, sorted by instant (ties: the later year last). A rule
 * date lies within its year give or take 7 days (times up to 167 hours), so for an instant of
 * year y the last event at or before it is among these, whatever the rule (even one whose DST
 * periods overlap, e.g. "EST5EDT,0/5,J365/53"): every instant gets one answer, whichever year
 * its window is built from. */
static void events(const struct tz_posix *p, int64_t y, struct event ev[NEVENTS])
{
    for (int i = 0; i < NEVENTS / 2; i++) {
        int64_t yy = y - 2 + i;
        ev[2 * i] =
            (struct event){rule_day(&p->start, yy) * 86400 + p->start.time - p->std_off, yy, 1};
        ev[2 * i + 1] =
            (struct event){rule_day(&p->end, yy) * 86400 + p->end.time - p->dst_off, yy, 0};
    }
    for (int i = 1; i < NEVENTS; i++) {
        struct event e = ev[i];
        int j = i;
        while (j > 0 &&
               (ev[j - 1].at > e.at || (ev[j - 1].at == e.at && ev[j - 1].year > e.year))) {
            ev[j] = ev[j - 1];
            j--;
        }
        ev[j] = e;
    }
}

static int64_t year_of(const struct tz_posix *p, int64_t t)
{
    return civil_date_of(civil_day_of(t + p->std_off)).year;
}

/* Whether DST is on at t, given the sorted events around it (the last event <= t decides). */
static int dst_at(const struct event ev[NEVENTS], int64_t t)
{
    int on = 0;
    for (int i = 0; i < NEVENTS && ev[i].at <= t; i++)
        on = ev[i].dst;
    return on;
}

int32_t tz_posix_offset(const struct tz_posix *p, int64_t t)
{
    if (!p->has_dst)
        return p->std_off;
    struct event ev[NEVENTS];
    events(p, year_of(p, t), ev);
    return dst_at(ev, t) ? p->dst_off : p->std_off;
}

int64_t tz_posix_next_change(const struct tz_posix *p, int64_t t)
{
    if (!p->has_dst || p->dst_off == p->std_off)
        return INT64_MAX;
    int64_t y = year_of(p, t);
    struct event ev[NEVENTS];
    events(p, y, ev);
    int on = dst_at(ev, t);
    for (int i = 0; i < NEVENTS; i++) {
        if (ev[i].at <= t)
            continue;
        /* The state after every event at this instant (the last year's events are there to
         * close ties, e.g. DST all year: one year's end is the next one's start). */
        int after = ev[i].dst;
        int64_t year = ev[i].year;
        while (i + 1 < NEVENTS && ev[i + 1].at == ev[i].at)
            after = ev[++i].dst;
        if (after != on && year <= y + 2)
            return ev[i].at;
    }
    return INT64_MAX; /* DST all year (or never): no change within years; none ever */
}
