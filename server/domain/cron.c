/* Cron expressions (cron.h): the parser and the day rule. The ticks in a zone are
 * cron_next.c's. */
#include "cron.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct field {
    const char *name;
    int min, max;
    const char *const *names; /* 3-letter names of min.. (NULL: numbers only) */
    int names_from;           /* the value of names[0] */
};

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL",
                                          "AUG", "SEP", "OCT", "NOV", "DEC", NULL};
static const char *const dow_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL};

static const struct field fields[5] = {
    {"minute", 0, 59, NULL, 0},          {"hour", 0, 23, NULL, 0},
    {"day-of-month", 1, 31, NULL, 0},    {"month", 1, 12, month_names, 1},
    {"day-of-week", 0, 7, dow_names, 0},
};

static const struct {
    const char *name;
    const char *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* A token of a field, quoted in a message: at most 40 bytes of it. */
#define QUOTE(s, n) (int)((n) > 40 ? 40 : (n)), (s)

/* Read a value (a number or, where the field has them, a name) at s[*i..n). */
static int read_value(const struct field *f, const char *s, size_t n, size_t *i, long *out,
                      char *err, size_t errlen)
{
    size_t b = *i;
    if (*i < n && isdigit((unsigned char)s[*i])) {
        long v = 0;
        while (*i < n && isdigit((unsigned char)s[*i])) {
            if (v < 100000)
                v = v * 10 + (s[*i] - '0');
            (*i)++;
        }
        if (v < f->min || v > f->max) {
            snprintf(err, errlen, "cron: %s: %.*s is out of range %d-%d", f->name,
                     QUOTE(s + b, *i - b), f->min, f->max);
            return -1;
        }
        *out = v;
        return 0;
    }
    while (*i < n && isalpha((unsigned char)s[*i]))
        (*i)++;
    for (int k = 0; f->names && f->names[k] && *i - b == 3; k++)
        if (strncasecmp(s + b, f->names[k], 3) == 0) {
            *out = f->names_from + k;
            return 0;
        }
    if (*i == b)
        snprintf(err, errlen, "cron: %s: missing value", f->name);
    else
        snprintf(err, errlen, "cron: %s: bad value \"%.*s\"", f->name, QUOTE(s + b, *i - b));
    return -1;
}

/* Parse one item of a list, s[0..n), into *set. */
static int parse_item(const struct field *f, const char *s, size_t n, uint64_t *set, char *err,
                      size_t errlen)
{
    size_t i = 0;
    long lo, hi, step = 1;
    int star = n > 0 && s[0] == '*';
    if (star) {
        i = 1;
        lo = f->min;
        hi = f->max;
    } else {
        if (read_value(f, s, n, &i, &lo, err, errlen) != 0)
            return -1;
        hi = lo;
        if (i < n && s[i] == '-') {
            i++;
            if (read_value(f, s, n, &i, &hi, err, errlen) != 0)
                return -1;
            if (hi < lo) {
                snprintf(err, errlen, "cron: %s: range %.*s is reversed", f->name, QUOTE(s, i));
                return -1;
            }
        } else if (i < n && s[i] == '/')
            hi = f->max; /* a/n: a-max/n */
    }
    if (i < n && s[i] == '/') {
        size_t b = ++i;
        step = 0;
        while (i < n && isdigit((unsigned char)s[i]) && step <= f->max)
            step = step * 10 + (s[i++] - '0');
        if (i == b || i < n || step < 1 || step > f->max) {
            snprintf(err, errlen, "cron: %s: bad step \"%.*s\" (1-%d)", f->name, QUOTE(s, n),
                     f->max);
            return -1;
        }
    }
    if (i != n) {
        snprintf(err, errlen, "cron: %s: bad item \"%.*s\"", f->name, QUOTE(s, n));
        return -1;
    }
    for (long v = lo; v <= hi; v += step)
        *set |= (uint64_t)1 << v;
    return 0;
}

/* Parse the field s[0..n) (a comma-separated list) into *set. */
static int parse_field(const struct field *f, const char *s, size_t n, uint64_t *set, char *err,
                       size_t errlen)
{
    size_t b = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != ',')
            continue;
        if (i == b) {
            snprintf(err, errlen, "cron: %s: empty list item", f->name);
            return -1;
        }
        if (parse_item(f, s + b, i - b, set, err, errlen) != 0)
            return -1;
        b = i + 1;
    }
    return 0;
}

int cron_day_matches(const struct cron *c, int64_t y, int m, int d)
{
    if (!(c->month >> m & 1))
        return 0;
    int dom = c->dom >> d & 1;
    int dow = c->dow >> civil_weekday(civil_days(y, m, d)) & 1;
    return c->dom_star || c->dow_star ? dom && dow : dom || dow;
}

/* 1 when some day matches: the weekdays of every date come round within 28 years (2000..2027
 * hold no skipped leap day), and February 29 is among them. */
static int can_fire(const struct cron *c)
{
    int64_t from = civil_days(2000, 1, 1);
    for (int64_t day = from; day < from + 28 * 366; day++) {
        struct civil_date d = civil_date_of(day);
        if (cron_day_matches(c, d.year, d.month, d.day))
            return 1;
    }
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

int cron_parse(const char *expr, size_t len, struct cron *out, char *err, size_t errlen)
{
    if (len > CRON_EXPR_MAX) {
        snprintf(err, errlen, "cron: longer than %d bytes", CRON_EXPR_MAX);
        return -1;
    }
    size_t b = 0, e = len;
    while (b < e && is_space(expr[b]))
        b++;
    while (e > b && is_space(expr[e - 1]))
        e--;
    if (b < e && expr[b] == '@') {
        for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++)
            if (strlen(macros[k].name) == e - b &&
                strncasecmp(expr + b, macros[k].name, e - b) == 0)
                return cron_parse(macros[k].expr, strlen(macros[k].expr), out, err, errlen);
        snprintf(err, errlen, "cron: unknown macro \"%.*s\"", QUOTE(expr + b, e - b));
        return -1;
    }
    for (size_t i = b; i < e; i++) {
        unsigned char ch = (unsigned char)expr[i];
        if (!isalnum(ch) && !is_space((char)ch) && (ch == 0 || !strchr("*,-/", ch))) {
            snprintf(err, errlen, "cron: unexpected character at byte %zu", i + 1);
            return -1;
        }
    }
    const char *tok[6];
    size_t toklen[6];
    int nf = 0;
    for (size_t i = b; i < e;) {
        size_t s = i;
        while (i < e && !is_space(expr[i]))
            i++;
        if (nf < 6) {
            tok[nf] = expr + s;
            toklen[nf] = i - s;
        }
        nf++;
        while (i < e && is_space(expr[i]))
            i++;
    }
    if (nf != 5) {
        snprintf(err, errlen, "cron: expected 5 fields, got %d", nf);
        return -1;
    }
    uint64_t set[5] = {0};
    for (int k = 0; k < 5; k++)
        if (parse_field(&fields[k], tok[k], toklen[k], &set[k], err, errlen) != 0)
            return -1;
    struct cron c = {
        .minute = set[0],
        .hour = (uint32_t)set[1],
        .dom = (uint32_t)set[2],
        .month = (uint16_t)set[3],
        .dow = (uint8_t)((set[4] | set[4] >> 7) & 0x7f), /* 7 is Sunday */
        .dom_star = tok[2][0] == '*',
        .dow_star = tok[4][0] == '*',
    };
    if (!can_fire(&c)) {
        snprintf(err, errlen, "cron: can never fire (no day matches day-of-month and month)");
        return -1;
    }
    *out = c;
    return 0;
}
