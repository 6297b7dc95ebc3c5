/* The time zone loader: reads <dir>/<name> (a TZif file) and decodes it with tz_parse(),
 * where dir is $JOBQ_ZONEINFO when set and non-empty, else ZONEINFO_DIR. Zones are kept in a
 * small process-wide cache (ZONEINFO_CACHE_MAX names; past that a zone is loaded for its caller
 * alone). Thread-safe: any thread may get and put zones at any time. */
#ifndef JOBQ_ZONEINFO_H
#define JOBQ_ZONEINFO_H

#include <stddef.h>

#include "tz.h"

#define ZONEINFO_DIR "/usr/share/zoneinfo"
#define ZONEINFO_CACHE_MAX 64

enum zoneinfo_result {
    ZONEINFO_OK = 0,
    ZONEINFO_UNKNOWN = -1, /* not a valid IANA name (tz_name_check), no such zone file, or not a
                            * TZif file: the API answers invalid_request naming "timezone" */
    ZONEINFO_ERROR = -2    /* the zone could not be read (an I/O error other than "no such
                            * file", out of memory): logged with the reason, the API answers 500 */
};

/* The zone named name[0..len). "UTC" is tz_utc() and needs no file. On ZONEINFO_OK *out is a
 * zone the caller holds until it hands it back with zoneinfo_put() (exactly once); it stays
 * valid until then whatever other threads do. On error *out is NULL. A name is read from disk
 * once per cache slot; a file that changes later is not read again. */
enum zoneinfo_result zoneinfo_get(const char *name, size_t len, const struct tz **out);

/* Hand back a zone from zoneinfo_get(); NULL is ignored. */
void zoneinfo_put(const struct tz *z);

/* Empty the cache (tests that change $JOBQ_ZONEINFO). Zones still held stay valid and are
 * freed by their zoneinfo_put(). */
void zoneinfo_reset(void);

#endif
