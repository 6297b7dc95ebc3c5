/* POSIX TZ rule strings (a TZif footer, RFC 8536 section 3.3): parsed into a struct tz_posix,
 * and evaluated at an instant. Private to tz.c; pure. */
#ifndef JOBQ_TZ_POSIX_H
#define JOBQ_TZ_POSIX_H

#include <stddef.h>
#include <stdint.h>

/* A rule date: Jn (kind 'J', n 1..365, February 29 never counted), n (kind 'n', n 0..365) or
 * Mm.w.d (kind 'M'), and the local time of day of the change (seconds, -167h..167h). */
struct tz_rule_date {
    char kind;
    int n, m, w, d;
    int32_t time;
};

/* A parsed rule. Offsets are UTC offsets (east positive: the negated POSIX ones). */
struct tz_posix {
    int32_t std_off;
    int32_t dst_off;
    int has_dst;               /* 0: std_off for ever */
    struct tz_rule_date start; /* DST starts at start (local standard time) */
    struct tz_rule_date end;   /* and ends at end (local daylight time) */
};

/* Parse s[0..len). Returns 0 and fills *out, or -1 with *why set (a static message). */
int tz_posix_parse(const char *s, size_t len, struct tz_posix *out, const char **why);

/* The UTC offset the rule gives at t (t within the civil range). Can't fail. */
int32_t tz_posix_offset(const struct tz_posix *p, int64_t t);

/* The first instant > t at which the rule's offset differs from tz_posix_offset(p, t), or
 * INT64_MAX when it never does. Can't fail. */
int64_t tz_posix_next_change(const struct tz_posix *p, int64_t t);

#endif
