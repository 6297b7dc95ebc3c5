/* Time zones: a TZif file (RFC 8536, versions 1, 2 and 3) decoded from a byte buffer, and the
 * two questions a schedule asks of a zone: the UTC offset at an instant, and the instant(s) a
 * local wall-clock time names. Pure: no I/O (server/zoneinfo.h reads the files), no clock.
 *
 * A zone holds its transitions (instants at which the offset changes) and, for instants after
 * the last one, the POSIX TZ rule of the file's footer (e.g. "CET-1CEST,M3.5.0,M10.5.0/3",
 * "<+0330>-3:30", with Jn, n and Mm.w.d dates, /time with negative and >24h hours, as RFC 8536
 * section 3.3.1 extends POSIX). A v1 file has no footer: its last type holds for ever after.
 * A file with leap-second records (the "right/" zones, whose times count leap seconds) is
 * refused: instants here are POSIX seconds.
 *
 * A struct tz is immutable once made: any number of threads may read one at once. Offsets
 * follow the TZif sign (east of Greenwich is positive): local = utc + offset. Instants are
 * clamped into CIVIL_TIME_MIN..CIVIL_TIME_MAX (years 1..9999) before they are evaluated. */
#ifndef JOBQ_TZ_H
#define JOBQ_TZ_H

#include <stddef.h>
#include <stdint.h>

#include "civil.h"

#define TZ_FILE_MAX (256 * 1024) /* bytes of a TZif file tz_parse() accepts */
#define TZ_FOOTER_MAX 128        /* bytes of a POSIX TZ rule string */
#define TZ_NAME_MAX 255          /* bytes of an IANA zone name (tz_name_check) */
#define TZ_OFFSET_MAX 93599      /* |offset| in seconds (25:59:59), RFC 8536 utoff's range */
#define TZ_NEVER INT64_MAX       /* tz_next_change: no change after the instant */

/* A decoded zone; opaque. Made by tz_parse() or tz_from_posix(), released with tz_free(). */
struct tz;

enum tz_result {
    TZ_OK = 0,
    TZ_INVALID = -1, /* malformed or oversized input; *why names the problem */
    TZ_NOMEM = -2    /* out of memory */
};

/* Decode the TZif file buf[0..len) (len <= TZ_FILE_MAX). Version 1 files are read from their
 * 32-bit section; version 2 and later from their 64-bit section and footer (an empty footer
 * means no rule: the last type holds after the last transition). Every count and length is
 * checked against len before it is read: a truncated, corrupt or oversized buffer returns
 * TZ_INVALID with *why set to a static message (why may be NULL), never reads past buf+len.
 * Checked too: transitions strictly ascending, type indexes and abbreviation indexes in range,
 * offsets within TZ_OFFSET_MAX, isdst 0 or 1, no leap-second records, a footer that parses
 * (tz_from_posix's rules).
 * On TZ_OK *out is a new zone the caller owns (tz_free); on error *out is left alone.
 * Borrows buf. Thread-safe. */
enum tz_result tz_parse(const void *buf, size_t len, struct tz **out, const char **why);

/* A zone made of a POSIX TZ rule string spec[0..len) alone (len <= TZ_FOOTER_MAX), as in a
 * TZif footer: "UTC0", "<+0330>-3:30", "EST5EDT,M3.2.0,M11.1.0",
 * "<-03>3<-02>,M3.5.0/-2,M10.5.0/-1", "IST-2IDT,M3.4.4/26,M10.5.0", "XXX3EDT4,0/0,J365/25"
 * (DST all year). Names are 3+ letters or <...> of 3+ letters, digits, '+' and '-'; offsets
 * hh[:mm[:ss]] with hh <= 24; rule times hh[:mm[:ss]] with an optional sign and hh <= 167;
 * dates Jn (1..365, February 29 never counted), n (0..365) or Mm.w.d (m 1..12, w 1..5, 5 the
 * last, d 0..6). The DST offset defaults to one hour east of standard time, the rule times to
 * 02:00; DST without a rule is rejected (no default rule is assumed). Results and ownership
 * as tz_parse(). Thread-safe. */
enum tz_result tz_from_posix(const char *spec, size_t len, struct tz **out, const char **why);

/* The zone "UTC": offset 0 for ever. A static zone, never to be freed (tz_free ignores it).
 * This function can't fail. */
const struct tz *tz_utc(void);

/* Release a zone; NULL and tz_utc() are ignored. */
void tz_free(const struct tz *z);

/* The UTC offset in seconds at the instant t (epoch seconds): local = t + offset.
 * This function can't fail. */
int32_t tz_offset(const struct tz *z, int64_t t);

/* The first instant > t at which the zone's offset differs from tz_offset(z, t); TZ_NEVER when
 * none (a fixed zone, or no change before CIVIL_TIME_MAX). Transitions that keep the offset
 * (e.g. only the abbreviation or isdst changes) are passed over. This function can't fail. */
int64_t tz_next_change(const struct tz *z, int64_t t);

enum tz_local_kind {
    TZ_LOCAL_ONE = 0, /* the local time occurs once: first is its instant */
    TZ_LOCAL_GAP,     /* it does not occur (clocks jumped over it): first is the instant the
                       * gap ends, the first instant whose local time is past it */
    TZ_LOCAL_TWICE    /* it occurs twice (clocks were set back): first < second */
};

/* What the local wall-clock time `local` (local seconds, civil.h: e.g.
 * civil_days(y, m, d) * 86400 + h * 3600 + min * 60) names in zone z. Sets *first (and
 * *second for TZ_LOCAL_TWICE, else *second = *first; second may be NULL) and returns the kind.
 * If a local time occurred more than twice (no real zone does this), first is its earliest
 * instant and second the next one. The mapping is monotone: for local a < b,
 * first(a) <= first(b). This function can't fail. */
enum tz_local_kind tz_local_to_utc(const struct tz *z, int64_t local, int64_t *first,
                                   int64_t *second);

/* Check an IANA zone name of len bytes: 1..TZ_NAME_MAX bytes of letters, digits, '/', '_',
 * '-' and '+' (so no "." and no path escapes the zone directory), no leading '/', no empty
 * component, not ending in '/'. Returns 1 when valid, else 0. Whether such a zone exists is
 * the loader's question (zoneinfo.h). This function can't fail. */
int tz_name_check(const char *name, size_t len);

#endif
