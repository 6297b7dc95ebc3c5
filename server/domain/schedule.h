/* Schedules (../shared/API.md "Schedules"): the checks of a PUT /schedules/{name} body, a
 * schedule's ticks, what to enqueue after a pass of the ticker (catch-up), and the overlap
 * decision. Pure: no I/O, no clock (now and the instants are parameters).
 *
 * How a caller (the store's ticker) uses them: it keeps per schedule the rule, its zone name,
 * and next_run_at, the first tick not yet handled (schedule_next(rule, zone, time of the PUT)
 * when the schedule is made or replaced). On each pass it calls schedule_plan() with now and
 * the interval in which no jobqd ran (if any), enqueues the planned ticks (each with
 * idempotency_key "schedule:{name}:{tick}", so that doing a pass twice enqueues nothing twice),
 * asking schedule_overlap_skip() before each when overlap is "skip" (within a pass, the job
 * just enqueued for the previous planned tick is "queued": so a "skip" schedule enqueues at
 * most one tick of a pass while its jobs do not finish at once), and stores the plan's
 * next_run_at in the same transaction. */
#ifndef JOBQ_SCHEDULE_H
#define JOBQ_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "cron.h"
#include "tz.h"

#define SCHEDULE_EVERY_MAX 31536000    /* every_seconds, 1..this (one year) */
#define SCHEDULE_CATCH_UP_ALL_MAX 1000 /* catch_up "all": most missed ticks enqueued */
#define SCHEDULE_NEVER INT64_MAX       /* no next tick */

enum schedule_catch_up {
    SCHEDULE_CATCH_UP_LATEST = 0, /* the default */
    SCHEDULE_CATCH_UP_NONE,
    SCHEDULE_CATCH_UP_ALL
};

enum schedule_overlap {
    SCHEDULE_OVERLAP_ALLOW = 0, /* the default */
    SCHEDULE_OVERLAP_SKIP
};

/* A checked schedule rule: when its ticks fall and what a pass does with them. Plain data. */
struct schedule_rule {
    int64_t every_seconds;             /* 1..SCHEDULE_EVERY_MAX, or 0 when cron is used */
    char cron_text[CRON_EXPR_MAX + 1]; /* the expression as given ("" for every_seconds) */
    struct cron cron;                  /* parsed cron_text, when every_seconds is 0 */
    enum schedule_catch_up catch_up;
    enum schedule_overlap overlap;
    char timezone[TZ_NAME_MAX + 1]; /* the zone's name as given; "UTC" when absent */
};

/* The values of a PUT /schedules/{name} body as the API layer read them (it checks the JSON
 * types; wrong types are its invalid_request). Borrowed strings with their lengths; NULL when
 * the field is absent. */
struct schedule_body {
    const char *cron;
    size_t cron_len;
    int has_every;         /* 1 when every_seconds was given */
    int64_t every_seconds; /* its value (any integer; checked here) */
    const char *catch_up;  /* "none", "latest", "all" */
    size_t catch_up_len;
    const char *overlap; /* "allow", "skip" */
    size_t overlap_len;
    const char *timezone; /* an IANA name; absent means "UTC" */
    size_t timezone_len;
};

/* Check a body: exactly one of cron and every_seconds; every_seconds in 1..SCHEDULE_EVERY_MAX;
 * cron an expression cron_parse() accepts; catch_up and overlap one of their names (default
 * latest and allow); timezone a name tz_name_check() accepts (whether the zone exists is the
 * loader's question, zoneinfo_get(); default "UTC"). Returns NULL and fills *out (every field,
 * the defaults included) when valid;
 * else the name of the first bad field, for the error: "cron or every_seconds" (neither or
 * both given), "cron", "every_seconds", "catch_up", "overlap" or "timezone", with a message in
 * msg[0..msglen) (for cron the cron_parse() message, verbatim; e.g. "every_seconds must be
 * 1..31536000"), and *out left alone. msglen >= CRON_ERR_MAX is enough. paused and job are
 * not this function's (paused is a boolean; job is an enqueue body the API checks as one).
 * This function can't fail. */
const char *schedule_body_check(const struct schedule_body *b, struct schedule_rule *out, char *msg,
                                size_t msglen);

/* The API names of the policies ("none", "latest", "all"; "allow", "skip"). Static strings. */
const char *schedule_catch_up_name(enum schedule_catch_up c);
const char *schedule_overlap_name(enum schedule_overlap o);

/* Parse a policy name of len bytes (exact, case-sensitive). Return 0 and set *out, or -1. */
int schedule_catch_up_parse(const char *name, size_t len, enum schedule_catch_up *out);
int schedule_overlap_parse(const char *name, size_t len, enum schedule_overlap *out);

/* The first tick of r strictly after `after`: cron_next() in zone z for a cron rule; for
 * every_seconds n, the next multiple of n (seconds since the Unix epoch) after `after`, so that
 * ticks are aligned to the epoch, the same in every process, and the zone is ignored.
 * SCHEDULE_NEVER when none. This function can't fail. */
int64_t schedule_next(const struct schedule_rule *r, const struct tz *z, int64_t after);

/* The last tick of r strictly before `before`; SCHEDULE_NEVER when none. This function can't
 * fail. */
int64_t schedule_prev(const struct schedule_rule *r, const struct tz *z, int64_t before);

/* The number of ticks t of r with from <= t < to (0 when to <= from). This function can't
 * fail. */
int64_t schedule_count(const struct schedule_rule *r, const struct tz *z, int64_t from, int64_t to);

/* The outcome of one pass (schedule_plan). */
struct schedule_plan {
    size_t nticks;       /* ticks written to the caller's array, oldest first */
    int64_t skipped;     /* missed ticks this pass decided not to enqueue (catch-up policy) */
    int64_t next_run_at; /* the first tick not handled: store it as the new next_run_at */
    int more;            /* 1 when the cap stopped the pass: next_run_at <= now, pass again */
};

/* Plan a pass at `now` for a schedule whose first unhandled tick is next_run_at. The due ticks
 * are the ticks t with next_run_at <= t <= now. A due tick with down_from < t < down_to came
 * due while no jobqd ran: it is "missed"; every other due tick is "on time" (pass down_from =
 * down_to = 0, or any down_to <= down_from + 1, when there was no downtime). On-time ticks are
 * always planned. Missed ticks follow r->catch_up: none plans none of them; latest plans only
 * the most recent one; all plans the SCHEDULE_CATCH_UP_ALL_MAX most recent ones. Planned ticks
 * go to out[0..cap), oldest first; missed ticks not planned count in plan->skipped.
 * When every planned tick fit, next_run_at is the first tick > now (SCHEDULE_NEVER if none)
 * and more is 0. When cap ran out first, the pass stops at the first planned tick that did not
 * fit: next_run_at is that tick (<= now), more is 1, the skipped count holds only the missed
 * ticks before it, and a pass with the same down_from/down_to started at that next_run_at
 * plans exactly the rest (the plan of a suffix is the suffix of the plan; catch-up policy is
 * applied to the missed ticks from next_run_at on, and they are the same ticks). The work done
 * is bounded by cap and SCHEDULE_CATCH_UP_ALL_MAX plus counting the skipped ticks
 * (schedule_count), whatever the length of the downtime. If next_run_at > now nothing is due:
 * the plan is empty and next_run_at unchanged. cap may be 0 (then only skips are decided, up to
 * the first planned tick). This function can't fail. */
void schedule_plan(const struct schedule_rule *r, const struct tz *z, int64_t next_run_at,
                   int64_t now, int64_t down_from, int64_t down_to, int64_t *out, size_t cap,
                   struct schedule_plan *plan);

/* A tick that came due within this many seconds after the last pass of a ticker that did
 * not stop cleanly (it crashed, or it still runs) is one it may have taken or would have
 * taken: never missed. Tickers pass at the start of every second, so that is the one tick
 * between a crashed ticker's last pass and the crash. */
#define SCHEDULE_GRACE 1

/* The interval (*down_from, *down_to) of schedule_plan() in which no ticker ran, as a ticker
 * whose first pass was at `first` (the store's now) sees it from what the store recorded
 * before that pass: last_pass, the last pass of any ticker (SCHEDULE_NEVER: none ever
 * passed), and stopped_at, the store's now when a ticker stopped cleanly after that pass
 * (SCHEDULE_NEVER: no clean stop since; the last ticker crashed, or one still runs).
 * No pass ever: every tick before first is missed (down_from 0). A clean stop: the ticks
 * after it are missed (down_from the later of stopped_at and last_pass). Otherwise the ticks
 * later than SCHEDULE_GRACE after last_pass are. down_to is first. This function can't fail. */
void schedule_downtime(int64_t last_pass, int64_t stopped_at, int64_t first, int64_t *down_from,
                       int64_t *down_to);

/* The next_run_at a put (create or replace) of a schedule with rule r stores at `now` when the
 * row held old_next before it (SCHEDULE_NEVER: the name is new, or the schedule was paused):
 * old_next itself when it is a due tick no ticker has taken yet (old_next <= now) and it is a
 * tick of r too (an identical put always; a changed rule only when the change leaves the tick
 * due), so that a put landing between a tick and the ticker's pass loses no tick; else the
 * first tick of r after now (SCHEDULE_NEVER when none). Pausing is the caller's (no next run).
 * This function can't fail. */
int64_t schedule_put_next(const struct schedule_rule *r, const struct tz *z, int64_t old_next,
                          int64_t now);

/* The overlap decision for one tick: 1 when the tick is to be skipped (not enqueued), else 0.
 * prev_status is the API status name (job_status_name()) of the job of the previous enqueued
 * tick (the schedule's last_job_id), or NULL when there is none or it no longer exists. With
 * overlap "skip", a tick is skipped while that job is "queued", "blocked" or "running"; with
 * "allow" never. This function can't fail. */
int schedule_overlap_skip(const struct schedule_rule *r, const char *prev_status);

#endif
