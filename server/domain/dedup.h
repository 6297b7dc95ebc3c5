/* Enqueue deduplication by a dedup key, per queue, on top of idempotency_key: what an enqueue
 * with "dedup" does given the job of the same queue and key that the store found. Pure
 * functions: no I/O, no clock (now is given).
 *
 * The modes share one key space per queue: an earlier job counts whatever mode it was enqueued
 * with. For each mode the store selects the newest job (highest id) of the queue with the key
 * that passes the mode's filter, and passes it to dedup_decide(), which checks it again:
 * - active: status queued, blocked or running (not finished);
 * - window: any status, created_at >= dedup_window_start();
 * - debounce: status queued and claimed_at null (never claimed: a job that was claimed and
 *   then requeued, by a failure, an expiry or a snooze, or retried by hand, is not replaced;
 *   a worker may have seen its payload). */
#ifndef JOBQ_DEDUP_H
#define JOBQ_DEDUP_H

#include <stdint.h>

#include "job.h"

#define DEDUP_SECONDS_MAX 31536000 /* dedup.seconds */

/* enum dedup_mode, the number a job stores, is job.h's. */

/* An enqueue's dedup, checked. key is borrowed. */
struct dedup {
    const char *key;
    enum dedup_mode mode;
    int64_t seconds; /* 0 for active */
};

/* The job the store found for a dedup key (see above). */
struct dedup_hit {
    enum job_status status;
    int64_t created_at;
    int64_t claimed_at; /* JOB_NONE when never claimed */
};

enum dedup_action {
    DEDUP_CREATE,          /* 201: create the job */
    DEDUP_RETURN_EXISTING, /* 200 with the job found; nothing is created or changed */
    DEDUP_REPLACE_EXISTING /* 200 with the job found, its payload replaced, due at run_at */
};

struct dedup_plan {
    enum dedup_action action;
    /* debounce (create or replace): now + seconds, the run_at of the job, in place of the
     * spec's run_at or delay; else JOB_NONE (a created job is due as its spec says). */
    int64_t run_at;
};

/* Check an enqueue's "dedup": key 1..JOB_IDENT_MAX bytes without NUL (key_len bytes; key
 * may be NULL when absent); mode "active", "window" or "debounce" (NULL when absent); seconds
 * (JOB_NONE when absent) required for window (1..DEDUP_SECONDS_MAX) and debounce
 * (0..DEDUP_SECONDS_MAX), and ignored for active (neither checked nor kept). Returns NULL when
 * valid, after filling *out (out->key = key, borrowed); else the first bad field, for the
 * message: "dedup.key", "dedup.mode" or "dedup.seconds", and *out is left alone. This
 * function can't fail. */
const char *dedup_check(const char *key, size_t key_len, const char *mode, int64_t seconds,
                        struct dedup *out);

/* The API name of a mode ("active", "window", "debounce"), or NULL for DEDUP_NONE or an
 * unknown number. This function can't fail. */
const char *dedup_mode_name(enum dedup_mode mode);

/* The oldest created_at that a window dedup d matches at now: now - seconds + 1, i.e. a job
 * was "enqueued in the last seconds" when created_at > now - seconds (the window holds
 * exactly `seconds` whole seconds, now included). This function can't fail. */
int64_t dedup_window_start(const struct dedup *d, int64_t now);

/* What an enqueue with dedup d (NULL: none) does at now, given the job the store found for
 * d's mode (NULL when none): active returns a hit that is not finished; window returns a hit
 * created at or after dedup_window_start(); debounce replaces a hit that is queued and never
 * claimed; else the job is created (debounce: due at now + seconds). A hit that does not pass
 * its mode's rule is as none. This function can't fail. */
struct dedup_plan dedup_decide(const struct dedup *d, const struct dedup_hit *hit, int64_t now);

/* dedup_decide for an enqueue of sp at now: sp's dedup (its key, mode and seconds; a spec
 * without a dedup key is created as it says), and the hit of the job `found` that the store
 * selected for that mode (NULL: none; its status is an API status, as the store shows it).
 * This function can't fail. */
struct dedup_plan dedup_decide_spec(const struct job_spec *sp, const struct job *found,
                                    int64_t now);

#endif
