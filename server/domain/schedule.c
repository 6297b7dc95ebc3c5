/* Schedules (schedule.h): the body check, the ticks of a rule, the catch-up plan of a pass and
 * the overlap decision. */
#include "schedule.h"

#include <stdio.h>
#include <string.h>

static const char *const catch_up_names[] = {"latest", "none", "all"};
static const char *const overlap_names[] = {"allow", "skip"};

/* The index of name[0..len) in names[0..n), or -1. */
static int lookup(const char *const *names, int n, const char *name, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return i;
    return -1;
}

const char *schedule_catch_up_name(enum schedule_catch_up c)
{
    return (unsigned)c < 3 ? catch_up_names[c] : "latest";
}

const char *schedule_overlap_name(enum schedule_overlap o)
{
    return (unsigned)o < 2 ? overlap_names[o] : "allow";
}

int schedule_catch_up_parse(const char *name, size_t len, enum schedule_catch_up *out)
{
    int i = name ? lookup(catch_up_names, 3, name, len) : -1;
    if (i < 0)
        return -1;
    *out = (enum schedule_catch_up)i;
    return 0;
}

int schedule_overlap_parse(const char *name, size_t len, enum schedule_overlap *out)
{
    int i = name ? lookup(overlap_names, 2, name, len) : -1;
    if (i < 0)
        return -1;
    *out = (enum schedule_overlap)i;
    return 0;
}

const char *schedule_body_check(const struct schedule_body *b, struct schedule_rule *out, char *msg,
                                size_t msglen)
{
    struct schedule_rule r = {0};
    if ((b->cron != NULL) == (b->has_every != 0)) {
        snprintf(msg, msglen, "exactly one of cron and every_seconds is required");
        return "cron or every_seconds";
    }
    if (b->has_every) {
        if (b->every_seconds < 1 || b->every_seconds > SCHEDULE_EVERY_MAX) {
            snprintf(msg, msglen, "every_seconds must be 1..%d", SCHEDULE_EVERY_MAX);
            return "every_seconds";
        }
        r.every_seconds = b->every_seconds;
    } else {
        if (cron_parse(b->cron, b->cron_len, &r.cron, msg, msglen) != 0)
            return "cron";
        memcpy(r.cron_text, b->cron, b->cron_len); /* cron_parse bounds it */
    }
    if (b->catch_up && schedule_catch_up_parse(b->catch_up, b->catch_up_len, &r.catch_up) != 0) {
        snprintf(msg, msglen, "catch_up must be \"none\", \"latest\" or \"all\"");
        return "catch_up";
    }
    if (b->overlap && schedule_overlap_parse(b->overlap, b->overlap_len, &r.overlap) != 0) {
        snprintf(msg, msglen, "overlap must be \"allow\" or \"skip\"");
        return "overlap";
    }
    if (b->timezone && !tz_name_check(b->timezone, b->timezone_len)) {
        snprintf(msg, msglen, "timezone must be an IANA time zone name");
        return "timezone";
    }
    if (b->timezone)
        memcpy(r.timezone, b->timezone, b->timezone_len); /* tz_name_check bounds it */
    else
        memcpy(r.timezone, "UTC", 4);
    *out = r;
    return NULL;
}

/* Floor division for n > 0. */
static int64_t floor_div(int64_t a, int64_t n)
{
    return a >= 0 ? a / n : -((-(a + 1)) / n) - 1;
}

int64_t schedule_next(const struct schedule_rule *r, const struct tz *z, int64_t after)
{
    if (!r->every_seconds)
        return cron_next(&r->cron, z, after);
    if (after >= CIVIL_TIME_MAX)
        return SCHEDULE_NEVER;
    after = after < CIVIL_TIME_MIN ? CIVIL_TIME_MIN : after;
    return (floor_div(after, r->every_seconds) + 1) * r->every_seconds;
}

int64_t schedule_prev(const struct schedule_rule *r, const struct tz *z, int64_t before)
{
    if (!r->every_seconds)
        return cron_prev(&r->cron, z, before);
    if (before <= CIVIL_TIME_MIN)
        return SCHEDULE_NEVER;
    before = before > CIVIL_TIME_MAX ? CIVIL_TIME_MAX : before;
    return floor_div(before - 1, r->every_seconds) * r->every_seconds;
}

int64_t schedule_count(const struct schedule_rule *r, const struct tz *z, int64_t from, int64_t to)
{
    if (!r->every_seconds)
        return cron_count(&r->cron, z, from, to);
    from = civil_clamp(from);
    to = civil_clamp(to);
    if (to <= from)
        return 0;
    /* multiples of n in [from, to): those <= to-1 minus those <= from-1 */
    return floor_div(to - 1, r->every_seconds) - floor_div(from - 1, r->every_seconds);
}

/* A pass in progress: the caller's array and the plan. */
struct pass {
    int64_t *out;
    size_t cap;
    struct schedule_plan *plan;
};

/* Plan tick t; 0 when the cap is reached (the pass stops at t). */
static int emit(struct pass *p, int64_t t)
{
    if (p->plan->nticks == p->cap) {
        p->plan->next_run_at = t;
        p->plan->more = 1;
        return 0;
    }
    p->out[p->plan->nticks++] = t;
    return 1;
}

void schedule_plan(const struct schedule_rule *r, const struct tz *z, int64_t next_run_at,
                   int64_t now, int64_t down_from, int64_t down_to, int64_t *out, size_t cap,
                   struct schedule_plan *plan)
{
    *plan = (struct schedule_plan){.next_run_at = next_run_at};
    if (next_run_at == SCHEDULE_NEVER || next_run_at > now)
        return;
    struct pass p = {out, cap, plan};
    /* The first tick >= next_run_at (it is one, unless the rule changed under it). */
    int64_t t = schedule_next(r, z, civil_clamp(next_run_at) - 1);
    /* Missed ticks are < down_to and <= now: before `end`. */
    int64_t end = down_to <= now ? down_to : now + 1;
    /* On-time ticks, then the run of missed ones (at most one: they lie in one interval), then
     * on-time ticks again. */
    for (int phase = 0; phase < 3 && t <= now; phase++) {
        while (t <= now && !(down_from < t && t < down_to)) {
            if (!emit(&p, t))
                return;
            t = schedule_next(r, z, t);
        }
        if (t > now)
            break;
        /* t is missed; last is the most recent missed tick (>= t). */
        int64_t last = schedule_prev(r, z, end);
        int64_t first = last; /* the oldest missed tick planned */
        if (r->catch_up == SCHEDULE_CATCH_UP_NONE)
            first = schedule_next(r, z, last);
        for (int k = 1; r->catch_up == SCHEDULE_CATCH_UP_ALL && k < SCHEDULE_CATCH_UP_ALL_MAX;
             k++) {
            int64_t before = schedule_prev(r, z, first);
            if (before == SCHEDULE_NEVER || before < t)
                break;
            first = before;
        }
        plan->skipped += schedule_count(r, z, t, first);
        for (t = first; t <= last; t = schedule_next(r, z, t))
            if (!emit(&p, t))
                return;
    }
    plan->next_run_at = t;
}

void schedule_downtime(int64_t last_pass, int64_t stopped_at, int64_t first, int64_t *down_from,
                       int64_t *down_to)
{
    *down_to = first;
    if (last_pass == SCHEDULE_NEVER)
        *down_from = 0;
    else if (stopped_at != SCHEDULE_NEVER)
        *down_from = stopped_at > last_pass ? stopped_at : last_pass;
    else
        *down_from = last_pass + SCHEDULE_GRACE;
}

int64_t schedule_put_next(const struct schedule_rule *r, const struct tz *z, int64_t old_next,
                          int64_t now)
{
    if (old_next != SCHEDULE_NEVER && old_next <= now &&
        schedule_next(r, z, civil_clamp(old_next) - 1) == old_next)
        return old_next;
    return schedule_next(r, z, now);
}

int schedule_overlap_skip(const struct schedule_rule *r, const char *prev_status)
{
    if (r->overlap != SCHEDULE_OVERLAP_SKIP || !prev_status)
        return 0;
    return strcmp(prev_status, "queued") == 0 || strcmp(prev_status, "blocked") == 0 ||
           strcmp(prev_status, "running") == 0;
}
