/* What this process did to jobs, per queue, since it started: the counters behind /metrics
 * (jobq_jobs_*_total) and the throughput ring behind GET /stats/throughput. Fed by the store
 * (store.c: store_count_call) with the writes that committed, never by a scan of the jobs table. Process-wide:
 * every jobqd sharing a PostgreSQL database reports its own. All functions are thread-safe
 * (one mutex, held for a few hash look-ups per write) and can't fail. */
#ifndef JOBQ_COUNTERS_H
#define JOBQ_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct sweep_result;

enum counter {
    COUNTER_ENQUEUED,      /* new jobs (not idempotency hits) */
    COUNTER_CLAIMED,       /* jobs handed to a worker */
    COUNTER_SUCCEEDED,     /* completes (not idempotent repeats) */
    COUNTER_FAILED,        /* leases that ended the job failed (fail, expiry, timeout) */
    COUNTER_RETRIED,       /* leases that sent the job back to queued (fail, expiry, timeout) */
    COUNTER_LEASE_EXPIRED, /* leases the sweeper ended because they were not renewed */
    COUNTER_TIMED_OUT,     /* leases the sweeper ended at max_runtime_seconds */
    COUNTER_CANCELLED,     /* cancels */
    COUNTER_EXPIRED,       /* queued jobs the sweeper cancelled at their expires_at */
    COUNTER_SNOOZED,       /* leases a worker ended with a snooze (back to queued) */
    COUNTER_COUNT
};

/* Queues tracked one by one; the writes of any further queue are counted under
 * COUNTERS_OTHER, a label that no queue name can take. */
#define COUNTERS_QUEUES_MAX 10000
#define COUNTERS_OTHER "(other)"

/* The throughput ring: COUNTERS_POINTS buckets of COUNTERS_STEP seconds (15 minutes). */
#define COUNTERS_STEP 10
#define COUNTERS_POINTS 90

/* The metric name (without jobq_jobs_ and _total) and help text of a counter. Never NULL. */
const char *counter_name(enum counter c);
const char *counter_help(enum counter c);

/* Count n events of kind c in queue at epoch second now. */
void counters_add(const char *queue, enum counter c, uint64_t n, int64_t now);

/* Count the leases a committed sweep batch ended and the jobs it expired (res->queues) at
 * epoch second now. */
void counters_sweep(const struct sweep_result *res, int64_t now);

/* One queue's counters. */
struct counters_row {
    char queue[JOB_QUEUE_MAX + 1];
    uint64_t v[COUNTER_COUNT];
};

/* A copy of every queue's counters, ordered by queue name (COUNTERS_OTHER first when
 * present). Returns a malloc'd array of *n rows the caller frees, or NULL with *n = 0 when
 * there is none or no memory. */
struct counters_row *counters_snapshot(size_t *n);

/* One bucket of the throughput ring. */
struct counters_point {
    int64_t at; /* epoch second the bucket starts, a multiple of COUNTERS_STEP */
    uint64_t enqueued, succeeded, failed;
};

/* The COUNTERS_POINTS buckets that end with the one holding now, oldest first, all queues
 * together; buckets with nothing counted are zeros. */
void counters_throughput(int64_t now, struct counters_point out[COUNTERS_POINTS]);

/* Forget every counter. For tests. */
void counters_reset(void);

#endif
