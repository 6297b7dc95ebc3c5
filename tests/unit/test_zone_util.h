/* Helpers of the time zone tests (unit/domain/test_tz.c, test_cron.c, test_schedule.c): a zone
 * read from the system's zoneinfo (scripts/deps.sh installs tzdata; a missing file fails the
 * test, it is not skipped), and instants written as UTC dates. */
#ifndef JOBQ_TEST_ZONE_UTIL_H
#define JOBQ_TEST_ZONE_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "civil.h"
#include "tz.h"

#define TEST_ZONEINFO "/usr/share/zoneinfo"

/* The bytes of file TEST_ZONEINFO/name in a malloc'd buffer (*len set), or NULL. */
static inline unsigned char *zone_file(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TEST_ZONEINFO, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s: is tzdata installed (scripts/deps.sh)?\n", path);
        return NULL;
    }
    unsigned char *buf = malloc(TZ_FILE_MAX + 1);
    *len = buf ? fread(buf, 1, TZ_FILE_MAX + 1, f) : 0;
    fclose(f);
    return buf;
}

/* The zone `name` decoded from its file, or NULL (with a message). Release with tz_free(). */
static inline struct tz *zone(const char *name)
{
    size_t len = 0;
    unsigned char *buf = zone_file(name, &len);
    struct tz *z = NULL;
    const char *why = "no file";
    if (buf && tz_parse(buf, len, &z, &why) != TZ_OK)
        fprintf(stderr, "zone %s: %s\n", name, why);
    free(buf);
    return z;
}

/* The instant of the UTC date y-m-d h:mi. */
static inline int64_t utc(int64_t y, int m, int d, int h, int mi)
{
    return civil_days(y, m, d) * 86400 + h * 3600 + mi * 60;
}

/* Local seconds (civil.h) of the wall-clock time y-m-d h:mi. */
#define LOCAL(y, m, d, h, mi) utc(y, m, d, h, mi)

#endif
