/* A schedule's rule: when it ticks (its cron expression in its time zone, or every N
 * seconds), built once from what the store keeps and then asked for the next tick. The
 * rules themselves live in server/domain (cron, time zones, catch-up); this binds them to a
 * schedule and to the zone files of the system. */
#ifndef JOBQ_SCHED_RULE_H
#define JOBQ_SCHED_RULE_H

#include <stddef.h>
#include <stdint.h>

struct sched_rule;

/* Build the rule of a schedule: cron (5 fields or an @ name; NULL for every_seconds) or
 * every_seconds (1..31536000, ignored with cron), in the IANA zone `timezone`. Returns the
 * rule (release with sched_rule_free()), or NULL with why (n bytes) set to a message that
 * starts with the field it names ("cron: ...", "timezone: ...", "every_seconds: ...") or
 * says that memory ran out. Reads the zone's file (not for "UTC"): never inside a write. */
struct sched_rule *sched_rule_make(const char *cron, int64_t every_seconds, const char *timezone,
                                   char *why, size_t n);

/* The first tick strictly after t (epoch seconds), or JOB_NONE when there is none (a cron
 * expression that never matches again). rule is a struct sched_rule; the signature is the
 * one store_schedule_put() takes. Pure and fast: safe inside a write. */
int64_t sched_rule_next(const void *rule, int64_t t);

/* Release rule. Accepts NULL. */
void sched_rule_free(struct sched_rule *rule);

#endif
