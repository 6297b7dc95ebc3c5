/* Prometheus metrics: request counters and latency (updated from the completion callback,
 * lock-free) and, at scrape time, per-queue job gauges from the store and the number of
 * parked long polls. GET /metrics is handle_metrics() (handlers.h). */
#ifndef JOBQ_METRICS_H
#define JOBQ_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

/* Count one finished request with its HTTP status and duration. Thread-safe (atomics);
 * statuses outside the fixed set are counted as code="other". This function can't fail. */
void metrics_request_done(unsigned status, int64_t duration_us);

/* The exposition text (format 0.0.4): the request metrics, then jobq_store_up (store_ok),
 * the per-queue gauges of rows[0..n) (only when store_ok) and jobq_waiting_claims = parked.
 * Returns a malloc'd NUL-terminated text the caller frees, or NULL when out of memory.
 * Borrows rows. Thread-safe. */
char *metrics_text(int store_ok, const struct queue_stats *rows, size_t n, size_t parked);

/* Reset every counter to zero. For tests. */
void metrics_reset(void);

#endif
