/* A schedule's rule bound to its time zone: what the API checks a PUT /schedules body into,
 * what the ticker rebuilds from a stored schedule, and what a put asks for the first tick. The
 * rules themselves are server/domain/schedule.h's; the zone comes from the zone files
 * (zoneinfo.h). */
#ifndef JOBQ_SCHED_RULE_H
#define JOBQ_SCHED_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "schedule.h"

struct sched_rule {
    struct schedule_rule rule;
    const struct tz *tz; /* held from zoneinfo_get() until sched_rule_clear() */
};

/* Why sched_rule_make() refused. */
enum sched_rule_result {
    SCHED_RULE_OK = 0,
    SCHED_RULE_INVALID, /* the body is wrong: msg names the field (invalid_request) */
    SCHED_RULE_ERROR    /* a zone file could not be read (logged; 500) */
};

/* Check b (schedule_body_check) and load its zone into *out. On SCHED_RULE_OK release *out
 * with sched_rule_clear(); otherwise msg[0..n) says why, starting with the field it names
 * ("cron: ...", "timezone: ...", ...), and *out holds nothing. Reads the zone's file the first
 * time a zone is asked for (not for "UTC"): never inside a write. */
enum sched_rule_result sched_rule_make(const struct schedule_body *b, struct sched_rule *out,
                                       char *msg, size_t n);

struct store_schedule;

/* The same for a stored schedule (its cron or every_seconds, catch_up, overlap, timezone). */
enum sched_rule_result sched_rule_of(const struct store_schedule *s, struct sched_rule *out,
                                     char *msg, size_t n);

/* The next_run_at of a put at now (epoch seconds) of a schedule whose row held old_next
 * (JOB_NONE: new or paused): schedule_put_next(), with JOB_NONE for "never". rule is a
 * struct sched_rule; the signature is the one store_schedule_put() takes. Pure and fast: safe
 * inside a write. */
int64_t sched_rule_put_next(const void *rule, int64_t old_next, int64_t now);

/* Release what r holds. Accepts a zeroed or cleared rule. */
void sched_rule_clear(struct sched_rule *r);

#endif
