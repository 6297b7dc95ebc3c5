#include "sched_rule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

struct sched_rule {
    int64_t every; /* every_seconds */
};

struct sched_rule *sched_rule_make(const char *cron, int64_t every_seconds, const char *timezone,
                                   char *why, size_t n)
{
    if (cron) {
        snprintf(why, n, "cron: cron expressions are not supported yet");
        return NULL;
    }
    if (strcmp(timezone, "UTC") != 0) {
        snprintf(why, n, "timezone: unknown time zone %s", timezone);
        return NULL;
    }
    if (every_seconds < 1) {
        snprintf(why, n, "every_seconds: must be at least 1");
        return NULL;
    }
    struct sched_rule *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, n, "out of memory");
        return NULL;
    }
    r->every = every_seconds;
    return r;
}

int64_t sched_rule_next(const void *rule, int64_t t)
{
    const struct sched_rule *r = rule;
    int64_t k = t >= 0 ? t / r->every : -((-t + r->every - 1) / r->every);
    return (k + 1) * r->every;
}

void sched_rule_free(struct sched_rule *rule)
{
    free(rule);
}
