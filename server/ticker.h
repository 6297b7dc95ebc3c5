/* The background thread that enqueues the ticks of schedules (PUT /schedules/{name}): it
 * passes at the start of every second, looks at the schedules that tick soonest, and gives
 * each tick that came due one write (store_schedule_tick): its job and its next run, compared
 * and swapped, so that any number of tickers sharing a store enqueue each tick once. Ticks
 * that came due while no ticker ran (after the clean stop of the last ticker, or more than
 * SCHEDULE_GRACE after the last pass of a ticker that crashed, and before this one's first
 * pass: schedule_downtime) are missed and follow the schedule's catch_up. A tick whose write
 * lost its compare and swap (a put came between the read and the write) is looked at again
 * at once. Never runs in a request. */
#ifndef JOBQ_TICKER_H
#define JOBQ_TICKER_H

#include <stdint.h>

#include "job.h"

struct store;
struct ticker;

/* How the ticker reads a schedule's job body, given by the layer that parses JSON. */
struct ticker_spec_fns {
    /* Read the job body `job` (JSON text as the store keeps it) into *spec, whose texts are
     * owned by *hold. Returns 0, or -1 when it is not a valid job body (nothing to release). */
    int (*make)(const char *job, struct job_spec *spec, void **hold);
    /* Release a hold of make(). Accepts NULL. */
    void (*release)(void *hold);
};

/* Passes a ticker makes at most one after the other before it waits for the next second. */
#define TICKER_TICKS_MAX 200

/* What the tickers of this process did since it started (jobq_schedule_ticks_*_total). */
struct ticker_counts {
    uint64_t enqueued; /* ticks whose job was created */
    uint64_t skipped;  /* ticks not enqueued: overlap skip, the previous job still active */
    uint64_t missed;   /* ticks missed while no jobqd ran that catch_up dropped */
};

/* Start the thread. Borrows s, which must outlive the ticker, and fns (static). Returns NULL
 * (logged) when the thread cannot start. */
struct ticker *ticker_start(struct store *s, const struct ticker_spec_fns *fns);

/* Stop the thread, wait for it and free it: returns once the tick in progress has committed
 * and, when the ticker passed, its stop is marked in the store (store_schedule_stop: the
 * ticks after it are missed unless another ticker runs). Accepts NULL. */
void ticker_stop(struct ticker *t);

/* The counts of every ticker of this process. Thread-safe; can't fail. */
void ticker_counts(struct ticker_counts *out);

#endif
