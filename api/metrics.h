/* Prometheus metrics. The request and claim-wait histograms are updated lock-free (atomics)
 * from the completion callback and the claim handler; the per-queue job counters live in
 * server/counters.h (fed by the store); everything else is read at scrape time from figures
 * that are kept up to date (store_queues(), store_read_stats(), store_metrics(), the waitq)
 * and from the limits read (store_limits(): the running and held jobs of limited keys, by
 * their indexes), never by a scan of the jobs table. GET /metrics is handle_metrics()
 * (handlers.h). */
#ifndef JOBQ_METRICS_H
#define JOBQ_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "job.h"
#include "store.h"
#include "whdeliver.h"

/* Count one finished request: `route` is its row in router_table (router.h), or any larger
 * value for a request no row answered (404, 405, a refusal before routing: route="other").
 * Thread-safe (atomics); statuses outside the fixed set are counted as code="other". This
 * function can't fail. */
void metrics_request_done(size_t route, unsigned status, int64_t duration_us);

/* Count one claim answered 200: parked_us is how long it waited parked (long poll) before
 * the answer, 0 when it never parked; got_jobs says whether it carried jobs. Thread-safe.
 * This function can't fail. */
void metrics_claim_answered(int64_t parked_us, int got_jobs);

/* What one scrape shows besides the histograms: all borrowed. */
struct metrics_scrape {
    int store_ok;                   /* the store answered store_queues() */
    const struct queue_stats *rows; /* per-queue gauges, n rows (only when store_ok) */
    size_t n;
    size_t parked;                       /* claims parked now */
    size_t connections, max_connections; /* HTTP connections open now, and the limit */
    struct store_stats stats;
    const struct store_metric *backend; /* the backend's own figures */
    size_t nbackend;
    const struct counters_row *counters; /* per-queue job counters */
    size_t ncounters;
    int limits_ok;              /* the store answered store_limits() */
    const struct limit *limits; /* every limit, sorted by key (only when limits_ok) */
    size_t nlimits;
    int schedules_ok;  /* the store answered store_schedules() */
    size_t nschedules; /* the schedules that exist (only when schedules_ok) */
    uint64_t ticks_enqueued, ticks_skipped, ticks_missed; /* ticker_counts() */
    size_t streams, max_streams;            /* GET /events streams open now, and --events-streams */
    uint64_t stream_events, stream_gaps;    /* events and gaps written to streams */
    const struct whdeliver_gauge *webhooks; /* per subscription (whdeliver_gauges()) */
    size_t nwebhooks;
};

/* Limits shown one by one (the first by key); jobq_limits counts them all. Each limit is one
 * series per gauge, labelled with the limit's key (an exact key or a pattern an operator
 * set), never with the key of a job. */
#define METRICS_LIMITS_MAX 100

/* The exposition text (format 0.0.4) of a scrape. Returns a malloc'd NUL-terminated text the
 * caller frees, or NULL when out of memory. Thread-safe. */
char *metrics_text(const struct metrics_scrape *in);

/* Reset the histograms to zero. For tests. */
void metrics_reset(void);

#endif
