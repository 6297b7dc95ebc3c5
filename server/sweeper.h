/* The background thread that promotes due scheduled jobs (at their run_at, to the second),
 * returns or fails expired leases and deletes old finished jobs, every sweep interval, in
 * bounded batches. Never runs in a request. */
#ifndef JOBQ_SWEEPER_H
#define JOBQ_SWEEPER_H

#include <stdint.h>

struct store;
struct sweeper;

/* Start the thread. Borrows s, which must outlive the sweeper. Returns NULL (logged) when
 * the thread cannot start. */
struct sweeper *sweeper_start(struct store *s, int64_t interval, int64_t retention);

/* A job is scheduled for run_at: wake the thread early if that is sooner than its plan.
 * Safe from any thread; accepts NULL. */
void sweeper_poke(struct sweeper *sw, int64_t run_at);

/* Stop the thread, wait for it and free it. Accepts NULL. */
void sweeper_stop(struct sweeper *sw);

#endif
