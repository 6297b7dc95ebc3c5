#include "job.h"

#include "expiry.h"

#include <stdlib.h>
#include <string.h>

static const char *const status_names[JOB_STATUS_COUNT] = {
    [JOB_STATUS_NONE] = "unknown", [JOB_QUEUED] = "queued", [JOB_RUNNING] = "running",
    [JOB_SUCCEEDED] = "succeeded", [JOB_FAILED] = "failed", [JOB_CANCELLED] = "cancelled",
    [JOB_BLOCKED] = "blocked",
};

const char *job_status_name(enum job_status s)
{
    if ((unsigned)s >= JOB_STATUS_COUNT)
        return "unknown";
    return status_names[s];
}

int job_status_parse(const char *name, enum job_status *out)
{
    for (int s = JOB_QUEUED; s < JOB_STATUS_COUNT; s++) {
        if (strcmp(name, status_names[s]) == 0) {
            *out = (enum job_status)s;
            return 0;
        }
    }
    return -1;
}

void job_clear(struct job *j)
{
    if (!j)
        return;
    free(j->queue);
    free(j->payload);
    free(j->requires);
    free(j->idempotency_key);
    free(j->worker_id);
    free(j->result);
    free(j->progress);
    free(j->error_code);
    free(j->error_detail);
    free(j->lease_token);
    free(j->concurrency_key);
    free(j->dedup_key);
    free(j->depends_on);
    free(j->traceparent);
    free(j->tracestate);
    memset(j, 0, sizeof *j);
}

void job_array_free(struct job *jobs, size_t n)
{
    if (!jobs)
        return;
    for (size_t i = 0; i < n; i++)
        job_clear(&jobs[i]);
    free(jobs);
}

void queue_stats_free(struct queue_stats *rows, size_t n)
{
    if (!rows)
        return;
    for (size_t i = 0; i < n; i++)
        free(rows[i].name);
    free(rows);
}

static const char *const outcome_names[ATTEMPT_OUTCOME_COUNT] = {
    [ATTEMPT_RUNNING] = "running",       [ATTEMPT_SUCCEEDED] = "succeeded",
    [ATTEMPT_FAILED] = "failed",         [ATTEMPT_RETRIED] = "retried",
    [ATTEMPT_EXPIRED] = "lease_expired", [ATTEMPT_TIMEOUT] = "timeout",
    [ATTEMPT_CANCELLED] = "cancelled",   [ATTEMPT_SNOOZED] = "snoozed",
};

const char *attempt_outcome_name(enum attempt_outcome o)
{
    if ((unsigned)o >= ATTEMPT_OUTCOME_COUNT)
        return "unknown";
    return outcome_names[o];
}

void job_attempt_clear(struct job_attempt *a)
{
    free(a->worker_id);
    free(a->error_code);
    free(a->error_detail);
    memset(a, 0, sizeof *a);
}

void job_attempts_free(struct job_attempt *a, size_t n)
{
    if (!a)
        return;
    for (size_t i = 0; i < n; i++)
        job_attempt_clear(&a[i]);
    free(a);
}

int job_queue_name_ok(const char *name)
{
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok || n >= JOB_QUEUE_MAX)
            return 0;
    }
    return n >= 1;
}

int64_t job_spec_run_at(const struct job_spec *sp, int64_t now)
{
    return sp->run_at != JOB_NONE ? sp->run_at : now + sp->delay;
}

int64_t job_spec_expires_at(const struct job_spec *sp, int64_t now)
{
    return expiry_resolve(sp->expires_at > 0 ? sp->expires_at : JOB_NONE,
                          sp->expires_in > 0 ? sp->expires_in : JOB_NONE, now);
}

int job_claim_order(int64_t prio_a, int64_t run_at_a, int64_t id_a, int64_t prio_b,
                    int64_t run_at_b, int64_t id_b)
{
    if (prio_a != prio_b)
        return prio_a > prio_b ? -1 : 1;
    if (run_at_a != run_at_b)
        return run_at_a < run_at_b ? -1 : 1;
    return (id_a > id_b) - (id_a < id_b);
}

int64_t job_spec_dedup_seconds(const struct job_spec *sp)
{
    int timed = sp->dedup_mode == DEDUP_WINDOW || sp->dedup_mode == DEDUP_DEBOUNCE;
    return sp->dedup_key && timed ? sp->dedup_seconds : JOB_NONE;
}

static const char *const dep_mode_names[DEP_MODE_COUNT] = {
    [DEP_CANCEL] = "cancel", [DEP_RUN] = "run"};

const char *job_dep_mode_name(enum dep_mode m)
{
    return (unsigned)m < DEP_MODE_COUNT ? dep_mode_names[m] : dep_mode_names[DEP_CANCEL];
}

int job_dep_mode_parse(const char *name, enum dep_mode *out)
{
    for (int m = 0; m < DEP_MODE_COUNT; m++) {
        if (strcmp(name, dep_mode_names[m]) == 0) {
            *out = (enum dep_mode)m;
            return 0;
        }
    }
    return -1;
}
