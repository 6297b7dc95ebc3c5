/* Webhook delivery (docs/events.md "Webhooks"): a thread of its own in each jobqd that
 * pushes the event log to every subscription (store_webhook.h), outside every write
 * transaction. Each pass reads the subscriptions and, for each that is enabled, due and not
 * leased, takes its delivery lease (a compare and swap with a token and a deadline, so one
 * process at a time delivers a subscription however many run), reads the next event after
 * its cursor, POSTs it signed (whpost.h, whsign.h) and writes the outcome under the lease
 * (webhook_after, webhook.h), one event at a time, in seq order. */
#ifndef JOBQ_WHDELIVER_H
#define JOBQ_WHDELIVER_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "store.h"

#define WHDELIVER_POLL_MS 500 /* the longest wait between two passes (whdeliver_poke: sooner) */
#define WHDELIVER_LEASE 60    /* seconds of a delivery lease (an attempt takes at most 20) */
#define WHDELIVER_BATCH 100   /* events one subscription is sent in one pass at most */

struct whdeliver;

/* Start the delivery thread on s (borrowed until whdeliver_stop), retrying from base seconds
 * and refusing private addresses unless allow_private. NULL when it cannot start (logged). */
struct whdeliver *whdeliver_start(struct store *s, int64_t base, int allow_private);

/* Events were committed by this process: start the next pass now rather than at its
 * WHDELIVER_POLL_MS (a pass already running is followed by another at once). Cheap enough
 * for every write: an atomic load when no subscription is enabled (as the last pass saw
 * it), and at most one signal per pass otherwise. Thread-safe; accepts NULL. */
void whdeliver_poke(struct whdeliver *w);

/* Stop the thread after the attempt in flight and free w. Accepts NULL. */
void whdeliver_stop(struct whdeliver *w);

/* What /metrics shows of one subscription, as the last pass of this process saw it. */
struct whdeliver_gauge {
    char name[JOB_QUEUE_MAX + 1];
    int64_t deliveries; /* of every process (the store's counts) */
    int64_t failures;
    int64_t failed_events;
    int64_t lag_events;  /* events waiting (counted up to EVENT_PAGE_MAX) */
    int64_t lag_seconds; /* the age of the oldest event waiting; 0: none */
    int enabled;
};

/* Copy at most max gauges into out; returns how many. Thread-safe; accepts a NULL w (0). */
size_t whdeliver_gauges(struct whdeliver *w, struct whdeliver_gauge *out, size_t max);

#endif
