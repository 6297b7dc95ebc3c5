#include "sched_rule.h"

#include <stdio.h>
#include <string.h>

#include "job.h"
#include "store.h"
#include "store_schedule.h"
#include "zoneinfo.h"

enum sched_rule_result sched_rule_make(const struct schedule_body *b, struct sched_rule *out,
                                       char *msg, size_t n)
{
    *out = (struct sched_rule){0};
    char why[CRON_ERR_MAX + 64];
    const char *field = schedule_body_check(b, &out->rule, why, sizeof why);
    if (field) {
        /* The cron messages name their field already ("cron: minute: ..."). */
        if (strncmp(why, field, strlen(field)) == 0)
            snprintf(msg, n, "%s", why);
        else
            snprintf(msg, n, "%s: %s", field, why);
        return SCHED_RULE_INVALID;
    }
    const char *zone = out->rule.timezone;
    size_t len = strlen(zone);
    switch (zoneinfo_get(zone, len, &out->tz)) {
    case ZONEINFO_OK:
        return SCHED_RULE_OK;
    case ZONEINFO_UNKNOWN:
        snprintf(msg, n, "timezone: no time zone named %.*s is known", (int)len, zone);
        return SCHED_RULE_INVALID;
    default:
        snprintf(msg, n, "timezone: the zone %.*s cannot be read", (int)len, zone);
        return SCHED_RULE_ERROR;
    }
}

enum sched_rule_result sched_rule_of(const struct store_schedule *s, struct sched_rule *out,
                                     char *msg, size_t n)
{
    const char *catch_up = schedule_catch_up_name(s->catch_up);
    const char *overlap = schedule_overlap_name(s->overlap);
    struct schedule_body b = {.cron = s->cron,
                              .cron_len = s->cron ? strlen(s->cron) : 0,
                              .has_every = !s->cron,
                              .every_seconds = s->every_seconds,
                              .catch_up = catch_up,
                              .catch_up_len = strlen(catch_up),
                              .overlap = overlap,
                              .overlap_len = strlen(overlap),
                              .timezone = s->timezone,
                              .timezone_len = strlen(s->timezone)};
    return sched_rule_make(&b, out, msg, n);
}

int64_t sched_rule_put_next(const void *rule, int64_t old_next, int64_t now)
{
    const struct sched_rule *r = rule;
    int64_t next =
        schedule_put_next(&r->rule, r->tz, old_next == JOB_NONE ? SCHEDULE_NEVER : old_next, now);
    return next == SCHEDULE_NEVER ? JOB_NONE : next;
}

void sched_rule_clear(struct sched_rule *r)
{
    zoneinfo_put(r->tz);
    r->tz = NULL;
}
