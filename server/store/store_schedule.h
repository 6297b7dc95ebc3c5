/* Schedules in the store (../shared/API.md "Schedules"): the record a backend keeps and the
 * calls the API and the ticker make on it. The write kinds themselves (SCHEDULE_PUT, _DELETE,
 * _TICK, _PASS) are store.h's, like every kind; the rules of store.h hold for every function
 * here. */
#ifndef JOBQ_STORE_SCHEDULE_H
#define JOBQ_STORE_SCHEDULE_H

#include "schedule.h"
#include "store.h"

/* A schedule (PUT /schedules/{name}) as the store keeps it. Owns job, cron and timezone
 * (store_schedule_clear()). */
struct store_schedule {
    char name[JOB_QUEUE_MAX + 1];
    char *job;                       /* the job body as given: compact JSON text */
    char *cron;                      /* the cron expression as given; NULL for every_seconds */
    int64_t every_seconds;           /* 0 for a cron schedule */
    char *timezone;                  /* an IANA zone name */
    enum schedule_catch_up catch_up; /* stored as these numbers */
    enum schedule_overlap overlap;
    int paused;          /* 1: no tick is enqueued (nor missed) */
    int64_t next_run_at; /* the next tick; JOB_NONE while paused or when it never ticks */
    int64_t last_run_at; /* the tick of the last job enqueued; JOB_NONE: none yet */
    int64_t last_job_id; /* that job; 0: none yet */
    int64_t created_at;
    int64_t updated_at;
    int64_t rev; /* grows with every write of the row (what a tick compares) */
};

/* Release what s owns and zero it (its name stays). Accepts NULL. */
void store_schedule_clear(struct store_schedule *s);

/* Release n schedules and the array. Accepts NULL. */
void store_schedules_free(struct store_schedule *a, size_t n);

/* The most schedules a store holds: a PUT of a new name beyond it is refused
 * (STORE_CONFLICT), so that GET /schedules answers them all at once. */
#define STORE_SCHEDULES_MAX 10000

/* Create or replace the schedule in->name with in's job, cron or every_seconds, timezone,
 * catch_up, overlap and paused. next_run_at becomes next_of(rule, old, now) on the store's
 * clock, where old is the row's next_run_at as the put found it, read in the same
 * transaction with no tick between (JOB_NONE when the name is new or it was paused), so
 * that a put can keep a due tick no ticker has taken (sched_rule_put_next); JOB_NONE when
 * paused. A replace keeps created_at, last_run_at and last_job_id. rev grows, so a tick read
 * before the put is refused. *out is the schedule as stored, *created 1 when the name was
 * new. STORE_CONFLICT when the name is new and STORE_SCHEDULES_MAX schedules exist (nothing
 * is written). */
enum store_result
store_schedule_put(struct store *s, const struct store_schedule *in,
                   int64_t (*next_of)(const void *rule, int64_t old_next, int64_t now),
                   const void *rule, int64_t now, struct store_schedule *out, int *created);

/* Delete schedule `name`; *out is the schedule as it was. The jobs it enqueued stay.
 * STORE_NOT_FOUND when there is none. */
enum store_result store_schedule_delete(struct store *s, const char *name, int64_t now,
                                        struct store_schedule *out);

/* One tick of schedule t->name, in one transaction, applied only while the schedule is
 * unpaused and still holds t->rev and t->next_run_at (else STORE_CONFLICT, nothing written:
 * another ticker took it, or a put or delete came between; STORE_NOT_FOUND when it is gone):
 * with t->spec, unless schedule_overlap_skip(t->rule, the API status of the job of its
 * last_job_id, NULL when there is none) says to skip (then t->skipped = 1 and no job), the job is enqueued as store_enqueue does (an
 * idempotency_key hit returns the job that holds it: a tick is enqueued once however many
 * tickers race for it) and becomes last_job_id, with last_run_at = t->tick; next_run_at becomes
 * t->next and rev grows. t->job_id, t->created and t->out tell the job. */
enum store_result store_schedule_tick(struct store *s, struct store_schedule_tick_call *t,
                                      int64_t now);

/* A ticker's pass: the liveness row (the last pass of any ticker sharing the store) becomes
 * the store's now and loses its stop mark; *seen_before is the last pass it held (JOB_NONE:
 * no ticker ever passed), *stopped_at its stop mark (JOB_NONE: none: no ticker stopped
 * cleanly since that pass) and *store_now the store's now (the clock every schedule time is
 * on). What schedule_downtime() reads. */
enum store_result store_schedule_pass(struct store *s, int64_t now, int64_t *seen_before,
                                      int64_t *stopped_at, int64_t *store_now);

/* A ticker's clean stop, after its last tick committed: the liveness row's stop mark becomes
 * the store's now (every tick up to it came due while a ticker ran), until the next pass of
 * any ticker clears it. Only a ticker that passed marks its stop. Nothing is written when no
 * ticker ever passed. */
enum store_result store_schedule_stop(struct store *s, int64_t now);

/* Every schedule ordered by name (bytewise; at most STORE_SCHEDULES_MAX) when name is NULL,
 * else schedule `name` alone (STORE_NOT_FOUND when there is none). *out is a new array (NULL
 * when empty) the caller releases with store_schedules_free(). Never waits for a writer. */
static inline enum store_result store_schedules(struct store *s, const char *name,
                                                struct store_schedule **out, size_t *n)
{
    return s->ops->schedules(s, name, out, n);
}

/* The unpaused schedules that tick, by next_run_at then name, at most limit of them: what a
 * ticker looks at. *out as for store_schedules(). Never waits for a writer. */
static inline enum store_result store_schedules_next(struct store *s, int limit,
                                                     struct store_schedule **out, size_t *n)
{
    return s->ops->schedules_next(s, limit, out, n);
}

/* How many schedules exist, in *n (one count, no row read). Never waits for a writer. */
static inline enum store_result store_schedules_count(struct store *s, size_t *n)
{
    return s->ops->schedules_count(s, n);
}

#endif
