/* libFuzzer target: the schedule rules' parsers, no HTTP. The first byte of the input chooses
 * what the rest is:
 *
 *     't' + a TZif file        -> tz_parse()
 *     'p' + a POSIX TZ rule    -> tz_from_posix()
 *     'c' + a cron expression  -> cron_parse(), then its ticks in UTC and in a DST zone
 *
 * A zone that decodes is asked for offsets, changes and local times over 1900..2200, and these
 * invariants are checked (abort() names a broken one): every offset within TZ_OFFSET_MAX; a
 * change lies after the instant asked and its offset differs; tz_local_to_utc() is monotone and
 * its instant names the local time asked (or, in a gap, lies past it). An expression that parses
 * has a next tick after a fixed instant, and cron_prev() of it is before it and leads back to
 * it. Built with -fsanitize=fuzzer for fuzzing, or with replay.c to run a corpus (ctest). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "civil.h"
#include "cron.h"
#include "tz.h"

#define INVARIANT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_zone: invariant broken at %s:%d: %s\n", __FILE__, __LINE__,      \
                    #cond);                                                                        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* 1900-01-01 and 2200-01-01, and the step between probes (a prime number of seconds). */
#define FROM (-2208988800LL)
#define TO 7258118400LL
#define STEP 7919LL * 3607

static void probe_zone(const struct tz *z)
{
    int64_t last_first = INT64_MIN;
    for (int64_t t = FROM; t < TO; t += STEP) {
        int32_t off = tz_offset(z, t);
        INVARIANT(off >= -TZ_OFFSET_MAX && off <= TZ_OFFSET_MAX);
        int64_t c = tz_next_change(z, t);
        INVARIANT(c > t);
        if (c != TZ_NEVER)
            INVARIANT(tz_offset(z, c) != off && tz_offset(z, c - 1) == off);
        int64_t first, second;
        enum tz_local_kind k = tz_local_to_utc(z, t, &first, &second);
        INVARIANT(first >= last_first);
        last_first = first;
        if (k == TZ_LOCAL_GAP)
            INVARIANT(first + tz_offset(z, first) > t);
        else
            INVARIANT(first + tz_offset(z, first) == t && second >= first &&
                      second + tz_offset(z, second) == t);
    }
}

static void probe_cron(const struct cron *c, const struct tz *z)
{
    int64_t after = 1763700000; /* a fixed instant: deterministic runs */
    int64_t next = cron_next(c, z, after);
    INVARIANT(next != CRON_NEVER && next > after);
    int64_t prev = cron_prev(c, z, next);
    INVARIANT(prev < next);
    if (prev != CRON_NEVER)
        INVARIANT(prev <= after && cron_next(c, z, prev) == next);
    INVARIANT(cron_count(c, z, next, next + 1) == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *rest = (const char *)data + 1;
    size_t len = size - 1;
    struct tz *z = NULL;
    if (data[0] == 't' || data[0] == 'p') {
        enum tz_result r =
            data[0] == 't' ? tz_parse(rest, len, &z, NULL) : tz_from_posix(rest, len, &z, NULL);
        INVARIANT(r == TZ_OK || r == TZ_INVALID);
        if (r == TZ_OK) {
            probe_zone(z);
            tz_free(z);
        }
    } else if (data[0] == 'c') {
        struct cron c;
        char err[CRON_ERR_MAX];
        if (cron_parse(rest, len, &c, err, sizeof err) == 0) {
            probe_cron(&c, tz_utc());
            static const char rule[] = "CET-1CEST,M3.5.0,M10.5.0/3";
            if (tz_from_posix(rule, sizeof rule - 1, &z, NULL) == TZ_OK) {
                probe_cron(&c, z);
                tz_free(z);
            }
        } else
            INVARIANT(err[0] == 'c'); /* a message was written */
    }
    return 0;
}
