/* Flow control by concurrency key: which limit applies to a key, and when one more job of the
 * key may be claimed. Pure functions: no I/O, no clock (now is given).
 *
 * What a backend keeps, and how it uses these functions:
 * - one row per limit (struct limit), keyed by its key; a pattern row may also keep
 *   limit_pattern_prefix_len(key) bytes of prefix in a column of its own to select by;
 * - per concurrency key: the jobs of the key running now, the key's paused_until (a pause
 *   belongs to one key, not to a limit: a key without a limit can be paused, and the keys under
 *   a pattern are paused each on its own), and its recent claims as (second, count) rows, one
 *   per second in which jobs of the key were claimed (struct limit_claims). A row whose second
 *   is before limit_window_start() is never counted again and may be deleted; so a key keeps
 *   at most min(rate_per_seconds, rate_jobs) rows (one row per claimed job, count 1, gives the
 *   same answers). A key whose limit has no rate need keep none. A snoozed claim was a claim:
 *   it stays counted. When a limit is replaced, the window counts the rows still kept.
 * At claim time the backend selects the limits that may apply to the job's key (the exact key
 * and the patterns whose prefix starts the key), lets limit_resolve() choose, and claims at
 * most limit_room() jobs of the key; limit_open_at() says when a key that has no room opens. */
#ifndef JOBQ_LIMIT_H
#define JOBQ_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* Bounds of the contract (PUT /limits/{key}). */
#define LIMIT_KEY_MAX JOB_IDENT_MAX  /* bytes of a limit key or a job's concurrency_key */
#define LIMIT_RUNNING_MAX 100000     /* max_running */
#define LIMIT_RATE_JOBS_MAX 100000   /* rate.jobs */
#define LIMIT_RATE_SECONDS_MAX 86400 /* rate.per_seconds */
#define LIMIT_NEVER INT64_MAX        /* limit_open_at: not before a running job of the key ends */
#define LIMIT_UNLIMITED INT64_MAX    /* limit_room: no bound */

/* A limit as stored: the body of PUT /limits/{key} under its key. */
struct limit {
    char key[LIMIT_KEY_MAX + 1]; /* NUL-terminated; a pattern ends in '*' */
    int64_t max_running;         /* 0: no bound on running jobs */
    int64_t rate_jobs;           /* 0: no rate (then rate_per_seconds is 0 too) */
    int64_t rate_per_seconds;
    /* Shown by the API, filled by the store when it reads a limit; no decision here reads
     * them (a key's own state comes in struct limit_usage). running: jobs of the key running
     * now, for a pattern the sum over its keys; paused_until: JOB_NONE when none;
     * window_used: claims of the key counted in its rate window now, for an exact key with a
     * rate (JOB_NONE otherwise); held: queued, due jobs of the keys it governs whose lanes a
     * claim found with no room (waiting for a running job to end, the window or a pause). */
    int64_t running;
    int64_t paused_until;
    int64_t window_used;
    int64_t held;
};

/* The body of PUT /limits/{key} as read, before it is checked. */
struct limit_body {
    int64_t max_running;      /* JOB_NONE when absent */
    int rate;                 /* 1 when "rate" was given */
    int64_t rate_jobs;        /* JOB_NONE when absent */
    int64_t rate_per_seconds; /* JOB_NONE when absent */
};

/* n jobs of one key claimed in second `at` (epoch seconds). */
struct limit_claims {
    int64_t at;
    int64_t n;
};

/* What the store knows of one concurrency key when it claims. Borrowed. */
struct limit_usage {
    int64_t running;                   /* jobs of the key running now */
    int64_t paused_until;              /* JOB_NONE when the key was never paused */
    const struct limit_claims *claims; /* the kept claim rows of the key, in any order */
    size_t nclaims;
};

enum limit_key_kind {
    LIMIT_KEY_INVALID = 0,
    LIMIT_KEY_EXACT,  /* matches the one job key equal to it */
    LIMIT_KEY_PATTERN /* "prefix*": matches every job key that starts with prefix */
};

/* Check a limit key of len bytes: 1..LIMIT_KEY_MAX bytes, no NUL byte, and '*' only as the last
 * byte. Returns its kind; LIMIT_KEY_INVALID with *why set to a static message naming the
 * problem (why may be NULL). "*" alone is a pattern that matches every key. UTF-8 is not
 * checked here (the HTTP layer checks what it decodes). This function can't fail. */
enum limit_key_kind limit_key_check(const char *key, size_t len, const char **why);

/* Check a job's concurrency_key of len bytes: 1..LIMIT_KEY_MAX bytes and no NUL byte. Any other
 * byte is allowed, '*' included: a job's key is always matched literally (a job key "a*" is
 * governed by the pattern limit "a*", as any key starting with "a" is, never by an exact one).
 * Returns 1 when valid, else 0 with *why set as for limit_key_check(). This function can't
 * fail. */
int limit_job_key_check(const char *key, size_t len, const char **why);

/* Check a PUT /limits body: max_running 1..LIMIT_RUNNING_MAX when given; when rate is given,
 * rate.jobs 1..LIMIT_RATE_JOBS_MAX and rate.per_seconds 1..LIMIT_RATE_SECONDS_MAX, both
 * required; and at least one of max_running and rate. Returns NULL when valid, after setting
 * out's max_running, rate_jobs and rate_per_seconds (0 for what is absent; its key and view
 * fields are left alone); else the first bad field, for the message: "max_running",
 * "rate.jobs", "rate.per_seconds" or "max_running or rate" (neither given), and out is left
 * alone. This function can't fail. */
const char *limit_body_check(const struct limit_body *b, struct limit *out);

/* The length of the prefix a pattern key matches (its length without the final '*'), or -1
 * for an exact key. key is a checked limit key. This function can't fail. */
long limit_pattern_prefix_len(const char *key);

/* The limit that applies to the job key `key` among limits[0..n): the limit whose key equals
 * it, else the pattern with the longest prefix that starts it, else NULL (the key is
 * unlimited). A limit key ending in '*' is always a pattern. limits may hold limits that do
 * not apply (they are passed by); when two hold the same key the first wins. Returns a
 * pointer into limits, borrowed. This function can't fail. */
const struct limit *limit_resolve(const char *key, const struct limit *limits, size_t n);

/* limit_resolve() over limits[0..n) sorted by key bytewise (strcmp) with distinct keys, by
 * binary search: the exact limit, else the longest pattern whose prefix starts key; NULL when
 * none applies. Costs O(log n) per byte of key at most. This function can't fail. */
struct limit *limit_resolve_sorted(const char *key, struct limit *limits, size_t n);

/* What a limit shows of the keys it governs (struct limit's running and paused_until): add the
 * state of one job key (running jobs of it, its paused_until, JOB_NONE when none) to the limit
 * of limits[0..n) (sorted as for limit_resolve_sorted) that governs it, if any: running is
 * added, and paused_until is kept when it is after now and later than the one held. Call it
 * once per key after setting every limit's running to 0 and paused_until to JOB_NONE. A key
 * counts for the one limit that applies to it (limit_resolve), so a pattern shows only the
 * keys that no exact limit or longer pattern takes. This function can't fail. */
void limit_tally(struct limit *limits, size_t n, const char *key, int64_t running,
                 int64_t paused_until, int64_t now);

/* The oldest second whose claims the rate of l counts at now: now - rate_per_seconds + 1.
 * "In the last per_seconds seconds" means at >= this, i.e. at > now - per_seconds, so that the
 * window at now holds exactly per_seconds whole seconds, now included. For a limit without a
 * rate (or l NULL) returns now + 1 (no claim is counted). This function can't fail. */
int64_t limit_window_start(const struct limit *l, int64_t now);

/* The oldest second whose claims any rate may count at now or later, whatever limit applies
 * to the key then: limit_window_start of the longest window (LIMIT_RATE_SECONDS_MAX). Claim
 * rows of any key before it are never read again (the sweeper deletes them: a key that is
 * never claimed again keeps none). This function can't fail. */
int64_t limit_claims_oldest(int64_t now);

/* The second a claim decided at now counts in for a key's rate, given the newest second in
 * which a claim of the key is counted (newest: JOB_NONE when none): the later of the two. A
 * claim decided late (a call that waited, a process whose clock reads a second behind
 * another's) then never counts in a second older than a newer claim's, which that claim's
 * window may have passed by and pruned: the claims of a key are counted in seconds that never
 * go back, and limit_room() at this second keeps every window within rate_jobs. This
 * function can't fail. */
int64_t limit_claim_second(int64_t now, int64_t newest);

/* How many more jobs of a key may be claimed at now, so that a claim of several jobs never
 * overshoots: 0 while the key is paused (paused_until > now); else the least of
 * max_running - running (when max_running is set) and rate_jobs - (claims counted at now)
 * (when a rate is set), never below 0; LIMIT_UNLIMITED when nothing bounds it. l is the
 * resolved limit, NULL when none (the key's pause still holds). Granting that many at now and
 * recording them keeps every window of rate_per_seconds consecutive seconds at no more than
 * rate_jobs claims. This function can't fail. */
int64_t limit_room(const struct limit *l, const struct limit_usage *u, int64_t now);

/* The earliest time >= now at which one more job of the key may be claimed, if nothing else is
 * claimed and no running job ends meanwhile: now when limit_room() > 0; LIMIT_NEVER while
 * running >= max_running (only the end of a running job opens the key); else the latest of
 * paused_until (when > now) and the second in which the window holds one claim fewer than
 * rate_jobs (the rate_jobs-th newest claim's second + rate_per_seconds). Claims dated after now
 * count as if already made. This function can't fail. */
int64_t limit_open_at(const struct limit *l, const struct limit_usage *u, int64_t now);

/* The paused_until a key keeps when a snooze asks to pause it until `asked` (job_snooze_plan),
 * given the one it holds (either JOB_NONE when none): the later of the two, so a snooze never
 * shortens a pause. This function can't fail. */
int64_t limit_pause_merge(int64_t held, int64_t asked);

/* An ordered key (an SQS FIFO queue's message group, docs/sqs.md): a concurrency key that
 * starts with this prefix holds at most one running job whatever limit applies, and a job of
 * it that goes back to queued keeps its place in the key (job_requeue_at, lease.h), so its
 * jobs run one at a time in claim order. */
#define LIMIT_ORDERED_PREFIX "fifo:"

/* 1 when key (NUL-terminated; NULL: none) is an ordered key, else 0. This function can't
 * fail. */
int limit_key_ordered(const char *key);

/* The limit that holds the job key `key` given the one that applies (*has_limit, *l, as
 * limit_resolve chose): unchanged, except for an ordered key, whose max_running becomes 1
 * (its rate, when one applies, is kept; with no limit, one of max_running 1 alone, keyed
 * `key`). This function can't fail. */
void limit_apply_ordered(const char *key, int *has_limit, struct limit *l);

#endif
